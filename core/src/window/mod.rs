//! Mark windows, spans and the compute-or-waiting verdict over a trace.csv (SPEC §2, §6, §8).
//!
//! [`WindowAnalyzer`] reads a trace.csv in one streaming pass (`write(chunk)` … `end()`), so the
//! same code serves the CLI and the browser. Rows pass through a small bounded reorder buffer
//! (the recorder's threads interleave: a MARK can be written after a SAMPLE with a later
//! timestamp) and leave in time order; a row older than one already released is counted as late
//! and skipped. Windows and spans accumulate as the rows leave, so memory depends on the number
//! of GPUs, marks and spans, never on the number of samples.
//!
//! For each window it computes the reference-exact samples-only figures (the three lines of
//! `analyze_trace.py`, quirks included), edge-interpolated power energy, counter energy (NVML mJ,
//! RAPL µJ with wraparound), time-weighted utilization, sample health and a verdict. The idle
//! floor of each GPU (5th percentile of its power) is known only at the end, so each window keeps
//! a small time-in-power histogram and the power busy share is read from it at the end: one pass,
//! which also works for `write()`/`end()`.
//!
//! [`WindowAnalyzer`] needs the `alloc` feature (marks, labels and span results are owned).
//! Without it, [`FixedWindowAnalyzer`] analyzes one selected window in memory fixed at compile
//! time, with the same accumulators and verdict rules (see `fixed.rs`).

mod acc;
mod fixed;
mod floor;
mod lines;
mod reorder;
#[cfg(feature = "alloc")]
mod series;
#[cfg(feature = "alloc")]
mod stream;
mod verdict;

pub use acc::{GpuAcc, POWER_BINS, Prev, RaplAcc, RefAcc, Sample, bin_edges, clip, power_bin};
pub use fixed::{FixedBuffers, FixedOptions, FixedResult, FixedWindow, FixedWindowAnalyzer, Pass};
#[cfg(feature = "alloc")]
pub use floor::PowerHistogram;
pub use floor::TwoPassQuantile;
pub use lines::{InputNotes, PyFixed, VerdictText, write_reference_lines};
#[cfg(feature = "alloc")]
pub use series::{Series, SeriesPoint};
#[cfg(feature = "alloc")]
pub use stream::{Planned, SpanPlan};
#[cfg(feature = "alloc")]
pub use verdict::Verdict;
pub use verdict::{PowerSource, Signal};
// For the trace join (`crate::join`), which judges its own windows the same way.
#[cfg(feature = "alloc")]
pub(crate) use verdict::{Context as VerdictContext, combine as combine_verdicts};

#[cfg(feature = "alloc")]
use alloc::collections::BTreeMap;
#[cfg(feature = "alloc")]
use alloc::string::{String, ToString};
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use serde::Serialize;

#[cfg(feature = "alloc")]
use crate::Limits;
use crate::csv::{Col, Row, RowKind};
#[cfg(feature = "alloc")]
use crate::csv::{CsvEvent, TraceCsvReader};
#[cfg(feature = "alloc")]
use reorder::{GrowReorder, Reorder};
#[cfg(feature = "alloc")]
use stream::{Mode, Planning, SpanStream};

/// Which mark pair is "the window": the `occurrence`-th MARK labelled `start` (in file order)
/// and the `occurrence`-th labelled `end`. Occurrence 1 is the reference's rule.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowSelect {
    /// Start label.
    pub start: String,
    /// End label.
    pub end: String,
    /// 1-based occurrence (run) of each label.
    pub occurrence: u32,
}

/// Options of an analysis.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug)]
pub struct AnalyzeOptions {
    /// Memory bounds (`max_marks`, `max_gpus`).
    pub limits: Limits,
    /// The mark pair to analyze, if any.
    pub select: Option<WindowSelect>,
    /// Only this GPU (`gpu_index`; rows without one count as GPU 0).
    pub gpu: Option<i64>,
    /// Analyze every span (mark pairs and stretches between consecutive marks).
    pub spans: bool,
    /// Points per GPU in the plotted series (0: no series).
    pub series_points: usize,
    /// Power/utilization intervals longer than this are skipped (SPEC §6), ns.
    pub max_gap_ns: i64,
    /// Rows are held this long behind the newest row to restore time order, ns.
    pub reorder_horizon_ns: i64,
    /// At most this many rows are held for reordering.
    pub reorder_capacity: usize,
    /// Which NVML reading fills `gpu_power_W` (from the sidecar, when known).
    pub power_source: PowerSource,
    /// Compute only the reference's samples-only figures (the three lines): per-GPU figures,
    /// RAPL, verdicts and the idle floor are left empty, and the fields they need are not parsed.
    pub reference_only: bool,
}

#[cfg(feature = "alloc")]
impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            limits: Limits::EXACT,
            select: None,
            gpu: None,
            spans: false,
            series_points: 0,
            max_gap_ns: 5_000_000_000,
            reorder_horizon_ns: 2_000_000_000,
            reorder_capacity: 65_536,
            power_source: PowerSource::Unknown,
            reference_only: false,
        }
    }
}

/// Row counts of the whole file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RowCounts {
    /// Data rows read (after the header).
    pub rows: u64,
    /// SAMPLE rows.
    pub samples: u64,
    /// MARK rows.
    pub marks: u64,
    /// Header lines (the first and any repeated one, e.g. appended recordings).
    pub headers: u64,
    /// Rows whose row_type is neither SAMPLE nor MARK (ignored, as by the reference).
    pub other_rows: u64,
    /// Bad rows (unparseable `t_mono_ns` on a SAMPLE/MARK row, or over-long records).
    pub bad_rows: u64,
    /// Line of the first bad row.
    pub first_bad_line: Option<u64>,
    /// Rows older than a row already released by the reorder buffer (skipped).
    pub late_rows: u64,
    /// Line of the first late row.
    pub first_late_line: Option<u64>,
    /// Samples of GPUs beyond `max_gpus` (skipped).
    pub samples_dropped: u64,
    /// Marks beyond `max_marks` (not listed, not used for spans).
    pub marks_dropped: u64,
    /// Spans not reported: past `max_spans`, or pair starts past the open-pair limit.
    pub spans_dropped: u64,
}

/// One mark of the recording.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct MarkInfo {
    /// Label.
    pub label: String,
    /// CLOCK_MONOTONIC, ns.
    pub t_mono_ns: i64,
    /// CLOCK_REALTIME, ns, when recorded.
    pub t_wall_ns: Option<i64>,
    /// 1-based occurrence of this label in file order.
    pub occurrence: u32,
    /// Line in the file.
    pub line: u64,
    /// `mark_thread`: pairs are matched only between marks with the same value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
}

/// The recording-level figures of one GPU.
#[derive(Clone, Debug, Serialize)]
pub struct GpuSummary {
    /// `gpu_index` (null when the file has none).
    pub gpu_index: Option<i64>,
    /// Samples.
    pub samples: u64,
    /// Samples with a power reading.
    pub power_samples: u64,
    /// Idle floor: 5th percentile of power, W (±0.125 W).
    pub idle_floor_w: Option<f64>,
    /// 99th percentile of power, W.
    pub power_p99_w: Option<f64>,
    /// Power above this counts as busy: floor + max(10 W, 20% of (p99 − floor)).
    pub busy_threshold_w: Option<f64>,
    /// Mean interval between power readings, ms.
    pub mean_interval_ms: Option<f64>,
    /// Repeated power readings (equal to the previous one).
    pub repeated_power_readings: u64,
}

