//! Finds which of many literal byte strings occur in a string, in one pass.
//!
//! An Aho-Corasick automaton of our own, kept small because the index needs
//! only "which keys occur", each once: a trie of the keys laid out
//! breadth-first, a failure link per node (the longest proper suffix of the
//! node's path that is also a path), the longest key ending at each node's
//! path, and for each key the longest key that is a proper suffix of it. A
//! scan follows one transition per byte, falling back along failure links,
//! which amortizes to linear time in the string. The root, its children and
//! nodes with many children keep a full 256-entry row of the transition
//! function (failure links folded in, each row copied from the one its failure
//! chain reaches): where a scan spends most of its bytes, a step is one load.
//!
//! The keys that end at one place are a chain, each a suffix of the one
//! before, and the chain can be as long as the key set is deep: a thousand
//! keys `a`, `aa`, … end at every byte of a run of `a`s. A scan that walked
//! it at every byte would cost keys × bytes, so [`for_each_key`] reports each
//! key once and stops a walk at the first key already reported (see there
//! for why that loses nothing), and a scan that needs later occurrences
//! ([`ends`], for the index's sweep) gets only the longest key ending at each
//! place and the links to walk from it.
//!
//! [`for_each_key`]: LiteralScanner::for_each_key
//! [`ends`]: LiteralScanner::ends
//!
//! Why not the `aho-corasick` crate, which the index used before: building its
//! automaton was a third of compiling ten thousand patterns (a noncontiguous
//! NFA, then a contiguous copy or a DFA, plus a prefilter), and a DFA build is
//! quadratic in a long periodic key. This build is one sort and two passes
//! over the nodes, linear in the total key length.

use std::ops::ControlFlow;

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
    /// The longest key that is a suffix of this node's path (the key ending
    /// here, else the nearest one on the failure chain), or `NONE`.
    out: u32,
}

/// An automaton over a set of distinct, non-empty keys; key `k` is `keys[k]`.
#[derive(Clone, Debug, Default)]
pub struct LiteralScanner {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    dense: Vec<[u32; 256]>,
    /// For each key, the longest key that is a proper suffix of it, or
    /// `NONE`: the keys ending where key `k` ends are `k`, `suffix[k]`,
    /// `suffix[suffix[k]]`, … (a tree, each key's parent shorter).
    suffix: Vec<u32>,
    /// The keys' bytes, key `k` ending at `key_ends[k]`: a long scan
    /// searches the last few keys left by themselves.
    key_bytes: Vec<u8>,
    key_ends: Vec<u32>,
    /// The whole transition function over byte classes, when it is small:
    /// a step from any node is then one load (see [`Classed`]).
    classed: Option<Box<Classed>>,
}

/// The automaton as one table: the bytes that occur in no key are one
/// class (from every node they lead to the root), every other byte a class
/// of its own, and row `n` holds node `n`'s successor over each class,
/// failure links folded in. Built when its rows take at most
/// [`CLASSED_MAX`] entries (a few hundred keys, the size a filter's list
/// has; a longer list keeps the rows of the nodes a scan is mostly at).
/// A step is a class lookup and a load, with no branch on the trie's shape,
/// where a sparse node's step searches its edges and follows failure links.
#[derive(Clone, Debug)]
struct Classed {
    class: [u8; 256],
    classes: u32,
    /// Entry `row * classes + class`: the next node's row start
    /// (`node * classes`), with [`ENDS`] set when a key ends at it.
    table: Vec<u32>,
}

