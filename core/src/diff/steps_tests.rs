//! `diff --steps` over generated pairs with injected, known changes (a stall added to k steps,
//! an op made 2x slower, power raised by a known step, no change), against exact arithmetic on
//! the generated steps: the shift against every pairwise difference sorted, the parts against
//! the steps as generated; every input in random splits.
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::shift::critical_k;
use super::*;
use crate::job::{Job, Need};
use crate::testutil::{Rng, for_each_split};

/// The trace's clock: the Unix time of its 0.
const BASE_NS: u64 = 1_764_000_000_000_000_000;

/// One generated step: its start and its parts as generated (ns, whole µs).
#[derive(Clone, Debug)]
struct GenStep {
    ts_ns: u64,
    dataloader_ns: u64,
    cpu_ns: u64,
    kernel_ns: u64,
    other_ns: u64,
}

impl GenStep {
    fn dur_ns(&self) -> u64 {
        self.dataloader_ns + self.cpu_ns + self.kernel_ns + self.other_ns
    }
}

/// How run B differs from the baseline.
#[derive(Clone, Copy, Default)]
struct Change {
    /// The data loader stalls this long (ns) in these steps.
    stall: Option<(u64, &'static [u64])>,
    /// The `gemm` kernel's factor.
    slow: u64,
}

/// A training-like run of `n` steps: each the data loader, a host op, three `gemm` and three
/// `relu` kernels back to back, then an idle stretch; durations random in whole µs.
fn gen_run(seed: u64, n: u64, change: Change) -> (String, Vec<GenStep>) {
    let mut rng = Rng(seed);
    let slow = change.slow.max(1);
    let mut ev = String::new();
    let mut push = |cat: &str, name: &str, ts: u64, dur: u64| {
        let (pid, tid) = if cat == "kernel" { (0, 7) } else { (100, 100) };
        if !ev.is_empty() {
            ev.push_str(",\n");
        }
        ev.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}.{:03}, \"dur\": {}.{:03}}}",
            ts / 1000,
            ts % 1000,
            dur / 1000,
            dur % 1000
        ));
    };
    let mut steps = Vec::new();
    let mut t = 1_000_000_000u64;
    for k in 0..n {
        let mut dl = 1000 * (2_000 + rng.below(500));
        if let Some((extra, which)) = change.stall
            && which.contains(&k)
        {
            dl += extra;
        }
        let cpu = 1000 * (3_000 + rng.below(400));
        let start = t;
        push(
            "user_annotation",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            t,
            dl,
        );
        t += dl;
        push("cpu_op", "aten::linear", t, cpu);
        t += cpu;
        let mut kernel = 0;
        for _ in 0..3 {
            let g = 1000 * (4_000 + rng.below(300)) * slow;
            push("kernel", "gemm", t, g);
            t += g;
            let r = 1000 * (1_000 + rng.below(100));
            push("kernel", "relu", t, r);
            t += r;
            kernel += g + r;
        }
        let idle = 1000 * (500 + rng.below(200));
        t += idle;
        let s = GenStep {
            ts_ns: start,
            dataloader_ns: dl,
            cpu_ns: cpu,
            kernel_ns: kernel,
            other_ns: idle,
        };
        // The step's annotation is written after its ops, as Kineto does.
        push(
            "user_annotation",
            &format!("ProfilerStep#{k}"),
            start,
            s.dur_ns(),
        );
        steps.push(s);
        t += 1000 * rng.below(50);
    }
    let doc = format!(
        "{{\"schemaVersion\": 1, \"baseTimeNanoseconds\": {BASE_NS}, \"traceEvents\": [\n{ev}\n]}}\n"
    );
    (doc, steps)
}

/// A recording of constant GPU power `power_w` over `[0, end_ns)` of the trace's clock, a
/// reading every 10 ms.
fn recording(power_w: u64, end_ns: u64) -> String {
    let mut csv = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n",
    );
    let mut at = 0;
    while at <= end_ns + 20_000_000 {
        let wall = BASE_NS + at;
        csv.push_str(&format!("{wall},{wall},SAMPLE,,{power_w},50,,,,,0,\n"));
        at += 10_000_000;
    }
    csv
}

