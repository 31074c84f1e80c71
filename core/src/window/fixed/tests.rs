//! The fixed-memory analyzer against [`WindowAnalyzer`] (the oracle) with the same bounds: the
//! repository's analyze fixtures and random recordings, every chunk split, every label pair.
use super::super::tests::random_recording;
use super::super::{RecordingAnalysis, WindowAnalyzer, WindowOptions, WindowSelect};
use super::*;
use crate::Limits;
use crate::testutil::{Rng, for_each_split};
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

/// Runs the fixed analyzer over `chunks` (both passes), returning the result and the passes.
fn fixed<const G: usize, const R: usize>(
    chunks: &[&[u8]],
    start: &str,
    end: &str,
    occurrence: u32,
) -> (FixedResult, u32) {
    let mut opts = FixedOptions::new(start.as_bytes(), end.as_bytes());
    opts.occurrence = occurrence;
    // Reused (reset) analyzers, buffers and readers must act as new ones.
    let mut bufs = FixedBuffers::<G, R>::new();
    let mut reader = TraceCsvReader::new();
    let used =
        b"t_mono_ns,row_type,label,gpu_power_W\n1,MARK,x,\n2,SAMPLE,,5\n3,MARK,y,\n9,SAMPLE,,7\n";
    {
        let mut a = FixedWindowAnalyzer::new(FixedOptions::new(b"x", b"y"), &mut bufs);
        a.write(&mut reader, used);
        while a.end_pass(&mut reader) == Pass::Again {
            a.write(&mut reader, used);
        }
    }
    // An ended reader takes no more input (and does not loop): reset, it reads again.
    let mut a = FixedWindowAnalyzer::new(FixedOptions::new(b"x", b"y"), &mut bufs);
    a.write(&mut reader, used);
    assert_eq!(a.result().rows.rows, 0);
    reader.reset();
    a.write(&mut reader, &used[..40]);
    a.reset(opts);
    reader.reset();
    let mut passes = 0;
    loop {
        passes += 1;
        for c in chunks {
            a.write(&mut reader, c);
        }
        if a.end_pass(&mut reader) == Pass::Done {
            break;
        }
        assert!(passes < 2, "more than two passes");
    }
    (a.result(), passes)
}

/// The growable analyzer with the fixed one's bounds: `reference_only` as the CLI's three lines
/// (row counts), and the full analysis (verdict).
fn oracle(
    data: &[u8],
    start: &str,
    end: &str,
    occurrence: u32,
    gpus: usize,
    rows: usize,
) -> [RecordingAnalysis; 2] {
    [true, false].map(|reference_only| {
        let mut a = WindowAnalyzer::new(WindowOptions {
            limits: Limits {
                max_gpus: gpus,
                ..Limits::EXACT
            },
            select: Some(WindowSelect {
                start: start.to_string(),
                end: end.to_string(),
                occurrence,
            }),
            reorder_capacity: rows - 1,
            reference_only,
            ..WindowOptions::default()
        });
        a.write(data);
        a.end()
    })
}

/// Asserts that `got` is what the oracle found; returns whether a window was analyzed.
fn check(got: &FixedResult, want: &[RecordingAnalysis; 2], what: &str) -> bool {
    let [lines, full] = want;
    let c = (&got.rows, &lines.rows);
    let counts = |r: &RowCounts| {
        format!(
            "{} {} {} {} {} {} {:?} {} {:?} {}",
            r.rows,
            r.samples,
            r.marks,
            r.headers,
            r.other_rows,
            r.bad_rows,
            r.first_bad_line,
            r.late_rows,
            r.first_late_line,
            r.samples_dropped
        )
    };
    assert_eq!(counts(c.0), counts(c.1), "{what}: row counts");
    let mut warnings = Vec::new();
    got.rows
        .for_each_warning(&got.notes, 2_000_000_000, |w| {
            warnings.push(format!("{w}"));
            Ok(())
        })
        .unwrap();
    assert_eq!(warnings, lines.warnings, "{what}: warnings");
    assert_eq!(got.gpus, lines.gpus.len(), "{what}: gpus");
    let sel = lines.selection.as_ref().expect("a selection");
    assert_eq!(
        (got.start_t_mono_ns, got.end_t_mono_ns),
        (sel.start_t_mono_ns, sel.end_t_mono_ns),
        "{what}: marks"
    );
    assert_eq!(got.selection_error(), sel.error(), "{what}: error");
    match (&got.window, &lines.window, &full.window) {
        (None, None, None) => false,
        (Some(g), Some(l), Some(f)) => {
            assert_eq!(
                (g.t0_mono_ns, g.t1_mono_ns, g.duration_s.to_bits()),
                (l.t0_mono_ns, l.t1_mono_ns, l.duration_s.to_bits()),
                "{what}: window"
            );
            let bits = |r: &RefFigures| {
                (
                    r.energy_j.map(f64::to_bits),
                    r.samples,
                    r.avg_util_pct.map(f64::to_bits),
                )
            };
            assert_eq!(bits(&g.reference), bits(&l.reference), "{what}: figures");
            assert_eq!(bits(&g.reference), bits(&f.reference), "{what}: figures");
            assert_eq!(
                (g.verdict, g.confident),
                (f.verdict.verdict, f.verdict.confident),
                "{what}: verdict"
            );
            true
        }
        other => panic!("{what}: window present in one only: {other:?}"),
    }
}

/// Distinct mark labels of a file, in file order, and the occurrences of each.
fn labels(r: &RecordingAnalysis) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for m in &r.marks {
        match out.iter_mut().find(|(l, _)| *l == m.label) {
            Some(x) => x.1 += 1,
            None => out.push((m.label.clone(), 1)),
        }
    }
    out
}

