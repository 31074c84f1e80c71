//! Helpers shared by the integration tests: the repository root, the binary under test, and a
//! fresh temporary folder per test. Each test file declares `mod common;` and uses what it needs.
// Each test file is its own crate and uses a subset of these, so the rest would warn there.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the fixtures under `tests/`, `examples/`, `scripts/`).
pub fn repo() -> PathBuf {
    let native = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    native.parent().unwrap().to_path_buf()
}

/// A command running the `flinch-trace` binary that cargo built for these tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flinch-trace"))
}

/// An empty folder `<tmp>/flinch-<test file>-<name>-<pid>`, emptied first when a previous run left
/// it behind; distinct per test file (the crate name), per `name` and per process.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "flinch-{}-{name}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `bytes` to `d/name`; its path.
pub fn write(d: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The binary run with `args`, to its end.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// A successful run's stdout as JSON (its stderr in the failure).
pub fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
