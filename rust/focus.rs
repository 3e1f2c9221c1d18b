//! The focus lens: which of a UI session's tools an agent sees, and the
//! keyword search behind the session's `discover_tools` meta-tool.
//!
//! Widget tools are named `session.widget.action`; a global tool has no `.`.
//! Segments are compared as whole byte strings, never as prefixes of the name,
//! so widget `a` does not own `s.ab.click` and session `s` does not own
//! `st.a.click`. Ids never hold a `.` (the caller checks), which is what makes
//! "first segment equals the session" the same test as "starts with
//! `session.`".

use std::collections::HashSet;

use memchr::memchr;
use memchr::memmem::Finder;

use crate::fold::Fold;
use crate::wtf8::decode;

/// Where one tool name falls for a session and its focused and hovered widgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The session's tool for the focused widget.
    Focused,
    /// The session's tool for the hovered widget.
    Hovered,
    /// No `.` in the name: a server-level tool.
    Global,
    /// Another session's tool, or another widget's.
    Other,
}

/// The session and the widgets a lens looks at. No id holds a `.`.
#[derive(Clone, Copy, Debug)]
pub struct Focus<'a> {
    pub session: &'a [u8],
    pub focused: Option<&'a [u8]>,
    pub hovered: Option<&'a [u8]>,
}

impl Focus<'_> {
    /// The part `name` belongs to. A name's second segment ends at the next `.`
    /// or at the end, so `s.w` (no action) is widget `w`'s tool too.
    pub fn classify(&self, name: &[u8]) -> Part {
        let Some(rest) = under_session(name, self.session) else {
            return if memchr(b'.', name).is_none() { Part::Global } else { Part::Other };
        };
        let widget = match memchr(b'.', rest) {
            Some(dot) => &rest[..dot],
            None => rest,
        };
        if self.focused == Some(widget) {
            Part::Focused
        } else if self.hovered == Some(widget) {
            Part::Hovered
        } else {
            Part::Other
        }
    }
}

/// What follows `session.` in `name`, when the name's first segment is `session`.
#[inline]
pub fn under_session<'n>(name: &'n [u8], session: &[u8]) -> Option<&'n [u8]> {
    match name.strip_prefix(session) {
        Some([b'.', rest @ ..]) => Some(rest),
        _ => None,
    }
}

/// One entry of a lens result: an input tool by index, or the meta-tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    Tool(usize),
    Meta,
}

/// The tools a lens keeps, sorted into its parts as they are classified:
/// `(input index, name)` in input order. `Other` tools are not kept at all, so
/// a caller can classify a name, keep the few that matter, and drop the rest.
#[derive(Debug)]
pub struct Parts<N> {
    focused: Vec<(usize, N)>,
    hovered: Vec<(usize, N)>,
    globals: Vec<(usize, N)>,
}

impl<N: AsRef<[u8]>> Parts<N> {
    pub fn new() -> Self {
        Parts { focused: Vec::new(), hovered: Vec::new(), globals: Vec::new() }
    }

    /// Files `name` (tool `index`) under `part`; `Other` is dropped.
    pub fn push(&mut self, part: Part, index: usize, name: N) {
        match part {
            Part::Focused => self.focused.push((index, name)),
            Part::Hovered => self.hovered.push((index, name)),
            Part::Global => self.globals.push((index, name)),
            Part::Other => {}
        }
    }

    /// The lens result: the focused widget's tools, the hovered widget's, the
    /// meta-tool (named `meta` when there is one), then the globals; the first
    /// tool of each name kept; cut to `max_tools` last, so globals go first.
    pub fn pick(&self, meta: Option<&[u8]>, max_tools: usize) -> Vec<Pick> {
        fn tool<N: AsRef<[u8]>>((index, name): &(usize, N)) -> (Pick, &[u8]) {
            (Pick::Tool(*index), name.as_ref())
        }
        let ordered = (self.focused.iter().map(tool))
            .chain(self.hovered.iter().map(tool))
            .chain(meta.map(|name| (Pick::Meta, name)))
            .chain(self.globals.iter().map(tool));
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut out = Vec::new();
        for (pick, name) in ordered {
            if out.len() >= max_tools {
                break;
            }
            if seen.insert(name) {
                out.push(pick);
            }
        }
        out
    }
}

impl<N: AsRef<[u8]>> Default for Parts<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The lens result over `names` (the input tools' names, in input order).
pub fn select<N: AsRef<[u8]>>(names: &[N], focus: &Focus<'_>, meta: Option<&[u8]>, max_tools: usize) -> Vec<Pick> {
    let mut parts = Parts::new();
    for (index, name) in names.iter().enumerate() {
        parts.push(focus.classify(name.as_ref()), index, name.as_ref());
    }
    parts.pick(meta, max_tools)
}

/// A compiled `discover_tools` query for one session.
///
/// A tool matches when its name is under the session and the folded query is
/// a substring of its folded name or folded description. Both sides take the
/// same per-character lower-case, so the test is exactly "contains, ignoring
/// case" one character at a time (no final-sigma context, no separator mapping).
pub struct Discover<'s> {
    session: &'s [u8],
    finder: Finder<'static>,
    empty: bool,
    buf: Vec<u8>,
}

