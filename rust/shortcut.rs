//! A batch's shortcut through the globs that apply to every server.
//!
//! The group of the server glob `*` (bare tool patterns and `*/tool`) is most
//! of a long list, and [`SegmentIndex`] answers it with two trie walks and an
//! automaton scan over each name, a few hundred instructions a name. Most of
//! those globs are *simple*: a literal, `prefix*`, `*suffix` or `*infix*`.
//! Together they are one regular language whose automaton is small: while
//! the name's start is still a prefix of some literal or prefix glob, the
//! state is that trie node (which also fixes where a scan for the suffixes
//! and infixes would be); after, it is the scan's state alone. So a
//! deterministic automaton over all of them has no more states than the
//! trie and the scan together, and a name costs one table step a byte,
//! ending at the first byte after which a glob has matched.
//!
//! The automaton is `regex-automata`'s lazy DFA: states are made the first
//! time a name reaches them and kept in a per-thread cache, so a batch pays
//! only for the states its names visit, and never determinizes what no name
//! asks for. The globs with two or more stars between literals
//! (`get*by*id`, `*a*b*`), which would multiply its states, stay in an index
//! of their own, keyed by an anchored end when they have one of at least two
//! bytes (the start or the end of a name, one walk) rather than a middle
//! word that most names hold.
//!
//! Linear time: a name is scanned once, plus the states it makes. A state is
//! made from the states of the patterns' automaton it stands for, which are
//! bounded by the patterns; the cache is bounded, and a batch whose names
//! make states faster than they reuse them (the cache cleared again and
//! again with few bytes scanned per state) makes the automaton give up: the
//! batch then goes back to the index for the rest of its names. Names longer
//! than [`SHORT`] bytes always take the index, whose long-string paths are
//! built for them.
//!
//! The exclude side's globs are folded; its automaton reads a name's bytes
//! through the loose fold instead of folding the name: every ASCII byte of a
//! glob stands for the class of bytes that fold to it (`a` for `a` and `A`,
//! `_` for `_`, `-` and `.`), which is exact for an ASCII name, whose loose
//! fold is byte for byte. A name with another character is folded first, and
//! its fold matched (its ASCII bytes are then in their folded form, which
//! each class holds).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashSet;

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};

use crate::fold::{loose_ascii, LazyFold};
use crate::glob::GlobParts;
use crate::index::{Scratch, SegmentIndex, Tips};

/// Names longer than this take the index.
pub const SHORT: usize = 256;

/// Each thread's cache of the automaton's states. The states a catalog
/// visits are about the trie and scan nodes its names reach, a few hundred
/// bytes of cache each: about 2.5 MB for the 600 globs (7 KB of literals)
/// of one side of the benchmark's 1,000 patterns over a million distinct
/// names.
const CACHE_BYTES: usize = 8 << 20;

/// Groups whose prefix, suffix and infix globs hold more bytes than this
/// get an index of them instead of their automaton: its states would not
/// fit the cache, which would be cleared and refilled over and over (each
/// state made from many of the patterns' states).
const MAX_SIMPLE_BYTES: usize = 48 << 10;

/// How deep the automaton's pattern may nest: the tries of at most
/// [`MAX_SIMPLE_BYTES`] branch at most a few hundred deep.
const NEST_LIMIT: u32 = 1_000;

/// The stack of the thread that compiles an automaton. Its compiler
/// recurses once per level of the pattern's nesting, some kilobytes a level
/// in a build without optimisation: a few hundred levels overflow the 2 MB
/// of a Rust thread (and the smaller stacks some platforms give threads),
/// wherever the first batch that needs the shortcut happens to run. Only
/// what is used of it is ever touched.
const COMPILE_STACK: usize = 64 << 20;

/// A shortcut whose cache is cleared this often in one thread's batch is
/// set aside for good: the states its names need do not fit.
const MAX_CLEARS: usize = 2;

