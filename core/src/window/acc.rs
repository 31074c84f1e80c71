//! Per-window accumulators: the reference-exact samples-only figures, edge-clipped integrals of
//! power, utilization and energy counters (the [`crate::energy`] accumulators), sample health and
//! a time-in-power histogram.

use crate::energy::{WindowCounter, WindowIntegral, diff_f64};

/// Bins of the per-window time-in-power histogram (geometric, see [`power_bin`]). It weighs each
/// bin by time (ns, as f32), not by a count of readings, and is read once for the share of time
/// above a threshold known only at the end: not a quantile, so not the quantile sketch.
pub const POWER_BINS: usize = 48;
const BIN_LO_W: f64 = 8.0;
const BIN_RATIO: f64 = 1.12;

/// Lower edges of bins 1.. (bin 0 is everything below 8 W).
const EDGES: [f64; POWER_BINS] = {
    let mut e = [0.0; POWER_BINS];
    let mut i = 1;
    let mut lo = BIN_LO_W;
    while i < POWER_BINS {
        e[i] = lo;
        lo *= BIN_RATIO;
        i += 1;
    }
    e
};

/// The histogram bin of a power value: bin 0 below 8 W, then bins growing by 12%
/// (8 W .. ~1.8 kW), the last bin open-ended.
pub fn power_bin(power_w: f64) -> usize {
    if power_w.is_nan() || power_w < BIN_LO_W {
        return 0;
    }
    // The last edge not above the value.
    EDGES[1..].partition_point(|&e| e <= power_w)
}

/// Lower and upper edge of bin `i` (the last bin's upper edge is its lower edge × ratio).
pub fn bin_edges(i: usize) -> (f64, f64) {
    if i == 0 {
        return (0.0, BIN_LO_W);
    }
    let lo = EDGES[i];
    (
        lo,
        if i + 1 < POWER_BINS {
            EDGES[i + 1]
        } else {
            lo * BIN_RATIO
        },
    )
}

/// The reference's samples-only trapezoid (its quirks: docs/cli.md, "analyze"): samples with t0 ≤ t ≤ t1 and a
/// parseable power, in time order; energy summed from 0.0; utilization = mean of the first
/// sample of each consecutive pair where it parses.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefAcc {
    /// The previous sample (t ns, W, util %), once `samples` > 0 (plain fields, not an
    /// `Option` of them: a new accumulator is all zero bytes, a static of it costs no flash).
    prev_t_ns: i64,
    prev_power_w: f64,
    prev_util_pct: Option<f64>,
    /// Energy, J.
    pub energy_j: f64,
    util_sum: f64,
    util_n: u64,
    /// Samples counted.
    pub samples: u64,
}

impl RefAcc {
    /// Nothing added yet (`Default`, usable in a `const`).
    pub const NEW: RefAcc = RefAcc {
        prev_t_ns: 0,
        prev_power_w: 0.0,
        prev_util_pct: None,
        energy_j: 0.0,
        util_sum: 0.0,
        util_n: 0,
        samples: 0,
    };

    /// Adds one sample (already known to be in the window, power parsed).
    pub fn add(&mut self, t_ns: i64, power_w: f64, util_pct: Option<f64>) {
        if self.samples > 0 {
            let dt = diff_f64(t_ns, self.prev_t_ns) / 1e9;
            self.energy_j += 0.5 * (self.prev_power_w + power_w) * dt;
            if let Some(u) = self.prev_util_pct {
                self.util_sum += u;
                self.util_n += 1;
            }
        }
        (self.prev_t_ns, self.prev_power_w, self.prev_util_pct) = (t_ns, power_w, util_pct);
        self.samples += 1;
    }

    /// Energy when at least two samples were seen (else the reference prints "(n/a)").
    pub fn energy(&self) -> Option<f64> {
        (self.samples >= 2).then_some(self.energy_j)
    }

    /// Mean utilization of the first sample of each pair, when any parsed.
    pub fn avg_util(&self) -> Option<f64> {
        (self.samples >= 2 && self.util_n > 0).then(|| self.util_sum / self.util_n as f64)
    }
}

/// Edge-clipped accumulation of one GPU over one window.
#[derive(Clone, Debug)]
pub struct GpuAcc {
    /// Reference-exact figures for this GPU alone.
    pub reference: RefAcc,
    /// Samples with t0 ≤ t ≤ t1 (any field).
    pub samples: u64,
    /// Of them, power readings equal to the previous power reading of this GPU.
    pub repeated: u64,
    /// Edge-interpolated power integral: energy, J (intervals longer than the max gap skipped
    /// and their window time counted; the longest interval overlapping the window).
    pub power: WindowIntegral,
    /// Energy of the intervals that end on a repeated reading, J.
    pub energy_on_repeats_j: f64,
    /// Edge-interpolated utilization integral, %·ns.
    pub util: WindowIntegral,
    /// NVML counter energy, mJ (pro-rated at the edges; decreases are driver reloads, skipped).
    pub counter: WindowCounter,
    /// Sum of SM clock readings in the window, MHz, and their count.
    pub sm_clock_sum: f64,
    /// Count of SM clock readings.
    pub sm_clock_n: u64,
    /// Time at each power level (ns), by [`power_bin`].
    pub hist_ns: [f32; POWER_BINS],
    /// Whether this GPU has seen a power reading after the window end.
    pub past_end: bool,
}

impl Default for GpuAcc {
    fn default() -> Self {
        GpuAcc::NEW
    }
}

