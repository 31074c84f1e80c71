//! The two-stage trace pipeline of `flinch-trace trace`: the core scanner on a thread of its own,
//! the core summary on the caller's thread.
//!
//! Reading (or inflating) already runs on the input's reader thread (`crate::input`). Scanning
//! and summarizing are the two other stages: the scanner takes about three quarters of the CPU
//! time and the summary the rest, so one thread running both would be the bottleneck
//! (BENCHMARKS.md, "Trace engine"). Here the
//! scan thread copies each event into a compact record ([`Rec`]: the fields the summary reads, and
//! their `ph`, `cat` and `name` bytes in the batch's text arena) and hands batches of them to the
//! summary through a bounded ring of recycled batches ([`RING_BATCHES`]): no allocation per event,
//! and memory fixed at about
//! `RING_BATCHES × (BATCH_EVENTS × 100 + BATCH_TEXT_BYTES + 2 × max_string_bytes)` bytes
//! (~1.4 MiB): per event slot a 40-byte record, and room for its thread ids, its (cat, name)
//! pair and that pair's op.
//!
//! The result is the one `flinch_core::analyzer::Analyzer` gives for the same bytes (same scanner,
//! same summary, same events in the same order, the same error texts and cut-gzip warning); the
//! tests below check that on generated traces, errors and cut files, and
//! `native/tests/trace_cli.rs` checks the real traces against their golden files.
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flinch_core::Limits;
use flinch_core::analyzer::{Analysis, AnalyzeError, Analyzer, AnalyzerOptions, Kind};
use flinch_core::join::first_pass::{self, host_span_ns};
use flinch_core::join::gaps::time_span_ns;
use flinch_core::join::{FirstPass, Resume};
use flinch_core::json::{
    Event, EventScanner, IdField, NumField, QUOTED_DUR, QUOTED_TS, Scan, ScanEnd, ScanError,
    ScanWarnings,
};
use flinch_core::summary::batch::{OpMemo, fields_read};
use flinch_core::summary::{DEFAULT_TOP_OPS, TraceSummary, TraceSummaryResult};

use super::Also;
use crate::input::{Input, InputError, InputFile};

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

/// One event: what [`TraceSummary::add`] reads of it (as `flinch_core::summary::batch::fields_read`
/// says; the rest is left out), in 40 bytes, its strings in the
/// batch's text arena. The summary thread reads every record once, from the scan thread's
/// cache: the smaller, the less it waits.
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// `ts_ns`, `dur_ns`: the value of `NumField::Ns` (else 0), the kind in `kinds`.
    ts_ns: i64,
    dur_ns: i64,
    /// `ph` when it is not one byte (else `NONE`, and the byte is `ph_byte`).
    ph: Span,
    /// Index of the event's (`cat`, `name`) in the batch's `pairs`; `u32::MAX` when not kept.
    pair: u32,
    /// Index of the event's (pid, tid) in the batch's `threads`; `u32::MAX` when not kept.
    thread: u32,
    /// The `NumField` kinds of `ts_ns` (bits 0-1) and `dur_ns` (bits 2-3), and the event's
    /// `quoted_times` of those it keeps (bits 4-5).
    kinds: u8,
    ph_byte: u8,
}

const _: () = assert!(std::mem::size_of::<Rec>() == 40);

const MISSING: u8 = 0;
const NS: u8 = 1;
const NOT_NUMBER: u8 = 2;

fn num_kind(n: NumField) -> (u8, i64) {
    match n {
        NumField::Missing => (MISSING, 0),
        NumField::Ns(v) => (NS, v),
        NumField::NotNumber => (NOT_NUMBER, 0),
    }
}

fn num_field(kind: u8, v: i64) -> NumField {
    match kind & 3 {
        NS => NumField::Ns(v),
        NOT_NUMBER => NumField::NotNumber,
        _ => NumField::Missing,
    }
}

fn str_in(text: &[u8], s: Span) -> Option<&[u8]> {
    (s.len != u32::MAX).then(|| &text[s.start as usize..(s.start + s.len) as usize])
}

