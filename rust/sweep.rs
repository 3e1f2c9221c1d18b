//! Decides many globs in one pass over a long string.
//!
//! An index verifies a glob after its key hit: it compares the prefix and
//! the suffix, then searches the middle pieces in turn (`GlobList::is_match`).
//! That is linear in the string, but per glob, so a thousand globs whose keys
//! all occur in a megabyte cost a thousand passes over it. When that would
//! cost more than a few passes, the index hands the rest of those globs here,
//! and one scan of the string decides them all.
//!
//! A glob is a row of pieces: its prefix, which must end where it is long;
//! its middle pieces, each to start at or after the end of the one before;
//! its suffix, which must end where the string does. (A sweep for globs
//! whose prefix and suffix were compared already has their middle pieces
//! alone, the first to start after the prefix.) Each glob waits for one
//! piece at a time, from where the one before ended. A middle piece is taken
//! at its leftmost occurrence there, as the greedy match does (the leftmost
//! is always safe with `*` as the only wildcard), and all occurrences of a
//! piece have one length, so the first *end* the scan meets at or after the
//! earliest possible one is that occurrence. A middle piece must also end
//! where the suffix can still follow; prefix and suffix have one place each.
//! A glob matches when its last piece is found.
//!
//! The scan is one Aho-Corasick automaton over all the pieces
//! ([`LiteralScanner::ends`]). At each end it gets the longest piece ending
//! there; the others ending there are its suffix chain, which can be as long
//! as there are pieces. Walking it would cost pieces × bytes again, so only
//! *marked* pieces are visited: a piece is marked while some glob waits for
//! it and may take its next occurrence (the wait starts when the piece could
//! first end, its *activation*: a glob that needs a piece of length `l` from
//! `t` on waits for an end at `t + l` or later). The suffix chains form a
//! tree (each piece's parent the longest piece that is a proper suffix of
//! it), split into heavy paths, each path's pieces numbered in a row; the
//! marks are bits over those numbers. The marked pieces ending at a place are
//! then, for each heavy path that the chain crosses (at most log2 of the
//! pieces, since each lighter branch holds at most half of what is below),
//! the marked numbers from the path's top down to where the chain enters it:
//! a path with no mark is passed by a count, and a marked number is found by
//! a 64-ary bit tree in a few word operations.
//!
//! So a sweep of n bytes for g globs of p pieces in all (k distinct) costs
//! O(n·h + p·log p + k): per byte one transition (amortized) and, where a
//! piece ends while marks are out, a look at each of the h ≤ log2(k) + 1
//! heavy paths of the longest piece's chain, however many pieces end there
//! (h is 1 for a chain of nested pieces such as `a`, `aa`, …, and for most
//! strings no piece is marked or ends at all); per piece, one wait (a heap
//! entry, a mark, an unmark), whatever its length. No term multiplies the
//! string's length, or a pattern's, by the number of globs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

use crate::glob::GlobList;
use crate::literals::LiteralScanner;
use crate::trie::{key_head, sort_by_key_bytes};

/// No piece, path or waiter.
const NONE: u32 = u32::MAX;

/// The globs of a list, compiled for sweeps: built the first time a query
/// needs one (most indexes never see a string long enough).
#[derive(Clone, Debug)]
pub struct Sweep {
    scanner: LiteralScanner,
    /// The pieces of glob `g` are `pieces[starts[g]..starts[g + 1]]`, the
    /// first of them to start at `origin[g]` or later.
    starts: Vec<u32>,
    origin: Vec<u32>,
    pieces: Vec<Piece>,
    key_len: Vec<u32>,
    paths: HeavyPaths,
}

/// One piece of a glob: its key in the scanner and where it may end.
#[derive(Clone, Copy, Debug)]
struct Piece {
    key: u32,
    place: Place,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The prefix: it ends where it is long.
    Start,
    /// A middle piece, at least this far from the end (the suffix's length).
    Free(u32),
    /// The suffix: it ends at the end.
    End,
}

