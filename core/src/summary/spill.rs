//! Busy intervals retired out of memory and merged back at the end, so that a busy union stays
//! exact whatever the order of the input.
//!
//! A [`BusyUnion`](super::busy::BusyUnion) over its share of `Limits::max_intervals` retires its
//! older half. Without a spill it keeps only their total length behind a watermark, which is
//! exact while later intervals start after the watermark and otherwise counts the overlap into a
//! stated error bound. With an [`IntervalSpill`] (native: a temporary file) it also writes the
//! retired half out as a sorted run of disjoint intervals, and takes later intervals whole; if any
//! of them reached back behind a watermark, [`merged_union_ns`] computes the exact union of every
//! run and the live intervals by a k-way merge in bounded memory.
use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;

use crate::intervals::Interval;

/// Where busy unions put the runs of intervals they retire (native: a temporary file). A run is
/// sorted by start and its intervals are disjoint.
pub trait IntervalSpill: Send {
    /// Appends `run` and returns its handle; `None` when it cannot (a full disk): the union then
    /// keeps only the run's total and states the approximation, as without a spill.
    fn write_run(&mut self, run: &[Interval]) -> Option<u64>;

    /// Fills `buf` with the intervals `at..at + buf.len()` of the run `handle` (never past its
    /// end); false when it cannot read them.
    fn read_run(&mut self, handle: u64, at: u64, buf: &mut [Interval]) -> bool;
}

/// A run written by a union: its handle and how many intervals it holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) handle: u64,
    pub(crate) len: u64,
}

/// Intervals held in memory over all runs being merged (16 bytes each: 4 MiB).
pub(crate) const MERGE_BUFFER_INTERVALS: usize = 1 << 18;

struct Cursor {
    run: Run,
    /// Next interval of the run to read into `buf`.
    next: u64,
    buf: Vec<Interval>,
    pos: usize,
}

impl Cursor {
    /// The cursor's current interval, refilling its buffer when used up; `Ok(None)` at the end.
    fn peek(&mut self, spill: &mut dyn IntervalSpill) -> Result<Option<Interval>, ()> {
        if self.pos == self.buf.len() {
            let left = self.run.len - self.next;
            if left == 0 {
                return Ok(None);
            }
            let take = (self.buf.capacity() as u64).min(left) as usize;
            self.buf.resize(take, Interval::default());
            if !spill.read_run(self.run.handle, self.next, &mut self.buf) {
                return Err(());
            }
            self.next += take as u64;
            self.pos = 0;
        }
        Ok(Some(self.buf[self.pos]))
    }
}

/// The exact length of the union of every run and of `live` (sorted and disjoint), in ns; `None`
/// when a run cannot be read back.
pub(crate) fn merged_union_ns(
    runs: &[Run],
    live: &[Interval],
    spill: &mut dyn IntervalSpill,
) -> Option<u64> {
    let mut merged = MergedIntervals::new(runs, live, MERGE_BUFFER_INTERVALS);
    let mut total: u64 = 0;
    while let Some(iv) = merged.next(spill).ok()? {
        total = total.saturating_add(iv.len_ns());
    }
    Some(total)
}

/// The union of every run and of `live` (each sorted and disjoint) as sorted disjoint
/// intervals, one at a time, by a k-way merge in bounded memory (4 MiB of buffers up to 1,024
/// runs, 4 KiB per run past that): the busy unions' exact length, and the steps' classes
/// (`crate::steps`), which sweep the intervals themselves.
pub(crate) struct MergedIntervals<'a> {
    cursors: Vec<Cursor>,
    live: &'a [Interval],
    live_pos: usize,
    /// (start, source) of each source's next interval; `cursors.len()` is `live`.
    heap: BinaryHeap<Reverse<(i64, usize)>>,
    started: bool,
    ready: Option<Interval>,
}

