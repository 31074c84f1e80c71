//! `summarize` summarizes each trace within `Limits::NATIVE` by default (bounded memory per trace,
//! several traces at once), and says so when a trace does not fit; `--exact` lifts the bound.
use std::path::Path;
use std::process::Command;

mod common;
use common::tmpdir;

#[allow(dead_code)]
#[path = "../examples/gen_trace.rs"]
mod gen_trace;

fn runs_with_many_ops(dir: &Path, ops: usize) {
    let run = dir.join("big-trace");
    std::fs::create_dir_all(run.join("traces")).unwrap();
    std::fs::write(run.join("report.json"), r#"{"status": "completed"}"#).unwrap();
    let mut doc = String::from(r#"{"traceEvents":["#);
    for k in 0..ops {
        if k > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"op{k}","ts":{},"dur":{}}}"#,
            k * 10,
            1 + k % 7
        ));
    }
    doc.push_str("]}");
    std::fs::write(run.join("traces").join("t.json"), doc).unwrap();
}

fn summarize(runs: &Path, extra: &[&str]) -> serde_json::Value {
    let out = runs.join("summary.json");
    let o = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .arg("summarize")
        .arg("--runs")
        .arg(runs)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    v["traces"][0].clone()
}

#[test]
fn a_trace_past_the_default_limits_is_kept_with_its_approximations_stated() {
    let d = tmpdir("many-ops");
    // More distinct ops than Limits::NATIVE keeps: the rest fold into "(other)".
    let ops = flinch_core::Limits::NATIVE.max_ops + 100;
    runs_with_many_ops(&d, ops);

    let bounded = summarize(&d, &[]);
    assert_eq!(bounded["approximations"]["ops_folded_into_other"], true);
    let warnings = bounded["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("approximations")),
        "{warnings:?}"
    );
    // Category figures stay exact: every event is counted.
    assert_eq!(bounded["categories"]["cpu_op"]["events"], ops as u64);

    let exact = summarize(&d, &["--exact"]);
    assert!(exact.get("approximations").is_none(), "{exact}");
    assert!(exact.get("warnings").is_none(), "{exact}");
    assert_eq!(exact["categories"], bounded["categories"]);
    let names: Vec<&str> = exact["largest_ops_by_duration_sum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 40);
    assert!(!names.contains(&"(other)"));
    let _ = std::fs::remove_dir_all(&d);
}

/// One answer: on a `with_stack` trace with more distinct ops than the old budgets held, the
/// trace entry of `summarize` carries the numbers of `trace --json` and `trace --json --exact`
/// (exact, no approximations, no "(other)" row), by default.
#[test]
fn a_with_stack_trace_gets_the_answer_of_trace() {
    let d = tmpdir("with-stack");
    let traces = d.join("stack-trace").join("traces");
    gen_trace::generate(&traces, 7_000_000, "with_stack", (20_000, 50_000)).unwrap();
    std::fs::remove_file(traces.join("trace.json.gz")).unwrap();
    std::fs::write(
        d.join("stack-trace").join("report.json"),
        r#"{"status": "completed"}"#,
    )
    .unwrap();
    let entry = summarize(&d, &[]);
    assert!(
        entry.get("approximations").is_none(),
        "{}",
        entry["approximations"]
    );
    let file = traces.join("trace.json");
    for mode in [None, Some("--exact")] {
        let out = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
            .args(["trace", "--json"])
            .args(mode)
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success());
        let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(t.get("approximations").is_none());
        assert_eq!(entry["categories"], t["categories"], "{mode:?}");
        assert_eq!(
            entry["largest_ops_by_duration_sum"], t["largest_ops_by_duration_sum"],
            "{mode:?}"
        );
    }
    let ops = entry["largest_ops_by_duration_sum"].as_array().unwrap();
    assert_eq!(ops.len(), 40);
    assert!(ops.iter().all(|o| o["name"] != "(other)"));
    let _ = std::fs::remove_dir_all(&d);
}
