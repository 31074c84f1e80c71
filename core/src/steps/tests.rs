//! The steps against a naive oracle: per step, every elementary stretch between sorted
//! boundaries of the events inside it, owned by the highest-priority class of any event that
//! covers it, on generated GPU traces of known make-up, in shuffled file order.
use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use super::*;
use crate::Limits;
use crate::json::{Event, IdField, NumField};
use crate::testutil::Rng;

/// One generated complete event.
#[derive(Clone, Debug)]
pub(crate) struct Gen {
    pub(crate) cat: &'static str,
    pub(crate) name: String,
    pub(crate) ts_ns: i64,
    pub(crate) dur_ns: i64,
    pub(crate) tid: i64,
}

impl Gen {
    pub(crate) fn event(&self) -> Event<'_> {
        Event {
            ph: b"X",
            cat: Some(self.cat.as_bytes()),
            name: Some(self.name.as_bytes()),
            ts_ns: NumField::Ns(self.ts_ns),
            dur_ns: NumField::Ns(self.dur_ns),
            pid: IdField::Int(if self.cat == "kernel" || self.cat.starts_with("gpu_") {
                0
            } else {
                1
            }),
            tid: IdField::Int(self.tid),
            id: IdField::Missing,
            scope: IdField::Missing,
            quoted_times: 0,
            arg: crate::json::ArgValue::Missing,
        }
    }
}

/// A training-loop-like trace: `steps` steps of random length, each with kernels, copies,
/// sets and NCCL kernels on 4 streams overlapping, runtime calls, data loading and other host
/// ops, some stretches of nothing; a few nested and overlapping steps; events shuffled.
pub(crate) fn generate(rng: &mut Rng, steps: usize, grain_ns: i64) -> Vec<Gen> {
    let mut out = Vec::new();
    let mut t = 1_000_000 + rng.below(1000) as i64;
    let kinds: [(&str, &str); 10] = [
        ("kernel", "sgemm_128x64"),
        ("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float"),
        ("kernel", "ncclDevKernel_AllGather_RING_LL"),
        ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"),
        ("gpu_memset", "Memset (Device)"),
        ("cuda_runtime", "cudaLaunchKernel"),
        ("cuda_driver", "cuLaunchKernel"),
        (
            "cpu_op",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        ),
        ("cpu_op", "aten::mm"),
        // As PyTorch 2.15 records the data loader: an annotation that is not a step.
        (
            "user_annotation",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
        ),
    ];
    for s in 0..steps {
        let len = grain_ns * (20 + rng.below(80) as i64);
        out.push(Gen {
            cat: "user_annotation",
            name: format!("ProfilerStep#{}", s + 3),
            ts_ns: t,
            dur_ns: len,
            tid: 1,
        });
        for _ in 0..rng.below(40) {
            let (cat, name) = kinds[rng.below(kinds.len() as u64) as usize];
            // Some reach out of the step on either side.
            let a = t - grain_ns * 3 + rng.below((len + grain_ns * 6) as u64) as i64;
            let d = rng.below((grain_ns * 15) as u64) as i64;
            out.push(Gen {
                cat,
                name: name.into(),
                ts_ns: a,
                dur_ns: d,
                tid: 7 + rng.below(4) as i64,
            });
        }
        // Things of no class.
        out.push(Gen {
            cat: "python_function",
            name: "train.py(12): step".into(),
            ts_ns: t,
            dur_ns: len,
            tid: 1,
        });
        out.push(Gen {
            cat: "gpu_user_annotation",
            name: format!("ProfilerStep#{}", s + 3),
            ts_ns: t,
            dur_ns: len,
            tid: 7,
        });
        if rng.below(8) == 0 {
            // A nested step of another name, and one overlapping the next.
            out.push(Gen {
                cat: "user_annotation",
                name: format!("ProfilerStep#{}", 1000 + s),
                ts_ns: t + len / 3,
                dur_ns: len,
                tid: 1,
            });
        }
        t += len + rng.below((grain_ns * 30) as u64) as i64;
    }
    // File order is not time order.
    for i in (1..out.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        out.swap(i, j);
    }
    out
}

