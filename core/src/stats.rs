//! The `stats` of a list of values (docs/numerics.md): count, exact mean, numpy-linear percentiles, and the original min/max.
//!
//! Everything here matches `reference/summarize_e2e_profiles.py` `stats()` bit for bit:
//! - non-finite values are dropped ([`Num::is_finite`]);
//! - `mean` is the correctly rounded sum divided by `n` (`math.fsum(values) / n`), computed by
//!   [`Fsum`], an exact fixed-size accumulator (no allocation);
//! - percentiles are numpy's default `method="linear"` (`h = (n - 1) * q`), interpolated with
//!   numpy's `_lerp` ([`lerp`]) so results are bit-identical;
//! - `min` and `max` are the original values: an integer stays an integer ([`Num::Int`]), and
//!   among equal values `min` is the first and `max` the last in input order, as Python's stable
//!   `sorted(values)[0]` / `[-1]` give.
//!
//! Exact statistics need the values: [`stats_in_place`] works on a caller's slice without
//! allocating; under `alloc`, [`ExactStats`] collects values and [`stats_f64`] is a convenience.
//! For bounded memory use [`crate::sketch::QuantileSketch`], which gives the same shape with a
//! stated error bound.
//!
//! One departure: where Python's `math.fsum` raises `OverflowError` (a partial or final sum
//! beyond the f64 range, e.g. `[MAX, MAX, -MAX]`), the reference crashes; here the mean is the
//! correctly rounded exact sum / n (`MAX / 3` there), or `±inf` when the sum itself is beyond the
//! range, which serializes as `null`.
//!
//! # Example
//! ```
//! use flinch_core::stats::{Num, stats, stats_f64};
//!
//! let s = stats(&[Num::Int(5), Num::Float(1.5), Num::Float(f64::NAN), Num::Int(2)]);
//! assert_eq!(s.n, 3);
//! assert_eq!(s.min, Some(Num::Float(1.5)));
//! assert_eq!(s.max, Some(Num::Int(5))); // prints as `5`, as the reference does
//! assert_eq!(s.p50, Some(2.0));
//! assert_eq!(stats_f64(&[0.1; 10]).mean, Some(0.1)); // fsum: exactly 1.0 / 10
//! ```

use core::cmp::Ordering;

use serde::{Serialize, Serializer};

/// A number that keeps integers as integers, so `min`/`max` print `5` where the reference
/// prints `5` and `5.0` where it prints `5.0`.
#[derive(Clone, Copy, Debug)]
pub enum Num {
    /// An integer value (a JSON number without fraction or exponent).
    Int(i64),
    /// A floating-point value.
    Float(f64),
}

impl Num {
    /// The value as f64, rounded to nearest-even like Python's `float(int)`.
    pub fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// False for NaN and ±inf; integers are always finite.
    pub fn is_finite(self) -> bool {
        match self {
            Num::Int(_) => true,
            Num::Float(f) => f.is_finite(),
        }
    }

    /// Exact numeric order (an `Int` compares to a `Float` without rounding, as in Python).
    /// NaN compares equal to everything; callers drop it first.
    pub fn cmp_exact(self, other: Num) -> Ordering {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            (Num::Int(a), Num::Float(b)) => cmp_int_float(a, b),
            (Num::Float(a), Num::Int(b)) => cmp_int_float(b, a).reverse(),
        }
    }
}

/// Exact comparison of an i64 with an f64 (NaN compares equal).
fn cmp_int_float(i: i64, f: f64) -> Ordering {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Ordering::Equal;
    }
    if f >= TWO_63 {
        return Ordering::Less;
    }
    if f < -TWO_63 {
        return Ordering::Greater;
    }
    // |f| < 2^63: truncation is exact as an i64, and `f - trunc` is exact.
    let t = f as i64;
    match i.cmp(&t) {
        Ordering::Equal => {
            let frac = f - t as f64;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        o => o,
    }
}

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        // Same variant and same value: `Int(5) != Float(5.0)`, because they print differently.
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Float(a), Num::Float(b)) => a.to_bits() == b.to_bits() || a == b,
            _ => false,
        }
    }
}

