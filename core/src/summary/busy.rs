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
//! most the bound that [`BusyUnion::finish`] returns.
//!
//! With an [`IntervalSpill`] the retired half is also written out as a sorted run, and later
//! intervals are taken whole: when none reached back behind a watermark the retired sum plus the
//! live union is exact as above, and otherwise [`BusyUnion::finish`] merges every run with the
//! live intervals ([`merged_union_ns`]) for the exact union. If the spill fails (a write or a
//! read), the union falls back to the sum and states the overlap it may count twice.
use alloc::vec::Vec;

use super::spill::{IntervalSpill, Run, merged_union_ns};
use crate::intervals::{Interval, IntervalUnion};

/// See the [module docs](self).
pub(crate) struct BusyUnion {
    /// Slot limit `usize::MAX` (exact, growing without limit) or twice the budget.
    live: IntervalUnion,
    retired_ns: u64,
    watermark_ns: i64,
    error_ns: u64,
    /// The runs written to the spill; `spill_ok` false once a write failed.
    runs: Vec<Run>,
    spill_ok: bool,
    /// Length of intervals taken whole although they reached back behind the watermark (the
    /// part behind it): what the retired sum plus the live union may count twice.
    late_ns: u64,
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
            runs: Vec::new(),
            spill_ok: true,
            late_ns: 0,
        }
    }

    /// Live intervals (memory in use, in 16-byte slots).
    #[inline]
    pub(crate) fn live_len(&self) -> usize {
        self.live.len()
    }

    /// Adds `[start_ns, end_ns)`; ignored when empty. `spilling`: the owner has a spill, so an
    /// interval reaching behind the watermark is taken whole (and merged at the end) rather than
    /// cut at the watermark with its cut part counted into the error bound.
    #[inline]
    pub(crate) fn insert(&mut self, mut start_ns: i64, end_ns: i64, spilling: bool) {
        if end_ns <= start_ns {
            return;
        }
        if start_ns < self.watermark_ns {
            let cut = end_ns.min(self.watermark_ns);
            let before = cut.wrapping_sub(start_ns) as u64;
            if spilling && self.spill_ok {
                self.late_ns = self.late_ns.saturating_add(before);
            } else {
                self.retired_ns = self.retired_ns.saturating_add(before);
                self.error_ns = self.error_ns.saturating_add(before);
                start_ns = cut;
                if end_ns <= start_ns {
                    return;
                }
            }
        }
        self.live.insert(start_ns, end_ns);
    }

    /// Moves the older half of the live intervals into the retired sum (and to `spill` as a
    /// run, when given), in place, and gives back storage beyond twice what stays live.
    #[cold]
    pub(crate) fn retire(&mut self, spill: Option<&mut dyn IntervalSpill>) {
        let ivs = self.live.intervals();
        let n = ivs.len();
        if n < 2 {
            return;
        }
        let split = n / 2;
        if let Some(spill) = spill
            && self.spill_ok
        {
            match spill.write_run(&ivs[..split]) {
                Some(handle) => self.runs.push(Run {
                    handle,
                    len: split as u64,
                }),
                None => self.spill_ok = false,
            }
        }
        // Intervals before an earlier watermark may come back in a later half: the watermark
        // never moves back.
        self.watermark_ns = self.watermark_ns.max(ivs[split - 1].end_ns);
        let old = self.live.remove_first(split);
        self.retired_ns = self.retired_ns.saturating_add(old);
        self.error_ns = self
            .error_ns
            .saturating_add(self.live.take_error_bound_ns());
        self.live.shrink_storage();
    }

    /// The runs written to the spill, the live intervals, and whether every retired interval
    /// is in a run (false once a write failed): what a merge of the whole union reads.
    pub(crate) fn parts(&mut self) -> (&[Run], &[Interval], bool) {
        let ok = self.spill_ok;
        (&self.runs, self.live.intervals(), ok)
    }

    /// The retired total, ns (what the runs hold, counted once per interval retired).
    pub(crate) fn retired_ns(&self) -> u64 {
        self.retired_ns
    }

    /// The union length and how much it may exceed the exact one, ns: exact (bound 0) unless a
    /// limit was reached without a working spill.
    pub(crate) fn finish(&mut self, spill: Option<&mut dyn IntervalSpill>) -> (u64, u64) {
        if self.late_ns > 0
            && self.spill_ok
            && let Some(spill) = spill
        {
            let bound = self.live.error_bound_ns();
            if let Some(union_ns) = merged_union_ns(&self.runs, self.live.intervals(), spill) {
                return (union_ns, self.error_ns.saturating_add(bound));
            }
        }
        let union_ns = self.retired_ns.saturating_add(self.live.union_ns());
        let bound = self
            .error_ns
            .saturating_add(self.late_ns)
            .saturating_add(self.live.error_bound_ns());
        (union_ns, bound)
    }
}

#[cfg(test)]
mod tests {
    use super::BusyUnion;
    use crate::intervals::IntervalUnion;
    use crate::summary::spill::MemorySpill;
    use crate::testutil::Rng;

    #[test]
    fn exact_when_time_ordered_and_bounded_otherwise() {
        let mut rng = Rng(5);
        for round in 0..60 {
            let cap = 8 + rng.below(40) as usize;
            let mut exact = IntervalUnion::exact();
            let mut small = BusyUnion::new(cap);
            let mut unbounded = BusyUnion::new(usize::MAX);
            let mut spilled = BusyUnion::new(cap);
            let mut spill = MemorySpill::default();
            // A spill that fails after 2 runs: the union falls back to a stated bound.
            let mut failing = BusyUnion::new(cap);
            let mut half_full = MemorySpill::default();
            half_full.fail_from_run = Some(2);
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
                small.insert(start, end, false);
                if small.live_len() > cap {
                    small.retire(None);
                }
                spilled.insert(start, end, true);
                if spilled.live_len() > cap {
                    spilled.retire(Some(&mut spill));
                }
                failing.insert(start, end, true);
                if failing.live_len() > cap {
                    failing.retire(Some(&mut half_full));
                }
                unbounded.insert(start, end, false);
                assert!(small.live_len() <= cap, "live slots stay bounded");
            }
            let want = exact.union_ns();
            assert_eq!(unbounded.finish(None), (want, 0));
            assert_eq!(
                spilled.finish(Some(&mut spill)),
                (want, 0),
                "round {round}: exact with a spill, in any order"
            );
            let (got, bound) = failing.finish(Some(&mut half_full));
            assert!(
                got >= want && got - want <= bound,
                "round {round}: {got} {want} {bound}"
            );
            let (got, bound) = small.finish(None);
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
