//! Tests of the gzip decoder against flate2 (the oracle) and hand-built members.
use std::io::{Read, Write};
use std::string::ToString;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::testutil::{Rng, for_each_split};

/// Random bytes of a mix of kinds: incompressible, runs, and JSON-like text.
fn random_data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let n = (1 + rng.below(2000) as usize).min(len - out.len());
        match rng.below(3) {
            0 => out.extend((0..n).map(|_| rng.next_u64() as u8)),
            1 => {
                let b = rng.next_u64() as u8;
                out.extend(std::iter::repeat_n(b, n));
            }
            _ => {
                let words: [&[u8]; 5] = [
                    b"{\"ph\":\"X\",",
                    b"\"ts\":1712195495406752.8,",
                    b"kernel",
                    b"cpu_op",
                    b"}\n",
                ];
                let mut k = 0;
                while k < n {
                    let w = words[rng.below(5) as usize];
                    let take = w.len().min(n - k);
                    out.extend_from_slice(&w[..take]);
                    k += take;
                }
            }
        }
    }
    out
}

/// One gzip member by flate2 at `level`.
fn flate2_member(data: &[u8], level: u32) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// Raw deflate by flate2.
fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A gzip member built by hand with the given optional header parts.
fn member_with_header(
    data: &[u8],
    extra: Option<&[u8]>,
    name: Option<&[u8]>,
    comment: Option<&[u8]>,
    hcrc: bool,
) -> Vec<u8> {
    let mut flags = 0u8;
    if hcrc {
        flags |= FLAG_HCRC;
    }
    if extra.is_some() {
        flags |= FLAG_EXTRA;
    }
    if name.is_some() {
        flags |= FLAG_NAME;
    }
    if comment.is_some() {
        flags |= FLAG_COMMENT;
    }
    let mut m = vec![0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, 255];
    if let Some(x) = extra {
        m.extend_from_slice(&(x.len() as u16).to_le_bytes());
        m.extend_from_slice(x);
    }
    if let Some(n) = name {
        m.extend_from_slice(n);
        m.push(0);
    }
    if let Some(c) = comment {
        m.extend_from_slice(c);
        m.push(0);
    }
    if hcrc {
        let crc = crc32fast::hash(&m) as u16;
        m.extend_from_slice(&crc.to_le_bytes());
    }
    m.extend_from_slice(&raw_deflate(data));
    m.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// The oracle: flate2's multi-member decoder.
fn oracle(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Feeds `chunks` to a fresh decoder with random output buffer sizes, then calls `finish`.
/// Checks the invariants of every call on the way.
fn decode_chunks(chunks: &[&[u8]], rng: &mut Rng) -> Result<Vec<u8>, GzError> {
    decode_chunks_with(GzDecoder::new(), chunks, rng)
}

/// [`decode_chunks`] over a given decoder.
fn decode_chunks_with<I: RawInflate>(
    mut dec: GzDecoder<I>,
    chunks: &[&[u8]],
    rng: &mut Rng,
) -> Result<Vec<u8>, GzError> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70_000];
    for chunk in chunks {
        let mut input = *chunk;
        loop {
            let max = [16, 4096, 70_000][rng.below(3) as usize];
            let cap = 1 + rng.below(max) as usize;
            let (status, nin, nout) = dec.decode(input, &mut buf[..cap])?;
            assert!(nin <= input.len() && nout <= cap);
            out.extend_from_slice(&buf[..nout]);
            input = &input[nin..];
            match status {
                GzStatus::OutputFull => assert_eq!(nout, cap),
                GzStatus::NeedsInput | GzStatus::Done => {
                    assert!(input.is_empty());
                    break;
                }
            }
        }
    }
    assert_eq!(dec.total_out(), out.len() as u64);
    dec.finish()?;
    assert_eq!(
        dec.total_in(),
        chunks.iter().map(|c| c.len() as u64).sum::<u64>()
    );
    Ok(out)
}

/// Decodes `gz` whole with a big output buffer.
fn decode_whole(gz: &[u8]) -> Result<Vec<u8>, GzError> {
    let mut rng = Rng(1);
    decode_chunks(&[gz], &mut rng)
}

