//! A plain trace file mapped read-only into memory, so that the scan threads read it where it
//! lies in the page cache instead of copying it out with `pread` (the copy took ~13% of all
//! CPU time of `flinch-trace trace` on a plain 1 GB trace; BENCHMARKS.md, "Trace engine").
//! Pages a reader is done with are dropped from the process ([`Mapping::release`]) so that its
//! resident size stays bounded whatever the file's size.
//!
//! A mapping has one hazard that reads do not: when another process truncates the file while
//! it is mapped, touching a page past the new end raises SIGBUS, whose default action kills
//! the process without a word. So the first mapping installs a SIGBUS handler, and every
//! mapping registers its address range (and the error line to print) in a fixed table of
//! [`SLOTS`] while it lives. A fault in a registered range ends the process with one line on
//! stderr, written with async-signal-safe calls only (`write(2)`, then `_exit(2)` with status
//! 1, the status of other trace errors):
//!
//! ```text
//! flinch-trace: error: FILE: the file got shorter while it was being read (at byte N)
//! ```
//!
//! Any other SIGBUS is not swallowed. For a fault elsewhere, the handler restores the
//! disposition it replaced (the default, or the Rust runtime's stack-guard handler) and returns:
//! the faulting access runs again and faults again, handled as it would have been without us
//! (a core dump, or Rust's stack-overflow report). A SIGBUS sent by a process (`kill`) has no
//! access to re-run: the handler restores the default action and re-raises it.
//!
//! A file cut within its last page does not fault: the rest of that page reads as zeros. The
//! caller catches that by checking the file's size after the scan ([`check_size`]).
//!
//! Only on Linux (the fault codes and `MADV_DONTNEED`'s meaning are Linux's); elsewhere, and
//! whenever a mapping cannot be made (a special file, an address space too small, no free
//! slot), [`Mapping::new`] returns `None` and the caller reads the file with `pread` as before.
//! (`MADV_SEQUENTIAL`, `MADV_WILLNEED` and `MADV_POPULATE_READ` per segment were measured too:
//! no gain on a cached file, so none is used.)
//!
//! Test hook: when the environment variable [`PAUSE_ENV`] is set, [`test_pause`] (called by
//! the caller right after mapping) prints `flinch-trace: test pause: mapped` on stderr and
//! waits for a line on stdin, so that a test can truncate the file at a known point
//! (`native/tests/trace_truncated.rs`). It does nothing else and is meant for tests only.
use std::fs::File;

/// The environment variable of the test hook (see the module docs).
pub const PAUSE_ENV: &str = "FLINCH_TRACE_TEST_PAUSE_AFTER_MAP";

