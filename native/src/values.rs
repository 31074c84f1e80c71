//! Value parsers of the numeric options, one per kind of value, so that every option says what
//! it expects in the same words. clap puts the option's name before the text
//! (`invalid value '-3' for '--top <N>': expected a whole number, 0 or more`) and exits with
//! status 2. Each option that takes a number allows a value with a leading `-`
//! (`allow_hyphen_values`: `-3`, `-inf`, and a forgotten value's next flag too), so that it reaches
//! the parser, which names the option, instead of being read as an unknown flag.

/// A whole number of at least 0 that `usize` holds (a count: `--top`, `--top-pauses`).
pub fn count(s: &str) -> Result<usize, String> {
    whole(
        s,
        0,
        usize::MAX as u128,
        "expected a whole number, 0 or more",
    )
}

/// A whole number of at least 1 (`--occurrence`).
pub fn occurrence(s: &str) -> Result<u32, String> {
    whole(s, 1, u32::MAX.into(), "expected a whole number, 1 or more")
}

/// A `gpu_index` as a file records it (`analyze --gpu`): any whole number.
pub fn gpu_index(s: &str) -> Result<i64, String> {
    s.trim()
        .parse()
        .map_err(|_| "expected a whole number (a gpu_index)".to_string())
}

/// An NVML GPU index (`record --gpu`): a whole number, 0 or more.
pub fn nvml_index(s: &str) -> Result<u32, String> {
    whole(s, 0, u32::MAX.into(), "expected a GPU index, 0 or more")
}

/// A whole number of ms, 0 or more (`analyze --max-gap-ms`).
pub fn millis(s: &str) -> Result<u64, String> {
    whole(
        s,
        0,
        u64::MAX.into(),
        "expected a whole number of ms, 0 or more",
    )
}

/// The longest host period, ms (a day): past it the ns arithmetic would overflow.
const MAX_HOST_INTERVAL_MS: u64 = 86_400_000;

/// A host period, ms: 1 to a day (`record --host-interval-ms`, `--host-jsonl-interval-ms`).
pub fn host_interval_ms(s: &str) -> Result<u64, String> {
    whole(
        s,
        1,
        MAX_HOST_INTERVAL_MS.into(),
        "expected a whole number of ms from 1 to 86400000 (a day)",
    )
}

/// `record --metrics-windows`: 1 to 4096.
pub fn metrics_windows(s: &str) -> Result<usize, String> {
    whole(s, 1, 4096, "expected a whole number from 1 to 4096")
}

/// A TCP port, 0 to 65535 (`web --port`).
pub fn port(s: &str) -> Result<u16, String> {
    whole(
        s,
        0,
        u16::MAX.into(),
        "expected a port number from 0 to 65535 (0 picks a free one)",
    )
}

/// ns, 1 or more (the virtual clock's step, a testing seam).
pub fn step_ns(s: &str) -> Result<u64, String> {
    whole(
        s,
        1,
        u64::MAX.into(),
        "expected a whole number of ns, 1 or more",
    )
}

/// `trace --min-gap-ms`: a number of ms, 0 (every idle gap) or more, below 1e12.
pub fn min_gap_ms(s: &str) -> Result<f64, String> {
    number(s)
        .filter(|ms| (0.0..1e12).contains(ms))
        .ok_or_else(|| "expected a number of ms, 0 or more (0: every idle gap)".to_string())
}

/// The longest sampling period, ms (an hour).
const MAX_INTERVAL_MS: f64 = 3_600_000.0;

/// `record --interval-ms`: 0.05 to 3600000 ms (fractions allowed).
pub fn interval_ms(s: &str) -> Result<f64, String> {
    number(s)
        .filter(|ms| (0.05..=MAX_INTERVAL_MS).contains(ms))
        .ok_or_else(|| "expected a number of ms from 0.05 to 3600000 (an hour)".to_string())
}

/// The longest finite recording, s (about 31 years): past it the ns arithmetic would overflow.
const MAX_SECONDS: f64 = 1e9;

/// `record --seconds`: a positive number up to 1e9, or `inf`.
pub fn seconds(s: &str) -> Result<f64, String> {
    let bad = || "expected a positive number of seconds up to 1e9, or inf".to_string();
    if matches!(s.trim(), "inf" | "infinity" | "+inf") {
        return Ok(f64::INFINITY);
    }
    number(s)
        .filter(|x| *x > 0.0 && *x <= MAX_SECONDS)
        .ok_or_else(bad)
}

/// A finite number (no `nan`, no `inf`).
fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A whole number in `lo..=hi`, written in decimal digits.
fn whole<T: TryFrom<u128>>(s: &str, lo: u128, hi: u128, expected: &str) -> Result<T, String> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let v = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u128>().ok()
    } else {
        None
    };
    v.filter(|v| (lo..=hi).contains(v))
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| expected.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_takes_its_range_and_refuses_the_rest() {
        assert_eq!(count("0"), Ok(0));
        assert_eq!(count("+7"), Ok(7));
        for bad in [
            "-3",
            "nan",
            "1.5",
            "",
            "1e3",
            "99999999999999999999999999999999999999999",
        ] {
            assert!(count(bad).is_err(), "{bad}");
        }
        assert!(occurrence("0").is_err());
        assert_eq!(occurrence("2"), Ok(2));
        assert_eq!(gpu_index("-1"), Ok(-1));
        assert!(millis("-5").is_err());
        assert_eq!(millis("0"), Ok(0));
        assert!(host_interval_ms("0").is_err());
        assert!(host_interval_ms("86400001").is_err());
        assert!(metrics_windows("4097").is_err());
        assert!(port("65536").is_err());
        assert!(step_ns("0").is_err());
        assert_eq!(min_gap_ms("0"), Ok(0.0));
        assert_eq!(min_gap_ms("0.5"), Ok(0.5));
        for bad in ["-1", "nan", "inf", "1e12", "-0.1"] {
            assert!(min_gap_ms(bad).is_err(), "{bad}");
        }
        assert!(interval_ms("0.04").is_err());
        assert!(interval_ms("nan").is_err());
        assert_eq!(interval_ms("0.05"), Ok(0.05));
        assert_eq!(seconds("inf"), Ok(f64::INFINITY));
        for bad in ["0", "-1", "nan", "-inf", "1e300"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
