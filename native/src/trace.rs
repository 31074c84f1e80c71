//! `flinch-trace trace FILE... [--json] [--top N] [--bounded | --exact]`: summarize Chrome / PyTorch
//! (Kineto) traces (docs/cli.md, "trace").
//!
//! Each file is streamed through the core scanner and summary, with the same result as
//! `flinch_core::analyzer` (the web page's entry point): a plain file of 16 MiB or more on two
//! scan threads over alternate segments (`parallel`); `.json.gz` (detected by its magic bytes)
//! and smaller files through the input's reader thread (`crate::input`), then one scan thread
//! and the summary here (`pipeline`), or, for gzip on two cores or fewer, scan and summary
//! together on this thread. A cut file (or a cut `.gz`) is summarized
//! from what was read, with a warning. Output: a readable table per file, or with `--json` the
//! core's JSON rendering (the reference `trace_summary` keys plus ours): one object for one file,
//! an array of objects for several (a file that fails appears as `{"source", "error"}`, as the
//! reference's summarize does). Exit status 1 when any file failed.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flinch_core::Limits;
use flinch_core::join::FirstPass;
use flinch_core::stats::Stats;
use flinch_core::summary::TraceSummaryResult;

use crate::input::{InputFile, Passes};
use crate::progress::ProgressLine;
use crate::{CmdError, CmdResult};

#[cfg(unix)]
#[cfg(all(test, unix))]
mod exact_tests;
mod join;
#[cfg(test)]
mod join_tests;
#[cfg(unix)]
mod parallel;
mod perfetto;
mod pipeline;
#[cfg(test)]
mod test_files;

/// Arguments of `flinch-trace trace`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace files: `.json` or `.json.gz` (gzip is detected by content, not by name).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON (one object per file; an array for several files).
    #[arg(long)]
    json: bool,
    /// How many (category, name) ops to list, largest duration sum first.
    #[arg(long, default_value_t = flinch_core::summary::DEFAULT_TOP_OPS, value_name = "N",
          allow_hyphen_values = true, value_parser = crate::values::count)]
    top: usize,
    /// Small bounded memory, in memory alone (Limits::BOUNDED, a few MiB): ops/categories beyond
    /// the limits fold into "(other)", percentiles may come from sketches and busy unions may be
    /// approximate (the output states each, with its bound). Default: exact in bounded memory
    /// (Limits::NATIVE, peak RSS within 64 MiB) up to the limits in docs/trace-exactness.md
    /// (131,072 ops, 8 MiB of op names), with busy intervals spilled to a temporary file and
    /// further passes over the file when needed; past the limits, stated under `approximations`.
    #[arg(long, conflicts_with = "exact")]
    bounded: bool,
    /// Exact whatever the input, in memory alone (Limits::EXACT): memory grows with the
    /// distinct ops, durations and disjoint busy intervals.
    #[arg(long)]
    exact: bool,
    /// With --json: add the mergeable section (`"mergeable"`, docs/merge.md) that
    /// `flinch-trace merge` combines across ranks.
    #[arg(long, requires = "json")]
    mergeable: bool,
    /// Scan threads for a plain trace of 16 MiB or more (default: the available parallelism,
    /// up to 16; 1: one scan thread). The output is the same for every N (docs/threads.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
    /// GPU pauses and the join with a recording (docs/join.md).
    #[command(flatten)]
    join: join::JoinArgs,
}

/// A file that failed, in a `--json` array: `source` first, as every result object.
#[derive(serde::Serialize)]
struct FileError<'a> {
    source: &'a str,
    error: &'a str,
}

/// How exact a summary is, and in what memory: the `--bounded` and `--exact` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exactness {
    /// The default: exact in bounded memory (Limits::NATIVE), spilling to a temporary file and
    /// reading the file again when needed.
    #[default]
    Native,
    /// `--bounded`: Limits::BOUNDED, in memory alone, approximations stated.
    Bounded,
    /// `--exact`: Limits::EXACT, in memory alone, growing with the input.
    Exact,
}

