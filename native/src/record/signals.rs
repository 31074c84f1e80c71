//! SIGINT / SIGTERM: blocked in every thread and taken by one thread with `sigtimedwait`, so no
//! async-signal-safety concerns and no interrupted writes. Without a child, a signal ends the
//! recording. With a child, the first is forwarded to the child (unless it came from the
//! terminal, which already sent it to the whole foreground process group) and the recording lasts
//! until the child exits; a second one kills the child (SIGKILL), so the recorder never waits on
//! a command that ignores signals.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::JoinHandle;

/// Shared state between the signal thread and the rest of the recorder.
#[derive(Default)]
pub struct StopState {
    /// Set when the recording should end.
    pub stop: AtomicBool,
    /// The signal that ended it (0: none).
    pub signal: AtomicI32,
    /// The child's pid (0: none).
    pub child_pid: AtomicI32,
    done: AtomicBool,
}

fn term_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialize and fill a local sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread it starts afterwards), then
/// starts the thread that waits for them. Call before starting any other thread.
pub fn start(state: Arc<StopState>) -> Option<JoinHandle<()>> {
    let set = term_set();
    // SAFETY: `set` is initialized; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    std::thread::Builder::new()
        .name("flinch-signals".into())
        .spawn(move || {
            let timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            };
            let mut forwarded = 0u32;
            while !state.done.load(Ordering::SeqCst) {
                // SAFETY: zeroed siginfo_t is a valid out-parameter.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: valid set, info and timeout pointers.
                let sig = unsafe { libc::sigtimedwait(&set, &mut info, &timeout) };
                if sig <= 0 {
                    continue;
                }
                state.signal.store(sig, Ordering::SeqCst);
                let child = state.child_pid.load(Ordering::SeqCst);
                if child > 0 {
                    forwarded += 1;
                    if forwarded >= 2 {
                        // A command that outlives one SIGINT/SIGTERM must not hold the
                        // recorder: the second one kills it, and the recording ends as usual.
                        eprintln!(
                            "flinch-trace record: {} again: killing the command (SIGKILL)",
                            name(sig)
                        );
                        // SAFETY: kill has no memory-safety preconditions.
                        unsafe { libc::kill(child, libc::SIGKILL) };
                        continue;
                    }
                    eprintln!(
                        "flinch-trace record: {} passed to the command; the recording ends when \
                         it exits (send it again to kill the command)",
                        name(sig)
                    );
                    // From the terminal (SI_KERNEL) the child got it already, as part of the
                    // foreground process group; a kill(2) aimed at us (SI_USER) is forwarded.
                    if info.si_code != libc::SI_KERNEL {
                        // SAFETY: kill has no memory-safety preconditions.
                        unsafe { libc::kill(child, sig) };
                    }
                } else {
                    state.stop.store(true, Ordering::SeqCst);
                }
            }
        })
        .ok()
}

/// Makes the command start with SIGINT/SIGTERM unblocked (the recorder blocks them in all its
/// threads, and a spawned child would otherwise inherit that mask), and with SIGXFSZ as the
/// recorder found it.
pub fn unblock_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let set = term_set();
    let xfsz_default = crate::output::file_size_signal_was_default();
    // SAFETY: pthread_sigmask and signal are async-signal-safe; `set` is a plain copied value.
    unsafe {
        cmd.pre_exec(move || {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            if xfsz_default {
                // The recorder ignores SIGXFSZ for its own files; the command keeps what it had.
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// Ends the signal thread (it notices within 100 ms).
pub fn finish(state: &StopState, join: Option<JoinHandle<()>>) {
    state.done.store(true, Ordering::SeqCst);
    if let Some(j) = join {
        let _ = j.join();
    }
}

/// Name of a signal for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
