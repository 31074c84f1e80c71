//! Plain (uncompressed) traces of [`MIN_FILE_BYTES`] or more: N scan threads (`--threads`,
//! default the available parallelism up to [`MAX_DEFAULT_THREADS`]), thread `w` scanning
//! segments `w`, `w + N`, `w + 2N`, ... of the file, and the trace job (the summary, the join's
//! first pass) on the caller's thread.
//!
//! One scan thread cannot keep up with the disk cache on a plain trace (the scanner runs at
//! ~1 GB/s per core; see BENCHMARKS.md, "Trace engine"), and a JSON document cannot be split
//! blindly: a byte's meaning depends on everything before it. So the file is cut into segments
//! of about [`SEGMENT_BYTES`] (1 MiB), each starting at a *guessed* event boundary (a `{` after
//! `}` `,` and whitespace, preferably with a line break). Segment 0 is scanned from the start of
//! the file as usual; every other segment by a scanner
//! [resumed](flinch_core::json::EventScanner::resume_at) at its guess, on one of two scan
//! threads (segment `k` on thread `k mod N`), reading the file with positioned reads.
//! The caller's thread takes the segments in order and gives the job a segment's events only
//! when the scanner
//! of the segment before it ended exactly at that guess
//! ([`element_boundary`](flinch_core::json::EventScanner::element_boundary)): then the resumed
//! scanner reads what the one sequential scanner would have read, from the same state (the
//! core tests check this for every split of generated documents, damaged ones included).
//! When a guess was wrong (it was inside a string, an `args` object, or before the events
//! array), the caller's thread drops that segment's speculative events and scans the segment itself,
//! continuing the previous segment's scanner, so the result is always the sequential one: the
//! same events in the same order, the same warnings, errors and offsets, byte for byte. When
//! more than a quarter of the guesses fail (past the first four), guessing stops and the caller's
//! thread scans the rest itself, as one thread would, instead of the scan threads wasting CPU time.
//!
//! Memory: per scan thread one 1 MiB read buffer and a ring of event batches (~0.33 MiB each;
//! with the join, 48 KiB more each for its side list): 12 batches with two threads, fewer with
//! more (`ring_batches`: the other threads' segments give each one its slack), so ~5 MiB per
//! thread at 2, ~2.3 MiB at 8 or more; plus one read buffer on the summary side for a wrong
//! guess: ~11 MiB at 2 threads, ~20 MiB at 8, ~38 MiB at 16.
//!
//! Why positioned reads and not a mapping of the file: a read-only mapping (with a SIGBUS
//! handler for a file cut meanwhile) removes the kernel's copy, but the scanner then takes the
//! cache misses the copy takes, and faulting pages in and dropping them again costs more wall
//! and CPU time, with a larger resident size (BENCHMARKS.md, "Trace engine").
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flinch_core::Limits;
use flinch_core::gzip::is_gzip;
use flinch_core::join::Resume;
use flinch_core::json::{ElementBoundary, EventScanner, Scan, ScanWarnings};
use flinch_core::trace_job::{EventBatch, TraceJob};

use super::pipeline::scan_error;
use crate::input::InputFile;

/// Files smaller than this take the one-scan-thread pipeline.
pub const MIN_FILE_BYTES: u64 = 16 << 20;
/// About how many bytes each segment has: one read. Small, so that the scan thread that is a
/// segment ahead of the summary can finish it (and the next) within its ring of batches
/// instead of waiting for the summary to reach it.
pub const SEGMENT_BYTES: u64 = READ_BYTES as u64;
/// Event batches per scan thread with two threads: ~24k events, a segment of events of 40
/// bytes or more.
const RING: usize = 12;
/// The default thread count's cap (memory: see the module docs).
pub const MAX_DEFAULT_THREADS: usize = 16;
/// The most scan threads `--threads` takes.
pub const MAX_THREADS: usize = 64;

/// The scan threads a plan gets: `chosen` (`--threads N`, clamped to 1..=[`MAX_THREADS`]),
/// else the available parallelism up to [`MAX_DEFAULT_THREADS`].
pub fn threads(chosen: Option<usize>) -> usize {
    match chosen {
        Some(n) => n.clamp(1, MAX_THREADS),
        None => thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_DEFAULT_THREADS),
    }
}

/// Event batches per scan thread for `threads` threads: a thread blocks once its ring is full
/// until the summary reaches its segment, which the other threads' segments delay, so more
/// threads need fewer each.
fn ring_batches(threads: usize) -> usize {
    (2 * RING / threads.max(1)).clamp(4, RING)
}
/// Bytes per positioned read (and per scanner call).
const READ_BYTES: usize = 1 << 20;
/// How far past a nominal segment start to look for a guess (none found: no segment starts
/// there).
const PROBE_BYTES: usize = 16 << 10;

