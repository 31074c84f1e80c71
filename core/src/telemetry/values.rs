//! Exact statistics of a series in bounded memory, for `summarize` (telemetry rows and request
//! rows): what [`Stats`] needs of the values, and no more.
//!
//! `n`, the exact sum (the reference's `math.fsum`) and the first smallest and last largest
//! values are kept as they stream ([`Moments`]); only the percentiles need the values, and only
//! as `f64` (numpy converts to float before it sorts, and the conversion is monotonic, so the
//! order statistics of the `f64`s are those of the values): 8 bytes a value. Each series holds
//! at most its share of a [`ValueBudget`]; when the share is full its values are sorted and
//! written out as one run to the caller's [`ValueSpill`] (native: a temporary file), and at the
//! end the runs and the values still held are merged in order, reading a few thousand values
//! of each run at a time, to pick the ranks the percentiles read: exact, in memory bounded by
//! the budget. Without a spill (the core alone, the page) a series past its share moves to the
//! quantile sketch ([`crate::sketch`]): `n`, mean, min and max stay exact and the percentiles
//! are within [`crate::sketch::RELATIVE_ERROR`]; the output says so (never silently).
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::Limits;
use crate::sketch::{DEFAULT_BUCKETS_PER_SIGN, QuantileSketch, RELATIVE_ERROR};
use crate::stats::{Moments, Num, QUANTILES, Stats, percentile_linear_by};
use crate::time_windows::StatsSink;

/// Where a series' values past its share of the budget go: sorted runs written out and read
/// back. Native implements it with a temporary file.
pub trait ValueSpill {
    /// Appends `values` as one run; its handle, or `None` when it could not be written.
    fn write_run(&mut self, values: &[f64]) -> Option<u64>;
    /// Reads the values of run `handle` from position `at` (in values) into `out`: how many
    /// were read (0 past its end), or `None` on a read error.
    fn read_run(&mut self, handle: u64, at: u64, out: &mut [f64]) -> Option<usize>;
}

/// A spill shared by the series of one summary.
pub type SharedSpill = Rc<RefCell<dyn ValueSpill>>;

/// Values read from a run at a time while merging.
const READ_VALUES: usize = 2048;

/// How many values the series of one accumulator hold in memory together, and where more go.
#[derive(Clone)]
pub struct ValueBudget {
    /// Values held in memory over all the series (8 bytes each).
    pub max_values: usize,
    /// Where a series past its share writes runs; `None`: it moves to the quantile sketch.
    pub spill: Option<SharedSpill>,
}

impl core::fmt::Debug for ValueBudget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ValueBudget")
            .field("max_values", &self.max_values)
            .field("spill", &self.spill.is_some())
            .finish()
    }
}

impl ValueBudget {
    /// The values `limits` allow: its exact-values budget ([`Limits::max_exact_values`], in
    /// 4-byte units) as 8-byte values, no spill. [`Limits::NATIVE`]: 3 Mi values (24 MiB) for a
    /// run's telemetry, and as many for its requests.
    pub fn from_limits(limits: Limits) -> ValueBudget {
        ValueBudget {
            max_values: limits.max_exact_values / 2,
            spill: None,
        }
    }

    /// [`ValueBudget::from_limits`] of [`Limits::NATIVE`].
    pub fn in_memory() -> ValueBudget {
        ValueBudget::from_limits(Limits::NATIVE)
    }

    /// This budget, with runs past each share written to `spill` (exact whatever the count).
    pub fn with_spill(mut self, spill: SharedSpill) -> ValueBudget {
        self.spill = Some(spill);
        self
    }

    /// Every value in memory (exact, memory grows with the values).
    pub fn unbounded() -> ValueBudget {
        ValueBudget {
            max_values: usize::MAX,
            spill: None,
        }
    }

    /// A share for each of `series` series, with the record of which went to the sketch.
    pub(crate) fn shares(&self, series: usize) -> Shares {
        Shares {
            quota: (self.max_values / series.max(1)).max(1),
            spill: self.spill.clone(),
            sketched: Rc::new(RefCell::new(Vec::new())),
            next_tag: 0,
        }
    }
}

/// Hands out the sinks of one accumulator, tagged in the order they are made.
pub(crate) struct Shares {
    quota: usize,
    spill: Option<SharedSpill>,
    sketched: Rc<RefCell<Vec<u32>>>,
    next_tag: u32,
}

impl Shares {
    /// The next series' sink.
    pub(crate) fn sink(&mut self) -> BoundedStats {
        let tag = self.next_tag;
        self.next_tag += 1;
        BoundedStats {
            moments: Moments::default(),
            quota: self.quota,
            values: Vec::new(),
            runs: Vec::new(),
            spill: self.spill.clone(),
            sketch: None,
            spill_failed: false,
            tag,
            sketched: self.sketched.clone(),
        }
    }

    /// Values each series holds in memory.
    pub(crate) fn quota(&self) -> usize {
        self.quota
    }

