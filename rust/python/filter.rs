//! Bindings for the tool filter: folds, globs and rule sets.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyList, PyString, PyTuple, PyType};

use super::{as_str, bytes_str, prefetch_object, str_bytes, str_ptr_bytes, string_bytes, ToolLayout};
use crate::background;
use crate::filter::{compile_in_parallel, FlagScratch, Outcome, Side, StaticFilter};
use crate::fold::Fold;
use crate::glob::SegmentGlob;
use crate::rules::{self, PatternIssue, RuleSet, Scratch};

thread_local! {
    /// Per-thread buffers for scalar queries: no allocation per call.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static FLAG_SCRATCH: RefCell<FlagScratch> = RefCell::new(FlagScratch::default());
}

fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    with_local(&SCRATCH, f)
}

fn with_flag_scratch<T>(f: impl FnOnce(&mut FlagScratch) -> T) -> T {
    with_local(&FLAG_SCRATCH, f)
}

/// Runs `f` with this thread's buffers in `key`, or with fresh ones when they
/// are borrowed (re-entered: no Python code runs while they are, so not
/// today) or already destroyed (a `__del__` at thread exit): never a panic.
fn with_local<S: Default + 'static, T>(
    key: &'static std::thread::LocalKey<RefCell<S>>,
    f: impl FnOnce(&mut S) -> T,
) -> T {
    let mut f = Some(f);
    let answer = key.try_with(|cell| {
        let mut scratch = cell.try_borrow_mut().ok()?;
        f.take().map(|f| f(&mut scratch))
    });
    if let Ok(Some(answer)) = answer {
        return answer;
    }
    let f = f.expect("taken only by a call that answered");
    f(&mut S::default())
}

fn fold_arg(loose: bool) -> Option<Fold> {
    loose.then_some(Fold::Loose)
}

/// The loose fold: per-character Unicode lower-case, then `-` and `.` to `_`.
#[pyfunction]
fn fold_loose<'py>(py: Python<'py>, s: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    bytes_str(py, &Fold::Loose.apply(&str_bytes(s, "s")?))
}

/// Per-character Unicode lower-case (no separator mapping).
#[pyfunction]
fn fold_lower<'py>(py: Python<'py>, s: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    bytes_str(py, &Fold::Lower.apply(&str_bytes(s, "s")?))
}

/// Whether the segment glob `pattern` matches the whole of `s`.
#[pyfunction]
fn glob_match(pattern: &Bound<'_, PyAny>, s: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(SegmentGlob::new(&str_bytes(pattern, "pattern")?).is_match(&str_bytes(s, "s")?))
}

/// Why `server_glob` cannot stand as a server segment, or None when it can.
#[pyfunction]
fn server_glob_problem(server_glob: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    Ok(rules::check_server_glob(&str_bytes(server_glob, "server_glob")?).err().map(|e| e.message()))
}

/// The item pointers of a tuple, borrowed (the tuple, immutable, holds them):
/// cheap to walk ahead of for prefetching.
fn tuple_items(tuple: &Bound<'_, PyTuple>) -> Vec<*mut pyo3::ffi::PyObject> {
    (0..tuple.len())
        // SAFETY: `i < len`, so the call neither fails nor sets an error.
        .map(|i| unsafe { pyo3::ffi::PyTuple_GetItem(tuple.as_ptr(), i as pyo3::ffi::Py_ssize_t) })
        .collect()
}

/// A compiled set of `server/tool` string patterns.
#[pyclass(module = "toolfilter_fast._core", name = "RuleSet", frozen)]
struct PyRuleSet {
    inner: RuleSet,
}

#[pymethods]
impl PyRuleSet {
    /// Raises ValueError((index, reason)) for the first pattern that is refused.
    #[new]
    #[pyo3(signature = (patterns, loose=false))]
    fn new(patterns: Vec<Bound<'_, PyAny>>, loose: bool) -> PyResult<Self> {
        let mut bytes = Vec::with_capacity(patterns.len());
        for (index, p) in patterns.iter().enumerate() {
            bytes.push(str_bytes(p, &format!("patterns[{index}]"))?);
        }
        let inner = RuleSet::compile(&bytes, fold_arg(loose))
            .map_err(|(index, issue)| PyValueError::new_err((index, issue.message())))?;
        Ok(PyRuleSet { inner })
    }

