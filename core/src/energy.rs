//! Energy from power samples and from cumulative energy counters (docs/numerics.md, "Energy").
//!
//! - [`ReferenceTrapezoid`]: the reference telemetry formula in f64 seconds, bit for bit:
//!   `sum((b0 - a0) * (a1 + b1) / 2 for consecutive (a, b) if 0 < b0 - a0 <= max_gap)`, summed
//!   left to right from 0, as `summarize_host_telemetry.py` does.
//! - [`WindowIntegral`]: the integral of power (or utilization) over a window `[t0, t1]`, with the
//!   signal interpolated linearly at the window edges and a maximum-gap rule; the window analysis
//!   (`analyze`) keeps one per window and GPU.
//! - [`CounterDelta`]: differences of a cumulative counter (RAPL `energy_uj`, NVML total energy
//!   in mJ), with wraparound at a given maximum, counting wraps and resets.
//! - [`CounterStep`]: the wrap rule both use, for one pair of readings (decided once per reading,
//!   however many windows are open).
//! - [`WindowCounter`]: a counter's increase over a window, pro-rated at its edges.
//!
//! `analyze`'s three reference lines use yet another trapezoid (`window::RefAcc`:
//! `0.5 * (pa + pb) * dt`, no gap rule): `analyze_trace.py` rounds differently from the telemetry
//! script, and each is matched bit for bit.
//!
//! Every type is a small fixed-size accumulator: no allocation.
//!
//! # Example
//! ```
//! use flinch_core::energy::{CounterDelta, WindowIntegral};
//!
//! // Power ramps 0 -> 100 W over 10 s; energy over [2 s, 4 s] is 30 W * 2 s.
//! let mut energy = WindowIntegral::default();
//! let window = (2_000_000_000, 4_000_000_000);
//! energy.add((0, 0.0), (10_000_000_000, 100.0), window, 5_000_000_000_000, 1e9);
//! assert!((energy.value().unwrap() - 60.0).abs() < 1e-9);
//!
//! // A RAPL counter wrapping at its maximum.
//! let mut rapl = CounterDelta::new(Some(1_000_000));
//! for uj in [990_000, 20_000, 50_000] {
//!     rapl.push(uj);
//! }
//! assert_eq!(rapl.result().wraps, 1);
//! assert!((rapl.energy_j(1e-6).unwrap() - 0.06).abs() < 1e-12);
//! ```

use serde::Serialize;

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

/// `(b - a) as f64` exactly as Python's `float(b - a)` (round to nearest even), without i128
/// arithmetic in the common case.
#[inline]
pub(crate) fn diff_f64(b: i64, a: i64) -> f64 {
    match b.checked_sub(a) {
        Some(d) => d as f64,
        None => (b as i128 - a as i128) as f64,
    }
}

/// Overlap of segment `[ta, tb]` with window `[lo, hi]`, and the linear values at its ends:
/// `(overlap_ns, v_at_start, v_at_end)`. `None` when they do not overlap by a positive length.
#[inline]
fn clip(ta: i64, va: f64, tb: i64, vb: f64, lo: i64, hi: i64) -> Option<(i64, f64, f64)> {
    let a = ta.max(lo);
    let b = tb.min(hi);
    if b <= a || tb <= ta {
        return None;
    }
    let span = diff_f64(tb, ta);
    let at = |t: i64| va + (vb - va) * (diff_f64(t, ta) / span);
    let v0 = if a == ta { va } else { at(a) };
    let v1 = if b == tb { vb } else { at(b) };
    Some((b.saturating_sub(a), v0, v1))
}

/// The part of `[ta, tb]` inside `[lo, hi]`: its length and its share of the whole interval (to
/// pro-rate a counter's increase). `None` when they do not overlap by a positive length.
#[inline]
fn overlap_share(ta: i64, tb: i64, lo: i64, hi: i64) -> Option<(i64, f64)> {
    let a = ta.max(lo);
    let b = tb.min(hi);
    if b <= a || tb <= ta {
        return None;
    }
    // Both differences are positive: `abs_diff` is exact (no i128 conversion), rounded once.
    Some((
        b.saturating_sub(a),
        b.abs_diff(a) as f64 / tb.abs_diff(ta) as f64,
    ))
}

