//! How text becomes index terms, for tools and queries alike.
//!
//! The rules never consult a Unicode database beyond the per-character
//! lower-case of [`Fold::Lower`], so that the reference, written in Python
//! with another Unicode version, cuts every string at the same places:
//!
//! * ASCII letters and digits, and every character outside the ranges of
//!   [`kind`], are word characters; ASCII punctuation, spaces and controls,
//!   Latin-1 punctuation, the symbol and punctuation blocks, surrogates,
//!   private use and emoji separate words;
//! * scripts written without spaces (Han, kana, Hangul, Thai, ...) give
//!   overlapping pairs of characters, a lone character standing alone:
//!   there is no word boundary to find, and pairs match most words;
//! * where asked (names, server ids, parameter names), a word is also cut
//!   before an ASCII capital that follows a lower-case letter or a digit
//!   (`getBaziDetail`) and before the last capital of a run that a lower-case
//!   letter follows (`HTMLParser`);
//! * a piece is lower-cased per character; a piece of one ASCII character or
//!   an English stop word is dropped; a piece of 3 to [`STEM_MAX`] ASCII
//!   letters is reduced to its English (Snowball) stem.
//!
//! Every step is one pass over the text, and a word of more than
//! [`STEM_MAX`] letters is kept whole rather than stemmed, so a hostile
//! megabyte of one letter costs one pass.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};

use crate::fold::Fold;
use crate::wtf8::decode;

/// English function words and the fillers of a request ("please help me ...").
/// The reference keeps the same list (`reference/relevance.py`).
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "done", "down", "during", "each", "either", "else", "etc", "ever", "every", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "help", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "however", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let",
    "lets", "like", "may", "me", "might", "mine", "more", "most", "much", "must", "my", "myself", "need",
    "needs", "no", "nor", "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "our", "ours",
    "ourselves", "out", "over", "own", "please", "same", "shall", "she", "should", "so", "some", "such",
    "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "thus", "to", "too", "under", "until", "up", "upon", "us", "very", "via", "want",
    "wants", "was", "we", "were", "what", "whatever", "when", "where", "whether", "which", "while", "who",
    "whom", "whose", "why", "will", "with", "within", "without", "would", "yes", "yet", "you", "your", "yours",
    "yourself", "yourselves",
];

/// The longest word that is stemmed; a longer one is kept whole.
pub const STEM_MAX: usize = 40;

/// What a character is to the tokenizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Word,
    /// A script without spaces: indexed as pairs of characters.
    Paired,
    Separator,
}

const PAIRED: &[(u32, u32)] = &[
    (0x0E00, 0x0EFF),   // Thai, Lao
    (0x1000, 0x109F),   // Myanmar
    (0x1100, 0x11FF),   // Hangul Jamo
    (0x1780, 0x17FF),   // Khmer
    (0x3040, 0x30FF),   // Hiragana, Katakana
    (0x3130, 0x318F),   // Hangul compatibility Jamo
    (0x31F0, 0x31FF),   // Katakana extensions
    (0x3400, 0x4DBF),   // CJK extension A
    (0x4E00, 0x9FFF),   // CJK unified ideographs
    (0xAC00, 0xD7AF),   // Hangul syllables
    (0xF900, 0xFAFF),   // CJK compatibility ideographs
    (0x20000, 0x3FFFF), // CJK extensions B and later
];

const SEPARATORS: &[(u32, u32)] = &[
    (0x0080, 0x00BF),   // Latin-1 controls, punctuation and signs
    (0x00D7, 0x00D7),   // multiplication sign
    (0x00F7, 0x00F7),   // division sign
    (0x2000, 0x2BFF),   // punctuation, symbols, arrows, operators, shapes
    (0x2E00, 0x2E7F),   // supplemental punctuation
    (0x3000, 0x303F),   // CJK symbols and punctuation
    (0xD800, 0xDFFF),   // surrogates
    (0xE000, 0xF8FF),   // private use
    (0xFE00, 0xFE0F),   // variation selectors
    (0xFE10, 0xFE1F),   // vertical forms
    (0xFE30, 0xFE6F),   // CJK compatibility forms, small forms
    (0xFF00, 0xFF0F),   // fullwidth punctuation
    (0xFF1A, 0xFF20),
    (0xFF3B, 0xFF40),
    (0xFF5B, 0xFF65),
    (0xFFF0, 0xFFFF),   // specials
    (0x1F000, 0x1FAFF), // emoji and pictographs
];

