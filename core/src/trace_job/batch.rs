//! Batches of scanned events, for a driver that scans on threads of its own (the std driver's
//! scan threads) and hands the events to a [`TraceJob`](super::TraceJob) in file order.
//!
//! The scan thread copies each event into a compact record (`Rec`: the fields the summary
//! reads, and their `ph`, `cat` and `name` bytes in the batch's text arena); the job's thread
//! adds a whole batch at once ([`TraceJob::add_batch`](super::TraceJob::add_batch)). Batches are
//! recycled by the driver: no allocation per event, and per batch about
//! `BATCH_EVENTS × 100 + BATCH_TEXT_BYTES + 2 × max_string_bytes` bytes (per event slot a
//! 40-byte record, and room for its thread ids, its (cat, name) pair and that pair's op).
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use crate::join::counters::{CounterSample, counter_sample};
use crate::join::first_pass::{self, host_span_ns};
use crate::join::gaps::time_span_ns;
use crate::join::{FirstPass, Resume};
use crate::json::{Event, IdField, NumField, QUOTED_DUR, QUOTED_TS};
use crate::steps::{Kind, StepCollector};
use crate::summary::TraceSummary;
use crate::summary::batch::{OpMemo, fields_read};

/// Events per batch at most.
pub const BATCH_EVENTS: usize = 2048;
/// A batch is handed over once its text arena holds this many bytes.
pub const BATCH_TEXT_BYTES: usize = 128 << 10;

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

const _: () = assert!(core::mem::size_of::<Rec>() == 40);

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

/// The slot of a (cat, name) pair in `EventBatch::recent`: from the lengths and the first, middle
/// and last 8 bytes only (a few loads, while the bytes are hot), since a slot is only a guess
/// that `EventBatch::pair` checks byte by byte.
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
pub struct EventBatch {
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
    /// Per pair: its op in the summary, once looked up (`EventBatch::add_to`).
    memos: Vec<Option<OpMemo>>,
    /// With the join: what its first pass reads of these events (`EventBatch::join_to`).
    join: Option<Box<JoinSide>>,
    /// Per pair: what it is to the steps, once looked up (`EventBatch::steps_to`).
    step_kinds: Vec<Option<Kind>>,
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
    /// The power and utilization counter samples (`join::counters`), in order.
    counters: Vec<CounterSample>,
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

impl EventBatch {
    /// Capacity for [`BATCH_EVENTS`] records and for a full text arena plus one more event's
    /// strings (each at most `max_string_bytes`; `ph` at most 8 bytes), so pushes never grow it.
    pub fn new(max_string_bytes: usize, join: bool) -> EventBatch {
        EventBatch {
            join: join.then(|| {
                Box::new(JoinSide {
                    span: None,
                    events: Vec::with_capacity(BATCH_EVENTS),
                    // Grown once to the most a batch holds, then kept through the ring.
                    counters: Vec::new(),
                    ranges: Vec::with_capacity(BATCH_EVENTS.div_ceil(JOIN_RANGE_EVENTS)),
                })
            }),
            recs: Vec::with_capacity(BATCH_EVENTS),
            text: Vec::with_capacity(BATCH_TEXT_BYTES + 2 * max_string_bytes + 64),
            threads: Vec::with_capacity(BATCH_EVENTS),
            pairs: Vec::with_capacity(BATCH_EVENTS),
            recent: vec![u16::MAX; RECENT_SLOTS],
            memos: Vec::with_capacity(BATCH_EVENTS),
            step_kinds: Vec::new(),
        }
    }

    /// The batch is to be handed over: its events or its text arena are full.
    pub fn full(&self) -> bool {
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

    /// Copies what the summary (and, with the join, its first pass) reads of `e`.
    pub fn push(&mut self, e: &Event<'_>) {
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
            } else if let Some(c) = counter_sample(e) {
                j.counters.push(c);
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
    pub fn mark(&mut self, resume: Resume, end: u64) {
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
        let EventBatch {
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
                    None => core::slice::from_ref(&r.ph_byte),
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
                arg: crate::json::ArgValue::Missing,
            };
            summary.add_batched(&e, memo);
        }
    }

    /// Gives the steps' first pass the batch's complete events, looking each pair's kind up
    /// once.
    pub(super) fn steps_to(&mut self, steps: &mut StepCollector) {
        let EventBatch {
            recs,
            text,
            pairs,
            step_kinds,
            ..
        } = self;
        step_kinds.clear();
        step_kinds.resize(pairs.len(), None);
        // As `StepCollector::add`: only complete events with both times in ns and `dur >= 0`
        // count, and only theirs are looked up.
        const TIMES_NS: u8 = NS | NS << 2;
        for r in recs.iter() {
            if r.ph_byte != b'X'
                || r.ph.len != u32::MAX
                || r.kinds & 0xF != TIMES_NS
                || r.dur_ns < 0
            {
                continue;
            }
            let Some(slot) = step_kinds.get_mut(r.pair as usize) else {
                continue;
            };
            let (c, n) = pairs[r.pair as usize];
            let kind = *slot.get_or_insert_with(|| steps.kind(str_in(text, c), str_in(text, n)));
            // Most events of a trace profiled with stacks are `python_function`s: of no class.
            if kind != Kind::None {
                steps.add_span(kind, str_in(text, n), r.ts_ns, r.dur_ns);
            }
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
                arg: crate::json::ArgValue::Missing,
            });
        }
        for r in &j.ranges[next.min(j.ranges.len())..] {
            begin(first, r);
        }
        for c in &j.counters {
            first.add_counter(c);
        }
    }

