//! A number that keeps integers as integers, as the reference prints them.
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
