//! Bindings for tool filter groups: the compiled set and one selection call
//! that the Python `GroupFilter` builds its methods on.

use std::borrow::Cow;
use std::collections::HashSet;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFrozenSet, PyList, PySet, PyString, PyTuple};

use super::{str_bytes, type_name};
use crate::groups::{self, GroupMode, GroupSet, GroupSpec};

/// The bytes of `obj`, or a TypeError naming it as `what()` (formatted only on error).
fn item_bytes<'a>(obj: &'a Bound<'_, PyAny>, what: impl Fn() -> String) -> PyResult<Cow<'a, [u8]>> {
    if obj.is_instance_of::<PyString>() {
        str_bytes(obj, "")
    } else {
        str_bytes(obj, &what())
    }
}

/// Whether the single-star group glob `pattern` matches the whole of `name`.
#[pyfunction]
fn group_glob_match(pattern: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(groups::group_glob_match(&str_bytes(pattern, "pattern")?, &str_bytes(name, "name")?))
}

/// `(always, tools, keywords)`: one group as the Python side hands it over.
type GroupTriple<'py> = (bool, Vec<Bound<'py, PyAny>>, Vec<Bound<'py, PyAny>>);

/// Compiled tool filter groups.
#[pyclass(module = "toolfilter_fast._core", name = "GroupSet", frozen)]
struct PyGroupSet {
    inner: GroupSet,
}

/// Where each item's origin comes from.
enum Origin<'a, 'py> {
    AllMcp,
    /// An exact set or frozenset: asked through its own storage.
    Set(&'a Bound<'py, PySet>),
    FrozenSet(&'a Bound<'py, PyFrozenSet>),
    /// Anything else (a set subclass too): asked as Python's `in` asks it,
    /// through its own `__contains__`, as the reference does.
    Container(&'a Bound<'py, PyAny>),
    Flags(Vec<bool>),
}

impl Origin<'_, '_> {
    /// Whether `item` is MCP-origin. May run Python code (a key's `__eq__`,
    /// a container's `__contains__`): the caller holds `item` and reads
    /// nothing borrowed across this.
    fn is_mcp(&self, index: usize, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        match self {
            Origin::AllMcp => Ok(true),
            Origin::Set(set) => set.contains(item),
            Origin::FrozenSet(set) => set.contains(item),
            Origin::Container(container) => container.contains(item),
            Origin::Flags(flags) => Ok(flags[index]),
        }
    }
}

