//! `summarize` of a benchmark runs folder, computed exactly as `summarize_host_telemetry.py`
//! does (same keys, nesting, `source` strings and printed line), keeping the runs the reference
//! would crash on or lose, with `warnings`. Needs the `alloc` feature.
//!
//! The job is [`RunsFolder`] (a [`crate::job::Job`]): given the folder's listing, it picks the
//! files `summarize` reads, asks for them one at a time, and ends with the [`RunsSummary`], which
//! renders the whole output. The page and the std driver (`flinch-host`, for the CLI and the
//! Python wheel) both drive it. Within it each `<name>-host/` run is a [`RunSummarizer`] fed the
//! run's files' bytes in the order its methods are listed, and each trace a [`TraceEntry`].
//!
//! Layout read: `<name>-host/telemetry.jsonl`, `<name>-host/status.json`,
//! `<name>-host/command.log`, `<name>/report.json`, `<name>/requests.jsonl`, and
//! `*trace*/traces/**/*.json[.gz]`.
//!
//! Windows of the telemetry: the whole run, and when the report gives a sustained phase
//! (`sustained_start_unix` and `sustained_wall_s`, start `s` and end `e = s + wall`): the phase
//! `[s, e]`, its first five minutes `[s, s + 300]`, its last five minutes `[e - 300, e]` and its
//! last 60 s `[e - 60, e]`, all inclusive. Request trends use the same bounds half-open
//! (`[begin, end)`) over each request's `submitted_unix`.
//!
//! # Example
//! ```
//! use flinch_core::runs::{FileRead, PyPath, RunSummarizer, RunsSummary};
//!
//! let runs = PyPath::new("runs");
//! let mut run = RunSummarizer::new(&runs, "a");
//! run.report(FileRead::Missing); // no `runs/a/report.json`: the whole run only
//! run.telemetry_push(b"{\"unix\": 10, \"host_memory\": {\"available\": 5, \"used\": 1}}\n");
//! run.telemetry_push(b"{\"unix\": 12, \"host_memory\": {\"available\": 7, \"used\": 1}}\n");
//! let record = run.finish(None);
//! let mut summary = RunsSummary::new(false);
//! summary.telemetry.0.push(("a".into(), record));
//! let json = summary.to_json().unwrap();
//! assert!(json.contains("\"source\": \"runs/a-host/telemetry.jsonl\""));
//! assert!(json.contains("\"span_s\": 2,"));
//! assert_eq!(summary.message(), "Summarized 1 telemetry runs and 0 traces");
//! ```
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use serde::Serialize;
use serde_json::{Map, Value};

mod folder;
mod jsonl;
mod lines;
mod logs;
mod path;
mod requests;
mod telemetry;
mod traces;
mod warnings;

pub use folder::{NOT_FOUND, RunsFolder, RunsFolderError, RunsOptions, TraceOutcome};
pub use jsonl::{JsonlReader, MAX_LINE_BYTES};
pub use logs::{Lifecycle, LogObservations, LogObserver, MarkerCount};
pub use path::PyPath;
pub use requests::{FirstWarmup, RequestSummary, Startup, Trend, Trends};
pub use telemetry::TelemetryReader;
pub use traces::{
    TOP_OPS, TraceEntry, TraceSummaryEntry, completed, is_trace_folder, is_trace_name, report_path,
};
pub use warnings::Warnings;

pub use crate::ordered::OrderedMap;

use crate::pynum::{add, sub};
use crate::telemetry::{Num, TelemetrySummary, ValueBudget, Window};
use jsonl::{num, truthy};

/// Largest file read whole (`report.json`, `status.json`, a trace's diagnostic `report.json`),
/// in bytes: these are held to be parsed, so a larger one is treated as unreadable, with
/// [`TOO_LARGE`] as the reason, and memory stays bounded whatever the folder holds.
pub const MAX_WHOLE_FILE_BYTES: usize = 16 << 20;

/// Why a file read whole was not read: it is larger than [`MAX_WHOLE_FILE_BYTES`].
pub const TOO_LARGE: &str = "larger than 16777216 bytes, the most read whole";

