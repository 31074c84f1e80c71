//! Numbers and statistics with the reference's Python semantics (SPEC §4 `stats`).
//!
//! [`Num`] keeps a JSON integer an integer, so `min`/`max` and integer differences print as the
//! reference prints them (`5`, not `5.0`). [`stats`] follows the reference exactly: non-finite
//! values are dropped (a bool never reaches it: callers map bools to "not a number"), the mean is
//! the correctly rounded sum (Python `math.fsum`) divided by n, and percentiles interpolate
//! linearly between closest ranks with numpy's `_lerp`, so results are bit-identical.
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Serialize, Serializer};

/// A JSON number as Python holds it: an `int` stays an integer, everything else is a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// A JSON integer (Python `int`).
    Int(i64),
    /// A JSON float (Python `float`).
    Float(f64),
}

impl Num {
    /// The value as an f64, like Python's `float(x)`.
    pub fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Whether `stats` keeps it: any integer, or a finite float.
    pub fn is_finite(self) -> bool {
        match self {
            Num::Int(_) => true,
            Num::Float(f) => f.is_finite(),
        }
    }

    /// Python truthiness: zero is false.
    pub fn is_truthy(self) -> bool {
        match self {
            Num::Int(i) => i != 0,
            Num::Float(f) => f != 0.0,
        }
    }

    fn sub_py(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => match a.checked_sub(b) {
                Some(d) => Num::Int(d),
                None => Num::Float(a as f64 - b as f64),
            },
            _ => Num::Float(self.to_f64() - other.to_f64()),
        }
    }

    fn add_py(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => match a.checked_add(b) {
                Some(d) => Num::Int(d),
                None => Num::Float(a as f64 + b as f64),
            },
            _ => Num::Float(self.to_f64() + other.to_f64()),
        }
    }

    /// Python's ordering of numbers: exact between integers, by value otherwise.
    /// NaN compares as unordered (`None`).
    pub fn partial_cmp_py(self, other: Num) -> Option<Ordering> {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
            _ => self.to_f64().partial_cmp(&other.to_f64()),
        }
    }

    /// `self > other` in Python.
    pub fn gt(self, other: Num) -> bool {
        self.partial_cmp_py(other) == Some(Ordering::Greater)
    }

    /// `self >= other` in Python.
    pub fn ge(self, other: Num) -> bool {
        matches!(
            self.partial_cmp_py(other),
            Some(Ordering::Greater | Ordering::Equal)
        )
    }

    /// `self <= other` in Python.
    pub fn le(self, other: Num) -> bool {
        matches!(
            self.partial_cmp_py(other),
            Some(Ordering::Less | Ordering::Equal)
        )
    }

    /// `self < other` in Python.
    pub fn lt(self, other: Num) -> bool {
        self.partial_cmp_py(other) == Some(Ordering::Less)
    }
}

/// `a - b` as Python computes it: int - int stays an int (a float past the i64 range).
impl core::ops::Sub for Num {
    type Output = Num;
    fn sub(self, other: Num) -> Num {
        self.sub_py(other)
    }
}

