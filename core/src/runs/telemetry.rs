//! Reads one `telemetry.jsonl`, pushed in chunks, and feeds every window's accumulator in that
//! one pass; checks each row as the reference would use it.
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use super::jsonl::{JsonlReader, num};
use super::warnings::Warnings;
use crate::telemetry::host_row::keys;
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
    if let Some(row) = read_row(line, value, w) {
        acc.push(&row);
    }
}

/// One parsed line as the row it holds (the keys of [`HostRow`](crate::telemetry::HostRow)),
/// or `None` when the reference would skip it; what is ignored or skipped is counted in `w`.
fn read_row<'a>(line: usize, value: &'a Value, w: &mut Warnings) -> Option<TelemetryRow<'a>> {
    let Value::Object(row) = value else {
        w.at_line("skipped, not a JSON object", line);
        return None;
    };
    let skip = |w: &mut Warnings, why: &str| {
        w.at_line(why, line);
        None
    };
    let unix = match row.get(keys::UNIX) {
        None => return skip(w, "skipped, missing unix"),
        Some(v) => match num(v).filter(|n| n.is_finite()) {
            Some(n) => n,
            None => return skip(w, "skipped, unix is not a finite number"),
        },
    };
    let memory = match row.get(keys::HOST_MEMORY) {
        Some(Value::Object(m)) if m.contains_key(keys::AVAILABLE) && m.contains_key(keys::USED) => {
            m
        }
        Some(Value::Object(_)) => return skip(w, "skipped, host_memory lacks available/used"),
        Some(_) => return skip(w, "skipped, host_memory is not an object"),
        None => return skip(w, "skipped, missing host_memory"),
    };
    let gpu_csv = match row.get(keys::GPU_CSV) {
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
    let ac_state = match row.get(keys::POWER) {
        None => None,
        Some(Value::Object(p)) => match p.get(keys::AC_LINE_STATUS) {
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
    Some(TelemetryRow {
        unix,
        host_available_bytes: num(&memory[keys::AVAILABLE]),
        host_used_bytes: num(&memory[keys::USED]),
        host_cpu_percent: row.get(keys::HOST_CPU_PERCENT).and_then(num),
        gpu_csv,
        ac_state,
    })
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

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec;

    use super::*;
    use crate::telemetry::{HostMemory, HostRow};

    /// Rows as the recorder writes them read back as the values they hold.
    #[test]
    fn the_written_row_reads_back() {
        let gpu = "0,GPU-a,1000,81920,60,71.25,1980,2619,99,".to_string();
        for (cpu, gpus) in [
            (Some(12.0), None),
            (Some(12.5), Some(vec![gpu.clone(), gpu.clone()])),
            (None, None),
            (Some(f64::NAN), None),
        ] {
            let row = HostRow {
                unix: 1_764_600_000.123_456_7,
                host_memory: HostMemory {
                    available: Some(5 << 30),
                    used: Some(3 << 30),
                    total: None,
                },
                host_cpu_percent: cpu,
                gpu_csv: gpus.as_ref().map(|g: &Vec<String>| g[0].clone()),
                gpus_csv: gpus.clone(),
            };
            let line = serde_json::to_vec(&row).unwrap();
            let value: Value = serde_json::from_slice(&line).unwrap();
            let mut w = Warnings::default();
            let got = read_row(1, &value, &mut w).unwrap();
            assert_eq!(got.unix, Num::Float(row.unix));
            assert_eq!(got.host_available_bytes, Some(Num::Int(5 << 30)));
            assert_eq!(got.host_used_bytes, Some(Num::Int(3 << 30)));
            let want_cpu = match cpu {
                Some(12.0) => Some(Num::Int(12)),
                Some(c) if c.is_finite() => Some(Num::Float(c)),
                _ => None,
            };
            assert_eq!(got.host_cpu_percent, want_cpu);
            assert_eq!(got.gpu_csv, row.gpu_csv.as_deref().unwrap_or(""));
            assert_eq!(got.ac_state, None);
            assert!(w.render("t").is_empty());
        }
    }
}
