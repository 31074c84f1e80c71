//! A small bounded reorder buffer: rows leave in time order (ties: lower priority first, then
//! file order) once they are older than the horizon behind the newest row seen, or when the
//! buffer is full. A row older than one already released is late and is handed back.
//!
//! Rows nearly always arrive in order, so the buffer is a ring kept sorted by insertion from the
//! back: O(1) per row in order, O(distance) for the rare early row. The ring is a growable
//! `VecDeque` with `alloc`, or a [`FixedRing`] of a size fixed at compile time.
#[cfg(feature = "alloc")]
use alloc::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry<T> {
    key: (i64, u8),
    item: T,
}

impl<T> Entry<T> {
    pub(crate) const fn new(key: (i64, u8), item: T) -> Self {
        Entry { key, item }
    }
}

/// The ring operations the buffer uses.
pub(crate) trait Ring<E> {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> Option<&E>;
    /// Inserts at `i` (≤ len); `Err(e)` when there is no room.
    fn insert(&mut self, i: usize, e: E) -> Result<(), E>;
    fn pop_front(&mut self) -> Option<E>;
    fn clear(&mut self);
}

impl<E, R: Ring<E>> Ring<E> for &mut R {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, i: usize) -> Option<&E> {
        (**self).get(i)
    }
    fn insert(&mut self, i: usize, e: E) -> Result<(), E> {
        (**self).insert(i, e)
    }
    fn pop_front(&mut self) -> Option<E> {
        (**self).pop_front()
    }
    fn clear(&mut self) {
        (**self).clear()
    }
}

#[cfg(feature = "alloc")]
impl<E> Ring<E> for VecDeque<E> {
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
    fn get(&self, i: usize) -> Option<&E> {
        VecDeque::get(self, i)
    }
    fn insert(&mut self, i: usize, e: E) -> Result<(), E> {
        if i == VecDeque::len(self) {
            self.push_back(e);
        } else {
            VecDeque::insert(self, i, e);
        }
        Ok(())
    }
    fn pop_front(&mut self) -> Option<E> {
        VecDeque::pop_front(self)
    }
    fn clear(&mut self) {
        VecDeque::clear(self)
    }
}

/// A ring of `N` entries in place (no allocation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedRing<E, const N: usize> {
    buf: [E; N],
    head: usize,
    len: usize,
}

impl<E: Copy, const N: usize> FixedRing<E, N> {
    /// An empty ring; `fill` only initializes the unused slots.
    pub(crate) const fn new(fill: E) -> Self {
        FixedRing {
            buf: [fill; N],
            head: 0,
            len: 0,
        }
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        (self.head + i) % N
    }
}

impl<E: Copy, const N: usize> Ring<E> for FixedRing<E, N> {
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, i: usize) -> Option<&E> {
        (i < self.len).then(|| &self.buf[self.at(i)])
    }
    fn insert(&mut self, i: usize, e: E) -> Result<(), E> {
        if self.len == N || i > self.len {
            return Err(e);
        }
        let mut j = self.len;
        while j > i {
            self.buf[self.at(j)] = self.buf[self.at(j - 1)];
            j -= 1;
        }
        let k = self.at(i);
        self.buf[k] = e;
        self.len += 1;
        Ok(())
    }
    fn pop_front(&mut self) -> Option<E> {
        if self.len == 0 {
            return None;
        }
        let e = self.buf[self.head];
        self.head = (self.head + 1) % N;
        self.len -= 1;
        Some(e)
    }
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}

/// Rows the ring holds before it first grows (a 2 s horizon at 100 Hz on two GPUs is 400).
#[cfg(feature = "alloc")]
const INITIAL_ROWS: usize = 1024;

/// The reorder buffer over ring `B`. With a `VecDeque` it allocates room for up to
/// [`INITIAL_ROWS`] rows at once and grows (by doubling, up to its capacity) only when more rows
/// fall within the horizon: memory follows the rows held, not the capacity (64 Ki rows by
/// default: 8 MiB), and a steady stream of rows allocates nothing once the ring has grown to its
/// working size.
pub(crate) struct Reorder<T, B> {
    buf: B,
    cap: usize,
    horizon_ns: i64,
    max_seen: i64,
    last_out: Option<(i64, u8)>,
    /// Rows released only because the buffer was full.
    early: u64,
    _item: core::marker::PhantomData<T>,
}

/// A reorder buffer in a ring of `N` entries (no allocation).
#[cfg(test)]
pub(crate) type FixedReorder<T, const N: usize> = Reorder<T, FixedRing<Entry<T>, N>>;

/// The growable reorder buffer.
#[cfg(feature = "alloc")]
pub(crate) type GrowReorder<T> = Reorder<T, VecDeque<Entry<T>>>;

#[cfg(feature = "alloc")]
impl<T> GrowReorder<T> {
    pub(crate) fn new(cap: usize, horizon_ns: i64) -> Self {
        Reorder::with_ring(
            VecDeque::with_capacity(cap.clamp(1, INITIAL_ROWS) + 1),
            cap,
            horizon_ns,
        )
    }
}

#[cfg(test)]
impl<T: Copy, const N: usize> Reorder<T, FixedRing<Entry<T>, N>> {
    /// A buffer in a ring of `N` entries: it releases rows once `N - 1` are held.
    pub(crate) fn fixed(fill: T, horizon_ns: i64) -> Self {
        Reorder::with_ring(
            FixedRing::new(Entry {
                key: (0, 0),
                item: fill,
            }),
            N - 1,
            horizon_ns,
        )
    }
}

