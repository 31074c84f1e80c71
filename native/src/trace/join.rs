//! `trace --pauses / --min-gap-ms / --telemetry CSV`: the trace joined with a recording
//! (`flinch_core::join`; docs/join.md).
//!
//! The join reads the trace file twice on a thread of its own, beside the summary: the first
//! pass finds each device's GPU idle gaps and `baseTimeNanoseconds`, the second attributes host
//! events to the longest gaps and, with a recording, judges each gap and sums energy per
//! annotation. The recording is read once into memory per GPU (bounded; see
//! `flinch_core::join::recording`). The result's keys are appended to the summary's JSON object.
use std::path::{Path, PathBuf};

use flinch_core::Limits;
use flinch_core::join::{
    Alignment, AlignmentSource, GapFinder, GpuMap, JoinOptions, JoinPass, JoinReport, Recording,
    RecordingBuilder, RecordingOptions, parse_offset_ms,
};
use flinch_core::json::{Event, EventScanner, Scan};
use flinch_core::window::PowerSource;

use super::perfetto::Merger;
use crate::input::open_input;

/// The join's options of `flinch-trace trace`.
#[derive(clap::Args, Clone, Debug)]
pub struct JoinArgs {
    /// List each GPU's idle pauses (implied by every other option of the join).
    #[arg(long)]
    pauses: bool,
    /// A pause is a GPU idle gap of at least this many ms (default 100).
    #[arg(long, value_name = "MS")]
    min_gap_ms: Option<f64>,
    /// Pauses listed per device, longest first.
    #[arg(long, default_value_t = 50, value_name = "N")]
    top_pauses: usize,
    /// A recording (trace.csv) of the same run: adds telemetry to each pause and energy per
    /// annotation name.
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
        let mut o = JoinOptions::default();
        if let Some(ms) = self.min_gap_ms {
            if !(ms.is_finite() && ms > 0.0 && ms < 1e12) {
                return Err(format!(
                    "--min-gap-ms {ms}: expected a positive number of ms"
                ));
            }
            o.gaps.min_gap_ns = ((ms * 1e6).round() as i64).max(1);
        }
        o.pauses.max_pauses_per_device = self.top_pauses;
        if let Some(text) = &self.clock_offset_ms {
            o.clock_offset_ns =
                Some(parse_offset_ms(text).map_err(|e| format!("--clock-offset-ms {text}: {e}"))?);
        }
        if let Some(text) = &self.gpu_map {
            o.gpu_map = GpuMap::parse(text)?;
        }
        Ok(o)
    }

    /// Where to write the merged trace, with the recording to merge.
    pub fn perfetto(&self) -> Option<(&Path, &Path)> {
        Some((self.perfetto.as_deref()?, self.telemetry.as_deref()?))
    }

    /// Reads the recording, when one is given.
    pub fn recording(&self) -> Result<Option<Recording>, String> {
        let Some(path) = &self.telemetry else {
            return Ok(None);
        };
        let power_source =
            crate::analyze::sidecar_power_source(path).unwrap_or(PowerSource::Unknown);
        let mut b = RecordingBuilder::new(RecordingOptions {
            power_source,
            ..RecordingOptions::default()
        });
        let mut input = open_input(path).map_err(|e| format!("--telemetry: {e}"))?;
        loop {
            match input.next_chunk() {
                Ok(Some(chunk)) => b
                    .write(chunk)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
                Ok(None) => break,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        b.end()
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// One pass of the scanner over the file; the base time when the document has one. With
/// `merge`, the bytes are copied through it and the recording goes in after the first event.
fn scan_file(
    path: &Path,
    mut f: impl FnMut(&Event<'_>),
    mut merge: Option<&mut Merger>,
) -> Result<Option<i64>, String> {
    let mut input = open_input(path)?;
    let mut sc = EventScanner::new(Limits::NATIVE);
    loop {
        let chunk = match input.next_chunk() {
            Ok(Some(c)) => c,
            Ok(None) => break,
            // A cut .gz: the summary says so; the join uses what was read, as the summary does.
            Err(_) => break,
        };
        let mut pos = 0;
        loop {
            let (what, n) = sc.scan(&chunk[pos..]).map_err(|e| format!("join: {e}"))?;
            if let Some(m) = merge.as_deref_mut() {
                m.copy(&chunk[pos..pos + n])?;
            }
            pos += n;
            match what {
                Scan::Event => {
                    f(&sc.event());
                    if let Some(m) = merge.as_deref_mut() {
                        m.inject()?;
                    }
                }
                Scan::NeedsInput => break,
            }
        }
    }
    sc.finish();
    Ok(sc.base_time_ns())
}

/// Both passes over one trace file; with `perfetto` (OUT, recording), the merged file too
/// (its event count comes back).
pub fn run(
    path: &Path,
    opts: &JoinOptions,
    rec: Option<&Recording>,
    perfetto: Option<(&Path, &Path)>,
) -> Result<(JoinReport, Option<u64>), String> {
    let mut finder = GapFinder::new(opts.gaps);
    let base = scan_file(path, |e| finder.add(e), None)?;
    let mut merger = match perfetto {
        Some((out, csv)) => {
            let align = Alignment::new(base, opts.clock_offset_ns).ok_or(
                "--perfetto: the trace has no baseTimeNanoseconds: give --clock-offset-ms",
            )?;
            Some(Merger::create(out, path, csv, align, opts.gpu_map.clone())?)
        }
        None => None,
    };
    let found = finder.finish();
    // Without a pause, a recording or a merge, the second pass has nothing to add.
    let second =
        found.devices.iter().any(|d| !d.gaps.is_empty()) || rec.is_some() || merger.is_some();
    let mut pass = JoinPass::new(found, base, opts.clone(), rec)?;
    if second {
        scan_file(path, |e| pass.add(e), merger.as_mut())?;
    }
    let merged = merger.map(Merger::finish).transpose()?;
    Ok((pass.finish(), merged))
}

/// The summary's JSON object with the join's keys appended (each in its struct's field order).
pub fn merge_json(summary_json: &str, r: &JoinReport) -> String {
    let trimmed = summary_json.trim_end();
    let Some(body) = trimmed.strip_suffix('}') else {
        return summary_json.to_string();
    };
    let mut out = body.trim_end().to_string();
    let mut add = |key: &str, value: String| {
        out.push_str(&format!(",\n  \"{key}\": {}", value.replace('\n', "\n  ")));
    };
    let pretty = |v: &dyn erased::Ser| v.pretty();
    add("alignment", pretty(&r.alignment));
    add("pause_devices", pretty(&r.pause_devices));
    add("pauses", pretty(&r.pauses));
    if let Some(a) = &r.annotation_energy {
        add("annotation_energy", pretty(a));
    }
    add("join_warnings", pretty(&r.join_warnings));
    out.push_str("\n}");
    out
}

mod erased {
    /// Pretty JSON of any serializable value, behind a trait object.
    pub trait Ser {
        fn pretty(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn pretty(&self) -> String {
            serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
        }
    }
}

/// The text tables: the top pauses, then energy per annotation, then warnings.
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
                "  {:>6} {:>18.3} {:>12.3} {:>10} {:>7} {:>6} {:<8}  {} | {}",
                p.device,
                p.start_ts_us,
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
    s
}
