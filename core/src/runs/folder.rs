//! The runs-folder job: `summarize` of a whole runs folder as one [`Job`]. It takes the folder's
//! listing (asked for with [`Need::Listing`], or given as a list of paths), picks the files
//! `summarize` reads, asks for them one at a time in the order the reference reads them, and
//! ends with the [`RunsSummary`]. The page (a dropped folder's files) and the std driver (the
//! file system, for the CLI and the Python wheel) both drive it, so which files are read, and in
//! which order, is written here once.
//!
//! Order: each `<name>-host/` run with a `telemetry.jsonl` (sorted): its `report.json`; when the
//! report is an object, `status.json`, `requests.jsonl` and `command.log`; then its
//! `telemetry.jsonl`. Then every trace's diagnostic `report.json` (sorted), then each trace
//! whose report says `completed`. A trace is summarized from its bytes (through the same
//! [`Analyzer`] as the page's trace analysis), or its driver hands the job the summary it made
//! itself ([`RunsFolder::trace_summarized`], the std driver's threads): which traces, and their
//! order, stay the job's.
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::path::PyPath;
use super::traces::{TOP_OPS, TraceEntry, completed, is_trace_folder, is_trace_name, report_path};
use super::warnings::Warnings;
use super::{
    FileRead, MAX_LINE_BYTES, MAX_WHOLE_FILE_BYTES, RunPaths, RunSummarizer, RunsSummary,
    TOO_LARGE, host_run_name,
};
use crate::Exactness;
use crate::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use crate::job::{Job, Need};
use crate::summary::TraceSummaryResult;
use crate::telemetry::ValueBudget;

/// How a file missing from the folder is described where the native command prints the
/// operating system's text (`requests.jsonl` of a run with a report), when the driver cannot
/// open paths the listing does not hold (the page): Linux's, so that the page and native on
/// Linux give the same bytes.
pub const NOT_FOUND: &str = "No such file or directory (os error 2)";

/// What the runs-folder job is asked to do, beside the folder.
#[derive(Clone, Copy, Debug)]
pub struct RunsOptions {
    /// Leave the traces out (`trace_analysis: "deferred"`).
    pub skip_traces: bool,
    /// Longest JSONL or `command.log` line read, in bytes; a longer one is skipped and counted.
    pub max_line_bytes: usize,
}

impl Default for RunsOptions {
    fn default() -> Self {
        RunsOptions {
            skip_traces: false,
            max_line_bytes: MAX_LINE_BYTES,
        }
    }
}

/// Why a call to the runs-folder job was refused: the job did not ask for it. Malformed input is
/// never an error of the job: it becomes warnings in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsFolderError {
    /// The call (`write`, `seek`, `listing`, `end`, `trace_summarized`) was not asked for by
    /// [`Job::need`] (this job never asks for byte ranges).
    NotAsked(&'static str),
    /// [`Job::finish`] before [`Need::Done`].
    NotDone,
}

impl core::fmt::Display for RunsFolderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RunsFolderError::NotAsked(call) => {
                write!(f, "runs folder: {call} was not asked for")
            }
            RunsFolderError::NotDone => f.write_str("runs folder: not every file was read"),
        }
    }
}

/// A trace's summary made by the driver, for [`RunsFolder::trace_summarized`].
#[derive(Debug)]
pub enum TraceOutcome {
    /// The summary (made with [`TOP_OPS`] ops, `source` as the job names the trace).
    Summary(Box<TraceSummaryResult>),
    /// The trace could not be summarized: why.
    Failed(String),
    /// The summarizer failed in a way that is a bug (a panic caught by the driver).
    Internal,
}

/// Which file of a run is being read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum HostFile {
    Report,
    Status,
    Requests,
    Log,
    Telemetry,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Listing,
    Host(usize, HostFile),
    TraceReport(usize),
    /// The `k`th trace to summarize (an index into `to_summarize`).
    Trace(usize),
    Done,
}

/// How reading the current file failed.
#[derive(Debug)]
enum Failure {
    Open(String),
    Read(String),
}

/// The runs-folder job (see the module's text). Drive it through [`Job`]; a file that could not
/// be opened is reported with [`open_error`](Self::open_error) (else, as a read error).
pub struct RunsFolder {
    runs: PyPath,
    runs_text: String,
    options: RunsOptions,
    value_budget: Box<dyn Fn() -> ValueBudget>,
    /// Whether the driver can open paths the listing lacks, to say itself why they cannot be read.
    opens_unlisted: bool,
    /// Every file of the folder, sorted (to answer "is this a file?").
    files: Vec<PyPath>,
    /// Run names with a `<name>-host/telemetry.jsonl`, in sorted order.
    hosts: Vec<String>,
    /// Every trace file, sorted, also when the traces are skipped (they are inputs still).
    traces: Vec<PyPath>,
    /// The traces whose diagnostic run completed, in order (indices into `traces`).
    to_summarize: Vec<usize>,
    /// Each trace's entry once known.
    entries: Vec<Option<TraceEntry>>,
    summary: RunsSummary,
    stage: Stage,
    /// The current stage's file, as [`Need::File`] names it.
    current: String,
    run: Option<RunSummarizer>,
    /// The current whole-read file's bytes (reports, `status.json`).
    whole: Vec<u8>,
    /// The current whole-read file is past [`MAX_WHOLE_FILE_BYTES`]: its bytes are dropped.
    whole_too_large: bool,
    failure: Option<Failure>,
    trace: Option<Box<Analyzer>>,
    trace_error: Option<String>,
}

