//! Segment globs: `*` matches any run of bytes (including none and including
//! `/`), everything else is literal, and a glob is anchored at both ends.
//!
//! Each glob is classified once into the cheapest strategy that is exactly
//! equivalent to it. The general case splits the glob at its stars into
//! literals and matches them greedily: the first literal must be a prefix, the
//! last a suffix, and each middle literal is taken at its leftmost occurrence
//! after the previous one. Leftmost is always safe with `*` as the only
//! metacharacter (any later placement leaves less room for what follows), so
//! there is no backtracking and matching is linear in the input:
//! `*a*a*a*…*b` against 100,000 `a`s does one forward scan per literal over a
//! shrinking tail, and fails at the suffix check before scanning at all.

use memchr::memmem::Finder;

/// A compiled segment glob.
#[derive(Clone, Debug)]
pub enum SegmentGlob {
    /// No star: whole-string equality.
    Literal(Vec<u8>),
    /// Only stars: matches everything, the empty string too.
    Any,
    /// `prefix*`.
    Prefix(Vec<u8>),
    /// `*suffix`.
    Suffix(Vec<u8>),
    /// `prefix*suffix`: both must fit without overlapping.
    PrefixSuffix { prefix: Vec<u8>, suffix: Vec<u8> },
    /// `*infix*`.
    Contains(Box<Finder<'static>>),
    /// Anything else: `prefix*m1*m2*…*suffix` (prefix and suffix may be
    /// empty), kept as the one glob of a [`GlobList`].
    General(GlobList),
}

/// The literal pieces of a glob, split at its stars.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobParts<'a> {
    pub prefix: &'a [u8],
    /// Non-empty literals between stars.
    pub middles: Vec<&'a [u8]>,
    pub suffix: &'a [u8],
    pub has_star: bool,
}

impl<'a> GlobParts<'a> {
    pub fn split(pattern: &'a [u8]) -> Self {
        let mut pieces = pattern.split(|&b| b == b'*');
        let prefix = pieces.next().unwrap_or_default();
        let Some(mut suffix) = pieces.next() else {
            return GlobParts { prefix, middles: Vec::new(), suffix: b"", has_star: false };
        };
        // Runs of stars leave empty pieces; they are dropped as they come, so
        // a pattern of ten million stars does not first collect ten million.
        let mut middles = Vec::new();
        for piece in pieces {
            if !suffix.is_empty() {
                middles.push(suffix);
            }
            suffix = piece;
        }
        GlobParts { prefix, middles, suffix, has_star: true }
    }
}

/// What an index needs of a glob to file it, found without allocating: the
/// prefix and suffix, the longest middle literal and how many there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobShape<'a> {
    pub prefix: &'a [u8],
    /// The longest non-empty literal between stars (the last of equal ones).
    pub longest_middle: &'a [u8],
    /// How many non-empty literals lie between stars.
    pub middles: usize,
    pub suffix: &'a [u8],
    pub has_star: bool,
}

/// The places of the `*`s of a glob, found eight bytes at a time (a glob is
/// short, and a call to `memchr` per star cost more than the scan).
struct Stars<'a> {
    pattern: &'a [u8],
    at: usize,
}

impl Iterator for Stars<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let p = self.pattern;
        while let Some(word) = p.get(self.at..self.at + 8) {
            let x = u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ (ONES * u64::from(b'*'));
            // The lowest marked byte is the first star (a borrow marks only
            // bytes above a star).
            let marks = x.wrapping_sub(ONES) & !x & HIGH;
            if marks != 0 {
                let star = self.at + (marks.trailing_zeros() / 8) as usize;
                self.at = star + 1;
                return Some(star);
            }
            self.at += 8;
        }
        let star = self.at + p[self.at..].iter().position(|&b| b == b'*')?;
        self.at = star + 1;
        Some(star)
    }
}

