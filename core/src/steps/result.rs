//! The steps' result types (`"steps"`, `"step_summary"`), serialized in field order.
use alloc::string::String;
use alloc::vec::Vec;
use serde::Serialize;

use super::class::{PARTS, Part};
use super::energy::StepEnergy;
use crate::join::TsUs;

/// The steps' keys of `trace --steps --json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepsReport {
    /// One entry per step, in time order.
    pub steps: Vec<StepEntry>,
    /// Over the steps.
    pub step_summary: StepSummary,
}

/// A step's wall time split by [`Part`], ms (the parts sum to the step's duration in ns).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Breakdown {
    /// `kernel`.
    pub kernel: f64,
    /// `gpu_memcpy`.
    pub memcpy: f64,
    /// `gpu_memset`.
    pub memset: f64,
    /// NCCL/RCCL kernels.
    pub communication: f64,
    /// `cuda_runtime`, `cuda_driver`, while no GPU class is active.
    pub runtime: f64,
    /// `enumerate(DataLoader)*` ops.
    pub dataloader: f64,
    /// Other `cpu_op`s.
    pub cpu_exec: f64,
    /// Nothing profiled.
    pub other: f64,
}

impl Breakdown {
    /// From parts in ns.
    pub fn from_ns(p: &[u64; PARTS]) -> Breakdown {
        Breakdown::from_ms(&core::array::from_fn(|i| p[i] as f64 / 1e6))
    }

    /// From parts in ms, in [`Part`] order.
    pub fn from_ms(p: &[f64; PARTS]) -> Breakdown {
        Breakdown {
            kernel: p[0],
            memcpy: p[1],
            memset: p[2],
            communication: p[3],
            runtime: p[4],
            dataloader: p[5],
            cpu_exec: p[6],
            other: p[7],
        }
    }

    /// The part `p`, ms.
    pub fn get(&self, p: Part) -> f64 {
        match p {
            Part::Kernel => self.kernel,
            Part::Memcpy => self.memcpy,
            Part::Memset => self.memset,
            Part::Communication => self.communication,
            Part::Runtime => self.runtime,
            Part::Dataloader => self.dataloader,
            Part::CpuExec => self.cpu_exec,
            Part::Other => self.other,
        }
    }
}

/// One step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepEntry {
    /// The annotation's name.
    pub name: String,
    /// The integer after the name's last `#`, else the step's 0-based ordinal in time order.
    pub index: u64,
    /// Start on the trace's clock, µs (exact).
    pub start_ts_us: TsUs,
    /// Length, ms.
    pub duration_ms: f64,
    /// Where the time went.
    pub breakdown_ms: Breakdown,
    /// The step's duration stands out (the rule: `step_summary.outlier_rule`).
    pub outlier: bool,
    /// With power known (`--telemetry`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub energy: Option<StepEnergy>,
    /// Length, ns (exact; not printed: `duration_ms` is).
    #[serde(skip)]
    pub duration_ns: u64,
    /// The parts, ns, indexed by [`Part`] (exact; they sum to `duration_ns`).
    #[serde(skip)]
    pub parts_ns: [u64; PARTS],
}

/// Median, p90 (numpy-linear) and max of a figure over the steps.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

/// A host op's time inside a step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HostOpTime {
    /// The `cpu_op`'s name (`"(other)"`: names past the table).
    pub name: String,
    /// Its events' time clipped to the step, summed (nested events each count), ms.
    pub time_ms: f64,
    /// Its events that overlap the step.
    pub n: u64,
}

/// A GPU pause (from the join) that overlaps a step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepPause {
    /// The trace device.
    pub device: i64,
    /// Start, µs (exact).
    pub start_ts_us: TsUs,
    /// Length, ms (the whole pause, which may reach past the step).
    pub duration_ms: f64,
}

/// A step whose duration stands out.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Outlier {
    /// The step's name.
    pub name: String,
    /// Its index.
    pub index: u64,
    /// Its start, µs (exact).
    pub start_ts_us: TsUs,
    /// Its length, ms.
    pub duration_ms: f64,
    /// Its length less the median step's, ms.
    pub excess_ms: f64,
    /// The part that grew most against the median of that part over the steps.
    pub largest_part: &'static str,
    /// By how much, ms.
    pub largest_part_excess_ms: f64,
    /// The `cpu_op` names by time clipped to the step, the 5 largest.
    pub top_host_ops: Vec<HostOpTime>,
    /// With the join: the listed pauses that overlap the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pauses: Option<Vec<StepPause>>,
}

/// A charged GPU's measured update period.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct UpdatePeriod {
    /// The recorded GPU.
    pub gpu_index: i64,
    /// The median time between changes of its energy counter (of its power reading without a
    /// counter), ms; null with fewer than two changes.
    pub update_period_ms: Option<f64>,
    /// `gpu_energy_mJ` or `gpu_power_W`: which reading the period was measured on.
    pub measured_on: &'static str,
}

/// What passing a limit made approximate.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct StepApproximations {
    /// Each part of each step is within this of its exact value, ms (the classes' unions past
    /// `max_step_intervals` coalesced their smallest gaps).
    pub breakdown_error_bound_ms: f64,
    /// The outliers' top host ops count only the host ops kept (`max_step_host_ops`).
    pub top_host_ops_partial: bool,
}

/// Over the steps.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepSummary {
    /// The step pattern (`--step-name`; default `ProfilerStep#<N>`).
    pub pattern: String,
    /// Steps.
    pub n: usize,
    /// Of `duration_ms` (null without steps).
    pub duration_ms: Option<Spread>,
    /// Each part's median over the steps, ms (null without steps).
    pub breakdown_ms_median: Option<Breakdown>,
    /// The outlier rule.
    pub outlier_rule: &'static str,
    /// The outlier steps, in time order.
    pub outliers: Vec<Outlier>,
    /// With power known: of `gpu_energy_j` over the steps that have one (null when none has).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_energy_j: Option<Option<Spread>>,
    /// With power known: each charged GPU's update period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_periods: Option<Vec<UpdatePeriod>>,
    /// With power known: where it came from, `"telemetry"` (a recording) or `"trace_counters"`
    /// (the trace's own power counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_source: Option<&'static str>,
    /// For the steps alone (no join), when the trace carries power counters: which, and how
    /// they map to devices (with the join, its `trace_counters` says it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_counters: Option<crate::join::TraceCountersReport>,
    /// Why the list is empty, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Steps or host ops past the limits, counted.
    pub warnings: Vec<String>,
    /// Present only past a limit that makes a figure approximate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximations: Option<StepApproximations>,
}

/// The outlier rule as the output states it.
pub const OUTLIER_RULE: &str =
    "duration - median > max(3 * 1.4826 * MAD, 0.10 * median), MAD = median |duration - median|";
