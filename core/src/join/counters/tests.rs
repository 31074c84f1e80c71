//! The trace's counters against exact arithmetic and against the same samples as a trace.csv
//! recording, through the trace job, in random chunk splits.
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::*;
use crate::Limits;
use crate::job::{Job, Need};
use crate::join::TraceJoin;
use crate::join::{GapOptions, JoinOptions, JoinReport, PauseOptions, RecordingOptions};
use crate::json::{EventScanner, Scan};
use crate::testutil::for_each_split;
use crate::trace_job::{JoinSetup, RecordingSource, TraceJob, TraceJobOptions};

const BASE: i64 = 1_764_000_000_000_000_000;
/// Counter samples every 10 ms from 0.8 s to 2.7 s: before and after the profiled span
/// (kernels from 1.0 s to 2.5 s).
const STEP_NS: i64 = 10_000_000;
const GRID0_NS: i64 = 800_000_000;
const SAMPLES: i64 = 191;

/// Busy kernels per device, trace ns `[start, end)`: device 0 pauses 1.2005-1.5005 s and
/// 1.7005-2.4245 s (off the sample grid, so the edges interpolate), device 1 at 2.0-2.3 s.
const KERNELS: [(i64, i64, i64); 5] = [
    (0, 1_000_000_000, 1_200_000_500),
    (0, 1_500_000_500, 1_700_000_500),
    (0, 2_424_500_000, 2_500_000_000),
    (1, 1_000_000_000, 2_000_000_000),
    (1, 2_300_000_000, 2_500_000_000),
];

/// Power (W) and SM activity (%) of `device` at sample `k`: low in its pauses.
fn sample(device: i64, k: i64) -> (i64, f64, f64) {
    let t = GRID0_NS + k * STEP_NS;
    let busy = KERNELS
        .iter()
        .any(|&(d, a, b)| d == device && a <= t && t < b);
    let (hi, lo) = if device == 0 {
        (300.5, 100.25)
    } else {
        (250.0, 50.0)
    };
    if busy { (t, hi, 90.0) } else { (t, lo, 0.0) }
}

/// µs text of trace ns, exact (three decimals).
fn us(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Samples written out of order: these `k` come right after `k + 1`.
const SWAPPED: [i64; 3] = [20, 77, 150];

/// The trace as PyTorch writes it: counters on `"GPU <N> Counters"` with the value under `""`,
/// interleaved with kernels in time order, a few samples swapped, bad samples and counters the
/// join does not read.
fn pytorch_trace() -> String {
    let mut evs: Vec<(i64, String)> = Vec::new();
    for &(d, a, b) in &KERNELS {
        evs.push((
            a,
            format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{d}","pid":{d},"tid":7,"ts":{},"dur":{},"args":{{"grid":[1,1,1],"":1}}}}"#,
                us(a),
                us(b - a)
            ),
        ));
    }
    evs.push((
        900_000_000,
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":{},"dur":{}}}"#,
            us(900_000_000),
            us(1_700_000_000)
        ),
    ));
    for device in 0..2 {
        evs.push((
            0,
            format!(
                r#"{{"ph":"M","name":"process_sort_index","pid":"GPU {device} Counters","args":{{"sort_index":{device}}}}}"#
            ),
        ));
        for k in 0..SAMPLES {
            let (t, p, u) = sample(device, k);
            // A swapped sample sorts just after its successor.
            let key = if SWAPPED.contains(&k) && device == 0 {
                t + STEP_NS + 1
            } else {
                t
            };
            evs.push((
                key,
                format!(
                    r#"{{"ph":"C","name":"Power (W)","pid":"GPU {device} Counters","tid":0,"ts":{},"args":{{"":{p}}}}}"#,
                    us(t)
                ),
            ));
            evs.push((
                key,
                format!(
                    r#"{{"name":"SM Active (%)","ph":"C","pid":"GPU {device} Counters","ts":{},"args":{{"":{u}}}}}"#,
                    us(t)
                ),
            ));
            evs.push((
                key,
                format!(
                    r#"{{"ph":"C","name":"Temperature (C)","pid":"GPU {device} Counters","ts":{},"args":{{"":60}}}}"#,
                    us(t)
                ),
            ));
        }
    }
    // Bad samples: counted, never used.
    for (pid, v) in [
        ("GPU 0 Counters", "NaN"),
        ("GPU 0 Counters", "\"212\""),
        ("GPU 999 Counters", "100"),
        ("gpu0", "100"),
    ] {
        evs.push((
            1_600_000_000,
            format!(r#"{{"ph":"C","name":"Power (W)","pid":"{pid}","ts":1600000.250,"args":{{"":{v}}}}}"#),
        ));
    }
    evs.sort_by_key(|e| e.0);
    let body: Vec<String> = evs.into_iter().map(|e| e.1).collect();
    format!(
        "{{\"schemaVersion\":1,\"traceEvents\":[\n{}\n],\"baseTimeNanoseconds\":{BASE}}}",
        body.join(",\n")
    )
}

