//! The diff job: inputs A then B, each a trace (read by a [`TraceJob`] that lists every op, with
//! the join's first pass for the pauses, and its recording when one is given) or a summary
//! (folded by a [`MergeJob`]), then the comparison. Driven through [`crate::job`]:
//!
//! - [`Need::File`]`(`[`TELEMETRY_A`]`)` first when A has a recording, then [`Need::File`]`(`[`A`]`)`,
//!   and [`Need::Ranges`] where A's trace job wants a part of it again; the same for B;
//! - the kind of each input is told from its first bytes ([`input_kind`](super::input_kind));
//!   a driver that reads the file itself (the std driver's scan threads) decides it with the
//!   same function and, for a trace, takes the trace job ([`DiffJob::start_trace`]) to drive it
//!   through its own fast methods until it needs nothing more.
//!
//! A side with a recording must be a trace (the join needs its clock), and a trace that ends
//! early (a cut `.gz`) is refused: a diff of a partial run would report its missing part as a
//! speed-up.
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::compare::{CompareOptions, DiffResult, compare};
use super::kind::{InputKind, Sniffer};
use super::side::Side;
use crate::Limits;
use crate::gzip::{GzError, MaybeGz};
use crate::job::{Job, Need};
use crate::join::{JoinOptions, RecordingOptions};
use crate::merge::{MergeJob, MergeJobError};
use crate::steps::{PatternError, StepPattern};
use crate::trace_job::{
    JoinSetup, RECORDING, RecordingSource, TRACE, TraceJob, TraceJobError, TraceJobOptions,
};

/// The name [`Need::File`] gives input A.
pub const A: &str = "a";
/// The name [`Need::File`] gives input B.
pub const B: &str = "b";
/// The name [`Need::File`] gives A's recording (trace.csv).
pub const TELEMETRY_A: &str = "a.telemetry";
/// The name [`Need::File`] gives B's recording.
pub const TELEMETRY_B: &str = "b.telemetry";

/// Stored bytes held while an input's kind is undecided (then a trace).
const SNIFF_STORED_BYTES: usize = 1 << 20;

/// What a [`DiffJob`] computes.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// The names the errors and the result give A and B (the files as named).
    pub sources: [String; 2],
    /// Each trace's summary bounds.
    pub limits: Limits,
    /// The join of each trace (its minimum pause; nothing is listed, only counted).
    pub join: JoinOptions,
    /// A's and B's recordings, if any.
    pub recordings: [Option<RecordingOptions>; 2],
    /// The comparison.
    pub compare: CompareOptions,
    /// `--steps`: the steps of both traces compared, named by this pattern (`--step-name`;
    /// [`StepPattern::default`] is `ProfilerStep#<N>`). `None`: no `steps` section.
    pub steps: Option<StepPattern>,
}

impl DiffOptions {
    /// A and B named `a` and `b`, with the defaults (native limits, pauses of 100 ms, top 40,
    /// threshold 1 %), no recordings.
    pub fn new(a: String, b: String) -> DiffOptions {
        DiffOptions {
            sources: [a, b],
            limits: Limits::NATIVE,
            join: JoinOptions::default(),
            recordings: [None, None],
            compare: CompareOptions::default(),
            steps: None,
        }
    }

    /// The steps compared, as the CLI's `--steps` and `--step-name PATTERN` (a pattern implies
    /// the steps) and the page's `"steps"` / `"step_name"` options.
    ///
    /// # Errors
    /// A pattern [`StepPattern::parse`] refuses.
    pub fn set_steps(&mut self, steps: bool, step_name: Option<&str>) -> Result<(), PatternError> {
        self.steps = match step_name {
            Some(text) => Some(StepPattern::parse(text)?),
            None => steps.then(StepPattern::default),
        };
        Ok(())
    }
}

