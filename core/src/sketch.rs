//! A bounded, mergeable quantile sketch in the manner of DDSketch: logarithmic buckets with a
//! fixed count set at construction, giving [`Stats`]-shaped results with a stated error bound.
//!
//! # Buckets
//! A positive value's bucket is the top 17 bits of its IEEE-754 representation: the exponent
//! and the first 6 mantissa bits, i.e. 64 buckets per power of two (no logarithm needed, so it
//! runs on bare metal). A bucket `[lo, hi)` has `hi / lo <= 1 + 1/64`, and is represented by
//! `2·lo·hi / (lo + hi)`, which is within `(hi - lo) / (hi + lo) <= 1/129` (0.78%) of every value
//! in it. Negative values go to a second, mirrored store by magnitude; zeros are counted apart.
//!
//! Each store is a window of `buckets_per_sign` consecutive buckets (2048 span 32 powers of two,
//! a range of 4·10^9). The window follows the data; when the data spans more than it can hold,
//! the lowest-magnitude buckets are collapsed into the window's lowest bucket (high quantiles
//! stay accurate, as DDSketch's collapsing-lowest store). Collapsed values are counted in
//! [`SketchStats::collapsed`].
//!
//! # Guarantee
//! - `n`, `mean` (exact sum, [`Fsum`](crate::stats::Fsum)), `min` and `max` are exact, as in
//!   [`crate::stats`].
//! - Each percentile is numpy-linear over estimated ranks: `lerp(est[lo], est[lo + 1], t)`. When
//!   no rank involved lies in a collapsed bucket and the two ranks have the same sign, the
//!   result is within [`RELATIVE_ERROR`] (1/129 < 1%) of the exact percentile, up to a few ulps
//!   of rounding. Estimates are also clamped to `[min, max]`.
//! - Where the two ranks straddle zero, the error is bounded in absolute terms by
//!   `RELATIVE_ERROR · (|x[lo]| + |x[lo + 1]|)` instead. Subnormal values (< 2.2e-308) have
//!   linear, not relative, buckets.
//!
//! No allocation after construction: the buckets live in a buffer the caller provides
//! ([`QuantileSketchIn::from_buffer`]) or that [`QuantileSketch::new`] allocates once.
//!
//! # Example
//! ```
//! use flinch_core::sketch::{QuantileSketch, QuantileSketchIn, RELATIVE_ERROR};
//!
//! let mut sketch = QuantileSketch::new(1024); // or QuantileSketchIn::from_buffer([0u64; 2048])
//! for i in 1..=10_000 {
//!     sketch.push(i as f64);
//! }
//! let s = sketch.stats();
//! let p99 = s.stats.p99.unwrap(); // exact: 9900.01
//! assert!((p99 - 9900.01).abs() <= RELATIVE_ERROR * 9900.01);
//! assert_eq!(s.stats.mean, Some(5000.5)); // exact
//! assert_eq!(s.collapsed, 0);
//! ```

use serde::Serialize;

use crate::stats::{Moments, Num, QUANTILES, Stats, lerp};

/// Relative error bound of a bucket's representative value: `1/129`.
pub const RELATIVE_ERROR: f64 = 1.0 / 129.0;
const _: () = assert!(RELATIVE_ERROR < 0.01, "the sketch promises at most 1%");

/// Bucket index of a positive finite value: exponent and top 6 mantissa bits.
fn bucket_index(x: f64) -> i64 {
    (x.to_bits() >> 46) as i64
}

/// The representative value of a bucket (harmonic mean of its bounds: equal relative error on
/// both sides).
fn bucket_value(idx: i64) -> f64 {
    let lo = f64::from_bits((idx as u64) << 46);
    let hi = f64::from_bits(((idx + 1) as u64) << 46);
    if !hi.is_finite() || lo == 0.0 {
        return lo;
    }
    // 2·lo·hi / (lo + hi), written so that it cannot overflow near f64::MAX.
    let ratio = hi / lo;
    lo * (2.0 * ratio / (1.0 + ratio))
}

/// The positive and negative halves of a bucket buffer.
fn halves(b: &mut [u64]) -> (&mut [u64], &mut [u64]) {
    let half = b.len() / 2;
    let (p, n) = b.split_at_mut(half);
    (p, &mut n[..half])
}

/// One sign's window of buckets (the slots live in the sketch's buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Store {
    /// Bucket index of slot 0.
    offset: i64,
    /// Values in the store.
    total: u64,
    /// Lowest and highest non-empty bucket index (valid when total > 0).
    lo: i64,
    hi: i64,
    /// True once any value was collapsed into slot 0.
    collapsed: bool,
}

