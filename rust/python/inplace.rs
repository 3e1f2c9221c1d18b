//! Reading Python objects in place, without touching reference counts: the
//! one module of the binding that dereferences borrowed object pointers.
//! Everything else reads Python objects through pyo3's owned handles, or
//! through the functions here.
//!
//! A batch over a million tools reads two strings of each; taking a reference
//! to each object dirties millions of cache lines, so the batches borrow. A
//! borrow is safe exactly as long as nothing frees or changes what it points
//! to, and only Python code does that. The rules, which a reviewer can check
//! against this file alone:
//!
//! 1. **What a borrow rests on.** An item of a list, a value in a dict or a
//!    slot of a `Tool` is valid while its holder is alive and unchanged; the
//!    bytes of a `str` while the `str` is alive (a `str` never changes). The
//!    holder is kept alive by an owned handle of the caller's. Only Python
//!    code changes a holder or frees an object.
//! 2. **Where Python code runs.** Any attribute access or call on a user's
//!    object (a property, `__eq__`, `__hash__`, `__contains__`), a decref that
//!    frees an object (its `__del__`, a weakref callback), and a collection of
//!    the cyclic collector, which any allocation of a tracked object (a tuple,
//!    an exception) may start and whose finalizers and callbacks are Python
//!    code. The GIL is held throughout and never released here, so no other
//!    thread runs Python meanwhile.
//! 3. **[`Quiet`] is the proof.** It pauses the collector; while it lives and
//!    no Python code has run since, borrows are valid. Every borrowed read
//!    takes `&'q Quiet` and what it returns lives for `'q`. [`Quiet::run`] is
//!    the only door to Python code: it takes `&mut Quiet`, so the compiler
//!    ends every borrow before it, and it pauses the collector again after
//!    (the code it ran may have re-enabled it).
//! 4. **No last reference is dropped while quiet.** A reference taken inside a
//!    quiet stretch is released there only while another holder keeps the
//!    object alive (an `re.Pattern` keeps its `pattern`); owned objects that
//!    may be the last of their kind are dropped inside [`Quiet::run`].
//! 5. **An error ends the read.** Making an error may run Python code (a
//!    metaclass's `__name__` in the message); a read that returns `Err` is not
//!    continued, and nothing it borrowed is read again.

use std::borrow::Cow;
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

/// The collector paused, and no Python code run since: the proof that a
/// borrow taken through `&self` is valid (rule 3 of the module).
pub(crate) struct Quiet<'py> {
    py: Python<'py>,
    /// Whether the collector was running and is paused by this guard.
    paused: bool,
    runs: u64,
}