/// Why a [`DiffJob`] failed, naming the input.
#[derive(Clone, Debug)]
pub enum DiffError {
    /// A trace could not be read (its offset in the trace job's error).
    Trace {
        /// The input as named.
        source: String,
        /// The trace job's error.
        error: TraceJobError,
    },
    /// A summary was refused.
    Summary(MergeJobError),
    /// A trace ended early (a cut `.gz`, a cut file): `message` names where.
    Truncated {
        /// The input as named.
        source: String,
        /// The summary's first warning, with the offset.
        message: String,
    },
    /// A document with no trace event and no summary's first key.
    NoEvents {
        /// The input as named.
        source: String,
        /// Its decoded length.
        bytes: u64,
    },
    /// A recording was given with a summary.
    RecordingWithSummary {
        /// The input as named.
        source: String,
    },
    /// Reading an input failed (the driver's message).
    Read {
        /// The input as named.
        source: String,
        /// Why.
        message: String,
    },
    /// The job was driven out of order.
    Protocol(&'static str),
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffError::Trace { source, error } => write!(f, "{source}: {error}"),
            DiffError::Summary(e) => e.fmt(f),
            DiffError::Truncated { source, message } => {
                write!(f, "{source}: {message}: a diff needs the whole trace")
            }
            DiffError::NoEvents { source, bytes } => write!(
                f,
                "{source}: no trace event in its {bytes} bytes: neither a trace nor a summary with its mergeable section (trace --json --mergeable, merge --json)"
            ),
            DiffError::RecordingWithSummary { source } => write!(
                f,
                "{source}: a summary has no clock to join a recording with: give the trace"
            ),
            DiffError::Read { source, message } => write!(f, "{source}: {message}"),
            DiffError::Protocol(s) => write!(f, "diff job: {s}"),
        }
    }
}

impl core::error::Error for DiffError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            DiffError::Trace { error, .. } => Some(error),
            DiffError::Summary(e) => Some(e),
            _ => None,
        }
    }
}

/// The diff job (see the module docs).
pub struct DiffJob {
    options: DiffOptions,
    /// The input being read: 0 (A) or 1 (B); 2: both read.
    side: usize,
    current: Current,
    sides: Vec<Side>,
    /// The driver inflates gzip itself: `Some(gzip)` for the current input.
    decoded: Option<bool>,
    failed: Option<DiffError>,
    result: Option<Box<DiffResult>>,
}

enum Current {
    /// First bytes, kind unknown: the stored bytes held.
    Undecided { sniffer: Sniffer, held: Vec<u8> },
    /// A trace (with its recording first, if any); `sniffer` checks that a side with a
    /// recording is a trace, until it knows.
    Trace {
        job: Box<TraceJob>,
        sniffer: Option<Sniffer>,
    },
    /// A summary, decoded here if stored as gzip.
    Summary { gz: MaybeGz, job: Box<MergeJob> },
    /// Between inputs, or done.
    None,
}

impl DiffJob {
    /// A job with these options.
    pub fn new(options: DiffOptions) -> DiffJob {
        let mut job = DiffJob {
            options,
            side: 0,
            current: Current::None,
            sides: Vec::with_capacity(2),
            decoded: None,
            failed: None,
            result: None,
        };
        job.current = job.fresh();
        job
    }

    /// The options this job was made with.
    pub fn options(&self) -> &DiffOptions {
        &self.options
    }

    fn source(&self) -> &str {
        &self.options.sources[self.side.min(1)]
    }

    /// The state of a new input: a trace job at once for a side with a recording (which is read
    /// first), else undecided.
    fn fresh(&self) -> Current {
        match self.options.recordings.get(self.side).copied().flatten() {
            Some(rec) => Current::Trace {
                job: Box::new(self.trace_job(RecordingSource::Read(rec))),
                sniffer: Some(Sniffer::new(false)),
            },
            None if self.side < 2 => Current::Undecided {
                sniffer: Sniffer::new(false),
                held: Vec::new(),
            },
            None => Current::None,
        }
    }

    fn trace_job(&self, recording: RecordingSource) -> TraceJob {
        let mut join = self.options.join.clone();
        // The pauses are counted, never listed: no second read for them.
        join.pauses.max_pauses_per_device = 0;
        TraceJob::new(TraceJobOptions {
            source: self.source().to_string(),
            limits: self.options.limits,
            // Every op: each one's p50 is then the summary's exact one.
            top: usize::MAX,
            // Only the listed ops' statistics are shown, and which are listed is known once
            // both runs are read: each op's durations are handed over instead, A's while they
            // take at most a quarter of the durations budget (they are held while B is read).
            durations_out: Some(if self.side == 0 {
                self.options.limits.max_exact_values / 4
            } else {
                usize::MAX
            }),
            mergeable: false,
            steps: self.options.steps.clone(),
            join: Some(JoinSetup::new(join, recording)),
        })
    }

