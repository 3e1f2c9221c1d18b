//! The static part of a tool filter, compiled: what can be decided from
//! `(server_id, name)` alone, for one tool or a batch.
//!
//! Regex patterns stay in Python (Python's `re` semantics); the core only knows
//! their server globs, so it can say "a regex might decide this tool" and leave
//! those tools, and only those, to the caller.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::fold::{Fold, LazyFold};
use crate::hints::{HintPattern, HintSide};
use crate::pairs::length_bit;
use crate::index::{Scratch as IndexScratch, SegmentIndex, Sweeping};
use crate::memo::{Answer, Keep, Kept, ListAnswers, NameMemo};
use crate::shortcut::{Held, Shortcut, SHORT};
use crate::rules::{fold_with, Groups, PatternIssue, RuleSet, Scratch};

/// Bits of [`StaticFilter::flags`].
pub mod flag {
    /// A string exclude pattern matches.
    pub const EXCLUDED: u8 = 1;
    /// An exclude regex's server glob matches: the regex must be tried.
    pub const EXCLUDE_REGEX: u8 = 2;
    /// A string include pattern matches.
    pub const INCLUDED: u8 = 4;
    /// An include regex's server glob matches: the regex must be tried.
    pub const INCLUDE_REGEX: u8 = 8;
}

/// What the core decided for one tool in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    Hidden = 0,
    Visible = 1,
    /// A regex may decide: the caller must judge this tool.
    Undecided = 2,
}

/// Which option a compile error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Include,
    Exclude,
}

/// Options at least this long (both of them) compile on two threads: below
/// it, starting a thread costs more than it saves.
const PARALLEL_COMPILE_MIN: usize = 1_000;

/// Whether options of these lengths compile on two threads.
pub fn compile_in_parallel(include: usize, exclude: usize) -> bool {
    include.min(exclude) >= PARALLEL_COMPILE_MIN
}

/// Equal slices, checking identity first: a batch hands the same server id's
/// bytes to every tool of that server.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}

/// The string patterns of both options and the server globs of the regexes.
#[derive(Clone, Debug)]
pub struct StaticFilter {
    include: RuleSet,
    exclude: RuleSet,
    include_regex_servers: SegmentIndex,
    exclude_regex_servers: SegmentIndex,
    /// Include admits every tool statically: it is empty, or holds a function.
    include_open: bool,
    /// The annotation patterns of each option (`crate::hints`): they match on
    /// a tool's hints, which the caller hands in beside its two strings.
    include_hints: HintSide,
    exclude_hints: HintSide,
    /// What a batch reads of each tool (see [`Needs`]), settled whenever
    /// the patterns are.
    needs: Needs,
    /// The one plan of every server, when no rule depends on the server.
    blind: Option<ServerPlan>,
    /// Tools its batches decided so far, counted up to [`CUTS_AFTER`].
    used: Used,
    /// The server plans a batch resolved, for the next batch.
    kept_plans: KeptPlans,
    /// The name memos of a batch's threads, for the next batch.
    kept_memos: KeptMemos,
    /// The answers of the name lists (dictionaries) a batch met, for the next batch.
    kept_lists: KeptLists,
}

/// Items per block: the unit a batch hands to a thread (the object
/// batches of the binding and the Arrow columns alike).
pub const BLOCK: usize = 1 << 13;
/// Batches smaller than this are decided on the calling thread alone, by
/// default.
pub const PARALLEL_MIN: usize = 1 << 12;
/// The smallest block of a batch on more than one thread (see [`block_len`]).
const MIN_BLOCK: usize = 1 << 10;
/// At most this many threads work on one batch, whatever `threads` asks for:
/// each is an OS thread, and a request for 2**40 must not exhaust the machine.
const MAX_THREADS: usize = 64;

/// Items per block of a batch of `n` on `threads` threads: [`BLOCK`] on
/// one thread, or when there are blocks enough; else about four blocks a
/// thread, each at least [`MIN_BLOCK`] long, so that a batch of some
/// thousand items is shared by the threads as evenly as a long one (in
/// blocks of `BLOCK`, 10,000 items would be one block for one thread and
/// the rest for another).
pub fn block_len(n: usize, threads: usize) -> usize {
    if threads <= 1 {
        return BLOCK;
    }
    n.div_ceil(4 * threads).clamp(MIN_BLOCK, BLOCK)
}

/// The threads a batch of `n` runs on: `threads` (None: every core from
/// [`PARALLEL_MIN`] items, else one), from 1 to [`MAX_THREADS`].
pub fn threads_for(n: usize, threads: Option<usize>) -> usize {
    let wanted = match threads {
        Some(t) => t,
        None if n < PARALLEL_MIN => 1,
        None => std::thread::available_parallelism().map_or(1, |p| p.get()),
    };
    wanted.clamp(1, MAX_THREADS)
}

/// What a batch's threads learned, kept by the filter for its next batch:
/// up to [`KeptLimits::count`] things, the larger ones (by
/// [`KeptLimits::size`]), each of at most [`KeptLimits::each`] and all of
/// them of at most [`KeptLimits::total`]. A thread takes the largest, or
/// starts with a new one when none is left; a copy of the filter starts
/// with none.
struct KeptForNext<T> {
    kept: Mutex<Vec<T>>,
    limits: KeptLimits<T>,
}

/// The bounds of a [`KeptForNext`], and how it measures and makes its things.
struct KeptLimits<T> {
    size: fn(&T) -> usize,
    fresh: fn() -> T,
    count: usize,
    each: usize,
    total: usize,
}

impl<T> KeptForNext<T> {
    const fn new(limits: KeptLimits<T>) -> Self {
        KeptForNext { kept: Mutex::new(Vec::new()), limits }
    }

    /// The thing kept that `wanted` takes, if any (and it is kept no more).
    fn take_if(&self, wanted: impl Fn(&T) -> bool) -> Option<T> {
        let mut kept = self.kept.try_lock().ok()?;
        let at = kept.iter().rposition(wanted)?;
        Some(kept.remove(at))
    }

    /// A thing kept, the largest, if any (and it is kept no more), else a
    /// new one. `try_lock`: only worth a wait-free look (and a child forked
    /// while another thread held the lock must not wait forever).
    fn take(&self) -> T {
        self.kept.try_lock().ok().and_then(|mut kept| kept.pop()).unwrap_or_else(self.limits.fresh)
    }

    /// Keeps `thing` for the next batch among those kept (in order of size,
    /// largest last), the smallest put out while they are more than the
    /// limits allow. One of size 0 (nothing learned) or past `each` is not kept.
    fn give_back(&self, thing: T) {
        let KeptLimits { size, count, each, total, .. } = self.limits;
        if size(&thing) == 0 || size(&thing) > each {
            return;
        }
        if let Ok(mut kept) = self.kept.try_lock() {
            let at = kept.partition_point(|k| size(k) < size(&thing));
            kept.insert(at, thing);
            while kept.len() > count || kept.iter().map(size).sum::<usize>() > total {
                kept.remove(0);
            }
        }
    }
}

impl<T> Clone for KeptLimits<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for KeptLimits<T> {}

impl<T> Clone for KeptForNext<T> {
    fn clone(&self) -> Self {
        KeptForNext::new(self.limits)
    }
}

impl<T> std::fmt::Debug for KeptForNext<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeptForNext")
    }
}

/// The plans of the servers a batch met, kept by the filter for its next
/// batch: a plan depends on the filter and the server id alone, and a
/// catalog filtered again meets the same servers (resolving one is some
/// thousands of instructions: on 5,000 tools of 2,500 servers, two thirds
/// of a batch). Each thread of a batch takes a table of its own (plans are
/// not shared between threads while they match); up to [`KEPT_TABLES`] are
/// kept, each of at most [`MAX_KEPT_PLANS`] servers and all of them of at
/// most [`MAX_KEPT_SERVERS`].
type KeptPlans = KeptForNext<Plans>;

fn kept_plans() -> KeptPlans {
    KeptForNext::new(KeptLimits {
        size: |plans: &Plans| plans.list.len(),
        fresh: Plans::default,
        count: KEPT_TABLES,
        each: MAX_KEPT_PLANS,
        total: MAX_KEPT_SERVERS,
    })
}

/// A thread's plans: each server met, with its raw bytes, and its place.
#[derive(Default)]
struct Plans {
    list: Vec<(ServerPlan, Box<[u8]>)>,
    known: FxHashMap<Box<[u8]>, u32>,
}

/// The most servers of a table of plans a filter keeps between batches.
const MAX_KEPT_PLANS: usize = 1 << 16;
/// The most tables of plans a filter keeps (one a thread of a batch).
const KEPT_TABLES: usize = 4;
/// The most servers of all the tables kept (a plan kept takes under a
/// kilobyte with its server id: about 110 MB at most, and only for a
/// catalog of more than 65,536 servers decided on several threads).
const MAX_KEPT_SERVERS: usize = 1 << 17;

/// The name memos ([`NameMemo`]) of a batch's threads, kept by the filter
/// for its next batch: a memo's answers depend on the filter and the name
/// alone, and a catalog filtered again (a listing refreshed, each turn of a
/// conversation) meets the same names, which a thread with a memo kept
/// answers from its first tool, where a fresh memo learns them again (and
/// is tried only after its first [`crate::memo::START`] names). At most
/// [`KEPT_MEMOS`] are kept: each is at most 8 MB, so 32 MB a filter at
/// most, and only after batches long enough to grow them.
type KeptMemos = KeptForNext<NameMemo>;