impl Exactness {
    /// The limits, and whether the summary may use the temporary file and further passes.
    pub fn limits(self) -> (Limits, bool) {
        match self {
            Exactness::Native => (Limits::NATIVE, true),
            Exactness::Bounded => (Limits::BOUNDED, false),
            Exactness::Exact => (Limits::EXACT, false),
        }
    }
}

/// Options of one file's summary without the join: `trace FILE --json [--top N] [--bounded |
/// --exact]`.
#[derive(Clone, Copy, Debug)]
pub struct SummaryOptions {
    /// How many ops to list (`--top`).
    pub top: usize,
    /// `--bounded` / `--exact`.
    pub exactness: Exactness,
    /// `--mergeable`: add the section `flinch-trace merge` combines (docs/merge.md).
    pub mergeable: bool,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            top: flinch_core::summary::DEFAULT_TOP_OPS,
            exactness: Exactness::Native,
            mergeable: false,
        }
    }
}

/// The JSON object `trace FILE --json [--mergeable]` prints for one file without the join
/// (without the trailing newline), with no progress line; `Err` holds the message the CLI
/// prints after `flinch-trace trace: FILE: `. The Python wheel's `trace_summary`.
pub fn summary_json(path: &Path, opts: &SummaryOptions) -> Result<String, String> {
    let (limits, exact_io) = opts.exactness.limits();
    let source = path.display().to_string();
    let also = if opts.mergeable {
        Also::Mergeable
    } else {
        Also::Nothing
    };
    let summary = summarize_file_also(path, &source, limits, opts.top, exact_io, false, also);
    summary.map(|r| result_json(&r))
}