impl RunsFolder {
    /// The job for the folder named `runs` (as `--runs` names it): it asks for its listing.
    pub fn new(runs: &str, options: RunsOptions) -> Self {
        RunsFolder {
            runs: PyPath::new(runs),
            runs_text: runs.to_owned(),
            options,
            value_budget: Box::new(ValueBudget::in_memory),
            opens_unlisted: false,
            files: Vec::new(),
            hosts: Vec::new(),
            traces: Vec::new(),
            to_summarize: Vec::new(),
            entries: Vec::new(),
            summary: RunsSummary::new(options.skip_traces),
            stage: Stage::Listing,
            current: String::new(),
            run: None,
            whole: Vec::new(),
            whole_too_large: false,
            failure: None,
            trace: None,
            trace_error: None,
        }
    }

    /// The job for the folder `runs` holding the files at `paths` (each starting with `runs`;
    /// others are ignored): the listing is given, and the first file is asked for at once.
    pub fn with_paths(runs: &str, paths: &[String], options: RunsOptions) -> Self {
        let mut job = RunsFolder::new(runs, options);
        job.take_listing(&mut paths.iter().map(String::as_str));
        job
    }

    /// Where each run's series keep their values: `make` gives one budget per run (the default,
    /// [`ValueBudget::in_memory`], moves a series past its share to the quantile sketch, said in
    /// the output; with a spill every figure stays exact). Call before the listing.
    pub fn set_value_budget(&mut self, make: Box<dyn Fn() -> ValueBudget>) {
        self.value_budget = make;
    }

    /// The driver opens any path, also one the listing lacks, and says through
    /// [`open_error`](Self::open_error) why it cannot (the file system's own words); then
    /// `requests.jsonl` and `command.log` are asked for whether listed or not. Without it (the
    /// page) an unlisted one is missing, described as [`NOT_FOUND`]. Call before the listing.
    pub fn set_driver_opens_unlisted(&mut self, opens: bool) {
        self.opens_unlisted = opens;
    }

    /// Whether the listing must hold the files under `folder` (a folder inside the runs folder,
    /// `through_link`: reached through a symbolic link). The runs folder's own entries, and what
    /// each top-level folder holds, are listed (runs, runs' reports, trace folders); below
    /// that only a trace folder's `traces/`, and under it every real folder: links to folders
    /// are not followed there, as in Python's `**`.
    pub fn lists_folder(&self, folder: &PyPath, through_link: bool) -> bool {
        let depth = self.runs.parts().len();
        let parts = folder.parts();
        if parts.len() < depth || parts[..depth] != self.runs.parts()[..] {
            return false;
        }
        match &parts[depth..] {
            [] | [_] => true,
            [top, traces, rest @ ..] => {
                is_trace_folder(top) && traces == "traces" && (rest.is_empty() || !through_link)
            }
        }
    }

    /// Every file the summary reads or may read, once the listing is in: the five files of each
    /// run (listed or not) that has a `<name>-host/` folder holding files, its telemetry yet to
    /// come or not, and every trace (also when skipped) with its diagnostic `report.json`.
    pub fn inputs(&self) -> Vec<PyPath> {
        let depth = self.runs.parts().len();
        let mut names: Vec<&str> = self
            .files
            .iter()
            .filter(|p| p.parts().len() > depth + 1)
            .filter_map(|p| host_run_name(&p.parts()[depth]))
            .collect();
        names.dedup();
        let mut out = Vec::new();
        for name in names {
            let p = RunPaths::new(&self.runs, name);
            out.extend([p.telemetry, p.report, p.status, p.requests, p.log]);
        }
        for trace in &self.traces {
            out.push(trace.clone());
            out.push(report_path(&self.runs, trace));
        }
        out
    }