/// Drives a diff job: each file the job names from `files` (name, chunks).
fn drive(opts: DiffOptions, files: &[(&str, &[&[u8]])]) -> Result<DiffResult, DiffError> {
    let mut job = DiffJob::new(opts);
    loop {
        match job.need() {
            Need::File(name) => {
                let (_, chunks) = files.iter().find(|f| f.0 == name).expect("a file given");
                for c in *chunks {
                    job.write(c)?;
                }
                job.end()?;
            }
            Need::Ranges(_) => return Err(DiffError::Protocol("no ranges in these tests")),
            Need::Listing(_) => unreachable!(),
            Need::Done => break,
        }
    }
    job.finish()
}

fn opts_steps() -> DiffOptions {
    let mut o = DiffOptions::new("a.json".into(), "b.json".into());
    o.set_steps(true, None).unwrap();
    o
}

/// The naive oracle of the shift: every difference `b_j - a_i` sorted; the median of them and
/// the interval `[D(k), D(mn + 1 - k)]` with the tested critical `k`.
fn oracle_shift(a: &[u64], b: &[u64]) -> (f64, Option<[f64; 2]>) {
    let mut d: Vec<i128> = Vec::new();
    for &x in a {
        for &y in b {
            d.push(i128::from(y) - i128::from(x));
        }
    }
    d.sort_unstable();
    let mn = d.len();
    let shift = (d[(mn - 1) / 2] as f64 + d[mn / 2] as f64) / 2.0;
    let ci = critical_k(a.len(), b.len())
        .0
        .map(|k| [d[k as usize - 1] as f64, d[mn - k as usize] as f64]);
    (shift, ci)
}

fn numpy_median(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    }
}

/// The step times and the parts against the generated steps.
fn check_against_generated(s: &StepsDiff, ga: &[GenStep], gb: &[GenStep]) {
    let da: Vec<u64> = ga.iter().map(GenStep::dur_ns).collect();
    let db: Vec<u64> = gb.iter().map(GenStep::dur_ns).collect();
    assert_eq!((s.time.n_a, s.time.n_b), (ga.len(), gb.len()));
    let (shift, ci) = oracle_shift(&da, &db);
    let ma = numpy_median(&da);
    assert_eq!(s.time.median_ms_a, ma / 1e6);
    assert_eq!(s.time.median_ms_b, numpy_median(&db) / 1e6);
    assert_eq!(s.time.shift_ms, shift / 1e6);
    assert_eq!(s.time.change_pct, 100.0 * shift / ma);
    assert_eq!(s.time.ci95_ms, ci.map(|c| c.map(|x| x / 1e6)));
    assert_eq!(
        s.time.significant,
        ci.is_some_and(|[l, h]| l > 0.0 || h < 0.0)
    );
    type Get = fn(&GenStep) -> u64;
    let parts: [(&str, Get); 4] = [
        ("dataloader", |g| g.dataloader_ns),
        ("cpu_exec", |g| g.cpu_ns),
        ("kernel", |g| g.kernel_ns),
        ("other", |g| g.other_ns),
    ];
    for (name, get) in parts {
        let p = s.parts.iter().find(|p| p.part == name).unwrap();
        let ta: u128 = ga.iter().map(|g| u128::from(get(g))).sum();
        let tb: u128 = gb.iter().map(|g| u128::from(get(g))).sum();
        assert_eq!(p.total_ms_a, ta as f64 / 1e6, "{name}");
        assert_eq!(p.total_ms_b, tb as f64 / 1e6, "{name}");
        assert_eq!(p.delta_total_ms, (tb as i128 - ta as i128) as f64 / 1e6);
        let ca: Vec<u64> = ga.iter().map(get).collect();
        let cb: Vec<u64> = gb.iter().map(get).collect();
        assert_eq!(
            p.delta_median_ms,
            (numpy_median(&cb) - numpy_median(&ca)) / 1e6
        );
        assert_eq!(s.breakdown_ms_median_a.get(part_of(name)), p.median_ms_a);
    }
    // The parts that were never generated are zero on both sides.
    for p in &s.parts {
        if ["memcpy", "memset", "communication", "runtime"].contains(&p.part) {
            assert_eq!((p.total_ms_a, p.total_ms_b, p.steps_moved), (0.0, 0.0, 0));
        }
    }
}

