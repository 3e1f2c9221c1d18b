//! Property-based fuzzing of the core against naive implementations written
//! here: a dynamic-programming glob matcher over code points, a fold that maps
//! one `char` at a time, and pattern sets that try every rule in turn.
//!
//! `cargo fuzz` needs a nightly toolchain; this runs on stable. Each property
//! draws a modest number of cases by default (CI) and
//! `TOOLFILTER_FUZZ_CASES=N cargo test --release --test fuzz_core` draws N.

use std::cell::RefCell;
use std::ops::ControlFlow;

use proptest::prelude::*;
use proptest::test_runner::Config;

use toolfilter_fast::filter::{flag, FlagScratch, Outcome, Side, StaticFilter};
use toolfilter_fast::fold::Fold;
use toolfilter_fast::glob::SegmentGlob;
use toolfilter_fast::index::{Scratch as IndexScratch, SegmentIndex, Sweeping};
use toolfilter_fast::rules::{PatternIssue, RuleSet, Scratch};

fn config(default_cases: u32) -> Config {
    let cases = std::env::var("TOOLFILTER_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    Config { cases, failure_persistence: None, ..Config::default() }
}

// --- the naive side ----------------------------------------------------------

/// Generalized UTF-8 of code points (surrogates as three bytes, like
/// Python's `surrogatepass`), written out here rather than borrowed from the core.
fn encode(cps: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &cp in cps {
        match cp {
            0..=0x7F => out.push(cp as u8),
            0x80..=0x7FF => out.extend([0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
            0x800..=0xFFFF => out.extend([
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            _ => out.extend([
                0xF0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3F) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
        }
    }
    out
}

/// Anchored match, `*` any run: `reach[j]` is whether the pattern so far can
/// match `text[..j]`. Quadratic and obviously right.
fn naive_glob<T: PartialEq + Copy>(pattern: &[T], text: &[T], star: T) -> bool {
    let mut reach = vec![false; text.len() + 1];
    reach[0] = true;
    for &p in pattern {
        if p == star {
            for j in 1..reach.len() {
                reach[j] = reach[j] || reach[j - 1];
            }
        } else {
            for j in (1..reach.len()).rev() {
                reach[j] = reach[j - 1] && text[j - 1] == p;
            }
            reach[0] = false;
        }
    }
    reach[text.len()]
}

const STAR: u32 = '*' as u32;

/// Each code point on its own to its lower-case; surrogates unchanged.
fn naive_fold(cps: &[u32], loose: bool) -> Vec<u32> {
    let mut out = Vec::new();
    for &cp in cps {
        match char::from_u32(cp) {
            Some(c) => out.extend(c.to_lowercase().map(|l| match l {
                '-' | '.' if loose => '_' as u32,
                other => other as u32,
            })),
            None => out.push(cp),
        }
    }
    out
}

/// The fold of arbitrary bytes: valid UTF-8 runs lower-cased per `char`,
/// everything else (surrogate encodings, stray bytes) copied through.
fn naive_fold_bytes(bytes: &[u8], loose: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            for l in c.to_lowercase() {
                let l = if loose && (l == '-' || l == '.') { '_' } else { l };
                out.extend(l.to_string().as_bytes());
            }
        }
        out.extend(chunk.invalid());
    }
    out
}

/// A string pattern's segments, or why it is refused.
fn naive_split(pattern: &[u32]) -> Result<(Vec<u32>, Vec<u32>), PatternIssue> {
    if pattern.is_empty() {
        return Err(PatternIssue::EmptyPattern);
    }
    let Some(slash) = pattern.iter().position(|&c| c == '/' as u32) else {
        return Ok((vec![STAR], pattern.to_vec()));
    };
    let (server, tool) = (&pattern[..slash], &pattern[slash + 1..]);
    if server.is_empty() {
        return Err(PatternIssue::EmptyServer);
    }
    if server.contains(&(':' as u32)) {
        return Err(PatternIssue::ColonInServer);
    }
    if tool.is_empty() {
        return Err(PatternIssue::EmptyTool);
    }
    Ok((server.to_vec(), tool.to_vec()))
}

fn segment_matches(glob: &[u32], text: &[u32], loose: bool) -> bool {
    if loose {
        naive_glob(&naive_fold(glob, true), &naive_fold(text, true), STAR)
    } else {
        naive_glob(glob, text, STAR)
    }
}

/// The first rule matching the pair, or the first refused pattern.
fn naive_first(
    patterns: &[Vec<u32>],
    loose: bool,
    server: &[u32],
    tool: &[u32],
) -> Result<Option<usize>, (usize, PatternIssue)> {
    let rules: Vec<_> =
        patterns.iter().enumerate().map(|(i, p)| naive_split(p).map_err(|e| (i, e))).collect::<Result<_, _>>()?;
    Ok(rules
        .iter()
        .position(|(s, t)| segment_matches(s, server, loose) && segment_matches(t, tool, loose)))
}

// --- strategies ----------------------------------------------------------------

/// Characters that make trouble: case pairs, separators and metacharacters,
/// letters whose lower-case is surprising (dotted I, sigma, Kelvin, sharp s,
/// Deseret), a combining mark, zero-width and bidi controls, noncharacters,
/// an unassigned code point, lone surrogates and the replacement character.
const HOSTILE: &[u32] = &[
    'a' as u32, 'A' as u32, 'b' as u32, 'B' as u32, 'i' as u32, 'k' as u32, 'K' as u32, '*' as u32,
    '-' as u32, '.' as u32, '_' as u32, '/' as u32, ':' as u32, 0, 0x130, 0x307, 0x3A3, 0x3C3, 0x3C2,
    0x212A, 0xDF, 0x1E9E, 0xE9, 0xC9, 0x301, 0x200B, 0x200D, 0x202E, 0xFEFF, 0xFFFE, 0xFFFF,
    0x378, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xFFFD, 0x10400, 0x10428, 0x1F600, 0x10FFFF,
];

fn hostile_cp() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => proptest::sample::select(HOSTILE),
        1 => 0u32..=0x10FFFF,
    ]
}

fn text(max: usize) -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(hostile_cp(), 0..=max)
}

/// A tiny alphabet, so that keys collide and every index strategy is used.
const SMALL: &[u32] = &['a' as u32, 'b' as u32, 'A' as u32, '*' as u32, '_' as u32, '-' as u32, 0x3A3, 0x3C3, 0xD800];

fn small_text(min: usize, max: usize) -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(proptest::sample::select(SMALL), min..=max)
}

