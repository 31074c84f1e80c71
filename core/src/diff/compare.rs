//! Two sides compared: categories, ops matched by (category, name) and ranked by the absolute
//! change of their duration sum, pauses, energy per annotation, and the verdict line. Every
//! difference is taken on exact integer ns and converted to ms once.
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::Serialize;

use super::kind::InputKind;
use super::side::{DevicePauses, Side, SideEnergy, SideOp};
use super::steps::{StepsDiff, compare_steps};

/// How the comparison is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompareOptions {
    /// Ops listed, largest change first.
    pub top: usize,
    /// The verdict's threshold, % (see [`verdict`](DiffResult::verdict)).
    pub threshold_pct: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            top: crate::summary::DEFAULT_TOP_OPS,
            threshold_pct: 1.0,
        }
    }
}

/// What `diff --json` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffResult {
    /// The one line for a pull request.
    pub verdict: String,
    /// Input A.
    pub a: SideInfo,
    /// Input B.
    pub b: SideInfo,
    /// With `--steps`: the steps compared (null when a side is a summary or has no step);
    /// absent without `--steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Option<StepsDiff>>,
    /// Every category together.
    pub totals: CategoryDiff,
    /// Per category (by name; a category missing on one side counts 0 there).
    pub categories: Vec<CategoryDiff>,
    /// The top ops by |change of duration sum| (ties by category, then name).
    pub ops: Vec<OpDiff>,
    /// How many ops each side had, matched.
    pub ops_compared: OpCounts,
    /// Per device, the join's pauses in A and B (null unless an input is a trace).
    pub pauses: Option<PausesDiff>,
    /// Energy per annotation, matched by (category, name), largest change first (with both
    /// recordings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<Vec<EnergyDiff>>,
    /// The verdict's threshold, %.
    pub threshold_pct: f64,
    /// Each side's warnings, prefixed `a: ` or `b: `, and the comparison's own.
    pub warnings: Vec<String>,
}

impl DiffResult {
    /// The JSON `diff --json` prints (without its final newline): the one rendering, for the
    /// CLI, the Python wheel and the page.
    ///
    /// # Errors
    /// serde_json's (none for these types in practice: every map key is a string).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }
}

/// One input, described.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideInfo {
    /// The name it was given.
    pub source: String,
    /// `trace` or `summary`.
    pub kind: InputKind,
    /// Ranks (1 for a trace).
    pub ranks: usize,
    /// Events read.
    pub events: u64,
    /// Some input ended early.
    pub truncated: bool,
    /// `exact` (a trace), `histogram` (a summary), or `approximate` (a trace past its
    /// summary's limits: see the warnings).
    pub p50: &'static str,
    /// Bound on the p50s' relative error (0 for exact).
    pub p50_relative_error: f64,
    /// The busy unions are per rank, summed (a summary of several ranks).
    pub busy_union_summed_over_ranks: bool,
}

/// One category (or the totals) in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CategoryDiff {
    /// The category (`"(all)"` for the totals).
    pub name: String,
    /// Duration events in A.
    pub events_a: u64,
    /// Duration events in B.
    pub events_b: u64,
    /// Busy union in A, ms.
    pub busy_union_ms_a: f64,
    /// Busy union in B, ms.
    pub busy_union_ms_b: f64,
    /// B minus A, ms (exact ns difference).
    pub delta_busy_union_ms: f64,
    /// B / A (null when A is 0).
    pub ratio_busy_union: Option<f64>,
    /// Duration sum in A, ms.
    pub duration_sum_ms_a: f64,
    /// Duration sum in B, ms.
    pub duration_sum_ms_b: f64,
    /// B minus A, ms.
    pub delta_duration_sum_ms: f64,
    /// B / A (null when A is 0).
    pub ratio_duration_sum: Option<f64>,
}

/// One op in one input.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpSide {
    /// Durations.
    pub n: u64,
    /// Their sum, ms.
    pub sum_ms: f64,
    /// Mean, µs.
    pub mean_us: Option<f64>,
    /// Median, µs (see the side's `p50`).
    pub p50_us: Option<f64>,
}

/// Where an op was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpStatus {
    /// In both.
    Both,
    /// Only in A (gone in B).
    OnlyA,
    /// Only in B (new).
    OnlyB,
}

/// One op compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpDiff {
    /// The category.
    pub category: String,
    /// The name.
    pub name: String,
    /// Both, only A, only B.
    pub status: OpStatus,
    /// In A (null when absent).
    pub a: Option<OpSide>,
    /// In B (null when absent).
    pub b: Option<OpSide>,
    /// Sum in B minus sum in A, ms (exact ns difference).
    pub delta_sum_ms: f64,
    /// Sum in B / sum in A (null unless in both with A's sum above 0).
    pub ratio_sum: Option<f64>,
}

