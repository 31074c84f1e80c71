//! Restart points against decoding from the start: every spacing, every point, random ranges,
//! random input splits, multi-member and cut streams.
use flinch_core::gzip::{GzDecoder, RawInflate, RestartIndex};

use super::*;
use crate::input::tests::{Rng, TempFile, member};

/// Trace-like text with some random bytes and runs: many blocks, matches reaching far back.
fn data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        match rng.below(8) {
            0 => v.push(rng.next_u64() as u8),
            1 => v.extend(std::iter::repeat_n(b' ', rng.below(300) as usize)),
            _ => v.extend_from_slice(
                format!(
                    "{{\"ph\":\"X\",\"name\":\"op{}\",\"ts\":{}.{},\"dur\":{}}},",
                    rng.below(50),
                    rng.below(1 << 40),
                    rng.below(1000),
                    rng.below(5000)
                )
                .as_bytes(),
            ),
        }
    }
    v.truncate(len);
    v
}

/// Decodes `gz` from the start in input pieces of random sizes (up to `max_piece`), keeping
/// restart points at `spacing`: the decoded bytes and the index.
fn decode_indexing(
    gz: &[u8],
    spacing: u64,
    rng: &mut Rng,
    max_piece: u64,
) -> (Vec<u8>, RestartIndex) {
    let inflater = ZlibRsInflate::new().stopping_at_blocks();
    decode_indexing_with(
        gz,
        RestartIndex::new(spacing, 10_000),
        inflater,
        rng,
        max_piece,
    )
}

/// [`decode_indexing`] into `index`, through `inflater`.
fn decode_indexing_with<I: RawInflate>(
    gz: &[u8],
    mut index: RestartIndex,
    inflater: I,
    rng: &mut Rng,
    max_piece: u64,
) -> (Vec<u8>, RestartIndex) {
    let mut dec = GzDecoder::with_inflater(inflater);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 + rng.below(100_000) as usize];
    let mut pos = 0;
    loop {
        let n = (1 + rng.below(max_piece) as usize).min(gz.len() - pos);
        let mut input = &gz[pos..pos + n];
        loop {
            match dec.decode_with(input, &mut buf, &mut index) {
                Ok((_, nin, nout)) => {
                    out.extend_from_slice(&buf[..nout]);
                    input = &input[nin..];
                    if input.is_empty() && nout == 0 {
                        break;
                    }
                }
                Err(_) => return (out, index),
            }
        }
        pos += n;
        if pos == gz.len() {
            return (out, index);
        }
    }
}

/// Resumes at `point` and decodes the rest of `gz`: the bytes and whether the end checked out.
fn decode_from(
    gz: &[u8],
    point: &flinch_core::gzip::RestartPoint,
    history: &[u8],
) -> (Vec<u8>, bool) {
    let byte = if point.bits > 0 {
        gz[point.in_offset as usize - 1]
    } else {
        0
    };
    let mut dec = GzDecoder::resume(ZlibRsInflate::new(), point, byte, history).expect("restart");
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70_000];
    let mut input = &gz[point.in_offset as usize..];
    loop {
        match dec.decode(input, &mut buf) {
            Ok((_, nin, nout)) => {
                out.extend_from_slice(&buf[..nout]);
                input = &input[nin..];
                if input.is_empty() && nout == 0 {
                    return (out, dec.finish().is_ok());
                }
            }
            Err(_) => return (out, false),
        }
    }
}

