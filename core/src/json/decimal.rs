//! Decimal microsecond text straight to integer nanoseconds, with no `f64` round trip.
//!
//! Trace `ts`/`dur` values are microseconds written as decimals, often with epoch magnitudes
//! (1712195495406752.8) that an `f64` cannot hold exactly. [`parse_us_to_ns`] reads the digits,
//! shifts the decimal point by three places plus any exponent, and rounds digits below one
//! nanosecond half-to-even. Integer arithmetic only; the result is exact whenever it fits in `i64`.

/// Parses decimal text in microseconds (`-12.5`, `1712195495406752.800`, `1.5e3`, `+7`) into
/// nanoseconds, rounding sub-nanosecond digits half-to-even.
///
/// Accepted: an optional sign, digits with an optional fraction (at least one digit in all), and
/// an optional exponent. Returns `None` for anything else, and when the result does not fit in
/// `i64`.
pub fn parse_us_to_ns(text: &[u8]) -> Option<i64> {
    if let Some(v) = parse_simple(text) {
        return Some(v);
    }
    parse_general(text)
}

/// The common spelling: `[-]digits[.d[d[d]]]` with at most 16 integer digits (epoch
/// microseconds); below 10^19 ns, so exact in `u64`.
#[inline(always)]
fn parse_simple(text: &[u8]) -> Option<i64> {
    let (neg, body) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let mut acc: u64 = 0;
    let mut k = 0;
    while k < body.len() && body[k].is_ascii_digit() {
        acc = acc * 10 + u64::from(body[k] - b'0');
        k += 1;
        if k > 16 {
            return None;
        }
    }
    if k == 0 {
        return None;
    }
    let mut scale = 1000;
    if k < body.len() {
        if body[k] != b'.' || body.len() - k > 4 || body.len() - k < 2 {
            return None;
        }
        k += 1;
        while k < body.len() {
            let d = body[k];
            if !d.is_ascii_digit() {
                return None;
            }
            acc = acc * 10 + u64::from(d - b'0');
            scale /= 10;
            k += 1;
        }
    }
    let v = i64::try_from(acc * scale).ok()?;
    Some(if neg { -v } else { v })
}

