//! The trace job: a trace's summary, optionally with the join (docs/join.md) or the mergeable
//! section (docs/merge.md), driven through [`crate::job`]. It holds the whole rule of what is
//! read: the trace once for the summary (the join's first pass riding on the same scan), then,
//! only when the join needs it, a second read: the byte ranges whose host events meet a listed
//! pause ([`Need::Ranges`], the copied annotation spans of the others replayed), or the whole
//! trace (more annotation spans than the first pass copied, a range that cannot be resumed, a
//! merged copy for Perfetto); without a pause to list, the copied spans alone.
//!
//! Two ways in, one computation:
//! - bytes ([`Job::write`]), plain or gzip (by its magic; [`TraceJob::decoded`] for bytes a driver
//!   inflated itself): the page, and the std driver's one-thread route;
//! - events a driver scanned on threads of its own, in file order: [`TraceJob::add_batch`]
//!   ([`EventBatch`]) and [`TraceJob::add_event`], then [`TraceJob::end_scanned`] (the std
//!   driver's scan threads, `flinch-host`).
//!
//! Either way the same summary and first pass take the same events in the same order, so the
//! result is the same byte for byte.
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use crate::Limits;
use crate::analyzer::AnalyzeError;
use crate::gzip::GzError;
use crate::job::{Job, Need};
use crate::join::counters::counter_sample;
use crate::join::{
    Alignment, CountersFound, FirstPass, FirstPassResult, GapOptions, GpuMap, JoinError,
    JoinOptions, JoinPass, JoinReport, Recording, RecordingBuilder, RecordingOptions,
};
use crate::json::{BaseTime, Event, EventScanner, Scan, ScanEnd, ScanWarnings};
use crate::steps::{JoinView, StepCollector, StepPattern, StepsFound, StepsReport};
use crate::summary::{EventReplay, IntervalSpill, TraceSummary, TraceSummaryResult};

pub mod batch;
mod decode;
pub(crate) mod result_json;
mod second_read;
mod stored_reads;

pub use batch::EventBatch;
use decode::Decode;
use second_read::{Ranged, Whole};
use stored_reads::StoredReads;

/// The name [`Need::File`] gives the recording (trace.csv).
pub const RECORDING: &str = "recording";
/// The name [`Need::File`] gives the trace.
pub const TRACE: &str = "trace";

/// The join's second read scans with these limits whatever the summary's: its events' strings
/// are cut where the CLI's have always been cut.
const SECOND_READ_LIMITS: Limits = Limits::NATIVE;

/// What a [`TraceJob`] computes.
#[derive(Clone, Debug)]
pub struct TraceJobOptions {
    /// The `source` written into the summary.
    pub source: String,
    /// The summary's memory bounds.
    pub limits: Limits,
    /// Ops listed (`--top`).
    pub top: usize,
    /// `Some(cap)`: the listed ops that hold their durations exactly come with those durations
    /// ([`OpRow::durations`](crate::summary::OpRow::durations)) in place of their statistics,
    /// when all the durations held take at most `cap` budget units (4 bytes each) of
    /// `Limits::max_exact_values`; past it, or `None`, every listed op's statistics are computed
    /// at the end of the read. The diff lists every op but shows the statistics of a few,
    /// known only once both runs are read.
    pub durations_out: Option<usize>,
    /// Add the mergeable section (`--mergeable`; not with the join).
    pub mergeable: bool,
    /// The join, if any.
    pub join: Option<JoinSetup>,
    /// The steps (`--steps`, docs/steps.md): the pattern that names them, if asked for.
    pub steps: Option<StepPattern>,
}

/// The join's part of a [`TraceJobOptions`].
#[derive(Clone, Debug)]
pub struct JoinSetup {
    /// Pauses, clock and GPU map.
    pub options: JoinOptions,
    /// The recording joined, if any.
    pub recording: RecordingSource,
    /// Read the whole trace a second time, whatever the pauses (for a merged copy written from
    /// that read: [`TraceJob::write_copying`]).
    pub whole_second_read: bool,
    /// At most this many byte ranges kept for a second read of only some of them (fewer
    /// coarsen them; [`MAX_RANGES`](crate::join::first_pass::MAX_RANGES) at most).
    pub max_byte_ranges: usize,
    /// The join goes on past the first read only when the trace carries power or utilization
    /// counters (with [`RecordingSource::None`]: a trace alone on the page); otherwise the job
    /// ends there with the result it has without the join.
    pub only_with_counters: bool,
}

impl JoinSetup {
    /// Whether the join may read the trace again after its first read: a pause to list, a
    /// recording (its annotation spans, when their copy overflows), or a whole second read. Its
    /// first pass alone (the pauses counted, none listed: `diff`) never does, so a driver may
    /// read the trace as it would without the join.
    pub fn may_read_again(&self) -> bool {
        self.whole_second_read
            || self.options.pauses.max_pauses_per_device > 0
            || !matches!(self.recording, RecordingSource::None)
    }

    /// The join with `options`, a recording from `recording`, and the most byte ranges.
    pub fn new(options: JoinOptions, recording: RecordingSource) -> JoinSetup {
        JoinSetup {
            options,
            recording,
            whole_second_read: false,
            max_byte_ranges: crate::join::first_pass::MAX_RANGES,
            only_with_counters: false,
        }
    }
}

