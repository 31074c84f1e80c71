//! Merging per-rank trace summaries (docs/merge.md): one summary per rank's trace, made
//! anywhere (`flinch-trace trace --json --mergeable`, the Python `trace_summary`), merged into
//! one without the traces.
//!
//! - Counts and duration sums add exactly (integer ns).
//! - Busy unions stay per rank: a union over several ranks is not the sum of their unions (and
//!   their clocks need not agree), so each `..._by_rank` list follows `ranks.sources`.
//! - Each op's durations merge through a log-bucket histogram (OpenTelemetry's exponential
//!   histogram, Prometheus' native histogram: base `2^(2^-scale)`, [`histogram`]); `n`, `mean`,
//!   `min`, `max` stay exact and the percentiles are within `quantile_relative_error`
//!   ([`histogram::relative_error`], 0.135% at [`histogram::SCALE`]) of the exact percentiles of
//!   the pooled durations.
//! - The output carries the folded state under `mergeable`, in canonical order, so a merge's
//!   output merges again, and merging is associative and commutative byte for byte.
//!
//! Bad input is an error naming the summary (its index) and the key, never a panic.

pub mod histogram;
mod render;
mod state;

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use serde::Deserialize;

pub use render::{
    MERGED_SCOPE, MergedApproximations, MergedCategories, MergedCategory, MergedOpRow,
    MergedSummary, MergedTotals, RanksView,
};
pub use state::{CategorySum, MergeState, OpSum, Problem, Rank, VERSION};

use crate::summary::DEFAULT_TOP_OPS;

/// How to merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeOptions {
    /// How many ops `largest_ops_by_duration_sum` lists.
    pub top: usize,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            top: DEFAULT_TOP_OPS,
        }
    }
}

/// Why a merge failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError {
    /// The summary at fault (0-based index in the list given), `None` for the list itself.
    pub index: Option<usize>,
    /// The key path at fault (`mergeable.ops[3].n`), empty for the whole summary.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.index, self.path.is_empty()) {
            (None, _) => f.write_str(&self.message),
            (Some(i), true) => write!(f, "summary {i}: {}", self.message),
            (Some(i), false) => write!(f, "summary {i}: {}: {}", self.path, self.message),
        }
    }
}

impl core::error::Error for MergeError {}

fn at(index: usize, p: Problem) -> MergeError {
    MergeError {
        index: Some(index),
        path: p.path,
        message: p.message,
    }
}

/// What the merge reads of a summary: its `mergeable` section (other keys are views of it), or
/// the `error` of a file that failed in `trace --json`'s array.
#[derive(Deserialize)]
struct Input {
    mergeable: Option<MergeState>,
    error: Option<String>,
}

/// One summary, or an array of them (`trace --json --mergeable` of several files).
#[derive(Deserialize)]
#[serde(transparent)]
struct Inputs(Vec<Input>);

const NO_SECTION: &str = "no `mergeable` section: make the summary with `flinch-trace trace --json --mergeable` (Python: `trace_summary(path, mergeable=True)`)";

fn parse_error<E: fmt::Display>(index: usize, e: serde_path_to_error::Error<E>) -> MergeError {
    let path = e.path().to_string();
    MergeError {
        index: Some(index),
        path: if path == "." { String::new() } else { path },
        message: e.into_inner().to_string(),
    }
}

fn section(index: usize, input: Input) -> Result<MergeState, MergeError> {
    let state = input.mergeable.ok_or_else(|| MergeError {
        index: Some(index),
        path: String::from("mergeable"),
        message: match input.error {
            Some(e) => alloc::format!("no `mergeable` section: its trace failed: {e}"),
            None => String::from(NO_SECTION),
        },
    })?;
    state.check().map_err(|p| at(index, p))?;
    Ok(state)
}

/// The sections of an array's elements folded into one (the merge is associative and
/// commutative, so folding them first changes nothing); errors name the element (`[k].key`).
fn sections(index: usize, inputs: Vec<Input>) -> Result<MergeState, MergeError> {
    let element = |k: usize, mut e: MergeError| {
        e.path = if e.path.is_empty() {
            alloc::format!("[{k}]")
        } else {
            alloc::format!("[{k}].{}", e.path)
        };
        e
    };
    let mut states = Vec::with_capacity(inputs.len());
    for (k, input) in inputs.into_iter().enumerate() {
        states.push(section(index, input).map_err(|e| element(k, e))?);
    }
    let Some(scale) = states.iter().map(|s| s.scale).min() else {
        return Err(MergeError {
            index: Some(index),
            path: String::new(),
            message: String::from("an empty array of summaries"),
        });
    };
    state::fold(scale, states).map_err(|(_, p)| at(index, p))
}

