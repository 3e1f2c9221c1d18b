//! Pattern indexes whose cost per query is flat in the number of patterns.
//!
//! In the manner of ripgrep's globset, every glob is classified by its literal
//! anchors and filed where one lookup finds it:
//!
//! * `*` (matches everything) in a plain list, checked first;
//! * literals and globs with a literal prefix in a byte trie of those keys, so
//!   one walk over the start of the string finds them all;
//! * globs with no prefix but a literal suffix in a trie of reversed suffixes,
//!   walked from the end;
//! * globs with neither (`*infix*`, `*a*b*`) under their longest middle
//!   literal, found for all of them at once by one Aho-Corasick scan
//!   ([`LiteralScanner`]).
//!
//! A hit on a key is the whole test for `prefix*`, `*suffix` and `*infix*`;
//! anything with more structure is verified against its full glob (kept in a
//! `GlobList`, matched in linear time) only after its key hit. No glob sits in a list that every query
//! walks, except the `*` globs, which answer at once.
//!
//! Verifying one glob is linear in the string, but a long string can hit the
//! keys of many: a thousand `*a…a*b*` globs all hit in a megabyte of `a`s.
//! So a string longer than `LONG_STRING` verifies its candidates one by one
//! only while the bytes compared (prefixes and suffixes) and the bytes
//! searched (the part between, for middle pieces) each stay within a few
//! times its length; the candidates past that are left to a [`Sweep`], one
//! pass over the string that decides them all: over their middle pieces when
//! their ends were compared, over whole globs when not. A query's cost is
//! then linear in the string plus what it does per candidate, with no term
//! that multiplies the two. (A shorter string verifies every candidate at
//! once: each costs at most a few hundred bytes.)

use std::ops::ControlFlow;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::fold::{loose_ascii, LazyFold};
use crate::glob::{Fit, GlobList, GlobShape, Known};
use crate::literals::{KeySet, LiteralScanner};
use crate::sweep::{Sweep, SweepScratch};
use crate::trie::{key_head, sort_by_key_bytes, ByteTrie};

/// [`Candidate::verify`] of a glob that its key alone decides.
const NO_VERIFY: u32 = u32::MAX;

/// A glob found through a key; `verify` is the slot in the index's `verify`
/// list of the full glob when the key alone does not decide, and `tips`
/// the first two bytes of its prefix and the last two of its suffix (as
/// far as they go), which a string's [`Tips`] are compared with before the
/// glob is verified: most candidates of a list are turned down there, by
/// one comparison of two words.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    id: u32,
    verify: u32,
    tips: Tips,
}

/// The first two and the last two bytes of a string (of a glob's prefix and
/// suffix), packed into a word, with the mask of the bytes that are there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tips {
    pub(crate) bytes: u32,
    pub(crate) mask: u32,
}

impl Tips {
    /// A string's tips as a walk reads them, through `map`. A string shorter
    /// than two bytes has zeros where it has no byte: it is then shorter
    /// than a glob whose tips look there, which its verification turns down.
    #[inline]
    pub(crate) fn of(s: &[u8], map: impl Fn(u8) -> u8) -> Self {
        let at = |i: usize| u32::from(map(s[i]));
        let bytes = match s.len() {
            0 => 0,
            1 => at(0) | at(0) << 24,
            n => at(0) | at(1) << 8 | at(n - 2) << 16 | at(n - 1) << 24,
        };
        Tips { bytes, mask: u32::MAX }
    }

    /// A glob's tips: its prefix's first two bytes and its suffix's last two.
    pub(crate) fn of_ends(prefix: &[u8], suffix: &[u8]) -> Self {
        let mut tips = Tips::default();
        for (i, &b) in prefix.iter().take(2).enumerate() {
            tips.bytes |= u32::from(b) << (8 * i);
            tips.mask |= 0xFF << (8 * i);
        }
        for (i, &b) in suffix.iter().rev().take(2).enumerate() {
            tips.bytes |= u32::from(b) << (24 - 8 * i);
            tips.mask |= 0xFF << (24 - 8 * i);
        }
        tips
    }

    /// Whether a string with tips `s` may match a glob with these: where
    /// both have bytes, they are equal.
    #[inline(always)]
    fn allow(self, s: Tips) -> bool {
        (self.bytes ^ s.bytes) & self.mask == 0
    }
}

/// How a query verifies its candidates.
trait Verify {
    /// For strings longer than `LONG_STRING`.
    const LONG: bool;