    fn first_match(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_scratch(|scratch| self.inner.first_match(&server, &tool, scratch)))
    }

    fn is_match(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_scratch(|scratch| self.inner.is_match(&server, &tool, scratch)))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// One compiled segment glob, optionally matched under the loose fold.
#[pyclass(module = "toolfilter_fast._core", name = "SegmentGlob", frozen)]
struct PySegmentGlob {
    glob: SegmentGlob,
    fold: Option<Fold>,
}

#[pymethods]
impl PySegmentGlob {
    #[new]
    #[pyo3(signature = (pattern, loose=false))]
    fn new(pattern: &Bound<'_, PyAny>, loose: bool) -> PyResult<Self> {
        let fold = fold_arg(loose);
        Ok(PySegmentGlob { glob: rules::compile_segment(&str_bytes(pattern, "pattern")?, fold), fold })
    }

    fn is_match(&self, s: &Bound<'_, PyAny>) -> PyResult<bool> {
        let bytes = str_bytes(s, "s")?;
        Ok(self.glob.is_match(rules::fold_for_match(self.fold, &bytes).as_bytes()))
    }
}

/// Tools per block: the unit a batch reads, hands to a worker and matches.
const BLOCK: usize = 1 << 13;
/// Batches smaller than this are matched on the calling thread alone.
const PARALLEL_MIN: usize = 1 << 14;

/// What a batch returns.
#[derive(Clone, Copy)]
enum Select {
    /// The kept items themselves.
    Items,
    /// One bool per item.
    Mask,
    /// The indices of the kept items.
    Indices,
}

impl Select {
    fn parse(mode: &str) -> PyResult<Self> {
        match mode {
            "items" => Ok(Select::Items),
            "mask" => Ok(Select::Mask),
            "indices" => Ok(Select::Indices),
            other => Err(PyValueError::new_err(format!(
                "mode must be 'items', 'mask' or 'indices', not {other:?}"
            ))),
        }
    }
}

/// At most this many threads work on one batch, whatever `threads` asks for:
/// each is an OS thread, and a request for 2**40 must not exhaust the machine.
const MAX_THREADS: usize = 64;

fn threads_for(n: usize, threads: Option<usize>) -> PyResult<usize> {
    let wanted = match threads {
        Some(0) => return Err(PyValueError::new_err("threads must be at least 1 (None: every core)")),
        Some(t) => t,
        None if n < PARALLEL_MIN => 1,
        None => std::thread::available_parallelism().map_or(1, |p| p.get()),
    };
    Ok(wanted.min(MAX_THREADS))
}

/// A block of a batch with its strings copied out of Python, so that a worker
/// thread can match it without the GIL: nothing borrowed from a Python object
/// is touched off the calling thread.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    /// Byte ranges of each item's server id and name in `bytes`.
    spans: Vec<(usize, usize, usize, usize)>,
}

impl Block {
    /// A block sized for `BLOCK` items of short names: filling it allocates
    /// nothing, and blocks are recycled, so a batch does not fault in fresh
    /// pages for every block.
    fn with_capacity() -> Self {
        Block { bytes: Vec::with_capacity(BLOCK * 32), spans: Vec::with_capacity(BLOCK) }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    fn copy(&mut self, s: &Bound<'_, PyString>) -> PyResult<(usize, usize)> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&string_bytes(s)?);
        Ok((start, self.bytes.len()))
    }

    fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans.iter().map(|&(a, b, c, d)| (&self.bytes[a..b], &self.bytes[c..d]))
    }
}

/// Blocks that have been matched, kept for the next ones to be read into.
type Spares = Mutex<Vec<Block>>;

fn spare_block(spares: &Spares) -> Block {
    let mut block = spares.lock().ok().and_then(|mut s| s.pop()).unwrap_or_else(Block::with_capacity);
    block.clear();
    block
}

/// Reads one item of a batch into a block. The server id of the previous item
/// is reused when it is the same object (a catalog repeats one per server);
/// `last` keeps that object alive so its address cannot be reused meanwhile.
struct Reader<'py> {
    last: Option<(Bound<'py, PyString>, (usize, usize))>,
}