/// Ops counted by where they were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// In both.
    pub both: usize,
    /// Only in A.
    pub only_a: usize,
    /// Only in B.
    pub only_b: usize,
    /// Listed in `ops`.
    pub listed: usize,
}

/// The pauses of both inputs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PausesDiff {
    /// A's minimum pause, ms (null for a summary).
    pub min_gap_ms_a: Option<f64>,
    /// B's.
    pub min_gap_ms_b: Option<f64>,
    /// Per device, ascending.
    pub devices: Vec<DevicePausesDiff>,
}

/// One device's pauses in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DevicePausesDiff {
    /// The trace device.
    pub device: i64,
    /// In A (null: no busy event of this device, or a summary).
    pub a: Option<DevicePauses>,
    /// In B.
    pub b: Option<DevicePauses>,
}

/// One annotation's energy in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnergyDiff {
    /// The annotation's category.
    pub category: String,
    /// Its name.
    pub name: String,
    /// Spans in A.
    pub n_a: u64,
    /// Spans in B.
    pub n_b: u64,
    /// Energy in A, J.
    pub gpu_energy_j_a: Option<f64>,
    /// Energy in B, J.
    pub gpu_energy_j_b: Option<f64>,
    /// B minus A, J (null unless both).
    pub delta_j: Option<f64>,
}

fn ms(ns: u128) -> f64 {
    ns as f64 / 1e6
}

fn delta_ms(a: u128, b: u128) -> f64 {
    // Exact in i128 (sums below 2^127 ns), one rounding.
    (b as i128 - a as i128) as f64 / 1e6
}

fn ratio(a: u128, b: u128) -> Option<f64> {
    (a > 0).then(|| b as f64 / a as f64)
}

fn category_diff(
    name: &str,
    (events_a, busy_a, sum_a): (u64, u64, u128),
    (events_b, busy_b, sum_b): (u64, u64, u128),
) -> CategoryDiff {
    CategoryDiff {
        name: String::from(name),
        events_a,
        events_b,
        busy_union_ms_a: ms(u128::from(busy_a)),
        busy_union_ms_b: ms(u128::from(busy_b)),
        delta_busy_union_ms: delta_ms(u128::from(busy_a), u128::from(busy_b)),
        ratio_busy_union: ratio(u128::from(busy_a), u128::from(busy_b)),
        duration_sum_ms_a: ms(sum_a),
        duration_sum_ms_b: ms(sum_b),
        delta_duration_sum_ms: delta_ms(sum_a, sum_b),
        ratio_duration_sum: ratio(sum_a, sum_b),
    }
}

/// Walks two lists sorted by `cmp` together: `f(Some, Some)` for a key in both.
fn merge_by<'x, T>(
    a: &'x [T],
    b: &'x [T],
    cmp: impl Fn(&T, &T) -> Ordering,
    mut f: impl FnMut(Option<&'x T>, Option<&'x T>),
) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let ord = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => cmp(x, y),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match ord {
            Ordering::Less => {
                f(Some(&a[i]), None);
                i += 1;
            }
            Ordering::Greater => {
                f(None, Some(&b[j]));
                j += 1;
            }
            Ordering::Equal => {
                f(Some(&a[i]), Some(&b[j]));
                i += 1;
                j += 1;
            }
        }
    }
}

fn op_side(o: &SideOp) -> OpSide {
    let (mean_us, p50_us) = o.mean_p50_us();
    OpSide {
        n: o.n,
        sum_ms: ms(o.duration_sum_ns),
        mean_us,
        p50_us,
    }
}

fn info(s: &Side) -> SideInfo {
    SideInfo {
        source: s.source.clone(),
        kind: s.kind,
        ranks: s.ranks,
        events: s.events,
        truncated: s.truncated,
        p50: match (s.kind, s.p50_approximate) {
            (InputKind::Summary, _) => "histogram",
            (InputKind::Trace, false) => "exact",
            (InputKind::Trace, true) => "approximate",
        },
        p50_relative_error: s.p50_relative_error,
        busy_union_summed_over_ranks: s.ranks > 1,
    }
}

/// An op's change, for ranking: |delta| in ns.
struct Ranked<'x> {
    a: Option<&'x SideOp>,
    b: Option<&'x SideOp>,
    abs_ns: u128,
}