/// The reference's samples-only figures.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct RefFigures {
    /// Trapezoid energy, J; null with fewer than two samples.
    pub energy_j: Option<f64>,
    /// Samples with t0 ≤ t ≤ t1 and a parseable power.
    pub samples: u64,
    /// Mean utilization of the first sample of each pair, %.
    pub avg_util_pct: Option<f64>,
}

impl From<&RefAcc> for RefFigures {
    fn from(a: &RefAcc) -> Self {
        RefFigures {
            energy_j: a.energy(),
            samples: a.samples,
            avg_util_pct: a.avg_util(),
        }
    }
}

/// One GPU over one window.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct GpuWindow {
    /// `gpu_index` (null when the file has none).
    pub gpu_index: Option<i64>,
    /// The reference's figures for this GPU alone.
    pub reference: RefFigures,
    /// Power energy interpolated to the window edges, J.
    pub energy_edge_j: Option<f64>,
    /// Energy from the NVML cumulative counter (pro-rated at the edges), J.
    pub energy_counter_j: Option<f64>,
    /// Time-weighted utilization, %.
    pub util_time_weighted_pct: Option<f64>,
    /// Mean SM clock of the samples in the window, MHz.
    pub sm_clock_mean_mhz: Option<f64>,
    /// Samples with t0 ≤ t ≤ t1.
    pub samples: u64,
    /// Of them, power readings equal to the previous reading.
    pub repeated_samples: u64,
    /// Share of the edge energy on intervals that end on a repeated reading.
    pub repeated_energy_share: Option<f64>,
    /// Largest interval between power readings overlapping the window, s.
    pub max_gap_s: Option<f64>,
    /// Share of the window covered by power intervals.
    pub power_coverage: f64,
    /// Window time in intervals longer than the max gap (skipped), s.
    pub gap_skipped_s: f64,
    /// Counter decreases (driver reload) skipped.
    pub counter_resets: u64,
    /// Verdict for this GPU.
    pub verdict: Verdict,
}

/// Totals over the GPUs of a window.
#[derive(Clone, Copy, Debug, Serialize, Default)]
pub struct WindowTotals {
    /// Sum of the GPUs' edge energies, J.
    pub energy_edge_j: Option<f64>,
    /// Sum of the GPUs' counter energies, J (only when every GPU has one).
    pub energy_counter_j: Option<f64>,
    /// Sum of the GPUs' reference energies, J.
    pub energy_reference_j: Option<f64>,
}

/// RAPL package energy over a window.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RaplWindow {
    /// Energy, J.
    pub energy_j: f64,
    /// Share of the window covered by RAPL readings.
    pub coverage: f64,
    /// Wraps corrected with `rapl_max_energy_range_uj`.
    pub wraps: u64,
    /// Decreases not corrected (no max recorded): their intervals are skipped.
    pub uncorrected_wraps: u64,
}

/// One window or span.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct WindowResult {
    /// `window` (the selected pair), `pair` (X_start/X_end, begin/end) or `between` (consecutive marks).
    pub kind: &'static str,
    /// Start mark label.
    pub start_label: String,
    /// End mark label.
    pub end_label: String,
    /// Occurrence of the start label.
    pub occurrence: u32,
    /// A pair's `mark_thread` (both marks carry it), when its marks have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
    /// Start, CLOCK_MONOTONIC ns.
    pub t0_mono_ns: i64,
    /// End, CLOCK_MONOTONIC ns.
    pub t1_mono_ns: i64,
    /// (t1 − t0) / 1e9, as the reference computes it.
    pub duration_s: f64,
    /// The reference's figures over every selected GPU's samples together (its three lines).
    pub reference: RefFigures,
    /// Per GPU.
    pub gpus: Vec<GpuWindow>,
    /// Totals.
    pub total: WindowTotals,
    /// RAPL package energy.
    pub rapl: Option<RaplWindow>,
    /// Verdict over all GPUs.
    pub verdict: Verdict,
}

/// The selected pair: where its marks were found.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct Selection {
    /// Start label.
    pub start: String,
    /// End label.
    pub end: String,
    /// Occurrence.
    pub occurrence: u32,
    /// Time of the start mark, if found.
    pub start_t_mono_ns: Option<i64>,
    /// Time of the end mark, if found.
    pub end_t_mono_ns: Option<i64>,
}

#[cfg(feature = "alloc")]
impl Selection {
    /// The reference's error for this selection, if any (exact texts).
    pub fn error(&self) -> Option<String> {
        SelectionError::of(self.start_t_mono_ns, self.end_t_mono_ns).map(|e| e.to_string())
    }
}

/// What is wrong with a selected pair of marks; displays as the reference's exact text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectionError {
    /// A mark is missing: the times of those found.
    Missing {
        /// Time of the start mark, if found.
        start_t_mono_ns: Option<i64>,
        /// Time of the end mark, if found.
        end_t_mono_ns: Option<i64>,
    },
    /// The end mark is not after the start mark.
    Reversed,
}

impl SelectionError {
    /// The error for marks found at these times, if any.
    pub fn of(start_t_mono_ns: Option<i64>, end_t_mono_ns: Option<i64>) -> Option<SelectionError> {
        match (start_t_mono_ns, end_t_mono_ns) {
            (Some(a), Some(b)) if b > a => None,
            (Some(_), Some(_)) => Some(SelectionError::Reversed),
            _ => Some(SelectionError::Missing {
                start_t_mono_ns,
                end_t_mono_ns,
            }),
        }
    }
}

impl core::fmt::Display for SelectionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let t = |f: &mut core::fmt::Formatter<'_>, t: Option<i64>| match t {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("None"),
        };
        match *self {
            SelectionError::Reversed => f.write_str("End MARK must be after start MARK"),
            SelectionError::Missing {
                start_t_mono_ns,
                end_t_mono_ns,
            } => {
                f.write_str("Missing MARK(s). start=")?;
                t(f, start_t_mono_ns)?;
                f.write_str(" end=")?;
                t(f, end_t_mono_ns)
            }
        }
    }
}

/// A downsampled series of one GPU.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct GpuSeries {
    /// `gpu_index`.
    pub gpu_index: Option<i64>,
    /// Bucket width, ns.
    pub bucket_ns: i64,
    /// Points (min/max per bucket).
    pub points: Vec<SeriesPoint>,
}

/// The result of analyzing one recording.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize)]
pub struct RecordingAnalysis {
    /// Row counts.
    pub rows: RowCounts,
    /// Per GPU.
    pub gpus: Vec<GpuSummary>,
    /// Every mark, in file order.
    pub marks: Vec<MarkInfo>,
    /// The selected pair, when one was asked for.
    pub selection: Option<Selection>,
    /// The selected window (absent when its marks are missing or out of order).
    pub window: Option<WindowResult>,
    /// Every span, when asked for.
    pub spans: Vec<WindowResult>,
    /// Plot series, when asked for.
    pub series: Vec<GpuSeries>,
    /// Warnings about the input.
    pub warnings: Vec<String>,
}

#[cfg(feature = "alloc")]
impl RecordingAnalysis {
    /// Pretty JSON, the same bytes on every platform.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| alloc::format!("{{\"error\":\"{e}\"}}"))
    }
}

