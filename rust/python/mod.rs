//! The one binding module: converts Python objects to the core's byte strings
//! and back, and maps the core's errors to Python exceptions. No matching
//! logic lives here. Each feature's classes sit in a submodule; this file holds
//! the string conversions they share and registers the Python module.

use std::borrow::Cow;
use std::sync::OnceLock;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyType};

mod filter;
mod focus;
mod groups;

/// The extension's allocator: the system's, plus a bounded cache of freed
/// large blocks (see `crate::recycle`).
#[global_allocator]
static ALLOCATOR: crate::recycle::Recycling = crate::recycle::Recycling::new();

/// The generalized UTF-8 bytes of a Python `str` (lone surrogates kept, via
/// `surrogatepass`). `what` names the argument in the TypeError for a non-str.
pub(crate) fn str_bytes<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    string_bytes(as_str(obj, || what.to_string())?)
}

/// `obj` as a Python `str`, or a TypeError naming `what()` (built only on error).
pub(crate) fn as_str<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    what: impl FnOnce() -> String,
) -> PyResult<&'a Bound<'py, PyString>> {
    obj.cast::<PyString>().map_err(|_| {
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!("{} must be str, not {type_name}", what()))
    })
}

/// The generalized UTF-8 bytes of a Python `str`.
pub(crate) fn string_bytes<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    // SAFETY: `s` is a str, and the borrow keeps it alive for 'a.
    unsafe { str_ptr_bytes(s.py(), s.as_ptr()) }
}

/// The generalized UTF-8 bytes of the `str` at `ptr`, borrowed for `'a`.
///
/// # Safety
/// `ptr` is a `str` (a subclass too) that its owner keeps alive for `'a`; a
/// str never changes, and its UTF-8 view lives as long as it does.
#[inline]
pub(crate) unsafe fn str_ptr_bytes<'a>(py: Python<'_>, ptr: *mut ffi::PyObject) -> PyResult<Cow<'a, [u8]>> {
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size);
    if !data.is_null() {
        return Ok(Cow::Borrowed(std::slice::from_raw_parts(data.cast::<u8>(), size as usize)));
    }
    surrogate_bytes(py, ptr)
}

/// [`str_ptr_bytes`] for a str with lone surrogates, which have no UTF-8 view.
#[cold]
unsafe fn surrogate_bytes<'a>(py: Python<'_>, ptr: *mut ffi::PyObject) -> PyResult<Cow<'a, [u8]>> {
    // Encode them losslessly. The C call, not `s.encode(...)`: a str
    // subclass cannot run code here.
    drop(PyErr::take(py));
    let encoded = Bound::from_owned_ptr_or_err(
        py,
        ffi::PyUnicode_AsEncodedString(ptr, c"utf-8".as_ptr(), c"surrogatepass".as_ptr()),
    )?;
    Ok(Cow::Owned(encoded.cast::<PyBytes>()?.as_bytes().to_vec()))
}

/// The Python `str` for generalized UTF-8 bytes.
pub(crate) fn bytes_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(PyString::new(py, text)),
        Err(_) => {
            let decoded = PyBytes::new(py, bytes).call_method1("decode", ("utf-8", "surrogatepass"))?;
            Ok(decoded.cast_into::<PyString>()?)
        }
    }
}

/// Where instances of the package's `Tool` class keep `server_id` and `name`.
///
/// A batch over a million tools spends most of its time reading two fields of
/// each: two attribute lookups (type dict, descriptor, call) per tool. The
/// class is a slots dataclass, so each field is a pointer at a fixed offset of
/// the instance; the offsets are learned once from a probe instance (by
/// finding its two field objects inside it) and checked to be plain slots of a
/// class with the default attribute lookup. Then a batch reads an instance of
/// exactly that class with two loads; anything else (a subclass, a duck-typed
/// object, an unset or non-`str` field) takes the attribute lookup as before.
pub(crate) struct ToolLayout {
    class: Py<PyType>,
    server_id: usize,
    name: usize,
}

static TOOL_LAYOUT: OnceLock<ToolLayout> = OnceLock::new();

