//! Columnar batches: the static decision over two Arrow string columns
//! (server ids and names), read in place from their buffers.
//!
//! A column is a list of chunks, each a UTF-8 string array of any of the
//! three layouts (`Utf8`, `LargeUtf8`, `Utf8View`), dictionary-encoded
//! (integer keys into a dictionary of one of them) or run-end-encoded (runs
//! of values of one of them); the two columns may be chunked differently. A row whose server id or name is null is hidden.
//!
//! The arrays come checked by `crate::arrow_import` (offsets in order, views
//! inside their buffers' listed sizes, null counts that agree with the
//! bitmaps), whose trust boundary holds here: the extents the C structures
//! imply are trusted, as any pointer is. Within them, offsets and views are
//! read with checked slicing still (a malformed one is an [`ArrowIssue`]),
//! and every non-null value is checked to be UTF-8, as Arrow's strings must be. So a column's bytes are exactly the UTF-8 of the strings
//! they stand for, and the core compares them as it compares a Python
//! string's. Annotation patterns see no hints here (every hint missing), as
//! in the pair batches.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use arrow_array::array::{
    Array, ArrayRef, DictionaryArray, GenericStringArray, OffsetSizeTrait, RunArray, StringViewArray,
};
use arrow_array::types::{
    ArrowDictionaryKeyType, RunEndIndexType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use crate::arrow_import::keys_below;
use crate::filter::{block_len, threads_for, Ahead, Decider, Outcome, StaticFilter};
use crate::memo::{with_shared, ListAnswers};

/// Which column an issue is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    ServerIds,
    Names,
}

impl Column {
    pub fn name(self) -> &'static str {
        match self {
            Column::ServerIds => "server_ids",
            Column::Names => "names",
        }
    }
}

/// Why a pair of columns could not be decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrowIssue {
    /// A chunk is not a string array (its type, as Arrow writes it).
    NotStrings(Column, String),
    /// The columns differ in length.
    Lengths(usize, usize),
    /// Row `.1`'s offsets or view point outside the buffers.
    Malformed(Column, usize),
    /// Row `.1` is not UTF-8.
    NotUtf8(Column, usize),
}

impl std::fmt::Display for ArrowIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArrowIssue::NotStrings(column, kind) => write!(
                f,
                "{} must be an Arrow string array (utf8, large_utf8 or utf8_view, dictionary- or run-end-encoded or not, chunked or not), not {kind}",
                column.name()
            ),
            ArrowIssue::Lengths(servers, names) => {
                write!(f, "server_ids and names differ in length ({servers} and {names})")
            }
            ArrowIssue::Malformed(column, row) => {
                write!(f, "{}[{row}]: its offsets or view point outside the array's buffers", column.name())
            }
            ArrowIssue::NotUtf8(column, row) => write!(f, "{}[{row}] is not valid UTF-8", column.name()),
        }
    }
}

/// One chunk's values, as borrowed buffers.
enum Strings<'a> {
    Small(&'a [i32], &'a [u8]),
    Large(&'a [i64], &'a [u8]),
    Views(&'a StringViewArray),
    /// Keys into a dictionary of one of the other layouts.
    Dictionary(Keys<'a>, Box<Chunk<'a>>),
    /// Run ends (all of them, unsliced; only int16, int32 and int64), the
    /// logical offset of the chunk's first row in them, and the values,
    /// one per run.
    Runs(Keys<'a>, usize, Box<Chunk<'a>>),
}

/// The keys of a dictionary-encoded chunk, of any integer type.
enum Keys<'a> {
    I8(&'a [i8]),
    U8(&'a [u8]),
    I16(&'a [i16]),
    U16(&'a [u16]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    I64(&'a [i64]),
    U64(&'a [u64]),
}

/// `$body` over the keys of whichever type `$keys` holds, bound as `$k`.
macro_rules! each_key {
    ($keys:expr, $k:ident => $body:expr) => {
        match $keys {
            Keys::I8($k) => $body,
            Keys::U8($k) => $body,
            Keys::I16($k) => $body,
            Keys::U16($k) => $body,
            Keys::I32($k) => $body,
            Keys::U32($k) => $body,
            Keys::I64($k) => $body,
            Keys::U64($k) => $body,
        }
    };
}

impl Keys<'_> {
    /// Whether every key is an index below `len`.
    fn all_below(&self, len: usize) -> bool {
        each_key!(self, k => keys_below(k, len as u64))
    }

    /// The run that holds row `row`, of run ends `self` (rising): the first
    /// whose end is above it (the number of runs when none is).
    fn run_of(&self, row: usize) -> usize {
        fn first_above<K: Copy + TryInto<usize>>(ends: &[K], row: usize) -> usize {
            ends.partition_point(|&e| e.try_into().is_ok_and(|e: usize| e <= row))
        }
        each_key!(self, k => first_above(k, row))
    }

    /// As [`run_of`](Self::run_of), trying `hint` and the run after it first.
    #[inline]
    fn run_from(&self, row: usize, hint: usize) -> usize {
        for run in [hint, hint + 1] {
            let above = self.get(run).is_some_and(|end| end > row);
            let from = run == 0 || self.get(run - 1).is_some_and(|end| end <= row);
            if above && from {
                return run;
            }
        }
        self.run_of(row)
    }

    fn len(&self) -> usize {
        each_key!(self, k => k.len())
    }

    /// The first index after `i` and before `end` whose key is not key
    /// `i`'s (`end` when none is, or `i + 1` when `i` is not a key).
    #[inline]
    fn same_until(&self, i: usize, end: usize) -> usize {
        fn until<K: Copy + PartialEq>(keys: &[K], i: usize, end: usize) -> usize {
            let (Some(&key), Some(after)) = (keys.get(i), keys.get(i + 1..end.min(keys.len()))) else { return i + 1 };
            i + 1 + after.iter().position(|&k| k != key).unwrap_or(after.len())
        }
        each_key!(self, k => until(k, i, end))
    }

    /// Key `i` as an index, None when outside the keys or negative.
    #[inline]
    fn get(&self, i: usize) -> Option<usize> {
        fn at<K: Copy + TryInto<usize>>(keys: &[K], i: usize) -> Option<usize> {
            keys.get(i)?.to_owned().try_into().ok()
        }
        each_key!(self, k => at(k, i))
    }
}

/// The run ends and the values of a run-end-encoded array.
fn runs_of<'a, R: RunEndIndexType>(
    array: &'a ArrayRef,
    ends: fn(&'a [R::Native]) -> Keys<'a>,
    column: Column,
) -> Result<Option<Strings<'a>>, ArrowIssue> {
    let Some(array) = array.as_any().downcast_ref::<RunArray<R>>() else { return Ok(None) };
    if matches!(array.values().data_type(), DataType::Dictionary(..) | DataType::RunEndEncoded(..)) {
        return Err(ArrowIssue::NotStrings(column, array.data_type().to_string()));
    }
    let values = Chunk::new(array.values(), column)?;
    Ok(Some(Strings::Runs(ends(array.run_ends().values()), array.run_ends().offset(), Box::new(values))))
}

/// The keys and the dictionary of a dictionary-encoded array.
fn dictionary_of<'a, K: ArrowDictionaryKeyType>(
    array: &'a ArrayRef,
    keys: fn(&'a [K::Native]) -> Keys<'a>,
    column: Column,
) -> Result<Option<Strings<'a>>, ArrowIssue> {
    let Some(array) = array.as_any().downcast_ref::<DictionaryArray<K>>() else { return Ok(None) };
    if matches!(array.values().data_type(), DataType::Dictionary(..)) {
        return Err(ArrowIssue::NotStrings(column, array.data_type().to_string()));
    }
    let values = Chunk::new(array.values(), column)?;
    Ok(Some(Strings::Dictionary(keys(array.keys().values()), Box::new(values))))
}

/// A chunk of a column: its values and its nulls.
struct Chunk<'a> {
    strings: Strings<'a>,
    nulls: Option<&'a NullBuffer>,
    len: usize,
    /// An encoded chunk (dictionary or runs) whose every row is clean: no
    /// nulls, every key or run inside the values, and the values clean,
    /// checked whole at once. A plain chunk's rows are checked a run at a
    /// time, by the thread that decides them ([`clean`](Self::clean)).
    checked: bool,
    /// For a chunk of views, what its data buffers are each as a whole, if
    /// they hold not many more bytes than its rows could name (see
    /// [`VIEW_BYTES_A_ROW`]; else `Unchecked`).
    views_data: ViewData,
}

/// What the data buffers of a chunk of views were found to be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ViewData {
    /// Not checked (or not views): each view's bytes are checked.
    Unchecked,
    /// UTF-8: a view is UTF-8 if it starts and ends on a character boundary.
    Utf8,
    /// ASCII: a view is UTF-8 wherever it lies.
    Ascii,
}

/// A chunk of views has its data buffers checked whole only if they hold at
/// most this many bytes a row (and [`VIEW_BYTES_AT_LEAST`]): a few rows
/// sliced from a large array share its buffers, which are not read for them.
const VIEW_BYTES_A_ROW: usize = 256;
const VIEW_BYTES_AT_LEAST: usize = 1 << 16;

/// Whether the offsets of a chunk without nulls go forwards inside `values`
/// and the bytes they span are UTF-8 value by value: the span of all the
/// values is UTF-8 (ASCII, as most are, checked a word at a time) and every
/// offset falls on a character boundary. Then each row is too.
fn all_utf8<O: Copy + TryInto<usize> + PartialOrd>(offsets: &[O], values: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else { return true };
    let (Ok(first), Ok(last)) = (first.try_into(), last.try_into()) else { return false };
    let Some(all) = values.get(first..last) else { return false };
    // In order, so that every offset lies between the first and the last (a
    // fold rather than `all`: no early exit, one pass the compiler can
    // vectorise).
    if !offsets.windows(2).fold(true, |ordered, pair| ordered & (pair[0] <= pair[1])) {
        return false;
    }
    let boundary = |offset: O| {
        offset.try_into().ok().is_some_and(|at: usize| values.get(at).is_none_or(|&b| !(0x80..0xC0).contains(&b)))
    };
    simdutf8::basic::from_utf8(all).is_ok() && (all.is_ascii() || offsets.iter().all(|&offset| boundary(offset)))
}

fn offsets_of<O: OffsetSizeTrait>(array: &GenericStringArray<O>) -> (&[O], &[u8]) {
    (array.value_offsets(), array.value_data())
}

