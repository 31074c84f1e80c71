//! Why a [`TraceJoin`](super::TraceJoin) failed: each input error names its byte offset or line,
//! as the layer it comes from does.
use core::fmt;

use super::{AlignmentError, OptionError, RecordingError};
use crate::analyzer::AnalyzeError;
use crate::gzip::GzError;
use crate::json::ScanError;

/// Why the join failed.
#[derive(Clone, Debug)]
pub enum JoinError {
    /// The options were refused.
    Options(OptionError),
    /// A file's gzip layer failed (offsets in the compressed file).
    Gzip(GzError),
    /// The recording was refused (with its line).
    Recording(RecordingError),
    /// The recording's gzip stream was cut: there is no partial recording to trust.
    RecordingCut(GzError),
    /// The trace is malformed outside any event (its first read: the summary's scan).
    Trace(AnalyzeError),
    /// The trace is malformed outside any event (a later read).
    Scan(ScanError),
    /// The trace's times cannot be put on the recording's clock.
    Alignment(AlignmentError),
    /// A caller that gave only some byte ranges skipped bytes the read needs.
    BytesNotGiven {
        /// The first byte missing (decoded offset).
        at_byte: u64,
    },
    /// A seek where the join reads the whole file.
    CannotSeek {
        /// The offset asked for.
        offset: u64,
    },
    /// Bytes or an end after the result was ready.
    Ended,
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Options(e) => e.fmt(f),
            JoinError::Gzip(e) => e.fmt(f),
            JoinError::Recording(e) => e.fmt(f),
            JoinError::RecordingCut(e) => write!(f, "recording: {e}"),
            JoinError::Trace(e) => e.fmt(f),
            JoinError::Scan(e) => write!(f, "join: {e}"),
            JoinError::Alignment(e) => e.fmt(f),
            JoinError::BytesNotGiven { at_byte } => write!(
                f,
                "join: the trace's bytes from {at_byte} on were not given to the second read"
            ),
            JoinError::CannotSeek { offset } => {
                write!(f, "join: cannot seek to byte {offset} here")
            }
            JoinError::Ended => f.write_str("the join has ended"),
        }
    }
}

impl core::error::Error for JoinError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            JoinError::Options(e) => Some(e),
            JoinError::Gzip(e) | JoinError::RecordingCut(e) => Some(e),
            JoinError::Recording(e) => Some(e),
            JoinError::Trace(e) => Some(e),
            JoinError::Scan(e) => Some(e),
            JoinError::Alignment(e) => Some(e),
            JoinError::BytesNotGiven { .. } | JoinError::CannotSeek { .. } | JoinError::Ended => {
                None
            }
        }
    }
}

impl From<OptionError> for JoinError {
    fn from(e: OptionError) -> Self {
        JoinError::Options(e)
    }
}

impl From<GzError> for JoinError {
    fn from(e: GzError) -> Self {
        JoinError::Gzip(e)
    }
}

impl From<RecordingError> for JoinError {
    fn from(e: RecordingError) -> Self {
        JoinError::Recording(e)
    }
}

impl From<AlignmentError> for JoinError {
    fn from(e: AlignmentError) -> Self {
        JoinError::Alignment(e)
    }
}
