//! End-to-end tests of `flinch-trace trace --pauses / --telemetry` on a generated trace and
//! recording whose truth is known (docs/join.md): pause lengths and host overlaps in exact ns,
//! the pause energy equal to `analyze --json`'s `energy_edge_j` for the same window, the summary
//! keys unchanged, and the errors.
use std::path::Path;

use serde_json::Value;

mod common;
use common::{json, repo, run, tmpdir, write};

const BASE: i64 = 1_764_000_000_000_000_000;
const MONO_SKEW: i64 = 1_763_999_000_000_000_000;
const GRID0_NS: i64 = 1_000_000_500;
const STEP_NS: i64 = 10_000_000;

/// Kernels with a 300 ms and a 724 ms pause on device 0; host work inside them.
fn trace(base: Option<i64>) -> String {
    let evs = [
        r#"{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1000000.5,"dur":200000}"#,
        r#"{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":8,"ts":1500000.5,"dur":200000}"#,
        r#"{"ph":"X","cat":"gpu_memset","name":"Memset","pid":0,"tid":8,"ts":2424000.5,"dur":76000}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":9,"tid":9,"ts":900000,"dur":2000000}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::item","pid":9,"tid":9,"ts":1250000.5,"dur":200000}"#,
        r#"{"ph":"X","cat":"python_function","name":"dataloader next","pid":9,"tid":10,"ts":1750000.5,"dur":600000}"#,
    ];
    let b = base.map_or(String::new(), |b| format!(r#","baseTimeNanoseconds":{b}"#));
    format!(
        "{{\"traceEvents\":[\n{}\n],\"traceName\":\"t\"{b}}}\n",
        evs.join(",\n")
    )
}

/// 100 W / 0 % inside the pauses, 300 W / 90 % elsewhere, every 10 ms; MARK rows at the
/// 724 ms pause's edges.
fn recording() -> String {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    let mut rows = Vec::new();
    for k in 0..151i64 {
        let t = GRID0_NS + k * STEP_NS;
        let idle = (1_200_000_500..=1_500_000_500).contains(&t)
            || (1_700_000_500..=2_424_000_500).contains(&t);
        let (p, u) = if idle { (100, 0) } else { (300, 90) };
        rows.push((
            t,
            format!(
                "{},{},SAMPLE,,{p},{u},,,,,0\n",
                BASE + t - MONO_SKEW,
                BASE + t
            ),
        ));
    }
    for (t, label) in [(1_700_000_500i64, "b_start"), (2_424_000_500, "b_end")] {
        rows.push((
            t,
            format!(
                "{},{},MARK,{label},,,,,,,\n",
                BASE + t - MONO_SKEW,
                BASE + t
            ),
        ));
    }
    rows.sort_by_key(|r| r.0);
    for r in rows {
        s.push_str(&r.1);
    }
    s
}

#[test]
fn pauses_telemetry_and_analyze_agree() {
    let d = tmpdir("agree");
    let t = write(&d, "trace.json", trace(Some(BASE)));
    let c = write(&d, "trace.csv", recording());
    let (t, c) = (t.to_str().unwrap(), c.to_str().unwrap());
    let v = json(&run(&["trace", t, "--telemetry", c, "--json"]));
    assert_eq!(v["alignment"]["source"], "baseTimeNanoseconds");
    assert_eq!(v["alignment"]["offset_ns"], BASE);
    let p = v["pauses"].as_array().unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["duration_ms"], 724.0);
    assert_eq!(p[0]["start_ts_us"], 1_700_000.5);
    assert_eq!(p[0]["start_unix_ns"], BASE + 1_700_000_500);
    assert_eq!(p[0]["host"][0]["name"], "dataloader next");
    assert_eq!(p[0]["host"][0]["overlap_ms"], 600.0);
    assert_eq!(p[0]["within"][0]["name"], "ProfilerStep#1");
    assert_eq!(p[1]["duration_ms"], 300.0);
    assert_eq!(p[1]["host"][0]["name"], "aten::item");
    let e = p[0]["telemetry"]["gpu_energy_j"].as_f64().unwrap();
    // 0.72 s at 100 W, then 4 ms from 100 W to the interpolated 180 W.
    assert!((e - 72.56).abs() < 1e-9, "{e}");
    assert_eq!(p[0]["telemetry"]["verdict"]["verdict"], "waiting");

    // analyze --json over the same window (marks at the pause's edges): the same bits.
    let a = json(&run(&[
        "analyze", "--csv", c, "--start", "b_start", "--end", "b_end", "--json",
    ]));
    let ea = a["window"]["gpus"][0]["energy_edge_j"].as_f64().unwrap();
    assert_eq!(ea.to_bits(), e.to_bits());
    assert_eq!(
        a["window"]["gpus"][0]["verdict"],
        p[0]["telemetry"]["verdict"]
    );

    let ae = v["annotation_energy"].as_array().unwrap();
    // Names differing only by a trailing #N are one row (per-step figures: --steps).
    assert_eq!(ae[0]["name"], "ProfilerStep#*");
    assert_eq!(ae[0]["n"], 1);

    // The summary's own keys are those of plain `trace --json`.
    let plain = json(&run(&["trace", t, "--json"]));
    for (k, val) in plain.as_object().unwrap() {
        assert_eq!(&v[k], val, "{k}");
    }
    assert!(plain.get("pauses").is_none());

    // From the trace alone: the same pauses, no telemetry.
    let alone = json(&run(&["trace", t, "--min-gap-ms", "300", "--json"]));
    let q = alone["pauses"].as_array().unwrap();
    assert_eq!(q.len(), 2, "the 300 ms gap is at least 300 ms");
    assert!(q[0].get("telemetry").is_none());
    assert!(alone.get("annotation_energy").is_none());
    let alone = json(&run(&["trace", t, "--min-gap-ms", "300.001", "--json"]));
    assert_eq!(alone["pauses"].as_array().unwrap().len(), 1);

    // Text: the pauses table after the summary.
    let out = run(&["trace", t, "--telemetry", c]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let cat = text.find("category").unwrap();
    let top = text.find("top pauses:").unwrap();
    assert!(top > cat, "{text}");
    assert!(text.contains("724.000"), "{text}");
    assert!(text.contains("energy per annotation:"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn clock_offset_gpu_map_and_errors() {
    let d = tmpdir("offset");
    let t0 = write(&d, "nobase.json", trace(None));
    let c = write(&d, "trace.csv", recording());
    let (t0, c) = (t0.to_str().unwrap(), c.to_str().unwrap());
    // No base: a clear error naming the option, exit 1.
    let out = run(&["trace", t0, "--telemetry", c, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--clock-offset-ms"));
    // With the offset in ms (BASE ns = 1764000000000000 ms).
    let v = json(&run(&[
        "trace",
        t0,
        "--telemetry",
        c,
        "--clock-offset-ms",
        "1764000000000",
        "--json",
    ]));
    assert_eq!(v["alignment"]["source"], "clock_offset");
    let e = v["pauses"][0]["telemetry"]["gpu_energy_j"]
        .as_f64()
        .unwrap();
    assert!((e - 72.56).abs() < 1e-9, "{e}");
    // A skewed base corrected by a negative offset.
    let ts = write(&d, "skew.json", trace(Some(BASE + 2_500_000)));
    let v = json(&run(&[
        "trace",
        ts.to_str().unwrap(),
        "--telemetry",
        c,
        "--clock-offset-ms",
        "-2.5",
        "--json",
    ]));
    assert_eq!(v["alignment"]["offset_ns"], BASE);
    assert_eq!(
        v["pauses"][0]["telemetry"]["gpu_energy_j"].as_f64(),
        Some(e)
    );
    // An hour off: a warning that the files do not overlap.
    let v = json(&run(&[
        "trace",
        ts.to_str().unwrap(),
        "--telemetry",
        c,
        "--clock-offset-ms",
        "3600000",
        "--json",
    ]));
    let w = v["join_warnings"].to_string();
    assert!(w.contains("do not overlap"), "{w}");
    // --gpu-map to a GPU the recording lacks.
    let v = json(&run(&[
        "trace",
        ts.to_str().unwrap(),
        "--telemetry",
        c,
        "--clock-offset-ms",
        "-2.5",
        "--gpu-map",
        "0=3",
        "--json",
    ]));
    assert!(v["pauses"][0].get("telemetry").is_none());
    assert!(v["join_warnings"].to_string().contains("gpu_index 3"));
    // Bad options: usage errors (exit 2) naming the option.
    for bad in [
        &["--gpu-map", "0:3"][..],
        &["--clock-offset-ms", "1e3"],
        &["--clock-offset-ms", "-x"],
        &["--min-gap-ms", "-1"],
        &["--min-gap-ms", "nan"],
        &["--min-gap-ms", "-inf"],
        &["--top-pauses", "-3"],
    ] {
        let mut args = vec!["trace", t0, "--json"];
        args.extend_from_slice(bad);
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{bad:?}: {err}");
        assert!(out.stdout.is_empty(), "{bad:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Decompresses a bundled `.json.gz` with the core's decoder (the test's own copy).
fn gunzip(path: &Path) -> Vec<u8> {
    use flinch_core::gzip::{GzDecoder, GzStatus};
    let data = std::fs::read(path).unwrap();
    let mut dec = GzDecoder::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = 0;
    loop {
        let (st, nin, nout) = dec.decode(&data[pos..], &mut buf).unwrap();
        pos += nin;
        out.extend_from_slice(&buf[..nout]);
        if st == GzStatus::Done || (nin == 0 && nout == 0) {
            break;
        }
    }
    out
}

/// Real Kineto traces (no recording exists for them): `baseTimeNanoseconds` read where it sits
/// (after `traceEvents` in three, before it in one), and the GPU pauses of the HTA benchmark
/// trace against an oracle over the parsed JSON (f64 µs, so to 1 µs).
#[test]
fn real_traces_base_and_pauses() {
    let root = repo().join("tests/traces/HolisticTraceAnalysis");
    for (name, base, before) in [
        (
            "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            1_735_632_360_000_000_000i64,
            false,
        ),
        (
            "mtia_inference_rank_0.json.gz",
            1_767_189_312_000_000_000,
            true,
        ),
        (
            "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
            1_719_853_884_000_000_000,
            false,
        ),
        ("triton_example.json.gz", 1_727_743_122_000_000_000, false),
    ] {
        let text = String::from_utf8(gunzip(&root.join(name))).unwrap();
        let (b, e) = (
            text.find("baseTimeNanoseconds").unwrap(),
            text.find("traceEvents").unwrap(),
        );
        assert_eq!(b < e, before, "{name}");
        let v = json(&run(&[
            "trace",
            root.join(name).to_str().unwrap(),
            "--pauses",
            "--json",
        ]));
        assert_eq!(v["alignment"]["base_time_ns"], base, "{name}");
        assert_eq!(v["alignment"]["source"], "baseTimeNanoseconds");
    }
    let path = root.join("benchmark_result_2869224_1695835535_trace.json.gz");
    let doc: Value = serde_json::from_slice(&gunzip(&path)).unwrap();
    let mut busy: Vec<(f64, f64)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && matches!(
                    e["cat"].as_str(),
                    Some("kernel" | "gpu_memcpy" | "gpu_memset")
                )
                && e["pid"] == 0
        })
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap())
        })
        .collect();
    busy.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::new();
    for (s, t) in busy {
        match merged.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(t),
            _ => merged.push((s, t)),
        }
    }
    let mut want: Vec<f64> = merged
        .windows(2)
        .map(|w| (w[1].0 - w[0].1) / 1000.0)
        .filter(|&ms| ms >= 10.0)
        .collect();
    want.sort_by(|a, b| b.total_cmp(a));
    let v = json(&run(&[
        "trace",
        path.to_str().unwrap(),
        "--min-gap-ms",
        "10",
        "--json",
    ]));
    assert!(
        v["alignment"].is_null(),
        "no baseTimeNanoseconds in this trace"
    );
    let got: Vec<f64> = v["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["duration_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(want.len() >= 5);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-3, "{got:?} vs {want:?}");
    }
}

/// `--perfetto`: every original event unchanged and in order, the recording's counters and
/// marks on the trace's clock, the other top-level keys kept; `trace` reads the merged file
/// (plain and gzip) back with the original categories and the same pauses.
#[test]
fn perfetto_merge_reads_back() {
    let d = tmpdir("perfetto");
    let t = write(&d, "trace.json", trace(Some(BASE)));
    let c = write(&d, "trace.csv", recording());
    let (t, c) = (t.to_str().unwrap(), c.to_str().unwrap());
    let original: Value = serde_json::from_str(&trace(Some(BASE))).unwrap();
    let plain = json(&run(&["trace", t, "--pauses", "--json"]));
    for name in ["merged.json", "merged.json.gz"] {
        let out = d.join(name);
        let o = out.to_str().unwrap();
        let joined = json(&run(&[
            "trace",
            t,
            "--telemetry",
            c,
            "--perfetto",
            o,
            "--json",
        ]));
        assert_eq!(joined["pauses"][0]["duration_ms"], 724.0);
        let bytes = if name.ends_with(".gz") {
            gunzip(&out)
        } else {
            std::fs::read(&out).unwrap()
        };
        let merged: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(merged["baseTimeNanoseconds"], BASE);
        assert_eq!(merged["traceName"], "t");
        let evs = merged["traceEvents"].as_array().unwrap();
        let ours = |e: &&Value| e["cat"].as_str().is_some_and(|c| c.starts_with("flinch_"));
        let kept: Vec<&Value> = evs.iter().filter(|e| !ours(e)).collect();
        let want: Vec<&Value> = original["traceEvents"].as_array().unwrap().iter().collect();
        assert_eq!(kept, want);
        let counters: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "C").collect();
        // 151 samples, each with power and utilization.
        assert_eq!(counters.len(), 302);
        assert_eq!(counters[0]["name"], "GPU 0 power");
        assert_eq!(counters[0]["pid"], 0);
        assert_eq!(counters[0]["ts"], 1_000_000.5);
        assert_eq!(counters[0]["args"]["W"], 300.0);
        // The b_start/b_end pair is one slice (no mark_thread: on the first lane of the
        // marks' process), not two instants.
        let marks: Vec<&Value> = evs.iter().filter(|e| e["cat"] == "flinch_mark").collect();
        assert_eq!(marks.len(), 1, "{marks:?}");
        assert_eq!(
            (&marks[0]["ph"], &marks[0]["name"]),
            (&Value::from("X"), &Value::from("b"))
        );
        assert_eq!(marks[0]["pid"], 2_147_483_645);
        assert_eq!(marks[0]["tid"], 1 << 30);
        assert_eq!(marks[0]["ts"], 1_700_000.5);
        assert_eq!(marks[0]["dur"], 724_000.0);
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains(r#""ts":1700000.500,"dur":724000.000}"#),
            "exact ts and dur"
        );
        // Read back: the original categories unchanged, the same pauses.
        let back = json(&run(&["trace", o, "--pauses", "--json"]));
        let cats = |v: &Value| -> Vec<(String, Value)> {
            v["categories"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| !k.starts_with("flinch_"))
                .map(|(k, c)| (k.clone(), c.clone()))
                .collect()
        };
        assert_eq!(cats(&back), cats(&plain));
        // The same pauses; the marks' slice is context there (an annotation that covers it).
        // Without a recording, the merged file's own counters give each pause the energy the
        // recording gave it (the round trip of docs/join.md, "Power from the trace's counters").
        let mut pauses = back["pauses"].clone();
        let p0 = pauses[0]["within"].as_array_mut().unwrap();
        assert_eq!(p0[0]["name"], "b");
        assert_eq!(p0[0]["category"], "flinch_mark");
        p0.remove(0);
        assert_eq!(back["power_source"], "trace_counters");
        let dev = &back["trace_counters"]["devices"][0];
        assert_eq!(
            (&dev["pid"], &dev["device"], &dev["recorded_gpu_index"]),
            (&Value::from(0), &Value::from(0), &Value::from(0))
        );
        assert_eq!(dev["power_counter"], "GPU 0 power");
        let pauses = pauses.as_array_mut().unwrap();
        for (p, j) in pauses.iter_mut().zip(joined["pauses"].as_array().unwrap()) {
            let t = p.as_object_mut().unwrap().remove("telemetry").unwrap();
            for key in ["gpu_energy_j", "avg_power_w", "avg_util_pct", "verdict"] {
                assert_eq!(t[key], j["telemetry"][key], "{key}");
            }
        }
        assert_eq!(Value::from(pauses.clone()), plain["pauses"]);
        assert_eq!(
            back["annotation_energy"][0]["gpu_energy_j"],
            joined["annotation_energy"][0]["gpu_energy_j"]
        );
    }
    // Without an alignment, or onto the trace itself: errors.
    let nobase = write(&d, "nobase.json", trace(None));
    let out = run(&[
        "trace",
        nobase.to_str().unwrap(),
        "--telemetry",
        c,
        "--perfetto",
        d.join("x.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let out = run(&["trace", t, "--telemetry", c, "--perfetto", t]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the trace being read"));
    assert_eq!(
        json(&run(&["trace", t, "--json"]))["totals"],
        plain["totals"],
        "the trace is intact"
    );
    let _ = std::fs::remove_dir_all(&d);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A trace cut inside an event (a cut `.gz`, a cut plain file, a cut bare array): the merged
/// file is still valid JSON, closed after the last whole event, with a note saying so; the exit
/// status is the summary's for a cut input (0, `truncated: true`).
#[test]
fn perfetto_from_a_cut_trace_is_valid_json_with_a_note() {
    let d = tmpdir("perfetto-cut");
    let c = write(&d, "trace.csv", recording());
    let c = c.to_str().unwrap();
    // Many events, so that the cut falls well inside the events array.
    let mut evs: Vec<String> = (0..4000)
        .map(|i| {
            format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{i}","pid":0,"tid":7,"ts":{},"dur":100,"args":{{"pad":"{}"}}}}"#,
                1_000_000 + i * 300,
                "x".repeat(40)
            )
        })
        .collect();
    evs.insert(
        1,
        r#"{"ph":"X","cat":"cpu_op","name":"host","pid":9,"tid":9,"ts":1000000,"dur":5}"#.into(),
    );
    let body = evs.join(",\n");
    let object = format!("{{\"baseTimeNanoseconds\":{BASE},\"traceEvents\":[\n{body}\n]}}\n");
    let bare = format!("[\n{body}\n]\n");
    let gz = gzip(object.as_bytes());
    let cases: [(&str, Vec<u8>, bool); 3] = [
        ("cut.json.gz", gz[..gz.len() * 2 / 3].to_vec(), false),
        (
            "cut.json",
            object.as_bytes()[..object.len() / 2].to_vec(),
            false,
        ),
        (
            "cutbare.json",
            bare.as_bytes()[..bare.len() / 2].to_vec(),
            true,
        ),
    ];
    for (name, bytes, is_bare) in cases {
        let t = d.join(name);
        std::fs::write(&t, &bytes).unwrap();
        let out = d.join("merged.json");
        let mut args = vec!["trace", t.to_str().unwrap(), "--telemetry", c, "--json"];
        let o = out.to_str().unwrap();
        args.extend(["--perfetto", o]);
        if is_bare {
            args.extend(["--clock-offset-ms", "1764000000000"]);
        }
        let r = run(&args);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let v: Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(v["truncated"], true, "{name}");
        let text = std::fs::read_to_string(&out).unwrap();
        let merged: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "{name}: the merged file is not JSON: {e}; ends {:?}",
                &text[text.len().saturating_sub(200)..]
            )
        });
        let evs = if is_bare {
            merged.as_array().unwrap().clone()
        } else {
            assert_eq!(merged["baseTimeNanoseconds"], BASE);
            merged["traceEvents"].as_array().unwrap().clone()
        };
        let note: Vec<&Value> = evs
            .iter()
            .filter(|e| e["name"] == "flinch_trace_truncated")
            .collect();
        assert_eq!(note.len(), 1, "{name}");
        assert_eq!(note[0]["args"]["truncated"], true);
        let kernels = evs.iter().filter(|e| e["cat"] == "kernel").count() as u64;
        let n = v["totals"]["events"].as_u64().unwrap();
        // Every whole event the summary read is kept (the cut one is not).
        assert_eq!(kernels + 1, n, "{name}");
        let said = note[0]["args"]["note"].as_str().unwrap();
        assert!(said.contains(&format!("({n} events read)")), "{said}");
        if name.ends_with(".gz") {
            assert!(said.contains("gzip"), "{said}");
        }
        assert!(
            v["join_warnings"]
                .to_string()
                .contains("the merged file ends after the last whole event")
        );
        // The merged file reads back whole.
        let back = json(&run(&["trace", o, "--json"]));
        assert_eq!(back["truncated"], false, "{name}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A base of -9e18 ns: the recording's 2025 wall times leave the trace's i64 ns clock. Those
/// rows are left out and counted, never written with a wrapped `ts`.
#[test]
fn perfetto_skips_rows_outside_the_trace_clock() {
    let d = tmpdir("perfetto-range");
    let t = write(&d, "trace.json", trace(Some(-9_000_000_000_000_000_000)));
    let c = write(&d, "trace.csv", recording());
    let out = d.join("merged.json");
    let r = run(&[
        "trace",
        t.to_str().unwrap(),
        "--telemetry",
        c.to_str().unwrap(),
        "--perfetto",
        out.to_str().unwrap(),
        "--json",
    ]);
    let v = json(&r);
    let merged: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let ours: Vec<&Value> = merged["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["cat"].as_str().is_some_and(|c| c.starts_with("flinch_")) && e.get("ts").is_some()
        })
        .collect();
    assert!(
        ours.is_empty(),
        "no recording row fits the clock: {:?}",
        ours.first()
    );
    let w = v["join_warnings"].to_string();
    assert!(
        w.contains("153 recording rows fall outside the trace's clock"),
        "{w}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Epoch-scale trace times print exactly, from their integer ns: an f64 would print
/// 1712195495505582.988 as 1712195495505583.0.
#[test]
fn epoch_scale_timestamps_print_exactly() {
    let d = tmpdir("epoch");
    let evs = [
        r#"{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":1712195495405582.988,"dur":100000}"#,
        r#"{"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":1712195495705582.001,"dur":10}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":1712195495400000.5,"dur":900000}"#,
    ];
    let t = write(
        &d,
        "epoch.json",
        format!("{{\"traceEvents\":[{}]}}", evs.join(",")),
    );
    let out = run(&["trace", t.to_str().unwrap(), "--pauses", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        r#""start_ts_us": 1712195495505582.988"#,
        r#""busy_start_ts_us": 1712195495405582.988"#,
        r#""busy_end_ts_us": 1712195495705592.001"#,
        r#""start_ts_us": 1712195495400000.5"#,
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    let v = json(&out);
    assert_eq!(v["pauses"][0]["duration_ms"], 199.999013);
    // The text table shows the same digits.
    let out = run(&["trace", t.to_str().unwrap(), "--pauses"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("1712195495505582.988"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A base that is not an integer says what it is; a base plus an overflowing offset says that
/// it overflows (exit 1, one line naming --clock-offset-ms).
#[test]
fn base_time_errors_say_what_was_found() {
    let d = tmpdir("basetext");
    let c = write(&d, "trace.csv", recording());
    let c = c.to_str().unwrap();
    let body = trace(None);
    let with = |v: &str| {
        body.replacen(
            "\"traceName\":\"t\"",
            &format!("\"traceName\":\"t\",\"baseTimeNanoseconds\":{v}"),
            1,
        )
    };
    for (v, said) in [
        (
            "1.76e18",
            "baseTimeNanoseconds is 1.76e18, not an integer: give --clock-offset-ms",
        ),
        (
            "\"1764000000000000000\"",
            "baseTimeNanoseconds is a string, not an integer",
        ),
        (
            "1764000000000000000.25",
            "baseTimeNanoseconds is 1764000000000000000.25, not an integer",
        ),
        (
            "17640000000000000000",
            "baseTimeNanoseconds is 17640000000000000000, past the i64 range",
        ),
    ] {
        let t = write(&d, "t.json", with(v));
        let t = t.to_str().unwrap();
        for extra in [&[][..], &["--perfetto", d.join("m.json").to_str().unwrap()]] {
            let mut args = vec!["trace", t, "--telemetry", c, "--json"];
            args.extend_from_slice(extra);
            let out = run(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{v}: {err}");
            assert!(err.contains(said), "{v} {extra:?}: {err}");
        }
    }
    let t = write(&d, "t.json", trace(Some(BASE)));
    let out = run(&[
        "trace",
        t.to_str().unwrap(),
        "--telemetry",
        c,
        "--clock-offset-ms",
        "8000000000000",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("plus --clock-offset-ms 8000000000000.0 overflows"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `--min-gap-ms 0` asks for every idle gap (HTA's idle time): kernels that touch leave no gap
/// (none of zero length is listed), and every positive gap is, 1 ns ones too, with no warning of
/// a raised minimum.
#[test]
fn min_gap_zero_lists_every_idle_gap_and_no_empty_one() {
    let d = tmpdir("mingap0");
    let evs = [
        // Busy [1000, 1100) and [1100, 1200) touch: no gap between them.
        r#"{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":1000,"dur":100}"#,
        r#"{"ph":"X","cat":"kernel","name":"b","pid":0,"tid":8,"ts":1100,"dur":100}"#,
        // A 0.001 µs (1 ns) gap, then a 50 µs one.
        r#"{"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":1200.001,"dur":49.999}"#,
        r#"{"ph":"X","cat":"kernel","name":"d","pid":0,"tid":7,"ts":1300,"dur":10}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"h","pid":9,"tid":9,"ts":1250,"dur":50}"#,
    ];
    let t = write(
        &d,
        "t.json",
        format!("{{\"traceEvents\":[\n{}\n]}}\n", evs.join(",\n")),
    );
    let v = json(&run(&[
        "trace",
        t.to_str().unwrap(),
        "--min-gap-ms",
        "0",
        "--json",
    ]));
    let dev = &v["pause_devices"][0];
    assert_eq!(dev["min_gap_ms"], 0.0, "{dev}");
    let pauses: Vec<(f64, f64)> = v["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["start_ts_us"].as_f64().unwrap(),
                p["duration_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pauses,
        [(1250.0, 0.05), (1200.0, 0.000001)],
        "{}",
        v["pauses"]
    );
    assert_eq!(dev["pauses_found"], 2);
    assert_eq!(v["join_warnings"], serde_json::json!([]), "{v}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Non-finite power inside a pause (nan, inf, text) is left out of its energy, as `analyze`
/// leaves it out of `energy_edge_j` (the power is bridged between the finite readings around
/// it), and counted: per pause and per annotation name, and in one warning with the first line,
/// as `analyze` words it.
#[test]
fn non_finite_power_in_a_pause_is_counted_and_left_out_as_analyze_does() {
    let d = tmpdir("nonfinite");
    let t = write(&d, "trace.json", trace(Some(BASE)));
    // Three readings inside the 724 ms pause (at 1.80, 1.81 and 1.82 s) are not numbers.
    let mut text = String::new();
    let mut bad_lines = Vec::new();
    for (i, line) in recording().lines().enumerate() {
        let bad = ["nan", "inf", "N/A"]
            .iter()
            .zip([1_800_000_500i64, 1_810_000_500, 1_820_000_500])
            .find(|(_, t)| line.starts_with(&format!("{},", BASE + t - MONO_SKEW)));
        match bad {
            Some((p, _)) => {
                text.push_str(&line.replacen(",SAMPLE,,100,", &format!(",SAMPLE,,{p},"), 1));
                bad_lines.push(i + 1);
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    assert_eq!(bad_lines.len(), 3);
    let c = write(&d, "trace.csv", &text);
    let (t, c) = (t.to_str().unwrap(), c.to_str().unwrap());
    let v = json(&run(&["trace", t, "--telemetry", c, "--json"]));
    let p = &v["pauses"][0];
    assert_eq!(p["duration_ms"], 724.0);
    let tel = &p["telemetry"];
    let e = tel["gpu_energy_j"].as_f64().expect("an energy, not null");
    assert_eq!(tel["non_finite_power_readings"], 3, "{tel}");
    assert!(
        v["pauses"][1]["telemetry"]
            .get("non_finite_power_readings")
            .is_none()
    );
    let a = json(&run(&[
        "analyze", "--csv", c, "--start", "b_start", "--end", "b_end", "--json",
    ]));
    let ea = a["window"]["gpus"][0]["energy_edge_j"].as_f64().unwrap();
    assert_eq!(ea.to_bits(), e.to_bits());
    assert_eq!(a["window"]["gpus"][0]["verdict"], tel["verdict"]);
    let ann = &v["annotation_energy"][0];
    assert_eq!(ann["name"], "ProfilerStep#*");
    assert!(ann["gpu_energy_j"].as_f64().is_some(), "{ann}");
    assert_eq!(ann["non_finite_power_readings"], 3, "{ann}");
    // One warning, with analyze's words and the first line.
    let want = format!(
        "3 gpu_power_W values are not finite numbers (nan, inf or text): left out of the edge energy, idle floor and verdict (the reference figures take nan and inf as Python does); first at line {}",
        bad_lines[0]
    );
    assert_eq!(a["warnings"], serde_json::json!([want.clone()]));
    let warned: Vec<&str> = v["join_warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("not finite"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", v["join_warnings"]);
    assert!(
        warned[0].starts_with(&format!("the recording's {}", &want[..2])),
        "{}",
        warned[0]
    );
    assert!(
        warned[0].ends_with(&format!("first at line {}", bad_lines[0])),
        "{}",
        warned[0]
    );
    // The text view says it too.
    let out = run(&["trace", t, "--telemetry", c]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not finite"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A real recording made without a GPU (examples/host-only) joined with a trace of the same
/// time: no pause lists a phantom GPU's telemetry, no device names a recorded GPU, and why is
/// said once, in `gpu_energy_note` and in the text.
#[test]
fn a_recording_without_gpu_readings_says_why_once() {
    let d = tmpdir("hostonly");
    // Kernels over the recording's time (its t_wall_ns start at 1795987818012798571).
    let evs = [
        r#"{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":100000,"dur":200000}"#,
        r#"{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":1500000,"dur":200000}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"step","pid":9,"tid":9,"ts":50000,"dur":2000000}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::item","pid":9,"tid":9,"ts":400000,"dur":200000}"#,
    ];
    let t = write(
        &d,
        "t.json",
        format!(
            "{{\"traceEvents\":[\n{}\n],\"baseTimeNanoseconds\":1795987818000000000}}\n",
            evs.join(",\n")
        ),
    );
    let csv = repo().join("examples/host-only/trace.csv");
    let (t, c) = (t.to_str().unwrap(), csv.to_str().unwrap());
    let out = run(&["trace", t, "--telemetry", c, "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v = json(&out);
    let note = v["gpu_energy_note"].as_str().expect("a note");
    assert!(
        note.contains("no GPU readings") && note.contains("NVML"),
        "{note}"
    );
    assert_eq!(text.matches("no GPU readings").count(), 1, "{text}");
    assert_eq!(v["pauses"].as_array().unwrap().len(), 1);
    assert!(
        v["pauses"][0].get("telemetry").is_none(),
        "{}",
        v["pauses"][0]
    );
    assert!(v["pause_devices"][0].get("gpu_index").is_none());
    assert_eq!(v["annotation_energy"][0]["gpu_energy_j"], Value::Null);
    assert_eq!(v["annotation_energy"][0]["spans_without_gpu"], 1);
    // No per-device warning repeats it.
    assert_eq!(v["join_warnings"], serde_json::json!([]));
    let out = run(&["trace", t, "--telemetry", c]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches("note: the recording has no GPU readings")
            .count(),
        1,
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