/// What a row is, for [`ParsedRow`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParsedKind {
    /// A row_type other than SAMPLE/MARK (ignored).
    #[default]
    Other,
    /// A SAMPLE/MARK whose `t_mono_ns` is not an integer.
    Bad,
    /// SAMPLE.
    Sample,
    /// MARK (its label travels beside the row).
    Mark,
}

/// One row reduced to the values the analysis uses, owned (no borrow of the reader), so that
/// a reader thread can parse while the analysis runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParsedRow {
    /// 1-based line.
    pub line: u64,
    /// Kind.
    pub kind: ParsedKind,
    /// `t_mono_ns`.
    pub t_mono_ns: i64,
    /// `t_wall_ns` (marks only).
    pub t_wall_ns: Option<i64>,
    /// `gpu_index`.
    pub gpu_index: Option<i64>,
    /// `gpu_power_W`.
    pub power_w: Option<f64>,
    /// `gpu_util_pct`.
    pub util_pct: Option<f64>,
    /// `gpu_power_W` holds something other than a finite number or a blank (see
    /// [`power_text_is_bad`]).
    pub power_bad: bool,
    /// `gpu_sm_clock_MHz` (full analysis only).
    pub sm_clock_mhz: Option<f64>,
    /// `gpu_energy_mJ` (full analysis only).
    pub energy_mj: Option<f64>,
    /// `rapl_energy_uj` (full analysis only).
    pub rapl_uj: Option<u64>,
    /// `rapl_max_energy_range_uj` (full analysis only).
    pub rapl_max_uj: Option<u64>,
    /// `mark_thread` (marks only).
    pub mark_thread: Option<u64>,
}

impl ParsedRow {
    /// Parses a row; `full` = false parses only what the reference figures need.
    pub fn from_row(row: &Row<'_>, full: bool) -> ParsedRow {
        let mut p = ParsedRow::from_row_deferred(row, full);
        if p.kind == ParsedKind::Sample {
            p.power_w = row.f64(Col::GpuPowerW);
            p.util_pct = row.f64(Col::GpuUtilPct);
            p.power_bad = power_text_is_bad(row.raw(Col::GpuPowerW).unwrap_or(b""), p.power_w);
        }
        p
    }

    /// [`ParsedRow::from_row`] with `power_w` and `util_pct` left `None`, for a caller that
    /// parses them itself (`row.f64(Col::GpuPowerW)`, `row.f64(Col::GpuUtilPct)`), e.g. on
    /// another thread.
    pub fn from_row_deferred(row: &Row<'_>, full: bool) -> ParsedRow {
        let kind = row.kind();
        let line = row.line();
        if kind == RowKind::Other {
            return ParsedRow {
                line,
                ..ParsedRow::default()
            };
        }
        let Some(t) = row.t_mono_ns() else {
            return ParsedRow {
                line,
                kind: ParsedKind::Bad,
                ..ParsedRow::default()
            };
        };
        if kind == RowKind::Mark {
            return ParsedRow {
                line,
                kind: ParsedKind::Mark,
                t_mono_ns: t,
                t_wall_ns: row.i64(Col::TWallNs),
                mark_thread: row.i64(Col::MarkThread).and_then(|v| u64::try_from(v).ok()),
                ..ParsedRow::default()
            };
        }
        let u = |c: Col| row.i64(c).and_then(|v| u64::try_from(v).ok());
        ParsedRow {
            line,
            kind: ParsedKind::Sample,
            t_mono_ns: t,
            t_wall_ns: None,
            gpu_index: row.i64(Col::GpuIndex),
            power_w: None,
            util_pct: None,
            power_bad: false,
            sm_clock_mhz: full.then(|| row.f64(Col::GpuSmClockMhz)).flatten(),
            energy_mj: full.then(|| row.f64(Col::GpuEnergyMj)).flatten(),
            rapl_uj: full.then(|| u(Col::RaplEnergyUj)).flatten(),
            rapl_max_uj: full.then(|| u(Col::RaplMaxEnergyRangeUj)).flatten(),
            mark_thread: None,
        }
    }
}

/// Whether a `gpu_power_W` field (`raw`, parsed as `power_w`) is neither blank nor a finite
/// number: `nan`, `inf` or text. These are counted in a warning.
pub fn power_text_is_bad(raw: &[u8], power_w: Option<f64>) -> bool {
    !raw.trim_ascii().is_empty() && power_w.is_none_or(|p| !p.is_finite())
}

#[cfg(feature = "alloc")]
#[derive(Clone, Copy, Debug)]
struct SampleItem {
    slot: u16,
    s: Sample,
    rapl_uj: Option<u64>,
    rapl_max_uj: Option<u64>,
}

#[cfg(feature = "alloc")]
/// A kept mark on its way through the reorder buffer.
#[derive(Clone, Copy, Debug)]
struct MarkItem {
    /// Interned label.
    label: u32,
    /// 1-based occurrence of the label.
    occurrence: u32,
    /// `mark_thread`: a pair closes only on an end mark with the same one.
    thread: Option<u64>,
    /// The selected pair's start mark.
    sel_start: bool,
    /// The selected pair's end mark.
    sel_end: bool,
}

#[cfg(feature = "alloc")]
#[derive(Clone, Copy, Debug)]
enum Item {
    Sample(SampleItem),
    /// A kept mark.
    Mark(MarkItem),
    /// A RAPL reading on a row whose GPU is not analyzed (or dropped).
    Rapl(Option<u64>, Option<u64>),
}

#[cfg(feature = "alloc")]
struct GpuState {
    key: Option<i64>,
    prev: Prev,
    floor: PowerHistogram,
    series: Series,
    samples: u64,
    power_samples: u64,
    repeated: u64,
    first_power_t: Option<i64>,
    last_power_t: Option<i64>,
}

#[cfg(feature = "alloc")]
struct ActiveWindow {
    id: u64,
    kind: &'static str,
    /// The start mark's `mark_thread`: a pair closes only on an end mark with the same one.
    thread: Option<u64>,
    start_label: u32,
    end_label: Option<u32>,
    occurrence: u32,
    t0: i64,
    t1: Option<i64>,
    reference: RefAcc,
    gpus: Vec<GpuAcc>,
    rapl: RaplAcc,
    /// False for a span past `max_spans`: a placeholder that holds nothing and is never
    /// reported, kept open only so that pair ends still close the pairs they belong to.
    kept: bool,
    /// Pass 3 of a streamed analysis: the result was handed out from pass 1's accumulators.
    streamed: bool,
}

#[cfg(feature = "alloc")]
impl ActiveWindow {
    fn t1(&self) -> i64 {
        self.t1.unwrap_or(i64::MAX)
    }
}

/// The streaming analyzer: `write` chunks of a trace.csv, then `end`.
#[cfg(feature = "alloc")]
pub struct WindowAnalyzer {
    reader: TraceCsvReader,
    eng: Engine,
}

