//! The CSV layout, row formatting, and the one thread that owns the output files.
//!
//! Producers (the sampler, the marks reader) format whole rows into byte buffers and send them;
//! buffers come back through a pool, so rows are not allocated one by one. The writer buffers,
//! flushes every [`FLUSH_EVERY`] or 64 KiB, and on a write error (ENOSPC, EFBIG...) truncates the
//! file back to its last whole row, so the file is always complete up to a row boundary.
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flinch_core::csv::{COLUMNS, Col, push_label};

use super::gpu::GpuReading;
use super::host::HostReading;

/// How often buffered rows reach the file at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(250);
const FLUSH_BYTES: usize = 64 * 1024;

/// The header line (without newline) for the given extra RAPL zone columns.
pub fn header<'a>(extra: impl Iterator<Item = &'a str>) -> String {
    let mut cols: Vec<&str> = COLUMNS.to_vec();
    cols.extend(extra);
    cols.join(",")
}

/// Number of columns in the header line.
pub fn column_count(header: &str) -> usize {
    header.split(',').count()
}

fn opt<T: std::fmt::Display>(buf: &mut Vec<u8>, v: Option<T>) {
    buf.push(b',');
    if let Some(v) = v {
        let _ = write!(buf, "{v}");
    }
}

/// Displays an f64 with two decimals.
struct Fixed2(f64);

impl std::fmt::Display for Fixed2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}", self.0)
    }
}

/// Appends a MARK row (every metric field empty).
pub fn push_mark_row(
    buf: &mut Vec<u8>,
    n_cols: usize,
    t_mono_ns: u64,
    t_wall_ns: u64,
    label: &str,
) {
    push_mark_row_thread(buf, n_cols, t_mono_ns, t_wall_ns, label, None);
}

/// Appends a MARK row with its `mark_thread` (the key its pair is matched within), if any.
pub fn push_mark_row_thread(
    buf: &mut Vec<u8>,
    n_cols: usize,
    t_mono_ns: u64,
    t_wall_ns: u64,
    label: &str,
    thread: Option<u64>,
) {
    let _ = write!(buf, "{t_mono_ns},{t_wall_ns},MARK,");
    push_label(buf, label);
    for _ in 4..MARK_THREAD_COL {
        buf.push(b',');
    }
    opt(buf, thread);
    for _ in MARK_THREAD_COL + 1..n_cols {
        buf.push(b',');
    }
    buf.push(b'\n');
}

/// Index of `mark_thread` among the columns.
const MARK_THREAD_COL: usize = Col::MarkThread as usize;

/// The per-tick fields only the first row of a tick carries.
pub struct TickFields<'a> {
    /// Every RAPL zone's reading, in zone order.
    pub rapl: &'a [Option<u64>],
    /// Index of the primary zone in `rapl`.
    pub primary: Option<usize>,
    /// The primary zone's wrap point.
    pub primary_max_uj: Option<u64>,
    /// The host reading, on ticks where the host was read.
    pub host: Option<HostReading>,
}