/// The heavy-path decomposition of the tree of keys under "longest proper
/// suffix that is a key".
#[derive(Clone, Debug)]
struct HeavyPaths {
    /// Each key's path, and its number (a path's keys in a row, its top
    /// first).
    path: Vec<u32>,
    rank: Vec<u32>,
    /// The key with each number.
    key_at: Vec<u32>,
    /// Each path's top number, and the key above its top (`NONE` at a root).
    top_rank: Vec<u32>,
    above: Vec<u32>,
}

impl Sweep {
    /// A sweep over whole globs, or (`whole` false) over their middle
    /// pieces alone, for globs whose prefix and suffix are known to fit: the
    /// prefixes' bytes, left out, then do not hold a scan of a run that
    /// they begin away from the automaton's root, where it skips what starts
    /// no piece at a load per byte.
    pub fn build(globs: &GlobList, whole: bool) -> Self {
        // Every glob's pieces in a row, with their bytes; a literal glob has
        // none (the index decides those by their keys alone).
        let mut texts: Vec<&[u8]> = Vec::new();
        let mut places = Vec::new();
        let mut starts = Vec::with_capacity(globs.len() + 1);
        let mut origin = Vec::with_capacity(globs.len());
        for g in 0..globs.len() as u32 {
            starts.push(texts.len() as u32);
            let Some((prefix, middles, suffix)) = globs.parts(g) else {
                origin.push(0);
                continue;
            };
            origin.push(if whole { 0 } else { prefix.len() as u32 });
            if whole && !prefix.is_empty() {
                texts.push(prefix);
                places.push(Place::Start);
            }
            for m in middles {
                texts.push(globs.middle(m));
                places.push(Place::Free(suffix.len() as u32));
            }
            if whole && !suffix.is_empty() {
                texts.push(suffix);
                places.push(Place::End);
            }
        }
        starts.push(texts.len() as u32);
        // Equal pieces (of one glob or of several) are one key.
        let mut sorted: Vec<(u128, (&[u8], u32))> =
            texts.iter().enumerate().map(|(i, t)| (key_head(t), (*t, i as u32))).collect();
        sort_by_key_bytes(&mut sorted, |p| p.0);
        let mut keys: Vec<&[u8]> = Vec::new();
        let mut pieces = vec![Piece { key: 0, place: Place::End }; texts.len()];
        for &(_, (text, i)) in &sorted {
            if keys.last() != Some(&text) {
                keys.push(text);
            }
            pieces[i as usize] = Piece { key: keys.len() as u32 - 1, place: places[i as usize] };
        }
        let scanner = LiteralScanner::build(&keys);
        let key_len: Vec<u32> = keys.iter().map(|k| k.len() as u32).collect();
        let paths = HeavyPaths::build(&scanner, &key_len);
        Sweep { scanner, starts, origin, pieces, key_len, paths }
    }

    /// Calls `f(id)` for each `(glob, id)` of `waiting` (globs with a star,
    /// whose prefix and suffix fit `s` unless the sweep is over whole globs)
    /// that matches `s`; stops when `f` breaks.
    pub fn run<F>(&self, s: &[u8], waiting: &[(u32, u32)], scratch: &mut SweepScratch, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        for &(glob, id) in waiting {
            if self.starts[glob as usize] == self.starts[glob as usize + 1] {
                // Only stars, or only ends that fit: it matches.
                f(id)?;
            }
        }
        scratch.prepare(self.key_len.len(), self.paths.top_rank.len());
        for &(glob, id) in waiting {
            let (first, end) = (self.starts[glob as usize], self.starts[glob as usize + 1]);
            if first == end {
                continue;
            }
            let mut waiter = Waiter { id, piece: first, last: end - 1, limit: 0, next: NONE };
            if let Some(at) = self.wait_from(&mut waiter, self.origin[glob as usize] as usize, s.len()) {
                scratch.expect(self.pieces[first as usize].key);
                scratch.waiters.push(waiter);
                scratch.pending.push(Reverse((at, scratch.waiters.len() as u32 - 1)));
            }
        }
        // The scan stops early when nothing waits; either way it leaves
        // nothing marked or waiting for the next sweep.
        let flow = if scratch.pending.is_empty() { ControlFlow::Continue(()) } else { self.scan(s, scratch, f) };
        scratch.clear(self);
        flow
    }

