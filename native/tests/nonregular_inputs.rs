//! Inputs that are not regular files (FIFOs, pipes on `/dev/stdin`, process substitution): each
//! is opened once, and where a job reads its input again it is spooled to a temporary file
//! (docs/robustness.md, "Inputs that are not regular files"). Every run here is bounded in time,
//! so a hang fails the test instead of blocking it, and each result is compared with the same
//! job on a regular file.
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{bin, tmpdir};

/// Long enough for a debug build on a loaded machine; a hang is forever.
const LIMIT: Duration = Duration::from_secs(90);

const BASE: i64 = 1_764_000_000_000_000_000;

/// Runs `cmd` (its stdin fed `stdin` from a thread, when given) and waits at most [`LIMIT`]:
/// past it the process is killed and the test fails, naming `what`. Every byte of `stdin` must
/// have been taken.
fn bounded(what: &str, cmd: Command, stdin: Option<Vec<u8>>) -> Output {
    let (out, fed) = bounded_feed(what, cmd, stdin);
    assert!(fed.is_ok(), "{what}: writing its stdin failed: {fed:?}");
    out
}

/// [`bounded`], with the result of feeding stdin instead of a check of it (a process that
/// fails may stop reading).
fn bounded_feed(
    what: &str,
    mut cmd: Command,
    stdin: Option<Vec<u8>>,
) -> (Output, std::io::Result<()>) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let feeder = stdin.map(|data| {
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || pipe.write_all(&data))
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LIMIT) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: plain kill(2) of the child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: still running after {LIMIT:?} (a hang)");
        }
    };
    let fed = feeder.map_or(Ok(()), |f| f.join().unwrap());
    (out, fed)
}

/// A FIFO with a writer thread that opens it and writes `data` (the writer's result comes
/// back from [`Fifo::finish`]).
struct Fifo {
    path: PathBuf,
    writer: Option<JoinHandle<std::io::Result<()>>>,
}

impl Fifo {
    fn new(path: PathBuf, data: Vec<u8>) -> Fifo {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let p = path.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&p)?;
            f.write_all(&data)
        });
        Fifo {
            path,
            writer: Some(writer),
        }
    }

    /// After the reader ended: the writer's result. A writer still waiting for a reader is
    /// released (and then fails: nobody read its bytes).
    fn finish(mut self) -> std::io::Result<()> {
        let w = self.writer.take().unwrap();
        for _ in 0..50 {
            if w.is_finished() {
                break;
            }
            // A reader that opens and closes at once frees a writer blocked in open(2).
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.path);
            std::thread::sleep(Duration::from_millis(20));
        }
        w.join().unwrap()
    }
}

/// A trace.csv with `marks` step_K_start/step_K_end marks (pairs) among samples of one GPU,
/// every 5 ms.
fn many_marks_csv(marks: usize) -> Vec<u8> {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_index,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n",
    );
    let mut t = 1_000_000_000u64;
    for k in 0..marks {
        s.push_str(&format!(
            "{t},{t},SAMPLE,,0,{}.25,{},3,1400,60,{}\n",
            60 + (k % 13) * 20,
            (k * 7) % 101,
            k * 1234
        ));
        let label = if k % 2 == 0 {
            format!("step_{}_start", k / 2)
        } else {
            format!("step_{}_end", k / 2)
        };
        s.push_str(&format!("{t},0,MARK,{label},,,,,,,\n"));
        t += 5_000_000;
    }
    s.into_bytes()
}

/// A Kineto-like trace of `kernels` 1 ms kernels on device 0, 2 ms apart, with a 120 ms pause
/// after every 50th and a host op in each pause; `baseTimeNanoseconds` = [`BASE`].
fn trace_json(kernels: usize) -> Vec<u8> {
    let mut evs = Vec::new();
    let mut ts = 1_000_000u64;
    for k in 0..kernels {
        evs.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{ts}.5,"dur":1000}}"#,
            k % 17
        ));
        ts += 2000;
        if k % 50 == 49 {
            evs.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::item","pid":9,"tid":9,"ts":{}.5,"dur":100000}}"#,
                ts + 5000
            ));
            ts += 120_000;
        }
    }
    format!(
        "{{\"traceEvents\":[\n{}\n],\"traceName\":\"t\",\"baseTimeNanoseconds\":{BASE}}}\n",
        evs.join(",\n")
    )
    .into_bytes()
}

