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
use alloc::vec::Vec;

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
            let name = (k.name.1 != u32::MAX)
                .then(|| &self.text[k.name.0 as usize..(k.name.0 + k.name.1) as usize]);
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
            });
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

/// The first pass (see the module docs).
#[derive(Clone, Debug)]
pub struct FirstPass {
    finder: GapFinder,
    /// The kept spans; `None` when not asked for, or past the caps.
    kept: Option<KeptAnnotations>,
    base_time_ns: Option<i64>,
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
}

impl FirstPass {
    /// A first pass; with `keep_annotations`, it copies the annotation spans (bounded).
    pub fn new(gaps: GapOptions, keep_annotations: bool) -> FirstPass {
        FirstPass {
            finder: GapFinder::new(gaps),
            kept: keep_annotations.then(KeptAnnotations::default),
            base_time_ns: None,
        }
    }

    /// Adds one event: [`FirstPass::add_time_span`] of its [`time_span_ns`], and
    /// [`FirstPass::add_relevant`] when it [`is_relevant`].
    #[inline]
    pub fn add(&mut self, e: &Event<'_>) {
        self.finder.add_time_span(time_span_ns(e));
        if is_relevant(e) {
            self.add_relevant(e);
        }
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

    /// Sets `baseTimeNanoseconds` as the scanner read it.
    pub fn set_base_time_ns(&mut self, base_time_ns: Option<i64>) {
        self.base_time_ns = base_time_ns;
    }

    /// What the pass found.
    pub fn finish(self) -> FirstPassResult {
        FirstPassResult {
            found: self.finder.finish(),
            base_time_ns: self.base_time_ns,
            annotations: self.kept,
        }
    }
}
