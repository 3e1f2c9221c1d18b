//! Bindings for expression (CEL) patterns and annotation hints: a compiled
//! program, the conversion of Python values into CEL values, and the
//! effective value of raw hints.

use std::collections::HashMap;

use cel::objects::Key;
use cel::Value;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

use super::{string_bytes, type_name};
use crate::expr::{Expression, Failure};
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
    /// Compiles `source`; ValueError with the parser's message when it cannot.
    #[new]
    fn new(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<Self> {
        let source = super::as_str(source, || "source".to_string())?;
        let text = source.to_str().map_err(|_| PyValueError::new_err("the expression holds a lone surrogate"))?.to_owned();
        let inner = py.detach(|| Expression::compile(&text)).map_err(PyValueError::new_err)?;
        Ok(PyCelProgram { inner })
    }

    /// Whether the expression reads `ctx` (a dynamic pattern).
    #[getter]
    fn reads_ctx(&self) -> bool {
        self.inner.reads_ctx()
    }

    /// Runs the program with `tool` and `ctx` bound (Python values: None,
    /// bool, int, float, str, bytes, lists, tuples and mappings of them).
    /// Returns `(verdict, None)`, or `(None, reason)` when there is no bool
    /// verdict: a value that cannot be converted, an error of the program, a
    /// result of another type.
    fn evaluate(&self, py: Python<'_>, tool: &Bound<'_, PyAny>, ctx: &Bound<'_, PyAny>) -> (Option<bool>, Option<String>) {
        let values = to_value(tool, 0, "tool").and_then(|tool| Ok((tool, to_value(ctx, 0, "ctx")?)));
        let (tool, ctx) = match values {
            Ok(values) => values,
            Err(reason) => return (None, Some(reason)),
        };
        match py.detach(|| self.inner.evaluate(tool, ctx)) {
            Ok(verdict) => (Some(verdict), None),
            Err(Failure::Error(message)) => (None, Some(format!("the expression failed: {message}"))),
            Err(Failure::NotBool(kind)) => (None, Some(format!("the expression gave a {kind}, not a bool"))),
        }
    }
}

/// A Python value as a CEL value, or why it cannot be one (`at` names where
/// in the value it is, as `tool.meta["k"]`). May run Python code (a mapping's
/// own `items`, an int's `__index__`): it reads through owned handles only.
fn to_value(obj: &Bound<'_, PyAny>, depth: usize, at: &str) -> Result<Value, String> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("{at} nests deeper than {MAX_VALUE_DEPTH} levels"));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(int) = obj.extract::<i64>() {
            return Ok(Value::Int(int));
        }
        return obj.extract::<u64>().map(Value::UInt).map_err(|_| format!("{at} is an int out of CEL's range"));
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(float.value()));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return text_value(text, at).map(Value::from);
    }
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        return Ok(Value::from(bytes.as_bytes().to_vec()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj.try_iter().map_err(|e| format!("{at}: {e}"))?;
        let mut list = Vec::new();
        for (i, item) in items.enumerate() {
            let item = item.map_err(|e| format!("{at}[{i}]: {e}"))?;
            list.push(to_value(&item, depth + 1, &format!("{at}[{i}]"))?);
        }
        return Ok(Value::List(list.into()));
    }
    let items = if let Ok(dict) = obj.cast::<PyDict>() {
        dict.items()
    } else if let Ok(mapping) = obj.cast::<PyMapping>() {
        mapping.items().map_err(|e| format!("{at}: {e}"))?
    } else {
        return Err(format!("{at} is a {}, which has no CEL value", type_name(obj)));
    };
    let mut map: HashMap<Key, Value> = HashMap::with_capacity(items.len());
    for item in items.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|e| format!("{at}: {e}"))?;
        let key = if let Ok(text) = key.cast::<PyString>() {
            Key::from(text_value(text, at)?)
        } else if key.is_instance_of::<PyBool>() {
            Key::Bool(key.is_truthy().map_err(|e| format!("{at}: {e}"))?)
        } else if let Ok(int) = key.extract::<i64>() {
            Key::Int(int)
        } else {
            return Err(format!("{at} has a key of type {}, which CEL maps cannot hold", type_name(&key)));
        };
        let label = format!("{at}[{key}]");
        map.insert(key, to_value(&value, depth + 1, &label)?);
    }
    Ok(Value::from(map))
}

/// A `str` as CEL text: a lone surrogate has no CEL value (a replacement
/// character would let a pattern written for another name match it).
fn text_value(text: &Bound<'_, PyString>, at: &str) -> Result<String, String> {
    let bytes = string_bytes(text).map_err(|e| format!("{at}: {e}"))?;
    String::from_utf8(bytes.into_owned()).map_err(|_| format!("{at} holds a lone surrogate, which CEL text cannot"))
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
    m.add_function(wrap_pyfunction!(effective_hints, m)?)?;
    m.add("HINTS", hints::HINTS)?;
    Ok(())
}