/// The same samples as a flinch-trace recording (trace.csv).
fn recording_csv(scale: f64) -> String {
    let mut s =
        String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_index\n");
    for k in 0..SAMPLES {
        for device in 0..2 {
            let (t, p, u) = sample(device, k);
            let wall = BASE + t;
            s.push_str(&format!(
                "{},{wall},SAMPLE,,{},{u},{device}\n",
                wall - 5_000,
                p * scale
            ));
        }
    }
    s
}

/// Exact edge-interpolated energy of `device` over trace ns `[t0, t1]`: a rational in
/// quarter-watts, rounded once.
fn exact_energy_j(device: i64, t0: i64, t1: i64) -> f64 {
    let l = i128::from(STEP_NS);
    let mut num: i128 = 0;
    for k in 0..SAMPLES - 1 {
        let (a, pa, _) = sample(device, k);
        let (b, pb, _) = sample(device, k + 1);
        let (lo, hi) = (a.max(t0), b.min(t1));
        if hi <= lo {
            continue;
        }
        // Quarter watts are integers.
        let (pa, pb) = ((pa * 4.0) as i128, (pb * 4.0) as i128);
        let (lo, hi, a) = (i128::from(lo), i128::from(hi), i128::from(a));
        num += 2 * l * pa * (hi - lo) + (pb - pa) * ((hi - a).pow(2) - (lo - a).pow(2));
    }
    num as f64 / (8.0 * l as f64 * 1e9)
}

fn options(recording: bool) -> TraceJobOptions {
    let join = JoinOptions {
        gaps: GapOptions {
            min_gap_ns: 100_000_000,
            ..GapOptions::default()
        },
        pauses: PauseOptions::default(),
        ..JoinOptions::default()
    };
    TraceJobOptions {
        source: "t.json".into(),
        limits: Limits::NATIVE,
        top: 10,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: Some(JoinSetup::new(
            join,
            if recording {
                RecordingSource::Read(RecordingOptions::default())
            } else {
                RecordingSource::None
            },
        )),
    }
}

/// The job over the trace in `chunks` (and the recording, if any), as a driver answers it.
fn run(chunks: &[&[u8]], csv: Option<&str>) -> JoinReport {
    run_reads(chunks, csv).0
}

/// [`run`], with the bytes of the trace read in all.
fn run_reads(chunks: &[&[u8]], csv: Option<&str>) -> (JoinReport, u64) {
    run_with(options(csv.is_some()), chunks, csv)
}

/// [`run_reads`] with these options.
fn run_with(o: TraceJobOptions, chunks: &[&[u8]], csv: Option<&str>) -> (JoinReport, u64) {
    let mut read = 0u64;
    let mut job = TraceJob::new(o);
    let doc: Vec<u8> = chunks.concat();
    loop {
        match job.need() {
            Need::File(name) if name == crate::trace_job::RECORDING => {
                for c in csv.unwrap().as_bytes().chunks(1000) {
                    job.write(c).unwrap();
                }
            }
            Need::File(_) => {
                for c in chunks {
                    job.write(c).unwrap();
                    read += c.len() as u64;
                }
            }
            Need::Ranges(r) => {
                let r = r.to_vec();
                for (a, b) in r {
                    job.seek(a).unwrap();
                    job.write(&doc[a as usize..b as usize]).unwrap();
                    read += b - a;
                }
            }
            Need::Done => break,
            Need::Listing(_) => unreachable!(),
        }
        job.end().unwrap();
    }
    (job.finish().unwrap().join.unwrap(), read)
}

fn energies(r: &JoinReport) -> Vec<(i64, u64)> {
    r.pauses
        .iter()
        .map(|p| {
            let t = p.telemetry.as_ref().expect("telemetry");
            (p.device, t.gpu_energy_j.unwrap().to_bits())
        })
        .collect()
}

