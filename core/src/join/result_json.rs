//! The bytes `trace --json` prints with a join option: the summary's keys (its mergeable
//! section, when asked for, on one line), then the join's ([`JoinReport`]'s fields, in order),
//! from one `Serialize`.
use alloc::string::String;
use serde::Serialize;

use super::JoinReport;
use crate::merge::OneLine;
use crate::summary::TraceSummaryResult;

/// The summary with the join's keys after its own.
#[derive(Serialize)]
struct SummaryWithJoin<'a> {
    #[serde(flatten)]
    summary: &'a TraceSummaryResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    mergeable: Option<OneLine>,
    #[serde(flatten)]
    join: &'a JoinReport,
}

/// The JSON of `summary` joined with `report`: what `trace --json` prints with a join option
/// (2-space indented, without the final newline).
pub fn summary_with_join_json(summary: &TraceSummaryResult, report: &JoinReport) -> String {
    let doc = summary
        .mergeable_state()
        .map(|state| OneLine::of(&state))
        .transpose()
        .and_then(|mergeable| {
            serde_json::to_string_pretty(&SummaryWithJoin {
                summary,
                mergeable,
                join: report,
            })
        });
    doc.unwrap_or_else(|e| alloc::format!("{{\"error\": \"{e}\"}}"))
}
