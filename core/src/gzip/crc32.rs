//! CRC-32 (IEEE 802.3, the gzip trailer's checksum) for [`GzDecoder`](super::GzDecoder).
//!
//! Natively [`Crc32`] is crc32fast, which folds with carry-less multiplies (PCLMULQDQ on x86,
//! PMULL on aarch64). WebAssembly has no such instruction and crc32fast falls back to
//! slicing-by-16, whose one chain of table lookups per 16 bytes leaves the CPU waiting; there the
//! decoder uses [`update_braided`] instead: the same tables-of-bytes method split into
//! [`LANES`] independent chains ("braiding", after section 4.11 of Kadatch and Jenkins,
//! *Everything we know about CRC but afraid to forget*, 2010, as zlib does), about 20 % faster in
//! V8 on the page's 1 GB trace.

/// The reflected CRC-32 polynomial.
const POLY: u32 = 0xedb8_8320;

/// Independent 8-byte lanes processed side by side: 3 was the fastest of 2-6 in V8.
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

/// A running CRC-32: crc32fast natively, [`update_braided`] in WebAssembly.
#[derive(Clone)]
pub(crate) struct Crc32 {
    #[cfg(target_arch = "wasm32")]
    crc: u32,
    #[cfg(not(target_arch = "wasm32"))]
    hasher: crc32fast::Hasher,
}

impl Crc32 {
    /// The CRC of no bytes.
    pub(crate) fn new() -> Crc32 {
        Crc32 {
            #[cfg(target_arch = "wasm32")]
            crc: 0,
            #[cfg(not(target_arch = "wasm32"))]
            hasher: crc32fast::Hasher::new(),
        }
    }

    /// Continues over `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        #[cfg(target_arch = "wasm32")]
        {
            self.crc = update_braided(self.crc, data);
        }
        #[cfg(not(target_arch = "wasm32"))]
        self.hasher.update(data);
    }

    /// The CRC of the bytes so far.
    pub(crate) fn value(&self) -> u32 {
        #[cfg(target_arch = "wasm32")]
        {
            self.crc
        }
        #[cfg(not(target_arch = "wasm32"))]
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
    }
}
