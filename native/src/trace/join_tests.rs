//! The join's first pass fed by the summary's scan (pipeline, parallel segments, gzip) and its
//! second pass (reading the file again, or replaying the copied annotation spans) give the
//! report that two passes of their own over the file give (`join::run`, the oracle), byte for
//! byte, with the summary unchanged.
use std::io::Write;
use std::path::Path;

use flinch_core::Limits;
use flinch_core::join::{JoinOptions, PauseOptions, Recording, RecordingBuilder, RecordingOptions};

use super::test_files::temp;
use super::{join, parallel, summarize_file, summarize_file_joined};

const BASE: i64 = 1_700_000_000_000_000_000;

/// A small deterministic generator.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Kineto-like events on two devices: kernels, memcpys, host ops, annotations (host and GPU,
/// some repeated, one with a `},{` in its args to defeat the segment guesses), instants,
/// counters and metadata; with `pauses`, idle stretches of 5 ms or more on each device.
/// `base`: `baseTimeNanoseconds` before the events (`Some(true)`), after them, or none.
fn kineto(seed: u64, n: usize, pauses: bool, base: Option<bool>) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut evs = Vec::new();
    let mut t_us = 1_000.0f64;
    evs.push(
        r#"{"ph":"M","name":"process_name","pid":0,"ts":0,"args":{"name":"GPU 0"}}"#.to_string(),
    );
    for k in 0..n {
        let dev = rng.below(2);
        let step = if pauses && rng.below(40) == 0 {
            5_000.0 + rng.below(20_000) as f64
        } else {
            rng.below(900) as f64
        };
        t_us += step + 0.125;
        let cat = ["kernel", "gpu_memcpy", "gpu_memset"][rng.below(3) as usize];
        evs.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"k{}","pid":{dev},"tid":7,"ts":{t_us:.3},"dur":{}.5,"args":{{"grid":[1,2]}}}}"#,
            rng.below(7),
            rng.below(800)
        ));
        match rng.below(8) {
            0 => evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":9,"tid":9,"ts":{:.3},"dur":{}}}"#,
                k / 10,
                t_us - 300.0,
                rng.below(30_000)
            )),
            1 => evs.push(format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"fwd","pid":{dev},"tid":3,"ts":{:.3},"dur":{},"args":{{"a":[{{"x":1}},{{"y":2}}]}}}}"#,
                t_us - 100.0,
                rng.below(9_000)
            )),
            2 => evs.push(format!(
                r#"{{"ph":"i","s":"t","name":"mark","pid":9,"tid":9,"ts":{:.3}}}"#,
                t_us + 3.0
            )),
            3 => evs.push(format!(
                r#"{{"ph":"C","name":"mem","pid":9,"ts":{:.3},"args":{{"v":{}}}}}"#,
                t_us + 1.0,
                rng.below(100)
            )),
            _ => {}
        }
        evs.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":9,"tid":9,"ts":{:.3},"dur":{}}}"#,
            rng.below(5),
            t_us - 50.0,
            rng.below(4_000)
        ));
    }
    let b = format!(r#""baseTimeNanoseconds":{BASE}"#);
    let body = evs.join(",\n");
    match base {
        Some(true) => format!("{{{b},\"traceEvents\":[\n{body}\n]}}\n"),
        Some(false) => format!("{{\"traceEvents\":[\n{body}\n],{b}}}\n"),
        None => format!("{{\"traceEvents\":[\n{body}\n]}}\n"),
    }
    .into_bytes()
}

/// One GPU row each 1 ms from 200 ms into the trace, for 20 s, on both GPUs, power in steps.
fn recording() -> Recording {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    for k in 0..20_000i64 {
        for g in 0..2 {
            let t = BASE + 200_000_000 + k * 1_000_000;
            let p = if (k / 37) % 3 == 0 { 95 } else { 310 + g * 10 };
            s.push_str(&format!("{k},{t},SAMPLE,,{p},{},,,,,{g}\n", p / 4));
        }
    }
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    b.write(s.as_bytes()).unwrap();
    b.end().unwrap()
}