impl From<f64> for Num {
    fn from(f: f64) -> Num {
        Num::Float(f)
    }
}

impl From<i64> for Num {
    fn from(i: i64) -> Num {
        Num::Int(i)
    }
}

impl From<i32> for Num {
    fn from(i: i32) -> Num {
        Num::Int(i64::from(i))
    }
}

impl From<u32> for Num {
    fn from(i: u32) -> Num {
        Num::Int(i64::from(i))
    }
}

impl From<u64> for Num {
    /// An `Int` when it fits in i64, else the nearest `Float` (Python would keep the integer;
    /// such a value then prints as a float and compares as one).
    fn from(u: u64) -> Num {
        match i64::try_from(u) {
            Ok(i) => Num::Int(i),
            Err(_) => Num::Float(u as f64),
        }
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Num::Int(i) => s.serialize_i64(i),
            Num::Float(f) => s.serialize_f64(f),
        }
    }
}

/// The `stats` of a list of values. Serializes with exactly the reference's keys,
/// `null` for `None` (and for a non-finite mean).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Count of finite values.
    pub n: u64,
    /// Correctly rounded sum / n.
    pub mean: Option<f64>,
    /// The smallest value, as given (first of equals).
    pub min: Option<Num>,
    /// 50th percentile, numpy-linear.
    pub p50: Option<f64>,
    /// 90th percentile, numpy-linear.
    pub p90: Option<f64>,
    /// 95th percentile, numpy-linear.
    pub p95: Option<f64>,
    /// 99th percentile, numpy-linear.
    pub p99: Option<f64>,
    /// The largest value, as given (last of equals).
    pub max: Option<Num>,
}

impl Stats {
    /// `n: 0` and `null` for the rest: the statistics of no values.
    pub const EMPTY: Stats = Stats {
        n: 0,
        mean: None,
        min: None,
        p50: None,
        p90: None,
        p95: None,
        p99: None,
        max: None,
    };
}

/// The quantiles `stats` reports, in key order `p50, p90, p95, p99`.
pub const QUANTILES: [f64; 4] = [0.5, 0.9, 0.95, 0.99];

/// numpy's `_lerp(a, b, t)` for scalars: `a + (b - a) * t` below one half, `b - (b - a) * (1 - t)`
/// from one half on. Written without fused multiply-add so results are bit-identical.
pub fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// numpy-linear percentile of `n` sorted values read through `at(i)` (as f64): `h = (n - 1) * q`,
/// then [`lerp`] between ranks `floor(h)` and `floor(h) + 1`. `None` when `n == 0`.
/// `q` must lie in `[0, 1]`.
pub fn percentile_linear_by(n: usize, q: f64, at: impl Fn(usize) -> f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q;
    if h >= (n - 1) as f64 {
        return Some(at(n - 1));
    }
    // h >= 0, so truncation is floor.
    let lo = h as usize;
    Some(lerp(at(lo), at(lo + 1), h - lo as f64))
}

/// numpy-linear percentile of a sorted slice. `None` when empty.
pub fn percentile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    percentile_linear_by(sorted.len(), q, |i| sorted[i])
}

/// Words in the [`Fsum`] accumulator: 2098 bits of f64 range plus 142 bits of headroom for
/// carries (more than 2^64 additions).
const FSUM_WORDS: usize = 35;

/// Exact sum of f64 values with a correctly rounded (nearest-even) result, like Python's
/// `math.fsum`. A fixed 280-byte two's-complement fixed-point accumulator in units of 2^-1074
/// (the smallest subnormal): every finite f64 is an integer in those units, so the sum is exact
/// for any order and any count below 2^64, with no allocation. Mergeable with [`Fsum::merge`].
///
/// Non-finite inputs follow IEEE rules in the result: any NaN, or both +inf and -inf, give NaN;
/// otherwise an infinity gives that infinity. A finite sum beyond the f64 range gives ±inf
/// (Python raises `OverflowError` there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fsum {
    words: [u64; FSUM_WORDS],
    pos_inf: bool,
    neg_inf: bool,
    nan: bool,
}