    /// Sets `waiter` to wait for its piece from `start` on in a string of `n`
    /// bytes: returns the earliest end that can serve it, unless none can.
    #[inline]
    fn wait_from(&self, waiter: &mut Waiter, start: usize, n: usize) -> Option<usize> {
        let piece = self.pieces[waiter.piece as usize];
        let len = self.key_len[piece.key as usize] as usize;
        let (at, limit) = match piece.place {
            Place::Start => (len, len),
            Place::Free(after) => (start + len, n.checked_sub(after as usize)?),
            Place::End => ((start + len).max(n), n),
        };
        waiter.limit = limit;
        (at <= limit).then_some(at)
    }

    fn scan<F>(&self, s: &[u8], scratch: &mut SweepScratch, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        let (mut from, mut search) = (0, SKIP_SEARCH_PER_BYTE * s.len());
        loop {
            // Before a pass too: its first key may be far ahead, with no end
            // of any key (where the scan would look) before it.
            if scratch.changed && scratch.expected <= FEW_EXPECTED && search > 0 {
                scratch.changed = false;
                match self.skip(s, from, scratch, &mut search) {
                    ControlFlow::Break(Stop::Skip(to)) => from = to,
                    ControlFlow::Break(_) => return ControlFlow::Continue(()),
                    ControlFlow::Continue(()) => {}
                }
            }
            let base = from;
            let flow = self.scanner.ends(&s[base..], |end, longest| {
                let end = base + end;
                // Waits that may take an end here start now; the ends before
                // (where no piece ended) could not have served them.
                while let Some(&Reverse((at, w))) = scratch.pending.peek() {
                    if at > end {
                        break;
                    }
                    scratch.pending.pop();
                    let key = self.pieces[scratch.waiters[w as usize].piece as usize].key;
                    scratch.wait(w, key, self);
                }
                if scratch.marked == 0 && scratch.pending.is_empty() {
                    return ControlFlow::Break(Stop::Done);
                }
                // The marked keys on the chain of `longest`, path by path.
                let paths = &self.paths;
                let mut key = if scratch.marked == 0 { NONE } else { longest };
                while key != NONE {
                    let path = paths.path[key as usize] as usize;
                    if scratch.on_path[path] > 0 {
                        let (top, to) = (paths.top_rank[path] as usize, paths.rank[key as usize] as usize);
                        while let Some(rank) = scratch.marks.next(top).filter(|&r| r <= to) {
                            let found = paths.key_at[rank];
                            let mut w = scratch.unmark(found, self);
                            while w != NONE {
                                let next = scratch.waiters[w as usize].next;
                                scratch.unexpect(found);
                                if let Some(id) = self.advance(w, end, s.len(), scratch) {
                                    f(id).map_break(|()| Stop::Asked)?;
                                }
                                w = next;
                            }
                        }
                    }
                    key = paths.above[path];
                }
                if scratch.changed && scratch.expected <= FEW_EXPECTED && search > 0 {
                    scratch.changed = false;
                    return self.skip(s, end, scratch, &mut search);
                }
                ControlFlow::Continue(())
            });
            match flow {
                ControlFlow::Break(Stop::Asked) => return ControlFlow::Break(()),
                ControlFlow::Break(Stop::Skip(to)) => from = to,
                _ => return ControlFlow::Continue(()),
            }
        }
    }

