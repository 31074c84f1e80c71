//! How much B's step times moved from A's, with a 95 % interval: the Hodges-Lehmann shift and
//! its distribution-free interval from the Mann-Whitney statistic (Lehmann 1975, §2.6; the
//! method R's `wilcox.test(b, a, conf.int = TRUE)` uses). No random numbers, so the same steps
//! always give the same interval (a bootstrap would not).
//!
//! With the `m * n` differences `b_j - a_i` sorted as `D(1) <= ... <= D(mn)`:
//! - the shift is their median;
//! - the interval is `[D(k), D(mn + 1 - k)]`, `k` the largest integer with
//!   `P(U <= k - 1) <= 2.5 %` under the null distribution of the Mann-Whitney `U` of sizes
//!   `m`, `n`: exact (the coefficients of the Gaussian binomial `[m + n choose m]_q`) when both
//!   sizes are at most [`EXACT_MAX`], else the normal approximation with continuity correction
//!   (no ties correction: durations in integer ns rarely tie);
//! - there is no interval when even `k = 1` fails (fewer than 4 steps a side: `m = n = 3` gives
//!   `P(U = 0) = 1/20 > 2.5 %`).
//!
//! `D(k)` is found without the `m * n` list: the differences are monotone in `i` and `j` over
//! sorted inputs, so the count of those at most `v` takes one merge-like walk, and a binary
//! search on `v` (integer ns) finds the `k`-th in at most 64 walks. Memory: the two sorted
//! copies ([`step_shift`]) or none ([`step_shift_sorted`]), and for the exact distribution
//! `m * n / 2 + 1` 16-byte counts (at most 20 KiB).
//!
//! Percentages are of A's median: `change_pct = 100 * shift / median_a`, and the interval's ends
//! the same way.
use alloc::vec;
use alloc::vec::Vec;

use serde::Serialize;

/// Sizes up to this (both sides) use the exact null distribution; larger, the normal one (as R).
pub const EXACT_MAX: usize = 50;

/// Two-sided level of the interval.
const ALPHA_HALF: f64 = 0.025;

/// `z` with `Phi(z) = 0.975`, squared (the normal route compares squares: no square root in
/// the core).
const Z2: f64 = 1.959_963_984_540_054 * 1.959_963_984_540_054;

/// A and B's step times compared.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepShift {
    /// Steps in A.
    pub n_a: usize,
    /// Steps in B.
    pub n_b: usize,
    /// Median step of A (numpy's: the middle two averaged), ms.
    pub median_ms_a: f64,
    /// Median step of B, ms.
    pub median_ms_b: f64,
    /// The Hodges-Lehmann shift of B from A, ms.
    pub shift_ms: f64,
    /// `100 * shift / median_a`.
    pub change_pct: f64,
    /// The 95 % interval of the shift, as % of A's median; `None` with too few steps.
    pub ci95_pct: Option<[f64; 2]>,
    /// The interval, ms.
    pub ci95_ms: Option<[f64; 2]>,
    /// The interval lies on one side of zero (`false` without an interval).
    pub significant: bool,
    /// `"exact"` or `"normal"`: how `k` was found.
    pub method: &'static str,
}

/// [`step_shift_sorted`] over sorted copies of `a_ns` and `b_ns` (durations in ns). `None` when
/// either side is empty.
pub fn step_shift(a_ns: &[u64], b_ns: &[u64]) -> Option<StepShift> {
    let mut a = a_ns.to_vec();
    let mut b = b_ns.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    step_shift_sorted(&a, &b)
}

/// The comparison of two sorted (ascending) sets of step durations, ns. `None` when either is
/// empty.
pub fn step_shift_sorted(a: &[u64], b: &[u64]) -> Option<StepShift> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let median_a = median_sorted(a);
    let median_b = median_sorted(b);
    let mn = (m as u128) * (n as u128);
    // The median of the differences, as the two middle ones (equal when mn is odd).
    let lo = kth_difference(a, b, mn.div_ceil(2));
    let hi = kth_difference(a, b, mn / 2 + 1);
    let shift_ns = (lo as f64 + hi as f64) / 2.0;
    let (k, method) = critical_k(m, n);
    let ci_ns = k.map(|k| {
        [
            kth_difference(a, b, k) as f64,
            kth_difference(a, b, mn + 1 - k) as f64,
        ]
    });
    let pct = |ns: f64| 100.0 * ns / median_a;
    let ms = |ns: f64| ns / 1e6;
    Some(StepShift {
        n_a: m,
        n_b: n,
        median_ms_a: ms(median_a),
        median_ms_b: ms(median_b),
        shift_ms: ms(shift_ns),
        change_pct: pct(shift_ns),
        ci95_pct: ci_ns.map(|c| c.map(pct)),
        ci95_ms: ci_ns.map(|c| c.map(ms)),
        significant: ci_ns.is_some_and(|[l, h]| l > 0.0 || h < 0.0),
        method,
    })
}

