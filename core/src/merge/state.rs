//! The mergeable section (`"mergeable"`), its checks, and the fold of several into one.
//!
//! The section is the whole state a merge needs; a merge's output carries the folded state in
//! the same shape, so merged outputs merge again. Every list is in a canonical order (ranks
//! sorted, categories and ops by name), so the fold is associative and commutative byte for
//! byte.
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::histogram::{LogHistogram, MAX_SCALE, index_range};

/// Version of the mergeable section's format.
pub const VERSION: u32 = 1;

/// The mergeable section of a trace summary (one rank) or of a merge (several).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergeState {
    /// [`VERSION`].
    pub version: u32,
    /// The histograms' scale (base `2^(2^-scale)`).
    pub scale: u8,
    /// What stays per rank, sorted.
    pub ranks: Vec<Rank>,
    /// Per category, summed over ranks; sorted by name.
    pub categories: Vec<CategorySum>,
    /// Events by phase, summed.
    pub phase_counts: BTreeMap<String, u64>,
    /// Every warning counter, summed (`{"scanner": {...}, "summary": {...}}`).
    pub warning_counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// Some rank folded ops past its op limit into an `"(other)"` op.
    pub ops_folded_into_other: bool,
    /// Some rank folded categories past its limit into `"(other)"`.
    pub categories_folded_into_other: bool,
    /// Every op with at least one duration, summed; sorted by (category, name).
    pub ops: Vec<OpSum>,
}

/// What stays per rank: its busy unions (a union of several ranks' intervals is not the sum of
/// their unions, and their clocks are not one clock), its counts and its warnings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rank {
    /// The summary's `source`.
    pub source: String,
    /// Events read.
    pub events: u64,
    /// Duration events counted.
    pub duration_events: u64,
    /// Sum of all durations, ns.
    pub duration_sum_ns: u128,
    /// Input bytes scanned.
    pub bytes: u64,
    /// The input ended early.
    pub truncated: bool,
    /// Union of all duration events, ns.
    pub busy_union_ns: u64,
    /// The summary's stated bound on its busy unions' overcount, ns (0: exact).
    pub busy_union_error_bound_ns: u64,
    /// Union per category, ns.
    pub busy_union_ns_by_category: ByCategory,
    /// The summary's warnings.
    pub warnings: Vec<String>,
}

/// A rank's busy union per category: a JSON object (`{cat: ns}`), held as a list sorted by
/// name, which orders, compares and serializes as the map would, in a fraction of a map's
/// memory (a merge keeps one per rank).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByCategory(Vec<(String, u64)>);

impl ByCategory {
    /// The union of `category`, ns.
    pub fn get(&self, category: &str) -> Option<u64> {
        self.0
            .binary_search_by(|(c, _)| c.as_str().cmp(category))
            .ok()
            .map(|k| self.0[k].1)
    }

    /// `(category, ns)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(c, ns)| (c.as_str(), *ns))
    }
}

impl From<BTreeMap<String, u64>> for ByCategory {
    fn from(map: BTreeMap<String, u64>) -> Self {
        ByCategory(map.into_iter().collect())
    }
}

impl Serialize for ByCategory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(c, ns)| (c, ns)))
    }
}

impl<'de> Deserialize<'de> for ByCategory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::<String, u64>::deserialize(d).map(ByCategory::from)
    }
}

/// One category's events and duration sum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategorySum {
    /// The category.
    pub name: String,
    /// Duration events.
    pub events: u64,
    /// Sum of durations, ns.
    pub duration_sum_ns: u128,
}

/// One (category, name) op: exact count, sum and range, and its durations' histogram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpSum {
    /// The op's category (`""` when its events had none).
    pub category: String,
    /// The op's name.
    pub name: String,
    /// Durations.
    pub n: u64,
    /// Sum of durations, ns.
    pub duration_sum_ns: u128,
    /// Shortest duration, ns.
    pub min_ns: u64,
    /// Longest duration, ns.
    pub max_ns: u64,
    /// The durations' histogram at the section's scale; `null` when a rank no longer held the
    /// op's durations (`--bounded` sketches, or no further pass over its input).
    pub histogram: Option<LogHistogram>,
}