    /// The tags of the sinks that moved to the sketch (or lost a run), in tag order.
    pub(crate) fn sketched(&self) -> Vec<u32> {
        let mut v = self.sketched.borrow().clone();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// One series' exact statistics within its share (see the module docs).
pub struct BoundedStats {
    moments: Moments,
    quota: usize,
    values: Vec<f64>,
    /// Runs written: handle and length.
    runs: Vec<(u64, u64)>,
    spill: Option<SharedSpill>,
    sketch: Option<QuantileSketch>,
    /// A run could not be written or read back: the percentiles are null.
    spill_failed: bool,
    tag: u32,
    sketched: Rc<RefCell<Vec<u32>>>,
}

impl core::fmt::Debug for BoundedStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BoundedStats")
            .field("n", &self.moments.n)
            .field("held", &self.values.len())
            .field("runs", &self.runs.len())
            .finish()
    }
}

/// The sketch's relative error bound.
pub(crate) fn sketch_error() -> f64 {
    RELATIVE_ERROR
}

fn by_value(a: &f64, b: &f64) -> core::cmp::Ordering {
    a.partial_cmp(b).unwrap_or(core::cmp::Ordering::Equal)
}

impl BoundedStats {
    /// Whether the percentiles are approximate (the sketch) or missing (a spill failed).
    pub fn approximate(&self) -> bool {
        self.sketch.is_some() || self.spill_failed
    }

    fn mark(&mut self) {
        self.sketched.borrow_mut().push(self.tag);
    }

    #[cold]
    fn full(&mut self) {
        let Some(spill) = self.spill.clone() else {
            let mut sketch = QuantileSketch::new(DEFAULT_BUCKETS_PER_SIGN);
            for &v in &self.values {
                sketch.push(Num::Float(v));
            }
            self.values = Vec::new();
            self.sketch = Some(sketch);
            self.mark();
            return;
        };
        self.values.sort_unstable_by(by_value);
        match spill.borrow_mut().write_run(&self.values) {
            Some(handle) => self.runs.push((handle, self.values.len() as u64)),
            None => {
                self.spill_failed = true;
                self.mark();
            }
        }
        self.values.clear();
    }

    /// The values at `ranks` (increasing) of the merged runs and held values, in order.
    fn at_ranks(&mut self, ranks: &[u64], out: &mut [f64]) -> bool {
        self.values.sort_unstable_by(by_value);
        let Some(spill) = self.spill.clone() else {
            for (o, &r) in out.iter_mut().zip(ranks) {
                *o = self.values[r as usize];
            }
            return true;
        };
        let mut spill = spill.borrow_mut();
        // One cursor per run (a buffer, its position in the buffer, the next read position).
        struct Cursor {
            handle: u64,
            len: u64,
            next: u64,
            buf: Vec<f64>,
            at: usize,
        }
        let mut cursors: Vec<Cursor> = Vec::with_capacity(self.runs.len());
        for &(handle, len) in &self.runs {
            cursors.push(Cursor {
                handle,
                len,
                next: 0,
                buf: Vec::new(),
                at: 0,
            });
        }
        let refill = |c: &mut Cursor, spill: &mut dyn ValueSpill| -> bool {
            if c.at < c.buf.len() || c.next >= c.len {
                return true;
            }
            let want = READ_VALUES.min((c.len - c.next) as usize);
            c.buf.resize(want, 0.0);
            match spill.read_run(c.handle, c.next, &mut c.buf) {
                Some(got) if got > 0 => {
                    c.buf.truncate(got);
                    c.next += got as u64;
                    c.at = 0;
                    true
                }
                _ => false,
            }
        };
        let mut held = 0usize;
        let mut rank = 0u64;
        let mut want = 0usize;
        while want < ranks.len() {
            // The smallest head among the runs and the held values.
            let mut best: Option<(f64, usize)> = None;
            for (k, c) in cursors.iter_mut().enumerate() {
                if !refill(c, &mut *spill) {
                    return false;
                }
                if let Some(&v) = c.buf.get(c.at)
                    && best.is_none_or(|(b, _)| v < b)
                {
                    best = Some((v, k));
                }
            }
            let held_head = self.values.get(held).copied();
            let v = match (best, held_head) {
                (Some((b, _)), Some(h)) if h <= b => {
                    held += 1;
                    h
                }
                (Some((b, k)), _) => {
                    cursors[k].at += 1;
                    b
                }
                (None, Some(h)) => {
                    held += 1;
                    h
                }
                (None, None) => return false,
            };
            while want < ranks.len() && ranks[want] == rank {
                out[want] = v;
                want += 1;
            }
            rank += 1;
        }
        true
    }
}

impl StatsSink for BoundedStats {
    fn push_value(&mut self, v: Num) -> bool {
        if !self.moments.push(v) {
            return false;
        }
        match &mut self.sketch {
            Some(s) => {
                s.push(v);
            }
            None => {
                if self.values.len() >= self.quota && !self.spill_failed {
                    self.full();
                }
                match &mut self.sketch {
                    Some(s) => {
                        s.push(v);
                    }
                    None if !self.spill_failed => self.values.push(v.to_f64()),
                    None => {}
                }
            }
        }
        true
    }

