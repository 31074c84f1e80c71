//! No allocation per event in steady state for the join's passes over the trace: the gap
//! finder (pass 1) and the pause host tables (pass 2, without a recording), counted by the
//! shared counting global allocator. With a recording, each annotation span's verdict builds
//! its evidence lists (a few small allocations per span; docs/join.md says so).
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::join::{GapFinder, GapOptions, JoinOptions, JoinPass};
use flinch_core::json::{Event, IdField, NumField};

fn ev(cat: &'static [u8], name: &'static [u8], pid: i64, ts: i64, dur: i64) -> Event<'static> {
    Event {
        ph: b"X",
        cat: Some(cat),
        name: Some(name),
        ts_ns: NumField::Ns(ts),
        dur_ns: NumField::Ns(dur),
        pid: IdField::Int(pid),
        tid: IdField::Int(1),
        id: IdField::Missing,
        scope: IdField::Missing,
        quoted_times: 0,
        arg: flinch_core::json::ArgValue::Missing,
    }
}

/// Step `k`: a 1 ms kernel every 2 ms on two devices, with a 200 ms pause every 1000 steps
/// up to step 103 000 (then none: the steady state adds no state), and host work (a cpu_op, a
/// runtime call, a step annotation).
fn step(k: i64, f: &mut impl FnMut(&Event<'_>)) {
    let t = k * 2_000_000 + (k / 1000).min(103) * 200_000_000;
    for d in 0..2 {
        f(&ev(b"kernel", b"gemm", d, t, 1_000_000));
    }
    f(&ev(b"cpu_op", b"aten::mm", 9, t, 900_000));
    f(&ev(b"cuda_runtime", b"cudaLaunchKernel", 9, t + 10, 5_000));
    if k % 1000 == 999 {
        f(&ev(b"user_annotation", b"ProfilerStep#", 9, t, 210_000_000));
        f(&ev(b"cpu_op", b"aten::item", 9, t + 500_000, 100_000_000));
    }
}

#[test]
fn no_allocation_per_event_in_steady_state() {
    let opts = JoinOptions {
        gaps: GapOptions {
            min_gap_ns: 100_000_000,
            ..GapOptions::default()
        },
        ..JoinOptions::default()
    };
    let mut finder = GapFinder::new(opts.gaps);
    // Pass 1: the pauses (new state, bounded by the gap cap), then 100 000 steps more.
    for k in 0..104_000 {
        step(k, &mut |e| finder.add(e));
    }
    let ((), during) = count_allocs(|| {
        for k in 104_000..204_000 {
            step(k, &mut |e| finder.add(e));
        }
    });
    assert_eq!(during, 0, "allocations in pass 1 over 400 000 events");
    let found = finder.finish();
    assert_eq!(found.devices.len(), 2);
    assert_eq!(found.devices[0].gaps.len(), 103);

    // Pass 2: names and tables fill in the first round; the same events again (every pause hit
    // again, by known names) and the pause-free rest allocate nothing.
    let mut pass = JoinPass::new(found, None, opts, None).unwrap();
    for k in 0..104_000 {
        step(k, &mut |e| pass.add(e));
    }
    let ((), during) = count_allocs(|| {
        for k in 0..204_000 {
            step(k, &mut |e| pass.add(e));
        }
    });
    assert_eq!(during, 0, "allocations in pass 2 over 800 000 events");
    let r = pass.finish();
    assert_eq!(r.pauses.len(), 100);
    assert_eq!(r.pauses[0].within[0].name, "ProfilerStep#");
    assert_eq!(
        r.pauses[0].host[0].n, 2,
        "each pause's aten::item, counted in both rounds"
    );
}

/// The first pass as it rides on the summary's scan (`FirstPass`): without a recording it
/// allocates nothing per event; with one, only the copy of the annotation spans grows, by
/// doubling (one span every 1000 steps here), never per event.
#[test]
fn first_pass_allocates_only_to_copy_annotation_spans() {
    use flinch_core::join::FirstPass;
    for keep in [false, true] {
        let mut first = FirstPass::new(GapOptions::default(), keep);
        for k in 0..104_000 {
            step(k, &mut |e| first.add(e));
        }
        let ((), during) = count_allocs(|| {
            for k in 104_000..204_000 {
                step(k, &mut |e| first.add(e));
            }
        });
        if keep {
            // 100 more spans (and their names) in copies that double: a few growths each.
            assert!(during <= 8, "{during} allocations for 100 kept spans");
        } else {
            assert_eq!(during, 0, "allocations over 400 000 events");
        }
        let r = first.finish();
        assert_eq!(r.found.devices[0].gaps.len(), 103);
        assert_eq!(r.annotations.map(|a| a.len()), keep.then_some(204));
    }
}

/// With byte ranges tracked (`FirstPass::track_ranges`), fed per event with offsets
/// (`add_at`) or per batch (`begin_range`): the range list is reserved up front, so the first
/// pass still allocates nothing per event, also past the cap where ranges are merged.
#[test]
fn first_pass_with_byte_ranges_allocates_nothing_per_event() {
    use flinch_core::join::{FirstPass, Resume};
    for (batched, cap) in [(false, 1 << 15), (true, 1 << 15), (false, 16), (true, 16)] {
        let mut first = FirstPass::new(GapOptions::default(), false);
        first.track_ranges_capped(cap);
        let mut offset = 0u64;
        let mut events = 0u64;
        let mut feed = |first: &mut FirstPass, k: i64| {
            step(k, &mut |e| {
                offset += 100;
                events += 1;
                if batched {
                    if events % 300 == 1 {
                        first.begin_range(Resume::AfterEvent(offset - 100));
                    }
                    first.add_time_span(flinch_core::join::gaps::time_span_ns(e));
                    first.add_host_hull(flinch_core::join::first_pass::host_span_ns(e));
                    if flinch_core::join::first_pass::is_relevant(e) {
                        first.add_relevant(e);
                    }
                    first.set_range_end(offset);
                } else {
                    first.add_at(e, offset);
                }
            });
        };
        for k in 0..104_000 {
            feed(&mut first, k);
        }
        let ((), during) = count_allocs(|| {
            for k in 104_000..204_000 {
                feed(&mut first, k);
            }
        });
        assert_eq!(
            during, 0,
            "allocations over 400 000 events (batched {batched}, cap {cap})"
        );
        let r = first.finish();
        assert_eq!(r.found.devices[0].gaps.len(), 103);
        let ranges = r.ranges.as_ref().unwrap();
        assert!(
            ranges.as_slice().len() <= cap,
            "{}",
            ranges.as_slice().len()
        );
        assert_eq!(ranges.coarsened > 0, cap == 16);
        assert!(r.plan_second_pass(50, false).is_some());
    }
}
