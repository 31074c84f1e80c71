//! Restart points of the core's own inflater ([`MinizInflate::stopping_at_blocks`]): every
//! point it gives, resumed, decodes to the bytes a decoder from the start gives from there,
//! with the later members' checks, over any input split and output size.
use std::io::Write;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::testutil::Rng;

/// Mixed data (incompressible runs, repeats, JSON-like text) of `len` bytes.
fn data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let n = (1 + rng.below(3000) as usize).min(len - out.len());
        match rng.below(3) {
            0 => out.extend((0..n).map(|_| rng.next_u64() as u8)),
            1 => {
                // A repeat from up to 32 KiB back: matches that reach across block ends.
                let back = (1 + rng.below(32 << 10) as usize).min(out.len().max(1));
                for _ in 0..n {
                    let b = out
                        .get(out.len().wrapping_sub(back))
                        .copied()
                        .unwrap_or(b'x');
                    out.push(b);
                }
            }
            _ => {
                let text = b"{\"ph\":\"X\",\"name\":\"kernel\",\"ts\":17.5}\n";
                out.extend((0..n).map(|k| text[k % text.len()]));
            }
        }
    }
    out
}

/// One gzip member at `level`, with a sync flush (an empty stored block) every `flush_every`
/// bytes when given: block ends at known places, some at byte boundaries.
fn member(data: &[u8], level: u32, flush_every: Option<usize>) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    match flush_every {
        Some(n) => {
            for c in data.chunks(n) {
                enc.write_all(c).unwrap();
                enc.flush().unwrap();
            }
        }
        None => enc.write_all(data).unwrap(),
    }
    enc.finish().unwrap()
}

/// Takes every point offered (or one per `spacing` bytes), with its history.
struct Collect {
    spacing: u64,
    points: Vec<(RestartPoint, Vec<u8>)>,
}

impl RestartSink for Collect {
    fn wants(&self, out_offset: u64) -> bool {
        self.points
            .last()
            .is_none_or(|(p, _)| out_offset >= p.out_offset + self.spacing)
    }
    fn add<I: RawInflate + ?Sized>(&mut self, point: &RestartPoint, inflater: &mut I) {
        let mut h = vec![0u8; HISTORY_BYTES];
        let n = inflater.history(&mut h);
        h.truncate(n);
        self.points.push((*point, h));
    }
}

/// Decodes `input` in random chunks and output sizes; the bytes and the decoder's end.
fn decode<I: RawInflate, S: RestartSink>(
    dec: &mut GzDecoder<I>,
    input: &[u8],
    rng: &mut Rng,
    sink: &mut S,
) -> Result<Vec<u8>, GzError> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 300_000];
    let mut rest = input;
    while !rest.is_empty() {
        let max_in = [7, 5000, 300_000][rng.below(3) as usize];
        let take = (1 + rng.below(max_in) as usize).min(rest.len());
        let mut chunk = &rest[..take];
        rest = &rest[take..];
        loop {
            let max_out = [13, 4096, 300_000][rng.below(3) as usize];
            let cap = 1 + rng.below(max_out) as usize;
            let (status, nin, nout) = dec.decode_with(chunk, &mut buf[..cap], sink)?;
            out.extend_from_slice(&buf[..nout]);
            chunk = &chunk[nin..];
            if status != GzStatus::OutputFull {
                break;
            }
        }
    }
    Ok(out)
}

/// Resumes at `point` and decodes the rest of `gz`; checks the end as `finish` does.
fn resume_to_end(
    gz: &[u8],
    point: &RestartPoint,
    history: &[u8],
    rng: &mut Rng,
) -> Result<Vec<u8>, GzError> {
    let partial = if point.bits > 0 {
        gz[point.in_offset as usize - 1]
    } else {
        0
    };
    let mut dec = GzDecoder::resume(MinizInflate::new(), point, partial, history)
        .expect("the core inflater restarts");
    let out = decode(
        &mut dec,
        &gz[point.in_offset as usize..],
        rng,
        &mut NoRestartPoints,
    )?;
    dec.finish()?;
    assert_eq!(dec.total_in(), gz.len() as u64);
    Ok(out)
}

