//! `record --metrics` end to end: a real recorder fed by the scripted GPU serves `/metrics` over
//! real HTTP; its window counters equal `analyze --spans` of the trace.csv it writes alongside,
//! its energy counter equals the injected joules, and bad addresses fail before recording.
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::tmpdir;

const BIN: &str = env!("CARGO_BIN_EXE_flinch-trace");

/// Two GPUs at 10 ms ticks: GPU 0 has the energy counter (+2000 mJ per tick for 150 ticks,
/// then flat), GPU 1 only power (150 W). Windows: prefill twice, decode once, `step 7` once.
fn script() -> String {
    let mut s = String::from("gpus 2\n");
    let marks = [
        (10, "prefill_start"),
        (30, "prefill_end"),
        (40, "decode_start"),
        (80, "decode_end"),
        (90, "prefill_start"),
        (100, "prefill_end"),
        (105, "step 7_start"),
        (120, "step 7_end"),
    ];
    for k in 0..=150u64 {
        for (at, m) in marks {
            if at == k {
                s += &format!("mark {m}\n");
            }
        }
        s += &format!(
            "200,90,0,1900,60,{},100,0 ; 150,50,0,1900,60,,100,0\n",
            1_000_000 + 2000 * k
        );
    }
    s
}

/// The injected energy of GPU 0's counter, J.
const INJECTED_GPU0_J: f64 = 150.0 * 2.0;

fn start(dir: &Path, extra: &[&str]) -> (Child, String) {
    std::fs::write(dir.join("gpu.script"), script()).unwrap();
    let mut c = Command::new(BIN)
        .current_dir(dir)
        .args([
            "record",
            "--scripted-gpu",
            "gpu.script",
            "--no-rapl",
            "--no-host",
        ])
        .args([
            "--interval-ms",
            "10",
            "--seconds",
            "inf",
            "--metrics",
            "127.0.0.1:0",
        ])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("flinch-trace record: metrics at http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address line: {line:?}"))
        .to_string();
    // Keep draining stderr so the recorder never blocks on it.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    (c, url)
}

