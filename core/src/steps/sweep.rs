//! Each step's breakdown from the classes' unions, by one sweep in time order.
//!
//! Every class's union is a sorted list of disjoint intervals. The sweep walks the boundaries
//! of all seven lists in time order; between two boundaries the set of active classes is
//! fixed, and the lowest-numbered active class owns the stretch. Each stretch's length inside
//! a step's window is added to that step's part (steps may overlap or nest: each takes its
//! own share); `other` is the window's length minus the classes' parts. All in integer ns.
use alloc::vec::Vec;

use super::class::{CLASSES, PARTS};
use crate::summary::IntervalSpill;
use crate::summary::spill::MergedIntervals;

/// A step's window and its parts, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
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
    let mut failed = [false; CLASSES];
    // Windows by start; the sweep keeps those that overlap the current stretch.
    let mut by_start: Vec<u32> = (0..windows.len() as u32).collect();
    by_start.sort_by_key(|&i| windows[i as usize].start_ns);
    let mut next_window = 0usize;
    let mut active: Vec<u32> = Vec::new();
    let mut inside = [false; CLASSES];
    // The time of the next boundary of class c, read once per boundary crossed.
    let mut peek = |c: usize, classes: &mut [MergedIntervals<'_>; CLASSES], inside: bool| {
        if failed[c] {
            return None;
        }
        match classes[c].peek(spill) {
            Ok(iv) => iv.map(|iv| if inside { iv.end_ns } else { iv.start_ns }),
            Err(()) => {
                failed[c] = true;
                None
            }
        }
    };
    let mut next_at: [Option<i64>; CLASSES] = core::array::from_fn(|c| peek(c, classes, false));
    let Some(mut t) = next_at.iter().flatten().copied().min() else {
        return (finish(parts, windows), failed);
    };
    loop {
        // Cross every boundary at `t`.
        for c in 0..CLASSES {
            while next_at[c] == Some(t) {
                if inside[c] {
                    // Peeked already: the interval is taken.
                    let _ = classes[c].next(&mut NoSpill);
                }
                inside[c] = !inside[c];
                next_at[c] = peek(c, classes, inside[c]);
            }
        }
        let Some(next) = next_at.iter().flatten().copied().min() else {
            break;
        };
        if let Some(owner) = inside.iter().position(|&b| b) {
            // Windows that start before `next` may overlap [t, next).
            while let Some(&w) = by_start.get(next_window) {
                if windows[w as usize].start_ns >= next {
                    break;
                }
                active.push(w);
                next_window += 1;
            }
            active.retain(|&w| windows[w as usize].end_ns > t);
            for &w in &active {
                let win = windows[w as usize];
                let a = t.max(win.start_ns);
                let b = next.min(win.end_ns);
                if b > a {
                    parts[w as usize][owner] += b.abs_diff(a);
                }
            }
        }
        t = next;
    }
    (finish(parts, windows), failed)
}

/// A spill with nothing in it: for taking an interval already peeked (read from the real one).
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
