//! The trace job's join, its first pass fed by the summary's scan (the host driver's routes:
//! the scan-thread route, parallel segments, gzip) and its second read (byte ranges, the whole
//! file again, or the copied annotation spans replayed), gives the report that two passes of
//! their own over the file give ([`oracle`]), byte for byte, with the summary unchanged.
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use flinch_core::Limits;
use flinch_core::job::Job;
use flinch_core::join::first_pass::MAX_RANGES;
use flinch_core::join::{
    FirstPass, JoinOptions, JoinPass, JoinReport, PauseOptions, Recording, RecordingBuilder,
    RecordingOptions, SecondPassStep,
};
use flinch_core::json::{Event, EventScanner, Scan};
use flinch_core::trace_job::{JoinSetup, RecordingSource, TraceJob, TraceJobOptions};
use flinch_host::trace::{ReadOptions, parallel, pipeline};

use super::summarize_file;
use crate::input::{InputFile, Passes};

/// Writes `bytes` to `<tmp>/flinch-<group>-<pid>/<name>` and returns the path.
fn temp(group: &str, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flinch-{group}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

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

/// Every event of the trace at `path` (decoded; a cut `.gz` up to the cut), in order, to `f`;
/// the base time when the document has one.
fn scan_file(path: &Path, mut f: impl FnMut(&Event<'_>)) -> Option<i64> {
    let file = InputFile::open(path, Passes::One).unwrap();
    let mut input = file.read().unwrap();
    let mut sc = EventScanner::new(Limits::NATIVE);
    while let Ok(Some(chunk)) = input.next_chunk() {
        let mut pos = 0;
        loop {
            let (what, n) = sc.scan(&chunk[pos..]).unwrap();
            pos += n;
            match what {
                Scan::Event => f(&sc.event()),
                Scan::NeedsInput => break,
            }
        }
    }
    sc.finish();
    sc.base_time_ns()
}

/// The oracle: both passes over the trace, each reading it whole.
fn oracle(path: &Path, opts: &JoinOptions, rec: Option<&Recording>) -> JoinReport {
    let mut first = FirstPass::new(opts.gaps, false);
    let base = scan_file(path, |e| first.add(e));
    first.set_base_time_ns(base);
    let first = first.finish();
    let mut pass = JoinPass::new(first.found, first.base_time_ns, opts.clone(), rec).unwrap();
    scan_file(path, |e| pass.add(e));
    pass.finish()
}

/// The first read's route through the host driver.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// The one the driver picks on this machine.
    Picked,
    /// Parallel segments of about this many bytes (a `.gz`: one inflater feeding three scan
    /// threads, in chunks of this many bytes).
    Segments(u64),
    /// The input's reader thread, a scan thread, the job on this one (`pipeline::first_read`).
    ScanThread,
    /// The input's reader thread, scan and job on this one (`pipeline::first_read_sequential`,
    /// the `.gz` route on two cores or fewer).
    Sequential,
}

/// The summary and the join report of the trace job through the host driver on `route`, byte
/// ranges capped at `max_ranges`, as JSON; and the steps its second read planned.
fn joined_by(
    path: &Path,
    opts: &JoinOptions,
    rec: Option<&Arc<Recording>>,
    route: Route,
    max_ranges: usize,
) -> (String, String, Option<Vec<SecondPassStep>>) {
    let file = reopen(path);
    let source = match rec {
        Some(_) => RecordingSource::Given,
        None => RecordingSource::None,
    };
    let mut job = TraceJob::new(TraceJobOptions {
        source: "s".into(),
        limits: Limits::NATIVE,
        top: 40,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: Some(JoinSetup {
            max_byte_ranges: max_ranges,
            ..JoinSetup::new(opts.clone(), source)
        }),
    });
    let gz = path.extension().is_some_and(|e| e == "gz");
    match route {
        // One inflater feeding three scan threads, keeping the restart points for the ranges.
        Route::Segments(s) if gz => {
            let input = file
                .read_indexed_with(parallel::gz::options(3, s as usize))
                .unwrap();
            parallel::gz::first_read(input, 3, &mut job, |_, _| {}).unwrap();
        }
        Route::Segments(s) => {
            let plan = parallel::plan_with(path, s, 0).unwrap();
            parallel::first_read(plan, &mut job, |_, _| {}).unwrap();
        }
        Route::ScanThread => {
            let input = file.read_indexed().unwrap();
            pipeline::first_read(input, &mut job, || {}).unwrap();
        }
        Route::Sequential => {
            let input = file.read_indexed().unwrap();
            pipeline::first_read_sequential(input, &mut job, || {}).unwrap();
        }
        Route::Picked => {
            flinch_host::trace::first_read(&file, &mut job, ReadOptions::default()).unwrap();
        }
    }
    let steps = job
        .first_pass()
        .and_then(|f| f.plan_second_pass(opts.pauses.max_pauses_per_device, rec.is_some()));
    if let Some(r) = rec {
        job.set_recording(r.clone());
    }
    flinch_host::trace::ranges::answer(&file, &mut job, None).unwrap();
    let r = job.finish().unwrap();
    let report = r.join.expect("the join's report");
    (
        r.summary.to_json(),
        serde_json::to_string(&report).unwrap(),
        steps,
    )
}

/// [`joined_by`] on the route the driver picks, with every byte range.
fn joined(path: &Path, opts: &JoinOptions, rec: Option<&Arc<Recording>>) -> (String, String) {
    let (s, r, _) = joined_by(path, opts, rec, Route::Picked, MAX_RANGES);
    (s, r)
}

fn check(name: &str, doc: &[u8], rec: Option<&Arc<Recording>>) {
    for gz in [false, true] {
        let path = if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(doc).unwrap();
            temp("jointest", &format!("{name}.json.gz"), &e.finish().unwrap())
        } else {
            temp("jointest", &format!("{name}.json"), doc)
        };
        let plain = summarize_file(&path, "s", Limits::NATIVE, 40, false)
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
                let want = oracle(&path, &opts, rec.map(|r| &**r));
                let want = serde_json::to_string(&want).unwrap();
                let (summary, got) = joined(&path, &opts, rec);
                assert_eq!(summary, plain, "{name} gz {gz}");
                assert_eq!(got, want, "{name} gz {gz} top {top} gap {min_gap_ns}");
                // The parallel segments, small enough for many (and failed) guesses; for a
                // `.gz`, chunks of one inflater feeding the scan threads; and both one-scan
                // routes, whichever this machine's cores would pick.
                for route in [
                    Route::Segments(997),
                    Route::Segments(20_000),
                    Route::ScanThread,
                    Route::Sequential,
                ] {
                    let (summary, r, _) = joined_by(&path, &opts, rec, route, MAX_RANGES);
                    assert_eq!(summary, plain, "{name} {route:?}");
                    assert_eq!(r, want, "{name} {route:?} top {top} gap {min_gap_ns}");
                }
            }
        }
    }
}

