//! CRC-32 (IEEE 802.3, the gzip trailer's checksum) for [`GzDecoder`](super::GzDecoder).
//!
//! Natively [`Crc32`] is crc32fast, which folds with carry-less multiplies (PCLMULQDQ on x86,
//! PMULL on aarch64). WebAssembly has no such instruction and crc32fast falls back to
//! slicing-by-16, whose one chain of table lookups per 16 bytes leaves the CPU waiting; there the
//! decoder uses [`update_braided`] instead: the same tables-of-bytes method split into
//! [`LANES`] independent chains ("braiding", after section 4.11 of Kadatch and Jenkins,
//! *Everything we know about CRC but afraid to forget*, 2010, as zlib does), so that the lookups
//! of the chains overlap (the page's figures: BENCHMARKS.md, "Browser").
//!
//! [`SparseCrc32`] is compiled on every target so that its tests (against crc32fast) run
//! natively, but outside tests only wasm32 uses it.
#![cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]

/// The reflected CRC-32 polynomial.
const POLY: u32 = 0xedb8_8320;

/// Independent 8-byte lanes processed side by side: three keep V8's lookups overlapped best
/// among two to six (BENCHMARKS.md, "Browser").
pub const LANES: usize = 3;

/// Bytes per braided block: one 8-byte word per lane.
const BLOCK_BYTES: usize = 8 * LANES;

/// `table(w)[j][b]`: the CRC contribution of byte `b` at position `j` of an 8-byte word, carried
/// past the rest of the word and `w - 1` further words (`8 * (8 * w - j)` bit steps).
const fn table(words: usize) -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut j = 0;
    while j < 8 {
        let mut b = 0;
        while b < 256 {
            let mut c = b as u32;
            let mut k = 0;
            while k < 8 * (8 * words - j) {
                c = if c & 1 != 0 { POLY ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            t[j][b] = c;
            b += 1;
        }
        j += 1;
    }
    t
}

/// Bytes carried past the rest of their lane's block (`LANES` words).
static LANE_TABLE: [[u32; 256]; 8] = table(LANES);
/// Bytes carried past the rest of their word; `WORD_TABLE[7]` is the classic byte table.
static WORD_TABLE: [[u32; 256]; 8] = table(1);

/// Folds one little-endian 8-byte word into the (inverted) register `crc`.
#[inline(always)]
fn word_step(crc: u32, word: u64, table: &[[u32; 256]; 8]) -> u32 {
    let v = word ^ u64::from(crc);
    let mut c = 0;
    for (j, t) in table.iter().enumerate() {
        c ^= t[((v >> (8 * j)) & 0xff) as usize];
    }
    c
}

fn le_word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(w)
}

