//! `--steps` on every first-read route of the host driver (one scan thread, the bytes on one
//! thread, two scan threads over 64 KiB segments) and at every exactness gives the same steps
//! as the core job fed the file's bytes on one thread (the page's route), whose breakdown the
//! core's tests hold to a naive oracle; and the CLI's exit status and notes.
use std::path::{Path, PathBuf};

use flinch_core::job::Job;
use flinch_core::steps::StepPattern;
use flinch_core::summary::DEFAULT_TOP_OPS;
use flinch_core::trace_job::{TraceJob, TraceJobOptions};
use flinch_core::{Exactness, Limits};
use flinch_host::trace::{parallel, pipeline};

use crate::input::{InputFile, Passes};

use super::exact_tests::gen_trace;

/// A `with_stack` trace (ProfilerStep#N spans, kernels, copies, runtime calls, cpu_ops, data
/// loading) of about 3 MB, written once per test process.
fn trace() -> PathBuf {
    static MADE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("flinch-steps-tests-{}", std::process::id()));
        gen_trace::generate(&dir, 3_000_000, "with_stack+pauses", (20_000, 50_000)).unwrap();
        dir.join("trace.json")
    })
    .clone()
}

fn job(limits: Limits) -> TraceJob {
    TraceJob::new(TraceJobOptions {
        source: "t".into(),
        limits,
        top: DEFAULT_TOP_OPS,
        durations_out: None,
        mergeable: false,
        steps: Some(StepPattern::default()),
        join: None,
    })
}

/// The steps' JSON (`steps` and `step_summary`) of a finished job.
fn steps_json(job: TraceJob) -> String {
    let r = job.finish().unwrap();
    serde_json::to_string_pretty(r.steps.as_ref().unwrap()).unwrap()
}

fn by_bytes(path: &Path, limits: Limits) -> String {
    let mut j = job(limits);
    let bytes = std::fs::read(path).unwrap();
    for c in bytes.chunks(100_003) {
        j.write(c).unwrap();
    }
    j.end().unwrap();
    steps_json(j)
}

#[test]
fn every_route_and_exactness_gives_the_one_thread_steps() {
    let path = trace();
    let want = by_bytes(&path, Limits::NATIVE);
    let v: serde_json::Value = serde_json::from_str(&want).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() > 10, "{}", steps.len());
    // Real work in the parts, and each step's parts sum to its duration (to float rounding).
    let first = &steps[0]["breakdown_ms"];
    assert!(first["kernel"].as_f64().unwrap() > 0.0, "{first}");
    for s in steps {
        let sum: f64 = s["breakdown_ms"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_f64().unwrap())
            .sum();
        assert!(
            (sum - s["duration_ms"].as_f64().unwrap()).abs() < 1e-6,
            "{s}"
        );
    }
    let file = InputFile::open(&path, Passes::Several).unwrap();
    for limits in [Limits::NATIVE, Exactness::Exact.limits()] {
        let mut j = job(limits);
        pipeline::first_read(file.read().unwrap(), &mut j, || {}).unwrap();
        assert_eq!(steps_json(j), want, "pipeline");
        let mut j = job(limits);
        pipeline::first_read_sequential(file.read().unwrap(), &mut j, || {}).unwrap();
        assert_eq!(steps_json(j), want, "sequential");
        let mut j = job(limits);
        let plan = parallel::plan_with(&path, 64 << 10, 0).unwrap();
        parallel::first_read(plan, &mut j, |_, _| {}).unwrap();
        assert_eq!(steps_json(j), want, "parallel");
    }
    // The CLI and the host's library call (Python's) print the same object.
    let lib = flinch_host::trace::steps::steps_json(&path, None, None).unwrap();
    let lib: serde_json::Value = serde_json::from_str(&lib).unwrap();
    assert_eq!(lib["steps"], v["steps"]);
    assert_eq!(lib["step_summary"], v["step_summary"]);
}
