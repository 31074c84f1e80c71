//! A whole runs folder given as a list of file paths, for callers that cannot walk a file system
//! (the page: the files of a dropped folder). It picks the files `summarize` reads, exactly as
//! the native walk does, asks for them one at a time, and summarizes their bytes, traces
//! included (through the same [`Analyzer`] as the page's trace analysis).
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::path::PyPath;
use super::traces::{TOP_OPS, TraceEntry, completed, is_trace_folder, is_trace_name, report_path};
use super::warnings::Warnings;
use super::{FileRead, MAX_WHOLE_FILE_BYTES, RunSummarizer, RunsSummary, TOO_LARGE, host_run_name};
use crate::Exactness;
use crate::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};

/// How a file missing from the folder is described where the native command prints the
/// operating system's text (`requests.jsonl` of a run with a report): Linux's, so that the page
/// and native on Linux give the same bytes.
pub const NOT_FOUND: &str = "No such file or directory (os error 2)";

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
    Host(usize, HostFile),
    TraceReport(usize),
    Trace(usize),
    Done,
}

/// Summarizes a runs folder from its files' paths and bytes. Drive it as:
/// `while let Some(path) = f.next_file() { f.write(..)*; [f.read_error(..)]; f.end_file() }`,
/// then [`finish`](Self::finish).
pub struct RunsFolder {
    runs: PyPath,
    /// Every file of the folder, sorted (to answer "is this a file?").
    files: Vec<PyPath>,
    /// Run names with a `<name>-host/telemetry.jsonl`, in sorted order.
    hosts: Vec<String>,
    traces: Vec<PyPath>,
    summary: RunsSummary,
    stage: Stage,
    run: Option<RunSummarizer>,
    /// The current whole-read file's bytes (reports, `status.json`).
    whole: Vec<u8>,
    /// The current whole-read file is past [`MAX_WHOLE_FILE_BYTES`]: its bytes are dropped.
    whole_too_large: bool,
    read_error: Option<String>,
    trace: Option<Box<Analyzer>>,
    trace_error: Option<String>,
    /// Whether the stage's file was handed out and not yet ended.
    reading: bool,
}

impl RunsFolder {
    /// A folder named `runs` (as `--runs` would name it) holding the files at `paths` (each
    /// starting with `runs`; others are ignored). `skip_traces`: the traces are deferred.
    pub fn new(runs: &str, paths: &[String], skip_traces: bool) -> Self {
        let runs = PyPath::new(runs);
        let depth = runs.parts().len();
        let mut files: Vec<PyPath> = paths
            .iter()
            .map(|p| PyPath::new(p))
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
        let traces = if skip_traces {
            Vec::new()
        } else {
            files
                .iter()
                .filter(|p| {
                    let parts = p.parts();
                    parts.len() > depth + 2
                        && is_trace_folder(&parts[depth])
                        && parts[depth + 1] == "traces"
                        && parts.last().is_some_and(|n| is_trace_name(n))
                })
                .cloned()
                .collect()
        };
        let stage = if !hosts.is_empty() {
            Stage::Host(0, HostFile::Report)
        } else if !traces.is_empty() {
            Stage::TraceReport(0)
        } else {
            Stage::Done
        };
        RunsFolder {
            runs,
            files,
            hosts,
            traces,
            summary: RunsSummary::new(skip_traces),
            stage,
            run: None,
            whole: Vec::new(),
            whole_too_large: false,
            read_error: None,
            trace: None,
            trace_error: None,
            reading: false,
        }
    }

    fn has(&self, path: &PyPath) -> bool {
        self.files.binary_search(path).is_ok()
    }

    /// The path of the current stage's file.
    fn stage_path(&mut self) -> Option<PyPath> {
        Some(match self.stage {
            Stage::Host(i, file) => {
                let run = self
                    .run
                    .get_or_insert_with(|| RunSummarizer::new(&self.runs, &self.hosts[i]));
                let paths = run.paths();
                match file {
                    HostFile::Report => paths.report.clone(),
                    HostFile::Status => paths.status.clone(),
                    HostFile::Requests => paths.requests.clone(),
                    HostFile::Log => paths.log.clone(),
                    HostFile::Telemetry => paths.telemetry.clone(),
                }
            }
            Stage::TraceReport(i) => report_path(&self.runs, &self.traces[i]),
            Stage::Trace(i) => self.traces[i].clone(),
            Stage::Done => return None,
        })
    }

