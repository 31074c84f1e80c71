//! The hand-off from the NVTX caller to the recorder's FIFO.
//!
//! The caller formats its line on its own stack and, when nothing is queued, writes it to the
//! FIFO itself: one non-blocking `write` of at most `PIPE_BUF` bytes (atomic next to other
//! writers), with SIGPIPE held off for that call only ([`Sink::emit`]). So a line is in the
//! kernel's pipe when the NVTX call returns, and a process that ends without exit handlers
//! (`_exit`, `os._exit`) or is forked loses nothing it emitted. Only when the pipe is full (the
//! reader is behind) does a line go to a bounded backlog, under a spin lock held for one copy; a
//! background thread, started then, writes the backlog in pieces of whole lines and waits for
//! room, and every line after it joins the backlog until it is empty (so one thread's lines stay
//! in order). A full backlog, an absent reader or a closed FIFO drops lines, counted. The first
//! line of each process is preceded by `#flinch-nvtx pid=P start` (queued like a mark when the
//! pipe is full); at exit (when exit handlers run) the backlog gets a bounded time to drain, then
//! the line `#flinch-nvtx pid=P marks=M dropped=D` reports the process's counts, waiting a
//! bounded time for room (a full pipe must not lose the report). The recorder counts the
//! processes that started but never reported (their backlog at `_exit`, if any, is unknown).
use std::cell::UnsafeCell;
use std::ffi::CString;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flinch_core::marks_line;

use crate::shared;

/// Bytes the backlog holds at most: about 100,000 lines of a typical 40 bytes, half a second of
/// 100,000 ranges/s (two lines each) while the reader is stalled.
pub const CAPACITY: usize = 4 << 20;
/// Longest single write to the FIFO: writes up to `PIPE_BUF` are atomic.
const PIPE_BUF: usize = 4096;
/// How long the exit handler waits for the backlog to reach the FIFO.
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

/// The process's descriptor to the FIFO, backlog, writer state and counts.
pub struct Sink {
    path: CString,
    /// The FIFO's descriptor, -1 until first opened. Its number never changes once set: a
    /// reopen (after the reader left) is `dup3`'d onto it, so a caller writing at that moment
    /// never writes to a descriptor the process reused for something else.
    fd: AtomicI32,
    /// Whether `fd` is open on the FIFO with a reader (false: not opened, or the reader left).
    usable: AtomicBool,
    /// CLOCK_MONOTONIC ns before which no open is tried again.
    retry_at_ns: AtomicU64,
    reopening: AtomicBool,
    pending: SpinLock<Backlog>,
    /// Whether this process's `start` line went out.
    announced: AtomicBool,
    /// Whether this process is in the shared count of processes.
    counted: AtomicBool,
    /// Lines accepted (written at once, or queued).
    pub queued: AtomicU64,
    /// Lines written to the FIFO.
    pub sent: AtomicU64,
    /// Lines lost: backlog full, no reader, write error.
    pub dropped: AtomicU64,
    /// The part of `dropped` that was queued and then lost by the writer (no reader, closed FIFO).
    lost_io: AtomicU64,
    writer_started: AtomicBool,
    exiting: AtomicBool,
    writer_done: AtomicBool,
}

/// Lines waiting for room in the pipe.
pub struct Backlog {
    bytes: Vec<u8>,
    /// The writer holds a swapped-out batch not yet written: new lines queue behind it.
    draining: bool,
}

/// What one write of a line did.
enum Wrote {
    All,
    /// The pipe is full: try later.
    Full,
    /// No reader, or the FIFO failed: the line is lost.
    Lost,
}

impl Sink {
    /// A sink writing to the FIFO at `path`; opened at the first line.
    pub fn new(path: CString) -> Sink {
        Sink {
            path,
            fd: AtomicI32::new(-1),
            usable: AtomicBool::new(false),
            retry_at_ns: AtomicU64::new(0),
            reopening: AtomicBool::new(false),
            pending: SpinLock::new(Backlog {
                bytes: Vec::new(),
                draining: false,
            }),
            announced: AtomicBool::new(false),
            counted: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            lost_io: AtomicU64::new(0),
            writer_started: AtomicBool::new(false),
            exiting: AtomicBool::new(false),
            writer_done: AtomicBool::new(false),
        }
    }