/// A compared with B; `steps`: the steps were asked for (`--steps`).
pub fn compare(a: &Side, b: &Side, opts: &CompareOptions, steps: bool) -> DiffResult {
    let mut categories = Vec::new();
    merge_by(
        &a.categories,
        &b.categories,
        |x, y| x.name.cmp(&y.name),
        |x, y| {
            let parts = |c: Option<&super::side::SideCategory>| {
                c.map_or((0, 0, 0), |c| {
                    (c.events, c.busy_union_ns, c.duration_sum_ns)
                })
            };
            let name = x.or(y).map_or("", |c| c.name.as_str());
            categories.push(category_diff(name, parts(x), parts(y)));
        },
    );
    let events = |s: &Side| s.categories.iter().map(|c| c.events).sum::<u64>();
    let totals = category_diff(
        "(all)",
        (events(a), a.busy_union_ns, a.duration_sum_ns),
        (events(b), b.busy_union_ns, b.duration_sum_ns),
    );

    let mut ranked: Vec<Ranked<'_>> = Vec::with_capacity(a.ops.len().max(b.ops.len()));
    let mut counts = OpCounts {
        both: 0,
        only_a: 0,
        only_b: 0,
        listed: 0,
    };
    merge_by(
        &a.ops,
        &b.ops,
        |x, y| (&x.category, &x.name).cmp(&(&y.category, &y.name)),
        |x, y| {
            match (x, y) {
                (Some(_), Some(_)) => counts.both += 1,
                (Some(_), None) => counts.only_a += 1,
                _ => counts.only_b += 1,
            }
            let sa = x.map_or(0, |o| o.duration_sum_ns);
            let sb = y.map_or(0, |o| o.duration_sum_ns);
            ranked.push(Ranked {
                a: x,
                b: y,
                abs_ns: sa.abs_diff(sb),
            });
        },
    );
    // Stable: ties keep the (category, name) order of the walk.
    ranked.sort_by_key(|r| core::cmp::Reverse(r.abs_ns));
    let verdict_op = ranked.first().map(op_diff);
    let threshold_ns = |total: u128| -> f64 { total as f64 * opts.threshold_pct / 100.0 };
    let op_total = a.duration_sum_ns.max(b.duration_sum_ns);
    let ops_moved = ranked
        .iter()
        .filter(|r| r.abs_ns > 0 && r.abs_ns as f64 >= threshold_ns(op_total))
        .count();
    ranked.truncate(opts.top);
    let ops: Vec<OpDiff> = ranked.iter().map(op_diff).collect();
    counts.listed = ops.len();

    let pauses = (a.pauses.is_some() || b.pauses.is_some()).then(|| pauses_diff(a, b));
    let energy = match (&a.energy, &b.energy) {
        (Some(ea), Some(eb)) => Some(energy_diff(ea, eb, opts.top)),
        _ => None,
    };

    let mut warnings = Vec::new();
    for (tag, s) in [("a", a), ("b", b)] {
        warnings.extend(s.warnings.iter().map(|w| format!("{tag}: {w}")));
        if s.ops_folded {
            warnings.push(format!(
                "{tag}: ops past the op limit are folded into one \"(other)\" op: their changes show there"
            ));
        }
        if s.kind == InputKind::Summary {
            warnings.push(format!(
                "{tag}: a summary: p50s from its histograms, within {:.4} %",
                s.p50_relative_error * 100.0
            ));
        }
    }

    let steps = steps.then(|| compare_steps(a.steps.as_ref(), b.steps.as_ref(), &mut warnings));
    let verdict = match steps.as_ref().and_then(Option::as_ref) {
        Some(s) => s.verdict(),
        None => verdict(a, b, verdict_op.as_ref(), ops_moved, opts),
    };
    DiffResult {
        verdict,
        a: info(a),
        b: info(b),
        steps,
        totals,
        categories,
        ops,
        ops_compared: counts,
        pauses,
        energy,
        threshold_pct: opts.threshold_pct,
        warnings,
    }
}

fn op_diff(r: &Ranked<'_>) -> OpDiff {
    let o = r.a.or(r.b).expect("an op is on one side at least");
    let sa = r.a.map_or(0, |o| o.duration_sum_ns);
    let sb = r.b.map_or(0, |o| o.duration_sum_ns);
    OpDiff {
        category: o.category.clone(),
        name: o.name.clone(),
        status: match (r.a, r.b) {
            (Some(_), Some(_)) => OpStatus::Both,
            (Some(_), None) => OpStatus::OnlyA,
            _ => OpStatus::OnlyB,
        },
        a: r.a.map(op_side),
        b: r.b.map(op_side),
        delta_sum_ms: delta_ms(sa, sb),
        ratio_sum: match (r.a, r.b) {
            (Some(_), Some(_)) => ratio(sa, sb),
            _ => None,
        },
    }
}

