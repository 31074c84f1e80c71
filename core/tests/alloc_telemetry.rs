//! Counting-allocator proof that the telemetry accumulator allocates nothing per row: its
//! exact value vectors grow geometrically, so feeding 10x more rows adds only a handful of
//! allocations (O(log rows)), and a repeated AC state string is stored once.

mod common;

use common::counting_alloc::count_allocs;
use flinch_core::telemetry::{AcStateRef, Num, TelemetryAccumulator, TelemetryRow, Window};

/// Allocations made while pushing `rows` rows into a five-window accumulator.
fn allocations_for(rows: usize) -> u64 {
    let windows = [
        Window::ALL,
        Window {
            start_s: Some(Num::Float(100.0)),
            stop_s: Some(Num::Float(1e12)),
            stop_exclusive: false,
        },
        Window {
            start_s: Some(Num::Int(100)),
            stop_s: Some(Num::Int(400)),
            stop_exclusive: false,
        },
        Window {
            start_s: Some(Num::Float(1e9)),
            stop_s: None,
            stop_exclusive: false,
        },
        Window {
            start_s: None,
            stop_s: Some(Num::Int(60)),
            stop_exclusive: false,
        },
    ];
    let mut acc = TelemetryAccumulator::new(&windows);
    let csvs: Vec<String> = (0..16)
        .map(|i| {
            format!(
                "0, NVIDIA H100, {}, 81559, 45, {}.5, 1980, 2619, 87, P0",
                1000 + i,
                100 + i
            )
        })
        .collect();
    let ((), n) = count_allocs(|| {
        for i in 0..rows {
            acc.push(&TelemetryRow {
                unix: Num::Float(i as f64 * 0.5),
                host_available_bytes: Some(Num::Int(1_000_000 + i as i64)),
                host_used_bytes: Some(Num::Int(5)),
                host_cpu_percent: Some(Num::Float(12.5)),
                gpu_csv: &csvs[i % csvs.len()],
                ac_state: Some(AcStateRef::Str("Online")),
            });
        }
    });
    n
}

#[test]
fn no_allocation_per_row() {
    let small = allocations_for(10_000);
    let large = allocations_for(100_000);
    // 10 series x 5 windows, each doubling: about 4 more reallocations per series for 10x
    // the rows, never one per row. The bound is 6 per series-window: 300.
    assert!(
        small > 0,
        "the exact mode keeps values, so it must allocate something"
    );
    assert!(
        large - small <= 300,
        "10x rows cost {} more allocations ({small} -> {large})",
        large - small
    );
    assert!(large < 100_000 / 20, "{large} allocations for 100k rows");
}
