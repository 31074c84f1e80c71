use super::*;
use crate::metrics::Format;
use crate::testutil::{Rng, for_each_split};
use crate::window::{WindowAnalyzer, WindowOptions};
use std::collections::BTreeMap;
use std::string::ToString;
use std::vec::Vec;

const HDR: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ,gpu_mem_used_MiB,gpu_throttle_reasons,host_cpu_pct,host_mem_used_MiB,host_mem_available_MiB,rapl_max_energy_range_uj,mark_thread,rapl_package-0_dram_uj\n";

fn gpus() -> Vec<GpuLabel> {
    std::vec![
        GpuLabel {
            index: 0,
            uuid: "GPU-a".to_string(),
            energy_counter: true,
        },
        GpuLabel {
            index: 1,
            uuid: "GPU-b".to_string(),
            energy_counter: false,
        },
    ]
}

fn zones() -> Vec<ZoneLabel> {
    std::vec![
        ZoneLabel {
            name: "package-0".to_string(),
            column: "rapl_energy_uj".to_string(),
            max_uj: Some(1_000_000),
        },
        ZoneLabel {
            name: "package-0/dram".to_string(),
            column: "rapl_package-0_dram_uj".to_string(),
            max_uj: None,
        },
    ]
}

fn sample(
    t: i64,
    gpu: u32,
    power: Option<f64>,
    energy_mj: Option<u64>,
    rapl: Option<(u64, u64)>,
) -> String {
    let p = power.map(|p| std::format!("{p}")).unwrap_or_default();
    let e = energy_mj.map(|e| e.to_string()).unwrap_or_default();
    let (r0, r1) = rapl
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or_default();
    std::format!("{t},0,SAMPLE,,{p},50,,,,{r0},{gpu},{e},,,,,,1000000,,{r1}\n")
}

fn mark(t: i64, label: &str, thread: Option<u64>) -> String {
    let th = thread.map(|t| t.to_string()).unwrap_or_default();
    std::format!("{t},0,MARK,{label},,,,,,,,,,,,,,,{th},\n")
}

/// A random recording: two GPUs every ~10 ms (GPU 0 with the energy counter), marks of a few
/// names (some on threads, some nested or overlapping), rows slightly out of order.
fn recording(rng: &mut Rng, stems: &[&str]) -> String {
    let mut rows: Vec<(i64, String)> = Vec::new();
    let mut t = 1_000_000_000i64;
    let mut energy = 5_000_000u64;
    let mut open: Vec<(usize, Option<u64>)> = Vec::new();
    for tick in 0..3000 {
        t += 9_000_000 + rng.below(2_000_000) as i64;
        if rng.below(200) == 0 {
            t += 5_500_000_000; // a gap past the maximum
        }
        let p0 = 50.0 + rng.below(30_000) as f64 / 100.0;
        energy += rng.below(4_000);
        let blank = rng.below(50) == 0;
        rows.push((
            t,
            sample(
                t,
                0,
                (!blank).then_some(p0),
                Some(energy),
                Some((tick * 997 % 1_000_000, tick * 3)),
            ),
        ));
        rows.push((t + 1000, sample(t + 1000, 1, Some(p0 / 2.0), None, None)));
        if rng.below(6) == 0 {
            // A mark somewhere in this tick, written up to 300 ms late.
            let tm = t - rng.below(9_000_000) as i64;
            let late = rng.below(300_000_000) as i64;
            let label = if !open.is_empty() && rng.below(2) == 0 {
                let (s, th) = open.remove(rng.below(open.len() as u64) as usize);
                (std::format!("{}_end", stems[s]), th)
            } else if open.len() < 20 {
                let s = rng.below(stems.len() as u64) as usize;
                let th = [None, Some(7), Some(9)][rng.below(3) as usize];
                open.push((s, th));
                let suffix = if rng.below(2) == 0 {
                    "_start"
                } else {
                    "_begin"
                };
                (std::format!("{}{suffix}", stems[s]), th)
            } else {
                continue;
            };
            rows.push((tm + late, mark(tm, &label.0, label.1)));
        }
    }
    // One last reading of each GPU well past the last mark closes every ended window.
    t += 6_000_000_000;
    rows.push((t, sample(t, 0, Some(60.0), Some(energy), None)));
    rows.push((t, sample(t, 1, Some(30.0), None, None)));
    rows.sort_by_key(|r| r.0);
    let mut s = HDR.to_string();
    rows.iter().for_each(|r| s.push_str(&r.1));
    s
}

fn live_over(chunks: &[&[u8]], opts: LiveOptions) -> LiveMetrics {
    let mut m = LiveMetrics::new(opts, &gpus(), &zones());
    let mut feed = LiveFeed::new(&zones());
    for c in chunks {
        feed.write(&mut m, c);
    }
    m.flush();
    m
}