impl StepShift {
    /// The verdict's words for the step times: `median step 16.700 ms vs 17.800 ms (-6.2 %, 95 %
    /// CI -9.0 % to -3.1 %)` (B's median first), prefixed `no significant change: ` when the
    /// interval crosses zero or there is none.
    pub fn verdict_words(&self) -> alloc::string::String {
        shift_words(
            "median step",
            "ms",
            [self.median_ms_b, self.median_ms_a],
            self.change_pct,
            self.ci95_pct,
            self.significant,
        )
    }
}

/// The words of a shift: `{label} {b:.3} {unit} vs {a:.3} {unit} ({change:+.1} %, 95 % CI
/// {lo:+.1} % to {hi:+.1} %)`, prefixed `no significant change: ` unless `significant`.
pub fn shift_words(
    label: &str,
    unit: &str,
    [b, a]: [f64; 2],
    change_pct: f64,
    ci95_pct: Option<[f64; 2]>,
    significant: bool,
) -> alloc::string::String {
    let ci = match ci95_pct {
        Some([lo, hi]) => alloc::format!("95 % CI {lo:+.1} % to {hi:+.1} %"),
        None => alloc::string::String::from("too few steps for a 95 % interval"),
    };
    let words = alloc::format!("{label} {b:.3} {unit} vs {a:.3} {unit} ({change_pct:+.1} %, {ci})");
    if significant {
        words
    } else {
        alloc::format!("no significant change: {words}")
    }
}

/// numpy's median of sorted values, ns (exact below 2^53).
fn median_sorted(v: &[u64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    }
}

/// How many differences `b_j - a_i` are at most `v`: for each `b_j` (ascending) the `a_i` at
/// least `b_j - v`, a pointer that only moves right.
fn count_at_most(a: &[u64], b: &[u64], v: i128) -> u128 {
    let mut count = 0u128;
    // First index of `a` with a[i] >= b_j - v; nondecreasing in j.
    let mut i = 0usize;
    for &bj in b {
        let floor = i128::from(bj) - v;
        while i < a.len() && i128::from(a[i]) < floor {
            i += 1;
        }
        count += (a.len() - i) as u128;
    }
    count
}

