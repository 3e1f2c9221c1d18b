//! Tool filter groups: keyword-activated allow-lists over MCP `server__tool`
//! names, as an agent runtime exposes MCP tools turn by turn.
//!
//! A group is a mode (`always` or `dynamic`), single-star globs and keywords.
//! For one user message the *activation* is the set of live groups: every
//! `always` group, and each `dynamic` group one of whose keywords occurs in the
//! lower-cased message. An MCP name is admitted when a pattern of a live group
//! matches it.
//!
//! Both halves are compiled once so that a turn costs one pass over the message
//! and, per name, a walk along its bytes however many groups there are:
//! keywords go into one Aho-Corasick automaton, and the distinct patterns into
//! byte tries of their literal parts ([`crate::trie::ByteTrie`]). An activation
//! is then a bitmap over the distinct patterns.

use std::collections::HashMap;
use std::ops::ControlFlow;

use aho_corasick::AhoCorasick;
use memchr::memmem;

use crate::fold::Fold;
use crate::trie::ByteTrie;

/// A group's activation mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    /// Live on every turn (and pre-activated under deferred loading).
    Always,
    /// Live on a turn whose message contains one of the group's keywords.
    Dynamic,
}

/// One group as configured: patterns and keywords as raw strings.
#[derive(Clone, Debug)]
pub struct GroupSpec<B> {
    pub mode: GroupMode,
    pub tools: Vec<B>,
    pub keywords: Vec<B>,
}

