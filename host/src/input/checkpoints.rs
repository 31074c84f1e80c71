//! Restart points of a `.gz` read once, for reading parts of it again (docs/gzip-restart.md).
//!
//! [`super::InputFile::read_indexed`] reads an input whose inflater keeps a [`RestartIndex`] (a point every
//! [`SPACING_BYTES`] of output, at most [`MAX_POINTS`]) while the first pass reads it; at the
//! end the index is kept here, keyed by the file's identity (device, inode, length, mtime),
//! for the last two files. [`GzRanges`] then reads any decoded range of that file by restarting
//! at the point before it, or from the start when there is no index.
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
#[cfg(test)]
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use flinch_core::gzip::{GzDecoder, RawInflate, RestartIndex, RestartPoint, RestartSink};

#[cfg(test)]
use super::Input;
use super::ZlibRsInflate;

/// Decoded bytes between restart points: a range is reached after inflating at most this much
/// more than its own length. Memory: 32 KiB of window per point, 8 MiB per GB of output.
pub const SPACING_BYTES: u64 = 4 << 20;

/// Points held at most (16 MiB of windows); past 2 GB of output the spacing doubles.
pub const MAX_POINTS: usize = 512;

/// The spacing used: the unit tests' small files get points every 64 KiB, so that every test
/// of the join's second pass over a `.gz` goes through them.
const fn spacing_bytes() -> u64 {
    if cfg!(test) { 64 << 10 } else { SPACING_BYTES }
}

/// Indexes kept at most: the last file's, and one more (a file whose second pass did not
/// run, or another test's).
const KEPT_FILES: usize = 2;

/// A file's identity: the index applies only to the file it was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileKey {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileKey {
    fn of(meta: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// The indexes of the last `.gz` files read through [`super::InputFile::read_indexed`], newest last: at most
/// [`KEPT_FILES`], so memory stays bounded whatever the number of files.
static KEPT: Mutex<Vec<(FileKey, RestartIndex)>> = Mutex::new(Vec::new());

/// The restart points an indexed input keeps while its reader thread inflates.
pub(super) struct Recorder {
    key: FileKey,
    index: RestartIndex,
}

impl Recorder {
    /// The index is kept for [`take`] (replacing the one kept before).
    pub(super) fn keep(self) {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|(k, _)| *k != self.key);
        if kept.len() >= KEPT_FILES {
            kept.remove(0);
        }
        kept.push((self.key, self.index));
    }
}

impl RestartSink for Recorder {
    fn wants(&self, out_offset: u64) -> bool {
        self.index.wants(out_offset)
    }
    fn add<I: RawInflate + ?Sized>(&mut self, point: &RestartPoint, inflater: &mut I) {
        self.index.add(point, inflater);
    }
}

/// Opens `path` as [`super::open_input`] does; for gzip, the inflater keeps restart points,
/// which [`take`] gives after the input's end.
///
/// # Errors
/// As [`super::open_input`].
#[cfg(test)]
pub fn open_indexed(path: &Path) -> Result<Input, String> {
    super::InputFile::open(path, super::Passes::One)?.read_indexed()
}

/// A recorder of restart points for the regular file `file`, keyed by its identity.
pub(super) fn recorder_for(file: &File) -> Option<Recorder> {
    let meta = file.metadata().ok()?;
    Some(Recorder {
        key: FileKey::of(&meta),
        index: RestartIndex::new(spacing_bytes(), MAX_POINTS),
    })
}

/// The restart points kept for the file now at `path`, if it is the one last read through
/// [`open_indexed`] and unchanged since; taken out (a second call gives `None`).
#[cfg(test)]
pub fn take(path: &Path) -> Option<RestartIndex> {
    take_for(&File::open(path).ok()?)
}

/// The restart points kept for the open file `file`, if it is the one last read through
/// [`super::InputFile::read_indexed`] and unchanged since; taken out (a second call gives
/// `None`).
pub fn take_for(file: &File) -> Option<RestartIndex> {
    let key = FileKey::of(&file.metadata().ok()?);
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let i = kept.iter().position(|(k, _)| *k == key)?;
    Some(kept.remove(i).1)
}

/// Restarts at a point by every [`GzRanges`] of the process (a test's evidence that a second
/// pass used them).
static RESTARTS: AtomicU64 = AtomicU64::new(0);

/// Restarts at a restart point so far, over every [`GzRanges`] of the process.
pub fn restarts_total() -> u64 {
    RESTARTS.load(Ordering::Relaxed)
}

/// Compressed bytes per read.
const READ_BYTES: usize = 128 << 10;
/// Decoded bytes per inflate call (and the most [`GzRanges::read`] returns at once).
const OUT_BYTES: usize = 256 << 10;

