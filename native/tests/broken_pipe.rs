//! Regression: `flinch-trace trace FILE | head -1` panicked in `println!` on the closed pipe.
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn trace_report_into_a_closed_pipe_exits_without_a_panic() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
        .args(["trace", "--json", file, file, file])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe is closed after one line of a long report.
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
