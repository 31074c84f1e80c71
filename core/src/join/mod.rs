//! The trace meets the recording: GPU pauses, what the host did, and what they cost.
//!
//! Two passes over the trace, each a plain stream of [`Event`]s from the scanner:
//! 1. [`GapFinder`] finds each device's GPU idle gaps (of at least `--min-gap-ms`) and the
//!    trace's time span; the scanner gives `baseTimeNanoseconds`
//!    ([`EventScanner::base_time_ns`](crate::json::EventScanner::base_time_ns)), wherever it sits
//!    in the document, so times stay relative until the pass ends.
//! 2. [`JoinPass`] attributes host events to the longest pauses ([`pauses`]) and, with a
//!    recording ([`recording`]), judges each pause and sums energy per annotation name
//!    ([`annotation_energy`]). [`JoinPass::finish`] gives the [`JoinReport`].
//!
//! The clock is one: trace `ts` (ns) plus the [`Alignment`] offset is Unix ns, the recording's
//! `t_wall_ns` ([`clock`]). Memory is bounded per module (see each); nothing grows with the
//! number of events. Needs `alloc`.
#![cfg(feature = "alloc")]

pub mod annotation_energy;
pub mod clock;
pub mod counters;
pub mod first_pass;
pub mod gaps;
pub mod names;
pub mod pauses;
pub mod perfetto;
pub mod recording;

mod error;
mod options;
mod result_json;
mod timeline;
mod trace_join;

#[cfg(test)]
mod tests;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde::Serialize;

pub use annotation_energy::{AnnotationEnergy, AnnotationEnergyAcc};
pub use clock::{
    Alignment, AlignmentError, AlignmentSource, FixedDecimal, GpuMap, GpuMapError, NsDecimal, NsMs,
    OffsetError, TsUs, alignment_error, parse_offset_ms,
};
pub use counters::{CountersFound, TraceCounters, TraceCountersReport};
pub use error::JoinError;
pub use first_pass::{
    ByteRange, ByteRanges, FirstPass, FirstPassResult, KeptAnnotations, Resume, SecondPassStep,
};
pub use gaps::{Gap, GapFinder, GapOptions, GapsFound};
pub use names::Names;
pub use options::{OptionError, TraceJoinOptions, join_options, power_source_named};
pub use pauses::{DEFAULT_TOP_PAUSES, HostEntry, PauseHost, PauseOptions, WithinEntry};
pub use recording::{
    NO_GPU_READINGS, RecRef, Recording, RecordingBuilder, RecordingError, RecordingOptions,
};
pub use result_json::summary_with_join_json;
pub use timeline::{Timeline, TimelineDevice, TimelinePower};
pub use trace_join::{NextFile, TraceJoin};

use crate::json::Event;
use crate::window::Verdict;

/// Options of the join.
#[derive(Clone, Debug, Default)]
pub struct JoinOptions {
    /// The gaps (first pass).
    pub gaps: GapOptions,
    /// The pause tables (second pass).
    pub pauses: PauseOptions,
    /// `--clock-offset-ms`, ns.
    pub clock_offset_ns: Option<i64>,
    /// `--gpu-map`.
    pub gpu_map: GpuMap,
    /// Annotation names kept (default 4096 when 0).
    pub max_annotation_names: usize,
}

/// How the two files line up.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AlignmentReport {
    /// `baseTimeNanoseconds` or `clock_offset`.
    pub source: AlignmentSource,
    /// Unix ns of trace `ts` 0.
    pub offset_ns: i64,
    /// The trace's `baseTimeNanoseconds`, if any.
    pub base_time_ns: Option<i64>,
    /// `--clock-offset-ms`, if given, ms (exact).
    pub clock_offset_ms: Option<NsMs>,
    /// First and last event time of the trace, Unix ns.
    pub trace_start_unix_ns: Option<i64>,
    /// Last event end of the trace, Unix ns.
    pub trace_end_unix_ns: Option<i64>,
    /// First sample of the recording, Unix ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording_start_unix_ns: Option<i64>,
    /// Last sample of the recording, Unix ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording_end_unix_ns: Option<i64>,
    /// Time both cover, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap_ms: Option<f64>,
    /// Share of the trace's span that the recording covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_covered_share: Option<f64>,
}