fn kept_memos() -> KeptMemos {
    KeptForNext::new(KeptLimits {
        // A memo not tried yet (its batch was short) still counts the names
        // until it is: kept, as the smallest.
        size: |memo: &NameMemo| memo.slots() + 1,
        fresh: NameMemo::for_batch,
        count: KEPT_MEMOS,
        each: usize::MAX,
        total: usize::MAX,
    })
}

/// The most memos a filter keeps: one a thread of a two-core batch, and
/// two more.
const KEPT_MEMOS: usize = 4;

/// The answers of the name dictionaries of a filter's batches
/// ([`ListAnswers`]), kept for its next batch over the same list (a column
/// of names dictionary-encoded, filtered again). At most [`KEPT_LISTS`]
/// lists, each of at most [`MAX_KEPT_LIST`] bytes with its answers, and all
/// of them of at most [`MAX_KEPT_LISTS`]: about 300,000 names of twenty
/// bytes each.
type KeptLists = KeptForNext<ListAnswers>;

fn kept_lists() -> KeptLists {
    KeptForNext::new(KeptLimits {
        size: ListAnswers::size,
        fresh: || ListAnswers::unkept(0),
        count: KEPT_LISTS,
        each: MAX_KEPT_LIST,
        total: MAX_KEPT_LISTS,
    })
}

const KEPT_LISTS: usize = 4;
const MAX_KEPT_LIST: usize = 8 << 20;
const MAX_KEPT_LISTS: usize = 16 << 20;

/// How many tools a filter's batches decided, up to about [`CUTS_AFTER`]
/// (counted as each thread's part of a batch ends). A copy of the filter
/// starts where the filter stands.
#[derive(Debug, Default)]
struct Used(AtomicU32);

impl Clone for Used {
    fn clone(&self) -> Self {
        Used(AtomicU32::new(self.0.load(Ordering::Relaxed)))
    }
}

impl Used {
    /// Whether batches decided [`CUTS_AFTER`] tools or more.
    fn enough(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= CUTS_AFTER
    }

    /// Counts `tools` more (at most [`CUTS_AFTER`] each call, so no sum
    /// of them overflows before the count is enough).
    fn add(&self, tools: u32) {
        if !self.enough() {
            self.0.fetch_add(tools.min(CUTS_AFTER), Ordering::Relaxed);
        }
    }
}

/// What a batch must read of each tool to decide it, for one filter: a batch
/// does only the work its patterns need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// The server id: a rule, a regex server glob or a trusted list names
    /// servers. Without it, one plan serves every tool.
    pub server: bool,
    /// The name: a string pattern of a side that decides (exclude, or an
    /// include that is not open).
    pub name: bool,
    /// The raw hints: an annotation pattern.
    pub hints: bool,
}

/// Buffers for [`StaticFilter::flags`], reused across calls so that a scalar
/// query allocates nothing once they have grown.
#[derive(Default)]
pub struct FlagScratch {
    rules: Scratch,
    plan: ServerPlan,
}

impl FlagScratch {
    /// For tests: the paths meant for long names, on any name (see
    /// [`Scratch::always_sweeping`]).
    pub fn always_sweeping(what: Sweeping) -> Self {
        let plan = ServerPlan { include_groups: Groups::across_all(), exclude_groups: Groups::across_all(), ..ServerPlan::default() };
        FlagScratch { rules: Scratch::always_sweeping(what), plan }
    }
}

/// What a batch learns once per distinct server.
#[derive(Clone, Debug, Default)]
struct ServerPlan {
    /// The server id under the loose fold (exclude rules are keyed by it).
    folded: Vec<u8>,
    include_groups: Groups,
    exclude_groups: Groups,
    include_regex: bool,
    exclude_regex: bool,
    /// The lengths of the tools of the option's literal `server/tool` rules
    /// for this server ([`length_bit`]s; 0: none): a tool of another length
    /// is not looked up, nor folded for the lookup.
    include_exact: u64,
    exclude_exact: u64,
    /// Whether the option's every-server group (`RuleSet::every_server_group`)
    /// is among this server's groups: its answer may then be kept per name.
    include_every: bool,
    exclude_every: bool,
    /// Which trusted lists of the annotation patterns name this server.
    include_trust: Vec<bool>,
    exclude_trust: Vec<bool>,
}

impl StaticFilter {
    /// `include_open`: the include option is empty or holds a function.
    pub fn compile<P: AsRef<[u8]> + Sync>(
        include: &[P],
        exclude: &[P],
        include_regex_servers: &[P],
        exclude_regex_servers: &[P],
        include_open: bool,
    ) -> Result<Self, (Side, usize, PatternIssue)> {
        fn indexed<P: AsRef<[u8]>>(patterns: &[P]) -> Vec<(usize, &[u8])> {
            patterns.iter().map(AsRef::as_ref).enumerate().collect()
        }
        Self::compile_indexed(
            &indexed(include),
            &indexed(exclude),
            include_regex_servers,
            exclude_regex_servers,
            include_open,
        )
    }

    /// [`compile`](Self::compile) from `(index, pattern)` entries: the string
    /// patterns of an option that holds other kinds too, each with its place
    /// in the option (which a compile error reports).
    ///
    /// When both options are long, exclude compiles on a second thread while
    /// include compiles on this one (the two share nothing). An error is the
    /// first bad include pattern, else the first bad exclude one, either way.
    pub fn compile_indexed<P: AsRef<[u8]> + Sync, R: AsRef<[u8]>>(
        include: &[(usize, P)],
        exclude: &[(usize, P)],
        include_regex_servers: &[R],
        exclude_regex_servers: &[R],
        include_open: bool,
    ) -> Result<Self, (Side, usize, PatternIssue)> {
        let (include, exclude) = if compile_in_parallel(include.len(), exclude.len()) {
            std::thread::scope(|scope| {
                let spawned =
                    std::thread::Builder::new().spawn_scoped(scope, || Self::compile_side(exclude, Side::Exclude));
                let include = Self::compile_side(include, Side::Include);
                let exclude = match spawned {
                    Ok(handle) => handle.join().expect("compiling does not panic"),
                    // No thread to be had: compile it here.
                    Err(_) => Self::compile_side(exclude, Side::Exclude),
                };
                (include, exclude)
            })
        } else {
            (Self::compile_side(include, Side::Include), Self::compile_side(exclude, Side::Exclude))
        };
        Ok(Self::from_sides(include?, exclude?, include_regex_servers, exclude_regex_servers, include_open))
    }

    /// The rule set of one side from its `(index, pattern)` entries: exact for
    /// include, loose for exclude. An error names the side and the index.
    pub fn compile_side<P: AsRef<[u8]>>(entries: &[(usize, P)], side: Side) -> Result<RuleSet, (Side, usize, PatternIssue)> {
        let fold = match side {
            Side::Include => None,
            Side::Exclude => Some(Fold::Loose),
        };
        RuleSet::compile_indexed(entries.iter().map(|(i, p)| (*i, p.as_ref())), fold).map_err(|(i, e)| (side, i, e))
    }

    /// A filter from its two compiled sides (see [`compile_side`](Self::compile_side))
    /// and the server globs of its regex patterns.
    pub fn from_sides<R: AsRef<[u8]>>(
        include: RuleSet,
        exclude: RuleSet,
        include_regex_servers: &[R],
        exclude_regex_servers: &[R],
        include_open: bool,
    ) -> Self {
        debug_assert!(include.fold().is_none() && exclude.fold() == Some(Fold::Loose));
        let regex_servers = |globs: &[R], fold: Option<Fold>| {
            let folded: Vec<Vec<u8>> = globs
                .iter()
                .map(|g| fold.map_or_else(|| g.as_ref().to_vec(), |f| f.apply(g.as_ref())))
                .collect();
            SegmentIndex::build(folded.iter().enumerate().map(|(i, g)| (g.as_slice(), i as u32)))
        };
        StaticFilter {
            include,
            exclude,
            include_regex_servers: regex_servers(include_regex_servers, None),
            exclude_regex_servers: regex_servers(exclude_regex_servers, Some(Fold::Loose)),
            include_open,
            include_hints: HintSide::default(),
            exclude_hints: HintSide::default(),
            needs: Needs { server: true, name: true, hints: false },
            blind: None,
            used: Used::default(),
            kept_plans: kept_plans(),
            kept_memos: kept_memos(),
            kept_lists: kept_lists(),
        }
        .settled()
    }

    /// The filter with [`Needs`] and the blind plan worked out from its patterns.
    ///
    /// A regex server index answers alike for every server when it is empty
    /// (never) or holds an all-star glob (always: `any_match` of the empty
    /// server finds it). When include is open, a batch never looks at the
    /// include side (`judge` with `include_bits` false), so only exclude's
    /// rules count, and the blind plan's include part, unused, may be wrong.
    fn settled(mut self) -> Self {
        let mut index = IndexScratch::default();
        let mut regex_blind = |servers: &SegmentIndex| servers.is_empty() || servers.any_match(b"", &mut index);
        let include_blind =
            self.include_open || (self.include.server_blind() && regex_blind(&self.include_regex_servers));
        let hints = self.uses_hints();
        let server = hints || !(include_blind && self.exclude.server_blind() && regex_blind(&self.exclude_regex_servers));
        let name = !self.exclude.is_empty() || (!self.include_open && !self.include.is_empty());
        self.needs = Needs { server, name, hints };
        self.blind = (!server).then(|| self.plan(b"", &mut Scratch::default()));
        self
    }

