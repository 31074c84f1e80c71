//! Trace summary accumulator (docs/cli.md, "trace"): per-category event counts, duration sums and busy
//! time (the union of `[ts, ts + dur)`), the top (category, name) ops with the `stats` of
//! their durations, counts by phase, totals and warnings.
//!
//! Feed it the events of an [`EventScanner`](crate::json::EventScanner) with
//! [`TraceSummary::add`], then call [`TraceSummary::finish`] with the scanner's end state.
//!
//! # What counts as a duration
//! - `X` events with a numeric `ts` and a numeric, non-negative `dur`.
//! - `B`/`E` pairs matched per (`pid`, `tid`) as a stack (an `E` closes the latest open `B` of
//!   its thread; the pair takes the `B`'s `cat` and `name`). Open slices are bounded by
//!   [`Limits::max_open_slices`]; unmatched `E`s and never-closed `B`s are counted.
//!
//! Departures from the reference `trace_summary`, each counted in `warnings`: `dur: true` is
//! not 1 µs, `NaN`, negative or missing durations are skipped, and an `X` event whose `dur` or
//! `ts` is a numeric string counts (the reference skips it, or stops on a string `ts`). Kept for parity: an event
//! without `cat` is counted under category `"uncategorized"` but its op key uses category `""`.
//!
//! # Numbers
//! `ts`/`dur` arrive as integer nanoseconds, so category `duration_sum_us` and `busy_union_us`
//! are exact integers converted once to `f64` µs (`ns / 1000.0`). Per-op stats use each
//! duration as `f64` µs, which equals Python's `float()` of the same text.
//!
//! # Modes
//! - Exact ([`Limits::EXACT`], `alloc`): every duration is kept for exact percentiles.
//! - Budget ([`Limits::NATIVE`], the native CLI's default; [`Limits::PAGE`] on the web page):
//!   the bounded mode below with limits large enough that ordinary traces stay exact. With an
//!   [`IntervalSpill`] ([`TraceSummary::set_spill`]) the busy unions stay exact past
//!   `max_intervals` (retired intervals go out as sorted runs, merged at the end), and with an
//!   [`EventReplay`] ([`TraceSummary::set_replay`]) the listed ops' percentiles stay exact past
//!   `max_exact_values` (further passes over the input at `finish`): native `trace` gives both,
//!   so only the op/category/name limits remain (docs/trace-exactness.md).
//! - Bounded: ops beyond `max_ops` fold into an `"(other)"` row, categories beyond
//!   `max_categories` into an `"(other)"` category, and the busy unions (per category and the
//!   total) keep at most `max_intervals` live intervals in all: past it, the largest retires
//!   its older half into a sum behind a watermark. Time-ordered input stays exact; time before
//!   a watermark is counted as busy and reported as the error bound under `approximations` (the
//!   union is at least the exact one and at most that much above it). Durations are kept exactly up to
//!   `max_exact_values` in all; an op that needs more moves to a
//!   [`QuantileSketch`](crate::sketch::QuantileSketch) (16 KiB, once per op) whose percentiles
//!   are within [`RELATIVE_ERROR`](crate::sketch::RELATIVE_ERROR) (1/129) and whose `n`, `mean`,
//!   `min`, `max` stay exact; `approximations` says how many ops and the bound. Memory:
//!   `4 × max_exact_values` bytes of durations (counted by allocated capacity; a duration
//!   below 2^32 ns takes 4 bytes, a longer one 8) plus 16 KiB per sketched op (at most
//!   `max_ops`), plus about `48 × max_intervals` bytes for the unions.
//!
//! Without `alloc` this module is empty: the summary keeps growable tables.

#[cfg(feature = "alloc")]
mod accumulator;
#[cfg(feature = "alloc")]
pub mod batch;
#[cfg(feature = "alloc")]
pub(crate) mod busy;
#[cfg(feature = "alloc")]
mod histpass;
#[cfg(feature = "alloc")]
pub(crate) mod interner;
#[cfg(feature = "alloc")]
mod op;
#[cfg(feature = "alloc")]
mod refine;
#[cfg(feature = "alloc")]
mod result;
#[cfg(feature = "alloc")]
pub(crate) mod spill;
#[cfg(feature = "alloc")]
pub use accumulator::*;
#[cfg(feature = "alloc")]
pub use refine::{EventReplay, PassError, ReplayError};
#[cfg(feature = "alloc")]
pub use result::*;
#[cfg(feature = "alloc")]
pub use spill::{IntervalSpill, MemorySpill};