fn is_array(json: &[u8]) -> bool {
    json.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// Parses one summary's JSON (a per-rank summary, a merge's output, or an array of them as
/// `trace --json --mergeable` prints for several files, folded into one) to its checked state.
///
/// The bytes go straight into the typed state; only when that fails are they parsed again
/// through `serde_path_to_error`, whose key path the error then names (tracking the path costs
/// most of the parse, so the good summaries do without it).
///
/// # Errors
/// Bad JSON, a missing or malformed `mergeable` section, naming `index` and the key.
pub fn parse_state(index: usize, json: &[u8]) -> Result<MergeState, MergeError> {
    let parsed = if is_array(json) {
        serde_json::from_slice(json).map(|Inputs(v)| Err(v))
    } else {
        serde_json::from_slice(json).map(Ok)
    };
    match parsed {
        Ok(Ok(one)) => section(index, one),
        Ok(Err(many)) => sections(index, many),
        Err(fast) => Err(parse_error_at_path(index, json, fast)),
    }
}

/// The error of a summary the fast parse rejected: the same parse again, tracking the key path.
/// `fast` is kept should the second parse disagree (it cannot: both run the same deserializer).
fn parse_error_at_path(index: usize, json: &[u8], fast: serde_json::Error) -> MergeError {
    match parse_tracked(index, json) {
        Err(e) => e,
        Ok(()) => MergeError {
            index: Some(index),
            path: String::new(),
            message: fast.to_string(),
        },
    }
}

/// [`parse_state`]'s parse with the key path tracked, checks left out: the error, if any.
fn parse_tracked(index: usize, json: &[u8]) -> Result<(), MergeError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    if is_array(json) {
        serde_path_to_error::deserialize::<_, Inputs>(&mut de).map(drop)
    } else {
        serde_path_to_error::deserialize::<_, Input>(&mut de).map(drop)
    }
    .map_err(|e| parse_error(index, e))?;
    de.end().map_err(|e| MergeError {
        index: Some(index),
        path: String::new(),
        message: e.to_string(),
    })
}

/// [`parse_state`] for a summary already parsed as a `serde_json::Value` (integers above
/// `u64::MAX` are not representable there).
///
/// # Errors
/// As [`parse_state`].
pub fn state_of_value(index: usize, value: &serde_json::Value) -> Result<MergeState, MergeError> {
    if value.is_array() {
        let Inputs(many) =
            serde_path_to_error::deserialize(value).map_err(|e| parse_error(index, e))?;
        return sections(index, many);
    }
    let input: Input =
        serde_path_to_error::deserialize(value).map_err(|e| parse_error(index, e))?;
    section(index, input)
}

/// Folds checked states (in any order or grouping: the result is the same) into one.
///
/// # Errors
/// No states; a sum that overflows (naming the state whose addition overflowed).
pub fn merge_states(states: Vec<MergeState>) -> Result<MergeState, MergeError> {
    let Some(scale) = states.iter().map(|s| s.scale).min() else {
        return Err(MergeError {
            index: None,
            path: String::new(),
            message: String::from("no summaries to merge"),
        });
    };
    // An overflow names the summary whose addition overflowed.
    state::fold(scale, states).map_err(|(i, p)| at(i, p))
}

/// Merges summaries given as JSON texts (per-rank `trace --json --mergeable` outputs, or merge
/// outputs) into the merged summary's JSON (2-space indented, as `trace --json`).
///
/// # Errors
/// See [`MergeError`].
pub fn merge_json<S: AsRef<[u8]>>(summaries: &[S]) -> Result<String, MergeError> {
    merge_json_with(summaries, &MergeOptions::default())
}

/// [`merge_json`] with options.
///
/// # Errors
/// See [`MergeError`].
pub fn merge_json_with<S: AsRef<[u8]>>(
    summaries: &[S],
    options: &MergeOptions,
) -> Result<String, MergeError> {
    let states = summaries
        .iter()
        .enumerate()
        .map(|(i, s)| parse_state(i, s.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = render::render(merge_states(states)?, options.top);
    Ok(to_json(&merged))
}

/// Merges summaries given as `serde_json::Value`s (e.g. converted from Python dicts).
///
/// # Errors
/// See [`MergeError`].
pub fn merge_values(summaries: &[serde_json::Value]) -> Result<serde_json::Value, MergeError> {
    let states = summaries
        .iter()
        .enumerate()
        .map(|(i, v)| state_of_value(i, v))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = render::render(merge_states(states)?, DEFAULT_TOP_OPS);
    let fail = |e: serde_json::Error| MergeError {
        index: None,
        path: String::new(),
        message: e.to_string(),
    };
    let mut value = serde_json::to_value(&merged).map_err(fail)?;
    let section = serde_json::to_value(&merged.mergeable).map_err(fail)?;
    if let Some(object) = value.as_object_mut() {
        object.insert(String::from("mergeable"), section);
    }
    Ok(value)
}

/// The merged summary of a folded state, listing `top` ops.
pub fn render(state: MergeState, top: usize) -> MergedSummary {
    render::render(state, top)
}

/// The JSON of a merged summary: 2-space indented, with the `mergeable` section last on one
/// line (its histograms would take four lines a bucket).
pub fn to_json(merged: &MergedSummary) -> String {
    serde_json::to_string_pretty(merged)
        .and_then(|json| with_section(json, &merged.mergeable))
        .unwrap_or_else(|e| alloc::format!("{{\"error\": \"{e}\"}}"))
}

/// `json` (a pretty-printed object) with `"mergeable": state` added as its last key, on one line.
pub(crate) fn with_section(json: String, state: &MergeState) -> serde_json::Result<String> {
    let section = serde_json::to_string(state)?;
    let head = json.strip_suffix("\n}").unwrap_or(&json);
    let sep = if head.ends_with('{') { "" } else { "," };
    Ok(alloc::format!(
        "{head}{sep}\n  \"mergeable\": {section}\n}}"
    ))
}

#[cfg(test)]
mod tests;
