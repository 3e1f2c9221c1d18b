//! What a batch learned of a tool name, kept for the next tool of that name.
//!
//! Most of a decision depends on the name alone: the globs that apply to
//! every server (bare tool patterns, `*/name`), which on a long list are
//! most of the patterns and most of the matcher's work. Catalogs of many
//! servers repeat names: instances of one kind of server (a GitHub server
//! per organisation), and servers of different kinds that share the
//! common verbs (`search`, `read_file`, `list_issues`). A [`NameMemo`] keeps,
//! for the names a batch met lately, those answers, so that a name met again
//! costs one hash and one comparison instead of the walks.
//!
//! It is a cache, not a map: a table of sets of two slots, each set one
//! cache line, whose slots hold a name of at most [`MAX_NAME`] bytes, its
//! full bytes compared on every hit (so an answer is never another name's).
//! A set keeps the name met last in its first slot; a name met again in the
//! second moves to the first, and a new name pushes the second out. (Two
//! names hashing to one set, both met often, both stay: a table of the same
//! size with one slot a hash lost about three times as many of a large
//! catalog's repeats, and the second slot costs no further load.) It starts
//! small and grows with the batch while its names push each other out, so
//! a short batch pays a few kilobytes, and it watches its hits: a batch whose names rarely repeat turns it off
//! for a stretch, and tries again after, so a catalog of distinct names
//! pays about one probe in sixteen. A batch's memos are kept by its
//! filter for the next batch (`filter::KeptMemos`).

use std::sync::atomic::{AtomicU8, Ordering};

/// How many tools ahead of the one being decided a batch fetches a name's
/// slot ([`NameMemo::prefetch`]).
pub const AHEAD: usize = 8;

/// Names longer than this are not kept (they are rare, and a slot is 32 bytes).
pub const MAX_NAME: usize = 24;

/// Slots at the start (2 KB: a batch of a few tools pays no more; a
/// batch's memo, tried only once the batch passed [`START`] names, starts
/// with two slots for each of them: 256 KB), and at most (8 MB: a catalog
/// of a million tools over thousands of servers has some tens of thousands
/// to some hundreds of thousands of names, the
/// benchmark's 134,000; a memo kept for the filter's next batch answers all
/// of them only if it holds them). Always a whole number of sets.
const FIRST_SLOTS: usize = 1 << 6;
const MAX_SLOTS: usize = 1 << 18;

/// A window of probes decides whether the memo pays: four probes a slot,
/// and at most this many.
const WINDOW: u32 = 1 << 14;
/// A window in which more than one probe in this many pushed a name out
/// grows the table: a miss costs the walks (some hundred nanoseconds), a
/// probe a few, so a table that loses even a few names in a hundred pays
/// more than a larger one.
const CROWDED: u32 = 32;
/// A window with fewer hits than one probe in this many turns it off...
const POOR: u32 = 16;
/// ...for this many names, after which it is tried for another window.
const REST: u32 = 15 * WINDOW;
/// Probes between the reviews of a window: a table is grown as soon as its
/// pushes are more than its whole window allows, not at the window's end
/// (which in a table of a few thousand slots is some batches of ten
/// thousand tools away, each paying the misses of a table too small).
const CHECK: u32 = 1 << 10;
/// Slots a table grows to per name its window missed: at two slots a set,
/// the names then average a quarter of one a set, and three in one set are rare.
const GROWTH: usize = 8;

/// One name's answers: bits of [`Known`].
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
struct Slot {
    hash: u32,
    /// The name's length plus one; 0 for an empty slot.
    len: u8,
    known: u8,
    _pad: [u8; 2],
    /// The name's [`words`].
    name: [u64; 3],
}

/// The answers a slot can hold, each as a pair of bits: known, and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Whether a glob of the exclude side's every-server group matches the
    /// name's loose fold.
    Exclude = 0,
    /// Whether a glob of the include side's every-server group matches.
    Include = 1,
}