fn within(ranges: &[(u32, u32)], code: u32) -> bool {
    ranges.iter().any(|&(low, high)| (low..=high).contains(&code))
}

/// The kind of a code point; None (a byte that starts no character) separates.
pub(crate) fn kind(code: Option<u32>) -> Kind {
    match code {
        Some(c) if c < 0x80 => {
            if (c as u8).is_ascii_alphanumeric() {
                Kind::Word
            } else {
                Kind::Separator
            }
        }
        Some(c) if within(PAIRED, c) => Kind::Paired,
        Some(c) if within(SEPARATORS, c) => Kind::Separator,
        Some(_) => Kind::Word,
        None => Kind::Separator,
    }
}

/// One piece of text, not yet folded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// A word, or a camelCase part of one.
    Word(&'a [u8]),
    /// One or two characters of a script without spaces.
    Pair(&'a [u8]),
}

/// Whether a byte is an ASCII letter or digit (false for every byte of a
/// multi-byte character).
static ASCII_WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = (byte as u8).is_ascii_alphanumeric();
        byte += 1;
    }
    table
};

/// The kind and length of the character at the start of `text` (not empty);
/// ASCII without decoding.
#[inline(always)]
fn next_char(text: &[u8]) -> (Kind, usize) {
    let byte = text[0];
    if byte < 0x80 {
        return (if ASCII_WORD[usize::from(byte)] { Kind::Word } else { Kind::Separator }, 1);
    }
    let (code, len) = decode(text);
    (kind(code), len)
}

/// Calls `each` with the pieces of `text` (generalized UTF-8), in order.
pub(crate) fn pieces<'a>(text: &'a [u8], camel: bool, mut each: impl FnMut(Piece<'a>)) {
    let mut at = 0;
    while at < text.len() {
        let (here, len) = next_char(&text[at..]);
        let start = at;
        // In a paired run, where the character before this one starts.
        let mut previous = at;
        at += len;
        if here == Kind::Word {
            // ASCII letters and digits, the most of every word, by table.
            while at < text.len() && ASCII_WORD[usize::from(text[at])] {
                at += 1;
            }
        }
        while at < text.len() {
            let (kind, len) = next_char(&text[at..]);
            if kind != here {
                break;
            }
            if here == Kind::Paired {
                each(Piece::Pair(&text[previous..at + len]));
                previous = at;
            }
            at += len;
        }
        match here {
            Kind::Word if camel => camel_pieces(&text[start..at], &mut each),
            Kind::Word => each(Piece::Word(&text[start..at])),
            // A lone character of its script.
            Kind::Paired if previous == start => each(Piece::Pair(&text[start..at])),
            _ => {}
        }
    }
}

/// `word` cut at its camelCase boundaries. Only ASCII bytes decide, and a
/// byte of a multi-byte character is never ASCII, so looking at the bytes
/// either side is looking at the characters either side.
fn camel_pieces<'a>(word: &'a [u8], each: &mut impl FnMut(Piece<'a>)) {
    let mut start = 0;
    for i in 1..word.len() {
        let (before, here) = (word[i - 1], word[i]);
        let after = word.get(i + 1).copied().unwrap_or(0);
        let cut = here.is_ascii_uppercase()
            && (before.is_ascii_lowercase()
                || before.is_ascii_digit()
                || (before.is_ascii_uppercase() && after.is_ascii_lowercase()));
        if cut {
            each(Piece::Word(&word[start..i]));
            start = i;
        }
    }
    each(Piece::Word(&word[start..]));
}

/// Turns folded pieces into terms: drops stop words and single ASCII
/// characters, stems English words.
pub(crate) struct Terms {
    stemmer: Stemmer,
    stopwords: rustc_hash::FxHashSet<&'static [u8]>,
}

impl Default for Terms {
    fn default() -> Self {
        Terms {
            stemmer: Stemmer::create(Algorithm::English),
            stopwords: STOPWORDS.iter().map(|w| w.as_bytes()).collect(),
        }
    }
}

