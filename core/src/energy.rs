//! Energy from power samples (trapezoid with a maximum-gap rule, optionally clipped to a window
//! with linear interpolation at its edges) and from cumulative energy counters (with
//! wraparound), and a side-by-side report of both (docs/numerics.md, "Energy").
//!
//! - [`ReferenceTrapezoid`]: the reference telemetry formula in f64 seconds, bit for bit:
//!   `sum((b0 - a0) * (a1 + b1) / 2 for consecutive (a, b) if 0 < b0 - a0 <= max_gap)`, summed
//!   left to right from 0, as `summarize_host_telemetry.py` does.
//! - [`Trapezoid`]: the same rule over i64-ns timestamps (trace.csv), summed exactly
//!   ([`Fsum`]), reporting the time and count of skipped intervals.
//! - [`WindowEnergy`]: energy over exactly `[t0_ns, t1_ns]`, with the power linearly
//!   interpolated at the window edges.
//! - [`CounterDelta`]: differences of a cumulative counter (RAPL `energy_uj`, NVML total energy
//!   in mJ), with wraparound at a given maximum, counting wraps and resets.
//! - [`EnergyComparison`]: power-integrated and counter energy side by side.
//!
//! Every type is a small fixed-size accumulator: no allocation.
//!
//! # Example
//! ```
//! use flinch_core::energy::{CounterDelta, EnergyComparison, WindowEnergy};
//!
//! // Power ramps 0 -> 100 W over 10 s; energy over [2 s, 4 s] is 30 W * 2 s.
//! let mut w = WindowEnergy::new(2_000_000_000, 4_000_000_000, u64::MAX); // no gap limit
//! w.push(0, 0.0);
//! w.push(10_000_000_000, 100.0);
//! let power_j = w.result().energy_j.unwrap();
//! assert!((power_j - 60.0).abs() < 1e-9);
//!
//! // A RAPL counter wrapping at its maximum.
//! let mut rapl = CounterDelta::new(Some(1_000_000));
//! for uj in [990_000, 20_000, 50_000] {
//!     rapl.push(uj);
//! }
//! assert_eq!(rapl.result().wraps, 1);
//! let counter_j = rapl.energy_j(1e-6).unwrap(); // 0.06 J
//! let side_by_side = EnergyComparison::new(Some(power_j), Some(counter_j));
//! assert!(side_by_side.difference_j.is_some());
//! ```

use serde::Serialize;

use crate::stats::Fsum;

/// The reference telemetry energy in f64 seconds, bit-identical to
/// `summarize_host_telemetry.py`: feed `(t_s, power_w)` for the consecutive rows that carry a
/// power reading, in file order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceTrapezoid {
    max_gap_s: f64,
    prev: Option<(f64, f64)>,
    energy_j: f64,
    observed_s: f64,
    intervals: u64,
}

impl ReferenceTrapezoid {
    /// An accumulator that keeps intervals with `0 < dt <= max_gap_s` (the reference uses 5).
    pub const fn new(max_gap_s: f64) -> ReferenceTrapezoid {
        ReferenceTrapezoid {
            max_gap_s,
            prev: None,
            energy_j: 0.0,
            observed_s: 0.0,
            intervals: 0,
        }
    }

    /// Adds the next power sample.
    pub fn push(&mut self, t_s: f64, power_w: f64) {
        if let Some((a0, a1)) = self.prev {
            let dt = t_s - a0;
            if 0.0 < dt && dt <= self.max_gap_s {
                self.energy_j += dt * (a1 + power_w) / 2.0;
                self.observed_s += dt;
                self.intervals += 1;
            }
        }
        self.prev = Some((t_s, power_w));
    }

    /// `whole_gpu_energy_j_over_observed_intervals`: the energy in J, `None` with no interval.
    pub fn energy_j(&self) -> Option<f64> {
        (self.intervals > 0).then_some(self.energy_j)
    }

    /// `energy_observed_duration_s`: the summed length of the kept intervals (0 with none).
    pub fn observed_s(&self) -> f64 {
        self.observed_s
    }

    /// Number of kept intervals.
    pub fn intervals(&self) -> u64 {
        self.intervals
    }
}

