//! The merged summary: the per-rank summary's keys, read from a folded [`MergeState`].
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde::ser::Serializer;

use super::histogram::relative_error;
use super::state::{MergeState, OpSum};
use crate::stats::{Num, QUANTILES, Stats, lerp};

/// The `scope` line of a merged summary.
pub const MERGED_SCOPE: &str = "several process traces (ranks) merged; event duration sums overlap and are not E2E time; busy unions are per rank";

/// The ranks merged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RanksView {
    /// How many.
    pub n: usize,
    /// Their `source`s, in the order of every `..._by_rank` list.
    pub sources: Vec<String>,
}

/// One category: summed counts, busy unions per rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergedCategory {
    /// Duration events.
    pub events: u64,
    /// Sum of durations, µs (the exact ns sum converted once).
    pub duration_sum_us: f64,
    /// Sum of durations, exact ns.
    pub duration_sum_ns: u128,
    /// Each rank's union of this category's `[ts, ts + dur)`, µs (0 where the rank has none).
    pub busy_union_us_by_rank: Vec<f64>,
}

/// Categories by name; serializes as an object.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedCategories(pub Vec<(String, MergedCategory)>);

impl Serialize for MergedCategories {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::ordered::serialize_pairs(s, self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// One row of `largest_ops_by_duration_sum`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergedOpRow {
    /// The op's category.
    pub category: String,
    /// The op's name.
    pub name: String,
    /// Sum of durations, µs.
    pub duration_sum_us: f64,
    /// `n`, `mean`, `min`, `max` exact; percentiles from the merged histogram, within
    /// `quantile_relative_error`.
    pub duration_us: Stats,
}

/// Totals over the ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergedTotals {
    /// Events read.
    pub events: u64,
    /// Duration events counted.
    pub duration_events: u64,
    /// Sum of all durations, µs.
    pub duration_sum_us: f64,
    /// Sum of all durations, exact ns.
    pub duration_sum_ns: u128,
    /// Input bytes scanned.
    pub bytes: u64,
    /// Each rank's union of all its duration events, µs.
    pub busy_union_us_by_rank: Vec<f64>,
}

/// Present only when a rank's summary was approximate, or an op has no histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergedApproximations {
    /// Each rank's stated overcount bound of its busy unions, µs.
    pub busy_union_error_bound_us_by_rank: Vec<f64>,
    /// Some rank folded ops into `"(other)"`.
    pub ops_folded_into_other: bool,
    /// Some rank folded categories into `"(other)"`.
    pub categories_folded_into_other: bool,
    /// Ops (of all, not only the listed) without a histogram: their percentiles are `null`.
    pub ops_without_histogram: u64,
}

/// The merged summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergedSummary {
    /// The ranks merged.
    pub ranks: RanksView,
    /// [`MERGED_SCOPE`].
    pub scope: &'static str,
    /// Per category, by name.
    pub categories: MergedCategories,
    /// Top ops by summed duration (ties by category, then name).
    pub largest_ops_by_duration_sum: Vec<MergedOpRow>,
    /// Events by phase, summed.
    pub phase_counts: BTreeMap<String, u64>,
    /// Totals.
    pub totals: MergedTotals,
    /// The sources of the ranks whose input ended early.
    pub truncated_ranks: Vec<String>,
    /// Relative error bound of every percentile above (against the exact numpy-linear
    /// percentile of the pooled durations).
    pub quantile_relative_error: f64,
    /// Each rank's warnings, prefixed with its source.
    pub warnings: Vec<String>,
    /// Every warning counter, summed.
    pub warning_counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// Present only when something is approximate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximations: Option<MergedApproximations>,
    /// The folded state: merge this output again with others (serialized last by
    /// [`to_json`](super::to_json), on one line).
    #[serde(skip)]
    pub mergeable: MergeState,
}

fn ns_to_us(ns: u128) -> f64 {
    ns as f64 / 1000.0
}

/// numpy-linear percentiles of an op's durations in µs from its histogram: each rank's value is
/// its bucket's (clamped to the exact range), ranks 0 and n - 1 the exact min and max.
pub(crate) fn percentiles_us(op: &OpSum, scale: u8) -> [Option<f64>; 4] {
    let Some(h) = &op.histogram else {
        return [None; 4];
    };
    let (min_us, max_us) = (op.min_ns as f64 / 1000.0, op.max_ns as f64 / 1000.0);
    let n = op.n;
    let at = |rank: u64| -> f64 {
        if rank == 0 {
            return min_us;
        }
        if rank + 1 >= n {
            return max_us;
        }
        let ns = h
            .value_at_ns(rank, scale)
            .unwrap_or(op.max_ns as f64)
            .clamp(op.min_ns as f64, op.max_ns as f64);
        ns / 1000.0
    };
    QUANTILES.map(|q| {
        let h = (n - 1) as f64 * q;
        if h >= (n - 1) as f64 {
            return Some(max_us);
        }
        let lo = h as u64;
        Some(lerp(at(lo), at(lo + 1), h - lo as f64))
    })
}

