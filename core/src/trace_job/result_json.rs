//! The bytes `trace --steps --json` prints: the summary's keys (its mergeable section on one
//! line, when asked for), the join's when it ran, then the steps', from one `Serialize`.
use alloc::string::String;
use serde::Serialize;

use crate::join::JoinReport;
use crate::merge::OneLine;
use crate::steps::StepsReport;
use crate::summary::TraceSummaryResult;

#[derive(Serialize)]
struct WithSteps<'a> {
    #[serde(flatten)]
    summary: &'a TraceSummaryResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    mergeable: Option<OneLine>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    join: Option<&'a JoinReport>,
    #[serde(flatten)]
    steps: &'a StepsReport,
}

/// The JSON of `summary`, `join` and `steps` (2-space indented, without the final newline).
pub(crate) fn with_steps(
    summary: &TraceSummaryResult,
    join: Option<&JoinReport>,
    steps: &StepsReport,
) -> String {
    let doc = summary
        .mergeable_state()
        .map(|state| OneLine::of(&state))
        .transpose()
        .and_then(|mergeable| {
            serde_json::to_string_pretty(&WithSteps {
                summary,
                mergeable,
                join,
                steps,
            })
        });
    doc.unwrap_or_else(|e| alloc::format!("{{\"error\": \"{e}\"}}"))
}
