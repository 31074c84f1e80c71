//! NVTX injection into the recorded command: the library `record` hands the command, and the
//! variables that turn it on (docs/nvtx.md).
//!
//! The binary carries the library (`build.rs` builds `nvtx/` with the same cargo and this module
//! embeds the bytes), so whatever installed the binary installed the library. `record` writes the
//! bytes to a private folder (mode 0700, removed at the end) on a file system that allows
//! executable mappings, and points `NVTX_INJECTION64_PATH` there. A build without the embedded
//! library (a target other than Linux, or the nested build failed, with a cargo warning) looks
//! for `libflinch_nvtx.so` beside the binary, then in `../lib/`.
use std::ffi::{OsStr, OsString};
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The library's file name.
pub const LIBRARY: &str = "libflinch_nvtx.so";

/// The library built with this binary (empty when it could not be built).
pub static EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libflinch_nvtx.so"));

/// The library handed to the command; a written copy is removed (with its folder) on drop.
#[derive(Debug)]
pub struct Library {
    path: PathBuf,
    private_dir: Option<PathBuf>,
}

impl Deref for Library {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Library {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        if let Some(d) = &self.private_dir {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_dir(d);
        }
    }
}

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
/// `Ok(library)`: set it to the library's path for the command; `Err(warning)`: leave NVTX alone.
pub fn choose(exe: Option<&Path>, preset: Option<OsString>) -> Result<Library, String> {
    choose_from(EMBEDDED, &bases(), exe, preset)
}

/// Folders a private copy may go in, in order: `$XDG_RUNTIME_DIR` (per user, in memory), then
/// the temporary folder.
pub fn bases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    v.push(std::env::temp_dir());
    v
}

fn choose_from(
    embedded: &[u8],
    bases: &[PathBuf],
    exe: Option<&Path>,
    preset: Option<OsString>,
) -> Result<Library, String> {
    if let Some(p) = preset.filter(|p| !p.is_empty()) {
        return Err(format!(
            "warning: NVTX: NVTX_INJECTION64_PATH is already set ({}); leaving it, so NVTX ranges go to that tool, not to this recording",
            p.to_string_lossy()
        ));
    }
    let mut why = Vec::new();
    if embedded.is_empty() {
        why.push("this build carries no NVTX library".to_string());
    } else {
        match write_private(embedded, bases) {
            Ok(lib) => return Ok(lib),
            Err(e) => why.push(e),
        }
    }
    let looked = exe.map(candidates).unwrap_or_default();
    if let Some(p) = looked.iter().find(|p| p.is_file()) {
        return Ok(Library {
            path: p.clone(),
            private_dir: None,
        });
    }
    why.push(if looked.is_empty() {
        "the binary's folder is unknown".to_string()
    } else {
        format!(
            "no {LIBRARY} at {}",
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    Err(format!(
        "warning: NVTX: no injection library ({}); NVTX ranges are not recorded (--no-nvtx silences this)",
        why.join("; ")
    ))
}

/// Writes the library into a new private folder under the first base that allows executable
/// mappings (a `noexec` mount would make the loader's `dlopen` fail in the command).
fn write_private(bytes: &[u8], bases: &[PathBuf]) -> Result<Library, String> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let mut errors = Vec::new();
    for base in bases {
        if noexec(base) {
            errors.push(format!("{} is mounted noexec", base.display()));
            continue;
        }
        let dir = base.join(format!(
            "flinch-nvtx-{}-{}",
            std::process::id(),
            super::clock::mono_now_ns()
        ));
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            errors.push(format!("cannot create {}: {e}", dir.display()));
            continue;
        }
        let path = dir.join(LIBRARY);
        let lib = Library {
            path,
            private_dir: Some(dir),
        };
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o500)
            .open(&lib.path)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_data()));
        match written {
            Ok(()) => return Ok(lib),
            Err(e) => errors.push(format!("cannot write {}: {e}", lib.path.display())),
        }
    }
    Err(errors.join("; "))
}

/// Whether the file system holding `dir` forbids executable mappings.
fn noexec(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path and a zeroed out-parameter.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_NOEXEC != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("flinch-nvtx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_embedded_library_goes_to_a_private_folder_removed_at_the_end() {
        let base = tmp("embed");
        let lib = choose_from(b"\x7fELF-bytes", std::slice::from_ref(&base), None, None).unwrap();
        let dir = lib.parent().unwrap().to_path_buf();
        assert!(dir.starts_with(&base) && lib.file_name() == Some(OsStr::new(LIBRARY)));
        assert_eq!(std::fs::read(&*lib).unwrap(), b"\x7fELF-bytes");
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&dir), mode(&lib)), (0o700, 0o500));
        drop(lib);
        assert!(!dir.exists());
        // An unusable base is skipped for the next one.
        let lib = choose_from(
            b"x",
            &[base.join("missing/deeper"), base.clone()],
            None,
            None,
        )
        .unwrap();
        assert!(lib.starts_with(&base) && !lib.starts_with(base.join("missing")));
        drop(lib);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn without_an_embedded_library_it_looks_beside_the_binary_or_in_lib_and_respects_a_preset() {
        let dir = tmp("find");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        let exe = dir.join("bin").join("flinch-trace");
        let err = choose_from(b"", &[], Some(&exe), None).unwrap_err();
        assert!(
            err.contains("carries no NVTX library") && err.contains("bin/libflinch_nvtx.so"),
            "{err}"
        );
        std::fs::write(dir.join("lib").join(LIBRARY), b"").unwrap();
        let found = |preset| {
            choose_from(b"", &[], Some(&exe), preset)
                .unwrap()
                .to_path_buf()
        };
        assert_eq!(found(None), dir.join("lib").join(LIBRARY));
        std::fs::write(dir.join("bin").join(LIBRARY), b"").unwrap();
        assert_eq!(found(None), dir.join("bin").join(LIBRARY));
        assert_eq!(found(Some(OsString::new())), dir.join("bin").join(LIBRARY));
        // A library found beside the binary is not removed with the choice.
        drop(choose_from(b"", &[], Some(&exe), None).unwrap());
        assert!(dir.join("bin").join(LIBRARY).is_file());
        let err = choose_from(
            b"x",
            std::slice::from_ref(&dir),
            Some(&exe),
            Some("/opt/nsys/libinj.so".into()),
        )
        .unwrap_err();
        assert!(err.contains("already set (/opt/nsys/libinj.so)"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn this_build_embeds_the_library() {
        // The nested build ran (Linux, sources present): an ELF shared object with the entry point.
        assert!(EMBEDDED.starts_with(b"\x7fELF"), "{} bytes", EMBEDDED.len());
        let entry = b"InitializeInjectionNvtx2";
        assert!(EMBEDDED.windows(entry.len()).any(|w| w == entry));
    }
}
