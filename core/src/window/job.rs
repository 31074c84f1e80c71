//! The `analyze` job: a trace.csv's mark windows, spans and verdicts, driven through the one job
//! protocol ([`crate::job`]).
//!
//! An [`AnalyzeJob`] needs its file once ([`Need::File`]); its bytes go in with [`Job::write`]
//! (plain, or gzip, told by its magic bytes), or, from a driver that splits and parses the CSV
//! on another thread, as [`RowBatch`]es ([`AnalyzeJob::push_batch`]). [`Job::finish`] gives an
//! [`Analyzed`] result. The first pass holds at most `hold` marks and `hold` finished spans
//! (see [`stream`](super::stream)); when there were more, the result's renderings
//! ([`Analyzed::json`], [`Analyzed::for_each_span`]) read them again in further passes, each an
//! `AnalyzeJob` the driver runs through [`Reread`], and hand each mark or span on as it is
//! decided, so that memory does not grow with their number. Which passes run, and what each
//! gives, is decided here; the driver only answers with the file's bytes.
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::cell::RefCell;
use core::fmt;
use core::ops::ControlFlow;

use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

use super::batch::RowBatch;
use super::result::RecordingView;
use super::stream::{Planned, SpanPlan};
use super::{MarkInfo, RecordingAnalysis, SelectionError, WindowAnalyzer, WindowOptions};
use super::{WindowResult, WindowSelect};
use crate::gzip::{GzError, MaybeGz};
use crate::job::{Job, Need};

/// Marks and finished spans a first pass holds by default: past that many, they are read in
/// further passes. A few MiB of results at most.
pub const FIRST_PASS_HOLD: usize = 4096;

/// Why an [`AnalyzeJob`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalyzeJobError {
    /// The gzip input is corrupt, or was cut inside a member ([`GzError::Truncated`]); the
    /// error carries the byte offset in the compressed file.
    Gzip(GzError),
    /// Reading the file failed: the driver's message ([`Job::read_error`]).
    Read(String),
    /// A call the job did not ask for (its [`Job::need`] said otherwise): which one.
    NotAsked(&'static str),
}

impl fmt::Display for AnalyzeJobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeJobError::Gzip(e) => e.fmt(f),
            AnalyzeJobError::Read(message) => f.write_str(message),
            AnalyzeJobError::NotAsked(what) => {
                write!(f, "analyze: {what} was not asked for at this point")
            }
        }
    }
}

impl core::error::Error for AnalyzeJobError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            AnalyzeJobError::Gzip(e) => Some(e),
            _ => None,
        }
    }
}

/// Which pass a job makes.
enum Pass {
    /// The whole analysis, holding at most `hold` marks and spans.
    First,
    /// Marks only, handed on as read.
    Marks,
    /// Span results, handed on in start order.
    Spans,
}

/// Where a job stands.
enum Stage {
    /// Taking the file's bytes or batches.
    Reading(Box<WindowAnalyzer>),
    /// A first pass, ended.
    Planned(Box<Planned>),
    /// A further pass, ended: what it decided last is still to be handed on.
    Streamed(Box<WindowAnalyzer>),
    Failed(AnalyzeJobError),
    /// The result was taken.
    Finished,
}

/// The `analyze` job over one trace.csv (see the [module](self) documentation).
pub struct AnalyzeJob {
    /// The file, as the job was given it.
    name: String,
    pass: Pass,
    /// The file layer: plain, or gzip inflated by the core decoder.
    gz: MaybeGz,
    stage: Stage,
    /// The driver's own warning about the input (e.g. trailing bytes after the last gzip member
    /// it inflated), listed after the analysis's.
    input_warning: Option<String>,
    read_error: Option<String>,
    /// Kept for the further passes, which need the same options.
    opts: WindowOptions,
}

impl AnalyzeJob {
    /// The first pass over `name` with `opts`, holding at most `hold` marks and `hold` finished
    /// spans ([`FIRST_PASS_HOLD`] unless a test wants the further passes on a small file).
    pub fn new(name: &str, opts: WindowOptions, hold: usize) -> AnalyzeJob {
        let analyzer = WindowAnalyzer::planning(opts.clone(), hold);
        AnalyzeJob::with(name, Pass::First, analyzer, opts)
    }

