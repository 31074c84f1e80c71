//! Two scan threads over segments against the one-thread core analyzer (the oracle), with
//! segments small enough that every trace is cut into many, so that guesses hold, fail (inside
//! `args`, strings, before or after the events array) and are recovered from.
use std::io::Write;
use std::path::{Path, PathBuf};

use flinch_core::Limits;
use flinch_core::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use flinch_core::job::Job;
use flinch_core::trace_job::{TraceJob, TraceJobOptions};

use super::*;

use crate::trace::test_files::trace_fixtures;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    crate::trace::test_files::temp("parallel", name, bytes)
}

fn oracle(doc: &[u8], limits: Limits) -> Result<String, String> {
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: "s".to_string(),
        top: Some(40),
        ..AnalyzerOptions::default()
    };
    let mut a = Analyzer::with_decoded_input(options, false);
    a.write(doc).map_err(|e| e.to_string())?;
    match a.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(r) => Ok(r.to_json()),
        Analysis::Recording(_) | Analysis::TraceSteps(_) => Err("not a trace".into()),
    }
}

/// Summarizes `path` in segments of about `segment` bytes; also returns the segment count and
/// how many were rescanned (their guess failed).
fn parallel(path: &Path, segment: u64, limits: Limits) -> (Result<String, String>, usize, usize) {
    parallel_on(path, segment, limits, 2)
}

/// [`parallel`] on `threads` scan threads.
fn parallel_on(
    path: &Path,
    segment: u64,
    limits: Limits,
    threads: usize,
) -> (Result<String, String>, usize, usize) {
    let plan = plan_with(path, segment, 0)
        .expect("a plain, non-empty file")
        .with_threads(threads);
    let segments = plan.starts.len();
    let mut job = TraceJob::new(TraceJobOptions {
        source: "s".into(),
        limits,
        top: 40,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: None,
    });
    let (r, rescanned) = first_read_counting(plan, &mut job, |done, total| {
        assert!(done <= total);
    });
    let r = r.and_then(|()| job.finish().map_err(|e| e.to_string()));
    (r.map(|r| r.summary.to_json()), segments, rescanned)
}

/// The most segments and the most rescanned segments over the segment sizes tried.
fn same(name: &str, doc: &[u8]) -> (usize, usize) {
    let path = temp(name, doc);
    let mut most = (0, 0);
    for segment in [61, 997, 4096, 50_000] {
        for limits in [Limits::NATIVE, Limits::EXACT] {
            let (got, segments, rescanned) = parallel(&path, segment, limits);
            assert_eq!(got, oracle(doc, limits), "{name} segment {segment}");
            most = (most.0.max(segments), most.1.max(rescanned));
        }
    }
    most
}

