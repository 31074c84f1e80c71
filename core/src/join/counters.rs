//! Power and utilization that the trace itself carries, as counter events (`"ph":"C"`), made
//! into a [`Recording`] so that the join's windows (pauses, annotations) read them through the
//! one code path of a recording: the edge-interpolated trapezoid and the verdict rules.
//!
//! Two writers are read ([`counter_sample`]):
//! - PyTorch's profiler (its CUDA counters backend): `pid` the string `"GPU <N> Counters"`
//!   (device N), `name` `"Power (W)"` or `"SM Active (%)"` (utilization), the value under the
//!   empty key, `{"": 212.5}`;
//! - flinch-trace's own `--perfetto` file: `pid` the trace device (an integer), `name`
//!   `"GPU <g> power"` or `"GPU <g> util"` (g the recorded `gpu_index`), `{"W": …}` / `{"%": …}`.
//!
//! `ts` is on the trace's clock like every other event; the samples become Unix ns with the
//! join's alignment once the first pass has ended (`baseTimeNanoseconds` may come after the
//! events). Samples before or after the profiled span are kept: they bound the windows at its
//! edges, as a recording's rows do.
//!
//! # Bad input, counted and stated ([`CounterCounts`]), never used
//! A value that is not a number (a string, `null`, no `args`), a non-finite one (`NaN`,
//! `Infinity`), a `pid` that names no device (`GPU 999 Counters` past the device cap, any other
//! string, a flinch-trace counter on a non-integer `pid`), a sample without a numeric `ts`, and a
//! time the alignment moves past the `i64` range. Samples out of time order (earlier than the
//! latest of their series so far) are counted and kept: each series is sorted at the end
//! (stably, so equal times keep file order, as a recording's are).
//!
//! # Memory
//! At most [`MAX_COUNTER_READINGS`] readings in all (16 bytes each, 64 MiB, the recording's
//! bound) on at most [`MAX_COUNTER_DEVICES`] devices. Past the bound the series are thinned, not
//! refused (the counters are a bonus of the trace, not a file the user chose to join): every
//! series keeps every second reading, and from then on one reading in `stride` (2, 4, …) of
//! each series is kept. A one-hour PM-sampling track at 1 ms (3.6 M samples per metric) with
//! power and utilization on one device is thinned once, to 2 ms. The trapezoid over the kept
//! readings is then an approximation, stated by `thinned_to_every` and a warning. The sort at
//! the end takes a scratch buffer of half the series it sorts.
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use serde::Serialize;

use super::clock::{Alignment, NsDecimal, TsUs};
use super::recording::{Recording, SeriesGpu};
use crate::json::{ArgValue, Event, IdField, NumField};

/// Devices whose counters are kept (later ones are counted).
pub const MAX_COUNTER_DEVICES: usize = 64;
/// Readings kept in all before the series are thinned.
pub const MAX_COUNTER_READINGS: usize = 4 << 20;
/// Device numbers a `"GPU <N> Counters"` pid may name (0 to 255).
pub const MAX_COUNTER_PID_DEVICE: usize = 256;

/// PyTorch's names of the two metrics read.
pub const PYTORCH_POWER: &str = "Power (W)";
/// PyTorch's utilization counter (PM sampling's SM activity).
pub const PYTORCH_UTIL: &str = "SM Active (%)";

/// What a counter measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// GPU power, W.
    Power,
    /// GPU utilization, %.
    Util,
}

/// Who wrote a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// PyTorch's profiler: `pid` `"GPU <N> Counters"`.
    PyTorch,
    /// flinch-trace's `--perfetto`: `pid` the device, `name` `"GPU <g> power"`.
    Flinch {
        /// The recorded GPU the name gives.
        gpu_index: i64,
    },
}

/// One power or utilization sample of the trace, as [`counter_sample`] reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterSample {
    /// Who wrote it.
    pub origin: Origin,
    /// What it measures.
    pub metric: Metric,
    /// The trace device its `pid` names; `None` when it names none.
    pub device: Option<i64>,
    /// `ts`, trace ns.
    pub ts_ns: NumField,
    /// The number in its `args`.
    pub value: ArgValue,
}

