//! `flinch_trace._native`: the wheel's compiled module. Each function calls the library function
//! the command line calls (`flinch_host::{trace, analyze, runs, diff}`, and for the merge
//! `flinch_core::merge`'s merge job over the texts), so the JSON text is the same bytes;
//! `flinch_trace/__init__.py` turns it into dicts. The work runs with the GIL released
//! (`Python::detach`), and a panic inside it
//! becomes a `RuntimeError` rather than unwinding into the interpreter.
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use flinch_core::Exactness;
use flinch_core::merge::{MergeOptions, merge_json_with};
use flinch_core::summary::DEFAULT_TOP_OPS;
use flinch_core::window::PowerSource;
use flinch_host::analyze::{self, AnalyzeRequest};
use flinch_host::runs::SummarizeOptions;
use flinch_host::trace::{self, SummaryOptions};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Runs `work` without the GIL, turning a panic into a `RuntimeError`.
fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, String> + Send,
) -> PyResult<T> {
    let done = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(message)) => Err(PyValueError::new_err(message)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Err(PyRuntimeError::new_err(format!(
                "flinch-trace: internal error: {what}"
            )))
        }
    }
}

/// `OSError(errno, strerror, filename)` when `path` cannot be looked at (Python picks the
/// subclass from errno: `FileNotFoundError`, `PermissionError`, ...), or when it is not a file
/// (`want_dir` false) or not a folder (`want_dir` true).
fn check_path(path: &Path, want_dir: bool) -> PyResult<()> {
    let name = path.display().to_string();
    match std::fs::metadata(path) {
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(0);
            // Rust's text ends in " (os error N)"; Python's strerror does not.
            let text = e.to_string();
            let strerror = text
                .strip_suffix(&format!(" (os error {errno})"))
                .unwrap_or(&text)
                .to_string();
            Err(PyOSError::new_err((errno, strerror, name)))
        }
        Ok(m) if want_dir && !m.is_dir() => Err(PyOSError::new_err((
            20, // ENOTDIR
            "Not a directory".to_string(),
            name,
        ))),
        Ok(m) if !want_dir && m.is_dir() => Err(PyOSError::new_err((
            21, // EISDIR
            "Is a directory".to_string(),
            name,
        ))),
        Ok(_) => Ok(()),
    }
}

/// `trace PATH --json [--top N] [--bounded | --exact] [--mergeable]` as text.
#[pyfunction]
#[pyo3(signature = (path, top = None, exactness = "native", mergeable = false))]
fn trace_summary_json(
    py: Python<'_>,
    path: PathBuf,
    top: Option<usize>,
    exactness: &str,
    mergeable: bool,
) -> PyResult<String> {
    let exactness = exactness_of(exactness)?;
    check_path(&path, false)?;
    let opts = SummaryOptions {
        top: top.unwrap_or(DEFAULT_TOP_OPS),
        exactness,
        mergeable,
        threads: None,
    };
    detached(py, || {
        trace::summary_json(&path, &opts)
            .map_err(|msg| format!("flinch-trace trace: {}: {msg}", path.display()))
    })
}

/// `trace PATH [--telemetry CSV] --steps [--step-name PATTERN] --json` as text.
#[pyfunction]
#[pyo3(signature = (path, telemetry = None, step_name = None))]
fn steps_json(
    py: Python<'_>,
    path: PathBuf,
    telemetry: Option<PathBuf>,
    step_name: Option<String>,
) -> PyResult<String> {
    check_path(&path, false)?;
    if let Some(csv) = &telemetry {
        check_path(csv, false)?;
    }
    detached(py, || {
        trace::steps::steps_json(&path, telemetry.as_deref(), step_name.as_deref()).map_err(|e| {
            match e {
                trace::steps::StepsError::Usage(msg) => msg,
                trace::steps::StepsError::Run(msg) => {
                    format!("flinch-trace trace: {}: {msg}", path.display())
                }
            }
        })
    })
}

/// `analyze --csv CSV [--start A --end B] --json ...` as text.
#[pyfunction]
#[pyo3(signature = (csv, start = None, end = None, occurrence = 1, spans = false, gpu = None,
                    max_gap_ms = analyze::DEFAULT_MAX_GAP_MS, power_source = None))]