impl<'a> Chunk<'a> {
    fn new(array: &'a ArrayRef, column: Column) -> Result<Self, ArrowIssue> {
        let any = array.as_any();
        let strings = match array.data_type() {
            DataType::Utf8 => any.downcast_ref::<GenericStringArray<i32>>().map(|a| {
                let (offsets, values) = offsets_of(a);
                Strings::Small(offsets, values)
            }),
            DataType::LargeUtf8 => any.downcast_ref::<GenericStringArray<i64>>().map(|a| {
                let (offsets, values) = offsets_of(a);
                Strings::Large(offsets, values)
            }),
            DataType::Utf8View => any.downcast_ref::<StringViewArray>().map(Strings::Views),
            DataType::Dictionary(key, _) => match key.as_ref() {
                DataType::Int8 => dictionary_of::<Int8Type>(array, Keys::I8, column)?,
                DataType::UInt8 => dictionary_of::<UInt8Type>(array, Keys::U8, column)?,
                DataType::Int16 => dictionary_of::<Int16Type>(array, Keys::I16, column)?,
                DataType::UInt16 => dictionary_of::<UInt16Type>(array, Keys::U16, column)?,
                DataType::Int32 => dictionary_of::<Int32Type>(array, Keys::I32, column)?,
                DataType::UInt32 => dictionary_of::<UInt32Type>(array, Keys::U32, column)?,
                DataType::Int64 => dictionary_of::<Int64Type>(array, Keys::I64, column)?,
                DataType::UInt64 => dictionary_of::<UInt64Type>(array, Keys::U64, column)?,
                _ => None,
            },
            DataType::RunEndEncoded(ends, _) => match ends.data_type() {
                DataType::Int16 => runs_of::<Int16Type>(array, Keys::I16, column)?,
                DataType::Int32 => runs_of::<Int32Type>(array, Keys::I32, column)?,
                DataType::Int64 => runs_of::<Int64Type>(array, Keys::I64, column)?,
                _ => None,
            },
            _ => None,
        };
        let strings = strings.ok_or_else(|| ArrowIssue::NotStrings(column, array.data_type().to_string()))?;
        let nulls = array.nulls().filter(|n| n.null_count() > 0);
        let checked = nulls.is_none()
            && match strings {
                Strings::Small(..) | Strings::Large(..) | Strings::Views(_) => false,
                // Every key names a value, and every value is clean.
                Strings::Dictionary(ref keys, ref values) => values.clean(0, values.len) && keys.all_below(values.len),
                // Every row in a run, and every run with a value.
                Strings::Runs(ref ends, offset, ref values) => {
                    values.clean(0, values.len)
                        && ends.run_of(offset + array.len().saturating_sub(1)) < values.len.min(ends.len())
                }
            };
        let views_data = match strings {
            Strings::Views(views) => {
                let buffers = views.data_buffers();
                let bytes: usize = buffers.iter().map(|b| b.len()).sum();
                if bytes > VIEW_BYTES_A_ROW.saturating_mul(array.len()).max(VIEW_BYTES_AT_LEAST) {
                    ViewData::Unchecked
                } else if buffers.iter().all(|b| b.as_slice().is_ascii()) {
                    ViewData::Ascii
                } else if buffers.iter().all(|b| is_utf8(b.as_slice())) {
                    ViewData::Utf8
                } else {
                    ViewData::Unchecked
                }
            }
            _ => ViewData::Unchecked,
        };
        Ok(Chunk { strings, nulls, len: array.len(), checked, views_data })
    }

    /// Whether rows `start..start + len` are clean: none null, their offsets
    /// in order and inside the values, their bytes UTF-8. Then none can be
    /// malformed and none is checked again. A plain chunk's are checked
    /// here, when a thread comes to decide them (in parallel, and just
    /// before their bytes are read again); an encoded chunk's were checked
    /// whole ([`checked`](Self::checked)); a chunk of views' view by view,
    /// against its data buffers checked whole ([`views_clean`]).
    fn clean(&self, start: usize, len: usize) -> bool {
        if self.nulls.is_some() {
            return false;
        }
        match self.strings {
            Strings::Small(offsets, values) => offsets.get(start..=start + len).is_some_and(|o| all_utf8(o, values)),
            Strings::Large(offsets, values) => offsets.get(start..=start + len).is_some_and(|o| all_utf8(o, values)),
            Strings::Views(array) => start.checked_add(len).is_some_and(|end| views_clean(array, start, end, self.views_data)),
            Strings::Dictionary(..) | Strings::Runs(..) => self.checked,
        }
    }

    /// The bytes of row `i` of the chunk (in bounds), None when null;
    /// unchecked as UTF-8.
    #[inline]
    fn get(&self, i: usize) -> Option<Option<&'a [u8]>> {
        if self.nulls.is_some_and(|nulls| nulls.is_null(i)) {
            return Some(None);
        }
        fn span<O: Copy + TryInto<usize>>(offsets: &[O], values: &[u8], i: usize) -> Option<Range<usize>> {
            let (start, end) = (offsets.get(i)?, offsets.get(i + 1)?);
            let (start, end) = ((*start).try_into().ok()?, (*end).try_into().ok()?);
            (start <= end && end <= values.len()).then_some(start..end)
        }
        let bytes = match self.strings {
            Strings::Small(offsets, values) => &values[span(offsets, values, i)?],
            Strings::Large(offsets, values) => &values[span(offsets, values, i)?],
            Strings::Views(array) => view_bytes(array, i)?,
            Strings::Dictionary(ref keys, ref values) => return values.get(keys.get(i)?),
            Strings::Runs(ref ends, offset, ref values) => return values.get(ends.run_of(offset + i)),
        };
        Some(Some(bytes))
    }
}

/// Whether views `start..end` of a chunk without nulls each stand for bytes
/// inside the array's buffers, and UTF-8, checked view by view (views share
/// no offsets whose order would vouch for them). With every data buffer
/// UTF-8 as a whole (`data`), a view into one is UTF-8 when neither its
/// first byte nor the byte after its last continues a character (with
/// every one ASCII, wherever it lies); the at most twelve bytes of a view
/// held inline are checked as they are.
fn views_clean(array: &StringViewArray, start: usize, end: usize, data: ViewData) -> bool {
    let Some(views) = array.views().get(start..end) else { return false };
    if data == ViewData::Unchecked {
        return (start..end).all(|i| view_bytes(array, i).is_some_and(|bytes| bytes.is_ascii() || is_utf8(bytes)));
    }
    /// The high bit of every byte: set in none of an ASCII text's.
    const HIGH: u128 = u128::from_le_bytes([0x80; 16]);
    let buffers = array.data_buffers();
    // A byte that continues a character (0x80 to 0xBF: below -64 as i8).
    let continues = |b: u8| (b as i8) < -64;
    let mut ends_clean = true;
    for &view in views {
        let Some((buffer, offset, len)) = in_buffer(view) else {
            let len = view as u32 as usize;
            // The inline bytes, the view's own after its length (as
            // `view_bytes` reads them, in memory order): ASCII in one test
            // of the view's bits (those past `len` masked off), else
            // checked as UTF-8.
            let raw = view.to_ne_bytes();
            let inline = (u128::from_le_bytes(raw) >> 32) & ((1u128 << (8 * len)) - 1);
            if inline & HIGH != 0 && !is_utf8(&raw[4..4 + len]) {
                return false;
            }
            continue;
        };
        let Some(bytes) = buffers.get(buffer).map(|b| b.as_slice()) else { return false };
        let Some(first) = bytes.get(offset) else { return false };
        let Some(stop) = offset.checked_add(len).filter(|&stop| stop <= bytes.len()) else { return false };
        // Gathered, not tested a view at a time: a batch's views are clean.
        ends_clean &= !continues(*first) && !continues(bytes.get(stop).copied().unwrap_or(0));
    }
    data == ViewData::Ascii || ends_clean
}

/// The bytes a view stands for: up to twelve inline (in the views buffer
/// itself, after the length), or a range of one of the data buffers; None
/// when the view points outside them.
#[inline]
fn view_bytes(array: &StringViewArray, i: usize) -> Option<&[u8]> {
    let views = array.views();
    let view = *views.get(i)?;
    let Some((buffer, offset, len)) = in_buffer(view) else {
        let at = i * 16 + 4;
        return views.inner().as_slice().get(at..at + view as u32 as usize);
    };
    array.data_buffers().get(buffer)?.as_slice().get(offset..offset.checked_add(len)?)
}

/// Where a view's bytes lie when they are not inline (longer than twelve):
/// its data buffer, the offset in it, and the length.
#[inline]
fn in_buffer(view: u128) -> Option<(usize, usize, usize)> {
    let len = view as u32 as usize;
    (len > 12).then_some(((view >> 64) as u32 as usize, (view >> 96) as u32 as usize, len))
}

/// A column: its chunks, and the row each starts at.
struct Chunks<'a> {
    chunks: Vec<Chunk<'a>>,
    starts: Vec<usize>,
    len: usize,
    column: Column,
}

impl<'a> Chunks<'a> {
    fn new(arrays: &'a [ArrayRef], column: Column) -> Result<Self, ArrowIssue> {
        let chunks = arrays.iter().map(|a| Chunk::new(a, column)).collect::<Result<Vec<_>, _>>()?;
        let mut starts = Vec::with_capacity(chunks.len());
        let mut len = 0;
        for chunk in &chunks {
            starts.push(len);
            len += chunk.len;
        }
        Ok(Chunks { chunks, starts, len, column })
    }

    /// The chunk that holds row `row`, and the row's place in it.
    fn locate(&self, row: usize) -> (usize, usize) {
        let chunk = self.starts.partition_point(|&s| s <= row).saturating_sub(1);
        (chunk, row - self.starts.get(chunk).copied().unwrap_or(0))
    }

    /// Row `row`'s bytes (None when null).
    fn get(&self, row: usize) -> Result<Option<&'a [u8]>, ArrowIssue> {
        let (chunk, at) = self.locate(row);
        self.chunks.get(chunk).and_then(|c| c.get(at)).ok_or(ArrowIssue::Malformed(self.column, row))
    }
}

/// Rows `rows` of two columns as runs that lie in one chunk of each: calls
/// `f(server_chunk, server_at, name_chunk, name_at, len, first_row)` per run.
fn runs<'a, E>(
    servers: &Chunks<'a>,
    names: &Chunks<'a>,
    rows: Range<usize>,
    mut f: impl FnMut(&Chunk<'a>, usize, &Chunk<'a>, usize, usize, usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut row = rows.start;
    while row < rows.end {
        let ((sc, sa), (nc, na)) = (servers.locate(row), names.locate(row));
        let (s, n) = (&servers.chunks[sc], &names.chunks[nc]);
        let len = (s.len - sa).min(n.len - na).min(rows.end - row);
        f(s, sa, n, na, len, row)?;
        row += len;
    }
    Ok(())
}

/// A row's server id and name (None where null).
pub type Row<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Two columns, server ids and names, of one length: checked once, then
/// decided and read row by row.
pub struct Columns<'a> {
    servers: Chunks<'a>,
    names: Chunks<'a>,
}

impl<'a> Columns<'a> {
    pub fn new(server_ids: &'a [ArrayRef], names: &'a [ArrayRef]) -> Result<Self, ArrowIssue> {
        let servers = Chunks::new(server_ids, Column::ServerIds)?;
        let names = Chunks::new(names, Column::Names)?;
        if servers.len != names.len {
            return Err(ArrowIssue::Lengths(servers.len, names.len));
        }
        Ok(Columns { servers, names })
    }

    pub fn len(&self) -> usize {
        self.names.len
    }

    pub fn is_empty(&self) -> bool {
        self.names.len == 0
    }

    /// The outcome of every row, on up to `threads` threads (None: every
    /// core, for a big batch).
    ///
    /// On more than one thread the rows are cut into blocks (see
    /// [`block_len`]) that the threads, the calling one among them, take in
    /// turn, each keeping what it resolved (server plans, kept answers) from
    /// block to block: a part of the column that costs more (servers met for
    /// the first time, names that miss the memo) is shared, not left to the
    /// thread whose half it fell in. The issue returned is the first by row,
    /// as on one thread: a block after one that failed is not decided.
    pub fn decide(&self, filter: &StaticFilter, threads: Option<usize>) -> Result<Vec<Outcome>, ArrowIssue> {
        let lists = NameLists::new(filter, &self.names);
        let decided = self.decide_with(filter, threads, &lists);
        // What was learned holds whether or not a later row failed.
        lists.keep(filter);
        decided
    }

