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
use crate::stats::{Num, Stats};
use crate::telemetry::values::Shares;
use crate::telemetry::{BoundedStats, ValueBudget};
use crate::time_windows::{StatsSink, Window};

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
    /// Whether the row's `phase` is `phase`.
    pub fn phase_is(&self, phase: &str) -> bool {
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
    warmup: Option<&Request>,
    timing_lines: Vec<String>,
    w: &mut Warnings,
) -> Startup {
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

/// One trend window being accumulated: its bounds, its requests and each metric's values.
struct TrendAcc {
    window: Window,
    n: usize,
    metrics: [BoundedStats; TREND_METRICS.len()],
}

/// The sustained phase's request figures, accumulated one request row at a time as the file
/// streams (nothing is kept per row): the counts, and each series' values within its share of
/// the run's [`ValueBudget`] (exact; see [`crate::telemetry::values`]). Warnings are kept per
/// kind and added to the run's in the order the reference's passes would give them.
pub(crate) struct SustainedAcc {
    n: usize,
    rtf_above_one: usize,
    deficit: usize,
    rtf_total: BoundedStats,
    /// first 5 min, last 5 min, last 60 s.
    trends: [TrendAcc; 3],
    warn_rtf: Warnings,
    warn_stall: Warnings,
    warn_submitted: Warnings,
    shares: Shares,
}

impl core::fmt::Debug for SustainedAcc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SustainedAcc").field("n", &self.n).finish()
    }
}

/// The names of the series of [`SustainedAcc`], by tag (the order they are made in).
fn series_name(tag: u32) -> String {
    const WINDOWS: [&str; 3] = ["first_5min", "last_5min", "last_60s"];
    let t = tag as usize;
    if t == 0 {
        return String::from("sustained_request_summary.rtf_total");
    }
    let (w, m) = ((t - 1) / TREND_METRICS.len(), (t - 1) % TREND_METRICS.len());
    format!(
        "sustained_request_trends.{}.metrics.{}",
        WINDOWS[w.min(2)],
        TREND_METRICS[m]
    )
}

impl SustainedAcc {
    /// The phase starting at `start`, `duration` long (the report's `sustained_start_unix` and
    /// `sustained_wall_s`); the reference's trend windows: `[start, start+300)`,
    /// `[end-300, end)`, `[end-60, end)`, with `end = start + duration`.
    pub(crate) fn new(start: Num, duration: Num, budget: &ValueBudget) -> SustainedAcc {
        let mut shares = budget.shares(1 + 3 * TREND_METRICS.len());
        let rtf_total = shares.sink();
        let end = add(start, duration);
        let bounds = [
            (start, add(start, Num::Int(300))),
            (sub(end, Num::Int(300)), end),
            (sub(end, Num::Int(60)), end),
        ];
        let trends = bounds.map(|(b, e)| TrendAcc {
            window: Window::half_open(b, e),
            n: 0,
            metrics: core::array::from_fn(|_| shares.sink()),
        });
        SustainedAcc {
            n: 0,
            rtf_above_one: 0,
            deficit: 0,
            rtf_total,
            trends,
            warn_rtf: Warnings::default(),
            warn_stall: Warnings::default(),
            warn_submitted: Warnings::default(),
            shares,
        }
    }

    /// One row of `requests.jsonl` in the sustained phase.
    pub(crate) fn push(&mut self, r: &Request) {
        self.n += 1;
        self.rtf_above_one += usize::from(above(r, "rtf_total", 1, &mut self.warn_rtf));
        self.deficit += usize::from(above(r, "stall_at_ttfa_ms", 0, &mut self.warn_stall));
        if let Some(v) = num(r.get("rtf_total")) {
            self.rtf_total.push_value(v);
        }
        // Submission time; what the reference cannot compare is left out of every window.
        let submitted = match r.fields.get("submitted_unix") {
            None => Some(Num::Int(-1)),
            Some(v) => {
                let n = num(v);
                if n.is_none() {
                    self.warn_submitted.at_line(
                        "submitted_unix is null or not a number, left out of trends",
                        r.line,
                    );
                }
                n
            }
        };
        let Some(t) = submitted else { return };
        for trend in &mut self.trends {
            if !trend.window.contains(t) {
                continue;
            }
            trend.n += 1;
            for (m, sink) in TREND_METRICS.iter().zip(&mut trend.metrics) {
                if let Some(v) = num(r.get(m)) {
                    sink.push_value(v);
                }
            }
        }
    }

    /// The summary and trends; the warnings go to `w` in the reference's order.
    pub(crate) fn finish(mut self, w: &mut Warnings) -> (RequestSummary, Trends) {
        w.extend(core::mem::take(&mut self.warn_rtf));
        w.extend(core::mem::take(&mut self.warn_stall));
        w.extend(core::mem::take(&mut self.warn_submitted));
        let summary = RequestSummary {
            n: self.n,
            rtf_above_one_requests: self.rtf_above_one,
            simulated_playback_deficit_requests: self.deficit,
            rtf_total: self.rtf_total.stats(),
            scope: REQUEST_SUMMARY_SCOPE,
        };
        let [a, b, c] = self.trends.map(|t| {
            let mut metrics = t.metrics;
            Trend {
                n: t.n,
                window_basis: "request submission time",
                metrics: OrderedMap(
                    TREND_METRICS
                        .iter()
                        .zip(metrics.iter_mut())
                        .map(|(m, s)| (m.to_string(), s.stats()))
                        .collect(),
                ),
            }
        });
        for tag in self.shares.sketched() {
            w.note(format!(
                "{}: more values than the run's exact-values budget ({} per series): percentiles from a quantile sketch, within {:.3}% relative error (null where a temporary file failed)",
                series_name(tag),
                self.shares.quota(),
                crate::telemetry::values::sketch_error() * 100.0
            ));
        }
        (
            summary,
            Trends {
                first_5min: a,
                last_5min: b,
                last_60s: c,
            },
        )
    }
}