impl Answer {
    #[inline]
    fn known_bit(self) -> u8 {
        1 << (2 * self as u8)
    }

    #[inline]
    fn value_bit(self) -> u8 {
        2 << (2 * self as u8)
    }

    /// The bits that record `value` as this answer.
    #[inline]
    fn bits(self, value: bool) -> u8 {
        self.known_bit() | if value { self.value_bit() } else { 0 }
    }
}

/// The slots of one hash, in one cache line: the first holds the name met
/// last of those kept.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Set([Slot; 2]);

/// A probe's place: the set whose first slot holds the name (found, or
/// claimed for it).
#[derive(Clone, Copy, Debug)]
pub struct Place(u32);

/// Names a batch decides before it first tries the memo: a short batch (a
/// listing of a few servers, whose names seldom repeat) pays nothing for it.
pub const START: u32 = 1 << 12;

/// A per-thread cache of name answers (see the module). `default()` is
/// tried from the first name, [`for_batch`](Self::for_batch) after [`START`].
#[derive(Debug, Default)]
pub struct NameMemo {
    sets: Vec<Set>,
    probes: u32,
    hits: u32,
    /// Names a miss pushed out of the window's sets (a set already full).
    pushed: u32,
    /// Names still to pass before the memo is tried again.
    resting: u32,
    /// The probe of the window at which the table is next reviewed.
    review_at: u32,
    /// Made for a batch ([`for_batch`](Self::for_batch)): its first table
    /// is made when the batch is long already.
    batch: bool,
}

/// The name as three words that, with its length, say every byte of it:
/// read in place by loads that may overlap (no copy), the same loads for
/// every name of one length. (Words at 0, the middle and the end cover
/// up to 24 bytes; a short name is read in two or three pieces.)
#[inline]
fn words(name: &[u8]) -> [u64; 3] {
    let n = name.len();
    let at8 = |i: usize| u64::from_le_bytes(name[i..i + 8].try_into().expect("8 bytes"));
    let at4 = |i: usize| u64::from(u32::from_le_bytes(name[i..i + 4].try_into().expect("4 bytes")));
    match n {
        8.. => [at8(0), at8((n - 8) / 2), at8(n - 8)],
        4..=7 => [at4(0) | at4(n - 4) << 32, 0, 0],
        1..=3 => [u64::from(name[0]) | u64::from(name[n / 2]) << 8 | u64::from(name[n - 1]) << 16, 0, 0],
        0 => [0; 3],
    }
}

/// The hash of a name's words and length: each word folded in by a
/// multiplication whose high half is folded back onto its low half, so
/// that every bit of every word reaches the low bits (the set's place) and
/// the high ones (the slot's tag). A multiplication alone carries a bit
/// only upwards: with it, names that differ in their last bytes alone
/// (`tool_1`, `tool_2`, ...) fell on a few sets (3,000 such names on 1,194
/// of 131,072).
#[inline]
fn hash_of(w: &[u64; 3], len: usize) -> u64 {
    const A: u64 = 0x9E37_79B9_7F4A_7C15;
    const B: u64 = 0xD6E8_FEB8_6659_FD93;
    let fold = |a: u64| {
        let product = u128::from(a) * u128::from(B);
        (product as u64) ^ ((product >> 64) as u64)
    };
    let mut h = len as u64;
    for &x in w {
        h = fold(h ^ x ^ A);
    }
    h
}

impl NameMemo {
    /// A memo for a batch: tried once the batch has decided [`START`] names.
    pub fn for_batch() -> Self {
        NameMemo { resting: START, batch: true, ..NameMemo::default() }
    }

    /// The slots of a first table.
    fn first_slots(&self) -> usize {
        if self.batch { 2 * START as usize } else { FIRST_SLOTS }
    }

    /// The place of `name` and what is known of it (a fresh place knows
    /// nothing); `None` when the name is too long or the memo is resting.
    #[inline]
    pub fn probe(&mut self, name: &[u8]) -> Option<(Place, u8)> {
        self.probe_hashed(name, None)
    }

