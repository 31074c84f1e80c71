//! The `analyze` job from the file system: the trace.csv opened once ([`InputFile`]) and read in
//! every pass the job asks for ([`flinch_core::window::AnalyzeJob`], [`Reread`]), split and
//! parsed on a second thread when there is a second CPU. The CLI (`flinch-trace analyze`) and
//! the Python wheel both call it; what is printed, and how, stays theirs.
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use flinch_core::Limits;
use flinch_core::analyzer::{AnalyzerOptions, Kind};
use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::job::Job;
use flinch_core::window::{
    AnalyzeJob, Analyzed, FIRST_PASS_HOLD, PowerSource, RecordingAnalysis, Reread, RowBatch,
    WindowOptions,
};
use serde::Serialize;

use crate::input::{InputFile, Passes};

/// Power intervals longer than this are skipped from the edge energy, when not told otherwise.
pub const DEFAULT_MAX_GAP_MS: u64 = 5000;

/// What to analyze, and how (the options of `flinch-trace analyze`).
#[derive(Clone, Debug)]
pub struct AnalyzeRequest {
    /// The trace.csv.
    pub csv: PathBuf,
    /// Label of the start mark of the window (with `end`).
    pub start: Option<String>,
    /// Label of the end mark of the window (with `start`).
    pub end: Option<String>,
    /// Use the k-th mark of each label (file order), from 1.
    pub occurrence: u32,
    /// Analyze every span (always done without a window).
    pub spans: bool,
    /// Only this `gpu_index`.
    pub gpu: Option<i64>,
    /// Power intervals longer than this are skipped from the edge energy, ms.
    pub max_gap_ms: u64,
    /// Which NVML reading `gpu_power_W` holds; `None`: as the `<csv>.meta.json` sidecar says,
    /// else unknown.
    pub power_source: Option<PowerSource>,
    /// Marks and finished spans the first pass holds; past that many they are read again in
    /// further passes, written out as they are decided ([`FIRST_PASS_HOLD`]).
    pub first_pass_hold: usize,
}

impl AnalyzeRequest {
    /// The recording-level analysis of `csv`, every option at its default.
    pub fn new(csv: PathBuf) -> AnalyzeRequest {
        AnalyzeRequest {
            csv,
            start: None,
            end: None,
            occurrence: 1,
            spans: false,
            gpu: None,
            max_gap_ms: DEFAULT_MAX_GAP_MS,
            power_source: None,
            first_pass_hold: FIRST_PASS_HOLD,
        }
    }
}

/// Which rendering the analysis is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The whole result as JSON (`--json`, Python): every figure, and plot series at the
    /// recording level.
    Json,
    /// The text lines: the reference's three lines need only its own figures, and the spans
    /// lines no plot; the file is read again only for many spans.
    Text,
}

/// Both `start` and `end`, or neither with `form` JSON or with `spans`.
///
/// # Errors
/// The usage message.
pub fn check_marks(req: &AnalyzeRequest, form: Form) -> Result<(), String> {
    match (&req.start, &req.end) {
        (Some(_), Some(_)) => Ok(()),
        (None, None) if form == Form::Json || req.spans => Ok(()),
        _ => Err(
            "flinch-trace analyze: --start and --end are both required (or use --json / --spans alone)"
                .into(),
        ),
    }
}

