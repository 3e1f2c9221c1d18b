//! Compiling a static filter: reading the options' entries, handing a long
//! exclude side to the helper thread, and finishing.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple, PyType};

use super::{as_str, str_bytes};
use super::filter::PyStaticFilter;
use super::inplace::{prefetch_object, string_bytes, tuple_item, Quiet};
use crate::background;
use crate::filter::{compile_in_parallel, Side, StaticFilter};
use crate::hints::HintPattern;
use crate::rules::{self, PatternIssue, RuleSet};

/// How many entries ahead of the one being read the reading prefetches.
const PREFETCH_AHEAD: usize = 16;

/// `re.Pattern`, the type of a compiled regex.
static RE_PATTERN: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The `str` patterns of one option, copied out of Python: `bytes` holds them
/// all, `spans` each one's place in the option and range of `bytes`.
#[derive(Default)]
struct OptionStrings {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize, usize)>,
    /// The places of the option's plain regex entries: an exact
    /// `(str, re.Pattern)` tuple whose server glob is usable and whose
    /// pattern is a `str` (the common case, which needs no more checking).
    regexes: Vec<usize>,
    /// The places of the option's other entries, for the caller to judge.
    others: Vec<usize>,
}

impl OptionStrings {
    /// Reads an option's entries (an exact list or tuple): every `str` among
    /// them (a subclass too, by its value: no Python code runs) is a string
    /// pattern; the others are left to the caller. Also returns the entries
    /// as a tuple: a list's snapshot, or the tuple given.
    fn read<'py>(option: &Bound<'py, PyAny>, pattern_type: &Bound<'py, PyType>) -> PyResult<(Self, Bound<'py, PyTuple>)> {
        let py = option.py();
        let pattern_attr = intern!(py, "pattern");
        // Quiet from before the snapshot: making it allocates, and a
        // collection started then could change the list being copied.
        let quiet = Quiet::new(py);
        let entries = match option.cast::<PyTuple>() {
            Ok(tuple) => tuple.clone(),
            Err(_) => option.cast::<PyList>()?.to_tuple(),
        };
        let count = entries.len();
        let mut read = OptionStrings {
            // Room for patterns of usual lengths; a long one grows it.
            bytes: Vec::with_capacity(count * 32),
            spans: Vec::with_capacity(count),
            regexes: Vec::new(),
            others: Vec::new(),
        };
        for i in 0..count {
            if let Some(ahead) = tuple_item(&entries, i + PREFETCH_AHEAD) {
                prefetch_object(ahead.as_ptr());
            }
            let Some(item) = tuple_item(&entries, i) else { break };
            match item.cast::<PyString>() {
                Ok(pattern) => {
                    let start = read.bytes.len();
                    read.bytes.extend_from_slice(&quiet.str_bytes(pattern)?);
                    read.spans.push((i, start, read.bytes.len()));
                }
                Err(_) => {
                    let usable = |glob: &[u8]| rules::check_server_glob(glob).is_ok();
                    match quiet.is_plain_regex(item, pattern_type, pattern_attr, usable) {
                        true => read.regexes.push(i),
                        false => read.others.push(i),
                    }
                }
            }
        }
        Ok((read, entries))
    }

    fn compile(&self, side: Side) -> Compiled {
        let entries: Vec<(usize, &[u8])> =
            self.spans.iter().map(|&(i, start, end)| (i, &self.bytes[start..end])).collect();
        StaticFilter::compile_side(&entries, side)
    }
}

type Compiled = Result<RuleSet, (Side, usize, PatternIssue)>;

/// A side's compile handed to the helper thread (`crate::background`) before
/// its patterns are read: the helper wakes while they are (waking one took
/// about a tenth of a millisecond), then waits for them.
struct Handoff {
    give: SyncSender<Arc<OptionStrings>>,
    pending: Receiver<Compiled>,
    abandoned: Arc<AtomicBool>,
    side: Side,
}

impl Handoff {
    /// None when the helper is busy or cannot be had: the side is then
    /// compiled on the calling thread, and no thread is added.
    fn start(side: Side) -> Option<Self> {
        let (give, get) = sync_channel::<Arc<OptionStrings>>(1);
        let (send, pending) = sync_channel(1);
        let abandoned = Arc::new(AtomicBool::new(false));
        let skip = Arc::clone(&abandoned);
        // Should reading fail, `give` is dropped and the job ends; a build
        // abandoned before its patterns are compiled skips the work; should
        // nobody wait any more (an unfinished build), the answer is dropped.
        let job = move || {
            if let Ok(strings) = get.recv() {
                if !skip.load(Ordering::SeqCst) {
                    drop(send.send(strings.compile(side)));
                }
            }
        };
        background::try_run(job).ok()?;
        Some(Handoff { give, pending, abandoned, side })
    }