/// The `k`-th smallest (1-based) difference `b_j - a_i`, `1 <= k <= m * n`.
fn kth_difference(a: &[u64], b: &[u64], k: u128) -> i128 {
    let mut lo = i128::from(b[0]) - i128::from(a[a.len() - 1]);
    let mut hi = i128::from(b[b.len() - 1]) - i128::from(a[0]);
    // The smallest v with count(v) >= k; count(hi) = mn >= k.
    while lo < hi {
        let mid = lo + (hi - lo).div_euclid(2);
        if count_at_most(a, b, mid) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The interval's order statistic `k` (1-based) and the method; `None` when no `k >= 1`
/// reaches the level.
pub fn critical_k(m: usize, n: usize) -> (Option<u128>, &'static str) {
    if m <= EXACT_MAX && n <= EXACT_MAX {
        (exact_k(m, n), "exact")
    } else {
        (normal_k(m, n), "normal")
    }
}

/// The null distribution of `U` for sizes `m`, `n`: `counts[u]` ways of `C(m + n, m)`, for `u`
/// up to `m * n / 2` (it is symmetric). The coefficients of `prod_{i=1..m} (1 - q^(n+i)) /
/// (1 - q^i)`, each step a Gaussian binomial, so nonnegative, and at most `C(100, 50) < 2^97`.
fn u_counts(m: usize, n: usize) -> Vec<i128> {
    let half = m * n / 2;
    let mut c = vec![0i128; half + 1];
    c[0] = 1;
    for i in 1..=m {
        // Times (1 - q^(n+i)): from the top down so each term reads the old value.
        let shift = n + i;
        for u in (shift..=half).rev() {
            c[u] -= c[u - shift];
        }
        // Divided by (1 - q^i): a running sum with stride i.
        for u in i..=half {
            c[u] += c[u - i];
        }
    }
    c
}

fn exact_k(m: usize, n: usize) -> Option<u128> {
    let counts = u_counts(m, n);
    let total: f64 = binomial_f64(m + n, m);
    let mut below = 0i128; // ways with U <= k - 1
    let mut k = 0u128;
    for (u, &c) in counts.iter().enumerate() {
        below += c;
        if below as f64 / total > ALPHA_HALF {
            break;
        }
        k = u as u128 + 1;
    }
    (k >= 1).then_some(k)
}

/// `C(n, k)` as f64 (exact in i128 for the sizes the exact route takes, then rounded once).
fn binomial_f64(n: usize, k: usize) -> f64 {
    let mut r: i128 = 1;
    for i in 0..k {
        // r * (n - i) / (i + 1) stays an integer: r is C(n, i) times... built in order.
        r = r * (n - i) as i128 / (i + 1) as i128;
    }
    r as f64
}

/// The largest `k` with `Phi((k - 1 + 1/2 - mn/2) / sigma) <= 2.5 %`, `sigma^2 = mn(m+n+1)/12`:
/// `(mn + 1 - 2k)^2 / 4 >= z^2 sigma^2` with `mn + 1 - 2k > 0`.
fn normal_k(m: usize, n: usize) -> Option<u128> {
    let mn = (m as u128) * (n as u128);
    let var = (mn as f64) * ((m + n + 1) as f64) / 12.0;
    let ok = |k: u128| -> bool {
        let d = mn as f64 + 1.0 - 2.0 * k as f64;
        d > 0.0 && d * d / 4.0 >= Z2 * var
    };
    if !ok(1) {
        return None;
    }
    // ok is monotone (true then false) in k.
    let (mut lo, mut hi) = (1u128, mn.div_ceil(2));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) { lo = mid } else { hi = mid - 1 }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    /// Every difference, sorted: the naive oracle.
    fn all_differences(a: &[u64], b: &[u64]) -> Vec<i128> {
        let mut d: Vec<i128> = a
            .iter()
            .flat_map(|&x| b.iter().map(move |&y| i128::from(y) - i128::from(x)))
            .collect();
        d.sort_unstable();
        d
    }

    /// The distribution of U by enumerating which of the m + n ranks are A's.
    fn u_counts_brute(m: usize, n: usize) -> Vec<i128> {
        let mut counts = vec![0i128; m * n + 1];
        for mask in 0u32..(1 << (m + n)) {
            if mask.count_ones() as usize != m {
                continue;
            }
            // U: pairs (A, B) with the B rank below the A rank.
            let mut u = 0;
            let mut bs_below = 0;
            for r in 0..m + n {
                if mask & (1 << r) != 0 {
                    u += bs_below;
                } else {
                    bs_below += 1;
                }
            }
            counts[u] += 1;
        }
        counts
    }

    #[test]
    fn u_distribution_matches_enumeration() {
        for m in 1..=7 {
            for n in 1..=7 {
                let brute = u_counts_brute(m, n);
                let fast = u_counts(m, n);
                assert_eq!(&brute[..fast.len()], &fast[..], "m={m} n={n}");
                assert_eq!(binomial_f64(m + n, m), brute.iter().sum::<i128>() as f64);
            }
        }
    }

    #[test]
    fn critical_values_of_the_published_table() {
        // Mann-Whitney two-sided 5 % critical values U_crit (reject U <= U_crit): k = U_crit + 1.
        for (m, n, u_crit) in [
            (4, 4, 0),
            (5, 5, 2),
            (8, 8, 13),
            (10, 10, 23),
            (20, 20, 127),
        ] {
            assert_eq!(exact_k(m, n), Some(u_crit + 1), "m={m} n={n}");
        }
        assert_eq!(exact_k(3, 3), None);
        // Near the switch the normal route agrees with the exact one to a unit.
        let (e, nk) = (exact_k(50, 50).unwrap(), normal_k(50, 50).unwrap());
        assert!(e.abs_diff(nk) <= 1, "{e} {nk}");
    }

    fn check_against_oracle(a: &[u64], b: &[u64]) {
        let got = step_shift(a, b).unwrap();
        let d = all_differences(a, b);
        let mn = d.len();
        let shift = (d[mn.div_ceil(2) - 1] as f64 + d[mn / 2] as f64) / 2.0;
        assert_eq!(got.shift_ms, shift / 1e6);
        let mut sa = a.to_vec();
        sa.sort_unstable();
        let mut sb = b.to_vec();
        sb.sort_unstable();
        assert_eq!(got.median_ms_a, median_sorted(&sa) / 1e6);
        assert_eq!(got.median_ms_b, median_sorted(&sb) / 1e6);
        let (k, _) = critical_k(a.len(), b.len());
        match k {
            Some(k) => {
                let k = k as usize;
                let ci = [d[k - 1] as f64 / 1e6, d[mn - k] as f64 / 1e6];
                assert_eq!(got.ci95_ms, Some(ci));
                assert_eq!(got.significant, ci[0] > 0.0 || ci[1] < 0.0);
            }
            None => {
                assert_eq!(got.ci95_ms, None);
                assert!(!got.significant);
            }
        }
        for k in [1, mn / 3 + 1, mn] {
            assert_eq!(kth_difference(&sa, &sb, k as u128), d[k - 1]);
        }
    }

    #[test]
    fn random_data_against_all_pairwise_differences() {
        let mut rng = Rng::from_env(25);
        for round in 0..300 {
            let m = 1 + rng.below(if round % 5 == 0 { 80 } else { 30 }) as usize;
            let n = 1 + rng.below(if round % 7 == 0 { 80 } else { 30 }) as usize;
            // Narrow ranges give ties; wide ones none.
            let range = [5, 1_000, 20_000_000_000][round % 3];
            let base = rng.below(1_000_000_000);
            let a: Vec<u64> = (0..m).map(|_| base + rng.below(range)).collect();
            let b: Vec<u64> = (0..n).map(|_| base + rng.below(range)).collect();
            check_against_oracle(&a, &b);
        }
    }

    #[test]
    fn known_shifts_are_found_and_no_shift_is_not_significant() {
        let mut rng = Rng::from_env(2525);
        let a: Vec<u64> = (0..22).map(|_| 17_000_000 + rng.below(400_000)).collect();
        // B: the same steps 1 ms faster.
        let b: Vec<u64> = a.iter().map(|&x| x - 1_000_000).collect();
        let s = step_shift(&a, &b).unwrap();
        assert_eq!(s.shift_ms, -1.0);
        assert!(s.significant);
        let [lo, hi] = s.ci95_ms.unwrap();
        assert!(lo <= -1.0 && (-1.0..0.0).contains(&hi), "{lo} {hi}");
        // The same steps in another order: no change.
        let mut same = a.clone();
        same.reverse();
        let s = step_shift(&a, &same).unwrap();
        assert_eq!(s.shift_ms, 0.0);
        assert_eq!(s.change_pct, 0.0);
        assert!(!s.significant);
        // A shift within the noise: not significant.
        let b: Vec<u64> = a.iter().map(|&x| x + 10_000).collect();
        assert!(!step_shift(&a, &b).unwrap().significant);
        // Large sides take the normal route and still find a 2x slowdown.
        let a: Vec<u64> = (0..400).map(|_| 1_000_000 + rng.below(100_000)).collect();
        let b: Vec<u64> = a.iter().map(|&x| 2 * x).collect();
        let s = step_shift(&a, &b).unwrap();
        assert_eq!(s.method, "normal");
        assert!(s.significant && s.change_pct > 90.0 && s.change_pct < 110.0);
        check_against_oracle(&a[..120], &b[..90]);
    }

    #[test]
    fn verdict_words_say_no_significant_change_when_the_interval_crosses_zero() {
        let a: Vec<u64> = (0..22).map(|i| 17_800_000 + (i % 5) * 100_000).collect();
        let b: Vec<u64> = a.iter().map(|&x| x - 1_100_000).collect();
        let s = step_shift(&a, &b).unwrap();
        let w = s.verdict_words();
        assert!(
            w.starts_with("median step 16.900 ms vs 18.000 ms (-6.1 %, 95 % CI -"),
            "{w}"
        );
        let w = step_shift(&a, &a).unwrap().verdict_words();
        assert!(w.starts_with("no significant change: median step"), "{w}");
        let w = step_shift(&a[..2], &b[..2]).unwrap().verdict_words();
        assert!(w.ends_with("too few steps for a 95 % interval)"), "{w}");
    }

    #[test]
    fn few_steps_have_no_interval() {
        let s = step_shift(&[10, 11, 12], &[20, 21, 22]).unwrap();
        assert_eq!(s.ci95_pct, None);
        assert!(!s.significant);
        assert_eq!(step_shift(&[], &[1]), None);
    }
}
