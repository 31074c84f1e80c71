//! The analyze job against the one-pass analysis: every way of feeding it (bytes in any split,
//! gzip, batches of parsed rows) and every first-pass hold give the same JSON bytes.
use core::ops::ControlFlow;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use super::tests::{HDR, many_marks, random_recording, unique_pairs};
use super::*;
use crate::job::{Job, Need};
use crate::testutil::Rng;

/// How [`Memory`] feeds a pass.
#[derive(Clone, Copy, Debug)]
enum Feed {
    /// Bytes in chunks of this many.
    Chunks(usize),
    /// Batches of this many parsed rows.
    Batches(usize),
}

/// A file in memory, read again for every pass.
struct Memory<'a> {
    data: &'a [u8],
    feed: Feed,
    passes: usize,
    /// Fail the pass with this number (0: the first).
    fail_at: Option<usize>,
}

impl Reread for Memory<'_> {
    type Error = String;

    fn reread(
        &mut self,
        pass: &mut AnalyzeJob,
        each: &mut dyn FnMut(&mut AnalyzeJob) -> ControlFlow<()>,
    ) -> Result<(), String> {
        assert!(matches!(pass.need(), Need::File("t.csv")));
        if self.fail_at == Some(self.passes) {
            return Err(format!("pass {} failed", self.passes));
        }
        self.passes += 1;
        match self.feed {
            Feed::Chunks(n) => {
                for c in self.data.chunks(n) {
                    pass.write(c).map_err(|e| e.to_string())?;
                    if each(pass).is_break() {
                        return Ok(());
                    }
                }
            }
            Feed::Batches(n) => {
                let full = !pass.reference_only();
                let mut reader = TraceCsvReader::new();
                let mut batch = RowBatch::with_capacity(n);
                let mut rest = self.data;
                loop {
                    let (ev, k) = reader.read(rest);
                    rest = &rest[k..];
                    batch.push_event(&reader, ev, full);
                    if batch.len() >= n || ev == CsvEvent::End {
                        pass.push_batch(&batch).map_err(|e| e.to_string())?;
                        batch.clear();
                        if each(pass).is_break() {
                            return Ok(());
                        }
                    }
                    if ev == CsvEvent::End {
                        break;
                    }
                }
            }
        }
        pass.end().map_err(|e| e.to_string())
    }
}

