//! Annotation patterns: a tool's MCP hints (`readOnlyHint`, `destructiveHint`,
//! `idempotentHint`, `openWorldHint`), made effective, tested against wanted
//! values.
//!
//! A tool's hints arrive as one byte ([`raw`]): two bits per hint, saying
//! missing, false or true, as the tool's server wrote them. What a pattern
//! sees is the *effective* value: a missing hint takes the MCP schema's
//! default (read-only false, destructive true, idempotent false, open-world
//! true); a read-only tool is neither destructive nor non-idempotent (the
//! schema gives those two meaning only when read-only is false); and a server
//! that the pattern does not trust gets every default, the worst case, since
//! a client must not base decisions on an untrusted server's hints.
//!
//! So an effective value is four bits, sixteen in all, and a pattern is the
//! set of those it accepts: one `u16`. Patterns that share a trusted list are
//! one set, the union of theirs. Matching a tool is, per trusted list, a
//! table lookup and a bit test.

use crate::index::SegmentIndex;
use crate::rules::Scratch;

/// The hints, in the order of their bits (hint `i` is bits `2i..2i+2` of a
/// raw byte and bit `i` of an effective value).
pub const HINTS: [&str; 4] = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

const READ_ONLY: u8 = 1;
const DESTRUCTIVE: u8 = 2;
const IDEMPOTENT: u8 = 4;
const OPEN_WORLD: u8 = 8;

/// The effective value of a tool without hints, or of an untrusted server's.
pub const DEFAULTS: u8 = DESTRUCTIVE | OPEN_WORLD;

/// The raw byte for hints as given: `None` missing (a non-bool is missing too).
pub fn raw(hints: [Option<bool>; 4]) -> u8 {
    hints.iter().enumerate().fold(0, |byte, (i, hint)| {
        byte | match hint {
            None => 0,
            Some(false) => 1 << (2 * i),
            Some(true) => 2 << (2 * i),
        }
    })
}

/// The effective value of trusted raw hints.
pub const fn effective(raw: u8) -> u8 {
    let mut value = 0;
    let mut i = 0;
    while i < 4 {
        let given = (raw >> (2 * i)) & 3;
        let bit = match given {
            1 => false,
            2 => true,
            // Missing (or the unused pattern 3): the default.
            _ => DEFAULTS & (1 << i) != 0,
        };
        if bit {
            value |= 1 << i;
        }
        i += 1;
    }
    if value & READ_ONLY != 0 {
        value = (value & !DESTRUCTIVE) | IDEMPOTENT;
    }
    value
}

/// [`effective`] of every raw byte, for the batch's inner loop.
static EFFECTIVE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut raw = 0;
    while raw < 256 {
        table[raw] = effective(raw as u8);
        raw += 1;
    }
    table
};

/// One annotation pattern as written: the hints it wants, each true or false
/// (`None`: any), and the server globs it trusts.
#[derive(Clone, Debug)]
pub struct HintPattern<G> {
    pub want: [Option<bool>; 4],
    pub trusted: Vec<G>,
}

impl<G> HintPattern<G> {
    /// The effective values this pattern accepts, as a set of 16 bits.
    fn accepts(&self) -> u16 {
        (0..16u8)
            .filter(|&value| {
                self.want.iter().enumerate().all(|(i, want)| want.is_none_or(|w| (value >> i) & 1 == u8::from(w)))
            })
            .fold(0, |set, value| set | (1 << value))
    }
}

/// The annotation patterns of one option, compiled.
#[derive(Clone, Debug, Default)]
pub struct HintSide {
    /// Per distinct trusted list: its servers, and the union of what the
    /// patterns that name it accept.
    sets: Vec<(SegmentIndex, u16)>,
}

