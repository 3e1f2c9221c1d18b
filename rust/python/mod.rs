//! The one binding module: converts Python objects to the core's byte strings
//! and back, and maps the core's errors to Python exceptions. No matching
//! logic lives here. Each feature's classes sit in a submodule; this file holds
//! the string conversions they share and registers the Python module.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

mod arrow;
mod batch;
mod build;
mod expr;
mod filter;
mod focus;
mod groups;
mod inplace;
mod name_patterns;
mod search;

use inplace::{string_bytes, ToolLayout};

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
    obj.cast::<PyString>().map_err(|_| PyTypeError::new_err(format!("{} must be str, not {}", what(), type_name(obj))))
}

/// The name of `obj`'s type, for error messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
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

/// Learns where the `Tool` class keeps its two fields from `probe`, an
/// instance whose `server_id` and `name` are two distinct `str` objects.
/// Returns whether the fast read is on (see `inplace::ToolLayout`).
#[pyfunction]
fn register_tool_class(probe: &Bound<'_, PyAny>) -> PyResult<bool> {
    ToolLayout::register(probe)
}

/// The main interpreter's id: CPython numbers it 0.
const MAIN_INTERPRETER: i64 = 0;

/// Refuses to load in a sub-interpreter. The module keeps state for the whole
/// process (the `Tool` layout, `re.Pattern`, interned names, the helper
/// thread): objects of one interpreter, which another must not use, and which
/// would be freed with the sub-interpreter that made them.
fn check_interpreter() -> PyResult<()> {
    // SAFETY: the GIL is held (module initialisation), so there is a current
    // interpreter; both calls only read it.
    let id = unsafe { ffi::PyInterpreterState_GetID(ffi::PyInterpreterState_Get()) };
    if id == MAIN_INTERPRETER {
        return Ok(());
    }
    Err(pyo3::exceptions::PyImportError::new_err(format!(
        "toolfilter_fast cannot be imported in a sub-interpreter (this is interpreter {id}): its \
         Rust core keeps process-wide state that belongs to the main interpreter; import it there"
    )))
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    check_interpreter()?;
    m.add_function(wrap_pyfunction!(register_tool_class, m)?)?;
    filter::register(m)?;
    arrow::register(m)?;
    build::register(m)?;
    expr::register(m)?;
    focus::register(m)?;
    groups::register(m)?;
    name_patterns::register(m)?;
    search::register(m)?;
    Ok(())
}
