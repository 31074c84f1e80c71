//! The two-stage trace pipeline of `flinch-trace trace`: the core scanner on a thread of its own,
//! the core summary on the caller's thread.
//!
//! Reading (or inflating) already runs on the input's reader thread (`crate::input`). Scanning
//! and summarizing are the two other stages: on the ~1 GB benchmark trace the scanner takes about
//! three quarters of the CPU time and the summary the rest, so running them one after the other
//! on one thread made the scan thread the bottleneck (BENCHMARKS.md, "Trace engine"). Here the
//! scan thread copies each event into a compact record ([`Rec`]: its fields, and its `ph`, `cat`
//! and `name` bytes in the batch's text arena) and hands batches of them to the summary through a
//! bounded ring of recycled batches ([`RING_BATCHES`]): no allocation per event, and memory fixed
//! at about `RING_BATCHES × (BATCH_EVENTS × 144 + BATCH_TEXT_BYTES + 2 × max_string_bytes)`
//! bytes (~3 MiB).
//!
//! The result is the one `flinch_core::analyzer::Analyzer` gives for the same bytes (same scanner,
//! same summary, same events in the same order, the same error texts and cut-gzip warning); the
//! tests below check that on generated traces, errors and cut files, and
//! `native/tests/trace_cli.rs` checks the real traces against their golden files.
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flinch_core::Limits;
use flinch_core::analyzer::{
    Analysis, AnalyzeError, Analyzer, AnalyzerOptions, Kind, LimitsPreset,
};
use flinch_core::json::{
    Event, EventScanner, IdField, NumField, Scan, ScanEnd, ScanError, ScanWarnings,
};
use flinch_core::summary::{DEFAULT_TOP_OPS, TraceSummary, TraceSummaryResult};

use crate::input::{Input, InputError};

/// Events per batch at most.
pub const BATCH_EVENTS: usize = 2048;
/// A batch is handed over once its text arena holds this many bytes.
pub const BATCH_TEXT_BYTES: usize = 128 << 10;
/// Batches in the ring between the scan thread and the summary.
pub const RING_BATCHES: usize = 4;

/// A string of a record: `start..start + len` in the batch's text; `len == u32::MAX` for `None`.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u32,
}

const NONE: Span = Span {
    start: 0,
    len: u32::MAX,
};

/// One event, its strings in the batch's text arena.
#[derive(Clone, Copy, Debug)]
struct Rec {
    ph: Span,
    cat: Span,
    name: Span,
    ts_ns: NumField,
    dur_ns: NumField,
    pid: IdField,
    tid: IdField,
    id: IdField,
    scope: IdField,
}

/// A batch of scanned events, recycled through the ring.
pub(super) struct Batch {
    recs: Vec<Rec>,
    text: Vec<u8>,
}

impl Batch {
    /// Capacity for [`BATCH_EVENTS`] records and for a full text arena plus one more event's
    /// strings (each at most `max_string_bytes`; `ph` at most 8 bytes), so pushes never grow it.
    pub(super) fn new(max_string_bytes: usize) -> Batch {
        Batch {
            recs: Vec::with_capacity(BATCH_EVENTS),
            text: Vec::with_capacity(BATCH_TEXT_BYTES + 2 * max_string_bytes + 64),
        }
    }

    pub(super) fn full(&self) -> bool {
        self.recs.len() >= BATCH_EVENTS || self.text.len() >= BATCH_TEXT_BYTES
    }

    fn span(&mut self, s: Option<&[u8]>) -> Span {
        match s {
            None => NONE,
            Some(s) => {
                let start = self.text.len() as u32;
                self.text.extend_from_slice(s);
                Span {
                    start,
                    len: s.len() as u32,
                }
            }
        }
    }

    pub(super) fn push(&mut self, e: &Event<'_>) {
        let ph = self.span(Some(e.ph));
        let cat = self.span(e.cat);
        let name = self.span(e.name);
        self.recs.push(Rec {
            ph,
            cat,
            name,
            ts_ns: e.ts_ns,
            dur_ns: e.dur_ns,
            pid: e.pid,
            tid: e.tid,
            id: e.id,
            scope: e.scope,
        });
    }

    fn str(&self, s: Span) -> Option<&[u8]> {
        (s.len != u32::MAX).then(|| &self.text[s.start as usize..(s.start + s.len) as usize])
    }

    fn event(&self, r: &Rec) -> Event<'_> {
        Event {
            ph: self.str(r.ph).unwrap_or_default(),
            cat: self.str(r.cat),
            name: self.str(r.name),
            ts_ns: r.ts_ns,
            dur_ns: r.dur_ns,
            pid: r.pid,
            tid: r.tid,
            id: r.id,
            scope: r.scope,
        }
    }

    /// Adds every event of the batch to `summary`, in order.
    pub(super) fn add_to(&self, summary: &mut TraceSummary) {
        for r in &self.recs {
            summary.add(&self.event(r));
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.recs.clear();
        self.text.clear();
    }
}

/// What the scan thread sends.
enum Msg {
    Events(Batch),
    /// The input ended: the scanner's end state, and the cut-gzip message if the stream was cut.
    End(ScanEnd, ScanWarnings, Option<String>),
    /// The input or the scan failed: the message the caller prints.
    Fail(String),
}

