//! Sampler health: ticks, missed ticks, wake-up jitter, GPU read latency, repeated readings.
//!
//! Latencies go into a fixed log-bucket histogram (about 3% resolution, 1920 counters), so an
//! hours-long recording at 1 ms needs no more memory than a short one.
use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const LINEAR: usize = 2 * SUB;
const BUCKETS: usize = LINEAR + (64 - SUB_BITS as usize - 1) * SUB;

/// A log-bucket histogram of nanosecond values: exact below 64, then 32 buckets per power of 2.
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    n: u64,
    max: u64,
}

fn bucket(v: u64) -> usize {
    if v < LINEAR as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 6
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    LINEAR + (e as usize - SUB_BITS as usize - 1) * SUB + sub
}

/// Smallest value in bucket `b`, and the bucket's width.
fn bucket_range(b: usize) -> (u64, u64) {
    if b < LINEAR {
        return (b as u64, 1);
    }
    let e = ((b - LINEAR) / SUB) as u32 + SUB_BITS + 1;
    let sub = ((b - LINEAR) % SUB) as u64;
    let width = 1u64 << (e - SUB_BITS);
    ((1u64 << e) + sub * width, width)
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            n: 0,
            max: 0,
        }
    }
}

impl Histogram {
    /// Records one value.
    pub fn add(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.n += 1;
        self.max = self.max.max(v);
    }

    /// The q-quantile (nearest rank), as the middle of its bucket; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bucket_range(b);
                return Some((lo + w / 2).min(self.max));
            }
        }
        Some(self.max)
    }

    /// The largest value.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
}

/// Counters the sampler updates every tick.
#[derive(Default)]
pub struct Health {
    /// Ticks sampled.
    pub ticks: u64,
    /// Deadlines skipped because the sampler was late (never bunched).
    pub missed_ticks: u64,
    /// Wake-up time minus deadline, ns.
    pub jitter: Histogram,
    /// Time to read one GPU (all its NVML calls), ns.
    pub gpu_read: Histogram,
    /// Time to read one GPU's slow queries (energy counter, memory use) on the poller's thread,
    /// ns (empty when they are read inline).
    pub energy_read: Histogram,
    /// Wall time from wake-up to the end of the tick's work (reads, formatting, hand-off), ns.
    pub tick_work: Histogram,
    /// GPU samples whose power equals that GPU's previous sample.
    pub repeated_power: u64,
    /// GPU samples that had a previous sample to compare with.
    pub compared_power: u64,
    /// CPU time of the sampling thread, ns.
    pub sampler_cpu_ns: u64,
    /// Marks written.
    pub marks: u64,
    /// Failed reads of RAPL zones that were readable at start.
    pub rapl_read_errors: u64,
}

fn us(v: Option<u64>) -> Option<f64> {
    v.map(|ns| ns as f64 / 1000.0)
}

/// What the sidecar and the closing summary report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HealthSummary {
    /// Ticks sampled.
    pub ticks: u64,
    /// Deadlines skipped.
    pub missed_ticks: u64,
    /// Median wake-up lateness, µs.
    pub jitter_p50_us: Option<f64>,
    /// 99th percentile wake-up lateness, µs.
    pub jitter_p99_us: Option<f64>,
    /// Worst wake-up lateness, µs.
    pub jitter_max_us: Option<f64>,
    /// Median time to read one GPU, µs.
    pub gpu_read_p50_us: Option<f64>,
    /// 99th percentile time to read one GPU, µs.
    pub gpu_read_p99_us: Option<f64>,
    /// Median time of one GPU's slow queries (energy counter, memory use) on their thread, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_read_p50_us: Option<f64>,
    /// 99th percentile time of one GPU's slow queries on their thread, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_read_p99_us: Option<f64>,
    /// Median wall time of one tick's work (wake-up to hand-off), µs.
    pub tick_work_p50_us: Option<f64>,
    /// 99th percentile wall time of one tick's work, µs.
    pub tick_work_p99_us: Option<f64>,
    /// Share of GPU samples whose power repeated the previous reading.
    pub repeated_power_fraction: Option<f64>,
    /// Sampling thread CPU time per tick, µs.
    pub sampler_cpu_us_per_tick: Option<f64>,
    /// Marks written.
    pub marks: u64,
    /// Failed reads of RAPL zones that were readable at start.
    pub rapl_read_errors: u64,
}