/// One interval's kept part inside a window (see [`WindowIntegral::add`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Piece {
    /// Length inside the window, ns.
    pub overlap_ns: i64,
    /// The signal at the start of the part (interpolated when the window starts inside).
    pub v_start: f64,
    /// The signal at the end of the part (interpolated when the window ends inside).
    pub v_end: f64,
    /// The part's trapezoid, in the accumulator's unit.
    pub integral: f64,
}

/// The integral over one window `[t0, t1]` (ns) of a signal read at instants and linear between
/// them (power in W gives energy in J; utilization in % gives %·ns). Each interval between two
/// consecutive readings is clipped to the window, with the signal interpolated linearly at the
/// clipped ends; an interval longer than the maximum gap is skipped and its time inside the
/// window reported; nothing is extrapolated before the first or after the last reading.
///
/// Readings come as intervals (the previous reading and this one), so that the many windows open
/// at once share one previous reading per signal. Each kept part adds
/// `0.5 * (v_start + v_end) * (overlap_ns / ns_per_unit)`, summed in time order.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowIntegral {
    /// Sum of the kept parts: the signal's unit × time in units of `ns_per_unit` ns.
    pub integral: f64,
    /// Window time covered by kept intervals, ns.
    pub covered_ns: i64,
    /// Window time inside intervals longer than the maximum gap (skipped), ns.
    pub skipped_ns: i64,
    /// Longest interval (kept or skipped) that overlaps the window, ns.
    pub max_interval_ns: i64,
}

impl WindowIntegral {
    /// Nothing added yet (`Default`, usable in a `const`).
    pub const NEW: WindowIntegral = WindowIntegral {
        integral: 0.0,
        covered_ns: 0,
        skipped_ns: 0,
        max_interval_ns: 0,
    };

    /// Adds the interval from reading `(ta, va)` to reading `(tb, vb)` for the window
    /// `[t0, t1]`: skipped when longer than `max_gap_ns`, else integrated with time counted in
    /// units of `ns_per_unit` ns (1e9: seconds). Returns the kept part inside the window, if any.
    #[inline]
    pub fn add(
        &mut self,
        (ta, va): (i64, f64),
        (tb, vb): (i64, f64),
        (t0, t1): (i64, i64),
        max_gap_ns: i64,
        ns_per_unit: f64,
    ) -> Option<Piece> {
        let (overlap_ns, v_start, v_end) = clip(ta, va, tb, vb, t0, t1)?;
        // Positive (`clip` checked tb > ta); past i64, longer than any gap.
        let len_ns = tb.checked_sub(ta).unwrap_or(i64::MAX);
        self.max_interval_ns = self.max_interval_ns.max(len_ns);
        if len_ns > max_gap_ns {
            self.skipped_ns += overlap_ns;
            return None;
        }
        let integral = 0.5 * (v_start + v_end) * (overlap_ns as f64 / ns_per_unit);
        self.integral += integral;
        self.covered_ns += overlap_ns;
        Some(Piece {
            overlap_ns,
            v_start,
            v_end,
            integral,
        })
    }

