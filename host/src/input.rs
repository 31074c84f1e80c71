//! Input files for the subcommands: plain or gzip, detected by magic bytes (never by name).
//!
//! An input is opened once ([`InputFile::open`]) and every pass of a job reads it through that
//! one handle ([`InputFile::read`]): a regular file with positioned reads from its start, so each
//! pass has its own position and the file is never opened again. An input that is not a regular
//! file (a FIFO, a pipe, `/dev/stdin` on a pipe, a process substitution, a character device) can
//! be read only once: where the job may read it again ([`Passes::Several`]), the first pass
//! copies every byte it reads to a temporary file ([`spool`]) and the later passes read that
//! copy (docs/robustness.md, "Inputs that are not regular files").
//!
//! Each pass starts a reader thread that fills a bounded ring of recycled buffers (4 x 1 MiB
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
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread;

use flinch_core::analyzer::trailing_garbage_warning;
use flinch_core::gzip::{GzDecoder, is_gzip};

use spool::Spool;

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

/// How many times a job may read an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passes {
    /// Once: an input that is not a regular file is read as it comes, with no copy.
    One,
    /// Possibly again in later passes: an input that is not a regular file is spooled to a
    /// temporary file while the first pass reads it, with a note on stderr.
    Several,
}

/// One input, opened once. Clones share the one open file; each [`InputFile::read`] is a pass.
#[derive(Clone)]
pub struct InputFile(Arc<Opened>);

struct Opened {
    path: PathBuf,
    kind: Kind,
}

enum Kind {
    /// A regular file: every pass reads it with positioned reads from its start.
    Regular(Arc<File>),
    /// A FIFO, pipe, socket or device: its bytes come once, in order. The first pass takes
    /// `file`; with a `spool`, later passes read the copy the first pass wrote.
    Stream {
        file: Mutex<Option<File>>,
        spool: Option<Arc<Spool>>,
    },
}

