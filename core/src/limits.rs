//! Caller-set memory limits.

/// Bounds that the caller sets at construction. Memory never grows past them; where a bound
/// forces an approximation, the result says so and carries an error bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest string (category, name, label) kept per event, in bytes. Longer strings are
    /// truncated at a UTF-8 boundary and counted as a warning.
    pub max_string_bytes: usize,
    /// Largest single trace event accepted, in bytes; `usize::MAX` means no limit. An event's
    /// size costs no memory (`args` and other fields are skipped without copying), so every
    /// preset reads events of any size; larger ones are skipped and counted in `warnings`.
    pub max_event_bytes: usize,
    /// Distinct (category, name) ops tracked; beyond it, ops fold into an "(other)" row.
    pub max_ops: usize,
    /// Bytes of distinct (category, name) op keys kept; a new op that would pass it folds into
    /// the "(other)" row, as past `max_ops`.
    pub max_name_bytes: usize,
    /// Distinct categories tracked; beyond it, categories fold into "(other)".
    pub max_categories: usize,
    /// Disjoint intervals kept live over all busy-time unions of a trace summary. Past it, the trace summary retires the older half of the largest
    /// union behind a watermark (exact for time-ordered input; time reaching back before the
    /// watermark is reported as the error bound). `usize::MAX` = exact.
    pub max_intervals: usize,
    /// Budget for the exact per-op durations, in 4-byte units of allocated capacity across all
    /// ops (a duration below 2^32 ns takes one unit, a longer one two); an op that cannot grow
    /// within it switches to a quantile sketch with a stated relative error. `usize::MAX` =
    /// exact.
    pub max_exact_values: usize,
    /// Open `B` events (per pid/tid stack entries) awaiting their `E`.
    pub max_open_slices: usize,
    /// Marks kept by the trace.csv analyzer; later marks are counted, not listed, and open no
    /// spans (the selected pair's marks are always kept). Distinct labels interned are bounded
    /// by it too, and kept labels are cut to `max_string_bytes` (the selection still matches
    /// whole labels).
    pub max_marks: usize,
    /// Spans (mark pairs and stretches between consecutive marks) kept by the trace.csv
    /// analyzer, open ones included; each costs ~0.6 KB per GPU. Spans past it are not analyzed
    /// and are counted in a warning; the kept spans' results are unchanged, and the selected
    /// `--start`/`--end` window is not a span (always analyzed).
    pub max_spans: usize,
    /// GPUs tracked by the trace.csv analyzer.
    pub max_gpus: usize,
    /// Steps kept by `trace --steps` (docs/steps.md); later steps are counted in a warning.
    pub max_steps: usize,
    /// Disjoint intervals kept live per class by `trace --steps` (7 classes, 16 bytes each);
    /// past it, with a spill (native: a temporary file), the older half is written out and
    /// merged back at the end (exact); without one, the class's union coalesces its smallest
    /// gaps and the breakdown states the error bound. `usize::MAX` = exact in memory.
    pub max_step_intervals: usize,
    /// Host op spans (24 bytes each) kept by `trace --steps` for the outliers' top host ops;
    /// past it later ops are left out of them, stated.
    pub max_step_host_ops: usize,
}

impl Limits {
    /// Exact results with unbounded growth (native `trace --exact`; see [`Limits::NATIVE`]).
    pub const EXACT: Limits = Limits {
        max_string_bytes: 4096,
        max_event_bytes: usize::MAX,
        max_ops: usize::MAX,
        max_name_bytes: usize::MAX,
        max_categories: usize::MAX,
        max_intervals: usize::MAX,
        max_exact_values: usize::MAX,
        max_open_slices: 1 << 20,
        max_marks: 1 << 20,
        // Every kept mark opens at most a stretch and a pair: no span of a kept mark is lost.
        max_spans: 1 << 21,
        max_gpus: 64,
        max_steps: usize::MAX,
        max_step_intervals: usize::MAX,
        max_step_host_ops: usize::MAX,
    };

    /// The native CLI's default (`trace`, `summarize`): exact results in bounded memory (peak
    /// RSS within 64 MiB) for traces up to the stated limits, approximations past them stated
    /// under `approximations` with their bounds. Tables at most about 40 MiB: op and category
    /// names 8 MiB (at most 131,072 ops and 1,024 categories; ~100,000 ops at names of up to 80
    /// bytes) plus ~7 MiB of per-op state, exact durations 24 MiB (6 Mi units: 6 Mi durations
    /// below 4.29 s, counted by allocated capacity), busy unions 2^18 live intervals in all (16
    /// bytes each, up to ~3x that after a union retires half: ~12 MiB), open `B` slices and
    /// their threads (~4 MiB). Past the durations budget the listed ops' percentiles come from
    /// further passes over the file, and past the interval budget the retired intervals go to a
    /// temporary file (native `trace` and `summarize`; `flinch_core` alone states the
    /// approximation instead). Events of any size are read (`args` is skipped without copying).
    pub const NATIVE: Limits = Limits {
        max_string_bytes: 2048,
        max_event_bytes: usize::MAX,
        max_ops: 1 << 17,
        max_name_bytes: 8 << 20,
        max_categories: 1024,
        max_intervals: 1 << 18,
        max_exact_values: 6 << 20,
        max_open_slices: 65_536,
        max_marks: 65_536,
        // Not used by traces; as EXACT, every kept mark's spans (2 per mark).
        max_spans: 1 << 17,
        max_gpus: 64,
        // Steps: ~1 MiB of steps; the classes' unions 2^15 live intervals each (16 bytes, up
        // to ~3x that in storage after a retire: ~11 MiB for all 7), the rest spilled; host op
        // spans 6 MiB.
        max_steps: 1 << 16,
        max_step_intervals: 1 << 15,
        max_step_host_ops: 1 << 18,
    };

    /// The web page: [`Limits::NATIVE`] with room for more exact durations and live intervals
    /// (the page cannot spill to a file or read the file again), within 256 MiB of WebAssembly
    /// memory: durations 64 MiB (16 Mi units), busy unions 2^21 live intervals (up to ~96
    /// MiB). Past them the output states the approximation and its bound. For trace.csv it
    /// keeps [`Limits::BOUNDED`]'s marks, spans and GPUs.
    pub const PAGE: Limits = Limits {
        max_exact_values: 16 << 20,
        max_intervals: 1 << 21,
        // trace.csv: as BOUNDED (spans cost ~0.6 KB per GPU each).
        max_marks: Limits::BOUNDED.max_marks,
        max_spans: Limits::BOUNDED.max_spans,
        max_gpus: Limits::BOUNDED.max_gpus,
        ..Limits::NATIVE
    };

    /// A bounded budget of a few MiB, for embedded agents (`trace --bounded`).
    pub const BOUNDED: Limits = Limits {
        max_string_bytes: 1024,
        max_event_bytes: usize::MAX,
        max_ops: 4096,
        max_name_bytes: 1 << 20,
        max_categories: 256,
        max_intervals: 65_536,
        max_exact_values: 1 << 20,
        max_open_slices: 65_536,
        max_marks: 65_536,
        // ~25 MiB at 16 GPUs, ~1.5 MiB at one.
        max_spans: 2048,
        max_gpus: 16,
        max_steps: 4096,
        max_step_intervals: 8192,
        max_step_host_ops: 16_384,
    };
}

impl Default for Limits {
    /// The limits of the one default exactness ([`Exactness::default`](crate::Exactness)):
    /// [`Limits::NATIVE`].
    fn default() -> Self {
        crate::Exactness::default().limits()
    }
}
