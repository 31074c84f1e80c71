//! Python's arithmetic and comparisons on [`Num`], and Python's `float(text)`, as the
//! reference applies them to telemetry timestamps and nvidia-smi CSV fields.
//!
//! An `int` stays an `int` through `+` and `-` (so a difference of integer timestamps prints
//! as `2`, not `2.0`); comparisons between an `int` and a `float` are exact.
use core::cmp::Ordering;

use crate::stats::Num;

/// `a - b` as Python computes it: int - int stays an int (a float past the i64 range).
pub fn sub(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => match x.checked_sub(y) {
            Some(d) => Num::Int(d),
            None => Num::Float(x as f64 - y as f64),
        },
        _ => Num::Float(a.to_f64() - b.to_f64()),
    }
}

/// `a + b` as Python computes it: int + int stays an int (a float past the i64 range).
pub fn add(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => match x.checked_add(y) {
            Some(d) => Num::Int(d),
            None => Num::Float(x as f64 + y as f64),
        },
        _ => Num::Float(a.to_f64() + b.to_f64()),
    }
}

/// Python's ordering of two numbers; `None` when either is NaN (every comparison is false).
pub fn cmp(a: Num, b: Num) -> Option<Ordering> {
    if !a.is_finite() && a.to_f64().is_nan() || !b.is_finite() && b.to_f64().is_nan() {
        return None;
    }
    Some(a.cmp_exact(b))
}

/// `a > b` in Python.
pub fn gt(a: Num, b: Num) -> bool {
    cmp(a, b) == Some(Ordering::Greater)
}

/// `a >= b` in Python.
pub fn ge(a: Num, b: Num) -> bool {
    matches!(cmp(a, b), Some(Ordering::Greater | Ordering::Equal))
}

/// `a <= b` in Python.
pub fn le(a: Num, b: Num) -> bool {
    matches!(cmp(a, b), Some(Ordering::Less | Ordering::Equal))
}

/// `a < b` in Python.
pub fn lt(a: Num, b: Num) -> bool {
    cmp(a, b) == Some(Ordering::Less)
}

/// Python truthiness of a number: zero is false.
pub fn truthy(a: Num) -> bool {
    a.to_f64() != 0.0
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
    fn arithmetic_keeps_ints_and_comparisons_are_exact() {
        assert_eq!(sub(Num::Int(5), Num::Int(2)), Num::Int(3));
        assert_eq!(sub(Num::Int(5), Num::Float(2.0)), Num::Float(3.0));
        assert_eq!(add(Num::Int(5), Num::Int(2)), Num::Int(7));
        assert_eq!(
            sub(Num::Int(i64::MIN), Num::Int(1)),
            Num::Float(i64::MIN as f64 - 1.0)
        );
        assert!(ge(Num::Int(3), Num::Float(3.0)) && !gt(Num::Int(3), Num::Float(3.0)));
        // 2^53 + 1 is not an f64; Python still orders it above 2^53 as a float.
        assert!(gt(Num::Int((1 << 53) + 1), Num::Float(9007199254740992.0)));
        assert!(!le(Num::Float(f64::NAN), Num::Int(0)) && !ge(Num::Float(f64::NAN), Num::Int(0)));
        assert!(lt(Num::Int(-1), Num::Float(-0.5)) && !truthy(Num::Float(0.0)));
    }
}
