//! `flinch-trace trace FILE... [--json] [--top N] [--bounded | --exact]`: summarize Chrome / PyTorch
//! (Kineto) traces (docs/cli.md, "trace").
//!
//! Each file is one trace job (`flinch_core::trace_job`: the summary, with the join or the
//! mergeable section), driven by the host driver (`flinch_host::trace`, which picks the scan
//! threads and answers the job's further reads); the page drives the same job. Here: the
//! flags, the recording read on a thread of its own, the merged file, the progress line and
//! the output. A cut file (or a cut `.gz`) is summarized from what was read, with a warning.
//! Output: a readable table per file, or with `--json` the
//! core's JSON rendering (the reference `trace_summary` keys plus ours): one object for one file,
//! an array of objects for several (a file that fails appears as `{"source", "error"}`, as the
//! reference's summarize does). Exit status 1 when any file failed.
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use flinch_core::Exactness;
use flinch_core::job::Job;
use flinch_core::stats::Stats;
use flinch_core::summary::TraceSummaryResult;
use flinch_core::trace_job::{TraceJob, TraceJobOptions, TraceJobResult};
use flinch_host::trace::ReadOptions;

use crate::input::{InputFile, Passes};
use crate::progress::ProgressLine;
use crate::{CmdError, CmdResult};

#[cfg(all(test, unix))]
mod exact_tests;
mod join;
#[cfg(all(test, unix))]
mod join_tests;
mod perfetto;
mod steps;
#[cfg(all(test, unix))]
mod steps_tests;

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
    /// Per training step: where its time went (and its energy with --telemetry), the outlier
    /// steps and why (docs/steps.md).
    #[arg(long)]
    steps: bool,
    /// With --steps: the steps' annotation name, exact or a glob with `*` (default
    /// `ProfilerStep#<N>`); implies --steps.
    #[arg(long, value_name = "PATTERN")]
    step_name: Option<String>,
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

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let exactness = if args.bounded {
        Exactness::Bounded
    } else if args.exact {
        Exactness::Exact
    } else {
        Exactness::Native
    };
    let spills = exactness.spills();
    let threads = args.threads.map(usize::from);
    let mut failed = false;
    let mut json_out = JsonOut::new(args.files.len() > 1);
    // Checked whether or not the join runs, so that a bad option is never silently ignored.
    let join_opts = args.join.options().map_err(CmdError::Usage)?;
    let join_opts = args.join.enabled().then_some(join_opts);
    let step_pattern = steps::pattern(args.steps, args.step_name.as_deref())?;
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
        let mut recording: Option<(Arc<flinch_core::join::Recording>, InputFile)> = None;
        for path in &args.files {
            let source = path.display().to_string();
            // Opened once: the summary, its further passes and the join's read it through this.
            let passes = if spills || join_opts.is_some() {
                Passes::Several
            } else {
                Passes::One
            };
            let input = InputFile::open(path, passes);
            let options = TraceJobOptions {
                source: source.clone(),
                limits: exactness.limits(),
                top: args.top,
                durations_out: None,
                mergeable: args.mergeable,
                steps: step_pattern.clone(),
                join: join_opts.as_ref().map(|o| {
                    join::setup(o, args.join.has_telemetry(), args.join.perfetto().is_some())
                }),
            };
            let mut job = TraceJob::new(options);
            let mut progress: Option<ProgressLine> = None;
            let mut show = |done, total| {
                progress
                    .get_or_insert_with(|| ProgressLine::new("trace", total))
                    .update(done);
            };
            let read = ReadOptions {
                spills,
                threads,
                progress: Some(&mut show),
            };
            let first = input
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|input| flinch_host::trace::first_read(input, &mut job, read));
            drop(progress);
            if let Some(h) = reading.take() {
                recording = h
                    .join()
                    .unwrap_or_else(|_| Err("reading the recording failed".into()))?
                    .map(|(r, csv)| (Arc::new(r), csv));
            }
            let result = first.and_then(|()| {
                let (Some(o), Ok(input)) = (join_opts.as_ref(), &input) else {
                    return job.finish().map(|r| (r, None)).map_err(|e| e.to_string());
                };
                if let Some((rec, _)) = &recording {
                    job.set_recording(rec.clone());
                }
                let perfetto = args
                    .join
                    .perfetto()
                    .zip(recording.as_ref())
                    .map(|((out, _), (_, csv))| (out, csv));
                let merged = join::second_read(input, &mut job, o, perfetto)?;
                let mut result = job.finish().map_err(|e| e.to_string())?;
                let merged = merged.map(|m| {
                    if let Some(report) = result.join.as_mut() {
                        report.join_warnings.extend(m.warnings);
                    }
                    m.events
                });
                Ok((result, merged))
            });
            report_file(&args, &source, result, &mut json_out, &mut failed)
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

/// Prints one file's result (with `--json`, as an item of `json_out`), or its error; `merged`:
/// the events merged into the `--perfetto` file.
fn report_file(
    args: &Args,
    source: &str,
    result: Result<(TraceJobResult, Option<u64>), String>,
    json_out: &mut JsonOut,
    failed: &mut bool,
) -> std::io::Result<()> {
    match result {
        Ok((result, merged)) => {
            if let (Some(n), Some((out, _))) = (merged, args.join.perfetto()) {
                eprintln!(
                    "flinch-trace trace: {source}: {n} recording events merged into {}",
                    out.display()
                );
            }
            if args.json {
                match (&result.join, &result.steps) {
                    (Some(_), _) | (_, Some(_)) => {
                        let json = result.to_json();
                        json_out.item(|out| out(&json))?;
                    }
                    // Written as it is made: the mergeable section grows with the ops.
                    (None, None) => json_out.item(|out| result.summary.write_json(out))?,
                }
            } else {
                print!("{}", render_table(&result.summary));
                if let Some(j) = &result.join {
                    print!("{}", join::render(j));
                }
                if let Some(st) = &result.steps {
                    print!("{}", steps::render(st));
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

/// One trace file's summary at `limits`, kept exact past them by a temporary file and further
/// reads with `spills`: the tests' route through the host driver, for limits no [`Exactness`]
/// names.
#[cfg(all(test, unix))]
fn summarize_file(
    path: &std::path::Path,
    source: &str,
    limits: flinch_core::Limits,
    top: usize,
    spills: bool,
) -> Result<TraceSummaryResult, String> {
    let passes = if spills { Passes::Several } else { Passes::One };
    let input = InputFile::open(path, passes)?;
    let options = TraceJobOptions {
        source: source.to_string(),
        limits,
        top,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: None,
    };
    let read = ReadOptions {
        spills,
        threads: None,
        progress: None,
    };
    flinch_host::trace::run(&input, options, read).map(|r| r.summary)
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
