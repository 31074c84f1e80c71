//! `flinch-trace merge SUMMARY... [--json] [--top N]`: merges per-rank trace summaries (the
//! `trace --json --mergeable` outputs, or earlier merges) into one (docs/merge.md). The merge is
//! `flinch_core::merge`; this reads the files (or `-` for stdin) and prints.
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::merge::{MergeError, MergedSummary, merge_states, parse_state, render, to_json};

use crate::trace::write_op_table;
use crate::{CmdError, CmdResult};

pub mod per_rank;

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
}

fn read(path: &PathBuf) -> Result<Vec<u8>, String> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("flinch-trace merge: stdin: {e}"))?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| format!("flinch-trace merge: {}: {e}", path.display()))
}

/// The error with the file's name in place of its index.
fn named(files: &[PathBuf], e: MergeError) -> String {
    match e.index.and_then(|i| files.get(i)) {
        Some(file) if e.path.is_empty() => {
            format!("flinch-trace merge: {}: {}", file.display(), e.message)
        }
        Some(file) => format!(
            "flinch-trace merge: {}: {}: {}",
            file.display(),
            e.path,
            e.message
        ),
        None => format!("flinch-trace merge: {e}"),
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(CmdError::Usage(
            "flinch-trace merge: `-` (stdin) can be given once".into(),
        ));
    }
    let mut states = Vec::with_capacity(args.files.len());
    for (i, path) in args.files.iter().enumerate() {
        let bytes = read(path)?;
        states.push(parse_state(i, &bytes).map_err(|e| named(&args.files, e))?);
    }
    let merged = render(
        merge_states(states).map_err(|e| named(&args.files, e))?,
        args.top,
    );
    if args.json {
        println!("{}", to_json(&merged));
    } else {
        print!("{}", render_text(&merged));
    }
    Ok(ExitCode::SUCCESS)
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