    /// One pass that holds every mark and span (within the options' limits), over bytes a
    /// driver already decoded: the route of a caller that cannot give the file again (the page's
    /// [`Analyzer`](crate::analyzer::Analyzer), which inflated the bytes itself). Its result never
    /// [`rereads`](Analyzed::rereads).
    pub fn one_pass_decoded(name: &str, opts: WindowOptions) -> AnalyzeJob {
        let analyzer = WindowAnalyzer::new(opts.clone());
        let mut job = AnalyzeJob::with(name, Pass::First, analyzer, opts);
        job.gz = MaybeGz::plain();
        job
    }

    fn with(name: &str, pass: Pass, analyzer: WindowAnalyzer, opts: WindowOptions) -> AnalyzeJob {
        AnalyzeJob {
            name: name.into(),
            pass,
            gz: MaybeGz::new(),
            stage: Stage::Reading(Box::new(analyzer)),
            input_warning: None,
            read_error: None,
            opts,
        }
    }

    /// Whether only the reference's figures are computed: the `full` of
    /// [`RowBatch::push_event`] is its negation.
    pub fn reference_only(&self) -> bool {
        self.opts.reference_only
    }

    /// Adds a batch of rows parsed on another thread from this job's file (instead of its
    /// bytes; one or the other for a whole pass).
    ///
    /// # Errors
    /// The job is not reading ([`Need::Done`]).
    pub fn push_batch(&mut self, batch: &RowBatch) -> Result<(), AnalyzeJobError> {
        match &mut self.stage {
            Stage::Reading(a) => {
                a.push_batch(batch);
                Ok(())
            }
            Stage::Failed(e) => Err(e.clone()),
            _ => Err(AnalyzeJobError::NotAsked("a batch of rows")),
        }
    }

    /// A warning of the driver's about the input, for the result's `warnings` (after the
    /// analysis's own): e.g. bytes after the last gzip member it inflated, ignored.
    pub fn note_input_warning(&mut self, warning: &str) {
        self.input_warning = Some(warning.into());
    }

    fn analyzer(&mut self) -> Option<&mut WindowAnalyzer> {
        match &mut self.stage {
            Stage::Reading(a) | Stage::Streamed(a) => Some(a),
            _ => None,
        }
    }

    fn pop_mark(&mut self) -> Option<MarkInfo> {
        self.analyzer()?.pop_mark()
    }

    fn pop_span(&mut self) -> Option<WindowResult> {
        self.analyzer()?.pop_span()
    }

    fn fail(&mut self, e: AnalyzeJobError) -> AnalyzeJobError {
        self.stage = Stage::Failed(e.clone());
        e
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), AnalyzeJobError> {
        let Stage::Reading(a) = &mut self.stage else {
            return Err(AnalyzeJobError::NotAsked("a write"));
        };
        self.gz
            .write(chunk, |bytes, _| {
                a.write(bytes);
                Ok::<(), GzError>(())
            })
            .map_err(AnalyzeJobError::Gzip)
    }

    fn end_inner(&mut self) -> Result<(), AnalyzeJobError> {
        if let Some(message) = self.read_error.take() {
            return Err(AnalyzeJobError::Read(message));
        }
        let Stage::Reading(mut a) = core::mem::replace(&mut self.stage, Stage::Finished) else {
            return Err(AnalyzeJobError::NotAsked("the end of the file"));
        };
        // A lone first byte held back by the gzip detection is plain content.
        let _ = self.gz.end(|bytes, _| {
            a.write(bytes);
            Ok::<(), GzError>(())
        });
        let mut gzip_warning = None;
        if let Some(decoder) = self.gz.decoder() {
            gzip_warning = decoder
                .trailing_garbage_at()
                .map(crate::analyzer::trailing_garbage_warning);
            decoder.finish().map_err(AnalyzeJobError::Gzip)?;
        }
        self.stage = match self.pass {
            Pass::First => {
                let mut planned = a.end_planned();
                let warnings = &mut planned.analysis.warnings;
                warnings.extend(gzip_warning);
                warnings.extend(self.input_warning.take());
                Stage::Planned(Box::new(planned))
            }
            Pass::Marks | Pass::Spans => {
                a.end_stream();
                Stage::Streamed(a)
            }
        };
        Ok(())
    }
}

impl Job for AnalyzeJob {
    type Output = Analyzed;
    type Error = AnalyzeJobError;

