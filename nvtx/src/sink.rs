//! The hand-off from the NVTX caller to the recorder's FIFO.
//!
//! The caller formats its line on its own stack and appends it to a bounded byte buffer under a
//! spin lock held for one copy ([`Sink::emit`]); it never waits on I/O. A background thread swaps
//! the buffer out every millisecond (backing off to 16 ms when idle) and writes it to the FIFO in
//! pieces of whole lines of at most `PIPE_BUF` bytes, so each write is atomic next to other
//! writers. A full buffer, an absent reader or a closed FIFO drops lines, counted. At exit the
//! thread is given a bounded time to drain, then sends one statistics line
//! (`#flinch-nvtx pid=P marks=M dropped=D`) that the recorder adds to its sidecar.
use std::cell::UnsafeCell;
use std::ffi::CString;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes the buffer holds at most: about 100,000 lines of a typical 40 bytes, half a second of
/// 100,000 ranges/s (two lines each) while the reader is stalled.
pub const CAPACITY: usize = 4 << 20;
/// Longest single write to the FIFO: writes up to `PIPE_BUF` are atomic.
const PIPE_BUF: usize = 4096;
/// How long the exit handler waits for queued lines to reach the FIFO.
pub const EXIT_WAIT: Duration = Duration::from_secs(1);

