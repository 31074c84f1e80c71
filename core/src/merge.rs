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

mod buckets;
pub mod histogram;
mod job;
mod one_line;
mod render;
pub(crate) use render::percentiles_us;
mod state;

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use serde::Deserialize;

pub use job::{MAX_DOCUMENT_BYTES, MergeJob, MergeJobError, RepeatedFile, STDIN};
pub use one_line::{OneLine, WithSection};
pub use render::{
    MERGED_SCOPE, MergedApproximations, MergedCategories, MergedCategory, MergedOpRow,
    MergedSummary, MergedTotals, RanksView,
};
pub use state::{ByCategory, CategorySum, Folder, MergeState, OpSum, Problem, Rank, VERSION};

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
    if inputs.is_empty() {
        return Err(empty_array(index));
    }
    let mut folder = Folder::new();
    for (k, input) in inputs.into_iter().enumerate() {
        let state = section(index, input).map_err(|e| element(k, e))?;
        folder.add(state).map_err(|p| at(index, p))?;
    }
    Ok(folder.finish())
}

fn empty_array(index: usize) -> MergeError {
    MergeError {
        index: Some(index),
        path: String::new(),
        message: String::from("an empty array of summaries"),
    }
}

/// `e` of an array's element `k`: its path prefixed with `[k]`.
fn element(k: usize, mut e: MergeError) -> MergeError {
    e.path = if e.path.is_empty() {
        alloc::format!("[{k}]")
    } else {
        alloc::format!("[{k}].{}", e.path)
    };
    e
}

/// Parses one summary's JSON (a per-rank summary, a merge's output, or an array of them as
/// `trace --json --mergeable` prints for several files, folded into one) to its checked state.
///
/// # Errors
/// Bad JSON, a missing or malformed `mergeable` section, naming `index` and the key.
pub fn parse_state(index: usize, json: &[u8]) -> Result<MergeState, MergeError> {
    let mut merger = Merger::new();
    merger.add_json(index, json)?;
    merger.finish().map_err(|_| empty_array(index))
}

/// Why [`Merger::add_from`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The text is not a summary (bad JSON, a key of the wrong type): the error has no key path
    /// yet; [`locate_error`] over the same text again gives it.
    Syntax(MergeError),
    /// A summary that parsed but was refused (no section, an inconsistent one, an overflow): the
    /// error names the key.
    Refused(MergeError),
}

impl AddError {
    /// The error.
    pub fn into_inner(self) -> MergeError {
        match self {
            AddError::Syntax(e) | AddError::Refused(e) => e,
        }
    }
}

/// Folds the summaries of one input as they are parsed: a summary object, or each element of
/// an array of them, folded in and dropped before the next is read. Without a folder it only
/// parses (to find where a text that failed is wrong).
struct FoldInput<'a> {
    index: usize,
    folder: Option<&'a mut Folder>,
    refused: &'a mut Option<MergeError>,
}

impl FoldInput<'_> {
    fn take<E: serde::de::Error>(&mut self, input: Input, k: Option<usize>) -> Result<(), E> {
        let Some(folder) = self.folder.as_deref_mut() else {
            return Ok(());
        };
        let named = |e| match k {
            Some(k) => element(k, e),
            None => e,
        };
        let added = section(self.index, input)
            .map_err(named)
            .and_then(|state| folder.add(state).map_err(|p| at(self.index, p)));
        added.map_err(|e| {
            let message = e.message.clone();
            *self.refused = Some(e);
            E::custom(message)
        })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for FoldInput<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FoldInput<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a summary (a JSON object) or an array of them")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, map: A) -> Result<(), A::Error> {
        let input = Input::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        self.take(input, None)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut k = 0;
        while let Some(input) = seq.next_element::<Input>()? {
            self.take(input, Some(k))?;
            k += 1;
        }
        if k == 0 && self.folder.is_some() {
            let e = empty_array(self.index);
            let message = e.message.clone();
            *self.refused = Some(e);
            return Err(serde::de::Error::custom(message));
        }
        Ok(())
    }
}

/// Where the text of summary `index` that [`Merger::add_from`] found not to be a summary is
/// wrong: the same parse again, through `de` (over the same text), with the key path tracked
/// (tracking costs most of the parse, so the good summaries do without it). Nothing is kept.
pub fn locate_error<'de, D: serde::Deserializer<'de>>(index: usize, de: D) -> Option<MergeError> {
    let mut refused = None;
    let seed = FoldInput {
        index,
        folder: None,
        refused: &mut refused,
    };
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(de, &mut track);
    match serde::de::DeserializeSeed::deserialize(seed, tracked) {
        Ok(()) => None,
        Err(e) => Some(parse_error(
            index,
            serde_path_to_error::Error::new(track.path(), e),
        )),
    }
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
    let mut merger = Merger::new();
    for (i, state) in states.into_iter().enumerate() {
        merger.add_state(i, state)?;
    }
    merger.finish()
}

/// A merge fed one summary at a time: each is parsed, checked, folded into one merged state and
/// dropped, so memory holds the merged state (its ops, buckets and ranks) and one summary's
/// text, whatever the number of summaries. The result is that of [`merge_states`] on them all.
#[derive(Debug, Default)]
pub struct Merger {
    folder: Folder,
}

