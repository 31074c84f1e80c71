//! `startup`, `sustained_request_summary` and `sustained_request_trends` of a run, from
//! `report.json`, the host's `status.json` and `requests.jsonl`.
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::Serialize;
use serde_json::{Map, Value};

use super::OrderedMap;
use super::jsonl::{num, truthy};
use super::warnings::Warnings;
use crate::pynum::{add, gt, sub};
use crate::stats::{Num, Stats, stats_in_place};
use crate::windowed::Window;

const INCLUSIVE_STARTUP_SCOPE: &str = "Host launch through first warmup submission/output includes imports, artifact hashing, plan construction and engine startup; uses recorded host/engine wall timestamps. Constructor timing alone excludes preparation before the constructor.";
const PRE_CONSTRUCTOR_SCOPE: &str = "Host launch to report creation includes Python/import/preparation work; not isolated OS process creation.";
const STARTUP_SCOPE: &str = "Runtime-reported component lines retain original boundaries; do not sum parallel-stage times into startup latency.";
const REQUEST_SUMMARY_SCOPE: &str =
    "All sustained requests; timing/real-time gates are separate from successful completion.";
const TREND_METRICS: [&str; 7] = [
    "wall_s",
    "ttft_s",
    "decode_tok_per_s",
    "total_wall_s",
    "ttfa_ms",
    "rtf_total",
    "stall_at_ttfa_ms",
];

/// One line of `requests.jsonl` that is a JSON object, with its line number.
#[derive(Debug)]
pub struct Request {
    /// 1-based line number in `requests.jsonl`.
    pub line: usize,
    /// The object.
    pub fields: Map<String, Value>,
}

impl Request {
    fn get(&self, key: &str) -> &Value {
        self.fields.get(key).unwrap_or(&Value::Null)
    }
    fn phase_is(&self, phase: &str) -> bool {
        self.fields.get("phase").and_then(Value::as_str) == Some(phase)
    }
}

/// `startup` of a run.
#[derive(Serialize, Debug)]
pub struct Startup {
    cache_condition: Value,
    constructor_s: Value,
    host_launch_to_benchmark_report_start_s: Option<Num>,
    host_launch_to_first_request_s: Option<Num>,
    host_launch_to_first_output_s: Option<Num>,
    inclusive_startup_scope: &'static str,
    pre_constructor_scope: &'static str,
    first_warmup: Option<FirstWarmup>,
    runtime_loading_compilation_evidence: Vec<String>,
    scope: &'static str,
}

/// The first warmup request's fields as recorded (null where absent).
#[derive(Serialize, Debug)]
pub struct FirstWarmup {
    request_id: Value,
    length_band: Value,
    concurrency: Value,
    wall_s: Value,
    ttft_s: Value,
    total_wall_s: Value,
    ttfa_ms: Value,
    rtf_total: Value,
}

/// A number where Python would compute with the value: falsy values give `None` quietly,
/// truthy non-numbers (the reference raises on them) give `None` and a warning.
fn truthy_num(v: &Value, what: &str, w: &mut Warnings) -> Option<Num> {
    if !truthy(v) {
        return None;
    }
    let n = num(v);
    if n.is_none() {
        w.note(format!(
            "{what} is not a number ({v}); figures using it are null"
        ));
    }
    n
}

/// Builds `startup` as the reference does.
pub fn startup(
    report: &Map<String, Value>,
    host_report: &Map<String, Value>,
    requests: &[Request],
    timing_lines: Vec<String>,
    w: &mut Warnings,
) -> Startup {
    let warmup = requests.iter().find(|r| r.phase_is("warmup"));
    let launch = truthy_num(
        host_report.get("start_unix").unwrap_or(&Value::Null),
        "status.json start_unix",
        w,
    );
    let report_start = truthy_num(
        report.get("start_unix").unwrap_or(&Value::Null),
        "report.json start_unix",
        w,
    );
    let first_submit = warmup.and_then(|r| {
        truthy_num(
            r.get("submitted_unix"),
            &format!("requests.jsonl line {} submitted_unix", r.line),
            w,
        )
    });
    let first_latency = warmup.and_then(|r| match r.get("ttft_s") {
        Value::Null => match r.get("ttfa_ms") {
            Value::Null => None,
            v => match num(v) {
                Some(ms) => Some(Num::Float(ms.to_f64() / 1000.0)),
                None => {
                    w.note(format!(
                        "requests.jsonl line {} ttfa_ms is not a number",
                        r.line
                    ));
                    None
                }
            },
        },
        v => {
            let n = num(v);
            if n.is_none() {
                w.note(format!(
                    "requests.jsonl line {} ttft_s is not a number",
                    r.line
                ));
            }
            n
        }
    });
    let since_launch = |t: Option<Num>| match (t, launch) {
        (Some(t), Some(l)) => Some(sub(t, l)),
        _ => None,
    };
    Startup {
        cache_condition: report
            .get("cache_condition")
            .cloned()
            .unwrap_or_else(|| Value::from("See source report")),
        constructor_s: report.get("startup_s").cloned().unwrap_or(Value::Null),
        host_launch_to_benchmark_report_start_s: since_launch(report_start),
        host_launch_to_first_request_s: since_launch(first_submit),
        host_launch_to_first_output_s: match (since_launch(first_submit), first_latency) {
            (Some(d), Some(l)) => Some(add(d, l)),
            _ => None,
        },
        inclusive_startup_scope: INCLUSIVE_STARTUP_SCOPE,
        pre_constructor_scope: PRE_CONSTRUCTOR_SCOPE,
        first_warmup: warmup.map(|r| FirstWarmup {
            request_id: r.get("request_id").clone(),
            length_band: r.get("length_band").clone(),
            concurrency: r.get("concurrency").clone(),
            wall_s: r.get("wall_s").clone(),
            ttft_s: r.get("ttft_s").clone(),
            total_wall_s: r.get("total_wall_s").clone(),
            ttfa_ms: r.get("ttfa_ms").clone(),
            rtf_total: r.get("rtf_total").clone(),
        }),
        runtime_loading_compilation_evidence: timing_lines,
        scope: STARTUP_SCOPE,
    }
}