/// The analysis options for `req` rendered as `form`: the mapping the page uses too
/// ([`AnalyzerOptions::window_options`]), so both give the same bytes for the same file and
/// options, with exact limits.
///
/// # Errors
/// The usage message ([`check_marks`], or the core's refusal).
pub fn window_options(req: &AnalyzeRequest, form: Form) -> Result<WindowOptions, String> {
    check_marks(req, form)?;
    let power_source = req
        .power_source
        .or_else(|| crate::sidecar::power_source(&req.csv))
        .unwrap_or_default();
    let options = AnalyzerOptions {
        kind: Kind::Csv,
        source: req.csv.display().to_string(),
        start: req.start.clone(),
        end: req.end.clone(),
        occurrence: req.occurrence,
        gpu: req.gpu,
        spans: req.spans,
        max_gap_ms: Some(req.max_gap_ms),
        power_source,
        ..AnalyzerOptions::default()
    };
    let opts = options
        .window_options()
        .map_err(|e| format!("flinch-trace analyze: {}: {e}", req.csv.display()))?;
    let opts = WindowOptions {
        limits: Limits::EXACT,
        ..opts
    };
    Ok(match form {
        Form::Json => opts,
        Form::Text => WindowOptions {
            series_points: 0,
            reference_only: !req.spans,
            ..opts
        },
    })
}

/// Shows how far a pass has read (the CLI: a progress line on a terminal).
pub trait PassProgress: Send {
    /// A pass over a file of `total_bytes` (as stored) begins.
    fn begin(&mut self, total_bytes: u64);
    /// `read_bytes` of it were read.
    fn update(&mut self, read_bytes: u64);
    /// The pass ended.
    fn end(&mut self);
}

/// Events per batch handed between the threads (a batch is ~300 KiB; at most six exist: two
/// queued each way, one being filled, one being analyzed).
const BATCH_ROWS: usize = 2048;

/// The trace.csv, opened once, as the analyze job's driver: every pass reads it from its first
/// byte (a `.gz` is inflated again).
pub struct CsvInput {
    file: InputFile,
    /// Split and parse on a second thread ([`RowBatch`]); else write the bytes.
    two_threads: bool,
    batch_rows: usize,
    progress: Option<Box<dyn PassProgress>>,
}

