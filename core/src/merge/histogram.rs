//! The mergeable log-bucket histogram of an op's durations: the exponential buckets of
//! OpenTelemetry's exponential histograms and Prometheus' native histograms.
//!
//! At scale `s` the base is `2^(2^-s)`, and bucket `i` holds the durations `v` (integer ns)
//! with `base^i < v <= base^(i+1)` (upper bound inclusive, as both). Zero durations are counted
//! apart (`zero_count`). A bucket stands for its geometric midpoint `base^(i + 1/2)`, which is
//! within `2^(2^-(s+1)) - 1` of every value in it ([`relative_error`]). Bucket `i` at scale `s`
//! is bucket `i >> k` at scale `s - k`, so histograms of different scales merge at the smaller.
//!
//! Indexes are computed from the integer without a logarithm: the exponent is the bit length,
//! and the bucket within the power of two comes from a table of `2^(j/512)` in 63-bit fixed
//! point built at compile time by integer square roots (deterministic on every target, no
//! floating point; each entry within a few units of 2^-63 of the true value).
use serde::{Deserialize, Serialize};

pub(crate) use super::buckets::{BucketSummer, BucketWriter};
pub use super::buckets::{Buckets, Iter as BucketIter};

/// The scale every summary's histograms are made at: base `2^(1/256)`, 256 buckets per power of
/// two (Prometheus' highest native-histogram schema).
pub const SCALE: u8 = 8;
/// The largest scale accepted.
pub const MAX_SCALE: u8 = 8;

/// Relative error of a duration read from a histogram of scale `scale`: `2^(2^-(scale+1)) - 1`
/// (0.135% at [`SCALE`]). A quantile estimated by [`LogHistogram`]'s ranks interpolated as numpy
/// does is within this of the exact numpy-linear quantile of the same durations.
pub fn relative_error(scale: u8) -> f64 {
    let mid = POW2_FRAC[1usize << (MAX_SCALE - scale.min(MAX_SCALE))];
    mid as f64 / ONE_Q63 as f64 - 1.0
}

const TABLE_BITS: u32 = MAX_SCALE as u32 + 1;
const TABLE_LEN: usize = 1 << TABLE_BITS;
const ONE_Q63: u64 = 1 << 63;

/// `2^(j/512)` for `j` in `0..512`, times `2^63`, rounded down.
static POW2_FRAC: [u64; TABLE_LEN] = pow2_table();

const fn pow2_table() -> [u64; TABLE_LEN] {
    // roots[b] = 2^(2^b / 512) in Q63: sqrt(2) first, then successive square roots.
    let mut roots = [0u128; TABLE_BITS as usize];
    let mut b = TABLE_BITS as usize - 1;
    roots[b] = (1u128 << 127).isqrt(); // sqrt(2^64 * 2^63)
    while b > 0 {
        b -= 1;
        roots[b] = (roots[b + 1] << 63).isqrt();
    }
    let mut table = [0u64; TABLE_LEN];
    let mut j = 0;
    while j < TABLE_LEN {
        let mut acc: u128 = ONE_Q63 as u128;
        let mut bit = 0;
        while bit < TABLE_BITS as usize {
            if j & (1 << bit) != 0 {
                acc = (acc * roots[bit]) >> 63;
            }
            bit += 1;
        }
        table[j] = acc as u64;
        j += 1;
    }
    table
}