/// A plain file cut into segments.
pub struct Plan {
    file: Arc<File>,
    /// Byte offset of each segment's first byte; `starts[0] == 0`.
    starts: Vec<u64>,
    /// The document starts with `[` (bare-array form).
    bare: bool,
    /// The file's size when planned (for progress).
    size: u64,
    /// Scan threads.
    threads: usize,
}

impl Plan {
    /// The file's size in bytes when planned.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The same plan on `n` scan threads (at least 1).
    pub fn with_threads(mut self, n: usize) -> Plan {
        self.threads = n.clamp(1, MAX_THREADS);
        self
    }
}

/// A plan for `input` when it is a plain regular file of [`MIN_FILE_BYTES`] or more, read with
/// positioned reads, and more than one scan thread is to run; `None` otherwise (a FIFO or pipe, gzip, a small file: the caller then
/// uses the one-thread pipeline on the same open input).
pub fn plan(input: &InputFile, threads: usize) -> Option<Plan> {
    if threads < 2 {
        return None;
    }
    plan_input(input, SEGMENT_BYTES, MIN_FILE_BYTES, threads)
}

/// `plan_input` of the file at `path`, opened for the plan alone, on the default threads:
/// segments of `segment_bytes`, for a file of `min_file_bytes` or more (tests cut small files
/// into many segments with it).
pub fn plan_with(path: &Path, segment_bytes: u64, min_file_bytes: u64) -> Option<Plan> {
    let input = InputFile::open(path, crate::input::Passes::One).ok()?;
    plan_input(&input, segment_bytes, min_file_bytes, threads(None))
}

pub(super) fn plan_input(
    input: &InputFile,
    segment_bytes: u64,
    min_file_bytes: u64,
    threads: usize,
) -> Option<Plan> {
    let (file, size) = input.seekable()?;
    if size < min_file_bytes {
        return None;
    }
    let mut head = [0u8; 64];
    let n = read_full_at(&file, &mut head, 0).ok()?;
    if is_gzip(&head[..n]) {
        return None;
    }
    // Skip whitespace and a UTF-8 byte-order mark, as the scanner does.
    let first = head[..n]
        .iter()
        .find(|&&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))?;
    let bare = *first == b'[';
    let mut starts = vec![0u64];
    let mut probe = vec![0u8; PROBE_BYTES];
    let mut nominal = segment_bytes;
    while nominal + segment_bytes / 2 < size {
        let n = read_full_at(&file, &mut probe, nominal).ok()?;
        if let Some(j) = guess_boundary(&probe[..n]) {
            let at = nominal + j as u64;
            if at > *starts.last().unwrap_or(&0) {
                starts.push(at);
            }
        }
        nominal += segment_bytes;
    }
    Some(Plan {
        file,
        starts,
        bare,
        size,
        threads,
    })
}

/// A likely start of an event in the events array: a `{` after `}`, `,` and whitespace; its
/// index in `w`. One whose whitespace holds a line break is preferred (events one per line or
/// pretty-printed, while `},{` inside an `args` value is usually on one line); else the first.
/// Only a guess: the summary checks it.
fn guess_boundary(w: &[u8]) -> Option<usize> {
    let ws = |b: u8| b <= b' ';
    let mut first = None;
    for j in 0..w.len() {
        if w[j] != b'{' {
            continue;
        }
        let mut k = j;
        let mut newline = false;
        while k > 0 && ws(w[k - 1]) {
            newline |= w[k - 1] == b'\n';
            k -= 1;
        }
        if k == 0 || w[k - 1] != b',' {
            continue;
        }
        k -= 1;
        while k > 0 && ws(w[k - 1]) {
            newline |= w[k - 1] == b'\n';
            k -= 1;
        }
        if k > 0 && w[k - 1] == b'}' {
            if newline {
                return Some(j);
            }
            first = first.or(Some(j));
        }
    }
    first
}

/// Reads until `buf` is full or the end of the file; the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What a scan thread sends for each of its segments, in order.
enum Msg {
    Events(EventBatch),
    /// The segment's end: its scanner (to check where it stopped, and to go on with it), or
    /// the message of a read or scan error.
    End(Result<Box<EventScanner>, String>),
}