/// Appends a SAMPLE row. `gpu` is `(index, reading)`; `tick` is `Some` on a tick's first row.
pub fn push_sample_row(
    buf: &mut Vec<u8>,
    n_cols: usize,
    t_mono_ns: u64,
    t_wall_ns: u64,
    gpu: Option<(u32, &GpuReading)>,
    tick: Option<&TickFields<'_>>,
) {
    let _ = write!(buf, "{t_mono_ns},{t_wall_ns},SAMPLE,");
    let r = gpu.map(|(_, r)| *r).unwrap_or_default();
    opt(buf, r.power_w);
    opt(buf, r.util_pct);
    opt(buf, r.mem_util_pct);
    opt(buf, r.sm_clock_mhz);
    opt(buf, r.temp_c);
    let primary = tick.and_then(|t| t.primary.and_then(|i| t.rapl.get(i).copied().flatten()));
    opt(buf, primary);
    opt(buf, gpu.map(|(i, _)| i));
    opt(buf, r.energy_mj);
    opt(buf, r.mem_used_mib);
    opt(buf, r.throttle_reasons);
    let host = tick.and_then(|t| t.host);
    opt(buf, host.and_then(|h| h.cpu_pct).map(Fixed2));
    opt(
        buf,
        host.and_then(|h| h.mem_used_bytes).map(|b| b / 1_048_576),
    );
    opt(
        buf,
        host.and_then(|h| h.mem_available_bytes)
            .map(|b| b / 1_048_576),
    );
    opt(buf, tick.and_then(|t| t.primary_max_uj));
    // mark_thread: empty on samples.
    buf.push(b',');
    let mut written = COLUMNS.len();
    if let Some(t) = tick {
        for (i, v) in t.rapl.iter().enumerate() {
            if Some(i) != t.primary {
                opt(buf, *v);
                written += 1;
            }
        }
    }
    for _ in written..n_cols {
        buf.push(b',');
    }
    buf.push(b'\n');
}

/// What travels to the writer thread.
pub enum Msg {
    /// Whole CSV rows, and how many.
    Csv(Vec<u8>, u64),
    /// Whole host-telemetry JSONL lines.
    Jsonl(Vec<u8>),
}

/// Producers' end: sends buffers, takes recycled ones.
#[derive(Clone)]
pub struct RowSender {
    tx: SyncSender<Msg>,
    pool: Arc<Mutex<Receiver<Vec<u8>>>>,
    failed: Arc<AtomicBool>,
}

impl RowSender {
    /// An empty buffer: a recycled one when available.
    pub fn buffer(&self) -> Vec<u8> {
        if let Ok(rx) = self.pool.try_lock() {
            match rx.try_recv() {
                Ok(b) => return b,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
            }
        }
        Vec::with_capacity(1024)
    }

    /// Sends a message (blocks when the writer is 4096 messages behind).
    pub fn send(&self, msg: Msg) {
        let _ = self.tx.send(msg);
    }

    /// Whether the writer has hit an error (the recording should stop).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }
}

/// What the writer did, once it has finished.
#[derive(Debug, Default)]
pub struct WriterReport {
    /// Rows written by this recording (header excluded).
    pub rows: u64,
    /// The first write error, already phrased for the user.
    pub error: Option<String>,
}

/// Sees every batch of CSV rows the writer is sent (`record --metrics`), on the writer thread.
pub type Tap = Box<dyn FnMut(&[u8]) + Send>;

/// The writer thread's handle.
pub struct Writer {
    sender: RowSender,
    join: JoinHandle<WriterReport>,
}

struct Out {
    file: File,
    path: PathBuf,
    committed: u64,
    pending: Vec<u8>,
    pending_rows: u64,
    rows: u64,
}

impl Out {
    /// Writes the pending whole rows; on error, cuts the file back to its last whole row.
    fn flush(&mut self) -> Result<(), String> {
        let mut done = 0usize;
        while done < self.pending.len() {
            match self.file.write(&self.pending[done..]) {
                Ok(0) => return Err(self.fail(done, std::io::Error::from(ErrorKind::WriteZero))),
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(done, e)),
            }
        }
        self.committed += done as u64;
        self.rows += self.pending_rows;
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }

    fn fail(&mut self, done: usize, e: std::io::Error) -> String {
        let whole = self.pending[..done]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let rows_in = self.pending[..whole]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        self.committed += whole as u64;
        self.rows += rows_in;
        let cut = if whole < done {
            self.file.set_len(self.committed).is_ok()
        } else {
            true
        };
        let lost = self.pending_rows - rows_in;
        let how = if cut {
            ""
        } else {
            " (could not cut the partial row)"
        };
        format!(
            "error: writing {}: {e}; the file is complete up to its last whole row ({} rows of this \
             recording, {} bytes){how}; {lost} buffered rows and the rest of the recording were lost",
            self.path.display(),
            self.rows,
            self.committed
        )
    }
}