impl Default for Fsum {
    fn default() -> Self {
        Fsum::new()
    }
}

impl Fsum {
    /// A zero sum.
    pub const fn new() -> Fsum {
        Fsum {
            words: [0; FSUM_WORDS],
            pos_inf: false,
            neg_inf: false,
            nan: false,
        }
    }

    /// Adds `x` exactly.
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            if x.is_nan() {
                self.nan = true;
            } else if x > 0.0 {
                self.pos_inf = true;
            } else {
                self.neg_inf = true;
            }
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as usize;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, offset) = if exp == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), exp - 1)
        };
        if mant == 0 {
            return;
        }
        let word = offset / 64;
        let shifted = (mant as u128) << (offset % 64);
        let lo = shifted as u64;
        let hi = (shifted >> 64) as u64;
        if bits >> 63 == 0 {
            self.add_words(word, [lo, hi]);
        } else {
            self.sub_at(word, lo, hi);
        }
    }

    /// Adds the `N` words `parts` (least significant first) at `words[word..]`, carrying on
    /// into the words above.
    #[inline(always)]
    fn add_words<const N: usize>(&mut self, word: usize, parts: [u64; N]) {
        let mut carry = false;
        for (k, part) in parts.into_iter().enumerate() {
            let (w1, c1) = self.words[word + k].overflowing_add(part);
            let (w2, c2) = w1.overflowing_add(u64::from(carry));
            self.words[word + k] = w2;
            carry = c1 || c2;
        }
        let mut i = word + N;
        while carry && i < FSUM_WORDS {
            let (w, c) = self.words[i].overflowing_add(1);
            self.words[i] = w;
            carry = c;
            i += 1;
        }
    }

    fn sub_at(&mut self, word: usize, lo: u64, hi: u64) {
        let (w0, b0) = self.words[word].overflowing_sub(lo);
        self.words[word] = w0;
        let (w1a, b1a) = self.words[word + 1].overflowing_sub(hi);
        let (w1, b1b) = w1a.overflowing_sub(b0 as u64);
        self.words[word + 1] = w1;
        let mut borrow = b1a || b1b;
        let mut i = word + 2;
        while borrow && i < FSUM_WORDS {
            let (w, b) = self.words[i].overflowing_sub(1);
            self.words[i] = w;
            borrow = b;
            i += 1;
        }
    }

    /// Adds `sum × 2^offset` units of 2^-1074, exactly: what [`add`](Self::add) of several
    /// positive values whose units share one `offset` (one biased exponent `offset + 1`, or
    /// subnormals at offset 0) adds, their integer significands summed first. For a caller
    /// that groups values by exponent (one add per exponent instead of one per value).
    /// `offset` must be below 2046 (as any f64's is).
    #[cfg(feature = "alloc")] // its one caller, the trace summary, needs alloc
    pub(crate) fn add_significands(&mut self, sum: u128, offset: usize) {
        let (word, sh) = (offset / 64, offset % 64);
        let (lo, hi) = (sum as u64, (sum >> 64) as u64);
        let parts = if sh == 0 {
            [lo, hi, 0]
        } else {
            [lo << sh, (lo >> (64 - sh)) | (hi << sh), hi >> (64 - sh)]
        };
        self.add_words(word, parts);
    }

    /// Adds another accumulator's exact sum to this one.
    pub fn merge(&mut self, other: &Fsum) {
        let mut carry = false;
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            let (s1, c1) = w.overflowing_add(*o);
            let (s2, c2) = s1.overflowing_add(carry as u64);
            *w = s2;
            carry = c1 || c2;
        }
        self.pos_inf |= other.pos_inf;
        self.neg_inf |= other.neg_inf;
        self.nan |= other.nan;
    }

    /// The exact sum rounded to the nearest f64 (ties to even).
    pub fn value(&self) -> f64 {
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        let negative = self.words[FSUM_WORDS - 1] >> 63 == 1;
        let mut mag = self.words;
        if negative {
            // Two's complement negation.
            let mut carry = true;
            for w in mag.iter_mut() {
                let (s, c) = (!*w).overflowing_add(carry as u64);
                *w = s;
                carry = c;
            }
        }
        let magnitude = round_units(&mag);
        if negative { -magnitude } else { magnitude }
    }
}

