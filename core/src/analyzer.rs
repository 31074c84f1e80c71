//! The one streaming entry point shared by the native `--json` commands and the web page.
//!
//! An [`Analyzer`] takes a file's bytes in chunks of any size ([`Analyzer::write`]) and renders
//! the result JSON at the end ([`Analyzer::end`]). With [`Kind::Auto`] it detects what it reads:
//! the gzip magic (`1f 8b`) means "inflate with the core gzip decoder, then detect again"; a first
//! non-whitespace byte of `{` or `[` means a Chrome / Kineto trace; anything else is a `trace.csv`.
//!
//! ```
//! use flinch_core::analyzer::{Analyzer, AnalyzerOptions};
//! let mut a = Analyzer::new(AnalyzerOptions::default());
//! for chunk in [&b"  "[..], &b"\n"[..]] {
//!     a.write(chunk)?; // an error names the byte offset, and the analyzer stays failed
//! }
//! assert_eq!(a.bytes_in(), 3);
//! let e = a.end().unwrap_err(); // Ok(result JSON) for a trace or trace.csv
//! assert_eq!(e.to_string(), "only whitespace up to byte 3: not a trace or trace.csv");
//! # Ok::<(), flinch_core::analyzer::AnalyzeError>(())
//! ```
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use serde::Deserialize;

use crate::Limits;
use crate::gzip::{GzDecoder, GzError, GzStatus, is_gzip};
use crate::json::{Event, EventScanner, Scan, ScanError};
use crate::summary::{
    DEFAULT_TOP_OPS, EventReplay, IntervalSpill, TraceSummary, TraceSummaryResult,
};
use crate::window::{
    PowerSource, RecordingAnalysis, SelectionError, WindowAnalyzer, WindowOptions, WindowSelect,
};

/// What the input is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Detect from the first bytes (gzip magic, then `{`/`[` for a trace, else trace.csv).
    #[default]
    Auto,
    /// A Chrome / Kineto trace (`.json`, or `.json.gz` when gzip is detected).
    Trace,
    /// A `trace.csv` written by `flinch-trace record` or the reference recorder.
    Csv,
}

impl Kind {
    /// Parses `auto`, `trace` or `csv`.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "auto" | "" => Some(Kind::Auto),
            "trace" | "json" => Some(Kind::Trace),
            "csv" => Some(Kind::Csv),
            _ => None,
        }
    }
}

/// Which memory bounds to use: see [`Limits::EXACT`], [`Limits::NATIVE`], [`Limits::PAGE`] and
/// [`Limits::BOUNDED`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitsPreset {
    /// [`Limits::EXACT`]: exact results, memory grows with the number of distinct ops/values.
    #[default]
    Exact,
    /// [`Limits::BOUNDED`]: memory bounded whatever the input; approximations are stated.
    Bounded,
    /// [`Limits::NATIVE`]: the native CLI's budget; exact for inputs that fit in it.
    Native,
    /// [`Limits::PAGE`]: the web page's budget (the native one with room for more durations
    /// and intervals, within 256 MiB of WebAssembly memory).
    Page,
}

/// How to analyze: built by the native commands from their flags, and by the page from a JSON
/// object with the same field names (see [`AnalyzerOptions::from_json`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalyzerOptions {
    /// What the input is (`auto`, `trace`, `csv`).
    pub kind: Kind,
    /// Memory bounds preset.
    pub limits: LimitsPreset,
    /// Limits given as such (native callers), used instead of the preset's.
    #[serde(skip)]
    pub custom_limits: Option<Limits>,
    /// The `source` string written into the result (native: the path as given; page: the file name).
    pub source: String,
    /// trace.csv only: label of the start mark of the window (with `end`).
    pub start: Option<String>,
    /// trace.csv only: label of the end mark of the window (with `start`).
    pub end: Option<String>,
    /// Traces only: how many (category, name) ops to list (absent: 40, the reference's).
    pub top: Option<usize>,
    /// trace.csv only: use the k-th mark of each label (file order); 0 or absent means 1.
    pub occurrence: u32,
    /// trace.csv only: analyze only this `gpu_index`.
    pub gpu: Option<i64>,
    /// trace.csv only: also analyze every span when a window is selected (always done without one).
    pub spans: bool,
    /// trace.csv only: power intervals longer than this are skipped, ms (absent: 5000).
    pub max_gap_ms: Option<u64>,
    /// trace.csv only: which NVML reading `gpu_power_W` holds (`instant`, `average`, `unknown`).
    pub power_source: PowerSource,
    /// Traces only: add the mergeable section (`"mergeable"`, docs/merge.md).
    pub mergeable: bool,
}

impl AnalyzerOptions {
    /// Parses options from JSON such as `{"kind":"auto","limits":"bounded","source":"t.csv"}`.
    ///
    /// # Errors
    /// Unknown fields or values, as [`AnalyzeError::Options`].
    pub fn from_json(text: &str) -> Result<AnalyzerOptions, AnalyzeError> {
        serde_json::from_str(text)
            .map_err(|e| AnalyzeError::Options(OptionsError::Json(Arc::new(e))))
    }

