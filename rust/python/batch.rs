//! Batches: a list of tools (or pairs, or two columns of strings) read into
//! blocks of bytes, matched by the core on one or more threads, and answered
//! as a list.
//!
//! The calling thread holds the GIL from the first item read to the last
//! object taken for the answer, with the collector paused ([`Quiet`]), and
//! reads the caller's list in place (`crate::python::inplace` says why that
//! is safe). Worker threads only ever see the copied bytes. A tool that is not
//! an exact `Tool` is read through its attributes, which runs Python code:
//! before the first such read the batch switches to a snapshot of the list,
//! taken while the list is still as it was given, and no borrow is held
//! across that code. Callbacks (the judges) run only after the answer has
//! taken a reference of its own to every object it needs.

use std::sync::mpsc::{sync_channel, Receiver, TrySendError};
use std::sync::Mutex;

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyList, PyString, PyTuple};

use super::{as_str, type_name};
use super::inplace::{prefetch_object, string_bytes, tuple_item, Quiet, ToolLayout};
use crate::filter::{Outcome, StaticFilter};

/// Tools per block: the unit a batch reads, hands to a worker and matches.
const BLOCK: usize = 1 << 13;
/// Batches smaller than this are matched on the calling thread alone.
const PARALLEL_MIN: usize = 1 << 14;
/// At most this many threads work on one batch, whatever `threads` asks for:
/// each is an OS thread, and a request for 2**40 must not exhaust the machine.
const MAX_THREADS: usize = 64;
/// How many items ahead of the one being read a batch prefetches a tool's name.
const PREFETCH_AHEAD: usize = 16;

/// What a batch returns.
#[derive(Clone, Copy)]
pub(super) enum Select {
    /// The kept items themselves.
    Items,
    /// One bool per item.
    Mask,
    /// The indices of the kept items.
    Indices,
}

impl Select {
    pub(super) fn parse(mode: &str) -> PyResult<Self> {
        match mode {
            "items" => Ok(Select::Items),
            "mask" => Ok(Select::Mask),
            "indices" => Ok(Select::Indices),
            other => Err(PyValueError::new_err(format!("mode must be 'items', 'mask' or 'indices', not {other:?}"))),
        }
    }
}

/// The `threads` argument: None (every core, for a big batch) or an int from
/// 1 to `sys.maxsize`; the reference checks it with the same words.
pub(super) fn threads_arg(threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(threads) = threads.filter(|t| !t.is_none()) else { return Ok(None) };
    if threads.is_instance_of::<PyBool>() || !threads.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("threads must be None or an int, not {}", type_name(threads))));
    }
    match threads.extract::<isize>() {
        Ok(wanted) if wanted >= 1 => Ok(Some(wanted as usize)),
        _ => Err(PyValueError::new_err(format!(
            "threads must be None (every core) or an int from 1 to sys.maxsize, not {}",
            threads.repr()?
        ))),
    }
}

fn threads_for(n: usize, threads: Option<usize>) -> usize {
    let wanted = match threads {
        Some(t) => t,
        None if n < PARALLEL_MIN => 1,
        None => std::thread::available_parallelism().map_or(1, |p| p.get()),
    };
    wanted.clamp(1, MAX_THREADS)
}

/// A block of a batch with its strings copied out of Python, so that a worker
/// thread can match it without the GIL: nothing borrowed from a Python object
/// is touched off the calling thread.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    /// Byte ranges of each item's server id and name in `bytes`.
    spans: Vec<(usize, usize, usize, usize)>,
    /// Each item's raw annotation hints (`crate::hints::raw`); 0 (all
    /// missing) unless the filter has annotation patterns.
    hints: Vec<u8>,
}

impl Block {
    /// A block sized for `BLOCK` items of short names: filling it allocates
    /// nothing, and blocks are recycled, so a batch does not fault in fresh
    /// pages for every block.
    fn with_capacity() -> Self {
        Block { bytes: Vec::with_capacity(BLOCK * 32), spans: Vec::with_capacity(BLOCK), hints: Vec::with_capacity(BLOCK) }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
        self.hints.clear();
    }

    fn copy(&mut self, bytes: &[u8]) -> (usize, usize) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        (start, self.bytes.len())
    }

    fn items(&self) -> impl Iterator<Item = (&[u8], &[u8], u8)> + '_ {
        self.spans.iter().zip(&self.hints).map(|(&(a, b, c, d), &hints)| (&self.bytes[a..b], &self.bytes[c..d], hints))
    }
}

/// Blocks that have been matched, kept for the next ones to be read into.
type Spares = Mutex<Vec<Block>>;