/// The summary and the join report through the summary's scan, as JSON.
fn joined(path: &Path, opts: &JoinOptions, rec: Option<&Recording>) -> (String, String) {
    let mut first = join::first_pass(opts, rec.is_some());
    let summary = summarize_file_joined(
        path,
        "s",
        Limits::NATIVE,
        40,
        false,
        false,
        Some(&mut first),
    )
    .unwrap();
    let (report, _) = join::finish(path, first.finish(), opts, rec, None).unwrap();
    (summary.to_json(), serde_json::to_string(&report).unwrap())
}

fn check(name: &str, doc: &[u8], rec: Option<&Recording>) {
    for gz in [false, true] {
        let path = if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(doc).unwrap();
            temp("jointest", &format!("{name}.json.gz"), &e.finish().unwrap())
        } else {
            temp("jointest", &format!("{name}.json"), doc)
        };
        let plain = summarize_file(&path, "s", Limits::NATIVE, 40, false, false)
            .unwrap()
            .to_json();
        for top in [50, 0] {
            for min_gap_ns in [2_000_000, 1_000_000_000] {
                let mut opts = JoinOptions::default();
                opts.gaps.min_gap_ns = min_gap_ns;
                opts.pauses = PauseOptions {
                    max_pauses_per_device: top,
                    ..opts.pauses
                };
                opts.clock_offset_ns = Some(0).filter(|_| rec.is_some());
                let (oracle, _) = join::run(&path, &opts, rec, None).unwrap();
                let want = serde_json::to_string(&oracle).unwrap();
                let (summary, got) = joined(&path, &opts, rec);
                assert_eq!(summary, plain, "{name} gz {gz}");
                assert_eq!(got, want, "{name} gz {gz} top {top} gap {min_gap_ns}");
                // The parallel segments, small enough for many (and failed) guesses.
                if !gz {
                    for segment in [997, 20_000] {
                        let plan = parallel::plan_with(&path, segment, 0).unwrap();
                        let mut first = join::first_pass(&opts, rec.is_some());
                        let s = parallel::summarize_joined(
                            plan,
                            "s",
                            Limits::NATIVE,
                            Some(40),
                            false,
                            &mut first,
                            |_, _| {},
                        )
                        .unwrap();
                        assert_eq!(s.to_json(), plain, "{name} segment {segment}");
                        let (r, _) = join::finish(&path, first.finish(), &opts, rec, None).unwrap();
                        assert_eq!(
                            serde_json::to_string(&r).unwrap(),
                            want,
                            "{name} segment {segment} top {top} gap {min_gap_ns}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn first_pass_on_the_summary_scan_matches_two_passes_of_its_own() {
    let rec = recording();
    for (seed, pauses, base) in [
        (1, true, Some(true)),
        (2, true, Some(false)),
        (3, false, Some(false)),
        (4, false, Some(true)),
        (5, true, None),
    ] {
        let doc = kineto(seed, 1500, pauses, base);
        let name = format!("k{seed}");
        check(&name, &doc, None);
        if base.is_some() {
            check(&format!("{name}r"), &doc, Some(&rec));
        }
    }
}

/// The report with a recording and no pause to list is the replay of the copied annotation
/// spans; it must charge every span (the oracle reads them all from the file).
#[test]
fn replayed_annotations_charge_every_span() {
    let rec = recording();
    let doc = kineto(7, 1500, false, Some(false));
    let path = temp("jointest", "replay.json", &doc);
    let opts = JoinOptions {
        clock_offset_ns: Some(0),
        ..JoinOptions::default()
    };
    let (_, report) = joined(&path, &opts, Some(&rec));
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let n: u64 = v["annotation_energy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["n"].as_u64().unwrap())
        .sum();
    let text = String::from_utf8(doc).unwrap();
    let spans = text.matches("\"cat\":\"user_annotation\"").count()
        + text.matches("\"cat\":\"gpu_user_annotation\"").count();
    assert!(spans > 100);
    assert_eq!(n as usize, spans);
}
