//! The whole join over whole files, for callers that hand it bytes: the page (one file read at
//! a time, in chunks) and tests. It gives the bytes `flinch-trace trace FILE --telemetry CSV
//! --json` prints: the summary's JSON object with the join's keys appended ([`merge_json`]).
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
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::{
    FirstPass, FirstPassResult, GapsFound, GpuMap, JoinOptions, JoinPass, JoinReport,
    KeptAnnotations, Recording, RecordingBuilder, RecordingOptions, Resume, SecondPassStep,
    parse_offset_ms,
};
use crate::analyzer::{AnalyzerOptions, Kind, LimitsPreset, TraceEngine, trailing_garbage_warning};
use crate::gzip::{GzDecoder, GzError, GzStatus, is_gzip};
use crate::json::{ElementBoundary, EventScanner, Scan};
use crate::window::PowerSource;

/// The summary's JSON object (`trace --json`) with the join's keys appended, each in its
/// struct's field order: the bytes `trace --json` prints with a join option.
pub fn merge_json(summary_json: &str, r: &JoinReport) -> String {
    let trimmed = summary_json.trim_end();
    let Some(body) = trimmed.strip_suffix('}') else {
        return summary_json.to_string();
    };
    let mut out = body.trim_end().to_string();
    let mut add = |key: &str, value: String| {
        out.push_str(&format!(",\n  \"{key}\": {}", value.replace('\n', "\n  ")));
    };
    add("alignment", pretty(&r.alignment));
    add("pause_devices", pretty(&r.pause_devices));
    add("pauses", pretty(&r.pauses));
    if let Some(a) = &r.annotation_energy {
        add("annotation_energy", pretty(a));
    }
    add("join_warnings", pretty(&r.join_warnings));
    if let Some(note) = r.gpu_energy_note {
        add("gpu_energy_note", pretty(&note));
    }
    out.push_str("\n}");
    out
}

fn pretty<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The join's command-line options, checked into [`JoinOptions`]: `--min-gap-ms`,
/// `--top-pauses`, `--clock-offset-ms`, `--gpu-map`.
///
/// # Errors
/// A text naming the option.
pub fn join_options(
    min_gap_ms: Option<f64>,
    top_pauses: usize,
    clock_offset_ms: Option<&str>,
    gpu_map: Option<&str>,
) -> Result<JoinOptions, String> {
    let mut o = JoinOptions::default();
    if let Some(ms) = min_gap_ms {
        if !(ms.is_finite() && (0.0..1e12).contains(&ms)) {
            return Err(format!(
                "--min-gap-ms {ms}: expected a number of ms, 0 or more (0: every idle gap)"
            ));
        }
        // 0 asks for every idle gap: times are whole ns, so the finder takes gaps of 1 ns or
        // more (busy stretches that touch leave no gap).
        o.gaps.min_gap_ns = round_positive(ms * 1e6) as i64;
    }
    o.pauses.max_pauses_per_device = top_pauses;
    if let Some(text) = clock_offset_ms {
        o.clock_offset_ns =
            Some(parse_offset_ms(text).map_err(|e| format!("--clock-offset-ms {text}: {e}"))?);
    }
    if let Some(text) = gpu_map {
        o.gpu_map = GpuMap::parse(text)?;
    }
    Ok(o)
}

/// `x.round()` for finite `x >= 0` (no libm in no_std): half away from zero, exactly.
pub(crate) fn round_positive(x: f64) -> f64 {
    let t = x as u64 as f64; // truncation; exact below 2^53, and x is integral above it
    if x - t >= 0.5 { t + 1.0 } else { t }
}

/// Options of a [`TraceJoin`], from JSON with these field names (all optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceJoinOptions {
    /// The `source` written into the summary (the trace's name).
    pub source: String,
    /// Memory bounds of the summary.
    pub limits: LimitsPreset,
    /// Ops listed by the summary (absent: 40).
    pub top: Option<usize>,
    /// `--min-gap-ms` (absent: 100).
    pub min_gap_ms: Option<f64>,
    /// `--top-pauses` (absent: 50).
    pub top_pauses: Option<usize>,
    /// `--clock-offset-ms`, as text (exact to 1 ns).
    pub clock_offset_ms: Option<String>,
    /// `--gpu-map`.
    pub gpu_map: Option<String>,
    /// Which NVML reading the recording's `gpu_power_W` holds (`instant`, `average`; absent:
    /// unknown): what the recording's `.meta.json` sidecar names
    /// ([`crate::sidecar::power_source`]), as native reads it.
    pub power_source: Option<String>,
}

