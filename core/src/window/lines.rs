//! The text of `flinch-trace analyze` that more than one front end prints byte for byte (the
//! CLI and the firmware in `embedded/`): the reference's three lines, the verdict and the row
//! warnings. Written through `core::fmt`, so no allocation.
use core::fmt::{self, Write};

use super::{RefFigures, RowCounts};

/// Formats as Python's `f"{x:.{prec}f}"` (nan, inf, -inf spelled as Python does).
#[derive(Clone, Copy, Debug)]
pub struct PyFixed(pub f64, pub usize);

impl fmt::Display for PyFixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PyFixed(x, prec) = *self;
        if x.is_nan() {
            f.write_str("nan")
        } else if x.is_infinite() {
            f.write_str(if x > 0.0 { "inf" } else { "-inf" })
        } else {
            write!(f, "{x:.prec$}")
        }
    }
}

/// A verdict as the CLI prints it: `compute`, `mixed (indicative)`, `none`.
#[derive(Clone, Copy, Debug)]
pub struct VerdictText(pub Option<&'static str>, pub bool);

impl fmt::Display for VerdictText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            VerdictText(None, _) => f.write_str("none"),
            VerdictText(Some(v), true) => f.write_str(v),
            VerdictText(Some(v), false) => write!(f, "{v} (indicative)"),
        }
    }
}

/// The reference's (`analyze_trace.py`) three lines for a window, byte for byte: the duration,
/// the trapezoid energy (or "(n/a)" under two samples) and, when it parsed, the mean utilization.
pub fn write_reference_lines(out: &mut impl Write, duration_s: f64, r: &RefFigures) -> fmt::Result {
    writeln!(out, "duration_s={duration_s:.6}")?;
    match r.energy_j {
        None => out.write_str("gpu_energy_J≈(n/a)  # not enough gpu_power_W samples in window\n"),
        Some(e) => {
            writeln!(
                out,
                "gpu_energy_J≈{}  # trapezoid over {} samples",
                PyFixed(e, 3),
                r.samples
            )?;
            match r.avg_util_pct {
                Some(u) => writeln!(out, "avg_gpu_util_pct≈{}", PyFixed(u, 2)),
                None => Ok(()),
            }
        }
    }
}

/// What the input's warnings need beyond the row counts: a header without the needed columns,
/// an unclosed quote, non-finite power readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputNotes {
    /// Line of a header that names no `t_mono_ns` and `row_type` columns.
    pub no_header_line: Option<u64>,
    /// Line where a quoted field opens and never closes.
    pub open_quote_line: Option<u64>,
    /// `gpu_power_W` values that are not finite numbers.
    pub bad_power: u64,
    /// Line of the first of them.
    pub first_bad_power_line: Option<u64>,
}

impl RowCounts {
    /// Calls `warn` with the text of each warning about the input that a window analysis without
    /// spans gives, in the order `WindowAnalyzer` gives them, for a reorder buffer of
    /// `reorder_horizon_ns` (the fixed-memory analyzer's front ends print them so).
    pub fn for_each_warning(
        &self,
        notes: &InputNotes,
        reorder_horizon_ns: i64,
        mut warn: impl FnMut(fmt::Arguments<'_>) -> fmt::Result,
    ) -> fmt::Result {
        if let Some(line) = notes.no_header_line {
            warn(format_args!(
                "no trace.csv header: line {line} names no t_mono_ns and row_type columns (or is over {} bytes or {} fields), so no row can be read; a trace.csv starts with its header line",
                crate::csv::RECORD_BYTES,
                crate::csv::MAX_FIELDS
            ))?;
        }
        if let Some(line) = notes.open_quote_line {
            warn(format_args!(
                "unbalanced quote: a quoted field opens at line {line} and never closes, so the rest of the file was read as one field and skipped"
            ))?;
        }
        if notes.bad_power > 0 {
            warn(format_args!(
                "{} gpu_power_W values are not finite numbers (nan, inf or text): left out of the edge energy, idle floor and verdict (the reference figures take nan and inf as Python does); first at line {}",
                notes.bad_power,
                notes.first_bad_power_line.unwrap_or(0)
            ))?;
        }
        if self.bad_rows > 0 {
            warn(format_args!(
                "{} bad rows skipped (unparseable t_mono_ns or over-long); first at line {}",
                self.bad_rows,
                self.first_bad_line.unwrap_or(0)
            ))?;
        }
        if self.late_rows > 0 {
            warn(format_args!(
                "{} rows arrived more than {} ms after a later-timestamped row (e.g. an appended recording whose clock went back) and were skipped; first at line {}",
                self.late_rows,
                reorder_horizon_ns / 1_000_000,
                self.first_late_line.unwrap_or(0)
            ))?;
        }
        if self.samples_dropped > 0 {
            warn(format_args!(
                "samples of GPUs beyond max_gpus skipped: {}",
                self.samples_dropped
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    fn text(f: impl FnOnce(&mut String) -> fmt::Result) -> String {
        let mut s = String::new();
        f(&mut s).unwrap();
        s
    }

    #[test]
    fn python_fixed_and_verdicts() {
        let p = |x, n| text(|s| write!(s, "{}", PyFixed(x, n)));
        assert_eq!(p(0.125, 2), "0.12");
        assert_eq!(p(2.5, 0), "2");
        assert_eq!(p(f64::NAN, 3), "nan");
        assert_eq!(p(f64::NEG_INFINITY, 3), "-inf");
        assert_eq!(p(-0.0, 3), "-0.000");
        let v = |v, c| text(|s| write!(s, "{}", VerdictText(v, c)));
        assert_eq!(v(Some("compute"), true), "compute");
        assert_eq!(v(Some("mixed"), false), "mixed (indicative)");
        assert_eq!(v(None, false), "none");
    }

    #[test]
    fn reference_lines() {
        let r = RefFigures {
            energy_j: Some(217.8214),
            samples: 69,
            avg_util_pct: Some(93.555),
        };
        assert_eq!(
            text(|s| write_reference_lines(s, 0.7, &r)),
            "duration_s=0.700000\ngpu_energy_J≈217.821  # trapezoid over 69 samples\navg_gpu_util_pct≈93.56\n"
        );
        let r = RefFigures {
            avg_util_pct: None,
            ..r
        };
        assert!(!text(|s| write_reference_lines(s, 0.7, &r)).contains("avg_gpu"));
        let r = RefFigures {
            energy_j: None,
            samples: 1,
            avg_util_pct: None,
        };
        assert_eq!(
            text(|s| write_reference_lines(s, 0.005, &r)),
            "duration_s=0.005000\ngpu_energy_J≈(n/a)  # not enough gpu_power_W samples in window\n"
        );
    }
}
