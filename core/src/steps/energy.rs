//! A step's energy from the recording (docs/steps.md, "Energy"): the edge-interpolated
//! trapezoid over the step's window, as `analyze` between marks at the step's edges
//! ([`Recording::window`]), summed over the GPUs a `user_annotation` is charged; with a stated
//! bound from the sample spacing and the counter's update period measured in the recording.
use alloc::vec::Vec;
use serde::Serialize;

use crate::join::{Alignment, Recording};
use crate::window::combine_verdicts;

/// The energy figures of one step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepEnergy {
    /// Edge-interpolated energy over the step, summed over the charged GPUs, J (null when no
    /// power reading touches the step).
    pub gpu_energy_j: Option<f64>,
    /// The bound on how far the true energy may lie from `gpu_energy_j`, J (docs/steps.md).
    pub energy_bound_j: Option<f64>,
    /// The step is at least as long as the update period of every charged GPU's reading.
    pub resolvable: bool,
    /// Per GPU, energy over the time its power readings cover; summed, W.
    pub avg_power_w: Option<f64>,
    /// The window's verdict (`compute`, `waiting`, `mixed`), as `analyze` gives one.
    pub verdict: Option<&'static str>,
}

/// One charged GPU: its slot and how often its reading changes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Charged {
    pub(crate) slot: usize,
    /// The update period, ns: the median time between changes of the energy counter, or of the
    /// power reading when the recording has no counter; `None` with fewer than two changes.
    pub(crate) update_ns: Option<i64>,
}

/// The median spacing between changes of value in `series`, ns.
pub(crate) fn update_period_ns(series: &[(i64, f64)]) -> Option<i64> {
    let mut last_change: Option<(i64, f64)> = None;
    let mut gaps: Vec<i64> = Vec::new();
    for &(t, v) in series {
        match last_change {
            None => last_change = Some((t, v)),
            Some((t0, v0)) if v != v0 => {
                gaps.push(t - t0);
                last_change = Some((t, v));
            }
            Some(_) => {}
        }
    }
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    // The lower median: a period the recording shows, in whole ns.
    Some(gaps[(gaps.len() - 1) / 2])
}

impl Charged {
    /// `slot` with its update period measured in `rec`.
    pub(crate) fn new(rec: &Recording, slot: usize) -> Charged {
        let counter = rec.counter_readings(slot);
        let update_ns = if counter.len() >= 2 {
            update_period_ns(counter)
        } else {
            update_period_ns(rec.power_readings(slot))
        };
        Charged { slot, update_ns }
    }
}

/// The step `[t0_ns, t1_ns)` on the trace's clock, over the `charged` GPUs.
pub(crate) fn step_energy(
    rec: &Recording,
    align: &Alignment,
    charged: &[Charged],
    t0_ns: i64,
    t1_ns: i64,
) -> StepEnergy {
    let none = StepEnergy {
        gpu_energy_j: None,
        energy_bound_j: None,
        resolvable: false,
        avg_power_w: None,
        verdict: None,
    };
    let (Some(u0), Some(u1)) = (align.unix_ns(t0_ns), align.unix_ns(t1_ns)) else {
        return none;
    };
    if charged.is_empty() {
        return none;
    }
    let mut energy: Option<f64> = None;
    let mut bound: Option<f64> = None;
    let mut power = 0.0;
    let mut any_power = false;
    let mut resolvable = true;
    let mut verdicts = Vec::with_capacity(charged.len());
    for g in charged {
        let w = rec.window(g.slot, u0, u1);
        if let Some(j) = w.energy_j() {
            *energy.get_or_insert(0.0) += j;
            if w.acc.power.covered_ns > 0 {
                power += j / (w.acc.power.covered_ns as f64 / 1e9);
                any_power = true;
            }
        }
        let period = g.update_ns.unwrap_or(0);
        resolvable &= g.update_ns.is_some() && u1 - u0 >= period;
        if let Some(b) = edge_bound_j(rec.power_readings(g.slot), u0, u1, period) {
            *bound.get_or_insert(0.0) += b;
        }
        verdicts.push(w.verdict);
    }
    StepEnergy {
        gpu_energy_j: energy,
        energy_bound_j: energy.and(bound),
        resolvable: resolvable && energy.is_some(),
        avg_power_w: any_power.then_some(power),
        verdict: combine_verdicts(verdicts.iter()).verdict,
    }
}

/// The bound of one GPU: at each edge, the highest power read around the window times the
/// longer of the spacing of the two readings around that edge and the update period. Within
/// that stretch the trapezoid cannot know when the power changed, so it may misplace up to
/// that much energy across the edge. `None` without a reading.
fn edge_bound_j(power: &[(i64, f64)], u0: i64, u1: i64, period_ns: i64) -> Option<f64> {
    if power.is_empty() {
        return None;
    }
    // The readings from the one before the start to the one after the end.
    let lo = power.partition_point(|r| r.0 < u0).saturating_sub(1);
    let hi = (power.partition_point(|r| r.0 <= u1) + 1).min(power.len());
    let p_max = power[lo..hi]
        .iter()
        .map(|r| r.1.abs())
        .fold(0.0f64, f64::max);
    let spacing = |t: i64| -> i64 {
        let k = power.partition_point(|r| r.0 < t);
        match (
            k.checked_sub(1).map(|j| power[j].0),
            power.get(k).map(|r| r.0),
        ) {
            (Some(a), Some(b)) => b - a,
            // An edge outside the readings: the trapezoid has nothing there, and the gap to
            // the nearest reading is unknown energy.
            (None, Some(b)) => b - t,
            (Some(a), None) => t - a,
            (None, None) => 0,
        }
    };
    let e0 = spacing(u0).max(period_ns);
    let e1 = spacing(u1).max(period_ns);
    Some(p_max * (e0 as f64 + e1 as f64) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_period_is_the_median_time_between_changes() {
        // Read every 10 ms, the counter moves every 100 ms.
        let s: Vec<(i64, f64)> = (0..50)
            .map(|i| (i * 10_000_000, (i / 10) as f64 * 5.0))
            .collect();
        assert_eq!(update_period_ns(&s), Some(100_000_000));
        assert_eq!(update_period_ns(&s[..5]), None);
    }

    #[test]
    fn edge_bound_is_peak_power_times_the_edge_stretches() {
        let p: Vec<(i64, f64)> = (0..11)
            .map(|i| (i * 100, if i == 5 { 300.0 } else { 100.0 }))
            .collect();
        // Edges at 150 and 750: spacing 100 each; period 0; peak 300 W.
        let b = edge_bound_j(&p, 150, 750, 0).unwrap();
        assert!((b - 300.0 * 200.0 / 1e9).abs() < 1e-15);
        // A period of 250 ns dominates the spacing.
        let b = edge_bound_j(&p, 150, 750, 250).unwrap();
        assert!((b - 300.0 * 500.0 / 1e9).abs() < 1e-15);
        assert_eq!(edge_bound_j(&[], 0, 1, 0), None);
    }
}
