//! The whole join over whole files, for callers that hand it bytes: the page (one file read at
//! a time, in chunks) and tests. It gives the bytes `flinch-trace trace FILE --telemetry CSV
//! --json` prints: the summary's JSON object with the join's keys appended ([`merge_json`]).
//!
//! It is the trace job ([`TraceJob`](crate::trace_job::TraceJob), which holds the rule of what
//! is read) with the recording read as its first file (or, for a trace alone,
//! [`TraceJoinOptions::trace_alone`], none: the trace's own power counters stand in for it), under the names the page uses: the caller
//! asks [`TraceJoin::next_file`] which file to read next and feeds it with
//! [`write`](TraceJoin::write) and [`end_file`](TraceJoin::end_file): the recording, then the
//! trace, then, only when the join needs it, the trace again (for a plain trace, only its
//! [`wanted_ranges`](TraceJoin::wanted_ranges) may be given). Each is plain or gzip (detected by
//! its magic bytes). [`TraceJoin::result_json`] and [`TraceJoin::timeline_json`] give the
//! results.
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{
    JoinError, JoinReport, OptionError, RecordingOptions, Timeline, TraceJoinOptions, join_options,
    power_source_named,
};
use crate::job::{Job, Need};
use crate::summary::DEFAULT_TOP_OPS;
use crate::trace_job::{
    JoinSetup, RECORDING, RecordingSource, TraceJob, TraceJobError, TraceJobOptions, TraceJobResult,
};

/// Which file [`TraceJoin`] reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextFile {
    /// The recording (trace.csv).
    Recording,
    /// The trace (read once, or twice when the join needs it).
    Trace,
}

/// A trace joined with a recording, fed file by file (see the module docs).
pub struct TraceJoin {
    job: Option<TraceJob>,
    result: Option<TraceJobResult>,
    json: Option<String>,
    rec: Option<Arc<super::Recording>>,
    failed: Option<JoinError>,
    trace_reads: u32,
}

/// The join's error for the job's: the page's callers name [`JoinError`]s.
fn join_error(e: TraceJobError) -> JoinError {
    match e {
        TraceJobError::Trace(e) => JoinError::Trace(e),
        TraceJobError::Join(e) => e,
        // The page gives no read errors and no copier; out of order is "ended".
        TraceJobError::Read(_) | TraceJobError::Copy(_) | TraceJobError::Protocol(_) => {
            JoinError::Ended
        }
    }
}

impl TraceJoin {
    /// A join with options as JSON (see [`TraceJoinOptions`]).
    ///
    /// # Errors
    /// Unknown fields or bad option values, with the option's name.
    pub fn from_json(options_json: &str) -> Result<TraceJoin, JoinError> {
        let o: TraceJoinOptions =
            serde_json::from_str(options_json).map_err(|e| OptionError::Json(Arc::new(e)))?;
        TraceJoin::new(o)
    }

    /// A join with these options.
    ///
    /// # Errors
    /// Bad option values, with the option's name.
    pub fn new(o: TraceJoinOptions) -> Result<TraceJoin, JoinError> {
        let opts = join_options(
            o.min_gap_ms,
            o.top_pauses.unwrap_or(super::DEFAULT_TOP_PAUSES),
            o.clock_offset_ms.as_deref(),
            o.gpu_map.as_deref(),
        )?;
        let power_source = power_source_named(o.power_source.as_deref())?;
        let recording = if o.trace_alone {
            RecordingSource::None
        } else {
            RecordingSource::Read(RecordingOptions {
                power_source,
                ..RecordingOptions::default()
            })
        };
        let steps = match o.step_name.as_deref() {
            Some(p) => Some(crate::steps::StepPattern::parse(p).map_err(OptionError::StepName)?),
            None => o.steps.then(crate::steps::StepPattern::default),
        };
        let job = TraceJob::new(TraceJobOptions {
            source: o.source,
            limits: o.limits.limits(),
            top: o.top.unwrap_or(DEFAULT_TOP_OPS),
            durations_out: None,
            mergeable: false,
            steps,
            join: Some(JoinSetup {
                only_with_counters: o.trace_alone,
                ..JoinSetup::new(opts, recording)
            }),
        });
        Ok(TraceJoin {
            job: Some(job),
            result: None,
            json: None,
            rec: None,
            failed: None,
            trace_reads: 0,
        })
    }

