//! Union of half-open `[start_ns, end_ns)` integer intervals: exact, or bounded with an error
//! bound.
//!
//! Empty and inverted intervals (`end_ns <= start_ns`) are ignored, as the reference's
//! `if stop <= start: continue`. Overlapping or touching intervals count once.
//!
//! # Forms
//! - [`IntervalUnion::exact()`] (`alloc`): grows as needed; `error_bound_ns()` is always 0.
//! - [`IntervalUnion::bounded(capacity)`] (`alloc`): allocates `capacity` slots once, never more.
//! - [`IntervalUnion::bounded_growing(capacity)`] (`alloc`): the same results, with storage that
//!   doubles as needed up to `capacity` (what [`IntervalUnion::with_capacity_limit`] uses, so that
//!   many small unions under a large limit stay small).
//! - [`IntervalUnionSlice`] over a caller's `&mut [Interval]`, and [`IntervalUnionArray<N>`]
//!   over an inline array: bounded, no allocator needed.
//!
//! # How it works
//! The union is kept as a sorted set of disjoint, non-touching intervals. An interval that starts
//! at or after the last one's start (the common case for time-ordered traces such as Kineto's)
//! extends the last interval or is appended in O(1). Any other interval goes to a small unsorted
//! pending batch; when the batch is full it is sorted, coalesced and merged into the set in one
//! backward pass. Any input order is handled correctly.
//!
//! # Bounded mode and its error bound
//! A bounded form splits its slots into the set (7/8) and the pending batch (1/8, at least 1, at
//! most 4096). When the set is full it coalesces the smallest gaps between neighbouring intervals
//! (freeing an eighth of the set at a time, so the cost is amortized) and adds each filled gap's
//! length to [`error_bound_ns`](IntervalSet::error_bound_ns). Coalescing only ever adds time, so
//! the true union lies in `[union_ns - error_bound_ns, union_ns]`. Capacities below 4 slots are
//! raised to 4 (the set needs at least 3 slots so that coalescing frees one).
//!
//! # Example
//! ```
//! use flinch_core::intervals::{IntervalUnion, IntervalUnionArray};
//!
//! let mut exact = IntervalUnion::exact();
//! for (start_ns, end_ns) in [(0, 10), (5, 20), (30, 40), (25, 31), (50, 50)] {
//!     exact.insert(start_ns, end_ns);
//! }
//! assert_eq!(exact.union_ns(), 35); // [0, 20) + [25, 40); the empty [50, 50) is ignored
//! assert_eq!(exact.error_bound_ns(), 0);
//!
//! // No allocator: 8 slots inline (7 for the set, 1 pending).
//! let mut bounded = IntervalUnionArray::<8>::new();
//! for k in 0..100 {
//!     bounded.insert(k * 10, k * 10 + 4);
//! }
//! let (union_ns, bound_ns) = (bounded.union_ns(), bounded.error_bound_ns());
//! assert!(union_ns - bound_ns <= 400 && 400 <= union_ns);
//! ```

/// One half-open interval `[start_ns, end_ns)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    /// Inclusive start.
    pub start_ns: i64,
    /// Exclusive end.
    pub end_ns: i64,
}

impl Interval {
    /// Length in ns (0 when empty or inverted).
    pub fn len_ns(self) -> u64 {
        if self.end_ns > self.start_ns {
            self.end_ns.wrapping_sub(self.start_ns) as u64
        } else {
            0
        }
    }
}

/// Storage behind an [`IntervalSet`]: slots for the sorted set and for the pending batch.
/// Implemented for a growable or fixed `Vec` (alloc), a caller's slice, and an inline array.
pub trait IntervalStorage {
    /// The set slots and the pending slots, disjoint.
    fn split(&mut self) -> (&mut [Interval], &mut [Interval]);
    /// Read-only view of the set slots.
    fn set_slots(&self) -> &[Interval];
    /// The most set slots this storage will ever hold (`usize::MAX`: no limit).
    fn set_limit(&self) -> usize;
    /// Makes room for at least `set_len` set slots and `pending_len` pending slots, returning
    /// false when the storage is fixed and too small. Called only in growable storage's favour.
    fn grow(&mut self, set_len: usize, pending_len: usize) -> bool;
}

