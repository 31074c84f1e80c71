//! Host telemetry accumulator for `flinch-trace summarize` (docs/cli.md, "summarize").
//!
//! Rows of a `telemetry.jsonl` go in once, in file order; every time window (the whole run, the
//! sustained phase, its first and last five minutes, its last 60 s) is accumulated in the same
//! pass, and [`TelemetryAccumulator::finish`] gives one [`TelemetrySummary`] per window, shaped
//! exactly like the reference's `telemetry_summary`. The caller (native) parses the JSON and
//! decides which rows are usable; this module does all the arithmetic.
//!
//! Memory: values are kept exactly (the statistics need them all); vectors grow geometrically,
//! so the allocation count is logarithmic in the row count, never one per row. The distinct AC
//! states kept are bounded by [`MAX_AC_STATES`]. Needs the `alloc` feature.
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

pub mod pynum;

use crate::energy::ReferenceTrapezoid;
use crate::stats::stats_in_place;
pub use crate::stats::{Num, Stats};

/// Largest sampling gap, in seconds, that the energy trapezoid bridges (reference rule).
pub const MAX_ENERGY_GAP_S: i64 = 5;

/// Distinct `power.ACLineStatus` values kept per window; more are counted in a warning.
pub const MAX_AC_STATES: usize = 64;

/// The reference's fixed description of the energy figure.
pub const ENERGY_SCOPE: &str = "Whole NVIDIA GPU incl. other processes; trapezoids skip gaps >5s; not whole-system, CPU or NPU energy.";

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

/// A time window over `unix`, both ends inclusive like the reference (`start <= unix <= stop`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Lower bound, or none.
    pub start: Option<Num>,
    /// Upper bound, or none.
    pub stop: Option<Num>,
}

impl Window {
    /// The whole run: no bounds.
    pub const ALL: Window = Window {
        start: None,
        stop: None,
    };

