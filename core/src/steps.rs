//! Steps: where each training step's time and energy went (docs/steps.md).
//!
//! A step is a complete `user_annotation` whose name matches the step pattern
//! ([`StepPattern`]; `ProfilerStep#<N>` by default). Its window `[ts, ts + dur)` in integer ns
//! splits exactly into eight parts ([`Part`]): at each instant, the highest-priority class of
//! event active there (`kernel`, `memcpy`, `memset`, `communication`, `runtime`, `dataloader`,
//! `cpu_exec`), else `other`.
//!
//! - `collect.rs`: the first pass on the trace job's scan (file order): the steps, each
//!   class's union of busy intervals, the host ops' spans; bounded by `Limits`.
//! - `sweep.rs`: every step's parts from the unions by one sweep in time order.
//! - `robust.rs`: medians, the MAD outlier rule, p90.
//! - `energy.rs`: a step's energy from the recording, with its bound.
//! - `result.rs`: the result types; [`StepsFound::report`] fills them.
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub mod class;
mod collect;
pub mod energy;
pub mod pattern;
pub mod result;
pub mod robust;
mod sweep;
#[cfg(test)]
mod tests;

pub use class::{ALL, PARTS, Part};
pub use collect::{Kind, StepCollector};
pub use energy::StepEnergy;
pub use pattern::{PatternError, StepPattern};
pub use result::{
    Breakdown, HostOpTime, Outlier, Spread, StepApproximations, StepEntry, StepPause, StepSummary,
    StepsReport, UpdatePeriod,
};

use crate::join::clock::NsDecimal;
use crate::join::{
    Alignment, GpuMap, JoinOptions, JoinReport, PauseResult, Recording, TraceCountersReport,
};
use crate::summary::IntervalSpill;
use crate::summary::spill::{MERGE_BUFFER_INTERVALS, MergedIntervals};
use collect::HostSpan;
use energy::Charged;
use sweep::Window;

/// Host ops listed per outlier.
pub const TOP_HOST_OPS: usize = 5;

/// One step after the first pass, with its parts in ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundStep {
    /// Name.
    pub name: String,
    /// Index (see [`StepEntry::index`]).
    pub index: u64,
    /// Window start, ns.
    pub ts_ns: i64,
    /// Window length, ns.
    pub dur_ns: u64,
    /// The parts, ns, indexed by [`Part`]; they sum to `dur_ns`.
    pub parts_ns: [u64; PARTS],
}

/// What the first pass found: the steps with their parts, and what the outliers need.
pub struct StepsFound {
    /// The steps in time order (ties: by index).
    pub steps: Vec<FoundStep>,
    pattern: String,
    host_names: crate::summary::interner::Interner,
    host: Vec<HostSpan>,
    dropped_steps: u64,
    dropped_host: u64,
    host_names_folded: bool,
    error_bound_ns: u64,
    /// The temporary file of the classes' unions failed (a write or a read).
    unreadable: bool,
}

