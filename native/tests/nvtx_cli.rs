//! NVTX ranges become marks with no change to the program: real NVTX clients (a C program built
//! with gcc against the NVTX v3 headers of the `nvidia-nvtx` wheel, and the `nvtx` Python package)
//! run under `flinch-trace record -- CMD` with the injection library `libflinch_nvtx.so`, then
//! `flinch-trace analyze --spans --json` must find every range with the duration the client saw.
//!
//! Needs what `scripts/setup.sh` installs: a virtual environment at `target/nvtx-env` (or
//! `$FLINCH_NVTX_ENV`) with `nvtx` and `nvidia-nvtx`, and gcc. A missing piece fails the test with
//! the command that installs it; nothing is skipped.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{repo, tmpdir};

const BIN: &str = env!("CARGO_BIN_EXE_flinch-trace");
/// One GPU, constant: the GPU does not matter here, the marks do.
const SCRIPT: &str = "gpus 1\n100,50,10,1500,50,1000,100,0\n";

/// The injection library `cargo build` put beside the binary.
fn library() -> PathBuf {
    let lib = Path::new(BIN).with_file_name("libflinch_nvtx.so");
    assert!(
        lib.is_file(),
        "{} is not built: run `cargo build -p flinch-nvtx` first (`scripts/test-all.sh` does)",
        lib.display()
    );
    lib
}

fn nvtx_env() -> PathBuf {
    let env = std::env::var_os("FLINCH_NVTX_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/nvtx-env"));
    assert!(
        env.join("bin/python").is_file(),
        "no NVTX test environment at {}: run scripts/setup.sh (it makes the venv with the `nvtx` \
         and `nvidia-nvtx` packages)",
        env.display()
    );
    env
}

