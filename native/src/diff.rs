//! `flinch-trace diff A B [--telemetry-a CSV] [--telemetry-b CSV] [--steps] [--json] [--top N]`: two
//! runs compared (docs/diff.md). The comparison is the core's diff job
//! (`flinch_core::diff::DiffJob`), driven over the files by `flinch_host::diff`; this holds the
//! command line and prints: the verdict line, then the category and top-change tables, or the
//! result's JSON.
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use flinch_core::Exactness;
use flinch_core::diff::{DiffResult, OpStatus};
use flinch_host::diff::DiffRequest;

use crate::{CmdError, CmdResult};

/// Arguments of `flinch-trace diff`.
#[derive(clap::Args)]
pub struct Args {
    /// Input A, the baseline: a trace (`.json`, `.json.gz`), or a summary with its mergeable
    /// section (`trace --json --mergeable`, `merge --json`).
    a: PathBuf,
    /// Input B, the change: the same kinds as A.
    b: PathBuf,
    /// A recording (trace.csv) of run A: adds energy per annotation.
    #[arg(long, value_name = "CSV")]
    telemetry_a: Option<PathBuf>,
    /// A recording of run B.
    #[arg(long, value_name = "CSV")]
    telemetry_b: Option<PathBuf>,
    /// Compare the training steps too (docs/steps.md, docs/diff.md): the median step with a
    /// 95 % interval, the breakdown, the parts that moved, energy per step with power.
    #[arg(long)]
    steps: bool,
    /// With --steps: the steps' annotation name, exact or a glob with `*` (default
    /// `ProfilerStep#<N>`); implies --steps.
    #[arg(long, value_name = "PATTERN")]
    step_name: Option<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// How many ops to list, largest change of duration sum first.
    #[arg(long, default_value_t = flinch_core::summary::DEFAULT_TOP_OPS, value_name = "N",
          allow_hyphen_values = true, value_parser = crate::values::count)]
    top: usize,
    /// The verdict's threshold: a change smaller than this share of the busy time (and of the
    /// total duration sum, for an op) is no significant change, %.
    #[arg(long, default_value_t = 1.0, value_name = "PCT", allow_hyphen_values = true,
          value_parser = threshold_pct)]
    threshold_pct: f64,
    /// A GPU pause is an idle gap of at least this many ms (default 100).
    #[arg(long, value_name = "MS", allow_hyphen_values = true,
          value_parser = crate::values::min_gap_ms)]
    min_gap_ms: Option<f64>,
    /// Each trace's summary in small bounded memory (as `trace --bounded`).
    #[arg(long, conflicts_with = "exact")]
    bounded: bool,
    /// Each trace's summary exact in memory alone (as `trace --exact`).
    #[arg(long)]
    exact: bool,
    /// Scan threads for a plain trace of 16 MiB or more (as `trace --threads`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
}

fn threshold_pct(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|&p| flinch_core::diff::options::threshold_pct_ok(p))
        .ok_or_else(|| flinch_core::diff::options::THRESHOLD_PCT_EXPECTED.to_string())
}

/// The request of these arguments.
///
/// # Errors
/// A bad option (exit 2).
pub fn request(args: &Args) -> Result<DiffRequest, CmdError> {
    let mut req = DiffRequest::new(args.a.clone(), args.b.clone());
    req.telemetry = [args.telemetry_a.clone(), args.telemetry_b.clone()];
    req.exactness = if args.bounded {
        Exactness::Bounded
    } else if args.exact {
        Exactness::Exact
    } else {
        Exactness::Native
    };
    req.threads = args.threads.map(usize::from);
    req.top = args.top;
    req.threshold_pct = args.threshold_pct;
    req.join = flinch_core::join::join_options(args.min_gap_ms, 0, None, None)
        .map_err(|e| CmdError::Usage(format!("flinch-trace diff: {e}")))?;
    let mut o = flinch_core::diff::DiffOptions::new(String::new(), String::new());
    o.set_steps(args.steps, args.step_name.as_deref())
        .map_err(|e| CmdError::Usage(format!("flinch-trace diff: {e}")))?;
    req.steps = o.steps;
    Ok(req)
}

/// Runs the subcommand.
pub fn run(args: Args) -> CmdResult {
    let req = request(&args)?;
    let r = flinch_host::diff::run(&req).map_err(|e| format!("flinch-trace diff: {e}"))?;
    if args.json {
        let text = r.to_json().map_err(|e| format!("flinch-trace diff: {e}"))?;
        println!("{text}");
    } else {
        print!("{}", render_text(&r));
    }
    Ok(ExitCode::SUCCESS)
}

fn opt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.3}x"))
}

