//! The result types of a trace summary and how they serialize.
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde::ser::Serializer;

use alloc::collections::BTreeMap;

use crate::json::ScanWarnings;
use crate::merge::{CategorySum, MergeState, OneLine, OpSum, Rank, VERSION, WithSection};
use crate::stats::{Stats, stats_ns_in_place};

/// The `scope` line of every trace summary, as the reference writes it.
pub const SCOPE: &str = "one process trace; event duration sums overlap and are not E2E time";

/// Counted departures and oddities of the events (the scanner's own are in [`ScanWarnings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SummaryWarnings {
    /// `X` events whose `dur` was missing or not a number (`null`, `true`, `NaN`...): skipped.
    pub x_without_duration: u64,
    /// `X` events with a negative `dur`: skipped.
    pub negative_durations: u64,
    /// Duration events without a numeric `ts` (or whose end overflows): skipped.
    pub without_timestamp: u64,
    /// `E` events with no open `B` on their (pid, tid).
    pub unmatched_ends: u64,
    /// `E` events earlier than their `B`: skipped.
    pub negative_slices: u64,
    /// `B` events still open at the end.
    pub unclosed_begins: u64,
    /// `B` events dropped because `Limits::max_open_slices` were already open.
    pub open_slices_dropped: u64,
    /// `X` events counted whose `dur` was a numeric string (`"12.5"`): counted, as Perfetto
    /// counts them; the reference skips them.
    pub x_numeric_string_dur: u64,
    /// `X` events counted whose `ts` was a numeric string: counted; the reference stops with an
    /// error on them.
    pub x_numeric_string_ts: u64,
}

/// One category of [`TraceSummaryResult::categories`].
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryRow {
    /// The category (`"uncategorized"` when the events had no `cat`).
    pub name: String,
    /// Duration events counted.
    pub events: u64,
    /// Sum of durations, µs (exact ns sum, converted once).
    pub duration_sum_us: f64,
    /// Union of `[ts, ts + dur)`, µs.
    pub busy_union_us: f64,
    /// Sum of durations, exact ns (not serialized inside the category, to keep its keys).
    pub duration_sum_ns: i128,
    /// Union, exact ns (not serialized inside the category).
    pub busy_union_ns: u64,
}

/// Categories in first-seen order; serializes as the reference's object
/// `{name: {events, duration_sum_us, busy_union_us}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Categories(pub Vec<CategoryRow>);

impl Serialize for Categories {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row {
            events: u64,
            duration_sum_us: f64,
            busy_union_us: f64,
        }
        let rows = self.0.iter().map(|c| {
            let row = Row {
                events: c.events,
                duration_sum_us: c.duration_sum_us,
                busy_union_us: c.busy_union_us,
            };
            (&c.name, row)
        });
        crate::ordered::serialize_pairs(s, rows)
    }
}

/// One row of `largest_ops_by_duration_sum`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpRow {
    /// The op's category (`""` when the events had no `cat`, as the reference).
    pub category: String,
    /// The op's name (`""` when absent).
    pub name: String,
    /// Sum of the op's durations, µs.
    pub duration_sum_us: f64,
    /// The `stats` of the op's durations in µs.
    pub duration_us: Stats,
    /// The same sum, exact integer ns (not in the JSON, which has the reference's keys; the
    /// diff compares ops by it, docs/diff.md).
    #[serde(skip)]
    pub duration_sum_ns: i128,
    /// With [`set_durations_out`](crate::summary::TraceSummary::set_durations_out): the op's durations, whose statistics
    /// (`duration_us` past `n`) are then left to the caller; `None` otherwise.
    #[serde(skip)]
    pub durations: Option<OpDurations>,
}

/// One op's durations in integer ns, handed over for statistics computed later (the diff's, for
/// the few ops it lists).
#[derive(Clone, Debug, PartialEq)]
pub enum OpDurations {
    /// Every duration below 2^32 ns.
    Ns32(Vec<u32>),
    /// Some duration at 2^32 ns or more.
    Ns64(Vec<u64>),
}

impl OpDurations {
    /// The `stats` of the durations in µs, as the summary would have made them.
    pub fn stats(&self) -> Stats {
        match self {
            OpDurations::Ns32(v) => stats_ns_in_place(&mut v.clone()),
            OpDurations::Ns64(v) => stats_ns_in_place(&mut v.clone()),
        }
    }
}

/// Event counts by `ph`, serialized as an object in phase order.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseCounts(pub Vec<(String, u64)>);

