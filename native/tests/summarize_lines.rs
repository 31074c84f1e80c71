//! `summarize` holds no input line or whole-read file past a stated size: a longer
//! `command.log` line is skipped as it is read and counted with its line number, and a
//! `report.json` larger than the limit is reported unreadable. The line limit is lowered for the
//! test with `--max-line-bytes`, so the files stay small.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::repo;

fn case() -> PathBuf {
    repo().join("tests/summarize/cases/basic")
}

/// A runs folder holding a copy of the `alpha` run of the basic case, with `log` as its
/// `command.log` and `report` (or the case's) as its `report.json`.
fn runs_with(name: &str, log: &[u8], report: Option<&[u8]>) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("summarize-lines-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["alpha", "alpha-host"] {
        std::fs::create_dir_all(dir.join("runs").join(sub)).unwrap();
        for entry in std::fs::read_dir(case().join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(
                entry.path(),
                dir.join("runs").join(sub).join(entry.file_name()),
            )
            .unwrap();
        }
    }
    std::fs::write(dir.join("runs/alpha-host/command.log"), log).unwrap();
    if let Some(report) = report {
        std::fs::write(dir.join("runs/alpha/report.json"), report).unwrap();
    }
    dir
}

/// The `alpha` record `summarize --runs runs --skip-traces` writes in `dir`, lines over
/// `max_line_bytes` skipped.
fn alpha(dir: &Path, max_line_bytes: usize) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .args([
            "summarize",
            "--runs",
            "runs",
            "--out",
            "s.json",
            "--skip-traces",
            "--max-line-bytes",
            &max_line_bytes.to_string(),
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
    v["telemetry"]["alpha"].clone()
}

fn log() -> Vec<u8> {
    std::fs::read(case().join("alpha-host/command.log")).unwrap()
}

/// A 3000-byte line holding every marker, between the log's lines and as its unterminated last
/// line: skipped and named with its line number, everything else as without it.
#[test]
fn a_log_line_past_the_limit_is_skipped_and_counted() {
    let plain = alpha(&runs_with("plain", &log(), None), 1000);
    assert!(plain.get("warnings").is_none(), "{plain}");
    let timing = plain["startup"]["runtime_loading_compilation_evidence"].clone();
    assert!(timing.as_array().unwrap().len() > 3, "{timing}");

    let mut long = b"x Model loading took 1 s; Dropping output for unknown req z; ".to_vec();
    long.extend_from_slice(b"force killing remaining process 9 ");
    long.resize(3000, b'y');
    let log_lines = log().iter().filter(|&&b| b == b'\n').count();
    for (name, text, line) in [
        ("middle", [&long[..], b"\n", &log()].concat(), 1),
        ("last", [&log()[..], &long].concat(), log_lines + 1),
    ] {
        let mut got = alpha(&runs_with(name, &text, None), 1000);
        let warnings = got.as_object_mut().unwrap().remove("warnings");
        assert_eq!(
            warnings,
            Some(Value::from(vec![format!(
                "runs/alpha-host/command.log: line over 1000 bytes skipped: 1 line ({line})"
            )])),
            "{name}"
        );
        assert_eq!(got, plain, "{name}");
    }
}

/// A `report.json` larger than the most read whole is not read (the run gets its whole-run
/// telemetry only) and the warning says why.
#[test]
fn a_report_past_the_whole_file_limit_is_reported() {
    let mut report = br#"{"status": "completed", "pad": ""#.to_vec();
    report.resize(report.len() + flinch_core::runs::MAX_WHOLE_FILE_BYTES, b' ');
    report.extend_from_slice(b"\"}");
    let got = alpha(&runs_with("big-report", &log(), Some(&report)), 1 << 20);
    assert_eq!(
        got["warnings"],
        Value::from(vec![
            "runs/alpha/report.json: cannot read (larger than 16777216 bytes, the most read whole); skipped"
        ])
    );
    assert!(got.get("startup").is_none(), "{got}");
    assert!(got["whole_run"]["samples"].as_u64().unwrap() > 0);
}

/// `--max-values`: a budget so small that every series writes its values to the temporary file
/// gives the same bytes as the default budget (every figure exact), and a zero budget is a
/// usage error.
#[test]
fn a_small_value_budget_gives_the_same_bytes() {
    let dir = runs_with("values", &log(), None);
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
            .args(["summarize", "--runs", "runs", "--out", "s.json"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap();
        (
            o.status.code(),
            std::fs::read(dir.join("s.json")).unwrap_or_default(),
        )
    };
    let (code, plain) = run(&[]);
    assert_eq!(code, Some(0));
    assert_eq!(run(&["--max-values", "2"]), (Some(0), plain.clone()));
    assert!(!String::from_utf8_lossy(&plain).contains("quantile sketch"));
    assert_eq!(run(&["--max-values", "0"]).0, Some(2));
}
