//! Mark windows, spans and the compute-or-waiting verdict over a trace.csv (docs/cli.md, "analyze"; docs/numerics.md).
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
//! The CLI and the Python wheel run it as the analyze job ([`AnalyzeJob`], `job.rs`), which
//! decides the passes over the file and renders the result with serde.
//!
//! [`WindowAnalyzer`] needs the `alloc` feature (marks, labels and span results are owned).
//! Without it, [`FixedWindowAnalyzer`] analyzes one selected window in memory fixed at compile
//! time, with the same accumulators and verdict rules (see `fixed.rs`).

mod acc;
#[cfg(feature = "alloc")]
mod batch;
#[cfg(feature = "alloc")]
mod engine;
mod fixed;
mod floor;
#[cfg(feature = "alloc")]
mod job;
mod lines;
#[cfg(feature = "alloc")]
pub(crate) mod pairing;
mod reorder;
mod result;
mod row;
#[cfg(feature = "alloc")]
mod series;
#[cfg(feature = "alloc")]
mod stream;
mod texts;
mod verdict;

pub(crate) use acc::RefAcc;
#[cfg(feature = "alloc")]
pub(crate) use acc::{GpuAcc, Prev, Sample};
#[cfg(feature = "alloc")]
pub use batch::RowBatch;
pub use fixed::{FixedBuffers, FixedOptions, FixedResult, FixedWindow, FixedWindowAnalyzer, Pass};
#[cfg(feature = "alloc")]
pub(crate) use floor::PowerHistogram;
pub use floor::TwoPassQuantile;
#[cfg(feature = "alloc")]
pub use job::{AnalysisJson, AnalyzeJob, AnalyzeJobError, Analyzed, FIRST_PASS_HOLD, Reread};
pub use lines::{InputNotes, PyFixed, VerdictText, write_reference_lines};
pub use result::NO_GPU_READINGS;
#[cfg(feature = "alloc")]
pub use result::{GpuSeries, GpuWindow, MarkInfo, RecordingAnalysis, Selection, WindowResult};
pub use result::{GpuSummary, RaplWindow, RefFigures, RowCounts, SelectionError, WindowTotals};
pub use row::{ParsedKind, ParsedRow, power_text_is_bad};
#[cfg(feature = "alloc")]
pub use series::{Series, SeriesPoint};
#[cfg(feature = "alloc")]
pub use stream::{Planned, SpanPlan};
pub use texts::{ANALYZE_CLI, MARK_TOO_LATE, MixedGpusNote};
#[cfg(feature = "alloc")]
pub use verdict::Verdict;
pub use verdict::{PowerSource, Signal};
// For the trace join (`crate::join`), which judges its own windows the same way.
#[cfg(feature = "alloc")]
pub(crate) use verdict::{Context as VerdictContext, combine as combine_verdicts};
// For the join's recording (`crate::join::recording`), which keeps each GPU's summary without
// the analyzer's windows.
#[cfg(feature = "alloc")]
pub(crate) use engine::{GpuState, summarize_gpu};

#[cfg(feature = "alloc")]
use alloc::collections::BTreeMap;
#[cfg(feature = "alloc")]
use alloc::string::String;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use serde::Serialize;

#[cfg(feature = "alloc")]
use crate::Limits;
use crate::csv::{Col, Row, RowKind};
#[cfg(feature = "alloc")]
use crate::csv::{CsvEvent, TraceCsvReader};
#[cfg(feature = "alloc")]
use crate::energy::{CounterStep, WindowCounter};
#[cfg(feature = "alloc")]
use engine::*;
#[cfg(feature = "alloc")]
pub(crate) use pairing::{pair_end_stem, pair_start_stem};
#[cfg(feature = "alloc")]
// `GrowReorder` also serves the live metrics (`crate::metrics::live`), which reorder rows as
// the analysis does.
pub(crate) use reorder::{GrowReorder, Reorder};
#[cfg(feature = "alloc")]
use stream::{Mode, Planning, SpanStream};

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
pub struct WindowOptions {
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
    /// Power/utilization intervals longer than this are skipped (docs/numerics.md, "Energy"), ns.
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
impl Default for WindowOptions {
    fn default() -> Self {
        WindowOptions {
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

/// The streaming analyzer: `write` chunks of a trace.csv, then `end`.
#[cfg(feature = "alloc")]
pub struct WindowAnalyzer {
    reader: TraceCsvReader,
    eng: Engine,
}

#[cfg(feature = "alloc")]
impl WindowAnalyzer {
    /// A new analyzer. Allocates its fixed buffers now.
    pub fn new(opts: WindowOptions) -> WindowAnalyzer {
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

    /// Whether only the reference figures are computed (see [`WindowOptions::reference_only`]).
    pub fn reference_only(&self) -> bool {
        self.eng.opts.reference_only
    }

    /// Ends the input and returns the analysis.
    pub fn end(self) -> RecordingAnalysis {
        self.end_planned().analysis
    }

    /// Ends the input: every GPU's summary, those not listed (`GpuSummary::is_phantom`)
    /// included, in slot order (the join's tests compare its idle floors with these).
    #[cfg(test)]
    pub(crate) fn end_every_gpu(mut self) -> Vec<GpuSummary> {
        self.flush_reader();
        self.eng.end_input();
        self.eng.gpus.iter().map(summarize_gpu).collect()
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
    pub fn planning(opts: WindowOptions, hold: usize) -> WindowAnalyzer {
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
    pub fn marks_pass(opts: WindowOptions) -> WindowAnalyzer {
        let mut a = WindowAnalyzer::new(opts);
        a.eng.mode = Mode::Marks(alloc::collections::VecDeque::new());
        a
    }

    /// Pass 3 of a streamed analysis: the same options as pass 1, and its plan; hands out the
    /// span results in order ([`pop_span`](Self::pop_span)).
    pub fn spans_pass(opts: WindowOptions, plan: SpanPlan) -> WindowAnalyzer {
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

#[cfg(all(test, feature = "alloc"))]
mod job_tests;
#[cfg(all(test, feature = "alloc"))]
mod tests;
