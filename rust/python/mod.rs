//! The one binding module: converts Python objects to the core's byte strings
//! and back, and maps the core's errors to Python exceptions. No matching
//! logic lives here. Each feature's classes sit in a submodule; this file holds
//! the string conversions they share and registers the Python module.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

mod filter;
mod groups;

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
    match s.to_str() {
        Ok(text) => Ok(Cow::Borrowed(text.as_bytes())),
        // Only lone surrogates make the UTF-8 view fail; encode them losslessly.
        // The C call, not `s.encode(...)`: a str subclass cannot run code here.
        Err(_) => {
            let encoded = unsafe {
                let ptr = pyo3::ffi::PyUnicode_AsEncodedString(
                    s.as_ptr(),
                    c"utf-8".as_ptr(),
                    c"surrogatepass".as_ptr(),
                );
                Bound::from_owned_ptr_or_err(s.py(), ptr)?
            };
            Ok(Cow::Owned(encoded.cast::<PyBytes>()?.as_bytes().to_vec()))
        }
    }
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

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    filter::register(m)?;
    groups::register(m)?;
    Ok(())
}