    fn decide_with(&self, filter: &StaticFilter, threads: Option<usize>, lists: &NameLists<'_, 'a>) -> Result<Vec<Outcome>, ArrowIssue> {
        let n = self.len();
        let threads = threads_for(n, threads);
        let mut out = vec![Outcome::Hidden; n];
        let len = block_len(n, threads);
        if threads == 1 || n <= len {
            decide_rows(&mut RowState::new(filter), &self.servers, &self.names, lists, 0, &mut out)?;
            return Ok(out);
        }
        // No more threads than blocks: the others would only wait.
        let threads = threads.min(n.div_ceil(len));
        let blocks = Mutex::new(out.chunks_mut(len).enumerate());
        // The first block that failed, and its issue.
        let failed: Mutex<Option<(usize, ArrowIssue)>> = Mutex::new(None);
        let work = || {
            let mut state = RowState::new(filter);
            loop {
                let Some((k, block)) = blocks.lock().unwrap_or_else(PoisonError::into_inner).next() else { return };
                // Blocks are taken in order, so every block before a failed
                // one is taken, and decided, before it is known to fail.
                if failed.lock().unwrap_or_else(PoisonError::into_inner).as_ref().is_some_and(|(at, _)| *at < k) {
                    return;
                }
                if let Err(issue) = decide_rows(&mut state, &self.servers, &self.names, lists, k * len, block) {
                    let mut failed = failed.lock().unwrap_or_else(PoisonError::into_inner);
                    if failed.as_ref().is_none_or(|(at, _)| k < *at) {
                        *failed = Some((k, issue));
                    }
                    return;
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(work);
            }
            work();
        });
        match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some((_, issue)) => Err(issue),
            None => Ok(out),
        }
    }

    /// The bytes of row `row` of both columns (None where null), for the
    /// rows a regex must judge, after [`decide`](Self::decide) has checked them.
    pub fn row(&self, row: usize) -> Result<Row<'a>, ArrowIssue> {
        Ok((self.servers.get(row)?, self.names.get(row)?))
    }
}

/// The answers of the name column's dictionaries for one batch, one
/// [`ListAnswers`] a list, shared by the threads: a dictionary's names are
/// learned once a batch, where a byte a thread had each thread learn them
/// again. Chunks of one dictionary (the same buffers) share one; a list a
/// batch before met (the same names, compared in full) starts from what
/// that batch learned, and what this one learns is kept for the next.
struct NameLists<'c, 'a> {
    /// Each dictionary chunk, with its list's place in `answers` and where
    /// its names lie (the addresses of their bytes and offsets, only
    /// compared, and their lengths: the chunks whose names lie in the same
    /// memory share the list).
    of: Vec<(&'c Chunk<'a>, usize, Option<[usize; 4]>)>,
    answers: Vec<ListAnswers>,
}

impl<'c, 'a> NameLists<'c, 'a> {
    /// The lists of the dictionaries of `names`, none when `filter` keeps no
    /// answer that depends on the name alone (or depends on nothing).
    fn new(filter: &StaticFilter, names: &'c Chunks<'a>) -> Self {
        let mut lists = NameLists { of: Vec::new(), answers: Vec::new() };
        if !filter.has_name_answers() || filter.constant_outcome().is_some() {
            return lists;
        }
        for chunk in &names.chunks {
            let Strings::Dictionary(_, values) = &chunk.strings else { continue };
            let list = list_of(values);
            let source = list.as_ref().map(|(bytes, ends, offsets)| [bytes.as_ptr() as usize, bytes.len(), *offsets, ends.len()]);
            let shared = source.and_then(|source| lists.of.iter().find(|(_, _, other)| *other == Some(source)));
            let at = match shared {
                Some(&(_, at, _)) => at,
                None => {
                    let answers = match list {
                        Some((bytes, ends, _)) => filter.list_answers(bytes, ends),
                        None => ListAnswers::unkept(values.len),
                    };
                    lists.answers.push(answers);
                    lists.answers.len() - 1
                }
            };
            lists.of.push((&**values, at, source));
        }
        lists
    }

    /// The answers of the dictionary `values`, if kept.
    #[inline]
    fn get(&self, values: &Chunk<'a>) -> Option<&ListAnswers> {
        let &(_, at, _) = self.of.iter().find(|(chunk, _, _)| std::ptr::eq(*chunk, values))?;
        self.answers.get(at)
    }

    /// Keeps every list's answers for `filter`'s next batch.
    fn keep(self, filter: &StaticFilter) {
        for answers in self.answers {
            filter.keep_list(answers);
        }
    }
}

/// A dictionary's names as a list: their bytes side by side, where each
/// ends in them, and where its offsets lie; None for a dictionary of views,
/// or offsets a check refuses (its rows are reported as the loops read them).
fn list_of<'a>(values: &Chunk<'a>) -> Option<(&'a [u8], Vec<usize>, usize)> {
    fn of<'a, O: Copy + TryInto<usize>>(offsets: &'a [O], values: &'a [u8]) -> Option<(&'a [u8], Vec<usize>, usize)> {
        let first: usize = (*offsets.first()?).try_into().ok()?;
        let last: usize = (*offsets.last()?).try_into().ok()?;
        let ends = offsets[1..]
            .iter()
            .map(|&o| o.try_into().ok().and_then(|o: usize| o.checked_sub(first)))
            .collect::<Option<Vec<usize>>>()?;
        Some((values.get(first..last)?, ends, offsets.as_ptr() as usize))
    }
    match values.strings {
        Strings::Small(offsets, bytes) => of(offsets, bytes),
        Strings::Large(offsets, bytes) => of(offsets, bytes),
        _ => None,
    }
}

/// The outcome of every row of two columns (see [`Columns::decide`]).
pub fn decide(
    filter: &StaticFilter,
    server_ids: &[ArrayRef],
    names: &[ArrayRef],
    threads: Option<usize>,
) -> Result<Vec<Outcome>, ArrowIssue> {
    Columns::new(server_ids, names)?.decide(filter, threads)
}

/// Whether `bytes` are UTF-8: ASCII (most names) is checked a word at a time.
#[inline]
fn is_utf8(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}

/// The server ids one thread has met, numbered densely in the order met:
/// their bytes side by side in one buffer, found again through an
/// open-addressed table of their hashes. Looking an id up allocates nothing
/// and chases no pointer (the bytes compared lie in the one buffer, which
/// stays in cache), unlike a map keyed by boxed bytes.
#[derive(Default)]
struct Interner {
    /// Slots: an id + 1, or 0 when free; a power of two long, at most half full.
    table: Vec<u32>,
    /// Per id: its hash, and its bytes' place in `bytes`.
    hashes: Vec<u64>,
    spans: Vec<(usize, usize)>,
    bytes: Vec<u8>,
}

impl Interner {
    fn hash(bytes: &[u8]) -> u64 {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(bytes);
        hasher.write_usize(bytes.len());
        hasher.finish()
    }

    fn get(&self, id: u32) -> &[u8] {
        let (at, len) = self.spans[id as usize];
        &self.bytes[at..at + len]
    }

    /// The id of `bytes`, and whether they are new.
    #[inline]
    fn id(&mut self, bytes: &[u8]) -> (u32, bool) {
        if self.table.is_empty() {
            self.table = vec![0; 64];
        }
        let hash = Self::hash(bytes);
        let mask = self.table.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            match self.table[slot] {
                0 => break,
                taken => {
                    let id = taken - 1;
                    if self.hashes[id as usize] == hash && self.get(id) == bytes {
                        return (id, false);
                    }
                    slot = (slot + 1) & mask;
                }
            }
        }
        let id = self.hashes.len() as u32;
        self.hashes.push(hash);
        self.spans.push((self.bytes.len(), bytes.len()));
        self.bytes.extend_from_slice(bytes);
        self.table[slot] = id + 1;
        if self.hashes.len() * 2 > self.table.len() {
            self.grow();
        }
        (id, true)
    }

    #[cold]
    fn grow(&mut self) {
        let mut table = vec![0u32; self.table.len() * 2];
        let mask = table.len() - 1;
        for (id, &hash) in self.hashes.iter().enumerate() {
            let mut slot = hash as usize & mask;
            while table[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            table[slot] = id as u32 + 1;
        }
        self.table = table;
    }
}

/// What one thread keeps from block to block of its rows (see
/// [`decide_rows`]).
struct RowState<'f, 'a> {
    decider: Decider<'f>,
    constant: Option<Outcome>,
    interner: Interner,
    /// Per id: its plan in `decider`.
    plans: Vec<u32>,
    /// The previous row's server id and plan.
    previous: Option<(&'a [u8], u32)>,
    /// Per value of the dictionary of the server chunk at hand (`dictionary`):
    /// its plan + 1, or 0 while not met.
    by_key: Vec<u32>,
    dictionary: *const Chunk<'a>,
    /// The run of the previous row of a run-end-encoded server chunk.
    run_hint: usize,
    /// Per run of the run-end-encoded name chunk at hand (`name_values`):
    /// the name's every-server answers (`Decider::decide_planned_keyed`; a
    /// dictionary's are shared by the threads, in [`NameLists`]).
    answers: Vec<u8>,
    name_values: *const Chunk<'a>,
    name_run_hint: usize,
}

impl<'f> RowState<'f, '_> {
    fn new(filter: &'f StaticFilter) -> Self {
        RowState {
            decider: Decider::new(filter),
            constant: filter.constant_outcome(),
            interner: Interner::default(),
            plans: Vec::new(),
            previous: None,
            by_key: Vec::new(),
            dictionary: std::ptr::null(),
            run_hint: 0,
            answers: Vec::new(),
            name_values: std::ptr::null(),
            name_run_hint: 0,
        }
    }
}

