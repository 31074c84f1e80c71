//! `flinch-trace mark LABEL`: sends `@<t_mono_ns> <label>` to a running recorder's marks FIFO,
//! stamped with this process's CLOCK_MONOTONIC so queueing delay does not shift the mark.
use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::record::clock::mono_now_ns;
use crate::record::marks::MAX_LINE;
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

/// The line `mark` writes for `label` at `t_mono_ns`.
pub fn line(t_mono_ns: u64, label: &str) -> Result<String, String> {
    let label = label.trim();
    if label.is_empty() {
        return Err("error: mark: empty label".into());
    }
    if label.contains(['\n', '\r']) {
        return Err("error: mark: a label is one line (no newline)".into());
    }
    let line = format!("@{t_mono_ns} {label}\n");
    if line.len() > MAX_LINE {
        return Err(format!(
            "error: mark: label too long (the line must fit in {MAX_LINE} bytes)"
        ));
    }
    Ok(line)
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
        match f.write(text.as_bytes()) {
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
    use crate::record::marks::parse_line;

    #[test]
    fn line_round_trips_through_the_reader_parser() {
        let l = line(42, " infer start ").unwrap();
        assert_eq!(l, "@42 infer start\n");
        assert_eq!(parse_line(&l), Some((Some(42), "infer start")));
        assert!(line(1, "a\nb").is_err());
        assert!(line(1, "  ").is_err());
        assert!(line(1, &"x".repeat(5000)).is_err());
    }
}
