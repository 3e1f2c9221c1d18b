//! A byte trie that finds every stored key that is a prefix of a string in one
//! walk over the string, and the key equal to it at the end of that walk.
//!
//! Why not hash maps per key length: a query then hashes once per distinct
//! length, which for a thousand prefixes of twenty lengths is twenty hashes of
//! the name. The walk touches one node per byte of the longest matching prefix
//! and stops at the first byte no key continues with.

/// The first sixteen bytes of `k`, zero-padded, as one big-endian integer.
/// Keys whose heads differ are in the order of their heads (zero padding
/// never inverts an order: a shorter key padded below a longer one is a
/// prefix of it or smaller at a real byte), so a sort by head reads the keys
/// themselves only to break ties.
#[inline]
pub(crate) fn key_head(k: &[u8]) -> u128 {
    match k.first_chunk::<16>() {
        Some(first) => u128::from_be_bytes(*first),
        None => {
            let mut padded = [0u8; 16];
            padded[..k.len()].copy_from_slice(k);
            u128::from_be_bytes(padded)
        }
    }
}

/// Sorts `(key_head(key(item)), item)` pairs into the byte-string order of
/// their keys.
///
/// A most-significant-byte radix sort on the heads (in place, "American
/// flag"): each level moves every item at most once, by one byte of its head,
/// which is beside it, not in the key's bytes elsewhere. Runs of at most
/// [`RADIX_MIN`] items, and items whose heads are all equal, are sorted by
/// comparison, the keys themselves breaking ties of heads. A comparison sort
/// of a thousand keys was two fifths of building a trie.
pub(crate) fn sort_by_key_bytes<E>(items: &mut [(u128, E)], key: impl Fn(&E) -> &[u8]) {
    radix_sort(items, 0, &key);
}

/// Runs up to this long are sorted by comparison.
const RADIX_MIN: usize = 96;

fn radix_sort<E>(items: &mut [(u128, E)], mut depth: usize, key: &impl Fn(&E) -> &[u8]) {
    // Byte `depth` of a head, most significant first.
    let byte = |head: u128, depth: usize| (head >> (120 - 8 * depth)) as u8 as usize;
    let mut counts = [0u32; 256];
    // The bytes that occur, in the order first seen: the loops below visit
    // these buckets, not all 256.
    let mut seen = [0u8; 256];
    let mut kinds = 0;
    loop {
        if items.len() <= RADIX_MIN || depth == 16 {
            items.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| key(&a.1).cmp(key(&b.1))));
            return;
        }
        for item in items.iter() {
            let b = byte(item.0, depth);
            if counts[b] == 0 {
                seen[kinds] = b as u8;
                kinds += 1;
            }
            counts[b] += 1;
        }
        if kinds > 1 {
            break;
        }
        // One byte for all: on to the next, without a level of recursion.
        counts[seen[0] as usize] = 0;
        kinds = 0;
        depth += 1;
    }
    let seen = &mut seen[..kinds];
    seen.sort_unstable();
    // Bucket b is items[starts[b]..starts[b] + counts[b]]; `next[b]` is its
    // first place not yet known to hold a b.
    let (mut starts, mut next) = ([0u32; 256], [0u32; 256]);
    let mut sum = 0;
    for &b in seen.iter() {
        starts[b as usize] = sum;
        next[b as usize] = sum;
        sum += counts[b as usize];
    }
    for &b in seen.iter() {
        let (b, end) = (b as usize, starts[b as usize] + counts[b as usize]);
        while next[b] < end {
            let to = byte(items[next[b] as usize].0, depth);
            if to != b {
                items.swap(next[b] as usize, next[to] as usize);
            }
            next[to] += 1;
        }
    }
    for &b in seen.iter() {
        let (start, count) = (starts[b as usize] as usize, counts[b as usize] as usize);
        if count > 1 {
            radix_sort(&mut items[start..start + count], depth + 1, key);
        }
    }
}