/// `a + b` as Python computes it: int + int stays an int (a float past the i64 range).
impl core::ops::Add for Num {
    type Output = Num;
    fn add(self, other: Num) -> Num {
        self.add_py(other)
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

/// The result of [`stats`]: exactly the reference's keys in its order; `None` renders as null.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesStats {
    /// Values kept (finite numbers).
    pub n: usize,
    /// Correctly rounded sum divided by n.
    pub mean: Option<f64>,
    /// Smallest value, as given.
    pub min: Option<Num>,
    /// Median (numpy linear).
    pub p50: Option<f64>,
    /// 90th percentile (numpy linear).
    pub p90: Option<f64>,
    /// 95th percentile (numpy linear).
    pub p95: Option<f64>,
    /// 99th percentile (numpy linear).
    pub p99: Option<f64>,
    /// Largest value, as given.
    pub max: Option<Num>,
}

impl SeriesStats {
    /// The result for no usable values: n 0 and null for the rest.
    pub const EMPTY: SeriesStats = SeriesStats {
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

/// SPEC §4 `stats` over `values`, which it reorders (sorts) in place. Non-finite values are
/// dropped. Sorting is stable, so of equal values (`1` and `1.0`) the earlier one is `min`,
/// as in Python.
pub fn stats(values: &mut Vec<Num>) -> SeriesStats {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return SeriesStats::EMPTY;
    }
    values.sort_by(|a, b| a.partial_cmp_py(*b).unwrap_or(Ordering::Equal));
    let n = values.len();
    let mut partials = Vec::new();
    let sum = fsum(values.iter().map(|v| v.to_f64()), &mut partials);
    SeriesStats {
        n,
        mean: Some(sum / n as f64),
        min: Some(values[0]),
        p50: Some(percentile_linear(values, 0.5)),
        p90: Some(percentile_linear(values, 0.9)),
        p95: Some(percentile_linear(values, 0.95)),
        p99: Some(percentile_linear(values, 0.99)),
        max: Some(values[n - 1]),
    }
}

/// numpy's `_lerp` for scalars, term for term.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// numpy's default percentile (`h = (n-1)·q`, linear between closest ranks) of sorted values.
/// `sorted` must not be empty.
pub fn percentile_linear(sorted: &[Num], q: f64) -> f64 {
    let n = sorted.len();
    let h = (n - 1) as f64 * q;
    let lo = libm_floor(h);
    if h >= (n - 1) as f64 {
        return sorted[n - 1].to_f64();
    }
    let i = lo as usize;
    lerp(sorted[i].to_f64(), sorted[i + 1].to_f64(), h - lo)
}

/// `floor` without std: exact for the non-negative values used here.
fn libm_floor(x: f64) -> f64 {
    let t = x as u64 as f64;
    if t > x { t - 1.0 } else { t }
}

/// Correctly rounded sum of finite floats: Python's `math.fsum` (Shewchuk's partials, with
/// CPython's half-even correction across partials). `partials` is scratch space the caller
/// may reuse.
pub fn fsum(values: impl Iterator<Item = f64>, partials: &mut Vec<f64>) -> f64 {
    partials.clear();
    for mut x in values {
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                core::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        if x != 0.0 {
            partials.push(x);
        }
    }
    let p = &partials[..];
    let mut n = p.len();
    if n == 0 {
        return 0.0;
    }
    n -= 1;
    let mut hi = p[n];
    let mut lo = 0.0;
    while n > 0 {
        let x = hi;
        n -= 1;
        let y = p[n];
        hi = x + y;
        let yr = hi - x;
        lo = y - yr;
        if lo != 0.0 {
            break;
        }
    }
    if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
        let y = lo * 2.0;
        let x = hi + y;
        let yr = x - hi;
        if y == yr {
            hi = x;
        }
    }
    hi
}

/// Python's `float(text)` for the text of one CSV field: surrounding whitespace stripped,
/// `nan`/`inf`/`infinity` in any case with an optional sign, and `_` between digits. `None`
/// where Python raises `ValueError`. (Non-ASCII digits, which Python also accepts, are not.)
pub fn parse_py_float(text: &str) -> Option<f64> {
    let t = text.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
    if t.is_empty() {
        return None;
    }
    if !t.contains('_') {
        return t.parse().ok();
    }
    let b = t.as_bytes();
    let mut buf = [0u8; 64];
    let mut len = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let ok =
                i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit();
            if !ok {
                return None;
            }
            continue;
        }
        if len == buf.len() {
            return None;
        }
        buf[len] = c;
        len += 1;
    }
    core::str::from_utf8(&buf[..len]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use alloc::vec;

    /// Naive oracle: exact sum through i128 fixed point for values that are multiples of 2^-20.
    #[test]
    fn fsum_is_exact_on_fixed_point_values() {
        let mut rng = Rng(7);
        let mut partials = Vec::new();
        for _ in 0..500 {
            let n = rng.below(50) as usize;
            let raw: Vec<i64> = (0..n)
                .map(|_| (rng.next_u64() >> 11) as i64 - (1 << 52))
                .collect();
            let exact: i128 = raw.iter().map(|&r| r as i128).sum();
            let got = fsum(raw.iter().map(|&r| r as f64 / 1048576.0), &mut partials);
            // exact as f64: i128 -> f64 rounds to nearest once.
            assert_eq!(got, exact as f64 / 1048576.0, "{raw:?}");
        }
    }

    #[test]
    fn fsum_cancellation_and_half_even() {
        let mut p = Vec::new();
        assert_eq!(fsum([1e100, 1.0, -1e100].into_iter(), &mut p), 1.0);
        assert_eq!(fsum([0.1; 10].into_iter(), &mut p), 1.0);
        // Python: math.fsum([1.0, 1e-16, 1e-16]) == 1.0000000000000002
        assert_eq!(
            fsum([1.0, 1e-16, 1e-16].into_iter(), &mut p),
            1.0000000000000002
        );
        assert_eq!(fsum(core::iter::empty(), &mut p), 0.0);
    }

    #[test]
    fn stats_matches_reference_examples() {
        // Values checked with the Python reference.
        let mut v = vec![
            Num::Int(3),
            Num::Float(1.5),
            Num::Float(f64::NAN),
            Num::Int(10),
        ];
        let s = stats(&mut v);
        assert_eq!(s.n, 3);
        assert_eq!(s.min, Some(Num::Float(1.5)));
        assert_eq!(s.max, Some(Num::Int(10)));
        assert_eq!(s.mean, Some(14.5 / 3.0));
        assert_eq!(s.p50, Some(3.0));
        assert_eq!(s.p90, Some(lerp(3.0, 10.0, 2.0 * 0.9 - 1.0)));
        assert_eq!(
            stats(&mut vec![Num::Float(f64::INFINITY)]),
            SeriesStats::EMPTY
        );
        let one = stats(&mut vec![Num::Int(4)]);
        assert_eq!((one.p99, one.min), (Some(4.0), Some(Num::Int(4))));
    }

    #[test]
    fn stats_percentiles_against_naive_oracle() {
        let mut rng = Rng(11);
        for _ in 0..300 {
            let n = 1 + rng.below(40) as usize;
            let vals: Vec<f64> = (0..n).map(|_| rng.unit_f64() * 100.0 - 20.0).collect();
            let mut nums: Vec<Num> = vals.iter().map(|&f| Num::Float(f)).collect();
            let s = stats(&mut nums);
            let mut sorted = vals.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            for (q, got) in [(0.5, s.p50), (0.9, s.p90), (0.95, s.p95), (0.99, s.p99)] {
                let h = (n - 1) as f64 * q;
                let lo = h as usize;
                let want = if lo + 1 >= n {
                    sorted[n - 1]
                } else {
                    lerp(sorted[lo], sorted[lo + 1], h - lo as f64)
                };
                assert_eq!(got, Some(want));
            }
            assert_eq!(s.min, Some(Num::Float(sorted[0])));
            assert_eq!(s.max, Some(Num::Float(sorted[n - 1])));
        }
    }

    #[test]
    fn equal_values_keep_the_first_as_min() {
        let s = stats(&mut vec![Num::Float(1.0), Num::Int(1)]);
        assert_eq!(s.min, Some(Num::Float(1.0)));
        assert_eq!(s.max, Some(Num::Int(1)));
    }

    #[test]
    fn py_float_parsing() {
        assert_eq!(parse_py_float(" 45 "), Some(45.0));
        assert_eq!(parse_py_float("1_000.5"), Some(1000.5));
        assert_eq!(parse_py_float("1__0"), None);
        assert_eq!(parse_py_float("_1"), None);
        assert_eq!(parse_py_float("[N/A]"), None);
        assert_eq!(parse_py_float(""), None);
        assert!(parse_py_float("NaN").unwrap().is_nan());
        assert_eq!(parse_py_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_py_float(".5"), Some(0.5));
        assert_eq!(parse_py_float("5."), Some(5.0));
    }

    #[test]
    fn num_arithmetic_keeps_ints() {
        assert_eq!(Num::Int(5) - Num::Int(2), Num::Int(3));
        assert_eq!(Num::Int(5) - Num::Float(2.0), Num::Float(3.0));
        assert_eq!(
            Num::Int(i64::MIN) - Num::Int(1),
            Num::Float(i64::MIN as f64 - 1.0)
        );
        assert!(Num::Int(3).ge(Num::Float(3.0)) && !Num::Int(3).gt(Num::Float(3.0)));
    }
}
