//! The parts of [`Stats`] that need no stored values.
use core::cmp::Ordering;

use super::{Fsum, Num, Stats};

/// Running count, exact sum, and original-valued min/max of finite values: the parts of
/// [`Stats`] that need no stored values. Used by [`stats_in_place`](super::stats_in_place) and the sketch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Moments {
    /// Count of finite values seen.
    pub n: u64,
    /// Exact sum of the values (each converted to f64 first, as `math.fsum` does).
    pub sum: Fsum,
    /// First smallest value.
    pub min: Option<Num>,
    /// Last largest value.
    pub max: Option<Num>,
}

impl Moments {
    /// Adds one value; returns false (and ignores it) when it is not finite.
    pub fn push(&mut self, v: Num) -> bool {
        if !v.is_finite() {
            return false;
        }
        self.n += 1;
        self.sum.add(v.to_f64());
        match self.min {
            Some(m) if v.cmp_exact(m) != Ordering::Less => {}
            _ => self.min = Some(v),
        }
        match self.max {
            Some(m) if v.cmp_exact(m) == Ordering::Less => {}
            _ => self.max = Some(v),
        }
        true
    }

    /// Merges `other`, as if its values had been pushed after this one's.
    pub fn merge(&mut self, other: &Moments) {
        self.n += other.n;
        self.sum.merge(&other.sum);
        if let Some(v) = other.min {
            match self.min {
                Some(m) if v.cmp_exact(m) != Ordering::Less => {}
                _ => self.min = Some(v),
            }
        }
        if let Some(v) = other.max {
            match self.max {
                Some(m) if v.cmp_exact(m) == Ordering::Less => {}
                _ => self.max = Some(v),
            }
        }
    }

    /// `fsum / n`, or `None` with no values.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum.value() / self.n as f64)
    }

    /// [`Stats`] with these moments and the given percentiles `[p50, p90, p95, p99]`.
    pub fn stats_with(&self, percentiles: [Option<f64>; 4]) -> Stats {
        if self.n == 0 {
            return Stats::EMPTY;
        }
        Stats {
            n: self.n,
            mean: self.mean(),
            min: self.min,
            p50: percentiles[0],
            p90: percentiles[1],
            p95: percentiles[2],
            p99: percentiles[3],
            max: self.max,
        }
    }
}
