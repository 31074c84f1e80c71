//! `flinch-trace trace --pauses` on traces that carry power counters as PyTorch's profiler
//! writes them (docs/join.md, "Power from the trace's counters"): the energies from the
//! counters alone equal those of the same samples given as `--telemetry`, on every read route
//! (small plain, gzip, a large plain file scanned on threads); bad counters counted, never a
//! panic.

use serde_json::Value;

mod common;
use common::{json, run, tmpdir, write};

const BASE: i64 = 1_764_000_000_000_000_000;
const STEP_NS: i64 = 10_000_000;
/// Samples from 0.8 s to 2.7 s: before and after the kernels (1.0 s to 2.5 s).
const GRID0_NS: i64 = 800_000_000;
const SAMPLES: i64 = 191;

/// Device 0: a 300 ms and a 724 ms pause; device 1: a 300 ms pause.
const KERNELS: [(i64, i64, i64); 5] = [
    (0, 1_000_000_000, 1_200_000_500),
    (0, 1_500_000_500, 1_700_000_500),
    (0, 2_424_000_500, 2_500_000_000),
    (1, 1_000_000_000, 2_000_000_000),
    (1, 2_300_000_000, 2_500_000_000),
];

fn sample(device: i64, k: i64) -> (i64, f64, f64) {
    let t = GRID0_NS + k * STEP_NS;
    let busy = KERNELS
        .iter()
        .any(|&(d, a, b)| d == device && a <= t && t < b);
    match (device, busy) {
        (0, true) => (t, 300.5, 90.0),
        (0, false) => (t, 100.25, 0.0),
        (_, true) => (t, 250.0, 95.0),
        (_, false) => (t, 50.0, 3.0),
    }
}

fn us(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// The trace, counters interleaved with kernels in time order; `pad` host events first (for
/// a file large enough to be scanned on threads); `bad` adds counters the join must count.
fn trace(pad: usize, bad: bool) -> String {
    let mut evs: Vec<(i64, String)> = Vec::new();
    for i in 0..pad {
        // Spread among the counters, so that every segment of a threaded scan holds some.
        evs.push((
            (i as i64) * (SAMPLES * STEP_NS / pad.max(1) as i64),
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::pad_{}","pid":9,"tid":9,"ts":{},"dur":1,"args":{{"":1}}}}"#,
                i % 50,
                100 + i % 1000
            ),
        ));
    }
    for &(d, a, b) in &KERNELS {
        evs.push((
            a,
            format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{d}","pid":{d},"tid":7,"ts":{},"dur":{}}}"#,
                us(a),
                us(b - a)
            ),
        ));
    }
    evs.push((
        900_000_000,
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":9,"tid":9,"ts":900000,"dur":1700000}"#.into(),
    ));
    for device in 0..2 {
        for k in 0..SAMPLES {
            let (t, p, u) = sample(device, k);
            evs.push((
                t,
                format!(
                    r#"{{"ph":"C","name":"Power (W)","pid":"GPU {device} Counters","tid":0,"ts":{},"args":{{"":{p}}}}}"#,
                    us(t)
                ),
            ));
            evs.push((
                t,
                format!(
                    r#"{{"ph":"C","name":"SM Active (%)","pid":"GPU {device} Counters","tid":0,"ts":{},"args":{{"":{u}}}}}"#,
                    us(t)
                ),
            ));
        }
    }
    if bad {
        for (pid, v) in [
            ("\"GPU 0 Counters\"", "NaN"),
            ("\"GPU 0 Counters\"", "Infinity"),
            ("\"GPU 0 Counters\"", "\"300\""),
            ("\"GPU 0 Counters\"", "null"),
            ("\"GPU 7000 Counters\"", "300"),
            ("3", "300"),
        ] {
            evs.push((
                1_100_000_000,
                format!(
                    r#"{{"ph":"C","name":"Power (W)","pid":{pid},"ts":1100000,"args":{{"":{v}}}}}"#
                ),
            ));
        }
    }
    // Stable: at equal times, kernels before counters, as sorted above.
    evs.sort_by_key(|e| e.0);
    if bad {
        // Two neighbouring power samples of device 0 swapped: the earlier comes second.
        let at = |ts: &str| {
            evs.iter()
                .position(|e| e.1.contains("GPU 0") && e.1.contains("Power") && e.1.contains(ts))
                .unwrap()
        };
        let (i, j) = (at("\"ts\":1500000.000"), at("\"ts\":1510000.000"));
        evs.swap(i, j);
    }
    let body: Vec<String> = evs.into_iter().map(|e| e.1).collect();
    format!(
        "{{\"schemaVersion\":1,\"baseTimeNanoseconds\":{BASE},\"traceEvents\":[\n{}\n]}}\n",
        body.join(",\n")
    )
}

