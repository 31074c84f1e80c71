//! Why options were refused or an analysis failed.
use alloc::sync::Arc;
use core::fmt;

use crate::gzip::GzError;
use crate::json::ScanError;
use crate::window::AnalyzeJobError;

/// Why [`AnalyzerOptions`](super::AnalyzerOptions) were refused.
#[derive(Clone, Debug)]
pub enum OptionsError {
    /// The JSON does not describe options: an unknown field or value, or a wrong type.
    Json(Arc<serde_json::Error>),
    /// Only one of `start` / `end` was given.
    UnpairedMark,
    /// `step_name` is not a step pattern.
    StepName(crate::steps::PatternError),
}

impl PartialEq for OptionsError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OptionsError::Json(a), OptionsError::Json(b)) => {
                (a.line(), a.column(), a.classify()) == (b.line(), b.column(), b.classify())
            }
            (OptionsError::UnpairedMark, OptionsError::UnpairedMark) => true,
            (OptionsError::StepName(a), OptionsError::StepName(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::Json(e) => e.fmt(f),
            OptionsError::UnpairedMark => f.write_str("start and end mark labels go together"),
            OptionsError::StepName(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for OptionsError {
    #[cfg(feature = "std")]
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            OptionsError::Json(e) => Some(&**e),
            OptionsError::UnpairedMark => None,
            OptionsError::StepName(e) => Some(e),
        }
    }
}

/// Why an analysis failed. Every input error carries the byte offset where it was found.
///
/// A trace.csv whose selected marks are missing is not an error here: the analysis is made,
/// and [`Analysis::selection_error`](super::Analysis::selection_error) says what is wrong with the selection.
#[derive(Clone, Debug, PartialEq)]
pub enum AnalyzeError {
    /// The options could not be used.
    Options(OptionsError),
    /// The input held no data at all.
    Empty,
    /// Only whitespace in the first bytes: nothing to detect the kind from.
    NoContent {
        /// Bytes of (decoded) whitespace read.
        at_byte: u64,
    },
    /// The gzip layer failed (offsets are in the compressed file).
    Gzip(GzError),
    /// The trace JSON is malformed outside any event (offsets in the decoded bytes).
    Scan {
        /// The scanner's error.
        error: ScanError,
        /// Whether the input was gzip, so the offset counts decompressed bytes.
        decompressed: bool,
    },
    /// The gzip input was cut, and the input is not a trace (a trace is summarized from what
    /// was read instead).
    CutInput(GzError),
    /// The trace.csv's analyze job refused a call (a driver's mistake, not the input's).
    Job(AnalyzeJobError),
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeError::Options(e) => write!(f, "bad analyzer options: {e}"),
            AnalyzeError::Empty => f.write_str("empty input: no bytes to analyze"),
            AnalyzeError::NoContent { at_byte } => {
                write!(
                    f,
                    "only whitespace up to byte {at_byte}: not a trace or trace.csv"
                )
            }
            AnalyzeError::Gzip(e) => e.fmt(f),
            AnalyzeError::CutInput(e) => e.fmt(f),
            AnalyzeError::Job(e) => e.fmt(f),
            AnalyzeError::Scan {
                error,
                decompressed,
            } => {
                error.fmt(f)?;
                if *decompressed {
                    f.write_str(" of the decompressed data")?;
                }
                Ok(())
            }
        }
    }
}

impl core::error::Error for AnalyzeError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            AnalyzeError::Options(e) => Some(e),
            AnalyzeError::Gzip(e) | AnalyzeError::CutInput(e) => Some(e),
            AnalyzeError::Scan { error, .. } => Some(error),
            AnalyzeError::Job(e) => Some(e),
            AnalyzeError::Empty | AnalyzeError::NoContent { .. } => None,
        }
    }
}

impl From<GzError> for AnalyzeError {
    fn from(e: GzError) -> Self {
        AnalyzeError::Gzip(e)
    }
}

impl From<AnalyzeJobError> for AnalyzeError {
    fn from(e: AnalyzeJobError) -> Self {
        match e {
            AnalyzeJobError::Gzip(e) => AnalyzeError::Gzip(e),
            e => AnalyzeError::Job(e),
        }
    }
}
