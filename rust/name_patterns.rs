//! Name patterns: the globs of MCP's list filters (`namePatterns`,
//! `uriPatterns`). `*` matches any run of characters (none included), `?`
//! exactly one character, and every other character is itself, compared
//! exactly (case-sensitive, no fold). A pattern is anchored at both ends.
//!
//! Strings are generalized UTF-8 (see the crate's docs), and a *character*
//! is a lead byte with the continuation bytes (`10xxxxxx`) that follow it:
//! one code point, a lone surrogate included. Other bytes are matched by the
//! same rule, so nothing panics and forward and backward walks agree.
//!
//! One glob is split at its stars into segments, each a fixed number of
//! characters (literals and `?`). The first segment must match at the start,
//! the last at the end (found by walking back its number of characters), and
//! each middle one is taken at its leftmost place after the one before:
//! with segments of fixed length that is always safe (a later place leaves
//! less room for what follows), so nothing backtracks. A literal middle is
//! found by `memmem`; one holding `?` by a bit-parallel scan (shift-and)
//! over the characters, a few machine words a character. Each middle's scan
//! starts where the previous one ended, so a match reads the name once:
//! `*?a*?a*…*?b` against a hundred thousand `a`s costs one pass, not a
//! pass per star.
//!
//! A set of globs ([`NamePatterns`]) is flat in its size for the common
//! ones: the globs without `?` go into a [`SegmentIndex`] (tries and one
//! Aho-Corasick scan for all of them), and a glob with `?` is filed there
//! under its widening (each `?` read as `*`, which every name it matches
//! also matches) and verified only when that key hits.

use std::ops::ControlFlow;

use memchr::memmem::Finder;

use crate::index::{Scratch, SegmentIndex};

#[inline]
const fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The end of the character that starts at `at` (`at < s.len()`).
#[inline]
fn char_end(s: &[u8], at: usize) -> usize {
    let mut end = at + 1;
    while end < s.len() && is_continuation(s[end]) {
        end += 1;
    }
    end
}

/// Where the `count` characters that end at `end` start; None when fewer
/// than `count` characters come before `end`.
fn chars_back(s: &[u8], end: usize, count: usize) -> Option<usize> {
    let mut at = end;
    for _ in 0..count {
        if at == 0 {
            return None;
        }
        at -= 1;
        while at > 0 && is_continuation(s[at]) {
            at -= 1;
        }
    }
    Some(at)
}

/// Whether a character boundary lies at `at`: a character starts there, or
/// the string ends.
#[inline]
fn boundary(s: &[u8], at: usize) -> bool {
    at == 0 || at >= s.len() || !is_continuation(s[at])
}

/// A run of characters between stars: each one literal, or `?`.
#[derive(Clone, Debug)]
struct Segment {
    /// The segment's bytes, as written.
    bytes: Vec<u8>,
    /// Each character: the byte range of a literal in `bytes`, or None for `?`.
    chars: Vec<Option<(usize, usize)>>,
    /// How it is found in the middle of a string.
    search: Search,
}

#[derive(Clone, Debug)]
enum Search {
    /// Not searched (the first or the last segment).
    None,
    /// No `?`: the bytes, by `memmem`.
    Literal(Box<Finder<'static>>),
    /// With `?`: shift-and over the characters.
    Masks(Box<Masks>),
}

/// Shift-and tables: bit `i` of a character's mask is set when the
/// segment's character `i` is that character or `?`.
#[derive(Clone, Debug)]
struct Masks {
    words: usize,
    /// The mask of a character the segment does not hold: its `?`s.
    any: Vec<u64>,
    /// The masks of the segment's literal characters, sorted by bytes.
    by_char: Vec<(Vec<u8>, Vec<u64>)>,
}

impl Masks {
    fn build(segment: &Segment) -> Self {
        let words = segment.chars.len().div_ceil(64);
        let mut any = vec![0u64; words];
        for (i, slot) in segment.chars.iter().enumerate() {
            if slot.is_none() {
                any[i / 64] |= 1 << (i % 64);
            }
        }
        let mut by_char: Vec<(Vec<u8>, Vec<u64>)> = Vec::new();
        for (i, slot) in segment.chars.iter().enumerate() {
            let Some((from, to)) = *slot else { continue };
            let key = &segment.bytes[from..to];
            let at = match by_char.binary_search_by(|(k, _)| k.as_slice().cmp(key)) {
                Ok(at) => at,
                Err(at) => {
                    by_char.insert(at, (key.to_vec(), any.clone()));
                    at
                }
            };
            by_char[at].1[i / 64] |= 1 << (i % 64);
        }
        Masks { words, any, by_char }
    }

