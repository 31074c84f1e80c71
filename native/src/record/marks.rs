//! The marks FIFO (docs/formats.md): creation and checks, and the reader thread that turns
//! lines into MARK rows. The line format, its splitting into lines of at most
//! [`marks_line::MAX_LINE`] bytes and its parsing are flinch-core's [`marks_line`]: a mark
//! `LABEL`, `@<t_mono_ns> LABEL` or `@<t_mono_ns>:<thread> LABEL` (the thread goes to the
//! `mark_thread` column), and the NVTX library's `#flinch-nvtx pid=P marks=M dropped=D` (its
//! count for one process at its exit, summed into the sidecar) and `#flinch-nvtx pid=P start`
//! (sent before a process's first mark, so the sidecar can say how many processes ended
//! without their count, e.g. by `_exit`).
use std::ffi::CString;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use flinch_core::marks_line::{self, Line, LineSplitter, Piece};

use super::clock::Clock;
use super::writer::{Msg, RowSender, push_mark_row_thread};

/// The FIFO's pipe size asked for.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Sums of the NVTX statistics lines read so far.
#[derive(Debug, Default)]
pub struct NvtxTotals {
    /// Processes that announced themselves (their first mark followed).
    pub started: AtomicU64,
    /// Processes that reported.
    pub processes: AtomicU64,
    /// Marks they wrote.
    pub marks: AtomicU64,
    /// Marks they dropped.
    pub dropped: AtomicU64,
}

/// Makes sure `path` is a FIFO this user owns: creates it with mode 0600 if missing.
/// Returns whether it was created (so the recorder removes it at the end).
///
/// # Errors
/// The path exists but is not a FIFO, belongs to another user, or cannot be created.
pub fn ensure_fifo(path: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => {
            if !m.file_type().is_fifo() {
                return Err(format!(
                    "error: marks FIFO {}: exists but is not a FIFO",
                    path.display()
                ));
            }
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if m.uid() != me {
                return Err(format!(
                    "error: marks FIFO {}: belongs to uid {}, not to you (uid {me}); refusing it",
                    path.display(),
                    m.uid()
                ));
            }
            Ok(false)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let c = CString::new(path.as_os_str().as_bytes())
                .map_err(|_| format!("error: marks FIFO {}: NUL in path", path.display()))?;
            // SAFETY: `c` is a valid NUL-terminated path.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(format!(
                    "error: cannot create marks FIFO {}: {e}",
                    path.display()
                ));
            }
            // mkfifo applies the umask; make the mode exactly 0600 whatever the umask.
            // SAFETY: as above.
            unsafe { libc::chmod(c.as_ptr(), 0o600) };
            Ok(true)
        }
        Err(e) => Err(format!("error: marks FIFO {}: {e}", path.display())),
    }
}

/// The running marks reader.
pub struct MarksReader {
    stop: Arc<AtomicBool>,
    join: JoinHandle<()>,
    marks: Arc<AtomicU64>,
    nvtx: Arc<NvtxTotals>,
}

impl MarksReader {
    /// Opens the FIFO read-write (so it never sees end-of-file between writers and `mark` finds a
    /// reader) and starts the thread that turns lines into MARK rows.
    pub fn start(
        path: &Path,
        clock: Arc<dyn Clock>,
        sender: RowSender,
        n_cols: usize,
    ) -> Result<Self, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("error: cannot open marks FIFO {}: {e}", path.display()))?;
        if !file
            .metadata()
            .map(|m| m.file_type().is_fifo())
            .unwrap_or(false)
        {
            return Err(format!("error: marks FIFO {}: not a FIFO", path.display()));
        }
        // A larger pipe absorbs bursts of marks (NVTX ranges at 100 000/s) while this thread
        // is busy; best effort (1 MiB is the default limit for unprivileged users).
        // SAFETY: fcntl on an open descriptor.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
        let stop = Arc::new(AtomicBool::new(false));
        let marks = Arc::new(AtomicU64::new(0));
        let nvtx = Arc::new(NvtxTotals::default());
        let (stop_t, marks_t, nvtx_t) = (stop.clone(), marks.clone(), nvtx.clone());
        let join = std::thread::Builder::new()
            .name("flinch-marks".into())
            .spawn(move || read_loop(file, &*clock, &sender, n_cols, &stop_t, &marks_t, &nvtx_t))
            .map_err(|e| format!("error: cannot start the marks thread: {e}"))?;
        Ok(MarksReader {
            stop,
            join,
            marks,
            nvtx,
        })
    }

    /// The NVTX statistics read so far (complete after [`MarksReader::stop`]).
    pub fn nvtx_totals(&self) -> Arc<NvtxTotals> {
        self.nvtx.clone()
    }

    /// Reads what is already in the FIFO, then stops; returns the number of marks written.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.join.join();
        self.marks.load(Ordering::SeqCst)
    }
}