/// Decides rows `start..start + out.len()` into `out`. Each server id is
/// resolved once per thread (its plan, and its check as UTF-8), found again
/// through an [`Interner`]; a row whose server id is the previous row's (a
/// column grouped or sorted by server, as loaders and registries deliver
/// them) takes its plan without a lookup, so a run of rows of one server
/// costs only its names' reading and matching. A dictionary-encoded server
/// column resolves each dictionary value once per thread and chunk, then
/// finds its plan by the row's key: no bytes compared, no hashing per row;
/// a run-end-encoded one likewise by its run, found from the previous row's.
/// A dictionary-encoded name column keeps the answers that depend on the
/// name alone (each side's every-server group: bare tool globs and
/// `*/tool`, most of a long list) in a byte per dictionary value, found by
/// the row's key, in place of the batch's memo of names: one byte for all
/// the threads, kept by the filter for its next batch ([`NameLists`]); a
/// run-end-encoded one in a byte per run, the thread's own.
///
/// Each run of rows that lies in one chunk of each column is checked by
/// the thread that decides it ([`Chunk::clean`]: in parallel, and while its
/// bytes are in the nearer caches for the reading after). A clean run of
/// the layouts most columns have takes a loop of its own
/// ([`decide_checked`]); any other row (null, or in a run that is not
/// clean) the general loop, which checks each row as it reads it and names
/// the first bad one.
fn decide_rows<'a>(
    state: &mut RowState<'_, 'a>,
    servers: &Chunks<'a>,
    names: &Chunks<'a>,
    lists: &NameLists<'_, 'a>,
    start: usize,
    out: &mut [Outcome],
) -> Result<(), ArrowIssue> {
    let RowState {
        decider,
        constant,
        interner,
        plans,
        previous,
        by_key,
        dictionary,
        run_hint,
        answers,
        name_values,
        name_run_hint,
    } = state;
    let constant = *constant;
    let malformed = |column, row| ArrowIssue::Malformed(column, row);
    runs(servers, names, start..start + out.len(), |s, sa, n, na, len, first| {
        let out = &mut out[first - start..first - start + len];
        let (s_clean, n_clean) = (s.clean(sa, len), n.clean(na, len));
        // A dictionary's answers, shared by the threads (None: not kept).
        let list = match &n.strings {
            Strings::Dictionary(_, values) => lists.get(values),
            _ => None,
        };
        // A filter that depends on nothing, over two clean runs (no nulls,
        // offsets in order and inside the values, UTF-8): every row has its
        // answer without being read.
        if let (Some(outcome), true, true) = (constant, s_clean, n_clean) {
            out.fill(outcome);
            return Ok(());
        }
        // Two clean runs (no row can be null or malformed), the
        // names plain, views or dictionary-encoded and the server ids plain,
        // views, dictionary- or run-end-encoded: a loop of their own, with
        // no per-row test of encodings, nulls or UTF-8.
        let checked_names = matches!(n.strings, Strings::Small(..) | Strings::Large(..) | Strings::Views(_) | Strings::Dictionary(..));
        if constant.is_none() && s_clean && n_clean && checked_names {
            let plans = Plans { decider, interner, plans };
            let names = (n, na, list);
            return match &s.strings {
                &Strings::Small(offsets, values) => {
                    decide_checked(plans, PlainIds { offsets, values, at: sa, previous }, names, first, out)
                }
                &Strings::Large(offsets, values) => {
                    decide_checked(plans, PlainIds { offsets, values, at: sa, previous }, names, first, out)
                }
                Strings::Dictionary(keys, values) => {
                    let by_key = per_value(by_key, dictionary, values);
                    decide_checked(plans, DictionaryIds { keys, values, at: sa, end: out.len(), by_key, last: None }, names, first, out)
                }
                Strings::Runs(ends, offset, values) => {
                    let by_key = per_value(by_key, dictionary, values);
                    let ids = RunIds { ends, values, at: offset + sa, by_key, hint: run_hint };
                    decide_checked(plans, ids, names, first, out)
                }
                &Strings::Views(array) => decide_checked(plans, ViewIds { array, at: sa, previous }, names, first, out),
            };
        }
        let keyed_names = matches!(n.strings, Strings::Dictionary(..) | Strings::Runs(..));
        // The names of the next AHEAD rows, read once: what the batch keeps
        // of a name is fetched meanwhile (`crate::memo`), and the name is
        // taken from here at its turn (a bad row there is reported then).
        const AHEAD: usize = crate::memo::AHEAD;
        let mut ahead: [Option<Option<&[u8]>>; AHEAD] = [None; AHEAD];
        // Their hashes, found by the fetch, for their turn.
        let mut hashes = Ahead::default();
        if !keyed_names {
            for (k, slot) in ahead.iter_mut().enumerate().take(len) {
                *slot = n.get(na + k);
                if let Some(Some(name)) = *slot {
                    hashes.fetch(decider, k, name);
                }
            }
        }
        for (k, slot) in out.iter_mut().enumerate() {
            let row = first + k;
            let read = if keyed_names {
                None
            } else {
                let read = ahead[k % AHEAD];
                if k + AHEAD < len {
                    let next = n.get(na + k + AHEAD);
                    if let Some(Some(name)) = next {
                        hashes.fetch(decider, k + AHEAD, name);
                    }
                    ahead[k % AHEAD] = next;
                }
                Some(read)
            };
            // A dictionary's or a run's value: read through its index among
            // the values (the key; a run found from the previous row's).
            let bad = || malformed(Column::ServerIds, row);
            let (server, keyed) = match &s.strings {
                Strings::Runs(ends, offset, values) => {
                    *run_hint = ends.run_from(offset + sa + k, *run_hint);
                    (values.get(*run_hint).ok_or_else(bad)?, Some((*run_hint, &**values)))
                }
                Strings::Dictionary(keys, values) if !s.nulls.is_some_and(|nulls| nulls.is_null(sa + k)) => {
                    let key = keys.get(sa + k).ok_or_else(bad)?;
                    (values.get(key).ok_or_else(bad)?, Some((key, &**values)))
                }
                _ => (s.get(sa + k).ok_or_else(bad)?, None),
            };
            // A name likewise, its index among the values kept for its answers.
            let bad = || malformed(Column::Names, row);
            let (name, name_keyed) = match &n.strings {
                Strings::Runs(ends, offset, values) => {
                    *name_run_hint = ends.run_from(offset + na + k, *name_run_hint);
                    (values.get(*name_run_hint).ok_or_else(bad)?, Some((*name_run_hint, Some(&**values))))
                }
                Strings::Dictionary(keys, values) if !n.nulls.is_some_and(|nulls| nulls.is_null(na + k)) => {
                    let key = keys.get(na + k).ok_or_else(bad)?;
                    (values.get(key).ok_or_else(bad)?, Some((key, None)))
                }
                // A plain row's name was read ahead; a null dictionary row's is read here.
                _ => (read.unwrap_or_else(|| n.get(na + k)).ok_or_else(bad)?, None),
            };
            if let Some(name) = name.filter(|_| !n_clean) {
                if !is_utf8(name) {
                    return Err(ArrowIssue::NotUtf8(Column::Names, row));
                }
            }
            let Some(server) = server else { continue };
            let mut resolve = |server: &[u8]| plan_of(decider, interner, plans, server, s_clean, row);
            let plan = match (keyed, *previous) {
                // A dictionary's or a run's value is resolved once, found
                // again by its key.
                (Some((key, values)), _) => {
                    let by_key = per_value(by_key, dictionary, values);
                    kept_plan(&mut by_key[key], || resolve(server))?
                }
                (_, Some((bytes, plan))) if bytes == server => plan,
                _ => {
                    let plan = resolve(server)?;
                    *previous = Some((server, plan));
                    plan
                }
            };
            let Some(name) = name else { continue };
            *slot = match (constant, name_keyed) {
                (Some(outcome), _) => outcome,
                // A run's answers, the thread's own.
                (None, Some((run, Some(values)))) => match per_value(answers, name_values, values).get_mut(run) {
                    Some(kept) => decider.decide_planned_keyed(plan, server, name, 0, kept),
                    None => decider.decide_planned(plan, server, name, 0),
                },
                // A dictionary value's, shared.
                (None, Some((key, None))) => match list.and_then(|list| list.get(key)) {
                    Some(kept) => with_shared(kept, |known| decider.decide_planned_keyed(plan, server, name, 0, known)),
                    None => decider.decide_planned(plan, server, name, 0),
                },
                (None, None) => decider.decide_planned_hashed(plan, server, name, 0, hashes.hash(k)),
            };
        }
        Ok(())
    })
}

/// The plan of row `row`'s server id `server` in `decider`: resolved the
/// first time the thread meets the id (`interner`), and then checked as
/// UTF-8 unless its run of rows is clean (`checked`); found by the id's
/// number after.
#[inline]
fn plan_of(
    decider: &mut Decider<'_>,
    interner: &mut Interner,
    plans: &mut Vec<u32>,
    server: &[u8],
    checked: bool,
    row: usize,
) -> Result<u32, ArrowIssue> {
    let (id, new) = interner.id(server);
    if new {
        if !checked && !is_utf8(server) {
            return Err(ArrowIssue::NotUtf8(Column::ServerIds, row));
        }
        plans.push(decider.plan_for(server));
    }
    Ok(plans[id as usize])
}

/// The server plans a thread has resolved, as [`plan_of`] needs them.
struct Plans<'r, 'f> {
    decider: &'r mut Decider<'f>,
    interner: &'r mut Interner,
    plans: &'r mut Vec<u32>,
}

/// What a thread keeps per value of the dictionary (or run) `values`
/// (`kept`: a plan + 1 or a name's answers, 0 while not met), started again
/// when the chunk at hand has other values than the one before (`at`).
fn per_value<'r, 'a, T: Copy + Default>(kept: &'r mut Vec<T>, at: &mut *const Chunk<'a>, values: &Chunk<'a>) -> &'r mut Vec<T> {
    if !std::ptr::eq(values, *at) {
        *at = values;
        kept.clear();
        kept.resize(values.len, T::default());
    }
    kept
}

/// The server ids of a clean run of rows (see [`decide_checked`]).
trait ServerIds<'a> {
    /// Row `k`'s server id (row `row` of the column) and its plan, and the
    /// first row after `k` that may have another: every row before it has
    /// the same.
    fn at(&mut self, k: usize, plans: &mut Plans<'_, '_>, row: usize) -> Result<(&'a [u8], u32, usize), ArrowIssue>;
}

/// The names of a clean run of rows (see [`decide_checked`]).
trait Names<'a> {
    /// A hint that row `k` is decided soon.
    fn prefetch(&mut self, k: usize, decider: &Decider<'_>);
    /// Row `k`'s outcome (row `row` of the column), its server's plan `plan`.
    fn decide(&mut self, k: usize, decider: &mut Decider<'_>, plan: u32, server: &[u8], row: usize)
        -> Result<Outcome, ArrowIssue>;
}

/// Row `i`'s bytes of a clean run of a plain chunk; None only for offsets
/// [`Chunk::clean`] refuses.
#[inline]
fn span<'a, O: Copy + TryInto<usize>>(offsets: &[O], values: &'a [u8], i: usize) -> Option<&'a [u8]> {
    let (start, end) = (*offsets.get(i)?, *offsets.get(i + 1)?);
    values.get(start.try_into().ok()?..end.try_into().ok()?)
}

/// A plain server column: a row whose id is the previous row's takes its
/// plan without a lookup.
struct PlainIds<'r, 'a, O> {
    offsets: &'a [O],
    values: &'a [u8],
    at: usize,
    previous: &'r mut Option<(&'a [u8], u32)>,
}

impl<'a, O: Copy + TryInto<usize>> ServerIds<'a> for PlainIds<'_, 'a, O> {
    #[inline]
    fn at(&mut self, k: usize, plans: &mut Plans<'_, '_>, row: usize) -> Result<(&'a [u8], u32, usize), ArrowIssue> {
        let server = span(self.offsets, self.values, self.at + k).ok_or(ArrowIssue::Malformed(Column::ServerIds, row))?;
        Ok((server, previous_or_resolved(self.previous, server, plans, row)?, k + 1))
    }
}

/// The plan of a plain or view server id `server` of row `row`: the
/// previous row's, if its id was the same, else resolved (and kept as the
/// previous).
#[inline]
fn previous_or_resolved<'a>(
    previous: &mut Option<(&'a [u8], u32)>,
    server: &'a [u8],
    plans: &mut Plans<'_, '_>,
    row: usize,
) -> Result<u32, ArrowIssue> {
    match *previous {
        Some((bytes, plan)) if bytes == server => Ok(plan),
        _ => {
            let plan = plan_of(plans.decider, plans.interner, plans.plans, server, true, row)?;
            *previous = Some((server, plan));
            Ok(plan)
        }
    }
}

/// A server column of string views (as a plain one: a row whose id is the
/// previous row's takes its plan without a lookup).
struct ViewIds<'r, 'a> {
    array: &'a StringViewArray,
    at: usize,
    previous: &'r mut Option<(&'a [u8], u32)>,
}

impl<'a> ServerIds<'a> for ViewIds<'_, 'a> {
    #[inline]
    fn at(&mut self, k: usize, plans: &mut Plans<'_, '_>, row: usize) -> Result<(&'a [u8], u32, usize), ArrowIssue> {
        let server = view_bytes(self.array, self.at + k).ok_or(ArrowIssue::Malformed(Column::ServerIds, row))?;
        Ok((server, previous_or_resolved(self.previous, server, plans, row)?, k + 1))
    }
}

/// The plan of value `index` of `values` (a dictionary, or a run's values),
/// resolved the first time and kept in `by_key` (see [`per_value`]).
#[inline]
fn keyed_plan<'a>(
    values: &Chunk<'a>,
    index: usize,
    by_key: &mut [u32],
    plans: &mut Plans<'_, '_>,
    row: usize,
) -> Result<(&'a [u8], u32), ArrowIssue> {
    let bad = || ArrowIssue::Malformed(Column::ServerIds, row);
    let server = values.get(index).flatten().ok_or_else(bad)?;
    let kept = by_key.get_mut(index).ok_or_else(bad)?;
    let plan = kept_plan(kept, || plan_of(plans.decider, plans.interner, plans.plans, server, true, row))?;
    Ok((server, plan))
}

