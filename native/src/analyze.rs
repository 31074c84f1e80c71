//! `flinch-trace analyze`: duration, GPU energy, utilization and a verdict between marks of a
//! trace.csv. Thin adapter: reading the file, presentation and exit codes; the analysis is
//! `flinch_core::window`.
//!
//! Exit status: 0 on success (including `gpu_energy_J≈(n/a)`, as the reference); 1 for a missing
//! or out-of-order mark (the reference's texts) and for an unreadable file; 2 for usage errors.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flinch_core::analyzer::{AnalyzerOptions, Kind, LimitsPreset};
use flinch_core::csv::{Col, CsvEvent, TraceCsvReader};
use flinch_core::pynum::parse_py_float;
use flinch_core::window::{
    ParsedKind, ParsedRow, Planned, PowerSource, PyFixed, RecordingAnalysis, VerdictText,
    WindowAnalyzer, WindowOptions, WindowResult, power_text_is_bad, write_reference_lines,
};

use crate::input::{InputFile, Passes};
use crate::progress::ProgressLine;
use crate::record::sidecar;
use crate::{CmdError, CmdResult};

/// Arguments of `flinch-trace analyze`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace.csv to read.
    #[arg(long)]
    pub csv: PathBuf,
    /// Label of the start MARK.
    #[arg(long)]
    pub start: Option<String>,
    /// Label of the end MARK.
    #[arg(long)]
    pub end: Option<String>,
    /// Use the K-th MARK of each label (file order) instead of the first (1 or more).
    #[arg(long, default_value_t = 1, value_name = "K", allow_hyphen_values = true,
          value_parser = crate::values::occurrence)]
    pub occurrence: u32,
    /// Print the full analysis as JSON (per GPU, edge and counter energy, RAPL, verdict). Without
    /// --start/--end: the recording-level analysis (all spans, marks, plot series).
    #[arg(long)]
    pub json: bool,
    /// Analyze every span: X_start/X_end and begin/end pairs, and each stretch between marks.
    #[arg(long)]
    pub spans: bool,
    /// Analyze only this GPU (its `gpu_index`; rows without one count as GPU 0).
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = crate::values::gpu_index)]
    pub gpu: Option<i64>,
    /// Power intervals longer than this are skipped from the edge energy and reported.
    #[arg(long, default_value_t = DEFAULT_MAX_GAP_MS, value_name = "MS",
          allow_hyphen_values = true, value_parser = crate::values::millis)]
    pub max_gap_ms: u64,
    /// Which NVML power reading gpu_power_W holds. Default: from the `<csv>.meta.json` sidecar
    /// when it says, else unknown.
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub power_source: Option<PowerSource>,
}

/// `--max-gap-ms` when not given.
pub const DEFAULT_MAX_GAP_MS: u64 = 5000;

impl Args {
    /// `analyze --csv CSV --json` with every other option at its default.
    pub fn json_for(csv: PathBuf) -> Args {
        Args {
            csv,
            start: None,
            end: None,
            occurrence: 1,
            json: true,
            spans: false,
            gpu: None,
            max_gap_ms: DEFAULT_MAX_GAP_MS,
            power_source: None,
        }
    }
}

/// Formats as Python's `f"{x:.{prec}f}"` (nan, inf, -inf spelled as Python does).
fn py_fixed(x: f64, prec: usize) -> String {
    PyFixed(x, prec).to_string()
}

/// Opens the trace.csv once for every pass of the job; `passes`: whether a later pass may read
/// it again (a FIFO or pipe is then spooled).
fn open_csv(path: &Path, passes: Passes) -> Result<InputFile, String> {
    InputFile::open(path, passes).map_err(|e| format!("flinch-trace analyze: {e}"))
}