impl<'py> Reader<'py> {
    fn push(&mut self, block: &mut Block, server: &Bound<'py, PyString>, name: &Bound<'py, PyString>) -> PyResult<()> {
        let server_span = match &self.last {
            Some((obj, span)) if obj.is(server) => *span,
            _ => {
                let span = block.copy(server)?;
                self.last = Some((server.clone(), span));
                span
            }
        };
        let name_span = block.copy(name)?;
        block.spans.push((server_span.0, server_span.1, name_span.0, name_span.1));
        Ok(())
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// Item `i` of a list, borrowed: no reference count is touched. Only for
/// loops that run no Python code between the read and the last use.
fn list_item<'a, 'py>(list: &'a Bound<'py, PyList>, i: usize) -> PyResult<Borrowed<'a, 'py, PyAny>> {
    // SAFETY: `i < len` is checked by the C call (NULL + IndexError otherwise);
    // the list holds the item while no Python code runs.
    unsafe {
        let ptr = pyo3::ffi::PyList_GetItem(list.as_ptr(), i as pyo3::ffi::Py_ssize_t);
        if ptr.is_null() {
            return Err(PyErr::fetch(list.py()));
        }
        Ok(Borrowed::from_ptr(list.py(), ptr))
    }
}

/// How many items ahead of the one being read a batch prefetches a tool's name.
const PREFETCH_AHEAD: usize = 16;

/// Item `i` of a list as a raw borrowed pointer, or None past the end; sets no
/// Python error. Only for a prefetch hint, never dereferenced as an object
/// beyond its type and fields while the GIL is held.
#[inline]
fn list_item_ptr(list: &Bound<'_, PyList>, i: usize) -> Option<*mut pyo3::ffi::PyObject> {
    (i < list.len()).then(|| {
        // SAFETY: `i` is in bounds, so the call neither fails nor sets an error.
        unsafe { pyo3::ffi::PyList_GetItem(list.as_ptr(), i as pyo3::ffi::Py_ssize_t) }
    })
}

/// Matches one block and stores its outcomes under its number. Touches no
/// Python object.
fn match_block(filter: &StaticFilter, number: usize, block: Block, done: &Mutex<Vec<Vec<Outcome>>>, spares: &Spares) {
    let mut outcomes = Vec::with_capacity(block.spans.len());
    filter.outcomes_into(block.pairs(), &mut outcomes);
    if let Ok(mut done) = done.lock() {
        done[number] = outcomes;
    }
    if let Ok(mut spares) = spares.lock() {
        spares.push(block);
    }
}

/// Matches queued blocks until the queue is closed and empty.
fn match_blocks(
    filter: &StaticFilter,
    queue: &Mutex<Receiver<(usize, Block)>>,
    done: &Mutex<Vec<Vec<Outcome>>>,
    spares: &Spares,
) {
    loop {
        let next = queue.lock().map(|rx| rx.recv());
        let Ok(Ok((number, block))) = next else { return };
        match_block(filter, number, block, done, spares);
    }
}

/// A batch reads the caller's list in place, with no copy: the calling
/// thread holds the GIL from the first item read to the last object taken
/// for the answer, and runs no Python code in between, so no other thread,
/// pattern function or property can change the list meanwhile. The one hole
/// is the cyclic garbage collector, which an allocation (the exception of a
/// string that cannot be read) may start and whose finalizers are Python
/// code; it is paused for that stretch. Before anything that does run Python
/// code (a tool read through its attributes), the batch switches to a
/// private copy of the list, taken while the list is still as it was given.
struct InPlace<'py> {
    /// Where items are read from: the caller's list, then perhaps a copy.
    source: Bound<'py, PyList>,
    gc: GcPause<'py>,
    copied: bool,
}

impl<'py> InPlace<'py> {
    fn new(list: &Bound<'py, PyList>) -> Self {
        InPlace { source: list.clone(), gc: GcPause::new(list.py()), copied: false }
    }

    /// Called before Python code may run: reads go to a private copy from now on.
    fn copy(&mut self) {
        if !self.copied {
            self.source = self.source.get_slice(0, self.source.len());
            self.copied = true;
        }
        self.resume();
    }

