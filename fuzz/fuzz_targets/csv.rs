//! Fuzz target `csv`: arbitrary bytes as a trace.csv, fed in fuzzer-chosen splits to the
//! `TraceCsvReader` (checking the call invariants) and to the `WindowAnalyzer` with a window,
//! spans and a plot series under bounded limits. Must never panic, hang or grow without bound.
#![no_main]

use flinch_core::Limits;
use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::window::{WindowOptions, WindowAnalyzer, WindowSelect};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (knobs, text) = data.split_at(2);
    let chunk_max = 1 + knobs[0] as usize * 16;
    let mut seed = knobs[1] as u64 | 1;
    let mut next_len = |rest: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (1 + (seed >> 33) as usize % chunk_max).min(rest)
    };

    // The reader alone: progress on every call, rows only after a header, End exactly once.
    let mut rdr = TraceCsvReader::new();
    let mut rest = text;
    let mut rows = 0u64;
    loop {
        let n = next_len(rest.len());
        let chunk = &rest[..n];
        let (ev, nin) = rdr.read(chunk);
        assert!(nin <= chunk.len());
        rest = &rest[nin..];
        match ev {
            CsvEvent::Row => {
                assert!(rdr.header_seen());
                rows += 1;
                let r = rdr.row();
                let _ = (r.kind(), r.t_mono_ns(), r.label(), r.line());
            }
            CsvEvent::End => {
                assert!(rest.is_empty());
                assert_eq!(rdr.read(&[]).0, CsvEvent::End);
                break;
            }
            CsvEvent::NeedsInput => assert_eq!(nin, chunk.len()),
            CsvEvent::Header | CsvEvent::BadRow { .. } | CsvEvent::UnbalancedQuote { .. } => {}
        }
    }
    assert_eq!(rows, rdr.rows());

    // The analyzer.
    let opts = WindowOptions {
        limits: Limits {
            max_marks: 64,
            max_spans: 48,
            max_gpus: 4,
            ..Limits::BOUNDED
        },
        select: Some(WindowSelect {
            start: "a".into(),
            end: "b".into(),
            occurrence: 1,
        }),
        spans: true,
        series_points: 16,
        reorder_capacity: 64,
        ..WindowOptions::default()
    };
    let mut an = WindowAnalyzer::new(opts.clone());
    let mut rest = text;
    while !rest.is_empty() {
        let n = next_len(rest.len());
        an.write(&rest[..n]);
        rest = &rest[n..];
    }
    let r = an.end();
    assert!(r.marks.len() <= 64 + 2);
    assert!(r.gpus.len() <= 4);
    assert!(r.series.iter().all(|s| s.points.len() <= 16));
    let want = r.to_json();

    // The streamed analysis (native `--json` with many marks): pass 1 holding at most `hold`
    // marks and spans, then the marks and spans read again, handed out after every chunk.
    // Reassembled, it is the one-pass analysis.
    let hold = (knobs[0] % 5) as usize;
    let chunks: Vec<&[u8]> = {
        let mut v = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let n = next_len(rest.len());
            v.push(&rest[..n]);
            rest = &rest[n..];
        }
        v
    };
    let mut a = WindowAnalyzer::planning(opts.clone(), hold);
    for c in &chunks {
        a.write(c);
    }
    let planned = a.end_planned();
    let mut r = planned.analysis;
    if planned.marks_streamed {
        let mut m = WindowAnalyzer::marks_pass(opts.clone());
        for c in &chunks {
            m.write(c);
            r.marks.extend(std::iter::from_fn(|| m.pop_mark()));
        }
        m.end_stream();
        r.marks.extend(std::iter::from_fn(|| m.pop_mark()));
    }
    if let Some(plan) = planned.spans {
        let mut s = WindowAnalyzer::spans_pass(opts, plan);
        for c in &chunks {
            s.write(c);
            r.spans.extend(std::iter::from_fn(|| s.pop_span()));
        }
        s.end_stream();
        r.spans.extend(std::iter::from_fn(|| s.pop_span()));
    }
    assert_eq!(r.to_json(), want);
});