/// FNV-1a, as the scanner hashes a string `pid` (`IdField::Hash`): checked against the
/// scanner in the tests.
const fn fnv1a(text: &[u8], len: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < len {
        h ^= text[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
        i += 1;
    }
    h
}

/// The hash of `"GPU <n> Counters"` for each device number: a string `pid` is known to the
/// scanner only by its hash, and a table of 256 turns it back into the device.
const PID_HASHES: [u64; MAX_COUNTER_PID_DEVICE] = {
    let mut table = [0u64; MAX_COUNTER_PID_DEVICE];
    let mut n = 0;
    while n < MAX_COUNTER_PID_DEVICE {
        let mut text = [0u8; 16];
        let head = b"GPU ";
        let tail = b" Counters";
        let mut len = 0;
        while len < head.len() {
            text[len] = head[len];
            len += 1;
        }
        if n >= 100 {
            text[len] = b'0' + (n / 100) as u8;
            len += 1;
        }
        if n >= 10 {
            text[len] = b'0' + (n / 10 % 10) as u8;
            len += 1;
        }
        text[len] = b'0' + (n % 10) as u8;
        len += 1;
        let mut k = 0;
        while k < tail.len() {
            text[len] = tail[k];
            len += 1;
            k += 1;
        }
        table[n] = fnv1a(&text, len);
        n += 1;
    }
    table
};

/// The device a PyTorch counter's `pid` names.
fn pytorch_device(pid: IdField) -> Option<i64> {
    match pid {
        IdField::Hash(h) => PID_HASHES.iter().position(|&x| x == h).map(|n| n as i64),
        _ => None,
    }
}

/// `"GPU <g> power"` / `"GPU <g> util"`: the metric and g.
fn flinch_name(name: &[u8]) -> Option<(Metric, i64)> {
    let rest = name.strip_prefix(b"GPU ")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let g = core::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    match &rest[digits..] {
        b" power" => Some((Metric::Power, g)),
        b" util" => Some((Metric::Util, g)),
        _ => None,
    }
}

/// The power or utilization sample a counter event is, or `None` for any other event (other
/// phases, other counters: clocks, temperature, memory, the host's).
#[inline]
pub fn counter_sample(e: &Event<'_>) -> Option<CounterSample> {
    if e.ph != b"C" {
        return None;
    }
    let name = e.name?;
    let (origin, metric, device) = if name == PYTORCH_POWER.as_bytes() {
        (Origin::PyTorch, Metric::Power, pytorch_device(e.pid))
    } else if name == PYTORCH_UTIL.as_bytes() {
        (Origin::PyTorch, Metric::Util, pytorch_device(e.pid))
    } else {
        let (metric, gpu_index) = flinch_name(name)?;
        let device = match e.pid {
            IdField::Int(d) => Some(d),
            _ => None,
        };
        (Origin::Flinch { gpu_index }, metric, device)
    };
    Some(CounterSample {
        origin,
        metric,
        device,
        ts_ns: e.ts_ns,
        value: e.arg,
    })
}

/// Samples counted and not used, and how the counters were kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CounterCounts {
    /// Values that are not numbers (a string, `null`, an object, no `args`).
    pub non_numeric_values: u64,
    /// `NaN`, `Infinity`, or past the `f64` range.
    pub non_finite_values: u64,
    /// Samples whose `pid` names no device.
    pub without_device: u64,
    /// Samples without a numeric `ts`.
    pub without_ts: u64,
    /// Samples earlier than the latest of their series so far (kept, sorted).
    pub out_of_order: u64,
    /// Samples of devices past the first [`MAX_COUNTER_DEVICES`].
    pub devices_past_cap: u64,
    /// Samples whose Unix time leaves the `i64` range of ns.
    pub out_of_range: u64,
    /// Samples left out by thinning (past [`MAX_COUNTER_READINGS`]).
    pub thinned_out: u64,
}

