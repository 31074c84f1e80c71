//! `flinch-trace analyze` on a real recording made on an NVIDIA H200 (examples/h200/: PyTorch
//! matrix products for 3 s, a 2 s sleep, 3 s again, between marks). The three-line output of
//! each window is checked against the reference in analyze_cli.rs (tests/analyze/cases.txt);
//! here: the verdicts, and the NVML energy counter against the trapezoid of the instant power.
use std::process::Command;

mod common;
use common::repo;

fn window(start: &str, end: &str) -> serde_json::Value {
    let root = repo();
    let out = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .current_dir(&root)
        .args([
            "analyze",
            "--csv",
            "examples/h200/trace.csv",
            "--start",
            start,
            "--end",
            end,
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["window"].clone()
}

#[test]
fn compute_windows_are_compute_and_the_sleep_is_waiting() {
    for (start, end, want) in [
        ("compute_start", "compute_end", "compute"),
        ("pause_start", "pause_end", "waiting"),
        ("compute2_start", "compute2_end", "compute"),
    ] {
        let w = window(start, end);
        assert_eq!(
            w["verdict"]["verdict"], want,
            "{start}..{end}: {}",
            w["verdict"]
        );
    }
}

#[test]
fn counter_and_trapezoid_energy_agree_over_the_compute_windows() {
    for (start, end) in [
        ("compute_start", "compute_end"),
        ("compute2_start", "compute2_end"),
    ] {
        let w = window(start, end);
        let g = &w["gpus"][0];
        let edge = g["energy_edge_j"].as_f64().unwrap();
        let counter = g["energy_counter_j"].as_f64().unwrap();
        // ~2 kJ each; the counter moves every 100 ms on this GPU (±1 update per edge, ~1.4%).
        assert!(edge > 1500.0 && counter > 1500.0, "{edge} {counter}");
        assert!(
            (edge - counter).abs() / counter < 0.02,
            "{start}: edge {edge} J, counter {counter} J"
        );
    }
}
