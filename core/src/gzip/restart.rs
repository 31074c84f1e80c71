//! Restart points: places inside a gzip stream where decoding can start again without
//! inflating from the beginning (the scheme of zlib's `zran.c` example).
//!
//! A deflate stream can be entered at any block boundary given the bit position of the next
//! block and the 32 KiB of output before it (what its matches may reach back into).
//! [`GzDecoder::decode_with`](super::GzDecoder::decode_with) offers a [`RestartSink`] such a
//! point at every block boundary its inflater reports; [`RestartIndex`] keeps one every few MiB
//! of output, bounded, and [`GzDecoder::resume`](super::GzDecoder::resume) starts a decoder at one.

/// Where a decoder can start again: a deflate block boundary inside a gzip member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPoint {
    /// Compressed bytes before the point, counting the byte it falls in when `bits` is not 0:
    /// a restarted decoder is fed the compressed stream from this offset on.
    pub in_offset: u64,
    /// Bits (0..=7) of the compressed byte at `in_offset - 1` not yet read: its high `bits`
    /// bits start the next block.
    pub bits: u8,
    /// Decoded bytes before the point (over all members).
    pub out_offset: u64,
    /// Decoded bytes of the current member before the point, mod 2^32 (for its ISIZE check).
    pub member_len: u32,
    /// Members complete before the current one.
    pub members: u64,
}

/// Receives restart points while a gzip stream is decoded.
pub trait RestartSink {
    /// Whether a point at decoded offset `out_offset` is wanted; asked at every block boundary,
    /// so it should be cheap.
    fn wants(&self, out_offset: u64) -> bool;

    /// A wanted point; `inflater` gives its history ([`RawInflate::history`](super::RawInflate::history)).
    fn add<I: super::RawInflate + ?Sized>(&mut self, point: &RestartPoint, inflater: &mut I);
}

/// The sink that wants no point: plain [`GzDecoder::decode`](super::GzDecoder::decode).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRestartPoints;

impl RestartSink for NoRestartPoints {
    fn wants(&self, _: u64) -> bool {
        false
    }
    fn add<I: super::RawInflate + ?Sized>(&mut self, _: &RestartPoint, _: &mut I) {}
}

/// An optional sink: points go to it when there is one.
impl<S: RestartSink> RestartSink for Option<S> {
    fn wants(&self, out_offset: u64) -> bool {
        self.as_ref().is_some_and(|s| s.wants(out_offset))
    }
    fn add<I: super::RawInflate + ?Sized>(&mut self, point: &RestartPoint, inflater: &mut I) {
        if let Some(s) = self {
            s.add(point, inflater);
        }
    }
}

#[cfg(feature = "alloc")]
pub use index::RestartIndex;

#[cfg(feature = "alloc")]
mod index {
    use alloc::boxed::Box;
    use alloc::vec::Vec;

    use super::{RestartPoint, RestartSink};

    /// Deflate's history: a match reaches at most 32 KiB back.
    const HISTORY_BYTES: usize = 32 * 1024;

    /// A bounded index of restart points, one per `spacing` decoded bytes at most: each holds
    /// its point and its history (at most 32 KiB), so the index takes about
    /// `32 KiB / spacing` of memory per byte of output (8 MiB per GB at 4 MiB). When
    /// `max_points` are held, every other one is dropped and the spacing doubles, so memory
    /// never passes `max_points` x 32 KiB, whatever the stream's length.
    #[derive(Debug)]
    pub struct RestartIndex {
        spacing: u64,
        max_points: usize,
        points: Vec<(RestartPoint, Box<[u8]>)>,
        /// Histories of dropped points, reused by later ones.
        spare: Vec<Box<[u8]>>,
    }

    impl RestartIndex {
        /// An empty index that keeps a point at most every `spacing_bytes` of output
        /// (at least 64 KiB: closer points cost more history than they save), and at most
        /// `max_points` (at least 2) points.
        pub fn new(spacing_bytes: u64, max_points: usize) -> RestartIndex {
            RestartIndex {
                spacing: spacing_bytes.max(64 << 10),
                max_points: max_points.max(2),
                points: Vec::new(),
                spare: Vec::new(),
            }
        }

        /// The current spacing in decoded bytes (doubled each time the index filled up).
        pub fn spacing_bytes(&self) -> u64 {
            self.spacing
        }

        /// The points held, in stream order.
        pub fn len(&self) -> usize {
            self.points.len()
        }

        /// Whether no point is held.
        pub fn is_empty(&self) -> bool {
            self.points.is_empty()
        }

        /// The points held, in stream order, with their histories.
        pub fn iter(&self) -> impl Iterator<Item = (&RestartPoint, &[u8])> {
            self.points.iter().map(|(p, h)| (p, &**h))
        }

        /// Bytes of history held (the index's memory, less a few dozen bytes per point).
        pub fn history_bytes(&self) -> usize {
            self.points.iter().map(|(_, h)| h.len()).sum()
        }