impl Merger {
    /// An empty merge.
    pub fn new() -> Merger {
        Merger::default()
    }

    /// Parses summary `index` (a summary, a merge's output, or an array of them) and folds it
    /// in, an array's elements one at a time.
    ///
    /// # Errors
    /// Bad JSON, a missing, malformed or inconsistent `mergeable` section, naming `index` and
    /// the key; a sum that overflows.
    pub fn add_json(&mut self, index: usize, json: &[u8]) -> Result<(), MergeError> {
        let mut de = serde_json::Deserializer::from_slice(json);
        match self.add_document(index, &mut de) {
            Ok(()) => Ok(()),
            Err(AddError::Refused(e)) => Err(e),
            Err(AddError::Syntax(e)) => {
                let mut de = serde_json::Deserializer::from_slice(json);
                Err(locate_error(index, &mut de).unwrap_or(e))
            }
        }
    }

    /// [`Merger::add_from`] over a whole JSON document: the summaries `de` gives, then nothing
    /// but whitespace to its end.
    ///
    /// # Errors
    /// [`AddError`], as [`Merger::add_from`]; text after the document is a syntax error.
    pub fn add_document<'de, R: serde_json::de::Read<'de>>(
        &mut self,
        index: usize,
        de: &mut serde_json::Deserializer<R>,
    ) -> Result<(), AddError> {
        self.add_from(index, &mut *de).and_then(|()| {
            de.end().map_err(|e| {
                AddError::Syntax(MergeError {
                    index: Some(index),
                    path: String::new(),
                    message: e.to_string(),
                })
            })
        })
    }

    /// Folds in the summaries `de` gives (one, or an array's elements as they are parsed: an
    /// array of many summaries is never held whole). The caller checks the end of the input.
    ///
    /// # Errors
    /// [`AddError`]: a text that is not a summary, or a summary refused.
    pub fn add_from<'de, D: serde::Deserializer<'de>>(
        &mut self,
        index: usize,
        de: D,
    ) -> Result<(), AddError> {
        let mut refused = None;
        let seed = FoldInput {
            index,
            folder: Some(&mut self.folder),
            refused: &mut refused,
        };
        match serde::de::DeserializeSeed::deserialize(seed, de) {
            Ok(()) => Ok(()),
            Err(e) => Err(match refused {
                Some(r) => AddError::Refused(r),
                None => AddError::Syntax(MergeError {
                    index: Some(index),
                    path: String::new(),
                    message: e.to_string(),
                }),
            }),
        }
    }

    /// Folds in summary `index`, parsed as a `serde_json::Value` ([`state_of_value`]).
    ///
    /// # Errors
    /// As [`state_of_value`]; a sum that overflows.
    pub fn add_value(&mut self, index: usize, value: &serde_json::Value) -> Result<(), MergeError> {
        let state = state_of_value(index, value)?;
        self.add_state(index, state)
    }

    /// Folds in a checked state, `index` naming it in an error.
    ///
    /// # Errors
    /// A sum that overflows.
    pub fn add_state(&mut self, index: usize, state: MergeState) -> Result<(), MergeError> {
        self.folder.add(state).map_err(|p| at(index, p))
    }

    /// The merged state.
    ///
    /// # Errors
    /// Nothing was added.
    pub fn finish(self) -> Result<MergeState, MergeError> {
        if self.folder.is_empty() {
            return Err(MergeError {
                index: None,
                path: String::new(),
                message: String::from("no summaries to merge"),
            });
        }
        Ok(self.folder.finish())
    }
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
    merge_texts(summaries, options.top)
        .map(|merged| to_json(&merged))
        .map_err(MergeJobError::into_merge_error)
}

/// The merge job over texts in memory, each handed whole: the texts are named `summary {i}`, so
/// that the job's errors read as [`MergeError`]'s own.
fn merge_texts<S: AsRef<[u8]>>(
    summaries: &[S],
    top: usize,
) -> Result<MergedSummary, MergeJobError> {
    use crate::job::{Job, Need};
    let names = (0..summaries.len()).map(|i| alloc::format!("summary {i}"));
    let mut job = MergeJob::new(names.collect(), top)?;
    while let Need::File(_) = job.need() {
        job.document(summaries[job.file_index()].as_ref())?;
    }
    job.finish()
}

/// Merges summaries given as `serde_json::Value`s (e.g. converted from Python dicts).
///
/// # Errors
/// See [`MergeError`].
pub fn merge_values(summaries: &[serde_json::Value]) -> Result<serde_json::Value, MergeError> {
    let mut merger = Merger::new();
    for (i, v) in summaries.iter().enumerate() {
        merger.add_value(i, v)?;
    }
    let merged = render::render(merger.finish()?, DEFAULT_TOP_OPS);
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
    OneLine::of(&merged.mergeable)
        .and_then(|mergeable| {
            serde_json::to_string_pretty(&WithSection {
                body: merged,
                mergeable,
            })
        })
        .unwrap_or_else(|e| alloc::format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests;