/// Patterns for rule sets: mostly well formed, some refused.
fn rule_pattern() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        4 => (small_text(1, 4), small_text(1, 5)).prop_map(|(mut s, t)| {
            s.retain(|&c| c != '/' as u32);
            if s.is_empty() { s.push(STAR); }
            s.push('/' as u32);
            s.extend(t);
            s
        }),
        2 => small_text(1, 5),
        1 => text(6),
        1 => proptest::sample::select(vec![
            vec![STAR], vec![STAR, '/' as u32, STAR], vec!['/' as u32, 'a' as u32],
            vec!['a' as u32, '/' as u32], vec!['a' as u32, ':' as u32, '/' as u32, 'b' as u32],
        ]),
    ]
}

thread_local! {
    /// One scratch reused by every query of a thread, as the binding does:
    /// leftovers of one query (or one index) must never leak into the next.
    static SHARED: RefCell<Scratch> = RefCell::new(Scratch::default());
    /// And ones that take the long names' paths on any name: the sweeps, and
    /// the tool matched across groups.
    static SHARED_LONG: [RefCell<Scratch>; 2] =
        [Sweeping::Middles, Sweeping::Whole].map(|what| RefCell::new(Scratch::always_sweeping(what)));
    static SHARED_FLAGS_LONG: [RefCell<FlagScratch>; 2] =
        [Sweeping::Middles, Sweeping::Whole].map(|what| RefCell::new(FlagScratch::always_sweeping(what)));
    static SHARED_INDEX: RefCell<IndexScratch> = RefCell::new(IndexScratch::default());
    /// Ones that leave candidates to the sweeps: middle pieces, or whole globs.
    static SHARED_MIDDLES: RefCell<IndexScratch> = RefCell::new(IndexScratch::always_sweeping(Sweeping::Middles));
    static SHARED_WHOLE: RefCell<IndexScratch> = RefCell::new(IndexScratch::always_sweeping(Sweeping::Whole));
    static SHARED_FLAGS: RefCell<FlagScratch> = RefCell::new(FlagScratch::default());
}

/// The index's matches, the same whether globs are verified one by one or by
/// a sweep (of middle pieces, or of whole globs); with its smallest and
/// whether there is one.
fn index_matches(index: &SegmentIndex, s: &[u8]) -> Vec<u32> {
    let [direct, middles, whole] = [&SHARED_INDEX, &SHARED_MIDDLES, &SHARED_WHOLE].map(|shared| {
        shared.with(|scratch| {
            let scratch = &mut scratch.borrow_mut();
            let mut got = Vec::new();
            let _ = index.for_each_match(s, scratch, &mut |id| {
                got.push(id);
                ControlFlow::Continue(())
            });
            got.sort_unstable();
            got.dedup();
            assert_eq!(index.min_match(s, scratch), got.first().copied());
            assert_eq!(index.any_match(s, scratch), !got.is_empty());
            got
        })
    });
    assert_eq!(direct, middles);
    assert_eq!(direct, whole);
    direct
}