impl Store {
    fn add(&mut self, slots: &mut [u64], idx: i64, count: u64) {
        let len = slots.len() as i64;
        if self.total == 0 {
            self.offset = idx - len / 2;
            self.lo = idx;
            self.hi = idx;
        } else if idx < self.offset {
            let target = (self.hi - len + 1).max(idx - len / 4);
            self.rebase(slots, target);
        } else if idx >= self.offset + len {
            let target = (idx - len + 1).max((idx - len + 1 + len / 4).min(self.lo));
            self.rebase(slots, target);
        }
        self.total += count;
        if idx < self.offset {
            self.collapsed = true;
            slots[0] += count;
            self.lo = self.offset;
        } else {
            slots[(idx - self.offset) as usize] += count;
            self.lo = self.lo.min(idx);
        }
        self.hi = self.hi.max(idx);
    }

    /// Moves the window so slot 0 is bucket `new_offset`, collapsing buckets below it.
    fn rebase(&mut self, slots: &mut [u64], new_offset: i64) {
        let len = slots.len() as i64;
        if new_offset > self.offset {
            let d = new_offset - self.offset;
            let below: u64 = if d >= len {
                let all = slots.iter().sum();
                slots.fill(0);
                all
            } else {
                let d = d as usize;
                let below = slots[..d].iter().sum();
                slots.copy_within(d.., 0);
                let n = slots.len();
                slots[n - d..].fill(0);
                below
            };
            if below > 0 {
                slots[0] += below;
                self.collapsed = true;
                self.lo = self.lo.max(new_offset);
            }
        } else if new_offset < self.offset {
            // Only called when the top buckets being dropped are empty.
            let d = (self.offset - new_offset).min(len) as usize;
            let n = slots.len();
            slots.copy_within(..n - d, d);
            slots[..d].fill(0);
        }
        self.offset = new_offset;
    }

    /// Bucket index of the value at `rank` (0-based, ascending magnitude).
    fn index_at(&self, slots: &[u64], rank: u64) -> i64 {
        let mut seen = 0;
        for (i, &c) in slots.iter().enumerate() {
            seen += c;
            if seen > rank {
                return self.offset + i as i64;
            }
        }
        self.hi
    }

    /// Values in slot 0 when it holds collapsed values.
    fn collapsed_count(&self, slots: &[u64]) -> u64 {
        if self.collapsed { slots[0] } else { 0 }
    }
}

/// Sketch statistics: [`Stats`] with approximate percentiles, plus the error statement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SketchStats {
    /// `n`, `mean`, `min`, `max` exact; percentiles approximate.
    pub stats: Stats,
    /// Relative error bound of each percentile ([`RELATIVE_ERROR`]), under the conditions in the
    /// module docs.
    pub quantile_relative_error: f64,
    /// Values whose bucket was collapsed (0 when the window held the whole range); percentiles
    /// at those ranks are only known to lie between `min` and the estimate.
    pub collapsed: u64,
}

/// A quantile sketch over a bucket buffer `B` (see the module docs). Use [`QuantileSketch`]
/// (alloc) or [`QuantileSketchIn::from_buffer`] with an array or slice.
#[derive(Clone, Debug)]
pub struct QuantileSketchIn<B> {
    buckets: B,
    pos: Store,
    neg: Store,
    zeros: u64,
    moments: Moments,
}

/// A quantile sketch whose buckets are allocated once, at construction.
#[cfg(feature = "alloc")]
pub type QuantileSketch = QuantileSketchIn<alloc::vec::Vec<u64>>;

/// Default buckets per sign: 32 powers of two (a range of about 4·10^9), 32 KiB in all.
pub const DEFAULT_BUCKETS_PER_SIGN: usize = 2048;

#[cfg(feature = "alloc")]
impl QuantileSketchIn<alloc::vec::Vec<u64>> {
    /// A sketch with `buckets_per_sign` buckets (at least 1) for each sign, allocated here.
    pub fn new(buckets_per_sign: usize) -> QuantileSketch {
        let n = buckets_per_sign.max(1) * 2;
        QuantileSketchIn::from_buffer(alloc::vec![0; n]).expect("at least two buckets")
    }
}

#[cfg(feature = "alloc")]
impl Default for QuantileSketchIn<alloc::vec::Vec<u64>> {
    fn default() -> Self {
        QuantileSketch::new(DEFAULT_BUCKETS_PER_SIGN)
    }
}