    /// Where the scan may go on after `at` (the end it is at, or where a
    /// pass would start) when at most [`FEW_EXPECTED`] keys are expected
    /// (waited for, active or not): only those keys can advance a glob, and
    /// each is searched for by
    /// itself (`memmem`, out of a budget of bytes). Where none occurs again
    /// the scan is done; where the earliest next occurrence starts well
    /// ahead, the scan starts again there, at the root. So a run that none
    /// of them occurs in (a megabyte of a's, the globs waiting for a `b`)
    /// costs a vectorized search, not an automaton step per byte; the budget
    /// keeps the searches within a few passes whatever the keys.
    #[cold]
    fn skip(&self, s: &[u8], at: usize, scratch: &SweepScratch, search: &mut usize) -> ControlFlow<Stop> {
        let mut start = usize::MAX;
        let mut key = 0;
        while let Some(k) = scratch.expected_keys.next(key) {
            key = k + 1;
            let bytes = self.scanner.key(k as u32);
            // What it may still take ends after `at` (an active wait took
            // the ends up to there; an inactive one takes none so early).
            let from = (at + 1).saturating_sub(bytes.len());
            let to = s.len().min(from + *search);
            // A search costs what the key is long (to prepare) and what it
            // reads: up to the occurrence it finds.
            *search = search.saturating_sub(bytes.len());
            match memchr::memmem::find(&s[from..to], bytes) {
                Some(found) => {
                    *search = search.saturating_sub(found + bytes.len());
                    start = start.min(from + found);
                }
                None if to == s.len() => *search = search.saturating_sub(to - from),
                // Past the budget's window: it may start where it would
                // reach beyond the window.
                None => {
                    *search = search.saturating_sub(to - from);
                    start = start.min((to + 1).saturating_sub(bytes.len()).max(from));
                }
            }
        }
        match start {
            usize::MAX => ControlFlow::Break(Stop::Done),
            start if start >= at + MIN_SKIP => ControlFlow::Break(Stop::Skip(start)),
            _ => ControlFlow::Continue(()),
        }
    }

    /// Waiter `w`'s piece ends at `end`, the first end it may take: the
    /// glob's id when that was its last piece and the glob matches, else
    /// nothing (it fails, or waits for its next piece).
    #[inline]
    fn advance(&self, w: u32, end: usize, n: usize, scratch: &mut SweepScratch) -> Option<u32> {
        let waiter = &mut scratch.waiters[w as usize];
        if end > waiter.limit {
            // The leftmost occurrence ends too late: no other can leave room
            // for what follows.
            return None;
        }
        if waiter.piece == waiter.last {
            return Some(waiter.id);
        }
        waiter.piece += 1;
        let key = self.pieces[waiter.piece as usize].key;
        if let Some(at) = self.wait_from(waiter, end, n) {
            scratch.expect(key);
            scratch.pending.push(Reverse((at, w)));
        }
        None
    }
}

/// Why a scan stopped early.
enum Stop {
    /// Nothing waits any more, or nothing that waits can be found.
    Done,
    /// The caller's function broke.
    Asked,
    /// Nothing can happen before this place: the scan goes on from there.
    Skip(usize),
}

/// At most this many keys waited for, and the scan searches for each by
/// itself to skip ahead (`Sweep::skip`).
const FEW_EXPECTED: usize = 4;
/// Skips shorter than this are not worth a new start.
const MIN_SKIP: usize = 64;
/// The bytes a sweep may search key by key to skip ahead, per byte of the
/// string.
const SKIP_SEARCH_PER_BYTE: usize = 8;