impl HintSide {
    /// Compiles patterns; those whose trusted lists are equal (as written,
    /// in order) share one set.
    pub fn compile<G: AsRef<[u8]>>(patterns: &[HintPattern<G>]) -> Self {
        let mut lists: Vec<(Vec<&[u8]>, u16)> = Vec::new();
        for pattern in patterns {
            let globs: Vec<&[u8]> = pattern.trusted.iter().map(AsRef::as_ref).collect();
            match lists.iter_mut().find(|(list, _)| *list == globs) {
                Some((_, accepts)) => *accepts |= pattern.accepts(),
                None => lists.push((globs, pattern.accepts())),
            }
        }
        let sets = lists
            .into_iter()
            .map(|(globs, accepts)| (SegmentIndex::build(globs.into_iter().zip(0u32..)), accepts))
            .collect();
        HintSide { sets }
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Which of the sets trust `server` (one bool each, into `trust`).
    pub fn trust_into(&self, server: &[u8], scratch: &mut Scratch, trust: &mut Vec<bool>) {
        trust.clear();
        trust.extend(self.sets.iter().map(|(globs, _)| globs.any_match(server, &mut scratch.index)));
    }

    /// Whether a pattern of this option matches a tool with `raw` hints, its
    /// server trusted by the sets `trust` says.
    #[inline]
    pub fn matches(&self, trust: &[bool], raw: u8) -> bool {
        let trusted = EFFECTIVE[raw as usize];
        self.sets.iter().zip(trust).any(|((_, accepts), &t)| {
            let value = if t { trusted } else { DEFAULTS };
            (accepts >> value) & 1 != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Option<bool> = Some(true);
    const F: Option<bool> = Some(false);
    const N: Option<bool> = None;

    /// The effective value spelled out hint by hint: the oracle of `effective`.
    fn spelled(hints: [Option<bool>; 4], trusted: bool) -> [bool; 4] {
        let given = |i: usize, default: bool| if trusted { hints[i].unwrap_or(default) } else { default };
        let read_only = given(0, false);
        [read_only, !read_only && given(1, true), read_only || given(2, false), given(3, true)]
    }

    fn bits(value: [bool; 4]) -> u8 {
        value.iter().enumerate().fold(0, |b, (i, &v)| b | (u8::from(v) << i))
    }

    #[test]
    fn effective_values_follow_the_schema_defaults() {
        let options = [N, F, T];
        for a in options {
            for b in options {
                for c in options {
                    for d in options {
                        let hints = [a, b, c, d];
                        assert_eq!(effective(raw(hints)), bits(spelled(hints, true)), "{hints:?}");
                        assert_eq!(DEFAULTS, bits(spelled(hints, false)), "{hints:?}");
                    }
                }
            }
        }
    }

    macro_rules! matching {
        ($($name:ident: want $want:expr, trusted $trusted:expr, server $server:expr, hints $hints:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                let side = HintSide::compile(&[HintPattern { want: $want, trusted: $trusted.to_vec() }]);
                let mut trust = Vec::new();
                side.trust_into($server.as_bytes(), &mut Scratch::default(), &mut trust);
                assert_eq!(side.matches(&trust, raw($hints)), $expected);
            }
        )*};
    }

    matching! {
        read_only_given: want [T, N, N, N], trusted ["*"], server "github", hints [T, N, N, N] => true;
        read_only_missing_is_false: want [T, N, N, N], trusted ["*"], server "github", hints [N, N, N, N] => false;
        read_only_not_a_bool_is_missing: want [F, N, N, N], trusted ["*"], server "s", hints [N, T, N, N] => true;
        destructive_by_default: want [N, T, N, N], trusted ["*"], server "s", hints [N, N, N, N] => true;
        read_only_is_never_destructive: want [N, T, N, N], trusted ["*"], server "s", hints [T, T, N, N] => false;
        read_only_is_idempotent: want [N, N, T, N], trusted ["*"], server "s", hints [T, N, F, N] => true;
        untrusted_is_the_worst_case: want [N, T, N, N], trusted ["github"], server "evil", hints [T, F, N, N] => true;
        untrusted_is_not_read_only: want [T, N, N, N], trusted ["github"], server "evil", hints [T, N, N, N] => false;
        trusted_by_glob: want [T, N, N, N], trusted ["git*"], server "github", hints [T, N, N, N] => true;
        trust_is_exact_case: want [T, N, N, N], trusted ["github"], server "GitHub", hints [T, N, N, N] => false;
        no_trusted_globs_trusts_nobody: want [T, N, N, N], trusted [] as [&str; 0], server "github", hints [T, N, N, N] => false;
        two_hints_both_needed: want [F, T, N, N], trusted ["*"], server "s", hints [F, F, N, N] => false;
        open_world_false: want [N, N, N, F], trusted ["*"], server "s", hints [N, N, N, F] => true;
    }

    #[test]
    fn patterns_sharing_a_trusted_list_share_a_set() {
        let side = HintSide::compile(&[
            HintPattern { want: [T, N, N, N], trusted: vec!["*"] },
            HintPattern { want: [N, N, N, F], trusted: vec!["*"] },
            HintPattern { want: [N, T, N, N], trusted: vec!["internal"] },
        ]);
        assert_eq!(side.sets.len(), 2);
        let mut trust = Vec::new();
        side.trust_into(b"internal", &mut Scratch::default(), &mut trust);
        assert!(side.matches(&trust, raw([T, N, N, N])));
        assert!(side.matches(&trust, raw([F, N, N, F])));
        assert!(side.matches(&trust, raw([F, T, N, T])));
        assert!(!side.matches(&trust, raw([F, F, N, T])));
    }

    #[test]
    fn an_empty_side_matches_nothing() {
        let side = HintSide::compile::<&str>(&[]);
        assert!(side.is_empty());
        assert!(!side.matches(&[], raw([T, T, T, T])));
    }
}
