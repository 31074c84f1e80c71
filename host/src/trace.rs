//! The std driver of the trace job (`flinch_core::trace_job::TraceJob`: the summary, the join,
//! the mergeable section): it answers what the job needs from the file system, with the
//! fastest source there is for each read, while the job decides what is read and computes the
//! result.
//!
//! The first read takes one of four routes, all giving the job the same events in the same
//! order: a plain regular file of 16 MiB or more on N scan threads over alternate segments
//! ([`parallel`]); a regular `.gz` of 2 MiB or more with N of 3 or more, inflated by one
//! thread into segments for N scan threads ([`parallel::gz`]); other inputs through the input's reader thread (`crate::input`, which
//! inflates `.json.gz`, detected by its magic bytes), then one scan thread beside the job's
//! ([`pipeline`]), or, for gzip on two cores or fewer, the bytes written to the job on this
//! thread ([`pipeline::first_read_sequential`]). With the join, a `.gz` keeps
//! restart points on that read for the ranges of the second. After it, [`ranges::answer`]
//! gives the job the byte ranges or the whole trace it asks for. With
//! [`Exactness::Native`](flinch_core::Exactness), the summary spills busy intervals to a
//! temporary file and reads the trace again for percentiles past its limits (`crate::exact_io`).
//! A cut file (or a cut `.gz`) is summarized from what was read, with a warning.
use std::path::Path;

use flinch_core::Exactness;
use flinch_core::job::Job;
use flinch_core::summary::{DEFAULT_TOP_OPS, TraceSummaryResult};
use flinch_core::trace_job::{TraceJob, TraceJobOptions, TraceJobResult};

use crate::input::{InputFile, Passes};

#[cfg(unix)]
pub mod parallel;
pub mod pipeline;
#[cfg(unix)]
pub mod ranges;
pub mod steps;
#[cfg(test)]
pub(crate) mod test_files;

/// Options of one trace's summary without the join: `trace FILE [--top N] [--bounded |
/// --exact] [--mergeable] [--threads N]`.
#[derive(Clone, Copy, Debug)]
pub struct SummaryOptions {
    /// How many ops to list (`--top`).
    pub top: usize,
    /// `--bounded` / `--exact` (default: native).
    pub exactness: Exactness,
    /// `--mergeable`: add the section `flinch-trace merge` combines (docs/merge.md).
    pub mergeable: bool,
    /// Scan threads for a large plain file (`--threads`; `None`: the available parallelism).
    pub threads: Option<usize>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            top: DEFAULT_TOP_OPS,
            exactness: Exactness::default(),
            mergeable: false,
            threads: None,
        }
    }
}

/// How the driver reads a trace for its job.
#[derive(Default)]
pub struct ReadOptions<'a> {
    /// Keep the summary exact past its limits with a temporary file and further reads (the
    /// input must then be open for several passes).
    pub spills: bool,
    /// Scan threads for a large plain file (`None`: the available parallelism, up to 16).
    pub threads: Option<usize>,
    /// Called as the first read goes, with the bytes read so far and the input's size.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
}

