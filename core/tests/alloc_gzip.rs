//! Proves that `GzDecoder::decode` allocates nothing after construction: a counting global
//! allocator counts the allocations made on this thread while a multi-member stream is decoded
//! in small chunks with a small output buffer.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use flinch_core::gzip::{GzDecoder, GzStatus};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note_alloc() {
    // `try_with`: thread-local storage may be gone while a thread shuts down.
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
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

fn gzip_member(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[test]
fn decode_allocates_nothing_after_construction() {
    let text: Vec<u8> = (0..200_000u32)
        .flat_map(|i| {
            format!("{{\"ph\":\"X\",\"ts\":{i}.5,\"name\":\"k{}\"}},", i % 97).into_bytes()
        })
        .collect();
    let gz = [gzip_member(&text), gzip_member(b"tail"), gzip_member(&text)].concat();
    let mut out = vec![0u8; 3000];
    let mut dec = GzDecoder::new();

    COUNTING.with(|c| c.set(true));
    let mut total_out = 0u64;
    for chunk in gz.chunks(777) {
        let mut input = chunk;
        loop {
            let (status, nin, nout) = dec.decode(input, &mut out).unwrap();
            total_out += nout as u64;
            input = &input[nin..];
            if status != GzStatus::OutputFull {
                break;
            }
        }
    }
    dec.finish().unwrap();
    COUNTING.with(|c| c.set(false));

    assert_eq!(total_out, 2 * text.len() as u64 + 4);
    assert_eq!(dec.members(), 3);
    assert_eq!(ALLOCS.with(|a| a.get()), 0, "GzDecoder::decode allocated");
}