    /// The traces still to be summarized, in order, once the job has come to them (asking for
    /// the first with [`Need::File`]); none before. A driver with a faster source than the
    /// bytes summarizes them and hands each summary, in this order, to
    /// [`trace_summarized`](Self::trace_summarized).
    pub fn traces_to_summarize(&self) -> impl Iterator<Item = &PyPath> + '_ {
        let from = match self.stage {
            Stage::Trace(k) => k,
            _ => self.to_summarize.len(),
        };
        self.to_summarize[from..].iter().map(|&i| &self.traces[i])
    }

    /// The summary of the trace asked for now, made by the driver, in place of its bytes.
    ///
    /// # Errors
    /// The job is not asking for a trace.
    pub fn trace_summarized(&mut self, outcome: TraceOutcome) -> Result<(), RunsFolderError> {
        let Stage::Trace(k) = self.stage else {
            return Err(RunsFolderError::NotAsked("trace_summarized"));
        };
        let i = self.to_summarize[k];
        let source = self.traces[i].to_py_string();
        let entry = match outcome {
            TraceOutcome::Summary(r) => TraceEntry::summary(*r),
            TraceOutcome::Failed(error) => TraceEntry::Error { source, error },
            TraceOutcome::Internal => TraceEntry::internal_error(source),
        };
        self.trace = None;
        self.trace_error = None;
        self.failure = None;
        self.entries[i] = Some(entry);
        self.stage = self.after_trace(k);
        self.advance();
        Ok(())
    }

    /// The current file could not be opened (`message`: why); call [`Job::end`] next.
    pub fn open_error(&mut self, message: &str) {
        if self.reading() && self.failure.is_none() {
            self.failure = Some(Failure::Open(message.to_owned()));
        }
    }

    /// Whether more bytes of the current file are of use: not once a file read whole is past
    /// [`MAX_WHOLE_FILE_BYTES`] (the driver may stop reading it and [`Job::end`] it).
    pub fn wants_more_bytes(&self) -> bool {
        self.reading() && !self.whole_too_large
    }

    /// The summary so far (complete once [`Job::need`] is [`Need::Done`]).
    pub fn summary(&self) -> &RunsSummary {
        &self.summary
    }

    fn reading(&self) -> bool {
        !matches!(self.stage, Stage::Listing | Stage::Done)
    }

    fn take_listing(&mut self, paths: &mut dyn Iterator<Item = &str>) {
        let runs = &self.runs;
        let depth = runs.parts().len();
        let mut files: Vec<PyPath> = paths
            .map(PyPath::new)
            .filter(|p| p.parts().len() > depth && p.parts()[..depth] == runs.parts()[..])
            .collect();
        files.sort();
        files.dedup();
        let mut hosts: Vec<String> = files
            .iter()
            .filter(|p| p.parts().len() == depth + 2 && p.parts()[depth + 1] == "telemetry.jsonl")
            .filter_map(|p| host_run_name(&p.parts()[depth]).map(ToOwned::to_owned))
            .collect();
        // Sorted as their `-host` folders are (names that differ before "-host" sort alike).
        hosts.sort_by(|a, b| {
            runs.join(&alloc::format!("{a}-host"))
                .cmp(&runs.join(&alloc::format!("{b}-host")))
        });
        self.traces = files
            .iter()
            .filter(|p| {
                let parts = p.parts();
                parts.len() > depth + 2
                    && is_trace_folder(&parts[depth])
                    && parts[depth + 1] == "traces"
                    && parts.last().is_some_and(|n| is_trace_name(n))
            })
            .cloned()
            .collect();
        if !self.options.skip_traces {
            self.entries = alloc::vec![None; self.traces.len()];
        }
        self.files = files;
        self.hosts = hosts;
        self.stage = self.after_hosts(0);
        self.advance();
    }

    fn has(&self, path: &PyPath) -> bool {
        self.files.binary_search(path).is_ok()
    }

    /// The first stage from run `i` on.
    fn after_hosts(&self, i: usize) -> Stage {
        if i < self.hosts.len() {
            Stage::Host(i, HostFile::Report)
        } else {
            self.after_trace_reports(0)
        }
    }

    fn after_trace_reports(&self, i: usize) -> Stage {
        if i < self.entries.len() {
            Stage::TraceReport(i)
        } else {
            self.after_trace(usize::MAX)
        }
    }

    /// The stage after the `k`th trace to summarize (`usize::MAX`: before the first).
    fn after_trace(&self, k: usize) -> Stage {
        let next = k.wrapping_add(1);
        if next < self.to_summarize.len() {
            Stage::Trace(next)
        } else {
            Stage::Done
        }
    }

    /// The path of the current stage's file, and whether it is asked for when unlisted.
    fn stage_path(&mut self) -> Option<(PyPath, bool)> {
        Some(match self.stage {
            Stage::Host(i, file) => {
                let (runs, name) = (&self.runs, &self.hosts[i]);
                let (budget, max_line_bytes) = (&self.value_budget, self.options.max_line_bytes);
                let run = self.run.get_or_insert_with(|| {
                    let mut run = RunSummarizer::with_max_line_bytes(runs, name, max_line_bytes);
                    run.set_value_budget(budget());
                    run
                });
                let paths = run.paths();
                match file {
                    HostFile::Report => (paths.report.clone(), false),
                    HostFile::Status => (paths.status.clone(), false),
                    HostFile::Requests => (paths.requests.clone(), self.opens_unlisted),
                    HostFile::Log => (paths.log.clone(), self.opens_unlisted),
                    HostFile::Telemetry => (paths.telemetry.clone(), false),
                }
            }
            Stage::TraceReport(i) => (report_path(&self.runs, &self.traces[i]), false),
            Stage::Trace(k) => (self.traces[self.to_summarize[k]].clone(), false),
            Stage::Listing | Stage::Done => return None,
        })
    }

    /// Moves past the files the folder does not hold, to the next file to ask for (or to the
    /// end), with the per-file state reset.
    fn advance(&mut self) {
        while let Some((path, unlisted_too)) = self.stage_path() {
            if unlisted_too || self.has(&path) {
                self.current = path.to_py_string();
                self.whole.clear();
                self.whole_too_large = false;
                self.failure = None;
                self.trace = None;
                self.trace_error = None;
                return;
            }
            self.missing();
        }
        if self.stage == Stage::Done {
            self.current.clear();
            self.summary.traces = self.entries.drain(..).flatten().collect();
        }
    }

    fn with_run(&mut self, f: impl FnOnce(&mut RunSummarizer)) {
        if let Some(r) = self.run.as_mut() {
            f(r);
        }
    }

    fn new_trace_analyzer(&self) -> Box<Analyzer> {
        Box::new(Analyzer::new(AnalyzerOptions {
            kind: Kind::Trace,
            limits: Exactness::Page,
            source: self.current.clone(),
            top: Some(TOP_OPS),
            ..AnalyzerOptions::default()
        }))
    }

    /// The end of the current file: what it gave goes to its run or trace.
    fn end_file(&mut self) {
        let failure = self.failure.take();
        let whole = core::mem::take(&mut self.whole);
        let too_large = core::mem::take(&mut self.whole_too_large);
        let (error, opened) = match &failure {
            Some(Failure::Open(e)) => (Some(e.as_str()), false),
            Some(Failure::Read(e)) => (Some(e.as_str()), true),
            None => (None, true),
        };
        let file = match error {
            Some(e) => FileRead::Unreadable(e),
            None if too_large => FileRead::Unreadable(TOO_LARGE),
            None => FileRead::Bytes(&whole),
        };
        match self.stage {
            Stage::Host(i, HostFile::Report) => {
                self.with_run(|r| r.report(file));
                let details = self.run.as_ref().is_some_and(RunSummarizer::wants_details);
                let next = if details {
                    HostFile::Status
                } else {
                    HostFile::Telemetry
                };
                self.stage = Stage::Host(i, next);
            }
            Stage::Host(i, HostFile::Status) => {
                self.with_run(|r| r.status(file));
                self.stage = Stage::Host(i, HostFile::Requests);
            }
            Stage::Host(i, HostFile::Requests) => {
                match (error, opened) {
                    (Some(e), false) => self.with_run(|r| r.requests_unreadable(e)),
                    _ => self.with_run(|r| r.requests_end(error)),
                }
                self.stage = Stage::Host(i, HostFile::Log);
            }
            Stage::Host(i, HostFile::Log) => {
                // A log that cannot be opened gives empty observations, quietly.
                let read_error = error.filter(|_| opened);
                self.with_run(|r| r.log_end(read_error));
                self.stage = Stage::Host(i, HostFile::Telemetry);
            }
            Stage::Host(i, HostFile::Telemetry) => self.end_run(i, error),
            Stage::TraceReport(i) => {
                let mut w = Warnings::default();
                let shown = report_path(&self.runs, &self.traces[i]).to_py_string();
                if completed(file, &shown, &mut w) {
                    self.to_summarize.push(i);
                } else {
                    let source = self.traces[i].to_py_string();
                    self.entries[i] = Some(TraceEntry::not_analyzed(source, &w));
                }
                self.stage = self.after_trace_reports(i + 1);
            }
            Stage::Trace(k) => {
                let i = self.to_summarize[k];
                let source = self.traces[i].to_py_string();
                let failed = self.trace_error.take().or(error.map(ToOwned::to_owned));
                let analyzer = match self.trace.take() {
                    Some(a) => a,
                    None => self.new_trace_analyzer(),
                };
                let entry = match failed {
                    Some(error) => TraceEntry::Error { source, error },
                    None => match analyzer.finish() {
                        Ok(Analysis::Trace(r)) => TraceEntry::summary(*r),
                        // The runs summary asks for no steps.
                        Ok(Analysis::TraceSteps(r)) => TraceEntry::summary(r.0),
                        Ok(Analysis::Recording(_)) => TraceEntry::Error {
                            source,
                            error: "not a trace".to_owned(),
                        },
                        Err(e) => TraceEntry::Error {
                            source,
                            error: e.to_string(),
                        },
                    },
                };
                self.entries[i] = Some(entry);
                self.stage = self.after_trace(k);
            }
            Stage::Listing | Stage::Done => {}
        }
    }

    /// The current stage's file is not in the folder.
    fn missing(&mut self) {
        match self.stage {
            Stage::Host(i, HostFile::Report) => {
                self.with_run(|r| r.report(FileRead::Missing));
                self.stage = Stage::Host(i, HostFile::Telemetry);
            }
            Stage::Host(i, HostFile::Status) => {
                self.with_run(|r| r.status(FileRead::Missing));
                self.stage = Stage::Host(i, HostFile::Requests);
            }
            Stage::Host(i, HostFile::Requests) => {
                self.with_run(|r| r.requests_unreadable(NOT_FOUND));
                self.stage = Stage::Host(i, HostFile::Log);
            }
            Stage::Host(i, HostFile::Log) => {
                self.with_run(|r| r.log_end(None));
                self.stage = Stage::Host(i, HostFile::Telemetry);
            }
            // Listed runs have their telemetry; a trace's own file is listed.
            Stage::Host(i, HostFile::Telemetry) => self.end_run(i, Some(NOT_FOUND)),
            Stage::TraceReport(i) => {
                let source = self.traces[i].to_py_string();
                self.entries[i] = Some(TraceEntry::not_analyzed(source, &Warnings::default()));
                self.stage = self.after_trace_reports(i + 1);
            }
            Stage::Trace(k) => {
                let i = self.to_summarize[k];
                let source = self.traces[i].to_py_string();
                self.entries[i] = Some(TraceEntry::Error {
                    source,
                    error: NOT_FOUND.to_owned(),
                });
                self.stage = self.after_trace(k);
            }
            Stage::Listing | Stage::Done => {}
        }
    }

    fn end_run(&mut self, i: usize, read_error: Option<&str>) {
        if let Some(run) = self.run.take() {
            let record = run.finish(read_error);
            self.summary
                .telemetry
                .0
                .push((self.hosts[i].clone(), record));
        }
        self.stage = self.after_hosts(i + 1);
    }
}