    /// Lets the collector run again (it must, before Python code runs).
    fn resume(&mut self) {
        self.gc.resume();
    }
}

/// The cyclic garbage collector paused (if it was running) until `resume`
/// or the end of the scope: while it is, no allocation starts a collection,
/// whose finalizers and callbacks are Python code that could change a list
/// being read through borrowed item pointers.
struct GcPause<'py> {
    /// The GIL, held for the guard's life (which keeps it on this thread).
    _py: Python<'py>,
    /// Whether the collector was running and is paused by this guard.
    paused: bool,
}

impl<'py> GcPause<'py> {
    fn new(py: Python<'py>) -> Self {
        // SAFETY: the GIL is held (the token says so).
        GcPause { _py: py, paused: unsafe { pyo3::ffi::PyGC_Disable() } == 1 }
    }

    fn resume(&mut self) {
        if std::mem::take(&mut self.paused) {
            // SAFETY: the GIL is held (the guard holds the token).
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        self.resume();
    }
}


impl PyStaticFilter {
    /// Decides `n` items in blocks: `read(block, reader, i)` copies item `i`.
    ///
    /// The calling thread holds the GIL throughout (see [`InPlace`]). With one
    /// thread, each block is matched right after it is read. With more, the
    /// calling thread reads (it alone may touch Python) and hands blocks to
    /// worker threads, which match them without the GIL; when the workers are
    /// behind (the bounded queue is full) it matches the block it just read
    /// itself instead of waiting, so reading and matching share the cores
    /// whichever is the slower. When reading is done it matches alongside the
    /// workers. At most a few blocks are in flight, so memory stays flat in
    /// the batch size.
    fn decide<'py>(
        &self,
        n: usize,
        threads: Option<usize>,
        mut read: impl FnMut(&mut Block, &mut Reader<'py>, usize) -> PyResult<()>,
    ) -> PyResult<Vec<Outcome>> {
        let threads = threads_for(n, threads)?;
        let spares: Spares = Mutex::new(Vec::new());
        let mut read_block = |start: usize| -> PyResult<Block> {
            let mut block = spare_block(&spares);
            // Spans point into this block only.
            let mut reader = Reader { last: None };
            for i in start..n.min(start + BLOCK) {
                read(&mut block, &mut reader, i)?;
            }
            Ok(block)
        };
        let inner = &self.inner;
        if threads == 1 || n <= BLOCK {
            let mut out = Vec::with_capacity(n);
            for start in (0..n).step_by(BLOCK) {
                let block = read_block(start)?;
                inner.outcomes_into(block.pairs(), &mut out);
                if let Ok(mut spares) = spares.lock() {
                    spares.push(block);
                }
            }
            return Ok(out);
        }
        let blocks = n.div_ceil(BLOCK);
        // No more workers than blocks: the others would only wait.
        let threads = threads.min(blocks);
        let (sender, receiver) = sync_channel::<(usize, Block)>(2 * threads);
        let queue = Mutex::new(receiver);
        let done = Mutex::new(vec![Vec::new(); blocks]);
        let read_result = std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|| match_blocks(inner, &queue, &done, &spares));
            }
            let mut result = Ok(());
            for number in 0..blocks {
                match read_block(number * BLOCK) {
                    Ok(block) => match sender.try_send((number, block)) {
                        Ok(()) => {}
                        Err(TrySendError::Full((number, block))) => {
                            match_block(inner, number, block, &done, &spares);
                        }
                        Err(TrySendError::Disconnected(_)) => break,
                    },
                    Err(err) => {
                        result = Err(err);
                        break;
                    }
                }
            }
            drop(sender);
            match_blocks(inner, &queue, &done, &spares);
            result
        });
        read_result?;
        let outcomes = done.into_inner().map(|d| d.concat()).unwrap_or_default();
        if outcomes.len() != n {
            // Unreachable while matching cannot fail; never answer for a partial batch.
            return Err(PyValueError::new_err("a matching thread failed; no answer for this batch"));
        }
        Ok(outcomes)
    }
}

/// What the answer of a batch needs of one item: the object (a tool) or the
/// two strings (a pair), taken with a reference of its own before any Python
/// code runs.
enum Held<'py> {
    Tool(Bound<'py, PyAny>),
    Pair(Bound<'py, PyAny>, Bound<'py, PyAny>),
}

