//! Counts shared by every process of one recording, in a small file the recorder creates and
//! names in `FLINCH_NVTX_COUNTS`; each process maps it (`MAP_SHARED`, inherited across `fork`).
//! They live in the kernel's page cache, not in the process, so they survive a process that ends
//! by `_exit`, a signal or a crash, which sends no exit statistics: the recorder reads them after
//! the command ended and learns how many processes there were and how many marks were lost with
//! the ones that never reported.
//!
//! The file holds native-endian `u64`s: [`ATTACHED`], [`PROCESSES`], [`UNREPORTED`].
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Word: 1 once a process mapped the file (the recorder then knows the counts are real).
pub const ATTACHED: usize = 0;
/// Word: processes that made a mark.
pub const PROCESSES: usize = 1;
/// Word: marks queued or dropped and not yet resolved: a queued one resolves when its piece of
/// the backlog is written, and a process's drops and still-queued lines resolve when its exit
/// statistics report them. What is left when every process has ended was lost by processes
/// that did not report. It may run below zero for a moment (a line written after its process
/// reported it still queued): the recorder reads it as a signed number.
pub const UNREPORTED: usize = 2;
/// Bytes of the file.
pub const BYTES: usize = 64;

static WORDS: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());

/// Maps the file at `path` (once per program; the mapping is inherited by forked children).
/// Without it (no variable, or the file is unusable) the counts are kept by each process alone.
pub fn attach(path: &std::ffi::CStr) {
    if !WORDS.load(Ordering::Acquire).is_null() {
        return;
    }
    // SAFETY: `path` is NUL-terminated; plain libc calls whose results are checked.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut st: libc::stat = std::mem::zeroed();
        let big_enough = libc::fstat(fd, &mut st) == 0 && st.st_size as usize >= BYTES;
        let p = if big_enough {
            libc::mmap(
                std::ptr::null_mut(),
                BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::close(fd);
        if p == libc::MAP_FAILED {
            return;
        }
        let words = p.cast::<AtomicU64>();
        if WORDS
            .compare_exchange(
                std::ptr::null_mut(),
                words,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            libc::munmap(p, BYTES);
            return;
        }
        (*words.add(ATTACHED)).store(1, Ordering::Relaxed);
    }
}

/// Adds `n` (wrapping: subtracting is adding the two's complement) to word `i`, if mapped.
pub fn add(i: usize, n: u64) {
    let w = WORDS.load(Ordering::Acquire);
    if !w.is_null() && i < BYTES / 8 {
        // SAFETY: `w` maps BYTES bytes for the life of the process (never unmapped once set),
        // 8-byte aligned (page aligned).
        unsafe { (*w.add(i)).fetch_add(n, Ordering::Relaxed) };
    }
}

/// Subtracts `n` from word `i`, if mapped.
pub fn sub(i: usize, n: u64) {
    add(i, n.wrapping_neg());
}