    /// What a batch reads of each tool.
    pub fn needs(&self) -> Needs {
        self.needs
    }

    /// The outcome of every tool, when it depends on nothing of the tool
    /// (no pattern reads its server, name or hints).
    pub fn constant_outcome(&self) -> Option<Outcome> {
        let plan = self.blind.as_ref().filter(|_| !self.needs.name && !self.needs.hints)?;
        Some(self.outcome(self.judge(plan, b"", b"", 0, &mut Scratch::default(), !self.include_open, None)))
    }

    /// The filter with annotation patterns on each side. Their trusted server
    /// globs match exactly, on both sides: trusting a server's hints is a
    /// grant, as an include is.
    pub fn with_hints<G: AsRef<[u8]>>(mut self, include: &[HintPattern<G>], exclude: &[HintPattern<G>]) -> Self {
        self.include_hints = HintSide::compile(include);
        self.exclude_hints = HintSide::compile(exclude);
        // Plans hold the servers' trust, which the hints change.
        self.kept_plans = kept_plans();
        self.kept_memos = kept_memos();
        self.kept_lists = kept_lists();
        self.settled()
    }

    /// Whether a batch keeps answers that depend on the name alone (an
    /// every-server group on either side): what a [`ListAnswers`] holds.
    pub fn has_name_answers(&self) -> bool {
        self.include.every_server_group().is_some() || self.exclude.every_server_group().is_some()
    }

    /// The answers of the name list `bytes` and `ends` (see
    /// [`ListAnswers::new`]) for a batch: those a batch before kept of the
    /// same names (and they are kept no more), else new ones with a copy of
    /// the names; not kept past the batch (no copy made) for a list larger
    /// than [`MAX_KEPT_LIST`].
    pub fn list_answers(&self, bytes: &[u8], ends: Vec<usize>) -> ListAnswers {
        if ListAnswers::size_of(bytes, &ends) > MAX_KEPT_LIST {
            return ListAnswers::unkept(ends.len());
        }
        self.kept_lists.take_if(|kept| kept.is_of(bytes, &ends)).unwrap_or_else(|| ListAnswers::new(bytes, ends))
    }

    /// Keeps a name list's answers for the next batch (if they may be kept).
    pub fn keep_list(&self, answers: ListAnswers) {
        if answers.keeps() {
            self.kept_lists.give_back(answers);
        }
    }

    /// Whether any annotation pattern needs the tools' hints.
    pub fn uses_hints(&self) -> bool {
        !self.include_hints.is_empty() || !self.exclude_hints.is_empty()
    }

    /// Resolves what depends on the server alone into `plan` (reusing its buffers).
    fn plan_into(&self, server: &[u8], scratch: &mut Scratch, plan: &mut ServerPlan) {
        let Scratch { index, server: buf, .. } = scratch;
        // The include side is resolved even when include is open: `flags`
        // reports it, and `visible` needs it before calling include functions.
        self.include.server_groups(server, index, &mut plan.include_groups);
        plan.include_regex = self.include_regex_servers.any_match(server, index);
        plan.include_exact = self.include.exact_lengths(server);
        let folded = fold_with(Some(Fold::Loose), server, buf);
        self.exclude.server_groups(folded, index, &mut plan.exclude_groups);
        plan.exclude_regex = self.exclude_regex_servers.any_match(folded, index);
        plan.exclude_exact = self.exclude.exact_lengths(folded);
        plan.folded.clear();
        plan.folded.extend_from_slice(folded);
        plan.include_every = self.include.every_server_group().is_some_and(|g| plan.include_groups.holds(g));
        plan.exclude_every = self.exclude.every_server_group().is_some_and(|g| plan.exclude_groups.holds(g));
        self.include_hints.trust_into(server, scratch, &mut plan.include_trust);
        self.exclude_hints.trust_into(server, scratch, &mut plan.exclude_trust);
    }

    fn plan(&self, server: &[u8], scratch: &mut Scratch) -> ServerPlan {
        let mut plan = ServerPlan::default();
        self.plan_into(server, scratch, &mut plan);
        plan
    }

    /// Decides one tool whose server's plan is known. `server` is raw. With
    /// `include_bits` false the include side is not matched (a batch over an
    /// open include: the decision does not depend on it). `batch`: where a
    /// batch keeps this name's answers, the every-server groups' shortcuts,
    /// and the [`Order`] of the sides. Exclude first gives every bit
    /// (`EXCLUDED` set, the include side is not looked at); include first
    /// gives bits of the same [`outcome`](Self::outcome) (a tool the include
    /// side cannot admit is not matched against the exclude side); both
    /// gives the bits of each side, `EXCLUDED` with the include side's.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &self,
        plan: &ServerPlan,
        server: &[u8],
        tool: &[u8],
        hints: u8,
        scratch: &mut Scratch,
        include_bits: bool,
        batch: Option<(Keep<'_>, &mut Cuts<'_>, Order)>,
    ) -> u8 {
        let Scratch { index, tool: tbuf, .. } = scratch;
        let (keep, mut cuts, order) =
            batch.map_or((None, None, Order::ExcludeFirst), |(keep, cuts, order)| (Some(keep), Some(cuts), order));
        // What a batch knows of this name already (a name whose groups are
        // matched one by one, for an option with an every-server group; in
        // the memo, a short one). The answer kept is that group's alone: the
        // groups of the server's own globs are matched for each tool.
        let mut kept = match keep {
            Some(keep) if plan.include_every || plan.exclude_every => keep.find(tool),
            _ => None,
        };
        if order == Order::IncludeFirst && include_bits && !self.include_open {
            let included = self.include_side(plan, server, tool, hints, index, &mut kept, &mut cuts);
            if included & (flag::INCLUDED | flag::INCLUDE_REGEX) == 0 {
                // Hidden whatever the exclude side says.
                return included;
            }
            return self.exclude_side(plan, tool, hints, index, tbuf, &mut kept, &mut cuts).map_or(flag::EXCLUDED, |bits| bits | included);
        }
        let Some(bits) = self.exclude_side(plan, tool, hints, index, tbuf, &mut kept, &mut cuts) else {
            if order == Order::Both && include_bits {
                return flag::EXCLUDED | self.include_side(plan, server, tool, hints, index, &mut kept, &mut cuts);
            }
            return flag::EXCLUDED;
        };
        if !include_bits {
            return bits;
        }
        bits | self.include_side(plan, server, tool, hints, index, &mut kept, &mut cuts)
    }

    /// The exclude side of [`judge`](Self::judge): None where it hides the
    /// tool, else its bits (`EXCLUDE_REGEX` or none).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn exclude_side(
        &self,
        plan: &ServerPlan,
        tool: &[u8],
        hints: u8,
        index: &mut IndexScratch,
        tbuf: &mut Vec<u8>,
        kept: &mut Option<Kept<'_>>,
        cuts: &mut Option<&mut Cuts<'_>>,
    ) -> Option<u8> {
        if !self.exclude.is_empty() {
            // Folded only if a glob is verified against the fold or a
            // literal rule is looked up by it.
            let mut folded = LazyFold::new(tool, tbuf);
            let groups = &plan.exclude_groups;
            let cut = cuts.as_mut().is_some_and(|c| c.exclude.is_some());
            let globbed = match self.exclude.every_server_group() {
                // The every-server group apart, its answer kept or found
                // by the batch's shortcut, the others after.
                Some(every) if plan.exclude_every && groups.one_by_one(tool.len()) && (kept.is_some() || cut) => {
                    let mut find = || {
                        let shortcut = cuts.as_mut().and_then(|c| c.exclude_match(&mut folded, index));
                        shortcut.unwrap_or_else(|| self.exclude.any_in_group_loose(every, &mut folded, index))
                    };
                    let hit = match kept.as_mut() {
                        Some(kept) => kept.answer(Answer::Exclude, find),
                        None => find(),
                    };
                    hit || self.exclude.any_in_groups_loose_but(groups, every, &mut folded, index)
                }
                _ => self.exclude.any_in_groups_loose(groups, &mut folded, index),
            };
            if globbed
                || (plan.exclude_exact != 0
                    && plan.exclude_exact & length_bit(folded.folded_len()) != 0
                    && self.exclude.exact_match(&plan.folded, folded.get()).is_some())
            {
                return None;
            }
        }
        if self.exclude_hints.matches(&plan.exclude_trust, hints) {
            return None;
        }
        Some(if plan.exclude_regex { flag::EXCLUDE_REGEX } else { 0 })
    }

    /// The include side of [`judge`](Self::judge): `INCLUDED`,
    /// `INCLUDE_REGEX` or none.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn include_side(
        &self,
        plan: &ServerPlan,
        server: &[u8],
        tool: &[u8],
        hints: u8,
        index: &mut IndexScratch,
        kept: &mut Option<Kept<'_>>,
        cuts: &mut Option<&mut Cuts<'_>>,
    ) -> u8 {
        let groups = &plan.include_groups;
        let cut = cuts.as_mut().is_some_and(|c| c.include.is_some());
        let mut globbed = |index: &mut IndexScratch| match self.include.every_server_group() {
            Some(every) if plan.include_every && groups.one_by_one(tool.len()) && (kept.is_some() || cut) => {
                let mut find = || {
                    let shortcut = cuts.as_mut().and_then(|c| c.include_match(tool, index));
                    shortcut.unwrap_or_else(|| self.include.any_in_group(every, tool, index))
                };
                let hit = match kept.as_mut() {
                    Some(kept) => kept.answer(Answer::Include, find),
                    None => find(),
                };
                hit || self.include.any_in_groups_but(groups, every, tool, index)
            }
            _ => self.include.any_in_groups(groups, tool, index),
        };
        // The literal rules first: one hash, where the walks are a few
        // passes over the name (the answer is the same either way).
        if (plan.include_exact & length_bit(tool.len()) != 0 && self.include.exact_match(server, tool).is_some())
            || globbed(index)
            || self.include_hints.matches(&plan.include_trust, hints)
        {
            flag::INCLUDED
        } else if plan.include_regex {
            flag::INCLUDE_REGEX
        } else {
            0
        }
    }

    /// The [`flag`] bits for one tool without hints (all missing). When
    /// `EXCLUDED` is set the include side is not looked at.
    pub fn flags(&self, server: &[u8], tool: &[u8], scratch: &mut FlagScratch) -> u8 {
        self.flags_with_hints(server, tool, 0, scratch)
    }

    /// [`flags`](Self::flags) of a tool whose hints are the raw byte `hints`
    /// (`crate::hints::raw`).
    pub fn flags_with_hints(&self, server: &[u8], tool: &[u8], hints: u8, scratch: &mut FlagScratch) -> u8 {
        let FlagScratch { rules, plan } = scratch;
        self.plan_into(server, rules, plan);
        self.judge(plan, server, tool, hints, rules, true, None)
    }

    /// Turns flag bits into a decision.
    #[inline]
    pub fn outcome(&self, bits: u8) -> Outcome {
        if bits & flag::EXCLUDED != 0 {
            return Outcome::Hidden;
        }
        let included = self.include_open || bits & flag::INCLUDED != 0;
        let maybe_included = included || bits & flag::INCLUDE_REGEX != 0;
        match (bits & flag::EXCLUDE_REGEX != 0, included, maybe_included) {
            (_, false, false) => Outcome::Hidden,
            (false, true, _) => Outcome::Visible,
            _ => Outcome::Undecided,
        }
    }

    /// Decides a run of tools without hints on this thread, resolving each
    /// distinct server once.
    pub fn outcomes_into<'a>(&self, pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<Outcome>) {
        self.outcomes_with_hints_into(pairs.into_iter().map(|(server, tool)| (server, tool, 0)), out);
    }

    /// [`outcomes_into`](Self::outcomes_into) of tools with their raw hints.
    pub fn outcomes_with_hints_into<'a>(
        &self,
        tools: impl IntoIterator<Item = (&'a [u8], &'a [u8], u8)>,
        out: &mut Vec<Outcome>,
    ) {
        let tools = tools.into_iter();
        out.reserve(tools.size_hint().0);
        let mut decider = Decider::new(self);
        out.extend(tools.map(|(server, tool, hints)| decider.decide(server, tool, hints)));
    }

    /// Decides a batch on up to `threads` threads; results in input order.
    pub fn outcomes(&self, pairs: &[(&[u8], &[u8])], threads: usize) -> Vec<Outcome> {
        let threads = threads.clamp(1, pairs.len().max(1));
        if threads == 1 {
            let mut out = Vec::new();
            self.outcomes_into(pairs.iter().copied(), &mut out);
            return out;
        }
        let chunk = pairs.len().div_ceil(threads);
        let parts: Vec<Vec<Outcome>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pairs
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        self.outcomes_into(part.iter().copied(), &mut out);
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("matching does not panic")).collect()
        });
        parts.concat()
    }

    /// Whether the include side has any string pattern.
    pub fn include(&self) -> &RuleSet {
        &self.include
    }

    pub fn exclude(&self) -> &RuleSet {
        &self.exclude
    }
}

