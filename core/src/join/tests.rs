//! Tests of the join on generated traces and recordings with known truth, checked against
//! exact (integer / rational) arithmetic.
use std::format;
use std::string::String;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::Limits;
use crate::json::{EventScanner, Scan};
use crate::testutil::for_each_split;
use crate::window::{PowerSource, WindowAnalyzer, WindowOptions, WindowSelect};

const BASE: i64 = 1_764_000_000_000_000_000;
/// The recording's CLOCK_MONOTONIC is CLOCK_REALTIME minus this.
const MONO_SKEW: i64 = 1_763_999_000_000_000_000;
/// Samples every 10 ms from trace ts 1_000_000.5 µs.
const GRID0_NS: i64 = 1_000_000_500;
const STEP_NS: i64 = 10_000_000;

/// (cat, name, pid, tid, ts µs text, dur µs text)
type Ev = (
    &'static str,
    &'static str,
    i64,
    i64,
    &'static str,
    &'static str,
);

const EVENTS: &[Ev] = &[
    ("kernel", "k1", 0, 7, "1000000.5", "200000"),
    ("kernel", "k2", 0, 8, "1500000.5", "100000"),
    ("gpu_memcpy", "Memcpy HtoD", 0, 7, "1650000.5", "50000"),
    ("gpu_memset", "Memset", 0, 8, "2424000.5", "76000"),
    ("kernel", "d1a", 1, 7, "1000000", "100"),
    ("kernel", "d1b", 1, 7, "1100000", "100"),
    ("kernel", "d1c", 1, 7, "1200100", "100"),
    (
        "user_annotation",
        "ProfilerStep#1",
        100,
        100,
        "1000000",
        "1000000",
    ),
    (
        "user_annotation",
        "ProfilerStep#2",
        100,
        100,
        "2000000",
        "600000",
    ),
    (
        "user_annotation",
        "train_loop",
        100,
        100,
        "900000",
        "2000000",
    ),
    ("cpu_op", "aten::item", 100, 100, "1250000.5", "200000"),
    (
        "cuda_runtime",
        "cudaStreamSynchronize",
        100,
        100,
        "1260000.5",
        "190000",
    ),
    (
        "python_function",
        "dataloader next",
        100,
        101,
        "1750000.5",
        "600000",
    ),
    (
        "gpu_user_annotation",
        "gpu_step",
        0,
        7,
        "1000000.5",
        "600000",
    ),
    (
        "Trace",
        "PyTorch Profiler (0)",
        100,
        100,
        "800000",
        "2200000",
    ),
];

