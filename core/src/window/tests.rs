//! Window analysis tests: the reference-exact figures against a naive oracle that does what
//! `analyze_trace.py` does (load all rows, sort, trapezoid), in every chunk split.
use super::*;
use crate::testutil::{Rng, for_each_split};
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

fn analyze(chunks: &[&[u8]], opts: &WindowOptions) -> RecordingAnalysis {
    let mut a = WindowAnalyzer::new(opts.clone());
    for c in chunks {
        a.write(c);
    }
    a.end()
}

pub(super) const HDR: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n";

/// (t0, t1, and (energy, samples, avg util) when at least two samples).
type OracleOut = (i64, i64, Option<(f64, u64, Option<f64>)>);

/// What analyze_trace.py computes: (t0, t1, Option<(energy, n, avg_util)>) or its error text.
fn oracle(data: &str, start: &str, end: &str, gpu: Option<i64>) -> Result<OracleOut, String> {
    let mut rows: Vec<Vec<&str>> = Vec::new();
    for line in data.lines().skip(1) {
        if line.is_empty() {
            continue;
        }
        rows.push(line.split(',').collect());
    }
    let find = |label: &str| {
        rows.iter()
            .find(|r| r.get(2) == Some(&"MARK") && r.get(3) == Some(&label))
            .map(|r| r[0].parse::<i64>().unwrap())
    };
    let (t0, t1) = (find(start), find(end));
    let (t0, t1) = match (t0, t1) {
        (Some(a), Some(b)) if b > a => (a, b),
        (Some(_), Some(_)) => return Err("End MARK must be after start MARK".into()),
        _ => {
            let f = |t: Option<i64>| t.map_or("None".to_string(), |v| v.to_string());
            return Err(format!("Missing MARK(s). start={} end={}", f(t0), f(t1)));
        }
    };
    let mut s: Vec<(i64, f64, Option<f64>)> = rows
        .iter()
        .filter(|r| r.get(2) == Some(&"SAMPLE"))
        .filter(|r| {
            gpu.is_none_or(|g| r.get(10).and_then(|x| x.parse::<i64>().ok()).unwrap_or(0) == g)
        })
        .filter_map(|r| {
            let t: i64 = r[0].parse().unwrap();
            let p = r.get(4).and_then(|x| x.parse::<f64>().ok())?;
            (t0 <= t && t <= t1).then(|| (t, p, r.get(5).and_then(|x| x.parse::<f64>().ok())))
        })
        .collect();
    s.sort_by_key(|x| x.0);
    if s.len() < 2 {
        return Ok((t0, t1, None));
    }
    let (mut e, mut us, mut un) = (0.0, 0.0, 0u64);
    for w in s.windows(2) {
        e += 0.5 * (w[0].1 + w[1].1) * ((w[1].0 - w[0].0) as f64 / 1e9);
        if let Some(u) = w[0].2 {
            us += u;
            un += 1;
        }
    }
    Ok((
        t0,
        t1,
        Some((e, s.len() as u64, (un > 0).then(|| us / un as f64))),
    ))
}

/// A recording: several GPUs, blanks, marks written late (earlier timestamps than samples
/// before them in the file, within the horizon), repeated headers and labels.
pub(super) fn random_recording(rng: &mut Rng) -> String {
    let mut s = String::from(HDR);
    let gpus = 1 + rng.below(3);
    let mut t = 1_000_000_000i64;
    let mut pending: Vec<(i64, String)> = Vec::new();
    let mut energy = [0f64; 3];
    for tick in 0..(20 + rng.below(200)) {
        t += 5_000_000 + rng.below(10_000_000) as i64;
        for g in 0..gpus {
            let tg = t + g as i64 * 1000;
            let p = if rng.below(8) == 0 {
                String::new()
            } else {
                format!("{}", 50 + rng.below(500))
            };
            let u = if rng.below(8) == 0 {
                String::new()
            } else {
                format!("{}", rng.below(101))
            };
            energy[g as usize] += 3.0;
            let rapl = if g == 0 {
                format!("{}", tick * 1000)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{tg},{},SAMPLE,,{p},{u},1,1400,60,{rapl},{g},{}\n",
                tg + 7,
                energy[g as usize]
            ));
        }
        if rng.below(6) == 0 {
            // A mark stamped up to 30 ms earlier, written now.
            let label = ["a", "b", "c", "x_start", "x_end"][rng.below(5) as usize];
            pending.push((t - rng.below(30_000_000) as i64, label.into()));
        }
        if rng.below(3) == 0 {
            for (tm, l) in pending.drain(..) {
                s.push_str(&format!("{tm},{},MARK,{l},,,,,,,,\n", tm + 3));
            }
        }
        if rng.below(50) == 0 {
            s.push_str(HDR);
        }
    }
    s
}

