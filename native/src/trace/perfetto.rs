//! `trace --telemetry CSV --perfetto OUT.json[.gz]`: the trace with the recording merged in, for
//! Perfetto UI (docs/join.md). Streaming, in bounded memory: the trace's bytes are copied through
//! unchanged while the join's second pass scans them, and right after the first event the
//! recording is read row by row and written as counter and instant events
//! (`flinch_core::join::perfetto`) on the trace's own `ts` clock. OUT ending in `.gz` is gzip.
//! OUT is written through `crate::output`: never one of the inputs, never left cut.
//!
//! The bytes after the last whole event are held back (up to [`HOLD_BYTES`]) until the next
//! event completes or the trace ends, so that a cut trace still gives valid JSON: the held
//! bytes are dropped, a note event says what was cut, and the events array (and object) are
//! closed.
use std::io::{BufWriter, Write};
use std::path::Path;

use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::join::perfetto::CounterEvents;
use flinch_core::join::{Alignment, GpuMap};
use flinch_core::json::ScanEnd;

use crate::input::InputFile;
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

/// Trace bytes held back after the last whole event: past this (a cut inside an event or a
/// tail this long) the merged file of a cut trace cannot be closed, which is an error.
pub const HOLD_BYTES: usize = 16 << 20;

/// The merged file being written.
pub struct Merger {
    name: OutputName,
    sink: Sink,
    /// The recording, read again through the input the join read.
    csv: InputFile,
    events: CounterEvents,
    injected: bool,
    held: Vec<u8>,
    held_over: bool,
    cut: Option<Cut>,
}

/// How the trace ended when it was cut.
struct Cut {
    bare: bool,
    note: String,
}

/// What the merge did, for the report's warnings.
pub struct Merged {
    /// Events added.
    pub events: u64,
    /// What the reader should know (rows skipped, the trace cut).
    pub warnings: Vec<String>,
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
        csv: &InputFile,
        align: Alignment,
        map: GpuMap,
    ) -> Result<Merger, String> {
        let target = check(out, trace, csv.path())?;
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
            csv: csv.clone(),
            events: CounterEvents::new(align, map),
            injected: false,
            held: Vec::new(),
            held_over: false,
            cut: None,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.sink
            .out()
            .write_all(bytes)
            .map_err(|e| self.name.write_error(&e))
    }

    /// Copies trace bytes through (held until the event they belong to is whole).
    pub fn copy(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.held.len() + bytes.len() > HOLD_BYTES {
            let held = std::mem::take(&mut self.held);
            self.write(&held)?;
            self.held = held;
            self.held.clear();
            self.held_over = true;
            return self.write(bytes);
        }
        self.held.extend_from_slice(bytes);
        Ok(())
    }

    /// An event is whole: the bytes up to its end go out.
    pub fn event_end(&mut self) -> Result<(), String> {
        let held = std::mem::take(&mut self.held);
        self.write(&held)?;
        self.held = held;
        self.held.clear();
        self.held_over = false;
        Ok(())
    }

    /// The trace's scan ended as `end`; `cut` is the input's error when it was cut (a `.gz`).
    pub fn trace_end(&mut self, end: &ScanEnd, cut: Option<String>) {
        if end.complete && cut.is_none() {
            return;
        }
        let what = if let Some(e) = cut {
            e
        } else if end.cut_event {
            "the input ended inside an event".to_string()
        } else {
            "the input ended before the closing `]`/`}`".to_string()
        };
        self.cut = Some(Cut {
            bare: end.bare_array,
            note: format!(
                "truncated: {what}; the merged file ends after the last whole event ({} events read)",
                end.events
            ),
        });
    }

    /// After the first event: the recording's events (once).
    pub fn inject(&mut self) -> Result<(), String> {
        if self.injected {
            return Ok(());
        }
        self.injected = true;
        // Everything held so far belongs to the first event, which is whole.
        self.event_end()?;
        let pre = self.events.preamble().to_owned();
        self.write(pre.as_bytes())?;
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
        let rest = self.events.finish().to_owned();
        self.write(rest.as_bytes())
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
    /// after, or was cut where the file cannot be closed (then, as on every error, no file is
    /// left: the temporary one is removed on drop).
    pub fn finish(mut self) -> Result<Merged, String> {
        if !self.injected {
            return Err(format!(
                "--perfetto {}: the trace has no event to merge the recording after",
                self.name.shown().display()
            ));
        }
        let mut warnings = Vec::new();
        let e = &self.events;
        if e.rows_out_of_range > 0 {
            warnings.push(format!(
                "--perfetto: {} recording rows fall outside the trace's clock (ts in i64 ns) and were left out",
                e.rows_out_of_range
            ));
        }
        if e.rows_without_wall > 0 {
            warnings.push(format!(
                "--perfetto: {} recording rows without t_wall_ns were left out",
                e.rows_without_wall
            ));
        }
        if e.marks_unplaced > 0 {
            warnings.push(format!(
                "--perfetto: {} marks written as instants: unpaired past the open-range cap, ending before they start, or without a free lane",
                e.marks_unplaced
            ));
        }
        match self.cut.take() {
            Some(cut) => {
                if self.held_over {
                    return Err(format!(
                        "--perfetto {}: {}, and more than {} MiB after the last whole event: the merged file cannot be closed",
                        self.name.shown().display(),
                        cut.note,
                        HOLD_BYTES >> 20
                    ));
                }
                // The cut event (or tail) is dropped; the note goes in as an event.
                let mut tail = format!(
                    ",\n{{\"ph\":\"M\",\"name\":\"flinch_trace_truncated\",\"pid\":0,\"tid\":0,\"cat\":\"flinch_telemetry\",\"args\":{{\"truncated\":true,\"note\":{}}}}}\n]",
                    serde_json::Value::from(cut.note.as_str())
                );
                if !cut.bare {
                    tail.push('}');
                }
                tail.push('\n');
                self.write(tail.as_bytes())?;
                self.events.events += 1;
                warnings.push(format!(
                    "--perfetto {}: {}",
                    self.name.shown().display(),
                    cut.note
                ));
            }
            None => {
                let held = std::mem::take(&mut self.held);
                self.write(&held)?;
            }
        }
        let name = self.name;
        let buffered = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gz(w) => w.finish().map_err(|e| name.write_error(&e))?,
        };
        let file = buffered
            .into_inner()
            .map_err(|e| name.write_error(e.error()))?;
        file.commit()?;
        Ok(Merged {
            events: self.events.events,
            warnings,
        })
    }
}