    /// Sends one line (ending in `\n`): written at once when nothing is queued and the pipe has
    /// room, else queued for the writer thread, else counted dropped.
    pub fn emit(&'static self, line: &[u8]) {
        if !self.announced.load(Ordering::Relaxed) {
            self.announce();
        }
        let direct = {
            let p = self.pending.lock();
            p.bytes.is_empty() && !p.draining
        };
        if direct {
            match self.write_now(line) {
                Wrote::All => {
                    self.queued.fetch_add(1, Ordering::Relaxed);
                    self.sent.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Wrote::Lost => {
                    self.count_dropped();
                    return;
                }
                Wrote::Full => {}
            }
        }
        self.enqueue(line, true);
    }

    /// Queues a line behind the backlog, starting the writer thread if needed; `mark`: whether
    /// it counts as a mark (the control line `start` does not).
    fn enqueue(&'static self, line: &[u8], mark: bool) {
        if !self.writer_started.load(Ordering::Acquire) {
            self.start_writer();
        }
        let mut p = self.pending.lock();
        if p.bytes.len() + line.len() <= CAPACITY {
            if p.bytes.capacity() == 0 {
                // Reserved once (virtual memory: pages are touched as lines arrive).
                p.bytes.reserve_exact(CAPACITY);
            }
            p.bytes.extend_from_slice(line);
            drop(p);
            if mark {
                self.queued.fetch_add(1, Ordering::Relaxed);
                shared::add(shared::UNREPORTED, 1);
            }
        } else {
            drop(p);
            if mark {
                self.count_dropped();
            }
        }
    }

    /// Counts one mark lost (here and in the recording's shared counts).
    pub fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        shared::add(shared::UNREPORTED, 1);
    }

    /// `#flinch-nvtx pid=P start`, once per process, before its first mark: the recorder counts
    /// processes that never send their exit statistics. A full pipe queues it like a mark (the
    /// mark that follows queues behind it); with no reader it is tried again before the next
    /// mark, so a process whose marks reach the recorder has announced itself.
    fn announce(&'static self) {
        if self.announced.swap(true, Ordering::Relaxed) {
            return;
        }
        if !self.counted.swap(true, Ordering::Relaxed) {
            shared::add(shared::PROCESSES, 1);
        }
        let mut buf = [0u8; 64];
        let n = stats_line(&mut buf, std::process::id(), None);
        match self.write_now(&buf[..n]) {
            Wrote::All => {}
            Wrote::Full => self.enqueue(&buf[..n], false),
            Wrote::Lost => self.announced.store(false, Ordering::Relaxed),
        }
    }

    /// One non-blocking write of `line` (at most `PIPE_BUF` bytes: all or nothing) from the
    /// calling thread, opening the FIFO if needed.
    fn write_now(&self, line: &[u8]) -> Wrote {
        let Some(fd) = self.writable_fd() else {
            return Wrote::Lost;
        };
        loop {
            match write_no_sigpipe(fd, line) {
                Ok(n) if n == line.len() => return Wrote::All,
                // A pipe write of at most PIPE_BUF bytes is never partial.
                Ok(_) => return Wrote::Lost,
                Err(libc::EAGAIN) => return Wrote::Full,
                Err(libc::EINTR) => continue,
                Err(_) => {
                    // EPIPE (the reader left) or another failure: reopen later.
                    self.broken();
                    return Wrote::Lost;
                }
            }
        }
    }

