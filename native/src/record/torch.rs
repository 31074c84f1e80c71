//! `record --torch-profile[=SCHEDULE]`: torch.profiler in a PyTorch command that does not call it,
//! and the answer when it ends (docs/torch-profile.md).
//!
//! The binary carries the Python bootstrap (`python/flinch_trace/_torch_profile.py`, the same file
//! `flinch_trace.profile()` imports) and a `sitecustomize` that arms it and then runs the one it
//! shadows. `record` writes both into a private folder (0700, removed at the end), puts it first
//! on `PYTHONPATH`, and names the trace prefix, the schedule and a state folder in the
//! environment. The processes leave one note file each in the state folder; after the command,
//! they say which traces were written, or why none was (one warning). The report is the trace
//! job over the first rank's trace with the recording: `flinch-trace trace TRACE --telemetry CSV
//! --perfetto OUT` run in this process, so its tables are that command's.
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The bootstrap, as `python/flinch_trace/_torch_profile.py` (one file for both users).
pub const BOOTSTRAP: &str = include_str!("../../../python/flinch_trace/_torch_profile.py");
/// The `sitecustomize` that arms the bootstrap and chains to the shadowed one.
pub const SITECUSTOMIZE: &str = include_str!("torch/sitecustomize.py");
/// The bootstrap's module name in the private folder (not `flinch_trace`, which an installed
/// wheel may provide).
const BOOTSTRAP_MODULE: &str = "_flinch_torch_profile.py";

/// torch.profiler's schedule, in optimizer steps: skip `wait`, warm up `warmup`, record `active`;
/// `repeat` cycles of that (0: until the program ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Steps skipped before each cycle.
    pub wait: u32,
    /// Steps traced and thrown away (the profiler's own start-up cost).
    pub warmup: u32,
    /// Steps recorded into each trace file.
    pub active: u32,
    /// Cycles (one trace file each); 0 repeats until the end.
    pub repeat: u32,
}

/// `--torch-profile` without a value.
pub const DEFAULT_SCHEDULE: Schedule = Schedule {
    wait: 5,
    warmup: 2,
    active: 10,
    repeat: 1,
};

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Schedule {
            wait,
            warmup,
            active,
            repeat,
        } = self;
        write!(f, "{wait},{warmup},{active},{repeat}")
    }
}

/// Parses `wait,warmup,active[,repeat]` (repeat 1 when omitted): clap's value parser for
/// `--torch-profile=SCHEDULE`, so a bad one is a usage error naming the form.
pub fn parse_schedule(s: &str) -> Result<Schedule, String> {
    let usage = |why: String| {
        format!(
            "{why}; SCHEDULE is wait,warmup,active[,repeat] in optimizer steps, e.g. 5,2,10 or 5,2,10,3 (active at least 1; repeat 0 repeats until the end)"
        )
    };
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if !(3..=4).contains(&parts.len()) {
        return Err(usage(format!("{s:?} has {} numbers", parts.len())));
    }
    let mut n = [0u32, 0, 0, 1];
    for (slot, (p, name)) in n
        .iter_mut()
        .zip(parts.iter().zip(["wait", "warmup", "active", "repeat"]))
    {
        *slot = p
            .parse::<u32>()
            .map_err(|_| usage(format!("{name} {p:?} is not a whole number of steps")))?;
    }
    if n[2] == 0 {
        return Err(usage("active is 0, so nothing would be recorded".into()));
    }
    Ok(Schedule {
        wait: n[0],
        warmup: n[1],
        active: n[2],
        repeat: n[3],
    })
}

/// The private folder with the bootstrap, and what the command's environment gets; removed
/// (with the processes' notes) on drop.
#[derive(Debug)]
pub struct Injection {
    dir: PathBuf,
    state: PathBuf,
    prefix: PathBuf,
    schedule: Schedule,
}