impl<'a> GlobShape<'a> {
    pub fn of(pattern: &'a [u8]) -> Self {
        let mut stars = Stars { pattern, at: 0 };
        let Some(first) = stars.next() else {
            return GlobShape { prefix: pattern, longest_middle: b"", middles: 0, suffix: b"", has_star: false };
        };
        let (mut start, mut longest_middle, mut middles) = (first + 1, &b""[..], 0);
        for star in stars {
            let piece = &pattern[start..star];
            if !piece.is_empty() {
                middles += 1;
                if piece.len() >= longest_middle.len() {
                    longest_middle = piece;
                }
            }
            start = star + 1;
        }
        GlobShape { prefix: &pattern[..first], longest_middle, middles, suffix: &pattern[start..], has_star: true }
    }
}

impl SegmentGlob {
    pub fn new(pattern: &[u8]) -> Self {
        let parts = GlobParts::split(pattern);
        if !parts.has_star {
            return SegmentGlob::Literal(pattern.to_vec());
        }
        let GlobParts { prefix, middles, suffix, .. } = parts;
        match (prefix.is_empty(), middles.len(), suffix.is_empty()) {
            (true, 0, true) => SegmentGlob::Any,
            (false, 0, true) => SegmentGlob::Prefix(prefix.to_vec()),
            (true, 0, false) => SegmentGlob::Suffix(suffix.to_vec()),
            (false, 0, false) => {
                SegmentGlob::PrefixSuffix { prefix: prefix.to_vec(), suffix: suffix.to_vec() }
            }
            (true, 1, true) => SegmentGlob::Contains(Box::new(Finder::new(middles[0]).into_owned())),
            _ => {
                let mut list = GlobList::default();
                list.push(pattern);
                SegmentGlob::General(list)
            }
        }
    }

    #[inline]
    pub fn is_match(&self, s: &[u8]) -> bool {
        match self {
            SegmentGlob::Literal(lit) => s.len() == lit.len() && starts_with(s, lit),
            SegmentGlob::Any => true,
            SegmentGlob::Prefix(p) => starts_with(s, p),
            SegmentGlob::Suffix(x) => ends_with(s, x),
            SegmentGlob::PrefixSuffix { prefix, suffix } => {
                s.len() >= prefix.len() + suffix.len() && starts_with(s, prefix) && ends_with(s, suffix)
            }
            SegmentGlob::Contains(finder) => finder.find(s).is_some(),
            SegmentGlob::General(list) => list.is_match(0, s),
        }
    }

    /// True for a glob that matches every string.
    pub fn is_any(&self) -> bool {
        matches!(self, SegmentGlob::Any)
    }
}

/// Many globs kept side by side for matching one at a time (an index
/// verifies a glob only after its key hit): the literal pieces of all of them
/// in one byte buffer, so a glob costs no allocation of its own to build or to
/// drop, and no searcher is prepared for a piece that is rarely searched.
///
/// Matching is the greedy, linear algorithm of [`SegmentGlob`]: prefix and
/// suffix anchored, each middle piece at its leftmost occurrence after the
/// previous one.
#[derive(Clone, Debug, Default)]
pub struct GlobList {
    bytes: Vec<u8>,
    /// Byte ranges of the middle pieces of all globs.
    middles: Vec<(usize, usize)>,
    globs: Vec<ListedGlob>,
}

#[derive(Clone, Copy, Debug)]
struct ListedGlob {
    /// Byte ranges of the prefix and the suffix (either possibly empty).
    prefix: (usize, usize),
    suffix: (usize, usize),
    /// Its middle pieces are `middles[first..end]`.
    first: usize,
    end: usize,
    /// The sum of the pieces' lengths: no shorter string matches.
    min_len: usize,
    /// No star: the string must equal the prefix.
    literal: bool,
}

/// Which literal end of a glob is known to match: the key it was found by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    Neither,
    Prefix,
    Suffix,
}

/// What a glob's literal ends say of a string ([`GlobList::fit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    No,
    Yes,
    /// The prefix and suffix fit; the middle pieces are left to search.
    Middles,
}

/// Middle pieces up to this long are searched by `memchr` on their first byte
/// and a comparison (at most this many byte compares per place: linear);
/// longer ones by `memmem`.
const SHORT_PIECE: usize = 16;

