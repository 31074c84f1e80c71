//! `flinch-trace record`: samples GPUs (NVML), RAPL powercap zones and the host into a trace.csv,
//! with named marks from a FIFO, optionally for the lifetime of a command.
//!
//! Threads: the sampler (absolute deadlines), the writer (owns the files), the marks reader, the
//! signal taker, and the main thread (which runs and waits for the command, if any).
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::{CmdError, CmdResult, values};

pub mod clock;
pub mod command;
pub mod gpu;
pub mod health;
pub mod host;
pub mod jsonl;
pub mod marks;
pub mod metrics;
pub mod nvml;
pub mod nvtx;
pub mod nvtx_counts;
pub mod rapl;
pub mod sampler;
pub mod sidecar;
pub mod signals;
pub mod slow;
pub mod torch;
pub mod writer;

use clock::{Clock, FakeClock, SystemClock};
use gpu::{GpuSource, ScriptedGpu};
use sidecar::{GpuEntry, NvtxInfo, Sidecar};
use writer::{Msg, Writer, column_count, header, push_mark_row};

/// Arguments of `flinch-trace record` (the reference sampler's flags keep working).
#[derive(clap::Args)]
pub struct Args {
    /// Output CSV; appended to when it exists with the same columns (the header is not repeated).
    /// Default `trace.csv`; with `--metrics` and no `--out`, nothing is written (a daemon).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Serve live metrics for Prometheus at `http://ADDR/metrics` (e.g. `127.0.0.1:9464`;
    /// docs/metrics.md). Without `--out`, records until stopped and keeps no rows.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Distinct window names with series of their own in `--metrics`; later names are counted
    /// under `window="(other)"`.
    #[arg(long, default_value_t = 64, value_name = "N", allow_hyphen_values = true,
          value_parser = values::metrics_windows)]
    metrics_windows: usize,
    /// GPU indices to sample, e.g. `0,2` (default: every GPU).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true,
          value_parser = values::nvml_index)]
    gpu: Option<Vec<u32>>,
    /// Sampling period in milliseconds (fractions allowed, 0.05 to 3600000).
    #[arg(long, default_value_t = 10.0, value_name = "MS", allow_hyphen_values = true,
          value_parser = values::interval_ms)]
    interval_ms: f64,
    /// Recording length in seconds (default 30; `inf` records until Ctrl-C or SIGTERM). With a
    /// command, the recording lasts as long as the command instead.
    #[arg(long, value_name = "S", allow_hyphen_values = true, value_parser = values::seconds)]
    seconds: Option<f64>,
    /// Marks FIFO (created 0600 if missing). With a command, a private one is made when omitted.
    #[arg(long)]
    marks_fifo: Option<PathBuf>,
    /// The `energy_uj` file that fills `rapl_energy_uj` (default: the first package zone).
    #[arg(long)]
    rapl: Option<PathBuf>,
    /// Do not record RAPL.
    #[arg(long)]
    no_rapl: bool,
    /// Powercap sysfs root to discover RAPL zones in.
    #[arg(long, default_value = "/sys/class/powercap")]
    powercap_root: PathBuf,
    /// Where /proc is (host CPU and memory).
    #[arg(long, default_value = "/proc")]
    proc_root: PathBuf,
    /// Host CPU/memory period in milliseconds (/proc/stat counts in 10 ms jiffies).
    #[arg(long, default_value_t = 100, value_name = "MS", allow_hyphen_values = true,
          value_parser = values::host_interval_ms)]
    host_interval_ms: u64,
    /// Do not record host CPU and memory.
    #[arg(long)]
    no_host: bool,
    /// Fail (non-zero exit) instead of recording without GPU data when NVML is unavailable.
    #[arg(long)]
    require_gpu: bool,
    /// Also write host telemetry JSONL rows in the schema `summarize` reads.
    #[arg(long)]
    host_jsonl: Option<PathBuf>,
    /// Host-telemetry JSONL period in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS", allow_hyphen_values = true,
          value_parser = values::host_interval_ms)]
    host_jsonl_interval_ms: u64,
    /// Testing seam: replay GPU readings from a script instead of NVML (see README).
    #[arg(long, hide = true)]
    scripted_gpu: Option<PathBuf>,
    /// Testing seam: a virtual clock advancing this many ns per reading (deterministic output).
    #[arg(long, hide = true, allow_hyphen_values = true, value_parser = values::step_ns)]
    fake_clock_step_ns: Option<u64>,
    /// Do not inject the NVTX library into the command (its NVTX ranges then make no marks).
    #[arg(long)]
    no_nvtx: bool,
    /// Profile a PyTorch command with torch.profiler, no line of it changed, and print the answer
    /// when it ends (docs/torch-profile.md). SCHEDULE: wait,warmup,active[,repeat] optimizer
    /// steps (default 5,2,10,1).
    #[arg(long, value_name = "SCHEDULE", num_args = 0..=1, require_equals = true,
          default_missing_value = "5,2,10,1", value_parser = torch::parse_schedule)]
    torch_profile: Option<torch::Schedule>,
    /// With --torch-profile: write the trace and the recording, print no report.
    #[arg(long, requires = "torch_profile")]
    no_report: bool,
    /// Command to run and record: `flinch-trace record [OPTIONS] -- CMD ARGS...`.
    #[arg(last = true)]
    command: Vec<String>,
}

