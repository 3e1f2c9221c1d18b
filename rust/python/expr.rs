//! Bindings for expression (CEL) patterns and annotation hints: a compiled
//! program, the conversion of Python values into CEL values, and the
//! effective value of raw hints.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cel::common::types::{CelBool, CelBytes, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt};
use cel::common::value::Val;
use pyo3::exceptions::{PyAttributeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

use super::inplace::Quiet;
use super::{string_bytes, type_name};
use crate::expr::{Expression, Failure, Reads, SharedValue, DEFAULT_MAX_COST};
use crate::hints;

/// How deep a Python value may nest to become a CEL value: the conversion
/// recurses, and so does the evaluator on what it is given.
const MAX_VALUE_DEPTH: usize = 32;

/// A compiled CEL expression.
#[pyclass(module = "toolfilter_fast._core", name = "CelProgram", frozen)]
struct PyCelProgram {
    inner: Expression,
    /// The program under the last `CelValue` it ran with (by its number),
    /// made on the second evaluation with it (see [`Expression::under`]).
    under: Mutex<(u64, Option<Arc<Expression>>)>,
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
        Ok(PyCelProgram { inner, under: Mutex::new((0, None)) })
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
    /// result of another type, a cost over the budget. Only what the program
    /// reads is built; the rest is checked as it would be converted.
    fn evaluate(&self, py: Python<'_>, tool: &Bound<'_, PyAny>, ctx: &Bound<'_, PyAny>) -> (Option<bool>, Option<String>) {
        match to_cel(tool, 0, &|| "tool".to_string(), Build::of(self.inner.tool_reads())) {
            Ok(tool) => self.run(py, tool, ctx),
            Err(reason) => (None, Some(reason)),
        }
    }

    /// [`evaluate`](Self::evaluate) of the `tool` value an expression sees
    /// of the object `tool` (None for a bare pair): `server_id` and `name`
    /// as given, `title` and `description` (a `str`, else null) and `meta`
    /// (a mapping, else null) read as attributes (a missing one is null),
    /// `annotations` the effective hints of `hints_of(tool)` (`trusted`: as
    /// a trusted server's). The attributes are read whether the expression
    /// reads them or not, in that order; an exception reading one is raised.
    fn evaluate_tool(
        &self,
        tool: &Bound<'_, PyAny>,
        server_id: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        trusted: bool,
        ctx: &Bound<'_, PyAny>,
        hints_of: &Bound<'_, PyAny>,
    ) -> PyResult<(Option<bool>, Option<String>)> {
        let fields = ToolFields::read(tool, server_id, name, trusted, hints_of)?;
        Ok(match fields.convert(self.inner.tool_reads()) {
            Ok(value) => self.run(tool.py(), value, ctx),
            Err(reason) => (None, Some(reason)),
        })
    }
}

impl PyCelProgram {
    /// Runs the program on a converted `tool`, with `ctx` (a `CelValue` or a
    /// Python value), as a verdict or why there is none.
    fn run(&self, py: Python<'_>, tool: Box<dyn Val>, ctx: &Bound<'_, PyAny>) -> (Option<bool>, Option<String>) {
        let wanted = self.inner.ctx_reads();
        let fresh;
        let mut under = None;
        let ctx = match ctx.cast::<PyCelValue>() {
            Ok(shared) => {
                let shared = shared.get();
                match &shared.inner {
                    Err(reason) => return (None, Some(reason.clone())),
                    Ok(value) if shared.reads.covers(wanted) => {
                        under = self.under(shared.number, value);
                        value
                    }
                    // Built for other programs: converted anew for this one.
                    Ok(_) => match shared_ctx(shared.source.bind(py), wanted) {
                        Ok(value) => {
                            fresh = value;
                            &fresh
                        }
                        Err(reason) => return (None, Some(reason)),
                    },
                }
            }
            Err(_) => match shared_ctx(ctx, wanted) {
                Ok(value) => {
                    fresh = value;
                    &fresh
                }
                Err(reason) => return (None, Some(reason)),
            },
        };
        let program = under.as_deref().unwrap_or(&self.inner);
        // A program with loops lets other threads run meanwhile; one without
        // runs in time linear in its source and values (no longer than
        // their conversion, which holds the GIL), too short to hand it over.
        let outcome = if program.estimate() > 0 {
            py.detach(|| program.evaluate_vals(tool, ctx))
        } else {
            program.evaluate_vals(tool, ctx)
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

impl PyCelProgram {
    /// The program under the `CelValue` numbered `number` holding `ctx`:
    /// None the first time it runs with it (a value read once is not worth
    /// the work), made the second time and kept until another comes.
    fn under(&self, number: u64, ctx: &SharedValue) -> Option<Arc<Expression>> {
        if !self.inner.reads_ctx() {
            return None;
        }
        let mut under = self.under.lock().unwrap_or_else(PoisonError::into_inner);
        if under.0 != number {
            *under = (number, None);
            return None;
        }
        Some(Arc::clone(under.1.get_or_insert_with(|| Arc::new(self.inner.under(ctx)))))
    }
}

/// `ctx` converted for what `reads` names (the rest checked).
fn shared_ctx(ctx: &Bound<'_, PyAny>, reads: &Reads) -> Result<SharedValue, String> {
    to_cel(ctx, 0, &|| "ctx".to_string(), Build::of(reads)).map(SharedValue::from_val)
}

/// The fields of the `tool` value an expression sees, read from the object.
struct ToolFields<'a, 'py> {
    server_id: &'a Bound<'py, PyAny>,
    name: &'a Bound<'py, PyAny>,
    title: Option<Bound<'py, PyAny>>,
    description: Option<Bound<'py, PyAny>>,
    hints: u8,
    meta: Option<Bound<'py, PyAny>>,
}

impl<'a, 'py> ToolFields<'a, 'py> {
    fn read(
        tool: &Bound<'py, PyAny>,
        server_id: &'a Bound<'py, PyAny>,
        name: &'a Bound<'py, PyAny>,
        trusted: bool,
        hints_of: &Bound<'py, PyAny>,
    ) -> PyResult<Self> {
        let mut fields = ToolFields { server_id, name, title: None, description: None, hints: 0, meta: None };
        if tool.is_none() {
            fields.hints = effective_hints(0, trusted);
            return Ok(fields);
        }
        let py = tool.py();
        let meta = attribute(tool, pyo3::intern!(py, "meta"))?;
        let is_text = |value: Option<Bound<'py, PyAny>>| -> PyResult<Option<Bound<'py, PyAny>>> {
            match value {
                Some(value) if value.is_instance(&py.get_type::<PyString>())? => Ok(Some(value)),
                _ => Ok(None),
            }
        };
        fields.title = is_text(attribute(tool, pyo3::intern!(py, "title"))?)?;
        fields.description = is_text(attribute(tool, pyo3::intern!(py, "description"))?)?;
        // `hints_of(tool)`, which for a `Tool` reads the byte it keeps.
        let raw = if tool.get_type().is(tool_class(py)?) {
            tool.getattr(pyo3::intern!(py, "_hints"))?
        } else {
            hints_of.call1((tool,))?
        };
        fields.hints = effective_hints(raw.extract::<u8>()?, trusted);
        fields.meta = match meta {
            Some(meta) if meta.is_instance(&mapping_abc(py)?)? => Some(meta),
            _ => None,
        };
        Ok(fields)
    }

    /// The `tool` map, built for `reads`: the fields it does not read are
    /// checked (in the order of the map's keys), not built.
    fn convert(&self, reads: &Reads) -> Result<Box<dyn Val>, String> {
        let build = match reads {
            Reads::Nothing => Build::Fields(&NO_FIELDS),
            reads => Build::of(reads),
        };
        let none = |value: &Option<Bound<'py, PyAny>>| value.clone();
        let entries: [(&str, Option<Bound<'py, PyAny>>); 6] = [
            ("server_id", Some(self.server_id.clone())),
            ("name", Some(self.name.clone())),
            ("title", none(&self.title)),
            ("description", none(&self.description)),
            ("annotations", None),
            ("meta", none(&self.meta)),
        ];
        let mut map: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::with_capacity(entries.len());
        for (key, value) in entries {
            let want = build.field(key);
            let built = !matches!(want, Build::Check);
            let value: Box<dyn Val> = match value {
                Some(value) => to_cel(&value, 1, &|| format!("tool[{key:?}]"), want)?,
                None if built && key == "annotations" => self.annotations(),
                None => Box::new(CelNull),
            };
            if built {
                map.insert(CelMapKey::String(CelString::from(key)), value);
            }
        }
        Ok(Box::new(CelMap::from(map)))
    }
}

impl ToolFields<'_, '_> {
    /// The effective hints as a map of the four bools.
    fn annotations(&self) -> Box<dyn Val> {
        let each = hints::HINTS.iter().enumerate().map(|(i, hint)| {
            (CelMapKey::String(CelString::from(*hint)), Box::new(CelBool::from(self.hints >> i & 1 == 1)) as Box<dyn Val>)
        });
        Box::new(CelMap::from(each.collect::<HashMap<_, _>>()))
    }
}

/// A map of which no entry is read.
static NO_FIELDS: BTreeMap<String, Reads> = BTreeMap::new();

/// `getattr(obj, name, None)`: a missing attribute is None, any other
/// exception is raised.
fn attribute<'py>(obj: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj.getattr(name) {
        Ok(value) if value.is_none() => Ok(None),
        Ok(value) => Ok(Some(value)),
        Err(err) if err.is_instance_of::<PyAttributeError>(obj.py()) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The package's `Tool` class.
fn tool_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TOOL: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    TOOL.get_or_try_init(py, || py.import("toolfilter_fast._tool")?.getattr("Tool").map(Bound::unbind))
        .map(|tool| tool.bind(py))
}

/// `collections.abc.Mapping`.
fn mapping_abc(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static MAPPING: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    MAPPING
        .get_or_try_init(py, || py.import("collections.abc")?.getattr("Mapping").map(Bound::unbind))
        .map(|mapping| mapping.bind(py).clone())
}

/// A Python value converted to CEL once (a call's `ctx`), or why it cannot
/// be: every evaluation given it then fails with that reason.
/// It is built for what some programs read of it (all of it when none
/// are named): a program that reads more converts `source` anew.
#[pyclass(module = "toolfilter_fast._core", name = "CelValue", frozen)]
struct PyCelValue {
    inner: Result<SharedValue, String>,
    reads: Reads,
    source: Py<PyAny>,
    /// This value's own number (from 1), never another's.
    number: u64,
}

/// The last number given a `CelValue`.
static NUMBERED: AtomicU64 = AtomicU64::new(0);

#[pymethods]
impl PyCelValue {
    #[new]
    #[pyo3(signature = (value, programs = None))]
    fn new(value: &Bound<'_, PyAny>, programs: Option<&Bound<'_, PyTuple>>) -> PyResult<Self> {
        let reads = match programs {
            None => Reads::Whole,
            Some(programs) => {
                let mut reads = Reads::Nothing;
                for program in programs.iter() {
                    reads.union(program.cast::<PyCelProgram>()?.get().inner.ctx_reads());
                }
                reads
            }
        };
        let number = NUMBERED.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(PyCelValue { inner: shared_ctx(value, &reads), reads, source: value.clone().unbind(), number })
    }
}

/// What of a Python value [`convert`] builds.
#[derive(Clone, Copy)]
enum Build<'r> {
    /// All of it.
    All,
    /// The entries of a mapping named here, each as its reads say; other
    /// entries are checked only. Any other value is built whole.
    Fields(&'r BTreeMap<String, Reads>),
    /// Nothing: the value is checked as it would be converted (the same
    /// errors, in the same order), and stands as a null.
    Check,
}

impl<'r> Build<'r> {
    fn of(reads: &'r Reads) -> Self {
        match reads {
            Reads::Nothing => Build::Check,
            Reads::Whole => Build::All,
            Reads::Fields(fields) => Build::Fields(fields),
        }
    }

    /// What to build of the entry `key` of a mapping built so.
    fn field(self, key: &str) -> Build<'r> {
        match self {
            Build::All => Build::All,
            Build::Check => Build::Check,
            Build::Fields(fields) => fields.get(key).map_or(Build::Check, Build::of),
        }
    }
}

/// Why [`convert`] gave no value.
enum Stop {
    /// The value has no CEL value: the message says why.
    Error(String),
    /// The quick pass met a value whose reading may run Python code.
    Python,
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Error(message)
    }
}

/// A Python value as a CEL value in the evaluator's own form, or why it
/// cannot be one (`at` names where in the value it is, as `tool.meta["k"]`;
/// called only for an error), built as `build` says (a part checked only is
/// a null). A quick pass reads dicts in place; a value whose reading may run
/// Python code (a mapping's own `items`, a list subclass's iterator) sends
/// it back to a pass that reads through snapshots and owned handles. The
/// quick pass runs no Python code, so its giving up changes nothing.
fn to_cel(obj: &Bound<'_, PyAny>, depth: usize, at: &dyn Fn() -> String, build: Build<'_>) -> Result<Box<dyn Val>, String> {
    let slow = || match convert(obj, depth, at, build, false) {
        Ok(value) => Ok(value),
        Err(Stop::Error(message)) => Err(message),
        Err(Stop::Python) => Err(format!("{} could not be read", at())),
    };
    // The quick pass calls no Python code, but it allocates (an exception for
    // a value it gives up on, an iterator of an exact list): with the cyclic
    // collector running, that could start a collection whose finalizers are
    // Python code, and one that changed a dict being read would end pyo3's
    // iteration of it in a panic. The collector is paused for the pass.
    let quick = {
        let _quiet = Quiet::new(obj.py());
        convert(obj, depth, at, build, true)
    };
    match quick {
        Ok(value) => Ok(value),
        Err(Stop::Error(message)) => Err(message),
        Err(Stop::Python) => slow(),
    }
}

/// [`to_cel`]'s passes: `quick` reads no Python code (see there).
fn convert(obj: &Bound<'_, PyAny>, depth: usize, at: &dyn Fn() -> String, build: Build<'_>, quick: bool) -> Result<Box<dyn Val>, Stop> {
    let check = matches!(build, Build::Check);
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("{} nests deeper than {MAX_VALUE_DEPTH} levels", at()).into());
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
            Err(_) => Err(format!("{} is an int out of CEL's range", at()).into()),
        };
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        return Ok(Box::new(CelDouble::from(float.value())));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        if check {
            return Ok(checked_text(text, at).map(|()| Box::new(CelNull) as Box<dyn Val>)?);
        }
        return Ok(text_value(text, at).map(|text| Box::new(CelString::from(text)) as Box<dyn Val>)?);
    }
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        if check {
            return Ok(Box::new(CelNull));
        }
        return Ok(Box::new(CelBytes::from(bytes.as_bytes().to_vec())));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        if quick && !(obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>()) {
            return Err(Stop::Python);
        }
        let items = obj.try_iter().map_err(|e| format!("{}: {e}", at()))?;
        let each = if check { Build::Check } else { Build::All };
        let mut list: Vec<Box<dyn Val>> = Vec::new();
        for (i, item) in items.enumerate() {
            let item = item.map_err(|e| format!("{}[{i}]: {e}", at()))?;
            let value = convert(&item, depth + 1, &|| format!("{}[{i}]", at()), each, quick)?;
            if !check {
                list.push(value);
            }
        }
        if check {
            return Ok(Box::new(CelNull));
        }
        return Ok(Box::new(CelList::from(list)));
    }
    let mut map: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::new();
    let mut entry = |key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>| -> Result<(), Stop> {
        if let Some((key, value)) = convert_entry(key, value, depth, at, build, quick)? {
            map.insert(key, value);
        }
        Ok(())
    };
    match obj.cast::<PyDict>() {
        // A dict's entries in place: the quick pass runs no Python code and
        // keeps the GIL, so nothing can change the dict as it is read (the
        // iterator's checks for that never fire).
        Ok(dict) if quick => {
            for (key, value) in dict.iter() {
                entry(&key, &value)?;
            }
        }
        _ if quick => return Err(Stop::Python),
        dict => {
            let items = match dict {
                Ok(dict) => dict.items(),
                Err(_) => match obj.cast::<PyMapping>() {
                    Ok(mapping) => mapping.items().map_err(|e| format!("{}: {e}", at()))?,
                    Err(_) => return Err(format!("{} is a {}, which has no CEL value", at(), type_name(obj)).into()),
                },
            };
            for item in items.iter() {
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                    item.extract().map_err(|e| format!("{}: {e}", at()))?;
                entry(&key, &value)?;
            }
        }
    }
    if check {
        return Ok(Box::new(CelNull));
    }
    Ok(Box::new(CelMap::from(map)))
}