/// Scans `file` from `start` to `end` (`None`: to the end of the file) with `scanner`, handing
/// each event to `sink`. Stops at a read or scan error, with its message.
fn scan_range(
    file: &File,
    start: u64,
    end: Option<u64>,
    scanner: &mut EventScanner,
    buf: &mut [u8],
    mut sink: impl FnMut(&EventScanner) -> bool,
) -> Result<(), String> {
    let mut at = start;
    loop {
        let want = match end {
            Some(e) if e <= at => return Ok(()),
            Some(e) => buf.len().min((e - at) as usize),
            None => buf.len(),
        };
        let n = read_full_at(file, &mut buf[..want], at)
            .map_err(|e| format!("read error at byte {at}: {e}"))?;
        if n == 0 {
            return match end {
                None => Ok(()),
                Some(_) => Err(format!(
                    "read error at byte {at}: the file got shorter while being read"
                )),
            };
        }
        let chunk = &buf[..n];
        let mut pos = 0;
        loop {
            match scanner.scan(&chunk[pos..]) {
                Ok((Scan::Event, nin)) => {
                    pos += nin;
                    if !sink(scanner) {
                        return Ok(());
                    }
                }
                Ok((Scan::NeedsInput, _)) => break,
                Err(e) => return Err(scan_error(e, false)),
            }
        }
        at += n as u64;
    }
}

/// One scan thread: segments `first`, `first + N`, ... of the plan.
fn scan_thread(
    plan: &Plan,
    limits: Limits,
    first: usize,
    speculate: &AtomicBool,
    tx: &SyncSender<Msg>,
    free: &Receiver<EventBatch>,
) {
    let mut buf = vec![0u8; READ_BYTES];
    let mut batch: Option<EventBatch> = None;
    let m = plan.starts.len();
    for k in (first..m).step_by(plan.threads) {
        let start = plan.starts[k];
        let end = plan.starts.get(k + 1).copied();
        if k > 0 && !speculate.load(Ordering::Relaxed) {
            // The summary scans on by itself: say so without reading.
            if tx.send(Msg::End(Err(String::new()))).is_err() {
                return;
            }
            continue;
        }
        let mut scanner = Box::new(if k == 0 {
            EventScanner::new(limits)
        } else {
            EventScanner::resume_at(
                limits,
                ElementBoundary {
                    offset: start,
                    bare: plan.bare,
                },
            )
        });
        if batch.is_none() {
            match free.recv() {
                Ok(b) => batch = Some(b),
                Err(_) => return,
            }
        }
        let mut gone = false;
        // Where a scanner can start again before the next event (`EventBatch::mark`).
        let mut after = if k == 0 {
            Resume::Start
        } else {
            Resume::Boundary(start)
        };
        let result = scan_range(&plan.file, start, end, &mut scanner, &mut buf, |sc| {
            let Some(b) = batch.as_mut() else {
                return false;
            };
            b.push(&sc.event());
            let end = sc.bytes_consumed();
            b.mark(after, end);
            after = Resume::AfterEvent(end);
            if b.full() {
                let full = batch.take();
                if full.is_some_and(|f| tx.send(Msg::Events(f)).is_err()) {
                    gone = true;
                    return false;
                }
                match free.recv() {
                    Ok(b) => batch = Some(b),
                    Err(_) => {
                        gone = true;
                        return false;
                    }
                }
            }
            true
        });
        if gone {
            return;
        }
        // The last, partly filled batch; an empty one is kept for the next segment.
        if let Some(b) = batch.take_if(|b| !b.is_empty())
            && tx.send(Msg::Events(b)).is_err()
        {
            return;
        }
        if tx.send(Msg::End(result.map(|()| scanner))).is_err() {
            return;
        }
    }
}

/// The first read of `job`'s trace over the planned file (see the module docs); `progress`
/// gets the bytes done so far and the file's size.
///
/// # Errors
/// A read error or malformed JSON outside events, with its byte offset: the message the
/// one-thread route gives for the same file.
pub fn first_read(
    plan: Plan,
    job: &mut TraceJob,
    progress: impl FnMut(u64, u64),
) -> Result<(), String> {
    first_read_counting(plan, job, progress).0
}

