//! CEL's `matches()` with RE2's syntax and meaning.
//!
//! CEL specifies RE2 regular expressions. The `regex` crate is close to RE2
//! but not equal: its Perl classes and word boundaries are Unicode-aware (a
//! Cyrillic `а` is a `\w` there, not in RE2), and it accepts syntax RE2
//! refuses (nested classes, set operations, `\u` escapes, the `x` flag, script
//! aliases). So a pattern is parsed here into the `regex-syntax` AST and
//! rewritten where the two differ, and refused with a message where RE2 would
//! refuse it or where this module does not carry RE2's meaning over.
//!
//! What is rewritten:
//! - `\d` is `[0-9]`, `\w` `[0-9A-Za-z_]`, `\s` `[\t\n\f\r ]` (RE2's `\s` has
//!   no `\v`), each negated form its complement; under `(?i)` the engine folds
//!   the ASCII class as RE2 folds it (`(?i)\w` takes the Kelvin sign `K`);
//! - `\b` and `\B` are ASCII word boundaries;
//! - `\pC` is `Cc`, `Cf`, `Co` and `Cs` (RE2's `C` has no unassigned code
//!   points), and `Cs` matches nothing (text here holds no surrogate);
//!   `\p{Name}` is the general category or the script (never a script
//!   extension); `\p{^Name}` is `\P{Name}`;
//! - `\<` and `\>` are the characters `<` and `>` (an escaped punctuation
//!   character is itself in RE2).
//!
//! What is refused: back-references and look-around (neither engine has
//! them), the flags `u`, `x` and `R`, nested bracket classes and class set
//! operations (`[a&&b]`), `\u`/`\U` escapes, `\b{start}` and the like,
//! Unicode classes RE2 does not name, a repetition count over 1000 or nested
//! repetitions whose counts multiply past 1000 (RE2's own limit), a
//! repetition of a repetition (`a**`), capture names with `.`, `[` or `]`;
//! and what RE2 accepts but the `regex` crate cannot say: `\C`, `\Q...\E`,
//! octal escapes.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;
use regex_syntax::ast::{
    self, Assertion, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetBinaryOp, ClassSetItem,
    ClassUnicode, ClassUnicodeKind, Flag, Flags, FlagsItemKind, GroupKind, HexLiteralKind, Literal,
    LiteralKind, RepetitionKind, RepetitionRange, Span,
};

/// RE2's largest repetition count (and bound on nested counts' product).
const MAX_REPEAT: u32 = 1000;
/// The most compiled patterns a thread keeps.
const CACHE: usize = 64;
/// The largest compiled program accepted, in bytes (RE2's default memory
/// budget is of the same order).
const SIZE_LIMIT: usize = 8 << 20;