impl<'s> Discover<'s> {
    pub fn new(session: &'s [u8], query: &[u8]) -> Self {
        let needle = Fold::Lower.apply(query);
        let empty = needle.is_empty();
        Discover { session, finder: Finder::new(&needle).into_owned(), empty, buf: Vec::new() }
    }

    /// Whether `name`'s first segment is the session (a global never is).
    #[inline]
    pub fn in_session(&self, name: &[u8]) -> bool {
        under_session(name, self.session).is_some()
    }

    /// Whether the folded `text` contains the folded query.
    pub fn text_matches(&mut self, text: &[u8]) -> bool {
        if self.empty {
            return true;
        }
        // Already-lower-case ASCII (most tool names) is searched in place.
        if Fold::Lower.is_ascii_fixed_point(text) {
            return self.finder.find(text).is_some();
        }
        Fold::Lower.apply_into(text, &mut self.buf);
        self.finder.find(&self.buf).is_some()
    }

    pub fn is_match(&mut self, name: &[u8], description: Option<&[u8]>) -> bool {
        self.in_session(name) && (self.text_matches(name) || description.is_some_and(|d| self.text_matches(d)))
    }
}

/// The indices of the `(name, description)` pairs that `query` finds under
/// `session`, in input order.
pub fn discover<N: AsRef<[u8]>, D: AsRef<[u8]>>(tools: &[(N, Option<D>)], session: &[u8], query: &[u8]) -> Vec<usize> {
    let mut search = Discover::new(session, query);
    (tools.iter().enumerate())
        .filter(|(_, (name, description))| search.is_match(name.as_ref(), description.as_ref().map(AsRef::as_ref)))
        .map(|(index, _)| index)
        .collect()
}

/// The discover result as JSON text: byte for byte what Python's
/// `json.dumps([{"name": n, "description": d}, ...], ensure_ascii=False)`
/// writes for the `found` indices of `tools`, a missing description as `null`.
/// When any of those strings holds a lone surrogate, which cannot travel as
/// UTF-8, it is what `ensure_ascii=True` writes instead (every non-ASCII
/// character escaped).
pub fn found_json<N: AsRef<[u8]>, D: AsRef<[u8]>>(tools: &[(N, Option<D>)], found: &[usize]) -> Vec<u8> {
    let strings = || {
        found.iter().flat_map(|&i| {
            let (name, description) = &tools[i];
            std::iter::once(name.as_ref()).chain(description.as_ref().map(AsRef::as_ref))
        })
    };
    let ascii = strings().any(has_surrogate);
    let mut out = Vec::with_capacity(2 + strings().map(|s| s.len() + 20).sum::<usize>());
    out.push(b'[');
    for (n, &i) in found.iter().enumerate() {
        if n > 0 {
            out.extend_from_slice(b", ");
        }
        let (name, description) = &tools[i];
        out.extend_from_slice(b"{\"name\": ");
        push_json_string(&mut out, name.as_ref(), ascii);
        out.extend_from_slice(b", \"description\": ");
        match description {
            Some(d) => push_json_string(&mut out, d.as_ref(), ascii),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.push(b']');
    out
}

/// A lone surrogate in generalized UTF-8 is `ED A0..BF xx`.
fn has_surrogate(s: &[u8]) -> bool {
    !s.is_ascii() && memchr::memchr_iter(0xED, s).any(|i| s.get(i + 1).is_some_and(|b| (0xA0..=0xBF).contains(b)))
}

fn push_escape(out: &mut Vec<u8>, cp: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    out.extend((0..4).rev().map(|k| HEX[((cp >> (4 * k)) & 0xF) as usize]));
}

/// Python's escapes: the short ones, `\u00XX` for other controls, lower-case hex.
fn push_ascii_escaped(out: &mut Vec<u8>, b: u8) -> bool {
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0C => b'f',
        0x00..=0x1F => {
            push_escape(out, u32::from(b));
            return true;
        }
        _ => return false,
    };
    out.extend_from_slice(&[b'\\', short]);
    true
}

/// Whether byte `b` cannot be copied into a JSON string as it is: a control,
/// `"` or a backslash; in ASCII mode also DEL and every byte of a non-ASCII character.
#[inline]
fn needs_escape(b: u8, ascii: bool) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || (ascii && b >= 0x7F)
}