/// Opens an output for appending without ever blocking: `O_NONBLOCK` makes the open of a FIFO
/// with no reader fail at once (ENXIO) instead of waiting for one, where signals could not end
/// the wait. The opened file is then checked: a regular file, or a character device such as
/// `/dev/null`; a FIFO, socket, directory or block device is refused by name.
fn open_append(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    check_output_path(path)?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => refused(path, "a FIFO (named pipe)"),
            Some(libc::EISDIR) => refused(path, "a directory"),
            _ => format!("error: cannot open {}: {e}", path.display()),
        })?;
    let ft = file
        .metadata()
        .map_err(|e| format!("error: cannot stat {}: {e}", path.display()))?
        .file_type();
    if let Some(why) = not_a_file(&ft) {
        return Err(refused(path, why));
    }
    if ft.is_char_device() {
        // Writes to a terminal or device block as usual; only the open had to be non-blocking.
        use std::os::unix::io::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns; F_GETFL/F_SETFL take plain ints.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

/// Refuses, before anything starts, an output path that exists and is not a regular file or a
/// character device (the opened file is checked again by the writer).
///
/// # Errors
/// The path is a directory, FIFO, socket or block device.
pub fn check_output_path(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(m) => not_a_file(&m.file_type()).map_or(Ok(()), |why| Err(refused(path, why))),
        Err(_) => Ok(()),
    }
}

/// Why a file of this type cannot be an output (`None`: it can).
fn not_a_file(ft: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() || ft.is_char_device() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("a block device")
    }
}

fn refused(path: &Path, what: &str) -> String {
    let hint = if what == "a directory" {
        format!(" (e.g. {})", path.join("trace.csv").display())
    } else {
        String::new()
    };
    format!(
        "error: {} is {what}; an output must be a regular file{hint}, created if missing",
        path.display()
    )
}

fn open_out(path: &Path, header: Option<&str>) -> Result<Out, String> {
    let file = open_append(path)?;
    let existing = file.metadata().map(|m| m.len()).unwrap_or(0);
    if existing > 0
        && let Some(h) = header
    {
        check_existing(&file, path, h, existing)?;
    }
    let mut out = Out {
        file,
        path: path.to_path_buf(),
        committed: existing,
        pending: Vec::with_capacity(2 * FLUSH_BYTES),
        pending_rows: 0,
        rows: 0,
    };
    if let (Some(h), 0) = (header, existing) {
        out.pending.extend_from_slice(h.as_bytes());
        out.pending.push(b'\n');
        out.flush()?;
        out.rows = 0;
    }
    Ok(out)
}

/// Appending is allowed only onto a file with the same header that ends with a whole row. The
/// file is read through a second, read-only descriptor of the same open file (`/proc/self/fd`),
/// so what is checked is what was opened, even if the path changes meanwhile.
fn check_existing(opened: &File, path: &Path, header: &str, len: u64) -> Result<(), String> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{}", opened.as_raw_fd()))
        .or_else(|_| {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
        })
        .map_err(|e| format!("error: cannot read {}: {e}", path.display()))?;
    let mut first = vec![0u8; header.len() + 1];
    let n = f.read_at(&mut first, 0).unwrap_or(0);
    let line_end = first[..n].iter().position(|&b| b == b'\n' || b == b'\r');
    let same = line_end == Some(header.len()) && &first[..header.len()] == header.as_bytes();
    if !same {
        return Err(format!(
            "error: {} already holds a trace with other columns (different GPU/RAPL set-up or \
             another tool); appending would mix layouts: choose another --out or move it away",
            path.display()
        ));
    }
    let mut last = [0u8; 1];
    if f.read_at(&mut last, len - 1).is_ok() && last[0] != b'\n' {
        return Err(format!(
            "error: {} ends in a cut row (no final newline); repair or move it before appending",
            path.display()
        ));
    }
    Ok(())
}