    /// The bytes the driver writes for the current input are decoded already (it inflates
    /// gzip itself); `gzip`: the file is gzip (error offsets are then named as decompressed).
    pub fn decoded(&mut self, gzip: bool) {
        self.decoded = Some(gzip);
        match &mut self.current {
            Current::Trace { job, sniffer } => {
                job.decoded(gzip);
                if let Some(s) = sniffer
                    && s.kind().is_none()
                {
                    *s = Sniffer::new(true);
                }
            }
            Current::Undecided { sniffer, held } if held.is_empty() => {
                *sniffer = Sniffer::new(true);
            }
            _ => {}
        }
    }

    /// The current input is a trace (the driver told it with
    /// [`input_kind`](super::input_kind) from the first bytes): its trace job, for the driver
    /// to drive (its first read, then what it needs) until its [`Job::need`] is [`Need::Done`];
    /// this job then goes on to the next input. Before any byte of the trace.
    ///
    /// # Errors
    /// No input is being read, or bytes of it were written already.
    pub fn start_trace(&mut self) -> Result<&mut TraceJob, DiffError> {
        self.settle()?;
        match &self.current {
            Current::Undecided { held, .. } if held.is_empty() => {
                let mut job = self.trace_job(RecordingSource::None);
                if let Some(gzip) = self.decoded {
                    job.decoded(gzip);
                }
                self.current = Current::Trace {
                    job: Box::new(job),
                    sniffer: None,
                };
            }
            Current::Trace { sniffer, .. }
                if sniffer.as_ref().is_some_and(|s| s.kind().is_none()) =>
            {
                // A side with a recording: the driver read the recording through this job and
                // now says the file is a trace.
                if let Current::Trace { sniffer, .. } = &mut self.current {
                    *sniffer = None;
                }
            }
            _ => return Err(DiffError::Protocol("start_trace outside an input's start")),
        }
        match &mut self.current {
            Current::Trace { job, .. } => Ok(job),
            _ => unreachable!("made above"),
        }
    }

    /// The current input is a summary, told by the driver: the [`MergeJob`] that folds it (for
    /// [`MergeJob::document`] or [`MergeJob::document_from`]); then [`DiffJob::summary_done`].
    ///
    /// # Errors
    /// No input is being read, bytes of it were written already, or it has a recording.
    pub fn start_summary(&mut self) -> Result<&mut MergeJob, DiffError> {
        self.settle()?;
        match &self.current {
            Current::Undecided { held, .. } if held.is_empty() => {
                self.current = self.summary_state()?;
            }
            Current::Trace { .. } => {
                return Err(self.fail(DiffError::RecordingWithSummary {
                    source: self.source().to_string(),
                }));
            }
            _ => {
                return Err(DiffError::Protocol(
                    "start_summary outside an input's start",
                ));
            }
        }
        match &mut self.current {
            Current::Summary { job, .. } => Ok(job),
            _ => unreachable!("made above"),
        }
    }

    /// After [`start_summary`](Self::start_summary)'s job took its document: the summary is
    /// folded and the next input comes.
    ///
    /// # Errors
    /// The summary was refused.
    pub fn summary_done(&mut self) -> Result<(), DiffError> {
        let r = self.settle();
        self.fail_on(r)
    }

    fn summary_state(&self) -> Result<Current, DiffError> {
        let job =
            MergeJob::new(alloc::vec![self.source().to_string()], 0).map_err(DiffError::Summary)?;
        Ok(Current::Summary {
            gz: MaybeGz::new(),
            job: Box::new(job),
        })
    }

    fn fail(&mut self, e: DiffError) -> DiffError {
        self.failed.get_or_insert(e.clone());
        self.current = Current::None;
        e
    }

    fn fail_on<T>(&mut self, r: Result<T, DiffError>) -> Result<T, DiffError> {
        r.map_err(|e| self.fail(e))
    }

    fn check(&self) -> Result<(), DiffError> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn trace_error(&self, error: TraceJobError) -> DiffError {
        DiffError::Trace {
            source: self.source().to_string(),
            error,
        }
    }