/// The bit of a [`Classed`] entry saying that a key ends at its node.
const ENDS: u32 = 1 << 31;
/// The most entries a [`Classed`] table takes (4 bytes each: 256 KB).
const CLASSED_MAX: usize = 1 << 16;

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
        let root = Node { first: 0, count: 0, table: NONE, fail: 0, out: NONE };
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
                nodes[at].out = order[lo];
                lo += 1; // distinct keys: at most one ends here
            }
            nodes[at].first = edges.len() as u32;
            for (byte, lo, run_end) in byte_runs(|i| &keys[order[i] as usize], lo, hi, depth) {
                edges.push((byte, nodes.len() as u32));
                nodes.push(Node { out: NONE, ..root });
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
        let key_bytes: Vec<u8> = keys.concat();
        let key_ends = keys.iter().scan(0, |end, k| { *end += k.len() as u32; Some(*end) }).collect();
        let mut scanner = LiteralScanner { nodes, edges, dense, suffix: vec![NONE; keys.len()], key_bytes, key_ends, classed: None };
        scanner.link();
        scanner.lend_to_leaves();
        scanner.classed = scanner.classify().map(Box::new);
        scanner
    }

    /// The [`Classed`] table, if it is small enough. Rows are made in
    /// breadth-first order, each its failure node's row (done already: it
    /// is shallower) overlaid with its own children; the root's row sends
    /// what starts no key back to the root.
    fn classify(&self) -> Option<Classed> {
        let mut class = [0u8; 256];
        let mut classes = 1u32;
        for &(byte, _) in &self.edges {
            if class[byte as usize] == 0 {
                class[byte as usize] = classes as u8;
                classes += 1;
                if classes > 255 {
                    return None;
                }
            }
        }
        let width = classes as usize;
        if self.nodes.len().checked_mul(width)? > CLASSED_MAX {
            return None;
        }
        let entry = |node: u32| (node * classes) | if self.nodes[node as usize].out != NONE { ENDS } else { 0 };
        let mut table = vec![0u32; self.nodes.len() * width];
        for node in 0..self.nodes.len() {
            // Leaves lent their failure node's edges (`lend_to_leaves`),
            // which is what their row is anyway; the row starts as the
            // failure node's, so the lent edges change nothing.
            let Node { first, count, fail, .. } = self.nodes[node];
            if node != 0 {
                let (rows, row) = table.split_at_mut(node * width);
                row[..width].copy_from_slice(&rows[fail as usize * width..fail as usize * width + width]);
            }
            for &(byte, child) in &self.edges[first as usize..(first + count) as usize] {
                table[node * width + class[byte as usize] as usize] = entry(child);
            }
        }
        Some(Classed { class, classes, table })
    }

    /// [`ends_mapped`](Self::ends_mapped) through the [`Classed`] table.
    #[inline]
    fn ends_classed<B, M, F>(&self, classed: &Classed, s: &[u8], map: M, mut f: F) -> ControlFlow<B>
    where
        M: Fn(u8) -> u8,
        F: FnMut(usize, u32) -> ControlFlow<B>,
    {
        let Classed { class, classes, table } = classed;
        let mut row = 0u32;
        for (at, &b) in s.iter().enumerate() {
            let next = table[(row + u32::from(class[map(b) as usize])) as usize];
            row = next & !ENDS;
            if next & ENDS != 0 {
                f(at + 1, self.nodes[(row / classes) as usize].out)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Gives each leaf (a node no key continues from) the transitions of its
    /// failure node: from a leaf every byte goes on from there anyway, and a
    /// scan of a periodic run (`aaaa…` against `a`, `aa`, …, `a…a`) moves
    /// between the deepest nodes at every byte. A step from a leaf is then
    /// one lookup, not a failure and a second. Exact: with no child of its
    /// own, a leaf's transition over any byte is its failure node's. Runs
    /// after the links, which read the trie's own children; the failure
    /// node, shallower, has lent or borrowed already.
    fn lend_to_leaves(&mut self) {
        for node in 1..self.nodes.len() {
            let Node { count, table, fail, .. } = self.nodes[node];
            if count == 0 && table == NONE {
                let lender = self.nodes[fail as usize];
                let leaf = &mut self.nodes[node];
                (leaf.first, leaf.count, leaf.table) = (lender.first, lender.count, lender.table);
            }
        }
    }

    /// Sets the failure links, the longest key ending at each node and the
    /// suffix link of each key, parents before children (the nodes are in
    /// breadth-first order, so a node's failure target, which is shallower,
    /// is always done before it), and completes each full child
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
                // The longest key that is a proper suffix of the child's path.
                let inherited = self.nodes[fail as usize].out;
                let child = &mut self.nodes[child as usize];
                child.fail = fail;
                match child.out {
                    NONE => child.out = inherited,
                    own => self.suffix[own as usize] = inherited,
                }
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

    #[inline(always)]
    fn child(&self, node: &Node, byte: u8) -> u32 {
        if node.table != NONE {
            return self.dense[node.table as usize][byte as usize];
        }
        // Deep in the trie most nodes have one child or none: a long key is
        // a chain of them, which a scan of a long run walks at every byte.
        match node.count {
            0 => NONE,
            1 => match self.edges[node.first as usize] {
                (b, child) if b == byte => child,
                _ => NONE,
            },
            _ => find_edge(&self.edges[node.first as usize..(node.first + node.count) as usize], byte).unwrap_or(NONE),
        }
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

    /// Calls `f(end, key)` at every place of `s` where a key ends, with the
    /// end (exclusive) and the longest key ending there; the others ending
    /// there are its [`suffix_key`](Self::suffix_key) chain. Stops when `f`
    /// breaks. One transition per byte, amortized.
    #[inline]
    pub fn ends<B, F>(&self, s: &[u8], f: F) -> ControlFlow<B>
    where
        F: FnMut(usize, u32) -> ControlFlow<B>,
    {
        self.ends_mapped(s, |b| b, f)
    }

    /// [`ends`](Self::ends) of the string whose bytes are those of `s`
    /// through `map`, one for one: a scan of the loose fold of an ASCII name
    /// reads the name itself, mapping each byte as it steps, and no folded
    /// copy is made.
    #[inline]
    pub fn ends_mapped<B, M, F>(&self, s: &[u8], map: M, mut f: F) -> ControlFlow<B>
    where
        M: Fn(u8) -> u8,
        F: FnMut(usize, u32) -> ControlFlow<B>,
    {
        if self.nodes.len() <= 1 {
            return ControlFlow::Continue(());
        }
        if let Some(classed) = &self.classed {
            return self.ends_classed(classed, s, map, f);
        }
        // The root always has a complete table (entry 0). At the root, where
        // a scan spends most of its bytes, a byte that starts no key leaves it
        // there: those are skipped by a loop of one table load per byte.
        let root = &self.dense[0];
        let (mut state, mut at) = (0, 0);
        while at < s.len() {
            if state == 0 {
                loop {
                    let next = root[map(s[at]) as usize];
                    at += 1;
                    if next != 0 {
                        state = next;
                        break;
                    }
                    if at == s.len() {
                        return ControlFlow::Continue(());
                    }
                }
            } else {
                state = self.step(state, map(s[at]));
                at += 1;
            }
            let out = self.nodes[state as usize].out;
            if out != NONE {
                f(at, out)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// The longest key that is a proper suffix of `key`, or `None`.
    #[inline]
    pub fn suffix_key(&self, key: u32) -> Option<u32> {
        let parent = self.suffix[key as usize];
        (parent != NONE).then_some(parent)
    }

    pub fn key_count(&self) -> usize {
        self.suffix.len()
    }

    /// The bytes of key `k`.
    pub fn key(&self, k: u32) -> &[u8] {
        let start = if k == 0 { 0 } else { self.key_ends[k as usize - 1] as usize };
        &self.key_bytes[start..self.key_ends[k as usize] as usize]
    }

    /// Calls `f(key)` once for every key that occurs in `s`, in the order of
    /// their first ends (longer keys first at one end); stops when `f`
    /// breaks. `seen` remembers what this scan reported.
    ///
    /// Linear: at each end the walk down the suffix chain stops at the first
    /// key already reported, and that loses nothing, because every key below
    /// a reported one was reported with it: when a key is first reported,
    /// the walk goes on down its chain (all of which end there too) until it
    /// meets a reported key, whose chain was complete by the same argument.
    /// So a byte costs one transition and one look at a reported key, and
    /// each key is walked past once: O(|s| + keys), whatever the depth of
    /// the chains. (A walk that `f` breaks ends the scan too.)
    #[inline]
    pub fn for_each_key<F>(&self, s: &[u8], seen: &mut KeySet, f: F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        self.for_each_key_mapped(s, |b| b, seen, f)
    }

    /// [`for_each_key`](Self::for_each_key) of the string whose bytes are
    /// those of `s` through `map` (see [`ends_mapped`](Self::ends_mapped)).
    #[inline]
    pub fn for_each_key_mapped<M, F>(&self, s: &[u8], map: M, seen: &mut KeySet, mut f: F) -> ControlFlow<()>
    where
        M: Fn(u8) -> u8,
        F: FnMut(u32) -> ControlFlow<()>,
    {
        // `seen` is started on the first end only: most strings hit no key.
        let mut started = false;
        self.ends_mapped(s, map, |_, longest| {
            if !started {
                seen.start(self.key_count());
                started = true;
            }
            let mut key = longest;
            while seen.insert(key as usize) {
                f(key)?;
                match self.suffix_key(key) {
                    Some(shorter) => key = shorter,
                    None => break,
                }
            }
            ControlFlow::Continue(())
        })
    }

    /// [`for_each_key`](Self::for_each_key) for a long string, reporting
    /// the same keys in no set order. It stops once every key is reported;
    /// and once at most [`FEW_LEFT`] keys of [`FEW_LEFT_BYTES`] bytes in all
    /// are left, it searches for each of them by itself (`memmem`) from
    /// where the scan is, and stops. Where the scan would go on stepping
    /// through a megabyte that holds none of them (a run of a's against
    /// `a`, …, `a…a` and a `b`), a vectorized search each is a fraction of
    /// its cost; still linear, a few passes at most. (Long keys are left to
    /// the scan: preparing a search costs what the key is long, and the
    /// scan may be about to meet them, as it meets `a…a` in a run of a's.)
    pub fn for_each_key_long<F>(&self, s: &[u8], seen: &mut KeySet, mut f: F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        let keys = self.key_count();
        seen.start(keys);
        let mut from = 0;
        if keys > FEW_LEFT || !self.few_left_are_short(seen) {
            let mut left = keys;
            let flow = self.ends(s, |end, longest| {
                let (mut key, before) = (longest, left);
                while seen.insert(key as usize) {
                    left -= 1;
                    f(key).map_break(|()| None)?;
                    match self.suffix_key(key) {
                        Some(shorter) => key = shorter,
                        None => break,
                    }
                }
                match left < before && left <= FEW_LEFT && (left == 0 || self.few_left_are_short(seen)) {
                    true => ControlFlow::Break(Some(end)),
                    false => ControlFlow::Continue(()),
                }
            });
            match flow {
                ControlFlow::Continue(()) => return ControlFlow::Continue(()),
                ControlFlow::Break(None) => return ControlFlow::Break(()),
                ControlFlow::Break(Some(end)) => from = end,
            }
        }
        // Every key ending at or before `from` was reported: the others end
        // after it.
        for k in (0..keys as u32).filter(|&k| !seen.contains(k as usize)) {
            let key = self.key(k);
            let start = (from + 1).saturating_sub(key.len());
            if memchr::memmem::find(&s[start..], key).is_some() {
                f(k)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// Whether the keys not in `seen` (at most [`FEW_LEFT`] of them, when a
    /// long scan asks) come to at most [`FEW_LEFT_BYTES`].
    #[cold]
    fn few_left_are_short(&self, seen: &KeySet) -> bool {
        let left = (0..self.key_count() as u32).filter(|&k| !seen.contains(k as usize));
        left.map(|k| self.key(k).len()).sum::<usize>() <= FEW_LEFT_BYTES
    }
}

/// A long scan ends with a search for each key left when this few are, of
/// at most this many bytes in all.
pub const FEW_LEFT: usize = 4;
pub const FEW_LEFT_BYTES: usize = 64;

/// A set of key numbers for one scan at a time, as generation stamps: a new
/// scan starts by bumping the generation, not by clearing one flag per key,
/// so its cost does not grow with the number of keys, and a scan that stops
/// early leaves nothing to clean up.
#[derive(Default)]
pub struct KeySet {
    stamps: Vec<u32>,
    generation: u32,
}

impl KeySet {
    /// Empties the set, for keys below `keys`.
    pub fn start(&mut self, keys: usize) {
        if self.stamps.len() < keys {
            self.stamps.resize(keys, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Once in 2^32 scans: old stamps could look current.
            self.stamps.fill(0);
            self.generation = 1;
        }
    }

    /// Adds `key`; false when it was in the set already.
    #[inline]
    pub fn insert(&mut self, key: usize) -> bool {
        // Read first: a scan asks again at every end of a key it has.
        let stamp = &mut self.stamps[key];
        let new = *stamp != self.generation;
        if new {
            *stamp = self.generation;
        }
        new
    }

    #[inline]
    pub fn contains(&self, key: usize) -> bool {
        self.stamps[key] == self.generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner(keys: &[&str]) -> LiteralScanner {
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        LiteralScanner::build(&keys)
    }

    /// The keys reported by `for_each_key`, sorted; a key reported twice
    /// would show.
    /// The scanner without its [`Classed`] table: the rows and edges alone.
    fn unclassed(keys: &[&str]) -> LiteralScanner {
        LiteralScanner { classed: None, ..scanner(keys) }
    }

    fn found(keys: &[&str], s: &str) -> Vec<u32> {
        let got = found_by(&scanner(keys), keys, s);
        assert_eq!(got, found_by(&unclassed(keys), keys, s), "without classes, {keys:?} in {s:?}");
        got
    }

    fn found_by(scanner: &LiteralScanner, keys: &[&str], s: &str) -> Vec<u32> {
        let [got, long] = [false, true].map(|long| {
            let mut got = Vec::new();
            let seen = &mut KeySet::default();
            let f = |k| {
                got.push(k);
                ControlFlow::Continue(())
            };
            let _ = if long { scanner.for_each_key_long(s.as_bytes(), seen, f) } else { scanner.for_each_key(s.as_bytes(), seen, f) };
            got.sort_unstable();
            got
        });
        assert_eq!(got, long, "the long scan, {keys:?} in {s:?}");
        got
    }

    /// Every `(end, key)` occurrence, from `ends` and the suffix chains.
    fn occurrences(keys: &[&str], s: &str) -> Vec<(usize, u32)> {
        let got = occurrences_by(&scanner(keys), s);
        assert!(scanner(keys).classed.is_some() || keys.iter().map(|k| k.len()).sum::<usize>() > 1_000);
        assert_eq!(got, occurrences_by(&unclassed(keys), s), "without classes, {keys:?} in {s:?}");
        got
    }

    fn occurrences_by(scanner: &LiteralScanner, s: &str) -> Vec<(usize, u32)> {
        let mut got = Vec::new();
        let _ = scanner.ends::<(), _>(s.as_bytes(), |end, longest| {
            let mut key = Some(longest);
            while let Some(k) = key {
                got.push((end, k));
                key = scanner.suffix_key(k);
            }
            ControlFlow::Continue(())
        });
        got.sort_unstable();
        got
    }

    /// Every `(end, key)` with the key ending there, by brute force.
    fn naive_occurrences(keys: &[&str], s: &str) -> Vec<(usize, u32)> {
        let mut got: Vec<(usize, u32)> = (0..keys.len() as u32)
            .flat_map(|k| {
                let key = keys[k as usize].as_bytes();
                (key.len()..=s.len()).filter(move |&end| s.as_bytes()[..end].ends_with(key)).map(move |end| (end, k))
            })
            .collect();
        got.sort_unstable();
        got
    }

    fn naive_found(keys: &[&str], s: &str) -> Vec<u32> {
        let mut got: Vec<u32> = naive_occurrences(keys, s).into_iter().map(|(_, k)| k).collect();
        got.sort_unstable();
        got.dedup();
        got
    }

    macro_rules! scans {
        ($($name:ident: $keys:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let want: &[u32] = &$want;
                assert_eq!(found(&$keys, $input), want.to_vec());
                assert_eq!(found(&$keys, $input), naive_found(&$keys, $input));
                assert_eq!(occurrences(&$keys, $input), naive_occurrences(&$keys, $input));
            }
        )*};
    }

    scans! {
        none: ["pull", "push"], "list_requests" => [];
        one: ["pull", "push"], "list_pull_requests" => [0];
        overlapping_once: ["aa"], "aaaa" => [0];
        suffix_outputs: ["she", "he", "hers", "his"], "ushers" => [0, 1, 2];
        failure_into_other_branch: ["abcd", "bce"], "abce" => [1];
        key_inside_key: ["issue", "ss"], "create_issue" => [0, 1];
        whole_string: ["abc"], "abc" => [0];
        empty_string: ["a"], "" => [];
        no_keys: [] as [&str; 0], "abc" => [];
        dense_root: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"], "qpz" => [15, 16];
        multibyte: ["σ", "ß"], "Σσßσ" => [0, 1];
        nested_suffixes: ["a", "aa", "aaa", "baaa"], "aaaa" => [0, 1, 2];
        shorter_found_first: ["b", "ab"], "bab" => [0, 1];
        chain_reaches_a_found_key: ["xa", "a", "ya"], "xaya" => [0, 1, 2];
    }

    #[test]
    fn stops_when_asked() {
        let mut seen = 0;
        let flow = scanner(&["a", "aa", "b"]).for_each_key(b"aab", &mut KeySet::default(), |_| {
            seen += 1;
            if seen == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert!(flow.is_break());
        assert_eq!(seen, 2);
    }

    #[test]
    fn a_set_is_empty_again_for_the_next_scan() {
        let scanner = scanner(&["a", "b"]);
        let mut seen = KeySet::default();
        for s in ["ab", "b", "ba", ""] {
            let mut got = Vec::new();
            let _ = scanner.for_each_key(s.as_bytes(), &mut seen, |k| {
                got.push(k);
                ControlFlow::Continue(())
            });
            got.sort_unstable();
            assert_eq!(got, naive_found(&["a", "b"], s), "{s}");
        }
    }

    /// Random key sets and strings over a tiny alphabet, so that failure links
    /// cross branches and keys are suffixes of each other often: every key
    /// that occurs is reported once, and `ends` with the suffix chains gives
    /// every occurrence.
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
                assert_eq!(found(&key_refs, &s), naive_found(&key_refs, &s), "{key_refs:?} in {s:?}");
                assert_eq!(occurrences(&key_refs, &s), naive_occurrences(&key_refs, &s), "{key_refs:?} in {s:?}");
            }
        }
    }

    #[test]
    fn a_long_periodic_key_builds_and_scans_in_linear_time() {
        // The aho-corasick DFA took a minute on one 100 KB `aaaa…` key.
        let key = vec![b'a'; 1_000_000];
        let keys: [&[u8]; 2] = [&key, b"ab"];
        let mut ends = 0;
        let _ = LiteralScanner::build(&keys).ends::<(), _>(&vec![b'a'; 2_000_000], |_, _| {
            ends += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(ends, 1_000_001);
    }

    #[test]
    fn a_long_scan_leaves_long_keys_to_the_automaton() {
        // The last keys left are long: the scan goes on and meets them.
        let keys: Vec<String> = (1..=10).map(|i| "a".repeat(i * 10)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let s = "a".repeat(95) + "b" + &"a".repeat(200);
        assert_eq!(found(&refs, &s), (0..10).collect::<Vec<u32>>());
    }

    #[test]
    fn a_long_scan_searches_the_last_keys_by_themselves() {
        // Keys a…a end at once; `b`, `ab` and `ba` are left, and each is
        // found by a search from there: `ba` ends only before the last `b`.
        let mut keys: Vec<String> = (1..=10).map(|i| "a".repeat(i)).collect();
        keys.extend(["b", "ab", "ba", "bb"].map(String::from));
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let s = "a".repeat(1_000) + "ba" + &"a".repeat(1_000);
        assert_eq!(found(&refs, &s), naive_found(&refs, &s));
        assert_eq!(found(&refs, &s).len(), 13);
    }

    #[test]
    fn nested_keys_are_each_reported_once() {
        // A thousand keys end at every byte of a run of `a`s; each is reported
        // once (the scan is linear: it would take seconds otherwise).
        let keys: Vec<Vec<u8>> = (1..=1_000).map(|i| vec![b'a'; i]).collect();
        let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let mut got = Vec::new();
        let _ = LiteralScanner::build(&key_refs).for_each_key(&vec![b'a'; 500], &mut KeySet::default(), |k| {
            got.push(k);
            ControlFlow::Continue(())
        });
        got.sort_unstable();
        assert_eq!(got, (0..500).collect::<Vec<u32>>());
    }
}
