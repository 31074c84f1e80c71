use super::content::MAX_LEADING_WHITESPACE;
use super::*;
use crate::Limits;
use crate::gzip::GzError;
use crate::json::{EventScanner, Scan};
use crate::summary::{DEFAULT_TOP_OPS, TraceSummary};
use crate::testutil::for_each_split;
use crate::window::{PowerSource, SelectionError, WindowAnalyzer};
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

fn run(options: AnalyzerOptions, chunks: &[&[u8]]) -> Result<String, AnalyzeError> {
    let mut a = Analyzer::new(options);
    for c in chunks {
        a.write(c)?;
    }
    a.end()
}

#[test]
fn options_from_json() {
    let o = AnalyzerOptions::from_json(
        r#"{"kind":"csv","limits":"bounded","source":"t.csv","start":"a","end":"b"}"#,
    )
    .unwrap();
    assert_eq!(o.kind, Kind::Csv);
    assert_eq!(o.limits(), Limits::BOUNDED);
    assert_eq!(o.source, "t.csv");
    assert_eq!(
        (o.start.as_deref(), o.end.as_deref()),
        (Some("a"), Some("b"))
    );
    assert_eq!(
        AnalyzerOptions::from_json("{}").unwrap(),
        AnalyzerOptions::default()
    );
    let e = AnalyzerOptions::from_json(r#"{"kind":"pdf"}"#).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("bad analyzer options: unknown variant `pdf`"),
        "{e}"
    );
    assert!(AnalyzerOptions::from_json(r#"{"colour":1}"#).is_err());
}

#[test]
fn empty_and_whitespace_inputs() {
    assert_eq!(
        run(AnalyzerOptions::default(), &[]),
        Err(AnalyzeError::Empty)
    );
    for_each_split(b" \n\t \r\n", 8, 1, |chunks| {
        assert_eq!(
            run(AnalyzerOptions::default(), chunks),
            Err(AnalyzeError::NoContent { at_byte: 6 })
        );
    });
    let ws = alloc::vec![b' '; MAX_LEADING_WHITESPACE as usize + 1];
    assert_eq!(
        run(AnalyzerOptions::default(), &[&ws]),
        Err(AnalyzeError::NoContent {
            at_byte: ws.len() as u64
        })
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_layer_is_transparent() {
    // Whitespace inside gzip: the content layer sees the decoded bytes, in any split.
    let gz = gzip(b" \n \n");
    for_each_split(&gz, 16, 2, |chunks| {
        assert_eq!(
            run(AnalyzerOptions::default(), chunks),
            Err(AnalyzeError::NoContent { at_byte: 4 })
        );
    });
    // A lone first byte 0x1f that is not gzip is content, not lost.
    let o = AnalyzerOptions::default();
    assert_eq!(run(o.clone(), &[b"\x1f"]), Ok(csv_oracle(b"\x1f", &o)));
    assert_eq!(
        run(o.clone(), &[b"\x1f", b"x"]),
        Ok(csv_oracle(b"\x1fx", &o))
    );
}

/// Trailing garbage after the last gzip member: the data is analyzed as without it, and the
/// result's warnings say so with the offset (trace and trace.csv; whole and decoded input).
#[test]
fn trailing_gzip_garbage_keeps_the_data_with_a_warning() {
    let trace =
        br#"{"traceEvents":[{"ph":"X","name":"k","cat":"kernel","ts":1,"dur":5,"pid":1,"tid":1}]}"#;
    for data in [&trace[..], PAUSE_CSV] {
        let gz = gzip(data);
        let bad = [&gz[..], b"garbage\n\x00"].concat();
        let o = AnalyzerOptions::default();
        let want = run(o.clone(), &[&gz]).unwrap();
        let warning = trailing_garbage_warning(gz.len() as u64);
        assert!(!want.contains("trailing garbage"));
        for_each_split(&bad, 4, 3, |chunks| {
            let got = run(o.clone(), chunks).unwrap();
            assert!(got.contains(&warning), "{got}");
            let v: serde_json::Value = serde_json::from_str(&got).unwrap();
            let mut w: serde_json::Value = serde_json::from_str(&want).unwrap();
            w["warnings"]
                .as_array_mut()
                .unwrap()
                .push(warning.clone().into());
            assert_eq!(v, w);
        });
        // The page's split: an Inflater, then an analyzer fed decoded bytes.
        let mut inf = Inflater::new();
        let mut a = Analyzer::with_decoded_input(o.clone(), true);
        let mut out = alloc::vec![0u8; 1000];
        let mut input = &bad[..];
        loop {
            let n = inf.inflate(input, &mut out).unwrap();
            a.write(&out[..n]).unwrap();
            input = &input[inf.consumed()..];
            if input.is_empty() && n < out.len() {
                break;
            }
        }
        assert_eq!(inf.end(), Ok(None));
        a.note_gzip_warning(&inf.warning().unwrap());
        assert!(a.end().unwrap().contains(&warning));
    }
}

/// The oracle: the trace.csv analysis fed the whole file directly.
fn csv_oracle(data: &[u8], options: &AnalyzerOptions) -> String {
    let mut w = WindowAnalyzer::new(options.window_options().unwrap());
    w.write(data);
    w.end().to_json()
}

const PAUSE_CSV: &[u8] = include_bytes!("../../../tests/analyze/pause.csv");
const MULTI_GPU_CSV: &[u8] = include_bytes!("../../../tests/analyze/multi_gpu.csv");

#[test]
fn csv_plain_and_gzip_in_any_split_equal_the_direct_analysis() {
    let recording = AnalyzerOptions::default();
    let window = AnalyzerOptions {
        start: Some("pause_start".into()),
        end: Some("pause_end".into()),
        limits: crate::Exactness::Bounded,
        ..AnalyzerOptions::default()
    };
    for (data, options) in [
        (PAUSE_CSV, &recording),
        (PAUSE_CSV, &window),
        (MULTI_GPU_CSV, &recording),
    ] {
        let want = csv_oracle(data, options);
        assert!(want.contains("\"marks\""), "{want}");
        let gz = gzip(data);
        for input in [data, &gz[..]] {
            for_each_split(input, 4, 5, |chunks| {
                assert_eq!(run(options.clone(), chunks).as_ref(), Ok(&want));
            });
        }
    }
    // Leading whitespace reaches the CSV reader too.
    let mut padded = b"\n\n".to_vec();
    padded.extend_from_slice(PAUSE_CSV);
    assert_eq!(
        run(recording.clone(), &[&padded]),
        Ok(csv_oracle(&padded, &recording))
    );
    // An explicit kind skips detection.
    let csv = AnalyzerOptions {
        kind: Kind::Csv,
        ..AnalyzerOptions::default()
    };
    assert_eq!(run(csv.clone(), &[b"  "]), Ok(csv_oracle(b"  ", &csv)));
}

/// The oracle for traces: the scanner and summary fed the whole (decoded) document directly.
fn trace_oracle(doc: &[u8], options: &AnalyzerOptions) -> String {
    let limits = options.limits();
    let mut scanner = EventScanner::new(limits);
    let mut summary = TraceSummary::new(limits);
    let mut pos = 0;
    loop {
        let (what, nin) = scanner.scan(&doc[pos..]).unwrap();
        pos += nin;
        match what {
            Scan::Event => summary.add(&scanner.event()),
            Scan::NeedsInput => break,
        }
    }
    let end = scanner.finish();
    let warnings = *scanner.warnings();
    let top = options.top.unwrap_or(DEFAULT_TOP_OPS);
    summary
        .finish(&options.source, &end, &warnings, top)
        .to_json()
}

const FLOW_JSON: &[u8] = include_bytes!("../../../tests/traces/perfetto/flow_events_json_v1.json");
const SPEEDSCOPE_PARTIAL: &[u8] =
    include_bytes!("../../../tests/traces/speedscope/simple-partial.json");
const TRITON_GZ: &[u8] =
    include_bytes!("../../../tests/traces/HolisticTraceAnalysis/triton_example.json.gz");

fn gunzip(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn traces_plain_and_gzip_in_any_split_equal_the_direct_summary() {
    let exact = AnalyzerOptions {
        source: "t.json".into(),
        ..AnalyzerOptions::default()
    };
    let bounded = AnalyzerOptions {
        limits: crate::Exactness::Bounded,
        top: Some(3),
        ..exact.clone()
    };
    let triton = gunzip(TRITON_GZ);
    for doc in [FLOW_JSON, SPEEDSCOPE_PARTIAL, &triton[..]] {
        for options in [&exact, &bounded] {
            let want = trace_oracle(doc, options);
            assert!(want.contains("\"largest_ops_by_duration_sum\""), "{want}");
            let gz = gzip(doc);
            for input in [doc, &gz[..]] {
                for_each_split(input, 3, 6, |chunks| {
                    assert_eq!(run(options.clone(), chunks).as_ref(), Ok(&want));
                });
            }
        }
    }
    // The real file as it is on disk (gzip from another encoder).
    assert_eq!(
        run(exact.clone(), &[TRITON_GZ]),
        Ok(trace_oracle(&triton, &exact))
    );
    // Kind given: a bare array is a trace without detection; so is leading whitespace.
    let trace = AnalyzerOptions {
        kind: Kind::Trace,
        ..exact.clone()
    };
    assert_eq!(run(trace, &[b" \n[]"]), Ok(trace_oracle(b" \n[]", &exact)));
}

#[test]
fn a_cut_gzip_trace_is_summarized_from_what_was_read() {
    let triton = gunzip(TRITON_GZ);
    let gz = gzip(&triton);
    let cut = &gz[..gz.len() * 2 / 3];
    let options = AnalyzerOptions::default();
    let got = run(options.clone(), &[cut]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["truncated"], true);
    let first = v["warnings"][0].as_str().unwrap();
    assert_eq!(
        first,
        alloc::format!(
            "truncated gzip member at byte {}: summarized from what was read",
            cut.len()
        )
    );
    assert!(v["totals"]["events"].as_u64().unwrap() > 0);
    // A caller that inflates by itself and reports the cut gets the same bytes.
    let mut dec = crate::gzip::GzDecoder::new();
    let mut out = vec![0u8; 1 << 20];
    let (_, _, nout) = dec.decode(cut, &mut out).unwrap();
    let mut a = Analyzer::with_decoded_input(options.clone(), true);
    a.write(&out[..nout]).unwrap();
    a.note_cut_gzip(dec.finish().unwrap_err());
    assert_eq!(a.end(), Ok(got));
    // A cut .gz of a trace.csv is an error: there is no partial CSV result to trust.
    let csv_gz = gzip(PAUSE_CSV);
    let e = run(options, &[&csv_gz[..csv_gz.len() - 4]]).unwrap_err();
    assert!(
        e.to_string().starts_with("truncated gzip member at byte"),
        "{e}"
    );
}

#[test]
fn inflater_then_decoded_analyzer_equals_the_one_thread_analyzer() {
    let triton = gunzip(TRITON_GZ);
    let gz = gzip(&triton);
    let options = AnalyzerOptions::default();
    for input in [&gz[..], &gz[..gz.len() * 3 / 4]] {
        let want = run(options.clone(), &[input]);
        for_each_split(input, 3, 9, |chunks| {
            let mut inf = Inflater::new();
            let mut a = Analyzer::with_decoded_input(options.clone(), true);
            let mut out = [0u8; 1000];
            for chunk in chunks {
                let mut rest = *chunk;
                loop {
                    let n = inf.inflate(rest, &mut out).unwrap();
                    rest = &rest[inf.consumed()..];
                    a.write(&out[..n]).unwrap();
                    if n < out.len() && rest.is_empty() {
                        break;
                    }
                }
            }
            if let Some(cut) = inf.end().unwrap() {
                a.note_cut_gzip(cut);
            }
            assert_eq!(a.end(), want);
        });
    }
}

#[test]
fn trace_scan_errors_name_the_offset() {
    let options = AnalyzerOptions::default();
    let bad = b"{\"traceEvents\": [{\"ph\":\"X\"}] ] }";
    let plain = run(options.clone(), &[bad]).unwrap_err();
    assert!(
        matches!(
            plain,
            AnalyzeError::Scan {
                decompressed: false,
                ..
            }
        ),
        "{plain:?}"
    );
    let msg = plain.to_string();
    assert!(msg.contains("at byte"), "{msg}");
    let gz = run(options, &[&gzip(bad)]).unwrap_err();
    assert_eq!(
        gz.to_string(),
        alloc::format!("{msg} of the decompressed data")
    );
}

#[test]
fn a_missing_selection_is_a_complete_result_that_says_so() {
    let options = AnalyzerOptions {
        start: Some("begin".into()),
        end: Some("nope".into()),
        ..AnalyzerOptions::default()
    };
    let mut a = Analyzer::new(options.clone());
    a.write(PAUSE_CSV).unwrap();
    let analysis = a.finish().unwrap();
    let Some(SelectionError::Missing {
        start_t_mono_ns: Some(_),
        end_t_mono_ns: None,
    }) = analysis.selection_error()
    else {
        panic!("{:?}", analysis.selection_error());
    };
    let message = analysis.selection_error().unwrap().to_string();
    assert!(message.starts_with("Missing MARK(s). start="), "{message}");
    assert!(message.ends_with(" end=None"), "{message}");
    assert_eq!(analysis.to_json(), csv_oracle(PAUSE_CSV, &options));
    assert_eq!(
        run(options.clone(), &[PAUSE_CSV]),
        Ok(csv_oracle(PAUSE_CSV, &options))
    );
    let half = AnalyzerOptions {
        start: Some("a".into()),
        ..AnalyzerOptions::default()
    };
    assert_eq!(
        run(half, &[PAUSE_CSV]),
        Err(AnalyzeError::Options(OptionsError::UnpairedMark))
    );
    let e = AnalyzerOptions::from_json(r#"{"power_source":"mean"}"#).unwrap_err();
    assert!(
        matches!(e, AnalyzeError::Options(OptionsError::Json(_))),
        "{e:?}"
    );
    assert!(e.to_string().contains("unknown variant `mean`"), "{e}");
    assert_eq!(
        AnalyzerOptions::from_json(r#"{"power_source":"instant"}"#)
            .unwrap()
            .power_source,
        PowerSource::Instant
    );
}

#[test]
fn errors_name_their_typed_cause() {
    use core::error::Error;
    let e = AnalyzerOptions::from_json(r#"{"kind":"pdf"}"#).unwrap_err();
    let source = e.source().expect("options error as the cause");
    assert!(
        source.to_string().starts_with("unknown variant `pdf`"),
        "{source}"
    );
    let cut = GzError::Truncated { offset: 7 };
    let e = AnalyzeError::CutInput(cut);
    assert_eq!(e.source().unwrap().to_string(), cut.to_string());
    assert!(AnalyzeError::Empty.source().is_none());
}

#[test]
fn gzip_errors_carry_offsets() {
    let gz = gzip(&[b' '; 1000]);
    let cut = &gz[..gz.len() - 3];
    for_each_split(cut, 8, 3, |chunks| {
        let e = run(AnalyzerOptions::default(), chunks).unwrap_err();
        assert_eq!(
            e.to_string(),
            alloc::format!("truncated gzip member at byte {}", cut.len())
        );
    });
    let mut bad = gz.clone();
    let n = bad.len();
    bad[n - 8] ^= 1; // CRC32
    let e = run(AnalyzerOptions::default(), &[&bad]).unwrap_err();
    assert_eq!(
        e.to_string(),
        alloc::format!("crc32 mismatch in gzip member ending at byte {n}")
    );
}

#[test]
fn failed_analyzer_stays_failed() {
    let mut a = Analyzer::new(AnalyzerOptions::default());
    // A gzip header, then a deflate block of the reserved type 3.
    let e = a
        .write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff")
        .unwrap_err();
    assert!(
        e.to_string().starts_with("corrupt deflate data at byte "),
        "{e}"
    );
    assert_eq!(a.write(b"more"), Err(e.clone()));
    assert_eq!(a.bytes_in(), 11, "bytes after the failure are not taken");
    assert_eq!(a.end(), Err(e));
}
