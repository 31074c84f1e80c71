//! The live metrics of a recording (`record --metrics`): a fixed set of counters fed the
//! recording's rows as they are written, in memory fixed at construction (no allocation per row,
//! mark or window; nothing grows with the recording's length or its number of distinct marks).
//!
//! Rows pass through the same bounded reorder buffer as `analyze` (2 s behind the newest row),
//! and each window's energy is the same integral `analyze --spans` computes for its pair span,
//! added in the same order ([`WindowIntegral`] over power interpolated at the mark edges, or
//! [`WindowCounter`] over the NVML energy counter, pro-rated at the edges): a window's figures
//! are added to its name's counters once the window is complete, i.e. once each GPU has a reading
//! after its end mark (or the maximum gap has passed), so they equal `analyze`'s for that span.
//!
//! Every SAMPLE row moves the buffer's clock, whether or not it carries a GPU reading, so a
//! recording without GPUs completes its windows too (count, seconds, and the RAPL energy of each
//! zone inside them, pro-rated at the edges as `analyze` does).
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::exposition::{Exposition, Family, Kind, Value};
use crate::csv::{Col, CsvEvent, RowKind, TraceCsvReader};
use crate::energy::{CounterDelta, CounterStep, WindowCounter, WindowIntegral};
use crate::window::{GrowReorder, pair_end_stem, pair_start_stem};

/// The window label that collects every window name past the cap.
pub const OTHER_WINDOW: &str = "(other)";

/// How the state is bounded and how it integrates.
#[derive(Clone, Copy, Debug)]
pub struct LiveOptions {
    /// Distinct window names with series of their own; later names count under
    /// [`OTHER_WINDOW`].
    pub max_window_names: usize,
    /// Window names are cut to this many bytes (on a UTF-8 boundary).
    pub max_name_bytes: usize,
    /// Windows open at once; a start past it evicts the oldest open window (counted in
    /// `flinch_windows_dropped_total`).
    pub max_open_windows: usize,
    /// Power intervals longer than this are skipped (as `analyze --max-gap-ms`), ns.
    pub max_gap_ns: i64,
    /// Rows are held this long behind the newest to restore time order (as `analyze`), ns.
    pub reorder_horizon_ns: i64,
    /// At most this many rows are held for reordering.
    pub reorder_capacity: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            max_window_names: 64,
            max_name_bytes: 128,
            max_open_windows: 64,
            max_gap_ns: 5_000_000_000,
            reorder_horizon_ns: 2_000_000_000,
            reorder_capacity: 65_536,
        }
    }
}

/// One GPU as the metrics label it.
#[derive(Clone, Debug)]
pub struct GpuLabel {
    /// NVML index (the `gpu_index` of its rows, and the `gpu` label).
    pub index: u32,
    /// UUID (`uuid` label; empty when unknown).
    pub uuid: String,
    /// Whether its energy comes from the NVML total-energy counter (`source="counter"`);
    /// otherwise from power integrated over time (`source="power"`).
    pub energy_counter: bool,
}

/// One RAPL zone as the metrics label it.
#[derive(Clone, Debug)]
pub struct ZoneLabel {
    /// The `zone` label, e.g. `package-0`.
    pub name: String,
    /// The trace.csv column that holds it (`rapl_energy_uj` for the primary zone), for
    /// [`LiveFeed`].
    pub column: String,
    /// The counter wraps to 0 after this value (`max_energy_range_uj`).
    pub max_uj: Option<u64>,
}

/// One GPU reading, as a SAMPLE row carries it.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuSample {
    /// `gpu_power_W`.
    pub power_w: Option<f64>,
    /// `gpu_util_pct`.
    pub util_pct: Option<f64>,
    /// `gpu_energy_mJ`.
    pub energy_mj: Option<f64>,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Sample {
        slot: u16,
        s: GpuSample,
    },
    Mark(MarkItem),
    /// One zone's RAPL reading, µJ.
    Rapl {
        zone: u16,
        uj: u64,
    },
    /// A row with no GPU reading or RAPL: only time passes.
    Tick,
}