/// Where a join's recording comes from.
#[derive(Clone, Debug)]
pub enum RecordingSource {
    /// No recording: pauses on the trace's clock alone.
    None,
    /// The job reads it first, as the file [`RECORDING`].
    Read(RecordingOptions),
    /// The driver gives it ([`TraceJob::set_recording`]) before the second read.
    Given,
}

/// Why a [`TraceJob`] failed.
#[derive(Clone, Debug)]
pub enum TraceJobError {
    /// The trace's first read: a gzip error or malformed JSON outside events, with its offset.
    Trace(AnalyzeError),
    /// The join: the recording, the clock, or the trace's later reads.
    Join(JoinError),
    /// Reading a file failed (the driver's message, [`Job::read_error`]).
    Read(String),
    /// The copy of a whole second read failed (the copier's own error).
    Copy(CopyError),
    /// The job was driven out of order (a driver's mistake, not the input's).
    Protocol(&'static str),
}

impl fmt::Display for TraceJobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceJobError::Trace(e) => e.fmt(f),
            TraceJobError::Join(e) => e.fmt(f),
            TraceJobError::Read(s) => f.write_str(s),
            TraceJobError::Copy(e) => e.fmt(f),
            TraceJobError::Protocol(s) => write!(f, "trace job: {s}"),
        }
    }
}

impl core::error::Error for TraceJobError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            TraceJobError::Trace(e) => Some(e),
            TraceJobError::Join(e) => Some(e),
            TraceJobError::Copy(e) => Some(&*e.0),
            TraceJobError::Read(_) | TraceJobError::Protocol(_) => None,
        }
    }
}

impl From<GzError> for TraceJobError {
    fn from(e: GzError) -> Self {
        TraceJobError::Trace(AnalyzeError::Gzip(e))
    }
}

impl From<JoinError> for TraceJobError {
    fn from(e: JoinError) -> Self {
        TraceJobError::Join(e)
    }
}

/// A finished trace job.
#[derive(Clone, Debug)]
pub struct TraceJobResult {
    /// The summary.
    pub summary: TraceSummaryResult,
    /// The join's report, with the join.
    pub join: Option<JoinReport>,
    /// The steps, when asked for.
    pub steps: Option<StepsReport>,
}

impl TraceJobResult {
    /// The JSON object `trace --json` prints (without the final newline): the summary's, with
    /// the join's keys after its own, then the steps'.
    pub fn to_json(&self) -> String {
        match (&self.join, &self.steps) {
            (_, Some(steps)) => result_json::with_steps(&self.summary, self.join.as_ref(), steps),
            (Some(report), None) => crate::join::summary_with_join_json(&self.summary, report),
            (None, None) => self.summary.to_json(),
        }
    }
}

/// A step of a whole second read that copies the trace ([`TraceJob::write_copying`]).
pub enum CopyStep<'a> {
    /// The next bytes of the trace, as read.
    Bytes(&'a [u8]),
    /// The bytes so far end an event.
    EventEnd,
    /// The trace ended, as the scanner found.
    End(&'a ScanEnd),
}

/// Where a whole second read's copy of the trace goes ([`TraceJob::write_copying`]).
pub type Copier<'a> = dyn FnMut(CopyStep<'_>) -> Result<(), CopyError> + 'a;

/// Why a [`Copier`] failed: the driver's own error (writing the copy), shown as it is.
#[derive(Clone, Debug)]
pub struct CopyError(Arc<dyn core::error::Error + Send + Sync>);

impl CopyError {
    /// The driver's error (any error, or its message as a `String`).
    pub fn new(e: impl Into<Box<dyn core::error::Error + Send + Sync>>) -> CopyError {
        CopyError(Arc::from(e.into()))
    }
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The trace job (see the module docs).
pub struct TraceJob {
    options: TraceJobOptions,
    phase: Phase,
    decode: Decode,
    rec: Option<Arc<Recording>>,
    /// The trace's own power/utilization counters, after the first read.
    counters: Option<CountersFound>,
    failed: Option<TraceJobError>,
    trace_reads: u32,
    recording_bytes: Option<u64>,
    /// The trace's first read was gzip fed as stored (the page): its second read is given as
    /// ranges of stored bytes from restart points ([`StoredReads`]), or whole.
    stored_gzip: bool,
    /// The restart points of such a first read, with its stored length, until a ranged second
    /// read takes them.
    restart: Option<(crate::gzip::RestartIndex, u64)>,
    /// The ranged second read of such a trace, as stored ranges.
    stored: Option<StoredReads>,
    /// The steps' first pass, once the first read ended; reported when the job finishes.
    steps: Option<StepsFound>,
    /// The steps without the join: their power from the trace's own counters.
    steps_power: Option<StepsPower>,
}

/// The steps' power without the join (`--steps` alone): the trace's own power counters on the
/// Unix clock of its `baseTimeNanoseconds`, keyed by trace device, and the devices the trace
/// keeps busy (charged as the join charges them).
struct StepsPower {
    counters: CountersFound,
    offset_ns: Option<i64>,
    devices: Vec<i64>,
    gpu_map: GpuMap,
}

impl StepsPower {
    /// From the light first pass the steps run without the join; `None` when the trace has no
    /// power or utilization counter.
    fn new(mut first: FirstPass, base: BaseTime) -> Option<StepsPower> {
        first.set_base_time_ns(base);
        let mut r = first.finish();
        let align = Alignment::new(r.base_time_ns, None);
        let counters = r
            .counters
            .take()?
            .finish(align, RecordingOptions::default().max_gap_ns);
        Some(StepsPower {
            counters,
            offset_ns: align.map(|a| a.offset_ns),
            devices: r.found.devices.iter().map(|d| d.device).collect(),
            gpu_map: GpuMap::default(),
        })
    }

