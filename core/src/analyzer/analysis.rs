//! A finished analysis: a trace summary or a trace.csv analysis.
use alloc::boxed::Box;
use alloc::string::String;

use crate::steps::StepsReport;
use crate::summary::TraceSummaryResult;
use crate::window::{RecordingAnalysis, SelectionError};

/// A finished analysis.
#[derive(Clone, Debug)]
pub enum Analysis {
    /// A trace summary (docs/cli.md, "trace").
    Trace(Box<TraceSummaryResult>),
    /// A trace.csv analysis (docs/cli.md, "analyze"): recording-level, or with the selected window.
    Recording(Box<RecordingAnalysis>),
    /// A trace summary with the steps (`"steps": true`; docs/steps.md).
    TraceSteps(Box<(TraceSummaryResult, StepsReport)>),
}

impl Analysis {
    /// What is wrong with a trace.csv's selected window (its marks missing or out of order),
    /// if anything. The analysis itself is complete either way.
    pub fn selection_error(&self) -> Option<SelectionError> {
        match self {
            Analysis::Recording(r) => r.selection.as_ref().and_then(|s| s.error()),
            Analysis::Trace(_) | Analysis::TraceSteps(_) => None,
        }
    }

    /// The JSON rendering (2-space indented, the same bytes on every platform).
    pub fn to_json(&self) -> String {
        match self {
            Analysis::Trace(r) => r.to_json(),
            Analysis::Recording(r) => r.to_json(),
            Analysis::TraceSteps(r) => crate::trace_job::result_json::with_steps(&r.0, None, &r.1),
        }
    }
}