#[derive(Clone, Copy, Debug)]
struct MarkItem {
    /// The name's slot (`max_window_names` for the other bucket).
    name: u16,
    /// FNV-1a of the whole stem: pairs inside the other bucket match on it.
    stem_hash: u64,
    start: bool,
    end: bool,
    thread: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct GpuWindow {
    power: WindowIntegral,
    counter: WindowCounter,
    past_end: bool,
}

const GPU_WINDOW: GpuWindow = GpuWindow {
    power: WindowIntegral::NEW,
    counter: WindowCounter::NEW,
    past_end: false,
};

#[derive(Clone, Copy, Debug)]
struct ZoneWindow {
    counter: WindowCounter,
    past_end: bool,
}

const ZONE_WINDOW: ZoneWindow = ZoneWindow {
    counter: WindowCounter::NEW,
    past_end: false,
};

struct OpenWindow {
    used: bool,
    id: u64,
    name: u16,
    stem_hash: u64,
    thread: Option<u64>,
    t0: i64,
    t1: Option<i64>,
    /// One per GPU, allocated once.
    gpus: Vec<GpuWindow>,
    /// One per RAPL zone, allocated once.
    zones: Vec<ZoneWindow>,
}

struct NameTotals {
    name: String,
    used: bool,
    windows: u64,
    seconds_ns: u128,
    /// Per GPU, J.
    energy_j: Vec<f64>,
    /// Per RAPL zone, J.
    cpu_energy_j: Vec<f64>,
}

struct GpuState {
    label: GpuLabel,
    index_text: String,
    power_w: Option<f64>,
    util_pct: Option<f64>,
    prev_power: Option<(i64, f64)>,
    prev_counter: Option<(i64, f64)>,
    last_t: Option<i64>,
    /// The power integral since the start (power-source GPUs).
    power_total: WindowIntegral,
    /// The NVML counter's increase since the start, mJ (counter-source GPUs; never wraps, a
    /// decrease is a reset).
    counter: CounterDelta,
}

struct ZoneState {
    label: ZoneLabel,
    /// The core's wrap rule: a decrease is a wrap at `max_uj`, or a reset (no increase).
    counter: CounterDelta,
    /// The previous reading released from the reorder buffer, for the windows.
    prev: Option<(i64, u64)>,
    last_t: Option<i64>,
}

/// The metric families, in the order they are written.
pub mod families {
    use super::{Family, Kind};
    /// `flinch_gpu_energy_joules_total{gpu,uuid,source}`.
    pub const GPU_ENERGY: Family = Family {
        name: "flinch_gpu_energy_joules",
        kind: Kind::Counter,
        unit: Some("joules"),
        help: "GPU energy since the recorder started: NVML total-energy counter (source=counter) or power integrated over time (source=power).",
    };
    /// `flinch_gpu_power_watts{gpu,uuid}`.
    pub const GPU_POWER: Family = Family {
        name: "flinch_gpu_power_watts",
        kind: Kind::Gauge,
        unit: Some("watts"),
        help: "Latest GPU board power reading.",
    };
    /// `flinch_gpu_utilization_ratio{gpu,uuid}`.
    pub const GPU_UTIL: Family = Family {
        name: "flinch_gpu_utilization_ratio",
        kind: Kind::Gauge,
        unit: Some("ratio"),
        help: "Latest NVML GPU utilization, 0 to 1.",
    };
    /// `flinch_cpu_energy_joules_total{zone}`.
    pub const CPU_ENERGY: Family = Family {
        name: "flinch_cpu_energy_joules",
        kind: Kind::Counter,
        unit: Some("joules"),
        help: "RAPL energy since the recorder started, counter wraparound corrected.",
    };
    /// `flinch_sampler_missed_ticks_total`.
    pub const MISSED_TICKS: Family = Family {
        name: "flinch_sampler_missed_ticks",
        kind: Kind::Counter,
        unit: None,
        help: "Sampling deadlines skipped because the sampler was late.",
    };
    /// `flinch_window_energy_joules_total{window,gpu}`.
    pub const WINDOW_ENERGY: Family = Family {
        name: "flinch_window_energy_joules",
        kind: Kind::Counter,
        unit: Some("joules"),
        help: "GPU energy inside completed mark windows (X_start to X_end), by window name.",
    };
    /// `flinch_window_cpu_energy_joules_total{window,zone}`.
    pub const WINDOW_CPU_ENERGY: Family = Family {
        name: "flinch_window_cpu_energy_joules",
        kind: Kind::Counter,
        unit: Some("joules"),
        help: "RAPL energy inside completed mark windows (X_start to X_end), by window name and zone.",
    };
    /// `flinch_window_seconds_total{window}`.
    pub const WINDOW_SECONDS: Family = Family {
        name: "flinch_window_seconds",
        kind: Kind::Counter,
        unit: Some("seconds"),
        help: "Duration of completed mark windows, by window name.",
    };
    /// `flinch_windows_total{window}`.
    pub const WINDOWS: Family = Family {
        name: "flinch_windows",
        kind: Kind::Counter,
        unit: None,
        help: "Completed mark windows, by window name.",
    };
    /// `flinch_windows_dropped_total`.
    pub const WINDOWS_DROPPED: Family = Family {
        name: "flinch_windows_dropped",
        kind: Kind::Counter,
        unit: None,
        help: "Open windows evicted unfinished because too many were open at once.",
    };
    /// `flinch_late_rows_total`.
    pub const LATE_ROWS: Family = Family {
        name: "flinch_late_rows",
        kind: Kind::Counter,
        unit: None,
        help: "Rows that arrived after newer rows had been released from the reorder buffer (skipped).",
    };
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The live state: feed it rows with [`LiveMetrics::sample`], [`LiveMetrics::rapl`] and
/// [`LiveMetrics::mark`] in arrival order; write it out with [`LiveMetrics::write`].
pub struct LiveMetrics {
    opts: LiveOptions,
    gpus: Vec<GpuState>,
    zones: Vec<ZoneState>,
    /// `max_window_names` named slots, then the other bucket.
    names: Vec<NameTotals>,
    open: Vec<OpenWindow>,
    next_id: u64,
    reorder: GrowReorder<Item>,
    missed_ticks: u64,
    windows_dropped: u64,
    late_rows: u64,
}

impl LiveMetrics {
    /// A state for these GPUs and RAPL zones; allocates everything it will use now.
    pub fn new(opts: LiveOptions, gpus: &[GpuLabel], zones: &[ZoneLabel]) -> LiveMetrics {
        let n = gpus.len();
        let nz = zones.len();
        let names = (0..=opts.max_window_names)
            .map(|i| NameTotals {
                name: if i == opts.max_window_names {
                    String::from(OTHER_WINDOW)
                } else {
                    String::with_capacity(opts.max_name_bytes)
                },
                used: false,
                windows: 0,
                seconds_ns: 0,
                energy_j: alloc::vec![0.0; n],
                cpu_energy_j: alloc::vec![0.0; nz],
            })
            .collect();
        let open = (0..opts.max_open_windows.max(1))
            .map(|_| OpenWindow {
                used: false,
                id: 0,
                name: 0,
                stem_hash: 0,
                thread: None,
                t0: 0,
                t1: None,
                gpus: alloc::vec![GPU_WINDOW; n],
                zones: alloc::vec![ZONE_WINDOW; nz],
            })
            .collect();
        LiveMetrics {
            opts,
            gpus: gpus
                .iter()
                .map(|g| GpuState {
                    label: g.clone(),
                    index_text: alloc::format!("{}", g.index),
                    power_w: None,
                    util_pct: None,
                    prev_power: None,
                    prev_counter: None,
                    last_t: None,
                    power_total: WindowIntegral::default(),
                    counter: CounterDelta::new(None),
                })
                .collect(),
            zones: zones
                .iter()
                .map(|z| ZoneState {
                    label: z.clone(),
                    counter: CounterDelta::new(z.max_uj),
                    prev: None,
                    last_t: None,
                })
                .collect(),
            names,
            open,
            next_id: 0,
            reorder: GrowReorder::new(opts.reorder_capacity, opts.reorder_horizon_ns),
            missed_ticks: 0,
            windows_dropped: 0,
            late_rows: 0,
        }
    }