impl<B: AsRef<[u64]> + AsMut<[u64]>> QuantileSketchIn<B> {
    /// A sketch using `buffer` (zeroed here) as its buckets: the first half for positive values,
    /// the second half for negative ones. `None` when the buffer has fewer than 2 slots.
    pub fn from_buffer(mut buffer: B) -> Option<QuantileSketchIn<B>> {
        if buffer.as_ref().len() < 2 {
            return None;
        }
        buffer.as_mut().fill(0);
        Some(QuantileSketchIn {
            buckets: buffer,
            pos: Store::default(),
            neg: Store::default(),
            zeros: 0,
            moments: Moments::default(),
        })
    }

    fn halves_ref(&self) -> (&[u64], &[u64]) {
        let b = self.buckets.as_ref();
        let half = b.len() / 2;
        (&b[..half], &b[half..2 * half])
    }

    /// Adds a value; non-finite values are dropped. Returns whether it was kept.
    pub fn push(&mut self, v: impl Into<Num>) -> bool {
        let v = v.into();
        if !self.moments.push(v) {
            return false;
        }
        let x = v.to_f64();
        if x > 0.0 {
            let (p, _) = halves(self.buckets.as_mut());
            self.pos.add(p, bucket_index(x), 1);
        } else if x < 0.0 {
            let (_, n) = halves(self.buckets.as_mut());
            self.neg.add(n, bucket_index(-x), 1);
        } else {
            self.zeros += 1;
        }
        true
    }

    /// Count of finite values pushed.
    pub fn len(&self) -> u64 {
        self.moments.n
    }

    /// True before any finite value.
    pub fn is_empty(&self) -> bool {
        self.moments.n == 0
    }

