//! End-to-end tests of `flinch-trace diff --steps`: the real PyTorch pair of
//! `tests/fixtures/torch/` (B's data loader stalled in known steps: the direction, the part and
//! the op that moved, the stalled steps among those listed, against the pair's truth files), the
//! output without `--steps` unchanged, a summary's steps null with a warning, energy per step
//! with recordings, and usage errors.
use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{bin, repo, tmpdir, write};

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/torch").join(name)
}

fn truth(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

fn run_ok(args: &[&std::ffi::OsStr]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn diff(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let mut args: Vec<&std::ffi::OsStr> = vec!["diff".as_ref(), a.as_ref(), b.as_ref()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    args.push("--json".as_ref());
    serde_json::from_str(&run_ok(&args)).unwrap()
}

fn part<'v>(steps: &'v Value, name: &str) -> &'v Value {
    steps["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["part"] == name)
        .unwrap()
}

#[test]
fn a_stalled_data_loader_in_a_real_pytorch_run_is_found_in_its_steps() {
    let (a, b) = (fixture("diff_a.json.gz"), fixture("diff_b_stall.json.gz"));
    let (ta, tb) = (truth("diff_a.truth.json"), truth("diff_b_stall.truth.json"));
    assert_eq!(ta["stall_steps"].as_array().unwrap().len(), 0);
    let stalled: Vec<u64> = tb["stall_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(!stalled.is_empty());
    let stall_ms = tb["stall_ms"].as_f64().unwrap();
    let want_ms = stalled.len() as f64 * stall_ms;

    let r = diff(&a, &b, &["--steps"]);
    let s = &r["steps"];
    let n = ta["steps"].as_array().unwrap().len() as u64;
    assert_eq!((s["n_a"].as_u64(), s["n_b"].as_u64()), (Some(n), Some(n)));
    // The part that moved most is the data loader, up by the stalls (each sleeps stall_ms; the
    // rest of the loading varies by a few ms), in B's stalled steps.
    let p = &s["parts"][0];
    assert_eq!(p["part"], "dataloader", "{s}");
    assert_eq!(p["moved_in"], "b");
    let d = p["delta_total_ms"].as_f64().unwrap();
    assert!(d > 0.95 * want_ms && d < want_ms + 0.5 * stall_ms, "{p}");
    let moved: Vec<u64> = p["moved_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    // Exactly the stalled steps: the machine's own jitter in other steps stays below A's
    // largest loading time.
    assert_eq!(moved, stalled);
    // The totals are the parts' sums: B's data loader total less A's is the change.
    let tot = |k: &str| p[k].as_f64().unwrap();
    assert!((tot("total_ms_b") - tot("total_ms_a") - d).abs() < 1e-6);
    // Its op moved the most too, by the same amount (the data loader's annotations alone).
    let op = &r["ops"][0];
    assert_eq!(
        op["name"],
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    );
    assert!(
        op["delta_sum_ms"].as_f64().unwrap() > 0.95 * want_ms,
        "{op}"
    );
    // The verdict: the median step, its interval, and the part with its steps.
    let v = r["verdict"].as_str().unwrap();
    assert!(v.starts_with("B vs A: "), "{v}");
    assert!(v.contains("median step ") && v.contains("95 % CI"), "{v}");
    assert!(v.contains("; dataloader +"), "{v}");
    for k in &stalled {
        assert!(v.contains(&format!("#{k}")), "{v}");
    }
    // Swapped: the data loader shrank, counted in A's (the stalled run's) steps.
    let r = diff(&b, &a, &["--steps"]);
    let p = &r["steps"]["parts"][0];
    assert_eq!(
        (p["part"].as_str(), p["moved_in"].as_str()),
        (Some("dataloader"), Some("a"))
    );
    assert!(p["delta_total_ms"].as_f64().unwrap() < -0.95 * want_ms);
    // A run against itself: no change, no part moved.
    let r = diff(&a, &a, &["--steps"]);
    let v = r["verdict"].as_str().unwrap();
    assert!(
        v.starts_with("B vs A: no significant change: median step"),
        "{v}"
    );
    assert_eq!(r["steps"]["shift_ms"].as_f64(), Some(0.0));
    assert!(
        r["steps"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["steps_moved"] == 0 && p["delta_total_ms"] == 0.0)
    );
    // A glob naming the same steps gives the same comparison, under its own pattern.
    let g = diff(&a, &b, &["--step-name", "ProfilerStep#*"]);
    let base = diff(&a, &b, &["--steps"]);
    assert_eq!(g["steps"]["pattern"], "ProfilerStep#*");
    assert_eq!(g["steps"]["parts"], base["steps"]["parts"]);
    assert_eq!(g["steps"]["ci95_pct"], base["steps"]["ci95_pct"]);
    // The breakdowns are `trace --steps`' own medians.
    let t: Value = serde_json::from_str(&run_ok(&[
        "trace".as_ref(),
        b.as_ref(),
        "--steps".as_ref(),
        "--json".as_ref(),
    ]))
    .unwrap();
    assert_eq!(
        t["step_summary"]["breakdown_ms_median"],
        base["steps"]["breakdown_ms_median_b"]
    );
    assert_eq!(
        part(&base["steps"], "cpu_exec")["median_ms_b"],
        t["step_summary"]["breakdown_ms_median"]["cpu_exec"]
    );
}

/// Without `--steps` the output is the diff's as before: no `steps` key, and with `--steps`
/// everything else equal (the verdict aside, which is the steps' one).
#[test]
fn without_steps_the_output_is_unchanged() {
    let (a, b) = (fixture("diff_a.json.gz"), fixture("diff_b_stall.json.gz"));
    let plain_text = run_ok(&["diff".as_ref(), a.as_ref(), b.as_ref(), "--json".as_ref()]);
    assert!(!plain_text.contains("\"steps\""));
    let plain: Value = serde_json::from_str(&plain_text).unwrap();
    let mut with = diff(&a, &b, &["--steps"]);
    let o = with.as_object_mut().unwrap();
    assert!(o.remove("steps").is_some());
    o.insert("verdict".into(), plain["verdict"].clone());
    assert_eq!(with, plain);
    // The plain verdict is the busy time's, without steps.
    assert!(
        plain["verdict"]
            .as_str()
            .unwrap()
            .starts_with("B vs A: busy ")
    );
    // Text: the steps' block only with --steps.
    let t = run_ok(&["diff".as_ref(), a.as_ref(), b.as_ref()]);
    assert!(!t.contains("steps (ProfilerStep"));
    let t = run_ok(&["diff".as_ref(), a.as_ref(), b.as_ref(), "--steps".as_ref()]);
    assert!(t.contains("steps (ProfilerStep#<N>): A 16 steps"), "{t}");
    assert!(t.contains("dataloader"), "{t}");
}

#[test]
fn a_summary_has_no_steps_and_says_so() {
    let dir = tmpdir("summary");
    let a = fixture("diff_a.json.gz");
    let s = run_ok(&[
        "trace".as_ref(),
        a.as_ref(),
        "--json".as_ref(),
        "--mergeable".as_ref(),
    ]);
    let s = write(&dir, "a.summary.json", s);
    let r = diff(&a, &s, &["--steps"]);
    assert!(r["steps"].is_null(), "{}", r["steps"]);
    let w: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        w.iter().any(|w| w.starts_with("b: a summary has no steps")),
        "{w:?}"
    );
    // The rest is compared as without --steps.
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .starts_with("B vs A: no significant change"),
        "{}",
        r["verdict"]
    );
}

/// `ProfilerStep#N` steps of 100 ms at constant power: the energy per step is P × 0.1 s.
fn timed(steps: u64, power_w: u32) -> (String, String) {
    let base_ns: u64 = 1_700_000_000_000_000_000;
    let mut t = String::from(
        "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1700000000000000000, \"traceEvents\": [\n",
    );
    for i in 0..steps {
        let ts_us = 1_000 + i * 100_000;
        if i > 0 {
            t.push_str(",\n");
        }
        t.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{i}\", \"pid\": 100, \"tid\": 1, \"ts\": {ts_us}, \"dur\": 100000}},\n\
             {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": {}}}",
            ts_us + 10,
            50_000 + (i % 3) * 1000
        ));
    }
    t.push_str("\n]}\n");
    let mut csv = String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W\n");
    let end_ns = (1_000 + steps * 100_000 + 50_000) * 1000;
    let mut ns = 0;
    while ns <= end_ns {
        csv.push_str(&format!("{ns},{},SAMPLE,,{power_w}\n", base_ns + ns));
        ns += 10_000_000;
    }
    (t, csv)
}

