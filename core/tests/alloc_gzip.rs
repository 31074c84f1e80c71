//! Proves that `GzDecoder::decode` allocates nothing after construction: a counting global
//! allocator counts the allocations made on this thread while a multi-member stream is decoded
//! in small chunks with a small output buffer.
mod common;

use std::io::Write;

use common::counting_alloc::count_allocs;

use flinch_core::gzip::{GzDecoder, GzStatus};

fn gzip_member(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[test]
fn decode_allocates_nothing_after_construction() {
    let text: Vec<u8> = (0..200_000u32)
        .flat_map(|i| {
            format!("{{\"ph\":\"X\",\"ts\":{i}.5,\"name\":\"k{}\"}},", i % 97).into_bytes()
        })
        .collect();
    let gz = [gzip_member(&text), gzip_member(b"tail"), gzip_member(&text)].concat();
    let mut out = vec![0u8; 3000];
    let mut dec = GzDecoder::new();

    let mut total_out = 0u64;
    let ((), allocs) = count_allocs(|| {
        for chunk in gz.chunks(777) {
            let mut input = chunk;
            loop {
                let (status, nin, nout) = dec.decode(input, &mut out).unwrap();
                total_out += nout as u64;
                input = &input[nin..];
                if status != GzStatus::OutputFull {
                    break;
                }
            }
        }
        dec.finish().unwrap();
    });

    assert_eq!(total_out, 2 * text.len() as u64 + 4);
    assert_eq!(dec.members(), 3);
    assert_eq!(allocs, 0, "GzDecoder::decode allocated");
}