    /// A SAMPLE row of the GPU with NVML index `gpu_index` at `t_ns`. Rows of other GPUs are
    /// ignored. The gauges take the reading at once; the counters when it leaves the reorder
    /// buffer.
    pub fn sample(&mut self, t_ns: i64, gpu_index: u32, s: GpuSample) {
        let Some(slot) = self.gpus.iter().position(|g| g.label.index == gpu_index) else {
            return;
        };
        let g = &mut self.gpus[slot];
        if let Some(p) = s.power_w.filter(|p| p.is_finite()) {
            g.power_w = Some(p);
        }
        if let Some(u) = s.util_pct.filter(|u| u.is_finite()) {
            g.util_pct = Some(u);
        }
        self.push(
            t_ns,
            1,
            Item::Sample {
                slot: slot as u16,
                s,
            },
        );
    }

    /// A tick's RAPL readings at `t_ns`, one per zone in the order given at construction
    /// (`None`: not read). RAPL rows come from one thread in time order: the zone totals count
    /// them at once; the windows when they leave the reorder buffer.
    pub fn rapl(&mut self, t_ns: i64, readings: &[Option<u64>]) {
        for (i, r) in readings.iter().enumerate().take(self.zones.len()) {
            if let Some(uj) = *r {
                self.zones[i].counter.push(uj);
                self.push(t_ns, 1, Item::Rapl { zone: i as u16, uj });
            }
        }
    }

