//! One clock for a trace and a recording.
//!
//! Kineto writes `baseTimeNanoseconds` (CLOCK_REALTIME, ns): an event's Unix time in ns is
//! `baseTimeNanoseconds + ts·1000`, with `ts` parsed straight to integer ns by the scanner, so the
//! sum is exact. A recording's `t_wall_ns` is the same clock. [`Alignment`] holds the offset that
//! turns the trace's `ts` (ns) into Unix ns, and says where it came from.
//!
//! `--clock-offset-ms X` ([`parse_offset_ms`]) sets the offset by hand: without a base it is
//! the whole offset (`unix_ns = ts_ns + X ms`), with one it corrects a known skew
//! (`unix_ns = base + ts_ns + X ms`). Either way the source is `"clock_offset"`.
//!
//! Times on these clocks are integer ns; an f64 holds epoch-scale µs only to about 0.25 µs, so
//! the results carry them as [`NsDecimal`] and print them exactly (docs/numerics.md).
use core::fmt;

use serde::Serialize;

/// Integer ns shown in a coarser unit, `DIGITS` decimals of it exact: [`TsUs`] (µs, 3) and
/// [`NsMs`] (ms, 6). It serializes as a JSON number written from the integer, with trailing
/// zeros of the fraction trimmed but one digit kept (`1712195495505582.988`, `1700000.5`,
/// `12.0`), so a value an f64 holds exactly prints as serde_json prints that f64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NsDecimal<const DIGITS: u32>(pub i64);

/// A time on the trace's clock, µs, exact to the ns.
pub type TsUs = NsDecimal<3>;
/// A time or an offset in ms, exact to the ns.
pub type NsMs = NsDecimal<6>;

impl<const DIGITS: u32> NsDecimal<DIGITS> {
    /// The value in ns.
    pub fn ns(self) -> i64 {
        self.0
    }

    /// The value in its unit as the nearest f64 (for plotting and arithmetic, not for output).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 10u64.pow(DIGITS) as f64
    }

    /// Written with exactly `DIGITS` decimals (`1.500`), as the text tables and the merged
    /// Perfetto file print it.
    pub fn fixed(self) -> FixedDecimal<DIGITS> {
        FixedDecimal(self.0)
    }
}

/// `ns` in a unit of 10^`digits` ns: the sign, the whole part, and `digits` decimals, trailing
/// zeros trimmed down to `keep` digits.
fn write_scaled(out: &mut dyn fmt::Write, ns: i64, digits: u32, keep: u32) -> fmt::Result {
    let scale = 10u64.pow(digits);
    let a = ns.unsigned_abs();
    let (whole, mut frac, mut n) = (a / scale, a % scale, digits);
    while n > keep && frac % 10 == 0 {
        frac /= 10;
        n -= 1;
    }
    let sign = if ns < 0 { "-" } else { "" };
    if n == 0 {
        write!(out, "{sign}{whole}")
    } else {
        write!(out, "{sign}{whole}.{frac:0w$}", w = n as usize)
    }
}

impl<const DIGITS: u32> fmt::Display for NsDecimal<DIGITS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_scaled(f, self.0, DIGITS, 1)
    }
}

/// [`NsDecimal`] with all its decimals (see [`NsDecimal::fixed`]); honours a width.
pub struct FixedDecimal<const DIGITS: u32>(i64);

impl<const DIGITS: u32> fmt::Display for FixedDecimal<DIGITS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = heapless::String::<32>::new();
        write_scaled(&mut buf, self.0, DIGITS, DIGITS)?;
        f.pad(&buf)
    }
}

impl<const DIGITS: u32> Serialize for NsDecimal<DIGITS> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // At most 20 characters: a sign, 19 digits and the point.
        let mut buf = heapless::String::<32>::new();
        write_scaled(&mut buf, self.0, DIGITS, 1).map_err(serde::ser::Error::custom)?;
        // The number's own text, through serde_json's raw value: a float would round it.
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(&buf).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// Where the offset from trace `ts` to Unix time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignmentSource {
    /// The trace's own `baseTimeNanoseconds`.
    #[serde(rename = "baseTimeNanoseconds")]
    BaseTimeNanoseconds,
    /// `--clock-offset-ms` (added to `baseTimeNanoseconds` when the trace has one).
    ClockOffset,
}

