//! The sampling loop: absolute CLOCK_MONOTONIC deadlines `start + k * interval`, late deadlines
//! skipped and counted (never bunched), one SAMPLE row per selected GPU per tick.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::clock::{Clock, thread_cpu_ns};
use super::gpu::{GpuReading, GpuSource};
use super::health::Health;
use super::host::{Host, HostReading};
use super::jsonl::{host_row, push_line};
use super::rapl::Rapl;
use super::slow::SlowPoller;
use super::writer::{Msg, RowSender, TickFields, push_mark_row, push_sample_row};

const SEND_BYTES: usize = 8 * 1024;
const SEND_EVERY_NS: u64 = 50_000_000;

/// How the loop runs.
pub struct SamplerConfig {
    /// Tick period, ns.
    pub interval_ns: u64,
    /// The last tick is at this CLOCK_MONOTONIC time (`None`: until stopped).
    pub end_mono_ns: Option<u64>,
    /// Host (/proc) reading period, ns.
    pub host_every_ns: u64,
    /// Host-telemetry JSONL period, ns (`None`: no JSONL).
    pub jsonl_every_ns: Option<u64>,
    /// CSV column count.
    pub n_cols: usize,
    /// When the recording starts (first deadline), CLOCK_MONOTONIC ns.
    pub start_mono_ns: u64,
    /// Kept equal to the missed-tick count while recording (`record --metrics` reads it).
    pub missed_ticks: Arc<AtomicU64>,
}

/// Everything the loop reads from.
pub struct Sources {
    /// The GPUs (`None`: no GPU).
    pub gpu: Option<Box<dyn GpuSource>>,
    /// RAPL zones.
    pub rapl: Rapl,
    /// The host (`None`: `--no-host`).
    pub host: Option<Host>,
}

/// The first point of the grid `start + k * every` after `now` (slower schedules stay on their
/// own grid whatever the lateness of the tick that served them).
fn next_on_grid(start: u64, every: u64, now: u64) -> u64 {
    let every = every.max(1);
    start + (now.saturating_sub(start) / every + 1) * every
}

