//! The builder against naive oracles: the summaries against `WindowAnalyzer`'s, the series
//! against every SAMPLE row read one by one, on random recordings in random chunk splits, with
//! and without a size hint.
use super::*;
use crate::csv::TraceCsvReader;
use crate::testutil::{Rng, for_each_split};
use crate::window::{WindowAnalyzer, WindowOptions};
use std::string::String;
use std::vec::Vec;

const HEADER: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,\
gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n";

/// A random recording: mostly in time order at `step_ns`, with rows out of order (a little,
/// or past the reorder horizon), repeated and odd numbers, marks, other and bad rows, many
/// GPUs, quoted labels, CRLF, and maybe a cut last line.
fn recording_text(rng: &mut Rng, rows: usize, gpus: u64, step_ns: i64, rapl_one_in: u64) -> String {
    let mut s = String::from(HEADER);
    let mut t: i64 = 1_000_000_000;
    let powers = [
        "95.25",
        "410.5",
        "0",
        "",
        "nan",
        "inf",
        "-inf",
        "1e2",
        " 7.5 ",
        "x",
        "99",
        "1_0.5",
        "123456789012345678901",
        "410.5",
    ];
    let ints = [
        "",
        "12",
        "-3",
        "1_000",
        " 42",
        "9223372036854775807",
        "99999999999999999999",
    ];
    for _ in 0..rows {
        t += match rng.below(40) {
            0 => -(rng.below(3_000_000_000) as i64),
            1 => -(rng.below(50_000_000) as i64),
            2 => 0,
            _ => step_ns,
        };
        let mono = match rng.below(60) {
            0 => String::from(""),
            1 => String::from("1.5"),
            2 => std::format!(" {t}"),
            _ => std::format!("{t}"),
        };
        let wall = match rng.below(30) {
            0 => String::from(""),
            1 => String::from("abc"),
            _ => std::format!("{}", 1_712_195_400_000_000_000i64 + t),
        };
        let kind = match rng.below(50) {
            0 => "MARK",
            1 => "OTHER",
            2 => "sample",
            _ => "SAMPLE",
        };
        let label = match rng.below(20) {
            0 => "\"a,\"\"b\"\"\"",
            1 => "step",
            _ => "",
        };
        let pick = |rng: &mut Rng, xs: &[&'static str]| xs[rng.below(xs.len() as u64) as usize];
        let power: String = if rng.below(4) == 0 {
            String::from(pick(rng, &powers))
        } else {
            std::format!("{}", rng.below(4000) as f64 / 8.0)
        };
        let util = if rng.below(10) == 0 {
            String::from(pick(rng, &powers))
        } else {
            std::format!("{}", rng.below(101))
        };
        let rapl = if rng.below(rapl_one_in) == 0 {
            pick(rng, &ints)
        } else {
            ""
        };
        let gpu = match rng.below(20) {
            0 => String::from(""),
            1 => String::from(pick(rng, &ints)),
            _ => std::format!("{}", rng.below(gpus)),
        };
        let energy = if rng.below(10) == 0 {
            String::from(pick(rng, &powers))
        } else {
            std::format!("{}", t / 1000)
        };
        let eol = if rng.below(25) == 0 { "\r\n" } else { "\n" };
        s.push_str(&std::format!(
            "{mono},{wall},{kind},{label},{power},{util},40,1980,60,{rapl},{gpu},{energy}{eol}"
        ));
    }
    if rng.below(4) == 0 {
        // A cut last line.
        let cut = s.len() - 1 - rng.below(30).min(s.len() as u64 / 4) as usize;
        s.truncate(cut);
    }
    s
}

fn build(chunks: &[&[u8]], hint: Option<u64>) -> Result<Recording, RecordingError> {
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    if let Some(n) = hint {
        b.size_hint(n);
    }
    for c in chunks {
        b.write(c)?;
    }
    b.end()
}

/// The oracle of the summaries: the analyzer as the builder would run it (without its count of
/// rows with a GPU reading, which only tells it which GPUs to list, and is not kept here), and
/// with the GPUs it does not list (`GpuSummary::is_phantom`) in their places.
fn analyzer_summaries(text: &[u8]) -> Vec<GpuSummary> {
    let mut a = WindowAnalyzer::new(WindowOptions::default());
    a.write(text);
    let mut gpus = a.end_every_gpu();
    for g in &mut gpus {
        g.gpu_readings = 0;
    }
    gpus
}

/// The oracle of the series: every SAMPLE row with a `t_wall_ns`, read one by one, per
/// `gpu_index` in order of first appearance (past 64 GPUs dropped), sorted stably by time.
fn naive_series(text: &[u8]) -> Vec<RecGpu> {
    let mut rdr = TraceCsvReader::new();
    let mut gpus: Vec<RecGpu> = Vec::new();
    let mut input = text;
    loop {
        let (ev, n) = rdr.read(input);
        input = &input[n..];
        match ev {
            CsvEvent::End => break,
            CsvEvent::Row => {
                let row = rdr.row();
                if row.kind() != RowKind::Sample {
                    continue;
                }
                let Some(t) = row.i64(Col::TWallNs) else {
                    continue;
                };
                let key = row.i64(Col::GpuIndex);
                let slot = match gpus.iter().position(|g| g.key == key) {
                    Some(s) => s,
                    None if gpus.len() < 64 => {
                        gpus.push(RecGpu {
                            key,
                            ..RecGpu::default()
                        });
                        gpus.len() - 1
                    }
                    None => continue,
                };
                let g = &mut gpus[slot];
                // Finite power in the series; the other values' times apart.
                let raw = row.raw(Col::GpuPowerW).unwrap_or(b"");
                match row.f64(Col::GpuPowerW) {
                    Some(v) if v.is_finite() => g.power.push((t, v)),
                    Some(_) => g.bad_power.push(t),
                    None if !raw.trim_ascii().is_empty() => g.bad_power.push(t),
                    None => {}
                }
                if let Some(v) = row.f64(Col::GpuUtilPct) {
                    g.util.push((t, v));
                }
                if let Some(v) = row.f64(Col::GpuEnergyMj) {
                    g.counter.push((t, v));
                }
            }
            _ => {}
        }
    }
    for g in &mut gpus {
        g.power.sort_by_key(|r| r.0);
        g.util.sort_by_key(|r| r.0);
        g.counter.sort_by_key(|r| r.0);
        g.bad_power.sort_unstable();
    }
    gpus
}

fn bits(v: &[(i64, f64)]) -> Vec<(i64, u64)> {
    v.iter().map(|&(t, x)| (t, x.to_bits())).collect()
}

fn check(text: &str, rounds: usize, seed: u64) {
    let want = std::format!("{:?}", analyzer_summaries(text.as_bytes()));
    let series = naive_series(text.as_bytes());
    for_each_split(text.as_bytes(), rounds, seed, |chunks| {
        for hint in [None, Some(text.len() as u64), Some(text.len() as u64 / 3)] {
            let rec = match build(chunks, hint) {
                Ok(r) => r,
                Err(e) => {
                    // No SAMPLE row with a t_wall_ns.
                    assert!(series.is_empty(), "{e}");
                    continue;
                }
            };
            // Debug prints each f64 exactly (shortest round trip), `None`s included.
            assert_eq!(std::format!("{:?}", rec.summaries), want, "{hint:?}");
            assert_eq!(rec.gpus.len(), series.len());
            for (g, n) in rec.gpus.iter().zip(&series) {
                assert_eq!(g.key, n.key);
                assert_eq!(bits(&g.power), bits(&n.power));
                assert_eq!(bits(&g.util), bits(&n.util));
                assert_eq!(bits(&g.counter), bits(&n.counter));
                assert_eq!(g.bad_power, n.bad_power);
            }
        }
    });
}

#[test]
fn summaries_and_series_match_the_oracles_on_random_recordings() {
    let mut rng = Rng::from_env(1301);
    for case in 0..40 {
        let rows = 1 + rng.below(300) as usize;
        let gpus = [1, 2, 3, 70][rng.below(4) as usize];
        // 10 ms, or 0.5 s so that rows leave the 2 s reorder horizon between rows.
        let step = [10_000_000, 500_000_000][rng.below(2) as usize];
        let text = recording_text(&mut rng, rows, gpus, step, 8);
        check(&text, 3, 1301 + case);
    }
}

#[test]
fn rapl_rows_of_gpus_past_the_cap_hold_places_in_the_reorder_buffer() {
    // 70 GPUs: the rows of six have no slot, and those with a RAPL reading still pass through
    // the buffer, which moves its horizon, so that a later row out of order may be late.
    let mut rng = Rng::from_env(1303);
    for case in 0..3 {
        let text = recording_text(&mut rng, 3000, 70, 500_000_000, 1);
        let want = std::format!("{:?}", analyzer_summaries(text.as_bytes()));
        let rec = build(&[text.as_bytes()], None).unwrap();
        assert_eq!(std::format!("{:?}", rec.summaries), want, "case {case}");
    }
}

#[test]
fn summaries_match_the_analyzer_past_the_reorder_capacity() {
    // 70,000 rows within the 2 s horizon: the buffer releases rows because it is full, and a
    // later row behind them is late.
    let mut rng = Rng::from_env(1302);
    let text = recording_text(&mut rng, 70_000, 2, 20, 8);
    let want = std::format!("{:?}", analyzer_summaries(text.as_bytes()));
    let rec = build(&[text.as_bytes()], Some(text.len() as u64)).unwrap();
    assert_eq!(std::format!("{:?}", rec.summaries), want);
}

#[test]
fn the_size_hint_reserves_the_series_once() {
    let mut s = String::from(HEADER);
    for k in 0..20_000i64 {
        let t = 1_000_000_000 + k * 10_000_000;
        s.push_str(&std::format!(
            "{t},{},SAMPLE,,95.25,0,40,1980,60,,0,{k}\n",
            1_712_195_400_000_000_000i64 + t
        ));
    }
    let rec = build(
        &s.as_bytes().chunks(1 << 20).collect::<Vec<_>>(),
        Some(s.len() as u64),
    )
    .unwrap();
    let g = &rec.gpus[0];
    assert_eq!(g.power.len(), 20_000);
    // Reserved from the first 256 KiB, with 1/16 to spare: no doubling past the rows.
    assert!(
        g.power.capacity() < 20_000 * 17 / 16 + 100,
        "{}",
        g.power.capacity()
    );
    let plain = build(&[s.as_bytes()], None).unwrap();
    assert_eq!(bits(&plain.gpus[0].power), bits(&g.power));
}