/// One thread's share of a batch: the plans of the servers it has met, and
/// its buffers. Kept from block to block, it resolves each distinct server
/// once, however the tools of many servers are interleaved, and allocates
/// nothing once grown; with [`Needs::server`] off it resolves none.
/// The order a batch matches a tool's two sides in (see
/// [`StaticFilter::judge`]): the one that more often decides alone first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    ExcludeFirst,
    IncludeFirst,
    /// Both sides, each whole: a sample for the choice.
    Both,
}

pub struct Decider<'f> {
    filter: &'f StaticFilter,
    scratch: Scratch,
    /// The plan of each server met (in this batch, or kept from one
    /// before), with the server's raw bytes, and each one's place.
    plans: Plans,
    /// The place of the last plan asked for: tools usually come grouped by
    /// server, and then comparing the bytes is all a tool costs.
    last: Option<u32>,
    /// The every-server groups' answers for the names met lately.
    memo: NameMemo,
    /// The every-server groups' shortcuts, taken once the batch is long.
    cuts: Cuts<'f>,
    /// Tools decided, up to [`CUTS_AFTER`].
    decided: u32,
    /// Which side this thread matches first, and the samples it is chosen by.
    order: SideOrder,
}

/// A thread's choice of the side a tool is matched against first. Either
/// order decides the same; the cost differs: exclude first matches the
/// include side of every tool it does not hide, include first the exclude
/// side of every tool it admits. One tool in [`SAMPLE_EVERY`] is matched
/// against both, and the side that more often decides alone among them
/// (an exclude pattern hides the tool, against the include side admitting
/// none) goes first for the tools after it.
#[derive(Clone, Copy, Debug, Default)]
struct SideOrder {
    include_first: bool,
    /// Tools until the next sample.
    until_sample: u32,
    /// Among the samples (halved now and then, so that the choice follows
    /// the batch): those the exclude side hid, those the include side did
    /// not admit.
    hidden_by_exclude: u32,
    not_admitted: u32,
}

/// One tool in this many is a sample of [`SideOrder`].
const SAMPLE_EVERY: u32 = 128;
/// Samples kept before the tallies are halved.
const SAMPLES_KEPT: u32 = 256;

impl SideOrder {
    /// The order of the next tool's sides.
    #[inline]
    fn next(&mut self) -> Order {
        if self.until_sample == 0 {
            self.until_sample = SAMPLE_EVERY - 1;
            return Order::Both;
        }
        self.until_sample -= 1;
        if self.include_first {
            Order::IncludeFirst
        } else {
            Order::ExcludeFirst
        }
    }

    /// Tallies a sample's bits and chooses again.
    #[cold]
    fn sampled(&mut self, bits: u8) {
        self.hidden_by_exclude += u32::from(bits & flag::EXCLUDED != 0);
        self.not_admitted += u32::from(bits & (flag::INCLUDED | flag::INCLUDE_REGEX) == 0);
        if self.hidden_by_exclude + self.not_admitted > SAMPLES_KEPT {
            self.hidden_by_exclude /= 2;
            self.not_admitted /= 2;
        }
        self.include_first = self.not_admitted > self.hidden_by_exclude;
    }
}

/// Tools a thread decides before it takes the every-server groups'
/// shortcuts, building them and making their states if need be: a batch of
/// a few tools of a filter used for little else pays nothing for them. A
/// shortcut that is ready (built, and either needing no states or with a
/// cache of states a batch before made and kept) is taken at the first
/// tool, and so is any once the filter's batches decided this many tools
/// in all: many short batches of one filter (a catalog of some thousand
/// tools filtered again and again) run through them as a long one does.
///
/// Building a shortcut and making the states its first names visit costs
/// about what the index costs over some tens of thousands of names more
/// (on 1,000 + 1,000 patterns: some 4 ms, in which the index decides
/// 30,000 to 40,000 names; docs/performance.md, "The twelfth round"), so a
/// filter's first batch of 10,000 tools, which took them after 4,096
/// tools a thread, spent most of its time on them (543 ns a tool against
/// 121 without).
const CUTS_AFTER: u32 = 1 << 14;

/// One thread's use of the every-server groups' [`Shortcut`]s, each with its
/// cache of states (given back to the shortcut for the next batch). A
/// shortcut that gives up is dropped for the rest of the batch.
#[derive(Default)]
struct Cuts<'f> {
    exclude: Option<(&'f Shortcut, Held)>,
    include: Option<(&'f Shortcut, Held)>,
}

impl<'f> Cuts<'f> {
    /// The shortcuts a thread takes at its first tool (see [`CUTS_AFTER`]).
    fn first(filter: &'f StaticFilter) -> Self {
        let mut cuts = Cuts::default();
        if filter.used.enough() {
            cuts.take_rest(filter);
            return cuts;
        }
        let take = |set: &'f RuleSet| set.built_shortcut().and_then(|cut| Some((cut, cut.take_warm_cache()?)));
        cuts.exclude = take(&filter.exclude);
        cuts.include = take(&filter.include);
        cuts
    }

    /// Takes the shortcuts not taken yet, building them and making caches
    /// as needed (one that gave up is not taken again).
    fn take_rest(&mut self, filter: &'f StaticFilter) {
        let take = |set: &'f RuleSet| set.every_shortcut().and_then(|cut| Some((cut, cut.take_cache()?)));
        if self.exclude.is_none() {
            self.exclude = take(&filter.exclude);
        }
        if self.include.is_none() {
            self.include = take(&filter.include);
        }
    }

    /// The every-server exclude group's answer for the fold of `name`, if
    /// the shortcut gives one.
    #[inline]
    fn exclude_match(&mut self, name: &mut LazyFold<'_>, index: &mut IndexScratch) -> Option<bool> {
        let (cut, cache) = self.exclude.as_mut()?;
        if name.raw().len() > SHORT {
            return None;
        }
        let found = cut.any_match_loose(name, cache, index);
        if found.is_none() {
            self.exclude = None;
        }
        found
    }

    /// The every-server include group's answer for `tool`, if the shortcut
    /// gives one.
    #[inline]
    fn include_match(&mut self, tool: &[u8], index: &mut IndexScratch) -> Option<bool> {
        let (cut, cache) = self.include.as_mut()?;
        if tool.len() > SHORT {
            return None;
        }
        let found = cut.any_match(tool, cache, index);
        if found.is_none() {
            self.include = None;
        }
        found
    }
}

impl Drop for Cuts<'_> {
    fn drop(&mut self) {
        for (cut, cache) in [self.exclude.take(), self.include.take()].into_iter().flatten() {
            cut.give_back(cache);
        }
    }
}

