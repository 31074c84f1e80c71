//! Streamed output of a recording-level analysis, so that memory does not grow with the number
//! of marks and spans.
//!
//! The result lists marks, then spans in start order, and each span's verdict needs every GPU's
//! idle floor, known only at the end of the file. The analyze job ([`super::AnalyzeJob`]), whose
//! driver can read its input more than once (a file, or a `.gz` decoded again), therefore makes
//! up to three passes with the same options:
//!
//! 1. [`WindowAnalyzer::planning`]: the whole analysis, holding at most `hold` marks and `hold`
//!    finished spans. When either list grows past `hold`, that list is dropped and the result
//!    says so ([`Planned`]); the spans that stayed open longer than `hold` later spans (a pair
//!    around much of the file) are kept aside with the list of spans never closed, in a
//!    [`SpanPlan`].
//! 2. [`WindowAnalyzer::marks_pass`]: the marks again, handed out as they are read
//!    ([`WindowAnalyzer::pop_mark`]).
//! 3. [`WindowAnalyzer::spans_pass`]: the spans again, each result handed out
//!    ([`WindowAnalyzer::pop_span`]) as soon as it and every span before it are decided, with
//!    the GPU figures of pass 1. At most about `hold` results wait for an earlier span.
//!
//! The marks and spans handed out are the same values, in the same order, as the lists of a
//! single-pass [`WindowAnalyzer::new`] analysis (tests: `streamed_passes_*`, `job_tests`).
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

use super::{ActiveWindow, GpuSummary, MarkInfo, RecordingAnalysis, WindowResult};

/// How marks and span results leave the engine.
pub(super) enum Mode {
    /// Held until the end (one pass: the page, and small files natively).
    Collect,
    /// Pass 1 of a streamed analysis.
    Plan(Planning),
    /// Pass 2: marks only, handed out as read.
    Marks(VecDeque<MarkInfo>),
    /// Pass 3: span results, handed out in order.
    Spans(SpanStream),
}

/// Pass-1 state.
pub(super) struct Planning {
    /// Marks and finished spans held at most; also the age (in spans created since) past which
    /// a finished span is kept aside for pass 3.
    pub(super) hold: usize,
    /// More than `hold` marks: the list was dropped.
    pub(super) marks_over: bool,
    /// More than `hold` finished spans: the list was dropped.
    pub(super) spans_over: bool,
    /// Spans that finished more than `hold` spans after their creation, by id.
    pub(super) early: BTreeMap<u64, ActiveWindow>,
}

/// What pass 3 needs from pass 1.
pub struct SpanPlan {
    /// Results of the spans finished long after their creation, by id.
    pub(super) early: BTreeMap<u64, WindowResult>,
    /// Spans never closed (not reported), by id.
    pub(super) never_closed: BTreeSet<u64>,
    /// Each GPU's whole-recording figures (idle floor etc.).
    pub(super) gpus: Vec<GpuSummary>,
}

/// Pass-3 state.
pub(super) struct SpanStream {
    pub(super) plan: SpanPlan,
    /// Reported spans in creation order: `None` until decided.
    pub(super) slots: VecDeque<(u64, Option<WindowResult>)>,
}

impl SpanStream {
    /// Sets the result of span `id`.
    pub(super) fn decide(&mut self, id: u64, r: WindowResult) {
        if let Ok(i) = self.slots.binary_search_by_key(&id, |s| s.0) {
            self.slots[i].1 = Some(r);
        }
    }

    /// The next result in order, once decided.
    pub(super) fn pop(&mut self) -> Option<WindowResult> {
        if self.slots.front().is_some_and(|s| s.1.is_some()) {
            return self.slots.pop_front().and_then(|s| s.1);
        }
        None
    }
}

/// The result of pass 1.
pub struct Planned {
    /// The analysis; `marks` is empty when `marks_streamed`, `spans` when `spans` is `Some`.
    pub analysis: RecordingAnalysis,
    /// The marks were more than `hold`: read them with [`super::WindowAnalyzer::marks_pass`].
    pub marks_streamed: bool,
    /// The finished spans were more than `hold`: read them with
    /// [`super::WindowAnalyzer::spans_pass`] and this plan.
    pub spans: Option<SpanPlan>,
}