#[test]
fn reference_figures_match_the_oracle_in_every_split() {
    let mut rng = Rng::from_env(21);
    let mut checked = 0;
    for _ in 0..60 {
        let data = random_recording(&mut rng);
        let (start, end) = [
            ("a", "b"),
            ("b", "a"),
            ("a", "c"),
            ("x_start", "x_end"),
            ("a", "zz"),
        ][rng.below(5) as usize];
        let gpu = if rng.below(2) == 0 {
            None
        } else {
            Some(rng.below(2) as i64)
        };
        let want = oracle(&data, start, end, gpu);
        let opts = WindowOptions {
            select: Some(WindowSelect {
                start: start.into(),
                end: end.into(),
                occurrence: 1,
            }),
            gpu,
            spans: true,
            series_points: 100,
            ..WindowOptions::default()
        };
        for_each_split(data.as_bytes(), 2, rng.next_u64(), |chunks| {
            let r = analyze(chunks, &opts);
            assert_eq!(r.rows.late_rows, 0);
            let sel = r.selection.as_ref().unwrap();
            match &want {
                Err(e) => assert_eq!(
                    sel.error().map(|e| e.to_string()).as_deref(),
                    Some(e.as_str())
                ),
                Ok((t0, t1, fig)) => {
                    assert_eq!(sel.error(), None);
                    let w = r.window.as_ref().unwrap();
                    assert_eq!((w.t0_mono_ns, w.t1_mono_ns), (*t0, *t1));
                    let got = w.reference;
                    match fig {
                        None => assert_eq!(got.energy_j, None),
                        Some((e, n, u)) => {
                            assert_eq!(got.energy_j.map(f64::to_bits), Some(e.to_bits()));
                            assert_eq!(got.samples, *n);
                            assert_eq!(got.avg_util_pct.map(f64::to_bits), u.map(f64::to_bits));
                        }
                    }
                    checked += 1;
                }
            }
        });
    }
    assert!(checked > 20, "too few windows checked: {checked}");
}