#[derive(Clone, Debug, Default)]
struct Series {
    v: Vec<(i64, f64)>,
    latest: Option<i64>,
    sorted: bool,
    /// Samples seen since the last thinning (for the stride).
    seen: u64,
    /// Samples kept in all (before thinning) and seen.
    taken: u64,
}

#[derive(Clone, Debug)]
struct Track {
    device: i64,
    origin: Origin,
    power: Series,
    util: Series,
}

/// The first pass's collector of the trace's power and utilization counters.
#[derive(Clone, Debug)]
pub struct TraceCounters {
    tracks: Vec<Track>,
    readings: usize,
    max_readings: usize,
    stride: u64,
    counts: CounterCounts,
}

impl Default for TraceCounters {
    fn default() -> Self {
        TraceCounters::new(MAX_COUNTER_READINGS)
    }
}

impl TraceCounters {
    /// A collector that thins past `max_readings` (at least 2).
    pub fn new(max_readings: usize) -> TraceCounters {
        TraceCounters {
            tracks: Vec::new(),
            readings: 0,
            max_readings: max_readings.max(2),
            stride: 1,
            counts: CounterCounts::default(),
        }
    }

    /// Adds one sample.
    pub fn add(&mut self, s: &CounterSample) {
        let Some(device) = s.device else {
            self.counts.without_device += 1;
            return;
        };
        let NumField::Ns(t) = s.ts_ns else {
            self.counts.without_ts += 1;
            return;
        };
        let v = match s.value {
            ArgValue::Number(v) => v,
            ArgValue::NotFinite => {
                self.counts.non_finite_values += 1;
                return;
            }
            ArgValue::NotNumber | ArgValue::Missing => {
                self.counts.non_numeric_values += 1;
                return;
            }
        };
        let k = match self.tracks.iter().position(|t| t.device == device) {
            Some(k) => k,
            None if self.tracks.len() < MAX_COUNTER_DEVICES => {
                self.tracks.push(Track {
                    device,
                    origin: s.origin,
                    power: Series {
                        sorted: true,
                        ..Series::default()
                    },
                    util: Series {
                        sorted: true,
                        ..Series::default()
                    },
                });
                self.tracks.len() - 1
            }
            None => {
                self.counts.devices_past_cap += 1;
                return;
            }
        };
        let track = &mut self.tracks[k];
        let series = match s.metric {
            Metric::Power => &mut track.power,
            Metric::Util => &mut track.util,
        };
        if series.latest.is_some_and(|l| t < l) {
            self.counts.out_of_order += 1;
            series.sorted = false;
        }
        series.latest = Some(series.latest.map_or(t, |l| l.max(t)));
        series.taken += 1;
        let keep = series.seen.is_multiple_of(self.stride);
        series.seen += 1;
        if !keep {
            self.counts.thinned_out += 1;
            return;
        }
        series.v.push((t, v));
        self.readings += 1;
        if self.readings > self.max_readings {
            self.thin();
        }
    }

    /// Halves every series (each keeps its readings 0, 2, 4, … in time order) and doubles the
    /// stride of what comes next.
    fn thin(&mut self) {
        self.readings = 0;
        for t in &mut self.tracks {
            for s in [&mut t.power, &mut t.util] {
                sort(s);
                let before = s.v.len();
                let mut i = 0;
                s.v.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.counts.thinned_out += (before - s.v.len()) as u64;
                s.seen = 0;
                self.readings += s.v.len();
            }
        }
        self.stride = self.stride.saturating_mul(2);
    }

    /// Whether any power or utilization counter was seen, used or not.
    pub fn seen(&self) -> bool {
        !self.tracks.is_empty() || self.counts != CounterCounts::default()
    }

