//! Python's numbers as the reference tools use them: arithmetic and comparisons on [`Num`]
//! (telemetry timestamps), and `float(text)` / `int(text)` (trace.csv fields, nvidia-smi CSV
//! fields). The one parser of Python number text in the crate.
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

/// ASCII bytes `float()`/`int()` strip: space and `\t`-`\r` (not `\x1c`-`\x1f`, which
/// `str.strip()` would also remove).
fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r')
}

/// The text without the whitespace Python's `float()`/`int()` ignore around a number. Non-ASCII
/// edges are decoded as UTF-8 to strip Unicode spaces (U+00A0, U+3000, ...); text that is not
/// UTF-8 there is kept, and then fails to parse.
fn trim_py(s: &[u8]) -> &[u8] {
    let mut a = 0;
    let mut b = s.len();
    while a < b && is_py_space(s[a]) {
        a += 1;
    }
    while b > a && is_py_space(s[b - 1]) {
        b -= 1;
    }
    let s = &s[a..b];
    if (s.first().is_some_and(|c| !c.is_ascii()) || s.last().is_some_and(|c| !c.is_ascii()))
        && let Ok(text) = core::str::from_utf8(s)
    {
        return text.trim_matches(char::is_whitespace).as_bytes();
    }
    s
}

/// Removes `_` that sit between two ASCII digits (Python's numeric literal rule) into `buf`;
/// `None` when an underscore is misplaced or the text does not fit.
fn strip_underscores<'b>(s: &[u8], buf: &'b mut [u8; 64]) -> Option<&'b [u8]> {
    if s.len() > buf.len() {
        return None;
    }
    let mut n = 0;
    for (i, &c) in s.iter().enumerate() {
        if c == b'_' {
            let ok =
                i > 0 && i + 1 < s.len() && s[i - 1].is_ascii_digit() && s[i + 1].is_ascii_digit();
            if !ok {
                return None;
            }
        } else {
            buf[n] = c;
            n += 1;
        }
    }
    Some(&buf[..n])
}

/// Powers of ten exactly representable in an f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Clinger's fast path for `[-+]ddd[.ddd]` with at most 15 significant digits: the mantissa and
/// the power of ten are exact, so one correctly rounded division gives the correctly rounded
/// value, as a full parse would. `None` for anything else (the caller parses fully).
#[inline]
fn fast_decimal(s: &[u8]) -> Option<f64> {
    let (neg, body) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    // At most 15 digits and a dot (longer texts have more than 15 digits).
    if body.len() > 16 {
        return None;
    }
    let mut m: u64 = 0;
    let mut dot = usize::MAX;
    for (i, &c) in body.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d < 10 {
            m = m * 10 + d as u64;
        } else if c == b'.' && dot == usize::MAX {
            dot = i;
        } else {
            return None;
        }
    }
    let (digits, frac) = if dot == usize::MAX {
        (body.len(), 0)
    } else {
        (body.len() - 1, body.len() - 1 - dot)
    };
    if digits == 0 || digits > 15 {
        return None;
    }
    // m < 10^15 < 2^53: exact as an i64 and as an f64 (one cvtsi2sd, where a u64 takes
    // several instructions). An integer needs no division: x / 1.0 is x.
    let m = m as i64 as f64;
    let v = if frac == 0 { m } else { m / POW10[frac] };
    Some(if neg { -v } else { v })
}

/// The value of eight ASCII digits loaded little-endian (the first digit in the lowest byte),
/// three multiplications instead of eight (the digits are checked by [`eight_digits_ok`]).
#[inline(always)]
fn eight_digits(x: u64) -> u64 {
    let v = x.wrapping_sub(0x3030_3030_3030_3030);
    // Pairs, then quads, then all eight: each step joins neighbours with their weights.
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    (v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32)))
        >> 32
}

/// Whether all eight bytes of `x` are ASCII digits: each byte's high nibble is 3 and adding 6
/// to the byte keeps it (0x30..=0x39 only).
#[inline(always)]
fn eight_digits_ok(x: u64) -> bool {
    const HI4: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    (x & HI4) | ((x.wrapping_add(0x0606_0606_0606_0606) & HI4) >> 4) == 0x3333_3333_3333_3333
}

