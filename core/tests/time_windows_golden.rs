//! One pass of `WindowedStats` over a telemetry file must give what the Python reference's
//! `telemetry_summary` gives when it re-reads the file once per window (golden files generated
//! by `tests/data/gen_telemetry_golden.py`; all values bit-identical).

use flinch_core::stats::Num;
use flinch_core::time_windows::{StatsSink, Window, WindowedStats, WindowedStatsIn};
use serde_json::Value;

const SERIES: [&str; 9] = [
    "host_available_bytes",
    "host_used_bytes",
    "host_cpu_percent",
    "gpu_memory_mib",
    "gpu_temperature_c",
    "gpu_power_w",
    "gpu_sm_clock_mhz",
    "gpu_mem_clock_mhz",
    "gpu_utilization_percent",
];
/// gpu_csv field index of series 3.. (the reference's table).
const GPU_FIELDS: [(usize, usize); 6] = [(2, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8)];

fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64()?),
        }),
        _ => None,
    }
}

fn feed<A: StatsSink, W, C>(ws: &mut WindowedStatsIn<A, W, C>, lines: &str)
where
    W: AsRef<[flinch_core::time_windows::WindowState<A>]>
        + AsMut<[flinch_core::time_windows::WindowState<A>]>,
    C: AsRef<[flinch_core::time_windows::SeriesState<A>]>
        + AsMut<[flinch_core::time_windows::SeriesState<A>]>,
{
    for line in lines.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        ws.begin_row(num(&row["unix"]).unwrap());
        for (s, key) in [(0, "available"), (1, "used")] {
            match num(&row["host_memory"][key]) {
                Some(v) => ws.push(s, v),
                None => ws.push_missing(s),
            }
        }
        match num(&row["host_cpu_percent"]) {
            Some(v) => ws.push(2, v),
            None => ws.push_missing(2),
        }
        let csv = row["gpu_csv"].as_str().unwrap_or("");
        let fields: Vec<&str> = csv.split(',').collect();
        if fields.len() != 10 {
            continue;
        }
        for (index, series) in GPU_FIELDS {
            let Ok(v) = fields[index].trim().parse::<f64>() else {
                continue;
            };
            if !v.is_finite() {
                continue;
            }
            ws.push(series, v);
            if index == 5 {
                ws.push_power(v);
            }
        }
    }
}

fn window(pair: &Value) -> Window {
    Window {
        start_s: num(&pair[0]),
        stop_s: num(&pair[1]),
        stop_exclusive: false,
    }
}

#[test]
fn one_pass_equals_the_reference_per_window() {
    let expected: Value =
        serde_json::from_str(include_str!("data/telemetry_golden.expected.json")).unwrap();
    let windows: Vec<Window> = expected["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(window)
        .collect();
    let mut ws = WindowedStats::exact(&windows, SERIES.len());
    feed(&mut ws, include_str!("data/telemetry_golden.jsonl"));
    for (w, want) in expected["results"].as_array().unwrap().iter().enumerate() {
        let s = ws.summary(w).unwrap();
        assert_eq!(Value::from(s.samples), want["samples"]);
        // Python's int/float kind too: `2` is not `2.0`.
        assert_eq!(serde_json::to_value(s.span_s).unwrap(), want["span_s"]);
        assert_eq!(
            serde_json::to_value(s.sampling_gap_s).unwrap(),
            want["sampling_gap_s"]
        );
        assert_eq!(Value::from(s.gaps_over_max), want["gaps_over_5s"]);
        assert_eq!(
            s.energy_j,
            want["whole_gpu_energy_j_over_observed_intervals"].as_f64()
        );
        assert_eq!(
            serde_json::to_value(s.energy_observed_duration_s).unwrap(),
            want["energy_observed_duration_s"]
        );
        let metrics = want["metrics"].as_object().unwrap();
        for (i, name) in SERIES.iter().enumerate() {
            let cell = ws.cell(w, i).unwrap();
            assert_eq!(cell.appended() > 0, metrics.contains_key(*name), "{name}");
            if cell.appended() > 0 {
                let got = serde_json::to_value(cell.stats()).unwrap();
                assert_eq!(&got, &metrics[*name], "window {w} {name}");
            }
        }
    }
}

#[test]
fn bounded_one_pass_keeps_counts_energy_and_exact_moments() {
    let expected: Value =
        serde_json::from_str(include_str!("data/telemetry_golden.expected.json")).unwrap();
    let windows: Vec<Window> = expected["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(window)
        .collect();
    let mut ws = WindowedStats::bounded(&windows, SERIES.len(), 2048);
    feed(&mut ws, include_str!("data/telemetry_golden.jsonl"));
    for (w, want) in expected["results"].as_array().unwrap().iter().enumerate() {
        let s = ws.summary(w).unwrap();
        assert_eq!(Value::from(s.samples), want["samples"]);
        assert_eq!(
            s.energy_j,
            want["whole_gpu_energy_j_over_observed_intervals"].as_f64()
        );
        for (i, name) in SERIES.iter().enumerate() {
            let cell = ws.cell(w, i).unwrap();
            let err = cell.sink().quantile_relative_error();
            let got = cell.stats();
            let m = &want["metrics"][*name];
            assert_eq!(Value::from(got.n), m["n"]);
            assert_eq!(got.mean, m["mean"].as_f64());
            assert_eq!(serde_json::to_value(got.max).unwrap(), m["max"]);
            for (key, value) in [
                ("p50", got.p50),
                ("p90", got.p90),
                ("p95", got.p95),
                ("p99", got.p99),
            ] {
                if let (Some(g), Some(x)) = (value, m[key].as_f64()) {
                    assert!(
                        (g - x).abs() <= err * x.abs() * (1.0 + 1e-12),
                        "{name} {key}"
                    );
                }
            }
        }
    }
}