/// One pass over `file` (plain, or gzip detected by its magic bytes and inflated) in chunks of
/// up to 1 MiB into `sink`, with a progress line on a terminal for big files. Returns the
/// input's warning, if any (trailing garbage after the last gzip member, ignored).
fn read_all(
    file: &InputFile,
    mut sink: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<Option<String>, String> {
    let path = file.path();
    let mut input = file
        .read()
        .map_err(|e| format!("flinch-trace analyze: {e}"))?;
    let read = input.progress();
    let mut progress = ProgressLine::new("analyze", read.total_bytes());
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => sink(chunk)?,
            Ok(None) => return Ok(input.warning().map(str::to_string)),
            Err(e) => return Err(format!("flinch-trace analyze: {}: {e}", path.display())),
        }
        progress.update(read.bytes_read());
    }
}

/// Feeds the whole file to `analyzer` (on two threads when two CPUs are there), calling `each`
/// after every batch of rows, e.g. to write out what the analysis has decided so far. Returns
/// the input's warning, if any.
fn feed(
    file: &InputFile,
    analyzer: &mut WindowAnalyzer,
    mut each: impl FnMut(&mut WindowAnalyzer) -> Result<(), String>,
) -> Result<Option<String>, String> {
    if two_cpus() {
        analyze_two_threads(file, analyzer, BATCH_ROWS, &mut each)
    } else {
        read_all(file, |chunk| {
            analyzer.write(chunk);
            each(analyzer)
        })
    }
}

/// Marks and finished spans a first pass holds; past that many, they are read in further
/// passes and written out as they are decided (see `flinch_core::window::stream`), so memory
/// does not grow with the number of marks. A few MiB of results at most. Tests set fewer with
/// the environment variable `FLINCH_ANALYZE_HOLD` to take the multi-pass path on small files.
const HOLD: usize = 4096;