    fn of(&self, character: &[u8]) -> &[u64] {
        match self.by_char.binary_search_by(|(k, _)| k.as_slice().cmp(character)) {
            Ok(at) => &self.by_char[at].1,
            Err(_) => &self.any,
        }
    }
}

impl Segment {
    fn new(bytes: &[u8]) -> Self {
        let mut chars = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = char_end(bytes, at);
            chars.push(if bytes[at..end] == *b"?" { None } else { Some((at, end)) });
            at = end;
        }
        Segment { bytes: bytes.to_vec(), chars, search: Search::None }
    }

    fn searched(mut self) -> Self {
        self.search = if self.chars.iter().all(Option::is_some) {
            Search::Literal(Box::new(Finder::new(&self.bytes).into_owned()))
        } else {
            Search::Masks(Box::new(Masks::build(&self)))
        };
        self
    }

    /// The end of this segment matched at `at`, or None.
    fn match_at(&self, s: &[u8], mut at: usize) -> Option<usize> {
        for slot in &self.chars {
            if at >= s.len() {
                return None;
            }
            let end = char_end(s, at);
            if let Some((from, to)) = *slot {
                if s[at..end] != self.bytes[from..to] {
                    return None;
                }
            }
            at = end;
        }
        Some(at)
    }

    /// The end of the leftmost match that starts at or after `from` and
    /// ends at or before `limit` (both character boundaries), or None.
    fn find(&self, s: &[u8], from: usize, limit: usize) -> Option<usize> {
        match &self.search {
            Search::None => unreachable!("only middle segments are searched"),
            Search::Literal(finder) => {
                let mut start = from;
                while start <= limit {
                    let found = start + finder.find(&s[start..limit])?;
                    let end = found + self.bytes.len();
                    // Only strings that are not generalized UTF-8 can match
                    // off a character boundary.
                    if boundary(s, found) && boundary(s, end) {
                        return Some(end);
                    }
                    start = found + 1;
                }
                None
            }
            Search::Masks(masks) => {
                let last = self.chars.len() - 1;
                let (word, bit) = (last / 64, 1u64 << (last % 64));
                let mut state = vec![0u64; masks.words];
                let mut at = from;
                while at < limit {
                    let end = char_end(s, at);
                    let mask = masks.of(&s[at..end]);
                    // state = ((state << 1) | 1) & mask, over the words.
                    let mut carry = 1u64;
                    for (w, m) in state.iter_mut().zip(mask) {
                        let next = *w >> 63;
                        *w = ((*w << 1) | carry) & m;
                        carry = next;
                    }
                    if state[word] & bit != 0 {
                        return Some(end);
                    }
                    at = end;
                }
                None
            }
        }
    }
}

/// One compiled name pattern.
#[derive(Clone, Debug)]
pub struct NameGlob {
    first: Segment,
    middles: Vec<Segment>,
    /// The segment after the last star; None without a star.
    last: Option<Segment>,
}

impl NameGlob {
    pub fn new(pattern: &[u8]) -> Self {
        let mut pieces = pattern.split(|&b| b == b'*');
        let first = Segment::new(pieces.next().unwrap_or_default());
        let Some(mut last) = pieces.next() else {
            return NameGlob { first, middles: Vec::new(), last: None };
        };
        // Runs of stars leave empty pieces, dropped as they come.
        let mut middles = Vec::new();
        for piece in pieces {
            if !last.is_empty() {
                middles.push(Segment::new(last).searched());
            }
            last = piece;
        }
        NameGlob { first, middles, last: Some(Segment::new(last)) }
    }

    /// Whether the pattern matches the whole of `s`.
    pub fn is_match(&self, s: &[u8]) -> bool {
        let Some(start) = self.first.match_at(s, 0) else { return false };
        let Some(last) = &self.last else { return start == s.len() };
        let Some(tail) = chars_back(s, s.len(), last.chars.len()) else { return false };
        if tail < start || last.match_at(s, tail) != Some(s.len()) {
            return false;
        }
        let mut at = start;
        for middle in &self.middles {
            match middle.find(s, at, tail) {
                Some(end) => at = end,
                None => return false,
            }
        }
        true
    }
}

/// The pattern with each `?` read as `*`: it matches every string the
/// pattern matches (and more), so it can key the pattern in an index.
fn widened(pattern: &[u8]) -> Vec<u8> {
    pattern.iter().map(|&b| if b == b'?' { b'*' } else { b }).collect()
}