impl Terms {
    /// The term of a folded word, or None when it is dropped.
    pub(crate) fn word<'a>(&self, folded: &'a [u8]) -> Option<Cow<'a, [u8]>> {
        if folded.len() == 1 || self.stopwords.contains(folded) {
            return None;
        }
        if (3..=STEM_MAX).contains(&folded.len()) && folded.iter().all(u8::is_ascii_lowercase) {
            // ASCII letters are UTF-8.
            let word = std::str::from_utf8(folded).expect("ASCII");
            return Some(match self.stemmer.stem(word) {
                Cow::Borrowed(stem) => Cow::Owned(stem.as_bytes().to_vec()),
                Cow::Owned(stem) => Cow::Owned(stem.into_bytes()),
            });
        }
        Some(Cow::Borrowed(folded))
    }

    /// Calls `each` with the terms of `text`, in order (a piece that is
    /// dropped gives none).
    pub(crate) fn each_term(&self, text: &[u8], camel: bool, mut each: impl FnMut(&[u8])) {
        let mut folded = Vec::new();
        pieces(text, camel, |piece| match piece {
            Piece::Word(word) => {
                Fold::Lower.apply_into(word, &mut folded);
                if let Some(term) = self.word(&folded) {
                    each(&term);
                }
            }
            Piece::Pair(pair) => {
                Fold::Lower.apply_into(pair, &mut folded);
                each(&folded);
            }
        });
    }
}

/// The words a query that mentions a file path also asks for (see
/// [`mentions_path`]): tools name what a path points at with these.
pub const PATH_WORDS: [&str; 2] = ["file", "path"];

/// White space around a path: space, tab, line feed, vertical tab, form
/// feed, carriage return.
const PATH_SPACE: &[u8] = b" \t\n\x0b\x0c\r";

/// Whether `text` holds a file path: `/`, `~/`, `./`, `../` or a drive's
/// `X:\` at the start or after white space (`PATH_SPACE`) or one of
/// ``"'`([{<``, followed by a byte that is neither `/`, `\` nor white space.
/// (`/root/notes.md`, `~/a`, `"./b"`, `C:\data`; not `and/or`, `1 / 2`,
/// `https://...` or a lone `/`.) Looks at ASCII bytes only: one pass.
pub fn mentions_path(text: &[u8]) -> bool {
    let after = |b: u8| PATH_SPACE.contains(&b) || b"\"'`([{<".contains(&b);
    let named = |b: Option<&u8>| b.is_some_and(|&b| b != b'/' && b != b'\\' && !PATH_SPACE.contains(&b));
    (0..text.len()).any(|i| {
        if i > 0 && !after(text[i - 1]) {
            return false;
        }
        let rest = &text[i..];
        let prefix = if rest.starts_with(b"/") {
            1
        } else if rest.starts_with(b"~/") || rest.starts_with(b"./") {
            2
        } else if rest.starts_with(b"../")
            || (rest.len() >= 3 && rest[0].is_ascii_alphabetic() && rest[1] == b':' && rest[2] == b'\\')
        {
            3
        } else {
            return false;
        };
        named(rest.get(prefix))
    })
}

/// The marks that end a step of a task in scripts written without spaces:
/// 。？！； (ideographic full stop, fullwidth question mark, exclamation mark
/// and semicolon), in UTF-8.
const WIDE_STOPS: [&[u8]; 4] = ["\u{3002}".as_bytes(), "\u{FF1F}".as_bytes(), "\u{FF01}".as_bytes(), "\u{FF1B}".as_bytes()];

/// The words that join two steps of a task ("find X and then write Y").
const STEP_WORDS: [&[u8]; 2] = [b"and", b"then"];

