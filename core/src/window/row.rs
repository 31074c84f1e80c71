//! One trace.csv row reduced to the values the analysis uses.

use super::*;

/// What a row is, for [`ParsedRow`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParsedKind {
    /// A row_type other than SAMPLE/MARK (ignored).
    #[default]
    Other,
    /// A SAMPLE/MARK whose `t_mono_ns` is not an integer.
    Bad,
    /// SAMPLE.
    Sample,
    /// MARK (its label travels beside the row).
    Mark,
}

/// One row reduced to the values the analysis uses, owned (no borrow of the reader), so that
/// a reader thread can parse while the analysis runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParsedRow {
    /// 1-based line.
    pub line: u64,
    /// Kind.
    pub kind: ParsedKind,
    /// `t_mono_ns`.
    pub t_mono_ns: i64,
    /// `t_wall_ns` (marks only).
    pub t_wall_ns: Option<i64>,
    /// `gpu_index`.
    pub gpu_index: Option<i64>,
    /// `gpu_power_W`.
    pub power_w: Option<f64>,
    /// `gpu_util_pct`.
    pub util_pct: Option<f64>,
    /// `gpu_power_W` holds something other than a finite number or a blank (see
    /// [`power_text_is_bad`]).
    pub power_bad: bool,
    /// `gpu_sm_clock_MHz` (full analysis only).
    pub sm_clock_mhz: Option<f64>,
    /// `gpu_energy_mJ` (full analysis only).
    pub energy_mj: Option<f64>,
    /// `rapl_energy_uj` (full analysis only).
    pub rapl_uj: Option<u64>,
    /// `rapl_max_energy_range_uj` (full analysis only).
    pub rapl_max_uj: Option<u64>,
    /// `mark_thread` (marks only).
    pub mark_thread: Option<u64>,
}

impl ParsedRow {
    /// Parses a row; `full` = false parses only what the reference figures need.
    pub fn from_row(row: &Row<'_>, full: bool) -> ParsedRow {
        let mut p = ParsedRow::from_row_deferred(row, full);
        if p.kind == ParsedKind::Sample {
            p.power_w = row.f64(Col::GpuPowerW);
            p.util_pct = row.f64(Col::GpuUtilPct);
            p.power_bad = power_text_is_bad(row.raw(Col::GpuPowerW).unwrap_or(b""), p.power_w);
        }
        p
    }

    /// [`ParsedRow::from_row`] with `power_w` and `util_pct` left `None`, for a caller that
    /// parses them itself (`row.f64(Col::GpuPowerW)`, `row.f64(Col::GpuUtilPct)`), e.g. on
    /// another thread.
    pub fn from_row_deferred(row: &Row<'_>, full: bool) -> ParsedRow {
        let kind = row.kind();
        let line = row.line();
        if kind == RowKind::Other {
            return ParsedRow {
                line,
                ..ParsedRow::default()
            };
        }
        let Some(t) = row.t_mono_ns() else {
            return ParsedRow {
                line,
                kind: ParsedKind::Bad,
                ..ParsedRow::default()
            };
        };
        if kind == RowKind::Mark {
            return ParsedRow {
                line,
                kind: ParsedKind::Mark,
                t_mono_ns: t,
                t_wall_ns: row.i64(Col::TWallNs),
                mark_thread: row.i64(Col::MarkThread).and_then(|v| u64::try_from(v).ok()),
                ..ParsedRow::default()
            };
        }
        let u = |c: Col| row.i64(c).and_then(|v| u64::try_from(v).ok());
        ParsedRow {
            line,
            kind: ParsedKind::Sample,
            t_mono_ns: t,
            t_wall_ns: None,
            gpu_index: row.i64(Col::GpuIndex),
            power_w: None,
            util_pct: None,
            power_bad: false,
            sm_clock_mhz: full.then(|| row.f64(Col::GpuSmClockMhz)).flatten(),
            energy_mj: full.then(|| row.f64(Col::GpuEnergyMj)).flatten(),
            rapl_uj: full.then(|| u(Col::RaplEnergyUj)).flatten(),
            rapl_max_uj: full.then(|| u(Col::RaplMaxEnergyRangeUj)).flatten(),
            mark_thread: None,
        }
    }
}

/// Whether a `gpu_power_W` field (`raw`, parsed as `power_w`) is neither blank nor a finite
/// number: `nan`, `inf` or text. These are counted in a warning.
pub fn power_text_is_bad(raw: &[u8], power_w: Option<f64>) -> bool {
    !raw.trim_ascii().is_empty() && power_w.is_none_or(|p| !p.is_finite())
}

/// Whether a SAMPLE row carries a GPU reading: power (a number or not), utilization, SM clock
/// or energy counter (as parsed; the reference-only figures parse power and utilization alone).
#[inline]
pub(crate) fn has_gpu_reading(p: &ParsedRow) -> bool {
    p.power_w.is_some()
        || p.power_bad
        || p.util_pct.is_some()
        || p.sm_clock_mhz.is_some()
        || p.energy_mj.is_some()
}