    /// The file to read next (from its first byte), or `None` when the result is ready.
    pub fn next_file(&self) -> Option<NextFile> {
        match self.job.as_ref()?.need() {
            Need::File(RECORDING) => Some(NextFile::Recording),
            Need::File(_) | Need::Ranges(_) => Some(NextFile::Trace),
            Need::Listing(_) | Need::Done => None,
        }
    }

    /// Runs `f` on the job, keeping the first error; the result is taken once the job is done.
    fn drive(
        &mut self,
        f: impl FnOnce(&mut TraceJob) -> Result<(), TraceJobError>,
    ) -> Result<(), JoinError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some(job) = self.job.as_mut() else {
            return Err(JoinError::Ended);
        };
        let r = f(job).map_err(join_error);
        self.trace_reads = job.trace_reads();
        if self.rec.is_none() {
            self.rec = job.power_recording().cloned();
        }
        let done = job.need() == Need::Done;
        let r = r.and_then(|()| {
            if !done {
                return Ok(());
            }
            let job = self.job.take().ok_or(JoinError::Ended)?;
            let result = job.finish().map_err(join_error)?;
            self.json = Some(result.to_json());
            self.result = Some(result);
            Ok(())
        });
        if let Err(e) = &r {
            self.failed = Some(e.clone());
            self.job = None;
        }
        r
    }

    /// The next chunk of the current file.
    ///
    /// # Errors
    /// Malformed input; the join then stays failed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JoinError> {
        self.drive(|job| job.write(chunk))
    }

    /// The recording file's length in bytes, when the caller knows it (before its first
    /// chunk). A plain recording's series are then reserved once instead of grown by copying
    /// (`RecordingBuilder::size_hint`); a gzip one ignores it. Only capacity changes: the result
    /// is the same with or without the hint.
    pub fn recording_size_hint(&mut self, total_bytes: u64) {
        if let Some(job) = self.job.as_mut() {
            job.recording_size_hint(total_bytes);
        }
    }

    /// The end of the current file.
    ///
    /// # Errors
    /// Input that ended where it cannot, or a join that cannot run (a trace without
    /// `baseTimeNanoseconds` and no `clock_offset_ms`).
    pub fn end_file(&mut self) -> Result<(), JoinError> {
        self.drive(|job| job.end())
    }

    /// For the second read of a plain (not gzip) trace that scans only some byte ranges: those
    /// ranges, `[start, end)` in file bytes, sorted and disjoint. A caller may then give only
    /// them, each after [`seek`](Self::seek) to its start, instead of the whole file (the
    /// result is the same). `None` when the whole file is to be given (from its first byte), or
    /// once bytes of this read were given.
    pub fn wanted_ranges(&self) -> Option<Vec<(u64, u64)>> {
        self.job.as_ref()?.wanted_ranges()
    }

    /// The next bytes given are those from `offset` on (forward only): see
    /// [`wanted_ranges`](Self::wanted_ranges).
    ///
    /// # Errors
    /// Not a read that [`wanted_ranges`](Self::wanted_ranges) describes, or a backward offset.
    pub fn seek(&mut self, offset: u64) -> Result<(), JoinError> {
        self.drive(|job| job.seek(offset))
    }

    /// How many times the trace has been read to its end so far (1, or 2 when the join needed a
    /// second read).
    pub fn trace_reads(&self) -> u32 {
        self.trace_reads
    }

    /// The result JSON, once [`next_file`](Self::next_file) is `None`: the bytes
    /// `trace FILE --telemetry CSV --json` prints (without the final newline).
    pub fn result_json(&self) -> Option<&str> {
        self.json.as_deref()
    }

    /// The join's report, once done.
    pub fn report(&self) -> Option<&JoinReport> {
        self.result.as_ref()?.join.as_ref()
    }

    /// The page's timeline, once done, as JSON (see [`Timeline`]): the power of the recording,
    /// or of the trace's own counters when they stand in for one.
    pub fn timeline_json(&self, buckets: usize) -> Option<String> {
        let t = Timeline::new(self.report()?, self.rec.as_deref()?, buckets)?;
        serde_json::to_string(&t).ok()
    }
}
