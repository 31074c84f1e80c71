//! Exact percentiles of the listed ops whose durations outgrew the exact-values budget, from
//! further passes over the same input ([`EventReplay`]), in bounded memory.
//!
//! The percentiles read at most eight order statistics (ranks) of an op's `n` durations. Each
//! rank is known to lie in a range of values `[lo, hi]` with `below` values under `lo` and
//! `count` values inside (at first `[min, max]`, `below = 0`, `count = n`). A pass either
//! collects the values inside the range (when `count` fits the budget) and selects the rank
//! among them, or counts them in [`BUCKETS`] equal buckets and narrows the range to the bucket
//! holding the rank. A bucket one nanosecond wide is the value itself, so an op of durations up
//! to 2^36 ns (69 s) needs at most three counting passes whatever `n`, and usually one collecting
//! pass. Memory: the collected values (at most the budget) plus 32 KiB per counting range
//! (at most eight per listed op).
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::fmt;

use crate::json::Event;
use crate::stats::{Fsum, QUANTILES, percentile_linear_by};

/// Reads the same input again for another pass (native: the file, opened again).
pub trait EventReplay: Send {
    /// Gives every event of the input to `sink`, in order, from the start; returns how many
    /// there were, or why it could not (the summary then keeps the approximate percentiles and
    /// says why).
    ///
    /// # Errors
    /// The implementor's own (native: the file's read error, or the scanner's).
    fn replay(&mut self, sink: &mut dyn FnMut(&Event<'_>)) -> Result<u64, ReplayError>;
}

/// Why an [`EventReplay`] could not read the input again: its implementor's error.
pub type ReplayError = Box<dyn core::error::Error + Send + Sync>;

/// Why a further pass over the input gave no result.
#[derive(Debug)]
pub enum PassError {
    /// There is no way to read the input again.
    NoReplay,
    /// The pass did not see what the first pass saw.
    InputChanged,
    /// The pass ended before the passes were done.
    EndedEarly,
    /// The replay failed.
    Replay(ReplayError),
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::NoReplay => f.write_str("the input cannot be read again"),
            PassError::InputChanged => f.write_str("the input changed between passes"),
            PassError::EndedEarly => f.write_str("the pass ended early"),
            PassError::Replay(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for PassError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            PassError::Replay(e) => Some(&**e),
            _ => None,
        }
    }
}

/// Buckets of a counting pass (8 bytes each).
pub(crate) const BUCKETS: u64 = 4096;

const NONE: u32 = u32::MAX;

enum Probe {
    /// Counting the values of `[lo, lo + width * counts.len())`.
    Count { width: u64, counts: Vec<u64> },
    /// Collecting the values of the range.
    Collect(Vec<u64>),
}

struct Range {
    lo: u64,
    hi: u64,
    below: u64,
    count: u64,
    /// Indexes into the op's `ranks` that lie in this range.
    ranks: Vec<usize>,
    probe: Probe,
}

struct OpRefine {
    n: u64,
    /// The exact sum of the µs values, from the first pass, when asked for.
    sum: Option<Fsum>,
    /// The ranks the percentiles read, ascending.
    ranks: Vec<u64>,
    values: Vec<Option<u64>>,
    ranges: Vec<Range>,
}

/// The ranks (0-based, ascending, distinct) that the percentiles of `n` values read.
pub(crate) fn read_ranks(n: usize) -> Vec<usize> {
    let ranks = RefCell::new(Vec::new());
    for q in QUANTILES {
        percentile_linear_by(n, q, |i| {
            let mut r = ranks.borrow_mut();
            if !r.contains(&i) {
                r.push(i);
            }
            0.0
        });
    }
    let mut ranks = ranks.into_inner();
    ranks.sort_unstable();
    ranks
}

/// The refinement state of every listed op that needs it (see the [module docs](self)).
pub(crate) struct Refiner {
    ops: Vec<OpRefine>,
    /// Per op of the summary: its index in `ops`, or `NONE`.
    slot: Vec<u32>,
    /// Values that may be collected at once, over all ranges.
    budget_values: u64,
    /// No pass has ended yet.
    first_pass: bool,
    /// The mergeable section's histograms counted in the same pass, when asked for.
    pub(crate) hist: Option<super::histpass::HistPass>,
}

impl Refiner {
    /// No ops yet; `ops_in_summary` sizes the op lookup, `budget_values` bounds the values
    /// collected in one pass.
    pub(crate) fn new(ops_in_summary: usize, budget_values: u64) -> Refiner {
        Refiner {
            ops: Vec::new(),
            slot: alloc::vec![NONE; ops_in_summary],
            budget_values,
            first_pass: true,
            hist: None,
        }
    }

