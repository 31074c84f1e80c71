//! What keeps `trace` exact past its memory limits: a temporary file for the busy intervals
//! the summary retires ([`FileSpill`]) and a second read of the input for the listed ops'
//! percentiles ([`FileReplay`]). See `flinch_core::summary::{IntervalSpill, EventReplay}` and
//! docs/trace-exactness.md.
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use flinch_core::Limits;
use flinch_core::intervals::Interval;
use flinch_core::json::{Event, EventScanner, Scan};
use flinch_core::summary::{EventReplay, IntervalSpill, ReplayError};
use flinch_core::trace_job::TraceJob;

use crate::input::InputFile;
use crate::input::spool::unnamed_temp_file;

/// Bytes of one interval in the file: start and end, little-endian `i64`.
const INTERVAL_BYTES: usize = 16;
/// Intervals encoded per write or read.
const CHUNK_INTERVALS: usize = 4096;

/// Sorted runs of retired busy intervals in an unnamed temporary file, created at the first
/// run (most traces never need one) in `std::env::temp_dir()` and removed at once (on Unix the
/// open file stays usable and the space is freed when it closes, even after a crash).
pub struct FileSpill {
    file: Option<File>,
    /// Intervals written so far (the next run's handle).
    len: u64,
    buf: Vec<u8>,
}

impl FileSpill {
    /// No file yet.
    pub fn new() -> FileSpill {
        FileSpill {
            file: None,
            len: 0,
            buf: Vec::new(),
        }
    }

    fn file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            self.file = unnamed_temp_file("intervals").ok();
        }
        self.file.as_ref()
    }
}

impl Default for FileSpill {
    fn default() -> Self {
        FileSpill::new()
    }
}

impl IntervalSpill for FileSpill {
    fn write_run(&mut self, run: &[Interval]) -> Option<u64> {
        let handle = self.len;
        let mut buf = std::mem::take(&mut self.buf);
        let result = (|| {
            let mut file = self.file()?;
            for chunk in run.chunks(CHUNK_INTERVALS) {
                buf.clear();
                for iv in chunk {
                    buf.extend_from_slice(&iv.start_ns.to_le_bytes());
                    buf.extend_from_slice(&iv.end_ns.to_le_bytes());
                }
                file.write_all(&buf).ok()?;
            }
            Some(())
        })();
        self.buf = buf;
        result?;
        self.len += run.len() as u64;
        Some(handle)
    }

    fn read_run(&mut self, handle: u64, at: u64, out: &mut [Interval]) -> bool {
        let Some(file) = self.file.as_ref() else {
            return out.is_empty();
        };
        let mut offset = (handle + at) * INTERVAL_BYTES as u64;
        for chunk in out.chunks_mut(CHUNK_INTERVALS) {
            self.buf.resize(chunk.len() * INTERVAL_BYTES, 0);
            if file.read_exact_at(&mut self.buf, offset).is_err() {
                return false;
            }
            for (iv, b) in chunk.iter_mut().zip(self.buf.chunks_exact(INTERVAL_BYTES)) {
                let word = |i: usize| i64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
                *iv = Interval {
                    start_ns: word(0),
                    end_ns: word(8),
                };
            }
            offset += self.buf.len() as u64;
        }
        true
    }
}

/// Reads the trace again from its start (through the handle the first pass read, or the spool
/// of a stream; gzip detected again), on the calling thread, scanned with the same limits: the
/// events the first pass saw, in order.
pub struct FileReplay {
    input: InputFile,
    limits: Limits,
}

impl FileReplay {
    /// A replay of `input`, scanned with `limits`.
    pub fn new(input: &InputFile, limits: Limits) -> FileReplay {
        FileReplay {
            input: input.clone(),
            limits,
        }
    }
}

impl EventReplay for FileReplay {
    fn replay(&mut self, sink: &mut dyn FnMut(&Event<'_>)) -> Result<u64, ReplayError> {
        let mut input = self.input.read()?;
        let mut scanner = EventScanner::new(self.limits);
        loop {
            let chunk = match input.next_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                // A cut .gz: the first pass stopped at the same place.
                Err(e) if e.cut.is_some() => break,
                Err(e) => return Err(e.message.into()),
            };
            let mut pos = 0;
            while let (Scan::Event, nin) = scanner.scan(&chunk[pos..])? {
                pos += nin;
                sink(&scanner.event());
            }
        }
        Ok(scanner.finish().events)
    }
}

/// Gives `job`'s summary the temporary file and the replay of `input`, and its steps (when
/// asked for) a temporary file of their own.
pub fn equip(job: &mut TraceJob, input: &InputFile) {
    let limits = job.options().limits;
    job.set_trace_io(
        Box::new(FileSpill::new()),
        Box::new(FileReplay::new(input, limits)),
    );
    if job.options().steps.is_some() {
        job.set_steps_spill(Box::new(FileSpill::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_back_as_written() {
        let mut spill = FileSpill::new();
        let run = |k: i64, n: i64| -> Vec<Interval> {
            (0..n)
                .map(|i| Interval {
                    start_ns: k * 1_000_000 + i * 10 - 5,
                    end_ns: k * 1_000_000 + i * 10 + 3,
                })
                .collect()
        };
        let a = run(1, 10_000);
        let b = run(-7, 3);
        let ha = spill.write_run(&a).unwrap();
        let hb = spill.write_run(&b).unwrap();
        assert_eq!((ha, hb), (0, 10_000));
        let mut got = vec![Interval::default(); 9_000];
        assert!(spill.read_run(ha, 1_000, &mut got));
        assert_eq!(got, a[1_000..]);
        let mut got = vec![Interval::default(); 3];
        assert!(spill.read_run(hb, 0, &mut got));
        assert_eq!(got, b);
        // Past the end of the file.
        let mut got = vec![Interval::default(); 4];
        assert!(!spill.read_run(hb, 0, &mut got));
    }
}