/// The oracle's parts of the step `[t0, t1)`.
pub(crate) fn oracle(events: &[Gen], t0: i64, t1: i64) -> [u64; PARTS] {
    let classed: Vec<(Part, i64, i64)> = events
        .iter()
        .filter(|e| e.dur_ns >= 0)
        .filter_map(|e| {
            class::class_of(e.cat.as_bytes(), e.name.as_bytes())
                .map(|c| (c, e.ts_ns, e.ts_ns + e.dur_ns))
        })
        .collect();
    let mut cuts: Vec<i64> = vec![t0, t1];
    for &(_, a, b) in &classed {
        for x in [a, b] {
            if x > t0 && x < t1 {
                cuts.push(x);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut parts = [0u64; PARTS];
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let owner = classed
            .iter()
            .filter(|&&(_, s, e)| s <= a && e >= b && e > s)
            .map(|&(c, _, _)| c)
            .min()
            .unwrap_or(Part::Other);
        parts[owner as usize] += (b - a) as u64;
    }
    parts
}

fn run(events: &[Gen], limits: &Limits, pattern: StepPattern) -> StepsFound {
    let mut c = StepCollector::new(pattern, limits);
    for e in events {
        c.add(&e.event());
    }
    c.finish()
}

#[test]
fn breakdown_equals_the_oracle_on_generated_gpu_traces() {
    let mut rng = Rng(23);
    for round in 0..30 {
        let events = generate(&mut rng, 1 + round % 9, 1000 + round as i64 * 37);
        let found = run(&events, &Limits::NATIVE, StepPattern::default());
        let want_steps: Vec<&Gen> = events
            .iter()
            .filter(|e| e.cat == "user_annotation" && e.name.starts_with("ProfilerStep#"))
            .collect();
        assert_eq!(found.steps.len(), want_steps.len());
        for s in &found.steps {
            let want = oracle(&events, s.ts_ns, s.ts_ns + s.dur_ns as i64);
            assert_eq!(s.parts_ns, want, "round {round} {}", s.name);
            assert_eq!(s.parts_ns.iter().sum::<u64>(), s.dur_ns);
            assert_eq!(s.index, pattern::name_index(s.name.as_bytes()).unwrap());
        }
        // Time order.
        assert!(found.steps.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        // Past a small budget, with a spill: runs merged back, the same parts.
        let tight = Limits {
            max_step_intervals: 4 + round,
            ..Limits::NATIVE
        };
        let mut c = StepCollector::new(StepPattern::default(), &tight);
        c.set_spill(alloc::boxed::Box::new(
            crate::summary::spill::MemorySpill::default(),
        ));
        for e in &events {
            c.add(&e.event());
        }
        let spilled = c.finish();
        assert_eq!(spilled.error_bound_ns, 0);
        let got: Vec<[u64; PARTS]> = spilled.steps.iter().map(|s| s.parts_ns).collect();
        let want: Vec<[u64; PARTS]> = found.steps.iter().map(|s| s.parts_ns).collect();
        assert_eq!(got, want, "round {round}");
    }
}

/// Every class shows up where the generator put only it, and an empty stretch is `other`.
#[test]
fn known_truth_per_step() {
    let g = |cat: &'static str, name: &str, ts_ns: i64, dur_ns: i64| Gen {
        cat,
        name: name.into(),
        ts_ns,
        dur_ns,
        tid: 1,
    };
    let events = vec![
        // Step 1 [0, 100): kernel 0..30 on one stream, NCCL 10..50 on another, memcpy 45..60
        // (which outranks NCCL: it takes 45..50 from it), so NCCL shows 30..45; runtime
        // 0..100 shows where the GPU is idle, 60..100.
        g("user_annotation", "ProfilerStep#1", 0, 100),
        g("kernel", "ncclDevKernel_Broadcast", 10, 40),
        g("kernel", "k", 0, 30),
        g("gpu_memcpy", "Memcpy DtoD", 45, 15),
        g("cuda_runtime", "cudaMemcpyAsync", 0, 100),
        // Step 2 [200, 300): dataloader 200..250, cpu_op 240..270, memset 290..295, nothing
        // else.
        g("user_annotation", "ProfilerStep#2", 200, 100),
        g("cpu_op", "enumerate(DataLoader)#x", 200, 50),
        g("cpu_op", "aten::add", 240, 30),
        g("gpu_memset", "Memset", 290, 5),
    ];
    let f = run(&events, &Limits::EXACT, StepPattern::default());
    assert_eq!(f.steps[0].parts_ns, [30, 15, 0, 15, 40, 0, 0, 0]);
    assert_eq!(f.steps[1].parts_ns, [0, 0, 5, 0, 0, 50, 20, 25]);
    // Oracle agrees.
    assert_eq!(oracle(&events, 0, 100), f.steps[0].parts_ns);
    assert_eq!(oracle(&events, 200, 300), f.steps[1].parts_ns);
}

/// A custom pattern; names without an index take their ordinal in time order.
#[test]
fn custom_patterns_and_ordinals() {
    let g = |name: &str, ts_ns: i64| Gen {
        cat: "user_annotation",
        name: name.into(),
        ts_ns,
        dur_ns: 10,
        tid: 1,
    };
    let events = vec![
        g("train_step", 50),
        g("train_step", 10),
        g("train_stepper", 30),
        g("other", 20),
    ];
    let f = run(
        &events,
        &Limits::EXACT,
        StepPattern::parse("train_step").unwrap(),
    );
    let got: Vec<(i64, u64)> = f.steps.iter().map(|s| (s.ts_ns, s.index)).collect();
    assert_eq!(got, [(10, 0), (50, 1)]);
    let f = run(
        &events,
        &Limits::EXACT,
        StepPattern::parse("train*").unwrap(),
    );
    let got: Vec<(i64, u64)> = f.steps.iter().map(|s| (s.ts_ns, s.index)).collect();
    assert_eq!(got, [(10, 0), (30, 1), (50, 2)]);
}

/// Past `max_step_intervals` the parts stay within the stated bound of the exact ones; past
/// `max_steps` steps are counted, not listed.
#[test]
fn past_the_limits_stated() {
    let mut rng = Rng(7);
    let events = generate(&mut rng, 40, 1000);
    let exact = run(&events, &Limits::EXACT, StepPattern::default());
    let tight = Limits {
        max_step_intervals: 8,
        max_steps: 10,
        max_step_host_ops: 5,
        ..Limits::NATIVE
    };
    let found = run(&events, &tight, StepPattern::default());
    assert!(found.error_bound_ns > 0);
    assert_eq!(found.steps.len(), 10);
    for s in &found.steps {
        let e = exact
            .steps
            .iter()
            .find(|x| x.ts_ns == s.ts_ns && x.name == s.name)
            .unwrap();
        for p in 0..PARTS {
            assert!(s.parts_ns[p].abs_diff(e.parts_ns[p]) <= found.error_bound_ns);
        }
        assert_eq!(s.parts_ns.iter().sum::<u64>(), s.dur_ns);
    }
    // With a spill the same budget is exact, the intervals past it written out as runs.
    let mut c = StepCollector::new(StepPattern::default(), &tight);
    c.set_spill(alloc::boxed::Box::new(
        crate::summary::spill::MemorySpill::default(),
    ));
    for e in &events {
        c.add(&e.event());
    }
    let spilled = c.finish();
    assert_eq!(spilled.error_bound_ns, 0);
    for s in &spilled.steps {
        let e = exact
            .steps
            .iter()
            .find(|x| x.ts_ns == s.ts_ns && x.name == s.name)
            .unwrap();
        assert_eq!(s.parts_ns, e.parts_ns);
    }
    let r = found.report(None);
    let a = r.step_summary.approximations.unwrap();
    assert!(a.breakdown_error_bound_ms > 0.0);
    // The host ops left out are said only where an outlier lists its top host ops.
    assert_eq!(
        a.top_host_ops_partial,
        !r.step_summary.outliers.is_empty(),
        "{:?} {:?}",
        r.step_summary.outliers.len(),
        r.step_summary.warnings
    );
    assert_eq!(
        r.step_summary.warnings.len(),
        1 + usize::from(a.top_host_ops_partial),
        "{:?}",
        r.step_summary.warnings
    );
}

/// The report: outliers with their largest part and top host ops, medians, no steps.
#[test]
fn report_names_the_slow_steps_and_why() {
    let mut events = Vec::new();
    let g = |cat: &'static str, name: &str, ts_ns: i64, dur_ns: i64| Gen {
        cat,
        name: name.into(),
        ts_ns,
        dur_ns,
        tid: 1,
    };
    let mut t = 0;
    for s in 0..22 {
        let slow = s == 8 || s == 16;
        let len = if slow {
            274_000_000
        } else {
            17_800_000 + s * 1000
        };
        events.push(g("user_annotation", &format!("ProfilerStep#{s}"), t, len));
        events.push(g("cpu_op", "aten::mm", t, 10_000_000));
        let load = if slow { 255_000_000 } else { 1_000_000 };
        events.push(g(
            "cpu_op",
            "enumerate(DataLoader)#_next",
            t + 10_000_000,
            load,
        ));
        t += len + 1000;
    }
    let r = run(&events, &Limits::NATIVE, StepPattern::default()).report(None);
    let o: Vec<u64> = r.step_summary.outliers.iter().map(|o| o.index).collect();
    assert_eq!(o, [8, 16]);
    let first = &r.step_summary.outliers[0];
    assert_eq!(first.largest_part, "dataloader");
    assert!((first.largest_part_excess_ms - 254.0).abs() < 1e-9);
    assert_eq!(first.top_host_ops[0].name, "enumerate(DataLoader)#_next");
    assert!(first.pauses.is_none());
    assert_eq!(r.steps.iter().filter(|s| s.outlier).count(), 2);
    assert_eq!(r.step_summary.n, 22);
    let m = r.step_summary.breakdown_ms_median.unwrap();
    assert!((m.dataloader - 1.0).abs() < 1e-12);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"start_ts_us\":0.0") || json.contains("\"start_ts_us\":0"));
    assert!(!json.contains("gpu_energy_j"));

    let none = run(
        &events,
        &Limits::NATIVE,
        StepPattern::parse("nope").unwrap(),
    )
    .report(None);
    assert!(none.steps.is_empty());
    assert!(none.step_summary.note.is_some());
    assert!(none.step_summary.duration_ms.is_none());
}