/// The automaton also gives up by itself once its cache has been cleared
/// this often with fewer than [`MIN_BYTES_PER_STATE`] bytes scanned per
/// state made since.
const MIN_CLEARS: usize = 2;
const MIN_BYTES_PER_STATE: usize = 16;

/// Caches kept for the next batches, at most: one per matching thread of a
/// two-core batch, and two more.
const KEPT_CACHES: usize = 4;

/// The tips ([`Tips`]: the first two and last two bytes) that the anchored
/// globs of a set need, by which of those bytes they look at: a string whose
/// tips no glob allows skips them all. A set of globs that each have a
/// prefix or a suffix is mostly turned down there: a `get*by*id` needs a
/// name that starts with `ge` and ends with `id`.
#[derive(Clone, Debug, Default)]
struct Gate {
    /// Per mask (at most nine: zero, one or two bytes at each end), a
    /// filter of the masked tips of its globs: bit `h(tips) % 2^GATE_BITS`.
    shapes: Vec<(u32, Box<[u64]>)>,
}

/// Bits of each mask's filter (8 KB: a few thousand globs leave it sparse).
const GATE_BITS: u32 = 16;

impl Gate {
    #[inline]
    fn slot(tips: u32) -> usize {
        (u64::from(tips).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - GATE_BITS)) as usize
    }

    fn build(globs: &[&[u8]]) -> Self {
        let mut gate = Gate::default();
        for glob in globs {
            let parts = GlobParts::split(glob);
            let Tips { bytes, mask } = Tips::of_ends(parts.prefix, parts.suffix);
            let at = match gate.shapes.iter().position(|(m, _)| *m == mask) {
                Some(at) => at,
                None => {
                    gate.shapes.push((mask, vec![0; 1 << (GATE_BITS - 6)].into_boxed_slice()));
                    gate.shapes.len() - 1
                }
            };
            let slot = Self::slot(bytes & mask);
            gate.shapes[at].1[slot / 64] |= 1 << (slot % 64);
        }
        gate
    }

    /// Whether a glob may match a string with `tips` (every byte there).
    #[inline]
    fn open(&self, tips: Tips) -> bool {
        self.shapes.iter().any(|(mask, bits)| {
            let slot = Self::slot(tips.bytes & mask);
            bits[slot / 64] >> (slot % 64) & 1 != 0
        })
    }
}

/// The literal globs of a shortcut, behind a filter of their lengths and
/// tips: most names are of no literal's length and tips, and skip the hash
/// (and, on the exclude side, the fold it is taken of).
#[derive(Clone, Debug, Default)]
struct Literals {
    set: FxHashSet<Box<[u8]>>,
    /// Bit `h(length, tips) % 2^GATE_BITS` of each literal.
    filter: Box<[u64]>,
}

impl Literals {
    fn build(literals: &[&[u8]]) -> Self {
        let mut filter = vec![0u64; if literals.is_empty() { 0 } else { 1 << (GATE_BITS - 6) }].into_boxed_slice();
        for literal in literals {
            let slot = Self::slot(literal.len(), Tips::of(literal, |b| b));
            filter[slot / 64] |= 1 << (slot % 64);
        }
        Literals { set: literals.iter().map(|l| Box::from(*l)).collect(), filter }
    }

    #[inline]
    fn slot(len: usize, tips: Tips) -> usize {
        Gate::slot(tips.bytes ^ (len as u32).rotate_left(13))
    }

    /// Whether a literal may be a string of `len` bytes with these tips.
    #[inline]
    fn may_hold(&self, len: usize, tips: Tips) -> bool {
        if self.filter.is_empty() {
            return false;
        }
        let slot = Self::slot(len, tips);
        self.filter[slot / 64] >> (slot % 64) & 1 != 0
    }

    /// Whether `s` is a literal.
    #[inline]
    fn holds(&self, s: &[u8]) -> bool {
        self.may_hold(s.len(), Tips::of(s, |b| b)) && self.set.contains(s)
    }
}

