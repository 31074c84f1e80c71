//! Fuzz target `summarize_rows`: arbitrary bytes as `summarize`'s row files, through its row
//! readers in fuzzer-chosen chunks: the JSON Lines reader (`flinch_core::runs::JsonlReader`:
//! bounded lines, universal newlines, NaN and out-of-range numbers) with a fuzzer-chosen line
//! limit, and a run's `telemetry.jsonl` and `requests.jsonl` through `RunSummarizer`. Must never
//! panic or hang, and what is read must not depend on the chunk sizes.
#![no_main]

use flinch_core::runs::{FileRead, JsonlReader, PyPath, RunSummarizer, RunsSummary, Warnings};
use libfuzzer_sys::fuzz_target;

/// Every line the reader gives (number and value) and its warnings.
fn lines(text: &[u8], chunk: usize, max_line: usize) -> String {
    let mut reader = JsonlReader::with_max_line_bytes(max_line);
    let mut warnings = Warnings::default();
    let mut out = String::new();
    let mut add = |n: usize, v: serde_json::Value, _: &mut Warnings| {
        out.push_str(&format!("{n} {v}\n"));
    };
    for c in text.chunks(chunk) {
        reader.push(c, &mut warnings, &mut add);
    }
    reader.finish(&mut warnings, &mut add);
    format!("{out}{:?}", warnings.render("f"))
}

/// A run whose only files are `telemetry` and `requests`, pushed in chunks: its record.
fn run(telemetry: &[u8], requests: &[u8], chunk: usize) -> String {
    let mut run = RunSummarizer::new(&PyPath::new("r"), "x");
    run.report(FileRead::Bytes(b"{}"));
    if run.wants_details() {
        run.status(FileRead::Missing);
        requests.chunks(chunk).for_each(|c| run.requests_push(c));
        run.requests_end(None);
        run.log_end(None);
    }
    telemetry.chunks(chunk).for_each(|c| run.telemetry_push(c));
    let mut summary = RunsSummary::new(true);
    summary.telemetry.0.push(("x".into(), run.finish(None)));
    summary.to_json().unwrap()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (knobs, text) = data.split_at(2);
    let chunk = 1 + knobs[0] as usize % 61;
    let max_line = 8 + knobs[1] as usize * 8;
    let whole = text.len().max(1);
    assert_eq!(lines(text, chunk, max_line), lines(text, whole, max_line));
    // The same bytes as telemetry and, split at the first 0xFF, as requests too.
    let (telemetry, requests) = match text.iter().position(|&b| b == 0xff) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, &text[..0]),
    };
    assert_eq!(
        run(telemetry, requests, chunk),
        run(telemetry, requests, whole)
    );
});
