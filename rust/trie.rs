//! A byte trie that finds every stored key that is a prefix of a string in one
//! walk over the string, and the key equal to it at the end of that walk.
//!
//! Why not hash maps per key length: a query then hashes once per distinct
//! length, which for a thousand prefixes of twenty lengths is twenty hashes of
//! the name. The walk touches one node per byte of the longest matching prefix
//! and stops at the first byte no key continues with.

/// A node: its outgoing edges are `edges[first..first + count]`, sorted by byte.
#[derive(Clone, Debug, Default)]
struct Node {
    first: u32,
    count: u32,
    /// Slot in `payloads` of the keys ending here, if any.
    ends: Option<u32>,
}

/// A frozen trie over byte keys with a payload list per key.
#[derive(Clone, Debug)]
pub struct ByteTrie<T> {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    payloads: Vec<Vec<T>>,
}

impl<T> Default for ByteTrie<T> {
    fn default() -> Self {
        ByteTrie { nodes: Vec::new(), edges: Vec::new(), payloads: Vec::new() }
    }
}

impl<T> ByteTrie<T> {
    /// Builds a trie from `(key, payload)` pairs; equal keys share a list.
    ///
    /// The entries are sorted once and the nodes laid out breadth-first from
    /// the sorted runs, so a build allocates its output arrays and nothing per
    /// node.
    pub fn build<K: AsRef<[u8]>>(entries: impl IntoIterator<Item = (K, T)>) -> Self {
        let mut entries: Vec<(K, T)> = entries.into_iter().collect();
        if entries.is_empty() {
            return ByteTrie { nodes: Vec::new(), edges: Vec::new(), payloads: Vec::new() };
        }
        entries.sort_unstable_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        let mut slots: Vec<Option<T>> = entries.iter_mut().map(|_| None).collect();
        let keys: Vec<K> = entries
            .into_iter()
            .enumerate()
            .map(|(i, (key, payload))| {
                slots[i] = Some(payload);
                key
            })
            .collect();
        let mut trie = ByteTrie { nodes: vec![Node::default()], edges: Vec::new(), payloads: Vec::new() };
        // Each queue item: a node, its depth, and the sorted key range below it.
        let mut queue = std::collections::VecDeque::from([(0usize, 0usize, 0usize, keys.len())]);
        while let Some((node, depth, mut lo, hi)) = queue.pop_front() {
            // Keys that end at this depth come first in sorted order.
            let ends_from = lo;
            while lo < hi && keys[lo].as_ref().len() == depth {
                lo += 1;
            }
            if lo > ends_from {
                trie.payloads.push(slots[ends_from..lo].iter_mut().filter_map(Option::take).collect());
                trie.nodes[node].ends = Some((trie.payloads.len() - 1) as u32);
            }
            trie.nodes[node].first = trie.edges.len() as u32;
            while lo < hi {
                let byte = keys[lo].as_ref()[depth];
                let mut run_end = lo;
                while run_end < hi && keys[run_end].as_ref()[depth] == byte {
                    run_end += 1;
                }
                trie.nodes.push(Node::default());
                let child = trie.nodes.len() - 1;
                trie.edges.push((byte, child as u32));
                trie.nodes[node].count += 1;
                queue.push_back((child, depth + 1, lo, run_end));
                lo = run_end;
            }
        }
        trie
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }

    #[inline]
    fn child(&self, node: &Node, byte: u8) -> Option<u32> {
        // Edges of a node are contiguous: children are pushed right after their parent is popped.
        let edges = &self.edges[node.first as usize..(node.first + node.count) as usize];
        if edges.len() <= 8 {
            edges.iter().find(|(b, _)| *b == byte).map(|&(_, n)| n)
        } else {
            edges.binary_search_by_key(&byte, |(b, _)| *b).ok().map(|i| edges[i].1)
        }
    }

    /// Walks `bytes` (an iterator over the string, forwards or backwards) and
    /// calls `visit(payloads, whole)` for every key that is a prefix of it;
    /// `whole` is true for the key equal to the entire string. Stops when
    /// `visit` breaks.
    #[inline]
    pub fn walk<I, F>(&self, bytes: I, mut visit: F) -> std::ops::ControlFlow<()>
    where
        I: Iterator<Item = u8>,
        F: FnMut(&[T], bool) -> std::ops::ControlFlow<()>,
    {
        let Some(mut node) = self.nodes.first() else {
            return std::ops::ControlFlow::Continue(());
        };
        for b in bytes {
            if let Some(slot) = node.ends {
                visit(&self.payloads[slot as usize], false)?;
            }
            match self.child(node, b) {
                Some(next) => node = &self.nodes[next as usize],
                None => return std::ops::ControlFlow::Continue(()),
            }
        }
        match node.ends {
            Some(slot) => visit(&self.payloads[slot as usize], true),
            None => std::ops::ControlFlow::Continue(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::ControlFlow;

    fn prefixes(keys: &[&str], s: &str) -> Vec<(u32, bool)> {
        let trie = ByteTrie::build(keys.iter().enumerate().map(|(i, k)| (k.as_bytes().to_vec(), i as u32)));
        let mut got = Vec::new();
        let _ = trie.walk(s.bytes(), |ids, whole| {
            got.extend(ids.iter().map(|&i| (i, whole)));
            ControlFlow::Continue(())
        });
        got
    }

    macro_rules! walks {
        ($($name:ident: $keys:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() { let want: &[(u32, bool)] = &$want; assert_eq!(prefixes(&$keys, $input), want.to_vec()); }
        )*};
    }

    walks! {
        every_prefix_in_order: ["c", "cr", "create", "d"], "create_issue" => [(0, false), (1, false), (2, false)];
        whole_key_flagged: ["ab", "abc"], "abc" => [(0, false), (1, true)];
        empty_key_is_a_prefix_of_all: ["", "x"], "yz" => [(0, false)];
        empty_key_whole_on_empty: [""], "" => [(0, true)];
        longer_key_misses: ["abcd"], "abc" => [];
        shared_key: ["ab", "ab"], "abx" => [(0, false), (1, false)];
        many_children_binary_search: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "jx"], "jx" => [(9, false), (10, true)];
    }
}