    /// The trace.csv analysis options these options stand for. This is the one mapping used by
    /// both `flinch-trace analyze --json` and the page: without `start`/`end`, the
    /// recording-level analysis (every span, marks, plot series of up to 2000 points per GPU).
    ///
    /// # Errors
    /// Only one of `start`/`end`.
    pub fn window_options(&self) -> Result<WindowOptions, AnalyzeError> {
        let select = match (&self.start, &self.end) {
            (Some(start), Some(end)) => Some(WindowSelect {
                start: start.clone(),
                end: end.clone(),
                occurrence: self.occurrence.max(1),
            }),
            (None, None) => None,
            _ => return Err(AnalyzeError::Options(OptionsError::UnpairedMark)),
        };
        let recording_level = select.is_none();
        let defaults = WindowOptions::default();
        Ok(WindowOptions {
            limits: self.limits(),
            select,
            gpu: self.gpu,
            spans: self.spans || recording_level,
            series_points: if recording_level { 2000 } else { 0 },
            max_gap_ns: self.max_gap_ms.map_or(defaults.max_gap_ns, |ms| {
                (ms.min(i64::MAX as u64 / 1_000_000) * 1_000_000) as i64
            }),
            power_source: self.power_source,
            ..defaults
        })
    }

    /// The [`Limits`]: `custom_limits` when given, else the chosen preset's.
    pub fn limits(&self) -> Limits {
        if let Some(limits) = self.custom_limits {
            return limits;
        }
        match self.limits {
            LimitsPreset::Exact => Limits::EXACT,
            LimitsPreset::Bounded => Limits::BOUNDED,
            LimitsPreset::Native => Limits::NATIVE,
            LimitsPreset::Page => Limits::PAGE,
        }
    }
}

/// Why [`AnalyzerOptions`] were refused.
#[derive(Clone, Debug)]
pub enum OptionsError {
    /// The JSON does not describe options: an unknown field or value, or a wrong type.
    Json(Arc<serde_json::Error>),
    /// Only one of `start` / `end` was given.
    UnpairedMark,
}

impl PartialEq for OptionsError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OptionsError::Json(a), OptionsError::Json(b)) => {
                (a.line(), a.column(), a.classify()) == (b.line(), b.column(), b.classify())
            }
            (OptionsError::UnpairedMark, OptionsError::UnpairedMark) => true,
            _ => false,
        }
    }
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::Json(e) => e.fmt(f),
            OptionsError::UnpairedMark => f.write_str("start and end mark labels go together"),
        }
    }
}

impl core::error::Error for OptionsError {
    #[cfg(feature = "std")]
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            OptionsError::Json(e) => Some(&**e),
            OptionsError::UnpairedMark => None,
        }
    }
}

/// Why an analysis failed. Every input error carries the byte offset where it was found.
///
/// A trace.csv whose selected marks are missing is not an error here: the analysis is made,
/// and [`Analysis::selection_error`] says what is wrong with the selection.
#[derive(Clone, Debug, PartialEq)]
pub enum AnalyzeError {
    /// The options could not be used.
    Options(OptionsError),
    /// The input held no data at all.
    Empty,
    /// Only whitespace in the first bytes: nothing to detect the kind from.
    NoContent {
        /// Bytes of (decoded) whitespace read.
        at_byte: u64,
    },
    /// The gzip layer failed (offsets are in the compressed file).
    Gzip(GzError),
    /// The trace JSON is malformed outside any event (offsets in the decoded bytes).
    Scan {
        /// The scanner's error.
        error: ScanError,
        /// Whether the input was gzip, so the offset counts decompressed bytes.
        decompressed: bool,
    },
    /// The gzip input was cut, and the input is not a trace (a trace is summarized from what
    /// was read instead).
    CutInput(GzError),
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeError::Options(e) => write!(f, "bad analyzer options: {e}"),
            AnalyzeError::Empty => f.write_str("empty input: no bytes to analyze"),
            AnalyzeError::NoContent { at_byte } => {
                write!(
                    f,
                    "only whitespace up to byte {at_byte}: not a trace or trace.csv"
                )
            }
            AnalyzeError::Gzip(e) => e.fmt(f),
            AnalyzeError::CutInput(e) => e.fmt(f),
            AnalyzeError::Scan {
                error,
                decompressed,
            } => {
                error.fmt(f)?;
                if *decompressed {
                    f.write_str(" of the decompressed data")?;
                }
                Ok(())
            }
        }
    }
}

impl core::error::Error for AnalyzeError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            AnalyzeError::Options(e) => Some(e),
            AnalyzeError::Gzip(e) | AnalyzeError::CutInput(e) => Some(e),
            AnalyzeError::Scan { error, .. } => Some(error),
            AnalyzeError::Empty | AnalyzeError::NoContent { .. } => None,
        }
    }
}

impl From<GzError> for AnalyzeError {
    fn from(e: GzError) -> Self {
        AnalyzeError::Gzip(e)
    }
}

/// Longest run of leading whitespace looked through to detect the kind.
const MAX_LEADING_WHITESPACE: u64 = 1 << 16;

/// Decoded bytes handed from the gzip layer to the analysis per step.
const GZ_OUT_BYTES: usize = 64 * 1024;

/// The streaming analyzer. Feed chunks with [`write`](Analyzer::write), then call
/// [`end`](Analyzer::end) once; after an error, every later call returns the same error.
pub struct Analyzer {
    options: AnalyzerOptions,
    bytes_in: u64,
    failed: Option<AnalyzeError>,
    /// The gzip input was cut (a [`GzError::Truncated`]).
    cut_gzip: Option<GzError>,
    /// The caller inflates gzip itself and feeds decoded bytes ([`Analyzer::with_decoded_input`]).
    decoded_gzip: bool,
    /// A warning from the gzip layer for the result (trailing garbage ignored).
    gzip_warning: Option<String>,
    container: Container,
    content: Content,
    /// For a trace: what [`Analyzer::set_trace_io`] gave, until the summary takes it.
    trace_io: Option<TraceIo>,
}