/// Decoded bytes of a `.gz` at any offset, read with positioned reads: from the restart point
/// before the offset when there is one ahead of where the decoder stands, else by decoding on
/// (or from the start, to go back). A cut or corrupt stream reads as ending where the decoded
/// bytes end (the first pass reported why).
pub struct GzRanges {
    file: Arc<File>,
    /// Shared: the join's second pass reads ranges on two threads over one index.
    index: Option<Arc<RestartIndex>>,
    dec: GzDecoder<ZlibRsInflate>,
    inbuf: Vec<u8>,
    in_pos: usize,
    in_len: usize,
    /// File offset of the next compressed read.
    file_pos: u64,
    eof: bool,
    out: Vec<u8>,
    /// Decoded offset of `out[0]`.
    out_at: u64,
    out_len: usize,
    /// No more decoded bytes (end, cut, corrupt data or trailing garbage).
    done: bool,
    restarts: u64,
}

impl GzRanges {
    /// Reads the open `.gz` file `file` with the points [`take_for`] gives for it (none:
    /// decoding from the start).
    pub fn over(file: Arc<File>) -> GzRanges {
        let index = take_for(&file);
        GzRanges::with_shared(file, index.map(Arc::new))
    }

    /// Another reader of the same file over the same restart points.
    pub fn another(&self) -> GzRanges {
        GzRanges::with_shared(self.file.clone(), self.index.clone())
    }

    /// Opens `path` with the given restart points.
    ///
    /// # Errors
    /// "PATH: reason" when it cannot be opened.
    #[cfg(test)]
    pub fn with_index(path: &Path, index: Option<RestartIndex>) -> Result<GzRanges, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(GzRanges::with_shared(Arc::new(file), index.map(Arc::new)))
    }

    fn with_shared(file: Arc<File>, index: Option<Arc<RestartIndex>>) -> GzRanges {
        GzRanges {
            file,
            index,
            dec: GzDecoder::with_inflater(ZlibRsInflate::new()),
            inbuf: vec![0; READ_BYTES],
            in_pos: 0,
            in_len: 0,
            file_pos: 0,
            eof: false,
            out: vec![0; OUT_BYTES],
            out_at: 0,
            out_len: 0,
            done: false,
            restarts: 0,
        }
    }

    /// Times decoding started again at a restart point.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Reads decoded bytes from offset `at` into `buf`: the bytes read, 0 at the end.
    ///
    /// # Errors
    /// "read error at byte N: reason" when the file cannot be read.
    pub fn read(&mut self, at: u64, buf: &mut [u8]) -> Result<usize, String> {
        loop {
            let end = self.out_at + self.out_len as u64;
            if at >= self.out_at && at < end {
                let from = (at - self.out_at) as usize;
                let n = buf.len().min(self.out_len - from);
                buf[..n].copy_from_slice(&self.out[from..from + n]);
                return Ok(n);
            }
            let ahead = self
                .index
                .as_ref()
                .and_then(|i| i.before(at))
                .is_some_and(|(p, _)| p.out_offset > end);
            if at < self.out_at || ahead {
                self.restart_before(at)?;
                continue;
            }
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
    }

    /// Starts decoding again at the restart point before `at`, or at the start.
    fn restart_before(&mut self, at: u64) -> Result<(), String> {
        let point = self.index.as_ref().and_then(|i| i.before(at));
        let resumed = match point {
            Some((p, history)) => {
                let mut byte = [0u8];
                if p.bits > 0 {
                    read_at(&self.file, &mut byte, p.in_offset - 1)?;
                }
                GzDecoder::resume(ZlibRsInflate::new(), p, byte[0], history)
                    .map(|d| (d, p.in_offset, p.out_offset))
            }
            None => None,
        };
        let (dec, in_offset, out_offset) =
            resumed.unwrap_or_else(|| (GzDecoder::with_inflater(ZlibRsInflate::new()), 0, 0));
        if out_offset > 0 {
            self.restarts += 1;
            RESTARTS.fetch_add(1, Ordering::Relaxed);
        }
        self.dec = dec;
        self.file_pos = in_offset;
        self.in_pos = 0;
        self.in_len = 0;
        self.eof = false;
        self.out_at = out_offset;
        self.out_len = 0;
        self.done = false;
        Ok(())
    }

    /// Decodes the next bytes into `out` (replacing what it held).
    fn fill(&mut self) -> Result<(), String> {
        self.out_at += self.out_len as u64;
        self.out_len = 0;
        while self.out_len < self.out.len() && !self.done {
            if self.in_pos == self.in_len && !self.eof {
                let n = read_at(&self.file, &mut self.inbuf, self.file_pos)?;
                self.file_pos += n as u64;
                self.in_pos = 0;
                self.in_len = n;
                self.eof = n == 0;
                continue;
            }
            let input = &self.inbuf[self.in_pos..self.in_len];
            match self.dec.decode(input, &mut self.out[self.out_len..]) {
                Ok((_, nin, nout)) => {
                    self.in_pos += nin;
                    self.out_len += nout;
                    // At the file's end with nothing more flushed out, or past the last member.
                    let drained = self.eof && nout == 0;
                    if drained || self.dec.trailing_garbage_at().is_some() {
                        self.done = true;
                    }
                }
                Err(_) => self.done = true,
            }
        }
        Ok(())
    }
}

/// Reads into `buf` at `offset` until it is full or the file ends: the bytes read.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error at byte {}: {e}", offset + n as u64)),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