/// RE2's general categories (`\p{Lu}`; the one-letter ones also as `\pL`).
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// The Unicode scripts, by the long names RE2 knows them by (`\p{Greek}`).
const SCRIPTS: &[&str] = &[
    "Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan", "Balinese", "Bamum",
    "Bassa_Vah", "Batak", "Bengali", "Bhaiksuki", "Bopomofo", "Brahmi", "Braille", "Buginese",
    "Buhid", "Canadian_Aboriginal", "Carian", "Caucasian_Albanian", "Chakma", "Cham", "Cherokee",
    "Chorasmian", "Common", "Coptic", "Cuneiform", "Cypriot", "Cypro_Minoan", "Cyrillic",
    "Deseret", "Devanagari", "Dives_Akuru", "Dogra", "Duployan", "Egyptian_Hieroglyphs", "Elbasan",
    "Elymaic", "Ethiopic", "Garay", "Georgian", "Glagolitic", "Gothic", "Grantha", "Greek",
    "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Gurung_Khema", "Han", "Hangul", "Hanifi_Rohingya",
    "Hanunoo", "Hatran", "Hebrew", "Hiragana", "Imperial_Aramaic", "Inherited",
    "Inscriptional_Pahlavi", "Inscriptional_Parthian", "Javanese", "Kaithi", "Kannada", "Katakana",
    "Kawi", "Kayah_Li", "Kharoshthi", "Khitan_Small_Script", "Khmer", "Khojki", "Khudawadi",
    "Kirat_Rai", "Lao", "Latin", "Lepcha", "Limbu", "Linear_A", "Linear_B", "Lisu", "Lycian",
    "Lydian", "Mahajani", "Makasar", "Malayalam", "Mandaic", "Manichaean", "Marchen",
    "Masaram_Gondi", "Medefaidrin", "Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive",
    "Meroitic_Hieroglyphs", "Miao", "Modi", "Mongolian", "Mro", "Multani", "Myanmar", "Nabataean",
    "Nag_Mundari", "Nandinagari", "New_Tai_Lue", "Newa", "Nko", "Nushu", "Nyiakeng_Puachue_Hmong",
    "Ogham", "Ol_Chiki", "Ol_Onal", "Old_Hungarian", "Old_Italic", "Old_North_Arabian",
    "Old_Permic", "Old_Persian", "Old_Sogdian", "Old_South_Arabian", "Old_Turkic", "Old_Uyghur",
    "Oriya", "Osage", "Osmanya", "Pahawh_Hmong", "Palmyrene", "Pau_Cin_Hau", "Phags_Pa",
    "Phoenician", "Psalter_Pahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra", "Sharada",
    "Shavian", "Siddham", "SignWriting", "Sinhala", "Sogdian", "Sora_Sompeng", "Soyombo",
    "Sundanese", "Sunuwar", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham",
    "Tai_Viet", "Takri", "Tamil", "Tangsa", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan",
    "Tifinagh", "Tirhuta", "Todhri", "Toto", "Tulu_Tigalari", "Ugaritic", "Vai", "Vithkuqi",
    "Wancho", "Warang_Citi", "Yezidi", "Yi", "Zanabazar_Square",
];

/// Whether `text` matches `pattern` somewhere (RE2's partial match, CEL's
/// `matches`); the error names the pattern and what is wrong with it.
pub fn is_match(text: &str, pattern: &str) -> Result<bool, String> {
    thread_local! {
        static COMPILED: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
    }
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= CACHE {
                cache.clear();
            }
            cache.insert(pattern.to_owned(), compile(pattern));
        }
        match &cache[pattern] {
            Ok(regex) => Ok(regex.is_match(text)),
            Err(why) => Err(why.clone()),
        }
    })
}

/// `pattern` as a `regex` crate program with RE2's meaning.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let translated = translate(pattern).map_err(|why| refused(pattern, &why))?;
    regex::RegexBuilder::new(&translated)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|err| refused(pattern, &last_line(&err.to_string())))
}

fn refused(pattern: &str, why: &str) -> String {
    format!("{pattern:?} is not an RE2 regular expression this engine runs: {why}")
}

/// The last line of a multi-line parser message (the line saying what).
fn last_line(message: &str) -> String {
    let line = message.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or(message);
    line.trim().trim_start_matches("error: ").to_owned()
}

/// `pattern` in the `regex` crate's syntax with RE2's meaning, or why not.
pub fn translate(pattern: &str) -> Result<String, String> {
    for (i, _) in pattern.match_indices('\\') {
        // `\C`, `\Q`: the parser would name them as unknown escapes only.
        let escaped = pattern[i + 1..].chars().next();
        if escaped_at(pattern, i) && matches!(escaped, Some('C' | 'Q' | 'E')) {
            return Err(format!("\\{} is not supported", escaped.unwrap_or(' ')));
        }
    }
    let tree = ast::parse::ParserBuilder::new()
        .nest_limit(200)
        .build()
        .parse(pattern)
        .map_err(|err| err.kind().to_string())?;
    let edits = ast::visit(&tree, Rewrite { edits: Vec::new(), repeats: Vec::new() })?;
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut at = 0;
    for (span, text) in edits {
        if span.start.offset < at {
            continue; // inside an edit already made (never, by construction)
        }
        out.push_str(&pattern[at..span.start.offset]);
        out.push_str(&text);
        at = span.end.offset;
    }
    out.push_str(&pattern[at..]);
    Ok(out)
}

