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
        ByteTrie { nodes: vec![Node::default()], edges: Vec::new(), payloads: Vec::new() }
    }
}

/// A growing node, before freezing.
struct Draft<T> {
    children: Vec<(u8, usize)>,
    ends: Vec<T>,
}

impl<T> ByteTrie<T> {
    /// Builds a trie from `(key, payload)` pairs; equal keys share a list.
    pub fn build(entries: impl IntoIterator<Item = (Vec<u8>, T)>) -> Self {
        let mut drafts: Vec<Draft<T>> = vec![Draft { children: Vec::new(), ends: Vec::new() }];
        for (key, payload) in entries {
            let mut at = 0;
            for &b in &key {
                at = match drafts[at].children.iter().find(|(c, _)| *c == b) {
                    Some(&(_, next)) => next,
                    None => {
                        drafts.push(Draft { children: Vec::new(), ends: Vec::new() });
                        let next = drafts.len() - 1;
                        drafts[at].children.push((b, next));
                        next
                    }
                };
            }
            drafts[at].ends.push(payload);
        }
        let mut trie = ByteTrie { nodes: Vec::with_capacity(drafts.len()), edges: Vec::new(), payloads: Vec::new() };
        for draft in drafts.iter_mut() {
            draft.children.sort_unstable_by_key(|(b, _)| *b);
            let first = trie.edges.len() as u32;
            trie.edges.extend(draft.children.iter().map(|&(b, next)| (b, next as u32)));
            let ends = if draft.ends.is_empty() {
                None
            } else {
                trie.payloads.push(std::mem::take(&mut draft.ends));
                Some((trie.payloads.len() - 1) as u32)
            };
            trie.nodes.push(Node { first, count: draft.children.len() as u32, ends });
        }
        trie
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }

    #[inline]
    fn child(&self, node: &Node, byte: u8) -> Option<u32> {
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
        let mut node = &self.nodes[0];
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