    /// [`probe`](Self::probe) with the name's hash, if [`prefetch`](Self::prefetch)
    /// gave it for this name (None: found here).
    #[inline]
    pub fn probe_hashed(&mut self, name: &[u8], hashed: Option<u64>) -> Option<(Place, u8)> {
        if name.len() > MAX_NAME {
            return None;
        }
        if self.resting > 0 {
            self.resting -= 1;
            return None;
        }
        if self.sets.is_empty() {
            self.sets = vec![Set::default(); self.first_slots() / 2];
        }
        // A window ended is reviewed before the name's place is found, never
        // after: the place returned is where `record` writes the name's
        // answers, and a table grown since would hold another name there.
        if self.probes >= self.review_at {
            self.review();
        }
        let w = words(name);
        let h = hashed.unwrap_or_else(|| hash_of(&w, name.len()));
        let at = (h as usize) & (self.sets.len() - 1);
        let Set([first, second]) = &mut self.sets[at];
        let hash = (h >> 32) as u32;
        let len = name.len() as u8 + 1;
        // The words compared one by one, as scalars: a comparison of the
        // arrays as one vector reads them back from where they were just
        // stored, in two stores' parts, which the processor cannot forward
        // (a stall of some ten cycles on every probe).
        let same = |a: &[u64; 3]| (a[0] ^ w[0]) | (a[1] ^ w[1]) | (a[2] ^ w[2]) == 0;
        let holds = |slot: &Slot| slot.hash == hash && slot.len == len && same(&slot.name);
        self.probes += 1;
        let known = if holds(first) {
            self.hits += 1;
            first.known
        } else if holds(second) {
            self.hits += 1;
            std::mem::swap(first, second);
            first.known
        } else {
            self.pushed += u32::from(second.len != 0);
            *second = *first;
            *first = Slot { hash, len, known: 0, _pad: [0; 2], name: w };
            0
        };
        Some((Place(at as u32), known))
    }

    /// Asks the processor for the slot of `name`, which a probe soon will
    /// read: a table of some thousands of slots is not in the nearest
    /// caches, and a batch knows its next names a few tools ahead.
    #[inline]
    pub fn prefetch(&self, name: &[u8]) -> Option<u64> {
        if name.len() > MAX_NAME || self.resting > 0 || self.sets.is_empty() {
            return None;
        }
        let h = hash_of(&words(name), name.len());
        prefetch(std::ptr::from_ref(&self.sets[(h as usize) & (self.sets.len() - 1)]).cast());
        Some(h)
    }

    /// Every [`CHECK`] probes of a window, and at its end: a table whose
    /// misses pushed out names in more than one probe in [`CROWDED`] grows
    /// while it may (the names are more than it holds), at once, and a
    /// window ended that still hits poorly at its largest rests. A miss into
    /// a set with room does not count: a name met for the first time misses
    /// at any size, and a catalog of a few thousand names met once a batch
    /// would otherwise grow its table to the largest (and drop what it knew
    /// at each step) in its first batches.
    #[cold]
    fn review(&mut self) {
        let window = self.window();
        // Crowded once its pushes are more than the whole window allows,
        // whether or not the window has ended.
        let crowded = self.pushed > window / CROWDED;
        if crowded && self.slots() < MAX_SLOTS {
            self.grow((self.probes - self.hits) as usize);
        } else if self.probes >= window {
            if self.hits < window / POOR {
                self.resting = REST;
            }
        } else {
            self.review_at = window.min(self.probes + CHECK);
            return;
        }
        self.probes = 0;
        self.hits = 0;
        self.pushed = 0;
        self.review_at = self.window().min(CHECK);
    }