    /// Events pushed since the last [`clear`](Self::clear).
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    /// No event pushed since the last [`clear`](Self::clear).
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Empties the batch for reuse, keeping its capacity.
    pub fn clear(&mut self) {
        self.recs.clear();
        self.text.clear();
        self.threads.clear();
        self.pairs.clear();
        self.recent.fill(u16::MAX);
        if let Some(j) = &mut self.join {
            j.span = None;
            j.events.clear();
            j.counters.clear();
            j.ranges.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    use super::*;
    use crate::Limits;
    use crate::json::EventScanner;

    /// A batch (compact records, pairs found again through `recent`, one op lookup per pair)
    /// against `TraceSummary::add` of every event: names built to share a `recent` slot (same
    /// length and same first, middle and last 8 bytes, differing elsewhere), `None` against empty
    /// strings, the same name under two categories, multi-byte and empty phases, B/E pairs, odd
    /// numbers, at limits that fold ops into "(other)" and drop B slices too. Batches are filled,
    /// drained and reused, as the ring does.
    #[test]
    fn batches_add_what_the_events_add() {
        let mut rng = flinch_core_rng(41);
        let stem = "void at::native::elementwise_kernel<128, 4, gpu_kernel_impl<AddFunctor<float>>>(int, T)";
        let mut names: Vec<Option<String>> = vec![None, Some(String::new()), Some("a".into())];
        for k in 0..40usize {
            // Same length and same 8-byte head, middle and tail: only bytes 9..20 differ.
            let mut n = stem.to_string().into_bytes();
            n[9 + k % 11] = b'A' + (k / 11) as u8;
            names.push(Some(String::from_utf8(n).unwrap()));
        }
        // They do share a slot.
        let (a, b) = (names[3].as_deref(), names[40].as_deref());
        assert_ne!(a, b);
        assert_eq!(
            recent_slot(Some(b"kernel"), a.map(str::as_bytes)),
            recent_slot(Some(b"kernel"), b.map(str::as_bytes))
        );
        let cats = [None, Some(""), Some("kernel"), Some("cpu_op")];
        let phs: [&[u8]; 8] = [b"X", b"X", b"X", b"B", b"E", b"i", b"XY", b""];
        for limits in [
            Limits::NATIVE,
            Limits {
                max_ops: 7,
                max_categories: 2,
                max_open_slices: 3,
                ..Limits::BOUNDED
            },
        ] {
            let mut direct = TraceSummary::new(limits);
            let mut batched = TraceSummary::new(limits);
            let mut batch = EventBatch::new(limits.max_string_bytes, false);
            for i in 0..20_000u64 {
                let name = names[rng(names.len())].as_deref().map(str::as_bytes);
                let cat = cats[rng(cats.len())].map(str::as_bytes);
                let ts_ns = match rng(20) {
                    0 => NumField::Missing,
                    1 => NumField::NotNumber,
                    _ => NumField::Ns(1_000_000 + i as i64 * 100 - rng(300) as i64),
                };
                let dur_ns = match rng(20) {
                    0 => NumField::Missing,
                    1 => NumField::NotNumber,
                    2 => NumField::Ns(-5),
                    _ => NumField::Ns(rng(500) as i64),
                };
                let e = Event {
                    ph: phs[rng(phs.len())],
                    cat,
                    name,
                    ts_ns,
                    dur_ns,
                    pid: IdField::Int(1),
                    tid: if rng(2) == 0 {
                        IdField::Int(7)
                    } else {
                        IdField::Hash(99)
                    },
                    id: IdField::Int(i as i64),
                    scope: IdField::Missing,
                    quoted_times: rng(4) as u8,
                    arg: crate::json::ArgValue::Missing,
                };
                direct.add(&e);
                batch.push(&e);
                if batch.full() || rng(500) == 0 {
                    batch.add_to(&mut batched);
                    batch.clear();
                }
            }
            batch.add_to(&mut batched);
            let mut empty = EventScanner::new(limits);
            let end = empty.finish();
            let w = *empty.warnings();
            let want = direct.finish("s", &end, &w, 40).to_json();
            assert!(want.contains("\"duration_events\""));
            assert_eq!(
                batched.finish("s", &end, &w, 40).to_json(),
                want,
                "{limits:?}"
            );
        }
    }

    /// A small deterministic generator: `rng(n)` is uniform in `0..n`.
    fn flinch_core_rng(seed: u64) -> impl FnMut(usize) -> usize {
        let mut state = seed;
        move |n| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % n as u64) as usize
        }
    }
}
