//! Bindings for the ranked tool search: the index over tools' text, built
//! from tuples of strings the Python side reads from each tool.
//!
//! Every `str` is read through an owned handle and its bytes copied at once
//! into one buffer of the catalog's text (with the text put together here, a
//! tool's parameters), which the core then reads with the GIL released: no
//! Python object is borrowed while Python code may run.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::{bytes_str, str_bytes, string_bytes, type_name};
use crate::relevance::{self, Ranking, SearchIndex, FIELDS};

/// The places of the server id and the parameters among [`FIELDS`].
const SERVER: usize = 3;
const PARAMS: usize = 4;

/// Past this many tools (or tool places), work runs with the GIL released.
const DETACH_AT: usize = 1024;

/// The ranked search index over a catalog's tools.
#[pyclass(module = "toolfilter_fast._core", name = "SearchIndex", frozen)]
struct PySearchIndex {
    inner: SearchIndex,
}

/// One field as read: a `str` the index borrows (held until the build is
/// done), or text put together here.
enum Field<'py> {
    Str(Bound<'py, PyString>),
    Made(Vec<u8>),
}

type Fields<'py> = [Option<Field<'py>>; 5];

/// The tools' fields, copied one after another into one buffer.
struct Text {
    bytes: Vec<u8>,
    /// Where each field ends in `bytes` (and the next begins): five a tool.
    ends: Vec<usize>,
    /// Per tool, which of its fields are present (bit `f`).
    present: Vec<u8>,
}

impl Text {
    fn with_capacity(tools: usize) -> Self {
        // Room for a short tool's text; a catalog of long ones grows it.
        Text { bytes: Vec::with_capacity(tools.saturating_mul(128)), ends: Vec::with_capacity(tools.saturating_mul(5)), present: Vec::with_capacity(tools) }
    }

    /// Copies one tool's fields.
    fn push(&mut self, fields: &Fields<'_>) -> PyResult<()> {
        let mut present = 0u8;
        for (f, field) in fields.iter().enumerate() {
            match field {
                None => {}
                Some(Field::Str(text)) => {
                    self.bytes.extend_from_slice(&string_bytes(text)?);
                    present |= 1 << f;
                }
                Some(Field::Made(text)) => {
                    self.bytes.extend_from_slice(text);
                    present |= 1 << f;
                }
            }
            self.ends.push(self.bytes.len());
        }
        self.present.push(present);
        Ok(())
    }

    /// Each tool's fields, as the core reads them.
    fn tools(&self) -> Vec<relevance::ToolText<'_>> {
        let mut start = 0;
        self.ends
            .chunks_exact(5)
            .zip(&self.present)
            .map(|(ends, &present)| {
                std::array::from_fn(|f| {
                    let field = &self.bytes[start..ends[f]];
                    start = ends[f];
                    (present & (1 << f) != 0).then_some(field)
                })
            })
            .collect()
    }
}

/// A field that is a `str`, held; None for anything else.
fn str_field<'py>(value: Option<Bound<'py, PyAny>>) -> Option<Field<'py>> {
    value.and_then(|value| value.cast_into::<PyString>().ok()).map(Field::Str)
}

/// One tool's five fields: a tuple of five `str` or None (each checked; a
/// field that `wanted` leaves out is not kept).
fn tool_fields<'py>(item: &Bound<'py, PyAny>, index: usize, wanted: &[bool; 5]) -> PyResult<Fields<'py>> {
    let tuple = item.cast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!("texts[{index}] must be a tuple of 5 fields, not {}", type_name(item)))
    })?;
    if tuple.len() != FIELDS.len() {
        return Err(PyValueError::new_err(format!(
            "texts[{index}] must hold 5 fields ({}), not {}",
            FIELDS.join(", "),
            tuple.len()
        )));
    }
    let mut out: Fields<'py> = Default::default();
    for (f, slot) in out.iter_mut().enumerate() {
        let value = tuple.get_item(f)?;
        if value.is_none() {
            continue;
        }
        let value = value.cast_into::<PyString>().map_err(|value| {
            PyTypeError::new_err(format!(
                "texts[{index}][{f}] ({}) must be str, not {}",
                FIELDS[f],
                type_name(&value.into_inner())
            ))
        })?;
        if wanted[f] {
            *slot = Some(Field::Str(value));
        }
    }
    Ok(out)
}

