//! String patterns over the pair `(server_id, tool_name)` and sets of them.
//!
//! A pattern is split at its *first* `/` into a server glob and a tool glob; a
//! pattern without `/` is a bare tool glob for any server. The pair is matched
//! as two segments, never as a joined string, so server `a_b` + tool `c` and
//! server `a` + tool `b_c` cannot be confused.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::fold::{fold_ascii_word, Fold, LazyFold};
use crate::glob::{GlobList, SegmentGlob};
use crate::index::{Scratch as IndexScratch, SegmentIndex, Sweeping};
use crate::pairs::PairTable;
use crate::shortcut::Shortcut;

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
/// (A set compiles its patterns by `copy_pattern`, to the same effect.)
pub fn split_pattern(pattern: &[u8]) -> Result<(&[u8], &[u8]), PatternIssue> {
    if pattern.is_empty() {
        return Err(PatternIssue::EmptyPattern);
    }
    let Some(slash) = pattern.iter().position(|&b| b == b'/') else {
        return Ok((b"*", pattern));
    };
    let (server, tool) = (&pattern[..slash], &pattern[slash + 1..]);
    check_server_glob(server)?;
    if tool.is_empty() {
        return Err(PatternIssue::EmptyTool);
    }
    Ok((server, tool))
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
    pub(crate) groups: Groups,
}

impl Scratch {
    /// A scratch for tests that takes the paths meant for long names on any
    /// name: candidates left to the sweeps (`what`), and the tool matched
    /// once across all groups whenever a server has more than one.
    pub fn always_sweeping(what: Sweeping) -> Self {
        Scratch { index: IndexScratch::always_sweeping(what), groups: Groups::across_all(), ..Scratch::default() }
    }
}

/// The groups whose server glob matches a server: a list, and when it is
/// longer than [`FEW`] a bit set too, for matching the tool across groups.
#[derive(Clone, Debug)]
pub struct Groups {
    list: Vec<u32>,
    /// The bits of `list` when it is long (`across_from` is then set), and
    /// no others.
    member: Vec<u64>,
    /// More groups than this match the tool across all groups at once (when
    /// it is long enough for that to pay); tests set it to 1.
    many: usize,
    /// Tools longer than this are matched across all groups.
    across_from: usize,
}

impl Default for Groups {
    fn default() -> Self {
        Groups { list: Vec::new(), member: Vec::new(), many: FEW, across_from: usize::MAX }
    }
}

impl Groups {
    pub(crate) fn across_all() -> Self {
        Groups { many: 1, ..Groups::default() }
    }

    /// Whether a tool of `len` bytes is matched group by group (not across
    /// all groups at once).
    #[inline]
    pub(crate) fn one_by_one(&self, len: usize) -> bool {
        len <= self.across_from
    }

    /// Whether `group` is in the list.
    pub(crate) fn holds(&self, group: u32) -> bool {
        self.list.contains(&group)
    }

    #[inline]
    fn contains(&self, group: u32) -> bool {
        self.member[group as usize / 64] & (1 << (group % 64)) != 0
    }
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
    groups: Vec<Group>,
    /// The globs of every `Group::Few`, in one list (one allocation, not a
    /// few per group: a long list has hundreds of one-glob groups), with
    /// their ids in `few_ids`.
    few: GlobList,
    few_ids: Vec<u32>,
    len: usize,
    fold: Option<Fold>,
    /// The compile's copy of the patterns and, for each tool glob, its
    /// range there, its rule and its group: what `across` is built from.
    text: Vec<u8>,
    tool_globs: Vec<ToolGlob>,
    /// One index over the tool globs of all groups, built by the first query
    /// whose server matches many groups and whose tool is long: then one
    /// walk over the tool serves them all, instead of one per group. (Boxed:
    /// most sets never build it.)
    across: OnceLock<Box<Across>>,
    /// The group of the server glob `*`, which every server's plan holds
    /// (bare tool patterns and `*/tool`): its answer depends on the tool
    /// alone, so a batch may keep it per name (`crate::memo`).
    every: Option<u32>,
    /// The every-server group's [`Shortcut`] for long batches, built by the
    /// first that asks for it (`None` inside: the group has none).
    shortcut: OnceLock<Option<Box<Shortcut>>>,
}

