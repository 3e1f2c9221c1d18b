//! Checks of Arrow C data interface structures before they are imported.
//!
//! A producer hands a column over as two C structures, an `ArrowSchema`
//! (the type, as a format string) and an `ArrowArray` (lengths, buffer
//! pointers, children). The interface carries no buffer sizes: how far each
//! buffer reaches is implied by the structure itself (an offsets buffer holds
//! `offset + length + 1` offsets, the values buffer at least the bytes up to
//! the last of them, a validity bitmap `offset + length` bits, a view's data
//! buffer the size listed for it). Those implied extents, and the pointers,
//! are what no consumer can check and this one trusts; everything else is
//! read and checked here, before `arrow-array` builds an array over it (its
//! import trusts the structures whole: a negative offset or a missing buffer
//! would be read as it stands).
//!
//! Only the layouts the columnar path decides are accepted: `utf8` (`u`),
//! `large_utf8` (`U`) and `utf8_view` (`vu`), without children, and a
//! dictionary-encoded column whose keys are any integer type and whose
//! dictionary is one of those string layouts (every valid key checked to
//! lie inside the dictionary), and a run-end-encoded one (`+r`) of int16,
//! int32 or int64 run ends over values of one of them (the run ends
//! checked to rise from 1 to the array's end). The structures are read through mirrors of the C declarations
//! (the interface fixes their layout), so that nothing here calls into
//! `arrow-array`'s accessors, some of which panic or read unchecked.

use std::ffi::{c_char, c_void, CStr};
use std::fmt;

use arrow_array::array::{make_array, ArrayRef};
use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};

/// The C declaration of `struct ArrowSchema`.
#[repr(C)]
struct RawSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut RawSchema,
    dictionary: *mut RawSchema,
    release: Option<unsafe extern "C" fn(*mut RawSchema)>,
    private_data: *mut c_void,
}

/// The C declaration of `struct ArrowArray`.
#[repr(C)]
struct RawArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut RawArray,
    dictionary: *mut RawArray,
    release: Option<unsafe extern "C" fn(*mut RawArray)>,
    private_data: *mut c_void,
}

// The crate's structures are the same C declarations.
const _: () = assert!(std::mem::size_of::<RawSchema>() == std::mem::size_of::<FFI_ArrowSchema>());
const _: () = assert!(std::mem::size_of::<RawArray>() == std::mem::size_of::<FFI_ArrowArray>());

/// The string layouts the columnar path decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `u`: 32-bit offsets.
    Utf8,
    /// Integer keys of the given type (their format) into a dictionary of
    /// one of the other layouts.
    Dictionary(Key),
    /// `+r`: run ends of the given type (int16, int32, int64) over values
    /// of one of the string layouts, as two children.
    RunEnds(Key),
    /// `U`: 64-bit offsets.
    LargeUtf8,
    /// `vu`: 16-byte views over variadic data buffers.
    Utf8View,
}

/// The integer type of a dictionary's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl Key {
    fn of(format: &[u8]) -> Option<Key> {
        Some(match format {
            b"c" => Key::I8,
            b"C" => Key::U8,
            b"s" => Key::I16,
            b"S" => Key::U16,
            b"i" => Key::I32,
            b"I" => Key::U32,
            b"l" => Key::I64,
            b"L" => Key::U64,
            _ => return None,
        })
    }

    fn width(self) -> i64 {
        match self {
            Key::I8 | Key::U8 => 1,
            Key::I16 | Key::U16 => 2,
            Key::I32 | Key::U32 => 4,
            Key::I64 | Key::U64 => 8,
        }
    }

    /// Whether keys `start..start + len` of a keys buffer all lie in
    /// `0..size`: compared a block at a time, without an early exit inside
    /// a block (loops the compiler turns into vector compares).
    ///
    /// # Safety
    /// `keys` points to at least `start + len` keys of this type.
    // SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
    unsafe fn all_inside(self, keys: *const c_void, start: usize, len: usize, size: i64) -> bool {
        /// # Safety
        /// As for `all_inside`, keys of type `T`.
        // SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
        unsafe fn each<T: KeyBits>(keys: *const c_void, start: usize, len: usize, size: i64) -> bool {
            // SAFETY: the caller's promise: `i < start + len`.
            let bits = |i: usize| unsafe { read::<T>(keys, start + i) }.bits();
            // Not negative: checked with the array's other fields.
            all_below_by::<T>(len, size.max(0) as u64, bits)
        }
        // SAFETY: the caller's promise, for the type of this arm.
        unsafe {
            match self {
                Key::I8 => each::<i8>(keys, start, len, size),
                Key::U8 => each::<u8>(keys, start, len, size),
                Key::I16 => each::<i16>(keys, start, len, size),
                Key::U16 => each::<u16>(keys, start, len, size),
                Key::I32 => each::<i32>(keys, start, len, size),
                Key::U32 => each::<u32>(keys, start, len, size),
                Key::I64 => each::<i64>(keys, start, len, size),
                Key::U64 => each::<u64>(keys, start, len, size),
            }
        }
    }

    /// Key `i` of a keys buffer, widened.
    ///
    /// # Safety
    /// `keys` points to at least `i + 1` keys of this type.
    // SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
    unsafe fn read(self, keys: *const c_void, i: usize) -> i128 {
        // SAFETY: the caller's promise, for the one read of each arm.
        unsafe {
            match self {
                Key::I8 => i128::from(read::<i8>(keys, i)),
                Key::U8 => i128::from(read::<u8>(keys, i)),
                Key::I16 => i128::from(read::<i16>(keys, i)),
                Key::U16 => i128::from(read::<u16>(keys, i)),
                Key::I32 => i128::from(read::<i32>(keys, i)),
                Key::U32 => i128::from(read::<u32>(keys, i)),
                Key::I64 => i128::from(read::<i64>(keys, i)),
                Key::U64 => i128::from(read::<u64>(keys, i)),
            }
        }
    }
}

