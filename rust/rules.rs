//! String patterns over the pair `(server_id, tool_name)` and sets of them.
//!
//! A pattern is split at its *first* `/` into a server glob and a tool glob; a
//! pattern without `/` is a bare tool glob for any server. The pair is matched
//! as two segments, never as a joined string, so server `a_b` + tool `c` and
//! server `a` + tool `b_c` cannot be confused.

use std::ops::ControlFlow;

use crate::fold::Fold;
use crate::glob::SegmentGlob;
use crate::index::{Scratch as IndexScratch, SegmentIndex};
use crate::pairs::PairTable;
use crate::trie::cmp_keys;

/// Why a string pattern was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternIssue {
    EmptyPattern,
    EmptyServer,
    EmptyTool,
    ColonInServer,
    SlashInServer,
}

impl PatternIssue {
    pub fn message(self) -> &'static str {
        match self {
            PatternIssue::EmptyPattern => "empty pattern",
            PatternIssue::EmptyServer => "empty server segment",
            PatternIssue::EmptyTool => "empty tool segment",
            PatternIssue::ColonInServer => "server segment contains ':'",
            PatternIssue::SlashInServer => "server glob contains '/'",
        }
    }
}

/// Splits `"server/tool"` at the first `/`; a bare `"tool"` means server `*`.
pub fn split_pattern(pattern: &[u8]) -> Result<(&[u8], &[u8]), PatternIssue> {
    scan_pattern(pattern).map(|p| (p.server, p.tool))
}

/// A pattern split into its segments, and whether each holds a `*`.
struct Scanned<'a> {
    server: &'a [u8],
    tool: &'a [u8],
    literal: bool,
}

/// [`split_pattern`], also telling whether the pattern holds a `*`.
fn scan_pattern(pattern: &[u8]) -> Result<Scanned<'_>, PatternIssue> {
    if pattern.is_empty() {
        return Err(PatternIssue::EmptyPattern);
    }
    // Plain loops, not memchr: patterns are short, and a memchr call costs
    // more than the scan (it was 6% of compiling 10,000 patterns).
    let Some(slash) = pattern.iter().position(|&b| b == b'/') else {
        return Ok(Scanned { server: b"*", tool: pattern, literal: false });
    };
    let (server, tool) = (&pattern[..slash], &pattern[slash + 1..]);
    check_server_glob(server)?;
    if tool.is_empty() {
        return Err(PatternIssue::EmptyTool);
    }
    Ok(Scanned { server, tool, literal: !pattern.contains(&b'*') })
}

/// The rules for a server glob written on its own (a regex pattern's first
/// element): non-empty, no `:`, and no `/` (a server glob is one segment).
pub fn check_server_glob(server: &[u8]) -> Result<(), PatternIssue> {
    if server.is_empty() {
        Err(PatternIssue::EmptyServer)
    } else if server.contains(&b':') {
        Err(PatternIssue::ColonInServer)
    } else if server.contains(&b'/') {
        Err(PatternIssue::SlashInServer)
    } else {
        Ok(())
    }
}

/// Holds a folded copy of an input only when folding changes it.
pub enum Folded<'a> {
    Same(&'a [u8]),
    Owned(Vec<u8>),
}

impl Folded<'_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Folded::Same(b) => b,
            Folded::Owned(v) => v,
        }
    }
}

/// Applies `fold` (if any) to `input`, borrowing when nothing would change.
pub fn fold_for_match(fold: Option<Fold>, input: &[u8]) -> Folded<'_> {
    match fold {
        Some(f) if !f.is_ascii_fixed_point(input) => Folded::Owned(f.apply(input)),
        _ => Folded::Same(input),
    }
}

/// Buffers a thread reuses across queries, so matching allocates nothing in
/// the steady state.
#[derive(Default)]
pub struct Scratch {
    pub(crate) index: IndexScratch,
    pub(crate) server: Vec<u8>,
    pub(crate) tool: Vec<u8>,
    pub(crate) groups: Vec<u32>,
}

/// The folded (or raw) form of `input` for a set with `fold`, using `buf`.
#[inline]
pub fn fold_with<'a>(fold: Option<Fold>, input: &'a [u8], buf: &'a mut Vec<u8>) -> &'a [u8] {
    match fold {
        // Folding a short name into the buffer costs about what checking
        // that it is already folded would.
        Some(f) => {
            f.apply_into(input, buf);
            buf
        }
        None => input,
    }
}

/// An ordered set of `server/tool` rules, matched exactly or under a fold.
///
/// Rules whose two segments are both literal (the bulk of real lists) sit in
/// one table keyed by the pair. The others are grouped by their server glob:
/// one index over the distinct server globs finds the groups that apply to a
/// server (a literal server is one trie walk), and each group holds an index
/// over its rules' tool globs. A batch resolves the groups once per distinct
/// server.
#[derive(Clone, Debug)]
pub struct RuleSet {
    /// Each literal `(server, tool)` pair with the first rule that wrote it.
    exact: PairTable,
    servers: SegmentIndex,
    groups: Vec<SegmentIndex>,
    len: usize,
    fold: Option<Fold>,
}

