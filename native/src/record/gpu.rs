//! The GPU seam: what the sampler asks of a GPU, and a scripted source for tests and benchmarks.
//!
//! The real source is NVML ([`super::nvml::NvmlSource`]); tests, the benchmark and the golden
//! files drive the very same sampler through [`ScriptedGpu`].
use flinch_core::window::PowerSource;
use serde::{Deserialize, Serialize};

use super::slow::{SlowReader, SlowReading};

/// One reading of one GPU. `None` means "not available" (an empty CSV field).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuReading {
    /// Board power in watts (instantaneous or 1 s average: see [`GpuSource::power_kind`]).
    pub power_w: Option<f64>,
    /// Total energy counter since the driver loaded, in millijoules.
    pub energy_mj: Option<u64>,
    /// Share of the last sample period with a kernel running, percent.
    pub util_pct: Option<u32>,
    /// Share of the last sample period with device memory being read or written, percent.
    pub mem_util_pct: Option<u32>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// GPU temperature, degrees C.
    pub temp_c: Option<u32>,
    /// Device memory in use, MiB.
    pub mem_used_mib: Option<u64>,
    /// NVML clocks-event (throttle) reasons bitmask.
    pub throttle_reasons: Option<u64>,
    /// Memory clock, MHz; read only on the slower host-telemetry ticks (`full` reads).
    pub mem_clock_mhz: Option<u32>,
}

/// What the sidecar records about one selected GPU (queried once, at start).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML device index.
    pub index: u32,
    /// Product name.
    pub name: Option<String>,
    /// GPU UUID.
    pub uuid: Option<String>,
    /// PCI bus id.
    pub pci_bus_id: Option<String>,
    /// Total device memory, MiB.
    pub mem_total_mib: Option<u64>,
    /// Power management limit, W.
    pub power_limit_w: Option<f64>,
    /// Processes using the GPU at start (slow query: made once, never in the sampling loop).
    pub compute_processes_at_start: Option<Vec<u32>>,
}

/// A set of selected GPUs the sampler reads every tick.
pub trait GpuSource: Send {
    /// The selected GPUs, in sampling order.
    fn info(&self) -> &[GpuInfo];
    /// Which NVML reading fills `gpu_power_W` for each selected GPU: `"instant"` (field
    /// `NVML_FI_DEV_POWER_INSTANT`) or `"average"` (`nvmlDeviceGetPowerUsage`).
    fn power_kind(&self, slot: usize) -> PowerSource;
    /// Reads GPU `slot` (an index into [`Self::info`]). `full` also reads the fields only the
    /// host-telemetry rows need (memory clock).
    fn read(&mut self, slot: usize, full: bool) -> GpuReading;
    /// Whether GPU `slot` has the total-energy counter (`gpu_energy_mJ`), checked once at start:
    /// `record --metrics` then takes its energy from the counter rather than from power.
    fn has_energy_counter(&self, _slot: usize) -> bool {
        false
    }
    /// A mark the script wants stamped before this tick's readings (scripted sources only).
    fn take_scripted_mark(&mut self) -> Option<String> {
        None
    }
    /// Hands the slow queries (energy counter, memory in use) to a reader for the poller's
    /// thread (see [`super::slow`]); afterwards [`Self::read`] leaves `energy_mj` and
    /// `mem_used_mib` empty. `None` (the default): [`Self::read`] reads them inline.
    fn split_slow(&mut self) -> Option<Box<dyn SlowReader>> {
        None
    }
}

/// A GPU source replaying a text script, one line per tick:
///
/// ```text
/// # comment
/// gpus 2                                   (optional, first; default 1)
/// mark LABEL                               (a mark stamped just before the next tick)
/// 250.5,97,40,1980,61,123456,30000,0 ; 80,0,0,345,40,9999,500,4
/// ```
///
/// A tick line holds one group per GPU, separated by `;`, of 8 comma-separated fields in the
/// order `power_W,util_pct,mem_util_pct,sm_clock_MHz,temp_C,energy_mJ,mem_used_MiB,throttle`;
/// an empty field is "not available". After the last line the last tick repeats forever.
///
/// A line `slow-thread MS` makes the energy and memory fields come from the slow-query poller's
/// thread (as NVML's do): each slot's fields, in order, one per read, each read taking MS ms.
pub struct ScriptedGpu {
    info: Vec<GpuInfo>,
    ticks: Vec<Tick>,
    pos: usize,
    slot_reads: usize,
    /// `slow-thread MS`: the delay of one slow read, once the slow queries are split off.
    slow_thread_ms: Option<u64>,
    slow_split: bool,
}