/// The readable view: the verdict, the categories, the top changes, the pauses.
pub fn render_text(r: &DiffResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", r.verdict);
    let _ = writeln!(
        s,
        "  A: {} ({:?}), B: {} ({:?})",
        r.a.source, r.a.kind, r.b.source, r.b.kind
    );
    if let Some(st) = &r.steps {
        render_steps(&mut s, st.as_ref());
    }
    let _ = writeln!(
        s,
        "\n  {:>14} {:>14} {:>12} {:>9}  {:>14} {:>14} {:>12}  category",
        "busy_A_ms", "busy_B_ms", "delta_ms", "ratio", "sum_A_ms", "sum_B_ms", "delta_ms"
    );
    for c in r.categories.iter().chain([&r.totals]) {
        let _ = writeln!(
            s,
            "  {:>14.3} {:>14.3} {:>+12.3} {:>9}  {:>14.3} {:>14.3} {:>+12.3}  {}",
            c.busy_union_ms_a,
            c.busy_union_ms_b,
            c.delta_busy_union_ms,
            opt_ratio(c.ratio_busy_union),
            c.duration_sum_ms_a,
            c.duration_sum_ms_b,
            c.delta_duration_sum_ms,
            c.name
        );
    }
    let _ = writeln!(
        s,
        "\n  top {} changes by duration sum ({} ops in both, {} only in A, {} only in B; p50 {} / {})",
        r.ops.len(),
        r.ops_compared.both,
        r.ops_compared.only_a,
        r.ops_compared.only_b,
        r.a.p50,
        r.b.p50
    );
    let _ = writeln!(
        s,
        "  {:>12} {:>9} {:>8} {:>8} {:>12} {:>12}  op",
        "delta_ms", "ratio", "n_A", "n_B", "p50_A_us", "p50_B_us"
    );
    let p50 = |o: &Option<flinch_core::diff::compare::OpSide>| {
        o.as_ref()
            .and_then(|o| o.p50_us)
            .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
    };
    let n = |o: &Option<flinch_core::diff::compare::OpSide>| {
        o.as_ref()
            .map_or_else(|| "-".to_string(), |o| o.n.to_string())
    };
    for o in &r.ops {
        let ratio = match o.status {
            OpStatus::Both => opt_ratio(o.ratio_sum),
            OpStatus::OnlyA => "gone".to_string(),
            OpStatus::OnlyB => "new".to_string(),
        };
        let _ = writeln!(
            s,
            "  {:>+12.3} {:>9} {:>8} {:>8} {:>12} {:>12}  {} {}",
            o.delta_sum_ms,
            ratio,
            n(&o.a),
            n(&o.b),
            p50(&o.a),
            p50(&o.b),
            o.category,
            o.name
        );
    }
    if let Some(p) = &r.pauses {
        let _ = writeln!(
            s,
            "\n  GPU pauses (idle gaps of {} ms or more)",
            p.min_gap_ms_a.or(p.min_gap_ms_b).unwrap_or(0.0)
        );
        let side = |d: &Option<flinch_core::diff::side::DevicePauses>| {
            d.as_ref().map_or_else(
                || "-".to_string(),
                |d| format!("{} pauses, {:.3} ms", d.pauses, d.total_ms),
            )
        };
        for d in &p.devices {
            let _ = writeln!(
                s,
                "  device {}: A {}; B {}",
                d.device,
                side(&d.a),
                side(&d.b)
            );
        }
    }
    if let Some(rows) = &r.energy {
        let _ = writeln!(s, "\n  GPU energy per annotation");
        let j = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
        for e in rows {
            let _ = writeln!(
                s,
                "  {:>12} J vs {:>12} J ({:>+10} J)  {} {}",
                j(e.gpu_energy_j_b),
                j(e.gpu_energy_j_a),
                j(e.delta_j),
                e.category,
                e.name
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    s
}

/// The steps' block: the step times and their interval, the breakdowns side by side, the parts
/// that moved, the energy per step.
fn render_steps(s: &mut String, st: Option<&flinch_core::diff::StepsDiff>) {
    let Some(st) = st else {
        let _ = writeln!(s, "\n  steps: none compared (see the warnings)");
        return;
    };
    let t = &st.time;
    let ci = t.ci95_pct.map_or_else(
        || "no interval (fewer than 4 steps a side)".to_string(),
        |[lo, hi]| format!("95 % CI {lo:+.1} % to {hi:+.1} %"),
    );
    let _ = writeln!(
        s,
        "\n  steps ({}): A {} steps, median {:.3} ms; B {} steps, median {:.3} ms",
        st.pattern, t.n_a, t.median_ms_a, t.n_b, t.median_ms_b
    );
    let _ = writeln!(
        s,
        "  shift {:+.3} ms ({:+.1} %, {ci}; Hodges-Lehmann, {}){}",
        t.shift_ms,
        t.change_pct,
        t.method,
        if t.significant {
            ""
        } else {
            ": no significant change"
        }
    );
    let _ = writeln!(
        s,
        "  {:>12} {:>12} {:>12} {:>14} {:>9}  part",
        "median_A_ms", "median_B_ms", "delta_ms", "delta_total_ms", "moved"
    );
    for p in &st.parts {
        let _ = writeln!(
            s,
            "  {:>12.3} {:>12.3} {:>+12.3} {:>+14.3} {:>9}  {}",
            p.median_ms_a,
            p.median_ms_b,
            p.delta_median_ms,
            p.delta_total_ms,
            format!(
                "{}/{}{}",
                p.steps_moved,
                p.of_steps,
                p.moved_in.to_uppercase()
            ),
            p.part
        );
    }
    if let Some(e) = &st.energy {
        let ci = e.ci95_pct.map_or_else(
            || "no interval".to_string(),
            |[lo, hi]| format!("95 % CI {lo:+.1} % to {hi:+.1} %"),
        );
        let _ = writeln!(
            s,
            "  energy per step: A median {:.3} J ({} steps), B median {:.3} J ({} steps): shift {:+.3} J ({:+.1} %, {ci}){}",
            e.median_j_a,
            e.n_a,
            e.median_j_b,
            e.n_b,
            e.shift_j,
            e.change_pct,
            if e.significant {
                ""
            } else {
                ": no significant change"
            }
        );
        if let Some(w) = &e.per_step {
            let _ = writeln!(
                s,
                "  energy of the same {} steps: A {:.3} J ({:.3} J a step), B {:.3} J ({:.3} J a step), {:+.1} %",
                w.steps, w.total_j_a, w.per_step_j_a, w.total_j_b, w.per_step_j_b, w.change_pct
            );
        }
    }
}