/// A pattern segment while a set compiles: the input's own bytes, or a range
/// of the buffer that holds the folded segments (one buffer for them all).
enum Segment<'a> {
    Input(&'a [u8]),
    Folded(usize, usize),
}

impl<'a> Segment<'a> {
    fn of(glob: &'a [u8], fold: Option<Fold>, folded: &mut Vec<u8>) -> Self {
        // Most segments of a folded set change (any capital, `-` or `.`), and
        // folding costs about what checking does: every one is folded.
        match fold {
            Some(f) => {
                let start = folded.len();
                f.append(glob, folded);
                Segment::Folded(start, folded.len())
            }
            None => Segment::Input(glob),
        }
    }

    fn bytes<'b>(&self, folded: &'b [u8]) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Segment::Input(b) => b,
            Segment::Folded(start, end) => &folded[start..end],
        }
    }
}

impl RuleSet {
    /// Compiles patterns; on error returns the index of the first bad one.
    pub fn compile<P: AsRef<[u8]>>(
        patterns: &[P],
        fold: Option<Fold>,
    ) -> Result<Self, (usize, PatternIssue)> {
        Self::compile_indexed(patterns.iter().map(AsRef::as_ref).enumerate(), fold)
    }

    /// Compiles `(index, pattern)` entries, the indices being the patterns'
    /// places in what the caller was given (and the ids `first_match`
    /// answers); on error returns the index of the first bad one.
    pub fn compile_indexed<'a>(
        patterns: impl IntoIterator<Item = (usize, &'a [u8])>,
        fold: Option<Fold>,
    ) -> Result<Self, (usize, PatternIssue)> {
        // Folding maps no character to `*` or from it: a pattern is literal
        // (both segments star-free) before folding exactly when it is after.
        let patterns = patterns.into_iter();
        let mut literals: Vec<(Segment<'a>, Segment<'a>, u32)> = Vec::with_capacity(patterns.size_hint().0);
        let mut others: Vec<(Segment<'a>, Segment<'a>, u32)> = Vec::new();
        let mut folded = Vec::new();
        for (index, pattern) in patterns {
            let p = scan_pattern(pattern).map_err(|e| (index, e))?;
            let entry = (Segment::of(p.server, fold, &mut folded), Segment::of(p.tool, fold, &mut folded), index as u32);
            if p.literal {
                literals.push(entry);
            } else {
                others.push(entry);
            }
        }
        let len = literals.len() + others.len();
        let mut exact = PairTable::with_capacity(literals.len());
        for (server, tool, id) in &literals {
            exact.insert(server.bytes(&folded), tool.bytes(&folded), *id);
        }
        let mut globs: Vec<(&[u8], &[u8], u32)> =
            others.iter().map(|(server, tool, id)| (server.bytes(&folded), tool.bytes(&folded), *id)).collect();
        // The globs of one server glob are neighbours once sorted: a group each.
        globs.sort_unstable_by(|a, b| cmp_keys(a.0, b.0));
        let mut server_globs: Vec<&[u8]> = Vec::new();
        let mut groups = Vec::new();
        for run in globs.chunk_by(|a, b| a.0 == b.0) {
            server_globs.push(run[0].0);
            groups.push(SegmentIndex::build(run.iter().map(|&(_, tool, id)| (tool, id))));
        }
        let servers = SegmentIndex::build(server_globs.iter().enumerate().map(|(g, s)| (*s, g as u32)));
        Ok(RuleSet { exact, servers, groups, len, fold })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn fold(&self) -> Option<Fold> {
        self.fold
    }

    /// The groups whose server glob matches `server` (already folded).
    pub fn server_groups(&self, server: &[u8], scratch: &mut IndexScratch, out: &mut Vec<u32>) {
        out.clear();
        let _ = self.servers.for_each_match(server, scratch, &mut |g| {
            out.push(g);
            ControlFlow::Continue(())
        });
    }

    /// False when no literal rule names `server` (already folded): its
    /// tools need no [`exact_match`](Self::exact_match).
    #[inline]
    pub fn may_have_exact(&self, server: &[u8]) -> bool {
        self.exact.may_have_server(server)
    }

    /// The first rule with exactly this (folded) pair, if any.
    #[inline]
    pub fn exact_match(&self, server: &[u8], tool: &[u8]) -> Option<u32> {
        self.exact.get(server, tool)
    }

    /// Whether a rule of `groups` matches `tool` (already folded).
    #[inline]
    pub fn any_in_groups(&self, groups: &[u32], tool: &[u8], scratch: &mut IndexScratch) -> bool {
        groups.iter().any(|&g| self.groups[g as usize].any_match(tool, scratch))
    }

    /// The index of the first rule matching `(server, tool)`, if any.
    pub fn first_match(&self, server: &[u8], tool: &[u8], scratch: &mut Scratch) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let Scratch { index, server: sbuf, tool: tbuf, groups } = scratch;
        let server = fold_with(self.fold, server, sbuf);
        let tool = fold_with(self.fold, tool, tbuf);
        self.server_groups(server, index, groups);
        let exact = self.exact_match(server, tool);
        let grouped = groups.iter().filter_map(|&g| self.groups[g as usize].min_match(tool, index)).min();
        exact.into_iter().chain(grouped).min().map(|i| i as usize)
    }