/// Everything but the CSV reader (so a row borrowed from the reader can be added).
#[cfg(feature = "alloc")]
struct Engine {
    opts: AnalyzeOptions,
    reorder: GrowReorder<Item>,
    counts: RowCounts,
    label_ids: BTreeMap<Vec<u8>, u32>,
    labels: Vec<String>,
    label_counts: Vec<u32>,
    marks: Vec<MarkInfo>,
    /// Marks kept (listed or streamed), at most `limits.max_marks` plus the selected pair's.
    kept_marks: usize,
    gpus: Vec<GpuState>,
    rapl_prev: Option<(i64, u64)>,
    rapl_max: Option<u64>,
    active: Vec<ActiveWindow>,
    done: Vec<ActiveWindow>,
    next_id: u64,
    /// Time of the selected start mark, once read.
    sel_start_t: Option<i64>,
    /// Time of the selected end mark, once read.
    sel_end_t: Option<i64>,
    sel_window: Option<ActiveWindow>,
    warnings: Vec<String>,
    /// Kept spans (open or done), at most `limits.max_spans`.
    kept_spans: usize,
    /// Marks seen with the selected start and end labels (whole labels).
    sel_seen: [u32; 2],
    /// Kept mark labels cut to `max_string_bytes`.
    labels_cut: u64,
    /// Where marks and finished spans go.
    mode: Mode,
    /// Line of a first line that is no trace.csv header.
    no_header_line: Option<u64>,
    /// Line of a quote that never closes.
    open_quote_line: Option<u64>,
    /// `gpu_power_W` values that are not finite numbers (nan, inf, text).
    bad_power: u64,
    /// Line of the first of them.
    first_bad_power_line: Option<u64>,
    /// Pair starts never closed by their end mark.
    unclosed_pairs: u64,
    /// The first few of them: (label, occurrence, t_mono_ns).
    unclosed_first: Vec<(u32, u32, i64)>,
}

#[cfg(feature = "alloc")]
const MAX_OPEN_PAIRS: usize = 64;

#[cfg(feature = "alloc")]
/// Unclosed pair starts named in their warning (the rest are counted).
const UNCLOSED_LISTED: usize = 5;

#[cfg(feature = "alloc")]
impl WindowAnalyzer {
    /// A new analyzer. Allocates its fixed buffers now.
    pub fn new(opts: AnalyzeOptions) -> WindowAnalyzer {
        WindowAnalyzer {
            reader: TraceCsvReader::new(),
            eng: Engine::new(opts),
        }
    }

    /// Data rows read so far.
    pub fn rows(&self) -> u64 {
        self.eng.counts.rows
    }

    /// Feeds a chunk of the file.
    pub fn write(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let (ev, n) = self.reader.read(chunk);
            chunk = &chunk[n..];
            self.on_event(ev);
        }
    }

    fn on_event(&mut self, ev: CsvEvent) {
        match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            CsvEvent::Header => self
                .eng
                .header(self.reader.header_line(), self.reader.header_usable()),
            CsvEvent::BadRow { line } => self.eng.bad(line),
            CsvEvent::UnbalancedQuote { line } => self.eng.unbalanced_quote(line),
            CsvEvent::Row => self.eng.push_row(&self.reader.row()),
        }
    }

    /// Adds one row (for callers that read the CSV themselves).
    pub fn push_row(&mut self, row: &Row<'_>) {
        self.eng.push_row(row);
    }

    /// Adds a row parsed elsewhere (e.g. on a reader thread) with [`ParsedRow::from_row`]
    /// (`full` = `!reference_only`), with its MARK label.
    pub fn push_parsed(&mut self, row: &ParsedRow, label: &[u8]) {
        self.eng.push_parsed(row, label);
    }

    /// Counts a header line read elsewhere ([`CsvEvent::Header`]), with
    /// [`TraceCsvReader::header_line`] and [`TraceCsvReader::header_usable`].
    pub fn add_header(&mut self, line: u64, usable: bool) {
        self.eng.header(line, usable);
    }

    /// A record cut short by an unclosed quote, read elsewhere ([`CsvEvent::UnbalancedQuote`]).
    pub fn add_unbalanced_quote(&mut self, line: u64) {
        self.eng.unbalanced_quote(line);
    }

    /// Counts a bad record read elsewhere ([`CsvEvent::BadRow`]).
    pub fn add_bad_row(&mut self, line: u64) {
        self.eng.bad(line);
    }

    /// Whether only the reference figures are computed (see [`AnalyzeOptions::reference_only`]).
    pub fn reference_only(&self) -> bool {
        self.eng.opts.reference_only
    }

    /// Ends the input and returns the analysis.
    pub fn end(self) -> RecordingAnalysis {
        self.end_planned().analysis
    }

    fn flush_reader(&mut self) {
        loop {
            let (ev, _) = self.reader.read(&[]);
            self.on_event(ev);
            if ev == CsvEvent::End {
                break;
            }
        }
    }

    /// Pass 1 of a streamed analysis (see [`stream`](self::stream)): holds at most `hold` marks
    /// and `hold` finished spans. End it with [`end_planned`](Self::end_planned).
    pub fn planning(opts: AnalyzeOptions, hold: usize) -> WindowAnalyzer {
        let mut a = WindowAnalyzer::new(opts);
        a.eng.mode = Mode::Plan(Planning {
            hold,
            marks_over: false,
            spans_over: false,
            early: BTreeMap::new(),
        });
        a
    }

    /// Ends the input: the analysis, and whether its marks and spans must be read in further
    /// passes. For an analyzer made by [`new`](Self::new), both lists are always complete.
    pub fn end_planned(mut self) -> Planned {
        self.flush_reader();
        self.eng.end()
    }

    /// Pass 2 of a streamed analysis: the same options as pass 1; hands out the marks
    /// ([`pop_mark`](Self::pop_mark)) and analyzes nothing else.
    pub fn marks_pass(opts: AnalyzeOptions) -> WindowAnalyzer {
        let mut a = WindowAnalyzer::new(opts);
        a.eng.mode = Mode::Marks(alloc::collections::VecDeque::new());
        a
    }

    /// Pass 3 of a streamed analysis: the same options as pass 1, and its plan; hands out the
    /// span results in order ([`pop_span`](Self::pop_span)).
    pub fn spans_pass(opts: AnalyzeOptions, plan: SpanPlan) -> WindowAnalyzer {
        let mut a = WindowAnalyzer::new(opts);
        a.eng.mode = Mode::Spans(SpanStream {
            plan,
            slots: alloc::collections::VecDeque::new(),
        });
        a
    }

    /// Pass 2: the next mark read, in file order.
    pub fn pop_mark(&mut self) -> Option<MarkInfo> {
        match &mut self.eng.mode {
            Mode::Marks(q) => q.pop_front(),
            _ => None,
        }
    }

    /// Pass 3: the next span result, in start order, once it and every span before it are
    /// decided.
    pub fn pop_span(&mut self) -> Option<WindowResult> {
        match &mut self.eng.mode {
            Mode::Spans(st) => st.pop(),
            _ => None,
        }
    }

    /// Passes 2 and 3: ends the input; every mark or span left is then decided (pop them).
    pub fn end_stream(&mut self) {
        self.flush_reader();
        if let Mode::Spans(_) = self.eng.mode {
            self.eng.end_input();
        }
    }
}