/// The offset that maps the trace's clock onto Unix time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Alignment {
    /// Where it came from.
    pub source: AlignmentSource,
    /// Unix ns of trace `ts` 0: `unix_ns = ts_ns + offset_ns`.
    pub offset_ns: i64,
    /// The trace's `baseTimeNanoseconds`, when it has one.
    pub base_time_ns: Option<i64>,
    /// The hand-set offset, ns, when given.
    pub clock_offset_ns: Option<i64>,
}

impl Alignment {
    /// The alignment from the trace's base (if any) and a hand-set offset (if any); `None` when
    /// there is neither, or when their sum leaves the `i64` range.
    pub fn new(base_time_ns: Option<i64>, clock_offset_ns: Option<i64>) -> Option<Alignment> {
        let (source, offset_ns) = match (base_time_ns, clock_offset_ns) {
            (None, None) => return None,
            (Some(b), None) => (AlignmentSource::BaseTimeNanoseconds, b),
            (None, Some(o)) => (AlignmentSource::ClockOffset, o),
            (Some(b), Some(o)) => (AlignmentSource::ClockOffset, b.checked_add(o)?),
        };
        Some(Alignment {
            source,
            offset_ns,
            base_time_ns,
            clock_offset_ns,
        })
    }

    /// Unix ns of a trace time (ns), `None` past the `i64` range.
    pub fn unix_ns(&self, ts_ns: i64) -> Option<i64> {
        ts_ns.checked_add(self.offset_ns)
    }
}

/// Why there is no [`Alignment`] for a trace whose base is `base_time_ns` (with `problem`: what
/// its `baseTimeNanoseconds` held when that was not an integer) and whose hand-set offset is
/// `clock_offset_ns`: the base and the offset overflow together, or there is no usable base.
pub fn alignment_error(
    base_time_ns: Option<i64>,
    problem: Option<&crate::json::BaseTimeProblem>,
    clock_offset_ns: Option<i64>,
) -> AlignmentError {
    match (base_time_ns, clock_offset_ns, problem) {
        (Some(base_ns), Some(offset_ns), _) => AlignmentError::Overflow { base_ns, offset_ns },
        (None, _, Some(p)) => AlignmentError::BadBase(*p),
        _ => AlignmentError::NoBase,
    }
}

/// Why a trace's `ts` cannot be put on the recording's clock (see [`alignment_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignmentError {
    /// `baseTimeNanoseconds` plus `--clock-offset-ms` overflows the `i64` range of ns.
    Overflow {
        /// The trace's `baseTimeNanoseconds`.
        base_ns: i64,
        /// `--clock-offset-ms`, ns.
        offset_ns: i64,
    },
    /// `baseTimeNanoseconds` is not an integer, and no `--clock-offset-ms` was given.
    BadBase(crate::json::BaseTimeProblem),
    /// No `baseTimeNanoseconds`, and no `--clock-offset-ms`.
    NoBase,
}

impl fmt::Display for AlignmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlignmentError::Overflow { base_ns, offset_ns } => write!(
                f,
                "baseTimeNanoseconds {base_ns} plus --clock-offset-ms {} overflows the i64 range of ns",
                NsMs::from(NsDecimal::<6>(*offset_ns))
            ),
            AlignmentError::BadBase(p) => write!(
                f,
                "{p}: give --clock-offset-ms (Unix ms of trace ts 0) to join it with the recording"
            ),
            AlignmentError::NoBase => f.write_str(
                "the trace has no baseTimeNanoseconds: give --clock-offset-ms (Unix ms of trace ts 0) to join it with the recording",
            ),
        }
    }
}

impl core::error::Error for AlignmentError {}