impl<'py> Held<'py> {
    fn judged(&self, judge: &Bound<'py, PyAny>) -> PyResult<bool> {
        match self {
            Held::Tool(tool) => judge.call1((tool,)),
            Held::Pair(server, name) => judge.call1((server, name)),
        }?
        .is_truthy()
    }
}

/// Builds a batch's answer; `judge(tool)` (or `judge(server_id, name)`) is
/// called for every item the core could not decide, and, with `recheck`, for
/// every visible one too.
///
/// First, still with the input as it was read ([`InPlace`]), every item the
/// answer needs is taken with a reference of its own (`hold(i)`, which must
/// run no Python code); only then is the collector resumed and Python called.
fn answer<'py>(
    py: Python<'py>,
    outcomes: &[Outcome],
    select: Select,
    judge: Option<&Bound<'py, PyAny>>,
    recheck: bool,
    mut in_place: InPlace<'py>,
    mut hold: impl FnMut(&Bound<'py, PyList>, usize) -> PyResult<Held<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let needed = |outcome: Outcome| match outcome {
        Outcome::Hidden => false,
        Outcome::Undecided => true,
        Outcome::Visible => recheck || matches!(select, Select::Items),
    };
    // Only a mask says something of hidden items: the other answers visit the
    // rest (in a big catalog, a few in a thousand).
    let mask = matches!(select, Select::Mask);
    let visited = || (0..outcomes.len()).filter(move |&i| mask || outcomes[i] != Outcome::Hidden);
    let mut held = Vec::new();
    for i in visited() {
        if needed(outcomes[i]) {
            held.push(hold(&in_place.source, i)?);
        }
    }
    in_place.resume();
    drop(in_place);
    let mut held = held.into_iter();
    let out = PyList::empty(py);
    for i in visited() {
        let outcome = outcomes[i];
        let item = if needed(outcome) { held.next() } else { None };
        let keep = match (outcome, judge, &item) {
            (Outcome::Hidden, _, _) => false,
            (Outcome::Visible, Some(j), Some(item)) if recheck => item.judged(j)?,
            (Outcome::Visible, _, _) => true,
            (Outcome::Undecided, Some(j), Some(item)) => item.judged(j)?,
            (Outcome::Undecided, _, _) => {
                return Err(PyValueError::new_err("a regex pattern needs a judge for undecided tools"));
            }
        };
        match select {
            Select::Mask => out.append(PyBool::new(py, keep))?,
            _ if !keep => {}
            Select::Indices => out.append(i)?,
            Select::Items => match item {
                Some(Held::Tool(tool)) => out.append(tool)?,
                _ => return Err(PyValueError::new_err("mode 'items' needs a list of tools")),
            },
        }
    }
    Ok(out)
}

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

/// Whether `item` is a plain regex entry (see [`OptionStrings::regexes`]):
/// one that `_patterns._parse_entry` would take as it is. Runs no Python
/// code: `re.Pattern` is a C type, `pattern` a member of it.
///
/// # Safety
/// `item` is alive for the call, and `pattern_type` is `re.Pattern`.
unsafe fn is_plain_regex(py: Python<'_>, item: *mut pyo3::ffi::PyObject, pattern_type: &Bound<'_, PyType>) -> bool {
    use pyo3::ffi;
    if ffi::PyTuple_CheckExact(item) == 0 || ffi::PyTuple_Size(item) != 2 {
        return false;
    }
    let (server, regex) = (ffi::PyTuple_GetItem(item, 0), ffi::PyTuple_GetItem(item, 1));
    if ffi::PyUnicode_CheckExact(server) == 0 || ffi::Py_TYPE(regex) != pattern_type.as_ptr().cast() {
        return false;
    }
    let Ok(pattern) = Bound::from_owned_ptr_or_err(py, ffi::PyObject_GetAttr(regex, intern!(py, "pattern").as_ptr()))
    else {
        return false;
    };
    ffi::PyUnicode_CheckExact(pattern.as_ptr()) != 0
        && str_ptr_bytes(py, server).is_ok_and(|glob| rules::check_server_glob(&glob).is_ok())
}