/// 9 to 16 plain ASCII digits, eight at a time; `None` if any byte is not a digit.
#[inline(always)]
fn digits_9_to_16(s: &[u8]) -> Option<u64> {
    let n = s.len();
    debug_assert!((9..=16).contains(&n));
    let load = |w: &[u8]| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
    let lo = load(&s[n - 8..]);
    // The first n - 8 digits moved to the top bytes, '0' below them.
    let k = (n - 8) as u32 * 8;
    let hi = (load(&s[..8]) << (64 - k)) | 0x3030_3030_3030_3030u64.checked_shr(k).unwrap_or(0);
    (eight_digits_ok(lo) && eight_digits_ok(hi))
        .then(|| eight_digits(hi) * 100_000_000 + eight_digits(lo))
}

/// Parses text as Python's `float()` does for ASCII input: surrounding whitespace, a sign,
/// decimal or exponent forms, `_` between digits, `nan`, `inf`, `infinity` in any case.
#[inline]
pub fn parse_py_float(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    if let Some(v) = fast_decimal(s) {
        return Some(v);
    }
    parse_py_float_full(s)
}

/// [`parse_py_float`] past its fast path (kept out of line: rare in a trace).
#[inline(never)]
fn parse_py_float_full(s: &[u8]) -> Option<f64> {
    let s = trim_py(s);
    if s.is_empty() {
        return None;
    }
    let mut buf = [0u8; 64];
    let s = if s.contains(&b'_') {
        strip_underscores(s, &mut buf)?
    } else {
        s
    };
    // Rust's parser accepts the same ASCII float texts as Python's here (see the tests).
    let text = core::str::from_utf8(s).ok()?;
    text.parse::<f64>().ok()
}

/// Parses text as Python's `int()` does for ASCII decimal input (whitespace, sign, `_` between
/// digits, leading zeros). `None` if it does not fit an `i64`.
#[inline]
pub fn parse_py_int(s: &[u8]) -> Option<i64> {
    // A blank field (an unrecorded signal) is the commonest text that is not a number.
    if s.is_empty() {
        return None;
    }
    // Fast paths: 9 to 16 plain digits (timestamps in ns) eight at a time; up to 18 plain
    // digits one at a time (neither can overflow); 19 (below).
    if (9..=16).contains(&s.len())
        && let Some(v) = digits_9_to_16(s)
    {
        return Some(v as i64);
    }
    // 19 plain digits (Unix times in ns): the last 16 eight at a time, the first three one at a
    // time, in a u64 (no overflow below 10^19), then checked against the i64 range.
    if s.len() == 19 {
        let (a, b, c) = (
            s[0].wrapping_sub(b'0'),
            s[1].wrapping_sub(b'0'),
            s[2].wrapping_sub(b'0'),
        );
        if a < 10
            && b < 10
            && c < 10
            && let Some(lo) = digits_9_to_16(&s[3..])
        {
            let head = u64::from(a) * 100 + u64::from(b) * 10 + u64::from(c);
            return i64::try_from(head * 10_000_000_000_000_000 + lo).ok();
        }
    }
    if !s.is_empty() && s.len() <= 18 {
        let mut v = 0i64;
        let mut plain = true;
        for &c in s {
            let d = c.wrapping_sub(b'0');
            plain &= d < 10;
            v = v.wrapping_mul(10).wrapping_add(d as i64);
        }
        if plain {
            return Some(v);
        }
    }
    parse_py_int_full(s)
}

