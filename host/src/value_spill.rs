//! The temporary file that keeps `summarize`'s statistics exact past the memory budget: each
//! series past its share writes its values as a sorted run here, read back once at the end
//! (`flinch_core::telemetry::values`).
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use flinch_core::telemetry::ValueSpill;

use crate::input::spool::unnamed_temp_file;

/// Bytes of one value in the file (an `f64`, little-endian).
const VALUE_BYTES: usize = 8;

/// Runs of values in an unnamed temporary file, created at the first run (most runs folders
/// never need one) in `std::env::temp_dir()` and removed at once (on Unix the open file stays
/// usable and its space is freed when it closes, even after a crash).
#[derive(Default)]
pub struct FileValueSpill {
    file: Option<File>,
    /// Values written so far (the next run's handle is its first value's position).
    len: u64,
    buf: Vec<u8>,
}

impl FileValueSpill {
    fn file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            self.file = unnamed_temp_file("values").ok();
        }
        self.file.as_ref()
    }
}

impl ValueSpill for FileValueSpill {
    fn write_run(&mut self, values: &[f64]) -> Option<u64> {
        let handle = self.len;
        let mut buf = std::mem::take(&mut self.buf);
        let written = (|| {
            let mut file = self.file()?;
            for chunk in values.chunks(4096) {
                buf.clear();
                for v in chunk {
                    buf.extend_from_slice(&v.to_le_bytes());
                }
                file.write_all(&buf).ok()?;
            }
            Some(())
        })();
        self.buf = buf;
        written?;
        self.len += values.len() as u64;
        Some(handle)
    }

    fn read_run(&mut self, handle: u64, at: u64, out: &mut [f64]) -> Option<usize> {
        let end = self.len;
        let from = handle.checked_add(at)?;
        let n = (out.len() as u64).min(end.saturating_sub(from)) as usize;
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(n * VALUE_BYTES, 0);
        let read = self
            .file
            .as_ref()?
            .read_exact_at(&mut buf, from * VALUE_BYTES as u64);
        let ok = read.is_ok();
        if ok {
            for (o, b) in out.iter_mut().zip(buf.chunks_exact(VALUE_BYTES)) {
                *o = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            }
        }
        self.buf = buf;
        ok.then_some(n)
    }
}