/// A recording of device 0 over the trace's time (wall = BASE + ts), every 10 ms: 100 W idle
/// in the pauses' time, 300 W else (roughly), with two marks.
fn recording_csv(seconds: u64) -> Vec<u8> {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    let mono = 1_000_000_000i64;
    for k in 0..(seconds as i64 * 100) {
        let t = 900_000_000 + k * 10_000_000;
        let (p, u) = if k % 23 < 12 { (300, 90) } else { (100, 0) };
        s.push_str(&format!(
            "{},{},SAMPLE,,{p},{u},,,,,0\n",
            mono + t,
            BASE + t
        ));
        if k == 50 || k == 90 {
            s.push_str(&format!(
                "{},{},MARK,{},,,,,,,\n",
                mono + t,
                BASE + t,
                if k == 50 { "b_start" } else { "b_end" }
            ));
        }
    }
    s.into_bytes()
}

fn write(d: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON with every `"source"` value (the path given) taken out.
fn without_source(text: &str) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("source");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_str(text).unwrap();
    strip(&mut v);
    v
}

fn spool_note(out: &Output, path: &str) {
    let e = stderr(out);
    assert!(
        e.contains(&format!(
            "note: {path} is not a regular file; spooling it to a temporary file"
        )),
        "{e}"
    );
}

/// `analyze --csv FIFO --spans` past the 4,096 marks the first pass holds: the spans come from
/// a second pass, which reads the spool (the FIFO is opened once), and they are the spans of
/// the regular file.
#[test]
fn analyze_spans_of_a_fifo_with_many_marks_are_the_regular_files() {
    let d = tmpdir("an-fifo");
    let csv = many_marks_csv(10_000);
    let file = write(&d, "m.csv", &csv);
    let mut c = bin();
    c.args(["analyze", "--spans", "--csv"]).arg(&file);
    let want = ok("regular", &bounded("analyze FILE --spans", c, None));
    assert!(want.lines().count() >= 5_000, "{want}");
    let fifo = Fifo::new(d.join("fifo.csv"), csv);
    let mut c = bin();
    c.args(["analyze", "--spans", "--csv"]).arg(&fifo.path);
    let out = bounded("analyze FIFO --spans", c, None);
    assert_eq!(ok("fifo", &out), want);
    spool_note(&out, fifo.path.to_str().unwrap());
    fifo.finish().expect("the writer wrote every byte");
    let _ = std::fs::remove_dir_all(&d);
}