    fn give(self, strings: OptionStrings) -> Handed {
        let strings = Arc::new(strings);
        let pending = match self.give.send(Arc::clone(&strings)) {
            Ok(()) => Some((self.pending, self.abandoned)),
            Err(_) => None,
        };
        Handed { strings, side: self.side, pending }
    }
}

/// One side of a [`PyStaticBuild`]: its patterns, and when the helper thread
/// compiles them, where the compiled set will come and the flag that tells
/// the helper the build was given up.
struct Handed {
    strings: Arc<OptionStrings>,
    side: Side,
    pending: Option<(Receiver<Compiled>, Arc<AtomicBool>)>,
}

impl Handed {
    /// Kept to compile in `take`.
    fn here(strings: OptionStrings, side: Side) -> Self {
        Handed { strings: Arc::new(strings), side, pending: None }
    }

    /// The compiled set: from the helper, unless it is gone (a fork since
    /// `handed_by`, or a panic, which compiling never has), else compiled here.
    fn take(mut self, handed_by: u32) -> Compiled {
        let helped = self
            .pending
            .take()
            .filter(|_| handed_by == std::process::id())
            .and_then(|(answer, _)| answer.recv().ok());
        helped.unwrap_or_else(|| self.strings.compile(self.side))
    }
}

impl Drop for Handed {
    /// A build dropped unfinished (a bad entry raised) tells the helper, which
    /// skips the compile if it has not begun it.
    fn drop(&mut self) {
        if let Some((_, abandoned)) = &self.pending {
            abandoned.store(true, Ordering::SeqCst);
        }
    }
}

/// What a [`PyStaticBuild`] holds until it is finished.
struct Building {
    include: Handed,
    exclude: Handed,
    /// The process that handed the patterns off: in a child of `fork`
    /// nobody is compiling them.
    pid: u32,
}

/// A static filter being compiled. Made from the two options' entries (an
/// exact list or tuple each), it reads their `str` patterns at once, and when
/// both options are long hands exclude's (the heavier side: it folds) to the
/// helper thread to compile (`crate::background`); `others` tells where the
/// other entries are, for the caller to judge meanwhile, and `finish`
/// compiles include's and returns the filter.
///
/// The helper owns a copy of its patterns: a build dropped unfinished (a bad
/// regex entry raised) tells it so, and it skips the compile if it has not
/// begun; a compile it is in the middle of runs to its end and is dropped.
#[pyclass(module = "toolfilter_fast._core", name = "StaticBuild")]
pub(super) struct PyStaticBuild {
    /// Taken by `finish` (a Mutex: a build may be shared between threads).
    building: Mutex<Option<Building>>,
    include_others: Vec<usize>,
    exclude_others: Vec<usize>,
    include_regexes: Vec<usize>,
    exclude_regexes: Vec<usize>,
    /// The options' entries as tuples (a list's snapshot, or the tuple given).
    include_sources: Py<PyTuple>,
    exclude_sources: Py<PyTuple>,
}

#[pymethods]
impl PyStaticBuild {
    #[new]
    fn new(include: &Bound<'_, PyAny>, exclude: &Bound<'_, PyAny>) -> PyResult<Self> {
        // Before anything is read: an import may run Python code.
        let pattern_type = RE_PATTERN.import(include.py(), "re", "Pattern")?;
        let handoff = if compile_in_parallel(include.len()?, exclude.len()?) { Handoff::start(Side::Exclude) } else { None };
        let (mut exclude, exclude_sources) = OptionStrings::read(exclude, pattern_type)?;
        let exclude_others = std::mem::take(&mut exclude.others);
        let exclude_regexes = std::mem::take(&mut exclude.regexes);
        let exclude = match handoff {
            Some(handoff) => handoff.give(exclude),
            None => Handed::here(exclude, Side::Exclude),
        };
        // Include compiles in `finish`, on this thread: a second helper,
        // woken while this thread still runs Python, was left queued behind
        // the first on one core until that one was done.
        let (mut include, include_sources) = OptionStrings::read(include, pattern_type)?;
        let include_others = std::mem::take(&mut include.others);
        let include_regexes = std::mem::take(&mut include.regexes);
        let include = Handed::here(include, Side::Include);
        let building = Building { include, exclude, pid: std::process::id() };
        Ok(PyStaticBuild {
            building: Mutex::new(Some(building)),
            include_others,
            exclude_others,
            include_regexes,
            exclude_regexes,
            include_sources: include_sources.unbind(),
            exclude_sources: exclude_sources.unbind(),
        })
    }

