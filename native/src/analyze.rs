//! `flinch-trace analyze`: duration, GPU energy, utilization and a verdict between marks of a
//! trace.csv. Thin adapter: the command line, presentation and exit codes; the job is
//! `flinch_core::window::AnalyzeJob`, driven from the file system by `flinch_host::analyze`.
//!
//! Exit status: 0 on success (including `gpu_energy_J≈(n/a)`, as the reference); 1 for a missing
//! or out-of-order mark (the reference's texts) and for an unreadable file; 2 for usage errors.
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::window::{
    Analyzed, FIRST_PASS_HOLD, MARK_TOO_LATE, MixedGpusNote, PowerSource, PyFixed,
    RecordingAnalysis, VerdictText, WindowResult, write_reference_lines,
};
use flinch_host::analyze::{self as job, AnalyzeRequest, CsvInput, Form, PassProgress};

use crate::progress::ProgressLine;
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
    #[arg(long, default_value_t = job::DEFAULT_MAX_GAP_MS, value_name = "MS",
          allow_hyphen_values = true, value_parser = crate::values::millis)]
    pub max_gap_ms: u64,
    /// Which NVML power reading gpu_power_W holds. Default: from the `<csv>.meta.json` sidecar
    /// when it says, else unknown.
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub power_source: Option<PowerSource>,
}

impl Args {
    /// The request these arguments make.
    fn request(&self) -> AnalyzeRequest {
        AnalyzeRequest {
            csv: self.csv.clone(),
            start: self.start.clone(),
            end: self.end.clone(),
            occurrence: self.occurrence,
            spans: self.spans,
            gpu: self.gpu,
            max_gap_ms: self.max_gap_ms,
            power_source: self.power_source,
            first_pass_hold: FIRST_PASS_HOLD,
        }
    }
}

/// Formats as Python's `f"{x:.{prec}f}"` (nan, inf, -inf spelled as Python does).
fn py_fixed(x: f64, prec: usize) -> String {
    PyFixed(x, prec).to_string()
}

/// The progress line of each pass over a big file on a terminal.
#[derive(Default)]
struct PassLine(Option<ProgressLine>);

impl PassProgress for PassLine {
    fn begin(&mut self, total_bytes: u64) {
        self.0 = Some(ProgressLine::new("analyze", total_bytes));
    }

    fn update(&mut self, read_bytes: u64) {
        if let Some(p) = &mut self.0 {
            p.update(read_bytes);
        }
    }

    fn end(&mut self) {
        // Dropping the line erases it.
        self.0 = None;
    }
}

/// The first pass of `req` as `form`, with a progress line on a terminal.
fn analyze(req: &AnalyzeRequest, form: Form) -> Result<(CsvInput, Analyzed), CmdError> {
    let opts = job::window_options(req, form).map_err(CmdError::Usage)?;
    let mut input = CsvInput::open(req, form)?;
    input.show_progress(Box::new(PassLine::default()));
    Ok(job::first_pass(req, input, opts)?)
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

/// `--json`: the first pass, then the JSON written out (further passes when the marks or spans
/// are many), never holding the whole text. Warnings on stderr, as without `--json`
/// (presentation only: the JSON holds them too).
fn json_mode(req: &AnalyzeRequest) -> CmdResult {
    let (mut input, mut analyzed) = analyze(req, Form::Json)?;
    warn_all(analyzed.analysis());
    let selection_error = analyzed.selection_error();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    job::write_json(&mut input, &mut analyzed, &mut out)?;
    if let Some(e) = selection_error {
        eprintln!("{e}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The text forms: the reference's three lines for a window, then with `--spans` a line per
/// span (read again in a further pass when there are many).
fn text_mode(req: &AnalyzeRequest, out: &mut impl Write) -> CmdResult {
    let (mut input, mut analyzed) = analyze(req, Form::Text)?;
    let r = analyzed.analysis();
    if let Some(sel) = &r.selection
        && let Some(err) = sel.error()
    {
        warn_all(r);
        return Err(err.to_string().into());
    }
    let io = |e: std::io::Error| e.to_string();
    if let Some(w) = &r.window {
        // The reference's three lines, byte for byte.
        let mut text = String::new();
        write_reference_lines(&mut text, w.duration_s, &w.reference).map_err(|e| e.to_string())?;
        out.write_all(text.as_bytes()).map_err(io)?;
        if req.gpu.is_none() && r.gpus.len() > 1 {
            out.flush().map_err(io)?;
            eprintln!("{}", MixedGpusNote(r.gpus.len()));
        }
    } else if r.selection.is_some() {
        // Both marks were found but one of them arrived beyond the reorder horizon.
        warn_all(r);
        return Err(MARK_TOO_LATE.into());
    }
    if req.spans {
        let mut failed = None;
        analyzed.for_each_span(&mut input, |w| match writeln!(out, "{}", span_line(w)) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e.to_string());
                ControlFlow::Break(())
            }
        })?;
        if let Some(e) = failed {
            return Err(e.into());
        }
    }
    out.flush().map_err(io)?;
    warn_all(analyzed.analysis());
    Ok(ExitCode::SUCCESS)
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let req = args.request();
    if args.json {
        return json_mode(&req);
    }
    text_mode(&req, &mut std::io::BufWriter::new(std::io::stdout().lock()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `--spans` lines are the same whether the first pass held every span or they were
    /// read again in a further pass (the CLI's hold is 4096; here a few).
    #[test]
    fn spans_lines_from_further_passes_are_the_same() {
        let mut text =
            String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct\n");
        for k in 0..60u64 {
            let t = 1_000_000_000 + k * 20_000_000;
            text.push_str(&format!("{t},0,SAMPLE,,{},{}\n", 60 + k * 7 % 200, k % 101));
            let label = match k % 3 {
                0 => format!("s{k}_start"),
                1 => format!("s{}_end", k - 1),
                _ => "m".to_string(),
            };
            text.push_str(&format!("{},0,MARK,{label},,\n", t + 1000));
        }
        let path = std::env::temp_dir().join(format!("flinch-spans-{}.csv", std::process::id()));
        std::fs::write(&path, text).unwrap();
        for window in [
            None,
            Some(("s3_start", "s3_end")),
            Some(("s3_start", "absent")),
        ] {
            let mut req = AnalyzeRequest::new(path.clone());
            req.spans = true;
            if let Some((a, b)) = window {
                req.start = Some(a.into());
                req.end = Some(b.into());
            }
            let lines = |hold| {
                let mut out = Vec::new();
                let req = AnalyzeRequest {
                    first_pass_hold: hold,
                    ..req.clone()
                };
                // A missing window is an error in both.
                let ok = text_mode(&req, &mut out).is_ok();
                (String::from_utf8(out).unwrap(), ok)
            };
            let want = lines(FIRST_PASS_HOLD);
            if window.is_some_and(|w| w.1 == "absent") {
                assert!(!want.1 && want.0.is_empty());
            } else {
                assert!(want.1 && want.0.lines().count() > 50, "{}", want.0);
            }
            for hold in [0, 1, 2, 5] {
                assert_eq!(lines(hold), want, "{window:?} hold {hold}");
            }
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn python_fixed_formatting() {
        assert_eq!(py_fixed(0.125, 2), "0.12");
        assert_eq!(py_fixed(f64::NAN, 3), "nan");
        assert_eq!(py_fixed(f64::NEG_INFINITY, 3), "-inf");
        assert_eq!(py_fixed(-0.0, 3), "-0.000");
    }
}