    /// A row at `t_ns` with no GPU reading and no RAPL: it moves the clock, so windows complete
    /// on a host without GPUs.
    pub fn tick(&mut self, t_ns: i64) {
        self.push(t_ns, 1, Item::Tick);
    }

    /// A MARK row: `label` at `t_ns`, with its `mark_thread`.
    pub fn mark(&mut self, t_ns: i64, label: &str, thread: Option<u64>) {
        let start = pair_start_stem(label).filter(|s| !s.is_empty());
        let end = pair_end_stem(label).filter(|s| !s.is_empty());
        let Some(stem) = start.or(end) else { return };
        // Ends take a slot too: a start written after its end (marks reach the recorder out of
        // order) must find the same slot.
        let name = self.name_slot(stem);
        self.push(
            t_ns,
            0,
            Item::Mark(MarkItem {
                name,
                stem_hash: fnv1a(stem.as_bytes()),
                start: start.is_some(),
                end: end.is_some(),
                thread,
            }),
        );
    }

    /// Deadlines the sampler skipped so far (it keeps the count).
    pub fn set_missed_ticks(&mut self, n: u64) {
        self.missed_ticks = n;
    }

    /// Releases every held row (at the end of a recording, or in tests).
    pub fn flush(&mut self) {
        while let Some((t, item)) = self.reorder.pop(true) {
            self.emit(t, item);
        }
    }

    fn name_slot(&mut self, stem: &str) -> u16 {
        let stem = cut(stem, self.opts.max_name_bytes);
        let cap = self.opts.max_window_names;
        if let Some(i) = self.names[..cap]
            .iter()
            .position(|n| n.used && n.name == stem)
        {
            return i as u16;
        }
        match self.names[..cap].iter().position(|n| !n.used) {
            Some(i) => {
                let n = &mut self.names[i];
                n.used = true;
                n.name.clear();
                n.name.push_str(stem);
                i as u16
            }
            None => {
                // The other bucket's series start at 0 with the first name past the cap.
                self.names[cap].used = true;
                cap as u16
            }
        }
    }

    fn push(&mut self, t: i64, prio: u8, item: Item) {
        if self.reorder.push(t, prio, item).is_err() {
            self.late_rows += 1;
        }
        while let Some((t, item)) = self.reorder.pop(false) {
            self.emit(t, item);
        }
    }

    fn emit(&mut self, t: i64, item: Item) {
        match item {
            Item::Mark(m) => self.emit_mark(t, m),
            Item::Sample { slot, s } => self.emit_sample(t, slot as usize, s),
            Item::Rapl { zone, uj } => self.emit_rapl(t, zone as usize, uj),
            Item::Tick => {}
        }
        self.close_due(t);
    }