impl InputFile {
    /// Opens `path` (the one open of this input). An input that is not a regular file is
    /// spooled when `passes` is [`Passes::Several`]: one line on stderr says so.
    ///
    /// # Errors
    /// "cannot open PATH: reason" when it cannot be opened, is a directory, or cannot be
    /// spooled (no temporary file can be created).
    pub fn open(path: &Path, passes: Passes) -> Result<InputFile, String> {
        let cannot = |e: &dyn std::fmt::Display| format!("cannot open {}: {e}", path.display());
        let file = File::open(path).map_err(|e| cannot(&e))?;
        let meta = file.metadata().map_err(|e| cannot(&e))?;
        let kind = if meta.is_file() {
            Kind::Regular(Arc::new(file))
        } else if meta.is_dir() {
            return Err(cannot(&"it is a directory"));
        } else {
            let spool = match passes {
                Passes::One => None,
                Passes::Several => {
                    let spool = Spool::create().map_err(|e| cannot(&e))?;
                    eprintln!(
                        "note: {} is not a regular file; spooling it to a temporary file in {} (it may be read twice)",
                        path.display(),
                        std::env::temp_dir().display()
                    );
                    Some(Arc::new(spool))
                }
            };
            Kind::Stream {
                file: Mutex::new(Some(file)),
                spool,
            }
        };
        Ok(InputFile(Arc::new(Opened {
            path: path.to_path_buf(),
            kind,
        })))
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// The file for positioned reads, with its length: a regular file, or the whole spool of
    /// one that is not after its first pass; `None` otherwise (a stream is read forward only,
    /// through [`InputFile::read`]).
    pub fn seekable(&self) -> Option<(Arc<File>, u64)> {
        match &self.0.kind {
            Kind::Regular(f) => Some((f.clone(), f.metadata().ok()?.len())),
            Kind::Stream { file, spool } => {
                // Before the first pass took the stream, the spool is empty.
                let taken = file.lock().map_or(true, |f| f.is_none());
                spool.as_ref().filter(|_| taken)?.whole()
            }
        }
    }

    /// One pass over the input with the default ring (4 x 1 MiB).
    ///
    /// # Errors
    /// As [`InputFile::read_with`].
    pub fn read(&self) -> Result<Input, String> {
        self.read_with(InputOptions::default())
    }

    /// One pass over the input, from its start, with the given ring sizes; starts its reader
    /// thread.
    ///
    /// # Errors
    /// "cannot read PATH: reason" when the first read fails; "cannot read PATH again: ..." for
    /// a second pass over a stream that was not spooled, or whose first pass stopped early.
    pub fn read_with(&self, options: InputOptions) -> Result<Input, String> {
        self.read_keeping(options, None)
    }

    /// [`InputFile::read`]; a regular `.gz` file's inflater also keeps restart points, handed
    /// to [`checkpoints`] at its end for a later pass ([`checkpoints::GzRanges`]). A stream is
    /// read as by [`InputFile::read`]: its later passes inflate its spool from the start.
    ///
    /// # Errors
    /// As [`InputFile::read_with`].
    pub fn read_indexed(&self) -> Result<Input, String> {
        self.read_indexed_with(InputOptions::default())
    }

    /// [`InputFile::read_indexed`] with the given ring sizes.
    ///
    /// # Errors
    /// As [`InputFile::read_with`].
    pub fn read_indexed_with(&self, options: InputOptions) -> Result<Input, String> {
        let recorder = match &self.0.kind {
            Kind::Regular(f) => checkpoints::recorder_for(f),
            Kind::Stream { .. } => None,
        };
        self.read_keeping(options, recorder)
    }

    fn read_keeping(
        &self,
        options: InputOptions,
        restart: Option<checkpoints::Recorder>,
    ) -> Result<Input, String> {
        let path = self.path();
        let source = match &self.0.kind {
            Kind::Regular(f) => Source::At {
                file: f.clone(),
                pos: 0,
            },
            Kind::Stream { file, spool } => {
                let first = file.lock().ok().and_then(|mut f| f.take());
                match (first, spool) {
                    (Some(file), spool) => Source::Stream {
                        file,
                        spool: spool.clone(),
                    },
                    (None, Some(spool)) => match spool.whole() {
                        Some((file, _)) => Source::At { file, pos: 0 },
                        None => {
                            return Err(format!(
                                "cannot read {} again: its first pass stopped before the end",
                                path.display()
                            ));
                        }
                    },
                    (None, None) => {
                        return Err(format!(
                            "cannot read {} again: it needs a regular file (it is read twice)",
                            path.display()
                        ));
                    }
                }
            }
        };
        start(source, path, options, restart)
    }
}

/// Opens `path` for one pass with the default ring (4 x 1 MiB) and starts its reader thread.
///
/// # Errors
/// "cannot open PATH: reason" when the file cannot be opened or read.
pub fn open_input(path: &Path) -> Result<Input, String> {
    open_input_with(path, InputOptions::default())
}

/// Opens `path` for one pass with the given ring sizes and starts its reader thread.
///
/// # Errors
/// "cannot open PATH: reason" when the file cannot be opened or read.
pub fn open_input_with(path: &Path, options: InputOptions) -> Result<Input, String> {
    InputFile::open(path, Passes::One)?.read_with(options)
}

/// Starts one pass: sniffs the magic from the first read (those bytes go to the worker as its
/// first input) and starts the reader thread.
fn start(
    source: Source,
    path: &Path,
    options: InputOptions,
    restart: Option<checkpoints::Recorder>,
) -> Result<Input, String> {
    let total = match &source {
        Source::At { file, .. } => file.metadata().map_or(0, |m| m.len()),
        // Unknown until the end.
        Source::Stream { .. } => 0,
    };
    let buffer_bytes = options.buffer_bytes.max(64);
    let read = Arc::new(AtomicU64::new(0));
    let (tx, rx) = sync_channel(options.buffers.max(2));
    let (free, free_rx) = sync_channel(options.buffers.max(2));
    let mut worker = Worker {
        source,
        inbuf: vec![0u8; buffer_bytes],
        in_len: 0,
        read: read.clone(),
        tx,
        free: free_rx,
        restart: None,
    };
    let mut first = std::mem::take(&mut worker.inbuf);
    worker.in_len = worker
        .fill(&mut first)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    worker.inbuf = first;
    let gzip = is_gzip(&worker.inbuf[..worker.in_len]);
    worker.restart = restart.filter(|_| gzip);
    for _ in 0..options.buffers.max(2) {
        free.send(vec![0u8; buffer_bytes])
            .expect("the receiver is alive");
    }
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
        match self.receive()? {
            Some((buf, len)) => {
                let (buf, len) = self.current.insert((buf, len));
                Ok(Some(&buf[..*len]))
            }
            None => Ok(None),
        }
    }

    /// [`Input::next_chunk`], the chunk taken out of the ring: it goes back to the ring when
    /// the last clone of its `Arc` is dropped, and the reader waits for a free buffer until
    /// then, so the ring's size bounds the decoded bytes held however long consumers keep
    /// them. Do not mix with [`Input::next_chunk`] or `Read` on one input.
    ///
    /// # Errors
    /// As [`Input::next_chunk`].
    pub fn next_shared(&mut self) -> Result<Option<SharedChunk>, InputError> {
        Ok(self.receive()?.map(|(buf, len)| SharedChunk {
            buf,
            len,
            free: self.free.clone(),
        }))
    }

