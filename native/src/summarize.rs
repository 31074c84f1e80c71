//! `flinch-trace summarize --runs DIR --out FILE [--skip-traces]`: summarizes a benchmark runs
//! folder exactly as `summarize_host_telemetry.py` does (same keys, nesting, `source` strings
//! and printed line), keeping the runs the reference would crash on or lose, with `warnings`.
//! The computation is `flinch_core::runs` (docs/summarize.md); this module walks the folder,
//! reads the files the core asks for, and summarizes the traces on threads.
//!
//! Exit status: 0 when the summary was written (warnings inside it), 1 when the output file
//! cannot be written or is one of the inputs, 2 for command-line usage errors. `--out` is
//! written through `crate::output` (a temporary file renamed over it on success).
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flinch_core::runs::{
    FileRead, MAX_LINE_BYTES, MAX_WHOLE_FILE_BYTES, PyPath, RunPaths, RunRecord, RunSummarizer,
    RunsSummary, TOO_LARGE, host_run_name, report_path,
};
use flinch_core::telemetry::ValueBudget;

use crate::CmdResult;

#[cfg(unix)]
mod traces;

/// Arguments of `flinch-trace summarize`.
#[derive(clap::Args)]
pub struct Args {
    /// The runs folder (`<name>-host/`, `<name>/`, `*trace*/traces/`).
    #[arg(long)]
    runs: PathBuf,
    /// Where to write the JSON summary.
    #[arg(long)]
    out: PathBuf,
    /// Summarize telemetry only (`trace_analysis: "deferred"`), e.g. while inference timing
    /// is still running.
    #[arg(long)]
    skip_traces: bool,
    /// Summarize traces in memory alone, with unbounded memory. Default: each trace as
    /// `flinch-trace trace` does it (Limits::NATIVE: exact in bounded memory up to the limits in
    /// docs/trace-exactness.md, spilling busy intervals to a temporary file and reading the file
    /// again when needed); past the limits the entry carries `approximations` with the error
    /// bounds, and a warning.
    #[arg(long)]
    exact: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    if !args.runs.is_dir() {
        eprintln!(
            "warning: runs folder {} is not a directory; nothing to summarize",
            args.runs.to_string_lossy()
        );
    }
    // Before any work: --out is a path an output may take, and none of the files read.
    let target = output_target(&args.out, &args.runs).map_err(|e| format!("summarize: {e}"))?;
    let summary = summary(&args.runs, args.skip_traces, args.exact)?;
    crate::output::write_all(target, summary.json.as_bytes())
        .map_err(|e| format!("summarize: {e}"))?;
    println!("{}", summary.message);
    Ok(ExitCode::SUCCESS)
}

/// `--out`, checked (`crate::output`): refused when it is one of the files a summary of `runs`
/// reads (device and inode), so that a hard or symbolic link to an input is refused too.
fn output_target(out: &Path, runs: &Path) -> Result<crate::output::Target, String> {
    let target = crate::output::Target::resolve("--out", out)?;
    if !target.replaces_a_file() {
        return Ok(target);
    }
    let runs_text = runs.to_string_lossy().into_owned();
    let runs = PyPath::new(&runs_text);
    for host in list_dir_sorted(&runs) {
        let Some(name) = host.parts().last().and_then(|n| host_run_name(n)) else {
            continue;
        };
        let p = RunPaths::new(&runs, name);
        for file in [p.telemetry, p.report, p.status, p.requests, p.log] {
            target.refuse_input("an input", &fs_path(&file))?;
        }
    }
    for trace in traces::discover(&runs) {
        target.refuse_input("an input", &fs_path(&trace))?;
        target.refuse_input("an input", &fs_path(&report_path(&runs, &trace)))?;
    }
    Ok(target)
}

/// What `summarize` gives.
pub struct Summary {
    /// The JSON text written to `--out`.
    pub json: String,
    /// The line printed on stdout.
    pub message: String,
}

/// `summarize --runs RUNS [--skip-traces] [--exact]` into memory, with nothing printed: the
/// Python wheel's `summarize`. A runs folder that is no directory gives an empty summary, as
/// in the CLI (which also warns).
pub fn summary(runs: &Path, skip_traces: bool, exact: bool) -> Result<Summary, String> {
    let runs_text = runs.to_string_lossy().into_owned();
    let runs = PyPath::new(&runs_text);
    let mut output = RunsSummary::new(skip_traces);
    for host in list_dir_sorted(&runs) {
        let Some(name) = host.parts().last().and_then(|n| host_run_name(n)) else {
            continue;
        };
        if !fs_path(&host.join("telemetry.jsonl")).is_file() {
            continue;
        }
        let name = name.to_owned();
        let record = summarize_run(&runs, &name);
        output.telemetry.0.push((name, record));
    }
    if !skip_traces {
        output.traces = traces::summarize_all(
            &runs,
            if exact {
                flinch_core::Limits::EXACT
            } else {
                flinch_core::Limits::NATIVE
            },
            !exact,
        );
    }
    let json = output
        .to_json()
        .map_err(|e| format!("summarize: cannot render the summary: {e}"))?;
    Ok(Summary {
        json,
        message: output.message(),
    })
}

