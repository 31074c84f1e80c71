//! The compute / waiting / mixed verdict and its evidence (docs/numerics.md, "The verdict").
//!
//! Signals, each with how well it resolves a window of the given length:
//! - `power_above_idle_floor`: share of the window's time with power above the GPU's busy
//!   threshold (idle floor = the recording's 5th percentile power, threshold = floor +
//!   max(10 W, 20% of (p99 − floor))). Resolution: unresolved below two sample intervals;
//!   coarse below 1 s unless the power is the instantaneous reading (NVML field 186), because
//!   `nvmlDeviceGetPowerUsage` is a 1 s average on Ampere and newer.
//! - `gpu_util`: the time-weighted NVML utilization, which is itself the share of time a kernel
//!   ran over the last 1/6 s to 1 s. Unresolved below 1/6 s, coarse below 1 s.
//! - `energy_counter` (evidence only, not a busy share): updates every ~10–100 ms, so each edge
//!   carries ±1 update; unresolved below 100 ms.
//!
//! The verdict uses the best-resolving busy signals (good ones if any, else coarse ones, then it
//! is not confident): `compute` when every such share is ≥ 0.7, `waiting` when every one is
//! ≤ 0.3, `mixed` otherwise. With no usable signal there is no verdict, only a warning.
//!
//! [`gpu_signals`], [`choose`] and [`combine_flags`] decide without allocating (the fixed-memory
//! analyzer uses them alone); [`Verdict`] adds the evidence lists and warnings (`alloc`).
#[cfg(feature = "alloc")]
use alloc::string::{String, ToString};
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

#[cfg(feature = "alloc")]
use super::GpuSummary;
use super::acc::{GpuAcc, POWER_BINS, bin_edges};

/// Which NVML reading fills `gpu_power_W`: `instant`, `average` or `unknown` in JSON (the
/// sidecar's `gpu_power_w_source`, the analyzer options) and on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum PowerSource {
    /// NVML field 186, instantaneous.
    Instant,
    /// `nvmlDeviceGetPowerUsage` / field 185, a 1 s average on Ampere and newer.
    Average,
    /// Not recorded (e.g. a file from the reference sampler, which uses the average).
    #[default]
    Unknown,
}

/// One signal's evidence.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Signal {
    /// `power_above_idle_floor`, `gpu_util` or `energy_counter`.
    pub name: &'static str,
    /// Share of the window the signal says the GPU was busy (null for the counter).
    pub busy_share: Option<f64>,
    /// `good`, `coarse` or `unresolved`.
    pub resolution: &'static str,
    /// Why.
    pub note: &'static str,
    /// For the power signal: power above this counts as busy, W (see the GPU's idle floor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_w: Option<f64>,
}

/// A verdict with its evidence.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Verdict {
    /// `compute`, `waiting` or `mixed`; null when no signal resolves the window.
    pub verdict: Option<&'static str>,
    /// Whether it rests on signals that resolve a window of this length well.
    pub confident: bool,
    /// Signals used for the verdict.
    pub used: Vec<&'static str>,
    /// Every signal with its resolution.
    pub signals: Vec<Signal>,
    /// Warnings (window too short, repeated readings, low coverage).
    pub warnings: Vec<String>,
}

#[cfg(feature = "alloc")]
pub(crate) struct Context<'a> {
    pub gpus: &'a [GpuSummary],
    pub source: PowerSource,
    pub max_gap_ns: i64,
}

/// Share of the histogram's time above `threshold_w` (linear within the bin that holds it).
fn share_above(hist: &[f32; POWER_BINS], threshold_w: f64) -> Option<f64> {
    let total: f64 = hist.iter().map(|&x| x as f64).sum();
    if total <= 0.0 {
        return None;
    }
    let mut above = 0.0;
    for (i, &ns) in hist.iter().enumerate() {
        let (lo, hi) = bin_edges(i);
        let ns = ns as f64;
        if lo >= threshold_w {
            above += ns;
        } else if hi > threshold_w {
            above += ns * (hi - threshold_w) / (hi - lo);
        }
    }
    Some((above / total).clamp(0.0, 1.0))
}

fn decide(shares: &[f64]) -> &'static str {
    if shares.iter().all(|&s| s >= 0.7) {
        "compute"
    } else if shares.iter().all(|&s| s <= 0.3) {
        "waiting"
    } else {
        "mixed"
    }
}

