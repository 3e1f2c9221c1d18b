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
use crate::filter::{block_len, threads_for, Ahead, Decider, Needs, Outcome, StaticFilter, BLOCK};

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


/// A block of a batch with its strings copied out of Python, so that a worker
/// thread can match it without the GIL: nothing borrowed from a Python object
/// is touched off the calling thread. Only what the filter reads is copied
/// ([`Needs`]): no name without a pattern that reads names, no server without
/// a rule that depends on the server.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    items: Vec<Item>,
    /// The block's server ids, each object's copied once (again when met
    /// after Python code ran: see [`Reader`]).
    servers: Vec<BlockServer>,
}

/// One item of a block.
#[derive(Clone, Copy)]
struct Item {
    /// The name as a range of the block's bytes (empty when no pattern reads it).
    name: (usize, usize),
    /// The item's place in the block's `servers` (0, unused, when no rule
    /// depends on the server).
    server: u32,
    /// The raw annotation hints (`crate::hints::raw`); 0 (all missing)
    /// unless the filter has annotation patterns.
    hints: u8,
}

/// One server id of a block.
#[derive(Clone, Copy)]
struct BlockServer {
    /// Its bytes, as a range of the block's bytes.
    bytes: (usize, usize),
    /// The batch-wide number of the object they were copied from (see
    /// [`Reader`]), or [`UNNUMBERED`].
    number: u32,
}

/// The number of a server id that has none: a worker resolves it by its
/// bytes in every block it comes in.
const UNNUMBERED: u32 = u32::MAX;

/// The most numbers a batch gives: a worker's table of plans by number
/// ([`Worker::by_number`]) stays within 4 MB whatever the batch's size.
/// Server id objects met after that many are left unnumbered.
const MAX_NUMBERS: u32 = 1 << 20;

impl Block {
    /// A block sized for `BLOCK` items of short names: filling it allocates
    /// nothing, and blocks are recycled, so a batch does not fault in fresh
    /// pages for every block.
    fn with_capacity(needs: Needs) -> Self {
        let bytes = if needs.name { BLOCK * 32 } else { 0 };
        Block { bytes: Vec::with_capacity(bytes), items: Vec::with_capacity(BLOCK), servers: Vec::new() }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.servers.clear();
    }

    fn copy(&mut self, bytes: &[u8]) -> (usize, usize) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        (start, self.bytes.len())
    }

    fn new_server(&mut self, bytes: &[u8], number: u32) -> u32 {
        let bytes = self.copy(bytes);
        self.servers.push(BlockServer { bytes, number });
        self.servers.len() as u32 - 1
    }
}

/// Blocks that have been matched, kept for the next ones to be read into.
type Spares = Mutex<Vec<Block>>;

fn spare_block(spares: &Spares, needs: Needs) -> Block {
    let mut block = spares.lock().ok().and_then(|mut s| s.pop()).unwrap_or_else(|| Block::with_capacity(needs));
    block.clear();
    block
}

/// One slot of [`Reader::known`]: a server id object met, or a free slot
/// (one of an earlier epoch; zeroed: never taken).
#[derive(Clone, Copy, Default)]
struct Known {
    address: usize,
    /// Its batch-wide number.
    number: u32,
    /// The generation in which it was last copied into a block (see
    /// [`Reader::generation`]) above [`SLOT_BITS`] bits of its place in that
    /// block's `servers`.
    copied: u32,
}

/// Bits of a block's server slot in [`Known::copied`].
const SLOT_BITS: u32 = 13;
const _: () = assert!(BLOCK <= 1 << SLOT_BITS, "a block's every server slot fits its bits");
/// The last generation: the one after it forgets every object met (any
/// value below `1 << (32 - SLOT_BITS)` fits [`Known::copied`]). Small, so
/// that the start over is taken often (every 64 blocks, half a million
/// tools, or 64 epochs: a batch's tests reach it) and cheap (a table of at
/// most 2 MB zeroed; the objects met again are numbered again).
const LAST_GENERATION: u32 = 64;