/// A task cut into its steps, in order: at `.`, `?`, `!` or `;` followed by
/// white space or the end, at 。？！； anywhere, and at the words "and" and
/// "then" (any case, a whole word: no ASCII letter or digit, nor a byte past
/// ASCII, right before or after). The cuts themselves belong to no step;
/// steps may be empty. One pass, ASCII bytes only (and the four marks).
pub fn steps(text: &[u8]) -> Vec<&[u8]> {
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b >= 0x80;
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < text.len() {
        let b = text[i];
        let at_word = i == 0 || !word_byte(text[i - 1]);
        let joining = STEP_WORDS.iter().find(|w| {
            at_word
                && text.len() >= i + w.len()
                && text[i..i + w.len()].eq_ignore_ascii_case(w)
                && text.get(i + w.len()).is_none_or(|&c| !word_byte(c))
        });
        let cut = if b".?!;".contains(&b) && text.get(i + 1).is_none_or(|c| PATH_SPACE.contains(c)) {
            1
        } else if let Some(mark) = WIDE_STOPS.iter().find(|m| text[i..].starts_with(m)) {
            mark.len()
        } else {
            joining.map_or(0, |w| w.len())
        };
        if cut > 0 {
            out.push(&text[start..i]);
            i += cut;
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// The terms of `text` as strings, for tests and the binding's explanations.
pub fn terms(text: &[u8], camel: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    Terms::default().each_term(text, camel, |term| out.push(term.to_vec()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, camel: bool) -> Vec<String> {
        terms(text.as_bytes(), camel).into_iter().map(|t| String::from_utf8_lossy(&t).into_owned()).collect()
    }

    macro_rules! tokenizes {
        ($($name:ident: $text:expr, $camel:expr => [$($want:expr),*];)*) => {$(
            #[test]
            fn $name() { assert_eq!(words($text, $camel), vec![$($want.to_string()),*] as Vec<String>); }
        )*};
    }

    #[test]
    fn paths_are_found_where_they_start() {
        for text in ["/root/notes.md", "save to /root/a", "~/a", "(./b)", "\"../c\"", "`/login`", "x\n/y",
            "C:\\data", "d:\\x y"] {
            assert!(mentions_path(text.as_bytes()), "{text}");
        }
        for text in ["and/or", "1 / 2", "https://example.com/a", "/", "//x", "a ~/", ".../x", "C:/x", "CD:\\x",
            "x:\\\\y", "/ x", "", "\u{3000}/x", "~x"] {
            assert!(!mentions_path(text.as_bytes()), "{text}");
        }
    }

    tokenizes! {
        snake: "get_weather_by_city", true => ["get", "weather", "citi"];
        kebab_and_dots: "get-current-date.v2", true => ["get", "current", "date", "v2"];
        camel: "getBaziDetail", true => ["get", "bazi", "detail"];
        camel_acronym: "HTMLParser", true => ["html", "parser"];
        digit_then_capital: "base64Image", true => ["base64", "imag"];
        no_camel_in_prose: "WeChat iPhone", false => ["wechat", "iphon"];
        stop_words_and_single_letters: "I'm looking at a PR", false => ["look", "pr"];
        stems: "charging stations papers", false => ["charg", "station", "paper"];
        han_pairs: "获取热榜", false => ["获取", "取热", "热榜"];
        lone_han: "36氪 top", false => ["36", "氪", "top"];
        mixed_scripts: "abc日本語def", false => ["abc", "日本", "本語", "def"];
        hangul: "삼성전자", false => ["삼성", "성전", "전자"];
        punctuation_separates: "a,b;c—d「e」f", false => [];
        fullwidth_punct: "搜索，关键词", false => ["搜索", "关键", "键词"];
        greek_folds: "ΣΟΦΊΑ", false => ["σοφία"];
        kelvin_sign_separates: "5\u{212A}m", false => [];
        nul_separates: "file\0path", false => ["file", "path"];
        long_word_unstemmed: "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzing", false => ["abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzing"];
        empty: "", false => [];
    }

    #[test]
    fn lone_surrogates_separate() {
        let text = b"ab\xED\xA0\x80cd";
        assert_eq!(terms(text, false), vec![b"ab".to_vec(), b"cd".to_vec()]);
    }

    #[test]
    fn a_megabyte_of_one_character_is_one_pass() {
        let text = "x".repeat(1 << 20);
        assert_eq!(terms(text.as_bytes(), true), vec![text.clone().into_bytes()]);
        let han = "字".repeat(1 << 18);
        let pairs = terms(han.as_bytes(), false);
        assert_eq!(pairs.len(), (1 << 18) - 1);
        assert!(pairs.iter().all(|p| p == "字字".as_bytes()));
    }
}