impl<'py> Quiet<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        let mut quiet = Quiet { py, paused: false, runs: 0 };
        quiet.pause();
        quiet
    }

    fn pause(&mut self) {
        // SAFETY: the GIL is held (the token says so); the call only sets a flag.
        self.paused = unsafe { ffi::PyGC_Disable() } == 1;
    }

    fn resume(&mut self) {
        if std::mem::take(&mut self.paused) {
            // SAFETY: the GIL is held (the guard holds the token).
            unsafe { ffi::PyGC_Enable() };
        }
    }

    /// Runs `f`, which may run Python code, with the collector as it was
    /// before; pauses it again after. `&mut self`: no borrow survives it.
    pub(crate) fn run<T>(&mut self, f: impl FnOnce(Python<'py>) -> T) -> T {
        self.resume();
        let out = f(self.py);
        self.pause();
        self.runs += 1;
        out
    }

    /// How many times [`run`](Self::run) has let Python code run: a value
    /// remembered from a borrow (an object's address) is only good while
    /// this number has not changed.
    pub(crate) fn runs(&self) -> u64 {
        self.runs
    }

    /// Item `i` of a list, borrowed; None past the end.
    #[inline]
    pub(crate) fn list_item<'q>(&'q self, list: &'q Bound<'py, PyList>, i: usize) -> Option<Borrowed<'q, 'py, PyAny>> {
        let ptr = self.list_item_ptr(list, i)?;
        // SAFETY: a live item of `list`, which the caller holds; no Python code
        // runs while `self` is borrowed, so the list keeps it for 'q (rule 3).
        Some(unsafe { Borrowed::from_ptr(self.py, ptr) })
    }

    /// The pointer of item `i` of a list, for a prefetch hint; None past the end.
    #[inline]
    fn list_item_ptr(&self, list: &Bound<'py, PyList>, i: usize) -> Option<*mut ffi::PyObject> {
        (i < list.len()).then(|| {
            // SAFETY: `i` is in bounds, so the call neither fails nor sets an error.
            unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) }
        })
    }

    /// The generalized UTF-8 bytes of a borrowed `str` (a subclass too, read
    /// by its value: none of its methods is called).
    #[inline]
    pub(crate) fn str_bytes<'q>(&'q self, s: Borrowed<'q, 'py, PyString>) -> PyResult<Cow<'q, [u8]>> {
        // SAFETY: `s` is a live str for 'q (rule 3). A lone surrogate's
        // exception is an allocation, with the collector paused.
        unsafe { str_ptr_bytes(self.py, s.as_ptr()) }
    }

    /// `server_id` and `name` of an exact `Tool` whose two slots hold `str`s,
    /// borrowed; None sends the caller to the attribute lookup.
    #[inline]
    pub(crate) fn tool_fields<'q>(
        &'q self,
        layout: &ToolLayout,
        tool: Borrowed<'q, 'py, PyAny>,
    ) -> Option<(Borrowed<'q, 'py, PyString>, Borrowed<'q, 'py, PyString>)> {
        let ptr = tool.as_ptr();
        if !layout.is_instance(ptr) {
            return None;
        }
        let (server_id, name) = (layout.field(ptr, layout.server_id), layout.field(ptr, layout.name));
        // SAFETY: the slots of a live `Tool` (the class checked just now), each
        // NULL or an object the tool holds; checked non-NULL and `str` before
        // use. The tool holds them for 'q: no Python code runs to reassign a
        // slot while `self` is borrowed (rule 3).
        unsafe {
            if server_id.is_null() || name.is_null() {
                return None;
            }
            // An exact `str` by its type's address (one load); a subclass
            // by the type's flags (a call, under the stable ABI).
            let is_str = |s: *mut ffi::PyObject| ffi::PyUnicode_CheckExact(s) != 0 || ffi::PyUnicode_Check(s) != 0;
            if !is_str(server_id) || !is_str(name) {
                return None;
            }
            Some((
                Borrowed::from_ptr(self.py, server_id).cast_unchecked(),
                Borrowed::from_ptr(self.py, name).cast_unchecked(),
            ))
        }
    }

    /// The raw hint byte an exact `Tool` keeps in its `_hints` slot (see
    /// `crate::hints::raw`); None when the slot is unset or holds anything
    /// but an exact int from 0 to 255, which sends the caller to the
    /// attribute lookup.
    #[inline]
    pub(crate) fn tool_hints(&self, layout: &ToolLayout, tool: Borrowed<'_, 'py, PyAny>) -> Option<u8> {
        let ptr = tool.as_ptr();
        if !layout.is_instance(ptr) {
            return None;
        }
        let hints = layout.field(ptr, layout.hints);
        // SAFETY: a slot of a live `Tool`, NULL or an object it holds for the
        // caller's borrow (rule 3); an exact int is read by a C call that runs
        // no Python code (no `__index__`: the type is checked exact first).
        unsafe {
            if hints.is_null() || ffi::PyLong_CheckExact(hints) == 0 {
                return None;
            }
            let value = ffi::PyLong_AsLong(hints);
            if value == -1 && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            u8::try_from(value).ok()
        }
    }

    /// Starts loading the name of `tool` when it is a `Tool`: a batch reads
    /// it a few items later (a catalog's strings are scattered in memory).
    #[inline]
    pub(crate) fn prefetch_tool_name(&self, layout: &ToolLayout, tool: Borrowed<'_, 'py, PyAny>) {
        // The caller's borrow keeps `tool` live (rule 3): its type is read,
        // and the slot of an instance of the checked class.
        if layout.is_instance(tool.as_ptr()) {
            prefetch_object(layout.field(tool.as_ptr(), layout.name));
        }
    }

    /// A plain regex entry `(server_glob, re.Pattern)` of an option, as
    /// `_patterns._parse_entry` would take it without a word: an exact tuple
    /// of two, an exact `str` server glob that `usable` accepts, and a compiled
    /// pattern of `str`. Runs no Python code: `re.Pattern` is a C type that
    /// cannot be subclassed, and `pattern` a member of it.
    ///
    /// `pattern_attr` is the interned name `"pattern"`, made before the stretch.
    pub(crate) fn is_plain_regex(
        &self,
        item: Borrowed<'_, 'py, PyAny>,
        pattern_type: &Bound<'py, PyType>,
        pattern_attr: &Bound<'py, PyString>,
        usable: impl FnOnce(&[u8]) -> bool,
    ) -> bool {
        let item = item.as_ptr();
        // SAFETY: `item` is live for this call (the caller's borrow, rule 3);
        // a tuple's items are valid while it is. `pattern` is taken with a
        // reference of its own and released while the regex still holds it
        // (rule 4); its attribute lookup finds a member of a C type.
        unsafe {
            if ffi::PyTuple_CheckExact(item) == 0 || ffi::PyTuple_Size(item) != 2 {
                return false;
            }
            let (server, regex) = (ffi::PyTuple_GetItem(item, 0), ffi::PyTuple_GetItem(item, 1));
            if ffi::PyUnicode_CheckExact(server) == 0 || ffi::Py_TYPE(regex) != pattern_type.as_ptr().cast() {
                return false;
            }
            let Ok(pattern) =
                Bound::from_owned_ptr_or_err(self.py, ffi::PyObject_GetAttr(regex, pattern_attr.as_ptr()))
            else {
                return false;
            };
            ffi::PyUnicode_CheckExact(pattern.as_ptr()) != 0
                && str_ptr_bytes(self.py, server).is_ok_and(|glob| usable(&glob))
        }
    }
}