/// A thread's part of a batch counts toward its filter's use, and its
/// plans are kept for the next batch.
impl Drop for Decider<'_> {
    fn drop(&mut self) {
        self.filter.used.add(self.decided);
        self.filter.kept_plans.give_back(std::mem::take(&mut self.plans));
        self.filter.kept_memos.give_back(std::mem::take(&mut self.memo));
    }
}

/// The hashes [`Decider::prefetch`] found for the names of the next tools
/// of a loop, kept for their turn so that a name is hashed once: tool `k`'s
/// is fetched [`AHEAD`](crate::memo::AHEAD) tools before, and the table is
/// twice that long, so it is not written over before its turn.
#[derive(Default)]
pub struct Ahead([Option<u64>; 2 * crate::memo::AHEAD]);

impl Ahead {
    /// Fetches tool `k`'s name for `decider`, keeping its hash.
    #[inline]
    pub fn fetch(&mut self, decider: &Decider<'_>, k: usize, name: &[u8]) {
        self.0[k % (2 * crate::memo::AHEAD)] = decider.prefetch(name);
    }

    /// The hash fetched for tool `k` (None: not fetched, or not probed).
    #[inline]
    pub fn hash(&self, k: usize) -> Option<u64> {
        self.0[k % (2 * crate::memo::AHEAD)]
    }
}

impl<'f> Decider<'f> {
    pub fn new(filter: &'f StaticFilter) -> Self {
        Decider {
            filter,
            scratch: Scratch::default(),
            plans: filter.kept_plans.take(),
            last: None,
            memo: filter.kept_memos.take(),
            cuts: Cuts::default(),
            decided: 0,
            order: SideOrder::default(),
        }
    }

    /// The place of `server`'s plan, resolved the first time it is asked for.
    /// Meaningless (and free) when the filter's batches need no server.
    #[inline]
    pub fn plan_for(&mut self, server: &[u8]) -> u32 {
        if self.filter.blind.is_some() {
            return 0;
        }
        if let Some(last) = self.last {
            if same_bytes(&self.plans.list[last as usize].1, server) {
                return last;
            }
        }
        let plan = match self.plans.known.get(server) {
            Some(&plan) => plan,
            None => self.resolve(server),
        };
        self.last = Some(plan);
        plan
    }

    #[cold]
    fn resolve(&mut self, server: &[u8]) -> u32 {
        let mut plan = ServerPlan::default();
        self.filter.plan_into(server, &mut self.scratch, &mut plan);
        let at = self.plans.list.len() as u32;
        self.plans.list.push((plan, server.into()));
        self.plans.known.insert(server.into(), at);
        at
    }

    /// Decides one tool whose server's plan is `plan` (from [`plan_for`](Self::plan_for)
    /// with the same `server`).
    #[inline]
    pub fn decide_planned(&mut self, plan: u32, server: &[u8], tool: &[u8], hints: u8) -> Outcome {
        self.decide_kept(plan, server, tool, hints, None, None)
    }

    /// [`decide_planned`](Self::decide_planned) with the hash that
    /// [`prefetch`](Self::prefetch) gave for `tool` (None: none given).
    #[inline]
    pub fn decide_planned_hashed(&mut self, plan: u32, server: &[u8], tool: &[u8], hints: u8, hashed: Option<u64>) -> Outcome {
        self.decide_kept(plan, server, tool, hints, None, hashed)
    }

    /// [`decide_planned`](Self::decide_planned) of a tool whose name's
    /// every-server answers are kept in `slot` instead of the memo: one
    /// byte per distinct name the caller can tell apart without reading it
    /// (a dictionary value), 0 before its first tool and then left as this
    /// call leaves it (see [`Keep`]).
    #[inline]
    pub fn decide_planned_keyed(&mut self, plan: u32, server: &[u8], tool: &[u8], hints: u8, slot: &mut u8) -> Outcome {
        self.decide_kept(plan, server, tool, hints, Some(slot), None)
    }

    #[inline]
    fn decide_kept(&mut self, plan: u32, server: &[u8], tool: &[u8], hints: u8, slot: Option<&mut u8>, hashed: Option<u64>) -> Outcome {
        let filter = self.filter;
        if self.decided < CUTS_AFTER {
            if self.decided == 0 {
                self.cuts = Cuts::first(filter);
            }
            self.decided += 1;
            if self.decided == CUTS_AFTER {
                self.cuts.take_rest(filter);
            }
        }
        let plan = match &filter.blind {
            Some(blind) => blind,
            None => &self.plans.list[plan as usize].0,
        };
        let keep = match slot {
            Some(slot) => Keep::Byte(slot),
            None => Keep::Memo(&mut self.memo, hashed),
        };
        let order = self.order.next();
        let bits = filter.judge(plan, server, tool, hints, &mut self.scratch, !filter.include_open, Some((keep, &mut self.cuts, order)));
        if order == Order::Both {
            self.order.sampled(bits);
        }
        filter.outcome(bits)
    }

    /// A hint that `tool` is decided soon (a few tools ahead): its kept
    /// answers are fetched meanwhile. The name's hash, when the memo is
    /// probed, for [`decide_planned_hashed`](Self::decide_planned_hashed)
    /// (see [`Ahead`]).
    #[inline]
    pub fn prefetch(&self, tool: &[u8]) -> Option<u64> {
        self.memo.prefetch(tool)
    }