    fn need(&self) -> Need<'_> {
        match self.stage {
            Stage::Reading(_) => Need::File(&self.name),
            _ => Need::Done,
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), AnalyzeJobError> {
        match &self.stage {
            Stage::Reading(_) => self.write_inner(chunk).map_err(|e| self.fail(e)),
            Stage::Failed(e) => Err(e.clone()),
            // A call out of turn leaves the result as it is.
            _ => Err(AnalyzeJobError::NotAsked("a write")),
        }
    }

    fn seek(&mut self, _offset: u64) -> Result<(), AnalyzeJobError> {
        Err(AnalyzeJobError::NotAsked(
            "a seek (the job reads whole files)",
        ))
    }

    fn read_error(&mut self, message: &str) {
        self.read_error = Some(message.to_string());
    }

    fn listing(&mut self, _paths: &mut dyn Iterator<Item = &str>) -> Result<(), AnalyzeJobError> {
        Err(AnalyzeJobError::NotAsked("a folder listing"))
    }

    fn end(&mut self) -> Result<(), AnalyzeJobError> {
        match &self.stage {
            Stage::Reading(_) => self.end_inner().map_err(|e| self.fail(e)),
            Stage::Failed(e) => Err(e.clone()),
            _ => Err(AnalyzeJobError::NotAsked("the end of the file")),
        }
    }

    fn finish(self) -> Result<Analyzed, AnalyzeJobError> {
        match self.stage {
            Stage::Planned(planned) => Ok(Analyzed {
                name: self.name,
                opts: self.opts,
                marks_streamed: planned.marks_streamed,
                spans_streamed: planned.spans.is_some(),
                planned: *planned,
            }),
            Stage::Failed(e) => Err(e),
            _ => Err(AnalyzeJobError::NotAsked(
                "the result (the file is not read to its end)",
            )),
        }
    }
}

/// How the further passes of an [`Analyzed`] result get the file again: the driver's answer to
/// an [`AnalyzeJob`] that needs it ([`Need::File`]).
pub trait Reread {
    /// Why reading failed.
    type Error: fmt::Display;

    /// Drives `pass` through its file from the first byte (its bytes with [`Job::write`], or
    /// batches with [`AnalyzeJob::push_batch`]) and then [`Job::end`], calling `each` after
    /// every chunk or batch so that what the pass decided is handed on; when `each` breaks,
    /// stops reading and returns `Ok`.
    ///
    /// # Errors
    /// The file could not be read, or the pass failed on it.
    fn reread(
        &mut self,
        pass: &mut AnalyzeJob,
        each: &mut dyn FnMut(&mut AnalyzeJob) -> ControlFlow<()>,
    ) -> Result<(), Self::Error>;
}

/// The result of an [`AnalyzeJob`]'s first pass.
pub struct Analyzed {
    name: String,
    opts: WindowOptions,
    planned: Planned,
    marks_streamed: bool,
    spans_streamed: bool,
}

impl Analyzed {
    /// The analysis. Its `marks` are empty when there were more than the first pass held, and
    /// so are its `spans`: [`json`](Self::json) and [`for_each_span`](Self::for_each_span) read
    /// them again.
    pub fn analysis(&self) -> &RecordingAnalysis {
        &self.planned.analysis
    }

    /// The analysis, taken: whole when the result does not [`reread`](Self::rereads) (always
    /// for [`AnalyzeJob::one_pass_decoded`]).
    pub fn into_analysis(self) -> RecordingAnalysis {
        self.planned.analysis
    }

    /// What is wrong with the selected window (its marks missing or out of order), if anything.
    pub fn selection_error(&self) -> Option<SelectionError> {
        self.planned
            .analysis
            .selection
            .as_ref()
            .and_then(|s| s.error())
    }

    /// The selected pair, as asked for.
    pub fn select(&self) -> Option<&WindowSelect> {
        self.opts.select.as_ref()
    }

    /// Whether a rendering reads the file again (the marks or spans were more than the first
    /// pass held).
    pub fn rereads(&self) -> bool {
        self.marks_streamed || self.spans_streamed
    }

    /// The whole result as one serde value: serialized with `serde_json`'s pretty printer, the
    /// bytes of [`RecordingAnalysis::to_json`] of a one-pass analysis. Marks and spans the first
    /// pass did not hold are read again through `input` while they are serialized, each written
    /// as it is decided. Serialize it once: the spans' further pass takes what the first pass
    /// kept for it. A read that fails ends the serialization with its message; the typed error
    /// is then [`AnalysisJson::read_error`].
    pub fn json<'a, R: Reread>(&'a mut self, input: &'a mut R) -> AnalysisJson<'a, R> {
        let plan = self.planned.spans.take();
        let this: &'a Analyzed = self;
        AnalysisJson {
            analyzed: this,
            plan: RefCell::new(plan),
            input: RefCell::new(input),
            error: RefCell::new(None),
        }
    }