/// Kineto-like events; `tricky` adds what defeats the guesses: `},{` inside `args` (objects
/// in an array) and inside strings, and `},{` in large values before and after the events
/// array.
pub(super) fn kineto(n: usize, tricky: bool, bare: bool) -> Vec<u8> {
    let mut s = String::new();
    if bare {
        s.push('[');
    } else {
        s.push_str("{\"schemaVersion\": 1,\n");
        if tricky {
            s.push_str("\"deviceProperties\": [");
            for i in 0..300 {
                let sep = if i > 0 { ",\n" } else { "" };
                s.push_str(&format!("{sep}{{\"id\": {i}, \"name\": \"gpu\"}}"));
            }
            s.push_str("],\n");
        }
        s.push_str("\"traceEvents\": [\n");
    }
    let mut ts: u64 = 1_712_195_509_166_189;
    for i in 0..n {
        if i > 0 {
            s.push_str(",\n");
        }
        ts += (i as u64 * 7919) % 300;
        let args = if tricky && i % 5 == 0 {
            format!(
                r#"{{"list": [{{"a": {i}}},{{"b": "x}},{{y"}}], "s": "q}}, {{\"ph\": \"X\"}}"}}"#
            )
        } else {
            format!(r#"{{"External id": {i}, "grid": [1, 2, 3]}}"#)
        };
        let ev = match i % 7 {
            0 => format!(
                r#"  {{"ph": "B", "cat": "c{}", "name": "b{}", "pid": 1, "tid": {}, "ts": {ts}.5}}"#,
                i % 3,
                i % 11,
                i % 2
            ),
            1 => format!(
                r#"  {{"ph": "E", "pid": 1, "tid": {}, "ts": {}.25}}"#,
                (i + 1) % 2,
                ts + 9
            ),
            2 => format!(
                r#"  {{"ph": "s", "id": {i}, "pid": 1, "tid": 1, "ts": {ts}, "cat": "ac2g", "name": "ac2g"}}"#
            ),
            _ => format!(
                "  {{\n    \"ph\": \"X\", \"cat\": \"k{}\", \"name\": \"op{}\", \"pid\": 1102, \"tid\": {},\n    \"ts\": {ts}.{:03}, \"dur\": {}.{:03},\n    \"args\": {args}\n  }}",
                i % 4,
                i % 13,
                i % 3,
                i % 1000,
                (i * 37) % 500,
                i % 997
            ),
        };
        s.push_str(&ev);
    }
    if bare {
        s.push_str("\n]\n");
    } else {
        s.push_str("\n],\n\"traceName\": \"t\"");
        if tricky {
            s.push_str(",\n\"otherData\": [");
            for i in 0..300 {
                let sep = if i > 0 { ",\n " } else { "" };
                s.push_str(&format!("{sep}{{\"k\": {i}}}"));
            }
            s.push(']');
        }
        s.push_str("\n}\n");
    }
    s.into_bytes()
}

#[test]
fn segments_give_the_sequential_result() {
    for (tricky, bare) in [(false, false), (true, false), (false, true), (true, true)] {
        let doc = kineto(3000, tricky, bare);
        let (segments, rescanned) = same(&format!("k-{tricky}-{bare}.json"), &doc);
        assert!(segments > 100, "{segments}");
        // Guesses fail where the document sets traps for them on lines of their own (before
        // and after the events array); the one-line traps inside `args` lose to the guesses
        // after a line break.
        if tricky && !bare {
            assert!(rescanned > 10, "{rescanned}");
        } else {
            assert_eq!(rescanned, 0);
        }
    }
}

#[test]
fn real_traces_give_the_sequential_result() {
    let mut seen = 0;
    for p in trace_fixtures(&[".json"]) {
        let doc = std::fs::read(&p).unwrap();
        if doc.is_empty() {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let path = temp(&name, &doc);
        for segment in [997, 20_000] {
            let (got, _, _) = parallel(&path, segment, Limits::NATIVE);
            assert_eq!(got, oracle(&doc, Limits::NATIVE), "{name} {segment}");
        }
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} traces");
}

#[test]
fn damaged_cut_and_broken_files_give_the_sequential_result_or_error() {
    let doc = kineto(2000, true, false);
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("cut".into(), doc[..doc.len() * 2 / 3].to_vec()),
        ("cut-in-args".into(), {
            let k = doc.len() / 2;
            let at = k + doc[k..].windows(6).position(|w| w == b"\"list\"").unwrap() + 3;
            doc[..at].to_vec()
        }),
    ];
    // Damage spread over the segments: structural errors (with their offsets), malformed
    // events, control characters, broken strings.
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let bytes = b"{}[],:\"\\\x01 x";
    for round in 0..12 {
        let mut d = doc.clone();
        for _ in 0..3 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let k = (rng % d.len() as u64) as usize;
            d[k] = bytes[(rng >> 40) as usize % bytes.len()];
        }
        cases.push((format!("damaged-{round}"), d));
    }
    let mut errors = 0;
    for (name, d) in cases {
        let path = temp(&format!("{name}.json"), &d);
        for segment in [61, 3000] {
            let (got, _, _) = parallel(&path, segment, Limits::NATIVE);
            let want = oracle(&d, Limits::NATIVE);
            if let Err(e) = &want {
                assert!(e.contains("at byte"), "{e}");
                errors += 1;
            }
            assert_eq!(got, want, "{name} segment {segment}");
        }
    }
    assert!(errors > 0, "no damaged case was an error");
}