fn pauses_diff(a: &Side, b: &Side) -> PausesDiff {
    let none = Vec::new();
    let pa = a.pauses.as_ref().unwrap_or(&none);
    let pb = b.pauses.as_ref().unwrap_or(&none);
    let mut devices = Vec::new();
    merge_by(
        pa,
        pb,
        |x, y| x.0.cmp(&y.0),
        |x, y| {
            let device = x.or(y).map_or(0, |(d, _)| *d);
            devices.push(DevicePausesDiff {
                device,
                a: x.map(|(_, p)| p.clone()),
                b: y.map(|(_, p)| p.clone()),
            });
        },
    );
    PausesDiff {
        min_gap_ms_a: a.min_gap_ms,
        min_gap_ms_b: b.min_gap_ms,
        devices,
    }
}

fn energy_diff(a: &[SideEnergy], b: &[SideEnergy], top: usize) -> Vec<EnergyDiff> {
    let mut rows = Vec::new();
    merge_by(
        a,
        b,
        |x, y| (&x.category, &x.name).cmp(&(&y.category, &y.name)),
        |x, y| {
            let e = x.or(y).expect("one side at least");
            let (ja, jb) = (
                x.and_then(|e| e.gpu_energy_j),
                y.and_then(|e| e.gpu_energy_j),
            );
            rows.push(EnergyDiff {
                category: e.category.clone(),
                name: e.name.clone(),
                n_a: x.map_or(0, |e| e.n),
                n_b: y.map_or(0, |e| e.n),
                gpu_energy_j_a: ja,
                gpu_energy_j_b: jb,
                delta_j: ja.zip(jb).map(|(a, b)| b - a),
            });
        },
    );
    let size = |r: &EnergyDiff| r.delta_j.map_or(0.0, f64::abs);
    rows.sort_by(|x, y| size(y).total_cmp(&size(x)));
    rows.truncate(top);
    rows
}

/// At most this many characters of an op's name in the verdict.
const VERDICT_NAME_CHARS: usize = 60;

fn short(name: &str) -> String {
    match name.char_indices().nth(VERDICT_NAME_CHARS) {
        Some((at, _)) => format!("{}...", &name[..at]),
        None => String::from(name),
    }
}

fn signed_pct(a: u128, b: u128) -> String {
    if a == 0 {
        return String::from(if b == 0 { "+0.0 %" } else { "new" });
    }
    let pct = (b as i128 - a as i128) as f64 * 100.0 / a as f64;
    format!("{pct:+.1} %")
}

/// The verdict without steps: the busy time of the GPU's kernels (or of everything, without a
/// `kernel` category on both sides) and the op that moved most. "No significant change" when
/// that busy time moved by less than the threshold (% of A's) and no op's duration sum by the
/// threshold of the larger total duration sum: without steps there is no spread to test a
/// change against, so the threshold is stated instead.
fn verdict(
    a: &Side,
    b: &Side,
    top: Option<&OpDiff>,
    ops_moved: usize,
    opts: &CompareOptions,
) -> String {
    fn busy<'s>(s: &'s Side, cat: &str) -> Option<&'s super::side::SideCategory> {
        s.categories.iter().find(|c| c.name == cat)
    }
    let (label, ba, bb) = match (busy(a, "kernel"), busy(b, "kernel")) {
        (Some(x), Some(y)) => ("kernel busy", x.busy_union_ns, y.busy_union_ns),
        _ => ("busy", a.busy_union_ns, b.busy_union_ns),
    };
    let (ba, bb) = (u128::from(ba), u128::from(bb));
    let busy_moved =
        (ba.abs_diff(bb) as f64) * 100.0 >= opts.threshold_pct * ba as f64 && ba.abs_diff(bb) > 0;
    let busy_text = format!(
        "{label} {:.3} ms vs {:.3} ms ({})",
        ms(bb),
        ms(ba),
        signed_pct(ba, bb)
    );
    if !busy_moved && ops_moved == 0 {
        return format!(
            "B vs A: no significant change: {busy_text}; no op's duration sum moved by {} % of the total",
            opts.threshold_pct
        );
    }
    let mut line = format!("B vs A: {busy_text}");
    if let Some(op) = top.filter(|o| o.delta_sum_ms != 0.0) {
        let how = match op.status {
            OpStatus::Both => match op.ratio_sum {
                Some(r) => format!("{r:.2}x"),
                None => String::from("was 0"),
            },
            OpStatus::OnlyA => String::from("gone"),
            OpStatus::OnlyB => String::from("new"),
        };
        line.push_str(&format!(
            "; most changed op: {} {} {:+.3} ms ({how})",
            op.category,
            short(&op.name),
            op.delta_sum_ms
        ));
    }
    if ops_moved > 1 {
        line.push_str(&format!(
            "; {ops_moved} ops moved by {} % of the total or more",
            opts.threshold_pct
        ));
    }
    line
}
