//! flinch-trace: is the GPU computing or waiting? Measure it.
//!
//! The command line: clap and the exit status. The subcommands live in the library
//! (`lib.rs`), which the Python wheel also uses.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use flinch_trace::{analyze, diff, mark, merge, record, summarize, trace, web};

/// Is the GPU computing or waiting? Measure it.
#[derive(Parser)]
#[command(name = "flinch-trace", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Summarize Chrome / PyTorch (Kineto) trace files: per-category busy time and top ops.
    Trace(trace::Args),
    /// Merge per-rank trace summaries (`trace --json --mergeable` outputs) into one.
    Merge(merge::Args),
    /// Compare two runs (traces or summaries): what got faster or slower.
    Diff(diff::Args),
    /// Duration, GPU energy, utilization and a compute-or-waiting verdict between marks of a trace.csv.
    Analyze(analyze::Args),
    /// Summarize a benchmark runs folder (host telemetry, requests, traces).
    Summarize(summarize::Args),
    /// Sample GPUs (NVML), CPU package energy (RAPL) and the host into a trace.csv.
    Record(Box<record::Args>),
    /// Send a named mark to a running recorder.
    Mark(mark::Args),
    /// Serve the static analysis page (www/) on localhost.
    Web(web::Args),
}

/// Commands that print a report to stdout die quietly on a closed pipe (`flinch-trace trace f | head`), as
/// Unix filters do, instead of panicking in `println!`. The recorder and `mark` keep SIGPIPE ignored so a
/// vanished FIFO reader is an error they report.
#[cfg(unix)]
fn default_sigpipe() {
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before any thread or file: a file size limit is an error naming the file, never a silent
    // exit 153.
    #[cfg(unix)]
    flinch_trace::output::ignore_file_size_signal();
    if matches!(
        cli.cmd,
        Cmd::Trace(_) | Cmd::Merge(_) | Cmd::Diff(_) | Cmd::Analyze(_) | Cmd::Summarize(_)
    ) {
        default_sigpipe();
    }
    let result = match cli.cmd {
        Cmd::Trace(a) => trace::run(a),
        Cmd::Merge(a) => merge::run(a),
        Cmd::Diff(a) => diff::run(a),
        Cmd::Analyze(a) => analyze::run(a),
        Cmd::Summarize(a) => summarize::run(a),
        Cmd::Record(a) => record::run(*a),
        Cmd::Mark(a) => mark::run(a),
        Cmd::Web(a) => web::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
    }
}