/// What is wrong with a pair of structures, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportIssue {
    /// The schema or the array is already released (its `release` is NULL).
    Released(&'static str),
    /// The schema's format string is NULL.
    NoFormat,
    /// A format this path does not decide: the type it names, as Arrow
    /// writes it where known, and the format string (escaped).
    Format(String),
    /// A dictionary whose values are themselves dictionary-encoded.
    Dictionary,
    /// A dictionary whose keys are not integers (the type of the keys).
    KeyType(String),
    /// The schema declares a dictionary the array does not carry.
    NoDictionary,
    /// What is wrong with a part of the array (`.0`: its dictionary, its
    /// run ends, its values).
    Inside(&'static str, Box<ImportIssue>),
    /// Run ends not of int16, int32 or int64 (their type).
    RunEndType(String),
    /// Run end `.0` (of the run ends' rows) is `.1`, not above the one before it (`.2`; 0 before the first).
    RunEnds(usize, i64, i64),
    /// The runs end at `.0`, before the array's `offset + length` (`.1`).
    RunsShort(i64, i64),
    /// A run end is null (`.0` of them).
    RunEndNulls(u64),
    /// The run ends and the values differ in length (`.0`, `.1`).
    RunLengths(i64, i64),
    /// Row `.0`'s key, `.1`, lies outside the dictionary's `.2` values.
    KeyRange(usize, i128, i64),
    /// `arrow-array` refused the checked structures (its words).
    Arrow(String),
    /// The schema or the array has children (`.1`), which strings have not.
    Children(&'static str, i64),
    /// The array carries a dictionary though its schema has none.
    ArrayDictionary,
    /// A field of the array that must not be negative (`.1` its value).
    Negative(&'static str, i64),
    /// `offset + length` (or the bytes its buffers span) overflows.
    Overflow,
    /// `n_buffers` is `.1` where the layout has `.0`.
    BufferCount(String, i64),
    /// Buffer `.0` (`.1`, what it holds) is NULL though the array needs it.
    NullBuffer(usize, &'static str),
    /// `null_count` is `.0` but the validity bitmap counts `.1` nulls (None: no bitmap).
    NullCount(i64, Option<u64>),
    /// `null_count` exceeds `length`.
    NullCountOverLength(i64, i64),
    /// The first offset of the array, `.0`, is negative.
    FirstOffset(i64),
    /// Offset `.0` (of the array's rows, from 0) is `.1`, below the one before it (`.2`).
    Backwards(usize, i64, i64),
    /// The size of data buffer `.0` is negative (`.1`).
    DataSize(usize, i64),
    /// Row `.0`'s view has a negative length (`.1`).
    ViewLength(usize, i64),
    /// Row `.0`'s view names data buffer `.1`; there are `.2`.
    ViewBuffer(usize, i64, usize),
    /// Row `.0`'s view spans bytes `.1..` of `.2` bytes past the end of its data buffer (`.3` bytes).
    ViewRange(usize, i64, i64, i64),
    /// Row `.0`'s view's four-byte prefix differs from its data.
    ViewPrefix(usize),
}

impl fmt::Display for ImportIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ImportIssue::*;
        match self {
            Released(what) => write!(f, "the {what} is already released"),
            NoFormat => write!(f, "the schema's format string is NULL"),
            Format(kind) => write!(f, "{kind} is not a string layout this path decides"),
            Dictionary => write!(f, "a dictionary of dictionary-encoded values is not decided here: decode it first (e.g. pyarrow's `.dictionary_decode()`)"),
            KeyType(kind) => write!(f, "a dictionary's keys must be integers, not {kind}"),
            NoDictionary => write!(f, "the schema declares a dictionary the array does not carry"),
            Inside(what, issue) => write!(f, "{what}: {issue}"),
            RunEndType(kind) => write!(f, "run ends must be int16, int32 or int64, not {kind}"),
            RunEnds(at, value, before) => write!(
                f,
                "run end {at} ({value}) is not above the one before it ({before}): run ends must increase from 1"
            ),
            RunsShort(last, end) => {
                write!(f, "the runs end at row {last}, before the array's offset + length ({end})")
            }
            RunEndNulls(n) => write!(f, "{n} of its run ends are null: a run end never is"),
            RunLengths(ends, values) => {
                write!(f, "the run ends ({ends}) and the values ({values}) differ in length")
            }
            KeyRange(row, key, len) if *key < 0 => {
                write!(f, "row {row}'s dictionary key is negative ({key}); the dictionary holds {len} values")
            }
            KeyRange(row, key, len) => {
                write!(f, "row {row}'s dictionary key is {key}, past the dictionary's {len} values")
            }
            Arrow(words) => write!(f, "{words}"),
            Children(what, n) => write!(f, "the {what} has {n} children; a string array has none"),
            ArrayDictionary => write!(f, "the array carries a dictionary its schema does not declare"),
            Negative(field, value) => write!(f, "the array's {field} is negative ({value})"),
            Overflow => write!(f, "the array's offset + length overflows"),
            BufferCount(want, got) => write!(f, "the array has {got} buffers where its layout has {want}"),
            NullBuffer(index, what) => write!(f, "buffer {index} ({what}) is NULL though the array needs it"),
            NullCount(claimed, Some(counted)) => {
                write!(f, "null_count is {claimed} but the validity bitmap holds {counted} nulls")
            }
            NullCount(claimed, None) => write!(f, "null_count is {claimed} but the array has no validity bitmap"),
            NullCountOverLength(count, length) => write!(f, "null_count ({count}) exceeds length ({length})"),
            FirstOffset(value) => write!(f, "the first offset is negative ({value})"),
            Backwards(at, value, before) => {
                write!(f, "offset {at} ({value}) is below the one before it ({before}): offsets must not decrease")
            }
            DataSize(buffer, size) => write!(f, "data buffer {buffer} has a negative size ({size})"),
            ViewLength(row, len) => write!(f, "row {row}'s view has a negative length ({len})"),
            ViewBuffer(row, index, count) => {
                write!(f, "row {row}'s view names data buffer {index}, but the array has {count}")
            }
            ViewRange(row, start, len, size) => write!(
                f,
                "row {row}'s view spans {len} bytes from byte {start} of a data buffer of {size} bytes"
            ),
            ViewPrefix(row) => write!(f, "row {row}'s view prefix differs from the bytes it points to"),
        }
    }
}

/// The type a format string names, as Arrow writes it, for the common ones,
/// with the format itself: `int32 (format "i")`.
fn type_name(format: &[u8]) -> String {
    let name = match format {
        b"n" => "null",
        b"b" => "bool",
        b"c" => "int8",
        b"C" => "uint8",
        b"s" => "int16",
        b"S" => "uint16",
        b"i" => "int32",
        b"I" => "uint32",
        b"l" => "int64",
        b"L" => "uint64",
        b"e" => "halffloat",
        b"f" => "float",
        b"g" => "double",
        b"z" => "binary",
        b"Z" => "large_binary",
        b"vz" => "binary_view",
        b"+l" => "list",
        b"+L" => "large_list",
        b"+s" => "struct",
        b"+m" => "map",
        b"+r" => "run_end_encoded",
        _ if format.starts_with(b"+u") => "union",
        _ if format.starts_with(b"w:") => "fixed_size_binary",
        _ if format.starts_with(b"+w:") => "fixed_size_list",
        _ if format.starts_with(b"d:") => "decimal",
        _ if format.starts_with(b"ts") => "timestamp",
        _ if format.starts_with(b"td") || format.starts_with(b"tt") => "date or time",
        _ => "a type",
    };
    format!("{name} (format \"{}\")", format.escape_ascii())
}

/// Reads element `i` of a buffer of `T`s, aligned or not (the interface
/// asks for alignment, but `arrow-array` copies a misaligned buffer on
/// import, so it is read as it may come).
///
/// # Safety
/// `buffer` points to at least `i + 1` initialized `T`s.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
#[inline]
unsafe fn read<T: Copy>(buffer: *const c_void, i: usize) -> T {
    // SAFETY: the caller's promise: element `i` lies in the buffer.
    unsafe { buffer.cast::<T>().add(i).read_unaligned() }
}

/// An integer key read as the unsigned integer of its width (a negative
/// one then reads above every one that is not), so that whether keys are
/// indexes below a length is one unsigned maximum, which the compiler
/// takes over many keys at once.
pub(crate) trait KeyBits: Copy {
    type Bits: Copy + Ord;
    fn bits(self) -> Self::Bits;
    /// The largest bits of a key that is an index below `len`, for `len`
    /// above 0.
    fn last_below(len: u64) -> Self::Bits;
}

macro_rules! key_bits {
    ($($key:ty => $bits:ty, $largest:expr);* $(;)?) => {
        $(impl KeyBits for $key {
            type Bits = $bits;
            #[inline(always)]
            fn bits(self) -> $bits {
                self as $bits
            }
            #[inline(always)]
            fn last_below(len: u64) -> $bits {
                // Below the type's largest key: a lossless cast.
                (len - 1).min($largest as u64) as $bits
            }
        })*
    };
}

key_bits!(
    i8 => u8, i8::MAX; u8 => u8, u8::MAX;
    i16 => u16, i16::MAX; u16 => u16, u16::MAX;
    i32 => u32, i32::MAX; u32 => u32, u32::MAX;
    i64 => u64, i64::MAX; u64 => u64, u64::MAX;
);

/// Whether every key of `keys` is an index below `len` (see [`all_below_by`]).
pub(crate) fn keys_below<K: KeyBits>(keys: &[K], len: u64) -> bool {
    all_below_by::<K>(keys.len(), len, |i| keys[i].bits())
}

/// Whether `n` keys, key `i`'s [`KeyBits`] `bits(i)`, are all indexes below
/// `len`: the largest of their bits, a block at a time.
#[inline]
fn all_below_by<K: KeyBits>(n: usize, len: u64, bits: impl Fn(usize) -> K::Bits) -> bool {
    if len == 0 {
        return n == 0;
    }
    let last = K::last_below(len);
    (0..n).step_by(1024).all(|from| (from..(from + 1024).min(n)).map(&bits).max().is_none_or(|top| top <= last))
}

/// How many bits of `bits` (a bitmap, least significant bit first) are
/// clear in `start..start + len`.
///
/// # Safety
/// `bits` points to at least `(start + len).div_ceil(8)` bytes.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn clear_bits(bits: *const c_void, start: usize, len: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    // SAFETY: the caller's promise: the bitmap reaches bit `start + len`.
    let bytes = unsafe { std::slice::from_raw_parts(bits.cast::<u8>(), (start + len).div_ceil(8)) };
    let (end, mut set) = (start + len, 0u64);
    let (first, last) = (start / 8, (end - 1) / 8);
    for (k, &byte) in bytes[first..=last].iter().enumerate() {
        let at = (first + k) * 8;
        let mut byte = u32::from(byte);
        if at < start {
            byte &= 0xFF << (start - at);
        }
        if at + 8 > end {
            byte &= 0xFF >> (at + 8 - end);
        }
        set += u64::from(byte.count_ones());
    }
    len as u64 - set
}

/// Whether row `i` (counted from the start of the buffer) is valid.
///
/// # Safety
/// `bits` is NULL or points to a bitmap that reaches bit `i`.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
#[inline]
unsafe fn valid(bits: *const c_void, i: usize) -> bool {
    // SAFETY: the caller's promise.
    bits.is_null() || unsafe { read::<u8>(bits, i / 8) } >> (i % 8) & 1 == 1
}

/// The offsets of rows `start..=start + len` go forwards from a first one
/// that is not negative (then every one lies in the values region from the
/// first to the last, which the values buffer is trusted to hold); returns
/// the last.
///
/// # Safety
/// `offsets` points to at least `start + len + 1` `O`s.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn check_offsets<O: Copy + Into<i64>>(offsets: *const c_void, start: usize, len: usize) -> Result<i64, ImportIssue> {
    // SAFETY: the caller's promise, for every read below (each at an index
    // of `start..=start + len`).
    let at = |k: usize| -> i64 { unsafe { read::<O>(offsets, start + k) }.into() };
    let first = at(0);
    if first < 0 {
        return Err(ImportIssue::FirstOffset(first));
    }
    // A block at a time, each pair compared without an early exit (a loop
    // the compiler turns into vector compares); the block that fails is
    // read again for the first offset below the one before.
    const BLOCK: usize = 256;
    let mut from = 1;
    while from <= len {
        let to = (from + BLOCK).min(len + 1);
        if !(from..to).fold(true, |ordered, k| ordered & (at(k) >= at(k - 1))) {
            if let Some(k) = (from..to).find(|&k| at(k) < at(k - 1)) {
                return Err(ImportIssue::Backwards(k, at(k), at(k - 1)));
            }
        }
        from = to;
    }
    Ok(at(len))
}