impl HeavyPaths {
    fn build(scanner: &LiteralScanner, key_len: &[u32]) -> Self {
        let keys = key_len.len();
        let parent = |k: usize| scanner.suffix_key(k as u32).map(|p| p as usize);
        // A parent is shorter than its children: by length, parents come first.
        let mut by_len: Vec<u32> = (0..keys as u32).collect();
        by_len.sort_unstable_by_key(|&k| key_len[k as usize]);
        let mut size = vec![1u32; keys];
        for &k in by_len.iter().rev() {
            if let Some(p) = parent(k as usize) {
                size[p] += size[k as usize];
            }
        }
        let mut heavy = vec![NONE; keys];
        for k in 0..keys {
            if let Some(p) = parent(k) {
                if heavy[p] == NONE || size[k] > size[heavy[p] as usize] {
                    heavy[p] = k as u32;
                }
            }
        }
        let (mut path, mut depth) = (vec![0u32; keys], vec![0u32; keys]);
        let (mut path_len, mut above) = (Vec::new(), Vec::new());
        for &k in &by_len {
            let k = k as usize;
            match parent(k) {
                Some(p) if heavy[p] == k as u32 => {
                    (path[k], depth[k]) = (path[p], depth[p] + 1);
                    path_len[path[k] as usize] += 1;
                }
                up => {
                    path[k] = path_len.len() as u32;
                    path_len.push(1u32);
                    above.push(up.map_or(NONE, |p| p as u32));
                }
            }
        }
        let mut top_rank = Vec::with_capacity(path_len.len());
        let mut next = 0;
        for len in path_len {
            top_rank.push(next);
            next += len;
        }
        let rank: Vec<u32> = (0..keys).map(|k| top_rank[path[k] as usize] + depth[k]).collect();
        let mut key_at = vec![0; keys];
        for (k, &r) in rank.iter().enumerate() {
            key_at[r as usize] = k as u32;
        }
        HeavyPaths { path, rank, key_at, top_rank, above }
    }
}

/// A glob waiting for its piece number `piece` (in `Sweep::pieces`).
#[derive(Clone, Copy, Debug)]
struct Waiter {
    id: u32,
    piece: u32,
    /// The number of its last piece.
    last: u32,
    /// The latest end its piece may take.
    limit: usize,
    /// The next waiter for the same key, while waiting.
    next: u32,
}

/// A thread's buffers for sweeps, reused; between sweeps no key is marked.
#[derive(Default)]
pub struct SweepScratch {
    marks: RankSet,
    /// Per heavy path, how many of its keys are marked.
    on_path: Vec<u32>,
    /// Per key, its first waiter (a list through `Waiter::next`), or `NONE`.
    first: Vec<u32>,
    marked: usize,
    /// Per key, how many waiters wait for it, active or not; the keys with
    /// any, and how many they are.
    waiting_for: Vec<u32>,
    expected_keys: RankSet,
    expected: usize,
    /// Whether the expected keys changed since the scan last looked to skip
    /// ahead.
    changed: bool,
    waiters: Vec<Waiter>,
    /// Waiters not yet active, by the end at which they become so.
    pending: BinaryHeap<Reverse<(usize, u32)>>,
}

impl SweepScratch {
    fn prepare(&mut self, keys: usize, paths: usize) {
        if self.first.len() < keys {
            self.first.resize(keys, NONE);
        }
        if self.on_path.len() < paths {
            self.on_path.resize(paths, 0);
        }
        self.marks.ensure(keys);
        if self.waiting_for.len() < keys {
            self.waiting_for.resize(keys, 0);
        }
        self.expected_keys.ensure(keys);
    }

    /// A waiter now waits for `key`.
    #[inline]
    fn expect(&mut self, key: u32) {
        let count = &mut self.waiting_for[key as usize];
        if *count == 0 {
            self.expected_keys.insert(key as usize);
            self.expected += 1;
            self.changed = true;
        }
        *count += 1;
    }

    /// A waiter no longer waits for `key` (it took an end of it).
    #[inline]
    fn unexpect(&mut self, key: u32) {
        let count = &mut self.waiting_for[key as usize];
        *count -= 1;
        if *count == 0 {
            self.expected_keys.remove(key as usize);
            self.expected -= 1;
            self.changed = true;
        }
    }

