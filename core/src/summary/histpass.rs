//! The histograms of the mergeable section for ops whose durations the summary no longer holds
//! (past the exact-values budget), counted in a further pass over the input.
//!
//! Each such op counts its durations in a dense range of buckets between those of its exact
//! `min` and `max` (8 bytes a bucket), or, where that takes more, collects its `n` durations (8
//! bytes each) and makes its histogram from them at the end: an op of a few durations over a wide
//! range costs those few. The scale is the largest (at most [`SCALE`]) at which the ops fit the
//! budget together (what of the durations budget the other ops' histograms left); the section
//! then has that scale, and a larger stated error. Nothing is allocated per event.
use alloc::vec::Vec;

use crate::merge::histogram::{BucketWriter, LogHistogram, SCALE, bucket_index};

const NONE: u32 = u32::MAX;

enum Counts {
    /// Counts of the buckets from `first` on.
    Dense { first: i32, counts: Vec<u64> },
    /// The durations, at most `n` (capacity `n`).
    Listed(Vec<u64>),
}

struct OpCounts {
    n: u64,
    zeros: u64,
    counts: Counts,
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

/// 8-byte slots an op of `n` durations over `[min_ns, max_ns]` takes at `scale`: the smaller of
/// its dense range and its list.
fn slots(n: u64, min_ns: u64, max_ns: u64, scale: u8) -> u64 {
    span(min_ns, max_ns, scale).1.min(n)
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
            let total: u64 = ops
                .iter()
                .map(|&(_, n, lo, hi)| slots(n, lo, hi, s))
                .fold(0, u64::saturating_add);
            total.saturating_mul(8) <= budget_bytes
        })?;
        let mut slot = alloc::vec![NONE; ops_in_summary];
        let mut counts = Vec::with_capacity(ops.len());
        for &(i, n, lo, hi) in ops {
            slot[i] = counts.len() as u32;
            let (first, len) = span(lo, hi, scale);
            counts.push(OpCounts {
                n,
                zeros: 0,
                counts: if len <= n {
                    Counts::Dense {
                        first,
                        counts: alloc::vec![0; len as usize],
                    }
                } else {
                    Counts::Listed(Vec::with_capacity(n as usize))
                },
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
        let counted = match &mut o.counts {
            Counts::Dense { first, counts } => {
                let at = i64::from(bucket_index(dur_ns, self.scale)) - i64::from(*first);
                usize::try_from(at)
                    .ok()
                    .and_then(|at| counts.get_mut(at))
                    .map(|c| *c += 1)
                    .is_some()
            }
            // Never past the capacity reserved: no allocation here.
            Counts::Listed(v) if v.len() < v.capacity() => {
                v.push(dur_ns);
                true
            }
            Counts::Listed(_) => false,
        };
        if !counted {
            // Outside the first pass's range or count: the input changed; `finish` sees it.
            o.n = u64::MAX;
        }
    }

    /// The histograms, in the order given to [`HistPass::new`]; `None` when a count differs from
    /// the first pass's (the input changed).
    pub(crate) fn finish(self) -> Option<Vec<LogHistogram>> {
        let mut out = Vec::with_capacity(self.ops.len());
        for o in self.ops {
            let buckets = match o.counts {
                Counts::Dense { first, counts } => {
                    let mut buckets = BucketWriter::new();
                    for (k, &c) in counts.iter().enumerate() {
                        if c > 0 {
                            buckets.push(first + k as i32, c);
                        }
                    }
                    buckets.finish()
                }
                Counts::Listed(mut v) => {
                    v.sort_unstable();
                    LogHistogram::from_sorted(v, self.scale).buckets
                }
            };
            let h = LogHistogram {
                zero_count: o.zeros,
                buckets,
            };
            if h.count() != Some(o.n) {
                return None;
            }
            out.push(h);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ops of a few durations over a wide range cost those few, not their range: 2,000 ops of
    /// four durations from 0 to 1 s fit 64 KiB at the full scale (their dense ranges would need
    /// ~480 KiB even at scale 0), and their histograms are those of their durations.
    #[test]
    fn few_durations_over_a_wide_range_are_listed() {
        let durations = |k: u64| [1_000 + k, 0, 1_000_000_000 - k * 7, 40_000 + k * 13];
        let ops: Vec<(usize, u64, u64, u64)> = (0..2000u64)
            .map(|k| {
                let mut d = durations(k);
                d.sort_unstable();
                (k as usize, 4, d[0], d[3])
            })
            .collect();
        let mut pass = HistPass::new(2000, &ops, 64 << 10).unwrap();
        assert_eq!(pass.scale(), SCALE);
        for k in 0..2000u64 {
            for d in durations(k) {
                pass.push(k as u32, d);
            }
        }
        let got = pass.finish().unwrap();
        for (k, h) in got.iter().enumerate() {
            let mut d = durations(k as u64);
            d.sort_unstable();
            assert_eq!(*h, LogHistogram::from_sorted(d, SCALE), "op {k}");
        }
        // A listed op given more durations than its count: the input changed.
        let mut pass = HistPass::new(2000, &ops, 64 << 10).unwrap();
        for d in durations(0).into_iter().chain([5_000]) {
            pass.push(0, d);
        }
        assert!(pass.finish().is_none());
    }

    /// Ops of many durations over a narrow range count them densely, as many as they come.
    #[test]
    fn many_durations_over_a_narrow_range_are_counted() {
        let ops = [(0usize, 100_000u64, 1_000u64, 2_000u64)];
        let mut pass = HistPass::new(1, &ops, 8 * 300).unwrap();
        assert_eq!(pass.scale(), SCALE);
        let values: Vec<u64> = (0..100_000u64).map(|k| 1_000 + k % 1_001).collect();
        for &v in &values {
            pass.push(0, v);
        }
        let mut sorted = values;
        sorted.sort_unstable();
        assert_eq!(
            pass.finish().unwrap(),
            [LogHistogram::from_sorted(sorted, SCALE)]
        );
    }
}