/// Checks one pair of C structures before they are imported: everything
/// the C data interface lets a consumer check, so that the import and the
/// decision read inside what the structures claim, never past it.
///
/// Checked: neither structure released; a format string of one of the
/// [`Layout`]s, no children, no dictionary in either; `length`, `offset`
/// and `n_buffers` not negative and `offset + length` (and the byte span of
/// each fixed-size buffer) without overflow; the buffer count of the
/// layout, and every buffer the rows need non-NULL; `null_count` -1
/// (unknown) or the number of clear bits of the validity bitmap over the
/// rows (0 without one); for offsets, a first one not negative and none
/// below the one before (so all lie between the first and the last, the
/// values region); for views, every size of a data buffer not negative,
/// and for every valid row, its length not negative and, when longer than
/// the twelve bytes kept inline, a data buffer that exists, a range inside
/// that buffer's listed size and a prefix equal to its first bytes.
///
/// The trust boundary: the interface carries no buffer sizes, so the
/// extents the structures imply are trusted, as any C pointer is: the
/// offsets (or views) buffer holds `offset + length + 1` offsets (`offset +
/// length` views), the bitmap `offset + length` bits, the values buffer the
/// bytes up to the last offset, each data buffer of views the size listed
/// for it, and every pointer points where the structures say. A producer in
/// the same process can break that (offsets that claim more bytes than it
/// allocated) and no check can tell; it is trusted as any code in the
/// process is. UTF-8 is not checked here: the decision checks each value.
///
/// # Safety
/// `schema` and `array` point to an `ArrowSchema` and an `ArrowArray` for
/// it, initialized by their producer (or released), alive for the call,
/// whose buffers reach as far as the structures imply (above).
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
pub unsafe fn check(schema: *const FFI_ArrowSchema, array: *const FFI_ArrowArray) -> Result<Layout, ImportIssue> {
    // SAFETY: the caller's promise: both point to initialized structures of
    // the interface, whose layout the mirrors repeat (the sizes are checked
    // at compile time).
    let (schema, array) = unsafe { (&*schema.cast::<RawSchema>(), &*array.cast::<RawArray>()) };
    // SAFETY: the caller's promise, passed on.
    unsafe { check_raw(schema, array, true) }
}