/// [`first_read`], also returning how many segments were rescanned because their guess failed.
fn first_read_counting(
    plan: Plan,
    job: &mut TraceJob,
    mut progress: impl FnMut(u64, u64),
) -> (Result<(), String>, usize) {
    let limits = job.options().limits;
    let join = job.reads_first_pass();
    let mut rescanned = 0;
    let mut rxs = Vec::new();
    let mut frees = Vec::new();
    let mut ends = Vec::new();
    let ring = ring_batches(plan.threads);
    for _ in 0..plan.threads {
        let (tx, rx) = sync_channel::<Msg>(ring + 1);
        let (free_tx, free_rx) = sync_channel::<EventBatch>(ring);
        for _ in 0..ring {
            free_tx
                .send(EventBatch::new(limits.max_string_bytes, join))
                .expect("the receiver is alive");
        }
        rxs.push(rx);
        frees.push(free_tx);
        ends.push((tx, free_rx));
    }
    let plan = &plan;
    let speculate = &AtomicBool::new(true);
    thread::scope(|scope| {
        let mut spawn_error = None;
        for (w, (tx, free_rx)) in ends.into_iter().enumerate() {
            let spawned = thread::Builder::new()
                .name(format!("flinch-scan-{w}"))
                .spawn_scoped(scope, move || {
                    scan_thread(plan, limits, w, speculate, &tx, &free_rx)
                });
            if let Err(e) = spawned {
                spawn_error = Some(format!("cannot start a scan thread: {e}"));
                break;
            }
        }
        let result = match spawn_error {
            Some(e) => Err(e),
            None => collect(
                plan,
                job,
                speculate,
                (&rxs, &frees),
                &mut progress,
                &mut rescanned,
            ),
        };
        // Dropping the channels frees a scan thread that waits on them; the scope joins.
        drop(rxs);
        drop(frees);
        let result = result.and_then(|(mut last, warnings, events, base0)| {
            // A key after the events is read by the last scanner; one before them by the
            // first segment's (the same scanner when it read on to the end).
            let base = last.base_time().or(base0);
            let mut end = last.finish();
            end.events += events;
            let mut all = warnings;
            all += last.warnings();
            job.end_scanned(&end, &all, base).map_err(|e| e.to_string())
        });
        (result, rescanned)
    })
}

type Collected = (
    Box<EventScanner>,
    ScanWarnings,
    u64,
    flinch_core::json::BaseTime,
);

/// The job's side: segments in order, checking each guess (see the module docs). Returns the
/// scanner that read the last segment, and the warnings and event counts of the scanners
/// before it.
fn collect(
    plan: &Plan,
    job: &mut TraceJob,
    speculate: &AtomicBool,
    (rxs, frees): (&[Receiver<Msg>], &[SyncSender<EventBatch>]),
    progress: &mut impl FnMut(u64, u64),
    rescanned: &mut usize,
) -> Result<Collected, String> {
    let mut base0 = flinch_core::json::BaseTime::default();
    let stopped = || "a trace scan thread stopped unexpectedly".to_string();
    let m = plan.starts.len();
    let mut warnings = ScanWarnings::default();
    let mut events = 0u64;
    // The scanner to go on with when a segment did not end at the next segment's guess.
    let mut carry: Option<Box<EventScanner>> = None;
    let mut buf: Vec<u8> = Vec::new();
    for k in 0..m {
        let (rx, free) = (&rxs[k % rxs.len()], &frees[k % frees.len()]);
        let start = plan.starts[k];
        let next = plan.starts.get(k + 1).copied();
        let scanner = match carry.take() {
            // The guess at `start` held: this segment's events are the sequential ones.
            None => loop {
                match rx.recv().map_err(|_| stopped())? {
                    Msg::Events(mut batch) => {
                        let added = job.add_batch(&mut batch);
                        batch.clear();
                        let _ = free.try_send(batch);
                        added.map_err(|e| e.to_string())?;
                        progress(start, plan.size);
                    }
                    Msg::End(result) => break result?,
                }
            },
            // It did not: drop the speculative result and go on with the previous scanner.
            Some(mut scanner) => {
                *rescanned += 1;
                // Until the segment's end message.
                while let Msg::Events(mut batch) = rx.recv().map_err(|_| stopped())? {
                    batch.clear();
                    let _ = free.try_send(batch);
                }
                if buf.is_empty() {
                    buf = vec![0u8; READ_BYTES];
                }
                let mut added = Ok(());
                scan_range(&plan.file, start, next, &mut scanner, &mut buf, |sc| {
                    added = job.add_event(&sc.event(), sc.bytes_consumed());
                    added.is_ok()
                })?;
                added.map_err(|e| e.to_string())?;
                progress(start, plan.size);
                scanner
            }
        };
        if k == 0 {
            base0 = scanner.base_time();
        }
        let Some(next) = next else {
            return Ok((scanner, warnings, events, base0));
        };
        let guess = ElementBoundary {
            offset: next,
            bare: plan.bare,
        };
        if !speculate.load(Ordering::Relaxed) {
            // Guessing stopped: go on with this scanner whatever the guess.
            carry = Some(scanner);
        } else if scanner.element_boundary() == Some(guess) {
            warnings += scanner.warnings();
            events += scanner.events();
        } else {
            carry = Some(scanner);
            // Past the first few segments, when more than a quarter of the guesses so far
            // failed (this file's `args` or strings hold `},{`), the scan threads only waste
            // CPU time: stop them, and scan on here, one thread as for the first segments.
            if *rescanned >= 4 && *rescanned * 4 > k + 1 {
                speculate.store(false, Ordering::Relaxed);
            }
        }
    }
    unreachable!("the last segment returns")
}

#[cfg(test)]
mod tests;