/// A pause's recorded telemetry.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PauseTelemetry {
    /// The recorded GPU.
    pub gpu_index: i64,
    /// Edge-interpolated trapezoid over the pause, J (`analyze --json`'s `energy_edge_j`).
    pub gpu_energy_j: Option<f64>,
    /// Energy over the time power readings cover, W.
    pub avg_power_w: Option<f64>,
    /// Time-weighted utilization, %.
    pub avg_util_pct: Option<f64>,
    /// Share of the pause covered by power readings.
    pub power_coverage: f64,
    /// `gpu_power_W` values in the pause that are not finite numbers (nan, inf, text), left
    /// out of its figures (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub non_finite_power_readings: u64,
    /// `compute` / `waiting` / `mixed` with the evidence.
    pub verdict: Verdict,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One pause.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PauseResult {
    /// The trace device (GPU `pid`).
    pub device: i64,
    /// Start on the trace's clock, µs (exact).
    pub start_ts_us: TsUs,
    /// Start, Unix ns (when the alignment is known).
    pub start_unix_ns: Option<i64>,
    /// Length, ms.
    pub duration_ms: f64,
    /// Host events overlapping the pause, by overlap.
    pub host: Vec<HostEntry>,
    /// Annotations that cover the pause (all but at most 1 µs or 0.1 % of it), innermost
    /// first.
    pub within: Vec<WithinEntry>,
    /// Annotations that overlap the pause without covering it, by overlap.
    pub overlapping_annotations: Vec<HostEntry>,
    /// With a recording: what it says about the pause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<PauseTelemetry>,
}

/// One device's pause figures.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PauseDevice {
    /// The trace device.
    pub device: i64,
    /// Its recorded GPU (`--gpu-map`), with a recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_index: Option<i64>,
    /// Busy events (kernel, gpu_memcpy, gpu_memset).
    pub busy_events: u64,
    /// First busy start, trace µs (exact).
    pub busy_start_ts_us: TsUs,
    /// Last busy end, trace µs (exact).
    pub busy_end_ts_us: TsUs,
    /// The asked minimum gap, ms.
    pub min_gap_ms: f64,
    /// The minimum in force (above the asked one past the gap cap), ms.
    pub min_gap_ms_effective: f64,
    /// Pauses found.
    pub pauses_found: u64,
    /// Their summed length, ms.
    pub pause_time_ms: f64,
    /// Pauses listed (the longest).
    pub pauses_listed: u64,
}

/// Everything the join adds to a trace summary.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct JoinReport {
    /// How the trace and the recording line up (absent without base or offset).
    pub alignment: Option<AlignmentReport>,
    /// Per device.
    pub pause_devices: Vec<PauseDevice>,
    /// The longest pauses of each device, longest first, devices ascending.
    pub pauses: Vec<PauseResult>,
    /// With a recording: energy per annotation name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotation_energy: Option<Vec<AnnotationEnergy>>,
    /// What the reader should know.
    pub join_warnings: Vec<String>,
    /// Why there is no GPU figure, when the recording has no GPU readings
    /// ([`NO_GPU_READINGS`]); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_energy_note: Option<&'static str>,
    /// Where the GPU figures came from, when the trace carries power or utilization counters:
    /// `"trace_counters"` (no recording given) or `"telemetry"` (the recording wins); absent
    /// otherwise, and when neither gives a figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_source: Option<&'static str>,
    /// The trace's own power and utilization counters ([`counters`]), when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_counters: Option<TraceCountersReport>,
}

/// The second pass.
pub struct JoinPass<'r> {
    found: GapsFound,
    opts: JoinOptions,
    align: Option<Alignment>,
    rec: Option<RecRef<'r>>,
    names: Names,
    host: PauseHost,
    energy: Option<AnnotationEnergyAcc<'r>>,
    warnings: Vec<String>,
    /// The trace's counters, and whether they are the recording.
    counters: Option<(CountersFound, bool)>,
}