    /// Adds `other`'s values (any bucket count; the result keeps this sketch's window size).
    pub fn merge<C: AsRef<[u64]> + AsMut<[u64]>>(&mut self, other: &QuantileSketchIn<C>) {
        let (op, on) = other.halves_ref();
        for (store, slots, positive) in [(&other.pos, op, true), (&other.neg, on, false)] {
            if store.total == 0 {
                continue;
            }
            for (i, &c) in slots.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let idx = store.offset + i as i64;
                let (p, n) = halves(self.buckets.as_mut());
                let (mine, slots) = if positive {
                    (&mut self.pos, p)
                } else {
                    (&mut self.neg, n)
                };
                mine.add(slots, idx, c);
                mine.collapsed |= store.collapsed && i == 0;
            }
        }
        self.zeros += other.zeros;
        self.moments.merge(&other.moments);
    }

    /// Estimated value at `rank` (0-based, ascending), clamped to `[min, max]`.
    fn value_at(&self, rank: u64) -> f64 {
        let (p, n) = self.halves_ref();
        let est = if rank < self.neg.total {
            -bucket_value(self.neg.index_at(n, self.neg.total - 1 - rank))
        } else if rank < self.neg.total + self.zeros {
            0.0
        } else {
            bucket_value(self.pos.index_at(p, rank - self.neg.total - self.zeros))
        };
        let min = self.moments.min.map_or(est, Num::to_f64);
        let max = self.moments.max.map_or(est, Num::to_f64);
        est.clamp(min, max)
    }

    /// numpy-linear percentile estimate (`q` in `[0, 1]`); `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.moments.n;
        if n == 0 {
            return None;
        }
        let h = (n - 1) as f64 * q;
        if h >= (n - 1) as f64 {
            return self.moments.max.map(Num::to_f64);
        }
        let lo = h as u64;
        let a = if lo == 0 {
            self.moments.min.map_or(0.0, Num::to_f64)
        } else {
            self.value_at(lo)
        };
        let b = if lo + 1 == n - 1 {
            self.moments.max.map_or(0.0, Num::to_f64)
        } else {
            self.value_at(lo + 1)
        };
        let t = h - lo as f64;
        if !(b - a).is_finite() {
            // Estimates spanning most of the f64 range (only possible with collapsed buckets):
            // `lerp` would give NaN; take the nearer rank instead.
            return Some(if t >= 0.5 { b } else { a });
        }
        Some(lerp(a, b, t))
    }

    /// [`Stats`] with exact `n`, `mean`, `min`, `max` and estimated percentiles, with the
    /// error statement.
    pub fn stats(&self) -> SketchStats {
        SketchStats {
            stats: self.moments.stats_with(QUANTILES.map(|q| self.quantile(q))),
            quantile_relative_error: RELATIVE_ERROR,
            collapsed: self.collapsed(),
        }
    }

    /// Values whose bucket was collapsed (see [`SketchStats::collapsed`]).
    pub fn collapsed(&self) -> u64 {
        let (p, n) = self.halves_ref();
        self.pos.collapsed_count(p) + self.neg.collapsed_count(n)
    }

    /// Forgets every value; keeps the buffer.
    pub fn clear(&mut self) {
        self.buckets.as_mut().fill(0);
        self.pos = Store::default();
        self.neg = Store::default();
        self.zeros = 0;
        self.moments = Moments::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::stats_f64;
    use crate::testutil::Rng;
    use std::vec::Vec;

    fn check(values: &[f64], sketch: &SketchStats) {
        let exact = stats_f64(values);
        assert_eq!(sketch.stats.n, exact.n);
        assert_eq!(sketch.stats.mean, exact.mean);
        assert_eq!(sketch.stats.min, exact.min);
        assert_eq!(sketch.stats.max, exact.max);
        assert_eq!(sketch.collapsed, 0);
        let pairs = [
            (sketch.stats.p50, exact.p50),
            (sketch.stats.p90, exact.p90),
            (sketch.stats.p95, exact.p95),
            (sketch.stats.p99, exact.p99),
        ];
        for (got, want) in pairs {
            let (got, want) = (got.unwrap(), want.unwrap());
            let tol = RELATIVE_ERROR * want.abs() * (1.0 + 1e-12) + 1e-300;
            assert!((got - want).abs() <= tol, "got {got}, exact {want}");
        }
    }

    fn sketch_of(values: &[f64], buckets: usize) -> SketchStats {
        let mut s = QuantileSketch::new(buckets);
        values.iter().for_each(|&v| {
            s.push(v);
        });
        s.stats()
    }

    #[test]
    fn within_one_percent_on_random_distributions() {
        let mut rng = Rng::from_env(41);
        for case in 0..300 {
            let n = 1 + rng.below(3000) as usize;
            let kind = case % 6;
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    let u = rng.unit_f64();
                    match kind {
                        0 => u * 1000.0,                                 // uniform
                        1 => (3.0 * (u * 2.0 - 1.0) * 2.5).exp() * 1e-3, // log-uniform-ish
                        2 => 1.0 / (1.0 - u).powf(1.5),                  // heavy (Pareto) tail
                        3 => 42.5,                                       // constant
                        4 => -(u * 1e6) - 1.0,                           // all negative
                        _ => {
                            // lognormal by Box-Muller
                            let v = rng.unit_f64().max(1e-300);
                            let z = (-2.0 * v.ln()).sqrt() * (std::f64::consts::TAU * u).cos();
                            (z * 1.5).exp() * 250.0
                        }
                    }
                })
                .collect();
            check(&values, &sketch_of(&values, 2048));
        }
    }

    #[test]
    fn zeros_and_signs() {
        let values = [0.0, 0.0, -0.0, 0.0];
        check(&values, &sketch_of(&values, 16));
        let mut values: Vec<f64> = (1..=1000).map(|i| -(i as f64)).collect();
        values.extend(std::iter::repeat_n(0.0, 10));
        check(&values, &sketch_of(&values, 1024));
        assert_eq!(sketch_of(&[], 8).stats, Stats::EMPTY);
        let s = sketch_of(&[f64::NAN, 3.0], 8);
        assert_eq!(s.stats.n, 1);
        assert_eq!(s.stats.p99, Some(3.0));
    }

    #[test]
    fn merge_equals_single_sketch() {
        let mut rng = Rng::from_env(42);
        let values: Vec<f64> = (0..5000).map(|_| (rng.unit_f64() * 10.0).exp()).collect();
        let mut whole = QuantileSketch::new(1024);
        let mut a = QuantileSketch::new(1024);
        let mut b = QuantileSketchIn::from_buffer([0u64; 2048]).unwrap();
        for (i, &v) in values.iter().enumerate() {
            whole.push(v);
            if i % 3 == 0 {
                a.push(v);
            } else {
                b.push(v);
            }
        }
        a.merge(&b);
        assert_eq!(a.stats(), whole.stats());
        check(&values, &whole.stats());
    }

    #[test]
    fn narrow_window_collapses_low_values_and_says_so() {
        // 16 buckets per sign = a quarter of a power of two: the range cannot fit.
        let values: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        let s = sketch_of(&values, 16);
        assert!(s.collapsed > 0);
        let exact = stats_f64(&values);
        // High quantiles stay accurate.
        let (got, want) = (s.stats.p99.unwrap(), exact.p99.unwrap());
        assert!(
            (got - want).abs() <= RELATIVE_ERROR * want,
            "{got} vs {want}"
        );
        assert_eq!(s.stats.mean, exact.mean);
        // Decreasing input also works (the window moves down while it can).
        let rev: Vec<f64> = values.iter().rev().copied().collect();
        let s = sketch_of(&rev, 16);
        assert!(s.collapsed > 0);
        assert!((s.stats.p99.unwrap() - want).abs() <= RELATIVE_ERROR * want);
    }

    #[test]
    fn window_follows_data_without_collapsing_when_it_fits() {
        // Spread over 10 powers of two, fed in increasing then decreasing order.
        let mut values: Vec<f64> = (0..640).map(|i| 2f64.powf(i as f64 / 64.0)).collect();
        values.extend((0..640).rev().map(|i| 2f64.powf(i as f64 / 64.0) * 1.001));
        check(&values, &sketch_of(&values, 700));
    }

    #[test]
    fn buckets_bound_their_values() {
        let mut rng = Rng::from_env(43);
        for _ in 0..100_000 {
            let x = (rng.unit_f64() * 1400.0 - 700.0).exp();
            let rep = bucket_value(bucket_index(x));
            assert!(
                (rep - x).abs() <= RELATIVE_ERROR * x * (1.0 + 1e-12),
                "{x} -> {rep}"
            );
        }
    }

    /// Where the two ranks of a percentile straddle zero the bound is absolute:
    /// `RELATIVE_ERROR * (|x[lo]| + |x[lo + 1]|)`.
    #[test]
    fn mixed_signs_within_the_absolute_bound() {
        let mut rng = Rng::from_env(44);
        for _ in 0..200 {
            let n = 2 + rng.below(500) as usize;
            let shift = rng.unit_f64() * 2.0 - 1.0;
            let mut values: Vec<f64> = (0..n)
                .map(|_| (rng.unit_f64() - 0.5 + shift) * 1e3)
                .collect();
            let s = sketch_of(&values, 2048).stats;
            values.sort_by(f64::total_cmp);
            for (q, got) in [(0.5, s.p50), (0.9, s.p90), (0.95, s.p95), (0.99, s.p99)] {
                let h = (n - 1) as f64 * q;
                let lo = h.floor() as usize;
                let hi = (lo + 1).min(n - 1);
                let want = crate::stats::percentile_linear(&values, q).unwrap();
                let tol = RELATIVE_ERROR * (values[lo].abs() + values[hi].abs()) * (1.0 + 1e-12);
                assert!(
                    (got.unwrap() - want).abs() <= tol + 1e-12,
                    "{got:?} vs {want}"
                );
            }
        }
    }

    #[test]
    fn merging_collapsed_sketches_reports_collapse() {
        let mut a = QuantileSketch::new(16);
        let mut b = QuantileSketch::new(16);
        for i in 1..=1000 {
            a.push(i as f64);
            b.push(i as f64 * 0.5);
        }
        assert!(a.stats().collapsed > 0 && b.stats().collapsed > 0);
        a.merge(&b);
        let s = a.stats();
        assert_eq!(s.stats.n, 2000);
        assert!(s.collapsed > 0);
        assert_eq!(s.stats.max, Some(Num::Float(1000.0)));
        assert_eq!(s.stats.min, Some(Num::Float(0.5)));
    }

    #[test]
    fn integers_keep_their_type_in_min_max() {
        let mut s = QuantileSketch::new(64);
        for i in [3i64, 9, -2, 7] {
            s.push(i);
        }
        let st = s.stats().stats;
        assert_eq!((st.min, st.max), (Some(Num::Int(-2)), Some(Num::Int(9))));
        assert_eq!(st.mean, Some(4.25));
        assert!(QuantileSketchIn::from_buffer([0u64; 1]).is_none());
    }

    /// The whole f64 range at once: no panic, exact moments, collapse reported, and every
    /// estimate inside [min, max].
    #[test]
    fn extreme_values_do_not_break_it() {
        let values = [
            f64::MAX,
            5e-324,
            -f64::MAX,
            1.0,
            -5e-324,
            f64::MIN_POSITIVE,
            0.0,
            1e300,
            -1e-300,
        ];
        for buckets in [1, 2, 16, 2048] {
            let mut s = QuantileSketch::new(buckets);
            values.iter().for_each(|&v| {
                s.push(v);
            });
            let st = s.stats();
            let exact = stats_f64(&values);
            assert_eq!(
                (st.stats.n, st.stats.min, st.stats.max),
                (exact.n, exact.min, exact.max)
            );
            assert_eq!(st.stats.mean, exact.mean);
            for p in [st.stats.p50, st.stats.p90, st.stats.p95, st.stats.p99] {
                let p = p.unwrap();
                assert!((-f64::MAX..=f64::MAX).contains(&p), "{buckets}: {st:?}");
            }
        }
    }
}