/// A problem in one input: where (a path of keys) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key path, e.g. `mergeable.ops[3].histogram`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn problem(path: String, message: impl Into<String>) -> Problem {
    Problem {
        path,
        message: message.into(),
    }
}

impl MergeState {
    /// Checks what the types cannot: the version, the scale, each op's histogram against its
    /// count and range.
    pub fn check(&self) -> Result<(), Problem> {
        if self.version != VERSION {
            return Err(problem(
                String::from("mergeable.version"),
                format!("version {} is not the supported {VERSION}", self.version),
            ));
        }
        if self.scale > MAX_SCALE {
            return Err(problem(
                String::from("mergeable.scale"),
                format!("scale {} is above the largest, {MAX_SCALE}", self.scale),
            ));
        }
        let (lo, hi) = index_range(self.scale);
        for (k, op) in self.ops.iter().enumerate() {
            let at = |key: &str| format!("mergeable.ops[{k}].{key}");
            if op.n == 0 {
                return Err(problem(at("n"), "an op has at least one duration"));
            }
            if op.min_ns > op.max_ns {
                return Err(problem(at("min_ns"), "min_ns is above max_ns"));
            }
            let Some(h) = &op.histogram else { continue };
            let mut prev: Option<i32> = None;
            for (b, (i, c)) in h.buckets.iter().enumerate() {
                let at_b = || at(&format!("histogram.buckets[{b}]"));
                if i < lo || i > hi {
                    return Err(problem(
                        at_b(),
                        format!("index {i} is outside [{lo}, {hi}] at scale {}", self.scale),
                    ));
                }
                if prev.is_some_and(|p| p >= i) {
                    return Err(problem(at_b(), "indexes are not increasing"));
                }
                if c == 0 {
                    return Err(problem(at_b(), "a bucket count of 0"));
                }
                prev = Some(i);
            }
            match h.count() {
                Some(total) if total == op.n => {}
                Some(total) => {
                    return Err(problem(
                        at("histogram"),
                        format!("counts add up to {total}, but n is {}", op.n),
                    ));
                }
                None => return Err(problem(at("histogram"), "counts overflow")),
            }
        }
        self.check_consistent()
    }