    /// Moves on when the current input needs nothing more: its side taken, the next input's
    /// state made (or, after B, the comparison).
    fn settle(&mut self) -> Result<(), DiffError> {
        self.check()?;
        let done = match &self.current {
            Current::Trace { job, .. } => job.need() == Need::Done,
            Current::Summary { job, .. } => job.need() == Need::Done,
            _ => false,
        };
        if !done {
            return Ok(());
        }
        let source = self.source().to_string();
        let side = match core::mem::replace(&mut self.current, Current::None) {
            Current::Trace { job, .. } => {
                let r = job.finish().map_err(|e| self.trace_error(e))?;
                if r.summary.truncated {
                    let message = r.summary.warnings.first().cloned().unwrap_or_default();
                    let message = message
                        .strip_suffix(": summarized from what was read")
                        .unwrap_or(&message);
                    // A plain file's cut has no offset of its own: where its bytes ended.
                    let message = if message.contains(" byte ") {
                        message.to_string()
                    } else {
                        alloc::format!(
                            "{message} (the input ends at byte {})",
                            r.summary.totals.bytes
                        )
                    };
                    return Err(DiffError::Truncated { source, message });
                }
                if r.summary.totals.events == 0 {
                    let bytes = r.summary.totals.bytes;
                    return Err(DiffError::NoEvents { source, bytes });
                }
                let mut side = Side::of_trace(source, r);
                side.min_gap_ms = Some(self.options.join.gaps.min_gap_ns as f64 / 1e6);
                side
            }
            Current::Summary { job, .. } => {
                let merged = job.finish().map_err(DiffError::Summary)?;
                Side::of_summary(source, merged.mergeable)
            }
            _ => unreachable!("checked above"),
        };
        self.sides.push(side);
        self.side += 1;
        self.decoded = None;
        self.current = self.fresh();
        if self.side == 2 {
            let result = compare(
                &self.sides[0],
                &self.sides[1],
                &self.options.compare,
                self.options.steps.is_some(),
            );
            self.result = Some(Box::new(result));
            self.sides.clear();
        }
        Ok(())
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), DiffError> {
        self.settle()?;
        match &mut self.current {
            Current::Undecided { sniffer, held } => {
                let kind = sniffer.push(chunk).unwrap_or(Some(InputKind::Trace));
                held.extend_from_slice(chunk);
                let kind = kind.or((held.len() >= SNIFF_STORED_BYTES).then_some(InputKind::Trace));
                if let Some(kind) = kind {
                    let held = core::mem::take(held);
                    self.decide(kind)?;
                    self.forward(&held)?;
                }
                Ok(())
            }
            _ => self.forward(chunk),
        }
    }

    /// The undecided input is of `kind`: its job made.
    fn decide(&mut self, kind: InputKind) -> Result<(), DiffError> {
        self.current = match kind {
            InputKind::Trace => {
                let mut job = self.trace_job(RecordingSource::None);
                if let Some(gzip) = self.decoded {
                    job.decoded(gzip);
                }
                Current::Trace {
                    job: Box::new(job),
                    sniffer: None,
                }
            }
            InputKind::Summary => self.summary_state()?,
        };
        Ok(())
    }

    /// Bytes to the decided input's job.
    fn forward(&mut self, chunk: &[u8]) -> Result<(), DiffError> {
        let source = self.source().to_string();
        match &mut self.current {
            Current::Trace { job, sniffer } => {
                // The trace's own bytes (not its recording's) tell a summary given a recording.
                if job.need() == Need::File(TRACE)
                    && let Some(s) = sniffer
                    && s.push(chunk).ok().flatten() == Some(InputKind::Summary)
                {
                    return Err(DiffError::RecordingWithSummary { source });
                }
                job.write(chunk)
                    .map_err(|error| DiffError::Trace { source, error })
            }
            Current::Summary { gz, job } => gz
                .write(chunk, |bytes: &[u8], _| {
                    job.write(bytes).map_err(SummaryFeed::Merge)
                })
                .map_err(|e| e.into_diff(source)),
            Current::Undecided { .. } | Current::None => {
                Err(DiffError::Protocol("no input is being read"))
            }
        }
    }