/// Rounds a non-negative integer (little-endian words) times 2^-1074 to the nearest f64.
fn round_units(mag: &[u64; FSUM_WORDS]) -> f64 {
    let Some(top_word) = mag.iter().rposition(|&w| w != 0) else {
        return 0.0;
    };
    let top_bit = top_word * 64 + 63 - mag[top_word].leading_zeros() as usize;
    let bit = |i: usize| (mag[i / 64] >> (i % 64)) & 1;
    if top_bit < 53 {
        // Below 2^53 units: exact as k * 2^-1074 (subnormal or the lowest normal binade).
        return mag[0] as f64 * f64::from_bits(1);
    }
    // 53 significant bits [top_bit - 52, top_bit], then round bit and sticky bits.
    let low = top_bit - 52;
    let mut m: u64 = 0;
    for i in (low..=top_bit).rev() {
        m = (m << 1) | bit(i);
    }
    let round = bit(low - 1) == 1;
    let sticky = low >= 2 && {
        let below = low - 1; // bits [0, below) are sticky
        let full = below / 64;
        mag[..full].iter().any(|&w| w != 0)
            || (!below.is_multiple_of(64) && mag[full] & ((1u64 << (below % 64)) - 1) != 0)
    };
    let mut top = top_bit;
    if round && (sticky || m & 1 == 1) {
        m += 1;
        if m == 1u64 << 53 {
            m >>= 1;
            top += 1;
        }
    }
    // value = (m / 2^52) * 2^(top - 1074); biased exponent = top - 1074 + 1023.
    let biased = top - 51;
    if biased >= 0x7ff {
        return f64::INFINITY;
    }
    f64::from_bits(((biased as u64) << 52) | (m & ((1u64 << 52) - 1)))
}

/// `math.fsum(values)`: the correctly rounded sum of `values`.
pub fn fsum(values: &[f64]) -> f64 {
    let mut acc = Fsum::new();
    for &v in values {
        acc.add(v);
    }
    acc.value()
}

/// Running count, exact sum, and original-valued min/max of finite values: the parts of
/// [`Stats`] that need no stored values. Used by [`stats_in_place`] and the sketch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Moments {
    /// Count of finite values seen.
    pub n: u64,
    /// Exact sum of the values (each converted to f64 first, as `math.fsum` does).
    pub sum: Fsum,
    /// First smallest value.
    pub min: Option<Num>,
    /// Last largest value.
    pub max: Option<Num>,
}

impl Moments {
    /// Adds one value; returns false (and ignores it) when it is not finite.
    pub fn push(&mut self, v: Num) -> bool {
        if !v.is_finite() {
            return false;
        }
        self.n += 1;
        self.sum.add(v.to_f64());
        match self.min {
            Some(m) if v.cmp_exact(m) != Ordering::Less => {}
            _ => self.min = Some(v),
        }
        match self.max {
            Some(m) if v.cmp_exact(m) == Ordering::Less => {}
            _ => self.max = Some(v),
        }
        true
    }

    /// Merges `other`, as if its values had been pushed after this one's.
    pub fn merge(&mut self, other: &Moments) {
        self.n += other.n;
        self.sum.merge(&other.sum);
        if let Some(v) = other.min {
            match self.min {
                Some(m) if v.cmp_exact(m) != Ordering::Less => {}
                _ => self.min = Some(v),
            }
        }
        if let Some(v) = other.max {
            match self.max {
                Some(m) if v.cmp_exact(m) == Ordering::Less => {}
                _ => self.max = Some(v),
            }
        }
    }

    /// `fsum / n`, or `None` with no values.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum.value() / self.n as f64)
    }

    /// [`Stats`] with these moments and the given percentiles `[p50, p90, p95, p99]`.
    pub fn stats_with(&self, percentiles: [Option<f64>; 4]) -> Stats {
        if self.n == 0 {
            return Stats::EMPTY;
        }
        Stats {
            n: self.n,
            mean: self.mean(),
            min: self.min,
            p50: percentiles[0],
            p90: percentiles[1],
            p95: percentiles[2],
            p99: percentiles[3],
            max: self.max,
        }
    }
}

