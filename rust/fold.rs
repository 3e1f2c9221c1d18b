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

use crate::wtf8::{decode, push_code_point};

/// Which fold to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Lower-case only (keyword and discover search).
    Lower,
    /// Lower-case, then `-` and `.` to `_` (exclude patterns).
    Loose,
}

/// The fold of each ASCII byte, as a table: one load per byte of a name.
const fn ascii_table(loose: bool) -> [u8; 128] {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let lower = (i as u8).to_ascii_lowercase();
        table[i] = if loose && (lower == b'-' || lower == b'.') { b'_' } else { lower };
        i += 1;
    }
    table
}

static LOWER_ASCII: [u8; 128] = ascii_table(false);
static LOOSE_ASCII: [u8; 128] = ascii_table(true);

impl Fold {
    #[inline]
    fn table(self) -> &'static [u8; 128] {
        match self {
            Fold::Lower => &LOWER_ASCII,
            Fold::Loose => &LOOSE_ASCII,
        }
    }

    /// The fold of an ASCII byte (`b < 0x80`).
    #[inline]
    fn ascii(self, b: u8) -> u8 {
        self.table()[usize::from(b & 0x7F)]
    }

    /// Folds `input` into `out` (cleared first). ASCII input takes a byte loop.
    pub fn apply_into(self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(input.len());
        if input.is_ascii() {
            let table = self.table();
            out.extend(input.iter().map(|&b| table[usize::from(b & 0x7F)]));
            return;
        }
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            if b < 0x80 {
                out.push(self.ascii(b));
                i += 1;
                continue;
            }
            let (cp, len) = decode(&input[i..]);
            match cp.and_then(char::from_u32) {
                Some(c) => {
                    for lower in c.to_lowercase() {
                        let lower = match (self, lower) {
                            (Fold::Loose, '-' | '.') => '_',
                            _ => lower,
                        };
                        push_code_point(out, u32::from(lower));
                    }
                }
                None => out.extend_from_slice(&input[i..i + len]),
            }
            i += len;
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
        let table = self.table();
        input.iter().all(|&b| b.is_ascii() && table[usize::from(b & 0x7F)] == b)
    }
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

    #[test]
    fn ascii_fixed_point() {
        assert!(Fold::Loose.is_ascii_fixed_point(b"delete_repo"));
        assert!(!Fold::Loose.is_ascii_fixed_point(b"delete-repo"));
        assert!(Fold::Lower.is_ascii_fixed_point(b"delete-repo"));
        assert!(!Fold::Lower.is_ascii_fixed_point("é".as_bytes()));
    }
}
