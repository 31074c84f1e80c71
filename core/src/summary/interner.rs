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
}

#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^ (h >> 29)
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
        }
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
        let h = hash(a) ^ hash(b).rotate_left(17).wrapping_mul(0x9E37_79B9_7F4A_7C15);
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
        if self.entries.len() >= self.cap || self.arena.len() + total > u32::MAX as usize {
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
    use super::Interner;
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
    }
}