        /// The last point at or before decoded offset `out_offset`, with its history.
        pub fn before(&self, out_offset: u64) -> Option<(&RestartPoint, &[u8])> {
            let n = self
                .points
                .partition_point(|(p, _)| p.out_offset <= out_offset);
            n.checked_sub(1)
                .map(|i| (&self.points[i].0, &*self.points[i].1))
        }

        /// Every other point dropped (the first kept), the spacing doubled.
        fn thin(&mut self) {
            let mut kept = Vec::with_capacity(self.points.len() / 2 + 1);
            for (i, entry) in self.points.drain(..).enumerate() {
                if i % 2 == 0 {
                    kept.push(entry);
                } else {
                    self.spare.push(entry.1);
                }
            }
            self.points = kept;
            self.spacing = self.spacing.saturating_mul(2);
        }
    }

    impl RestartSink for RestartIndex {
        fn wants(&self, out_offset: u64) -> bool {
            match self.points.last() {
                None => out_offset >= self.spacing,
                Some((p, _)) => out_offset >= p.out_offset.saturating_add(self.spacing),
            }
        }

        fn add<I: crate::gzip::RawInflate + ?Sized>(
            &mut self,
            point: &RestartPoint,
            inflater: &mut I,
        ) {
            if self.points.len() >= self.max_points {
                self.thin();
                if !self.wants(point.out_offset) {
                    return;
                }
            }
            let mut buf = self
                .spare
                .pop()
                .filter(|b| b.len() == HISTORY_BYTES)
                .unwrap_or_else(|| alloc::vec![0u8; HISTORY_BYTES].into_boxed_slice());
            let n = inflater.history(&mut buf);
            if n == 0 && point.member_len != 0 {
                // An inflater that gives no history: the point cannot be used.
                self.spare.push(buf);
                return;
            }
            let history = if n == HISTORY_BYTES {
                buf
            } else {
                // A point near a member's start: its history is shorter.
                let mut v = buf.into_vec();
                v.truncate(n);
                v.into_boxed_slice()
            };
            self.points.push((*point, history));
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::gzip::{InflateError, RawInflate};

        /// An inflater whose history is `len` bytes of `fill`.
        struct FakeHistory {
            len: usize,
            fill: u8,
        }

        impl RawInflate for FakeHistory {
            fn inflate(
                &mut self,
                _: &[u8],
                _: &mut [u8],
            ) -> Result<(bool, usize, usize), InflateError> {
                Ok((false, 0, 0))
            }
            fn reset(&mut self) {}
            fn history(&mut self, out: &mut [u8]) -> usize {
                out[..self.len].fill(self.fill);
                self.len
            }
        }

        fn point(out_offset: u64) -> RestartPoint {
            RestartPoint {
                in_offset: out_offset / 10,
                bits: 3,
                out_offset,
                member_len: out_offset as u32,
                members: 0,
            }
        }

        #[test]
        fn keeps_one_point_per_spacing_and_finds_the_one_before() {
            let mut idx = RestartIndex::new(1 << 20, 100);
            let mut inf = FakeHistory {
                len: HISTORY_BYTES,
                fill: 7,
            };
            for off in (0..20u64).map(|k| k * 300_000) {
                if idx.wants(off) {
                    idx.add(&point(off), &mut inf);
                }
            }
            let offs: Vec<u64> = idx.points.iter().map(|(p, _)| p.out_offset).collect();
            assert_eq!(offs, [1_200_000, 2_400_000, 3_600_000, 4_800_000]);
            assert!(idx.before(1_199_999).is_none());
            assert_eq!(idx.before(1_200_000).unwrap().0.out_offset, 1_200_000);
            assert_eq!(idx.before(3_599_999).unwrap().0.out_offset, 2_400_000);
            assert_eq!(idx.before(u64::MAX).unwrap().0.out_offset, 4_800_000);
            assert!(idx.before(4_800_000).unwrap().1.iter().all(|&b| b == 7));
            assert_eq!(idx.history_bytes(), 4 * HISTORY_BYTES);
        }

        #[test]
        fn stays_bounded_by_thinning_and_doubling_the_spacing() {
            let mut idx = RestartIndex::new(64 << 10, 8);
            let mut inf = FakeHistory {
                len: HISTORY_BYTES,
                fill: 1,
            };
            for k in 0..10_000u64 {
                let off = k * (64 << 10);
                if idx.wants(off) {
                    idx.add(&point(off), &mut inf);
                }
                assert!(idx.len() <= 8);
            }
            assert!(idx.spacing_bytes() > 64 << 10);
            // Points stay in order and at least a spacing apart (the spacing at their time).
            let offs: Vec<u64> = idx.points.iter().map(|(p, _)| p.out_offset).collect();
            assert!(offs.windows(2).all(|w| w[0] < w[1]), "{offs:?}");
            assert!(idx.len() >= 4, "{offs:?}");
        }

        #[test]
        fn a_short_history_is_kept_at_its_length() {
            let mut idx = RestartIndex::new(64 << 10, 8);
            let mut inf = FakeHistory { len: 1000, fill: 9 };
            idx.add(&point(1 << 20), &mut inf);
            assert_eq!(idx.before(1 << 20).unwrap().1, &[9u8; 1000][..]);
        }
    }
}