    /// Whether `c`, found by its end `known`, matches `s`, as far as is
    /// known now (a glob left to the sweep does not, yet).
    fn accepts(&mut self, c: Candidate, s: &[u8], globs: &GlobList, known: Known) -> bool;
}

/// Each candidate at once: for strings up to [`LONG_STRING`] bytes, whose
/// globs cost at most that much each to verify. `tips`: the string's.
struct AtOnce {
    tips: Tips,
}

impl Verify for AtOnce {
    const LONG: bool = false;

    /// (A short string compares the known end again: cheaper than keeping
    /// apart what is known.)
    #[inline(always)]
    fn accepts(&mut self, c: Candidate, s: &[u8], globs: &GlobList, _: Known) -> bool {
        c.verify == NO_VERIFY || (c.tips.allow(self.tips) && globs.is_match(c.verify, s))
    }
}

/// A short ASCII name scanned through the loose fold's byte map: a
/// candidate's ends (but the one it was found by) are compared through the
/// map too, and only one whose middle pieces are left to search is verified
/// against the name's fold, made at the first such candidate. Most
/// candidates of a name are turned down by an end, and a glob without middle
/// pieces is decided by its ends.
struct LazyVerify<'n, 'a> {
    name: &'n mut LazyFold<'a>,
    /// The fold's tips.
    tips: Tips,
}

impl Verify for LazyVerify<'_, '_> {
    const LONG: bool = false;

    #[inline(always)]
    fn accepts(&mut self, c: Candidate, _: &[u8], globs: &GlobList, known: Known) -> bool {
        if c.verify == NO_VERIFY {
            return true;
        }
        if !c.tips.allow(self.tips) {
            return false;
        }
        match globs.fit_mapped(c.verify, self.name.raw(), loose_ascii, known) {
            Fit::No => false,
            Fit::Yes => true,
            // ASCII folds byte for byte: the fold is as long as the name.
            Fit::Middles => globs.middles_in(c.verify, globs.middle_part(c.verify, self.name.get())),
        }
    }
}

/// Strings longer than this verify within a budget.
const LONG_STRING: usize = 256;

/// A long string's verification: candidates are compared and searched at
/// once while a budget of bytes lasts, and are left to a sweep after.
#[derive(Default)]
struct Budgeted {
    /// How many bytes the query may still compare (prefixes and suffixes)
    /// and search (middle pieces) glob by glob.
    compare: usize,
    search: usize,
    /// The `(verify slot, id)` of the candidates left to the sweeps: whole,
    /// and (their ends compared) middle pieces only.
    whole: Vec<(u32, u32)>,
    middles: Vec<(u32, u32)>,
    /// For tests: which candidates go to a sweep whatever the budget.
    always: Option<Sweeping>,
    /// The string's tips.
    tips: Tips,
}

/// What a test scratch leaves to the sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweeping {
    /// Every glob's middle pieces, its ends compared first.
    Middles,
    /// Every glob with a star, whole.
    Whole,
}

/// Bytes a long string's query may compare, and as many search, glob by
/// glob: this floor, plus [`BUDGET_PER_BYTE`] times the string's length. A
/// sweep costs a few searches of the string (an automaton step per byte
/// against a vectorized search), and its automaton is built at the first one.
const BUDGET_FLOOR: usize = 4_096;
const BUDGET_PER_BYTE: usize = 4;

impl Budgeted {
    fn start(&mut self, s: &[u8]) {
        self.tips = Tips::of(s, |b| b);
        self.compare = BUDGET_FLOOR + BUDGET_PER_BYTE * s.len();
        self.search = self.compare;
        self.whole.clear();
        self.middles.clear();
    }
}

/// Takes `cost` bytes from `budget`, if they are left.
#[inline]
fn spend(budget: &mut usize, cost: usize) -> bool {
    let fits = cost <= *budget;
    *budget -= if fits { cost } else { 0 };
    fits
}

impl Verify for Budgeted {
    const LONG: bool = true;

    #[inline]
    fn accepts(&mut self, c: Candidate, s: &[u8], globs: &GlobList, known: Known) -> bool {
        if c.verify == NO_VERIFY {
            return true;
        }
        if !c.tips.allow(self.tips) {
            return false;
        }
        let g = c.verify;
        if self.always == Some(Sweeping::Whole) || !spend(&mut self.compare, globs.ends_len(g, known)) {
            self.whole.push((g, c.id));
            return false;
        }
        match globs.fit_knowing(g, s, known) {
            Fit::No => false,
            Fit::Yes => true,
            Fit::Middles => {
                let rest = globs.middle_part(g, s);
                if self.always.is_none() && spend(&mut self.search, rest.len()) {
                    return globs.middles_in(g, rest);
                }
                self.middles.push((g, c.id));
                false
            }
        }
    }
}