    /// Hands each span to `each` in start order: those the first pass held, or, when they were
    /// more, every span again from a further pass through `input`, each as it is decided.
    /// Stops when `each` breaks. Call it once.
    ///
    /// # Errors
    /// The further pass could not read the file.
    pub fn for_each_span<R: Reread>(
        &mut self,
        input: &mut R,
        mut each: impl FnMut(&WindowResult) -> ControlFlow<()>,
    ) -> Result<(), R::Error> {
        let Some(plan) = self.planned.spans.take() else {
            for w in &self.planned.analysis.spans {
                if each(w).is_break() {
                    break;
                }
            }
            return Ok(());
        };
        let mut pass = self.spans_pass(plan);
        let mut stopped = false;
        input.reread(&mut pass, &mut |p| {
            while let Some(w) = p.pop_span() {
                if each(&w).is_break() {
                    stopped = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        })?;
        while !stopped && let Some(w) = pass.pop_span() {
            stopped = each(&w).is_break();
        }
        Ok(())
    }

    fn marks_pass(&self) -> AnalyzeJob {
        let a = WindowAnalyzer::marks_pass(self.opts.clone());
        AnalyzeJob::with(&self.name, Pass::Marks, a, self.opts.clone())
    }

    fn spans_pass(&self, plan: SpanPlan) -> AnalyzeJob {
        let a = WindowAnalyzer::spans_pass(self.opts.clone(), plan);
        AnalyzeJob::with(&self.name, Pass::Spans, a, self.opts.clone())
    }
}

/// [`Analyzed::json`]: the result, with the marks and spans of further passes streamed.
pub struct AnalysisJson<'a, R: Reread> {
    analyzed: &'a Analyzed,
    plan: RefCell<Option<SpanPlan>>,
    input: RefCell<&'a mut R>,
    error: RefCell<Option<R::Error>>,
}

impl<R: Reread> AnalysisJson<'_, R> {
    /// Why a further pass could not read the file, after a serialization that failed on it.
    pub fn read_error(self) -> Option<R::Error> {
        self.error.into_inner()
    }

    /// Serializes, as a sequence, what a further pass hands on (`pop`) after each chunk.
    fn stream<S: Serializer, T: Serialize>(
        &self,
        s: S,
        mut pass: AnalyzeJob,
        pop: fn(&mut AnalyzeJob) -> Option<T>,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        let mut failed = None;
        let read = self.input.borrow_mut().reread(&mut pass, &mut |p| {
            while let Some(item) = pop(p) {
                if let Err(e) = seq.serialize_element(&item) {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if let Err(e) = read {
            let message = e.to_string();
            *self.error.borrow_mut() = Some(e);
            return Err(S::Error::custom(message));
        }
        if pass.need() != Need::Done {
            return Err(S::Error::custom(
                "analyze: a further pass did not read its file to the end",
            ));
        }
        while let Some(item) = pop(&mut pass) {
            seq.serialize_element(&item)?;
        }
        seq.end()
    }
}

/// The `marks` of an [`AnalysisJson`].
struct Marks<'b, 'a, R: Reread>(&'b AnalysisJson<'a, R>);

impl<R: Reread> Serialize for Marks<'_, '_, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0.analyzed;
        if !a.marks_streamed {
            return a.planned.analysis.marks.serialize(s);
        }
        self.0.stream(s, a.marks_pass(), AnalyzeJob::pop_mark)
    }
}

/// The `spans` of an [`AnalysisJson`].
struct Spans<'b, 'a, R: Reread>(&'b AnalysisJson<'a, R>);

impl<R: Reread> Serialize for Spans<'_, '_, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0.analyzed;
        if !a.spans_streamed {
            return a.planned.analysis.spans.serialize(s);
        }
        let plan = self.0.plan.borrow_mut().take().ok_or_else(|| {
            S::Error::custom("analyze: the result was serialized twice (its spans are read once)")
        })?;
        self.0.stream(s, a.spans_pass(plan), AnalyzeJob::pop_span)
    }
}

impl<R: Reread> Serialize for AnalysisJson<'_, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RecordingView::new(&self.analyzed.planned.analysis, Marks(self), Spans(self)).serialize(s)
    }
}