#[pymethods]
impl PyGroupSet {
    /// `groups` holds `(always, tools, keywords)` triples; TypeError names the
    /// first entry that is not a str, as `groups[g].tools[i]`.
    #[new]
    fn new(groups: Vec<GroupTriple<'_>>) -> PyResult<Self> {
        let mut specs = Vec::with_capacity(groups.len());
        for (g, (always, tools, keywords)) in groups.iter().enumerate() {
            let field = |name: &'static str, values: &[Bound<'_, PyAny>]| -> PyResult<Vec<Vec<u8>>> {
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| item_bytes(v, || format!("groups[{g}].{name}[{i}]")).map(Cow::into_owned))
                    .collect()
            };
            specs.push(GroupSpec {
                mode: if *always { GroupMode::Always } else { GroupMode::Dynamic },
                tools: field("tools", tools)?,
                keywords: field("keywords", keywords)?,
            });
        }
        Ok(PyGroupSet { inner: GroupSet::compile(&specs) })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The indices of the groups live for `message`; for None, the `always` groups.
    #[pyo3(signature = (message=None))]
    fn live_groups(&self, py: Python<'_>, message: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<usize>> {
        let message = message.map(|m| str_bytes(m, "message")).transpose()?;
        let set = &self.inner;
        Ok(py.detach(|| match &message {
            Some(m) => set.activate(m).live_groups().collect(),
            None => set.preactivation().live_groups().collect(),
        }))
    }

    /// Selects from `names` (a list or tuple of str), in input order:
    ///
    /// * with a `message`: the visible names, or with `hidden` the MCP names no
    ///   live group admits;
    /// * with `message=None`: the MCP names an `always` group admits.
    ///
    /// `mcp` says which names are MCP-origin: None for all of them, a set or
    /// frozenset of names, or a list of bools beside `names`. `dedupe` keeps the
    /// first of equal names; `indices` returns positions instead of the names.
    #[pyo3(signature = (names, message, mcp, *, hidden=false, dedupe=false, indices=false))]
    #[allow(clippy::too_many_arguments)]
    fn select<'py>(
        &self,
        py: Python<'py>,
        names: &Bound<'py, PyAny>,
        message: Option<&Bound<'py, PyAny>>,
        mcp: Option<&Bound<'py, PyAny>>,
        hidden: bool,
        dedupe: bool,
        indices: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let names = Names::new(names)?;
        let count = names.len();
        let message = message.map(|m| str_bytes(m, "message")).transpose()?;
        let origin = match mcp {
            None => Origin::AllMcp,
            Some(m) => {
                if let Ok(set) = m.cast_exact::<PySet>() {
                    Origin::Set(set)
                } else if let Ok(set) = m.cast_exact::<PyFrozenSet>() {
                    Origin::FrozenSet(set)
                } else if m.is_instance_of::<PySet>() || m.is_instance_of::<PyFrozenSet>() {
                    Origin::Container(m)
                } else if let Ok(flags) = m.extract::<Vec<bool>>() {
                    if flags.len() != count {
                        return Err(PyValueError::new_err(format!(
                            "mcp has {} flags for {count} names",
                            flags.len()
                        )));
                    }
                    Origin::Flags(flags)
                } else {
                    return Err(PyTypeError::new_err(
                        "mcp must be None, a set or frozenset of names, or a list of bools",
                    ));
                }
            }
        };
        // One pass over the string objects, copying their bytes into one arena:
        // a big list's strings are scattered over the heap, and each visit to
        // them costs cache misses; the matching then runs on contiguous bytes.
        let mut arena: Vec<u8> = Vec::with_capacity(count * 32);
        let mut ends: Vec<usize> = Vec::with_capacity(count);
        let mut is_mcp: Vec<bool> = Vec::with_capacity(count);
        for i in 0..count {
            let item = names.get(i)?;
            arena.extend_from_slice(&item_bytes(&item, || format!("names[{i}]"))?);
            ends.push(arena.len());
            is_mcp.push(origin.is_mcp(i, &item)?);
        }
        let set = &self.inner;
        let keep: Vec<usize> = py.detach(|| {
            let activation = match &message {
                Some(m) => set.activate(m),
                None => set.preactivation(),
            };
            let mut seen: HashSet<&[u8]> = HashSet::new();
            let mut start = 0;
            let mut keep = Vec::new();
            for (i, (&end, &mcp)) in ends.iter().zip(&is_mcp).enumerate() {
                let name = &arena[start..end];
                start = end;
                let selected = match &message {
                    None => mcp && activation.admits(name),
                    Some(_) if hidden => mcp && !set.is_empty() && !activation.admits(name),
                    Some(_) => activation.is_visible(name, mcp),
                };
                if selected && (!dedupe || seen.insert(name)) {
                    keep.push(i);
                }
            }
            keep
        });
        if indices {
            PyList::new(py, keep)
        } else {
            let kept = keep.into_iter().map(|i| names.get(i)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, kept)
        }
    }
}

/// The `names` argument, read twice: once for the bytes, once for the kept items.
enum Names<'py> {
    List(Bound<'py, PyList>),
    Tuple(Bound<'py, PyTuple>),
}

impl<'py> Names<'py> {
    fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(list) = obj.cast::<PyList>() {
            Ok(Names::List(list.clone()))
        } else if let Ok(tuple) = obj.cast::<PyTuple>() {
            Ok(Names::Tuple(tuple.clone()))
        } else {
            Err(PyTypeError::new_err(format!("names must be a list or tuple, not {}", type_name(obj))))
        }
    }

    fn len(&self) -> usize {
        match self {
            Names::List(list) => list.len(),
            Names::Tuple(tuple) => tuple.len(),
        }
    }

    /// The item at `index`; an IndexError if a list shrank in the meantime.
    fn get(&self, index: usize) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Names::List(list) => list.get_item(index),
            Names::Tuple(tuple) => tuple.get_item(index),
        }
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(group_glob_match, m)?)?;
    m.add_class::<PyGroupSet>()?;
    Ok(())
}