/// One result's `--json` object.
fn result_json(r: &TraceSummaryResult) -> String {
    r.to_json()
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let exactness = if args.bounded {
        Exactness::Bounded
    } else if args.exact {
        Exactness::Exact
    } else {
        Exactness::Native
    };
    let (limits, exact_io) = exactness.limits();
    if let Some(n) = args.threads {
        parallel::set_threads(usize::from(n));
    }
    let mut failed = false;
    let mut json_out = JsonOut::new(args.files.len() > 1);
    // Checked whether or not the join runs, so that a bad option is never silently ignored.
    let join_opts = args.join.options().map_err(CmdError::Usage)?;
    let join_opts = args.join.enabled().then_some(join_opts);
    if args.mergeable && join_opts.is_some() {
        return Err(CmdError::Usage(
            "--mergeable summarizes traces alone: drop the join's options".into(),
        ));
    }
    if args.join.perfetto().is_some() && args.files.len() > 1 {
        return Err(CmdError::Usage(
            "--perfetto writes one merged file: give one trace".into(),
        ));
    }
    // Before any work: the merged file is none of the inputs, and a path an output may take.
    if let (Some((out, csv)), Some(trace)) = (args.join.perfetto(), args.files.first()) {
        perfetto::check(out, trace, csv).map_err(|e| format!("error: {e}"))?;
    }
    // The recording is read on a thread of its own while the first trace is summarized.
    std::thread::scope(|scope| {
        let mut reading = join_opts
            .is_some()
            .then(|| scope.spawn(|| args.join.recording()));
        let mut recording = None;
        for path in &args.files {
            let source = path.display().to_string();
            // Opened once: the summary, its further passes and the join's read it through this.
            let passes = if exact_io || join_opts.is_some() {
                Passes::Several
            } else {
                Passes::One
            };
            let input = InputFile::open(path, passes);
            // The join's first pass rides on the summary's scan.
            let mut first = join_opts
                .as_ref()
                .map(|o| join::first_pass(o, args.join.has_telemetry()));
            let also = match first.as_mut() {
                Some(first) => Also::Join(first),
                None if args.mergeable => Also::Mergeable,
                None => Also::Nothing,
            };
            let summary = input.clone().and_then(|input| {
                summarize_input_also(&input, &source, limits, args.top, exact_io, true, also)
            });
            if let Some(h) = reading.take() {
                recording = h
                    .join()
                    .unwrap_or_else(|_| Err("reading the recording failed".into()))?;
            }
            let joined = match (&summary, join_opts.as_ref(), first, &input) {
                (Ok(_), Some(o), Some(first), Ok(input)) => Some(join::finish(
                    input,
                    first.finish(),
                    o,
                    recording.as_ref().map(|(r, _)| r),
                    args.join
                        .perfetto()
                        .zip(recording.as_ref())
                        .map(|((out, _), (_, csv))| (out, csv)),
                )),
                _ => None,
            };
            report_file(
                &args,
                &source,
                summary,
                joined.transpose(),
                &mut json_out,
                &mut failed,
            )
            .map_err(|e| format!("flinch-trace trace: stdout: {e}"))?;
        }
        Ok::<(), CmdError>(())
    })?;
    if args.json {
        json_out
            .finish()
            .map_err(|e| format!("flinch-trace trace: stdout: {e}"))?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints one file's result (with `--json`, as an item of `json_out`), or its error.
fn report_file(
    args: &Args,
    source: &str,
    summary: Result<TraceSummaryResult, String>,
    joined: Result<Option<(flinch_core::join::JoinReport, Option<u64>)>, String>,
    json_out: &mut JsonOut,
    failed: &mut bool,
) -> std::io::Result<()> {
    {
        match summary.and_then(|r| joined.map(|j| (r, j))) {
            Ok((result, joined)) => {
                let joined = joined.map(|(report, merged)| {
                    if let (Some(n), Some((out, _))) = (merged, args.join.perfetto()) {
                        eprintln!(
                            "flinch-trace trace: {source}: {n} recording events merged into {}",
                            out.display()
                        );
                    }
                    report
                });
                if args.json {
                    match &joined {
                        Some(j) => {
                            let json = join::summary_with_join_json(&result, j);
                            json_out.item(|out| out(&json))?;
                        }
                        // Written as it is made: the mergeable section grows with the ops.
                        None => json_out.item(|out| result.write_json(out))?,
                    }
                } else {
                    print!("{}", render_table(&result));
                    if let Some(j) = &joined {
                        print!("{}", join::render(j));
                    }
                }
            }
            Err(msg) => {
                *failed = true;
                eprintln!("flinch-trace trace: {source}: {msg}");
                if args.json && args.files.len() > 1 {
                    let err = FileError {
                        source,
                        error: &msg,
                    };
                    let json = serde_json::to_string_pretty(&err).unwrap_or_default();
                    json_out.item(|out| out(&json))?;
                }
            }
        }
    }
    Ok(())
}

/// `--json`'s stdout, written as each file's object is made: one file's object and a newline,
/// or for several files an array of their objects (2 spaces more indented), one item a file.
struct JsonOut {
    out: std::io::BufWriter<std::io::Stdout>,
    many: bool,
    items: usize,
}

/// Where one item's text goes, piece by piece.
type Sink<'a> = dyn FnMut(&str) -> std::io::Result<()> + 'a;

impl JsonOut {
    fn new(many: bool) -> JsonOut {
        JsonOut {
            out: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout()),
            many,
            items: 0,
        }
    }

    /// One item, whose text `write` gives to the sink it is passed.
    fn item(
        &mut self,
        write: impl FnOnce(&mut Sink<'_>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use std::io::Write;
        if !self.many && self.items > 0 {
            return Ok(());
        }
        if self.many {
            self.out
                .write_all(if self.items == 0 { b"[\n  " } else { b",\n  " })?;
        }
        self.items += 1;
        let many = self.many;
        let out = &mut self.out;
        write(&mut |piece: &str| {
            if !many {
                return out.write_all(piece.as_bytes());
            }
            let mut lines = piece.split('\n');
            if let Some(first) = lines.next() {
                out.write_all(first.as_bytes())?;
            }
            for line in lines {
                out.write_all(b"\n  ")?;
                out.write_all(line.as_bytes())?;
            }
            Ok(())
        })
    }

    /// The array's end, or the one object's newline; flushed.
    fn finish(mut self) -> std::io::Result<()> {
        use std::io::Write;
        if self.many {
            if self.items == 0 {
                self.out.write_all(b"[\n  ")?;
            }
            self.out.write_all(b"\n]\n")?;
        } else if self.items > 0 {
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
    }
}

/// Streams one file through the core scanner and summary. `exact_io`: past `limits`, spill
/// busy intervals to a temporary file and read the file again for the listed ops' exact
/// percentiles (`exact_io`), instead of stating approximations.
pub fn summarize_file(
    path: &Path,
    source: &str,
    limits: Limits,
    top: usize,
    exact_io: bool,
    show_progress: bool,
) -> Result<TraceSummaryResult, String> {
    summarize_file_also(
        path,
        source,
        limits,
        top,
        exact_io,
        show_progress,
        Also::Nothing,
    )
}

/// What a trace's summary also does on its own scan. The two never go together: `--mergeable`
/// summarizes traces alone.
pub enum Also<'a> {
    /// The summary alone.
    Nothing,
    /// Every event, in order, then `baseTimeNanoseconds`, also to the join's first pass
    /// (docs/join.md).
    Join(&'a mut FirstPass),
    /// The mergeable section (`--mergeable`, docs/merge.md): the bytes of
    /// `flinch_core::analyzer`'s mergeable summary.
    Mergeable,
}

impl<'a> Also<'a> {
    /// The join's first pass, if any, and whether the summary is mergeable.
    fn into_parts(self) -> (Option<&'a mut FirstPass>, bool) {
        match self {
            Also::Nothing => (None, false),
            Also::Join(first) => (Some(first), false),
            Also::Mergeable => (None, true),
        }
    }
}

/// [`summarize_file`], also doing `also` on the same scan.
///
/// # Errors
/// As [`summarize_file`].
pub fn summarize_file_also(
    path: &Path,
    source: &str,
    limits: Limits,
    top: usize,
    exact_io: bool,
    show_progress: bool,
    also: Also<'_>,
) -> Result<TraceSummaryResult, String> {
    // Further passes (exact_io) read the file again; the join's are the caller's, which gives
    // the open input to [`summarize_input_also`] itself.
    let passes = if exact_io {
        Passes::Several
    } else {
        Passes::One
    };
    let input = InputFile::open(path, passes)?;
    summarize_input_also(&input, source, limits, top, exact_io, show_progress, also)
}

/// [`summarize_file_also`] of an input already open: every pass reads it through `file`.
///
/// # Errors
/// As [`summarize_file`].
pub fn summarize_input_also(
    file: &InputFile,
    source: &str,
    limits: Limits,
    top: usize,
    exact_io: bool,
    show_progress: bool,
    also: Also<'_>,
) -> Result<TraceSummaryResult, String> {
    // Gzip is detected by magic and inflated on a reader thread (crate::input); the decoded
    // bytes are scanned on a second thread and summarized on this one (pipeline), so reading,
    // scanning and summarizing overlap. The result is what flinch_core::analyzer (the web page's
    // entry point) gives for the same bytes: the same core scanner and summary, in order.
    // A large plain regular file: two scan threads on alternate segments (parallel). A FIFO
    // or pipe never: it is read once, in order.
    #[cfg(unix)]
    if let Some(plan) = parallel::plan(file) {
        let mut progress = show_progress.then(|| ProgressLine::new("trace", plan.size()));
        let update = |done, _| {
            if let Some(p) = progress.as_mut() {
                p.update(done);
            }
        };
        return parallel::summarize(plan, source, limits, Some(top), exact_io, also, update);
    }
    // For the join, a .gz keeps restart points on this read for its second pass (rescan).
    let input = match also {
        Also::Join(_) => file.read_indexed()?,
        _ => file.read()?,
    };
    let read = input.progress();
    let mut progress = show_progress.then(|| ProgressLine::new("trace", read.total_bytes()));
    let update = || {
        if let Some(p) = progress.as_mut() {
            p.update(read.bytes_read());
        }
    };
    // Inflating takes most of a core: with two cores or fewer, scanning and summarizing on
    // one thread beside it is faster than on two (see pipeline::summarize_sequential). The
    // join's first pass takes the pipeline, whose scan it shares, instead of inflating again.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let replay = exact_io.then_some(file);
    let top = Some(top);
    match also {
        Also::Nothing | Also::Mergeable if input.is_gzip() && cores <= 2 => {
            let mergeable = matches!(also, Also::Mergeable);
            pipeline::summarize_sequential(input, source, limits, top, replay, mergeable, update)
        }
        also => pipeline::summarize(input, source, limits, top, replay, also, update),
    }
}

/// The readable table for one result.
pub fn render_table(r: &TraceSummaryResult) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let t = &r.totals;
    let phases: Vec<String> = r
        .phase_counts
        .0
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect();
    let _ = writeln!(
        s,
        "{}: {} events ({}), {} duration events, {:.1} MB{}",
        r.source,
        t.events,
        phases.join(" "),
        t.duration_events,
        t.bytes as f64 / 1e6,
        if r.truncated { ", TRUNCATED" } else { "" }
    );
    let _ = writeln!(
        s,
        "  {:<28} {:>10} {:>16} {:>16} {:>9}",
        "category", "events", "duration_sum_ms", "busy_union_ms", "busy/sum"
    );
    for c in &r.categories.0 {
        let ratio = if c.duration_sum_us > 0.0 {
            c.busy_union_us / c.duration_sum_us
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "  {:<28} {:>10} {:>16.3} {:>16.3} {:>9.3}",
            clip(&c.name, 28),
            c.events,
            c.duration_sum_us / 1000.0,
            c.busy_union_us / 1000.0,
            ratio
        );
    }
    let _ = writeln!(
        s,
        "  {:<28} {:>10} {:>16.3} {:>16.3}",
        "(all)",
        t.duration_events,
        t.duration_sum_us / 1000.0,
        t.busy_union_us / 1000.0
    );
    let rows = r.largest_ops_by_duration_sum.iter();
    let rows = rows.map(|o| (o.duration_sum_us, &o.duration_us, &*o.category, &*o.name));
    write_op_table(&mut s, "top ops by duration sum", 8, rows);
    for w in &r.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    if let Some(a) = &r.approximations {
        let _ = writeln!(
            s,
            "  approximate: busy union error bound {:.3} us; ops folded: {}; categories folded: {}",
            a.busy_union_error_bound_us, a.ops_folded_into_other, a.categories_folded_into_other
        );
    }
    s
}

/// A top-ops table: `title`, the column heads, then one row per op: the duration sum in ms, `n`
/// right-aligned in `n_width`, the mean, p50, p99 and max in µs (`-` where absent), the category
/// and the name, clipped. Nothing when there is no op.
pub(crate) fn write_op_table<'a>(
    s: &mut String,
    title: &str,
    n_width: usize,
    ops: impl ExactSizeIterator<Item = (f64, &'a Stats, &'a str, &'a str)>,
) {
    use std::fmt::Write;
    if ops.len() == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "  {title}:\n  {:>12} {:>n_width$} {:>10} {:>10} {:>10} {:>10}  {:<14} name",
        "sum_ms", "n", "mean_us", "p50_us", "p99_us", "max_us", "category"
    );
    let f = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:.3}"));
    for (duration_sum_us, st, category, name) in ops {
        let _ = writeln!(
            s,
            "  {:>12.3} {:>n_width$} {:>10} {:>10} {:>10} {:>10}  {:<14} {}",
            duration_sum_us / 1000.0,
            st.n,
            f(st.mean),
            f(st.p50),
            f(st.p99),
            f(st.max.map(|m| m.to_f64())),
            clip(category, 14),
            clip(name, 80)
        );
    }
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
