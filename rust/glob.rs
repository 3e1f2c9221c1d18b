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
    /// Anything else: `prefix*m1*m2*…*suffix` (prefix and suffix may be empty).
    General { prefix: Vec<u8>, middles: Vec<Finder<'static>>, suffix: Vec<u8>, min_len: usize },
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

impl<'a> GlobShape<'a> {
    pub fn of(pattern: &'a [u8]) -> Self {
        // A plain scan: globs are short, and memchr's per-call cost dominated.
        let mut stars = pattern.iter().enumerate().filter(|&(_, &b)| b == b'*').map(|(i, _)| i);
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
            _ => SegmentGlob::General {
                min_len: prefix.len() + suffix.len() + middles.iter().map(|m| m.len()).sum::<usize>(),
                prefix: prefix.to_vec(),
                middles: middles.iter().map(|m| Finder::new(m).into_owned()).collect(),
                suffix: suffix.to_vec(),
            },
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
            SegmentGlob::General { prefix, middles, suffix, min_len } => {
                if s.len() < *min_len || !starts_with(s, prefix) || !ends_with(s, suffix) {
                    return false;
                }
                let mut rest = &s[prefix.len()..s.len() - suffix.len()];
                for finder in middles {
                    match finder.find(rest) {
                        Some(at) => rest = &rest[at + finder.needle().len()..],
                        None => return false,
                    }
                }
                true
            }
        }
    }

    /// True for a glob that matches every string.
    pub fn is_any(&self) -> bool {
        matches!(self, SegmentGlob::Any)
    }
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
        for glob in ["", "abc", "*", "***", "a*", "*a", "a*b", "*ab*", "a**b*cc*dd*e", "*x*yy*x*", "a*b*", "**a**"] {
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