/// Slots of [`Reader::known`] at first, for a batch of this many items or more.
const KNOWN_FIRST: usize = 1 << 13;
/// Most slots of [`Reader::known`] (2 MB): a table three quarters full at
/// this size ends the epoch, which forgets every object met.
const KNOWN_MAX: usize = 1 << 17;

/// Copies items into blocks, as much of each as the filter needs, and
/// numbers the server id objects.
///
/// A catalog repeats one server id object per server, so each distinct
/// object met gets a number for the whole batch, by which a worker finds the
/// server's plan again with one load, whichever block it comes in (see
/// [`Worker`]). Its bytes are still copied into every block it comes in
/// (once a block), for the workers read nothing but copied bytes. The
/// previous item's object is checked first (catalogs usually come grouped by
/// server), then an open-addressed table of the objects met (for blocks that
/// hold thousands of servers, interleaved).
///
/// An address is only compared while it is known to be that object: within
/// one epoch, which ends whenever Python code has run (`Quiet::runs`), and
/// when the table is full (a hundred thousand distinct objects: memory stays
/// flat in the batch's size). No Python code ran since the object was met,
/// so it is still held where it was met (only Python code changes a list, a
/// tuple or a tool's slots: see `crate::python::inplace`), alive, and no
/// other object can have its address; a `str` never changes, so its bytes
/// are the ones its number was given for. A new epoch forgets every object:
/// one met again gets a new number. Two numbers for equal bytes (an object
/// met again after Python code ran, two equal ids in distinct objects) are
/// one server to the matcher, which resolves servers by their bytes.
struct Reader {
    needs: Needs,
    /// `Quiet::runs` when the epoch began.
    runs: u64,
    /// A count that moves on with every block and every epoch: a slot
    /// stamped before `epoch` is free, one stamped from `block` on was
    /// copied into the block being read.
    generation: u32,
    epoch: u32,
    block: u32,
    /// The next number to give.
    next_number: u32,
    /// The previous item's server id object and its slot in the block
    /// (address 0, none, after a new block or epoch).
    last: (usize, u32),
    /// The objects met in the epoch, by address (linear probing): a power
    /// of two long, at most three quarters of it taken.
    known: Vec<Known>,
    /// Slots of `known` of the current epoch.
    taken: usize,
}

impl Reader {
    fn new(needs: Needs, n: usize) -> Self {
        let size = if needs.server { n.clamp(16, KNOWN_FIRST).next_power_of_two() } else { 0 };
        Reader {
            needs,
            runs: 0,
            generation: 1,
            epoch: 1,
            block: 1,
            next_number: 0,
            last: (0, 0),
            known: vec![Known::default(); size],
            taken: 0,
        }
    }

    /// A new block: every object met is copied into it again on first sight.
    fn start_block(&mut self) {
        self.next_generation();
        self.block = self.generation;
        self.last = (0, 0);
    }

    /// Forgets every object met.
    fn new_epoch(&mut self) {
        self.next_generation();
        self.epoch = self.generation;
        self.taken = 0;
        self.last = (0, 0);
    }

    fn next_generation(&mut self) {
        if self.generation == LAST_GENERATION {
            // 64 blocks or epochs: free every slot, and start over.
            self.known.fill(Known::default());
            (self.generation, self.epoch, self.block, self.taken) = (1, 1, 1, 0);
        }
        self.generation += 1;
    }