impl Job for RunsFolder {
    type Output = RunsSummary;
    type Error = RunsFolderError;

    fn need(&self) -> Need<'_> {
        match self.stage {
            Stage::Listing => Need::Listing(&self.runs_text),
            Stage::Done => Need::Done,
            _ => Need::File(&self.current),
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), RunsFolderError> {
        match self.stage {
            Stage::Host(_, HostFile::Report | HostFile::Status) | Stage::TraceReport(_) => {
                if self.whole.len() + chunk.len() > MAX_WHOLE_FILE_BYTES {
                    self.whole_too_large = true;
                    self.whole = Vec::new();
                } else if !self.whole_too_large {
                    self.whole.extend_from_slice(chunk)
                }
            }
            Stage::Host(_, HostFile::Requests) => self.with_run(|r| r.requests_push(chunk)),
            Stage::Host(_, HostFile::Log) => self.with_run(|r| r.log_push(chunk)),
            Stage::Host(_, HostFile::Telemetry) => self.with_run(|r| r.telemetry_push(chunk)),
            Stage::Trace(_) => {
                if self.trace_error.is_none() {
                    if self.trace.is_none() {
                        self.trace = Some(self.new_trace_analyzer());
                    }
                    if let Some(a) = self.trace.as_mut()
                        && let Err(e) = a.write(chunk)
                    {
                        self.trace_error = Some(e.to_string());
                    }
                }
            }
            Stage::Listing | Stage::Done => return Err(RunsFolderError::NotAsked("write")),
        }
        Ok(())
    }