/// Continues the CRC-32 `crc` (of the bytes so far; 0 for none) over `data`, braided over
/// [`LANES`] chains. The same value as `crc32fast::Hasher::new_with_initial(crc)` fed `data`.
pub fn update_braided(crc: u32, data: &[u8]) -> u32 {
    // Every lane's partial CRC must be folded into a word of the tail, so the last whole block
    // is left to the tail.
    let blocks = (data.len() / BLOCK_BYTES).saturating_sub(1);
    let (braided, tail) = data.split_at(blocks * BLOCK_BYTES);
    let mut lanes = [0u32; LANES];
    lanes[0] = !crc;
    for block in braided.chunks_exact(BLOCK_BYTES) {
        let mut v = [0u64; LANES];
        for (k, (v, lane)) in v.iter_mut().zip(lanes).enumerate() {
            *v = le_word(&block[8 * k..]) ^ u64::from(lane);
        }
        lanes = [0; LANES];
        for t in LANE_TABLE.iter() {
            for (lane, v) in lanes.iter_mut().zip(v.iter_mut()) {
                *lane ^= t[(*v & 0xff) as usize];
                *v >>= 8;
            }
        }
    }
    // Lane k's partial CRC belongs with the tail's word k.
    let mut c = lanes[0];
    let mut words = tail.chunks_exact(8);
    for (i, word) in (&mut words).enumerate() {
        let carry = if (1..LANES).contains(&i) { lanes[i] } else { 0 };
        c = word_step(c ^ carry, le_word(word), &WORD_TABLE);
    }
    for &b in words.remainder() {
        c = WORD_TABLE[7][((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Degrees (in 64-bit words) of the sparse multiple of the CRC-32 polynomial that
/// [`SparseCrc32`] reduces by: `P(x)` divides `y^3006 + y^2866 + y^2215 + 1` with `y = x^64`
/// (found by a birthday search over `x^(64k) mod P`; the test `sparse_multiple_is_a_multiple`
/// checks it).
const SPARSE_N: usize = 3006;
const SPARSE_B: usize = 2866;
const SPARSE_C: usize = 2215;
/// Ring of the last words (at least `SPARSE_N + 1`), a power of two for masking.
const RING_WORDS: usize = 4096;
const RING_MASK: usize = RING_WORDS - 1;
const _: () = assert!(SPARSE_C < SPARSE_B && SPARSE_B < SPARSE_N && SPARSE_N < RING_WORDS);

/// A running CRC-32 without table lookups in its bulk loop, for WebAssembly (no carry-less
/// multiply there). Since `P` divides the sparse `Q(y) = y^n + y^b + y^c + 1` (`y = x^64`), the
/// message may be reduced modulo `Q` instead of `P` first: once `n` more words have arrived
/// after word `p`, word `p` is cancelled by XORing it into words `p + n - b`, `p + n - c` and
/// `p + n` (3 XORs per 8 bytes, against 8 table lookups). What is left, the last `n` words and
/// the bytes after them, goes through [`update_braided`] when the value is asked for. The
/// initial register is folded into the first word, so the cancelled words are zeros that leave
/// a zero register unchanged. The same idea as the "Chorba" CRC (Russell, 2024), with a
/// multiple searched here. 32 KiB of state.
#[derive(Clone)]
pub struct SparseCrc32 {
    /// Word `q` (after the XORs it has received) is at `ring[q & RING_MASK]`.
    ring: [u64; RING_WORDS],
    /// Whole words taken.
    words: usize,
    /// Bytes after the last whole word (up to 7), little-endian in `partial`.
    partial: [u8; 8],
    partial_len: usize,
}

impl Default for SparseCrc32 {
    fn default() -> Self {
        SparseCrc32::new()
    }
}

impl SparseCrc32 {
    /// The CRC of no bytes.
    pub fn new() -> SparseCrc32 {
        SparseCrc32 {
            ring: [0; RING_WORDS],
            words: 0,
            partial: [0; 8],
            partial_len: 0,
        }
    }

    /// Back to the CRC of no bytes (without clearing the ring: every slot is written before it
    /// is read).
    pub fn reset(&mut self) {
        self.words = 0;
        self.partial_len = 0;
    }

    #[inline(always)]
    fn push_word(&mut self, w: u64) {
        let q = self.words;
        let w = if q == 0 { w ^ 0xffff_ffff } else { w };
        if q >= SPARSE_N {
            let x = self.ring[(q - SPARSE_N) & RING_MASK];
            self.ring[(q - SPARSE_B) & RING_MASK] ^= x;
            self.ring[(q - SPARSE_C) & RING_MASK] ^= x;
            self.ring[q & RING_MASK] = w ^ x;
        } else {
            self.ring[q & RING_MASK] = w;
        }
        self.words = q + 1;
    }

    /// Continues over `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        if self.partial_len > 0 {
            let n = (8 - self.partial_len).min(data.len());
            self.partial[self.partial_len..self.partial_len + n].copy_from_slice(&data[..n]);
            self.partial_len += n;
            data = &data[n..];
            if self.partial_len < 8 {
                return;
            }
            self.partial_len = 0;
            self.push_word(u64::from_le_bytes(self.partial));
        }
        let mut i = 0;
        // The first words of a stream take the general step; then the bulk loop has no branch
        // but the ring's wrap.
        while self.words < SPARSE_N && i + 8 <= data.len() {
            self.push_word(le_word(&data[i..]));
            i += 8;
        }
        let mut q = self.words;
        let ring = &mut self.ring;
        // Four words per step: none reads what another writes (the distances are 140, 791
        // and 3006 words), so their loads and stores are adjacent (wasm simd128 does each
        // pair as one vector) when no index of them wraps the ring.
        while i + 32 <= data.len() {
            let (n, b, c) = (
                (q - SPARSE_N) & RING_MASK,
                (q - SPARSE_B) & RING_MASK,
                (q - SPARSE_C) & RING_MASK,
            );
            let d = q & RING_MASK;
            if n < RING_MASK - 2 && b < RING_MASK - 2 && c < RING_MASK - 2 && d < RING_MASK - 2 {
                pair_step(ring, [n, b, c, d], &data[i..i + 16]);
                pair_step(ring, [n + 2, b + 2, c + 2, d + 2], &data[i + 16..i + 32]);
            } else {
                for k in 0..4 {
                    let x = ring[(q + k - SPARSE_N) & RING_MASK];
                    ring[(q + k - SPARSE_B) & RING_MASK] ^= x;
                    ring[(q + k - SPARSE_C) & RING_MASK] ^= x;
                    ring[(q + k) & RING_MASK] = le_word(&data[i + 8 * k..]) ^ x;
                }
            }
            q += 4;
            i += 32;
        }
        while i + 8 <= data.len() {
            let x = ring[(q - SPARSE_N) & RING_MASK];
            ring[(q - SPARSE_B) & RING_MASK] ^= x;
            ring[(q - SPARSE_C) & RING_MASK] ^= x;
            ring[q & RING_MASK] = le_word(&data[i..]) ^ x;
            q += 1;
            i += 8;
        }
        self.words = q;
        let rest = &data[i..];
        self.partial[..rest.len()].copy_from_slice(rest);
        self.partial_len = rest.len();
    }

    /// The CRC of the bytes so far.
    pub fn value(&self) -> u32 {
        let tail = &self.partial[..self.partial_len];
        if self.words == 0 {
            return update_braided(0, tail);
        }
        // The cancelled words are zeros: the register is still 0 (`!0xffff_ffff` in the
        // inverted convention of `update_braided`) where the kept words start.
        let mut crc = 0xffff_ffff;
        for q in self.words.saturating_sub(SPARSE_N)..self.words {
            crc = update_braided(crc, &self.ring[q & RING_MASK].to_le_bytes());
        }
        update_braided(crc, tail)
    }
}

/// Two steps of [`SparseCrc32`]'s bulk loop: ring pairs at `n` (read), `b`, `c` (XORed) and `d`
/// (written with the two words of `w`), none of them at the ring's last slot.
#[inline(always)]
fn pair_step(ring: &mut [u64; RING_WORDS], [n, b, c, d]: [usize; 4], w: &[u8]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use core::arch::wasm32::{u64x2, u64x2_extract_lane, v128, v128_xor};
        let get = |r: &[u64; RING_WORDS], i: usize| u64x2(r[i], r[i + 1]);
        let put = |r: &mut [u64; RING_WORDS], i: usize, v: v128| {
            r[i] = u64x2_extract_lane::<0>(v);
            r[i + 1] = u64x2_extract_lane::<1>(v);
        };
        let x = get(ring, n);
        put(ring, b, v128_xor(get(ring, b), x));
        put(ring, c, v128_xor(get(ring, c), x));
        put(ring, d, v128_xor(u64x2(le_word(w), le_word(&w[8..])), x));
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        let (x0, x1) = (ring[n], ring[n + 1]);
        ring[b] ^= x0;
        ring[b + 1] ^= x1;
        ring[c] ^= x0;
        ring[c + 1] ^= x1;
        ring[d] = le_word(w) ^ x0;
        ring[d + 1] = le_word(&w[8..]) ^ x1;
    }
}

/// A running CRC-32: crc32fast natively, [`SparseCrc32`] in WebAssembly and in the core's unit
/// tests (so that every gzip test runs it; the integration tests and native run crc32fast).
#[derive(Clone)]
pub(crate) struct Crc32 {
    #[cfg(any(target_arch = "wasm32", test))]
    sparse: SparseCrc32,
    #[cfg(not(any(target_arch = "wasm32", test)))]
    hasher: crc32fast::Hasher,
}

impl Crc32 {
    /// The CRC of no bytes.
    pub(crate) fn new() -> Crc32 {
        Crc32 {
            #[cfg(any(target_arch = "wasm32", test))]
            sparse: SparseCrc32::new(),
            #[cfg(not(any(target_arch = "wasm32", test)))]
            hasher: crc32fast::Hasher::new(),
        }
    }

    /// Back to the CRC of no bytes.
    pub(crate) fn reset(&mut self) {
        #[cfg(any(target_arch = "wasm32", test))]
        self.sparse.reset();
        #[cfg(not(any(target_arch = "wasm32", test)))]
        self.hasher.reset();
    }

    /// Continues over `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        #[cfg(any(target_arch = "wasm32", test))]
        self.sparse.update(data);
        #[cfg(not(any(target_arch = "wasm32", test)))]
        self.hasher.update(data);
    }

    /// The CRC of the bytes so far.
    pub(crate) fn value(&self) -> u32 {
        #[cfg(any(target_arch = "wasm32", test))]
        {
            self.sparse.value()
        }
        #[cfg(not(any(target_arch = "wasm32", test)))]
        self.hasher.clone().finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

    /// The oracle: one bit at a time, straight from the definition.
    fn bitwise(crc: u32, data: &[u8]) -> u32 {
        let mut c = !crc;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { POLY ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }

    #[test]
    fn check_value_of_the_standard() {
        assert_eq!(update_braided(0, b"123456789"), 0xcbf4_3926);
        assert_eq!(update_braided(0, b""), 0);
    }

    #[test]
    fn braided_matches_bitwise_and_crc32fast_at_every_length_start_and_split() {
        let mut rng = Rng::from_env(31);
        let data: Vec<u8> = (0..2000).map(|_| rng.next_u64() as u8).collect();
        // Every length around the block and tail boundaries, from every start value kind.
        for len in 0..=(6 * BLOCK_BYTES + 9) {
            for start in [0u32, 1, 0xffff_ffff, rng.next_u64() as u32] {
                let d = &data[..len];
                let want = bitwise(start, d);
                assert_eq!(update_braided(start, d), want, "len {len} start {start:#x}");
                let mut h = crc32fast::Hasher::new_with_initial(start);
                h.update(d);
                assert_eq!(h.finalize(), want);
            }
        }
        // Random splits of a long run: continuing is the same as one call.
        let want = bitwise(0, &data);
        for _ in 0..50 {
            let mut crc = 0;
            let mut rest = &data[..];
            while !rest.is_empty() {
                let n = (1 + rng.below(300) as usize).min(rest.len());
                crc = update_braided(crc, &rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(crc, want);
        }
        // Unaligned starts inside a buffer.
        for off in 0..16 {
            assert_eq!(update_braided(7, &data[off..]), bitwise(7, &data[off..]));
        }
    }

    #[test]
    fn running_crc_matches_the_oracle() {
        let mut c = Crc32::new();
        c.update(b"1234");
        c.update(b"56789");
        assert_eq!(c.value(), 0xcbf4_3926);
        assert_eq!(c.clone().value(), 0xcbf4_3926);
        c.reset();
        assert_eq!(c.value(), 0);
        c.update(b"123456789");
        assert_eq!(c.value(), 0xcbf4_3926);
    }

    /// `x^k mod P` in the normal (unreflected) representation, by square and multiply.
    fn x_pow_mod_p(k: u64) -> u64 {
        const P_FULL: u64 = 0x1_04c1_1db7;
        let mul = |a: u64, b: u64| {
            let (mut a, mut b, mut r) = (a, b, 0u64);
            while b != 0 {
                if b & 1 != 0 {
                    r ^= a;
                }
                b >>= 1;
                a <<= 1;
                if a >> 32 != 0 {
                    a ^= P_FULL;
                }
            }
            r
        };
        let (mut r, mut base, mut k) = (1u64, 2u64, k);
        while k != 0 {
            if k & 1 != 0 {
                r = mul(r, base);
            }
            base = mul(base, base);
            k >>= 1;
        }
        r
    }

    #[test]
    fn sparse_multiple_is_a_multiple() {
        let r = |words: usize| x_pow_mod_p(64 * words as u64);
        assert_eq!(r(SPARSE_N) ^ r(SPARSE_B) ^ r(SPARSE_C) ^ r(0), 0);
    }

    #[test]
    fn sparse_matches_bitwise_at_every_length_edge_and_split() {
        let mut rng = Rng::from_env(32);
        let data: Vec<u8> = (0..3 * 8 * SPARSE_N + 100)
            .map(|_| rng.next_u64() as u8)
            .collect();
        // Lengths around 0, the first word, and the first cancellations.
        let edge = 8 * SPARSE_N;
        let lens = (0..40)
            .chain(edge - 20..edge + 30)
            .chain([2 * edge + 3, data.len()]);
        for len in lens {
            let d = &data[..len];
            let mut c = SparseCrc32::new();
            c.update(d);
            assert_eq!(c.value(), bitwise(0, d), "len {len}");
        }
        let want = bitwise(0, &data);
        for round in 0..20 {
            let mut c = SparseCrc32::new();
            let mut rest = &data[..];
            while !rest.is_empty() {
                let max = if round % 2 == 0 { 20 } else { 40_000 };
                let n = (1 + rng.below(max) as usize).min(rest.len());
                c.update(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(c.value(), want, "round {round}");
            // Asking for the value does not disturb the running state.
            assert_eq!(c.value(), want);
            c.reset();
            c.update(b"123456789");
            assert_eq!(c.value(), 0xcbf4_3926);
        }
    }
}