    fn end_inner(&mut self) -> Result<(), DiffError> {
        self.settle()?;
        if let Current::Undecided { sniffer, held } = &mut self.current {
            let kind = sniffer.end();
            let held = core::mem::take(held);
            self.decide(kind)?;
            self.forward(&held)?;
        }
        let source = self.source().to_string();
        match &mut self.current {
            Current::Trace { job, sniffer } => {
                let trace_read = job.need() == Need::File(TRACE);
                if trace_read
                    && let Some(s) = sniffer
                    && s.end() == InputKind::Summary
                {
                    return Err(DiffError::RecordingWithSummary { source });
                }
                job.end()
                    .map_err(|error| DiffError::Trace { source, error })?;
            }
            Current::Summary { gz, job } => {
                gz.end(|bytes: &[u8], _| job.write(bytes).map_err(SummaryFeed::Merge))
                    .map_err(|e| e.into_diff(source.clone()))?;
                if let Some(dec) = gz.decoder()
                    && let Err(e) = dec.finish()
                {
                    return Err(if e.is_truncated() {
                        DiffError::Truncated {
                            source,
                            message: e.to_string(),
                        }
                    } else {
                        DiffError::Read {
                            source,
                            message: e.to_string(),
                        }
                    });
                }
                job.end().map_err(DiffError::Summary)?;
            }
            Current::Undecided { .. } | Current::None => {
                return Err(DiffError::Protocol("no input is being read"));
            }
        }
        self.settle()
    }
}

/// Why feeding a summary's bytes failed.
enum SummaryFeed {
    Gzip(GzError),
    Merge(MergeJobError),
}

impl From<GzError> for SummaryFeed {
    fn from(e: GzError) -> Self {
        SummaryFeed::Gzip(e)
    }
}

impl SummaryFeed {
    fn into_diff(self, source: String) -> DiffError {
        match self {
            SummaryFeed::Gzip(e) => DiffError::Read {
                source,
                message: e.to_string(),
            },
            SummaryFeed::Merge(e) => DiffError::Summary(e),
        }
    }
}

impl Job for DiffJob {
    type Output = DiffResult;
    type Error = DiffError;

    fn need(&self) -> Need<'_> {
        if self.failed.is_some() {
            return Need::Done;
        }
        let (file, telemetry) = match self.side {
            0 => (A, TELEMETRY_A),
            1 => (B, TELEMETRY_B),
            _ => return Need::Done,
        };
        match &self.current {
            Current::Undecided { .. } | Current::Summary { .. } => match &self.current {
                Current::Summary { job, .. } if job.need() == Need::Done => self.next_need(),
                _ => Need::File(file),
            },
            Current::Trace { job, .. } => match job.need() {
                Need::File(RECORDING) => Need::File(telemetry),
                Need::File(_) => Need::File(file),
                Need::Ranges(r) => Need::Ranges(r),
                Need::Listing(_) => Need::Done,
                Need::Done => self.next_need(),
            },
            Current::None => Need::Done,
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), DiffError> {
        let r = self.write_inner(chunk);
        self.fail_on(r)
    }

    fn seek(&mut self, offset: u64) -> Result<(), DiffError> {
        let r = self.settle().and_then(|()| match &mut self.current {
            Current::Trace { job, .. } => job.seek(offset).map_err(|error| DiffError::Trace {
                source: self.options.sources[self.side.min(1)].clone(),
                error,
            }),
            _ => Err(DiffError::Protocol("a seek outside a trace's ranges")),
        });
        self.fail_on(r)
    }

    fn read_error(&mut self, message: &str) {
        let e = DiffError::Read {
            source: self.source().to_string(),
            message: message.to_string(),
        };
        self.fail(e);
    }

    fn listing(&mut self, _paths: &mut dyn Iterator<Item = &str>) -> Result<(), DiffError> {
        Err(DiffError::Protocol("a diff job lists no folder"))
    }

    fn end(&mut self) -> Result<(), DiffError> {
        let r = self.end_inner();
        self.fail_on(r)
    }

    fn finish(mut self) -> Result<DiffResult, DiffError> {
        self.settle()?;
        match self.result {
            Some(r) => Ok(*r),
            None => Err(DiffError::Protocol("the job is not done")),
        }
    }
}

impl DiffJob {
    /// What the next input asks for first, once the current one needs nothing more.
    fn next_need(&self) -> Need<'static> {
        match self.side {
            0 if self.options.recordings[1].is_some() => Need::File(TELEMETRY_B),
            0 => Need::File(B),
            _ => Need::Done,
        }
    }
}
