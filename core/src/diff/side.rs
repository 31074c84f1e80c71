//! One side of a diff: the figures compared, taken from a trace job's result (every op listed,
//! so that each op's p50 is the summary's exact one) or from a summary's mergeable section
//! (each op's p50 read from its histogram, within the section's stated bound). The rest of the
//! summary is dropped once these are taken.
use alloc::string::String;
use alloc::vec::Vec;

use super::kind::InputKind;
use crate::join::JoinReport;
use crate::merge::MergeState;
use crate::merge::histogram::relative_error;
use crate::steps::{PARTS, StepsReport};
use crate::summary::OpDurations;
use crate::trace_job::TraceJobResult;

/// One category of one side.
#[derive(Clone, Debug, PartialEq)]
pub struct SideCategory {
    /// The category.
    pub name: String,
    /// Duration events.
    pub events: u64,
    /// Sum of durations, ns.
    pub duration_sum_ns: u128,
    /// Busy union, ns (a summary of several ranks: the ranks' unions summed).
    pub busy_union_ns: u64,
}

/// One (category, name) op of one side.
#[derive(Clone, Debug, PartialEq)]
pub struct SideOp {
    /// The op's category.
    pub category: String,
    /// The op's name.
    pub name: String,
    /// Durations.
    pub n: u64,
    /// Their sum, ns (exact).
    pub duration_sum_ns: u128,
    /// Mean duration, µs.
    pub mean_us: Option<f64>,
    /// Median duration (numpy-linear), µs: exact from a trace, from the histogram of a summary.
    pub p50_us: Option<f64>,
    /// A trace's op whose durations the trace job handed over: they give `mean_us` and
    /// `p50_us` ([`SideOp::mean_p50_us`]) when the op is listed, so that the ops never listed
    /// cost no statistics (the two fields are then `None`).
    pub durations: Option<OpDurations>,
}

impl SideOp {
    /// The mean and the median, µs: from the durations when the op holds them (the summary's
    /// own `stats`, so the same numbers), else the fields.
    pub fn mean_p50_us(&self) -> (Option<f64>, Option<f64>) {
        match &self.durations {
            Some(d) => {
                let s = d.stats();
                (s.mean, s.p50)
            }
            None => (self.mean_us, self.p50_us),
        }
    }
}

/// One device's pauses (the join's, docs/join.md).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DevicePauses {
    /// Pauses found.
    #[serde(rename = "n")]
    pub pauses: u64,
    /// Their summed length, ms.
    pub total_ms: f64,
}

/// Energy of one annotation name (with a recording).
#[derive(Clone, Debug, PartialEq)]
pub struct SideEnergy {
    /// Annotation category.
    pub category: String,
    /// Annotation name.
    pub name: String,
    /// Spans.
    pub n: u64,
    /// Summed edge-interpolated GPU energy, J.
    pub gpu_energy_j: Option<f64>,
}

/// A trace's steps, as the diff compares them (exact ns, in time order).
#[derive(Clone, Debug, PartialEq)]
pub struct SideSteps {
    /// The step pattern, as the output names it.
    pub pattern: String,
    /// Each step's index (`ProfilerStep#N`'s N, else its ordinal).
    pub indices: Vec<u64>,
    /// Each step's length, ns.
    pub durations_ns: Vec<u64>,
    /// Each step's parts, ns, indexed by [`crate::steps::Part`].
    pub parts_ns: Vec<[u64; PARTS]>,
    /// With power known (a recording, or the trace's power counters): each step's GPU energy,
    /// J (`None` for a step no reading touches).
    pub energy_j: Option<Vec<Option<f64>>>,
    /// Steps with an energy shorter than an update period of the power reading.
    pub unresolvable: usize,
    /// The steps' own warnings, and their breakdown's error bound past the limits, ms.
    pub warnings: Vec<String>,
}