/// Bucket of a duration `v_ns >= 1` at `scale` (<= [`MAX_SCALE`]).
pub fn bucket_index(v_ns: u64, scale: u8) -> i32 {
    debug_assert!(v_ns >= 1 && scale <= MAX_SCALE);
    let e = 63 - v_ns.leading_zeros();
    let m = v_ns << (63 - e);
    let per = 1i32 << scale;
    if m == ONE_Q63 {
        return e as i32 * per - 1;
    }
    let stride = 1usize << (TABLE_BITS - u32::from(scale));
    // The largest j in [0, per) with 2^(j/per) < m (j = 0 always qualifies).
    let (mut lo, mut hi) = (0i32, per);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if POW2_FRAC[mid as usize * stride] < m {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    e as i32 * per + lo
}

/// The smallest and largest bucket indexes a duration can have at `scale`.
pub fn index_range(scale: u8) -> (i32, i32) {
    (-1, (64i32 << scale) - 1)
}

/// The value a bucket stands for, ns: its geometric midpoint `2^((i + 1/2) / 2^scale)`.
pub fn bucket_value_ns(index: i32, scale: u8) -> f64 {
    let per = 1i32 << scale;
    let e = index.div_euclid(per);
    let j = index.rem_euclid(per) as usize;
    let mid = POW2_FRAC[(2 * j + 1) << (MAX_SCALE - scale)];
    // 2^(e - 63) exactly (e - 63 lies in [-64, 0]).
    let pow = f64::from_bits(((e - 63 + 1023) as u64) << 52);
    mid as f64 * pow
}

/// The durations of one op as counts per bucket: `buckets` holds `[index, count]` pairs with
/// increasing indexes and non-zero counts (held compactly, [`Buckets`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LogHistogram {
    /// Durations of 0 ns.
    pub zero_count: u64,
    /// `[index, count]` pairs, increasing indexes.
    pub buckets: Buckets,
}

impl LogHistogram {
    /// The histogram of `sorted` durations (ns, ascending) at `scale`.
    pub fn from_sorted(sorted: impl IntoIterator<Item = u64>, scale: u8) -> LogHistogram {
        let mut zero_count = 0u64;
        let mut w = BucketWriter::new();
        // The pair being counted; a run of equal durations is looked up once.
        let mut run: Option<(i32, u64)> = None;
        let mut last = 0u64;
        for v in sorted {
            if v == 0 {
                zero_count += 1;
                continue;
            }
            if let Some((_, c)) = &mut run
                && v == last
            {
                *c += 1;
                continue;
            }
            last = v;
            let i = bucket_index(v, scale);
            match &mut run {
                Some((at, c)) if *at == i => *c += 1,
                _ => {
                    if let Some((at, c)) = run.replace((i, 1)) {
                        w.push(at, c);
                    }
                }
            }
        }
        if let Some((at, c)) = run {
            w.push(at, c);
        }
        LogHistogram {
            zero_count,
            buckets: w.finish(),
        }
    }

    /// Durations counted.
    pub fn count(&self) -> Option<u64> {
        self.buckets
            .iter()
            .try_fold(self.zero_count, |n, (_, c)| n.checked_add(c))
    }

    /// This histogram at a scale `by` lower (bucket `i` goes to `i >> by`).
    pub fn downscaled(&self, by: u8) -> LogHistogram {
        if by == 0 {
            return self.clone();
        }
        let mut out = BucketSummer::default();
        for (i, c) in &self.buckets {
            // The counts of a checked histogram add up to its count, a u64.
            let _ = out.add(i >> by, c);
        }
        LogHistogram {
            zero_count: self.zero_count,
            buckets: out.finish(),
        }
    }

    /// The sum of two histograms of the same scale; `None` when a count overflows.
    pub fn merged(&self, other: &LogHistogram) -> Option<LogHistogram> {
        let mut w = BucketWriter::new();
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            let next = match (a.peek().copied(), b.peek().copied()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    a.next();
                    b.next();
                    (x.0, x.1.checked_add(y.1)?)
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    a.next();
                    x
                }
                (_, Some(y)) => {
                    b.next();
                    y
                }
                (Some(x), None) => {
                    a.next();
                    x
                }
                (None, None) => break,
            };
            w.push(next.0, next.1);
        }
        Some(LogHistogram {
            zero_count: self.zero_count.checked_add(other.zero_count)?,
            buckets: w.finish(),
        })
    }

    /// The estimated duration (ns) at `rank` (0-based, ascending): 0 in the zero bucket, else
    /// the bucket's value. `None` past the end.
    pub fn value_at_ns(&self, rank: u64, scale: u8) -> Option<f64> {
        if rank < self.zero_count {
            return Some(0.0);
        }
        let mut left = rank - self.zero_count;
        for (i, c) in &self.buckets {
            if left < c {
                return Some(bucket_value_ns(i, scale));
            }
            left -= c;
        }
        None
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.heap_bytes()
    }
}
