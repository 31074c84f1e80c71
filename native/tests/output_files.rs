//! Output files (`trace --perfetto`, `summarize --out`) never destroy an input and are never
//! left cut (docs/robustness.md, "Output files"): the same file as an input (the same path, a
//! hard link, a symbolic link) is refused before any work; a full disk, a file size limit and
//! SIGINT/SIGTERM during the write leave no output and no temporary file, with exit status 1
//! (errors) or 128+N (signals).
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod common;
use common::{bin, tmpdir};

const BASE: i64 = 1_764_000_000_000_000_000;

/// A trace of `events` kernels with a `baseTimeNanoseconds`, and a recording over it.
fn trace_text(events: usize) -> String {
    let mut s = String::from("{\"traceEvents\":[\n");
    for i in 0..events {
        if i > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            r#"{{"ph":"X","cat":"kernel","name":"kernel_{}","pid":0,"tid":{},"ts":{}.5,"dur":{}}}"#,
            i % 97,
            i % 7,
            1_000_000 + i * 10,
            3 + i % 5
        ));
    }
    s.push_str(&format!("\n],\"baseTimeNanoseconds\":{BASE}}}\n"));
    s
}

fn recording_text() -> String {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    for k in 0..200i64 {
        let t = 1_000_000_000 + k * 10_000_000;
        s.push_str(&format!("{t},{},SAMPLE,,300,90,,,,,0\n", BASE + t));
    }
    s
}

