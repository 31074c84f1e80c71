//! NVTX injection into the recorded command: where the injection library is, and the variables
//! that turn it on (docs/nvtx.md).
//!
//! The library ships beside the `flinch-trace` binary (`cargo build` puts both in
//! `target/<profile>/`; an install copies both). Embedding it in the binary would need the
//! cdylib built before the binary, which stable cargo can only do with a nested cargo run in a
//! build script; a second file is the simpler, checkable choice.
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The library's file name.
pub const LIBRARY: &str = "libflinch_nvtx.so";

/// Where to look for the library, in order, for a binary at `exe`: beside it, then in `../lib`.
pub fn candidates(exe: &Path) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else {
        return Vec::new();
    };
    let mut v = vec![dir.join(LIBRARY)];
    if let Some(up) = dir.parent() {
        v.push(up.join("lib").join(LIBRARY));
    }
    v
}

/// What `record -- CMD` does about NVTX, given `NVTX_INJECTION64_PATH` as already set (`preset`).
/// `Ok(path)`: set it to `path` for the command; `Err(warning)`: leave NVTX alone.
pub fn choose(exe: Option<&Path>, preset: Option<OsString>) -> Result<PathBuf, String> {
    if let Some(p) = preset.filter(|p| !p.is_empty()) {
        return Err(format!(
            "warning: NVTX: NVTX_INJECTION64_PATH is already set ({}); leaving it, so NVTX ranges go to that tool, not to this recording",
            p.to_string_lossy()
        ));
    }
    let looked = exe.map(candidates).unwrap_or_default();
    match looked.iter().find(|p| p.is_file()) {
        Some(p) => Ok(p.clone()),
        None => Err(format!(
            "warning: NVTX: {LIBRARY} not found ({}); NVTX ranges are not recorded (build it with `cargo build --release -p flinch-nvtx` and keep it beside the binary; --no-nvtx silences this)",
            if looked.is_empty() {
                "the binary's folder is unknown".to_string()
            } else {
                format!(
                    "looked for {}",
                    looked
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_library_beside_the_binary_or_in_lib_and_respects_a_preset() {
        let dir = std::env::temp_dir().join(format!("flinch-nvtx-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        let exe = dir.join("bin").join("flinch-trace");
        let err = choose(Some(&exe), None).unwrap_err();
        assert!(
            err.contains("not found") && err.contains("bin/libflinch_nvtx.so"),
            "{err}"
        );
        std::fs::write(dir.join("lib").join(LIBRARY), b"").unwrap();
        assert_eq!(
            choose(Some(&exe), None).unwrap(),
            dir.join("lib").join(LIBRARY)
        );
        std::fs::write(dir.join("bin").join(LIBRARY), b"").unwrap();
        assert_eq!(
            choose(Some(&exe), None).unwrap(),
            dir.join("bin").join(LIBRARY)
        );
        assert_eq!(
            choose(Some(&exe), Some(OsString::new())).unwrap(),
            dir.join("bin").join(LIBRARY)
        );
        let err = choose(Some(&exe), Some("/opt/nsys/libinj.so".into())).unwrap_err();
        assert!(err.contains("already set (/opt/nsys/libinj.so)"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