#[test]
fn the_scanners_pid_hash_is_the_tables() {
    let doc = br#"[{"ph":"C","name":"Power (W)","pid":"GPU 3 Counters","ts":1,"args":{"":2}},
{"ph":"C","name":"GPU 2 util","pid":5,"ts":1,"args":{"%":40}},
{"ph":"C","name":"GPU 2 SM clock","pid":5,"ts":1,"args":{"MHz":1400}},
{"ph":"X","name":"Power (W)","pid":"GPU 3 Counters","ts":1}]"#;
    let mut sc = EventScanner::new(Limits::NATIVE);
    let mut got = Vec::new();
    let mut pos = 0;
    while let (Scan::Event, n) = sc.scan(&doc[pos..]).unwrap() {
        pos += n;
        got.push(counter_sample(&sc.event()));
    }
    assert_eq!(
        got,
        [
            Some(CounterSample {
                origin: Origin::PyTorch,
                metric: Metric::Power,
                device: Some(3),
                ts_ns: NumField::Ns(1000),
                value: ArgValue::Number(2.0),
            }),
            Some(CounterSample {
                origin: Origin::Flinch { gpu_index: 2 },
                metric: Metric::Util,
                device: Some(5),
                ts_ns: NumField::Ns(1000),
                value: ArgValue::Number(40.0),
            }),
            None,
            None,
        ]
    );
}

/// Energies per pause from the trace's own counters: the exact arithmetic's, and to the bit
/// those of the same samples given as a recording, with the same verdicts and annotation
/// energy; the counts of bad samples and the device mapping stated; in any split.
#[test]
fn counters_give_the_recordings_energies_in_any_split() {
    let doc = pytorch_trace();
    let csv = recording_csv(1.0);
    let want = run(&[doc.as_bytes()], Some(&csv));
    assert_eq!(want.power_source, Some("telemetry"));
    let mut splits = 0;
    for_each_split(doc.as_bytes(), 6, 24, |chunks| {
        splits += 1;
        let r = run(chunks, None);
        assert_eq!(r.power_source, Some("trace_counters"));
        assert_eq!(energies(&r), energies(&want));
        for (a, b) in r.pauses.iter().zip(&want.pauses) {
            let (ta, tb) = (a.telemetry.as_ref().unwrap(), b.telemetry.as_ref().unwrap());
            assert_eq!(ta.verdict, tb.verdict);
            assert_eq!(ta.avg_util_pct, tb.avg_util_pct);
            let t0 = a.start_ts_us.0;
            let t1 = t0 + (a.duration_ms * 1e6).round() as i64;
            let exact = exact_energy_j(a.device, t0, t1);
            let got = ta.gpu_energy_j.unwrap();
            assert!((got - exact).abs() <= 1e-9 * exact, "{got} {exact}");
        }
        let ae = |r: &JoinReport| {
            r.annotation_energy
                .as_ref()
                .unwrap()
                .iter()
                .map(|a| (a.name.clone(), a.gpu_energy_j.map(f64::to_bits)))
                .collect::<Vec<_>>()
        };
        assert_eq!(ae(&r), ae(&want));
        let c = r.trace_counters.as_ref().unwrap();
        assert!(c.used);
        assert_eq!(c.devices.len(), 2);
        assert_eq!(c.devices[0].pid, CounterPid::Text("GPU 0 Counters".into()));
        assert_eq!(c.devices[1].device, 1);
        assert_eq!(c.devices[0].signals, ["power", "utilization"]);
        assert_eq!(c.devices[0].power_samples, SAMPLES as u64);
        assert_eq!(c.devices[0].first_ts_us, Some(NsDecimal(GRID0_NS)));
        assert_eq!(
            c.counts,
            CounterCounts {
                non_numeric_values: 1,
                non_finite_values: 1,
                without_device: 2,
                // Each swapped sample follows its successor, power and utilization both.
                out_of_order: 2 * SWAPPED.len() as u64,
                ..CounterCounts::default()
            }
        );
        assert!(
            r.join_warnings.iter().any(|w| w.contains(
                "2 of the trace's power/utilization counter samples have a pid that names no device"
            )),
            "{:?}",
            r.join_warnings
        );
    });
    assert!(splits > 2);
    // The counters standing in for the recording, the trace is read as with one: once whole,
    // then only the byte ranges around the listed pauses (the annotation spans copied).
    let doc_len = doc.len() as u64;
    let (_, with_rec) = run_reads(&[doc.as_bytes()], Some(&csv));
    let (_, alone) = run_reads(&[doc.as_bytes()], None);
    assert_eq!(alone, with_rec);
    assert!(
        alone < 2 * doc_len,
        "{alone} bytes read of a {doc_len}-byte trace"
    );
    // The pauses are those of the kernels: three, each with energy.
    assert_eq!(want.pauses.len(), 3);
}

