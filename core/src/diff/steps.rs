//! The steps of A and B compared (`diff --steps`, docs/diff.md "Steps"): the median step with
//! the Hodges-Lehmann shift and its distribution-free 95 % interval ([`super::shift`]), each
//! side's median breakdown, the parts ranked by how much they moved and in how many steps, and,
//! with power on both sides, the energy per step compared the same way.
//!
//! Every duration is integer ns: totals in `u128`, differences in `i128`, one rounding to ms.
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;

use super::shift::{StepShift, shift_words, step_shift};
use super::side::SideSteps;
use crate::steps::robust::{self, Fence};
use crate::steps::{ALL, Breakdown, PARTS};

/// `diff --steps`' `steps` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepsDiff {
    /// The step pattern (the same for both sides).
    pub pattern: String,
    /// The step times: `n_a`, `n_b`, `median_ms_a`, `median_ms_b`, `shift_ms`, `change_pct`,
    /// `ci95_pct`, `ci95_ms`, `significant`, `method`.
    #[serde(flatten)]
    pub time: StepShift,
    /// A's median breakdown (each part's median over A's steps, as `trace --steps` gives it), ms.
    pub breakdown_ms_median_a: Breakdown,
    /// B's.
    pub breakdown_ms_median_b: Breakdown,
    /// Every part, the largest change of its mean per step first (ties in part order).
    pub parts: Vec<PartDiff>,
    /// With power on both sides: the energy per step (null otherwise).
    pub energy: Option<StepEnergyDiff>,
}

/// One part of the breakdown in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartDiff {
    /// The part (`kernel`, ..., `other`).
    pub part: &'static str,
    /// Its median over A's steps, ms.
    pub median_ms_a: f64,
    /// Over B's, ms.
    pub median_ms_b: f64,
    /// B's median less A's, ms (from the medians in ns).
    pub delta_median_ms: f64,
    /// Its total over A's steps, ms.
    pub total_ms_a: f64,
    /// Over B's, ms.
    pub total_ms_b: f64,
    /// B's total less A's, ms (exact ns difference).
    pub delta_total_ms: f64,
    /// B's mean per step less A's, ms (the ranking's key).
    pub delta_mean_ms: f64,
    /// In how many steps it moved: the steps of the side where the part is larger (`moved_in`)
    /// whose value stands out against the other side's steps by the steps' outlier rule, by
    /// more than the other side's spread of whole steps (3 × 1.4826 × their MAD), and lies
    /// above all of them.
    pub steps_moved: usize,
    /// `b` (the part grew: B's steps counted against A's) or `a` (it shrank: A's steps
    /// counted against B's).
    pub moved_in: &'static str,
    /// The steps of that side.
    pub of_steps: usize,
    /// The indices of the steps that moved (that side's), the first [`MOVED_LISTED`] in time
    /// order.
    pub moved_steps: Vec<u64>,
}

/// Steps listed per part in [`PartDiff::moved_steps`].
pub const MOVED_LISTED: usize = 10;

/// The energy per step in A and B (steps with an energy only).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepEnergyDiff {
    /// A's steps with an energy.
    pub n_a: usize,
    /// B's.
    pub n_b: usize,
    /// A's median energy per step, J.
    pub median_j_a: f64,
    /// B's, J.
    pub median_j_b: f64,
    /// The Hodges-Lehmann shift of B's energies from A's, J (to 1 µJ).
    pub shift_j: f64,
    /// `100 * shift / median_a`.
    pub change_pct: f64,
    /// The shift's 95 % interval, % of A's median (null with fewer than 4 steps a side).
    pub ci95_pct: Option<[f64; 2]>,
    /// The interval, J.
    pub ci95_j: Option<[f64; 2]>,
    /// The interval lies on one side of zero.
    pub significant: bool,
    /// `exact` or `normal`, as for the step times.
    pub method: &'static str,
    /// Energy per unit of work: when both sides have the same number of steps, each with an
    /// energy (null otherwise).
    pub per_step: Option<WorkEnergy>,
}

/// The energy of the same amount of work (the same number of steps) in A and B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkEnergy {
    /// Steps on each side.
    pub steps: usize,
    /// A's energy over its steps, J.
    pub total_j_a: f64,
    /// B's, J.
    pub total_j_b: f64,
    /// A's total over its steps, J per step.
    pub per_step_j_a: f64,
    /// B's, J per step.
    pub per_step_j_b: f64,
    /// `100 * (total_b - total_a) / total_a`.
    pub change_pct: f64,
}

fn ms_i(ns: i128) -> f64 {
    ns as f64 / 1e6
}

/// µJ, the integer domain of the energies' shift (a step's energy is well below 2^64 µJ).
fn micro_j(j: f64) -> u64 {
    if j > 0.0 { (j * 1e6 + 0.5) as u64 } else { 0 }
}

