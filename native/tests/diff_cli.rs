//! End-to-end tests of `flinch-trace diff`: generated pairs with known changes (checked against
//! the events' exact sums), every route of the host driver (the N-thread scan of a large plain
//! trace, gzip, a FIFO, summaries) against the core diff job fed the bytes on one thread,
//! fixtures against themselves and their summaries, and bad input and usage.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use flinch_core::diff::{DiffJob, DiffOptions};
use flinch_core::job::{Job, Need};
use serde_json::Value;

mod common;
use common::{bin, repo, tmpdir};

/// A Kineto-like trace of steps: a cpu op, three `gemm` kernels of `gemm_us` (times a varying
/// factor), three `relu`, and `extra` kernels if named; padded with `pad` cpu ops a step.
fn trace(steps: u64, gemm_us: u64, extra: Option<&str>, pad: usize) -> String {
    let mut s = String::from("{\"schemaVersion\": 1, \"traceEvents\": [\n");
    let mut t = 1_000_000u64; // ns
    let mut first = true;
    let mut ev = |s: &mut String, cat: &str, name: &str, pid: u32, ts: u64, dur: u64| {
        if !first {
            s.push_str(",\n");
        }
        first = false;
        s.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": 1, \"ts\": {}.{:03}, \"dur\": {}.{:03}}}",
            ts / 1000, ts % 1000, dur / 1000, dur % 1000
        ));
    };
    for i in 0..steps {
        let cpu = 200_000 + (i % 7) * 1_000;
        ev(&mut s, "cpu_op", "aten::linear", 100, t, cpu);
        for p in 0..pad {
            ev(&mut s, "cpu_op", "aten::view", 100, t + p as u64, 1_000);
        }
        let mut k = t + cpu;
        for j in 0..3 {
            let d = gemm_us * 1000 + ((i + j) % 5) * 1000;
            ev(&mut s, "kernel", "gemm", 0, k, d);
            k += d + 5_000;
            let d = 30_000 + (j % 2) * 1000;
            ev(&mut s, "kernel", "relu", 0, k, d);
            k += d + 5_000;
        }
        if let Some(name) = extra {
            ev(&mut s, "kernel", name, 0, k, 40_000);
            k += 45_000;
        }
        t = k + 50_000;
    }
    s.push_str("\n]}\n");
    s
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(bytes).unwrap();
    g.finish().unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn diff_json(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let out = bin()
        .arg("diff")
        .arg(a)
        .arg(b)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    serde_json::from_str(&ok(out)).unwrap()
}