/// The same samples as a recording.
fn recording() -> String {
    let mut s =
        String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_index\n");
    for k in 0..SAMPLES {
        for device in 0..2 {
            let (t, p, u) = sample(device, k);
            s.push_str(&format!(
                "{},{},SAMPLE,,{p},{u},{device}\n",
                BASE + t - 7,
                BASE + t
            ));
        }
    }
    s
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// (device, energy, avg power, util, verdict) of each pause.
fn figures(v: &Value) -> Vec<Value> {
    v["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let t = &p["telemetry"];
            serde_json::json!([
                p["device"],
                p["duration_ms"],
                t["gpu_energy_j"],
                t["avg_power_w"],
                t["avg_util_pct"],
                t["verdict"]
            ])
        })
        .collect()
}

/// Exact edge-interpolated energy of `device` over trace ns `[t0, t1]` (quarter watts are
/// integers), rounded once.
fn exact_energy_j(device: i64, t0: i64, t1: i64) -> f64 {
    let l = i128::from(STEP_NS);
    let mut num: i128 = 0;
    for k in 0..SAMPLES - 1 {
        let (a, pa, _) = sample(device, k);
        let (b, pb, _) = sample(device, k + 1);
        let (lo, hi) = (a.max(t0), b.min(t1));
        if hi <= lo {
            continue;
        }
        let (pa, pb) = ((pa * 4.0) as i128, (pb * 4.0) as i128);
        let (lo, hi, a) = (i128::from(lo), i128::from(hi), i128::from(a));
        num += 2 * l * pa * (hi - lo) + (pb - pa) * ((hi - a).pow(2) - (lo - a).pow(2));
    }
    num as f64 / (8.0 * l as f64 * 1e9)
}