/// A's and B's steps compared; `None` when either has none.
pub fn steps_diff(a: &SideSteps, b: &SideSteps) -> Option<StepsDiff> {
    let time = step_shift(&a.durations_ns, &b.durations_ns)?;
    let (na, nb) = (a.durations_ns.len(), b.durations_ns.len());
    let column =
        |s: &SideSteps, p: usize| -> Vec<u64> { s.parts_ns.iter().map(|x| x[p]).collect() };
    let median_ms = |v: &[u64]| -> f64 {
        let ms: Vec<f64> = v.iter().map(|&x| x as f64 / 1e6).collect();
        robust::median(&ms).unwrap_or(0.0)
    };
    // A part's move within a side's step-to-step spread is not counted in any step.
    let noise = |d: &[u64]| robust::median_ns(d).map_or(0.0, |m| robust::spread_ns(d, m));
    let (noise_a, noise_b) = (noise(&a.durations_ns), noise(&b.durations_ns));
    let mut med_a = [0.0; PARTS];
    let mut med_b = [0.0; PARTS];
    // (|total_b * n_a - total_a * n_b|, the part's row): the mean's change over n_a * n_b.
    let mut rows: Vec<(u128, PartDiff)> = Vec::with_capacity(PARTS);
    for p in ALL {
        let i = p as usize;
        let (ca, cb) = (column(a, i), column(b, i));
        med_a[i] = median_ms(&ca);
        med_b[i] = median_ms(&cb);
        let total_a: u128 = ca.iter().map(|&x| u128::from(x)).sum();
        let total_b: u128 = cb.iter().map(|&x| u128::from(x)).sum();
        let cross_a = total_a * nb as u128;
        let cross_b = total_b * na as u128;
        let grew = cross_b >= cross_a;
        let (moved, of, listed) = if grew {
            let (k, l) = moved_past(&cb, &ca, noise_a, &b.indices);
            (k, nb, l)
        } else {
            let (k, l) = moved_past(&ca, &cb, noise_b, &a.indices);
            (k, na, l)
        };
        let m = |v: &[u64]| robust::median_ns(v).unwrap_or(0.0);
        rows.push((
            cross_a.abs_diff(cross_b),
            PartDiff {
                part: p.key(),
                median_ms_a: med_a[i],
                median_ms_b: med_b[i],
                delta_median_ms: (m(&cb) - m(&ca)) / 1e6,
                total_ms_a: total_a as f64 / 1e6,
                total_ms_b: total_b as f64 / 1e6,
                delta_total_ms: ms_i(total_b as i128 - total_a as i128),
                delta_mean_ms: (total_b as f64 / nb as f64 - total_a as f64 / na as f64) / 1e6,
                steps_moved: moved,
                moved_in: if grew { "b" } else { "a" },
                of_steps: of,
                moved_steps: listed,
            },
        ));
    }
    // Stable: ties keep the parts' order.
    rows.sort_by_key(|r| core::cmp::Reverse(r.0));
    let energy = match (&a.energy_j, &b.energy_j) {
        (Some(ea), Some(eb)) => energy_diff(ea, eb),
        _ => None,
    };
    Some(StepsDiff {
        pattern: a.pattern.clone(),
        time,
        breakdown_ms_median_a: Breakdown::from_ms(&med_a),
        breakdown_ms_median_b: Breakdown::from_ms(&med_b),
        parts: rows.into_iter().map(|r| r.1).collect(),
        energy,
    })
}

/// How many of `larger`'s values stand out against `other`'s by the steps' outlier rule, by
/// more than `noise_ns` (the other side's spread of whole steps), and lie above every one of
/// `other`'s (so a side compared with itself moved in no step); the first [`MOVED_LISTED`] of
/// their `indices`.
fn moved_past(larger: &[u64], other: &[u64], noise_ns: f64, indices: &[u64]) -> (usize, Vec<u64>) {
    let (Some(f), Some(&max)) = (Fence::of(other), other.iter().max()) else {
        return (0, Vec::new());
    };
    let f = f.at_least(noise_ns);
    let mut listed = Vec::new();
    let mut k = 0;
    for (&v, &i) in larger.iter().zip(indices) {
        if v > max && f.above(v) {
            k += 1;
            if listed.len() < MOVED_LISTED {
                listed.push(i);
            }
        }
    }
    (k, listed)
}