#[cfg(feature = "alloc")]
impl Engine {
    fn new(opts: AnalyzeOptions) -> Engine {
        Engine {
            reorder: Reorder::new(opts.reorder_capacity, opts.reorder_horizon_ns),
            opts,
            counts: RowCounts::default(),
            label_ids: BTreeMap::new(),
            labels: Vec::new(),
            label_counts: Vec::new(),
            marks: Vec::new(),
            kept_marks: 0,
            gpus: Vec::new(),
            rapl_prev: None,
            rapl_max: None,
            active: Vec::with_capacity(MAX_OPEN_PAIRS + 4),
            done: Vec::new(),
            next_id: 0,
            sel_start_t: None,
            sel_end_t: None,
            sel_window: None,
            warnings: Vec::new(),
            kept_spans: 0,
            sel_seen: [0; 2],
            labels_cut: 0,
            mode: Mode::Collect,
            no_header_line: None,
            open_quote_line: None,
            bad_power: 0,
            first_bad_power_line: None,
            unclosed_pairs: 0,
            unclosed_first: Vec::new(),
        }
    }

    fn header(&mut self, line: u64, usable: bool) {
        self.counts.headers += 1;
        if !usable {
            self.no_header_line.get_or_insert(line);
        }
    }

    fn unbalanced_quote(&mut self, line: u64) {
        self.bad(line);
        self.open_quote_line.get_or_insert(line);
    }

    /// The id of a label, interning it.
    fn intern(&mut self, label: &[u8]) -> u32 {
        if let Some(&id) = self.label_ids.get(label) {
            return id;
        }
        let id = self.labels.len() as u32;
        self.label_ids.insert(label.to_vec(), id);
        self.labels
            .push(String::from_utf8_lossy(label).into_owned());
        self.label_counts.push(0);
        id
    }

    fn bad(&mut self, line: u64) {
        self.counts.bad_rows += 1;
        self.counts.first_bad_line.get_or_insert(line);
    }

    fn late(&mut self, line: u64) {
        self.counts.late_rows += 1;
        self.counts.first_late_line.get_or_insert(line);
    }

    fn push_row(&mut self, row: &Row<'_>) {
        let p = ParsedRow::from_row(row, !self.opts.reference_only);
        self.push_parsed(&p, row.label());
    }

    fn push_parsed(&mut self, p: &ParsedRow, label: &[u8]) {
        if let Mode::Marks(_) = self.mode {
            if p.kind == ParsedKind::Mark {
                self.add_mark(label, p.t_mono_ns, p.t_wall_ns, p.mark_thread, p.line);
            }
            return;
        }
        self.counts.rows += 1;
        let t = p.t_mono_ns;
        let item = match p.kind {
            ParsedKind::Other => {
                self.counts.other_rows += 1;
                return;
            }
            ParsedKind::Bad => {
                self.bad(p.line);
                return;
            }
            ParsedKind::Mark => {
                self.counts.marks += 1;
                match self.add_mark(label, t, p.t_wall_ns, p.mark_thread, p.line) {
                    Some(m) => Item::Mark(m),
                    None => return,
                }
            }
            ParsedKind::Sample => {
                self.counts.samples += 1;
                if p.power_bad {
                    self.bad_power += 1;
                    self.first_bad_power_line.get_or_insert(p.line);
                }
                let selected = match self.opts.gpu {
                    Some(g) => p.gpu_index.unwrap_or(0) == g,
                    None => true,
                };
                let slot = if selected {
                    self.slot(p.gpu_index)
                } else {
                    None
                };
                match slot {
                    Some(slot) => Item::Sample(SampleItem {
                        slot,
                        s: Sample {
                            t_ns: t,
                            power_w: p.power_w,
                            util_pct: p.util_pct,
                            sm_clock_mhz: p.sm_clock_mhz,
                            energy_mj: p.energy_mj,
                        },
                        rapl_uj: p.rapl_uj,
                        rapl_max_uj: p.rapl_max_uj,
                    }),
                    None => {
                        if selected {
                            self.counts.samples_dropped += 1;
                        }
                        if p.rapl_uj.is_none() {
                            return;
                        }
                        Item::Rapl(p.rapl_uj, p.rapl_max_uj)
                    }
                }
            }
        };
        let prio = if matches!(item, Item::Mark(_)) { 0 } else { 1 };
        if self.reorder.push(t, prio, item).is_err() {
            self.late(p.line);
            return;
        }
        while let Some((t, item)) = self.reorder.pop(false) {
            self.emit(t, item);
        }
    }

    #[inline]
    fn slot(&mut self, key: Option<i64>) -> Option<u16> {
        // Nearly always the first GPU (one GPU, or the first of a few).
        if self.gpus.first().is_some_and(|g| g.key == key) {
            return Some(0);
        }
        if let Some(i) = self.gpus.iter().position(|g| g.key == key) {
            return Some(i as u16);
        }
        if self.gpus.len() >= self.opts.limits.max_gpus.min(u16::MAX as usize) {
            return None;
        }
        self.gpus.push(GpuState {
            key,
            prev: Prev::default(),
            floor: PowerHistogram::new(),
            series: Series::new(self.opts.series_points),
            samples: 0,
            power_samples: 0,
            repeated: 0,
            first_power_t: None,
            last_power_t: None,
        });
        Some((self.gpus.len() - 1) as u16)
    }

    fn add_mark(
        &mut self,
        raw: &[u8],
        t: i64,
        t_wall_ns: Option<i64>,
        thread: Option<u64>,
        line: u64,
    ) -> Option<MarkItem> {
        // The selection is matched on the whole label, counted apart from the kept marks.
        let (mut sel_start, mut sel_end) = (false, false);
        if let Some(sel) = &self.opts.select {
            if raw == sel.start.as_bytes() {
                self.sel_seen[0] += 1;
                if self.sel_seen[0] == sel.occurrence {
                    self.sel_start_t = Some(t);
                    sel_start = true;
                }
            }
            if raw == sel.end.as_bytes() {
                self.sel_seen[1] += 1;
                if self.sel_seen[1] == sel.occurrence {
                    self.sel_end_t = Some(t);
                    sel_end = true;
                }
            }
        }
        let is_sel = sel_start || sel_end;
        // Kept labels are cut to `max_string_bytes` (on a UTF-8 boundary).
        let label = &raw[..char_floor(raw, self.opts.limits.max_string_bytes)];
        let full = self.kept_marks >= self.opts.limits.max_marks;
        let id = match self.label_ids.get(label) {
            Some(&id) => id,
            // Past `max_marks` a new label is not interned.
            None if full && !is_sel => {
                self.counts.marks_dropped += 1;
                return None;
            }
            None => self.intern(label),
        };
        self.label_counts[id as usize] += 1;
        let occurrence = self.label_counts[id as usize];
        if full && !is_sel {
            self.counts.marks_dropped += 1;
            return None;
        }
        if label.len() < raw.len() {
            self.labels_cut += 1;
        }
        self.kept_marks += 1;
        let info = MarkInfo {
            label: self.labels[id as usize].clone(),
            t_mono_ns: t,
            t_wall_ns,
            occurrence,
            line,
            thread,
        };
        self.keep_mark(info);
        Some(MarkItem {
            label: id,
            occurrence,
            thread,
            sel_start,
            sel_end,
        })
    }

    fn new_window(
        &mut self,
        kind: &'static str,
        start_label: u32,
        occurrence: u32,
        t0: i64,
        kept: bool,
    ) -> ActiveWindow {
        self.next_id += 1;
        let mut gpus = Vec::new();
        if kept {
            gpus.reserve_exact(self.gpus.len().max(1));
            gpus.resize_with(self.gpus.len(), GpuAcc::default);
        }
        ActiveWindow {
            id: self.next_id,
            kind,
            thread: None,
            start_label,
            end_label: None,
            occurrence,
            t0,
            t1: None,
            reference: RefAcc::default(),
            gpus,
            rapl: RaplAcc::default(),
            kept,
            streamed: false,
        }
    }