impl<T, B: Ring<Entry<T>>> Reorder<T, B> {
    /// A buffer over `buf` (emptied) that releases rows once more than `cap` are held.
    pub(crate) fn with_ring(mut buf: B, cap: usize, horizon_ns: i64) -> Self {
        buf.clear();
        Reorder {
            buf,
            cap: cap.max(1),
            horizon_ns: horizon_ns.max(0),
            max_seen: i64::MIN,
            last_out: None,
            early: 0,
            _item: core::marker::PhantomData,
        }
    }

    /// Back to empty, as new, with `horizon_ns`.
    pub(crate) fn clear(&mut self, horizon_ns: i64) {
        self.buf.clear();
        self.horizon_ns = horizon_ns.max(0);
        self.max_seen = i64::MIN;
        self.last_out = None;
        self.early = 0;
    }

    /// Adds a row; `Err(item)` when it is later than the horizon (older than a released row),
    /// or, in a fixed ring, when there is no room (not when every push is followed by `pop`s
    /// until `None`: the ring keeps one entry spare).
    pub(crate) fn push(&mut self, t_ns: i64, prio: u8, item: T) -> Result<(), T> {
        let key = (t_ns, prio);
        if let Some(last) = self.last_out
            && key < last
        {
            return Err(item);
        }
        // Equal keys keep file order: insert after them.
        let mut at = self.buf.len();
        while at > 0 && self.buf.get(at - 1).is_some_and(|e| e.key > key) {
            at -= 1;
        }
        self.buf
            .insert(at, Entry { key, item })
            .map_err(|e| e.item)?;
        self.max_seen = self.max_seen.max(t_ns);
        Ok(())
    }

    /// Releases the next row if it is due (or every row when `flush`).
    pub(crate) fn pop(&mut self, flush: bool) -> Option<(i64, T)> {
        let (due, full) = {
            let top = self.buf.get(0)?;
            let full = self.buf.len() > self.cap;
            let old = top.key.0 < self.max_seen.saturating_sub(self.horizon_ns);
            (flush || full || old, full && !flush && !old)
        };
        if !due {
            return None;
        }
        self.early += u64::from(full);
        let e = self.buf.pop_front()?;
        self.last_out = Some(e.key);
        Some((e.key.0, e.item))
    }

    /// Rows released only because the buffer was full (before their horizon).
    pub(crate) fn released_early(&self) -> u64 {
        self.early
    }

    /// Rows held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

    /// The fixed ring releases exactly what a growable ring of the same capacity releases,
    /// rows late to both alike.
    #[test]
    fn fixed_ring_releases_as_the_growable_one() {
        let mut rng = Rng::from_env(5);
        for _ in 0..50 {
            let horizon = rng.below(60) as i64;
            let mut fixed: FixedReorder<(i64, u32), 9> = Reorder::fixed((0, 0), horizon);
            let mut grow: GrowReorder<(i64, u32)> = Reorder::new(8, horizon);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for i in 0..400u32 {
                let t = i as i64 + rng.below(50) as i64 - 25;
                let p = rng.below(2) as u8;
                assert_eq!(
                    fixed.push(t, p, (t, i)).is_ok(),
                    grow.push(t, p, (t, i)).is_ok()
                );
                while let Some(x) = fixed.pop(false) {
                    a.push(x);
                }
                while let Some(x) = grow.pop(false) {
                    b.push(x);
                }
                assert!(fixed.len() <= 8);
            }
            while let Some(x) = fixed.pop(true) {
                a.push(x);
            }
            while let Some(x) = grow.pop(true) {
                b.push(x);
            }
            assert_eq!(a, b);
        }
    }

    #[test]
    fn releases_in_order_within_horizon_and_rejects_late() {
        let mut rng = Rng::from_env(3);
        for _ in 0..50 {
            let mut r = Reorder::new(1 + rng.below(20) as usize, rng.below(50) as i64);
            let mut out = Vec::new();
            let mut late = 0;
            let mut accepted = Vec::new();
            for i in 0..300u32 {
                let t = i as i64 + rng.below(40) as i64 - 20;
                let p = rng.below(2) as u8;
                match r.push(t, p, (t, p, i)) {
                    Ok(()) => accepted.push((t, p, i)),
                    Err(_) => late += 1,
                }
                while let Some((_, x)) = r.pop(false) {
                    out.push(x);
                }
            }
            while let Some((_, x)) = r.pop(true) {
                out.push(x);
            }
            // Everything accepted comes out, in (t, prio, file order) order.
            assert_eq!(out.len() + late, 300);
            let mut want = accepted.clone();
            want.sort();
            assert_eq!(out, want);
        }
    }

    /// Past its first allocation the ring grows, up to its capacity, and still releases in
    /// order; beyond the capacity the oldest rows leave as before.
    #[test]
    fn grows_past_its_first_allocation_up_to_capacity() {
        let mut rng = Rng::from_env(11);
        let cap = 3 * INITIAL_ROWS;
        let mut r = Reorder::new(cap, i64::MAX);
        let mut out = Vec::new();
        let mut accepted = Vec::new();
        for i in 0..(4 * INITIAL_ROWS) as u32 {
            let t = rng.below(1_000_000) as i64;
            if r.push(t, 0, (t, i)).is_ok() {
                accepted.push((t, i));
            }
            while let Some((_, x)) = r.pop(false) {
                out.push(x);
            }
            assert!(r.len() <= cap);
        }
        assert_eq!(
            out.len(),
            accepted.len() - cap,
            "only rows past the capacity left early"
        );
        while let Some((_, x)) = r.pop(true) {
            out.push(x);
        }
        assert_eq!(out.len(), accepted.len());
        assert!(
            out.windows(2).all(|w| w[0] <= w[1]),
            "released in (t, file) order"
        );
    }
}
