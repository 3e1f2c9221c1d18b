//! Bindings for the focus lens: read each tool's name (and, for the session's
//! tools, its description) once, and hand them to the core as bytes.
//!
//! Both scans read the tools from a tuple without touching reference counts: a
//! tuple keeps its items alive, and a name is looked up in a dict and read in
//! place in a quiet stretch of its own (`inplace::with_dict_str`). Only the
//! names that are kept get owned. On 100,000 tools this halves the time, which
//! goes to waiting on memory, not to computing.
//!
//! An exact `dict` is read here directly. Anything else (other mappings,
//! objects with attributes, a dict without a `str` name) goes to a Python
//! helper passed in by the caller, so that every odd shape and every error
//! message is decided in one place on the Python side. That helper runs
//! Python code, so no borrowed name is ever held across it.

use std::borrow::Cow;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::inplace::{with_dict_str, Quiet};
use super::{bytes_str, str_bytes};
use crate::focus::{self, Focus, Part, Parts, Pick};

/// Past this many tools the discover search runs with the GIL released.
const DETACH_AT: usize = 1024;

/// The tools as a tuple, the snapshot the scan borrows from. The caller passes
/// an exact list or tuple (anything else was iterated into a list).
fn as_tuple<'py>(tools: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    match tools.cast_exact::<PyTuple>() {
        Ok(tuple) => Ok(tuple.clone()),
        Err(_) => Ok(tools.cast::<PyList>()?.to_tuple()),
    }
}

/// The generalized UTF-8 of a `str`: borrowed unless it holds a lone surrogate.
fn utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(text) => Ok(Cow::Borrowed(text.as_bytes())),
        Err(_) => str_bytes(s.as_any(), "str"),
    }
}

/// Applies `test` to a borrowed `str`'s bytes: the `str`, owned, when it holds.
fn own_if<'py>(
    quiet: &Quiet<'py>,
    name: Borrowed<'_, 'py, PyString>,
    test: impl FnOnce(&[u8]) -> bool,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let keep = test(&quiet.str_bytes(name)?);
    Ok(keep.then(|| name.to_owned()))
}

fn optional_bytes<'a>(obj: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Cow<'a, [u8]>>> {
    obj.map(|o| str_bytes(o, what)).transpose()
}

/// The lens result as indices into the tuple `tools`, `-1` standing for the
/// meta-tool.
///
/// `name_of(tool, index)` returns the name of a tool that is not a dict with a
/// `str` name, or raises. `meta_name` is the meta-tool's name, or None for no
/// meta-tool.
#[pyfunction]
#[pyo3(signature = (tools, name_of, session_id, focused_id, hovered_id, meta_name, max_tools))]
#[allow(clippy::too_many_arguments)]
fn focus_select(
    py: Python<'_>,
    tools: &Bound<'_, PyTuple>,
    name_of: &Bound<'_, PyAny>,
    session_id: &Bound<'_, PyAny>,
    focused_id: Option<&Bound<'_, PyAny>>,
    hovered_id: Option<&Bound<'_, PyAny>>,
    meta_name: Option<&Bound<'_, PyAny>>,
    max_tools: usize,
) -> PyResult<Vec<isize>> {
    let session = str_bytes(session_id, "session_id")?;
    let focused = optional_bytes(focused_id, "focused_id")?;
    let hovered = optional_bytes(hovered_id, "hover_id")?;
    let meta = optional_bytes(meta_name, "meta_name")?;
    let focus = Focus { session: &session, focused: focused.as_deref(), hovered: hovered.as_deref() };
    let key = intern!(py, "name");
    // Each name is classified as it is read; only the kept ones are owned.
    let mut kept = Vec::new();
    for (index, tool) in tools.iter_borrowed().enumerate() {
        let mut part = Part::Other;
        let read = match tool.cast_exact::<PyDict>() {
            Ok(dict) => with_dict_str(dict, key, |quiet, name| {
                own_if(quiet, name, |bytes| {
                    part = focus.classify(bytes);
                    part != Part::Other
                })
            })?,
            Err(_) => None,
        };
        let name = match read {
            Some(kept) => kept,
            None => {
                let name = name_of.call1((tool, index))?.cast_into::<PyString>()?;
                part = focus.classify(&utf8(&name)?);
                Some(name)
            }
        };
        if let Some(name) = name.filter(|_| part != Part::Other) {
            kept.push((part, index, name));
        }
    }
    let bytes = kept.iter().map(|(_, _, name)| utf8(name)).collect::<PyResult<Vec<_>>>()?;
    let mut parts = Parts::new();
    for ((part, index, _), name) in kept.iter().zip(&bytes) {
        parts.push(*part, *index, name.as_ref());
    }
    Ok(parts
        .pick(meta.as_deref(), max_tools)
        .into_iter()
        .map(|pick| match pick {
            // A tuple never holds more than isize::MAX items.
            Pick::Tool(index) => index as isize,
            Pick::Meta => -1,
        })
        .collect())
}