#[test]
fn single_members_match_oracle_in_every_split() {
    let mut rng = Rng::from_env(11);
    for (i, len) in [0usize, 1, 100, 5000, 40_000, 300_000]
        .into_iter()
        .enumerate()
    {
        let data = random_data(&mut rng, len);
        let gz = flate2_member(&data, (i as u32 * 2) % 10);
        assert_eq!(oracle(&gz), data);
        let rounds = if len > 100_000 { 3 } else { 10 };
        for_each_split(&gz, rounds, 100 + i as u64, |chunks| {
            assert_eq!(decode_chunks(chunks, &mut rng).unwrap(), data, "len {len}");
        });
    }
}

#[test]
fn multi_member_matches_oracle_and_counts_members() {
    let mut rng = Rng::from_env(12);
    let parts: Vec<Vec<u8>> = (0..5)
        .map(|i| random_data(&mut rng, [0, 10, 70_000, 3, 33_000][i]))
        .collect();
    let mut gz = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        gz.extend_from_slice(&flate2_member(p, i as u32 + 1));
    }
    let want: Vec<u8> = parts.concat();
    assert_eq!(oracle(&gz), want);
    for_each_split(&gz, 10, 7, |chunks| {
        assert_eq!(decode_chunks(chunks, &mut rng).unwrap(), want);
    });
    let mut dec = GzDecoder::new();
    let mut out = vec![0u8; 1 << 20];
    let (status, nin, nout) = dec.decode(&gz, &mut out).unwrap();
    assert_eq!((status, nin, nout), (GzStatus::Done, gz.len(), want.len()));
    assert_eq!(dec.members(), 5);
}

#[test]
fn every_header_flag_combination_in_every_split() {
    let mut rng = Rng::from_env(13);
    let data = random_data(&mut rng, 3000);
    let big_extra: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    for mask in 0..16u8 {
        for extra in [&b""[..], b"AB\x02\x00xy", &big_extra] {
            let gz = member_with_header(
                &data,
                (mask & 1 != 0).then_some(extra),
                (mask & 2 != 0).then_some(&b"trace.json"[..]),
                (mask & 4 != 0).then_some(&b"a comment \xff with bytes"[..]),
                mask & 8 != 0,
            );
            assert_eq!(oracle(&gz), data, "mask {mask}");
            for_each_split(&gz, 3, mask as u64, |chunks| {
                assert_eq!(
                    decode_chunks(chunks, &mut rng).unwrap(),
                    data,
                    "mask {mask}"
                );
            });
        }
    }
}

#[test]
fn every_truncation_point_is_reported_at_its_offset() {
    let mut rng = Rng::from_env(14);
    let data = random_data(&mut rng, 400);
    let a = member_with_header(&data, Some(b"xx"), Some(b"n"), Some(b"c"), true);
    let b = flate2_member(b"second", 6);
    let gz = [a.clone(), b.clone()].concat();
    for cut in 0..=gz.len() {
        let prefix = &gz[..cut];
        let whole = decode_chunks(&[prefix], &mut rng);
        let bytes: Vec<&[u8]> = prefix.chunks(1).collect();
        let by_byte = decode_chunks(&bytes, &mut rng);
        assert_eq!(whole, by_byte, "cut {cut}");
        if cut == a.len() || cut == gz.len() {
            assert!(
                whole.is_ok(),
                "cut {cut} at a member boundary must be accepted"
            );
        } else {
            let err = whole.unwrap_err();
            assert_eq!(err, GzError::Truncated { offset: cut as u64 }, "cut {cut}");
            assert!(err.is_truncated());
            assert_eq!(
                err.to_string(),
                std::format!("truncated gzip member at byte {cut}")
            );
        }
    }
}

