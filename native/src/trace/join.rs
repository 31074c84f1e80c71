//! `trace --pauses / --min-gap-ms / --telemetry CSV`: the trace joined with a recording
//! (`flinch_core::join`; docs/join.md).
//!
//! The join is part of the trace job (`flinch_core::trace_job`): its first pass (each device's
//! GPU idle gaps, `baseTimeNanoseconds`, a bounded copy of the annotation spans, and the
//! trace's byte ranges with the time hulls of their host events) rides on the summary's own
//! scan; the second pass attributes host events to the longest gaps and, with a recording,
//! judges each gap and sums energy per annotation. With a pause to list it scans again only the
//! byte ranges whose hull meets one, replaying the copied spans of the others; it reads the
//! whole trace again only for a merged file (`--perfetto`, written here from that read), for
//! more annotation spans than the copy holds, or where a range cannot be resumed; without a
//! pause to list it replays the copied spans. The host driver (`flinch_host::trace`) answers
//! those reads. Here: the options, the recording (read once into memory per GPU, bounded; see
//! `flinch_core::join::recording`), the merged file, and the text tables.
use std::path::{Path, PathBuf};

use flinch_core::join::counters::CounterPid;
use flinch_core::join::{
    Alignment, AlignmentSource, JoinOptions, JoinReport, Recording, alignment_error, join_options,
};
use flinch_core::trace_job::{CopyError, CopyStep, JoinSetup, RecordingSource, TraceJob};

use super::perfetto::{Merged, Merger};
use crate::input::{InputFile, Passes};

/// The join's options of `flinch-trace trace`.
#[derive(clap::Args, Clone, Debug)]
pub struct JoinArgs {
    /// List each GPU's idle pauses (implied by every other option of the join).
    #[arg(long)]
    pauses: bool,
    /// A pause is a GPU idle gap of at least this many ms (default 100).
    #[arg(long, value_name = "MS", allow_hyphen_values = true,
          value_parser = crate::values::min_gap_ms)]
    min_gap_ms: Option<f64>,
    /// Pauses listed per device, longest first.
    #[arg(long, default_value_t = flinch_core::join::DEFAULT_TOP_PAUSES, value_name = "N", allow_hyphen_values = true,
          value_parser = crate::values::count)]
    top_pauses: usize,
    /// A recording (trace.csv) of the same run: adds telemetry to each pause and energy per
    /// annotation name. Without it, the trace's own GPU power counters do, when it has them.
    #[arg(long, value_name = "CSV")]
    telemetry: Option<PathBuf>,
    /// Unix ms of trace ts 0 when the trace has no baseTimeNanoseconds, else a correction added
    /// to it (exact to 1 ns; may be negative).
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    clock_offset_ms: Option<String>,
    /// Trace device (GPU pid) to recorded gpu_index, e.g. 0=2,1=3 (default: the same number).
    #[arg(long, value_name = "D=G,...")]
    gpu_map: Option<String>,
    /// Also write the trace with the recording merged in (counter tracks and marks on the
    /// trace's clock) for Perfetto UI: OUT.json, or OUT.json.gz for gzip. Needs --telemetry.
    #[arg(long, value_name = "OUT", requires = "telemetry")]
    perfetto: Option<PathBuf>,
}

impl JoinArgs {
    /// Whether the join runs.
    pub fn enabled(&self) -> bool {
        self.pauses
            || self.min_gap_ms.is_some()
            || self.telemetry.is_some()
            || self.clock_offset_ms.is_some()
            || self.gpu_map.is_some()
    }

    /// The core options, checked.
    pub fn options(&self) -> Result<JoinOptions, String> {
        join_options(
            self.min_gap_ms,
            self.top_pauses,
            self.clock_offset_ms.as_deref(),
            self.gpu_map.as_deref(),
        )
        .map_err(|e| e.to_string())
    }

    /// Whether a recording is given.
    pub fn has_telemetry(&self) -> bool {
        self.telemetry.is_some()
    }

    /// Where to write the merged trace, with the recording to merge.
    pub fn perfetto(&self) -> Option<(&Path, &Path)> {
        Some((self.perfetto.as_deref()?, self.telemetry.as_deref()?))
    }

    /// Reads the recording, when one is given, with its open input: `--perfetto` reads it
    /// again into the merged file (a FIFO or pipe is then spooled).
    pub fn recording(&self) -> Result<Option<(Recording, InputFile)>, String> {
        let Some(path) = &self.telemetry else {
            return Ok(None);
        };
        let passes = if self.perfetto.is_some() {
            Passes::Several
        } else {
            Passes::One
        };
        flinch_host::trace::steps::read_recording(path, passes).map(Some)
    }
}

/// The job's join for these options: `recording`, a recording will be given
/// ([`flinch_core::trace_job::TraceJob::set_recording`]); `perfetto`, the second read is whole,
/// a merged copy written from it.
pub fn setup(opts: &JoinOptions, recording: bool, perfetto: bool) -> JoinSetup {
    let source = if recording {
        RecordingSource::Given
    } else {
        RecordingSource::None
    };
    JoinSetup {
        whole_second_read: perfetto,
        ..JoinSetup::new(opts.clone(), source)
    }
}

