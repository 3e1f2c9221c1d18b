//! Finds which of many literal byte strings occur in a string, in one pass.
//!
//! An Aho-Corasick automaton of our own, kept small because the index needs
//! only "which keys occur" (overlapping, each occurrence reported): a trie of
//! the keys laid out breadth-first, a failure link per node (the longest proper
//! suffix of the node's path that is also a path), and an output link to the
//! nearest node on the failure chain where a key ends. A scan follows one
//! transition per byte, falling back along failure links, which amortizes to
//! linear time in the string, plus one step per reported occurrence. The
//! root, its children and nodes with many children keep a full 256-entry row
//! of the transition function (failure links folded in, each row copied from
//! the one its failure chain reaches): where a scan spends most of its bytes,
//! a step is one load.
//!
//! Why not the `aho-corasick` crate, which the index used before: building its
//! automaton was a third of compiling ten thousand patterns (a noncontiguous
//! NFA, then a contiguous copy or a DFA, plus a prefilter), and a DFA build is
//! quadratic in a long periodic key. This build is one sort and two passes
//! over the nodes, linear in the total key length.

use crate::trie::{byte_runs, common_prefix, dense_table, find_edge, key_head, sort_by_key_bytes};

/// No node or no key.
const NONE: u32 = u32::MAX;
/// Nodes with at least this many children get a 256-entry child table.
const DENSE_MIN_CHILDREN: u32 = 6;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Outgoing edges are `edges[first..first + count]`, sorted by byte.
    first: u32,
    count: u32,
    /// Index in `dense` of this node's full child table, or `NONE`.
    table: u32,
    fail: u32,
    /// The key that ends at this node, or `NONE`.
    key: u32,
    /// The nearest node on the failure chain (not this one) where a key ends.
    next_output: u32,
}

/// An automaton over a set of distinct, non-empty keys; key `k` is `keys[k]`.
#[derive(Clone, Debug, Default)]
pub struct LiteralScanner {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    dense: Vec<[u32; 256]>,
}

impl LiteralScanner {
    /// Builds the automaton. Keys must be distinct and non-empty (an empty key
    /// would occur everywhere; the index never asks for one).
    pub fn build(keys: &[&[u8]]) -> Self {
        // The index hands its keys over sorted already.
        let order: Vec<u32> = if keys.is_sorted() {
            (0..keys.len() as u32).collect()
        } else {
            let mut headed: Vec<(u128, (&[u8], u32))> =
                keys.iter().enumerate().map(|(i, k)| (key_head(k), (*k, i as u32))).collect();
            sort_by_key_bytes(&mut headed, |e| e.0);
            headed.into_iter().map(|(_, (_, i))| i).collect()
        };
        let key = |i: usize| keys[order[i] as usize];
        // One node per distinct prefix: each key in sorted order adds the
        // bytes past what it shares with the key before it.
        let node_count = 1 + (0..keys.len())
            .map(|i| key(i).len() - if i == 0 { 0 } else { common_prefix(key(i), key(i - 1)) })
            .sum::<usize>();
        let root = Node { first: 0, count: 0, table: NONE, fail: 0, key: NONE, next_output: NONE };
        let mut nodes = Vec::with_capacity(node_count);
        nodes.push(root);
        // While a node waits in the queue: its sorted key range and depth.
        let mut pending: Vec<(u32, u32, u32)> = Vec::with_capacity(node_count);
        pending.push((0, keys.len() as u32, 0));
        let (mut edges, mut dense) = (Vec::with_capacity(node_count - 1), Vec::new());
        let mut at = 0;
        while at < nodes.len() {
            let (lo, hi, depth) = pending[at];
            let (mut lo, hi, depth) = (lo as usize, hi as usize, depth as usize);
            if lo < hi && key(lo).len() == depth {
                nodes[at].key = order[lo];
                lo += 1; // distinct keys: at most one ends here
            }
            nodes[at].first = edges.len() as u32;
            for (byte, lo, run_end) in byte_runs(|i| &keys[order[i] as usize], lo, hi, depth) {
                edges.push((byte, nodes.len() as u32));
                nodes.push(Node { key: NONE, next_output: NONE, ..root });
                pending.push((lo as u32, run_end as u32, depth as u32 + 1));
                nodes[at].count += 1;
            }
            // The root and its children always: a scan spends most of its
            // bytes at depth 0 and 1 (their tables are made complete below).
            if depth <= 1 || nodes[at].count >= DENSE_MIN_CHILDREN {
                nodes[at].table = dense.len() as u32;
                dense.push(dense_table(&edges[nodes[at].first as usize..], NONE));
            }
            at += 1;
        }
        debug_assert_eq!(nodes.len(), node_count);
        let mut scanner = LiteralScanner { nodes, edges, dense };
        scanner.link();
        scanner
    }