    /// The integral, when any interval was kept.
    pub fn value(&self) -> Option<f64> {
        (self.covered_ns > 0).then_some(self.integral)
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

/// What a cumulative counter did between two readings, by [`CounterDelta`]'s wrap rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterStep(
    /// The increase and whether it wrapped (worth `max - prev + cur`); `None` for a decrease
    /// that cannot be a wrap (no maximum, or a reading above it): a reset.
    Option<(u64, bool)>,
);

impl CounterStep {
    /// The step from reading `prev` to reading `cur` of a counter that wraps at `max` if known.
    #[inline]
    pub fn new(prev: u64, cur: u64, max: Option<u64>) -> CounterStep {
        if cur >= prev {
            return CounterStep(Some((cur - prev, false)));
        }
        CounterStep(match max {
            Some(max) if prev <= max && cur <= max => Some((max - prev + cur, true)),
            _ => None,
        })
    }
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
            if reading == prev {
                self.result.repeats += 1;
            }
            match CounterStep::new(prev, reading, self.max).0 {
                Some((d, wrapped)) => {
                    self.result.wraps += u64::from(wrapped);
                    self.total = self.total.saturating_add(d);
                }
                None => self.result.resets += 1,
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

/// A cumulative counter's increase over one window `[t0, t1]` (ns): each interval between two
/// readings contributes its increase pro-rated by the share of the interval inside the window.
/// A decrease that is not a wrap (see [`CounterDelta`]) is a reset: counted, its interval skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowCounter {
    /// Increase inside the window, in the counter's unit.
    pub delta: f64,
    /// Window time covered by counted intervals, ns.
    pub covered_ns: i64,
    /// Wraps corrected with the counter's maximum.
    pub wraps: u64,
    /// Decreases not corrected (a reset, or a wrap with no maximum known).
    pub resets: u64,
}

impl WindowCounter {
    /// Nothing added yet (`Default`, usable in a `const`).
    pub const NEW: WindowCounter = WindowCounter {
        delta: 0.0,
        covered_ns: 0,
        wraps: 0,
        resets: 0,
    };

    /// Adds the interval between two readings of a counter read as f64 that does not wrap (NVML
    /// total energy, mJ).
    #[inline]
    pub fn add(&mut self, (ta, ea): (i64, f64), (tb, eb): (i64, f64), (t0, t1): (i64, i64)) {
        let Some((overlap_ns, share)) = overlap_share(ta, tb, t0, t1) else {
            return;
        };
        let delta = eb - ea;
        if delta < 0.0 {
            self.resets += 1;
            return;
        }
        self.delta += delta * share;
        self.covered_ns += overlap_ns;
    }