/// Slots of a batch's table of recent (cat, name) pairs (direct-mapped).
const RECENT_SLOTS: usize = 1024;
const _: () = assert!(BATCH_EVENTS < u16::MAX as usize);

/// The slot of a (cat, name) pair in `Batch::recent`: from the lengths and the first, middle
/// and last 8 bytes only (a few loads, while the bytes are hot), since a slot is only a guess
/// that `Batch::pair` checks byte by byte.
#[inline]
fn recent_slot(cat: Option<&[u8]>, name: Option<&[u8]>) -> usize {
    fn part(s: Option<&[u8]>) -> u64 {
        let Some(s) = s else {
            return 0x9E37_79B9_7F4A_7C15;
        };
        let n = s.len();
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let half = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&s[i..i + 4]);
            u64::from(u32::from_le_bytes(w))
        };
        if n >= 8 {
            (n as u64) ^ word(0) ^ word((n - 8) / 2).rotate_left(21) ^ word(n - 8).rotate_left(43)
        } else if n >= 4 {
            // Two overlapping loads cover the 4 to 7 bytes (category names are often 6).
            (n as u64) ^ half(0) << 8 ^ half(n - 4) << 40
        } else {
            s.iter().fold(n as u64, |h, &b| h << 8 | u64::from(b))
        }
    }
    let h = (part(name).wrapping_mul(0xA076_1D64_78BD_642F) ^ part(cat))
        .wrapping_mul(0xE703_7ED1_A0B4_28DB);
    (h >> 54) as usize % RECENT_SLOTS
}

/// A batch of scanned events, recycled through the ring.
///
/// Events that share a (cat, name) pair (most do: a trace has far fewer ops than events)
/// share one entry of `pairs` when the scan thread finds the earlier one through `recent`, so
/// the batch holds their strings once and the summary looks the op up once per batch
/// ([`TraceSummary::add_batched`]) instead of once per event. A pair that is not found (its slot
/// taken by another pair) gets an entry of its own: the same op, found again by the summary.
pub(super) struct Batch {
    recs: Vec<Rec>,
    text: Vec<u8>,
    /// (pid, tid) of the records that keep them.
    threads: Vec<(IdField, IdField)>,
    /// The (cat, name) pairs of the records, each stored once as far as `recent` finds them.
    pairs: Vec<(Span, Span)>,
    /// Per slot ([`recent_slot`]): the index in `pairs` of the last pair seen there, or
    /// `u16::MAX` (pairs number fewer than [`BATCH_EVENTS`]; 2 bytes a slot keep the table
    /// small in the scan thread's cache).
    recent: Vec<u16>,
    /// Per pair: its op in the summary, once looked up (`Batch::add_to`).
    memos: Vec<Option<OpMemo>>,
    /// With the join: what its first pass reads of these events (`Batch::join_to`).
    join: Option<Box<JoinSide>>,
}

/// What the join's first pass (`flinch_core::join::FirstPass`) reads of a batch's events: their
/// time spans merged, and the record index and `pid` of each event that it reads more of (a
/// complete busy or annotation event, whose `ts`, `dur`, `cat` and `name` the record keeps);
/// and, for a second pass that reads only some of the trace again, the byte ranges of every
/// [`JOIN_RANGE_EVENTS`] events (where a scanner can start again before the first, the end of
/// the last) with the time hull of their host events.
struct JoinSide {
    span: Option<(i64, i64)>,
    events: Vec<(u32, IdField)>,
    ranges: Vec<JoinRange>,
}

/// Events per byte range of the join (a quarter of a full batch): the second pass scans again
/// whole ranges, so smaller ones read less around each pause; 1 GB of trace makes ~13,000.
const JOIN_RANGE_EVENTS: usize = 512;

struct JoinRange {
    /// The record index of its first event.
    first: u32,
    resume: Resume,
    end: u64,
    host_hull: Option<(i64, i64)>,
}

