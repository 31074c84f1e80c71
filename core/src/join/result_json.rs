//! The bytes `trace --json` prints with a join option: the summary's JSON object with the
//! join's keys appended.
use alloc::format;
use alloc::string::{String, ToString};
use serde::Serialize;

use super::JoinReport;

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
