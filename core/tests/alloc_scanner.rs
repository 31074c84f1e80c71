//! Counting-allocator proof: the scanner allocates nothing after construction, and the trace
//! summary allocates nothing per event once its tables have seen their keys (only amortized
//! doubling of the exact per-op duration lists, O(log n) in all).
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::Limits;
use flinch_core::json::{EventScanner, Scan};
use flinch_core::summary::TraceSummary;

fn doc(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"meta\": {\"x\": [1, 2]}, \"traceEvents\": [\n");
    for k in 0..n {
        if k > 0 {
            s.push_str(",\n");
        }
        let kind = ["X", "X", "B", "E"][k % 4];
        s.push_str(&format!(
            "  {{\"ph\": \"{kind}\", \"cat\": \"c{}\", \"name\": \"op \\\"{}\\\" \\u00e9\", \"pid\": 1, \"tid\": {}, \
             \"ts\": {}.{:03}, \"dur\": {}.5, \"args\": {{\"External id\": {k}, \"s\": \"x\\ny\"}}}}",
            k % 7,
            k % 50,
            k % 3,
            1_712_195_495_000_000u64 + k as u64 * 3,
            k % 1000,
            k % 90
        ));
    }
    s.push_str("\n]}");
    s.into_bytes()
}

fn feed(sc: &mut EventScanner, sum: Option<&mut TraceSummary>, data: &[u8]) -> u64 {
    let mut events = 0;
    let mut sum = sum;
    for chunk in data.chunks(4096) {
        let mut pos = 0;
        loop {
            let (s, nin) = sc.scan(&chunk[pos..]).unwrap();
            pos += nin;
            match s {
                Scan::Event => {
                    events += 1;
                    if let Some(t) = sum.as_deref_mut() {
                        t.add(&sc.event());
                    }
                }
                Scan::NeedsInput => break,
            }
        }
    }
    events
}

#[test]
fn scanner_allocates_nothing_after_construction_and_summary_nothing_per_event() {
    let data = doc(40_000);
    // Scanner alone: zero allocations while scanning 40k events split into 4 KiB chunks.
    let mut sc = EventScanner::new(Limits::EXACT);
    let (events, allocs) = count_allocs(|| feed(&mut sc, None, &data));
    assert_eq!(events, 40_000);
    assert_eq!(allocs, 0);

    // Bounded summary: warm up on the first half (tables see their keys), then the second half
    // of the events may only trigger amortized growth of the per-op duration lists.
    for limits in [Limits::BOUNDED, Limits::EXACT] {
        let mut sc = EventScanner::new(limits);
        let mut sum = TraceSummary::new(limits);
        let half = data.len() / 2;
        feed(&mut sc, Some(&mut sum), &data[..half]);
        let (n, allocs) = count_allocs(|| feed(&mut sc, Some(&mut sum), &data[half..]));
        assert!(n > 19_000);
        // 350 (cat, name) ops whose duration lists at most double twice each over the second
        // half (~57 -> ~114 values each); nothing per event.
        assert!(allocs <= 2 * 350, "{allocs} allocations for {n} events");
    }
}