    fn emit_mark(&mut self, t: i64, m: MarkItem) {
        if m.end
            && let Some(w) = self
                .open
                .iter_mut()
                .filter(|w| {
                    w.used
                        && w.t1.is_none()
                        && w.name == m.name
                        && w.stem_hash == m.stem_hash
                        && w.thread == m.thread
                })
                .max_by_key(|w| w.id)
        {
            w.t1 = Some(t);
        }
        if !m.start {
            return;
        }
        let slot = match self.open.iter().position(|w| !w.used) {
            Some(i) => i,
            None => {
                // Full: the oldest still-open window goes (else the oldest awaiting its edge).
                let oldest = |open: bool| {
                    self.open
                        .iter()
                        .enumerate()
                        .filter(|(_, w)| w.t1.is_none() == open)
                        .min_by_key(|(_, w)| w.id)
                        .map(|(i, _)| i)
                };
                self.windows_dropped += 1;
                oldest(true).or_else(|| oldest(false)).unwrap_or(0)
            }
        };
        let w = &mut self.open[slot];
        w.used = true;
        w.id = self.next_id;
        self.next_id += 1;
        w.name = m.name;
        w.stem_hash = m.stem_hash;
        w.thread = m.thread;
        w.t0 = t;
        w.t1 = None;
        w.gpus.fill(GPU_WINDOW);
        w.zones.fill(ZONE_WINDOW);
    }

    fn emit_rapl(&mut self, t: i64, zone: usize, uj: u64) {
        let z = &mut self.zones[zone];
        if let Some((prev_t, prev_uj)) = z.prev {
            // What the counter did is the same for every window: decided once, as `analyze`.
            let step = CounterStep::new(prev_uj, uj, z.label.max_uj);
            for w in self.open.iter_mut().filter(|w| w.used) {
                let t1 = w.t1.unwrap_or(i64::MAX);
                let a = &mut w.zones[zone];
                if t > t1 {
                    a.past_end = true;
                }
                a.counter.add_step((prev_t, t), step, (w.t0, t1));
            }
        }
        z.prev = Some((t, uj));
        z.last_t = Some(t);
    }

    fn emit_sample(&mut self, t: i64, slot: usize, s: GpuSample) {
        let max_gap = self.opts.max_gap_ns;
        let g = &mut self.gpus[slot];
        let power = s.power_w.filter(|p| p.is_finite());
        let counter = g.label.energy_counter;
        // The GPU's own total.
        if counter {
            // Integer mJ as written in the row (exact in f64 below 2^53).
            if let Some(e) = s.energy_mj.filter(|e| e.is_finite() && *e >= 0.0) {
                g.counter.push(e as u64);
            }
        } else if let (Some(p), Some(prev)) = (power, g.prev_power) {
            g.power_total
                .add(prev, (t, p), (i64::MIN, i64::MAX), max_gap, 1e9);
        }
        let reading = if counter {
            s.energy_mj.is_some()
        } else {
            power.is_some()
        };
        // Every open window, as `analyze` adds a sample to each span.
        for w in self.open.iter_mut().filter(|w| w.used) {
            let t1 = w.t1.unwrap_or(i64::MAX);
            let a = &mut w.gpus[slot];
            if reading && t > t1 {
                a.past_end = true;
            }
            if let (Some(p), Some(prev)) = (power, g.prev_power) {
                a.power.add(prev, (t, p), (w.t0, t1), max_gap, 1e9);
            }
            if let (Some(e), Some(prev)) = (s.energy_mj, g.prev_counter) {
                a.counter.add(prev, (t, e), (w.t0, t1));
            }
        }
        if let Some(p) = power {
            g.prev_power = Some((t, p));
        }
        if let Some(e) = s.energy_mj {
            g.prev_counter = Some((t, e));
        }
        if reading {
            g.last_t = Some(t);
        }
    }

