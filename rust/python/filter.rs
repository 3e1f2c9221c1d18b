//! Bindings for the tool filter: folds, globs, rule sets and the static
//! filter, whose batches live in `batch` and whose compile in `build`.

use std::cell::RefCell;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::batch::{self, threads_arg, Select};
use super::{bytes_str, str_bytes};
use crate::filter::{FlagScratch, StaticFilter};
use crate::fold::Fold;
use crate::glob::SegmentGlob;
use crate::rules::{self, RuleSet, Scratch};

thread_local! {
    /// Per-thread buffers for scalar queries: no allocation per call.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static FLAG_SCRATCH: RefCell<FlagScratch> = RefCell::new(FlagScratch::default());
}

fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    with_local(&SCRATCH, f)
}

fn with_flag_scratch<T>(f: impl FnOnce(&mut FlagScratch) -> T) -> T {
    with_local(&FLAG_SCRATCH, f)
}

/// Runs `f` with this thread's buffers in `key`, or with fresh ones when they
/// are borrowed (re-entered: no Python code runs while they are, so not
/// today) or already destroyed (a `__del__` at thread exit): never a panic.
fn with_local<S: Default + 'static, T>(
    key: &'static std::thread::LocalKey<RefCell<S>>,
    f: impl FnOnce(&mut S) -> T,
) -> T {
    let mut f = Some(f);
    let answer = key.try_with(|cell| {
        let mut scratch = cell.try_borrow_mut().ok()?;
        f.take().map(|f| f(&mut scratch))
    });
    if let Ok(Some(answer)) = answer {
        return answer;
    }
    let f = f.expect("taken only by a call that answered");
    f(&mut S::default())
}

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
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_scratch(|scratch| self.inner.first_match(&server, &tool, scratch)))
    }

    fn is_match(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_scratch(|scratch| self.inner.is_match(&server, &tool, scratch)))
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

/// The static part of a ToolFilter: string patterns of both options and the
/// server globs of the regex patterns.
#[pyclass(module = "toolfilter_fast._core", name = "StaticFilter", frozen)]
pub(super) struct PyStaticFilter {
    inner: StaticFilter,
}

impl PyStaticFilter {
    pub(super) fn new(inner: StaticFilter) -> Self {
        PyStaticFilter { inner }
    }

    pub(super) fn inner(&self) -> &StaticFilter {
        &self.inner
    }
}

#[pymethods]
impl PyStaticFilter {
    /// Flag bits for one tool with raw annotation hints `hints`: 1 excluded
    /// by a string or annotation pattern, 2 an exclude regex's server glob
    /// matches, 4 included by a string or annotation pattern, 8 an include
    /// regex's server glob matches.
    #[pyo3(signature = (server_id, name, hints=0))]
    fn flags(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>, hints: u8) -> PyResult<u8> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_flag_scratch(|scratch| self.inner.flags_with_hints(&server, &tool, hints, scratch)))
    }

    /// The static decision for one tool: 0 hidden, 1 visible, 2 a regex must decide.
    #[pyo3(signature = (server_id, name, hints=0))]
    fn outcome(&self, server_id: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>, hints: u8) -> PyResult<u8> {
        let (server, tool) = (str_bytes(server_id, "server_id")?, str_bytes(name, "name")?);
        Ok(with_flag_scratch(|scratch| self.inner.outcome(self.inner.flags_with_hints(&server, &tool, hints, scratch)))
            as u8)
    }

    /// A batch over a list of tools (objects with `server_id` and `name`);
    /// `hints_of(tool)` gives the raw hints of a tool that is not an exact
    /// `Tool`, for a filter with annotation patterns.
    #[pyo3(signature = (tools, mode, judge=None, recheck=false, threads=None, hints_of=None))]
    #[allow(clippy::too_many_arguments)]
    fn select_tools<'py>(
        &self,
        tools: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        recheck: bool,
        threads: Option<&Bound<'py, PyAny>>,
        hints_of: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (select, threads) = (Select::parse(mode)?, threads_arg(threads)?);
        batch::select_tools(&self.inner, tools, select, judge, recheck, threads, hints_of)
    }

    /// Whether the filter has annotation patterns (its batches read hints).
    #[getter]
    fn uses_hints(&self) -> bool {
        self.inner.uses_hints()
    }

    /// A batch over a list of `(server_id, name)` tuples. `judge` is called
    /// as `judge(server_id, name)`.
    #[pyo3(signature = (pairs, mode, judge=None, threads=None))]
    fn select_pairs<'py>(
        &self,
        pairs: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        threads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (select, threads) = (Select::parse(mode)?, threads_arg(threads)?);
        batch::select_pairs(&self.inner, pairs, select, judge, threads)
    }

    /// A batch over two parallel lists of strings. `judge` is called as
    /// `judge(server_id, name)`.
    #[pyo3(signature = (server_ids, names, mode, judge=None, threads=None))]
    fn select_columns<'py>(
        &self,
        server_ids: &Bound<'py, PyList>,
        names: &Bound<'py, PyList>,
        mode: &str,
        judge: Option<&Bound<'py, PyAny>>,
        threads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (select, threads) = (Select::parse(mode)?, threads_arg(threads)?);
        batch::select_columns(&self.inner, server_ids, names, select, judge, threads)
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fold_loose, m)?)?;
    m.add_function(wrap_pyfunction!(fold_lower, m)?)?;
    m.add_function(wrap_pyfunction!(glob_match, m)?)?;
    m.add_function(wrap_pyfunction!(server_glob_problem, m)?)?;
    m.add_class::<PyRuleSet>()?;
    m.add_class::<PySegmentGlob>()?;
    m.add_class::<PyStaticFilter>()?;
    Ok(())
}

