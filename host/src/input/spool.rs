//! The copy of an input that cannot be read twice (a FIFO, a pipe, `/dev/stdin` on a pipe, a
//! process substitution, a character device): every byte the first pass reads is also written to
//! an unnamed temporary file, which later passes read instead (docs/robustness.md, "Inputs that
//! are not regular files").
//!
//! The file is created in `std::env::temp_dir()` (`$TMPDIR`, else `/tmp`) and unlinked at once:
//! the open handle stays usable and the space is freed when the process ends, however it ends
//! (a signal, a crash), so nothing is left behind to remove.
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// An unnamed temporary file in `std::env::temp_dir()`, opened for reading and writing:
/// created as `flinch-trace-PID-N.EXT` and unlinked at once.
///
/// # Errors
/// The file cannot be created (the directory is missing or not writable).
pub fn unnamed_temp_file(ext: &str) -> io::Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let mut last = io::Error::other("no name left to try");
    for _ in 0..16 {
        let path: PathBuf = dir.join(format!(
            "flinch-trace-{}-{}.{ext}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => {
                let _ = std::fs::remove_file(&path);
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The temporary copy of one input, written by its first pass and read by the later ones.
pub struct Spool {
    file: Arc<File>,
    /// Bytes written so far.
    len: AtomicU64,
    /// The first pass read the input to where it stops by itself (its end, or a decode error
    /// that a later pass meets at the same byte): the copy holds everything a pass reads.
    complete: AtomicBool,
}

impl Spool {
    /// An empty spool in a fresh unnamed temporary file.
    ///
    /// # Errors
    /// "spooling to a temporary file in DIR failed: reason".
    pub fn create() -> Result<Spool, String> {
        let file = unnamed_temp_file("spool").map_err(|e| failed(None, &e))?;
        Ok(Spool {
            file: Arc::new(file),
            len: AtomicU64::new(0),
            complete: AtomicBool::new(false),
        })
    }

    /// Appends bytes the first pass read.
    ///
    /// # Errors
    /// "spooling to a temporary file in DIR failed at byte N: reason" (a full disk, a file size
    /// limit).
    pub fn write(&self, bytes: &[u8]) -> Result<(), String> {
        let at = self.len.load(Ordering::Relaxed);
        (&*self.file)
            .write_all(bytes)
            .map_err(|e| failed(Some(at), &e))?;
        self.len.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// The first pass stopped by itself: the copy is whole.
    pub fn finish(&self) {
        self.complete.store(true, Ordering::Release);
    }

    /// The copy, once whole: its file (for positioned reads) and length.
    pub fn whole(&self) -> Option<(Arc<File>, u64)> {
        self.complete
            .load(Ordering::Acquire)
            .then(|| (self.file.clone(), self.len.load(Ordering::Relaxed)))
    }
}

fn failed(at: Option<u64>, e: &io::Error) -> String {
    let dir = std::env::temp_dir();
    match at {
        Some(at) => format!(
            "spooling to a temporary file in {} failed at byte {at}: {e}",
            dir.display()
        ),
        None => format!(
            "spooling to a temporary file in {} failed: {e}",
            dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn a_spool_reads_back_what_was_written_once_whole() {
        let s = Spool::create().unwrap();
        s.write(b"hello, ").unwrap();
        assert!(s.whole().is_none(), "not whole before finish");
        s.write(b"world").unwrap();
        s.finish();
        let (file, len) = s.whole().unwrap();
        assert_eq!(len, 12);
        let mut buf = [0u8; 12];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello, world");
    }
}