#[test]
fn output_before_truncation_is_a_prefix_of_the_data() {
    let mut rng = Rng::from_env(15);
    let data = random_data(&mut rng, 200_000);
    let gz = flate2_member(&data, 6);
    let cut = gz.len() * 2 / 3;
    let mut dec = GzDecoder::new();
    let mut out = vec![0u8; 1 << 20];
    let (status, nin, nout) = dec.decode(&gz[..cut], &mut out).unwrap();
    assert_eq!((status, nin), (GzStatus::NeedsInput, cut));
    assert!(nout > 0 && out[..nout] == data[..nout]);
    assert_eq!(dec.finish(), Err(GzError::Truncated { offset: cut as u64 }));
}

#[test]
fn corrupted_crc_and_isize_are_reported_at_member_end() {
    let data = b"some data that is long enough to compress somewhat somewhat somewhat".repeat(20);
    let first = flate2_member(&data, 6);
    let second = flate2_member(&data, 9);
    let end = (first.len() + second.len()) as u64;
    for (pos, want) in [
        (8, GzError::CrcMismatch { offset: end }),
        (4, GzError::SizeMismatch { offset: end }),
    ] {
        let mut bad = second.clone();
        let at = bad.len() - pos;
        bad[at] ^= 0x40;
        let gz = [first.clone(), bad].concat();
        let mut rng = Rng(3);
        for_each_split(&gz, 5, 9, |chunks| {
            assert_eq!(decode_chunks(chunks, &mut rng), Err(want));
        });
    }
    assert_eq!(
        GzError::CrcMismatch { offset: 77 }.to_string(),
        "crc32 mismatch in gzip member ending at byte 77"
    );
    assert_eq!(
        GzError::SizeMismatch { offset: 77 }.to_string(),
        "isize mismatch in gzip member ending at byte 77"
    );
}

#[test]
fn header_errors_name_the_offending_byte() {
    let good = flate2_member(b"abc", 6);
    let cases: [(usize, u8, GzError, &str); 5] = [
        (
            0,
            0x1e,
            GzError::BadMagic { offset: 0 },
            "bad gzip magic at byte 0",
        ),
        (
            1,
            0x8c,
            GzError::BadMagic { offset: 1 },
            "bad gzip magic at byte 1",
        ),
        (
            2,
            7,
            GzError::UnsupportedMethod { offset: 2 },
            "unsupported gzip compression method at byte 2",
        ),
        (
            3,
            0x20,
            GzError::ReservedFlags { offset: 3 },
            "reserved gzip header flags set at byte 3",
        ),
        (
            10,
            0x07,
            GzError::CorruptDeflate { offset: 11 },
            "corrupt deflate data at byte 11",
        ),
    ];
    for (pos, byte, want, text) in cases {
        let mut gz = good.clone();
        gz[pos] = byte;
        assert_eq!(decode_whole(&gz), Err(want), "byte {pos}");
        assert_eq!(want.to_string(), text);
        // The second member carries the same error, shifted by the first member's length;
        // bad magic there is trailing garbage instead (see `trailing_padding_and_garbage_...`).
        let two = [good.clone(), gz].concat();
        if let GzError::BadMagic { .. } = want {
            let (data, at) = decode_with_garbage(&[&two]).unwrap();
            assert_eq!((&data[..], at), (&b"abc"[..], Some(good.len() as u64)));
            continue;
        }
        let err = decode_whole(&two).unwrap_err();
        assert_eq!(err.offset(), want.offset() + good.len() as u64);
    }
    let mut gz = member_with_header(b"abc", None, Some(b"x"), None, true);
    gz[12] ^= 1; // first byte of the stored header crc16
    assert_eq!(
        decode_whole(&gz),
        Err(GzError::HeaderCrcMismatch { offset: 14 })
    );
}