impl ToolLayout {
    /// The registered layout, if the `Tool` class could be learned.
    #[inline]
    pub(crate) fn get() -> Option<&'static ToolLayout> {
        TOOL_LAYOUT.get()
    }

    /// Whether `obj` is exactly the registered class.
    #[inline]
    fn is_instance(&self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY: `obj` is a live object (the caller holds the GIL and a reference).
        unsafe { ffi::Py_TYPE(obj) == self.class.as_ptr().cast::<ffi::PyTypeObject>() }
    }

    /// The field at `offset` of an instance of the class.
    #[inline]
    fn field(obj: *mut ffi::PyObject, offset: usize) -> *mut ffi::PyObject {
        // SAFETY: `offset` lies inside the instance (checked against
        // `__basicsize__` at registration) and holds an object pointer or NULL.
        unsafe { obj.cast::<u8>().add(offset).cast::<*mut ffi::PyObject>().read() }
    }

    /// `server_id` and `name` of `obj` when it is an exact `Tool` whose two
    /// fields are set and are `str`; None sends the caller to the attribute lookup.
    /// They are borrowed, as `obj` is: no reference count is written (a
    /// batch over a million tools would dirty two million cache lines), so
    /// the caller must run no Python code while it uses them.
    #[inline]
    pub(crate) fn fields<'a, 'py>(
        &self,
        obj: &Borrowed<'a, 'py, PyAny>,
    ) -> Option<(Borrowed<'a, 'py, PyString>, Borrowed<'a, 'py, PyString>)> {
        let ptr = obj.as_ptr();
        if !self.is_instance(ptr) {
            return None;
        }
        let (server_id, name) = (Self::field(ptr, self.server_id), Self::field(ptr, self.name));
        // SAFETY: both pointers are checked non-NULL before use; `obj` holds
        // them for as long as it is borrowed and no Python code runs.
        unsafe {
            if server_id.is_null() || name.is_null() {
                return None;
            }
            if ffi::PyUnicode_Check(server_id) == 0 || ffi::PyUnicode_Check(name) == 0 {
                return None;
            }
            let py = obj.py();
            Some((
                Borrowed::from_ptr(py, server_id).cast_unchecked(),
                Borrowed::from_ptr(py, name).cast_unchecked(),
            ))
        }
    }

    /// Asks the CPU to start loading `obj`'s name string, which a batch will
    /// read a few items later (the strings of a catalog are scattered in memory).
    #[inline]
    pub(crate) fn prefetch_name(&self, obj: *mut ffi::PyObject) {
        if obj.is_null() || !self.is_instance(obj) {
            return;
        }
        prefetch_object(Self::field(obj, self.name));
    }
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
pub(crate) fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it does not fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Learns where the `Tool` class keeps its two fields from `probe`, an
/// instance whose `server_id` and `name` are two distinct `str` objects.
/// Returns whether the fast read is on; it stays off (and batches use the
/// attribute lookup) unless both fields are plain slots found exactly once.
#[pyfunction]
fn register_tool_class(probe: &Bound<'_, PyAny>) -> PyResult<bool> {
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
    let mut offsets = [0usize; 2];
    for (slot, attr) in offsets.iter_mut().zip(["server_id", "name"]) {
        if !class_dict.get_item(attr)?.is_instance(&slot_type)? {
            return Ok(false);
        }
        let value = probe.getattr(attr)?;
        if !value.is_instance_of::<PyString>() {
            return Ok(false);
        }
        let found: Vec<usize> = (header..basic_size.saturating_sub(word - 1))
            .step_by(word)
            .filter(|&offset| ToolLayout::field(probe.as_ptr(), offset) == value.as_ptr())
            .collect();
        let [offset] = found[..] else { return Ok(false) };
        *slot = offset;
    }
    if offsets[0] == offsets[1] {
        return Ok(false);
    }
    let layout = ToolLayout { class: class.unbind(), server_id: offsets[0], name: offsets[1] };
    // A second registration (a reloaded module) keeps the first layout.
    let _ = TOOL_LAYOUT.set(layout);
    Ok(TOOL_LAYOUT.get().is_some_and(|l| l.is_instance(probe.as_ptr())))
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(register_tool_class, m)?)?;
    filter::register(m)?;
    focus::register(m)?;
    groups::register(m)?;
    Ok(())
}
