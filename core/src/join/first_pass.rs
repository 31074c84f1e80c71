//! The join's first pass as one value, for a caller that sees the trace's events once for
//! another purpose (native `trace` feeds it from the summary's own scan): [`GapFinder`], the
//! trace's time span, `baseTimeNanoseconds`, and, with a recording, a bounded copy of the
//! annotation spans that the energy per annotation needs.
//!
//! When the trace has no pause to list, the second pass has only those spans to read: the
//! caller replays them ([`FirstPassResult::annotations`]) instead of reading the trace again.
//! The replay gives [`JoinPass`](super::JoinPass) the same annotation events in the same order,
//! so the result is the one a second pass over the file gives. Past the caps the copy is
//! dropped, and the caller reads the trace again.
//!
//! When there is a pause to list, the second pass needs the host events that overlap one, and
//! which pauses are listed is known only at the end. With [`FirstPass::track_ranges`] the pass
//! also remembers, for each byte range of the trace that the caller names (a batch of events, a
//! segment), where a scanner can start again and the time hull of its host events
//! ([`ByteRanges`]). [`FirstPassResult::plan_second_pass`] then says which ranges to scan
//! again (those whose hull meets a listed pause) and which to replay from the annotation copy:
//! the same events reach [`JoinPass`](super::JoinPass) in the same order as in a full second
//! read, so the result is the same (ranges it skips hold no event that changes it).
use alloc::vec::Vec;
use core::ops::Range;

use super::counters::{CounterSample, TraceCounters, counter_sample};
use super::gaps::{GapFinder, GapOptions, GapsFound, is_busy_category, span_ns, time_span_ns};
use crate::json::{Event, IdField, NumField};

/// Annotation spans kept at most (48 bytes each: 6 MiB).
pub const MAX_KEPT_SPANS: usize = 1 << 17;
/// Bytes of kept annotation names at most.
pub const MAX_KEPT_NAME_BYTES: usize = 4 << 20;

const USER_ANNOTATION: &[u8] = b"user_annotation";
const GPU_USER_ANNOTATION: &[u8] = b"gpu_user_annotation";

/// Whether the first pass reads more of `e` than its time span ([`time_span_ns`]): a complete
/// event of a busy GPU category or an annotation.
#[inline]
pub fn is_relevant(e: &Event<'_>) -> bool {
    e.ph == b"X"
        && e.cat.is_some_and(|c| {
            is_busy_category(Some(c)) || c == USER_ANNOTATION || c == GPU_USER_ANNOTATION
        })
}

/// One kept annotation span; its name is `text[name.0..name.0 + name.1]` (`None` when the
/// event had none, `name.1 == u32::MAX`).
#[derive(Clone, Copy, Debug)]
struct Kept {
    gpu: bool,
    name: (u32, u32),
    pid: IdField,
    ts_ns: i64,
    dur_ns: i64,
}

/// The annotation spans of the trace, in order (`user_annotation` and `gpu_user_annotation`
/// complete events with a span), with what the energy per annotation reads of them.
#[derive(Clone, Debug, Default)]
pub struct KeptAnnotations {
    spans: Vec<Kept>,
    text: Vec<u8>,
}

