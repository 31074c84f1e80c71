//! `flinch-trace merge SUMMARY... [--json] [--top N]`: merges per-rank trace summaries (the
//! `trace --json --mergeable` outputs, or earlier merges) into one (docs/merge.md). The merge is
//! core's merge job (`flinch_core::merge::MergeJob`), driven over the files (or `-` for stdin) by
//! `flinch_host::merge`; this holds the command line and prints.
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::merge::{MergeJobError, MergedSummary};
use flinch_host::merge::{FilesMerge, MergeFilesOptions, READ_WHOLE_MAX_BYTES};

use crate::trace::write_op_table;
use crate::{CmdError, CmdResult};

mod section_formatter;

use section_formatter::SectionFormatter;

/// Arguments of `flinch-trace merge`.
#[derive(clap::Args)]
pub struct Args {
    /// Summaries to merge: JSON files from `flinch-trace trace --json --mergeable` (one per
    /// rank) or from an earlier `merge --json`; `-` reads one from stdin.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print the merged summary as JSON (it merges again with others).
    #[arg(long)]
    json: bool,
    /// How many (category, name) ops to list, largest summed duration first.
    #[arg(long, default_value_t = flinch_core::summary::DEFAULT_TOP_OPS, value_name = "N",
          allow_hyphen_values = true, value_parser = crate::values::count)]
    top: usize,
    /// Files up to this many bytes are read whole and parsed from memory (the faster parse);
    /// larger ones are parsed as they are read, an array's summaries folded one at a time, so
    /// that memory holds one summary, not the file.
    #[arg(long, default_value_t = READ_WHOLE_MAX_BYTES, value_name = "BYTES",
          allow_hyphen_values = true, value_parser = crate::values::count)]
    read_whole_max_bytes: usize,
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let options = MergeFilesOptions {
        files: args.files,
        top: args.top,
        read_whole_max_bytes: args.read_whole_max_bytes,
    };
    let merge = FilesMerge::new(&options).map_err(|e| match e {
        MergeJobError::StdinTwice => CmdError::Usage(format!("flinch-trace merge: {e}")),
        e => CmdError::from(format!("flinch-trace merge: {e}")),
    })?;
    for repeated in merge.repeated() {
        eprintln!("flinch-trace merge: warning: {repeated}");
    }
    // One summary at a time: read, folded in, dropped.
    let merged = merge
        .merge()
        .map_err(|e| format!("flinch-trace merge: {e}"))?;
    if args.json {
        print_json(&merged).map_err(|e| format!("flinch-trace merge: stdout: {e}"))?;
    } else {
        print!("{}", render_text(&merged));
    }
    Ok(ExitCode::SUCCESS)
}

/// `flinch_core::merge::to_json`'s text and a newline, written to stdout as it is made: a merge
/// of many ranks lists each of them, and its text is not held whole (nor twice).
fn print_json(merged: &MergedSummary) -> std::io::Result<()> {
    use serde::Serialize;
    use std::io::Write;
    /// The merged summary's keys, then its section (on one line, by the formatter).
    #[derive(Serialize)]
    struct Doc<'a> {
        #[serde(flatten)]
        body: &'a MergedSummary,
        mergeable: &'a flinch_core::merge::MergeState,
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, SectionFormatter::new());
    Doc {
        body: merged,
        mergeable: &merged.mergeable,
    }
    .serialize(&mut ser)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The readable view: totals and busy union per rank, then the top ops.
fn render_text(m: &MergedSummary) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let t = &m.totals;
    let _ = writeln!(
        s,
        "{} ranks: {} events, {} duration events, duration sum {:.3} ms, {:.1} MB",
        m.ranks.n,
        t.events,
        t.duration_events,
        t.duration_sum_us / 1000.0,
        t.bytes as f64 / 1e6
    );
    let _ = writeln!(s, "  {:>16}  rank", "busy_union_ms");
    for (src, us) in m.ranks.sources.iter().zip(&t.busy_union_us_by_rank) {
        let _ = writeln!(s, "  {:>16.3}  {src}", us / 1000.0);
    }
    let title = format!(
        "top ops by duration sum (percentiles within {:.3}%)",
        m.quantile_relative_error * 100.0
    );
    let rows = m.largest_ops_by_duration_sum.iter();
    let rows = rows.map(|o| (o.duration_sum_us, &o.duration_us, &*o.category, &*o.name));
    write_op_table(&mut s, &title, 9, rows);
    for w in &m.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    if let Some(a) = &m.approximations {
        let _ = writeln!(
            s,
            "  approximate: ops without a histogram {}; ops folded: {}; categories folded: {}",
            a.ops_without_histogram, a.ops_folded_into_other, a.categories_folded_into_other
        );
    }
    s
}