/// Runs the loop until the end time, `stop`, or a writer failure; returns the health counters.
pub fn run(
    cfg: &SamplerConfig,
    clock: &Arc<dyn Clock>,
    mut src: Sources,
    sender: &RowSender,
    stop: &AtomicBool,
) -> Health {
    let mut health = Health::default();
    let cpu0 = thread_cpu_ns();
    let interval = cfg.interval_ns.max(1);
    let start = cfg.start_mono_ns;
    let n_gpus = src.gpu.as_ref().map_or(0, |g| g.info().len());
    let mut readings = vec![GpuReading::default(); n_gpus];
    // Queries that are slow (NVML's energy counter on Hopper, and memory use, which waits for
    // it) come from their own thread.
    let poller = match src.gpu.as_mut().and_then(|g| g.split_slow()) {
        Some(reader) => match SlowPoller::start(reader, clock.clone(), start, interval) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!(
                    "warning: cannot start the slow-query thread ({e}); gpu_energy_mJ and gpu_mem_used_MiB stay empty"
                );
                None
            }
        },
        None => None,
    };
    let mut prev_power: Vec<Option<f64>> = vec![None; n_gpus];
    let mut rapl_vals: Vec<Option<u64>> = vec![None; src.rapl.zones().len()];
    let primary = src.rapl.primary();
    let primary_max = src.rapl.primary_max_uj();
    let mut next_host = start;
    let mut next_jsonl = start;
    let mut last_host: Option<HostReading> = None;
    // Prime the CPU counters so the first host reading already has a CPU %.
    if let Some(h) = src.host.as_mut() {
        h.read();
    }
    // Rows are handed to the writer in batches (every 50 ms or 8 KiB): one wake-up of the
    // writer thread per batch instead of per tick.
    let mut buf = sender.buffer();
    let mut buf_rows = 0u64;
    let mut last_send = start;
    let mut k: u64 = 0;
    loop {
        // The grid up to the end, then one last tick at the end itself: a recording of S
        // seconds spans S seconds whatever the interval (the last sample at or after the end).
        let (deadline, last) = match cfg.end_mono_ns {
            Some(end) if start + k * interval >= end => (end, true),
            _ => (start + k * interval, false),
        };
        // Long intervals sleep in slices so a stop is noticed within 50 ms.
        if interval > 50_000_000 {
            loop {
                let now = clock.mono_ns();
                if now >= deadline || stop.load(Ordering::Relaxed) {
                    break;
                }
                clock.sleep_until(deadline.min(now + 50_000_000));
            }
        } else {
            clock.sleep_until(deadline);
        }
        if stop.load(Ordering::Relaxed) || sender.failed() {
            break;
        }
        let wake = clock.mono_ns();
        health.jitter.add(wake.saturating_sub(deadline));

        let mut rows = 0u64;
        if let Some(g) = src.gpu.as_mut() {
            while let Some(label) = g.take_scripted_mark() {
                push_mark_row(
                    &mut buf,
                    cfg.n_cols,
                    clock.mono_ns(),
                    clock.wall_ns(),
                    &label,
                );
                rows += 1;
                health.marks += 1;
            }
        }
        src.rapl.read_into(&mut rapl_vals);
        let host = match src.host.as_mut() {
            Some(h) if wake >= next_host => {
                next_host = next_on_grid(start, cfg.host_every_ns, wake);
                let r = h.read();
                last_host = Some(r);
                Some(r)
            }
            _ => None,
        };
        let jsonl_due = cfg.jsonl_every_ns.is_some_and(|_| wake >= next_jsonl);
        let tick = TickFields {
            rapl: &rapl_vals,
            primary,
            primary_max_uj: primary_max,
            host,
        };
        match src.gpu.as_mut() {
            None => {
                push_sample_row(
                    &mut buf,
                    cfg.n_cols,
                    wake,
                    clock.wall_ns(),
                    None,
                    Some(&tick),
                );
                rows += 1;
            }
            Some(g) => {
                for slot in 0..n_gpus {
                    let t0 = clock.mono_ns();
                    let w0 = clock.wall_ns();
                    let mut r = g.read(slot, jsonl_due);
                    health.gpu_read.add(clock.mono_ns().saturating_sub(t0));
                    if let Some(p) = &poller {
                        let slow = p.latest(slot);
                        r.energy_mj = slow.energy_mj;
                        r.mem_used_mib = slow.mem_used_mib;
                    }
                    if let (Some(p), Some(prev)) = (r.power_w, prev_power[slot]) {
                        health.compared_power += 1;
                        if p == prev {
                            health.repeated_power += 1;
                        }
                    }
                    if r.power_w.is_some() {
                        prev_power[slot] = r.power_w;
                    }
                    readings[slot] = r;
                    let index = g.info()[slot].index;
                    push_sample_row(
                        &mut buf,
                        cfg.n_cols,
                        t0,
                        w0,
                        Some((index, &r)),
                        (slot == 0).then_some(&tick),
                    );
                    rows += 1;
                }
            }
        }
        buf_rows += rows;
        if buf.len() >= SEND_BYTES || wake.saturating_sub(last_send) >= SEND_EVERY_NS {
            sender.send(Msg::Csv(
                std::mem::replace(&mut buf, sender.buffer()),
                buf_rows,
            ));
            buf_rows = 0;
            last_send = wake;
        }
        if jsonl_due {
            next_jsonl = next_on_grid(start, cfg.jsonl_every_ns.unwrap_or(1), wake);
            let mut j = sender.buffer();
            let gpus = src.gpu.as_deref().map_or(&[][..], |g| g.info());
            push_line(
                &host_row(clock.wall_ns(), last_host, gpus, &readings),
                &mut j,
            );
            sender.send(Msg::Jsonl(j));
        }
        health.ticks += 1;
        // A late tick that woke at or after the end is the last sample already.
        if last || cfg.end_mono_ns.is_some_and(|end| wake >= end) {
            health.tick_work.add(clock.mono_ns().saturating_sub(wake));
            break;
        }

        k += 1;
        let now = clock.mono_ns();
        health.tick_work.add(now.saturating_sub(wake));
        let next = start + k * interval;
        if now > next {
            let behind = (now - start) / interval + 1;
            health.missed_ticks += behind - k;
            cfg.missed_ticks
                .store(health.missed_ticks, Ordering::Relaxed);
            k = behind;
        }
    }
    if buf_rows > 0 {
        sender.send(Msg::Csv(buf, buf_rows));
    }
    if let Some(p) = poller {
        health.energy_read = p.finish();
    }
    health.sampler_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    health.rapl_read_errors = src.rapl.read_errors();
    health
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::clock::FakeClock;
    use crate::record::gpu::ScriptedGpu;
    use crate::record::writer::{Writer, column_count, header};

    /// Records `script` for `end_after_ns` at `interval_ns` on `clock` (the first deadline 1 ms
    /// after its current time); returns the CSV text, the health and the JSONL text.
    fn record_on(
        script: &str,
        clock: Arc<dyn Clock>,
        interval_ns: u64,
        end_after_ns: u64,
        tag: &str,
    ) -> (String, Health, String) {
        let dir = std::env::temp_dir().join(format!("flinch-sampler-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("t.csv");
        let jsonl = dir.join("t.jsonl");
        let h = header(std::iter::empty());
        let w = Writer::start(&csv, &h, Some(&jsonl)).unwrap();
        let start = clock.mono_ns();
        let cfg = SamplerConfig {
            interval_ns,
            end_mono_ns: Some(start + end_after_ns),
            host_every_ns: 100_000_000,
            jsonl_every_ns: Some(1_000_000_000),
            n_cols: column_count(&h),
            start_mono_ns: start,
            missed_ticks: Arc::default(),
        };
        let src = Sources {
            gpu: Some(Box::new(ScriptedGpu::parse(script).unwrap())),
            rapl: Rapl::none(),
            host: None,
        };
        let s = w.sender();
        let health = run(&cfg, &clock, src, &s, &AtomicBool::new(false));
        drop(s);
        let rep = w.finish();
        assert!(rep.error.is_none());
        let text = std::fs::read_to_string(&csv).unwrap();
        let j = std::fs::read_to_string(&jsonl).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (text, health, j)
    }

    /// `record_on` a virtual clock whose every reading advances it by `step_ns`.
    fn record(
        script: &str,
        interval_ns: u64,
        end_after_ns: u64,
        step_ns: u64,
    ) -> (String, Health, String) {
        let tag = format!("{interval_ns}-{end_after_ns}-{step_ns}");
        record_on(
            script,
            Arc::new(FakeClock::new(step_ns)),
            interval_ns,
            end_after_ns,
            &tag,
        )
    }

    /// The values of column `name` in the rows of a CSV text.
    fn column<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        let mut lines = text.lines();
        let col = lines
            .next()
            .unwrap()
            .split(',')
            .position(|c| c == name)
            .unwrap();
        lines.map(|l| l.split(',').nth(col).unwrap()).collect()
    }

    #[test]
    fn ticks_on_absolute_deadlines_with_marks_and_repeats() {
        let (text, health, jsonl) = record(
            "mark a\n100,1,2,3,4,5,6,7\n100,1,2,3,4,6,6,7\nmark b\n200,1,2,3,4,7,6,7\n",
            10_000_000,
            2_000_000_000,
            1000,
        );
        let lines: Vec<&str> = text.lines().collect();
        // 200 ticks on the grid, and the last one at the end itself (2 s after the first).
        assert_eq!(health.ticks, 201);
        assert_eq!(health.missed_ticks, 0);
        assert_eq!(health.marks, 2);
        assert_eq!(lines.len(), 1 + 201 + 2);
        // Sample times sit on the deadlines (plus the clock-read cost), never drifting.
        let samples: Vec<u64> = lines
            .iter()
            .filter(|l| l.contains(",SAMPLE,"))
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect();
        for (k, t) in samples.iter().enumerate() {
            let off = t - FakeClock::START_MONO_NS - k as u64 * 10_000_000;
            assert!(off < 10_000, "tick {k} at +{off} ns");
        }
        assert!(lines[1].contains(",MARK,a,"));
        assert!(lines[4].contains(",MARK,b,"));
        // 201 readings, 200 compared; only tick 2 -> 3 changes power (100 -> 200).
        assert_eq!(health.compared_power, 200);
        assert_eq!(health.repeated_power, 199);
        // JSONL rows at 0, 1 and 2 s (the end tick is on the 1 s grid too).
        assert_eq!(jsonl.lines().count(), 3);
        let row: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
        assert_eq!(row["gpu_csv"], "0,GPU-scripted-0,6,81559,4,100,3,2619,1,2");
        assert!(row["unix"].as_f64().unwrap() > 1.7e9);
    }

    /// A slow energy counter (milliseconds per read on an H200) and memory use are read on the
    /// slow-query poller's thread, so the loop's GPU reads never wait for them. Real time: the
    /// scripted slow read takes 100 ms, ticks come every 5 ms.
    #[test]
    fn a_slow_energy_counter_is_read_off_the_sampling_loop() {
        use crate::record::clock::SystemClock;
        let script = "slow-thread 100\n100,1,2,3,4,500,6,7\n100,1,2,3,4,600,8,7\n";
        let (text, health, _) = record_on(
            script,
            Arc::new(SystemClock),
            5_000_000,
            150_000_000,
            "slow",
        );
        let energy = column(&text, "gpu_energy_mJ");
        let mem = column(&text, "gpu_mem_used_MiB");
        assert_eq!((mem[0], mem[1]), ("6", "6"));
        // The first rows carry the poller's first (synchronous) reading; the inline script
        // would have given 600 from the second row on. Every row has a value.
        assert_eq!(energy[0], "500");
        assert_eq!(energy[1], "500");
        assert!(
            energy.iter().all(|e| *e == "500" || *e == "600"),
            "{energy:?}"
        );
        // Each counter read took its 100 ms on the poller's thread, the loop's reads did not.
        // (Histogram quantiles are within 1%.)
        assert!(health.energy_read.quantile(0.5).unwrap() >= 95e6);
        assert!(health.gpu_read.quantile(0.5).unwrap() < 50e6);
    }

    /// Regression: `--seconds 2 --interval-ms 2500` ended after its first tick (0.11 s).
    #[test]
    fn an_interval_longer_than_the_recording_still_spans_it() {
        let (text, health, _) = record("1,1,1,1,1,1,1,1\n", 2_500_000_000, 2_000_000_000, 1000);
        assert_eq!(health.ticks, 2);
        let t: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| {
                l.split(',').next().unwrap().parse::<u64>().unwrap() - FakeClock::START_MONO_NS
            })
            .collect();
        assert_eq!(t.len(), 2);
        assert!(t[0] < 1_000_000, "{t:?}");
        assert!((2_000_000_000..2_001_000_000).contains(&t[1]), "{t:?}");
        // A duration that is a whole number of intervals ends on the grid: 0, 0.5 .. 2.0 s.
        let (_, health, _) = record("1,1,1,1,1,1,1,1\n", 500_000_000, 2_000_000_000, 1000);
        assert_eq!(health.ticks, 5);
    }

    #[test]
    fn a_slow_tick_skips_deadlines_instead_of_bunching() {
        // Each clock reading costs 4 ms and a tick reads the clock 5 times (wake, 2 per GPU,
        // the end-of-tick check...): a 10 ms interval falls behind and must skip.
        let (text, health, _) = record("1,1,1,1,1,1,1,1\n", 10_000_000, 1_000_000_000, 4_000_000);
        assert!(health.missed_ticks > 0);
        // The 100 grid deadlines before the end, each taken or skipped, and the end tick unless
        // a late grid tick already woke at or after the end.
        let slots = health.ticks + health.missed_ticks;
        assert!(slots == 100 || slots == 101, "{slots}");
        let t: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect();
        let last = *t.last().unwrap();
        assert!(
            last >= FakeClock::START_MONO_NS + 1_000_000_000,
            "ends early at {last}"
        );
        // Apart from the end sample (due at the end, however close the tick before it came),
        // samples are at least one interval apart.
        for w in t[..t.len() - 1].windows(2) {
            assert!(
                w[1] - w[0] >= 10_000_000,
                "bunched: {} ns apart",
                w[1] - w[0]
            );
        }
    }
}