impl Drop for Injection {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Injection {
    /// Writes the bootstrap for traces named after `out` (`DIR/trace.csv` gives
    /// `DIR/trace.torch….json.gz`), in a new folder under the first of `bases` that takes it.
    pub fn prepare(schedule: Schedule, out: &Path, bases: &[PathBuf]) -> Result<Injection, String> {
        use std::os::unix::fs::DirBuilderExt;
        let stem = out.file_stem().unwrap_or(out.as_os_str());
        let prefix = out.with_file_name(stem);
        let mut errors = Vec::new();
        for base in bases {
            let dir = base.join(format!(
                "flinch-torch-{}-{}",
                std::process::id(),
                super::clock::mono_now_ns()
            ));
            if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                errors.push(format!("cannot create {}: {e}", dir.display()));
                continue;
            }
            let inj = Injection {
                state: dir.join("state"),
                dir,
                prefix: prefix.clone(),
                schedule,
            };
            let written = std::fs::write(inj.dir.join("sitecustomize.py"), SITECUSTOMIZE)
                .and_then(|()| std::fs::write(inj.dir.join(BOOTSTRAP_MODULE), BOOTSTRAP))
                .and_then(|()| std::fs::DirBuilder::new().mode(0o700).create(&inj.state));
            match written {
                Ok(()) => return Ok(inj),
                Err(e) => errors.push(format!("cannot write into {}: {e}", inj.dir.display())),
            }
        }
        Err(format!(
            "warning: --torch-profile: no folder for the Python bootstrap ({}); the command runs unprofiled",
            errors.join("; ")
        ))
    }

    /// The variables the command gets; `pythonpath`: its `PYTHONPATH` as it stands.
    pub fn env(&self, pythonpath: Option<OsString>) -> Vec<(&'static str, OsString)> {
        let mut path = self.dir.clone().into_os_string();
        if let Some(p) = pythonpath.filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(p);
        }
        vec![
            ("PYTHONPATH", path),
            (
                "FLINCH_TORCH_PROFILE_PREFIX",
                absolute(&self.prefix).into_os_string(),
            ),
            (
                "FLINCH_TORCH_PROFILE_SCHEDULE",
                self.schedule.to_string().into(),
            ),
            ("FLINCH_TORCH_PROFILE_STATE", self.state.clone().into()),
        ]
    }

    /// What the command's processes noted, after it ended; also removes the temporary files of
    /// exports cut short (a process killed while writing), so only whole traces remain.
    pub fn outcome(&self) -> Outcome {
        let mut o = Outcome::default();
        if let Ok(rd) = std::fs::read_dir(&self.state) {
            for entry in rd.flatten() {
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                o.add_notes(&text);
            }
        }
        o.traces.retain(|t| t.is_file());
        o.traces.sort_by_key(|t| trace_key(t));
        o.traces.dedup();
        let folder = absolute(&self.prefix);
        if let (Some(dir), Some(stem)) = (folder.parent(), folder.file_name()) {
            let lead = format!(".{}.torch", stem.to_string_lossy());
            if let Ok(rd) = std::fs::read_dir(dir) {
                for entry in rd.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name.starts_with(&lead) && name.contains(".tmp") {
                        let _ = std::fs::remove_file(entry.path());
                        o.removed_partial += 1;
                    }
                }
            }
        }
        o
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What the processes of one command noted.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// Python processes that started with the bootstrap.
    pub pythons: u32,
    /// Of them, those that imported torch.
    pub torch: u32,
    /// Profilers started (on a first optimizer step), with their activities.
    pub profilers: Vec<String>,
    /// Trace files written, whole, first rank and cycle first.
    pub traces: Vec<PathBuf>,
    /// Errors the bootstrap caught (it then left the program unprofiled).
    pub errors: Vec<String>,
    /// Temporary files of exports that did not finish, removed.
    pub removed_partial: u32,
}