#[test]
fn corrupt_deflate_offset_is_within_the_member() {
    let mut rng = Rng::from_env(16);
    let data = random_data(&mut rng, 50_000);
    let good = flate2_member(&data, 6);
    let mut seen = 0;
    for _ in 0..200 {
        let mut gz = good.clone();
        let at = 10 + rng.below(gz.len() as u64 - 18) as usize;
        gz[at] ^= 1 << rng.below(8);
        if let Err(e) = decode_whole(&gz) {
            seen += 1;
            match e {
                GzError::CorruptDeflate { offset } => {
                    assert!(offset as usize >= 10 && offset as usize <= gz.len())
                }
                GzError::CrcMismatch { offset } | GzError::SizeMismatch { offset } => {
                    assert_eq!(offset as usize, gz.len())
                }
                GzError::Truncated { offset } => assert_eq!(offset as usize, gz.len()),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert!(
        seen > 150,
        "bit flips should almost always be detected, saw {seen}"
    );
}

#[test]
fn failed_decoder_stays_failed() {
    let mut gz = flate2_member(b"abc", 6);
    gz[0] = 0;
    let mut dec = GzDecoder::new();
    let mut out = [0u8; 64];
    let err = dec.decode(&gz, &mut out).unwrap_err();
    let good = flate2_member(b"abc", 6);
    assert_eq!(dec.decode(&good, &mut out), Err(err));
    assert_eq!(dec.decode(&[], &mut out), Err(err));
    assert_eq!(dec.finish(), Err(err));
}

/// Decodes `gz` in `chunks`; returns the data and the trailing garbage offset.
fn decode_with_garbage(chunks: &[&[u8]]) -> Result<(Vec<u8>, Option<u64>), GzError> {
    let mut dec = GzDecoder::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4096];
    for chunk in chunks {
        let mut input = *chunk;
        loop {
            let (status, nin, nout) = dec.decode(input, &mut buf)?;
            out.extend_from_slice(&buf[..nout]);
            input = &input[nin..];
            if status != GzStatus::OutputFull {
                assert!(input.is_empty());
                break;
            }
        }
    }
    dec.finish()?;
    assert_eq!(
        dec.total_in(),
        chunks.iter().map(|c| c.len() as u64).sum::<u64>()
    );
    Ok((out, dec.trailing_garbage_at()))
}

/// Zero padding is tolerated; other bytes after a complete member are trailing garbage: the
/// data is kept and the garbage's offset given, as `gzip -d` ("trailing garbage ignored").
#[test]
fn trailing_padding_and_garbage_keep_the_data() {
    let gz = flate2_member(b"abc", 6);
    let two = [gz.clone(), flate2_member(b"def", 1)].concat();
    let padded = [gz.clone(), vec![0; 1000]].concat();
    let cases: Vec<(Vec<u8>, &[u8], Option<u64>)> = vec![
        (padded.clone(), b"abc", None),
        (
            [&padded[..], &[7, 0, 1]].concat(),
            b"abc",
            Some(gz.len() as u64),
        ),
        (
            [&gz[..], b"x\nmore"].concat(),
            b"abc",
            Some(gz.len() as u64),
        ),
        // A first magic byte, then not the second: garbage from the first.
        (
            [&gz[..], &[0x1f, 0x1f, 0x8b]].concat(),
            b"abc",
            Some(gz.len() as u64),
        ),
        (
            [&two[..], &[0x8b; 3000]].concat(),
            b"abcdef",
            Some(two.len() as u64),
        ),
    ];
    for (data, want, at) in &cases {
        for_each_split(data, 5, 5, |chunks| {
            let (got, garbage) = decode_with_garbage(chunks).unwrap();
            assert_eq!((&got[..], garbage), (*want, *at));
        });
    }
    // A bad member after a good one is still an error, and so is bad magic at the start.
    let bad_method = [&gz[..], &[0x1f, 0x8b, 7]].concat();
    assert_eq!(
        decode_whole(&bad_method),
        Err(GzError::UnsupportedMethod {
            offset: gz.len() as u64 + 2
        })
    );
    assert_eq!(decode_whole(&[0, 0]), Err(GzError::BadMagic { offset: 0 }));
    assert_eq!(decode_whole(b"x"), Err(GzError::BadMagic { offset: 0 }));
}

#[test]
fn empty_input_is_truncated_at_zero() {
    assert_eq!(decode_whole(&[]), Err(GzError::Truncated { offset: 0 }));
    let dec = GzDecoder::new();
    assert_eq!(dec.finish(), Err(GzError::Truncated { offset: 0 }));
}

#[test]
fn zero_length_output_makes_no_progress_but_parses_the_header() {
    let gz = flate2_member(b"hello hello hello", 6);
    let mut dec = GzDecoder::new();
    let (status, nin, nout) = dec.decode(&gz, &mut []).unwrap();
    assert_eq!((status, nout), (GzStatus::OutputFull, 0));
    assert!(nin >= 10);
}

#[test]
fn is_gzip_checks_magic_only() {
    assert!(is_gzip(&[0x1f, 0x8b]));
    assert!(is_gzip(&[0x1f, 0x8b, 8, 0]));
    assert!(!is_gzip(&[0x1f]));
    assert!(!is_gzip(b"{\"traceEvents\":[]}"));
    assert!(!is_gzip(&[]));
}

#[test]
fn random_and_mutated_inputs_never_panic() {
    let mut rng = Rng::from_env(17);
    let good = [
        flate2_member(&random_data(&mut rng, 3000), 6),
        flate2_member(b"x", 1),
    ]
    .concat();
    for round in 0..2000 {
        let input: Vec<u8> = if round % 2 == 0 {
            let len = rng.below(300) as usize;
            let mut v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if len >= 2 && rng.below(2) == 0 {
                v[0] = 0x1f;
                v[1] = 0x8b;
            }
            v
        } else {
            let mut v = good.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(v.len() as u64) as usize;
                v[at] = rng.next_u64() as u8;
            }
            v.truncate(rng.below(v.len() as u64 + 1) as usize);
            v
        };
        let mut chunks = Vec::new();
        let mut rest = &input[..];
        while !rest.is_empty() {
            let n = (1 + rng.below(64) as usize).min(rest.len());
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        let ours = decode_chunks(&chunks, &mut rng);
        // Where we accept, the oracle agrees on the bytes.
        if let Ok(out) = ours {
            let mut theirs = Vec::new();
            if flate2::read::MultiGzDecoder::new(&input[..])
                .read_to_end(&mut theirs)
                .is_ok()
            {
                assert_eq!(out, theirs);
            }
        }
    }
}

/// A [`RawInflate`] that hands the inner one at most a few bytes of input (and, unless that is
/// all the input, of output) per call, so the framing sees every early return the trait allows.
struct Stingy {
    inner: MinizInflate,
    rng: Rng,
}

impl RawInflate for Stingy {
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), InflateError> {
        let nin = input.len().min(1 + self.rng.below(3) as usize);
        // The contract: with the input used up, everything decodable must be written.
        let nout = if nin < input.len() {
            output.len().min(1 + self.rng.below(3) as usize)
        } else {
            output.len()
        };
        self.inner.inflate(&input[..nin], &mut output[..nout])
    }
    fn reset(&mut self) {
        self.inner.reset();
    }
}

#[test]
fn framing_handles_an_inflater_that_returns_early() {
    let mut rng = Rng::from_env(18);
    let parts = [
        random_data(&mut rng, 20_000),
        Vec::new(),
        random_data(&mut rng, 3),
    ];
    let gz: Vec<u8> = parts
        .iter()
        .enumerate()
        .flat_map(|(i, p)| flate2_member(p, i as u32 * 4))
        .collect();
    let want = parts.concat();
    for_each_split(&gz, 5, 18, |chunks| {
        let mut dec = GzDecoder::with_inflater(Stingy {
            inner: MinizInflate::new(),
            rng: Rng(9),
        });
        let mut out = Vec::new();
        let mut buf = vec![0u8; 5000];
        for chunk in chunks {
            let mut input = *chunk;
            loop {
                let cap = 1 + rng.below(5000) as usize;
                let (status, nin, nout) = dec.decode(input, &mut buf[..cap]).unwrap();
                out.extend_from_slice(&buf[..nout]);
                input = &input[nin..];
                if status != GzStatus::OutputFull {
                    assert!(input.is_empty());
                    break;
                }
            }
        }
        dec.finish().unwrap();
        assert_eq!(dec.members(), 3);
        assert_eq!(out, want);
    });
}

/// Data whose deflate stream is full of matches reaching far back (up to ~32 000 bytes, near
/// deflate's 32 KiB limit): random blocks, each repeated at a long distance.
fn far_match_data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let block_len = 1 + rng.below(32_000) as usize;
        let block = random_data(rng, block_len);
        let gap_len = rng.below(200) as usize;
        let gap = random_data(rng, gap_len);
        out.extend_from_slice(&block);
        out.extend_from_slice(&gap);
        out.extend_from_slice(&block);
    }
    out.truncate(len);
    out
}