fn spare_block(spares: &Spares) -> Block {
    let mut block = spares.lock().ok().and_then(|mut s| s.pop()).unwrap_or_else(Block::with_capacity);
    block.clear();
    block
}

/// Copies items into one block. A catalog repeats one server id object per
/// server, so the bytes of the previous item's server id are reused when its
/// object comes again. An address is only compared while it is known to be
/// that object: while no Python code has run since it was seen (nothing was
/// freed, so nothing new can have its address).
struct Reader {
    last: Option<(*mut pyo3::ffi::PyObject, u64, (usize, usize))>,
}

impl Reader {
    /// Copies a borrowed server id and name: no Python code runs between the
    /// borrow and the copy (nothing here drops or calls anything).
    fn push_borrowed<'py>(
        &mut self,
        quiet: &Quiet<'py>,
        block: &mut Block,
        server: Borrowed<'_, 'py, PyString>,
        name: Borrowed<'_, 'py, PyString>,
        hints: u8,
    ) -> PyResult<()> {
        let server_span = match self.last {
            Some((ptr, runs, span)) if ptr == server.as_ptr() && runs == quiet.runs() => span,
            _ => {
                let span = block.copy(&quiet.str_bytes(server)?);
                self.last = Some((server.as_ptr(), quiet.runs(), span));
                span
            }
        };
        let name_span = block.copy(&quiet.str_bytes(name)?);
        block.spans.push((server_span.0, server_span.1, name_span.0, name_span.1));
        block.hints.push(hints);
        Ok(())
    }

    /// Copies a server id and name the caller holds.
    fn push_owned(
        &mut self,
        block: &mut Block,
        server: &Bound<'_, PyString>,
        name: &Bound<'_, PyString>,
        hints: u8,
    ) -> PyResult<()> {
        let server_span = block.copy(&string_bytes(server)?);
        let name_span = block.copy(&string_bytes(name)?);
        block.spans.push((server_span.0, server_span.1, name_span.0, name_span.1));
        block.hints.push(hints);
        // The caller drops these objects (inside a `Quiet::run`): their
        // addresses are not to be compared with later ones.
        self.last = None;
        Ok(())
    }
}