impl Outcome {
    fn add_notes(&mut self, text: &str) {
        for line in text.lines() {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "python" => self.pythons += 1,
                "torch" => self.torch += 1,
                "profiler" => self.profilers.push(rest.to_string()),
                "trace" => self.traces.push(PathBuf::from(rest)),
                "error" => self.errors.push(rest.to_string()),
                _ => {}
            }
        }
    }

    /// The one warning for a command that left no trace, saying why; `None` when a trace exists.
    pub fn warning(&self, schedule: Schedule) -> Option<String> {
        if !self.traces.is_empty() {
            return None;
        }
        let why = if self.pythons == 0 {
            "the command started no Python (or one run with -E / -I, which ignore PYTHONPATH)"
                .to_string()
        } else if self.torch == 0 {
            format!(
                "{} Python process(es) ran, none imported torch",
                self.pythons
            )
        } else if let Some(e) = self.errors.first() {
            format!("the profiler failed ({e})")
        } else if self.profilers.is_empty() {
            "torch was imported but no torch.optim optimizer stepped (the profiler starts on the first optimizer step)".to_string()
        } else {
            format!(
                "the command ended before the profiler's first active window, which opens after optimizer step {} (schedule {schedule} = wait,warmup,active,repeat; give a shorter one with --torch-profile=W,U,A)",
                1 + schedule.wait + schedule.warmup
            )
        };
        Some(format!(
            "warning: --torch-profile: no PyTorch trace: {why}; the recording goes on"
        ))
    }
}