impl SideSteps {
    /// From the trace job's step report.
    pub fn of(report: StepsReport) -> SideSteps {
        let s = report.step_summary;
        let power = report.steps.iter().any(|e| e.energy.is_some());
        let mut warnings = s.warnings;
        if let Some(a) = &s.approximations
            && a.breakdown_error_bound_ms > 0.0
        {
            warnings.push(alloc::format!(
                "the steps' breakdown is approximate past max_step_intervals: every part of every step within {} ms",
                a.breakdown_error_bound_ms
            ));
        }
        let unresolvable = report
            .steps
            .iter()
            .filter(|e| {
                e.energy
                    .as_ref()
                    .is_some_and(|x| x.gpu_energy_j.is_some() && !x.resolvable)
            })
            .count();
        SideSteps {
            pattern: s.pattern,
            indices: report.steps.iter().map(|e| e.index).collect(),
            durations_ns: report.steps.iter().map(|e| e.duration_ns).collect(),
            parts_ns: report.steps.iter().map(|e| e.parts_ns).collect(),
            energy_j: power.then(|| {
                report
                    .steps
                    .iter()
                    .map(|e| e.energy.as_ref().and_then(|x| x.gpu_energy_j))
                    .collect()
            }),
            unresolvable,
            warnings,
        }
    }
}

/// The figures of one side.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    /// The name the input was given.
    pub source: String,
    /// Trace or summary.
    pub kind: InputKind,
    /// Ranks (1 for a trace).
    pub ranks: usize,
    /// Events read.
    pub events: u64,
    /// Some input ended early.
    pub truncated: bool,
    /// Categories, by name.
    pub categories: Vec<SideCategory>,
    /// Union of every category's busy time, ns (ranks' unions summed).
    pub busy_union_ns: u64,
    /// Sum of every duration, ns.
    pub duration_sum_ns: u128,
    /// Every op with a duration, by (category, name).
    pub ops: Vec<SideOp>,
    /// Bound on the p50s' relative error (0: exact, or none stated).
    pub p50_relative_error: f64,
    /// Some p50 is not exact (a summary's histograms; a trace's sketches past its limits).
    pub p50_approximate: bool,
    /// Per device (ascending), a trace's pauses; `None` for a summary.
    pub pauses: Option<Vec<(i64, DevicePauses)>>,
    /// The join's minimum pause, ms (a trace; set by the job from its options).
    pub min_gap_ms: Option<f64>,
    /// Energy per annotation, with a recording.
    pub energy: Option<Vec<SideEnergy>>,
    /// Ops folded into `"(other)"` past the op limit.
    pub ops_folded: bool,
    /// A trace's steps, when asked for (`None` for a summary).
    pub steps: Option<SideSteps>,
    /// What the reader should know (the summary's and the join's warnings).
    pub warnings: Vec<String>,
}

impl Side {
    /// From a trace job's result whose summary lists every op.
    pub fn of_trace(source: String, r: TraceJobResult) -> Side {
        let s = r.summary;
        let ops: Vec<SideOp> = s
            .largest_ops_by_duration_sum
            .into_iter()
            .map(|o| SideOp {
                category: o.category,
                name: o.name,
                n: o.duration_us.n,
                duration_sum_ns: o.duration_sum_ns.max(0) as u128,
                mean_us: o.duration_us.mean,
                p50_us: o.duration_us.p50,
                durations: o.durations,
            })
            .collect();
        let ops = sorted_by_key(ops);
        let mut categories: Vec<SideCategory> = s
            .categories
            .0
            .into_iter()
            .map(|c| SideCategory {
                name: c.name,
                events: c.events,
                duration_sum_ns: c.duration_sum_ns.max(0) as u128,
                busy_union_ns: c.busy_union_ns,
            })
            .collect();
        categories.sort_by(|x, y| x.name.cmp(&y.name));
        let mut warnings = s.warnings;
        let ops_folded = s.approximations.is_some_and(|a| a.ops_folded_into_other);
        // Past the summary's limits (`--bounded`'s sketches, a file that cannot be read again),
        // its approximations are the diff's too: stated as the summary states them.
        let mut p50_approximate = false;
        if let Some(a) = &s.approximations {
            p50_approximate = a.ops_with_sketched_stats > 0 || a.listed_ops_without_percentiles > 0;
            if let Ok(text) = serde_json::to_string(a) {
                warnings.push(alloc::format!(
                    "the trace's summary is approximate past its limits (docs/trace-exactness.md): {text}"
                ));
            }
        }
        let (pauses, min_gap_ms, energy) = match r.join {
            Some(j) => join_parts(j, &mut warnings),
            None => (None, None, None),
        };
        Side {
            source,
            kind: InputKind::Trace,
            ranks: 1,
            events: s.totals.events,
            truncated: s.truncated,
            categories,
            busy_union_ns: s.totals.busy_union_ns,
            duration_sum_ns: s.totals.duration_sum_ns.max(0) as u128,
            ops,
            p50_relative_error: if p50_approximate {
                s.approximations.map_or(0.0, |a| a.quantile_relative_error)
            } else {
                0.0
            },
            p50_approximate,
            pauses,
            min_gap_ms,
            energy,
            ops_folded,
            steps: r.steps.map(SideSteps::of),
            warnings,
        }
    }