/// The `params` field of an exact dict schema, as `tool_text` makes it (the
/// property names and descriptions, one space between each); the outer None
/// when a part is not an exact dict, which only the Python side can judge.
fn params_of(schema: &Bound<'_, PyDict>) -> PyResult<Option<Option<Vec<u8>>>> {
    let py = schema.py();
    let Some(properties) = schema.get_item(intern!(py, "properties"))? else { return Ok(Some(None)) };
    let Ok(properties) = properties.cast_exact::<PyDict>() else { return Ok(None) };
    let mut out: Vec<u8> = Vec::new();
    let mut any = false;
    let mut push = |value: Option<Field<'_>>, out: &mut Vec<u8>| -> PyResult<()> {
        let Some(Field::Str(text)) = value else { return Ok(()) };
        if any {
            out.push(b' ');
        }
        out.extend_from_slice(&string_bytes(&text)?);
        any = true;
        Ok(())
    };
    // A snapshot of the items: a key's `__eq__` may run while a value is read.
    for item in properties.items().iter() {
        let (key, spec): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        push(str_field(Some(key)), &mut out)?;
        let Ok(spec) = spec.cast_exact::<PyDict>() else { return Ok(None) };
        push(str_field(spec.get_item(intern!(py, "description"))?), &mut out)?;
    }
    Ok(Some(any.then_some(out)))
}

/// An exact dict tool's fields, read here as `tool_text` reads them (the
/// input schema only when `wanted` asks for the parameters); None sends it
/// to `tool_text` itself.
fn dict_fields<'py>(tool: &Bound<'py, PyDict>, wanted: &[bool; 5]) -> PyResult<Option<Fields<'py>>> {
    let py = tool.py();
    let mut params = None;
    if wanted[PARAMS] {
        let mut schema = tool.get_item(intern!(py, "inputSchema"))?.filter(|s| !s.is_none());
        if schema.is_none() {
            schema = tool.get_item(intern!(py, "input_schema"))?.filter(|s| !s.is_none());
        }
        if let Some(schema) = schema {
            let Ok(schema) = schema.cast_exact::<PyDict>() else { return Ok(None) };
            let Some(text) = params_of(schema)? else { return Ok(None) };
            params = text.map(Field::Made);
        }
    }
    let read = |f: usize, key: &Bound<'py, PyString>| -> PyResult<Option<Field<'py>>> {
        Ok(if wanted[f] { str_field(tool.get_item(key)?) } else { None })
    };
    Ok(Some([
        read(0, intern!(py, "name"))?,
        read(1, intern!(py, "title"))?,
        read(2, intern!(py, "description"))?,
        read(SERVER, intern!(py, "server_id"))?,
        params,
    ]))
}

fn check_number(value: f64, what: &str, low: f64, high: f64, open_low: bool) -> PyResult<f64> {
    let ok = value.is_finite() && value >= low && value <= high && !(open_low && value == low);
    if ok {
        Ok(value)
    } else {
        Err(PyValueError::new_err(format!("{what} must be a finite number in range, not {value}")))
    }
}

/// The items of a list or tuple, or a TypeError naming `what`.
fn items<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = obj.cast::<PyList>() {
        Ok(list.iter().collect())
    } else if let Ok(tuple) = obj.cast::<PyTuple>() {
        Ok(tuple.iter().collect())
    } else {
        Err(PyTypeError::new_err(format!("{what} must be a list or tuple, not {}", type_name(obj))))
    }
}

/// The tool indices of `among` (a list or tuple of ints), each checked
/// against the index's length.
fn places(among: Option<&Bound<'_, PyAny>>, len: usize) -> PyResult<Option<Vec<usize>>> {
    let Some(among) = among else { return Ok(None) };
    items(among, "among")?
        .iter()
        .enumerate()
        .map(|(j, item)| {
            let value: isize = item
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("among[{j}] must be an int, not {}", type_name(item))))?;
            usize::try_from(value)
                .ok()
                .filter(|&i| i < len)
                .ok_or_else(|| PyValueError::new_err(format!("among[{j}] = {value} is not a tool index (the index holds {len})")))
        })
        .collect::<PyResult<Vec<usize>>>()
        .map(Some)
}

