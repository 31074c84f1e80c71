//! The two-thread route and the one-thread route against the one-thread core analyzer (the
//! oracle): same JSON for real
//! and generated traces, in small and odd-sized input chunks, and the same error texts and
//! cut-gzip warning.
use std::io::Write;
use std::path::{Path, PathBuf};

use flinch_core::Limits;

use flinch_core::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use flinch_core::job::Job;
use flinch_core::trace_job::{TraceJob, TraceJobOptions};

use super::*;
use crate::input::{InputError, InputOptions, open_input_with};

use crate::trace::test_files::trace_fixtures;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    crate::trace::test_files::temp("pipeline", name, bytes)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn job(limits: Limits) -> TraceJob {
    TraceJob::new(TraceJobOptions {
        source: "s".into(),
        limits,
        top: 40,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: None,
    })
}

/// The oracle: the core analyzer (the page's) on one thread, fed the decoded bytes.
fn oracle(path: &Path, limits: Limits, options: InputOptions) -> Result<String, String> {
    let mut input = open_input_with(path, options)?;
    let o = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: "s".into(),
        top: Some(40),
        ..AnalyzerOptions::default()
    };
    let mut a = Analyzer::with_decoded_input(o, input.is_gzip());
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => a.write(chunk).map_err(|e| e.to_string())?,
            Ok(None) => {
                if let Some(w) = input.warning() {
                    a.note_gzip_warning(w);
                }
                break;
            }
            Err(InputError { cut: Some(cut), .. }) => {
                a.note_cut_gzip(cut);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    match a.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(r) => Ok(r.to_json()),
        Analysis::Recording(_) | Analysis::TraceSteps(_) => Err("not a trace".into()),
    }
}

/// The job's one-thread route: the bytes written to it.
fn sequential(path: &Path, limits: Limits, options: InputOptions) -> Result<String, String> {
    let input = open_input_with(path, options)?;
    let mut j = job(limits);
    first_read_sequential(input, &mut j, || {})?;
    Ok(j.finish().map_err(|e| e.to_string())?.summary.to_json())
}

fn piped(path: &Path, limits: Limits, options: InputOptions) -> Result<String, String> {
    let input = open_input_with(path, options)?;
    let mut batches = 0;
    let mut j = job(limits);
    first_read(input, &mut j, || batches += 1)?;
    Ok(j.finish().map_err(|e| e.to_string())?.summary.to_json())
}

fn same(path: &Path) {
    for limits in [Limits::NATIVE, Limits::EXACT, Limits::BOUNDED] {
        for options in [
            InputOptions::default(),
            InputOptions {
                buffers: 2,
                buffer_bytes: 4099,
            },
        ] {
            let want = oracle(path, limits, options);
            let got = piped(path, limits, options);
            assert_eq!(got, want, "{} {limits:?} {options:?}", path.display());
            let one = sequential(path, limits, options);
            assert_eq!(one, want, "{} {limits:?} {options:?}", path.display());
        }
    }
}

/// A trace of `n` events: X events with long and short names (text arenas fill before the
/// event count does, and the other way round), B/E pairs across batches, instants, a stray `E`.
fn generated(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"otherData\": {\"x\": [1, {\"y\": \"}\"}]}, \"traceEvents\": [\n");
    let mut ts: u64 = 1_712_195_495_519_689;
    for i in 0..n {
        if i > 0 {
            s.push_str(",\n");
        }
        ts += (i as u64 * 7919) % 500;
        let name = if i % 3 == 0 {
            format!("kernel<{}>{}", i % 17, "x".repeat(300 + i % 41))
        } else {
            format!("op{}", i % 23)
        };
        match i % 9 {
            0 => s.push_str(&format!(
                r#"{{"ph":"B","cat":"c{}","name":"{name}","pid":1,"tid":{},"ts":{ts}.5}}"#,
                i % 5,
                i % 3
            )),
            1 => s.push_str(&format!(
                r#"{{"ph":"E","pid":1,"tid":{},"ts":{}.25}}"#,
                (i + 2) % 3,
                ts + 40
            )),
            2 => s.push_str(&format!(
                r#"{{"ph":"i","cat":"inst","name":"é\u00e9\"q","pid":"p","tid":{i},"ts":{ts},"s":"t"}}"#
            )),
            _ => s.push_str(&format!(
                r#"{{"ph":"X","cat":"c{}","name":"{name}","pid":1102,"tid":{},"ts":{ts}.{:03},"dur":{}.{:03},"args":{{"External id":{i},"grid":[1,2,3]}}}}"#,
                i % 5,
                i % 4,
                i % 1000,
                (i * 31) % 900,
                i % 997
            )),
        }
    }
    s.push_str("\n], \"displayTimeUnit\": \"ns\"}\n");
    s.into_bytes()
}

#[test]
fn generated_traces_equal_the_one_thread_analyzer() {
    // Several batches by event count and by text bytes; also the ring cycling many times.
    for n in [0, 1, 5, 2047, 2048, 2049, 9000] {
        let doc = generated(n);
        same(&temp(&format!("gen{n}.json"), &doc));
        same(&temp(&format!("gen{n}.json.gz"), &gzip(&doc)));
    }
}

#[test]
fn real_traces_equal_the_one_thread_analyzer() {
    let traces = trace_fixtures(&[".json", ".gz"]);
    for p in &traces {
        same(p);
    }
    assert!(traces.len() >= 15, "only {} traces", traces.len());
}

#[test]
fn errors_cut_files_and_empty_files_read_as_the_analyzer_says() {
    let doc = generated(3000);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.json", Vec::new()),
        ("ws.json", b"   \n ".to_vec()),
        ("junk.json", b"  hello".to_vec()),
        // A structural error after several batches of events.
        ("late-error.json", {
            let mut d = doc.clone();
            let k = d.len() - 40;
            d.truncate(k);
            d.extend_from_slice(b"} {\"ph\":\"X\"}]}");
            d
        }),
        ("cut.json", doc[..doc.len() * 2 / 3].to_vec()),
        ("cut.json.gz", {
            let gz = gzip(&doc);
            gz[..gz.len() * 2 / 3].to_vec()
        }),
        ("corrupt.json.gz", {
            let mut gz = gzip(&doc);
            let mid = gz.len() / 2;
            gz[mid] ^= 0xff;
            gz[mid + 1] ^= 0x55;
            gz
        }),
    ];
    for (name, bytes) in cases {
        let p = temp(name, &bytes);
        let want = oracle(&p, Limits::NATIVE, InputOptions::default());
        let got = piped(&p, Limits::NATIVE, InputOptions::default());
        assert_eq!(got, want, "{name}");
        let one = sequential(&p, Limits::NATIVE, InputOptions::default());
        assert_eq!(one, want, "{name}");
        if name.starts_with("cut") {
            let json = got.unwrap();
            assert!(json.contains("\"truncated\": true"), "{name}: {json}");
        }
        if name == "late-error.json" || name == "junk.json" {
            assert!(want.unwrap_err().contains("at byte"), "{name}");
        }
    }
}
