//! No allocation per row in steady state: the trace.csv reader and the window analyzer, counted
//! by the shared counting global allocator (`tests/common/counting_alloc.rs`).
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::window::{WindowAnalyzer, WindowOptions, WindowSelect};

fn rows(from: u64, n: u64) -> String {
    let mut s = String::new();
    for k in from..from + n {
        let t = 1_000_000_000 + k * 10_000_000;
        for g in 0..2 {
            s.push_str(&format!(
                "{},{},SAMPLE,,{}.5,{},1,1400,60,{},{g},{}\n",
                t + g,
                t,
                100 + k % 300,
                k % 101,
                k * 1000,
                k * 7
            ));
        }
    }
    s
}

#[test]
fn no_allocation_per_row_in_steady_state() {
    let opts = WindowOptions {
        select: Some(WindowSelect {
            start: "a".into(),
            end: "b".into(),
            occurrence: 1,
        }),
        spans: true,
        series_points: 2000,
        ..WindowOptions::default()
    };
    let mut an = WindowAnalyzer::new(opts);
    let head = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n1000000000,0,MARK,a,,,,,,,,\n";
    an.write(head.as_bytes());
    // Warm-up: GPUs appear, the window opens, the reorder buffer fills to its horizon.
    an.write(rows(0, 2_000).as_bytes());
    let steady = rows(2_000, 50_000);
    let ((), during) = count_allocs(|| {
        for chunk in steady.as_bytes().chunks(65_536) {
            an.write(chunk);
        }
    });
    assert_eq!(an.rows(), 1 + 2 * 52_000);
    assert_eq!(during, 0, "allocations while reading 100000 sample rows");
    let r = an.end();
    assert_eq!(r.rows.samples, 104_000);
}

/// The fixed-memory analyzer never allocates: construction, both passes and the result.
#[test]
fn fixed_window_analyzer_never_allocates() {
    use flinch_core::csv::TraceCsvReader;
    use flinch_core::window::{FixedBuffers, FixedOptions, FixedWindowAnalyzer, Pass};
    let mut text = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n",
    );
    text.push_str(&rows(0, 300));
    text.push_str("4000000000,0,MARK,a,,,,,,,,\n");
    text.push_str(&rows(300, 400));
    text.push_str("8000000000,0,MARK,b,,,,,,,,\n");
    text.push_str(&rows(700, 300));
    let mut bufs = Box::new(FixedBuffers::<8, 256>::new());
    let mut reader = Box::new(TraceCsvReader::new());
    let (r, during) = count_allocs(|| {
        let mut an = FixedWindowAnalyzer::new(FixedOptions::new(b"a", b"b"), &mut bufs);
        let mut passes = 0;
        loop {
            passes += 1;
            for chunk in text.as_bytes().chunks(1024) {
                an.write(&mut reader, chunk);
            }
            if an.end_pass(&mut reader) == Pass::Done {
                break;
            }
        }
        (an.result(), passes)
    });
    assert_eq!(during, 0, "allocations in the fixed analyzer");
    let (r, passes) = r;
    assert_eq!(passes, 2);
    assert_eq!(r.rows.samples, 2_000);
    let w = r.window.expect("the window");
    // Both GPUs from 4.0 s to 7.99 s, and GPU 0 at the end mark (8.0 s).
    assert_eq!(w.reference.samples, 801);
    assert!(w.verdict.is_some());
}