/// Matches one block and stores its outcomes under its number. Touches no
/// Python object.
fn match_block(filter: &StaticFilter, number: usize, block: Block, done: &Mutex<Vec<Vec<Outcome>>>, spares: &Spares) {
    let mut outcomes = Vec::with_capacity(block.spans.len());
    filter.outcomes_with_hints_into(block.items(), &mut outcomes);
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

/// Decides `n` items in blocks: `read(quiet, block, reader, i)` copies item `i`.
///
/// With one thread, each block is matched right after it is read. With more,
/// the calling thread reads (it alone may touch Python) and hands blocks to
/// worker threads, which match them without the GIL; when the workers are
/// behind (the bounded queue is full) it matches the block it just read
/// itself instead of waiting, so reading and matching share the cores
/// whichever is the slower. When reading is done it matches alongside the
/// workers. At most a few blocks are in flight, so memory stays flat in the
/// batch size.
fn decide<'py>(
    filter: &StaticFilter,
    quiet: &mut Quiet<'py>,
    n: usize,
    threads: Option<usize>,
    mut read: impl FnMut(&mut Quiet<'py>, &mut Block, &mut Reader, usize) -> PyResult<()>,
) -> PyResult<Vec<Outcome>> {
    let threads = threads_for(n, threads);
    let spares: Spares = Mutex::new(Vec::new());
    let mut read_block = |start: usize| -> PyResult<Block> {
        let mut block = spare_block(&spares);
        // Spans point into this block only.
        let mut reader = Reader { last: None };
        for i in start..n.min(start + BLOCK) {
            read(quiet, &mut block, &mut reader, i)?;
        }
        Ok(block)
    };
    if threads == 1 || n <= BLOCK {
        let mut out = Vec::with_capacity(n);
        for start in (0..n).step_by(BLOCK) {
            let block = read_block(start)?;
            filter.outcomes_with_hints_into(block.items(), &mut out);
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
            scope.spawn(|| match_blocks(filter, &queue, &done, &spares));
        }
        let mut result = Ok(());
        for number in 0..blocks {
            match read_block(number * BLOCK) {
                Ok(block) => match sender.try_send((number, block)) {
                    Ok(()) => {}
                    Err(TrySendError::Full((number, block))) => match_block(filter, number, block, &done, &spares),
                    Err(TrySendError::Disconnected(_)) => break,
                },
                Err(err) => {
                    result = Err(err);
                    break;
                }
            }
        }
        drop(sender);
        match_blocks(filter, &queue, &done, &spares);
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

/// Where a tool batch reads its items: the caller's list while no Python code
/// has run, then a snapshot of it taken before the first code that may.
enum Source<'py> {
    Given(Bound<'py, PyList>),
    Snapshot(Bound<'py, PyTuple>),
}

impl<'py> Source<'py> {
    /// Item `i`, borrowed for as long as `quiet` is.
    fn borrowed<'q>(&'q self, quiet: &'q Quiet<'py>, i: usize) -> Option<Borrowed<'q, 'py, PyAny>> {
        match self {
            Source::Given(list) => quiet.list_item(list, i),
            Source::Snapshot(tuple) => tuple_item(tuple, i),
        }
    }

    /// Item `i`, with a reference of its own.
    fn owned(&self, i: usize) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Source::Given(list) => list.get_item(i),
            Source::Snapshot(tuple) => tuple.get_item(i),
        }
    }

    /// From now on, read a snapshot of the list as it is now. Runs no Python
    /// code (an allocation, with the collector paused by the caller's quiet).
    fn snapshot(&mut self) {
        if let Source::Given(list) = self {
            *self = Source::Snapshot(list.to_tuple());
        }
    }
}

/// A tool's `server_id` and `name` read through their attributes, and its
/// raw hints from `hints_of(tool)` when the filter needs them (Python code).
fn tool_attrs<'py>(
    tool: &Bound<'py, PyAny>,
    i: usize,
    hints_of: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyString>, Bound<'py, PyString>, u8)> {
    let py = tool.py();
    let field = |attr: &str| -> PyResult<Bound<'py, PyString>> {
        // Only a missing attribute (an unset slot too) means "not a tool";
        // anything else a property raises (KeyboardInterrupt included)
        // propagates as it is.
        let value = tool.getattr(attr).map_err(|err| {
            if err.is_instance_of::<PyAttributeError>(py) {
                PyTypeError::new_err(format!(
                    "tools[{i}]: expected a Tool (an object with server_id and name), got {}",
                    type_name(tool)
                ))
            } else {
                err
            }
        })?;
        Ok(as_str(&value, || format!("tools[{i}].{attr}"))?.clone())
    };
    let (server, name) = (field("server_id")?, field("name")?);
    let hints = match hints_of {
        Some(hints_of) => hints_of.call1((tool,))?.extract::<u8>()?,
        None => 0,
    };
    Ok((server, name, hints))
}

/// A batch over a list of tools (objects with `server_id` and `name`).
/// `hints_of(tool)` gives the raw hints of a tool that is not an exact
/// `Tool`, when the filter has annotation patterns.
#[allow(clippy::too_many_arguments)]
pub(super) fn select_tools<'py>(
    filter: &StaticFilter,
    tools: &Bound<'py, PyList>,
    select: Select,
    judge: Option<&Bound<'py, PyAny>>,
    recheck: bool,
    threads: Option<usize>,
    hints_of: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let py = tools.py();
    let layout = ToolLayout::get();
    let uses_hints = filter.uses_hints();
    if uses_hints && hints_of.is_none() {
        return Err(PyValueError::new_err("a filter with annotation patterns needs hints_of"));
    }
    let hints_of = hints_of.filter(|_| uses_hints);
    let n = tools.len();
    let mut source = Source::Given(tools.clone());
    let mut quiet = Quiet::new(py);
    let outcomes = decide(filter, &mut quiet, n, threads, |quiet, block, reader, i| {
        if let Some(layout) = layout {
            // Start loading a tool twice as far ahead, and the name of the
            // one a few items ahead (whose tool is loaded by now).
            if let Some(ahead) = source.borrowed(quiet, i + 2 * PREFETCH_AHEAD) {
                prefetch_object(ahead.as_ptr());
            }
            if let Some(ahead) = source.borrowed(quiet, i + PREFETCH_AHEAD) {
                quiet.prefetch_tool_name(layout, ahead);
            }
            let tool = source.borrowed(quiet, i).ok_or_else(|| item_missing(i))?;
            if let Some((server, name)) = quiet.tool_fields(layout, tool) {
                let hints = if uses_hints { quiet.tool_hints(layout, tool) } else { Some(0) };
                if let Some(hints) = hints {
                    return reader.push_borrowed(quiet, block, server, name, hints);
                }
            }
        }
        // Reading attributes runs Python code: the snapshot first (the list
        // still as given), and nothing borrowed across the code.
        source.snapshot();
        let tool = source.owned(i)?;
        let fields = quiet.run(|_| tool_attrs(&tool, i, hints_of));
        let read = match fields {
            Ok((server, name, hints)) => {
                let copied = reader.push_owned(block, &server, &name, hints);
                // Strings a property made may have no other holder: their
                // decref may run a finalizer, so it is dropped as Python code.
                quiet.run(|_| drop((server, name)));
                copied
            }
            Err(err) => Err(err),
        };
        quiet.run(|_| drop(tool));
        read
    })?;
    answer(py, quiet, &outcomes, select, judge, recheck, |i| Ok(Held::Tool(source.owned(i)?)))
}