impl StepCollector {
    /// The end of the first pass: every step's parts.
    pub fn finish(mut self) -> StepsFound {
        let raw = core::mem::take(&mut self.steps);
        let names = core::mem::take(&mut self.names);
        let mut steps: Vec<(FoundStep, Option<u64>)> = raw
            .iter()
            .map(|r| {
                let name = &names[r.name_at as usize..(r.name_at + r.name_len) as usize];
                let index = pattern::name_index(name);
                (
                    FoundStep {
                        name: String::from_utf8_lossy(name).into_owned(),
                        index: index.unwrap_or(0),
                        ts_ns: r.ts_ns,
                        dur_ns: r.end_ns.abs_diff(r.ts_ns),
                        parts_ns: [0; PARTS],
                    },
                    index,
                )
            })
            .collect();
        // Time order, ties by the name's index (one without an index after those with one),
        // then file order.
        steps.sort_by_key(|(s, i)| (s.ts_ns, i.unwrap_or(u64::MAX)));
        let mut steps: Vec<FoundStep> = steps
            .into_iter()
            .enumerate()
            .map(|(ordinal, (mut s, i))| {
                if i.is_none() {
                    s.index = ordinal as u64;
                }
                s
            })
            .collect();
        let windows: Vec<Window> = steps
            .iter()
            .map(|s| Window {
                start_ns: s.ts_ns,
                end_ns: s.ts_ns.saturating_add_unsigned(s.dur_ns),
            })
            .collect();
        let mut error_bound_ns = 0u64;
        let mut unreadable = false;
        let mut spill = self.spill.take();
        let mut none = sweep::NoSpill;
        let spill: &mut dyn IntervalSpill = match spill.as_deref_mut() {
            Some(s) => s,
            None => &mut none,
        };
        let [a, b, c, d, e, f, g] = &mut self.unions;
        let mut classes: [MergedIntervals<'_>; class::CLASSES] =
            [a, b, c, d, e, f, g].map(|u| match u {
                collect::ClassUnion::Memory(u) => {
                    u.flush_pending();
                    error_bound_ns = error_bound_ns.saturating_add(u.error_bound_ns());
                    MergedIntervals::new(&[], u.intervals(), 0)
                }
                collect::ClassUnion::Spilling(u) => {
                    let r = u.retired_ns();
                    let (runs, live, complete) = u.parts();
                    if !complete {
                        // A run could not be written: what it held is not in the merge.
                        error_bound_ns = error_bound_ns.saturating_add(r);
                        unreadable = true;
                    }
                    // The seven classes merge at once: an eighth of the summary's buffers each.
                    MergedIntervals::new(runs, live, MERGE_BUFFER_INTERVALS / 8)
                }
            });
        let (parts, failed) = sweep::breakdown(&mut classes, spill, &windows);
        drop(classes);
        for (i, &f) in failed.iter().enumerate() {
            if f {
                unreadable = true;
                if let collect::ClassUnion::Spilling(u) = &self.unions[i] {
                    error_bound_ns = error_bound_ns.saturating_add(u.retired_ns());
                }
            }
        }
        for (s, p) in steps.iter_mut().zip(parts) {
            s.parts_ns = p;
        }
        StepsFound {
            steps,
            pattern: self.pattern().text().into(),
            host_names: self.host_names,
            host: self.host,
            dropped_steps: self.dropped_steps,
            dropped_host: self.dropped_host,
            host_names_folded: self.host_names_folded,
            error_bound_ns,
            unreadable,
        }
    }
}

/// Where a step's energy and pauses come from: the join, when it ran, or, for the steps alone,
/// the trace's own power counters.
pub struct JoinView<'a> {
    /// Unix ns of trace `ts` 0 (`None`: no alignment, so no energy).
    pub offset_ns: Option<i64>,
    /// The trace devices the trace keeps busy, in the join's order.
    pub devices: Vec<i64>,
    /// The GPU map from trace device to recorded GPU.
    pub gpu_map: &'a GpuMap,
    /// The recording (a trace.csv, or the trace's counters keyed by trace device).
    pub recording: Option<&'a Recording>,
    /// Where the recording came from: `"telemetry"` or `"trace_counters"`.
    pub power_source: &'static str,
    /// The join's listed pauses, with the join (the outliers name those inside them).
    pub pauses: Option<&'a [PauseResult]>,
    /// The counters' report, for the steps alone (with the join it is the join's).
    pub trace_counters: Option<TraceCountersReport>,
}

impl<'a> JoinView<'a> {
    /// The view of a finished join with these options and recording.
    pub fn of_join(
        report: &'a JoinReport,
        options: &'a JoinOptions,
        recording: Option<&'a Recording>,
        power_source: &'static str,
    ) -> JoinView<'a> {
        JoinView {
            offset_ns: report.alignment.as_ref().map(|a| a.offset_ns),
            devices: report.pause_devices.iter().map(|d| d.device).collect(),
            gpu_map: &options.gpu_map,
            recording,
            power_source,
            pauses: Some(&report.pauses),
            trace_counters: None,
        }
    }
}