/// A string of runs of `a` and single other characters: where pieces made of
/// `a`s end at every byte, as suffixes of each other.
fn runs(max_runs: usize) -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec((0usize..40, proptest::sample::select(&['b' as u32, 'A' as u32, '_' as u32][..])), 0..=max_runs)
        .prop_map(|runs| runs.into_iter().flat_map(|(n, c)| std::iter::repeat_n('a' as u32, n).chain([c])).collect())
}

// --- properties --------------------------------------------------------------

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn glob_equals_naive_on_code_points(pattern in text(10), name in text(12)) {
        let want = naive_glob(&pattern, &name, STAR);
        prop_assert_eq!(SegmentGlob::new(&encode(&pattern)).is_match(&encode(&name)), want);
    }

    #[test]
    fn glob_equals_naive_on_star_heavy_input(pattern in small_text(0, 24), name in small_text(0, 40)) {
        let want = naive_glob(&pattern, &name, STAR);
        prop_assert_eq!(SegmentGlob::new(&encode(&pattern)).is_match(&encode(&name)), want);
    }

    #[test]
    fn glob_equals_naive_on_arbitrary_bytes(
        pattern in proptest::collection::vec(prop_oneof![Just(b'*'), Just(b'a'), any::<u8>()], 0..12),
        name in proptest::collection::vec(prop_oneof![Just(b'a'), any::<u8>()], 0..16),
    ) {
        prop_assert_eq!(SegmentGlob::new(&pattern).is_match(&name), naive_glob(&pattern, &name, b'*'));
    }

    #[test]
    fn fold_equals_per_char_lowercase(cps in text(16)) {
        let bytes = encode(&cps);
        prop_assert_eq!(Fold::Loose.apply(&bytes), encode(&naive_fold(&cps, true)));
        prop_assert_eq!(Fold::Lower.apply(&bytes), encode(&naive_fold(&cps, false)));
    }

    #[test]
    fn fold_on_arbitrary_bytes_copies_what_does_not_decode(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
        prop_assert_eq!(Fold::Loose.apply(&bytes), naive_fold_bytes(&bytes, true));
        prop_assert_eq!(Fold::Lower.apply(&bytes), naive_fold_bytes(&bytes, false));
    }

    #[test]
    fn index_equals_each_glob_alone(
        globs in proptest::collection::vec(small_text(0, 7), 0..12),
        other in proptest::collection::vec(small_text(0, 5), 0..40),
        names in proptest::collection::vec(small_text(0, 10), 1..6),
    ) {
        let encoded: Vec<Vec<u8>> = globs.iter().map(|g| encode(g)).collect();
        let index = SegmentIndex::build(encoded.iter().enumerate().map(|(i, g)| (g.as_slice(), i as u32)));
        // A second, bigger index queried in between with the same scratch.
        let other_encoded: Vec<Vec<u8>> = other.iter().map(|g| encode(g)).collect();
        let other_index =
            SegmentIndex::build(other_encoded.iter().enumerate().map(|(i, g)| (g.as_slice(), i as u32)));
        for name in &names {
            let want: Vec<u32> =
                (0..globs.len() as u32).filter(|&i| naive_glob(&globs[i as usize], name, STAR)).collect();
            let bytes = encode(name);
            prop_assert_eq!(index_matches(&index, &bytes), want.clone());
            let other_want: Vec<u32> =
                (0..other.len() as u32).filter(|&i| naive_glob(&other[i as usize], name, STAR)).collect();
            prop_assert_eq!(index_matches(&other_index, &bytes), other_want);
        }
    }

    #[test]
    fn index_on_runs_equals_each_glob_alone(
        globs in proptest::collection::vec(proptest::collection::vec(
            proptest::sample::select(&['a' as u32, 'a' as u32, '*' as u32, 'b' as u32][..]), 0..12), 0..40),
        names in proptest::collection::vec(runs(8), 1..4),
    ) {
        let encoded: Vec<Vec<u8>> = globs.iter().map(|g| encode(g)).collect();
        let index = SegmentIndex::build(encoded.iter().enumerate().map(|(i, g)| (g.as_slice(), i as u32)));
        for name in &names {
            let want: Vec<u32> =
                (0..globs.len() as u32).filter(|&i| naive_glob(&globs[i as usize], name, STAR)).collect();
            prop_assert_eq!(index_matches(&index, &encode(name)), want);
        }
    }

    #[test]
    fn rule_sets_equal_trying_each_rule(
        patterns in proptest::collection::vec(rule_pattern(), 0..10),
        loose in any::<bool>(),
        pairs in proptest::collection::vec((small_text(0, 4), text(6)), 1..5),
    ) {
        let encoded: Vec<Vec<u8>> = patterns.iter().map(|p| encode(p)).collect();
        let set = RuleSet::compile(&encoded, loose.then_some(Fold::Loose));
        for (server, tool) in &pairs {
            let want = naive_first(&patterns, loose, server, tool);
            match (&set, want) {
                (Err(got), Err(want)) => prop_assert_eq!(*got, want),
                (Ok(set), Ok(want)) => {
                    let (s, t) = (encode(server), encode(tool));
                    let check = |scratch: &RefCell<Scratch>| {
                        let scratch = &mut scratch.borrow_mut();
                        prop_assert_eq!(set.first_match(&s, &t, scratch), want);
                        prop_assert_eq!(set.is_match(&s, &t, scratch), want.is_some());
                        Ok(())
                    };
                    SHARED.with(check)?;
                    SHARED_LONG.with(|long| long.iter().try_for_each(check))?;
                }
                (got, want) => prop_assert!(false, "compile {:?} but naive {:?}", got.as_ref().err(), want),
            }
        }
    }

    #[test]
    fn static_filter_equals_the_rules_spelled_out(
        include in proptest::collection::vec(rule_pattern(), 0..6),
        exclude in proptest::collection::vec(rule_pattern(), 0..6),
        include_regex in proptest::collection::vec(small_text(1, 3), 0..2),
        exclude_regex in proptest::collection::vec(small_text(1, 3), 0..2),
        include_fn in any::<bool>(),
        pairs in proptest::collection::vec((small_text(0, 4), small_text(0, 6)), 1..8),
        threads in 1usize..5,
    ) {
        let enc = |list: &[Vec<u32>]| list.iter().map(|p| encode(p)).collect::<Vec<_>>();
        let include_open = include_fn || (include.is_empty() && include_regex.is_empty());
        let compiled = StaticFilter::compile(
            &enc(&include), &enc(&exclude), &enc(&include_regex), &enc(&exclude_regex), include_open,
        );
        let first_error = |side, list: &[Vec<u32>]| {
            list.iter().enumerate().find_map(|(i, p)| naive_split(p).err().map(|e| (side, i, e)))
        };
        let want_error = first_error(Side::Include, &include).or_else(|| first_error(Side::Exclude, &exclude));
        let filter = match (compiled, want_error) {
            (Err(got), Some(want)) => { prop_assert_eq!(got, want); return Ok(()); }
            (Ok(filter), None) => filter,
            (got, want) => { prop_assert!(false, "compile {:?} but naive {:?}", got.err(), want); unreachable!() }
        };
        let mut encoded_pairs = Vec::new();
        let mut scalar = Vec::new();
        for (server, tool) in &pairs {
            let excluded = naive_first(&exclude, true, server, tool).unwrap().is_some();
            let included = naive_first(&include, false, server, tool).unwrap().is_some();
            let exclude_regex_applies = exclude_regex.iter().any(|g| segment_matches(g, server, true));
            let include_regex_applies = include_regex.iter().any(|g| segment_matches(g, server, false));
            // A regex's verdict is unknown to the core: the outcome is decided
            // only when every verdict the applicable regexes could give agrees.
            let mut answers = Vec::new();
            for excl_hit in [false, exclude_regex_applies] {
                for incl_hit in [false, include_regex_applies] {
                    answers.push(!excluded && !excl_hit && (include_open || included || incl_hit));
                }
            }
            let want = if answers.iter().all(|&v| v) {
                Outcome::Visible
            } else if answers.iter().all(|&v| !v) {
                Outcome::Hidden
            } else {
                Outcome::Undecided
            };
            let (s, t) = (encode(server), encode(tool));
            let bits = SHARED_FLAGS.with(|scratch| filter.flags(&s, &t, &mut scratch.borrow_mut()));
            SHARED_FLAGS_LONG.with(|long| {
                long.iter().try_for_each(|scratch| {
                    prop_assert_eq!(filter.flags(&s, &t, &mut scratch.borrow_mut()), bits);
                    Ok(())
                })
            })?;
            prop_assert_eq!(bits & flag::EXCLUDED != 0, excluded);
            if !excluded {
                prop_assert_eq!(bits & flag::INCLUDED != 0, included);
            }
            prop_assert_eq!(filter.outcome(bits), want);
            scalar.push(want);
            encoded_pairs.push((s, t));
        }
        let borrowed: Vec<(&[u8], &[u8])> = encoded_pairs.iter().map(|(s, t)| (s.as_slice(), t.as_slice())).collect();
        prop_assert_eq!(filter.outcomes(&borrowed, threads), scalar);
    }
}
