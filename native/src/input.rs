//! Input files for the subcommands: plain or gzip, detected by magic bytes (never by name).
//!
//! [`open_input`] starts a reader thread that fills a bounded ring of recycled buffers (4 x 1 MiB
//! by default) and hands them to the consumer, so reading and inflating on one core overlap with
//! scanning on the other. Memory stays at the ring's size whatever the file size.
//!
//! Gzip is inflated by the core's gzip framing (`flinch_core::gzip::GzDecoder`: header state
//! machine, CRC32/ISIZE checks, multi-member, error offsets) over zlib-rs raw inflate, which
//! spends less CPU per byte than the core's miniz_oxide inflater (BENCHMARKS.md, "Trace
//! engine"). The web page uses the same framing over miniz_oxide.
//!
//! A cut `.gz` yields every byte decoded before the cut, then an [`InputError`] with
//! [`InputError::cut`] set and the message "truncated gzip member at byte N": callers treat it as
//! truncation, not failure.
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flinch_core::analyzer::trailing_garbage_warning;
use flinch_core::gzip::{GzDecoder, is_gzip};

/// Sizes of the buffer ring between the reader thread and the consumer.
#[derive(Clone, Copy, Debug)]
pub struct InputOptions {
    /// Buffers in the ring (at least 2).
    pub buffers: usize,
    /// Bytes per buffer (decoded bytes per chunk), and the size of compressed reads.
    pub buffer_bytes: usize,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            buffers: 4,
            buffer_bytes: 1 << 20,
        }
    }
}

/// A read or decode error, with the byte offset in the file where it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// One line, e.g. "truncated gzip member at byte 1234" (no file name: callers add it).
    pub message: String,
    /// The gzip stream was cut short (the decoder's `GzError::Truncated`): every byte decoded
    /// before the cut was delivered.
    pub cut: Option<flinch_core::gzip::GzError>,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// Compressed (file) bytes read so far, shared with the reader thread; for a progress bar.
#[derive(Clone, Debug)]
pub struct Progress {
    read: Arc<AtomicU64>,
    total: u64,
}

impl Progress {
    /// File bytes read so far (compressed bytes for gzip).
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
    /// The file's size in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }
}

enum Msg {
    Data(Vec<u8>, usize),
    /// The end, with a warning about the input (trailing garbage after the last gzip member).
    End(Option<String>),
    Error(InputError),
}

/// A chunk source over one input file. Call [`Input::next_chunk`] until it returns `Ok(None)`
/// (or an error); it also implements [`std::io::Read`].
pub struct Input {
    rx: Receiver<Msg>,
    free: SyncSender<Vec<u8>>,
    current: Option<(Vec<u8>, usize)>,
    /// Read position in `current` for the `Read` impl.
    pos: usize,
    done: bool,
    gzip: bool,
    progress: Progress,
    warning: Option<String>,
}

/// Opens `path` with the default ring (4 x 1 MiB) and starts its reader thread.
///
/// # Errors
/// "cannot open PATH: reason" when the file cannot be opened or read.
pub fn open_input(path: &Path) -> Result<Input, String> {
    open_input_with(path, InputOptions::default())
}

/// Opens `path` with the given ring sizes and starts its reader thread.
///
/// # Errors
/// "cannot open PATH: reason" when the file cannot be opened or read.
pub fn open_input_with(path: &Path, options: InputOptions) -> Result<Input, String> {
    open_input_indexing(path, options, None)
}

/// [`open_input_with`]; for gzip with `restart`, its inflater also keeps restart points in it,
/// handed to [`checkpoints`] at the end (docs/gzip-restart.md).
fn open_input_indexing(
    path: &Path,
    options: InputOptions,
    restart: Option<checkpoints::Recorder>,
) -> Result<Input, String> {
    let cannot = |e: io::Error| format!("cannot open {}: {e}", path.display());
    let mut file = File::open(path).map_err(cannot)?;
    let total = file.metadata().map_err(cannot)?.len();
    let buffer_bytes = options.buffer_bytes.max(64);
    // Sniff the magic from the first read; the bytes read go to the worker as its first input.
    let mut first = vec![0u8; buffer_bytes];
    let first_len = read_retry(&mut file, &mut first).map_err(cannot)?;
    let gzip = is_gzip(&first[..first_len]);
    let read = Arc::new(AtomicU64::new(first_len as u64));

    let buffers = options.buffers.max(2);
    let (tx, rx) = sync_channel(buffers);
    let (free, free_rx) = sync_channel(buffers);
    for _ in 0..buffers {
        free.send(vec![0u8; buffer_bytes])
            .expect("the receiver is alive");
    }
    let worker = Worker {
        file,
        inbuf: first,
        in_len: first_len,
        read: read.clone(),
        tx,
        free: free_rx,
        restart: restart.filter(|_| gzip),
    };
    let name = if gzip {
        "flinch-inflate"
    } else {
        "flinch-read"
    };
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if gzip {
                worker.run_gzip()
            } else {
                worker.run_plain()
            }
        })
        .map_err(|e| format!("cannot start the reader thread for {}: {e}", path.display()))?;
    Ok(Input {
        rx,
        free,
        current: None,
        pos: 0,
        done: false,
        gzip,
        progress: Progress { read, total },
        warning: None,
    })
}

