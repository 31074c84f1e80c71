//! A small bounded reorder buffer: rows leave in time order (ties: lower priority first, then
//! file order) once they are older than the horizon behind the newest row seen, or when the
//! buffer is full. A row older than one already released is late and is handed back.
use alloc::collections::BinaryHeap;
use core::cmp::Ordering;

struct Entry<T> {
    t_ns: i64,
    prio: u8,
    seq: u64,
    item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (i64, u8, u64) {
        (self.t_ns, self.prio, self.seq)
    }
}
impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the smallest key on top.
        o.key().cmp(&self.key())
    }
}

/// The reorder buffer. Allocates its capacity once.
pub(crate) struct Reorder<T> {
    heap: BinaryHeap<Entry<T>>,
    cap: usize,
    horizon_ns: i64,
    max_seen: i64,
    last_out: Option<(i64, u8)>,
    seq: u64,
}

impl<T> Reorder<T> {
    pub(crate) fn new(cap: usize, horizon_ns: i64) -> Self {
        Reorder {
            heap: BinaryHeap::with_capacity(cap.max(1) + 1),
            cap: cap.max(1),
            horizon_ns: horizon_ns.max(0),
            max_seen: i64::MIN,
            last_out: None,
            seq: 0,
        }
    }

    /// Adds a row; `Err(item)` when it is later than the horizon (older than a released row).
    pub(crate) fn push(&mut self, t_ns: i64, prio: u8, item: T) -> Result<(), T> {
        if let Some(last) = self.last_out
            && (t_ns, prio) < last
        {
            return Err(item);
        }
        self.max_seen = self.max_seen.max(t_ns);
        self.seq += 1;
        self.heap.push(Entry {
            t_ns,
            prio,
            seq: self.seq,
            item,
        });
        Ok(())
    }

    /// Releases the next row if it is due (or every row when `flush`).
    pub(crate) fn pop(&mut self, flush: bool) -> Option<(i64, T)> {
        let due = {
            let top = self.heap.peek()?;
            flush
                || self.heap.len() > self.cap
                || top.t_ns < self.max_seen.saturating_sub(self.horizon_ns)
        };
        if !due {
            return None;
        }
        let e = self.heap.pop()?;
        self.last_out = Some((e.t_ns, e.prio));
        Some((e.t_ns, e.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

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
}
