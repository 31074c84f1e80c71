//! A global allocator that tallies live heap bytes and their peak, for memory-bound proofs.
//!
//! Including this file (`#[path = "common/peak_heap.rs"] mod peak_heap;`) installs [`Tally`] as
//! the test binary's `#[global_allocator]`. It cannot share a binary with `counting_alloc`
//! (a binary has one global allocator), which is why it is not part of `common/mod.rs`.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to [`System`] unchanged; only tallies sizes.
pub struct Tally;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator unchanged; only tallies sizes.
unsafe impl GlobalAlloc for Tally {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static A: Tally = Tally;

/// Runs `f` and returns the peak of live heap bytes above the level at its start, with `f`'s
/// result. Tests that measure run one at a time in their binary (one test function each, or
/// `--test-threads=1`), as the tally is process-wide.
pub fn peak_during<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (PEAK.load(Ordering::Relaxed) - base, r)
}