    /// Sets the failure and output links, parents before children (the nodes
    /// are in breadth-first order, so a node's failure target, which is
    /// shallower, is always done before it), and completes each full child
    /// table into a row of the automaton's transition function: a byte with
    /// no child maps to where the failure links lead, so a step from such a
    /// node is one load. (The root maps those bytes to itself.)
    fn link(&mut self) {
        for node in 0..self.nodes.len() {
            let Node { first, count, table, fail, .. } = self.nodes[node];
            if table != NONE {
                self.complete_row(node);
            }
            for e in first..first + count {
                let (byte, child) = self.edges[e as usize];
                let fail = if node == 0 { 0 } else { self.step(fail, byte) };
                let target = self.nodes[fail as usize];
                let next_output = if target.key != NONE { fail } else { target.next_output };
                let child = &mut self.nodes[child as usize];
                child.fail = fail;
                child.next_output = next_output;
            }
        }
    }

    /// Makes the table of `node` (whose failure chain is complete) a full
    /// transition row: the row of the nearest node with a complete table on
    /// its failure chain, overlaid with the children of the nodes between,
    /// the nearest to `node` last (its own children win).
    fn complete_row(&mut self, node: usize) {
        if node == 0 {
            for to in self.dense[0].iter_mut().filter(|to| **to == NONE) {
                *to = 0;
            }
            return;
        }
        let mut chain = vec![node];
        let mut at = self.nodes[node].fail as usize;
        while self.nodes[at].table == NONE {
            chain.push(at);
            at = self.nodes[at].fail as usize;
        }
        let mut row = self.dense[self.nodes[at].table as usize];
        for &n in chain.iter().rev() {
            let Node { first, count, .. } = self.nodes[n];
            for &(byte, child) in &self.edges[first as usize..(first + count) as usize] {
                row[byte as usize] = child;
            }
        }
        self.dense[self.nodes[node].table as usize] = row;
    }

    #[inline]
    fn child(&self, node: &Node, byte: u8) -> u32 {
        if node.table != NONE {
            return self.dense[node.table as usize][byte as usize];
        }
        find_edge(&self.edges[node.first as usize..(node.first + node.count) as usize], byte).unwrap_or(NONE)
    }

    /// The state after reading `byte` in `state`.
    #[inline]
    fn step(&self, mut state: u32, byte: u8) -> u32 {
        loop {
            let node = &self.nodes[state as usize];
            let next = self.child(node, byte);
            if next != NONE {
                return next;
            }
            if state == 0 {
                return 0;
            }
            state = node.fail;
        }
    }