impl OptionStrings {
    /// Reads an option's entries (an exact list or tuple): every `str` among
    /// them (a subclass too, by its value: no Python code runs) is a string
    /// pattern; the others are left to the caller. Also returns the entries
    /// as a tuple: a list's snapshot, taken in the same pass (one visit to
    /// each object, not one to copy the list and one to read it).
    fn read<'py>(option: &Bound<'py, PyAny>, pattern_type: &Bound<'py, PyType>) -> PyResult<(Self, Bound<'py, PyTuple>)> {
        let py = option.py();
        // Item pointers are taken before the items are read, and a list's
        // could change under them if a collection ran Python code: the new
        // snapshot tuple and the exception of a string with lone surrogates
        // are allocations that could start one.
        let _gc = GcPause::new(py);
        let (items, snapshot) = if let Ok(tuple) = option.cast::<PyTuple>() {
            (tuple_items(tuple), None)
        } else {
            let list = option.cast::<PyList>()?;
            let items = (0..list.len()).filter_map(|i| list_item_ptr(list, i)).collect::<Vec<_>>();
            // SAFETY: a new tuple of that length, or an error set.
            let tuple = unsafe {
                Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyTuple_New(items.len() as pyo3::ffi::Py_ssize_t))?
            };
            (items, Some(tuple.cast_into::<PyTuple>()?))
        };
        let mut read = OptionStrings {
            // Room for patterns of usual lengths; a long one grows it.
            bytes: Vec::with_capacity(items.len() * 32),
            spans: Vec::with_capacity(items.len()),
            regexes: Vec::new(),
            others: Vec::new(),
        };
        for (i, &item) in items.iter().enumerate() {
            if let Some(&ahead) = items.get(i + PREFETCH_AHEAD) {
                prefetch_object(ahead);
            }
            // SAFETY: the list or tuple, borrowed for this call, holds the
            // item, and no Python code runs here to change the list; the
            // snapshot, new, takes a reference of its own to each item.
            unsafe {
                if let Some(tuple) = &snapshot {
                    pyo3::ffi::Py_IncRef(item);
                    pyo3::ffi::PyTuple_SetItem(tuple.as_ptr(), i as pyo3::ffi::Py_ssize_t, item);
                }
                if pyo3::ffi::PyUnicode_Check(item) == 0 {
                    match is_plain_regex(py, item, pattern_type) {
                        true => read.regexes.push(i),
                        false => read.others.push(i),
                    }
                    continue;
                }
                let start = read.bytes.len();
                read.bytes.extend_from_slice(&str_ptr_bytes(py, item)?);
                read.spans.push((i, start, read.bytes.len()));
            }
        }
        let snapshot = match snapshot {
            Some(tuple) => tuple,
            None => option.cast::<PyTuple>()?.clone(),
        };
        Ok((read, snapshot))
    }

    fn compile(&self, side: Side) -> Compiled {
        let entries: Vec<(usize, &[u8])> =
            self.spans.iter().map(|&(i, start, end)| (i, &self.bytes[start..end])).collect();
        StaticFilter::compile_side(&entries, side)
    }
}

type Compiled = Result<RuleSet, (Side, usize, PatternIssue)>;

/// One side of a [`PyStaticBuild`]: its patterns, and when a helper thread
/// compiles them, where the compiled set will come.
struct Handed {
    strings: Arc<OptionStrings>,
    side: Side,
    pending: Option<Receiver<Compiled>>,
}

impl Handed {
    /// Kept to compile in `take`.
    fn here(strings: OptionStrings, side: Side) -> Self {
        Handed { strings: Arc::new(strings), side, pending: None }
    }

    /// The compiled set: from the helper, unless it is gone (a fork since
    /// `handed_by`, or a panic, which compiling never has), else compiled here.
    fn take(self, handed_by: u32) -> Compiled {
        let helped = self.pending.filter(|_| handed_by == std::process::id()).and_then(|p| p.recv().ok());
        helped.unwrap_or_else(|| self.strings.compile(self.side))
    }
}

/// A side's compile handed to a helper thread (`crate::background`) before
/// its patterns are read: the helper wakes while they are (waking one took
/// about a tenth of a millisecond), then waits for them.
struct Handoff {
    give: SyncSender<Arc<OptionStrings>>,
    pending: Receiver<Compiled>,
    side: Side,
}