/// Sizes of the set and pending parts for `total` fixed slots (total >= 4).
fn split_sizes(total: usize) -> (usize, usize) {
    let pending = (total / 8).clamp(1, 4096);
    (total - pending, pending)
}

/// Slots in a caller-provided slice (bounded, no allocation).
#[derive(Debug)]
pub struct SliceStorage<'a> {
    set: &'a mut [Interval],
    pending: &'a mut [Interval],
}

impl IntervalStorage for SliceStorage<'_> {
    fn split(&mut self) -> (&mut [Interval], &mut [Interval]) {
        (self.set, self.pending)
    }
    fn set_slots(&self) -> &[Interval] {
        self.set
    }
    fn set_limit(&self) -> usize {
        self.set.len()
    }
    fn grow(&mut self, set_len: usize, pending_len: usize) -> bool {
        set_len <= self.set.len() && pending_len <= self.pending.len()
    }
}

/// Slots in an inline array of `N` intervals (bounded, no allocation).
#[derive(Debug)]
pub struct ArrayStorage<const N: usize> {
    slots: [Interval; N],
}

impl<const N: usize> IntervalStorage for ArrayStorage<N> {
    fn split(&mut self) -> (&mut [Interval], &mut [Interval]) {
        let (set, _) = split_sizes(N);
        self.slots.split_at_mut(set)
    }
    fn set_slots(&self) -> &[Interval] {
        &self.slots[..split_sizes(N).0]
    }
    fn set_limit(&self) -> usize {
        split_sizes(N).0
    }
    fn grow(&mut self, set_len: usize, pending_len: usize) -> bool {
        let (s, p) = split_sizes(N);
        set_len <= s && pending_len <= p
    }
}

/// Slots in two vectors: growable without limit (exact), or up to fixed limits (bounded,
/// allocated at once or grown geometrically).
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct VecStorage {
    set: alloc::vec::Vec<Interval>,
    pending: alloc::vec::Vec<Interval>,
    set_limit: usize,
    pending_limit: usize,
}

#[cfg(feature = "alloc")]
impl IntervalStorage for VecStorage {
    fn split(&mut self) -> (&mut [Interval], &mut [Interval]) {
        (&mut self.set, &mut self.pending)
    }
    fn set_slots(&self) -> &[Interval] {
        &self.set
    }
    fn set_limit(&self) -> usize {
        self.set_limit
    }
    #[inline]
    fn grow(&mut self, set_len: usize, pending_len: usize) -> bool {
        if set_len <= self.set.len() && pending_len <= self.pending.len() {
            return true;
        }
        self.grow_slow(set_len, pending_len)
    }
}

#[cfg(feature = "alloc")]
impl VecStorage {
    #[inline(never)]
    fn grow_slow(&mut self, set_len: usize, pending_len: usize) -> bool {
        if set_len > self.set_limit || pending_len > self.pending_limit {
            return false;
        }
        if set_len > self.set.len() {
            let n = set_len.max(self.set.len() * 2).max(64).min(self.set_limit);
            self.set.resize(n, Interval::default());
        }
        if pending_len > self.pending.len() {
            let n = pending_len
                .max(self.pending.len() * 2)
                .max(64)
                .min(self.pending_limit);
            self.pending.resize(n, Interval::default());
        }
        true
    }
}

/// The interval union over some [`IntervalStorage`]. Use the aliases [`IntervalUnion`] (alloc),
/// [`IntervalUnionSlice`] and [`IntervalUnionArray`].
#[derive(Debug)]
pub struct IntervalSet<S: IntervalStorage> {
    storage: S,
    set_len: usize,
    pending_len: usize,
    /// Sum of the set's lengths (pending excluded).
    set_total_ns: u64,
    error_bound_ns: u64,
    exact: bool,
}

/// Interval union over vectors: [`exact`](IntervalUnion::exact) or
/// [`bounded`](IntervalUnion::bounded).
#[cfg(feature = "alloc")]
pub type IntervalUnion = IntervalSet<VecStorage>;

/// Bounded interval union over a caller-provided slice; no allocation.
pub type IntervalUnionSlice<'a> = IntervalSet<SliceStorage<'a>>;

/// Bounded interval union over an inline array of `N` slots (`N >= 4`); no allocation.
pub type IntervalUnionArray<const N: usize> = IntervalSet<ArrayStorage<N>>;