fn spread(values: &[f64]) -> Option<Spread> {
    Some(Spread {
        median: robust::median(values)?,
        p90: robust::percentile(values, 0.9)?,
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl StepsFound {
    /// The report: the steps with their outliers, energies (with a recording) and pauses
    /// (with the join).
    pub fn report(mut self, mut join: Option<JoinView<'_>>) -> StepsReport {
        let trace_counters = join.as_mut().and_then(|j| j.trace_counters.take());
        let durations: Vec<u64> = self.steps.iter().map(|s| s.dur_ns).collect();
        let outlier = robust::outliers(&durations);
        let n = self.steps.len();
        let dur_ms: Vec<f64> = durations.iter().map(|&d| ms(d)).collect();
        let part_ms: Vec<[f64; PARTS]> = self
            .steps
            .iter()
            .map(|s| core::array::from_fn(|i| ms(s.parts_ns[i])))
            .collect();
        let medians: Option<[f64; PARTS]> = (n > 0).then(|| {
            core::array::from_fn(|i| {
                let v: Vec<f64> = part_ms.iter().map(|p| p[i]).collect();
                robust::median(&v).unwrap_or(0.0)
            })
        });
        let median_ms = robust::median(&dur_ms);
        // Energy: the GPUs a user_annotation is charged, as the join's annotation energy.
        let power = join.as_ref().and_then(|j| {
            let rec = j.recording?;
            let align = Alignment::new(j.offset_ns, None)?;
            let slots: Vec<usize> = if j.devices.is_empty() {
                rec.gpu_slots().collect()
            } else {
                let mut s: Vec<usize> = j
                    .devices
                    .iter()
                    .filter_map(|&d| rec.slot(j.gpu_map.gpu_index(d)))
                    .collect();
                s.sort_unstable();
                s.dedup();
                s
            };
            let charged: Vec<Charged> = slots.iter().map(|&s| Charged::new(rec, s)).collect();
            Some((rec, align, charged))
        });
        let mut entries: Vec<StepEntry> = Vec::with_capacity(n);
        for (i, s) in self.steps.iter().enumerate() {
            let energy = power.as_ref().map(|(rec, align, charged)| {
                energy::step_energy(
                    rec,
                    align,
                    charged,
                    s.ts_ns,
                    s.ts_ns.saturating_add_unsigned(s.dur_ns),
                )
            });
            entries.push(StepEntry {
                name: s.name.clone(),
                index: s.index,
                start_ts_us: NsDecimal(s.ts_ns),
                duration_ms: dur_ms[i],
                breakdown_ms: Breakdown::from_ns(&s.parts_ns),
                outlier: outlier[i],
                energy,
                duration_ns: s.dur_ns,
                parts_ns: s.parts_ns,
            });
        }
        self.host.sort_unstable_by_key(|h| h.start_ns);
        let longest_host_ns = self.host.iter().map(|h| h.end_ns - h.start_ns).max();
        let mut outliers = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            if !outlier[i] {
                continue;
            }
            let med = medians.unwrap_or([0.0; PARTS]);
            let (mut best, mut best_excess) = (Part::Kernel, f64::NEG_INFINITY);
            for p in ALL {
                let x = part_ms[i][p as usize] - med[p as usize];
                if x > best_excess {
                    (best, best_excess) = (p, x);
                }
            }
            let end_ns = s.ts_ns.saturating_add_unsigned(s.dur_ns);
            outliers.push(Outlier {
                name: s.name.clone(),
                index: s.index,
                start_ts_us: NsDecimal(s.ts_ns),
                duration_ms: dur_ms[i],
                excess_ms: dur_ms[i] - median_ms.unwrap_or(0.0),
                largest_part: best.key(),
                largest_part_excess_ms: best_excess,
                top_host_ops: self.top_host_ops(s.ts_ns, end_ns, longest_host_ns.unwrap_or(0)),
                pauses: join
                    .as_ref()
                    .and_then(|j| j.pauses)
                    .map(|p| pauses_in(p, s.ts_ns, end_ns)),
            });
        }
        let mut warnings = Vec::new();
        if let Some(c) = &trace_counters {
            c.warnings(&mut warnings);
            if power.is_none() {
                warnings.push(
                    "the trace carries power/utilization counters, but they give no step energy: the trace has no baseTimeNanoseconds, or none of their samples is usable"
                        .into(),
                );
            }
        }
        if self.dropped_steps > 0 {
            warnings.push(format!(
                "{} steps past max_steps ({} kept) are not listed",
                self.dropped_steps, n
            ));
        }
        // The host ops left out matter only to the outliers' top host ops.
        let host_partial = self.dropped_host > 0 && !outliers.is_empty();
        if host_partial {
            warnings.push(format!(
                "{} host ops past max_step_host_ops are left out of the outliers' top host ops",
                self.dropped_host
            ));
        }
        if self.unreadable {
            warnings.push(
                "the temporary file of the steps' intervals could not be written or read back: the breakdown is approximate within the stated bound"
                    .into(),
            );
        }
        if self.host_names_folded {
            warnings.push("host op names past the name table count as \"(other)\"".into());
        }
        let approximations =
            (self.error_bound_ns > 0 || host_partial).then(|| StepApproximations {
                breakdown_error_bound_ms: ms(self.error_bound_ns),
                top_host_ops_partial: host_partial,
            });
        let energies: Vec<f64> = entries
            .iter()
            .filter_map(|e| e.energy.as_ref().and_then(|x| x.gpu_energy_j))
            .collect();
        let update_periods = power.as_ref().map(|(rec, _, charged)| {
            charged
                .iter()
                .map(|c| UpdatePeriod {
                    gpu_index: rec.gpu_index(c.slot),
                    update_period_ms: c.update_ns.map(|p| p as f64 / 1e6),
                    measured_on: if rec.counter_readings(c.slot).len() >= 2 {
                        "gpu_energy_mJ"
                    } else {
                        "gpu_power_W"
                    },
                })
                .collect()
        });
        let note = (n == 0).then(|| {
            format!(
                "no complete user_annotation matches the step pattern {}: no steps",
                self.pattern
            )
        });
        StepsReport {
            steps: entries,
            step_summary: StepSummary {
                pattern: self.pattern.clone(),
                n,
                duration_ms: spread(&dur_ms),
                breakdown_ms_median: medians.map(|m| Breakdown::from_ms(&m)),
                outlier_rule: result::OUTLIER_RULE,
                outliers,
                gpu_energy_j: power.as_ref().map(|_| spread(&energies)),
                update_periods,
                power_source: power.as_ref().and(join.as_ref()).map(|j| j.power_source),
                trace_counters,
                note,
                warnings,
                approximations,
            },
        }
    }

    /// The host op names by time clipped to `[t0, t1)`, the largest [`TOP_HOST_OPS`] (ties:
    /// by name).
    fn top_host_ops(&self, t0: i64, t1: i64, longest_ns: i64) -> Vec<HostOpTime> {
        let from = self
            .host
            .partition_point(|h| h.start_ns < t0.saturating_sub(longest_ns));
        let mut by_name: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for h in &self.host[from..] {
            if h.start_ns >= t1 {
                break;
            }
            let (a, b) = (h.start_ns.max(t0), h.end_ns.min(t1));
            if b > a {
                let e = by_name.entry(h.name).or_default();
                e.0 += b.abs_diff(a);
                e.1 += 1;
            }
        }
        let name = |id: u32| -> String {
            if id == u32::MAX {
                "(other)".into()
            } else {
                String::from_utf8_lossy(self.host_names.key(id)).into_owned()
            }
        };
        let mut rows: Vec<(String, u64, u64)> = by_name
            .into_iter()
            .map(|(id, (t, k))| (name(id), t, k))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        rows.truncate(TOP_HOST_OPS);
        rows.into_iter()
            .map(|(name, t, n)| HostOpTime {
                name,
                time_ms: ms(t),
                n,
            })
            .collect()
    }
}

/// The join's listed pauses that overlap `[t0, t1)`.
fn pauses_in(pauses: &[PauseResult], t0: i64, t1: i64) -> Vec<StepPause> {
    pauses
        .iter()
        .filter(|p| {
            let start = p.start_ts_us.ns();
            // The pause's length back in ns (it was ns / 1e6; no_std has no `round`).
            let end = start.saturating_add((p.duration_ms * 1e6 + 0.5) as i64);
            start < t1 && end > t0
        })
        .map(|p| StepPause {
            device: p.device,
            start_ts_us: p.start_ts_us,
            duration_ms: p.duration_ms,
        })
        .collect()
}
