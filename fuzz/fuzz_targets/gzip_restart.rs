//! Fuzz target `gzip_restart`: restarting a gzip stream at a restart point gives the bytes that
//! decoding from the start gives from there. The stream is the fuzz input's bytes compressed by
//! flate2 into one or more members (valid data, many block layouts), or, with the first knob's
//! top bit set, the bytes themselves (mostly invalid: then the restarted output and the one from
//! the start agree up to where the shorter stops). Decoding from the start (the inputs' zlib-rs
//! inflater stopping at every block, fed in knob-sized chunks) collects a point at every block
//! boundary; each is then resumed (`GzDecoder::resume`) and decoded to the end.
#![no_main]

use std::io::Write;

use flinch_core::gzip::{GzDecoder, RawInflate, RestartPoint, RestartSink};
use libfuzzer_sys::fuzz_target;

use flinch_host::input::ZlibRsInflate;

/// Every point, with its history.
#[derive(Default)]
struct All(Vec<(RestartPoint, Vec<u8>)>);

impl RestartSink for All {
    fn wants(&self, _: u64) -> bool {
        self.0.len() < 64
    }
    fn add<I: RawInflate + ?Sized>(&mut self, point: &RestartPoint, inflater: &mut I) {
        let mut h = vec![0u8; 32 * 1024];
        let n = inflater.history(&mut h);
        h.truncate(n);
        self.0.push((*point, h));
    }
}

/// Decodes `input` in chunks of `chunk` with `dec`, offering points to `sink`: the bytes, and
/// whether the stream ended cleanly.
fn decode<S: RestartSink>(
    mut dec: GzDecoder<ZlibRsInflate>,
    input: &[u8],
    chunk: usize,
    sink: &mut S,
) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4093];
    for piece in input.chunks(chunk) {
        let mut piece = piece;
        loop {
            match dec.decode_with(piece, &mut buf, sink) {
                Ok((_, nin, nout)) => {
                    out.extend_from_slice(&buf[..nout]);
                    piece = &piece[nin..];
                    if piece.is_empty() && nout == 0 {
                        break;
                    }
                    if out.len() > 16 << 20 {
                        return (out, false);
                    }
                }
                Err(_) => return (out, false),
            }
        }
    }
    // Flush what is pending at the end.
    loop {
        match dec.decode_with(&[], &mut buf, sink) {
            Ok((_, _, 0)) => break,
            Ok((_, _, n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (out, false),
        }
    }
    let ok = dec.finish().is_ok() && dec.trailing_garbage_at().is_none();
    (out, ok)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (k0, k1, body) = (data[0], data[1], &data[2..]);
    let chunk = 1 + k1 as usize * 37;
    let raw = k0 & 0x80 != 0;
    let gz = if raw {
        body.to_vec()
    } else {
        // Members at knob-chosen cuts, each at a level 0..=9.
        let parts = 1 + (k0 as usize >> 4 & 3);
        let mut gz = Vec::new();
        for (i, part) in body.chunks(body.len().div_ceil(parts).max(1)).enumerate() {
            let level = (k0 as u32 + i as u32 * 3) % 10;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(part).unwrap();
            gz.extend(e.finish().unwrap());
        }
        gz
    };
    let mut points = All::default();
    let dec = GzDecoder::with_inflater(ZlibRsInflate::new().stopping_at_blocks());
    let (whole, ok) = decode(dec, &gz, chunk, &mut points);
    if !raw {
        assert!(ok, "flate2's stream decodes");
        assert_eq!(whole, body);
    }
    for (p, history) in &points.0 {
        assert!(p.out_offset <= whole.len() as u64 && p.in_offset <= gz.len() as u64);
        let byte = if p.bits > 0 {
            gz[p.in_offset as usize - 1]
        } else {
            0
        };
        let dec =
            GzDecoder::resume(ZlibRsInflate::new(), p, byte, history).expect("zlib-rs restarts");
        let rest = &gz[p.in_offset as usize..];
        let (tail, tail_ok) = decode(dec, rest, chunk, &mut flinch_core::gzip::NoRestartPoints);
        let want = &whole[p.out_offset as usize..];
        if ok {
            assert!(tail_ok, "the stream ends cleanly from {p:?} too");
            assert_eq!(tail, want, "from {p:?}");
        } else {
            // The resumed member's CRC is not checked: it may decode further than from the start.
            let n = tail.len().min(want.len());
            assert_eq!(&tail[..n], &want[..n], "from {p:?}");
            assert!(tail.len() >= want.len() || !tail_ok, "from {p:?}");
        }
    }
});
