//! `flinch-trace trace` on a large plain file that another process truncates while it is being
//! read (mapped, native/src/trace/mapped.rs): one clear error line and exit status 1, never a
//! silent death by SIGBUS nor a summary of zeros.
//!
//! Deterministic through the binary's test hook: with `FLINCH_TRACE_TEST_PAUSE_AFTER_MAP` set,
//! it says `flinch-trace: test pause: mapped` on stderr once the file is mapped and waits for a
//! line on stdin, so the truncation below lands after mapping and before scanning.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A Kineto-like plain trace of at least 17 MiB (past the two-scan-thread threshold of 16 MiB).
fn big_trace(name: &str) -> PathBuf {
    let mut s = String::from("{\"traceEvents\": [\n");
    let mut i = 0u64;
    while s.len() < 17 << 20 {
        s.push_str(&format!(
            "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"op{}\", \"pid\": 1, \"tid\": {}, \
             \"ts\": {}.5, \"dur\": {}.25, \"args\": {{\"External id\": {i}}}}},\n",
            i % 17,
            i % 3,
            1_000_000 + i * 10,
            i % 9
        ));
        i += 1;
    }
    s.push_str("  {\"ph\": \"i\", \"name\": \"end\", \"pid\": 1, \"tid\": 1, \"ts\": 1}\n]}\n");
    let dir = std::env::temp_dir().join(format!("flinch-truncated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, s).unwrap();
    p
}

/// Runs `flinch-trace trace PATH` with the pause hook, cuts the file to `keep` bytes at the
/// pause, and returns the exit code and stderr.
fn run_cut(path: &PathBuf, keep: u64) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .arg("trace")
        .arg(path)
        .env("FLINCH_TRACE_TEST_PAUSE_AFTER_MAP", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(line, "flinch-trace: test pause: mapped\n");
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(keep)
        .unwrap();
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let code = child.wait().unwrap().code();
    let _ = std::fs::remove_file(path);
    // The last test to finish removes the folder (it fails while others' files are there).
    let _ = std::fs::remove_dir(path.parent().unwrap());
    (code, rest)
}

#[test]
fn a_file_cut_while_mapped_is_one_error_line_and_status_1() {
    let path = big_trace("cut.json");
    let size = std::fs::metadata(&path).unwrap().len();
    let keep = (5 << 20) + 123;
    let (code, stderr) = run_cut(&path, keep);
    assert_eq!(code, Some(1), "{stderr}");
    let prefix = format!(
        "flinch-trace: error: {}: the file got shorter while it was being read (at byte ",
        path.display()
    );
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let at: u64 = stderr[prefix.len()..]
        .strip_suffix(")\n")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    // The first byte read past the new end, on a page wholly past it (the rest of the page
    // holding the new end reads as zeros).
    assert!(at > keep && at < size, "{at}");
}

#[test]
fn a_file_cut_within_its_last_page_is_an_error_not_a_summary() {
    let path = big_trace("cut-tail.json");
    let size = std::fs::metadata(&path).unwrap().len();
    // Cut inside the last page: no fault, the bytes past the end read as zeros; the size check
    // after the scan catches it.
    let keep = size - 40;
    let (code, stderr) = run_cut(&path, keep);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "flinch-trace trace: {}: the file got shorter while it was being read (at byte \
             {keep})\n",
            path.display()
        )
    );
}

#[test]
fn an_uncut_file_with_the_hook_is_summarized() {
    let path = big_trace("whole.json");
    let size = std::fs::metadata(&path).unwrap().len();
    let (code, stderr) = run_cut(&path, size);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
}