/// The trace document of `events` (times in µs with 3 decimals: exact to the ns).
pub(crate) fn document(events: &[Gen]) -> String {
    let us = |ns: i64| {
        format!(
            "{}{}.{:03}",
            if ns < 0 { "-" } else { "" },
            ns.abs() / 1000,
            ns.abs() % 1000
        )
    };
    let mut s = String::from("{\"traceEvents\": [\n");
    for (i, e) in events.iter().enumerate() {
        let pid = if e.cat == "kernel" || e.cat.starts_with("gpu_") {
            0
        } else {
            1
        };
        s.push_str(&format!(
            "{}{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {pid}, \"tid\": {}, \"ts\": {}, \"dur\": {}}}",
            if i == 0 { "" } else { ",\n" },
            e.cat,
            e.name,
            e.tid,
            us(e.ts_ns),
            us(e.dur_ns)
        ));
    }
    s.push_str("\n]}\n");
    s
}

/// The trace job gives the steps of the direct pass (checked against the oracle above) from
/// bytes in every split, and from batches of scanned events.
#[test]
fn the_job_gives_the_direct_pass_on_every_split_and_from_batches() {
    use crate::job::Job;
    use crate::json::{EventScanner, Scan};
    use crate::trace_job::{EventBatch, TraceJob, TraceJobOptions};
    let mut rng = Rng(99);
    let events = generate(&mut rng, 4, 1000);
    let doc = document(&events);
    let want =
        serde_json::to_string(&run(&events, &Limits::NATIVE, StepPattern::default()).report(None))
            .unwrap();
    let options = TraceJobOptions {
        source: "t".into(),
        limits: Limits::NATIVE,
        top: 5,
        durations_out: None,
        mergeable: false,
        join: None,
        steps: Some(StepPattern::default()),
    };
    crate::testutil::for_each_split(doc.as_bytes(), 6, 23, |chunks| {
        let mut job = TraceJob::new(options.clone());
        for c in chunks {
            job.write(c).unwrap();
        }
        job.end().unwrap();
        let r = job.finish().unwrap();
        assert_eq!(
            serde_json::to_string(r.steps.as_ref().unwrap()).unwrap(),
            want
        );
        let json = r.to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(v["totals"].is_object() && v["steps"].is_array() && v["step_summary"].is_object());
    });
    for per_batch in [1, 7, 2048] {
        let mut job = TraceJob::new(options.clone());
        let mut batch = EventBatch::new(Limits::NATIVE.max_string_bytes, false);
        let mut sc = EventScanner::new(Limits::NATIVE);
        let mut input = doc.as_bytes();
        loop {
            let (what, n) = sc.scan(input).unwrap();
            input = &input[n..];
            match what {
                Scan::Event => {
                    batch.push(&sc.event());
                    if batch.full() || batch_len(&batch) >= per_batch {
                        job.add_batch(&mut batch).unwrap();
                        batch.clear();
                    }
                }
                Scan::NeedsInput => break,
            }
        }
        job.add_batch(&mut batch).unwrap();
        let end = sc.finish();
        job.end_scanned(&end, sc.warnings(), sc.base_time())
            .unwrap();
        let r = job.finish().unwrap();
        assert_eq!(
            serde_json::to_string(r.steps.as_ref().unwrap()).unwrap(),
            want
        );
    }
}