/// `GET path` with an `Accept` header; the response head and body.
fn get(addr: &str, path: &str, accept: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let (head, body) = r.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

/// Sample lines as `name{labels}` -> value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn stop(mut c: Child) -> std::process::ExitStatus {
    // SAFETY: kill has no memory-safety preconditions; the child is not reaped yet.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    loop {
        if let Some(st) = c.try_wait().unwrap() {
            return st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "recorder did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn window_counters_equal_analyze_of_the_csv_written_alongside() {
    let dir = tmpdir("alongside");
    let (rec, addr) = start(&dir, &["--out", "t.csv"]);
    let key = |w: &str| format!("flinch_windows_total{{window=\"{w}\"}}");
    let gpu0 =
        "flinch_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-scripted-0\",source=\"counter\"}";
    let t = Instant::now();
    let m = loop {
        let (head, body) = get(
            &addr,
            "/metrics",
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
        );
        assert!(
            head.contains(
                "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{head}"
        );
        assert!(body.ends_with("# EOF\n"));
        let m = samples(&body);
        let done = m.get(&key("prefill")) == Some(&2.0)
            && m.get(&key("decode")) == Some(&1.0)
            && m.get(&key("step 7")) == Some(&1.0)
            && m.get(gpu0) == Some(&INJECTED_GPU0_J);
        if done {
            break m;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "windows never completed: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The plain text format, when only text/plain is accepted.
    let (head, body) = get(&addr, "/metrics", "text/plain");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(body.contains("# TYPE flinch_windows_total counter\n") && !body.contains("# EOF"));
    let (head, _) = get(&addr, "/other", "*/*");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(stop(rec).success());

    let out = Command::new(BIN)
        .args(["analyze", "--csv"])
        .arg(dir.join("t.csv"))
        .args(["--spans", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want: BTreeMap<String, (u64, i64, f64, f64)> = BTreeMap::new();
    for s in json["spans"].as_array().unwrap() {
        let start = s["start_label"].as_str().unwrap();
        let Some(stem) = start.strip_suffix("_start") else {
            continue;
        };
        if s["kind"] != "pair" {
            continue;
        }
        let e = want.entry(stem.to_string()).or_default();
        e.0 += 1;
        e.1 += s["t1_mono_ns"].as_i64().unwrap() - s["t0_mono_ns"].as_i64().unwrap();
        e.2 += s["gpus"][0]["energy_counter_j"].as_f64().unwrap();
        e.3 += s["gpus"][1]["energy_edge_j"].as_f64().unwrap();
    }
    assert_eq!(want.len(), 3, "{want:?}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    for (w, (n, ns, e0, e1)) in &want {
        assert_eq!(m[&key(w)], *n as f64, "{w}");
        let secs = m[&format!("flinch_window_seconds_total{{window=\"{w}\"}}")];
        assert_eq!(secs, *ns as f64 / 1e9, "{w}");
        let got0 = m[&format!("flinch_window_energy_joules_total{{window=\"{w}\",gpu=\"0\"}}")];
        let got1 = m[&format!("flinch_window_energy_joules_total{{window=\"{w}\",gpu=\"1\"}}")];
        assert!(
            close(got0, *e0) && close(got1, *e1),
            "{w}: {got0} {got1} vs {e0} {e1}"
        );
        // Constant power: energy = 150 W x seconds on GPU 1.
        assert!(close(got1, 150.0 * secs), "{w}: {got1} vs {}", 150.0 * secs);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_out_it_keeps_no_rows_and_ends_cleanly() {
    let dir = tmpdir("daemon");
    let (rec, addr) = start(&dir, &[]);
    let (head, body) = get(&addr, "/metrics", "*/*");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        body.contains("flinch_sampler_missed_ticks_total "),
        "{body}"
    );
    assert!(stop(rec).success());
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["gpu.script"], "files written in daemon mode");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_address_or_a_port_in_use_fails_before_recording() {
    let dir = tmpdir("bad");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (addr, says) in [
        ("nope", "not a listening address"),
        ("127.0.0.1:99999", "not a listening address"),
        (taken.as_str(), "Address already in use"),
    ] {
        let t = Instant::now();
        let out = Command::new(BIN)
            .current_dir(&dir)
            .args([
                "record",
                "--no-rapl",
                "--no-host",
                "--seconds",
                "5",
                "--out",
                "t.csv",
            ])
            .args(["--metrics", addr])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{addr}: {err}");
        assert!(
            err.contains(&format!("--metrics {addr}")) && err.contains(says),
            "{err}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{addr}: it recorded first"
        );
        assert!(!dir.join("t.csv").exists(), "{addr}: a file was written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A host without a GPU: no GPU rows at all (no NVML, no scripted source), RAPL from a powercap
/// tree whose counter the test advances. Three `prefill` windows must complete while the
/// recording runs, with the seconds and the RAPL energy `analyze --spans` gives the CSV.
#[test]
fn without_a_gpu_windows_complete_with_seconds_and_rapl_energy() {
    use std::os::unix::fs::FileExt;
    let dir = tmpdir("nogpu");
    let zone = dir.join("powercap/intel-rapl:0");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    std::fs::write(zone.join("max_energy_range_uj"), "262143328850\n").unwrap();
    std::fs::write(zone.join("energy_uj"), format!("{:015}\n", 1_000_000u64)).unwrap();
    let stop_counter = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counter = {
        let (path, stop) = (zone.join("energy_uj"), stop_counter.clone());
        std::thread::spawn(move || {
            // About 20 W: 100,000 µJ per 5 ms, written in place at a fixed width.
            let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            let mut uj = 1_000_000u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                uj += 100_000;
                f.write_at(format!("{uj:015}\n").as_bytes(), 0).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let marks = format!(
        "for i in 1 2 3; do {BIN} mark prefill_start; sleep 0.1; {BIN} mark prefill_end; done; sleep 60"
    );
    let mut rec = Command::new(BIN)
        .current_dir(&dir)
        .args(["record", "--no-host", "--powercap-root", "powercap"])
        .args([
            "--interval-ms",
            "10",
            "--metrics",
            "127.0.0.1:0",
            "--out",
            "t.csv",
        ])
        .args(["--", "sh", "-c", &marks])
        .env_remove("NVTX_INJECTION64_PATH")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(rec.stderr.take().unwrap());
    let mut addr = None;
    for _ in 0..20 {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(a) = line
            .trim()
            .strip_prefix("flinch-trace record: metrics at http://")
            .and_then(|u| u.strip_suffix("/metrics"))
        {
            addr = Some(a.to_string());
            break;
        }
    }
    let addr = addr.expect("no metrics address line");
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    let windows = "flinch_windows_total{window=\"prefill\"}";
    let t = Instant::now();
    let m = loop {
        let (_, body) = get(&addr, "/metrics", "text/plain");
        let m = samples(&body);
        if m.get(windows) == Some(&3.0) {
            break m;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "windows never completed without a GPU: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // SIGTERM ends the recording and its command; how the command died is not the point.
    let _ = stop(rec);
    stop_counter.store(true, std::sync::atomic::Ordering::Relaxed);
    counter.join().unwrap();
    let out = Command::new(BIN)
        .args(["analyze", "--csv"])
        .arg(dir.join("t.csv"))
        .args(["--spans", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (mut n, mut ns, mut rapl_j) = (0u64, 0i64, 0f64);
    for s in json["spans"].as_array().unwrap() {
        if s["kind"] == "pair" && s["start_label"] == "prefill_start" {
            n += 1;
            ns += s["t1_mono_ns"].as_i64().unwrap() - s["t0_mono_ns"].as_i64().unwrap();
            rapl_j += s["rapl"]["energy_j"].as_f64().unwrap();
        }
    }
    assert_eq!(n, 3);
    assert_eq!(
        m["flinch_window_seconds_total{window=\"prefill\"}"],
        ns as f64 / 1e9
    );
    let got = m["flinch_window_cpu_energy_joules_total{window=\"prefill\",zone=\"package-0\"}"];
    assert!(rapl_j > 1.0, "{rapl_j}");
    assert!((got - rapl_j).abs() <= 1e-9 * rapl_j, "{got} vs {rapl_j}");
    let _ = std::fs::remove_dir_all(&dir);
}