/// Strings longer than this are searched by `memmem` for any piece: a
/// `memchr` call per place is linear too, but where the piece's first byte
/// is every byte (`ab` in a megabyte of `a`s) it costs a call per byte.
const LONG_HAYSTACK: usize = 256;

impl GlobList {
    /// Adds `pattern`; returns its number.
    pub fn push(&mut self, pattern: &[u8]) -> u32 {
        self.push_shaped(pattern, &GlobShape::of(pattern))
    }

    /// [`push`](Self::push) with the pattern's shape already found.
    pub fn push_shaped(&mut self, pattern: &[u8], shape: &GlobShape<'_>) -> u32 {
        let mut piece = |p: &[u8]| {
            self.bytes.extend_from_slice(p);
            (self.bytes.len() - p.len(), self.bytes.len())
        };
        let prefix = piece(shape.prefix);
        let first = self.middles.len();
        if shape.has_star {
            let body = &pattern[shape.prefix.len() + 1..pattern.len() - shape.suffix.len()];
            for middle in body.split(|&b| b == b'*').filter(|m| !m.is_empty()) {
                let range = piece(middle);
                self.middles.push(range);
            }
        }
        let suffix = piece(shape.suffix);
        let end = self.middles.len();
        let min_len = [prefix, suffix].iter().chain(&self.middles[first..]).map(|(a, b)| b - a).sum();
        self.globs.push(ListedGlob { prefix, suffix, first, end, min_len, literal: !shape.has_star });
        (self.globs.len() - 1) as u32
    }

    pub fn len(&self) -> usize {
        self.globs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
    }

    /// Whether glob number `glob` matches the whole of `s`. (Out of line:
    /// inlined, it made the loops that call it too big to be inlined where
    /// they are used.)
    #[inline(never)]
    pub fn is_match(&self, glob: u32, s: &[u8]) -> bool {
        // `fit` and `middle_part` written out: the batch loop's hot call, a
        // quarter of a percent of its instructions cheaper in one piece.
        let g = &self.globs[glob as usize];
        let prefix = &self.bytes[g.prefix.0..g.prefix.1];
        if g.literal {
            return s == prefix;
        }
        let suffix = &self.bytes[g.suffix.0..g.suffix.1];
        if s.len() < g.min_len || !starts_with(s, prefix) || !ends_with(s, suffix) {
            return false;
        }
        g.first == g.end || self.middles_match(g, &s[prefix.len()..s.len() - suffix.len()])
    }

    /// What the literal ends of glob number `glob` say of `s` (its prefix,
    /// its suffix, its least length; or equality for a literal).
    #[inline(always)]
    pub fn fit(&self, glob: u32, s: &[u8]) -> Fit {
        self.fit_knowing(glob, s, Known::Neither)
    }

    /// [`fit`](Self::fit) for a glob found by the end `known`, which is not
    /// compared again: a trie walk matched it.
    #[inline(always)]
    pub fn fit_knowing(&self, glob: u32, s: &[u8], known: Known) -> Fit {
        let g = &self.globs[glob as usize];
        let prefix = &self.bytes[g.prefix.0..g.prefix.1];
        if g.literal {
            return if s == prefix { Fit::Yes } else { Fit::No };
        }
        let suffix = &self.bytes[g.suffix.0..g.suffix.1];
        if s.len() < g.min_len
            || (known != Known::Prefix && !starts_with(s, prefix))
            || (known != Known::Suffix && !ends_with(s, suffix))
        {
            Fit::No
        } else if g.first == g.end {
            Fit::Yes
        } else {
            Fit::Middles
        }
    }