    /// Where `address` is in `known`, or would go: a slot of the epoch that
    /// holds it, or a free one.
    #[inline]
    fn probe(&self, address: usize) -> usize {
        // Fibonacci hashing: objects lie 16 bytes apart or more, often a
        // size class apart, so their low bits say little.
        let mask = self.known.len() - 1;
        let mut at = ((address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        loop {
            let known = &self.known[at];
            if known.copied >> SLOT_BITS < self.epoch || known.address == address {
                return at;
            }
            at = (at + 1) & mask;
        }
    }

    /// The block slot of a borrowed server id, copying it on first sight in
    /// the block, and numbering it on first sight in the epoch.
    #[inline]
    fn server_slot<'py>(
        &mut self,
        quiet: &Quiet<'py>,
        block: &mut Block,
        server: Borrowed<'_, 'py, PyString>,
    ) -> PyResult<u32> {
        if quiet.runs() != self.runs {
            self.runs = quiet.runs();
            self.new_epoch();
        }
        let address = server.as_ptr() as usize;
        if self.last.0 == address {
            return Ok(self.last.1);
        }
        let at = self.probe(address);
        let known = self.known[at];
        let generation = known.copied >> SLOT_BITS;
        // The epoch first: a slot stamped in this block before Python code
        // ran is another object's, whose address this one may have now.
        let slot = if generation < self.epoch {
            self.first_sight(quiet, block, server, at)?
        } else if generation >= self.block {
            known.copied & ((1 << SLOT_BITS) - 1)
        } else {
            let slot = block.new_server(&quiet.str_bytes(server)?, known.number);
            self.known[at].copied = self.generation << SLOT_BITS | slot;
            slot
        };
        self.last = (address, slot);
        Ok(slot)
    }

    /// [`server_slot`](Self::server_slot) of an object not met in the epoch,
    /// whose place in `known` is the free slot `at`.
    fn first_sight<'py>(
        &mut self,
        quiet: &Quiet<'py>,
        block: &mut Block,
        server: Borrowed<'_, 'py, PyString>,
        at: usize,
    ) -> PyResult<u32> {
        let number = if self.next_number < MAX_NUMBERS {
            self.next_number += 1;
            self.next_number - 1
        } else {
            UNNUMBERED
        };
        let slot = block.new_server(&quiet.str_bytes(server)?, number);
        let address = server.as_ptr() as usize;
        self.remember(at, Known { address, number, copied: self.generation << SLOT_BITS | slot });
        Ok(slot)
    }

    /// Takes the free slot `at` of `known` (where `known.address` probes
    /// to), keeping the table at most three quarters full.
    fn remember(&mut self, at: usize, known: Known) {
        self.known[at] = known;
        self.taken += 1;
        if 4 * self.taken > 3 * self.known.len() {
            self.make_room();
        }
    }

    #[cold]
    fn make_room(&mut self) {
        if self.known.len() >= KNOWN_MAX {
            self.new_epoch();
            return;
        }
        let size = 2 * self.known.len();
        let old = std::mem::replace(&mut self.known, vec![Known::default(); size]);
        for known in old.into_iter().filter(|k| k.copied >> SLOT_BITS >= self.epoch) {
            let at = self.probe(known.address);
            self.known[at] = known;
        }
    }

    /// Copies a borrowed server id and name: no Python code runs between the
    /// borrow and the copy (nothing here drops or calls anything).
    #[inline]
    fn push_borrowed<'py>(
        &mut self,
        quiet: &Quiet<'py>,
        block: &mut Block,
        server: Borrowed<'_, 'py, PyString>,
        name: Borrowed<'_, 'py, PyString>,
        hints: u8,
    ) -> PyResult<()> {
        let server = if self.needs.server { self.server_slot(quiet, block, server)? } else { 0 };
        let name = if self.needs.name { block.copy(&quiet.str_bytes(name)?) } else { (0, 0) };
        block.items.push(Item { name, server, hints });
        Ok(())
    }

    /// Copies a server id and name the caller holds (and drops after, as
    /// Python code: the next item starts a new epoch). The server id is left
    /// unnumbered: its object is not met again in this epoch.
    fn push_owned(
        &mut self,
        block: &mut Block,
        server: &Bound<'_, PyString>,
        name: &Bound<'_, PyString>,
        hints: u8,
    ) -> PyResult<()> {
        let server = if self.needs.server { block.new_server(&string_bytes(server)?, UNNUMBERED) } else { 0 };
        let name = if self.needs.name { block.copy(&string_bytes(name)?) } else { (0, 0) };
        block.items.push(Item { name, server, hints });
        Ok(())
    }
}