    /// The samples on the Unix clock of `align` (`None`: the counters cannot line up with a
    /// recording's clock, and are not used), and what to say of them.
    pub fn finish(mut self, align: Option<Alignment>, max_gap_ns: i64) -> CountersFound {
        let mut devices = Vec::new();
        let mut gpus = Vec::new();
        for t in &mut self.tracks {
            sort(&mut t.power);
            sort(&mut t.util);
            let span = |s: &Series| s.v.first().map(|a| a.0).zip(s.v.last().map(|b| b.0));
            let first = [span(&t.power), span(&t.util)]
                .into_iter()
                .flatten()
                .fold(None::<(i64, i64)>, |a, (x, y)| {
                    Some(a.map_or((x, y), |(p, q)| (p.min(x), q.max(y))))
                });
            let (pid, power_counter, util_counter, recorded) = match t.origin {
                Origin::PyTorch => (
                    CounterPid::Text(format!("GPU {} Counters", t.device)),
                    String::from(PYTORCH_POWER),
                    String::from(PYTORCH_UTIL),
                    None,
                ),
                Origin::Flinch { gpu_index } => (
                    CounterPid::Int(t.device),
                    format!("GPU {gpu_index} power"),
                    format!("GPU {gpu_index} util"),
                    Some(gpu_index),
                ),
            };
            let mut signals = Vec::new();
            if !t.power.v.is_empty() {
                signals.push("power");
            }
            if !t.util.v.is_empty() {
                signals.push("utilization");
            }
            devices.push(CounterDevice {
                pid,
                device: t.device,
                recorded_gpu_index: recorded,
                signals,
                power_counter: (!t.power.v.is_empty()).then_some(power_counter),
                power_samples: t.power.taken,
                util_counter: (!t.util.v.is_empty()).then_some(util_counter),
                util_samples: t.util.taken,
                first_ts_us: first.map(|f| NsDecimal(f.0)),
                last_ts_us: first.map(|f| NsDecimal(f.1)),
            });
            if let Some(a) = align {
                let mut unix = |s: &mut Series| {
                    let before = s.v.len();
                    s.v.retain_mut(|r| match a.unix_ns(r.0) {
                        Some(u) => {
                            r.0 = u;
                            true
                        }
                        None => false,
                    });
                    self.counts.out_of_range += (before - s.v.len()) as u64;
                    core::mem::take(&mut s.v)
                };
                let power = unix(&mut t.power);
                let util = unix(&mut t.util);
                if !power.is_empty() || !util.is_empty() {
                    gpus.push(SeriesGpu {
                        key: t.device,
                        power,
                        util,
                    });
                }
            }
        }
        let recording =
            (!gpus.is_empty()).then(|| Arc::new(Recording::from_series(gpus, max_gap_ns)));
        CountersFound {
            recording,
            aligned: align.is_some(),
            report: TraceCountersReport {
                used: false,
                devices,
                counts: self.counts,
                thinned_to_every: (self.stride > 1).then_some(self.stride),
                comparison: Vec::new(),
            },
        }
    }
}

fn sort(s: &mut Series) {
    if !s.sorted {
        // Stable: equal times keep file order.
        s.v.sort_by_key(|r| r.0);
        s.sorted = true;
    }
}

/// The trace's counters after the first pass.
#[derive(Clone, Debug)]
pub struct CountersFound {
    /// The samples as a recording on the Unix clock, when any was usable and the trace lines
    /// up ([`Alignment`]).
    pub recording: Option<Arc<Recording>>,
    /// The alignment was known.
    pub aligned: bool,
    /// What the output says of them.
    pub report: TraceCountersReport,
}

/// A counter's `pid` as the trace wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CounterPid {
    /// PyTorch's `"GPU <N> Counters"`.
    Text(String),
    /// flinch-trace's device number.
    Int(i64),
}