/// Summarizes the trace read from `input` (scan thread plus this thread); `progress` is called
/// after each batch. Returns the result, or the error message for the file.
///
/// # Errors
/// A read or gzip error, or malformed JSON outside events: one line naming the byte offset, as
/// the core analyzer words it.
pub fn summarize(
    input: Input,
    source: &str,
    limits: Limits,
    top: Option<usize>,
    mut progress: impl FnMut(),
) -> Result<TraceSummaryResult, String> {
    let (tx, rx) = sync_channel::<Msg>(RING_BATCHES);
    let (free_tx, free_rx) = sync_channel::<Batch>(RING_BATCHES);
    for _ in 0..RING_BATCHES {
        free_tx
            .send(Batch::new(limits.max_string_bytes))
            .expect("the receiver is alive");
    }
    let scan = thread::Builder::new()
        .name("flinch-scan".into())
        .spawn(move || scan_thread(input, limits, &tx, &free_rx))
        .map_err(|e| format!("cannot start the scan thread: {e}"))?;
    let mut summary = TraceSummary::new(limits);
    let outcome = loop {
        match rx.recv() {
            Ok(Msg::Events(mut batch)) => {
                batch.add_to(&mut summary);
                batch.clear();
                // Never blocks: the ring holds every batch there is.
                let _ = free_tx.try_send(batch);
                progress();
            }
            Ok(Msg::End(end, warnings, cut)) => break Ok((end, warnings, cut)),
            Ok(Msg::Fail(message)) => break Err(message),
            Err(_) => break Err("the trace scan thread stopped unexpectedly".to_string()),
        }
    };
    // The scan thread has sent its last message (or gone); dropping `rx` frees it if blocked.
    drop(rx);
    let _ = scan.join();
    let (end, warnings, cut) = outcome?;
    let top = top.unwrap_or(DEFAULT_TOP_OPS);
    let mut result = summary.finish(source, &end, &warnings, top);
    if let Some(e) = cut {
        // As flinch_core::analyzer does for a cut .gz.
        result.truncated = true;
        result
            .warnings
            .insert(0, format!("{e}: summarized from what was read"));
    }
    Ok(result)
}

/// The one-thread alternative to [`summarize`]: the core analyzer (scanner and summary) on
/// this thread, after the input's reader thread. `trace` uses it for gzip input on a machine of
/// two cores or fewer, where inflating already takes most of the second core: a third busy
/// thread then only adds hand-over costs (quiet 2-core run on the 1 GB trace's `.gz`: 0.99-1.04 s
/// wall this way, 1.10-1.23 s with the pipeline). The same result, byte for byte.
///
/// # Errors
/// As [`summarize`].
pub fn summarize_sequential(
    mut input: Input,
    source: &str,
    limits: Limits,
    top: Option<usize>,
    mut progress: impl FnMut(),
) -> Result<TraceSummaryResult, String> {
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        limits: if limits == Limits::EXACT {
            LimitsPreset::Exact
        } else if limits == Limits::NATIVE {
            LimitsPreset::Native
        } else {
            LimitsPreset::Bounded
        },
        source: source.to_string(),
        top,
        ..AnalyzerOptions::default()
    };
    let mut analyzer = Analyzer::with_decoded_input(options, input.is_gzip());
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => {
                analyzer.write(chunk).map_err(|e| e.to_string())?;
                progress();
            }
            Ok(None) => break,
            // A cut .gz: summarize what was decoded before the cut.
            Err(e) if e.truncated => {
                analyzer.note_cut_gzip(&e.message);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    match analyzer.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(result) => Ok(*result),
        Analysis::Recording(_) => Err("not a trace".to_string()),
    }
}

/// The scan thread: chunks from the input, events into batches, batches to the summary.
fn scan_thread(mut input: Input, limits: Limits, tx: &SyncSender<Msg>, free: &Receiver<Batch>) {
    let decompressed = input.is_gzip();
    let mut scanner = EventScanner::new(limits);
    let Ok(mut batch) = free.recv() else {
        return;
    };
    let cut = loop {
        let chunk = match input.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break None,
            Err(InputError {
                message,
                truncated: true,
            }) => break Some(message),
            Err(e) => {
                let _ = tx.send(Msg::Fail(e.message));
                return;
            }
        };
        let mut pos = 0;
        loop {
            match scanner.scan(&chunk[pos..]) {
                Ok((Scan::Event, nin)) => {
                    pos += nin;
                    batch.push(&scanner.event());
                    if batch.full() {
                        if tx.send(Msg::Events(batch)).is_err() {
                            return;
                        }
                        let Ok(b) = free.recv() else {
                            return;
                        };
                        batch = b;
                    }
                }
                Ok((Scan::NeedsInput, _)) => break,
                Err(error) => {
                    let _ = tx.send(Msg::Fail(scan_error(error, decompressed)));
                    return;
                }
            }
        }
    };
    if !batch.recs.is_empty() && tx.send(Msg::Events(batch)).is_err() {
        return;
    }
    let end = scanner.finish();
    let _ = tx.send(Msg::End(end, *scanner.warnings(), cut));
}

/// The analyzer's wording of a scan error.
pub(super) fn scan_error(error: ScanError, decompressed: bool) -> String {
    AnalyzeError::Scan {
        error,
        decompressed,
    }
    .to_string()
}

#[cfg(test)]
mod tests;
