//! Bindings for expression (CEL) patterns and annotation hints: a compiled
//! program, the conversion of Python values into CEL values, and the
//! effective value of raw hints.

use std::collections::HashMap;

use cel::common::types::{CelBool, CelBytes, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt};
use cel::common::value::Val;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

use super::{string_bytes, type_name};
use crate::expr::{Expression, Failure, SharedValue, DEFAULT_MAX_COST};
use crate::hints;

/// How deep a Python value may nest to become a CEL value: the conversion
/// recurses, and so does the evaluator on what it is given.
const MAX_VALUE_DEPTH: usize = 32;

/// A compiled CEL expression.
#[pyclass(module = "toolfilter_fast._core", name = "CelProgram", frozen)]
struct PyCelProgram {
    inner: Expression,
}

#[pymethods]
impl PyCelProgram {
    /// Compiles `source` with a cost budget (`max_cost`, comprehension body
    /// runs per evaluation; None for the default); ValueError with the
    /// parser's message, or the estimate over the budget, when it cannot.
    #[new]
    #[pyo3(signature = (source, max_cost = None))]
    fn new(py: Python<'_>, source: &Bound<'_, PyAny>, max_cost: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let source = super::as_str(source, || "source".to_string())?;
        let text = source.to_str().map_err(|_| PyValueError::new_err("the expression holds a lone surrogate"))?.to_owned();
        let max_cost = match max_cost {
            None => DEFAULT_MAX_COST,
            Some(value) if value.is_none() => DEFAULT_MAX_COST,
            Some(value) if value.is_exact_instance_of::<PyInt>() => value
                .extract::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| PyValueError::new_err("max_cost must be a positive int"))?,
            Some(value) => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "max_cost must be an int, not {}",
                    type_name(value)
                )))
            }
        };
        let inner = py.detach(|| Expression::compile_with_budget(&text, max_cost)).map_err(PyValueError::new_err)?;
        Ok(PyCelProgram { inner })
    }

    /// Whether the expression reads `ctx` (a dynamic pattern).
    #[getter]
    fn reads_ctx(&self) -> bool {
        self.inner.reads_ctx()
    }

    /// The cost budget the program runs under.
    #[getter]
    fn max_cost(&self) -> u64 {
        self.inner.max_cost()
    }

    /// The compile-time estimate of its cost.
    #[getter]
    fn estimate(&self) -> u64 {
        self.inner.estimate()
    }

    /// Runs the program with `tool` and `ctx` bound (Python values: None,
    /// bool, int, float, str, bytes, lists, tuples and mappings of them; `ctx`
    /// may be a `CelValue`, converted once for many evaluations).
    /// Returns `(verdict, None)`, or `(None, reason)` when there is no bool
    /// verdict: a value that cannot be converted, an error of the program, a
    /// result of another type, a cost over the budget.
    fn evaluate(&self, py: Python<'_>, tool: &Bound<'_, PyAny>, ctx: &Bound<'_, PyAny>) -> (Option<bool>, Option<String>) {
        let tool = match to_val(tool, 0, &|| "tool".to_string()) {
            Ok(tool) => tool,
            Err(reason) => return (None, Some(reason)),
        };
        let outcome = if let Ok(shared) = ctx.cast::<PyCelValue>() {
            match &shared.get().inner {
                Ok(ctx) => py.detach(|| self.inner.evaluate_vals(tool, ctx)),
                Err(reason) => return (None, Some(reason.clone())),
            }
        } else {
            match to_val(ctx, 0, &|| "ctx".to_string()) {
                Ok(ctx) => {
                    let ctx = SharedValue::from_val(ctx);
                    py.detach(|| self.inner.evaluate_vals(tool, &ctx))
                }
                Err(reason) => return (None, Some(reason)),
            }
        };
        match outcome {
            Ok(verdict) => (Some(verdict), None),
            Err(Failure::Error(message)) => (None, Some(format!("the expression failed: {message}"))),
            Err(Failure::NotBool(kind)) => (None, Some(format!("the expression gave a {kind}, not a bool"))),
            Err(Failure::Budget(limit)) => (
                None,
                Some(format!("the expression ran its loops more than its cost budget of {limit} times (max_cost)")),
            ),
        }
    }
}

/// A Python value converted to CEL once (a call's `ctx`), or why it cannot
/// be: every evaluation given it then fails with that reason.
#[pyclass(module = "toolfilter_fast._core", name = "CelValue", frozen)]
struct PyCelValue {
    inner: Result<SharedValue, String>,
}