/// The scripted slow queries for the poller's thread: each slot's fields in order.
struct ScriptedSlow {
    per_slot: Vec<Vec<SlowReading>>,
    next: Vec<usize>,
    delay: std::time::Duration,
}

impl SlowReader for ScriptedSlow {
    fn slots(&self) -> usize {
        self.per_slot.len()
    }

    fn read(&mut self, slot: usize) -> SlowReading {
        std::thread::sleep(self.delay);
        let Some(values) = self.per_slot.get(slot) else {
            return SlowReading::default();
        };
        let i = self.next[slot].min(values.len().saturating_sub(1));
        self.next[slot] += 1;
        values.get(i).copied().unwrap_or_default()
    }
}

enum Tick {
    Mark(String),
    Readings(Vec<GpuReading>),
}

fn field<T: std::str::FromStr>(
    s: Option<&str>,
    what: &str,
    line_no: usize,
) -> Result<Option<T>, String> {
    match s.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| format!("scripted GPU source: line {line_no}: bad {what} {t:?}")),
    }
}

impl ScriptedGpu {
    /// Parses a script (see the type docs). Errors name the line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut gpus = 1usize;
        let mut ticks = Vec::new();
        let mut slow_thread_ms = None;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(n) = line.strip_prefix("gpus ") {
                gpus = n
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n: &usize| (1..=64).contains(&n))
                    .ok_or_else(|| format!("scripted GPU source: line {line_no}: bad gpu count"))?;
                continue;
            }
            if let Some(ms) = line.strip_prefix("slow-thread ") {
                slow_thread_ms = Some(ms.trim().parse().map_err(|_| {
                    format!("scripted GPU source: line {line_no}: bad slow-thread delay")
                })?);
                continue;
            }
            if let Some(label) = line.strip_prefix("mark ") {
                ticks.push(Tick::Mark(label.trim().to_string()));
                continue;
            }
            let groups: Vec<&str> = line.split(';').collect();
            if groups.len() != gpus {
                return Err(format!(
                    "scripted GPU source: line {line_no}: {} GPU groups, expected {gpus}",
                    groups.len()
                ));
            }
            let mut readings = Vec::with_capacity(gpus);
            for g in groups {
                let f: Vec<&str> = g.split(',').collect();
                if f.len() != 8 {
                    return Err(format!(
                        "scripted GPU source: line {line_no}: {} fields in a GPU group, expected 8",
                        f.len()
                    ));
                }
                let power_w: Option<f64> = field(f.first().copied(), "power", line_no)?;
                if power_w.is_some_and(|p| !p.is_finite()) {
                    return Err(format!(
                        "scripted GPU source: line {line_no}: power not finite"
                    ));
                }
                readings.push(GpuReading {
                    power_w,
                    util_pct: field(f.get(1).copied(), "util", line_no)?,
                    mem_util_pct: field(f.get(2).copied(), "mem util", line_no)?,
                    sm_clock_mhz: field(f.get(3).copied(), "sm clock", line_no)?,
                    temp_c: field(f.get(4).copied(), "temperature", line_no)?,
                    energy_mj: field(f.get(5).copied(), "energy", line_no)?,
                    mem_used_mib: field(f.get(6).copied(), "memory used", line_no)?,
                    throttle_reasons: field(f.get(7).copied(), "throttle reasons", line_no)?,
                    mem_clock_mhz: None,
                });
            }
            ticks.push(Tick::Readings(readings));
        }
        if !ticks.iter().any(|t| matches!(t, Tick::Readings(_))) {
            return Err("scripted GPU source: no tick lines".to_string());
        }
        let info = (0..gpus)
            .map(|i| GpuInfo {
                index: i as u32,
                name: Some("scripted GPU".to_string()),
                uuid: Some(format!("GPU-scripted-{i}")),
                mem_total_mib: Some(81_559),
                ..GpuInfo::default()
            })
            .collect();
        Ok(ScriptedGpu {
            info,
            ticks,
            pos: 0,
            slot_reads: 0,
            slow_thread_ms,
            slow_split: false,
        })
    }

    fn current(&mut self) -> &[GpuReading] {
        // Skip marks; at the end, stay on the last readings line.
        let mut p = self.pos.min(self.ticks.len() - 1);
        loop {
            match &self.ticks[p] {
                Tick::Readings(_) => break,
                Tick::Mark(_) if p + 1 < self.ticks.len() => p += 1,
                Tick::Mark(_) => {
                    p = self
                        .ticks
                        .iter()
                        .rposition(|t| matches!(t, Tick::Readings(_)))
                        .unwrap_or(0);
                    break;
                }
            }
        }
        self.pos = p;
        match &self.ticks[p] {
            Tick::Readings(r) => r,
            Tick::Mark(_) => &[],
        }
    }
}

