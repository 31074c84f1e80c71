//! The recorded command: checked before the recording starts, so a typo fails at once with the
//! shell's exit status (127: not found, 126: found but cannot be run) and no file is written.
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Exit status for a command that does not exist (as POSIX shells give).
pub const NOT_FOUND: u8 = 127;
/// Exit status for a command that exists but cannot be executed.
pub const NOT_EXECUTABLE: u8 = 126;

/// Why a command cannot be run: the shell's exit status and a message.
#[derive(Debug, PartialEq)]
pub struct Unrunnable {
    /// 127 or 126.
    pub code: u8,
    /// The message for stderr.
    pub message: String,
}

fn executable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path; access has no other preconditions.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Checks one candidate path: `Ok` when it can be executed, else what is wrong with it.
fn check_path(prog: &str, p: &Path) -> Result<(), Unrunnable> {
    match std::fs::metadata(p) {
        Err(e) => Err(Unrunnable {
            code: NOT_FOUND,
            message: format!("error: cannot run {prog}: {e}"),
        }),
        Ok(m) if m.is_dir() => Err(Unrunnable {
            code: NOT_EXECUTABLE,
            message: format!("error: cannot run {prog}: it is a directory"),
        }),
        Ok(m) if m.permissions().mode() & 0o111 == 0 || !executable(p) => Err(Unrunnable {
            code: NOT_EXECUTABLE,
            message: format!("error: cannot run {prog}: permission denied (not executable)"),
        }),
        Ok(_) => Ok(()),
    }
}

/// Finds `prog` as `execvp` would: a name with a `/` is a path, any other name is looked up in
/// `path_var` (`PATH`; an empty entry is the current folder). Returns the file that would run.
///
/// # Errors
/// Not found (127), or found only as something that cannot be executed (126).
pub fn resolve(prog: &str, path_var: Option<&OsStr>) -> Result<PathBuf, Unrunnable> {
    if prog.is_empty() {
        return Err(Unrunnable {
            code: NOT_FOUND,
            message: "error: cannot run the empty command name".into(),
        });
    }
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return check_path(prog, &p).map(|()| p);
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut first_refusal = None;
    for dir in path_var.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let cand = dir.join(prog);
        match check_path(prog, &cand) {
            Ok(()) => return Ok(cand),
            Err(u) if u.code == NOT_EXECUTABLE && first_refusal.is_none() => {
                first_refusal = Some(u);
            }
            Err(_) => {}
        }
    }
    Err(first_refusal.unwrap_or(Unrunnable {
        code: NOT_FOUND,
        message: format!("error: cannot run {prog}: command not found in PATH"),
    }))
}

/// The shell's exit status for a spawn that failed even so (the file changed after the check,
/// or its interpreter is missing): 127 when something was not found, 126 otherwise.
pub fn spawn_error_code(e: &std::io::Error) -> u8 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => NOT_FOUND,
        _ => NOT_EXECUTABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_like_execvp_and_gives_shell_exit_codes() {
        let dir = std::env::temp_dir().join(format!("flinch-cmd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let exe = dir.join("tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "x").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = std::ffi::OsString::from(format!("/nonexistent-dir:{}", dir.display()));
        let p = Some(path.as_os_str());
        assert_eq!(resolve("tool", p).unwrap(), exe);
        assert_eq!(resolve(exe.to_str().unwrap(), None).unwrap(), exe);
        assert_eq!(resolve("nope", p).unwrap_err().code, NOT_FOUND);
        assert_eq!(resolve("/nonexistent/x", p).unwrap_err().code, NOT_FOUND);
        assert_eq!(resolve("plain", p).unwrap_err().code, NOT_EXECUTABLE);
        assert_eq!(
            resolve(plain.to_str().unwrap(), p).unwrap_err().code,
            NOT_EXECUTABLE
        );
        let d = resolve(dir.join("sub").to_str().unwrap(), p).unwrap_err();
        assert_eq!(d.code, NOT_EXECUTABLE);
        assert!(d.message.contains("directory"), "{}", d.message);
        // A directory named like the command in PATH is not executable (execvp's EACCES).
        assert_eq!(resolve("sub", p).unwrap_err().code, NOT_EXECUTABLE);
        assert_eq!(resolve("", p).unwrap_err().code, NOT_FOUND);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