    /// A larger table, with every name kept and its answers: room for
    /// [`GROWTH`] times the names of `misses` (the window's misses so far,
    /// at most the names it met that the table did not hold), and at least
    /// four times the slots, so that a catalog of some thousand names gets
    /// its size in one or two steps rather than one a window. A set's names
    /// go to the one set of the larger table whose place has the same low
    /// bits, in the same order (so none is pushed out).
    fn grow(&mut self, misses: usize) {
        // At most the largest, even where four times the slots would pass it.
        let slots = (GROWTH * misses).next_power_of_two().max(4 * self.slots()).min(MAX_SLOTS);
        let larger = vec![Set::default(); slots / 2];
        let old = std::mem::replace(&mut self.sets, larger);
        let mask = self.sets.len() - 1;
        for Set([first, second]) in old {
            for slot in [second, first] {
                if slot.len == 0 {
                    continue;
                }
                let at = hash_of(&slot.name, usize::from(slot.len) - 1) as usize & mask;
                let Set([to_first, to_second]) = &mut self.sets[at];
                *to_second = *to_first;
                *to_first = slot;
            }
        }
    }

    /// How many probes the current table's window has.
    #[inline]
    fn window(&self) -> u32 {
        (4 * self.slots() as u32).min(WINDOW)
    }

    /// How many slots the table has (two a set).
    #[inline]
    pub fn slots(&self) -> usize {
        2 * self.sets.len()
    }

    /// Records `answer` for the name at `place`.
    #[inline]
    pub fn record(&mut self, place: Place, answer: Answer, value: bool) {
        self.sets[place.0 as usize].0[0].known |= answer.bits(value);
    }

    /// The answer kept at `place` (`known`: its bits from
    /// [`probe`](Self::probe)), or else `find`'s, which is kept.
    #[inline]
    pub fn answer(&mut self, place: Place, known: u8, answer: Answer, find: impl FnOnce() -> bool) -> bool {
        match Self::read(known, answer) {
            Some(hit) => hit,
            None => {
                let hit = find();
                self.record(place, answer, hit);
                hit
            }
        }
    }

    /// `answer` from the bits of [`probe`](Self::probe), if known.
    #[inline]
    pub fn read(known: u8, answer: Answer) -> Option<bool> {
        (known & answer.known_bit() != 0).then_some(known & answer.value_bit() != 0)
    }
}

/// Where a batch keeps the answers of the name it is deciding: in its memo,
/// or in a byte of the caller's, whose bits are a slot's `known` bits. A
/// column that names its values by index (a dictionary-encoded one,
/// `crate::arrow`) gives each value such a byte: the same index is the same
/// name, so the answers are kept for every name, of any length, without a
/// hash or a comparison, and never dropped for another name.
pub enum Keep<'a> {
    /// The memo, and the name's hash if known.
    Memo(&'a mut NameMemo, Option<u64>),
    Byte(&'a mut u8),
}

/// Where one name's answers are kept, found by [`Keep::find`].
pub enum Kept<'a> {
    /// A memo's slot: its place, and its `known` bits as the probe found them.
    Slot(&'a mut NameMemo, Place, u8),
    Byte(&'a mut u8),
}

impl<'a> Keep<'a> {
    /// The place of `name`'s answers; `None` where the memo does not keep
    /// them (see [`NameMemo::probe`]).
    #[inline]
    pub fn find(self, name: &[u8]) -> Option<Kept<'a>> {
        match self {
            Keep::Memo(memo, hashed) => memo.probe_hashed(name, hashed).map(|(place, known)| Kept::Slot(memo, place, known)),
            Keep::Byte(known) => Some(Kept::Byte(known)),
        }
    }
}

impl Kept<'_> {
    /// The answer kept, or else `find`'s, which is kept.
    #[inline]
    pub fn answer(&mut self, answer: Answer, find: impl FnOnce() -> bool) -> bool {
        match self {
            Kept::Slot(memo, place, known) => memo.answer(*place, *known, answer, find),
            Kept::Byte(known) => NameMemo::read(**known, answer).unwrap_or_else(|| {
                let hit = find();
                **known |= answer.bits(hit);
                hit
            }),
        }
    }
}