/// Every fixture of `tests/analyze` and the H200 example, each pair of its labels (and a
/// missing one), with the firmware's bounds (8 GPUs, 256 rows) and tight ones (1 GPU, 4 rows).
#[test]
fn fixtures_give_the_growable_analyzers_figures_and_verdict() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/analyze"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    files.push(root.join("examples/h200/trace.csv"));
    files.push(root.join("examples/h200/reference-sampler.csv"));
    assert!(files.len() >= 10, "{files:?}");
    let (mut windows, mut two_passes) = (0, 0);
    let mut verdicts = std::collections::BTreeSet::new();
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let all = oracle(&data, "-", "-", 1, 64, 65_536);
        let mut names = labels(&all[0]);
        names.push(("no such mark".into(), 1));
        for (start, n) in &names {
            for (end, _) in &names {
                let occurrences = if start == end { 1 } else { (*n).min(2) };
                for occ in 1..=occurrences {
                    let what = format!("{} {start}..{end} #{occ}", path.display());
                    let (got, passes) = fixed::<8, 256>(&[&data], start, end, occ);
                    if check(&got, &oracle(&data, start, end, occ, 8, 256), &what) {
                        windows += 1;
                        verdicts.insert(format!("{:?}", got.window.map(|w| w.verdict)));
                    }
                    two_passes += (passes == 2) as u32;
                    let (got, _) = fixed::<1, 4>(&[&data], start, end, occ);
                    check(&got, &oracle(&data, start, end, occ, 1, 4), &what);
                }
            }
        }
    }
    assert!(windows > 50 && two_passes > 50, "{windows} {two_passes}");
    assert!(verdicts.len() >= 3, "{verdicts:?}");
}

/// A recording of phases (idle, busy, a mix) at ~100 Hz on 1-3 GPUs, long enough for confident
/// verdicts, with marks at phase edges written late, blank readings and a bad row.
fn phased_recording(rng: &mut Rng) -> String {
    let mut s =
        String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_index\n");
    let gpus = 1 + rng.below(3);
    let mut t = 5_000_000_000i64;
    let mut pending = Vec::new();
    for phase in 0..(2 + rng.below(5)) {
        let kind = rng.below(3);
        pending.push((t, format!("p{phase}_start")));
        if phase > 0 {
            pending.push((t - 1, format!("p{}_end", phase - 1)));
        }
        for _ in 0..(20 + rng.below(300)) {
            t += 9_000_000 + rng.below(2_000_000) as i64;
            for g in 0..gpus {
                let busy = match kind {
                    0 => false,
                    1 => true,
                    _ => rng.below(2) == 0,
                };
                let (p, u) = if busy { (400.0, 95) } else { (70.0, 0) };
                let p = p + rng.unit_f64() * 30.0;
                if rng.below(40) == 0 {
                    s.push_str(&format!("{},0,SAMPLE,,,,{g}\n", t + g as i64));
                } else {
                    s.push_str(&format!("{},0,SAMPLE,,{p:.2},{u},{g}\n", t + g as i64));
                }
            }
            if rng.below(10) == 0 && !pending.is_empty() {
                for (tm, l) in pending.drain(..) {
                    s.push_str(&format!("{tm},0,MARK,{l},,,\n"));
                }
            }
            if rng.below(500) == 0 {
                s.push_str("x,0,SAMPLE,,1,1,0\n");
            }
        }
    }
    for (tm, l) in pending.drain(..) {
        s.push_str(&format!("{tm},0,MARK,{l},,,\n"));
    }
    s
}

/// Random recordings in random chunk splits, with several bounds each.
#[test]
fn random_recordings_in_every_split() {
    let mut rng = Rng::from_env(33);
    let mut windows = 0;
    for round in 0..24 {
        let data = if round % 2 == 0 {
            random_recording(&mut rng)
        } else {
            phased_recording(&mut rng)
        };
        let all = oracle(data.as_bytes(), "-", "-", 1, 64, 65_536);
        let names = labels(&all[0]);
        let pick = |rng: &mut Rng| names[rng.below(names.len() as u64) as usize].0.clone();
        for _ in 0..3 {
            if names.is_empty() {
                break;
            }
            let (start, end) = (pick(&mut rng), pick(&mut rng));
            let occ = 1 + rng.below(2) as u32;
            let what = format!("round {round} {start}..{end} #{occ}");
            let mut found = false;
            for_each_split(data.as_bytes(), 3, round, |chunks| {
                let (got, _) = fixed::<8, 64>(chunks, &start, &end, occ);
                let want = oracle(data.as_bytes(), &start, &end, occ, 8, 64);
                found = check(&got, &want, &what);
                let (got, _) = fixed::<2, 3>(chunks, &start, &end, occ);
                check(
                    &got,
                    &oracle(data.as_bytes(), &start, &end, occ, 2, 3),
                    &what,
                );
            });
            windows += found as u32;
        }
    }
    assert!(windows >= 10, "{windows}");
}

/// Rows released early by a full ring are counted; a ring with room releases none early.
#[test]
fn a_full_ring_releases_early_and_says_so() {
    let mut rng = Rng::from_env(4);
    let data = phased_recording(&mut rng);
    let (small, _) = fixed::<4, 8>(&[data.as_bytes()], "p0_start", "p0_end", 1);
    assert!(small.released_early > 0);
    let (big, _) = fixed::<4, 4096>(&[data.as_bytes()], "p0_start", "p0_end", 1);
    assert_eq!(big.released_early, 0);
}