impl Drop for Quiet<'_> {
    fn drop(&mut self) {
        self.resume();
    }
}

/// `dict[key]` when it is a `str`, read by `read` inside a quiet stretch of
/// its own: `read` gets the string borrowed and returns what it keeps (an
/// owned handle, bytes copied out).
///
/// The lookup itself may run Python code (the `__eq__` of a key whose hash
/// collides), so it runs before the stretch begins; the value it finds is
/// then borrowed with nothing run in between. `dict` must be an exact dict
/// (its storage is the mapping) that the caller holds across Python code.
pub(crate) fn with_dict_str<'py, T>(
    dict: Borrowed<'_, 'py, PyDict>,
    key: &Bound<'py, PyString>,
    read: impl for<'q> FnOnce(&'q Quiet<'py>, Borrowed<'q, 'py, PyString>) -> PyResult<T>,
) -> PyResult<Option<T>> {
    let py = dict.py();
    // SAFETY: both pointers are live objects; the call returns a borrowed
    // reference, or NULL with or without an exception set.
    let ptr = unsafe { ffi::PyDict_GetItemWithError(dict.as_ptr(), key.as_ptr()) };
    if ptr.is_null() {
        return match PyErr::take(py) {
            Some(err) => Err(err),
            None => Ok(None),
        };
    }
    let quiet = Quiet::new(py);
    // SAFETY: `ptr` is a value the dict holds, and no Python code has run
    // since the lookup returned it (pausing the collector runs none); the
    // quiet stretch keeps it so for `read` (rule 3), which cannot keep the
    // borrow past it.
    let value = unsafe { Borrowed::from_ptr(py, ptr) };
    match value.cast::<PyString>() {
        Ok(s) => read(&quiet, s).map(Some),
        Err(_) => Ok(None),
    }
}

