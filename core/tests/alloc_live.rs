//! The live metrics (`record --metrics`) hold a fixed set of counters: once the reorder buffer
//! has filled to its horizon, rows, marks of ever new window names and the exposition itself
//! allocate nothing (counted by the shared counting allocator, `tests/common/counting_alloc.rs`).
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::metrics::{
    Exposition, Format, GpuLabel, LiveMetrics, LiveOptions, ZoneLabel, live::LiveFeed,
};

const HDR: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ,gpu_mem_used_MiB,gpu_throttle_reasons,host_cpu_pct,host_mem_used_MiB,host_mem_available_MiB,rapl_max_energy_range_uj,mark_thread\n";

/// Ticks `from..from + n`, every 10 ms, two GPUs; a window `step <k>` (a new name each time)
/// every 10th tick, ending 5 ticks later.
fn rows(from: u64, n: u64) -> String {
    let mut s = String::new();
    for k in from..from + n {
        let t = 1_000_000_000 + k * 10_000_000;
        if k % 10 == 0 {
            s.push_str(&format!(
                "{},0,MARK,step {}_start,,,,,,,,,,,,,,,\n",
                t - 1,
                k / 10
            ));
        }
        if k % 10 == 5 {
            s.push_str(&format!(
                "{},0,MARK,step {}_end,,,,,,,,,,,,,,,\n",
                t - 1,
                k / 10
            ));
        }
        for g in 0..2 {
            s.push_str(&format!(
                "{},{t},SAMPLE,,{}.5,{},,,,{},{g},{},,,,,,262143328850,\n",
                t + g,
                100 + k % 300,
                k % 101,
                (k * 12_345) % 262_143_328_850,
                k * 7
            ));
        }
    }
    s
}

#[test]
fn no_allocation_per_row_mark_or_scrape_in_steady_state() {
    let gpus = [
        GpuLabel {
            index: 0,
            uuid: "GPU-0".into(),
            energy_counter: true,
        },
        GpuLabel {
            index: 1,
            uuid: "GPU-1".into(),
            energy_counter: false,
        },
    ];
    let zones = [ZoneLabel {
        name: "package-0".into(),
        column: "rapl_energy_uj".into(),
        max_uj: Some(262_143_328_850),
    }];
    let mut m = LiveMetrics::new(LiveOptions::default(), &gpus, &zones);
    let mut feed = LiveFeed::new(&zones);
    feed.write(&mut m, HDR.as_bytes());
    // Warm-up: the reorder buffer fills to its 2 s horizon; the 64 names fill up.
    feed.write(&mut m, rows(0, 2_000).as_bytes());
    let steady = rows(2_000, 50_000);
    let mut text = String::with_capacity(64 * 1024);
    let ((), during) = count_allocs(|| {
        for chunk in steady.as_bytes().chunks(65_536) {
            feed.write(&mut m, chunk);
        }
        let mut e = Exposition::new(&mut text, Format::OpenMetrics);
        m.write(&mut e).unwrap();
        e.finish().unwrap();
    });
    assert_eq!(
        during, 0,
        "allocations over 100000 rows and 5000 windows of new names"
    );
    // 64 names of their own and "(other)": 5200 windows in all, minus those still held.
    assert_eq!(text.matches("flinch_windows_total{").count(), 65);
    let other = text
        .lines()
        .find_map(|l| l.strip_prefix("flinch_windows_total{window=\"(other)\"} "))
        .unwrap();
    let other: u64 = other.parse().unwrap();
    assert!((5_000..5_200 - 64).contains(&other), "{other}");
}