/// The globs a shortcut's automaton leaves to an index: those with a prefix
/// or a suffix behind their [`Gate`], those with neither searched always.
#[derive(Clone, Debug, Default)]
struct Rest {
    gate: Gate,
    anchored: Option<SegmentIndex>,
    free: Option<SegmentIndex>,
}

impl Rest {
    fn build(globs: &[&[u8]]) -> Option<Self> {
        let (anchored, free): (Vec<&[u8]>, Vec<&[u8]>) = globs.iter().partition(|g| {
            let parts = GlobParts::split(g);
            !parts.prefix.is_empty() || !parts.suffix.is_empty()
        });
        let index = |globs: &[&[u8]]| (!globs.is_empty()).then(|| SegmentIndex::build_anchored(globs.iter().map(|g| (*g, 0))));
        let rest = Rest { gate: Gate::build(&anchored), anchored: index(&anchored), free: index(&free) };
        (rest.anchored.is_some() || rest.free.is_some()).then_some(rest)
    }

    /// Whether a glob matches `s` (folded already for a loose set).
    #[inline]
    fn any_match(&self, s: &[u8], scratch: &mut Scratch) -> bool {
        let gated = |index: &SegmentIndex| self.gate.open(Tips::of(s, |b| b)) && index.any_match(s, scratch);
        self.anchored.as_ref().is_some_and(gated) || self.free.as_ref().is_some_and(|free| free.any_match(s, scratch))
    }

    /// Whether a glob matches the loose fold of the ASCII `name`.
    #[inline]
    fn any_match_loose(&self, name: &mut LazyFold<'_>, scratch: &mut Scratch) -> bool {
        let tips = Tips::of(name.raw(), loose_ascii);
        if let Some(anchored) = &self.anchored {
            if self.gate.open(tips) && anchored.any_match_loose(name, scratch) {
                return true;
            }
        }
        self.free.as_ref().is_some_and(|free| free.any_match_loose(name, scratch))
    }
}

/// A thread's cache of a shortcut's states, with its clear count when the
/// thread took it.
#[derive(Debug)]
pub struct Held {
    /// `None` for a shortcut without an automaton.
    cache: Option<Cache>,
    clears: usize,
}

/// The simple globs of a group as one automaton, and the others indexed.
#[derive(Debug)]
pub struct Shortcut {
    /// The literal globs: a name is one of them or not, one hash away. (In
    /// the automaton they were most of its states: a literal's every byte
    /// is a state of its own, where a prefix's states end with the prefix.)
    literals: Literals,
    /// The prefix, suffix and infix globs.
    simple: Simple,
    rest: Option<Rest>,
    /// The caches of threads that used the automaton, for the next batch:
    /// its states are made once, not per batch.
    caches: Mutex<Vec<Cache>>,
    /// Set when a thread's cache overflowed: the shortcut is not used again.
    poor: AtomicBool,
}

/// The prefix, suffix and infix globs: their automaton, or, for more of
/// them than its cache would hold the states of, an index of their own
/// (without the literals and the other globs, it walks less).
#[derive(Clone, Debug)]
enum Simple {
    Automaton(DFA),
    Index(Option<SegmentIndex>),
}