/// The join's second read after `job`'s first, from `file` (the input the first read read);
/// with `perfetto` (OUT, the recording's input), the merged file written from it too (what
/// the merge did comes back, for the report). The job says what is read again (see the module
/// docs).
pub fn second_read(
    file: &InputFile,
    job: &mut TraceJob,
    opts: &JoinOptions,
    perfetto: Option<(&Path, &InputFile)>,
) -> Result<Option<Merged>, String> {
    let Some((out, csv)) = perfetto else {
        flinch_host::trace::ranges::answer(file, job, None)?;
        return Ok(None);
    };
    let first = job
        .first_pass()
        .ok_or("--perfetto: the trace's first read did not end")?;
    let base = first.base_time_ns;
    let align = Alignment::new(base, opts.clock_offset_ns).ok_or_else(|| {
        let why = alignment_error(
            base,
            first.found.base_time_problem.as_ref(),
            opts.clock_offset_ns,
        );
        format!("--perfetto: {why}")
    })?;
    let mut merger = Merger::create(out, file.path(), csv, align, opts.gpu_map.clone())?;
    let mut end = None;
    let cut = flinch_host::trace::ranges::answer(
        file,
        job,
        Some(&mut |step| {
            match step {
                CopyStep::Bytes(b) => merger.copy(b),
                CopyStep::EventEnd => merger.event_end().and_then(|()| merger.inject()),
                CopyStep::End(e) => {
                    end = Some(*e);
                    Ok(())
                }
            }
            .map_err(CopyError::new)
        }),
    )?;
    if let Some(end) = end {
        merger.trace_end(&end, cut);
    }
    merger.finish().map(Some)
}

/// The text tables: the top pauses, then energy per annotation, then warnings.
/// The device each counter track was mapped to, as the text output names it (the join's and the steps'
/// power lines).
pub fn counter_devices(c: &flinch_core::join::TraceCountersReport) -> Vec<String> {
    c.devices
        .iter()
        .map(|d| match &d.pid {
            CounterPid::Text(t) => format!("\"{t}\" -> device {}", d.device),
            CounterPid::Int(p) => format!("pid {p} -> device {}", d.device),
        })
        .collect()
}

pub fn render(r: &JoinReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if let Some(a) = &r.alignment {
        let _ = writeln!(
            s,
            "  alignment: {}, offset {} ns{}",
            match a.source {
                AlignmentSource::BaseTimeNanoseconds => "baseTimeNanoseconds",
                AlignmentSource::ClockOffset => "clock_offset",
            },
            a.offset_ns,
            a.trace_covered_share
                .map(|c| format!(", recording covers {:.1}% of the trace", c * 100.0))
                .unwrap_or_default()
        );
    }
    if let (Some(source), Some(c)) = (r.power_source, &r.trace_counters) {
        let devices = counter_devices(c);
        let _ = writeln!(
            s,
            "  power: {}; the trace's counters: {}",
            if source == "trace_counters" {
                "from the trace's counters"
            } else {
                "from the recording"
            },
            devices.join(", ")
        );
    }
    for d in &r.pause_devices {
        let _ = writeln!(
            s,
            "  device {}: {} pauses of >= {:.3} ms, {:.3} ms in all",
            d.device, d.pauses_found, d.min_gap_ms_effective, d.pause_time_ms
        );
    }
    let mut top: Vec<_> = r.pauses.iter().collect();
    top.sort_by(|a, b| b.duration_ms.total_cmp(&a.duration_ms));
    top.truncate(10);
    if !top.is_empty() {
        let _ = writeln!(
            s,
            "  top pauses:\n  {:>6} {:>18} {:>12} {:>10} {:>7} {:>6} {:<8}  host (overlap ms) | within",
            "device", "start_ts_us", "dur_ms", "energy_J", "avg_W", "util%", "verdict"
        );
        for p in top {
            let t = p.telemetry.as_ref();
            let f =
                |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |x| format!("{x:.prec$}"));
            let host: Vec<String> = p
                .host
                .iter()
                .take(3)
                .map(|h| format!("{} {:.3}", super::clip(&h.name, 40), h.overlap_ms))
                .collect();
            let within: Vec<String> = p
                .within
                .iter()
                .take(2)
                .map(|w| super::clip(&w.name, 30))
                .collect();
            let _ = writeln!(
                s,
                "  {:>6} {:>18} {:>12.3} {:>10} {:>7} {:>6} {:<8}  {} | {}",
                p.device,
                p.start_ts_us.fixed(),
                p.duration_ms,
                f(t.and_then(|t| t.gpu_energy_j), 3),
                f(t.and_then(|t| t.avg_power_w), 1),
                f(t.and_then(|t| t.avg_util_pct), 1),
                t.and_then(|t| t.verdict.verdict).unwrap_or("-"),
                host.join(", "),
                within.join(", ")
            );
        }
    }
    if let Some(ae) = &r.annotation_energy
        && !ae.is_empty()
    {
        let _ = writeln!(
            s,
            "  energy per annotation:\n  {:>8} {:>12} {:>12} {:>8} {:>6} {:<8}  name",
            "n", "dur_ms", "energy_J", "avg_W", "util%", "verdict"
        );
        for a in ae.iter().take(10) {
            let f =
                |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |x| format!("{x:.prec$}"));
            let _ = writeln!(
                s,
                "  {:>8} {:>12.3} {:>12} {:>8} {:>6} {:<8}  {}",
                a.n,
                a.duration_ms,
                f(a.gpu_energy_j, 3),
                f(a.avg_power_w, 1),
                f(a.avg_util_pct, 1),
                a.verdict.unwrap_or("-"),
                super::clip(&a.name, 80)
            );
        }
    }
    for w in &r.join_warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    if let Some(note) = r.gpu_energy_note {
        let _ = writeln!(s, "  note: {note}");
    }
    s
}