#[pymethods]
impl PySearchIndex {
    /// `texts`: a list or tuple of `(name, title, description, server, params)`
    /// tuples, each field a `str` or None; or, with `text_of`, of tools: an
    /// exact dict is read here, anything else through `text_of(tool)`,
    /// which returns such a tuple.
    #[new]
    // The Ranking's numbers one by one, as Python passes them.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (texts, weights, k1, server_k1, b, server_evidence, synonyms, path_words, steps, text_of=None))]
    fn new<'py>(
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        weights: (f64, f64, f64, f64, f64),
        k1: f64,
        server_k1: f64,
        b: f64,
        server_evidence: f64,
        synonyms: f64,
        path_words: bool,
        steps: bool,
        text_of: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let (w0, w1, w2, w3, w4) = weights;
        let mut checked = [0.0; 5];
        for (f, (slot, value)) in checked.iter_mut().zip([w0, w1, w2, w3, w4]).enumerate() {
            *slot = check_number(value, &format!("weights.{}", FIELDS[f]), 0.0, f64::MAX, false)?;
        }
        let ranking = Ranking {
            weights: checked,
            k1: check_number(k1, "k1", 0.0, f64::MAX, true)?,
            server_k1: check_number(server_k1, "server_k1", 0.0, f64::MAX, true)?,
            b: check_number(b, "b", 0.0, 1.0, false)?,
            server_evidence: check_number(server_evidence, "server_evidence", 0.0, f64::MAX, false)?,
            synonyms: check_number(synonyms, "synonyms", 0.0, 1.0, false)?,
            path_words,
            steps,
        };
        // The core reads no field without a weight, but the server id, which
        // groups the tools into servers.
        let wanted: [bool; 5] = std::array::from_fn(|f| f == SERVER || checked[f] > 0.0);
        let items = items(texts, "texts")?;
        if items.len() >= u32::MAX as usize {
            return Err(PyValueError::new_err("texts holds too many tools"));
        }
        let read = |i: usize, item: &Bound<'py, PyAny>| -> PyResult<Fields<'py>> {
            let Some(text_of) = text_of else { return tool_fields(item, i, &wanted) };
            if let Ok(dict) = item.cast_exact::<PyDict>() {
                if let Some(fields) = dict_fields(dict, &wanted)? {
                    return Ok(fields);
                }
            }
            tool_fields(&text_of.call1((item,))?, i, &wanted)
        };
        // Each field copied as it is read into one buffer: the strings are
        // visited once, no handle is kept (nor released at the end), and the
        // core reads the text in order from one place.
        let mut text = Text::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            text.push(&read(i, item)?)?;
        }
        let build = || SearchIndex::build(&text.tools(), ranking);
        let inner = if items.len() >= DETACH_AT { py.detach(build) } else { build() };
        Ok(PySearchIndex { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Whether `query` has any term (stop words and punctuation have none).
    fn has_terms(&self, query: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.inner.has_terms(&str_bytes(query, "query")?))
    }

    /// The score of each tool of `among` (tool indices; all when None), in order.
    #[pyo3(signature = (query, among=None))]
    fn scores(&self, py: Python<'_>, query: &Bound<'_, PyAny>, among: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<f64>> {
        let query = str_bytes(query, "query")?;
        let among = places(among, self.inner.len())?;
        let run = || self.inner.scores(&query, among.as_deref());
        Ok(if self.inner.len() >= DETACH_AT { py.detach(run) } else { run() })
    }

    /// The places (into `among`, or tool indices) of the best `limit` tools,
    /// best first; `matched_only` leaves out tools no query term reaches.
    #[pyo3(signature = (query, limit, among=None, matched_only=false))]
    fn rank(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        limit: usize,
        among: Option<&Bound<'_, PyAny>>,
        matched_only: bool,
    ) -> PyResult<Vec<usize>> {
        let query = str_bytes(query, "query")?;
        let among = places(among, self.inner.len())?;
        let run = || self.inner.rank(&query, limit, among.as_deref(), matched_only);
        Ok(if self.inner.len() >= DETACH_AT { py.detach(run) } else { run() })
    }
}

/// The index terms of `text` (names, server ids and parameters: `camel`).
#[pyfunction]
#[pyo3(signature = (text, camel=false))]
fn search_terms<'py>(py: Python<'py>, text: &Bound<'py, PyAny>, camel: bool) -> PyResult<Vec<Bound<'py, PyString>>> {
    relevance::terms(&str_bytes(text, "text")?, camel).iter().map(|term| bytes_str(py, term)).collect()
}

/// Whether `text` holds a file path (a query's path asks for the path words).
#[pyfunction]
fn search_mentions_path(text: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(relevance::mentions_path(&str_bytes(text, "text")?))
}

/// A task's steps (see the core's `steps`), as `str`.
#[pyfunction]
fn search_steps<'py>(py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyString>>> {
    relevance::steps(&str_bytes(text, "text")?).iter().map(|step| bytes_str(py, step)).collect()
}

/// The stop words the tokenizer drops.
#[pyfunction]
fn search_stopwords() -> Vec<&'static str> {
    relevance::STOPWORDS.to_vec()
}

/// The lexicon's groups of synonyms, one string of words each.
#[pyfunction]
fn search_synonyms() -> Vec<&'static str> {
    relevance::SYNONYMS.to_vec()
}

/// The lexicon's file formats: an extension and its media type's words each.
#[pyfunction]
fn search_formats() -> Vec<&'static str> {
    relevance::FORMATS.to_vec()
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySearchIndex>()?;
    m.add_function(wrap_pyfunction!(search_terms, m)?)?;
    m.add_function(wrap_pyfunction!(search_stopwords, m)?)?;
    m.add_function(wrap_pyfunction!(search_mentions_path, m)?)?;
    m.add_function(wrap_pyfunction!(search_steps, m)?)?;
    m.add_function(wrap_pyfunction!(search_synonyms, m)?)?;
    m.add_function(wrap_pyfunction!(search_formats, m)?)?;
    Ok(())
}
