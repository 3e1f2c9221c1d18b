//! A byte trie that finds every stored key that is a prefix of a string in one
//! walk over the string, and the key equal to it at the end of that walk.
//!
//! Why not hash maps per key length: a query then hashes once per distinct
//! length, which for a thousand prefixes of twenty lengths is twenty hashes of
//! the name. The walk touches one node per byte of the longest matching prefix
//! and stops at the first byte no key continues with.

/// Byte-string order, deciding most pairs by their first eight bytes as one
/// integer: sorting keys then calls `memcmp` only for keys that share them.
#[inline]
pub(crate) fn cmp_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    #[inline]
    fn head(k: &[u8]) -> u64 {
        match k.first_chunk::<8>() {
            Some(first) => u64::from_be_bytes(*first),
            None => k.iter().enumerate().fold(0, |v, (i, &b)| v | u64::from(b) << (56 - 8 * i)),
        }
    }
    // Zero padding never inverts an order: a shorter key that is padded below
    // a longer one is a prefix of it or smaller at a real byte.
    head(a).cmp(&head(b)).then_with(|| a.cmp(b))
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A node: its outgoing edges are `edges[first..first + count]`, sorted by byte;
/// the payloads of the keys ending here are `payloads[ends..ends_end]`.
#[derive(Clone, Debug, Default)]
struct Node {
    first: u32,
    count: u32,
    ends: u32,
    ends_end: u32,
}

/// A frozen trie over byte keys with a payload list per key.
///
/// The payloads of all keys sit in one array in key order, so equal keys
/// share a run of it and a node holds a range, not a list of its own.
#[derive(Clone, Debug)]
pub struct ByteTrie<T> {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    payloads: Vec<T>,
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
    /// the sorted runs (node `i` is the `i`-th one created, so the nodes array
    /// is its own queue): a build allocates its output arrays and nothing per
    /// node or key.
    pub fn build<K: AsRef<[u8]>>(entries: impl IntoIterator<Item = (K, T)>) -> Self {
        let mut entries: Vec<(K, T)> = entries.into_iter().collect();
        if entries.is_empty() {
            return ByteTrie::default();
        }
        entries.sort_unstable_by(|a, b| cmp_keys(a.0.as_ref(), b.0.as_ref()));
        let (keys, payloads): (Vec<K>, Vec<T>) = entries.into_iter().unzip();
        // One node per distinct non-empty prefix, plus the root: each key adds
        // the bytes past what it shares with the key before it.
        let node_count = 1 + keys
            .iter()
            .zip(std::iter::once(&b""[..]).chain(keys.iter().map(AsRef::as_ref)))
            .map(|(k, prev)| k.as_ref().len() - common_prefix(k.as_ref(), prev))
            .sum::<usize>();
        // A node waiting in the queue holds its sorted key range in
        // `ends..ends_end` and its depth in `first`, until its turn sets them.
        let mut nodes = Vec::with_capacity(node_count);
        nodes.push(Node { first: 0, count: 0, ends: 0, ends_end: keys.len() as u32 });
        let mut edges = Vec::with_capacity(node_count - 1);
        let mut at = 0;
        while at < nodes.len() {
            let Node { first: depth, ends: lo, ends_end: hi, .. } = nodes[at];
            let (mut lo, hi, depth) = (lo as usize, hi as usize, depth as usize);
            // Keys that end at this depth come first in sorted order.
            let ends_from = lo;
            while lo < hi && keys[lo].as_ref().len() == depth {
                lo += 1;
            }
            nodes[at].ends = ends_from as u32;
            nodes[at].ends_end = lo as u32;
            nodes[at].first = edges.len() as u32;
            while lo < hi {
                let byte = keys[lo].as_ref()[depth];
                let mut run_end = lo + 1;
                while run_end < hi && keys[run_end].as_ref()[depth] == byte {
                    run_end += 1;
                }
                edges.push((byte, nodes.len() as u32));
                nodes.push(Node { first: depth as u32 + 1, count: 0, ends: lo as u32, ends_end: run_end as u32 });
                nodes[at].count += 1;
                lo = run_end;
            }
            at += 1;
        }
        debug_assert_eq!(nodes.len(), node_count);
        ByteTrie { nodes, edges, payloads }
    }

    /// The payloads of the keys ending at `node`, if any.
    #[inline]
    fn ends(&self, node: &Node) -> Option<&[T]> {
        (node.ends < node.ends_end).then(|| &self.payloads[node.ends as usize..node.ends_end as usize])
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
            if let Some(payloads) = self.ends(node) {
                visit(payloads, false)?;
            }
            match self.child(node, b) {
                Some(next) => node = &self.nodes[next as usize],
                None => return std::ops::ControlFlow::Continue(()),
            }
        }
        match self.ends(node) {
            Some(payloads) => visit(payloads, true),
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
            // Equal keys share one run of payloads, in no particular order.
            let mut ids = ids.to_vec();
            ids.sort_unstable();
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

    #[test]
    fn key_order_is_byte_order() {
        let keys: [&[u8]; 12] =
            [b"", b"\0", b"a", b"a\0", b"a\0\0", b"ab", b"abcdefgh", b"abcdefgh\0", b"abcdefghi", b"abcdefgz", b"\xff", b"b"];
        for a in keys {
            for b in keys {
                assert_eq!(cmp_keys(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    walks! {
        every_prefix_in_order: ["c", "cr", "create", "d"], "create_issue" => [(0, false), (1, false), (2, false)];
        whole_key_flagged: ["ab", "abc"], "abc" => [(0, false), (1, true)];
        empty_key_is_a_prefix_of_all: ["", "x"], "yz" => [(0, false)];
        empty_key_whole_on_empty: [""], "" => [(0, true)];
        longer_key_misses: ["abcd"], "abc" => [];
        shared_key: ["ab", "ab"], "abx" => [(0, false), (1, false)];
        shared_keys_interleaved: ["b", "a", "b", "ab", "a", "ab"], "ab" => [(1, false), (4, false), (3, true), (5, true)];
        shared_keys_other_branch: ["b", "a", "b", "ab"], "b" => [(0, true), (2, true)];
        shared_empty_keys: ["", "a", ""], "a" => [(0, false), (2, false), (1, true)];
        many_children_binary_search: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "jx"], "jx" => [(9, false), (10, true)];
    }
}
