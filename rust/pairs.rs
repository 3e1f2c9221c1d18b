//! A frozen set of `(server, tool)` byte-string pairs, each with the id of the
//! first rule that wrote it: the exact half of a rule set.
//!
//! The bytes of every pair sit in one buffer and an open-addressing table
//! (linear probing, at most half full) holds entry numbers, so a build of
//! thousands of pairs makes a handful of allocations instead of one per pair,
//! and a lookup hashes the two segments in place without joining them.

use std::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

/// A free slot of [`PairTable::slots`].
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Pair {
    hash: u64,
    /// `bytes[start..start + server_len]` is the server, the tool follows.
    start: usize,
    server_len: usize,
    tool_len: usize,
    id: u32,
}

#[derive(Clone, Debug, Default)]
pub struct PairTable {
    bytes: Vec<u8>,
    pairs: Vec<Pair>,
    /// Entry numbers into `pairs`, or [`EMPTY`]; the length is a power of two.
    slots: Vec<u32>,
    /// The hash of each server of a pair, with the [`length_bit`]s of its
    /// pairs' tools: a batch asks once per server which lengths its tools
    /// may have, and skips the lookup (and, on a loose side, the fold) of
    /// every tool of another length. (Servers whose hashes collide share a
    /// mask: more lookups, never fewer.)
    servers: FxHashMap<u64, u64>,
}

/// The bit of a tool's length in a server's mask ([`PairTable::tool_lengths`]):
/// lengths of 63 bytes and more share the top bit.
#[inline]
pub fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

#[inline]
fn server_hash(server: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(server);
    h.finish()
}

#[inline]
fn pair_hash(server: &[u8], tool: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(server);
    // A separator between the segments: ("ab", "c") and ("a", "bc") hash apart.
    h.write_u8(0xFF);
    h.write(tool);
    h.finish()
}