impl CsvInput {
    /// Opens `req.csv` for the passes `form` may need: the JSON, and the spans lines, may read
    /// it again (many marks or spans), so an input that is not a regular file is then spooled;
    /// the three lines come from the first pass.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(req: &AnalyzeRequest, form: Form) -> Result<CsvInput, String> {
        let passes = if form == Form::Json || req.spans {
            Passes::Several
        } else {
            Passes::One
        };
        let file =
            InputFile::open(&req.csv, passes).map_err(|e| format!("flinch-trace analyze: {e}"))?;
        Ok(CsvInput {
            file,
            two_threads: std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2,
            batch_rows: BATCH_ROWS,
            progress: None,
        })
    }

    /// Shows each pass's progress through `progress`.
    pub fn show_progress(&mut self, progress: Box<dyn PassProgress>) {
        self.progress = Some(progress);
    }

    /// One thread, or two with batches of `batch_rows` events (tests: every batch size gives
    /// the same result).
    pub fn set_threads(&mut self, two_threads: bool, batch_rows: usize) {
        self.two_threads = two_threads;
        self.batch_rows = batch_rows.max(1);
    }

    /// [`Reread::reread`] on this thread: the bytes to the job.
    fn one_thread(
        &mut self,
        job: &mut AnalyzeJob,
        each: &mut dyn FnMut(&mut AnalyzeJob) -> ControlFlow<()>,
    ) -> Result<bool, String> {
        let mut stopped = false;
        let file = &self.file;
        let progress = &mut self.progress;
        let note = read_all(file, progress, |chunk| {
            if let Err(e) = job.write(chunk) {
                return ControlFlow::Break(Err(job_error(file, &e)));
            }
            if each(job).is_break() {
                stopped = true;
                return ControlFlow::Break(Ok(()));
            }
            ControlFlow::Continue(())
        })?;
        if let Some(note) = note {
            job.note_input_warning(&note);
        }
        Ok(stopped)
    }

    /// [`Reread::reread`] on two threads: the CSV split and most parsing on a second one while
    /// the job takes the rows already parsed, in file order.
    fn two_threads(
        &mut self,
        job: &mut AnalyzeJob,
        each: &mut dyn FnMut(&mut AnalyzeJob) -> ControlFlow<()>,
    ) -> Result<bool, String> {
        use std::sync::mpsc::sync_channel;
        let full = !job.reference_only();
        let batch_rows = self.batch_rows;
        let (full_tx, full_rx) = sync_channel::<RowBatch>(2);
        let (empty_tx, empty_rx) = sync_channel::<RowBatch>(2);
        let file = &self.file;
        let progress = &mut self.progress;
        std::thread::scope(|scope| {
            let parser = scope.spawn(move || -> Result<Option<String>, String> {
                let mut reader = TraceCsvReader::new();
                let mut batch = RowBatch::with_capacity(batch_rows);
                // Adds one event; hands the batch over when full. `false` when the job stopped.
                let mut on_event = |reader: &TraceCsvReader, ev: CsvEvent| {
                    batch.push_event(reader, ev, full);
                    if batch.len() < batch_rows {
                        return true;
                    }
                    let mut next = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| RowBatch::with_capacity(batch_rows));
                    next.clear();
                    full_tx.send(std::mem::replace(&mut batch, next)).is_ok()
                };
                let note = read_all(file, progress, |mut chunk| {
                    while !chunk.is_empty() {
                        let (ev, n) = reader.read(chunk);
                        chunk = &chunk[n..];
                        if !on_event(&reader, ev) {
                            return ControlFlow::Break(Ok(()));
                        }
                    }
                    ControlFlow::Continue(())
                })?;
                loop {
                    let (ev, _) = reader.read(&[]);
                    on_event(&reader, ev);
                    if ev == CsvEvent::End {
                        break;
                    }
                }
                let _ = full_tx.send(batch);
                Ok(note)
            });
            // On an error or a stop here the receiver is dropped, so the parser's next send
            // fails and it stops.
            let consumed = (|| -> Result<bool, String> {
                for batch in full_rx {
                    job.push_batch(&batch).map_err(|e| job_error(file, &e))?;
                    // The parser may have stopped already; the batch is then dropped.
                    let _ = empty_tx.try_send(batch);
                    if each(job).is_break() {
                        return Ok(true);
                    }
                }
                Ok(false)
            })();
            let parsed = parser
                .join()
                .map_err(|_| "flinch-trace analyze: the parser thread panicked".to_string())?;
            let stopped = consumed?;
            let note = parsed?;
            if let Some(note) = note {
                job.note_input_warning(&note);
            }
            Ok(stopped)
        })
    }
}

/// One pass over `file`'s bytes into `sink` (until it breaks), with its progress. Returns the
/// input's warning, if any (bytes after the last gzip member, ignored).
fn read_all(
    file: &InputFile,
    progress: &mut Option<Box<dyn PassProgress>>,
    mut sink: impl FnMut(&[u8]) -> ControlFlow<Result<(), String>>,
) -> Result<Option<String>, String> {
    let mut input = file
        .read()
        .map_err(|e| format!("flinch-trace analyze: {e}"))?;
    let read = input.progress();
    if let Some(p) = progress {
        p.begin(read.total_bytes());
    }
    let result = loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => {
                if let ControlFlow::Break(r) = sink(chunk) {
                    break r.map(|()| None);
                }
            }
            Ok(None) => break Ok(input.warning().map(str::to_string)),
            Err(e) => {
                break Err(format!(
                    "flinch-trace analyze: {}: {e}",
                    file.path().display()
                ));
            }
        }
        if let Some(p) = progress {
            p.update(read.bytes_read());
        }
    };
    if let Some(p) = progress {
        p.end();
    }
    result
}

fn job_error(file: &InputFile, e: &dyn std::fmt::Display) -> String {
    format!("flinch-trace analyze: {}: {e}", file.path().display())
}

impl Reread for CsvInput {
    type Error = String;

