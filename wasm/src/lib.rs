//! flinch-wasm: the thin wasm-bindgen adapter over [`flinch_core::analyzer`],
//! [`flinch_core::runs`], [`flinch_core::join`] and [`flinch_core::diff`] used by `www/`.
//!
//! Every exported method is a one-liner over the core; the one piece of glue is
//! [`to_js_error`], which turns a core error into a JS `Error` carrying the core's message.
use flinch_core::analyzer::{Analyzer as CoreAnalyzer, AnalyzerOptions, Inflater as CoreInflater};
use flinch_core::diff::{DiffJob, DiffJobOptions};
use flinch_core::gzip::GzError;
use flinch_core::job::{Job, Need};
use flinch_core::join::{NextFile, TraceJoin as CoreTraceJoin};
use flinch_core::runs::{RunsFolder as CoreRunsFolder, RunsOptions};
use flinch_core::window::PowerSource;
use wasm_bindgen::prelude::*;

/// The streaming analyzer, as seen from JavaScript:
/// `new Analyzer(optionsJson)`, `write(chunk)`, `bytesIn()`, `end()`.
#[wasm_bindgen]
pub struct Analyzer {
    inner: Option<CoreAnalyzer>,
    power_counters: bool,
}

#[wasm_bindgen]
impl Analyzer {
    /// Builds an analyzer from JSON options (`{"kind","limits","source","start","end"}`;
    /// see `AnalyzerOptions` in flinch-core).
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> Result<Analyzer, JsError> {
        let options = AnalyzerOptions::from_json(options_json).map_err(to_js_error)?;
        Ok(Analyzer {
            inner: Some(CoreAnalyzer::new(options)),
            power_counters: false,
        })
    }

    /// An analyzer fed bytes that an [`Inflater`] decoded (`gzip`: the file was gzip).
    pub fn decoded(options_json: &str, gzip: bool) -> Result<Analyzer, JsError> {
        let options = AnalyzerOptions::from_json(options_json).map_err(to_js_error)?;
        Ok(Analyzer {
            inner: Some(CoreAnalyzer::with_decoded_input(options, gzip)),
            power_counters: false,
        })
    }

    /// The inflater reported a cut gzip stream: `at_byte` is what `Inflater.end()` returned.
    #[wasm_bindgen(js_name = noteCutGzip)]
    pub fn note_cut_gzip(&mut self, at_byte: f64) -> Result<(), JsError> {
        let offset = at_byte as u64;
        self.core()?.note_cut_gzip(GzError::Truncated { offset });
        Ok(())
    }

    /// A warning of the inflater for the result (the text from `Inflater.warning()`).
    #[wasm_bindgen(js_name = noteGzipWarning)]
    pub fn note_gzip_warning(&mut self, message: &str) -> Result<(), JsError> {
        self.core()?.note_gzip_warning(message);
        Ok(())
    }

    /// Takes the next chunk of the file.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.core()?.write(chunk).map_err(to_js_error)
    }

    /// Input bytes taken so far.
    #[wasm_bindgen(js_name = bytesIn)]
    pub fn bytes_in(&self) -> f64 {
        self.inner.as_ref().map_or(0.0, |a| a.bytes_in() as f64)
    }

    /// Ends the input and returns the result JSON (the same bytes as the native `--json`); a
    /// trace.csv window whose marks are missing throws the reference's message instead.
    pub fn end(&mut self) -> Result<String, JsError> {
        let core = self.inner.take().ok_or_else(ended)?;
        let (analysis, counters) = core.finish_noting_counters().map_err(to_js_error)?;
        self.power_counters = counters;
        match analysis.selection_error() {
            Some(e) => Err(to_js_error(e)),
            None => Ok(analysis.to_json()),
        }
    }

    /// After `end`: whether the trace carries GPU power or utilization counters (the page then
    /// joins it with them: a `TraceJoin` with `trace_alone`).
    #[wasm_bindgen(js_name = powerCounters)]
    pub fn power_counters(&self) -> bool {
        self.power_counters
    }

    fn core(&mut self) -> Result<&mut CoreAnalyzer, JsError> {
        self.inner.as_mut().ok_or_else(ended)
    }
}