impl PairTable {
    /// Room for `pairs` pairs without growing.
    pub fn with_capacity(pairs: usize) -> Self {
        let mut table = PairTable::default();
        if pairs > 0 {
            table.pairs.reserve(pairs);
            table.slots = vec![EMPTY; (pairs * 2).next_power_of_two()];
        }
        table
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The slot holding `(server, tool)`, or the free slot where it would go.
    #[inline]
    fn probe(&self, hash: u64, server: &[u8], tool: &[u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return at;
            }
            let p = &self.pairs[slot as usize];
            if p.hash == hash && p.server_len == server.len() && p.tool_len == tool.len() {
                let (s, t) = self.bytes[p.start..p.start + p.server_len + p.tool_len].split_at(p.server_len);
                if s == server && t == tool {
                    return at;
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds the pair with `id` unless it is present (the first id stays).
    pub fn insert(&mut self, server: &[u8], tool: &[u8], id: u32) {
        if (self.pairs.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = pair_hash(server, tool);
        let at = self.probe(hash, server, tool);
        if self.slots[at] != EMPTY {
            return;
        }
        self.slots[at] = self.pairs.len() as u32;
        *self.servers.entry(server_hash(server)).or_default() |= length_bit(tool.len());
        let start = self.bytes.len();
        self.bytes.extend_from_slice(server);
        self.bytes.extend_from_slice(tool);
        self.pairs.push(Pair { hash, start, server_len: server.len(), tool_len: tool.len(), id });
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(8);
        let mut slots = vec![EMPTY; size];
        for (n, p) in self.pairs.iter().enumerate() {
            let mut at = p.hash as usize & (size - 1);
            while slots[at] != EMPTY {
                at = (at + 1) & (size - 1);
            }
            slots[at] = n as u32;
        }
        self.slots = slots;
    }

    /// False when no pair has `server` (true may be a hash collision).
    pub fn may_have_server(&self, server: &[u8]) -> bool {
        self.tool_lengths(server) != 0
    }

    /// The [`length_bit`]s of the tools paired with `server`, or more (a
    /// hash collision); 0 when no pair has it.
    pub fn tool_lengths(&self, server: &[u8]) -> u64 {
        match self.pairs.is_empty() {
            true => 0,
            false => self.servers.get(&server_hash(server)).copied().unwrap_or(0),
        }
    }

    /// The id stored with `(server, tool)`, if any.
    #[inline]
    pub fn get(&self, server: &[u8], tool: &[u8]) -> Option<u32> {
        if self.pairs.is_empty() {
            return None;
        }
        let slot = self.slots[self.probe(pair_hash(server, tool), server, tool)];
        (slot != EMPTY).then(|| self.pairs[slot as usize].id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, &str)]) -> PairTable {
        let mut t = PairTable::with_capacity(pairs.len());
        for (i, (s, tool)) in pairs.iter().enumerate() {
            t.insert(s.as_bytes(), tool.as_bytes(), i as u32);
        }
        t
    }

    macro_rules! lookups {
        ($($name:ident: $pairs:expr, ($server:expr, $tool:expr) => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(table(&$pairs).get($server.as_bytes(), $tool.as_bytes()), $want);
            }
        )*};
    }

    lookups! {
        hit: [("s", "t"), ("gh", "create")], ("gh", "create") => Some(1);
        miss: [("s", "t")], ("s", "u") => None;
        first_id_wins: [("s", "t"), ("x", "y"), ("s", "t")], ("s", "t") => Some(0);
        split_point_matters: [("ab", "c")], ("a", "bc") => None;
        split_point_other_way: [("a", "bc")], ("a", "bc") => Some(0);
        empty_segments: [("", ""), ("", "x")], ("", "") => Some(0);
        empty_table: [], ("s", "t") => None;
    }

    #[test]
    fn servers_with_pairs_are_known() {
        let t = table(&[("gh", "create"), ("fs", "read")]);
        assert!(t.may_have_server(b"gh") && t.may_have_server(b"fs"));
        assert!(!t.may_have_server(b"slack"));
        assert!(!table(&[]).may_have_server(b"gh"));
    }

    /// A server's mask holds the length of each of its tools (long ones on
    /// the top bit), and no server's mask is empty while it has a pair.
    #[test]
    fn servers_know_their_tool_lengths() {
        let long = "x".repeat(70);
        let t = table(&[("gh", "create"), ("gh", "get"), ("fs", &long), ("fs", &long[..63])]);
        assert_eq!(t.tool_lengths(b"gh"), length_bit(6) | length_bit(3));
        assert_eq!(t.tool_lengths(b"fs"), 1 << 63);
        assert_eq!(length_bit(64), length_bit(63));
        assert_eq!(t.tool_lengths(b"slack"), 0);
        assert_eq!(table(&[("", "")]).tool_lengths(b""), 1);
    }

    #[test]
    fn first_id_wins_keeps_one_entry() {
        assert_eq!(table(&[("s", "t"), ("s", "t"), ("s", "u")]).len(), 2);
    }

    #[test]
    fn grows_from_nothing_and_keeps_every_pair() {
        let mut t = PairTable::default();
        let pairs: Vec<(String, String)> = (0..5_000).map(|i| (format!("s{}", i % 37), format!("tool_{i}"))).collect();
        for (i, (s, tool)) in pairs.iter().enumerate() {
            t.insert(s.as_bytes(), tool.as_bytes(), i as u32);
        }
        assert_eq!(t.len(), pairs.len());
        for (i, (s, tool)) in pairs.iter().enumerate() {
            assert_eq!(t.get(s.as_bytes(), tool.as_bytes()), Some(i as u32));
            assert_eq!(t.get(tool.as_bytes(), s.as_bytes()), None);
        }
    }

    /// Pairs whose hashes all land in one run of slots: probing must walk past
    /// every other pair (and compare bytes, not just hashes) to find the one.
    #[test]
    fn colliding_slots_are_probed_past() {
        let mut t = PairTable::with_capacity(64);
        let mask = t.slots.len() - 1;
        let target = pair_hash(b"s", b"0") as usize & mask;
        let colliding: Vec<String> =
            (0..100_000).map(|i| i.to_string()).filter(|tool| pair_hash(b"s", tool.as_bytes()) as usize & mask == target).take(20).collect();
        assert_eq!(colliding.len(), 20);
        for (i, tool) in colliding.iter().enumerate() {
            t.insert(b"s", tool.as_bytes(), i as u32);
        }
        for (i, tool) in colliding.iter().enumerate() {
            assert_eq!(t.get(b"s", tool.as_bytes()), Some(i as u32));
            assert_eq!(t.get(b"t", tool.as_bytes()), None);
        }
    }
}