    /// From a summary's (folded) mergeable section.
    pub fn of_summary(source: String, state: MergeState) -> Side {
        let scale = state.scale;
        let categories = state
            .categories
            .iter()
            .map(|c| SideCategory {
                name: c.name.clone(),
                events: c.events,
                duration_sum_ns: c.duration_sum_ns,
                busy_union_ns: state
                    .ranks
                    .iter()
                    .map(|r| r.busy_union_ns_by_category.get(&c.name).unwrap_or(0))
                    .fold(0u64, u64::saturating_add),
            })
            .collect();
        let ops = state
            .ops
            .iter()
            .map(|o| SideOp {
                category: o.category.clone(),
                name: o.name.clone(),
                n: o.n,
                duration_sum_ns: o.duration_sum_ns,
                // One division of two exact integers, as the merged summary's mean.
                mean_us: (o.n > 0).then(|| o.duration_sum_ns as f64 / (o.n as f64 * 1000.0)),
                p50_us: crate::merge::percentiles_us(o, scale)[0],
                durations: None,
            })
            .collect();
        let mut warnings = Vec::new();
        for r in &state.ranks {
            warnings.extend(
                r.warnings
                    .iter()
                    .map(|w| alloc::format!("{}: {w}", r.source)),
            );
        }
        Side {
            source,
            kind: InputKind::Summary,
            ranks: state.ranks.len(),
            events: state.ranks.iter().map(|r| r.events).sum(),
            truncated: state.ranks.iter().any(|r| r.truncated),
            categories,
            busy_union_ns: state
                .ranks
                .iter()
                .map(|r| r.busy_union_ns)
                .fold(0u64, u64::saturating_add),
            duration_sum_ns: state.ranks.iter().map(|r| r.duration_sum_ns).sum(),
            ops,
            p50_relative_error: relative_error(scale),
            p50_approximate: true,
            pauses: None,
            min_gap_ms: None,
            energy: None,
            ops_folded: state.ops_folded_into_other,
            steps: None,
            warnings,
        }
    }
}

/// `ops` in (category, name) order, equal keys in their order (what a stable sort gives): the
/// few categories ranked first, so that one comparison of names orders most pairs, and the
/// order found on indexes, so that the rows move once.
fn sorted_by_key(ops: Vec<SideOp>) -> Vec<SideOp> {
    let mut cats: Vec<&str> = Vec::new();
    for o in &ops {
        if let Err(at) = cats.binary_search(&o.category.as_str()) {
            cats.insert(at, &o.category);
        }
    }
    let mut order: Vec<(u32, &str, u32)> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let rank = cats.binary_search(&o.category.as_str()).unwrap_or(0);
            (rank as u32, o.name.as_str(), i as u32)
        })
        .collect();
    order.sort_unstable();
    let order: Vec<u32> = order.into_iter().map(|(_, _, i)| i).collect();
    let mut slots: Vec<Option<SideOp>> = ops.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots[i as usize].take())
        .collect()
}

type JoinParts = (
    Option<Vec<(i64, DevicePauses)>>,
    Option<f64>,
    Option<Vec<SideEnergy>>,
);

fn join_parts(j: JoinReport, warnings: &mut Vec<String>) -> JoinParts {
    let pauses = j
        .pause_devices
        .iter()
        .map(|d| {
            let p = DevicePauses {
                pauses: d.pauses_found,
                total_ms: d.pause_time_ms,
            };
            (d.device, p)
        })
        .collect();
    let energy = j.annotation_energy.map(|rows| {
        let mut rows: Vec<SideEnergy> = rows
            .into_iter()
            .map(|a| SideEnergy {
                category: a.category,
                name: a.name,
                n: a.n,
                gpu_energy_j: a.gpu_energy_j,
            })
            .collect();
        rows.sort_by(|x, y| (&x.category, &x.name).cmp(&(&y.category, &y.name)));
        rows
    });
    // Without a recording the join's warnings are about the clock only, which the pause
    // counts do not use.
    if energy.is_some() {
        warnings.extend(j.join_warnings);
    }
    (Some(pauses), None, energy)
}