/// The three signals of one GPU over the window `[t0, t1]`, from its accumulator and its
/// recording-level busy threshold and mean power interval.
pub(crate) fn gpu_signals(
    busy_threshold_w: Option<f64>,
    mean_interval_ms: Option<f64>,
    source: PowerSource,
    a: &GpuAcc,
    t0: i64,
    t1: i64,
) -> [Signal; 3] {
    let dur_s = (t1 - t0).max(0) as f64 / 1e9;
    let interval_s = mean_interval_ms.map(|m| m / 1e3);

    // Power above the idle floor.
    let power_share = busy_threshold_w.and_then(|th| share_above(&a.hist_ns, th));
    let (res, note) = match (power_share, interval_s) {
        (None, _) => ("unresolved", "no power readings cover the window"),
        (Some(_), Some(dt)) if dur_s < 2.0 * dt => (
            "unresolved",
            "the window is shorter than two power sample intervals",
        ),
        (Some(_), _) if source == PowerSource::Instant => (
            "good",
            "instantaneous power (NVML field 186); the sensor samples ~25% of the runtime on A100/H100",
        ),
        (Some(_), _) if dur_s < 1.0 && source == PowerSource::Average => (
            "coarse",
            "power is a 1 s average (nvmlDeviceGetPowerUsage on Ampere and newer): it blurs a sub-second window",
        ),
        (Some(_), _) if dur_s < 1.0 => (
            "coarse",
            "power source unknown: if it is the 1 s average (nvmlDeviceGetPowerUsage on Ampere and newer), it blurs a sub-second window",
        ),
        (Some(_), _) => (
            "good",
            "the window is at least 1 s, longer than the power averaging",
        ),
    };
    let power = Signal {
        name: "power_above_idle_floor",
        busy_share: power_share,
        resolution: res,
        note,
        threshold_w: busy_threshold_w,
    };

    // Utilization.
    let util_share = (a.util.covered_ns > 0)
        .then(|| (a.util.integral / a.util.covered_ns as f64 / 100.0).clamp(0.0, 1.0));
    let (res, note) = match util_share {
        None => ("unresolved", "no utilization readings cover the window"),
        Some(_) if dur_s < 1.0 / 6.0 => (
            "unresolved",
            "NVML utilization covers the last 1/6 s to 1 s: longer than this window",
        ),
        Some(_) if dur_s < 1.0 => (
            "coarse",
            "NVML utilization covers the last 1/6 s to 1 s, so it lags and smooths a sub-second window",
        ),
        Some(_) => ("good", "window is at least 1 s"),
    };
    let util = Signal {
        name: "gpu_util",
        busy_share: util_share,
        resolution: res,
        note,
        threshold_w: None,
    };

    // Energy counter (evidence only).
    let (res, note) = if a.counter.covered_ns == 0 {
        ("unresolved", "no energy counter recorded")
    } else if dur_s < 0.1 {
        (
            "unresolved",
            "the counter updates every ~10-100 ms: a window this short can read 0",
        )
    } else if dur_s < 1.0 {
        (
            "coarse",
            "the counter updates every ~10-100 ms: each edge carries up to one update period",
        )
    } else {
        (
            "good",
            "each edge carries up to one update period (~10-100 ms)",
        )
    };
    let counter = Signal {
        name: "energy_counter",
        busy_share: None,
        resolution: res,
        note,
        threshold_w: None,
    };
    [power, util, counter]
}