fn parse_general(text: &[u8]) -> Option<i64> {
    let mut i = 0;
    let neg = match text.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let int_start = i;
    while i < text.len() && text[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = &text[int_start..i];
    let mut frac_digits: &[u8] = &[];
    if i < text.len() && text[i] == b'.' {
        i += 1;
        let s = i;
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = &text[s..i];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let mut exp: i64 = 0;
    if i < text.len() && (text[i] == b'e' || text[i] == b'E') {
        i += 1;
        let mut exp_neg = false;
        if i < text.len() && (text[i] == b'-' || text[i] == b'+') {
            exp_neg = text[i] == b'-';
            i += 1;
        }
        let s = i;
        while i < text.len() && text[i].is_ascii_digit() {
            // Clamp: beyond a million digits either way the answer is overflow or zero.
            exp = (exp * 10 + i64::from(text[i] - b'0')).min(1_000_000_000);
            i += 1;
        }
        if i == s {
            return None;
        }
        if exp_neg {
            exp = -exp;
        }
    }
    if i != text.len() {
        return None;
    }
    let digit = |k: usize| -> u8 {
        if k < int_digits.len() {
            int_digits[k] - b'0'
        } else {
            frac_digits[k - int_digits.len()] - b'0'
        }
    };
    let total = int_digits.len() + frac_digits.len();
    // Number of leading digits that land at or above the nanosecond place.
    let kept = int_digits.len() as i64 + exp + 3;
    let mut acc: u128 = 0;
    let keep_n = kept.clamp(0, total as i64) as usize;
    for k in 0..keep_n {
        acc = acc.checked_mul(10)?.checked_add(u128::from(digit(k)))?;
    }
    if kept > total as i64 {
        if acc != 0 {
            for _ in 0..(kept - total as i64) {
                acc = acc.checked_mul(10)?;
                if acc > u128::from(u64::MAX) {
                    return None;
                }
            }
        }
    } else if keep_n < total {
        // Round on the dropped digits: the first decides unless it is exactly 5.
        let first_dropped = if kept < 0 { 0 } else { digit(keep_n) };
        let round_up = match first_dropped {
            0..=4 => false,
            6..=9 => true,
            _ => {
                let rest_nonzero = (keep_n + 1..total).any(|k| digit(k) != 0);
                rest_nonzero || acc % 2 == 1
            }
        };
        if round_up {
            acc = acc.checked_add(1)?;
        }
    }
    if neg {
        if acc > (i64::MAX as u128) + 1 {
            return None;
        }
        Some((acc as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(acc).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_us_to_ns;
    use crate::testutil::Rng;
    use std::format;
    use std::string::String;

    fn p(s: &str) -> Option<i64> {
        parse_us_to_ns(s.as_bytes())
    }

    #[test]
    fn plain_values() {
        assert_eq!(p("0"), Some(0));
        assert_eq!(p("-0"), Some(0));
        assert_eq!(p("1"), Some(1000));
        assert_eq!(p("12.345"), Some(12_345));
        assert_eq!(p("1712195495406752.8"), Some(1_712_195_495_406_752_800));
        assert_eq!(p("1712195495519689.047"), Some(1_712_195_495_519_689_047));
        assert_eq!(p("-3.5"), Some(-3500));
        assert_eq!(p("+7"), Some(7000));
        assert_eq!(p("0.001"), Some(1));
        assert_eq!(p("5."), Some(5000));
        assert_eq!(p(".5"), Some(500));
    }

    #[test]
    fn half_even_rounding_of_sub_ns_digits() {
        assert_eq!(p("0.0005"), Some(0));
        assert_eq!(p("0.0015"), Some(2));
        assert_eq!(p("0.0025"), Some(2));
        assert_eq!(p("0.00250001"), Some(3));
        assert_eq!(p("0.0014999"), Some(1));
        assert_eq!(p("0.0006"), Some(1));
        assert_eq!(p("-0.0015"), Some(-2));
        assert_eq!(p("0.00000000000009"), Some(0));
        assert_eq!(p("1.2345"), Some(1234));
        assert_eq!(p("1.2355"), Some(1236));
    }

    #[test]
    fn exponents() {
        assert_eq!(p("1e3"), Some(1_000_000));
        assert_eq!(p("1.5E-3"), Some(2));
        assert_eq!(p("2.5e-3"), Some(2));
        assert_eq!(p("1.7121954954067528e15"), Some(1_712_195_495_406_752_800));
        assert_eq!(p("0e999999999999"), Some(0));
        assert_eq!(p("1e-999999999999"), Some(0));
        assert_eq!(p("1e999"), None);
        assert_eq!(p("123e-2"), Some(1230));
    }

    #[test]
    fn rejects_and_overflow() {
        for s in [
            "", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "abc", "true", "NaN", "1 ", "--1",
            "0x10",
        ] {
            assert_eq!(p(s), None, "{s:?}");
        }
        assert_eq!(p("9223372036854775.807"), Some(i64::MAX));
        assert_eq!(p("9223372036854775.808"), None);
        assert_eq!(p("-9223372036854775.808"), Some(i64::MIN));
        assert_eq!(p("99999999999999999999999999999999999999999"), None);
    }

    /// Oracle: exact rational arithmetic on random decimal strings with u128 big enough.
    #[test]
    fn random_against_integer_oracle() {
        let mut rng = Rng::from_env(7);
        for _ in 0..20_000 {
            let int_part = rng.below(10_000_000_000);
            let frac_len = rng.below(8) as usize;
            let frac = rng.below(10u64.pow(frac_len as u32).max(1));
            let mut s = format!("{int_part}");
            if frac_len > 0 {
                s.push('.');
                let f = format!("{frac:0width$}", width = frac_len);
                s.push_str(&f);
            }
            // value_us = (int_part*10^frac_len + frac) / 10^frac_len ; ns = that * 1000
            let num =
                (u128::from(int_part) * 10u128.pow(frac_len as u32) + u128::from(frac)) * 1000;
            let den = 10u128.pow(frac_len as u32);
            let q = num / den;
            let r = num % den;
            let expect = if 2 * r > den || (2 * r == den && q % 2 == 1) {
                q + 1
            } else {
                q
            };
            assert_eq!(p(&s), Some(expect as i64), "{s}");
            let neg: String = format!("-{s}");
            assert_eq!(p(&neg), Some(-(expect as i64)), "{neg}");
        }
    }
}