/// `(windows, ns, energy per GPU)` per stem from `analyze --spans`: GPU 0 by its counter, GPU 1
/// by its power (the sources `gpus()` gives them).
fn analyze_pairs(csv: &str) -> BTreeMap<String, (u64, u128, Vec<f64>)> {
    let mut an = WindowAnalyzer::new(WindowOptions {
        spans: true,
        ..WindowOptions::default()
    });
    an.write(csv.as_bytes());
    let r = an.end();
    assert_eq!(r.rows.late_rows, 0);
    assert_eq!(r.rows.spans_dropped, 0);
    let mut out: BTreeMap<String, (u64, u128, Vec<f64>)> = BTreeMap::new();
    for s in r.spans.iter().filter(|s| s.kind == "pair") {
        let stem = crate::window::pair_start_stem(&s.start_label).unwrap();
        if stem.is_empty() {
            continue;
        }
        let e = out
            .entry(stem.to_string())
            .or_insert((0, 0, std::vec![0.0, 0.0]));
        e.0 += 1;
        e.1 += (s.t1_mono_ns - s.t0_mono_ns) as u128;
        e.2[0] += s.gpus[0].energy_counter_j.unwrap_or(0.0);
        e.2[1] += s.gpus[1].energy_edge_j.unwrap_or(0.0);
    }
    out
}