/// How many leading bytes `a` and `b` share.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The runs of keys in sorted `keys[lo..hi]` that share the byte at `depth`
/// (every key there is longer than `depth`), as `(byte, run_lo, run_hi)`.
pub(crate) fn byte_runs<'k, K: AsRef<[u8]> + 'k>(
    keys: impl Fn(usize) -> &'k K,
    mut lo: usize,
    hi: usize,
    depth: usize,
) -> impl Iterator<Item = (u8, usize, usize)> {
    std::iter::from_fn(move || {
        if lo >= hi {
            return None;
        }
        let byte = keys(lo).as_ref()[depth];
        let start = lo;
        lo += 1;
        while lo < hi && keys(lo).as_ref()[depth] == byte {
            lo += 1;
        }
        Some((byte, start, lo))
    })
}

/// The child over `byte` among a node's edges (sorted by byte): a scan for a
/// few, a binary search for more.
#[inline]
pub(crate) fn find_edge(edges: &[(u8, u32)], byte: u8) -> Option<u32> {
    if edges.len() <= 8 {
        edges.iter().find(|(b, _)| *b == byte).map(|&(_, n)| n)
    } else {
        edges.binary_search_by_key(&byte, |(b, _)| *b).ok().map(|i| edges[i].1)
    }
}

/// A 256-entry child table from sorted edges; `absent` marks bytes with no child.
pub(crate) fn dense_table(edges: &[(u8, u32)], absent: u32) -> [u32; 256] {
    let mut table = [absent; 256];
    for &(byte, child) in edges {
        table[byte as usize] = child;
    }
    table
}

/// A node: its outgoing edges are `edges[first..first + count]`, sorted by byte;
/// the payloads of the keys ending here are `payloads[ends..ends_end]`.
///
/// Chains of nodes with one child and no key ending are merged (path
/// compression): entering a node over an edge, a walk must then read the
/// node's `label` (`labels[label..label_end]`) before it stands on the node.
/// With a thousand keys, most of a key's bytes lie on such a chain, so a walk
/// compares them in a row instead of looking up one node per byte.
#[derive(Clone, Debug, Default)]
struct Node {
    first: u32,
    count: u32,
    ends: u32,
    ends_end: u32,
    label: u32,
    label_end: u32,
    /// Index in `dense` of this node's full child table, or `NO_TABLE`.
    table: u32,
}

const NO_TABLE: u32 = u32::MAX;
/// Nodes with at least this many children get a 256-entry child table (1 KB):
/// one load instead of a binary search, where a walk starts (the root) and
/// wherever keys fan out.
const DENSE_MIN_CHILDREN: u32 = 16;

/// A frozen trie over byte keys with a payload list per key.
///
/// The payloads of all keys sit in one array in key order, so equal keys
/// share a run of it and a node holds a range, not a list of its own.
#[derive(Clone, Debug)]
pub struct ByteTrie<T> {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    labels: Vec<u8>,
    /// Child tables of wide nodes: entry `b` is the child over byte `b`, 0 for
    /// none (node 0, the root, is nobody's child).
    dense: Vec<[u32; 256]>,
    payloads: Vec<T>,
}

impl<T> Default for ByteTrie<T> {
    fn default() -> Self {
        ByteTrie { nodes: Vec::new(), edges: Vec::new(), labels: Vec::new(), dense: Vec::new(), payloads: Vec::new() }
    }
}

