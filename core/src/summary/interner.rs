//! A byte-string interner: open addressing over an arena, bounded or growing. Looking up a
//! known key never allocates.
use alloc::vec::Vec;

const EMPTY: u32 = u32::MAX;

/// Maps byte strings (or pairs of byte strings) to dense indexes `0..len()` in first-seen
/// order.
pub(crate) struct Interner {
    slots: Vec<u32>,
    /// (offset, length, hash, length of the first part).
    entries: Vec<(u32, u32, u64, u32)>,
    arena: Vec<u8>,
    cap: usize,
    /// Most bytes of keys kept in `arena` (at most `u32::MAX`).
    max_bytes: usize,
}

/// Constants the hash mixes in: the first 256 bits of the fraction of pi (nothing up the
/// sleeve). The folded multiply below is the one of wyhash and rapidhash.
const P: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The 128-bit product of `a` and `b`, its halves xor-ed: one multiply mixes 16 input bytes.
#[inline(always)]
fn mix(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn r8(k: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&k[i..i + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn r4(k: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&k[i..i + 4]);
    u64::from(u32::from_le_bytes(w))
}

/// Mixes `key` into the running hash `s`: 16 bytes per multiply, in three independent lanes
/// over 48-byte blocks for long keys (kernel names are often 100-200 bytes), and the last
/// bytes by overlapping loads instead of a byte loop or a copy. Every byte takes part; the
/// length is the caller's to mix in.
#[inline(always)]
fn absorb(mut s: u64, key: &[u8]) -> u64 {
    let n = key.len();
    let (a, b) = if n <= 16 {
        if n >= 8 {
            (r8(key, 0), r8(key, n - 8))
        } else if n >= 4 {
            (r4(key, 0), r4(key, n - 4))
        } else if n > 0 {
            let k = |i: usize| u64::from(key[i]);
            ((k(0) << 16) | (k(n >> 1) << 8) | k(n - 1), 0)
        } else {
            (0, 0)
        }
    } else {
        let mut i = 0;
        if n > 48 {
            let (mut s1, mut s2) = (s ^ P[2], s ^ P[3]);
            while n - i > 48 {
                s = mix(r8(key, i) ^ P[1], r8(key, i + 8) ^ s);
                s1 = mix(r8(key, i + 16) ^ P[2], r8(key, i + 24) ^ s1);
                s2 = mix(r8(key, i + 32) ^ P[3], r8(key, i + 40) ^ s2);
                i += 48;
            }
            s ^= s1 ^ s2;
        }
        // 1..=48 bytes left from `i`: up to two 16-byte steps, then the last 16 bytes.
        if n - i > 16 {
            s = mix(r8(key, i) ^ P[2], r8(key, i + 8) ^ s);
            if n - i > 32 {
                s = mix(r8(key, i + 16) ^ P[2], r8(key, i + 24) ^ s);
            }
        }
        (r8(key, n - 16), r8(key, n - 8))
    };
    mix(a ^ P[1], b ^ s)
}

/// The hash of the pair `(a, b)` (both lengths, so the split point, and every byte). No secret
/// seed: not resistant to keys chosen to collide, whose cost is bounded by the table's size.
#[inline(always)]
pub(crate) fn hash2(a: &[u8], b: &[u8]) -> u64 {
    let s = mix((a.len() as u64) ^ P[0], (b.len() as u64) ^ P[3]);
    absorb(absorb(s, a), b)
}

impl Interner {
    /// At most `cap` keys (`usize::MAX`: unbounded). A bounded interner allocates its table once.
    pub(crate) fn new(cap: usize) -> Interner {
        let initial = if cap == usize::MAX {
            64
        } else {
            (cap.max(1) * 2).next_power_of_two()
        };
        Interner {
            slots: alloc::vec![EMPTY; initial],
            entries: Vec::with_capacity(if cap == usize::MAX {
                32
            } else {
                cap.min(1 << 16)
            }),
            arena: Vec::new(),
            cap,
            max_bytes: u32::MAX as usize,
        }
    }

    /// Like [`new`](Self::new), keeping at most `max_bytes` bytes of keys: a new key that
    /// would go past it is not inserted (`None`), as when the interner is full.
    pub(crate) fn with_byte_cap(cap: usize, max_bytes: usize) -> Interner {
        let mut it = Interner::new(cap);
        it.max_bytes = max_bytes.min(u32::MAX as usize);
        it
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn key(&self, index: u32) -> &[u8] {
        let (off, len, _, _) = self.entries[index as usize];
        &self.arena[off as usize..(off + len) as usize]
    }

    /// The key of `index` split into the two parts given to [`get_or_insert2`](Self::get_or_insert2).
    pub(crate) fn key2(&self, index: u32) -> (&[u8], &[u8]) {
        let (_, _, _, first) = self.entries[index as usize];
        self.key(index).split_at(first as usize)
    }

    /// The index of `key`, inserting it when new; `None` when new and the interner is full.
    #[inline]
    pub(crate) fn get_or_insert(&mut self, key: &[u8]) -> Option<u32> {
        self.get_or_insert2(key, &[])
    }

    /// Like [`get_or_insert`](Self::get_or_insert) for the pair `(a, b)`, without building
    /// the concatenation on a hit.
    #[inline]
    pub(crate) fn get_or_insert2(&mut self, a: &[u8], b: &[u8]) -> Option<u32> {
        let h = hash2(a, b);
        let mask = self.slots.len() - 1;
        let mut p = (h as usize) & mask;
        loop {
            let s = self.slots[p];
            if s == EMPTY {
                break;
            }
            let (off, len, eh, first) = self.entries[s as usize];
            if eh == h && first as usize == a.len() {
                let k = &self.arena[off as usize..(off + len) as usize];
                if &k[..a.len()] == a && &k[a.len()..] == b {
                    return Some(s);
                }
            }
            p = (p + 1) & mask;
        }
        let total = a.len() + b.len();
        if self.entries.len() >= self.cap || self.arena.len() + total > self.max_bytes {
            return None;
        }
        let index = self.entries.len() as u32;
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(a);
        self.arena.extend_from_slice(b);
        self.entries.push((off, total as u32, h, a.len() as u32));
        self.slots[p] = index;
        if self.entries.len() * 2 > self.slots.len() {
            self.grow();
        }
        Some(index)
    }

    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        self.slots.clear();
        self.slots.resize(n, EMPTY);
        let mask = n - 1;
        for (i, &(_, _, h, _)) in self.entries.iter().enumerate() {
            let mut p = (h as usize) & mask;
            while self.slots[p] != EMPTY {
                p = (p + 1) & mask;
            }
            self.slots[p] = i as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Interner, hash2};
    use std::collections::HashMap;
    use std::format;
    use std::vec::Vec;

    #[test]
    fn matches_a_hash_map() {
        let mut it = Interner::new(usize::MAX);
        let mut oracle: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut rng = crate::testutil::Rng(3);
        for _ in 0..20_000 {
            let key = format!("k{}", rng.below(3000)).into_bytes();
            let next = oracle.len() as u32;
            let want = *oracle.entry(key.clone()).or_insert(next);
            assert_eq!(it.get_or_insert(&key), Some(want));
            assert_eq!(it.key(want), &key[..]);
        }
        assert_eq!(it.len(), oracle.len());
        // Pairs: the split point is part of the key.
        let mut pairs = Interner::new(usize::MAX);
        let ab = pairs.get_or_insert2(b"ab", b"c").unwrap();
        let a_bc = pairs.get_or_insert2(b"a", b"bc").unwrap();
        assert_ne!(ab, a_bc);
        assert_eq!(pairs.get_or_insert2(b"ab", b"c"), Some(ab));
        assert_eq!(pairs.key2(a_bc), (&b"a"[..], &b"bc"[..]));
        let mut bounded = Interner::new(10);
        for k in 0..10u8 {
            assert_eq!(bounded.get_or_insert(&[k]), Some(u32::from(k)));
        }
        assert_eq!(bounded.get_or_insert(b"new"), None);
        assert_eq!(bounded.get_or_insert(&[3]), Some(3));
        // A byte cap: keys that fit are kept, the first that would pass it is refused, and
        // known keys are still found.
        let mut bytes = Interner::with_byte_cap(usize::MAX, 10);
        assert_eq!(bytes.get_or_insert2(b"abc", b"def"), Some(0));
        assert_eq!(bytes.get_or_insert(b"ghij"), Some(1));
        assert_eq!(bytes.get_or_insert(b"k"), None);
        assert_eq!(bytes.get_or_insert(b""), Some(2));
        assert_eq!(bytes.get_or_insert2(b"abc", b"def"), Some(0));
    }

    /// Every byte and both lengths reach the hash: changing any one byte of a key (of every
    /// length up to 200, past the 48-byte blocks and all tail cases), or moving the split of a
    /// pair, changes it.
    #[test]
    fn hash_sees_every_byte_and_the_split() {
        let mut rng = crate::testutil::Rng(11);
        for n in 0..=200usize {
            let key: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
            let h = hash2(b"kernel", &key);
            for i in 0..n {
                for flip in [1u8, 0x80] {
                    let mut k = key.clone();
                    k[i] ^= flip;
                    assert_ne!(hash2(b"kernel", &k), h, "len {n}, byte {i}");
                    assert_ne!(hash2(&k, b""), hash2(&key, b""), "len {n}, byte {i}");
                }
            }
            // One more byte (a zero, which a length-blind hash would miss).
            let mut longer = key.clone();
            longer.push(0);
            assert_ne!(hash2(b"kernel", &longer), h, "len {n}");
            if n > 0 {
                assert_ne!(
                    hash2(&key[..1], &key[1..]),
                    hash2(&key[..0], &key),
                    "len {n}"
                );
            }
        }
    }

    /// Many long, near-identical keys (as kernel names are: shared prefixes and suffixes,
    /// differing in one byte or in length), unbounded and at a capacity that folds the rest
    /// into `None`, against a hash map; no two of them share a 64-bit hash.
    #[test]
    fn near_identical_keys_against_a_hash_map() {
        let base = b"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
        let mut keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for cut in [0, 1, 7, 8, 9, 15, 16, 17, 47, 48, 49, 64, 100, base.len()] {
            let name = &base[..cut];
            keys.push((b"kernel".to_vec(), name.to_vec()));
            keys.push((b"kernel".to_vec(), [name, b"\0"].concat()));
            keys.push((b"kerne".to_vec(), [b"l", name].concat()));
            for at in 0..cut {
                let mut k = name.to_vec();
                k[at] = k[at].wrapping_add(1);
                keys.push((b"kernel".to_vec(), k));
            }
        }
        let mut hashes: Vec<u64> = keys.iter().map(|(a, b)| hash2(a, b)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        let mut distinct = keys.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(hashes.len(), distinct.len(), "a 64-bit collision");
        let mut rng = crate::testutil::Rng(12);
        for cap in [usize::MAX, 100, 1] {
            let mut it = Interner::new(cap);
            let mut oracle: HashMap<(Vec<u8>, Vec<u8>), u32> = HashMap::new();
            for _ in 0..20_000 {
                let (a, b) = &keys[rng.below(keys.len() as u64) as usize];
                let want = match oracle.get(&(a.clone(), b.clone())) {
                    Some(&i) => Some(i),
                    None if oracle.len() < cap => {
                        let i = oracle.len() as u32;
                        oracle.insert((a.clone(), b.clone()), i);
                        Some(i)
                    }
                    None => None,
                };
                assert_eq!(it.get_or_insert2(a, b), want, "cap {cap}");
                if let Some(i) = want {
                    assert_eq!(it.key2(i), (&a[..], &b[..]));
                }
            }
            assert_eq!(it.len(), oracle.len());
        }
    }
}