/// Which file [`TraceJoin`] reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextFile {
    /// The recording (trace.csv).
    Recording,
    /// The trace (read once, or twice when the join needs it).
    Trace,
}

/// Where [`Decode`] puts decoded bytes (with whether the file is gzip).
type Sink<'a> = &'a mut dyn FnMut(&[u8], bool) -> Result<(), String>;

/// Bytes of one file, plain or gzip (by magic), decoded for a consumer.
struct Decode {
    first: Option<u8>,
    started: bool,
    gz: Option<(Box<GzDecoder>, Vec<u8>)>,
}

impl Decode {
    fn new() -> Decode {
        Decode {
            first: None,
            started: false,
            gz: None,
        }
    }

    fn write(&mut self, chunk: &[u8], out: Sink<'_>) -> Result<(), String> {
        if !self.started {
            let Some(&b) = chunk.first() else {
                return Ok(());
            };
            let magic = match self.first {
                None if chunk.len() == 1 => {
                    self.first = Some(b);
                    return Ok(());
                }
                None => [b, chunk[1]],
                Some(f) => [f, b],
            };
            self.started = true;
            if is_gzip(&magic) {
                self.gz = Some((Box::new(GzDecoder::new()), vec![0; 64 * 1024]));
            }
            if let Some(f) = self.first.take() {
                self.feed(&[f], out)?;
            }
        }
        self.feed(chunk, out)
    }

    fn feed(&mut self, mut input: &[u8], out: Sink<'_>) -> Result<(), String> {
        let Some((dec, buf)) = &mut self.gz else {
            return out(input, false);
        };
        loop {
            let (status, nin, nout) = dec.decode(input, buf).map_err(|e| e.to_string())?;
            out(&buf[..nout], true)?;
            input = &input[nin..];
            if status != GzStatus::OutputFull {
                return Ok(());
            }
        }
    }