    /// [`fit_knowing`](Self::fit_knowing) of the string that `map` makes of
    /// `s` byte by byte, without making it: a name whose fold is byte for
    /// byte (ASCII under the loose fold) is turned down by a glob's ends
    /// before it is folded, and a glob without middle pieces needs no fold
    /// at all.
    #[inline(always)]
    pub fn fit_mapped(&self, glob: u32, s: &[u8], map: impl Fn(u8) -> u8, known: Known) -> Fit {
        let g = &self.globs[glob as usize];
        let same = |part: Option<&[u8]>, want: &[u8]| part.is_some_and(|p| p.iter().zip(want).all(|(&x, &y)| map(x) == y));
        let prefix = &self.bytes[g.prefix.0..g.prefix.1];
        if g.literal {
            return if s.len() == prefix.len() && same(Some(s), prefix) { Fit::Yes } else { Fit::No };
        }
        let suffix = &self.bytes[g.suffix.0..g.suffix.1];
        if s.len() < g.min_len
            || (known != Known::Prefix && !same(s.get(..prefix.len()), prefix))
            || (known != Known::Suffix && !same(s.get(s.len().saturating_sub(suffix.len())..), suffix))
        {
            Fit::No
        } else if g.first == g.end {
            Fit::Yes
        } else {
            Fit::Middles
        }
    }

    /// The bytes [`fit_knowing`](Self::fit_knowing) compares: the ends of
    /// glob number `glob` but the known one (or the literal).
    pub fn ends_len(&self, glob: u32, known: Known) -> usize {
        let g = &self.globs[glob as usize];
        let (prefix, suffix) = (g.prefix.1 - g.prefix.0, g.suffix.1 - g.suffix.0);
        match known {
            _ if g.literal => prefix,
            Known::Neither => prefix + suffix,
            Known::Prefix => suffix,
            Known::Suffix => prefix,
        }
    }

    /// The part of `s` between glob number `glob`'s prefix and suffix (which
    /// fit), where its middle pieces are to be found.
    #[inline(always)]
    pub fn middle_part<'s>(&self, glob: u32, s: &'s [u8]) -> &'s [u8] {
        let g = &self.globs[glob as usize];
        &s[g.prefix.1 - g.prefix.0..s.len() - (g.suffix.1 - g.suffix.0)]
    }

    /// Whether the middle pieces of glob number `glob` occur in `rest` in
    /// order, apart: each at its leftmost place after the one before.
    pub fn middles_in(&self, glob: u32, rest: &[u8]) -> bool {
        self.middles_match(&self.globs[glob as usize], rest)
    }

    fn middles_match(&self, g: &ListedGlob, mut rest: &[u8]) -> bool {
        for &(a, b) in &self.middles[g.first..g.end] {
            let middle = &self.bytes[a..b];
            match find_piece(rest, middle) {
                Some(at) => rest = &rest[at + middle.len()..],
                None => return false,
            }
        }
        true
    }

    /// Middle piece number `i` (the pieces of one glob are numbered in a row).
    pub fn middle(&self, i: usize) -> &[u8] {
        let (a, b) = self.middles[i];
        &self.bytes[a..b]
    }

    /// Glob number `glob`'s prefix, the numbers of its middle pieces and its
    /// suffix; `None` for a literal.
    pub fn parts(&self, glob: u32) -> Option<(&[u8], std::ops::Range<usize>, &[u8])> {
        let g = &self.globs[glob as usize];
        (!g.literal).then(|| (&self.bytes[g.prefix.0..g.prefix.1], g.first..g.end, &self.bytes[g.suffix.0..g.suffix.1]))
    }
}