    fn seek(&mut self, _offset: u64) -> Result<(), RunsFolderError> {
        Err(RunsFolderError::NotAsked("seek"))
    }

    /// What was written before it counts, as native counts what it read before a read error.
    fn read_error(&mut self, message: &str) {
        if self.reading() && self.failure.is_none() {
            self.failure = Some(Failure::Read(message.to_owned()));
        }
    }

    fn listing(&mut self, paths: &mut dyn Iterator<Item = &str>) -> Result<(), RunsFolderError> {
        if self.stage != Stage::Listing {
            return Err(RunsFolderError::NotAsked("listing"));
        }
        self.take_listing(paths);
        Ok(())
    }

    fn end(&mut self) -> Result<(), RunsFolderError> {
        if !self.reading() {
            return Err(RunsFolderError::NotAsked("end"));
        }
        self.end_file();
        self.advance();
        Ok(())
    }

    fn finish(self) -> Result<RunsSummary, RunsFolderError> {
        match self.stage {
            Stage::Done => Ok(self.summary),
            _ => Err(RunsFolderError::NotDone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use alloc::vec;
    use std::path::{Path, PathBuf};

    fn case_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/summarize/cases")
    }

    fn list(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let rel = alloc::format!("{rel}/{name}");
            if e.file_type().unwrap().is_dir() {
                list(&e.path(), &rel, out);
            } else {
                out.push(rel);
            }
        }
    }

    fn skip(skip_traces: bool) -> RunsOptions {
        RunsOptions {
            skip_traces,
            ..RunsOptions::default()
        }
    }

    /// Writes the file `p` of the cases into `f` in chunks of random sizes.
    fn feed(f: &mut RunsFolder, p: &str, rng: &mut Rng) {
        let bytes = std::fs::read(case_dir().join(p)).unwrap();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (1 + rng.below(64) as usize).min(rest.len());
            f.write(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        f.end().unwrap();
    }

    /// Drives the job over the files on disk, the listing asked for.
    fn summarize(case: &str, skip_traces: bool, rng: &mut Rng) -> (String, Vec<String>) {
        let mut paths = Vec::new();
        list(&case_dir().join(case), case, &mut paths);
        let mut f = RunsFolder::new(case, skip(skip_traces));
        assert_eq!(f.need(), Need::Listing(case));
        f.listing(&mut paths.iter().map(String::as_str)).unwrap();
        let mut asked = Vec::new();
        while let Need::File(p) = f.need() {
            let p = p.to_owned();
            feed(&mut f, &p, rng);
            asked.push(p);
        }
        assert_eq!(f.need(), Need::Done);
        (f.finish().unwrap().to_json().unwrap(), asked)
    }

    /// The job reads what `summarize` reads, in its order: runs (report first, then status,
    /// requests, log when there is a report; telemetry last), then every trace's report, then
    /// the traces whose report says completed.
    #[test]
    fn asks_for_the_files_summarize_reads_in_order() {
        let (json, asked) = summarize("basic", false, &mut Rng(1));
        assert!(json.ends_with("}\n"));
        let first: Vec<&str> = asked.iter().take(5).map(String::as_str).collect();
        assert_eq!(
            first,
            [
                "basic/alpha/report.json",
                "basic/alpha-host/status.json",
                "basic/alpha/requests.jsonl",
                "basic/alpha-host/command.log",
                "basic/alpha-host/telemetry.jsonl"
            ]
        );
        assert!(!asked.iter().any(|p| p.ends_with("notes.txt")));
        let (_, skipped) = summarize("basic", true, &mut Rng(2));
        assert!(!skipped.iter().any(|p| p.contains("-trace/")));
        let (traces, asked) = summarize("traces", false, &mut Rng(3));
        assert!(asked.contains(&"traces/bench-trace/traces/sub/rank1.pt.trace.json.gz".to_owned()));
        let last_report = asked
            .iter()
            .rposition(|p| p.ends_with("report.json"))
            .unwrap();
        let first_trace = asked.iter().position(|p| p.contains("/traces/")).unwrap();
        assert!(last_report < first_trace, "{asked:?}");
        assert!(traces.contains("\"largest_ops_by_duration_sum\""));
        assert!(traces.contains("\"status\": \"not_analyzed\""));
    }

    /// Summaries handed in by the driver take the place of the traces' bytes, in the job's
    /// order, and give the same output as the bytes when they are the same summaries.
    #[test]
    fn a_driver_may_hand_in_the_trace_summaries() {
        let (want, _) = summarize("traces", false, &mut Rng(4));
        let mut paths = Vec::new();
        list(&case_dir().join("traces"), "traces", &mut paths);
        let mut f = RunsFolder::with_paths("traces", &paths, skip(false));
        let mut rng = Rng(5);
        let mut handed = 0;
        while let Need::File(p) = f.need() {
            let todo: Vec<String> = f.traces_to_summarize().map(PyPath::to_py_string).collect();
            if todo.is_empty() {
                let p = p.to_owned();
                feed(&mut f, &p, &mut rng);
                continue;
            }
            assert_eq!(todo[0], p);
            for source in todo {
                let mut a = Analyzer::new(AnalyzerOptions {
                    kind: Kind::Trace,
                    limits: Exactness::Page,
                    source: source.clone(),
                    top: Some(TOP_OPS),
                    ..AnalyzerOptions::default()
                });
                a.write(&std::fs::read(case_dir().join(&source)).unwrap())
                    .unwrap();
                let Ok(Analysis::Trace(r)) = a.finish() else {
                    panic!("{source}")
                };
                f.trace_summarized(TraceOutcome::Summary(r)).unwrap();
                handed += 1;
            }
        }
        assert!(handed >= 2, "{handed}");
        assert_eq!(f.finish().unwrap().to_json().unwrap(), want);
    }

    /// Files outside the folder are ignored; a folder without runs or traces is empty.
    #[test]
    fn foreign_paths_and_empty_folders() {
        let paths = vec!["other/a-host/telemetry.jsonl".to_owned(), "runs".to_owned()];
        let f = RunsFolder::with_paths("runs", &paths, skip(false));
        assert_eq!(f.need(), Need::Done);
        assert_eq!(
            f.summary().message(),
            "Summarized 0 telemetry runs and 0 traces"
        );
    }

    /// Calls the job did not ask for are refused, and leave it as it was.
    #[test]
    fn calls_not_asked_for_are_refused() {
        let mut f = RunsFolder::new("r", skip(false));
        assert_eq!(f.write(b"x"), Err(RunsFolderError::NotAsked("write")));
        assert_eq!(f.end(), Err(RunsFolderError::NotAsked("end")));
        assert_eq!(
            f.trace_summarized(TraceOutcome::Internal),
            Err(RunsFolderError::NotAsked("trace_summarized"))
        );
        assert_eq!(f.seek(0), Err(RunsFolderError::NotAsked("seek")));
        f.listing(&mut ["r/x-host/telemetry.jsonl"].into_iter())
            .unwrap();
        assert_eq!(
            f.listing(&mut core::iter::empty()),
            Err(RunsFolderError::NotAsked("listing"))
        );
        assert_eq!(f.need(), Need::File("r/x-host/telemetry.jsonl"));
        let mut f = RunsFolder::with_paths("r", &["r/x-host/telemetry.jsonl".into()], skip(false));
        f.end().unwrap();
        assert_eq!(f.need(), Need::Done);
        assert_eq!(f.write(b"x"), Err(RunsFolderError::NotAsked("write")));
        assert!(RunsFolder::new("r", skip(false)).finish().is_err());
    }

    /// The inputs: each run's five files, for a `-host` folder holding any file; traces with
    /// their reports also when skipped.
    #[test]
    fn inputs_are_the_files_read_or_to_be_read() {
        let paths = vec![
            "r/a-host/telemetry.jsonl".to_owned(),
            "r/b-host/status.json".to_owned(),
            "r/c-host".to_owned(),
            "r/t-trace/traces/x.json".to_owned(),
        ];
        let f = RunsFolder::with_paths("r", &paths, skip(true));
        let inputs: Vec<String> = f.inputs().iter().map(PyPath::to_py_string).collect();
        assert_eq!(
            inputs,
            [
                "r/a-host/telemetry.jsonl",
                "r/a/report.json",
                "r/a-host/status.json",
                "r/a/requests.jsonl",
                "r/a-host/command.log",
                "r/b-host/telemetry.jsonl",
                "r/b/report.json",
                "r/b-host/status.json",
                "r/b/requests.jsonl",
                "r/b-host/command.log",
                "r/t-trace/traces/x.json",
                "r/t-trace/report.json",
            ]
        );
    }

    /// The listing covers every top-level folder's files, a trace folder's `traces/` and, under
    /// it, real folders only.
    #[test]
    fn lists_the_folders_summarize_looks_into() {
        let f = RunsFolder::new("a/runs", skip(false));
        let lists = |p: &str, link: bool| f.lists_folder(&PyPath::new(p), link);
        assert!(lists("a/runs", false));
        assert!(lists("a/runs/x-host", true));
        assert!(lists("a/runs/x", true));
        assert!(lists("a/runs/x-trace/traces", true));
        assert!(lists("a/runs/x-trace/traces/sub", false));
        assert!(!lists("a/runs/x-trace/traces/sub", true));
        assert!(!lists("a/runs/x-trace/other", false));
        assert!(!lists("a/runs/x/deeper", false));
        assert!(!lists("a/other/x", false));
        assert!(!lists("a", false));
    }

    /// A driver that opens any path says why `requests.jsonl` and `command.log` cannot be
    /// opened: the requests say so, the log quietly gives no observations; a read error part
    /// way is reported for both.
    #[test]
    fn open_errors_and_read_errors_of_a_run() {
        let report = std::fs::read(case_dir().join("basic/alpha/report.json")).unwrap();
        let run = |open: bool| {
            let paths = ["r/x/report.json", "r/x-host/telemetry.jsonl"];
            let mut f = RunsFolder::new("r", skip(false));
            f.set_driver_opens_unlisted(true);
            f.listing(&mut paths.into_iter()).unwrap();
            assert_eq!(f.need(), Need::File("r/x/report.json"));
            f.write(&report).unwrap();
            f.end().unwrap();
            assert_eq!(f.need(), Need::File("r/x/requests.jsonl"));
            for name in ["requests", "log"] {
                if open {
                    f.open_error(&alloc::format!("no {name}"));
                } else {
                    f.read_error(&alloc::format!("bad {name}"));
                }
                f.end().unwrap();
            }
            assert_eq!(f.need(), Need::File("r/x-host/telemetry.jsonl"));
            f.end().unwrap();
            f.finish().unwrap().to_json().unwrap()
        };
        let opened = run(true);
        assert!(
            opened.contains("r/x/requests.jsonl: cannot read (no requests); no request figures"),
            "{opened}"
        );
        assert!(!opened.contains("no log"), "{opened}");
        let read = run(false);
        assert!(
            read.contains(
                "r/x/requests.jsonl: read error, lines after it are missing: bad requests"
            ),
            "{read}"
        );
        assert!(
            read.contains("r/x-host/command.log: read error, lines after it are missing: bad log"),
            "{read}"
        );
    }

    /// The page's form: an unlisted `requests.jsonl` is missing, named as the native command
    /// on Linux names it, and the log is not asked for.
    #[test]
    fn unlisted_run_files_are_missing_without_an_opening_driver() {
        let report = std::fs::read(case_dir().join("basic/alpha/report.json")).unwrap();
        let paths = vec![
            "r/x/report.json".to_owned(),
            "r/x-host/telemetry.jsonl".to_owned(),
        ];
        let mut f = RunsFolder::with_paths("r", &paths, skip(false));
        f.write(&report).unwrap();
        f.end().unwrap();
        assert_eq!(f.need(), Need::File("r/x-host/telemetry.jsonl"));
        f.end().unwrap();
        let json = f.finish().unwrap().to_json().unwrap();
        assert!(
            json.contains(&alloc::format!(
                "r/x/requests.jsonl: cannot read ({NOT_FOUND}); no request figures"
            )),
            "{json}"
        );
    }

    /// A report past the whole-file limit is dropped as it arrives, and no more of it is asked.
    #[test]
    fn a_report_past_the_whole_file_limit_is_dropped_as_it_arrives() {
        let paths = vec![
            "r/x/report.json".to_owned(),
            "r/x-host/telemetry.jsonl".to_owned(),
        ];
        let mut f = RunsFolder::with_paths("r", &paths, skip(false));
        assert_eq!(f.need(), Need::File("r/x/report.json"));
        f.write(b"{\"status\": \"completed\", \"pad\": \"").unwrap();
        let pad = vec![b' '; 1 << 20];
        for _ in 0..MAX_WHOLE_FILE_BYTES >> 20 {
            assert!(f.wants_more_bytes());
            f.write(&pad).unwrap();
            assert!(f.whole.len() <= MAX_WHOLE_FILE_BYTES);
        }
        assert!(!f.wants_more_bytes());
        f.write(b"\"}").unwrap();
        assert_eq!(f.whole.capacity(), 0);
        f.end().unwrap();
        assert_eq!(f.need(), Need::File("r/x-host/telemetry.jsonl"));
        f.write(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n")
            .unwrap();
        f.end().unwrap();
        let json = f.finish().unwrap().to_json().unwrap();
        assert!(
            json.contains(&alloc::format!(
                "r/x/report.json: cannot read ({TOO_LARGE}); skipped"
            )),
            "{json}"
        );
        assert!(!json.contains("startup"), "{json}");
    }

    /// A read error part way through telemetry keeps the rows before it and says so.
    #[test]
    fn read_errors_are_reported() {
        let paths = vec!["r/x-host/telemetry.jsonl".to_owned()];
        let mut f = RunsFolder::with_paths("r", &paths, skip(false));
        assert_eq!(f.need(), Need::File("r/x-host/telemetry.jsonl"));
        f.write(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n{\"un")
            .unwrap();
        f.read_error("NotReadableError");
        f.end().unwrap();
        assert_eq!(f.need(), Need::Done);
        let json = f.finish().unwrap().to_json().unwrap();
        assert!(json.contains("\"samples\": 1,"), "{json}");
        assert!(
            json.contains(
                "r/x-host/telemetry.jsonl: read error, rows after it are missing: NotReadableError"
            ),
            "{json}"
        );
    }

    /// Each run gets its own value budget from the maker, and lines past the line limit are
    /// skipped.
    #[test]
    fn value_budget_per_run_and_line_limit() {
        let made = std::rc::Rc::new(core::cell::Cell::new(0));
        let paths = ["r/x-host/telemetry.jsonl", "r/y-host/telemetry.jsonl"];
        let mut f = RunsFolder::new(
            "r",
            RunsOptions {
                skip_traces: true,
                max_line_bytes: 10,
            },
        );
        let counter = made.clone();
        f.set_value_budget(Box::new(move || {
            counter.set(counter.get() + 1);
            ValueBudget::in_memory()
        }));
        f.listing(&mut paths.into_iter()).unwrap();
        while let Need::File(_) = f.need() {
            f.write(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n")
                .unwrap();
            f.end().unwrap();
        }
        assert_eq!(made.get(), 2);
        let json = f.finish().unwrap().to_json().unwrap();
        assert!(json.contains("line over 10 bytes skipped"), "{json}");
    }
}
