//! The whole join over whole files, for callers that hand it bytes: the page (one file read at
//! a time, in chunks) and tests. It gives the bytes `flinch-trace trace FILE --telemetry CSV
//! --json` prints: the summary's JSON object with the join's keys after its own
//! ([`summary_with_join_json`]).
//!
//! The caller asks [`TraceJoin::next_file`] which file to read next and feeds it with
//! [`write`](TraceJoin::write) and [`end_file`](TraceJoin::end_file): the recording, then the
//! trace, then, only when the join needs it, the trace again. Each is plain or gzip (detected
//! by its magic bytes). [`TraceJoin::result_json`] and [`TraceJoin::timeline_json`] give the
//! results.
//!
//! As native `trace` does, the join's first pass ([`FirstPass`]) rides on the summary's own
//! scan: each event the scanner gives goes to the summary, then to the first pass, with its
//! byte offset (the pass remembers byte ranges of the trace). The second pass ([`JoinPass`]:
//! host events and energy) reads the trace again only when there is a pause to list (host
//! events matter only to those) or when the first pass's copy of the annotation spans
//! overflowed its caps; otherwise it replays that copy. With a pause to list, the second read
//! scans only the byte ranges whose host events meet a listed pause
//! ([`FirstPassResult::plan_second_pass`]) and replays the copied annotation spans of the others;
//! the bytes between are decoded and skipped. Either way [`JoinPass`] gets the events a full
//! second read would give it, in the same order, so the result is the same byte for byte. Where
//! a range cannot be resumed (no `,` after the event it follows), the join reads the trace a
//! third time, whole, with a fresh second pass, as native does.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::ranged::{Cursor, Ranged};
use super::{
    FirstPass, FirstPassResult, JoinError, JoinOptions, JoinPass, JoinReport, OptionError,
    Recording, RecordingBuilder, RecordingOptions, Timeline, TraceJoinOptions, join_options,
    summary_with_join_json,
};
use crate::analyzer::{AnalyzerOptions, Kind, TraceEngine, trailing_garbage_warning};
use crate::gzip::MaybeGz;
use crate::json::{EventScanner, Scan};
use crate::summary::TraceSummaryResult;
use crate::window::PowerSource;

/// Which file [`TraceJoin`] reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextFile {
    /// The recording (trace.csv).
    Recording,
    /// The trace (read once, or twice when the join needs it).
    Trace,
}