impl<'r> JoinPass<'r> {
    /// The second pass over the same trace, after the first gave `found` and the scanner
    /// `base_time_ns`. Errors when a recording is given but there is no alignment.
    pub fn new(
        found: GapsFound,
        base_time_ns: Option<i64>,
        opts: JoinOptions,
        rec: Option<&'r Recording>,
    ) -> Result<JoinPass<'r>, AlignmentError> {
        JoinPass::with_recording(found, base_time_ns, opts, rec.map(RecRef::from))
    }

    /// As [`new`](Self::new), with the recording borrowed or shared ([`RecRef`]).
    pub fn with_recording(
        found: GapsFound,
        base_time_ns: Option<i64>,
        opts: JoinOptions,
        rec: Option<RecRef<'r>>,
    ) -> Result<JoinPass<'r>, AlignmentError> {
        let align = Alignment::new(base_time_ns, opts.clock_offset_ns);
        let mut warnings = Vec::new();
        if align.is_none() {
            let why = clock::alignment_error(
                base_time_ns,
                found.base_time_problem.as_ref(),
                opts.clock_offset_ns,
            );
            if rec.is_some() {
                return Err(why);
            }
            // Without a recording the pauses stand on the trace's clock alone; a base or an
            // offset that was given but gives no Unix time is said.
            if opts.clock_offset_ns.is_some() || found.base_time_problem.is_some() {
                warnings.push(format!("{why}: no Unix times"));
            }
        }
        let host = PauseHost::new(&found, opts.pauses);
        let energy = match (&rec, align) {
            (Some(r), Some(a)) => {
                let mut device_slots = Vec::new();
                for d in &found.devices {
                    let g = opts.gpu_map.gpu_index(d.device);
                    match r.slot(g) {
                        Some(slot) => device_slots.push((d.device, slot)),
                        // A recording without GPU readings: its note says it once.
                        None if r.gpu_energy_note().is_some() => {}
                        None => warnings.push(format!(
                            "trace device {} maps to gpu_index {g}, which the recording does not have",
                            d.device
                        )),
                    }
                }
                let host_slots: Vec<usize> = if found.devices.is_empty() {
                    r.gpu_slots().collect()
                } else {
                    let mut s: Vec<usize> = device_slots.iter().map(|d| d.1).collect();
                    s.sort_unstable();
                    s.dedup();
                    s
                };
                let max = if opts.max_annotation_names == 0 {
                    4096
                } else {
                    opts.max_annotation_names
                };
                Some(AnnotationEnergyAcc::new(
                    r.clone(),
                    a,
                    host_slots,
                    device_slots,
                    max,
                ))
            }
            _ => None,
        };
        Ok(JoinPass {
            found,
            opts,
            align,
            rec,
            names: Names::new(1 << 16),
            host,
            energy,
            warnings,
            counters: None,
        })
    }

    /// The trace's own counters: `used` when they are the pass's recording (given to
    /// [`with_recording`](Self::with_recording) as it, with the one-to-one GPU map, since they
    /// are keyed by trace device); otherwise, with a recording, they are compared with it.
    pub fn set_trace_counters(&mut self, found: CountersFound, used: bool) {
        self.counters = Some((found, used));
    }

    /// Adds one event.
    pub fn add(&mut self, e: &Event<'_>) {
        self.host.add(e, &mut self.names);
        if let Some(en) = &mut self.energy {
            en.add(e, &mut self.names);
        }
    }

    /// The report.
    pub fn finish(self) -> JoinReport {
        let JoinPass {
            found,
            opts,
            align,
            rec,
            names,
            host,
            energy,
            mut warnings,
            counters,
        } = self;
        let rec = rec.as_deref();
        let alignment = align.map(|a| alignment_report(&a, &found, rec, &mut warnings));
        let gpu_energy_note = rec.and_then(Recording::gpu_energy_note);
        warnings.extend(rec.and_then(Recording::bad_power_warning));
        let ms = |ns: i64| ns as f64 / 1e6;
        let mut pause_devices = Vec::new();
        let mut pauses = Vec::new();
        for d in &found.devices {
            // No recorded GPU to name when the recording has none.
            let gpu_index = rec
                .filter(|_| gpu_energy_note.is_none())
                .map(|_| opts.gpu_map.gpu_index(d.device));
            let slot = gpu_index.and_then(|g| rec.and_then(|r| r.slot(g)));
            let listed = host
                .devices
                .iter()
                .find(|x| x.0 == d.device)
                .map_or(&[][..], |x| &x.1[..]);
            pause_devices.push(PauseDevice {
                device: d.device,
                gpu_index,
                busy_events: d.busy_events,
                busy_start_ts_us: NsDecimal(d.busy_start_ns),
                busy_end_ts_us: NsDecimal(d.busy_end_ns),
                min_gap_ms: ms(opts.gaps.min_gap_ns),
                min_gap_ms_effective: ms(d.min_gap_ns_effective),
                pauses_found: d.gaps.len() as u64,
                pause_time_ms: ms(d
                    .gaps
                    .iter()
                    .fold(0i64, |a, g| a.saturating_add(g.dur_ns()))),
                pauses_listed: listed.len() as u64,
            });
            // The finder takes at least 1 ns (0 asks for every idle gap): only a raise past
            // that is worth a warning.
            if d.min_gap_ns_effective > opts.gaps.min_gap_ns.max(1) {
                warnings.push(format!(
                    "device {}: more than {} gaps, so only gaps of at least {:.3} ms are reported (exact)",
                    d.device,
                    opts.gaps.max_gaps_per_device,
                    ms(d.min_gap_ns_effective)
                ));
            }
            let mut mine: Vec<&pauses::Listed> = listed.iter().collect();
            mine.sort_by(|a, b| {
                b.gap
                    .dur_ns()
                    .cmp(&a.gap.dur_ns())
                    .then(a.gap.start_ns.cmp(&b.gap.start_ns))
            });
            for l in mine {
                let g = l.gap;
                // Both ends on the Unix clock, and a length the i64 range holds (else no telemetry).
                let unix = align
                    .and_then(|a| Some((a.unix_ns(g.start_ns)?, a.unix_ns(g.end_ns)?)))
                    .filter(|u| u.1.checked_sub(u.0).is_some());
                let telemetry = match (rec, slot, unix) {
                    (Some(r), Some(slot), Some((t0, t1))) => {
                        let w = r.window(slot, t0, t1);
                        let a = &w.acc;
                        let t = PauseTelemetry {
                            gpu_index: r.gpu_index(slot),
                            gpu_energy_j: w.energy_j(),
                            avg_power_w: (a.power.covered_ns > 0)
                                .then(|| a.power.integral / (a.power.covered_ns as f64 / 1e9)),
                            avg_util_pct: (a.util.covered_ns > 0)
                                .then(|| a.util.integral / a.util.covered_ns as f64),
                            power_coverage: a.power.covered_ns as f64 / g.dur_ns() as f64,
                            non_finite_power_readings: w.non_finite_power,
                            verdict: w.verdict,
                        };
                        if t.verdict.verdict == Some("compute") {
                            warnings.push(format!(
                                "device {} pause of {:.3} ms at ts {} us: the recording says GPU {} was busy (avg {:.0} W): another process, or work the profiler missed",
                                d.device,
                                ms(g.dur_ns()),
                                TsUs::fixed(NsDecimal(g.start_ns)),
                                t.gpu_index,
                                t.avg_power_w.unwrap_or(f64::NAN)
                            ));
                        }
                        Some(t)
                    }
                    _ => None,
                };
                pauses.push(PauseResult {
                    device: d.device,
                    start_ts_us: NsDecimal(g.start_ns),
                    start_unix_ns: unix.map(|u| u.0),
                    duration_ms: ms(g.dur_ns()),
                    host: host.host_rows(l, &names),
                    within: PauseHost::within_rows(l, &names),
                    overlapping_annotations: host.annotation_rows(l, &names),
                    telemetry,
                });
            }
        }
        if found.events_of_dropped_devices > 0 {
            warnings.push(format!(
                "{} busy events of devices past the first {} were not used",
                found.events_of_dropped_devices, opts.gaps.max_devices
            ));
        }
        if found.events_without_device > 0 {
            warnings.push(format!(
                "{} busy events without an integer pid (device) were not used",
                found.events_without_device
            ));
        }
        let annotation_energy = energy.map(|e| {
            if e.unconverted > 0 {
                warnings.push(format!(
                    "{} annotation spans leave the i64 Unix ns range and were not charged",
                    e.unconverted
                ));
            }
            e.finish(&names)
        });
        if names.folded > 0 {
            warnings.push(format!(
                "{} events had names past the join's {} distinct names: shown as (other)",
                names.folded,
                1 << 16
            ));
        }
        let (power_source, trace_counters) = match counters {
            Some((cf, used)) => counters_report(cf, used, &found, rec, align, &opts, &mut warnings),
            None => (None, None),
        };
        JoinReport {
            alignment,
            pause_devices,
            pauses,
            annotation_energy,
            join_warnings: warnings,
            gpu_energy_note,
            power_source,
            trace_counters,
        }
    }
}