    /// Decides one tool.
    #[inline]
    pub fn decide(&mut self, server: &[u8], tool: &[u8], hints: u8) -> Outcome {
        let plan = self.plan_for(server);
        self.decide_planned(plan, server, tool, hints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> StaticFilter {
        StaticFilter::compile(include, exclude, &[], &[], include.is_empty()).unwrap()
    }

    fn decide(f: &StaticFilter, server: &str, tool: &str) -> Outcome {
        f.outcome(f.flags(server.as_bytes(), tool.as_bytes(), &mut FlagScratch::default()))
    }

    macro_rules! decisions {
        ($($name:ident: $include:expr, $exclude:expr, ($server:expr, $tool:expr) => $want:ident;)*) => {$(
            #[test]
            fn $name() {
                let f = filter(&$include, &$exclude);
                assert_eq!(decide(&f, $server, $tool), Outcome::$want);
                assert_eq!(f.outcomes(&[($server.as_bytes(), $tool.as_bytes())], 1), vec![Outcome::$want]);
            }
        )*};
    }

    decisions! {
        empty_shows_all: [], [], ("s", "t") => Visible;
        exclude_wins: ["*"], ["s/t"], ("s", "t") => Hidden;
        exclude_is_loose: [], ["*/delete_repo"], ("gh", "Delete-Repo") => Hidden;
        include_is_exact: ["github/*"], [], ("GitHub", "x") => Hidden;
        include_hit: ["github/*"], [], ("github", "x") => Visible;
        allow_list_miss: ["s/u"], [], ("s", "t") => Hidden;
    }

    #[test]
    fn regex_servers_leave_tools_undecided() {
        let f = StaticFilter::compile(&["a/x"], &[], &["b"], &[], false).unwrap();
        assert_eq!(decide(&f, "b", "y"), Outcome::Undecided);
        assert_eq!(decide(&f, "c", "y"), Outcome::Hidden);
        assert_eq!(decide(&f, "a", "x"), Outcome::Visible);
        let f = StaticFilter::compile(&[] as &[&str], &[], &[], &["GIT*"], true).unwrap();
        assert_eq!(decide(&f, "github", "y"), Outcome::Undecided);
        assert_eq!(decide(&f, "fs", "y"), Outcome::Visible);
    }

    #[test]
    fn batch_equals_scalar_on_any_thread_count() {
        let f = filter(&["s1/*", "*/read_*", "*x*"], &["*/delete*", "s2/*_v2"]);
        let names = ["read_a", "delete_b", "Delete-C", "x_v2", "y_v2", "plain", "ax"];
        let servers = ["s1", "s2", "s3"];
        let pairs: Vec<(&[u8], &[u8])> = (0..200)
            .map(|i| (servers[i % 3].as_bytes(), names[i % 7].as_bytes()))
            .collect();
        let scalar: Vec<Outcome> = pairs
            .iter()
            .map(|(s, t)| f.outcome(f.flags(s, t, &mut FlagScratch::default())))
            .collect();
        for threads in [1, 2, 3, 8] {
            assert_eq!(f.outcomes(&pairs, threads), scalar);
        }
    }

    /// Servers interleaved tool by tool (a block of thousands of servers):
    /// one decider resolves each once and answers as the scalar path does.
    #[test]
    fn interleaved_servers_decide_as_scalar() {
        let f = filter(&["s1/*", "*/read_*", "s2/x_v2", "*x*"], &["*/delete*", "s2/*_v2", "S3/Plain"]);
        let names = ["read_a", "delete_b", "Delete-C", "x_v2", "y_v2", "plain", "ax"];
        let servers: Vec<String> = (0..50).map(|i| format!("s{}", i % 5)).collect();
        let mut decider = Decider::new(&f);
        for i in 0..700 {
            let (server, name) = (servers[(i * 7) % 50].as_bytes(), names[i % 7].as_bytes());
            let want = f.outcome(f.flags(server, name, &mut FlagScratch::default()));
            assert_eq!(decider.decide(server, name, 0), want, "{i}");
        }
        assert_eq!(decider.plans.list.len(), 5);
    }

    /// A batch keeps the every-server groups' answers per name: names met
    /// again on other servers, with server globs of their own, literal
    /// rules, long and non-ASCII names, decide as the scalar path does,
    /// whichever side answered first, over more names than the memo holds.
    #[test]
    fn names_met_again_decide_as_scalar() {
        let mut include: Vec<String> = ["s1/*", "*/read_*", "s2/x_v2", "*x*", "gh*/del*", "*/long_*"].map(String::from).to_vec();
        let mut exclude: Vec<String> = ["*/delete*", "s2/*_v2", "S3/Plain", "*Ä*", "GH-*/READ*", "*_Y_*"].map(String::from).to_vec();
        // Long enough lists that the every-server groups are indexed.
        include.extend((0..20).map(|i| format!("*k{i}*")));
        exclude.extend((0..20).map(|i| format!("q{i}_*")));
        let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
        let mut names: Vec<String> = ["read_a", "delete_b", "Delete-C", "x_v2", "y_v2", "plain", "ax", "Äb", "äB", "READ-x"]
            .map(String::from)
            .to_vec();
        names.push(format!("long_{}", "y".repeat(40)));
        names.push(format!("{}_y_", "a".repeat(crate::memo::MAX_NAME - 3)));
        names.extend((0..3_000).map(|i| format!("k{}_{}", i % 25, i)));
        let servers: Vec<String> = (0..40).map(|i| ["s1", "s2", "S3", "gh-1", "GH-2", "other"][i % 6].to_string() + &"x".repeat(i / 6)).collect();
        let mut decider = Decider::new(&f);
        let mut next = crate::test_rng::below(0x2545_F491_4F6C_DD1D);
        for i in 0..60_000 {
            let server = servers[next(servers.len() as u64) as usize].as_bytes();
            // Mostly the first few names, so that they are met again.
            let n = if next(4) == 0 { names.len() } else { 12 };
            let name = names[next(n as u64) as usize].as_bytes();
            let want = f.outcome(f.flags(server, name, &mut FlagScratch::default()));
            assert_eq!(decider.decide(server, name, 0), want, "{i}");
        }
    }

    /// Past the first few thousand tools a batch answers the every-server
    /// groups through their shortcuts: its decisions stay the scalar path's
    /// on names drawn from an alphabet where keys collide, cases and
    /// separators differ and characters fold to others.
    #[test]
    fn shortcuts_decide_as_scalar() {
        let alphabet = ["a", "A", "b", "_", "-", ".", "\u{130}", "\u{212a}", "\u{3a3}", "\0", "/", ":"];
        let mut next = crate::test_rng::below(0x6A09_E667_F3BC_C909);
        let word = |next: &mut dyn FnMut(u64) -> u64, len: u64| -> String {
            (0..1 + next(len)).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect()
        };
        for round in 0..4 {
            let side = |next: &mut dyn FnMut(u64) -> u64| -> Vec<String> {
                (0..40)
                    .map(|i| match i % 6 {
                        0 => word(next, 4).replace('/', "_"),
                        1 => format!("{}*", word(next, 3)).replace('/', "_"),
                        2 => format!("*{}", word(next, 3)).replace('/', "_"),
                        3 => format!("*{}*", word(next, 3)).replace('/', "_"),
                        4 => format!("{}*{}*{}", word(next, 1), word(next, 1), word(next, 1)).replace('/', "_"),
                        _ => format!("s{}/{}*", i % 3, word(next, 2)),
                    })
                    .collect()
            };
            let include = side(&mut next);
            let exclude = side(&mut next);
            let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
            assert!(f.include.every_shortcut().is_some() && f.exclude.every_shortcut().is_some(), "round {round}");
            let mut decider = Decider::new(&f);
            // Past the tools a thread decides before it takes the shortcuts.
            for i in 0..CUTS_AFTER as usize + 8_000 {
                let server = format!("s{}", next(4));
                let name = word(&mut next, 8);
                let want = f.outcome(f.flags(server.as_bytes(), name.as_bytes(), &mut FlagScratch::default()));
                assert_eq!(decider.decide(server.as_bytes(), name.as_bytes(), 0), want, "round {round}, tool {i}: {name:?}");
            }
            assert!(decider.cuts.exclude.is_some() && decider.cuts.include.is_some(), "round {round}");
        }
    }

    /// A filter's first batch of fewer tools a thread than [`CUTS_AFTER`]
    /// builds no automaton (the index answers it); once its batches decided
    /// that many in all, the next batch builds and takes them at its first
    /// tool. Every decision is the scalar path's either way.
    #[test]
    fn a_short_first_batch_builds_no_automaton() {
        let include: Vec<String> = (0..300).map(|i| format!("read_{i}*")).collect();
        let exclude: Vec<String> = (0..300).map(|i| format!("*_drop{i}")).collect();
        let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
        let batch = |f: &StaticFilter, tools: usize| {
            let mut decider = Decider::new(f);
            for i in 0..tools {
                let (server, name) = (format!("s{}", i % 7), format!("read_{}_drop{}", i % 401, i % 307));
                let want = f.outcome(f.flags(server.as_bytes(), name.as_bytes(), &mut FlagScratch::default()));
                assert_eq!(decider.decide(server.as_bytes(), name.as_bytes(), 0), want, "{name}");
            }
            decider.cuts.include.is_some()
        };
        let short = CUTS_AFTER as usize / 2 + 1;
        assert!(!batch(&f, short));
        assert!(f.include.built_shortcut().is_none() && f.exclude.built_shortcut().is_none());
        // This one passes CUTS_AFTER in all: the next takes them at once.
        assert!(!batch(&f, short));
        assert!(batch(&f, 10));
        assert!(f.include.built_shortcut().is_some() && f.exclude.built_shortcut().is_some());
    }

    /// A batch's server plans are kept for the filter's next batch (a
    /// table a thread, the larger ones, at most [`KEPT_TABLES`]), not for a
    /// copy of the filter, and decisions with plans kept are the scalar
    /// path's.
    #[test]
    fn plans_are_kept_for_the_next_batch() {
        let f = filter(&["s1/*", "*/read*", "S2/x"], &["s3/*", "*/DROP*"]);
        let servers = ["s1", "s2", "S2", "s3", "s4", "\u{130}", ""];
        let tools = ["read_a", "x", "drop_b", "Read-c", "y"];
        let batch = |f: &StaticFilter, servers: &[&str]| -> usize {
            let mut decider = Decider::new(f);
            let before = decider.plans.list.len();
            for server in servers {
                for tool in tools {
                    let want = f.outcome(f.flags(server.as_bytes(), tool.as_bytes(), &mut FlagScratch::default()));
                    assert_eq!(decider.decide(server.as_bytes(), tool.as_bytes(), 0), want, "{server:?}/{tool:?}");
                }
            }
            before
        };
        assert_eq!(batch(&f, &servers[..3]), 0, "a fresh filter keeps none");
        assert_eq!(batch(&f, &servers), 3, "the first batch's three");
        // Two batches at once: one takes the table, the other starts empty;
        // both tables given back are kept, the larger taken first.
        let (a, b) = (Decider::new(&f), Decider::new(&f));
        assert_eq!((a.plans.list.len(), b.plans.list.len()), (servers.len(), 0));
        assert_eq!(batch(&f, &servers[..2]), 0, "none left while they match");
        drop(a);
        assert_eq!(batch(&f, &servers[..1]), servers.len());
        let (a, b, c) = (Decider::new(&f), Decider::new(&f), Decider::new(&f));
        assert_eq!([a.plans.list.len(), b.plans.list.len(), c.plans.list.len()], [servers.len(), 2, 0]);
        // At most KEPT_TABLES, the larger ones.
        let tables: Vec<Decider<'_>> = (0..KEPT_TABLES + 2).map(|_| Decider::new(&f)).collect();
        drop((a, b, c));
        for (i, mut decider) in tables.into_iter().enumerate() {
            for server in &servers[..=i % servers.len()] {
                decider.plan_for(server.as_bytes());
            }
        }
        let held: Vec<Decider<'_>> = (0..KEPT_TABLES + 1).map(|_| Decider::new(&f)).collect();
        let kept: Vec<usize> = held.iter().map(|d| d.plans.list.len()).collect();
        assert_eq!(kept, [servers.len(), 6, 5, 4, 0], "the four larger, largest first");
        assert_eq!(batch(&f.clone(), &servers), 0, "a copy keeps none");
        // A table of more than MAX_KEPT_PLANS servers is not kept, nor the
        // smaller ones when all would be more than MAX_KEPT_SERVERS.
        let g = f.clone();
        let fill = |count: usize| {
            let mut decider = Decider::new(&g);
            for i in 0..count {
                decider.plan_for(format!("srv{i}").as_bytes());
            }
            decider
        };
        drop(fill(MAX_KEPT_PLANS + 1));
        assert_eq!(Decider::new(&g).plans.list.len(), 0, "too large a table is not kept");
        assert_eq!(MAX_KEPT_SERVERS, 2 * MAX_KEPT_PLANS);
        let (large, larger, small) = (fill(MAX_KEPT_PLANS - 1), fill(MAX_KEPT_PLANS), fill(10));
        drop((small, large, larger));
        let held: Vec<Decider<'_>> = (0..3).map(|_| Decider::new(&g)).collect();
        let kept: Vec<usize> = held.iter().map(|d| d.plans.list.len()).collect();
        assert_eq!(kept, [MAX_KEPT_PLANS, MAX_KEPT_PLANS - 1, 0], "the small one put out");
    }

    /// A batch's name memos are kept for the filter's next batch (the
    /// larger ones, at most [`KEPT_MEMOS`]), not for a copy of the filter
    /// nor past new annotation patterns; a batch with a memo kept answers
    /// the names met before from its first tool, and decides as the scalar
    /// path on names met before, on new ones, and on either with other
    /// servers.
    #[test]
    fn memos_are_kept_for_the_next_batch() {
        let mut include: Vec<String> = ["s1/*", "*/read_*", "*x*", "gh*/del*"].map(String::from).to_vec();
        let mut exclude: Vec<String> = ["*/delete*", "s2/*_v2", "*Ä*", "*_Y_*"].map(String::from).to_vec();
        include.extend((0..20).map(|i| format!("*k{i}*")));
        exclude.extend((0..20).map(|i| format!("q{i}_*")));
        let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
        let names = |from: usize, count: usize| -> Vec<String> {
            (from..from + count)
                .map(|i| match i % 5 {
                    0 => format!("k{}_{i}", i % 25),
                    1 => format!("Q{}-{i}", i % 25),
                    2 => format!("read_{i}"),
                    3 => format!("delete_\u{c4}{i}"),
                    _ => format!("a_Y_{i}"),
                })
                .collect()
        };
        let servers = ["s1", "s2", "gh-1", "other"];
        // One batch of `tools` tools drawn from `names`; whether its memo
        // knew the first name's answers before deciding anything.
        let batch = |f: &StaticFilter, names: &[String], tools: usize| -> bool {
            let mut decider = Decider::new(f);
            let known_first = decider.memo.probe(names[0].as_bytes()).is_some_and(|(_, known)| known != 0);
            for i in 0..tools {
                let (server, name) = (servers[(i / 7) % servers.len()], names[(i * 31) % names.len()].as_str());
                assert_eq!(decider.decide(server.as_bytes(), name.as_bytes(), 0), decide(f, server, name), "{server:?}/{name:?}");
            }
            known_first
        };
        let first = names(0, 2_000);
        assert!(!batch(&f, &first, 20_000), "a fresh filter knows no name");
        assert!(batch(&f, &first, 3_000), "the names of the batch before are known");
        // New names, and names met before on other servers, decide as the
        // scalar path with the memo kept.
        let mixed = names(1_000, 3_000);
        assert!(batch(&f, &mixed, 20_000), "names 1,000 to 1,999 were met before");
        assert!(!batch(&f.clone(), &first, 100), "a copy keeps none");
        // At most KEPT_MEMOS, the larger ones, the largest taken first.
        let held: Vec<Decider<'_>> = (0..KEPT_MEMOS + 2).map(|_| Decider::new(&f)).collect();
        let slots: Vec<usize> = held.iter().map(|d| d.memo.slots()).collect();
        assert!(slots[0] > 0 && slots[1..].iter().all(|&s| s == 0), "one memo kept so far: {slots:?}");
        drop(held);
        let held: Vec<Decider<'_>> = (0..KEPT_MEMOS + 1).map(|_| Decider::new(&f)).collect();
        let slots: Vec<usize> = held.iter().map(|d| d.memo.slots()).collect();
        assert!(slots[0] > 0 && slots[KEPT_MEMOS] == 0 && slots.windows(2).all(|w| w[0] >= w[1]), "{slots:?}");
        drop(held);
        let f = f.with_hints::<&str>(&[], &[]);
        assert!(!batch(&f, &first, 100), "new annotation patterns keep none");
    }

    /// A short batch takes the every-server shortcuts at its first tool
    /// once they are ready (built, their states kept by a batch before) or
    /// once the filter's batches decided [`CUTS_AFTER`] tools in all, and
    /// not before; either way it decides as the scalar path.
    #[test]
    fn short_batches_take_the_shortcuts_once_the_filter_is_used() {
        let include = ["a*", "*b", "*c_*", "d", "e*f*g", "*h*"];
        let exclude = ["X*", "*y", "*z-*", "w", "v*u*t", "*.*"];
        let names = ["ab", "Xa", "dc_e", "c-e", "w", "W", "a.b", "h", "efgg", "\u{212a}y", "\u{130}b", "Vut"];
        let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
        // Decides `tools` tools as a batch; whether it held each shortcut
        // after its first tool.
        let short = |f: &StaticFilter, tools: usize| -> (bool, bool) {
            let mut decider = Decider::new(f);
            let mut first = None;
            for i in 0..tools {
                let name = names[i % names.len()];
                let want = f.outcome(f.flags(b"s", name.as_bytes(), &mut FlagScratch::default()));
                assert_eq!(decider.decide(b"s", name.as_bytes(), 0), want, "tool {i}: {name:?}");
                first = first.or(Some((decider.cuts.exclude.is_some(), decider.cuts.include.is_some())));
            }
            first.expect("a batch of at least one tool")
        };
        let fresh = f.clone();
        // Used little: nothing built, nothing taken.
        assert_eq!(short(&f, 1), (false, false));
        let used = fresh.clone();
        for _ in 0..CUTS_AFTER - 1 {
            short(&used, 1);
        }
        assert!(used.exclude.built_shortcut().is_none(), "a batch of one tool builds nothing");
        assert_eq!(short(&used, 1), (false, false), "one tool short of enough");
        assert_eq!(short(&used, 1), (true, true), "used enough: built and taken at the first tool");
        // A long batch builds them and keeps its caches: the next batch
        // takes them at its first tool; a copy made before counts apart.
        assert_eq!(short(&f, CUTS_AFTER as usize + 10), (false, false));
        assert_eq!(short(&f, 1), (true, true), "ready: taken at the first tool");
        assert_eq!(short(&fresh, 1), (false, false), "a copy made before counts its own batches");
    }

    /// A batch matches first the side that more often decides alone, and
    /// decides as the scalar path whichever it is: an include side that
    /// admits few tools goes first, an exclude side that hides most stays
    /// first; the order follows the batch when that changes, and regex
    /// servers (undecided tools) and hints come out the same.
    #[test]
    fn either_side_first_decides_as_scalar() {
        let mut next = crate::test_rng::below(0xBB67_AE85_84CA_A73B);
        let names = ["read_a", "Read-B", "write_c", "drop_d", "x", "\u{212a}ey", "İd", "list_e", "read_drop"];
        // (include, exclude, and the batch's parts: the server of their
        // tools (None: any of s0 to s4), how many, and which side goes
        // first after the part).
        type Part = (Option<&'static str>, usize, bool);
        let cases: [(&[&str], &[&str], [Part; 2]); 3] = [
            (&["read_*"], &["*drop*"], [(None, 6_000, true), (Some("s3"), 6_000, true)]),
            (&["*"], &["*_*", "x"], [(None, 6_000, false), (Some("s3"), 6_000, false)]),
            (&["s1/*", "read_*"], &["*drop*"], [(Some("s1"), 6_000, false), (Some("s3"), 20_000, true)]),
        ];
        for (include, exclude, parts) in cases {
            let f = StaticFilter::compile(include, exclude, &["s2"], &["s4"], false).unwrap();
            let mut decider = Decider::new(&f);
            for (part, (server, count, include_first)) in parts.into_iter().enumerate() {
                for i in 0..count {
                    let server = server.map_or_else(|| format!("s{}", next(5)), str::to_string);
                    let name = format!("{}{}", names[next(names.len() as u64) as usize], ["", "_q", "drop"][next(3) as usize]);
                    let hints = next(4) as u8;
                    let want = f.outcome(f.flags_with_hints(server.as_bytes(), name.as_bytes(), hints, &mut FlagScratch::default()));
                    assert_eq!(decider.decide(server.as_bytes(), name.as_bytes(), hints), want, "{include:?}, part {part}, tool {i}: {server}/{name}");
                }
                assert_eq!(decider.order.include_first, include_first, "{include:?} {exclude:?}, part {part}");
            }
        }
    }

    /// What a batch reads follows the patterns: nothing without any, no
    /// server when every rule is for any server, no name for regexes alone.
    #[test]
    fn needs_follow_the_patterns() {
        let needs = |include: &[&str], exclude: &[&str], regex: &[&str]| {
            StaticFilter::compile(include, exclude, regex, &[], include.is_empty()).unwrap().needs()
        };
        let n = |server, name| Needs { server, name, hints: false };
        assert_eq!(needs(&[], &[], &[]), n(false, false));
        assert_eq!(needs(&["*"], &[], &[]), n(false, true));
        assert_eq!(needs(&["read_*", "*/x", "**/y"], &["*_v2"], &[]), n(false, true));
        assert_eq!(needs(&["s/*"], &[], &[]), n(true, true));
        assert_eq!(needs(&["s/t"], &[], &[]), n(true, true));
        assert_eq!(needs(&[], &["*/x", "s/y"], &[]), n(true, true));
        assert_eq!(needs(&["x"], &[], &["gh*"]), n(true, true));
        assert_eq!(needs(&["x"], &[], &["*"]), n(false, true));
        // An open include (no string pattern) is never looked at.
        let open = StaticFilter::compile(&["s/*"], &[], &[], &[], true).unwrap();
        assert_eq!(open.needs(), n(false, false));
        assert_eq!(open.constant_outcome(), Some(Outcome::Visible));
        assert_eq!(filter(&[], &[]).constant_outcome(), Some(Outcome::Visible));
        assert_eq!(filter(&["x"], &[]).constant_outcome(), None);
        // A blind filter answers as the scalar path, whatever the server.
        let f = filter(&["read_*", "*/x"], &["*_V2"]);
        let mut decider = Decider::new(&f);
        for (server, name) in [("a", "read_v2"), ("b", "read_1"), ("", "x"), ("c", "y")] {
            let want = f.outcome(f.flags(server.as_bytes(), name.as_bytes(), &mut FlagScratch::default()));
            assert_eq!(decider.decide(server.as_bytes(), name.as_bytes(), 0), want, "{server}/{name}");
        }
        assert!(decider.plans.list.is_empty());
    }

    /// A literal rule is looked up only for tools of its lengths: on both
    /// sides, by the length of the fold on the loose one, which for a name
    /// that is not ASCII may differ from the raw length (`İ` folds to
    /// `i` and a combining dot).
    #[test]
    fn literal_rules_are_found_by_their_lengths() {
        let f = filter(&["s/ab", "s/abcd", "t/x"], &["S/Del-Me", "S/İX", "s/q"]);
        for (server, tool, want) in [
            ("s", "ab", Outcome::Visible),
            ("s", "abc", Outcome::Hidden),
            ("s", "abcd", Outcome::Visible),
            ("s", "del.me", Outcome::Hidden),
            ("s", "abcd_", Outcome::Hidden),
            ("S", "İX", Outcome::Hidden),
            ("s", "i\u{307}x", Outcome::Hidden),
            ("s", "İx", Outcome::Hidden),
            ("s", "Q", Outcome::Hidden),
            ("t", "x", Outcome::Visible),
            ("t", "ab", Outcome::Hidden),
        ] {
            assert_eq!(decide(&f, server, tool), want, "{server}/{tool}");
        }
        let exclude_only = filter(&[], &["S/Del-Me", "S/İX"]);
        let mut decider = Decider::new(&exclude_only);
        for (tool, want) in [("DEL_ME", Outcome::Hidden), ("İX", Outcome::Hidden), ("İXY", Outcome::Visible), ("ix", Outcome::Visible)] {
            assert_eq!(decider.decide(b"s", tool.as_bytes(), 0), want, "{tool}");
        }
    }

    #[test]
    fn open_include_still_reports_string_hits() {
        let f = StaticFilter::compile(&["*"], &[], &[], &[], true).unwrap();
        assert_eq!(f.flags(b"", b"", &mut FlagScratch::default()), flag::INCLUDED);
    }

    #[test]
    fn compile_error_names_the_side() {
        let err = StaticFilter::compile(&["ok"], &["ok", "x/"], &[], &[], false).unwrap_err();
        assert_eq!(err, (Side::Exclude, 1, PatternIssue::EmptyTool));
    }

    /// Long options compile on two threads; the answer and the error chosen
    /// are those of one thread.
    #[test]
    fn long_options_compile_alike_on_two_threads() {
        let n = PARALLEL_COMPILE_MIN;
        let include: Vec<String> = (0..n).map(|i| format!("s{}/t{i}*", i % 7)).collect();
        let exclude: Vec<String> = (0..n).map(|i| format!("*/Del-{i}")).collect();
        let f = StaticFilter::compile(&include, &exclude, &[], &[], false).unwrap();
        assert_eq!(decide(&f, "s3", "t10_x"), Outcome::Visible);
        assert_eq!(decide(&f, "s3", "del_10"), Outcome::Hidden);
        assert_eq!(decide(&f, "s2", "t10_x"), Outcome::Hidden);
        let (mut bad_include, mut bad_exclude) = (include.clone(), exclude.clone());
        bad_include[n - 2] = "x/".into();
        bad_exclude[3] = "".into();
        let err = StaticFilter::compile(&bad_include, &bad_exclude, &[], &[], false).unwrap_err();
        assert_eq!(err, (Side::Include, n - 2, PatternIssue::EmptyTool));
        let err = StaticFilter::compile(&include, &bad_exclude, &[], &[], false).unwrap_err();
        assert_eq!(err, (Side::Exclude, 3, PatternIssue::EmptyPattern));
    }

    #[test]
    fn indexed_entries_keep_their_places() {
        let include: [(usize, &[u8]); 2] = [(1, b"s/a"), (3, b"/x")];
        let err = StaticFilter::compile_indexed(&include, &[], &[] as &[&str], &[], false).unwrap_err();
        assert_eq!(err, (Side::Include, 3, PatternIssue::EmptyServer));
        let exclude: [(usize, &[u8]); 2] = [(2, b"s/*"), (5, b"s/")];
        let err = StaticFilter::compile_indexed(&[(0, &b"ok"[..])], &exclude, &[] as &[&str], &[], false).unwrap_err();
        assert_eq!(err, (Side::Exclude, 5, PatternIssue::EmptyTool));
        let exclude: [(usize, &[u8]); 2] = [(4, b"S/Dele*"), (7, b"t/u")];
        let f = StaticFilter::compile_indexed(&[(2, &b"s/delete_x"[..])], &exclude, &[] as &[&str], &[], false).unwrap();
        assert_eq!(f.exclude().len(), 2);
        assert_eq!(decide(&f, "s", "delete_x"), Outcome::Hidden);
        assert_eq!(f.exclude().first_match(b"t", b"u", &mut Scratch::default()), Some(7));
        assert_eq!(f.include().first_match(b"s", b"delete_x", &mut Scratch::default()), Some(2));
    }

    #[test]
    fn annotation_patterns_join_the_string_patterns() {
        use crate::hints::{raw, HintPattern};
        let (t, f, n) = (Some(true), Some(false), None);
        // Include read-only tools of trusted servers and the `admin/*` globs;
        // exclude destructive ones (untrusted servers are destructive).
        let read_only = HintPattern { want: [t, n, n, n], trusted: vec!["github", "fs", "admin"] };
        let destructive = HintPattern { want: [n, t, n, n], trusted: vec!["github", "fs", "admin"] };
        let filter = StaticFilter::compile(&["admin/*"], &["*/drop_*"], &[], &[], false)
            .unwrap()
            .with_hints(&[read_only], &[destructive]);
        assert!(filter.uses_hints());
        let cases: [(&str, &str, [Option<bool>; 4], Outcome); 8] = [
            ("github", "get_issue", [t, n, n, n], Outcome::Visible),
            ("github", "create_issue", [f, f, n, n], Outcome::Hidden), // not read-only
            ("github", "get_issue", [n, n, n, n], Outcome::Hidden),    // missing: not read-only
            ("evil", "get_issue", [t, f, n, n], Outcome::Hidden),      // untrusted: destructive
            ("admin", "rotate", [f, f, n, n], Outcome::Visible),       // a glob includes it
            ("admin", "wipe", [f, t, n, n], Outcome::Hidden),          // excluded as destructive
            ("fs", "read", [t, t, n, n], Outcome::Visible),            // read-only wins over destructive
            ("fs", "Drop-Table", [t, n, n, n], Outcome::Hidden),       // the loose glob excludes it
        ];
        let mut scratch = FlagScratch::default();
        let items: Vec<(&[u8], &[u8], u8)> =
            cases.iter().map(|(s, tool, h, _)| (s.as_bytes(), tool.as_bytes(), raw(*h))).collect();
        let mut batch = Vec::new();
        filter.outcomes_with_hints_into(items.iter().copied(), &mut batch);
        for ((server, tool, hints, want), got) in cases.iter().zip(batch) {
            let bits = filter.flags_with_hints(server.as_bytes(), tool.as_bytes(), raw(*hints), &mut scratch);
            assert_eq!(filter.outcome(bits), *want, "{server}/{tool} {hints:?}");
            assert_eq!(got, *want, "batch: {server}/{tool} {hints:?}");
        }
        // Without hints (the pair forms), every hint takes its default.
        assert_eq!(decide(&filter, "github", "get_issue"), Outcome::Hidden);
        assert_eq!(decide(&filter, "admin", "rotate"), Outcome::Hidden);
    }
}