/// What a trie node holds for one glob.
#[derive(Clone, Copy, Debug)]
enum Entry {
    /// A literal glob: matches only when its key is the whole string.
    Exact(u32),
    /// A glob anchored by this key (a prefix, or a suffix in the reversed trie).
    Anchored(Candidate),
}

/// Visits the entries of a trie walk that match.
#[inline(always)]
fn visit_entries<V: Verify, F>(entries: &[Entry], whole: bool, s: &[u8], verify: &GlobList, v: &mut V, known: Known, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(u32) -> ControlFlow<()>,
{
    for entry in entries {
        match *entry {
            Entry::Exact(id) if whole => f(id)?,
            Entry::Exact(_) => {}
            Entry::Anchored(c) if v.accepts(c, s, verify, known) => f(c.id)?,
            Entry::Anchored(_) => {}
        }
    }
    ControlFlow::Continue(())
}

/// Globs without a prefix or suffix, found by one scan for all their infixes.
/// The candidates of key `k` are `candidates[starts[k]..starts[k + 1]]`.
#[derive(Clone, Debug)]
struct InfixSet {
    scanner: LiteralScanner,
    starts: Vec<u32>,
    candidates: Vec<Candidate>,
}

impl InfixSet {
    fn build(mut entries: Vec<(u128, (&[u8], Candidate))>) -> Option<Self> {
        if entries.is_empty() {
            return None;
        }
        // Sorted, equal keys are neighbours: one scanner key each.
        sort_by_key_bytes(&mut entries, |e| e.0);
        let mut keys: Vec<&[u8]> = Vec::with_capacity(entries.len());
        let mut starts = Vec::with_capacity(entries.len() + 1);
        let mut candidates = Vec::with_capacity(entries.len());
        for (_, (key, candidate)) in entries {
            if keys.last() != Some(&key) {
                keys.push(key);
                starts.push(candidates.len() as u32);
            }
            candidates.push(candidate);
        }
        starts.push(candidates.len() as u32);
        Some(InfixSet { scanner: LiteralScanner::build(&keys), starts, candidates })
    }

    /// (`map` is the identity for a long string: only short ones are
    /// scanned through the loose fold's byte map.)
    #[inline]
    fn for_each<M, V: Verify, F>(&self, s: &[u8], map: M, verify: &GlobList, v: &mut V, seen: &mut KeySet, f: &mut F) -> ControlFlow<()>
    where
        M: Fn(u8) -> u8,
        F: FnMut(u32) -> ControlFlow<()>,
    {
        // Each key that occurs is reported once, however often it occurs.
        let visit = |key: u32| {
            let key = key as usize;
            for &c in &self.candidates[self.starts[key] as usize..self.starts[key + 1] as usize] {
                if v.accepts(c, s, verify, Known::Neither) {
                    f(c.id)?;
                }
            }
            ControlFlow::Continue(())
        };
        match V::LONG {
            true => self.scanner.for_each_key_long(s, seen, visit),
            false => self.scanner.for_each_key_mapped(s, map, seen, visit),
        }
    }
}

/// The infix set re-filed for long strings: a candidate with a prefix (or,
/// without one, a suffix) under that anchor in a trie of its own, and only
/// those with neither under their infix key.
///
/// In a long string most keys occur: a thousand `x*a…a*` globs are all
/// candidates in a megabyte of a's, each to be turned down by its `x`, a cost
/// that grows with the patterns. Filed by their anchors, they are found only
/// where the string starts (or ends) as they need, by a walk as long as the
/// anchors at most, and the scan has left only the keys of globs that an
/// occurrence anywhere can serve. Built by the first long string.
#[derive(Clone, Debug)]
struct LongInfix {
    forward: ByteTrie<Candidate>,
    backward: ByteTrie<Candidate>,
    infix: Option<InfixSet>,
}

impl LongInfix {
    fn build(infix: &InfixSet, verify: &GlobList) -> Self {
        let (mut forward, mut backward, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for key in 0..infix.scanner.key_count() as u32 {
            let bytes = infix.scanner.key(key);
            for &c in &infix.candidates[infix.starts[key as usize] as usize..infix.starts[key as usize + 1] as usize] {
                let parts = (c.verify != NO_VERIFY).then(|| verify.parts(c.verify)).flatten();
                let (prefix, suffix) = parts.map_or((&b""[..], &b""[..]), |(prefix, _, suffix)| (prefix, suffix));
                if !prefix.is_empty() {
                    forward.push((prefix, c));
                } else if !suffix.is_empty() {
                    backward.push((suffix.iter().rev().copied().collect::<Vec<u8>>(), c));
                } else {
                    rest.push((key_head(bytes), (bytes, c)));
                }
            }
        }
        LongInfix { forward: ByteTrie::build(forward), backward: ByteTrie::build(backward), infix: InfixSet::build(rest) }
    }
}

/// Visits the candidates of a walk over anchors (each key a prefix of what is walked).
#[inline]
fn visit_candidates<V: Verify, F>(candidates: &[Candidate], s: &[u8], verify: &GlobList, v: &mut V, known: Known, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(u32) -> ControlFlow<()>,
{
    for &c in candidates {
        if v.accepts(c, s, verify, known) {
            f(c.id)?;
        }
    }
    ControlFlow::Continue(())
}

/// A set of segment globs, each with an id, answering "which match `s`".
#[derive(Clone, Debug, Default)]
pub struct SegmentIndex {
    any: Vec<u32>,
    /// Literals and prefix-anchored globs, walked forwards.
    forward: ByteTrie<Entry>,
    /// Suffix-anchored globs (no prefix), keys reversed, walked backwards.
    backward: ByteTrie<Entry>,
    infix: Option<InfixSet>,
    /// The full globs that candidates verify after a key hit.
    verify: GlobList,
    /// A small set's globs, matched one by one: glob `i` of `verify` has
    /// id `listed[i]` (and nothing else is indexed).
    listed: Vec<u32>,
    /// `verify`'s globs for sweeps, whole and middle pieces only, each
    /// built by the first query that needs it; and `infix` for long
    /// strings, built by the first. (Boxed: most indexes never build them,
    /// and an index is moved about while it is built.)
    sweeps: [OnceLock<Box<Sweep>>; 2],
    long_infix: OnceLock<Box<LongInfix>>,
}

/// Sets of at most this many globs are matched glob by glob: for a tiny set
/// (the server globs of a short list, those of its regex patterns), building
/// tries costs more than they save, and a query tries a handful at most. (A
/// rule set's small groups share one list of their own, `rules::Group::Few`.)
const SMALL_SET: usize = 4;

/// An anchor at least this long, shared by at most [`ANCHOR_SHARED`] globs,
/// keys a glob of [`SegmentIndex::build_anchored`].
const ANCHOR_MIN: usize = 2;
const ANCHOR_SHARED: u32 = 4;

/// Reusable per-thread buffers for queries.
pub struct Scratch {
    seen: KeySet,
    /// Strings longer than this verify within a budget: [`LONG_STRING`].
    long: usize,
    budgeted: Budgeted,
    sweep: SweepScratch,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch { seen: KeySet::default(), long: LONG_STRING, budgeted: Budgeted::default(), sweep: SweepScratch::default() }
    }
}

impl Scratch {
    /// A scratch whose queries leave candidates to a sweep, however short
    /// the string: for tests, which compare the ways of deciding them on
    /// strings short enough to draw at random.
    pub fn always_sweeping(what: Sweeping) -> Self {
        let budgeted = Budgeted { always: Some(what), ..Budgeted::default() };
        Scratch { long: 0, budgeted, ..Scratch::default() }
    }
}

impl SegmentIndex {
    pub fn build<'a, I>(globs: I) -> Self
    where
        I: IntoIterator<Item = (&'a [u8], u32)>,
    {
        Self::build_keyed(globs, |_| false)
    }

    /// [`build`](Self::build), keying a glob by its prefix or suffix (the
    /// longer) when that is at least two bytes and few other globs share
    /// it, even where a middle literal is longer: for globs such as
    /// `get*by*id`, whose middle words most names hold, while few names
    /// start or end as they must. A walk from the start or the end finds
    /// them where a scan for the middle would make most names a candidate.
    /// (An anchor that many globs share, `cr` of a hundred `cr*…`, would
    /// make each name that starts so a candidate of all of them.)
    pub fn build_anchored<'a, I>(globs: I) -> Self
    where
        I: IntoIterator<Item = (&'a [u8], u32)>,
    {
        let globs: Vec<(&[u8], u32)> = globs.into_iter().collect();
        let mut shared: FxHashMap<(bool, &[u8]), u32> = FxHashMap::default();
        for &(pattern, _) in &globs {
            let shape = GlobShape::of(pattern);
            let (prefix, suffix) = (shape.prefix, shape.suffix);
            if shape.has_star && prefix.len().max(suffix.len()) >= ANCHOR_MIN {
                *shared.entry((prefix.len() >= suffix.len(), if prefix.len() >= suffix.len() { prefix } else { suffix })).or_default() += 1;
            }
        }
        Self::build_keyed(globs, |shape| {
            let forward = shape.prefix.len() >= shape.suffix.len();
            let anchor = if forward { shape.prefix } else { shape.suffix };
            anchor.len() >= ANCHOR_MIN && shared.get(&(forward, anchor)).is_some_and(|&n| n <= ANCHOR_SHARED)
        })
    }

    /// `anchored(shape)`: whether a glob is keyed by its longer anchor
    /// whatever its middle literals (else by its longest literal).
    fn build_keyed<'a, I, A>(globs: I, anchored: A) -> Self
    where
        I: IntoIterator<Item = (&'a [u8], u32)>,
        A: Fn(&GlobShape<'_>) -> bool,
    {
        let mut index = SegmentIndex::default();
        let globs = globs.into_iter();
        if globs.size_hint().1.is_some_and(|n| n <= SMALL_SET) {
            for (pattern, id) in globs {
                index.verify.push(pattern);
                index.listed.push(id);
            }
            return index;
        }
        let (mut forward, mut infixes) = (Vec::new(), Vec::new());
        // Reversed suffixes go into one buffer; `backward` holds their ranges.
        let (mut reversed, mut backward) = (Vec::new(), Vec::new());
        for (pattern, id) in globs {
            let shape = GlobShape::of(pattern);
            if !shape.has_star {
                forward.push((pattern, Entry::Exact(id)));
                continue;
            }
            let simple = shape.middles == 0;
            let mut candidate = |needs_verify: bool| Candidate {
                id,
                verify: if needs_verify {
                    index.verify.push_shaped(pattern, &shape)
                } else {
                    NO_VERIFY
                },
                tips: Tips::of_ends(shape.prefix, shape.suffix),
            };
            // Key a glob by its longest literal, the most selective one; only
            // a hit on that key leads to the (linear) verification.
            let anchor = shape.prefix.len().max(shape.suffix.len());
            let key_len = if anchored(&shape) { anchor } else { anchor.max(shape.longest_middle.len()) };
            if key_len == 0 {
                index.any.push(id);
            } else if shape.prefix.len() == key_len {
                let c = candidate(!(simple && shape.suffix.is_empty()));
                forward.push((shape.prefix, Entry::Anchored(c)));
            } else if shape.suffix.len() == key_len {
                let c = candidate(!(simple && shape.prefix.is_empty()));
                let from = reversed.len();
                reversed.extend(shape.suffix.iter().rev());
                backward.push((from..reversed.len(), Entry::Anchored(c)));
            } else {
                let only_infix = shape.prefix.is_empty() && shape.suffix.is_empty() && shape.middles == 1;
                infixes.push((key_head(shape.longest_middle), (shape.longest_middle, candidate(!only_infix))));
            }
        }
        index.forward = ByteTrie::build(forward);
        index.backward = ByteTrie::build(backward.into_iter().map(|(range, entry)| (&reversed[range], entry)));
        index.infix = InfixSet::build(infixes);
        index
    }

    pub fn is_empty(&self) -> bool {
        self.any.is_empty()
            && self.forward.is_empty()
            && self.backward.is_empty()
            && self.infix.is_none()
            && self.listed.is_empty()
    }

    /// Calls `f` with the id of every glob that matches `s` (an id may repeat
    /// only if it was inserted twice); stops when `f` breaks.
    #[inline]
    pub fn for_each_match<F>(&self, s: &[u8], scratch: &mut Scratch, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        for &id in &self.any {
            f(id)?;
        }
        let verify = &self.verify;
        for (slot, &id) in self.listed.iter().enumerate() {
            if verify.is_match(slot as u32, s) {
                f(id)?;
            }
        }
        if s.len() > scratch.long {
            return self.long_matches(s, scratch, f);
        }
        self.walks(s, |b| b, &mut AtOnce { tips: Tips::of(s, |b| b) }, &mut scratch.seen, f)
    }

    /// [`any_match`](Self::any_match) of the loose fold of `name`, folding
    /// it only if a glob must be verified against it: an ASCII name of at
    /// most [`LONG_STRING`] bytes is walked and scanned as it is, each byte
    /// folded as it is read (for ASCII the loose fold is byte for byte), and
    /// a key hit alone decides most globs (`prefix*`, `*suffix`, `*infix*`,
    /// literals).
    pub fn any_match_loose(&self, name: &mut LazyFold<'_>, scratch: &mut Scratch) -> bool {
        let raw = name.raw();
        if !self.any.is_empty() {
            return true;
        }
        if !self.listed.is_empty() || raw.len() > scratch.long || !raw.is_ascii() {
            return self.any_match(name.get(), scratch);
        }
        let tips = Tips::of(raw, loose_ascii);
        self.walks(raw, loose_ascii, &mut LazyVerify { name, tips }, &mut scratch.seen, &mut |_| ControlFlow::Break(())).is_break()
    }

    /// The walks of [`for_each_match`](Self::for_each_match) for a long
    /// string, verifying within a budget and sweeping what is left.
    #[inline(never)]
    fn long_matches<F>(&self, s: &[u8], scratch: &mut Scratch, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(u32) -> ControlFlow<()>,
    {
        let Scratch { seen, budgeted, sweep, .. } = scratch;
        budgeted.start(s);
        self.walks(s, |b| b, budgeted, seen, f)?;
        for (whole, waiting) in [(true, &budgeted.whole), (false, &budgeted.middles)] {
            if !waiting.is_empty() {
                let built = self.sweeps[usize::from(whole)].get_or_init(|| Box::new(Sweep::build(&self.verify, whole)));
                built.run(s, waiting, sweep, f)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// The trie walks and the infix scan, verifying by `v`.
    #[inline(always)]
    fn walks<M, V: Verify, F>(&self, s: &[u8], map: M, v: &mut V, seen: &mut KeySet, f: &mut F) -> ControlFlow<()>
    where
        M: Fn(u8) -> u8 + Copy,
        F: FnMut(u32) -> ControlFlow<()>,
    {
        let verify = &self.verify;
        self.forward.walk(s.iter().map(|&b| map(b)), |entries, whole| visit_entries(entries, whole, s, verify, v, Known::Prefix, f))?;
        self.backward.walk(s.iter().rev().map(|&b| map(b)), |entries, whole| visit_entries(entries, whole, s, verify, v, Known::Suffix, f))?;
        let infix = match (&self.infix, V::LONG) {
            (None, _) => return ControlFlow::Continue(()),
            (Some(infix), false) => infix,
            (Some(infix), true) => {
                let long = self.long_infix.get_or_init(|| Box::new(LongInfix::build(infix, verify)));
                long.forward.walk(s.iter().copied(), |c, _| visit_candidates(c, s, verify, v, Known::Prefix, f))?;
                long.backward.walk(s.iter().rev().copied(), |c, _| visit_candidates(c, s, verify, v, Known::Suffix, f))?;
                match &long.infix {
                    Some(infix) => infix,
                    None => return ControlFlow::Continue(()),
                }
            }
        };
        infix.for_each(s, map, verify, v, seen, f)
    }

    /// Whether any glob matches `s`.
    pub fn any_match(&self, s: &[u8], scratch: &mut Scratch) -> bool {
        self.for_each_match(s, scratch, &mut |_| ControlFlow::Break(())).is_break()
    }

    /// The smallest id of a matching glob.
    pub fn min_match(&self, s: &[u8], scratch: &mut Scratch) -> Option<u32> {
        let mut best: Option<u32> = None;
        let _ = self.for_each_match(s, scratch, &mut |id| {
            best = Some(best.map_or(id, |b| b.min(id)));
            ControlFlow::Continue(())
        });
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glob::SegmentGlob;

    fn index(globs: &[&str]) -> SegmentIndex {
        SegmentIndex::build(globs.iter().enumerate().map(|(i, g)| (g.as_bytes(), i as u32)))
    }

    /// The matches, the same whether middle pieces are searched glob by
    /// glob or by the sweep.
    fn matches_of(index: &SegmentIndex, s: &str) -> Vec<u32> {
        let scratches = [Scratch::default(), Scratch::always_sweeping(Sweeping::Middles), Scratch::always_sweeping(Sweeping::Whole)];
        let [direct, middles, whole] = scratches.map(|mut scratch| {
            let mut got = Vec::new();
            let _ = index.for_each_match(s.as_bytes(), &mut scratch, &mut |id| {
                got.push(id);
                ControlFlow::Continue(())
            });
            got.sort_unstable();
            got
        });
        assert_eq!(direct, middles, "on {s:?}");
        assert_eq!(direct, whole, "on {s:?}");
        direct
    }

    /// The ids of the globs matching `s`, the same whether the set is small
    /// (globs matched one by one) or padded past `SMALL_SET` with globs that
    /// match nothing here (tries and the infix scanner).
    fn all_matches(globs: &[&str], s: &str) -> Vec<u32> {
        let got = matches_of(&index(globs), s);
        let filler = ["\0never", "*\0a", "\0*", "*\0", "\0b*c"];
        let padded: Vec<&str> = globs.iter().copied().chain(filler).collect();
        let padded_index = index(&padded);
        assert!(padded_index.listed.is_empty());
        assert_eq!(matches_of(&padded_index, s), got, "{globs:?} on {s:?}");
        got
    }

    fn naive(globs: &[&str], s: &str) -> Vec<u32> {
        (0..globs.len() as u32)
            .filter(|&i| SegmentGlob::new(globs[i as usize].as_bytes()).is_match(s.as_bytes()))
            .collect()
    }

    macro_rules! index_cases {
        ($($name:ident: $globs:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let want: &[u32] = &$want;
                assert_eq!(all_matches(&$globs, $input), want.to_vec());
                assert_eq!(all_matches(&$globs, $input), naive(&$globs, $input));
            }
        )*};
    }

    index_cases! {
        literal_hit: ["create_issue", "x"], "create_issue" => [0];
        literal_miss: ["create_issue"], "create_issues" => [];
        any_always: ["*", "a"], "zzz" => [0];
        prefix_lengths: ["c*", "cr*", "create_*", "d*"], "create_issue" => [0, 1, 2];
        prefix_too_long: ["create_issue_*"], "create_issue" => [];
        suffix: ["*_issue", "*e", "*x"], "create_issue" => [0, 1];
        prefix_suffix_verified: ["ab*ba"], "aba" => [];
        prefix_suffix_hit: ["ab*ba"], "abba" => [0];
        general_by_prefix: ["a*b*c"], "aXbYc" => [0];
        general_by_prefix_miss: ["a*b*c"], "aXcYb" => [];
        general_by_suffix: ["*b*c"], "abc" => [0];
        infix: ["*pull*", "*push*"], "list_pull_requests" => [0];
        infix_general: ["*a*b*", "*b*a*"], "xaxbx" => [0];
        infix_repeated_key: ["*aa*"], "aaaaaa" => [0];
        shared_keys: ["a*", "a*", "a*z"], "abz" => [0, 1, 2];
        mixed: ["*", "gh*", "*_v2", "*pr*", "list_prs_v2"], "list_prs_v2" => [0, 2, 3, 4];
        empty_string: ["", "*", "a*"], "" => [0, 1];
    }

    /// Random globs and strings over a tiny alphabet, so that keys collide and
    /// every strategy is exercised: the index must agree with matching each
    /// glob on its own.
    #[test]
    fn random_sets_agree_with_naive_matching() {
        let mut next = crate::test_rng::below(0x9E37_79B9_7F4A_7C15);
        let alphabet = [b'a', b'b', b'*', b'_'];
        for _ in 0..3_000 {
            let globs: Vec<String> = (0..next(8))
                .map(|_| (0..next(6)).map(|_| alphabet[next(4) as usize] as char).collect())
                .collect();
            let glob_refs: Vec<&str> = globs.iter().map(String::as_str).collect();
            for _ in 0..8 {
                let s: String = (0..next(7)).map(|_| alphabet[[0, 1, 3][next(3) as usize]] as char).collect();
                assert_eq!(all_matches(&glob_refs, &s), naive(&glob_refs, &s), "{glob_refs:?} on {s:?}");
            }
        }
    }

    #[test]
    fn a_long_string_sweeps_the_globs_past_the_budget() {
        // A thousand globs whose keys all occur: a few are verified one by
        // one, the rest wait for the sweep; the answer is each glob's own.
        let globs: Vec<String> = (1..=1_000).map(|i| format!("*{}*b{}*", "a".repeat(i), i % 7)).collect();
        let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
        let idx = index(&refs);
        let s = "a".repeat(20_000) + "b3";
        let mut scratch = Scratch::default();
        let mut got = Vec::new();
        let _ = idx.for_each_match(s.as_bytes(), &mut scratch, &mut |id| {
            got.push(id);
            ControlFlow::Continue(())
        });
        got.sort_unstable();
        assert!(idx.sweeps.iter().any(|s| s.get().is_some()));
        assert_eq!(got, naive(&refs, &s));
        assert_eq!(idx.min_match(s.as_bytes(), &mut scratch), Some(2));
        assert!(idx.any_match(s.as_bytes(), &mut scratch));
        assert!(!idx.any_match(&s.as_bytes()[..20_000], &mut scratch));
    }

    /// A thousand keys, literals, prefixes, suffixes and infixes that are
    /// suffixes of one another, on a name of a's: every match is found once.
    #[test]
    fn nested_keys_of_every_kind() {
        let mut globs: Vec<String> = Vec::new();
        for i in 1..=250 {
            let a = "a".repeat(i);
            globs.extend([a.clone(), format!("{a}*"), format!("*{a}"), format!("*{a}*")]);
        }
        let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
        let idx = index(&refs);
        let s = "a".repeat(200);
        let got = matches_of(&idx, &s);
        assert_eq!(got, naive(&refs, &s));
        // The literal of 200 a's, and 200 of each of the three other roles.
        assert_eq!(got.len(), 1 + 3 * 200);
    }

    /// The loose scan of an ASCII name folds each byte as it reads it: it
    /// answers as a match of the folded name does, and folds the name only
    /// when a glob must be verified.
    #[test]
    fn loose_scans_answer_as_the_folded_name() {
        let mut next = crate::test_rng::below(0x9B05_688C_2B3E_6C1F);
        let alphabet = [b'a', b'A', b'_', b'-', b'.', b'*', b'b'];
        for _ in 0..2_000 {
            let globs: Vec<String> = (0..SMALL_SET as u64 + 1 + next(10))
                .map(|_| {
                    let g: String = (0..next(6)).map(|_| alphabet[next(7) as usize] as char).collect();
                    String::from_utf8(crate::fold::fold_loose(g.as_bytes())).unwrap()
                })
                .collect();
            let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
            let idx = index(&refs);
            for _ in 0..8 {
                let name: String = (0..next(9)).map(|_| alphabet[[0, 1, 2, 3, 4, 6][next(6) as usize]] as char).collect();
                let folded = crate::fold::fold_loose(name.as_bytes());
                let want = idx.any_match(&folded, &mut Scratch::default());
                let mut buf = Vec::new();
                let mut lazy = LazyFold::new(name.as_bytes(), &mut buf);
                assert_eq!(idx.any_match_loose(&mut lazy, &mut Scratch::default()), want, "{refs:?} on {name:?}");
            }
        }
        // Keys alone decide these: the name is never folded.
        let idx = index(&["del*", "*_repo", "*ssu*", "get_x", "list_y", "z*"]);
        for (name, want) in [("Delete-Repo", true), ("GET.X", true), ("Issue", true), ("other", false)] {
            let mut buf = Vec::new();
            let mut lazy = LazyFold::new(name.as_bytes(), &mut buf);
            assert_eq!(idx.any_match_loose(&mut lazy, &mut Scratch::default()), want, "{name}");
            assert!(!lazy.was_folded(), "{name}");
        }
        // A glob with two pieces is verified against the fold; a non-ASCII
        // name is folded first.
        let idx = index(&["a*b*c", "x1*", "x2*", "x3*", "x4*"]);
        for name in ["A-B-C", "Ä-B-C"] {
            let mut buf = Vec::new();
            let mut lazy = LazyFold::new(name.as_bytes(), &mut buf);
            assert_eq!(idx.any_match_loose(&mut lazy, &mut Scratch::default()), name == "A-B-C");
            assert!(lazy.was_folded(), "{name}");
        }
    }

    #[test]
    fn min_and_any() {
        let idx = index(&["z*", "*x", "abx"]);
        let mut scratch = Scratch::default();
        assert_eq!(idx.min_match(b"abx", &mut scratch), Some(1));
        assert!(idx.any_match(b"zz", &mut scratch));
        assert!(!idx.any_match(b"q", &mut scratch));
    }
}