/// [`check`] over the mirrors; `outer` is false for a dictionary's values,
/// which may not be dictionary-encoded in turn.
///
/// # Safety
/// As for [`check`].
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn check_raw(schema: &RawSchema, array: &RawArray, outer: bool) -> Result<Layout, ImportIssue> {
    if schema.release.is_none() {
        return Err(ImportIssue::Released("schema"));
    }
    if array.release.is_none() {
        return Err(ImportIssue::Released("array"));
    }
    if schema.format.is_null() {
        return Err(ImportIssue::NoFormat);
    }
    // SAFETY: a live schema's format is a NUL-terminated string.
    let format = unsafe { CStr::from_ptr(schema.format) }.to_bytes();
    let layout = if schema.dictionary.is_null() {
        match format {
            b"u" => Layout::Utf8,
            b"U" => Layout::LargeUtf8,
            b"vu" => Layout::Utf8View,
            // SAFETY: the caller's promise, passed on (the children too).
            b"+r" if outer => return unsafe { check_runs(schema, array) },
            b"+r" => return Err(ImportIssue::Format(type_name(format))),
            _ => return Err(ImportIssue::Format(type_name(format))),
        }
    } else if !outer {
        return Err(ImportIssue::Dictionary);
    } else {
        Layout::Dictionary(Key::of(format).ok_or_else(|| ImportIssue::KeyType(type_name(format)))?)
    };
    if schema.n_children != 0 {
        return Err(ImportIssue::Children("schema", schema.n_children));
    }
    if array.n_children != 0 {
        return Err(ImportIssue::Children("array", array.n_children));
    }
    if !array.dictionary.is_null() && !matches!(layout, Layout::Dictionary(_)) {
        return Err(ImportIssue::ArrayDictionary);
    }
    for (field, value) in [("length", array.length), ("offset", array.offset), ("n_buffers", array.n_buffers)] {
        if value < 0 {
            return Err(ImportIssue::Negative(field, value));
        }
    }
    if array.null_count < -1 {
        return Err(ImportIssue::Negative("null_count (other than -1, unknown)", array.null_count));
    }
    if array.null_count > array.length {
        return Err(ImportIssue::NullCountOverLength(array.null_count, array.length));
    }
    let width: i64 = match layout {
        Layout::Utf8 => 4,
        Layout::LargeUtf8 => 8,
        Layout::Utf8View => 16,
        Layout::Dictionary(key) | Layout::RunEnds(key) => key.width(),
    };
    // The rows end at `offset + length`, and the fixed-size buffer spans up to
    // one element more: it must fit in memory (isize) for a slice over it.
    let end = array.offset.checked_add(array.length).ok_or(ImportIssue::Overflow)?;
    end.checked_add(1).and_then(|n| n.checked_mul(width)).ok_or(ImportIssue::Overflow)?;
    let (start, len, end) = (array.offset as usize, array.length as usize, end as usize);
    let n_buffers = array.n_buffers as usize;
    match layout {
        Layout::Dictionary(_) | Layout::RunEnds(_) if n_buffers != 2 => {
            return Err(ImportIssue::BufferCount("2 (validity, keys)".into(), array.n_buffers))
        }
        Layout::Utf8 | Layout::LargeUtf8 if n_buffers != 3 => {
            return Err(ImportIssue::BufferCount("3 (validity, offsets, values)".into(), array.n_buffers))
        }
        Layout::Utf8View if n_buffers < 3 => {
            return Err(ImportIssue::BufferCount(
                "at least 3 (validity, views, the data buffers, their sizes)".into(),
                array.n_buffers,
            ))
        }
        _ => {}
    }
    if array.buffers.is_null() {
        return Err(ImportIssue::NullBuffer(0, "the list of buffers itself"));
    }
    // SAFETY: a live array's `buffers` holds `n_buffers` pointers.
    let buffer = |i: usize| unsafe { *array.buffers.add(i) };
    let validity = buffer(0);
    if validity.is_null() {
        if array.null_count > 0 {
            return Err(ImportIssue::NullCount(array.null_count, None));
        }
    } else {
        // SAFETY: the trusted extent: the bitmap reaches bit `offset + length`.
        let nulls = unsafe { clear_bits(validity, start, len) };
        if array.null_count != -1 && array.null_count as u64 != nulls {
            return Err(ImportIssue::NullCount(array.null_count, Some(nulls)));
        }
    }
    match layout {
        Layout::Utf8 | Layout::LargeUtf8 => {
            let offsets = buffer(1);
            if offsets.is_null() {
                return Err(ImportIssue::NullBuffer(1, "offsets"));
            }
            // SAFETY: the trusted extent: `offset + length + 1` offsets.
            let last = unsafe {
                match layout {
                    Layout::Utf8 => check_offsets::<i32>(offsets, start, len),
                    _ => check_offsets::<i64>(offsets, start, len),
                }
            }?;
            // The values buffer must reach the last offset: `arrow-array`
            // takes it for the buffer's length.
            if last > 0 && len > 0 && buffer(2).is_null() {
                return Err(ImportIssue::NullBuffer(2, "values"));
            }
        }
        // SAFETY: the caller's promise, passed on: the buffers reach as far
        // as the structures imply.
        Layout::Utf8View => unsafe { check_views(&buffer, n_buffers, validity, start, len, end) }?,
        // SAFETY: the caller's promise, passed on.
        Layout::Dictionary(key) => unsafe { check_keys(schema, array, key, buffer(1), validity, start, len) }?,
        // Only [`check_runs`] makes this layout, for the run ends it reads.
        Layout::RunEnds(_) => {}
    }
    Ok(layout)
}

/// The dictionary of a dictionary-encoded array, checked as a string array
/// of its own, and the keys of rows `start..start + len`: every valid one
/// inside the dictionary's rows (a null key is a null row, its slot unread).
///
/// # Safety
/// As for [`check`]; `keys` is the array's buffer 1, `validity` its buffer 0.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn check_keys(
    schema: &RawSchema,
    array: &RawArray,
    key: Key,
    keys: *const c_void,
    validity: *const c_void,
    start: usize,
    len: usize,
) -> Result<(), ImportIssue> {
    if array.dictionary.is_null() {
        return Err(ImportIssue::NoDictionary);
    }
    // SAFETY: a live schema's dictionary and a live array's dictionary are
    // initialized structures of the interface, alive as their parents are.
    let (values_schema, values) = unsafe { (&*schema.dictionary, &*array.dictionary) };
    // SAFETY: the caller's promise covers the dictionary too (its buffers
    // reach as far as its structures imply).
    match unsafe { check_raw(values_schema, values, false) } {
        Ok(_) => {}
        Err(ImportIssue::Format(kind)) => return Err(ImportIssue::Format(format!("a dictionary of {kind}"))),
        Err(ImportIssue::Dictionary) => return Err(ImportIssue::Dictionary),
        Err(issue) => return Err(ImportIssue::Inside("its dictionary", Box::new(issue))),
    }
    if keys.is_null() && len > 0 {
        return Err(ImportIssue::NullBuffer(1, "keys"));
    }
    let size = values.length;
    // Without nulls, the keys are compared a block at a time first (the
    // rows are read again, one by one, only to name a key outside).
    // SAFETY: the trusted extent: `offset + length` keys of their type.
    if validity.is_null() && unsafe { key.all_inside(keys, start, len, size) } {
        return Ok(());
    }
    for row in 0..len {
        let at = start + row;
        // SAFETY: the trusted extent: the bitmap reaches bit `offset + length`.
        if !unsafe { valid(validity, at) } {
            continue;
        }
        // SAFETY: the trusted extent: `offset + length` keys of their type.
        let k = unsafe { key.read(keys, at) };
        if k < 0 || k >= i128::from(size) {
            return Err(ImportIssue::KeyRange(row, k, size));
        }
    }
    Ok(())
}

