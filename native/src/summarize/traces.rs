//! The `traces` list: `*trace*/traces/**/*.json[.gz]` in the reference's order, each
//! summarized (in parallel, on a bounded number of threads) when its diagnostic run has a
//! completed `report.json`, else listed as not analyzed.
use std::fs;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use flinch_core::Limits;
use flinch_core::summary::{Approximations, Categories, OpRow};
use serde::Serialize;
use serde_json::Value;

use super::PyPath;
use super::jsonl::Warnings;

/// Threads summarizing traces at once (each holds one file's bounded state).
const MAX_TRACE_THREADS: usize = 4;

const NOT_ANALYZED_REASON: &str = "Diagnostic has no completed report; trace may be incomplete.";

/// Trace files as `sorted(runs.glob("*trace*/traces/**/*"))` finds them, kept when they are
/// files named `*.json` or `*.json.gz`. Symlinked folders are not descended into, as in
/// Python's `**`.
pub fn discover(runs: &PyPath) -> Vec<PyPath> {
    let mut found = Vec::new();
    for top in super::list_dir_sorted(runs) {
        let name = top.parts().last().map_or("", String::as_str);
        if !name.contains("trace") || !top.to_fs().is_dir() {
            continue;
        }
        let traces = top.join("traces");
        if traces.to_fs().is_dir() {
            walk(&traces, &mut found);
        }
    }
    found.retain(|p| {
        let name = p.parts().last().map_or("", String::as_str);
        (name.ends_with(".json") || name.ends_with(".json.gz")) && p.to_fs().is_file()
    });
    found.sort();
    found.dedup();
    found
}

fn walk(dir: &PyPath, found: &mut Vec<PyPath>) {
    let Ok(entries) = fs::read_dir(dir.to_fs()) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = dir.join(&entry.file_name().to_string_lossy());
        let is_real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        found.push(path.clone());
        if is_real_dir {
            walk(&path, found);
        }
    }
}

/// Whether the diagnostic run holding `path` (its first component under `runs`) has a
/// `report.json` whose `status` is `"completed"`; a malformed report counts as not completed
/// and is described in `w`.
fn completed(runs: &PyPath, path: &PyPath, w: &mut Warnings) -> bool {
    let top = &path.parts()[runs.parts().len()];
    let report = runs.join(top).join("report.json");
    if !report.to_fs().is_file() {
        return false;
    }
    match fs::read(report.to_fs())
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(Value::Object(m)) => m.get("status").and_then(Value::as_str) == Some("completed"),
        Ok(_) => {
            w.note(format!("{}: not a JSON object", report.to_py_string()));
            false
        }
        Err(e) => {
            w.note(format!(
                "{}: unreadable or malformed ({e})",
                report.to_py_string()
            ));
            false
        }
    }
}

/// Every trace entry, in order. Completed ones are summarized on up to
/// [`MAX_TRACE_THREADS`] threads.
pub fn summarize_all(runs: &PyPath, limits: Limits, exact_io: bool) -> Vec<TraceEntry> {
    let paths = discover(runs);
    let mut out: Vec<Option<TraceEntry>> = vec![None; paths.len()];
    let mut todo = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let mut w = Warnings::default();
        if completed(runs, path, &mut w) {
            todo.push(i);
        } else {
            out[i] = Some(TraceEntry::NotAnalyzed {
                source: path.to_py_string(),
                status: "not_analyzed",
                reason: NOT_ANALYZED_REASON,
                warnings: w.render(""),
            });
        }
    }
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_TRACE_THREADS)
        .min(todo.len());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(k) else { break };
                    // A bug in the engine must not take the other traces down: it becomes
                    // this trace's error entry.
                    let entry =
                        std::panic::catch_unwind(|| summarize_one(&paths[i], limits, exact_io))
                            .unwrap_or_else(|_| {
                                TraceEntry::Error {
                        source: paths[i].to_py_string(),
                        error:
                            "internal error while summarizing this trace (a bug: please report it)"
                                .to_owned(),
                    }
                            });
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, entry));
                }
            });
        }
    });
    for (i, entry) in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        out[i] = Some(entry);
    }
    out.into_iter().flatten().collect()
}

/// One trace's summary entry: streamed through the core scanner and summary by the same code
/// as `flinch-trace trace`, within `limits`, projected onto the reference's keys (plus
/// `warnings`, and `approximations` when the limits forced one).
fn summarize_one(path: &PyPath, limits: Limits, exact_io: bool) -> TraceEntry {
    let source = path.to_py_string();
    // No progress line: up to 4 traces run at once.
    match crate::trace::summarize_file(&path.to_fs(), &source, limits, TOP_OPS, exact_io, false) {
        Ok(r) => {
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
        Err(error) => TraceEntry::Error { source, error },
    }
}

/// Ops listed per trace, as the reference (`[:40]`).
const TOP_OPS: usize = 40;

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