impl Handoff {
    fn start(side: Side) -> Self {
        let (give, get) = sync_channel::<Arc<OptionStrings>>(1);
        let (send, pending) = sync_channel(1);
        // Should reading fail, `give` is dropped and the job ends; should
        // nobody wait any more (an unfinished build), the answer is dropped.
        background::run(move || {
            if let Ok(strings) = get.recv() {
                drop(send.send(strings.compile(side)));
            }
        });
        Handoff { give, pending, side }
    }

    fn give(self, strings: OptionStrings) -> Handed {
        let strings = Arc::new(strings);
        let pending = self.give.send(Arc::clone(&strings)).ok().map(|()| self.pending);
        Handed { strings, side: self.side, pending }
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
/// both options are long hands exclude's (the heavier side: it folds) to a
/// helper thread to compile (`crate::background`); `others` tells where the
/// other entries are, for the caller to judge meanwhile, and `finish`
/// compiles include's and returns the filter.
///
/// The helper owns a copy of its patterns: a build dropped unfinished (a bad
/// regex entry raised) leaves it to end its job on its own.
#[pyclass(module = "toolfilter_fast._core", name = "StaticBuild")]
struct PyStaticBuild {
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
        let handoff = compile_in_parallel(include.len()?, exclude.len()?).then(|| Handoff::start(Side::Exclude));
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

    /// The compiled filter, with the server globs of the regex patterns.
    /// Raises ValueError((option, index, reason)) for the first refused
    /// pattern, include's before exclude's, `index` being its place in the
    /// option. A build finishes once.
    fn finish(
        &self,
        py: Python<'_>,
        include_regex_servers: Vec<Bound<'_, PyAny>>,
        exclude_regex_servers: Vec<Bound<'_, PyAny>>,
        include_open: bool,
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
            taken.ok_or_else(|| PyValueError::new_err("this build is already finished"))?;
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
        Ok(PyStaticFilter { inner })
    }
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

/// `re.Pattern`, the type of a compiled regex.
static RE_PATTERN: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The static part of a ToolFilter: string patterns of both options and the
/// server globs of the regex patterns.
#[pyclass(module = "toolfilter_fast._core", name = "StaticFilter", frozen)]
struct PyStaticFilter {
    inner: StaticFilter,
}

#[pymethods]
impl PyStaticFilter {
    /// Flag bits for one tool: 1 excluded by a string pattern, 2 an exclude
    /// regex's server glob matches, 4 included by a string pattern, 8 an
    /// include regex's server glob matches.
    fn flags(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<u8> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_flag_scratch(|scratch| self.inner.flags(&server, &tool, scratch)))
    }

    /// The static decision for one tool: 0 hidden, 1 visible, 2 a regex must decide.
    fn outcome(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<u8> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_flag_scratch(|scratch| self.inner.outcome(self.inner.flags(&server, &tool, scratch))) as u8)
    }

    /// A batch over a list of tools (objects with `server_id` and `name`).
    #[pyo3(signature = (tools, mode, judge=None, recheck=false, threads=None))]
    fn select_tools<'py>(
        &self,
        py: Python<'py>,
        tools: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        recheck: bool,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let select = Select::parse(mode)?;
        let server_id = intern!(py, "server_id");
        let name = intern!(py, "name");
        let layout = ToolLayout::get();
        let mut in_place = InPlace::new(tools);
        let outcomes = self.decide(tools.len(), threads, |block, reader, i| {
            let tools = &in_place.source;
            if let Some(layout) = layout {
                // Start loading a tool twice as far ahead, and the name of the
                // one a few items ahead (whose tool is loaded by now).
                if let Some(ahead) = list_item_ptr(tools, i + 2 * PREFETCH_AHEAD) {
                    prefetch_object(ahead);
                }
                if let Some(ahead) = list_item_ptr(tools, i + PREFETCH_AHEAD) {
                    layout.prefetch_name(ahead);
                }
                let tool = list_item(tools, i)?;
                if let Some((s, t)) = layout.fields(&tool) {
                    return reader.push(block, &s, &t);
                }
            }
            // Reading attributes may run Python code: from here on the batch
            // reads a private copy, and holds a reference to the tool.
            in_place.copy();
            let tool = in_place.source.get_item(i)?;
            let field = |attr: &Bound<'py, PyString>, what: &str| -> PyResult<Bound<'py, PyString>> {
                // Only a missing attribute means "not a tool"; anything else a
                // property raises (KeyboardInterrupt included) propagates as is.
                let value = tool.getattr(attr).map_err(|err| {
                    if err.is_instance_of::<PyAttributeError>(py) {
                        PyTypeError::new_err(format!(
                            "tools[{i}] is not a tool (an object with server_id and name): {}",
                            type_name(&tool)
                        ))
                    } else {
                        err
                    }
                })?;
                Ok(as_str(&value, || format!("tools[{i}].{what}"))?.clone())
            };
            let (s, t) = (field(server_id, "server_id")?, field(name, "name")?);
            reader.push(block, &s, &t)
        })?;
        answer(py, &outcomes, select, judge, recheck, in_place, |tools, i| Ok(Held::Tool(tools.get_item(i)?)))
    }