/// The trace document: `base` before or after `traceEvents` (or none), events in `order`.
fn trace_doc(base: Option<i64>, base_first: bool, reverse: bool) -> String {
    let mut evs: Vec<String> = EVENTS
        .iter()
        .map(|(c, n, p, t, ts, d)| {
            format!(
                r#"{{"ph":"X","cat":"{c}","name":"{n}","pid":{p},"tid":{t},"ts":{ts},"dur":{d},"args":{{"x":1}}}}"#
            )
        })
        .collect();
    evs.push(r#"{"ph":"M","name":"process_name","pid":0,"args":{"name":"GPU 0"}}"#.into());
    if reverse {
        evs.reverse();
    }
    let events = format!(r#""traceEvents":[{}]"#, evs.join(",\n"));
    let b = base.map(|b| format!(r#""baseTimeNanoseconds":{b}"#));
    match (b, base_first) {
        (None, _) => format!(r#"{{"schemaVersion":1,{events},"traceName":"x"}}"#),
        (Some(b), true) => {
            format!(r#"{{"schemaVersion":1,{b},"deviceProperties":[{{"id":0}}],{events}}}"#)
        }
        (Some(b), false) => format!(r#"{{"schemaVersion":1,{events},"traceName":"x",{b}}}"#),
    }
}

/// Power of GPU `gpu` at grid sample `k`: GPU 0 idles (100 W, 0 %) in the pauses, else
/// 300 W / 90 %; GPU 1 draws 300 W except 60 W for k in 100..150.
fn power_at(gpu: i64, k: i64) -> (i64, i64) {
    let t = GRID0_NS + k * STEP_NS; // trace ns
    if gpu == 0 {
        let in_pause = (1_200_000_500..=1_500_000_500).contains(&t)
            || (1_700_000_500..=2_424_000_500).contains(&t);
        if in_pause { (100, 0) } else { (300, 90) }
    } else if (100..150).contains(&k) {
        (60, 10)
    } else {
        (300, 95)
    }
}

/// A recording over grid samples `ks` of both GPUs (flinch-trace's columns), with MARK rows
/// at `marks` (trace ns, label).
fn recording_csv(ks: core::ops::Range<i64>, marks: &[(i64, &str)]) -> String {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    let mut rows: Vec<(i64, String)> = Vec::new();
    for k in ks {
        for gpu in 0..2 {
            let wall = BASE + GRID0_NS + k * STEP_NS;
            let (p, u) = power_at(gpu, k);
            rows.push((
                wall,
                format!("{},{wall},SAMPLE,,{p},{u},,,,,{gpu}\n", wall - MONO_SKEW),
            ));
        }
    }
    for &(t, label) in marks {
        let wall = BASE + t;
        rows.push((
            wall,
            format!("{},{wall},MARK,{label},,,,,,,\n", wall - MONO_SKEW),
        ));
    }
    rows.sort_by_key(|r| r.0);
    for r in rows {
        s.push_str(&r.1);
    }
    s
}

/// Exact edge-interpolated energy of GPU `gpu` over trace ns `[t0, t1]` from the grid samples
/// `ks`, as a rational over a common denominator, rounded once to f64 J.
fn exact_energy_j(gpu: i64, ks: core::ops::Range<i64>, t0: i64, t1: i64) -> Option<f64> {
    // Segment [a, a + L] with powers pa, pb: ∫ over [lo, hi] · 2L = 2L·pa·(hi-lo) + (pb-pa)·((hi-a)² - (lo-a)²).
    let l = i128::from(STEP_NS);
    let mut num: i128 = 0;
    let mut covered = false;
    for k in ks.start..ks.end - 1 {
        let a = GRID0_NS + k * STEP_NS;
        let b = a + STEP_NS;
        let (lo, hi) = (a.max(t0), b.min(t1));
        if hi <= lo {
            continue;
        }
        covered = true;
        let (pa, pb) = (
            i128::from(power_at(gpu, k).0),
            i128::from(power_at(gpu, k + 1).0),
        );
        let (lo, hi, a) = (i128::from(lo), i128::from(hi), i128::from(a));
        num += 2 * l * pa * (hi - lo) + (pb - pa) * ((hi - a).pow(2) - (lo - a).pow(2));
    }
    // num / (2L) W·ns → J: / 1e9.
    covered.then(|| num as f64 / (2.0 * l as f64 * 1e9))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

/// Runs both passes over `doc` in `chunks`, with an optional recording.
fn join_chunks(
    chunks: &[&[u8]],
    opts: &JoinOptions,
    rec: Option<&Recording>,
) -> Result<JoinReport, AlignmentError> {
    let scan = |f: &mut dyn FnMut(&crate::json::Event<'_>)| -> Option<i64> {
        let mut sc = EventScanner::new(Limits::EXACT);
        for chunk in chunks {
            let mut pos = 0;
            loop {
                let (what, n) = sc.scan(&chunk[pos..]).expect("scan");
                pos += n;
                match what {
                    Scan::Event => f(&sc.event()),
                    Scan::NeedsInput => break,
                }
            }
        }
        let end = sc.finish();
        assert!(end.complete);
        sc.base_time_ns()
    };
    let mut finder = GapFinder::new(opts.gaps);
    let base = scan(&mut |e| finder.add(e));
    let found = finder.finish();
    let mut pass = JoinPass::new(found, base, opts.clone(), rec)?;
    let base2 = scan(&mut |e| pass.add(e));
    assert_eq!(base, base2);
    Ok(pass.finish())
}

fn join(
    doc: &str,
    opts: &JoinOptions,
    rec: Option<&Recording>,
) -> Result<JoinReport, AlignmentError> {
    join_chunks(&[doc.as_bytes()], opts, rec)
}

fn recording(csv: &str) -> Recording {
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    for c in csv.as_bytes().chunks(777) {
        b.write(c).unwrap();
    }
    b.end().unwrap()
}

#[test]
fn base_time_before_and_after_trace_events_in_any_split() {
    for base_first in [true, false] {
        let doc = trace_doc(Some(BASE), base_first, false);
        for_each_split(doc.as_bytes(), 8, 5, |chunks| {
            let mut sc = EventScanner::new(Limits::EXACT);
            let mut events = 0;
            for chunk in chunks {
                let mut pos = 0;
                loop {
                    let (what, n) = sc.scan(&chunk[pos..]).unwrap();
                    pos += n;
                    match what {
                        Scan::Event => events += 1,
                        Scan::NeedsInput => break,
                    }
                }
            }
            assert_eq!(sc.finish().events, EVENTS.len() as u64 + 1);
            assert_eq!(sc.base_time_ns(), Some(BASE), "base_first {base_first}");
            let _ = events;
        });
    }
    let mut sc = EventScanner::new(Limits::EXACT);
    let (_, _) = sc.scan(trace_doc(None, false, false).as_bytes()).unwrap();
    while sc.scan(b"").unwrap().0 == Scan::Event {}
    assert_eq!(sc.base_time_ns(), None);
    // A key that only starts like it, and a non-integer value, are not the base.
    for doc in [
        r#"{"baseTimeNanosecondsX":5,"traceEvents":[]}"#,
        r#"{"baseTimeNanoseconds":"5","traceEvents":[]}"#,
        r#"{"baseTimeNanoseconds":5.5,"traceEvents":[]}"#,
    ] {
        let mut sc = EventScanner::new(Limits::EXACT);
        sc.scan(doc.as_bytes()).unwrap();
        assert_eq!(sc.base_time_ns(), None, "{doc}");
        assert!(sc.finish().complete);
    }
}

/// A `baseTimeNanoseconds` that is not an integer is named with what it holds, in any split;
/// a base plus an offset past the i64 range says that it overflows.
#[test]
fn base_time_errors_say_what_was_found() {
    let rec = recording(&recording_csv(0..10, &[]));
    let first_pass = |chunks: &[&[u8]]| {
        let mut sc = EventScanner::new(Limits::EXACT);
        let mut first = FirstPass::new(opts().gaps, true);
        for chunk in chunks {
            let mut pos = 0;
            loop {
                let (what, n) = sc.scan(&chunk[pos..]).unwrap();
                pos += n;
                match what {
                    Scan::Event => first.add(&sc.event()),
                    Scan::NeedsInput => break,
                }
            }
        }
        first.set_base_time_ns(sc.base_time());
        first.finish()
    };
    let ev = r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"ts":1,"dur":1}"#;
    for (value, said) in [
        (
            "1.76e18",
            "baseTimeNanoseconds is 1.76e18, not an integer: give --clock-offset-ms",
        ),
        (
            "1764000000000000000.5",
            "baseTimeNanoseconds is 1764000000000000000.5, not an integer",
        ),
        (
            "99999999999999999999",
            "baseTimeNanoseconds is 99999999999999999999, past the i64 range",
        ),
        (
            "\"1764000000000000000\"",
            "baseTimeNanoseconds is a string, not an integer",
        ),
        ("null", "baseTimeNanoseconds is null, not an integer"),
    ] {
        for before in [true, false] {
            let doc = if before {
                format!(r#"{{"baseTimeNanoseconds":{value},"traceEvents":[{ev}]}}"#)
            } else {
                format!(r#"{{"traceEvents":[{ev}],"baseTimeNanoseconds":{value}}}"#)
            };
            for_each_split(doc.as_bytes(), 4, 2, |chunks| {
                let f = first_pass(chunks);
                assert_eq!(f.base_time_ns, None);
                let err = JoinPass::new(f.found.clone(), None, opts(), Some(&rec))
                    .err()
                    .unwrap()
                    .to_string();
                assert!(err.contains(said), "{doc}: {err}");
                // Without a recording the pauses stand; a warning says why there is no Unix time.
                let r = JoinPass::new(f.found, None, opts(), None).unwrap().finish();
                assert!(r.join_warnings[0].contains(said), "{:?}", r.join_warnings);
            });
        }
    }
    // No key at all: the plain text.
    let f = first_pass(&[format!(r#"{{"traceEvents":[{ev}]}}"#).as_bytes()]);
    let err = JoinPass::new(f.found, None, opts(), Some(&rec))
        .err()
        .unwrap();
    assert_eq!(err, AlignmentError::NoBase);
    let err = err.to_string();
    assert!(
        err.starts_with("the trace has no baseTimeNanoseconds"),
        "{err}"
    );
    // A base and an offset that overflow together.
    let f = first_pass(&[
        format!(r#"{{"traceEvents":[{ev}],"baseTimeNanoseconds":{BASE}}}"#).as_bytes(),
    ]);
    let mut o = opts();
    o.clock_offset_ns = Some(parse_offset_ms("8000000000000").unwrap());
    let err = JoinPass::new(f.found, f.base_time_ns, o, Some(&rec))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "baseTimeNanoseconds {BASE} plus --clock-offset-ms 8000000000000.0 overflows the i64 range of ns"
        )
    );
}

fn opts() -> JoinOptions {
    JoinOptions::default()
}

#[test]
fn pauses_and_host_from_the_trace_alone() {
    for (base_first, reverse) in [(true, false), (false, true)] {
        let doc = trace_doc(Some(BASE), base_first, reverse);
        let r = join(&doc, &opts(), None).unwrap();
        let a = r.alignment.as_ref().unwrap();
        assert_eq!(a.source, AlignmentSource::BaseTimeNanoseconds);
        assert_eq!(a.offset_ns, BASE);
        assert_eq!(a.trace_start_unix_ns, Some(BASE + 800_000_000));
        let got: Vec<(i64, f64, f64)> = r
            .pauses
            .iter()
            .map(|p| (p.device, p.start_ts_us.as_f64(), p.duration_ms))
            .collect();
        assert_eq!(
            got,
            [
                (0, 1_700_000.5, 724.0),
                (0, 1_200_000.5, 300.0),
                (1, 1_100_100.0, 100.0)
            ]
        );
        assert_eq!(r.pauses[0].start_unix_ns, Some(BASE + 1_700_000_500));
        let host = |i: usize| -> Vec<(String, String, u64, f64)> {
            r.pauses[i]
                .host
                .iter()
                .map(|h| (h.category.clone(), h.name.clone(), h.n, h.overlap_ms))
                .collect()
        };
        let within = |i: usize| -> Vec<String> {
            r.pauses[i].within.iter().map(|w| w.name.clone()).collect()
        };
        let overlapping = |i: usize| -> Vec<(String, String, u64, f64)> {
            r.pauses[i]
                .overlapping_annotations
                .iter()
                .map(|h| (h.category.clone(), h.name.clone(), h.n, h.overlap_ms))
                .collect()
        };
        // Annotations are context: the steps that share the pause are not host activity.
        assert_eq!(
            host(0),
            [("python_function".into(), "dataloader next".into(), 1, 600.0)]
        );
        assert_eq!(
            overlapping(0),
            [
                (
                    "user_annotation".into(),
                    "ProfilerStep#2".into(),
                    1,
                    424.0005
                ),
                (
                    "user_annotation".into(),
                    "ProfilerStep#1".into(),
                    1,
                    299.9995
                ),
            ]
        );
        assert!(overlapping(1).is_empty());
        assert_eq!(within(0), ["train_loop", "PyTorch Profiler (0)"]);
        assert_eq!(
            host(1),
            [
                ("cpu_op".into(), "aten::item".into(), 1, 200.0),
                (
                    "cuda_runtime".into(),
                    "cudaStreamSynchronize".into(),
                    1,
                    190.0
                ),
            ]
        );
        assert_eq!(
            within(1),
            [
                "gpu_step",
                "ProfilerStep#1",
                "train_loop",
                "PyTorch Profiler (0)"
            ]
        );
        assert!(host(2).is_empty());
        assert_eq!(
            within(2),
            ["ProfilerStep#1", "train_loop", "PyTorch Profiler (0)"]
        );
        assert_eq!(r.pause_devices[0].pauses_found, 2);
        assert_eq!(r.pause_devices[0].pause_time_ms, 1024.0);
        assert_eq!(r.pause_devices[1].busy_events, 3);
        assert!(r.annotation_energy.is_none());
        assert!(r.pauses.iter().all(|p| p.telemetry.is_none()));
    }
    // No base: pauses, no alignment, no Unix times.
    let r = join(&trace_doc(None, false, false), &opts(), None).unwrap();
    assert!(r.alignment.is_none());
    assert_eq!(r.pauses.len(), 3);
    assert!(r.pauses.iter().all(|p| p.start_unix_ns.is_none()));
}

/// A step that begins 100 ns after the GPU went idle holds the pause (`within`), one that
/// leaves more than the tolerance uncovered is an overlapping annotation, and neither is host
/// activity: the real host op comes first.
#[test]
fn annotations_are_context_not_host_activity() {
    // Device 0 idles over [1 000 000, 1 724 000) µs: a 724 ms pause, tolerance 724 µs.
    let evs = [
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":999000,"dur":1000}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1724000,"dur":1000}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#109","pid":1,"tid":1,"ts":1000000.1,"dur":800000}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"ProfilerStep#7","pid":1,"tid":1,"ts":999999,"dur":724000.5}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"late step","pid":1,"tid":1,"ts":1000725,"dur":900000}"#,
        r#"{"ph":"X","cat":"gpu_user_annotation","name":"gpu part","pid":0,"tid":7,"ts":1500000,"dur":100000}"#,
        r#"{"ph":"X","cat":"gpu_user_annotation","name":"other device","pid":1,"tid":7,"ts":1000000,"dur":724000}"#,
        r#"{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":1,"ts":0,"dur":9000000}"#,
        r#"{"ph":"X","cat":"python_function","name":"checkpoint.py(88): save","pid":1,"tid":1,"ts":1000010,"dur":700000}"#,
    ];
    let doc = format!(r#"{{"traceEvents":[{}]}}"#, evs.join(",\n"));
    for_each_split(doc.as_bytes(), 6, 3, |chunks| {
        let r = join_chunks(chunks, &opts(), None).unwrap();
        let p = &r.pauses[0];
        assert_eq!(p.duration_ms, 724.0);
        let names = |v: &[HostEntry]| -> Vec<(String, f64)> {
            v.iter().map(|h| (h.name.clone(), h.overlap_ms)).collect()
        };
        assert_eq!(names(&p.host), [("checkpoint.py(88): save".into(), 700.0)]);
        let within: Vec<&str> = p.within.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            within,
            ["ProfilerStep#7", "ProfilerStep#109", "PyTorch Profiler (0)"]
        );
        assert_eq!(
            names(&p.overlapping_annotations),
            [("late step".into(), 723.275), ("gpu part".into(), 100.0)]
        );
    });
    assert_eq!(pauses::within_tolerance_ns(724_000_000), 724_000);
    assert_eq!(pauses::within_tolerance_ns(100), 1000);
}

#[test]
fn min_gap_is_inclusive_and_listing_is_capped() {
    let doc = trace_doc(Some(BASE), true, false);
    let mut o = opts();
    o.gaps.min_gap_ns = 100_000_001;
    let r = join(&doc, &o, None).unwrap();
    assert_eq!(r.pauses.len(), 2, "the 100 ms gap is below 100.000001 ms");
    o.gaps.min_gap_ns = 100_000_000;
    o.pauses.max_pauses_per_device = 1;
    let r = join(&doc, &o, None).unwrap();
    let got: Vec<f64> = r.pauses.iter().map(|p| p.duration_ms).collect();
    assert_eq!(got, [724.0, 100.0]);
    assert_eq!(r.pause_devices[0].pauses_found, 2);
    assert_eq!(r.pause_devices[0].pauses_listed, 1);
}

#[test]
fn telemetry_energy_matches_exact_arithmetic_and_analyze() {
    let ks = 0..151;
    // Marks at pause B's edges, for the analyzer's window.
    let csv = recording_csv(
        ks.clone(),
        &[(1_700_000_500, "b_start"), (2_424_000_500, "b_end")],
    );
    let rec = recording(&csv);
    let doc = trace_doc(Some(BASE), false, false);
    let r = join(&doc, &opts(), Some(&rec)).unwrap();
    let a = r.alignment.as_ref().unwrap();
    assert_eq!(a.recording_start_unix_ns, Some(BASE + GRID0_NS));
    // The trace spans 0.8 s..3.0 s (the profiler's own span); the recording 1.0 s..2.5 s.
    assert_eq!(a.trace_covered_share, Some(1.5e9 / 2.2e9));
    assert!(
        r.join_warnings.iter().all(|w| !w.contains("covers only")),
        "{:?}",
        r.join_warnings
    );

    let tb = r.pauses[0].telemetry.as_ref().unwrap();
    assert_eq!(tb.gpu_index, 0);
    let eb = tb.gpu_energy_j.unwrap();
    assert!(close(eb, 72.56), "{eb}");
    assert!(close(
        eb,
        exact_energy_j(0, ks.clone(), 1_700_000_500, 2_424_000_500).unwrap()
    ));
    assert_eq!(tb.avg_util_pct.map(|u| u < 1.0), Some(true));
    assert_eq!(tb.verdict.verdict, Some("waiting"));
    assert_eq!(tb.power_coverage, 1.0);
    let ta = r.pauses[1].telemetry.as_ref().unwrap();
    assert!(close(ta.gpu_energy_j.unwrap(), 30.0));
    assert!(close(ta.avg_power_w.unwrap(), 100.0));

    // The same figure, to the bit, as analyze's energy_edge_j for that window.
    let mut wa = WindowAnalyzer::new(WindowOptions {
        select: Some(WindowSelect {
            start: "b_start".into(),
            end: "b_end".into(),
            occurrence: 1,
        }),
        ..WindowOptions::default()
    });
    wa.write(csv.as_bytes());
    let an = wa.end();
    let w = an.window.as_ref().expect("window");
    let g0 = w.gpus.iter().find(|g| g.gpu_index == Some(0)).unwrap();
    assert_eq!(g0.energy_edge_j.map(f64::to_bits), Some(eb.to_bits()));
    assert_eq!(g0.verdict, tb.verdict);

    // Device 1's pause had high power in the recording: compute, and a warning.
    let t1 = r.pauses[2].telemetry.as_ref().unwrap();
    assert_eq!(t1.gpu_index, 1);
    assert_eq!(t1.verdict.verdict, Some("compute"));
    assert!(
        close(t1.gpu_energy_j.unwrap(), 30.0),
        "{:?}",
        t1.gpu_energy_j
    );
    assert!(
        r.join_warnings
            .iter()
            .any(|w| w.contains("device 1 pause") && w.contains("busy")),
        "{:?}",
        r.join_warnings
    );

    // Energy per annotation: exact sums over the spans and their GPUs.
    let ae = r.annotation_energy.as_ref().unwrap();
    let row = |name: &str| ae.iter().find(|a| a.name == name).unwrap();
    let spans = |name: &str| -> Vec<(i64, i64)> {
        EVENTS
            .iter()
            .filter(|e| e.1 == name)
            .map(|e| {
                let ts = crate::json::parse_us_to_ns(e.4.as_bytes()).unwrap();
                (
                    ts,
                    ts + crate::json::parse_us_to_ns(e.5.as_bytes()).unwrap(),
                )
            })
            .collect()
    };
    for (name, gpus) in [
        ("ProfilerStep#1", &[0, 1][..]),
        ("train_loop", &[0, 1]),
        ("gpu_step", &[0]),
    ] {
        let mut want = 0.0;
        for (s, t) in spans(name) {
            for &g in gpus {
                want += exact_energy_j(g, ks.clone(), s, t).unwrap();
            }
        }
        let got = row(name).gpu_energy_j.unwrap();
        assert!(close(got, want), "{name}: {got} vs {want}");
    }
    assert_eq!(row("gpu_step").category, "gpu_user_annotation");
    assert_eq!(row("ProfilerStep#2").n, 1);
    assert_eq!(row("ProfilerStep#2").duration_ms, 600.0);
    assert_eq!(
        row("train_loop").verdicts.mixed + row("train_loop").verdicts.compute,
        1
    );
    // Sorted by energy, largest first.
    assert!(
        ae.windows(2)
            .all(|w| w[0].gpu_energy_j >= w[1].gpu_energy_j)
    );
}

#[test]
fn partial_coverage_and_no_overlap_warn() {
    let doc = trace_doc(Some(BASE), true, false);
    // Only the first 0.5 s of the trace's 2.2 s are recorded.
    let rec = recording(&recording_csv(0..51, &[]));
    let r = join(&doc, &opts(), Some(&rec)).unwrap();
    assert_eq!(
        r.alignment.as_ref().unwrap().trace_covered_share,
        Some(0.5e9 / 2.2e9)
    );
    assert!(
        r.join_warnings
            .iter()
            .any(|w| w.contains("covers only 22.7%")),
        "{:?}",
        r.join_warnings
    );
    // Pause B (1.7 s..) lies past the recording: no energy.
    let tb = r.pauses[0].telemetry.as_ref().unwrap();
    assert_eq!(tb.gpu_energy_j, None);
    assert_eq!(tb.verdict.verdict, None);
    // Pause A (1.2 s..1.5 s) is covered up to 1.5 s: the last sample is at k = 50, its end.
    let ta = r.pauses[1].telemetry.as_ref().unwrap();
    assert!(close(ta.gpu_energy_j.unwrap(), 30.0));

    // A skew of an hour: nothing overlaps.
    let mut o = opts();
    o.clock_offset_ns = Some(3_600_000_000_000);
    let r = join(&doc, &o, Some(&rec)).unwrap();
    assert_eq!(
        r.alignment.as_ref().unwrap().source,
        AlignmentSource::ClockOffset
    );
    assert_eq!(r.alignment.as_ref().unwrap().overlap_ms, Some(0.0));
    assert!(r.join_warnings.iter().any(|w| w.contains("do not overlap")));
}

#[test]
fn clock_offset_without_base_and_to_correct_a_skew() {
    let rec = recording(&recording_csv(0..151, &[]));
    let truth = join(&trace_doc(Some(BASE), true, false), &opts(), Some(&rec)).unwrap();
    let energies = |r: &JoinReport| -> Vec<Option<u64>> {
        r.pauses
            .iter()
            .map(|p| {
                p.telemetry
                    .as_ref()
                    .and_then(|t| t.gpu_energy_j)
                    .map(f64::to_bits)
            })
            .collect()
    };
    // No base: the recording needs an offset.
    let doc = trace_doc(None, false, true);
    let err = join(&doc, &opts(), Some(&rec)).unwrap_err();
    assert!(err.to_string().contains("--clock-offset-ms"), "{err}");
    let mut o = opts();
    o.clock_offset_ns = Some(BASE);
    let r = join(&doc, &o, Some(&rec)).unwrap();
    assert_eq!(
        r.alignment.as_ref().unwrap().source,
        AlignmentSource::ClockOffset
    );
    assert_eq!(energies(&r), energies(&truth));
    // A trace whose base is 3.25 ms behind the recording's clock, corrected by hand.
    let skewed = trace_doc(Some(BASE - 3_250_000), false, false);
    let off = join(&skewed, &opts(), Some(&rec)).unwrap();
    assert_ne!(energies(&off), energies(&truth));
    o.clock_offset_ns = Some(parse_offset_ms("3.25").unwrap());
    let fixed = join(&skewed, &o, Some(&rec)).unwrap();
    assert_eq!(energies(&fixed), energies(&truth));
    let a = fixed.alignment.as_ref().unwrap();
    assert_eq!(
        (a.offset_ns, a.base_time_ns, a.clock_offset_ms),
        (BASE, Some(BASE - 3_250_000), Some(NsDecimal(3_250_000)))
    );
}

#[test]
fn gpu_map_routes_devices() {
    let rec = recording(&recording_csv(0..151, &[]));
    let doc = trace_doc(Some(BASE), true, false);
    let mut o = opts();
    o.gpu_map = GpuMap::parse("0=1,1=0").unwrap();
    let r = join(&doc, &o, Some(&rec)).unwrap();
    assert_eq!(r.pauses[0].telemetry.as_ref().unwrap().gpu_index, 1);
    assert_eq!(r.pauses[2].telemetry.as_ref().unwrap().gpu_index, 0);
    assert_eq!(r.pause_devices[0].gpu_index, Some(1));
    // A device mapped to a GPU the recording lacks: no telemetry, a warning.
    o.gpu_map = GpuMap::parse("1=5").unwrap();
    let r = join(&doc, &o, Some(&rec)).unwrap();
    assert!(r.pauses[2].telemetry.is_none());
    assert!(r.join_warnings.iter().any(|w| w.contains("gpu_index 5")));
}

#[test]
fn reference_sampler_files_join() {
    // The reference sampler's ten columns: no gpu_index, one GPU.
    let mut csv = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n",
    );
    for k in 0..151 {
        let wall = BASE + GRID0_NS + k * STEP_NS;
        let (p, u) = power_at(0, k);
        csv.push_str(&format!(
            "{},{wall},SAMPLE,,{p}.0,{u},3,1410,40,\n",
            wall - MONO_SKEW
        ));
    }
    let rec = recording(&csv);
    let r = join(&trace_doc(Some(BASE), false, false), &opts(), Some(&rec)).unwrap();
    assert!(close(
        r.pauses[0]
            .telemetry
            .as_ref()
            .unwrap()
            .gpu_energy_j
            .unwrap(),
        72.56
    ));
    // Device 1 maps to gpu_index 1, which a one-GPU file lacks.
    assert!(r.pauses[2].telemetry.is_none());
}

#[test]
fn join_is_the_same_in_any_split() {
    let rec = recording(&recording_csv(0..151, &[]));
    let doc = trace_doc(Some(BASE), false, false);
    let whole = join(&doc, &opts(), Some(&rec)).unwrap();
    for_each_split(doc.as_bytes(), 4, 9, |chunks| {
        assert_eq!(join_chunks(chunks, &opts(), Some(&rec)).unwrap(), whole);
    });
}

#[test]
fn recording_errors() {
    let mut b = RecordingBuilder::new(RecordingOptions {
        max_readings: 10,
        ..RecordingOptions::default()
    });
    let csv = recording_csv(0..20, &[]);
    assert!(
        b.write(csv.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("more than 10 readings")
    );
    let b = RecordingBuilder::new(RecordingOptions::default());
    assert!(b.end().unwrap_err().to_string().contains("no SAMPLE row"));
    let _ = vec![0];
}

#[test]
fn extreme_times_saturate_instead_of_overflowing() {
    // A gap longer than i64 ns holds, whose end leaves the Unix range.
    let doc = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"kernel","name":"a","pid":0,"ts":-9000000000000000,"dur":1}},{{"ph":"X","cat":"kernel","name":"b","pid":0,"ts":9000000000000000,"dur":1}},{{"ph":"X","cat":"user_annotation","name":"u","pid":1,"ts":-9000000000000000,"dur":9200000000000000}},{{"ph":"X","cat":"cpu_op","name":"c","pid":1,"ts":-9000000000000000,"dur":9100000000000000}}],"baseTimeNanoseconds":{BASE}}}"#
    );
    let rec = recording(&recording_csv(0..10, &[]));
    let r = join(&doc, &opts(), Some(&rec)).unwrap();
    assert_eq!(r.pauses.len(), 1);
    assert_eq!(r.pauses[0].duration_ms, i64::MAX as f64 / 1e6);
    assert!(r.pauses[0].telemetry.is_none());
    // c is host activity; u, an annotation that covers only part of the gap, is context.
    let host: Vec<&str> = r.pauses[0].host.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(host, ["c"]);
    let ann = &r.pauses[0].overlapping_annotations;
    assert_eq!(ann[0].name, "u");
    let ae = r.annotation_energy.as_ref().unwrap();
    assert_eq!(ae[0].n, 1);
    // Its span converts (it ends before the range does); the pause does not: no telemetry.
    assert_eq!(ae[0].name, "u");
}

/// The summary (`trace --json`, page limits) of `doc` with the report of two full passes of
/// their own over it appended: what the session must give.
fn summary_and_passes(doc: &str, opts: &JoinOptions, rec: &Recording) -> String {
    use crate::Exactness;
    use crate::analyzer::{Analyzer, AnalyzerOptions, Kind};
    let report = join(doc, opts, Some(rec)).unwrap();
    let mut a = Analyzer::new(AnalyzerOptions {
        kind: Kind::Trace,
        limits: Exactness::Page,
        source: "t.json".into(),
        ..AnalyzerOptions::default()
    });
    a.write(doc.as_bytes()).unwrap();
    appended(&a.end().unwrap(), &report)
}

/// The oracle of [`summary_with_join_json`]: the summary's own JSON text with each of the join's
/// keys appended as its own pretty JSON, indented one level.
fn appended(summary_json: &str, r: &JoinReport) -> String {
    fn pretty<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_string_pretty(v).unwrap()
    }
    let body = summary_json.trim_end().strip_suffix('}').unwrap();
    let mut out = body.trim_end().to_string();
    let mut add = |key: &str, value: String| {
        out.push_str(&format!(",\n  \"{key}\": {}", value.replace('\n', "\n  ")));
    };
    add("alignment", pretty(&r.alignment));
    add("pause_devices", pretty(&r.pause_devices));
    add("pauses", pretty(&r.pauses));
    if let Some(a) = &r.annotation_energy {
        add("annotation_energy", pretty(a));
    }
    add("join_warnings", pretty(&r.join_warnings));
    if let Some(note) = r.gpu_energy_note {
        add("gpu_energy_note", pretty(&note));
    }
    out.push_str("\n}");
    out
}

/// The joined JSON from one `Serialize` is the summary's text with the join's keys appended,
/// with and without the mergeable section (on one line, before the join's keys).
#[test]
fn summary_with_join_json_is_the_summary_then_the_join() {
    use crate::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
    let rec = recording(&recording_csv(0..151, &[]));
    let doc = trace_doc(Some(BASE), false, true);
    let with = join(&doc, &opts(), Some(&rec)).unwrap();
    assert!(with.annotation_energy.is_some() && with.alignment.is_some());
    let without = join(&doc, &opts(), None).unwrap();
    assert!(without.annotation_energy.is_none());
    for mergeable in [false, true] {
        let mut a = Analyzer::new(AnalyzerOptions {
            kind: Kind::Trace,
            source: "t.json".into(),
            mergeable,
            ..AnalyzerOptions::default()
        });
        a.write(doc.as_bytes()).unwrap();
        let Analysis::Trace(summary) = a.finish().unwrap() else {
            panic!("not a trace")
        };
        for r in [&with, &without] {
            let got = summary_with_join_json(&summary, r);
            assert_eq!(got, appended(&summary.to_json(), r));
            assert_eq!(got.contains("\n  \"mergeable\": {\"version\":"), mergeable);
        }
    }
}

/// Runs a `TraceJoin` with `options`: the recording `csv`, then the trace in `chunks` as often
/// as the session asks. The result and how many times it read the trace.
fn run_session(options: &str, csv: &[u8], chunks: &[&[u8]]) -> (String, u32) {
    run_session_sliced(options, csv, chunks, None)
}

/// [`run_session`]; with `slice` (a chunk length), a read that names its
/// [`TraceJoin::wanted_ranges`] gets only those bytes of the document, in chunks of that length,
/// as the page's worker gives them from a plain `File`.
fn run_session_sliced(
    options: &str,
    csv: &[u8],
    chunks: &[&[u8]],
    slice: Option<usize>,
) -> (String, u32) {
    let mut j = TraceJoin::from_json(options).unwrap();
    assert_eq!(j.next_file(), Some(NextFile::Recording));
    for c in csv.chunks(1000) {
        j.write(c).unwrap();
    }
    j.end_file().unwrap();
    let mut reads = 0;
    while let Some(next) = j.next_file() {
        assert_eq!(next, NextFile::Trace);
        reads += 1;
        assert!(reads <= 3, "the trace is read at most three times");
        match (slice, j.wanted_ranges()) {
            (Some(len), Some(ranges)) => {
                let doc: Vec<u8> = chunks.concat();
                assert!(!ranges.is_empty());
                for (a, b) in ranges {
                    j.seek(a).unwrap();
                    for c in doc[a as usize..b as usize].chunks(len) {
                        j.write(c).unwrap();
                    }
                }
            }
            _ => {
                for c in chunks {
                    j.write(c).unwrap();
                }
            }
        }
        j.end_file().unwrap();
    }
    assert_eq!(j.trace_reads(), reads);
    (j.result_json().unwrap().into(), reads)
}

fn gz(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// `TraceJoin` (the page's driver) against the parts run by hand: the analyzer's summary with
/// the two passes' report appended; whole, byte by byte and in random splits, plain and gzip.
/// With pauses to list, the session reads the trace twice (the summary and the first pass on
/// one scan, then the second pass); without, once (the annotation spans replayed).
#[test]
fn trace_join_session_equals_the_passes_in_any_split() {
    let csv = recording_csv(0..151, &[]);
    let doc = trace_doc(Some(BASE), false, false);
    let rec = recording(&csv);
    let mut no_pause = opts();
    no_pause.gaps.min_gap_ns = 800_000_000;
    for (options, o, reads) in [
        (
            r#"{"source":"t.json","limits":"page","min_gap_ms":100}"#,
            opts(),
            2,
        ),
        (
            r#"{"source":"t.json","limits":"page","min_gap_ms":800}"#,
            no_pause,
            1,
        ),
    ] {
        let want = summary_and_passes(&doc, &o, &rec);
        assert!(want.contains("\"annotation_energy\": [\n    {"), "{want}");
        assert_eq!(want.contains("\"pauses\": []"), reads == 1, "{want}");
        for_each_split(doc.as_bytes(), 8, 41, |chunks| {
            assert_eq!(
                run_session(options, csv.as_bytes(), chunks),
                (want.clone(), reads)
            );
        });
        let (doc_gz, csv_gz) = (gz(&doc), gz(&csv));
        for_each_split(&doc_gz, 4, 42, |chunks| {
            assert_eq!(run_session(options, &csv_gz, chunks), (want.clone(), reads));
        });
    }
}

/// The recording's length given first (`recording_size_hint`, as the page gives its `File`'s
/// size) changes nothing in the result, for a plain recording (series reserved) and a gzip one
/// (the hint ignored), with a long recording whose reservation happens mid-file.
#[test]
fn trace_join_session_is_the_same_with_the_recording_length() {
    let csv = recording_csv(0..6000, &[]);
    assert!(
        csv.len() > 256 * 1024,
        "the reservation happens after 256 KiB"
    );
    let doc = trace_doc(Some(BASE), false, false);
    let options = r#"{"source":"t.json","limits":"page","min_gap_ms":100}"#;
    let (want, _) = run_session(options, csv.as_bytes(), &[doc.as_bytes()]);
    for rec in [csv.as_bytes().to_vec(), gz(&csv)] {
        for total in [rec.len() as u64, 1, 10 * rec.len() as u64] {
            let mut j = TraceJoin::from_json(options).unwrap();
            j.recording_size_hint(total);
            for c in rec.chunks(4096) {
                j.write(c).unwrap();
            }
            j.end_file().unwrap();
            while j.next_file().is_some() {
                j.write(doc.as_bytes()).unwrap();
                j.end_file().unwrap();
            }
            assert_eq!(j.result_json().unwrap(), want, "hint {total}");
        }
    }
}

/// Past the caps of the first pass's copy of the annotation spans (here its 4 MiB of names),
/// the session reads the trace a second time even without a pause to list, with the same result.
#[test]
fn trace_join_session_reads_again_past_the_annotation_copy() {
    use super::first_pass::MAX_KEPT_NAME_BYTES;
    let csv = recording_csv(0..151, &[]);
    let rec = recording(&csv);
    let name = "n".repeat(1000);
    let spans = MAX_KEPT_NAME_BYTES / name.len() + 1;
    let mut evs: Vec<String> = (0..spans)
        .map(|k| {
            format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":9,"tid":9,"ts":{},"dur":100}}"#,
                1_000_000 + k * 300
            )
        })
        .collect();
    evs.push(
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000000,"dur":1500000}"#.into(),
    );
    let doc = format!(
        r#"{{"traceEvents":[{}],"baseTimeNanoseconds":{BASE}}}"#,
        evs.join(",\n")
    );
    let want = summary_and_passes(&doc, &opts(), &rec);
    assert!(want.contains("\"pauses\": []"));
    assert!(
        want.contains(&format!("\"n\": {spans},")),
        "every span is charged"
    );
    let options = r#"{"source":"t.json","limits":"page"}"#;
    assert_eq!(
        run_session(options, csv.as_bytes(), &[doc.as_bytes()]),
        (want.clone(), 2)
    );
    // One span fewer fits the copy: one read.
    let fewer = doc.replacen(&format!("{name}\""), "m\"", 1);
    let want = summary_and_passes(&fewer, &opts(), &rec);
    assert_eq!(
        run_session(options, csv.as_bytes(), &[fewer.as_bytes()]),
        (want, 1)
    );
}