fn first_pass(input: &mut Memory<'_>, opts: &WindowOptions, hold: usize) -> Analyzed {
    let mut job = AnalyzeJob::new("t.csv", opts.clone(), hold);
    input
        .reread(&mut job, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(job.need(), Need::Done);
    job.finish().unwrap()
}

fn one_pass(data: &[u8], opts: &WindowOptions) -> RecordingAnalysis {
    let mut a = WindowAnalyzer::new(opts.clone());
    a.write(data);
    a.end()
}

fn options(case: usize) -> WindowOptions {
    match case % 4 {
        0 => WindowOptions {
            spans: true,
            series_points: 40,
            ..WindowOptions::default()
        },
        1 => WindowOptions {
            select: Some(WindowSelect {
                start: "p_start".into(),
                end: "end".into(),
                occurrence: 1,
            }),
            spans: true,
            max_gap_ns: 3_000_000,
            ..WindowOptions::default()
        },
        2 => WindowOptions {
            gpu: Some(1),
            spans: true,
            ..WindowOptions::default()
        },
        _ => WindowOptions {
            spans: true,
            reference_only: true,
            ..WindowOptions::default()
        },
    }
}

#[test]
fn the_job_renders_the_one_pass_analysis_whatever_it_holds_and_however_fed() {
    let mut rng = Rng::from_env(61);
    let mut reread = 0;
    for case in 0..12 {
        let data = match case % 3 {
            0 => random_recording(&mut rng),
            1 => {
                let n = 20 + rng.below(200) as u32;
                many_marks(&mut rng, n)
            }
            _ => {
                let n = 20 + rng.below(200) as u32;
                unique_pairs(&mut rng, n)
            }
        };
        let opts = options(case);
        let want = one_pass(data.as_bytes(), &opts).to_json();
        for hold in [0, 1, 3, 17, FIRST_PASS_HOLD] {
            for feed in [
                Feed::Chunks(1 + rng.below(700) as usize),
                Feed::Batches(1 + rng.below(40) as usize),
            ] {
                let mut input = Memory {
                    data: data.as_bytes(),
                    feed,
                    passes: 0,
                    fail_at: None,
                };
                let mut analyzed = first_pass(&mut input, &opts, hold);
                let streams = analyzed.rereads();
                let got = serde_json::to_string_pretty(&analyzed.json(&mut input)).unwrap();
                assert_eq!(got, want, "case {case} hold {hold} {feed:?}");
                assert_eq!(input.passes > 1, streams, "case {case} hold {hold}");
                reread += usize::from(streams);

                // The spans alone, as the text form lists them.
                let mut input = Memory { passes: 0, ..input };
                let mut analyzed = first_pass(&mut input, &opts, hold);
                let mut spans = Vec::new();
                analyzed
                    .for_each_span(&mut input, |w| {
                        spans.push(w.clone());
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                let want_spans = one_pass(data.as_bytes(), &opts).spans;
                assert_eq!(
                    serde_json::to_string(&spans).unwrap(),
                    serde_json::to_string(&want_spans).unwrap(),
                    "case {case} hold {hold} {feed:?}"
                );
            }
        }
    }
    assert!(reread > 20, "{reread}");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_bytes_are_inflated_by_the_job() {
    let mut rng = Rng::from_env(62);
    let data = many_marks(&mut rng, 300);
    let opts = options(0);
    let want = one_pass(data.as_bytes(), &opts).to_json();
    let gz = gzip(data.as_bytes());
    // Chunks of one byte: the magic is told across the first two writes.
    for n in [1, 2, 333, gz.len()] {
        let mut input = Memory {
            data: &gz,
            feed: Feed::Chunks(n),
            passes: 0,
            fail_at: None,
        };
        let mut analyzed = first_pass(&mut input, &opts, 5);
        let got = serde_json::to_string_pretty(&analyzed.json(&mut input)).unwrap();
        assert_eq!(got, want, "chunks of {n}");
    }

    // Bytes after the last member are a warning; a cut member is an error with its offset.
    let mut trailing = gz.clone();
    trailing.extend_from_slice(b"junk");
    let mut job = AnalyzeJob::new("t.csv", opts.clone(), FIRST_PASS_HOLD);
    job.write(&trailing).unwrap();
    job.end().unwrap();
    let analyzed = job.finish().unwrap();
    let warnings = &analyzed.analysis().warnings;
    let last = warnings.last().unwrap();
    assert!(last.starts_with("trailing garbage ignored"), "{warnings:?}");

    let mut job = AnalyzeJob::new("t.csv", opts, FIRST_PASS_HOLD);
    job.write(&gz[..gz.len() / 2]).unwrap();
    let e = job.end().unwrap_err();
    assert!(
        matches!(e, AnalyzeJobError::Gzip(GzError::Truncated { .. })),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with("truncated gzip member at byte"),
        "{e}"
    );
    assert_eq!(job.finish().err().unwrap(), e);
}

use crate::gzip::GzError;

#[test]
fn the_job_answers_only_what_it_asked_for() {
    let data = format!("{HDR}1000,0,MARK,a,,,,,,,,\n2000,0,MARK,b,,,,,,,,\n");
    let mut job = AnalyzeJob::new("t.csv", options(0), FIRST_PASS_HOLD);
    assert_eq!(job.need(), Need::File("t.csv"));
    assert!(matches!(job.seek(10), Err(AnalyzeJobError::NotAsked(_))));
    assert!(matches!(
        job.listing(&mut core::iter::empty()),
        Err(AnalyzeJobError::NotAsked(_))
    ));
    job.write(data.as_bytes()).unwrap();
    job.note_input_warning("from the driver");
    job.end().unwrap();
    assert_eq!(job.need(), Need::Done);
    assert!(matches!(job.write(b"x"), Err(AnalyzeJobError::NotAsked(_))));
    assert!(matches!(
        job.push_batch(&RowBatch::default()),
        Err(AnalyzeJobError::NotAsked(_))
    ));
    let analyzed = job.finish().unwrap();
    assert_eq!(analyzed.analysis().rows.marks, 2);
    assert_eq!(
        analyzed.analysis().warnings.last().unwrap(),
        "from the driver"
    );

    // Not read to its end: no result.
    let mut job = AnalyzeJob::new("t.csv", options(0), FIRST_PASS_HOLD);
    job.write(data.as_bytes()).unwrap();
    assert!(matches!(job.finish(), Err(AnalyzeJobError::NotAsked(_))));

    // A read that failed fails the job at its end.
    let mut job = AnalyzeJob::new("t.csv", options(0), FIRST_PASS_HOLD);
    job.write(data.as_bytes()).unwrap();
    job.read_error("disk on fire");
    assert_eq!(
        job.end(),
        Err(AnalyzeJobError::Read("disk on fire".to_string()))
    );
    assert_eq!(
        job.finish().err().unwrap(),
        AnalyzeJobError::Read("disk on fire".into())
    );
}

#[test]
fn a_further_pass_that_cannot_read_fails_the_rendering_with_its_error() {
    let mut rng = Rng::from_env(63);
    let data = many_marks(&mut rng, 200);
    let opts = options(0);
    for fail_at in [1, 2] {
        let mut input = Memory {
            data: data.as_bytes(),
            feed: Feed::Chunks(100),
            passes: 0,
            fail_at: Some(fail_at),
        };
        let mut analyzed = first_pass(&mut input, &opts, 3);
        let json = analyzed.json(&mut input);
        let e = serde_json::to_string_pretty(&json).unwrap_err();
        assert!(
            e.to_string().contains(&format!("pass {fail_at} failed")),
            "{e}"
        );
        assert_eq!(json.read_error(), Some(format!("pass {fail_at} failed")));
    }
}

#[test]
fn each_span_stops_when_told() {
    let mut rng = Rng::from_env(64);
    let data = many_marks(&mut rng, 200);
    for hold in [1, FIRST_PASS_HOLD] {
        let mut input = Memory {
            data: data.as_bytes(),
            feed: Feed::Chunks(1000),
            passes: 0,
            fail_at: None,
        };
        let mut analyzed = first_pass(&mut input, &options(0), hold);
        let mut n = 0;
        analyzed
            .for_each_span(&mut input, |_| {
                n += 1;
                if n == 5 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(n, 5, "hold {hold}");
    }
}