/// The answers of a list of names (a dictionary's values), a byte a name
/// whose bits are a slot's `known` bits, shared by the threads of a batch
/// and kept by the filter for its next batch over the same list
/// (`filter::KeptLists`). A name dictionary's answers are learned once a
/// batch, not once a thread, and once in all for a list filtered again: a
/// list is found again by its contents, every byte and every end compared
/// (never by where it lies, which another list may take after it is freed),
/// so its answers are never another list's.
pub struct ListAnswers {
    /// The names side by side, and where each ends: what the list is. Empty
    /// for a list whose answers are not kept past its batch.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    answers: Vec<AtomicU8>,
}

impl ListAnswers {
    /// Answers not known yet for a list of `len` names, not kept past
    /// the batch (a list whose names are not side by side: views).
    pub fn unkept(len: usize) -> Self {
        ListAnswers { bytes: Vec::new(), ends: Vec::new(), answers: (0..len).map(|_| AtomicU8::new(0)).collect() }
    }

    /// Answers not known yet for the names `bytes`, the first ending at
    /// the first of `ends` (an offset in `bytes`) and each next one at the
    /// next, kept with them.
    pub fn new(bytes: &[u8], ends: Vec<usize>) -> Self {
        let answers = (0..ends.len()).map(|_| AtomicU8::new(0)).collect();
        ListAnswers { bytes: bytes.to_vec(), ends, answers }
    }

    /// Whether these are the answers of the names `bytes` and `ends` (as
    /// [`new`](Self::new) takes them).
    pub fn is_of(&self, bytes: &[u8], ends: &[usize]) -> bool {
        self.keeps() && self.ends == ends && self.bytes == bytes
    }

    /// Whether the answers may be kept past their batch.
    pub fn keeps(&self) -> bool {
        self.bytes.len() + self.ends.len() > 0
    }

    /// Bytes taken, about.
    pub fn size(&self) -> usize {
        Self::size_of(&self.bytes, &self.ends)
    }

    /// Bytes the answers of a list would take with it (see [`new`](Self::new)).
    pub fn size_of(bytes: &[u8], ends: &[usize]) -> usize {
        bytes.len() + ends.len() * (std::mem::size_of::<usize>() + 1)
    }

    /// Name `i`'s answers' byte.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&AtomicU8> {
        self.answers.get(i)
    }
}

/// What `decide` answers with the answers of one name kept in the shared
/// byte `kept`: read once before, written back if `decide` learned more. A
/// byte another thread wrote meanwhile may be overwritten (its answers are
/// the same, of the same name, as any thread finds them): what is lost is
/// learned again, never changed.
#[inline]
pub fn with_shared<T>(kept: &AtomicU8, decide: impl FnOnce(&mut u8) -> T) -> T {
    let before = kept.load(Ordering::Relaxed);
    let mut known = before;
    let answer = decide(&mut known);
    if known != before {
        kept.store(known, Ordering::Relaxed);
    }
    answer
}

