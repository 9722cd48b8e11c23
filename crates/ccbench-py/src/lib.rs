//! `ccbench._core`: the thin PyO3 layer over ccbench-core. It converts
//! arguments, simulates on a thread of its own that never takes the GIL
//! (the calling thread hands progress to Python and checks for Ctrl-C every
//! 20 ms), maps errors to Python exceptions and hands results back as
//! little-endian column buffers. No logic lives here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

mod page;
mod spill;
use spill::SpillFiles;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use ccbench_core::metrics::extremes::FINE;
use ccbench_core::metrics::{Column, Table};

create_exception!(_core, ScenarioError, PyException, "A scenario file or override is invalid.");
create_exception!(_core, SimulationError, PyException, "The simulation failed.");

fn problem_list<'py>(py: Python<'py>, ps: &[ccbench_core::Problem]) -> Bound<'py, PyList> {
    let problems = PyList::empty(py);
    for p in ps {
        let d = PyDict::new(py);
        let _ = d.set_item("file", &p.file);
        let _ = d.set_item("line", p.line);
        let _ = d.set_item("col", p.col);
        let _ = d.set_item("key", &p.key);
        let _ = d.set_item("message", &p.message);
        let _ = problems.append(d);
    }
    problems
}

/// Values as little-endian bytes, encoded straight into the Python bytes
/// object (one copy, element-wise, instead of a byte iterator into a `Vec`
/// and a second copy into Python).
pub(crate) fn le<'py, T: Copy, const N: usize>(py: Python<'py>, v: &[T], bytes: fn(T) -> [u8; N]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * N, |buf| {
        for (dst, &x) in buf.chunks_exact_mut(N).zip(v) {
            dst.copy_from_slice(&bytes(x));
        }
        Ok(())
    })
}

/// A column's little-endian bytes ([`le`]).
fn le_bytes<'py>(py: Python<'py>, data: &Column) -> PyResult<Bound<'py, PyBytes>> {
    match data {
        Column::F64(v) => le(py, v, f64::to_le_bytes),
        Column::U32(v) => le(py, v, u32::to_le_bytes),
        Column::U64(v) => le(py, v, u64::to_le_bytes),
    }
}

fn scenario_err(py: Python<'_>, e: &ccbench_core::ScenarioError) -> PyErr {
    ScenarioError::new_err((e.to_string(), problem_list(py, &e.problems).unbind()))
}

/// A table as {column: (dtype, little-endian bytes)}.
fn table_dict<'py>(py: Python<'py>, cols: &Table) -> PyResult<Bound<'py, PyDict>> {
    let t = PyDict::new(py);
    for (col, data) in cols {
        t.set_item(col, (data.dtype(), le_bytes(py, data)?))?;
    }
    Ok(t)
}

/// The tables a run's page reads whole (`ccbench.simulate.page`; it draws
/// the per-packet ones from their buckets).
const PAGE_TABLES: [&str; 4] = ["flow_series", "media_series", "link_series", "probes"];
/// Bytes of each of [`PAGE_TABLES`] kept in memory while it is written, so
/// that Python gets it whole at the end (a 240 s run of 6 flows: 1.3 MB);
/// a larger one the page reads from its file.
const PAGE_KEEP_BYTES: usize = 8 << 20;
/// The per-packet tables the page draws from their buckets
/// ([`ccbench_core::metrics::extremes::PageBuckets`]).
const BUCKETED: [&str; 2] = ["rtt", "sojourn"];
/// How often the calling thread wakes while the engine runs, to hand the
/// progress steps to Python and check for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);
/// The engine thread's stack: the main thread's 8 MiB, not a spawned
/// thread's 2 MiB default (packets are handed on by nested calls).
const ENGINE_STACK: usize = 8 << 20;