fn write(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn perfetto(trace: &Path, csv: &Path, out: &Path) -> Command {
    let mut c = bin();
    c.arg("trace")
        .arg(trace)
        .arg("--telemetry")
        .arg(csv)
        .arg("--perfetto")
        .arg(out)
        .arg("--json");
    c
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = tmpdir("same");
    let trace = write(&d, "t.json", &trace_text(50));
    let csv = write(&d, "rec.csv", &recording_text());
    let sidecar = write(
        &d,
        "rec.csv.meta.json",
        "{\"power_source\":\"nvml_power\"}\n",
    );
    std::fs::hard_link(&trace, d.join("link.json")).unwrap();
    std::os::unix::fs::symlink(&csv, d.join("soft.json")).unwrap();
    let cases: [(&str, &str); 5] = [
        ("rec.csv", "the --telemetry input"),
        ("t.json", "the trace being read"),
        ("link.json", "the trace being read"),
        ("soft.json", "the --telemetry input"),
        ("rec.csv.meta.json", "the --telemetry recording's sidecar"),
    ];
    for (out, what) in cases {
        let o = perfetto(&trace, &csv, &d.join(out)).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{out}: {e}");
        assert!(
            e.starts_with(&format!("error: --perfetto {}", d.join(out).display()))
                && e.contains(&format!("is the same file as {what}"))
                && e.trim_end().ends_with("refusing to overwrite an input"),
            "{out}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        // Refused before any work: nothing on stdout.
        assert!(o.stdout.is_empty(), "{out}");
    }
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), trace_text(50));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), recording_text());
    assert_eq!(
        std::fs::read_to_string(&sidecar).unwrap(),
        "{\"power_source\":\"nvml_power\"}\n"
    );
    // Another file is written, and only it appears.
    let o = perfetto(&trace, &csv, &d.join("merged.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("merged.json")).unwrap()).unwrap();
    assert!(merged["traceEvents"].as_array().unwrap().len() > 50);
    assert_eq!(
        entries(&d),
        [
            "link.json",
            "merged.json",
            "rec.csv",
            "rec.csv.meta.json",
            "soft.json",
            "t.json"
        ]
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn summarize_refuses_an_out_that_is_a_file_it_reads() {
    let d = tmpdir("summarize");
    let runs = d.join("runs");
    std::fs::create_dir_all(runs.join("a-host")).unwrap();
    let tel = write(
        &runs.join("a-host"),
        "telemetry.jsonl",
        "{\"ts\": 1.0, \"cpu_percent\": 5}\n",
    );
    std::fs::hard_link(&tel, d.join("summary.json")).unwrap();
    for out in [tel.clone(), d.join("summary.json")] {
        let o = bin()
            .arg("summarize")
            .arg("--runs")
            .arg(&runs)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains("is the same file as an input") && e.lines().count() == 1,
            "{e}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&tel).unwrap(),
        "{\"ts\": 1.0, \"cpu_percent\": 5}\n"
    );
    // Beside the inputs, in the runs folder itself, is fine, and so is writing it again.
    for _ in 0..2 {
        let o = bin()
            .arg("summarize")
            .arg("--runs")
            .arg(&runs)
            .arg("--out")
            .arg(runs.join("summary.json"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(entries(&runs), ["a-host", "summary.json"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// A big trace (about 25 MB) and its recording, shared by the tests that stop a long write.
fn big() -> &'static (PathBuf, PathBuf) {
    static BIG: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BIG.get_or_init(|| {
        let d = tmpdir("big");
        (
            write(&d, "big.json", &trace_text(300_000)),
            write(&d, "rec.csv", &recording_text()),
        )
    })
}

/// Starts the merge of the big trace into `out_dir/out.json.gz`, waits until the output has
/// bytes (the temporary file or the target), sends `sig`, and returns how it ended.
fn stopped_mid_write(out_dir: &Path, sig: i32) -> std::process::ExitStatus {
    let (trace, csv) = big();
    let before = std::fs::metadata(trace).unwrap().len();
    let mut child = perfetto(trace, csv, &out_dir.join("out.json.gz"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let written: u64 = std::fs::read_dir(out_dir)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        if written > 0 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the merge ended before a signal could be sent"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no output after 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = child.wait().unwrap();
    assert_eq!(std::fs::metadata(trace).unwrap().len(), before);
    status
}

#[test]
fn sigint_and_sigterm_during_the_write_leave_no_output_and_no_temporary_file() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let d = tmpdir(&format!("signal-{sig}"));
        let status = stopped_mid_write(&d, sig);
        // Ended by the signal itself, as the shell sees it: 128+N.
        assert!(
            status.signal() == Some(sig) || status.code() == Some(code),
            "{status:?}"
        );
        assert_eq!(entries(&d), Vec::<String>::new(), "signal {sig}");
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn a_file_size_limit_is_a_clear_error_with_no_output_left() {
    let d = tmpdir("fsize");
    let trace = write(&d, "t.json", &trace_text(20_000));
    let csv = write(&d, "rec.csv", &recording_text());
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut cmd = perfetto(&trace, &csv, &out_dir.join("merged.json"));
    // SAFETY: setrlimit is async-signal-safe and touches only this child's limits.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 256 << 10,
                rlim_max: 256 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{:?} {e}", o.status);
    assert!(
        e.contains(&format!(
            "--perfetto {}",
            out_dir.join("merged.json").display()
        )) && e.contains("File too large")
            && e.contains("was not created"),
        "{e}"
    );
    assert_eq!(entries(&out_dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&d);
}

/// A 1 MiB tmpfs mounted on `at`, or why not (needs root and mount).
fn small_tmpfs(at: &Path) -> Result<(), String> {
    let o = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "flinch-test"])
        .arg(at)
        .output()
        .map_err(|e| format!("mount: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(stderr(&o).trim().to_owned())
    }
}

#[test]
fn a_full_disk_is_a_clear_error_with_no_output_left_and_the_old_target_kept() {
    let d = tmpdir("enospc");
    let trace = write(&d, "t.json", &trace_text(40_000));
    let csv = write(&d, "rec.csv", &recording_text());
    let mnt = d.join("small");
    std::fs::create_dir(&mnt).unwrap();
    if let Err(why) = small_tmpfs(&mnt) {
        println!("skipped: cannot mount a small tmpfs ({why}); tests/robustness/outputs.sh does");
        let _ = std::fs::remove_dir_all(&d);
        return;
    }
    let result = std::panic::catch_unwind(|| {
        for existing in [false, true] {
            let out = mnt.join("merged.json");
            if existing {
                std::fs::write(&out, "previous").unwrap();
            }
            let o = perfetto(&trace, &csv, &out).output().unwrap();
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{e}");
            assert!(e.contains("No space left on device"), "{e}");
            if existing {
                assert!(e.contains("is left as it was"), "{e}");
                assert_eq!(entries(&mnt), ["merged.json"]);
                assert_eq!(std::fs::read(&out).unwrap(), b"previous");
            } else {
                assert!(e.contains("was not created"), "{e}");
                assert_eq!(entries(&mnt), Vec::<String>::new());
            }
        }
    });
    let _ = Command::new("umount").arg(&mnt).status();
    let _ = std::fs::remove_dir_all(&d);
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// `record` refuses an output that is its `--scripted-gpu` input, and `--out` and
/// `--host-jsonl` that are one file, before recording anything.
#[test]
fn record_refuses_an_output_that_is_an_input_or_the_other_output() {
    let d = tmpdir("record");
    let script = write(&d, "gpu.script", "gpus 1\n200,90,30,1900,60,1000,5000,0\n");
    std::fs::hard_link(&script, d.join("hard.csv")).unwrap();
    let csv = d.join("trace.csv");
    std::os::unix::fs::symlink(&csv, d.join("jsonl-link")).unwrap();
    std::fs::write(&csv, "").unwrap();
    let cases: [(Vec<PathBuf>, &str); 3] = [
        (vec![script.clone()], "is the same file as --scripted-gpu"),
        (
            vec![d.join("hard.csv")],
            "is the same file as --scripted-gpu",
        ),
        (
            vec![csv.clone(), d.join("jsonl-link")],
            "is the same file as --host-jsonl",
        ),
    ];
    for (outs, want) in cases {
        let mut c = bin();
        c.args(["record", "--no-rapl", "--seconds", "0.2", "--scripted-gpu"])
            .arg(&script)
            .arg("--out")
            .arg(&outs[0]);
        if let Some(j) = outs.get(1) {
            c.arg("--host-jsonl").arg(j);
        }
        let o = c.output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{outs:?}: {e}");
        assert!(
            e.starts_with("error: --out") && e.contains(want),
            "{outs:?}: {e}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "gpus 1\n200,90,30,1900,60,1000,5000,0\n"
    );
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "");
    let _ = std::fs::remove_dir_all(&d);
}