#[test]
fn spans_cover_consecutive_marks_and_pairs() {
    let data = format!(
        "{HDR}10,0,SAMPLE,,100,50,,,,,0,\n20,0,MARK,x_start,,,,,,,,\n30,0,SAMPLE,,100,50,,,,,0,\n40,0,MARK,begin,,,,,,,,\n50,0,SAMPLE,,300,90,,,,,0,\n60,0,MARK,x_end,,,,,,,,\n70,0,SAMPLE,,100,10,,,,,0,\n80,0,MARK,end,,,,,,,,\n90,0,SAMPLE,,100,10,,,,,0,\n"
    );
    let opts = WindowOptions {
        spans: true,
        ..WindowOptions::default()
    };
    for_each_split(data.as_bytes(), 3, 1, |chunks| {
        let r = analyze(chunks, &opts);
        let got: Vec<(&str, &str, &str, i64, i64)> = r
            .spans
            .iter()
            .map(|s| {
                (
                    s.kind,
                    s.start_label.as_str(),
                    s.end_label.as_str(),
                    s.t0_mono_ns,
                    s.t1_mono_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("pair", "x_start", "x_end", 20, 60),
                ("between", "x_start", "begin", 20, 40),
                ("pair", "begin", "end", 40, 80),
                ("between", "begin", "x_end", 40, 60),
                ("between", "x_end", "end", 60, 80),
            ]
        );
        // Edge energy over [20, 40]: 100 W over 20..30, then 100 → 200 W (interpolated at 40).
        let e = r.spans[1].gpus[0].energy_edge_j.unwrap();
        assert!((e - (100.0 * 10e-9 + 150.0 * 10e-9)).abs() < 1e-15, "{e}");
        assert_eq!(r.marks.len(), 4);
    });
}

/// A pair whose start and end marks are consecutive is that stretch too: listed once, as the
/// `pair`, and it takes one place under `max_spans`.
#[test]
fn an_adjacent_pair_is_listed_once_as_the_pair() {
    let data = format!(
        "{HDR}10,0,SAMPLE,,100,50,,,,,0,\n20,0,MARK,a_start,,,,,,,,\n30,0,SAMPLE,,100,50,,,,,0,\n40,0,MARK,a_end,,,,,,,,\n50,0,SAMPLE,,300,90,,,,,0,\n60,0,MARK,b,,,,,,,,\n70,0,SAMPLE,,100,10,,,,,0,\n80,0,MARK,begin,,,,,,,,\n90,0,MARK,end,,,,,,,,\n95,0,SAMPLE,,100,10,,,,,0,\n"
    );
    let spans = |r: &RecordingAnalysis| -> Vec<(&'static str, String, String, i64, i64)> {
        r.spans
            .iter()
            .map(|s| {
                (
                    s.kind,
                    s.start_label.clone(),
                    s.end_label.clone(),
                    s.t0_mono_ns,
                    s.t1_mono_ns,
                )
            })
            .collect()
    };
    let opts = WindowOptions {
        spans: true,
        ..WindowOptions::default()
    };
    let s = |k, a: &str, b: &str, t0, t1| (k, a.to_string(), b.to_string(), t0, t1);
    for_each_split(data.as_bytes(), 3, 1, |chunks| {
        let r = analyze(chunks, &opts);
        assert_eq!(
            spans(&r),
            [
                s("pair", "a_start", "a_end", 20, 40),
                s("between", "a_end", "b", 40, 60),
                s("between", "b", "begin", 60, 80),
                s("pair", "begin", "end", 80, 90),
            ]
        );
        assert_eq!(r.rows.spans_dropped, 0);
    });
    // Two places: the first two spans, none of them lost to the stretches listed as pairs.
    let r = analyze(
        &[data.as_bytes()],
        &WindowOptions {
            limits: Limits {
                max_spans: 2,
                ..Limits::EXACT
            },
            ..opts.clone()
        },
    );
    assert_eq!(
        spans(&r),
        [
            s("pair", "a_start", "a_end", 20, 40),
            s("between", "a_end", "b", 40, 60),
        ]
    );
    assert_eq!(r.rows.spans_dropped, 2);
    // The streamed passes agree, and pass 3 waits for no span it will never see.
    for hold in [0, 1, 2] {
        let (got, _) = analyze_streamed(&[data.as_bytes()], &opts, hold);
        assert_eq!(got.to_json(), analyze(&[data.as_bytes()], &opts).to_json());
    }
}

#[test]
fn overlapping_same_name_pairs_pair_by_mark_thread() {
    // Threads 7 and 9 both run `step`, overlapping: 7 over [10, 40], 9 over [20, 60]; thread 7
    // nests a second `step` over [25, 30]. Unkeyed marks (no mark_thread) pair among themselves.
    let hdr = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_index,mark_thread\n";
    let rows = [
        "10,0,MARK,step_start,,,7",
        "15,0,MARK,x_start,,,",
        "20,0,MARK,step_start,,,9",
        "25,0,MARK,step_start,,,7",
        "30,0,MARK,step_end,,,7",
        "40,0,MARK,step_end,,,7",
        "45,0,MARK,x_end,,,",
        "50,0,MARK,x_end,,,9",
        "60,0,MARK,step_end,,,9",
    ];
    let data = format!("{hdr}{}\n", rows.join("\n"));
    let opts = WindowOptions {
        spans: true,
        ..WindowOptions::default()
    };
    for_each_split(data.as_bytes(), 3, 1, |chunks| {
        let r = analyze(chunks, &opts);
        let mut pairs: Vec<(&str, Option<u64>, i64, i64)> = r
            .spans
            .iter()
            .filter(|s| s.kind == "pair")
            .map(|s| (s.start_label.as_str(), s.thread, s.t0_mono_ns, s.t1_mono_ns))
            .collect();
        pairs.sort_by_key(|p| p.2);
        assert_eq!(
            pairs,
            [
                ("step_start", Some(7), 10, 40),
                ("x_start", None, 15, 45),
                ("step_start", Some(9), 20, 60),
                ("step_start", Some(7), 25, 30),
            ]
        );
        assert_eq!(r.marks[0].thread, Some(7));
        assert_eq!(r.marks[1].thread, None);
    });
}

#[test]
fn late_rows_are_counted_with_their_line() {
    // The second recording's clock went back by far more than the horizon.
    let data = format!(
        "{HDR}10000000000,0,SAMPLE,,1,,,,,,,\n20000000000,0,SAMPLE,,1,,,,,,,\n{HDR}5,0,SAMPLE,,1,,,,,,,\n"
    );
    let r = analyze(&[data.as_bytes()], &WindowOptions::default());
    assert_eq!(
        (r.rows.late_rows, r.rows.first_late_line, r.rows.headers),
        (1, Some(5), 2)
    );
    assert!(r.warnings.iter().any(|w| w.contains("line 5")));
}

#[test]
fn counters_and_rapl_over_a_window() {
    // Two GPUs with counters; RAPL wraps at 1000 µJ.
    let mut data = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ,rapl_max_energy_range_uj\n",
    );
    for k in 0..=10i64 {
        let t = k * 100_000_000;
        data.push_str(&format!(
            "{t},0,SAMPLE,,200,100,,,,{},0,{},1000\n",
            (k * 300) % 1000,
            k * 20
        ));
        data.push_str(&format!("{},0,SAMPLE,,60,0,,,,,1,{},\n", t + 1, k * 6));
    }
    data.push_str("200000000,0,MARK,s,,,,,,,,,\n800000000,0,MARK,e,,,,,,,,,\n");
    let opts = WindowOptions {
        select: Some(WindowSelect {
            start: "s".into(),
            end: "e".into(),
            occurrence: 1,
        }),
        ..WindowOptions::default()
    };
    let r = analyze(&[data.as_bytes()], &opts);
    let w = r.window.unwrap();
    assert_eq!(w.gpus.len(), 2);
    let g0 = &w.gpus[0];
    assert!((g0.energy_edge_j.unwrap() - 120.0).abs() < 1e-9);
    assert!((g0.energy_counter_j.unwrap() - 0.120).abs() < 1e-12);
    assert!((g0.util_time_weighted_pct.unwrap() - 100.0).abs() < 1e-9);
    assert_eq!(g0.repeated_samples, 7);
    let rapl = w.rapl.unwrap();
    assert!((rapl.energy_j - 1800e-6).abs() < 1e-12, "{rapl:?}");
    assert!(rapl.wraps >= 1);
    assert!(
        (w.total.energy_edge_j.unwrap() - (120.0 + w.gpus[1].energy_edge_j.unwrap())).abs() < 1e-9
    );
    // GPU 0 at 200 W all along, GPU 1 at its floor: compute vs waiting, so "mixed" overall.
    assert_eq!(w.gpus[1].verdict.verdict, Some("waiting"));
    assert_eq!(w.verdict.verdict, Some("mixed"));
}