fn energy_diff(a: &[Option<f64>], b: &[Option<f64>]) -> Option<StepEnergyDiff> {
    let ja: Vec<f64> = a.iter().copied().flatten().collect();
    let jb: Vec<f64> = b.iter().copied().flatten().collect();
    let ua: Vec<u64> = ja.iter().map(|&j| micro_j(j)).collect();
    let ub: Vec<u64> = jb.iter().map(|&j| micro_j(j)).collect();
    // Over µJ the shift's `_ms` figures (value / 1e6) are in J.
    let s = step_shift(&ua, &ub)?;
    let median_j_a = robust::median(&ja)?;
    let median_j_b = robust::median(&jb)?;
    let whole = a.len() == b.len() && ja.len() == a.len() && jb.len() == b.len();
    let per_step = whole.then(|| {
        let (ta, tb) = (ja.iter().sum::<f64>(), jb.iter().sum::<f64>());
        let n = a.len();
        WorkEnergy {
            steps: n,
            total_j_a: ta,
            total_j_b: tb,
            per_step_j_a: ta / n as f64,
            per_step_j_b: tb / n as f64,
            change_pct: if ta > 0.0 {
                100.0 * (tb - ta) / ta
            } else {
                0.0
            },
        }
    });
    Some(StepEnergyDiff {
        n_a: ja.len(),
        n_b: jb.len(),
        median_j_a,
        median_j_b,
        shift_j: s.shift_ms,
        change_pct: s.change_pct,
        ci95_pct: s.ci95_pct,
        ci95_j: s.ci95_ms,
        significant: s.significant,
        method: s.method,
        per_step,
    })
}

impl StepsDiff {
    /// The verdict over the steps: `B vs A: median step 16.900 ms vs 18.000 ms (-6.1 %, 95 % CI
    /// -6.7 % to -5.6 %)`, then with power `; energy per step 2.310 J vs 2.450 J (...)`, each
    /// prefixed `no significant change: ` where its interval crosses zero, then the part that
    /// moved most in some step (`; dataloader +500.000 ms in 2 of 22 steps`).
    pub fn verdict(&self) -> String {
        let mut line = format!("B vs A: {}", self.time.verdict_words());
        if let Some(e) = &self.energy {
            line.push_str("; ");
            line.push_str(&shift_words(
                "energy per step",
                "J",
                [e.median_j_b, e.median_j_a],
                e.change_pct,
                e.ci95_pct,
                e.significant,
            ));
        }
        if let Some(p) = self
            .parts
            .iter()
            .find(|p| p.steps_moved > 0 && p.delta_mean_ms != 0.0)
        {
            let change = if self.time.n_a == self.time.n_b {
                format!("{:+.3} ms", p.delta_total_ms)
            } else {
                format!("{:+.3} ms a step", p.delta_mean_ms)
            };
            let which: Vec<String> = p.moved_steps.iter().map(|i| format!("#{i}")).collect();
            let more = if p.steps_moved > p.moved_steps.len() {
                ", ..."
            } else {
                ""
            };
            line.push_str(&format!(
                "; {} {change} in {} of {} steps ({}{more})",
                p.part,
                p.steps_moved,
                p.of_steps,
                which.join(", ")
            ));
        }
        line
    }
}

/// The `steps` section when it was asked for, with the warnings it adds (prefixed `a: `/`b: `
/// for a side's); `None` when a side is a summary or has no step.
pub fn compare_steps(
    a: Option<&SideSteps>,
    b: Option<&SideSteps>,
    warnings: &mut Vec<String>,
) -> Option<StepsDiff> {
    for (tag, s) in [("a", a), ("b", b)] {
        match s {
            None => warnings.push(format!(
                "{tag}: a summary has no steps: the steps are compared between two traces (steps: null)"
            )),
            Some(s) => {
                warnings.extend(s.warnings.iter().map(|w| format!("{tag}: steps: {w}")));
                if s.durations_ns.is_empty() {
                    warnings.push(format!(
                        "{tag}: no complete user_annotation matches the step pattern {}: no steps to compare (steps: null)",
                        s.pattern
                    ));
                }
                if s.unresolvable > 0 {
                    warnings.push(format!(
                        "{tag}: {} of {} steps are not resolvable (shorter than the power reading's update period, or it is unknown): their energies are interpolations (docs/steps.md)",
                        s.unresolvable,
                        s.durations_ns.len()
                    ));
                }
            }
        }
    }
    let (a, b) = (a?, b?);
    let d = steps_diff(a, b)?;
    match (&a.energy_j, &b.energy_j) {
        (Some(_), None) | (None, Some(_)) => {
            let has = if a.energy_j.is_some() { "A" } else { "B" };
            warnings.push(format!(
                "energy per step needs power on both sides (a recording, or the trace's power counters): only {has} has it"
            ));
        }
        (Some(_), Some(_)) if d.energy.is_none() => warnings.push(
            "no power reading touches the steps of a side: no energy per step to compare".into(),
        ),
        _ => {}
    }
    Some(d)
}