#[allow(clippy::too_many_arguments)] // one per command-line option
fn analyze_json(
    py: Python<'_>,
    csv: PathBuf,
    start: Option<String>,
    end: Option<String>,
    occurrence: u32,
    spans: bool,
    gpu: Option<i64>,
    max_gap_ms: u64,
    power_source: Option<&str>,
) -> PyResult<String> {
    if occurrence == 0 {
        return Err(PyValueError::new_err(
            "occurrence counts from 1 (the first mark of each label)",
        ));
    }
    let power_source = match power_source {
        None => None,
        Some("instant") => Some(PowerSource::Instant),
        Some("average") => Some(PowerSource::Average),
        Some("unknown") => Some(PowerSource::Unknown),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "power_source must be 'instant', 'average' or 'unknown', not {other:?}"
            )));
        }
    };
    check_path(&csv, false)?;
    let req = AnalyzeRequest {
        start,
        end,
        occurrence,
        spans,
        gpu,
        max_gap_ms,
        power_source,
        ..AnalyzeRequest::new(csv)
    };
    let out = detached(py, || analyze::json(&req))?;
    if let Some(message) = out.selection_error {
        return Err(PyValueError::new_err(message));
    }
    String::from_utf8(out.json).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `summarize --runs RUNS [--skip-traces] [--exact]`: the text written to `--out`.
#[pyfunction]
#[pyo3(signature = (runs, skip_traces = false, exact = false))]
fn summarize_json(
    py: Python<'_>,
    runs: PathBuf,
    skip_traces: bool,
    exact: bool,
) -> PyResult<String> {
    check_path(&runs, true)?;
    detached(py, || {
        let options = SummarizeOptions {
            skip_traces,
            ..SummarizeOptions::new(&runs)
        };
        flinch_host::runs::summary(&options, &flinch_host::runs::trace_summarizer(exact))
            .map(|s| s.json)
    })
}

/// `merge --json` of summaries given as JSON texts (`trace --json --mergeable` outputs or merge
/// outputs): the merged summary's text. A bad summary is a `ValueError` naming its index in the
/// list and the key at fault.
#[pyfunction]
#[pyo3(signature = (summaries, top = None))]
fn merge_json(py: Python<'_>, summaries: Vec<String>, top: Option<usize>) -> PyResult<String> {
    let options = MergeOptions {
        top: top.unwrap_or(DEFAULT_TOP_OPS),
    };
    detached(py, || {
        merge_json_with(&summaries, &options).map_err(|e| format!("flinch-trace merge: {e}"))
    })
}

/// `diff A B --json [--telemetry-a CSV] [--telemetry-b CSV] [--top N] [--threshold-pct P]
/// [--min-gap-ms MS] [--bounded | --exact] [--steps] [--step-name PATTERN]` as text:
/// `flinch_host::diff::json`, the CLI's.
#[pyfunction]
#[pyo3(signature = (a, b, telemetry_a = None, telemetry_b = None, top = None,
                    exactness = "native", threshold_pct = None, min_gap_ms = None,
                    steps = false, step_name = None))]
#[allow(clippy::too_many_arguments)] // one per command-line option
fn diff_json(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    telemetry_a: Option<PathBuf>,
    telemetry_b: Option<PathBuf>,
    top: Option<usize>,
    exactness: &str,
    threshold_pct: Option<f64>,
    min_gap_ms: Option<f64>,
    steps: bool,
    step_name: Option<String>,
) -> PyResult<String> {
    let exactness = exactness_of(exactness)?;
    for p in [
        Some(&a),
        Some(&b),
        telemetry_a.as_ref(),
        telemetry_b.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        check_path(p, false)?;
    }
    let mut req = flinch_host::diff::DiffRequest::new(a, b);
    req.telemetry = [telemetry_a, telemetry_b];
    req.exactness = exactness;
    if let Some(top) = top {
        req.top = top;
    }
    if let Some(p) = threshold_pct {
        if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
            return Err(PyValueError::new_err(format!(
                "threshold_pct must be from 0 to 100, not {p}"
            )));
        }
        req.threshold_pct = p;
    }
    req.join = flinch_core::join::join_options(min_gap_ms, 0, None, None)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    // The pattern as the CLI's `--step-name` takes it (a pattern implies the steps).
    let mut o = flinch_core::diff::DiffOptions::new(String::new(), String::new());
    o.set_steps(steps, step_name.as_deref())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    req.steps = o.steps;
    detached(py, || {
        flinch_host::diff::json(&req).map_err(|e| format!("flinch-trace diff: {e}"))
    })
}

/// `"native"`, `"bounded"` or `"exact"`.
fn exactness_of(name: &str) -> PyResult<Exactness> {
    match name {
        "native" => Ok(Exactness::Native),
        "bounded" => Ok(Exactness::Bounded),
        "exact" => Ok(Exactness::Exact),
        other => Err(PyValueError::new_err(format!(
            "exactness must be 'native', 'bounded' or 'exact', not {other:?}"
        ))),
    }
}

/// The compiled half of `flinch_trace`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_summary_json, m)?)?;
    m.add_function(wrap_pyfunction!(steps_json, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_json, m)?)?;
    m.add_function(wrap_pyfunction!(summarize_json, m)?)?;
    m.add_function(wrap_pyfunction!(merge_json, m)?)?;
    m.add_function(wrap_pyfunction!(diff_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_TOP", DEFAULT_TOP_OPS)?;
    Ok(())
}