/// Scans `chunk` to its end, giving each event to `f`.
pub(super) fn scan_all(
    sc: &mut EventScanner,
    chunk: &[u8],
    mut f: impl FnMut(&crate::json::Event<'_>),
) -> Result<(), JoinError> {
    let mut pos = 0;
    loop {
        let (what, n) = sc.scan(&chunk[pos..]).map_err(JoinError::Scan)?;
        pos += n;
        match what {
            Scan::Event => f(&sc.event()),
            Scan::NeedsInput => return Ok(()),
        }
    }
}

enum Phase {
    Recording(Box<RecordingBuilder>),
    /// The summary's scan, and the join's first pass on its events; `bare`: whether the
    /// document is a bare array, once its first byte is seen.
    First {
        engine: Box<TraceEngine>,
        first: Box<FirstPass>,
        bare: Option<bool>,
    },
    Second {
        scanner: Box<EventScanner>,
        pass: Box<JoinPass<'static>>,
        summary: Box<TraceSummaryResult>,
    },
    /// The second read over the planned byte ranges only.
    Ranged(Box<Ranged>),
    Done,
}

/// A trace joined with a recording, fed file by file (see the module docs).
pub struct TraceJoin {
    analyzer_opts: AnalyzerOptions,
    opts: JoinOptions,
    rec: Option<Arc<Recording>>,
    /// The current file's layer: plain, or gzip by its magic.
    decode: MaybeGz,
    phase: Phase,
    report: Option<JoinReport>,
    json: Option<String>,
    failed: Option<JoinError>,
    trace_reads: u32,
    recording_bytes: Option<u64>,
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
            o.top_pauses.unwrap_or(50),
            o.clock_offset_ms.as_deref(),
            o.gpu_map.as_deref(),
        )?;
        let power_source = match o.power_source.as_deref() {
            None | Some("unknown") => PowerSource::Unknown,
            Some("instant") => PowerSource::Instant,
            Some("average") => PowerSource::Average,
            Some(s) => return Err(OptionError::PowerSource(s.into()).into()),
        };
        Ok(TraceJoin {
            analyzer_opts: AnalyzerOptions {
                kind: Kind::Trace,
                limits: o.limits,
                source: o.source,
                top: o.top,
                ..AnalyzerOptions::default()
            },
            opts,
            rec: None,
            decode: MaybeGz::new(),
            phase: Phase::Recording(Box::new(RecordingBuilder::new(RecordingOptions {
                power_source,
                ..RecordingOptions::default()
            }))),
            report: None,
            json: None,
            failed: None,
            trace_reads: 0,
            recording_bytes: None,
        })
    }

    /// The file to read next (from its first byte), or `None` when the result is ready.
    pub fn next_file(&self) -> Option<NextFile> {
        match self.phase {
            Phase::Recording(_) => Some(NextFile::Recording),
            Phase::First { .. } | Phase::Second { .. } | Phase::Ranged(_) => Some(NextFile::Trace),
            Phase::Done => None,
        }
    }

    /// The next chunk of the current file.
    ///
    /// # Errors
    /// Malformed input; the join then stays failed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JoinError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.write_inner(chunk);
        self.fail_on(r)
    }

    fn fail_on<T>(&mut self, r: Result<T, JoinError>) -> Result<T, JoinError> {
        if let Err(e) = &r {
            self.failed = Some(e.clone());
            self.phase = Phase::Done;
        }
        r
    }

    /// The recording file's length in bytes, when the caller knows it (before its first
    /// chunk). A plain recording's series are then reserved once instead of grown by copying
    /// (`RecordingBuilder::size_hint`); a gzip one ignores it. Only capacity changes: the result
    /// is the same with or without the hint.
    pub fn recording_size_hint(&mut self, total_bytes: u64) {
        self.recording_bytes = Some(total_bytes);
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), JoinError> {
        if let (Phase::Recording(b), None) = (&mut self.phase, self.decode.is_gzip())
            && let Some(total) = self.recording_bytes.take()
            && !crate::gzip::is_gzip(chunk)
        {
            b.size_hint(total);
        }
        let TraceJoin { decode, phase, .. } = self;
        decode.write(chunk, |bytes, gzip| feed(phase, bytes, gzip))
    }

    /// The end of the current file.
    ///
    /// # Errors
    /// Input that ended where it cannot, or a join that cannot run (a trace without
    /// `baseTimeNanoseconds` and no `clock_offset_ms`).
    pub fn end_file(&mut self) -> Result<(), JoinError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.end_inner();
        self.fail_on(r)
    }

    fn end_inner(&mut self) -> Result<(), JoinError> {
        let TraceJoin { decode, phase, .. } = self;
        decode.end(|bytes, gzip| feed(phase, bytes, gzip))?;
        // Where the gzip stream was cut, and the trailing-garbage warning.
        let (cut, warning) = match self.decode.decoder() {
            None => (None, None),
            Some(dec) => {
                let warning = dec.trailing_garbage_at().map(trailing_garbage_warning);
                match dec.finish() {
                    Ok(()) => (None, warning),
                    Err(e) if e.is_truncated() => (Some(e), warning),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let plain = self.decode.is_gzip() == Some(false);
        self.decode = MaybeGz::new();
        match core::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Recording(b) => {
                if let Some(cut) = cut {
                    return Err(JoinError::RecordingCut(cut));
                }
                self.rec = Some(Arc::new(b.end()?));
                self.start_first();
            }
            Phase::First {
                engine,
                first,
                bare,
            } => {
                self.trace_reads += 1;
                let (summary, base) = engine.finish(&self.analyzer_opts, cut, warning);
                let mut first = *first;
                first.set_base_time_ns(base);
                self.after_first(Box::new(summary), first.finish(), bare, plain)?;
            }
            Phase::Second {
                mut scanner,
                pass,
                summary,
            } => {
                self.trace_reads += 1;
                scanner.finish();
                self.done(&summary, *pass);
            }
            Phase::Ranged(mut r) => {
                self.trace_reads += 1;
                if r.end() {
                    let Ranged { summary, pass, .. } = *r;
                    self.done(&summary, pass);
                } else {
                    // A range could not be resumed: read it all, with a fresh pass.
                    let Ranged {
                        summary,
                        fallback: (found, base),
                        ..
                    } = *r;
                    let pass = JoinPass::with_recording(
                        found,
                        base,
                        self.opts.clone(),
                        self.rec.clone().map(Into::into),
                    )?;
                    self.phase = Phase::Second {
                        scanner: Box::new(EventScanner::new(self.analyzer_opts.limits())),
                        pass: Box::new(pass),
                        summary,
                    };
                }
            }
            Phase::Done => return Err(JoinError::Ended),
        }
        Ok(())
    }

    fn start_first(&mut self) {
        self.phase = Phase::First {
            engine: Box::new(TraceEngine::new(&self.analyzer_opts)),
            first: Box::new({
                let mut first = FirstPass::new(self.opts.gaps, self.rec.is_some());
                first.track_ranges();
                first
            }),
            bare: None,
        };
    }

    /// After the first read of the trace: the second pass, fed by a second read when the join
    /// needs one (see the module docs), else by the copied annotation spans.
    fn after_first(
        &mut self,
        summary: Box<TraceSummaryResult>,
        first: FirstPassResult,
        bare: Option<bool>,
        plain: bool,
    ) -> Result<(), JoinError> {
        let max_pauses = self.opts.pauses.max_pauses_per_device;
        let listed = max_pauses > 0 && first.found.devices.iter().any(|d| !d.gaps.is_empty());
        let steps = listed
            .then(|| first.plan_second_pass(max_pauses, self.rec.is_some()))
            .flatten();
        let FirstPassResult {
            found,
            base_time_ns,
            annotations,
            ranges: _,
        } = first;
        if let Some(steps) = steps {
            let pass = JoinPass::with_recording(
                found.clone(),
                base_time_ns,
                self.opts.clone(),
                self.rec.clone().map(Into::into),
            )?;
            self.phase = Phase::Ranged(Box::new(Ranged {
                pass,
                summary,
                steps,
                next: 0,
                kept: annotations,
                at: 0,
                bare,
                plain,
                cur: Cursor::Idle,
                fallback: (found, base_time_ns),
                limits: self.analyzer_opts.limits(),
                failed: false,
            }));
            return Ok(());
        }
        let mut pass = JoinPass::with_recording(
            found,
            base_time_ns,
            self.opts.clone(),
            self.rec.clone().map(Into::into),
        )?;
        // Host events matter only to listed pauses; without one, a recording needs only the
        // annotation spans, which the first pass copied when they fit (as native `trace`).
        let replay = annotations.filter(|_| !listed && self.rec.is_some());
        let reread = listed || (self.rec.is_some() && replay.is_none());
        if let Some(a) = replay {
            a.replay(|e| pass.add(e));
        }
        if !reread {
            self.done(&summary, pass);
            return Ok(());
        }
        self.phase = Phase::Second {
            scanner: Box::new(EventScanner::new(self.analyzer_opts.limits())),
            pass: Box::new(pass),
            summary,
        };
        Ok(())
    }

    fn done(&mut self, summary: &TraceSummaryResult, pass: JoinPass<'static>) {
        let report = pass.finish();
        self.json = Some(summary_with_join_json(summary, &report));
        self.report = Some(report);
        self.phase = Phase::Done;
    }

    /// For the second read of a plain (not gzip) trace that scans only some byte ranges: those
    /// ranges, `[start, end)` in file bytes, sorted and disjoint. A caller may then give only
    /// them, each after [`seek`](Self::seek) to its start, instead of the whole file (the
    /// result is the same). `None` when the whole file is to be given (from its first byte), or
    /// once bytes of this read were given.
    pub fn wanted_ranges(&self) -> Option<Vec<(u64, u64)>> {
        match &self.phase {
            Phase::Ranged(r) if r.plain && r.at == 0 && self.decode.is_gzip().is_none() => {
                Some(r.wanted())
            }
            _ => None,
        }
    }

    /// The next bytes given are those from `offset` on (forward only): see
    /// [`wanted_ranges`](Self::wanted_ranges).
    ///
    /// # Errors
    /// Not a read that [`wanted_ranges`](Self::wanted_ranges) describes, or a backward offset.
    pub fn seek(&mut self, offset: u64) -> Result<(), JoinError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = match &mut self.phase {
            Phase::Ranged(r) if r.plain && offset >= r.at => {
                r.at = offset;
                // Plain: no gzip magic to look for at this offset.
                if self.decode.is_gzip().is_none() {
                    self.decode = MaybeGz::plain();
                }
                Ok(())
            }
            _ => Err(JoinError::CannotSeek { offset }),
        };
        self.fail_on(r)
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
        self.report.as_ref()
    }

    /// The page's timeline, once done, as JSON (see [`Timeline`]).
    pub fn timeline_json(&self, buckets: usize) -> Option<String> {
        let t = Timeline::new(self.report.as_ref()?, self.rec.as_deref()?, buckets)?;
        serde_json::to_string(&t).ok()
    }
}

/// The document's first byte past whitespace and a byte-order mark, if these bytes hold it.
fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
}

/// Feeds decoded bytes of the current file to its phase.
fn feed(phase: &mut Phase, bytes: &[u8], gzip: bool) -> Result<(), JoinError> {
    match phase {
        Phase::Recording(b) => Ok(b.write(bytes)?),
        Phase::First {
            engine,
            first,
            bare,
        } => {
            if bare.is_none() {
                *bare = first_byte(bytes).map(|b| b == b'[');
            }
            engine
                .write(bytes, gzip, |e, end| first.add_at(e, end))
                .map_err(JoinError::Trace)
        }
        Phase::Second { scanner, pass, .. } => scan_all(scanner, bytes, |e| pass.add(e)),
        Phase::Ranged(r) => r.feed(bytes),
        Phase::Done => Err(JoinError::Ended),
    }
}