    /// The steps' report with this power.
    fn report(self, found: StepsFound) -> StepsReport {
        let mut report = self.counters.report;
        report.used = self.counters.recording.is_some();
        found.report(Some(JoinView {
            offset_ns: self.offset_ns,
            devices: self.devices,
            gpu_map: &self.gpu_map,
            recording: self.counters.recording.as_deref(),
            power_source: "trace_counters",
            pauses: None,
            trace_counters: Some(report),
        }))
    }
}

/// The steps' report: with the join's view, with the steps' own power, or alone.
fn steps_report(found: StepsFound, power: Option<StepsPower>) -> StepsReport {
    match power {
        Some(p) => p.report(found),
        None => found.report(None),
    }
}

enum Phase {
    Recording(Box<RecordingBuilder>),
    First(Box<FirstRead>),
    /// After the first read: what the second read will be; its pass is made when it starts
    /// (the driver may give the recording until then).
    Planned(Box<Planned>),
    Ranged(Box<Ranged>),
    Whole(Box<Whole>),
    Done(Box<TraceJobResult>),
    Failed,
}

/// The summary's read, with the join's first pass on its events. The analyzer (the page's
/// summary of a file of either kind) reads a trace through it too.
pub(crate) struct FirstRead {
    summary: TraceSummary,
    /// The bytes route's scanner, made at the first byte.
    scanner: Option<EventScanner>,
    first: Option<FirstPass>,
    /// The steps' first pass, when asked for.
    steps: Option<StepCollector>,
    /// The document is a bare array, once its first byte is seen (the bytes route).
    bare: Option<bool>,
    cut: Option<GzError>,
    gzip_warning: Option<String>,
    limits: Limits,
    /// A power or utilization counter was seen (without a first pass, which keeps them).
    counters_seen: bool,
}

/// The join after the first read.
struct Planned {
    summary: TraceSummaryResult,
    first: FirstPassResult,
    plan: SecondRead,
    /// The document is a bare array.
    bare: bool,
}

/// What the join's second read is.
enum SecondRead {
    /// None: the copied annotation spans (if any) are replayed.
    None { replay: bool },
    /// These steps, over these byte ranges.
    Ranged {
        steps: Vec<crate::join::SecondPassStep>,
        wanted: Vec<(u64, u64)>,
    },
    /// The whole trace.
    Whole,
}

impl TraceJob {
    /// A job with these options.
    pub fn new(options: TraceJobOptions) -> TraceJob {
        let phase = match options.join.as_ref().map(|j| &j.recording) {
            Some(RecordingSource::Read(o)) => Phase::Recording(Box::new(RecordingBuilder::new(*o))),
            _ => Phase::First(Box::new(FirstRead::new(&options))),
        };
        let decode = match phase {
            Phase::First(_) => Decode::for_trace(&options),
            _ => Decode::new(),
        };
        TraceJob {
            options,
            phase,
            decode,
            rec: None,
            counters: None,
            failed: None,
            trace_reads: 0,
            recording_bytes: None,
            stored_gzip: false,
            restart: None,
            stored: None,
            steps: None,
            steps_power: None,
        }
    }

    /// The bytes the driver writes are decoded already (it inflates gzip itself); `gzip`: the
    /// trace is gzip, so that error offsets are named as offsets in the decompressed data.
    pub fn decoded(&mut self, gzip: bool) {
        self.decode = Decode::decoded(gzip);
    }

    /// The options this job was made with.
    pub fn options(&self) -> &TraceJobOptions {
        &self.options
    }

    /// Whether the first read feeds the join's first pass as well as the summary: with the
    /// join, and for the steps alone (their power from the trace's counters). A driver that
    /// copies events into [`EventBatch`]es then makes them with the join's side.
    pub fn reads_first_pass(&self) -> bool {
        self.options.join.is_some() || self.options.steps.is_some()
    }

    /// For the summary: the busy unions' spill and a way to read the trace again, so that it
    /// stays exact past its limits ([`TraceSummary::set_spill`], [`TraceSummary::set_replay`]).
    /// Call before the trace's first read ends.
    pub fn set_trace_io(&mut self, spill: Box<dyn IntervalSpill>, replay: Box<dyn EventReplay>) {
        if let Phase::First(f) = &mut self.phase {
            f.set_trace_io(spill, replay);
        }
    }

    /// For the steps: where the classes' unions put intervals past their budget, so that the
    /// breakdown stays exact ([`StepCollector::set_spill`]). Call before the first event.
    pub fn set_steps_spill(&mut self, spill: Box<dyn IntervalSpill>) {
        if let Phase::First(f) = &mut self.phase
            && let Some(steps) = &mut f.steps
        {
            steps.set_spill(spill);
        }
    }