    /// Waiter `w` waits for `key`: marks it if nothing did.
    #[inline]
    fn wait(&mut self, w: u32, key: u32, sweep: &Sweep) {
        let first = &mut self.first[key as usize];
        if *first == NONE {
            self.marks.insert(sweep.paths.rank[key as usize] as usize);
            self.on_path[sweep.paths.path[key as usize] as usize] += 1;
            self.marked += 1;
        }
        self.waiters[w as usize].next = std::mem::replace(first, w);
    }

    /// Unmarks `key`; returns its list of waiters.
    #[inline]
    fn unmark(&mut self, key: u32, sweep: &Sweep) -> u32 {
        self.marks.remove(sweep.paths.rank[key as usize] as usize);
        self.on_path[sweep.paths.path[key as usize] as usize] -= 1;
        self.marked -= 1;
        std::mem::replace(&mut self.first[key as usize], NONE)
    }

    /// Back to no marks and no waiters, in time proportional to the marks
    /// and the keys waited for.
    fn clear(&mut self, sweep: &Sweep) {
        while self.marked > 0 {
            let rank = self.marks.next(0).expect("a marked key");
            self.unmark(sweep.paths.key_at[rank], sweep);
        }
        while let Some(key) = self.expected_keys.next(0) {
            self.expected_keys.remove(key);
            self.waiting_for[key] = 0;
        }
        self.expected = 0;
        self.waiters.clear();
        self.pending.clear();
        self.changed = false;
    }
}

/// A set of numbers with "the smallest at or after `i`" in a few word
/// operations: a 64-ary tree of bit words, each bit of a level telling
/// whether a word of the level below holds a bit.
#[derive(Default)]
struct RankSet {
    levels: Vec<Vec<u64>>,
}

