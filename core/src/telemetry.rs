//! Host telemetry for `flinch-trace summarize`: rows of a `telemetry.jsonl` shaped into the
//! reference's `telemetry_summary` objects.
//!
//! Rows go in once, in file order; every window (a time range over `unix`: the whole run, the
//! sustained phase, its first and last five minutes, its last 60 s) is accumulated in the same
//! pass by [`crate::time_windows`], and [`TelemetryAccumulator::finish`] gives one
//! [`TelemetrySummary`] per window, shaped exactly like the reference's `telemetry_summary`.
//! [`crate::runs`] parses the JSON and decides which rows are usable; this module picks the
//! metrics out of a row and shapes the output.
//!
//! Memory: the percentiles need the values; each series keeps them as `f64` within its share of
//! a [`ValueBudget`] (from [`crate::Limits`]) and past it writes sorted runs to the caller's
//! [`ValueSpill`] (exact), or, without one, moves to the quantile sketch (a warning in the
//! window's summary states it and its bound): [`values`]. Vectors grow geometrically, so the
//! allocation count is logarithmic in the row count, never one per row. The distinct AC states
//! kept are bounded by [`MAX_AC_STATES`]. Needs the `alloc` feature.
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde::Serializer;

use crate::ordered::OrderedMap;
use crate::pynum;
pub use crate::stats::{Num, Stats};
pub use crate::time_windows::Window;
use crate::time_windows::{SeriesState, WindowState, WindowSummary, WindowedStats};

pub mod host_row;
pub mod values;
pub use host_row::{HostMemory, HostRow};
use values::Shares;
pub use values::{BoundedStats, SharedSpill, ValueBudget, ValueSpill};

/// Distinct `power.ACLineStatus` values kept per window; more are counted in a warning.
pub const MAX_AC_STATES: usize = 64;

/// The reference's fixed description of the energy figure.
pub const ENERGY_SCOPE: &str = "Whole NVIDIA GPU incl. other processes; trapezoids skip gaps >5s; not whole-system, CPU or NPU energy.";

/// The host series, in the reference's key order (series 0..3 of the windowed statistics).
const HOST_SERIES: [&str; 3] = [
    "host_available_bytes",
    "host_used_bytes",
    "host_cpu_percent",
];

/// The `gpu_csv` fields the reference reads (index into the 10 comma-separated fields, name).
const GPU_FIELDS: [(usize, &str); 6] = [
    (2, "gpu_memory_mib"),
    (4, "gpu_temperature_c"),
    (5, "gpu_power_w"),
    (6, "gpu_sm_clock_mhz"),
    (7, "gpu_mem_clock_mhz"),
    (8, "gpu_utilization_percent"),
];
const POWER_FIELD: usize = 2; // position of gpu_power_w in GPU_FIELDS
/// Series of the windowed statistics: the host ones, then one per GPU field.
const SERIES: usize = HOST_SERIES.len() + GPU_FIELDS.len();

/// One `power.ACLineStatus` value, borrowed from the row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AcStateRef<'a> {
    /// JSON null.
    Null,
    /// JSON true/false.
    Bool(bool),
    /// A JSON number.
    Num(Num),
    /// A JSON string.
    Str(&'a str),
}

/// One `power.ACLineStatus` value kept in a summary.
#[derive(Clone, Debug, PartialEq)]
pub enum AcState {
    /// JSON null.
    Null,
    /// JSON true/false.
    Bool(bool),
    /// A JSON number.
    Num(Num),
    /// A JSON string.
    Str(String),
}

impl Serialize for AcState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AcState::Null => s.serialize_none(),
            AcState::Bool(b) => s.serialize_bool(*b),
            AcState::Num(n) => n.serialize(s),
            AcState::Str(t) => s.serialize_str(t),
        }
    }
}

impl AcState {
    /// Python's `==` between set members: numbers and bools compare by value.
    fn py_eq(&self, other: &AcStateRef<'_>) -> bool {
        match (self.as_number(), other_number(other)) {
            (Some(a), Some(b)) => pynum::cmp(a, b) == Some(core::cmp::Ordering::Equal),
            (None, None) => match (self, other) {
                (AcState::Null, AcStateRef::Null) => true,
                (AcState::Str(a), AcStateRef::Str(b)) => a == b,
                _ => false,
            },
            _ => false,
        }
    }