#[test]
fn history_slides_keep_far_matches_intact_for_every_output_area() {
    let mut rng = Rng::from_env(19);
    let data = far_match_data(&mut rng, 400_000);
    let gz = [flate2_member(&data, 6), flate2_member(&data[..70_000], 1)].concat();
    let want = oracle(&gz);
    assert_eq!(want.len(), 470_000);
    // Areas smaller than, equal to and larger than the slide threshold and the history.
    for area in [
        1usize,
        300,
        4095,
        4096,
        5000,
        40_000,
        DEFAULT_OUTPUT_AREA_BYTES,
    ] {
        let rounds = if area < 1000 { 1 } else { 3 };
        for_each_split(&gz, rounds, 190 + area as u64, |chunks| {
            if area < 1000 && chunks.len() > 1000 {
                return; // byte-by-byte with a tiny area: too slow, and covered by other areas
            }
            let dec = GzDecoder::with_inflater(MinizInflate::with_output_area(area));
            let out = decode_chunks_with(dec, chunks, &mut rng).unwrap();
            assert!(out == want, "area {area}: output differs");
        });
    }
}

#[test]
fn a_match_reaching_before_the_stream_start_is_corrupt_even_after_slides() {
    // Far matches decode with every area (the history is kept across slides) ...
    let mut rng = Rng::from_env(20);
    let data = far_match_data(&mut rng, 100_000);
    let gz = flate2_member(&data, 9);
    for area in [1usize, 5000, DEFAULT_OUTPUT_AREA_BYTES] {
        let dec = GzDecoder::with_inflater(MinizInflate::with_output_area(area));
        assert_eq!(decode_chunks_with(dec, &[&gz], &mut rng).unwrap(), data);
    }
    // ... while a match reaching before the member's first byte is corrupt data, not a read of
    // stale buffer bytes. Fixed-Huffman block: BFINAL=1, BTYPE=01, then literal 'a' (0x61 -> code 0x30+0x61),
    // then length 3 (code 257, 7 bits 0000001) with distance code 1 (distance 2: one byte too
    // far back after one byte of output), then end of block.
    let mut bits = BitWriter::default();
    bits.put(1, 1);
    bits.put(1, 2);
    bits.put_rev(0x30 + 0x61, 8);
    bits.put_rev(1, 7);
    bits.put_rev(1, 5);
    bits.put_rev(0, 7);
    let deflate = bits.finish();
    let mut member = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    member.extend_from_slice(&deflate);
    member.extend_from_slice(&[0; 8]);
    // After a first member that slid the history, the bad member still fails: its match does
    // not reach into the previous member's bytes left in the buffer.
    let two = [gz.clone(), member].concat();
    for area in [1usize, 5000, DEFAULT_OUTPUT_AREA_BYTES] {
        let dec = GzDecoder::with_inflater(MinizInflate::with_output_area(area));
        let err = decode_chunks_with(dec, &[&two], &mut rng).unwrap_err();
        let at = gz.len() as u64;
        assert!(
            matches!(err, GzError::CorruptDeflate { offset } if (at + 10..=at + 13).contains(&offset)),
            "area {area}: {err:?}"
        );
    }
}

/// Writes deflate's LSB-first bit stream.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl BitWriter {
    /// Puts `len` bits of `v`, least significant first (header fields, extra bits).
    fn put(&mut self, v: u32, len: u32) {
        for i in 0..len {
            self.acc |= ((v >> i) & 1) << self.n;
            self.n += 1;
            if self.n == 8 {
                self.out.push(self.acc as u8);
                self.acc = 0;
                self.n = 0;
            }
        }
    }
    /// Puts a Huffman code of `len` bits, most significant first.
    fn put_rev(&mut self, code: u32, len: u32) {
        for i in (0..len).rev() {
            self.put((code >> i) & 1, 1);
        }
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}