/// At a pause of the test hook: prints a line on stderr and waits for one on stdin.
pub fn test_pause() {
    if std::env::var_os(PAUSE_ENV).is_some() {
        eprintln!("flinch-trace: test pause: mapped");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}

#[cfg(target_os = "linux")]
pub use linux::Mapping;

#[cfg(not(target_os = "linux"))]
pub use other::Mapping;

#[cfg(not(target_os = "linux"))]
mod other {
    use std::fs::File;

    /// No mapping off Linux: [`Mapping::new`] is always `None`.
    pub enum Mapping {}

    impl Mapping {
        /// Always `None` here (the caller reads the file instead).
        pub fn new(_file: &File, _len: u64, _source: &str) -> Option<Mapping> {
            None
        }
        /// The mapped bytes.
        pub fn bytes(&self) -> &[u8] {
            match *self {}
        }
        /// See the Linux version.
        pub fn release(&self, _start: usize, _end: usize) -> usize {
            match *self {}
        }
    }
}

/// Checks, after a mapped file was read, that it is still at least `len` bytes long: a file
/// cut within its last mapped page does not fault (the rest of that page reads as zeros).
///
/// # Errors
/// The error message when the file got shorter (or its size cannot be read).
pub fn check_size(file: &File, len: u64) -> Result<(), String> {
    match file.metadata() {
        Ok(m) if m.len() >= len => Ok(()),
        Ok(m) => Err(format!(
            "the file got shorter while it was being read (at byte {})",
            m.len()
        )),
        Err(e) => Err(format!(
            "cannot check the file's size after reading it: {e}"
        )),
    }
}

/// Live mappings at most (one per file being read; `flinch-trace summarize` reads up to 4
/// traces at once). With none free, the caller reads instead of mapping.
pub const SLOTS: usize = 16;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::c_void;
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::ptr::{self, NonNull};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

    use super::SLOTS;

    /// A file mapped read-only, its range registered with the SIGBUS handler.
    pub struct Mapping {
        ptr: NonNull<u8>,
        len: usize,
        slot: usize,
    }

    // SAFETY: the mapping is read-only memory owned by this value (unmapped only on drop);
    // reading it from several threads at once is as safe as sharing a `&[u8]`.
    unsafe impl Send for Mapping {}
    // SAFETY: as above; no method mutates through `&self` (advice changes only which pages are
    // resident, never the bytes read).
    unsafe impl Sync for Mapping {}

    /// One registered mapping: its address range and the start of its error line.
    struct Slot {
        /// Taken by a live mapping (set before, cleared after, the fields below).
        taken: AtomicBool,
        /// First mapped address; 0 while the slot is not live.
        start: AtomicUsize,
        len: AtomicUsize,
        /// `flinch-trace: error: FILE: ... (at byte ` (a leaked `Box<[u8]>`, freed on drop).
        msg: AtomicPtr<u8>,
        msg_len: AtomicUsize,
    }

    static TABLE: [Slot; SLOTS] = [const {
        Slot {
            taken: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            msg: AtomicPtr::new(ptr::null_mut()),
            msg_len: AtomicUsize::new(0),
        }
    }; SLOTS];

    /// The SIGBUS disposition our handler replaced.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    /// Whether our handler is installed (set once, by the first mapping).
    static INSTALLED: OnceLock<bool> = OnceLock::new();

    impl Mapping {
        /// Maps the first `len` bytes of `file` read-only and registers them with the SIGBUS
        /// handler (installed on first use), the error line naming `source`. `None` when the
        /// file cannot be mapped, the handler cannot be installed, or no slot is free.
        pub fn new(file: &File, len: u64, source: &str) -> Option<Mapping> {
            let len = usize::try_from(len).ok().filter(|&n| n > 0)?;
            if !*INSTALLED.get_or_init(install) {
                return None;
            }
            let slot = TABLE.iter().position(|s| {
                s.taken
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })?;
            // SAFETY: a fresh read-only shared mapping of an open file descriptor at offset 0;
            // the kernel picks the address, so no existing memory is replaced. The result is
            // checked against MAP_FAILED before use.
            let p = unsafe {
                libc::mmap(
                    ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            let Some(ptr) = NonNull::new(p.cast::<u8>()).filter(|_| p != libc::MAP_FAILED) else {
                TABLE[slot].taken.store(false, Ordering::Release);
                return None;
            };
            let msg: Box<[u8]> = format!(
                "flinch-trace: error: {source}: the file got shorter while it was being read \
                 (at byte "
            )
            .into_bytes()
            .into_boxed_slice();
            let s = &TABLE[slot];
            s.msg_len.store(msg.len(), Ordering::Relaxed);
            s.msg
                .store(Box::into_raw(msg).cast::<u8>(), Ordering::Relaxed);
            s.len.store(len, Ordering::Relaxed);
            // Publishes the fields above to the handler (which loads `start` first, Acquire).
            s.start.store(ptr.as_ptr() as usize, Ordering::Release);
            Some(Mapping { ptr, len, slot })
        }

        /// The mapped bytes. Reading them raises SIGBUS past the file's end when the file got
        /// shorter meanwhile, which the handler reports (see the module docs).
        pub fn bytes(&self) -> &[u8] {
            // SAFETY: `ptr..ptr + len` is a live read-only mapping owned by `self` (unmapped
            // only in `drop`, which needs `&mut self`), so the slice cannot outlive it; nothing
            // writes to it (PROT_READ). A page past a shortened file's end faults on access
            // instead of yielding bytes; the handler ends the process then.
            unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
        }

        /// Done with the bytes `start..end` (every reader): drops the pages of the whole
        /// [`BLOCK_BYTES`] blocks inside it from the process (`MADV_DONTNEED`), so that its
        /// resident size stays bounded; returns where the dropped range ends (at most `end`),
        /// where the caller's next range should start. The data stays in the page cache and a
        /// later read maps it again, so this changes speed and resident size only. Pages in
        /// the partial blocks at either end stay: a fault maps the cached pages around it, up
        /// to the page-cache folio that holds it (at most a block, aligned), so a reader just
        /// past `end` (or before `start`) may map them again anyway. Each call interrupts the
        /// process's other CPUs to flush their TLBs: release a few MiB at a time.
        pub fn release(&self, start: usize, end: usize) -> usize {
            let from = start.div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
            let to = end.min(self.len) / BLOCK_BYTES * BLOCK_BYTES;
            if from < to {
                // SAFETY: `from..to` lies within this mapping, block- and so page-aligned.
                // MADV_DONTNEED on a read-only shared file mapping drops pages that the next
                // read maps again from the page cache, with the same bytes, so no `&[u8]` from
                // `bytes` sees a change.
                unsafe {
                    libc::madvise(
                        self.ptr.as_ptr().add(from).cast(),
                        to - from,
                        libc::MADV_DONTNEED,
                    );
                }
            }
            to.max(start.min(end))
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            let s = &TABLE[self.slot];
            s.start.store(0, Ordering::Release);
            // SAFETY: the range is this value's own mapping, and no slice of it is alive (they
            // borrow `self`). After munmap, nothing reads the message but the handler for a
            // registered range, and this range is no longer registered.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.len);
                let msg = s.msg.swap(ptr::null_mut(), Ordering::Relaxed);
                let n = s.msg_len.load(Ordering::Relaxed);
                drop(Box::from_raw(ptr::slice_from_raw_parts_mut(msg, n)));
            }
            s.taken.store(false, Ordering::Release);
        }
    }

    /// The largest page-cache folio whose pages one fault maps (a PMD: 2 MiB with 4 KiB
    /// pages): the unit of [`Mapping::release`].
    const BLOCK_BYTES: usize = 2 << 20;

    #[cfg(test)]
    fn page_bytes() -> usize {
        static PAGE: OnceLock<usize> = OnceLock::new();
        // SAFETY: sysconf has no preconditions.
        *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            n if n > 0 => n as usize,
            _ => 4096,
        })
    }

    /// Installs the handler, keeping the disposition it replaces; whether it worked.
    fn install() -> bool {
        // SAFETY: sigaction with valid pointers to zero-initialized (valid) sigaction values;
        // the handler has the SA_SIGINFO signature and is async-signal-safe (see `on_sigbus`).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, ptr::null(), &mut old) != 0 {
                return false;
            }
            let _ = PREVIOUS.set(old);
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(libc::SIGBUS, &new, ptr::null_mut()) == 0
        }
    }

    /// The SIGBUS handler. Async-signal-safe: atomics, `write`, `_exit`, `sigaction`, `raise`.
    extern "C" fn on_sigbus(signum: libc::c_int, info: *mut libc::siginfo_t, _: *mut c_void) {
        // SAFETY: for an SA_SIGINFO handler the kernel passes a valid siginfo_t; si_addr is
        // meaningful for a fault (si_code BUS_ADRERR), which is all it is used for.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        if code == libc::BUS_ADRERR {
            for s in &TABLE {
                let start = s.start.load(Ordering::Acquire);
                if start != 0 && addr.wrapping_sub(start) < s.len.load(Ordering::Relaxed) {
                    let msg = s.msg.load(Ordering::Relaxed);
                    let n = s.msg_len.load(Ordering::Relaxed);
                    let mut digits = [0u8; 20];
                    let d = decimal((addr - start) as u64, &mut digits);
                    // SAFETY: the message is the live slot's (freed only after `start` is
                    // cleared, and the faulting thread was reading this mapping); write and
                    // _exit are async-signal-safe.
                    unsafe {
                        write_all(msg, n);
                        write_all(d.as_ptr(), d.len());
                        write_all(b")\n".as_ptr(), 2);
                        libc::_exit(1);
                    }
                }
            }
        }
        // Not ours. A fault: restore what was there before and return to re-run the faulting
        // access, which faults again, handled as without us. A sent signal (si_code <= 0):
        // restore the default action and re-raise it; it is delivered, and ends the process,
        // when this handler returns.
        // SAFETY: sigaction and raise are async-signal-safe; the stored disposition is a valid
        // sigaction value read back from the kernel, the other a zeroed one with SIG_DFL.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            let restore = match PREVIOUS.get() {
                Some(prev) if code > 0 => prev,
                _ => &dfl,
            };
            libc::sigaction(signum, restore, ptr::null_mut());
            if code <= 0 {
                libc::raise(signum);
            }
        }
    }

    /// `v` in decimal, in the tail of `buf`.
    fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                return &buf[i..];
            }
        }
    }

    /// Writes `n` bytes at `p` to stderr, retrying short writes; gives up on an error.
    ///
    /// # Safety
    /// `p..p + n` must be readable.
    unsafe fn write_all(mut p: *const u8, mut n: usize) {
        while n > 0 {
            // SAFETY: the caller guarantees `p..p + n` is readable.
            let w = unsafe { libc::write(2, p.cast(), n) };
            if w > 0 {
                // SAFETY: `w <= n` bytes were written, so `p + w` stays within the range.
                p = unsafe { p.add(w as usize) };
                n -= w as usize;
            // SAFETY: __errno_location returns this thread's errno, always valid.
            } else if w < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            } else {
                return;
            }
        }
    }

    /// The handler runs in child processes (this test binary re-run with one test and
    /// [`CHILD_ENV`] set), since its job is to end the process.
    #[cfg(test)]
    mod tests {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        use std::path::PathBuf;
        use std::process::{Command, Output};

        use super::*;

        const CHILD_ENV: &str = "FLINCH_MAPPED_TEST_CHILD";

        /// Whether this process is the child of test `name`.
        fn in_child(name: &str) -> bool {
            std::env::var(CHILD_ENV).as_deref() == Ok(name)
        }

        /// Runs test `name` (of this module) alone in a child process, without core dumps.
        fn child(name: &str) -> Output {
            let path = module_path!().split_once("::").unwrap().1;
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args([&format!("{path}::{name}"), "--exact", "--nocapture"])
                .args(["--test-threads=1"])
                .env(CHILD_ENV, name);
            // SAFETY: setrlimit is async-signal-safe, as a pre_exec closure must be.
            unsafe {
                cmd.pre_exec(|| {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    libc::setrlimit(libc::RLIMIT_CORE, &none);
                    Ok(())
                });
            }
            cmd.output().unwrap()
        }

        /// A file of `pages` pages of `x` under a per-process folder.
        fn file(name: &str, pages: usize) -> (PathBuf, File) {
            let dir = std::env::temp_dir().join(format!("flinch-mapped-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join(name);
            std::fs::write(&p, vec![b'x'; pages * page_bytes()]).unwrap();
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&p)
                .unwrap();
            (p, f)
        }

        #[test]
        fn a_fault_in_a_shortened_mapping_ends_the_process_with_one_line() {
            let name = "a_fault_in_a_shortened_mapping_ends_the_process_with_one_line";
            let page = page_bytes();
            if in_child(name) {
                let (_, f) = file("ours.json", 4);
                let m = Mapping::new(&f, 4 * page as u64, "dir/ours.json").unwrap();
                assert_eq!(m.bytes()[3 * page + 5], b'x');
                m.release(0, 4 * page);
                f.set_len(page as u64).unwrap();
                assert_eq!(m.bytes()[5], b'x');
                // SAFETY: within the mapping; the read faults (the file is one page now).
                let b = unsafe { std::ptr::read_volatile(&m.bytes()[3 * page + 5]) };
                panic!("read {b} past the end of a shortened file");
            }
            let out = child(name);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{:?}: {stderr}", out.status);
            let line = format!(
                "flinch-trace: error: dir/ours.json: the file got shorter while it was being \
                 read (at byte {})\n",
                3 * page + 5
            );
            assert!(stderr.ends_with(&line), "{stderr}");
            assert_eq!(stderr.matches("got shorter").count(), 1, "{stderr}");
        }

        #[test]
        fn a_fault_elsewhere_still_kills_by_sigbus() {
            let name = "a_fault_elsewhere_still_kills_by_sigbus";
            let page = page_bytes();
            if in_child(name) {
                let (_, ours) = file("ours2.json", 2);
                let _m = Mapping::new(&ours, 2 * page as u64, "ours2.json").unwrap();
                let (_, other) = file("other.bin", 4);
                // SAFETY: a fresh read-only mapping of an open file, checked before use.
                let p = unsafe {
                    libc::mmap(
                        ptr::null_mut(),
                        4 * page,
                        libc::PROT_READ,
                        libc::MAP_SHARED,
                        other.as_raw_fd(),
                        0,
                    )
                };
                assert_ne!(p, libc::MAP_FAILED);
                other.set_len(page as u64).unwrap();
                // SAFETY: within that mapping; the read faults (the file is one page now).
                let b = unsafe { std::ptr::read_volatile(p.cast::<u8>().add(3 * page)) };
                panic!("read {b} past the end of a shortened file");
            }
            let out = child(name);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{stderr}");
            assert!(!stderr.contains("got shorter"), "{stderr}");
        }

        #[test]
        fn a_sent_sigbus_still_kills() {
            let name = "a_sent_sigbus_still_kills";
            if in_child(name) {
                let (_, f) = file("ours3.json", 1);
                let _m = Mapping::new(&f, page_bytes() as u64, "ours3.json").unwrap();
                // SAFETY: raise has no preconditions.
                unsafe { libc::raise(libc::SIGBUS) };
                panic!("survived a SIGBUS");
            }
            let out = child(name);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{stderr}");
            assert!(!stderr.contains("got shorter"), "{stderr}");
        }

        #[test]
        fn maps_a_file_and_frees_its_slot() {
            let (_, f) = file("slots.json", 3);
            let len = 3 * page_bytes();
            // More mappings, one after another, than there are slots.
            for _ in 0..2 * SLOTS {
                let m = Mapping::new(&f, len as u64, "slots.json").unwrap();
                assert!(m.bytes().len() == len && m.bytes().iter().all(|&b| b == b'x'));
                assert_eq!(m.release(page_bytes() + 1, len), page_bytes() + 1);
                assert_eq!(m.bytes()[len - 1], b'x');
            }
            assert!(Mapping::new(&f, 0, "empty").is_none());
        }

        #[test]
        fn decimal_digits() {
            let mut b = [0u8; 20];
            assert_eq!(decimal(0, &mut b), b"0");
            assert_eq!(decimal(1_048_576, &mut b), b"1048576");
            assert_eq!(decimal(u64::MAX, &mut b), b"18446744073709551615");
        }
    }
}
