//! Compares the inflaters the native input pipeline could use, on one `.gz` file, single thread,
//! output discarded: flinch-core's `GzDecoder` over its miniz_oxide inflater, the same gzip
//! framing over zlib-rs raw inflate (what host/src/input.rs uses), the same keeping restart
//! points (what the join's first pass of a `.gz` does), and flate2's own
//! `MultiGzDecoder` with the zlib-rs backend. All check CRC32 and ISIZE.
//!
//! Usage: `cargo run --release -p flinch-host --example inflate_bench -- FILE.gz [RUNS [ONLY]]`
//! (ONLY: a substring of one decoder's name, e.g. `zlib-rs`, to time it alone under `/usr/bin/time`.)
use std::fs::File;
use std::io::Read;
use std::time::Instant;

use flinch_core::gzip::{GzDecoder, GzStatus, RawInflate};

/// The zlib-rs adapter the inputs read `.gz` with.
use flinch_host::input::ZlibRsInflate;

fn core_decoder(path: &str) -> u64 {
    framing(path, GzDecoder::new())
}

fn core_framing_zlib_rs(path: &str) -> u64 {
    framing(path, GzDecoder::with_inflater(ZlibRsInflate::new()))
}

/// As native's first pass of a join reads a `.gz`: stopping at every block, a restart point
/// kept every 4 MiB (docs/gzip-restart.md).
fn core_framing_zlib_rs_points(path: &str) -> u64 {
    let dec = GzDecoder::with_inflater(ZlibRsInflate::new().stopping_at_blocks());
    let mut index = flinch_core::gzip::RestartIndex::new(4 << 20, 512);
    framing_with(path, dec, &mut index)
}

fn framing<I: RawInflate>(path: &str, dec: GzDecoder<I>) -> u64 {
    framing_with(path, dec, &mut flinch_core::gzip::NoRestartPoints)
}

fn framing_with<I: RawInflate, S: flinch_core::gzip::RestartSink>(
    path: &str,
    mut dec: GzDecoder<I>,
    sink: &mut S,
) -> u64 {
    let mut file = File::open(path).unwrap();
    let mut inbuf = vec![0u8; 256 << 10];
    let mut out = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut inbuf).unwrap();
        if n == 0 {
            break;
        }
        let mut input = &inbuf[..n];
        loop {
            let (status, nin, nout) = dec.decode_with(input, &mut out, sink).unwrap();
            total += nout as u64;
            input = &input[nin..];
            if status != GzStatus::OutputFull {
                break;
            }
        }
    }
    dec.finish().unwrap();
    total
}

fn zlib_rs(path: &str) -> u64 {
    let file = std::io::BufReader::with_capacity(256 << 10, File::open(path).unwrap());
    let mut dec = flate2::bufread::MultiGzDecoder::new(file);
    let mut out = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = dec.read(&mut out).unwrap();
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    total
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: inflate_bench FILE.gz [RUNS]");
    let runs: usize = args.next().map_or(3, |s| s.parse().unwrap());
    let only = args.next();
    let gz_bytes = std::fs::metadata(&path).unwrap().len();
    for (name, f) in [
        (
            "flinch-core GzDecoder (miniz_oxide)",
            core_decoder as fn(&str) -> u64,
        ),
        ("flinch-core framing over zlib-rs", core_framing_zlib_rs),
        (
            "flinch-core framing over zlib-rs, restart points",
            core_framing_zlib_rs_points,
        ),
        ("flate2 MultiGzDecoder (zlib-rs)", zlib_rs),
    ] {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mut best = f64::MAX;
        let mut out = 0;
        for _ in 0..runs {
            let t = Instant::now();
            out = f(&path);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{name:38} {best:6.3} s  {:7.0} MB/s decoded  {:6.0} MB/s compressed  ({out} bytes)",
            out as f64 / best / 1e6,
            gz_bytes as f64 / best / 1e6
        );
    }
}
