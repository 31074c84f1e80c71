//! `flinch-trace summarize --runs DIR --out FILE [--skip-traces]`: summarizes a benchmark runs
//! folder exactly as `summarize_host_telemetry.py` does (same keys, nesting, `source` strings
//! and printed line), keeping the runs the reference would crash on or lose, with `warnings`.
//! The job is `flinch_core::runs::RunsFolder` (docs/summarize.md), driven from the file system
//! by `flinch_host::runs`; this module holds the command line, the output file and the printing,
//! and gives the driver the trace summary of `flinch-trace trace`.
//!
//! Exit status: 0 when the summary was written (warnings inside it), 1 when the output file
//! cannot be written or is one of the inputs, 2 for command-line usage errors. `--out` is
//! written through `crate::output` (a temporary file renamed over it on success).
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flinch_core::runs::MAX_LINE_BYTES;
use flinch_host::runs::{ListedRuns, SummarizeOptions};

use crate::CmdResult;

/// Arguments of `flinch-trace summarize`.
#[derive(clap::Args)]
pub struct Args {
    /// The runs folder (`<name>-host/`, `<name>/`, `*trace*/traces/`).
    #[arg(long)]
    runs: PathBuf,
    /// Where to write the JSON summary.
    #[arg(long)]
    out: PathBuf,
    /// Summarize telemetry only (`trace_analysis: "deferred"`), e.g. while inference timing
    /// is still running.
    #[arg(long)]
    skip_traces: bool,
    /// Summarize traces in memory alone, with unbounded memory. Default: each trace as
    /// `flinch-trace trace` does it (Limits::NATIVE: exact in bounded memory up to the limits in
    /// docs/trace-exactness.md, spilling busy intervals to a temporary file and reading the file
    /// again when needed); past the limits the entry carries `approximations` with the error
    /// bounds, and a warning.
    #[arg(long)]
    exact: bool,
    /// Longest line of a JSONL file or `command.log` read, in bytes: a longer one is skipped as
    /// it is read, never held, and counted in the run's warnings.
    #[arg(long, value_name = "BYTES", default_value_t = MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_line_bytes: usize,
    /// Values a run's series hold in memory together (8 bytes each) before a series past its
    /// share writes them, sorted, to a temporary file; every figure stays exact either way.
    /// Default: 3145728 (24 MiB, `Limits::NATIVE`'s exact-values budget).
    #[arg(long, value_name = "VALUES",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_values: Option<usize>,
}

impl Args {
    fn options(&self) -> SummarizeOptions {
        SummarizeOptions {
            skip_traces: self.skip_traces,
            max_line_bytes: self.max_line_bytes,
            max_values: self.max_values,
            ..SummarizeOptions::new(&self.runs)
        }
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    if !args.runs.is_dir() {
        eprintln!(
            "warning: runs folder {} is not a directory; nothing to summarize",
            args.runs.to_string_lossy()
        );
    }
    let listed = ListedRuns::list(&args.options());
    // Before any file is read: --out is a path an output may take, and none of the inputs.
    let target = output_target(&args.out, &listed).map_err(|e| format!("summarize: {e}"))?;
    let summary = listed.summarize(&flinch_host::runs::trace_summarizer(args.exact))?;
    let json = summary
        .to_json()
        .map_err(|e| format!("summarize: cannot render the summary: {e}"))?;
    crate::output::write_all(target, json.as_bytes()).map_err(|e| format!("summarize: {e}"))?;
    println!("{}", summary.message());
    Ok(ExitCode::SUCCESS)
}

/// `--out`, checked (`crate::output`): refused when it is one of the files the summary reads
/// (device and inode), so that a hard or symbolic link to an input is refused too.
fn output_target(out: &Path, listed: &ListedRuns) -> Result<crate::output::Target, String> {
    let target = crate::output::Target::resolve("--out", out)?;
    if target.replaces_a_file() {
        for input in listed.inputs() {
            target.refuse_input("an input", &input)?;
        }
    }
    Ok(target)
}