#[test]
fn counters_alone_give_the_recordings_figures_on_every_route() {
    let d = tmpdir("counters");
    let small = trace(0, false);
    let csv = write(&d, "trace.csv", recording().as_bytes());
    let csv = csv.to_str().unwrap();
    let plain = write(&d, "t.json", small.as_bytes());
    let plain = plain.to_str().unwrap();
    let with_rec = json(&run(&["trace", plain, "--telemetry", csv, "--json"]));
    assert_eq!(with_rec["power_source"], "telemetry");
    assert_eq!(with_rec["trace_counters"]["used"], false);
    for c in with_rec["trace_counters"]["comparison"].as_array().unwrap() {
        assert_eq!(c["disagree"], false);
        assert_eq!(c["telemetry_avg_power_w"], c["counters_avg_power_w"]);
    }
    let want = figures(&with_rec);
    assert_eq!(want.len(), 3);
    // The energies against exact arithmetic.
    for p in with_rec["pauses"].as_array().unwrap() {
        let t0: f64 = p["start_ts_us"].as_f64().unwrap() * 1e3;
        let t0 = t0.round() as i64;
        let t1 = t0 + (p["duration_ms"].as_f64().unwrap() * 1e6).round() as i64;
        let e = p["telemetry"]["gpu_energy_j"].as_f64().unwrap();
        let x = exact_energy_j(p["device"].as_i64().unwrap(), t0, t1);
        assert!((e - x).abs() <= 1e-9 * x, "{e} {x}");
    }
    let gz = write(&d, "t.json.gz", gzip(small.as_bytes()));
    // Over 16 MiB, plain: scanned in segments on threads.
    let big = write(&d, "big.json", trace(200_000, false).as_bytes());
    assert!(std::fs::metadata(&big).unwrap().len() > 16 << 20);
    for (path, threads) in [
        (plain.to_string(), "1"),
        (gz.to_str().unwrap().to_string(), "2"),
        (big.to_str().unwrap().to_string(), "4"),
        (big.to_str().unwrap().to_string(), "1"),
    ] {
        let v = json(&run(&[
            "trace",
            &path,
            "--pauses",
            "--threads",
            threads,
            "--json",
        ]));
        assert_eq!(v["power_source"], "trace_counters", "{path}");
        assert_eq!(figures(&v), want, "{path} --threads {threads}");
        assert_eq!(
            v["annotation_energy"][0]["gpu_energy_j"],
            with_rec["annotation_energy"][0]["gpu_energy_j"]
        );
        let c = &v["trace_counters"];
        assert_eq!(c["used"], true);
        assert_eq!(c["devices"][0]["pid"], "GPU 0 Counters");
        assert_eq!(c["devices"][0]["device"], 0);
        assert_eq!(c["devices"][1]["pid"], "GPU 1 Counters");
        assert_eq!(
            c["devices"][1]["signals"],
            serde_json::json!(["power", "utilization"])
        );
        assert_eq!(c["devices"][1]["power_samples"], SAMPLES);
    }
    // The text view says where the power came from.
    let out = run(&["trace", plain, "--pauses"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "power: from the trace's counters; the trace's counters: \"GPU 0 Counters\" -> device 0"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_counters_are_counted_and_stated() {
    let d = tmpdir("counters-bad");
    let t = write(&d, "t.json", trace(0, true).as_bytes());
    let v = json(&run(&["trace", t.to_str().unwrap(), "--pauses", "--json"]));
    let c = &v["trace_counters"];
    assert_eq!(c["non_finite_values"], 2);
    assert_eq!(c["non_numeric_values"], 2);
    assert_eq!(c["without_device"], 2);
    assert_eq!(c["out_of_order"], 1);
    let warnings: Vec<&str> = v["join_warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "2 of the trace's power/utilization counter samples have a value that is not finite"
        )),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("out of time order: sorted"))
    );
    // Sorted, the samples give the figures of the clean trace.
    let clean = write(&d, "clean.json", trace(0, false).as_bytes());
    let want = json(&run(&[
        "trace",
        clean.to_str().unwrap(),
        "--pauses",
        "--json",
    ]));
    assert_eq!(figures(&v), figures(&want));
    let _ = std::fs::remove_dir_all(&d);
}

/// `--steps` with the join: each step's energy from the trace's counters equals the same
/// samples given as `--telemetry` (the step view reads the join's recording, whichever it is).
#[test]
fn steps_take_their_energy_from_the_counters_as_from_the_recording() {
    let d = tmpdir("counters-steps");
    let csv = write(&d, "trace.csv", recording().as_bytes());
    let plain = write(&d, "t.json", trace(0, false).as_bytes());
    let (csv, plain) = (csv.to_str().unwrap(), plain.to_str().unwrap());
    let with_rec = json(&run(&[
        "trace",
        plain,
        "--telemetry",
        csv,
        "--steps",
        "--json",
    ]));
    let alone = json(&run(&["trace", plain, "--pauses", "--steps", "--json"]));
    assert_eq!(alone["power_source"], "trace_counters");
    let energies = |v: &Value| -> Vec<Value> {
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| serde_json::json!([s["gpu_energy_j"], s["avg_power_w"], s["verdict"]]))
            .collect()
    };
    let want = energies(&with_rec);
    assert_eq!(want.len(), 1);
    assert!(want[0][0].as_f64().unwrap() > 0.0, "{want:?}");
    assert_eq!(energies(&alone), want);
    let _ = std::fs::remove_dir_all(&d);
}

