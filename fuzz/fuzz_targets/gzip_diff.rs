//! Fuzz target `gzip_diff`: the core gzip decoder against flate2 (`MultiGzDecoder`) on the same
//! bytes. When flate2 decodes the input, the core must give the same bytes; when the core decodes
//! it with no trailing garbage, flate2 must give the same bytes (and succeed, unless the input ends
//! in zero padding, which flate2 refuses); when either fails, what each produced before failing
//! is a prefix of what the other produced (both only emit correctly inflated bytes).
#![no_main]

use std::io::Read;

use flinch_core::gzip::{GzDecoder, GzStatus};
use libfuzzer_sys::fuzz_target;

/// The core decoder over the whole input in chunks of `chunk`: output, and whether it ended
/// cleanly with no trailing garbage (and the garbage flag).
fn core_decode(input: &[u8], chunk: usize) -> (Vec<u8>, bool, bool) {
    let mut dec = GzDecoder::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    for piece in input.chunks(chunk) {
        let mut piece = piece;
        loop {
            match dec.decode(piece, &mut buf) {
                Ok((status, nin, nout)) => {
                    out.extend_from_slice(&buf[..nout]);
                    piece = &piece[nin..];
                    if status != GzStatus::OutputFull {
                        break;
                    }
                }
                Err(_) => return (out, false, false),
            }
        }
    }
    let garbage = dec.trailing_garbage_at().is_some();
    (out, dec.finish().is_ok(), garbage)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let chunk = 1 + data[0] as usize * 16;
    let input = &data[1..];
    let (ours, ok, garbage) = core_decode(input, chunk);
    let mut theirs = Vec::new();
    let mut reader = flate2::read::MultiGzDecoder::new(input);
    let mut buf = [0u8; 4096];
    let theirs_ok = loop {
        match reader.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => {
                theirs.extend_from_slice(&buf[..n]);
                // Bounded: a bomb stops both comparisons at the same length.
                if theirs.len() > 64 << 20 {
                    return;
                }
            }
            Err(_) => break false,
        }
    };
    if theirs_ok && !input.is_empty() {
        assert!(ok, "flate2 decoded {} bytes, the core failed", theirs.len());
        assert_eq!(ours, theirs);
    }
    if ok && !garbage {
        // flate2 refuses trailing zero padding, which gzip -d and the core accept: then it
        // fails after the same bytes.
        let padded = input.last() == Some(&0);
        assert!(
            theirs_ok || padded,
            "the core decoded {} bytes, flate2 failed",
            ours.len()
        );
        assert_eq!(ours, theirs);
    }
    assert!(
        ours.starts_with(&theirs) || theirs.starts_with(&ours),
        "outputs differ before either failed ({} vs {} bytes)",
        ours.len(),
        theirs.len()
    );
});
