//! The std driver of the runs-folder job (`flinch_core::runs::RunsFolder`): `summarize` of a
//! runs folder for the CLI and the Python wheel. It answers the job's listing from the file
//! system, streams each file it asks for, keeps each run's statistics exact past the memory
//! budget with a temporary file (`value_spill`), and summarizes the traces the job names on up
//! to [`MAX_TRACE_THREADS`] threads through the summarizer it is given. Which files are read,
//! in which order, and the result are the job's.
//!
//! The listing follows symbolic links to files everywhere, and to folders where the job allows
//! it ([`RunsFolder::lists_folder`]): the glob components `runs/*` and `*trace*/traces` do,
//! `traces/**` does not, as in Python.
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use flinch_core::job::{Job, Need};
use flinch_core::runs::{
    MAX_LINE_BYTES, PyPath, RunsFolder, RunsOptions, RunsSummary, TraceOutcome,
};
use flinch_core::summary::TraceSummaryResult;
use flinch_core::telemetry::ValueBudget;

/// Threads summarizing traces at once (each holds one file's bounded state).
pub const MAX_TRACE_THREADS: usize = 4;

/// Bytes read from a file at a time.
const CHUNK_BYTES: usize = 64 << 10;

/// Summarizes one trace file (`path` on this machine, `source` as the summary names it) with
/// the 40 largest ops (`flinch_core::runs::TOP_OPS`); `Err`: why it could not be summarized.
pub type TraceSummarizer<'a> =
    dyn Fn(&Path, &str) -> Result<TraceSummaryResult, String> + Sync + 'a;

/// What to summarize, and within which limits.
#[derive(Clone, Debug)]
pub struct SummarizeOptions {
    /// The runs folder (`<name>-host/`, `<name>/`, `*trace*/traces/`).
    pub runs: PathBuf,
    /// Leave the traces out (`trace_analysis: "deferred"`).
    pub skip_traces: bool,
    /// Longest JSONL or `command.log` line read, in bytes; a longer one is skipped and counted.
    pub max_line_bytes: usize,
    /// Values a run's series hold in memory together before they write sorted runs to the
    /// temporary file; `None`: [`ValueBudget::in_memory`]'s.
    pub max_values: Option<usize>,
}

impl SummarizeOptions {
    /// The folder `runs`, traces included, with the default limits.
    pub fn new(runs: impl Into<PathBuf>) -> Self {
        SummarizeOptions {
            runs: runs.into(),
            skip_traces: false,
            max_line_bytes: MAX_LINE_BYTES,
            max_values: None,
        }
    }
}

/// What `summarize` gives.
pub struct Summary {
    /// The JSON text of the summary (what `summarize --out` writes).
    pub json: String,
    /// The line `summarize` prints.
    pub message: String,
}

/// A runs folder whose listing has been read: the files it will read are known
/// ([`inputs`](Self::inputs)) before any is read.
pub struct ListedRuns {
    job: RunsFolder,
}

impl ListedRuns {
    /// Lists the folder of `options` (a folder that is no directory, or cannot be read, holds
    /// nothing: an empty summary).
    pub fn list(options: &SummarizeOptions) -> ListedRuns {
        let runs_text = options.runs.to_string_lossy().into_owned();
        let mut job = RunsFolder::new(
            &runs_text,
            RunsOptions {
                skip_traces: options.skip_traces,
                max_line_bytes: options.max_line_bytes,
            },
        );
        let max_values = options.max_values;
        job.set_value_budget(Box::new(move || value_budget(max_values)));
        job.set_driver_opens_unlisted(true);
        // The job asks for its listing first.
        if let Need::Listing(dir) = job.need() {
            let mut paths = Vec::new();
            walk(&job, &PyPath::new(dir), &mut paths);
            let listed = job.listing(&mut paths.iter().map(String::as_str));
            debug_assert!(listed.is_ok(), "{listed:?}");
        }
        ListedRuns { job }
    }

    /// Every file the summary reads or may read, as paths on this machine.
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.job.inputs().iter().map(fs_path).collect()
    }

    /// Reads the files and summarizes the traces with `traces`. Unreadable files are warnings in
    /// the summary, not errors.
    ///
    /// # Errors
    /// The job refused a call, or asked for what it never asks (a bug in the job or here).
    pub fn summarize(mut self, traces: &TraceSummarizer<'_>) -> Result<RunsSummary, String> {
        let job = &mut self.job;
        let mut buf = vec![0u8; CHUNK_BYTES];
        loop {
            match job.need() {
                Need::Done => break,
                Need::File(path) => {
                    let todo: Vec<PyPath> = job.traces_to_summarize().cloned().collect();
                    if todo.is_empty() {
                        let path = PathBuf::from(path);
                        stream(job, &path, &mut buf).map_err(|e| e.to_string())?;
                    } else {
                        for outcome in summarize_traces(&todo, traces) {
                            job.trace_summarized(outcome).map_err(|e| e.to_string())?;
                        }
                    }
                }
                Need::Ranges(_) | Need::Listing(_) => {
                    return Err("summarize: the runs folder job asked out of turn".to_owned());
                }
            }
        }
        self.job.finish().map_err(|e| e.to_string())
    }
}