fn alignment_report(
    a: &Alignment,
    found: &GapsFound,
    rec: Option<&Recording>,
    warnings: &mut Vec<String>,
) -> AlignmentReport {
    let trace = found
        .trace_span_ns
        .and_then(|(s, e)| Some((a.unix_ns(s)?, a.unix_ns(e)?)));
    let recording = rec.and_then(|r| r.span_ns);
    let (overlap_ms, share) = match (trace, recording) {
        (Some((ts, te)), Some((rs, re))) => {
            let ov = (i128::from(te.min(re)) - i128::from(ts.max(rs))).max(0);
            let len = i128::from(te) - i128::from(ts);
            let share = if len > 0 {
                ov as f64 / len as f64
            } else if ts >= rs && ts <= re {
                1.0
            } else {
                0.0
            };
            if share == 0.0 {
                warnings.push(format!(
                    "the recording ({rs}..{re} Unix ns) and the trace ({ts}..{te} Unix ns) do not overlap: check the clocks or give --clock-offset-ms"
                ));
            } else if share < 0.5 {
                warnings.push(format!(
                    "the recording covers only {:.1}% of the trace's time span",
                    share * 100.0
                ));
            }
            (Some(ov as f64 / 1e6), Some(share))
        }
        _ => (None, None),
    };
    AlignmentReport {
        source: a.source,
        offset_ns: a.offset_ns,
        base_time_ns: a.base_time_ns,
        clock_offset_ms: a.clock_offset_ns.map(NsDecimal),
        trace_start_unix_ns: trace.map(|t| t.0),
        trace_end_unix_ns: trace.map(|t| t.1),
        recording_start_unix_ns: recording.map(|r| r.0),
        recording_end_unix_ns: recording.map(|r| r.1),
        overlap_ms,
        trace_covered_share: share,
    }
}

