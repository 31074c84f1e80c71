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
//! The scan threads and the summary's checks take segments from a source ([`SegmentBytes`]):
//! positioned reads of a plain file here, decoded chunks in memory for a `.gz` inflated by one
//! thread ([`gz`]); the scanning, the checks and the fallback are this module's for both.
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

impl Plan {
    /// Segment `k` of the plan.
    fn segment(&self, k: usize) -> Segment<&File> {
        Segment {
            index: k,
            start: self.starts[k],
            next: self.starts.get(k + 1).copied(),
            guessed: true,
            bare: self.bare,
            bytes: &self.file,
        }
    }
}

/// One segment of the document, as a scan thread and the summary take it.
struct Segment<B> {
    /// Its place in the document (segment `k` goes to scan thread `k mod N`).
    index: usize,
    /// The offset of its first byte (0 for the first segment).
    start: u64,
    /// The offset of the next segment's first byte; `None` for the last segment.
    next: Option<u64>,
    /// `start` is a guessed event boundary. When no guess was found where a segment had to
    /// end (`gz`: memory is bounded), the next one starts anywhere: no scan thread reads it,
    /// and the summary reads it on with the scanner before.
    guessed: bool,
    /// The document is a bare array (part of the guessed boundary).
    bare: bool,
    /// Where its bytes are.
    bytes: B,
}

/// Where the bytes of a segment are: the plain file (positioned reads), or decoded chunks in
/// memory (`gz`). The scan and its checks are the same for both.
trait SegmentBytes: Send {
    /// Decoded from gzip (scan errors say so).
    const DECOMPRESSED: bool;

    /// Scans the bytes from `start` to `next` (`None`: to the end) with `scanner`, handing each
    /// event to `sink` until it returns false. Stops at a read or scan error, with its message.
    /// `buf`: scratch space kept between calls.
    fn scan(
        &self,
        start: u64,
        next: Option<u64>,
        scanner: &mut EventScanner,
        buf: &mut Vec<u8>,
        sink: impl FnMut(&EventScanner) -> bool,
    ) -> Result<(), String>;
}

/// Scans `chunk` with `scanner`, each event to `sink`: `Ok(false)` once `sink` returned false.
fn scan_chunk(
    scanner: &mut EventScanner,
    chunk: &[u8],
    sink: &mut impl FnMut(&EventScanner) -> bool,
    decompressed: bool,
) -> Result<bool, String> {
    let mut pos = 0;
    loop {
        match scanner.scan(&chunk[pos..]) {
            Ok((Scan::Event, nin)) => {
                pos += nin;
                if !sink(scanner) {
                    return Ok(false);
                }
            }
            Ok((Scan::NeedsInput, _)) => return Ok(true),
            Err(e) => return Err(scan_error(e, decompressed)),
        }
    }
}

impl SegmentBytes for &File {
    const DECOMPRESSED: bool = false;

    fn scan(
        &self,
        start: u64,
        end: Option<u64>,
        scanner: &mut EventScanner,
        buf: &mut Vec<u8>,
        mut sink: impl FnMut(&EventScanner) -> bool,
    ) -> Result<(), String> {
        if buf.len() < READ_BYTES {
            buf.resize(READ_BYTES, 0);
        }
        let mut at = start;
        loop {
            let want = match end {
                Some(e) if e <= at => return Ok(()),
                Some(e) => buf.len().min((e - at) as usize),
                None => buf.len(),
            };
            let n = read_full_at(self, &mut buf[..want], at)
                .map_err(|e| format!("read error at byte {at}: {e}"))?;
            if n == 0 {
                return match end {
                    None => Ok(()),
                    Some(_) => Err(format!(
                        "read error at byte {at}: the file got shorter while being read"
                    )),
                };
            }
            if !scan_chunk(scanner, &buf[..n], &mut sink, false)? {
                return Ok(());
            }
            at += n as u64;
        }
    }
}

/// What a scan thread sends for each of its segments, in order.
enum Msg {
    Events(EventBatch),
    /// The segment's end: its scanner (to check where it stopped, and to go on with it), or
    /// the message of a read or scan error.
    End(Result<Box<EventScanner>, String>),
}