impl Writer {
    #[cfg(test)]
    /// Opens the CSV (writing the header unless appending to a file that has it) and the
    /// optional JSONL file, and starts the writer thread.
    ///
    /// # Errors
    /// The file cannot be opened, or an existing file has another header or a cut last row.
    pub fn start(csv: &Path, header: &str, jsonl: Option<&Path>) -> Result<Self, String> {
        Writer::start_with(Some(csv), header, jsonl, None)
    }

    /// [`Writer::start`] with the CSV optional (`None`: rows go to the tap only, nothing is
    /// kept) and a tap that sees every batch of rows before the file does.
    ///
    /// # Errors
    /// As [`Writer::start`].
    pub fn start_with(
        csv: Option<&Path>,
        header: &str,
        jsonl: Option<&Path>,
        mut tap: Option<Tap>,
    ) -> Result<Self, String> {
        let mut csv_out = match csv {
            Some(p) => Some(open_out(p, Some(header))?),
            None => None,
        };
        let mut jsonl_out = match jsonl {
            Some(p) => Some(open_out(p, None)?),
            None => None,
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(4096);
        let (pool_tx, pool_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let failed = Arc::new(AtomicBool::new(false));
        let failed_w = failed.clone();
        let join = std::thread::Builder::new()
            .name("flinch-writer".into())
            .spawn(move || {
                let mut report = WriterReport::default();
                let mut last_flush = Instant::now();
                let mut dead = false;
                let mut tapped_rows = 0u64;
                let fail = |msg: String, report: &mut WriterReport, dead: &mut bool| {
                    eprintln!("{msg}");
                    report.error.get_or_insert(msg);
                    *dead = true;
                    failed_w.store(true, Ordering::SeqCst);
                };
                loop {
                    let msg = rx.recv_timeout(FLUSH_EVERY);
                    let end = matches!(msg, Err(RecvTimeoutError::Disconnected));
                    match msg {
                        Ok(Msg::Csv(mut buf, rows)) => {
                            if let Some(t) = tap.as_mut() {
                                t(&buf);
                            }
                            tapped_rows += rows;
                            if let (Some(c), false) = (csv_out.as_mut(), dead) {
                                c.pending.extend_from_slice(&buf);
                                c.pending_rows += rows;
                            }
                            buf.clear();
                            let _ = pool_tx.send(buf);
                        }
                        Ok(Msg::Jsonl(mut buf)) => {
                            if let (Some(j), false) = (jsonl_out.as_mut(), dead) {
                                j.pending.extend_from_slice(&buf);
                                j.pending_rows += 1;
                            }
                            buf.clear();
                            let _ = pool_tx.send(buf);
                        }
                        Err(_) => {}
                    }
                    let due = end
                        || last_flush.elapsed() >= FLUSH_EVERY
                        || csv_out
                            .as_ref()
                            .is_some_and(|c| c.pending.len() >= FLUSH_BYTES);
                    if due && !dead {
                        if let Some(c) = csv_out.as_mut()
                            && let Err(e) = c.flush()
                        {
                            fail(e, &mut report, &mut dead);
                        }
                        if let Some(j) = jsonl_out.as_mut()
                            && let Err(e) = j.flush()
                        {
                            fail(e, &mut report, &mut dead);
                        }
                        last_flush = Instant::now();
                    }
                    if end {
                        break;
                    }
                }
                report.rows = csv_out.as_ref().map_or(tapped_rows, |c| c.rows);
                report
            })
            .map_err(|e| format!("error: cannot start the writer thread: {e}"))?;
        let sender = RowSender {
            tx,
            pool: Arc::new(Mutex::new(pool_rx)),
            failed,
        };
        Ok(Writer { sender, join })
    }

    /// A sender for a producer thread.
    pub fn sender(&self) -> RowSender {
        self.sender.clone()
    }

    /// Drops this handle's sender and waits for the writer to drain, flush and finish. Every
    /// other [`RowSender`] must have been dropped first, or this waits for them.
    pub fn finish(self) -> WriterReport {
        drop(self.sender);
        self.join.join().unwrap_or_else(|_| WriterReport {
            rows: 0,
            error: Some("error: the writer thread panicked".to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("flinch-writer-{name}-{}.csv", std::process::id()))
    }

    #[test]
    fn rows_have_the_header_width_and_quote_labels() {
        let h = header(["rapl_package-0_dram_uj"].into_iter());
        let n = column_count(&h);
        assert_eq!(n, 20);
        let mut buf = Vec::new();
        push_mark_row(&mut buf, n, 5, 6, "a,\"b\"");
        assert_eq!(
            String::from_utf8_lossy(&buf),
            "5,6,MARK,\"a,\"\"b\"\"\",,,,,,,,,,,,,,,,\n"
        );
        buf.clear();
        push_mark_row_thread(&mut buf, n, 5, 6, "x_start", Some(4242));
        assert_eq!(
            String::from_utf8_lossy(&buf),
            "5,6,MARK,x_start,,,,,,,,,,,,,,,4242,\n"
        );
        buf.clear();
        let r = GpuReading {
            power_w: Some(71.25),
            util_pct: Some(99),
            mem_util_pct: Some(40),
            sm_clock_mhz: Some(1980),
            temp_c: Some(60),
            energy_mj: Some(123),
            mem_used_mib: Some(1000),
            throttle_reasons: Some(4),
            mem_clock_mhz: None,
        };
        let host = HostReading {
            cpu_pct: Some(12.345),
            mem_used_bytes: Some(3 << 20),
            mem_available_bytes: Some(5 << 20),
            mem_total_bytes: Some(8 << 20),
        };
        let t = TickFields {
            rapl: &[Some(10), Some(20)],
            primary: Some(0),
            primary_max_uj: Some(99),
            host: Some(host),
        };
        push_sample_row(&mut buf, n, 1, 2, Some((0, &r)), Some(&t));
        push_sample_row(&mut buf, n, 3, 4, Some((1, &r)), None);
        push_sample_row(&mut buf, n, 7, 8, None, Some(&t));
        let s = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "1,2,SAMPLE,,71.25,99,40,1980,60,10,0,123,1000,4,12.35,3,5,99,,20"
        );
        assert_eq!(
            lines[1],
            "3,4,SAMPLE,,71.25,99,40,1980,60,,1,123,1000,4,,,,,,"
        );
        assert_eq!(lines[2], "7,8,SAMPLE,,,,,,,10,,,,,12.35,3,5,99,,20");
        for l in lines {
            assert_eq!(l.split(',').count(), n, "{l}");
        }
    }

    #[test]
    fn appends_without_repeating_the_header_and_refuses_other_layouts() {
        let p = tmp("append");
        let _ = std::fs::remove_file(&p);
        let h = header(std::iter::empty());
        for _ in 0..2 {
            let w = Writer::start(&p, &h, None).unwrap();
            let s = w.sender();
            let mut b = s.buffer();
            push_mark_row(&mut b, column_count(&h), 1, 2, "x");
            s.send(Msg::Csv(b, 1));
            drop(s);
            let rep = w.finish();
            assert_eq!(rep.rows, 1);
            assert!(rep.error.is_none());
        }
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("t_mono_ns").count(), 1);
        assert_eq!(text.lines().count(), 3);
        let other = header(["rapl_x_uj"].into_iter());
        let e = Writer::start(&p, &other, None).err().unwrap();
        assert!(e.contains("other columns"), "{e}");
        std::fs::write(&p, format!("{h}\n1,2,MARK")).unwrap();
        let e = Writer::start(&p, &h, None).err().unwrap();
        assert!(e.contains("cut row"), "{e}");
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn dev_full_gives_a_clear_error() {
        let h = header(std::iter::empty());
        let e = Writer::start(Path::new("/dev/full"), &h, None)
            .err()
            .unwrap();
        assert!(
            e.contains("/dev/full") && e.contains("No space left"),
            "{e}"
        );
    }
}
