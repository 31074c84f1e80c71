//! End-to-end tests of `flinch-trace trace --steps [--step-name P] [--telemetry CSV]`: the
//! JSON keys after the summary's, the text output, the exit status of a bad pattern (2), a
//! trace without a matching step (an empty list and a note, exit 0), and with a recording the
//! joined pauses inside the slow step.

use serde_json::Value;

mod common;
use common::{json, run, tmpdir, write};

const BASE: i64 = 1_764_000_000_000_000_000;

/// 12 steps of ~17.8 ms, two (4 and 9) of 274 ms stalled in the data loader; kernels and NCCL
/// on two streams, a runtime call; events shuffled out of time order.
fn trace() -> String {
    let mut evs: Vec<String> = Vec::new();
    let mut t = 1000.0f64;
    for s in 0..12 {
        let slow = s == 4 || s == 9;
        let d = if slow {
            274_000.0
        } else {
            17_800.0 + f64::from(s)
        };
        let load = if slow { 255_000.0 } else { 1000.0 };
        let ev = |cat: &str, name: &str, pid: u32, tid: u32, ts: f64, dur: f64| {
            format!(
                r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts:.3},"dur":{dur:.3}}}"#
            )
        };
        evs.push(ev("kernel", "sgemm", 0, 7, t + 100.0, 3000.0));
        evs.push(ev(
            "cpu_op",
            "enumerate(DataLoader)#_next",
            1,
            1,
            t + 6000.0,
            load,
        ));
        evs.push(ev(
            "user_annotation",
            &format!("ProfilerStep#{s}"),
            1,
            1,
            t,
            d,
        ));
        evs.push(ev(
            "kernel",
            "ncclDevKernel_AllReduce",
            0,
            8,
            t + 2000.0,
            3000.0,
        ));
        evs.push(ev("cpu_op", "aten::mm", 1, 1, t + 1.0, 5000.5));
        evs.push(ev("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 50.0, 10.0));
        t += d + 10.0;
    }
    format!(
        r#"{{"baseTimeNanoseconds":{BASE},"traceEvents":[{}]}}"#,
        evs.join(",\n")
    )
}

#[test]
fn steps_json_text_and_errors() {
    let d = tmpdir("steps");
    let t = write(&d, "t.json", trace());
    let t = t.to_str().unwrap();
    let out = run(&["trace", t, "--steps", "--json"]);
    let v = json(&out);
    // The summary's keys are those of plain `trace --json`, then the steps' (in the text: the
    // parsed maps sort their keys).
    let plain = json(&run(&["trace", t, "--json"]));
    assert_eq!(
        v.as_object().unwrap().len(),
        plain.as_object().unwrap().len() + 2
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).unwrap();
    assert!(at("warning_counts") < at("steps") && at("steps") < at("step_summary"));
    assert!(text.trim_end().ends_with('}'));
    for (k, val) in plain.as_object().unwrap() {
        assert_eq!(&v[k], val, "{k}");
    }
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    assert_eq!(steps[4]["breakdown_ms"]["dataloader"], 255.0);
    assert_eq!(steps[4]["breakdown_ms"]["kernel"], 3.0);
    assert_eq!(steps[4]["start_ts_us"], 72246.0);
    let sum = &v["step_summary"];
    let outliers: Vec<u64> = sum["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["index"].as_u64().unwrap())
        .collect();
    assert_eq!(outliers, [4, 9]);
    assert_eq!(sum["outliers"][0]["largest_part"], "dataloader");
    assert_eq!(
        sum["outliers"][0]["top_host_ops"][0]["name"],
        "enumerate(DataLoader)#_next"
    );

    let text = run(&["trace", t, "--steps"]);
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("steps (ProfilerStep#<N>): 12, median 17.806 ms"),
        "{text}"
    );
    assert!(text.contains("median step (ms): kernel 3.000"), "{text}");
    assert!(text.contains("+254.000 ms dataloader"), "{text}");

    // --step-name implies --steps; no match: an empty list and a note, exit 0.
    let none = json(&run(&["trace", t, "--step-name", "train_step", "--json"]));
    assert_eq!(none["steps"], Value::Array(vec![]));
    assert!(
        none["step_summary"]["note"]
            .as_str()
            .unwrap()
            .contains("no steps")
    );
    let one = json(&run(&["trace", t, "--step-name", "*Step#1?", "--json"]));
    assert_eq!(one["steps"].as_array().unwrap().len(), 0);
    let glob = json(&run(&["trace", t, "--step-name", "*Step#1*", "--json"]));
    let names: Vec<&str> = glob["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["ProfilerStep#1", "ProfilerStep#10", "ProfilerStep#11"]
    );

    // A bad pattern is a usage error.
    let bad = run(&["trace", t, "--steps", "--step-name", ""]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("empty pattern"));

    // With the join: the pauses inside the slow steps (the GPU idles ~268 ms in each).
    let j = json(&run(&["trace", t, "--steps", "--pauses", "--json"]));
    let o = &j["step_summary"]["outliers"][0];
    assert!(!o["pauses"].as_array().unwrap().is_empty(), "{o}");
    assert!(j["pauses"].is_array());
    assert!(j["steps"][0].get("gpu_energy_j").is_none());
}