/// What a trapezoid over power samples found. All times in ns, energy in J.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TrapezoidResult {
    /// Energy over the kept intervals, `None` with no kept interval.
    pub energy_j: Option<f64>,
    /// Power samples fed.
    pub samples: u64,
    /// Intervals integrated (`0 < dt <= max_gap_ns`).
    pub intervals: u64,
    /// Time covered by the integrated intervals.
    pub covered_ns: u64,
    /// Intervals skipped for being longer than the maximum gap.
    pub skipped_intervals: u64,
    /// Time in the skipped intervals.
    pub skipped_ns: u64,
    /// Pairs whose time did not advance (`dt <= 0`: repeated or out-of-order timestamps).
    pub nonpositive_intervals: u64,
    /// Longest interval seen between consecutive samples (kept or skipped).
    pub max_gap_seen_ns: u64,
}

/// Trapezoid over `(t_ns, power_w)` samples with a maximum-gap rule: an interval longer than
/// `max_gap_ns` is skipped and its length reported. The sum is exact over the per-interval
/// terms (each `dt_s * (p0 + p1) / 2` rounded once), so the order of summation does not matter.
#[derive(Clone, Debug, PartialEq)]
pub struct Trapezoid {
    max_gap_ns: u64,
    prev: Option<(i64, f64)>,
    sum: Fsum,
    result: TrapezoidResult,
}

impl Trapezoid {
    /// A trapezoid that skips intervals longer than `max_gap_ns` (`u64::MAX` keeps all).
    pub fn new(max_gap_ns: u64) -> Trapezoid {
        Trapezoid {
            max_gap_ns,
            prev: None,
            sum: Fsum::new(),
            result: TrapezoidResult::default(),
        }
    }

    /// Adds the next sample. Non-finite power is ignored (the sample does not count).
    pub fn push(&mut self, t_ns: i64, power_w: f64) {
        if !power_w.is_finite() {
            return;
        }
        self.result.samples += 1;
        if let Some((t0, p0)) = self.prev {
            if t_ns <= t0 {
                self.result.nonpositive_intervals += 1;
                // Keep the earlier sample as the anchor only when time went backwards; a
                // repeated timestamp moves on to the newer reading.
                if t_ns < t0 {
                    return;
                }
            } else {
                let dt_ns = t_ns.wrapping_sub(t0) as u64;
                self.result.max_gap_seen_ns = self.result.max_gap_seen_ns.max(dt_ns);
                if dt_ns <= self.max_gap_ns {
                    self.sum.add(dt_ns as f64 * 1e-9 * (p0 + power_w) / 2.0);
                    self.result.intervals += 1;
                    self.result.covered_ns += dt_ns;
                } else {
                    self.result.skipped_intervals += 1;
                    self.result.skipped_ns += dt_ns;
                }
            }
        }
        self.prev = Some((t_ns, power_w));
    }

    /// The result so far.
    pub fn result(&self) -> TrapezoidResult {
        TrapezoidResult {
            energy_j: (self.result.intervals > 0).then(|| self.sum.value()),
            ..self.result
        }
    }
}

/// Energy over a window `[t0_ns, t1_ns]` with power interpolated linearly at the edges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WindowEnergyResult {
    /// Energy over the covered part of the window, `None` when nothing was covered.
    pub energy_j: Option<f64>,
    /// Window length.
    pub window_ns: u64,
    /// Part of the window covered by kept intervals.
    pub covered_ns: u64,
    /// Part of the window inside intervals skipped by the maximum-gap rule.
    pub skipped_ns: u64,
    /// Skipped intervals that overlap the window.
    pub skipped_intervals: u64,
    /// True when a kept interval covers the window start (power interpolated there).
    pub start_covered: bool,
    /// True when a kept interval covers the window end.
    pub end_covered: bool,
    /// Samples with `t0_ns <= t_ns <= t1_ns`.
    pub samples_in_window: u64,
}

/// Streaming energy over one window `[t0_ns, t1_ns]`: feed every sample in time order
/// (including those just outside the window, which the edge interpolation needs). The part of
/// each interval inside the window is integrated with the power linearly interpolated at the
/// clipped ends; intervals longer than `max_gap_ns` are skipped and reported; nothing is
/// extrapolated before the first or after the last sample.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowEnergy {
    t0_ns: i64,
    t1_ns: i64,
    max_gap_ns: u64,
    prev: Option<(i64, f64)>,
    sum: Fsum,
    result: WindowEnergyResult,
}

impl WindowEnergy {
    /// Energy over `[t0_ns, t1_ns]` (an inverted window is empty).
    pub fn new(t0_ns: i64, t1_ns: i64, max_gap_ns: u64) -> WindowEnergy {
        WindowEnergy {
            t0_ns,
            t1_ns,
            max_gap_ns,
            prev: None,
            sum: Fsum::new(),
            result: WindowEnergyResult {
                window_ns: if t1_ns > t0_ns {
                    t1_ns.wrapping_sub(t0_ns) as u64
                } else {
                    0
                },
                ..WindowEnergyResult::default()
            },
        }
    }