    /// Adds op `op` of `n` durations between `min_ns` and `max_ns`; `sum`: also sum them (µs,
    /// exactly) in the first pass.
    pub(crate) fn add_op(&mut self, op: u32, n: u64, min_ns: u64, max_ns: u64, sum: bool) {
        let ranks: Vec<u64> = read_ranks(n as usize).iter().map(|&r| r as u64).collect();
        let range = Range {
            lo: min_ns,
            hi: max_ns,
            below: 0,
            count: n,
            ranks: (0..ranks.len()).collect(),
            probe: Probe::Collect(Vec::new()),
        };
        self.slot[op as usize] = self.ops.len() as u32;
        self.ops.push(OpRefine {
            n,
            sum: sum.then(Fsum::new),
            values: alloc::vec![None; ranks.len()],
            ranks,
            ranges: alloc::vec![range],
        });
    }

    /// Chooses how each range is read in the next pass: collected while the budget lasts
    /// (smallest ranges first), else counted.
    pub(crate) fn plan_pass(&mut self) {
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        for (o, op) in self.ops.iter().enumerate() {
            for (r, range) in op.ranges.iter().enumerate() {
                order.push((range.count, o, r));
            }
        }
        order.sort_unstable();
        let mut left = self.budget_values;
        for (count, o, r) in order {
            let range = &mut self.ops[o].ranges[r];
            range.probe = if count <= left {
                left -= count;
                Probe::Collect(Vec::with_capacity(count as usize))
            } else {
                let span = range.hi - range.lo + 1;
                let width = span.div_ceil(BUCKETS);
                Probe::Count {
                    width,
                    counts: alloc::vec![0; span.div_ceil(width) as usize],
                }
            };
        }
    }

    /// Whether a pass is still needed.
    pub(crate) fn pending(&self) -> bool {
        self.ops.iter().any(|op| !op.ranges.is_empty())
    }

    /// One duration of op `op` in this pass.
    #[inline]
    pub(crate) fn push(&mut self, op: u32, dur_ns: u64) {
        if let Some(h) = &mut self.hist {
            h.push(op, dur_ns);
        }
        let Some(&k) = self.slot.get(op as usize) else {
            return;
        };
        if k == NONE {
            return;
        }
        let o = &mut self.ops[k as usize];
        if self.first_pass
            && let Some(sum) = &mut o.sum
        {
            sum.add(dur_ns as f64 / 1000.0);
        }
        for range in &mut o.ranges {
            if dur_ns < range.lo || dur_ns > range.hi {
                continue;
            }
            match &mut range.probe {
                Probe::Count { width, counts } => {
                    counts[((dur_ns - range.lo) / *width) as usize] += 1;
                }
                Probe::Collect(values) => {
                    // More values than the first pass saw: the input changed; `end_pass` says so.
                    if values.len() < values.capacity() {
                        values.push(dur_ns);
                    } else {
                        range.count = u64::MAX;
                    }
                }
            }
            return;
        }
    }