/// Not yet resolved, in [`Worker::by_number`].
const NO_PLAN: u32 = u32::MAX;

/// One thread's matcher: its [`Decider`] lives for the whole batch, so each
/// distinct server is resolved at most once per thread. A block's server is
/// found by its number ([`Reader`]): only a number the thread has not met
/// yet is looked up by its bytes (a hash and a comparison); one met costs a
/// load, whichever block it comes in.
struct Worker<'f> {
    decider: Decider<'f>,
    /// The plan of each batch number met ([`NO_PLAN`]: not met yet).
    by_number: Vec<u32>,
    /// The plan and bytes of each of the current block's servers.
    plans: Vec<(u32, (usize, usize))>,
}

impl<'f> Worker<'f> {
    fn new(filter: &'f StaticFilter) -> Self {
        Worker { decider: Decider::new(filter), by_number: Vec::new(), plans: Vec::new() }
    }

    /// The plan and bytes of each of `block`'s servers into `plans`. Out of
    /// line: [`run`](Self::run)'s loop, into which the matching is inlined,
    /// then compiles to fewer instructions a tool (callgrind's count).
    #[inline(never)]
    fn plan_block(&mut self, block: &Block) {
        let Worker { decider, by_number, plans } = self;
        plans.clear();
        plans.extend(block.servers.iter().map(|&BlockServer { bytes: (a, b), number }| {
            // Unnumbered is past the end: resolved by its bytes, not kept.
            let plan = match by_number.get(number as usize) {
                Some(&plan) if plan != NO_PLAN => plan,
                _ => {
                    let plan = decider.plan_for(&block.bytes[a..b]);
                    if number != UNNUMBERED {
                        let number = number as usize;
                        if number >= by_number.len() {
                            by_number.resize((number + 1).next_power_of_two(), NO_PLAN);
                        }
                        by_number[number] = plan;
                    }
                    plan
                }
            };
            (plan, (a, b))
        }));
    }

    /// Matches one block into `out` (as long as the block). Touches no
    /// Python object.
    fn run(&mut self, block: &Block, out: &mut [Outcome]) {
        self.plan_block(block);
        let Block { bytes, items, .. } = block;
        let name = |i: usize| items.get(i).map(|item| &bytes[item.name.0..item.name.1]);
        let mut ahead = Ahead::default();
        for k in 0..crate::memo::AHEAD {
            if let Some(name) = name(k) {
                ahead.fetch(&self.decider, k, name);
            }
        }
        for (i, (item, slot)) in items.iter().zip(out).enumerate() {
            if let Some(next) = name(i + crate::memo::AHEAD) {
                ahead.fetch(&self.decider, i + crate::memo::AHEAD, next);
            }
            let (server, plan) = match self.plans.get(item.server as usize) {
                Some(&(plan, (a, b))) => (&bytes[a..b], plan),
                None => (&[][..], 0),
            };
            *slot = self.decider.decide_planned_hashed(plan, server, &bytes[item.name.0..item.name.1], item.hints, ahead.hash(i));
        }
    }
}

/// A block read, and where its outcomes go.
type Work<'o> = (Block, &'o mut [Outcome]);

/// Matches queued blocks until the queue is closed and empty.
fn match_blocks(worker: &mut Worker<'_>, queue: &Mutex<Receiver<Work<'_>>>, spares: &Spares) {
    loop {
        let next = queue.lock().map(|rx| rx.recv());
        let Ok(Ok((block, out))) = next else { return };
        worker.run(&block, out);
        if let Ok(mut spares) = spares.lock() {
            spares.push(block);
        }
    }
}