fn batch_len(b: &crate::trace_job::EventBatch) -> usize {
    b.len()
}

/// With a recording: each step's energy is, to the bit, `analyze`'s `energy_edge_j` between
/// marks at the step's edges (one GPU, so the sum is that GPU's figure); the counter's update
/// period is measured (100 ms), a step shorter than it is not resolvable; a pause inside an
/// outlier step is listed with it.
#[test]
fn energy_equals_analyze_at_the_step_edges() {
    use crate::job::Job;
    use crate::join::{JoinOptions, RecordingOptions};
    use crate::trace_job::{JoinSetup, RecordingSource, TraceJob, TraceJobOptions};
    use crate::window::{WindowAnalyzer, WindowOptions, WindowSelect};
    const BASE: i64 = 1_764_000_000_000_000_000;
    // Steps (trace ns): 8 of 300 ms, one slow of 900 ms with a GPU pause, one of 40 ms.
    let mut steps: Vec<(i64, i64)> = Vec::new();
    let mut t = 1_000_000_000i64;
    for k in 0..10 {
        let len = match k {
            4 => 900_000_000,
            9 => 40_000_000,
            _ => 300_000_000,
        };
        steps.push((t, len));
        t += len + 1_000_000;
    }
    let mut events = Vec::new();
    for (k, &(s, len)) in steps.iter().enumerate() {
        events.push(Gen {
            cat: "user_annotation",
            name: format!("ProfilerStep#{k}"),
            ts_ns: s,
            dur_ns: len,
            tid: 1,
        });
        // Kernels fill the step but for a 600 ms pause in step 4.
        let busy = if k == 4 { len - 600_000_000 } else { len };
        events.push(Gen {
            cat: "kernel",
            name: "gemm".into(),
            ts_ns: s,
            dur_ns: busy,
            tid: 7,
        });
    }
    let doc = document(&events).replacen(
        "{\"traceEvents\"",
        &format!("{{\"baseTimeNanoseconds\": {BASE}, \"traceEvents\""),
        1,
    );
    // Power every 10 ms (varying), the energy counter moving every 100 ms; marks at the edges.
    let mut csv = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n",
    );
    let mut rows: Vec<(i64, String)> = Vec::new();
    for k in 0..450i64 {
        let wall = BASE + 900_000_000 + k * 10_000_000 + 3;
        let p = 100 + (k * 37) % 200;
        let mj = (k / 10) * 25_000;
        rows.push((wall, format!("{wall},{wall},SAMPLE,,{p},50,,,,,0,{mj}\n")));
    }
    for (k, &(s, len)) in steps.iter().enumerate() {
        for (at, what) in [(s, "start"), (s + len, "end")] {
            let wall = BASE + at;
            rows.push((wall, format!("{wall},{wall},MARK,s{k}_{what},,,,,,,,\n")));
        }
    }
    rows.sort_by_key(|r| r.0);
    for r in rows {
        csv.push_str(&r.1);
    }
    // The page's driver, with `"steps": true`, gives the same bytes.
    let mut page =
        crate::join::TraceJoin::from_json(r#"{"source": "t", "top": 5, "steps": true}"#).unwrap();
    for bytes in [&csv, &doc] {
        page.write(bytes.as_bytes()).unwrap();
        page.end_file().unwrap();
    }
    while page.next_file().is_some() {
        page.write(doc.as_bytes()).unwrap();
        page.end_file().unwrap();
    }
    let page_json = String::from(page.result_json().unwrap());
    assert!(crate::join::TraceJoin::from_json(r#"{"step_name": ""}"#).is_err());
    let mut job = TraceJob::new(TraceJobOptions {
        source: "t".into(),
        limits: Limits::NATIVE,
        top: 5,
        durations_out: None,
        mergeable: false,
        join: Some(JoinSetup::new(
            JoinOptions::default(),
            RecordingSource::Read(RecordingOptions::default()),
        )),
        steps: Some(StepPattern::default()),
    });
    job.write(csv.as_bytes()).unwrap();
    job.end().unwrap();
    while !matches!(job.need(), crate::job::Need::Done) {
        job.write(doc.as_bytes()).unwrap();
        job.end().unwrap();
    }
    let r = job.finish().unwrap();
    let st = r.steps.as_ref().unwrap();
    assert_eq!(st.steps.len(), 10);
    let periods = st.step_summary.update_periods.as_ref().unwrap();
    assert_eq!(periods[0].update_period_ms, Some(100.0));
    assert_eq!(periods[0].measured_on, "gpu_energy_mJ");
    for (k, s) in st.steps.iter().enumerate() {
        let mut wa = WindowAnalyzer::new(WindowOptions {
            select: Some(WindowSelect {
                start: format!("s{k}_start"),
                end: format!("s{k}_end"),
                occurrence: 1,
            }),
            ..WindowOptions::default()
        });
        wa.write(csv.as_bytes());
        let an = wa.end();
        let w = an.window.as_ref().expect("window");
        let want = w.gpus[0].energy_edge_j.unwrap();
        let e = s.energy.as_ref().unwrap();
        assert_eq!(
            e.gpu_energy_j.map(f64::to_bits),
            Some(want.to_bits()),
            "step {k}"
        );
        assert_eq!(e.resolvable, k != 9, "step {k}");
        // The bound: the peak power (at most 299 W) times two edge stretches of 100 ms.
        let b = e.energy_bound_j.unwrap();
        assert!(b > 0.0 && b <= 299.0 * 0.2 + 1e-9, "{b}");
        assert!(e.avg_power_w.is_some());
    }
    let o = &st.step_summary.outliers;
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].index, 4);
    assert_eq!(o[0].largest_part, "other");
    let pauses = o[0].pauses.as_ref().unwrap();
    assert_eq!(pauses.len(), 1);
    // The whole pause: to the next step's first kernel, 1 ms past this step.
    assert_eq!(pauses[0].duration_ms, 601.0);
    assert!(st.step_summary.gpu_energy_j.unwrap().is_some());
    let json = r.to_json();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["pauses"].is_array() && v["steps"][0]["gpu_energy_j"].is_number());
    assert_eq!(page_json, json);
}