/// A spill and a replay for the trace summary (see [`Analyzer::set_trace_io`]).
struct TraceIo {
    spill: Box<dyn IntervalSpill>,
    replay: Box<dyn EventReplay>,
}

/// The file layer: plain, or gzip decoded by the core decoder.
enum Container {
    /// No byte seen yet, or only a first `1f` (kept here) that may start the gzip magic.
    Sniffing {
        first: Option<u8>,
    },
    Plain,
    Gzip {
        /// Boxed: the decoder holds its CRC state (32 KiB in wasm) inline.
        decoder: Box<GzDecoder>,
        out: Vec<u8>,
    },
}

/// The content layer, fed with plain (decoded) bytes.
enum Content {
    /// Kind not known yet: the leading whitespace seen so far (at most
    /// `MAX_LEADING_WHITESPACE` bytes), replayed to the analysis once the kind is known.
    Detecting { whitespace: Vec<u8> },
    /// A trace.csv.
    Csv(Box<WindowAnalyzer>),
    /// A Chrome / Kineto trace.
    Trace(Box<TraceEngine>),
}

/// The trace scanner and the summary it feeds; also the join's first pass rides on it
/// (`join::session`), so that both read one scan.
pub(crate) struct TraceEngine {
    scanner: EventScanner,
    summary: TraceSummary,
}

impl TraceEngine {
    pub(crate) fn new(options: &AnalyzerOptions) -> TraceEngine {
        let limits = options.limits();
        let mut summary = TraceSummary::new(limits);
        summary.set_mergeable(options.mergeable);
        TraceEngine {
            scanner: EventScanner::new(limits),
            summary,
        }
    }

    /// Scans decoded bytes: each event goes to the summary, then to `also` with the offset just
    /// past it (decoded bytes). `decompressed`: the file was gzip (error offsets then count
    /// decompressed bytes).
    #[inline]
    pub(crate) fn write(
        &mut self,
        chunk: &[u8],
        decompressed: bool,
        mut also: impl FnMut(&Event<'_>, u64),
    ) -> Result<(), AnalyzeError> {
        let mut pos = 0;
        loop {
            let (what, nin) =
                self.scanner
                    .scan(&chunk[pos..])
                    .map_err(|error| AnalyzeError::Scan {
                        error,
                        decompressed,
                    })?;
            pos += nin;
            match what {
                Scan::Event => {
                    let e = self.scanner.event();
                    self.summary.add(&e);
                    also(&e, self.scanner.bytes_consumed());
                }
                Scan::NeedsInput => return Ok(()),
            }
        }
    }

    /// The summary at the end of the input, with `baseTimeNanoseconds` as the scanner read it.
    /// `cut_gzip`: the gzip input ended inside a member; `gzip_warning`: the gzip layer's.
    pub(crate) fn finish(
        mut self,
        options: &AnalyzerOptions,
        cut_gzip: Option<GzError>,
        gzip_warning: Option<String>,
    ) -> (TraceSummaryResult, crate::json::BaseTime) {
        let end = self.scanner.finish();
        let warnings = *self.scanner.warnings();
        let top = options.top.unwrap_or(DEFAULT_TOP_OPS);
        let mut result = self.summary.finish(&options.source, &end, &warnings, top);
        if let Some(e) = cut_gzip {
            result.truncated = true;
            result
                .warnings
                .insert(0, alloc::format!("{e}: summarized from what was read"));
        }
        result.warnings.extend(gzip_warning);
        (result, self.scanner.base_time())
    }
}

impl Analyzer {
    /// An analyzer with the given options. Allocates its bounded buffers once the kind is known.
    pub fn new(options: AnalyzerOptions) -> Analyzer {
        Analyzer {
            options,
            bytes_in: 0,
            failed: None,
            cut_gzip: None,
            decoded_gzip: false,
            gzip_warning: None,
            container: Container::Sniffing { first: None },
            content: Content::Detecting {
                whitespace: Vec::new(),
            },
            trace_io: None,
        }
    }

    /// For a trace: the busy unions' spill and a way to read the input again, so that the
    /// summary stays exact past its limits (see [`TraceSummary::set_spill`] and
    /// [`TraceSummary::set_replay`]). Call before the first write.
    pub fn set_trace_io(&mut self, spill: Box<dyn IntervalSpill>, replay: Box<dyn EventReplay>) {
        self.trace_io = Some(TraceIo { spill, replay });
    }

    /// The options this analyzer was built with.
    pub fn options(&self) -> &AnalyzerOptions {
        &self.options
    }

    /// Input bytes taken so far (for progress).
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Takes the next chunk of the input.
    ///
    /// # Errors
    /// Malformed input, with its byte offset. The analyzer then stays failed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), AnalyzeError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.bytes_in += chunk.len() as u64;
        let result = self.write_inner(chunk);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), AnalyzeError> {
        if let Container::Sniffing { first } = &mut self.container {
            let Some(&b) = chunk.first() else {
                return Ok(());
            };
            match *first {
                None if b == 0x1f && chunk.len() == 1 => {
                    *first = Some(b);
                    return Ok(());
                }
                None => self.container = container_for(&[b, chunk.get(1).copied().unwrap_or(0)]),
                Some(f) => {
                    self.container = container_for(&[f, b]);
                    // Replay the held-back first byte.
                    self.feed(&[f])?;
                }
            }
        }
        self.feed(chunk)
    }