/// A hint to load the cache line at `ptr`.
#[inline(always)]
fn prefetch(ptr: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and reads nothing the
    // program sees; `ptr` points into a live slot table besides.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_again_with_what_was_recorded() {
        let mut memo = NameMemo::default();
        let (place, known) = memo.probe(b"create_issue").unwrap();
        assert_eq!(NameMemo::read(known, Answer::Exclude), None);
        memo.record(place, Answer::Exclude, true);
        let (place, known) = memo.probe(b"create_issue").unwrap();
        assert_eq!(NameMemo::read(known, Answer::Exclude), Some(true));
        assert_eq!(NameMemo::read(known, Answer::Include), None);
        memo.record(place, Answer::Include, false);
        let (_, known) = memo.probe(b"create_issue").unwrap();
        assert_eq!(NameMemo::read(known, Answer::Include), Some(false));
        assert_eq!(NameMemo::read(known, Answer::Exclude), Some(true));
    }

    /// The words of a name say every byte of it: a name changed at any one
    /// place, of any length kept, has other words.
    #[test]
    fn words_cover_every_byte() {
        for n in 0..=MAX_NAME {
            let name: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            for at in 0..n {
                let mut other = name.clone();
                other[at] ^= 0x20;
                assert_ne!(words(&name), words(&other), "length {n}, byte {at}");
            }
        }
    }

    #[test]
    fn names_differing_anywhere_never_share_answers() {
        // Prefixes of one another, a NUL at the end, the longest kept length:
        // every probe of a fresh name knows nothing, whatever shares its slot.
        let mut memo = NameMemo::default();
        let base = b"abcdefghijklmnopqrstuvwx";
        let mut names: Vec<Vec<u8>> = (0..=MAX_NAME).map(|n| base[..n].to_vec()).collect();
        names.push(b"abc\0".to_vec());
        names.push(b"abd".to_vec());
        for (i, name) in names.iter().enumerate() {
            let (place, known) = memo.probe(name).unwrap();
            assert_eq!(known, 0, "{i}");
            memo.record(place, Answer::Exclude, i % 2 == 0);
        }
        // Many more names than slots: whatever a probe finds is its own.
        for round in 0..2 {
            for i in 0..5_000u32 {
                let name = format!("n{}", i * 7919 % 100_003);
                let (place, known) = memo.probe(name.as_bytes()).unwrap();
                if let Some(v) = NameMemo::read(known, Answer::Include) {
                    assert_eq!(v, name.len() % 2 == 0, "{name} in round {round}");
                }
                memo.record(place, Answer::Include, name.len() % 2 == 0);
            }
        }
        assert!(memo.probe(&[b'a'; MAX_NAME + 1]).is_none());
    }

    #[test]
    fn distinct_names_rest_the_memo_and_it_is_tried_again() {
        let mut memo = NameMemo::default();
        // Windows that grow the table to its largest, one that finds it
        // still poor, the rest, and a probe after.
        let mut i = 0u32;
        while memo.probe(format!("t{i}").as_bytes()).is_some() {
            i += 1;
            assert!(i < 64 * WINDOW, "the memo never rested");
        }
        assert_eq!(memo.slots(), MAX_SLOTS, "it rests only at its largest");
        let mut skipped = 1;
        while memo.probe(format!("t{i}").as_bytes()).is_none() {
            skipped += 1;
            i += 1;
        }
        assert_eq!(skipped, REST);
        assert!(memo.probe(b"again").is_some());
    }

    /// Two names of one set both keep their answers; a third pushes out
    /// the one met least lately, never another name's answers.
    #[test]
    fn a_set_keeps_the_two_names_met_last() {
        let mut memo = NameMemo::default();
        let _ = memo.probe(b"warm");
        let set_of = |name: &[u8], sets: usize| (hash_of(&words(name), name.len()) as usize) & (sets - 1);
        let sets = memo.sets.len();
        let mut same: Vec<String> = Vec::new();
        for i in 0.. {
            let name = format!("tool_{i}");
            if set_of(name.as_bytes(), sets) == set_of(b"tool_0", sets) {
                same.push(name);
                if same.len() == 3 {
                    break;
                }
            }
        }
        let [a, b, c] = [same[0].as_bytes(), same[1].as_bytes(), same[2].as_bytes()];
        for (name, value) in [(a, true), (b, false)] {
            let (place, known) = memo.probe(name).unwrap();
            assert_eq!(known, 0);
            memo.record(place, Answer::Include, value);
        }
        // Both kept, whichever is asked first; a is then the one met last.
        assert_eq!(NameMemo::read(memo.probe(b).unwrap().1, Answer::Include), Some(false));
        assert_eq!(NameMemo::read(memo.probe(a).unwrap().1, Answer::Include), Some(true));
        // c pushes out b (met less lately than a), and learns nothing of either.
        let (place, known) = memo.probe(c).unwrap();
        assert_eq!(known, 0);
        memo.record(place, Answer::Exclude, true);
        assert_eq!(NameMemo::read(memo.probe(a).unwrap().1, Answer::Include), Some(true));
        assert_eq!(memo.probe(b).unwrap().1, 0);
        assert_eq!(memo.sets.len(), sets, "the table did not grow meanwhile");
    }

    #[test]
    fn a_table_grows_when_repeated_names_miss() {
        let mut memo = NameMemo::default();
        for i in 0..(2 * WINDOW) {
            let _ = memo.probe(format!("t{}", i % 4_000).as_bytes());
        }
        assert!(memo.slots() > FIRST_SLOTS);
        assert!(memo.slots() <= MAX_SLOTS);
    }

    /// A table grows while its names push each other out, not because
    /// names are met for the first time: 3,000 names met in turn leave it
    /// far below the largest (where dropping what it knew at each step, and
    /// counting those misses, took it to the largest), and nearly every name
    /// answered.
    #[test]
    fn a_table_grows_only_past_its_room() {
        let mut memo = NameMemo::default();
        let names: Vec<String> = (0..3_000).map(|i| format!("name_{i}")).collect();
        for _ in 0..40 {
            for name in &names {
                let (place, known) = memo.probe(name.as_bytes()).unwrap();
                if known == 0 {
                    memo.record(place, Answer::Include, true);
                }
            }
        }
        assert!(memo.slots() <= 1 << 16, "{} slots for 3,000 names", memo.slots());
        let known = names.iter().filter(|n| memo.probe(n.as_bytes()).unwrap().1 != 0).count();
        // (A set may hold three names, which push each other out.)
        assert!(known > 2_950, "{known} of 3,000 names known");
        // A window whose misses (one probe in seven) are names met for the
        // first time, into a table with room: it keeps its size.
        let mut memo = NameMemo::default();
        let mut i = 0;
        while memo.slots() < 1 << 14 {
            let _ = memo.probe(format!("fill_{i}").as_bytes());
            i += 1;
        }
        let window = memo.window();
        for k in 0..window {
            let name = if k % 7 == 0 { format!("new_{k}") } else { "again".to_string() };
            let _ = memo.probe(name.as_bytes());
        }
        assert_eq!(memo.slots(), 1 << 14);
    }

    /// A batch's memo rests for its first [`START`] names, then starts
    /// with room for as many (a batch that long has some thousand names,
    /// which a table of 64 slots took some windows to grow to).
    #[test]
    fn a_batchs_memo_starts_with_room_for_the_names_it_passed() {
        let mut memo = NameMemo::for_batch();
        for i in 0..START {
            assert!(memo.probe(format!("t{i}").as_bytes()).is_none());
        }
        assert!(memo.probe(b"t0").is_some());
        assert_eq!(memo.slots(), 2 * START as usize);
        let mut memo = NameMemo::default();
        assert!(memo.probe(b"t0").is_some());
        assert_eq!(memo.slots(), FIRST_SLOTS);
    }

    /// A table of half the largest grows to the largest, not past it
    /// (nor panics: four times its slots are more than the largest).
    #[test]
    fn a_table_near_the_largest_grows_to_it() {
        for misses in [0, 10, MAX_SLOTS] {
            let mut memo = NameMemo { sets: vec![Set::default(); MAX_SLOTS / 4], ..NameMemo::default() };
            let (place, _) = memo.probe(b"kept").unwrap();
            memo.record(place, Answer::Include, true);
            memo.grow(misses);
            assert_eq!(memo.slots(), MAX_SLOTS);
            assert_eq!(NameMemo::read(memo.probe(b"kept").unwrap().1, Answer::Include), Some(true));
        }
    }

    /// A catalog of some thousand names met in turn is known from its third
    /// pass on, most of it in its second: its table grows to its size in the
    /// first two (one step a window of four probes a slot took three passes
    /// more, each missing the names the table was still too small for).
    #[test]
    fn a_crowded_table_grows_to_its_names_at_once() {
        let mut memo = NameMemo::default();
        let names: Vec<String> = (0..6_000).map(|i| format!("tool_{i}")).collect();
        for pass in 0..3 {
            let mut known = 0;
            for name in &names {
                let (place, bits) = memo.probe(name.as_bytes()).unwrap();
                known += usize::from(bits != 0);
                memo.record(place, Answer::Include, true);
            }
            let least = [0, 3_000, 5_700][pass];
            assert!(known >= least, "pass {pass}: {known} of 6,000 names known, {} slots", memo.slots());
        }
        assert!(memo.slots() <= 1 << 16, "{} slots for 6,000 names", memo.slots());
    }

    /// Names that differ in their last bytes alone fall on as many sets.
    #[test]
    fn names_that_differ_at_the_end_spread() {
        for (prefix, at) in [("name_", 0), ("a_tool_name_of_twenty_", 0), ("", 7)] {
            let sets: std::collections::HashSet<usize> = (0..3_000)
                .map(|i| {
                    let name = format!("{prefix}{i:0at$}");
                    hash_of(&words(name.as_bytes()), name.len()) as usize & ((1 << 17) - 1)
                })
                .collect();
            assert!(sets.len() > 2_900, "{prefix:?}: {} sets", sets.len());
        }
    }

    /// Every probe gives the place of its own name, the probes around the
    /// end of a window (where the table grows) among them: the first slot of
    /// the set it names, where `record` writes, holds that name.
    #[test]
    fn each_probe_gives_its_own_names_place() {
        for z in 0..8 {
            let mut memo = NameMemo::default();
            for i in 0..20_000 {
                let name = format!("n{z}_{i}");
                let (place, _) = memo.probe(name.as_bytes()).unwrap();
                let slot = memo.sets[place.0 as usize].0[0];
                assert!(usize::from(slot.len) == name.len() + 1 && slot.name == words(name.as_bytes()), "{name}");
                memo.record(place, Answer::Exclude, i % 3 == 0);
            }
            assert!(memo.slots() > 4 * FIRST_SLOTS, "the table grew");
        }
    }

    /// A hash given with a name that is not its own (a caller's slip) costs
    /// a miss, never another name's answer: the name is compared in full.
    #[test]
    fn a_hash_given_is_a_hint_only() {
        let mut memo = NameMemo::default();
        let (a, b) = (&b"create_issue"[..], &b"delete_repo"[..]);
        let hash_of_a = hash_of(&words(a), a.len());
        let (place, _) = memo.probe(a).unwrap();
        memo.record(place, Answer::Exclude, true);
        let (place, known) = memo.probe_hashed(b, Some(hash_of_a)).unwrap();
        assert_eq!(known, 0, "b is not a");
        memo.record(place, Answer::Exclude, false);
        assert_eq!(NameMemo::read(memo.probe(a).unwrap().1, Answer::Exclude), Some(true));
        assert_eq!(NameMemo::read(memo.probe_hashed(a, Some(hash_of_a)).unwrap().1, Answer::Exclude), Some(true));
    }

    /// Growing keeps every name, and what was recorded of it.
    #[test]
    fn growing_keeps_the_answers() {
        let mut memo = NameMemo::default();
        let names: Vec<String> = (0..200).map(|i| format!("name_{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            let (place, _) = memo.probe(name.as_bytes()).unwrap();
            memo.record(place, Answer::Exclude, i % 3 == 0);
        }
        let before: Vec<u8> = names.iter().map(|n| memo.sets.iter().flat_map(|s| s.0).find(|slot| slot.len as usize == n.len() + 1 && slot.name == words(n.as_bytes())).map_or(0, |slot| slot.known)).collect();
        assert!(before.iter().filter(|&&k| k != 0).count() >= FIRST_SLOTS / 2, "the table was full");
        memo.grow(0);
        assert_eq!(memo.slots(), 4 * FIRST_SLOTS);
        // Those the table held (a probe of one it did not hold would take a slot).
        for (name, &known) in names.iter().zip(&before).filter(|(_, &known)| known != 0) {
            assert_eq!(memo.probe(name.as_bytes()).unwrap().1, known, "{name}");
        }
    }
}