/// The plan kept in `kept` (a plan + 1, 0 while not met), or else
/// `resolve`'s, which is kept.
#[inline]
fn kept_plan(kept: &mut u32, resolve: impl FnOnce() -> Result<u32, ArrowIssue>) -> Result<u32, ArrowIssue> {
    if *kept == 0 {
        *kept = resolve()? + 1;
    }
    Ok(*kept - 1)
}

/// A dictionary-encoded server column: each value's plan is found by its
/// key, and a row whose key is the previous row's takes it from there.
struct DictionaryIds<'r, 'a> {
    keys: &'r Keys<'a>,
    values: &'r Chunk<'a>,
    at: usize,
    /// The row after the last of the run of rows at hand (`at` the first).
    end: usize,
    by_key: &'r mut Vec<u32>,
    /// The previous key met, its server id and plan.
    last: Option<(usize, &'a [u8], u32)>,
}

impl<'a> ServerIds<'a> for DictionaryIds<'_, 'a> {
    #[inline]
    fn at(&mut self, k: usize, plans: &mut Plans<'_, '_>, row: usize) -> Result<(&'a [u8], u32, usize), ArrowIssue> {
        let key = self.keys.get(self.at + k).ok_or(ArrowIssue::Malformed(Column::ServerIds, row))?;
        let (server, plan) = match self.last {
            Some((last, server, plan)) if last == key => (server, plan),
            _ => {
                let (server, plan) = keyed_plan(self.values, key, self.by_key, plans, row)?;
                self.last = Some((key, server, plan));
                (server, plan)
            }
        };
        // The rows after with the same key (a column sorted by server: a
        // run, as a run-end-encoded one's) take the plan without a look.
        Ok((server, plan, self.keys.same_until(self.at + k, self.at + self.end) - self.at))
    }
}

/// A run-end-encoded server column: one plan a run, every row of the run
/// decided without looking at its server id again.
struct RunIds<'r, 'a> {
    ends: &'r Keys<'a>,
    values: &'r Chunk<'a>,
    /// The logical row of the run's first row in `ends`.
    at: usize,
    by_key: &'r mut Vec<u32>,
    hint: &'r mut usize,
}

impl<'a> ServerIds<'a> for RunIds<'_, 'a> {
    #[inline]
    fn at(&mut self, k: usize, plans: &mut Plans<'_, '_>, row: usize) -> Result<(&'a [u8], u32, usize), ArrowIssue> {
        let run = self.ends.run_from(self.at + k, *self.hint);
        *self.hint = run;
        let end = self.ends.get(run).ok_or(ArrowIssue::Malformed(Column::ServerIds, row))?;
        let (server, plan) = keyed_plan(self.values, run, self.by_key, plans, row)?;
        // At least the next row: a run found for row k ends after it.
        Ok((server, plan, end.saturating_sub(self.at).max(k + 1)))
    }
}

/// A plain name column: each name is read straight from its offsets, and
/// fetched for the memo [`AHEAD`](crate::memo::AHEAD) rows before (its hash
/// kept for its turn).
struct PlainNames<'a, O> {
    offsets: &'a [O],
    values: &'a [u8],
    at: usize,
    ahead: Ahead,
}

impl<'a, O: Copy + TryInto<usize>> Names<'a> for PlainNames<'a, O> {
    #[inline]
    fn prefetch(&mut self, k: usize, decider: &Decider<'_>) {
        if let Some(name) = span(self.offsets, self.values, self.at + k) {
            self.ahead.fetch(decider, k, name);
        }
    }

    #[inline]
    fn decide(&mut self, k: usize, decider: &mut Decider<'_>, plan: u32, server: &[u8], row: usize)
        -> Result<Outcome, ArrowIssue> {
        let name = span(self.offsets, self.values, self.at + k).ok_or(ArrowIssue::Malformed(Column::Names, row))?;
        Ok(decider.decide_planned_hashed(plan, server, name, 0, self.ahead.hash(k)))
    }
}

/// A name column of string views: read through each row's view, and
/// fetched for the memo ahead as a plain column's.
struct ViewNames<'a> {
    array: &'a StringViewArray,
    at: usize,
    ahead: Ahead,
}

impl<'a> Names<'a> for ViewNames<'a> {
    #[inline]
    fn prefetch(&mut self, k: usize, decider: &Decider<'_>) {
        if let Some(name) = view_bytes(self.array, self.at + k) {
            self.ahead.fetch(decider, k, name);
        }
    }

    #[inline]
    fn decide(&mut self, k: usize, decider: &mut Decider<'_>, plan: u32, server: &[u8], row: usize)
        -> Result<Outcome, ArrowIssue> {
        let name = view_bytes(self.array, self.at + k).ok_or(ArrowIssue::Malformed(Column::Names, row))?;
        Ok(decider.decide_planned_hashed(plan, server, name, 0, self.ahead.hash(k)))
    }
}

/// A dictionary-encoded name column: each value's every-server answers
/// are kept in a byte by its key, in place of the memo (shared by the
/// threads; None: not kept, see [`NameLists`]).
struct DictionaryNames<'r, 'a> {
    keys: &'r Keys<'a>,
    values: &'r Chunk<'a>,
    at: usize,
    answers: Option<&'r ListAnswers>,
}

impl<'a> Names<'a> for DictionaryNames<'_, 'a> {
    #[inline]
    fn prefetch(&mut self, _: usize, _: &Decider<'_>) {}

    #[inline]
    fn decide(&mut self, k: usize, decider: &mut Decider<'_>, plan: u32, server: &[u8], row: usize)
        -> Result<Outcome, ArrowIssue> {
        let bad = || ArrowIssue::Malformed(Column::Names, row);
        let key = self.keys.get(self.at + k).ok_or_else(bad)?;
        let name = self.values.get(key).flatten().ok_or_else(bad)?;
        Ok(match self.answers.and_then(|answers| answers.get(key)) {
            Some(kept) => with_shared(kept, |known| decider.decide_planned_keyed(plan, server, name, 0, known)),
            None => decider.decide_planned(plan, server, name, 0),
        })
    }
}

/// What [`decide_checked`] needs of a name chunk: the chunk, the row of
/// the run in it, and a dictionary's answers by key.
type NameChunk<'r, 'a> = (&'r Chunk<'a>, usize, Option<&'r ListAnswers>);

/// The rows of a clean run of two chunks ([`Chunk::clean`]: no nulls,
/// offsets in order and inside the values, keys and runs inside their
/// values, UTF-8), so that no row can be null or malformed and none is
/// checked again; the
/// server ids plain, views, dictionary- or run-end-encoded (`ids`), the
/// names plain, views or dictionary-encoded. It decides as [`decide_rows`]' general
/// loop does (the Rust tests `plain_columns_decide_as_the_general_loop`
/// and `checked_encodings_decide_as_the_general_loop`).
fn decide_checked<'a, I: ServerIds<'a>>(
    plans: Plans<'_, '_>,
    ids: I,
    (n, na, answers): NameChunk<'_, 'a>,
    first: usize,
    out: &mut [Outcome],
) -> Result<(), ArrowIssue> {
    match &n.strings {
        &Strings::Small(offsets, values) => decide_each(plans, ids, PlainNames { offsets, values, at: na, ahead: Ahead::default() }, first, out),
        &Strings::Large(offsets, values) => decide_each(plans, ids, PlainNames { offsets, values, at: na, ahead: Ahead::default() }, first, out),
        &Strings::Views(array) => decide_each(plans, ids, ViewNames { array, at: na, ahead: Ahead::default() }, first, out),
        Strings::Dictionary(keys, values) => decide_each(plans, ids, DictionaryNames { keys, values, at: na, answers }, first, out),
        // Not reached: the caller sends only the layouts above.
        _ => Err(ArrowIssue::Malformed(Column::Names, first)),
    }
}

fn decide_each<'a, I: ServerIds<'a>, N: Names<'a>>(
    mut plans: Plans<'_, '_>,
    mut ids: I,
    mut names: N,
    first: usize,
    out: &mut [Outcome],
) -> Result<(), ArrowIssue> {
    const AHEAD: usize = crate::memo::AHEAD;
    let len = out.len();
    for k in 0..AHEAD.min(len) {
        names.prefetch(k, plans.decider);
    }
    let (mut server, mut plan, mut until): (&[u8], u32, usize) = (&[], 0, 0);
    for (k, slot) in out.iter_mut().enumerate() {
        if k + AHEAD < len {
            names.prefetch(k + AHEAD, plans.decider);
        }
        if k >= until {
            (server, plan, until) = ids.at(k, &mut plans, first + k)?;
        }
        *slot = names.decide(k, plans.decider, plan, server, first + k)?;
    }
    Ok(())
}

/// Outcomes as an Arrow boolean bitmap (bit `i` of byte `i / 8`, least
/// significant first): set where visible; and whether any is undecided.
/// One pass, eight outcomes a byte (loops the compiler unrolls).
pub fn visible_bits(outcomes: &[Outcome]) -> (Vec<u8>, bool) {
    let mut bits = vec![0u8; outcomes.len().div_ceil(8)];
    let mut undecided = false;
    for (byte, eight) in bits.iter_mut().zip(outcomes.chunks(8)) {
        let mut b = 0;
        for (k, o) in eight.iter().enumerate() {
            b |= u8::from(*o == Outcome::Visible) << k;
            undecided |= *o == Outcome::Undecided;
        }
        *byte = b;
    }
    (bits, undecided)
}

/// One pass over the name bytes, for comparison: how many rows hold a `/`,
/// found by `memchr` (reading each row as [`decide`] does, unchecked as UTF-8).
pub fn count_slashes(names: &[ArrayRef]) -> Result<usize, ArrowIssue> {
    let names = Chunks::new(names, Column::Names)?;
    let mut count = 0;
    runs(&names, &names, 0..names.len, |_, _, n, at, len, first| {
        for k in 0..len {
            let name = n.get(at + k).ok_or(ArrowIssue::Malformed(Column::Names, first + k))?;
            count += usize::from(name.is_some_and(|name| memchr::memchr(b'/', name).is_some()));
        }
        Ok(())
    })?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::array::{LargeStringArray, StringArray};
    use arrow_array::builder::StringViewBuilder;

    use super::*;
    use crate::filter::FlagScratch;

    fn filter(include: &[&str], exclude: &[&str]) -> StaticFilter {
        StaticFilter::compile(include, exclude, &[], &[], include.is_empty()).unwrap()
    }

    fn scalar(f: &StaticFilter, server: Option<&str>, name: Option<&str>) -> Outcome {
        match (server, name) {
            (Some(s), Some(n)) => f.outcome(f.flags(s.as_bytes(), n.as_bytes(), &mut FlagScratch::default())),
            _ => Outcome::Hidden,
        }
    }

    fn views(values: &[Option<&str>]) -> ArrayRef {
        let mut builder = StringViewBuilder::new();
        for v in values {
            builder.append_option(*v);
        }
        Arc::new(builder.finish())
    }

    /// A dictionary-encoded column: keys of type `K` (None: a null key)
    /// into `values`.
    fn encoded<K: arrow_array::types::ArrowDictionaryKeyType>(keys: &[Option<u8>], values: ArrayRef) -> ArrayRef {
        use arrow_buffer::ArrowNativeType;
        let native = |k: u8| K::Native::from_usize(usize::from(k)).unwrap();
        let keys = arrow_array::PrimitiveArray::<K>::from_iter(keys.iter().map(|k| k.map(native)));
        Arc::new(DictionaryArray::<K>::try_new(keys, values).unwrap())
    }

    /// A run-end-encoded column: runs ending at `ends`, of type `R`, one
    /// value of `values` each.
    fn run_encoded<R: arrow_array::types::RunEndIndexType>(ends: &[usize], values: ArrayRef) -> ArrayRef {
        use arrow_buffer::ArrowNativeType;
        let ends = arrow_array::PrimitiveArray::<R>::from_iter_values(ends.iter().map(|&e| R::Native::from_usize(e).unwrap()));
        Arc::new(RunArray::<R>::try_new(&ends, values.as_ref()).unwrap())
    }

    /// Every layout, chunked differently in the two columns, with nulls,
    /// long and short views: each row as the scalar path decides it.
    #[test]
    fn every_layout_and_chunking_decides_as_scalar() {
        let f = filter(&["s1/*", "*/read_*", "*long*"], &["*/Delete*", "s2/*_V2"]);
        let servers: Vec<Option<&str>> =
            (0..40).map(|i| if i % 11 == 5 { None } else { Some(["s1", "s2", "s3"][i % 3]) }).collect();
        let names: Vec<Option<&str>> = (0..40)
            .map(|i| match i % 7 {
                0 => None,
                1 => Some("read_a"),
                2 => Some("delete-b"),
                3 => Some("x_v2"),
                4 => Some("a name well past twelve bytes, long"),
                5 => Some(""),
                _ => Some("ΣΑΣ-İ"),
            })
            .collect();
        let want: Vec<Outcome> = servers.iter().zip(&names).map(|(s, n)| scalar(&f, *s, *n)).collect();
        let server_chunks: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(servers[..7].to_vec())),
            Arc::new(LargeStringArray::from(servers[7..30].to_vec())),
            views(&servers[30..]),
        ];
        let name_chunks: Vec<ArrayRef> = vec![
            views(&names[..13]),
            Arc::new(StringArray::from(Vec::<Option<&str>>::new())),
            Arc::new(StringArray::from(names[13..14].to_vec())),
            Arc::new(LargeStringArray::from(names[14..].to_vec())),
        ];
        for threads in [Some(1), Some(3), Some(64), None] {
            assert_eq!(decide(&f, &server_chunks, &name_chunks, threads).unwrap(), want, "{threads:?}");
        }
        let sliced: ArrayRef = Arc::new(StringArray::from(names.clone()).slice(3, 20));
        let sliced_servers: ArrayRef = Arc::new(StringArray::from(servers.clone()).slice(3, 20));
        assert_eq!(decide(&f, &[sliced_servers], &[sliced], Some(2)).unwrap(), want[3..23].to_vec());
        assert_eq!(Columns::new(&server_chunks, &name_chunks).unwrap().row(4).unwrap(), (Some(&b"s2"[..]), Some(&b"a name well past twelve bytes, long"[..])));
    }