/// The generalized UTF-8 bytes of a `str` the caller holds (lone surrogates
/// kept, via `surrogatepass`). Safe without a [`Quiet`]: the handle keeps the
/// string alive, and a `str` never changes.
pub(crate) fn string_bytes<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    // SAFETY: `s` is a str, and the borrow of its handle keeps it alive for 'a.
    unsafe { str_ptr_bytes(s.py(), s.as_ptr()) }
}

/// The generalized UTF-8 bytes of the `str` at `ptr`, borrowed for `'a`.
///
/// # Safety
/// `ptr` is a `str` (a subclass too) that stays alive for `'a`; its UTF-8
/// view lives as long as it does.
// SAFETY: a contract for the callers, each of which says how it keeps it.
#[inline]
unsafe fn str_ptr_bytes<'a>(py: Python<'_>, ptr: *mut ffi::PyObject) -> PyResult<Cow<'a, [u8]>> {
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size);
    if !data.is_null() {
        return Ok(Cow::Borrowed(std::slice::from_raw_parts(data.cast::<u8>(), size as usize)));
    }
    surrogate_bytes(py, ptr)
}

/// [`str_ptr_bytes`] for a str with lone surrogates, which have no UTF-8 view.
///
/// # Safety
/// As [`str_ptr_bytes`].
// SAFETY: the contract of `str_ptr_bytes`, its only caller.
#[cold]
unsafe fn surrogate_bytes<'a>(py: Python<'_>, ptr: *mut ffi::PyObject) -> PyResult<Cow<'a, [u8]>> {
    // Encode them losslessly. The C call, not `s.encode(...)`: a str
    // subclass cannot run code here. Dropping the exception and the bytes
    // frees objects without finalizers.
    drop(PyErr::take(py));
    let encoded = Bound::from_owned_ptr_or_err(
        py,
        ffi::PyUnicode_AsEncodedString(ptr, c"utf-8".as_ptr(), c"surrogatepass".as_ptr()),
    )?;
    Ok(Cow::Owned(encoded.cast::<PyBytes>()?.as_bytes().to_vec()))
}

/// Where instances of the package's `Tool` class keep `server_id` and `name`.
///
/// The class is a slots dataclass, so each field is a pointer at a fixed
/// offset of the instance; the offsets are learned once from a probe
/// instance (by finding its two field objects inside it) and checked to be
/// plain slots of a class with the default attribute lookup. A batch then
/// reads an instance of exactly that class with two loads ([`Quiet::tool_fields`]);
/// anything else takes the attribute lookup.
pub(crate) struct ToolLayout {
    class: Py<PyType>,
    server_id: usize,
    name: usize,
    /// The `_hints` slot: the raw byte of the tool's annotation hints.
    hints: usize,
}

static TOOL_LAYOUT: OnceLock<ToolLayout> = OnceLock::new();