impl Serialize for PhaseCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::ordered::serialize_pairs(s, self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Whole-trace totals.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Totals {
    /// Events read.
    pub events: u64,
    /// Duration events counted (X events and matched B/E pairs).
    pub duration_events: u64,
    /// Sum of all durations, µs.
    pub duration_sum_us: f64,
    /// Union of all duration events across categories, µs.
    pub busy_union_us: f64,
    /// Sum of all durations, exact integer ns.
    pub duration_sum_ns: i128,
    /// Union of all duration events, exact integer ns.
    pub busy_union_ns: u64,
    /// Input bytes scanned (after decompression).
    pub bytes: u64,
}

/// All warning counters, zero or not.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WarningCounts {
    /// The scanner's.
    pub scanner: ScanWarnings,
    /// The summary's.
    pub summary: SummaryWarnings,
}

/// Present only when a limit forced an approximation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Approximations {
    /// Upper bound of the overcount in the busy unions (coalesced gaps): the true union lies
    /// in `[busy_union_us - bound, busy_union_us]`.
    pub busy_union_error_bound_us: f64,
    /// Ops beyond `max_ops` were folded into an `"(other)"` row.
    pub ops_folded_into_other: bool,
    /// Categories beyond `max_categories` were folded into `"(other)"`.
    pub categories_folded_into_other: bool,
    /// Ops whose durations outgrew the shared `max_exact_values` budget: their `stats` come
    /// from a quantile sketch (`n`, `mean`, `min`, `max` still exact).
    pub ops_with_sketched_stats: u64,
    /// Relative error bound of those ops' percentiles ([`RELATIVE_ERROR`](crate::sketch::RELATIVE_ERROR), 1/129), 0 when none.
    /// It does not cover the ops counted in `listed_ops_with_collapsed_sketch`.
    pub quantile_relative_error: f64,
    /// Listed ops whose durations spanned more than the sketch's range, so its lowest buckets
    /// were collapsed: a percentile whose rank falls among those values reads the range's floor
    /// (an upper bound of the true value), outside `quantile_relative_error`. Use `--exact`.
    pub listed_ops_with_collapsed_sketch: u64,
    /// Listed ops whose durations outgrew the budget with no room left for a sketch and no
    /// further pass over the input: their percentiles are `null`, their `n`, `min`, `max` exact
    /// and their `mean` the exact integer-ns sum / n (rounded, where the exact mean is that of
    /// the µs values).
    pub listed_ops_without_percentiles: u64,
}

/// The summary of one trace: the reference `trace_summary` keys (`source`, `scope`,
/// `categories`, `largest_ops_by_duration_sum`) followed by ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummaryResult {
    /// The input's name as the caller gave it.
    pub source: String,
    /// [`SCOPE`].
    pub scope: &'static str,
    /// Per category, first-seen order.
    pub categories: Categories,
    /// Top ops by duration sum (ties in first-seen order).
    pub largest_ops_by_duration_sum: Vec<OpRow>,
    /// Event counts by phase.
    pub phase_counts: PhaseCounts,
    /// Totals.
    pub totals: Totals,
    /// The input ended early (what was read is summarized).
    pub truncated: bool,
    /// Human-readable warnings, one per non-zero counter.
    pub warnings: Vec<String>,
    /// Every counter.
    pub warning_counts: WarningCounts,
    /// Present only when an approximation happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximations: Option<Approximations>,
    /// What the mergeable section is made of, when asked for
    /// ([`TraceSummary::set_mergeable`](super::TraceSummary::set_mergeable)); the section
    /// itself ([`TraceSummaryResult::mergeable_state`]) is made from the fields above when
    /// serialized, so that warnings added after `finish` are in it.
    #[serde(skip)]
    pub mergeable: Option<MergeableParts>,
}

/// The per-op part of the mergeable section and what of the summary's state it needs beside
/// the result's fields.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeableParts {
    /// Every op with a duration, in (category, name) order.
    pub ops: Vec<OpSum>,
    /// The histograms' scale ([`SCALE`](crate::merge::histogram::SCALE), or lower when the counts of ops past the durations
    /// budget needed it to fit).
    pub scale: u8,
    /// The busy unions' overcount bound, ns.
    pub busy_union_error_bound_ns: u64,
    /// Ops past the op limit were folded into `"(other)"`.
    pub ops_folded_into_other: bool,
    /// Categories past the limit were folded into `"(other)"`.
    pub categories_folded_into_other: bool,
}

impl TraceSummaryResult {
    /// The JSON that native `--json` and the web page print (2-space indented), with the
    /// `mergeable` section last when it was asked for.
    pub fn to_json(&self) -> String {
        let mut text = String::new();
        let written = self.write_json(&mut |piece: &str| {
            text.push_str(piece);
            Ok::<(), serde_json::Error>(())
        });
        match written {
            Ok(()) => text,
            Err(e) => format!("{{\"error\": \"{e}\"}}"),
        }
    }