/// [`parse_py_int`] past its fast paths (kept out of line: rare in a trace).
#[inline(never)]
fn parse_py_int_full(s: &[u8]) -> Option<i64> {
    let s = trim_py(s);
    let mut buf = [0u8; 64];
    let s = if s.contains(&b'_') {
        strip_underscores(s, &mut buf)?
    } else {
        s
    };
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = (c - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn py_float_parsing() {
        assert_eq!(parse_py_float(b" 45 "), Some(45.0));
        assert_eq!(parse_py_float(b"1_000.5"), Some(1000.5));
        assert_eq!(parse_py_float(b"[N/A]"), None);
        // Checked against CPython 3.11: Unicode spaces are stripped, \x1c-\x1f are not.
        assert_eq!(parse_py_float(b"\x1c45"), None);
        assert_eq!(parse_py_float(b"45\x1f"), None);
        assert_eq!(parse_py_float("\u{a0}4.5\u{2028}".as_bytes()), Some(4.5));
        assert_eq!(parse_py_float("\u{1680}1\u{85}".as_bytes()), Some(1.0));
        assert_eq!(parse_py_float("\u{200b}1".as_bytes()), None);
        assert_eq!(parse_py_float("4\u{a0}5".as_bytes()), None);
        assert_eq!(parse_py_int("\u{3000}7 ".as_bytes()), Some(7));
        assert_eq!(parse_py_float(b"\xff1"), None);
    }

    #[test]
    fn fast_decimal_agrees_with_the_full_parser() {
        let mut rng = Rng::from_env(13);
        for _ in 0..200_000 {
            let int = rng.below(1_000_000_000);
            let frac_digits = rng.below(8) as usize;
            let frac = rng.below(10u64.pow(frac_digits as u32).max(1));
            let text = if frac_digits == 0 {
                std::format!("{int}")
            } else {
                std::format!("{int}.{frac:0frac_digits$}")
            };
            let want: f64 = text.parse().unwrap();
            match fast_decimal(text.as_bytes()) {
                Some(v) => assert_eq!(v.to_bits(), want.to_bits(), "{text}"),
                None => assert!(
                    text.bytes().filter(u8::is_ascii_digit).count() > 15,
                    "{text}"
                ),
            }
        }
    }

    #[test]
    fn fast_decimal_integers_up_to_16_digits_agree_with_the_full_parser() {
        let mut rng = Rng::from_env(14);
        for _ in 0..200_000 {
            let digits = 1 + rng.below(16) as u32;
            let v = rng.below(10u64.pow(digits));
            let sign = ["", "-", "+"][rng.below(3) as usize];
            let text = std::format!("{sign}{v:0digits$}", digits = digits as usize);
            let want: f64 = text.parse().unwrap();
            match fast_decimal(text.as_bytes()) {
                Some(got) => assert_eq!(got.to_bits(), want.to_bits(), "{text}"),
                None => assert_eq!(digits, 16, "{text}"),
            }
        }
    }

    /// Random short texts over digits, '.', signs and a stray letter: whatever the fast float
    /// path accepts must be exactly what `str::parse` gives.
    #[test]
    fn fast_decimal_accepts_only_what_str_parse_gives_identically() {
        let mut rng = Rng::from_env(29);
        let alphabet = b"0123456789012345678901234567890123456789..-+e/:\xae .";
        let mut accepted = 0;
        for _ in 0..300_000 {
            let n = rng.below(20) as usize;
            let text: String = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize] as char)
                .collect();
            if let Some(v) = fast_decimal(text.as_bytes()) {
                accepted += 1;
                let want: f64 = text.parse().unwrap_or_else(|_| panic!("{text:?}"));
                assert_eq!(v.to_bits(), want.to_bits(), "{text:?}");
            }
        }
        assert!(accepted > 10_000, "{accepted}");
        for edge in [
            "0",
            "-0",
            "+0",
            "1.",
            ".5",
            "-.5",
            "999999999999999",
            "99999999999999.9",
            "0.000000000000001",
            "123456789012345",
            "9007199254740993",
            "1234567.125",
        ] {
            if let Some(v) = fast_decimal(edge.as_bytes()) {
                assert_eq!(
                    v.to_bits(),
                    edge.parse::<f64>().unwrap().to_bits(),
                    "{edge}"
                );
            }
        }
        for short in [
            "5.", "-5.", "0.", ".0", "12345678", "1234567.", ".1234567", "99999999", "0.1",
            "322.910", "-0.5", "+7",
        ] {
            let v = fast_decimal(short.as_bytes()).unwrap_or_else(|| panic!("{short}"));
            assert_eq!(
                v.to_bits(),
                short.parse::<f64>().unwrap().to_bits(),
                "{short}"
            );
        }
        for bad in [
            "", ".", "-", "+", "1.2.3", "1e3", "--1", "1-", "5/", "/.5", "1./", "..", "-.",
            "12.3.", "1234567/", "1/345678", "12 4",
        ] {
            assert_eq!(fast_decimal(bad.as_bytes()), None, "{bad}");
        }
    }

    /// The integer fast paths (eight digits at a time for 9 to 16) against `str::parse`, on
    /// every length around them and with a non-digit at every position.
    #[test]
    fn int_fast_paths_agree_with_str_parse() {
        let mut rng = Rng::from_env(31);
        for round in 0..200_000u32 {
            let n = 1 + rng.below(20) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| b'0' + rng.below(10) as u8).collect();
            if round % 3 == 0 {
                // One byte just outside the digits (or any byte) somewhere.
                let odd = [b'/', b':', b' ', b'.', b'_', b'a', 0x80 | b'0', b'0' ^ 0x40];
                let at = rng.below(n as u64) as usize;
                b[at] = odd[rng.below(odd.len() as u64) as usize];
            }
            let text = String::from_utf8_lossy(&b).into_owned();
            let got = parse_py_int(&b);
            if b.iter().all(u8::is_ascii_digit) {
                assert_eq!(got, text.parse::<i64>().ok(), "{text:?}");
            } else if !b.contains(&b'_') && !b.contains(&b' ') {
                assert_eq!(got, None, "{text:?}");
            }
        }
        for n in 9..=16usize {
            let all9 = "9".repeat(n);
            assert_eq!(digits_9_to_16(all9.as_bytes()), all9.parse().ok());
            let one = std::format!("1{}", "0".repeat(n - 1));
            assert_eq!(digits_9_to_16(one.as_bytes()), one.parse().ok());
        }
    }

    #[test]
    fn eight_digits_ok_is_exact_per_byte() {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut b = *b"01234567";
                b[at] = byte;
                assert_eq!(
                    eight_digits_ok(u64::from_le_bytes(b)),
                    byte.is_ascii_digit(),
                    "{byte} at {at}"
                );
            }
        }
        assert_eq!(eight_digits(u64::from_le_bytes(*b"12345678")), 12_345_678);
        assert_eq!(eight_digits(u64::from_le_bytes(*b"99999999")), 99_999_999);
    }

    #[test]
    fn python_number_rules() {
        // Values checked against CPython 3.11 float()/int().
        assert_eq!(parse_py_float(b" 1.5\t"), Some(1.5));
        assert_eq!(parse_py_float(b"1_000.2_5"), Some(1000.25));
        assert_eq!(parse_py_float(b"1__0"), None);
        assert_eq!(parse_py_float(b"_1"), None);
        assert_eq!(parse_py_float(b""), None);
        assert_eq!(parse_py_float(b"  "), None);
        assert_eq!(parse_py_float(b"1e3"), Some(1000.0));
        assert_eq!(parse_py_float(b".5"), Some(0.5));
        assert_eq!(parse_py_float(b"5."), Some(5.0));
        assert_eq!(parse_py_float(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_py_float(b"NaN").unwrap().is_nan());
        assert_eq!(parse_py_float(b"abc"), None);
        assert_eq!(parse_py_float(b"1."), Some(1.0));
        assert_eq!(parse_py_float(b"-0"), Some(-0.0));
        assert_eq!(parse_py_float(b"-"), None);
        assert_eq!(parse_py_float(b"."), None);
        assert_eq!(parse_py_float(b"1.2.3"), None);
        assert_eq!(parse_py_float(b"0x10"), None);
        assert_eq!(parse_py_int(b" +0012 "), Some(12));
        assert_eq!(parse_py_int(b"-5"), Some(-5));
        assert_eq!(parse_py_int(b"1_000"), Some(1000));
        assert_eq!(parse_py_int(b"1.0"), None);
        assert_eq!(parse_py_int(b"-"), None);
        assert_eq!(parse_py_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_py_int(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_py_int(b"9223372036854775808"), None);
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