/// A set of name patterns, answering whether any matches a string.
#[derive(Clone, Debug, Default)]
pub struct NamePatterns {
    /// The patterns without `?`: plain segment globs.
    plain: SegmentIndex,
    /// The patterns with `?`, keyed by their widening; id `i` is `questioned[i]`.
    widened: SegmentIndex,
    questioned: Vec<NameGlob>,
    count: usize,
}

impl NamePatterns {
    pub fn new<'a, I>(patterns: I) -> Self
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let (mut plain, mut keys, mut questioned) = (Vec::new(), Vec::new(), Vec::new());
        for pattern in patterns {
            if pattern.contains(&b'?') {
                keys.push(widened(pattern));
                questioned.push(NameGlob::new(pattern));
            } else {
                plain.push(pattern);
            }
        }
        let count = plain.len() + questioned.len();
        let numbered = |i: usize| u32::try_from(i).expect("fewer than 2^32 patterns");
        NamePatterns {
            plain: SegmentIndex::build(plain.iter().enumerate().map(|(i, p)| (*p, numbered(i)))),
            widened: SegmentIndex::build(keys.iter().enumerate().map(|(i, k)| (k.as_slice(), numbered(i)))),
            questioned,
            count,
        }
    }

    /// How many patterns the set holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether any pattern of the set matches the whole of `s`.
    pub fn is_match(&self, s: &[u8], scratch: &mut Scratch) -> bool {
        if self.plain.any_match(s, scratch) {
            return true;
        }
        let questioned = &self.questioned;
        self.widened
            .for_each_match(s, scratch, &mut |id| {
                if questioned[id as usize].is_match(s) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .is_break()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::Config;

    /// Generalized UTF-8 of code points (surrogates as three bytes).
    fn encode(cps: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &cp in cps {
            crate::wtf8::push_code_point(&mut out, cp);
        }
        out
    }

    /// Anchored match over code points: `reach[j]` is whether the pattern so
    /// far can match `text[..j]`. Quadratic and obviously right.
    fn naive(pattern: &[u32], text: &[u32]) -> bool {
        let (star, one) = ('*' as u32, '?' as u32);
        let mut reach = vec![false; text.len() + 1];
        reach[0] = true;
        for &p in pattern {
            let mut next = vec![false; text.len() + 1];
            for j in 0..=text.len() {
                if p == star {
                    next[j] = reach[j] || (j > 0 && next[j - 1]);
                } else if j > 0 && reach[j - 1] && (p == one || text[j - 1] == p) {
                    next[j] = true;
                }
            }
            reach = next;
        }
        reach[text.len()]
    }

    fn one(pattern: &str, name: &str) -> bool {
        NameGlob::new(pattern.as_bytes()).is_match(name.as_bytes())
    }

    fn any_of(patterns: &[&str], name: &[u8]) -> bool {
        let set = NamePatterns::new(patterns.iter().map(|p| p.as_bytes()));
        set.is_match(name, &mut Scratch::default())
    }

    #[test]
    fn the_glob_language() {
        let cases: &[(&str, &str, bool)] = &[
            ("", "", true),
            ("", "a", false),
            ("*", "", true),
            ("*", "anything at all", true),
            ("?", "", false),
            ("?", "a", true),
            ("?", "ab", false),
            ("?", "é", true),
            ("?", "😀", true),
            ("??", "é", false),
            ("git_*", "git_commit", true),
            ("git_*", "Git_commit", false),
            ("*_issue", "create_issue", true),
            ("get_?", "get_x", true),
            ("get_?", "get_xy", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*?", "", false),
            ("*?", "x", true),
            ("?*?", "x", false),
            ("?*?", "xy", true),
            ("a*b?d*e", "abxd--e", true),
            ("a*b?d*e", "abxde", true),
            ("a*b?d*e", "abde", false),
            ("*a?a*", "bab", false),
            ("*a?a*", "baxab", true),
            ("ab*ba", "aba", false),
            ("ab*ba", "abba", true),
            ("*.txt", "notes.txt", true),
            ("file:///src/*", "file:///src/a/b", true),
            ("a\0?", "a\0b", true),
        ];
        for &(pattern, name, want) in cases {
            assert_eq!(one(pattern, name), want, "{pattern:?} ~ {name:?}");
            assert_eq!(any_of(&[pattern], name.as_bytes()), want, "set {pattern:?} ~ {name:?}");
        }
    }

    #[test]
    fn a_lone_surrogate_is_one_character() {
        let name = encode(&[0x61, 0xD800, 0x62]);
        assert!(NameGlob::new(b"a?b").is_match(&name));
        assert!(!NameGlob::new(b"a??b").is_match(&name));
        assert!(any_of(&["*?b"], &name));
    }

    #[test]
    fn many_stars_cost_one_pass() {
        // Exponential for a backtracking matcher; one pass here (this test
        // finishing is the check).
        let name = vec![b'a'; 100_000];
        let pattern = format!("{}b", "*?a".repeat(100));
        assert!(!NameGlob::new(pattern.as_bytes()).is_match(&name));
        let patterns: Vec<String> = (0..100).map(|i| format!("{}{}*b", "*a?".repeat(40), i % 7)).collect();
        let set = NamePatterns::new(patterns.iter().map(String::as_bytes));
        assert!(!set.is_match(&name, &mut Scratch::default()));
        let mut hit = name.clone();
        hit.push(b'b');
        assert!(NameGlob::new(pattern.as_bytes()).is_match(&hit));
    }

    #[test]
    fn bytes_that_are_not_utf8_do_not_panic() {
        let odd: [&[u8]; 5] = [b"\x80\x80", b"\xff?", b"a\xc3", b"\xc3\xa9\x80", b"*\x80*"];
        for pattern in odd {
            for name in odd {
                let _ = NameGlob::new(pattern).is_match(name);
                let _ = NamePatterns::new([pattern]).is_match(name, &mut Scratch::default());
            }
        }
    }

    fn config(cases: u32) -> Config {
        Config { cases, failure_persistence: None, ..Config::default() }
    }

    /// A code point from a small alphabet (so patterns hit) or a hostile one.
    fn cp() -> impl Strategy<Value = u32> {
        prop_oneof![
            4 => proptest::sample::select(vec!['a' as u32, 'b' as u32, '_' as u32]),
            2 => proptest::sample::select(vec!['*' as u32, '?' as u32]),
            1 => proptest::sample::select(vec![0, '/' as u32, ':' as u32, 0xE9, 0x130, 0x3A3, 0x212A, 0xD800, 0xDFFF, 0x1F600]),
        ]
    }

    fn text() -> impl Strategy<Value = Vec<u32>> {
        proptest::collection::vec(cp().prop_filter("no metacharacter", |&c| c != '*' as u32 && c != '?' as u32), 0..14)
    }

    proptest! {
        #![proptest_config(config(3_000))]

        #[test]
        fn one_glob_agrees_with_the_naive_matcher(
            pattern in proptest::collection::vec(cp(), 0..10), name in text(),
        ) {
            let want = naive(&pattern, &name);
            prop_assert_eq!(NameGlob::new(&encode(&pattern)).is_match(&encode(&name)), want);
        }

        #[test]
        fn a_set_agrees_with_any_of_its_globs(
            patterns in proptest::collection::vec(proptest::collection::vec(cp(), 0..8), 0..8),
            names in proptest::collection::vec(text(), 1..6),
        ) {
            let encoded: Vec<Vec<u8>> = patterns.iter().map(|p| encode(p)).collect();
            let set = NamePatterns::new(encoded.iter().map(Vec::as_slice));
            prop_assert_eq!(set.len(), patterns.len());
            let mut scratch = Scratch::default();
            for name in &names {
                let want = patterns.iter().any(|p| naive(p, name));
                prop_assert_eq!(set.is_match(&encode(name), &mut scratch), want);
            }
        }

        #[test]
        fn long_segments_with_question_marks(
            // Segments longer than one machine word of the shift-and.
            body in proptest::collection::vec(proptest::sample::select(vec!['a' as u32, '?' as u32, 'b' as u32]), 60..140),
            extra in proptest::collection::vec(proptest::sample::select(vec!['a' as u32, 'b' as u32]), 0..30),
        ) {
            let mut pattern = vec!['*' as u32];
            pattern.extend(&body);
            pattern.push('*' as u32);
            pattern.push('b' as u32);
            let mut name: Vec<u32> = extra.clone();
            name.extend(body.iter().map(|&c| if c == '?' as u32 { 'a' as u32 } else { c }));
            name.extend(&extra);
            name.push('b' as u32);
            prop_assert!(naive(&pattern, &name));
            prop_assert!(NameGlob::new(&encode(&pattern)).is_match(&encode(&name)));
            let shorter = &name[1..];
            prop_assert_eq!(NameGlob::new(&encode(&pattern)).is_match(&encode(shorter)), naive(&pattern, shorter));
        }
    }
}