#[derive(Clone, Copy, Debug)]
struct ToolGlob {
    start: u32,
    end: u32,
    id: u32,
    group: u32,
}

/// The tool globs of all groups in one index (ids: places in `tool_globs`).
#[derive(Clone, Debug)]
struct Across {
    index: SegmentIndex,
}

/// A server whose groups, times its tool's length, come to more than this
/// matches the tool across all groups at once (if there are more than
/// [`FEW`] groups): below, a walk per group costs less than the shared
/// index's matches in other groups.
const ACROSS_MIN: usize = 4_096;

/// The tool globs of one server glob.
#[derive(Clone, Debug)]
enum Group {
    /// At most [`FEW`] globs, matched one by one: `few` globs `start..end`.
    Few(u32, u32),
    /// Boxed: an index is some 500 bytes, and most groups are few.
    Indexed(Box<SegmentIndex>),
}

/// Groups of at most this many globs are matched glob by glob.
const FEW: usize = 4;

/// What [`copy_pattern`] found in the copy of a pattern: where its first
/// `/` and first `:` are, and whether it holds a `*`.
#[derive(Debug, PartialEq, Eq)]
struct Marks {
    slash: Option<usize>,
    colon: Option<usize>,
    star: bool,
}

impl Marks {
    /// Notes the marked bytes of `word`, the copy's bytes from `at` on. A
    /// word may overlap one noted before: the overlap holds nothing new.
    #[inline]
    fn note(&mut self, word: u64, at: usize) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        // The high bit of each byte equal to `c`. A byte just above an equal
        // one may be marked too (the borrow), never one below: the lowest
        // mark is exact, and there is a mark exactly when there is a match.
        let equal = |c: u8| {
            let x = word ^ (ONES * u64::from(c));
            x.wrapping_sub(ONES) & !x & HIGH
        };
        let first = |marks: u64| at + (marks.trailing_zeros() / 8) as usize;
        if self.slash.is_none() && equal(b'/') != 0 {
            self.slash = Some(first(equal(b'/')));
        }
        if self.colon.is_none() && equal(b':') != 0 {
            self.colon = Some(first(equal(b':')));
        }
        self.star |= equal(b'*') != 0;
    }

    /// The same, a byte at a time.
    fn scan(bytes: &[u8]) -> Self {
        Marks {
            slash: bytes.iter().position(|&b| b == b'/'),
            colon: bytes.iter().position(|&b| b == b':'),
            star: bytes.contains(&b'*'),
        }
    }
}

/// Appends `pattern` to `out`, folded by `fold` (as it is without one), and
/// marks the copy's `/`, `:` and `*`. Folding makes none of these characters
/// and removes none, so they stand in the copy as in the pattern. One pass of
/// eight bytes at a time does all of it for ASCII (or unfolded) text: a
/// separate scan, fold and copy cost three times as much.
fn copy_pattern(pattern: &[u8], fold: Option<Fold>, out: &mut Vec<u8>) -> Marks {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (start, len) = (out.len(), pattern.len());
    // A word as it goes into the copy, or None for non-ASCII to fold.
    let copy = |raw: u64| match fold {
        None => Some(raw),
        Some(f) if raw & HIGH == 0 => Some(fold_ascii_word(raw, f == Fold::Loose)),
        Some(_) => None,
    };
    let mut marks = Marks { slash: None, colon: None, star: false };
    // Whole words are written, the last one reaching up to seven bytes past
    // the copy's end: room for them, and the length set after.
    out.reserve(len + 8);
    let room = &mut out.spare_capacity_mut()[..len + 8];
    let mut put = |at: usize, word: u64| {
        for (slot, byte) in room[at..at + 8].iter_mut().zip(word.to_le_bytes()) {
            slot.write(byte);
        }
    };
    let mut folded_all = true;
    if len < 8 {
        // Zero padding folds to itself and is none of the marked bytes.
        match copy(short_word(pattern)) {
            Some(word) => {
                put(0, word);
                marks.note(word, 0);
            }
            None => folded_all = false,
        }
    } else {
        let mut at = 0;
        while at < len {
            // The last word overlaps the one before it when the length is
            // not a multiple of eight: the same bytes, folded alike, again.
            let from = at.min(len - 8);
            let raw = u64::from_le_bytes(pattern[from..from + 8].try_into().expect("eight bytes"));
            let Some(word) = copy(raw) else {
                folded_all = false;
                break;
            };
            put(from, word);
            marks.note(word, from);
            at = from + 8;
        }
    }
    if folded_all {
        // SAFETY: `put` initialized every byte up to `start + len`.
        unsafe { out.set_len(start + len) };
    } else {
        fold.expect("only folding refuses a word").append(pattern, out);
        marks = Marks::scan(&out[start..]);
    }
    marks
}

