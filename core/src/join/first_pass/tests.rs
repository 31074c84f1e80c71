//! The second pass planned from the byte ranges ([`FirstPassResult::plan_second_pass`]),
//! run over the document in memory, gives the report of a full second pass (the oracle), for
//! random documents, pause layouts, `--top-pauses`, range caps and chunk splits.
use std::format;
use std::string::String;
use std::vec::Vec;

use super::*;
use crate::Limits;
use crate::join::{JoinOptions, JoinPass, Recording, RecordingBuilder, RecordingOptions};
use crate::json::{ElementBoundary, EventScanner, Scan};
use crate::testutil::{Rng, for_each_split};

/// Kernels on two devices with idle stretches of random length, host ops, long host ops,
/// annotations and other events; `bare`: the document is a bare array.
fn doc(rng: &mut Rng, n: usize, bare: bool) -> Vec<u8> {
    let mut evs: Vec<String> = Vec::new();
    let mut t = 1_000u64;
    for k in 0..n {
        t += rng.below(300)
            + if rng.below(25) == 0 {
                5_000 + rng.below(40_000)
            } else {
                0
            };
        let dev = rng.below(2);
        evs.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":{dev},"tid":7,"ts":{t},"dur":{}}}"#,
            rng.below(200)
        ));
        let host = t.saturating_sub(rng.below(3_000));
        match rng.below(12) {
            0 => evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"step{}","pid":9,"tid":1,"ts":{host},"dur":{}}}"#,
                k / 20,
                rng.below(50_000)
            )),
            1 => evs.push(format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"g","pid":{dev},"tid":2,"ts":{host},"dur":{}}}"#,
                rng.below(20_000)
            )),
            2 => evs.push(format!(
                r#"{{"ph":"X","cat":"python_function","name":"main","pid":9,"tid":1,"ts":{host},"dur":{}}}"#,
                rng.below(300_000)
            )),
            3 => evs.push(format!(r#"{{"ph":"i","s":"t","name":"m","pid":9,"tid":1,"ts":{t}}}"#)),
            _ => {}
        }
        evs.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"op{}","pid":9,"tid":1,"ts":{host},"dur":{}}}"#,
            rng.below(4),
            rng.below(2_000)
        ));
    }
    let body = evs.join(",\n ");
    if bare {
        format!("[ {body} ]").into_bytes()
    } else {
        format!("{{\"traceEvents\": [\n {body}\n], \"baseTimeNanoseconds\": 5}}").into_bytes()
    }
}

