//! `flinch-trace summarize --runs DIR --out FILE [--skip-traces]`: summarizes a benchmark runs
//! folder exactly as `summarize_host_telemetry.py` does (same keys, nesting, `source` strings
//! and printed line), keeping the runs the reference would crash on or lose, with `warnings`.
//!
//! Layout read (SPEC §4): `<name>-host/telemetry.jsonl`, `<name>-host/status.json`,
//! `<name>-host/command.log`, `<name>/report.json`, `<name>/requests.jsonl`, and
//! `*trace*/traces/**/*.json[.gz]`.
//!
//! Exit status: 0 when the summary was written (warnings inside it), 1 when the output file
//! cannot be written, 2 for command-line usage errors.
use std::fs;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::telemetry::pynum::{add, sub};
use flinch_core::telemetry::{Num, TelemetrySummary, Window};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::CmdResult;

mod jsonl;
mod logs;
mod pypath;
mod requests;
mod telemetry;
mod traces;

use jsonl::{Warnings, num, truthy};
use pypath::PyPath;

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

/// A JSON object whose keys keep the order they were inserted in.
#[derive(Debug, Default)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The whole output, keys in the reference's order.
#[derive(Serialize)]
struct Output {
    telemetry: OrderedMap<RunRecord>,
    traces: Vec<traces::TraceEntry>,
    trace_analysis: &'static str,
}