    fn stats(&mut self) -> Stats {
        let n = self.moments.n;
        if let Some(s) = &self.sketch {
            return self.moments.stats_with(QUANTILES.map(|q| s.quantile(q)));
        }
        if self.spill_failed || n == 0 {
            return self.moments.stats_with([None; 4]);
        }
        // The ranks numpy's linear percentile reads, found by asking it.
        let asked = RefCell::new(Vec::with_capacity(8));
        for q in QUANTILES {
            percentile_linear_by(n as usize, q, |i| {
                asked.borrow_mut().push(i as u64);
                0.0
            });
        }
        let mut ranks: Vec<u64> = asked.into_inner();
        ranks.sort_unstable();
        ranks.dedup();
        let mut at = alloc::vec![0.0; ranks.len()];
        if !self.at_ranks(&ranks, &mut at) {
            self.spill_failed = true;
            self.mark();
            return self.moments.stats_with([None; 4]);
        }
        let value = |i: usize| at[ranks.binary_search(&(i as u64)).unwrap_or(0)];
        let pct = QUANTILES.map(|q| percentile_linear_by(n as usize, q, value));
        self.moments.stats_with(pct)
    }

    fn quantile_relative_error(&self) -> f64 {
        if self.sketch.is_some() {
            RELATIVE_ERROR
        } else {
            0.0
        }
    }

    fn collapsed(&self) -> u64 {
        self.sketch.as_ref().map_or(0, QuantileSketch::collapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::stats;
    use crate::testutil::Rng;

    /// Runs in memory, as a temporary file would hold them.
    #[derive(Default)]
    pub(crate) struct MemSpill {
        pub(crate) runs: Vec<Vec<f64>>,
        pub(crate) fail_reads: bool,
    }

    impl ValueSpill for MemSpill {
        fn write_run(&mut self, values: &[f64]) -> Option<u64> {
            self.runs.push(values.to_vec());
            Some(self.runs.len() as u64 - 1)
        }
        fn read_run(&mut self, handle: u64, at: u64, out: &mut [f64]) -> Option<usize> {
            if self.fail_reads {
                return None;
            }
            let run = &self.runs[handle as usize];
            let from = (at as usize).min(run.len());
            let n = out.len().min(run.len() - from);
            out[..n].copy_from_slice(&run[from..from + n]);
            Some(n)
        }
    }

    fn values(rng: &mut Rng, n: usize) -> Vec<Num> {
        (0..n)
            .map(|_| match rng.below(5) {
                0 => Num::Int(rng.below(50) as i64 - 10),
                1 => Num::Float(rng.below(7) as f64),
                2 => Num::Float(f64::NAN),
                _ => Num::Float(rng.unit_f64() * 1e3 - 100.0),
            })
            .collect()
    }

    /// With a spill, the statistics equal the exact in-memory ones bit for bit for any share
    /// (runs of one value up to no run at all); without one, past the share the percentiles
    /// are the sketch's, within its bound, and the series says it is approximate.
    #[test]
    fn spilled_runs_give_the_exact_stats() {
        let mut rng = Rng(21);
        for round in 0..60 {
            let n = rng.below(3000) as usize;
            let vals = values(&mut rng, n);
            let want = stats(&vals);
            let quota = 1 + rng.below(400) as usize;
            let spill: SharedSpill = Rc::new(RefCell::new(MemSpill::default()));
            let budget = ValueBudget {
                max_values: quota,
                spill: Some(spill),
            };
            let mut shares = budget.shares(1);
            let mut s = shares.sink();
            for &v in &vals {
                s.push_value(v);
            }
            assert_eq!(s.stats(), want, "round {round} n {n} quota {quota}");
            assert!(!s.approximate());
            let mut shares = ValueBudget {
                max_values: quota,
                spill: None,
            }
            .shares(1);
            let mut s = shares.sink();
            for &v in &vals {
                s.push_value(v);
            }
            let got = s.stats();
            let finite = vals.iter().filter(|v| v.is_finite()).count();
            assert_eq!(s.approximate(), finite > quota);
            assert_eq!(shares.sketched().is_empty(), finite <= quota);
            assert_eq!(
                (got.n, got.mean, got.min, got.max),
                (want.n, want.mean, want.min, want.max)
            );
            if finite <= quota {
                assert_eq!(got, want);
            }
        }
    }

    /// A run that cannot be read back gives null percentiles, recorded, never a wrong number.
    #[test]
    fn a_failed_read_gives_null_percentiles() {
        let spill = Rc::new(RefCell::new(MemSpill::default()));
        let shared: SharedSpill = spill.clone();
        let budget = ValueBudget {
            max_values: 4,
            spill: Some(shared),
        };
        let mut shares = budget.shares(1);
        let mut s = shares.sink();
        for i in 0..20 {
            s.push_value(Num::Int(i));
        }
        spill.borrow_mut().fail_reads = true;
        let got = s.stats();
        assert_eq!(got.n, 20);
        assert_eq!(got.p50, None);
        assert_eq!(shares.sketched(), [0]);
    }
}
