//! Bindings for the focus lens: read the tools' names (and descriptions) once,
//! hand them to the core as bytes, and return indices.
//!
//! An exact `dict` is read here directly. Anything else (other mappings,
//! objects with attributes, a dict without a `str` name) goes to a Python
//! helper passed in by the caller, so that every odd shape and every error
//! message is decided in one place on the Python side.

use std::borrow::Cow;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::{bytes_str, str_bytes};
use crate::focus::{self, Focus, Pick};

/// Past this many tools the core runs with the GIL released.
const DETACH_AT: usize = 1024;

/// `obj` as a `str`, when it is one (the exact type checked first: it is the
/// common case, and under the stable ABI the subclass check is a call).
fn as_str<'py>(obj: Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    if obj.is_exact_instance_of::<PyString>() {
        // SAFETY: the exact type was just checked.
        return Some(unsafe { obj.cast_into_unchecked() });
    }
    obj.cast_into::<PyString>().ok()
}

/// `dict[key]` when `tool` is an exact dict and the value a `str`.
fn dict_str<'py>(tool: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    match tool.cast_exact::<PyDict>() {
        Ok(dict) => Ok(dict.get_item(key)?.and_then(as_str)),
        Err(_) => Ok(None),
    }
}

/// The generalized UTF-8 of a `str`: borrowed unless it holds a lone surrogate.
fn utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(text) => Ok(Cow::Borrowed(text.as_bytes())),
        Err(_) => str_bytes(s.as_any(), "str"),
    }
}

fn optional_bytes<'a>(obj: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Cow<'a, [u8]>>> {
    obj.map(|o| str_bytes(o, what)).transpose()
}

/// The lens result as indices into `tools`, `-1` standing for the meta-tool.
///
/// `name_of(tool, index)` returns the name of a tool that is not a dict with a
/// `str` name, or raises. `meta_name` is the meta-tool's name, or None for no
/// meta-tool.
#[pyfunction]
#[pyo3(signature = (tools, name_of, session_id, focused_id, hovered_id, meta_name, max_tools))]
#[allow(clippy::too_many_arguments)]
fn focus_select(
    py: Python<'_>,
    tools: &Bound<'_, PyList>,
    name_of: &Bound<'_, PyAny>,
    session_id: &Bound<'_, PyAny>,
    focused_id: Option<&Bound<'_, PyAny>>,
    hovered_id: Option<&Bound<'_, PyAny>>,
    meta_name: Option<&Bound<'_, PyAny>>,
    max_tools: usize,
) -> PyResult<Vec<isize>> {
    let key = intern!(py, "name");
    let mut names = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let name = match dict_str(&tool, key)? {
            Some(name) => name,
            None => name_of.call1((&tool, index))?.cast_into::<PyString>()?,
        };
        names.push(name);
    }
    let bytes = names.iter().map(utf8).collect::<PyResult<Vec<_>>>()?;
    let session = str_bytes(session_id, "session_id")?;
    let focused = optional_bytes(focused_id, "focused_id")?;
    let hovered = optional_bytes(hovered_id, "hover_id")?;
    let meta = optional_bytes(meta_name, "meta_name")?;
    let focus = Focus { session: &session, focused: focused.as_deref(), hovered: hovered.as_deref() };
    let run = || focus::select(&bytes, &focus, meta.as_deref(), max_tools);
    let picks = if bytes.len() >= DETACH_AT { py.detach(run) } else { run() };
    Ok(picks
        .into_iter()
        .map(|pick| match pick {
            // A list never holds more than isize::MAX items.
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
    let candidates = match tools.cast::<PyTuple>() {
        Ok(tuple) => session_tools(py, tuple.iter(), fields_of, &session)?,
        Err(_) => session_tools(py, tools.cast::<PyList>()?.iter(), fields_of, &session)?,
    };
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
/// test is a cheap prefix check, so descriptions are read only for the
/// session's own tools.
fn session_tools<'py>(
    py: Python<'py>,
    tools: impl Iterator<Item = Bound<'py, PyAny>>,
    fields_of: &Bound<'py, PyAny>,
    session: &[u8],
) -> PyResult<Vec<NameAndDescription<'py>>> {
    let (name_key, description_key) = (intern!(py, "name"), intern!(py, "description"));
    let mut candidates = Vec::new();
    for tool in tools {
        let (name, description) = if tool.is_exact_instance_of::<PyDict>() {
            let Some(name) = dict_str(&tool, name_key)? else { continue };
            (name, None)
        } else {
            let (name, description): (Option<Bound<'_, PyAny>>, Option<Bound<'_, PyAny>>) =
                fields_of.call1((&tool,))?.extract()?;
            let Some(name) = name.and_then(as_str) else { continue };
            (name, Some(description.and_then(as_str)))
        };
        if focus::under_session(&utf8(&name)?, session).is_none() {
            continue;
        }
        let description = match description {
            Some(from_fields) => from_fields,
            None => dict_str(&tool, description_key)?,
        };
        candidates.push((name, description));
    }
    Ok(candidates)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(focus_select, m)?)?;
    m.add_function(wrap_pyfunction!(focus_discover_json, m)?)?;
    Ok(())
}
