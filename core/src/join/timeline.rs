//! What the page draws of a finished join: busy spans, pauses and power on one axis.
use alloc::vec;
use alloc::vec::Vec;
use serde::Serialize;

use super::{JoinReport, Recording};

/// What the page draws: each trace device's busy span and listed pauses, and each recorded
/// GPU's power, on one axis (trace `ts`, µs).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Timeline {
    /// Start of the axis, trace µs: the trace's first event (the recording's first sample when
    /// the trace has no timed event).
    pub t0_us: f64,
    /// End of the axis, trace µs: the trace's last event end (or the recording's last sample).
    pub t1_us: f64,
    /// Per trace device.
    pub devices: Vec<TimelineDevice>,
    /// Per recorded GPU (per trace device for the trace's counters).
    pub gpus: Vec<TimelinePower>,
    /// Where the power comes from: `"telemetry"` (a recording) or `"trace_counters"` (the
    /// trace's own power counters, keyed by trace device: `gpu_index` is then the device).
    pub power_source: &'static str,
}

/// One trace device on the timeline.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelineDevice {
    /// The trace device.
    pub device: i64,
    /// First busy start and last busy end, trace µs.
    pub busy_us: [f64; 2],
    /// Listed pauses, `[start, end]` trace µs.
    pub pauses_us: Vec<[f64; 2]>,
    /// Pauses found but not listed (shown as busy).
    pub pauses_not_listed: u64,
}

/// One recorded GPU's power, bucketed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelinePower {
    /// The recorded GPU.
    pub gpu_index: i64,
    /// `[t_us, min_w, max_w]` per non-empty bucket, `t_us` the bucket's middle.
    pub power: Vec<[f64; 3]>,
    /// Highest reading, W.
    pub max_w: f64,
}

impl Timeline {
    /// The timeline of a finished join, with at most `buckets` power points per GPU. `None`
    /// without an alignment.
    pub fn new(r: &JoinReport, rec: &Recording, buckets: usize) -> Option<Timeline> {
        let a = r.alignment.as_ref()?;
        let to_us = |unix: i64| (i128::from(unix) - i128::from(a.offset_ns)) as f64 / 1e3;
        // The trace's span (the recording's when the trace has no timed event): a recording
        // that lies elsewhere would squeeze the trace to a line.
        let (lo, hi) = match (a.trace_start_unix_ns, a.trace_end_unix_ns) {
            (Some(s), Some(e)) => (to_us(s), to_us(e)),
            _ => {
                let (s, e) = rec.span_ns?;
                (to_us(s), to_us(e))
            }
        };
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let devices = r
            .pause_devices
            .iter()
            .map(|d| TimelineDevice {
                device: d.device,
                busy_us: [d.busy_start_ts_us.as_f64(), d.busy_end_ts_us.as_f64()],
                pauses_us: r
                    .pauses
                    .iter()
                    .filter(|p| p.device == d.device)
                    .map(|p| {
                        [
                            p.start_ts_us.as_f64(),
                            p.start_ts_us.as_f64() + p.duration_ms * 1e3,
                        ]
                    })
                    .collect(),
                pauses_not_listed: d.pauses_found - d.pauses_listed,
            })
            .collect();
        let n = buckets.max(1);
        let width = (hi - lo) / n as f64;
        let gpus = rec
            .gpu_slots()
            .map(|slot| {
                let mut b: Vec<Option<(f64, f64)>> = vec![None; n];
                let mut max_w = 0.0f64;
                for &(t, w) in rec.power_readings(slot) {
                    let x = to_us(t);
                    if !(lo..=hi).contains(&x) {
                        continue;
                    }
                    let k = (((x - lo) / width) as usize).min(n - 1);
                    let e = b[k].get_or_insert((w, w));
                    e.0 = e.0.min(w);
                    e.1 = e.1.max(w);
                    max_w = max_w.max(w);
                }
                TimelinePower {
                    gpu_index: rec.gpu_index(slot),
                    power: b
                        .iter()
                        .enumerate()
                        .filter_map(|(k, v)| {
                            v.map(|(mn, mx)| [lo + (k as f64 + 0.5) * width, mn, mx])
                        })
                        .collect(),
                    max_w,
                }
            })
            .collect();
        Some(Timeline {
            t0_us: lo,
            t1_us: hi,
            devices,
            gpus,
            power_source: match r.power_source {
                Some("trace_counters") => "trace_counters",
                _ => "telemetry",
            },
        })
    }
}