    /// A filter that depends on nothing answers clean runs without reading
    /// them, and still hides nulls and reads the runs it could not check.
    #[test]
    fn a_constant_filter_skips_only_clean_runs() {
        let f = filter(&[], &[]);
        assert!(f.constant_outcome().is_some());
        let clean: ArrayRef = Arc::new(StringArray::from(vec!["a", "ΣΑΣ", "c", "d"]));
        let with_null: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("c"), Some("d")]));
        let sliced: ArrayRef = Arc::new(StringArray::from(vec!["x", "a", "b", "c", "d", "y"]).slice(1, 4));
        for (servers, names) in [(&clean, &clean), (&clean, &sliced), (&sliced, &views(&[Some("a"), Some("b"), Some("c"), Some("d")]))] {
            let want: Vec<Outcome> = (0..4).map(|i| scalar(&f, Some("a"), Some(["a", "b", "c", "d"][i]))).collect();
            assert_eq!(decide(&f, std::slice::from_ref(servers), std::slice::from_ref(names), Some(1)).unwrap(), want);
        }
        let got = decide(&f, std::slice::from_ref(&clean), std::slice::from_ref(&with_null), Some(2)).unwrap();
        assert_eq!(got, [Outcome::Visible, Outcome::Hidden, Outcome::Visible, Outcome::Visible]);
    }

    /// Server ids met grouped, sorted and interleaved, more of them than the
    /// interner's first table holds (so it grows), some equal in bytes but
    /// in different places: each row as the scalar path decides it.
    #[test]
    fn server_runs_and_interleaving_decide_as_scalar() {
        let f = filter(&["s1*/*", "*/read_*", "s7/x"], &["s2*/Delete*", "*/*_V2"]);
        let ids: Vec<String> = (0..300).map(|i| format!("s{}", i % 150)).collect();
        let names = ["x", "read_a", "delete-b", "y_v2", "z"];
        let rows: Vec<(String, &str)> = (0..900).map(|i| (ids[(i * 7) % 300].clone(), names[i % 5])).collect();
        let mut sorted = rows.clone();
        sorted.sort();
        let grouped: Vec<(String, &str)> =
            ids.iter().flat_map(|id| names.iter().map(move |n| (id.clone(), *n))).collect();
        for rows in [rows, sorted, grouped] {
            let want: Vec<Outcome> = rows.iter().map(|(s, n)| scalar(&f, Some(s), Some(n))).collect();
            let servers: ArrayRef = Arc::new(StringArray::from(rows.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>()));
            let names: ArrayRef = Arc::new(StringArray::from(rows.iter().map(|(_, n)| *n).collect::<Vec<_>>()));
            for threads in [Some(1), Some(3)] {
                assert_eq!(decide(&f, std::slice::from_ref(&servers), std::slice::from_ref(&names), threads).unwrap(), want);
            }
        }
        let mut interner = Interner::default();
        let got: Vec<(u32, bool)> = (0..200).chain(0..200).map(|i| interner.id(format!("{i}").as_bytes())).collect();
        assert_eq!(got[..200], (0..200).map(|i| (i, true)).collect::<Vec<_>>()[..]);
        assert_eq!(got[200..], (0..200).map(|i| (i, false)).collect::<Vec<_>>()[..]);
        assert_eq!(interner.id(b""), (200, true));
    }

    /// Clean plain columns take the loop of their own
    /// ([`decide_checked`]), utf8 and large_utf8 in each of the four pairings,
    /// sliced and chunked: each row as the scalar path and as the general
    /// loop decide it (the same columns with one null row at the end, which
    /// the whole-chunk check refuses, so that they take the general loop).
    #[test]
    fn plain_columns_decide_as_the_general_loop() {
        let f = filter(&["s1*/*", "*/read_*", "*k3*", "a*b", "\u{130}*"], &["s2*/Delete*", "*/*_V2", "*\u{212a}*", "x.*"]);
        // Some longer than the twelve bytes a view holds inline.
        let words = ["read_a", "Delete-b", "y_v2", "k3", "ak3b", "\u{130}x", "\u{212a}", "X-y", "", "a/b:c*", "\0", "read_a_longer_name", "\u{212a}elvin-and-more_V2", "a_long_k3_name_b"];
        let rows: Vec<(String, String)> = (0..9_000)
            .map(|i| (format!("s{}", (i / 3) % 40), format!("{}{}", words[i % words.len()], if i % 5 == 0 { format!("_{}", i % 97) } else { String::new() })))
            .collect();
        let want: Vec<Outcome> = rows.iter().map(|(s, n)| scalar(&f, Some(s), Some(n))).collect();
        // Layout 0 plain, 1 large, 2 string views.
        let column = |values: Vec<&str>, layout: u8, null: bool| -> ArrayRef {
            let mut values: Vec<Option<&str>> = values.into_iter().map(Some).collect();
            if null {
                values.push(None);
            }
            match layout {
                0 => Arc::new(StringArray::from(values)),
                1 => Arc::new(LargeStringArray::from(values)),
                _ => Arc::new(StringViewArray::from(values)),
            }
        };
        let server_ids = || rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>();
        let tool_names = || rows.iter().map(|r| r.1.as_str()).collect::<Vec<_>>();
        let n = rows.len();
        for (server_layout, name_layout) in [(0, 0), (1, 1), (0, 1), (1, 0), (2, 2), (0, 2), (2, 1)] {
            let (servers, names) = (column(server_ids(), server_layout, false), column(tool_names(), name_layout, false));
            let (general_servers, general_names) =
                (column(server_ids(), server_layout, true), column(tool_names(), name_layout, true));
            let general = decide(&f, &[general_servers], &[general_names], Some(1)).unwrap();
            assert_eq!(general[..n], want[..], "the general loop");
            for threads in [Some(1), Some(3)] {
                assert_eq!(decide(&f, std::slice::from_ref(&servers), std::slice::from_ref(&names), threads).unwrap(), want);
            }
            let (s_chunks, n_chunks) = ([servers.slice(0, 100), servers.slice(100, n - 100)], [names.slice(0, 4_000), names.slice(4_000, n - 4_000)]);
            assert_eq!(decide(&f, &s_chunks, &n_chunks, Some(2)).unwrap(), want);
            assert_eq!(decide(&f, &[servers.slice(7, 5_000)], &[names.slice(7, 5_000)], Some(1)).unwrap(), want[7..5_007]);
        }
    }

    /// Clean encoded chunks (no nulls anywhere) take the loop of
    /// their own ([`decide_checked`]): server ids dictionary-encoded (every
    /// key type, interleaved and in runs) or run-end-encoded (every end
    /// type), names plain or dictionary-encoded, whole, in chunks cut inside
    /// runs and sliced, on one thread and three: each row as scalar.
    #[test]
    fn checked_encodings_decide_as_the_general_loop() {
        let f = filter(&["s1*/*", "*/read_*", "*k3*", "a*b", "\u{130}*"], &["s2*/Delete*", "*/*_V2", "*\u{212a}*", "x.*"]);
        let words = ["read_a", "Delete-b", "y_v2", "k3", "ak3b", "\u{130}x", "\u{212a}", "X-y", "", "a/b:c*", "\0"];
        for interleaved in [false, true] {
            let rows: Vec<(String, String)> = (0..6_000)
                .map(|i| {
                    let server = if interleaved { i % 37 } else { i / 7 % 37 };
                    (format!("s{server}"), format!("{}_{}", words[i % words.len()], i % 23))
                })
                .collect();
            let want: Vec<Outcome> = rows.iter().map(|(s, n)| scalar(&f, Some(s), Some(n))).collect();
            let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
            let tool_names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
            let mut servers: Vec<ArrayRef> = vec![
                Arc::new(ids.iter().copied().collect::<DictionaryArray<Int8Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<UInt8Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<Int16Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<UInt16Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<Int32Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<UInt32Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<Int64Type>>()),
                Arc::new(ids.iter().copied().collect::<DictionaryArray<UInt64Type>>()),
            ];
            if !interleaved {
                // One run a server's seven rows, its id among large strings.
                let ends: Vec<usize> = (1..=rows.len().div_ceil(7)).map(|r| (r * 7).min(rows.len())).collect();
                let values: ArrayRef = Arc::new(LargeStringArray::from_iter_values(ids.iter().step_by(7)));
                servers.push(run_encoded::<Int16Type>(&ends, values.clone()));
                servers.push(run_encoded::<Int32Type>(&ends, values.clone()));
                servers.push(run_encoded::<Int64Type>(&ends, values));
            }
            let names: [ArrayRef; 3] = [
                Arc::new(StringArray::from(tool_names.clone())),
                Arc::new(LargeStringArray::from(tool_names.clone())),
                Arc::new(tool_names.iter().copied().collect::<DictionaryArray<Int16Type>>()),
            ];
            let n = rows.len();
            for s in &servers {
                for names in &names {
                    let (s, names) = (std::slice::from_ref(s), std::slice::from_ref(names));
                    for threads in [Some(1), Some(3)] {
                        assert_eq!(decide(&f, s, names, threads).unwrap(), want, "{:?} {:?}", s[0].data_type(), names[0].data_type());
                    }
                    let (s, names) = (&s[0], &names[0]);
                    let s_chunks = [s.slice(0, 101), s.slice(101, n - 101)];
                    let n_chunks = [names.slice(0, 4_003), names.slice(4_003, n - 4_003)];
                    assert_eq!(decide(&f, &s_chunks, &n_chunks, Some(2)).unwrap(), want);
                    assert_eq!(decide(&f, &[s.slice(9, 5_000)], &[names.slice(9, 5_000)], Some(1)).unwrap(), want[9..5_009]);
                }
            }
        }
    }

    /// A name dictionary's answers, kept by the filter for its next batch,
    /// are found again only for a dictionary of the same names: not for
    /// one of the same bytes cut at other places, nor of the same cuts
    /// over other bytes; chunks of one dictionary share them, and chunks of
    /// others do not.
    #[test]
    fn name_lists_are_found_again_by_their_names_alone() {
        let f = filter(&["*/read_*"], &["*/*_v2"]);
        let lists: [&[&str]; 4] = [
            &["read_x_v2", "read_y"],
            // The same bytes, cut elsewhere.
            &["read_x_", "v2read_y"],
            // The same cuts, other bytes.
            &["read_x_v3", "read_y"],
            &["read_x_v2", "read_y"],
        ];
        let keys: Vec<u8> = (0..3_000).map(|i| u8::from(i % 3 == 0)).collect();
        let server = StringArray::from(vec!["s"; keys.len()]);
        for threads in [Some(1), Some(3)] {
            for names in lists {
                let values: ArrayRef = Arc::new(StringArray::from(names.to_vec()));
                let column = encoded::<Int8Type>(&keys.iter().map(|&k| Some(k)).collect::<Vec<_>>(), values);
                let want: Vec<Outcome> = keys.iter().map(|&k| scalar(&f, Some("s"), Some(names[usize::from(k)]))).collect();
                let servers: ArrayRef = Arc::new(server.clone());
                assert_eq!(decide(&f, std::slice::from_ref(&servers), std::slice::from_ref(&column), threads).unwrap(), want, "{names:?}");
                // Chunks of this dictionary, and a chunk of another after them.
                let other: ArrayRef = Arc::new(StringArray::from(vec!["read_x_", "v2read_y"]));
                let other = encoded::<Int8Type>(&[Some(0), Some(1), Some(0)], other);
                let chunks = [column.slice(0, 1_000), column.slice(1_000, 2_000), other];
                let servers: ArrayRef = Arc::new(StringArray::from(vec!["s"; keys.len() + 3]));
                let mut want = want;
                want.extend(["read_x_", "v2read_y", "read_x_"].map(|n| scalar(&f, Some("s"), Some(n))));
                assert_eq!(decide(&f, &[servers], &chunks, threads).unwrap(), want, "{names:?}");
            }
        }
    }

    /// `servers`, an encoding of `plain`, decides as `plain` does: on one
    /// thread and three, in two chunks cut at row `cut`, sliced (rows 5 to
    /// 5 before the end), and as the names column against `names`.
    fn decides_as_plain(f: &StaticFilter, servers: &ArrayRef, plain: &ArrayRef, names: &ArrayRef, cut: usize) {
        let one = std::slice::from_ref;
        let want = decide(f, one(plain), one(names), Some(1)).unwrap();
        for threads in [Some(1), Some(3)] {
            assert_eq!(decide(f, one(servers), one(names), threads).unwrap(), want);
        }
        let n = servers.len();
        let chunks = [servers.slice(0, cut), servers.slice(cut, n - cut)];
        assert_eq!(decide(f, &chunks, one(names), Some(2)).unwrap(), want);
        assert_eq!(decide(f, &[servers.slice(5, n - 10)], &[names.slice(5, n - 10)], Some(1)).unwrap(), want[5..n - 5]);
        let got = decide(f, one(names), one(servers), Some(1)).unwrap();
        assert_eq!(got, decide(f, one(names), one(plain), Some(1)).unwrap());
    }

    /// Dictionary-encoded columns of every key type, sliced, with null keys
    /// and null values, in either column: each row as its plain column.
    #[test]
    fn dictionaries_decide_as_their_plain_columns() {
        let f = filter(&["s1/*", "*/read_*", "*long*"], &["*/Delete*", "s2/*_V2"]);
        let pool = [Some("s2"), Some("s1"), None, Some("a server id well past twelve bytes, long"), Some("ΣΑΣ"), Some("s3")];
        let keys: Vec<Option<u8>> = (0..60u8).map(|i| if i % 13 == 7 { None } else { Some((i / 3) % 6) }).collect();
        let decoded: Vec<Option<&str>> = keys.iter().map(|k| k.and_then(|k| pool[k as usize])).collect();
        let names: Vec<Option<&str>> =
            (0..60).map(|i| [Some("read_a"), Some("x_v2"), Some("Delete-b"), None, Some("long")][i % 5]).collect();
        let plain: ArrayRef = Arc::new(StringArray::from(decoded.clone()));
        let names: ArrayRef = Arc::new(StringArray::from(names));
        let dictionaries: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(pool.to_vec())),
            Arc::new(LargeStringArray::from(pool.to_vec())),
            views(&pool),
            // The dictionary sliced: key 0 is its row 2 of the unsliced array.
            Arc::new(StringArray::from([&[Some("x"), Some("y")][..], &pool[..]].concat()).slice(2, 6)),
        ];
        for values in dictionaries {
            let columns = [
                encoded::<Int8Type>(&keys, values.clone()),
                encoded::<UInt8Type>(&keys, values.clone()),
                encoded::<Int16Type>(&keys, values.clone()),
                encoded::<UInt16Type>(&keys, values.clone()),
                encoded::<Int32Type>(&keys, values.clone()),
                encoded::<UInt32Type>(&keys, values.clone()),
                encoded::<Int64Type>(&keys, values.clone()),
                encoded::<UInt64Type>(&keys, values.clone()),
            ];
            for servers in columns {
                // Two chunks sharing one dictionary, cut at row 25.
                decides_as_plain(&f, &servers, &plain, &names, 25);
                let columns = Columns::new(std::slice::from_ref(&servers), std::slice::from_ref(&names)).unwrap();
                assert_eq!(columns.row(4).unwrap(), (decoded[4].map(str::as_bytes), Some(&b"long"[..])));
                assert_eq!(columns.row(7).unwrap().0, None);
            }
        }
        // A dictionary value that is not UTF-8 is refused at the first row
        // that uses it; one no row uses is not read.
        let bad = raw_strings(vec![0, 1, 3], b"a\xC3(");
        let servers = encoded::<Int32Type>(&[Some(0), Some(1)], bad.clone());
        let two: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
        assert_eq!(decide(&f, &[servers], std::slice::from_ref(&two), None), Err(ArrowIssue::NotUtf8(Column::ServerIds, 1)));
        let servers = encoded::<Int32Type>(&[Some(0), Some(0)], bad);
        assert_eq!(decide(&f, &[servers], std::slice::from_ref(&two), None).unwrap().len(), 2);
        // A filter that depends on nothing answers a clean dictionary chunk
        // unread, and still hides a key to a null value.
        let f = filter(&[], &[]);
        let shown = f.constant_outcome().unwrap();
        let clean = encoded::<Int8Type>(&[Some(1), Some(0)], Arc::new(StringArray::from(vec!["a", "b"])));
        assert_eq!(decide(&f, &[clean], std::slice::from_ref(&two), None).unwrap(), [shown, shown]);
        let null_value = encoded::<Int8Type>(&[Some(1), Some(0)], Arc::new(StringArray::from(vec![Some("a"), None])));
        assert_eq!(decide(&f, &[null_value], std::slice::from_ref(&two), None).unwrap(), [Outcome::Hidden, shown]);
    }

    /// Run-end-encoded columns of every run-end type, sliced (the slice
    /// starting and ending inside runs), with null values, as either column:
    /// each row as its plain column.
    #[test]
    fn runs_decide_as_their_plain_columns() {
        let f = filter(&["s1/*", "*/read_*", "*long*"], &["*/Delete*", "s2/*_V2"]);
        let pool = [Some("s2"), Some("s1"), None, Some("a server id well past twelve bytes, long"), Some("ΣΑΣ"), Some("s1")];
        let ends = [3usize, 4, 9, 20, 21, 40];
        let decoded: Vec<Option<&str>> = (0..40).map(|i| pool[ends.partition_point(|&e| e <= i)]).collect();
        let names: Vec<Option<&str>> =
            (0..40).map(|i| [Some("read_a"), Some("x_v2"), Some("Delete-b"), None, Some("long")][i % 5]).collect();
        let plain: ArrayRef = Arc::new(StringArray::from(decoded));
        let names: ArrayRef = Arc::new(StringArray::from(names));
        for values in [Arc::new(StringArray::from(pool.to_vec())) as ArrayRef, views(&pool)] {
            for servers in [
                run_encoded::<Int16Type>(&ends, values.clone()),
                run_encoded::<Int32Type>(&ends, values.clone()),
                run_encoded::<Int64Type>(&ends, values.clone()),
            ] {
                // Cut inside a run (rows 4..9).
                decides_as_plain(&f, &servers, &plain, &names, 7);
            }
        }
        // A constant filter: a clean run chunk answered unread; a run of a
        // null value still hidden.
        let f = filter(&[], &[]);
        let shown = f.constant_outcome().unwrap();
        let two: ArrayRef = Arc::new(StringArray::from(vec!["x", "y", "z"]));
        let clean = run_encoded::<Int32Type>(&[2, 3], Arc::new(StringArray::from(vec!["a", "b"])));
        assert_eq!(decide(&f, &[clean], std::slice::from_ref(&two), None).unwrap(), [shown; 3]);
        let null_run = run_encoded::<Int32Type>(&[2, 3], Arc::new(StringArray::from(vec![None, Some("b")])));
        assert_eq!(decide(&f, &[null_run], std::slice::from_ref(&two), None).unwrap(), [Outcome::Hidden, Outcome::Hidden, shown]);
        let mut keys = Keys::I32(&[3, 4, 9]);
        assert_eq!([0, 2, 3, 4, 8, 9].map(|row| keys.run_from(row, 1)), [0, 0, 1, 2, 2, 3]);
        keys = Keys::I64(&[]);
        assert_eq!(keys.run_from(0, 0), 0);
    }

    /// `got` is `want`, or the first row where it is not, named.
    fn same_rows(got: Result<Vec<Outcome>, ArrowIssue>, want: &[Outcome], threads: Option<usize>) {
        let got = got.unwrap();
        assert_eq!(got.len(), want.len());
        if let Some(row) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("row {row} on {threads:?} threads: {:?}, not {:?}", got[row], want[row]);
        }
    }

    /// A name column encoded (dictionaries, runs) under patterns whose
    /// every-server groups are indexed (more than four globs each side),
    /// over hostile names: each row as the plain column and the scalar path
    /// decide it. The dictionaries of the chunks differ (the second is the
    /// first reversed, so a key names another name there), keys repeat,
    /// some are null, some values no key names and one is null; rows past
    /// the 4,096 after which a thread tries the memo, and (the filter's
    /// batches past 16,384 tools in all from its second on) through the
    /// shortcuts.
    #[test]
    fn encoded_names_decide_as_plain_and_scalar() {
        let f = filter(
            &["read_*", "*_file", "*issue*", "get*by*id", "*/list_*", "Σ*", "*\u{212a}*", "*:*", "s1/*", "s2/x*", "İ"],
            &["*delete*", "*/drop_*", "*\0*", "a/b*", "*σ", "k*", "*.v2", "s3/*"],
        );
        assert!(f.include().every_shortcut().is_some() && f.exclude().every_shortcut().is_some());
        let long = format!("read_{}", "Σ/".repeat(150));
        let mut pool: Vec<Option<String>> = [
            "read_a", "x:y", "*", "a/b", "İ", "ΣΑΣ", "\u{212a}", "k\0", "", "get_by_id", "list_issue", "drop_x",
            "my_file", "Delete-Repo", "σ", "x_V2", "a name well past twenty-four bytes, read_", "s1", "İssue",
        ]
        .iter()
        .flat_map(|n| [n.to_string(), format!("{n}_file"), format!("x{n}.V2"), format!("{n}:Σ")])
        .map(Some)
        .collect();
        pool.push(Some(long));
        pool.insert(7, None);
        let values = |pool: &[Option<String>]| -> ArrayRef { Arc::new(StringArray::from(pool.to_vec())) };
        let mut next = crate::test_rng::below(0x3C6E_F372_FE94_F82B);
        let n = 10_000;
        // Keys into `pool`, none to every tenth value (unused), some null.
        let keys: Vec<Option<u8>> = (0..n)
            .map(|i| (i % 29 != 3).then(|| (next(pool.len() as u64 / 10) * 10 + 1 + next(9)).min(pool.len() as u64 - 1) as u8))
            .collect();
        let decoded: Vec<Option<&str>> = keys.iter().map(|k| k.and_then(|k| pool[usize::from(k)].as_deref())).collect();
        let ids = [Some("s1"), Some("s2"), Some("s3"), Some("a"), Some("ΣΑΣ"), Some("*"), None];
        let servers: Vec<Option<&str>> = (0..n).map(|i| ids[(i * 7 + i / 100) % ids.len()]).collect();
        let want: Vec<Outcome> = servers.iter().zip(&decoded).map(|(s, n)| scalar(&f, *s, *n)).collect();
        assert!(want.iter().filter(|&&o| o == Outcome::Visible).count() > n / 10);
        assert!(want.iter().filter(|&&o| o == Outcome::Hidden).count() > n / 10);
        let servers: ArrayRef = Arc::new(StringArray::from(servers));
        let plain: ArrayRef = Arc::new(StringArray::from(decoded.clone()));
        // Chunks of rows 0..3000, 3000..7000 and 7000..: the first dictionary,
        // the same reversed (its keys turned to match), the first as views
        // with keys of another type.
        let reversed: Vec<Option<String>> = pool.iter().rev().cloned().collect();
        let turned: Vec<Option<u8>> = keys[3000..7000].iter().map(|k| k.map(|k| (pool.len() - 1) as u8 - k)).collect();
        let dictionaries = [
            encoded::<Int32Type>(&keys[..3000], values(&pool)),
            encoded::<Int16Type>(&turned, values(&reversed)),
            encoded::<UInt8Type>(&keys[7000..], views(&pool.iter().map(Option::as_deref).collect::<Vec<_>>())),
        ];
        // One dictionary for all rows, sliced: the keys of rows 0..n, from row 2.
        let padded: Vec<Option<u8>> = [None, Some(0)].into_iter().chain(keys.iter().copied()).collect();
        let sliced = encoded::<UInt16Type>(&padded, values(&pool)).slice(2, n);
        // Runs of the decoded names: sorted, so that runs are long, and as they come.
        let runs_of = |names: &[Option<&str>]| -> ArrayRef {
            let (mut ends, mut run_values): (Vec<usize>, Vec<Option<&str>>) = (Vec::new(), Vec::new());
            for (i, name) in names.iter().enumerate() {
                if run_values.last() == Some(name) {
                    *ends.last_mut().unwrap() = i + 1;
                } else {
                    ends.push(i + 1);
                    run_values.push(*name);
                }
            }
            run_encoded::<Int32Type>(&ends, Arc::new(StringArray::from(run_values)))
        };
        let mut sorted = decoded.clone();
        sorted.sort();
        let sorted_want: Vec<Outcome> = (0..n).map(|i| scalar(&f, Some(["s1", "s2", "a"][i % 3]), sorted[i])).collect();
        let sorted_servers: ArrayRef = Arc::new(StringArray::from((0..n).map(|i| ["s1", "s2", "a"][i % 3]).collect::<Vec<_>>()));
        let sorted_plain: ArrayRef = Arc::new(StringArray::from(sorted.clone()));
        for threads in [Some(1), Some(2)] {
            let one = std::slice::from_ref;
            same_rows(decide(&f, one(&servers), one(&plain), threads), &want, threads);
            same_rows(decide(&f, one(&servers), &dictionaries, threads), &want, threads);
            same_rows(decide(&f, one(&servers), one(&sliced), threads), &want, threads);
            same_rows(decide(&f, one(&servers), &[runs_of(&decoded[..5000]), runs_of(&decoded[5000..])], threads), &want, threads);
            same_rows(decide(&f, one(&sorted_servers), one(&sorted_plain), threads), &sorted_want, threads);
            same_rows(decide(&f, one(&sorted_servers), one(&runs_of(&sorted)), threads), &sorted_want, threads);
            // Both columns encoded, the names chunked unlike the servers.
            let encoded_servers = encoded::<Int8Type>(&(0..n).map(|i| Some((i % 3) as u8)).collect::<Vec<_>>(), Arc::new(StringArray::from(vec!["s1", "s2", "a"])));
            let sorted_keys: Vec<Option<u8>> = sorted.iter().map(|s| s.map(|s| pool.iter().position(|v| v.as_deref() == Some(s)).unwrap() as u8)).collect();
            let names = [encoded::<Int32Type>(&sorted_keys[..4321], values(&pool)), encoded::<Int32Type>(&sorted_keys[4321..], values(&pool))];
            same_rows(decide(&f, one(&encoded_servers), &names, threads), &sorted_want, threads);
        }
    }

    /// Annotation patterns get no hints from columns: every hint missing,
    /// as the pair batches decide.
    #[test]
    fn annotation_patterns_see_every_hint_missing() {
        use crate::hints::HintPattern;
        let read_only = HintPattern { want: [Some(true), None, None, None], trusted: vec!["s"] };
        let f = StaticFilter::compile(&["s/keep"], &[], &[], &[], false).unwrap().with_hints(&[read_only], &[]);
        let servers: ArrayRef = Arc::new(StringArray::from(vec!["s", "s"]));
        let names: ArrayRef = Arc::new(StringArray::from(vec!["keep", "other"]));
        let want: Vec<Outcome> = ["keep", "other"]
            .iter()
            .map(|n| f.outcome(f.flags_with_hints(b"s", n.as_bytes(), 0, &mut FlagScratch::default())))
            .collect();
        assert_eq!(want, [Outcome::Visible, Outcome::Hidden]);
        assert_eq!(decide(&f, &[servers], &[names], None).unwrap(), want);
    }

    /// A string array built from raw parts, unchecked, as a careless
    /// producer could hand one over through the C data interface.
    fn raw_strings(offsets: Vec<i32>, values: &[u8]) -> ArrayRef {
        use arrow_array::array::StringArray;
        use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
        // SAFETY: not upheld on purpose (offsets past the values, bytes that
        // are not UTF-8): the arrays are only read by this module's checked
        // access, whose refusal of them is what the tests check.
        unsafe {
            let offsets = OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets));
            Arc::new(StringArray::new_unchecked(offsets, Buffer::from(values.to_vec()), None))
        }
    }

    #[test]
    fn issues_name_the_column_and_row() {
        let f = filter(&[], &[]);
        let ok: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let short: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        assert_eq!(decide(&f, std::slice::from_ref(&ok), &[short], None), Err(ArrowIssue::Lengths(2, 1)));
        let ints: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![1, 2]));
        assert!(matches!(decide(&f, &[ints], std::slice::from_ref(&ok), None), Err(ArrowIssue::NotStrings(Column::ServerIds, _))));
        // Not UTF-8, in either column, whatever the filter reads: refused.
        let bad = raw_strings(vec![0, 1, 3], b"a\xC3(");
        assert_eq!(decide(&f, std::slice::from_ref(&ok), std::slice::from_ref(&bad), None), Err(ArrowIssue::NotUtf8(Column::Names, 1)));
        assert_eq!(decide(&f, std::slice::from_ref(&bad), std::slice::from_ref(&ok), None), Err(ArrowIssue::NotUtf8(Column::ServerIds, 1)));
        // A character split across two values is not UTF-8 either.
        let split = raw_strings(vec![0, 1, 2], "é".as_bytes());
        assert_eq!(decide(&f, std::slice::from_ref(&ok), &[split], None), Err(ArrowIssue::NotUtf8(Column::Names, 0)));
        // Offsets past the values, or going back: refused, not read.
        for offsets in [vec![0, 1, 9], vec![0, 2, 1]] {
            let malformed = raw_strings(offsets, b"ab");
            assert_eq!(decide(&f, std::slice::from_ref(&ok), &[malformed], Some(1)), Err(ArrowIssue::Malformed(Column::Names, 1)));
        }
        let long = views(&[Some("a value longer than twelve bytes")]);
        let long = long.as_any().downcast_ref::<StringViewArray>().unwrap();
        // SAFETY: as `raw_strings`: a view past its data buffer, read only
        // by the checked access under test.
        let cut: ArrayRef = Arc::new(unsafe {
            StringViewArray::new_unchecked(long.views().clone(), vec![arrow_buffer::Buffer::from(&b"short"[..])], None)
        });
        assert_eq!(decide(&f, &[ok.slice(0, 1)], &[cut], None), Err(ArrowIssue::Malformed(Column::Names, 0)));
    }

    #[test]
    fn blocks_shared_by_threads_decide_as_scalar_and_fail_at_the_first_bad_row() {
        // 40,000 rows, servers interleaved (as a listing sorted by name), so
        // that every block meets servers another thread met first.
        let n = 40_000;
        let servers: Vec<String> = (0..n).map(|i| format!("srv{}", (i * 7919) % 613)).collect();
        let names: Vec<String> = (0..n).map(|i| format!("{}_{}", ["read", "write", "DELETE", "list.all"][i % 4], (i * 31) % 997)).collect();
        let f = filter(&["srv1*/read_*", "*/list.all_*", "srv4??/*_7*"], &["*/*_99", "srv12/*"]);
        let want: Vec<Outcome> = servers.iter().zip(&names).map(|(s, t)| scalar(&f, Some(s), Some(t))).collect();
        let column = |values: &[String]| -> ArrayRef { Arc::new(StringArray::from_iter_values(values)) };
        let (server_column, name_column) = (column(&servers), column(&names));
        // Three chunks of the names, cut away from the blocks' bounds.
        let name_chunks: Vec<ArrayRef> = vec![name_column.slice(0, 9_001), name_column.slice(9_001, 20_000), name_column.slice(29_001, n - 29_001)];
        for threads in [Some(1), Some(2), Some(3), Some(8), None] {
            if threads != Some(1) {
                assert!(block_len(n, threads.unwrap_or(2)) < n, "the rows are cut into blocks");
            }
            same_rows(decide(&f, std::slice::from_ref(&server_column), std::slice::from_ref(&name_column), threads), &want, threads);
            same_rows(decide(&f, std::slice::from_ref(&server_column), &name_chunks, threads), &want, threads);
        }
        // Bytes that are not UTF-8 in rows of several blocks: the first by
        // row is the issue, whichever thread met which first.
        let with_bad = |bad: &[usize]| -> ArrayRef {
            let mut offsets = vec![0i32];
            let mut values = Vec::new();
            for (i, name) in names.iter().enumerate() {
                values.extend_from_slice(if bad.contains(&i) { b"x\xFF" } else { name.as_bytes() });
                offsets.push(values.len() as i32);
            }
            raw_strings(offsets, &values)
        };
        for bad in [vec![n - 1], vec![31_000, 12_345, 39_000], vec![0, 20_000], vec![8_192, 8_191], vec![5_000, 14_999], vec![9_999, 10_000]] {
            let first = *bad.iter().min().unwrap();
            let bad_names = with_bad(&bad);
            for threads in [Some(1), Some(2), Some(5), None] {
                for _ in 0..5 {
                    let got = decide(&f, std::slice::from_ref(&server_column), std::slice::from_ref(&bad_names), threads);
                    assert_eq!(got, Err(ArrowIssue::NotUtf8(Column::Names, first)), "{bad:?} on {threads:?} threads");
                }
            }
        }
    }
}
