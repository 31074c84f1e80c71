//! Clocks for the sampler: the real CLOCK_MONOTONIC / CLOCK_REALTIME pair with absolute-deadline
//! sleeps, and a virtual clock for tests and deterministic recordings.
use std::sync::atomic::{AtomicU64, Ordering};

/// The time source the sampler and the marks reader use. `sleep_until` takes an absolute
/// CLOCK_MONOTONIC deadline, so a loop of deadlines `start + k * interval` never drifts.
pub trait Clock: Send + Sync {
    /// CLOCK_MONOTONIC in nanoseconds (what `t_mono_ns` holds).
    fn mono_ns(&self) -> u64;
    /// CLOCK_REALTIME in nanoseconds since the Unix epoch (what `t_wall_ns` holds).
    fn wall_ns(&self) -> u64;
    /// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (returns at once if it has passed).
    fn sleep_until(&self, deadline_ns: u64);
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in nanoseconds (the clock `flinch-trace mark` stamps with).
pub fn mono_now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The real clocks: CLOCK_MONOTONIC, CLOCK_REALTIME, `clock_nanosleep(TIMER_ABSTIME)`.
pub struct SystemClock;

impl Clock for SystemClock {
    fn mono_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC)
    }

    fn wall_ns(&self) -> u64 {
        clock_ns(libc::CLOCK_REALTIME)
    }

    fn sleep_until(&self, deadline_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        };
        loop {
            // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with
            // TIMER_ABSTIME.
            let rc = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            // An absolute deadline is simply retried after a signal: no drift accumulates.
            if rc != libc::EINTR {
                return;
            }
        }
    }
}

/// A virtual clock: sleeping jumps straight to the deadline, and every reading of the monotonic
/// clock advances it by `step_ns` (a stand-in for the cost of the work between readings). The
/// wall clock is the monotonic clock plus a fixed offset. Deterministic, so a recording made with
/// it and a scripted source is byte-for-byte reproducible.
pub struct FakeClock {
    now_ns: AtomicU64,
    step_ns: u64,
    wall_offset_ns: u64,
}

impl FakeClock {
    /// Monotonic time where a fake recording starts (1000 s after "boot").
    pub const START_MONO_NS: u64 = 1_000_000_000_000;
    /// Wall-clock offset of a fake recording (2023-11-14T22:13:20Z at `START_MONO_NS`).
    pub const WALL_OFFSET_NS: u64 = 1_700_000_000_000_000_000 - Self::START_MONO_NS;

    /// A clock at [`Self::START_MONO_NS`] that advances `step_ns` per monotonic reading.
    pub fn new(step_ns: u64) -> Self {
        FakeClock {
            now_ns: AtomicU64::new(Self::START_MONO_NS),
            step_ns,
            wall_offset_ns: Self::WALL_OFFSET_NS,
        }
    }
}

impl Clock for FakeClock {
    fn mono_ns(&self) -> u64 {
        self.now_ns.fetch_add(self.step_ns, Ordering::SeqCst)
    }

    fn wall_ns(&self) -> u64 {
        self.now_ns.load(Ordering::SeqCst) + self.wall_offset_ns
    }

    fn sleep_until(&self, deadline_ns: u64) {
        self.now_ns.fetch_max(deadline_ns, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_steps_and_sleeps_to_deadline() {
        let c = FakeClock::new(10);
        assert_eq!(c.mono_ns(), FakeClock::START_MONO_NS);
        assert_eq!(c.mono_ns(), FakeClock::START_MONO_NS + 10);
        c.sleep_until(FakeClock::START_MONO_NS + 1000);
        assert_eq!(c.mono_ns(), FakeClock::START_MONO_NS + 1000);
        // A deadline in the past does not move the clock back.
        c.sleep_until(5);
        assert_eq!(c.mono_ns(), FakeClock::START_MONO_NS + 1010);
        assert_eq!(
            c.wall_ns(),
            FakeClock::START_MONO_NS + 1020 + FakeClock::WALL_OFFSET_NS
        );
    }

    #[test]
    fn system_clock_sleeps_until_an_absolute_deadline() {
        let c = SystemClock;
        let t0 = c.mono_ns();
        assert!(t0 > 0);
        c.sleep_until(t0 + 2_000_000);
        let t1 = c.mono_ns();
        assert!(
            t1 >= t0 + 2_000_000,
            "woke {} ns early",
            t0 + 2_000_000 - t1
        );
        // The wall clock is after 2020 and moving.
        assert!(c.wall_ns() > 1_577_836_800_000_000_000);
    }
}
