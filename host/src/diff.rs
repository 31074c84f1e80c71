//! The std driver of the diff job (`flinch_core::diff::DiffJob`): `diff A B` for the CLI and
//! the Python wheel. It answers each file the job asks for from the file system. For A and B it
//! looks at the first decoded bytes (`flinch_core::diff::input_kind`, the job's own rule): a
//! trace's job is driven as `trace` drives it ([`crate::trace::first_read`]: the N-thread scan
//! of a large plain file, the temporary file and further reads of the native exactness, then
//! the ranges it asks for); a summary is read whole, decoded, and folded by the job's merge job.
//! A FIFO or pipe is not looked at twice: its bytes go to the job as they come (the job tells
//! its kind itself), so a trace read that way has no further passes (past the durations budget
//! its percentiles are stated approximate, docs/trace-exactness.md). Recordings are read through
//! the job, decoded here.
use std::path::{Path, PathBuf};

use flinch_core::Exactness;
use flinch_core::diff::{
    DiffJob, DiffOptions, DiffResult, InputKind, SNIFF_BYTES, TELEMETRY_A, TELEMETRY_B, input_kind,
};
use flinch_core::job::{Job, Need};
use flinch_core::join::{JoinOptions, RecordingOptions};
use flinch_core::window::PowerSource;

use crate::input::{InputFile, Passes};
use crate::trace::ReadOptions;

/// What to compare, as plain options (the CLI's flags, the wheel's arguments).
#[derive(Clone, Debug)]
pub struct DiffRequest {
    /// Input A (the baseline).
    pub a: PathBuf,
    /// Input B (the change).
    pub b: PathBuf,
    /// A's and B's recordings (trace.csv), if any.
    pub telemetry: [Option<PathBuf>; 2],
    /// `--bounded` / `--exact` (default native).
    pub exactness: Exactness,
    /// Scan threads for a large plain trace (`None`: the available parallelism).
    pub threads: Option<usize>,
    /// Ops listed.
    pub top: usize,
    /// The verdict's threshold, %.
    pub threshold_pct: f64,
    /// The join's options (its minimum pause).
    pub join: JoinOptions,
    /// `--steps` / `--step-name`: the steps compared, named by this pattern.
    pub steps: Option<flinch_core::steps::StepPattern>,
}

impl DiffRequest {
    /// A against B with the defaults.
    pub fn new(a: PathBuf, b: PathBuf) -> DiffRequest {
        let c = flinch_core::diff::CompareOptions::default();
        DiffRequest {
            a,
            b,
            telemetry: [None, None],
            exactness: Exactness::default(),
            threads: None,
            top: c.top,
            threshold_pct: c.threshold_pct,
            join: JoinOptions::default(),
            steps: None,
        }
    }

    fn options(&self) -> DiffOptions {
        let mut o = DiffOptions::new(self.a.display().to_string(), self.b.display().to_string());
        o.limits = self.exactness.limits();
        o.join = self.join.clone();
        o.compare.top = self.top;
        o.compare.threshold_pct = self.threshold_pct;
        o.steps = self.steps.clone();
        o.recordings = self.telemetry.clone().map(|p| {
            p.map(|p| RecordingOptions {
                power_source: crate::sidecar::power_source(&p).unwrap_or(PowerSource::Unknown),
                ..RecordingOptions::default()
            })
        });
        o
    }
}

/// The comparison of `req`'s inputs.
///
/// # Errors
/// An input that cannot be read, is neither a trace nor a summary, or ends early: one line
/// naming the file and the byte offset.
pub fn run(req: &DiffRequest) -> Result<DiffResult, String> {
    let mut job = DiffJob::new(req.options());
    let spills = req.exactness.spills();
    loop {
        let path = match job.need() {
            Need::Done => break,
            Need::File(TELEMETRY_A) => telemetry_path(req, 0)?,
            Need::File(TELEMETRY_B) => telemetry_path(req, 1)?,
            Need::File(name) => {
                let path = if name == flinch_core::diff::A {
                    &req.a
                } else {
                    &req.b
                };
                input(&mut job, path, spills, req.threads)?;
                continue;
            }
            Need::Ranges(_) | Need::Listing(_) => {
                return Err("diff: the job asked out of turn".into());
            }
        };
        stream(&mut job, path)?;
    }
    job.finish().map_err(|e| e.to_string())
}

/// `run`'s result as the JSON `diff --json` prints (without the final newline): the Python
/// wheel's `diff`.
///
/// # Errors
/// As [`run`].
pub fn json(req: &DiffRequest) -> Result<String, String> {
    run(req)?.to_json().map_err(|e| e.to_string())
}