/// `steps` steps of a training loop: a kernel on device 0 per step (1 ms every 2 ms), with a
/// pause of 150 + k ms after every 700th step k; a cpu_op and a runtime call per step, a step
/// annotation every 100 steps. `arrays`: the events split into that many `traceEvents` arrays
/// (the first holding `first` events); `bare`: a bare array instead of an object.
fn loop_doc(steps: usize, arrays: usize, first: usize, bare: bool) -> String {
    let mut evs = Vec::new();
    let mut t_us = 1_000_000i64;
    for k in 0..steps {
        if k > 0 && k % 700 == 0 {
            t_us += 150_000 + k as i64;
        }
        evs.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":{t_us},"dur":1000}}"#
        ));
        evs.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":9,"tid":9,"ts":{},"dur":{}}}"#,
            t_us - 500,
            400 + k % 7
        ));
        evs.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":9,"ts":{},"dur":5}}"#,
            t_us - 50
        ));
        if k % 100 == 0 {
            evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":9,"tid":9,"ts":{},"dur":150000}}"#,
                k / 100,
                t_us - 600
            ));
        }
        t_us += 2_000;
    }
    if bare {
        return format!("[\n{}\n]", evs.join(",\n"));
    }
    let mut parts = Vec::new();
    let mut rest = &evs[..];
    for a in 0..arrays {
        let n = if a == 0 && arrays > 1 {
            first
        } else {
            rest.len().div_ceil(arrays - a)
        };
        let (head, tail) = rest.split_at(n.min(rest.len()));
        parts.push(format!(r#""traceEvents":[{}]"#, head.join(",\n")));
        rest = tail;
    }
    format!(
        r#"{{"schemaVersion":1,{},"baseTimeNanoseconds":{}}}"#,
        parts.join(","),
        BASE - 1_000_000_000 + 1_000_000_000
    )
}

/// With pauses to list in a trace of many byte ranges, the session's second read scans only
/// the ranges whose host events meet a listed pause and replays the others' annotation spans:
/// the same bytes as two full passes, in random splits, plain and gzip, for an object and a
/// bare array, with every pause listed or only the longest.
#[test]
fn trace_join_session_reads_only_the_ranges_around_listed_pauses() {
    let csv = recording_csv(0..151, &[]);
    let rec = recording(&csv);
    for (doc, top, bare) in [
        (loop_doc(3000, 1, 0, false), 50, false),
        (loop_doc(3000, 1, 0, false), 1, false),
        (loop_doc(3000, 1, 0, true), 2, true),
    ] {
        let mut o = opts();
        o.pauses.max_pauses_per_device = top;
        // A bare array has no baseTimeNanoseconds: the same clock by hand.
        o.clock_offset_ns = bare.then_some(BASE);
        let offset = if bare {
            r#","clock_offset_ms":"1764000000000""#
        } else {
            ""
        };
        let want = summary_and_passes(&doc, &o, &rec);
        let r: serde_json::Value = serde_json::from_str(&want).unwrap();
        assert_eq!(r["pauses"].as_array().unwrap().len(), top.min(4), "{want}");
        assert_eq!(r["pauses"][0]["duration_ms"], 153.8);
        assert!(
            serde_json::to_string(&r["pauses"][0]["host"])
                .unwrap()
                .contains("aten::mm")
        );
        assert!(r["annotation_energy"][0]["gpu_energy_j"].as_f64().unwrap() > 0.0);
        let options =
            format!(r#"{{"source":"t.json","limits":"page","top_pauses":{top}{offset}}}"#);
        for_each_split(doc.as_bytes(), 3, 43, |chunks| {
            assert_eq!(
                run_session(&options, csv.as_bytes(), chunks),
                (want.clone(), 2)
            );
        });
        // Only the wanted byte ranges of the plain document, in chunks of a few lengths.
        for len in [1, 7, 4096] {
            let got = run_session_sliced(&options, csv.as_bytes(), &[doc.as_bytes()], Some(len));
            assert_eq!(got, (want.clone(), 2), "chunks of {len}");
        }
        let doc_gz = gz(&doc);
        for_each_split(&doc_gz, 2, 44, |chunks| {
            assert_eq!(
                run_session(&options, csv.as_bytes(), chunks),
                (want.clone(), 2)
            );
        });
    }
}

/// The wanted ranges are only for a plain trace's planned read, before its first byte; a caller
/// that skips bytes a range needs gets an error, not a wrong result.
#[test]
fn trace_join_session_wanted_ranges_are_checked() {
    let csv = recording_csv(0..151, &[]);
    let doc = loop_doc(3000, 1, 0, false);
    let start = |doc: &[u8]| {
        let mut j = TraceJoin::from_json(r#"{"source":"t.json","limits":"page"}"#).unwrap();
        j.write(csv.as_bytes()).unwrap();
        j.end_file().unwrap();
        assert!(j.wanted_ranges().is_none(), "the first read is whole");
        j.write(doc).unwrap();
        j.end_file().unwrap();
        j
    };
    let mut first = TraceJoin::from_json(r#"{"source":"t.json","limits":"page"}"#).unwrap();
    first.write(csv.as_bytes()).unwrap();
    first.end_file().unwrap();
    assert!(first.seek(10).is_err(), "no seek in the first read");
    let j = start(doc.as_bytes());
    let ranges = j.wanted_ranges().unwrap();
    assert_eq!(ranges.len(), 4, "{ranges:?}");
    let total: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    assert!(
        total * 4 < doc.len() as u64,
        "{total} of {} bytes",
        doc.len()
    );
    // Skipping into the first range: an error that names the byte.
    let mut j = start(doc.as_bytes());
    let (a, b) = ranges[0];
    j.seek(a + 1).unwrap();
    let e = j
        .write(&doc.as_bytes()[a as usize + 1..b as usize])
        .unwrap_err();
    assert!(
        matches!(e, JoinError::BytesNotGiven { at_byte } if at_byte == a),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains(&format!("bytes from {a} on were not given")),
        "{e}"
    );
    // A gzip trace shorter than the restart points' spacing: the whole file.
    let mut j = start(&gz(&doc));
    assert!(j.wanted_ranges().is_none());
    assert!(j.seek(0).is_err());
}

/// A gzip trace given as stored (the page) with restart points kept on its first read: the
/// second read gets only the stored bytes from the point before each wanted range to the point
/// after it, with the same result as the plain trace read twice whole; seeks elsewhere fail.
#[test]
fn trace_join_session_reads_stored_gzip_ranges_from_restart_points() {
    let csv = recording_csv(0..151, &[]);
    // ~14 MB: a restart point per MiB of decoded trace.
    let doc = loop_doc(42_000, 1, 0, false);
    let doc_gz = gz(&doc);
    let options = r#"{"source":"t.json","limits":"page","top_pauses":2}"#;
    let (want, reads) = run_session(options, csv.as_bytes(), &[doc.as_bytes()]);
    assert_eq!(reads, 2);
    let r: serde_json::Value = serde_json::from_str(&want).unwrap();
    assert_eq!(r["pauses"].as_array().unwrap().len(), 2, "{want}");
    let start = || {
        let mut j = TraceJoin::from_json(options).unwrap();
        j.write(csv.as_bytes()).unwrap();
        j.end_file().unwrap();
        for c in doc_gz.chunks(100_000) {
            j.write(c).unwrap();
        }
        j.end_file().unwrap();
        j
    };
    let ranges = start()
        .wanted_ranges()
        .expect("stored ranges from restart points");
    let stored: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    assert!(
        stored * 2 < doc_gz.len() as u64,
        "{stored} of {} stored bytes read again: {ranges:?}",
        doc_gz.len()
    );
    for len in [1000, 65_536] {
        let got = run_session_sliced(options, csv.as_bytes(), &[&doc_gz], Some(len));
        assert_eq!(got, (want.clone(), 2), "chunks of {len}");
    }
    // Given whole instead, as a driver that ignores the ranges: the same.
    assert_eq!(run_session(options, csv.as_bytes(), &[&doc_gz]), (want, 2));
    // A seek that is not a read's start is refused.
    let mut j = start();
    assert!(j.seek(ranges[0].0 + 1).is_err());
}

/// A range that cannot be resumed (it starts right after the last event of a first
/// `traceEvents` array, which a second one follows): the session reads the trace a third time,
/// whole, with the same result.
#[test]
fn trace_join_session_reads_all_again_where_a_range_cannot_resume() {
    use super::first_pass::RANGE_EVENTS;
    let csv = recording_csv(0..151, &[]);
    let rec = recording(&csv);
    // Step 700 (the first pause) begins at event 2107: the range from event 2048 on, right
    // after the first array's last event, meets it.
    let doc = loop_doc(3000, 2, 4 * RANGE_EVENTS as usize, false);
    let want = summary_and_passes(&doc, &opts(), &rec);
    assert!(want.contains("\"duration_ms\": 153.8"), "{want}");
    let options = r#"{"source":"t.json","limits":"page"}"#;
    let sliced = run_session_sliced(options, csv.as_bytes(), &[doc.as_bytes()], Some(999));
    assert_eq!(sliced, (want.clone(), 3));
    for_each_split(doc.as_bytes(), 3, 45, |chunks| {
        assert_eq!(
            run_session(options, csv.as_bytes(), chunks),
            (want.clone(), 3)
        );
    });
}

/// The sidecar's power source (the CLI's rule, [`crate::sidecar::power_source`]) reaches the
/// verdicts' evidence through `power_source`, as native's `--telemetry` gives it.
#[test]
fn trace_join_session_takes_the_sidecars_power_source() {
    let csv = recording_csv(0..151, &[]);
    let doc = trace_doc(Some(BASE), false, false);
    let run = |options: &str| run_session(options, csv.as_bytes(), &[doc.as_bytes()]).0;
    let sidecar = br#"{"gpus":[{"index":0,"gpu_power_w_source":"instant"}]}"#;
    let source = crate::sidecar::power_source(sidecar).unwrap();
    let options = format!(
        r#"{{"source":"t.json","limits":"page","power_source":{}}}"#,
        serde_json::to_string(&source).unwrap()
    );
    let with_sidecar = run(&options);
    let mut b = RecordingBuilder::new(RecordingOptions {
        power_source: PowerSource::Instant,
        ..RecordingOptions::default()
    });
    b.write(csv.as_bytes()).unwrap();
    assert_eq!(
        with_sidecar,
        summary_and_passes(&doc, &opts(), &b.end().unwrap())
    );
    assert!(with_sidecar.contains("instantaneous power (NVML field 186)"));
    assert_ne!(with_sidecar, run(r#"{"source":"t.json","limits":"page"}"#));
    assert!(TraceJoin::from_json(r#"{"power_source":"fast"}"#).is_err());
}

#[test]
fn trace_join_session_errors_and_timeline() {
    let csv = recording_csv(0..151, &[]);
    // No base and no offset: the CLI's error, and the join stays failed.
    let mut j = TraceJoin::from_json("{}").unwrap();
    j.write(csv.as_bytes()).unwrap();
    j.end_file().unwrap();
    j.write(trace_doc(None, false, false).as_bytes()).unwrap();
    let e = j.end_file().unwrap_err();
    assert!(
        matches!(e, JoinError::Alignment(AlignmentError::NoBase)),
        "{e:?}"
    );
    assert!(e.to_string().contains("--clock-offset-ms"), "{e}");
    assert_eq!(j.next_file(), None);
    assert_eq!(j.write(b" ").unwrap_err().to_string(), e.to_string());
    assert!(TraceJoin::from_json(r#"{"min_gap_ms":-1}"#).is_err());
    assert!(TraceJoin::from_json(r#"{"gpu_map":"0=x"}"#).is_err());
    assert!(TraceJoin::from_json(r#"{"nope":1}"#).is_err());

    // The timeline: each device's busy span and pauses, and the power on the same axis.
    let mut j = TraceJoin::from_json(r#"{"clock_offset_ms":"1764000000000"}"#).unwrap();
    j.write(csv.as_bytes()).unwrap();
    j.end_file().unwrap();
    let doc = trace_doc(None, false, false);
    while j.next_file().is_some() {
        j.write(doc.as_bytes()).unwrap();
        j.end_file().unwrap();
    }
    let r = j.report().unwrap();
    let rec = recording(&csv);
    let t = Timeline::new(r, &rec, 151).unwrap();
    // The trace spans 0.8 s..3.0 s of ts (the recording 1.0 s..2.5 s).
    assert_eq!((t.t0_us, t.t1_us), (800_000.0, 3_000_000.0));
    // A recording an hour later: the axis stays the trace's, with no power on it.
    let mut later = RecordingBuilder::new(RecordingOptions::default());
    let shifted: String = csv
        .lines()
        .map(|l| {
            let mut f: Vec<String> = l.split(',').map(String::from).collect();
            if let Ok(w) = f[1].parse::<i64>() {
                f[1] = format!("{}", w + 3_600_000_000_000);
            }
            f.join(",") + "\n"
        })
        .collect();
    later.write(shifted.as_bytes()).unwrap();
    let later = later.end().unwrap();
    let t2 = Timeline::new(r, &later, 151).unwrap();
    assert_eq!((t2.t0_us, t2.t1_us), (800_000.0, 3_000_000.0));
    assert!(t2.gpus.iter().all(|g| g.power.is_empty()));
    let d0 = t.devices.iter().find(|d| d.device == 0).unwrap();
    assert_eq!(
        d0.pauses_us,
        vec![[1_700_000.5, 2_424_000.5], [1_200_000.5, 1_500_000.5]]
    );
    let g0 = &t.gpus[0];
    assert_eq!(g0.gpu_index, 0);
    assert_eq!(g0.max_w, 300.0);
    // Every reading lands in a bucket: 151 readings over 151 buckets of the 2.2 s axis.
    assert!(g0.power.iter().all(|p| p[1] <= p[2]));
    let inside = |t: f64| {
        g0.power
            .iter()
            .filter(move |p| (p[0] - t).abs() < 7_500.0)
            .map(|p| p[2])
    };
    assert_eq!(inside(2_000_000.0).fold(0.0, f64::max), 100.0);
    assert_eq!(inside(1_100_000.0).fold(0.0, f64::max), 300.0);
    assert!(
        j.timeline_json(100)
            .unwrap()
            .starts_with("{\"t0_us\":800000.0")
    );
}

#[test]
fn round_positive_is_round() {
    for x in [
        0.0,
        0.4,
        0.5,
        0.49999999999999994,
        1.5,
        2.5,
        99.999_999_5e6,
        1e17 + 0.5,
        4.5e15 + 1.0,
    ] {
        assert_eq!(super::options::round_positive(x), x.round(), "{x}");
    }
}