/// Decides `n` items in blocks: `read(quiet, block, reader, i)` copies item `i`.
///
/// A filter whose answer depends on nothing of a tool still reads (checks)
/// every item, but copies nothing and matches nothing. Otherwise, with one
/// thread, each block is matched right after it is read. With more, the
/// calling thread reads (it alone may touch Python) and hands blocks to
/// worker threads, which match them without the GIL; when the workers are
/// behind (the bounded queue is full) it matches the block it just read
/// itself instead of waiting, so reading and matching share the cores
/// whichever is the slower. When reading is done it matches alongside the
/// workers. At most a few blocks are in flight, so memory stays flat in the
/// batch size; each block's outcomes go straight to their place in the answer.
fn decide<'py>(
    filter: &StaticFilter,
    quiet: &mut Quiet<'py>,
    n: usize,
    threads: Option<usize>,
    mut read: impl FnMut(&mut Quiet<'py>, &mut Block, &mut Reader, usize) -> PyResult<()>,
) -> PyResult<Vec<Outcome>> {
    let needs = filter.needs();
    let mut reader = Reader::new(needs, n);
    if let Some(outcome) = filter.constant_outcome() {
        let mut block = Block::with_capacity(needs);
        for start in (0..n).step_by(BLOCK) {
            block.clear();
            reader.start_block();
            for i in start..n.min(start + BLOCK) {
                read(quiet, &mut block, &mut reader, i)?;
            }
        }
        return Ok(vec![outcome; n]);
    }
    let threads = threads_for(n, threads);
    let len = block_len(n, threads);
    let spares: Spares = Mutex::new(Vec::new());
    let mut read_block = |start: usize| -> PyResult<Block> {
        let mut block = spare_block(&spares, needs);
        reader.start_block();
        for i in start..n.min(start + len) {
            read(quiet, &mut block, &mut reader, i)?;
        }
        Ok(block)
    };
    let mut out = vec![Outcome::Hidden; n];
    let mut worker = Worker::new(filter);
    if threads == 1 || n <= len {
        for (number, chunk) in out.chunks_mut(len).enumerate() {
            let block = read_block(number * len)?;
            worker.run(&block, chunk);
            if let Ok(mut spares) = spares.lock() {
                spares.push(block);
            }
        }
        return Ok(out);
    }
    // No more workers than blocks: the others would only wait.
    let threads = threads.min(n.div_ceil(len));
    let (sender, receiver) = sync_channel::<Work<'_>>(2 * threads);
    let queue = Mutex::new(receiver);
    let read_result = std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| match_blocks(&mut Worker::new(filter), &queue, &spares));
        }
        let mut result = Ok(());
        for (number, chunk) in out.chunks_mut(len).enumerate() {
            match read_block(number * len) {
                Ok(block) => match sender.try_send((block, chunk)) {
                    Ok(()) => {}
                    Err(TrySendError::Full((block, chunk))) => {
                        worker.run(&block, chunk);
                        if let Ok(mut spares) = spares.lock() {
                            spares.push(block);
                        }
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
        match_blocks(&mut worker, &queue, &spares);
        result
    });
    // The queue borrows the answer's chunks (all matched by now).
    drop(queue);
    read_result?;
    Ok(out)
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
    if !recheck && !outcomes.contains(&Outcome::Undecided) {
        return answer_decided(py, quiet, outcomes, select, hold);
    }
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

/// [`answer`] when the core decided every item and nothing is rechecked: no
/// Python code is called, and the answer list is made at its size in one go.
fn answer_decided<'py>(
    py: Python<'py>,
    quiet: Quiet<'py>,
    outcomes: &[Outcome],
    select: Select,
    mut hold: impl FnMut(usize) -> PyResult<Held<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let visible = || (0..outcomes.len()).filter(|&i| outcomes[i] == Outcome::Visible);
    match select {
        Select::Mask => {
            drop(quiet);
            PyList::new(py, outcomes.iter().map(|&o| o == Outcome::Visible))
        }
        Select::Indices => {
            drop(quiet);
            PyList::new(py, visible().collect::<Vec<_>>())
        }
        Select::Items => {
            // Taken while still quiet, with the input as it was read.
            let mut kept = Vec::new();
            for i in visible() {
                match hold(i)? {
                    Held::Tool(tool) => kept.push(tool),
                    Held::Pair(..) => return Err(PyValueError::new_err("mode 'items' needs a list of tools")),
                }
            }
            drop(quiet);
            PyList::new(py, kept)
        }
    }
}