fn part_of(name: &str) -> crate::steps::Part {
    crate::steps::ALL
        .into_iter()
        .find(|p| p.key() == name)
        .unwrap()
}

#[test]
fn a_stall_in_k_steps_is_found_in_those_steps() {
    const STALLED: &[u64] = &[3, 11];
    let stall = 250_000_000;
    let (ta, ga) = gen_run(7, 22, Change::default());
    let (tb, gb) = gen_run(
        7,
        22,
        Change {
            stall: Some((stall, STALLED)),
            ..Change::default()
        },
    );
    let mut first: Option<DiffResult> = None;
    for_each_split(tb.as_bytes(), 4, 31, |chunks| {
        let r = drive(opts_steps(), &[(A, &[ta.as_bytes()]), (B, chunks)]).unwrap();
        let s = r.steps.clone().flatten().unwrap();
        check_against_generated(&s, &ga, &gb);
        // The data loader moved most, by the stalls exactly, in the stalled steps of B only.
        let p = &s.parts[0];
        assert_eq!(p.part, "dataloader");
        assert_eq!(p.delta_total_ms, 2.0 * stall as f64 / 1e6);
        assert_eq!((p.steps_moved, p.moved_in, p.of_steps), (2, "b", 22));
        // ProfilerStep#k is the k-th step.
        assert_eq!(p.moved_steps, STALLED);
        // The other parts are B's own (the same seed): no change at all.
        assert!(s.parts[1..].iter().all(|p| p.delta_total_ms == 0.0));
        // Two slow steps of 22 do not move the median step: no significant change, and the
        // verdict names the part.
        assert!(!s.time.significant);
        assert!(
            r.verdict
                .starts_with("B vs A: no significant change: median step"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict
                .ends_with("; dataloader +500.000 ms in 2 of 22 steps (#3, #11)"),
            "{}",
            r.verdict
        );
        assert!(s.energy.is_none());
        match &first {
            Some(f) => assert_eq!(f, &r),
            None => first = Some(r),
        }
    });
    // A and B swapped: the data loader shrank, in 2 of A's steps.
    let r = drive(
        opts_steps(),
        &[(A, &[tb.as_bytes()]), (B, &[ta.as_bytes()])],
    )
    .unwrap();
    let s = r.steps.flatten().unwrap();
    check_against_generated(&s, &gb, &ga);
    assert_eq!(s.parts[0].part, "dataloader");
    assert_eq!((s.parts[0].steps_moved, s.parts[0].moved_in), (2, "a"));
    assert_eq!(s.parts[0].moved_steps, STALLED);
    assert!(
        r.verdict
            .ends_with("; dataloader -500.000 ms in 2 of 22 steps (#3, #11)")
    );
}

#[test]
fn an_op_made_2x_slower_is_a_significant_change() {
    let (ta, ga) = gen_run(11, 20, Change::default());
    let (tb, gb) = gen_run(
        11,
        20,
        Change {
            slow: 2,
            ..Change::default()
        },
    );
    let r = drive(
        opts_steps(),
        &[(A, &[ta.as_bytes()]), (B, &[tb.as_bytes()])],
    )
    .unwrap();
    let s = r.steps.as_ref().unwrap().as_ref().unwrap();
    check_against_generated(s, &ga, &gb);
    assert!(s.time.significant && s.time.change_pct > 50.0);
    let [lo, hi] = s.time.ci95_pct.unwrap();
    assert!(lo > 0.0 && lo <= s.time.change_pct && s.time.change_pct <= hi);
    assert_eq!(s.time.method, "exact");
    // The kernel part grew in every step; the verdict says so, with no "no significant".
    assert_eq!(s.parts[0].part, "kernel");
    assert_eq!((s.parts[0].steps_moved, s.parts[0].of_steps), (20, 20));
    // The first ten listed, the rest said.
    assert_eq!(s.parts[0].moved_steps, (0..10).collect::<Vec<u64>>());
    assert!(
        r.verdict
            .contains("(#0, #1, #2, #3, #4, #5, #6, #7, #8, #9, ...)"),
        "{}",
        r.verdict
    );
    assert!(
        r.verdict.starts_with("B vs A: median step "),
        "{}",
        r.verdict
    );
    assert!(!r.verdict.contains("no significant"), "{}", r.verdict);
    assert!(r.verdict.contains("95 % CI +"), "{}", r.verdict);
    assert!(r.verdict.contains("; kernel +"), "{}", r.verdict);
    // The ops still rank gemm first, and the old verdict's figures are all there.
    assert_eq!(r.ops[0].name, "gemm");
}

#[test]
fn no_change_says_no_significant_change() {
    // The same distribution, other random draws; and a run against itself.
    let (ta, ga) = gen_run(21, 24, Change::default());
    let (tb, gb) = gen_run(22, 24, Change::default());
    let r = drive(
        opts_steps(),
        &[(A, &[ta.as_bytes()]), (B, &[tb.as_bytes()])],
    )
    .unwrap();
    let s = r.steps.as_ref().unwrap().as_ref().unwrap();
    check_against_generated(s, &ga, &gb);
    let [lo, hi] = s.time.ci95_pct.unwrap();
    assert!(lo < 0.0 && hi > 0.0, "{lo} {hi}");
    assert!(
        r.verdict
            .starts_with("B vs A: no significant change: median step"),
        "{}",
        r.verdict
    );
    assert!(s.parts.iter().all(|p| p.steps_moved == 0), "{:?}", s.parts);
    let r = drive(
        opts_steps(),
        &[(A, &[ta.as_bytes()]), (B, &[ta.as_bytes()])],
    )
    .unwrap();
    let s = r.steps.as_ref().unwrap().as_ref().unwrap();
    assert_eq!((s.time.shift_ms, s.time.significant), (0.0, false));
    assert!(
        s.parts
            .iter()
            .all(|p| p.delta_total_ms == 0.0 && p.steps_moved == 0)
    );
    assert_eq!(
        r.verdict,
        format!(
            "B vs A: no significant change: median step {m:.3} ms vs {m:.3} ms (+0.0 %, 95 % CI {lo:+.1} % to {hi:+.1} %)",
            m = s.time.median_ms_a,
            lo = s.time.ci95_pct.unwrap()[0],
            hi = s.time.ci95_pct.unwrap()[1],
        )
    );
}

#[test]
fn power_raised_by_a_known_step_is_found_exactly() {
    let (t, g) = gen_run(5, 16, Change::default());
    let end = g.last().map_or(0, |s| s.ts_ns + s.dur_ns());
    let (ra, rb) = (recording(200, end), recording(260, end));
    let mut o = opts_steps();
    o.recordings = [
        Some(crate::join::RecordingOptions::default()),
        Some(crate::join::RecordingOptions::default()),
    ];
    let mut first: Option<DiffResult> = None;
    for_each_split(t.as_bytes(), 3, 41, |chunks| {
        let r = drive(
            o.clone(),
            &[
                (TELEMETRY_A, &[ra.as_bytes()]),
                (A, chunks),
                (TELEMETRY_B, &[rb.as_bytes()]),
                (B, &[t.as_bytes()]),
            ],
        )
        .unwrap();
        let s = r.steps.clone().flatten().unwrap();
        // The same steps: no change of time.
        assert_eq!((s.time.shift_ms, s.time.significant), (0.0, false));
        let e = s.energy.as_ref().unwrap();
        // Constant power: a step's energy is P * d exactly (to the µJ the shift is taken in).
        let uj = |p: u64| -> Vec<u64> { g.iter().map(|s| p * s.dur_ns() / 1000).collect() };
        let (ua, ub) = (uj(200), uj(260));
        let (shift, ci) = oracle_shift(&ua, &ub);
        assert_eq!((e.n_a, e.n_b), (16, 16));
        assert!((e.median_j_a - numpy_median(&ua) / 1e6).abs() < 1e-9);
        assert!((e.median_j_b - numpy_median(&ub) / 1e6).abs() < 1e-9);
        assert_eq!(e.shift_j, shift / 1e6);
        assert_eq!(e.ci95_j, ci.map(|c| c.map(|x| x / 1e6)));
        assert!(e.significant);
        let w = e.per_step.as_ref().unwrap();
        assert_eq!(w.steps, 16);
        let ta: u64 = ua.iter().sum();
        assert!((w.total_j_a - ta as f64 / 1e6).abs() < 1e-6);
        assert!((w.change_pct - 30.0).abs() < 1e-9, "{}", w.change_pct);
        assert!(
            r.verdict.contains("; energy per step ")
                && !r.verdict.contains("no significant change: energy"),
            "{}",
            r.verdict
        );
        match &first {
            Some(f) => assert_eq!(f, &r),
            None => first = Some(r),
        }
    });
    // Power on one side only: no energy, said so.
    let mut one = opts_steps();
    one.recordings[0] = Some(crate::join::RecordingOptions::default());
    let r = drive(
        one,
        &[
            (TELEMETRY_A, &[ra.as_bytes()]),
            (A, &[t.as_bytes()]),
            (B, &[t.as_bytes()]),
        ],
    )
    .unwrap();
    assert!(r.steps.as_ref().unwrap().as_ref().unwrap().energy.is_none());
    assert!(
        r.warnings.iter().any(|w| w.contains("only A has it")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn without_steps_the_result_is_unchanged_and_summaries_have_none() {
    let (ta, _) = gen_run(3, 10, Change::default());
    let (tb, _) = gen_run(4, 10, Change::default());
    let files: [(&str, &[&[u8]]); 2] = [(A, &[ta.as_bytes()]), (B, &[tb.as_bytes()])];
    let plain = drive(DiffOptions::new("a.json".into(), "b.json".into()), &files).unwrap();
    assert!(plain.steps.is_none());
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("\"steps\""));
    let with = drive(opts_steps(), &files).unwrap();
    // Everything but the steps and the verdict is the same.
    let mut same = with.clone();
    same.steps = None;
    same.verdict = plain.verdict.clone();
    assert_eq!(same, plain);
    assert!(with.steps.as_ref().unwrap().is_some());
    // A summary on one side: steps null, with a warning; the rest compared.
    let summary = super::tests::summary_of(&tb);
    let r = drive(
        opts_steps(),
        &[(A, &[ta.as_bytes()]), (B, &[summary.as_bytes()])],
    )
    .unwrap();
    assert_eq!(r.steps, Some(None));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("b: a summary has no steps")),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.verdict, {
        let p = drive(
            DiffOptions::new("a.json".into(), "b.json".into()),
            &[(A, &[ta.as_bytes()]), (B, &[summary.as_bytes()])],
        )
        .unwrap();
        p.verdict
    });
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["steps"].is_null());
    // A pattern that matches nothing: null, said so.
    let mut o = opts_steps();
    o.set_steps(false, Some("train_step")).unwrap();
    let r = drive(o, &files).unwrap();
    assert_eq!(r.steps, Some(None));
    assert!(r.warnings.iter().any(|w| w.contains("train_step")));
    // A bad pattern is refused.
    assert!(opts_steps().set_steps(true, Some("")).is_err());
    let mut o = opts_steps();
    o.set_steps(false, None).unwrap();
    assert!(o.steps.is_none());
}

