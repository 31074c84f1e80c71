//! Fuzz target `summarize_rows`: arbitrary bytes as a `telemetry.jsonl`, read by `summarize`'s
//! JSON Lines reader (bounded lines, universal newlines, NaN and out-of-range numbers) and fed
//! to its telemetry row reader and the core accumulator, with fuzzer-chosen read-buffer sizes,
//! line limit and window. Must never panic or hang, and the summary must not depend on the
//! buffer size.
#![no_main]
#![allow(dead_code)]

// The native reader's own files (the CLI is a binary crate, not a library).
#[path = "../../native/src/summarize/jsonl.rs"]
mod jsonl;
#[path = "../../native/src/summarize/telemetry.rs"]
mod telemetry;

use flinch_core::telemetry::{Num, TelemetryAccumulator, Window};
use libfuzzer_sys::fuzz_target;

fn summarize(text: &[u8], capacity: usize, max_line: usize, window: Window) -> String {
    let mut acc = TelemetryAccumulator::new(&[Window::ALL, window]);
    let mut warnings = jsonl::Warnings::default();
    let reader = std::io::BufReader::with_capacity(capacity, text);
    jsonl::for_each_line_limited(reader, max_line, &mut warnings, |line, value, w| {
        telemetry::feed_row(&mut acc, line, &value, w)
    })
    .unwrap();
    let out = acc.finish("fuzz");
    format!(
        "{:?}\n{}",
        warnings.render("fuzz"),
        serde_json::to_string(&out).unwrap()
    )
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (knobs, text) = data.split_at(3);
    let capacity = 1 + knobs[0] as usize % 64;
    let max_line = 8 + knobs[1] as usize * 8;
    let window = Window {
        start: Some(Num::Int(knobs[2] as i64 * 1000)),
        stop: (knobs[2] & 1 == 0).then_some(Num::Float(1.7e9)),
    };
    let whole = summarize(text, text.len().max(1), max_line, window);
    assert_eq!(summarize(text, capacity, max_line, window), whole);
});