    /// Checks that the section agrees with itself: each op and category listed once, each op's
    /// sum within `n` times its range, and the same duration count and sum whether added over
    /// the ranks, the categories or the ops (per category too, unless a rank folded ops or
    /// categories into `"(other)"`). A section that fails was edited or concatenated by hand;
    /// merged, it would count durations twice or lose them.
    fn check_consistent(&self) -> Result<(), Problem> {
        for (k, op) in self.ops.iter().enumerate() {
            let (lo, hi) = (
                u128::from(op.n) * u128::from(op.min_ns),
                u128::from(op.n) * u128::from(op.max_ns),
            );
            if op.duration_sum_ns < lo || op.duration_sum_ns > hi {
                return Err(problem(
                    format!("mergeable.ops[{k}].duration_sum_ns"),
                    format!(
                        "{} is outside n x [min_ns, max_ns] = [{lo}, {hi}]",
                        op.duration_sum_ns
                    ),
                ));
            }
        }
        if let Some((k, first)) = first_repeat(self.ops.iter().map(key)) {
            let op = &self.ops[k];
            return Err(problem(
                format!("mergeable.ops[{k}]"),
                format!(
                    "op ({:?}, {:?}) is listed twice (also at mergeable.ops[{first}])",
                    op.category, op.name
                ),
            ));
        }
        let names = self.categories.iter().map(|c| c.name.as_str());
        if let Some((k, first)) = first_repeat(names) {
            return Err(problem(
                format!("mergeable.categories[{k}]"),
                format!(
                    "category {:?} is listed twice (also at mergeable.categories[{first}])",
                    self.categories[k].name
                ),
            ));
        }
        // Sums of u64 counts over at most usize entries, and u128 sums of ns, checked.
        let mut ranks = (0u128, 0u128);
        for r in &self.ranks {
            ranks.0 += u128::from(r.duration_events);
            ranks.1 = ranks.1.saturating_add(r.duration_sum_ns);
        }
        let mut cats = (0u128, 0u128);
        for c in &self.categories {
            cats.0 += u128::from(c.events);
            cats.1 = cats.1.saturating_add(c.duration_sum_ns);
        }
        let mut by_category: BTreeMap<&str, (u128, u128)> = BTreeMap::new();
        let mut ops = (0u128, 0u128);
        for op in &self.ops {
            ops.0 += u128::from(op.n);
            ops.1 = ops.1.saturating_add(op.duration_sum_ns);
            let e = by_category.entry(&op.category).or_default();
            e.0 += u128::from(op.n);
            e.1 = e.1.saturating_add(op.duration_sum_ns);
        }
        let totals = [
            ("ops' n", "ops' duration_sum_ns", ops),
            ("ranks' duration_events", "ranks' duration_sum_ns", ranks),
        ];
        for (count_name, sum_name, (n, sum)) in totals {
            if n != cats.0 {
                return Err(problem(
                    String::from("mergeable.categories"),
                    format!(
                        "the categories' events add up to {}, but the {count_name} to {n}",
                        cats.0
                    ),
                ));
            }
            if sum != cats.1 {
                return Err(problem(
                    String::from("mergeable.categories"),
                    format!(
                        "the categories' duration_sum_ns add up to {}, but the {sum_name} to {sum}",
                        cats.1
                    ),
                ));
            }
        }
        if self.ops_folded_into_other || self.categories_folded_into_other {
            return Ok(());
        }
        for (k, c) in self.categories.iter().enumerate() {
            let (n, sum) = by_category.get(c.name.as_str()).copied().unwrap_or((0, 0));
            if n != u128::from(c.events) {
                return Err(problem(
                    format!("mergeable.categories[{k}].events"),
                    format!(
                        "{} events in category {:?}, but its ops' n add up to {n}",
                        c.events, c.name
                    ),
                ));
            }
            if sum != c.duration_sum_ns {
                return Err(problem(
                    format!("mergeable.categories[{k}].duration_sum_ns"),
                    format!(
                        "{} ns in category {:?}, but its ops' duration_sum_ns add up to {sum}",
                        c.duration_sum_ns, c.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Puts every list in its canonical order, folding duplicate keys (as a merge of one).
    pub fn canonical(self) -> Result<MergeState, Problem> {
        let scale = self.scale;
        fold(scale, [self]).map_err(|(_, p)| p)
    }
}

/// Folds states (already checked) into one at `scale` (at most each state's): counts and sums
/// added exactly, ranks kept and sorted, histograms brought to `scale` and added, in one pass.
/// On overflow: the position (in `states`) of the state whose addition overflowed, and the
/// problem naming the key.
pub fn fold(
    scale: u8,
    states: impl IntoIterator<Item = MergeState>,
) -> Result<MergeState, (usize, Problem)> {
    let mut folder = Folder::at_scale(scale);
    for (position, state) in states.into_iter().enumerate() {
        folder.add(state).map_err(|p| (position, p))?;
    }
    Ok(folder.finish())
}

/// A fold in progress: one merged state, to which states are added one at a time and then
/// dropped, so that a merge of many summaries holds the merged state (and the ranks it lists),
/// never every summary at once.
///
/// The histograms are kept at the smallest scale seen so far; a state of a smaller scale brings
/// them down first. Downscaling maps bucket `i` to `i >> k` and adds counts, which commutes
/// with adding histograms, so the result is that of folding every state at the smallest scale
/// at once, byte for byte, whatever the order.
#[derive(Debug)]
pub struct Folder {
    /// `None` until the first state (or the scale given to [`Folder::at_scale`]).
    scale: Option<u8>,
    added: usize,
    ranks: Vec<Rank>,
    categories: BTreeMap<String, (u64, u128)>,
    phase_counts: BTreeMap<String, u64>,
    warning_counts: BTreeMap<String, BTreeMap<String, u64>>,
    ops_folded: bool,
    cats_folded: bool,
    ops: Ops,
}

impl Default for Folder {
    fn default() -> Self {
        Folder::new()
    }
}

impl Folder {
    /// An empty fold; its scale is the smallest of the states added.
    pub fn new() -> Folder {
        Folder {
            scale: None,
            added: 0,
            ranks: Vec::new(),
            categories: BTreeMap::new(),
            phase_counts: BTreeMap::new(),
            warning_counts: BTreeMap::new(),
            ops_folded: false,
            cats_folded: false,
            ops: Ops::Sorted(Vec::new()),
        }
    }

    /// An empty fold at `scale` at most.
    pub fn at_scale(scale: u8) -> Folder {
        Folder {
            scale: Some(scale),
            ..Folder::new()
        }
    }

    /// How many states were added.
    pub fn len(&self) -> usize {
        self.added
    }

    /// Whether no state was added.
    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Adds one (checked) state. On overflow, the problem naming the key; the fold is then
    /// left part way and should be dropped.
    pub fn add(&mut self, state: MergeState) -> Result<(), Problem> {
        let overflow = |key: String| problem(key, "a sum overflows");
        let scale = match self.scale {
            Some(s) if s <= state.scale => s,
            Some(s) => {
                self.ops.downscale(s - state.scale);
                state.scale
            }
            None => state.scale,
        };
        self.scale = Some(scale);
        self.added += 1;
        let by = state.scale - scale;
        self.ranks.extend(state.ranks);
        for c in state.categories {
            let e = self.categories.entry(c.name).or_insert((0, 0));
            e.0 =
                e.0.checked_add(c.events)
                    .ok_or_else(|| overflow("mergeable.categories.events".into()))?;
            e.1 =
                e.1.checked_add(c.duration_sum_ns)
                    .ok_or_else(|| overflow("mergeable.categories.duration_sum_ns".into()))?;
        }
        for (k, n) in state.phase_counts {
            let e = self.phase_counts.entry(k).or_insert(0);
            *e = e
                .checked_add(n)
                .ok_or_else(|| overflow("mergeable.phase_counts".into()))?;
        }
        for (group, counters) in state.warning_counts {
            let g = self.warning_counts.entry(group).or_default();
            for (k, n) in counters {
                let e = g.entry(k).or_insert(0);
                *e = e
                    .checked_add(n)
                    .ok_or_else(|| overflow("mergeable.warning_counts".into()))?;
            }
        }
        self.ops_folded |= state.ops_folded_into_other;
        self.cats_folded |= state.categories_folded_into_other;
        let mut state_ops = state.ops;
        if by > 0 {
            for op in &mut state_ops {
                op.histogram = op.histogram.as_ref().map(|h| h.downscaled(by));
            }
        }
        self.ops
            .add(state_ops)
            .map_err(|key| overflow(format!("mergeable.ops.{key}")))
    }

    /// The folded state, every list in its canonical order (at [`super::histogram::SCALE`] when
    /// nothing was added and no scale was given).
    pub fn finish(self) -> MergeState {
        let mut ranks = self.ranks;
        ranks.sort();
        MergeState {
            version: VERSION,
            scale: self.scale.unwrap_or(super::histogram::SCALE),
            ranks,
            categories: self
                .categories
                .into_iter()
                .map(|(name, (events, duration_sum_ns))| CategorySum {
                    name,
                    events,
                    duration_sum_ns,
                })
                .collect(),
            phase_counts: self.phase_counts,
            warning_counts: self.warning_counts,
            ops_folded_into_other: self.ops_folded,
            categories_folded_into_other: self.cats_folded,
            ops: self.ops.into_vec(),
        }
    }
}

/// The ops folded so far: a list in (category, name) order while every state's list came in
/// that order without duplicates (as summaries and merges write them), merged linearly; else a
/// map.
#[derive(Debug)]
enum Ops {
    Sorted(Vec<OpSum>),
    Keyed(BTreeMap<(String, String), OpSum>),
}

fn key(op: &OpSum) -> (&str, &str) {
    (&op.category, &op.name)
}

/// Adds `op` into `acc` (the same key); on overflow, the key that overflowed.
fn add_op(acc: &mut OpSum, op: &OpSum) -> Result<(), &'static str> {
    acc.n = acc.n.checked_add(op.n).ok_or("n")?;
    acc.duration_sum_ns = acc
        .duration_sum_ns
        .checked_add(op.duration_sum_ns)
        .ok_or("duration_sum_ns")?;
    acc.min_ns = acc.min_ns.min(op.min_ns);
    acc.max_ns = acc.max_ns.max(op.max_ns);
    acc.histogram = match (&acc.histogram, &op.histogram) {
        (Some(a), Some(b)) => Some(a.merged(b).ok_or("histogram")?),
        _ => None,
    };
    Ok(())
}

impl Ops {
    /// Adds one state's ops (histograms at the fold's scale), in their order.
    fn add(&mut self, next: Vec<OpSum>) -> Result<(), &'static str> {
        let sorted = next.windows(2).all(|w| key(&w[0]) < key(&w[1]));
        if let (Ops::Sorted(acc), true) = (&mut *self, sorted) {
            *acc = merge_sorted(core::mem::take(acc), next)?;
            return Ok(());
        }
        if let Ops::Sorted(acc) = self {
            let keyed = core::mem::take(acc)
                .into_iter()
                .map(|op| ((op.category.clone(), op.name.clone()), op))
                .collect();
            *self = Ops::Keyed(keyed);
        }
        let Ops::Keyed(map) = self else {
            unreachable!("made keyed above")
        };
        for mut op in next {
            let k = (
                core::mem::take(&mut op.category),
                core::mem::take(&mut op.name),
            );
            match map.get_mut(&k) {
                None => {
                    map.insert(k, op);
                }
                Some(acc) => add_op(acc, &op)?,
            }
        }
        Ok(())
    }

    /// Every histogram brought `by` scales lower.
    fn downscale(&mut self, by: u8) {
        let down = |op: &mut OpSum| op.histogram = op.histogram.as_ref().map(|h| h.downscaled(by));
        match self {
            Ops::Sorted(v) => v.iter_mut().for_each(down),
            Ops::Keyed(map) => map.values_mut().for_each(down),
        }
    }

    fn into_vec(self) -> Vec<OpSum> {
        match self {
            Ops::Sorted(v) => v,
            Ops::Keyed(map) => map
                .into_iter()
                .map(|((category, name), op)| OpSum {
                    category,
                    name,
                    ..op
                })
                .collect(),
        }
    }
}

/// The first key equal to an earlier one: `(its position, the earlier one's)`. Linear while the
/// keys come in increasing order (as summaries and merges write them).
fn first_repeat<K: Ord + Copy>(keys: impl Iterator<Item = K> + Clone) -> Option<(usize, usize)> {
    let mut prev: Option<K> = None;
    let increasing = keys.clone().all(|k| {
        let ok = prev.is_none_or(|p| p < k);
        prev = Some(k);
        ok
    });
    if increasing {
        return None;
    }
    let mut seen: BTreeMap<K, usize> = BTreeMap::new();
    for (i, k) in keys.enumerate() {
        if let Some(&first) = seen.get(&k) {
            return Some((i, first));
        }
        seen.insert(k, i);
    }
    None
}

/// Two lists in strictly increasing key order merged into one, equal keys added.
fn merge_sorted(acc: Vec<OpSum>, next: Vec<OpSum>) -> Result<Vec<OpSum>, &'static str> {
    if acc.is_empty() {
        return Ok(next);
    }
    let mut out = Vec::with_capacity(acc.len().max(next.len()));
    let mut a = acc.into_iter().peekable();
    let mut b = next.into_iter().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => key(x).cmp(&key(y)),
            (Some(_), None) => core::cmp::Ordering::Less,
            (None, Some(_)) => core::cmp::Ordering::Greater,
            (None, None) => break,
        };
        let op = match order {
            core::cmp::Ordering::Less => a.next(),
            core::cmp::Ordering::Greater => b.next(),
            core::cmp::Ordering::Equal => {
                let (mut x, y) = (a.next(), b.next());
                if let (Some(x), Some(y)) = (&mut x, &y) {
                    add_op(x, y)?;
                }
                x
            }
        };
        out.extend(op);
    }
    Ok(out)
}