/// A string of fewer than eight bytes as a little-endian word, zero-padded:
/// two loads that may overlap, without a call to `memcpy`.
#[inline]
fn short_word(s: &[u8]) -> u64 {
    let len = s.len();
    let two = |lo: u64, hi: u64, size: usize| lo | hi << (8 * (len - size));
    match len {
        4.. => two(
            u64::from(u32::from_le_bytes(s[..4].try_into().expect("four bytes"))),
            u64::from(u32::from_le_bytes(s[len - 4..].try_into().expect("four bytes"))),
            4,
        ),
        2.. => two(
            u64::from(u16::from_le_bytes(s[..2].try_into().expect("two bytes"))),
            u64::from(u16::from_le_bytes(s[len - 2..].try_into().expect("two bytes"))),
            2,
        ),
        1 => u64::from(s[0]),
        _ => 0,
    }
}

/// A rule while a set compiles: its segments as ranges of the set's buffer
/// of copied (and folded) patterns.
struct Rule {
    server: (usize, usize),
    tool: (usize, usize),
    id: u32,
    literal: bool,
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
    pub fn compile_indexed<'a, I>(patterns: I, fold: Option<Fold>) -> Result<Self, (usize, PatternIssue)>
    where
        I: IntoIterator<Item = (usize, &'a [u8])>,
        I::IntoIter: Clone,
    {
        let patterns = patterns.into_iter();
        // Every pattern is copied (folded for a loose set) into one buffer,
        // which the rest of the build reads instead of the caller's scattered
        // strings. It starts with the `*` that bare tool globs take as server.
        let mut text = Vec::with_capacity(1 + patterns.clone().map(|(_, p)| p.len()).sum::<usize>());
        text.push(b'*');
        let any_server = (0, 1);
        let mut rules = Vec::with_capacity(patterns.size_hint().0);
        let mut literals = 0;
        for (index, pattern) in patterns {
            let issue = |e| (index, e);
            if pattern.is_empty() {
                return Err(issue(PatternIssue::EmptyPattern));
            }
            let start = text.len();
            let marks = copy_pattern(pattern, fold, &mut text);
            let end = text.len();
            // As `split_pattern` decides, on the copy.
            let rule = match marks.slash {
                None => Rule { server: any_server, tool: (start, end), id: index as u32, literal: false },
                Some(0) => return Err(issue(PatternIssue::EmptyServer)),
                Some(slash) if marks.colon.is_some_and(|c| c < slash) => {
                    return Err(issue(PatternIssue::ColonInServer));
                }
                Some(slash) if start + slash + 1 == end => return Err(issue(PatternIssue::EmptyTool)),
                // Folding maps no character to `*` or from it: a pattern is
                // literal (both segments star-free) before folding exactly when after.
                Some(slash) => Rule {
                    server: (start, start + slash),
                    tool: (start + slash + 1, end),
                    id: index as u32,
                    literal: !marks.star,
                },
            };
            literals += usize::from(rule.literal);
            rules.push(rule);
        }
        let bytes = |(start, end): (usize, usize)| &text[start..end];
        let mut exact = PairTable::with_capacity(literals);
        for rule in rules.iter().filter(|r| r.literal) {
            exact.insert(bytes(rule.server), bytes(rule.tool), rule.id);
        }
        // The globs of one server glob form a group, numbered in the order
        // the server globs first appear (hashed: a sort by the server globs'
        // bytes cost a fifth of a compile). Bare tool globs, most of a long
        // list, share the one `*` group without a lookup each.
        let mut group_of: FxHashMap<&[u8], u32> = FxHashMap::default();
        let mut server_globs: Vec<&[u8]> = Vec::new();
        let mut group_for = |range| -> u32 {
            let server = bytes(range);
            *group_of.entry(server).or_insert_with(|| {
                server_globs.push(server);
                server_globs.len() as u32 - 1
            })
        };
        let mut any_group = None;
        let mut globs: Vec<(u32, &[u8], u32)> = Vec::with_capacity(rules.len() - literals);
        let mut tool_globs = Vec::with_capacity(rules.len() - literals);
        let mut sizes: Vec<u32> = Vec::new();
        for rule in rules.iter().filter(|r| !r.literal) {
            let group = if rule.server == any_server {
                *any_group.get_or_insert_with(|| group_for(any_server))
            } else {
                group_for(rule.server)
            };
            if group as usize == sizes.len() {
                sizes.push(0);
            }
            sizes[group as usize] += 1;
            globs.push((group, bytes(rule.tool), rule.id));
            let (start, end) = rule.tool;
            tool_globs.push(ToolGlob { start: start as u32, end: end as u32, id: rule.id, group });
        }
        // Each group's globs side by side (a counting sort), in rule order.
        let mut next: Vec<usize> = sizes
            .iter()
            .scan(0, |start, &size| {
                let at = *start;
                *start += size as usize;
                Some(at)
            })
            .collect();
        let mut grouped: Vec<(&[u8], u32)> = vec![(&b""[..], 0); globs.len()];
        for &(group, tool, id) in &globs {
            grouped[next[group as usize]] = (tool, id);
            next[group as usize] += 1;
        }
        let (mut few, mut few_ids) = (GlobList::default(), Vec::new());
        let mut rest = &grouped[..];
        let groups = sizes
            .iter()
            .map(|&size| {
                let (run, after) = rest.split_at(size as usize);
                rest = after;
                if run.len() > FEW {
                    return Group::Indexed(Box::new(SegmentIndex::build(run.iter().copied())));
                }
                let start = few_ids.len() as u32;
                for &(tool, id) in run {
                    few.push(tool);
                    few_ids.push(id);
                }
                Group::Few(start, few_ids.len() as u32)
            })
            .collect();
        let servers = SegmentIndex::build(server_globs.iter().enumerate().map(|(g, s)| (*s, g as u32)));
        let across = OnceLock::new();
        let every = group_of.get(&b"*"[..]).copied();
        let shortcut = OnceLock::new();
        Ok(RuleSet { exact, servers, groups, few, few_ids, len: rules.len(), fold, text, tool_globs, across, every, shortcut })
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

    /// Whether every rule applies to every server alike: no literal pair,
    /// and every server glob matches the empty server (so it is all stars,
    /// and matches any server). A batch then resolves no server.
    pub fn server_blind(&self) -> bool {
        let mut groups = Groups::default();
        self.server_groups(b"", &mut IndexScratch::default(), &mut groups);
        self.exact.is_empty() && groups.list.len() == self.groups.len()
    }

    /// The groups whose server glob matches `server` (already folded).
    pub fn server_groups(&self, server: &[u8], scratch: &mut IndexScratch, out: &mut Groups) {
        if out.across_from != usize::MAX {
            // The bits of the last list: cleared one by one, not the whole
            // set (a server of a batch over many servers costs its groups).
            for &g in &out.list {
                out.member[g as usize / 64] = 0;
            }
        }
        out.list.clear();
        let _ = self.servers.for_each_match(server, scratch, &mut |g| {
            out.list.push(g);
            ControlFlow::Continue(())
        });
        out.across_from = usize::MAX;
        if out.list.len() > out.many {
            let words = self.groups.len().div_ceil(64);
            if out.member.len() < words {
                out.member.resize(words, 0);
            }
            for &g in &out.list {
                out.member[g as usize / 64] |= 1 << (g % 64);
            }
            out.across_from = if out.many < FEW { 0 } else { ACROSS_MIN / out.list.len() };
        }
    }

    /// The index across all groups.
    fn across(&self) -> &Across {
        self.across.get_or_init(|| {
            let globs = self.tool_globs.iter().enumerate();
            let index = SegmentIndex::build(globs.map(|(e, t)| (&self.text[t.start as usize..t.end as usize], e as u32)));
            Box::new(Across { index })
        })
    }

    /// The lengths of the tools of the literal rules that name `server`
    /// (already folded), as [`length_bit`](crate::pairs::length_bit)s: a tool
    /// of another length needs no [`exact_match`](Self::exact_match).
    #[inline]
    pub fn exact_lengths(&self, server: &[u8]) -> u64 {
        self.exact.tool_lengths(server)
    }

    /// The first rule with exactly this (folded) pair, if any.
    #[inline]
    pub fn exact_match(&self, server: &[u8], tool: &[u8]) -> Option<u32> {
        self.exact.get(server, tool)
    }

    /// Whether a rule of `groups` matches `tool` (already folded).
    #[inline]
    pub fn any_in_groups(&self, groups: &Groups, tool: &[u8], scratch: &mut IndexScratch) -> bool {
        if tool.len() > groups.across_from {
            return self.any_across(groups, tool, scratch);
        }
        groups.list.iter().any(|&g| self.any_in_group(g, tool, scratch))
    }

    /// [`any_in_groups`](Self::any_in_groups) of the loose fold of `name`
    /// (a loose set's groups): the name is folded only when a glob must be
    /// verified against it (see [`SegmentIndex::any_match_loose`]) or a
    /// group of a few globs is tried.
    #[inline]
    pub fn any_in_groups_loose(&self, groups: &Groups, name: &mut LazyFold<'_>, scratch: &mut IndexScratch) -> bool {
        let raw = name.raw();
        if groups.list.is_empty() {
            // Nothing to match: a name that is not ASCII is not folded for it.
            return false;
        }
        if raw.len() > groups.across_from || !raw.is_ascii() {
            return self.any_in_groups(groups, name.get(), scratch);
        }
        groups.list.iter().any(|&g| self.any_in_group_loose(g, name, scratch))
    }

    /// The group of the server glob `*`, if any rule has it.
    #[inline]
    pub fn every_server_group(&self) -> Option<u32> {
        self.every
    }

    /// The [`Shortcut`] of the every-server group, built by the first call:
    /// for a group of more than a few globs, on a set that matches exactly
    /// or under the loose fold.
    pub fn every_shortcut(&self) -> Option<&Shortcut> {
        let every = self.every?;
        let built = self.shortcut.get_or_init(|| {
            let loose = match self.fold {
                None => false,
                Some(Fold::Loose) => true,
                Some(Fold::Lower) => return None,
            };
            if !matches!(self.groups[every as usize], Group::Indexed(_)) {
                return None;
            }
            let globs = self.tool_globs.iter().filter(|t| t.group == every);
            Shortcut::build(globs.map(|t| &self.text[t.start as usize..t.end as usize]), loose).map(Box::new)
        });
        built.as_deref()
    }

    /// The every-server group's [`Shortcut`] if a call of
    /// [`every_shortcut`](Self::every_shortcut) built it already (this
    /// builds nothing).
    pub fn built_shortcut(&self) -> Option<&Shortcut> {
        self.shortcut.get().and_then(|built| built.as_deref())
    }

    /// Whether a rule of group `g` matches `tool` (already folded).
    #[inline]
    pub fn any_in_group(&self, g: u32, tool: &[u8], scratch: &mut IndexScratch) -> bool {
        match &self.groups[g as usize] {
            Group::Few(start, end) => (*start..*end).any(|i| self.few.is_match(i, tool)),
            Group::Indexed(index) => index.any_match(tool, scratch),
        }
    }

    /// [`any_in_group`](Self::any_in_group) of the loose fold of `name`,
    /// folding it only if needed (as [`any_in_groups_loose`](Self::any_in_groups_loose)).
    #[inline]
    pub fn any_in_group_loose(&self, g: u32, name: &mut LazyFold<'_>, scratch: &mut IndexScratch) -> bool {
        match &self.groups[g as usize] {
            Group::Few(start, end) => (*start..*end).any(|i| self.few.is_match(i, name.get())),
            // (It folds a name that is not ASCII first.)
            Group::Indexed(index) => index.any_match_loose(name, scratch),
        }
    }

    /// [`any_in_groups`](Self::any_in_groups) but for group `skip`, for a tool
    /// the groups match one by one ([`Groups::one_by_one`]).
    #[inline]
    pub fn any_in_groups_but(&self, groups: &Groups, skip: u32, tool: &[u8], scratch: &mut IndexScratch) -> bool {
        debug_assert!(groups.one_by_one(tool.len()));
        groups.list.iter().any(|&g| g != skip && self.any_in_group(g, tool, scratch))
    }

    /// [`any_in_groups_loose`](Self::any_in_groups_loose) but for group `skip`,
    /// for a name the groups match one by one.
    #[inline]
    pub fn any_in_groups_loose_but(&self, groups: &Groups, skip: u32, name: &mut LazyFold<'_>, scratch: &mut IndexScratch) -> bool {
        debug_assert!(groups.one_by_one(name.raw().len()));
        groups.list.iter().any(|&g| g != skip && self.any_in_group_loose(g, name, scratch))
    }

    /// [`any_in_groups`](Self::any_in_groups) by one walk over the tool:
    /// every matching tool glob of any group is looked at once, however
    /// many groups there are.
    #[cold]
    #[inline(never)]
    fn any_across(&self, groups: &Groups, tool: &[u8], scratch: &mut IndexScratch) -> bool {
        let flow = self.across().index.for_each_match(tool, scratch, &mut |e| match groups.contains(self.tool_globs[e as usize].group) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        });
        flow.is_break()
    }

    /// The smallest id of a rule of `groups` that matches `tool`.
    fn min_in_groups(&self, groups: &Groups, tool: &[u8], scratch: &mut IndexScratch) -> Option<u32> {
        if tool.len() > groups.across_from {
            let mut best: Option<u32> = None;
            let _ = self.across().index.for_each_match(tool, scratch, &mut |e| {
                let glob = self.tool_globs[e as usize];
                if groups.contains(glob.group) {
                    best = Some(best.map_or(glob.id, |b| b.min(glob.id)));
                }
                ControlFlow::Continue(())
            });
            return best;
        }
        groups.list.iter().filter_map(|&g| self.min_in_group(g, tool, scratch)).min()
    }

    /// The smallest id of a rule of group `g` that matches `tool`.
    fn min_in_group(&self, g: u32, tool: &[u8], scratch: &mut IndexScratch) -> Option<u32> {
        match &self.groups[g as usize] {
            Group::Few(start, end) => {
                (*start..*end).filter(|&i| self.few.is_match(i, tool)).map(|i| self.few_ids[i as usize]).min()
            }
            Group::Indexed(index) => index.min_match(tool, scratch),
        }
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
        let grouped = self.min_in_groups(groups, tool, index);
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

    /// Random patterns over the bytes that matter to a copy: the marked
    /// ones, the bytes one above them (which a word's borrow could mark),
    /// what folds, and what folds to another length.
    fn hostile_patterns() -> Vec<Vec<u8>> {
        let pieces: [&[u8]; 16] = [
            b"/", b":", b"*", b".", b";", b"+", b"0", b"\x01", b"A", b"-", b"_", b"z",
            "É".as_bytes(), "İ".as_bytes(), "\u{212A}".as_bytes(), b"\xED\xA0\x80",
        ];
        let mut next = crate::test_rng::below(0x2545_F491_4F6C_DD1D);
        (0..4_000).map(|_| (0..next(24)).flat_map(|_| pieces[next(16) as usize].to_vec()).collect()).collect()
    }

    #[test]
    fn a_copy_marks_what_a_byte_scan_finds() {
        for pattern in hostile_patterns() {
            for fold in [None, Some(Fold::Loose), Some(Fold::Lower)] {
                let mut out = b"x/".to_vec();
                let marks = copy_pattern(&pattern, fold, &mut out);
                let want = fold.map_or_else(|| pattern.clone(), |f| f.apply(&pattern));
                assert_eq!(&out[2..], &want[..], "{pattern:?} {fold:?}");
                assert_eq!(marks, Marks::scan(&want), "{pattern:?} {fold:?}");
            }
        }
    }

    /// A set refuses what `split_pattern` refuses, and its rules are the
    /// split segments (folded): a rule matches its own pair.
    #[test]
    fn a_set_splits_as_split_pattern_does() {
        for pattern in hostile_patterns() {
            for fold in [None, Some(Fold::Loose)] {
                let set = RuleSet::compile(&[&pattern], fold);
                match split_pattern(&pattern) {
                    Err(issue) => assert_eq!(set.err(), Some((0, issue)), "{pattern:?}"),
                    Ok((server, tool)) => {
                        let set = set.unwrap_or_else(|e| panic!("{pattern:?} refused: {e:?}"));
                        let literal = |s: &[u8]| s.iter().all(|&b| b != b'*');
                        if literal(server) && literal(tool) {
                            let mut scratch = Scratch::default();
                            assert_eq!(set.first_match(server, tool, &mut scratch), Some(0), "{pattern:?}");
                            let mut other = tool.to_vec();
                            other.push(b'!');
                            assert_eq!(set.first_match(server, &other, &mut scratch), None, "{pattern:?}");
                        }
                    }
                }
            }
        }
    }

    /// Random lists with many globs per server glob (indexed groups) and a
    /// few (groups matched glob by glob), bare and literal ones among them:
    /// the first match is the first rule whose two globs match, one by one.
    #[test]
    fn random_sets_agree_with_rule_by_rule_matching() {
        let mut next = crate::test_rng::below(0x1234_5678_9ABC_DEF1);
        let servers = ["a", "b", "*", "a*", "*b", "A-"];
        let alphabet = ["x", "y", "*", "_", "X", "-"];
        let word = |next: &mut dyn FnMut(u64) -> u64, n: u64| -> String {
            (0..1 + next(n)).map(|_| alphabet[next(6) as usize]).collect()
        };
        for _ in 0..400 {
            let count = next(40);
            let patterns: Vec<String> = (0..count)
                .map(|_| match next(3) {
                    0 => word(&mut next, 4),
                    _ => format!("{}/{}", servers[next(6) as usize], word(&mut next, 4)),
                })
                .collect();
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            for fold in [None, Some(Fold::Loose)] {
                let set = RuleSet::compile(&refs, fold).expect("valid patterns");
                let mut scratches =
                    [Scratch::default(), Scratch::always_sweeping(Sweeping::Middles), Scratch::always_sweeping(Sweeping::Whole)];
                for _ in 0..10 {
                    let server = ["a", "b", "ab", "a_", "c"][next(5) as usize];
                    let tool: String = (0..next(5)).map(|_| ["x", "y", "_", "X"][next(4) as usize]).collect();
                    let folded = |s: &str| fold_for_match(fold, s.as_bytes()).as_bytes().to_vec();
                    let want = refs.iter().position(|p| {
                        let (s, t) = split_pattern(p.as_bytes()).expect("valid");
                        compile_segment(s, fold).is_match(&folded(server)) && compile_segment(t, fold).is_match(&folded(&tool))
                    });
                    for scratch in &mut scratches {
                        let got = set.first_match(server.as_bytes(), tool.as_bytes(), scratch);
                        assert_eq!(got, want, "{refs:?} {fold:?} on {server}/{tool}");
                        assert_eq!(set.is_match(server.as_bytes(), tool.as_bytes(), scratch), want.is_some());
                    }
                }
            }
        }
    }

    /// A server that matches a thousand server globs, with a long tool
    /// name: the tool is matched once across all groups, with the answers
    /// of matching group by group.
    #[test]
    fn many_groups_match_the_tool_across_groups() {
        let patterns: Vec<String> = (1..=1_000).map(|i| format!("*{}*/*b{}*", "a".repeat(i % 50 + 1), i % 13)).collect();
        let set = RuleSet::compile(&patterns, None).unwrap();
        let server = "a".repeat(100);
        let mut scratch = Scratch::default();
        for (tool, want) in [("x".repeat(5_000) + "b7", Some(6)), ("x".repeat(5_000), None), ("b12".into(), Some(0))] {
            let naive = patterns.iter().position(|p| {
                let (s, t) = split_pattern(p.as_bytes()).unwrap();
                SegmentGlob::new(s).is_match(server.as_bytes()) && SegmentGlob::new(t).is_match(tool.as_bytes())
            });
            assert_eq!(naive, want);
            assert_eq!(set.first_match(server.as_bytes(), tool.as_bytes(), &mut scratch), want, "{}", &tool[tool.len() - 3..]);
            assert_eq!(set.is_match(server.as_bytes(), tool.as_bytes(), &mut scratch), want.is_some());
        }
        assert!(set.across.get().is_some());
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