    /// Passes file bytes through the container layer to the content layer.
    fn feed(&mut self, mut input: &[u8]) -> Result<(), AnalyzeError> {
        match &mut self.container {
            Container::Sniffing { .. } => unreachable!("the container is known before feeding"),
            Container::Plain => {
                self.content
                    .write(input, &self.options, self.decoded_gzip, &mut self.trace_io)
            }
            Container::Gzip { decoder, out } => loop {
                let (status, nin, nout) = decoder.decode(input, out)?;
                self.content
                    .write(&out[..nout], &self.options, true, &mut self.trace_io)?;
                input = &input[nin..];
                if status != GzStatus::OutputFull {
                    return Ok(());
                }
            },
        }
    }

    /// An analyzer for callers that inflate gzip themselves (native's threaded input) and feed
    /// the decoded bytes: no gzip detection; `gzip` says whether the file was gzip, so that
    /// error offsets are named as offsets in the decompressed data, as [`Analyzer::new`] does.
    pub fn with_decoded_input(options: AnalyzerOptions, gzip: bool) -> Analyzer {
        let mut a = Analyzer::new(options);
        a.container = Container::Plain;
        a.decoded_gzip = gzip;
        a
    }

    /// For callers that inflate by themselves: the compressed stream was cut, `error` being the
    /// decoder's [`GzError::Truncated`] (from [`Inflater::end`]). A trace is then summarized from
    /// what was read, with the same warning as a cut `.gz` fed to [`write`](Analyzer::write);
    /// a trace.csv fails with [`AnalyzeError::CutInput`].
    pub fn note_cut_gzip(&mut self, error: GzError) {
        self.cut_gzip = Some(error);
    }

    /// For callers that inflate by themselves: a warning of the gzip layer
    /// ([`Inflater::warning`]), listed in the result's warnings.
    pub fn note_gzip_warning(&mut self, message: &str) {
        self.gzip_warning = Some(message.into());
    }

    /// Ends the input and renders the result JSON: what `--json` prints and the page shows.
    /// A trace.csv whose selected marks are missing still gives its JSON (its `selection` says
    /// which marks were found); use [`finish`](Analyzer::finish) and
    /// [`Analysis::selection_error`] to tell.
    ///
    /// # Errors
    /// Input that ended where it cannot (for example inside a gzip member of a trace.csv), or an
    /// earlier error.
    pub fn end(self) -> Result<String, AnalyzeError> {
        Ok(self.finish()?.to_json())
    }

    /// Ends the input and returns the result as a value (for native presentation: tables).
    ///
    /// # Errors
    /// As [`end`](Analyzer::end).
    pub fn finish(mut self) -> Result<Analysis, AnalyzeError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match &self.container {
            // With a kind given (`analyze --csv`), an empty file is an empty input of that kind.
            Container::Sniffing { first: None } if self.options.kind == Kind::Auto => {
                return Err(AnalyzeError::Empty);
            }
            Container::Sniffing { first: None } => {}
            Container::Sniffing { first: Some(f) } => {
                let f = *f;
                self.container = Container::Plain;
                self.feed(&[f])?;
            }
            Container::Plain => {}
            Container::Gzip { decoder, .. } => {
                if let Some(at) = decoder.trailing_garbage_at() {
                    self.gzip_warning = Some(trailing_garbage_warning(at));
                }
                if let Err(e) = decoder.finish() {
                    if !e.is_truncated() || !matches!(self.content, Content::Trace(_)) {
                        return Err(e.into());
                    }
                    self.cut_gzip = Some(e);
                }
            }
        }
        if !matches!(self.content, Content::Trace(_))
            && let Some(e) = self.cut_gzip
        {
            return Err(AnalyzeError::CutInput(e));
        }
        self.content
            .end(&self.options, self.cut_gzip, self.gzip_warning)
    }
}

/// The warning for trailing garbage at byte `at` of a gzip file.
pub fn trailing_garbage_warning(at: u64) -> String {
    alloc::format!(
        "trailing garbage ignored: bytes from {at} on do not start a gzip member (the data before them was read, as gzip -d does)"
    )
}

/// The gzip layer alone, for a caller that inflates in one thread and analyzes in another (the
/// page's inflate worker; its analysis worker uses [`Analyzer::with_decoded_input`]). The same
/// core [`GzDecoder`] as [`Analyzer::write`] uses, with the same errors.
pub struct Inflater {
    decoder: Box<GzDecoder>,
    consumed: usize,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater::new()
    }
}

impl Inflater {
    /// An inflater expecting the first byte of a gzip stream.
    pub fn new() -> Inflater {
        Inflater {
            decoder: Box::new(GzDecoder::new()),
            consumed: 0,
        }
    }

    /// Inflates from `input` into `output` until `input` is used up or `output` is full; returns
    /// the bytes written. [`consumed`](Inflater::consumed) then says how much of `input` was
    /// taken: call again with the rest (possibly empty, to flush) while output comes out full.
    ///
    /// # Errors
    /// Corrupt gzip data, with its offset in the compressed file.
    pub fn inflate(&mut self, input: &[u8], output: &mut [u8]) -> Result<usize, AnalyzeError> {
        let (_, nin, nout) = self.decoder.decode(input, output)?;
        self.consumed = nin;
        Ok(nout)
    }