fn hold() -> usize {
    std::env::var("FLINCH_ANALYZE_HOLD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(HOLD)
}

/// One reader event for the analysis thread, in file order.
enum Parsed {
    /// A data row (`ParsedRow::from_row_deferred`) and three offsets `a ≤ b ≤ c` into its
    /// batch's `text`: a MARK's label is `text[a..b]`; a SAMPLE's gpu_power_W and gpu_util_pct
    /// texts are `text[a..b]` and `text[b..c]` (empty when absent: both parse to `None`).
    Row(ParsedRow, u32, u32, u32),
    /// A header line: its line, and whether it names the columns rows need.
    Header(u64, bool),
    /// A record cut short by an unclosed quote, with the quote's line.
    Quote(u64),
    /// A record skipped as over-long, with its line.
    Bad(u64),
}

/// Events per batch handed between the threads (a batch is ~300 KiB; at most six exist: two
/// queued each way, one being filled, one being analyzed).
const BATCH_ROWS: usize = 2048;

/// A batch of parsed rows and the texts they point into; recycled, so steady state allocates
/// nothing.
#[derive(Default)]
struct Batch {
    rows: Vec<Parsed>,
    text: Vec<u8>,
}

/// Reads and parses the file on a second thread while `analyzer` works on the rows already
/// parsed: the same calls, in the same order, as `analyzer.write` on every chunk would make
/// (`ParsedRow::from_row` + `push_parsed`, `add_header`, `add_bad_row`), so the results are
/// identical. The CSV splitting and most parsing move to the other core; the two floats of a
/// sample are parsed on this one (`ParsedRow::from_row` = `from_row_deferred` + those two),
/// which evens out the two threads' work.
fn analyze_two_threads(
    file: &InputFile,
    analyzer: &mut WindowAnalyzer,
    batch_rows: usize,
    each: &mut dyn FnMut(&mut WindowAnalyzer) -> Result<(), String>,
) -> Result<Option<String>, String> {
    use std::sync::mpsc::sync_channel;
    let full = !analyzer.reference_only();
    let (full_tx, full_rx) = sync_channel::<Batch>(2);
    let (empty_tx, empty_rx) = sync_channel::<Batch>(2);
    std::thread::scope(|scope| {
        let parser = scope.spawn(move || -> Result<Option<String>, String> {
            let mut reader = TraceCsvReader::new();
            let mut batch = Batch::default();
            batch.rows.reserve_exact(batch_rows);
            // Adds one event; hands the batch over when full. `false` when the analysis ended.
            let on_event = |reader: &TraceCsvReader, ev: CsvEvent, batch: &mut Batch| {
                match ev {
                    CsvEvent::NeedsInput | CsvEvent::End => return true,
                    CsvEvent::Header => batch
                        .rows
                        .push(Parsed::Header(reader.header_line(), reader.header_usable())),
                    CsvEvent::UnbalancedQuote { line } => batch.rows.push(Parsed::Quote(line)),
                    CsvEvent::BadRow { line } => batch.rows.push(Parsed::Bad(line)),
                    CsvEvent::Row => {
                        let row = reader.row();
                        let p = ParsedRow::from_row_deferred(&row, full);
                        let text = &mut batch.text;
                        let a = text.len() as u32;
                        let b = match p.kind {
                            ParsedKind::Mark => {
                                text.extend_from_slice(row.label());
                                text.len() as u32
                            }
                            ParsedKind::Sample => {
                                text.extend_from_slice(row.raw(Col::GpuPowerW).unwrap_or(b""));
                                let b = text.len() as u32;
                                text.extend_from_slice(row.raw(Col::GpuUtilPct).unwrap_or(b""));
                                b
                            }
                            ParsedKind::Other | ParsedKind::Bad => a,
                        };
                        let c = text.len() as u32;
                        batch.rows.push(Parsed::Row(p, a, b, c));
                    }
                }
                if batch.rows.len() < batch_rows {
                    return true;
                }
                let mut next = empty_rx.try_recv().unwrap_or_default();
                next.rows.clear();
                next.text.clear();
                next.rows.reserve_exact(batch_rows);
                full_tx.send(std::mem::replace(batch, next)).is_ok()
            };
            let note = read_all(file, |mut chunk| {
                while !chunk.is_empty() {
                    let (ev, n) = reader.read(chunk);
                    chunk = &chunk[n..];
                    if !on_event(&reader, ev, &mut batch) {
                        return Err("flinch-trace analyze: the analysis stopped".to_string());
                    }
                }
                Ok(())
            })?;
            loop {
                let (ev, _) = reader.read(&[]);
                on_event(&reader, ev, &mut batch);
                if ev == CsvEvent::End {
                    break;
                }
            }
            let _ = full_tx.send(batch);
            Ok(note)
        });
        // On an error here the receiver is dropped, so the parser's next send fails and it stops.
        let consume = move || -> Result<(), String> {
            for batch in full_rx {
                for ev in &batch.rows {
                    match ev {
                        Parsed::Row(p, a, b, c) => {
                            let (a, b, c) = (*a as usize, *b as usize, *c as usize);
                            if p.kind == ParsedKind::Sample {
                                let mut p = *p;
                                p.power_w = parse_py_float(&batch.text[a..b]);
                                p.power_bad = power_text_is_bad(&batch.text[a..b], p.power_w);
                                p.util_pct = parse_py_float(&batch.text[b..c]);
                                analyzer.push_parsed(&p, b"");
                            } else {
                                analyzer.push_parsed(p, &batch.text[a..b]);
                            }
                        }
                        Parsed::Header(line, usable) => analyzer.add_header(*line, *usable),
                        Parsed::Quote(line) => analyzer.add_unbalanced_quote(*line),
                        Parsed::Bad(line) => analyzer.add_bad_row(*line),
                    }
                }
                // The parser may have stopped already; the batch is then dropped.
                let _ = empty_tx.try_send(batch);
                each(analyzer)?;
            }
            Ok(())
        };
        let consumed = consume();
        let parsed = parser
            .join()
            .map_err(|_| "flinch-trace analyze: the parser thread panicked".to_string())?;
        consumed.and(parsed)
    })
}

fn span_line(w: &WindowResult) -> String {
    let e = |x: Option<f64>| x.map_or("n/a".to_string(), |v| py_fixed(v, 3));
    format!(
        "{:<8} {:>20} -> {:<20} occ={:<3} duration_s={:.6} energy_edge_J={} energy_ref_J={} verdict={}",
        w.kind,
        w.start_label,
        w.end_label,
        w.occurrence,
        w.duration_s,
        e(w.total.energy_edge_j),
        e(w.reference.energy_j),
        VerdictText(w.verdict.verdict, w.verdict.confident),
    ) + &w
        .thread
        .map_or_else(String::new, |t| format!(" thread={t}"))
}

fn warn_all(r: &RecordingAnalysis) {
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(note) = r.gpu_energy_note {
        eprintln!("note: {note}");
    }
}

/// Whether a second CPU is there for [`analyze_two_threads`].
fn two_cpus() -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2
}