/// `sustained_request_summary` of a run.
#[derive(Serialize, Debug)]
pub struct RequestSummary {
    n: usize,
    rtf_above_one_requests: usize,
    simulated_playback_deficit_requests: usize,
    rtf_total: Stats,
    scope: &'static str,
}

/// One window of `sustained_request_trends`.
#[derive(Serialize, Debug)]
pub struct Trend {
    n: usize,
    window_basis: &'static str,
    metrics: OrderedMap<Stats>,
}

/// `sustained_request_trends`: first 5 min, last 5 min, last 60 s by submission time.
#[derive(Serialize, Debug)]
pub struct Trends {
    first_5min: Trend,
    last_5min: Trend,
    last_60s: Trend,
}

/// `(value or 0) > threshold` in Python, where the value is a request field. A truthy
/// non-number (the reference raises) counts as not above and is reported.
fn above(r: &Request, key: &str, threshold: i64, w: &mut Warnings) -> bool {
    let v = r.get(key);
    if !truthy(v) {
        return false;
    }
    match v {
        Value::Bool(b) => (*b as i64) > threshold,
        _ => match num(v) {
            Some(n) => gt(n, Num::Int(threshold)),
            None => {
                w.at_line(&format!("{key} is not a number, not counted"), r.line);
                false
            }
        },
    }
}

fn series(requests: &[&Request], key: &str) -> Stats {
    let mut values: Vec<Num> = requests.iter().filter_map(|r| num(r.get(key))).collect();
    stats_in_place(&mut values)
}

/// The sustained phase's request summary and trends. `start`/`duration` are the report's
/// `sustained_start_unix` and `sustained_wall_s`.
pub fn sustained(
    requests: &[Request],
    start: Num,
    duration: Num,
    w: &mut Warnings,
) -> (RequestSummary, Trends) {
    let sustained: Vec<&Request> = requests
        .iter()
        .filter(|r| r.phase_is("sustained"))
        .collect();
    let summary = RequestSummary {
        n: sustained.len(),
        rtf_above_one_requests: sustained
            .iter()
            .filter(|r| above(r, "rtf_total", 1, w))
            .count(),
        simulated_playback_deficit_requests: sustained
            .iter()
            .filter(|r| above(r, "stall_at_ttfa_ms", 0, w))
            .count(),
        rtf_total: series(&sustained, "rtf_total"),
        scope: REQUEST_SUMMARY_SCOPE,
    };
    // Submission times; what the reference cannot compare is left out of every window.
    let submitted: Vec<Option<Num>> = sustained
        .iter()
        .map(|r| match r.fields.get("submitted_unix") {
            None => Some(Num::Int(-1)),
            Some(v) => {
                let n = num(v);
                if n.is_none() {
                    w.at_line(
                        "submitted_unix is null or not a number, left out of trends",
                        r.line,
                    );
                }
                n
            }
        })
        .collect();
    // The reference's windows: [start, start+300), [end-300, end), [end-60, end), with
    // end = start + duration.
    let end = add(start, duration);
    let trends = Trends {
        first_5min: trend(&sustained, &submitted, start, add(start, Num::Int(300))),
        last_5min: trend(&sustained, &submitted, sub(end, Num::Int(300)), end),
        last_60s: trend(&sustained, &submitted, sub(end, Num::Int(60)), end),
    };
    (summary, trends)
}

/// Requests submitted in `[begin, end)` and their metric statistics.
fn trend(sustained: &[&Request], submitted: &[Option<Num>], begin: Num, end: Num) -> Trend {
    let window = Window::half_open(begin, end);
    let kept: Vec<&Request> = sustained
        .iter()
        .zip(submitted)
        .filter(|(_, t)| t.is_some_and(|t| window.contains(t)))
        .map(|(r, _)| *r)
        .collect();
    Trend {
        n: kept.len(),
        window_basis: "request submission time",
        metrics: OrderedMap(
            TREND_METRICS
                .iter()
                .map(|m| (m.to_string(), series(&kept, m)))
                .collect(),
        ),
    }
}