/// What a glob is to the shortcut.
enum Kind<'a> {
    Literal(&'a [u8]),
    Prefix(&'a [u8]),
    Suffix(&'a [u8]),
    Infix(&'a [u8]),
    /// Only stars: matches everything.
    Any,
    /// Two literal pieces or more between its ends, or a prefix and a suffix.
    Other,
}

fn classify(glob: &[u8]) -> Kind<'_> {
    let parts = GlobParts::split(glob);
    if !parts.has_star {
        return Kind::Literal(glob);
    }
    match (parts.prefix.is_empty(), parts.middles.as_slice(), parts.suffix.is_empty()) {
        (true, [], true) => Kind::Any,
        (false, [], true) => Kind::Prefix(parts.prefix),
        (true, [], false) => Kind::Suffix(parts.suffix),
        (true, [infix], true) => Kind::Infix(infix),
        _ => Kind::Other,
    }
}

/// Appends `bytes` to a pattern of the automaton's syntax, each byte escaped
/// (under the loose fold, each ASCII byte as the class of bytes folding to it).
fn push_literal(out: &mut String, bytes: &[u8], loose: bool) {
    for &b in bytes {
        match (loose, b) {
            (true, b'a'..=b'z') => {
                let _ = write!(out, "[\\x{b:02x}\\x{:02x}]", b.to_ascii_uppercase());
            }
            (true, b'_') => out.push_str("[_\\x2d\\x2e]"),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

/// The lazy DFA of `pattern`, compiled on a thread of its own with a stack
/// of [`COMPILE_STACK`] bytes (see there); None when it cannot be (a
/// pattern nested past [`NEST_LIMIT`], a thread not to be had): the group
/// then has no shortcut, and its index answers.
fn build_automaton(pattern: String, cache_bytes: usize) -> Option<DFA> {
    let compile = move || {
        DFA::builder()
            .syntax(syntax::Config::new().unicode(false).utf8(false).nest_limit(NEST_LIMIT))
            .thompson(thompson::Config::new().utf8(false))
            .configure(
                DFA::config()
                    .cache_capacity(cache_bytes)
                    .minimum_cache_clear_count(Some(MIN_CLEARS))
                    .minimum_bytes_per_state(Some(MIN_BYTES_PER_STATE)),
            )
            .build(&pattern)
            .ok()
    };
    let thread = std::thread::Builder::new().name("toolfilter-automaton".into()).stack_size(COMPILE_STACK);
    thread.spawn(compile).ok()?.join().ok()?
}

/// An alternation of literals, or `None` for none, written as their trie
/// (`(?:ab(?:c|d)|e)` for `abc`, `abd`, `e`): the patterns' automaton then
/// has a state per trie node, not per byte of each literal, and the states
/// of the lazy DFA, each a set of those, are made from fewer (on the
/// benchmark's 10,000 patterns, a fifth of the work and less than half
/// the memory).
fn alternation(pieces: &[&[u8]], loose: bool) -> Option<String> {
    if pieces.is_empty() {
        return None;
    }
    let mut sorted = pieces.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::from("(?:");
    push_trie(&sorted, 0, loose, &mut out);
    out.push(')');
    Some(out)
}

/// Appends the trie of `pieces` (sorted, distinct, all sharing their first
/// `depth` bytes) from byte `depth` on. It recurses only where the trie
/// branches: at most as deep as √(2 × their bytes), a few hundred for the
/// most [`MAX_SIMPLE_BYTES`] allows, and so does the regex's nesting.
fn push_trie(mut pieces: &[&[u8]], mut depth: usize, loose: bool, out: &mut String) {
    loop {
        // A piece that ends here comes first in sorted order.
        let ends = pieces.first().is_some_and(|p| p.len() == depth);
        if ends {
            pieces = &pieces[1..];
        }
        let Some(first) = pieces.first() else { return };
        let byte = first[depth];
        if !ends && pieces.iter().all(|p| p[depth] == byte) {
            // A chain: no group.
            push_literal(out, &[byte], loose);
            depth += 1;
            continue;
        }
        out.push_str("(?:");
        let mut rest = pieces;
        while let Some(head) = rest.first() {
            let byte = head[depth];
            let run = rest.iter().take_while(|p| p[depth] == byte).count();
            if rest.len() != pieces.len() {
                out.push('|');
            }
            push_literal(out, &[byte], loose);
            push_trie(&rest[..run], depth + 1, loose, out);
            rest = &rest[run..];
        }
        if ends {
            out.push('|');
        }
        out.push(')');
        return;
    }
}

/// A copy keeps none of the caches.
impl Clone for Shortcut {
    fn clone(&self) -> Self {
        Shortcut {
            literals: self.literals.clone(),
            simple: self.simple.clone(),
            rest: self.rest.clone(),
            caches: Mutex::new(Vec::new()),
            poor: AtomicBool::new(self.poor.load(Ordering::Relaxed)),
        }
    }
}

impl Shortcut {
    /// The shortcut of a group of (already folded, for `loose`) tool globs;
    /// `None` for a group with a glob of only stars (it matches everything,
    /// which the index answers at once).
    pub fn build<'a>(globs: impl IntoIterator<Item = &'a [u8]>, loose: bool) -> Option<Self> {
        Self::build_with(globs, loose, CACHE_BYTES, MAX_SIMPLE_BYTES)
    }

    /// [`build`](Self::build) with each thread's cache at most `cache_bytes`,
    /// and an automaton for at most `max_simple` bytes of simple globs.
    fn build_with<'a>(globs: impl IntoIterator<Item = &'a [u8]>, loose: bool, cache_bytes: usize, max_simple: usize) -> Option<Self> {
        let (mut literals, mut prefixes, mut suffixes, mut infixes, mut rest) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut simple_globs = Vec::new();
        for glob in globs {
            let kind = classify(glob);
            match kind {
                Kind::Literal(l) => literals.push(l),
                Kind::Prefix(p) => prefixes.push(p),
                Kind::Suffix(s) => suffixes.push(s),
                Kind::Infix(i) => infixes.push(i),
                Kind::Any => return None,
                Kind::Other => rest.push(glob),
            }
            if matches!(kind, Kind::Prefix(_) | Kind::Suffix(_) | Kind::Infix(_)) {
                simple_globs.push(glob);
            }
        }
        let rest = Rest::build(&rest);
        let literals = Literals::build(&literals);
        let bytes: usize = [&prefixes, &suffixes, &infixes].iter().flat_map(|v| v.iter()).map(|p| p.len()).sum();
        if bytes > max_simple || simple_globs.is_empty() {
            let index = (!simple_globs.is_empty()).then(|| SegmentIndex::build(simple_globs.iter().map(|g| (*g, 0))));
            let simple = Simple::Index(index);
            return Some(Shortcut { literals, simple, rest, caches: Mutex::new(Vec::new()), poor: AtomicBool::new(false) });
        }
        // A prefix may end the name, or not; a suffix ends it anywhere after
        // the start; an infix lies anywhere. With the search stopping at its
        // first match, a prefix or an infix is decided where it ends.
        let mut branches = Vec::new();
        if let Some(p) = alternation(&prefixes, loose) {
            branches.push(p);
        }
        let floating: Vec<String> = [alternation(&suffixes, loose).map(|s| format!("{s}$")), alternation(&infixes, loose)]
            .into_iter()
            .flatten()
            .collect();
        if !floating.is_empty() {
            branches.push(format!("(?s:.)*?(?:{})", floating.join("|")));
        }
        let pattern = format!("(?s-u)^(?:{})", branches.join("|"));
        let simple = Simple::Automaton(build_automaton(pattern, cache_bytes)?);
        Some(Shortcut { literals, simple, rest, caches: Mutex::new(Vec::new()), poor: AtomicBool::new(false) })
    }

    /// A cache for one thread's batch: one a batch before kept, or a new
    /// one; `None` once the shortcut was set aside.
    pub fn take_cache(&self) -> Option<Held> {
        self.take(true)
    }

    /// [`take_cache`](Self::take_cache), but only a cache that a batch
    /// before kept (its states made already), or none needed: `None` where
    /// the automaton would start cold.
    pub fn take_warm_cache(&self) -> Option<Held> {
        self.take(false)
    }

    fn take(&self, cold: bool) -> Option<Held> {
        if self.poor.load(Ordering::Relaxed) {
            return None;
        }
        let Simple::Automaton(dfa) = &self.simple else { return Some(Held { cache: None, clears: 0 }) };
        // `try_lock`: a cache is only worth a wait-free look (and a child
        // forked while another thread held the lock must not wait forever).
        let kept = self.caches.try_lock().ok().and_then(|mut caches| caches.pop());
        let cache = match kept {
            Some(cache) => cache,
            None if cold => dfa.create_cache(),
            None => return None,
        };
        Some(Held { clears: cache.clear_count(), cache: Some(cache) })
    }

    /// Keeps a cache for the next batch (up to [`KEPT_CACHES`]).
    pub fn give_back(&self, held: Held) {
        let Some(cache) = held.cache else { return };
        if let Ok(mut caches) = self.caches.try_lock() {
            if caches.len() < KEPT_CACHES && !self.poor.load(Ordering::Relaxed) {
                caches.push(cache);
            }
        }
    }

    /// Whether the automaton matches `s`, or `None` when it gave up or its
    /// cache overflowed: the caller asks the index instead, and stops using
    /// the shortcut.
    #[inline]
    fn automaton_match(&self, dfa: &DFA, s: &[u8], held: &mut Held) -> Option<bool> {
        let cache = held.cache.as_mut()?;
        let input = Input::new(s).anchored(Anchored::Yes).earliest(true);
        let found = dfa.try_search_fwd(cache, &input).ok().map(|m| m.is_some());
        if found.is_none() || cache.clear_count() - held.clears >= MAX_CLEARS {
            self.poor.store(true, Ordering::Relaxed);
            return None;
        }
        found
    }

    /// Whether a prefix, suffix or infix glob matches `s`.
    #[inline]
    fn simple_match(&self, s: &[u8], held: &mut Held, scratch: &mut Scratch) -> Option<bool> {
        match &self.simple {
            Simple::Automaton(dfa) => self.automaton_match(dfa, s, held),
            Simple::Index(index) => Some(index.as_ref().is_some_and(|index| index.any_match(s, scratch))),
        }
    }

    /// Whether a glob of the group matches `s` (at most [`SHORT`] bytes,
    /// folded already for a loose group): `None` when the automaton gave up.
    #[inline]
    pub fn any_match(&self, s: &[u8], held: &mut Held, scratch: &mut Scratch) -> Option<bool> {
        debug_assert!(s.len() <= SHORT);
        if self.literals.holds(s) || self.simple_match(s, held, scratch)? {
            return Some(true);
        }
        Some(self.rest.as_ref().is_some_and(|rest| rest.any_match(s, scratch)))
    }

    /// [`any_match`](Self::any_match) of a loose group against the fold of
    /// `name`: an ASCII name is read as it is (see the module).
    #[inline]
    pub fn any_match_loose(&self, name: &mut LazyFold<'_>, held: &mut Held, scratch: &mut Scratch) -> Option<bool> {
        let raw = name.raw();
        if !raw.is_ascii() {
            return self.any_match(name.get(), held, scratch);
        }
        debug_assert!(raw.len() <= SHORT);
        // ASCII folds byte for byte: the fold's length and tips are these.
        if self.literals.may_hold(raw.len(), Tips::of(raw, loose_ascii)) && self.literals.set.contains(name.get()) {
            return Some(true);
        }
        let simple = match &self.simple {
            Simple::Automaton(dfa) => self.automaton_match(dfa, raw, held)?,
            Simple::Index(index) => index.as_ref().is_some_and(|index| index.any_match_loose(name, scratch)),
        };
        if simple {
            return Some(true);
        }
        Some(self.rest.as_ref().is_some_and(|rest| rest.any_match_loose(name, scratch)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Fold;

    /// The bytes whose loose fold is `b`.
    fn loose_class_of(b: u8) -> Vec<u8> {
        (0..128u8).filter(|&x| loose_ascii(x) == b).collect()
    }

    /// The classes the loose automaton reads an ASCII byte as are those of
    /// its fold: a change to the fold that the classes do not follow fails.
    #[test]
    fn loose_classes_are_the_fold() {
        for b in 0..128u8 {
            let mut pattern = String::from("(?s-u)^");
            push_literal(&mut pattern, &[b], true);
            pattern.push('$');
            let re = regex::bytes::Regex::new(&pattern).unwrap();
            let class: Vec<u8> = (0..=255u8).filter(|&x| re.is_match(&[x])).collect();
            // A folded glob holds no byte that folds to another: those have no class.
            if loose_ascii(b) == b {
                assert_eq!(class, loose_class_of(b), "byte {b:#x}");
            }
        }
    }

    fn naive(globs: &[Vec<u8>], s: &[u8]) -> bool {
        globs.iter().any(|g| crate::glob::SegmentGlob::new(g).is_match(s))
    }

    /// Checks the shortcut of `globs` (exact and loose) against each glob
    /// on its own; false when the globs have none.
    fn check(globs: &[Vec<u8>], names: &[Vec<u8>]) -> bool {
        check_with(globs, names, MAX_SIMPLE_BYTES) && check_with(globs, names, 0)
    }

    /// [`check`] with the automaton for at most `max_simple` bytes.
    fn check_with(globs: &[Vec<u8>], names: &[Vec<u8>], max_simple: usize) -> bool {
        let build = |globs: &[Vec<u8>], loose| Shortcut::build_with(globs.iter().map(Vec::as_slice), loose, CACHE_BYTES, max_simple);
        let Some(cut) = build(globs, false) else { return false };
        assert_eq!(matches!(cut.simple, Simple::Automaton(_)), max_simple > 0 && globs.iter().any(|g| matches!(classify(g), Kind::Prefix(_) | Kind::Suffix(_) | Kind::Infix(_))));
        let mut cache = cut.take_cache().unwrap();
        let mut scratch = Scratch::default();
        for name in names {
            assert_eq!(cut.any_match(name, &mut cache, &mut scratch), Some(naive(globs, name)), "{globs:?} on {name:?}");
        }
        cut.give_back(cache);
        // Loose: the globs folded, each name read through the fold.
        let folded: Vec<Vec<u8>> = globs.iter().map(|g| Fold::Loose.apply(g)).collect();
        let cut = build(&folded, true).expect("folding keeps a glob's kind");
        let mut cache = cut.take_cache().unwrap();
        for name in names {
            let mut buf = Vec::new();
            let mut lazy = LazyFold::new(name, &mut buf);
            let want = naive(&folded, &Fold::Loose.apply(name));
            assert_eq!(cut.any_match_loose(&mut lazy, &mut cache, &mut scratch), Some(want), "{folded:?} on {name:?}");
        }
        true
    }

    #[test]
    fn random_sets_agree_with_each_glob() {
        let mut next = crate::test_rng::below(0x5DEE_CE66_D1CE_4E5B);
        let alphabet: [&[u8]; 9] = [b"a", b"A", b"b", b"_", b"-", b".", b"*", "\u{130}".as_bytes(), b"\0"];
        let pick = |next: &mut dyn FnMut(u64) -> u64, len: u64, stars: bool| -> Vec<u8> {
            let mut out = Vec::new();
            for _ in 0..next(len) {
                let k = next(alphabet.len() as u64) as usize;
                if !stars && alphabet[k] == b"*" {
                    continue;
                }
                out.extend_from_slice(alphabet[k]);
            }
            out
        };
        let mut checked = 0;
        for _ in 0..3_000 {
            let globs: Vec<Vec<u8>> = (0..1 + next(9)).map(|_| pick(&mut next, 6, true)).collect();
            let names: Vec<Vec<u8>> = (0..12).map(|_| pick(&mut next, 9, false)).collect();
            checked += usize::from(check(&globs, &names));
        }
        // Sets with a glob of only stars, or no simple glob, have none.
        assert!(checked > 1_000, "{checked}");
    }

    #[test]
    fn each_kind_of_glob() {
        let globs: Vec<Vec<u8>> =
            ["create_issue", "list_*", "*_v2", "*pull*", "get*by*id", "*a*b*", "x*y"].iter().map(|g| g.as_bytes().to_vec()).collect();
        let names: Vec<Vec<u8>> = [
            "create_issue", "create_issues", "list_", "lis", "read_v2", "v2", "open_pull_request", "get_user_by_id",
            "get_id", "zazbz", "xy", "x_y", "", "CREATE-ISSUE", "List.Files", "Read.V2", "Get-Repo-By-Id",
        ]
        .iter()
        .map(|n| n.as_bytes().to_vec())
        .collect();
        assert!(check(&globs, &names));
    }

    /// A cache too small for the states a batch's names need is cleared
    /// again and again: the shortcut then answers `None` (the caller asks
    /// the index) and is set aside for good, its caches no longer kept.
    #[test]
    fn an_overflowing_cache_sets_the_shortcut_aside() {
        let globs: Vec<Vec<u8>> = (0..300).map(|i| format!("w{i}_{}*", i * 7919 % 1000).into_bytes()).collect();
        let cut = Shortcut::build_with(globs.iter().map(Vec::as_slice), false, 1 << 16, MAX_SIMPLE_BYTES).unwrap();
        let mut held = cut.take_cache().unwrap();
        let mut scratch = Scratch::default();
        let mut answered = 0;
        for i in 0..20_000u32 {
            let name = format!("w{}_{}{}", i % 300, i.wrapping_mul(2_654_435_761) % 1000, i);
            match cut.any_match(name.as_bytes(), &mut held, &mut scratch) {
                Some(found) => {
                    assert_eq!(found, naive(&globs, name.as_bytes()), "{name}");
                    answered += 1;
                }
                None => break,
            }
        }
        assert!(answered > 100 && answered < 20_000, "{answered}");
        assert!(cut.take_cache().is_none());
        cut.give_back(held);
        assert!(cut.caches.lock().unwrap().is_empty());
    }

    /// Prefix globs that each extend the one before branch at every depth:
    /// the deepest trie the cap on their bytes allows still builds, and
    /// answers as each glob does.
    #[test]
    fn a_trie_that_branches_at_every_depth() {
        let globs: Vec<Vec<u8>> = (1..200).flat_map(|i| [format!("{}b*", "a".repeat(i)), format!("*{}c", "a".repeat(i))]).map(String::into_bytes).collect();
        assert!(globs.iter().map(Vec::len).sum::<usize>() <= MAX_SIMPLE_BYTES);
        let names: Vec<Vec<u8>> = [0, 1, 5, 150, 198, 199, 200].iter().flat_map(|&i| {
            let a = "a".repeat(i);
            [format!("{a}b"), format!("{a}bx"), format!("{a}c"), format!("x{a}c"), a]
        }).map(String::into_bytes).collect();
        let cut = Shortcut::build(globs.iter().map(Vec::as_slice), false).unwrap();
        assert!(matches!(cut.simple, Simple::Automaton(_)));
        assert!(check(&globs, &names));
    }

    /// The deepest trie compiles whatever the stack of the thread that
    /// first needs it (the automaton's compiler recurses a level of nesting
    /// at a time, and has a thread of its own).
    #[test]
    fn the_deepest_trie_compiles_on_a_small_stack() {
        let globs: Vec<Vec<u8>> = (1..200).flat_map(|i| [format!("{}b*", "a".repeat(i)), format!("*{}c", "a".repeat(i))]).map(String::into_bytes).collect();
        let small = std::thread::Builder::new().stack_size(128 << 10);
        let built = small.spawn(move || Shortcut::build(globs.iter().map(Vec::as_slice), true).map(|cut| matches!(cut.simple, Simple::Automaton(_))));
        assert_eq!(built.unwrap().join().unwrap(), Some(true));
    }

    #[test]
    fn a_group_that_matches_everything_has_none() {
        assert!(Shortcut::build([&b"a*"[..], b"**"], false).is_none());
    }
}
