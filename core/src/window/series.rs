//! A bounded, downsampled power/utilization time series per GPU for plotting: at most `cap`
//! buckets, each holding the min and max of its readings. When full, the bucket width doubles
//! and neighbouring buckets merge, so memory never grows with the recording.
use alloc::vec::Vec;
use serde::Serialize;

/// One plotted bucket.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SeriesPoint {
    /// Bucket start, CLOCK_MONOTONIC ns.
    pub t_mono_ns: i64,
    /// Lowest power in the bucket, W.
    pub power_min_w: Option<f64>,
    /// Highest power in the bucket, W.
    pub power_max_w: Option<f64>,
    /// Lowest utilization in the bucket, %.
    pub util_min_pct: Option<f64>,
    /// Highest utilization in the bucket, %.
    pub util_max_pct: Option<f64>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    idx: i64,
    p: Option<(f64, f64)>,
    u: Option<(f64, f64)>,
}

fn merge(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> Option<(f64, f64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

/// The bounded series builder.
#[derive(Debug)]
pub struct Series {
    cap: usize,
    origin: Option<i64>,
    width_ns: i64,
    buckets: Vec<Bucket>,
}

impl Series {
    /// A series of at most `cap` buckets (allocated now), starting with 1 ms buckets.
    pub fn new(cap: usize) -> Series {
        Series {
            cap,
            origin: None,
            width_ns: 1_000_000,
            buckets: Vec::with_capacity(cap + 1),
        }
    }

    /// Adds a reading; times must not decrease.
    pub fn add(&mut self, t_ns: i64, power_w: Option<f64>, util_pct: Option<f64>) {
        if self.cap == 0 || (power_w.is_none() && util_pct.is_none()) {
            return;
        }
        let origin = *self.origin.get_or_insert(t_ns);
        let idx = (t_ns.saturating_sub(origin)) / self.width_ns;
        let p = power_w.filter(|v| !v.is_nan()).map(|v| (v, v));
        let u = util_pct.filter(|v| !v.is_nan()).map(|v| (v, v));
        match self.buckets.last_mut() {
            Some(b) if b.idx == idx => {
                b.p = merge(b.p, p);
                b.u = merge(b.u, u);
            }
            _ => {
                self.buckets.push(Bucket { idx, p, u });
                while self.buckets.len() > self.cap {
                    self.coarsen();
                }
            }
        }
    }

    fn coarsen(&mut self) {
        self.width_ns = self.width_ns.saturating_mul(2);
        let mut w = 0;
        for r in 0..self.buckets.len() {
            let mut b = self.buckets[r];
            b.idx /= 2;
            if w > 0 && self.buckets[w - 1].idx == b.idx {
                let prev = &mut self.buckets[w - 1];
                prev.p = merge(prev.p, b.p);
                prev.u = merge(prev.u, b.u);
            } else {
                self.buckets[w] = b;
                w += 1;
            }
        }
        self.buckets.truncate(w);
    }

    /// Current bucket width, ns.
    pub fn bucket_ns(&self) -> i64 {
        self.width_ns
    }

    /// The points, in time order.
    pub fn points(&self) -> Vec<SeriesPoint> {
        let origin = self.origin.unwrap_or(0);
        self.buckets
            .iter()
            .map(|b| SeriesPoint {
                t_mono_ns: origin + b.idx * self.width_ns,
                power_min_w: b.p.map(|x| x.0),
                power_max_w: b.p.map(|x| x.1),
                util_min_pct: b.u.map(|x| x.0),
                util_max_pct: b.u.map(|x| x.1),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    #[test]
    fn bounded_and_min_max_preserved() {
        let mut rng = Rng::from_env(5);
        for _ in 0..20 {
            let cap = 1 + rng.below(50) as usize;
            let mut s = Series::new(cap);
            let mut t = 0i64;
            let mut all = std::vec::Vec::new();
            for _ in 0..rng.below(3000) {
                t += rng.below(20_000_000) as i64;
                let p = rng.below(700) as f64;
                s.add(t, Some(p), None);
                all.push((t, p));
            }
            let pts = s.points();
            assert!(pts.len() <= cap);
            // Every reading falls in exactly one bucket whose min/max bound it; global max kept.
            for &(t, p) in &all {
                let b = pts.iter().rev().find(|b| b.t_mono_ns <= t).unwrap();
                assert!(t < b.t_mono_ns + s.bucket_ns());
                assert!(b.power_min_w.unwrap() <= p && p <= b.power_max_w.unwrap());
            }
            let gmax = all.iter().map(|x| x.1).fold(f64::MIN, f64::max);
            if !all.is_empty() {
                assert_eq!(
                    pts.iter()
                        .map(|b| b.power_max_w.unwrap())
                        .fold(f64::MIN, f64::max),
                    gmax
                );
            }
        }
    }
}