#[test]
fn first_pass_on_the_summary_scan_matches_two_passes_of_its_own() {
    let rec = Arc::new(recording());
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
    let rec = Arc::new(recording());
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

/// Kineto-like events on two devices with pauses of random length at random places (some
/// long, most short, so that a small `--top-pauses` lists only some), host events during them
/// (cpu ops, some long enough to span several byte ranges), annotations around some, and
/// `"args"` with `},{` that defeat some segment guesses.
fn paused(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut evs = Vec::new();
    let mut t_us = 1_000.0f64;
    for k in 0..n {
        let dev = rng.below(2);
        if rng.below(60) == 0 {
            // A pause: the host works alone for 2-60 ms.
            let len = 2_000.0 + rng.below(58_000) as f64;
            evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"dataloader{}","pid":9,"tid":9,"ts":{:.3},"dur":{len}}}"#,
                rng.below(3),
                t_us + 1.0
            ));
            let mut h = t_us + 10.0;
            while h + 500.0 < t_us + len {
                evs.push(format!(
                    r#"{{"ph":"X","cat":"cpu_op","name":"aten::stack{}","pid":9,"tid":9,"ts":{h:.3},"dur":{},"args":{{"a":[{{"x":1}},{{"y":2}}]}}}}"#,
                    rng.below(4),
                    100 + rng.below(400)
                ));
                h += 600.0 + rng.below(5_000) as f64;
            }
            t_us += len;
        }
        t_us += rng.below(300) as f64 + 0.25;
        evs.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":{dev},"tid":7,"ts":{t_us:.3},"dur":{}.5}}"#,
            rng.below(7),
            rng.below(300)
        ));
        match rng.below(50) {
            // A host op long enough to span many ranges.
            0 => evs.push(format!(
                r#"{{"ph":"X","cat":"python_function","name":"train.py(1): main","pid":9,"tid":9,"ts":{:.3},"dur":{}}}"#,
                t_us - 20_000.0,
                rng.below(200_000)
            )),
            1..=4 => evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":9,"tid":9,"ts":{:.3},"dur":{}}}"#,
                k / 30,
                t_us - 500.0,
                rng.below(40_000)
            )),
            5 => evs.push(format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"fwd","pid":{dev},"tid":3,"ts":{:.3},"dur":{}}}"#,
                t_us - 100.0,
                rng.below(9_000)
            )),
            _ => {}
        }
        evs.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":9,"ts":{:.3},"dur":{}}}"#,
            t_us - 30.0,
            rng.below(40)
        ));
    }
    let body = evs.join(",\n");
    format!("{{\"traceEvents\":[\n{body}\n],\"baseTimeNanoseconds\":{BASE}}}\n").into_bytes()
}