/// `summarize` of `options` into memory, traces summarized with `traces`: the JSON text and the
/// line to print.
///
/// # Errors
/// As [`ListedRuns::summarize`], or the summary cannot be rendered.
pub fn summary(
    options: &SummarizeOptions,
    traces: &TraceSummarizer<'_>,
) -> Result<Summary, String> {
    let summary = ListedRuns::list(options).summarize(traces)?;
    let json = summary
        .to_json()
        .map_err(|e| format!("summarize: cannot render the summary: {e}"))?;
    Ok(Summary {
        json,
        message: summary.message(),
    })
}

/// Each run's budget: held in memory up to `max_values` values (default: `Limits::NATIVE`'s
/// exact-values budget), the rest written to a temporary file, so every figure stays exact.
fn value_budget(max_values: Option<usize>) -> ValueBudget {
    let mut budget = ValueBudget::in_memory();
    if let Some(n) = max_values {
        budget.max_values = n;
    }
    budget.with_spill(std::rc::Rc::new(std::cell::RefCell::new(
        crate::value_spill::FileValueSpill::default(),
    )))
}

/// The path to open on this machine.
fn fs_path(p: &PyPath) -> PathBuf {
    PathBuf::from(p.to_py_string())
}

/// Every file under `dir` that the job's listing covers.
fn walk(job: &RunsFolder, dir: &PyPath, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(fs_path(dir)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = dir.join(&entry.file_name().to_string_lossy());
        let (through_link, is_dir, is_file) = match entry.file_type() {
            Ok(t) if !t.is_symlink() => (false, t.is_dir(), t.is_file()),
            _ => match fs::metadata(fs_path(&path)) {
                Ok(m) => (true, m.is_dir(), m.is_file()),
                Err(_) => continue,
            },
        };
        if is_file {
            out.push(path.to_py_string());
        } else if is_dir && job.lists_folder(&path, through_link) {
            walk(job, &path, out);
        }
    }
}

/// Streams the file at `path` into the job: opened (or the job told why not), read in chunks
/// while the job wants them (a read error is told to it), then ended.
fn stream(
    job: &mut RunsFolder,
    path: &Path,
    buf: &mut [u8],
) -> Result<(), flinch_core::runs::RunsFolderError> {
    match fs::File::open(path) {
        Err(e) => job.open_error(&e.to_string()),
        Ok(mut file) => {
            while job.wants_more_bytes() {
                match file.read(buf) {
                    Ok(0) => break,
                    Ok(n) => job.write(&buf[..n])?,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        job.read_error(&e.to_string());
                        break;
                    }
                }
            }
        }
    }
    job.end()
}

/// Each trace of `todo` summarized with `summarize`, on up to [`MAX_TRACE_THREADS`] threads, in
/// the order of `todo`.
fn summarize_traces(todo: &[PyPath], summarize: &TraceSummarizer<'_>) -> Vec<TraceOutcome> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(todo.len()));
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_TRACE_THREADS)
        .min(todo.len());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = todo.get(k) else { break };
                    let source = path.to_py_string();
                    // A bug in the engine must not take the other traces down: it becomes this
                    // trace's error entry.
                    let run = std::panic::AssertUnwindSafe(|| summarize(&fs_path(path), &source));
                    let outcome = match std::panic::catch_unwind(run) {
                        Ok(Ok(r)) => TraceOutcome::Summary(Box::new(r)),
                        Ok(Err(e)) => TraceOutcome::Failed(e),
                        Err(_) => TraceOutcome::Internal,
                    };
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((k, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(k, _)| *k);
    results.into_iter().map(|(_, outcome)| outcome).collect()
}

/// The summary of one trace of a runs folder, by the same code as `flinch-trace trace`: within
/// `Limits::NATIVE`, exact past the memory limits through its temporary files (`exact`: in
/// memory alone, `Limits::EXACT`), with no progress line (up to 4 traces run at once).
pub fn trace_summarizer(
    exact: bool,
) -> impl Fn(&Path, &str) -> Result<TraceSummaryResult, String> + Sync {
    let options = crate::trace::SummaryOptions {
        top: flinch_core::runs::TOP_OPS,
        exactness: if exact {
            flinch_core::Exactness::Exact
        } else {
            flinch_core::Exactness::Native
        },
        mergeable: false,
        threads: None,
    };
    move |path, source| crate::trace::summarize_file(path, source, &options, None)
}