    /// The recording ([`RecordingSource::Given`]), before the second read.
    pub fn set_recording(&mut self, recording: Arc<Recording>) {
        self.rec = Some(recording);
    }

    /// The recording file's length, when the driver knows it (before its first chunk): a plain
    /// recording's series are then reserved once instead of grown by copying. Only capacity
    /// changes.
    pub fn recording_size_hint(&mut self, total_bytes: u64) {
        self.recording_bytes = Some(total_bytes);
    }

    /// With the join, from the end of the first read until a whole second read starts or the
    /// job is done: what the first pass found (for a driver that writes a merged copy on the
    /// clock it gives).
    pub fn first_pass(&self) -> Option<&FirstPassResult> {
        match &self.phase {
            Phase::Planned(p) => Some(&p.first),
            Phase::Ranged(r) => Some(r.first()),
            _ => None,
        }
    }

    /// How many times the trace has been read to its end so far.
    pub fn trace_reads(&self) -> u32 {
        self.trace_reads
    }

    /// The recording, once read or given.
    pub fn recording(&self) -> Option<&Arc<Recording>> {
        self.rec.as_ref()
    }

    /// The power the join reads: the recording, or without one the trace's own counters (after
    /// the first read, when they gave any).
    pub fn power_recording(&self) -> Option<&Arc<Recording>> {
        self.rec.as_ref().or_else(|| {
            let join = self.options.join.as_ref()?;
            matches!(join.recording, RecordingSource::None)
                .then(|| self.counters.as_ref()?.recording.as_ref())
                .flatten()
        })
    }

    /// For a driver that can seek only in stored bytes (the page): the ranges of the second
    /// read when the trace is plain, before any byte of that read is given; `None` when the
    /// whole file is to be given (from its first byte).
    pub fn wanted_ranges(&self) -> Option<Vec<(u64, u64)>> {
        if self.stored_gzip {
            // Stored ranges from restart points, before any byte of the read.
            return match (&self.phase, &self.stored) {
                (Phase::Planned(_), Some(s)) => Some(s.ranges().to_vec()),
                (Phase::Ranged(r), Some(s)) if r.at() == 0 && !s.active() => {
                    Some(s.ranges().to_vec())
                }
                _ => None,
            };
        }
        match &self.phase {
            Phase::Planned(p) => match &p.plan {
                SecondRead::Ranged { wanted, .. } => Some(wanted.clone()),
                _ => None,
            },
            Phase::Ranged(r) if r.at() == 0 && self.decode.is_empty() => {
                Some(r.wanted_ranges().to_vec())
            }
            _ => None,
        }
    }

    fn fail<T>(&mut self, r: Result<T, TraceJobError>) -> Result<T, TraceJobError> {
        if let Err(e) = &r {
            self.failed = Some(e.clone());
            self.phase = Phase::Failed;
        }
        r
    }

    fn check(&self) -> Result<(), TraceJobError> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Events of the first read, scanned by the driver, in file order.
    ///
    /// # Errors
    /// Not during the first read.
    pub fn add_batch(&mut self, batch: &mut EventBatch) -> Result<(), TraceJobError> {
        match &mut self.phase {
            Phase::First(f) => {
                batch.add_to(&mut f.summary);
                if let Some(first) = &mut f.first {
                    batch.join_to(first);
                }
                if let Some(steps) = &mut f.steps {
                    batch.steps_to(steps);
                }
                Ok(())
            }
            _ => Err(TraceJobError::Protocol("events outside the first read")),
        }
    }

    /// One event of the first read, scanned by the driver, in file order; `end`: the offset
    /// just past it.
    ///
    /// # Errors
    /// Not during the first read.
    pub fn add_event(&mut self, e: &Event<'_>, end: u64) -> Result<(), TraceJobError> {
        match &mut self.phase {
            Phase::First(f) => {
                f.summary.add(e);
                if let Some(first) = &mut f.first {
                    first.add_at(e, end);
                }
                if let Some(steps) = &mut f.steps {
                    steps.add(e);
                }
                Ok(())
            }
            _ => Err(TraceJobError::Protocol("events outside the first read")),
        }
    }

    /// For a driver that inflates by itself: the stored gzip stream was cut (a trace is then
    /// summarized from what was read, with a warning).
    pub fn note_cut_gzip(&mut self, error: GzError) {
        if let Phase::First(f) = &mut self.phase {
            f.cut = Some(error);
        }
    }

    /// For a driver that inflates by itself: a warning of the gzip layer (trailing garbage
    /// ignored), listed in the result's warnings.
    pub fn note_gzip_warning(&mut self, message: &str) {
        if let Phase::First(f) = &mut self.phase {
            f.gzip_warning = Some(message.into());
        }
    }

    /// The end of a first read the driver scanned: the scanner's end state and warnings (summed
    /// over the scanners that read parts of it) and `baseTimeNanoseconds` as read.
    ///
    /// # Errors
    /// Not during the first read; a join that cannot run.
    pub fn end_scanned(
        &mut self,
        end: &ScanEnd,
        warnings: &ScanWarnings,
        base: BaseTime,
    ) -> Result<(), TraceJobError> {
        self.check()?;
        let r = match core::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::First(f) => self.after_first(*f, end, warnings, base),
            _ => Err(TraceJobError::Protocol(
                "end of a scan outside the first read",
            )),
        };
        self.fail(r)
    }

