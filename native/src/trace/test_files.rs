//! Test helpers shared by the pipeline and parallel-scan tests: the repository root, and
//! temporary files under a per-process folder.
use std::path::{Path, PathBuf};

/// The repository root (for the fixtures under `tests/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Writes `bytes` to `<tmp>/flinch-<group>-<pid>/<name>` and returns the path.
pub fn temp(group: &str, name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flinch-{group}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
