//! Fuzz target `analyzer`: arbitrary bytes through the one entry point of native `--json` and the
//! page (`flinch_core::analyzer::Analyzer`), for every kind (auto, trace, csv), every limits
//! preset, with and without a selected window, in fuzzer-chosen chunks. Must never panic or
//! hang, and the result must not depend on how the input is split (an input that fails fails
//! in every split).
#![no_main]

use flinch_core::Exactness;
use flinch_core::analyzer::{Analyzer, AnalyzerOptions, Kind};
use libfuzzer_sys::fuzz_target;

fn run(options: &AnalyzerOptions, chunks: &[&[u8]]) -> Result<String, String> {
    let mut a = Analyzer::new(options.clone());
    for c in chunks {
        if let Err(e) = a.write(c) {
            // A failed analyzer stays failed with the same error.
            assert_eq!(a.write(b"more").unwrap_err(), e);
            return Err(e.to_string());
        }
    }
    a.end().map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (knobs, input) = data.split_at(3);
    let kind = [Kind::Auto, Kind::Trace, Kind::Csv][knobs[0] as usize % 3];
    let limits = [Exactness::Bounded, Exactness::Native, Exactness::Exact]
        [(knobs[0] / 3) as usize % 3];
    let window = knobs[0] & 0x80 != 0;
    let options = AnalyzerOptions {
        kind,
        limits,
        source: "fuzz".into(),
        start: window.then(|| "a".into()),
        end: window.then(|| "b".into()),
        occurrence: (knobs[0] as u32 >> 5) & 1,
        top: Some(1 + knobs[1] as usize % 8),
        spans: knobs[1] & 0x80 != 0,
        gpu: (knobs[1] & 0x40 != 0).then_some(0),
        ..AnalyzerOptions::default()
    };
    let whole = run(&options, &[input]);
    // The same input in chunks of fuzzer-chosen sizes.
    let chunk_max = 1 + knobs[2] as usize * 8;
    let mut seed = knobs[2] as u64 | 1;
    let mut chunks = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = (1 + (seed >> 33) as usize % chunk_max).min(rest.len());
        chunks.push(&rest[..n]);
        rest = &rest[n..];
    }
    match (run(&options, &chunks), whole) {
        (Ok(split), Ok(whole)) => assert_eq!(split, whole),
        // Input with two faults (e.g. gzip whose decoded text is not a trace and whose deflate
        // data is corrupt further on) may report either first, depending on how much one call
        // decoded before the gzip layer failed; it fails either way.
        (Err(_), Err(_)) => {}
        (split, whole) => panic!("split: {split:?}\nwhole: {whole:?}"),
    }
});