    fn after_first(
        &mut self,
        f: FirstRead,
        end: &ScanEnd,
        warnings: &ScanWarnings,
        base: BaseTime,
    ) -> Result<(), TraceJobError> {
        self.trace_reads += 1;
        let o = &self.options;
        let (result, first, bare, steps) = f.summarize(&o.source, o.top, end, warnings);
        self.steps = steps.map(StepCollector::finish);
        let Some(join) = o.join.as_ref() else {
            // The steps alone ran a light first pass for the trace's counters.
            self.steps_power = first.and_then(|f| StepsPower::new(f, base));
            self.phase = Phase::Done(Box::new(TraceJobResult {
                summary: result,
                join: None,
                steps: None,
            }));
            return Ok(());
        };
        let mut first = first.ok_or(TraceJobError::Protocol("the join's first pass is missing"))?;
        first.set_base_time_ns(base);
        let mut first = first.finish();
        if join.only_with_counters && first.counters.is_none() {
            // No counters: the result without the join (nor power for the steps).
            self.phase = Phase::Done(Box::new(TraceJobResult {
                summary: result,
                join: None,
                steps: None,
            }));
            return Ok(());
        }
        let telemetry = !matches!(join.recording, RecordingSource::None);
        // The trace's counters on the Unix clock, now that the base is known; without a
        // recording they are the join's recording.
        self.counters = first.counters.take().map(|c| {
            let align = Alignment::new(first.base_time_ns, join.options.clock_offset_ns);
            c.finish(align, RecordingOptions::default().max_gap_ns)
        });
        let recording = telemetry
            || self
                .counters
                .as_ref()
                .is_some_and(|c| c.recording.is_some());
        let max_pauses = join.options.pauses.max_pauses_per_device;
        // Host events matter only to listed pauses; without one, a recording needs only the
        // annotation spans, which the first pass copied when they fit. With one, only the byte
        // ranges whose host events meet a listed pause are read again (when the first pass
        // kept them), with the copied spans of the others replayed.
        let listed = max_pauses > 0 && first.found.devices.iter().any(|d| !d.gaps.is_empty());
        let steps = (listed && !join.whole_second_read)
            .then(|| first.plan_second_pass(max_pauses, recording))
            .flatten();
        let plan = match steps {
            Some(steps) => {
                let wanted = second_read::wanted(&steps);
                if self.stored_gzip
                    && let Some((index, stored_bytes)) = self.restart.take()
                    && !index.is_empty()
                {
                    // Only when it reads less than the whole file again.
                    let reads = StoredReads::new(index, &wanted, stored_bytes);
                    let total: u64 = reads.ranges().iter().map(|(a, b)| b - a).sum();
                    self.stored = (total < stored_bytes).then_some(reads);
                }
                SecondRead::Ranged { steps, wanted }
            }
            None => {
                let replay =
                    recording && !listed && !join.whole_second_read && first.annotations.is_some();
                if listed || join.whole_second_read || (recording && !replay) {
                    SecondRead::Whole
                } else {
                    SecondRead::None { replay }
                }
            }
        };
        self.phase = Phase::Planned(Box::new(Planned {
            summary: result,
            first,
            plan,
            bare: bare.unwrap_or(end.bare_array),
        }));
        // With the recording at hand (or none to wait for), the pass is made now, so that a
        // join that cannot run says so at the end of this read.
        if self.rec.is_some() || !telemetry {
            self.start_second()?;
        }
        Ok(())
    }

