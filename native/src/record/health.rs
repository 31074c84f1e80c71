//! Sampler health: ticks, missed ticks, wake-up jitter, GPU read latency, repeated readings.
//!
//! Latencies go into the core's quantile sketch (percentiles within 1%, numpy-linear like every
//! other percentile the tool prints; maximum exact), so an hours-long recording at 1 ms needs no
//! more memory than a short one.
use flinch_core::sketch::{DEFAULT_BUCKETS_PER_SIGN, QuantileSketch};
use serde::{Deserialize, Serialize};

/// Nanosecond durations: their percentiles, within [`flinch_core::sketch::RELATIVE_ERROR`].
/// The default window (32 powers of two) holds 1 ns to 4 s without collapsing a bucket.
pub struct Histogram(QuantileSketch);

impl Default for Histogram {
    fn default() -> Self {
        Histogram(QuantileSketch::new(DEFAULT_BUCKETS_PER_SIGN))
    }
}

impl Histogram {
    /// Records one value.
    pub fn add(&mut self, ns: u64) {
        self.0.push(ns as f64);
    }

    /// The q-quantile, ns (numpy-linear over the sketch's ranks); `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.0.quantile(q)
    }

    /// The largest value, ns (exact).
    pub fn max(&self) -> Option<f64> {
        self.0.quantile(1.0)
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

fn us(v: Option<f64>) -> Option<f64> {
    v.map(|ns| ns / 1000.0)
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
    use flinch_core::sketch::RELATIVE_ERROR;

    #[test]
    fn quantiles_match_a_sorted_oracle_within_the_sketch_error() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        // Uniform up to 5 ms; log-uniform from 1 ns to about 4 s (wake-up lateness spans
        // this); with zeros.
        for spread in 0..3 {
            let mut h = Histogram::default();
            let mut all = Vec::new();
            for _ in 0..10_000 {
                let v = match spread {
                    0 => next() % 5_000_000,
                    1 => (1u64 << (next() % 32)) | (next() % 1024),
                    _ => (next() % 3) * (next() % 1_000_000),
                };
                h.add(v);
                all.push(v as f64);
            }
            all.sort_unstable_by(f64::total_cmp);
            for q in [0.0, 0.01, 0.5, 0.9, 0.99, 1.0] {
                // numpy's linear percentile.
                let pos = q * (all.len() - 1) as f64;
                let lo = pos as usize;
                let hi = (lo + 1).min(all.len() - 1);
                let exact = all[lo] + (all[hi] - all[lo]) * (pos - lo as f64);
                let got = h.quantile(q).unwrap();
                assert!(
                    (got - exact).abs() <= RELATIVE_ERROR * exact * (1.0 + 1e-9),
                    "spread {spread}, q={q}: {got} vs {exact}"
                );
            }
            assert_eq!(h.max(), all.last().copied());
        }
        assert_eq!(Histogram::default().quantile(0.5), None);
        assert_eq!(Histogram::default().max(), None);
    }
}
