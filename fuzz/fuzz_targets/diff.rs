//! Fuzz target `diff`: arbitrary bytes as inputs A and B (split at the first NUL byte) through
//! `flinch_core::diff::DiffJob`, whole and in chunks (cut where the input's first byte says).
//! Must never panic or hang, and both ways give the same result or the same error. The bytes
//! read as little-endian u32 durations also go through the step comparison
//! (`flinch_core::diff::step_shift`), whose interval must hold its shift.
#![no_main]

use flinch_core::diff::{DiffJob, DiffOptions, step_shift};
use flinch_core::job::{Job, Need};
use libfuzzer_sys::fuzz_target;

fn drive(a: &[u8], b: &[u8], chunk: usize) -> Result<String, String> {
    let mut job = DiffJob::new(DiffOptions::new("a".into(), "b".into()));
    let run = |job: &mut DiffJob| -> Result<(), flinch_core::diff::DiffError> {
        loop {
            match job.need() {
                Need::File(name) => {
                    let bytes = if name == flinch_core::diff::A { a } else { b };
                    for c in bytes.chunks(chunk) {
                        job.write(c)?;
                    }
                    job.end()?;
                }
                // The whole file again answers ranges (the protocol allows it).
                Need::Ranges(_) => {
                    job.write(b)?;
                    job.end()?;
                }
                Need::Listing(_) | Need::Done => return Ok(()),
            }
        }
    };
    run(&mut job).map_err(|e| e.to_string())?;
    let r = job.finish().map_err(|e| e.to_string())?;
    serde_json::to_string(&r).map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&x| x == 0) {
        Some(k) => (&data[..k], &data[k + 1..]),
        None => (data, &data[..0]),
    };
    let chunk = 1 + usize::from(data.first().copied().unwrap_or(0));
    assert_eq!(drive(a, b, usize::MAX), drive(a, b, chunk), "chunked");
    let durations = |x: &[u8]| -> Vec<u64> {
        x.chunks_exact(4)
            .map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect()
    };
    if let Some(s) = step_shift(&durations(a), &durations(b))
        && let Some([lo, hi]) = s.ci95_ms
    {
        assert!(lo <= s.shift_ms && s.shift_ms <= hi, "{s:?}");
    }
});