/// With a recording too, the recording wins and the two are compared over each device's busy
/// span; a recording 1.5x the counters disagrees, with a warning.
#[test]
fn with_a_recording_the_recording_wins_and_is_compared() {
    let doc = pytorch_trace();
    let same = run(&[doc.as_bytes()], Some(&recording_csv(1.0)));
    let c = same.trace_counters.as_ref().unwrap();
    assert!(!c.used);
    assert_eq!(c.comparison.len(), 2);
    assert!(c.comparison.iter().all(|d| !d.disagree));
    assert_eq!(
        c.comparison[0].telemetry_avg_power_w.map(f64::to_bits),
        c.comparison[0].counters_avg_power_w.map(f64::to_bits)
    );
    let off = run(&[doc.as_bytes()], Some(&recording_csv(1.5)));
    let c = off.trace_counters.as_ref().unwrap();
    assert!(c.comparison.iter().all(|d| d.disagree));
    assert!(
        off.join_warnings
            .iter()
            .any(|w| w.contains("differ by more than 10% or 5 W")),
        "{:?}",
        off.join_warnings
    );
    // The pauses' energies are the recording's.
    assert_ne!(energies(&off), energies(&same));
}

#[test]
fn tolerance_is_ten_percent_or_five_watts() {
    // 10 % of the recording's average, or 5 W where that is more.
    assert!(!disagree(100.0, 110.0));
    assert!(disagree(100.0, 110.5));
    assert!(!disagree(30.0, 35.0));
    assert!(disagree(30.0, 35.5));
    assert!(disagree(300.0, 269.0));
}