    fn as_number(&self) -> Option<Num> {
        match self {
            AcState::Bool(b) => Some(Num::Int(*b as i64)),
            AcState::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// Sort rank where Python cannot compare (it raises there): null, numbers, strings.
    fn rank(&self) -> u8 {
        match self {
            AcState::Null => 0,
            AcState::Bool(_) | AcState::Num(_) => 1,
            AcState::Str(_) => 2,
        }
    }
}

fn other_number(v: &AcStateRef<'_>) -> Option<Num> {
    match v {
        AcStateRef::Bool(b) => Some(Num::Int(*b as i64)),
        AcStateRef::Num(n) => Some(*n),
        _ => None,
    }
}

/// One usable telemetry row. The caller maps anything that is not a number (JSON bools,
/// strings, null, a missing key) to `None` for the metric fields.
#[derive(Clone, Copy, Debug)]
pub struct TelemetryRow<'a> {
    /// `unix`: wall-clock seconds (a finite number).
    pub unix: Num,
    /// `host_memory.available` in bytes.
    pub host_available_bytes: Option<Num>,
    /// `host_memory.used` in bytes.
    pub host_used_bytes: Option<Num>,
    /// `host_cpu_percent`.
    pub host_cpu_percent: Option<Num>,
    /// `gpu_csv`: one nvidia-smi CSV line of 10 fields; `""` when absent.
    pub gpu_csv: &'a str,
    /// `power.ACLineStatus`, `Some` when the row has a `power` object.
    pub ac_state: Option<AcStateRef<'a>>,
}

/// The reference `telemetry_summary` object, keys in its order; `warnings` is ours and
/// appears only when something was skipped.
#[derive(Clone, Debug, Serialize)]
pub struct TelemetrySummary {
    /// The telemetry file, as the reference forms it.
    pub source: String,
    /// Rows in the window.
    pub samples: usize,
    /// Last minus first `unix` (null below two rows).
    pub span_s: Option<Num>,
    /// The window asked for.
    pub requested_window: RequestedWindow,
    /// Statistics of consecutive `unix` differences.
    pub sampling_gap_s: Stats,
    /// How many of those differences exceed 5 s.
    pub gaps_over_5s: usize,
    /// Statistics per metric, in the order the reference creates them.
    pub metrics: Metrics,
    /// Distinct AC line states, sorted.
    pub ac_states: Vec<AcState>,
    /// Trapezoid GPU energy over intervals of at most 5 s (null when there are none).
    pub whole_gpu_energy_j_over_observed_intervals: Option<f64>,
    /// Total length of those intervals (an integer when the timestamps are).
    pub energy_observed_duration_s: Num,
    /// The reference's description of the energy figure.
    pub energy_scope: &'static str,
    /// What was skipped, one line each (absent when nothing was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `requested_window` of a summary.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RequestedWindow {
    /// Lower bound or null.
    pub start: Option<Num>,
    /// Upper bound or null.
    pub stop: Option<Num>,
}

/// Per-metric statistics in creation order (a JSON object).
pub type Metrics = OrderedMap<Stats, &'static str>;

/// The distinct AC states of one window, as a Python set.
#[derive(Debug, Default)]
struct AcStates {
    states: Vec<AcState>,
    dropped: usize,
}

impl AcStates {
    fn push(&mut self, state: AcStateRef<'_>) {
        if self.states.iter().any(|s| s.py_eq(&state)) {
            return;
        }
        if self.states.len() == MAX_AC_STATES {
            self.dropped += 1;
            return;
        }
        self.states.push(match state {
            AcStateRef::Null => AcState::Null,
            AcStateRef::Bool(b) => AcState::Bool(b),
            AcStateRef::Num(n) => AcState::Num(n),
            AcStateRef::Str(s) => AcState::Str(String::from(s)),
        });
    }

    /// Sorted as Python sorts the set, with a warning where Python cannot compare.
    fn finish(mut self, warnings: &mut Vec<String>) -> Vec<AcState> {
        let mixed = self.states.windows(2).any(|p| p[0].rank() != p[1].rank());
        self.states.sort_by(|a, b| {
            a.rank().cmp(&b.rank()).then_with(|| match (a, b) {
                (AcState::Str(x), AcState::Str(y)) => x.cmp(y),
                _ => match (a.as_number(), b.as_number()) {
                    (Some(x), Some(y)) => x.cmp_exact(y),
                    _ => core::cmp::Ordering::Equal,
                },
            })
        });
        if mixed {
            warnings.push(String::from(
                "ac_states mixes null, numbers and strings (the reference cannot sort them): sorted null < numbers < strings",
            ));
        }
        if self.dropped > 0 {
            warnings.push(alloc::format!(
                "{} further distinct ac_states beyond {} not listed",
                self.dropped,
                MAX_AC_STATES
            ));
        }
        self.states
    }
}

/// Summarizes one telemetry file over several windows in a single pass.
#[derive(Debug)]
pub struct TelemetryAccumulator {
    windows: Vec<Window>,
    stats: WindowedStats<BoundedStats>,
    shares: Shares,
    ac_states: Vec<AcStates>,
}

impl core::fmt::Debug for Shares {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Shares")
    }
}