fn telemetry_path(req: &DiffRequest, side: usize) -> Result<&Path, String> {
    req.telemetry[side]
        .as_deref()
        .ok_or_else(|| "diff: a recording asked for that was not given".to_string())
}

/// A file's bytes, decoded, to the job as they come.
fn stream(job: &mut DiffJob, path: &Path) -> Result<(), String> {
    stream_from(job, &InputFile::open(path, Passes::One)?, path)
}

/// [`stream`] of an input opened already (a FIFO is opened once: a second open would wait for a
/// writer that has gone).
fn stream_from(job: &mut DiffJob, file: &InputFile, path: &Path) -> Result<(), String> {
    let mut input = file.read()?;
    job.decoded(input.is_gzip());
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => job.write(chunk).map_err(|e| e.to_string())?,
            Ok(None) => break,
            Err(e) => {
                let whole = if e.cut.is_some() {
                    ": a diff needs the whole input"
                } else {
                    ""
                };
                let message = format!("{}: {e}{whole}", path.display());
                job.read_error(&message);
                return Err(message);
            }
        }
    }
    job.end().map_err(|e| e.to_string())
}

/// Input A or B: its kind from its first bytes, then the trace's routes or the summary whole.
fn input(
    job: &mut DiffJob,
    path: &Path,
    spills: bool,
    threads: Option<usize>,
) -> Result<(), String> {
    let name = path.display().to_string();
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        // A FIFO or pipe: opened once and read once, as it comes.
        return stream(job, path);
    }
    let file = InputFile::open(path, Passes::Several)?;
    match sniff(&file)? {
        InputKind::Trace => {
            let tj = job.start_trace().map_err(|e| e.to_string())?;
            let read = ReadOptions {
                spills,
                threads,
                progress: None,
            };
            crate::trace::first_read(&file, tj, read).map_err(|e| format!("{name}: {e}"))?;
            #[cfg(unix)]
            crate::trace::ranges::answer(&file, tj, None).map_err(|e| format!("{name}: {e}"))?;
            // The side is taken at the job's next step.
            Ok(())
        }
        InputKind::Summary => {
            let bytes = read_whole(&file).map_err(|e| format!("{name}: {e}"))?;
            let mj = job.start_summary().map_err(|e| e.to_string())?;
            mj.document(&bytes).map_err(|e| e.to_string())?;
            job.summary_done().map_err(|e| e.to_string())
        }
    }
}

/// The kind from the first decoded bytes: a plain regular file's first 4 KiB by a positioned
/// read, a `.gz` through a pass of two small buffers stopped early (a few KiB inflated, not the
/// reader's usual 4 MiB ahead).
fn sniff(file: &InputFile) -> Result<InputKind, String> {
    #[cfg(unix)]
    if let Some((f, len)) = file.seekable() {
        use std::os::unix::fs::FileExt;
        let mut prefix = vec![0u8; SNIFF_BYTES.min(len as usize)];
        if f.read_exact_at(&mut prefix, 0).is_ok() && !flinch_core::gzip::is_gzip(&prefix) {
            return Ok(input_kind(&prefix, prefix.len() as u64 == len).unwrap_or(InputKind::Trace));
        }
    }
    let small = crate::input::InputOptions {
        buffers: 2,
        buffer_bytes: SNIFF_BYTES,
    };
    let mut pass = file.read_with(small)?;
    let mut prefix = Vec::with_capacity(SNIFF_BYTES);
    // A read error or a cut ends the look: the trace's own read names it where it meets it.
    while let Ok(Some(chunk)) = pass.next_chunk() {
        let room = SNIFF_BYTES - prefix.len();
        prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if let Some(kind) = input_kind(&prefix, false) {
            return Ok(kind);
        }
    }
    Ok(input_kind(&prefix, true).unwrap_or(InputKind::Trace))
}

/// A summary's whole decoded text (a summary is small: KB to a few MB).
fn read_whole(file: &InputFile) -> Result<Vec<u8>, String> {
    let mut pass = file.read()?;
    let mut bytes = Vec::new();
    loop {
        match pass.next_chunk() {
            Ok(Some(chunk)) => {
                bytes.extend_from_slice(chunk);
                if bytes.len() > flinch_core::merge::MAX_DOCUMENT_BYTES {
                    return Err(format!(
                        "a summary of more than {} bytes",
                        flinch_core::merge::MAX_DOCUMENT_BYTES
                    ));
                }
            }
            Ok(None) => return Ok(bytes),
            Err(e) => return Err(e.to_string()),
        }
    }
}
