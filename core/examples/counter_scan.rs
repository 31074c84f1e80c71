//! What reading counters' `args` costs the scanner (not a test):
//! `cargo run --release -p flinch-core --example counter_scan [EVENTS [c|C]]` (the second
//! argument runs one of the two, e.g. under callgrind).
//! Two documents of the same bytes: kernels with PyTorch's power and SM-activity counters
//! (`"ph":"C"`, value under `""`), and the same with `"ph":"c"` (no counter: the fast path
//! reads it and skips its `args`). Prints CPU ns per event of each, best of 5.
use std::time::Instant;

use flinch_core::Limits;
use flinch_core::json::{ArgValue, EventScanner, Scan};

fn doc(n: usize, ph: &str) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\":[\n");
    for k in 0..n {
        if k > 0 {
            s.push_str(",\n");
        }
        let ts = 1_712_195_495_000_000u64 + k as u64 * 7;
        match k % 3 {
            0 => s.push_str(&format!(
                "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void gemm<128>\",\"pid\":0,\"tid\":7,\"ts\":{ts},\"dur\":5,\"args\":{{\"External id\":{k},\"grid\":[1,2,3]}}}}"
            )),
            1 => s.push_str(&format!(
                "{{\"ph\":\"{ph}\",\"name\":\"Power (W)\",\"pid\":\"GPU 0 Counters\",\"tid\":0,\"ts\":{ts}.5,\"args\":{{\"\":{}.25}}}}",
                100 + k % 300
            )),
            _ => s.push_str(&format!(
                "{{\"ph\":\"{ph}\",\"name\":\"SM Active (%)\",\"pid\":\"GPU 0 Counters\",\"tid\":0,\"ts\":{ts}.5,\"args\":{{\"\":{}}}}}",
                k % 100
            )),
        }
    }
    s.push_str("\n]}");
    s.into_bytes()
}

fn scan(data: &[u8]) -> (u64, f64) {
    let mut sc = EventScanner::new(Limits::NATIVE);
    let (mut events, mut sum) = (0u64, 0.0);
    for chunk in data.chunks(1 << 20) {
        let mut pos = 0;
        loop {
            let (s, n) = sc.scan(&chunk[pos..]).unwrap();
            pos += n;
            match s {
                Scan::Event => {
                    events += 1;
                    if let ArgValue::Number(v) = sc.event().arg {
                        sum += v;
                    }
                }
                Scan::NeedsInput => break,
            }
        }
    }
    (events, sum)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3_000_000);
    let only = std::env::args().nth(2);
    for ph in ["c", "C"] {
        if only.as_deref().is_some_and(|o| o != ph) {
            continue;
        }
        let d = doc(n, ph);
        let mut best = f64::MAX;
        let mut out = (0, 0.0);
        for _ in 0..5 {
            let t = Instant::now();
            out = scan(&d);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "ph {ph}: {} events, {:.1} ns/event, {:.3} GB/s (sum of counters {})",
            out.0,
            best * 1e9 / out.0 as f64,
            d.len() as f64 / best / 1e9,
            out.1
        );
    }
}
