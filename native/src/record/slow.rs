//! The slow GPU queries (energy counter, memory in use), read on a thread of their own.
//!
//! `nvmlDeviceGetTotalEnergyConsumption` can take milliseconds per call where the other per-tick
//! queries take microseconds, and `nvmlDeviceGetMemoryInfo` waits for it (the driver lock), so
//! read in the sampling loop they would make a 10 ms sampler miss ticks (the H200 figures:
//! BENCHMARKS.md). The counter itself moves only every 10-100 ms (docs/numerics.md), and memory
//! use is no fast signal, so both are read on their own grid by this poller and each SAMPLE row
//! carries the latest values read: their age is at most one interval plus one read, inside the
//! counter's own update period. The poller's read latency goes to the sidecar's health.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::clock::Clock;
use super::health::Histogram;

/// What the poller reads of one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SlowReading {
    /// Total energy counter since the driver loaded, mJ.
    pub energy_mj: Option<u64>,
    /// Device memory in use, MiB.
    pub mem_used_mib: Option<u64>,
}

/// Reads the slow queries of each selected GPU. Slow on some GPUs, so it runs on the poller's
/// thread, never in the sampling loop.
pub trait SlowReader: Send {
    /// How many GPUs (slots, in sampling order).
    fn slots(&self) -> usize;
    /// The slow queries of GPU `slot`.
    fn read(&mut self, slot: usize) -> SlowReading;
}

struct Shared {
    latest: Mutex<Vec<SlowReading>>,
    done: AtomicBool,
}

/// A running poller: the latest values, and the thread that reads them.
pub struct SlowPoller {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<Histogram>>,
}

/// Reads every slot into `out`, timing each read into `hist`.
fn read_all(
    reader: &mut dyn SlowReader,
    clock: &dyn Clock,
    out: &mut [SlowReading],
    hist: &mut Histogram,
) {
    for (slot, v) in out.iter_mut().enumerate() {
        let t0 = clock.mono_ns();
        *v = reader.read(slot);
        hist.add(clock.mono_ns().saturating_sub(t0));
    }
}

impl SlowPoller {
    /// Reads every GPU once (so the first row already has the values), then keeps reading them on
    /// the grid `start_ns + k * interval_ns` (late deadlines skipped) until [`Self::finish`].
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start(
        mut reader: Box<dyn SlowReader>,
        clock: Arc<dyn Clock>,
        start_ns: u64,
        interval_ns: u64,
    ) -> std::io::Result<SlowPoller> {
        let n = reader.slots();
        let mut hist = Histogram::default();
        let mut values = vec![SlowReading::default(); n];
        read_all(&mut *reader, &*clock, &mut values, &mut hist);
        let shared = Arc::new(Shared {
            latest: Mutex::new(values.clone()),
            done: AtomicBool::new(false),
        });
        let thread_shared = shared.clone();
        let interval = interval_ns.max(1);
        let handle = std::thread::Builder::new()
            .name("flinch-slow-nvml".into())
            .spawn(move || {
                let s = thread_shared;
                loop {
                    let now = clock.mono_ns();
                    let deadline =
                        start_ns + (now.saturating_sub(start_ns) / interval + 1) * interval;
                    // Sleep in slices so that `finish` is noticed within 50 ms.
                    loop {
                        if s.done.load(Ordering::Relaxed) {
                            return hist;
                        }
                        let now = clock.mono_ns();
                        if now >= deadline {
                            break;
                        }
                        clock.sleep_until(deadline.min(now + 50_000_000));
                    }
                    read_all(&mut *reader, &*clock, &mut values, &mut hist);
                    if let Ok(mut l) = s.latest.lock() {
                        l.copy_from_slice(&values);
                    }
                }
            })?;
        Ok(SlowPoller {
            shared,
            handle: Some(handle),
        })
    }

    /// The latest values of GPU `slot`.
    pub fn latest(&self, slot: usize) -> SlowReading {
        self.shared
            .latest
            .lock()
            .ok()
            .and_then(|l| l.get(slot).copied())
            .unwrap_or_default()
    }

    /// Stops the thread; returns the read latencies (ns), one per slot per read.
    pub fn finish(mut self) -> Histogram {
        self.shared.done.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for SlowPoller {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::clock::SystemClock;
    use std::time::Duration;

    /// Counts reads; each read returns the count so far (per slot) and takes `delay`.
    struct Counting {
        reads: Vec<u64>,
        delay: Duration,
    }

    impl SlowReader for Counting {
        fn slots(&self) -> usize {
            self.reads.len()
        }
        fn read(&mut self, slot: usize) -> SlowReading {
            std::thread::sleep(self.delay);
            self.reads[slot] += 1;
            SlowReading {
                energy_mj: (slot != 1).then_some(1000 * slot as u64 + self.reads[slot]),
                mem_used_mib: Some(7),
            }
        }
    }

    #[test]
    fn first_reading_is_there_at_once_then_it_keeps_reading_until_finished() {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let start = clock.mono_ns();
        let reader = Box::new(Counting {
            reads: vec![0; 3],
            delay: Duration::from_millis(1),
        });
        let p = SlowPoller::start(reader, clock, start, 2_000_000).unwrap();
        // The synchronous first read: slot 0 read once, slot 1 unavailable, slot 2 read once.
        let first0 = p.latest(0).energy_mj.unwrap();
        assert!(first0 >= 1);
        assert_eq!(p.latest(0).mem_used_mib, Some(7));
        assert_eq!(p.latest(1).energy_mj, None);
        assert!(p.latest(2).energy_mj.unwrap() >= 2001);
        assert_eq!(p.latest(3), SlowReading::default());
        // It goes on reading on its own thread.
        let t0 = std::time::Instant::now();
        while p.latest(0).energy_mj == Some(first0) && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let later = p.latest(0).energy_mj.unwrap();
        assert!(later > first0, "no second reading in 20 s");
        let hist = p.finish();
        // Every read was timed, each at least the 1 ms the reader sleeps.
        assert!(hist.quantile(0.0).unwrap() >= 900_000.0);
        assert!(hist.max().is_some());
    }

    #[test]
    fn dropping_a_poller_stops_its_thread() {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let start = clock.mono_ns();
        let reader = Box::new(Counting {
            reads: vec![0; 1],
            delay: Duration::ZERO,
        });
        let p = SlowPoller::start(reader, clock, start, 1_000_000_000).unwrap();
        let t0 = std::time::Instant::now();
        drop(p);
        // It notices within one 50 ms sleep slice, not after the 1 s interval.
        assert!(t0.elapsed() < Duration::from_millis(900));
    }
}