fn stream(rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let parts = [
        (data(rng, 300_000), 1, None),
        (data(rng, 200_000), 9, Some(40_000)),
        (Vec::new(), 6, None),
        (data(rng, 150_000), 0, None),
        (data(rng, 250_000), 6, Some(70_001)),
    ];
    let mut plain = Vec::new();
    let mut gz = Vec::new();
    for (d, level, flush) in &parts {
        plain.extend_from_slice(d);
        gz.extend_from_slice(&member(d, *level, *flush));
    }
    (plain, gz)
}

#[test]
fn every_point_resumes_to_the_from_start_bytes_and_checks() {
    let mut rng = Rng::from_env(27);
    let (plain, gz) = stream(&mut rng);
    let mut sink = Collect {
        spacing: 1,
        points: Vec::new(),
    };
    let mut dec = GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks());
    let out = decode(&mut dec, &gz, &mut rng, &mut sink).unwrap();
    dec.finish().unwrap();
    assert_eq!(out, plain, "stopping at blocks changes no byte");
    let pts = &sink.points;
    assert!(pts.len() >= 12, "{} points", pts.len());
    assert!(pts.iter().any(|(p, _)| p.bits == 0) && pts.iter().any(|(p, _)| p.bits > 0));
    assert!(
        pts.iter().any(|(p, _)| p.members > 0),
        "points in later members"
    );
    for (p, h) in pts {
        assert_eq!(h.len() as u64, u64::from(p.member_len).min(32 << 10));
        let got = resume_to_end(&gz, p, h, &mut rng).unwrap();
        assert!(got == plain[p.out_offset as usize..], "point {p:?}");
    }
}

#[test]
fn points_do_not_depend_on_the_input_split() {
    let mut rng = Rng::from_env(28);
    let (_, gz) = stream(&mut rng);
    let mut first: Option<Vec<RestartPoint>> = None;
    for round in 0..4 {
        let mut sink = Collect {
            spacing: [1, 64 << 10, 200_000, 1 << 20][round],
            points: Vec::new(),
        };
        let mut dec = GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks());
        decode(&mut dec, &gz, &mut rng, &mut sink).unwrap();
        let pts: Vec<RestartPoint> = sink.points.iter().map(|(p, _)| *p).collect();
        if round == 0 {
            first = Some(pts);
        } else {
            // A sparser sink takes a subset of the points of the densest.
            let all = first.as_ref().unwrap();
            assert!(pts.iter().all(|p| all.contains(p)), "round {round}");
            assert!(!pts.is_empty());
        }
    }
}

#[test]
fn the_index_at_every_spacing_resumes_in_a_cut_stream_too() {
    let mut rng = Rng::from_env(29);
    let (plain, gz) = stream(&mut rng);
    for spacing in [64u64 << 10, 100_000, 300_000, 400_000] {
        let mut idx = RestartIndex::new(spacing, 4);
        let mut dec = GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks());
        decode(&mut dec, &gz, &mut rng, &mut idx).unwrap();
        assert!(idx.len() >= 2, "spacing {spacing}: {}", idx.len());
        for (p, h) in idx.iter() {
            let got = resume_to_end(&gz, p, h, &mut rng).unwrap();
            assert!(got == plain[p.out_offset as usize..]);
        }
    }
    // Cut in the last member: points before the cut give the bytes up to where the cut
    // stream's bytes end, then report it truncated.
    let cut = &gz[..gz.len() - 20_000];
    let mut sink = Collect {
        spacing: 1,
        points: Vec::new(),
    };
    let mut dec = GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks());
    let whole = decode(&mut dec, cut, &mut rng, &mut sink).unwrap();
    assert!(dec.finish().unwrap_err().is_truncated());
    for (p, h) in &sink.points {
        let partial = if p.bits > 0 {
            cut[p.in_offset as usize - 1]
        } else {
            0
        };
        let mut r = GzDecoder::resume(MinizInflate::new(), p, partial, h).unwrap();
        let got = decode(
            &mut r,
            &cut[p.in_offset as usize..],
            &mut rng,
            &mut NoRestartPoints,
        )
        .unwrap();
        assert!(got == whole[p.out_offset as usize..]);
        assert_eq!(
            r.finish(),
            Err(GzError::Truncated {
                offset: cut.len() as u64
            })
        );
    }
}

#[test]
fn a_restarted_inflater_rejects_a_bad_bit_count_and_history() {
    let mut inf = MinizInflate::new();
    assert!(!inf.restart(8, 0, &[]));
    assert!(!inf.restart(0, 0, &[0; HISTORY_BYTES + 1]));
    assert!(inf.restart(3, 0xff, &[1; 10]));
}