    /// Adds the next sample; non-finite power is ignored; out-of-order samples are ignored.
    pub fn push(&mut self, t_ns: i64, power_w: f64) {
        if !power_w.is_finite() {
            return;
        }
        if let Some((a, _)) = self.prev
            && t_ns < a
        {
            return;
        }
        if self.t0_ns <= t_ns && t_ns <= self.t1_ns {
            self.result.samples_in_window += 1;
        }
        if let Some((a, pa)) = self.prev
            && t_ns > a
        {
            self.segment(a, pa, t_ns, power_w);
        }
        self.prev = Some((t_ns, power_w));
    }

    fn segment(&mut self, a: i64, pa: f64, b: i64, pb: f64) {
        let lo = a.max(self.t0_ns);
        let hi = b.min(self.t1_ns);
        if hi <= lo {
            return;
        }
        let part_ns = hi.wrapping_sub(lo) as u64;
        let len_ns = b.wrapping_sub(a) as u64;
        if len_ns > self.max_gap_ns {
            self.result.skipped_intervals += 1;
            self.result.skipped_ns += part_ns;
            return;
        }
        let at = |t: i64| {
            if t == a {
                pa
            } else if t == b {
                pb
            } else {
                pa + (pb - pa) * (t.wrapping_sub(a) as u64 as f64 / len_ns as f64)
            }
        };
        let (p_lo, p_hi) = (at(lo), at(hi));
        self.sum.add(part_ns as f64 * 1e-9 * (p_lo + p_hi) / 2.0);
        self.result.covered_ns += part_ns;
        if lo == self.t0_ns {
            self.result.start_covered = true;
        }
        if hi == self.t1_ns {
            self.result.end_covered = true;
        }
    }

    /// The result so far.
    pub fn result(&self) -> WindowEnergyResult {
        WindowEnergyResult {
            energy_j: (self.result.covered_ns > 0).then(|| self.sum.value()),
            ..self.result
        }
    }
}

/// What a cumulative counter says about the energy between its first and last reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CounterResult {
    /// Sum of the deltas, in the counter's unit; `None` with fewer than two readings.
    pub delta: Option<u64>,
    /// Readings fed.
    pub readings: u64,
    /// Decreases explained as a wrap at the maximum.
    pub wraps: u64,
    /// Decreases that could not be a wrap (no maximum given, or a reading above it): counted
    /// as a reset (driver reload), contributing no delta.
    pub resets: u64,
    /// Readings equal to the previous one (the counter had not updated yet).
    pub repeats: u64,
}

/// Deltas of a cumulative energy counter, with wraparound.
///
/// A RAPL `energy_uj` counter runs from 0 to `max_energy_range_uj` and then starts again from
/// 0; a decrease from `prev` to `cur` is a wrap and contributes `max - prev + cur` (the
/// convention of the Linux powercap tools). The NVML total energy counter (mJ) is 64-bit and
/// does not wrap in practice: with `max: None` a decrease is a reset and contributes nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterDelta {
    max: Option<u64>,
    prev: Option<u64>,
    total: u64,
    result: CounterResult,
}

impl CounterDelta {
    /// A counter that wraps at `max` (`None`: never wraps).
    pub const fn new(max: Option<u64>) -> CounterDelta {
        CounterDelta {
            max,
            prev: None,
            total: 0,
            result: CounterResult {
                delta: None,
                readings: 0,
                wraps: 0,
                resets: 0,
                repeats: 0,
            },
        }
    }

    /// Adds the next reading (in time order).
    pub fn push(&mut self, reading: u64) {
        self.result.readings += 1;
        if let Some(prev) = self.prev {
            if reading > prev {
                self.total = self.total.saturating_add(reading - prev);
            } else if reading == prev {
                self.result.repeats += 1;
            } else {
                match self.max {
                    Some(max) if prev <= max && reading <= max => {
                        self.result.wraps += 1;
                        self.total = self.total.saturating_add(max - prev + reading);
                    }
                    _ => self.result.resets += 1,
                }
            }
        }
        self.prev = Some(reading);
    }

    /// The result so far.
    pub fn result(&self) -> CounterResult {
        CounterResult {
            delta: (self.result.readings >= 2).then_some(self.total),
            ..self.result
        }
    }

