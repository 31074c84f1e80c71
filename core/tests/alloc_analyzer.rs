//! Counting-allocator proof for `flinch_core::analyzer`: after warm-up, feeding more of a
//! `.json.gz` trace or of a trace.csv through the analyzer (gzip framing, kind detection, and the
//! engines behind it) allocates nothing per chunk, event or row: only the amortized doubling of
//! the exact per-op duration lists remains for traces, O(log n) in all.
mod common;

use std::io::Write;

use common::counting_alloc::count_allocs;

use flinch_core::Exactness;
use flinch_core::analyzer::{Analyzer, AnalyzerOptions};

fn trace_doc(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    for k in 0..n {
        if k > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"c{}\", \"name\": \"op{}\", \"pid\": 1, \"tid\": {}, \
             \"ts\": {}.{:03}, \"dur\": {}.5, \"args\": {{\"id\": {k}}}}}",
            k % 5,
            k % 40,
            k % 3,
            1_712_195_495_000_000u64 + k as u64 * 3,
            k % 1000,
            k % 90
        ));
    }
    s.push_str("\n]}");
    s.into_bytes()
}

fn csv_doc(rows: usize) -> Vec<u8> {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,\
         gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n",
    );
    s.push_str("1000000,1,MARK,begin,,,,,,\n");
    for k in 0..rows {
        let t = 2_000_000 + k as u64 * 10_000_000;
        s.push_str(&format!(
            "{t},{t},SAMPLE,,{}.{},{},{},1410,{},{}\n",
            100 + k % 200,
            k % 10,
            k % 100,
            k % 50,
            40 + k % 30,
            k * 1000
        ));
    }
    s.into_bytes()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Feeds `warm` then `rest` in 4 KiB chunks; returns the allocations made while feeding `rest`.
fn allocs_after_warm_up(a: &mut Analyzer, warm: &[u8], rest: &[u8]) -> u64 {
    for c in warm.chunks(4096) {
        a.write(c).unwrap();
    }
    let ((), n) = count_allocs(|| {
        for c in rest.chunks(4096) {
            a.write(c).unwrap();
        }
    });
    n
}

#[test]
fn analyzer_allocates_nothing_per_chunk_event_or_row_after_warm_up() {
    // A gzip trace: the first fifth warms up every table (all 40 (cat, name) ops seen).
    let events = 40_000;
    let gz = gzip(&trace_doc(events));
    let split = gz.len() / 5;
    for preset in [Exactness::Exact, Exactness::Bounded] {
        let options = AnalyzerOptions {
            limits: preset,
            ..AnalyzerOptions::default()
        };
        let mut a = Analyzer::new(options);
        let n = allocs_after_warm_up(&mut a, &gz[..split], &gz[split..]);
        eprintln!("trace {preset:?}: {n} allocations after warm-up");
        // 32 000 events after warm-up over 40 ops (200 -> 1000 values each): two doublings of
        // each op's exact list (measured: 80), nothing per event or chunk.
        assert!(
            n <= 3 * 40,
            "{preset:?}: {n} allocations for {} events",
            events * 4 / 5
        );
        let json = a.end().unwrap();
        assert!(json.contains("\"largest_ops_by_duration_sum\""));
    }

    // A trace.csv, recording level (spans, series): zero allocations per row after warm-up.
    let csv = csv_doc(60_000);
    let split = csv.len() / 10;
    let mut a = Analyzer::new(AnalyzerOptions::default());
    let n = allocs_after_warm_up(&mut a, &csv[..split], &csv[split..]);
    eprintln!("csv: {n} allocations after warm-up");
    assert!(n <= 8, "{n} allocations for 54 000 rows");
    assert!(a.end().unwrap().contains("\"marks\""));
}
