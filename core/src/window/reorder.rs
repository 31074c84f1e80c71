//! A small bounded reorder buffer: rows leave in time order (ties: lower priority first, then
//! file order) once they are older than the horizon behind the newest row seen, or when the
//! buffer is full. A row older than one already released is late and is handed back.
//!
//! Rows nearly always arrive in order, so the buffer is a ring (`VecDeque`) kept sorted by
//! insertion from the back: O(1) per row in order, O(distance) for the rare early row.
use alloc::collections::VecDeque;

struct Entry<T> {
    key: (i64, u8),
    item: T,
}

/// Rows the ring holds before it first grows (a 2 s horizon at 100 Hz on two GPUs is 400).
const INITIAL_ROWS: usize = 1024;

/// The reorder buffer. Allocates room for up to [`INITIAL_ROWS`] rows at once and grows (by
/// doubling, up to its capacity) only when more rows fall within the horizon: memory follows
/// the rows held, not the capacity (64 Ki rows by default: 8 MiB), and a steady stream of rows
/// allocates nothing once the ring has grown to its working size.
pub(crate) struct Reorder<T> {
    buf: VecDeque<Entry<T>>,
    cap: usize,
    horizon_ns: i64,
    max_seen: i64,
    last_out: Option<(i64, u8)>,
}

impl<T> Reorder<T> {
    pub(crate) fn new(cap: usize, horizon_ns: i64) -> Self {
        Reorder {
            buf: VecDeque::with_capacity(cap.clamp(1, INITIAL_ROWS) + 1),
            cap: cap.max(1),
            horizon_ns: horizon_ns.max(0),
            max_seen: i64::MIN,
            last_out: None,
        }
    }

    /// Adds a row; `Err(item)` when it is later than the horizon (older than a released row).
    pub(crate) fn push(&mut self, t_ns: i64, prio: u8, item: T) -> Result<(), T> {
        let key = (t_ns, prio);
        if let Some(last) = self.last_out
            && key < last
        {
            return Err(item);
        }
        self.max_seen = self.max_seen.max(t_ns);
        // Equal keys keep file order: insert after them.
        let mut at = self.buf.len();
        while at > 0 && self.buf[at - 1].key > key {
            at -= 1;
        }
        if at == self.buf.len() {
            self.buf.push_back(Entry { key, item });
        } else {
            self.buf.insert(at, Entry { key, item });
        }
        Ok(())
    }

    /// Releases the next row if it is due (or every row when `flush`).
    pub(crate) fn pop(&mut self, flush: bool) -> Option<(i64, T)> {
        let due = {
            let top = self.buf.front()?;
            flush
                || self.buf.len() > self.cap
                || top.key.0 < self.max_seen.saturating_sub(self.horizon_ns)
        };
        if !due {
            return None;
        }
        let e = self.buf.pop_front()?;
        self.last_out = Some(e.key);
        Some((e.key.0, e.item))
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
            assert!(r.buf.len() <= cap);
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