impl RankSet {
    /// Room for numbers below `size` (keeping what is in the set).
    fn ensure(&mut self, size: usize) {
        let mut words = size.div_ceil(64).max(1);
        for level in 0.. {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            if self.levels[level].len() < words {
                self.levels[level].resize(words, 0);
            }
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
    }

    #[inline]
    fn insert(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            let was = *word;
            *word |= 1 << (i % 64);
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    #[inline]
    fn remove(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            *word &= !(1 << (i % 64));
            if *word != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// The smallest number in the set at or after `i`.
    #[inline]
    fn next(&self, mut i: usize) -> Option<usize> {
        let mut level = 0;
        loop {
            let word = i / 64;
            let bits = self.levels[level].get(word).map_or(0, |&w| w & (u64::MAX << (i % 64)));
            if bits != 0 {
                let mut at = word * 64 + bits.trailing_zeros() as usize;
                while level > 0 {
                    level -= 1;
                    at = at * 64 + self.levels[level][at].trailing_zeros() as usize;
                }
                return Some(at);
            }
            level += 1;
            if level == self.levels.len() {
                return None;
            }
            i = word + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glob::Fit;

    #[test]
    fn rank_sets_agree_with_a_sorted_set() {
        let mut next = crate::test_rng::below(0x6A09_E667_F3BC_C908);
        for size in [1, 63, 64, 65, 4_096, 4_097, 300_000] {
            let mut set = RankSet::default();
            set.ensure(size);
            let mut want = std::collections::BTreeSet::new();
            for _ in 0..2_000 {
                let i = next(size as u64) as usize;
                if next(3) == 0 {
                    set.remove(i);
                    want.remove(&i);
                } else {
                    set.insert(i);
                    want.insert(i);
                }
                let from = next(size as u64 + 1) as usize;
                assert_eq!(set.next(from), want.range(from..).next().copied(), "size {size} from {from}");
            }
        }
    }

    /// The ids of `globs` that the sweep matches against `s`: every glob
    /// with a star waits in a sweep of whole globs, and those whose ends fit
    /// in a sweep of middle pieces; the two agree.
    fn swept(globs: &[&str], s: &str) -> Vec<u32> {
        let mut list = GlobList::default();
        for g in globs {
            list.push(g.as_bytes());
        }
        let [whole, middles] = [true, false].map(|whole| {
            let waiting: Vec<(u32, u32)> = (0..globs.len() as u32)
                .filter(|&g| list.parts(g).is_some())
                .filter(|&g| whole || ends_fit(&list, g, s))
                .map(|g| (g, g))
                .collect();
            let mut got = Vec::new();
            let mut scratch = SweepScratch::default();
            let _ = Sweep::build(&list, whole).run(s.as_bytes(), &waiting, &mut scratch, &mut |id| {
                got.push(id);
                ControlFlow::Continue(())
            });
            assert_eq!((scratch.marked, scratch.expected, scratch.waiters.len(), scratch.pending.len()), (0, 0, 0, 0));
            got.sort_unstable();
            got
        });
        assert_eq!(middles, whole, "{globs:?} on {s:?}");
        whole
    }

    /// Whether glob `g`'s prefix and suffix fit `s`.
    fn ends_fit(list: &GlobList, g: u32, s: &str) -> bool {
        list.fit(g, s.as_bytes()) != Fit::No
    }

    /// The globs with a star that match `s`, each on its own.
    fn naive(globs: &[&str], s: &str) -> Vec<u32> {
        let mut list = GlobList::default();
        let slots: Vec<u32> = globs.iter().map(|g| list.push(g.as_bytes())).collect();
        slots.into_iter().filter(|&g| list.parts(g).is_some() && list.is_match(g, s.as_bytes())).collect()
    }

    macro_rules! sweeps {
        ($($name:ident: $globs:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let want: &[u32] = &$want;
                assert_eq!(swept(&$globs, $input), want.to_vec());
                assert_eq!(swept(&$globs, $input), naive(&$globs, $input));
            }
        )*};
    }

    sweeps! {
        one_piece: ["*b*", "*c*"], "abc" => [0, 1];
        in_order: ["*a*b*", "*b*a*"], "xaxbx" => [0];
        apart: ["*ab*ba*"], "aba" => [];
        apart_hit: ["*ab*ba*"], "abba" => [0];
        after_the_prefix: ["ab*ba*"], "abax" => [];
        after_the_prefix_hit: ["ab*ba*"], "abbax" => [0];
        before_the_suffix: ["*b*ba"], "xba" => [];
        before_the_suffix_hit: ["*b*ba"], "bba" => [0];
        repeated_piece: ["*a*a*a*"], "aa" => [];
        repeated_piece_hit: ["*a*a*a*"], "aaa" => [0];
        nested_pieces: ["*a*aa*aaa*", "*aaa*aa*a*", "*aa*aa*"], "aaaaaa" => [0, 1, 2];
        nested_pieces_short: ["*a*aa*aaa*", "*aaa*aa*a*", "*aa*aa*"], "aaaaa" => [2];
        shared_pieces: ["x*ab*c*", "*ab*c*y", "*c*ab*"], "xabcy" => [0, 1];
        greedy_is_leftmost: ["*ab*abc*"], "abab_abc" => [0];
        prefix_and_suffix_apart: ["ab*ba"], "aba" => [];
        prefix_and_suffix_apart_hit: ["ab*ba"], "abba" => [0];
        prefix_only: ["ab*", "b*", "abc*"], "abc" => [0, 2];
        suffix_only: ["*bc", "*b", "*abc", "*xabc"], "abc" => [0, 2];
        suffix_occurs_before_the_end: ["*ab", "a*b*ab"], "abxab" => [0, 1];
        suffix_only_before_the_end: ["*ab", "*a*ab"], "abx" => [];
        stars_only: ["*", "**"], "" => [0, 1];
        empty_string: ["*a*", "a*", "*a"], "" => [];
        literals_never_wait: ["abc", "*c"], "abc" => [1];
        pieces_shared_across_places: ["a*a*a", "*a*a*", "a*", "*a"], "aa" => [1, 2, 3];
        pieces_shared_across_places_hit: ["a*a*a", "*a*a*", "a*", "*a"], "aaa" => [0, 1, 2, 3];
    }

    /// Random globs and strings over a tiny alphabet, so that pieces are
    /// suffixes of each other and occur everywhere: the sweep matches as
    /// each glob alone does.
    #[test]
    fn random_sets_agree_with_each_glob_alone() {
        let mut next = crate::test_rng::below(0xBB67_AE85_84CA_A73B);
        let alphabet = ['a', 'b', '*'];
        for _ in 0..3_000 {
            let globs: Vec<String> = (0..1 + next(8))
                .map(|_| (0..next(10)).map(|_| alphabet[next(3) as usize]).collect())
                .collect();
            let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
            for _ in 0..6 {
                let s: String = (0..next(16)).map(|_| alphabet[next(2) as usize]).collect();
                assert_eq!(swept(&refs, &s), naive(&refs, &s), "{refs:?} on {s:?}");
            }
        }
    }

    /// Strings of long runs with a few other bytes between, so that a scan
    /// skips ahead (the marked pieces searched by themselves) and starts
    /// again: the answers are each glob's own.
    #[test]
    fn random_runs_agree_with_each_glob_alone() {
        let mut next = crate::test_rng::below(0x3C6E_F372_FE94_F82B);
        let alphabet = ['a', 'b', 'c', '*'];
        for _ in 0..1_000 {
            let globs: Vec<String> = (0..1 + next(6))
                .map(|_| (0..next(9)).map(|_| alphabet[[0, 0, 1, 2, 3, 3][next(6) as usize]]).collect())
                .collect();
            let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
            for _ in 0..4 {
                let s: String = (0..next(5))
                    .map(|_| "a".repeat(next(400) as usize) + ["b", "c", "bc", "cb"][next(4) as usize])
                    .collect();
                assert_eq!(swept(&refs, &s), naive(&refs, &s), "{refs:?} on {s:?}");
            }
        }
    }

    #[test]
    fn stops_when_asked_and_leaves_nothing_marked() {
        let mut list = GlobList::default();
        for g in ["*a*b*", "*a*c*", "*b*", "*z*z*"] {
            list.push(g.as_bytes());
        }
        let sweep = Sweep::build(&list, true);
        let mut scratch = SweepScratch::default();
        let waiting = [(0, 0), (1, 1), (2, 2), (3, 3)];
        let flow = sweep.run(b"abc", &waiting, &mut scratch, &mut |_| ControlFlow::Break(()));
        assert!(flow.is_break());
        assert_eq!((scratch.marked, scratch.expected, scratch.waiters.len(), scratch.pending.len()), (0, 0, 0, 0));
        let mut got = Vec::new();
        let _ = sweep.run(b"zabcz", &waiting, &mut scratch, &mut |id| {
            got.push(id);
            ControlFlow::Continue(())
        });
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    #[test]
    fn a_break_before_the_scan_leaves_nothing_waiting() {
        let mut list = GlobList::default();
        for g in ["*a*", "**"] {
            list.push(g.as_bytes());
        }
        let sweep = Sweep::build(&list, true);
        let mut scratch = SweepScratch::default();
        assert!(sweep.run(b"a", &[(0, 0), (1, 1)], &mut scratch, &mut |_| ControlFlow::Break(())).is_break());
        assert_eq!((scratch.marked, scratch.expected, scratch.waiters.len(), scratch.pending.len()), (0, 0, 0, 0));
    }

    #[test]
    fn a_thousand_nested_pieces_in_a_megabyte() {
        // Pieces a, aa, …: a thousand end at every byte. Each glob waits for
        // its run of a's, then for a `b` that only the end holds.
        let globs: Vec<String> = (1..=1_000).map(|i| format!("*{}*b*", "a".repeat(i))).collect();
        let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
        let s = "a".repeat(1_000_000) + "b";
        assert_eq!(swept(&refs, &s), (0..1_000).collect::<Vec<u32>>());
        assert_eq!(swept(&refs, &s[..s.len() - 1]), Vec::<u32>::new());
    }
}
