//! `diff`: two runs compared (docs/diff.md). Each input is a trace or a summary with its
//! mergeable section; the job ([`DiffJob`]) reads A then B through the trace job or the merge
//! job, keeps only the figures compared ([`side`]), and compares them ([`compare`]): categories,
//! ops matched by (category, name) and ranked by the change of their duration sum, the join's
//! pauses, energy per annotation with recordings, the steps ([`steps`], `--steps`), and a
//! verdict line. [`shift`] is the step
//! times' comparison (Hodges-Lehmann, with its distribution-free 95 % interval).
pub mod compare;
pub mod job;
pub mod kind;
pub mod options;
pub mod shift;
pub mod side;
pub mod steps;
#[cfg(test)]
mod steps_tests;
#[cfg(test)]
mod tests;

pub use compare::{CompareOptions, DiffResult, OpCounts, OpDiff, OpStatus};
pub use job::{A, B, DiffError, DiffJob, DiffOptions, TELEMETRY_A, TELEMETRY_B};
pub use kind::{InputKind, SNIFF_BYTES, input_kind};
pub use options::{DiffJobOptions, DiffOptionError, TelemetryJson};
pub use shift::{StepShift, step_shift, step_shift_sorted};
pub use side::{Side, SideSteps};
pub use steps::{PartDiff, StepEnergyDiff, StepsDiff, WorkEnergy};
