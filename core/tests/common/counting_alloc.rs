//! A counting global allocator for allocation-bound proofs.
//!
//! Including this module (through `mod common;`) installs [`Counting`] as the test binary's
//! `#[global_allocator]`: every call is forwarded unchanged to [`System`], and each allocation
//! (`alloc`, `alloc_zeroed`) and reallocation (`realloc`) made on the current thread while
//! counting is enabled adds one to that thread's tally. Deallocations are not counted.
//!
//! Counting is per thread: the test harness runs tests in parallel, and allocations made by other
//! test threads never disturb a measurement. Use [`count_allocs`] to measure a region.
//!
//! A test binary has a single global allocator, so this module cannot be combined with another
//! one (e.g. the peak-live-heap tally of `mem_window.rs`).
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator: forwards to [`System`], counts allocations and reallocations made
/// on the current thread inside [`count_allocs`].
pub struct Counting;

thread_local! {
    /// Whether allocations on this thread are being counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Allocations and reallocations counted on this thread so far.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note_alloc() {
    // `try_with`: the allocator may run while this thread's thread-locals are torn down.
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts calls, using
// const-initialized thread-locals that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_alloc();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Restores the previous counting state when dropped, also if the measured closure panics.
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = COUNTING.try_with(|c| c.set(self.0));
    }
}

/// Runs `f` on the current thread and returns its result with the number of allocations and
/// reallocations it made on this thread. Calls may nest: an inner region's allocations count
/// for the outer region too.
pub fn count_allocs<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let restore = Restore(COUNTING.with(|c| c.replace(true)));
    let before = ALLOCS.with(|a| a.get());
    let r = f();
    drop(restore);
    (r, ALLOCS.with(|a| a.get()) - before)
}
