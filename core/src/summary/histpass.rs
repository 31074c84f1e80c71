//! The histograms of the mergeable section for ops whose durations the summary no longer holds
//! (past the exact-values budget), counted in a further pass over the input.
//!
//! Each such op counts its durations in a dense range of buckets between those of its exact
//! `min` and `max`. The ranges are sized by the scale: the largest scale (at most
//! [`SCALE`]) whose ranges fit the budget together, 8 bytes per bucket (the budget is what of the
//! durations budget the other ops' histograms left); the section then has that scale, and a
//! larger stated error. Nothing is allocated per event.
use alloc::vec::Vec;

use crate::merge::histogram::{BucketWriter, LogHistogram, SCALE, bucket_index};

const NONE: u32 = u32::MAX;

struct OpCounts {
    n: u64,
    /// Bucket index of `counts[0]`.
    first: i32,
    zeros: u64,
    counts: Vec<u64>,
}

/// Counting state of one pass.
pub(crate) struct HistPass {
    scale: u8,
    /// Per op of the summary: its index in `ops`, or `NONE`.
    slot: Vec<u32>,
    ops: Vec<OpCounts>,
}

/// Buckets between the nonzero `min_ns` and `max_ns` at `scale` (one more for zeros).
fn span(min_ns: u64, max_ns: u64, scale: u8) -> (i32, u64) {
    let lo = bucket_index(min_ns.max(1), scale);
    let hi = bucket_index(max_ns.max(1), scale);
    (lo, (hi - lo) as u64 + 1)
}

impl HistPass {
    /// A pass for `ops` (`(op index, n, min_ns, max_ns)`) of a summary of `ops_in_summary` ops,
    /// within `budget_bytes`; `None` when even scale 0 does not fit.
    pub(crate) fn new(
        ops_in_summary: usize,
        ops: &[(usize, u64, u64, u64)],
        budget_bytes: u64,
    ) -> Option<HistPass> {
        let scale = (0..=SCALE).rev().find(|&s| {
            let buckets: u64 = ops.iter().map(|&(_, _, lo, hi)| span(lo, hi, s).1).sum();
            buckets.saturating_mul(8) <= budget_bytes
        })?;
        let mut slot = alloc::vec![NONE; ops_in_summary];
        let mut counts = Vec::with_capacity(ops.len());
        for &(i, n, lo, hi) in ops {
            slot[i] = counts.len() as u32;
            let (first, len) = span(lo, hi, scale);
            counts.push(OpCounts {
                n,
                first,
                zeros: 0,
                counts: alloc::vec![0; len as usize],
            });
        }
        Some(HistPass {
            scale,
            slot,
            ops: counts,
        })
    }

    /// The scale of the histograms.
    pub(crate) fn scale(&self) -> u8 {
        self.scale
    }

    /// One duration of op `op`.
    #[inline]
    pub(crate) fn push(&mut self, op: u32, dur_ns: u64) {
        let Some(&k) = self.slot.get(op as usize) else {
            return;
        };
        let Some(o) = self.ops.get_mut(k as usize) else {
            return;
        };
        if dur_ns == 0 {
            o.zeros += 1;
            return;
        }
        let at = i64::from(bucket_index(dur_ns, self.scale)) - i64::from(o.first);
        match usize::try_from(at).ok().and_then(|at| o.counts.get_mut(at)) {
            Some(c) => *c += 1,
            // Outside the first pass's range: the input changed; `finish` sees the count.
            None => o.n = u64::MAX,
        }
    }

    /// The histograms, in the order given to [`HistPass::new`]; `None` when a count differs from
    /// the first pass's (the input changed).
    pub(crate) fn finish(self) -> Option<Vec<LogHistogram>> {
        let mut out = Vec::with_capacity(self.ops.len());
        for o in self.ops {
            let mut buckets = BucketWriter::new();
            for (k, &c) in o.counts.iter().enumerate() {
                if c > 0 {
                    buckets.push(o.first + k as i32, c);
                }
            }
            let h = LogHistogram {
                zero_count: o.zeros,
                buckets: buckets.finish(),
            };
            if h.count() != Some(o.n) {
                return None;
            }
            out.push(h);
        }
        Some(out)
    }
}
