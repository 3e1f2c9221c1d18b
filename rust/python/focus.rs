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
use pyo3::types::{PyDict, PyList, PyString};

use super::str_bytes;
use crate::focus::{self, Focus, Pick};

/// Past this many tools the core runs with the GIL released.
const DETACH_AT: usize = 1024;

fn dict_str<'py>(tool: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match tool.cast_exact::<PyDict>() {
        Ok(dict) => Ok(dict.get_item(key)?.filter(|v| v.is_instance_of::<PyString>())),
        Err(_) => Ok(None),
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
            None => name_of.call1((&tool, index))?,
        };
        names.push(name);
    }
    let bytes = names.iter().map(|n| str_bytes(n, "tool name")).collect::<PyResult<Vec<_>>>()?;
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

/// The indices of the tools in `tools` that the discover `query` finds under
/// `session_id`, in list order.
///
/// `fields_of(tool)` returns `(name, description)` for a tool that is not a
/// dict, each a `str` or None (a tool without a `str` name is never found).
#[pyfunction]
fn focus_discover(
    py: Python<'_>,
    tools: &Bound<'_, PyList>,
    fields_of: &Bound<'_, PyAny>,
    session_id: &Bound<'_, PyAny>,
    query: &Bound<'_, PyAny>,
) -> PyResult<Vec<usize>> {
    let session = str_bytes(session_id, "session_id")?;
    let (name_key, description_key) = (intern!(py, "name"), intern!(py, "description"));
    // The session test is a cheap prefix check: descriptions are read only for
    // the session's own tools.
    let mut candidates = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let (name, description) = if tool.is_exact_instance_of::<PyDict>() {
            let Some(name) = dict_str(&tool, name_key)? else { continue };
            if focus::under_session(&str_bytes(&name, "tool name")?, &session).is_none() {
                continue;
            }
            (name, dict_str(&tool, description_key)?)
        } else {
            let (name, description): (Option<Bound<'_, PyAny>>, Option<Bound<'_, PyAny>>) =
                fields_of.call1((&tool,))?.extract()?;
            let Some(name) = name.filter(|n| n.is_instance_of::<PyString>()) else { continue };
            (name, description.filter(|d| d.is_instance_of::<PyString>()))
        };
        candidates.push((index, name, description));
    }
    let mut pairs = Vec::with_capacity(candidates.len());
    for (_, name, description) in &candidates {
        pairs.push((str_bytes(name, "tool name")?, optional_bytes(description.as_ref(), "tool description")?));
    }
    let query = str_bytes(query, "query")?;
    let run = || focus::discover(&pairs, &session, &query);
    let found = if pairs.len() >= DETACH_AT { py.detach(run) } else { run() };
    Ok(found.into_iter().map(|i| candidates[i].0).collect())
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(focus_select, m)?)?;
    m.add_function(wrap_pyfunction!(focus_discover, m)?)?;
    Ok(())
}