/// Why a `--clock-offset-ms` text was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetError {
    /// Not a decimal number.
    NotANumber,
    /// More than six decimals.
    TooManyDecimals,
    /// Outside ±2^63 ns.
    OutOfRange,
}

impl fmt::Display for OffsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OffsetError::NotANumber => "expected a number of milliseconds",
            OffsetError::TooManyDecimals => "at most six decimals (1 ns)",
            OffsetError::OutOfRange => "offset out of range",
        })
    }
}

impl core::error::Error for OffsetError {}

/// Parses a decimal number of milliseconds (`-12.5`, `3`, `0.000001`) to exact ns. More than six
/// decimals, or a value outside ±2^63 ns, is an error.
pub fn parse_offset_ms(text: &str) -> Result<i64, OffsetError> {
    let t = text.trim();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, f),
        None => (digits, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(OffsetError::NotANumber);
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(OffsetError::NotANumber);
    }
    if frac.len() > 6 {
        return Err(OffsetError::TooManyDecimals);
    }
    const RANGE: OffsetError = OffsetError::OutOfRange;
    let mut ns: i128 = 0;
    for b in int.bytes() {
        ns = ns * 10 + i128::from(b - b'0');
        if ns > i128::from(i64::MAX) {
            return Err(RANGE);
        }
    }
    ns *= 1_000_000;
    let mut scale = 100_000i128;
    for b in frac.bytes() {
        ns += i128::from(b - b'0') * scale;
        scale /= 10;
    }
    let ns = if neg { -ns } else { ns };
    i64::try_from(ns).map_err(|_| RANGE)
}

/// Which recorded GPU (`gpu_index`) a trace device (Kineto's GPU `pid`, the CUDA ordinal) is.
/// One to one unless pairs were given (`0=2,1=3`); a device without a pair keeps its number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuMap {
    pairs: alloc::vec::Vec<(i64, i64)>,
}

impl GpuMap {
    /// Parses `D=G[,D=G…]`.
    ///
    /// # Errors
    /// An entry that is not `DEVICE=GPU_INDEX`, or a device named twice.
    pub fn parse(text: &str) -> Result<GpuMap, GpuMapError> {
        let mut pairs = alloc::vec::Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || GpuMapError::BadEntry(part.into());
            let (d, g) = part.split_once('=').ok_or_else(bad)?;
            let d: i64 = d.trim().parse().map_err(|_| bad())?;
            let g: i64 = g.trim().parse().map_err(|_| bad())?;
            if pairs.iter().any(|&(pd, _)| pd == d) {
                return Err(GpuMapError::DeviceTwice(d));
            }
            pairs.push((d, g));
        }
        Ok(GpuMap { pairs })
    }

    /// The trace device recorded as `gpu_index` (the inverse; `gpu_index` itself when no pair
    /// names it).
    pub fn device(&self, gpu_index: i64) -> i64 {
        self.pairs
            .iter()
            .find(|&&(_, g)| g == gpu_index)
            .map_or(gpu_index, |&(d, _)| d)
    }

    /// The recorded `gpu_index` of trace device `device`.
    pub fn gpu_index(&self, device: i64) -> i64 {
        self.pairs
            .iter()
            .find(|&&(d, _)| d == device)
            .map_or(device, |&(_, g)| g)
    }
}

/// Why a `--gpu-map` text was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuMapError {
    /// An entry that is not `DEVICE=GPU_INDEX` (the entry).
    BadEntry(alloc::string::String),
    /// A trace device named twice.
    DeviceTwice(i64),
}

impl fmt::Display for GpuMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuMapError::BadEntry(part) => {
                write!(f, "bad --gpu-map entry {part:?}: expected DEVICE=GPU_INDEX")
            }
            GpuMapError::DeviceTwice(d) => write!(f, "--gpu-map names device {d} twice"),
        }
    }
}