impl GpuSource for ScriptedGpu {
    fn info(&self) -> &[GpuInfo] {
        &self.info
    }

    fn has_energy_counter(&self, slot: usize) -> bool {
        self.ticks.iter().any(|t| match t {
            Tick::Readings(r) => r.get(slot).is_some_and(|r| r.energy_mj.is_some()),
            Tick::Mark(_) => false,
        })
    }

    fn power_kind(&self, _slot: usize) -> PowerSource {
        PowerSource::Instant
    }

    fn read(&mut self, slot: usize, full: bool) -> GpuReading {
        let n = self.info.len();
        let mut r = self.current().get(slot).copied().unwrap_or_default();
        if self.slow_split {
            r.energy_mj = None;
            r.mem_used_mib = None;
        }
        if full {
            r.mem_clock_mhz = Some(2619);
        }
        self.slot_reads += 1;
        if self.slot_reads == n {
            self.slot_reads = 0;
            if self.pos + 1 < self.ticks.len() {
                self.pos += 1;
            }
        }
        r
    }

    fn split_slow(&mut self) -> Option<Box<dyn SlowReader>> {
        let ms = self.slow_thread_ms?;
        self.slow_split = true;
        let n = self.info.len();
        let per_slot = (0..n)
            .map(|slot| {
                self.ticks
                    .iter()
                    .filter_map(|t| match t {
                        Tick::Readings(r) => Some(r.get(slot).map_or_else(
                            SlowReading::default,
                            |r| SlowReading {
                                energy_mj: r.energy_mj,
                                mem_used_mib: r.mem_used_mib,
                            },
                        )),
                        Tick::Mark(_) => None,
                    })
                    .collect()
            })
            .collect();
        Some(Box::new(ScriptedSlow {
            per_slot,
            next: vec![0; n],
            delay: std::time::Duration::from_millis(ms),
        }))
    }

    fn take_scripted_mark(&mut self) -> Option<String> {
        if self.slot_reads != 0 {
            return None;
        }
        if let Some(Tick::Mark(label)) = self.ticks.get(self.pos) {
            let label = label.clone();
            self.pos += 1;
            return Some(label);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_ticks_marks_and_repeats_the_last_tick() {
        let mut s = ScriptedGpu::parse(
            "# two GPUs\ngpus 2\nmark a\n100,50,10,1500,60,1000,200,0;20,,,,,,,\nmark b\nmark c\n\
             110.5,60,11,1600,61,2000,210,4;21,1,2,3,4,5,6,7\n",
        )
        .unwrap();
        assert_eq!(s.info().len(), 2);
        assert_eq!(s.take_scripted_mark().as_deref(), Some("a"));
        assert_eq!(s.take_scripted_mark(), None);
        let r0 = s.read(0, false);
        assert_eq!(r0.power_w, Some(100.0));
        assert_eq!(r0.energy_mj, Some(1000));
        assert_eq!(r0.throttle_reasons, Some(0));
        let r1 = s.read(1, false);
        assert_eq!(
            r1,
            GpuReading {
                power_w: Some(20.0),
                ..GpuReading::default()
            }
        );
        assert_eq!(s.take_scripted_mark().as_deref(), Some("b"));
        assert_eq!(s.take_scripted_mark().as_deref(), Some("c"));
        assert_eq!(s.read(0, true).mem_clock_mhz, Some(2619));
        assert_eq!(s.read(1, false).throttle_reasons, Some(7));
        // Past the end: the last tick repeats.
        assert_eq!(s.take_scripted_mark(), None);
        assert_eq!(s.read(0, false).power_w, Some(110.5));
        assert_eq!(s.read(1, false).sm_clock_mhz, Some(3));
    }

    #[test]
    fn bad_scripts_name_the_line() {
        assert_eq!(
            ScriptedGpu::parse("1,2,3\n").err().unwrap(),
            "scripted GPU source: line 1: 3 fields in a GPU group, expected 8"
        );
        assert_eq!(
            ScriptedGpu::parse("# x\n1,2,3,4,5,6,7,8\nx,2,3,4,5,6,7,8\n")
                .err()
                .unwrap(),
            "scripted GPU source: line 3: bad power \"x\""
        );
        assert!(ScriptedGpu::parse("mark a\n").is_err());
        assert!(ScriptedGpu::parse("gpus 2\n1,2,3,4,5,6,7,8\n").is_err());
    }
}