fn item_missing(i: usize) -> PyErr {
    // Unreachable: no Python code runs between reading the length and the
    // item while the list is read in place, and a snapshot has that length.
    PyValueError::new_err(format!("item {i} of the batch is gone; no answer for this batch"))
}

/// A batch over a list of `(server_id, name)` tuples (read in place; reading
/// a tuple runs no Python code). `judge` is called as `judge(server_id, name)`.
pub(super) fn select_pairs<'py>(
    filter: &StaticFilter,
    pairs: &Bound<'py, PyList>,
    select: Select,
    judge: Option<&Bound<'py, PyAny>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let py = pairs.py();
    let not_a_pair = |i: usize| PyTypeError::new_err(format!("pairs[{i}] must be a (server_id, name) tuple"));
    let mut quiet = Quiet::new(py);
    let outcomes = decide(filter, &mut quiet, pairs.len(), threads, |quiet, block, reader, i| {
        if let Some(ahead) = quiet.list_item(pairs, i + PREFETCH_AHEAD) {
            prefetch_object(ahead.as_ptr());
        }
        let item = quiet.list_item(pairs, i).ok_or_else(|| item_missing(i))?;
        // A tuple subclass too: its items are read from the tuple's own storage.
        let pair = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or_else(|| not_a_pair(i))?;
        let (server, name) = (pair.get_borrowed_item(0)?, pair.get_borrowed_item(1)?);
        let server = as_str(&server, || format!("pairs[{i}][0]"))?.as_borrowed();
        let name = as_str(&name, || format!("pairs[{i}][1]"))?.as_borrowed();
        reader.push_borrowed(quiet, block, server, name, 0)
    })?;
    answer(py, quiet, &outcomes, select, judge, false, |i| {
        let pair = pairs.get_item(i)?.cast_into::<PyTuple>()?;
        Ok(Held::Pair(pair.get_item(0)?, pair.get_item(1)?))
    })
}

/// A batch over two parallel lists of strings (read in place). `judge` is
/// called as `judge(server_id, name)`.
pub(super) fn select_columns<'py>(
    filter: &StaticFilter,
    server_ids: &Bound<'py, PyList>,
    names: &Bound<'py, PyList>,
    select: Select,
    judge: Option<&Bound<'py, PyAny>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let py = names.py();
    if server_ids.len() != names.len() {
        return Err(PyValueError::new_err(format!(
            "server_ids and names differ in length ({} and {})",
            server_ids.len(),
            names.len()
        )));
    }
    let mut quiet = Quiet::new(py);
    let outcomes = decide(filter, &mut quiet, names.len(), threads, |quiet, block, reader, i| {
        if let Some(ahead) = quiet.list_item(names, i + PREFETCH_AHEAD) {
            prefetch_object(ahead.as_ptr());
        }
        let server = quiet.list_item(server_ids, i).ok_or_else(|| item_missing(i))?;
        let name = quiet.list_item(names, i).ok_or_else(|| item_missing(i))?;
        let server = as_str(&server, || format!("server_ids[{i}]"))?.as_borrowed();
        let name = as_str(&name, || format!("names[{i}]"))?.as_borrowed();
        reader.push_borrowed(quiet, block, server, name, 0)
    })?;
    answer(py, quiet, &outcomes, select, judge, false, |i| {
        Ok(Held::Pair(server_ids.get_item(i)?, names.get_item(i)?))
    })
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
/// First, still quiet and with the input as it was read, every item the
/// answer needs is taken with a reference of its own (`hold(i)`, which runs
/// no Python code: increfs only); only then does the quiet stretch end and
/// Python run.
fn answer<'py>(
    py: Python<'py>,
    quiet: Quiet<'py>,
    outcomes: &[Outcome],
    select: Select,
    judge: Option<&Bound<'py, PyAny>>,
    recheck: bool,
    mut hold: impl FnMut(usize) -> PyResult<Held<'py>>,
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
            held.push(hold(i)?);
        }
    }
    drop(quiet);
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