fn push_json_string(out: &mut Vec<u8>, s: &[u8], ascii: bool) {
    out.push(b'"');
    let mut i = 0;
    while i < s.len() {
        // Runs that need no escaping (nearly everything) are copied whole.
        let run = s[i..].iter().position(|&b| needs_escape(b, ascii)).unwrap_or(s.len() - i);
        out.extend_from_slice(&s[i..i + run]);
        i += run;
        let Some(&b) = s.get(i) else { break };
        if b < 0x80 {
            if !push_ascii_escaped(out, b) {
                push_escape(out, u32::from(b)); // DEL, in ASCII mode
            }
            i += 1;
            continue;
        }
        // Only ASCII mode stops at a non-ASCII byte.
        let (cp, len) = decode(&s[i..]);
        match cp {
            Some(cp) if cp > 0xFFFF => {
                let v = cp - 0x1_0000;
                push_escape(out, 0xD800 + (v >> 10));
                push_escape(out, 0xDC00 + (v & 0x3FF));
            }
            Some(cp) => push_escape(out, cp),
            // Python strings always decode; a stray byte passes through unchanged.
            None => out.extend_from_slice(&s[i..i + len]),
        }
        i += len;
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOCUS: Focus<'static> = Focus { session: b"s", focused: Some(b"w"), hovered: Some(b"h") };

    macro_rules! classifies {
        ($($name:ident: $tool:expr => $want:ident;)*) => {$(
            #[test]
            fn $name() { assert_eq!(FOCUS.classify($tool.as_ref()), Part::$want); }
        )*};
    }

    classifies! {
        focused_action: "s.w.click" => Focused;
        hovered_action: "s.h.click" => Hovered;
        two_segments_is_widget: "s.w" => Focused;
        extra_segments: "s.w.a.b" => Focused;
        global: "raxol_list" => Global;
        global_named_like_session: "s" => Global;
        empty_name_is_global: "" => Global;
        other_widget: "s.x.click" => Other;
        widget_prefix_no_match: "s.wx.click" => Other;
        widget_suffix_no_match: "s.xw.click" => Other;
        other_session_same_widget: "t.w.click" => Other;
        session_prefix_no_match: "st.w.click" => Other;
        session_is_suffix: "xs.w.click" => Other;
        empty_session_segment: ".w.click" => Other;
        empty_widget_segment: "s..click" => Other;
        trailing_dot: "s." => Other;
        case_matters: "S.w.click" => Other;
        widget_case_matters: "s.W.click" => Other;
    }

    #[test]
    fn no_widget_no_widget_tools() {
        let focus = Focus { session: b"s", focused: None, hovered: None };
        assert_eq!(focus.classify(b"s.w.click"), Part::Other);
        assert_eq!(focus.classify(b"g"), Part::Global);
    }

    fn picks(names: &[&str], focus: &Focus<'_>, meta: Option<&str>, max: usize) -> Vec<Pick> {
        select(names, focus, meta.map(str::as_bytes), max)
    }

    #[test]
    fn order_is_focused_hovered_meta_globals() {
        let names = ["g1", "s.h.a", "s.w.a", "t.w.a", "g2", "s.w.b"];
        let want = vec![Pick::Tool(2), Pick::Tool(5), Pick::Tool(1), Pick::Meta, Pick::Tool(0), Pick::Tool(4)];
        assert_eq!(picks(&names, &FOCUS, Some("s.discover_tools"), 15), want);
    }

    #[test]
    fn cut_drops_globals_first_then_meta() {
        let names = ["g1", "s.w.a", "g2"];
        assert_eq!(picks(&names, &FOCUS, Some("s.discover_tools"), 2), vec![Pick::Tool(1), Pick::Meta]);
        assert_eq!(picks(&names, &FOCUS, Some("s.discover_tools"), 1), vec![Pick::Tool(1)]);
        assert_eq!(picks(&names, &FOCUS, Some("s.discover_tools"), 0), vec![]);
    }

    #[test]
    fn duplicates_keep_the_first() {
        let names = ["g", "s.w.a", "g", "s.w.a"];
        assert_eq!(picks(&names, &FOCUS, None, 15), vec![Pick::Tool(1), Pick::Tool(0)]);
    }

    #[test]
    fn duplicates_do_not_count_against_the_cut() {
        let names = ["s.w.a", "s.w.a", "s.w.b"];
        assert_eq!(picks(&names, &FOCUS, None, 2), vec![Pick::Tool(0), Pick::Tool(2)]);
    }

    #[test]
    fn meta_named_like_a_widget_tool_is_dropped() {
        let focus = Focus { session: b"s", focused: Some(b"discover_tools"), hovered: None };
        let names = ["s.discover_tools"];
        assert_eq!(picks(&names, &focus, Some("s.discover_tools"), 15), vec![Pick::Tool(0)]);
    }

    fn found(tools: &[(&str, Option<&str>)], query: &str) -> Vec<usize> {
        discover(tools, b"s", query.as_bytes())
    }

    macro_rules! discovers {
        ($($name:ident: $tool:expr, $description:expr, $query:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let hit = !found(&[($tool, $description)], $query).is_empty();
                assert_eq!(hit, $want);
            }
        )*};
    }

    discovers! {
        name_substring: "s.search.click", None, "click" => true;
        name_case_insensitive: "s.Search.Click", None, "sEARCH" => true;
        description_substring: "s.w.a", Some("Submit the Form"), "the form" => true;
        description_absent: "s.w.a", None, "form" => false;
        empty_query_all: "s.w.a", None, "" => true;
        empty_query_other_session: "t.w.a", None, "" => false;
        global_never: "click", Some("click"), "click" => false;
        discover_global_named_like_session: "s", None, "" => false;
        other_session: "t.w.click", None, "click" => false;
        session_prefix: "st.w.click", None, "click" => false;
        dot_is_literal: "s.w.a", None, "w.a" => true;
        dash_not_underscore: "s.w.a_b", None, "a-b" => false;
        unicode_fold: "s.w.ÉCRIRE", None, "écrire" => true;
        unicode_query_fold: "s.w.écrire", None, "ÉCRIRE" => true;
        sigma_per_character: "s.w.ΟΔΟΣ", None, "οδοσ" => true;
        final_sigma_is_its_own: "s.w.ΟΔΟΣ", None, "οδος" => false;
        kelvin_folds_to_k: "s.w.\u{212A}ey", None, "key" => true;
        dotted_capital_i: "s.w.İ", None, "i\u{307}" => true;
        sharp_s_not_ss: "s.w.straße", None, "strasse" => false;
        session_case_matters: "S.w.click", None, "click" => false;
    }

    #[test]
    fn discover_keeps_input_order() {
        let tools = [("s.b.x", None), ("s.a.x", Some("x")), ("t.a.x", None), ("s.c.y", Some("has X"))];
        assert_eq!(found(&tools, "x"), vec![0, 1, 3]);
    }

    #[test]
    fn lone_surrogates_match_only_themselves() {
        let tools: [(&[u8], Option<&[u8]>); 2] =
            [(b"s.w.\xED\xA0\x80", None), (b"s.w.\xEF\xBF\xBD", None)];
        assert_eq!(discover(&tools, b"s", b"\xED\xA0\x80"), vec![0]);
    }

    fn json(tools: &[(&[u8], Option<&[u8]>)]) -> String {
        let all: Vec<usize> = (0..tools.len()).collect();
        String::from_utf8(found_json(tools, &all)).unwrap()
    }

    macro_rules! encodes {
        ($($name:ident: $text:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let text: &[u8] = $text.as_ref();
                assert_eq!(json(&[(text, None)]), format!("[{{\"name\": {}, \"description\": null}}]", $want));
            }
        )*};
    }

    encodes! {
        json_plain: "s.w.a" => r#""s.w.a""#;
        json_quote_backslash: r#"a"b\c"# => r#""a\"b\\c""#;
        json_short_escapes: "\n\r\t\u{8}\u{c}" => r#""\n\r\t\b\f""#;
        json_controls_lower_hex: "\u{0}\u{1}\u{1f}" => r#""\u0000\u0001\u001f""#;
        json_del_raw: "\u{7f}" => "\"\u{7f}\"";
        json_slash_raw: "a/b" => r#""a/b""#;
        json_non_ascii_raw: "é😀\u{2028}" => "\"é😀\u{2028}\"";
        json_surrogate_switches_to_ascii: b"\xC3\xA9\xED\xA0\x80\x7F\xF0\x9F\x98\x80" => r#""\u00e9\ud800\u007f\ud83d\ude00""#;
    }

    #[test]
    fn json_list_shape() {
        let tools: [(&[u8], Option<&[u8]>); 3] = [(b"a", Some(b"A")), (b"b", None), (b"c", Some(b""))];
        assert_eq!(found_json(&tools, &[]), b"[]");
        assert_eq!(
            String::from_utf8(found_json(&tools, &[0, 2])).unwrap(),
            r#"[{"name": "a", "description": "A"}, {"name": "c", "description": ""}]"#
        );
    }

    #[test]
    fn json_one_surrogate_escapes_every_string() {
        let tools: [(&[u8], Option<&[u8]>); 2] = [("é".as_bytes(), None), (b"x", Some(b"\xED\xBF\xBF"))];
        assert_eq!(
            String::from_utf8(found_json(&tools, &[0, 1])).unwrap(),
            r#"[{"name": "\u00e9", "description": null}, {"name": "x", "description": "\udfff"}]"#
        );
        assert_eq!(String::from_utf8(found_json(&tools, &[0])).unwrap(), "[{\"name\": \"é\", \"description\": null}]");
    }
}
