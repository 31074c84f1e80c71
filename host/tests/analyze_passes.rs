//! The analyze driver: one thread or two (any batch size), every first-pass hold, plain or
//! gzip, give the bytes of the page's one-pass analysis (`flinch_core::analyzer::Analyzer`).
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use flinch_core::Exactness;
use flinch_core::analyzer::{Analyzer, AnalyzerOptions, Kind};
use flinch_core::window::{FIRST_PASS_HOLD, PowerSource, WindowOptions};
use flinch_host::analyze::{self, AnalyzeRequest, CsvInput, Form};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// The page's JSON for `path` (one pass, everything held), with the CLI's trailing newline.
fn page_json(path: &Path, req: &AnalyzeRequest) -> String {
    let options = AnalyzerOptions {
        kind: Kind::Csv,
        source: path.display().to_string(),
        start: req.start.clone(),
        end: req.end.clone(),
        occurrence: req.occurrence,
        gpu: req.gpu,
        spans: req.spans,
        max_gap_ms: Some(req.max_gap_ms),
        power_source: req.power_source.unwrap_or(PowerSource::Unknown),
        limits: Exactness::Exact,
        ..AnalyzerOptions::default()
    };
    let mut page = Analyzer::new(options);
    page.write(&std::fs::read(path).unwrap()).unwrap();
    // A missing selection still gives the whole result.
    page.end().unwrap() + "\n"
}

/// The driver's JSON for `req` with these threads.
fn host_json(req: &AnalyzeRequest, two_threads: bool, batch_rows: usize) -> String {
    let opts = analyze::window_options(req, Form::Json).unwrap();
    let mut input = CsvInput::open(req, Form::Json).unwrap();
    input.set_threads(two_threads, batch_rows);
    let (mut input, mut analyzed) = analyze::first_pass(req, input, opts).unwrap();
    let mut out = Vec::new();
    analyze::write_json(&mut input, &mut analyzed, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("flinch-host-{}-{name}", std::process::id()))
}

/// A file with every reader event: quoted labels (a newline, a comma), a repeated header, an
/// over-long record, a bad timestamp, blank lines, an unknown row type.
fn tricky() -> String {
    let hdr = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n";
    let mut text = String::from(hdr);
    for k in 0..400u64 {
        let t = 1_000_000_000 + k * 10_000_000;
        text.push_str(&format!(
            "{t},{t},SAMPLE,,{}.5,{},1,1400,60,{}\n",
            100 + k % 7,
            k % 100,
            k * 9
        ));
        match k % 50 {
            3 => text.push_str(&format!(
                "{},0,MARK,\"step,\nstart\",,,,,,\n",
                t - 3_000_000
            )),
            9 => text.push_str(&format!("{t},0,MARK,step_end,,,,,,\n")),
            17 => text.push_str(hdr),
            23 => text.push_str(&format!("{t},0,MARK,{},,,,,,\n", "x".repeat(5000))),
            31 => text.push_str("12x,0,SAMPLE,,1,1,,,,\n\n\n"),
            37 => text.push_str(&format!("{t},0,OTHER,,,,,,,\n")),
            _ => {}
        }
    }
    text
}

/// Marks and spans by the hundred: 600 steps on two GPUs, pairs, stretches and a pair that never
/// closes, inside one outer pair.
fn many_marks() -> String {
    let mut text = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_index,gpu_power_W,gpu_util_pct,gpu_energy_mJ\n",
    );
    let mut t = 1_000_000_000u64;
    text.push_str(&format!("{t},0,MARK,outer_start,,,,\n"));
    for k in 0..600u64 {
        for g in 0..2 {
            let p = 60 + (k * 37 + g * 11) % 250;
            text.push_str(&format!(
                "{t},{t},SAMPLE,,{g},{p},{},{}\n",
                k % 101,
                k * 500
            ));
        }
        t += 30_000_000;
        let label = match k % 4 {
            0 => format!("s{k}_start"),
            1 => format!("s{}_end", k - 1),
            2 => "never_start".to_string(),
            _ => format!("m{k}"),
        };
        text.push_str(&format!("{t},0,MARK,{label},,,,\n"));
    }
    text.push_str(&format!("{t},0,MARK,outer_end,,,,\n"));
    text
}

