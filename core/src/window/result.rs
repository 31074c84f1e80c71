//! What an analysis gives: row counts, marks, per-GPU summaries and the result of each window.

use super::*;

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
    /// Rows with any GPU reading (power text, utilization, SM clock or energy counter).
    #[serde(skip)]
    pub gpu_readings: u64,
}

impl GpuSummary {
    /// A GPU that is none: rows without a `gpu_index` that carry no GPU reading (a recording
    /// made without NVML). It is not listed, and no window lists it.
    pub fn is_phantom(&self) -> bool {
        self.gpu_index.is_none() && self.gpu_readings == 0
    }
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
    /// `window` (the selected pair), `pair` (X_start/X_end, begin/end) or `between` (consecutive marks that are not a pair's start and end).
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
    /// What is wrong with this selection, if anything (displays as the reference's text).
    pub fn error(&self) -> Option<SelectionError> {
        SelectionError::of(self.start_t_mono_ns, self.end_t_mono_ns)
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

impl core::error::Error for SelectionError {}

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

/// The result of analyzing one recording. Serialized as [`RecordingView`] with its own lists.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug)]
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
    /// Why every GPU figure is null, when the recording has SAMPLE rows but no GPU reading in
    /// any of them ([`NO_GPU_READINGS`]); absent otherwise.
    pub gpu_energy_note: Option<&'static str>,
}

/// The one field list of a recording's JSON: a [`RecordingAnalysis`] with its `marks` and
/// `spans` given apart, so that a rendering can stream them from further passes over the file
/// (`job::AnalysisJson`) in the same bytes as the lists held.
#[cfg(feature = "alloc")]
#[derive(Serialize)]
#[serde(rename = "RecordingAnalysis")]
pub(super) struct RecordingView<'a, M, S> {
    rows: &'a RowCounts,
    gpus: &'a [GpuSummary],
    marks: M,
    selection: &'a Option<Selection>,
    window: &'a Option<WindowResult>,
    spans: S,
    series: &'a [GpuSeries],
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_energy_note: Option<&'static str>,
}

#[cfg(feature = "alloc")]
impl<'a, M: Serialize, S: Serialize> RecordingView<'a, M, S> {
    /// `r`'s fields, with these `marks` and `spans`.
    pub(super) fn new(r: &'a RecordingAnalysis, marks: M, spans: S) -> Self {
        RecordingView {
            rows: &r.rows,
            gpus: &r.gpus,
            marks,
            selection: &r.selection,
            window: &r.window,
            spans,
            series: &r.series,
            warnings: &r.warnings,
            gpu_energy_note: r.gpu_energy_note,
        }
    }
}

#[cfg(feature = "alloc")]
impl Serialize for RecordingAnalysis {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RecordingView::new(self, &self.marks, &self.spans).serialize(s)
    }
}

/// The note of a recording without GPU readings: said once, in `gpu_energy_note` (and by the
/// CLI's text forms on stderr), instead of a GPU of `gpu_index: null` with null figures.
pub const NO_GPU_READINGS: &str = "no GPU readings: no SAMPLE row has a gpu_power_W, gpu_util_pct, gpu_sm_clock_MHz or gpu_energy_mJ value (recorded without NVML, e.g. on a host without a GPU), so there are no GPU energies, utilization or verdicts";

#[cfg(feature = "alloc")]
impl RecordingAnalysis {
    /// Pretty JSON, the same bytes on every platform.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| alloc::format!("{{\"error\":\"{e}\"}}"))
    }
}

/// [`NO_GPU_READINGS`] when a recording has SAMPLE rows but none with a GPU reading: the one
/// rule of `analyze` and the firmware.
pub(crate) fn gpu_energy_note(samples: u64, gpu_reading_rows: u64) -> Option<&'static str> {
    (samples > 0 && gpu_reading_rows == 0).then_some(NO_GPU_READINGS)
}
