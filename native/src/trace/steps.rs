//! `trace --steps [--step-name PATTERN]`: the pattern checked, and the steps' text output
//! (the summary line, the median breakdown, a table of the outlier steps). The steps
//! themselves are the trace job's (`flinch_core::steps`, docs/steps.md).
use std::fmt::Write;

use flinch_core::steps::{ALL, Breakdown, StepPattern, StepsReport};

use crate::CmdError;

/// The step pattern when the steps are asked for (`--step-name` implies `--steps`); a bad
/// pattern is a usage error.
pub fn pattern(steps: bool, name: Option<&str>) -> Result<Option<StepPattern>, CmdError> {
    match name {
        Some(text) => StepPattern::parse(text)
            .map(Some)
            .map_err(|e| CmdError::Usage(e.to_string())),
        None => Ok(steps.then(StepPattern::default)),
    }
}

fn parts_line(b: &Breakdown) -> String {
    ALL.iter()
        .map(|&p| format!("{} {:.3}", p.key(), b.get(p)))
        .collect::<Vec<_>>()
        .join("  ")
}

/// The steps' text.
pub fn render(r: &StepsReport) -> String {
    let mut s = String::new();
    let sum = &r.step_summary;
    let Some(d) = &sum.duration_ms else {
        let _ = writeln!(s, "  steps ({}): none", sum.pattern);
        if let Some(note) = &sum.note {
            let _ = writeln!(s, "  note: {note}");
        }
        return s;
    };
    let energy = match &sum.gpu_energy_j {
        Some(Some(e)) => format!(
            "; GPU energy median {:.3} J, p90 {:.3} J, max {:.3} J",
            e.median, e.p90, e.max
        ),
        Some(None) => "; no GPU energy (no power reading touches a step)".into(),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "  steps ({}): {}, median {:.3} ms, p90 {:.3} ms, max {:.3} ms; {} outlier{}{energy}",
        sum.pattern,
        sum.n,
        d.median,
        d.p90,
        d.max,
        sum.outliers.len(),
        if sum.outliers.len() == 1 { "" } else { "s" },
    );
    // The steps alone: their power from the trace's counters, with the mapping used.
    if let (Some("trace_counters"), Some(c)) = (sum.power_source, &sum.trace_counters) {
        let devices = super::join::counter_devices(c);
        let _ = writeln!(
            s,
            "  steps' power: from the trace's counters: {}",
            devices.join(", ")
        );
    }
    if let Some(m) = &sum.breakdown_ms_median {
        let _ = writeln!(s, "  median step (ms): {}", parts_line(m));
    }
    if !sum.outliers.is_empty() {
        let _ = writeln!(
            s,
            "  outlier steps:\n  {:>8} {:>18} {:>12} {:>11}  {:<26} top host op",
            "index", "start_ts_us", "duration_ms", "excess_ms", "largest part vs median"
        );
        for o in &sum.outliers {
            let top = o.top_host_ops.first().map_or_else(
                || "-".to_string(),
                |h| format!("{} ({:.3} ms)", super::clip(&h.name, 60), h.time_ms),
            );
            let _ = writeln!(
                s,
                "  {:>8} {:>18} {:>12.3} {:>+11.3}  {:<26} {top}",
                o.index,
                o.start_ts_us.to_string(),
                o.duration_ms,
                o.excess_ms,
                format!("{:+.3} ms {}", o.largest_part_excess_ms, o.largest_part),
            );
            if let Some(p) = &o.pauses
                && !p.is_empty()
            {
                let list: Vec<String> = p
                    .iter()
                    .map(|p| format!("device {} {:.3} ms", p.device, p.duration_ms))
                    .collect();
                let _ = writeln!(s, "  {:>8} pauses: {}", "", list.join(", "));
            }
        }
    }
    for w in &sum.warnings {
        let _ = writeln!(s, "  steps warning: {w}");
    }
    if let Some(a) = &sum.approximations {
        let _ = writeln!(
            s,
            "  steps approximate: each part within {:.6} ms; top host ops partial: {}",
            a.breakdown_error_bound_ms, a.top_host_ops_partial
        );
    }
    s
}