/// A recording with many marks: nested same-stem pairs (`p_start` inside `p_start`), `begin`/`end`,
/// plain marks and some labels seen once, on two GPUs.
pub(super) fn many_marks(rng: &mut Rng, marks: u32) -> String {
    let mut s = String::from(HDR);
    let mut t = 1_000_000_000i64;
    for k in 0..marks {
        for _ in 0..1 + rng.below(3) {
            t += 1_000_000 + rng.below(5_000_000) as i64;
            for g in 0..2 {
                s.push_str(&format!(
                    "{},0,SAMPLE,,{},{},,,,,{g},\n",
                    t + g,
                    60 + rng.below(300),
                    rng.below(101)
                ));
            }
        }
        t += 1000;
        let label = match rng.below(8) {
            0 | 1 => "p_start".to_string(),
            2 | 3 => "p_end".to_string(),
            4 => "begin".to_string(),
            5 => "end".to_string(),
            6 => "m".to_string(),
            _ => format!("once{k}"),
        };
        s.push_str(&format!("{t},0,MARK,{label},,,,,,,,\n"));
    }
    s
}

fn with_limits(max_marks: usize, max_spans: usize) -> WindowOptions {
    WindowOptions {
        limits: Limits {
            max_marks,
            max_spans,
            ..Limits::EXACT
        },
        select: Some(WindowSelect {
            start: "m".into(),
            end: "late".into(),
            occurrence: 1,
        }),
        spans: true,
        ..WindowOptions::default()
    }
}

#[test]
fn spans_past_max_spans_are_counted_and_the_kept_ones_unchanged() {
    let mut rng = Rng::from_env(33);
    for case in 0..6 {
        let mut data = many_marks(&mut rng, 150);
        // The selected end comes after every span.
        data.push_str("999999999999,0,MARK,late,,,,,,,,\n");
        let full = analyze(&[data.as_bytes()], &with_limits(1 << 20, usize::MAX));
        assert_eq!(full.rows.spans_dropped, 0);
        assert!(full.spans.len() > 100, "{}", full.spans.len());
        let json = |w: &WindowResult| serde_json::to_string(w).unwrap();
        let all: Vec<String> = full.spans.iter().map(json).collect();
        // Spans still open at the end count against the bound too (at most the open pairs
        // and the last stretch), so this bound keeps everything.
        let ample = full.spans.len() + MAX_OPEN_PAIRS + 1;
        for max_spans in [0, 1, 7, 40, full.spans.len() - 1, ample] {
            let split = [
                &data.as_bytes()[..data.len() / 3],
                &data.as_bytes()[data.len() / 3..],
            ];
            let r = analyze(&split, &with_limits(1 << 20, max_spans));
            assert!(r.spans.len() <= max_spans, "case {case}: {}", r.spans.len());
            // Every span that closes is reported or counted.
            assert_eq!(
                r.spans.len() as u64 + r.rows.spans_dropped,
                full.spans.len() as u64,
                "case {case} max {max_spans}"
            );
            // The kept spans are exactly the unbounded analysis' spans (none closed wrongly).
            let mut rest = all.clone();
            for s in &r.spans {
                let j = json(s);
                let at = rest.iter().position(|x| *x == j);
                assert!(at.is_some(), "case {case} max {max_spans}");
                rest.remove(at.unwrap());
            }
            let warned = r.warnings.iter().any(|w| w.contains("max_spans"));
            assert_eq!(warned, r.rows.spans_dropped > 0, "{:?}", r.warnings);
            assert_eq!(max_spans >= ample, r.rows.spans_dropped == 0);
            // The selected window does not depend on the span bound.
            assert_eq!(
                json(r.window.as_ref().unwrap()),
                json(full.window.as_ref().unwrap())
            );
        }
    }
}