/// `power_source` and `trace_counters` of the report: which source gave the figures, the
/// counters' device mapping and counts, and, with a recording as well, the two compared over
/// each device's busy span.
fn counters_report(
    cf: CountersFound,
    used: bool,
    found: &GapsFound,
    rec: Option<&Recording>,
    align: Option<Alignment>,
    opts: &JoinOptions,
    warnings: &mut Vec<String>,
) -> (Option<&'static str>, Option<TraceCountersReport>) {
    let mut report = cf.report;
    report.used = used;
    let source = if used {
        Some("trace_counters")
    } else if rec.is_some() {
        Some("telemetry")
    } else {
        None
    };
    if let (false, Some(rec), Some(crec), Some(a)) = (used, rec, cf.recording.as_deref(), align) {
        for d in &found.devices {
            let g = opts.gpu_map.gpu_index(d.device);
            let (Some(ts), Some(cs)) = (rec.slot(g), crec.slot(d.device)) else {
                continue;
            };
            let (Some(t0), Some(t1)) = (a.unix_ns(d.busy_start_ns), a.unix_ns(d.busy_end_ns))
            else {
                continue;
            };
            let avg = |w: &recording::GpuWindowJoin| {
                let p = &w.acc.power;
                (p.covered_ns > 0).then(|| p.integral / (p.covered_ns as f64 / 1e9))
            };
            let tw = avg(&rec.window(ts, t0, t1));
            let cw = avg(&crec.window(cs, t0, t1));
            report.comparison.push(counters::CounterComparison {
                device: d.device,
                gpu_index: g,
                start_ts_us: NsDecimal(d.busy_start_ns),
                end_ts_us: NsDecimal(d.busy_end_ns),
                telemetry_avg_power_w: tw,
                counters_avg_power_w: cw,
                disagree: matches!((tw, cw), (Some(t), Some(c)) if counters::disagree(t, c)),
            });
        }
    }
    if !used && rec.is_none() {
        let why = if !cf.aligned {
            "the trace has no baseTimeNanoseconds (give --clock-offset-ms)"
        } else {
            "none of their samples is usable"
        };
        warnings.push(format!(
            "the trace carries power/utilization counters, but they give no figures: {why}"
        ));
    } else if !used {
        warnings.push(
            "the trace carries power/utilization counters too: the recording (--telemetry) is used; trace_counters compares the two"
                .into(),
        );
    }
    report.warnings(warnings);
    (source, Some(report))
}