/// `cat m.csv | analyze --csv /dev/stdin --json` and `--spans`, and `--csv <(cat m.csv)`: the
/// full result of the regular file, never 0 spans with exit 0.
#[test]
fn analyze_json_and_spans_from_a_pipe_are_the_regular_files() {
    let d = tmpdir("an-pipe");
    let csv = many_marks_csv(10_000);
    let file = write(&d, "m.csv", &csv);
    for mode in ["--json", "--spans"] {
        let mut c = bin();
        c.args(["analyze", mode, "--csv"]).arg(&file);
        let want = ok("regular", &bounded("analyze FILE", c, None));
        let mut c = bin();
        c.args(["analyze", mode, "--csv", "/dev/stdin"]);
        let out = bounded("analyze /dev/stdin", c, Some(csv.clone()));
        let got = ok("pipe", &out);
        spool_note(&out, "/dev/stdin");
        // Process substitution: a pipe on /dev/fd/N.
        let mut c = Command::new("bash");
        c.arg("-c")
            .arg(format!("exec \"$0\" analyze {mode} --csv <(cat \"$1\")"))
            .arg(env!("CARGO_BIN_EXE_flinch-trace"))
            .arg(&file);
        let subst = ok("<(cat)", &bounded("analyze <(cat FILE)", c, None));
        if mode == "--json" {
            let v = without_source(&got);
            assert_eq!(v["rows"]["marks"], 10_000, "{}", v["rows"]);
            assert!(v["spans"].as_array().unwrap().len() >= 5_000);
            assert_eq!(v, without_source(&want));
            assert_eq!(without_source(&subst), without_source(&want));
        } else {
            assert!(want.lines().count() >= 5_000);
            assert_eq!(got, want);
            assert_eq!(subst, want);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Plain `trace FIFO --json`: the FIFO is opened once, so the writer never gets EPIPE and every
/// event is read (no `truncated`), as from the regular file; no spool with `--bounded`.
#[test]
fn trace_json_of_a_fifo_reads_every_event() {
    let d = tmpdir("tr-fifo");
    let trace = trace_json(6_000);
    assert!(trace.len() > 256 << 10, "more than a pipe's buffer");
    let file = write(&d, "t.json", &trace);
    for extra in [None, Some("--bounded"), Some("--mergeable")] {
        let mut c = bin();
        c.args(["trace", "--json"]).args(extra).arg(&file);
        let want = ok("regular", &bounded("trace FILE --json", c, None));
        let fifo = Fifo::new(d.join("fifo.json"), trace.clone());
        let mut c = bin();
        c.args(["trace", "--json"]).args(extra).arg(&fifo.path);
        let out = bounded("trace FIFO --json", c, None);
        let got = without_source(&ok("fifo", &out));
        fifo.finish().expect("the writer wrote every byte");
        assert_eq!(got["truncated"], false, "{extra:?}");
        assert_eq!(got, without_source(&want), "{extra:?}");
        let noted = stderr(&out).contains("spooling it to a temporary file");
        // --bounded reads the trace once: nothing to spool.
        assert_eq!(
            noted,
            extra != Some("--bounded"),
            "{extra:?}: {}",
            stderr(&out)
        );
        std::fs::remove_file(d.join("fifo.json")).unwrap();
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `trace <(cat t.json) --pauses`, `trace FIFO --pauses`, and `cat t.json | trace /dev/stdin
/// --telemetry rec.csv`: the join's second pass reads the spool (no "Illegal seek", no hang),
/// with the regular file's result.
#[test]
fn trace_pauses_and_telemetry_from_a_pipe_are_the_regular_files() {
    let d = tmpdir("tr-join");
    let trace = trace_json(3_000);
    let file = write(&d, "t.json", &trace);
    let rec = write(&d, "rec.csv", &recording_csv(14));
    let want_pauses = {
        let mut c = bin();
        c.args(["trace", "--json", "--pauses"]).arg(&file);
        without_source(&ok("regular", &bounded("trace FILE --pauses", c, None)))
    };
    assert!(want_pauses["pauses"].as_array().unwrap().len() >= 40);
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg("exec \"$0\" trace --json --pauses <(cat \"$1\")")
        .arg(env!("CARGO_BIN_EXE_flinch-trace"))
        .arg(&file);
    let out = bounded("trace <(cat FILE) --pauses", c, None);
    assert_eq!(without_source(&ok("<(cat)", &out)), want_pauses);

    let fifo = Fifo::new(d.join("fifo.json"), trace.clone());
    let mut c = bin();
    c.args(["trace", "--json", "--pauses"]).arg(&fifo.path);
    let out = bounded("trace FIFO --pauses", c, None);
    assert_eq!(without_source(&ok("fifo", &out)), want_pauses);
    fifo.finish().expect("the writer wrote every byte");

    let mut c = bin();
    c.args(["trace", "--json", "--telemetry"])
        .arg(&rec)
        .arg(&file);
    let want = without_source(&ok("regular", &bounded("trace FILE --telemetry", c, None)));
    assert!(want["pauses"][0]["telemetry"].is_object(), "{want}");
    let mut c = bin();
    c.args(["trace", "--json", "--telemetry"])
        .arg(&rec)
        .arg("/dev/stdin");
    let out = bounded("trace /dev/stdin --telemetry", c, Some(trace));
    assert_eq!(without_source(&ok("pipe", &out)), want);
    spool_note(&out, "/dev/stdin");
    let _ = std::fs::remove_dir_all(&d);
}

/// `trace t.json --telemetry FIFO --perfetto out.json`: the recording is read twice (the join,
/// then the merged file) through its spool; the merged file is the regular file's, byte for
/// byte, never left empty.
#[test]
fn perfetto_with_the_recording_on_a_fifo_is_the_regular_files() {
    let d = tmpdir("tr-perfetto");
    let file = write(&d, "t.json", &trace_json(1_000));
    let rec_bytes = recording_csv(5);
    let rec = write(&d, "rec.csv", &rec_bytes);
    let want_out = d.join("want.json");
    let mut c = bin();
    c.args(["trace", "--json", "--telemetry"])
        .arg(&rec)
        .arg("--perfetto")
        .arg(&want_out)
        .arg(&file);
    let want = without_source(&ok("regular", &bounded("--perfetto", c, None)));
    let want_bytes = std::fs::read(&want_out).unwrap();
    assert!(want_bytes.len() > 100_000);

    let fifo = Fifo::new(d.join("rec.fifo"), rec_bytes);
    let out_path = d.join("out.json");
    let mut c = bin();
    c.args(["trace", "--json", "--telemetry"])
        .arg(&fifo.path)
        .arg("--perfetto")
        .arg(&out_path)
        .arg(&file);
    let out = bounded("--telemetry FIFO --perfetto", c, None);
    assert_eq!(without_source(&ok("fifo", &out)), want);
    spool_note(&out, fifo.path.to_str().unwrap());
    fifo.finish().expect("the writer wrote every byte");
    assert!(
        std::fs::read(&out_path).unwrap() == want_bytes,
        "merged files differ"
    );

    // The trace on a pipe: the merged file is copied from its spool in the join's second pass.
    let pipe_out = d.join("pipe.json");
    let mut c = bin();
    c.args(["trace", "--json", "--telemetry"])
        .arg(&rec)
        .arg("--perfetto")
        .arg(&pipe_out)
        .arg("/dev/stdin");
    let trace = std::fs::read(&file).unwrap();
    let out = bounded("/dev/stdin --perfetto", c, Some(trace));
    assert_eq!(without_source(&ok("pipe", &out)), want);
    spool_note(&out, "/dev/stdin");
    assert!(
        std::fs::read(&pipe_out).unwrap() == want_bytes,
        "merged files differ (the trace on a pipe)"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A spool that cannot be written (a file size limit here: EFBIG; a full disk gives ENOSPC the
/// same way) is one line naming the input, exit status 1, and no partial result; a `TMPDIR`
/// where no file can be made fails before anything is read.
#[test]
fn a_spool_that_cannot_be_written_is_a_clear_error() {
    let d = tmpdir("spool-err");
    let csv = many_marks_csv(10_000);
    let mut c = bin();
    c.args(["analyze", "--spans", "--csv", "/dev/stdin"]);
    // SAFETY: setrlimit is async-signal-safe; the child runs it before exec. SIGXFSZ keeps its
    // default: the binary itself must turn the limit into an error.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (out, _) = bounded_feed("analyze with a full spool", c, Some(csv));
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("/dev/stdin: spooling to a temporary file in ") && e.contains("File too large"),
        "{e}"
    );
    assert!(out.stdout.is_empty(), "no partial result");

    let mut c = bin();
    c.env("TMPDIR", d.join("missing"))
        .args(["analyze", "--spans", "--csv", "/dev/stdin"]);
    // It fails before reading: the feed may meet a closed pipe.
    let (out, _) = bounded_feed("TMPDIR missing", c, Some(b"t_mono_ns\n".to_vec()));
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("cannot open /dev/stdin: spooling to a temporary file in ")
            && e.contains("No such file or directory"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// On a small full tmpfs (needs CAP_SYS_ADMIN; skipped without): ENOSPC on the spool is one
/// line naming the input and the reason, exit status 1.
#[test]
fn a_full_tmpfs_under_the_spool_gives_enospc() {
    let d = tmpdir("spool-tmpfs");
    let mnt = d.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let target = std::ffi::CString::new(mnt.to_str().unwrap()).unwrap();
    // SAFETY: valid C strings.
    let rc = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            c"size=64k".as_ptr().cast(),
        )
    };
    if rc != 0 {
        eprintln!(
            "cannot mount a tmpfs here ({}); skipped",
            std::io::Error::last_os_error()
        );
        return;
    }
    let mut c = bin();
    c.env("TMPDIR", &mnt)
        .args(["trace", "--json", "--pauses", "/dev/stdin"]);
    let (out, _) = bounded_feed("trace on a full tmpfs", c, Some(trace_json(6_000)));
    // SAFETY: valid C string; the mount this test made.
    unsafe { libc::umount(target.as_ptr()) };
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("/dev/stdin: spooling to a temporary file in ")
            && e.contains("No space left on device"),
        "{e}"
    );
    assert!(out.stdout.is_empty(), "no partial result");
    let _ = std::fs::remove_dir_all(&d);
}

/// A job that reads its input once takes a pipe as it comes: no spool, no note.
#[test]
fn one_pass_jobs_read_a_pipe_without_a_spool() {
    let csv = many_marks_csv(200);
    let mut c = bin();
    c.args([
        "analyze",
        "--csv",
        "/dev/stdin",
        "--start",
        "step_3_start",
        "--end",
        "step_3_end",
    ]);
    let out = bounded("analyze /dev/stdin window", c, Some(csv));
    let text = ok("window", &out);
    assert!(text.contains("duration_s="), "{text}");
    assert!(!stderr(&out).contains("spooling"), "{}", stderr(&out));
}
