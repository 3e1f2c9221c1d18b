//! Bindings for name patterns: the globs (`*`, `?`) of MCP's list filters.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::str_bytes;
use crate::index::Scratch;
use crate::name_patterns::NamePatterns;

/// The bytes of `obj`, or a TypeError naming it as `what()` (formatted only on error).
fn item_bytes<'a>(obj: &'a Bound<'_, PyAny>, what: impl Fn() -> String) -> PyResult<Cow<'a, [u8]>> {
    if obj.is_instance_of::<PyString>() {
        str_bytes(obj, "")
    } else {
        str_bytes(obj, &what())
    }
}

/// A compiled set of name patterns; a name matches when any pattern does.
#[pyclass(module = "toolfilter_fast._core", name = "NamePatterns", frozen)]
struct PyNamePatterns {
    inner: NamePatterns,
}

#[pymethods]
impl PyNamePatterns {
    /// `patterns`: an iterable of str; TypeError names the first that is not
    /// one, as `patterns[i]`.
    #[new]
    fn new(patterns: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut owned = Vec::new();
        for (i, item) in patterns.try_iter()?.enumerate() {
            let item = item?;
            owned.push(item_bytes(&item, || format!("patterns[{i}]"))?.into_owned());
        }
        Ok(PyNamePatterns { inner: NamePatterns::new(owned.iter().map(Vec::as_slice)) })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Whether any pattern matches the whole of `name`.
    fn is_match(&self, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.inner.is_match(&str_bytes(name, "name")?, &mut Scratch::default()))
    }

    /// `[self.is_match(name) for name in names]`, one scratch for all;
    /// TypeError names the first that is not a str, as `names[i]`.
    fn matches(&self, names: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        for (i, item) in names.try_iter()?.enumerate() {
            let item = item?;
            out.push(self.inner.is_match(&item_bytes(&item, || format!("names[{i}]"))?, &mut scratch));
        }
        Ok(out)
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNamePatterns>()
}
