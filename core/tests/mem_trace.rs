//! Memory of the trace summary stays within what `Limits` allow while it stays exact: with a
//! spill (a file) for the busy intervals and a replay for further passes, the peak of live heap
//! bytes (tallied by a global allocator) over a whole summary, `finish` included, stays under a
//! bound computed from the limits, for an input 5x larger too; the same input in
//! `Limits::EXACT` (memory alone) goes past that bound, so the check can fail.
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use flinch_core::Limits;
use flinch_core::intervals::Interval;
use flinch_core::json::{Event, EventScanner, Scan};
use flinch_core::summary::{
    EventReplay, IntervalSpill, ReplayError, TraceSummary, TraceSummaryResult,
};

#[path = "common/peak_heap.rs"]
mod peak_heap;

/// `n` X events over 200 ops: a host track in time order and a device track whose clock runs
/// further and further ahead (as a GPU queue does), so the busy unions are not in time order.
fn doc(n: u64) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let (mut host, mut dev) = (1_000_000u64, 1_000_000u64);
    for k in 0..n {
        if k > 0 {
            s.push_str(",\n");
        }
        let op = rnd(200);
        let (cat, ts, dur) = if k % 2 == 0 {
            host += 3_000 + rnd(2_000);
            ("cpu_op", host, 1_000 + rnd(1_500))
        } else {
            dev = dev.max(host) + 500 + rnd(1_000);
            let d = 2_000 + rnd(9_000);
            let ts = dev;
            dev += d;
            ("kernel", ts, d)
        };
        s.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"op{op}\", \"ts\": {}.{:03}, \"dur\": {}.{:03}, \"args\": {{\"k\": {k}}}}}",
            ts / 1000,
            ts % 1000,
            dur / 1000,
            dur % 1000
        ));
    }
    s.push_str("\n]}");
    s.into_bytes()
}

/// Runs in a temporary file, buffer reused.
struct TestSpill {
    file: File,
    len: u64,
    buf: Vec<u8>,
}

impl IntervalSpill for TestSpill {
    fn write_run(&mut self, run: &[Interval]) -> Option<u64> {
        self.buf.clear();
        for iv in run {
            self.buf.extend_from_slice(&iv.start_ns.to_le_bytes());
            self.buf.extend_from_slice(&iv.end_ns.to_le_bytes());
        }
        self.file.write_all(&self.buf).ok()?;
        let handle = self.len;
        self.len += run.len() as u64;
        Some(handle)
    }

    fn read_run(&mut self, handle: u64, at: u64, out: &mut [Interval]) -> bool {
        self.buf.resize(out.len() * 16, 0);
        if self
            .file
            .read_exact_at(&mut self.buf, (handle + at) * 16)
            .is_err()
        {
            return false;
        }
        for (iv, b) in out.iter_mut().zip(self.buf.chunks_exact(16)) {
            iv.start_ns = i64::from_le_bytes(b[..8].try_into().unwrap());
            iv.end_ns = i64::from_le_bytes(b[8..].try_into().unwrap());
        }
        true
    }
}

struct Replay(Arc<Vec<u8>>, Limits);

impl EventReplay for Replay {
    fn replay(&mut self, sink: &mut dyn FnMut(&Event<'_>)) -> Result<u64, ReplayError> {
        let mut sc = EventScanner::new(self.1);
        for chunk in self.0.chunks(64 << 10) {
            let mut pos = 0;
            while let (Scan::Event, nin) = sc.scan(&chunk[pos..])? {
                pos += nin;
                sink(&sc.event());
            }
        }
        Ok(sc.finish().events)
    }
}

/// Peak live heap bytes over a whole summary of `data` (scanner, summary, `finish`), and the
/// result; `io`: with a spill and a replay.
fn peak(data: &Arc<Vec<u8>>, limits: Limits, io: bool) -> (usize, TraceSummaryResult) {
    peak_with(data, limits, io, false)
}

/// [`peak`], with the mergeable section when `mergeable`.
fn peak_with(
    data: &Arc<Vec<u8>>,
    limits: Limits,
    io: bool,
    mergeable: bool,
) -> (usize, TraceSummaryResult) {
    let path = std::env::temp_dir().join(format!("flinch-mem-trace-{}", std::process::id()));
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let spill = Box::new(TestSpill {
        file,
        len: 0,
        buf: Vec::with_capacity(1 << 20),
    });
    let replay = Box::new(Replay(Arc::clone(data), limits));
    peak_heap::peak_during(|| {
        let mut sc = EventScanner::new(limits);
        let mut sum = TraceSummary::new(limits);
        sum.set_mergeable(mergeable);
        if io {
            sum.set_spill(spill);
            sum.set_replay(replay);
        }
        for chunk in data.chunks(64 << 10) {
            let mut pos = 0;
            while let (Scan::Event, nin) = sc.scan(&chunk[pos..]).unwrap() {
                pos += nin;
                sum.add(&sc.event());
            }
        }
        let end = sc.finish();
        let w = *sc.warnings();
        sum.finish("t", &end, &w, 40)
    })
}

/// The peak is of the whole process: the tests here run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn exact_within_the_memory_the_limits_allow() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let limits = Limits {
        max_ops: 1024,
        max_categories: 16,
        max_open_slices: 64,
        max_intervals: 2048,
        max_exact_values: 1 << 14,
        ..Limits::NATIVE
    };
    // What the limits allow: the interval budget (up to ~3x 16 bytes each after a union
    // retires half, plus its twice-the-budget storage), the durations budget (4 bytes a unit;
    // the passes collect as many 8-byte values into half of it), the merge's 4 MiB of run
    // buffers (up to 1,024 runs per union), 32 KiB per counting range (at most 8 per listed op,
    // 40 ops), and 1 MiB for the op and category tables, the scanner and the result.
    let bound = 16 * 4 * limits.max_intervals
        + 4 * limits.max_exact_values
        + (4 << 20)
        + 40 * 8 * (32 << 10)
        + (1 << 20);
    let mut peaks = Vec::new();
    for n in [100_000, 500_000] {
        let data = Arc::new(doc(n));
        let (exact_peak, exact) = peak(&data, Limits::EXACT, false);
        let (p, r) = peak(&data, limits, true);
        assert!(r.approximations.is_none(), "{:?}", r.approximations);
        assert_eq!(r.to_json(), exact.to_json(), "{n} events");
        assert!(p <= bound, "{n} events: peak {p} > bound {bound}");
        peaks.push((n, p, exact_peak));
    }
    // 5x the input: the peak grows by less than a tenth of what memory alone needs more (the
    // refinement's counting ranges, which the bound covers), and memory alone goes past the
    // bound, so the check can fail.
    let (bounded, alone) = (peaks[1].1 - peaks[0].1, peaks[1].2 - peaks[0].2);
    assert!(bounded < alone / 10, "{peaks:?}");
    assert!(peaks[1].2 > bound, "{peaks:?} vs {bound}");
}

