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

/// Every trace file under `tests/traces` (recursively) whose name ends with one of `suffixes`,
/// golden `.expected.json` files excluded; sorted, so failures repeat in the same order.
pub fn trace_fixtures(suffixes: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo().join("tests/traces")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if suffixes.iter().any(|s| name.ends_with(s))
                && !name.ends_with(".expected.json")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