#[test]
fn marks_past_max_marks_are_counted_and_hold_no_memory() {
    let mut rng = Rng::from_env(34);
    let mut data = many_marks(&mut rng, 400);
    data.push_str("999999999999,0,MARK,late,,,,,,,,\n");
    let full = analyze(&[data.as_bytes()], &with_limits(1 << 20, usize::MAX));
    for max_marks in [0, 5, 50] {
        let opts = with_limits(max_marks, 1 << 20);
        let mut a = WindowAnalyzer::new(opts.clone());
        for c in data.as_bytes().chunks(777) {
            a.write(c);
            // Distinct labels interned: the kept marks' and the selection's two.
            assert!(
                a.eng.labels.len() <= max_marks + 2,
                "{}",
                a.eng.labels.len()
            );
            assert!(a.eng.marks.len() <= max_marks + 2);
        }
        let r = a.end();
        // The selected marks are kept whatever the bound: `m` and `late`.
        assert!(r.marks.len() <= max_marks + 2, "{}", r.marks.len());
        assert!(r.marks.iter().any(|m| m.label == "late"));
        assert_eq!(
            r.marks.len() as u64 + r.rows.marks_dropped,
            full.marks.len() as u64
        );
        assert!(r.rows.marks_dropped > 0);
        assert!(
            r.warnings.iter().any(|w| w.contains("max_marks")),
            "{:?}",
            r.warnings
        );
        let w = r.window.as_ref().expect("the selected window");
        let fw = full.window.as_ref().unwrap();
        assert_eq!((w.t0_mono_ns, w.t1_mono_ns), (fw.t0_mono_ns, fw.t1_mono_ns));
        assert_eq!(w.reference, fw.reference);
        // The kept marks are the first ones, with their occurrences.
        for (k, m) in r.marks.iter().filter(|m| m.label != "late").enumerate() {
            let f = &full.marks[k];
            if k < max_marks {
                assert_eq!(
                    (&m.label, m.t_mono_ns, m.occurrence),
                    (&f.label, f.t_mono_ns, f.occurrence)
                );
            }
        }
    }
}

#[test]
fn long_mark_labels_are_cut_but_selected_by_the_whole_label() {
    let data = format!(
        "{HDR}10,0,SAMPLE,,100,50,,,,,0,\n20,0,MARK,abcdefgé_one,,,,,,,,\n30,0,SAMPLE,,100,50,,,,,0,\n40,0,MARK,abcdefgé_two,,,,,,,,\n50,0,SAMPLE,,300,90,,,,,0,\n60,0,MARK,abcdefgé_one,,,,,,,,\n70,0,SAMPLE,,100,10,,,,,0,\n80,0,MARK,short,,,,,,,,\n90,0,SAMPLE,,100,10,,,,,0,\n"
    );
    let opts = WindowOptions {
        limits: Limits {
            max_string_bytes: 8,
            ..Limits::EXACT
        },
        select: Some(WindowSelect {
            start: "abcdefgé_one".into(),
            end: "short".into(),
            occurrence: 1,
        }),
        spans: true,
        ..WindowOptions::default()
    };
    // Selection compares whole labels: `…_one` and `…_two` cut to the same text, yet the 2nd
    // `…_one` is the mark at 60, not the one at 40.
    let mut second = opts.clone();
    second.select = Some(WindowSelect {
        start: "abcdefgé_one".into(),
        end: "abcdefgé_one".into(),
        occurrence: 2,
    });
    for_each_split(data.as_bytes(), 3, 2, |chunks| {
        let r = analyze(chunks, &opts);
        let labels: Vec<&str> = r.marks.iter().map(|m| m.label.as_str()).collect();
        // "é" is two bytes: the cut falls before it, not inside it.
        assert_eq!(labels, ["abcdefg", "abcdefg", "abcdefg", "short"]);
        assert!(
            r.warnings.iter().any(|w| w.contains("cut: 3")),
            "{:?}",
            r.warnings
        );
        let w = r.window.as_ref().unwrap();
        assert_eq!((w.t0_mono_ns, w.t1_mono_ns), (20, 80));
        let r2 = analyze(chunks, &second);
        // Start and end are the same whole label: its 2nd occurrence is the mark at 60 (the
        // reference's rule: both at 60, so "End MARK must be after start MARK").
        let sel = r2.selection.as_ref().unwrap();
        assert_eq!(
            (sel.start_t_mono_ns, sel.end_t_mono_ns),
            (Some(60), Some(60))
        );
    });
}