/// A CEL map's entry.
type Entry = (CelMapKey<'static>, Box<dyn Val>);

/// One entry of a mapping [`convert`] reads: the key and value built, None
/// when `build` keeps no value of it (it is checked only).
fn convert_entry(
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    depth: usize,
    at: &dyn Fn() -> String,
    build: Build<'_>,
    quick: bool,
) -> Result<Option<Entry>, Stop> {
    let key_text = key.cast::<PyString>().ok();
    // An int key is read by `__index__`, which may be Python code.
    if quick && key_text.is_none() && !key.is_instance_of::<PyInt>() {
        return Err(Stop::Python);
    }
    let label = || match key_text {
        Some(text) => format!("{}[{:?}]", at(), String::from_utf8_lossy(&string_bytes(text).unwrap_or_default())),
        None => format!("{}[{}]", at(), key.extract::<i64>().map(|i| i.to_string()).unwrap_or_default()),
    };
    // The key's text decides what to build of the value; its error, if
    // any, comes after the value's own.
    // (`valid`: the key's text was read and is valid, so needs no check.)
    let (want, valid) = match (build, key_text) {
        (Build::All | Build::Check, _) => (build, false),
        (Build::Fields(_), Some(text)) => match string_bytes(text).as_deref().map(std::str::from_utf8) {
            Ok(Ok(text)) => (build.field(text), true),
            _ => (Build::Check, false),
        },
        (Build::Fields(_), None) => (Build::Check, false),
    };
    let value = convert(value, depth + 1, &label, want, quick)?;
    let kept = !matches!(want, Build::Check) || matches!(build, Build::All);
    let key = if let Some(text) = key_text {
        if !kept {
            if !valid {
                checked_text(text, at)?;
            }
            return Ok(None);
        }
        CelMapKey::String(CelString::from(text_value(text, at)?))
    } else if key.is_instance_of::<PyBool>() {
        CelMapKey::Bool(CelBool::from(key.is_truthy().map_err(|e| format!("{}: {e}", at()))?))
    } else if let Ok(int) = key.extract::<i64>() {
        CelMapKey::Int(CelInt::from(int))
    } else {
        return Err(format!("{} has a key of type {}, which CEL maps cannot hold", at(), type_name(key)).into());
    };
    Ok(kept.then_some((key, value)))
}

/// Whether a `str` has a CEL value ([`text_value`] without the copy).
fn checked_text(text: &Bound<'_, PyString>, at: &dyn Fn() -> String) -> Result<(), String> {
    let bytes = string_bytes(text).map_err(|e| format!("{}: {e}", at()))?;
    match std::str::from_utf8(&bytes) {
        Ok(_) => Ok(()),
        Err(_) => Err(format!("{} holds a lone surrogate, which CEL text cannot", at())),
    }
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