#[pymethods]
impl PyCelValue {
    #[new]
    fn new(value: &Bound<'_, PyAny>) -> Self {
        PyCelValue { inner: to_val(value, 0, &|| "ctx".to_string()).map(SharedValue::from_val) }
    }
}

/// A Python value as a CEL value in the evaluator's own form, or why it
/// cannot be one (`at` names where in the value it is, as `tool.meta["k"]`;
/// called only for an error). May run Python code (a mapping's own `items`,
/// an int's `__index__`): it reads through owned handles only.
fn to_val(obj: &Bound<'_, PyAny>, depth: usize, at: &dyn Fn() -> String) -> Result<Box<dyn Val>, String> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("{} nests deeper than {MAX_VALUE_DEPTH} levels", at()));
    }
    if obj.is_none() {
        return Ok(Box::new(CelNull));
    }
    if let Ok(flag) = obj.cast::<PyBool>() {
        return Ok(Box::new(CelBool::from(flag.is_true())));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(int) = obj.extract::<i64>() {
            return Ok(Box::new(CelInt::from(int)));
        }
        return match obj.extract::<u64>() {
            Ok(int) => Ok(Box::new(CelUInt::from(int))),
            Err(_) => Err(format!("{} is an int out of CEL's range", at())),
        };
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        return Ok(Box::new(CelDouble::from(float.value())));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return text_value(text, at).map(|text| Box::new(CelString::from(text)) as Box<dyn Val>);
    }
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return Ok(Box::new(CelBytes::from(bytes.as_bytes().to_vec())));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj.try_iter().map_err(|e| format!("{}: {e}", at()))?;
        let mut list: Vec<Box<dyn Val>> = Vec::new();
        for (i, item) in items.enumerate() {
            let item = item.map_err(|e| format!("{}[{i}]: {e}", at()))?;
            list.push(to_val(&item, depth + 1, &|| format!("{}[{i}]", at()))?);
        }
        return Ok(Box::new(CelList::from(list)));
    }
    let items = if let Ok(dict) = obj.cast::<PyDict>() {
        dict.items()
    } else if let Ok(mapping) = obj.cast::<PyMapping>() {
        mapping.items().map_err(|e| format!("{}: {e}", at()))?
    } else {
        return Err(format!("{} is a {}, which has no CEL value", at(), type_name(obj)));
    };
    let mut map: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::with_capacity(items.len());
    for item in items.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|e| format!("{}: {e}", at()))?;
        let label = || match key.cast::<PyString>() {
            Ok(text) => format!("{}[{:?}]", at(), String::from_utf8_lossy(&string_bytes(text).unwrap_or_default())),
            Err(_) => format!("{}[{}]", at(), key.extract::<i64>().map(|i| i.to_string()).unwrap_or_default()),
        };
        let value = to_val(&value, depth + 1, &label)?;
        let key = if let Ok(text) = key.cast::<PyString>() {
            CelMapKey::String(CelString::from(text_value(text, at)?))
        } else if key.is_instance_of::<PyBool>() {
            CelMapKey::Bool(CelBool::from(key.is_truthy().map_err(|e| format!("{}: {e}", at()))?))
        } else if let Ok(int) = key.extract::<i64>() {
            CelMapKey::Int(CelInt::from(int))
        } else {
            return Err(format!("{} has a key of type {}, which CEL maps cannot hold", at(), type_name(&key)));
        };
        map.insert(key, value);
    }
    Ok(Box::new(CelMap::from(map)))
}

/// A `str` as CEL text: a lone surrogate has no CEL value (a replacement
/// character would let a pattern written for another name match it).
fn text_value(text: &Bound<'_, PyString>, at: &dyn Fn() -> String) -> Result<String, String> {
    let bytes = string_bytes(text).map_err(|e| format!("{}: {e}", at()))?;
    match std::str::from_utf8(&bytes) {
        Ok(text) => Ok(text.to_owned()),
        Err(_) => Err(format!("{} holds a lone surrogate, which CEL text cannot", at())),
    }
}

/// The effective hints (four bits, in the order of `HINTS`) of raw hints, as
/// a pattern that trusts the server (`trusted`) or not sees them.
#[pyfunction]
fn effective_hints(raw: u8, trusted: bool) -> u8 {
    if trusted {
        hints::effective(raw)
    } else {
        hints::DEFAULTS
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCelProgram>()?;
    m.add_class::<PyCelValue>()?;
    m.add_function(wrap_pyfunction!(effective_hints, m)?)?;
    m.add("HINTS", hints::HINTS)?;
    Ok(())
}