    /// The join's second pass, with the recording.
    fn pass(&self, first: &FirstPassResult) -> Result<JoinPass<'static>, TraceJobError> {
        let join = self
            .options
            .join
            .as_ref()
            .ok_or(TraceJobError::Protocol("no join"))?;
        let rec = match (&join.recording, &self.rec) {
            (RecordingSource::None, _) => None,
            (_, Some(r)) => Some(r.clone().into()),
            (_, None) => return Err(TraceJobError::Protocol("the recording was not given")),
        };
        let mut options = join.options.clone();
        // Without a recording the trace's counters are it, keyed by trace device.
        let counters = self.counters.as_ref().and_then(|c| c.recording.clone());
        let used = rec.is_none() && counters.is_some();
        let rec = match counters {
            Some(c) if used => {
                options.gpu_map = GpuMap::default();
                Some(c.into())
            }
            _ => rec,
        };
        let mut pass =
            JoinPass::with_recording(first.found.clone(), first.base_time_ns, options, rec)
                .map_err(|e| TraceJobError::Join(e.into()))?;
        if let Some(c) = &self.counters {
            pass.set_trace_counters(c.clone(), used);
        }
        Ok(pass)
    }

    /// Starts the planned second read (or, with none, ends the join).
    fn start_second(&mut self) -> Result<(), TraceJobError> {
        if !matches!(self.phase, Phase::Planned(_)) {
            return Ok(());
        }
        let Phase::Planned(p) = core::mem::replace(&mut self.phase, Phase::Failed) else {
            unreachable!("checked above");
        };
        let Planned {
            summary,
            first,
            plan,
            bare,
        } = *p;
        let mut pass = self.pass(&first)?;
        self.phase = match plan {
            SecondRead::None { replay } => {
                if replay && let Some(a) = &first.annotations {
                    a.replay(|e| pass.add(e));
                }
                Phase::Done(Box::new(TraceJobResult {
                    summary,
                    join: Some(pass.finish()),
                    steps: None,
                }))
            }
            SecondRead::Ranged { steps, wanted } => Phase::Ranged(Box::new(Ranged::new(
                pass,
                summary,
                steps,
                wanted,
                first,
                bare,
                SECOND_READ_LIMITS,
            ))),
            SecondRead::Whole => {
                Phase::Whole(Box::new(Whole::new(pass, summary, SECOND_READ_LIMITS)))
            }
        };
        Ok(())
    }

    /// [`Job::write`] of a whole second read, each event's bytes also given to `copy` (the
    /// bytes as read, then [`CopyStep::EventEnd`] after each event): a merged copy of the trace
    /// written from the same read.
    ///
    /// # Errors
    /// As [`Job::write`], or an error of `copy`.
    pub fn write_copying(
        &mut self,
        chunk: &[u8],
        copy: &mut Copier<'_>,
    ) -> Result<(), TraceJobError> {
        self.check()?;
        let r = self.start_second().and_then(|()| match &mut self.phase {
            Phase::Whole(w) => {
                let TraceJob { decode, .. } = self;
                decode.write(chunk, |bytes: &[u8], _| w.feed_copying(bytes, copy))
            }
            _ => Err(TraceJobError::Protocol(
                "copying outside a whole second read",
            )),
        });
        self.fail(r)
    }

    /// [`Job::end`] of a whole second read that copied the trace: `copy` gets
    /// [`CopyStep::End`].
    ///
    /// # Errors
    /// As [`Job::end`].
    pub fn end_copying(&mut self, copy: &mut Copier<'_>) -> Result<(), TraceJobError> {
        self.check()?;
        let r = self.end_inner(Some(copy));
        self.fail(r)
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), TraceJobError> {
        if matches!(self.phase, Phase::Planned(_)) {
            self.start_second()?;
        }
        if let (Phase::Recording(b), true) = (&mut self.phase, self.decode.is_empty())
            && let Some(total) = self.recording_bytes.take()
            && !crate::gzip::is_gzip(chunk)
        {
            b.size_hint(total);
        }
        if let (Some(s), Phase::Ranged(r)) = (&mut self.stored, &mut self.phase)
            && s.active()
        {
            return s.write(chunk, |bytes: &[u8]| {
                Ok::<(), TraceJobError>(r.feed(bytes)?)
            });
        }
        let TraceJob { decode, phase, .. } = self;
        decode.write(chunk, |bytes: &[u8], gzip| feed(phase, bytes, gzip))?;
        if matches!(self.phase, Phase::First(_)) && self.decode.stored_gzip() {
            self.stored_gzip = true;
        }
        Ok(())
    }

    fn end_inner(&mut self, copy: Option<&mut Copier<'_>>) -> Result<(), TraceJobError> {
        if matches!(self.phase, Phase::Planned(_)) {
            self.start_second()?;
        }
        let (cut, warning) = {
            let TraceJob { decode, phase, .. } = self;
            decode.end(|bytes: &[u8], gzip| feed(phase, bytes, gzip))?
        };
        let restart = self.decode.take_restart_index();
        self.decode = self.decode.next();
        self.stored = None;
        match core::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::Recording(b) => {
                if let Some(cut) = cut {
                    return Err(JoinError::RecordingCut(cut).into());
                }
                let rec = b.end().map_err(JoinError::Recording)?;
                self.rec = Some(Arc::new(rec));
                self.phase = Phase::First(Box::new(FirstRead::new(&self.options)));
                if self.decode.is_empty() && !self.decode.is_decoded() {
                    self.decode = Decode::for_trace(&self.options);
                }
            }
            Phase::First(mut f) => {
                // A cut stream cannot be restarted past its end: its second read is whole.
                self.restart = restart.filter(|_| cut.is_none());
                let (end, warnings) = f.scan_end();
                let base = f
                    .scanner
                    .as_ref()
                    .map(|sc| sc.base_time())
                    .unwrap_or_default();
                if cut.is_some() {
                    f.cut = cut;
                }
                if warning.is_some() {
                    f.gzip_warning = warning;
                }
                self.after_first(*f, &end, &warnings, base)?;
            }
            Phase::Whole(w) => {
                self.trace_reads += 1;
                let (summary, pass) = w.end(copy)?;
                self.phase = Phase::Done(Box::new(TraceJobResult {
                    summary,
                    join: Some(pass.finish()),
                    steps: None,
                }));
            }
            Phase::Ranged(r) => {
                self.trace_reads += 1;
                match r.end() {
                    second_read::RangedEnd::Done(summary, pass) => {
                        self.phase = Phase::Done(Box::new(TraceJobResult {
                            summary,
                            join: Some(pass.finish()),
                            steps: None,
                        }));
                    }
                    // A range could not be resumed: read it all, with a fresh pass.
                    second_read::RangedEnd::Reread(summary, first) => {
                        let pass = self.pass(&first)?;
                        self.phase =
                            Phase::Whole(Box::new(Whole::new(pass, summary, SECOND_READ_LIMITS)));
                    }
                }
            }
            Phase::Planned(_) | Phase::Done(_) | Phase::Failed => {
                return Err(TraceJobError::Protocol("no file is being read"));
            }
        }
        Ok(())
    }
}