    /// After a pass: settles the ranks it decided and narrows the others. Errs when the pass
    /// did not see what the first pass saw (the input changed).
    pub(crate) fn end_pass(&mut self) -> Result<(), PassError> {
        self.first_pass = false;
        for op in &mut self.ops {
            let ranges = core::mem::take(&mut op.ranges);
            for range in ranges {
                match range.probe {
                    Probe::Collect(mut values) => {
                        if values.len() as u64 != range.count {
                            return Err(PassError::InputChanged);
                        }
                        values.sort_unstable();
                        for &ri in &range.ranks {
                            op.values[ri] = Some(values[(op.ranks[ri] - range.below) as usize]);
                        }
                    }
                    Probe::Count { width, counts } => {
                        if counts.iter().sum::<u64>() != range.count {
                            return Err(PassError::InputChanged);
                        }
                        let (mut cum, mut b) = (range.below, 0usize);
                        for &ri in &range.ranks {
                            let r = op.ranks[ri];
                            while cum + counts[b] <= r {
                                cum += counts[b];
                                b += 1;
                            }
                            let lo = range.lo + b as u64 * width;
                            if width == 1 {
                                op.values[ri] = Some(lo);
                                continue;
                            }
                            match op.ranges.last_mut() {
                                Some(last) if last.lo == lo => last.ranks.push(ri),
                                _ => op.ranges.push(Range {
                                    lo,
                                    hi: (lo + width - 1).min(range.hi),
                                    below: cum,
                                    count: counts[b],
                                    ranks: alloc::vec![ri],
                                    probe: Probe::Collect(Vec::new()),
                                }),
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The exact sum of op `op`'s durations in µs, when it was asked for and a pass ended.
    pub(crate) fn sum(&self, op: u32) -> Option<&Fsum> {
        let k = *self.slot.get(op as usize)?;
        if self.first_pass {
            return None;
        }
        self.ops.get(k as usize)?.sum.as_ref()
    }

    /// The exact value at rank `rank` of op `op`, once settled.
    fn value(&self, op: u32, rank: usize) -> Option<u64> {
        let k = *self.slot.get(op as usize)?;
        let o = self.ops.get(k as usize)?;
        let i = o.ranks.iter().position(|&r| r == rank as u64)?;
        o.values[i]
    }

    /// The exact percentiles (µs, as the stats of the op's durations give them) of op `op`, when
    /// every rank they read is settled.
    pub(crate) fn percentiles(&self, op: u32) -> Option<[Option<f64>; 4]> {
        let k = *self.slot.get(op as usize)?;
        let n = self.ops.get(k as usize)?.n as usize;
        let missing = core::cell::Cell::new(false);
        let pct = QUANTILES.map(|q| {
            percentile_linear_by(n, q, |i| match self.value(op, i) {
                Some(v) => v as f64 / 1000.0,
                None => {
                    missing.set(true);
                    0.0
                }
            })
        });
        (!missing.get()).then_some(pct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    /// Against a sort: ops of many shapes (ties, one value, wide and narrow ranges), with
    /// budgets from none (counting only) to all, settle exactly, in at most four passes.
    #[test]
    fn settles_the_ranks_of_a_sort() {
        let mut rng = Rng(33);
        for round in 0..60 {
            let ops = 1 + rng.below(4) as usize;
            let mut data: Vec<Vec<u64>> = Vec::new();
            for _ in 0..ops {
                let n = 1 + rng.below(20_000) as usize;
                let spread = [1u64, 7, 1000, 1 << 20, 1 << 36][rng.below(5) as usize];
                let base = rng.below(1 << 30);
                data.push((0..n).map(|_| base + rng.below(spread)).collect());
            }
            let budget = [0u64, 100, 5000, u64::MAX][rng.below(4) as usize];
            let mut r = Refiner::new(ops, budget);
            for (op, values) in data.iter().enumerate() {
                let (lo, hi) = (values.iter().min().unwrap(), values.iter().max().unwrap());
                r.add_op(op as u32, values.len() as u64, *lo, *hi, false);
            }
            let mut passes = 0;
            while r.pending() {
                r.plan_pass();
                for (op, values) in data.iter().enumerate() {
                    for &v in values {
                        r.push(op as u32, v);
                    }
                }
                r.end_pass().unwrap();
                passes += 1;
                assert!(passes <= 4, "round {round}: {passes} passes");
            }
            for (op, values) in data.iter().enumerate() {
                let mut sorted = values.clone();
                sorted.sort_unstable();
                let want = QUANTILES
                    .map(|q| percentile_linear_by(sorted.len(), q, |i| sorted[i] as f64 / 1000.0));
                assert_eq!(r.percentiles(op as u32), Some(want), "round {round}");
            }
        }
    }

    #[test]
    fn a_changed_input_is_an_error() {
        let mut r = Refiner::new(1, u64::MAX);
        r.add_op(0, 3, 1, 9, false);
        r.plan_pass();
        r.push(0, 1);
        r.push(0, 5);
        assert!(r.end_pass().is_err());
        let mut r = Refiner::new(1, 0);
        r.add_op(0, 3, 1, 9, false);
        r.plan_pass();
        for v in [1, 5, 9, 9] {
            r.push(0, v);
        }
        assert!(r.end_pass().is_err());
    }
}