    /// Ends the file: (where the gzip stream was cut, the trailing-garbage warning).
    fn end(&mut self, out: Sink<'_>) -> Result<(Option<GzError>, Option<String>), String> {
        if let Some(f) = self.first.take() {
            self.started = true;
            out(&[f], false)?;
        }
        let Some((dec, _)) = &self.gz else {
            return Ok((None, None));
        };
        let warning = dec.trailing_garbage_at().map(trailing_garbage_warning);
        match dec.finish() {
            Ok(()) => Ok((None, warning)),
            Err(e) if e.is_truncated() => Ok((Some(e), warning)),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn scan_all(
    sc: &mut EventScanner,
    chunk: &[u8],
    mut f: impl FnMut(&crate::json::Event<'_>),
) -> Result<(), String> {
    let mut pos = 0;
    loop {
        let (what, n) = sc.scan(&chunk[pos..]).map_err(|e| format!("join: {e}"))?;
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
        summary_json: String,
    },
    /// The second read over the planned byte ranges only.
    Ranged(Box<Ranged>),
    Done,
}

/// The second read of the trace when it scans only some byte ranges: the decoded bytes arrive
/// in order, and [`Ranged::feed`] scans those of the current step's range and skips the others.
struct Ranged {
    pass: JoinPass<'static>,
    summary_json: String,
    steps: Vec<SecondPassStep>,
    /// The step under way.
    next: usize,
    kept: Option<KeptAnnotations>,
    /// The decoded offset of the next byte to arrive.
    at: u64,
    /// Whether the document is a bare array (as the first read found).
    bare: Option<bool>,
    /// The trace is not gzip: the caller may give only the [`TraceJoin::wanted_ranges`].
    plain: bool,
    cur: Cursor,
    /// What a full read needs if a range cannot be resumed.
    fallback: (GapsFound, Option<i64>),
    limits: crate::Limits,
    /// A range could not be resumed: the rest of this read is ignored.
    failed: bool,
}

/// Where [`Ranged`] is within its step.
enum Cursor {
    /// Step `next` has not begun.
    Idle,
    /// Looking for the `,` after the event that ends at `from`.
    Comma { from: u64 },
    /// Scanning from `start` to `end`.
    Scanning {
        scanner: Box<EventScanner>,
        start: u64,
        end: u64,
    },
}

impl Ranged {
    /// Runs the steps that need no byte (replays) and starts the next scan, until one waits
    /// for bytes or all are done.
    fn advance(&mut self) {
        while let Cursor::Idle = self.cur {
            let Some(step) = self.steps.get(self.next) else {
                return;
            };
            match step {
                SecondPassStep::Replay(r) => {
                    if let Some(k) = &self.kept {
                        let pass = &mut self.pass;
                        k.replay_range(r.clone(), |e| pass.add(e));
                    }
                    self.next += 1;
                }
                &SecondPassStep::Scan { resume, end } => {
                    self.cur = match resume {
                        Resume::Start => Cursor::Scanning {
                            scanner: Box::new(EventScanner::new(self.limits)),
                            start: 0,
                            end,
                        },
                        Resume::Boundary(o) => Cursor::Scanning {
                            scanner: Box::new(self.resume_at(o)),
                            start: o,
                            end,
                        },
                        Resume::AfterEvent(o) => Cursor::Comma { from: o },
                    };
                }
            }
        }
    }

    fn resume_at(&self, offset: u64) -> EventScanner {
        EventScanner::resume_at(
            self.limits,
            ElementBoundary {
                offset,
                bare: self.bare.unwrap_or(false),
            },
        )
    }

    /// The next decoded bytes of the trace.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        let base = self.at;
        self.at += bytes.len() as u64;
        if self.failed {
            return Ok(());
        }
        // `i`: the index in `bytes` of the next byte to look at.
        let mut i = 0usize;
        loop {
            self.advance();
            let here = base + i as u64;
            match &mut self.cur {
                Cursor::Idle => return Ok(()),
                Cursor::Comma { from } => {
                    if here > *from {
                        return Err(missing(*from));
                    }
                    let skip = (*from - here).min((bytes.len() - i) as u64);
                    i += skip as usize;
                    let Some(k) = bytes[i..]
                        .iter()
                        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
                    else {
                        // Whitespace to the end of these bytes: look on from the next.
                        *from = (*from).max(base + bytes.len() as u64);
                        return Ok(());
                    };
                    i += k;
                    if bytes[i] != b',' {
                        self.failed = true;
                        return Ok(());
                    }
                    i += 1;
                    let start = base + i as u64;
                    let end = match self.steps.get(self.next) {
                        Some(&SecondPassStep::Scan { end, .. }) => end,
                        _ => unreachable!("a comma is looked for only for a scan step"),
                    };
                    self.cur = Cursor::Scanning {
                        scanner: Box::new(self.resume_at(start)),
                        start,
                        end,
                    };
                }
                Cursor::Scanning {
                    scanner,
                    start,
                    end,
                } => {
                    let skip = start.saturating_sub(here).min((bytes.len() - i) as u64);
                    i += skip as usize;
                    let here = base + i as u64;
                    if here < *end && here >= *start && scanner.bytes_consumed() != here {
                        return Err(missing(scanner.bytes_consumed()));
                    }
                    let take = end.saturating_sub(here).min((bytes.len() - i) as u64) as usize;
                    let pass = &mut self.pass;
                    scan_all(scanner, &bytes[i..i + take], |e| pass.add(e))?;
                    i += take;
                    if base + (i as u64) < *end {
                        return Ok(());
                    }
                    self.cur = Cursor::Idle;
                    self.next += 1;
                }
            }
        }
    }

    /// The byte ranges of the trace this read scans (sorted, disjoint): all a caller of a plain
    /// file needs to give, each after [`TraceJoin::seek`] to its start.
    fn wanted(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for step in &self.steps {
            if let &SecondPassStep::Scan { resume, end } = step {
                let start = match resume {
                    Resume::Start => 0,
                    Resume::Boundary(o) | Resume::AfterEvent(o) => o,
                };
                match out.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(end),
                    _ => out.push((start, end)),
                }
            }
        }
        out
    }

    /// The end of the read: the steps past the bytes that came (replays only; a range cut short
    /// ends where the bytes did, as a full read would). `false`: a range could not be resumed.
    fn end(&mut self) -> bool {
        loop {
            match self.cur {
                // As native: no `,` where a range resumes, here the end of the input.
                Cursor::Comma { .. } => self.failed = true,
                Cursor::Scanning { .. } => {
                    self.cur = Cursor::Idle;
                    self.next += 1;
                }
                Cursor::Idle => {}
            }
            if self.failed {
                return false;
            }
            self.advance();
            if matches!(self.cur, Cursor::Idle) {
                return true;
            }
        }
    }
}

/// A trace joined with a recording, fed file by file (see the module docs).
pub struct TraceJoin {
    analyzer_opts: AnalyzerOptions,
    opts: JoinOptions,
    rec: Option<Arc<Recording>>,
    decode: Decode,
    phase: Phase,
    report: Option<JoinReport>,
    json: Option<String>,
    failed: Option<String>,
    trace_reads: u32,
    recording_bytes: Option<u64>,
}

impl TraceJoin {
    /// A join with options as JSON (see [`TraceJoinOptions`]).
    ///
    /// # Errors
    /// Unknown fields or bad option values, with the option's name.
    pub fn from_json(options_json: &str) -> Result<TraceJoin, String> {
        let o: TraceJoinOptions = serde_json::from_str(options_json).map_err(|e| e.to_string())?;
        TraceJoin::new(o)
    }

    /// A join with these options.
    ///
    /// # Errors
    /// Bad option values, with the option's name.
    pub fn new(o: TraceJoinOptions) -> Result<TraceJoin, String> {
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
            Some(s) => return Err(format!("power_source {s}: expected instant or average")),
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
            decode: Decode::new(),
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
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.write_inner(chunk);
        self.fail_on(r)
    }

    fn fail_on<T>(&mut self, r: Result<T, String>) -> Result<T, String> {
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

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), String> {
        if let (Phase::Recording(b), false) = (&mut self.phase, self.decode.started)
            && let Some(total) = self.recording_bytes.take()
            && !crate::gzip::is_gzip(chunk)
        {
            b.size_hint(total);
        }
        let TraceJoin { decode, phase, .. } = self;
        decode.write(chunk, &mut |bytes, gzip| feed(phase, bytes, gzip))
    }

    /// The end of the current file.
    ///
    /// # Errors
    /// Input that ended where it cannot, or a join that cannot run (a trace without
    /// `baseTimeNanoseconds` and no `clock_offset_ms`).
    pub fn end_file(&mut self) -> Result<(), String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.end_inner();
        self.fail_on(r)
    }

    fn end_inner(&mut self) -> Result<(), String> {
        let (cut, warning) = {
            let TraceJoin { decode, phase, .. } = self;
            decode.end(&mut |bytes, gzip| feed(phase, bytes, gzip))?
        };
        let plain = self.decode.started && self.decode.gz.is_none();
        self.decode = Decode::new();
        match core::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Recording(b) => {
                if let Some(cut) = cut {
                    return Err(format!("recording: {cut}"));
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
                self.after_first(summary.to_json(), first.finish(), bare, plain)?;
            }
            Phase::Second {
                mut scanner,
                pass,
                summary_json,
            } => {
                self.trace_reads += 1;
                scanner.finish();
                self.done(&summary_json, *pass);
            }
            Phase::Ranged(mut r) => {
                self.trace_reads += 1;
                if r.end() {
                    let Ranged {
                        summary_json, pass, ..
                    } = *r;
                    self.done(&summary_json, pass);
                } else {
                    // A range could not be resumed: read it all, with a fresh pass.
                    let Ranged {
                        summary_json,
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
                        summary_json,
                    };
                }
            }
            Phase::Done => return Err("the join has ended".into()),
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
        summary_json: String,
        first: FirstPassResult,
        bare: Option<bool>,
        plain: bool,
    ) -> Result<(), String> {
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
                summary_json,
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
            self.done(&summary_json, pass);
            return Ok(());
        }
        self.phase = Phase::Second {
            scanner: Box::new(EventScanner::new(self.analyzer_opts.limits())),
            pass: Box::new(pass),
            summary_json,
        };
        Ok(())
    }

    fn done(&mut self, summary_json: &str, pass: JoinPass<'static>) {
        let report = pass.finish();
        self.json = Some(merge_json(summary_json, &report));
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
            Phase::Ranged(r) if r.plain && r.at == 0 && !self.decode.started => Some(r.wanted()),
            _ => None,
        }
    }