/// The path to open on this machine.
fn fs_path(p: &PyPath) -> PathBuf {
    PathBuf::from(p.to_py_string())
}

/// Entries of `dir` in Python's `sorted(Path.glob("*"))` order (unreadable folder: none).
fn list_dir_sorted(dir: &PyPath) -> Vec<PyPath> {
    let mut out: Vec<PyPath> = match fs::read_dir(fs_path(dir)) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| dir.join(&e.file_name().to_string_lossy()))
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// Runs `f` with what is at `path` when it is a file (read whole, up to
/// [`MAX_WHOLE_FILE_BYTES`]; a larger one is unreadable, [`TOO_LARGE`]), else `Missing`.
fn with_file<T>(path: &PyPath, f: impl FnOnce(FileRead<'_>) -> T) -> T {
    let path = fs_path(path);
    if !path.is_file() {
        return f(FileRead::Missing);
    }
    let mut bytes = Vec::new();
    let read = fs::File::open(&path).and_then(|file| {
        file.take(MAX_WHOLE_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
    });
    match read {
        Ok(n) if n > MAX_WHOLE_FILE_BYTES => f(FileRead::Unreadable(TOO_LARGE)),
        Ok(_) => f(FileRead::Bytes(&bytes)),
        Err(e) => f(FileRead::Unreadable(&e.to_string())),
    }
}

/// Longest JSONL or log line read, in bytes ([`MAX_LINE_BYTES`]). Tests set a smaller one with
/// the environment variable `FLINCH_SUMMARIZE_MAX_LINE_BYTES` to skip lines without writing
/// large files.
fn max_line_bytes() -> usize {
    std::env::var("FLINCH_SUMMARIZE_MAX_LINE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_LINE_BYTES)
}

/// Each run's series hold `Limits::NATIVE`'s exact-values budget in memory and write runs past
/// it to a temporary file, so every figure stays exact. Tests set a smaller budget (in values)
/// with the environment variable `FLINCH_SUMMARIZE_MAX_VALUES`.
fn value_budget() -> ValueBudget {
    let mut budget = ValueBudget::in_memory();
    if let Some(n) = std::env::var("FLINCH_SUMMARIZE_MAX_VALUES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        budget.max_values = n;
    }
    #[cfg(unix)]
    let budget = budget.with_spill(std::rc::Rc::new(std::cell::RefCell::new(
        flinch_host::value_spill::FileValueSpill::default(),
    )));
    budget
}

/// Streams the file at `path` into `push` in 64 KiB chunks. `Err(text)` when it cannot be
/// opened (`opened: false`) or a read fails part way (`opened: true`).
fn stream_file(path: &PyPath, mut push: impl FnMut(&[u8])) -> Result<(), (bool, String)> {
    let mut file = fs::File::open(fs_path(path)).map_err(|e| (false, e.to_string()))?;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((true, e.to_string())),
        }
    }
}

/// One run: its files read in the order the core takes them.
fn summarize_run(runs: &PyPath, name: &str) -> RunRecord {
    let mut run = RunSummarizer::with_max_line_bytes(runs, name, max_line_bytes());
    run.set_value_budget(value_budget());
    let paths = run.paths().clone();
    with_file(&paths.report, |f| run.report(f));
    if run.wants_details() {
        with_file(&paths.status, |f| run.status(f));
        match stream_file(&paths.requests, |c| run.requests_push(c)) {
            Ok(()) => run.requests_end(None),
            Err((false, e)) => run.requests_unreadable(&e),
            Err((true, e)) => run.requests_end(Some(&e)),
        }
        // No log (it cannot be opened) gives empty observations, quietly.
        match stream_file(&paths.log, |c| run.log_push(c)) {
            Ok(()) | Err((false, _)) => run.log_end(None),
            Err((true, e)) => run.log_end(Some(&e)),
        }
    }
    let read = stream_file(&paths.telemetry, |c| run.telemetry_push(c));
    run.finish(read.err().map(|(_, e)| e).as_deref())
}