    /// [`to_json`](Self::to_json)'s text given to `out` in pieces, the op list of the mergeable
    /// section one op at a time, so that the text (which grows with the ops a trace names) is
    /// never held whole: native `trace --json` writes the pieces to stdout. Stops at the first
    /// error.
    pub fn write_json<E: From<serde_json::Error>>(
        &self,
        out: &mut dyn FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let json = serde_json::to_string_pretty(self)?;
        match &self.mergeable {
            Some(parts) => self.write_with_section(json, parts, out),
            None => out(&json),
        }
    }

    /// `json` with the mergeable section added, given to `out`. The ops, the largest part, are
    /// written from the result itself where they are already in the section's order without
    /// repeats (the accumulator sorts them): the section without its ops, then each op's JSON
    /// in place of its empty list, with no copy of the ops. Otherwise (names that UTF-8 repair
    /// made equal) through the canonical state.
    fn write_with_section<E: From<serde_json::Error>>(
        &self,
        json: String,
        parts: &MergeableParts,
        out: &mut dyn FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        fn key(o: &OpSum) -> (&str, &str) {
            (&o.category, &o.name)
        }
        let canonical = parts.ops.windows(2).all(|w| key(&w[0]) < key(&w[1]));
        let Some(state) = self.state_with_ops(Vec::new()) else {
            return out(&json);
        };
        let ops_in_place = canonical && state.ops.is_empty();
        let head = serde_json::to_string(&state)?;
        let head = match head.strip_suffix("\"ops\":[]}") {
            Some(head) if ops_in_place => head,
            _ => {
                let state = self.mergeable_state().unwrap_or(state);
                let doc = WithSection {
                    body: self,
                    mergeable: OneLine::of(&state)?,
                };
                return out(&serde_json::to_string_pretty(&doc)?);
            }
        };
        let body = json.strip_suffix("\n}").unwrap_or(&json);
        let sep = if body.ends_with('{') { "" } else { "," };
        out(body)?;
        out(sep)?;
        out("\n  \"mergeable\": ")?;
        out(head)?;
        out("\"ops\":[")?;
        for (i, op) in parts.ops.iter().enumerate() {
            if i > 0 {
                out(",")?;
            }
            out(&serde_json::to_string(op)?)?;
        }
        out("]}\n}")
    }

    /// The mergeable section (docs/merge.md), when asked for: this summary as one rank, in the
    /// canonical order a merge gives.
    pub fn mergeable_state(&self) -> Option<MergeState> {
        let parts = self.mergeable.as_ref()?;
        self.state_with_ops(parts.ops.clone())
    }

    /// [`mergeable_state`](Self::mergeable_state) with `ops` for the op list.
    fn state_with_ops(&self, ops: Vec<OpSum>) -> Option<MergeState> {
        let parts = self.mergeable.as_ref()?;
        let mut busy_by_category = BTreeMap::new();
        for c in &self.categories.0 {
            let e = busy_by_category.entry(c.name.clone()).or_insert(0u64);
            *e = e.saturating_add(c.busy_union_ns);
        }
        let counters = serde_json::to_value(self.warning_counts)
            .and_then(serde_json::from_value)
            .unwrap_or_default();
        let rank = Rank {
            source: self.source.clone(),
            events: self.totals.events,
            duration_events: self.totals.duration_events,
            duration_sum_ns: self.totals.duration_sum_ns.max(0) as u128,
            bytes: self.totals.bytes,
            truncated: self.truncated,
            busy_union_ns: self.totals.busy_union_ns,
            busy_union_error_bound_ns: parts.busy_union_error_bound_ns,
            busy_union_ns_by_category: busy_by_category.into(),
            warnings: self.warnings.clone(),
        };
        let state = MergeState {
            version: VERSION,
            scale: parts.scale,
            ranks: alloc::vec![rank],
            categories: self
                .categories
                .0
                .iter()
                .map(|c| CategorySum {
                    name: c.name.clone(),
                    events: c.events,
                    duration_sum_ns: c.duration_sum_ns.max(0) as u128,
                })
                .collect(),
            phase_counts: self.phase_counts.0.iter().cloned().collect(),
            warning_counts: counters,
            ops_folded_into_other: parts.ops_folded_into_other,
            categories_folded_into_other: parts.categories_folded_into_other,
            ops,
        };
        // Canonical order (and keys that UTF-8 repair made equal, folded); a sum of one
        // summary's values cannot overflow the wider integers of the section.
        state.canonical().ok()
    }
}
