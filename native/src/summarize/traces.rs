//! The `traces` list: `*trace*/traces/**/*.json[.gz]` in the reference's order, each
//! summarized (in parallel, on a bounded number of threads) when its diagnostic run has a
//! completed `report.json`, else listed as not analyzed. The entries are the core's
//! (`flinch_core::runs`); this module walks the folder and runs the threads.
use std::fs;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use flinch_core::Limits;
use flinch_core::runs::{
    PyPath, TOP_OPS, TraceEntry, Warnings, is_trace_folder, is_trace_name, report_path,
};

use super::{fs_path, with_file};

/// Threads summarizing traces at once (each holds one file's bounded state).
const MAX_TRACE_THREADS: usize = 4;

/// Trace files as `sorted(runs.glob("*trace*/traces/**/*"))` finds them, kept when they are
/// files named `*.json` or `*.json.gz`. Symlinked folders are not descended into, as in
/// Python's `**`.
pub fn discover(runs: &PyPath) -> Vec<PyPath> {
    let mut found = Vec::new();
    for top in super::list_dir_sorted(runs) {
        let name = top.parts().last().map_or("", String::as_str);
        if !is_trace_folder(name) || !fs_path(&top).is_dir() {
            continue;
        }
        let traces = top.join("traces");
        if fs_path(&traces).is_dir() {
            walk(&traces, &mut found);
        }
    }
    found.retain(|p| {
        let name = p.parts().last().map_or("", String::as_str);
        is_trace_name(name) && fs_path(p).is_file()
    });
    found.sort();
    found.dedup();
    found
}

fn walk(dir: &PyPath, found: &mut Vec<PyPath>) {
    let Ok(entries) = fs::read_dir(fs_path(dir)) else {
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

/// Whether the diagnostic run holding `path` has a completed `report.json`.
fn completed(runs: &PyPath, path: &PyPath, w: &mut Warnings) -> bool {
    let report = report_path(runs, path);
    let shown = report.to_py_string();
    with_file(&report, |f| flinch_core::runs::completed(f, &shown, w))
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
            out[i] = Some(TraceEntry::not_analyzed(path.to_py_string(), &w));
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
                                TraceEntry::internal_error(paths[i].to_py_string())
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
/// as `flinch-trace trace` (`exact_io`: its default, exact past the memory limits), within
/// `limits`.
fn summarize_one(path: &PyPath, limits: Limits, exact_io: bool) -> TraceEntry {
    let source = path.to_py_string();
    // No progress line: up to 4 traces run at once.
    match crate::trace::summarize_file(&fs_path(path), &source, limits, TOP_OPS, exact_io, false) {
        Ok(r) => TraceEntry::summary(r),
        Err(error) => TraceEntry::Error { source, error },
    }
}