impl<'a> MergedIntervals<'a> {
    /// The merge of `runs` (read through the spill given to [`next`](Self::next)) and `live`,
    /// with `buffer_intervals` (16 bytes each) of read buffers over all runs (at least 256 and
    /// at most 4,096 per run).
    pub(crate) fn new(
        runs: &[Run],
        live: &'a [Interval],
        buffer_intervals: usize,
    ) -> MergedIntervals<'a> {
        let per_run = (buffer_intervals / runs.len().max(1)).clamp(256, 4096);
        MergedIntervals {
            cursors: runs
                .iter()
                .map(|&run| Cursor {
                    run,
                    next: 0,
                    buf: Vec::with_capacity(per_run),
                    pos: 0,
                })
                .collect(),
            live,
            live_pos: 0,
            heap: BinaryHeap::with_capacity(runs.len() + 1),
            started: false,
            ready: None,
        }
    }

    fn start(&mut self, spill: &mut dyn IntervalSpill) -> Result<(), ()> {
        self.started = true;
        for (i, c) in self.cursors.iter_mut().enumerate() {
            if let Some(iv) = c.peek(spill)? {
                self.heap.push(Reverse((iv.start_ns, i)));
            }
        }
        if let Some(iv) = self.live.first() {
            self.heap.push(Reverse((iv.start_ns, self.cursors.len())));
        }
        Ok(())
    }

    /// The next interval of any source, in order of start.
    fn pop_raw(&mut self, spill: &mut dyn IntervalSpill) -> Result<Option<Interval>, ()> {
        let Some(Reverse((_, i))) = self.heap.pop() else {
            return Ok(None);
        };
        let live_id = self.cursors.len();
        Ok(Some(if i == live_id {
            let iv = self.live[self.live_pos];
            self.live_pos += 1;
            if let Some(next) = self.live.get(self.live_pos) {
                self.heap.push(Reverse((next.start_ns, live_id)));
            }
            iv
        } else {
            let c = &mut self.cursors[i];
            let iv = c.buf[c.pos];
            c.pos += 1;
            if let Some(next) = c.peek(spill)? {
                self.heap.push(Reverse((next.start_ns, i)));
            }
            iv
        }))
    }

    /// The union as one sorted list of disjoint intervals in memory, when no run was retired
    /// and nothing was read yet: a reader can then walk it in place, with nothing to merge.
    pub(crate) fn in_place(&self) -> Option<&'a [Interval]> {
        (self.cursors.is_empty() && self.live_pos == 0 && self.ready.is_none()).then_some(self.live)
    }

    /// The next disjoint interval of the union without taking it; `Err` when a run cannot be
    /// read back.
    pub(crate) fn peek(&mut self, spill: &mut dyn IntervalSpill) -> Result<Option<Interval>, ()> {
        if self.cursors.is_empty() {
            // No run retired (the common case): the live union alone, read in place.
            if self.ready.is_none()
                && let Some(&first) = self.live.get(self.live_pos)
            {
                let mut cur = first;
                self.live_pos += 1;
                while let Some(iv) = self.live.get(self.live_pos) {
                    if iv.start_ns > cur.end_ns {
                        break;
                    }
                    cur.end_ns = cur.end_ns.max(iv.end_ns);
                    self.live_pos += 1;
                }
                self.ready = Some(cur);
            }
            return Ok(self.ready);
        }
        if !self.started {
            self.start(spill)?;
        }
        if self.ready.is_none()
            && let Some(mut cur) = self.pop_raw(spill)?
        {
            while let Some(&Reverse((start, _))) = self.heap.peek() {
                if start > cur.end_ns {
                    break;
                }
                if let Some(iv) = self.pop_raw(spill)? {
                    cur.end_ns = cur.end_ns.max(iv.end_ns);
                }
            }
            self.ready = Some(cur);
        }
        Ok(self.ready)
    }

    /// The next disjoint interval of the union.
    pub(crate) fn next(&mut self, spill: &mut dyn IntervalSpill) -> Result<Option<Interval>, ()> {
        let iv = self.peek(spill)?;
        self.ready = None;
        Ok(iv)
    }
}

/// An [`IntervalSpill`] in memory: for tests, and for callers that prefer memory to a file.
#[derive(Default)]
pub struct MemorySpill {
    intervals: Vec<Interval>,
    /// Runs written so far (for tests).
    pub runs: usize,
    /// Fail every write from this run on (for tests): `None` never fails.
    pub fail_from_run: Option<usize>,
}

impl IntervalSpill for MemorySpill {
    fn write_run(&mut self, run: &[Interval]) -> Option<u64> {
        if self.fail_from_run.is_some_and(|k| self.runs >= k) {
            return None;
        }
        let handle = self.intervals.len() as u64;
        self.intervals.extend_from_slice(run);
        self.runs += 1;
        Some(handle)
    }

    fn read_run(&mut self, handle: u64, at: u64, buf: &mut [Interval]) -> bool {
        let from = (handle + at) as usize;
        match self.intervals.get(from..from + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    #[test]
    fn merge_equals_a_sort_of_everything() {
        let mut rng = Rng(17);
        for round in 0..40 {
            let mut spill = MemorySpill::default();
            let mut runs = Vec::new();
            let mut all = Vec::new();
            for _ in 0..rng.below(12) {
                // A sorted, disjoint run.
                let mut t = rng.below(1000) as i64;
                let mut run = Vec::new();
                for _ in 0..1 + rng.below(700) {
                    t += 1 + rng.below(40) as i64;
                    let e = t + 1 + rng.below(30) as i64;
                    run.push(Interval {
                        start_ns: t,
                        end_ns: e,
                    });
                    t = e;
                }
                all.extend_from_slice(&run);
                let handle = spill.write_run(&run).unwrap();
                runs.push(Run {
                    handle,
                    len: run.len() as u64,
                });
            }
            let live: Vec<Interval> = (0..rng.below(50))
                .map(|k| Interval {
                    start_ns: k as i64 * 100,
                    end_ns: k as i64 * 100 + 1 + rng.below(150) as i64,
                })
                .scan(i64::MIN, |last_end, mut iv| {
                    // Keep the live run disjoint.
                    iv.start_ns = iv.start_ns.max(*last_end + 1);
                    iv.end_ns = iv.end_ns.max(iv.start_ns + 1);
                    *last_end = iv.end_ns;
                    Some(iv)
                })
                .collect();
            all.extend_from_slice(&live);
            all.sort_by_key(|iv| (iv.start_ns, iv.end_ns));
            let mut want = 0u64;
            let mut cur: Option<Interval> = None;
            for iv in all {
                match &mut cur {
                    Some(c) if iv.start_ns <= c.end_ns => c.end_ns = c.end_ns.max(iv.end_ns),
                    _ => {
                        want += cur.map_or(0, Interval::len_ns);
                        cur = Some(iv);
                    }
                }
            }
            want += cur.map_or(0, Interval::len_ns);
            assert_eq!(
                merged_union_ns(&runs, &live, &mut spill),
                Some(want),
                "round {round}"
            );
        }
        // A run that cannot be read back.
        let mut spill = MemorySpill::default();
        let bad = [Run { handle: 5, len: 3 }];
        assert_eq!(merged_union_ns(&bad, &[], &mut spill), None);
    }
}