/// The trace with three more steps inside the counters' span (two of them over pauses).
fn trace_with_steps(pad: usize) -> String {
    let t = trace(pad, false);
    let steps = [
        (2, 1_000_000_000, 1_250_000_000),
        (3, 1_250_000_000, 1_700_000_000),
        (4, 1_700_000_000, 2_500_000_000),
    ]
    .map(|(i, a, b)| {
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":9,"tid":9,"ts":{},"dur":{}}}"#,
            us(a),
            us(b - a)
        )
    });
    let end = t.rfind("\n]}").unwrap();
    format!("{},\n{}{}", &t[..end], steps.join(",\n"), &t[end..])
}

/// What a step says of its energy.
fn step_energies(v: &Value) -> Vec<Value> {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            serde_json::json!([
                s["index"],
                s["gpu_energy_j"],
                s["energy_bound_j"],
                s["resolvable"],
                s["avg_power_w"],
                s["verdict"]
            ])
        })
        .collect()
}

/// `--steps` alone (no join): the steps' energies come from the trace's counters, the same as
/// with `--steps --pauses`, on every read route; the output names the counters and has no
/// pauses (no join ran). A trace without counters keeps steps without energy.
#[test]
fn steps_alone_take_their_energy_from_the_counters() {
    let d = tmpdir("counters-steps-alone");
    let small = trace_with_steps(0);
    let plain = write(&d, "t.json", small.as_bytes());
    let plain = plain.to_str().unwrap();
    let joined = json(&run(&["trace", plain, "--pauses", "--steps", "--json"]));
    let want = step_energies(&joined);
    assert_eq!(want.len(), 4);
    assert_eq!(joined["step_summary"]["power_source"], "trace_counters");
    // Each step's energy against exact arithmetic: both devices are busy, so both are charged.
    for s in joined["steps"].as_array().unwrap() {
        let t0 = (s["start_ts_us"].as_f64().unwrap() * 1e3).round() as i64;
        let t1 = t0 + (s["duration_ms"].as_f64().unwrap() * 1e6).round() as i64;
        let x = exact_energy_j(0, t0, t1) + exact_energy_j(1, t0, t1);
        let e = s["gpu_energy_j"].as_f64().unwrap();
        assert!((e - x).abs() <= 1e-9 * x, "{e} {x}");
    }
    let gz = write(&d, "t.json.gz", gzip(small.as_bytes()));
    let big = write(&d, "big.json", trace_with_steps(200_000).as_bytes());
    assert!(std::fs::metadata(&big).unwrap().len() > 16 << 20);
    for (path, threads) in [
        (plain.to_string(), "1"),
        (gz.to_str().unwrap().to_string(), "2"),
        (big.to_str().unwrap().to_string(), "4"),
        (big.to_str().unwrap().to_string(), "1"),
    ] {
        let v = json(&run(&[
            "trace",
            &path,
            "--steps",
            "--threads",
            threads,
            "--json",
        ]));
        assert_eq!(step_energies(&v), want, "{path} --threads {threads}");
        let s = &v["step_summary"];
        assert_eq!(s["gpu_energy_j"], joined["step_summary"]["gpu_energy_j"]);
        assert_eq!(
            s["update_periods"],
            joined["step_summary"]["update_periods"]
        );
        assert_eq!(s["power_source"], "trace_counters");
        assert_eq!(s["trace_counters"]["used"], true);
        assert_eq!(s["trace_counters"]["devices"][1]["pid"], "GPU 1 Counters");
        assert!(v.get("pauses").is_none() && v.get("power_source").is_none());
    }
    let out = run(&["trace", plain, "--steps"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("steps' power: from the trace's counters: \"GPU 0 Counters\" -> device 0"),
        "{text}"
    );
    let without = small.replace("\"ph\":\"C\"", "\"ph\":\"i\"");
    let none = write(&d, "none.json", without.as_bytes());
    let v = json(&run(&[
        "trace",
        none.to_str().unwrap(),
        "--steps",
        "--json",
    ]));
    assert_eq!(v["steps"].as_array().unwrap().len(), 4);
    assert!(
        v["steps"][0].get("gpu_energy_j").is_none(),
        "{}",
        v["steps"][0]
    );
    assert!(v["step_summary"].get("power_source").is_none());
    let _ = std::fs::remove_dir_all(&d);
}