/// The gzip layer alone (core `GzDecoder`), for the page's inflate worker:
/// `inflate(input)` writes up to 1 MiB into the output buffer at `outputPtr()` and returns its
/// length; `consumed()` says how much input was taken; `end()` returns null or where the stream was cut.
#[wasm_bindgen]
pub struct Inflater {
    inner: CoreInflater,
    out: Vec<u8>,
}

#[wasm_bindgen]
impl Inflater {
    /// An inflater expecting the first byte of a gzip stream.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Inflater {
        Inflater {
            inner: CoreInflater::new(),
            out: vec![0; 1 << 20],
        }
    }

    /// Inflates from `input`; returns the bytes written to the output buffer.
    pub fn inflate(&mut self, input: &[u8]) -> Result<usize, JsError> {
        self.inner
            .inflate(input, &mut self.out)
            .map_err(to_js_error)
    }

    /// Input bytes taken by the last `inflate`.
    pub fn consumed(&self) -> usize {
        self.inner.consumed()
    }

    /// Where the output buffer is in the wasm memory.
    #[wasm_bindgen(js_name = outputPtr)]
    pub fn output_ptr(&self) -> usize {
        self.out.as_ptr() as usize
    }

    /// Capacity of the output buffer.
    #[wasm_bindgen(js_name = outputCapacity)]
    pub fn output_capacity(&self) -> usize {
        self.out.len()
    }

    /// End of input: null, or the compressed offset where the stream was cut (for
    /// `Analyzer.noteCutGzip`).
    pub fn end(&self) -> Result<Option<f64>, JsError> {
        let cut = self.inner.end().map_err(to_js_error)?;
        Ok(cut.map(|e| e.offset() as f64))
    }

    /// After `end`: null, or a warning for the result (trailing garbage ignored; for
    /// `Analyzer.noteGzipWarning`).
    pub fn warning(&self) -> Option<String> {
        self.inner.warning()
    }
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater::new()
    }
}

/// A runs folder, as `flinch-trace summarize` reads it (the core's runs-folder job): `new
/// RunsFolder(runs, paths, skipTraces)`, then `nextFile()` (a path, or undefined when done),
/// `write(chunk)` for that file's bytes, `readError(message)` if reading it failed, `endFile()`;
/// then `finish()`.
#[wasm_bindgen]
pub struct RunsFolder {
    inner: CoreRunsFolder,
}

#[wasm_bindgen]
impl RunsFolder {
    /// The folder named `runs` holding the files at `paths` (each starting with `runs/`).
    #[wasm_bindgen(constructor)]
    pub fn new(runs: &str, paths: Vec<String>, skip_traces: bool) -> RunsFolder {
        let options = RunsOptions {
            skip_traces,
            ..RunsOptions::default()
        };
        RunsFolder {
            inner: CoreRunsFolder::with_paths(runs, &paths, options),
        }
    }

    /// The next file to read, or undefined when all are read.
    #[wasm_bindgen(js_name = nextFile)]
    pub fn next_file(&self) -> Option<String> {
        match self.inner.need() {
            Need::File(path) => Some(path.to_owned()),
            _ => None,
        }
    }

    /// The next chunk of the current file.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.inner.write(chunk).map_err(to_js_error)
    }

    /// Reading the current file failed.
    #[wasm_bindgen(js_name = readError)]
    pub fn read_error(&mut self, message: &str) {
        self.inner.read_error(message)
    }

    /// The end of the current file.
    #[wasm_bindgen(js_name = endFile)]
    pub fn end_file(&mut self) -> Result<(), JsError> {
        self.inner.end().map_err(to_js_error)
    }

    /// The summary JSON: the bytes `flinch-trace summarize --runs <runs>` writes.
    pub fn finish(&self) -> Result<String, JsError> {
        self.inner.summary().to_json().map_err(to_js_error)
    }

    /// The line `flinch-trace summarize` prints.
    pub fn message(&self) -> String {
        self.inner.summary().message()
    }
}