/// Sorts `….rankR.cycleK.json.gz` by (R, K), numerically.
fn trace_key(p: &Path) -> (u64, u64, PathBuf) {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let num = |tag: &str| {
        name.find(tag)
            .map(|i| {
                name[i + tag.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok())
            .unwrap_or(0)
    };
    (num(".rank"), num(".cycle"), p.to_path_buf())
}

/// The merged file for Perfetto beside a trace: `X.json.gz` gives `X.perfetto.json.gz`.
pub fn perfetto_path(trace: &Path) -> PathBuf {
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(".json.gz").unwrap_or(&name);
    trace.with_file_name(format!("{stem}.perfetto.json.gz"))
}

/// The trace command the report runs, for one trace and the recording.
pub fn report_argv(trace: &Path, csv: &Path) -> Vec<OsString> {
    // With the step view (docs/steps.md): the step summary, the outlier steps and energy per
    // step after the pauses.
    vec![
        trace.into(),
        "--telemetry".into(),
        csv.into(),
        "--steps".into(),
        "--perfetto".into(),
        perfetto_path(trace).into(),
    ]
}

/// The trace command's flags parsed as its own command line parses them.
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
struct TraceLine {
    #[command(flatten)]
    args: crate::trace::Args,
}

/// Prints the answer for the written traces (stdout, as `trace` prints it): the first rank's
/// traces joined with the recording `csv`, each merged into a Perfetto file beside it; the other
/// ranks are named with the command that answers for them.
pub fn report(outcome: &Outcome, csv: &Path) {
    let first_rank = outcome.traces.first().map(|t| trace_key(t).0);
    for t in &outcome.traces {
        let argv = report_argv(t, csv);
        let line = argv
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        if Some(trace_key(t).0) != first_rank {
            eprintln!(
                "flinch-trace record: also written: {} (flinch-trace trace {line})",
                t.display()
            );
            continue;
        }
        eprintln!("flinch-trace record: the answer: flinch-trace trace {line}");
        let parsed = <TraceLine as clap::Parser>::try_parse_from(&argv);
        let result = match parsed {
            Ok(l) => crate::trace::run(l.args).map(|_| ()),
            Err(e) => Err(crate::CmdError::Usage(e.to_string())),
        };
        if let Err(e) = result {
            eprintln!("warning: --torch-profile: the report failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_with_repeat_1_by_default_and_bad_ones_say_the_form() {
        let s = |w, u, a, r| Schedule {
            wait: w,
            warmup: u,
            active: a,
            repeat: r,
        };
        assert_eq!(parse_schedule("5,2,10"), Ok(s(5, 2, 10, 1)));
        assert_eq!(parse_schedule("0, 0, 1, 0"), Ok(s(0, 0, 1, 0)));
        assert_eq!(parse_schedule("1,1,3,4").unwrap().to_string(), "1,1,3,4");
        assert_eq!(DEFAULT_SCHEDULE.to_string(), "5,2,10,1");
        for (bad, says) in [
            ("5,2", "has 2 numbers"),
            ("1,2,3,4,5", "has 5 numbers"),
            ("", "has 1 numbers"),
            ("a,2,3", "wait \"a\""),
            ("1,-2,3", "warmup \"-2\""),
            ("1,2,3.5", "active \"3.5\""),
            ("1,2,3,x", "repeat \"x\""),
            ("1,2,0", "active is 0"),
            ("1,2,99999999999", "active \"99999999999\""),
        ] {
            let e = parse_schedule(bad).unwrap_err();
            assert!(
                e.contains(says) && e.contains("wait,warmup,active[,repeat]"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn notes_tell_why_no_trace_was_written() {
        let mut o = Outcome::default();
        let w = |o: &Outcome| o.warning(DEFAULT_SCHEDULE).unwrap_or_default();
        assert!(w(&o).contains("started no Python"), "{}", w(&o));
        o.add_notes("python\n");
        assert!(w(&o).contains("1 Python process(es) ran, none imported torch"));
        o.add_notes("python\ntorch\n");
        assert!(w(&o).contains("no torch.optim optimizer stepped"));
        o.add_notes("profiler cpu\n");
        assert!(w(&o).contains("opens after optimizer step 8"), "{}", w(&o));
        o.add_notes("error export: OSError: disk full\n");
        assert!(w(&o).contains("the profiler failed (export: OSError: disk full)"));
        assert!(w(&o).ends_with("the recording goes on"));
        o.add_notes("trace /x/t.torch.json.gz\n");
        assert_eq!(o.warning(DEFAULT_SCHEDULE), None);
        assert_eq!((o.pythons, o.torch, o.profilers.len()), (2, 1, 1));
    }

    #[test]
    fn traces_sort_by_rank_then_cycle_numerically_and_name_their_perfetto_file() {
        let mut v: Vec<PathBuf> = [
            "d/t.torch.rank10.json.gz",
            "d/t.torch.rank2.cycle10.json.gz",
            "d/t.torch.rank2.cycle9.json.gz",
            "d/t.torch.rank0.json.gz",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        v.sort_by_key(|t| trace_key(t));
        let names: Vec<_> = v.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            [
                "d/t.torch.rank0.json.gz",
                "d/t.torch.rank2.cycle9.json.gz",
                "d/t.torch.rank2.cycle10.json.gz",
                "d/t.torch.rank10.json.gz"
            ]
        );
        assert_eq!(
            perfetto_path(Path::new("d/t.torch.rank0.json.gz")),
            Path::new("d/t.torch.rank0.perfetto.json.gz")
        );
    }

    #[test]
    fn the_injection_folder_is_private_holds_both_files_and_goes_at_the_end() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("flinch-torch-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let inj = Injection::prepare(
            DEFAULT_SCHEDULE,
            Path::new("/runs/exp1/trace.csv"),
            &[base.join("missing/deeper"), base.clone()],
        )
        .unwrap();
        let dir = inj.dir.clone();
        assert!(dir.starts_with(&base));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(
            std::fs::read_to_string(dir.join(BOOTSTRAP_MODULE)).unwrap(),
            BOOTSTRAP
        );
        let env = inj.env(Some("/site/a:/site/b".into()));
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).unwrap().1.clone();
        assert_eq!(
            get("PYTHONPATH"),
            OsString::from(format!("{}:/site/a:/site/b", dir.display()))
        );
        assert_eq!(get("FLINCH_TORCH_PROFILE_PREFIX"), "/runs/exp1/trace");
        assert_eq!(get("FLINCH_TORCH_PROFILE_SCHEDULE"), "5,2,10,1");
        assert_eq!(inj.env(Some("".into()))[0].1, dir.clone().into_os_string());
        drop(inj);
        assert!(!dir.exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