/// A single-star glob over a whole flat name.
///
/// Unlike [`crate::glob::SegmentGlob`], only the *first* `*` is a wildcard: the
/// runtime these groups come from splits a pattern once, so `a*b*` means "starts
/// with `a`, ends with `b*`" and a later star must be matched literally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupGlob<'a> {
    /// No star: whole-name equality.
    Exact(&'a [u8]),
    /// `*` alone: every name, the empty one too.
    Any,
    /// `prefix*`.
    Prefix(&'a [u8]),
    /// `*suffix`.
    Suffix(&'a [u8]),
    /// `prefix*suffix`, the two never overlapping (`ab*ba` does not match `aba`).
    PrefixSuffix(&'a [u8], &'a [u8]),
}

impl<'a> GroupGlob<'a> {
    pub fn parse(pattern: &'a [u8]) -> Self {
        let Some(star) = memchr::memchr(b'*', pattern) else {
            return GroupGlob::Exact(pattern);
        };
        let (prefix, suffix) = (&pattern[..star], &pattern[star + 1..]);
        match (prefix.is_empty(), suffix.is_empty()) {
            (true, true) => GroupGlob::Any,
            (false, true) => GroupGlob::Prefix(prefix),
            (true, false) => GroupGlob::Suffix(suffix),
            (false, false) => GroupGlob::PrefixSuffix(prefix, suffix),
        }
    }

    pub fn is_match(&self, name: &[u8]) -> bool {
        match *self {
            GroupGlob::Exact(lit) => name == lit,
            GroupGlob::Any => true,
            GroupGlob::Prefix(p) => name.starts_with(p),
            GroupGlob::Suffix(s) => name.ends_with(s),
            GroupGlob::PrefixSuffix(p, s) => {
                name.len() >= p.len() + s.len() && name.starts_with(p) && name.ends_with(s)
            }
        }
    }
}

/// One-shot single-star match of `pattern` against the whole of `name`.
pub fn group_glob_match(pattern: &[u8], name: &[u8]) -> bool {
    GroupGlob::parse(pattern).is_match(name)
}

/// What a forward-trie key (read from the start of a name) stands for.
#[derive(Clone, Copy, Debug)]
enum Head {
    /// The pattern is exactly the key: matches only when the walk ends there.
    Exact(u32),
    /// `key*`.
    Prefix(u32),
    /// `key*suffix` for every suffix in `PatternIndex::suffix_tries[trie]`;
    /// `len` is the key's length, which the suffix must leave alone.
    Suffixes { len: usize, trie: usize },
}

/// The distinct patterns of all groups, compiled into byte tries.
///
/// Every distinct pattern has an id. The forward trie holds exact names,
/// prefixes, and the prefixes of `prefix*suffix` patterns (each pointing to a
/// trie of its reversed suffixes); the backward trie holds the reversed
/// suffixes of `*suffix` patterns. A name is matched by one walk of each along
/// its bytes (they stop at the first byte no key continues with), plus a walk
/// of a suffix trie for each `prefix*suffix` prefix it starts with, so the work
/// per name does not grow with the number of patterns or groups.
#[derive(Clone, Debug)]
struct PatternIndex {
    count: usize,
    any: Option<u32>,
    forward: ByteTrie<Head>,
    backward: ByteTrie<u32>,
    suffix_tries: Vec<ByteTrie<u32>>,
}

#[derive(Default)]
struct PatternIndexBuilder {
    ids: HashMap<Box<[u8]>, u32>,
    any: Option<u32>,
    forward: Vec<(Vec<u8>, Head)>,
    backward: Vec<(Vec<u8>, u32)>,
    /// Per `prefix*suffix` prefix: its place in `suffixes`.
    heads: HashMap<Vec<u8>, usize>,
    suffixes: Vec<Vec<(Vec<u8>, u32)>>,
}

fn reversed(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().rev().copied().collect()
}

impl PatternIndexBuilder {
    /// The id of `pattern`, adding it when it is new.
    fn insert(&mut self, pattern: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(pattern) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(pattern.into(), id);
        match GroupGlob::parse(pattern) {
            GroupGlob::Exact(lit) => self.forward.push((lit.to_vec(), Head::Exact(id))),
            GroupGlob::Any => self.any = Some(id),
            GroupGlob::Prefix(p) => self.forward.push((p.to_vec(), Head::Prefix(id))),
            GroupGlob::Suffix(x) => self.backward.push((reversed(x), id)),
            GroupGlob::PrefixSuffix(p, x) => {
                let trie = *self.heads.entry(p.to_vec()).or_insert_with(|| {
                    self.forward.push((p.to_vec(), Head::Suffixes { len: p.len(), trie: self.suffixes.len() }));
                    self.suffixes.push(Vec::new());
                    self.suffixes.len() - 1
                });
                self.suffixes[trie].push((reversed(x), id));
            }
        }
        id
    }

    fn build(self) -> PatternIndex {
        PatternIndex {
            count: self.ids.len(),
            any: self.any,
            forward: ByteTrie::build(self.forward),
            backward: ByteTrie::build(self.backward),
            suffix_tries: self.suffixes.into_iter().map(ByteTrie::build).collect(),
        }
    }
}

impl PatternIndex {
    fn len(&self) -> usize {
        self.count
    }

    /// Whether a pattern for which `live` holds matches `name`.
    fn any_match(&self, name: &[u8], live: &[bool]) -> bool {
        let live = |id: u32| live[id as usize];
        let hit = |found: bool| if found { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        if self.any.is_some_and(live) {
            return true;
        }
        let any_live = |ids: &[u32], _whole: bool| hit(ids.iter().any(|&id| live(id)));
        let forward = self.forward.walk(name.iter().copied(), |heads, whole| {
            hit(heads.iter().any(|head| match *head {
                Head::Exact(id) => whole && live(id),
                Head::Prefix(id) => live(id),
                // The suffix is read from what the prefix left: no overlap.
                Head::Suffixes { len, trie } => {
                    self.suffix_tries[trie].walk(name[len..].iter().rev().copied(), any_live).is_break()
                }
            }))
        });
        forward.is_break() || self.backward.walk(name.iter().rev().copied(), any_live).is_break()
    }
}

/// The keywords of the dynamic groups, found in one pass over a message.
#[derive(Clone, Debug)]
struct KeywordIndex {
    /// The distinct non-empty keywords, lower-cased.
    keywords: Vec<Box<[u8]>>,
    /// Per keyword, the dynamic groups it activates.
    groups: Vec<Vec<u32>>,
    /// Dynamic groups holding the empty keyword: live on every turn.
    unconditional: Vec<u32>,
    /// None when there are no keywords, or in the unlikely case that the
    /// automaton cannot be built (too many states); then each keyword is
    /// searched for on its own.
    automaton: Option<AhoCorasick>,
}

impl KeywordIndex {
    fn compile<B: AsRef<[u8]>>(groups: &[GroupSpec<B>]) -> Self {
        let mut ids: HashMap<Box<[u8]>, u32> = HashMap::new();
        let mut keywords: Vec<Box<[u8]>> = Vec::new();
        let mut owners: Vec<Vec<u32>> = Vec::new();
        let mut unconditional = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            if group.mode != GroupMode::Dynamic {
                continue;
            }
            let g = g as u32;
            for keyword in &group.keywords {
                let folded = Fold::Lower.apply(keyword.as_ref());
                if folded.is_empty() {
                    if unconditional.last() != Some(&g) {
                        unconditional.push(g);
                    }
                    continue;
                }
                let id = *ids.entry(folded.as_slice().into()).or_insert_with(|| {
                    keywords.push(folded.into());
                    owners.push(Vec::new());
                    (keywords.len() - 1) as u32
                });
                let owner = &mut owners[id as usize];
                if owner.last() != Some(&g) {
                    owner.push(g);
                }
            }
        }
        let automaton = if keywords.is_empty() { None } else { AhoCorasick::new(&keywords).ok() };
        KeywordIndex { keywords, groups: owners, unconditional, automaton }
    }

    /// Marks in `live` every dynamic group with a keyword in `message`.
    fn activate(&self, message: &[u8], live: &mut [bool]) {
        for &g in &self.unconditional {
            live[g as usize] = true;
        }
        if self.keywords.is_empty() {
            return;
        }
        let folded = crate::rules::fold_for_match(Some(Fold::Lower), message);
        let haystack = folded.as_bytes();
        let mut found = vec![false; self.keywords.len()];
        let mut missing = self.keywords.len();
        let mut mark = |k: usize| {
            if !found[k] {
                found[k] = true;
                missing -= 1;
                for &g in &self.groups[k] {
                    live[g as usize] = true;
                }
            }
            missing == 0
        };
        // Overlapping search: `url` must be found inside `curl` even when `curl`
        // is a keyword too. It stops as soon as every keyword has been seen.
        if let Some(matches) =
            self.automaton.as_ref().and_then(|ac| ac.try_find_overlapping_iter(haystack).ok())
        {
            for m in matches {
                if mark(m.pattern().as_usize()) {
                    break;
                }
            }
        } else {
            for (k, keyword) in self.keywords.iter().enumerate() {
                if memmem::find(haystack, keyword).is_some() && mark(k) {
                    break;
                }
            }
        }
    }
}

/// Compiled groups: the pattern index, each group's pattern ids, and the
/// keyword automaton.
#[derive(Clone, Debug)]
pub struct GroupSet {
    modes: Vec<GroupMode>,
    group_patterns: Vec<Vec<u32>>,
    patterns: PatternIndex,
    keywords: KeywordIndex,
}

impl GroupSet {
    pub fn compile<B: AsRef<[u8]>>(groups: &[GroupSpec<B>]) -> Self {
        let mut patterns = PatternIndexBuilder::default();
        let group_patterns = groups
            .iter()
            .map(|group| {
                let mut ids: Vec<u32> = group.tools.iter().map(|t| patterns.insert(t.as_ref())).collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        GroupSet {
            modes: groups.iter().map(|g| g.mode).collect(),
            group_patterns,
            patterns: patterns.build(),
            keywords: KeywordIndex::compile(groups),
        }
    }

    /// The number of groups.
    pub fn len(&self) -> usize {
        self.modes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modes.is_empty()
    }

    fn always(&self) -> Vec<bool> {
        self.modes.iter().map(|&m| m == GroupMode::Always).collect()
    }

    /// The groups live for one user message: every `always` group, and each
    /// `dynamic` group with a keyword in the message.
    pub fn activate(&self, message: &[u8]) -> Activation<'_> {
        let mut live = self.always();
        self.keywords.activate(message, &mut live);
        Activation::new(self, live)
    }

    /// The `always` groups alone: what deferred loading pre-activates.
    pub fn preactivation(&self) -> Activation<'_> {
        Activation::new(self, self.always())
    }
}

/// The live groups for one turn, and the patterns they contribute.
#[derive(Clone, Debug)]
pub struct Activation<'s> {
    set: &'s GroupSet,
    groups: Vec<bool>,
    patterns: Vec<bool>,
    any_live: bool,
}

impl<'s> Activation<'s> {
    fn new(set: &'s GroupSet, groups: Vec<bool>) -> Self {
        let mut patterns = vec![false; set.patterns.len()];
        let mut any_live = false;
        for (ids, _) in set.group_patterns.iter().zip(&groups).filter(|(_, &live)| live) {
            for &id in ids {
                patterns[id as usize] = true;
                any_live = true;
            }
        }
        Activation { set, groups, patterns, any_live }
    }

    /// The indices of the live groups, ascending.
    pub fn live_groups(&self) -> impl Iterator<Item = usize> + '_ {
        self.groups.iter().enumerate().filter(|(_, &live)| live).map(|(g, _)| g)
    }

    /// Whether a pattern of a live group matches the MCP name `name`.
    pub fn admits(&self, name: &[u8]) -> bool {
        self.any_live && self.set.patterns.any_match(name, &self.patterns)
    }

    /// Whether a tool is visible this turn: always without groups or when it is
    /// not MCP-origin, otherwise only when a live group admits it.
    pub fn is_visible(&self, name: &[u8], is_mcp: bool) -> bool {
        self.set.is_empty() || !is_mcp || self.admits(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! globs {
        ($($name:ident: $pattern:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let (pattern, input): (&[u8], &[u8]) = ($pattern.as_ref(), $input.as_ref());
                assert_eq!(group_glob_match(pattern, input), $want);
                // The index must agree with the one-shot match.
                let set = GroupSet::compile(&[GroupSpec {
                    mode: GroupMode::Always, tools: vec![pattern], keywords: vec![],
                }]);
                assert_eq!(set.preactivation().admits(input), $want);
            }
        )*};
    }

    globs! {
        exact: "fs__read", "fs__read" => true;
        exact_case_sensitive: "fs__read", "FS__read" => false;
        exact_whole_name: "fs__read", "fs__read_file" => false;
        star_alone: "*", "anything" => true;
        star_alone_empty: "*", "" => true;
        prefix: "fs__*", "fs__read" => true;
        prefix_empty_rest: "fs__*", "fs__" => true;
        prefix_anchored: "fs__*", "xfs__read" => false;
        suffix: "*__read", "fs__read" => true;
        suffix_anchored: "*__read", "fs__read_x" => false;
        prefix_suffix: "fs__*_file", "fs__read_file" => true;
        prefix_suffix_no_overlap: "ab*ba", "aba" => false;
        prefix_suffix_touching: "ab*ba", "abba" => true;
        second_star_literal: "a*b*", "axb*" => true;
        second_star_not_wild: "a*b*", "axbc" => false;
        double_star_is_literal_suffix: "**", "x*" => true;
        double_star_needs_star: "**", "x" => false;
        question_literal: "a?c", "abc" => false;
        brackets_literal: "[a]*", "[a]x" => true;
        backslash_literal: "a\\*", "a\\x" => true;
        empty_pattern_empty_name: "", "" => true;
        empty_pattern: "", "a" => false;
        multibyte: "é*", "épée" => true;
        surrogate_not_replacement: b"\xED\xA0\x80*", "\u{FFFD}x" => false;
    }

    fn group(mode: GroupMode, tools: &[&str], keywords: &[&str]) -> GroupSpec<Vec<u8>> {
        GroupSpec {
            mode,
            tools: tools.iter().map(|t| t.as_bytes().to_vec()).collect(),
            keywords: keywords.iter().map(|k| k.as_bytes().to_vec()).collect(),
        }
    }

    use GroupMode::{Always, Dynamic};

    macro_rules! live {
        ($($name:ident: [$($mode:ident, $tools:expr, $keywords:expr);*], $message:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let set = GroupSet::compile(&[$(group($mode, &$tools, &$keywords)),*]);
                let got: Vec<usize> = set.activate($message.as_bytes()).live_groups().collect();
                let want: Vec<usize> = $want;
                assert_eq!(got, want);
            }
        )*};
    }

    live! {
        always_is_live: [Always, ["a*"], []], "" => vec![0];
        always_ignores_keywords: [Always, ["a*"], ["zzz"]], "hello" => vec![0];
        dynamic_keyword_hit: [Dynamic, ["b*"], ["browse"]], "please browse" => vec![0];
        dynamic_keyword_miss: [Dynamic, ["b*"], ["browse"]], "please read" => vec![];
        dynamic_without_keywords_never: [Dynamic, ["b*"], []], "anything" => vec![];
        empty_keyword_always: [Dynamic, ["b*"], [""]], "" => vec![0];
        no_word_boundaries: [Dynamic, ["b*"], ["url"]], "curl it" => vec![0];
        overlapping_keywords: [Dynamic, ["x"], ["curl"]; Dynamic, ["y"], ["url"]], "curl" => vec![0, 1];
        keyword_case: [Dynamic, ["b*"], ["Browse"]], "BROWSE" => vec![0];
        keyword_unicode_case: [Dynamic, ["b*"], ["Über"]], "über alles" => vec![0];
        keyword_not_trimmed: [Dynamic, ["b*"], [" url "]], "curl x" => vec![];
        keyword_shared: [Dynamic, ["a"], ["k"]; Dynamic, ["b"], ["k"]; Always, [], []], "k" => vec![0, 1, 2];
        kelvin: [Dynamic, ["a"], ["k"]], "\u{212A}" => vec![0];
    }

    #[test]
    fn visibility_rules() {
        let set = GroupSet::compile(&[
            group(Always, &["filesystem__*"], &[]),
            group(Dynamic, &["browser__*"], &["browse", "url"]),
        ]);
        let quiet = set.activate(b"read my notes");
        assert!(quiet.is_visible(b"filesystem__read_file", true));
        assert!(!quiet.is_visible(b"browser__open", true));
        assert!(quiet.is_visible(b"browser__open", false), "not MCP-origin passes");
        assert!(!quiet.is_visible(b"other__x", true), "no group admits: hidden");
        let browsing = set.activate(b"open this URL");
        assert!(browsing.is_visible(b"browser__open", true));
        let pre = set.preactivation();
        assert!(pre.admits(b"filesystem__read_file"));
        assert!(!pre.admits(b"browser__open"));
    }

    #[test]
    fn no_groups_everything_visible() {
        let set = GroupSet::compile::<&[u8]>(&[]);
        assert!(set.activate(b"x").is_visible(b"a__b", true));
        assert!(!set.preactivation().admits(b"a__b"));
    }

    #[test]
    fn live_group_without_patterns_admits_nothing() {
        let set = GroupSet::compile(&[group(Always, &[], &[])]);
        assert!(!set.activate(b"x").is_visible(b"a__b", true));
    }

    #[test]
    fn shared_pattern_live_through_either_group() {
        let set = GroupSet::compile(&[
            group(Dynamic, &["gh__*"], &["issue"]),
            group(Dynamic, &["gh__*"], &["pull"]),
        ]);
        assert!(set.activate(b"a pull request").admits(b"gh__x"));
        assert!(!set.activate(b"nothing").admits(b"gh__x"));
    }

    #[test]
    fn nested_prefixes_only_live_ones_count() {
        let set = GroupSet::compile(&[
            group(Dynamic, &["gith*x"], &["one"]),
            group(Dynamic, &["g*", "git*"], &["two"]),
            group(Dynamic, &["*b", "*ub", "github__*b"], &["three"]),
        ]);
        let one = set.activate(b"one");
        assert!(one.admits(b"githx"));
        assert!(!one.admits(b"gitx"), "gith*x needs gith before the x");
        assert!(!one.admits(b"github"), "g* belongs to a group that is not live");
        let two = set.activate(b"two");
        assert!(two.admits(b"g"));
        assert!(two.admits(b"github"));
        let three = set.activate(b"three");
        assert!(three.admits(b"github__b"));
        assert!(three.admits(b"b"));
        assert!(!three.admits(b"github__x"));
        let none = set.activate(b"zero");
        assert!(!none.admits(b"github__b"));
    }

    #[test]
    fn prefix_suffix_sharing_a_prefix() {
        let set = GroupSet::compile(&[group(Always, &["ab*ba", "ab*b", "ab*", "a*a"], &[])]);
        let pre = set.preactivation();
        let only = |p: &str| GroupSet::compile(&[group(Always, &[p], &[])]);
        for name in ["aba", "abba", "ab", "a", "aa", "abb", "abab", "xab"] {
            let want = ["ab*ba", "ab*b", "ab*", "a*a"]
                .iter()
                .any(|p| only(p).preactivation().admits(name.as_bytes()));
            assert_eq!(pre.admits(name.as_bytes()), want, "{name}");
            assert_eq!(
                want,
                ["ab*ba", "ab*b", "ab*", "a*a"].iter().any(|p| group_glob_match(p.as_bytes(), name.as_bytes())),
                "{name}"
            );
        }
    }

    #[test]
    fn many_lengths_and_buckets() {
        let set = GroupSet::compile(&[
            group(Dynamic, &["a*z", "ab*yz", "abc*", "*xyz"], &["on"]),
            group(Always, &["q*"], &[]),
        ]);
        let on = set.activate(b"on");
        for (name, want) in [("az", true), ("abyz", true), ("aby", false), ("abcd", true), ("wxyz", true), ("b", false)] {
            assert_eq!(on.admits(name.as_bytes()), want, "{name}");
        }
        let off = set.activate(b"off");
        assert!(!off.admits(b"az"));
        assert!(off.admits(b"qq"));
    }
}