/// Writes the pretty JSON of pass 1's analysis (the same bytes as `RecordingAnalysis::to_json`,
/// plus a newline) to `out`. When pass 1 did not hold them all, the marks and then the spans
/// are read again in further passes over the file and written out as they are decided; the
/// analysis then has empty lists in their place.
fn write_recording_json(
    out: &mut impl Write,
    file: &InputFile,
    opts: &WindowOptions,
    planned: Planned,
) -> Result<(), String> {
    let text = serde_json::to_string_pretty(&planned.analysis).map_err(|e| e.to_string())?;
    let mut rest = text.as_str();
    if planned.marks_streamed {
        rest = open_array(out, rest, "marks")?;
        let mut arr = JsonArray { out, n: 0 };
        let mut a = WindowAnalyzer::marks_pass(opts.clone());
        feed(file, &mut a, |a| {
            while let Some(m) = a.pop_mark() {
                arr.push(&m)?;
            }
            Ok(())
        })?;
        a.end_stream();
        while let Some(m) = a.pop_mark() {
            arr.push(&m)?;
        }
        arr.close()?;
    }
    if let Some(plan) = planned.spans {
        rest = open_array(out, rest, "spans")?;
        let mut arr = JsonArray { out, n: 0 };
        let mut a = WindowAnalyzer::spans_pass(opts.clone(), plan);
        feed(file, &mut a, |a| {
            while let Some(w) = a.pop_span() {
                arr.push(&w)?;
            }
            Ok(())
        })?;
        a.end_stream();
        while let Some(w) = a.pop_span() {
            arr.push(&w)?;
        }
        arr.close()?;
    }
    out.write_all(rest.as_bytes()).map_err(|e| e.to_string())?;
    writeln!(out)
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
}

/// Writes `text` up to and including the `[` of the empty top-level array `key` and returns
/// the text after its `]`. Top-level keys sit on their own line, indented two spaces; a JSON
/// string holds no raw newline, so the match is unique.
fn open_array<'t>(out: &mut impl Write, text: &'t str, key: &str) -> Result<&'t str, String> {
    let head = format!("\n  \"{key}\": [");
    let at = text
        .find(&format!("{head}]"))
        .ok_or_else(|| format!("internal error: no empty {key} list to fill"))?;
    let end = at + head.len();
    out.write_all(&text.as_bytes()[..end])
        .map_err(|e| e.to_string())?;
    Ok(&text[end + 1..])
}

/// The items of a top-level array, written as `serde_json::to_string_pretty` writes them.
struct JsonArray<'a, W: Write> {
    out: &'a mut W,
    n: u64,
}

impl<W: Write> JsonArray<'_, W> {
    fn push(&mut self, item: &impl serde::Serialize) -> Result<(), String> {
        let text = serde_json::to_string_pretty(item).map_err(|e| e.to_string())?;
        let out = &mut *self.out;
        let io = |e: std::io::Error| e.to_string();
        out.write_all(if self.n == 0 { b"\n" } else { b",\n" })
            .map_err(io)?;
        // Two levels deep: four spaces before every line.
        for (k, line) in text.split('\n').enumerate() {
            if k > 0 {
                out.write_all(b"\n").map_err(io)?;
            }
            out.write_all(b"    ").map_err(io)?;
            out.write_all(line.as_bytes()).map_err(io)?;
        }
        self.n += 1;
        Ok(())
    }

    fn close(self) -> Result<(), String> {
        let end: &[u8] = if self.n == 0 { b"]" } else { b"\n  ]" };
        self.out.write_all(end).map_err(|e| e.to_string())
    }
}

