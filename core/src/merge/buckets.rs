//! A histogram's `[index, count]` pairs in compact form: a byte string of LEB128 varints, per
//! pair the zigzag of the index's difference from the previous pair's (from 0 for the first),
//! then the count.
//!
//! A trace names tens of thousands of ops and the mergeable section holds every op's histogram
//! from the summary's end to its output (and a merge holds the merged ones): adjacent buckets
//! and small counts take 2 bytes a pair here, against 16 as `(i32, u64)`. Any sequence of pairs
//! is held as given (decreasing indexes and zero counts too), so that the section's checks see
//! and name what an input holds; the encoding is one-to-one, so equal byte strings are equal
//! sequences.
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[index, count]` pairs, in the order given.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Buckets {
    bytes: Box<[u8]>,
}

impl Buckets {
    /// The pairs, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rest: &self.bytes,
            index: 0,
        }
    }

    /// How many pairs (counted by reading them).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there is no pair.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.len()
    }
}

impl FromIterator<(i32, u64)> for Buckets {
    fn from_iter<I: IntoIterator<Item = (i32, u64)>>(pairs: I) -> Buckets {
        let mut w = BucketWriter::new();
        pairs.into_iter().for_each(|(i, c)| w.push(i, c));
        w.finish()
    }
}

/// Appends pairs to a [`Buckets`].
#[derive(Debug, Default)]
pub struct BucketWriter {
    bytes: Vec<u8>,
    index: i32,
}

impl BucketWriter {
    /// An empty writer.
    pub fn new() -> BucketWriter {
        BucketWriter::default()
    }

    /// Appends one pair.
    pub fn push(&mut self, index: i32, count: u64) {
        let delta = i64::from(index) - i64::from(self.index);
        put_varint(&mut self.bytes, ((delta << 1) ^ (delta >> 63)) as u64);
        put_varint(&mut self.bytes, count);
        self.index = index;
    }

    /// The pairs written, holding no spare capacity (a section holds one per op).
    pub fn finish(self) -> Buckets {
        Buckets {
            bytes: self.bytes.into_boxed_slice(),
        }
    }
}

/// Adds counts to a [`BucketWriter`] in increasing index order, counts of one index in a row
/// added into one pair.
#[derive(Debug, Default)]
pub struct BucketSummer {
    writer: BucketWriter,
    pending: Option<(i32, u64)>,
}

impl BucketSummer {
    /// Adds `count` at `index` (at least the last index added); `None` when the sum of one
    /// index's counts overflows.
    pub fn add(&mut self, index: i32, count: u64) -> Option<()> {
        match &mut self.pending {
            Some((i, c)) if *i == index => *c = c.checked_add(count)?,
            pending => {
                if let Some((i, c)) = pending.replace((index, count)) {
                    self.writer.push(i, c);
                }
            }
        }
        Some(())
    }

    /// The pairs added.
    pub fn finish(mut self) -> Buckets {
        if let Some((i, c)) = self.pending.take() {
            self.writer.push(i, c);
        }
        self.writer.finish()
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one varint from the front of `rest`; the bytes are always a writer's.
fn take_varint(rest: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some((&b, tail)) = rest.split_first() {
        *rest = tail;
        v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// The pairs of a [`Buckets`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    rest: &'a [u8],
    index: i32,
}

impl Iterator for Iter<'_> {
    type Item = (i32, u64);

    fn next(&mut self) -> Option<(i32, u64)> {
        if self.rest.is_empty() {
            return None;
        }
        let z = take_varint(&mut self.rest);
        let delta = (z >> 1) as i64 ^ -((z & 1) as i64);
        // The writer took the difference of two i32: the sum is one again.
        self.index = (i64::from(self.index) + delta) as i32;
        let count = take_varint(&mut self.rest);
        Some((self.index, count))
    }
}

impl<'a> IntoIterator for &'a Buckets {
    type Item = (i32, u64);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl fmt::Debug for Buckets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// As the list of pairs.
impl Ord for Buckets {
    fn cmp(&self, other: &Buckets) -> Ordering {
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for Buckets {
    fn partial_cmp(&self, other: &Buckets) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// As a list of `[index, count]` arrays.
impl Serialize for Buckets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Buckets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Buckets, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Buckets;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Buckets, A::Error> {
                let mut w = BucketWriter::new();
                while let Some((i, c)) = seq.next_element::<(i32, u64)>()? {
                    w.push(i, c);
                }
                Ok(w.finish())
            }
        }
        d.deserialize_seq(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_back_as_given() {
        let pairs: Vec<(i32, u64)> = alloc::vec![
            (-1, 1),
            (0, 0),
            (i32::MAX, u64::MAX),
            (i32::MIN, 127),
            (5, 128),
            (5, 3),
            (6, 1),
        ];
        let b: Buckets = pairs.iter().copied().collect();
        assert_eq!(b.iter().collect::<Vec<_>>(), pairs);
        assert_eq!(b.len(), pairs.len());
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(json, serde_json::to_string(&pairs).unwrap());
        let back: Buckets = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b);
        assert!(Buckets::default().is_empty());
    }

    #[test]
    fn adjacent_small_buckets_take_two_bytes_a_pair() {
        let b: Buckets = (4000..5000).map(|i| (i, 100)).collect();
        assert_eq!(b.heap_bytes(), 2 + 2 * 999 + 1);
    }

    #[test]
    fn ordered_as_the_pairs() {
        let a: Buckets = [(1, 5), (300, 1)].into_iter().collect();
        let b: Buckets = [(2, 1)].into_iter().collect();
        let c: Buckets = [(1, 5), (300, 2)].into_iter().collect();
        assert!(a < b && a < c && c < b);
    }

    #[test]
    fn a_summer_adds_equal_indexes() {
        let mut s = BucketSummer::default();
        for (i, c) in [(3, 1), (3, 2), (4, 1), (9, 0), (9, 5)] {
            s.add(i, c).unwrap();
        }
        let got: Vec<_> = s.finish().iter().collect();
        assert_eq!(got, [(3, 3), (4, 1), (9, 5)]);
        let mut s = BucketSummer::default();
        s.add(1, u64::MAX).unwrap();
        assert_eq!(s.add(1, 1), None);
    }
}
