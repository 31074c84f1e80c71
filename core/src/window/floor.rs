//! The recording's idle floor per GPU: a low percentile of its power readings, from a fixed
//! histogram of 0.25 W bins up to 2048 W (readings above fall in the top bin). One pass, 32 KiB
//! per GPU, percentile exact to the bin width (0.25 W).
//!
//! Not the quantile sketch ([`crate::sketch`]): its buckets are relative (±0.78%: ±2.3 W at
//! 300 W), while the floor, the p99 and the busy threshold drawn from them are published as
//! midpoints of these absolute 0.25 W bins (±0.125 W at any power, the lower rank, no
//! interpolation); a sketch would move the threshold and with it every busy share and verdict.
//!
//! Without an allocator, [`TwoPassQuantile`] gives the same quantiles from two passes over the
//! readings in 1.1 KiB: coarse 8 W bins first, then the 0.25 W bins inside the coarse bin that
//! holds each wanted rank.
#[cfg(feature = "alloc")]
use alloc::vec;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;

const BIN_W: f64 = 0.25;
const BINS: usize = 8192;

/// The 0.25 W bin of a reading (negatives in bin 0, above 2048 W in the top bin); `None` for NaN.
#[inline]
fn bin(power_w: f64) -> Option<usize> {
    if power_w.is_nan() {
        return None;
    }
    Some(if power_w <= 0.0 {
        0
    } else {
        ((power_w / BIN_W) as usize).min(BINS - 1)
    })
}

/// The 0-based rank of the `q`-quantile among `n` readings (`n` ≥ 1).
#[inline]
fn rank(q: f64, n: u64) -> u64 {
    // `as u64` truncates toward zero: floor for non-negative values (no libm in no_std).
    ((q.clamp(0.0, 1.0) * (n - 1) as f64) as u64).min(n - 1)
}

/// The value reported for bin `i`: its midpoint.
#[inline]
fn bin_mid_w(i: usize) -> f64 {
    (i as f64 + 0.5) * BIN_W
}

/// Power histogram of a whole recording.
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct PowerHistogram {
    counts: Vec<u32>,
    n: u64,
}

#[cfg(feature = "alloc")]
impl Default for PowerHistogram {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "alloc")]
impl PowerHistogram {
    /// An empty histogram (allocated now).
    pub fn new() -> PowerHistogram {
        PowerHistogram {
            counts: vec![0; BINS],
            n: 0,
        }
    }

    /// Readings added.
    #[cfg(test)]
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Adds one reading (NaN ignored, negatives in bin 0).
    pub fn add(&mut self, power_w: f64) {
        let Some(i) = bin(power_w) else { return };
        self.counts[i] = self.counts[i].saturating_add(1);
        self.n += 1;
    }

    /// The `q`-quantile (0..=1) as the midpoint of its bin; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = rank(q, self.n);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen > rank {
                return Some(bin_mid_w(i));
            }
        }
        None
    }
}

/// Fine bins per coarse bin of [`TwoPassQuantile`] (8 W).
const FINE_PER_COARSE: usize = 32;
const COARSE_BINS: usize = BINS / FINE_PER_COARSE;

/// [`PowerHistogram::quantile`] for two quantiles of a recording read twice, in fixed memory:
/// [`add`](Self::add) every reading in each pass, [`next_pass`](Self::next_pass) with the
/// quantiles between them, then [`quantile`](Self::quantile) gives exactly what the full
/// histogram gives for the same readings. The empty state is all zero bytes (a static of it
/// costs no flash).
#[derive(Clone, Copy, Debug)]
pub struct TwoPassQuantile {
    coarse: [u32; COARSE_BINS],
    n: u64,
    /// Second pass: per quantile, its coarse bin, its rank inside that bin, and fine counts.
    refine: Option<[(usize, u64, [u32; FINE_PER_COARSE]); 2]>,
}

impl Default for TwoPassQuantile {
    fn default() -> Self {
        Self::new()
    }
}

impl TwoPassQuantile {
    /// An empty first pass.
    pub const fn new() -> TwoPassQuantile {
        TwoPassQuantile {
            coarse: [0; COARSE_BINS],
            n: 0,
            refine: None,
        }
    }

    /// Adds one reading (NaN ignored), in either pass.
    pub fn add(&mut self, power_w: f64) {
        let Some(i) = bin(power_w) else { return };
        match &mut self.refine {
            None => {
                let c = &mut self.coarse[i / FINE_PER_COARSE];
                *c = c.saturating_add(1);
                self.n += 1;
            }
            Some(r) => {
                for (coarse, _, fine) in r.iter_mut() {
                    if i / FINE_PER_COARSE == *coarse {
                        let f = &mut fine[i % FINE_PER_COARSE];
                        *f = f.saturating_add(1);
                    }
                }
            }
        }
    }

    /// Readings added in the first pass.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the first pass saw no reading.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Ends the first pass, for quantiles `qs` (each in 0..=1): the second must add the same
    /// readings again.
    pub fn next_pass(&mut self, qs: [f64; 2]) {
        if self.refine.is_some() || self.n == 0 {
            return;
        }
        let mut r = [(0, 0, [0; FINE_PER_COARSE]); 2];
        for (slot, &q) in r.iter_mut().zip(&qs) {
            let rank = rank(q, self.n);
            let mut seen = 0u64;
            for (c, &k) in self.coarse.iter().enumerate() {
                if seen + k as u64 > rank {
                    *slot = (c, rank - seen, [0; FINE_PER_COARSE]);
                    break;
                }
                seen += k as u64;
            }
        }
        self.refine = Some(r);
    }

    /// The `k`-th quantile (`qs[k]` of `next_pass`) after the second pass; `None` when there was no reading
    /// (or before the second pass).
    pub fn quantile(&self, k: usize) -> Option<f64> {
        let (coarse, rank, fine) = self.refine.as_ref()?.get(k)?;
        let mut seen = 0u64;
        for (j, &c) in fine.iter().enumerate() {
            seen += c as u64;
            if seen > *rank {
                return Some(bin_mid_w(coarse * FINE_PER_COARSE + j));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    /// Two passes over the same readings give the full histogram's quantiles exactly, also
    /// with readings piled in one bin, negatives, NaN and values past the top bin.
    #[test]
    fn two_passes_equal_the_full_histogram() {
        let mut rng = Rng::from_env(17);
        for round in 0..200 {
            let n = 1 + rng.below(if round % 3 == 0 { 5 } else { 3000 }) as usize;
            let v: std::vec::Vec<f64> = (0..n)
                .map(|_| match rng.below(10) {
                    0 => 70.0 + rng.below(4) as f64 * 0.25,
                    1 => -rng.unit_f64(),
                    2 => 1000.0 + rng.unit_f64() * 3000.0,
                    3 => f64::NAN,
                    _ => rng.unit_f64() * (1 + rng.below(900)) as f64,
                })
                .collect();
            let qs = [0.05, [0.0, 0.5, 0.99, 1.0][round % 4]];
            let mut full = PowerHistogram::new();
            let mut two = TwoPassQuantile::new();
            for &p in &v {
                full.add(p);
                two.add(p);
            }
            two.next_pass(qs);
            for &p in &v {
                two.add(p);
            }
            assert_eq!(two.len(), full.len());
            for (k, &q) in qs.iter().enumerate() {
                assert_eq!(two.quantile(k), full.quantile(q), "round {round} q {q}");
            }
        }
        let mut empty = TwoPassQuantile::new();
        empty.next_pass([0.05, 0.99]);
        assert_eq!(empty.quantile(0), None);
    }

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