/// One run under `telemetry`, keys in the reference's order; `warnings` is ours.
#[derive(Serialize, Default)]
struct RunRecord {
    whole_run: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lifecycle_log_observations: Option<logs::Lifecycle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup: Option<requests::Startup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_first_5min: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_last_5min: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_last_60s: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_request_summary: Option<requests::RequestSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_request_trends: Option<requests::Trends>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let runs_text = args.runs.to_string_lossy().into_owned();
    let runs = PyPath::new(&runs_text);
    if !args.runs.is_dir() {
        eprintln!("warning: runs folder {runs_text} is not a directory; nothing to summarize");
    }
    let mut telemetry = OrderedMap::default();
    for host in list_dir_sorted(&runs) {
        let Some(name) = host.parts().last().and_then(|n| n.strip_suffix("-host")) else {
            continue;
        };
        let raw = host.join("telemetry.jsonl");
        if !raw.to_fs().is_file() {
            continue;
        }
        let name = name.to_owned();
        let record = summarize_run(&runs, &name, &host, &raw);
        telemetry.0.push((name, record));
    }
    let traces = if args.skip_traces {
        Vec::new()
    } else {
        traces::summarize_all(
            &runs,
            if args.exact {
                flinch_core::Limits::EXACT
            } else {
                flinch_core::Limits::NATIVE
            },
            !args.exact,
        )
    };
    let output = Output {
        telemetry,
        traces,
        trace_analysis: if args.skip_traces {
            "deferred"
        } else {
            "requested"
        },
    };
    let mut text = serde_json::to_string_pretty(&output)
        .map_err(|e| format!("summarize: cannot render the summary: {e}"))?;
    text.push('\n');
    fs::write(&args.out, text)
        .map_err(|e| format!("summarize: cannot write {}: {e}", args.out.display()))?;
    println!(
        "Summarized {} telemetry runs and {} traces",
        output.telemetry.0.len(),
        output.traces.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Entries of `dir` in Python's `sorted(Path.glob("*"))` order (unreadable folder: none).
fn list_dir_sorted(dir: &PyPath) -> Vec<PyPath> {
    let mut out: Vec<PyPath> = match fs::read_dir(dir.to_fs()) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| dir.join(&e.file_name().to_string_lossy()))
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// Reads a JSON object file; `None` with a warning when it is unreadable or not an object.
fn read_object(path: &PyPath, w: &mut Warnings) -> Option<Map<String, Value>> {
    let shown = path.to_py_string();
    let bytes = match fs::read(path.to_fs()) {
        Ok(b) => b,
        Err(e) => {
            w.note(format!("{shown}: cannot read ({e}); skipped"));
            return None;
        }
    };
    // serde_json's error carries the line and column; NaN/Infinity tokens get a second try.
    let parsed = serde_json::from_slice::<Value>(&bytes)
        .or_else(|e| jsonl::parse_line(&bytes).map_err(|_| e));
    match parsed {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            w.note(format!("{shown}: not a JSON object; skipped"));
            None
        }
        Err(e) => {
            w.note(format!("{shown}: malformed JSON ({e}); skipped"));
            None
        }
    }
}

/// One run: telemetry windows, log observations, startup and request figures.
fn summarize_run(runs: &PyPath, name: &str, host: &PyPath, raw: &PyPath) -> RunRecord {
    let mut w = Warnings::default();
    let mut record = RunRecord::default();
    let source = raw.to_py_string();
    let report_path = runs.join(name).join("report.json");
    let report = if report_path.to_fs().is_file() {
        read_object(&report_path, &mut w)
    } else {
        None
    };
    let Some(report) = report else {
        record.whole_run = telemetry::summarize(&raw.to_fs(), &source, &[Window::ALL]).pop();
        record.warnings = w.render("");
        return record;
    };
    let status_path = host.join("status.json");
    let host_report = if status_path.to_fs().is_file() {
        read_object(&status_path, &mut w).unwrap_or_default()
    } else {
        Map::new()
    };
    let requests = read_requests(&runs.join(name).join("requests.jsonl"), &mut w);
    let log_path = host.join("command.log");
    let log = fs::File::open(log_path.to_fs()).ok().map(BufReader::new);
    let (obs, log_error) = logs::observe(log);
    if let Some(e) = log_error {
        w.note(format!(
            "{}: read error, lines after it are missing: {e}",
            log_path.to_py_string()
        ));
    }
    record.lifecycle_log_observations = Some(obs.lifecycle);
    record.startup = Some(requests::startup(
        &report,
        &host_report,
        &requests,
        obs.timing_lines,
        &mut w,
    ));
    let start = report.get("sustained_start_unix").unwrap_or(&Value::Null);
    let duration = report.get("sustained_wall_s").unwrap_or(&Value::Null);
    let sustained = match (truthy(start) && truthy(duration), num(start), num(duration)) {
        (false, _, _) => None,
        (true, Some(s), Some(d)) if s.is_finite() && d.is_finite() => Some((s, d)),
        _ => {
            w.note(format!(
                "report.json sustained_start_unix/sustained_wall_s are not numbers ({start}, {duration}); sustained windows skipped"
            ));
            None
        }
    };
    let mut windows = vec![Window::ALL];
    if let Some((s, d)) = sustained {
        let end = add(s, d);
        let win = |a: Num, b: Num| Window {
            start: Some(a),
            stop: Some(b),
        };
        windows.extend([
            win(s, end),
            win(s, add(s, Num::Int(300))),
            win(sub(end, Num::Int(300)), end),
            win(sub(end, Num::Int(60)), end),
        ]);
    }
    let mut summaries = telemetry::summarize(&raw.to_fs(), &source, &windows).into_iter();
    record.whole_run = summaries.next();
    if let Some((s, d)) = sustained {
        record.sustained = summaries.next();
        record.sustained_first_5min = summaries.next();
        record.sustained_last_5min = summaries.next();
        record.sustained_last_60s = summaries.next();
        let (summary, trends) = requests::sustained(&requests, s, d, &mut w);
        record.sustained_request_summary = Some(summary);
        record.sustained_request_trends = Some(trends);
    }
    record.warnings = w.render(&runs.join(name).join("requests.jsonl").to_py_string());
    record
}

/// `requests.jsonl` as objects; a missing file or non-object lines are warned about.
fn read_requests(path: &PyPath, w: &mut Warnings) -> Vec<requests::Request> {
    let shown = path.to_py_string();
    let file = match fs::File::open(path.to_fs()) {
        Ok(f) => f,
        Err(e) => {
            w.note(format!("{shown}: cannot read ({e}); no request figures"));
            return Vec::new();
        }
    };
    let mut rows = Vec::new();
    let read = jsonl::for_each_line(BufReader::new(file), w, |line, v, w| match v {
        Value::Object(fields) => rows.push(requests::Request { line, fields }),
        _ => w.at_line("skipped, not a JSON object", line),
    });
    if let Err(e) = read {
        w.note(format!(
            "{shown}: read error, lines after it are missing: {e}"
        ));
    }
    rows
}