impl KeptAnnotations {
    /// Gives each kept span, in trace order, as an event (`ph`, `cat`, `name`, `ts`, `dur` and
    /// `pid`; no `tid`, which the join does not read of annotations).
    pub fn replay(&self, mut f: impl FnMut(&Event<'_>)) {
        for k in &self.spans {
            replay_one(k, &self.text, &mut f);
        }
    }

    /// [`replay`](Self::replay) of the spans `range` (indices in trace order) only.
    pub fn replay_range(&self, range: Range<usize>, mut f: impl FnMut(&Event<'_>)) {
        let end = range.end.min(self.spans.len());
        let start = range.start.min(end);
        let text = &self.text;
        for k in &self.spans[start..end] {
            replay_one(k, text, &mut f);
        }
    }

    /// Spans kept.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// No span kept.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

fn replay_one(k: &Kept, text: &[u8], f: &mut impl FnMut(&Event<'_>)) {
    let name =
        (k.name.1 != u32::MAX).then(|| &text[k.name.0 as usize..(k.name.0 + k.name.1) as usize]);
    f(&Event {
        ph: b"X",
        cat: Some(if k.gpu {
            GPU_USER_ANNOTATION
        } else {
            USER_ANNOTATION
        }),
        name,
        ts_ns: NumField::Ns(k.ts_ns),
        dur_ns: NumField::Ns(k.dur_ns),
        pid: k.pid,
        tid: IdField::Missing,
        id: IdField::Missing,
        scope: IdField::Missing,
        quoted_times: 0,
        arg: crate::json::ArgValue::Missing,
    });
}

/// The span a host event gives a range's hull: `[ts, ts + dur)` of a complete event of positive
/// length that is not of a busy GPU category, the events whose overlap with a pause the second
/// pass counts ([`PauseHost`](super::PauseHost)).
#[inline]
pub fn host_span_ns(e: &Event<'_>) -> Option<(i64, i64)> {
    span_ns(e).filter(|&(s, t)| t > s && !is_busy_category(e.cat))
}

/// Byte ranges kept at most; past that, neighbours are merged in pairs and later ranges are
/// made twice as long (so the list stays under 1.8 MiB, and a range only gets coarser).
pub const MAX_RANGES: usize = 1 << 15;
/// Events per range of [`FirstPass::add_at`] (before any coarsening).
pub const RANGE_EVENTS: u32 = 512;

/// Where a second scan of a byte range starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// At the document's first byte, with a new scanner.
    Start,
    /// At an element boundary of the events array that the first pass verified
    /// ([`EventScanner::resume_at`](crate::json::EventScanner::resume_at) there).
    Boundary(u64),
    /// Right after an event that ends at this offset: its `,` and the whitespace around it
    /// come first, then an element boundary.
    AfterEvent(u64),
}

/// A byte range of the trace as the first pass read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// Where to start scanning it again.
    pub resume: Resume,
    /// The offset just past its last event.
    pub end: u64,
    /// The earliest start and latest end of its host events ([`host_span_ns`]), trace ns.
    pub host_hull_ns: Option<(i64, i64)>,
    /// Its first kept annotation span (an index into [`KeptAnnotations`]).
    pub kept_start: u32,
    /// Events the caller added with [`FirstPass::add_at`] since the range began.
    events: u32,
}

/// The byte ranges of the trace in order, bounded by [`MAX_RANGES`] (see [`FirstPass::track_ranges`]).
#[derive(Clone, Debug, Default)]
pub struct ByteRanges {
    ranges: Vec<ByteRange>,
    /// A new range begins at every `stride`-th call of [`FirstPass::begin_range`] (doubles at
    /// each coarsening).
    stride: u32,
    calls: u32,
    /// Times the list was coarsened.
    pub coarsened: u32,
    /// [`MAX_RANGES`], or less in tests.
    max: usize,
}

impl ByteRanges {
    /// The ranges, in trace order.
    pub fn as_slice(&self) -> &[ByteRange] {
        &self.ranges
    }

    /// Begins a range at `resume`; unless `always`, only at every `stride`-th call.
    fn begin(&mut self, resume: Resume, kept_start: u32, always: bool) {
        self.calls = self.calls.wrapping_add(1);
        if !always && !self.ranges.is_empty() && !self.calls.is_multiple_of(self.stride) {
            return;
        }
        if self.ranges.len() >= self.max {
            // Merge neighbours: scanning on from the first's start reads through the second.
            let n = self.ranges.len();
            for i in 0..n / 2 {
                let (a, b) = (self.ranges[2 * i], self.ranges[2 * i + 1]);
                self.ranges[i] = ByteRange {
                    resume: a.resume,
                    end: b.end,
                    host_hull_ns: hull(a.host_hull_ns, b.host_hull_ns),
                    kept_start: a.kept_start,
                    events: a.events.saturating_add(b.events),
                };
            }
            if n % 2 == 1 {
                self.ranges[n / 2] = self.ranges[n - 1];
            }
            self.ranges.truncate(n.div_ceil(2));
            self.stride = self.stride.saturating_mul(2);
            self.coarsened += 1;
        }
        let end = match resume {
            Resume::Start => 0,
            Resume::Boundary(o) | Resume::AfterEvent(o) => o,
        };
        self.ranges.push(ByteRange {
            resume,
            end,
            host_hull_ns: None,
            kept_start,
            events: 0,
        });
    }
}

fn hull(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

/// One step of a second pass planned by [`FirstPassResult::plan_second_pass`], in trace order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecondPassStep {
    /// Scan the trace from `resume` up to byte `end` (the end of an event) and give
    /// [`JoinPass`](super::JoinPass) every event.
    Scan {
        /// Where the scanner starts.
        resume: Resume,
        /// The offset just past the last event to read.
        end: u64,
    },
    /// Give it these kept annotation spans ([`KeptAnnotations::replay_range`]).
    Replay(Range<usize>),
}

/// The first pass (see the module docs).
#[derive(Clone, Debug)]
pub struct FirstPass {
    finder: GapFinder,
    /// The kept spans; `None` when not asked for, or past the caps.
    kept: Option<KeptAnnotations>,
    base_time_ns: Option<i64>,
    base_time_problem: Option<crate::json::BaseTimeProblem>,
    /// The byte ranges, when tracked.
    ranges: Option<ByteRanges>,
    /// The trace's power and utilization counters.
    counters: TraceCounters,
}

/// What the first pass found.
#[derive(Clone, Debug)]
pub struct FirstPassResult {
    /// The gaps and the trace's time span.
    pub found: GapsFound,
    /// `baseTimeNanoseconds`, as the scanner read it.
    pub base_time_ns: Option<i64>,
    /// The annotation spans, when they were asked for and fit the caps.
    pub annotations: Option<KeptAnnotations>,
    /// The byte ranges, when tracked ([`FirstPass::track_ranges`]).
    pub ranges: Option<ByteRanges>,
    /// The trace's power and utilization counters, when it has any ([`super::counters`]).
    pub counters: Option<TraceCounters>,
}

impl FirstPassResult {
    /// The pauses a second pass lists, `[start, end)` in trace ns, sorted by start: the longest
    /// `max_pauses_per_device` of each device (as [`PauseHost`](super::PauseHost) takes them).
    pub fn listed_pauses_ns(&self, max_pauses_per_device: usize) -> Vec<(i64, i64)> {
        let mut p: Vec<(i64, i64)> = self
            .found
            .devices
            .iter()
            .flat_map(|d| d.gaps.iter().take(max_pauses_per_device))
            .map(|g| (g.start_ns, g.end_ns))
            .collect();
        p.sort_unstable();
        p
    }

    /// The second pass as steps (see the module docs): scan again the ranges whose host hull
    /// meets a listed pause (neighbours joined into one scan) and, with `annotations` (a
    /// recording is joined), replay the kept annotation spans of the others. `None` when the
    /// ranges were not tracked, or `annotations` is asked for and the copy was dropped: then
    /// only a full second read gives the result.
    pub fn plan_second_pass(
        &self,
        max_pauses_per_device: usize,
        annotations: bool,
    ) -> Option<Vec<SecondPassStep>> {
        let ranges = self.ranges.as_ref()?.as_slice();
        if ranges.is_empty() {
            // Nothing was read with offsets.
            return None;
        }
        let kept_len = match (annotations, &self.annotations) {
            (false, _) => None,
            (true, Some(k)) => Some(k.len()),
            (true, None) => return None,
        };
        let pauses = self.listed_pauses_ns(max_pauses_per_device);
        // The latest end of the pauses sorted before each index: a hull [a, b] meets one iff
        // some pause starting before b ends after a.
        let mut max_end = Vec::with_capacity(pauses.len());
        let mut m = i64::MIN;
        for p in &pauses {
            m = m.max(p.1);
            max_end.push(m);
        }
        let meets = |h: Option<(i64, i64)>| {
            h.is_some_and(|(a, b)| {
                let k = pauses.partition_point(|p| p.0 < b);
                k > 0 && max_end[k - 1] > a
            })
        };
        let mut steps = Vec::new();
        let mut i = 0;
        while i < ranges.len() {
            let scan = meets(ranges[i].host_hull_ns);
            let mut j = i + 1;
            while j < ranges.len() && meets(ranges[j].host_hull_ns) == scan {
                j += 1;
            }
            if scan {
                steps.push(SecondPassStep::Scan {
                    resume: ranges[i].resume,
                    end: ranges[j - 1].end,
                });
            } else if let Some(len) = kept_len {
                let from = ranges[i].kept_start as usize;
                let to = ranges.get(j).map_or(len, |r| r.kept_start as usize);
                if to > from {
                    steps.push(SecondPassStep::Replay(from..to));
                }
            }
            i = j;
        }
        Some(steps)
    }
}

impl FirstPass {
    /// A first pass; with `keep_annotations`, it copies the annotation spans (bounded).
    pub fn new(gaps: GapOptions, keep_annotations: bool) -> FirstPass {
        FirstPass {
            finder: GapFinder::new(gaps),
            kept: keep_annotations.then(KeptAnnotations::default),
            base_time_ns: None,
            base_time_problem: None,
            ranges: None,
            counters: TraceCounters::default(),
        }
    }

    /// Also remember byte ranges of the trace for a second pass that reads only some of them
    /// (see the module docs): the caller names each range's start with
    /// [`begin_range`](Self::begin_range) (or lets [`add_at`](Self::add_at) do it) and its end
    /// with [`set_range_end`](Self::set_range_end). Bounded by [`MAX_RANGES`].
    pub fn track_ranges(&mut self) {
        self.track_ranges_capped(MAX_RANGES);
    }

    /// [`track_ranges`](Self::track_ranges) with at most `max_ranges` ranges (at least 2)
    /// before they are coarsened: for tests of the coarsening.
    pub fn track_ranges_capped(&mut self, max_ranges: usize) {
        let max = max_ranges.clamp(2, MAX_RANGES);
        // Reserved once (pages are touched only as ranges are added): no allocation per event.
        self.ranges = Some(ByteRanges {
            ranges: Vec::with_capacity(max),
            stride: 1,
            max,
            ..ByteRanges::default()
        });
    }

    /// A new byte range starts at `resume` (when tracked; past [`MAX_RANGES`] the current one
    /// may go on instead). The events added next belong to it.
    pub fn begin_range(&mut self, resume: Resume) {
        let kept = self.kept.as_ref().map_or(0, |k| k.spans.len() as u32);
        if let Some(r) = self.ranges.as_mut() {
            r.begin(resume, kept, false);
        }
    }

    /// The current range's last event ends at byte `end`.
    #[inline]
    pub fn set_range_end(&mut self, end: u64) {
        if let Some(r) = self.ranges.as_mut().and_then(|r| r.ranges.last_mut()) {
            r.end = end;
        }
    }

    /// Widens the current range's host hull by `hull` (the [`host_span_ns`] of some of its
    /// events, merged).
    #[inline]
    pub fn add_host_hull(&mut self, h: Option<(i64, i64)>) {
        if h.is_some()
            && let Some(r) = self.ranges.as_mut().and_then(|r| r.ranges.last_mut())
        {
            r.host_hull_ns = hull(r.host_hull_ns, h);
        }
    }

    /// [`add`](Self::add) for a caller that scans the trace itself: `end` is the offset just
    /// past the event (the scanner's bytes consumed). Begins a range at the first event and
    /// after every [`RANGE_EVENTS`] events, right after the one before.
    pub fn add_at(&mut self, e: &Event<'_>, end: u64) {
        if let Some(r) = self.ranges.as_mut() {
            let kept = self.kept.as_ref().map_or(0, |k| k.spans.len() as u32);
            match r.ranges.last() {
                None => r.begin(Resume::Start, kept, true),
                Some(last) if last.events >= RANGE_EVENTS.saturating_mul(r.stride) => {
                    let after = last.end;
                    r.begin(Resume::AfterEvent(after), kept, true);
                }
                Some(_) => {}
            }
        }
        self.add_event(e);
        if let Some(r) = self.ranges.as_mut().and_then(|r| r.ranges.last_mut()) {
            r.events += 1;
            r.end = end;
        }
    }

    /// Adds one event: [`FirstPass::add_time_span`] of its [`time_span_ns`], and
    /// [`FirstPass::add_relevant`] when it [`is_relevant`].
    /// With ranges tracked, an event added here has no byte offset, so the ranges are dropped
    /// (a second pass then reads the whole trace): use [`add_at`](Self::add_at).
    #[inline]
    pub fn add(&mut self, e: &Event<'_>) {
        self.ranges = None;
        self.add_event(e);
    }

    #[inline]
    fn add_event(&mut self, e: &Event<'_>) {
        self.finder.add_time_span(time_span_ns(e));
        if self.ranges.is_some() {
            self.add_host_hull(host_span_ns(e));
        }
        if is_relevant(e) {
            self.add_relevant(e);
        } else if let Some(c) = counter_sample(e) {
            self.counters.add(&c);
        }
    }

    /// Adds a power or utilization counter sample ([`counter_sample`]), for a caller that
    /// copied it out of the event (the batches of the scan threads).
    #[inline]
    pub fn add_counter(&mut self, c: &CounterSample) {
        self.counters.add(c);
    }

    /// Widens the trace's time span (spans of several events may be merged first: it is a min
    /// and a max).
    #[inline]
    pub fn add_time_span(&mut self, span: Option<(i64, i64)>) {
        self.finder.add_time_span(span);
    }

    /// Adds an event that [`is_relevant`], apart from its time span; in trace order. Only
    /// `ph`, `cat`, `name`, `ts`, `dur` and `pid` are read.
    pub fn add_relevant(&mut self, e: &Event<'_>) {
        self.finder.add_busy(e);
        let Some(kept) = self.kept.as_mut() else {
            return;
        };
        let gpu = match e.cat {
            Some(GPU_USER_ANNOTATION) => true,
            Some(USER_ANNOTATION) => false,
            _ => return,
        };
        let Some(_) = span_ns(e) else {
            return;
        };
        let (NumField::Ns(ts_ns), NumField::Ns(dur_ns)) = (e.ts_ns, e.dur_ns) else {
            return;
        };
        let name_len = e.name.map_or(0, <[u8]>::len);
        if kept.spans.len() >= MAX_KEPT_SPANS || kept.text.len() + name_len > MAX_KEPT_NAME_BYTES {
            self.kept = None;
            return;
        }
        let name = match e.name {
            Some(n) => {
                let start = kept.text.len() as u32;
                kept.text.extend_from_slice(n);
                (start, n.len() as u32)
            }
            None => (0, u32::MAX),
        };
        kept.spans.push(Kept {
            gpu,
            name,
            pid: e.pid,
            ts_ns,
            dur_ns,
        });
    }

    /// Sets `baseTimeNanoseconds` as the scanner read it (`EventScanner::base_time`, or the
    /// integer alone).
    pub fn set_base_time_ns(&mut self, base: impl Into<crate::json::BaseTime>) {
        let base = base.into();
        self.base_time_ns = base.ns;
        self.base_time_problem = base.problem;
    }

    /// Whether a power or utilization counter was seen so far, used or not.
    pub fn counters_seen(&self) -> bool {
        self.counters.seen()
    }

    /// What the pass found.
    pub fn finish(self) -> FirstPassResult {
        let mut found = self.finder.finish();
        found.base_time_problem = self.base_time_problem;
        FirstPassResult {
            found,
            base_time_ns: self.base_time_ns,
            annotations: self.kept,
            ranges: self.ranges,
            counters: self.counters.seen().then_some(self.counters),
        }
    }
}

#[cfg(test)]
mod tests;