#[test]
fn recordings_give_the_energy_per_step_and_per_unit_of_work() {
    let dir = tmpdir("energy");
    let (ta, ca) = timed(8, 100);
    let (tb, cb) = timed(8, 150);
    let a = write(&dir, "a.json", ta);
    let b = write(&dir, "b.json", tb);
    let csv_a = write(&dir, "a.csv", ca);
    let csv_b = write(&dir, "b.csv", cb);
    let (ca, cb) = (csv_a.to_str().unwrap(), csv_b.to_str().unwrap());
    let r = diff(
        &a,
        &b,
        &["--steps", "--telemetry-a", ca, "--telemetry-b", cb],
    );
    let e = &r["steps"]["energy"];
    // Every step 100 ms: 10 J at 100 W, 15 J at 150 W; the shift 5 J, +50 %.
    let f = |k: &str| e[k].as_f64().unwrap();
    assert!((f("median_j_a") - 10.0).abs() < 1e-9, "{e}");
    assert!((f("median_j_b") - 15.0).abs() < 1e-9, "{e}");
    assert!((f("shift_j") - 5.0).abs() < 1e-6, "{e}");
    assert!((f("change_pct") - 50.0).abs() < 1e-6, "{e}");
    assert_eq!(e["significant"], true);
    let w = &e["per_step"];
    assert_eq!(w["steps"], 8);
    assert!(
        (w["total_j_a"].as_f64().unwrap() - 80.0).abs() < 1e-9,
        "{w}"
    );
    assert!(
        (w["change_pct"].as_f64().unwrap() - 50.0).abs() < 1e-9,
        "{w}"
    );
    let v = r["verdict"].as_str().unwrap();
    assert!(
        v.contains("; energy per step 15.000 J vs 10.000 J (+50.0 %, 95 % CI +"),
        "{v}"
    );
    // The same steps: no change of time.
    assert!(
        v.starts_with("B vs A: no significant change: median step 100.000 ms vs 100.000 ms"),
        "{v}"
    );
    // A constant reading never changes: its update period is unknown, so the steps' energies
    // are not resolvable (docs/steps.md), and a warning per side says so.
    assert!(
        r["warnings"]
            .to_string()
            .contains("a: 8 of 8 steps are not resolvable"),
        "{}",
        r["warnings"]
    );
    // One recording: no energy, said so.
    let r = diff(&a, &b, &["--steps", "--telemetry-a", ca]);
    assert!(r["steps"]["energy"].is_null());
    assert!(r["warnings"].to_string().contains("only A has it"));
}

#[test]
fn a_bad_step_pattern_is_a_usage_error() {
    let a = fixture("diff_a.json.gz");
    for bad in ["", "a\u{1}b"] {
        let out = bin()
            .arg("diff")
            .arg(&a)
            .arg(&a)
            .args(["--step-name", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--step-name"));
    }
}