/// Past the readings bound, every series keeps one reading in two, then one in four: bounded,
/// stated, every sample either kept or counted, and in time order.
#[test]
fn thinning_bounds_the_readings() {
    let mut c = TraceCounters::new(100);
    for k in 0..1000i64 {
        c.add(&CounterSample {
            origin: Origin::PyTorch,
            metric: if k % 2 == 0 {
                Metric::Power
            } else {
                Metric::Util
            },
            device: Some(0),
            ts_ns: NumField::Ns(k * 1000),
            value: ArgValue::Number(k as f64),
        });
        assert!(c.readings <= 100);
        assert_eq!(c.readings as u64 + c.counts.thinned_out, k as u64 + 1);
    }
    let f = c.finish(Alignment::new(Some(0), None), 5_000_000_000);
    let k = f.report.thinned_to_every.unwrap();
    assert!(k >= 8, "{k}");
    let rec = f.recording.unwrap();
    let p = rec.power_readings(rec.slot(0).unwrap());
    assert!(p.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(
        p.len() <= 100 && p.len() >= 500 / k as usize - 1,
        "{}",
        p.len()
    );
}

/// Without `baseTimeNanoseconds` (or an offset) the counters cannot line up and are not used:
/// the pauses have no telemetry, and a warning says why.
#[test]
fn counters_without_an_alignment_are_stated_not_used() {
    let doc = pytorch_trace().replace(&format!(",\"baseTimeNanoseconds\":{BASE}"), "");
    let r = run(&[doc.as_bytes()], None);
    assert_eq!(r.power_source, None);
    assert!(r.pauses.iter().all(|p| p.telemetry.is_none()));
    let c = r.trace_counters.as_ref().unwrap();
    assert!(!c.used);
    assert_eq!(c.devices.len(), 2);
    assert!(
        r.join_warnings
            .iter()
            .any(|w| w.contains("they give no figures: the trace has no baseTimeNanoseconds")),
        "{:?}",
        r.join_warnings
    );
}

/// flinch-trace's own counters name the recorded GPU and sit on the trace device's integer
/// `pid`; on a string `pid` they name no device.
#[test]
fn flinch_counters_map_pid_to_device() {
    let doc = format!(
        r#"{{"traceEvents":[
{{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":1000,"dur":100}},
{{"ph":"C","cat":"flinch_telemetry","name":"GPU 3 power","pid":1,"tid":0,"ts":1000.000,"args":{{"W":100}}}},
{{"ph":"C","cat":"flinch_telemetry","name":"GPU 3 power","pid":1,"tid":0,"ts":1500.000,"args":{{"W":300}}}},
{{"ph":"C","cat":"flinch_telemetry","name":"GPU 3 power","pid":"x","tid":0,"ts":1500.000,"args":{{"W":300}}}},
{{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":1400,"dur":100}}
],"baseTimeNanoseconds":{BASE}}}"#
    );
    let mut o = options(false);
    o.join.as_mut().unwrap().options.gaps.min_gap_ns = 1;
    let (r, _) = run_with(o, &[doc.as_bytes()], None);
    assert_eq!(r.power_source, Some("trace_counters"));
    let c = r.trace_counters.unwrap();
    assert_eq!(c.devices[0].pid, CounterPid::Int(1));
    assert_eq!(c.devices[0].recorded_gpu_index, Some(3));
    assert_eq!(c.devices[0].power_counter.as_deref(), Some("GPU 3 power"));
    assert_eq!(c.counts.without_device, 1);
    // The pause [1.1 ms, 1.4 ms) on a line from 100 W at 1.0 ms to 300 W at 1.5 ms:
    // 140 W to 260 W over 300 µs, 0.06 J.
    let t = r.pauses[0].telemetry.as_ref().unwrap();
    assert_eq!(t.gpu_index, 1);
    assert!(
        (t.gpu_energy_j.unwrap() - 0.06).abs() < 1e-15,
        "{:?}",
        t.gpu_energy_j
    );
}

/// The trace job fed `chunks` with these options, as a driver answers it: the whole result.
fn job_result(o: TraceJobOptions, chunks: &[&[u8]]) -> crate::trace_job::TraceJobResult {
    let doc: Vec<u8> = chunks.concat();
    let mut job = TraceJob::new(o);
    loop {
        match job.need() {
            Need::File(_) => chunks.iter().for_each(|c| job.write(c).unwrap()),
            Need::Ranges(r) => {
                let r = r.to_vec();
                for (a, b) in r {
                    job.seek(a).unwrap();
                    job.write(&doc[a as usize..b as usize]).unwrap();
                }
            }
            Need::Done => break,
            Need::Listing(_) => unreachable!(),
        }
        job.end().unwrap();
    }
    job.finish().unwrap()
}

/// The steps' options: a step every 250 ms from 1.0 s, besides `pytorch_trace`'s one.
fn with_steps(doc: &str) -> String {
    let steps: Vec<String> = (0..6)
        .map(|i| {
            format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":100,"tid":100,"ts":{},"dur":250000}}"#,
                i + 2,
                us(1_000_000_000 + i * 250_000_000)
            )
        })
        .collect();
    let at = doc.find("\n],").unwrap();
    format!("{},\n{}{}", &doc[..at], steps.join(",\n"), &doc[at..])
}

/// `--steps` alone: each step's energy from the trace's counters is the one `--steps --pauses`
/// gives (the same samples, the same devices charged), in any split, on both routes of the
/// job (bytes and the analyzer's summary read); the counters are named in `step_summary`.
#[test]
fn steps_alone_take_their_energy_from_the_counters() {
    let doc = with_steps(&pytorch_trace());
    let pattern = crate::steps::StepPattern::default();
    let joined = job_result(
        TraceJobOptions {
            steps: Some(pattern.clone()),
            ..options(false)
        },
        &[doc.as_bytes()],
    );
    let want = joined.steps.unwrap();
    assert_eq!(want.steps.len(), 7);
    assert_eq!(want.step_summary.power_source, Some("trace_counters"));
    let energy = |r: &crate::steps::StepsReport| -> Vec<_> {
        r.steps
            .iter()
            .map(|s| {
                let e = s.energy.as_ref().unwrap();
                (
                    e.gpu_energy_j.map(f64::to_bits),
                    e.energy_bound_j.map(f64::to_bits),
                    e.resolvable,
                    e.avg_power_w.map(f64::to_bits),
                    e.verdict,
                )
            })
            .collect()
    };
    // Both devices are busy in the trace, so both are charged: exact arithmetic.
    for s in &want.steps {
        let t1 = s.start_ts_us.0 + (s.duration_ms * 1e6).round() as i64;
        let exact = exact_energy_j(0, s.start_ts_us.0, t1) + exact_energy_j(1, s.start_ts_us.0, t1);
        let got = s.energy.as_ref().unwrap().gpu_energy_j.unwrap();
        assert!((got - exact).abs() <= 1e-9 * exact, "{got} {exact}");
    }
    let alone_options = TraceJobOptions {
        join: None,
        steps: Some(pattern),
        ..options(false)
    };
    for_each_split(doc.as_bytes(), 4, 31, |chunks| {
        let r = job_result(alone_options.clone(), chunks);
        assert!(r.join.is_none());
        let st = r.steps.unwrap();
        assert_eq!(energy(&st), energy(&want));
        assert_eq!(st.step_summary.gpu_energy_j, want.step_summary.gpu_energy_j);
        assert_eq!(st.step_summary.power_source, Some("trace_counters"));
        let c = st.step_summary.trace_counters.as_ref().unwrap();
        assert!(c.used);
        assert_eq!(c.devices[1].pid, CounterPid::Text("GPU 1 Counters".into()));
        assert_eq!(c.counts.without_device, 2);
        // The bad samples are stated, as the join states them.
        assert!(
            st.step_summary
                .warnings
                .iter()
                .any(|w| w.contains("have a pid that names no device")),
            "{:?}",
            st.step_summary.warnings
        );
        assert!(st.steps.iter().all(|s| s.energy.is_some()));
        // The analyzer (the page's trace alone) is the same read.
        let mut a = crate::analyzer::Analyzer::new(
            crate::analyzer::AnalyzerOptions::from_json(
                r#"{"kind":"trace","limits":"native","source":"t.json","top":10,"steps":true}"#,
            )
            .unwrap(),
        );
        chunks.iter().for_each(|c| a.write(c).unwrap());
        let (analysis, counters) = a.finish_noting_counters().unwrap();
        assert!(counters);
        let crate::analyzer::Analysis::TraceSteps(b) = analysis else {
            panic!("not steps")
        };
        assert_eq!(b.1, st);
    });
}

/// The page's trace alone (`trace_alone`): with counters, the JSON and the timeline of the join
/// with them (`trace --pauses [--steps]`), the timeline's power being theirs; without, the
/// trace's own result (`trace [--steps]`), as the analyzer gives it, and no timeline.
#[test]
fn a_trace_alone_is_joined_with_its_counters_only_when_it_has_them() {
    let doc = with_steps(&pytorch_trace());
    let bare = doc.replace(r#""ph":"C""#, r#""ph":"i""#);
    for steps in [false, true] {
        let o = TraceJobOptions {
            steps: steps.then(crate::steps::StepPattern::default),
            ..options(false)
        };
        let page = |text: &str, chunks: &[&[u8]]| {
            let mut j = TraceJoin::from_json(&format!(
                r#"{{"source":"t.json","limits":"native","top":10,"trace_alone":true,"steps":{steps}}}"#
            ))
            .unwrap();
            let doc = text.as_bytes();
            while let Some(next) = j.next_file() {
                assert_eq!(next, crate::join::NextFile::Trace);
                match j.wanted_ranges().filter(|_| j.trace_reads() > 0) {
                    Some(ranges) => {
                        for (a, b) in ranges {
                            j.seek(a).unwrap();
                            j.write(&doc[a as usize..b as usize]).unwrap();
                        }
                    }
                    None => chunks.iter().for_each(|c| j.write(c).unwrap()),
                }
                j.end_file().unwrap();
            }
            j
        };
        let want = job_result(o.clone(), &[doc.as_bytes()]);
        for_each_split(doc.as_bytes(), 2, 57 + steps as u64, |chunks| {
            let j = page(&doc, chunks);
            assert_eq!(j.result_json().unwrap(), want.to_json());
            let t: serde_json::Value =
                serde_json::from_str(&j.timeline_json(100).unwrap()).unwrap();
            assert_eq!(t["power_source"], "trace_counters");
            assert_eq!(t["gpus"].as_array().unwrap().len(), 2);
            assert!(!t["gpus"][0]["power"].as_array().unwrap().is_empty());
            assert_eq!(t["gpus"][0]["max_w"], 300.5);
        });
        for_each_split(bare.as_bytes(), 1, 61 + steps as u64, |chunks| {
            let j = page(&bare, chunks);
            let mut a = crate::analyzer::Analyzer::new(
                crate::analyzer::AnalyzerOptions::from_json(&format!(
                    r#"{{"kind":"trace","limits":"native","source":"t.json","top":10,"steps":{steps}}}"#
                ))
                .unwrap(),
            );
            a.write(bare.as_bytes()).unwrap();
            let (analysis, counters) = a.finish_noting_counters().unwrap();
            assert!(!counters);
            assert_eq!(j.result_json().unwrap(), analysis.to_json());
            assert!(j.report().is_none() && j.timeline_json(100).is_none());
        });
    }
}