#[cfg(feature = "alloc")]
impl IntervalSet<VecStorage> {
    /// Exact union: storage grows with the number of disjoint intervals; the error bound is 0.
    pub fn exact() -> IntervalUnion {
        IntervalSet::with_storage(
            VecStorage {
                set: alloc::vec::Vec::new(),
                pending: alloc::vec::Vec::new(),
                set_limit: usize::MAX,
                pending_limit: usize::MAX,
            },
            true,
        )
    }

    /// Bounded union in `capacity` slots (at least 4) allocated once here; see the module docs
    /// for the error bound.
    pub fn bounded(capacity: usize) -> IntervalUnion {
        let (set, pending) = split_sizes(capacity.max(4));
        IntervalSet::with_storage(
            VecStorage {
                set: alloc::vec![Interval::default(); set],
                pending: alloc::vec![Interval::default(); pending],
                set_limit: set,
                pending_limit: pending,
            },
            false,
        )
    }

    /// Bounded union of at most `capacity` slots (at least 4) that starts small and grows
    /// geometrically up to the capacity (a few allocations, never one per interval). Gives
    /// exactly the results of [`bounded`](Self::bounded) with memory in proportion to use.
    pub fn bounded_growing(capacity: usize) -> IntervalUnion {
        let (set, pending) = split_sizes(capacity.max(4));
        IntervalSet::with_storage(
            VecStorage {
                set: alloc::vec::Vec::new(),
                pending: alloc::vec::Vec::new(),
                set_limit: set,
                pending_limit: pending,
            },
            false,
        )
    }

    /// Gives back set storage when it is more than three times the disjoint intervals in use
    /// (and over 96 slots), down to twice that (at least 64 slots), e.g. after
    /// [`remove_first`](Self::remove_first): memory then follows what is live, within a
    /// factor of three. A union that keeps losing its older half and growing back (a busy
    /// union at its budget) mostly keeps its storage, rather than giving it back and faulting
    /// it in again each time. The results are unchanged (the storage grows again as needed,
    /// within the same limits).
    pub fn shrink_storage(&mut self) {
        let keep = self.set_len.saturating_mul(2).max(64);
        if self.storage.set.len() / 3 > self.set_len.max(32) {
            self.storage.set.truncate(keep);
            self.storage.set.shrink_to_fit();
        }
    }

    /// Exact when `capacity == usize::MAX` (as [`crate::Limits::max_intervals`] says), else
    /// [`bounded_growing`](Self::bounded_growing) to `capacity` slots.
    pub fn with_capacity_limit(capacity: usize) -> IntervalUnion {
        if capacity == usize::MAX {
            IntervalSet::exact()
        } else {
            IntervalSet::bounded_growing(capacity)
        }
    }
}

impl<'a> IntervalSet<SliceStorage<'a>> {
    /// Bounded union using `slots` as its only memory. Returns `None` when `slots.len() < 4`.
    pub fn new(slots: &'a mut [Interval]) -> Option<IntervalUnionSlice<'a>> {
        if slots.len() < 4 {
            return None;
        }
        let (set, _) = split_sizes(slots.len());
        let (set, pending) = slots.split_at_mut(set);
        Some(IntervalSet::with_storage(
            SliceStorage { set, pending },
            false,
        ))
    }
}

impl<const N: usize> IntervalSet<ArrayStorage<N>> {
    /// Bounded union in an inline array of `N` slots.
    ///
    /// # Panics
    /// At compile time (const evaluation) when `N < 4`.
    pub fn new() -> IntervalUnionArray<N> {
        const { assert!(N >= 4, "IntervalUnionArray needs at least 4 slots") };
        IntervalSet::with_storage(
            ArrayStorage {
                slots: [Interval::default(); N],
            },
            false,
        )
    }
}

impl<const N: usize> Default for IntervalSet<ArrayStorage<N>> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: IntervalStorage> IntervalSet<S> {
    fn with_storage(storage: S, exact: bool) -> Self {
        IntervalSet {
            storage,
            set_len: 0,
            pending_len: 0,
            set_total_ns: 0,
            error_bound_ns: 0,
            exact,
        }
    }

