//! Exact statistics of collected values (memory grows with them: the exact mode).

use super::{Moments, Num, QUANTILES, Stats, percentile_linear_by};

/// Collects values and gives exact [`Stats`] (memory grows with the values: the exact mode).
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Default)]
pub struct ExactStats {
    values: alloc::vec::Vec<Num>,
    moments: Moments,
}

#[cfg(feature = "alloc")]
impl ExactStats {
    /// No values yet.
    pub fn new() -> ExactStats {
        ExactStats::default()
    }

    /// Adds a value; non-finite values are dropped. Returns whether it was kept.
    pub fn push(&mut self, v: impl Into<Num>) -> bool {
        let v = v.into();
        let kept = self.moments.push(v);
        if kept {
            self.values.push(v);
        }
        kept
    }

    /// Count of finite values so far.
    pub fn len(&self) -> u64 {
        self.moments.n
    }

    /// True before any finite value.
    pub fn is_empty(&self) -> bool {
        self.moments.n == 0
    }

    /// Merges `other`'s values, as if pushed after this one's.
    pub fn merge(&mut self, other: &ExactStats) {
        self.moments.merge(&other.moments);
        self.values.extend_from_slice(&other.values);
    }

    /// The statistics so far (sorts the stored values; more values may follow).
    pub fn stats(&mut self) -> Stats {
        self.values.sort_unstable_by(|a, b| a.cmp_exact(*b));
        let v = &self.values;
        let pct = QUANTILES.map(|q| percentile_linear_by(v.len(), q, |i| v[i].to_f64()));
        self.moments.stats_with(pct)
    }
}