    /// The FIFO's descriptor if it is open with a reader; otherwise tries to open it (at most
    /// every 100 ms, one thread at a time).
    fn writable_fd(&self) -> Option<i32> {
        if self.usable.load(Ordering::Acquire) {
            return Some(self.fd.load(Ordering::Acquire));
        }
        if mono_ns() < self.retry_at_ns.load(Ordering::Relaxed)
            || self.reopening.swap(true, Ordering::Acquire)
        {
            return None;
        }
        // SAFETY: `path` is NUL-terminated. O_NONBLOCK: open fails with ENXIO instead of waiting
        // for a reader, and writes fail with EAGAIN instead of waiting for room.
        let new = unsafe {
            libc::open(
                self.path.as_ptr(),
                libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        let fd = if new < 0 {
            -1
        } else {
            let old = self.fd.load(Ordering::Acquire);
            if old < 0 {
                self.fd.store(new, Ordering::Release);
                new
            } else {
                // SAFETY: both descriptors are ours; dup3 replaces `old` atomically.
                let r = unsafe { libc::dup3(new, old, libc::O_CLOEXEC) };
                // SAFETY: `new` is ours and open.
                unsafe { libc::close(new) };
                if r < 0 { -1 } else { old }
            }
        };
        if fd >= 0 {
            self.usable.store(true, Ordering::Release);
        } else {
            self.retry_at_ns
                .store(mono_ns() + RETRY_NS, Ordering::Relaxed);
        }
        self.reopening.store(false, Ordering::Release);
        (fd >= 0).then_some(fd)
    }

    /// The reader left: writes fail until a reopen, tried after [`RETRY_NS`].
    fn broken(&self) {
        self.usable.store(false, Ordering::Release);
        self.retry_at_ns
            .store(mono_ns() + RETRY_NS, Ordering::Relaxed);
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
    /// did not survive the fork, and the counts start again for this process. The descriptor is
    /// inherited and stays valid: the child writes its lines itself from its first one.
    pub fn reset_after_fork(&self) {
        self.pending.reset_after_fork();
        let mut p = self.pending.lock();
        p.bytes.clear();
        p.draining = false;
        drop(p);
        self.reopening.store(false, Ordering::Relaxed);
        self.announced.store(false, Ordering::Relaxed);
        self.counted.store(false, Ordering::Relaxed);
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
        let mut batch: Vec<u8> = Vec::with_capacity(CAPACITY);
        let mut idle_ms = 1u64;
        loop {
            let exiting = self.exiting.load(Ordering::Acquire);
            {
                let mut p = self.pending.lock();
                std::mem::swap(&mut p.bytes, &mut batch);
                p.draining = !batch.is_empty();
            }
            if !batch.is_empty() {
                let lines = mark_lines(&batch);
                let sent = self.write_backlog(&batch);
                self.sent.fetch_add(sent, Ordering::Relaxed);
                self.dropped.fetch_add(lines - sent, Ordering::Relaxed);
                self.lost_io.fetch_add(lines - sent, Ordering::Relaxed);
                batch.clear();
                let mut p = self.pending.lock();
                // Lines queued meanwhile keep the backlog (and its order) until written.
                p.draining = false;
                drop(p);
                idle_ms = 1;
                continue;
            }
            if exiting {
                self.writer_done.store(true, Ordering::Release);
                return;
            }
            std::thread::sleep(Duration::from_millis(idle_ms));
            idle_ms = (idle_ms * 2).min(16);
        }
    }

    /// Writes whole lines in atomic pieces, waiting for room as long as the reader is there
    /// (this thread has SIGPIPE blocked). Returns the number of lines written.
    fn write_backlog(&self, data: &[u8]) -> u64 {
        let mut sent = 0u64;
        for piece in pieces(data) {
            loop {
                let Some(fd) = self.writable_fd() else {
                    return sent;
                };
                // SAFETY: `piece` is a valid slice; `fd` is open.
                let n = unsafe { libc::write(fd, piece.as_ptr().cast(), piece.len()) };
                if n as usize == piece.len() {
                    let lines = mark_lines(piece);
                    // At once, piece by piece: a process may end (`_exit`) at any moment.
                    shared::sub(shared::UNREPORTED, lines);
                    sent += lines;
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
                self.broken();
                return sent;
            }
        }
        sent
    }

    /// Writes one line, waiting for room in the pipe until `deadline` (only at exit: the
    /// statistics line must not be lost to a pipe that other processes keep full). Returns
    /// whether it was written.
    fn write_waiting(&self, line: &[u8], deadline: Instant) -> bool {
        loop {
            match self.write_now(line) {
                Wrote::All => return true,
                Wrote::Lost => return false,
                Wrote::Full => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.load(Ordering::Acquire),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd. Waking early (room taken by another writer) only loops.
            unsafe { libc::poll(&mut pfd, 1, left.as_millis().clamp(1, 100) as i32) };
        }
    }

    /// At process exit: lets the writer drain the backlog for up to [`EXIT_WAIT`], sends this
    /// process's statistics line, then reports losses on stderr. Returns the line printed, if
    /// any.
    pub fn finish(&self) -> Option<String> {
        // Unannounced with drops: no reader ever took the start line, but the losses are told.
        if !self.announced.load(Ordering::Relaxed)
            && self.queued.load(Ordering::Relaxed) == 0
            && self.dropped.load(Ordering::Relaxed) == 0
        {
            return None;
        }
        self.exiting.store(true, Ordering::Release);
        if self.writer_started.load(Ordering::Acquire) {
            let give_up = Instant::now() + EXIT_WAIT;
            while !self.writer_done.load(Ordering::Acquire) && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let queued = self.queued.load(Ordering::Relaxed);
        let sent = self.sent.load(Ordering::Relaxed);
        let dropped = self.dropped.load(Ordering::Relaxed);
        let lost_io = self.lost_io.load(Ordering::Relaxed);
        // Queued lines are sent, lost by the writer, or still waiting.
        let unsent = queued.saturating_sub(sent + lost_io);
        // What is still queued now is lost with the process: report it as dropped.
        let mut buf = [0u8; 96];
        let n = stats_line(&mut buf, std::process::id(), Some((sent, dropped + unsent)));
        if self.write_waiting(&buf[..n], Instant::now() + EXIT_WAIT) {
            // Reported: this process's drops and unsent lines are counted by the recorder.
            shared::sub(shared::UNREPORTED, dropped + unsent);
        }
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

/// The mark lines in `data` (whole lines): all but the control lines, which begin with `#`.
fn mark_lines(data: &[u8]) -> u64 {
    data.split_inclusive(|&b| b == b'\n')
        .filter(|l| l.last() == Some(&b'\n') && l.first() != Some(&b'#'))
        .count() as u64
}

/// `#flinch-nvtx pid=P start` (no counts) or `#flinch-nvtx pid=P marks=M dropped=D` (flinch-core's
/// marks lines) in `buf`; returns its length (0 when it does not fit, which the callers' buffers
/// rule out).
fn stats_line(buf: &mut [u8], pid: u32, counts: Option<(u64, u64)>) -> usize {
    match counts {
        None => marks_line::write_nvtx_start(buf, pid),
        Some((m, d)) => marks_line::write_nvtx_stats(buf, pid, m, d),
    }
    .unwrap_or(0)
}

/// Delay before reopening the FIFO after a failed open or a broken write.
const RETRY_NS: u64 = 100_000_000;

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `write(fd, buf)` from any thread of the host program without a SIGPIPE reaching it: SIGPIPE
/// is blocked in the calling thread for the call, and one the write raised (EPIPE) is taken back
/// before the old mask returns. When the program already blocks SIGPIPE in this thread, its
/// mask is left alone and the signal stays pending as it would without this library.
fn write_no_sigpipe(fd: i32, buf: &[u8]) -> Result<usize, i32> {
    // SAFETY: plain libc calls on local, initialized signal sets and a valid slice.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let n = libc::write(fd, buf.as_ptr().cast(), buf.len());
        let err = if n < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        } else {
            0
        };
        let was_blocked = libc::sigismember(&old, libc::SIGPIPE) == 1;
        if !was_blocked {
            if err == libc::EPIPE {
                // Not blocked before, so nothing was pending before: this one is ours.
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&set, std::ptr::null_mut(), &zero);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        if n < 0 { Err(err) } else { Ok(n as usize) }
    }
}

fn block_sigpipe() {
    // The writer thread waits on the pipe with plain writes: blocked here for good, a vanished
    // reader is an EPIPE in this thread only, never a signal to the program.
    // SAFETY: plain libc calls on a local, initialized signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
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