    /// Adds `[start_ns, end_ns)`; ignored when `end_ns <= start_ns`. Never allocates in the
    /// bounded forms; amortized O(1) for time-ordered input.
    pub fn insert(&mut self, start_ns: i64, end_ns: i64) {
        if end_ns <= start_ns {
            return;
        }
        let iv = Interval { start_ns, end_ns };
        if self.set_len > 0 {
            let last_index = self.set_len - 1;
            let (set, _) = self.storage.split();
            let last = &mut set[last_index];
            if start_ns >= last.start_ns {
                if start_ns <= last.end_ns {
                    if end_ns > last.end_ns {
                        self.set_total_ns += end_ns.wrapping_sub(last.end_ns) as u64;
                        last.end_ns = end_ns;
                    }
                    return;
                }
                self.append(iv);
                return;
            }
        } else if self.pending_len == 0 {
            self.append(iv);
            return;
        }
        self.add_pending(iv);
    }

    fn append(&mut self, iv: Interval) {
        if !self.storage.grow(self.set_len + 1, 0) {
            let cap = self.set_capacity();
            self.coalesce_to(cap - (cap / 8).max(1));
            let grown = self.storage.grow(self.set_len + 1, 0);
            debug_assert!(grown);
        }
        let (set, _) = self.storage.split();
        set[self.set_len] = iv;
        self.set_len += 1;
        self.set_total_ns += iv.len_ns();
    }

    fn add_pending(&mut self, iv: Interval) {
        if self.exact {
            let threshold = (self.set_len / 4).max(1024);
            if self.pending_len >= threshold {
                self.flush();
            }
        }
        if !self.storage.grow(0, self.pending_len + 1) {
            self.flush();
            let grown = self.storage.grow(0, 1);
            debug_assert!(grown);
        }
        let (_, pending) = self.storage.split();
        pending[self.pending_len] = iv;
        self.pending_len += 1;
    }

    /// The set's slot limit (not its current allocation, for the growing form).
    fn set_capacity(&self) -> usize {
        self.storage.set_limit()
    }

    /// Sorts and merges the pending batch into the set.
    fn flush(&mut self) {
        if self.pending_len == 0 {
            return;
        }
        // Sort and coalesce the batch in place.
        let (_, pending) = self.storage.split();
        let batch = &mut pending[..self.pending_len];
        batch.sort_unstable_by_key(|iv| iv.start_ns);
        let mut p = 0;
        for i in 1..batch.len() {
            if batch[i].start_ns <= batch[p].end_ns {
                batch[p].end_ns = batch[p].end_ns.max(batch[i].end_ns);
            } else {
                p += 1;
                batch[p] = batch[i];
            }
        }
        let p = p + 1;
        self.pending_len = 0;
        // Make room for the merge output (at most set_len + p intervals).
        if !self.storage.grow(self.set_len + p, 0) {
            let cap = self.set_capacity();
            let target = (cap - p).min(cap - (cap / 8).max(1));
            self.coalesce_to(target.max(1));
            let grown = self.storage.grow(self.set_len + p, 0);
            debug_assert!(grown);
        }
        // Backward merge by end, galloping over the set: the batch (p intervals) is read from
        // p - 1 down; for each batch interval, the set's intervals that end at or after it
        // (found by binary search) come first, and of those only the ones that meet the
        // interval being built (`cur`) are read one by one: the others move as one block (a
        // memmove), since set intervals never touch each other. Output is written from
        // set_len + p - 1 down; the write index never falls below the unread set index (it
        // stays at least i + j, plus one while `cur` is held), so no unread interval is
        // overwritten. Set intervals below the lowest batch interval's reach stay in place.
        let (set, pending) = self.storage.split();
        let mut i = self.set_len;
        let mut j = p;
        let mut w = self.set_len + p;
        let mut cur: Option<Interval> = None;
        // Lengths of the set intervals read one by one, and of the intervals written one by
        // one (blocks keep their lengths): set_total_ns follows from them.
        let mut removed_ns: u64 = 0;
        let mut added_ns: u64 = 0;
        loop {
            // The set intervals that come before the next batch interval (all, when none is
            // left): those ending at or after its end (taking the set's first on a tie).
            let k = match j {
                0 => 0,
                _ => {
                    let end = pending[j - 1].end_ns;
                    set[..i].partition_point(|iv| iv.end_ns < end)
                }
            };
            // The highest of them may meet `cur`: merge while they do.
            if let Some(c) = cur.as_mut() {
                while i > k && set[i - 1].end_ns >= c.start_ns {
                    i -= 1;
                    removed_ns += set[i].len_ns();
                    c.start_ns = c.start_ns.min(set[i].start_ns);
                }
            }
            if j == 0 {
                // The rest of the set stays where it is.
                break;
            }
            if i > k {
                // `cur` is done; set[k + 1..i] keep their places in order; set[k] may still
                // meet the batch interval, so it becomes `cur`.
                if let Some(c) = cur {
                    w -= 1;
                    set[w] = c;
                    added_ns += c.len_ns();
                }
                let m = i - (k + 1);
                set.copy_within(k + 1..i, w - m);
                w -= m;
                i = k;
                removed_ns += set[k].len_ns();
                cur = Some(set[k]);
            }
            j -= 1;
            let next = pending[j];
            match cur.as_mut() {
                Some(c) if next.end_ns >= c.start_ns => {
                    c.start_ns = c.start_ns.min(next.start_ns);
                }
                Some(c) => {
                    w -= 1;
                    set[w] = *c;
                    added_ns += c.len_ns();
                    cur = Some(next);
                }
                None => cur = Some(next),
            }
        }
        if let Some(c) = cur {
            w -= 1;
            set[w] = c;
            added_ns += c.len_ns();
        }
        let n = self.set_len + p - w;
        set.copy_within(w..w + n, i);
        self.set_len = i + n;
        self.set_total_ns = self.set_total_ns - removed_ns + added_ns;
        debug_assert_eq!(
            self.set_total_ns,
            set[..self.set_len]
                .iter()
                .map(|iv| iv.len_ns())
                .sum::<u64>()
        );
    }

