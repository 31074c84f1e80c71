//! Exact statistics of integer durations by selecting only the ranks the percentiles read.
use super::{Fsum, Moments, Num, QUANTILES, Stats, percentile_linear_by};

/// Exact [`Stats`] of durations in integer ns, as `f64` µs: the same result as
/// [`stats_f64_in_place`](super::stats_f64_in_place) on `ns as f64 / 1000.0` of each (the conversion is monotonic, so
/// the integers' order statistics are the µs values'). Only the ranks the percentiles read are
/// put in place (a selection per rank, in increasing order, each over the part right of the
/// one before), not the whole slice sorted: the four percentiles read at most eight ranks, so
/// this takes a few passes over the values instead of a sort's ~log2(n).
#[cfg(feature = "alloc")]
pub(crate) fn stats_ns_in_place<T: Copy + Ord + Into<u64>>(values: &mut [T]) -> Stats {
    let us = |v: T| v.into() as f64 / 1000.0;
    let Some(&first) = values.first() else {
        return Moments::default().stats_with([None; 4]);
    };
    // What `Moments::push` of each `Num::Float(us(v))` gives, without its per-value checks:
    // every value is finite, and min/max of the integers are those of the µs values (equal
    // integers give equal values, so "first of equals" cannot tell them apart).
    let (mut lo, mut hi) = (first, first);
    for &v in values.iter() {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    // The exact sum of the µs values: their significands summed per exponent (all values are
    // finite and non-negative, and their exponents lie between those of the smallest and the
    // largest), then one exact add per exponent. Fsum is exact, so this is its sum of each.
    let split = |x: f64| {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as usize;
        let frac = bits & ((1u64 << 52) - 1);
        if exp == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), exp - 1)
        }
    };
    let (first_offset, last_offset) = (split(us(lo)).1, split(us(hi)).1);
    let mut by_offset = alloc::vec![0u128; last_offset - first_offset + 1];
    for &v in values.iter() {
        let (significand, offset) = split(us(v));
        by_offset[offset - first_offset] += u128::from(significand);
    }
    let mut sum = Fsum::new();
    for (k, &s) in by_offset.iter().enumerate() {
        if s != 0 {
            sum.add_significands(s, first_offset + k);
        }
    }
    let moments = Moments {
        n: values.len() as u64,
        sum,
        min: Some(Num::Float(us(lo))),
        max: Some(Num::Float(us(hi))),
    };
    select_read_ranks(values);
    let pct = QUANTILES.map(|q| percentile_linear_by(values.len(), q, |i| us(values[i])));
    moments.stats_with(pct)
}

/// Puts into place (as a full sort would) every rank that `percentile_linear_by` reads for
/// [`QUANTILES`] over `values.len()` values. The ranks are found by asking it, so they are
/// exactly the ones it reads.
#[cfg(feature = "alloc")]
fn select_read_ranks<T: Copy + Ord>(values: &mut [T]) {
    use core::cell::Cell;
    let n = values.len();
    let ranks: [Cell<usize>; 2 * QUANTILES.len()] = Default::default();
    let count = Cell::new(0);
    let overflow = Cell::new(false);
    for q in QUANTILES {
        percentile_linear_by(n, q, |i| {
            let k = count.get();
            if ranks[..k].iter().any(|r| r.get() == i) {
            } else if k < ranks.len() {
                ranks[k].set(i);
                count.set(k + 1);
            } else {
                overflow.set(true);
            }
            0.0
        });
    }
    if overflow.get() {
        // Not with today's percentile rule (two ranks per quantile); kept correct anyway.
        values.sort_unstable();
        return;
    }
    let mut ranks = ranks.map(Cell::into_inner);
    let ranks = &mut ranks[..count.get()];
    ranks.sort_unstable();
    let mut base = 0;
    for &r in ranks.iter() {
        // Everything left of `base` is at most `values[r]`: select within the rest.
        values[base..].select_nth_unstable(r - base);
        base = r + 1;
    }
}