    /// Adds the interval `[ta, tb]` between two readings of a counter that wraps (RAPL
    /// `energy_uj`), given what the counter did over it ([`CounterStep::new`]).
    #[inline]
    pub fn add_step(&mut self, (ta, tb): (i64, i64), step: CounterStep, (t0, t1): (i64, i64)) {
        let Some((overlap_ns, share)) = overlap_share(ta, tb, t0, t1) else {
            return;
        };
        let Some((delta, wrapped)) = step.0 else {
            self.resets += 1;
            return;
        };
        self.wraps += u64::from(wrapped);
        self.delta += delta as f64 * share;
        self.covered_ns += overlap_ns;
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

    /// Feeds `samples` to one window's integral as the window analysis does (each reading with
    /// the one before it), in J.
    fn window_integral(samples: &[(i64, f64)], t0: i64, t1: i64, max_gap: i64) -> WindowIntegral {
        let mut w = WindowIntegral::default();
        for pair in samples.windows(2) {
            w.add(pair[0], pair[1], (t0, t1), max_gap, 1e9);
        }
        w
    }

    #[test]
    fn window_integral_matches_naive_integration() {
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
            let w = window_integral(&samples, t0, t1, max_gap);
            let got = w.value().unwrap_or(0.0);
            let want = naive_window(&samples, t0, t1, max_gap as u64);
            assert!(
                (got - want).abs() <= 1e-9 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
            assert!(w.covered_ns + w.skipped_ns <= t1 - t0);
            // The longest interval overlapping the window, by a naive scan.
            let longest = samples
                .windows(2)
                .filter(|p| p[0].0.max(t0) < p[1].0.min(t1))
                .map(|p| p[1].0 - p[0].0)
                .max()
                .unwrap_or(0);
            assert_eq!(w.max_interval_ns, longest);
        }
    }

    #[test]
    fn window_integral_edges_and_gaps() {
        // Ramp 0 W at 0 s to 100 W at 10 s; window [2 s, 4 s] => mean 30 W * 2 s.
        let ramp = [(0, 0.0), (10_000_000_000, 100.0)];
        let w = window_integral(&ramp, 2_000_000_000, 4_000_000_000, i64::MAX);
        assert!((w.value().unwrap() - 60.0).abs() < 1e-12);
        assert_eq!(w.covered_ns, 2_000_000_000);
        // A window reaching past the last reading: only the covered part counts.
        let w = window_integral(&ramp, 5_000_000_000, 20_000_000_000, i64::MAX);
        assert!((w.value().unwrap() - 375.0).abs() < 1e-9);
        assert_eq!(w.covered_ns, 5_000_000_000);
        // The same interval longer than the maximum gap: skipped, its window time reported.
        let w = window_integral(&ramp, 5_000_000_000, 20_000_000_000, 5_000_000_000);
        assert_eq!((w.value(), w.skipped_ns), (None, 5_000_000_000));
        assert_eq!(w.max_interval_ns, 10_000_000_000);
        // The returned part carries the interpolated edge values; time in ns units.
        let mut w = WindowIntegral::default();
        let piece = w.add(
            ramp[0],
            ramp[1],
            (2_000_000_000, 4_000_000_000),
            i64::MAX,
            1.0,
        );
        let piece = piece.unwrap();
        assert_eq!((piece.v_start, piece.v_end), (20.0, 40.0));
        assert_eq!(piece.integral, 30.0 * 2e9);
        // No overlap, or time not advancing: nothing.
        assert_eq!(w.add((5, 1.0), (5, 2.0), (0, 10), i64::MAX, 1.0), None);
        assert_eq!(w.add((20, 1.0), (30, 2.0), (0, 10), i64::MAX, 1.0), None);
    }

    #[test]
    fn window_counter_pro_rates_wraps_and_resets() {
        let mut r = WindowCounter::default();
        r.add_step((0, 10), CounterStep::new(90, 5, Some(100)), (0, 10));
        assert_eq!((r.delta, r.wraps), (15.0, 1));
        r.add_step((10, 20), CounterStep::new(90, 5, None), (0, 100));
        assert_eq!(r.resets, 1);
        assert_eq!(r.covered_ns, 10);
        // Edge pro-rating: half the interval inside.
        let mut r = WindowCounter::default();
        r.add_step((0, 10), CounterStep::new(0, 100, None), (5, 50));
        assert_eq!((r.delta, r.covered_ns), (50.0, 5));
        // The f64 counter: a decrease is a reset, skipped.
        let mut n = WindowCounter::default();
        n.add((0, 1000.0), (4, 2000.0), (1, 10));
        n.add((4, 2000.0), (8, 10.0), (1, 10));
        n.add((8, 10.0), (20, 130.0), (1, 10));
        assert_eq!((n.delta, n.covered_ns, n.resets), (750.0 + 20.0, 5, 1));
        // Outside the window: nothing counted, not even a reset.
        n.add((30, 10.0), (40, 0.0), (1, 10));
        assert_eq!(n.resets, 1);
    }

    /// Timestamps whose differences do not fit in an i64 (a corrupt or hostile trace.csv): no
    /// overflow, the interval is longer than any gap, and a counter is pro-rated exactly.
    #[test]
    fn intervals_wider_than_i64_do_not_overflow() {
        let (lo, hi) = (i64::MIN + 2, i64::MAX - 2);
        let mut w = WindowIntegral::default();
        assert_eq!(
            w.add((lo, 1.0), (hi, 3.0), (lo, hi), i64::MAX - 1, 1e9),
            None
        );
        assert_eq!((w.skipped_ns, w.max_interval_ns), (i64::MAX, i64::MAX));
        let mut c = WindowCounter::default();
        c.add_step((lo, hi), CounterStep::new(0, 1000, None), (0, hi));
        assert!((c.delta - 500.0).abs() < 1e-9, "{}", c.delta);
        let mut c = WindowCounter::default();
        c.add((lo, 0.0), (hi, 1000.0), (lo, 0));
        assert!((c.delta - 500.0).abs() < 1e-9, "{}", c.delta);
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
}