    /// A new span, kept while fewer than `max_spans` are; past it a placeholder, counted.
    fn new_span(
        &mut self,
        kind: &'static str,
        label: u32,
        occurrence: u32,
        t: i64,
    ) -> ActiveWindow {
        let kept = self.kept_spans < self.opts.limits.max_spans;
        if kept {
            self.kept_spans += 1;
        }
        let mut w = self.new_window(kind, label, occurrence, t, kept);
        if kept && let Mode::Spans(_) = self.mode {
            self.slot_span(&mut w);
        }
        w
    }

    /// Pass 3: the output slot of a new kept span (none for one never closed); a span kept
    /// aside by pass 1 is decided at once.
    fn slot_span(&mut self, w: &mut ActiveWindow) {
        let Mode::Spans(mut st) = core::mem::replace(&mut self.mode, Mode::Collect) else {
            return;
        };
        if !st.plan.never_closed.contains(&w.id) {
            let r = st.plan.early.remove(&w.id);
            w.streamed = r.is_some();
            st.slots.push_back((w.id, r));
        }
        self.mode = Mode::Spans(st);
    }

    /// A kept mark, listed, held or handed out as the mode says.
    fn keep_mark(&mut self, info: MarkInfo) {
        match &mut self.mode {
            Mode::Collect => self.marks.push(info),
            Mode::Plan(p) => {
                if !p.marks_over {
                    self.marks.push(info);
                    if self.marks.len() > p.hold {
                        p.marks_over = true;
                        self.marks = Vec::new();
                    }
                }
            }
            Mode::Marks(q) => q.push_back(info),
            Mode::Spans(_) => {}
        }
    }

    /// A span that can no longer change (closed and past its end).
    fn span_done(&mut self, w: ActiveWindow) {
        match &mut self.mode {
            Mode::Collect => self.done.push(w),
            Mode::Plan(p) => {
                if self.next_id - w.id > p.hold as u64 {
                    p.early.insert(w.id, w);
                } else if !p.spans_over {
                    self.done.push(w);
                    if self.done.len() > p.hold {
                        p.spans_over = true;
                        self.done = Vec::new();
                    }
                }
            }
            Mode::Marks(_) => {}
            Mode::Spans(_) => {
                if w.streamed {
                    return;
                }
                let Mode::Spans(mut st) = core::mem::replace(&mut self.mode, Mode::Collect) else {
                    return;
                };
                let r = self.result(&w, &self.ctx(&st.plan.gpus));
                st.decide(w.id, r);
                self.mode = Mode::Spans(st);
            }
        }
    }

