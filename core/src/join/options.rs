//! The join's options: from the command line's flags ([`join_options`]) or the page's JSON
//! ([`TraceJoinOptions`]), and why they were refused ([`OptionError`]).
use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

use serde::Deserialize;

use super::{GpuMap, GpuMapError, JoinOptions, OffsetError, parse_offset_ms};
use crate::Exactness;
use crate::window::PowerSource;

/// The join's command-line options, checked into [`JoinOptions`]: `--min-gap-ms`,
/// `--top-pauses`, `--clock-offset-ms`, `--gpu-map`.
///
/// # Errors
/// The option refused, by its name.
pub fn join_options(
    min_gap_ms: Option<f64>,
    top_pauses: usize,
    clock_offset_ms: Option<&str>,
    gpu_map: Option<&str>,
) -> Result<JoinOptions, OptionError> {
    let mut o = JoinOptions::default();
    if let Some(ms) = min_gap_ms {
        if !(ms.is_finite() && (0.0..1e12).contains(&ms)) {
            return Err(OptionError::MinGapMs(ms));
        }
        // 0 asks for every idle gap: times are whole ns, so the finder takes gaps of 1 ns or
        // more (busy stretches that touch leave no gap).
        o.gaps.min_gap_ns = round_positive(ms * 1e6) as i64;
    }
    o.pauses.max_pauses_per_device = top_pauses;
    if let Some(text) = clock_offset_ms {
        o.clock_offset_ns =
            Some(
                parse_offset_ms(text).map_err(|error| OptionError::ClockOffsetMs {
                    text: text.into(),
                    error,
                })?,
            );
    }
    if let Some(text) = gpu_map {
        o.gpu_map = GpuMap::parse(text).map_err(OptionError::GpuMap)?;
    }
    Ok(o)
}

/// The power source a `power_source` option names (`instant`, `average`; absent or `unknown`:
/// unknown), as the page passes what a recording's sidecar says.
///
/// # Errors
/// Any other name.
pub fn power_source_named(name: Option<&str>) -> Result<PowerSource, OptionError> {
    match name {
        None | Some("unknown") => Ok(PowerSource::Unknown),
        Some("instant") => Ok(PowerSource::Instant),
        Some("average") => Ok(PowerSource::Average),
        Some(s) => Err(OptionError::PowerSource(s.into())),
    }
}

/// `x.round()` for finite `x >= 0` (no libm in no_std): half away from zero, exactly.
pub(crate) fn round_positive(x: f64) -> f64 {
    let t = x as u64 as f64; // truncation; exact below 2^53, and x is integral above it
    if x - t >= 0.5 { t + 1.0 } else { t }
}

/// Options of a [`TraceJoin`](super::TraceJoin), from JSON with these field names (all optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceJoinOptions {
    /// The `source` written into the summary (the trace's name).
    pub source: String,
    /// Memory bounds of the summary.
    pub limits: Exactness,
    /// Ops listed by the summary (absent: 40).
    pub top: Option<usize>,
    /// `--min-gap-ms` (absent: 100).
    pub min_gap_ms: Option<f64>,
    /// `--top-pauses` (absent: 50).
    pub top_pauses: Option<usize>,
    /// `--clock-offset-ms`, as text (exact to 1 ns).
    pub clock_offset_ms: Option<String>,
    /// `--gpu-map`.
    pub gpu_map: Option<String>,
    /// Which NVML reading the recording's `gpu_power_W` holds (`instant`, `average`; absent:
    /// unknown): what the recording's `.meta.json` sidecar names
    /// ([`crate::sidecar::power_source`]), as native reads it.
    pub power_source: Option<String>,
    /// `--steps`: add the steps (docs/steps.md).
    pub steps: bool,
    /// `--step-name`: the steps' pattern (implies `steps`).
    pub step_name: Option<String>,
    /// A trace alone, without a recording: the join runs only when the trace carries GPU power
    /// or utilization counters, which are then its recording (the JSON is `trace FILE --pauses
    /// --json`'s); without them the result is the trace's alone (`trace FILE --json`).
    pub trace_alone: bool,
}

/// Why the join's options were refused; each names its option.
#[derive(Clone, Debug)]
pub enum OptionError {
    /// `--min-gap-ms` not a number of ms, 0 or more.
    MinGapMs(f64),
    /// `--clock-offset-ms` not an exact number of ms.
    ClockOffsetMs {
        /// The text given.
        text: String,
        /// Why it was refused.
        error: OffsetError,
    },
    /// `--gpu-map` not a list of `DEVICE=GPU_INDEX`.
    GpuMap(GpuMapError),
    /// `power_source` neither `instant` nor `average` (the value given).
    PowerSource(String),
    /// The options' JSON: an unknown field or a wrong type.
    Json(Arc<serde_json::Error>),
    /// `--step-name` not a pattern.
    StepName(crate::steps::PatternError),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::MinGapMs(ms) => write!(
                f,
                "--min-gap-ms {ms}: expected a number of ms, 0 or more (0: every idle gap)"
            ),
            OptionError::ClockOffsetMs { text, error } => {
                write!(f, "--clock-offset-ms {text}: {error}")
            }
            OptionError::GpuMap(e) => e.fmt(f),
            OptionError::PowerSource(s) => {
                write!(f, "power_source {s}: expected instant or average")
            }
            OptionError::Json(e) => e.fmt(f),
            OptionError::StepName(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for OptionError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            OptionError::ClockOffsetMs { error, .. } => Some(error),
            OptionError::GpuMap(e) => Some(e),
            OptionError::StepName(e) => Some(e),
            #[cfg(feature = "std")]
            OptionError::Json(e) => Some(&**e),
            _ => None,
        }
    }
}
