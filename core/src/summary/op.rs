//! Per-op values: an op's duration sum and durations (exact, sketched or dropped) in the budget.
use alloc::vec::Vec;

use crate::sketch::QuantileSketch;

pub(super) struct OpAcc {
    pub(super) dur_sum_ns: i128,
    pub(super) values: OpValues,
}

/// An op's durations as integer nanoseconds: 4 bytes each while every duration is below
/// 2^32 ns (4.29 s), 8 bytes each after that; exact until the shared `max_exact_values` budget
/// (4-byte units of allocated capacity) runs out. Then the op that cannot grow keeps only its
/// count and range (`Dropped`) when the summary can read its input again (the percentiles of a
/// listed op then come from further passes), else moves to a quantile sketch holding all of
/// them when the budget has room for the sketch (16 KiB, counted), else is `Dropped` with its
/// percentiles unknown (stated). `f64` µs are made from the integers only at the end
/// (`ns as f64 / 1000.0`), so the stats are those of the µs values.
pub(super) enum OpValues {
    Exact32(Vec<u32>),
    Exact64(Vec<u64>),
    Sketch(alloc::boxed::Box<SketchedOp>),
    Dropped { n: u64, min_ns: u64, max_ns: u64 },
}

/// Budget units of one op's sketch (16 KiB).
const SKETCH_UNITS: usize = 4096;

/// An op's durations past the budget: the sketch, and their exact range in ns (where a further
/// pass looks for the exact percentiles: see `refine`).
pub(super) struct SketchedOp {
    pub(super) sketch: QuantileSketch,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
}

impl OpValues {
    /// Budget units (4 bytes) of allocated capacity.
    fn units(&self) -> usize {
        match self {
            OpValues::Exact32(v) => v.capacity(),
            OpValues::Exact64(v) => v.capacity() * 2,
            OpValues::Sketch(_) => SKETCH_UNITS,
            OpValues::Dropped { .. } => 0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            OpValues::Exact32(v) => v.is_empty(),
            OpValues::Exact64(v) => v.is_empty(),
            OpValues::Sketch(_) | OpValues::Dropped { .. } => false,
        }
    }
}

impl OpAcc {
    pub(super) fn new() -> OpAcc {
        OpAcc {
            dur_sum_ns: 0,
            values: OpValues::Exact32(Vec::new()),
        }
    }
}

/// Capacity to grow a full vector of `len` elements of `unit` budget units each to, within
/// `room` free units: double (at least 8), or whatever fits; `None` when not one more fits.
fn grown_capacity(len: usize, unit: usize, room: usize) -> Option<usize> {
    let want = len.saturating_mul(2).max(8);
    let fits = len.saturating_add(room / unit);
    let cap = want.min(fits);
    (cap > len).then_some(cap)
}

/// Buckets per sign of an op's sketch: 16 powers of two at 1/129 relative error, 16 KiB.
const SKETCH_BUCKETS_PER_SIGN: usize = 1024;

/// What [`push_value`] did to the budget.
pub(super) enum Pushed {
    /// The vector grew by this many units.
    Grew(usize),
    /// The op moved to a sketch or dropped its values: it released `released` units and now
    /// holds `now`.
    Moved { released: usize, now: usize },
}

/// Adds one duration to an op's values: in place when capacity allows (`None`: the budget is
/// unchanged), else growing within `budget - stored` units, else (see [`OpValues`]) moving the
/// op to a sketch when `sketches` and the budget has room for one, or keeping only its count
/// and range.
// Always: per event (see `TraceSummary::cat_and_op_memo`).
#[inline(always)]
pub(super) fn push_value(
    values: &mut OpValues,
    dur_ns: u64,
    stored: usize,
    budget: usize,
    sketches: bool,
) -> Option<Pushed> {
    let room = budget.saturating_sub(stored);
    match values {
        OpValues::Exact32(v) => {
            if let Ok(small) = u32::try_from(dur_ns) {
                if v.len() < v.capacity() {
                    v.push(small);
                    return None;
                }
                if let Some(cap) = grown_capacity(v.len(), 1, room) {
                    let before = v.capacity();
                    v.reserve_exact(cap - v.len());
                    v.push(small);
                    return Some(Pushed::Grew(v.capacity() - before));
                }
            } else {
                // A duration of 4.29 s or more: widen this op once, if the budget allows.
                let before = v.capacity();
                let need = v.len() + 1;
                let cap = need.max(8);
                if cap * 2 <= room + before {
                    let mut wide = Vec::with_capacity(cap);
                    wide.extend(v.iter().map(|&x| u64::from(x)));
                    wide.push(dur_ns);
                    *values = OpValues::Exact64(wide);
                    return Some(Pushed::Grew(values.units() - before));
                }
            }
        }
        OpValues::Exact64(v) => {
            if v.len() < v.capacity() {
                v.push(dur_ns);
                return None;
            }
            if let Some(cap) = grown_capacity(v.len(), 2, room) {
                let before = v.capacity() * 2;
                v.reserve_exact(cap - v.len());
                v.push(dur_ns);
                return Some(Pushed::Grew(v.capacity() * 2 - before));
            }
        }
        OpValues::Sketch(s) => {
            s.sketch.push(dur_ns as f64 / 1000.0);
            s.min_ns = s.min_ns.min(dur_ns);
            s.max_ns = s.max_ns.max(dur_ns);
            return None;
        }
        OpValues::Dropped { n, min_ns, max_ns } => {
            *n += 1;
            *min_ns = (*min_ns).min(dur_ns);
            *max_ns = (*max_ns).max(dur_ns);
            return None;
        }
    }
    // The budget is spent for this op: its exact values go back to the budget, and it keeps a
    // sketch (once per op) or only its count and range.
    let released = values.units();
    if !sketches || released + room < SKETCH_UNITS {
        let (mut n, mut lo, mut hi) = (1u64, dur_ns, dur_ns);
        let mut add = |x: u64| {
            n += 1;
            lo = lo.min(x);
            hi = hi.max(x);
        };
        match values {
            OpValues::Exact32(v) => v.iter().for_each(|&x| add(u64::from(x))),
            OpValues::Exact64(v) => v.iter().for_each(|&x| add(x)),
            OpValues::Sketch(_) | OpValues::Dropped { .. } => {}
        }
        *values = OpValues::Dropped {
            n,
            min_ns: lo,
            max_ns: hi,
        };
        return Some(Pushed::Moved { released, now: 0 });
    }
    let mut sketch = QuantileSketch::new(SKETCH_BUCKETS_PER_SIGN);
    let (mut min_ns, mut max_ns) = (dur_ns, dur_ns);
    let mut add = |x: u64| {
        sketch.push(x as f64 / 1000.0);
        min_ns = min_ns.min(x);
        max_ns = max_ns.max(x);
    };
    match values {
        OpValues::Exact32(v) => v.iter().for_each(|&x| add(u64::from(x))),
        OpValues::Exact64(v) => v.iter().for_each(|&x| add(x)),
        OpValues::Sketch(_) | OpValues::Dropped { .. } => {}
    }
    sketch.push(dur_ns as f64 / 1000.0);
    *values = OpValues::Sketch(alloc::boxed::Box::new(SketchedOp {
        sketch,
        min_ns,
        max_ns,
    }));
    Some(Pushed::Moved {
        released,
        now: SKETCH_UNITS,
    })
}