/// The first read of `job`'s trace from `input`, by the fastest route (see the module docs).
///
/// # Errors
/// A read or gzip error, or malformed JSON outside events: one line naming the byte offset.
pub fn first_read(
    input: &InputFile,
    job: &mut TraceJob,
    read: ReadOptions<'_>,
) -> Result<(), String> {
    let ReadOptions {
        spills,
        threads,
        mut progress,
    } = read;
    #[cfg(unix)]
    if spills {
        crate::exact_io::equip(job, input);
    }
    #[cfg(not(unix))]
    let _ = spills;
    // A large plain regular file: scan threads on alternate segments. A FIFO or pipe never: it
    // is read once, in order.
    #[cfg(unix)]
    let threads = parallel::threads(threads);
    #[cfg(unix)]
    if let Some(plan) = parallel::plan(input, threads) {
        let size = plan.size();
        return parallel::first_read(plan, job, |done, _| {
            if let Some(p) = progress.as_deref_mut() {
                p(done, size);
            }
        });
    }
    #[cfg(not(unix))]
    let _ = threads;
    // A join that never reads the trace again (its pauses counted, none listed) reads it as
    // the summary alone does.
    let join = job
        .options()
        .join
        .as_ref()
        .is_some_and(|j| j.may_read_again());
    // A large .gz with three scan threads or more: one inflater feeding them (`parallel::gz`).
    #[cfg(unix)]
    let many = parallel::gz::input_options(input, threads);
    #[cfg(not(unix))]
    let many = None;
    let options = many.unwrap_or_default();
    // For the join, a .gz keeps restart points on this read for its second (`ranges`).
    let bytes = if join {
        input.read_indexed_with(options)?
    } else {
        input.read_with(options)?
    };
    #[cfg(unix)]
    if many.is_some() && bytes.is_gzip() {
        return parallel::gz::first_read(bytes, threads, job, |done, size| {
            if let Some(p) = progress.as_deref_mut() {
                p(done, size);
            }
        });
    }
    let read = bytes.progress();
    let update = || {
        if let Some(p) = progress.as_deref_mut() {
            p(read.bytes_read(), read.total_bytes());
        }
    };
    // Inflating takes most of a core: with two cores or fewer, scanning and summarizing on
    // one thread beside it is faster than on two, with the join's first pass as without it
    // (the job's own scan feeds it, byte offsets and all).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if bytes.is_gzip() && cores <= 2 {
        pipeline::first_read_sequential(bytes, job, update)
    } else {
        pipeline::first_read(bytes, job, update)
    }
}

/// The job over `input` from its first read to its result: the first read ([`first_read`]),
/// then whatever the job still needs ([`ranges::answer`]).
///
/// # Errors
/// As [`first_read`], or a read error of a further read.
pub fn run(
    input: &InputFile,
    options: TraceJobOptions,
    read: ReadOptions<'_>,
) -> Result<TraceJobResult, String> {
    let mut job = TraceJob::new(options);
    first_read(input, &mut job, read)?;
    #[cfg(unix)]
    ranges::answer(input, &mut job, None)?;
    job.finish().map_err(|e| e.to_string())
}

/// One trace file's summary, named `source` (the runs summary's and the CLI's without the join),
/// with `progress` as in [`ReadOptions`].
///
/// # Errors
/// The file cannot be opened or read, or is not a trace: the message printed after
/// `flinch-trace trace: FILE: `.
pub fn summarize_file(
    path: &Path,
    source: &str,
    opts: &SummaryOptions,
    progress: Option<&mut dyn FnMut(u64, u64)>,
) -> Result<TraceSummaryResult, String> {
    let spills = opts.exactness.spills();
    // Further passes (spills) read the file again through this one open input.
    let passes = if spills { Passes::Several } else { Passes::One };
    let input = InputFile::open(path, passes)?;
    let options = TraceJobOptions {
        source: source.to_string(),
        limits: opts.exactness.limits(),
        top: opts.top,
        durations_out: None,
        mergeable: opts.mergeable,
        steps: None,
        join: None,
    };
    let read = ReadOptions {
        spills,
        threads: opts.threads,
        progress,
    };
    run(&input, options, read).map(|r| r.summary)
}

/// The JSON object `trace FILE --json [--mergeable]` prints for one file without the join
/// (without the trailing newline), with no progress line; `Err` holds the message the CLI
/// prints after `flinch-trace trace: FILE: `. The Python wheel's `trace_summary`.
///
/// # Errors
/// As [`summarize_file`].
pub fn summary_json(path: &Path, opts: &SummaryOptions) -> Result<String, String> {
    let source = path.display().to_string();
    summarize_file(path, &source, opts, None).map(|r| r.to_json())
}