/// Run a scenario; returns {"summary": json, "scenario": toml, "tables":
/// {...}, "files": {name: path}, "page_buckets": {...}, "warnings": [problem, ...]}.
/// "page_buckets" (with `spill_dir` only): for "rtt" and "sojourn", "rows" and
/// per key (flow; link · 2 + class) the minimum and maximum per bucket as
/// little-endian f64 bytes (`page.rs`).
/// `progress(now_s, end_s)`, if given, is called for each thousandth of the
/// run the simulated clock passes (the core ticks then and every 65536
/// events), at the same simulated times on every machine, the steps of
/// each 20 ms handed over together. With `spill_dir`, every table is written to
/// `<spill_dir>/<table>.parquet` and listed in "files" ("tables" then holds
/// only those of [`PAGE_TABLES`] no larger than `keep_bytes`, and of
/// [`BUCKETED`] those of at most 2 × `FINE` rows never written out before
/// the end), as the run goes in row groups of `spill_bytes` or more
/// (media_series at the end).
#[pyfunction]
#[pyo3(signature = (text, path=None, overrides=Vec::new(), progress=None, spill_dir=None, spill_bytes=1 << 20, keep_bytes=PAGE_KEEP_BYTES))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    path: Option<&str>,
    overrides: Vec<String>,
    progress: Option<Py<PyAny>>,
    spill_dir: Option<PathBuf>,
    spill_bytes: u64,
    keep_bytes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let file = path.unwrap_or("<string>");
    let t0 = Instant::now();
    // Progress follows simulated time, never the wall clock: the same run reports the same steps anywhere.
    let mut next_report = 0.0f64;
    // Parsed here, once: the page's buckets need the run's length before its first chunk is written.
    let parsed = ccbench_core::scenario::parse_opts(text, file, &overrides, spill_dir.is_some()).map_err(|e| scenario_err(py, &e))?;
    let duration_s = parsed.scenario.duration.as_secs_f64();
    let mut files = spill_dir.as_deref().map(|d| SpillFiles::new(d, duration_s, &PAGE_TABLES, keep_bytes));
    let mut spill_err: Option<String> = None;
    // The exception that stopped the run (Ctrl-C's KeyboardInterrupt, or what a
    // signal handler raised, such as the CLI's on SIGTERM), raised again after.
    let mut stopped_by: Option<PyErr> = None;
    // Time spent waiting for the writer during the run, left out of the engine's wall time.
    let mut writing = std::time::Duration::ZERO;
    // The engine runs on a thread of its own and never takes the GIL: it
    // notes the progress steps and reads `stop`; this thread hands the steps
    // to Python and checks for Ctrl-C every POLL. Python code running
    // meanwhile (a thread importing what the page needs) then costs the
    // engine nothing, where taking the GIL at every tick waited on it.
    let stop = AtomicBool::new(false);
    let steps: Mutex<Vec<(f64, f64)>> = Mutex::new(Vec::new());
    let res = py.detach(|| {
        let (ended, finished) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let engine = std::thread::Builder::new()
                .name("ccbench-engine".into())
                .stack_size(ENGINE_STACK)
                .spawn_scoped(s, || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let spilling = files.is_some();
                        let mut sink = |name: &'static str, cols: Table, done: &mut Vec<Table>| {
                            let t = Instant::now();
                            let r = files.as_mut().map(|f| f.write(name, cols, done));
                            writing += t.elapsed(); // waiting for the writer thread
                            match r {
                                Some(Err(e)) => {
                                    spill_err = Some(e);
                                    false
                                }
                                _ => true,
                            }
                        };
                        let spill_to = spilling.then_some((spill_bytes.max(1), &mut sink as &mut dyn FnMut(&'static str, Table, &mut Vec<Table>) -> bool));
                        let reporting = progress.is_some();
                        ccbench_core::run_parsed(parsed, file, &mut |now_s, end_s| {
                            if reporting && now_s >= next_report {
                                next_report = now_s + end_s / 1000.0;
                                steps.lock().expect("progress steps").push((now_s, end_s));
                            }
                            stop.load(Ordering::Relaxed)
                        }, spill_to)
                    }));
                    let _ = ended.send(());
                    r
                })
                .expect("start the engine thread");
            let mut over = false;
            while !over {
                over = finished.recv_timeout(POLL).is_ok();
                let due = std::mem::take(&mut *steps.lock().expect("progress steps"));
                if stop.load(Ordering::Relaxed) {
                    continue; // stopping: the engine ends at its next tick
                }
                Python::attach(|py| {
                    if let Some(cb) = &progress {
                        for step in due {
                            // A failing callback must not abort the run, but Ctrl-C
                            // handled while it ran (its KeyboardInterrupt) must.
                            if let Err(e) = cb.call1(py, step) {
                                if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                                    stopped_by = Some(e);
                                    stop.store(true, Ordering::Relaxed);
                                    return;
                                }
                            }
                        }
                    }
                    if let Err(e) = py.check_signals() {
                        stopped_by = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                });
            }
            engine.join().unwrap_or_else(Err)
        })
    });
    if let Some(e) = spill_err {
        return Err(PyOSError::new_err(e));
    }
    let out = match res {
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            return Err(SimulationError::new_err(format!("{file}: simulator failure: {msg}")));
        }
        Ok(Err(e)) => return Err(scenario_err(py, &e)),
        // A Ctrl-C seen as the engine finished still stops the command: its
        // KeyboardInterrupt was taken from Python by check_signals.
        Ok(Ok(run)) => match (run, stopped_by) {
            (Some(out), None) => out,
            (_, Some(e)) => return Err(e),
            (None, None) => return Err(PyKeyboardInterrupt::new_err("simulation interrupted")),
        },
    };
    let mut summary = out.summary;
    summary.engine.wall_s = (t0.elapsed() - writing).as_secs_f64();
    let d = PyDict::new(py);
    d.set_item("summary", serde_json::to_string_pretty(&summary).map_err(|e| SimulationError::new_err(e.to_string()))?)?;
    d.set_item("scenario", out.scenario.to_toml())?;
    let all = out.metrics.into_tables();
    let (tables, written, buckets) = (PyDict::new(py), PyDict::new(py), PyDict::new(py));
    match files {
        Some(f) => {
            // The tables the page reads whole, kept in memory as they were
            // written: Python gets them too, so the run's page need not read
            // their files back (nor load Polars). So does a per-packet table
            // of so few rows that the page draws it sample by sample
            // instead of from its buckets.
            for (name, rest) in &all {
                let rows = rest.first().map_or(0, |(_, c)| c.len());
                if let Some(whole) = f.whole(name, rest) {
                    tables.set_item(*name, table_dict(py, &whole)?)?;
                } else if BUCKETED.contains(name) && rows <= 2 * FINE && !f.spilled(name) {
                    tables.set_item(*name, table_dict(py, rest)?)?;
                }
            }
            let (paths, page) = py.detach(|| f.finish(all)).map_err(PyOSError::new_err)?;
            for (name, path) in paths {
                written.set_item(name, path)?;
            }
            for (name, m) in page.tables {
                let keys = PyDict::new(py);
                for (k, (lo, hi)) in m.keys.into_iter().enumerate() {
                    if lo.iter().any(|x| x.is_finite()) {
                        keys.set_item(k, (le_bytes(py, &Column::F64(lo))?, le_bytes(py, &Column::F64(hi))?))?;
                    }
                }
                let t = PyDict::new(py);
                t.set_item("rows", m.rows)?;
                t.set_item("keys", keys)?;
                buckets.set_item(name, t)?;
            }
        }
        None => {
            for (name, cols) in all {
                tables.set_item(name, table_dict(py, &cols)?)?;
            }
        }
    }
    d.set_item("files", written)?;
    d.set_item("tables", tables)?;
    d.set_item("page_buckets", buckets)?;
    d.set_item("warnings", problem_list(py, &out.warnings))?;
    Ok(d)
}

