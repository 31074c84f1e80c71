//! The diff job over generated pairs with known changes, against exact arithmetic on the events
//! themselves; every input in random splits.
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::BTreeMap;

use super::*;
use crate::job::{Job, Need};
use crate::testutil::{Rng, for_each_split};

/// One complete event: (category, name, ts_ns, dur_ns).
type Ev = (&'static str, String, u64, u64);

/// A Kineto-like trace of these events (µs with three decimals, as Kineto writes them).
fn trace_json(events: &[Ev]) -> String {
    let mut s = String::from("{\"schemaVersion\": 1, \"traceEvents\": [\n");
    for (i, (cat, name, ts, dur)) in events.iter().enumerate() {
        if i > 0 {
            s.push_str(",\n");
        }
        let (pid, tid) = if *cat == "kernel" { (0, 7) } else { (100, 100) };
        s.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}.{:03}, \"dur\": {}.{:03}}}",
            ts / 1000,
            ts % 1000,
            dur / 1000,
            dur % 1000
        ));
    }
    s.push_str("\n]}\n");
    s
}

/// A training-like run: `steps` steps, each with a cpu op, kernels, and (if given) extra ops.
/// `slow`: the factor of the `gemm` kernel's durations; `extra`: an op only this run has.
fn run(seed: u64, steps: u64, slow: u64, extra: Option<&'static str>, old: bool) -> Vec<Ev> {
    let mut rng = Rng(seed);
    let mut ev = Vec::new();
    let mut t = 1_000_000u64;
    for _ in 0..steps {
        // Durations in whole µs so that the oracle's p50 is exact decimal arithmetic.
        let cpu = 1000 * (200 + rng.below(50));
        ev.push(("cpu_op", "aten::linear".to_string(), t, cpu));
        let mut k = t + cpu;
        for _ in 0..3 {
            let d = 1000 * (100 + rng.below(20)) * slow;
            ev.push(("kernel", "gemm".to_string(), k, d));
            k += d + 5_000;
            let d = 1000 * (30 + rng.below(5));
            ev.push(("kernel", "relu".to_string(), k, d));
            k += d + 5_000;
        }
        if let Some(name) = extra {
            ev.push(("kernel", name.to_string(), k, 40_000));
            k += 45_000;
        }
        if old {
            ev.push(("kernel", "old_kernel".to_string(), k, 25_000));
            k += 30_000;
        }
        t = k + 50_000;
    }
    ev
}