    fn receive(&mut self) -> Result<Option<(Vec<u8>, usize)>, InputError> {
        if self.done {
            return Ok(None);
        }
        match self.rx.recv() {
            Ok(Msg::Data(buf, len)) => Ok(Some((buf, len))),
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

/// A chunk of decoded bytes out of an input's ring ([`Input::next_shared`]); back to the ring
/// when dropped.
pub struct SharedChunk {
    buf: Vec<u8>,
    len: usize,
    free: SyncSender<Vec<u8>>,
}

impl std::ops::Deref for SharedChunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for SharedChunk {
    fn drop(&mut self) {
        // Never blocks: the channel holds every buffer there is. After the pass ended nobody
        // takes it and it is freed.
        let _ = self.free.try_send(std::mem::take(&mut self.buf));
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

/// Where a pass's bytes come from.
enum Source {
    /// Positioned reads of a regular file or a whole spool; `pos`: the next byte.
    At { file: Arc<File>, pos: u64 },
    /// The first (and only) pass over a stream; every byte read also goes to `spool`.
    Stream {
        file: File,
        spool: Option<Arc<Spool>>,
    },
}

impl Source {
    /// The pass stopped by itself (the end, or a decode error a later pass meets at the same
    /// byte): a spool now holds every byte a pass reads.
    fn finish(&self) {
        if let Source::Stream {
            spool: Some(spool), ..
        } = self
        {
            spool.finish();
        }
    }
}

/// Reads like `Read::read`, retrying on `Interrupted`.
fn read_retry(
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
    buf: &mut [u8],
) -> io::Result<usize> {
    loop {
        match read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// The reader thread's state.
struct Worker {
    source: Source,
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
    /// One read into `buf` (0 at the end), counted, and copied to the spool if there is one.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, InputError> {
        let at = self.read.load(Ordering::Relaxed);
        let n = match &mut self.source {
            Source::At { file, pos } => {
                read_retry(|b| file.read_at(b, *pos), buf).inspect(|&n| *pos += n as u64)
            }
            Source::Stream { file, .. } => read_retry(|b| file.read(b), buf),
        }
        .map_err(|e| InputError {
            message: format!("read error at byte {at}: {e}"),
            cut: None,
        })?;
        if let Source::Stream {
            spool: Some(spool), ..
        } = &self.source
        {
            spool
                .write(&buf[..n])
                .map_err(|message| InputError { message, cut: None })?;
        }
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    /// Sends the last message; first marks a spool whole unless the pass failed reading.
    fn end(&self, msg: Msg, whole: bool) {
        if whole {
            self.source.finish();
        }
        let _ = self.tx.send(msg);
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
                match self.fill(&mut out[filled..]) {
                    Ok(0) => {
                        end = Some((Msg::End(None), true));
                        break;
                    }
                    Ok(n) => filled += n,
                    Err(e) => {
                        end = Some((Msg::Error(e), false));
                        break;
                    }
                }
            }
            if filled > 0 && self.tx.send(Msg::Data(out, filled)).is_err() {
                return;
            }
            if let Some((msg, whole)) = end {
                self.end(msg, whole);
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
                        break Some((
                            match dec.finish() {
                                Ok(()) => Msg::End(warning),
                                Err(e) => Msg::Error(gz_error(e)),
                            },
                            true,
                        ));
                    }
                    let mut inbuf = std::mem::take(&mut self.inbuf);
                    let got = self.fill(&mut inbuf);
                    self.inbuf = inbuf;
                    match got {
                        Ok(0) => eof = true,
                        Ok(n) => {
                            self.in_len = n;
                            in_pos = 0;
                        }
                        Err(e) => break Some((Msg::Error(e), false)),
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
                    // The same bytes give the same error: a spool of them is whole.
                    Err(e) => break Some((Msg::Error(gz_error(e)), true)),
                }
            };
            if filled > 0 && self.tx.send(Msg::Data(out, filled)).is_err() {
                return;
            }
            if let Some((msg, whole)) = end {
                // Kept before the end is told, so that a second pass after it finds them.
                if let Some(p) = points.take() {
                    p.keep();
                }
                self.end(msg, whole);
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
pub mod spool;
mod zlib_rs;
pub use zlib_rs::ZlibRsInflate;

#[cfg(test)]
mod tests;