    /// Input bytes taken by the last [`inflate`](Inflater::inflate) call.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// After [`end`](Inflater::end): a warning for the result (trailing garbage ignored), to
    /// pass to [`Analyzer::note_gzip_warning`].
    pub fn warning(&self) -> Option<String> {
        self.decoder
            .trailing_garbage_at()
            .map(trailing_garbage_warning)
    }

    /// End of the compressed input: `Ok(None)` when it ended between members, `Ok(Some(cut))`
    /// when it was cut inside one (pass `cut` to [`Analyzer::note_cut_gzip`]).
    ///
    /// # Errors
    /// An earlier decoding error.
    pub fn end(&self) -> Result<Option<GzError>, AnalyzeError> {
        match self.decoder.finish() {
            Ok(()) => Ok(None),
            Err(e) if e.is_truncated() => Ok(Some(e)),
            Err(e) => Err(e.into()),
        }
    }
}

/// A finished analysis.
#[derive(Clone, Debug)]
pub enum Analysis {
    /// A trace summary (docs/cli.md, "trace").
    Trace(Box<TraceSummaryResult>),
    /// A trace.csv analysis (docs/cli.md, "analyze"): recording-level, or with the selected window.
    Recording(Box<RecordingAnalysis>),
}

impl Analysis {
    /// What is wrong with a trace.csv's selected window (its marks missing or out of order),
    /// if anything. The analysis itself is complete either way.
    pub fn selection_error(&self) -> Option<SelectionError> {
        match self {
            Analysis::Recording(r) => r.selection.as_ref().and_then(|s| s.error()),
            Analysis::Trace(_) => None,
        }
    }

    /// The JSON rendering (2-space indented, the same bytes on every platform).
    pub fn to_json(&self) -> String {
        match self {
            Analysis::Trace(r) => r.to_json(),
            Analysis::Recording(r) => r.to_json(),
        }
    }
}

/// The container layer for a file whose first two bytes are `magic`.
fn container_for(magic: &[u8; 2]) -> Container {
    if is_gzip(magic) {
        Container::Gzip {
            decoder: Box::new(GzDecoder::new()),
            out: vec![0; GZ_OUT_BYTES],
        }
    } else {
        Container::Plain
    }
}

impl Content {
    fn write(
        &mut self,
        chunk: &[u8],
        options: &AnalyzerOptions,
        decompressed: bool,
        io: &mut Option<TraceIo>,
    ) -> Result<(), AnalyzeError> {
        match self {
            Content::Detecting { whitespace } => {
                let start = match options.kind {
                    Kind::Auto => chunk.iter().position(|b| !b.is_ascii_whitespace()),
                    Kind::Trace | Kind::Csv => (!chunk.is_empty()).then_some(0),
                };
                let Some(i) = start else {
                    if whitespace.len() + chunk.len() > MAX_LEADING_WHITESPACE as usize {
                        return Err(AnalyzeError::NoContent {
                            at_byte: (whitespace.len() + chunk.len()) as u64,
                        });
                    }
                    whitespace.extend_from_slice(chunk);
                    return Ok(());
                };
                let kind = match options.kind {
                    Kind::Auto if matches!(chunk[i], b'{' | b'[') => Kind::Trace,
                    Kind::Auto => Kind::Csv,
                    k => k,
                };
                let leading = core::mem::take(whitespace);
                *self = Content::start(kind, options)?;
                if let (Content::Trace(t), Some(io)) = (&mut *self, io.take()) {
                    t.summary.set_spill(io.spill);
                    t.summary.set_replay(io.replay);
                }
                self.write(&leading, options, decompressed, io)?;
                self.write(chunk, options, decompressed, io)
            }
            Content::Csv(w) => {
                w.write(chunk);
                Ok(())
            }
            Content::Trace(t) => t.write(chunk, decompressed, |_, _| {}),
        }
    }

    /// The analysis for `kind`.
    fn start(kind: Kind, options: &AnalyzerOptions) -> Result<Content, AnalyzeError> {
        match kind {
            Kind::Csv => Ok(Content::Csv(Box::new(WindowAnalyzer::new(
                options.window_options()?,
            )))),
            Kind::Trace | Kind::Auto => Ok(Content::Trace(Box::new(TraceEngine::new(options)))),
        }
    }