#[test]
fn plans_only_large_plain_files() {
    let doc = kineto(200, false, false);
    let plain = temp("plan.json", &doc);
    assert!(plan_with(&plain, 1000, doc.len() as u64 + 1).is_none());
    let p = plan_with(&plain, 1000, 0).unwrap();
    assert!(p.starts.len() > 5 && p.starts[0] == 0);
    assert!(p.starts.windows(2).all(|w| w[0] < w[1]));
    for &q in &p.starts[1..] {
        assert_eq!(doc[q as usize], b'{');
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&doc).unwrap();
    let gz = temp("plan.json.gz", &gz.finish().unwrap());
    assert!(plan_with(&gz, 1000, 0).is_none());
    assert!(plan_with(Path::new("/nonexistent/x.json"), 1000, 0).is_none());
    assert_eq!(guess_boundary(b"x }, \n {\"a\"}"), Some(7));
    assert_eq!(guess_boundary(b"[{\"a\": {}}]"), None);
    // A candidate after a line break wins over an earlier one on the same line.
    assert_eq!(
        guess_boundary(b"[{\"a\":1},{\"b\":2}]},\n{\"c\"}"),
        Some(20)
    );
    assert_eq!(guess_boundary(b"[{\"a\":1},{\"b\":2}]}"), Some(9));
}

#[test]
fn when_most_guesses_fail_the_summary_scans_on_alone_with_the_same_result() {
    // One line, `},{` inside every event's args: about every other guess fails.
    let mut doc = String::from("[");
    for i in 0..4000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            r#"{{"ph":"X","cat":"c{}","name":"n{}","pid":1,"tid":{},"ts":{},"dur":{},"args":{{"l":[{{"a":{i}}},{{"b":{i}}}]}}}}"#,
            i % 3,
            i % 7,
            i % 2,
            1000 + i * 10,
            i % 9
        ));
    }
    doc.push(']');
    let path = temp("one-line.json", doc.as_bytes());
    for segment in [500, 5000] {
        let (got, segments, rescanned) = parallel(&path, segment, Limits::NATIVE);
        assert_eq!(got, oracle(doc.as_bytes(), Limits::NATIVE), "{segment}");
        // Guessing stops early: nearly every later segment is scanned by the summary.
        assert!(rescanned * 2 > segments, "{rescanned} of {segments}");
    }
}

/// Every thread count from 1 to 8, on random segment sizes, over plain, tricky (guesses fail),
/// bare and damaged documents: the one-thread analyzer's result, byte for byte.
#[test]
fn every_thread_count_gives_the_one_thread_result() {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut docs: Vec<(String, Vec<u8>)> = Vec::new();
    for (tricky, bare) in [(false, false), (true, false), (false, true)] {
        docs.push((format!("t-{tricky}-{bare}"), kineto(2500, tricky, bare)));
    }
    let mut damaged = kineto(2000, true, false);
    let k = damaged.len() / 3;
    damaged[k] = b'"';
    docs.push(("t-damaged".into(), damaged));
    for (name, doc) in &docs {
        let path = temp(&format!("{name}.json"), doc);
        let want = oracle(doc, Limits::NATIVE);
        for threads in 1..=8 {
            for _ in 0..2 {
                let segment = 50 + next(20_000);
                let (got, segments, _) = parallel_on(&path, segment, Limits::NATIVE, threads);
                assert_eq!(got, want, "{name}: {threads} threads, segment {segment}");
                assert!(segments > threads, "{name}: {segments} segments");
            }
        }
    }
}

#[test]
fn more_threads_take_fewer_batches_each() {
    assert_eq!(ring_batches(2), RING);
    assert!(ring_batches(1) <= RING);
    assert!(ring_batches(8) < ring_batches(4) && ring_batches(4) < ring_batches(2));
    assert_eq!(ring_batches(64), 4);
}
