//! The robust statistics of the steps: medians, the MAD outlier rule, numpy-linear p90.
use alloc::vec::Vec;

use crate::stats::percentile_linear;

/// The MAD's factor to a normal distribution's standard deviation.
pub const MAD_SCALE: f64 = 1.4826;
/// Deviations (in scaled MADs) past the median that make an outlier.
pub const MAD_DEVIATIONS: f64 = 3.0;
/// The least excess over the median that makes an outlier, as a share of the median.
pub const MIN_EXCESS_SHARE: f64 = 0.10;

/// The median of `values` (the mean of the middle two for an even count, as numpy); `None`
/// when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_linear(&v, 0.5)
}

/// numpy's linear percentile `q` (0..=1) of `values`.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_linear(&v, q)
}

/// The median of integer durations in ns, exactly (an even count: the middle two's mean, a
/// half ns at most away from an integer) as f64.
pub fn median_ns(values: &[u64]) -> Option<f64> {
    let mut v: Vec<u64> = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (u128::from(v[n / 2 - 1]) + u128::from(v[n / 2])) as f64 / 2.0
    })
}

/// Which durations (ns) are outliers: `d - m > max(3 × 1.4826 × MAD, 0.10 × m)`, with `m` the
/// median and `MAD` the median of `|d - m|`. Only slow steps stand out.
pub fn outliers(durations_ns: &[u64]) -> Vec<bool> {
    let Some(fence) = Fence::of(durations_ns) else {
        return Vec::new();
    };
    durations_ns.iter().map(|&d| fence.above(d)).collect()
}

/// `3 × 1.4826 × MAD` of `values_ns` about their median `m`, ns: the spread past which a value
/// stands out.
pub fn spread_ns(values_ns: &[u64], m: f64) -> f64 {
    let dev: Vec<f64> = values_ns.iter().map(|&d| (d as f64 - m).abs()).collect();
    MAD_DEVIATIONS * MAD_SCALE * median(&dev).unwrap_or(0.0)
}

/// The outlier rule over a set of values (ns): its median `m` and the excess past it that
/// stands out, `max(3 × 1.4826 × MAD, 0.10 × m)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fence {
    /// The median, ns.
    pub median_ns: f64,
    /// The excess over the median that stands out, ns.
    pub threshold_ns: f64,
}

impl Fence {
    /// The fence of `values_ns`; `None` when empty.
    pub fn of(values_ns: &[u64]) -> Option<Fence> {
        let m = median_ns(values_ns)?;
        Some(Fence {
            median_ns: m,
            threshold_ns: spread_ns(values_ns, m).max(MIN_EXCESS_SHARE * m),
        })
    }

    /// The fence with its threshold at least `floor_ns`.
    pub fn at_least(self, floor_ns: f64) -> Fence {
        Fence {
            threshold_ns: self.threshold_ns.max(floor_ns),
            ..self
        }
    }

    /// `v` stands out (is past the fence) against these values.
    pub fn above(&self, v: u64) -> bool {
        v as f64 - self.median_ns > self.threshold_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_outliers() {
        assert_eq!(median_ns(&[3, 1, 2]), Some(2.0));
        assert_eq!(median_ns(&[4, 1, 2, 3]), Some(2.5));
        assert_eq!(median_ns(&[]), None);
        assert_eq!(median(&[1.0, 5.0]), Some(3.0));
        // 20 steps of ~17.8 ms and two of 274 ms: the two stand out.
        let mut d: Vec<u64> = (0..20).map(|i| 17_800_000 + i * 10_000).collect();
        d.insert(8, 274_000_000);
        d.insert(16, 274_000_000);
        let o = outliers(&d);
        let found: Vec<usize> = (0..d.len()).filter(|&i| o[i]).collect();
        assert_eq!(found, [8, 16]);
        // Identical steps: none (MAD 0, the 10 % floor); one 9 % slower: none; 11 %: one.
        assert!(outliers(&[100; 9]).iter().all(|&b| !b));
        assert!(!outliers(&[100, 100, 100, 109])[3]);
        assert!(outliers(&[100, 100, 100, 111])[3]);
        // Fast steps never stand out.
        assert!(outliers(&[100, 100, 100, 1]).iter().all(|&b| !b));
    }
}
