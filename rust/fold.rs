//! Per-character Unicode lower-casing, with and without separator folding.
//!
//! The loose fold maps each character *on its own* to its full Unicode
//! lower-case (`char::to_lowercase`, never `str::to_lowercase`), then `-` and `.`
//! to `_`. Per character matters: `str::to_lowercase` applies the final-sigma
//! context rule, so a folded glob `ας*` would no longer match the folded name
//! `ασα`. A folded pattern must match a folded name piece by piece.
//!
//! Lone surrogates and bytes that decode to nothing are copied unchanged: they
//! have no case, and replacing them would let U+D800 collide with U+FFFD.

use std::sync::OnceLock;

use crate::wtf8::{decode, push_code_point};

/// Which fold to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Lower-case only (keyword and discover search).
    Lower,
    /// Lower-case, then `-` and `.` to `_` (exclude patterns).
    Loose,
}

impl Fold {
    #[inline]
    fn ascii(self, b: u8) -> u8 {
        let lower = b.to_ascii_lowercase();
        match (self, lower) {
            (Fold::Loose, b'-' | b'.') => b'_',
            _ => lower,
        }
    }

    /// Folds `input` into `out` (cleared first). ASCII input takes a byte loop.
    pub fn apply_into(self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        self.append(input, out);
    }

    /// Folds `input` onto the end of `out`. ASCII is read and folded eight
    /// bytes at a time straight from `input` (a pattern or a name is usually
    /// all ASCII, and short); from the first word holding another character
    /// on, runs of ASCII are copied and mapped in place, and only the other
    /// characters are decoded one by one.
    pub fn append(self, input: &[u8], out: &mut Vec<u8>) {
        out.reserve(input.len());
        let loose = self == Fold::Loose;
        let start = out.len();
        let mut at = 0;
        while let Some(word) = input.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            if word & ASCII_HIGH != 0 {
                return self.append_mixed(&input[at..], out);
            }
            out.extend_from_slice(&fold_ascii_word(word, loose).to_le_bytes());
            at += 8;
        }
        let tail = &input[at..];
        if !tail.is_ascii() {
            return self.append_mixed(tail, out);
        }
        if at > 0 && !tail.is_empty() {
            // The last eight bytes as one word, overlapping what is written:
            // they are all ASCII, so output and input align byte for byte.
            let last = input.len() - 8;
            let word = u64::from_le_bytes(input[last..].try_into().expect("eight bytes"));
            out.truncate(start + last);
            out.extend_from_slice(&fold_ascii_word(word, loose).to_le_bytes());
        } else {
            out.extend(tail.iter().map(|&b| self.ascii(b)));
        }
    }

    /// [`append`](Self::append) for input that holds non-ASCII characters.
    fn append_mixed(self, input: &[u8], out: &mut Vec<u8>) {
        let table = bmp_table();
        let mut rest = input;
        loop {
            let run = rest.iter().position(|&b| b >= 0x80).unwrap_or(rest.len());
            let start = out.len();
            out.extend_from_slice(&rest[..run]);
            self.map_ascii(&mut out[start..]);
            rest = &rest[run..];
            if rest.is_empty() {
                return;
            }
            let (cp, len) = decode(rest);
            // Bytes that decode to nothing are copied as they are, as the
            // code points that are their own lower-case.
            match cp.map_or(Known::Same, |cp| table.lower(cp)) {
                Known::Same => out.extend_from_slice(&rest[..len]),
                Known::Lower(lower) => push_code_point(out, lower),
                Known::Unknown => match cp.and_then(char::from_u32) {
                    Some(c) => {
                        for lower in c.to_lowercase() {
                            let lower = match (self, lower) {
                                (Fold::Loose, '-' | '.') => '_',
                                _ => lower,
                            };
                            push_code_point(out, u32::from(lower));
                        }
                    }
                    None => out.extend_from_slice(&rest[..len]),
                },
            }
            rest = &rest[len..];
        }
    }

    /// Folds ASCII bytes in place, eight at a time: each word is mapped with
    /// a few whole-word operations (no per-byte branch). The last word
    /// overlaps the one before it when the length is not a multiple of eight:
    /// folding is idempotent, so bytes folded twice stay right.
    #[inline]
    fn map_ascii(self, bytes: &mut [u8]) {
        let loose = self == Fold::Loose;
        if bytes.len() < 8 {
            bytes.iter_mut().for_each(|b| *b = self.ascii(*b));
            return;
        }
        let last = bytes.len() - 8;
        let mut at = 0;
        loop {
            let word: &mut [u8; 8] = (&mut bytes[at..at + 8]).try_into().expect("eight bytes");
            *word = fold_ascii_word(u64::from_le_bytes(*word), loose).to_le_bytes();
            if at == last {
                return;
            }
            at = (at + 8).min(last);
        }
    }

    /// Folds `input` into a new buffer.
    pub fn apply(self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.apply_into(input, &mut out);
        out
    }

    /// True when folding `input` would return it unchanged, checked without
    /// allocating (ASCII only; anything else answers false).
    #[inline]
    pub fn is_ascii_fixed_point(self, input: &[u8]) -> bool {
        input.iter().all(|&b| b.is_ascii() && self.ascii(b) == b)
    }
}