/// One warning per rank that appears more than once, equal in every field (source, counts,
/// unions, warnings): the same summary merged twice (`merge r0.json r0.json`, or a merge's
/// output merged again with one of its inputs), whose counts are then added twice. Ranks are
/// sorted, so equal ones are adjacent; as the rest of the output, this is a function of the
/// folded state, so the merge stays associative.
fn repeated_ranks(ranks: &[super::state::Rank]) -> Vec<String> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < ranks.len() {
        let run = ranks[k..].iter().take_while(|r| **r == ranks[k]).count();
        if run > 1 {
            out.push(format!(
                "{}: the same rank summary is merged {run} times (a file given twice, or a merge merged again with one of its inputs?): its counts are added {run} times",
                ranks[k].source
            ));
        }
        k += run;
    }
    out
}

/// The merged summary of a folded state, listing the `top` ops.
pub fn render(state: MergeState, top: usize) -> MergedSummary {
    let sources: Vec<String> = state.ranks.iter().map(|r| r.source.clone()).collect();
    let categories = state
        .categories
        .iter()
        .map(|c| {
            let by_rank = state
                .ranks
                .iter()
                .map(|r| {
                    let ns = r.busy_union_ns_by_category.get(&c.name);
                    ns_to_us(u128::from(ns.unwrap_or(0)))
                })
                .collect();
            let row = MergedCategory {
                events: c.events,
                duration_sum_us: ns_to_us(c.duration_sum_ns),
                duration_sum_ns: c.duration_sum_ns,
                busy_union_us_by_rank: by_rank,
            };
            (c.name.clone(), row)
        })
        .collect();
    let mut order: Vec<&OpSum> = state.ops.iter().collect();
    // Stable: ties keep the (category, name) order of `ops`.
    order.sort_by_key(|op| core::cmp::Reverse(op.duration_sum_ns));
    order.truncate(top);
    let ops = order
        .into_iter()
        .map(|op| {
            let [p50, p90, p95, p99] = percentiles_us(op, state.scale);
            // One division of two exact integers (correctly rounded below 2^53).
            let mean = op.duration_sum_ns as f64 / (op.n as f64 * 1000.0);
            MergedOpRow {
                category: op.category.clone(),
                name: op.name.clone(),
                duration_sum_us: ns_to_us(op.duration_sum_ns),
                duration_us: Stats {
                    n: op.n,
                    mean: Some(mean),
                    min: Some(Num::Float(op.min_ns as f64 / 1000.0)),
                    p50,
                    p90,
                    p95,
                    p99,
                    max: Some(Num::Float(op.max_ns as f64 / 1000.0)),
                },
            }
        })
        .collect();
    let mut totals = MergedTotals {
        events: 0,
        duration_events: 0,
        duration_sum_us: 0.0,
        duration_sum_ns: 0,
        bytes: 0,
        busy_union_us_by_rank: Vec::with_capacity(state.ranks.len()),
    };
    let mut warnings = Vec::new();
    let mut truncated_ranks = Vec::new();
    let mut bounds = Vec::with_capacity(state.ranks.len());
    for r in &state.ranks {
        // Saturating: a fold's sums were checked, so only hand-made ranks could reach the ends.
        totals.events = totals.events.saturating_add(r.events);
        totals.duration_events = totals.duration_events.saturating_add(r.duration_events);
        totals.duration_sum_ns = totals.duration_sum_ns.saturating_add(r.duration_sum_ns);
        totals.bytes = totals.bytes.saturating_add(r.bytes);
        totals
            .busy_union_us_by_rank
            .push(ns_to_us(u128::from(r.busy_union_ns)));
        bounds.push(ns_to_us(u128::from(r.busy_union_error_bound_ns)));
        if r.truncated {
            truncated_ranks.push(r.source.clone());
        }
        warnings.extend(r.warnings.iter().map(|w| format!("{}: {w}", r.source)));
    }
    totals.duration_sum_us = ns_to_us(totals.duration_sum_ns);
    warnings.extend(repeated_ranks(&state.ranks));
    let without = state.ops.iter().filter(|o| o.histogram.is_none()).count() as u64;
    let approximate = without > 0
        || state.ops_folded_into_other
        || state.categories_folded_into_other
        || bounds.iter().any(|&b| b > 0.0);
    let approximations = approximate.then_some(MergedApproximations {
        busy_union_error_bound_us_by_rank: bounds,
        ops_folded_into_other: state.ops_folded_into_other,
        categories_folded_into_other: state.categories_folded_into_other,
        ops_without_histogram: without,
    });
    MergedSummary {
        ranks: RanksView {
            n: sources.len(),
            sources,
        },
        scope: MERGED_SCOPE,
        categories: MergedCategories(categories),
        largest_ops_by_duration_sum: ops,
        phase_counts: state.phase_counts.clone(),
        totals,
        truncated_ranks,
        quantile_relative_error: relative_error(state.scale),
        warnings,
        warning_counts: state.warning_counts.clone(),
        approximations,
        mergeable: state,
    }
}
