//! Reads one `telemetry.jsonl`, pushed in chunks, and feeds every window's accumulator in that
//! one pass; checks each row as the reference would use it.
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use super::jsonl::{JsonlReader, num};
use super::warnings::Warnings;
use crate::telemetry::{
    AcStateRef, Num, TelemetryAccumulator, TelemetryRow, TelemetrySummary, ValueBudget, Window,
};

/// Summaries of one telemetry file over several windows (in the order given). Rows the
/// reference cannot read are skipped and described in the first summary's `warnings` (the
/// whole run).
#[derive(Debug)]
pub struct TelemetryReader {
    acc: TelemetryAccumulator,
    reader: JsonlReader,
    warnings: Warnings,
}

impl TelemetryReader {
    /// A reader for `windows`.
    pub fn new(windows: &[Window]) -> Self {
        Self::with_max_line_bytes(windows, super::jsonl::MAX_LINE_BYTES)
    }

    /// A reader for `windows` skipping lines longer than `max_line_bytes`.
    pub fn with_max_line_bytes(windows: &[Window], max_line_bytes: usize) -> Self {
        Self::with_budget(windows, max_line_bytes, ValueBudget::in_memory())
    }

    /// [`with_max_line_bytes`](Self::with_max_line_bytes), the series sharing `budget`.
    pub fn with_budget(windows: &[Window], max_line_bytes: usize, budget: ValueBudget) -> Self {
        TelemetryReader {
            acc: TelemetryAccumulator::with_budget(windows, budget),
            reader: JsonlReader::with_max_line_bytes(max_line_bytes),
            warnings: Warnings::default(),
        }
    }

    /// Takes the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) {
        let acc = &mut self.acc;
        self.reader
            .push(chunk, &mut self.warnings, |line, value, w| {
                feed_row(acc, line, &value, w)
            });
    }

    /// The end of the file; `read_error` is the error that ended reading early (or kept the
    /// file from opening), and then an unfinished last line is dropped. `source` names the
    /// file in the summaries.
    pub fn finish(mut self, source: &str, read_error: Option<&str>) -> Vec<TelemetrySummary> {
        if read_error.is_none() {
            let acc = &mut self.acc;
            self.reader.finish(&mut self.warnings, |line, value, w| {
                feed_row(acc, line, &value, w)
            });
        }
        if let Some(e) = read_error {
            self.warnings.note(alloc::format!(
                "{source}: read error, rows after it are missing: {e}"
            ));
        }
        let mut out = self.acc.finish(source);
        let mut rendered: Vec<String> = self.warnings.render(source);
        if let Some(first) = out.first_mut() {
            rendered.append(&mut first.warnings);
            first.warnings = rendered;
        }
        out
    }
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