/// Gives the first pass one byte range of a batch.
fn begin(first: &mut FirstPass, r: &JoinRange) {
    first.begin_range(r.resume);
    first.add_host_hull(r.host_hull);
    first.set_range_end(r.end);
}

fn widen(h: &mut Option<(i64, i64)>, (a, b): (i64, i64)) {
    *h = Some(h.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
}

impl Batch {
    /// Capacity for [`BATCH_EVENTS`] records and for a full text arena plus one more event's
    /// strings (each at most `max_string_bytes`; `ph` at most 8 bytes), so pushes never grow it.
    pub(super) fn new(max_string_bytes: usize, join: bool) -> Batch {
        Batch {
            join: join.then(|| {
                Box::new(JoinSide {
                    span: None,
                    events: Vec::with_capacity(BATCH_EVENTS),
                    ranges: Vec::with_capacity(BATCH_EVENTS.div_ceil(JOIN_RANGE_EVENTS)),
                })
            }),
            recs: Vec::with_capacity(BATCH_EVENTS),
            text: Vec::with_capacity(BATCH_TEXT_BYTES + 2 * max_string_bytes + 64),
            threads: Vec::with_capacity(BATCH_EVENTS),
            pairs: Vec::with_capacity(BATCH_EVENTS),
            recent: vec![u16::MAX; RECENT_SLOTS],
            memos: Vec::with_capacity(BATCH_EVENTS),
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

    /// The index in `pairs` of (cat, name): the recent one when its slot holds the same bytes,
    /// else a new entry.
    fn pair(&mut self, cat: Option<&[u8]>, name: Option<&[u8]>) -> u32 {
        let slot = recent_slot(cat, name);
        let seen = self.recent[slot];
        if let Some(&(c, n)) = self.pairs.get(usize::from(seen))
            && str_in(&self.text, n) == name
            && str_in(&self.text, c) == cat
        {
            return u32::from(seen);
        }
        let c = self.span(cat);
        let n = self.span(name);
        self.pairs.push((c, n));
        let index = self.pairs.len() - 1;
        self.recent[slot] = index as u16;
        index as u32
    }

    pub(super) fn push(&mut self, e: &Event<'_>) {
        if let Some(j) = &mut self.join {
            if let Some(span) = time_span_ns(e) {
                widen(&mut j.span, span);
            }
            let index = self.recs.len();
            if index.is_multiple_of(JOIN_RANGE_EVENTS) {
                j.ranges.push(JoinRange {
                    first: index as u32,
                    resume: Resume::Start,
                    end: 0,
                    host_hull: None,
                });
            }
            if let Some(span) = host_span_ns(e)
                && let Some(r) = j.ranges.last_mut()
            {
                widen(&mut r.host_hull, span);
            }
            if first_pass::is_relevant(e) {
                j.events.push((self.recs.len() as u32, e.pid));
            }
        }
        let (ph, ph_byte) = match e.ph {
            [b] => (NONE, *b),
            ph => (self.span(Some(ph)), 0),
        };
        let read = fields_read(e.ph);
        let pair = if read.names {
            self.pair(e.cat, e.name)
        } else {
            u32::MAX
        };
        let (ts, dur) = (read.ts, read.dur);
        let quoted =
            e.quoted_times & (if ts { QUOTED_TS } else { 0 } | if dur { QUOTED_DUR } else { 0 });
        let (ts_kind, ts_ns) = if ts { num_kind(e.ts_ns) } else { (MISSING, 0) };
        let (dur_kind, dur_ns) = if dur {
            num_kind(e.dur_ns)
        } else {
            (MISSING, 0)
        };
        let thread = if read.thread {
            self.threads.push((e.pid, e.tid));
            (self.threads.len() - 1) as u32
        } else {
            u32::MAX
        };
        self.recs.push(Rec {
            ts_ns,
            dur_ns,
            ph,
            pair,
            thread,
            kinds: ts_kind | dur_kind << 2 | quoted << 4,
            ph_byte,
        });
    }

    /// With the join: the event just pushed ends at byte `end` of the document, and, when it is
    /// the first of its byte range, a scanner can start again at `resume` to read it.
    #[inline]
    pub(super) fn mark(&mut self, resume: Resume, end: u64) {
        let index = self.recs.len().wrapping_sub(1) as u32;
        if let Some(r) = self.join.as_mut().and_then(|j| j.ranges.last_mut()) {
            if r.first == index {
                r.resume = resume;
            }
            r.end = end;
        }
    }

    /// Adds every event of the batch to `summary`, in order, looking each pair's op up once.
    pub(super) fn add_to(&mut self, summary: &mut TraceSummary) {
        let Batch {
            recs,
            text,
            threads,
            pairs,
            memos,
            ..
        } = self;
        memos.clear();
        memos.resize(pairs.len(), None);
        let mut no_memo = None;
        for r in recs.iter() {
            let ((cat, name), memo) = match pairs.get(r.pair as usize) {
                Some(&(c, n)) => (
                    (str_in(text, c), str_in(text, n)),
                    &mut memos[r.pair as usize],
                ),
                None => ((None, None), &mut no_memo),
            };
            let (pid, tid) = threads.get(r.thread as usize).copied().unwrap_or_default();
            let e = Event {
                ph: match str_in(text, r.ph) {
                    Some(ph) => ph,
                    None => std::slice::from_ref(&r.ph_byte),
                },
                cat,
                name,
                ts_ns: num_field(r.kinds, r.ts_ns),
                dur_ns: num_field(r.kinds >> 2, r.dur_ns),
                pid,
                tid,
                id: IdField::Missing,
                scope: IdField::Missing,
                quoted_times: r.kinds >> 4,
            };
            summary.add_batched(&e, memo);
        }
    }

    /// Gives the join's first pass what it reads of the batch's events, in order.
    pub(super) fn join_to(&self, first: &mut FirstPass) {
        let Some(j) = &self.join else {
            return;
        };
        first.add_time_span(j.span);
        let mut next = 0;
        for &(i, pid) in &j.events {
            while let Some(r) = j.ranges.get(next).filter(|r| r.first <= i) {
                begin(first, r);
                next += 1;
            }
            let r = &self.recs[i as usize];
            let (cat, name) = match self.pairs.get(r.pair as usize) {
                Some(&(c, n)) => (str_in(&self.text, c), str_in(&self.text, n)),
                None => (None, None),
            };
            first.add_relevant(&Event {
                ph: b"X",
                cat,
                name,
                ts_ns: num_field(r.kinds, r.ts_ns),
                dur_ns: num_field(r.kinds >> 2, r.dur_ns),
                pid,
                tid: IdField::Missing,
                id: IdField::Missing,
                scope: IdField::Missing,
                quoted_times: r.kinds >> 4,
            });
        }
        for r in &j.ranges[next.min(j.ranges.len())..] {
            begin(first, r);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.recs.clear();
        self.text.clear();
        self.threads.clear();
        self.pairs.clear();
        self.recent.fill(u16::MAX);
        if let Some(j) = &mut self.join {
            j.span = None;
            j.events.clear();
            j.ranges.clear();
        }
    }
}

/// What the scan thread sends.
enum Msg {
    Events(Batch),
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

/// Summarizes the trace read from `input` (scan thread plus this thread), also doing `also` on
/// the same scan; `progress` is called after each batch. Returns the result, or the error
/// message for the file.
///
/// # Errors
/// A read or gzip error, or malformed JSON outside events: one line naming the byte offset, as
/// the core analyzer words it.
pub fn summarize(
    input: Input,
    source: &str,
    limits: Limits,
    top: Option<usize>,
    exact_io: Option<&InputFile>,
    also: Also<'_>,
    mut progress: impl FnMut(),
) -> Result<TraceSummaryResult, String> {
    let (mut join, mergeable) = also.into_parts();
    let (tx, rx) = sync_channel::<Msg>(RING_BATCHES);
    let (free_tx, free_rx) = sync_channel::<Batch>(RING_BATCHES);
    for _ in 0..RING_BATCHES {
        free_tx
            .send(Batch::new(limits.max_string_bytes, join.is_some()))
            .expect("the receiver is alive");
    }
    let scan = thread::Builder::new()
        .name("flinch-scan".into())
        .spawn(move || scan_thread(input, limits, &tx, &free_rx))
        .map_err(|e| format!("cannot start the scan thread: {e}"))?;
    let mut summary = TraceSummary::new(limits);
    summary.set_mergeable(mergeable);
    #[cfg(unix)]
    if let Some(file) = exact_io {
        flinch_host::exact_io::equip(&mut summary, file, limits);
    }
    let outcome = loop {
        match rx.recv() {
            Ok(Msg::Events(mut batch)) => {
                batch.add_to(&mut summary);
                if let Some(first) = join.as_deref_mut() {
                    batch.join_to(first);
                }
                batch.clear();
                // Never blocks: the ring holds every batch there is.
                let _ = free_tx.try_send(batch);
                progress();
            }
            Ok(Msg::End(end, warnings, cut, note, base)) => {
                if let Some(first) = join.as_deref_mut() {
                    first.set_base_time_ns(base);
                }
                break Ok((end, warnings, cut, note));
            }
            Ok(Msg::Fail(message)) => break Err(message),
            Err(_) => break Err("the trace scan thread stopped unexpectedly".to_string()),
        }
    };
    // The scan thread has sent its last message (or gone); dropping `rx` frees it if blocked.
    drop(rx);
    let _ = scan.join();
    let (end, warnings, cut, note) = outcome?;
    let top = top.unwrap_or(DEFAULT_TOP_OPS);
    let mut result = summary.finish(source, &end, &warnings, top);
    if let Some(e) = cut {
        // As flinch_core::analyzer does for a cut .gz.
        result.truncated = true;
        result
            .warnings
            .insert(0, format!("{e}: summarized from what was read"));
    }
    // As flinch_core::analyzer does for trailing garbage.
    result.warnings.extend(note);
    Ok(result)
}

/// The one-thread alternative to [`summarize`]: the core analyzer (scanner and summary) on
/// this thread, after the input's reader thread. `trace` uses it for gzip input on a machine of
/// two cores or fewer, where inflating already takes most of the second core: a third busy
/// thread then only adds hand-over costs (BENCHMARKS.md, "Trace engine"). The same result, byte
/// for byte.
///
/// `mergeable` adds the mergeable section.
///
/// # Errors
/// As [`summarize`].
pub fn summarize_sequential(
    mut input: Input,
    source: &str,
    limits: Limits,
    top: Option<usize>,
    exact_io: Option<&InputFile>,
    mergeable: bool,
    mut progress: impl FnMut(),
) -> Result<TraceSummaryResult, String> {
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: source.to_string(),
        top,
        mergeable,
        ..AnalyzerOptions::default()
    };
    let mut analyzer = Analyzer::with_decoded_input(options, input.is_gzip());
    #[cfg(unix)]
    if let Some(file) = exact_io {
        analyzer.set_trace_io(
            Box::new(flinch_host::exact_io::FileSpill::new()),
            Box::new(flinch_host::exact_io::FileReplay::new(file, limits)),
        );
    }
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => {
                analyzer.write(chunk).map_err(|e| e.to_string())?;
                progress();
            }
            Ok(None) => {
                if let Some(w) = input.warning() {
                    analyzer.note_gzip_warning(w);
                }
                break;
            }
            // A cut .gz: summarize what was decoded before the cut.
            Err(InputError { cut: Some(cut), .. }) => {
                analyzer.note_cut_gzip(cut);
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
    // The end of the event before, where a scanner can start again (`Batch::mark`).
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
    if !batch.recs.is_empty() && tx.send(Msg::Events(batch)).is_err() {
        return;
    }
    let end = scanner.finish();
    let note = input.warning().map(str::to_string);
    let base = scanner.base_time();
    let _ = tx.send(Msg::End(end, *scanner.warnings(), cut, note, base));
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