/// Exact `stats` of `values`, without allocating. Reorders the slice: finite values are
/// moved to the front and sorted. (Same zero-sign caveat as [`stats_f64_in_place`].)
pub fn stats_in_place(values: &mut [Num]) -> Stats {
    let mut moments = Moments::default();
    let mut kept = 0;
    for i in 0..values.len() {
        let v = values[i];
        if moments.push(v) {
            values[kept] = v;
            kept += 1;
        }
    }
    let finite = &mut values[..kept];
    finite.sort_unstable_by(|a, b| a.cmp_exact(*b));
    let pct = QUANTILES.map(|q| percentile_linear_by(kept, q, |i| finite[i].to_f64()));
    moments.stats_with(pct)
}

/// Exact `stats` of f64 values, without allocating (reorders the slice). Bit-identical
/// to the reference except, where both `0.0` and `-0.0` occur, possibly the sign of a zero
/// percentile (Python's stable sort keeps their input order; JSON values compare equal).
pub fn stats_f64_in_place(values: &mut [f64]) -> Stats {
    let mut moments = Moments::default();
    let mut kept = 0;
    for i in 0..values.len() {
        let v = values[i];
        if moments.push(Num::Float(v)) {
            values[kept] = v;
            kept += 1;
        }
    }
    let finite = &mut values[..kept];
    finite.sort_unstable_by(f64::total_cmp);
    let pct = QUANTILES.map(|q| percentile_linear(finite, q));
    moments.stats_with(pct)
}

/// Exact [`Stats`] of durations in integer ns, as `f64` µs: the same result as
/// [`stats_f64_in_place`] on `ns as f64 / 1000.0` of each (the conversion is monotonic, so
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

/// Collects values and gives exact [`Stats`] (memory grows with the values: the exact mode).
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Default)]
pub struct ExactStats {
    values: alloc::vec::Vec<Num>,
    moments: Moments,
}

#[cfg(feature = "alloc")]
impl ExactStats {
    /// No values yet.
    pub fn new() -> ExactStats {
        ExactStats::default()
    }

    /// Adds a value; non-finite values are dropped. Returns whether it was kept.
    pub fn push(&mut self, v: impl Into<Num>) -> bool {
        let v = v.into();
        let kept = self.moments.push(v);
        if kept {
            self.values.push(v);
        }
        kept
    }

    /// Count of finite values so far.
    pub fn len(&self) -> u64 {
        self.moments.n
    }

    /// True before any finite value.
    pub fn is_empty(&self) -> bool {
        self.moments.n == 0
    }

    /// Merges `other`'s values, as if pushed after this one's.
    pub fn merge(&mut self, other: &ExactStats) {
        self.moments.merge(&other.moments);
        self.values.extend_from_slice(&other.values);
    }

    /// The statistics so far (sorts the stored values; more values may follow).
    pub fn stats(&mut self) -> Stats {
        self.values.sort_unstable_by(|a, b| a.cmp_exact(*b));
        let v = &self.values;
        let pct = QUANTILES.map(|q| percentile_linear_by(v.len(), q, |i| v[i].to_f64()));
        self.moments.stats_with(pct)
    }
}

/// Exact `stats` of f64 values (copies them).
#[cfg(feature = "alloc")]
pub fn stats_f64(values: &[f64]) -> Stats {
    let mut copy = alloc::vec::Vec::from(values);
    stats_f64_in_place(&mut copy)
}