#[test]
fn every_point_at_every_spacing_resumes_to_the_same_bytes() {
    let mut rng = Rng(27);
    let a = data(&mut rng, 1_500_000);
    let b = data(&mut rng, 700_000);
    // Two members (levels 1 and 9), then an empty one, then a third.
    let mut gz = member(&a, 1);
    gz.extend(member(&b, 9));
    gz.extend(member(b"", 6));
    gz.extend(member(&a[..300_000], 6));
    let whole: Vec<u8> = [&a[..], &b[..], &a[..300_000]].concat();
    for spacing in [64 << 10, 100_000, 256 << 10, 1 << 20, 3 << 20] {
        let (out, index) = decode_indexing(&gz, spacing, &mut rng, 1 << 17);
        assert_eq!(out, whole, "from the start, spacing {spacing}");
        let want = (whole.len() as u64 / spacing.max(64 << 10)).saturating_sub(2) as usize;
        assert!(
            index.len() >= want.min(3),
            "spacing {spacing}: {} points",
            index.len()
        );
        for (p, h) in index.iter() {
            let (rest, ok) = decode_from(&gz, p, h);
            assert!(
                ok,
                "spacing {spacing}: the stream's end checks out from {p:?}"
            );
            assert_eq!(
                rest,
                &whole[p.out_offset as usize..],
                "spacing {spacing}, point {p:?}"
            );
        }
    }
}

/// zlib-rs stopping at every block end, whatever the framing says it wants: the oracle of
/// [`RawInflate::points_wanted`].
struct EveryBlock(ZlibRsInflate);

impl RawInflate for EveryBlock {
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), flinch_core::gzip::InflateError> {
        self.0.inflate(input, output)
    }
    fn reset(&mut self) {
        self.0.reset();
    }
    fn block_boundary(&self) -> Option<u32> {
        self.0.block_boundary()
    }
    fn history(&mut self, out: &mut [u8]) -> usize {
        self.0.history(out)
    }
    fn restart(&mut self, bits: u8, byte: u8, history: &[u8]) -> bool {
        self.0.restart(bits, byte, history)
    }
}

/// Stopping at block ends only in the calls that may reach the next wanted point keeps the
/// very points (and histories) that stopping at every block end gives: every spacing, a full
/// index thinned, random input pieces and output buffers.
#[test]
fn stopping_only_near_wanted_points_keeps_the_same_points() {
    let mut rng = Rng(31);
    let a = data(&mut rng, 1_200_000);
    let b = data(&mut rng, 500_000);
    let mut gz = member(&a, 6);
    gz.extend(member(&b, 1));
    for (spacing, max_points) in [
        (64 << 10, 10_000),
        (100_000, 4),
        (256 << 10, 3),
        (1 << 20, 10),
    ] {
        for max_piece in [1_000, 70_000, 1 << 20] {
            let seed = rng.next_u64();
            let mut r1 = Rng(seed);
            let mut r2 = Rng(seed);
            let near = ZlibRsInflate::new().stopping_at_blocks();
            let every = EveryBlock(ZlibRsInflate::new().stopping_at_blocks());
            let (o1, i1) = decode_indexing_with(
                &gz,
                RestartIndex::new(spacing, max_points),
                near,
                &mut r1,
                max_piece,
            );
            let (o2, i2) = decode_indexing_with(
                &gz,
                RestartIndex::new(spacing, max_points),
                every,
                &mut r2,
                max_piece,
            );
            assert_eq!(o1, o2);
            assert!(!i2.is_empty(), "spacing {spacing}");
            let p1: Vec<_> = i1.iter().collect();
            let p2: Vec<_> = i2.iter().collect();
            assert_eq!(p1, p2, "spacing {spacing}, pieces {max_piece}");
        }
    }
}

#[test]
fn points_made_on_random_input_splits_all_resume() {
    let mut rng = Rng(5);
    let a = data(&mut rng, 900_000);
    let gz = member(&a, 6);
    for round in 0..6 {
        let max_piece = [1, 7, 600, 4096, 70_000, 1 << 20][round];
        let gz = if max_piece == 1 {
            &gz[..120_000]
        } else {
            &gz[..]
        };
        let (out, index) = decode_indexing(gz, 64 << 10, &mut rng, max_piece);
        assert_eq!(out, &a[..out.len()], "split {max_piece}");
        assert!(!index.is_empty(), "split {max_piece}");
        for (p, h) in index.iter() {
            let (rest, _) = decode_from(gz, p, h);
            assert_eq!(
                rest,
                &out[p.out_offset as usize..],
                "split {max_piece}, point {p:?}"
            );
        }
    }
}