    /// Calls `f(key)` for every occurrence of every key in `s`, in the order
    /// their ends appear (longer keys first at one end); stops when `f` breaks.
    #[inline]
    pub fn for_each_occurrence<F>(&self, s: &[u8], mut f: F) -> std::ops::ControlFlow<()>
    where
        F: FnMut(u32) -> std::ops::ControlFlow<()>,
    {
        if self.nodes.len() <= 1 {
            return std::ops::ControlFlow::Continue(());
        }
        // The root always has a complete table (entry 0). At the root, where
        // a scan spends most of its bytes, a byte that starts no key leaves it
        // there: those are skipped by a loop of one table load per byte.
        let root = &self.dense[0];
        let (mut state, mut at) = (0, 0);
        while at < s.len() {
            if state == 0 {
                loop {
                    let next = root[s[at] as usize];
                    at += 1;
                    if next != 0 {
                        state = next;
                        break;
                    }
                    if at == s.len() {
                        return std::ops::ControlFlow::Continue(());
                    }
                }
            } else {
                state = self.step(state, s[at]);
                at += 1;
            }
            let node = &self.nodes[state as usize];
            if node.key != NONE {
                f(node.key)?;
            }
            let mut out = node.next_output;
            while out != NONE {
                let node = &self.nodes[out as usize];
                f(node.key)?;
                out = node.next_output;
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::ControlFlow;

    fn occurrences(keys: &[&str], s: &str) -> Vec<u32> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let mut got = Vec::new();
        let _ = LiteralScanner::build(&keys).for_each_occurrence(s.as_bytes(), |k| {
            got.push(k);
            ControlFlow::Continue(())
        });
        got.sort_unstable();
        got
    }

    /// Every (key, start) with the key at that start, as key ids.
    fn naive(keys: &[&str], s: &str) -> Vec<u32> {
        let mut got: Vec<u32> = (0..keys.len() as u32)
            .flat_map(|k| {
                let key = keys[k as usize].as_bytes();
                s.as_bytes().windows(key.len()).filter(move |w| *w == key).map(move |_| k)
            })
            .collect();
        got.sort_unstable();
        got
    }

    macro_rules! scans {
        ($($name:ident: $keys:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let want: &[u32] = &$want;
                assert_eq!(occurrences(&$keys, $input), want.to_vec());
                assert_eq!(occurrences(&$keys, $input), naive(&$keys, $input));
            }
        )*};
    }

    scans! {
        none: ["pull", "push"], "list_requests" => [];
        one: ["pull", "push"], "list_pull_requests" => [0];
        overlapping: ["aa"], "aaaa" => [0, 0, 0];
        suffix_outputs: ["she", "he", "hers", "his"], "ushers" => [0, 1, 2];
        failure_into_other_branch: ["abcd", "bce"], "abce" => [1];
        key_inside_key: ["issue", "ss"], "create_issue" => [0, 1];
        whole_string: ["abc"], "abc" => [0];
        empty_string: ["a"], "" => [];
        no_keys: [] as [&str; 0], "abc" => [];
        dense_root: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"], "qpz" => [15, 16];
        multibyte: ["σ", "ß"], "Σσßσ" => [0, 0, 1];
    }

    #[test]
    fn stops_when_asked() {
        let keys: [&[u8]; 1] = [b"a"];
        let mut seen = 0;
        let flow = LiteralScanner::build(&keys).for_each_occurrence(b"aaaa", |_| {
            seen += 1;
            if seen == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert!(flow.is_break());
        assert_eq!(seen, 2);
    }

    /// Random key sets and strings over a tiny alphabet, so that failure links
    /// cross branches often: every occurrence must be found, each once.
    #[test]
    fn random_sets_agree_with_naive_search() {
        let mut next = crate::test_rng::below(0x2545_F491_4F6C_DD1D);
        let alphabet = ['a', 'b', 'c'];
        for _ in 0..3_000 {
            let mut keys: Vec<String> = (0..1 + next(10))
                .map(|_| (0..1 + next(5)).map(|_| alphabet[next(3) as usize]).collect())
                .collect();
            keys.sort();
            keys.dedup();
            let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            for _ in 0..6 {
                let s: String = (0..next(12)).map(|_| alphabet[next(3) as usize]).collect();
                assert_eq!(occurrences(&key_refs, &s), naive(&key_refs, &s), "{key_refs:?} in {s:?}");
            }
        }
    }

    #[test]
    fn a_long_periodic_key_builds_and_scans_in_linear_time() {
        // The aho-corasick DFA took a minute on one 100 KB `aaaa…` key.
        let key = vec![b'a'; 1_000_000];
        let keys: [&[u8]; 2] = [&key, b"ab"];
        let scanner = LiteralScanner::build(&keys);
        let mut hits = 0;
        let _ = scanner.for_each_occurrence(&vec![b'a'; 2_000_000], |_| {
            hits += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(hits, 1_000_001);
    }
}