/// The core job fed each file's bytes whole on one thread: the oracle of the host's routes.
fn oracle(a: &Path, b: &Path, top: usize) -> Value {
    let mut o = DiffOptions::new(a.display().to_string(), b.display().to_string());
    o.compare.top = top;
    let mut job = DiffJob::new(o);
    loop {
        match job.need() {
            Need::File(name) => {
                let path = if name == flinch_core::diff::A { a } else { b };
                job.write(&std::fs::read(path).unwrap()).unwrap();
                job.end().unwrap();
            }
            Need::Done => break,
            other => panic!("{other:?}"),
        }
    }
    serde_json::to_value(job.finish().unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_2x_slower_op_a_new_op_exact_and_the_same_on_every_route() {
    let dir = tmpdir("routes");
    let ta = trace(400, 100, None, 0);
    let tb = trace(400, 200, Some("new_kernel"), 0);
    let a = write(&dir, "a.json", ta.as_bytes());
    let b = write(&dir, "b.json", tb.as_bytes());
    let r = diff_json(&a, &b, &[]);
    let top = &r["ops"][0];
    assert_eq!(top["name"], "gemm");
    // Exact: each gemm in B is 100 µs longer, 3 a step.
    assert_eq!(top["delta_sum_ms"], 400.0 * 3.0 * 0.1);
    assert_eq!(top["a"]["n"], 1200);
    assert_eq!(top["status"], "both");
    let new = r["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "new_kernel")
        .unwrap();
    assert_eq!(new["status"], "only_b");
    assert_eq!(new["a"], Value::Null);
    assert_eq!(new["delta_sum_ms"], 400.0 * 0.04);
    let v = r["verdict"].as_str().unwrap();
    assert!(
        v.starts_with("B vs A: kernel busy") && v.contains("gemm"),
        "{v}"
    );
    assert_eq!(r, oracle(&a, &b, 40));
    // gzip, and a gzip A with a plain B: the same but for the names.
    let agz = write(&dir, "a.json.gz", &gz(ta.as_bytes()));
    let mut want = oracle(&agz, &b, 40);
    assert_eq!(diff_json(&agz, &b, &[]), want);
    // One scan thread or several: the same.
    want = oracle(&a, &b, 40);
    assert_eq!(diff_json(&a, &b, &["--threads", "1"]), want);
}

#[test]
fn a_large_plain_trace_scanned_on_threads_equals_the_one_thread_job() {
    let dir = tmpdir("large");
    // Past 16 MiB: the N-thread route.
    let ta = trace(2_000, 100, None, 120);
    assert!(ta.len() > 16 << 20, "{}", ta.len());
    let tb = trace(2_000, 110, None, 120);
    let a = write(&dir, "a.json", ta.as_bytes());
    let b = write(&dir, "b.json", tb.as_bytes());
    let want = oracle(&a, &b, 5);
    assert_eq!(diff_json(&a, &b, &["--threads", "4", "--top", "5"]), want);
    assert_eq!(want["ops"][0]["delta_sum_ms"], 2_000.0 * 3.0 * 0.01);
}

#[test]
fn a_run_against_itself_and_against_its_summary_has_no_significant_change() {
    let dir = tmpdir("self");
    let fixture = repo().join("tests/traces/HolisticTraceAnalysis/mtia_inference_rank_0.json.gz");
    let r = diff_json(&fixture, &fixture, &[]);
    let v = r["verdict"].as_str().unwrap();
    assert!(v.starts_with("B vs A: no significant change"), "{v}");
    // Its summary (the mergeable section): the same sums, p50 from histograms.
    let summary = ok(bin()
        .args(["trace", "--json", "--mergeable"])
        .arg(&fixture)
        .output()
        .unwrap());
    let s = write(&dir, "s.json", summary.as_bytes());
    let r = diff_json(&fixture, &s, &["--top", "100000"]);
    assert_eq!(r["b"]["kind"], "summary");
    assert_eq!(r["b"]["p50"], "histogram");
    for o in r["ops"].as_array().unwrap() {
        assert_eq!(o["delta_sum_ms"], 0.0, "{o}");
        let (pa, pb) = (
            o["a"]["p50_us"].as_f64().unwrap(),
            o["b"]["p50_us"].as_f64().unwrap(),
        );
        let bound = r["b"]["p50_relative_error"].as_f64().unwrap();
        assert!((pa - pb).abs() <= pa * bound * 1.000_001, "{o}");
    }
    assert_eq!(r["ops_compared"]["only_a"], 0);
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .starts_with("B vs A: no significant change")
    );
    // A gzip summary, and a merge's output, are summaries too.
    let sgz = write(&dir, "s.json.gz", &gz(summary.as_bytes()));
    assert_eq!(diff_json(&s, &sgz, &[])["ops_compared"]["only_b"], 0);
    let merged = ok(bin().args(["merge", "--json"]).arg(&s).output().unwrap());
    let m = write(&dir, "m.json", merged.as_bytes());
    let r = diff_json(&s, &m, &[]);
    assert_eq!(r["b"]["kind"], "summary");
    assert_eq!(r["totals"]["delta_duration_sum_ms"], 0.0);
}

#[test]
fn text_output_is_the_verdict_then_the_tables() {
    let dir = tmpdir("text");
    let a = write(&dir, "a.json", trace(50, 100, None, 0).as_bytes());
    let b = write(&dir, "b.json", trace(50, 200, None, 0).as_bytes());
    let text = ok(bin().arg("diff").arg(&a).arg(&b).output().unwrap());
    let json = diff_json(&a, &b, &[]);
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), json["verdict"].as_str().unwrap());
    assert!(
        text.contains("category") && text.contains("kernel gemm"),
        "{text}"
    );
}

#[test]
#[cfg(unix)]
fn a_fifo_input_is_read_once_as_it_comes() {
    let dir = tmpdir("fifo");
    let ta = trace(30, 100, None, 0);
    let a = write(&dir, "a.json", ta.as_bytes());
    let b = write(&dir, "b.json", trace(30, 150, None, 0).as_bytes());
    let fifo = dir.join("a.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, ta.as_bytes()).unwrap())
    };
    let mut got = diff_json(&fifo, &b, &[]);
    writer.join().unwrap();
    let want = oracle(&a, &b, 40);
    got["a"]["source"] = want["a"]["source"].clone();
    assert_eq!(got, want);
}

