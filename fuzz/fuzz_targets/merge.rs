//! Fuzz target `merge`: arbitrary bytes as up to four summaries (split at NUL bytes) through
//! `flinch_core::merge::merge_json`. Must never panic or hang; when the merge succeeds, its output
//! merges to itself, and merging in reverse order or in two steps gives the same bytes
//! (commutative, associative), unless a sum overflows on the way.
#![no_main]

use flinch_core::merge::merge_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts: Vec<&[u8]> = data.split(|&b| b == 0).take(4).collect();
    let Ok(out) = merge_json(&parts) else {
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