impl FirstRead {
    /// The summary alone, with these limits (and the mergeable section, and the steps).
    pub(crate) fn summary_only(
        limits: Limits,
        mergeable: bool,
        steps: Option<StepPattern>,
    ) -> FirstRead {
        FirstRead::new(&TraceJobOptions {
            source: String::new(),
            limits,
            top: 0,
            durations_out: None,
            mergeable,
            join: None,
            steps,
        })
    }

    /// The summary's spill and replay ([`TraceJob::set_trace_io`]).
    pub(crate) fn set_trace_io(
        &mut self,
        spill: Box<dyn IntervalSpill>,
        replay: Box<dyn EventReplay>,
    ) {
        self.summary.set_spill(spill);
        self.summary.set_replay(replay);
    }

    /// The end of a read of bytes ([`FirstRead::write`]): the summary named `source` with `top`
    /// ops; `cut`: the gzip stream was cut; `gzip_warning`: the gzip layer's.
    pub(crate) fn finish_bytes(
        mut self,
        source: &str,
        top: usize,
        cut: Option<GzError>,
        gzip_warning: Option<String>,
    ) -> (TraceSummaryResult, Option<StepsReport>, bool) {
        let (end, warnings) = self.scan_end();
        self.cut = cut;
        self.gzip_warning = gzip_warning;
        let base = self
            .scanner
            .as_ref()
            .map(|sc| sc.base_time())
            .unwrap_or_default();
        let seen = self.counters_seen || self.first.as_ref().is_some_and(FirstPass::counters_seen);
        let (summary, first, _, steps) = self.summarize(source, top, &end, &warnings);
        let power = first.and_then(|f| StepsPower::new(f, base));
        let steps = steps.map(|s| steps_report(s.finish(), power));
        (summary, steps, seen)
    }

    /// How the bytes route's scan ended (a scanner that saw no byte, when none came), with
    /// `baseTimeNanoseconds` kept for the first pass.
    fn scan_end(&mut self) -> (ScanEnd, ScanWarnings) {
        let limits = self.limits;
        let sc = self
            .scanner
            .get_or_insert_with(|| EventScanner::new(limits));
        (sc.finish(), *sc.warnings())
    }

    /// The summary, the first pass and whether the document is a bare array, at the end of the
    /// first read.
    fn summarize(
        self,
        source: &str,
        top: usize,
        end: &ScanEnd,
        warnings: &ScanWarnings,
    ) -> (
        TraceSummaryResult,
        Option<FirstPass>,
        Option<bool>,
        Option<StepCollector>,
    ) {
        let mut result = self.summary.finish(source, end, warnings, top);
        if let Some(e) = self.cut {
            result.truncated = true;
            result
                .warnings
                .insert(0, format!("{e}: summarized from what was read"));
        }
        result.warnings.extend(self.gzip_warning);
        (result, self.first, self.bare, self.steps)
    }

    fn new(o: &TraceJobOptions) -> FirstRead {
        let mut summary = TraceSummary::new(o.limits);
        summary.set_mergeable(o.mergeable);
        summary.set_durations_out(o.durations_out);
        let first = match (&o.join, &o.steps) {
            (Some(j), _) => {
                // The annotation spans are copied without a recording too: the trace's own
                // power counters, known only at the end of this read, may stand in for one,
                // and with the copy its second read stays ranged (or is replayed) instead of
                // whole.
                let mut first = FirstPass::new(j.options.gaps, true);
                first.track_ranges_capped(j.max_byte_ranges);
                Some(first)
            }
            // The steps alone: a light first pass (no spans copied, no ranges) for the trace's
            // power counters and the devices it keeps busy, which give the steps' energy.
            (None, Some(_)) => Some(FirstPass::new(GapOptions::default(), false)),
            (None, None) => None,
        };
        FirstRead {
            summary,
            scanner: None,
            first,
            steps: o
                .steps
                .as_ref()
                .map(|p| StepCollector::new(p.clone(), &o.limits)),
            bare: None,
            cut: None,
            gzip_warning: None,
            limits: o.limits,
            counters_seen: false,
        }
    }

    /// Scans decoded bytes: each event to the summary, then to the first pass with the offset
    /// just past it.
    #[inline]
    pub(crate) fn write(&mut self, chunk: &[u8], decompressed: bool) -> Result<(), AnalyzeError> {
        if self.bare.is_none() {
            self.bare = first_byte(chunk).map(|b| b == b'[');
        }
        let limits = self.limits;
        let scanner = self
            .scanner
            .get_or_insert_with(|| EventScanner::new(limits));
        let mut pos = 0;
        loop {
            let (what, nin) = scanner
                .scan(&chunk[pos..])
                .map_err(|error| AnalyzeError::Scan {
                    error,
                    decompressed,
                })?;
            pos += nin;
            match what {
                Scan::Event => {
                    let e = scanner.event();
                    self.summary.add(&e);
                    if let Some(first) = &mut self.first {
                        first.add_at(&e, scanner.bytes_consumed());
                    }
                    if let Some(steps) = &mut self.steps {
                        steps.add(&e);
                    }
                    // Without a first pass, only whether the trace carries power counters (the
                    // page then joins it with them: `TraceJoinOptions::trace_alone`).
                    if self.first.is_none() && !self.counters_seen && e.ph == b"C" {
                        self.counters_seen = counter_sample(&e).is_some();
                    }
                }
                Scan::NeedsInput => return Ok(()),
            }
        }
    }
}

