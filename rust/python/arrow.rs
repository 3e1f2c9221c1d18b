//! Arrow input: two string columns taken through the Arrow PyCapsule
//! interface (`__arrow_c_array__`, `__arrow_c_stream__`), decided by the core
//! (`crate::arrow`) on its own threads without the GIL, answered as a bitmap.
//!
//! Every array's C structures are checked before they are imported
//! (`crate::arrow_import`, where the trust boundary is stated): a malformed
//! one is a `ValueError` naming the column, the chunk and what is wrong, a
//! type that is not a string layout (or a dictionary of one) a `TypeError`.
//!
//! No Python object is read here but the capsules: the buffers belong to the
//! imported arrays, which keep the producer's release callback and run it
//! when dropped, on the calling thread, with the GIL held (a producer's
//! release may need it). The worker threads only borrow the arrays.

use arrow_array::array::ArrayRef;
use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyTuple};

use super::batch::threads_arg;
use super::bytes_str;
use super::filter::PyStaticFilter;
use super::type_name;
use crate::arrow::{self, ArrowIssue, Column};
use crate::arrow_import::{self, ImportIssue};
use crate::filter::Outcome;

fn issue_of(err: ArrowIssue) -> PyErr {
    match err {
        ArrowIssue::NotStrings(..) => PyTypeError::new_err(err.to_string()),
        _ => PyValueError::new_err(err.to_string()),
    }
}

/// A refused import, naming the column and, in a stream, the chunk: a type
/// that is not a string layout is a `TypeError`, as the core says it.
fn refused(column: Column, chunk: Option<usize>, issue: ImportIssue) -> PyErr {
    let what = column.name();
    match issue {
        ImportIssue::Format(kind) => {
            issue_of(ArrowIssue::NotStrings(column, kind))
        }
        ImportIssue::Dictionary | ImportIssue::KeyType(_) | ImportIssue::RunEndType(_) => PyTypeError::new_err(format!("{what}: {issue}")),
        _ => import_error(what, chunk, issue),
    }
}

fn import_error(what: &str, chunk: Option<usize>, err: impl std::fmt::Display) -> PyErr {
    let chunk = chunk.map(|k| format!(" (chunk {k} of the stream)")).unwrap_or_default();
    PyValueError::new_err(format!("{what}{chunk}: cannot import the Arrow data: {err}"))
}

/// The chunks of one column from an object that exports an Arrow array
/// (`__arrow_c_array__`, one chunk) or a stream of them (`__arrow_c_stream__`).
fn import_column(obj: &Bound<'_, PyAny>, column: Column) -> PyResult<Vec<ArrayRef>> {
    let what = column.name();
    let py = obj.py();
    if obj.hasattr(intern!(py, "__arrow_c_array__"))? {
        let pair = obj.call_method0(intern!(py, "__arrow_c_array__"))?;
        let pair = pair.cast::<PyTuple>().map_err(|_| PyTypeError::new_err(format!("{what}.__arrow_c_array__() must return a tuple of two capsules")))?;
        let (schema, array) = (pair.get_item(0)?, pair.get_item(1)?);
        let schema = schema.cast::<PyCapsule>()?;
        let array = array.cast::<PyCapsule>()?;
        let schema = schema.pointer_checked(Some(c"arrow_schema"))?.cast::<FFI_ArrowSchema>();
        let array = array.pointer_checked(Some(c"arrow_array"))?.cast::<FFI_ArrowArray>();
        // The structures are checked (`arrow_import::check`), then the array
        // is moved out, leaving a released one (its `release` NULL) that the
        // capsule's destructor then skips; refused, it stays for the capsule
        // to release. The schema is only borrowed (the capsule releases it).
        // Their buffers reaching as far as the structures imply is the
        // interface's promise, trusted (see `arrow_import::check`).
        // SAFETY: both capsules, named as the PyCapsule interface names them,
        // hold a schema and an array their producer initialized, alive while
        // `pair` is held (to the end of this block); no Python code runs here.
        let imported = unsafe { arrow_import::import(schema.as_ptr(), array.as_ptr()) };
        return Ok(vec![imported.map_err(|e| refused(column, None, e))?]);
    }
    if obj.hasattr(intern!(py, "__arrow_c_stream__"))? {
        let capsule = obj.call_method0(intern!(py, "__arrow_c_stream__"))?;
        let capsule = capsule.cast::<PyCapsule>()?;
        let stream = capsule.pointer_checked(Some(c"arrow_array_stream"))?.cast::<FFI_ArrowArrayStream>();
        // SAFETY: the capsule, named as the interface names it, holds an
        // initialized C stream that lives while the capsule is held; it is
        // moved out (the capsule's destructor then finds it released), and
        // our copy releases it when dropped, here, with the GIL held.
        let mut stream = unsafe { FFI_ArrowArrayStream::from_raw(stream.as_ptr()) };
        return read_stream(&mut stream, column);
    }
    Err(PyTypeError::new_err(format!(
        "{what} must export Arrow data (__arrow_c_array__ or __arrow_c_stream__: a pyarrow, Polars, \
         nanoarrow or DuckDB array), not {}",
        type_name(obj)
    )))
}