#[test]
fn each_window_has_the_figures_analyze_gives_its_span() {
    // One window per name: each name's counters are one span's figures, bit for bit.
    let mut rng = Rng::from_env(71);
    let stems: Vec<std::string::String> = (0..400).map(|i| std::format!("w{i}")).collect();
    let stems: Vec<&str> = stems.iter().map(|s| s.as_str()).collect();
    let mut checked = 0;
    for _ in 0..3 {
        let csv = recording(&mut rng, &stems);
        let want = analyze_pairs(&csv);
        let single: Vec<_> = want.iter().filter(|(_, v)| v.0 == 1).collect();
        let opts = LiveOptions {
            max_window_names: 1000,
            ..LiveOptions::default()
        };
        for_each_split(csv.as_bytes(), 2, rng.next_u64(), |chunks| {
            let m = live_over(chunks, opts);
            for (name, (n, ns, e)) in &single {
                let (gn, gns, ge) = m.totals(name).unwrap();
                assert_eq!((gn, gns), (*n, *ns), "{name}");
                assert_eq!(
                    ge[0].to_bits(),
                    e[0].to_bits(),
                    "{name}: {} vs {}",
                    ge[0],
                    e[0]
                );
                assert_eq!(
                    ge[1].to_bits(),
                    e[1].to_bits(),
                    "{name}: {} vs {}",
                    ge[1],
                    e[1]
                );
                checked += 1;
            }
        });
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn name_totals_sum_analyze_spans_and_names_past_the_cap_count_as_other() {
    let mut rng = Rng::from_env(72);
    let stems = ["prefill", "decode", "step 1", "step 2", "q\"x\\y"];
    for _ in 0..4 {
        let csv = recording(&mut rng, &stems);
        let want = analyze_pairs(&csv);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        let m = live_over(&[csv.as_bytes()], LiveOptions::default());
        for (name, (n, ns, e)) in &want {
            let (gn, gns, ge) = m.totals(name).unwrap();
            assert_eq!((gn, gns), (*n, *ns), "{name}");
            assert!(
                close(ge[0], e[0]) && close(ge[1], e[1]),
                "{name}: {ge:?} vs {e:?}"
            );
        }
        // Capped at 2 names: the first two names seen keep their series, the rest add up
        // under "(other)".
        let capped = live_over(
            &[csv.as_bytes()],
            LiveOptions {
                max_window_names: 2,
                ..LiveOptions::default()
            },
        );
        assert!(capped.used_names() <= 3);
        let mut sum = (0u64, 0u128, 0.0f64);
        for name in stems.iter().copied().chain([OTHER_WINDOW]) {
            if let Some((n, ns, e)) = capped.totals(name) {
                sum.0 += n;
                sum.1 += ns;
                sum.2 += e[1];
            }
        }
        let all = want.values().fold((0u64, 0u128, 0.0f64), |a, v| {
            (a.0 + v.0, a.1 + v.1, a.2 + v.2[1])
        });
        assert_eq!((sum.0, sum.1), (all.0, all.1));
        assert!(close(sum.2, all.2));
    }
}

#[test]
fn gpu_and_cpu_totals_from_known_readings() {
    // GPU 0: counter 1000 -> 4500 mJ with a reset (drop to 10) contributing nothing;
    // GPU 1: 100 W for 2 s (trapezoids), then 0 W.
    // RAPL: package wraps at 1e6 (900000 -> 100000 is +200000), dram decreases (a reset).
    let mut csv = HDR.to_string();
    let s = 1_000_000_000i64;
    csv += &sample(s, 0, Some(10.0), Some(1000), Some((900_000, 50)));
    csv += &sample(s, 1, Some(100.0), None, None);
    csv += &sample(
        s + 1_000_000_000,
        0,
        Some(10.0),
        Some(3000),
        Some((100_000, 80)),
    );
    csv += &sample(s + 1_000_000_000, 1, Some(100.0), None, None);
    csv += &sample(
        s + 2_000_000_000,
        0,
        Some(10.0),
        Some(10),
        Some((300_000, 20)),
    );
    csv += &sample(s + 2_000_000_000, 1, Some(100.0), None, None);
    csv += &sample(
        s + 3_000_000_000,
        0,
        Some(10.0),
        Some(2510),
        Some((300_001, 25)),
    );
    csv += &sample(s + 3_000_000_000, 1, Some(0.0), None, None);
    let m = live_over(&[csv.as_bytes()], LiveOptions::default());
    let mut text = std::string::String::new();
    let mut e = Exposition::new(&mut text, Format::OpenMetrics);
    m.write(&mut e).unwrap();
    e.finish().unwrap();
    for want in [
        "flinch_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-a\",source=\"counter\"} 4.5\n",
        "flinch_gpu_energy_joules_total{gpu=\"1\",uuid=\"GPU-b\",source=\"power\"} 250\n",
        "flinch_gpu_power_watts{gpu=\"1\",uuid=\"GPU-b\"} 0\n",
        "flinch_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-a\"} 0.5\n",
        "flinch_cpu_energy_joules_total{zone=\"package-0\"} 0.400001\n",
        "flinch_cpu_energy_joules_total{zone=\"package-0/dram\"} 0.000035\n",
        "flinch_sampler_missed_ticks_total 0\n",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn a_window_name_has_series_from_its_start_and_counts_at_completion() {
    let mut csv = HDR.to_string();
    let s = 1_000_000_000i64;
    let ms = 1_000_000i64;
    for k in 0..=100 {
        let t = s + k * 10 * ms;
        if k == 10 {
            csv += &mark(t - 5 * ms, "fwd_start", None);
        }
        if k == 60 {
            csv += &mark(t - 5 * ms, "fwd_end", None);
        }
        csv += &sample(t, 0, Some(200.0), Some(1000 + 2000 * k as u64), None);
        csv += &sample(t, 1, Some(200.0), None, None);
    }
    let render = |m: &LiveMetrics| {
        let mut text = std::string::String::new();
        let mut e = Exposition::new(&mut text, Format::OpenMetrics);
        m.write(&mut e).unwrap();
        e.finish().unwrap();
        text
    };
    // Before the end mark leaves the reorder buffer: the series exist, at 0.
    let mut m = LiveMetrics::new(LiveOptions::default(), &gpus(), &zones());
    let mut feed = LiveFeed::new(&zones());
    let cut = csv.find("fwd_end").unwrap();
    feed.write(&mut m, &csv.as_bytes()[..cut]);
    m.flush();
    let text = render(&m);
    assert!(
        text.contains("flinch_windows_total{window=\"fwd\"} 0\n"),
        "{text}"
    );
    assert!(text.contains("flinch_window_energy_joules_total{window=\"fwd\",gpu=\"1\"} 0\n"));
    feed.write(&mut m, &csv.as_bytes()[cut..]);
    m.flush();
    let text = render(&m);
    // 500 ms at 200 W on the power GPU; the counter GPU: 2000 mJ per 10 ms over 500 ms.
    assert!(
        text.contains("flinch_windows_total{window=\"fwd\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("flinch_window_seconds_total{window=\"fwd\"} 0.5\n"),
        "{text}"
    );
    let energy = |gpu: &str| -> f64 {
        let key =
            std::format!("flinch_window_energy_joules_total{{window=\"fwd\",gpu=\"{gpu}\"}} ");
        let line = text.lines().find(|l| l.starts_with(&key)).unwrap();
        line[key.len()..].parse().unwrap()
    };
    assert!((energy("1") - 100.0).abs() < 1e-9, "{}", energy("1"));
    assert!((energy("0") - 100.0).abs() < 1e-9, "{}", energy("0"));
}

#[test]
fn open_windows_past_the_cap_evict_the_oldest() {
    let opts = LiveOptions {
        max_open_windows: 4,
        ..LiveOptions::default()
    };
    let mut m = LiveMetrics::new(opts, &gpus(), &zones());
    let ms = 1_000_000i64;
    // 10 starts that never end (a leak), then one window that does.
    for k in 0..10 {
        m.mark(k * ms, "leak_start", None);
    }
    m.mark(20 * ms, "ok_start", None);
    m.sample(
        25 * ms,
        1,
        GpuSample {
            power_w: Some(10.0),
            ..GpuSample::default()
        },
    );
    m.sample(
        35 * ms,
        1,
        GpuSample {
            power_w: Some(10.0),
            ..GpuSample::default()
        },
    );
    m.mark(30 * ms, "ok_end", None);
    m.sample(
        45 * ms,
        1,
        GpuSample {
            power_w: Some(10.0),
            ..GpuSample::default()
        },
    );
    m.flush();
    assert_eq!(m.windows_dropped, 7);
    assert_eq!(
        m.totals("ok").map(|t| (t.0, t.1)),
        Some((1, 10 * ms as u128))
    );
    assert_eq!(m.totals("leak").map(|t| t.0), Some(0));
    // A late row (older than one released) is counted, not used.
    m.mark(0, "ok_end", None);
    assert_eq!(m.late_rows, 1);
}

#[test]
fn the_other_bucket_has_series_from_the_first_name_past_the_cap() {
    let opts = LiveOptions {
        max_window_names: 1,
        ..LiveOptions::default()
    };
    let mut m = LiveMetrics::new(opts, &gpus(), &zones());
    m.mark(10, "a_start", None);
    assert_eq!(m.totals(OTHER_WINDOW), None);
    m.mark(20, "b_start", None);
    m.flush();
    assert_eq!(m.totals(OTHER_WINDOW).map(|t| (t.0, t.1)), Some((0, 0)));
    assert_eq!(m.used_names(), 2);
}

/// A host without GPUs: SAMPLE rows carry RAPL (or nothing), never `gpu_index`.
fn host_only_recording(with_rapl: bool) -> String {
    let mut s = HDR.to_string();
    let ms = 1_000_000i64;
    let marks = [
        (105, "prefill_start"),
        (300, "prefill_end"),
        (420, "prefill_start"),
        (510, "prefill_end"),
        (600, "prefill_start"),
        (777, "prefill_end"),
    ];
    // RAPL: 3 W on the package zone (30,000 µJ per 10 ms), wrapping at 1,000,000 µJ.
    let mut uj = 900_000u64;
    for k in 0..=100i64 {
        let t = 1_000 * ms + k * 10 * ms;
        for (at, m) in marks {
            if at / 10 == k {
                s += &mark(1_000 * ms + at * ms, m, None);
            }
        }
        let rapl = if with_rapl {
            std::format!("{uj}")
        } else {
            std::string::String::new()
        };
        s += &std::format!("{t},0,SAMPLE,,,,,,,{rapl},,,,,,,,1000000,,\n");
        uj = (uj + 30_000) % 1_000_000;
    }
    s
}

#[test]
fn without_gpus_windows_complete_with_their_rapl_energy() {
    for with_rapl in [true, false] {
        let csv = host_only_recording(with_rapl);
        let mut m = LiveMetrics::new(LiveOptions::default(), &[], &zones());
        let mut feed = LiveFeed::new(&zones());
        feed.write(&mut m, csv.as_bytes());
        // No flush (a running recorder never flushes): the last end mark is 223 ms before the
        // last row, inside the 2 s reorder horizon, so nothing is complete yet. Rows 2.6 s
        // later, still without a GPU, must release and complete every window.
        let (n, ns, _) = m.totals("prefill").unwrap();
        assert_eq!((n, ns), (0, 0), "the last end is inside the horizon");
        let mut more = std::string::String::new();
        for k in 1..=260i64 {
            let t = 2_000_000_000 + k * 10_000_000;
            more += &std::format!("{t},0,SAMPLE,,,,,,,,,,,,,,,1000000,,\n");
        }
        feed.write(&mut m, more.as_bytes());
        let (n, ns, _) = m.totals("prefill").unwrap();
        assert_eq!(n, 3, "with_rapl={with_rapl}");
        assert_eq!(ns, (195 + 90 + 177) * 1_000_000);
        // The package zone's energy per window equals `analyze`'s RAPL figure, span by span.
        let mut an = WindowAnalyzer::new(WindowOptions {
            spans: true,
            ..WindowOptions::default()
        });
        an.write(csv.as_bytes());
        let r = an.end();
        let want: f64 = r
            .spans
            .iter()
            .filter(|s| s.kind == "pair")
            .map(|s| s.rapl.as_ref().map_or(0.0, |r| r.energy_j))
            .sum();
        let got = m
            .names
            .iter()
            .find(|x| x.used && x.name == "prefill")
            .unwrap()
            .cpu_energy_j[0];
        if with_rapl {
            assert!((want - 0.462 * 3.0).abs() < 1e-9, "{want}");
        }
        assert_eq!(got.to_bits(), want.to_bits(), "{got} vs {want}");
    }
}