    /// The next bytes given are those from `offset` on (forward only): see
    /// [`wanted_ranges`](Self::wanted_ranges).
    ///
    /// # Errors
    /// Not a read that [`wanted_ranges`](Self::wanted_ranges) describes, or a backward offset.
    pub fn seek(&mut self, offset: u64) -> Result<(), String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = match &mut self.phase {
            Phase::Ranged(r) if r.plain && offset >= r.at => {
                r.at = offset;
                // Plain: no gzip magic to look for at this offset.
                self.decode.started = true;
                Ok(())
            }
            _ => Err(format!("join: cannot seek to byte {offset} here")),
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

/// The error for a range whose bytes were not given (a caller that skipped too much).
fn missing(at: u64) -> String {
    format!("join: the trace's bytes from {at} on were not given to the second read")
}

/// The document's first byte past whitespace and a byte-order mark, if these bytes hold it.
fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
}

/// Feeds decoded bytes of the current file to its phase.
fn feed(phase: &mut Phase, bytes: &[u8], gzip: bool) -> Result<(), String> {
    match phase {
        Phase::Recording(b) => b.write(bytes),
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
                .map_err(|e| e.to_string())
        }
        Phase::Second { scanner, pass, .. } => scan_all(scanner, bytes, |e| pass.add(e)),
        Phase::Ranged(r) => r.feed(bytes),
        Phase::Done => Err("the join has ended".into()),
    }
}

