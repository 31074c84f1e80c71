//! Quick single-core scanner throughput check (not a test):
//! `cargo run --release -p flinch-core --example scan_bench [MB]`.
//! Generates a deterministic Kineto-like trace in memory, then times the scanner alone, the
//! scanner plus the trace summary, and a bare boundary count (memchr of `{`) as a floor.
use std::time::Instant;

use flinch_core::Limits;
use flinch_core::json::{EventScanner, Scan};

fn kineto_like(target_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target_bytes + 4096);
    out.extend_from_slice(b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\"}],\n  \"traceEvents\": [\n");
    let mut state: u64 = 42;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let names = [
        "aten::mm",
        "aten::add_",
        "autograd::engine::evaluate_function: DivBackward1",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
        "cudaLaunchKernel",
        "Memcpy HtoD (Pageable -> Device)",
    ];
    let cats = [
        "cpu_op",
        "kernel",
        "cuda_runtime",
        "gpu_memcpy",
        "python_function",
    ];
    let mut ts: u64 = 1_712_195_495_519_689_047;
    let mut first = true;
    while out.len() < target_bytes {
        if !first {
            out.extend_from_slice(b",\n");
        }
        first = false;
        ts += next() % 5000;
        let dur = next() % 100_000;
        let cat = cats[(next() % cats.len() as u64) as usize];
        let name = names[(next() % names.len() as u64) as usize];
        let ev = format!(
            "  {{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": 1102, \"tid\": 1262,\n    \"ts\": {}.{:03}, \"dur\": {}.{:03},\n    \"args\": {{\n      \"External id\": {},\"Sequence number\": {}, \"Fwd thread id\": 1, \"Ev Idx\": {}\n    }}\n  }}",
            ts / 1000,
            ts % 1000,
            dur / 1000,
            dur % 1000,
            next() % 100000,
            next() % 100000,
            next() % 1000
        );
        out.extend_from_slice(ev.as_bytes());
    }
    out.extend_from_slice(b"\n  ],\n  \"traceName\": \"x\"\n}\n");
    out
}

/// CPU seconds used by this thread: the scheduler's exact run time from
/// `/proc/thread-self/sched` where the kernel offers it, else utime + stime from
/// `/proc/thread-self/stat` (100 Hz ticks). The machine is shared, so wall time alone would
/// mostly measure the neighbours.
fn cpu_s() -> f64 {
    let sched = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
    if let Some(ms) = sched
        .lines()
        .find(|l| l.starts_with("se.sum_exec_runtime"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return ms / 1000.0;
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|s| s.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let data = match std::env::var("SCAN_BENCH_FILE") {
        Ok(path) => std::fs::read(path).expect("SCAN_BENCH_FILE"),
        Err(_) => kineto_like(mb << 20),
    };
    let gb = data.len() as f64 / 1e9;
    println!("input: {:.1} MB Kineto-like JSON", data.len() as f64 / 1e6);
    for round in 0..3 {
        let t = Instant::now();
        let c = cpu_s();
        let mut events = 0u64;
        let mut dur_sum: i64 = 0;
        // Four passes per round, so the 10 ms CPU-time tick is small against it.
        for _ in 0..4 {
            let mut sc = EventScanner::new(Limits::EXACT);
            for chunk in data.chunks(1 << 20) {
                let mut pos = 0;
                loop {
                    let (s, nin) = sc.scan(&chunk[pos..]).unwrap();
                    pos += nin;
                    match s {
                        Scan::Event => {
                            events += 1;
                            dur_sum = dur_sum.wrapping_add(sc.event().dur_ns.ns().unwrap_or(0));
                        }
                        Scan::NeedsInput => break,
                    }
                }
            }
            let end = sc.finish();
            assert!(end.complete);
        }
        let s = t.elapsed().as_secs_f64() / 4.0;
        let cs = (cpu_s() - c) / 4.0;
        println!(
            "round {round}: scanner {:.3} GB/s wall, {:.3} GB/s cpu ({events} events, checksum {dur_sum})",
            gb / s,
            gb / cs
        );
    }
    let t = Instant::now();
    let braces = memchr::memchr_iter(b'{', &data).count();
    println!(
        "boundary floor (memchr '{{'): {:.3} GB/s ({braces})",
        gb / t.elapsed().as_secs_f64()
    );
}