    pub fn is_match(&self, server: &[u8], tool: &[u8], scratch: &mut Scratch) -> bool {
        if self.len == 0 {
            return false;
        }
        let Scratch { index, server: sbuf, tool: tbuf, groups } = scratch;
        let server = fold_with(self.fold, server, sbuf);
        let tool = fold_with(self.fold, tool, tbuf);
        if self.exact_match(server, tool).is_some() {
            return true;
        }
        self.server_groups(server, index, groups);
        self.any_in_groups(groups, tool, index)
    }
}

/// Compiles one segment glob, folding it first when the set is loose.
pub fn compile_segment(glob: &[u8], fold: Option<Fold>) -> SegmentGlob {
    match fold {
        Some(f) => SegmentGlob::new(&f.apply(glob)),
        None => SegmentGlob::new(glob),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! splits {
        ($($name:ident: $pattern:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let got = split_pattern($pattern.as_bytes())
                    .map(|(s, t)| (String::from_utf8(s.to_vec()).unwrap(), String::from_utf8(t.to_vec()).unwrap()));
                let want: Result<(&str, &str), PatternIssue> = $want;
                assert_eq!(got, want.map(|(s, t)| (s.to_string(), t.to_string())));
            }
        )*};
    }

    splits! {
        server_and_tool: "github/create_issue" => Ok(("github", "create_issue"));
        first_slash_splits: "a/b/c" => Ok(("a", "b/c"));
        bare_tool_any_server: "create_issue" => Ok(("*", "create_issue"));
        bare_colon_is_a_tool: "a:b" => Ok(("*", "a:b"));
        star_alone: "*" => Ok(("*", "*"));
        double_slash: "a//b" => Ok(("a", "/b"));
        empty: "" => Err(PatternIssue::EmptyPattern);
        empty_server: "/x" => Err(PatternIssue::EmptyServer);
        empty_tool: "x/" => Err(PatternIssue::EmptyTool);
        colon_in_server: "a:b/x" => Err(PatternIssue::ColonInServer);
    }

    fn first(patterns: &[&str], loose: bool, server: &str, tool: &str) -> Option<usize> {
        let set = RuleSet::compile(patterns, loose.then_some(Fold::Loose)).unwrap();
        let mut scratch = Scratch::default();
        let got = set.first_match(server.as_bytes(), tool.as_bytes(), &mut scratch);
        assert_eq!(set.is_match(server.as_bytes(), tool.as_bytes(), &mut scratch), got.is_some());
        got
    }

    macro_rules! matches {
        ($($name:ident: $patterns:expr, loose=$loose:expr, ($server:expr, $tool:expr) => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(first(&$patterns, $loose, $server, $tool), $want);
            }
        )*};
    }

    matches! {
        exact_hit: ["github/*"], loose=false, ("github", "x") => Some(0);
        exact_is_case_sensitive: ["github/*"], loose=false, ("GitHub", "x") => None;
        loose_case_and_separators: ["*/delete_repo"], loose=true, ("s", "Delete-Repo") => Some(0);
        loose_dots: ["*/delete_repo"], loose=true, ("s", "DELETE.REPO") => Some(0);
        loose_pattern_folded: ["GitHub/Delete-*"], loose=true, ("github", "delete_x") => Some(0);
        loose_server_folded: ["Slack.Enterprise/*"], loose=true, ("slack-enterprise", "x") => Some(0);
        structured_pair_not_joined: ["a_b/c"], loose=false, ("a", "b_c") => None;
        structured_pair_hit: ["a_b/c"], loose=false, ("a_b", "c") => Some(0);
        first_of_many: ["x/*", "*/y", "*"], loose=false, ("s", "y") => Some(1);
        slash_in_server_only_by_glob: ["a/b/c"], loose=false, ("a/b", "c") => None;
        slash_in_server_by_star: ["*/c"], loose=false, ("a/b", "c") => Some(0);
        sigma_loose: ["*/ΑΣ*"], loose=true, ("s", "ΑΣΑ") => Some(0);
        dotted_i_loose: ["*/İ"], loose=true, ("s", "i\u{307}") => Some(0);
        kelvin_loose: ["*/k"], loose=true, ("s", "\u{212A}") => Some(0);
        kelvin_exact: ["*/k"], loose=false, ("s", "\u{212A}") => None;
        empty_set: [] as [&str; 0], loose=false, ("s", "t") => None;
        min_across_groups: ["x/*", "*/a*", "x/ab"], loose=false, ("x", "ab") => Some(0);
        min_across_groups_later: ["y/*", "*/a*", "x/ab"], loose=false, ("x", "ab") => Some(1);
        shared_server_glob: ["s/a", "s/b", "s/c"], loose=false, ("s", "c") => Some(2);
    }
}