/// A run-end-encoded array (`+r`): no buffers of its own, no nulls (a null
/// row is a run of a null value), two children: run ends of int16, int32 or
/// int64 without nulls, rising from 1 or more, the last reaching the
/// array's `offset + length`, and as many values of a string layout.
///
/// # Safety
/// As for [`check`].
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn check_runs(schema: &RawSchema, array: &RawArray) -> Result<Layout, ImportIssue> {
    if schema.n_children != 2 || schema.children.is_null() {
        return Err(ImportIssue::Children("schema of run-end-encoded strings (2: run ends, values)", schema.n_children));
    }
    if array.n_children != 2 || array.children.is_null() {
        return Err(ImportIssue::Children("array of run-end-encoded strings (2: run ends, values)", array.n_children));
    }
    if !array.dictionary.is_null() {
        return Err(ImportIssue::ArrayDictionary);
    }
    for (field, value) in [("length", array.length), ("offset", array.offset), ("n_buffers", array.n_buffers)] {
        if value < 0 {
            return Err(ImportIssue::Negative(field, value));
        }
    }
    let end = array.offset.checked_add(array.length).ok_or(ImportIssue::Overflow)?;
    if array.null_count > 0 {
        return Err(ImportIssue::NullCount(array.null_count, None));
    }
    if array.n_buffers != 0 {
        return Err(ImportIssue::BufferCount("0".into(), array.n_buffers));
    }
    // SAFETY: a live structure's `children` holds `n_children` (2) pointers
    // to initialized children, alive as their parent is.
    let child = |k: usize| unsafe { (*schema.children.add(k), *array.children.add(k)) };
    let ((ends_schema, ends), (values_schema, values)) = (child(0), child(1));
    if [ends_schema, values_schema].iter().any(|c| c.is_null()) || [ends, values].iter().any(|c| c.is_null()) {
        return Err(ImportIssue::NullBuffer(0, "a child of the run-end-encoded array"));
    }
    // SAFETY: non-NULL children of live structures, initialized.
    let (ends_schema, ends, values_schema, values) = unsafe { (&*ends_schema, &*ends, &*values_schema, &*values) };
    // SAFETY: the caller's promise covers the children.
    match unsafe { check_raw(values_schema, values, false) } {
        Ok(_) => {}
        Err(ImportIssue::Format(kind)) => return Err(ImportIssue::Format(format!("run-end-encoded {kind}"))),
        Err(issue) => return Err(ImportIssue::Inside("its values", Box::new(issue))),
    }
    if ends_schema.release.is_none() || ends.release.is_none() {
        let what = if ends_schema.release.is_none() { "schema" } else { "array" };
        return Err(ImportIssue::Inside("its run ends", Box::new(ImportIssue::Released(what))));
    }
    if ends_schema.format.is_null() {
        return Err(ImportIssue::Inside("its run ends", Box::new(ImportIssue::NoFormat)));
    }
    // SAFETY: a live schema's format is a NUL-terminated string.
    let format = unsafe { CStr::from_ptr(ends_schema.format) }.to_bytes();
    let key = match Key::of(format) {
        Some(key @ (Key::I16 | Key::I32 | Key::I64)) if ends_schema.dictionary.is_null() => key,
        _ => return Err(ImportIssue::RunEndType(type_name(format))),
    };
    let inside = |issue| ImportIssue::Inside("its run ends", Box::new(issue));
    // The run ends as a fixed-width array of their own: fields, buffers,
    // no nulls (a run end is never null).
    if ends.n_children != 0 || ends_schema.n_children != 0 || !ends.dictionary.is_null() {
        return Err(inside(ImportIssue::Children("array", ends.n_children)));
    }
    for (field, value) in [("length", ends.length), ("offset", ends.offset), ("n_buffers", ends.n_buffers)] {
        if value < 0 {
            return Err(inside(ImportIssue::Negative(field, value)));
        }
    }
    let ends_end = ends.offset.checked_add(ends.length).ok_or(inside(ImportIssue::Overflow))?;
    ends_end.checked_add(1).and_then(|n| n.checked_mul(key.width())).ok_or(inside(ImportIssue::Overflow))?;
    if ends.n_buffers != 2 {
        return Err(inside(ImportIssue::BufferCount("2 (validity, run ends)".into(), ends.n_buffers)));
    }
    if ends.buffers.is_null() {
        return Err(inside(ImportIssue::NullBuffer(0, "the list of buffers itself")));
    }
    // SAFETY: a live array's `buffers` holds `n_buffers` (2) pointers.
    let (validity, data) = unsafe { (*ends.buffers, *ends.buffers.add(1)) };
    let (first, n) = (ends.offset as usize, ends.length as usize);
    // SAFETY: the trusted extent: the bitmap reaches bit `offset + length`.
    let nulls = if validity.is_null() { 0 } else { unsafe { clear_bits(validity, first, n) } };
    if nulls > 0 || ends.null_count > 0 {
        return Err(ImportIssue::RunEndNulls(nulls.max(ends.null_count.max(0) as u64)));
    }
    if ends.length != values.length {
        return Err(ImportIssue::RunLengths(ends.length, values.length));
    }
    if data.is_null() && n > 0 {
        return Err(inside(ImportIssue::NullBuffer(1, "run ends")));
    }
    let mut before = 0i64;
    for k in 0..n {
        // SAFETY: the trusted extent: `offset + length` run ends of their type.
        let value = unsafe { key.read(data, first + k) } as i64;
        if value <= before {
            return Err(ImportIssue::RunEnds(k, value, before));
        }
        before = value;
    }
    if before < end {
        return Err(ImportIssue::RunsShort(before, end));
    }
    Ok(Layout::RunEnds(key))
}

/// The views of rows `start..start + len` (see [`check`]).
///
/// # Safety
/// `buffer(i)` is buffer `i` of a live array of `n_buffers` (at least 3),
/// each reaching as far as [`check`] trusts.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
unsafe fn check_views(
    buffer: &dyn Fn(usize) -> *const c_void,
    n_buffers: usize,
    validity: *const c_void,
    start: usize,
    len: usize,
    end: usize,
) -> Result<(), ImportIssue> {
    let views = buffer(1);
    if views.is_null() && end > 0 {
        return Err(ImportIssue::NullBuffer(1, "views"));
    }
    let data = n_buffers - 3;
    let sizes_at = n_buffers - 1;
    let sizes = buffer(sizes_at);
    if sizes.is_null() && data > 0 {
        return Err(ImportIssue::NullBuffer(sizes_at, "the sizes of the data buffers"));
    }
    let mut size = Vec::with_capacity(data);
    for k in 0..data {
        // SAFETY: the trusted extent: one size per data buffer.
        let bytes = unsafe { read::<i64>(sizes, k) };
        if bytes < 0 {
            return Err(ImportIssue::DataSize(k, bytes));
        }
        if bytes > 0 && buffer(2 + k).is_null() {
            return Err(ImportIssue::NullBuffer(2 + k, "a data buffer of the views"));
        }
        size.push(bytes);
    }
    for row in 0..len {
        let at = start + row;
        // SAFETY: the trusted extent: the bitmap reaches bit `offset + length`.
        if !unsafe { valid(validity, at) } {
            continue;
        }
        // SAFETY: the trusted extent: `offset + length` views of 16 bytes,
        // read as four 32-bit fields: length, prefix, buffer, offset.
        let [length, prefix, index, offset] = unsafe { [0, 1, 2, 3].map(|f| read::<i32>(views, at * 4 + f)) };
        let length = i64::from(length);
        if length < 0 {
            return Err(ImportIssue::ViewLength(row, length));
        }
        if length <= 12 {
            continue;
        }
        let Some(&bytes) = usize::try_from(index).ok().and_then(|i| size.get(i)) else {
            return Err(ImportIssue::ViewBuffer(row, i64::from(index), data));
        };
        let offset = i64::from(offset);
        if offset < 0 || offset + length > bytes {
            return Err(ImportIssue::ViewRange(row, offset, length, bytes));
        }
        // SAFETY: bytes `offset..offset + 4` lie inside the data buffer, of
        // the size listed for it (checked just above; `length > 12`).
        let head: [u8; 4] =
            unsafe { std::array::from_fn(|b| read::<u8>(buffer(2 + index as usize), offset as usize + b)) };
        if head != prefix.to_le_bytes() {
            return Err(ImportIssue::ViewPrefix(row));
        }
    }
    Ok(())
}