#[test]
fn every_driver_gives_the_page_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/analyze");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let made = [("tricky.csv", tricky()), ("many.csv", many_marks())];
    for (name, text) in &made {
        let path = temp(name);
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    for path in &files {
        let big = path.ends_with(temp("many.csv").file_name().unwrap());
        for window in [
            None,
            Some(("begin", "end")),
            Some(("outer_start", "outer_end")),
        ] {
            let mut req = AnalyzeRequest::new(path.clone());
            req.power_source = Some(PowerSource::Unknown);
            if let Some((a, b)) = window {
                req.start = Some(a.into());
                req.end = Some(b.into());
                req.spans = true;
            }
            let want = page_json(path, &req);
            for hold in [0, 1, 5, 100, FIRST_PASS_HOLD] {
                let req = AnalyzeRequest {
                    first_pass_hold: hold,
                    ..req.clone()
                };
                let threads: &[(bool, usize)] = if hold == FIRST_PASS_HOLD || big {
                    &[(false, 1), (true, 1), (true, 3), (true, 2048)]
                } else {
                    &[(true, 2048)]
                };
                for &(two, batch) in threads {
                    let got = host_json(&req, two, batch);
                    assert!(
                        got == want,
                        "{} {window:?} hold {hold} two threads {two} batch {batch}",
                        path.display()
                    );
                }
            }
        }
    }
    for (name, _) in &made {
        std::fs::remove_file(temp(name)).unwrap();
    }
}

#[test]
fn a_gzip_file_gives_the_plain_json_in_every_pass() {
    let text = many_marks();
    let plain = temp("gz-plain.csv");
    std::fs::write(&plain, &text).unwrap();
    let gz = temp("gz.csv.gz");
    std::fs::write(&gz, gzip(text.as_bytes())).unwrap();
    for gpu in [None, Some(1)] {
        let req = |csv: &Path, hold| AnalyzeRequest {
            gpu,
            first_pass_hold: hold,
            power_source: Some(PowerSource::Unknown),
            ..AnalyzeRequest::new(csv.to_path_buf())
        };
        let want = analyze::json(&req(&plain, FIRST_PASS_HOLD)).unwrap().json;
        for hold in [1, 7, 100] {
            let got = analyze::json(&req(&gz, hold)).unwrap();
            // The source names the file given.
            let want = String::from_utf8(want.clone())
                .unwrap()
                .replace(&*plain.display().to_string(), &gz.display().to_string());
            assert!(
                String::from_utf8(got.json).unwrap() == want,
                "gpu {gpu:?} hold {hold}"
            );
            assert!(got.selection_error.is_none());
        }
    }
    // A cut .gz is an error naming the offset, in every pass.
    let data = gzip(text.as_bytes());
    std::fs::write(&gz, &data[..data.len() / 2]).unwrap();
    let e = analyze::json(&AnalyzeRequest::new(gz.clone()))
        .err()
        .unwrap();
    assert!(e.contains("truncated gzip member at byte"), "{e}");
    std::fs::remove_file(plain).unwrap();
    std::fs::remove_file(gz).unwrap();
}

/// The spans a text form lists, read again in a further pass, stop when the writer fails, and
/// the spans of every hold are the same.
#[test]
fn spans_of_a_further_pass_come_in_order_and_stop_when_told() {
    let path = temp("spans.csv");
    std::fs::write(&path, many_marks()).unwrap();
    let spans = |hold, stop_at: usize| {
        let req = AnalyzeRequest {
            spans: true,
            first_pass_hold: hold,
            ..AnalyzeRequest::new(path.clone())
        };
        let (mut input, mut analyzed) = analyze::analyze(&req, Form::Text).unwrap();
        assert_eq!(analyzed.rereads(), hold < 600, "hold {hold}");
        let mut got = Vec::new();
        analyzed
            .for_each_span(&mut input, |w| {
                got.push((w.start_label.clone(), w.end_label.clone(), w.t0_mono_ns));
                if got.len() == stop_at {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        got
    };
    let want = spans(FIRST_PASS_HOLD, usize::MAX);
    assert!(want.len() > 600, "{}", want.len());
    for hold in [1, 7, 100] {
        assert_eq!(spans(hold, usize::MAX), want, "hold {hold}");
        assert_eq!(spans(hold, 10), want[..10], "hold {hold}");
    }
    std::fs::remove_file(path).unwrap();
}

/// The text forms compute only the reference's figures (no plot) unless spans are listed.
#[test]
fn the_text_forms_ask_for_less() {
    let mut req = AnalyzeRequest::new("t.csv".into());
    req.start = Some("a".into());
    req.end = Some("b".into());
    let text = analyze::window_options(&req, Form::Text).unwrap();
    let json = analyze::window_options(&req, Form::Json).unwrap();
    assert!(text.reference_only && !json.reference_only);
    assert_eq!((text.series_points, json.series_points), (0, 0));
    req.spans = true;
    assert!(
        !analyze::window_options(&req, Form::Text)
            .unwrap()
            .reference_only
    );
    let WindowOptions { series_points, .. } =
        analyze::window_options(&AnalyzeRequest::new("t.csv".into()), Form::Json).unwrap();
    assert_eq!(series_points, 2000);
    req.end = None;
    let e = analyze::window_options(&req, Form::Text).unwrap_err();
    assert!(e.contains("--start and --end are both required"), "{e}");
}
