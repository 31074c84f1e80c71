//! `trace --telemetry CSV --perfetto OUT.json[.gz]`: the trace with the recording merged in, for
//! Perfetto UI (docs/join.md). Streaming, in bounded memory: the trace's bytes are copied through
//! unchanged while the join's second pass scans them, and right after the first event the
//! recording is read row by row and written as counter and instant events
//! (`flinch_core::join::perfetto`) on the trace's own `ts` clock. OUT ending in `.gz` is gzip.
//! OUT is written through `crate::output`: never one of the inputs, never left cut.
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::join::perfetto::CounterEvents;
use flinch_core::join::{Alignment, GpuMap};

use crate::input::open_input;
use crate::output::{OutputFile, OutputName, Target};

enum Sink {
    Plain(BufWriter<OutputFile>),
    Gz(Box<flate2::write::GzEncoder<BufWriter<OutputFile>>>),
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
    name: OutputName,
    sink: Sink,
    csv: PathBuf,
    events: CounterEvents,
    injected: bool,
}

/// Checks `out` as the merged file of `trace` and the recording `csv`: a path an output may
/// take (`crate::output`), and none of the inputs (the trace, the recording, its sidecar), by
/// device and inode. `trace` runs it before any work starts; [`Merger::create`] again.
pub fn check(out: &Path, trace: &Path, csv: &Path) -> Result<Target, String> {
    let target = Target::resolve("--perfetto", out)?;
    target.refuse_input("the trace being read", trace)?;
    target.refuse_input("the --telemetry input", csv)?;
    target.refuse_input(
        "the --telemetry recording's sidecar",
        &crate::record::sidecar::path_for(csv),
    )?;
    Ok(target)
}

impl Merger {
    /// Starts writing `out` (checked by [`check`]).
    pub fn create(
        out: &Path,
        trace: &Path,
        csv: &Path,
        align: Alignment,
        map: GpuMap,
    ) -> Result<Merger, String> {
        let target = check(out, trace, csv)?;
        let name = target.name().clone();
        let f = BufWriter::with_capacity(1 << 20, target.create()?);
        let sink = if out.extension().is_some_and(|e| e == "gz") {
            Sink::Gz(Box::new(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::new(6),
            )))
        } else {
            Sink::Plain(f)
        };
        Ok(Merger {
            name,
            sink,
            csv: csv.to_path_buf(),
            events: CounterEvents::new(align, map),
            injected: false,
        })
    }

    /// Copies trace bytes through.
    pub fn copy(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.sink
            .out()
            .write_all(bytes)
            .map_err(|e| self.name.write_error(&e))
    }

    /// After the first event: the recording's events (once).
    pub fn inject(&mut self) -> Result<(), String> {
        if self.injected {
            return Ok(());
        }
        self.injected = true;
        let pre = self.events.preamble().to_owned();
        self.copy(pre.as_bytes())?;
        let mut input = open_input(&self.csv).map_err(|e| format!("--telemetry: {e}"))?;
        let mut reader = TraceCsvReader::new();
        loop {
            let chunk = match input.next_chunk() {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(format!("{}: {e}", self.csv.display())),
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
                .map_err(|e| self.name.write_error(&e))?;
        }
        Ok(())
    }

    /// Flushes and puts the file in place; an error when the trace had no event to merge
    /// after (then, as on every error, no file is left: the temporary one is removed on drop).
    pub fn finish(self) -> Result<u64, String> {
        let name = self.name;
        if !self.injected {
            return Err(format!(
                "--perfetto {}: the trace has no event to merge the recording after",
                name.shown().display()
            ));
        }
        let buffered = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gz(w) => w.finish().map_err(|e| name.write_error(&e))?,
        };
        let file = buffered
            .into_inner()
            .map_err(|e| name.write_error(e.error()))?;
        file.commit()?;
        Ok(self.events.events)
    }
}