/// The one mapping of the command line to analysis options: those of `flinch_core::analyzer`
/// (the entry point the web page uses), so both give the same bytes for the same file and
/// options. The text forms adjust two of them (see `run`).
fn analyze_options(args: &Args, power_source: PowerSource) -> Result<WindowOptions, String> {
    let options = AnalyzerOptions {
        kind: Kind::Csv,
        limits: LimitsPreset::Exact,
        custom_limits: None,
        source: args.csv.display().to_string(),
        start: args.start.clone(),
        end: args.end.clone(),
        occurrence: args.occurrence,
        gpu: args.gpu,
        spans: args.spans,
        max_gap_ms: Some(args.max_gap_ms),
        power_source,
        top: None,
        mergeable: false,
    };
    options
        .window_options()
        .map_err(|e| format!("flinch-trace analyze: {}: {e}", args.csv.display()))
}

/// `--gpu N` where no sample has `gpu_index` N: an error naming it (the analysis would be empty).
fn check_gpu(args: &Args, r: &RecordingAnalysis) -> Result<(), String> {
    match args.gpu {
        // A recording without GPU readings has no GPU at all: its note says so.
        Some(g) if r.gpus.is_empty() && r.rows.samples > 0 && r.gpu_energy_note.is_none() => {
            Err(format!(
                "flinch-trace analyze: --gpu {g}: no SAMPLE row of {} has gpu_index {g} (rows without one count as GPU 0); leave --gpu out to analyze every GPU",
                args.csv.display()
            ))
        }
        _ => Ok(()),
    }
}

