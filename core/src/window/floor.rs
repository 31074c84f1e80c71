//! The recording's idle floor per GPU: a low percentile of its power readings, from a fixed
//! histogram of 0.25 W bins up to 2048 W (readings above fall in the top bin). One pass, 32 KiB
//! per GPU, percentile exact to the bin width (0.25 W).
//!
//! Not the quantile sketch ([`crate::sketch`]): its buckets are relative (±0.78%: ±2.3 W at
//! 300 W), while the floor, the p99 and the busy threshold drawn from them are published as
//! midpoints of these absolute 0.25 W bins (±0.125 W at any power, the lower rank, no
//! interpolation); a sketch would move the threshold and with it every busy share and verdict.
use alloc::vec;
use alloc::vec::Vec;

const BIN_W: f64 = 0.25;
const BINS: usize = 8192;

/// Power histogram of a whole recording.
#[derive(Debug)]
pub struct PowerHistogram {
    counts: Vec<u32>,
    n: u64,
}

impl Default for PowerHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PowerHistogram {
    /// An empty histogram (allocated now).
    pub fn new() -> PowerHistogram {
        PowerHistogram {
            counts: vec![0; BINS],
            n: 0,
        }
    }

    /// Adds one reading (NaN ignored, negatives in bin 0).
    pub fn add(&mut self, power_w: f64) {
        if power_w.is_nan() {
            return;
        }
        let i = if power_w <= 0.0 {
            0
        } else {
            ((power_w / BIN_W) as usize).min(BINS - 1)
        };
        self.counts[i] = self.counts[i].saturating_add(1);
        self.n += 1;
    }

    /// Readings added.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether no reading was added.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `q`-quantile (0..=1) as the midpoint of its bin; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        // `as u64` truncates toward zero: floor for non-negative values (no libm in no_std).
        let rank = ((q.clamp(0.0, 1.0) * (self.n - 1) as f64) as u64).min(self.n - 1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen > rank {
                return Some((i as f64 + 0.5) * BIN_W);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    #[test]
    fn quantile_within_a_bin_of_exact() {
        let mut rng = Rng::from_env(9);
        for _ in 0..20 {
            let mut h = PowerHistogram::new();
            let mut v = std::vec::Vec::new();
            for _ in 0..1 + rng.below(2000) {
                let p = rng.unit_f64() * 900.0;
                h.add(p);
                v.push(p);
            }
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            for q in [0.0, 0.05, 0.5, 0.99, 1.0] {
                let exact = v[((q * (v.len() - 1) as f64).floor()) as usize];
                let got = h.quantile(q).unwrap();
                assert!((got - exact).abs() <= BIN_W, "{q} {got} {exact}");
            }
        }
    }
}