    /// A batch over a list of `(server_id, name)` tuples (read in place, as
    /// `select_tools`; reading a tuple runs no Python code). `judge` is called
    /// as `judge(server_id, name)`.
    #[pyo3(signature = (pairs, mode, judge=None, threads=None))]
    fn select_pairs<'py>(
        &self,
        py: Python<'py>,
        pairs: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let select = Select::parse(mode)?;
        let pair_at = |i: usize| -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
            let item = list_item(pairs, i)?;
            let pair = item
                .cast::<PyTuple>()
                .ok()
                .filter(|t| t.len() == 2)
                .ok_or_else(|| PyTypeError::new_err(format!("pairs[{i}] must be a (server_id, name) tuple")))?;
            Ok((pair.get_item(0)?, pair.get_item(1)?))
        };
        let in_place = InPlace::new(pairs);
        let outcomes = self.decide(pairs.len(), threads, |block, reader, i| {
            if let Some(ahead) = list_item_ptr(pairs, i + PREFETCH_AHEAD) {
                prefetch_object(ahead);
            }
            let (s, t) = pair_at(i)?;
            let s = as_str(&s, || format!("pairs[{i}][0]"))?;
            let t = as_str(&t, || format!("pairs[{i}][1]"))?;
            reader.push(block, s, t)
        })?;
        answer(py, &outcomes, select, judge, false, in_place, |_, i| {
            let (s, t) = pair_at(i)?;
            Ok(Held::Pair(s, t))
        })
    }

    /// A batch over two parallel lists of strings (read in place, as
    /// `select_tools`). `judge` is called as `judge(server_id, name)`.
    #[pyo3(signature = (server_ids, names, mode, judge=None, threads=None))]
    fn select_columns<'py>(
        &self,
        py: Python<'py>,
        server_ids: &Bound<'py, PyList>,
        names: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let select = Select::parse(mode)?;
        if server_ids.len() != names.len() {
            return Err(PyValueError::new_err(format!(
                "server_ids and names differ in length ({} and {})",
                server_ids.len(),
                names.len()
            )));
        }
        let in_place = InPlace::new(names);
        let outcomes = self.decide(names.len(), threads, |block, reader, i| {
            if let Some(ahead) = list_item_ptr(names, i + PREFETCH_AHEAD) {
                prefetch_object(ahead);
            }
            let (s, t) = (list_item(server_ids, i)?, list_item(names, i)?);
            let s = as_str(&s, || format!("server_ids[{i}]"))?;
            let t = as_str(&t, || format!("names[{i}]"))?;
            reader.push(block, s, t)
        })?;
        answer(py, &outcomes, select, judge, false, in_place, |_, i| {
            Ok(Held::Pair(server_ids.get_item(i)?, names.get_item(i)?))
        })
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fold_loose, m)?)?;
    m.add_function(wrap_pyfunction!(fold_lower, m)?)?;
    m.add_function(wrap_pyfunction!(glob_match, m)?)?;
    m.add_function(wrap_pyfunction!(server_glob_problem, m)?)?;
    m.add_class::<PyRuleSet>()?;
    m.add_class::<PySegmentGlob>()?;
    m.add_class::<PyStaticFilter>()?;
    m.add_class::<PyStaticBuild>()?;
    Ok(())
}