/// `--json`: pass 1 of the analysis, then the JSON written out (further passes when the marks
/// or spans are many), never holding the whole text.
fn json_mode(args: &Args, opts: WindowOptions) -> CmdResult {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Warnings on stderr, as without --json (presentation only: the JSON holds them too).
    let selection_error = write_json(args, opts, &mut out, warn_all)?;
    if let Some(message) = selection_error {
        eprintln!("{message}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Analyzes `args.csv` and writes the `--json` text to `out`, calling `warn` with the analysis
/// before writing. Returns the message of a missing or misplaced mark (the JSON is written
/// whole all the same, with its `selection`).
fn write_json(
    args: &Args,
    opts: WindowOptions,
    out: &mut impl Write,
    warn: impl FnOnce(&RecordingAnalysis),
) -> Result<Option<String>, String> {
    // Many marks or spans are read again in further passes.
    let file = open_csv(&args.csv, Passes::Several)?;
    let mut a = WindowAnalyzer::planning(opts.clone(), hold());
    let note = feed(&file, &mut a, |_| Ok(()))?;
    let mut planned = a.end_planned();
    planned.analysis.warnings.extend(note);
    let r = &planned.analysis;
    check_gpu(args, r)?;
    warn(r);
    let selection_error = r
        .selection
        .as_ref()
        .and_then(|s| s.error())
        .map(|e| e.to_string());
    write_recording_json(out, &file, &opts, planned)?;
    Ok(selection_error)
}

/// What `analyze ... --json` gives.
pub struct JsonOutput {
    /// The JSON text, as printed (with its trailing newline).
    pub json: Vec<u8>,
    /// The message of a missing or misplaced mark, which the CLI prints on stderr after the
    /// JSON before it exits with status 1.
    pub selection_error: Option<String>,
}

/// `analyze ... --json` for `args` (whatever `args.json`), into memory and with nothing on
/// stderr but the spooling note of an input that is not a regular file: the Python wheel's
/// `analyze`. `Err` holds the message the CLI prints (a usage error,
/// an unreadable file, `--gpu N` absent).
pub fn json(args: &Args) -> Result<JsonOutput, String> {
    marks_given(args, true)?;
    let opts = analyze_options(args, power_source(args))?;
    let mut json = Vec::new();
    let selection_error = write_json(args, opts, &mut json, |_| {})?;
    Ok(JsonOutput {
        json,
        selection_error,
    })
}

/// Both `--start` and `--end`, or neither with `--json` or `--spans`.
fn marks_given(args: &Args, json: bool) -> Result<(), &'static str> {
    match (&args.start, &args.end) {
        (Some(_), Some(_)) => Ok(()),
        (None, None) if json || args.spans => Ok(()),
        _ => Err(
            "flinch-trace analyze: --start and --end are both required (or use --json / --spans alone)",
        ),
    }
}

/// `--power-source`, else the sidecar's, else unknown.
fn power_source(args: &Args) -> PowerSource {
    args.power_source
        .or_else(|| sidecar::power_source(&args.csv))
        .unwrap_or_default()
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    marks_given(&args, args.json).map_err(|m| CmdError::Usage(m.into()))?;
    let opts = analyze_options(&args, power_source(&args)).map_err(CmdError::Usage)?;
    if args.json {
        return json_mode(&args, opts);
    }
    // The text forms print no plot, and the three lines need only the reference's figures.
    let opts = WindowOptions {
        series_points: 0,
        reference_only: !args.spans,
        ..opts
    };
    // Only the spans may need a further pass: the three lines come from the first.
    let passes = if args.spans {
        Passes::Several
    } else {
        Passes::One
    };
    let file = open_csv(&args.csv, passes)?;
    let mut analyzer = WindowAnalyzer::planning(opts.clone(), hold());
    let note = feed(&file, &mut analyzer, |_| Ok(()))?;
    let mut planned = analyzer.end_planned();
    planned.analysis.warnings.extend(note);
    let r = &planned.analysis;
    check_gpu(&args, r)?;

    if let Some(sel) = &r.selection
        && let Some(err) = sel.error()
    {
        warn_all(r);
        return Err(err.to_string().into());
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = |e: std::io::Error| e.to_string();
    if let Some(w) = &r.window {
        // The reference's three lines, byte for byte.
        let mut text = String::new();
        write_reference_lines(&mut text, w.duration_s, &w.reference).map_err(|e| e.to_string())?;
        out.write_all(text.as_bytes()).map_err(io)?;
        if args.gpu.is_none() && r.gpus.len() > 1 {
            out.flush().map_err(io)?;
            eprintln!(
                "note: {} GPUs in this file; these lines mix their samples as the reference does: use --gpu N or --json",
                r.gpus.len()
            );
        }
    } else if r.selection.is_some() {
        // Both marks were found but one of them arrived beyond the reorder horizon.
        warn_all(r);
        return Err(
            "flinch-trace analyze: a mark of the window arrived too late in the file to be placed in time order (see the warning above)"
                .into(),
        );
    }
    if args.spans {
        for w in &r.spans {
            writeln!(out, "{}", span_line(w)).map_err(io)?;
        }
        if let Some(plan) = planned.spans {
            // Many spans: read them again, each line written as soon as it is decided.
            let mut a = WindowAnalyzer::spans_pass(opts, plan);
            feed(&file, &mut a, |a| {
                while let Some(w) = a.pop_span() {
                    writeln!(out, "{}", span_line(&w)).map_err(io)?;
                }
                Ok(())
            })?;
            a.end_stream();
            while let Some(w) = a.pop_span() {
                writeln!(out, "{}", span_line(&w)).map_err(io)?;
            }
        }
    }
    out.flush().map_err(io)?;
    warn_all(r);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-thread path makes the same calls in the same order as `write` on the whole
    /// file: the full recording-level analysis (spans, marks, counts, warnings) is identical,
    /// for batches of one row, a few rows and the default size.
    #[test]
    fn two_threads_give_the_same_analysis_as_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/analyze");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{files:?}");
        // And one with every reader event: quoted labels (a newline, a comma), a repeated
        // header, an over-long record, a bad timestamp, blank lines, an unknown row type.
        let hdr = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n";
        let mut text = String::from(hdr);
        for k in 0..400u64 {
            let t = 1_000_000_000 + k * 10_000_000;
            text.push_str(&format!(
                "{t},{t},SAMPLE,,{}.5,{},1,1400,60,{}\n",
                100 + k % 7,
                k % 100,
                k * 9
            ));
            match k % 50 {
                3 => text.push_str(&format!(
                    "{},0,MARK,\"step,\nstart\",,,,,,\n",
                    t - 3_000_000
                )),
                9 => text.push_str(&format!("{t},0,MARK,step_end,,,,,,\n")),
                17 => text.push_str(hdr),
                23 => text.push_str(&format!("{t},0,MARK,{},,,,,,\n", "x".repeat(5000))),
                31 => text.push_str("12x,0,SAMPLE,,1,1,,,,\n\n\n"),
                37 => text.push_str(&format!("{t},0,OTHER,,,,,,,\n")),
                _ => {}
            }
        }
        let tricky =
            std::env::temp_dir().join(format!("flinch-two-threads-{}.csv", std::process::id()));
        std::fs::write(&tricky, text).unwrap();
        files.push(tricky.clone());
        for path in &files {
            for reference_only in [false, true] {
                let opts = || WindowOptions {
                    spans: true,
                    series_points: 50,
                    reference_only,
                    ..WindowOptions::default()
                };
                let file = InputFile::open(path, Passes::One).unwrap();
                let mut one = WindowAnalyzer::new(opts());
                read_all(&file, |chunk| {
                    one.write(chunk);
                    Ok(())
                })
                .unwrap();
                let want = one.end().to_json();
                if *path == tricky {
                    let v: serde_json::Value = serde_json::from_str(&want).unwrap();
                    let rows = &v["rows"];
                    assert_eq!(rows["headers"], 9, "{rows}");
                    assert_eq!(rows["bad_rows"], 16, "{rows}");
                    assert_eq!(rows["other_rows"], 8, "{rows}");
                    assert!(want.contains("step,\\nstart"), "{want}");
                }
                if !reference_only {
                    // `--json` (window and recording level): the page's entry point vs pass 1
                    // holding everything, and vs the marks and spans streamed in more passes.
                    for (start, end) in [(None, None), (Some("begin"), Some("end"))] {
                        let options = AnalyzerOptions {
                            kind: Kind::Csv,
                            limits: LimitsPreset::Exact,
                            custom_limits: None,
                            source: path.display().to_string(),
                            start: start.map(String::from),
                            end: end.map(String::from),
                            occurrence: 1,
                            gpu: None,
                            spans: false,
                            max_gap_ms: Some(5000),
                            power_source: PowerSource::Unknown,
                            top: None,
                            mergeable: false,
                        };
                        let mut page = flinch_core::analyzer::Analyzer::new(options.clone());
                        page.write(&std::fs::read(path).unwrap()).unwrap();
                        // A missing selection still gives the whole result.
                        let want = page.end().unwrap() + "\n";
                        let opts = options.window_options().unwrap();
                        for hold in [0, 1, 5, HOLD] {
                            let mut a = WindowAnalyzer::planning(opts.clone(), hold);
                            feed(&file, &mut a, |_| Ok(())).unwrap();
                            let mut out = Vec::new();
                            write_recording_json(&mut out, &file, &opts, a.end_planned()).unwrap();
                            assert_eq!(
                                String::from_utf8(out).unwrap(),
                                want,
                                "{} --json {start:?} hold {hold}",
                                path.display()
                            );
                        }
                    }
                }
                for batch in [1, 3, BATCH_ROWS] {
                    let mut two = WindowAnalyzer::new(opts());
                    analyze_two_threads(&file, &mut two, batch, &mut |_| Ok(())).unwrap();
                    assert_eq!(
                        two.end().to_json(),
                        want,
                        "{} batch {batch}",
                        path.display()
                    );
                }
            }
        }
        std::fs::remove_file(tricky).unwrap();
    }

    #[test]
    fn python_fixed_formatting() {
        assert_eq!(py_fixed(0.125, 2), "0.12");
        assert_eq!(py_fixed(f64::NAN, 3), "nan");
        assert_eq!(py_fixed(f64::NEG_INFINITY, 3), "-inf");
        assert_eq!(py_fixed(-0.0, 3), "-0.000");
    }
}
