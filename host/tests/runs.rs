//! The runs-folder driver on a folder built here: the listing follows links to the top-level
//! folders and to `traces/` but not to folders below it (as Python's globs), the traces the job
//! names are handed to the summarizer and come back in the job's order, and a summarizer that
//! panics gives that trace an error entry only.
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use flinch_host::runs::{ListedRuns, SummarizeOptions, summary};
use serde_json::Value;

fn case() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/summarize/cases/basic")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

const COMPLETED: &[u8] = br#"{"status": "completed"}"#;

/// `dir/runs` holding the basic case's `alpha` run through links (`alpha-host` and `alpha` link
/// to folders outside), a trace folder with a linked subfolder under `traces/`, and a linked
/// trace folder.
fn build(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    let (runs, ext) = (dir.join("runs"), dir.join("ext"));
    copy_dir(&case().join("alpha-host"), &ext.join("alpha-host"));
    copy_dir(&case().join("alpha"), &ext.join("alpha"));
    std::fs::create_dir_all(runs.join("t-trace/traces/sub")).unwrap();
    symlink(ext.join("alpha-host"), runs.join("alpha-host")).unwrap();
    symlink(ext.join("alpha"), runs.join("alpha")).unwrap();
    std::fs::write(runs.join("t-trace/report.json"), COMPLETED).unwrap();
    std::fs::write(runs.join("t-trace/traces/b.json"), b"[]").unwrap();
    std::fs::write(runs.join("t-trace/traces/sub/a.json.gz"), b"").unwrap();
    std::fs::create_dir_all(ext.join("hidden")).unwrap();
    std::fs::write(ext.join("hidden/c.json"), b"[]").unwrap();
    symlink(ext.join("hidden"), runs.join("t-trace/traces/linked")).unwrap();
    std::fs::create_dir_all(ext.join("u-trace/traces")).unwrap();
    std::fs::write(ext.join("u-trace/traces/d.json"), b"[]").unwrap();
    symlink(ext.join("u-trace"), runs.join("u-trace")).unwrap();
    runs
}

#[test]
fn links_traces_and_their_order() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("host-runs-links");
    let runs = build(&dir);
    let options = SummarizeOptions::new(&runs);
    let listed = ListedRuns::list(&options);
    let inputs = listed.inputs();
    assert!(
        inputs.contains(&runs.join("alpha-host/telemetry.jsonl")),
        "{inputs:?}"
    );
    assert!(inputs.contains(&runs.join("t-trace/traces/sub/a.json.gz")));
    assert!(!inputs.iter().any(|p| p.ends_with("c.json")), "{inputs:?}");

    let asked = std::sync::Mutex::new(Vec::new());
    let summarize = |path: &Path, source: &str| {
        asked.lock().unwrap().push(path.to_owned());
        if source.ends_with("b.json") {
            panic!("a bug");
        }
        Err(format!("no summary of {source}"))
    };
    let out = summary(&options, &summarize).unwrap();
    let v: Value = serde_json::from_str(&out.json).unwrap();
    assert!(v["telemetry"]["alpha"]["startup"].is_object(), "{v}");
    let root = runs.to_string_lossy();
    let traces: Vec<(String, String)> = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let source = t["source"].as_str().unwrap().to_owned();
            let error = t["error"].as_str().or(t["status"].as_str()).unwrap();
            (source, error.to_owned())
        })
        .collect();
    assert_eq!(
        traces,
        [
            (
                format!("{root}/t-trace/traces/b.json"),
                "internal error while summarizing this trace (a bug: please report it)".to_owned()
            ),
            (
                format!("{root}/t-trace/traces/sub/a.json.gz"),
                format!("no summary of {root}/t-trace/traces/sub/a.json.gz")
            ),
            (
                format!("{root}/u-trace/traces/d.json"),
                "not_analyzed".to_owned()
            ),
        ]
    );
    let mut asked = asked.into_inner().unwrap();
    asked.sort();
    assert_eq!(
        asked,
        [
            runs.join("t-trace/traces/b.json"),
            runs.join("t-trace/traces/sub/a.json.gz")
        ]
    );
    assert_eq!(out.message, "Summarized 1 telemetry runs and 3 traces");
}

/// `--skip-traces`: no trace is summarized, but the traces are still inputs.
#[test]
fn skipped_traces_are_inputs_still() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("host-runs-skip");
    let runs = build(&dir);
    let options = SummarizeOptions {
        skip_traces: true,
        ..SummarizeOptions::new(&runs)
    };
    let listed = ListedRuns::list(&options);
    assert!(
        listed
            .inputs()
            .contains(&runs.join("t-trace/traces/b.json"))
    );
    let none = |_: &Path, _: &str| -> Result<_, String> { panic!("asked for a trace") };
    let s = listed.summarize(&none).unwrap();
    assert_eq!(s.message(), "Summarized 1 telemetry runs and 0 traces");
}
