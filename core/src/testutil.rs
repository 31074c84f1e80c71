//! Test helpers shared by the modules' tests: a seeded PRNG and random chunk splits.
//! Set `FLINCH_SPLIT_SEED` to pin the random splits of every streaming test to one seed.
#![allow(dead_code)] // used by the modules as they land

/// SplitMix64: small, fast, deterministic.
pub struct Rng(pub u64);

impl Rng {
    /// A generator from `FLINCH_SPLIT_SEED` when set, else from `default_seed`.
    pub fn from_env(default_seed: u64) -> Rng {
        let seed = std::env::var("FLINCH_SPLIT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_seed);
        Rng(seed)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Splits `data` into chunks: whole, byte by byte, and `rounds` random splits. Calls `f` once per
/// split with the chunk list, so a streaming test checks every split against the same oracle.
pub fn for_each_split(data: &[u8], rounds: usize, seed: u64, mut f: impl FnMut(&[&[u8]])) {
    f(&[data]);
    let bytes: std::vec::Vec<&[u8]> = data.chunks(1).collect();
    f(&bytes);
    let mut rng = Rng::from_env(seed);
    for _ in 0..rounds {
        let mut chunks = std::vec::Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let max = 1 + rng.below(1 + rest.len() as u64 / 2).min(4096);
            let n = (1 + rng.below(max)) as usize;
            let n = n.min(rest.len());
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        f(&chunks);
    }
}
