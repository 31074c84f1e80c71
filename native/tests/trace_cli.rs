//! End-to-end tests of `flinch-trace trace` on the real traces in tests/traces, against golden
//! files produced by scripts/golden/traces.sh: the reference `trace_summary` (where it
//! succeeds) and the exact Decimal oracle scripts/golden/trace-exact.py.
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod common;
use common::{bin, repo};

fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = repo().join("tests/traces");
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if (name.ends_with(".json") || name.ends_with(".gz"))
                && !name.ends_with(".expected.json")
            {
                out.push(f);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 30, "fixtures missing: {}", out.len());
    out
}

fn run_json(args: &[&Path]) -> (Value, Output) {
    let out = bin()
        .arg("trace")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (v, out)
}

fn close(a: &Value, b: &Value, what: &str) {
    match (a, b) {
        (Value::Null, Value::Null) => {}
        _ => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let tol = 1e-9 * x.abs().max(y.abs());
            assert!((x - y).abs() <= tol, "{what}: {x} vs {y}");
        }
    }
}

#[test]
fn real_traces_match_the_exact_oracle_and_the_reference() {
    let mut reference_compared = 0;
    for f in fixtures() {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{}.expected.json", f.display())).unwrap(),
        )
        .unwrap();
        let (got, out) = run_json(&[&f]);
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let name = f.display().to_string();
        // Exact figures: every category, every fixture (B/E pairs included).
        let exact = &expected["exact"];
        assert_eq!(got["totals"]["events"], exact["events"], "{name}");
        assert_eq!(
            got["truncated"].as_bool(),
            Some(!exact["complete"].as_bool().unwrap()),
            "{name}"
        );
        let got_cats = got["categories"].as_object().unwrap();
        let want_cats = exact["categories"].as_object().unwrap();
        let mut gk: Vec<&String> = got_cats.keys().collect();
        let mut wk: Vec<&String> = want_cats.keys().collect();
        gk.sort();
        wk.sort();
        assert_eq!(gk, wk, "{name}");
        for (k, w) in want_cats {
            let g = &got_cats[k];
            assert_eq!(g["events"], w["events"], "{name} {k}");
            // Exactly equal: both are the exact ns sum, correctly rounded to f64 µs.
            assert_eq!(
                g["duration_sum_us"].as_f64(),
                w["duration_sum_us"].as_f64(),
                "{name} {k} sum"
            );
            assert_eq!(
                g["busy_union_us"].as_f64(),
                w["busy_union_us"].as_f64(),
                "{name} {k} union"
            );
        }
        // Reference parity where the reference succeeds and there are only X duration events.
        let reference = &expected["reference"];
        if reference.get("error").is_some() || exact["has_begin_end"].as_bool().unwrap() {
            continue;
        }
        reference_compared += 1;
        let rc = reference["categories"].as_object().unwrap();
        for (k, r) in rc {
            assert_eq!(got_cats[k]["events"], r["events"], "{name} {k}");
        }
        let g_ops = got["largest_ops_by_duration_sum"].as_array().unwrap();
        let r_ops = reference["largest_ops_by_duration_sum"].as_array().unwrap();
        assert_eq!(g_ops.len(), r_ops.len(), "{name}");
        for (g, r) in g_ops.iter().zip(r_ops) {
            assert_eq!(
                (&g["category"], &g["name"]),
                (&r["category"], &r["name"]),
                "{name}"
            );
            close(&g["duration_sum_us"], &r["duration_sum_us"], &name);
            for key in ["n", "mean", "min", "p50", "p90", "p95", "p99", "max"] {
                close(
                    &g["duration_us"][key],
                    &r["duration_us"][key],
                    &format!("{name} {key}"),
                );
            }
        }
        let keys: Vec<&str> = [
            "source",
            "scope",
            "categories",
            "largest_ops_by_duration_sum",
        ]
        .to_vec();
        for k in keys {
            assert!(got.get(k).is_some(), "{name}: key {k}");
        }
        assert_eq!(got["scope"], reference["scope"]);
    }
    assert!(
        reference_compared >= 10,
        "only {reference_compared} reference comparisons"
    );
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flinch-trace-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Trailing garbage after the last gzip member: the summary of the data before it, with a
/// warning naming the offset (as gzip -d: "trailing garbage ignored"), exit 0.
#[test]
fn trailing_gzip_garbage_is_ignored_with_a_warning() {
    let src = repo().join("tests/traces/HolisticTraceAnalysis/mtia_inference_rank_0.json.gz");
    let bytes = std::fs::read(&src).unwrap();
    let bad = temp(
        "garbage.json.gz",
        &[&bytes[..], b"\nnot gzip at all\n"].concat(),
    );
    let (want, _) = run_json(&[&src]);
    let (mut got, out) = run_json(&[&bad]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let w = got["warnings"].as_array_mut().unwrap().pop().unwrap();
    assert_eq!(
        w,
        format!(
            "trailing garbage ignored: bytes from {} on do not start a gzip member (the data before them was read, as gzip -d does)",
            bytes.len()
        )
    );
    got["source"] = want["source"].clone();
    assert_eq!(got, want);
}

/// In a `--json` array, a file that failed is `{"source", "error"}` in that order, as the
/// README shows and as every result object starts with `source`.
#[test]
fn a_failed_file_in_a_json_array_lists_source_before_error() {
    let good = repo().join("tests/traces/catapult/simple_trace_gz.gz");
    let junk = temp("order.json", b"  nonsense");
    let out = bin()
        .args(["trace", "--json"])
        .arg(&good)
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.rfind("  {\n").unwrap();
    let item = &text[at..];
    let src = item.find("\"source\": ").unwrap();
    let err = item.find("\"error\": ").unwrap();
    assert!(src < err, "{item}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v[1]["source"], junk.display().to_string());
    assert!(v[1]["error"].as_str().unwrap().contains("at byte 2"), "{v}");
}

#[test]
fn a_cut_gz_is_summarized_from_what_was_read() {
    let src = repo().join("tests/traces/HolisticTraceAnalysis/mtia_inference_rank_0.json.gz");
    let bytes = std::fs::read(&src).unwrap();
    let cut = temp("cut.json.gz", &bytes[..bytes.len() / 2]);
    let (v, out) = run_json(&[&cut]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["truncated"], true);
    let w = v["warnings"][0].as_str().unwrap();
    assert!(w.starts_with("truncated gzip member at byte "), "{w}");
    let events = v["totals"]["events"].as_u64().unwrap();
    assert!(events > 100 && events < 16158, "{events}");
}

#[test]
fn bad_input_gives_one_line_with_the_offset_and_exit_1() {
    let junk = temp("junk.json", b"  hello");
    let out = bin().arg("trace").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("expected `{` or `[` at the start of a trace at byte 2"),
        "{err}"
    );

    let broken = temp(
        "broken.json",
        br#"{"traceEvents": [{"ph":"X"} {"ph":"X"}]}"#,
    );
    let out = bin().arg("trace").arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("between trace events at byte 28"));

    let mut gz = std::fs::read(repo().join("tests/traces/catapult/simple_trace_gz.gz")).unwrap();
    let mid = gz.len() / 2;
    gz[mid] ^= 0xff;
    gz[mid + 1] ^= 0x55;
    let corrupt = temp("corrupt.gz", &gz);
    let out = bin().arg("trace").arg(&corrupt).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at byte"), "{err}");

    let out = bin()
        .arg("trace")
        .arg("/nonexistent/x.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

#[test]
fn several_files_give_an_array_and_the_table_is_readable() {
    let a = repo()
        .join("tests/traces/HolisticTraceAnalysis/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    let b = repo().join("tests/traces/speedscope/simple.json");
    let (v, out) = run_json(&[&a, &b]);
    assert!(out.status.success());
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    assert_eq!(arr[1]["source"], b.display().to_string());
    let out = bin()
        .arg("trace")
        .arg(&a)
        .arg("--top")
        .arg("2")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("user_annotation") && text.contains("gloo:all_reduce"),
        "{text}"
    );
    // rank-34 has 4 distinct ops, fewer than the default top 40.
    let (v, _) = run_json(&[&a]);
    assert_eq!(
        v["largest_ops_by_duration_sum"].as_array().unwrap().len(),
        4
    );
}

/// A plain file large enough for the two-scan-thread path (16 MiB or more) gives the same
/// summary as its `.gz`, which takes the one-scan-thread pipeline.
#[test]
fn a_large_plain_file_equals_its_gzip() {
    use std::io::Write;
    let mut doc = String::with_capacity(18 << 20);
    doc.push_str("{\"traceEvents\": [\n");
    let mut i: u64 = 0;
    while doc.len() < 17 << 20 {
        if i > 0 {
            doc.push_str(",\n");
        }
        let ph = if i.is_multiple_of(11) {
            "B"
        } else if i % 11 == 1 {
            "E"
        } else {
            "X"
        };
        doc.push_str(&format!(
            "  {{\"ph\": \"{ph}\", \"cat\": \"c{}\", \"name\": \"op{}\", \"pid\": 7, \"tid\": {}, \"ts\": {}.{:03}, \"dur\": {}.5, \"args\": {{\"i\": {i}, \"s\": \"}},{{\"}}}}",
            i % 5,
            i % 97,
            i % 3,
            1_700_000_000_000 + i * 13,
            i % 1000,
            i % 400
        ));
        i += 1;
    }
    doc.push_str("\n], \"displayTimeUnit\": \"ms\"}\n");
    let plain = temp("large.json", doc.as_bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(doc.as_bytes()).unwrap();
    let gz = temp("large.json.gz", &gz.finish().unwrap());
    let (mut a, out_a) = run_json(&[&plain]);
    let (mut b, out_b) = run_json(&[&gz]);
    assert!(out_a.status.success() && out_b.status.success());
    assert_eq!(a["totals"]["events"].as_u64(), Some(i));
    a["source"] = Value::Null;
    b["source"] = Value::Null;
    assert_eq!(a, b);
}

/// An event of more than 4 MiB (a large `args`) is kept in every mode, plain and gzip: its
/// size costs no memory, since `args` is skipped without copying.
#[test]
fn events_over_4_mib_are_kept_in_every_mode() {
    let blob = "0123456789abcdef".repeat(5 << 16);
    let doc = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"c","name":"big","ts":1,"dur":2,"args":{{"blob":"{blob}","n":[1,2,{{"k":"}}"}}]}}}},{{"ph":"X","cat":"c","name":"small","ts":5,"dur":1}}]}}"#
    );
    assert!(doc.len() > 5 << 20);
    let plain = temp("big-event.json", doc.as_bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, doc.as_bytes()).unwrap();
    let gz = temp("big-event.json.gz", &gz.finish().unwrap());
    for file in [&plain, &gz] {
        for mode in [None, Some("--bounded"), Some("--exact")] {
            let out = bin()
                .arg("trace")
                .arg("--json")
                .args(mode)
                .arg(file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{mode:?}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["totals"]["duration_events"], 2, "{mode:?} {file:?}");
            assert_eq!(v["categories"]["c"]["duration_sum_us"], 3.0, "{mode:?}");
            assert_eq!(v["warning_counts"]["scanner"]["oversized_events"], 0);
            assert_eq!(v["warnings"], serde_json::json!([]), "{mode:?}");
        }
    }
}