fn fails(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = bin().arg("diff").args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_exits_1_with_the_offset_and_usage_exits_2() {
    let dir = tmpdir("bad");
    let t = trace(20, 100, None, 0);
    let good = write(&dir, "good.json", t.as_bytes());
    let text = write(&dir, "notes.txt", b"hello, this is no trace\n");
    let (code, err) = fails(&[good.as_os_str(), text.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("at byte 0"),
        "{err}"
    );
    let obj = write(&dir, "obj.json", b"{\"a\": 1}");
    let (code, err) = fails(&[obj.as_os_str(), good.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("neither a trace nor a summary"), "{err}");
    let whole = gz(t.as_bytes());
    let cut = write(&dir, "cut.json.gz", &whole[..whole.len() / 2]);
    let (code, err) = fails(&[good.as_os_str(), cut.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cut.json.gz") && err.contains("truncated gzip member at byte"),
        "{err}"
    );
    let missing = dir.join("missing.json");
    let (code, err) = fails(&[good.as_os_str(), missing.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("missing.json"), "{err}");
    // A recording with a summary.
    let summary = ok(bin()
        .args(["trace", "--json", "--mergeable"])
        .arg(&good)
        .output()
        .unwrap());
    let s = write(&dir, "s.json", summary.as_bytes());
    let csv = write(
        &dir,
        "t.csv",
        b"t_mono_ns,t_wall_ns,row_type,label,gpu_power_W\n1,1000,SAMPLE,,50\n",
    );
    let (code, err) = fails(&[
        good.as_os_str(),
        s.as_os_str(),
        "--telemetry-b".as_ref(),
        csv.as_os_str(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a summary has no clock"), "{err}");
    // Usage.
    for args in [
        vec![good.as_os_str()],
        vec![
            good.as_os_str(),
            good.as_os_str(),
            "--threshold-pct".as_ref(),
            "200".as_ref(),
        ],
        vec![
            good.as_os_str(),
            good.as_os_str(),
            "--bounded".as_ref(),
            "--exact".as_ref(),
        ],
        vec![
            good.as_os_str(),
            good.as_os_str(),
            "--top".as_ref(),
            "x".as_ref(),
        ],
        vec![
            good.as_os_str(),
            good.as_os_str(),
            "--min-gap-ms".as_ref(),
            "-1".as_ref(),
        ],
    ] {
        let (code, err) = fails(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
}

/// A trace with `baseTimeNanoseconds` and `steps` `ProfilerStep#N` annotations of 100 ms, with a
/// kernel in each; and a recording at 10 ms of constant power `power_w` over it.
fn timed_run(steps: u64, power_w: u32) -> (String, String) {
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
             {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 50000}}",
            ts_us + 10
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
fn recordings_give_the_energy_per_annotation_in_a_and_b() {
    let dir = tmpdir("energy");
    let (ta, ca) = timed_run(5, 100);
    let (tb, cb) = timed_run(5, 150);
    let a = write(&dir, "a.json", ta.as_bytes());
    let b = write(&dir, "b.json", tb.as_bytes());
    let csv_a = write(&dir, "a.csv", ca.as_bytes());
    let csv_b = write(&dir, "b.csv", cb.as_bytes());
    let r = diff_json(
        &a,
        &b,
        &[
            "--telemetry-a",
            csv_a.to_str().unwrap(),
            "--telemetry-b",
            csv_b.to_str().unwrap(),
        ],
    );
    let rows = r["energy"].as_array().expect("an energy section");
    // The five ProfilerStep#N are one row, as in annotation_energy (per step: --steps).
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["name"], "ProfilerStep#*");
    assert_eq!(
        (row["n_a"].as_u64(), row["n_b"].as_u64()),
        (Some(5), Some(5))
    );
    // Five spans of 100 ms at a constant 100 W and 150 W.
    let (ja, jb) = (
        row["gpu_energy_j_a"].as_f64().unwrap(),
        row["gpu_energy_j_b"].as_f64().unwrap(),
    );
    assert!(
        (ja - 50.0).abs() < 1e-9 && (jb - 75.0).abs() < 1e-9,
        "{row}"
    );
    assert!(
        (row["delta_j"].as_f64().unwrap() - 25.0).abs() < 1e-9,
        "{row}"
    );
    // The same with one recording only: no energy section.
    let r = diff_json(&a, &b, &["--telemetry-a", csv_a.to_str().unwrap()]);
    assert!(r.get("energy").is_none(), "{r}");
    // The text names it.
    let text = ok(bin()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .arg("--telemetry-a")
        .arg(&csv_a)
        .arg("--telemetry-b")
        .arg(&csv_b)
        .output()
        .unwrap());
    assert!(text.contains("GPU energy per annotation"), "{text}");
}