/// A FIFO the recorder made and removes at the end (with its private directory, if any).
struct FifoGuard {
    path: PathBuf,
    created: bool,
    private_dir: Option<PathBuf>,
}

impl Drop for FifoGuard {
    fn drop(&mut self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
        if let Some(d) = &self.private_dir {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn private_fifo() -> Result<FifoGuard, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!(
        "flinch-trace-{}-{}",
        std::process::id(),
        clock::mono_now_ns()
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("error: cannot create {}: {e}", dir.display()))?;
    let path = dir.join("marks");
    let created = marks::ensure_fifo(&path)?;
    Ok(FifoGuard {
        path,
        created,
        private_dir: Some(dir),
    })
}

/// The options together: conflicting ones are usage errors (each value's range is its parser's,
/// `crate::values`); an output path that cannot be a file is a runtime error.
fn validate(a: &Args) -> Result<(), CmdError> {
    let usage = |m: &str| Err(CmdError::Usage(format!("error: {m}")));
    if a.seconds.is_some() && !a.command.is_empty() {
        return usage(
            "give either --seconds or a command (the command's lifetime is the recording)",
        );
    }
    if a.fake_clock_step_ns.is_some()
        && a.command.is_empty()
        && !a.seconds.is_some_and(f64::is_finite)
    {
        return usage("the virtual clock needs a finite --seconds");
    }
    if a.torch_profile.is_some() && (a.command.is_empty() || a.out.is_none() && a.metrics.is_some())
    {
        return usage(
            "--torch-profile needs a command to run and a recording (--out) to write beside",
        );
    }
    if a.scripted_gpu.is_some() && a.gpu.is_some() {
        return usage("--gpu does not apply to a scripted GPU source");
    }
    if let Some(g) = &a.gpu {
        let mut seen = g.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != g.len() {
            return usage("--gpu lists a GPU twice");
        }
    }
    if let Some(out) = &a.out {
        writer::check_output_path(out)?;
    }
    if let Some(j) = &a.host_jsonl {
        writer::check_output_path(j)?;
    }
    // The same file (device and inode) as an input, or both outputs one file, is refused.
    let inputs = [
        ("--scripted-gpu", a.scripted_gpu.as_deref()),
        ("--rapl", a.rapl.as_deref()),
    ];
    let mut pairs: Vec<(&str, &Path, &str, &Path)> = Vec::new();
    for (option, out) in [("--out", &a.out), ("--host-jsonl", &a.host_jsonl)] {
        for (input, path) in inputs {
            if let (Some(o), Some(i)) = (out, path) {
                pairs.push((option, o, input, i));
            }
        }
    }
    if let (Some(o), Some(j)) = (&a.out, &a.host_jsonl) {
        pairs.push(("--out", o, "--host-jsonl", j));
    }
    for (option, o, other, i) in pairs {
        if crate::output::same_file(o, i) {
            return Err(format!(
                "error: {option} {} is the same file as {other} {}; refusing to overwrite it",
                o.display(),
                i.display()
            )
            .into());
        }
    }
    Ok(())
}

/// Runs the subcommand.
pub fn run(mut args: Args) -> CmdResult {
    validate(&args)?;
    // The metrics port is taken before anything else starts: a bad address or a port in use
    // fails here, with nothing recorded.
    let listener = args.metrics.as_deref().map(metrics::bind).transpose()?;
    if let Some(a) = listener.as_ref().and_then(|l| l.local_addr().ok()) {
        eprintln!("flinch-trace record: metrics at http://{a}/metrics");
    }
    let daemon = args.out.is_none() && listener.is_some();
    let out = args
        .out
        .take()
        .or_else(|| (!daemon).then(|| PathBuf::from("trace.csv")));
    if let Some(prog) = args.command.first()
        && let Err(u) = command::resolve(prog, std::env::var_os("PATH").as_deref())
    {
        // Nothing is recorded for a command that cannot start; the shell's exit status says why.
        eprintln!("{}", u.message);
        return Ok(ExitCode::from(u.code));
    }
    let mut warnings: Vec<String> = Vec::new();
    let mut warn = |w: String| {
        eprintln!("{w}");
        warnings.push(w);
    };

    // GPU source.
    let mut gpu_unavailable = None;
    let mut driver = None;
    let (gpu, gpu_source): (Option<Box<dyn GpuSource>>, &'static str) = if let Some(p) =
        &args.scripted_gpu
    {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("error: {}: {e}", p.display()))?;
        (
            Some(Box::new(
                ScriptedGpu::parse(&text).map_err(|e| format!("error: {}: {e}", p.display()))?,
            )),
            "scripted",
        )
    } else {
        match nvml::NvmlSource::open(args.gpu.as_deref()) {
            Ok(src) => {
                driver = Some(src.driver.clone());
                (Some(Box::new(src)), "nvml")
            }
            Err(why) if why.starts_with("--gpu") => return Err(format!("error: {why}").into()),
            Err(why) if args.require_gpu => {
                return Err(format!("error: no GPU data: {why}; --require-gpu was given").into());
            }
            Err(why) => {
                warn(format!(
                    "warning: no GPU data: {why}; recording host and RAPL only (--require-gpu makes this an error)"
                ));
                gpu_unavailable = Some(why);
                (None, "none")
            }
        }
    };

    // RAPL and host.
    let rapl = if args.no_rapl {
        rapl::Rapl::none()
    } else {
        // A missing --rapl file (e.g. the reference's default path on a machine without RAPL)
        // is one warning, as in the reference it was blank columns.
        let primary = match &args.rapl {
            Some(p) if !p.exists() => {
                warn(format!(
                    "warning: RAPL: --rapl {}: no such file; rapl_energy_uj falls back to the first package zone, if any",
                    p.display()
                ));
                None
            }
            other => other.as_deref(),
        };
        let r = rapl::Rapl::discover(&args.powercap_root, primary);
        if let Some(w) = r.warning() {
            warn(w);
        }
        if r.zones().is_empty() {
            warn(format!(
                "warning: RAPL: no powercap zones under {} (no RAPL here, or /sys not mounted); rapl columns stay empty",
                args.powercap_root.display()
            ));
        }
        r
    };
    let host = (!args.no_host).then(|| host::Host::open(&args.proc_root));

    // NVTX injection into the command.
    let nvtx_lib = if args.command.is_empty() || args.no_nvtx {
        None
    } else {
        let exe = std::env::current_exe().ok();
        match nvtx::choose(exe.as_deref(), std::env::var_os("NVTX_INJECTION64_PATH")) {
            Ok(p) => Some(p),
            Err(w) => {
                warn(w);
                None
            }
        }
    };
    // Without the counts file the processes' own reports are all there is.
    let nvtx_counts = match nvtx_lib.as_ref().map(|_| nvtx_counts::CountsFile::create()) {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            warn(format!(
                "warning: NVTX: {e}; marks lost by processes that end without exit handlers (_exit) go uncounted"
            ));
            None
        }
        None => None,
    };

    let torch_inj = match (args.torch_profile, &out) {
        (Some(s), Some(o)) => torch::Injection::prepare(s, o, &nvtx::bases())
            .map_err(&mut warn)
            .ok(),
        _ => None,
    };

    // Layout and output.
    let header_line = header(rapl.extra_columns());
    let n_cols = column_count(&header_line);
    let appended = out
        .as_ref()
        .and_then(|o| std::fs::metadata(o).ok())
        .is_some_and(|m| m.len() > 0);

    // Signals before any other thread, so every thread inherits the blocked mask.
    let stop_state = Arc::new(signals::StopState::default());
    let sig_thread = signals::start(stop_state.clone());

    let missed_ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let tap = match listener {
        Some(l) => {
            let tap = metrics::start(
                l,
                &header_line,
                flinch_core::metrics::LiveOptions {
                    max_window_names: args.metrics_windows,
                    ..Default::default()
                },
                &metric_gpus(gpu.as_deref()),
                &metric_zones(&rapl),
                missed_ticks.clone(),
            );
            match tap {
                Ok(t) => Some(t),
                Err(e) => {
                    signals::finish(&stop_state, sig_thread);
                    return Err(e.into());
                }
            }
        }
        None => None,
    };
    let writer = match Writer::start_with(
        out.as_deref(),
        &header_line,
        args.host_jsonl.as_deref(),
        tap,
    ) {
        Ok(w) => w,
        Err(e) => {
            signals::finish(&stop_state, sig_thread);
            return Err(e.into());
        }
    };
    let clock: Arc<dyn Clock> = match args.fake_clock_step_ns {
        Some(step) => Arc::new(FakeClock::new(step)),
        None => Arc::new(SystemClock),
    };

    // Marks FIFO.
    let fifo = match (&args.marks_fifo, args.command.is_empty()) {
        (Some(p), _) => marks::ensure_fifo(p).map(|created| {
            Some(FifoGuard {
                path: p.clone(),
                created,
                private_dir: None,
            })
        }),
        (None, false) => private_fifo().map(Some),
        (None, true) => Ok(None),
    };
    let fifo = match fifo {
        Ok(f) => f,
        Err(e) => {
            drop(writer.finish());
            signals::finish(&stop_state, sig_thread);
            return Err(e.into());
        }
    };
    let interval_ns = (args.interval_ms * 1e6).round() as u64;
    let start_mono = clock.mono_ns();
    let start_wall = clock.wall_ns();
    let default_s = if daemon { f64::INFINITY } else { 30.0 };
    let end_mono = match (args.command.is_empty(), args.seconds.unwrap_or(default_s)) {
        (true, s) if s.is_finite() => Some(start_mono + (s * 1e9).round() as u64),
        _ => None,
    };
    let gpus: Vec<GpuEntry> = gpu
        .as_ref()
        .map(|g| {
            g.info()
                .iter()
                .enumerate()
                .map(|(slot, info)| GpuEntry {
                    info: info.clone(),
                    gpu_power_w_source: g.power_kind(slot),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut side = Sidecar {
        tool: "flinch-trace".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        csv: out
            .as_ref()
            .map(|o| o.display().to_string())
            .unwrap_or_default(),
        appended,
        columns: header_line.split(',').map(str::to_string).collect(),
        interval_ms: args.interval_ms,
        clock: if args.fake_clock_step_ns.is_some() {
            "virtual"
        } else {
            "CLOCK_MONOTONIC"
        }
        .into(),
        gpu_source: gpu_source.into(),
        gpu_unavailable,
        nvml: driver,
        gpus,
        rapl_zones: rapl.zones().to_vec(),
        host_interval_ms: host.as_ref().map(|_| args.host_interval_ms as f64),
        host_jsonl: args.host_jsonl.as_ref().map(|p| p.display().to_string()),
        host: sidecar::host_info(),
        marks_fifo: fifo.as_ref().map(|f| f.path.display().to_string()),
        command: (!args.command.is_empty()).then(|| args.command.clone()),
        nvtx: nvtx_lib.as_ref().map(|p| NvtxInfo {
            library: p.display().to_string(),
            ..NvtxInfo::default()
        }),
        started_wall_ns: start_wall,
        started_mono_ns: start_mono,
        warnings,
        health: None,
        ended_by: None,
    };
    if let Some(o) = &out
        && let Err(w) = side.write(o)
    {
        eprintln!("{w}");
    }

    // The recording's own marks, and the sampler thread.
    let mark_now = |label: &str| {
        let s = writer.sender();
        let mut b = s.buffer();
        push_mark_row(&mut b, n_cols, clock.mono_ns(), clock.wall_ns(), label);
        s.send(Msg::Csv(b, 1));
    };
    mark_now("begin");
    // The marks reader starts after `begin` is queued, so a mark sent the instant the FIFO exists
    // still comes after it in the file.
    let marks_reader = match &fifo {
        Some(f) => match marks::MarksReader::start(&f.path, clock.clone(), writer.sender(), n_cols)
        {
            Ok(r) => Some(r),
            Err(e) => {
                drop(writer.finish());
                signals::finish(&stop_state, sig_thread);
                return Err(e.into());
            }
        },
        None => None,
    };
    let cfg = sampler::SamplerConfig {
        interval_ns,
        end_mono_ns: end_mono,
        host_every_ns: args.host_interval_ms * 1_000_000,
        jsonl_every_ns: args
            .host_jsonl
            .as_ref()
            .map(|_| args.host_jsonl_interval_ms * 1_000_000),
        n_cols,
        start_mono_ns: start_mono,
        missed_ticks,
    };
    let sources = sampler::Sources { gpu, rapl, host };
    let sampler_sender = writer.sender();
    let sampler_clock = clock.clone();
    let sampler_state = stop_state.clone();
    let sampler = std::thread::Builder::new()
        .name("flinch-sampler".into())
        .spawn(move || {
            sampler::run(
                &cfg,
                &sampler_clock,
                sources,
                &sampler_sender,
                &sampler_state.stop,
            )
        })
        .map_err(|e| format!("error: cannot start the sampler thread: {e}"))?;

    // The command, if any.
    let mut exit = ExitCode::SUCCESS;
    let mut ended_by = String::new();
    let mut child_error = None;
    if let (Some(prog), Some(f)) = (args.command.first(), &fifo) {
        mark_now("cmd_start");
        let mut cmd = std::process::Command::new(prog);
        cmd.args(&args.command[1..]).env("FLINCH_MARKS", &f.path);
        if let Some(lib) = &nvtx_lib {
            cmd.env("NVTX_INJECTION64_PATH", lib);
        }
        if let Some(c) = &nvtx_counts {
            cmd.env("FLINCH_NVTX_COUNTS", c.path());
        }
        if let Some(t) = &torch_inj {
            cmd.envs(t.env(std::env::var_os("PYTHONPATH")));
        }
        signals::unblock_in_child(&mut cmd);
        // A signal before the command started ends the recording without starting it.
        let early = stop_state.stop.load(Ordering::SeqCst);
        match if early { None } else { Some(cmd.spawn()) } {
            None => {
                mark_now("cmd_end");
                let sig = stop_state.signal.load(Ordering::SeqCst);
                ended_by = format!("{} received before the command started", signals::name(sig));
                exit = ExitCode::from((128 + sig).clamp(0, 255) as u8);
            }
            Some(Ok(mut child)) => {
                stop_state
                    .child_pid
                    .store(child.id() as i32, Ordering::SeqCst);
                // A signal that arrived while the child was starting went to no one: pass it on.
                let sig = stop_state.signal.load(Ordering::SeqCst);
                if sig != 0 {
                    // SAFETY: kill has no memory-safety preconditions; the child is not reaped yet.
                    unsafe { libc::kill(child.id() as i32, sig) };
                }
                let status = child.wait();
                stop_state.child_pid.store(0, Ordering::SeqCst);
                mark_now("cmd_end");
                match status {
                    Ok(st) => {
                        use std::os::unix::process::ExitStatusExt;
                        let code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
                        ended_by = match st.signal() {
                            Some(s) => format!("command ended by signal {s}"),
                            None => format!("command exited with status {code}"),
                        };
                        exit = ExitCode::from(code.clamp(0, 255) as u8);
                    }
                    Err(e) => {
                        child_error = Some((format!("error: waiting for {prog}: {e}"), 1));
                    }
                }
            }
            Some(Err(e)) => {
                mark_now("cmd_end");
                let code = command::spawn_error_code(&e);
                child_error = Some((format!("error: cannot run {prog}: {e}"), code));
            }
        }
        stop_state.stop.store(true, Ordering::SeqCst);
    }
    let health = sampler.join().unwrap_or_default();
    mark_now("end");
    let nvtx_totals = marks_reader.as_ref().map(|r| r.nvtx_totals());
    let marks_from_fifo = marks_reader.map(|r| r.stop()).unwrap_or(0);
    signals::finish(&stop_state, sig_thread);
    let report = writer.finish();
    drop(fifo);

    if ended_by.is_empty() {
        let sig = stop_state.signal.load(Ordering::SeqCst);
        ended_by = if report.error.is_some() {
            "write error".to_string()
        } else if sig != 0 {
            format!("{} received", signals::name(sig))
        } else {
            "--seconds elapsed".to_string()
        };
    }
    let mut summary = health.summary();
    summary.marks += marks_from_fifo + 2 + if args.command.is_empty() { 0 } else { 2 };
    match &out {
        Some(o) => eprintln!(
            "flinch-trace record: {} rows ({} marks) written to {}; {ended_by}",
            report.rows,
            summary.marks,
            o.display()
        ),
        None => eprintln!(
            "flinch-trace record: {} rows ({} marks) served as metrics, none kept; {ended_by}",
            report.rows, summary.marks
        ),
    }
    eprintln!("{}", summary.render());
    side.health = Some(summary);
    if let (Some(info), Some(t)) = (side.nvtx.as_mut(), nvtx_totals) {
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::SeqCst);
        let (started, reported) = (get(&t.started), get(&t.processes));
        let counts = nvtx_counts
            .as_ref()
            .map(|c| c.read())
            .filter(|c| c.attached);
        let processes = started.max(reported).max(counts.map_or(0, |c| c.processes));
        let unreported = processes.saturating_sub(reported);
        let lost = counts.map(|c| c.lost_unreported);
        let dropped = get(&t.dropped) + lost.unwrap_or(0);
        info.processes = Some(processes);
        info.unreported_processes = Some(unreported);
        info.marks = Some(get(&t.marks));
        info.dropped = Some(dropped);
        info.lost_unreported = lost;
        let mut nvtx_warn = |w: String| {
            eprintln!("{w}");
            side.warnings.push(w);
        };
        if get(&t.dropped) > 0 {
            nvtx_warn(format!(
                "warning: NVTX: {} marks dropped in the command's processes (their buffers filled faster than the FIFO was read)",
                get(&t.dropped)
            ));
        }
        match lost {
            Some(0) => {}
            Some(n) => nvtx_warn(format!(
                "warning: NVTX: {n} marks lost with {unreported} of {processes} processes that ended without exit handlers (_exit, a signal) while their lines waited for room in the FIFO; counted in nvtx.dropped"
            )),
            None if unreported > 0 => nvtx_warn(format!(
                "warning: NVTX: {unreported} of {processes} processes ended without sending their counts (_exit, a signal); marks they still had queued then are lost and counted nowhere"
            )),
            None => {}
        }
    }
    let torch_outcome = torch_inj.as_ref().map(torch::Injection::outcome);
    if let (Some(o), Some(s)) = (&torch_outcome, args.torch_profile)
        && let Some(w) = o.warning(s)
    {
        eprintln!("{w}");
        side.warnings.push(w);
    }
    side.ended_by = Some(ended_by);
    if report.error.is_none()
        && let Some(o) = &out
        && let Err(w) = side.write(o)
    {
        eprintln!("{w}");
    }
    if let (Some(o), Some(csv), false) = (&torch_outcome, &out, args.no_report) {
        torch::report(o, csv);
    }
    if let Some((e, code)) = child_error {
        eprintln!("{e}");
        return Ok(ExitCode::from(code));
    }
    if let Some(e) = report.error {
        // Already printed by the writer when it happened; the exit status says it failed.
        let _ = e;
        return Ok(ExitCode::from(1));
    }
    Ok(exit)
}

/// The GPUs as the metrics label them: index, UUID, and whether the energy counter is there.
fn metric_gpus(gpu: Option<&dyn GpuSource>) -> Vec<flinch_core::metrics::GpuLabel> {
    let Some(g) = gpu else { return Vec::new() };
    g.info()
        .iter()
        .enumerate()
        .map(|(slot, info)| flinch_core::metrics::GpuLabel {
            index: info.index,
            uuid: info.uuid.clone().unwrap_or_default(),
            energy_counter: g.has_energy_counter(slot),
        })
        .collect()
}

/// The readable RAPL zones as the metrics label them, with the CSV column each is in.
fn metric_zones(rapl: &rapl::Rapl) -> Vec<flinch_core::metrics::ZoneLabel> {
    rapl.zones()
        .iter()
        .enumerate()
        .filter(|(_, z)| z.readable)
        .map(|(i, z)| flinch_core::metrics::ZoneLabel {
            name: z.name.clone(),
            column: if Some(i) == rapl.primary() {
                flinch_core::csv::Col::RaplEnergyUj.name().to_string()
            } else {
                z.column.clone()
            },
            max_uj: z.max_energy_range_uj,
        })
        .collect()
}