/// Whether the backslash at byte `i` starts an escape (it is not itself
/// escaped by an odd run of backslashes before it).
fn escaped_at(pattern: &str, i: usize) -> bool {
    pattern.as_bytes()[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// The rewriting pass: the edits to make, in source order, and the counts of
/// the repetitions being walked through (RE2's nested-count limit).
struct Rewrite {
    edits: Vec<(Span, String)>,
    repeats: Vec<u32>,
}

impl Rewrite {
    fn edit(&mut self, span: Span, text: impl Into<String>) {
        self.edits.push((span, text.into()));
    }

    fn flags(flags: &Flags) -> Result<(), String> {
        for item in &flags.items {
            match item.kind {
                FlagsItemKind::Flag(Flag::Unicode) => return Err("the flag u is not RE2".into()),
                FlagsItemKind::Flag(Flag::CRLF) => return Err("the flag R is not RE2".into()),
                FlagsItemKind::Flag(Flag::IgnoreWhitespace) => return Err("the flag x is not RE2".into()),
                _ => {}
            }
        }
        Ok(())
    }

    fn literal(literal: &Literal) -> Result<(), String> {
        match literal.kind {
            LiteralKind::HexFixed(HexLiteralKind::X) | LiteralKind::HexBrace(HexLiteralKind::X) => Ok(()),
            LiteralKind::HexFixed(_) | LiteralKind::HexBrace(_) => Err("\\u and \\U escapes are not RE2 (write \\x{...})".into()),
            LiteralKind::Octal => Err("octal escapes are not supported".into()),
            _ => Ok(()),
        }
    }
}

/// The body of a Perl class, ASCII as RE2 has it, for use inside brackets.
fn perl_body(kind: &ClassPerlKind) -> &'static str {
    match kind {
        ClassPerlKind::Digit => "0-9",
        ClassPerlKind::Word => "0-9A-Za-z_",
        ClassPerlKind::Space => "\\t\\n\\f\\r ",
    }
}

fn perl_class(class: &ClassPerl) -> String {
    format!("[{}{}]", if class.negated { "^" } else { "" }, perl_body(&class.kind))
}

/// A Unicode class in RE2's meaning, as a class of its own (`bracketed`) or
/// as items inside brackets.
fn unicode_class(class: &ClassUnicode, inside: bool) -> Result<String, String> {
    let (negated, name) = match &class.kind {
        ClassUnicodeKind::OneLetter(letter) => {
            if !"CLMNPSZ".contains(*letter) {
                return Err(format!("\\p{letter} is not an RE2 class"));
            }
            (class.negated, letter.to_string())
        }
        ClassUnicodeKind::Named(name) => match name.strip_prefix('^') {
            Some(rest) => (!class.negated, rest.to_owned()),
            None => (class.negated, name.clone()),
        },
        ClassUnicodeKind::NamedValue { .. } => {
            return Err("\\p{name=value} is not RE2 (write \\p{Greek} or \\p{Lu})".into());
        }
    };
    if name == "Cs" {
        // Surrogates: no text this engine reads holds one.
        return Ok(if negated { "[\\x00-\\x{10FFFF}]" } else { "[^\\x00-\\x{10FFFF}]" }.to_owned());
    }
    let body = if name == "C" {
        // RE2's C is the assigned kinds (Cs holding nothing here), without
        // unassigned code points.
        let items = "\\p{Cc}\\p{Cf}\\p{Co}";
        return Ok(match (negated, inside) {
            (false, true) => items.to_owned(),
            (false, false) => format!("[{items}]"),
            (true, _) => format!("[^{items}]"),
        });
    } else if name == "Any" {
        "Any".to_owned()
    } else if CATEGORIES.contains(&name.as_str()) {
        format!("gc={name}")
    } else if SCRIPTS.contains(&name.as_str()) {
        format!("sc={name}")
    } else {
        return Err(format!("RE2 has no Unicode class {name:?}"));
    };
    let letter = if negated { 'P' } else { 'p' };
    Ok(format!("\\{letter}{{{body}}}"))
}

impl ast::Visitor for Rewrite {
    type Output = Vec<(Span, String)>;
    type Err = String;

    fn finish(mut self) -> Result<Self::Output, String> {
        self.edits.sort_by_key(|(span, _)| span.start.offset);
        Ok(self.edits)
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), String> {
        match ast {
            Ast::ClassPerl(class) => self.edit(class.span, perl_class(class)),
            Ast::ClassUnicode(class) => {
                let text = unicode_class(class, false)?;
                self.edit(class.span, text);
            }
            Ast::Assertion(assertion) => assert_re2(self, assertion)?,
            Ast::Flags(set) => Self::flags(&set.flags)?,
            Ast::Literal(literal) => Self::literal(literal)?,
            Ast::Group(group) => match &group.kind {
                GroupKind::NonCapturing(flags) => Self::flags(flags)?,
                GroupKind::CaptureName { name, .. } => {
                    if name.name.contains(['.', '[', ']']) {
                        return Err(format!("the capture name {:?} is not RE2", name.name));
                    }
                }
                GroupKind::CaptureIndex(_) => {}
            },
            Ast::Repetition(repetition) => {
                if matches!(*repetition.ast, Ast::Repetition(_)) {
                    return Err("a repetition of a repetition (as a** or a{2}{3}) is not RE2".into());
                }
                let count = match repetition.op.kind {
                    RepetitionKind::Range(RepetitionRange::Exactly(n) | RepetitionRange::AtLeast(n)) => Some(n),
                    RepetitionKind::Range(RepetitionRange::Bounded(low, high)) => {
                        if low > MAX_REPEAT {
                            return Err(format!("a repetition count over {MAX_REPEAT}"));
                        }
                        Some(high)
                    }
                    _ => None,
                };
                if let Some(count) = count {
                    if count > MAX_REPEAT {
                        return Err(format!("a repetition count over {MAX_REPEAT}"));
                    }
                    // RE2 divides 1000 by each nested count: 0 is too many.
                    let mut left = MAX_REPEAT;
                    for &outer in self.repeats.iter().chain(std::iter::once(&count)) {
                        left = left.checked_div(outer).unwrap_or(left);
                    }
                    if left == 0 {
                        return Err(format!("nested repetition counts multiply past {MAX_REPEAT}"));
                    }
                }
                self.repeats.push(count.unwrap_or(0));
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_post(&mut self, ast: &Ast) -> Result<(), String> {
        if let Ast::Repetition(_) = ast {
            self.repeats.pop();
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), String> {
        match item {
            ClassSetItem::Perl(class) => {
                let text = if class.negated { perl_class(class) } else { perl_body(&class.kind).to_owned() };
                self.edit(class.span, text);
            }
            ClassSetItem::Unicode(class) => {
                let text = unicode_class(class, true)?;
                self.edit(class.span, text);
            }
            ClassSetItem::Bracketed(_) => {
                return Err("a bracket class inside a bracket class is not RE2 (escape the '[')".into());
            }
            ClassSetItem::Literal(literal) => Self::literal(literal)?,
            ClassSetItem::Range(range) => {
                Self::literal(&range.start)?;
                Self::literal(&range.end)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_binary_op_pre(&mut self, _op: &ClassSetBinaryOp) -> Result<(), String> {
        Err("class set operations (&&, --, ~~) are not RE2".into())
    }
}

/// An assertion with RE2's meaning.
fn assert_re2(rewrite: &mut Rewrite, assertion: &Assertion) -> Result<(), String> {
    match assertion.kind {
        AssertionKind::WordBoundary => rewrite.edit(assertion.span, "(?-u:\\b)"),
        AssertionKind::NotWordBoundary => rewrite.edit(assertion.span, "(?-u:\\B)"),
        AssertionKind::WordBoundaryStartAngle => rewrite.edit(assertion.span, "<"),
        AssertionKind::WordBoundaryEndAngle => rewrite.edit(assertion.span, ">"),
        AssertionKind::WordBoundaryStart
        | AssertionKind::WordBoundaryEnd
        | AssertionKind::WordBoundaryStartHalf
        | AssertionKind::WordBoundaryEndHalf => {
            return Err("\\b{...} is not RE2".into());
        }
        AssertionKind::StartLine | AssertionKind::EndLine | AssertionKind::StartText | AssertionKind::EndText => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(text: &str, pattern: &str) -> bool {
        is_match(text, pattern).unwrap_or_else(|why| panic!("{why}"))
    }

    #[test]
    fn perl_classes_and_boundaries_are_ascii() {
        assert!(matches("abc_09", r"^\w+$"));
        assert!(!matches("p\u{0430}yment", r"^\w+$")); // a Cyrillic a
        assert!(!matches("\u{0661}", r"\d")); // an Arabic-Indic digit
        assert!(!matches("\u{00a0}", r"\s"));
        assert!(!matches("\u{000b}", r"\s")); // RE2's \s has no \v
        assert!(matches("\u{000b}", r"[[:space:]]"));
        assert!(matches("\u{0430}", r"^\W$"));
        assert!(matches("\u{0430}\u{0431}", r"^\B.\B.\B$"));
        assert!(matches("x \u{0430}", r"x\b"));
        assert!(!matches("\u{0430}", r"^[\w]$"));
        assert!(matches("\u{0430}", r"^[\W]$"));
        assert!(matches("\u{212a}", r"(?i)^\w$")); // the Kelvin sign folds to k
        assert!(!matches("\u{212a}", r"^\w$"));
        assert!(matches("a<b>", r"\<b\>"));
    }

    #[test]
    fn unicode_classes_by_re2_names() {
        assert!(matches("\u{03b1}", r"^\p{Greek}$"));
        assert!(!matches("\u{0342}", r"\p{Greek}")); // Inherited, Greek only by extension
        assert!(matches("a", r"\p{^Greek}"));
        assert!(matches("\u{0661}", r"\pN"));
        assert!(!matches("\u{0378}", r"\pC")); // unassigned
        assert!(matches("\u{0001}", r"\pC"));
        assert!(!matches("a", r"\p{Cs}"));
        assert!(matches("a", r"^[\P{Cs}]$"));
        for bad in [r"\p{Grek}", r"\p{greek}", r"\p{Letter}", r"\p{sc=Greek}", r"\pX", r"\p{Alphabetic}"] {
            assert!(compile(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn syntax_re2_refuses_is_refused_with_a_message() {
        for bad in [
            r"(a)\1", r"(?=a)", r"(?!a)", r"(?<=a)b", r"(?x)a b", r"(?u)a", r"[a&&b]", r"[[a]]",
            r"\u0041", r"\b{start}", "a{1001}", "(a{10}){101}", "a**", r"\C", r"\Qa\E", r"\101",
            "(?P<a.b>x)", "(",
        ] {
            let why = compile(bad).expect_err(bad);
            assert!(why.contains("not an RE2 regular expression"), "{bad}: {why}");
            assert!(!why.contains('\n'), "{why}");
        }
        for good in ["(a{10}){100}", r"\\C", r"[\\Q]", r"(?i)(?m)(?s)(?U)a", r"\x{41}", "(?P<n>a)(?<m>b)", ""] {
            assert!(compile(good).is_ok(), "{good}");
        }
    }
}