    /// Coalesces the smallest gaps until at most `target` intervals remain (target >= 1),
    /// adding each filled gap to the error bound.
    fn coalesce_to(&mut self, target: usize) {
        if self.set_len <= target {
            return;
        }
        let merges = self.set_len - target;
        let (set, _) = self.storage.split();
        let set = &mut set[..self.set_len];
        let gap = |k: usize, s: &[Interval]| s[k + 1].start_ns.wrapping_sub(s[k].end_ns) as u64;
        // Smallest threshold T with at least `merges` gaps <= T (binary search on the value).
        let max_gap = (0..set.len() - 1).map(|k| gap(k, set)).max().unwrap_or(0);
        let (mut lo, mut hi) = (0u64, max_gap);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let count = (0..set.len() - 1).filter(|&k| gap(k, set) <= mid).count();
            if count >= merges {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let threshold = lo;
        let below = (0..set.len() - 1)
            .filter(|&k| gap(k, set) < threshold)
            .count();
        let mut equal_quota = merges - below;
        let mut out = 0;
        let mut filled = 0u64;
        for k in 1..set.len() {
            let g = set[k].start_ns.wrapping_sub(set[out].end_ns) as u64;
            let take = g < threshold || (g == threshold && equal_quota > 0);
            if take {
                if g == threshold {
                    equal_quota -= 1;
                }
                filled += g;
                set[out].end_ns = set[k].end_ns;
            } else {
                out += 1;
                set[out] = set[k];
            }
        }
        self.set_len = out + 1;
        self.error_bound_ns += filled;
        self.set_total_ns += filled;
    }

    /// Merges any pending intervals into the set. Called by the readers below; call it to
    /// control when the work happens.
    pub fn flush_pending(&mut self) {
        self.flush();
    }

    /// Length of the union in ns (merges the pending batch first). In bounded mode this is an
    /// upper bound; the true union is at least `union_ns() - error_bound_ns()`.
    pub fn union_ns(&mut self) -> u64 {
        self.flush();
        self.set_total_ns
    }

    /// Time filled in by coalescing gaps (0 in exact mode, and in bounded mode until full).
    pub fn error_bound_ns(&self) -> u64 {
        self.error_bound_ns
    }

    /// Number of stored intervals: disjoint set plus pending batch (memory in use, in slots).
    pub fn len(&self) -> usize {
        self.set_len + self.pending_len
    }

    /// True when nothing non-empty was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for the growable exact form.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// The disjoint intervals of the union, sorted (merges the pending batch first).
    pub fn intervals(&mut self) -> &[Interval] {
        self.flush();
        &self.storage.set_slots()[..self.set_len]
    }

    /// Removes the `k` earliest intervals of the disjoint union (merging the pending batch
    /// first; all of them when `k` is larger) and returns their total length in ns. The error
    /// bound is kept. The storage is kept too (see `shrink_storage` for the growable form).
    pub fn remove_first(&mut self, k: usize) -> u64 {
        self.flush();
        let k = k.min(self.set_len);
        let n = self.set_len;
        let (set, _) = self.storage.split();
        let removed: u64 = set[..k].iter().map(|iv| iv.len_ns()).sum();
        set.copy_within(k..n, 0);
        self.set_len = n - k;
        self.set_total_ns -= removed;
        debug_assert_eq!(
            self.set_total_ns,
            set[..n - k].iter().map(|iv| iv.len_ns()).sum::<u64>()
        );
        removed
    }

    /// Returns the error bound and resets it to 0 (for a caller that accounts for it itself).
    pub fn take_error_bound_ns(&mut self) -> u64 {
        core::mem::take(&mut self.error_bound_ns)
    }

    /// Forgets every interval and the error bound; keeps the storage.
    pub fn clear(&mut self) {
        self.set_len = 0;
        self.pending_len = 0;
        self.set_total_ns = 0;
        self.error_bound_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::vec::Vec;

    /// Naive oracle: sort and merge.
    fn naive_union(ivs: &[(i64, i64)]) -> u64 {
        let mut v: Vec<(i64, i64)> = ivs.iter().copied().filter(|(s, e)| e > s).collect();
        v.sort();
        let mut total: u128 = 0;
        let mut end: Option<i64> = None;
        for (s, e) in v {
            match end {
                Some(x) if s < x => {
                    if e > x {
                        total += (e as i128 - x as i128) as u128;
                        end = Some(e);
                    }
                }
                _ => {
                    total += (e as i128 - s as i128) as u128;
                    end = Some(e);
                }
            }
        }
        total as u64
    }

    fn gen_case(rng: &mut Rng) -> Vec<(i64, i64)> {
        let n = rng.below(300) as usize;
        let sorted = rng.below(3);
        let span = 1 + rng.below(10_000) as i64;
        let mut t = 0i64;
        (0..n)
            .map(|_| {
                let s = match sorted {
                    0 => rng.below(span as u64) as i64 - span / 2,
                    _ => {
                        t += rng.below(50) as i64;
                        // Mostly sorted with occasional stragglers.
                        if rng.below(10) == 0 {
                            t - rng.below(200) as i64
                        } else {
                            t
                        }
                    }
                };
                let len = rng.below(60) as i64 - 5; // some empty / inverted
                (s, s + len)
            })
            .collect()
    }

    #[test]
    fn exact_matches_sort_and_merge() {
        let mut rng = Rng::from_env(21);
        for _ in 0..2000 {
            let ivs = gen_case(&mut rng);
            let mut u = IntervalUnion::exact();
            for &(s, e) in &ivs {
                u.insert(s, e);
            }
            assert_eq!(u.union_ns(), naive_union(&ivs), "{ivs:?}");
            assert_eq!(u.error_bound_ns(), 0);
            // The disjoint list itself is sorted, disjoint, non-touching.
            let list = u.intervals().to_vec();
            for w in list.windows(2) {
                assert!(w[0].end_ns < w[1].start_ns);
            }
        }
    }

    #[test]
    fn exact_handles_many_out_of_order_intervals() {
        let mut rng = Rng::from_env(22);
        let ivs: Vec<(i64, i64)> = (0..20_000)
            .map(|_| {
                let s = rng.below(1 << 40) as i64;
                (s, s + rng.below(1 << 20) as i64)
            })
            .collect();
        let mut u = IntervalUnion::exact();
        ivs.iter().for_each(|&(s, e)| u.insert(s, e));
        assert_eq!(u.union_ns(), naive_union(&ivs));
    }

    fn check_bounded(u_union: u64, bound: u64, truth: u64) {
        assert!(u_union >= truth, "union {u_union} below truth {truth}");
        assert!(
            u_union - bound <= truth,
            "union {u_union} - bound {bound} above {truth}"
        );
    }

    #[test]
    fn bounded_forms_stay_within_their_bound() {
        let mut rng = Rng::from_env(23);
        for case in 0..1500 {
            let ivs = gen_case(&mut rng);
            let truth = naive_union(&ivs);
            let cap = 4 + (case % 40);
            let mut v = IntervalUnion::bounded(cap);
            let mut slots = [Interval::default(); 43];
            let mut s = IntervalUnionSlice::new(&mut slots[..cap]).unwrap();
            let mut a = IntervalUnionArray::<9>::new();
            for &(st, e) in &ivs {
                v.insert(st, e);
                s.insert(st, e);
                a.insert(st, e);
                assert!(v.len() <= cap && s.len() <= cap && a.len() <= 9);
            }
            let (vu, su, au) = (v.union_ns(), s.union_ns(), a.union_ns());
            check_bounded(vu, v.error_bound_ns(), truth);
            check_bounded(su, s.error_bound_ns(), truth);
            check_bounded(au, a.error_bound_ns(), truth);
            assert_eq!((vu, v.error_bound_ns()), (su, s.error_bound_ns()));
            if naive_count(&ivs) <= split_sizes(cap).0 && v.error_bound_ns() == 0 {
                assert_eq!(vu, truth);
            }
        }
    }

    fn naive_count(ivs: &[(i64, i64)]) -> usize {
        let mut u = IntervalUnion::exact();
        ivs.iter().for_each(|&(s, e)| u.insert(s, e));
        u.intervals().len()
    }

    #[test]
    fn growing_equals_preallocated() {
        let mut rng = Rng::from_env(25);
        for case in 0..500 {
            let ivs = gen_case(&mut rng);
            let cap = 4 + case % 300;
            let mut fixed = IntervalUnion::bounded(cap);
            let mut grown = IntervalUnion::bounded_growing(cap);
            for &(s, e) in &ivs {
                fixed.insert(s, e);
                grown.insert(s, e);
                assert!(grown.len() <= cap);
            }
            assert_eq!(fixed.union_ns(), grown.union_ns());
            assert_eq!(fixed.error_bound_ns(), grown.error_bound_ns());
            assert_eq!(fixed.intervals(), grown.intervals());
        }
    }

    /// A pending batch that meets the set in its middle: it merges with the interval it
    /// touches (end == start), leaves the ones before alone, and swallows the ones it covers.
    #[test]
    fn flush_merges_from_where_the_batch_meets_the_set() {
        for mut u in [IntervalUnion::exact(), IntervalUnion::bounded(64)] {
            for k in 0..10 {
                u.insert(k * 100, k * 100 + 10);
            }
            // Out of order (before the last start): pending, then flushed by the read.
            u.insert(310, 320); // touches [300, 310)
            u.insert(405, 620); // covers [500, 510) and [600, 610), overlaps [400, 410)
            u.insert(95, 100); // touches [100, 110) only
            let got: Vec<(i64, i64)> = u
                .intervals()
                .iter()
                .map(|iv| (iv.start_ns, iv.end_ns))
                .collect();
            assert_eq!(
                got,
                [
                    (0, 10),
                    (95, 110),
                    (200, 210),
                    (300, 320),
                    (400, 620),
                    (700, 710),
                    (800, 810),
                    (900, 910)
                ]
            );
            assert_eq!(u.union_ns(), 10 + 15 + 10 + 20 + 220 + 30);
        }
    }

    /// Removing the oldest intervals in place (and shrinking) leaves exactly the union that a
    /// fresh one rebuilt from the kept intervals would be, now and after more inserts: the same
    /// intervals, union and (after `take_error_bound_ns`) error bound.
    #[test]
    fn remove_first_equals_a_rebuilt_union() {
        let mut rng = Rng::from_env(27);
        for case in 0..600 {
            let ivs = gen_case(&mut rng);
            let more = gen_case(&mut rng);
            let cap = if case % 3 == 0 {
                usize::MAX
            } else {
                4 + rng.below(200) as usize
            };
            let mut u = IntervalUnion::with_capacity_limit(cap);
            ivs.iter().for_each(|&(s, e)| u.insert(s, e));
            let before = u.intervals().to_vec();
            let bound = u.error_bound_ns();
            let k = rng.below(before.len() as u64 + 2) as usize;
            let removed = u.remove_first(k);
            let k = k.min(before.len());
            let want: u64 = before[..k].iter().map(|iv| iv.len_ns()).sum();
            assert_eq!(removed, want, "case {case}");
            assert_eq!(u.take_error_bound_ns(), bound);
            assert_eq!(u.error_bound_ns(), 0);
            u.shrink_storage();
            assert!(
                u.storage.set.len() <= 3 * u.len().max(32) + 2,
                "case {case}"
            );
            let mut fresh = IntervalUnion::with_capacity_limit(cap);
            before[k..]
                .iter()
                .for_each(|iv| fresh.insert(iv.start_ns, iv.end_ns));
            assert_eq!(u.intervals(), fresh.intervals(), "case {case}");
            for &(s, e) in &more {
                u.insert(s, e);
                fresh.insert(s, e);
            }
            assert_eq!(u.union_ns(), fresh.union_ns(), "case {case}");
            assert_eq!(u.error_bound_ns(), fresh.error_bound_ns(), "case {case}");
            assert_eq!(u.intervals(), fresh.intervals(), "case {case}");
        }
    }

    #[test]
    fn bounded_is_exact_while_it_fits() {
        let mut u = IntervalUnion::bounded(64);
        for k in 0..50 {
            u.insert(k * 10, k * 10 + 5);
        }
        assert_eq!(u.union_ns(), 250);
        assert_eq!(u.error_bound_ns(), 0);
    }

    #[test]
    fn coalescing_fills_the_smallest_gaps() {
        // Set capacity 7 (8 slots): gaps of 1 and 2 get filled first.
        let mut u = IntervalUnion::bounded(8);
        let ivs = [
            (0, 10),
            (11, 20),
            (100, 110),
            (112, 120),
            (200, 210),
            (300, 310),
            (400, 410),
        ];
        for (s, e) in ivs {
            u.insert(s, e);
        }
        assert_eq!(u.error_bound_ns(), 0);
        u.insert(500, 510);
        // One merge needed (7 -> 6), then append: the gap of 1 at 10..11 is filled.
        assert_eq!(u.error_bound_ns(), 1);
        assert_eq!(u.union_ns(), 78);
    }

    #[test]
    fn extreme_values() {
        let mut u = IntervalUnion::exact();
        u.insert(i64::MIN, i64::MAX);
        u.insert(0, 5);
        assert_eq!(u.union_ns(), u64::MAX);
        let mut u = IntervalUnion::bounded(4);
        u.insert(i64::MAX - 1, i64::MAX);
        u.insert(i64::MIN, i64::MIN + 1);
        u.insert(0, 1);
        u.insert(-5, -4);
        u.insert(7, 8);
        assert!(u.union_ns() >= 5);
    }

    #[test]
    fn rejects_tiny_slices() {
        let mut slots = [Interval::default(); 3];
        assert!(IntervalUnionSlice::new(&mut slots).is_none());
    }

    /// Reading the union part-way (which merges the pending batch) must not change the final
    /// result: the same stream read at random points agrees with one read only at the end.
    #[test]
    fn reading_midway_changes_nothing() {
        let mut rng = Rng::from_env(24);
        for case in 0..500 {
            let ivs = gen_case(&mut rng);
            let mut once = IntervalUnion::exact();
            let mut often = IntervalUnion::exact();
            let mut b_once = IntervalUnion::bounded(8 + case % 16);
            let mut b_often = IntervalUnion::bounded(8 + case % 16);
            for &(s, e) in &ivs {
                once.insert(s, e);
                often.insert(s, e);
                b_once.insert(s, e);
                b_often.insert(s, e);
                if rng.below(8) == 0 {
                    let _ = often.union_ns();
                    let _ = b_often.union_ns();
                }
            }
            assert_eq!(once.union_ns(), often.union_ns());
            let truth = naive_union(&ivs);
            check_bounded(b_often.union_ns(), b_often.error_bound_ns(), truth);
            check_bounded(b_once.union_ns(), b_once.error_bound_ns(), truth);
        }
    }

    #[test]
    fn clear_and_reuse() {
        let mut u = IntervalUnionArray::<8>::new();
        for k in 0..100 {
            u.insert(k * 10, k * 10 + 3);
        }
        assert!(u.error_bound_ns() > 0);
        u.clear();
        assert!(u.is_empty());
        u.insert(5, 10);
        u.insert(0, 6);
        assert_eq!(u.union_ns(), 10);
        assert_eq!(u.error_bound_ns(), 0);
        assert_eq!(
            u.intervals(),
            &[Interval {
                start_ns: 0,
                end_ns: 10
            }]
        );
    }
}