/// The oracle's report and the one through the summary's scan (the driver's route or, with
/// `segment`, parallel segments of about that many bytes), with ranges capped at
/// `max_ranges`; and the steps the second read planned.
fn both(
    path: &Path,
    opts: &JoinOptions,
    rec: Option<&Arc<Recording>>,
    segment: Option<u64>,
    max_ranges: usize,
) -> (String, String, Option<Vec<SecondPassStep>>) {
    let want = oracle(path, opts, rec.map(|r| &**r));
    let route = segment.map_or(Route::Picked, Route::Segments);
    let (_, got, steps) = joined_by(path, opts, rec, route, max_ranges);
    (serde_json::to_string(&want).unwrap(), got, steps)
}

/// The second pass that reads only the byte ranges meeting a listed pause gives the report of
/// a full second read, for random pause layouts, `--top-pauses`, minimum gaps, segment splits
/// and range caps (coarsened ranges included), plain and gzip, with and without a recording;
/// and it does read less than the whole file.
#[test]
fn second_pass_over_the_meeting_ranges_matches_a_full_read() {
    let rec = Arc::new(recording());
    let mut rng = Rng(99);
    let mut partial = 0;
    for seed in 0..6u64 {
        let doc = paused(100 + seed, 2500 + 700 * seed as usize);
        let size = doc.len() as u64;
        let plain = temp("jointest", &format!("p{seed}.json"), &doc);
        // Level 6 (gzip's default) ends a block every ~100 KB here: restart points between.
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        e.write_all(&doc).unwrap();
        let gz = temp(
            "jointest",
            &format!("p{seed}.json.gz"),
            &e.finish().unwrap(),
        );
        for round in 0..4 {
            let mut opts = JoinOptions::default();
            opts.gaps.min_gap_ns = [1_000_000, 2_000_000, 10_000_000, 40_000_000][round];
            opts.pauses.max_pauses_per_device = [1, 2, 5, 50][rng.below(4) as usize];
            let with_rec = rng.below(2) == 0;
            opts.clock_offset_ns = Some(0).filter(|_| with_rec);
            let r = with_rec.then_some(&rec);
            let max_ranges = [2, 7, 64, 1 << 15][rng.below(4) as usize];
            let segment = 300 + rng.below(40_000);
            let what = format!(
                "seed {seed} round {round} top {} rec {with_rec} max_ranges {max_ranges} segment {segment}",
                opts.pauses.max_pauses_per_device
            );
            for (path, seg) in [
                (&plain, Some(segment)),
                (&plain, None),
                (&gz, None),
                (&gz, Some(segment)),
            ] {
                let (want, got, steps) = both(path, &opts, r, seg, max_ranges);
                assert_eq!(got, want, "{what} parallel {seg:?} {}", path.display());
                let steps = steps.expect("ranges tracked");
                let scanned: u64 = steps
                    .iter()
                    .map(|s| match s {
                        flinch_core::join::SecondPassStep::Scan { resume, end } => {
                            end - match *resume {
                                flinch_core::join::Resume::Start => 0,
                                flinch_core::join::Resume::Boundary(o)
                                | flinch_core::join::Resume::AfterEvent(o) => o,
                            }
                        }
                        flinch_core::join::SecondPassStep::Replay(_) => 0,
                    })
                    .sum();
                assert!(scanned <= size, "{what}");
                if scanned * 2 < size {
                    partial += 1;
                }
            }
        }
    }
    // Most layouts list few pauses: the pass must have read less than half the file often.
    assert!(partial >= 20, "only {partial} partial second passes");
    // That the .gz ranges start at the first read's restart points is the host's test
    // (`flinch_host::trace::ranges`): its restart points are as far apart here as in use.
}

