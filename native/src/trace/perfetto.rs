//! `trace --telemetry CSV --perfetto OUT.json[.gz]`: the trace with the recording merged in, for
//! Perfetto UI (docs/join.md). Streaming, in bounded memory: the trace's bytes are copied through
//! unchanged while the join's second pass scans them, and right after the first event the
//! recording is read row by row and written as counter and instant events
//! (`flinch_core::join::perfetto`) on the trace's own `ts` clock. OUT ending in `.gz` is gzip.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::join::perfetto::CounterEvents;
use flinch_core::join::{Alignment, GpuMap};

use crate::input::InputFile;

enum Sink {
    Plain(BufWriter<File>),
    Gz(Box<flate2::write::GzEncoder<BufWriter<File>>>),
}

impl Sink {
    fn out(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gz(w) => w.as_mut(),
        }
    }
}

/// The merged file being written.
pub struct Merger {
    path: PathBuf,
    sink: Sink,
    /// The recording, read again through the input the join read.
    csv: InputFile,
    events: CounterEvents,
    injected: bool,
}

fn io(path: &Path, e: std::io::Error) -> String {
    format!("--perfetto {}: {e}", path.display())
}

impl Merger {
    /// Creates `out` (refusing the trace itself).
    pub fn create(
        out: &Path,
        trace: &Path,
        csv: &InputFile,
        align: Alignment,
        map: GpuMap,
    ) -> Result<Merger, String> {
        if let (Ok(a), Ok(b)) = (out.canonicalize(), trace.canonicalize())
            && a == b
        {
            return Err(format!(
                "--perfetto {}: that is the trace being read",
                out.display()
            ));
        }
        let f = BufWriter::with_capacity(1 << 20, File::create(out).map_err(|e| io(out, e))?);
        let sink = if out.extension().is_some_and(|e| e == "gz") {
            Sink::Gz(Box::new(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::new(6),
            )))
        } else {
            Sink::Plain(f)
        };
        Ok(Merger {
            path: out.to_path_buf(),
            sink,
            csv: csv.clone(),
            events: CounterEvents::new(align, map),
            injected: false,
        })
    }

    /// Copies trace bytes through.
    pub fn copy(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.sink
            .out()
            .write_all(bytes)
            .map_err(|e| io(&self.path, e))
    }

    /// After the first event: the recording's events (once).
    pub fn inject(&mut self) -> Result<(), String> {
        if self.injected {
            return Ok(());
        }
        self.injected = true;
        let pre = self.events.preamble().to_owned();
        self.copy(pre.as_bytes())?;
        let mut input = self.csv.read().map_err(|e| format!("--telemetry: {e}"))?;
        let mut reader = TraceCsvReader::new();
        loop {
            let chunk = match input.next_chunk() {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(format!("{}: {e}", self.csv.path().display())),
            };
            let mut rest = chunk;
            // An empty slice means the end of the data to the reader: only at the end.
            while !rest.is_empty() {
                let (ev, n) = reader.read(rest);
                rest = &rest[n..];
                self.on_csv(ev, &reader)?;
            }
        }
        loop {
            let (ev, _) = reader.read(&[]);
            self.on_csv(ev, &reader)?;
            if ev == CsvEvent::End {
                break;
            }
        }
        Ok(())
    }

    fn on_csv(&mut self, ev: CsvEvent, reader: &TraceCsvReader) -> Result<(), String> {
        if ev == CsvEvent::Row {
            let text = self.events.row(&reader.row());
            self.sink
                .out()
                .write_all(text.as_bytes())
                .map_err(|e| io(&self.path, e))?;
        }
        Ok(())
    }

    /// Flushes; an error when the trace had no event to merge after.
    pub fn finish(self) -> Result<u64, String> {
        let path = self.path.clone();
        if !self.injected {
            let _ = std::fs::remove_file(&path);
            return Err(format!(
                "--perfetto {}: the trace has no event to merge the recording after",
                path.display()
            ));
        }
        match self.sink {
            Sink::Plain(mut w) => w.flush().map_err(|e| io(&path, e))?,
            Sink::Gz(w) => {
                w.finish()
                    .and_then(|mut f| f.flush())
                    .map_err(|e| io(&path, e))?;
            }
        }
        Ok(self.events.events)
    }
}