/// Drives a diff job over in-memory inputs, in the given splits.
fn drive(opts: DiffOptions, a: &[&[u8]], b: &[&[u8]]) -> Result<DiffResult, DiffError> {
    let mut job = DiffJob::new(opts);
    loop {
        match job.need() {
            Need::File(name) => {
                let chunks = if name == A { a } else { b };
                for c in chunks {
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

fn opts() -> DiffOptions {
    DiffOptions::new("a.json".into(), "b.json".into())
}

/// Exact per-op sums and numpy medians (µs) of the events.
fn oracle(events: &[Ev]) -> BTreeMap<(String, String), (u64, u128, f64)> {
    let mut by: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for (cat, name, _, dur) in events {
        by.entry((cat.to_string(), name.clone()))
            .or_default()
            .push(*dur);
    }
    by.into_iter()
        .map(|(k, mut d)| {
            d.sort_unstable();
            let n = d.len();
            let p50_ns = if n % 2 == 1 {
                d[n / 2] as f64
            } else {
                (d[n / 2 - 1] + d[n / 2]) as f64 / 2.0
            };
            let sum: u128 = d.iter().map(|&x| u128::from(x)).sum();
            (k, (n as u64, sum, p50_ns / 1000.0))
        })
        .collect()
}

#[test]
fn injected_changes_are_found_exactly_in_any_split() {
    let ea = run(1, 20, 1, None, true);
    let eb = run(1, 20, 2, Some("new_kernel"), false);
    let (ta, tb) = (trace_json(&ea), trace_json(&eb));
    let (oa, ob) = (oracle(&ea), oracle(&eb));
    let mut first: Option<DiffResult> = None;
    for_each_split(tb.as_bytes(), 4, 25, |chunks| {
        let r = drive(opts(), &[ta.as_bytes()], chunks).unwrap();
        // Every op listed, ranked by |delta|: gemm (2x) first.
        assert_eq!(r.ops[0].name, "gemm");
        assert_eq!(r.ops[0].status, OpStatus::Both);
        let key = |n: &str| ("kernel".to_string(), n.to_string());
        let (na, sa, pa) = oa[&key("gemm")];
        let (nb, sb, pb) = ob[&key("gemm")];
        assert_eq!(
            r.ops[0].delta_sum_ms,
            (sb as i128 - sa as i128) as f64 / 1e6
        );
        assert_eq!(r.ops[0].ratio_sum, Some(sb as f64 / sa as f64));
        let a = r.ops[0].a.as_ref().unwrap();
        assert_eq!((a.n, a.sum_ms, a.p50_us), (na, sa as f64 / 1e6, Some(pa)));
        let b = r.ops[0].b.as_ref().unwrap();
        assert_eq!((b.n, b.p50_us), (nb, Some(pb)));
        // The new and the removed op, flagged, with null on the side that lacks them.
        let new = r.ops.iter().find(|o| o.name == "new_kernel").unwrap();
        assert_eq!((new.status, new.a.is_none()), (OpStatus::OnlyB, true));
        assert_eq!(new.delta_sum_ms, ob[&key("new_kernel")].1 as f64 / 1e6);
        let old = r.ops.iter().find(|o| o.name == "old_kernel").unwrap();
        assert_eq!((old.status, old.b.is_none()), (OpStatus::OnlyA, true));
        assert_eq!(old.delta_sum_ms, -(oa[&key("old_kernel")].1 as f64) / 1e6);
        // Unchanged ops: zero.
        let relu = r.ops.iter().find(|o| o.name == "relu").unwrap();
        assert_eq!(relu.delta_sum_ms, 0.0);
        assert_eq!(
            r.ops_compared,
            OpCounts {
                both: 3,
                only_a: 1,
                only_b: 1,
                listed: 5
            }
        );
        // The kernel category: sums exact.
        let k = r.categories.iter().find(|c| c.name == "kernel").unwrap();
        let ksum = |o: &BTreeMap<(String, String), (u64, u128, f64)>| -> u128 {
            o.iter()
                .filter(|(k, _)| k.0 == "kernel")
                .map(|(_, v)| v.1)
                .sum()
        };
        assert_eq!(
            k.delta_duration_sum_ms,
            (ksum(&ob) as i128 - ksum(&oa) as i128) as f64 / 1e6
        );
        assert!(
            r.verdict.starts_with("B vs A: kernel busy"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains("most changed op: kernel gemm"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("(2.0"), "{}", r.verdict);
        // The pauses: one device, none of 100 ms.
        let p = r.pauses.as_ref().unwrap();
        assert_eq!(p.devices.len(), 1);
        assert_eq!(p.devices[0].a.as_ref().unwrap().pauses, 0);
        match &first {
            Some(f) => assert_eq!(f, &r),
            None => first = Some(r),
        }
    });
}

#[test]
fn a_run_against_itself_has_no_significant_change() {
    let t = trace_json(&run(3, 15, 1, None, false));
    let r = drive(opts(), &[t.as_bytes()], &[t.as_bytes()]).unwrap();
    assert!(
        r.verdict.starts_with("B vs A: no significant change"),
        "{}",
        r.verdict
    );
    assert!(r.ops.iter().all(|o| o.delta_sum_ms == 0.0));
    assert_eq!(r.totals.delta_busy_union_ms, 0.0);
    // Top N lists N.
    let mut o = opts();
    o.compare.top = 1;
    let r = drive(o, &[t.as_bytes()], &[t.as_bytes()]).unwrap();
    assert_eq!(r.ops.len(), 1);
    assert_eq!(r.ops_compared.listed, 1);
}

/// A trace's summary with its mergeable section, as `trace --json --mergeable` prints it.
pub(super) fn summary_of(trace: &str) -> String {
    let mut job = crate::trace_job::TraceJob::new(crate::trace_job::TraceJobOptions {
        source: "r0".into(),
        limits: crate::Limits::NATIVE,
        top: 40,
        durations_out: None,
        mergeable: true,
        steps: None,
        join: None,
    });
    job.write(trace.as_bytes()).unwrap();
    job.end().unwrap();
    job.finish().unwrap().to_json()
}

#[test]
fn a_summary_compares_with_its_trace_sums_exact_p50_within_the_bound() {
    let ea = run(5, 12, 1, None, false);
    let eb = run(6, 12, 2, None, false);
    let (ta, tb) = (trace_json(&ea), trace_json(&eb));
    let sb = summary_of(&tb);
    let exact = drive(opts(), &[ta.as_bytes()], &[tb.as_bytes()]).unwrap();
    for_each_split(sb.as_bytes(), 3, 9, |chunks| {
        let r = drive(opts(), &[ta.as_bytes()], chunks).unwrap();
        assert_eq!(r.b.kind, InputKind::Summary);
        assert_eq!(r.b.p50, "histogram");
        assert!(r.pauses.as_ref().unwrap().devices[0].b.is_none());
        assert_eq!(r.ops.len(), exact.ops.len());
        for (x, y) in r.ops.iter().zip(&exact.ops) {
            assert_eq!((&x.name, x.delta_sum_ms), (&y.name, y.delta_sum_ms));
            let (px, py) = (x.b.as_ref().unwrap().p50_us, y.b.as_ref().unwrap().p50_us);
            let (px, py) = (px.unwrap(), py.unwrap());
            assert!(
                (px - py).abs() <= py * r.b.p50_relative_error * 1.000_001,
                "{px} {py}"
            );
        }
        assert_eq!(r.categories, exact.categories);
    });
    // Both summaries: the same ranking.
    let sa = summary_of(&ta);
    let r = drive(opts(), &[sa.as_bytes()], &[sb.as_bytes()]).unwrap();
    assert_eq!(r.a.kind, InputKind::Summary);
    assert!(r.pauses.is_none());
    let names = |r: &DiffResult| r.ops.iter().map(|o| o.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&r), names(&exact));
}

#[test]
fn bad_inputs_are_errors_naming_the_input_and_offset() {
    let t = trace_json(&run(7, 3, 1, None, false));
    for (bad, want) in [
        (&b"hello"[..], "at byte 0"),
        (b"{\"traceEvents\": [{\"ph\": \"X\"", "ends at byte 27"),
        (b"{\"a\": 5}", "no trace event in its 8 bytes"),
    ] {
        let e = drive(opts(), &[t.as_bytes()], &[bad])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.json: ") && e.contains(want), "{e}");
    }
    // A cut gzip trace.
    let gz = {
        use std::io::Write;
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        g.write_all(t.as_bytes()).unwrap();
        g.finish().unwrap()
    };
    let e = drive(opts(), &[&gz[..gz.len() / 2]], &[t.as_bytes()])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("a.json: ") && e.contains("byte") && e.contains("whole trace"),
        "{e}"
    );
    // The whole gzip is fine.
    assert!(drive(opts(), &[&gz], &[t.as_bytes()]).is_ok());
    // A summary without its section.
    let e = drive(opts(), &[t.as_bytes()], &[b"{\"source\": \"x\"}"])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("b.json: "), "{e}");
    // A recording with a summary.
    let mut o = opts();
    o.recordings[1] = Some(Default::default());
    let s = summary_of(&t);
    let mut job = DiffJob::new(o);
    let mut err = None;
    while err.is_none() {
        match job.need() {
            Need::File(name) => {
                let bytes: &[u8] = match name {
                    A => t.as_bytes(),
                    TELEMETRY_B => {
                        b"t_mono_ns,t_wall_ns,row_type,label,gpu_power_W\n1,1000,SAMPLE,,50\n"
                    }
                    _ => s.as_bytes(),
                };
                err = job.write(bytes).and_then(|()| job.end()).err();
            }
            Need::Done => break,
            _ => unreachable!(),
        }
    }
    let e = err.expect("refused").to_string();
    assert!(e.contains("b.json: a summary has no clock"), "{e}");
}

#[test]
fn a_summary_past_its_limits_makes_the_diff_say_so() {
    let t = trace_json(&run(8, 40, 1, None, false));
    let mut o = opts();
    // Room for a few durations only: the ops move to sketches.
    o.limits = crate::Limits {
        max_exact_values: 16,
        ..crate::Limits::BOUNDED
    };
    let r = drive(o, &[t.as_bytes()], &[t.as_bytes()]).unwrap();
    assert_eq!((r.a.p50, r.b.p50), ("approximate", "approximate"));
    // No room even for a sketch: the p50s are null, as the summary's own.
    assert!(
        r.a.p50_relative_error > 0.0
            || r.ops.iter().any(|o| o.a.as_ref().unwrap().p50_us.is_none())
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("a: the trace's summary is approximate")),
        "{:?}",
        r.warnings
    );
    // Sums stay exact: nothing moved.
    assert!(r.ops.iter().all(|o| o.delta_sum_ms == 0.0));
    assert!(r.verdict.starts_with("B vs A: no significant change"));
    // Within the limits: exact, no such warning.
    let r = drive(opts(), &[t.as_bytes()], &[t.as_bytes()]).unwrap();
    assert_eq!(r.a.p50, "exact");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}