/// Exact `stats` of [`Num`] values (copies them).
#[cfg(feature = "alloc")]
pub fn stats(values: &[Num]) -> Stats {
    let mut copy = alloc::vec::Vec::from(values);
    stats_in_place(&mut copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selection-based stats equal those of a full sort through the general f64 path, for
    /// sizes around every percentile's rank boundaries, with many ties, and for 8-byte values.
    #[test]
    #[cfg(feature = "alloc")]
    fn stats_of_durations_equal_the_sorted_oracle() {
        let mut rng = crate::testutil::Rng(21);
        let mut sizes: Vec<usize> = (1..=250).collect();
        sizes.extend([999, 1000, 1001, 4096, 10_007]);
        for n in sizes {
            for spread in [3u64, 1000, 1 << 31] {
                let v32: Vec<u32> = (0..n).map(|_| rng.below(spread) as u32).collect();
                let mut oracle: Vec<f64> = v32.iter().map(|&x| f64::from(x) / 1000.0).collect();
                let want = stats_f64_in_place(&mut oracle);
                let mut got = v32.clone();
                assert_eq!(stats_ns_in_place(&mut got), want, "n {n}, spread {spread}");
                let mut sorted = v32.clone();
                sorted.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, sorted, "a permutation of the input");
                let v64: Vec<u64> = v32.iter().map(|&x| u64::from(x) << 20).collect();
                let mut oracle: Vec<f64> = v64.iter().map(|&x| x as f64 / 1000.0).collect();
                let want = stats_f64_in_place(&mut oracle);
                assert_eq!(stats_ns_in_place(&mut v64.clone()), want, "n {n} (u64)");
            }
        }
        assert_eq!(stats_ns_in_place::<u32>(&mut []), Stats::EMPTY);
    }

    /// Significands summed per exponent and added once equal the values added one by one,
    /// for every offset class: subnormals (offset 0), word boundaries (offsets that are
    /// multiples of 64, where the shift is 0), the top of the range, and sums that carry
    /// across words.
    #[test]
    fn add_significands_equals_adding_each_value() {
        let mut rng = crate::testutil::Rng(61);
        let offsets = [
            0usize, 1, 52, 63, 64, 65, 127, 128, 500, 1000, 1023, 1088, 2000, 2045,
        ];
        for round in 0..200 {
            let mut each = Fsum::new();
            let mut grouped = Fsum::new();
            // Some values first, so the words hold carries to propagate into.
            for _ in 0..rng.below(5) {
                let x = f64::from_bits(rng.next_u64() >> 2);
                each.add(x);
                grouped.add(x);
            }
            for &offset in &offsets {
                let n = 1 + rng.below(if round % 2 == 0 { 5 } else { 3000 });
                let mut sum: u128 = 0;
                for _ in 0..n {
                    let frac = if round % 3 == 0 {
                        (1u64 << 52) - 1
                    } else {
                        rng.next_u64() & ((1u64 << 52) - 1)
                    };
                    let (significand, bits) = if offset == 0 {
                        (frac, frac)
                    } else {
                        (frac | 1 << 52, ((offset as u64 + 1) << 52) | frac)
                    };
                    each.add(f64::from_bits(bits));
                    sum += u128::from(significand);
                }
                grouped.add_significands(sum, offset);
            }
            assert_eq!(grouped, each, "round {round}");
            assert_eq!(grouped.value().to_bits(), each.value().to_bits());
        }
    }
    use crate::testutil::Rng;
    use std::vec::Vec;

    /// Naive oracle for fsum over a narrow range: values that are integer multiples of 2^-30
    /// below 2^82 sum exactly in i128, then round once through `i128 as f64` (nearest-even).
    fn narrow_exact_sum(values: &[f64]) -> f64 {
        let mut total: i128 = 0;
        for &v in values {
            let units = v * (1u64 << 30) as f64;
            assert_eq!(units, units.trunc());
            total += units as i128;
        }
        (total as f64) / (1u64 << 30) as f64
    }

    #[test]
    fn fsum_matches_exact_integer_oracle() {
        let mut rng = Rng::from_env(7);
        for _ in 0..2000 {
            let n = rng.below(50) as usize;
            let vals: Vec<f64> = (0..n)
                .map(|_| {
                    let mag = rng.below(60) as i32;
                    let m = (rng.next_u64() >> (64 - 23)) as i64 - (1 << 22);
                    // m * 2^(mag - 30): an integer multiple of 2^-30.
                    (m as f64) * 2f64.powi(mag - 30)
                })
                .collect();
            assert_eq!(
                fsum(&vals).to_bits(),
                narrow_exact_sum(&vals).to_bits(),
                "{vals:?}"
            );
        }
    }

    #[test]
    fn fsum_known_values() {
        assert_eq!(fsum(&[]), 0.0);
        assert_eq!(fsum(&[0.1; 10]), 1.0);
        assert_eq!(fsum(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
        assert_eq!(fsum(&[1.0, 1e-16, 1e-16]), 1.0000000000000002);
        assert_eq!(fsum(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(fsum(&[f64::MAX, f64::MAX, -f64::MAX]), f64::MAX);
        assert_eq!(fsum(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
        assert_eq!(fsum(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(fsum(&[-5e-324]), -5e-324);
        assert!(fsum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(fsum(&[f64::INFINITY, 1.0]), f64::INFINITY);
        // Ties to even: 2^53 + 1 is halfway between 2^53 and 2^53 + 2.
        let two53 = 9007199254740992.0;
        assert_eq!(fsum(&[two53, 1.0]), two53);
        assert_eq!(fsum(&[two53, 1.0, 1e-300]), two53 + 2.0);
        assert_eq!(fsum(&[two53 + 2.0, 1.0]), two53 + 4.0);
    }

    #[test]
    fn fsum_merge_equals_sequential() {
        let mut rng = Rng::from_env(11);
        for _ in 0..200 {
            let vals: Vec<f64> = (0..40)
                .map(|_| (rng.unit_f64() - 0.5) * 2f64.powi(rng.below(200) as i32 - 100))
                .collect();
            let (a, b) = vals.split_at(rng.below(40) as usize);
            let mut x = Fsum::new();
            a.iter().for_each(|&v| x.add(v));
            let mut y = Fsum::new();
            b.iter().for_each(|&v| y.add(v));
            x.merge(&y);
            assert_eq!(x.value().to_bits(), fsum(&vals).to_bits());
        }
    }

    #[test]
    fn int_float_order_is_exact() {
        let big = 1i64 << 53;
        assert_eq!(
            Num::Int(big + 1).cmp_exact(Num::Float(big as f64)),
            Ordering::Greater
        );
        assert_eq!(
            Num::Int(big).cmp_exact(Num::Float(big as f64)),
            Ordering::Equal
        );
        assert_eq!(Num::Int(-3).cmp_exact(Num::Float(-2.5)), Ordering::Less);
        assert_eq!(Num::Int(2).cmp_exact(Num::Float(2.5)), Ordering::Less);
        assert_eq!(
            Num::Int(i64::MAX).cmp_exact(Num::Float(9.3e18)),
            Ordering::Less
        );
        assert_eq!(
            Num::Int(i64::MIN).cmp_exact(Num::Float(-9.3e18)),
            Ordering::Greater
        );
        assert_eq!(Num::Float(0.5).cmp_exact(Num::Int(0)), Ordering::Greater);
    }

    #[test]
    fn empty_and_non_finite() {
        let s = stats_f64(&[f64::NAN, f64::INFINITY]);
        assert_eq!(s, Stats::EMPTY);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"n":0,"mean":null,"min":null,"p50":null,"p90":null,"p95":null,"p99":null,"max":null}"#
        );
        let s = stats(&[Num::Int(5), Num::Float(f64::NAN)]);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"n":1,"mean":5.0,"min":5,"p50":5.0,"p90":5.0,"p95":5.0,"p99":5.0,"max":5}"#
        );
    }

    #[test]
    fn conversions() {
        assert_eq!(Num::from(7u64), Num::Int(7));
        assert_eq!(
            Num::from(u64::MAX),
            Num::Float(18446744073709551615u64 as f64)
        );
        assert_eq!(Num::from(-3i32), Num::Int(-3));
        assert_ne!(Num::Int(5), Num::Float(5.0));
        assert_eq!(serde_json::to_string(&Num::Float(5.0)).unwrap(), "5.0");
        assert_eq!(serde_json::to_string(&Num::Int(5)).unwrap(), "5");
    }

    #[test]
    fn min_max_keep_first_and_last_of_equals() {
        let s = stats(&[Num::Float(5.0), Num::Int(5), Num::Int(1), Num::Float(1.0)]);
        assert_eq!(s.min, Some(Num::Int(1)));
        assert_eq!(s.max, Some(Num::Int(5)));
        let s = stats(&[Num::Int(5), Num::Float(5.0)]);
        assert_eq!(s.min, Some(Num::Int(5)));
        assert_eq!(s.max, Some(Num::Float(5.0)));
    }

    /// Naive oracle: the reference's algorithm written out directly (stable sort, index).
    fn naive(values: &[Num]) -> Stats {
        let mut kept: Vec<Num> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if kept.is_empty() {
            return Stats::EMPTY;
        }
        kept.sort_by(|a, b| a.cmp_exact(*b)); // stable, as Python's sorted
        let n = kept.len();
        let q = |q: f64| {
            let h = (n - 1) as f64 * q;
            let lo = h.floor();
            if h >= (n - 1) as f64 {
                return kept[n - 1].to_f64();
            }
            let a = kept[lo as usize].to_f64();
            let b = kept[lo as usize + 1].to_f64();
            let t = h - lo;
            let d = b - a;
            if t >= 0.5 {
                b - d * (1.0 - t)
            } else {
                a + d * t
            }
        };
        let floats: Vec<f64> = kept.iter().map(|v| v.to_f64()).collect();
        Stats {
            n: n as u64,
            mean: Some(fsum(&floats) / n as f64),
            min: Some(kept[0]),
            p50: Some(q(0.5)),
            p90: Some(q(0.9)),
            p95: Some(q(0.95)),
            p99: Some(q(0.99)),
            max: Some(kept[n - 1]),
        }
    }

    #[test]
    fn matches_naive_oracle_on_random_mixed_input() {
        let mut rng = Rng::from_env(3);
        for _ in 0..3000 {
            let n = rng.below(40) as usize;
            let vals: Vec<Num> = (0..n)
                .map(|_| match rng.below(6) {
                    0 => Num::Int(rng.below(7) as i64 - 3),
                    1 => Num::Float(rng.below(7) as f64 - 3.0),
                    2 => Num::Float(f64::NAN),
                    3 => Num::Float((rng.unit_f64() - 0.3) * 1e6),
                    4 => Num::Int(rng.next_u64() as i64),
                    _ => Num::Float(rng.unit_f64()),
                })
                .collect();
            let want = naive(&vals);
            let got = stats(&vals);
            assert_eq!(got, want, "{vals:?}");
            let mut ex = ExactStats::new();
            vals.iter().for_each(|&v| {
                ex.push(v);
            });
            assert_eq!(ex.stats(), want);
            let floats: Vec<f64> = vals.iter().map(|v| v.to_f64()).collect();
            let want_f = naive(&floats.iter().map(|&f| Num::Float(f)).collect::<Vec<_>>());
            assert_eq!(stats_f64(&floats), want_f);
        }
    }

    /// Golden cases generated by the Python reference (`core/tests/data/gen_stats_golden.py`):
    /// every output must be bit-identical, ints staying ints.
    #[test]
    fn bit_identical_to_the_python_reference() {
        use serde_json::Value;
        let golden = include_str!("../tests/data/stats_golden.jsonl");
        let mut cases = 0;
        for line in golden.lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let values: Vec<Num> = case["values"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| match v {
                    Value::Number(n) => Some(match n.as_i64() {
                        Some(i) => Num::Int(i),
                        None => Num::Float(n.as_f64().unwrap()),
                    }),
                    Value::String(s) if s == "nan" => Some(Num::Float(f64::NAN)),
                    Value::String(s) if s == "inf" => Some(Num::Float(f64::INFINITY)),
                    Value::String(s) if s == "-inf" => Some(Num::Float(f64::NEG_INFINITY)),
                    _ => None, // bool, null, text: not numbers, as the reference drops them
                })
                .collect();
            let got = serde_json::to_value(stats(&values)).unwrap();
            assert_eq!(got, case["stats"], "{line}");
            cases += 1;
        }
        assert_eq!(cases, 400);
    }
}