/// What the page draws: each trace device's busy span and listed pauses, and each recorded
/// GPU's power, on one axis (trace `ts`, µs).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Timeline {
    /// Start of the axis, trace µs: the trace's first event (the recording's first sample when
    /// the trace has no timed event).
    pub t0_us: f64,
    /// End of the axis, trace µs: the trace's last event end (or the recording's last sample).
    pub t1_us: f64,
    /// Per trace device.
    pub devices: Vec<TimelineDevice>,
    /// Per recorded GPU.
    pub gpus: Vec<TimelinePower>,
}

/// One trace device on the timeline.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelineDevice {
    /// The trace device.
    pub device: i64,
    /// First busy start and last busy end, trace µs.
    pub busy_us: [f64; 2],
    /// Listed pauses, `[start, end]` trace µs.
    pub pauses_us: Vec<[f64; 2]>,
    /// Pauses found but not listed (shown as busy).
    pub pauses_not_listed: u64,
}

/// One recorded GPU's power, bucketed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelinePower {
    /// The recorded GPU.
    pub gpu_index: i64,
    /// `[t_us, min_w, max_w]` per non-empty bucket, `t_us` the bucket's middle.
    pub power: Vec<[f64; 3]>,
    /// Highest reading, W.
    pub max_w: f64,
}

impl Timeline {
    /// The timeline of a finished join, with at most `buckets` power points per GPU. `None`
    /// without an alignment.
    pub fn new(r: &JoinReport, rec: &Recording, buckets: usize) -> Option<Timeline> {
        let a = r.alignment.as_ref()?;
        let to_us = |unix: i64| (i128::from(unix) - i128::from(a.offset_ns)) as f64 / 1e3;
        // The trace's span (the recording's when the trace has no timed event): a recording
        // that lies elsewhere would squeeze the trace to a line.
        let (lo, hi) = match (a.trace_start_unix_ns, a.trace_end_unix_ns) {
            (Some(s), Some(e)) => (to_us(s), to_us(e)),
            _ => {
                let (s, e) = rec.span_ns?;
                (to_us(s), to_us(e))
            }
        };
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let devices = r
            .pause_devices
            .iter()
            .map(|d| TimelineDevice {
                device: d.device,
                busy_us: [d.busy_start_ts_us.as_f64(), d.busy_end_ts_us.as_f64()],
                pauses_us: r
                    .pauses
                    .iter()
                    .filter(|p| p.device == d.device)
                    .map(|p| {
                        [
                            p.start_ts_us.as_f64(),
                            p.start_ts_us.as_f64() + p.duration_ms * 1e3,
                        ]
                    })
                    .collect(),
                pauses_not_listed: d.pauses_found - d.pauses_listed,
            })
            .collect();
        let n = buckets.max(1);
        let width = (hi - lo) / n as f64;
        let gpus = rec
            .gpu_slots()
            .map(|slot| {
                let mut b: Vec<Option<(f64, f64)>> = vec![None; n];
                let mut max_w = 0.0f64;
                for &(t, w) in rec.power_readings(slot) {
                    let x = to_us(t);
                    if !(lo..=hi).contains(&x) {
                        continue;
                    }
                    let k = (((x - lo) / width) as usize).min(n - 1);
                    let e = b[k].get_or_insert((w, w));
                    e.0 = e.0.min(w);
                    e.1 = e.1.max(w);
                    max_w = max_w.max(w);
                }
                TimelinePower {
                    gpu_index: rec.gpu_index(slot),
                    power: b
                        .iter()
                        .enumerate()
                        .filter_map(|(k, v)| {
                            v.map(|(mn, mx)| [lo + (k as f64 + 0.5) * width, mn, mx])
                        })
                        .collect(),
                    max_w,
                }
            })
            .collect();
        Some(Timeline {
            t0_us: lo,
            t1_us: hi,
            devices,
            gpus,
        })
    }
}