/// The scenario's warnings (legal values probably not meant), as problems.
/// `streamed`: checked for a run whose tables go to disk (`spill_dir`).
#[pyfunction]
#[pyo3(signature = (text, path=None, overrides=Vec::new(), streamed=false))]
fn warnings<'py>(py: Python<'py>, text: &str, path: Option<&str>, overrides: Vec<String>, streamed: bool) -> PyResult<Bound<'py, PyList>> {
    match ccbench_core::scenario::parse_opts(text, path.unwrap_or("<string>"), &overrides, streamed) {
        Ok(p) => Ok(problem_list(py, &p.warnings)),
        Err(e) => Err(scenario_err(py, &e)),
    }
}

/// Parse and validate a scenario; returns the resolved scenario as TOML.
/// `streamed`: checked for a run whose tables go to disk (`spill_dir`).
#[pyfunction]
#[pyo3(signature = (text, path=None, overrides=Vec::new(), streamed=false))]
fn validate(py: Python<'_>, text: &str, path: Option<&str>, overrides: Vec<String>, streamed: bool) -> PyResult<String> {
    match ccbench_core::scenario::parse_opts(text, path.unwrap_or("<string>"), &overrides, streamed) {
        Ok(p) => Ok(p.scenario.to_toml()),
        Err(e) => Err(scenario_err(py, &e)),
    }
}

/// The scenario's estimated cost: {"memory", "disk", "events", "packets",
/// "state"} (bytes, bytes, count, count, bytes), as the limits check it.
/// `streamed`: for a run whose tables go to disk (`memory` leaves them out).
#[pyfunction]
#[pyo3(signature = (text, path=None, overrides=Vec::new(), streamed=false))]
fn estimate<'py>(py: Python<'py>, text: &str, path: Option<&str>, overrides: Vec<String>, streamed: bool) -> PyResult<Bound<'py, PyDict>> {
    let p = ccbench_core::scenario::parse_opts(text, path.unwrap_or("<string>"), &overrides, streamed).map_err(|e| scenario_err(py, &e))?;
    let c = ccbench_core::scenario::limits::estimate(&p.scenario);
    let d = PyDict::new(py);
    d.set_item("memory", if streamed { c.memory_streamed } else { c.memory })?;
    d.set_item("disk", c.disk)?;
    d.set_item("events", c.events)?;
    d.set_item("packets", c.packets)?;
    d.set_item("state", c.state)?;
    Ok(d)
}

/// A file name (without extension) for an id: the id itself when it is
/// plain, else with every other byte written %XX (see the core's `file_name`).
#[pyfunction]
fn file_name(id: &str) -> String {
    ccbench_core::scenario::file_name(id)
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(warnings, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(file_name, m)?)?;
    m.add_function(wrap_pyfunction!(page::page_chart, m)?)?;
    m.add_class::<page::PageFine>()?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    Ok(())
}
