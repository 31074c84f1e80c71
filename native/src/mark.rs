//! `flinch-trace mark LABEL`: sends `@<t_mono_ns> <label>` to a running recorder's marks FIFO,
//! stamped with this process's CLOCK_MONOTONIC so queueing delay does not shift the mark.
use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::marks_line;

use crate::record::clock::mono_now_ns;
use crate::{CmdError, CmdResult};

/// Arguments of `flinch-trace mark`.
#[derive(clap::Args)]
pub struct Args {
    /// The mark's label (one line; spaces allowed).
    label: String,
    /// The recorder's marks FIFO (default: $FLINCH_MARKS, which `record -- CMD` sets).
    #[arg(long)]
    fifo: Option<PathBuf>,
}

/// The line `mark` writes for `label` at `t_mono_ns` (flinch-core's marks line).
pub fn line(t_mono_ns: u64, label: &str) -> Result<Vec<u8>, String> {
    let mut buf = [0u8; marks_line::MAX_LINE];
    let n = marks_line::write_mark(&mut buf, t_mono_ns, None, label)
        .map_err(|e| format!("error: mark: {e}"))?;
    Ok(buf[..n].to_vec())
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let t = mono_now_ns();
    let path = match args
        .fifo
        .map(OsString::from)
        .or_else(|| std::env::var_os("FLINCH_MARKS"))
    {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            return Err(CmdError::Usage(
                "error: mark: no FIFO: pass --fifo PATH or set FLINCH_MARKS".into(),
            ));
        }
    };
    // A label that is not one line of the FIFO's format is a bad value: a usage error.
    let text = line(t, &args.label).map_err(CmdError::Usage)?;
    match std::fs::metadata(&path) {
        Ok(m) if m.file_type().is_fifo() => {}
        Ok(_) => return Err(format!("error: mark: {} is not a FIFO", path.display()).into()),
        Err(e) => return Err(format!("error: mark: {}: {e}", path.display()).into()),
    }
    // Non-blocking open: ENXIO means nobody has the FIFO open for reading.
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(format!(
                "error: mark: no recorder is listening on {} (start `flinch-trace record --marks-fifo {}`)",
                path.display(),
                path.display()
            )
            .into());
        }
        Err(e) => return Err(format!("error: mark: {}: {e}", path.display()).into()),
    };
    // One write of at most PIPE_BUF bytes is atomic; wait if the pipe is momentarily full, but
    // not forever (a recorder that stopped reading).
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match f.write(&text) {
            Ok(n) if n == text.len() => return Ok(ExitCode::SUCCESS),
            Ok(_) => return Err("error: mark: short write to the FIFO".into()),
            Err(e) if e.kind() == ErrorKind::WouldBlock && std::time::Instant::now() > give_up => {
                return Err(format!(
                    "error: mark: the FIFO {} stayed full for 2 s: is the recorder stuck?",
                    path.display()
                )
                .into());
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(format!("error: mark: writing {}: {e}", path.display()).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_is_the_stamped_mark_or_a_usage_error() {
        assert_eq!(line(42, " infer start ").unwrap(), b"@42 infer start\n");
        assert_eq!(
            line(1, "a\nb").unwrap_err(),
            "error: mark: a label is one line (no newline)"
        );
        assert_eq!(line(1, "  ").unwrap_err(), "error: mark: empty label");
        assert_eq!(
            line(1, &"x".repeat(5000)).unwrap_err(),
            "error: mark: label too long (the line must fit in 4096 bytes)"
        );
    }
}
