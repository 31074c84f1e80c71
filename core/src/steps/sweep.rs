//! Each step's breakdown from the classes' unions, by one sweep in time order.
//!
//! Every class's union is a sorted list of disjoint intervals, read through a cursor that sits
//! on the first interval ending after the sweep's time `t`: the class is active at `t` when that
//! interval has started. The lowest-numbered active class owns `t`, and keeps it until its
//! interval ends or a higher-priority class starts, whichever comes first: that whole stretch
//! is added to the owner's part of each step window it overlaps (steps may overlap or nest: each
//! takes its own share). So the work goes by stretches of one owner, not by every boundary of
//! every class, and time outside every window is skipped (the cursors move past it). `other` is
//! the window's length minus the classes' parts. All in integer ns.
use alloc::vec::Vec;

use super::class::{CLASSES, PARTS};
use crate::intervals::Interval;
use crate::summary::IntervalSpill;
use crate::summary::spill::MergedIntervals;

/// A step's window and its parts, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
}

/// Past a class's last interval: no interval starts at `i64::MAX` (it would be empty).
const DONE: Interval = Interval {
    start_ns: i64::MAX,
    end_ns: i64::MAX,
};

/// One class's union in time order: in place when nothing was retired out of memory (the
/// common case), else through the merge of its runs.
enum Source<'m, 'a> {
    InPlace(core::slice::Iter<'a, Interval>),
    Merged(&'m mut MergedIntervals<'a>),
}

/// A class's cursor: its current interval (`DONE` past the end, or once a run could not be
/// read back: the class then ends there, and `failed` says so).
struct Cursor<'m, 'a> {
    cur: Interval,
    source: Source<'m, 'a>,
    failed: bool,
}

impl Cursor<'_, '_> {
    #[inline]
    fn advance(&mut self, spill: &mut dyn IntervalSpill) {
        self.cur = match &mut self.source {
            Source::InPlace(it) => it.next().copied().unwrap_or(DONE),
            Source::Merged(m) => match m.next(spill) {
                Ok(iv) => iv.unwrap_or(DONE),
                Err(()) => {
                    self.failed = true;
                    DONE
                }
            },
        };
    }
}

/// The parts of each window (in the order given), in ns: indexed by [`Part`](super::Part);
/// each class's union read from `classes` (its runs through `spill`). A class whose runs cannot
/// be read back ends there: its index is set in the returned flags.
pub(crate) fn breakdown(
    classes: &mut [MergedIntervals<'_>; CLASSES],
    spill: &mut dyn IntervalSpill,
    windows: &[Window],
) -> (Vec<[u64; PARTS]>, [bool; CLASSES]) {
    let mut parts = alloc::vec![[0u64; PARTS]; windows.len()];
    let mut cursors: [Cursor<'_, '_>; CLASSES] = classes.each_mut().map(|m| Cursor {
        cur: DONE,
        source: match m.in_place() {
            Some(ivs) => Source::InPlace(ivs.iter()),
            None => Source::Merged(m),
        },
        failed: false,
    });
    for c in cursors.iter_mut() {
        c.advance(spill);
    }
    // Windows by start; those that overlap the current stretch are `active`.
    let mut by_start: Vec<u32> = (0..windows.len() as u32).collect();
    by_start.sort_by_key(|&i| windows[i as usize].start_ns);
    let mut next_window = 0usize;
    let mut active: Vec<u32> = Vec::new();
    let mut t = i64::MIN;
    loop {
        if active.is_empty() {
            // Nothing to add to before the next window.
            let Some(&w) = by_start.get(next_window) else {
                break;
            };
            t = t.max(windows[w as usize].start_ns);
        }
        while let Some(&w) = by_start.get(next_window) {
            if windows[w as usize].start_ns > t {
                break;
            }
            active.push(w);
            next_window += 1;
        }
        if t == i64::MAX {
            // Nothing is left to cover (an interval ends at i64::MAX at the latest).
            break;
        }
        for c in cursors.iter_mut() {
            while c.cur.end_ns <= t {
                c.advance(spill);
            }
        }
        // Every cursor's interval now ends after `t`: the first class whose interval has
        // started owns `t`, until its interval ends or a higher-priority class starts.
        let owner = cursors.iter().position(|c| c.cur.start_ns <= t);
        let mut end = owner.map_or(i64::MAX, |o| cursors[o].cur.end_ns);
        for c in &cursors[..owner.unwrap_or(CLASSES)] {
            end = end.min(c.cur.start_ns);
        }
        // A window that starts later joins there (every one starting by `t` is active).
        if let Some(&w) = by_start.get(next_window) {
            end = end.min(windows[w as usize].start_ns);
        }
        // `end > t`: the owner's interval ends after `t`, the others start after it, and so
        // does the next window.
        let mut k = 0;
        while let Some(&w) = active.get(k) {
            let win = windows[w as usize];
            if let Some(o) = owner {
                let a = t.max(win.start_ns);
                let b = end.min(win.end_ns);
                if b > a {
                    parts[w as usize][o] += b.abs_diff(a);
                }
            }
            if win.end_ns <= end {
                // Later stretches start at `end` or after: nothing more of this window.
                active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        t = end;
    }
    // A run past the last window is read all the same, so that one which cannot be read back
    // is said whatever the steps.
    for c in cursors.iter_mut() {
        while matches!(c.source, Source::Merged(_)) && c.cur != DONE {
            c.advance(spill);
        }
    }
    let failed = core::array::from_fn(|c| cursors[c].failed);
    (finish(parts, windows), failed)
}

/// A spill with nothing in it: for unions that have no runs.
pub(crate) struct NoSpill;

impl IntervalSpill for NoSpill {
    fn write_run(&mut self, _: &[crate::intervals::Interval]) -> Option<u64> {
        None
    }
    fn read_run(&mut self, _: u64, _: u64, _: &mut [crate::intervals::Interval]) -> bool {
        false
    }
}

/// `other`: what the classes leave of each window.
fn finish(mut parts: Vec<[u64; PARTS]>, windows: &[Window]) -> Vec<[u64; PARTS]> {
    for (p, w) in parts.iter_mut().zip(windows) {
        let len = w.end_ns.abs_diff(w.start_ns);
        let covered: u64 = p[..CLASSES].iter().sum();
        p[CLASSES] = len - covered;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::IntervalUnion;
    use crate::summary::spill::{MemorySpill, Run};
    use crate::testutil::Rng;

    /// Per window, every elementary stretch between the sorted boundaries inside it, owned by
    /// the lowest class with an interval covering it.
    fn oracle(classes: &[Vec<(i64, i64)>], w: Window) -> [u64; PARTS] {
        let mut cuts = alloc::vec![w.start_ns, w.end_ns];
        for ivs in classes {
            for &(a, b) in ivs {
                cuts.extend(
                    [a, b]
                        .into_iter()
                        .filter(|&x| x > w.start_ns && x < w.end_ns),
                );
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut parts = [0u64; PARTS];
        for c in cuts.windows(2) {
            let owner = (0..CLASSES)
                .find(|&k| classes[k].iter().any(|&(a, b)| a <= c[0] && b >= c[1]))
                .unwrap_or(CLASSES);
            parts[owner] += c[1].abs_diff(c[0]);
        }
        parts
    }

    /// Windows nested, overlapping, empty, apart or touching; classes empty or dense, some
    /// intervals up to `i64::MAX`; each union read in place, or split into runs (overlapping
    /// one another) merged back through a spill: the same parts as the oracle's.
    #[test]
    fn stretches_by_owner_equal_the_oracle() {
        let mut rng = Rng::from_env(41);
        for round in 0..400 {
            let span = 50 + rng.below(2_000) as i64;
            let base = if round % 10 == 9 {
                i64::MAX - span
            } else {
                -(span / 3)
            };
            let at = |rng: &mut Rng| base + rng.below(span as u64) as i64;
            let mut raw: Vec<Vec<(i64, i64)>> = Vec::new();
            for _ in 0..CLASSES {
                let n = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(4),
                    _ => rng.below(60),
                };
                raw.push(
                    (0..n)
                        .map(|_| {
                            let a = at(&mut rng);
                            let b = a.saturating_add(1 + rng.below(span as u64 / 4 + 1) as i64);
                            (a, b)
                        })
                        .collect(),
                );
            }
            let windows: Vec<Window> = (0..rng.below(12))
                .map(|_| {
                    let a = at(&mut rng);
                    let len = match rng.below(5) {
                        0 => 0,
                        _ => rng.below(span as u64 / 2) as i64,
                    };
                    Window {
                        start_ns: a,
                        end_ns: a.saturating_add(len),
                    }
                })
                .collect();
            let mut unions: Vec<IntervalUnion> = raw
                .iter()
                .map(|ivs| {
                    let mut u = IntervalUnion::exact();
                    ivs.iter().for_each(|&(a, b)| u.insert(a, b));
                    u
                })
                .collect();
            let want: Vec<[u64; PARTS]> = windows.iter().map(|&w| oracle(&raw, w)).collect();
            // In place.
            let mut classes: [MergedIntervals<'_>; CLASSES] =
                core::array::from_fn(|_| MergedIntervals::new(&[], &[], 0));
            for (m, u) in classes.iter_mut().zip(unions.iter_mut()) {
                *m = MergedIntervals::new(&[], u.intervals(), 0);
            }
            let (got, failed) = breakdown(&mut classes, &mut NoSpill, &windows);
            assert_eq!(got, want, "round {round}");
            assert_eq!(failed, [false; CLASSES]);
            // Runs: each class's raw intervals in up to three sorted unions, all but the last
            // written out.
            let mut spill = MemorySpill::default();
            let mut runs: Vec<Vec<Run>> = Vec::new();
            let mut lives: Vec<IntervalUnion> = Vec::new();
            for ivs in &raw {
                let mut parts: Vec<IntervalUnion> =
                    (0..3).map(|_| IntervalUnion::exact()).collect();
                for &(a, b) in ivs {
                    parts[rng.below(3) as usize].insert(a, b);
                }
                let mut class_runs = Vec::new();
                for p in &mut parts[..2] {
                    let ivs = p.intervals();
                    if !ivs.is_empty() {
                        let handle = spill.write_run(ivs).unwrap();
                        class_runs.push(Run {
                            handle,
                            len: ivs.len() as u64,
                        });
                    }
                }
                runs.push(class_runs);
                lives.push(parts.pop().unwrap());
            }
            let mut classes: [MergedIntervals<'_>; CLASSES] =
                core::array::from_fn(|_| MergedIntervals::new(&[], &[], 0));
            for ((m, r), l) in classes.iter_mut().zip(&runs).zip(lives.iter_mut()) {
                *m = MergedIntervals::new(r, l.intervals(), 256);
            }
            let (got, failed) = breakdown(&mut classes, &mut spill, &windows);
            assert_eq!(got, want, "round {round}, runs");
            assert_eq!(failed, [false; CLASSES]);
        }
    }

    /// A run that cannot be read back is said even when it lies past every window.
    #[test]
    fn a_run_unread_past_the_windows_is_said() {
        let mut spill = MemorySpill::default();
        // The first buffer of the run (256 intervals) reads back, the rest is not there.
        let far: Vec<Interval> = (0..256)
            .map(|k| Interval {
                start_ns: 1_000 + 10 * k,
                end_ns: 1_005 + 10 * k,
            })
            .collect();
        let handle = spill.write_run(&far).unwrap();
        let runs = [Run { handle, len: 300 }];
        let near = [Interval {
            start_ns: 0,
            end_ns: 10,
        }];
        let mut classes: [MergedIntervals<'_>; CLASSES] =
            core::array::from_fn(|_| MergedIntervals::new(&[], &[], 0));
        classes[4] = MergedIntervals::new(&runs, &near, 256);
        let windows = [Window {
            start_ns: 0,
            end_ns: 20,
        }];
        let (parts, failed) = breakdown(&mut classes, &mut spill, &windows);
        assert_eq!(parts[0][4], 10);
        assert_eq!(parts[0][CLASSES], 10);
        assert!(failed[4]);
        assert_eq!(failed.iter().filter(|&&f| f).count(), 1);
    }
}