/// Marks of nested pairs with labels seen once (`sK_start` … `sK_end`, some never closed)
/// inside an outer pair, so that a span's end label is first read long after its start (many
/// reorder horizons later).
pub(super) fn unique_pairs(rng: &mut Rng, marks: u32) -> String {
    let mut s = String::from(HDR);
    let mut t = 1_000_000_000i64;
    let mut open: Vec<u32> = Vec::new();
    let mark = |s: &mut String, t: i64, label: &str| {
        s.push_str(&format!("{t},0,MARK,{label},,,,,,,,\n"));
    };
    mark(&mut s, t, "outer_start");
    for k in 0..marks {
        t += 20_000_000 + rng.below(40_000_000) as i64;
        s.push_str(&format!(
            "{t},0,SAMPLE,,{},{},,,,,0,\n",
            60 + rng.below(300),
            rng.below(101)
        ));
        t += 1000;
        if open.is_empty() || rng.below(2) == 0 {
            open.push(k);
            mark(&mut s, t, &format!("s{k}_start"));
        } else {
            let j = open.pop().unwrap();
            if rng.below(5) > 0 {
                mark(&mut s, t, &format!("s{j}_end"));
            }
        }
    }
    mark(&mut s, t + 1000, "outer_end");
    s
}

/// The three passes of a streamed analysis (`hold` marks and spans at most in pass 1), with the
/// marks and spans popped after every chunk, reassembled into one analysis.
/// Also says which lists took a further pass (marks, spans).
fn analyze_streamed(
    chunks: &[&[u8]],
    opts: &WindowOptions,
    hold: usize,
) -> (RecordingAnalysis, [bool; 2]) {
    let mut a = WindowAnalyzer::planning(opts.clone(), hold);
    for c in chunks {
        a.write(c);
    }
    let planned = a.end_planned();
    let passes = [planned.marks_streamed, planned.spans.is_some()];
    let mut r = planned.analysis;
    if planned.marks_streamed {
        assert!(r.marks.is_empty());
        let mut a = WindowAnalyzer::marks_pass(opts.clone());
        for c in chunks {
            a.write(c);
            r.marks.extend(core::iter::from_fn(|| a.pop_mark()));
        }
        a.end_stream();
        r.marks.extend(core::iter::from_fn(|| a.pop_mark()));
    }
    if let Some(plan) = planned.spans {
        assert!(r.spans.is_empty());
        let mut a = WindowAnalyzer::spans_pass(opts.clone(), plan);
        for c in chunks {
            a.write(c);
            r.spans.extend(core::iter::from_fn(|| a.pop_span()));
        }
        a.end_stream();
        r.spans.extend(core::iter::from_fn(|| a.pop_span()));
        if let Mode::Spans(st) = &a.eng.mode {
            assert!(st.slots.is_empty(), "undecided spans left");
        }
    }
    (r, passes)
}

#[test]
fn streamed_passes_give_the_one_pass_analysis() {
    let mut rng = Rng::from_env(41);
    let mut passes = [0; 2];
    for case in 0..24 {
        let data = if case % 3 == 2 {
            let marks = 20 + rng.below(200) as u32;
            unique_pairs(&mut rng, marks)
        } else if case % 2 == 0 {
            random_recording(&mut rng)
        } else {
            let marks = 20 + rng.below(300) as u32;
            many_marks(&mut rng, marks)
        };
        let opts = match case % 4 {
            0 | 1 => WindowOptions {
                spans: true,
                series_points: 40,
                ..WindowOptions::default()
            },
            2 => WindowOptions {
                select: Some(WindowSelect {
                    start: "p_start".into(),
                    end: "end".into(),
                    occurrence: 1,
                }),
                spans: true,
                max_gap_ns: 3_000_000,
                ..WindowOptions::default()
            },
            _ => WindowOptions {
                gpu: Some(1),
                ..with_limits(30, 25)
            },
        };
        let want = analyze(&[data.as_bytes()], &opts).to_json();
        for hold in [0, 1, 3, 17, 1 << 20] {
            let mut n = 0;
            for_each_split(data.as_bytes(), 1, rng.next_u64(), |chunks| {
                // Whole, byte by byte (only for the small holds) and one random split.
                n += 1;
                if n == 2 && hold > 3 {
                    return;
                }
                let (got, took) = analyze_streamed(chunks, &opts, hold);
                assert_eq!(got.to_json(), want, "case {case} hold {hold} split {n}");
                for k in 0..2 {
                    passes[k] += took[k] as u32;
                }
            });
        }
    }
    // Both further passes were taken often.
    assert!(passes.iter().all(|&n| n > 40), "{passes:?}");
}