    fn ctx<'a>(&self, gpus: &'a [GpuSummary]) -> verdict::Context<'a> {
        verdict::Context {
            gpus,
            source: self.opts.power_source,
            max_gap_ns: self.opts.max_gap_ns,
        }
    }

    fn emit(&mut self, t: i64, item: Item) {
        match item {
            Item::Mark(m) => self.emit_mark(t, m),
            Item::Sample(s) => {
                self.emit_sample(&s);
                self.close_due(t);
            }
            Item::Rapl(uj, max) => {
                self.emit_rapl(t, uj, max);
                self.close_due(t);
            }
        }
    }

    fn emit_mark(&mut self, t: i64, m: MarkItem) {
        let (label, occurrence) = (m.label, m.occurrence);
        if m.sel_start {
            let w = self.new_window("window", label, occurrence, t, true);
            self.sel_window = Some(w);
        }
        if m.sel_end
            && let Some(w) = &mut self.sel_window
            && w.t1.is_none()
        {
            w.t1 = Some(t);
            w.end_label = Some(label);
        }
        if !self.opts.spans {
            return;
        }
        // The stretch since the previous mark ends here.
        for w in self.active.iter_mut() {
            if w.kind == "between" && w.t1.is_none() {
                w.t1 = Some(t);
                w.end_label = Some(label);
            }
        }
        // A pair end closes the latest open pair with the same stem and the same thread.
        let name = self.labels[label as usize].clone();
        let thread = m.thread;
        if let Some(stem) = pair_end_stem(&name) {
            // The latest by creation (`active` is reordered by `swap_remove`).
            let found = self
                .active
                .iter_mut()
                .filter(|w| {
                    w.kind == "pair"
                        && w.t1.is_none()
                        && w.thread == thread
                        && pair_start_stem(&self.labels[w.start_label as usize]) == Some(stem)
                })
                .max_by_key(|w| w.id);
            if let Some(w) = found {
                w.t1 = Some(t);
                w.end_label = Some(label);
            }
        }
        if pair_start_stem(&name).is_some() {
            let open = self
                .active
                .iter()
                .filter(|w| w.kind == "pair" && w.t1.is_none())
                .count();
            if open < MAX_OPEN_PAIRS {
                let mut w = self.new_span("pair", label, occurrence, t);
                w.thread = thread;
                self.active.push(w);
            } else {
                self.counts.spans_dropped += 1;
            }
        }
        let w = self.new_span("between", label, occurrence, t);
        self.active.push(w);
        // Placeholders that closed here would have been reported: count them, hold nothing.
        let before = self.active.len();
        self.active.retain(|w| w.kept || w.t1.is_none());
        self.counts.spans_dropped += (before - self.active.len()) as u64;
    }

    fn emit_rapl(&mut self, t: i64, uj: Option<u64>, max: Option<u64>) {
        if let Some(m) = max {
            self.rapl_max = Some(m);
        }
        let Some(uj) = uj else { return };
        if let Some(prev) = self.rapl_prev {
            let max = self.rapl_max;
            for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
                if !w.kept {
                    continue;
                }
                let t1 = w.t1();
                w.rapl.add(prev, t, uj, max, w.t0, t1);
            }
        }
        self.rapl_prev = Some((t, uj));
    }

    fn emit_sample(&mut self, si: &SampleItem) {
        let s = &si.s;
        let slot = si.slot as usize;
        let max_gap = self.opts.max_gap_ns;
        if self.opts.reference_only {
            self.gpus[slot].samples += 1;
            if let Some(p) = s.power_w {
                for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
                    if w.kept && w.t0 <= s.t_ns && s.t_ns <= w.t1() {
                        w.reference.add(s.t_ns, p, s.util_pct);
                    }
                }
            }
            return;
        }
        // Non-finite power readings go to the reference figures only (counted in a warning).
        let finite_power = s.power_w.filter(|p| p.is_finite());
        {
            let g = &mut self.gpus[slot];
            g.samples += 1;
            if let Some(p) = finite_power {
                g.power_samples += 1;
                g.floor.add(p);
                if matches!(g.prev.power, Some((_, pp)) if pp.to_bits() == p.to_bits()) {
                    g.repeated += 1;
                }
                g.first_power_t.get_or_insert(s.t_ns);
                g.last_power_t = Some(s.t_ns);
            }
            g.series.add(s.t_ns, finite_power, s.util_pct);
        }
        let prev = self.gpus[slot].prev;
        let n_gpus = self.gpus.len();
        for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
            if !w.kept {
                continue;
            }
            let (t0, t1) = (w.t0, w.t1());
            if w.gpus.len() < n_gpus {
                w.gpus.resize_with(n_gpus, GpuAcc::default);
            }
            if let Some(p) = s.power_w
                && t0 <= s.t_ns
                && s.t_ns <= t1
            {
                w.reference.add(s.t_ns, p, s.util_pct);
            }
            w.gpus[slot].add(s, &prev, t0, t1, max_gap);
        }
        let g = &mut self.gpus[slot];
        if let Some(p) = finite_power {
            g.prev.power = Some((s.t_ns, p));
        }
        if let Some(u) = s.util_pct {
            g.prev.util = Some((s.t_ns, u));
        }
        if let Some(e) = s.energy_mj {
            g.prev.counter = Some((s.t_ns, e));
        }
        if si.rapl_uj.is_some() || si.rapl_max_uj.is_some() {
            self.emit_rapl(s.t_ns, si.rapl_uj, si.rapl_max_uj);
        }
    }

    /// Moves windows that can no longer change to `done`.
    fn close_due(&mut self, now: i64) {
        let max_gap = self.opts.max_gap_ns;
        let finished = |w: &ActiveWindow, gpus: &[GpuState]| match w.t1 {
            None => false,
            Some(t1) => {
                now > t1.saturating_add(max_gap)
                    || (now > t1
                        && gpus.iter().enumerate().all(|(i, g)| {
                            g.last_power_t.is_none_or(|lt| lt <= w.t0)
                                || w.gpus.get(i).is_some_and(|a| a.past_end)
                        }))
            }
        };
        let mut i = 0;
        while i < self.active.len() {
            if finished(&self.active[i], &self.gpus) {
                let w = self.active.swap_remove(i);
                // Placeholders never get here (removed when closed); kept spans ≤ max_spans.
                self.span_done(w);
            } else {
                i += 1;
            }
        }
    }

    /// Releases every held row and finishes the spans closed by then; returns the ids of the
    /// kept spans never closed (dropped: a start without its end, the last stretch).
    fn end_input(&mut self) -> alloc::collections::BTreeSet<u64> {
        while let Some((t, item)) = self.reorder.pop(true) {
            self.emit(t, item);
        }
        let mut never_closed = alloc::collections::BTreeSet::new();
        // Open pairs are at most MAX_OPEN_PAIRS: listed in time order.
        let mut unclosed: Vec<(i64, u64, u32, u32)> = Vec::new();
        for w in core::mem::take(&mut self.active) {
            if w.t1.is_some() {
                self.span_done(w);
                continue;
            }
            if w.kept {
                never_closed.insert(w.id);
            }
            if w.kind == "pair" {
                unclosed.push((w.t0, w.id, w.start_label, w.occurrence));
            }
        }
        unclosed.sort_unstable();
        self.unclosed_pairs = unclosed.len() as u64;
        self.unclosed_first = unclosed
            .iter()
            .take(UNCLOSED_LISTED)
            .map(|&(t0, _, label, occurrence)| (label, occurrence, t0))
            .collect();
        never_closed
    }

    fn end(mut self) -> Planned {
        let never_closed = self.end_input();
        self.finish(never_closed)
    }

    fn finish(mut self, never_closed: alloc::collections::BTreeSet<u64>) -> Planned {
        let gpus: Vec<GpuSummary> = self.gpus.iter().map(summarize_gpu).collect();
        let ctx = self.ctx(&gpus);
        let (marks_streamed, early) = match core::mem::replace(&mut self.mode, Mode::Collect) {
            Mode::Plan(p) => {
                if p.spans_over {
                    (p.marks_over, Some(p.early))
                } else {
                    self.done.extend(p.early.into_values());
                    (p.marks_over, None)
                }
            }
            _ => (false, None),
        };
        let mut done = core::mem::take(&mut self.done);
        done.sort_by_key(|w| (w.t0, w.id));
        // Each span's accumulators are freed as its result is made (30 000 spans: tens of MB).
        let spans: Vec<WindowResult> = done.into_iter().map(|w| self.result(&w, &ctx)).collect();
        let selection = self.opts.select.as_ref().map(|s| Selection {
            start: s.start.clone(),
            end: s.end.clone(),
            occurrence: s.occurrence,
            start_t_mono_ns: self.sel_start_t,
            end_t_mono_ns: self.sel_end_t,
        });
        let window = match (&selection, &self.sel_window) {
            (Some(sel), Some(w)) if sel.error().is_none() && w.t1.is_some() => {
                Some(self.result(w, &ctx))
            }
            _ => None,
        };
        let c = &self.counts;
        let mut warnings = core::mem::take(&mut self.warnings);
        if let Some(line) = self.no_header_line {
            warnings.push(alloc::format!(
                "no trace.csv header: line {line} names no t_mono_ns and row_type columns (or is over {} bytes or {} fields), so no row can be read; a trace.csv starts with its header line",
                crate::csv::RECORD_BYTES,
                crate::csv::MAX_FIELDS
            ));
        }
        if let Some(line) = self.open_quote_line {
            warnings.push(alloc::format!(
                "unbalanced quote: a quoted field opens at line {line} and never closes, so the rest of the file was read as one field and skipped"
            ));
        }
        if self.bad_power > 0 {
            warnings.push(alloc::format!(
                "{} gpu_power_W values are not finite numbers (nan, inf or text): left out of the edge energy, idle floor and verdict (the reference figures take nan and inf as Python does); first at line {}",
                self.bad_power,
                self.first_bad_power_line.unwrap_or(0)
            ));
        }
        if c.bad_rows > 0 {
            warnings.push(alloc::format!(
                "{} bad rows skipped (unparseable t_mono_ns or over-long); first at line {}",
                c.bad_rows,
                c.first_bad_line.unwrap_or(0)
            ));
        }
        if self.unclosed_pairs > 0 {
            let mut listed = String::new();
            for (k, (label, occurrence, t0)) in self.unclosed_first.iter().enumerate() {
                listed.push_str(if k == 0 { "" } else { "; " });
                listed.push_str(&alloc::format!(
                    "{} (occurrence {occurrence}, t_mono_ns {t0})",
                    self.labels[*label as usize]
                ));
            }
            let more = self.unclosed_pairs - self.unclosed_first.len() as u64;
            warnings.push(alloc::format!(
                "{} pair starts never closed by their end mark, so not analyzed as pairs: {listed}{}",
                self.unclosed_pairs,
                if more > 0 {
                    alloc::format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if c.late_rows > 0 {
            warnings.push(alloc::format!(
                "{} rows arrived more than {} ms after a later-timestamped row (e.g. an appended recording whose clock went back) and were skipped; first at line {}",
                c.late_rows,
                self.opts.reorder_horizon_ns / 1_000_000,
                c.first_late_line.unwrap_or(0)
            ));
        }
        if c.samples_dropped > 0 {
            warnings.push(alloc::format!(
                "samples of GPUs beyond max_gpus skipped: {}",
                c.samples_dropped
            ));
        }
        if c.marks_dropped > 0 {
            warnings.push(alloc::format!(
                "marks beyond max_marks skipped: {}",
                c.marks_dropped
            ));
        }
        if self.labels_cut > 0 {
            warnings.push(alloc::format!(
                "mark labels longer than max_string_bytes ({}) cut: {}",
                self.opts.limits.max_string_bytes,
                self.labels_cut
            ));
        }
        if c.spans_dropped > 0 {
            warnings.push(alloc::format!(
                "spans beyond max_spans (or open pairs beyond {}) not analyzed: {}",
                MAX_OPEN_PAIRS,
                c.spans_dropped
            ));
        }
        let series = self
            .gpus
            .iter()
            .filter(|_| self.opts.series_points > 0)
            .map(|g| GpuSeries {
                gpu_index: g.key,
                bucket_ns: g.series.bucket_ns(),
                points: g.series.points(),
            })
            .collect();
        let spans_plan = early.map(|early| SpanPlan {
            early: early
                .into_iter()
                .map(|(id, w)| (id, self.result(&w, &ctx)))
                .collect(),
            never_closed,
            gpus: gpus.clone(),
        });
        Planned {
            analysis: RecordingAnalysis {
                rows: self.counts.clone(),
                gpus,
                marks: core::mem::take(&mut self.marks),
                selection,
                window,
                spans: if self.opts.spans { spans } else { Vec::new() },
                series,
                warnings,
            },
            marks_streamed,
            spans: spans_plan,
        }
    }

    fn result(&self, w: &ActiveWindow, ctx: &verdict::Context<'_>) -> WindowResult {
        let t1 = w.t1.unwrap_or(w.t0);
        let dur_ns = (t1 as i128 - w.t0 as i128) as f64;
        let mut gpus = Vec::with_capacity(w.gpus.len());
        for (i, a) in w.gpus.iter().enumerate() {
            // The whole recording's figures (in pass 3 of a streamed analysis, pass 1's).
            let g = &ctx.gpus[i];
            if g.samples == 0 {
                continue;
            }
            let has_power = a.power_covered_ns > 0 || a.gap_skipped_ns > 0;
            let has_util = a.util_covered_ns > 0;
            let has_counter = a.counter_covered_ns > 0;
            let v = ctx.gpu_verdict(i, a, w.t0, t1);
            gpus.push(GpuWindow {
                gpu_index: g.gpu_index,
                reference: RefFigures::from(&a.reference),
                energy_edge_j: has_power.then_some(a.energy_edge_j),
                energy_counter_j: has_counter.then_some(a.counter_mj / 1000.0),
                util_time_weighted_pct: has_util
                    .then(|| a.util_integral / a.util_covered_ns as f64),
                sm_clock_mean_mhz: (a.sm_clock_n > 0).then(|| a.sm_clock_sum / a.sm_clock_n as f64),
                samples: a.samples,
                repeated_samples: a.repeated,
                repeated_energy_share: (a.energy_edge_j > 0.0)
                    .then(|| a.energy_on_repeats_j / a.energy_edge_j),
                max_gap_s: (a.max_gap_ns > 0).then(|| a.max_gap_ns as f64 / 1e9),
                power_coverage: if dur_ns > 0.0 {
                    a.power_covered_ns as f64 / dur_ns
                } else {
                    0.0
                },
                gap_skipped_s: a.gap_skipped_ns as f64 / 1e9,
                counter_resets: a.counter_resets,
                verdict: v,
            });
        }
        let sum = |f: &dyn Fn(&GpuWindow) -> Option<f64>| -> Option<f64> {
            let vals: Vec<Option<f64>> = gpus.iter().map(f).collect();
            if vals.is_empty() || vals.iter().any(Option::is_none) {
                None
            } else {
                Some(vals.iter().flatten().sum())
            }
        };
        let total = WindowTotals {
            energy_edge_j: sum(&|g| g.energy_edge_j),
            energy_counter_j: sum(&|g| g.energy_counter_j),
            energy_reference_j: sum(&|g| g.reference.energy_j),
        };
        let rapl = (w.rapl.covered_ns > 0 || w.rapl.uncorrected_wraps > 0).then(|| RaplWindow {
            energy_j: w.rapl.energy_uj / 1e6,
            coverage: if dur_ns > 0.0 {
                w.rapl.covered_ns as f64 / dur_ns
            } else {
                0.0
            },
            wraps: w.rapl.wraps,
            uncorrected_wraps: w.rapl.uncorrected_wraps,
        });
        let verdict = verdict::combine(gpus.iter().map(|g| &g.verdict));
        WindowResult {
            kind: w.kind,
            start_label: self.labels[w.start_label as usize].clone(),
            end_label: w
                .end_label
                .map(|l| self.labels[l as usize].clone())
                .unwrap_or_default(),
            occurrence: w.occurrence,
            thread: w.thread,
            t0_mono_ns: w.t0,
            t1_mono_ns: t1,
            duration_s: (t1 as i128 - w.t0 as i128) as f64 / 1e9,
            reference: RefFigures::from(&w.reference),
            gpus,
            total,
            rapl,
            verdict,
        }
    }
}

/// The idle floor's quantile of a GPU's power readings.
const IDLE_FLOOR_Q: f64 = 0.05;
/// The high quantile the busy threshold is scaled by.
const POWER_HIGH_Q: f64 = 0.99;

/// Power above this counts as busy: floor + max(10 W, 20% of (p99 − floor)).
fn busy_threshold_w(floor_w: Option<f64>, p99_w: Option<f64>) -> Option<f64> {
    match (floor_w, p99_w) {
        (Some(f), Some(h)) => Some(f + (0.2 * (h - f)).max(10.0)),
        _ => None,
    }
}

/// Mean interval between the first and last of `n` power readings, ms.
fn mean_interval_ms(first_t: Option<i64>, last_t: Option<i64>, n: u64) -> Option<f64> {
    match (first_t, last_t) {
        (Some(a), Some(b)) if n > 1 => Some((b - a) as f64 / 1e6 / (n - 1) as f64),
        _ => None,
    }
}

#[cfg(feature = "alloc")]
fn summarize_gpu(g: &GpuState) -> GpuSummary {
    let floor = g.floor.quantile(IDLE_FLOOR_Q);
    let p99 = g.floor.quantile(POWER_HIGH_Q);
    let threshold = busy_threshold_w(floor, p99);
    let mean_interval_ms = mean_interval_ms(g.first_power_t, g.last_power_t, g.power_samples);
    GpuSummary {
        gpu_index: g.key,
        samples: g.samples,
        power_samples: g.power_samples,
        idle_floor_w: floor,
        power_p99_w: p99,
        busy_threshold_w: threshold,
        mean_interval_ms,
        repeated_power_readings: g.repeated,
    }
}

/// `X` for `X_start`, `X_begin` and `begin`.
/// The longest prefix of `s` of at most `max` bytes that does not cut a UTF-8 sequence.
#[cfg(feature = "alloc")]
fn char_floor(s: &[u8], max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut k = max;
    while k > 0 && s[k] & 0xC0 == 0x80 {
        k -= 1;
    }
    k
}

#[cfg(feature = "alloc")]
fn pair_start_stem(label: &str) -> Option<&str> {
    if label == "begin" || label == "start" {
        return Some("");
    }
    label
        .strip_suffix("_start")
        .or_else(|| label.strip_suffix("_begin"))
}

/// `X` for `X_end` and `end`.
#[cfg(feature = "alloc")]
fn pair_end_stem(label: &str) -> Option<&str> {
    if label == "end" {
        return Some("");
    }
    label.strip_suffix("_end")
}

#[cfg(all(test, feature = "alloc"))]
mod tests;