    /// The next file to read (as the folder's paths spell it), or `None` when every file has
    /// been read. Files that are not in the folder are dealt with here, as missing.
    pub fn next_file(&mut self) -> Option<String> {
        if self.reading {
            self.end_file();
        }
        loop {
            let path = self.stage_path()?;
            if self.has(&path) {
                self.reading = true;
                self.whole.clear();
                self.whole_too_large = false;
                self.read_error = None;
                if let Stage::Trace(_) = self.stage {
                    self.trace = Some(Box::new(Analyzer::new(AnalyzerOptions {
                        kind: Kind::Trace,
                        limits: Exactness::Page,
                        source: path.to_py_string(),
                        top: Some(TOP_OPS),
                        ..AnalyzerOptions::default()
                    })));
                    self.trace_error = None;
                }
                return Some(path.to_py_string());
            }
            self.missing();
        }
    }

    /// The next chunk of the current file.
    pub fn write(&mut self, chunk: &[u8]) {
        if !self.reading {
            return;
        }
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
                if let Some(a) = self.trace.as_mut()
                    && self.trace_error.is_none()
                    && let Err(e) = a.write(chunk)
                {
                    self.trace_error = Some(e.to_string());
                }
            }
            Stage::Done => {}
        }
    }

    /// Reading the current file failed (`message`: why); what was written before counts as
    /// native counts what it read before a read error.
    pub fn read_error(&mut self, message: &str) {
        if self.reading && self.read_error.is_none() {
            self.read_error = Some(message.to_owned());
        }
    }

    fn with_run(&mut self, f: impl FnOnce(&mut RunSummarizer)) {
        if let Some(r) = self.run.as_mut() {
            f(r);
        }
    }

    /// The end of the current file.
    pub fn end_file(&mut self) {
        if !self.reading {
            return;
        }
        self.reading = false;
        let error = self.read_error.take();
        let whole = core::mem::take(&mut self.whole);
        let file = match &error {
            Some(e) => FileRead::Unreadable(e),
            None if core::mem::take(&mut self.whole_too_large) => FileRead::Unreadable(TOO_LARGE),
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
                self.with_run(|r| r.requests_end(error.as_deref()));
                self.stage = Stage::Host(i, HostFile::Log);
            }
            Stage::Host(i, HostFile::Log) => {
                self.with_run(|r| r.log_end(error.as_deref()));
                self.stage = Stage::Host(i, HostFile::Telemetry);
            }
            Stage::Host(i, HostFile::Telemetry) => self.end_run(i, error.as_deref()),
            Stage::TraceReport(i) => {
                let mut w = Warnings::default();
                let shown = report_path(&self.runs, &self.traces[i]).to_py_string();
                if completed(file, &shown, &mut w) {
                    self.stage = Stage::Trace(i);
                } else {
                    let source = self.traces[i].to_py_string();
                    self.summary
                        .traces
                        .push(TraceEntry::not_analyzed(source, &w));
                    self.next_trace(i);
                }
            }
            Stage::Trace(i) => {
                let source = self.traces[i].to_py_string();
                let analyzer = self.trace.take();
                let failed = self.trace_error.take().or(error);
                let entry = match (failed, analyzer) {
                    (Some(error), _) => TraceEntry::Error { source, error },
                    (None, None) => TraceEntry::internal_error(source),
                    (None, Some(a)) => match a.finish() {
                        Ok(Analysis::Trace(r)) => TraceEntry::summary(*r),
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
                self.summary.traces.push(entry);
                self.next_trace(i);
            }
            Stage::Done => {}
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
                self.summary
                    .traces
                    .push(TraceEntry::not_analyzed(source, &Warnings::default()));
                self.next_trace(i);
            }
            Stage::Trace(i) => {
                let source = self.traces[i].to_py_string();
                self.summary.traces.push(TraceEntry::Error {
                    source,
                    error: NOT_FOUND.to_owned(),
                });
                self.next_trace(i);
            }
            Stage::Done => {}
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
        self.stage = if i + 1 < self.hosts.len() {
            Stage::Host(i + 1, HostFile::Report)
        } else if !self.traces.is_empty() {
            Stage::TraceReport(0)
        } else {
            Stage::Done
        };
    }

    fn next_trace(&mut self, i: usize) {
        self.stage = if i + 1 < self.traces.len() {
            Stage::TraceReport(i + 1)
        } else {
            Stage::Done
        };
    }

    /// The summary so far (complete once [`next_file`](Self::next_file) gave `None`).
    pub fn summary(&self) -> &RunsSummary {
        &self.summary
    }

    /// The output file's text, as `flinch-trace summarize --runs <runs>` writes it.
    pub fn finish(&self) -> Result<String, serde_json::Error> {
        self.summary.to_json()
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

    /// Drives a folder over the files on disk, in chunks of random sizes.
    fn summarize(case: &str, skip_traces: bool, rng: &mut Rng) -> (String, Vec<String>) {
        let mut paths = Vec::new();
        list(&case_dir().join(case), case, &mut paths);
        let mut f = RunsFolder::new(case, &paths, skip_traces);
        let mut asked = Vec::new();
        while let Some(p) = f.next_file() {
            let bytes = std::fs::read(case_dir().join(&p)).unwrap();
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let n = (1 + rng.below(64) as usize).min(rest.len());
                f.write(&rest[..n]);
                rest = &rest[n..];
            }
            f.end_file();
            asked.push(p);
        }
        (f.finish().unwrap(), asked)
    }

    /// The folder form reads what the native walk reads, in its order: runs (report first,
    /// then status, requests, log when there is a report; telemetry last), then each trace's
    /// report and, when completed, the trace.
    #[test]
    fn asks_for_the_files_native_reads_in_order() {
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
        assert!(traces.contains("\"largest_ops_by_duration_sum\""));
        assert!(traces.contains("\"status\": \"not_analyzed\""));
    }

    /// Files outside the folder are ignored; a folder without runs or traces is empty.
    #[test]
    fn foreign_paths_and_empty_folders() {
        let paths = vec!["other/a-host/telemetry.jsonl".to_owned(), "runs".to_owned()];
        let mut f = RunsFolder::new("runs", &paths, false);
        assert_eq!(f.next_file(), None);
        assert_eq!(
            f.summary().message(),
            "Summarized 0 telemetry runs and 0 traces"
        );
    }

    /// A read error part way through telemetry keeps the rows before it and says so.
    #[test]
    fn a_report_past_the_whole_file_limit_is_dropped_as_it_arrives() {
        let paths = vec![
            "r/x/report.json".to_owned(),
            "r/x-host/telemetry.jsonl".to_owned(),
        ];
        let mut f = RunsFolder::new("r", &paths, false);
        assert_eq!(f.next_file().as_deref(), Some("r/x/report.json"));
        f.write(b"{\"status\": \"completed\", \"pad\": \"");
        let pad = vec![b' '; 1 << 20];
        for _ in 0..MAX_WHOLE_FILE_BYTES >> 20 {
            f.write(&pad);
            assert!(f.whole.len() <= MAX_WHOLE_FILE_BYTES);
        }
        f.write(b"\"}");
        assert_eq!(f.whole.capacity(), 0);
        assert_eq!(f.next_file().as_deref(), Some("r/x-host/telemetry.jsonl"));
        f.write(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n");
        assert_eq!(f.next_file(), None);
        let json = f.finish().unwrap();
        assert!(
            json.contains(&alloc::format!(
                "r/x/report.json: cannot read ({TOO_LARGE}); skipped"
            )),
            "{json}"
        );
        assert!(!json.contains("startup"), "{json}");
    }

    #[test]
    fn read_errors_are_reported() {
        let paths = vec!["r/x-host/telemetry.jsonl".to_owned()];
        let mut f = RunsFolder::new("r", &paths, false);
        assert_eq!(f.next_file().as_deref(), Some("r/x-host/telemetry.jsonl"));
        f.write(b"{\"unix\": 1, \"host_memory\": {\"available\": 1, \"used\": 2}}\n{\"un");
        f.read_error("NotReadableError");
        assert_eq!(f.next_file(), None);
        let json = f.finish().unwrap();
        assert!(json.contains("\"samples\": 1,"), "{json}");
        assert!(
            json.contains(
                "r/x-host/telemetry.jsonl: read error, rows after it are missing: NotReadableError"
            ),
            "{json}"
        );
    }
}
