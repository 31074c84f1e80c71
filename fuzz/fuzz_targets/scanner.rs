//! Fuzz target `scanner`: arbitrary bytes fed to `EventScanner` (and every event to
//! `TraceSummary`) whole and in fuzzer-chosen splits (a counter's `args` number included). Must never panic or hang, and the split
//! run must give exactly what the whole run gives (events, warnings, end state, error); so must
//! a scan in two pieces, the second by a scanner resumed where the first ended between events
//! (`element_boundary` / `resume_at`, what native's two-thread scan relies on). A second summary
//! fed through `add_batched`, one memo per (cat, name) pair forgotten every few events (as native's
//! batches do), must give the same result as `add`.
#![no_main]

use flinch_core::Limits;
use flinch_core::json::{ArgValue, EventScanner, Scan, ScanEnd, ScanError, ScanWarnings};

/// An event's (ph, name, dur) and the number of a counter's `args`.
type Event = (Vec<u8>, Option<Vec<u8>>, Option<i64>, ArgValue);
/// An event's (cat, name).
type Pair = (Option<Vec<u8>>, Option<Vec<u8>>);
use flinch_core::summary::TraceSummary;
use flinch_core::summary::batch::OpMemo;
use libfuzzer_sys::fuzz_target;

type Outcome = (Vec<Event>, ScanEnd, ScanWarnings, Option<ScanError>);

fn run(doc: &[u8], limits: Limits, chunk_max: usize, mut seed: u64) -> Outcome {
    let mut sc = EventScanner::new(limits);
    let mut sum = TraceSummary::new(limits);
    let mut memo_sum = TraceSummary::new(limits);
    let mut memos: Vec<(Pair, Option<OpMemo>)> = Vec::new();
    let forget_every = 1 + (seed % 7) as usize;
    let mut events = Vec::new();
    let mut error = None;
    let mut rest = doc;
    let mut consumed = 0u64;
    'outer: while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = (1 + (seed >> 33) as usize % chunk_max).min(rest.len());
        let chunk = &rest[..n];
        rest = &rest[n..];
        let mut pos = 0;
        loop {
            match sc.scan(&chunk[pos..]) {
                Ok((what, nin)) => {
                    assert!(nin <= chunk.len() - pos);
                    pos += nin;
                    consumed += nin as u64;
                    match what {
                        Scan::Event => {
                            let e = sc.event();
                            events.push((
                                e.ph.to_vec(),
                                e.name.map(<[u8]>::to_vec),
                                e.dur_ns.ns(),
                                e.arg,
                            ));
                            sum.add(&e);
                            if events.len() % forget_every == 0 {
                                memos.clear();
                            }
                            let pair = (e.cat.map(<[u8]>::to_vec), e.name.map(<[u8]>::to_vec));
                            let k = match memos.iter().position(|(p, _)| *p == pair) {
                                Some(k) => k,
                                None => {
                                    memos.push((pair, None));
                                    memos.len() - 1
                                }
                            };
                            memo_sum.add_batched(&e, &mut memos[k].1);
                        }
                        Scan::NeedsInput => {
                            assert_eq!(pos, chunk.len());
                            break;
                        }
                    }
                }
                Err(e) => {
                    // A failed scanner stays failed; the offset lies within what was fed.
                    assert_eq!(sc.scan(b"]"), Err(e));
                    assert!(
                        e.offset >= consumed && e.offset < consumed + (chunk.len() - pos) as u64
                    );
                    error = Some(e);
                    break 'outer;
                }
            }
        }
    }
    let end = sc.finish();
    assert_eq!(end.events, events.len() as u64);
    let warnings = *sc.warnings();
    let result = sum.finish("fuzz", &end, &warnings, 40).to_json();
    let memo_result = memo_sum.finish("fuzz", &end, &warnings, 40).to_json();
    assert_eq!(result, memo_result, "add_batched differs from add");
    (events, end, warnings, error)
}

/// Feeds all of `doc` to `sc` at once; the events, and the error if any.
fn feed(sc: &mut EventScanner, doc: &[u8]) -> (Vec<Event>, Option<ScanError>) {
    let mut events = Vec::new();
    let mut pos = 0;
    while pos < doc.len() {
        match sc.scan(&doc[pos..]) {
            Ok((what, nin)) => {
                pos += nin;
                if what == Scan::Event {
                    let e = sc.event();
                    events.push((
                        e.ph.to_vec(),
                        e.name.map(<[u8]>::to_vec),
                        e.dur_ns.ns(),
                        e.arg,
                    ));
                }
            }
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// For the first places after a `,`: when a scan of `doc[..q]` ends between events, a scanner
/// resumed there must continue exactly as the whole scan did.
fn check_resume(doc: &[u8], limits: Limits, whole: &Outcome) {
    for q in doc
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b',')
        .map(|(i, _)| i + 1)
        .take(12)
    {
        let mut a = EventScanner::new(limits);
        let (mut events, error) = feed(&mut a, &doc[..q]);
        if error.is_some() {
            continue;
        }
        let Some(at) = a.element_boundary() else {
            continue;
        };
        assert_eq!(at.offset, q as u64);
        let mut b = EventScanner::resume_at(limits, at);
        let (more, error) = feed(&mut b, &doc[q..]);
        events.extend(more);
        let mut end = b.finish();
        end.events += a.events();
        let mut warnings = *a.warnings();
        warnings += b.warnings();
        assert_eq!(&(events, end, warnings, error), whole);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (knobs, doc) = data.split_at(3);
    let limits = if knobs[0] & 1 == 0 {
        Limits::EXACT
    } else {
        Limits {
            max_string_bytes: 1 + knobs[0] as usize % 17,
            max_event_bytes: 64 + knobs[1] as usize * 4,
            max_ops: 3,
            max_categories: 2,
            max_intervals: 4,
            max_open_slices: 3,
            max_exact_values: 4,
            ..Limits::BOUNDED
        }
    };
    let whole = run(doc, limits, usize::MAX, 1);
    let split = run(doc, limits, 1 + knobs[1] as usize % 64, knobs[2] as u64 | 1);
    assert_eq!(whole, split);
    check_resume(doc, limits, &whole);
});
