//! Counting-allocator proof that the bounded numerics allocate nothing per interval or value in
//! steady state: after construction, feeding many inputs performs zero allocations.

mod common;

use common::counting_alloc::count_allocs;
use flinch_core::energy::{
    CounterDelta, CounterStep, ReferenceTrapezoid, WindowCounter, WindowIntegral,
};
use flinch_core::intervals::{Interval, IntervalUnion, IntervalUnionArray, IntervalUnionSlice};
use flinch_core::sketch::{QuantileSketch, QuantileSketchIn};
use flinch_core::stats::{Fsum, Num, stats_in_place};
use flinch_core::time_windows::{Window, WindowedStats};

/// Runs `f` and returns how many allocations it made on this thread.
fn allocations_in(f: impl FnOnce()) -> u64 {
    count_allocs(f).1
}

/// A deterministic, mostly sorted interval stream with stragglers and overlaps.
fn interval_stream(n: usize) -> impl Iterator<Item = (i64, i64)> {
    let mut x: u64 = 0x1234_5678;
    let mut t = 0i64;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t += (x % 1000) as i64;
        let start = if x.is_multiple_of(7) {
            t - (x % 50_000) as i64
        } else {
            t
        };
        (start, start + (x % 3000) as i64)
    })
}

#[test]
fn bounded_interval_unions_do_not_allocate_per_interval() {
    let mut u = IntervalUnion::bounded(1024);
    let mut slots = vec![Interval::default(); 512];
    let mut s = IntervalUnionSlice::new(&mut slots).unwrap();
    let mut a = Box::new(IntervalUnionArray::<256>::new());
    let n = allocations_in(|| {
        for (start, end) in interval_stream(200_000) {
            u.insert(start, end);
            s.insert(start, end);
            a.insert(start, end);
        }
        assert!(u.union_ns() > 0 && s.union_ns() > 0 && a.union_ns() > 0);
        assert!(
            u.error_bound_ns() > 0,
            "the stream must overflow the capacity"
        );
    });
    assert_eq!(n, 0);
}

#[test]
fn growing_bounded_union_stops_allocating_at_its_capacity() {
    let mut u = IntervalUnion::bounded_growing(1024);
    // Warm-up: fills the storage to its limit (a logarithmic number of allocations).
    for (start, end) in interval_stream(50_000) {
        u.insert(start, end);
    }
    assert!(
        u.error_bound_ns() > 0,
        "the warm-up must reach the capacity"
    );
    let n = allocations_in(|| {
        for (start, end) in interval_stream(200_000) {
            u.insert(start + (1 << 40), end + (1 << 40));
        }
        assert!(u.union_ns() > 0);
    });
    assert_eq!(n, 0);
}

#[test]
fn stats_in_place_and_energy_do_not_allocate() {
    let mut values: Vec<Num> = (0..10_000)
        .map(|i| {
            if i % 3 == 0 {
                Num::Int(i)
            } else {
                Num::Float(i as f64 * 0.37)
            }
        })
        .collect();
    let n = allocations_in(|| {
        let s = stats_in_place(&mut values);
        assert_eq!(s.n, 10_000);
        let mut f = Fsum::new();
        let mut w = WindowIntegral::default();
        let mut wc = WindowCounter::default();
        let mut r = ReferenceTrapezoid::new(5.0);
        let mut c = CounterDelta::new(Some(1 << 32));
        for i in 0..100_000i64 {
            f.add(i as f64 * 0.1);
            let (a, b) = ((i - 1) * 100_000, i * 100_000);
            let window = (1_000_000, 9_000_000_000);
            w.add(
                (a, 100.0),
                (b, 100.0 + (i % 7) as f64),
                window,
                5_000_000_000,
                1e9,
            );
            let step = CounterStep::new(7 * i as u64, 7 * i as u64 + 5, Some(1 << 32));
            wc.add_step((a, b), step, window);
            r.push(i as f64 * 1e-4, 100.0);
            c.push(((i * 77_777) as u64) % (1 << 32));
        }
        assert!(f.value() > 0.0 && wc.delta > 0.0);
        assert!(w.value().is_some() && r.energy_j().is_some());
        assert!(c.result().wraps > 0);
    });
    assert_eq!(n, 0);
}

#[test]
fn the_counter_sees_allocations() {
    let n = allocations_in(|| {
        let mut u = IntervalUnion::exact();
        for (start, end) in interval_stream(10_000) {
            u.insert(start, end);
        }
        std::hint::black_box(u.union_ns());
    });
    assert!(
        n > 0,
        "the exact (growable) form allocates, and the counter must see it"
    );
}

#[test]
fn sketches_and_bounded_windows_do_not_allocate_per_value() {
    let mut sketch = QuantileSketch::new(512);
    let mut array_sketch = QuantileSketchIn::from_buffer([0u64; 256]).unwrap();
    let windows = [
        Window::ALL,
        Window::inclusive(100.0, 400.0),
        Window::inclusive(900.0, 1000.0),
    ];
    let mut ws = WindowedStats::bounded(&windows, 3, 256);
    let n = allocations_in(|| {
        for i in 0..200_000u32 {
            let v = 1.0 + (i % 977) as f64 * 1.37;
            sketch.push(v);
            array_sketch.push(-v);
            let t = i as f64 * 0.005;
            ws.begin_row(t);
            ws.push(0, v);
            ws.push(1, i);
            ws.push_missing(2);
            ws.push_power(100.0 + (i % 13) as f64);
        }
        assert!(sketch.stats().stats.p99.is_some());
        assert!(array_sketch.stats().stats.p50.is_some());
        assert_eq!(ws.summary(0).unwrap().samples, 200_000);
        assert!(ws.stats(1, 0).unwrap().n > 0);
    });
    assert_eq!(n, 0);
}

/// The step comparison over sorted durations: the normal route (more than 50 steps a side)
/// allocates nothing; the exact route one table of `m * n / 2 + 1` counts, whatever the data.
#[test]
fn step_shift_allocates_at_most_its_one_table() {
    use flinch_core::diff::step_shift_sorted;
    let a: Vec<u64> = (0..400u64).map(|i| 1_000_000 + i * 997 % 50_000).collect();
    let mut a = a;
    a.sort_unstable();
    let b: Vec<u64> = a.iter().map(|x| x + 20_000).collect();
    let mut got = None;
    assert_eq!(allocations_in(|| got = step_shift_sorted(&a, &b)), 0);
    assert!(got.unwrap().significant);
    let (a, b) = (&a[..40], &b[..30]);
    assert_eq!(allocations_in(|| got = step_shift_sorted(a, b)), 1);
}