    /// Adds the windows that can no longer change to their names' counters (`analyze`'s rule:
    /// every GPU and RAPL zone has a reading past the end, or the maximum gap has passed since
    /// it). A source that has given no reading since the window began is not waited for.
    fn close_due(&mut self, now: i64) {
        let max_gap = self.opts.max_gap_ns;
        for w in self.open.iter_mut().filter(|w| w.used) {
            let Some(t1) = w.t1 else { continue };
            let done = now > t1.saturating_add(max_gap)
                || (now > t1
                    && self
                        .gpus
                        .iter()
                        .zip(&w.gpus)
                        .all(|(g, a)| g.last_t.is_none_or(|lt| lt <= w.t0) || a.past_end)
                    && self
                        .zones
                        .iter()
                        .zip(&w.zones)
                        .all(|(z, a)| z.last_t.is_none_or(|lt| lt <= w.t0) || a.past_end));
            if !done {
                continue;
            }
            let n = &mut self.names[w.name as usize];
            n.used = true;
            n.windows += 1;
            n.seconds_ns += t1.abs_diff(w.t0) as u128;
            for ((e, a), g) in n.energy_j.iter_mut().zip(&w.gpus).zip(&self.gpus) {
                *e += window_energy_j(a, g.label.energy_counter);
            }
            for (e, a) in n.cpu_energy_j.iter_mut().zip(&w.zones) {
                *e += a.counter.delta / 1e6;
            }
            w.used = false;
        }
    }

    /// Writes every family. Series of a window name appear once its first mark is seen (at 0
    /// until its first window completes); gauges appear once a reading arrives.
    pub fn write<W: Write>(&self, out: &mut Exposition<'_, W>) -> fmt::Result {
        use families::*;
        out.family(&GPU_ENERGY)?;
        for g in &self.gpus {
            let (source, j) = if g.label.energy_counter {
                (
                    "counter",
                    g.counter.result().delta.unwrap_or(0) as f64 / 1000.0,
                )
            } else {
                ("power", g.power_total.integral)
            };
            let labels = [
                ("gpu", g.index_text.as_str()),
                ("uuid", g.label.uuid.as_str()),
                ("source", source),
            ];
            out.sample(&GPU_ENERGY, &labels, Value::F64(j))?;
        }
        let gauges: [(&Family, GaugeOf); 2] = [
            (&GPU_POWER, |g| g.power_w),
            (&GPU_UTIL, |g| g.util_pct.map(|u| u / 100.0)),
        ];
        for (f, get) in gauges {
            out.family(f)?;
            for g in &self.gpus {
                if let Some(v) = get(g) {
                    let labels = [
                        ("gpu", g.index_text.as_str()),
                        ("uuid", g.label.uuid.as_str()),
                    ];
                    out.sample(f, &labels, Value::F64(v))?;
                }
            }
        }
        out.family(&CPU_ENERGY)?;
        for z in &self.zones {
            let j = z.counter.result().delta.unwrap_or(0) as f64 / 1e6;
            out.sample(
                &CPU_ENERGY,
                &[("zone", z.label.name.as_str())],
                Value::F64(j),
            )?;
        }
        out.family(&MISSED_TICKS)?;
        out.sample(&MISSED_TICKS, &[], Value::U64(self.missed_ticks))?;
        let used = || self.names.iter().filter(|n| n.used);
        out.family(&WINDOW_ENERGY)?;
        for n in used() {
            for (g, e) in self.gpus.iter().zip(&n.energy_j) {
                let labels = [("window", n.name.as_str()), ("gpu", g.index_text.as_str())];
                out.sample(&WINDOW_ENERGY, &labels, Value::F64(*e))?;
            }
        }
        out.family(&WINDOW_CPU_ENERGY)?;
        for n in used() {
            for (z, e) in self.zones.iter().zip(&n.cpu_energy_j) {
                let labels = [("window", n.name.as_str()), ("zone", z.label.name.as_str())];
                out.sample(&WINDOW_CPU_ENERGY, &labels, Value::F64(*e))?;
            }
        }
        out.family(&WINDOW_SECONDS)?;
        for n in used() {
            let s = n.seconds_ns as f64 / 1e9;
            out.sample(
                &WINDOW_SECONDS,
                &[("window", n.name.as_str())],
                Value::F64(s),
            )?;
        }
        out.family(&WINDOWS)?;
        for n in used() {
            out.sample(
                &WINDOWS,
                &[("window", n.name.as_str())],
                Value::U64(n.windows),
            )?;
        }
        out.family(&WINDOWS_DROPPED)?;
        out.sample(&WINDOWS_DROPPED, &[], Value::U64(self.windows_dropped))?;
        out.family(&LATE_ROWS)?;
        out.sample(&LATE_ROWS, &[], Value::U64(self.late_rows))
    }
}

#[cfg(test)]
impl LiveMetrics {
    /// `(windows, seconds_ns, energy_j per GPU)` of a window name (or [`OTHER_WINDOW`]).
    fn totals(&self, name: &str) -> Option<(u64, u128, Vec<f64>)> {
        self.names
            .iter()
            .find(|n| n.used && n.name == name)
            .map(|n| (n.windows, n.seconds_ns, n.energy_j.clone()))
    }