    /// Ends the analysis. `cut_gzip`: the gzip input ended inside a member (traces only).
    fn end(
        self,
        options: &AnalyzerOptions,
        cut_gzip: Option<GzError>,
        gzip_warning: Option<String>,
    ) -> Result<Analysis, AnalyzeError> {
        match self {
            Content::Detecting { whitespace } if options.kind == Kind::Auto => {
                Err(AnalyzeError::NoContent {
                    at_byte: whitespace.len() as u64,
                })
            }
            Content::Detecting { .. } => {
                Content::start(options.kind, options)?.end(options, cut_gzip, gzip_warning)
            }
            Content::Trace(t) => Ok(Analysis::Trace(Box::new(
                t.finish(options, cut_gzip, gzip_warning).0,
            ))),
            Content::Csv(w) => {
                let mut r = w.end();
                r.warnings.extend(gzip_warning);
                Ok(Analysis::Recording(Box::new(r)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn run(options: AnalyzerOptions, chunks: &[&[u8]]) -> Result<String, AnalyzeError> {
        let mut a = Analyzer::new(options);
        for c in chunks {
            a.write(c)?;
        }
        a.end()
    }

    #[test]
    fn options_from_json() {
        let o = AnalyzerOptions::from_json(
            r#"{"kind":"csv","limits":"bounded","source":"t.csv","start":"a","end":"b"}"#,
        )
        .unwrap();
        assert_eq!(o.kind, Kind::Csv);
        assert_eq!(o.limits(), Limits::BOUNDED);
        assert_eq!(o.source, "t.csv");
        assert_eq!(
            (o.start.as_deref(), o.end.as_deref()),
            (Some("a"), Some("b"))
        );
        assert_eq!(
            AnalyzerOptions::from_json("{}").unwrap(),
            AnalyzerOptions::default()
        );
        let e = AnalyzerOptions::from_json(r#"{"kind":"pdf"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("bad analyzer options: unknown variant `pdf`"),
            "{e}"
        );
        assert!(AnalyzerOptions::from_json(r#"{"colour":1}"#).is_err());
    }

    #[test]
    fn empty_and_whitespace_inputs() {
        assert_eq!(
            run(AnalyzerOptions::default(), &[]),
            Err(AnalyzeError::Empty)
        );
        for_each_split(b" \n\t \r\n", 8, 1, |chunks| {
            assert_eq!(
                run(AnalyzerOptions::default(), chunks),
                Err(AnalyzeError::NoContent { at_byte: 6 })
            );
        });
        let ws = alloc::vec![b' '; MAX_LEADING_WHITESPACE as usize + 1];
        assert_eq!(
            run(AnalyzerOptions::default(), &[&ws]),
            Err(AnalyzeError::NoContent {
                at_byte: ws.len() as u64
            })
        );
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gzip_layer_is_transparent() {
        // Whitespace inside gzip: the content layer sees the decoded bytes, in any split.
        let gz = gzip(b" \n \n");
        for_each_split(&gz, 16, 2, |chunks| {
            assert_eq!(
                run(AnalyzerOptions::default(), chunks),
                Err(AnalyzeError::NoContent { at_byte: 4 })
            );
        });
        // A lone first byte 0x1f that is not gzip is content, not lost.
        let o = AnalyzerOptions::default();
        assert_eq!(run(o.clone(), &[b"\x1f"]), Ok(csv_oracle(b"\x1f", &o)));
        assert_eq!(
            run(o.clone(), &[b"\x1f", b"x"]),
            Ok(csv_oracle(b"\x1fx", &o))
        );
    }

    /// Trailing garbage after the last gzip member: the data is analyzed as without it, and the
    /// result's warnings say so with the offset (trace and trace.csv; whole and decoded input).
    #[test]
    fn trailing_gzip_garbage_keeps_the_data_with_a_warning() {
        let trace = br#"{"traceEvents":[{"ph":"X","name":"k","cat":"kernel","ts":1,"dur":5,"pid":1,"tid":1}]}"#;
        for data in [&trace[..], PAUSE_CSV] {
            let gz = gzip(data);
            let bad = [&gz[..], b"garbage\n\x00"].concat();
            let o = AnalyzerOptions::default();
            let want = run(o.clone(), &[&gz]).unwrap();
            let warning = trailing_garbage_warning(gz.len() as u64);
            assert!(!want.contains("trailing garbage"));
            for_each_split(&bad, 4, 3, |chunks| {
                let got = run(o.clone(), chunks).unwrap();
                assert!(got.contains(&warning), "{got}");
                let v: serde_json::Value = serde_json::from_str(&got).unwrap();
                let mut w: serde_json::Value = serde_json::from_str(&want).unwrap();
                w["warnings"]
                    .as_array_mut()
                    .unwrap()
                    .push(warning.clone().into());
                assert_eq!(v, w);
            });
            // The page's split: an Inflater, then an analyzer fed decoded bytes.
            let mut inf = Inflater::new();
            let mut a = Analyzer::with_decoded_input(o.clone(), true);
            let mut out = alloc::vec![0u8; 1000];
            let mut input = &bad[..];
            loop {
                let n = inf.inflate(input, &mut out).unwrap();
                a.write(&out[..n]).unwrap();
                input = &input[inf.consumed()..];
                if input.is_empty() && n < out.len() {
                    break;
                }
            }
            assert_eq!(inf.end(), Ok(None));
            a.note_gzip_warning(&inf.warning().unwrap());
            assert!(a.end().unwrap().contains(&warning));
        }
    }

    /// The oracle: the trace.csv analysis fed the whole file directly.
    fn csv_oracle(data: &[u8], options: &AnalyzerOptions) -> String {
        let mut w = WindowAnalyzer::new(options.window_options().unwrap());
        w.write(data);
        w.end().to_json()
    }

    const PAUSE_CSV: &[u8] = include_bytes!("../../tests/analyze/pause.csv");
    const MULTI_GPU_CSV: &[u8] = include_bytes!("../../tests/analyze/multi_gpu.csv");

    #[test]
    fn csv_plain_and_gzip_in_any_split_equal_the_direct_analysis() {
        let recording = AnalyzerOptions::default();
        let window = AnalyzerOptions {
            start: Some("pause_start".into()),
            end: Some("pause_end".into()),
            limits: LimitsPreset::Bounded,
            ..AnalyzerOptions::default()
        };
        for (data, options) in [
            (PAUSE_CSV, &recording),
            (PAUSE_CSV, &window),
            (MULTI_GPU_CSV, &recording),
        ] {
            let want = csv_oracle(data, options);
            assert!(want.contains("\"marks\""), "{want}");
            let gz = gzip(data);
            for input in [data, &gz[..]] {
                for_each_split(input, 4, 5, |chunks| {
                    assert_eq!(run(options.clone(), chunks).as_ref(), Ok(&want));
                });
            }
        }
        // Leading whitespace reaches the CSV reader too.
        let mut padded = b"\n\n".to_vec();
        padded.extend_from_slice(PAUSE_CSV);
        assert_eq!(
            run(recording.clone(), &[&padded]),
            Ok(csv_oracle(&padded, &recording))
        );
        // An explicit kind skips detection.
        let csv = AnalyzerOptions {
            kind: Kind::Csv,
            ..AnalyzerOptions::default()
        };
        assert_eq!(run(csv.clone(), &[b"  "]), Ok(csv_oracle(b"  ", &csv)));
    }

    /// The oracle for traces: the scanner and summary fed the whole (decoded) document directly.
    fn trace_oracle(doc: &[u8], options: &AnalyzerOptions) -> String {
        let limits = options.limits();
        let mut scanner = EventScanner::new(limits);
        let mut summary = TraceSummary::new(limits);
        let mut pos = 0;
        loop {
            let (what, nin) = scanner.scan(&doc[pos..]).unwrap();
            pos += nin;
            match what {
                Scan::Event => summary.add(&scanner.event()),
                Scan::NeedsInput => break,
            }
        }
        let end = scanner.finish();
        let warnings = *scanner.warnings();
        let top = options.top.unwrap_or(DEFAULT_TOP_OPS);
        summary
            .finish(&options.source, &end, &warnings, top)
            .to_json()
    }

    const FLOW_JSON: &[u8] = include_bytes!("../../tests/traces/perfetto/flow_events_json_v1.json");
    const SPEEDSCOPE_PARTIAL: &[u8] =
        include_bytes!("../../tests/traces/speedscope/simple-partial.json");
    const TRITON_GZ: &[u8] =
        include_bytes!("../../tests/traces/HolisticTraceAnalysis/triton_example.json.gz");

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(gz)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn traces_plain_and_gzip_in_any_split_equal_the_direct_summary() {
        let exact = AnalyzerOptions {
            source: "t.json".into(),
            ..AnalyzerOptions::default()
        };
        let bounded = AnalyzerOptions {
            limits: LimitsPreset::Bounded,
            top: Some(3),
            ..exact.clone()
        };
        let triton = gunzip(TRITON_GZ);
        for doc in [FLOW_JSON, SPEEDSCOPE_PARTIAL, &triton[..]] {
            for options in [&exact, &bounded] {
                let want = trace_oracle(doc, options);
                assert!(want.contains("\"largest_ops_by_duration_sum\""), "{want}");
                let gz = gzip(doc);
                for input in [doc, &gz[..]] {
                    for_each_split(input, 3, 6, |chunks| {
                        assert_eq!(run(options.clone(), chunks).as_ref(), Ok(&want));
                    });
                }
            }
        }
        // The real file as it is on disk (gzip from another encoder).
        assert_eq!(
            run(exact.clone(), &[TRITON_GZ]),
            Ok(trace_oracle(&triton, &exact))
        );
        // Kind given: a bare array is a trace without detection; so is leading whitespace.
        let trace = AnalyzerOptions {
            kind: Kind::Trace,
            ..exact.clone()
        };
        assert_eq!(run(trace, &[b" \n[]"]), Ok(trace_oracle(b" \n[]", &exact)));
    }

    #[test]
    fn a_cut_gzip_trace_is_summarized_from_what_was_read() {
        let triton = gunzip(TRITON_GZ);
        let gz = gzip(&triton);
        let cut = &gz[..gz.len() * 2 / 3];
        let options = AnalyzerOptions::default();
        let got = run(options.clone(), &[cut]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert_eq!(v["truncated"], true);
        let first = v["warnings"][0].as_str().unwrap();
        assert_eq!(
            first,
            alloc::format!(
                "truncated gzip member at byte {}: summarized from what was read",
                cut.len()
            )
        );
        assert!(v["totals"]["events"].as_u64().unwrap() > 0);
        // A caller that inflates by itself and reports the cut gets the same bytes.
        let mut dec = crate::gzip::GzDecoder::new();
        let mut out = vec![0u8; 1 << 20];
        let (_, _, nout) = dec.decode(cut, &mut out).unwrap();
        let mut a = Analyzer::with_decoded_input(options.clone(), true);
        a.write(&out[..nout]).unwrap();
        a.note_cut_gzip(dec.finish().unwrap_err());
        assert_eq!(a.end(), Ok(got));
        // A cut .gz of a trace.csv is an error: there is no partial CSV result to trust.
        let csv_gz = gzip(PAUSE_CSV);
        let e = run(options, &[&csv_gz[..csv_gz.len() - 4]]).unwrap_err();
        assert!(
            e.to_string().starts_with("truncated gzip member at byte"),
            "{e}"
        );
    }

    #[test]
    fn inflater_then_decoded_analyzer_equals_the_one_thread_analyzer() {
        let triton = gunzip(TRITON_GZ);
        let gz = gzip(&triton);
        let options = AnalyzerOptions::default();
        for input in [&gz[..], &gz[..gz.len() * 3 / 4]] {
            let want = run(options.clone(), &[input]);
            for_each_split(input, 3, 9, |chunks| {
                let mut inf = Inflater::new();
                let mut a = Analyzer::with_decoded_input(options.clone(), true);
                let mut out = [0u8; 1000];
                for chunk in chunks {
                    let mut rest = *chunk;
                    loop {
                        let n = inf.inflate(rest, &mut out).unwrap();
                        rest = &rest[inf.consumed()..];
                        a.write(&out[..n]).unwrap();
                        if n < out.len() && rest.is_empty() {
                            break;
                        }
                    }
                }
                if let Some(cut) = inf.end().unwrap() {
                    a.note_cut_gzip(cut);
                }
                assert_eq!(a.end(), want);
            });
        }
    }

    #[test]
    fn trace_scan_errors_name_the_offset() {
        let options = AnalyzerOptions::default();
        let bad = b"{\"traceEvents\": [{\"ph\":\"X\"}] ] }";
        let plain = run(options.clone(), &[bad]).unwrap_err();
        assert!(
            matches!(
                plain,
                AnalyzeError::Scan {
                    decompressed: false,
                    ..
                }
            ),
            "{plain:?}"
        );
        let msg = plain.to_string();
        assert!(msg.contains("at byte"), "{msg}");
        let gz = run(options, &[&gzip(bad)]).unwrap_err();
        assert_eq!(
            gz.to_string(),
            alloc::format!("{msg} of the decompressed data")
        );
    }

    #[test]
    fn a_missing_selection_is_a_complete_result_that_says_so() {
        let options = AnalyzerOptions {
            start: Some("begin".into()),
            end: Some("nope".into()),
            ..AnalyzerOptions::default()
        };
        let mut a = Analyzer::new(options.clone());
        a.write(PAUSE_CSV).unwrap();
        let analysis = a.finish().unwrap();
        let Some(SelectionError::Missing {
            start_t_mono_ns: Some(_),
            end_t_mono_ns: None,
        }) = analysis.selection_error()
        else {
            panic!("{:?}", analysis.selection_error());
        };
        let message = analysis.selection_error().unwrap().to_string();
        assert!(message.starts_with("Missing MARK(s). start="), "{message}");
        assert!(message.ends_with(" end=None"), "{message}");
        assert_eq!(analysis.to_json(), csv_oracle(PAUSE_CSV, &options));
        assert_eq!(
            run(options.clone(), &[PAUSE_CSV]),
            Ok(csv_oracle(PAUSE_CSV, &options))
        );
        let half = AnalyzerOptions {
            start: Some("a".into()),
            ..AnalyzerOptions::default()
        };
        assert_eq!(
            run(half, &[PAUSE_CSV]),
            Err(AnalyzeError::Options(OptionsError::UnpairedMark))
        );
        let e = AnalyzerOptions::from_json(r#"{"power_source":"mean"}"#).unwrap_err();
        assert!(
            matches!(e, AnalyzeError::Options(OptionsError::Json(_))),
            "{e:?}"
        );
        assert!(e.to_string().contains("unknown variant `mean`"), "{e}");
        assert_eq!(
            AnalyzerOptions::from_json(r#"{"power_source":"instant"}"#)
                .unwrap()
                .power_source,
            PowerSource::Instant
        );
    }

    #[test]
    fn errors_name_their_typed_cause() {
        use core::error::Error;
        let e = AnalyzerOptions::from_json(r#"{"kind":"pdf"}"#).unwrap_err();
        let source = e.source().expect("options error as the cause");
        assert!(
            source.to_string().starts_with("unknown variant `pdf`"),
            "{source}"
        );
        let cut = GzError::Truncated { offset: 7 };
        let e = AnalyzeError::CutInput(cut);
        assert_eq!(e.source().unwrap().to_string(), cut.to_string());
        assert!(AnalyzeError::Empty.source().is_none());
    }

    #[test]
    fn gzip_errors_carry_offsets() {
        let gz = gzip(&[b' '; 1000]);
        let cut = &gz[..gz.len() - 3];
        for_each_split(cut, 8, 3, |chunks| {
            let e = run(AnalyzerOptions::default(), chunks).unwrap_err();
            assert_eq!(
                e.to_string(),
                alloc::format!("truncated gzip member at byte {}", cut.len())
            );
        });
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 8] ^= 1; // CRC32
        let e = run(AnalyzerOptions::default(), &[&bad]).unwrap_err();
        assert_eq!(
            e.to_string(),
            alloc::format!("crc32 mismatch in gzip member ending at byte {n}")
        );
    }

    #[test]
    fn failed_analyzer_stays_failed() {
        let mut a = Analyzer::new(AnalyzerOptions::default());
        // A gzip header, then a deflate block of the reserved type 3.
        let e = a
            .write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff")
            .unwrap_err();
        assert!(
            e.to_string().starts_with("corrupt deflate data at byte "),
            "{e}"
        );
        assert_eq!(a.write(b"more"), Err(e.clone()));
        assert_eq!(a.bytes_in(), 11, "bytes after the failure are not taken");
        assert_eq!(a.end(), Err(e));
    }
}