/// A trace joined with a recording (`flinch-trace trace FILE --telemetry CSV --json`), or with
/// its own power counters (`"trace_alone": true`: `trace FILE --pauses --json`):
/// `new TraceJoin(optionsJson)`, then while `nextFile()` names a file (`"recording"` or
/// `"trace"`, the trace once, or again when the join needs it): `write(chunk)`... `endFile()`
/// (or, where `wantedRanges()` lists byte ranges, `seek(start)` and their bytes only); then
/// `resultJson()` and `timelineJson(buckets)`.
#[wasm_bindgen]
pub struct TraceJoin {
    inner: CoreTraceJoin,
}

#[wasm_bindgen]
impl TraceJoin {
    /// A join with options as JSON (see `TraceJoinOptions` in flinch-core).
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> Result<TraceJoin, JsError> {
        CoreTraceJoin::from_json(options_json)
            .map(|inner| TraceJoin { inner })
            .map_err(to_js_error)
    }

    /// `"recording"`, `"trace"`, or undefined when the result is ready.
    #[wasm_bindgen(js_name = nextFile)]
    pub fn next_file(&self) -> Option<String> {
        self.inner.next_file().map(|f| match f {
            NextFile::Recording => "recording".into(),
            NextFile::Trace => "trace".into(),
        })
    }

    /// The next chunk of the current file.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.inner.write(chunk).map_err(to_js_error)
    }

    /// The recording `File`'s size, before its first chunk: a plain recording's series are then
    /// reserved once, not grown by copying (the result is the same either way).
    #[wasm_bindgen(js_name = recordingSizeHint)]
    pub fn recording_size_hint(&mut self, bytes: f64) {
        self.inner.recording_size_hint(bytes as u64);
    }

    /// Before a read of the trace: undefined to give the whole file, or `[start0, end0, start1,
    /// end1, ...]`, the byte ranges of a plain trace to give instead, each after `seek(start)`.
    #[wasm_bindgen(js_name = wantedRanges)]
    pub fn wanted_ranges(&self) -> Option<Vec<f64>> {
        self.inner
            .wanted_ranges()
            .map(|r| r.iter().flat_map(|&(a, b)| [a as f64, b as f64]).collect())
    }

    /// The next bytes given are those from `offset` on (see `wantedRanges`).
    pub fn seek(&mut self, offset: f64) -> Result<(), JsError> {
        self.inner.seek(offset as u64).map_err(to_js_error)
    }

    /// The end of the current file.
    #[wasm_bindgen(js_name = endFile)]
    pub fn end_file(&mut self) -> Result<(), JsError> {
        self.inner.end_file().map_err(to_js_error)
    }

    /// The result JSON (the same bytes as the native `--json`, without its final newline).
    #[wasm_bindgen(js_name = resultJson)]
    pub fn result_json(&self) -> Option<String> {
        self.inner.result_json().map(String::from)
    }

    /// The timeline to draw, as JSON (`Timeline` in flinch-core).
    #[wasm_bindgen(js_name = timelineJson)]
    pub fn timeline_json(&self, buckets: usize) -> Option<String> {
        self.inner.timeline_json(buckets)
    }
}

/// Two runs compared (`flinch-trace diff A B [--telemetry-a CSV] [--telemetry-b CSV] --json`,
/// the core's diff job): `new Diff(optionsJson)`, then while `nextFile()` names a file (`"a"`,
/// `"b"`, `"a.telemetry"`, `"b.telemetry"`, in the order the job asks): `write(chunk)`...
/// `endFile()`, or, where `wantedRanges()` lists byte ranges of that file, `seek(start)` and
/// their bytes only, then `endFile()`; then `resultJson()`. Bytes are the files' as stored
/// (`.gz` is inflated by the core, told by its magic).
#[wasm_bindgen]
pub struct Diff {
    job: Option<DiffJob>,
    /// The file the job last named: the one its ranges are of.
    file: String,
    json: Option<String>,
}

