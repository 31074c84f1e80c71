//! Exact summation of f64 values with a correctly rounded result (`math.fsum`).

/// Words in the [`Fsum`] accumulator: 2098 bits of f64 range plus 142 bits of headroom for
/// carries (more than 2^64 additions).
const FSUM_WORDS: usize = 35;

/// Exact sum of f64 values with a correctly rounded (nearest-even) result, like Python's
/// `math.fsum`. A fixed 280-byte two's-complement fixed-point accumulator in units of 2^-1074
/// (the smallest subnormal): every finite f64 is an integer in those units, so the sum is exact
/// for any order and any count below 2^64, with no allocation. Mergeable with [`Fsum::merge`].
///
/// Non-finite inputs follow IEEE rules in the result: any NaN, or both +inf and -inf, give NaN;
/// otherwise an infinity gives that infinity. A finite sum beyond the f64 range gives ±inf
/// (Python raises `OverflowError` there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fsum {
    words: [u64; FSUM_WORDS],
    pos_inf: bool,
    neg_inf: bool,
    nan: bool,
}

impl Default for Fsum {
    fn default() -> Self {
        Fsum::new()
    }
}

impl Fsum {
    /// A zero sum.
    pub const fn new() -> Fsum {
        Fsum {
            words: [0; FSUM_WORDS],
            pos_inf: false,
            neg_inf: false,
            nan: false,
        }
    }

    /// Adds `x` exactly.
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            if x.is_nan() {
                self.nan = true;
            } else if x > 0.0 {
                self.pos_inf = true;
            } else {
                self.neg_inf = true;
            }
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as usize;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, offset) = if exp == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), exp - 1)
        };
        if mant == 0 {
            return;
        }
        let word = offset / 64;
        let shifted = (mant as u128) << (offset % 64);
        let lo = shifted as u64;
        let hi = (shifted >> 64) as u64;
        if bits >> 63 == 0 {
            self.add_words(word, [lo, hi]);
        } else {
            self.sub_at(word, lo, hi);
        }
    }

    /// Adds the `N` words `parts` (least significant first) at `words[word..]`, carrying on
    /// into the words above.
    #[inline(always)]
    fn add_words<const N: usize>(&mut self, word: usize, parts: [u64; N]) {
        let mut carry = false;
        for (k, part) in parts.into_iter().enumerate() {
            let (w1, c1) = self.words[word + k].overflowing_add(part);
            let (w2, c2) = w1.overflowing_add(u64::from(carry));
            self.words[word + k] = w2;
            carry = c1 || c2;
        }
        let mut i = word + N;
        while carry && i < FSUM_WORDS {
            let (w, c) = self.words[i].overflowing_add(1);
            self.words[i] = w;
            carry = c;
            i += 1;
        }
    }

    fn sub_at(&mut self, word: usize, lo: u64, hi: u64) {
        let (w0, b0) = self.words[word].overflowing_sub(lo);
        self.words[word] = w0;
        let (w1a, b1a) = self.words[word + 1].overflowing_sub(hi);
        let (w1, b1b) = w1a.overflowing_sub(b0 as u64);
        self.words[word + 1] = w1;
        let mut borrow = b1a || b1b;
        let mut i = word + 2;
        while borrow && i < FSUM_WORDS {
            let (w, b) = self.words[i].overflowing_sub(1);
            self.words[i] = w;
            borrow = b;
            i += 1;
        }
    }

    /// Adds `sum × 2^offset` units of 2^-1074, exactly: what [`add`](Self::add) of several
    /// positive values whose units share one `offset` (one biased exponent `offset + 1`, or
    /// subnormals at offset 0) adds, their integer significands summed first. For a caller
    /// that groups values by exponent (one add per exponent instead of one per value).
    /// `offset` must be below 2046 (as any f64's is).
    #[cfg(feature = "alloc")] // its one caller, the trace summary, needs alloc
    pub(crate) fn add_significands(&mut self, sum: u128, offset: usize) {
        let (word, sh) = (offset / 64, offset % 64);
        let (lo, hi) = (sum as u64, (sum >> 64) as u64);
        let parts = if sh == 0 {
            [lo, hi, 0]
        } else {
            [lo << sh, (lo >> (64 - sh)) | (hi << sh), hi >> (64 - sh)]
        };
        self.add_words(word, parts);
    }

    /// Adds another accumulator's exact sum to this one.
    pub fn merge(&mut self, other: &Fsum) {
        let mut carry = false;
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            let (s1, c1) = w.overflowing_add(*o);
            let (s2, c2) = s1.overflowing_add(carry as u64);
            *w = s2;
            carry = c1 || c2;
        }
        self.pos_inf |= other.pos_inf;
        self.neg_inf |= other.neg_inf;
        self.nan |= other.nan;
    }

    /// The exact sum rounded to the nearest f64 (ties to even).
    pub fn value(&self) -> f64 {
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        let negative = self.words[FSUM_WORDS - 1] >> 63 == 1;
        let mut mag = self.words;
        if negative {
            // Two's complement negation.
            let mut carry = true;
            for w in mag.iter_mut() {
                let (s, c) = (!*w).overflowing_add(carry as u64);
                *w = s;
                carry = c;
            }
        }
        let magnitude = round_units(&mag);
        if negative { -magnitude } else { magnitude }
    }
}

/// Rounds a non-negative integer (little-endian words) times 2^-1074 to the nearest f64.
fn round_units(mag: &[u64; FSUM_WORDS]) -> f64 {
    let Some(top_word) = mag.iter().rposition(|&w| w != 0) else {
        return 0.0;
    };
    let top_bit = top_word * 64 + 63 - mag[top_word].leading_zeros() as usize;
    let bit = |i: usize| (mag[i / 64] >> (i % 64)) & 1;
    if top_bit < 53 {
        // Below 2^53 units: exact as k * 2^-1074 (subnormal or the lowest normal binade).
        return mag[0] as f64 * f64::from_bits(1);
    }
    // 53 significant bits [top_bit - 52, top_bit], then round bit and sticky bits.
    let low = top_bit - 52;
    let mut m: u64 = 0;
    for i in (low..=top_bit).rev() {
        m = (m << 1) | bit(i);
    }
    let round = bit(low - 1) == 1;
    let sticky = low >= 2 && {
        let below = low - 1; // bits [0, below) are sticky
        let full = below / 64;
        mag[..full].iter().any(|&w| w != 0)
            || (!below.is_multiple_of(64) && mag[full] & ((1u64 << (below % 64)) - 1) != 0)
    };
    let mut top = top_bit;
    if round && (sticky || m & 1 == 1) {
        m += 1;
        if m == 1u64 << 53 {
            m >>= 1;
            top += 1;
        }
    }
    // value = (m / 2^52) * 2^(top - 1074); biased exponent = top - 1074 + 1023.
    let biased = top - 51;
    if biased >= 0x7ff {
        return f64::INFINITY;
    }
    f64::from_bits(((biased as u64) << 52) | (m & ((1u64 << 52) - 1)))
}

/// `math.fsum(values)`: the correctly rounded sum of `values`.
pub fn fsum(values: &[f64]) -> f64 {
    let mut acc = Fsum::new();
    for &v in values {
        acc.add(v);
    }
    acc.value()
}