/// A lock for critical sections of a few hundred nanoseconds. Unlike `std::sync::Mutex` it can be
/// reset in a forked child (where a thread that held it no longer exists).
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is serialized by `locked`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// Holds a [`SpinLock`].
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    /// A new, unlocked lock.
    pub const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, spinning, then yielding the CPU while another thread holds it.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        SpinGuard { lock: self }
    }

    /// Unlocks without a guard: only in a forked child, where the holder no longer exists.
    pub fn reset_after_fork(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// The process's mark buffer, writer state and counts.
pub struct Sink {
    path: CString,
    pending: SpinLock<Vec<u8>>,
    /// Lines accepted into the buffer.
    pub queued: AtomicU64,
    /// Lines written to the FIFO.
    pub sent: AtomicU64,
    /// Lines lost: buffer full, no reader, write error.
    pub dropped: AtomicU64,
    /// The part of `dropped` that was queued and then lost by the writer (no reader, closed FIFO).
    lost_io: AtomicU64,
    writer_started: AtomicBool,
    exiting: AtomicBool,
    writer_done: AtomicBool,
}

impl Sink {
    /// A sink writing to the FIFO at `path`; the writer thread starts with the first line.
    pub fn new(path: CString) -> Sink {
        Sink {
            path,
            pending: SpinLock::new(Vec::new()),
            queued: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            lost_io: AtomicU64::new(0),
            writer_started: AtomicBool::new(false),
            exiting: AtomicBool::new(false),
            writer_done: AtomicBool::new(false),
        }
    }

    /// Queues one line (ending in `\n`), or counts it dropped when the buffer is full.
    pub fn emit(&'static self, line: &[u8]) {
        if !self.writer_started.load(Ordering::Acquire) {
            self.start_writer();
        }
        let mut p = self.pending.lock();
        if p.len() + line.len() <= CAPACITY {
            if p.capacity() == 0 {
                // Reserved once (virtual memory: pages are touched as lines arrive).
                p.reserve_exact(CAPACITY);
            }
            p.extend_from_slice(line);
            drop(p);
            self.queued.fetch_add(1, Ordering::Relaxed);
        } else {
            drop(p);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn start_writer(&'static self) {
        if self
            .writer_started
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("flinch-nvtx".into())
            .spawn(move || self.writer_loop());
        if spawned.is_err() {
            // Lines queue up to the capacity and are then counted as dropped.
            self.writer_done.store(true, Ordering::Release);
        }
    }

    /// In a forked child: the parent's queued lines are the parent's to send, the writer thread
    /// did not survive the fork, and the counts start again for this process.
    pub fn reset_after_fork(&self) {
        self.pending.reset_after_fork();
        let mut p = self.pending.lock();
        p.clear();
        drop(p);
        self.queued.store(0, Ordering::Relaxed);
        self.sent.store(0, Ordering::Relaxed);
        self.dropped.store(0, Ordering::Relaxed);
        self.lost_io.store(0, Ordering::Relaxed);
        self.exiting.store(false, Ordering::Relaxed);
        self.writer_done.store(false, Ordering::Relaxed);
        self.writer_started.store(false, Ordering::Release);
    }

    fn writer_loop(&self) {
        block_sigpipe();
        let mut out = Fifo::new(&self.path);
        let mut batch: Vec<u8> = Vec::with_capacity(CAPACITY);
        let mut idle_ms = 1u64;
        loop {
            let exiting = self.exiting.load(Ordering::Acquire);
            {
                let mut p = self.pending.lock();
                std::mem::swap(&mut *p, &mut batch);
            }
            if !batch.is_empty() {
                let lines = batch.iter().filter(|&&b| b == b'\n').count() as u64;
                let sent = out.write_lines(&batch);
                self.sent.fetch_add(sent, Ordering::Relaxed);
                self.dropped.fetch_add(lines - sent, Ordering::Relaxed);
                self.lost_io.fetch_add(lines - sent, Ordering::Relaxed);
                batch.clear();
                idle_ms = 1;
                continue;
            }
            if exiting {
                let stats = format!(
                    "#flinch-nvtx pid={} marks={} dropped={}\n",
                    std::process::id(),
                    self.sent.load(Ordering::Relaxed),
                    self.dropped.load(Ordering::Relaxed)
                );
                out.write_lines(stats.as_bytes());
                self.writer_done.store(true, Ordering::Release);
                return;
            }
            std::thread::sleep(Duration::from_millis(idle_ms));
            idle_ms = (idle_ms * 2).min(16);
        }
    }

    /// At process exit: lets the writer drain for up to [`EXIT_WAIT`], then reports losses on
    /// stderr. Returns the line printed, if any.
    pub fn finish(&self) -> Option<String> {
        if !self.writer_started.load(Ordering::Acquire) {
            return None;
        }
        self.exiting.store(true, Ordering::Release);
        let give_up = Instant::now() + EXIT_WAIT;
        while !self.writer_done.load(Ordering::Acquire) && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        let queued = self.queued.load(Ordering::Relaxed);
        let sent = self.sent.load(Ordering::Relaxed);
        let dropped = self.dropped.load(Ordering::Relaxed);
        let lost_io = self.lost_io.load(Ordering::Relaxed);
        // Queued lines are sent, lost by the writer, or still waiting.
        let unsent = queued.saturating_sub(sent + lost_io);
        if dropped == 0 && unsent == 0 {
            return None;
        }
        let mut msg = format!(
            "flinch-nvtx: {dropped} of {} NVTX marks dropped (buffer full, or no recorder reading {})",
            queued + dropped - lost_io,
            self.path.to_string_lossy()
        );
        if unsent > 0 {
            msg.push_str(&format!(
                "; {unsent} more were still queued at exit (not read within {} ms)",
                EXIT_WAIT.as_millis()
            ));
        }
        Some(msg)
    }
}

fn block_sigpipe() {
    // A write to a FIFO whose reader has gone raises SIGPIPE in the writing thread; blocked in this
    // thread only, the write fails with EPIPE instead and the host's own disposition is untouched.
    // SAFETY: plain libc calls on a local, initialized signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The FIFO, opened lazily without blocking; reopened at most every 100 ms after a failure.
struct Fifo<'a> {
    path: &'a CString,
    fd: Option<i32>,
    retry_at: Option<Instant>,
}

impl<'a> Fifo<'a> {
    fn new(path: &'a CString) -> Self {
        Fifo {
            path,
            fd: None,
            retry_at: None,
        }
    }

    fn open(&mut self) -> Option<i32> {
        if let Some(fd) = self.fd {
            return Some(fd);
        }
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return None;
        }
        // SAFETY: `path` is NUL-terminated. O_NONBLOCK: open fails with ENXIO instead of waiting
        // for a reader, and writes fail with EAGAIN instead of waiting for room.
        let fd = unsafe {
            libc::open(
                self.path.as_ptr(),
                libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            self.retry_at = Some(Instant::now() + Duration::from_millis(100));
            return None;
        }
        self.fd = Some(fd);
        Some(fd)
    }

    fn close(&mut self) {
        if let Some(fd) = self.fd.take() {
            // SAFETY: `fd` is ours and open.
            unsafe { libc::close(fd) };
        }
        self.retry_at = Some(Instant::now() + Duration::from_millis(100));
    }

    /// Writes whole lines in atomic pieces, waiting for room as long as the reader is there.
    /// Returns the number of lines written.
    fn write_lines(&mut self, data: &[u8]) -> u64 {
        let Some(fd) = self.open() else { return 0 };
        let mut sent = 0u64;
        for piece in pieces(data) {
            loop {
                // SAFETY: `piece` is a valid slice; `fd` is open.
                let n = unsafe { libc::write(fd, piece.as_ptr().cast(), piece.len()) };
                if n as usize == piece.len() {
                    sent += piece.iter().filter(|&&b| b == b'\n').count() as u64;
                    break;
                }
                let err = std::io::Error::last_os_error().raw_os_error();
                if n < 0 && err == Some(libc::EAGAIN) {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut pfd, 1, 100) };
                    continue;
                }
                if n < 0 && err == Some(libc::EINTR) {
                    continue;
                }
                // EPIPE (the reader left) or anything else: the rest is lost.
                self.close();
                return sent;
            }
        }
        sent
    }
}

/// Splits `data` (whole lines) into pieces of whole lines of at most `PIPE_BUF` bytes; a single
/// longer line (labels are far shorter) is its own piece.
fn pieces(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let window = &rest[..rest.len().min(PIPE_BUF)];
        let cut = if rest.len() <= PIPE_BUF {
            rest.len()
        } else {
            match window.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1),
            }
        };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_whole_lines_within_pipe_buf() {
        let mut data = Vec::new();
        for i in 0..2000 {
            data.extend_from_slice(format!("@{i}:7 label_{i}_start\n").as_bytes());
        }
        let ps: Vec<&[u8]> = pieces(&data).collect();
        assert!(ps.len() > 1);
        assert_eq!(ps.concat(), data);
        for p in &ps {
            assert!(p.len() <= PIPE_BUF);
            assert_eq!(p.last(), Some(&b'\n'));
        }
        let long = [vec![b'x'; 5000], b"\nab\n".to_vec()].concat();
        let ps: Vec<&[u8]> = pieces(&long).collect();
        assert_eq!(ps, vec![&long[..5001], &long[5001..]]);
    }

    #[test]
    fn spin_lock_serializes_threads() {
        static L: SpinLock<u64> = SpinLock::new(0);
        let ts: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..10_000 {
                        *L.lock() += 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*L.lock(), 40_000);
    }
}