/// The leftmost occurrence of a non-empty `needle` in `haystack`.
#[inline]
fn find_piece(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > SHORT_PIECE || haystack.len() > LONG_HAYSTACK {
        return memchr::memmem::find(haystack, needle);
    }
    let (&first, rest) = needle.split_first()?;
    let last_start = haystack.len().checked_sub(needle.len())?;
    if last_start < 32 {
        // A tool name: a plain loop beats setting up a vectorized search.
        return (0..=last_start).find(|&at| haystack[at] == first && haystack[at + 1..at + needle.len()] == *rest);
    }
    let mut from = 0;
    while from <= last_start {
        let at = from + memchr::memchr(first, &haystack[from..=last_start])?;
        if haystack[at + 1..at + needle.len()] == *rest {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `s.starts_with(p)` without a `memcmp` call for the short literals globs hold.
#[inline]
fn starts_with(s: &[u8], p: &[u8]) -> bool {
    s.len() >= p.len() && s.iter().zip(p).all(|(a, b)| a == b)
}

/// `s.ends_with(x)`, likewise.
#[inline]
fn ends_with(s: &[u8], x: &[u8]) -> bool {
    s.len() >= x.len() && s[s.len() - x.len()..].iter().zip(x).all(|(a, b)| a == b)
}

/// One-shot match of `pattern` against `s`.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    SegmentGlob::new(pattern).is_match(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! globs {
        ($($name:ident: $pattern:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() { assert_eq!(glob_match($pattern.as_ref(), $input.as_ref()), $want); }
        )*};
    }

    #[test]
    fn shape_agrees_with_parts() {
        // Random globs too, long enough for whole words, over `*`, `+` (the
        // byte a word's borrow could take for a star) and `ë` (C3 AB: 0xAB is
        // 0x81 away from a star, which a word's high bits could take for one).
        let mut next = crate::test_rng::below(0xA076_1D64_78BD_642F);
        let random: Vec<String> =
            (0..2_000).map(|_| (0..next(30)).map(|_| ['a', '+', '*', 'ë'][next(4) as usize]).collect()).collect();
        let fixed = ["", "abc", "*", "***", "a*", "*a", "a*b", "*ab*", "a**b*cc*dd*e", "*x*yy*x*", "a*b*", "**a**"];
        for glob in fixed.iter().copied().chain(random.iter().map(String::as_str)) {
            let parts = GlobParts::split(glob.as_bytes());
            let shape = GlobShape::of(glob.as_bytes());
            let longest = parts.middles.iter().copied().max_by_key(|m| m.len()).unwrap_or_default();
            assert_eq!(
                (shape.prefix, shape.suffix, shape.has_star, shape.middles, shape.longest_middle),
                (parts.prefix, parts.suffix, parts.has_star, parts.middles.len(), longest),
                "{glob}"
            );
        }
    }

    /// Ends compared through a byte map say what they say of the mapped
    /// string, with each end known or not (then it is not compared).
    #[test]
    fn mapped_fit_is_the_fit_of_the_mapped_string() {
        let map = crate::fold::loose_ascii;
        let globs = ["ab", "a*", "*b", "a_*_b", "ab*cd*ef", "*_*", "x*y*", "*q*r", "a-b*"];
        let names = ["", "ab", "AB", "a-b", "A.C_B", "AbXcDyEf", "ab_cd_ef", "X.Y", "xQyR", "a_b_b", "A-B-x"];
        let mut list = GlobList::default();
        for glob in globs {
            list.push(&crate::fold::fold_loose(glob.as_bytes()));
        }
        for (g, glob) in globs.iter().enumerate() {
            for name in names {
                let folded = crate::fold::fold_loose(name.as_bytes());
                for known in [Known::Neither, Known::Prefix, Known::Suffix] {
                    let want = list.fit_knowing(g as u32, &folded, known);
                    assert_eq!(list.fit_mapped(g as u32, name.as_bytes(), map, known), want, "{glob} {name} {known:?}");
                }
            }
        }
    }

    #[test]
    fn listed_globs_match_like_segment_globs() {
        let globs = [
            "", "a", "abc", "*", "**", "a*", "*a", "a*b", "*ab*", "a**b*cc*dd*e", "*x*yy*x*", "a*b*", "**a**",
            "*ab*abc", "*a*ab", "ab*ba", "*aaaaaaaaaaaaaaaaab*", "*aaaaaaaaaaaaaaaab*", "x*aaaaaaaaaaaaaaaaaaaaaaab*y",
            "é*", "*\0*", "a/*:b",
        ];
        let inputs = [
            "", "a", "ab", "abc", "ba", "abba", "aba", "aXbYc", "abab_abc", "ab", "x", "xyyx", "xyyyx", "aaaa",
            "aaaaaaaaaaaaaaaaab", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "xaaaaaaaaaaaaaaaaaaaaaaaaaaby", "épée",
            "a\0b", "a/x:b", "bccddea", "abxccxddxe",
        ];
        let mut list = GlobList::default();
        let ids: Vec<u32> = globs.iter().map(|g| list.push(g.as_bytes())).collect();
        for (glob, &id) in globs.iter().zip(&ids) {
            let single = SegmentGlob::new(glob.as_bytes());
            for input in inputs {
                assert_eq!(list.is_match(id, input.as_bytes()), single.is_match(input.as_bytes()), "{glob:?} {input:?}");
            }
        }
        assert_eq!(list.len(), globs.len());
    }

    #[test]
    fn listed_pieces_are_found_leftmost() {
        for (haystack, needle, want) in [
            ("abcabc", "bc", Some(1)),
            ("aaab", "ab", Some(2)),
            ("aaa", "aaaa", None),
            ("", "a", None),
            ("xyz", "z", Some(2)),
            ("aaaaaaaaaaaaaaaaaaaab", "aaaaaaaaaaaaaaaaaab", Some(2)),
            ("aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaab", None),
            (&"a".repeat(300), "ab", None),
            (&("a".repeat(300) + "b"), "ab", Some(299)),
            (&("a".repeat(100) + "b"), "ab", Some(99)),
        ] {
            assert_eq!(find_piece(haystack.as_bytes(), needle.as_bytes()), want, "{haystack} {needle}");
        }
    }

    #[test]
    fn listed_adversarial_glob_is_linear() {
        let mut list = GlobList::default();
        let id = list.push(b"*a*a*a*a*a*a*a*a*a*a*aaaaaaaaaaaaaab*");
        let name = "a".repeat(100_000);
        assert!(!list.is_match(id, name.as_bytes()));
        assert!(list.is_match(id, (name + "b").as_bytes()));
    }

    globs! {
        literal_equal: "create_issue", "create_issue" => true;
        literal_case_sensitive: "create_issue", "Create_issue" => false;
        literal_not_prefix: "create", "create_issue" => false;
        star_matches_all: "*", "anything/at:all" => true;
        star_matches_empty: "*", "" => true;
        stars_collapse: "***", "" => true;
        prefix: "create_*", "create_issue" => true;
        prefix_anchored: "create_*", "xcreate_issue" => false;
        prefix_empty_rest: "create_*", "create_" => true;
        suffix: "*_issue", "create_issue" => true;
        suffix_anchored: "*_issue", "create_issue_v2" => false;
        prefix_suffix: "a*b", "axxb" => true;
        prefix_suffix_no_overlap: "ab*ba", "aba" => false;
        prefix_suffix_exact: "ab*ba", "abba" => true;
        contains: "*pull*", "list_pull_requests" => true;
        contains_missing: "*pull*", "list_push" => false;
        general: "a*b*c", "aXbYc" => true;
        general_order: "a*b*c", "acb" => false;
        general_middle_not_in_suffix: "*a*ab", "ab" => false;
        general_greedy_is_safe: "*ab*abc", "abab_abc" => true;
        star_crosses_slash: "a*c", "a/b/c" => true;
        question_literal: "a?c", "abc" => false;
        question_literal_hit: "a?c", "a?c" => true;
        brackets_literal: "[ab]", "a" => false;
        backslash_literal: "a\\*", "a\\xyz" => true;
        dot_literal: "a.c", "abc" => false;
        nul_literal: "a\0*", "a\0b" => true;
        empty_glob_empty_name: "", "" => true;
        empty_glob_name: "", "a" => false;
        adversarial_fails_fast: "*a*a*a*a*a*a*a*a*a*a*b", "a".repeat(100_000) => false;
        adversarial_hits: "*a*a*a*a*a*a*a*a*a*a*b", "a".repeat(100_000) + "b" => true;
        multibyte: "é*", "épée" => true;
        surrogate_is_not_replacement: b"\xED\xA0\x80", "\u{FFFD}" => false;
        surrogate_equal: b"x\xED\xA0\x80", b"x\xED\xA0\x80" => true;
    }
}