impl<T> ByteTrie<T> {
    /// Builds a trie from `(key, payload)` pairs; equal keys share a list.
    ///
    /// The entries are sorted once and the nodes laid out breadth-first from
    /// the sorted runs (node `i` is the `i`-th one created, so the nodes array
    /// is its own queue): a build allocates its output arrays and nothing per
    /// node or key. A run of keys below an edge continues, before it branches
    /// or a key ends, with the common prefix of its first and last key (they
    /// are sorted): that is the child's label.
    pub fn build<K: AsRef<[u8]>>(entries: impl IntoIterator<Item = (K, T)>) -> Self {
        let mut entries: Vec<(u128, (K, T))> = entries.into_iter().map(|e| (key_head(e.0.as_ref()), e)).collect();
        if entries.is_empty() {
            return ByteTrie::default();
        }
        sort_by_key_bytes(&mut entries, |e| e.0.as_ref());
        let (keys, payloads): (Vec<K>, Vec<T>) = entries.into_iter().map(|(_, e)| e).unzip();
        let key = |i: usize| keys[i].as_ref();
        // At most one node per distinct non-empty prefix, plus the root (path
        // compression makes fewer): each key adds the bytes past what it
        // shares with the key before it.
        let max_nodes = 1 + keys
            .iter()
            .zip(std::iter::once(&b""[..]).chain(keys.iter().map(AsRef::as_ref)))
            .map(|(k, prev)| k.as_ref().len() - common_prefix(k.as_ref(), prev))
            .sum::<usize>();
        // A node waiting in the queue holds its sorted key range in
        // `ends..ends_end` and its depth in `first`, until its turn sets them.
        let mut nodes = Vec::with_capacity(max_nodes);
        nodes.push(Node { ends_end: keys.len() as u32, table: NO_TABLE, ..Node::default() });
        let mut edges = Vec::with_capacity(max_nodes - 1);
        let (mut labels, mut dense) = (Vec::new(), Vec::new());
        let mut at = 0;
        while at < nodes.len() {
            let Node { first: depth, ends: lo, ends_end: hi, .. } = nodes[at];
            let (mut lo, hi, depth) = (lo as usize, hi as usize, depth as usize);
            // Keys that end at this depth come first in sorted order.
            let ends_from = lo;
            while lo < hi && key(lo).len() == depth {
                lo += 1;
            }
            nodes[at].ends = ends_from as u32;
            nodes[at].ends_end = lo as u32;
            nodes[at].first = edges.len() as u32;
            for (byte, lo, run_end) in byte_runs(|i| &keys[i], lo, hi, depth) {
                // Every key of the run shares the first and last key's common prefix.
                let child_depth = common_prefix(key(lo), key(run_end - 1));
                let label = labels.len() as u32;
                labels.extend_from_slice(&key(lo)[depth + 1..child_depth]);
                edges.push((byte, nodes.len() as u32));
                nodes.push(Node {
                    first: child_depth as u32,
                    ends: lo as u32,
                    ends_end: run_end as u32,
                    label,
                    label_end: labels.len() as u32,
                    table: NO_TABLE,
                    ..Node::default()
                });
                nodes[at].count += 1;
            }
            if nodes[at].count >= DENSE_MIN_CHILDREN {
                nodes[at].table = dense.len() as u32;
                dense.push(dense_table(&edges[nodes[at].first as usize..], 0));
            }
            at += 1;
        }
        debug_assert!(nodes.len() <= max_nodes);
        ByteTrie { nodes, edges, labels, dense, payloads }
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
        if node.table != NO_TABLE {
            let child = self.dense[node.table as usize][byte as usize];
            return (child != 0).then_some(child);
        }
        // Edges of a node are contiguous: children are pushed right after their parent is popped.
        find_edge(&self.edges[node.first as usize..(node.first + node.count) as usize], byte)
    }