/// The discover result for `query` over `tools` (a list or a tuple) as JSON
/// text: the name and description of each of `session_id`'s tools that the
/// query finds, in order (see `focus::found_json` for the exact format).
///
/// `fields_of(tool)` returns `(name, description)` for a tool that is not a
/// dict, each a `str` or None (a tool without a `str` name is never found).
#[pyfunction]
fn focus_discover_json<'py>(
    py: Python<'py>,
    tools: &Bound<'py, PyAny>,
    fields_of: &Bound<'py, PyAny>,
    session_id: &Bound<'py, PyAny>,
    query: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    let session = str_bytes(session_id, "session_id")?;
    let query = str_bytes(query, "query")?;
    let candidates = session_tools(&as_tuple(tools)?, fields_of, &session)?;
    let mut pairs = Vec::with_capacity(candidates.len());
    for (name, description) in &candidates {
        pairs.push((utf8(name)?, description.as_ref().map(utf8).transpose()?));
    }
    let run = || {
        let found = focus::discover(&pairs, &session, &query);
        focus::found_json(&pairs, &found)
    };
    let json = if pairs.len() >= DETACH_AT { py.detach(run) } else { run() };
    bytes_str(py, &json)
}

type NameAndDescription<'py> = (Bound<'py, PyString>, Option<Bound<'py, PyString>>);

/// The `(name, description)` of the tools named under `session`. The session
/// test comes first and reads the name only, so a description is read for the
/// session's own tools alone.
fn session_tools<'py>(
    tools: &Bound<'py, PyTuple>,
    fields_of: &Bound<'py, PyAny>,
    session: &[u8],
) -> PyResult<Vec<NameAndDescription<'py>>> {
    let py = tools.py();
    let (name_key, description_key) = (intern!(py, "name"), intern!(py, "description"));
    let in_session = |name: &[u8]| focus::under_session(name, session).is_some();
    let mut candidates = Vec::new();
    for tool in tools.iter_borrowed() {
        if let Ok(dict) = tool.cast_exact::<PyDict>() {
            let Some(Some(name)) = with_dict_str(dict, name_key, |quiet, name| own_if(quiet, name, in_session))? else {
                continue;
            };
            let description = with_dict_str(dict, description_key, |_, d| Ok(d.to_owned()))?;
            candidates.push((name, description));
        } else {
            let (name, description): (Option<Bound<'_, PyAny>>, Option<Bound<'_, PyAny>>) =
                fields_of.call1((tool,))?.extract()?;
            let Some(name) = name.and_then(|n| n.cast_into::<PyString>().ok()) else { continue };
            if in_session(&utf8(&name)?) {
                candidates.push((name, description.and_then(|d| d.cast_into::<PyString>().ok())));
            }
        }
    }
    Ok(candidates)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(focus_select, m)?)?;
    m.add_function(wrap_pyfunction!(focus_discover_json, m)?)?;
    Ok(())
}