    fn reread(
        &mut self,
        job: &mut AnalyzeJob,
        each: &mut dyn FnMut(&mut AnalyzeJob) -> ControlFlow<()>,
    ) -> Result<(), String> {
        let stopped = if self.two_threads {
            self.two_threads(job, each)?
        } else {
            self.one_thread(job, each)?
        };
        if !stopped {
            job.end().map_err(|e| job_error(&self.file, &e))?;
        }
        Ok(())
    }
}

/// The first pass of `req` as `form`: the file opened (for the passes the form may need) and
/// analyzed.
///
/// # Errors
/// A usage message, an unreadable file, or `--gpu N` with no sample of GPU N.
pub fn analyze(req: &AnalyzeRequest, form: Form) -> Result<(CsvInput, Analyzed), String> {
    let opts = window_options(req, form)?;
    let input = CsvInput::open(req, form)?;
    first_pass(req, input, opts)
}

/// The first pass of `req` with `opts` over `input`.
///
/// # Errors
/// The file could not be read, or `--gpu N` names no GPU of it.
pub fn first_pass(
    req: &AnalyzeRequest,
    mut input: CsvInput,
    opts: WindowOptions,
) -> Result<(CsvInput, Analyzed), String> {
    let mut job = AnalyzeJob::new(&req.csv.display().to_string(), opts, req.first_pass_hold);
    input.reread(&mut job, &mut |_| ControlFlow::Continue(()))?;
    let analyzed = job.finish().map_err(|e| job_error(&input.file, &e))?;
    check_gpu(req, analyzed.analysis())?;
    Ok((input, analyzed))
}

/// `--gpu N` where no sample has `gpu_index` N: an error naming it (the analysis would be empty).
fn check_gpu(req: &AnalyzeRequest, r: &RecordingAnalysis) -> Result<(), String> {
    match req.gpu {
        // A recording without GPU readings has no GPU at all: its note says so.
        Some(g) if r.gpus.is_empty() && r.rows.samples > 0 && r.gpu_energy_note.is_none() => {
            Err(format!(
                "flinch-trace analyze: --gpu {g}: no SAMPLE row of {} has gpu_index {g} (rows without one count as GPU 0); leave --gpu out to analyze every GPU",
                req.csv.display()
            ))
        }
        _ => Ok(()),
    }
}

/// Writes the JSON of `analyzed` to `out` (pretty, with a trailing newline), reading the file
/// again through `input` for the marks and spans the first pass did not hold.
///
/// # Errors
/// A further pass could not read the file, or `out` could not be written.
pub fn write_json(
    input: &mut CsvInput,
    analyzed: &mut Analyzed,
    out: &mut impl Write,
) -> Result<(), String> {
    let json = analyzed.json(input);
    let mut ser = serde_json::Serializer::pretty(&mut *out);
    if let Err(e) = json.serialize(&mut ser) {
        return Err(json.read_error().unwrap_or_else(|| e.to_string()));
    }
    writeln!(out)
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
}

/// What [`json`] gives.
pub struct JsonOutput {
    /// The JSON text (with its trailing newline).
    pub json: Vec<u8>,
    /// The message of a missing or misplaced mark: the JSON is whole all the same, with its
    /// `selection` (the CLI prints it on stderr and exits with status 1).
    pub selection_error: Option<String>,
}

/// The JSON of `req` into memory, with nothing on stderr but the spooling note of an input that
/// is not a regular file: the Python wheel's `analyze`.
///
/// # Errors
/// A usage message, an unreadable file, `--gpu N` absent.
pub fn json(req: &AnalyzeRequest) -> Result<JsonOutput, String> {
    let (mut input, mut analyzed) = analyze(req, Form::Json)?;
    let selection_error = analyzed.selection_error().map(|e| e.to_string());
    let mut json = Vec::new();
    write_json(&mut input, &mut analyzed, &mut json)?;
    Ok(JsonOutput {
        json,
        selection_error,
    })
}