#[test]
fn ranges_read_through_restart_points_match_the_whole() {
    let mut rng = Rng(11);
    let a = data(&mut rng, 2_500_000);
    let b = data(&mut rng, 400_000);
    let mut gz = member(&a, 6);
    gz.extend(member(&b, 3));
    let whole: Vec<u8> = [&a[..], &b[..]].concat();
    let file = TempFile::new(&gz);
    for spacing in [64 << 10, 300_000, 1 << 20] {
        let (_, index) = decode_indexing(&gz, spacing, &mut rng, 1 << 16);
        let points = index.len();
        let mut r = GzRanges::with_index(&file.0, Some(index)).unwrap();
        let mut buf = vec![0u8; 200_000];
        for _ in 0..40 {
            // Forward and backward, some past the end.
            let at = rng.below(whole.len() as u64 + 1000);
            let len = 1 + rng.below(buf.len() as u64) as usize;
            let mut got = Vec::new();
            while got.len() < len {
                let n = r
                    .read(at + got.len() as u64, &mut buf[..len - got.len()])
                    .unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let from = (at as usize).min(whole.len());
            let to = (from + len).min(whole.len());
            assert_eq!(
                got,
                &whole[from..to],
                "spacing {spacing}, at {at}, len {len}"
            );
        }
        assert!(
            r.restarts() > 0,
            "spacing {spacing} ({points} points): restarts used"
        );
    }
    // Without an index: from the start, forward and back.
    let mut r = GzRanges::with_index(&file.0, None).unwrap();
    let mut buf = vec![0u8; 1000];
    for at in [2_000_000u64, 10, 2_899_000] {
        let n = r.read(at, &mut buf).unwrap();
        assert_eq!(&buf[..n], &whole[at as usize..at as usize + n]);
        assert!(n > 0);
    }
    assert_eq!(r.restarts(), 0);
}

#[test]
fn a_cut_stream_reads_to_where_its_bytes_end() {
    let mut rng = Rng(3);
    let a = data(&mut rng, 1_200_000);
    let full = member(&a, 6);
    let cut = &full[..full.len() * 2 / 3];
    let (prefix, index) = decode_indexing(cut, 64 << 10, &mut rng, 1 << 16);
    assert!(prefix.len() > 100_000 && prefix.len() < a.len());
    assert!(index.len() > 2);
    let file = TempFile::new(cut);
    let mut r = GzRanges::with_index(&file.0, Some(index)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let at = prefix.len() as u64 - 5000;
    let mut got = Vec::new();
    loop {
        let n = r.read(at + got.len() as u64, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, &prefix[at as usize..]);
    assert!(r.restarts() > 0);
}

#[test]
fn an_indexed_input_keeps_its_points_for_the_file_and_only_for_it() {
    let mut rng = Rng(8);
    let a = data(&mut rng, 3 << 20);
    let gz = member(&a, 6);
    let file = TempFile::new(&gz);
    let mut input = open_indexed(&file.0).unwrap();
    let mut n = 0;
    while let Some(c) = input.next_chunk().unwrap() {
        n += c.len();
    }
    assert_eq!(n, a.len());
    let other = TempFile::new(&gz);
    assert!(take(&other.0).is_none(), "another file: no points");
    let index = take(&file.0).expect("points kept");
    assert!(take(&file.0).is_none(), "taken once");
    // One point per spacing at most (64 KiB in unit tests), and points there are.
    assert!(
        index.len() >= 2 && index.len() <= 48,
        "{} points",
        index.len()
    );
    let mut r = GzRanges::with_index(&file.0, Some(index)).unwrap();
    let mut buf = vec![0u8; 4096];
    let at = a.len() as u64 - 10_000;
    let k = r.read(at, &mut buf).unwrap();
    assert_eq!(&buf[..k], &a[at as usize..at as usize + k]);
    assert_eq!(r.restarts(), 1);
}
