//! Fuzz target `merge`: arbitrary bytes as up to four summaries (split at NUL bytes) through
//! `flinch_core::merge::merge_json`. Must never panic or hang; when the merge succeeds, its output
//! merges to itself, and merging in reverse order or in two steps gives the same bytes
//! (commutative, associative), unless a sum overflows on the way. The merge job fed each summary
//! in chunks (cut where the input's first byte says) gives what `merge_json` gives, result or
//! error.
#![no_main]

use flinch_core::job::{Job, Need};
use flinch_core::merge::{MergeError, MergeJob, merge_json, to_json};
use libfuzzer_sys::fuzz_target;

/// `parts` through the merge job, each written in chunks of `chunk` bytes.
fn chunked(parts: &[&[u8]], chunk: usize) -> Result<String, MergeError> {
    let names = (0..parts.len()).map(|i| format!("summary {i}")).collect();
    let run = || {
        let mut job = MergeJob::new(names, 40)?;
        while let Need::File(_) = job.need() {
            for c in parts[job.file_index()].chunks(chunk) {
                job.write(c)?;
            }
            job.end()?;
        }
        job.finish()
    };
    run().map(|m| to_json(&m)).map_err(|e| e.into_merge_error())
}

fuzz_target!(|data: &[u8]| {
    let parts: Vec<&[u8]> = data.split(|&b| b == 0).take(4).collect();
    let merged = merge_json(&parts);
    let chunk = 1 + usize::from(data.first().copied().unwrap_or(0));
    assert_eq!(chunked(&parts, chunk), merged, "chunked through the job");
    let Ok(out) = merged else {
        return;
    };
    assert_eq!(merge_json(&[out.as_bytes()]).unwrap(), out, "idempotent");
    let rev: Vec<&[u8]> = parts.iter().rev().copied().collect();
    if let Ok(r) = merge_json(&rev) {
        assert_eq!(r, out, "commutative");
    }
    if parts.len() >= 2
        && let Ok(head) = merge_json(&parts[..parts.len() - 1])
        && let Ok(two) = merge_json(&[head.as_bytes(), parts[parts.len() - 1]])
    {
        assert_eq!(two, out, "associative");
    }
});