/// One device's counters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterDevice {
    /// The `pid` read.
    pub pid: CounterPid,
    /// The trace device it names (the pauses' `device`).
    pub device: i64,
    /// The recorded GPU a flinch-trace counter's name gives (absent for PyTorch's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_gpu_index: Option<i64>,
    /// The signals available: `power`, `utilization`.
    pub signals: Vec<&'static str>,
    /// The power counter's name.
    pub power_counter: Option<String>,
    /// Its samples (before any thinning).
    pub power_samples: u64,
    /// The utilization counter's name.
    pub util_counter: Option<String>,
    /// Its samples.
    pub util_samples: u64,
    /// First sample, trace µs (exact).
    pub first_ts_us: Option<TsUs>,
    /// Last sample, trace µs (exact).
    pub last_ts_us: Option<TsUs>,
}

/// The trace's counters compared with the recording over one device's busy span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterComparison {
    /// The trace device.
    pub device: i64,
    /// Its recorded GPU.
    pub gpu_index: i64,
    /// The window: the device's first busy start, trace µs.
    pub start_ts_us: TsUs,
    /// Its last busy end, trace µs.
    pub end_ts_us: TsUs,
    /// The recording's average power over the window, W.
    pub telemetry_avg_power_w: Option<f64>,
    /// The counters' average power over the window, W.
    pub counters_avg_power_w: Option<f64>,
    /// Whether the two differ by more than the tolerance ([`disagree`]).
    pub disagree: bool,
}

/// `"trace_counters"` of the join's output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceCountersReport {
    /// The counters gave the join's energies (no `--telemetry`).
    pub used: bool,
    /// Per device, in order of first appearance: the device mapping used.
    pub devices: Vec<CounterDevice>,
    /// Samples left out, and why.
    #[serde(flatten)]
    pub counts: CounterCounts,
    /// Past the memory bound: one reading in this many kept (absent when all are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinned_to_every: Option<u64>,
    /// With `--telemetry`: the two compared per device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparison: Vec<CounterComparison>,
}

/// Relative tolerance of [`disagree`].
pub const DISAGREE_SHARE: f64 = 0.10;
/// Absolute tolerance of [`disagree`], W.
pub const DISAGREE_W: f64 = 5.0;

/// Whether two average powers over one window differ by more than 10 % of the recording's or
/// 5 W, whichever is more.
pub fn disagree(telemetry_w: f64, counters_w: f64) -> bool {
    (telemetry_w - counters_w).abs() > (DISAGREE_SHARE * telemetry_w.abs()).max(DISAGREE_W)
}

impl TraceCountersReport {
    /// The join's warnings of these counters.
    pub fn warnings(&self, out: &mut Vec<String>) {
        let c = &self.counts;
        let bad = [
            (c.non_numeric_values, "have a value that is not a number"),
            (c.non_finite_values, "have a value that is not finite"),
            (c.without_device, "have a pid that names no device"),
            (c.without_ts, "have no numeric ts"),
            (
                c.devices_past_cap,
                "are of devices past the first 64 with counters",
            ),
            (c.out_of_range, "leave the i64 range of Unix ns"),
        ];
        for (n, why) in bad {
            if n > 0 {
                out.push(format!(
                    "{n} of the trace's power/utilization counter samples {why}: not used"
                ));
            }
        }
        if c.out_of_order > 0 {
            out.push(format!(
                "{} of the trace's counter samples are out of time order: sorted before use",
                c.out_of_order
            ));
        }
        if let Some(k) = self.thinned_to_every {
            out.push(format!(
                "the trace's counters hold more than {MAX_COUNTER_READINGS} readings: one in {k} kept, so their energies are approximate"
            ));
        }
        for d in self.comparison.iter().filter(|d| d.disagree) {
            out.push(format!(
                "device {}: the recording (GPU {}) averages {:.1} W and the trace's counters {:.1} W over its busy span: they differ by more than 10% or 5 W (the recording's figures are used)",
                d.device,
                d.gpu_index,
                d.telemetry_avg_power_w.unwrap_or(f64::NAN),
                d.counters_avg_power_w.unwrap_or(f64::NAN)
            ));
        }
    }
}

#[cfg(test)]
mod tests;