/// An array imported from its C structures after [`check`] found nothing
/// wrong. The array is moved out of `*array` (left released, as the
/// interface asks of a consumer that takes it); the schema is only read.
/// On an issue the array is left where it is, for its owner to release.
///
/// # Safety
/// As for [`check`], and `array` is writable. The trust boundary is
/// [`check`]'s: the extents the structures imply are trusted, the rest checked.
// SAFETY: a contract on the caller (the `# Safety` section above); every call site states how it is met.
pub unsafe fn import(schema: *const FFI_ArrowSchema, array: *mut FFI_ArrowArray) -> Result<ArrayRef, ImportIssue> {
    // SAFETY: the caller's promise, passed on.
    unsafe { check(schema, array) }?;
    // SAFETY: checked above: a live array of a string layout with the
    // buffers it needs, consistent lengths and offsets; moved out, leaving a
    // released one behind.
    let data = unsafe { from_ffi(FFI_ArrowArray::from_raw(array), &*schema) }.map_err(|e| ImportIssue::Arrow(e.to_string()))?;
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use std::ptr::null;

    use super::*;

    unsafe extern "C" fn release_schema(schema: *mut RawSchema) {
        // SAFETY: called on a schema built below, alive.
        unsafe { (*schema).release = None };
    }

    unsafe extern "C" fn release_array(array: *mut RawArray) {
        // SAFETY: called on an array built below, alive.
        unsafe { (*array).release = None };
    }

    fn schema(format: &'static CStr) -> RawSchema {
        RawSchema {
            format: format.as_ptr(),
            name: null(),
            metadata: null(),
            flags: 2,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_schema),
            private_data: std::ptr::null_mut(),
        }
    }

    fn array(length: i64, null_count: i64, buffers: &mut [*const c_void]) -> RawArray {
        RawArray {
            length,
            null_count,
            offset: 0,
            n_buffers: buffers.len() as i64,
            n_children: 0,
            buffers: buffers.as_mut_ptr(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_array),
            private_data: std::ptr::null_mut(),
        }
    }

    fn run(schema: &RawSchema, array: &RawArray) -> Result<Layout, ImportIssue> {
        // SAFETY: both built by the tests, their buffers as long as claimed
        // (the cases that claim more are refused before the read).
        unsafe { check((schema as *const RawSchema).cast(), (array as *const RawArray).cast()) }
    }

    #[test]
    fn keys_below_a_length_as_each_key_says() {
        fn agree<K: KeyBits + Into<i128> + std::fmt::Debug>(keys: &[K]) {
            for len in [0u64, 1, 2, 3, 127, 128, 255, 256, 65_535, 65_536, 1 << 40, u64::MAX] {
                let want = keys.iter().all(|&k| (0..i128::from(len)).contains(&k.into()));
                assert_eq!(keys_below(keys, len), want, "{keys:?} below {len}");
            }
        }
        agree::<i8>(&[0, 1, 2]);
        agree::<i8>(&[0, -1]);
        agree::<i8>(&[i8::MAX, i8::MIN]);
        agree::<u8>(&[0, 254, 255]);
        agree::<i16>(&[300, 2]);
        agree::<u16>(&[u16::MAX]);
        agree::<i32>(&[5, i32::MIN]);
        agree::<u32>(&[u32::MAX, 0]);
        agree::<i64>(&[i64::MAX, -1]);
        agree::<u64>(&[u64::MAX]);
        agree::<i8>(&[]);
        // Past a block of 1,024, the first and the last key of a block.
        for at in [0, 1_023, 1_024, 2_999] {
            let mut keys = vec![1i32; 3_000];
            keys[at] = -3;
            agree(&keys);
            keys[at] = 70_000;
            agree(&keys);
        }
    }

    #[test]
    fn offsets_are_checked() {
        let values = b"abcdef";
        for (offsets, want) in [
            (vec![0i32, 2, 6], Ok(Layout::Utf8)),
            (vec![-1, 2, 6], Err(ImportIssue::FirstOffset(-1))),
            (vec![0, 4, 2], Err(ImportIssue::Backwards(2, 2, 4))),
            (vec![0, 2, -7], Err(ImportIssue::Backwards(2, -7, 2))),
        ] {
            let mut buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
            assert_eq!(run(&schema(c"u"), &array(2, 0, &mut buffers)), want, "{offsets:?}");
        }
        let large = [0i64, 3, 1];
        let mut buffers = [null(), large.as_ptr().cast(), values.as_ptr().cast()];
        assert_eq!(run(&schema(c"U"), &array(2, 0, &mut buffers)), Err(ImportIssue::Backwards(2, 1, 3)));
        // An offset into the buffer moves the rows checked.
        let offsets = [9i32, 0, 2, 6];
        let mut buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
        let mut shifted = array(2, 0, &mut buffers);
        assert_eq!(run(&schema(c"u"), &shifted), Err(ImportIssue::Backwards(1, 0, 9)));
        shifted.offset = 1;
        assert_eq!(run(&schema(c"u"), &shifted), Ok(Layout::Utf8));
        // Long columns are checked a block at a time: the first backward
        // offset is named wherever it falls (in a block's first or last
        // pair, or past a block that fails again), and none in order passes.
        let long: Vec<i32> = (0..1_000).collect();
        let values = vec![b'a'; 1_000];
        for (rows, fall) in [(999, None), (999, Some(1)), (999, Some(256)), (999, Some(257)), (999, Some(513)), (999, Some(999)), (700, Some(700))] {
            let mut offsets = long.clone();
            if let Some(at) = fall {
                offsets[at] = offsets[at - 1] - 1;
                offsets[(at + 40).min(999)] = 0;
            }
            let mut buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
            let want = match fall {
                None => Ok(Layout::Utf8),
                Some(at) => Err(ImportIssue::Backwards(at, i64::from(offsets[at]), i64::from(offsets[at - 1]))),
            };
            assert_eq!(run(&schema(c"u"), &array(rows as i64, 0, &mut buffers)), want, "{rows} rows, {fall:?}");
        }
    }

    #[test]
    fn fields_counts_and_pointers_are_checked() {
        let (offsets, values) = ([0i32, 1, 2], b"ab");
        let mut buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
        let mut kept = buffers;
        let kept = kept.as_mut_ptr();
        let good = || {
            let mut a = array(2, 0, &mut []);
            a.n_buffers = 3;
            a.buffers = kept;
            a
        };
        let s = schema(c"u");
        let mut a = good();
        a.length = -1;
        assert_eq!(run(&s, &a), Err(ImportIssue::Negative("length", -1)));
        let mut a = good();
        a.offset = i64::MAX;
        assert_eq!(run(&s, &a), Err(ImportIssue::Overflow));
        let mut a = good();
        a.length = i64::MAX / 4;
        a.null_count = 0;
        assert_eq!(run(&s, &a), Err(ImportIssue::Overflow));
        let mut a = good();
        a.null_count = 3;
        assert_eq!(run(&s, &a), Err(ImportIssue::NullCountOverLength(3, 2)));
        let mut a = good();
        a.null_count = 1;
        assert_eq!(run(&s, &a), Err(ImportIssue::NullCount(1, None)));
        let mut a = good();
        a.n_buffers = 2;
        assert!(matches!(run(&s, &a), Err(ImportIssue::BufferCount(_, 2))));
        let mut a = good();
        a.release = None;
        assert_eq!(run(&s, &a), Err(ImportIssue::Released("array")));
        let mut a = good();
        a.n_children = 1;
        assert_eq!(run(&s, &a), Err(ImportIssue::Children("array", 1)));
        buffers[1] = null();
        assert_eq!(run(&s, &array(2, 0, &mut buffers)), Err(ImportIssue::NullBuffer(1, "offsets")));
        let mut no_buffers = [];
        let mut a = array(2, 0, &mut no_buffers);
        a.n_buffers = 3;
        a.buffers = std::ptr::null_mut();
        assert!(matches!(run(&s, &a), Err(ImportIssue::NullBuffer(0, _))));
        assert_eq!(run(&schema(c"l"), &good()), Err(ImportIssue::Format("int64 (format \"l\")".into())));
        assert!(matches!(run(&schema(c"+r"), &good()), Err(ImportIssue::Children(_, 0))));
        let mut s = schema(c"u");
        s.format = null();
        assert_eq!(run(&s, &good()), Err(ImportIssue::NoFormat));
        let mut dictionary = schema(c"u");
        let mut s = schema(c"i");
        s.dictionary = &mut dictionary;
        assert!(matches!(run(&s, &good()), Err(ImportIssue::BufferCount(_, 3))));
    }

    /// Keys into a dictionary of two strings: every valid key inside it,
    /// whatever its type; the dictionary checked as an array of its own.
    #[test]
    fn dictionaries_and_their_keys_are_checked() {
        let (offsets, values) = ([0i32, 2, 5], b"ghfs!");
        let mut value_buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
        let mut dictionary = array(2, 0, &mut value_buffers);
        let mut value_schema = schema(c"u");
        let keyed = |format: &'static CStr, value_schema: &mut RawSchema| {
            let mut s = schema(format);
            s.dictionary = value_schema;
            s
        };
        let keys32 = [0i32, 1, 1, 0];
        let mut buffers = [null(), keys32.as_ptr().cast()];
        let mut a = array(4, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"i", &mut value_schema), &a), Ok(Layout::Dictionary(Key::I32)));
        for (keys, want) in [
            (vec![0i32, 2, 0, 0], Err(ImportIssue::KeyRange(1, 2, 2))),
            (vec![0, 1, -1, 0], Err(ImportIssue::KeyRange(2, -1, 2))),
            (vec![0, 1, 1, i32::MIN], Err(ImportIssue::KeyRange(3, i128::from(i32::MIN), 2))),
        ] {
            let mut buffers = [null(), keys.as_ptr().cast()];
            let mut a = array(4, 0, &mut buffers);
            a.dictionary = &mut dictionary;
            assert_eq!(run(&keyed(c"i", &mut value_schema), &a), want, "{keys:?}");
        }
        // Unsigned keys past i64 are past the dictionary, not wrapped round.
        let big = [u64::MAX, 0];
        let mut buffers = [null(), big.as_ptr().cast()];
        let mut a = array(2, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"L", &mut value_schema), &a), Err(ImportIssue::KeyRange(0, i128::from(u64::MAX), 2)));
        // A null key is not read; an offset moves the keys checked.
        let (keys8, bits) = ([9i8, 1, 0], [0b110u8]);
        let mut buffers = [bits.as_ptr().cast(), keys8.as_ptr().cast()];
        let mut a = array(3, 1, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"c", &mut value_schema), &a), Ok(Layout::Dictionary(Key::I8)));
        let mut buffers = [null(), keys8.as_ptr().cast()];
        let mut a = array(2, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"c", &mut value_schema), &a), Err(ImportIssue::KeyRange(0, 9, 2)));
        a.offset = 1;
        assert_eq!(run(&keyed(c"c", &mut value_schema), &a), Ok(Layout::Dictionary(Key::I8)));
        // Long key columns without nulls are compared a block at a time: a
        // key outside is named in any block, and all inside pass.
        for (rows, outside) in [(1_000, None), (1_000, Some(0)), (1_000, Some(255)), (1_000, Some(256)), (1_000, Some(999)), (600, Some(599))] {
            let mut keys: Vec<u16> = (0..1_000).map(|i| (i % 2) as u16).collect();
            if let Some(at) = outside {
                keys[at] = 2;
                if let Some(later) = keys.get_mut(at + 300) {
                    *later = 7;
                }
            }
            let mut buffers = [null(), keys.as_ptr().cast()];
            let mut a = array(rows, 0, &mut buffers);
            a.dictionary = &mut dictionary;
            let want = match outside {
                None => Ok(Layout::Dictionary(Key::U16)),
                Some(at) => Err(ImportIssue::KeyRange(at, 2, 2)),
            };
            assert_eq!(run(&keyed(c"S", &mut value_schema), &a), want, "{rows} rows, {outside:?}");
        }
        // The array's dictionary missing, keys that are not integers, the
        // keys buffer NULL, a dictionary of a foreign type or a malformed one.
        let mut buffers = [null(), keys32.as_ptr().cast()];
        assert_eq!(run(&keyed(c"i", &mut value_schema), &array(4, 0, &mut buffers)), Err(ImportIssue::NoDictionary));
        let mut a = array(4, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"g", &mut value_schema), &a), Err(ImportIssue::KeyType("double (format \"g\")".into())));
        let mut no_keys = [null(), null()];
        let mut a = array(4, 0, &mut no_keys);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"i", &mut value_schema), &a), Err(ImportIssue::NullBuffer(1, "keys")));
        let mut a = array(4, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"i", &mut schema(c"l")), &a), Err(ImportIssue::Format("a dictionary of int64 (format \"l\")".into())));
        let mut inner = schema(c"u");
        let mut nested = schema(c"i");
        nested.dictionary = &mut inner;
        assert_eq!(run(&keyed(c"i", &mut nested), &a), Err(ImportIssue::Dictionary));
        let backwards = [0i32, 4, 2];
        let mut bad_buffers = [null(), backwards.as_ptr().cast(), values.as_ptr().cast()];
        let mut bad = array(2, 0, &mut bad_buffers);
        let mut a = array(4, 0, &mut buffers);
        a.dictionary = &mut bad;
        assert_eq!(
            run(&keyed(c"i", &mut value_schema), &a),
            Err(ImportIssue::Inside("its dictionary", Box::new(ImportIssue::Backwards(2, 2, 4))))
        );
        dictionary.release = None;
        let mut a = array(4, 0, &mut buffers);
        a.dictionary = &mut dictionary;
        assert_eq!(run(&keyed(c"i", &mut value_schema), &a), Err(ImportIssue::Inside("its dictionary", Box::new(ImportIssue::Released("array")))));
    }

    #[test]
    fn null_counts_match_the_bitmap() {
        let (offsets, values) = ([0i32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], b"abcdefghij");
        // Rows 0..10: valid but rows 3 and 9.
        let bits = [0b1111_0111u8, 0b0000_0001];
        let mut buffers = [bits.as_ptr().cast(), offsets.as_ptr().cast(), values.as_ptr().cast()];
        for (claimed, want) in [(2, Ok(Layout::Utf8)), (-1, Ok(Layout::Utf8)), (0, Err(ImportIssue::NullCount(0, Some(2)))), (1, Err(ImportIssue::NullCount(1, Some(2))))] {
            assert_eq!(run(&schema(c"u"), &array(10, claimed, &mut buffers)), want, "{claimed}");
        }
        // Shifted by 4 rows: rows 4..10, one null (row 9).
        let mut a = array(6, 1, &mut buffers);
        a.offset = 4;
        assert_eq!(run(&schema(c"u"), &a), Ok(Layout::Utf8));
        // SAFETY: a bitmap of two bytes, read in range.
        assert_eq!(unsafe { clear_bits(bits.as_ptr().cast(), 3, 1) }, 1);
        assert_eq!(unsafe { clear_bits(bits.as_ptr().cast(), 4, 5) }, 0);
    }

    fn view(len: i32, bytes: &[u8], buffer: i32, offset: i32) -> [i32; 4] {
        let mut prefix = [0u8; 4];
        prefix[..bytes.len().min(4)].copy_from_slice(&bytes[..bytes.len().min(4)]);
        [len, i32::from_le_bytes(prefix), buffer, offset]
    }

    /// Run ends rising from 1 to the array's end, of a signed type, no
    /// nulls, as many as the values; the values checked as an array.
    #[test]
    fn runs_are_checked() {
        let (offsets, values) = ([0i32, 2, 5], b"ghfs!");
        let mut value_buffers = [null(), offsets.as_ptr().cast(), values.as_ptr().cast()];
        let mut case = |ends_format: &'static CStr, ends: &[u8], n_ends: i64, length: i64, offset: i64| {
            let mut value_schema = schema(c"u");
            let mut dictionary = array(2, 0, &mut value_buffers);
            let mut end_schema = schema(ends_format);
            let mut end_buffers = [null(), ends.as_ptr().cast()];
            let mut end_array = array(n_ends, 0, &mut end_buffers);
            let mut schema_children = [&mut end_schema as *mut RawSchema, &mut value_schema];
            let mut array_children = [&mut end_array as *mut RawArray, &mut dictionary];
            let mut s = schema(c"+r");
            s.n_children = 2;
            s.children = schema_children.as_mut_ptr();
            let mut a = array(length, 0, &mut []);
            a.offset = offset;
            a.n_children = 2;
            a.children = array_children.as_mut_ptr();
            run(&s, &a)
        };
        let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(case(c"i", &i32s(&[3, 7]), 2, 7, 0), Ok(Layout::RunEnds(Key::I32)));
        assert_eq!(case(c"i", &i32s(&[3, 7]), 2, 4, 3), Ok(Layout::RunEnds(Key::I32)));
        assert_eq!(case(c"s", &[3, 0, 7, 0], 2, 7, 0), Ok(Layout::RunEnds(Key::I16)));
        assert_eq!(case(c"i", &i32s(&[3, 3]), 2, 3, 0), Err(ImportIssue::RunEnds(1, 3, 3)));
        assert_eq!(case(c"i", &i32s(&[0, 3]), 2, 3, 0), Err(ImportIssue::RunEnds(0, 0, 0)));
        assert_eq!(case(c"i", &i32s(&[-5, 3]), 2, 3, 0), Err(ImportIssue::RunEnds(0, -5, 0)));
        assert_eq!(case(c"i", &i32s(&[3, 7]), 2, 8, 0), Err(ImportIssue::RunsShort(7, 8)));
        assert_eq!(case(c"i", &i32s(&[3, 7]), 2, 5, 3), Err(ImportIssue::RunsShort(7, 8)));
        assert_eq!(case(c"i", &i32s(&[3]), 1, 3, 0), Err(ImportIssue::RunLengths(1, 2)));
        assert_eq!(case(c"I", &i32s(&[3, 7]), 2, 7, 0), Err(ImportIssue::RunEndType("uint32 (format \"I\")".into())));
        assert_eq!(case(c"i", &i32s(&[3, 7]), 2, -1, 0), Err(ImportIssue::Negative("length", -1)));
    }

    #[test]
    fn views_are_checked() {
        let data = b"0123456789abcdefghij";
        let sizes = [data.len() as i64];
        let check_one = |v: [i32; 4], sizes: &[i64]| {
            let views = [v];
            let mut buffers = [null(), views.as_ptr().cast(), data.as_ptr().cast(), sizes.as_ptr().cast()];
            run(&schema(c"vu"), &array(1, 0, &mut buffers))
        };
        assert_eq!(check_one(view(15, b"0123", 0, 0), &sizes), Ok(Layout::Utf8View));
        assert_eq!(check_one(view(15, b"5678", 0, 5), &sizes), Ok(Layout::Utf8View));
        assert_eq!(check_one(view(-3, b"", 0, 0), &sizes), Err(ImportIssue::ViewLength(0, -3)));
        assert_eq!(check_one(view(15, b"0123", 1, 0), &sizes), Err(ImportIssue::ViewBuffer(0, 1, 1)));
        assert_eq!(check_one(view(15, b"0123", -1, 0), &sizes), Err(ImportIssue::ViewBuffer(0, -1, 1)));
        assert_eq!(check_one(view(15, b"5678", 0, 6), &sizes), Err(ImportIssue::ViewRange(0, 6, 15, 20)));
        assert_eq!(check_one(view(15, b"0123", 0, -1), &sizes), Err(ImportIssue::ViewRange(0, -1, 15, 20)));
        assert_eq!(check_one(view(15, b"xxxx", 0, 0), &sizes), Err(ImportIssue::ViewPrefix(0)));
        assert_eq!(check_one(view(15, b"0123", 0, 0), &[-5]), Err(ImportIssue::DataSize(0, -5)));
        // Inline: no buffer read.
        assert_eq!(check_one(view(3, b"abc", 99, -9), &sizes), Ok(Layout::Utf8View));
        // A null row's view is not read.
        let (views, bits) = ([view(99, b"", 7, -1)], [0u8]);
        let mut buffers = [bits.as_ptr().cast(), views.as_ptr().cast(), data.as_ptr().cast(), sizes.as_ptr().cast()];
        assert_eq!(run(&schema(c"vu"), &array(1, 1, &mut buffers)), Ok(Layout::Utf8View));
        let mut buffers = [null(), views.as_ptr().cast(), data.as_ptr().cast(), null()];
        assert!(matches!(run(&schema(c"vu"), &array(1, 0, &mut buffers)), Err(ImportIssue::NullBuffer(3, _))));
    }
}
