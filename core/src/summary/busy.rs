//! A busy-time union bounded by a slot count that stays exact for time-ordered input.
//!
//! When `max_intervals` is finite, the live [`IntervalUnion`] is kept below half its slots by
//! retiring the older half of its disjoint intervals into a plain sum, with a watermark (the
//! end of the last retired interval). Later intervals that start at or after the watermark
//! cannot overlap retired time, so for input whose events per union arrive roughly in time
//! order (as Kineto writes them) the result is exact. The part of an interval before the
//! watermark is counted as busy and added to the error bound: the reported union is at least
//! the exact one and exceeds it by at most [`BusyUnion::error_bound_ns`].
use alloc::vec::Vec;

use crate::intervals::{Interval, IntervalUnion};

/// See the [module docs](self).
pub(crate) struct BusyUnion {
    live: IntervalUnion,
    /// Live intervals that trigger a retirement (`usize::MAX`: exact, never retires).
    retire_at: usize,
    /// Scratch for the intervals kept across a retirement (allocated at the first one).
    keep: Vec<Interval>,
    retired_ns: u64,
    watermark_ns: i64,
    error_ns: u64,
}

impl BusyUnion {
    /// Exact when `max_intervals == usize::MAX`; else at most `max_intervals` live slots
    /// (16 bytes each) plus `max_intervals / 2` scratch slots.
    pub(crate) fn new(max_intervals: usize) -> BusyUnion {
        let (live, retire_at) = if max_intervals == usize::MAX {
            (IntervalUnion::exact(), usize::MAX)
        } else {
            let cap = max_intervals.max(8);
            (IntervalUnion::bounded_growing(cap), cap / 2)
        };
        BusyUnion {
            live,
            retire_at,
            keep: Vec::new(),
            retired_ns: 0,
            watermark_ns: i64::MIN,
            error_ns: 0,
        }
    }

    /// Adds `[start_ns, end_ns)`; ignored when empty.
    #[inline]
    pub(crate) fn insert(&mut self, mut start_ns: i64, end_ns: i64) {
        if end_ns <= start_ns {
            return;
        }
        if start_ns < self.watermark_ns {
            let cut = end_ns.min(self.watermark_ns);
            let before = cut.wrapping_sub(start_ns) as u64;
            self.retired_ns = self.retired_ns.saturating_add(before);
            self.error_ns = self.error_ns.saturating_add(before);
            start_ns = cut;
            if end_ns <= start_ns {
                return;
            }
        }
        self.live.insert(start_ns, end_ns);
        if self.live.len() >= self.retire_at {
            self.retire();
        }
    }

    /// Moves the older half of the live intervals into `retired_ns`.
    #[cold]
    fn retire(&mut self) {
        let ivs = self.live.intervals();
        let n = ivs.len();
        if n < 2 {
            return;
        }
        let split = n / 2;
        if self.keep.capacity() == 0 {
            self.keep.reserve_exact(self.retire_at);
        }
        self.keep.clear();
        self.keep.extend_from_slice(&ivs[split..]);
        let old: u64 = ivs[..split].iter().map(|iv| iv.len_ns()).sum();
        self.retired_ns = self.retired_ns.saturating_add(old);
        self.watermark_ns = ivs[split - 1].end_ns;
        self.live.clear();
        for iv in &self.keep {
            self.live.insert(iv.start_ns, iv.end_ns);
        }
    }

    /// The union length, ns: exact, or at most [`error_bound_ns`](Self::error_bound_ns) above it.
    pub(crate) fn union_ns(&mut self) -> u64 {
        self.retired_ns.saturating_add(self.live.union_ns())
    }

    /// How much the union may exceed the exact one, ns.
    pub(crate) fn error_bound_ns(&self) -> u64 {
        self.error_ns.saturating_add(self.live.error_bound_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::BusyUnion;
    use crate::intervals::IntervalUnion;
    use crate::testutil::Rng;

    #[test]
    fn exact_when_time_ordered_and_bounded_otherwise() {
        let mut rng = Rng(5);
        for round in 0..60 {
            let cap = 8 + rng.below(40) as usize;
            let mut exact = IntervalUnion::exact();
            let mut small = BusyUnion::new(cap);
            let mut unbounded = BusyUnion::new(usize::MAX);
            let ordered = round % 2 == 0;
            let mut t = 0i64;
            let n = 1 + rng.below(2000);
            for _ in 0..n {
                let start = if ordered {
                    // Time-ordered starts, with overlaps and gaps.
                    t += rng.below(50) as i64;
                    t
                } else {
                    rng.below(100_000) as i64
                };
                let end = start + rng.below(120) as i64;
                exact.insert(start, end);
                small.insert(start, end);
                unbounded.insert(start, end);
                assert!(small.live.len() < cap.max(8), "live slots stay bounded");
            }
            let want = exact.union_ns();
            assert_eq!(
                (unbounded.union_ns(), unbounded.error_bound_ns()),
                (want, 0)
            );
            let got = small.union_ns();
            let bound = small.error_bound_ns();
            if ordered {
                assert_eq!((got, bound), (want, 0), "round {round}");
            } else {
                assert!(
                    got >= want && got - want <= bound,
                    "round {round}: {got} {want} {bound}"
                );
            }
        }
    }
}
