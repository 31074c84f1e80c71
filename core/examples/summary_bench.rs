//! The trace summary alone, by CPU time (not a test):
//! `SUMMARY_BENCH_FILE=trace.json cargo run --release -p flinch-core --example summary_bench [PASSES]`.
//! Scans the file once (untimed) into an in-memory list of events (their strings in one arena,
//! as the native pipeline's batches hold them), then times `TraceSummary` (`Limits::NATIVE`, the
//! CLI's default) over that list, `add` and `finish` separately, `PASSES` times (default 3).
//! With `SUMMARY_BENCH_MEMO=1`, through `add_batched` with one memo per (cat, name) per 2048
//! events, as the native pipeline's batches do (the pairs are numbered untimed, at the scan).
//! Prints CPU seconds per pass, ns per event, and a hash of the `--json` text, which must not
//! change when the summary is made faster. For instruction counts of the summary alone (the
//! machine is shared, so CPU time is noisy), see [`add_all`].
use std::time::Instant;

use flinch_core::Limits;
use flinch_core::json::{Event, EventScanner, IdField, NumField, Scan, ScanEnd, ScanWarnings};
use flinch_core::summary::{DEFAULT_TOP_OPS, TraceSummary};

/// A (cat, name) pair, owned.
type Pair = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A string in the arena: `(start, len)`; `len == u32::MAX` for `None`.
type Span = (u32, u32);

struct Rec {
    /// The event's (cat, name) pair, numbered in first-seen order over the file.
    pair: u32,
    ph: Span,
    cat: Span,
    name: Span,
    ts_ns: NumField,
    dur_ns: NumField,
    pid: IdField,
    tid: IdField,
    id: IdField,
    scope: IdField,
}

fn span(text: &mut Vec<u8>, s: Option<&[u8]>) -> Span {
    match s {
        None => (0, u32::MAX),
        Some(s) => {
            let start = text.len() as u32;
            text.extend_from_slice(s);
            (start, s.len() as u32)
        }
    }
}

fn get(text: &[u8], (start, len): Span) -> Option<&[u8]> {
    (len != u32::MAX).then(|| &text[start as usize..(start + len) as usize])
}

/// The event a record stands for, its strings in `text`.
fn event<'a>(r: &Rec, text: &'a [u8]) -> Event<'a> {
    Event {
        ph: get(text, r.ph).unwrap_or_default(),
        cat: get(text, r.cat),
        name: get(text, r.name),
        ts_ns: r.ts_ns,
        dur_ns: r.dur_ns,
        pid: r.pid,
        tid: r.tid,
        id: r.id,
        scope: r.scope,
        quoted_times: 0,
        arg: flinch_core::json::ArgValue::Missing,
    }
}

/// CPU seconds of this thread: the scheduler's run time in ns (`/proc/thread-self/schedstat`),
/// finer than the 10 ms ticks of `stat`.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: f64 = stat
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    ns / 1e9
}

/// FNV-1a of the output text, to compare runs.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn main() {
    let passes: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let path = std::env::var("SUMMARY_BENCH_FILE").expect("set SUMMARY_BENCH_FILE to a trace");
    let memo = std::env::var_os("SUMMARY_BENCH_MEMO").is_some();
    let data = std::fs::read(&path).expect("SUMMARY_BENCH_FILE");
    let limits = Limits::NATIVE;
    let mut recs = Vec::new();
    let mut text = Vec::new();
    let mut pairs: std::collections::HashMap<Pair, u32> = std::collections::HashMap::new();
    let mut sc = EventScanner::new(limits);
    for chunk in data.chunks(1 << 20) {
        let mut pos = 0;
        loop {
            let (s, nin) = sc.scan(&chunk[pos..]).expect("a valid trace");
            pos += nin;
            match s {
                Scan::Event => {
                    let e = sc.event();
                    let key = (e.cat.map(<[u8]>::to_vec), e.name.map(<[u8]>::to_vec));
                    let next = pairs.len() as u32;
                    let pair = *pairs.entry(key).or_insert(next);
                    recs.push(Rec {
                        pair,
                        ph: span(&mut text, Some(e.ph)),
                        cat: span(&mut text, e.cat),
                        name: span(&mut text, e.name),
                        ts_ns: e.ts_ns,
                        dur_ns: e.dur_ns,
                        pid: e.pid,
                        tid: e.tid,
                        id: e.id,
                        scope: e.scope,
                    });
                }
                Scan::NeedsInput => break,
            }
        }
    }
    let end = sc.finish();
    let warnings = *sc.warnings();
    drop(data);
    println!(
        "{path}: {} events, {:.1} MB of strings",
        recs.len(),
        text.len() as f64 / 1e6
    );
    for pass in 0..passes {
        let (c0, t0) = (cpu_s(), Instant::now());
        let summary = if memo {
            add_all_memo(&recs, &text, limits, pairs.len())
        } else {
            add_all(&recs, &text, limits)
        };
        let (c1, t1) = (cpu_s(), Instant::now());
        let json = finish(summary, &path, &end, &warnings);
        let (c2, t2) = (cpu_s(), Instant::now());
        println!(
            "pass {pass}: add {:.4} cpu-s ({:.1} ns/event; {:.4} wall), finish {:.4} cpu-s ({:.4} wall); json fnv {:016x}",
            c1 - c0,
            (c1 - c0) * 1e9 / recs.len() as f64,
            (t1 - t0).as_secs_f64(),
            c2 - c1,
            (t2 - t1).as_secs_f64(),
            fnv(json.as_bytes())
        );
    }
}

/// Every event into a new summary. Not inlined, so that an instruction count can be limited
/// to it: `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='summary_bench::add_all'`.
#[inline(never)]
fn add_all(recs: &[Rec], text: &[u8], limits: Limits) -> TraceSummary {
    let mut summary = TraceSummary::new(limits);
    for r in recs {
        summary.add(&event(r, text));
    }
    summary
}

/// As [`add_all`], through `TraceSummary::add_batched` with one memo per pair, forgotten every
/// 2048 events: as the native pipeline's batches do (`SUMMARY_BENCH_MEMO=1`).
#[inline(never)]
fn add_all_memo(recs: &[Rec], text: &[u8], limits: Limits, pairs: usize) -> TraceSummary {
    let mut summary = TraceSummary::new(limits);
    let mut memos = vec![None; pairs];
    for batch in recs.chunks(2048) {
        memos.iter_mut().for_each(|m| *m = None);
        for r in batch {
            summary.add_batched(&event(r, text), &mut memos[r.pair as usize]);
        }
    }
    summary
}

/// The result's `--json` text (not inlined, as [`add_all`]).
#[inline(never)]
fn finish(summary: TraceSummary, path: &str, end: &ScanEnd, warnings: &ScanWarnings) -> String {
    summary
        .finish(path, end, warnings, DEFAULT_TOP_OPS)
        .to_json()
}