    /// Walks `bytes` (an iterator over the string, forwards or backwards) and
    /// calls `visit(payloads, whole)` for every key that is a prefix of it;
    /// `whole` is true for the key equal to the entire string. Stops when
    /// `visit` breaks.
    #[inline]
    pub fn walk<I, F>(&self, mut bytes: I, mut visit: F) -> std::ops::ControlFlow<()>
    where
        I: Iterator<Item = u8>,
        F: FnMut(&[T], bool) -> std::ops::ControlFlow<()>,
    {
        use std::ops::ControlFlow::Continue;
        let Some(mut node) = self.nodes.first() else {
            return Continue(());
        };
        loop {
            let Some(b) = bytes.next() else {
                return match self.ends(node) {
                    Some(payloads) => visit(payloads, true),
                    None => Continue(()),
                };
            };
            if let Some(payloads) = self.ends(node) {
                visit(payloads, false)?;
            }
            let Some(next) = self.child(node, b) else {
                return Continue(());
            };
            node = &self.nodes[next as usize];
            // No key ends inside a label: a string that stops or differs there
            // has no further key as a prefix.
            for &expected in &self.labels[node.label as usize..node.label_end as usize] {
                if bytes.next() != Some(expected) {
                    return Continue(());
                }
            }
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
        let keys: [&[u8]; 16] = [
            b"", b"\0", b"a", b"a\0", b"a\0\0", b"ab", b"abcdefgh", b"abcdefgh\0", b"abcdefghi", b"abcdefgz", b"\xff", b"b",
            b"abcdefghijklmnop", b"abcdefghijklmnop\0", b"abcdefghijklmnopq", b"abcdefghijklmnoq",
        ];
        // Every order of them sorts into byte order: both each other's
        // rotations and reversals, so every pair meets in both places.
        let want = { let mut w = keys.to_vec(); w.sort(); w };
        for shift in 0..keys.len() {
            for reverse in [false, true] {
                let mut input: Vec<&[u8]> = keys.to_vec();
                input.rotate_left(shift);
                if reverse {
                    input.reverse();
                }
                let mut headed: Vec<(u128, &[u8])> = input.iter().map(|k| (key_head(k), *k)).collect();
                sort_by_key_bytes(&mut headed, |k| k);
                assert_eq!(headed.iter().map(|(_, k)| *k).collect::<Vec<_>>(), want);
            }
        }
        for a in keys {
            for b in keys {
                if key_head(a) != key_head(b) {
                    assert_eq!(key_head(a).cmp(&key_head(b)), a.cmp(b), "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn radix_order_is_byte_order_at_every_size() {
        // Keys over a few bytes (NUL among them, beside its zero padding), of
        // every length past the sixteen-byte head, in runs long enough for
        // several levels of buckets.
        let mut next = crate::test_rng::below(0x5DEE_CE66_D1CE_4E5B);
        let alphabet = [0u8, 1, b'a', b'b', 0xFF];
        for size in [0, 1, 2, 31, 32, 33, 100, 1_000, 5_000] {
            let keys: Vec<Vec<u8>> = (0..size)
                .map(|_| {
                    let len = next(24) as usize;
                    let common = if next(2) == 0 { b"shared_prefix_of_20b".len().min(len) } else { 0 };
                    let mut k = b"shared_prefix_of_20b"[..common].to_vec();
                    k.extend((common..len).map(|_| alphabet[next(5) as usize]));
                    k
                })
                .collect();
            let mut headed: Vec<(u128, &[u8])> = keys.iter().map(|k| (key_head(k), k.as_slice())).collect();
            sort_by_key_bytes(&mut headed, |k| k);
            let mut want: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            want.sort();
            assert_eq!(headed.iter().map(|(_, k)| *k).collect::<Vec<_>>(), want, "size {size}");
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
        dense_root: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "pq"], "pq" => [(15, false), (17, true)];
        dense_root_miss: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"], "z" => [];
        label_walked: ["create_issue", "create_repo"], "create_issue" => [(0, true)];
        label_stops_inside: ["create_issue"], "create" => [];
        label_differs: ["create_issue"], "create_issuX" => [];
        label_then_longer_string: ["ab", "abcdef"], "abcdefg" => [(0, false), (1, false)];
        key_ends_where_label_would: ["abc", "abcd", "abce"], "abcd" => [(0, false), (1, true)];
        long_chain_then_branch: ["xyz_one", "xyz_two", "xyz_"], "xyz_two" => [(2, false), (1, true)];
    }
}
