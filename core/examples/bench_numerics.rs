//! Throughput of the numerics against naive baselines, side by side on the same inputs.
//!
//! Run: `cargo run --release -p flinch-core --example bench_numerics [N]` (default N = 10 M).
//! Prints one line per measurement: name, items, seconds, million items per second, and the
//! baseline's figures. Not a test: nothing here asserts a speed.

use std::time::Instant;

use flinch_core::intervals::IntervalUnion;
use flinch_core::sketch::QuantileSketch;
use flinch_core::stats::{Fsum, stats_f64};

/// xorshift64*: deterministic input without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Kineto-like intervals: mostly in start order with nested and straggling events.
fn kineto_like(n: usize) -> Vec<(i64, i64)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut t = 1_712_195_495_406_752_800i64;
    (0..n)
        .map(|_| {
            let x = rng.next();
            t += (x % 2_000) as i64;
            let start = if x.is_multiple_of(50) {
                t - (x % 1_000_000) as i64
            } else {
                t
            };
            (start, start + 100 + (x >> 40) as i64 % 5_000)
        })
        .collect()
}

fn sort_and_merge(ivs: &[(i64, i64)]) -> u64 {
    let mut v = ivs.to_vec();
    v.sort_unstable();
    let (mut total, mut end) = (0u64, i64::MIN);
    for (s, e) in v {
        if e <= s {
            continue;
        }
        if s >= end {
            total += (e - s) as u64;
            end = e;
        } else if e > end {
            total += (e - end) as u64;
            end = e;
        }
    }
    total
}

fn report(name: &str, n: usize, secs: f64, base: &str, base_secs: f64) {
    println!(
        "{name:<34} n={n:>10} {secs:>8.3} s {:>8.1} M/s | {base:<24} {base_secs:>8.3} s {:>8.1} M/s | ratio {:>5.2}x",
        n as f64 / secs / 1e6,
        n as f64 / base_secs / 1e6,
        base_secs / secs
    );
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let ivs = kineto_like(n);
    let (want, base) = time(|| sort_and_merge(&ivs));
    let (got, secs) = time(|| {
        let mut u = IntervalUnion::exact();
        ivs.iter().for_each(|&(s, e)| u.insert(s, e));
        u.union_ns()
    });
    assert_eq!(got, want);
    report(
        "IntervalUnion::exact (Kineto-like)",
        n,
        secs,
        "sort + merge (alloc)",
        base,
    );
    let ((got, bound), secs) = time(|| {
        let mut u = IntervalUnion::bounded(65_536);
        ivs.iter().for_each(|&(s, e)| u.insert(s, e));
        (u.union_ns(), u.error_bound_ns())
    });
    assert!(got >= want && got - bound <= want);
    report(
        "IntervalUnion::bounded(65536)",
        n,
        secs,
        "sort + merge (alloc)",
        base,
    );
    println!(
        "  bounded: union {got} ns, bound {bound} ns ({:.2e} of the union), true error {} ns",
        bound as f64 / got as f64,
        got - want
    );
    let mut rng = Rng(7);
    let shuffled: Vec<(i64, i64)> = (0..n)
        .map(|_| {
            let s = (rng.next() >> 20) as i64;
            (s, s + (rng.next() % 100_000) as i64)
        })
        .collect();
    let (want, base) = time(|| sort_and_merge(&shuffled));
    let (got, secs) = time(|| {
        let mut u = IntervalUnion::exact();
        shuffled.iter().for_each(|&(s, e)| u.insert(s, e));
        u.union_ns()
    });
    assert_eq!(got, want);
    report(
        "IntervalUnion::exact (random order)",
        n,
        secs,
        "sort + merge (alloc)",
        base,
    );

    let values: Vec<f64> = (0..n)
        .map(|_| ((rng.next() >> 11) as f64 / 2f64.powi(53) * 20.0).exp())
        .collect();
    let (naive, base) = time(|| values.iter().sum::<f64>());
    let (exact, secs) = time(|| {
        let mut f = Fsum::new();
        values.iter().for_each(|&v| f.add(v));
        f.value()
    });
    report("Fsum::add (exact sum)", n, secs, "naive f64 sum", base);
    println!(
        "  fsum {exact:e} vs naive {naive:e} (relative difference {:.1e})",
        (exact - naive).abs() / exact
    );
    let (exact_stats, base) = time(|| stats_f64(&values));
    let (sketch_stats, secs) = time(|| {
        let mut s = QuantileSketch::new(2048);
        values.iter().for_each(|&v| {
            s.push(v);
        });
        s.stats()
    });
    report(
        "QuantileSketch(2048) push + stats",
        n,
        secs,
        "exact stats (copy+sort)",
        base,
    );
    println!(
        "  p99 sketch {} vs exact {} (relative error {:.2e}, bound {:.2e}); memory 32 KiB vs {} MiB",
        sketch_stats.stats.p99.unwrap(),
        exact_stats.p99.unwrap(),
        (sketch_stats.stats.p99.unwrap() - exact_stats.p99.unwrap()).abs()
            / exact_stats.p99.unwrap(),
        sketch_stats.quantile_relative_error,
        (n * 8) >> 20
    );
}
