//! The recorder driven by the scripted GPU source and the virtual clock reproduces the checked-in
//! golden trace.csv byte for byte, and that file reads back through `flinch-trace analyze` with
//! the reference analyzer's output (a golden produced offline: tests/record/README.md).
use std::process::Command;

mod common;
use common::{repo, tmpdir};

fn record_golden(out: &std::path::Path) -> std::process::Output {
    let g = repo().join("tests/record");
    Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .arg("record")
        .arg("--scripted-gpu")
        .arg(g.join("golden.gpu-script"))
        .args([
            "--fake-clock-step-ns",
            "1000",
            "--seconds",
            "1",
            "--interval-ms",
            "10",
        ])
        .arg("--powercap-root")
        .arg(g.join("powercap"))
        .arg("--proc-root")
        .arg(g.join("proc"))
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn scripted_recording_matches_the_golden_csv_and_sidecar() {
    let d = tmpdir("csv");
    let out = d.join("trace.csv");
    let o = record_golden(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = std::fs::read_to_string(&out).unwrap();
    let want = std::fs::read_to_string(repo().join("tests/record/golden.csv")).unwrap();
    assert_eq!(got, want);

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("trace.csv.meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["gpu_source"], "scripted");
    assert_eq!(meta["clock"], "virtual");
    assert_eq!(meta["gpus"][0]["gpu_power_w_source"], "instant");
    assert_eq!(meta["rapl_zones"][0]["column"], "rapl_energy_uj");
    assert_eq!(meta["rapl_zones"][1]["column"], "rapl_package-0_core_uj");
    assert_eq!(
        meta["rapl_zones"][1]["max_energy_range_uj"],
        262_143_328_850u64
    );
    // 100 ticks on the 10 ms grid and the end tick at 1 s.
    assert_eq!(meta["health"]["ticks"], 101);
    assert_eq!(meta["health"]["missed_ticks"], 0);
    assert_eq!(meta["health"]["marks"], 6);
    // Every second power reading repeats the previous one: 51 of 100 comparisons.
    let rep = meta["health"]["repeated_power_fraction"].as_f64().unwrap();
    assert!((rep - 51.0 / 100.0).abs() < 1e-12, "{rep}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("sampler: 101 ticks, 0 missed"), "{stderr}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `flinch-trace analyze` prints what the reference printed for each mark pair of the golden.
#[test]
fn golden_csv_reads_back_through_analyze_like_the_reference() {
    let golden = std::fs::read_to_string(repo().join("tests/record/golden.analyze.txt")).unwrap();
    let csv = repo().join("tests/record/golden.csv");
    let mut checked = 0;
    for block in golden.split("== ").filter(|b| !b.is_empty()) {
        let (pair, want) = block.split_once('\n').unwrap();
        let (start, end) = pair.split_once(' ').unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
            .arg("analyze")
            .arg("--csv")
            .arg(&csv)
            .args(["--start", start, "--end", end])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{pair}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{pair}");
        checked += 1;
    }
    assert_eq!(checked, 4);
}

/// The fuller `--json` analysis finds the scripted pause and the compute before it.
#[test]
fn golden_csv_verdicts_find_the_pause() {
    let csv = repo().join("tests/record/golden.csv");
    for (start, end, want) in [
        ("pause_start", "pause_end", "waiting"),
        ("infer_start", "pause_start", "compute"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
            .arg("analyze")
            .arg("--csv")
            .arg(&csv)
            .args(["--start", start, "--end", end, "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["window"]["verdict"]["verdict"], want, "{start}..{end}");
        // The recorder's NVML energy counter column is read back too.
        assert!(v["window"]["total"]["energy_counter_j"].as_f64().unwrap() > 0.0);
    }
}