/// With the mergeable section, ops past the durations budget are counted in a further pass
/// within what of the same budget the other ops' histograms left: the peak stays under the bound
/// above plus that budget again and the section's ops (their histograms within the budget), and
/// the section equals the exact one at the scale that fit, which a warning states.
#[test]
fn mergeable_section_within_the_memory_the_limits_allow() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use flinch_core::merge::histogram::SCALE;
    let limits = Limits {
        max_ops: 1024,
        max_categories: 16,
        max_open_slices: 64,
        max_intervals: 2048,
        max_exact_values: 1 << 16,
        ..Limits::NATIVE
    };
    let data = Arc::new(doc(300_000));
    let (_, exact) = peak_with(&data, Limits::EXACT, false, true);
    let (p, r) = peak_with(&data, limits, true, true);
    let got = r.mergeable_state().unwrap();
    let mut want = exact.mergeable_state().unwrap();
    let warnings = &got.ranks[0].warnings;
    let stated = format!("the mergeable histograms are at scale {},", got.scale);
    assert_eq!(
        warnings.iter().any(|w| w.starts_with(&stated)),
        got.scale < SCALE,
        "{warnings:?}"
    );
    want.ranks[0].warnings = warnings.clone();
    want.scale = got.scale;
    for o in &mut want.ops {
        o.histogram = o
            .histogram
            .as_ref()
            .map(|h| h.downscaled(SCALE - got.scale));
    }
    assert_eq!(got, want);
    // The section's ops, 256 bytes each; their histograms are within the durations budget.
    let section = 256 * got.ops.len();
    let histograms: usize = got
        .ops
        .iter()
        .map(|o| o.histogram.as_ref().map_or(0, |h| h.heap_bytes()))
        .sum();
    assert!(histograms <= 4 * limits.max_exact_values, "{histograms}");
    let bound = 16 * 4 * limits.max_intervals
        + 2 * 4 * limits.max_exact_values
        + (4 << 20)
        + 40 * 8 * (32 << 10)
        + (1 << 20)
        + section;
    eprintln!(
        "scale {}, peak {p}, bound {bound}, histograms {histograms}",
        got.scale
    );
    assert!(p <= bound, "peak {p} > bound {bound}");
}

/// `n` X events over `ops` distinct ops (one name each), durations spread over 1 µs .. ~1 s so
/// that each op's histogram holds many buckets.
fn many_ops_doc(n: u64, ops: u64) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..n {
        if k > 0 {
            s.push_str(",\n");
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let dur_ns = 1_000 + (x % 1_000) * (1u64 << ((x >> 58) % 20));
        s.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op{}\", \"ts\": {k}, \"dur\": {}.{:03}}}",
            k % ops,
            dur_ns / 1000,
            dur_ns % 1000
        ));
    }
    s.push_str("\n]}");
    s.into_bytes()
}

/// The mergeable section's text grows with the ops a trace names (every op's histogram), so
/// `write_json` gives it out in pieces, one op at a time: writing it holds no more than a small
/// part of what it writes, and the pieces are `to_json`'s text.
#[test]
fn the_mergeable_text_is_written_without_being_held() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let data = Arc::new(many_ops_doc(400_000, 8_000));
    let (_, r) = peak_with(&data, Limits::NATIVE, true, true);
    let mut written = Vec::new();
    let mut bytes = 0usize;
    let (peak_bytes, ok) = peak_heap::peak_during(|| {
        r.write_json(&mut |piece: &str| {
            bytes += piece.len();
            Ok::<(), serde_json::Error>(())
        })
    });
    ok.unwrap();
    assert!(bytes > 4 << 20, "the section is large here: {bytes} bytes");
    assert!(
        peak_bytes < bytes / 8,
        "writing {bytes} bytes held {peak_bytes} bytes of heap at its peak"
    );
    r.write_json(&mut |piece: &str| {
        written.extend_from_slice(piece.as_bytes());
        Ok::<(), serde_json::Error>(())
    })
    .unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), r.to_json());
}