impl core::error::Error for GpuMapError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_decimals() {
        let show = |ns: i64| std::format!("{}", NsDecimal::<3>(ns));
        assert_eq!(show(1_712_195_495_505_582_988), "1712195495505582.988");
        assert_eq!(show(1_700_000_500), "1700000.5");
        assert_eq!(show(12_000), "12.0");
        assert_eq!(show(0), "0.0");
        assert_eq!(show(-500), "-0.5");
        assert_eq!(show(1), "0.001");
        assert_eq!(show(i64::MIN), "-9223372036854775.808");
        assert_eq!(
            std::format!("{:>10}", NsDecimal::<3>(-1500).fixed()),
            "    -1.500"
        );
        assert_eq!(
            std::format!("{}", NsDecimal::<6>(1_700_000_000_000_123_456)),
            "1700000000000.123456"
        );
        // JSON: the exact text, where an f64 would print 1712195495505583.0.
        let json = serde_json::to_string(&[NsDecimal::<3>(1_712_195_495_505_582_988)]).unwrap();
        assert_eq!(json, "[1712195495505582.988]");
        assert_eq!(
            serde_json::to_string_pretty(&[NsDecimal::<3>(1_712_195_495_505_582_988)]).unwrap(),
            "[\n  1712195495505582.988\n]"
        );
    }

    /// Wherever an f64 of the same value is exact, the text is serde_json's for that f64.
    #[test]
    fn exact_values_print_as_their_f64() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Up to 2^43 ns (2.4 h) every ns/1000 is the nearest f64's shortest text.
            let ns = (x >> 21) as i64 * if i % 2 == 0 { 1 } else { -1 };
            let ours = serde_json::to_string(&NsDecimal::<3>(ns)).unwrap();
            let f = serde_json::to_string(&(ns as f64 / 1e3)).unwrap();
            assert_eq!(ours, f, "{ns}");
        }
    }

    #[test]
    fn offsets_parse_exactly() {
        assert_eq!(parse_offset_ms("0"), Ok(0));
        assert_eq!(parse_offset_ms("1"), Ok(1_000_000));
        assert_eq!(parse_offset_ms("-12.5"), Ok(-12_500_000));
        assert_eq!(parse_offset_ms("+0.000001"), Ok(1));
        assert_eq!(parse_offset_ms(".5"), Ok(500_000));
        assert_eq!(
            parse_offset_ms("1700000000000.123456"),
            Ok(1_700_000_000_000_123_456)
        );
        assert!(parse_offset_ms("0.0000001").is_err());
        assert!(parse_offset_ms("1e3").is_err());
        assert!(parse_offset_ms("").is_err());
        assert!(parse_offset_ms("-").is_err());
        assert!(parse_offset_ms("99999999999999").is_err());
    }

    #[test]
    fn alignment_sources() {
        assert_eq!(Alignment::new(None, None), None);
        let a = Alignment::new(Some(10), None).unwrap();
        assert_eq!(a.source, AlignmentSource::BaseTimeNanoseconds);
        assert_eq!(a.unix_ns(5), Some(15));
        let a = Alignment::new(Some(10), Some(-3)).unwrap();
        assert_eq!(a.source, AlignmentSource::ClockOffset);
        assert_eq!(a.offset_ns, 7);
        let a = Alignment::new(None, Some(-3)).unwrap();
        assert_eq!(a.offset_ns, -3);
        assert_eq!(Alignment::new(Some(i64::MAX), Some(1)), None);
        assert_eq!(a.unix_ns(i64::MIN), None);
    }

    #[test]
    fn gpu_map() {
        let m = GpuMap::parse("0=2, 1=3").unwrap();
        assert_eq!((m.gpu_index(0), m.gpu_index(1), m.gpu_index(5)), (2, 3, 5));
        assert_eq!((m.device(2), m.device(3), m.device(5)), (0, 1, 5));
        assert_eq!(GpuMap::parse("").unwrap().gpu_index(4), 4);
        assert!(GpuMap::parse("0=2,0=3").is_err());
        assert!(GpuMap::parse("0:2").is_err());
        assert!(GpuMap::parse("a=1").is_err());
    }
}