/// A range that starts right after an event with no `,` after it (here: after the last event
/// of a first `traceEvents` array, which a second one follows) cannot be resumed: the second
/// pass reads the whole file instead, and the report is the same.
#[test]
fn second_pass_falls_back_to_a_full_read_where_a_range_cannot_resume() {
    let one = |k: usize, t: f64| {
        format!(r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{t:.3},"dur":1}}"#)
            + &format!(
                r#",{{"ph":"X","cat":"cpu_op","name":"op{}","pid":9,"tid":9,"ts":{:.3},"dur":1}}"#,
                k % 3,
                t - 2.0
            )
    };
    // 1024 pairs: the first array ends exactly at a full batch of 2048 events.
    let first: Vec<String> = (0..1024).map(|k| one(k, k as f64 * 10.0)).collect();
    let mut second: Vec<String> = (0..50)
        .map(|k| one(k, 20_000.0 + k as f64 * 10.0))
        .collect();
    second.push(one(0, 90_000.0));
    let doc = format!(
        "{{\"traceEvents\":[{}],\"traceEvents\":[{}],\"baseTimeNanoseconds\":{BASE}}}",
        first.join(","),
        second.join(",")
    );
    let path = temp("jointest", "twoarrays.json", doc.as_bytes());
    let mut opts = JoinOptions::default();
    opts.gaps.min_gap_ns = 5_000_000;
    let (want, got, steps) = both(&path, &opts, None, None, 1 << 15);
    assert_eq!(got, want);
    let steps = steps.unwrap();
    assert!(
        steps.iter().any(|s| matches!(
            s,
            flinch_core::join::SecondPassStep::Scan {
                resume: flinch_core::join::Resume::AfterEvent(_),
                ..
            }
        )),
        "{steps:?}"
    );
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["pauses"].as_array().unwrap().len(), 2, "{got}");
}

/// A cut `.gz`: the first pass summarizes what was decoded before the cut, and the second pass
/// over the meeting ranges reads up to it, as the full second read does.
#[test]
fn second_pass_over_a_cut_gzip_matches_a_full_read() {
    let doc = paused(7, 6000);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&doc).unwrap();
    let gz = e.finish().unwrap();
    for cut in [gz.len() / 3, gz.len() * 2 / 3, gz.len() - 9] {
        let path = temp("jointest", &format!("cut{cut}.json.gz"), &gz[..cut]);
        for top in [1, 50] {
            let mut opts = JoinOptions::default();
            opts.gaps.min_gap_ns = 2_000_000;
            opts.pauses.max_pauses_per_device = top;
            let (want, got, steps) = both(&path, &opts, None, None, 1 << 15);
            assert_eq!(got, want, "cut {cut} top {top}");
            assert!(steps.is_some_and(|s| !s.is_empty()), "cut {cut} top {top}");
        }
    }
}

/// The trace at `path`, opened for the join's second read.
fn reopen(path: &Path) -> InputFile {
    InputFile::open(path, Passes::Several).unwrap()
}
