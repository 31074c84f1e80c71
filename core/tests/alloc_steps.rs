//! No allocation per event in steady state for the steps' first pass (`StepCollector`): once
//! its tables reach their limits (steps, the classes' intervals, the host op spans) it allocates
//! nothing more, and below them its tables grow geometrically (a few allocations in all, never
//! one per event), counted by the shared counting global allocator.
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::Limits;
use flinch_core::json::{ArgValue, Event, IdField, NumField};
use flinch_core::steps::{StepCollector, StepPattern};

fn ev(cat: &'static [u8], name: &'static [u8], ts: i64, dur: i64) -> Event<'static> {
    Event {
        ph: b"X",
        cat: Some(cat),
        name: Some(name),
        ts_ns: NumField::Ns(ts),
        dur_ns: NumField::Ns(dur),
        pid: IdField::Int(0),
        tid: IdField::Int(1),
        id: IdField::Missing,
        scope: IdField::Missing,
        quoted_times: 0,
        arg: ArgValue::Missing,
    }
}

/// Step `k` of 2 ms: a step annotation, kernels with gaps on two streams, a copy, NCCL, a
/// runtime call, a data-loader op and another host op, each leaving a new disjoint interval.
fn step(k: i64, f: &mut impl FnMut(&Event<'_>)) {
    let t = k * 2_000_000;
    f(&ev(b"user_annotation", b"ProfilerStep#7", t, 2_000_000));
    f(&ev(b"kernel", b"gemm", t + 100_000, 300_000));
    f(&ev(b"kernel", b"gemm", t + 600_000, 300_000));
    f(&ev(
        b"kernel",
        b"ncclDevKernel_AllReduce",
        t + 1_000_000,
        200_000,
    ));
    f(&ev(b"gpu_memcpy", b"Memcpy HtoD", t + 1_300_000, 50_000));
    f(&ev(b"gpu_memset", b"Memset", t + 1_400_000, 5_000));
    f(&ev(b"cuda_runtime", b"cudaLaunchKernel", t + 10, 5_000));
    f(&ev(
        b"cpu_op",
        b"enumerate(DataLoader)#x",
        t + 20_000,
        50_000,
    ));
    f(&ev(b"cpu_op", b"aten::mm", t + 80_000, 900_000));
    f(&ev(b"python_function", b"train.py(3): step", t, 1_900_000));
}

#[test]
fn no_allocation_per_event_once_at_the_limits() {
    let limits = Limits {
        max_steps: 1000,
        max_step_intervals: 4096,
        max_step_host_ops: 5000,
        ..Limits::NATIVE
    };
    let mut c = StepCollector::new(StepPattern::default(), &limits);
    for k in 0..20_000 {
        step(k, &mut |e| c.add(e));
    }
    let ((), during) = count_allocs(|| {
        for k in 20_000..60_000 {
            step(k, &mut |e| c.add(e));
        }
    });
    assert_eq!(during, 0, "allocations over 400 000 events at the limits");
    let r = c.finish().report(None);
    assert_eq!(r.steps.len(), 1000);
    assert!(r.step_summary.approximations.is_some());
}

#[test]
fn tables_grow_geometrically_below_the_limits() {
    let mut c = StepCollector::new(StepPattern::default(), &Limits::EXACT);
    for k in 0..1000 {
        step(k, &mut |e| c.add(e));
    }
    let ((), during) = count_allocs(|| {
        for k in 1000..41_000 {
            step(k, &mut |e| c.add(e));
        }
    });
    // 40 000 steps: the step table, its names, 7 unions and the host spans, each doubling a
    // few times (and the unions' pending batches): far fewer than one per step.
    assert!(during < 200, "{during} allocations over 400 000 events");
    let r = c.finish().report(None);
    assert_eq!(r.steps.len(), 41_000);
    let b = &r.steps[5].breakdown_ms;
    assert_eq!(
        (b.kernel, b.communication, b.memcpy, b.memset),
        (0.6, 0.2, 0.05, 0.005)
    );
}