impl GpuAcc {
    /// Nothing added yet (`Default`, usable in a `const`: all zero bytes).
    pub const NEW: GpuAcc = GpuAcc {
        reference: RefAcc::NEW,
        samples: 0,
        repeated: 0,
        power: WindowIntegral::NEW,
        energy_on_repeats_j: 0.0,
        util: WindowIntegral::NEW,
        counter: WindowCounter::NEW,
        sm_clock_sum: 0.0,
        sm_clock_n: 0,
        hist_ns: [0.0; POWER_BINS],
        past_end: false,
    };
}

/// The previous readings of one GPU, each signal on its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prev {
    /// Last power reading (t, W).
    pub power: Option<(i64, f64)>,
    /// Last utilization reading (t, %).
    pub util: Option<(i64, f64)>,
    /// Last counter reading (t, mJ).
    pub counter: Option<(i64, f64)>,
}

/// One sample of one GPU, as the window accumulators see it.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Time, ns.
    pub t_ns: i64,
    /// Power, W.
    pub power_w: Option<f64>,
    /// Utilization, %.
    pub util_pct: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Cumulative NVML energy, mJ.
    pub energy_mj: Option<f64>,
}

impl GpuAcc {
    /// Adds a sample, given this GPU's previous readings, for window `[t0, t1]`.
    pub fn add(&mut self, s: &Sample, prev: &Prev, t0: i64, t1: i64, max_gap_ns: i64) {
        let inside = t0 <= s.t_ns && s.t_ns <= t1;
        if inside {
            self.samples += 1;
            if let Some(c) = s.sm_clock_mhz {
                self.sm_clock_sum += c;
                self.sm_clock_n += 1;
            }
        }
        if let Some(p) = s.power_w
            && inside
        {
            // The reference takes nan and inf as Python's float() does.
            self.reference.add(s.t_ns, p, s.util_pct);
        }
        // Everything else sees finite readings only (others are counted in a warning).
        if let Some(p) = s.power_w.filter(|p| p.is_finite()) {
            if s.t_ns > t1 {
                self.past_end = true;
            }
            let repeat = matches!(prev.power, Some((_, pp)) if pp.to_bits() == p.to_bits());
            if inside && repeat {
                self.repeated += 1;
            }
            if let Some(prev_power) = prev.power
                && let Some(piece) =
                    self.power
                        .add(prev_power, (s.t_ns, p), (t0, t1), max_gap_ns, 1e9)
            {
                if repeat {
                    self.energy_on_repeats_j += piece.integral;
                }
                let half = (piece.overlap_ns as f64 / 2.0) as f32;
                self.hist_ns[power_bin(piece.v_start)] += half;
                self.hist_ns[power_bin(piece.v_end)] += half;
            }
        }
        if let (Some(u), Some(prev_util)) = (s.util_pct, prev.util) {
            self.util
                .add(prev_util, (s.t_ns, u), (t0, t1), max_gap_ns, 1.0);
        }
        if let (Some(e), Some(prev_counter)) = (s.energy_mj, prev.counter) {
            self.counter.add(prev_counter, (s.t_ns, e), (t0, t1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

    #[test]
    fn bins_are_monotone_and_edges_agree() {
        let mut last = 0;
        let mut p = 0.0;
        while p < 3000.0 {
            let b = power_bin(p);
            assert!(b >= last);
            let (lo, hi) = bin_edges(b);
            assert!(
                b == POWER_BINS - 1 || (lo <= p && p < hi * (1.0 + 1e-12)),
                "{p} {b} {lo} {hi}"
            );
            last = b;
            p += 0.7;
        }
    }

    /// Naive oracle: integrate the piecewise-linear power by fine sub-steps, clipped.
    #[test]
    fn edge_energy_matches_fine_integration() {
        let mut rng = Rng::from_env(11);
        for _ in 0..40 {
            let mut pts = Vec::new();
            let mut t = 0i64;
            for _ in 0..(2 + rng.below(20)) {
                t += 1 + rng.below(1000) as i64;
                pts.push((t, rng.below(500) as f64));
            }
            let t0 = rng.below(t as u64 + 100) as i64 - 50;
            let t1 = t0 + rng.below(t as u64) as i64;
            let mut acc = GpuAcc::default();
            let mut prev = Prev::default();
            for &(ts, p) in &pts {
                let s = Sample {
                    t_ns: ts,
                    power_w: Some(p),
                    util_pct: None,
                    sm_clock_mhz: None,
                    energy_mj: None,
                };
                acc.add(&s, &prev, t0, t1, i64::MAX);
                prev.power = Some((ts, p));
            }
            // Oracle: ∫ over [t0,t1] ∩ [first, last] of the linear interpolation, integer steps.
            let mut want = 0.0;
            for w in pts.windows(2) {
                let ((ta, pa), (tb, pb)) = (w[0], w[1]);
                for k in ta..tb {
                    let mid = k as f64 + 0.5;
                    if (mid as i64) >= t0 && (mid as i64) < t1 {
                        want += pa + (pb - pa) * (mid - ta as f64) / (tb - ta) as f64;
                    }
                }
            }
            want /= 1e9;
            assert!(
                (acc.power.integral - want).abs() <= 1e-9 * (1.0 + want.abs()),
                "{} {}",
                acc.power.integral,
                want
            );
        }
    }

    #[test]
    fn reference_sum_order_matches_python() {
        // 0.5*(pa+pb)*dt summed from 0.0 in time order.
        let mut a = RefAcc::default();
        let pts = [(0i64, 100.1), (10_000_000, 100.3), (20_000_000, 250.7)];
        for (t, p) in pts {
            a.add(t, p, Some(50.0));
        }
        let want = 0.0 + 0.5 * (100.1 + 100.3) * 0.01 + 0.5 * (100.3 + 250.7) * 0.01;
        assert_eq!(a.energy(), Some(want));
        assert_eq!(a.avg_util(), Some(50.0));
    }
}