/// Pass 1 holds at most `hold` marks and finished spans (plus the few kept aside); pass 3 at
/// most about `hold` results waiting for an earlier span.
#[test]
fn streamed_passes_hold_a_bounded_number_of_spans() {
    let mut rng = Rng::from_env(43);
    let data = many_marks(&mut rng, 3000);
    let opts = WindowOptions {
        spans: true,
        ..WindowOptions::default()
    };
    let hold = 8;
    let mut a = WindowAnalyzer::planning(opts.clone(), hold);
    let mut most_early = 0;
    for c in data.as_bytes().chunks(512) {
        a.write(c);
        assert!(a.eng.marks.len() <= hold && a.eng.done.len() <= hold);
        if let Mode::Plan(p) = &a.eng.mode {
            most_early = most_early.max(p.early.len());
        }
    }
    let planned = a.end_planned();
    assert!(planned.marks_streamed);
    let plan = planned.spans.expect("spans streamed");
    // At most 64 pairs are open at once, so at most 64 spans for each `hold` spans created
    // can outlive `hold` later ones (the stretches between marks never do here).
    let created = planned.analysis.rows.marks as usize * 2;
    assert!(most_early <= 64 * created / hold, "{most_early}");
    let mut b = WindowAnalyzer::spans_pass(opts, plan);
    let (mut most_waiting, mut out) = (0, 0);
    for c in data.as_bytes().chunks(512) {
        b.write(c);
        if let Mode::Spans(st) = &b.eng.mode {
            most_waiting = most_waiting.max(st.slots.len());
        }
        out += core::iter::from_fn(|| b.pop_span()).count();
    }
    b.end_stream();
    out += core::iter::from_fn(|| b.pop_span()).count();
    assert!(out > 3000, "{out}");
    assert!(most_waiting <= 2 * hold + 64, "{most_waiting}");
}

#[test]
fn a_file_without_header_says_so() {
    let mut wide = "c,".repeat(1_000_000);
    wide.push('\n');
    let rows = "1000,0,MARK,a,,,,,,,,\n2000,0,SAMPLE,,100,5,,,,,0,\n3000,0,MARK,b,,,,,,,,\n";
    for data in [rows.to_string(), format!("{wide}{HDR}{rows}")] {
        for_each_split(data.as_bytes(), 2, 5, |chunks| {
            let r = analyze(
                chunks,
                &WindowOptions {
                    select: Some(WindowSelect {
                        start: "a".into(),
                        end: "b".into(),
                        occurrence: 1,
                    }),
                    ..WindowOptions::default()
                },
            );
            assert!(r.window.is_none());
            assert!(
                r.warnings[0].starts_with("no trace.csv header: line 1 names no t_mono_ns"),
                "{:?}",
                r.warnings
            );
        });
    }
    // A file with its header has no such warning.
    let r = analyze(
        &[format!("{HDR}{rows}").as_bytes()],
        &WindowOptions::default(),
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn an_unclosed_quote_is_a_warning_with_its_line() {
    let data = format!(
        "{HDR}1000,0,MARK,a,,,,,,,,\n2000,0,SAMPLE,,100,5,,,,,0,\n3000,0,MARK,\"b,,,,,,,,\n4000,0,SAMPLE,,100,5,,,,,0,\n"
    );
    for_each_split(data.as_bytes(), 2, 6, |chunks| {
        let r = analyze(chunks, &WindowOptions::default());
        assert_eq!(r.marks.len(), 1);
        assert_eq!((r.rows.bad_rows, r.rows.first_bad_line), (1, Some(4)));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("unbalanced quote: a quoted field opens at line 4 ")),
            "{:?}",
            r.warnings
        );
    });
}