#[test]
fn the_json_shape_is_the_documented_one() {
    let (ta, _) = gen_run(8, 6, Change::default());
    let (tb, _) = gen_run(
        8,
        6,
        Change {
            slow: 2,
            ..Change::default()
        },
    );
    let r = drive(
        opts_steps(),
        &[(A, &[ta.as_bytes()]), (B, &[tb.as_bytes()])],
    )
    .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    let keys: Vec<String> = v["steps"]
        .as_object()
        .unwrap()
        .keys()
        .map(ToString::to_string)
        .collect();
    let want = [
        "pattern",
        "n_a",
        "n_b",
        "median_ms_a",
        "median_ms_b",
        "shift_ms",
        "change_pct",
        "ci95_pct",
        "ci95_ms",
        "significant",
        "method",
        "breakdown_ms_median_a",
        "breakdown_ms_median_b",
        "parts",
        "energy",
    ];
    let mut sorted_want: Vec<String> = want.iter().map(ToString::to_string).collect();
    sorted_want.sort();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    assert_eq!(sorted_keys, sorted_want);
    assert_eq!(v["steps"]["ci95_pct"].as_array().unwrap().len(), 2);
    assert_eq!(v["steps"]["parts"].as_array().unwrap().len(), 8);
    assert!(v["steps"]["energy"].is_null());
}