    fn contains(&self, unix: Num) -> bool {
        self.start.is_none_or(|s| pynum::ge(unix, s))
            && self.stop.is_none_or(|s| pynum::le(unix, s))
    }
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
#[derive(Clone, Debug, Default)]
pub struct Metrics(pub Vec<(&'static str, Stats)>);

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Accumulates one window.
#[derive(Debug)]
struct WindowAcc {
    window: Window,
    samples: usize,
    first_unix: Option<Num>,
    last_unix: Option<Num>,
    gaps: Vec<Num>,
    gaps_over_5s: usize,
    host: [Vec<Num>; 3],
    gpu: [Vec<Num>; 6],
    /// Order in which GPU series got their first value (indices into GPU_FIELDS).
    gpu_order: [u8; 6],
    gpu_seen: usize,
    energy: ReferenceTrapezoid,
    /// Whether every power timestamp was an integer (then the observed duration is one).
    power_times_all_int: bool,
    ac_states: Vec<AcState>,
    ac_states_dropped: usize,
}

impl WindowAcc {
    fn new(window: Window) -> Self {
        WindowAcc {
            window,
            samples: 0,
            first_unix: None,
            last_unix: None,
            gaps: Vec::new(),
            gaps_over_5s: 0,
            host: Default::default(),
            gpu: Default::default(),
            gpu_order: [0; 6],
            gpu_seen: 0,
            energy: ReferenceTrapezoid::new(MAX_ENERGY_GAP_S as f64),
            power_times_all_int: true,
            ac_states: Vec::new(),
            ac_states_dropped: 0,
        }
    }

    fn push(&mut self, row: &TelemetryRow<'_>, gpu_values: &[Option<f64>; 6]) {
        self.samples += 1;
        if let Some(prev) = self.last_unix {
            let gap = pynum::sub(row.unix, prev);
            if pynum::gt(gap, Num::Int(MAX_ENERGY_GAP_S)) {
                self.gaps_over_5s += 1;
            }
            self.gaps.push(gap);
        } else {
            self.first_unix = Some(row.unix);
        }
        self.last_unix = Some(row.unix);
        let host = [
            row.host_available_bytes,
            row.host_used_bytes,
            row.host_cpu_percent,
        ];
        for (series, value) in self.host.iter_mut().zip(host) {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                series.push(v);
            }
        }
        for (i, value) in gpu_values.iter().enumerate() {
            let Some(v) = *value else { continue };
            if self.gpu[i].is_empty() && !self.gpu_order[..self.gpu_seen].contains(&(i as u8)) {
                self.gpu_order[self.gpu_seen] = i as u8;
                self.gpu_seen += 1;
            }
            self.gpu[i].push(Num::Float(v));
            if i == POWER_FIELD {
                self.push_power(row.unix, v);
            }
        }
        if let Some(state) = row.ac_state {
            self.push_ac_state(state);
        }
    }

    /// The reference's trapezoid: `(b0-a0)*(a1+b1)/2` summed in order over `0 < b0-a0 <= 5`.
    fn push_power(&mut self, unix: Num, power_w: f64) {
        self.power_times_all_int &= matches!(unix, Num::Int(_));
        self.energy.push(unix.to_f64(), power_w);
    }

    /// `energy_observed_duration_s`: Python sums integer differences as an `int`. An f64 sum
    /// of integers below 2^53 is exact, so it converts back without loss.
    fn observed_duration_s(&self) -> Num {
        let s = self.energy.observed_s();
        if self.power_times_all_int && s.abs() < 9_007_199_254_740_992.0 {
            Num::Int(s as i64)
        } else {
            Num::Float(s)
        }
    }

    fn push_ac_state(&mut self, state: AcStateRef<'_>) {
        if self.ac_states.iter().any(|s| s.py_eq(&state)) {
            return;
        }
        if self.ac_states.len() == MAX_AC_STATES {
            self.ac_states_dropped += 1;
            return;
        }
        self.ac_states.push(match state {
            AcStateRef::Null => AcState::Null,
            AcStateRef::Bool(b) => AcState::Bool(b),
            AcStateRef::Num(n) => AcState::Num(n),
            AcStateRef::Str(s) => AcState::Str(String::from(s)),
        });
    }

    fn finish(mut self, source: &str) -> TelemetrySummary {
        let mut metrics = Vec::new();
        if self.samples > 0 {
            let names = [
                "host_available_bytes",
                "host_used_bytes",
                "host_cpu_percent",
            ];
            for (name, series) in names.iter().zip(self.host.iter_mut()) {
                metrics.push((*name, stats_in_place(series)));
            }
            for &i in &self.gpu_order[..self.gpu_seen] {
                let i = i as usize;
                metrics.push((GPU_FIELDS[i].1, stats_in_place(&mut self.gpu[i])));
            }
        }
        let mut warnings = Vec::new();
        let mixed = self
            .ac_states
            .windows(2)
            .any(|w| w[0].rank() != w[1].rank());
        self.ac_states.sort_by(|a, b| {
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
        if self.ac_states_dropped > 0 {
            warnings.push(alloc::format!(
                "{} further distinct ac_states beyond {} not listed",
                self.ac_states_dropped,
                MAX_AC_STATES
            ));
        }
        let energy_j = self.energy.energy_j();
        let energy_observed_duration_s = self.observed_duration_s();
        TelemetrySummary {
            source: String::from(source),
            samples: self.samples,
            span_s: match (self.first_unix, self.last_unix) {
                (Some(a), Some(b)) if self.samples >= 2 => Some(pynum::sub(b, a)),
                _ => None,
            },
            requested_window: RequestedWindow {
                start: self.window.start,
                stop: self.window.stop,
            },
            sampling_gap_s: stats_in_place(&mut self.gaps),
            gaps_over_5s: self.gaps_over_5s,
            metrics: Metrics(metrics),
            ac_states: self.ac_states,
            whole_gpu_energy_j_over_observed_intervals: energy_j,
            energy_observed_duration_s,
            energy_scope: ENERGY_SCOPE,
            warnings,
        }
    }
}

/// Summarizes one telemetry file over several windows in a single pass.
#[derive(Debug)]
pub struct TelemetryAccumulator {
    windows: Vec<WindowAcc>,
}

impl TelemetryAccumulator {
    /// An accumulator for `windows` (the first is usually [`Window::ALL`]).
    pub fn new(windows: &[Window]) -> Self {
        TelemetryAccumulator {
            windows: windows.iter().map(|w| WindowAcc::new(*w)).collect(),
        }
    }

    /// Feeds one row, in file order, to every window that contains its `unix`.
    pub fn push(&mut self, row: &TelemetryRow<'_>) {
        let gpu_values = parse_gpu_csv(row.gpu_csv);
        for w in &mut self.windows {
            if w.window.contains(row.unix) {
                w.push(row, &gpu_values);
            }
        }
    }

    /// One summary per window, in the order the windows were given.
    pub fn finish(self, source: &str) -> Vec<TelemetrySummary> {
        self.windows.into_iter().map(|w| w.finish(source)).collect()
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
        *slot = pynum::parse_py_float(fields[index]).filter(|v| v.is_finite());
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
                Window {
                    start: Some(Num::Float(1005.0)),
                    stop: Some(Num::Float(1030.0)),
                },
                Window {
                    start: Some(Num::Int(1020)),
                    stop: None,
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