impl Health {
    /// The summary of what has been counted.
    pub fn summary(&self) -> HealthSummary {
        HealthSummary {
            ticks: self.ticks,
            missed_ticks: self.missed_ticks,
            jitter_p50_us: us(self.jitter.quantile(0.5)),
            jitter_p99_us: us(self.jitter.quantile(0.99)),
            jitter_max_us: us(self.jitter.max()),
            gpu_read_p50_us: us(self.gpu_read.quantile(0.5)),
            gpu_read_p99_us: us(self.gpu_read.quantile(0.99)),
            energy_read_p50_us: us(self.energy_read.quantile(0.5)),
            energy_read_p99_us: us(self.energy_read.quantile(0.99)),
            tick_work_p50_us: us(self.tick_work.quantile(0.5)),
            tick_work_p99_us: us(self.tick_work.quantile(0.99)),
            repeated_power_fraction: (self.compared_power > 0)
                .then(|| self.repeated_power as f64 / self.compared_power as f64),
            sampler_cpu_us_per_tick: (self.ticks > 0)
                .then(|| self.sampler_cpu_ns as f64 / 1000.0 / self.ticks as f64),
            marks: self.marks,
            rapl_read_errors: self.rapl_read_errors,
        }
    }
}

fn fmt_us(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 1000.0 => format!("{:.2} ms", x / 1000.0),
        Some(x) => format!("{x:.1} µs"),
        None => "n/a".to_string(),
    }
}

impl HealthSummary {
    /// The closing lines printed on stderr.
    pub fn render(&self) -> String {
        let rep = match self.repeated_power_fraction {
            Some(f) => format!("{:.1}%", 100.0 * f),
            None => "n/a".to_string(),
        };
        let energy = match self.energy_read_p50_us {
            Some(_) => format!(
                "; energy/memory read p50 {} p99 {} (own thread)",
                fmt_us(self.energy_read_p50_us),
                fmt_us(self.energy_read_p99_us)
            ),
            None => String::new(),
        };
        format!(
            "sampler: {} ticks, {} missed; jitter p50 {} p99 {} max {}; GPU read p50 {} p99 {}{energy}; \
             tick work p50 {} p99 {}; repeated power readings {rep}; sampler thread CPU {} per tick \
             (sleep/wake included)",
            self.ticks,
            self.missed_ticks,
            fmt_us(self.jitter_p50_us),
            fmt_us(self.jitter_p99_us),
            fmt_us(self.jitter_max_us),
            fmt_us(self.gpu_read_p50_us),
            fmt_us(self.gpu_read_p99_us),
            fmt_us(self.tick_work_p50_us),
            fmt_us(self.tick_work_p99_us),
            fmt_us(self.sampler_cpu_us_per_tick),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        let mut prev_end = 0;
        for b in 0..BUCKETS {
            let (lo, w) = bucket_range(b);
            assert_eq!(lo, prev_end, "bucket {b}");
            assert_eq!(bucket(lo), b);
            assert_eq!(bucket(lo + (w - 1)), b);
            prev_end = lo.wrapping_add(w);
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_match_a_sorted_oracle_within_bucket_resolution() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut h = Histogram::default();
        let mut all = Vec::new();
        for _ in 0..10_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let v = rng % 5_000_000;
            h.add(v);
            all.push(v);
        }
        all.sort_unstable();
        for q in [0.01, 0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * all.len() as f64).ceil() as usize).clamp(1, all.len());
            let exact = all[rank - 1] as f64;
            let got = h.quantile(q).unwrap() as f64;
            assert!(
                (got - exact).abs() <= exact / 32.0 + 1.0,
                "q={q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.max(), all.last().copied());
        assert_eq!(Histogram::default().quantile(0.5), None);
    }
}