/// Feeds decoded bytes of the current file to its phase.
fn feed(phase: &mut Phase, bytes: &[u8], gzip: bool) -> Result<(), TraceJobError> {
    match phase {
        Phase::Recording(b) => Ok(b.write(bytes).map_err(JoinError::Recording)?),
        Phase::First(f) => f.write(bytes, gzip).map_err(TraceJobError::Trace),
        Phase::Whole(w) => Ok(w.feed(bytes)?),
        Phase::Ranged(r) => Ok(r.feed(bytes)?),
        Phase::Planned(_) | Phase::Done(_) | Phase::Failed => {
            Err(TraceJobError::Protocol("no file is being read"))
        }
    }
}

impl Job for TraceJob {
    type Output = TraceJobResult;
    type Error = TraceJobError;

    fn need(&self) -> Need<'_> {
        match &self.phase {
            Phase::Recording(_) => Need::File(RECORDING),
            Phase::First(_) | Phase::Whole(_) => Need::File(TRACE),
            Phase::Planned(p) => match &p.plan {
                SecondRead::None { .. } => Need::Done,
                SecondRead::Ranged { wanted, .. } => match &self.stored {
                    Some(s) => Need::Ranges(s.ranges()),
                    None => Need::Ranges(wanted),
                },
                SecondRead::Whole => Need::File(TRACE),
            },
            Phase::Ranged(r) => match &self.stored {
                Some(s) => Need::Ranges(s.ranges()),
                None => Need::Ranges(r.wanted_ranges()),
            },
            Phase::Done(_) | Phase::Failed => Need::Done,
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), TraceJobError> {
        self.check()?;
        let r = self.write_inner(chunk);
        self.fail(r)
    }

    fn seek(&mut self, offset: u64) -> Result<(), TraceJobError> {
        self.check()?;
        if matches!(self.phase, Phase::Planned(_)) {
            let r = self.start_second();
            self.fail(r)?;
        }
        let r = match &mut self.phase {
            // A stored gzip trace: the start of its next stored read.
            Phase::Ranged(r) if self.stored.is_some() => {
                match self.stored.as_mut().and_then(|s| s.seek(offset)) {
                    Some(out_start) if out_start >= r.at() => {
                        r.seek(out_start);
                        Ok(())
                    }
                    _ => Err(JoinError::CannotSeek { offset }.into()),
                }
            }
            // Offsets are decoded ones: not into a gzip file given as stored.
            Phase::Ranged(r) if !self.stored_gzip && self.decode.can_seek() && offset >= r.at() => {
                r.seek(offset);
                // No gzip magic to look for at this offset.
                self.decode.start_plain();
                Ok(())
            }
            _ => Err(JoinError::CannotSeek { offset }.into()),
        };
        self.fail(r)
    }

    fn read_error(&mut self, message: &str) {
        let r: Result<(), _> = Err(TraceJobError::Read(message.to_string()));
        let _ = self.fail(r);
    }

    fn listing(&mut self, _paths: &mut dyn Iterator<Item = &str>) -> Result<(), TraceJobError> {
        Err(TraceJobError::Protocol("a trace job lists no folder"))
    }

    fn end(&mut self) -> Result<(), TraceJobError> {
        self.check()?;
        let r = self.end_inner(None);
        self.fail(r)
    }

    fn finish(mut self) -> Result<TraceJobResult, TraceJobError> {
        self.check()?;
        if matches!(self.phase, Phase::Planned(_)) {
            self.start_second()?;
        }
        match self.phase {
            Phase::Done(mut r) => {
                if let Some(found) = self.steps.take() {
                    // Without a recording, the trace's counters are it (as for the pauses),
                    // keyed by trace device.
                    let counters = self
                        .counters
                        .as_ref()
                        .and_then(|c| c.recording.as_deref())
                        .filter(|_| self.rec.is_none());
                    let by_device = self.options.join.as_ref().map(|setup| JoinOptions {
                        gpu_map: GpuMap::default(),
                        ..setup.options.clone()
                    });
                    r.steps = Some(match (&r.join, &self.options.join) {
                        (Some(report), Some(setup)) => {
                            let (options, source) = match (counters, &by_device) {
                                (Some(_), Some(o)) => (o, "trace_counters"),
                                _ => (&setup.options, "telemetry"),
                            };
                            let recording = self.rec.as_deref().or(counters);
                            found
                                .report(Some(JoinView::of_join(report, options, recording, source)))
                        }
                        _ => steps_report(found, self.steps_power.take()),
                    });
                }
                Ok(*r)
            }
            _ => Err(TraceJobError::Protocol("the job is not done")),
        }
    }
}

/// The document's first byte past whitespace and a byte-order mark, if these bytes hold it.
fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
}