fn read_loop(
    file: File,
    clock: &dyn Clock,
    sender: &RowSender,
    n_cols: usize,
    stop: &AtomicBool,
    marks: &AtomicU64,
    nvtx: &NvtxTotals,
) {
    use std::io::Read;
    let mut file = file;
    // The splitter holds one line of PIPE_BUF bytes: boxed, off this thread's stack.
    let mut lines = Box::new(LineSplitter::new());
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, if stopping { 0 } else { 50 }) };
        if ready <= 0 {
            if stopping {
                return;
            }
            continue;
        }
        let n = match file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => 0,
            Err(_) => return,
        };
        let t_read = clock.mono_ns();
        let w_read = clock.wall_ns();
        let mut out = None::<Vec<u8>>;
        let mut rows = 0;
        let mut take = |line: Line<'_>| match line {
            Line::Blank => {}
            Line::NvtxStats { marks, dropped } => {
                nvtx.processes.fetch_add(1, Ordering::SeqCst);
                nvtx.marks.fetch_add(marks, Ordering::SeqCst);
                nvtx.dropped.fetch_add(dropped, Ordering::SeqCst);
            }
            Line::NvtxStart { .. } => {
                nvtx.started.fetch_add(1, Ordering::SeqCst);
            }
            Line::Mark(m) => {
                let buf = out.get_or_insert_with(|| sender.buffer());
                let t_mono = m.t_mono_ns.unwrap_or(t_read);
                // A sender's timestamp gets the wall time it corresponds to.
                let t_wall = (w_read as i128 - (t_read as i128 - t_mono as i128)).max(0) as u64;
                push_mark_row_thread(buf, n_cols, t_mono, t_wall, m.label, m.thread);
                rows += 1;
            }
        };
        lines.push(&chunk[..n], |piece| match piece {
            Piece::Overlong => eprintln!(
                "warning: marks FIFO: dropped a line longer than {} bytes",
                marks_line::MAX_LINE
            ),
            Piece::Line(bytes) => match marks_line::parse(bytes) {
                Ok(line) => take(line),
                // Not UTF-8: the label as lossy text, as the row writer takes it.
                Err(_) => take(marks_line::parse_str(&String::from_utf8_lossy(bytes))),
            },
        });
        if let Some(buf) = out {
            sender.send(Msg::Csv(buf, rows));
            marks.fetch_add(rows, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_is_created_0600_and_other_paths_are_refused() {
        let dir = std::env::temp_dir().join(format!("flinch-marks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("fifo");
        assert!(ensure_fifo(&p).unwrap());
        let m = std::fs::metadata(&p).unwrap();
        assert!(m.file_type().is_fifo());
        assert_eq!(m.mode() & 0o777, 0o600);
        assert!(!ensure_fifo(&p).unwrap());
        let f = dir.join("regular");
        std::fs::write(&f, "x").unwrap();
        assert!(ensure_fifo(&f).err().unwrap().contains("not a FIFO"));
        // Another user's FIFO (we run as root in CI; skip the chown check otherwise).
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid path.
        if unsafe { libc::chown(c.as_ptr(), 12345, 12345) } == 0 {
            assert!(
                ensure_fifo(&p)
                    .err()
                    .unwrap()
                    .contains("belongs to uid 12345")
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
