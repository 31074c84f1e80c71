//! The `traces` list's entries: which trace files the reference lists, whether their diagnostic
//! run completed, and each entry's shape (summary, not analyzed, or error).
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde_json::Value;

use super::FileRead;
use super::path::PyPath;
use super::warnings::Warnings;
use crate::summary::{Approximations, Categories, OpRow, TraceSummaryResult};

const NOT_ANALYZED_REASON: &str = "Diagnostic has no completed report; trace may be incomplete.";

/// Ops listed per trace, as the reference (`[:40]`).
pub const TOP_OPS: usize = 40;

/// Whether a file found under `*trace*/traces/` is listed: its name ends in `.json` or
/// `.json.gz`.
pub fn is_trace_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// Whether a top-level folder of the runs folder holds traces (its name contains `trace`).
pub fn is_trace_folder(name: &str) -> bool {
    name.contains("trace")
}

/// The `report.json` of the diagnostic run holding `trace` (its first component under `runs`).
pub fn report_path(runs: &PyPath, trace: &PyPath) -> PyPath {
    let top = &trace.parts()[runs.parts().len()];
    runs.join(top).join("report.json")
}

/// Whether a trace's diagnostic run completed: its `report.json` (see [`report_path`]) is an
/// object whose `status` is `"completed"`. A missing report is not completed; an unreadable
/// or malformed one is not either, and is described in `w` (`shown`: the report's path).
pub fn completed(report: FileRead<'_>, shown: &str, w: &mut Warnings) -> bool {
    let parsed = match report {
        FileRead::Missing => return false,
        FileRead::Unreadable(e) => Err(e.to_owned()),
        FileRead::Bytes(b) => serde_json::from_slice::<Value>(b).map_err(|e| alloc::format!("{e}")),
    };
    match parsed {
        Ok(Value::Object(m)) => m.get("status").and_then(Value::as_str) == Some("completed"),
        Ok(_) => {
            w.note(alloc::format!("{shown}: not a JSON object"));
            false
        }
        Err(e) => {
            w.note(alloc::format!("{shown}: unreadable or malformed ({e})"));
            false
        }
    }
}

impl TraceEntry {
    /// The entry of a trace whose diagnostic run did not complete; `w` says why its report
    /// could not be read, when it could not.
    pub fn not_analyzed(source: String, w: &Warnings) -> TraceEntry {
        TraceEntry::NotAnalyzed {
            source,
            status: "not_analyzed",
            reason: NOT_ANALYZED_REASON,
            warnings: w.render(""),
        }
    }

    /// The entry for an engine bug caught while summarizing this trace.
    pub fn internal_error(source: String) -> TraceEntry {
        TraceEntry::Error {
            source,
            error: "internal error while summarizing this trace (a bug: please report it)"
                .to_owned(),
        }
    }

    /// A trace summary (made with [`TOP_OPS`] ops) projected onto the reference's keys, plus
    /// `warnings`, and `approximations` when the limits forced one.
    pub fn summary(r: TraceSummaryResult) -> TraceEntry {
        let mut warnings = r.warnings;
        if r.approximations.is_some() {
            warnings.push(
                "memory limits forced approximations (see `approximations`; --exact lifts them)"
                    .to_owned(),
            );
        }
        TraceEntry::Summary(TraceSummaryEntry {
            source: r.source,
            scope: r.scope,
            categories: r.categories,
            largest_ops_by_duration_sum: r.largest_ops_by_duration_sum,
            warnings,
            approximations: r.approximations,
        })
    }
}

/// A summarized trace: exactly the reference `trace_summary` keys, plus `warnings` when
/// something was skipped or the trace was cut, bare-array, or otherwise not what the
/// reference reads.
#[derive(Serialize, Debug, Clone)]
pub struct TraceSummaryEntry {
    source: String,
    scope: &'static str,
    categories: Categories,
    largest_ops_by_duration_sum: Vec<OpRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approximations: Option<Approximations>,
}

/// One entry of `traces`, keys in the reference's order.
#[derive(Serialize, Debug, Clone)]
#[serde(untagged)]
pub enum TraceEntry {
    /// The trace's summary.
    Summary(TraceSummaryEntry),
    /// The diagnostic run has no completed report.
    NotAnalyzed {
        /// The trace file.
        source: String,
        /// Always `not_analyzed`.
        status: &'static str,
        /// The reference's reason text.
        reason: &'static str,
        /// Why its report could not be read, when it could not.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// The trace could not be summarized at all.
    Error {
        /// The trace file.
        source: String,
        /// What went wrong.
        error: String,
    },
}
