//! Fuzz target `gzip`: arbitrary bytes fed to `GzDecoder` in fuzzer-chosen splits with
//! fuzzer-chosen output buffer sizes. Must never panic or hang; checks the call invariants.
#![no_main]

use flinch_core::gzip::{GzDecoder, GzStatus};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first 4 bytes choose the split and output sizes; the rest is the stream.
    if data.len() < 4 {
        return;
    }
    let (knobs, stream) = data.split_at(4);
    let chunk_max = 1 + knobs[0] as usize * 64;
    let out_len = 1 + (u16::from_le_bytes([knobs[1], knobs[2]]) as usize % 40_000);
    let mut seed = knobs[3] as u64 | 1;
    let mut out = vec![0u8; out_len];

    let mut dec = GzDecoder::new();
    let mut total_out = 0u64;
    let mut rest = stream;
    let mut failed = false;
    'outer: while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = (1 + (seed >> 33) as usize % chunk_max).min(rest.len());
        let mut input = &rest[..n];
        rest = &rest[n..];
        loop {
            match dec.decode(input, &mut out) {
                Ok((status, nin, nout)) => {
                    assert!(nin <= input.len() && nout <= out.len());
                    total_out += nout as u64;
                    input = &input[nin..];
                    match status {
                        // Output full must mean progress was possible: the buffer is full.
                        GzStatus::OutputFull => assert_eq!(nout, out.len()),
                        GzStatus::NeedsInput | GzStatus::Done => {
                            assert!(input.is_empty());
                            break;
                        }
                    }
                }
                Err(e) => {
                    // A failed decoder stays failed, and the offset is within the input seen.
                    assert_eq!(dec.decode(&[], &mut out), Err(e));
                    assert!(e.offset() <= stream.len() as u64);
                    failed = true;
                    break 'outer;
                }
            }
        }
    }
    if !failed {
        // (A failing call may have written bytes it could not report: total_out counts them.)
        assert_eq!(dec.total_out(), total_out);
    }
    match dec.finish() {
        Ok(()) => assert!(!failed && dec.members() > 0 && dec.total_in() == stream.len() as u64),
        Err(e) => assert!(failed || e.is_truncated()),
    }
});