    fn used_names(&self) -> usize {
        self.names.iter().filter(|n| n.used).count()
    }
}

/// Reads one gauge of a GPU.
type GaugeOf = fn(&GpuState) -> Option<f64>;

/// A window's energy in J from the GPU's source: the counter's increase pro-rated at the edges
/// (`analyze`'s `energy_counter_j`), or the power integral (`energy_edge_j`).
fn window_energy_j(a: &GpuWindow, counter: bool) -> f64 {
    if counter {
        a.counter.delta / 1000.0
    } else {
        a.power.integral
    }
}

/// Feeds a [`LiveMetrics`] from trace.csv bytes (the header first, then whole or cut rows), so
/// the metrics see exactly the rows the recorder writes and parse them as `analyze` does.
pub struct LiveFeed {
    reader: TraceCsvReader,
    /// Each zone's field position in the current header.
    zone_fields: Vec<Option<usize>>,
    zone_columns: Vec<String>,
    rapl: Vec<Option<u64>>,
}

impl LiveFeed {
    /// A feed for the zones of `m` (in their order), expecting a header first.
    pub fn new(zones: &[ZoneLabel]) -> LiveFeed {
        LiveFeed {
            reader: TraceCsvReader::new(),
            zone_fields: alloc::vec![None; zones.len()],
            zone_columns: zones.iter().map(|z| z.column.clone()).collect(),
            rapl: alloc::vec![None; zones.len()],
        }
    }

    /// Reads `chunk` (any split) and feeds every complete row to `m`.
    pub fn write(&mut self, m: &mut LiveMetrics, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let (ev, n) = self.reader.read(chunk);
            chunk = &chunk[n..];
            match ev {
                CsvEvent::Header => {
                    let row = self.reader.row();
                    for (f, col) in self.zone_fields.iter_mut().zip(&self.zone_columns) {
                        *f = (0..row.fields()).find(|&i| row.field(i) == col.as_bytes());
                    }
                }
                CsvEvent::Row => self.row(m),
                CsvEvent::NeedsInput | CsvEvent::End => break,
                CsvEvent::BadRow { .. } | CsvEvent::UnbalancedQuote { .. } => {}
            }
        }
    }

    fn row(&mut self, m: &mut LiveMetrics) {
        let row = self.reader.row();
        let Some(t) = row.t_mono_ns() else { return };
        match row.kind() {
            RowKind::Mark => {
                if let Ok(label) = core::str::from_utf8(row.label()) {
                    let thread = row.i64(Col::MarkThread).and_then(|v| u64::try_from(v).ok());
                    m.mark(t, label, thread);
                }
            }
            RowKind::Sample => {
                let mut any = false;
                for (v, f) in self.rapl.iter_mut().zip(&self.zone_fields) {
                    *v = f
                        .and_then(|i| crate::pynum::parse_py_int(row.field(i)))
                        .and_then(|v| u64::try_from(v).ok());
                    any |= v.is_some();
                }
                if any {
                    m.rapl(t, &self.rapl);
                }
                if let Some(gpu) = row.i64(Col::GpuIndex).and_then(|g| u32::try_from(g).ok()) {
                    let s = GpuSample {
                        power_w: row.f64(Col::GpuPowerW),
                        util_pct: row.f64(Col::GpuUtilPct),
                        energy_mj: row.f64(Col::GpuEnergyMj),
                    };
                    m.sample(t, gpu, s);
                } else if !any {
                    m.tick(t);
                }
            }
            RowKind::Other => {}
        }
    }
}

#[cfg(test)]
mod tests;