impl Input {
    /// Whether the file is gzip (by its magic bytes).
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// After the end (`next_chunk` gave `Ok(None)`): a warning about the input for the result,
    /// e.g. trailing garbage after the last gzip member (ignored, its offset named, as gzip -d
    /// does).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// A handle on the compressed bytes read so far, for a progress bar.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// The next chunk of (decoded) bytes; `Ok(None)` at the end of a complete input. The chunk
    /// is valid until the next call. After an error, later calls return `Ok(None)`.
    ///
    /// # Errors
    /// An [`InputError`] naming the byte offset: a read error, corrupt gzip data, or a cut gzip
    /// stream ([`InputError::truncated`]) after every byte decoded before the cut was returned.
    pub fn next_chunk(&mut self) -> Result<Option<&[u8]>, InputError> {
        if let Some((buf, _)) = self.current.take() {
            // Back to the ring; never blocks: the channel holds every buffer there is.
            let _ = self.free.try_send(buf);
        }
        self.pos = 0;
        if self.done {
            return Ok(None);
        }
        match self.rx.recv() {
            Ok(Msg::Data(buf, len)) => {
                let (buf, len) = self.current.insert((buf, len));
                Ok(Some(&buf[..*len]))
            }
            Ok(Msg::End(warning)) => {
                self.done = true;
                self.warning = warning;
                Ok(None)
            }
            Ok(Msg::Error(e)) => {
                self.done = true;
                Err(e)
            }
            Err(_) => {
                self.done = true;
                Err(InputError {
                    message: "the input reader thread stopped unexpectedly".into(),
                    cut: None,
                })
            }
        }
    }
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some((buf, len)) = &self.current
                && self.pos < *len
            {
                let n = (*len - self.pos).min(out.len());
                out[..n].copy_from_slice(&buf[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            match self.next_chunk() {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(0),
                Err(e) => {
                    let kind = if e.cut.is_some() {
                        io::ErrorKind::UnexpectedEof
                    } else {
                        io::ErrorKind::InvalidData
                    };
                    return Err(io::Error::new(kind, e));
                }
            }
        }
    }
}

/// Reads like `Read::read`, retrying on `Interrupted`.
fn read_retry(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// The reader thread's state.
struct Worker {
    file: File,
    /// Compressed input for gzip; for plain files, only the sniffed first bytes.
    inbuf: Vec<u8>,
    in_len: usize,
    read: Arc<AtomicU64>,
    tx: SyncSender<Msg>,
    free: Receiver<Vec<u8>>,
    /// Restart points to keep while inflating (gzip only).
    restart: Option<checkpoints::Recorder>,
}

impl Worker {
    fn read_error(&self, e: io::Error) -> InputError {
        InputError {
            message: format!(
                "read error at byte {}: {e}",
                self.read.load(Ordering::Relaxed)
            ),
            cut: None,
        }
    }

    /// Plain files: read straight into the ring's buffers.
    fn run_plain(mut self) {
        let mut first = Some(self.in_len);
        loop {
            let Ok(mut out) = self.free.recv() else {
                return; // the consumer is gone
            };
            let mut filled = 0;
            if let Some(n) = first.take() {
                // The sniffed bytes come first (same buffer size, so they fit).
                out[..n].copy_from_slice(&self.inbuf[..n]);
                filled = n;
                self.inbuf = Vec::new();
            }
            let mut end = None;
            while filled < out.len() {
                match read_retry(&mut self.file, &mut out[filled..]) {
                    Ok(0) => {
                        end = Some(Msg::End(None));
                        break;
                    }
                    Ok(n) => {
                        filled += n;
                        self.read.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) => {
                        end = Some(Msg::Error(self.read_error(e)));
                        break;
                    }
                }
            }
            if filled > 0 && self.tx.send(Msg::Data(out, filled)).is_err() {
                return;
            }
            if let Some(msg) = end {
                let _ = self.tx.send(msg);
                return;
            }
        }
    }

    /// Gzip files: inflate into the ring's buffers.
    fn run_gzip(mut self) {
        let mut points = self.restart.take();
        let inflater = match points {
            Some(_) => ZlibRsInflate::new().stopping_at_blocks(),
            None => ZlibRsInflate::new(),
        };
        let mut dec = GzDecoder::with_inflater(inflater);
        let mut in_pos = 0;
        let mut eof = false;
        loop {
            let Ok(mut out) = self.free.recv() else {
                return;
            };
            let mut filled = 0;
            let end = loop {
                // Past trailing garbage nothing more is decoded: stop reading.
                if in_pos == self.in_len || dec.trailing_garbage_at().is_some() {
                    if eof || dec.trailing_garbage_at().is_some() {
                        let warning = dec.trailing_garbage_at().map(trailing_garbage_warning);
                        break Some(match dec.finish() {
                            Ok(()) => Msg::End(warning),
                            Err(e) => Msg::Error(gz_error(e)),
                        });
                    }
                    match read_retry(&mut self.file, &mut self.inbuf) {
                        Ok(0) => eof = true,
                        Ok(n) => {
                            self.in_len = n;
                            in_pos = 0;
                            self.read.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(e) => break Some(Msg::Error(self.read_error(e))),
                    }
                    continue;
                }
                let input = &self.inbuf[in_pos..self.in_len];
                match dec.decode_with(input, &mut out[filled..], &mut points) {
                    Ok((_, nin, nout)) => {
                        in_pos += nin;
                        filled += nout;
                        if filled == out.len() {
                            break None;
                        }
                    }
                    Err(e) => break Some(Msg::Error(gz_error(e))),
                }
            };
            if filled > 0 && self.tx.send(Msg::Data(out, filled)).is_err() {
                return;
            }
            if let Some(msg) = end {
                // Kept before the end is told, so that a second pass after it finds them.
                if let Some(p) = points.take() {
                    p.keep();
                }
                let _ = self.tx.send(msg);
                return;
            }
        }
    }
}

fn gz_error(e: flinch_core::gzip::GzError) -> InputError {
    InputError {
        message: e.to_string(),
        cut: e.is_truncated().then_some(e),
    }
}

pub mod checkpoints;
mod zlib_rs;
pub use zlib_rs::ZlibRsInflate;

#[cfg(test)]
mod tests;