#[wasm_bindgen]
impl Diff {
    /// A diff with options as JSON (see `DiffJobOptions` in flinch-core).
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> Result<Diff, JsError> {
        let options = DiffJobOptions::from_json(options_json).map_err(to_js_error)?;
        let mut d = Diff {
            job: Some(DiffJob::new(options)),
            file: String::new(),
            json: None,
        };
        d.note_file();
        Ok(d)
    }

    /// The file to read next (from its first byte, or its `wantedRanges()`), or undefined when
    /// the result is ready.
    #[wasm_bindgen(js_name = nextFile)]
    pub fn next_file(&self) -> Option<String> {
        self.job.as_ref().map(|_| self.file.clone())
    }

    /// Before a read: undefined to give the whole file, or `[start0, end0, start1, end1, ...]`,
    /// the byte ranges to give instead, each after `seek(start)`.
    #[wasm_bindgen(js_name = wantedRanges)]
    pub fn wanted_ranges(&self) -> Option<Vec<f64>> {
        match self.job.as_ref()?.need() {
            Need::Ranges(r) => Some(r.iter().flat_map(|&(a, b)| [a as f64, b as f64]).collect()),
            _ => None,
        }
    }

    /// The next bytes given are those from `offset` on (see `wantedRanges`).
    pub fn seek(&mut self, offset: f64) -> Result<(), JsError> {
        self.drive(|job| job.seek(offset as u64))
    }

    /// The next chunk of the current file.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.drive(|job| job.write(chunk))
    }

    /// Reading the current file failed (`message`: why).
    #[wasm_bindgen(js_name = readError)]
    pub fn read_error(&mut self, message: &str) -> Result<(), JsError> {
        self.drive(|job| {
            job.read_error(message);
            Ok(())
        })
    }

    /// The end of the current file.
    #[wasm_bindgen(js_name = endFile)]
    pub fn end_file(&mut self) -> Result<(), JsError> {
        self.drive(|job| job.end())
    }

    /// The result JSON once `nextFile()` is undefined: the bytes `diff --json` prints (without
    /// its final newline).
    #[wasm_bindgen(js_name = resultJson)]
    pub fn result_json(&self) -> Option<String> {
        self.json.clone()
    }

    /// Runs `f` on the job; once the job needs nothing more, its result (or its error).
    fn drive(
        &mut self,
        f: impl FnOnce(&mut DiffJob) -> Result<(), flinch_core::diff::DiffError>,
    ) -> Result<(), JsError> {
        let job = self.job.as_mut().ok_or_else(diff_ended)?;
        let r = f(job);
        if let Err(e) = r {
            self.job = None;
            return Err(to_js_error(e));
        }
        self.note_file();
        if self.job.as_ref().is_some_and(|j| j.need() == Need::Done) {
            let job = self.job.take().ok_or_else(diff_ended)?;
            let result = job.finish().map_err(to_js_error)?;
            self.json = Some(result.to_json().map_err(to_js_error)?);
        }
        Ok(())
    }

    /// Keeps the name of the file the job asks for (its ranges are of that file).
    fn note_file(&mut self) {
        if let Some(Need::File(name)) = self.job.as_ref().map(|j| j.need()) {
            self.file = name.to_owned();
        }
    }
}

fn diff_ended() -> JsError {
    JsError::new("diff already ended")
}

/// The power source a recording's `.meta.json` sidecar names: `"instant"`, `"average"`, or
/// `"unknown"` (no GPU names one, or the text is not a sidecar). The CLI's rule
/// (`flinch_core::sidecar::power_source`); the page passes it as the `power_source` option.
#[wasm_bindgen(js_name = sidecarPowerSource)]
pub fn sidecar_power_source(text: &[u8]) -> String {
    match flinch_core::sidecar::power_source(text).unwrap_or_default() {
        PowerSource::Instant => "instant",
        PowerSource::Average => "average",
        PowerSource::Unknown => "unknown",
    }
    .into()
}

fn ended() -> JsError {
    JsError::new("analyzer already ended")
}

/// The one conversion of core errors into JS errors: the message is the core's Display text.
pub fn to_js_error(e: impl core::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}