/// The high bit of each byte of a word: set in a byte exactly when it is not ASCII.
const ASCII_HIGH: u64 = 0x8080_8080_8080_8080;

/// Each byte of `word` (all ASCII, below 0x80) lower-cased, and under the
/// loose fold `-` and `.` turned into `_`. Adding `0x80 - lo` to an ASCII byte
/// sets its high bit exactly when the byte is `lo` or more, with no carry into
/// the next byte, so a byte is in `lo..=hi` when it gets the bit from `lo` and
/// not from `hi + 1`.
#[inline]
pub(crate) fn fold_ascii_word(word: u64, loose: bool) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ASCII_HIGH;
    let in_range = |lo: u8, hi: u8| (word + ONES * u64::from(0x80 - lo)) & !(word + ONES * u64::from(0x80 - hi - 1)) & HIGH;
    let mut out = word | (in_range(b'A', b'Z') >> 2);
    if loose {
        // `-` and `.` are neighbours (0x2D, 0x2E); `_` is 0x5F.
        let separators = (in_range(b'-', b'.') >> 7) * 0xFF;
        out = (out & !separators) | ((ONES * u64::from(b'_')) & separators);
    }
    out
}

/// The loose fold of one ASCII byte: what [`Fold::Loose`] makes of it in a
/// string (for ASCII the fold is byte for byte, so a scan may fold a name as
/// it reads it). Meaningless for other bytes, which fold as part of a
/// character.
#[inline(always)]
pub fn loose_ascii(b: u8) -> u8 {
    LOOSE_ASCII[b as usize]
}

/// [`loose_ascii`] of every byte (other bytes map to themselves).
static LOOSE_ASCII: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            c @ b'A'..=b'Z' => c + 32,
            b'-' | b'.' => b'_',
            c => c,
        };
        b += 1;
    }
    table
};

/// A name and its loose fold, made only when asked for: the exclude side
/// of a batch folds a name only when a glob must be verified against it, or
/// a rule must be looked up by it.
pub struct LazyFold<'a> {
    raw: &'a [u8],
    buf: &'a mut Vec<u8>,
    folded: bool,
    /// The fold is the name itself: ASCII with no upper case, `-` or `.`.
    same: bool,
}

impl<'a> LazyFold<'a> {
    /// `raw`, to be folded into `buf` when needed.
    #[inline]
    pub fn new(raw: &'a [u8], buf: &'a mut Vec<u8>) -> Self {
        LazyFold { raw, buf, folded: false, same: false }
    }

    /// The name as given.
    #[inline]
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The loose fold of the name, made by the first call.
    #[inline]
    pub fn get(&mut self) -> &[u8] {
        if !self.folded {
            self.same = !loose_into(self.raw, self.buf);
            self.folded = true;
        }
        if self.same { self.raw } else { self.buf }
    }

    /// The length of the fold, folding only a name that is not ASCII (the
    /// loose fold of ASCII is byte for byte).
    #[inline]
    pub fn folded_len(&mut self) -> usize {
        match self.folded || !self.raw.is_ascii() {
            true => self.get().len(),
            false => self.raw.len(),
        }
    }

    /// Whether the fold was made (for tests).
    pub fn was_folded(&self) -> bool {
        self.folded
    }
}