    /// The entries of `option` ("include" or "exclude") as a tuple: a list's
    /// snapshot, taken as it was read.
    fn sources<'py>(&self, py: Python<'py>, option: &str) -> PyResult<Bound<'py, PyTuple>> {
        Ok(self.pick(option, &self.include_sources, &self.exclude_sources)?.bind(py).clone())
    }

    /// The places of the entries of `option` ("include" or "exclude") that
    /// are neither `str` nor plain regex entries: the caller's to judge.
    fn others(&self, option: &str) -> PyResult<Vec<usize>> {
        Ok(self.pick(option, &self.include_others, &self.exclude_others)?.clone())
    }

    /// The plain regex entries of `option`, `(server_glob, re.Pattern)`
    /// tuples as written, in order: checked here, they need no judging.
    fn regexes<'py>(&self, py: Python<'py>, option: &str) -> PyResult<Bound<'py, PyList>> {
        let places = self.pick(option, &self.include_regexes, &self.exclude_regexes)?;
        let sources = self.sources(py, option)?;
        PyList::new(py, places.iter().map(|&i| sources.get_item(i)).collect::<PyResult<Vec<_>>>()?)
    }

    /// Gives the build up: the helper skips a compile it has not begun. (A
    /// build that is dropped does the same; this says it at once, whenever
    /// the collector gets to the object.)
    fn abandon(&self) {
        if let Ok(mut building) = self.building.lock() {
            building.take();
        }
    }

    /// The compiled filter, with the server globs of the regex patterns and
    /// the annotation patterns of each side, each `(want, trusted)`: the four
    /// wanted hints (`True`, `False` or None for any, in the order of
    /// `HINTS`) and the server globs it trusts, checked by the caller.
    /// Raises ValueError((option, index, reason)) for the first refused
    /// pattern, include's before exclude's, `index` being its place in the
    /// option. A build finishes once.
    #[pyo3(signature = (include_regex_servers, exclude_regex_servers, include_open, include_hints=Vec::new(), exclude_hints=Vec::new()))]
    fn finish(
        &self,
        py: Python<'_>,
        include_regex_servers: Vec<Bound<'_, PyAny>>,
        exclude_regex_servers: Vec<Bound<'_, PyAny>>,
        include_open: bool,
        include_hints: Vec<HintEntry<'_>>,
        exclude_hints: Vec<HintEntry<'_>>,
    ) -> PyResult<PyStaticFilter> {
        fn strings<'a>(list: &'a [Bound<'_, PyAny>], what: &str) -> PyResult<Vec<Cow<'a, [u8]>>> {
            list.iter().enumerate().map(|(i, p)| string_bytes(as_str(p, || format!("{what}[{i}]"))?)).collect()
        }
        let (include_regex_servers, exclude_regex_servers) = (
            strings(&include_regex_servers, "include_regex_servers")?,
            strings(&exclude_regex_servers, "exclude_regex_servers")?,
        );
        let taken = self.building.lock().ok().and_then(|mut building| building.take());
        let Building { include, exclude, pid } =
            taken.ok_or_else(|| PyValueError::new_err("this build is already finished or abandoned"))?;
        let compiled = py.detach(|| {
            let (include, exclude) = (include.take(pid), exclude.take(pid));
            Ok(StaticFilter::from_sides(include?, exclude?, &include_regex_servers, &exclude_regex_servers, include_open))
        });
        let inner = compiled.map_err(|(side, index, issue)| {
            let option = match side {
                Side::Include => "include",
                Side::Exclude => "exclude",
            };
            PyValueError::new_err((option, index, issue.message()))
        })?;
        let (include_hints, exclude_hints) = (hint_patterns(&include_hints)?, hint_patterns(&exclude_hints)?);
        Ok(PyStaticFilter::new(inner.with_hints(&include_hints, &exclude_hints)))
    }
}

/// One annotation pattern as Python hands it over: the four wanted hints
/// and the trusted server globs.
type HintEntry<'py> = ([Option<bool>; 4], Vec<Bound<'py, PyAny>>);

fn hint_patterns<'a>(entries: &'a [HintEntry<'_>]) -> PyResult<Vec<HintPattern<Cow<'a, [u8]>>>> {
    entries
        .iter()
        .map(|(want, trusted)| {
            let trusted = trusted.iter().map(|glob| str_bytes(glob, "trusted")).collect::<PyResult<_>>()?;
            Ok(HintPattern { want: *want, trusted })
        })
        .collect()
}

impl PyStaticBuild {
    fn pick<'a, T>(&self, option: &str, include: &'a T, exclude: &'a T) -> PyResult<&'a T> {
        match option {
            "include" => Ok(include),
            "exclude" => Ok(exclude),
            other => Err(PyValueError::new_err(format!("option must be 'include' or 'exclude', not {other:?}"))),
        }
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStaticBuild>()
}