/// `nan`, `inf` and text in gpu_power_W are counted with the first line; the reference figures
/// take nan and inf as Python does, the edge energy leaves them out.
#[test]
fn non_finite_power_is_counted_in_a_warning() {
    let mut data = format!("{HDR}1000000000,0,MARK,a,,,,,,,,\n");
    for (k, p) in ["100", "nan", "100", "inf", "N/A", "", " ", "100", "-inf"]
        .iter()
        .enumerate()
    {
        let t = 1_000_000_000 + k as i64 * 100_000_000;
        data.push_str(&format!("{t},0,SAMPLE,,{p},5,,,,,0,\n"));
    }
    data.push_str("1900000000,0,MARK,b,,,,,,,,\n");
    let opts = WindowOptions {
        select: Some(WindowSelect {
            start: "a".into(),
            end: "b".into(),
            occurrence: 1,
        }),
        ..WindowOptions::default()
    };
    for_each_split(data.as_bytes(), 2, 7, |chunks| {
        let r = analyze(chunks, &opts);
        let w = r.window.as_ref().unwrap();
        // Python: nan poisons the trapezoid.
        assert!(w.reference.energy_j.unwrap().is_nan());
        let edge = w.gpus[0].energy_edge_j.unwrap();
        assert!(edge.is_finite() && edge > 0.0, "{edge}");
        assert!(
            r.warnings.iter().any(|x| x
                .starts_with("4 gpu_power_W values are not finite numbers (nan, inf or text)")
                && x.ends_with("first at line 4")),
            "{:?}",
            r.warnings
        );
        // The same through the reference-only analysis (the three lines).
        let r = analyze(
            chunks,
            &WindowOptions {
                reference_only: true,
                ..opts.clone()
            },
        );
        assert!(r.warnings.iter().any(|x| x.starts_with("4 gpu_power_W")));
    });
}

#[test]
fn unclosed_pair_starts_are_listed_in_the_warnings() {
    let mut data = String::from(HDR);
    let mut t = 1_000_000_000i64;
    for (k, label) in [
        "a_start", "a_end", "x_start", "b_start", "b_end", "s1_start", "s2_start", "s3_start",
        "s4_start", "s5_start",
    ]
    .iter()
    .enumerate()
    {
        t += 10_000_000;
        data.push_str(&format!("{t},0,SAMPLE,,{},5,,,,,0,\n", 100 + k));
        data.push_str(&format!("{t},0,MARK,{label},,,,,,,,\n"));
    }
    let opts = WindowOptions {
        spans: true,
        ..WindowOptions::default()
    };
    for_each_split(data.as_bytes(), 2, 8, |chunks| {
        let r = analyze(chunks, &opts);
        let w: Vec<&String> = r
            .warnings
            .iter()
            .filter(|w| w.contains("pair starts never closed"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", r.warnings);
        assert!(
            w[0].starts_with(
                "6 pair starts never closed by their end mark, so not analyzed as pairs: x_start (occurrence 1, t_mono_ns 1030000000); s1_start"
            ) && w[0].ends_with("s4_start (occurrence 1, t_mono_ns 1090000000); and 1 more"),
            "{}",
            w[0]
        );
        assert_eq!(r.spans.iter().filter(|s| s.kind == "pair").count(), 2);
    });
    // All closed: no such warning.
    let r = analyze(
        &[format!("{HDR}1,0,MARK,a_start,,,,,,,,\n2,0,MARK,a_end,,,,,,,,\n").as_bytes()],
        &opts,
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

/// SAMPLE rows without a `gpu_index` and without any GPU reading (a recording made without
/// NVML) are no GPU: none is listed, and the note says why; rows without a `gpu_index` that do
/// carry readings (the reference's 10 columns) are GPU 0 as before, without a note.
#[test]
fn rows_without_gpu_readings_make_no_phantom_gpu() {
    let hdr = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n";
    let host_only = format!(
        "{hdr}1000,0,MARK,a,,,,,,,\n2000,0,SAMPLE,,,,,,,5,\n3000,0,SAMPLE,,,,,,,9,\n4000,0,MARK,b,,,,,,,\n"
    );
    let with_power = host_only.replace(",SAMPLE,,,,", ",SAMPLE,,100,,");
    let opts = |select: bool| WindowOptions {
        select: select.then(|| WindowSelect {
            start: "a".into(),
            end: "b".into(),
            occurrence: 1,
        }),
        spans: true,
        series_points: 10,
        ..WindowOptions::default()
    };
    for select in [false, true] {
        for_each_split(host_only.as_bytes(), 2, 3, |chunks| {
            let r = analyze(chunks, &opts(select));
            assert_eq!(r.gpu_energy_note, Some(NO_GPU_READINGS));
            assert!(r.gpus.is_empty() && r.series.is_empty());
            assert!(r.spans.iter().all(|s| s.gpus.is_empty()));
            assert_eq!(r.rows.samples, 2);
            if select {
                let w = r.window.as_ref().unwrap();
                assert!(w.gpus.is_empty());
                // RAPL is still there.
                assert!(w.rapl.is_some());
            }
            assert_eq!(r.to_json().matches("no GPU readings").count(), 1);
        });
        let r = analyze(&[with_power.as_bytes()], &opts(select));
        assert_eq!(r.gpu_energy_note, None);
        assert_eq!(r.gpus.len(), 1);
        assert_eq!(r.gpus[0].gpu_index, None);
        assert!(!r.to_json().contains("gpu_energy_note"));
    }
}
