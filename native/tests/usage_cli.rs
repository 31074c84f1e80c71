//! The command line's one rule for exit statuses (docs/cli.md, "Exit status"): a usage error (a
//! bad or conflicting option, a value that does not parse or is out of range) exits 2 with a
//! message naming the option; an input or runtime error exits 1. Every numeric option of every
//! subcommand is given a negative, a NaN and a huge value.
use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::repo;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("flinch-usage-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `flinch-trace ARGS` under `timeout` (an option wrongly accepted must not leave a server
/// or a recording running): 124 when it ran out.
fn run(args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg("20")
        .arg(env!("CARGO_BIN_EXE_flinch-trace"))
        .current_dir(repo())
        .env_remove("FLINCH_MARKS")
        .args(args)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "{args:?} did not end");
    out
}

const TRACE: &str = "tests/traces/HolisticTraceAnalysis/backward_thread.json";
const CSV: &str = "tests/analyze/pause.csv";

/// Every numeric option, with the arguments its subcommand needs before it.
fn numeric_options(out_csv: &str) -> Vec<(Vec<&str>, &'static str)> {
    let record = |o| {
        (
            vec![
                "record",
                "--no-rapl",
                "--no-host",
                "--seconds",
                "0.05",
                "--out",
                out_csv,
            ],
            o,
        )
    };
    let mut v = vec![
        (vec!["trace", TRACE], "--top"),
        (vec!["trace", TRACE], "--min-gap-ms"),
        (vec!["trace", TRACE], "--top-pauses"),
        (vec!["merge", TRACE], "--top"),
        (vec!["analyze", "--csv", CSV, "--json"], "--occurrence"),
        (vec!["analyze", "--csv", CSV, "--json"], "--max-gap-ms"),
        (vec!["web", "--dir", "/nonexistent"], "--port"),
        record("--metrics-windows"),
        record("--gpu"),
        record("--interval-ms"),
        record("--host-interval-ms"),
        record("--host-jsonl-interval-ms"),
    ];
    // `--seconds` itself, and `--gpu` of analyze, whose negative values are valid numbers.
    v.push((
        vec!["record", "--no-rapl", "--no-host", "--out", out_csv],
        "--seconds",
    ));
    v
}

fn assert_usage(args: &[&str], option: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(option), "{args:?}: {err}");
    assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn every_numeric_option_refuses_negative_nan_and_huge_values_with_exit_2() {
    let d = dir();
    let out_csv = d.join("never.csv");
    let out_csv = out_csv.to_str().unwrap();
    let mut n = 0;
    for (before, option) in numeric_options(out_csv) {
        for value in [
            "-5",
            "-0.5",
            "nan",
            "-inf",
            "1e300",
            "99999999999999999999999999",
        ] {
            let mut args = before.clone();
            args.extend([option, value]);
            assert_usage(&args, option);
            // `--option=value` reads the same.
            let joined = format!("{option}={value}");
            let mut args = before.clone();
            args.push(&joined);
            assert_usage(&args, option);
            n += 1;
        }
    }
    assert!(n >= 13 * 6);
    // analyze --gpu: a gpu_index is any whole number, so -1 is valid (and absent: exit 1).
    for value in ["nan", "1.5", "99999999999999999999999999"] {
        assert_usage(
            &["analyze", "--csv", CSV, "--json", "--gpu", value],
            "--gpu",
        );
    }
    let out = run(&["analyze", "--csv", CSV, "--json", "--gpu", "-1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gpu -1: no SAMPLE row"));
    assert!(!std::path::Path::new(out_csv).exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The values at the edge of each range are accepted.
#[test]
fn values_at_the_edges_are_accepted() {
    let d = dir().join("edges");
    std::fs::create_dir_all(&d).unwrap();
    for args in [
        &["trace", TRACE, "--top", "0", "--json"][..],
        &[
            "trace",
            TRACE,
            "--min-gap-ms",
            "0",
            "--top-pauses",
            "0",
            "--json",
        ],
        &["analyze", "--csv", CSV, "--json", "--max-gap-ms", "0"],
        &[
            "analyze",
            "--csv",
            CSV,
            "--start",
            "begin",
            "--end",
            "end",
            "--occurrence",
            "1",
        ],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let csv = d.join("r.csv");
    let out = run(&[
        "record",
        "--no-rapl",
        "--no-host",
        "--seconds",
        "0.05",
        "--interval-ms",
        "0.05",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Conflicting or missing options exit 2, as clap's own usage errors do; input and runtime
/// errors exit 1.
#[test]
fn conflicting_options_exit_2_and_runtime_errors_exit_1() {
    let d = dir().join("conflicts");
    std::fs::create_dir_all(&d).unwrap();
    let csv = d.join("r.csv");
    let csv = csv.to_str().unwrap();
    for (args, says) in [
        (
            &["record", "--seconds", "1", "--out", csv, "--", "true"][..],
            "either --seconds or a command",
        ),
        (
            &["record", "--gpu", "0,0", "--seconds", "0.05", "--out", csv],
            "--gpu lists a GPU twice",
        ),
        (
            &["trace", TRACE, "--json", "--mergeable", "--pauses"],
            "--mergeable",
        ),
        (
            &[
                "trace",
                TRACE,
                TRACE,
                "--telemetry",
                CSV,
                "--perfetto",
                "x.json",
            ],
            "--perfetto",
        ),
        (&["trace", TRACE, "--gpu-map", "0:3"], "--gpu-map"),
        (
            &["trace", TRACE, "--clock-offset-ms", "1e3"],
            "--clock-offset-ms",
        ),
        (&["merge", "-", "-"], "stdin"),
        (
            &["analyze", "--csv", CSV, "--start", "a"],
            "--start and --end",
        ),
        (&["mark", "", "--fifo", "/nonexistent/f"], "empty label"),
        (&["mark", "x"], "FLINCH_MARKS"),
        // clap's own.
        (&["trace", TRACE, "--no-such-option"], "--no-such-option"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!std::path::Path::new(csv).exists());
    // Input errors: 1.
    for args in [
        &["trace", "/nonexistent/t.json"][..],
        &["analyze", "--csv", "/nonexistent/t.csv", "--json"],
        &["merge", "/nonexistent/t.json"],
        &["trace", TRACE, "--telemetry", "/nonexistent/t.csv"],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