impl ToolLayout {
    /// The registered layout, if the `Tool` class could be learned.
    #[inline]
    pub(crate) fn get() -> Option<&'static ToolLayout> {
        TOOL_LAYOUT.get()
    }

    /// Whether `obj`, a live object, is exactly the registered class.
    #[inline]
    fn is_instance(&self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY: `obj` is live (every caller reads it under its own borrow);
        // reading an object's type pointer runs nothing.
        unsafe { ffi::Py_TYPE(obj) == self.class.as_ptr().cast::<ffi::PyTypeObject>() }
    }

    /// The pointer stored at `offset` of `obj`, a live instance of the class
    /// (or the probe, whose size bounds `offset` at registration).
    #[inline]
    fn field(&self, obj: *mut ffi::PyObject, offset: usize) -> *mut ffi::PyObject {
        read_word(obj, offset)
    }

    /// Learns the layout from `probe`, an instance whose `server_id` and
    /// `name` are two distinct `str` objects and whose `_hints` is an int.
    /// Returns whether the fast read is on; it stays off unless the three
    /// fields are plain slots, each found exactly once.
    pub(crate) fn register(probe: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = probe.py();
        let class = probe.get_type();
        let slot_type = py.import("types")?.getattr("MemberDescriptorType")?;
        let default_lookup = py.get_type::<pyo3::types::PyAny>().getattr("__getattribute__")?;
        if !class.getattr("__getattribute__")?.is(&default_lookup) {
            return Ok(false);
        }
        let class_dict = class.getattr("__dict__")?;
        let basic_size: usize = class.getattr("__basicsize__")?.extract()?;
        let word = std::mem::size_of::<*mut ffi::PyObject>();
        let header = std::mem::size_of::<ffi::PyObject>();
        let mut offsets = [0usize; 3];
        for (slot, attr) in offsets.iter_mut().zip(["server_id", "name", "_hints"]) {
            if !class_dict.get_item(attr)?.is_instance(&slot_type)? {
                return Ok(false);
            }
            let value = probe.getattr(attr)?;
            let expected = if attr == "_hints" {
                value.is_exact_instance_of::<pyo3::types::PyInt>()
            } else {
                value.is_instance_of::<PyString>()
            };
            if !expected {
                return Ok(false);
            }
            // Every word of the instance past its header: the probe and
            // `value` are held, and reading words runs nothing.
            let found: Vec<usize> = (header..basic_size.saturating_sub(word - 1))
                .step_by(word)
                .filter(|&offset| read_word(probe.as_ptr(), offset) == value.as_ptr())
                .collect();
            let [offset] = found[..] else { return Ok(false) };
            *slot = offset;
        }
        if offsets[0] == offsets[1] || offsets[1] == offsets[2] || offsets[0] == offsets[2] {
            return Ok(false);
        }
        let layout = ToolLayout { class: class.unbind(), server_id: offsets[0], name: offsets[1], hints: offsets[2] };
        // A second registration (a reloaded module) keeps the first layout.
        let _ = TOOL_LAYOUT.set(layout);
        Ok(TOOL_LAYOUT.get().is_some_and(|l| l.is_instance(probe.as_ptr())))
    }
}

/// The pointer-sized word at `offset` of the object at `obj`.
#[inline]
fn read_word(obj: *mut ffi::PyObject, offset: usize) -> *mut ffi::PyObject {
    // SAFETY: callers pass a live object and an offset inside its instance
    // size: the registration scans words below `__basicsize__` of the probe,
    // and a layout's two offsets were found there, in instances of the same
    // class (whose size is that `__basicsize__`).
    unsafe { obj.cast::<u8>().add(offset).cast::<*mut ffi::PyObject>().read() }
}

/// Starts loading the first two cache lines of an object (NULL: nothing): for
/// a short `str`, its header and characters.
#[inline]
pub(crate) fn prefetch_object(obj: *mut ffi::PyObject) {
    if !obj.is_null() {
        prefetch(obj.cast());
        prefetch(obj.cast::<u8>().wrapping_add(64));
    }
}

/// A hint to load the cache line at `ptr`; it never faults and changes nothing.
#[inline(always)]
fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it does not fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Item `i` of a tuple, borrowed for as long as the tuple is (a tuple never
/// changes its items); None past the end.
#[inline]
pub(crate) fn tuple_item<'a, 'py>(tuple: &'a Bound<'py, PyTuple>, i: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
    use pyo3::types::PyTupleMethods;
    tuple.get_borrowed_item(i).ok()
}