/// Every event of `data` fed to `f`, scanned from `start` up to byte `end` by `sc`.
fn scan(data: &[u8], mut sc: EventScanner, start: u64, end: u64, f: &mut impl FnMut(&Event<'_>)) {
    let mut pos = start as usize;
    while pos < end as usize {
        let (what, n) = sc.scan(&data[pos..end as usize]).unwrap();
        pos += n;
        match what {
            Scan::Event => f(&sc.event()),
            Scan::NeedsInput => break,
        }
    }
}

/// The steps run over `data` (the way a caller does with a file).
fn run(
    data: &[u8],
    steps: &[SecondPassStep],
    kept: Option<&KeptAnnotations>,
    bare: bool,
    f: &mut impl FnMut(&Event<'_>),
) {
    for step in steps {
        match step {
            SecondPassStep::Replay(r) => kept.unwrap().replay_range(r.clone(), &mut *f),
            &SecondPassStep::Scan { resume, end } => {
                let at = |offset| {
                    EventScanner::resume_at(Limits::NATIVE, ElementBoundary { offset, bare })
                };
                match resume {
                    Resume::Start => scan(data, EventScanner::new(Limits::NATIVE), 0, end, f),
                    Resume::Boundary(o) => scan(data, at(o), o, end, f),
                    Resume::AfterEvent(o) => {
                        let mut p = o as usize;
                        while data[p].is_ascii_whitespace() {
                            p += 1;
                        }
                        assert_eq!(
                            data[p], b',',
                            "a range resumes after an event and its comma"
                        );
                        scan(data, at(p as u64 + 1), p as u64 + 1, end, f);
                    }
                }
            }
        }
    }
}

/// Two GPUs each 1 ms over the first 3 s of Unix time (trace ts with offset 0), power in steps.
fn recording() -> Recording {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    for k in 0..3_000i64 {
        for g in 0..2 {
            let p = if (k / 37) % 3 == 0 { 95 } else { 300 + g * 10 };
            s.push_str(&format!(
                "{k},{},SAMPLE,,{p},{},,,,,{g}\n",
                k * 1_000_000,
                p / 4
            ));
        }
    }
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    b.write(s.as_bytes()).unwrap();
    b.end().unwrap()
}

#[test]
fn planned_second_pass_matches_a_full_second_pass() {
    let rec = recording();
    let mut rng = Rng::from_env(77);
    let mut partial = 0;
    for round in 0..24 {
        let bare = round % 4 == 3;
        let n_events = 1500 + rng.below(3000) as usize;
        let data = doc(&mut rng, n_events, bare);
        let mut opts = JoinOptions::default();
        opts.gaps.min_gap_ns = [2_000_000, 5_000_000, 20_000_000][round % 3];
        opts.pauses.max_pauses_per_device = [1, 3, 50][rng.below(3) as usize];
        opts.clock_offset_ns = Some(0);
        // With a recording the annotation spans are kept and replayed.
        let keep = round % 2 == 0;
        let r = keep.then_some(&rec);
        let cap = [2, 5, 40, MAX_RANGES][rng.below(4) as usize];
        let mut n = 0;
        for_each_split(&data, 2, round as u64, |chunks| {
            // The first pass over the chunks, with offsets (as `add_at` callers give them).
            let mut first = FirstPass::new(opts.gaps, keep);
            first.track_ranges_capped(cap);
            let mut sc = EventScanner::new(Limits::NATIVE);
            for chunk in chunks {
                let mut pos = 0;
                loop {
                    let (what, k) = sc.scan(&chunk[pos..]).unwrap();
                    pos += k;
                    match what {
                        Scan::Event => {
                            let end = sc.bytes_consumed();
                            first.add_at(&sc.event(), end);
                        }
                        Scan::NeedsInput => break,
                    }
                }
            }
            let first = first.finish();
            assert!(first.ranges.as_ref().unwrap().as_slice().len() <= cap);
            let steps = first
                .plan_second_pass(opts.pauses.max_pauses_per_device, keep)
                .expect("ranges tracked, annotations kept");
            // The oracle: every event of the document.
            let mut full = JoinPass::new(first.found.clone(), None, opts.clone(), r).unwrap();
            scan(
                &data,
                EventScanner::new(Limits::NATIVE),
                0,
                data.len() as u64,
                &mut |e| full.add(e),
            );
            let mut planned = JoinPass::new(first.found.clone(), None, opts.clone(), r).unwrap();
            run(&data, &steps, first.annotations.as_ref(), bare, &mut |e| {
                planned.add(e)
            });
            let (want, got) = (full.finish(), planned.finish());
            assert_eq!(
                got, want,
                "round {round} cap {cap} top {}",
                opts.pauses.max_pauses_per_device
            );
            assert!(!want.pauses.is_empty(), "round {round}");
            if keep {
                assert!(
                    want.annotation_energy
                        .as_ref()
                        .is_some_and(|a| !a.is_empty())
                );
            }
            let scanned: u64 = steps
                .iter()
                .map(|s| match *s {
                    SecondPassStep::Scan {
                        resume: Resume::Start,
                        end,
                    } => end,
                    SecondPassStep::Scan {
                        resume: Resume::Boundary(o) | Resume::AfterEvent(o),
                        end,
                    } => end - o,
                    SecondPassStep::Replay(_) => 0,
                })
                .sum();
            if scanned * 2 < data.len() as u64 {
                n += 1;
            }
        });
        partial += usize::from(n > 0);
    }
    // Ranges hold 512 events, so these small documents have few: some rounds must still skip.
    assert!(
        partial >= 5,
        "only {partial} rounds read less than half the document"
    );
}