/// The signals a verdict rests on: those that resolve the window well if any, else the coarse
/// ones (then it is not confident).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Choice {
    /// `compute`, `waiting` or `mixed`; `None` when no signal resolves the window.
    pub verdict: Option<&'static str>,
    /// Whether the chosen signals resolve the window well (false without a verdict).
    pub confident: bool,
    /// The chosen signals (name, busy share), in signal order; `n` of them.
    pub used: [(&'static str, f64); 3],
    /// How many of `used` are set.
    pub n: usize,
}

/// Picks the best-resolving signals with a busy share and decides.
pub(crate) fn choose(signals: &[Signal; 3]) -> Choice {
    let pick = |want: &str| {
        let mut c = Choice::default();
        for s in signals.iter().filter(|s| s.resolution == want) {
            if let Some(b) = s.busy_share {
                c.used[c.n] = (s.name, b);
                c.n += 1;
            }
        }
        c
    };
    let good = pick("good");
    let (mut c, confident) = if good.n > 0 {
        (good, true)
    } else {
        (pick("coarse"), false)
    };
    if c.n > 0 {
        let mut shares = [0.0; 3];
        for (s, u) in shares.iter_mut().zip(&c.used[..c.n]) {
            *s = u.1;
        }
        c.verdict = Some(decide(&shares[..c.n]));
    }
    c.confident = c.verdict.is_some() && confident;
    c
}

/// The verdict over several GPUs from each one's (verdict, confident): theirs when they agree,
/// else `mixed`; confident only when all are. One GPU: its own.
pub(crate) fn combine_flags(
    vs: impl Iterator<Item = (Option<&'static str>, bool)>,
) -> (Option<&'static str>, bool) {
    let mut verdict = None;
    let mut all_confident = true;
    for (v, confident) in vs {
        all_confident &= confident;
        verdict = match (verdict, v) {
            (None, d) => d,
            (Some(a), Some(b)) if a != b => Some("mixed"),
            (a, _) => a,
        };
    }
    (verdict, verdict.is_some() && all_confident)
}

#[cfg(feature = "alloc")]
impl Context<'_> {
    pub(crate) fn gpu_verdict(&self, i: usize, a: &GpuAcc, t0: i64, t1: i64) -> Verdict {
        let g = &self.gpus[i];
        let dur_ns = (t1 - t0).max(0) as f64;
        let dur_s = dur_ns / 1e9;
        let signals = gpu_signals(
            g.busy_threshold_w,
            g.mean_interval_ms,
            self.source,
            a,
            t0,
            t1,
        );
        let c = choose(&signals);
        let verdict = c.verdict;
        let mut warnings = Vec::new();
        if verdict.is_none() {
            warnings.push(alloc::format!("window of {dur_s:.3} s is too short for the recorded signals to resolve: no verdict"));
        } else if !c.confident {
            warnings.push(alloc::format!("window of {dur_s:.3} s is shorter than the signals resolve well: verdict is indicative"));
        }
        if a.power.integral > 0.0 && a.energy_on_repeats_j / a.power.integral > 0.5 {
            warnings
                .push("more than half of the energy rests on repeated power readings".to_string());
        }
        if a.power.skipped_ns > 0 {
            warnings.push(alloc::format!(
                "{:.3} s of the window lies in gaps longer than {} ms between power readings (skipped)",
                a.power.skipped_ns as f64 / 1e9,
                self.max_gap_ns / 1_000_000
            ));
        }
        if dur_ns > 0.0
            && (a.power.covered_ns as f64) < 0.9 * dur_ns
            && a.power.covered_ns + a.power.skipped_ns > 0
        {
            warnings.push(alloc::format!(
                "power readings cover only {:.0}% of the window",
                100.0 * a.power.covered_ns as f64 / dur_ns
            ));
        }
        Verdict {
            verdict,
            confident: c.confident,
            used: c.used[..c.n].iter().map(|u| u.0).collect(),
            signals: signals.to_vec(),
            warnings,
        }
    }
}

/// The verdict over several GPUs: theirs when they agree, else `mixed`; confident only when all are.
#[cfg(feature = "alloc")]
pub(crate) fn combine<'a>(vs: impl Iterator<Item = &'a Verdict>) -> Verdict {
    let vs: Vec<&Verdict> = vs.collect();
    if vs.len() == 1 {
        return vs[0].clone();
    }
    let (verdict, confident) = combine_flags(vs.iter().map(|v| (v.verdict, v.confident)));
    let decided = vs.iter().filter(|v| v.verdict.is_some()).count();
    let mut warnings = Vec::new();
    if verdict.is_none() {
        warnings.push("no GPU's signals resolve this window: no verdict".to_string());
    }
    if decided < vs.len() && verdict.is_some() {
        warnings.push("some GPUs' signals do not resolve this window".to_string());
    }
    Verdict {
        verdict,
        confident,
        used: Vec::new(),
        signals: Vec::new(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::super::acc::power_bin;
    use super::*;

    #[test]
    fn share_above_threshold() {
        let mut h = [0f32; POWER_BINS];
        h[power_bin(50.0)] = 1.0;
        h[power_bin(400.0)] = 3.0;
        let s = share_above(&h, 150.0).unwrap();
        assert!((s - 0.75).abs() < 1e-9, "{s}");
        assert_eq!(share_above(&[0f32; POWER_BINS], 1.0), None);
        assert_eq!(decide(&[0.9, 0.7]), "compute");
        assert_eq!(decide(&[0.1, 0.2]), "waiting");
        assert_eq!(decide(&[0.1, 0.9]), "mixed");
    }
}
