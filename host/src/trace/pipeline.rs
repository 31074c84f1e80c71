//! The two-stage route of a trace's first read: the core scanner on a thread of its own, the
//! trace job (`flinch_core::trace_job::TraceJob`: the summary, and the join's first pass) on the
//! caller's thread.
//!
//! Reading (or inflating) already runs on the input's reader thread (`crate::input`). Scanning
//! and summarizing are the two other stages: the scanner takes about three quarters of the CPU
//! time and the summary the rest, so one thread running both would be the bottleneck
//! (BENCHMARKS.md, "Trace engine"). Here the scan thread copies each event into a batch
//! ([`EventBatch`]) and hands batches to the job through a bounded ring of recycled batches
//! ([`RING_BATCHES`]): no allocation per event, and memory fixed at about
//! `RING_BATCHES × (BATCH_EVENTS × 100 + BATCH_TEXT_BYTES + 2 × max_string_bytes)` bytes
//! (~1.4 MiB).
//!
//! The result is the one the job gives for the same bytes written to it on one thread
//! ([`first_read_sequential`]: same scanner, same summary, same events in the same order, the
//! same error texts and cut-gzip warning); the tests below check that on generated traces,
//! errors and cut files, and `native/tests/trace_cli.rs` checks the real traces against their
//! golden files.
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flinch_core::Limits;
use flinch_core::analyzer::AnalyzeError;
use flinch_core::job::Job;
use flinch_core::join::Resume;
use flinch_core::json::{EventScanner, Scan, ScanEnd, ScanError, ScanWarnings};
use flinch_core::trace_job::{EventBatch, TraceJob};

use crate::input::{Input, InputError};

/// Batches in the ring between the scan thread and the summary.
pub const RING_BATCHES: usize = 4;

/// What the scan thread sends.
enum Msg {
    Events(EventBatch),
    /// The input ended: the scanner's end state, where the gzip stream was cut if it was, the
    /// input's warning (trailing gzip garbage ignored), and `baseTimeNanoseconds` as the scanner
    /// read it.
    End(
        ScanEnd,
        ScanWarnings,
        Option<flinch_core::gzip::GzError>,
        Option<String>,
        flinch_core::json::BaseTime,
    ),
    /// The input or the scan failed: the message the caller prints.
    Fail(String),
}

/// The first read of `job`'s trace from `input`: scanned on a thread of its own, the batches
/// given to the job on this one; `progress` is called after each batch.
///
/// # Errors
/// A read or gzip error, or malformed JSON outside events: one line naming the byte offset, as
/// the core words it.
pub fn first_read(
    input: Input,
    job: &mut TraceJob,
    mut progress: impl FnMut(),
) -> Result<(), String> {
    let limits = job.options().limits;
    let join = job.reads_first_pass();
    let (tx, rx) = sync_channel::<Msg>(RING_BATCHES);
    let (free_tx, free_rx) = sync_channel::<EventBatch>(RING_BATCHES);
    for _ in 0..RING_BATCHES {
        free_tx
            .send(EventBatch::new(limits.max_string_bytes, join))
            .expect("the receiver is alive");
    }
    let scan = thread::Builder::new()
        .name("flinch-scan".into())
        .spawn(move || scan_thread(input, limits, &tx, &free_rx))
        .map_err(|e| format!("cannot start the scan thread: {e}"))?;
    let outcome = loop {
        match rx.recv() {
            Ok(Msg::Events(mut batch)) => {
                let added = job.add_batch(&mut batch);
                batch.clear();
                // Never blocks: the ring holds every batch there is.
                let _ = free_tx.try_send(batch);
                if let Err(e) = added {
                    break Err(e.to_string());
                }
                progress();
            }
            Ok(Msg::End(end, warnings, cut, note, base)) => {
                break Ok((end, warnings, cut, note, base));
            }
            Ok(Msg::Fail(message)) => break Err(message),
            Err(_) => break Err("the trace scan thread stopped unexpectedly".to_string()),
        }
    };
    // The scan thread has sent its last message (or gone); dropping `rx` frees it if blocked.
    drop(rx);
    let _ = scan.join();
    let (end, warnings, cut, note, base) = outcome?;
    if let Some(e) = cut {
        job.note_cut_gzip(e);
    }
    if let Some(note) = note {
        job.note_gzip_warning(&note);
    }
    job.end_scanned(&end, &warnings, base)
        .map_err(|e| e.to_string())
}

/// The one-thread alternative to [`first_read`]: the input's bytes written to the job on this
/// thread, after the input's reader thread. The driver uses it for gzip input on a machine of
/// two cores or fewer, where inflating already takes most of the second core: a third busy
/// thread then only adds hand-over costs (BENCHMARKS.md, "Trace engine"). The same result, byte
/// for byte.
///
/// # Errors
/// As [`first_read`].
pub fn first_read_sequential(
    mut input: Input,
    job: &mut TraceJob,
    mut progress: impl FnMut(),
) -> Result<(), String> {
    job.decoded(input.is_gzip());
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => {
                job.write(chunk).map_err(|e| e.to_string())?;
                progress();
            }
            Ok(None) => {
                if let Some(w) = input.warning() {
                    job.note_gzip_warning(w);
                }
                break;
            }
            // A cut .gz: summarize what was decoded before the cut.
            Err(InputError { cut: Some(cut), .. }) => {
                job.note_cut_gzip(cut);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    job.end().map_err(|e| e.to_string())
}

/// The scan thread: chunks from the input, events into batches, batches to the summary.
fn scan_thread(
    mut input: Input,
    limits: Limits,
    tx: &SyncSender<Msg>,
    free: &Receiver<EventBatch>,
) {
    let decompressed = input.is_gzip();
    let mut scanner = EventScanner::new(limits);
    let Ok(mut batch) = free.recv() else {
        return;
    };
    // The end of the event before, where a scanner can start again (`EventBatch::mark`).
    let mut after = Resume::Start;
    let cut = loop {
        let chunk = match input.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break None,
            Err(InputError { cut: Some(cut), .. }) => break Some(cut),
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
                    let end = scanner.bytes_consumed();
                    batch.mark(after, end);
                    after = Resume::AfterEvent(end);
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
    if !batch.is_empty() && tx.send(Msg::Events(batch)).is_err() {
        return;
    }
    let end = scanner.finish();
    let note = input.warning().map(str::to_string);
    let base = scanner.base_time();
    let _ = tx.send(Msg::End(end, *scanner.warnings(), cut, note, base));
}

/// The analyzer's wording of a scan error.
pub(crate) fn scan_error(error: ScanError, decompressed: bool) -> String {
    AnalyzeError::Scan {
        error,
        decompressed,
    }
    .to_string()
}

#[cfg(test)]
mod tests;
