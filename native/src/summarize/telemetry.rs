//! Reads one `telemetry.jsonl` once and feeds every window's accumulator in that one pass.
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use flinch_core::telemetry::{
    AcStateRef, Num, TelemetryAccumulator, TelemetryRow, TelemetrySummary, Window,
};
use serde_json::Value;

use super::jsonl::{Warnings, for_each_line, num};

/// Summaries of `path` over `windows` (in that order). Rows the reference cannot read are
/// skipped and described in the first summary's `warnings` (the whole run).
pub fn summarize(path: &Path, source: &str, windows: &[Window]) -> Vec<TelemetrySummary> {
    let mut acc = TelemetryAccumulator::new(windows);
    let mut warnings = Warnings::default();
    let read = File::open(path).map(BufReader::new).and_then(|reader| {
        for_each_line(reader, &mut warnings, |line, value, w| {
            feed_row(&mut acc, line, &value, w)
        })
    });
    if let Err(e) = read {
        warnings.note(format!(
            "{source}: read error, rows after it are missing: {e}"
        ));
    }
    let mut out = acc.finish(source);
    let mut rendered = warnings.render(source);
    if let Some(first) = out.first_mut() {
        rendered.append(&mut first.warnings);
        first.warnings = rendered;
    }
    out
}

/// Checks one parsed line and feeds it; what the reference would crash on is skipped or
/// ignored and counted.
pub(crate) fn feed_row(
    acc: &mut TelemetryAccumulator,
    line: usize,
    value: &Value,
    w: &mut Warnings,
) {
    let Value::Object(row) = value else {
        w.at_line("skipped, not a JSON object", line);
        return;
    };
    let unix = match row.get("unix") {
        None => return w.at_line("skipped, missing unix", line),
        Some(v) => match num(v).filter(|n| n.is_finite()) {
            Some(n) => n,
            None => return w.at_line("skipped, unix is not a finite number", line),
        },
    };
    let memory = match row.get("host_memory") {
        Some(Value::Object(m)) if m.contains_key("available") && m.contains_key("used") => m,
        Some(Value::Object(_)) => {
            return w.at_line("skipped, host_memory lacks available/used", line);
        }
        Some(_) => return w.at_line("skipped, host_memory is not an object", line),
        None => return w.at_line("skipped, missing host_memory", line),
    };
    let gpu_csv = match row.get("gpu_csv") {
        None => "",
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Null) => {
            w.at_line("gpu_csv is null, GPU fields ignored", line);
            ""
        }
        Some(_) => {
            w.at_line("gpu_csv is not a string, GPU fields ignored", line);
            ""
        }
    };
    let ac_state = match row.get("power") {
        None => None,
        Some(Value::Object(p)) => match p.get("ACLineStatus") {
            None => {
                w.at_line("power lacks ACLineStatus, ignored", line);
                None
            }
            Some(v) => ac_state(v).or_else(|| {
                w.at_line("power.ACLineStatus is a list or object, ignored", line);
                None
            }),
        },
        Some(_) => {
            w.at_line("power is not an object, ignored", line);
            None
        }
    };
    let host_cpu_percent = row.get("host_cpu_percent").and_then(num);
    acc.push(&TelemetryRow {
        unix,
        host_available_bytes: num(&memory["available"]),
        host_used_bytes: num(&memory["used"]),
        host_cpu_percent,
        gpu_csv,
        ac_state,
    });
}

fn ac_state(v: &Value) -> Option<AcStateRef<'_>> {
    Some(match v {
        Value::Null => AcStateRef::Null,
        Value::Bool(b) => AcStateRef::Bool(*b),
        Value::Number(_) => AcStateRef::Num(num(v).unwrap_or(Num::Float(f64::NAN))),
        Value::String(s) => AcStateRef::Str(s),
        Value::Array(_) | Value::Object(_) => return None,
    })
}