/// Every chunk of a C stream. Its callbacks may run the producer's code
/// (Python too: the GIL is held).
fn read_stream(stream: &mut FFI_ArrowArrayStream, column: Column) -> PyResult<Vec<ArrayRef>> {
    let what = column.name();
    let (Some(get_schema), Some(get_next)) = (stream.get_schema, stream.get_next) else {
        return Err(import_error(what, None, "the stream is released"));
    };
    let failed = |stream: &mut FFI_ArrowArrayStream, code: i32| -> String {
        let message = stream.get_last_error.map(|last| {
            // SAFETY: the stream is live; the callback returns NULL or a
            // NUL-terminated string valid until the next call on the stream,
            // copied out at once.
            let text = unsafe { last(stream) };
            if text.is_null() {
                String::new()
            } else {
                // SAFETY: as above: a NUL-terminated string, read before any other call.
                unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy().into_owned()
            }
        });
        format!("the stream failed (error {code}){}", message.map(|m| format!(": {m}")).unwrap_or_default())
    };
    let mut schema = FFI_ArrowSchema::empty();
    // SAFETY: a live stream and a released schema for it to fill, as the
    // interface asks; on success the schema is ours (dropping it releases it).
    let code = unsafe { get_schema(stream, &mut schema) };
    if code != 0 {
        return Err(import_error(what, None, failed(stream, code)));
    }
    let mut chunks = Vec::new();
    loop {
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: as for the schema: the stream fills a released array,
        // which is then ours; a released one back means the stream has ended.
        let code = unsafe { get_next(stream, &mut array) };
        if code != 0 {
            return Err(import_error(what, Some(chunks.len()), failed(stream, code)));
        }
        if array.is_released() {
            return Ok(chunks);
        }
        // SAFETY: an array the stream produced for `schema`, both ours and
        // alive; checked, then moved out (our copy, left released, drops as
        // nothing); refused, it is released when dropped, here. Its buffers
        // reaching as far as it implies is trusted (see `arrow_import::check`).
        let imported = unsafe { arrow_import::import(&schema, &mut array) };
        chunks.push(imported.map_err(|e| refused(column, Some(chunks.len()), e))?);
    }
}

/// `(bits, length)`: the static decision of every row of two Arrow string
/// columns as an Arrow boolean bitmap, set where visible. A null server id
/// or name is hidden; annotation patterns see every hint missing.
/// `judge(server_id, name)` decides the rows a regex may decide.
#[pyfunction]
#[pyo3(signature = (filter, server_ids, names, judge=None, threads=None))]
fn static_mask_arrow<'py>(
    py: Python<'py>,
    filter: &Bound<'py, PyStaticFilter>,
    server_ids: &Bound<'py, PyAny>,
    names: &Bound<'py, PyAny>,
    judge: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, usize)> {
    let threads = threads_arg(threads)?;
    let servers = import_column(server_ids, Column::ServerIds)?;
    let names = import_column(names, Column::Names)?;
    let filter = filter.get().inner();
    let columns = arrow::Columns::new(&servers, &names).map_err(issue_of)?;
    let (outcomes, (mut bits, undecided)) = py
        .detach(|| columns.decide(filter, threads).map(|outcomes| {
            let bits = arrow::visible_bits(&outcomes);
            (outcomes, bits)
        }))
        .map_err(issue_of)?;
    // The rows a regex must judge, if any (most batches have none: no pass).
    let judged: &[Outcome] = if undecided { &outcomes } else { &[] };
    for (row, _) in judged.iter().enumerate().filter(|(_, o)| **o == Outcome::Undecided) {
        let Some(judge) = judge else {
            return Err(PyValueError::new_err("a regex pattern needs a judge for undecided rows"));
        };
        let (Some(server), Some(name)) = columns.row(row).map_err(issue_of)? else {
            continue;
        };
        let (server, name) = (bytes_str(py, server)?, bytes_str(py, name)?);
        if judge.call1((server, name))?.is_truthy()? {
            bits[row / 8] |= 1 << (row % 8);
        }
    }
    Ok((PyBytes::new(py, &bits), outcomes.len()))
}

/// How many names hold a `/`, by one `memchr` pass over each: the cost of
/// reading the column once, which the benchmark compares with a mask.
#[pyfunction]
fn arrow_count_slashes(py: Python<'_>, names: &Bound<'_, PyAny>) -> PyResult<usize> {
    let names = import_column(names, Column::Names)?;
    py.detach(|| arrow::count_slashes(&names)).map_err(issue_of)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(static_mask_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_count_slashes, m)?)?;
    Ok(())
}