    /// The delta converted to J with `joules_per_unit` (1e-6 for µJ, 1e-3 for mJ).
    pub fn energy_j(&self, joules_per_unit: f64) -> Option<f64> {
        self.result().delta.map(|d| d as f64 * joules_per_unit)
    }
}

/// Power-integrated and counter energy for the same window, side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct EnergyComparison {
    /// Energy integrated from power samples, J.
    pub power_energy_j: Option<f64>,
    /// Energy from the cumulative counter, J.
    pub counter_energy_j: Option<f64>,
    /// `counter - power`, J, when both exist.
    pub difference_j: Option<f64>,
    /// `(counter - power) / counter` when both exist and the counter is non-zero.
    pub relative_difference: Option<f64>,
}

impl EnergyComparison {
    /// Puts the two figures side by side.
    pub fn new(power_energy_j: Option<f64>, counter_energy_j: Option<f64>) -> EnergyComparison {
        let difference_j = match (power_energy_j, counter_energy_j) {
            (Some(p), Some(c)) => Some(c - p),
            _ => None,
        };
        let relative_difference = match (difference_j, counter_energy_j) {
            (Some(d), Some(c)) if c != 0.0 => Some(d / c),
            _ => None,
        };
        EnergyComparison {
            power_energy_j,
            counter_energy_j,
            difference_j,
            relative_difference,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

    #[test]
    fn reference_formula_bit_for_bit() {
        let mut rng = Rng::from_env(31);
        for _ in 0..500 {
            let mut t = 1.7e9 + rng.unit_f64() * 1e6;
            let samples: Vec<(f64, f64)> = (0..rng.below(60))
                .map(|_| {
                    t += match rng.below(5) {
                        0 => 0.0,
                        1 => -0.3,
                        2 => 6.0 + rng.unit_f64(),
                        _ => rng.unit_f64() * 2.0,
                    };
                    (t, 50.0 + rng.unit_f64() * 300.0)
                })
                .collect();
            // Oracle: the Python expression, written out.
            let kept: Vec<_> = samples
                .windows(2)
                .filter(|w| 0.0 < w[1].0 - w[0].0 && w[1].0 - w[0].0 <= 5.0)
                .collect();
            let mut e = 0.0;
            let mut obs = 0.0;
            for w in &kept {
                e += (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0;
                obs += w[1].0 - w[0].0;
            }
            let mut r = ReferenceTrapezoid::new(5.0);
            samples.iter().for_each(|&(t, p)| r.push(t, p));
            assert_eq!(
                r.energy_j().map(f64::to_bits),
                (!kept.is_empty()).then(|| e.to_bits())
            );
            assert_eq!(r.observed_s().to_bits(), obs.to_bits());
            assert_eq!(r.intervals(), kept.len() as u64);
        }
    }

    #[test]
    fn trapezoid_reports_skipped_gaps() {
        let mut t = Trapezoid::new(5_000_000_000);
        t.push(0, 100.0);
        t.push(1_000_000_000, 200.0); // 150 J
        t.push(11_000_000_000, 200.0); // skipped 10 s
        t.push(12_000_000_000, 0.0); // 100 J
        t.push(12_000_000_000, 50.0); // repeated timestamp
        t.push(11_500_000_000, 7.0); // backwards: ignored as an anchor
        t.push(13_000_000_000, 50.0); // 50 J
        t.push(14_000_000_000, f64::NAN); // ignored
        let r = t.result();
        assert_eq!(r.energy_j, Some(300.0));
        assert_eq!(r.skipped_intervals, 1);
        assert_eq!(r.skipped_ns, 10_000_000_000);
        assert_eq!(r.covered_ns, 3_000_000_000);
        assert_eq!(r.nonpositive_intervals, 2);
        assert_eq!(r.samples, 7);
        assert_eq!(r.max_gap_seen_ns, 10_000_000_000);
        assert_eq!(Trapezoid::new(5).result().energy_j, None);
    }

    /// Naive oracle for window energy: midpoint rule on a 1 µs grid over the piecewise-linear
    /// power, which is exact for linear pieces up to rounding.
    fn naive_window(samples: &[(i64, f64)], t0: i64, t1: i64, max_gap: u64) -> f64 {
        let mut e = 0.0;
        let step = 1_000i64;
        let mut t = t0;
        while t < t1 {
            let mid = t as f64 + step as f64 / 2.0;
            for w in samples.windows(2) {
                let (a, pa) = w[0];
                let (b, pb) = w[1];
                if (a as f64) <= mid && mid < b as f64 && ((b - a) as u64) <= max_gap {
                    let p = pa + (pb - pa) * (mid - a as f64) / (b - a) as f64;
                    e += p * step as f64 * 1e-9;
                }
            }
            t += step;
        }
        e
    }

    #[test]
    fn window_energy_matches_naive_integration() {
        let mut rng = Rng::from_env(32);
        for _ in 0..60 {
            let mut t = 0i64;
            let samples: Vec<(i64, f64)> = (0..2 + rng.below(12))
                .map(|_| {
                    let long = rng.below(6) == 0;
                    t += 1_000 * (1 + rng.below(if long { 400 } else { 90 })) as i64;
                    (t, rng.unit_f64() * 300.0)
                })
                .collect();
            let t0 = 1_000 * rng.below(t as u64 / 1_000) as i64;
            let t1 = t0 + 1_000 * rng.below(1 + (t - t0) as u64 / 800) as i64;
            let max_gap = 200_000;
            let mut w = WindowEnergy::new(t0, t1, max_gap);
            samples.iter().for_each(|&(t, p)| w.push(t, p));
            let got = w.result().energy_j.unwrap_or(0.0);
            let want = naive_window(&samples, t0, t1, max_gap);
            assert!(
                (got - want).abs() <= 1e-9 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
            let r = w.result();
            assert!(r.covered_ns + r.skipped_ns <= r.window_ns);
        }
    }

    #[test]
    fn window_energy_edges() {
        // Constant ramp 0 W at 0 s to 100 W at 10 s; window [2 s, 4 s] => mean 30 W * 2 s.
        let mut w = WindowEnergy::new(2_000_000_000, 4_000_000_000, u64::MAX);
        w.push(0, 0.0);
        w.push(10_000_000_000, 100.0);
        let r = w.result();
        assert!((r.energy_j.unwrap() - 60.0).abs() < 1e-12);
        assert!(r.start_covered && r.end_covered);
        assert_eq!(r.samples_in_window, 0);
        assert_eq!(r.covered_ns, 2_000_000_000);
        // Window reaching past the last sample: only the covered part counts.
        let mut w = WindowEnergy::new(5_000_000_000, 20_000_000_000, u64::MAX);
        w.push(0, 0.0);
        w.push(10_000_000_000, 100.0);
        let r = w.result();
        assert!((r.energy_j.unwrap() - 375.0).abs() < 1e-9);
        assert!(r.start_covered && !r.end_covered);
        assert_eq!(r.window_ns, 15_000_000_000);
    }

    #[test]
    fn counter_wraps_and_resets() {
        let max = 262_143_328_850u64;
        let mut c = CounterDelta::new(Some(max));
        for r in [max - 100, max - 10, 5, 5, 1_000] {
            c.push(r);
        }
        let r = c.result();
        assert_eq!(r.delta, Some(90 + 10 + 5 + 995));
        assert_eq!((r.wraps, r.resets, r.repeats, r.readings), (1, 0, 1, 5));
        assert_eq!(c.energy_j(1e-6), Some(1100.0 * 1e-6));

        let mut n = CounterDelta::new(None);
        for r in [1000, 2000, 10, 40] {
            n.push(r);
        }
        let r = n.result();
        assert_eq!((r.delta, r.resets, r.wraps), (Some(1030), 1, 0));
        assert_eq!(CounterDelta::new(None).result().delta, None);
    }

    #[test]
    fn counter_matches_naive_unwrapped_sum() {
        let mut rng = Rng::from_env(33);
        for _ in 0..300 {
            let max = 1 + rng.below(1 << 20);
            let mut true_total = 0u64;
            let mut reading = rng.below(max + 1);
            let mut c = CounterDelta::new(Some(max));
            c.push(reading);
            for _ in 0..rng.below(50) {
                // Steps below the range, so each step wraps at most once.
                let step = rng.below(max);
                true_total += step;
                // The documented convention: across a wrap the delta is max - prev + cur.
                let next = if reading + step > max {
                    reading + step - max
                } else {
                    reading + step
                };
                reading = next;
                c.push(reading);
            }
            let r = c.result();
            assert_eq!(r.delta.unwrap_or(0), true_total);
        }
    }

    #[test]
    fn comparison_side_by_side() {
        let c = EnergyComparison::new(Some(90.0), Some(100.0));
        assert_eq!(c.difference_j, Some(10.0));
        assert_eq!(c.relative_difference, Some(0.1));
        let c = EnergyComparison::new(None, Some(100.0));
        assert_eq!((c.difference_j, c.relative_difference), (None, None));
    }
}
