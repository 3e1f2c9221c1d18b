//! Bindings for the tool filter: folds, globs and rule sets.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::{bytes_str, str_bytes};
use crate::fold::Fold;
use crate::glob::SegmentGlob;
use crate::rules::{self, RuleSet};

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
        Ok(self.inner.first_match(&str_bytes(server_id, "server_id")?, &str_bytes(name, "name")?))
    }

    fn is_match(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.inner.is_match(&str_bytes(server_id, "server_id")?, &str_bytes(name, "name")?))
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

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fold_loose, m)?)?;
    m.add_function(wrap_pyfunction!(fold_lower, m)?)?;
    m.add_function(wrap_pyfunction!(glob_match, m)?)?;
    m.add_function(wrap_pyfunction!(server_glob_problem, m)?)?;
    m.add_class::<PyRuleSet>()?;
    m.add_class::<PySegmentGlob>()?;
    Ok(())
}