/// One scan thread: its segments (`w`, `w + N`, ...), in order.
fn scan_thread<B: SegmentBytes>(
    segments: impl Iterator<Item = Segment<B>>,
    limits: Limits,
    speculate: &AtomicBool,
    tx: &SyncSender<Msg>,
    free: &Receiver<EventBatch>,
) {
    let mut buf = Vec::new();
    let mut batch: Option<EventBatch> = None;
    for seg in segments {
        let (k, start) = (seg.index, seg.start);
        if k > 0 && !(seg.guessed && speculate.load(Ordering::Relaxed)) {
            // The summary scans this one by itself: say so without reading. Its bytes go
            // first (a ring of decoded chunks waits for them).
            drop(seg);
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
                    bare: seg.bare,
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
        let result = seg
            .bytes
            .scan(start, seg.next, &mut scanner, &mut buf, |sc| {
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
        drop(seg);
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
    let plan = &plan;
    let (m, n) = (plan.starts.len(), plan.threads);
    let feeds = (0..n)
        .map(|w| (w..m).step_by(n).map(move |k| plan.segment(k)))
        .collect();
    let in_order = (0..m).map(|k| plan.segment(k));
    let (collected, rescanned) = scan_segments(feeds, in_order, job, |start| {
        progress(start, plan.size);
    });
    (collected.and_then(|c| end_read(job, c)), rescanned)
}

/// The end of a first read over segments: the last scanner's end state, and the warnings,
/// events and `baseTimeNanoseconds` of all, to the job.
fn end_read(job: &mut TraceJob, collected: Collected) -> Result<(), String> {
    let (mut last, warnings, events, base0) = collected;
    // A key after the events is read by the last scanner; one before them by the first
    // segment's (the same scanner when it read on to the end).
    let base = last.base_time().or(base0);
    let mut end = last.finish();
    end.events += events;
    let mut all = warnings;
    all += last.warnings();
    job.end_scanned(&end, &all, base).map_err(|e| e.to_string())
}

/// Scan threads over `feeds` (one per thread: segment `k` in feed `k mod N`), and the job's
/// side over `in_order` (every segment, in order) on this thread: see the module docs. Also
/// returns how many segments the summary scanned itself because their guess failed (or
/// guessing had stopped).
fn scan_segments<B, F>(
    feeds: Vec<F>,
    in_order: impl Iterator<Item = Segment<B>>,
    job: &mut TraceJob,
    mut progress: impl FnMut(u64),
) -> (Result<Collected, String>, usize)
where
    B: SegmentBytes,
    F: Iterator<Item = Segment<B>> + Send,
{
    let limits = job.options().limits;
    let join = job.reads_first_pass();
    let mut rescanned = 0;
    let mut rxs = Vec::new();
    let mut frees = Vec::new();
    let mut ends = Vec::new();
    let ring = ring_batches(feeds.len());
    for _ in 0..feeds.len() {
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
    let speculate = &AtomicBool::new(true);
    thread::scope(|scope| {
        let mut spawn_error = None;
        for (w, (feed, (tx, free_rx))) in feeds.into_iter().zip(ends).enumerate() {
            let spawned = thread::Builder::new()
                .name(format!("flinch-scan-{w}"))
                .spawn_scoped(scope, move || {
                    scan_thread(feed, limits, speculate, &tx, &free_rx)
                });
            if let Err(e) = spawned {
                spawn_error = Some(format!("cannot start a scan thread: {e}"));
                break;
            }
        }
        let result = match spawn_error {
            Some(e) => {
                // Segments queued for the summary may hold what a scan thread waits for.
                drop(in_order);
                Err(e)
            }
            None => collect(
                in_order,
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
fn collect<B: SegmentBytes>(
    in_order: impl Iterator<Item = Segment<B>>,
    job: &mut TraceJob,
    speculate: &AtomicBool,
    (rxs, frees): (&[Receiver<Msg>], &[SyncSender<EventBatch>]),
    progress: &mut impl FnMut(u64),
    rescanned: &mut usize,
) -> Result<Collected, String> {
    let mut base0 = flinch_core::json::BaseTime::default();
    let stopped = || "a trace scan thread stopped unexpectedly".to_string();
    let mut warnings = ScanWarnings::default();
    let mut events = 0u64;
    // The scanner that read the segment before, until the guess at this one's start is checked.
    let mut before: Option<Box<EventScanner>> = None;
    let mut buf: Vec<u8> = Vec::new();
    for seg in in_order {
        let (k, start) = (seg.index, seg.start);
        let (rx, free) = (&rxs[k % rxs.len()], &frees[k % frees.len()]);
        // The scanner to go on with, when the segment before did not end at this one's guess.
        let carry = match before.take() {
            None => None,
            Some(scanner) if !speculate.load(Ordering::Relaxed) => {
                // Guessing stopped: go on with this scanner whatever the guess.
                *rescanned += 1;
                Some(scanner)
            }
            Some(scanner) if !seg.guessed => Some(scanner),
            Some(scanner) => {
                let guess = ElementBoundary {
                    offset: start,
                    bare: seg.bare,
                };
                if scanner.element_boundary() == Some(guess) {
                    warnings += scanner.warnings();
                    events += scanner.events();
                    None
                } else {
                    // Past the first few segments, when more than a quarter of the guesses so
                    // far failed (this file's `args` or strings hold `},{`), the scan threads
                    // only waste CPU time: stop them, and scan on here, one thread as for the
                    // first segments.
                    if *rescanned >= 4 && *rescanned * 4 > k {
                        speculate.store(false, Ordering::Relaxed);
                    }
                    *rescanned += 1;
                    Some(scanner)
                }
            }
        };
        let scanner = match carry {
            // The guess at `start` held: this segment's events are the sequential ones.
            None => loop {
                match rx.recv().map_err(|_| stopped())? {
                    Msg::Events(mut batch) => {
                        let added = job.add_batch(&mut batch);
                        batch.clear();
                        let _ = free.try_send(batch);
                        added.map_err(|e| e.to_string())?;
                        progress(start);
                    }
                    Msg::End(result) => break result?,
                }
            },
            // It did not: drop the speculative result and go on with the previous scanner.
            Some(mut scanner) => {
                // Until the segment's end message.
                while let Msg::Events(mut batch) = rx.recv().map_err(|_| stopped())? {
                    batch.clear();
                    let _ = free.try_send(batch);
                }
                let mut added = Ok(());
                seg.bytes
                    .scan(start, seg.next, &mut scanner, &mut buf, |sc| {
                        added = job.add_event(&sc.event(), sc.bytes_consumed());
                        added.is_ok()
                    })?;
                added.map_err(|e| e.to_string())?;
                progress(start);
                scanner
            }
        };
        if k == 0 {
            base0 = scanner.base_time();
        }
        if seg.next.is_none() {
            return Ok((scanner, warnings, events, base0));
        }
        before = Some(scanner);
    }
    Err(stopped())
}

pub mod gz;

#[cfg(test)]
mod tests;
