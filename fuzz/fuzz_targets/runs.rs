//! Fuzz target `runs`: arbitrary bytes as one run's files (`report.json`, `status.json`,
//! `requests.jsonl`, `command.log`, `telemetry.jsonl`, split at 0xFF bytes), pushed in
//! fuzzer-chosen chunks to `flinch_core::runs::RunSummarizer`, and the record rendered. Must never
//! panic or hang; a record is always produced.
#![no_main]

use flinch_core::runs::{FileRead, PyPath, RunSummarizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let chunk = 1 + knob as usize % 61;
    let mut files = rest.split(|&b| b == 0xff);
    let mut next = || files.next().unwrap_or(b"");
    let (report, status, requests, log, telemetry) = (next(), next(), next(), next(), next());
    let mut run = RunSummarizer::new(&PyPath::new("r"), "x");
    run.report(if report.is_empty() {
        FileRead::Missing
    } else {
        FileRead::Bytes(report)
    });
    if run.wants_details() {
        run.status(FileRead::Bytes(status));
        requests.chunks(chunk).for_each(|c| run.requests_push(c));
        run.requests_end(None);
        log.chunks(chunk).for_each(|c| run.log_push(c));
        run.log_end((knob & 0x80 != 0).then_some("cut"));
    }
    telemetry.chunks(chunk).for_each(|c| run.telemetry_push(c));
    let record = run.finish(None);
    let mut summary = flinch_core::runs::RunsSummary::new(true);
    summary.telemetry.0.push(("x".into(), record));
    assert!(summary.to_json().is_ok());
});
