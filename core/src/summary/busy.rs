//! Busy-time unions that share one interval budget and stay exact while it suffices.
//!
//! Each union keeps its disjoint intervals in a live [`IntervalUnion`]. With a finite budget
//! ([`Limits::max_intervals`](crate::Limits::max_intervals) live intervals over all unions of a
//! summary), the owner calls [`BusyUnion::retire`] on the largest union when the budget is
//! exceeded: the older half of its disjoint intervals is retired into a plain sum behind a
//! watermark (the end of the last retired interval), in place, and storage beyond twice what
//! stays live is given back. Later
//! intervals that start at or after the watermark cannot overlap retired time, so input in
//! time order stays exact. The part of an interval before the watermark is counted as busy and
//! added to the error bound: the reported union is at least the exact one and exceeds it by at
//! most [`BusyUnion::error_bound_ns`].
use crate::intervals::IntervalUnion;

/// See the [module docs](self).
pub(crate) struct BusyUnion {
    /// Slot limit `usize::MAX` (exact, growing without limit) or twice the budget.
    live: IntervalUnion,
    retired_ns: u64,
    watermark_ns: i64,
    error_ns: u64,
}

impl BusyUnion {
    /// Exact when `budget == usize::MAX`; else the live storage grows with use, up to twice
    /// the budget (the owner retires before that).
    pub(crate) fn new(budget: usize) -> BusyUnion {
        let cap = if budget == usize::MAX {
            usize::MAX
        } else {
            budget.saturating_mul(2).max(8)
        };
        BusyUnion {
            live: IntervalUnion::with_capacity_limit(cap),
            retired_ns: 0,
            watermark_ns: i64::MIN,
            error_ns: 0,
        }
    }

    /// Live intervals (memory in use, in 16-byte slots).
    #[inline]
    pub(crate) fn live_len(&self) -> usize {
        self.live.len()
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
    }

    /// Moves the older half of the live intervals into the retired sum, in place, and gives
    /// back storage beyond twice what stays live.
    #[cold]
    pub(crate) fn retire(&mut self) {
        let ivs = self.live.intervals();
        let n = ivs.len();
        if n < 2 {
            return;
        }
        let split = n / 2;
        self.watermark_ns = ivs[split - 1].end_ns;
        let old = self.live.remove_first(split);
        self.retired_ns = self.retired_ns.saturating_add(old);
        self.error_ns = self
            .error_ns
            .saturating_add(self.live.take_error_bound_ns());
        self.live.shrink_storage();
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
                if small.live_len() > cap {
                    small.retire();
                }
                unbounded.insert(start, end);
                assert!(small.live_len() <= cap, "live slots stay bounded");
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
