//! Counting-allocator proof for the trace's power counters (docs/join.md, "Power from the
//! trace's counters"): the scanner reads a counter's `args` without allocating, and the join's
//! first pass keeps the samples in series that grow by doubling, O(log n) allocations in all,
//! never one per event.
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::Limits;
use flinch_core::join::{FirstPass, GapOptions};
use flinch_core::json::{EventScanner, Scan};

/// `n` steps of a kernel on each of two devices and its power and utilization counters, as
/// PyTorch's profiler writes them.
fn doc(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    for k in 0..n {
        let ts = 1_000_000 + k as u64 * 1000;
        for d in 0..2 {
            if k + d > 0 {
                s.push_str(",\n");
            }
            s.push_str(&format!(
                "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":{d},\"tid\":7,\"ts\":{ts},\"dur\":500,\"args\":{{\"grid\":[1,2,3]}}}},\n\
                 {{\"ph\":\"C\",\"name\":\"Power (W)\",\"pid\":\"GPU {d} Counters\",\"tid\":0,\"ts\":{ts}.5,\"args\":{{\"\":{}.25}}}},\n\
                 {{\"ph\":\"C\",\"name\":\"SM Active (%)\",\"pid\":\"GPU {d} Counters\",\"tid\":0,\"ts\":{ts}.5,\"args\":{{\"\":{}}}}}",
                100 + k % 200,
                k % 100
            ));
        }
    }
    s.push_str("\n], \"baseTimeNanoseconds\": 1764000000000000000}");
    s.into_bytes()
}

#[test]
fn counters_allocate_only_to_grow_their_series() {
    let data = doc(70_000);
    let mut sc = EventScanner::new(Limits::NATIVE);
    let mut first = FirstPass::new(GapOptions::default(), false);
    let mut events = 0u64;
    let ((), during) = count_allocs(|| {
        for chunk in data.chunks(4096) {
            let mut pos = 0;
            loop {
                let (s, n) = sc.scan(&chunk[pos..]).unwrap();
                pos += n;
                match s {
                    Scan::Event => {
                        events += 1;
                        first.add(&sc.event());
                    }
                    Scan::NeedsInput => break,
                }
            }
        }
    });
    assert_eq!(events, 420_000);
    // Four series of 70 000 samples, each grown by doubling (about 17 growths), and the
    // devices' list: nothing per event.
    assert!(
        during <= 4 * 20 + 4,
        "{during} allocations over {events} events"
    );
    let r = first.finish();
    let counters = r.counters.expect("counters");
    let found = counters.finish(
        flinch_core::join::Alignment::new(Some(1_764_000_000_000_000_000), None),
        5_000_000_000,
    );
    assert_eq!(found.report.devices.len(), 2);
    assert_eq!(found.report.devices[1].power_samples, 70_000);
    assert_eq!(found.report.counts, Default::default());
}

#[test]
fn the_scanner_reads_counter_args_without_allocating() {
    let data = doc(20_000);
    let mut sc = EventScanner::new(Limits::NATIVE);
    let mut sum = 0.0;
    let ((), during) = count_allocs(|| {
        // Odd chunks, so that many counters are cut between two and read by the resumable path.
        for chunk in data.chunks(777) {
            let mut pos = 0;
            loop {
                let (s, n) = sc.scan(&chunk[pos..]).unwrap();
                pos += n;
                match s {
                    Scan::Event => {
                        if let flinch_core::json::ArgValue::Number(v) = sc.event().arg {
                            sum += v;
                        }
                    }
                    Scan::NeedsInput => break,
                }
            }
        }
    });
    assert_eq!(during, 0);
    let want: f64 = (0..20_000)
        .map(|k| 2.0 * ((100 + k % 200) as f64 + 0.25 + (k % 100) as f64))
        .sum();
    assert_eq!(sum, want);
}