/// What the caller found at a path, for the files read whole.
#[derive(Clone, Copy, Debug)]
pub enum FileRead<'a> {
    /// No such file (or not a file).
    Missing,
    /// The file exists but could not be read: the error's text.
    Unreadable(&'a str),
    /// The file's bytes.
    Bytes(&'a [u8]),
}

/// The whole output, keys in the reference's order.
#[derive(Serialize, Debug)]
pub struct RunsSummary {
    /// One record per `<name>-host/` folder with a `telemetry.jsonl`, in sorted order.
    pub telemetry: OrderedMap<RunRecord>,
    /// Every trace file, in sorted order.
    pub traces: Vec<TraceEntry>,
    /// `requested`, or `deferred` when the traces were skipped.
    pub trace_analysis: &'static str,
}

impl RunsSummary {
    /// An empty summary; `skip_traces`: the traces are deferred.
    pub fn new(skip_traces: bool) -> Self {
        RunsSummary {
            telemetry: OrderedMap::default(),
            traces: Vec::new(),
            trace_analysis: if skip_traces { "deferred" } else { "requested" },
        }
    }

    /// The output file's text: 2-space indented JSON and a newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

    /// The line the reference prints.
    pub fn message(&self) -> String {
        alloc::format!(
            "Summarized {} telemetry runs and {} traces",
            self.telemetry.0.len(),
            self.traces.len()
        )
    }
}

/// One run under `telemetry`, keys in the reference's order; `warnings` is ours.
#[derive(Serialize, Default, Debug)]
pub struct RunRecord {
    whole_run: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lifecycle_log_observations: Option<Lifecycle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup: Option<Startup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_first_5min: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_last_5min: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_last_60s: Option<TelemetrySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_request_summary: Option<RequestSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sustained_request_trends: Option<Trends>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// The paths of one run's files, spelled as the reference spells them.
#[derive(Clone, Debug)]
pub struct RunPaths {
    /// `<runs>/<name>-host/telemetry.jsonl`.
    pub telemetry: PyPath,
    /// `<runs>/<name>/report.json`.
    pub report: PyPath,
    /// `<runs>/<name>-host/status.json`.
    pub status: PyPath,
    /// `<runs>/<name>/requests.jsonl`.
    pub requests: PyPath,
    /// `<runs>/<name>-host/command.log`.
    pub log: PyPath,
}

impl RunPaths {
    /// The files of run `name` in `runs`.
    pub fn new(runs: &PyPath, name: &str) -> Self {
        let host = runs.join(&alloc::format!("{name}-host"));
        let run = runs.join(name);
        RunPaths {
            telemetry: host.join("telemetry.jsonl"),
            report: run.join("report.json"),
            status: host.join("status.json"),
            requests: run.join("requests.jsonl"),
            log: host.join("command.log"),
        }
    }
}

/// The run name of a top-level folder of the runs folder: `a` for `a-host`, else none.
pub fn host_run_name(folder: &str) -> Option<&str> {
    folder.strip_suffix("-host")
}

/// Summarizes one run from its files' bytes. Call, in this order: [`report`](Self::report);
/// when [`wants_details`](Self::wants_details) says so, [`status`](Self::status),
/// `requests_*`, `log_*`; then `telemetry_*` and [`finish`](Self::finish). Calls for files
/// a run without a report does not use are ignored.
#[derive(Debug)]
pub struct RunSummarizer {
    paths: RunPaths,
    w: Warnings,
    report: Option<Map<String, Value>>,
    host_report: Map<String, Value>,
    /// The first warmup request (what `startup` reads of the requests).
    warmup: Option<requests::Request>,
    /// The sustained phase's request figures, from the report's bounds on.
    sustained: Option<requests::SustainedAcc>,
    budget: ValueBudget,
    requests_reader: JsonlReader,
    log: Option<LogObserver>,
    /// Computed once the log has ended: startup figures and the sustained phase.
    details: Option<Details>,
    telemetry: Option<TelemetryReader>,
    max_line_bytes: usize,
}

#[derive(Debug)]
struct Details {
    lifecycle: Lifecycle,
    startup: Startup,
    sustained: Option<(Num, Num)>,
}

impl RunSummarizer {
    /// A summarizer for run `name` of the runs folder `runs`.
    pub fn new(runs: &PyPath, name: &str) -> Self {
        Self::with_max_line_bytes(runs, name, MAX_LINE_BYTES)
    }

    /// A summarizer whose JSONL and log lines longer than `max_line_bytes` are skipped and
    /// counted ([`MAX_LINE_BYTES`] in [`new`](Self::new)).
    pub fn with_max_line_bytes(runs: &PyPath, name: &str, max_line_bytes: usize) -> Self {
        RunSummarizer {
            paths: RunPaths::new(runs, name),
            w: Warnings::default(),
            report: None,
            host_report: Map::new(),
            warmup: None,
            sustained: None,
            budget: ValueBudget::in_memory(),
            requests_reader: JsonlReader::with_max_line_bytes(max_line_bytes),
            log: Some(LogObserver::with_max_line_bytes(max_line_bytes)),
            details: None,
            telemetry: None,
            max_line_bytes,
        }
    }

    /// Where the run's series keep their values (call before [`report`](Self::report)): the
    /// default, [`ValueBudget::in_memory`], moves a series past its share to the quantile
    /// sketch (said in the output); with a spill every figure stays exact.
    pub fn set_value_budget(&mut self, budget: ValueBudget) {
        self.budget = budget;
    }

    /// The run's files, to read them.
    pub fn paths(&self) -> &RunPaths {
        &self.paths
    }

    /// `<name>/report.json`. Without a readable report object only the whole run is summarized.
    pub fn report(&mut self, file: FileRead<'_>) {
        let shown = self.paths.report.to_py_string();
        self.report = read_object(file, &shown, &mut self.w);
        if let Some(Ok(Some((s, d)))) = self.report.as_ref().map(sustained_bounds) {
            self.sustained = Some(requests::SustainedAcc::new(s, d, &self.budget));
        }
    }

    /// Whether the run has a report, so that its status, requests and log are read.
    pub fn wants_details(&self) -> bool {
        self.report.is_some()
    }

    /// `<name>-host/status.json`.
    pub fn status(&mut self, file: FileRead<'_>) {
        let shown = self.paths.status.to_py_string();
        self.host_report = read_object(file, &shown, &mut self.w).unwrap_or_default();
    }

    /// `requests.jsonl` could not be opened (or is missing): no request figures.
    pub fn requests_unreadable(&mut self, error: &str) {
        let shown = self.paths.requests.to_py_string();
        self.w.note(alloc::format!(
            "{shown}: cannot read ({error}); no request figures"
        ));
    }

    /// The next chunk of `requests.jsonl`.
    pub fn requests_push(&mut self, chunk: &[u8]) {
        let (warmup, sustained) = (&mut self.warmup, &mut self.sustained);
        self.requests_reader.push(chunk, &mut self.w, |line, v, w| {
            take_request(warmup, sustained, line, v, w)
        });
    }

    /// The end of `requests.jsonl`; `read_error` ended reading early.
    pub fn requests_end(&mut self, read_error: Option<&str>) {
        match read_error {
            None => {
                let (warmup, sustained) = (&mut self.warmup, &mut self.sustained);
                self.requests_reader.finish(&mut self.w, |line, v, w| {
                    take_request(warmup, sustained, line, v, w)
                });
            }
            Some(e) => {
                let shown = self.paths.requests.to_py_string();
                self.w.note(alloc::format!(
                    "{shown}: read error, lines after it are missing: {e}"
                ));
            }
        }
    }

    /// The next chunk of `<name>-host/command.log` (a run without a log pushes none).
    pub fn log_push(&mut self, chunk: &[u8]) {
        if let Some(log) = self.log.as_mut() {
            log.push(chunk);
        }
    }

    /// The end of the log; `read_error` ended reading early.
    pub fn log_end(&mut self, read_error: Option<&str>) {
        let Some(log) = self.log.take() else { return };
        let obs = log.finish(read_error.is_some());
        let shown = self.paths.log.to_py_string();
        for line in obs.warnings.render(&shown) {
            self.w.note(line);
        }
        if let Some(e) = read_error {
            self.w.note(alloc::format!(
                "{shown}: read error, lines after it are missing: {e}"
            ));
        }
        let Some(report) = self.report.as_ref() else {
            return;
        };
        let startup = requests::startup(
            report,
            &self.host_report,
            self.warmup.as_ref(),
            obs.timing_lines,
            &mut self.w,
        );
        let sustained = match sustained_bounds(report) {
            Ok(bounds) => bounds,
            Err((start, duration)) => {
                self.w.note(alloc::format!(
                    "report.json sustained_start_unix/sustained_wall_s are not numbers ({start}, {duration}); sustained windows skipped"
                ));
                None
            }
        };
        self.details = Some(Details {
            lifecycle: obs.lifecycle,
            startup,
            sustained,
        });
    }

    fn telemetry_reader(&mut self) -> &mut TelemetryReader {
        if self.report.is_some() && self.details.is_none() {
            self.log_end(None);
        }
        let (details, max_line_bytes) = (&self.details, self.max_line_bytes);
        let budget = &self.budget;
        self.telemetry.get_or_insert_with(|| {
            TelemetryReader::with_budget(&windows(details), max_line_bytes, budget.clone())
        })
    }

    /// The next chunk of `<name>-host/telemetry.jsonl`.
    pub fn telemetry_push(&mut self, chunk: &[u8]) {
        self.telemetry_reader().push(chunk);
    }

    /// The end of the telemetry (`read_error`: it ended early, or the file could not be
    /// opened), and the run's record.
    pub fn finish(mut self, read_error: Option<&str>) -> RunRecord {
        self.telemetry_reader();
        let source = self.paths.telemetry.to_py_string();
        let summaries = match self.telemetry.take() {
            Some(reader) => reader.finish(&source, read_error),
            None => Vec::new(),
        };
        let mut summaries = summaries.into_iter();
        let mut record = RunRecord {
            whole_run: summaries.next(),
            ..RunRecord::default()
        };
        let Some(details) = self.details else {
            record.warnings = self.w.render("");
            return record;
        };
        record.lifecycle_log_observations = Some(details.lifecycle);
        record.startup = Some(details.startup);
        if let Some((s, d)) = details.sustained {
            record.sustained = summaries.next();
            record.sustained_first_5min = summaries.next();
            record.sustained_last_5min = summaries.next();
            record.sustained_last_60s = summaries.next();
            let _ = (s, d);
            let acc = self.sustained.take();
            let acc = acc.unwrap_or_else(|| requests::SustainedAcc::new(s, d, &self.budget));
            let (summary, trends) = acc.finish(&mut self.w);
            record.sustained_request_summary = Some(summary);
            record.sustained_request_trends = Some(trends);
        }
        record.warnings = self.w.render(&self.paths.requests.to_py_string());
        record
    }
}

/// The telemetry windows: the whole run, then the sustained phase's four.
fn windows(details: &Option<Details>) -> Vec<Window> {
    let mut windows = vec![Window::ALL];
    if let Some((s, d)) = details.as_ref().and_then(|d| d.sustained) {
        let end = add(s, d);
        windows.extend([
            Window::inclusive(s, end),
            Window::inclusive(s, add(s, Num::Int(300))),
            Window::inclusive(sub(end, Num::Int(300)), end),
            Window::inclusive(sub(end, Num::Int(60)), end),
        ]);
    }
    windows
}

/// The report's sustained phase `(start, duration)`: none when it gives none (falsy values),
/// `Err` with both values when they are not finite numbers.
fn sustained_bounds(report: &Map<String, Value>) -> Result<Option<(Num, Num)>, (Value, Value)> {
    let start = report.get("sustained_start_unix").unwrap_or(&Value::Null);
    let duration = report.get("sustained_wall_s").unwrap_or(&Value::Null);
    match (truthy(start) && truthy(duration), num(start), num(duration)) {
        (false, _, _) => Ok(None),
        (true, Some(s), Some(d)) if s.is_finite() && d.is_finite() => Ok(Some((s, d))),
        _ => Err((start.clone(), duration.clone())),
    }
}

/// One row of `requests.jsonl`: the first warmup row is kept (for `startup`), a sustained row
/// is counted into the phase's figures, and the row is dropped.
fn take_request(
    warmup: &mut Option<requests::Request>,
    sustained: &mut Option<requests::SustainedAcc>,
    line: usize,
    v: Value,
    w: &mut Warnings,
) {
    let Value::Object(fields) = v else {
        w.at_line("skipped, not a JSON object", line);
        return;
    };
    let r = requests::Request { line, fields };
    if let Some(acc) = sustained.as_mut().filter(|_| r.phase_is("sustained")) {
        acc.push(&r);
    }
    if warmup.is_none() && r.phase_is("warmup") {
        *warmup = Some(r);
    }
}

/// A JSON object file; `None` with a warning when it is unreadable or not an object.
fn read_object(file: FileRead<'_>, shown: &str, w: &mut Warnings) -> Option<Map<String, Value>> {
    let bytes = match file {
        FileRead::Missing => return None,
        FileRead::Unreadable(e) => {
            w.note(alloc::format!("{shown}: cannot read ({e}); skipped"));
            return None;
        }
        FileRead::Bytes(b) => b,
    };
    // serde_json's error carries the line and column; NaN/Infinity tokens get a second try.
    let parsed =
        serde_json::from_slice::<Value>(bytes).or_else(|e| jsonl::parse_line(bytes).map_err(|_| e));
    match parsed {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            w.note(alloc::format!("{shown}: not a JSON object; skipped"));
            None
        }
        Err(e) => {
            w.note(alloc::format!("{shown}: malformed JSON ({e}); skipped"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;

    const CASE: &str = "../tests/summarize/cases/basic";
    const REPORT: &[u8] = include_bytes!("../../tests/summarize/cases/basic/alpha/report.json");
    const REQUESTS: &[u8] =
        include_bytes!("../../tests/summarize/cases/basic/alpha/requests.jsonl");
    const STATUS: &[u8] =
        include_bytes!("../../tests/summarize/cases/basic/alpha-host/status.json");
    const LOG: &[u8] = include_bytes!("../../tests/summarize/cases/basic/alpha-host/command.log");
    const TELEMETRY: &[u8] =
        include_bytes!("../../tests/summarize/cases/basic/alpha-host/telemetry.jsonl");

    fn record(requests: &[&[u8]], log: &[&[u8]], telemetry: &[&[u8]]) -> String {
        let mut run = RunSummarizer::new(&PyPath::new(CASE), "alpha");
        run.report(FileRead::Bytes(REPORT));
        assert!(run.wants_details());
        run.status(FileRead::Bytes(STATUS));
        for c in requests {
            run.requests_push(c);
        }
        run.requests_end(None);
        for c in log {
            run.log_push(c);
        }
        run.log_end(None);
        for c in telemetry {
            run.telemetry_push(c);
        }
        serde_json::to_string(&run.finish(None)).unwrap()
    }

    #[test]
    fn the_too_large_reason_names_the_limit() {
        assert!(TOO_LARGE.contains(&alloc::format!(" {MAX_WHOLE_FILE_BYTES} bytes")));
    }

    /// A log line past the limit is skipped and named in the run's warnings with the log's
    /// path and its line number; the markers of the other lines are found as before.
    #[test]
    fn log_lines_past_the_limit_are_counted() {
        let mut run = RunSummarizer::with_max_line_bytes(&PyPath::new("r"), "x", 40);
        run.report(FileRead::Bytes(b"{}"));
        run.status(FileRead::Missing);
        run.requests_end(None);
        run.log_push(b"Model loading took 2 s\n");
        run.log_push(&[b'y'; 50]);
        run.log_push(b" Model loading took 9 s\nforce killing remaining process 1\n");
        run.log_end(None);
        let r = run.finish(None);
        assert_eq!(
            r.warnings,
            ["r/x-host/command.log: line over 40 bytes skipped: 1 line (2)"]
        );
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("[\"Model loading took 2 s\"]"), "{json}");
        assert!(json.contains("\"count\":1"), "{json}");
    }

    /// Every file pushed in any split gives the record of the files pushed whole.
    #[test]
    fn any_split_of_every_file_gives_the_same_record() {
        let whole = record(&[REQUESTS], &[LOG], &[TELEMETRY]);
        assert!(whole.contains("\"sustained_last_60s\""));
        for_each_split(REQUESTS, 8, 1, |c| {
            assert_eq!(record(c, &[LOG], &[TELEMETRY]), whole)
        });
        for_each_split(LOG, 8, 2, |c| {
            assert_eq!(record(&[REQUESTS], c, &[TELEMETRY]), whole)
        });
        for_each_split(TELEMETRY, 8, 3, |c| {
            assert_eq!(record(&[REQUESTS], &[LOG], c), whole)
        });
    }

    /// A run without a report is its whole-run telemetry only; a read error ends the file
    /// without its cut last line and says so.
    #[test]
    fn no_report_and_read_errors() {
        let mut run = RunSummarizer::new(&PyPath::new("r"), "x");
        run.report(FileRead::Unreadable("denied"));
        assert!(!run.wants_details());
        run.telemetry_push(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n");
        run.telemetry_push(b"{\"unix\": 2, \"host_memory\": {\"available\": 1, \"used\"");
        let r = run.finish(Some("EIO"));
        let whole = r.whole_run.as_ref().unwrap();
        assert_eq!(whole.samples, 1);
        assert_eq!(
            whole.warnings,
            ["r/x-host/telemetry.jsonl: read error, rows after it are missing: EIO"]
        );
        assert_eq!(
            r.warnings,
            ["r/x/report.json: cannot read (denied); skipped"]
        );
        assert!(r.startup.is_none() && r.lifecycle_log_observations.is_none());
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("sustained"), "{json}");
        assert_eq!(json.matches("warnings").count(), 2, "{json}");
    }
}