/// The page's analyzer (a trace dropped alone) with `"steps": true` gives the bytes of the trace
/// job with the steps (`trace FILE --steps --json`), in every split.
#[test]
fn the_analyzer_gives_the_jobs_steps() {
    use crate::analyzer::{Analyzer, AnalyzerOptions};
    use crate::job::Job;
    use crate::trace_job::{TraceJob, TraceJobOptions};
    let mut rng = Rng(5);
    let doc = document(&generate(&mut rng, 3, 1000));
    let mut job = TraceJob::new(TraceJobOptions {
        source: "t.json".into(),
        limits: Limits::PAGE,
        top: 40,
        durations_out: None,
        mergeable: false,
        join: None,
        steps: Some(StepPattern::parse("ProfilerStep#*").unwrap()),
    });
    job.write(doc.as_bytes()).unwrap();
    job.end().unwrap();
    let want = job.finish().unwrap().to_json();
    assert!(want.contains("\"step_summary\""));
    crate::testutil::for_each_split(doc.as_bytes(), 4, 9, |chunks| {
        let options = AnalyzerOptions::from_json(
            r#"{"limits": "page", "source": "t.json", "step_name": "ProfilerStep#*"}"#,
        )
        .unwrap();
        let mut a = Analyzer::new(options);
        for c in chunks {
            a.write(c).unwrap();
        }
        assert_eq!(a.end().unwrap(), want);
    });
    let bad = AnalyzerOptions::from_json(r#"{"step_name": ""}"#).unwrap();
    let mut a = Analyzer::new(bad);
    assert!(a.write(doc.as_bytes()).is_err());
}