/// Whether the loose fold of `input` is `input`: it is ASCII with no upper
/// case, `-` or `.` (checked eight bytes at a time). Any other byte belongs to
/// a character the fold may change, so it answers false.
#[inline]
pub fn is_loose_fixed_point(input: &[u8]) -> bool {
    let mut words = input.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        if word & ASCII_HIGH != 0 || fold_ascii_word(word, true) != word {
            return false;
        }
    }
    words.remainder().iter().all(|&b| b.is_ascii() && loose_ascii(b) == b)
}

/// What the table says of a code point's lower-case.
enum Known {
    /// It is its own lower-case (or a lone surrogate, copied as it is).
    Same,
    /// Its lower-case is this one code point, not ASCII.
    Lower(u32),
    /// Ask `char::to_lowercase`: several code points, or beyond the table.
    Unknown,
}

/// The lower-case of the code points below U+10000, from `char::to_lowercase`
/// once per process: a name with accented or non-Latin letters is folded by
/// one load per character instead of a search of Unicode's case table. Both
/// folds agree on every code point past ASCII (`-` and `.` are ASCII, and no
/// other character lower-cases to them), so one table serves both. It takes
/// about 12 KB, built on the first fold of a name that is not ASCII (well
/// under a millisecond).
struct BmpTable {
    /// For U+0080..U+07FF (two bytes in UTF-8): the single lower-case code
    /// point, or 0 when there are several.
    two: Box<[u16]>,
    /// For U+0800..U+FFFF: one bit a code point, set when it is its own
    /// lower-case (and for the surrogates).
    same: Box<[u64]>,
}

impl BmpTable {
    fn build() -> Self {
        let single = |cp: u32| -> Option<u32> {
            let c = char::from_u32(cp)?;
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => Some(u32::from(l)),
                _ => None,
            }
        };
        let two = (0x80..0x800u32)
            .map(|cp| single(cp).filter(|&l| (0x80..0x1_0000).contains(&l)).map_or(0, |l| l as u16))
            .collect();
        let mut same = vec![0u64; 0x1_0000 / 64].into_boxed_slice();
        for cp in 0x800..0x1_0000u32 {
            if char::from_u32(cp).is_none() || single(cp) == Some(cp) {
                same[cp as usize / 64] |= 1 << (cp % 64);
            }
        }
        BmpTable { two, same }
    }

    #[inline]
    fn lower(&self, cp: u32) -> Known {
        match cp {
            0x80..=0x7FF => match u32::from(self.two[cp as usize - 0x80]) {
                0 => Known::Unknown,
                lower if lower == cp => Known::Same,
                lower => Known::Lower(lower),
            },
            0x800..=0xFFFF if self.same[cp as usize / 64] & (1 << (cp % 64)) != 0 => Known::Same,
            _ => Known::Unknown,
        }
    }
}

fn bmp_table() -> &'static BmpTable {
    static TABLE: OnceLock<BmpTable> = OnceLock::new();
    TABLE.get_or_init(BmpTable::build)
}

/// Folds `input` into `out` (cleared first) under the loose fold, and says
/// whether the fold may differ from `input` (false: it is `input`). An ASCII
/// name of eight bytes or more is folded and compared in one pass of words,
/// the last overlapping the one before: checking first whether it is a fixed
/// point, byte by byte at its end, cost as much again as the fold.
#[inline]
pub(crate) fn loose_into(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let len = input.len();
    if len < 8 {
        Fold::Loose.append(input, out);
        return out.as_slice() != input;
    }
    out.resize(len, 0);
    let (mut changed, mut at) = (0, 0);
    while at < len {
        let from = at.min(len - 8);
        let word = u64::from_le_bytes(input[from..from + 8].try_into().expect("eight bytes"));
        if word & ASCII_HIGH != 0 {
            out.clear();
            Fold::Loose.append(input, out);
            return true;
        }
        let folded = fold_ascii_word(word, true);
        changed |= folded ^ word;
        out[from..from + 8].copy_from_slice(&folded.to_le_bytes());
        at = from + 8;
    }
    changed != 0
}

/// The loose fold of `input` (the exclude side's matching form).
pub fn fold_loose(input: &[u8]) -> Vec<u8> {
    Fold::Loose.apply(input)
}

