//! `flinch-trace merge SUMMARY... [--json] [--top N]`: merges per-rank trace summaries (the
//! `trace --json --mergeable` outputs, or earlier merges) into one (docs/merge.md). The merge is
//! `flinch_core::merge`; this reads the files (or `-` for stdin) and prints.
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::merge::{AddError, MergeError, MergedSummary, Merger, locate_error, render};

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
    #[arg(long, default_value_t = READ_WHOLE_BYTES, value_name = "BYTES",
          allow_hyphen_values = true, value_parser = crate::values::count)]
    read_whole_max_bytes: usize,
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

/// `--read-whole-max-bytes`' default: a large merge's or a many-rank array's file is parsed as
/// it is read, where holding it whole would cost its size again.
const READ_WHOLE_BYTES: usize = 16 << 20;

enum Failed {
    Read(String),
    Merge(MergeError),
}

/// Folds the summary (or the array of summaries) in `path` into `merger`: read whole up to
/// `read_whole_max_bytes`, else parsed as it is read.
fn add_file(
    merger: &mut Merger,
    index: usize,
    path: &PathBuf,
    read_whole_max_bytes: usize,
) -> Result<(), Failed> {
    let open = || {
        std::fs::File::open(path)
            .map_err(|e| Failed::Read(format!("flinch-trace merge: {}: {e}", path.display())))
    };
    let large = path.as_os_str() != "-"
        && std::fs::metadata(path)
            .is_ok_and(|m| m.is_file() && m.len() > read_whole_max_bytes as u64);
    if !large {
        let bytes = read(path).map_err(Failed::Read)?;
        return merger.add_json(index, &bytes).map_err(Failed::Merge);
    }
    let reader = |file| std::io::BufReader::with_capacity(1 << 20, file);
    let mut de = serde_json::Deserializer::from_reader(reader(open()?));
    match merger.add_document(index, &mut de) {
        Ok(()) => Ok(()),
        Err(AddError::Refused(e)) => Err(Failed::Merge(e)),
        // The key path, from a second (tracking) parse of the file.
        Err(AddError::Syntax(e)) => {
            let mut de = serde_json::Deserializer::from_reader(reader(open()?));
            Err(Failed::Merge(locate_error(index, &mut de).unwrap_or(e)))
        }
    }
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

/// Each file named once more after its first naming (by device and inode: the same file under
/// another name, or through a link, too): `(later, earlier)` positions. Files that cannot be
/// looked at are left to the read, which names them.
fn repeated_files(files: &[PathBuf]) -> Vec<(usize, usize)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mut seen = std::collections::HashMap::new();
        let mut out = Vec::new();
        for (i, f) in files.iter().enumerate() {
            if f.as_os_str() == "-" {
                continue;
            }
            let Ok(m) = std::fs::metadata(f) else {
                continue;
            };
            if let Some(&first) = seen.get(&(m.dev(), m.ino())) {
                out.push((i, first));
            } else {
                seen.insert((m.dev(), m.ino()), i);
            }
        }
        out
    }
    #[cfg(not(unix))]
    {
        let _ = files;
        Vec::new()
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(CmdError::Usage(
            "flinch-trace merge: `-` (stdin) can be given once".into(),
        ));
    }
    for (later, first) in repeated_files(&args.files) {
        eprintln!(
            "flinch-trace merge: warning: {} is the same file as {}: its ranks are merged twice",
            args.files[later].display(),
            args.files[first].display()
        );
    }
    // One summary at a time: read, folded in, dropped.
    let mut merger = Merger::new();
    for (i, path) in args.files.iter().enumerate() {
        add_file(&mut merger, i, path, args.read_whole_max_bytes).map_err(|e| match e {
            Failed::Read(text) => text,
            Failed::Merge(e) => named(&args.files, e),
        })?;
    }
    let merged = render(
        merger.finish().map_err(|e| named(&args.files, e))?,
        args.top,
    );
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