/// The folder holding `nvtx3/nvToolsExt.h` inside the venv's `nvidia-nvtx` wheel.
fn nvtx_include() -> PathBuf {
    let env = nvtx_env();
    let out = Command::new(env.join("bin/python"))
        .args([
            "-c",
            "import pathlib, nvidia; print(next(p.parent.parent for d in nvidia.__path__ \
             for p in pathlib.Path(d).rglob('nvtx3/nvToolsExt.h')))",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the nvidia-nvtx headers are missing from {}: run scripts/setup.sh\n{}",
        env.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Builds the C client (tests/clients/nvtx_client.c of the nvtx crate) into `dir`.
fn c_client(dir: &Path) -> PathBuf {
    let src = repo().join("nvtx/tests/clients/nvtx_client.c");
    let exe = dir.join("nvtx_client");
    let out = Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(nvtx_include())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(["-ldl", "-lpthread"])
        .output()
        .expect("gcc (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// `flinch-trace record ... --out DIR/trace.csv -- CMD...`, with the scripted GPU.
fn record(dir: &Path, extra: &[&str], cmd: &[&Path], args: &[&str]) -> Output {
    let script = dir.join("gpu.script");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut c = Command::new(BIN);
    c.arg("record")
        .arg("--scripted-gpu")
        .arg(&script)
        .args(["--no-rapl", "--no-host", "--interval-ms", "5", "--out"])
        .arg(dir.join("trace.csv"))
        .args(extra)
        .arg("--")
        .args(cmd)
        .args(args)
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("FLINCH_MARKS");
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "record failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn analyze(dir: &Path) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["analyze", "--spans", "--json", "--csv"])
        .arg(dir.join("trace.csv"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sidecar(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("trace.csv.meta.json")).unwrap())
        .unwrap()
}

/// What the client printed: `(label, lo_ns, hi_ns)` per range and the mark labels.
fn client_expectations(stdout: &str) -> (Vec<(String, i64, i64)>, Vec<String>) {
    let (mut spans, mut marks) = (Vec::new(), Vec::new());
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("span ") {
            let mut it = rest.rsplitn(3, ' ');
            let hi: i64 = it.next().unwrap().parse().unwrap();
            let lo: i64 = it.next().unwrap().parse().unwrap();
            spans.push((it.next().unwrap().to_string(), lo, hi));
        } else if let Some(label) = line.strip_prefix("mark ") {
            marks.push(label.to_string());
        }
    }
    (spans, marks)
}

/// Every range the client reported is a pair span in the analysis, ended by `<stem>_end`, with a
/// duration within the client's bounds; same-name ranges each match a span of their own, on
/// threads of their own. Returns the number of NVTX marks expected (two per range, one per mark).
fn check_analysis(stdout: &str, a: &serde_json::Value) -> usize {
    let (spans, marks) = client_expectations(stdout);
    assert!(spans.len() >= 8, "client printed too little:\n{stdout}");
    let pairs: Vec<&serde_json::Value> = a["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "pair")
        .collect();
    let mut used = vec![false; pairs.len()];
    for (label, lo, hi) in &spans {
        let stem = label.strip_suffix("_start").unwrap();
        let found = pairs.iter().enumerate().position(|(i, s)| {
            let d = s["t1_mono_ns"].as_i64().unwrap() - s["t0_mono_ns"].as_i64().unwrap();
            !used[i] && s["start_label"] == label.as_str() && *lo <= d && d <= *hi
        });
        let Some(i) = found else {
            let seen: Vec<String> = pairs
                .iter()
                .filter(|s| s["start_label"] == label.as_str())
                .map(|s| s.to_string())
                .collect();
            panic!(
                "no span {label} with duration in [{lo}, {hi}] ns; spans with that label: {seen:?}"
            );
        };
        used[i] = true;
        assert_eq!(pairs[i]["end_label"], format!("{stem}_end"));
        assert!(pairs[i]["thread"].as_u64().is_some(), "{}", pairs[i]);
    }
    // Same-name ranges on two threads: two spans, two threads.
    for label in ["work_start", "py_work_start"] {
        let threads: Vec<u64> = pairs
            .iter()
            .filter(|s| s["start_label"] == label)
            .map(|s| s["thread"].as_u64().unwrap())
            .collect();
        if !threads.is_empty() {
            assert_eq!(threads.len(), 2, "{label}");
            assert_ne!(threads[0], threads[1], "{label}");
        }
    }
    let labels: Vec<&str> = a["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap())
        .collect();
    for m in &marks {
        assert!(
            labels.contains(&m.as_str()),
            "mark {m:?} missing from {labels:?}"
        );
    }
    spans.len() * 2 + marks.len()
}

#[test]
fn c_client_ascii_wide_ex_domains_and_threads_become_spans_with_their_durations() {
    library();
    let d = tmpdir("c");
    let exe = c_client(&d);
    let out = record(&d, &[], &[&exe], &["scenario"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let a = analyze(&d);
    let n = check_analysis(&stdout, &a);
    // The range the client pushed inside dom:reg, on the default domain's own stack.
    let labels: Vec<&str> = a["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"default_in_dom_start") && labels.contains(&"default_in_dom_end"));
    // The text form names each pair's thread.
    let text = Command::new(BIN)
        .args(["analyze", "--spans", "--csv"])
        .arg(d.join("trace.csv"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let work: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("pair") && l.contains("work_start -> work_end"))
        .map(|l| l.rsplit_once(" thread=").unwrap().1)
        .collect();
    assert_eq!(work.len(), 2, "{text}");
    assert_ne!(work[0], work[1]);
    let meta = sidecar(&d);
    let nvtx = &meta["nvtx"];
    // The library the binary carries, written to a private folder for the recording.
    let lib = nvtx["library"].as_str().unwrap();
    assert!(
        lib.ends_with("/libflinch_nvtx.so") && lib.contains("/flinch-nvtx-"),
        "{lib}"
    );
    assert_eq!(nvtx["processes"], 1);
    assert_eq!(nvtx["dropped"], 0);
    // The client's ranges and marks, plus default_in_dom's two.
    assert_eq!(nvtx["marks"], (n + 2) as u64, "{nvtx}");
}

#[test]
fn python_nvtx_package_ranges_domain_marks_threads_and_a_fork_become_spans() {
    library();
    let d = tmpdir("py");
    let py = nvtx_env().join("bin/python");
    let script = repo().join("nvtx/tests/clients/nvtx_client.py");
    let out = record(&d, &[], &[&py, &script], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let a = analyze(&d);
    let n = check_analysis(&stdout, &a);
    let meta = sidecar(&d);
    // The script and its forked child each report.
    assert_eq!(meta["nvtx"]["processes"], 2, "{}", meta["nvtx"]);
    assert_eq!(meta["nvtx"]["dropped"], 0);
    assert_eq!(meta["nvtx"]["marks"], n as u64);
}

#[test]
fn no_nvtx_leaves_the_command_alone() {
    library();
    let d = tmpdir("off");
    let exe = c_client(&d);
    let out = record(&d, &["--no-nvtx"], &[&exe], &["scenario"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("span outer_start"));
    let a = analyze(&d);
    let labels: Vec<&str> = a["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["begin", "cmd_start", "cmd_end", "end"]);
    assert!(sidecar(&d)["nvtx"].is_null());
}

/// Runs the client with the library and `FLINCH_MARKS` set by hand.
fn run_injected(exe: &Path, fifo: &Path, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let out = Command::new(exe)
        .args(args)
        .env("NVTX_INJECTION64_PATH", library())
        .env("FLINCH_MARKS", fifo)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, t.elapsed())
}

#[test]
fn an_absent_or_stuck_reader_never_blocks_the_program_and_losses_are_reported() {
    let d = tmpdir("noreader");
    let exe = c_client(&d);
    // No such FIFO, then a FIFO with no reader: every mark is dropped, counted, at once.
    let fifo = d.join("marks");
    for case in ["missing", "no reader"] {
        if case == "no reader" {
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        let (out, took) = run_injected(&exe, &fifo, &["scenario"]);
        assert!(out.status.success(), "{case}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("flinch-nvtx: 32 of 32 NVTX marks dropped"),
            "{case}: {err}"
        );
        assert!(took < Duration::from_secs(5), "{case}: took {took:?}");
    }
    // A reader that holds the FIFO open and never reads: the pipe fills, the program goes on;
    // at exit the library waits its bounded time and says what it could not send.
    let hold = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let (out, took) = run_injected(&exe, &fifo, &["flood", "50000", "0.25"]);
    drop(hold);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("more were still queued at exit"), "{err}");
    assert!(took < Duration::from_secs(6), "took {took:?}");

    // A reader that leaves while the program runs: the program's own threads write the lines,
    // and a write to a FIFO without a reader raises SIGPIPE, which kills a C program by
    // default. The library must turn it into a counted loss, never a signal to the program.
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let child = Command::new(&exe)
        .args(["flood", "20000", "1.0"])
        .env("NVTX_INJECTION64_PATH", library())
        .env("FLINCH_MARKS", &fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_millis(300);
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0usize;
    while Instant::now() < until {
        got += reader.read(&mut buf).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(reader);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(got > 0, "nothing read before the reader left");
    assert!(
        out.status.success(),
        "the program died when the reader left: {:?} {err}",
        out.status
    );
    assert!(err.contains("NVTX marks dropped"), "{err}");
}

#[test]
fn a_second_of_100k_ranges_per_second_drops_nothing() {
    library();
    let d = tmpdir("flood");
    let exe = c_client(&d);
    let out = record(&d, &[], &[&exe], &["flood", "100000", "1.0"]);
    let meta = sidecar(&d);
    assert_eq!(
        meta["nvtx"]["dropped"],
        0,
        "{}\n{}",
        meta["nvtx"],
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(meta["nvtx"]["marks"], 200_000, "{}", meta["nvtx"]);
    let csv = std::fs::read_to_string(d.join("trace.csv")).unwrap();
    let starts = csv.matches(",MARK,flood_start,").count();
    let ends = csv.matches(",MARK,flood_end,").count();
    assert_eq!((starts, ends), (100_000, 100_000));
}

#[test]
fn forked_children_that_end_with_os_exit_keep_their_marks_or_count_them_dropped() {
    library();
    let d = tmpdir("osexit");
    let py = nvtx_env().join("bin/python");
    let script = repo().join("nvtx/tests/clients/nvtx_fork_exit.py");
    let (children, ranges) = (50usize, 20usize);
    record(&d, &[], &[&py, &script], &["50", "20"]);
    let csv = std::fs::read_to_string(d.join("trace.csv")).unwrap();
    let mut child_marks = 0usize;
    for c in 0..children {
        let starts = csv.matches(&format!(",MARK,child{c}_start,")).count();
        let ends = csv.matches(&format!(",MARK,child{c}_end,")).count();
        assert!(
            starts <= ranges && ends <= ranges,
            "child{c}: {starts} {ends}"
        );
        child_marks += starts + ends;
    }
    let meta = sidecar(&d);
    let nvtx = &meta["nvtx"];
    let dropped = nvtx["dropped"].as_u64().unwrap() as usize;
    // Every child's marks are in the CSV, or the missing ones are counted as dropped.
    assert_eq!(
        child_marks + dropped,
        children * ranges * 2,
        "{child_marks} child marks in the CSV, {nvtx}"
    );
    // Nothing stood in the way here (the recorder reads far faster than 1,000 lines arrive).
    assert_eq!(child_marks, children * ranges * 2, "{nvtx}");
    assert_eq!(nvtx["processes"], (children + 1) as u64, "{nvtx}");
    // The children ended with os._exit: no exit statistics from them, and the sidecar says so.
    assert_eq!(nvtx["unreported_processes"], children as u64, "{nvtx}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Regression: under load (50 processes writing 2,000 lines each, the pipe full most of the
/// time) a process's `start` line, written once without waiting, was lost whenever the pipe was
/// full at that moment, and so was its exit statistics line: the sidecar said fewer processes,
/// some unreported, and far fewer marks than the trace.csv held. Both now reach the recorder.
#[test]
fn forked_children_under_load_that_exit_normally_are_all_counted_exactly() {
    library();
    let d = tmpdir("exitload");
    let py = nvtx_env().join("bin/python");
    let script = repo().join("nvtx/tests/clients/nvtx_fork_exit.py");
    let (children, ranges) = (50usize, 1000usize);
    record(
        &d,
        &[],
        &[&py, &script],
        &[&children.to_string(), &ranges.to_string(), "exit"],
    );
    let csv = std::fs::read_to_string(d.join("trace.csv")).unwrap();
    let child_marks: usize = (0..children)
        .map(|c| {
            csv.matches(&format!(",MARK,child{c}_start,")).count()
                + csv.matches(&format!(",MARK,child{c}_end,")).count()
        })
        .sum();
    assert_eq!(child_marks, children * ranges * 2);
    let meta = sidecar(&d);
    let nvtx = &meta["nvtx"];
    assert_eq!(nvtx["processes"], (children + 1) as u64, "{nvtx}");
    assert_eq!(nvtx["unreported_processes"], 0, "{nvtx}");
    assert_eq!(nvtx["dropped"], 0, "{nvtx}");
    // The parent's `parent_forks` mark and its `parent` range, and every child's lines.
    assert_eq!(nvtx["marks"], (children * ranges * 2 + 3) as u64, "{nvtx}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Regression: children that end with `os._exit` while the pipe is full lose the lines still in
/// their backlog, and they send no exit statistics; the sidecar said nothing was dropped, with
/// no warning (and counted fewer processes: the `start` line of a child can be in that backlog
/// too). The counts file the processes share with the recorder now counts both exactly.
#[test]
fn forked_children_under_load_that_os_exit_have_their_lost_marks_counted() {
    library();
    let d = tmpdir("osexitload");
    let py = nvtx_env().join("bin/python");
    let script = repo().join("nvtx/tests/clients/nvtx_fork_exit.py");
    let (children, ranges) = (50usize, 1000usize);
    let out = record(
        &d,
        &[],
        &[&py, &script],
        &[&children.to_string(), &ranges.to_string(), "_exit"],
    );
    let csv = std::fs::read_to_string(d.join("trace.csv")).unwrap();
    let child_marks: usize = (0..children)
        .map(|c| {
            csv.matches(&format!(",MARK,child{c}_start,")).count()
                + csv.matches(&format!(",MARK,child{c}_end,")).count()
        })
        .sum();
    let meta = sidecar(&d);
    let nvtx = &meta["nvtx"];
    assert_eq!(nvtx["processes"], (children + 1) as u64, "{nvtx}");
    assert_eq!(nvtx["unreported_processes"], children as u64, "{nvtx}");
    let dropped = nvtx["dropped"].as_u64().unwrap() as usize;
    // Exact: every child mark is in the CSV or counted lost (the parent reports and drops none).
    assert_eq!(
        child_marks + dropped,
        children * ranges * 2,
        "{child_marks} child marks in the CSV, {nvtx}"
    );
    assert_eq!(nvtx["lost_unreported"], dropped as u64, "{nvtx}");
    let warned = meta["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("marks lost with"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(warned, dropped > 0, "{}", meta["warnings"]);
    assert_eq!(stderr.contains("marks lost with"), dropped > 0, "{stderr}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Regression: `cargo install` (or a release build copied alone) gave a binary without the
/// library beside it, and NVTX ranges went unrecorded with only a warning. The binary copied
/// alone into an empty folder must record the C client's ranges from the library it carries.
#[test]
fn the_binary_alone_records_nvtx_ranges_from_the_library_it_carries() {
    let d = tmpdir("alone");
    let exe = c_client(&d);
    let bin_dir = d.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let alone = bin_dir.join("flinch-trace");
    std::fs::copy(BIN, &alone).unwrap();
    std::fs::write(d.join("gpu.script"), SCRIPT).unwrap();
    let out = Command::new(&alone)
        .arg("record")
        .arg("--scripted-gpu")
        .arg(d.join("gpu.script"))
        .args(["--no-rapl", "--no-host", "--interval-ms", "5", "--out"])
        .arg(d.join("trace.csv"))
        .arg("--")
        .arg(&exe)
        .arg("scenario")
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("FLINCH_MARKS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("NVTX ranges are not recorded"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let n = check_analysis(&stdout, &analyze(&d));
    let nvtx = &sidecar(&d)["nvtx"];
    assert_eq!(nvtx["dropped"], 0, "{nvtx}");
    assert!(
        n > 10 && nvtx["marks"].as_u64().unwrap() >= n as u64,
        "{n} {nvtx}"
    );
    // The copy written for the command is gone with the recording.
    let lib = std::path::PathBuf::from(nvtx["library"].as_str().unwrap());
    assert!(!bin_dir.join("libflinch_nvtx.so").exists());
    assert!(!lib.exists(), "{} left behind", lib.display());
    let _ = std::fs::remove_dir_all(&d);
}
