//! `trace FILE [--telemetry CSV] --steps [--step-name PATTERN] --json` as one library call
//! (the Python wheel's `steps`), and the recording read that the CLI's join uses too.
use std::path::Path;

use flinch_core::job::Job;
use flinch_core::join::{
    DEFAULT_TOP_PAUSES, Recording, RecordingBuilder, RecordingOptions, join_options,
};
use flinch_core::steps::StepPattern;
use flinch_core::summary::DEFAULT_TOP_OPS;
use flinch_core::trace_job::{JoinSetup, RecordingSource, TraceJob, TraceJobOptions};
use flinch_core::window::PowerSource;

use super::{ReadOptions, first_read};
use crate::input::{InputFile, InputOptions, Passes};

/// The recording `path` (plain or gzip) read into memory, with its power source from the
/// sidecar, and the input opened for `passes`; `Err`: the message the CLI prints.
///
/// # Errors
/// The file cannot be opened or read, or is not a recording.
pub fn read_recording(path: &Path, passes: Passes) -> Result<(Recording, InputFile), String> {
    let file = InputFile::open(path, passes).map_err(|e| format!("--telemetry: {e}"))?;
    let power_source = crate::sidecar::power_source(path).unwrap_or(PowerSource::Unknown);
    let mut b = RecordingBuilder::new(RecordingOptions {
        power_source,
        ..RecordingOptions::default()
    });
    // A small ring: fresh buffer pages cost a page fault each, and chunks that stay in the
    // cache are parsed faster; the file is read at disk speed either way.
    let ring = InputOptions {
        buffers: 3,
        buffer_bytes: 256 << 10,
    };
    let mut input = file
        .read_with(ring)
        .map_err(|e| format!("--telemetry: {e}"))?;
    if !input.is_gzip() && input.progress().total_bytes() > 0 {
        // The series are reserved once from the file's length instead of grown by copying.
        b.size_hint(input.progress().total_bytes());
    }
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => b
                .write(chunk)
                .map_err(|e| format!("{}: {e}", path.display()))?,
            Ok(None) => break,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    b.end()
        .map(|r| (r, file))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Why [`steps_json`] failed.
#[derive(Debug)]
pub enum StepsError {
    /// A bad argument (the CLI's usage error, exit 2): the step pattern.
    Usage(String),
    /// The trace or the recording (the CLI's runtime error, exit 1): the message printed after
    /// `flinch-trace trace: FILE: `.
    Run(String),
}

/// The JSON object `trace FILE [--telemetry CSV] --steps [--step-name PATTERN] --json` prints
/// (without the trailing newline): the same job, options and reads as the CLI.
///
/// # Errors
/// A bad pattern; the trace or the recording cannot be read.
pub fn steps_json(
    path: &Path,
    telemetry: Option<&Path>,
    step_name: Option<&str>,
) -> Result<String, StepsError> {
    let pattern = match step_name {
        Some(p) => StepPattern::parse(p).map_err(|e| StepsError::Usage(e.to_string()))?,
        None => StepPattern::default(),
    };
    let recording = telemetry
        .map(|csv| read_recording(csv, Passes::One))
        .transpose()
        .map_err(StepsError::Run)?;
    // The CLI's join with `--telemetry` alone: its default options.
    let join = recording
        .as_ref()
        .map(|_| {
            join_options(None, DEFAULT_TOP_PAUSES, None, None)
                .map(|o| JoinSetup::new(o, RecordingSource::Given))
                .map_err(|e| StepsError::Usage(e.to_string()))
        })
        .transpose()?;
    let input = InputFile::open(path, Passes::Several).map_err(StepsError::Run)?;
    let mut job = TraceJob::new(TraceJobOptions {
        source: path.display().to_string(),
        limits: flinch_core::Exactness::Native.limits(),
        top: DEFAULT_TOP_OPS,
        durations_out: None,
        mergeable: false,
        join,
        steps: Some(pattern),
    });
    let read = ReadOptions {
        spills: true,
        threads: None,
        progress: None,
    };
    first_read(&input, &mut job, read).map_err(StepsError::Run)?;
    if let Some((rec, _)) = recording {
        job.set_recording(std::sync::Arc::new(rec));
    }
    #[cfg(unix)]
    super::ranges::answer(&input, &mut job, None).map_err(StepsError::Run)?;
    job.finish()
        .map(|r| r.to_json())
        .map_err(|e| StepsError::Run(e.to_string()))
}