impl TelemetryAccumulator {
    /// An accumulator for `windows` (the first is usually [`Window::ALL`]), within
    /// [`ValueBudget::in_memory`].
    pub fn new(windows: &[Window]) -> Self {
        Self::with_budget(windows, ValueBudget::in_memory())
    }

    /// An accumulator whose series share `budget`.
    pub fn with_budget(windows: &[Window], budget: ValueBudget) -> Self {
        // Sinks are tagged in the order made: each window's row gaps, then the cells.
        let mut shares = budget.shares(windows.len() * (SERIES + 1));
        let states: Vec<_> = windows
            .iter()
            .map(|&w| WindowState::new(w, shares.sink()))
            .collect();
        let cells: Vec<_> = (0..windows.len() * SERIES)
            .map(|_| SeriesState::new(shares.sink()))
            .collect();
        let stats = WindowedStats::from_parts(states, cells)
            .unwrap_or_else(|| unreachable!("windows x series cells"));
        TelemetryAccumulator {
            windows: Vec::from(windows),
            stats,
            shares,
            ac_states: windows.iter().map(|_| AcStates::default()).collect(),
        }
    }

    /// What a window's summary says of its series past the memory budget without a spill.
    fn approximations(
        &self,
        w: usize,
        names: &[(usize, &'static str)],
        warnings: &mut Vec<String>,
    ) {
        let n_windows = self.windows.len() as u32;
        for tag in self.shares.sketched() {
            let name = if tag < n_windows {
                (tag as usize == w).then_some("sampling_gap_s")
            } else {
                let cell = (tag - n_windows) as usize;
                (cell / SERIES == w)
                    .then(|| names.iter().find(|(s, _)| *s == cell % SERIES).map(|p| p.1))
                    .flatten()
            };
            if let Some(name) = name {
                warnings.push(alloc::format!(
                    "{name}: more values than this run's exact-values budget ({} per series): percentiles from a quantile sketch, within {:.3}% relative error (null where a temporary file failed)",
                    self.shares.quota(),
                    values::sketch_error() * 100.0
                ));
            }
        }
    }

    /// Feeds one row, in file order, to every window that contains its `unix`.
    pub fn push(&mut self, row: &TelemetryRow<'_>) {
        let ws = &mut self.stats;
        ws.begin_row(row.unix);
        let host = [
            row.host_available_bytes,
            row.host_used_bytes,
            row.host_cpu_percent,
        ];
        for (series, value) in host.into_iter().enumerate() {
            match value {
                Some(v) => ws.push(series, v),
                None => ws.push_missing(series),
            }
        }
        for (i, value) in parse_gpu_csv(row.gpu_csv).into_iter().enumerate() {
            let Some(v) = value else { continue };
            ws.push(HOST_SERIES.len() + i, v);
            if i == POWER_FIELD {
                ws.push_power(v);
            }
        }
        if let Some(state) = row.ac_state {
            for (w, states) in self.ac_states.iter_mut().enumerate() {
                if self.stats.holds_row(w) {
                    states.push(state);
                }
            }
        }
    }

    /// One summary per window, in the order the windows were given.
    pub fn finish(mut self, source: &str) -> Vec<TelemetrySummary> {
        let ac_states = core::mem::take(&mut self.ac_states);
        let windows = core::mem::take(&mut self.windows);
        let mut out = Vec::with_capacity(windows.len());
        for (w, (window, states)) in windows.iter().zip(ac_states).enumerate() {
            // The windowed statistics hold one state per window given to `new`.
            let Some(summary) = self.stats.summary(w) else {
                continue;
            };
            out.push(self.finish_window(w, window, summary, states, source));
        }
        out
    }

    fn finish_window(
        &mut self,
        w: usize,
        window: &Window,
        summary: WindowSummary,
        states: AcStates,
        source: &str,
    ) -> TelemetrySummary {
        let ws = &mut self.stats;
        let mut metrics = Vec::new();
        if summary.samples > 0 {
            for (series, name) in HOST_SERIES.iter().enumerate() {
                metrics.push((*name, ws.stats(w, series).unwrap_or(Stats::EMPTY)));
            }
            // GPU series in the order they first got a value, as the reference's dict.
            let mut gpu: Vec<(u32, usize)> = (0..GPU_FIELDS.len())
                .filter_map(|i| {
                    let cell = ws.cell(w, HOST_SERIES.len() + i)?;
                    (cell.appended() > 0).then(|| (cell.rank(), i))
                })
                .collect();
            gpu.sort_unstable();
            for (_, i) in gpu {
                let stats = ws.stats(w, HOST_SERIES.len() + i).unwrap_or(Stats::EMPTY);
                metrics.push((GPU_FIELDS[i].1, stats));
            }
        }
        let mut warnings = Vec::new();
        let mut names: Vec<(usize, &'static str)> =
            HOST_SERIES.iter().copied().enumerate().collect();
        names.extend(
            GPU_FIELDS
                .iter()
                .enumerate()
                .map(|(i, f)| (HOST_SERIES.len() + i, f.1)),
        );
        self.approximations(w, &names, &mut warnings);
        let ac_states = states.finish(&mut warnings);
        TelemetrySummary {
            source: String::from(source),
            samples: summary.samples as usize,
            span_s: summary.span_s,
            requested_window: RequestedWindow {
                start: window.start_s,
                stop: window.stop_s,
            },
            sampling_gap_s: summary.sampling_gap_s,
            gaps_over_5s: summary.gaps_over_max as usize,
            metrics: OrderedMap(metrics),
            ac_states,
            whole_gpu_energy_j_over_observed_intervals: summary.energy_j,
            energy_observed_duration_s: summary.energy_observed_duration_s,
            energy_scope: ENERGY_SCOPE,
            warnings,
        }
    }
}

/// The six GPU metrics of an nvidia-smi CSV line, as the reference reads them: exactly 10
/// comma-separated fields, each parsed like Python's `float()`, non-finite values dropped.
pub fn parse_gpu_csv(line: &str) -> [Option<f64>; 6] {
    let mut fields: [&str; 10] = [""; 10];
    let mut count = 0;
    for f in line.split(',') {
        if count == 10 {
            return [None; 6];
        }
        fields[count] = f;
        count += 1;
    }
    if count != 10 {
        return [None; 6];
    }
    let mut out = [None; 6];
    for (slot, (index, _)) in out.iter_mut().zip(GPU_FIELDS) {
        *slot = pynum::parse_py_float(fields[index].as_bytes()).filter(|v| v.is_finite());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use alloc::vec;

    fn row(unix: Num, gpu_csv: &str) -> TelemetryRow<'_> {
        TelemetryRow {
            unix,
            host_available_bytes: Some(Num::Int(100)),
            host_used_bytes: Some(Num::Int(50)),
            host_cpu_percent: None,
            gpu_csv,
            ac_state: None,
        }
    }

    #[test]
    fn gpu_csv_needs_ten_fields() {
        let line = "0, NVIDIA X, 1024, 10, 45, 250.5, 1980, 1593, 99, P0";
        assert_eq!(
            parse_gpu_csv(line),
            [
                Some(1024.0),
                Some(45.0),
                Some(250.5),
                Some(1980.0),
                Some(1593.0),
                Some(99.0)
            ]
        );
        assert_eq!(parse_gpu_csv("1,2,3"), [None; 6]);
        assert_eq!(parse_gpu_csv(&(line.to_owned() + ",x")), [None; 6]);
        assert_eq!(parse_gpu_csv("")[0], None);
        let nan = "0,a,nan,1,[N/A],inf,1,1,1,1";
        assert_eq!(parse_gpu_csv(nan)[..3], [None, None, None]);
    }

    use alloc::borrow::ToOwned;

    /// Naive oracle: filter rows per window, then compute each figure directly.
    #[test]
    fn one_pass_windows_match_per_window_oracle() {
        let mut rng = Rng(3);
        for _ in 0..50 {
            let n = rng.below(60) as usize;
            let mut t = 1000.0;
            let mut rows = Vec::new();
            for _ in 0..n {
                t += [0.5, 1.0, 7.0, 0.0][rng.below(4) as usize];
                let p = rng.unit_f64() * 300.0;
                let csv = if rng.below(5) == 0 {
                    "bad".to_owned()
                } else {
                    alloc::format!("0,g,1,2,3,{p},5,6,7,8")
                };
                rows.push((t, p, csv));
            }
            let windows = [
                Window::ALL,
                Window::inclusive(1005.0, 1030.0),
                Window {
                    start_s: Some(Num::Int(1020)),
                    stop_s: None,
                    stop_exclusive: false,
                },
            ];
            let mut acc = TelemetryAccumulator::new(&windows);
            for (t, _, csv) in &rows {
                acc.push(&row(Num::Float(*t), csv));
            }
            let got = acc.finish("src");
            for (w, s) in windows.iter().zip(&got) {
                let kept: Vec<_> = rows
                    .iter()
                    .filter(|r| w.contains(Num::Float(r.0)))
                    .collect();
                assert_eq!(s.samples, kept.len());
                let power: Vec<(f64, f64)> = kept
                    .iter()
                    .filter(|r| r.2 != "bad")
                    .map(|r| (r.0, r.1))
                    .collect();
                let mut e = 0.0;
                let mut d = 0.0;
                let mut any = false;
                for p in power.windows(2) {
                    let dt = p[1].0 - p[0].0;
                    if dt > 0.0 && dt <= 5.0 {
                        e += dt * (p[0].1 + p[1].1) / 2.0;
                        d += dt;
                        any = true;
                    }
                }
                assert_eq!(
                    s.whole_gpu_energy_j_over_observed_intervals,
                    any.then_some(e)
                );
                assert_eq!(s.energy_observed_duration_s.to_f64(), d);
                let gaps: Vec<f64> = kept.windows(2).map(|p| p[1].0 - p[0].0).collect();
                assert_eq!(s.sampling_gap_s.n, gaps.len() as u64);
                assert_eq!(s.gaps_over_5s, gaps.iter().filter(|g| **g > 5.0).count());
                assert_eq!(
                    s.span_s,
                    (kept.len() >= 2).then(|| Num::Float(kept[kept.len() - 1].0 - kept[0].0))
                );
                if kept.is_empty() {
                    assert!(s.metrics.0.is_empty());
                } else {
                    let names: Vec<_> = s.metrics.0.iter().map(|m| m.0).collect();
                    assert_eq!(
                        &names[..3],
                        [
                            "host_available_bytes",
                            "host_used_bytes",
                            "host_cpu_percent"
                        ]
                    );
                    assert_eq!(names.len(), if power.is_empty() { 3 } else { 9 });
                }
            }
        }
    }

    #[test]
    fn metric_order_follows_first_value_and_int_durations_stay_ints() {
        let mut acc = TelemetryAccumulator::new(&[Window::ALL]);
        acc.push(&row(Num::Int(10), "0,g,x,2,x,100,x,6,x,8"));
        acc.push(&row(Num::Int(12), "0,g,1,2,3,200,5,6,7,8"));
        let s = acc.finish("f").remove(0);
        let names: Vec<_> = s.metrics.0.iter().map(|m| m.0).collect();
        assert_eq!(
            names[3..],
            [
                "gpu_power_w",
                "gpu_mem_clock_mhz",
                "gpu_memory_mib",
                "gpu_temperature_c",
                "gpu_sm_clock_mhz",
                "gpu_utilization_percent"
            ]
        );
        assert_eq!(s.energy_observed_duration_s, Num::Int(2));
        assert_eq!(s.whole_gpu_energy_j_over_observed_intervals, Some(300.0));
        assert_eq!(s.span_s, Some(Num::Int(2)));
        assert_eq!(s.sampling_gap_s.min, Some(Num::Int(2)));
    }

    #[test]
    fn ac_states_dedupe_like_a_python_set_and_sort() {
        let mut acc = TelemetryAccumulator::new(&[Window::ALL]);
        for (i, st) in [
            AcStateRef::Num(Num::Int(1)),
            AcStateRef::Bool(true),
            AcStateRef::Num(Num::Float(0.0)),
            AcStateRef::Bool(false),
            AcStateRef::Num(Num::Float(1.0)),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = row(Num::Int(i as i64), "");
            r.ac_state = Some(st);
            acc.push(&r);
        }
        let s = acc.finish("f").remove(0);
        assert_eq!(
            s.ac_states,
            vec![AcState::Num(Num::Float(0.0)), AcState::Num(Num::Int(1))]
        );
        assert!(s.warnings.is_empty());
    }
}