/// The per-character lower-case of `input`.
pub fn fold_lower(input: &[u8]) -> Vec<u8> {
    Fold::Lower.apply(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! folds {
        ($($name:ident: $fold:ident, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() { assert_eq!($fold($input.as_ref()), AsRef::<[u8]>::as_ref(&$want).to_vec()); }
        )*};
    }

    folds! {
        ascii_case: fold_loose, "Delete-Repo" => "delete_repo";
        dots: fold_loose, "DELETE.REPO" => "delete_repo";
        underscore_kept: fold_loose, "a_b" => "a_b";
        lower_keeps_separators: fold_lower, "A-B.C" => "a-b.c";
        dotted_i: fold_loose, "İ" => "i\u{307}";
        sigma_never_final: fold_loose, "ΑΣ" => "ασ";
        final_sigma_kept: fold_loose, "ας" => "ας";
        kelvin: fold_loose, "\u{212A}" => "k";
        sharp_s_kept: fold_loose, "ß" => "ß";
        capital_sharp_s: fold_loose, "ẞ" => "ß";
        nul: fold_loose, "A\0B" => "a\0b";
        slash_colon_star: fold_loose, "A/B:C*" => "a/b:c*";
        lone_surrogate_kept: fold_loose, b"X\xED\xA0\x80" => b"x\xED\xA0\x80";
        invalid_byte_kept: fold_loose, b"A\xFF" => b"a\xFF";
        empty: fold_loose, "" => "";
    }

    /// The fold of one character as `char::to_lowercase` gives it.
    fn by_char(fold: Fold, cp: u32, out: &mut Vec<u8>) {
        match char::from_u32(cp) {
            Some(c) => {
                for lower in c.to_lowercase() {
                    let lower = if fold == Fold::Loose && matches!(lower, '-' | '.') { '_' } else { lower };
                    push_code_point(out, u32::from(lower));
                }
            }
            None => push_code_point(out, cp),
        }
    }

    #[test]
    fn the_table_folds_every_code_point_as_to_lowercase() {
        let (mut input, mut want, mut got) = (Vec::new(), Vec::new(), Vec::new());
        for fold in [Fold::Lower, Fold::Loose] {
            for cp in 0x80..=0x10_FFFF {
                // Between ASCII neighbours, so the mixed path reads it.
                input.clear();
                input.extend_from_slice(b"A-");
                push_code_point(&mut input, cp);
                input.extend_from_slice(b".Z");
                want.clear();
                want.extend_from_slice(if fold == Fold::Loose { b"a_" } else { b"a-" });
                by_char(fold, cp, &mut want);
                want.extend_from_slice(if fold == Fold::Loose { b"_z" } else { b".z" });
                fold.apply_into(&input, &mut got);
                assert_eq!(got, want, "U+{cp:04X} under {fold:?}");
            }
        }
    }

    #[test]
    fn append_keeps_what_is_there() {
        let mut out = b"x/".to_vec();
        Fold::Loose.append("A-\u{212A}".as_bytes(), &mut out);
        assert_eq!(out, b"x/a_k");
    }

    #[test]
    fn words_fold_like_bytes() {
        // Every ASCII byte at every place of an 8-byte word, among neighbours
        // that are themselves near the range edges.
        let edges = [b'@', b'A', b'Z', b'[', b'`', b'a', b'z', b'{', b',', b'-', b'.', b'/', b'_', 0, 0x7F];
        for fold in [Fold::Lower, Fold::Loose] {
            for b in 0..0x80u8 {
                for place in 0..8 {
                    for &around in &edges {
                        let mut bytes = [around; 8];
                        bytes[place] = b;
                        let want: Vec<u8> = bytes.iter().map(|&c| fold.ascii(c)).collect();
                        let got = fold_ascii_word(u64::from_le_bytes(bytes), fold == Fold::Loose).to_le_bytes();
                        assert_eq!(got.to_vec(), want, "{fold:?} {bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_length_folds_like_bytes() {
        let text = b"Create-Issue.V2_ALL-Pull.Requests_by_ID-Z@[`{";
        for fold in [Fold::Lower, Fold::Loose] {
            for start in 0..text.len() {
                for end in start..=text.len() {
                    let input = &text[start..end];
                    let want: Vec<u8> = input.iter().map(|&c| fold.ascii(c)).collect();
                    assert_eq!(fold.apply(input), want);
                    // Behind a non-ASCII character too: the run after it.
                    let mut mixed = "É".as_bytes().to_vec();
                    mixed.extend_from_slice(input);
                    let mut want_mixed = "é".as_bytes().to_vec();
                    want_mixed.extend_from_slice(&want);
                    assert_eq!(fold.apply(&mixed), want_mixed);
                    // Before one, after whole words or in the tail, onto a
                    // buffer that holds something already.
                    let mut trailing = input.to_vec();
                    trailing.extend_from_slice("É-".as_bytes());
                    let mut want_trailing = b"x/".to_vec();
                    want_trailing.extend_from_slice(&want);
                    want_trailing.extend_from_slice("é".as_bytes());
                    want_trailing.push(fold.ascii(b'-'));
                    let mut out = b"x/".to_vec();
                    fold.append(&trailing, &mut out);
                    assert_eq!(out, want_trailing);
                }
            }
        }
    }

    #[test]
    fn the_byte_map_is_the_fold_of_ascii() {
        for b in 0..0x80u8 {
            assert_eq!(vec![loose_ascii(b)], fold_loose(&[b]), "{b:#x}");
        }
        let name = b"Delete-Repo.V2_x";
        assert_eq!(name.iter().map(|&b| loose_ascii(b)).collect::<Vec<u8>>(), fold_loose(name));
    }

    #[test]
    fn fixed_points_are_the_names_the_fold_keeps() {
        let text = b"create_issue_v2_all-Pull.requests_by_id/x:y*z\0";
        for start in 0..text.len() {
            for end in start..=text.len() {
                let s = &text[start..end];
                assert_eq!(is_loose_fixed_point(s), fold_loose(s) == s, "{s:?}");
            }
        }
        for s in ["é", "\u{212A}", "ab\u{212A}cdefghij", "ß"] {
            assert!(!is_loose_fixed_point(s.as_bytes()), "{s}");
        }
        let mut buf = b"stale".to_vec();
        let mut name = LazyFold::new(b"read_file_v2", &mut buf);
        assert_eq!(name.get(), b"read_file_v2");
    }

    /// The one-pass fold of a lazy name: the fold, "unchanged" only when it
    /// is the name, and for ASCII "changed" exactly when the name is no fixed
    /// point; at every length and offset, words overlapping or not.
    #[test]
    fn one_pass_fold_is_the_fold() {
        let text = "Create_Issue-v2.all_PULL.requests_by_id/x:y*z\0éabcdefgh\u{212A}".as_bytes();
        let mut out = b"stale".to_vec();
        for start in 0..text.len() {
            for end in start..=text.len() {
                let s = &text[start..end];
                let changed = loose_into(s, &mut out);
                assert_eq!(out, fold_loose(s), "{s:?}");
                assert!(changed || out == s, "{s:?}");
                if s.is_ascii() {
                    assert_eq!(changed, !is_loose_fixed_point(s), "{s:?}");
                }
                let mut buf = b"stale".to_vec();
                assert_eq!(LazyFold::new(s, &mut buf).get(), fold_loose(s), "{s:?}");
            }
        }
    }

    #[test]
    fn a_lazy_fold_folds_once_when_asked() {
        let mut buf = b"stale".to_vec();
        let mut name = LazyFold::new("Dé-X".as_bytes(), &mut buf);
        assert!(!name.was_folded());
        assert_eq!(name.raw(), "Dé-X".as_bytes());
        assert_eq!(name.get(), "dé_x".as_bytes());
        assert!(name.was_folded());
        assert_eq!(name.get(), "dé_x".as_bytes());
    }

    #[test]
    fn ascii_fixed_point() {
        assert!(Fold::Loose.is_ascii_fixed_point(b"delete_repo"));
        assert!(!Fold::Loose.is_ascii_fixed_point(b"delete-repo"));
        assert!(Fold::Lower.is_ascii_fixed_point(b"delete-repo"));
        assert!(!Fold::Lower.is_ascii_fixed_point("é".as_bytes()));
    }
}
