//! The `stats` of a list of values (docs/numerics.md): count, exact mean, numpy-linear percentiles, and the original min/max.
//!
//! Everything here matches `reference/summarize_e2e_profiles.py` `stats()` bit for bit:
//! - non-finite values are dropped ([`Num::is_finite`]);
//! - `mean` is the correctly rounded sum divided by `n` (`math.fsum(values) / n`), computed by
//!   [`Fsum`], an exact fixed-size accumulator (no allocation);
//! - percentiles are numpy's default `method="linear"` (`h = (n - 1) * q`), interpolated with
//!   numpy's `_lerp` ([`lerp`]) so results are bit-identical;
//! - `min` and `max` are the original values: an integer stays an integer ([`Num::Int`]), and
//!   among equal values `min` is the first and `max` the last in input order, as Python's stable
//!   `sorted(values)[0]` / `[-1]` give.
//!
//! Exact statistics need the values: [`stats_in_place`] works on a caller's slice without
//! allocating; under `alloc`, [`ExactStats`] collects values and [`stats_f64`] is a convenience.
//! For bounded memory use [`crate::sketch::QuantileSketch`], which gives the same shape with a
//! stated error bound.
//!
//! One departure: where Python's `math.fsum` raises `OverflowError` (a partial or final sum
//! beyond the f64 range, e.g. `[MAX, MAX, -MAX]`), the reference crashes; here the mean is the
//! correctly rounded exact sum / n (`MAX / 3` there), or `±inf` when the sum itself is beyond the
//! range, which serializes as `null`.
//!
//! # Example
//! ```
//! use flinch_core::stats::{Num, stats, stats_f64};
//!
//! let s = stats(&[Num::Int(5), Num::Float(1.5), Num::Float(f64::NAN), Num::Int(2)]);
//! assert_eq!(s.n, 3);
//! assert_eq!(s.min, Some(Num::Float(1.5)));
//! assert_eq!(s.max, Some(Num::Int(5))); // prints as `5`, as the reference does
//! assert_eq!(s.p50, Some(2.0));
//! assert_eq!(stats_f64(&[0.1; 10]).mean, Some(0.1)); // fsum: exactly 1.0 / 10
//! ```
use serde::Serialize;

#[cfg(feature = "alloc")]
mod exact;
mod fsum;
mod moments;
mod num;
mod percentile;
#[cfg(feature = "alloc")]
mod ranks;
#[cfg(test)]
mod tests;

#[cfg(feature = "alloc")]
pub use exact::ExactStats;
pub use fsum::{Fsum, fsum};
pub use moments::Moments;
pub use num::Num;
pub use percentile::{lerp, percentile_linear, percentile_linear_by};
#[cfg(feature = "alloc")]
pub(crate) use ranks::stats_ns_in_place;

/// The `stats` of a list of values. Serializes with exactly the reference's keys,
/// `null` for `None` (and for a non-finite mean).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Count of finite values.
    pub n: u64,
    /// Correctly rounded sum / n.
    pub mean: Option<f64>,
    /// The smallest value, as given (first of equals).
    pub min: Option<Num>,
    /// 50th percentile, numpy-linear.
    pub p50: Option<f64>,
    /// 90th percentile, numpy-linear.
    pub p90: Option<f64>,
    /// 95th percentile, numpy-linear.
    pub p95: Option<f64>,
    /// 99th percentile, numpy-linear.
    pub p99: Option<f64>,
    /// The largest value, as given (last of equals).
    pub max: Option<Num>,
}

impl Stats {
    /// `n: 0` and `null` for the rest: the statistics of no values.
    pub const EMPTY: Stats = Stats {
        n: 0,
        mean: None,
        min: None,
        p50: None,
        p90: None,
        p95: None,
        p99: None,
        max: None,
    };
}

/// The quantiles `stats` reports, in key order `p50, p90, p95, p99`.
pub const QUANTILES: [f64; 4] = [0.5, 0.9, 0.95, 0.99];

/// Exact `stats` of `values`, without allocating. Reorders the slice: finite values are
/// moved to the front and sorted. (Same zero-sign caveat as [`stats_f64_in_place`].)
pub fn stats_in_place(values: &mut [Num]) -> Stats {
    let mut moments = Moments::default();
    let mut kept = 0;
    for i in 0..values.len() {
        let v = values[i];
        if moments.push(v) {
            values[kept] = v;
            kept += 1;
        }
    }
    let finite = &mut values[..kept];
    finite.sort_unstable_by(|a, b| a.cmp_exact(*b));
    let pct = QUANTILES.map(|q| percentile_linear_by(kept, q, |i| finite[i].to_f64()));
    moments.stats_with(pct)
}

/// Exact `stats` of f64 values, without allocating (reorders the slice). Bit-identical
/// to the reference except, where both `0.0` and `-0.0` occur, possibly the sign of a zero
/// percentile (Python's stable sort keeps their input order; JSON values compare equal).
pub fn stats_f64_in_place(values: &mut [f64]) -> Stats {
    let mut moments = Moments::default();
    let mut kept = 0;
    for i in 0..values.len() {
        let v = values[i];
        if moments.push(Num::Float(v)) {
            values[kept] = v;
            kept += 1;
        }
    }
    let finite = &mut values[..kept];
    finite.sort_unstable_by(f64::total_cmp);
    let pct = QUANTILES.map(|q| percentile_linear(finite, q));
    moments.stats_with(pct)
}

/// Exact `stats` of f64 values (copies them).
#[cfg(feature = "alloc")]
pub fn stats_f64(values: &[f64]) -> Stats {
    let mut copy = alloc::vec::Vec::from(values);
    stats_f64_in_place(&mut copy)
}

/// Exact `stats` of [`Num`] values (copies them).
#[cfg(feature = "alloc")]
pub fn stats(values: &[Num]) -> Stats {
    let mut copy = alloc::vec::Vec::from(values);
    stats_in_place(&mut copy)
}
