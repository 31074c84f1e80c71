//! `flinch-trace record` and `mark` end to end: real FIFOs, real signals to a real recorder and
//! to the command it runs, write errors, RAPL warnings, and the no-GPU paths. The GPU is the
//! scripted source (there is no GPU on the test machines); everything else is real.
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::tmpdir;

const BIN: &str = env!("CARGO_BIN_EXE_flinch-trace");
const SCRIPT: &str = "gpus 2\n200,90,30,1900,60,1000,5000,0;80,0,0,300,40,500,100,4\n\
                      210,95,31,1950,61,1100,5000,0;81,0,0,300,40,510,100,4\n";

fn script(dir: &Path) -> PathBuf {
    let p = dir.join("gpu.script");
    std::fs::write(&p, SCRIPT).unwrap();
    p
}

fn record(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("record")
        .arg("--scripted-gpu")
        .arg(script(dir))
        .arg("--no-rapl");
    c
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(mut child: Child) -> Output {
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "recorder did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Splits a CSV line, honouring quoted fields.
fn split_csv(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// Every row has the header's column count and the file ends with a newline; returns the rows.
fn whole_rows(csv: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(csv).unwrap();
    assert!(
        text.ends_with('\n'),
        "cut last row: {:?}",
        text.lines().last()
    );
    let mut lines = text.lines();
    let n = lines.next().unwrap().split(',').count();
    lines
        .map(|l| {
            let f = split_csv(l);
            assert_eq!(f.len(), n, "row {l:?}");
            f
        })
        .collect()
}

fn marks(rows: &[Vec<String>]) -> Vec<(u64, String)> {
    rows.iter()
        .filter(|r| r[2] == "MARK")
        .map(|r| (r[0].parse().unwrap(), r[3].clone()))
        .collect()
}

fn meta(csv: &Path) -> serde_json::Value {
    let p = format!("{}.meta.json", csv.display());
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn fifo_marks_plain_and_stamped_and_mark_errors() {
    let d = tmpdir("fifo");
    let csv = d.join("t.csv");
    let fifo = d.join("marks");
    let child = record(&d)
        .args(["--interval-ms", "5", "--seconds", "1.5", "--out"])
        .arg(&csv)
        .arg("--marks-fifo")
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the FIFO", || {
        std::fs::metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo())
    });
    assert_eq!(std::fs::metadata(&fifo).unwrap().mode() & 0o777, 0o600);
    // The recorder may not have opened it yet: retry until a mark is accepted.
    let mut t_before = 0;
    wait_for("a listening recorder", || {
        t_before = mono_ns();
        Command::new(BIN)
            .args(["mark", "stamped, with comma"])
            .env("FLINCH_MARKS", &fifo)
            .status()
            .unwrap()
            .success()
    });
    let t_after = mono_ns();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .map(|mut f| {
            use std::io::Write;
            f.write_all(b"  plain_label  \n\n@5 early\n").unwrap()
        })
        .unwrap();
    let o = finish(child);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = whole_rows(&csv);
    let m = marks(&rows);
    let labels: Vec<&str> = m.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        labels,
        [
            "begin",
            "stamped, with comma",
            "plain_label",
            "early",
            "end"
        ]
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.contains(",MARK,\"stamped, with comma\","));
    // The sender's CLOCK_MONOTONIC stamp is kept (between our two readings of the clock).
    assert!(
        m[1].0 >= t_before && m[1].0 <= t_after,
        "{} not in [{t_before}, {t_after}]",
        m[1].0
    );
    assert_eq!(m[3].0, 5);
    // Both GPUs sampled every tick; gpu_index set.
    let samples: Vec<&Vec<String>> = rows.iter().filter(|r| r[2] == "SAMPLE").collect();
    assert!(samples.len() > 100);
    assert_eq!(samples[0][10], "0");
    assert_eq!(samples[1][10], "1");
    // The FIFO the recorder created is gone; mark now fails clearly.
    assert!(!fifo.exists());
    let o = Command::new(BIN)
        .args(["mark", "x", "--fifo"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("No such file"));
    // A FIFO with no recorder on it: ENXIO, "no recorder is listening".
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = Command::new(BIN)
        .args(["mark", "x", "--fifo"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no recorder is listening"),
        "{:?}",
        o
    );
    // No FIFO named at all.
    let o = Command::new(BIN)
        .args(["mark", "x"])
        .env_remove("FLINCH_MARKS")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("FLINCH_MARKS"));
    // A regular file is not a marks FIFO, for mark and for record.
    let reg = d.join("regular");
    std::fs::write(&reg, "").unwrap();
    let o = Command::new(BIN)
        .args(["mark", "x", "--fifo"])
        .arg(&reg)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a FIFO"));
    assert_eq!(std::fs::read(&reg).unwrap(), b"");
    let o = record(&d)
        .args(["--seconds", "0.1", "--out"])
        .arg(d.join("u.csv"))
        .arg("--marks-fifo")
        .arg(&reg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists but is not a FIFO"));
    let _ = std::fs::remove_dir_all(&d);
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn signal_ends_cleanly(sig: i32, name: &str) {
    let d = tmpdir(name);
    let csv = d.join("t.csv");
    let child = record(&d)
        .args(["--interval-ms", "2", "--seconds", "inf", "--out"])
        .arg(&csv)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it run past a few flushes, then signal it mid-recording.
    wait_for("rows on disk", || {
        std::fs::read_to_string(&csv).is_ok_and(|t| t.lines().count() > 100)
    });
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let o = finish(child);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("{name} received")), "{stderr}");
    let rows = whole_rows(&csv);
    let m = meta(&csv);
    // Every tick taken is in the file: two GPU rows per tick.
    let ticks = m["health"]["ticks"].as_u64().unwrap();
    let samples = rows.iter().filter(|r| r[2] == "SAMPLE").count() as u64;
    assert_eq!(samples, 2 * ticks);
    assert_eq!(marks(&rows).last().unwrap().1, "end");
    assert_eq!(m["ended_by"], format!("{name} received"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sigint_ends_the_recording_with_every_sample_in_the_file() {
    signal_ends_cleanly(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_ends_the_recording_with_every_sample_in_the_file() {
    signal_ends_cleanly(libc::SIGTERM, "SIGTERM");
}

#[test]
fn command_is_recorded_for_its_lifetime_with_marks_and_its_exit_status() {
    let d = tmpdir("cmd");
    let csv = d.join("t.csv");
    let o = record(&d)
        .args(["--interval-ms", "5", "--out"])
        .arg(&csv)
        .arg("--")
        .args([
            "sh",
            "-c",
            "sleep 0.2; \"$FT\" mark inside; sleep 0.2; exit 3",
        ])
        .env("FT", BIN)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = whole_rows(&csv);
    let m = marks(&rows);
    let labels: Vec<&str> = m.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels, ["begin", "cmd_start", "inside", "cmd_end", "end"]);
    assert!(m[1].0 < m[2].0 && m[2].0 < m[3].0);
    assert!(m[3].0 - m[1].0 >= 400_000_000);
    assert_eq!(meta(&csv)["ended_by"], "command exited with status 3");
    let _ = std::fs::remove_dir_all(&d);
}

/// A command that cannot start fails before anything is recorded, with the shell's status:
/// 127 when it does not exist, 126 when it exists but cannot be executed.
#[test]
fn a_command_that_cannot_start_records_nothing_and_exits_127_or_126() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmpdir("nocmd");
    let plain = d.join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let plain = plain.to_str().unwrap().to_string();
    let dir = d.to_str().unwrap().to_string();
    for (cmd, code, want) in [
        (
            "/nonexistent/cmd",
            127,
            "cannot run /nonexistent/cmd: No such file",
        ),
        ("no-such-command-flinch", 127, "command not found"),
        (plain.as_str(), 126, "not executable"),
        (dir.as_str(), 126, "is a directory"),
    ] {
        let out = d.join("u.csv");
        let o = record(&d)
            .arg("--out")
            .arg(&out)
            .args(["--", cmd])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{cmd}: {stderr}");
        assert!(stderr.contains(want), "{cmd}: {stderr}");
        assert!(!out.exists(), "{cmd}: a recording was written");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A command that ignores SIGTERM: the first SIGTERM is passed on and the recording goes on;
/// the second kills the command, and the recording ends with every row in the file.
#[test]
fn a_second_signal_kills_a_command_that_ignores_the_first() {
    let d = tmpdir("stubborn");
    let csv = d.join("t.csv");
    let child = record(&d)
        .args(["--interval-ms", "5", "--out"])
        .arg(&csv)
        .args(["--", "sh", "-c", "trap '' TERM INT; exec sleep 40"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("cmd_start", || {
        std::fs::read_to_string(&csv)
            .is_ok_and(|t| t.contains("cmd_start") && t.lines().count() > 20)
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(500));
    let rows_between = std::fs::read_to_string(&csv).unwrap().lines().count();
    let t = Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = finish(child);
    assert!(t.elapsed() < Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(128 + 9), "{stderr}");
    assert!(stderr.contains("passed to the command"), "{stderr}");
    assert!(stderr.contains("killing the command"), "{stderr}");
    let rows = whole_rows(&csv);
    assert!(rows.len() + 1 >= rows_between, "rows lost");
    let labels: Vec<String> = marks(&rows).into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, ["begin", "cmd_start", "cmd_end", "end"]);
    assert_eq!(meta(&csv)["ended_by"], "command ended by signal 9");
    let _ = std::fs::remove_dir_all(&d);
}

/// Runs `record` with a watchdog: kills it (by its own pid) if it has not exited after `limit`.
fn output_within(mut c: Command, limit: Duration) -> (Output, Duration) {
    let t = Instant::now();
    let mut child = c
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Regression: `--out` naming a FIFO with no reader blocked in open() forever, deaf to SIGTERM.
/// Every output that is not a regular file (or a device such as /dev/null) is refused at once.
#[test]
fn outputs_that_are_not_files_are_refused_at_once() {
    let d = tmpdir("notfile");
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let ok = d.join("ok.csv");
    for (args, want) in [
        (vec!["--out".into(), fifo.clone()], "is a FIFO (named pipe)"),
        (vec!["--out".into(), sub.clone()], "is a directory"),
        (
            vec![
                "--out".into(),
                ok.clone(),
                "--host-jsonl".into(),
                fifo.clone(),
            ],
            "is a FIFO (named pipe)",
        ),
    ] {
        let mut c = record(&d);
        c.args(["--seconds", "1"]).args(&args);
        let (o, took) = output_within(c, Duration::from_secs(10));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    }
    assert!(stderr_of_dir_hint(&sub));
    // A character device is fine.
    let mut c = record(&d);
    c.args(["--seconds", "0.05", "--out", "/dev/null"]);
    let (o, _) = output_within(c, Duration::from_secs(10));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// The directory message suggests a file inside it.
fn stderr_of_dir_hint(dir: &Path) -> bool {
    let o = Command::new(BIN)
        .args(["record", "--no-rapl", "--seconds", "1", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stderr).contains(&format!("{}", dir.join("trace.csv").display()))
}

/// Regression: `--seconds 2 --interval-ms 2500` recorded 0.11 s. The recording spans the time
/// asked (its last sample at or after the end), and a mark sent meanwhile is in the file.
#[test]
fn a_recording_lasts_its_seconds_whatever_the_interval() {
    let d = tmpdir("span");
    let csv = d.join("t.csv");
    let fifo = d.join("marks");
    let t0 = Instant::now();
    let child = record(&d)
        .args(["--interval-ms", "2500", "--seconds", "2", "--out"])
        .arg(&csv)
        .arg("--marks-fifo")
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("a listening recorder", || {
        Command::new(BIN)
            .args(["mark", "early"])
            .env("FLINCH_MARKS", &fifo)
            .output()
            .unwrap()
            .status
            .success()
    });
    std::thread::sleep(Duration::from_millis(1000).saturating_sub(t0.elapsed()));
    let sent = Command::new(BIN)
        .args(["mark", "at_1s"])
        .env("FLINCH_MARKS", &fifo)
        .status()
        .unwrap();
    assert!(sent.success());
    let o = finish(child);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(t0.elapsed() >= Duration::from_secs(2));
    let rows = whole_rows(&csv);
    let m = marks(&rows);
    let labels: Vec<&str> = m.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels, ["begin", "early", "at_1s", "end"]);
    let samples: Vec<u64> = rows
        .iter()
        .filter(|r| r[2] == "SAMPLE")
        .map(|r| r[0].parse().unwrap())
        .collect();
    // One tick at the start and one at the end: 2 GPUs each.
    assert_eq!(samples.len(), 4, "{samples:?}");
    // The last tick at the end, measured from the recording's start (its first deadline; the
    // first sample itself may wake late on a loaded machine).
    let start = meta(&csv)["started_mono_ns"].as_u64().unwrap();
    let span = samples[3] - start;
    assert!(span >= 2_000_000_000, "spans {span} ns");
    assert!(span < 3_000_000_000, "spans {span} ns");
    assert!(samples[0] - start < 1_000_000_000, "{samples:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sigterm_to_the_recorder_is_forwarded_to_the_command() {
    let d = tmpdir("fwd");
    let csv = d.join("t.csv");
    let started = Instant::now();
    let child = record(&d)
        .args(["--interval-ms", "5", "--out"])
        .arg(&csv)
        .args(["--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("cmd_start", || {
        std::fs::read_to_string(&csv)
            .is_ok_and(|t| t.contains("cmd_start") && t.lines().count() > 20)
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = finish(child);
    assert!(started.elapsed() < Duration::from_secs(15));
    // The command died of SIGTERM: 128 + 15, the shell convention.
    assert_eq!(
        o.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = whole_rows(&csv);
    let labels: Vec<String> = marks(&rows).into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, ["begin", "cmd_start", "cmd_end", "end"]);
    assert_eq!(meta(&csv)["ended_by"], "command ended by signal 15");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_write_error_leaves_a_file_of_whole_rows_and_a_clear_error() {
    let d = tmpdir("full");
    let csv = d.join("t.csv");
    let limit: u64 = 20_000;
    let mut c = record(&d);
    c.args(["--interval-ms", "1", "--seconds", "10", "--out"])
        .arg(&csv);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &rl);
            Ok(())
        });
    }
    let t = Instant::now();
    let o = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "did not stop at the write error"
    );
    assert!(
        stderr.contains("error: writing") && stderr.contains("File too large"),
        "{stderr}"
    );
    assert!(
        stderr.contains("complete up to its last whole row"),
        "{stderr}"
    );
    let len = std::fs::metadata(&csv).unwrap().len();
    assert!(len <= limit && len > limit - 500, "{len}");
    let rows = whole_rows(&csv);
    assert!(rows.len() > 50);

    // /dev/full: the header cannot be written.
    let o = record(&d)
        .args(["--seconds", "1", "--out", "/dev/full"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("No space left on device"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn appending_keeps_one_header() {
    let d = tmpdir("append");
    let csv = d.join("t.csv");
    for _ in 0..2 {
        let o = record(&d)
            .args(["--seconds", "0.05", "--out"])
            .arg(&csv)
            .output()
            .unwrap();
        assert!(o.status.success());
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.matches("t_mono_ns").count(), 1);
    assert_eq!(marks(&whole_rows(&csv)).len(), 4);
    assert_eq!(meta(&csv)["appended"], true);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rapl_zones_from_a_fake_tree_and_one_warning_for_unreadable_ones() {
    let d = tmpdir("rapl");
    let root = d.join("powercap");
    for (dir, name, e) in [
        ("intel-rapl:0", "package-0", "1000"),
        ("intel-rapl:0:0", "core", "50"),
        ("intel-rapl:0:1", "dram", ""),
    ] {
        let z = root.join(dir);
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
        if e.is_empty() {
            // Unreadable for everyone, root included: a directory where the file should be.
            std::fs::create_dir(z.join("energy_uj")).unwrap();
        } else {
            std::fs::write(z.join("energy_uj"), format!("{e}\n")).unwrap();
        }
    }
    let csv = d.join("t.csv");
    let o = Command::new(BIN)
        .arg("record")
        .arg("--scripted-gpu")
        .arg(script(&d))
        .arg("--powercap-root")
        .arg(&root)
        .args(["--seconds", "0.1", "--out"])
        .arg(&csv)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stderr.matches("warning: RAPL").count(), 1, "{stderr}");
    assert!(
        stderr.contains("1 of 3") && stderr.contains("CVE-2020-8694") && stderr.contains("chmod"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.ends_with(
            ",rapl_max_energy_range_uj,mark_thread,rapl_package-0_core_uj,rapl_package-0_dram_uj"
        ),
        "{header}"
    );
    let first = whole_rows(&csv)
        .into_iter()
        .find(|r| r[2] == "SAMPLE")
        .unwrap();
    assert_eq!(first[9], "1000");
    assert_eq!(first[17], "262143328850");
    assert_eq!(&first[18..], ["", "50", ""]);
    // The second GPU's row of the tick leaves the tick fields empty.
    let second = whole_rows(&csv)
        .into_iter()
        .filter(|r| r[2] == "SAMPLE")
        .nth(1)
        .unwrap();
    assert_eq!(second[10], "1");
    assert_eq!(second[9], "");
    let m = meta(&csv);
    assert_eq!(m["rapl_zones"][2]["readable"], false);
    assert_eq!(
        m["rapl_zones"][0]["max_energy_range_uj"],
        262_143_328_850u64
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn without_nvml_one_warning_and_host_rows_or_an_error_with_require_gpu() {
    let d = tmpdir("nogpu");
    let csv = d.join("t.csv");
    let jsonl = d.join("telemetry.jsonl");
    let o = Command::new(BIN)
        .args([
            "record",
            "--no-rapl",
            "--seconds",
            "0.35",
            "--interval-ms",
            "10",
            "--host-jsonl-interval-ms",
            "100",
            "--out",
        ])
        .arg(&csv)
        .arg("--host-jsonl")
        .arg(&jsonl)
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if stderr.contains("NVML unavailable") {
        assert!(o.status.success(), "{stderr}");
        assert_eq!(
            stderr.matches("warning: no GPU data").count(),
            1,
            "{stderr}"
        );
        let rows = whole_rows(&csv);
        let samples: Vec<&Vec<String>> = rows.iter().filter(|r| r[2] == "SAMPLE").collect();
        // Under load ticks may be missed (skipped, not bunched), so the count is checked against the
        // sampler's own tick count rather than against 0.35 s / 10 ms.
        let ticks = meta(&csv)["health"]["ticks"].as_u64().unwrap();
        assert!(ticks >= 2, "{ticks}");
        assert_eq!(samples.len() as u64, ticks);
        assert!(samples.iter().all(|r| r[4].is_empty() && r[10].is_empty()));
        // Host memory on the host-read ticks (every 100 ms), CPU % too.
        assert!(samples[0][15].parse::<u64>().unwrap() > 0);
        let cpu: Vec<f64> = samples.iter().filter_map(|r| r[14].parse().ok()).collect();
        assert!(
            cpu.len() >= 2 && cpu.iter().all(|c| (0.0..=100.0).contains(c)),
            "{cpu:?}"
        );
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(lines.len() >= 3);
        assert!(lines[0]["unix"].as_f64().unwrap() > 1.6e9);
        assert!(lines[0]["host_memory"]["available"].as_u64().unwrap() > 0);
        assert!(lines[0]["host_memory"]["used"].as_u64().unwrap() > 0);
        assert!(lines[0].get("gpu_csv").is_none());
        let o = Command::new(BIN)
            .args(["record", "--require-gpu", "--seconds", "0.1", "--out"])
            .arg(d.join("u.csv"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stderr).contains("--require-gpu"));
        assert!(!d.join("u.csv").exists());
    } else {
        // A machine with a working NVML: nothing of this test applies.
        eprintln!("NVML present; skipping the no-GPU checks");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn host_jsonl_feeds_flinch_trace_summarize() {
    let d = tmpdir("summarize");
    let host_dir = d.join("runs/r1-host");
    std::fs::create_dir_all(&host_dir).unwrap();
    let o = Command::new(BIN)
        .arg("record")
        .arg("--scripted-gpu")
        .arg(script(&d))
        .args(["--seconds", "1", "--host-jsonl-interval-ms", "100", "--out"])
        .arg(d.join("t.csv"))
        .arg("--host-jsonl")
        .arg(host_dir.join("telemetry.jsonl"))
        .arg("--powercap-root")
        .arg(d.join("no-powercap"))
        .arg("--rapl")
        .arg(d.join("no-such-energy_uj"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("--rapl") && stderr.contains("no such file"),
        "{stderr}"
    );
    let o = Command::new(BIN)
        .arg("summarize")
        .arg("--runs")
        .arg(d.join("runs"))
        .arg("--out")
        .arg(d.join("s.json"))
        .arg("--skip-traces")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("s.json")).unwrap()).unwrap();
    let w = &s["telemetry"]["r1"]["whole_run"];
    // One row per 100 ms grid point, 0 to 1 s inclusive (one may be lost if a loaded machine
    // skips that tick).
    let n = w["samples"].as_u64().unwrap();
    assert!(n == 11 || n == 10, "{n}");
    assert_eq!(w["metrics"]["gpu_power_w"]["n"], n);
    assert_eq!(w["metrics"]["gpu_mem_clock_mhz"]["max"], 2619.0);
    assert!(w["metrics"]["host_used_bytes"]["min"].as_f64().unwrap() > 0.0);
    // 11 rows 0.1 s apart at ~200-210 W: about 1 s x 205 W.
    let e = w["whole_gpu_energy_j_over_observed_intervals"]
        .as_f64()
        .unwrap();
    assert!((150.0..250.0).contains(&e), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn host_jsonl_carries_gpu_csv_with_ten_fields() {
    let d = tmpdir("jsonl");
    let jsonl = d.join("t.jsonl");
    let o = record(&d)
        .args([
            "--seconds",
            "0.25",
            "--host-jsonl-interval-ms",
            "100",
            "--out",
        ])
        .arg(d.join("t.csv"))
        .arg("--host-jsonl")
        .arg(&jsonl)
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut text = String::new();
    std::fs::File::open(&jsonl)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let g = first["gpu_csv"].as_str().unwrap();
    assert_eq!(g.split(',').count(), 10);
    // index, uuid, mem used, mem total, temp, power, sm clock, mem clock, util, mem util
    assert_eq!(g, "0,GPU-scripted-0,5000,81559,60,200,1900,2619,90,30");
    assert_eq!(first["gpus_csv"].as_array().unwrap().len(), 2);
    assert_eq!(text.lines().count(), 3);
    let _ = std::fs::remove_dir_all(&d);
}

/// Unmounts on drop, so a failed assertion does not leave the tmpfs behind.
struct Mount(std::ffi::CString);

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: valid path.
        unsafe { libc::umount2(self.0.as_ptr(), libc::MNT_DETACH) };
    }
}

#[test]
fn a_full_tmpfs_gives_enospc_and_a_file_of_whole_rows() {
    let d = tmpdir("tmpfs");
    let mnt = d.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let target = std::ffi::CString::new(mnt.to_str().unwrap()).unwrap();
    let (src, fstype, opts) = (c"tmpfs", c"tmpfs", c"size=64k");
    // SAFETY: valid C strings.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    if rc != 0 {
        // Needs CAP_SYS_ADMIN; the RLIMIT_FSIZE test covers the same path without it.
        eprintln!(
            "cannot mount a tmpfs here ({}); skipped",
            std::io::Error::last_os_error()
        );
        return;
    }
    let _guard = Mount(target);
    let csv = mnt.join("t.csv");
    let o = record(&d)
        .args(["--interval-ms", "1", "--seconds", "20", "--out"])
        .arg(&csv)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("No space left on device") && stderr.contains("last whole row"),
        "{stderr}"
    );
    let rows = whole_rows(&csv);
    assert!(rows.len() > 100);
    drop(_guard);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_arguments_are_clear_errors() {
    let d = tmpdir("args");
    let out = d.join("t.csv");
    for (args, want) in [
        (&["--gpu", "0,0"][..], "lists a GPU twice"),
        (
            &["--interval-ms", "0"],
            "'0' for '--interval-ms <MS>': expected a number of ms from 0.05",
        ),
        (
            &["--interval-ms", "-5"],
            "'-5' for '--interval-ms <MS>': expected a number of ms from 0.05",
        ),
        (
            &["--seconds", "0"],
            "'0' for '--seconds <S>': expected a positive number",
        ),
        (
            &["--seconds", "-1"],
            "'-1' for '--seconds <S>': expected a positive number",
        ),
        (
            &["--seconds", "1", "--", "true"],
            "either --seconds or a command",
        ),
        (
            &["--fake-clock-step-ns", "1", "--seconds", "inf"],
            "finite --seconds",
        ),
    ] {
        let o = Command::new(BIN)
            .arg("record")
            .arg("--out")
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        // Usage errors, all of them: exit 2.
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote a file");
    }
    let o = record(&d)
        .args(["--gpu", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--gpu does not apply"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn mark_gives_up_on_a_fifo_nobody_drains() {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let d = tmpdir("stuck");
    let fifo = d.join("marks");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A "recorder" that holds the FIFO open but never reads: fill the pipe.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    while f.write(&[b'x'; 4096]).is_ok() {}
    let t = Instant::now();
    let o = Command::new(BIN)
        .args(["mark", "late", "--fifo"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("stayed full"),
        "{o:?}"
    );
    assert!(t.elapsed() >= Duration::from_secs(2));
    drop(f);
    let _ = std::fs::remove_dir_all(&d);
}

/// The recorder ignores SIGXFSZ so that a file size limit is an error it reports; the command it
/// starts must not inherit that: it gets SIGXFSZ as the recorder found it (the default here).
#[test]
fn the_command_keeps_the_default_file_size_signal() {
    let d = tmpdir("xfsz");
    let csv = d.join("t.csv");
    let status = d.join("status.txt");
    let o = record(&d)
        .args(["--interval-ms", "5", "--out"])
        .arg(&csv)
        .arg("--")
        .args(["sh", "-c", "grep '^SigIgn' /proc/self/status > \"$OUT\""])
        .env("OUT", &status)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = std::fs::read_to_string(&status).unwrap();
    let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    let xfsz_bit = 1u64 << (libc::SIGXFSZ - 1);
    assert_eq!(mask & xfsz_bit, 0, "SIGXFSZ ignored in the command: {line}");
    let _ = std::fs::remove_dir_all(&d);
}
