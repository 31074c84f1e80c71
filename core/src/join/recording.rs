//! A recording (trace.csv) held per GPU on its wall clock, for the join's windows.
//!
//! Each SAMPLE row with a `t_wall_ns` adds its power, utilization and NVML energy-counter
//! readings to its GPU's three series (16 bytes per reading). A window `[t0, t1]` (Unix ns) is
//! then judged from the readings that bound it: binary search for the last reading before `t0`,
//! and the readings up to the first after `t1` go through the same accumulator as
//! `analyze --json` ([`GpuAcc`]), one signal at a time, so `gpu_energy_j` is the same
//! edge-interpolated trapezoid, to the bit, that `analyze` gives as `energy_edge_j` for that
//! window. The verdict uses each GPU's idle floor from the same rows, as
//! [`WindowAnalyzer`](crate::window::WindowAnalyzer) gives it (on `t_mono_ns`, whose floor
//! does not depend on the clock), kept by `idle::IdleFloors` without the analyzer's windows.
//!
//! # Memory
//! At most `max_readings` readings in all (power, utilization and counter each count one):
//! 16 bytes each, 64 MiB at the default of 4 Mi. A one-hour recording at 10 ms with all three
//! signals takes 1.08 Mi readings (17 MiB) per GPU, so the default holds three such GPUs. Past it, the recording is refused with an error that says
//! so: the join never works on a silently shortened recording.
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::csv::Row;
use crate::csv::{Col, CsvEvent, RowKind, TraceCsvReader};
use crate::window::{
    GpuAcc, GpuSummary, ParsedKind, ParsedRow, PowerSource, Prev, Sample, Verdict, VerdictContext,
    power_text_is_bad,
};

mod idle;
#[cfg(test)]
mod tests;
use idle::IdleFloors;

/// Options of a [`RecordingBuilder`].
#[derive(Clone, Copy, Debug)]
pub struct RecordingOptions {
    /// Readings kept in all before the recording is refused.
    pub max_readings: usize,
    /// Power/utilization intervals longer than this are skipped, ns (as `analyze --max-gap-ms`).
    pub max_gap_ns: i64,
    /// Which NVML power reading `gpu_power_W` holds.
    pub power_source: PowerSource,
    /// GPUs kept (later ones are counted, not used).
    pub max_gpus: usize,
}

impl Default for RecordingOptions {
    fn default() -> Self {
        RecordingOptions {
            max_readings: 4 << 20,
            max_gap_ns: 5_000_000_000,
            power_source: PowerSource::Unknown,
            max_gpus: 64,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct RecGpu {
    key: Option<i64>,
    power: Vec<(i64, f64)>,
    util: Vec<(i64, f64)>,
    counter: Vec<(i64, f64)>,
    /// Times of the `gpu_power_W` values that are not finite numbers (nan, inf, text): left
    /// out of `power`, as the analyzer leaves them out, and counted per window.
    bad_power: Vec<i64>,
    /// The latest time of a row kept so far, and whether an earlier one followed it (the
    /// series then need sorting).
    last_t: Option<i64>,
    out_of_order: bool,
}

impl RecGpu {
    /// Rows without a `gpu_index` that carry no GPU reading: no GPU (a recording made
    /// without NVML).
    fn is_phantom(&self) -> bool {
        self.key.is_none()
            && self.power.is_empty()
            && self.bad_power.is_empty()
            && self.util.is_empty()
            && self.counter.is_empty()
    }
}

/// Why a recording was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordingError {
    /// More readings than [`RecordingOptions::max_readings`]: the join's memory bound.
    TooManyReadings {
        /// The bound.
        max_readings: usize,
        /// The line of the reading past it.
        line: u64,
    },
    /// No SAMPLE row has a `t_wall_ns`: nothing to line up with the trace.
    NoWallClock {
        /// SAMPLE rows read.
        samples: u64,
    },
}

impl core::fmt::Display for RecordingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordingError::TooManyReadings { max_readings, line } => write!(
                f,
                "the recording holds more than {max_readings} readings (line {line}): past the join's memory bound"
            ),
            RecordingError::NoWallClock { samples } => write!(
                f,
                "the recording has no SAMPLE row with a t_wall_ns ({samples} samples)"
            ),
        }
    }
}

impl core::error::Error for RecordingError {}

/// Streams a trace.csv into a [`Recording`]: [`write`](Self::write) chunks, then
/// [`end`](Self::end).
pub struct RecordingBuilder {
    opts: RecordingOptions,
    reader: TraceCsvReader,
    floors: IdleFloors,
    gpus: Vec<RecGpu>,
    readings: usize,
    samples: u64,
    without_wall: u64,
    first_without_wall: Option<u64>,
    dropped_gpu_samples: u64,
    bad_power: u64,
    first_bad_power_line: Option<u64>,
    span: Option<(i64, i64)>,
    error: Option<RecordingError>,
    /// Bytes the whole input holds, when the caller knows ([`size_hint`](Self::size_hint)).
    total_bytes: Option<u64>,
    /// Bytes written so far.
    bytes_in: u64,
    /// Whether the series were reserved from the size hint.
    reserved: bool,
}

/// Bytes read before the series are reserved from the size hint: enough rows to estimate the
/// bytes per row, a small share of a large file.
const RESERVE_AFTER_BYTES: u64 = 256 << 10;

impl RecordingBuilder {
    /// A builder with these options.
    pub fn new(opts: RecordingOptions) -> RecordingBuilder {
        RecordingBuilder {
            opts,
            reader: TraceCsvReader::new(),
            floors: IdleFloors::new(),
            gpus: Vec::new(),
            readings: 0,
            samples: 0,
            without_wall: 0,
            first_without_wall: None,
            dropped_gpu_samples: 0,
            bad_power: 0,
            first_bad_power_line: None,
            span: None,
            error: None,
            total_bytes: None,
            bytes_in: 0,
            reserved: false,
        }
    }

    /// The size of the whole input, when known (a file's length). Once the first 256 KiB are
    /// read, each GPU's series are reserved for the rows the rest of the file is expected to
    /// hold at the same bytes per row (within `max_readings`), so they are not grown by
    /// copying. Only capacity changes: the result is the same with or without the hint.
    pub fn size_hint(&mut self, total_bytes: u64) {
        self.total_bytes = Some(total_bytes);
    }

    /// Reserves each GPU's series for the rows expected in all, at the bytes per row so far.
    fn reserve_from_hint(&mut self) {
        self.reserved = true;
        let Some(total) = self.total_bytes else {
            return;
        };
        if self.bytes_in == 0 || total <= self.bytes_in {
            return;
        }
        // Readings expected per reading so far, with 1/16 to spare; never past the bound.
        let scale = |n: usize| -> usize {
            let est = (n as u128 * total as u128 / self.bytes_in as u128) * 17 / 16;
            usize::try_from(est).unwrap_or(usize::MAX)
        };
        let mut budget = self.opts.max_readings.saturating_add(1);
        for g in &mut self.gpus {
            for v in [&mut g.power, &mut g.util, &mut g.counter] {
                let want = scale(v.len()).min(budget);
                budget -= want;
                v.reserve_exact(want.saturating_sub(v.len()));
            }
        }
    }

    /// Reads a chunk.
    ///
    /// # Errors
    /// Past `max_readings` (and every call after).
    pub fn write(&mut self, mut chunk: &[u8]) -> Result<(), RecordingError> {
        self.bytes_in += chunk.len() as u64;
        while !chunk.is_empty() {
            let (ev, n) = self.reader.read(chunk);
            chunk = &chunk[n..];
            self.on_event(ev);
            if let Some(e) = self.error {
                return Err(e);
            }
        }
        if !self.reserved && self.bytes_in >= RESERVE_AFTER_BYTES {
            self.reserve_from_hint();
        }
        Ok(())
    }

    fn on_event(&mut self, ev: CsvEvent) {
        match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            // Headers and bad records matter to no figure the join reads.
            CsvEvent::Header | CsvEvent::BadRow { .. } | CsvEvent::UnbalancedQuote { .. } => {}
            CsvEvent::Row => {
                let row = self.reader.row();
                // Each field is parsed once, for the idle floor and for the series.
                let p = parse_row(&row);
                self.floors.push(&p);
                // A SAMPLE row is `Sample` to the parse, or `Bad` without a `t_mono_ns`.
                let sample = match p.kind {
                    ParsedKind::Sample => true,
                    ParsedKind::Bad => row.kind() == RowKind::Sample,
                    ParsedKind::Mark | ParsedKind::Other => false,
                };
                if !sample {
                    return;
                }
                self.samples += 1;
                // Counted over the rows the analyzer counts them in (those with a t_mono_ns).
                let parsed = p.kind == ParsedKind::Sample;
                let raw_power = row.raw(Col::GpuPowerW).unwrap_or(b"");
                let power_w = if parsed {
                    p.power_w
                } else {
                    row.f64(Col::GpuPowerW)
                };
                let bad_power = power_text_is_bad(raw_power, power_w);
                if bad_power && parsed {
                    self.bad_power += 1;
                    self.first_bad_power_line.get_or_insert(row.line());
                }
                let Some(t) = row.i64(Col::TWallNs) else {
                    self.without_wall += 1;
                    self.first_without_wall.get_or_insert(row.line());
                    return;
                };
                // A sample row without a `t_mono_ns` is bad to the idle floor (as to the
                // analyzer), and nothing else of it is parsed yet.
                let key = if parsed {
                    p.gpu_index
                } else {
                    row.i64(Col::GpuIndex)
                };
                let slot = match self.gpus.iter().position(|g| g.key == key) {
                    Some(s) => s,
                    None if self.gpus.len() < self.opts.max_gpus => {
                        self.gpus.push(RecGpu {
                            key,
                            ..RecGpu::default()
                        });
                        self.gpus.len() - 1
                    }
                    None => {
                        self.dropped_gpu_samples += 1;
                        return;
                    }
                };
                let g = &mut self.gpus[slot];
                g.out_of_order |= g.last_t.is_some_and(|l| t < l);
                g.last_t = Some(t);
                let before = g.power.len() + g.util.len() + g.counter.len() + g.bad_power.len();
                let (power, util, energy) = if parsed {
                    (power_w, p.util_pct, p.energy_mj)
                } else {
                    (power_w, row.f64(Col::GpuUtilPct), row.f64(Col::GpuEnergyMj))
                };
                // Only finite power enters the series: the analyzer bridges a non-finite
                // reading with the finite ones around it, and so does every window here.
                match power {
                    Some(p) if p.is_finite() => g.power.push((t, p)),
                    _ if bad_power => g.bad_power.push(t),
                    _ => {}
                }
                if let Some(u) = util {
                    g.util.push((t, u));
                }
                if let Some(e) = energy {
                    g.counter.push((t, e));
                }
                self.readings +=
                    g.power.len() + g.util.len() + g.counter.len() + g.bad_power.len() - before;
                self.span = Some(match self.span {
                    None => (t, t),
                    Some((a, b)) => (a.min(t), b.max(t)),
                });
                if self.readings > self.opts.max_readings {
                    self.error = Some(RecordingError::TooManyReadings {
                        max_readings: self.opts.max_readings,
                        line: row.line(),
                    });
                }
            }
        }
    }

    /// Ends the input.
    ///
    /// # Errors
    /// When the recording was refused, or has no sample with a `t_wall_ns`.
    pub fn end(mut self) -> Result<Recording, RecordingError> {
        loop {
            let (ev, _) = self.reader.read(&[]);
            self.on_event(ev);
            if ev == CsvEvent::End {
                break;
            }
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.span.is_none() {
            return Err(RecordingError::NoWallClock {
                samples: self.samples,
            });
        }
        for g in &mut self.gpus {
            // A recording is nearly always in time order already, and a stable sort would
            // still take a scratch buffer of half the series.
            if !g.out_of_order {
                continue;
            }
            // Stable: equal times keep file order, as the analyzer's reorder buffer does.
            g.power.sort_by_key(|r| r.0);
            g.util.sort_by_key(|r| r.0);
            g.counter.sort_by_key(|r| r.0);
            g.bad_power.sort_unstable();
        }
        let summaries = self.floors.end();
        Ok(Recording {
            gpus: self.gpus,
            summaries,
            max_gap_ns: self.opts.max_gap_ns,
            power_source: self.opts.power_source,
            span_ns: self.span,
            samples: self.samples,
            samples_without_wall: self.without_wall,
            first_line_without_wall: self.first_without_wall,
            dropped_gpu_samples: self.dropped_gpu_samples,
            bad_power: self.bad_power,
            first_bad_power_line: self.first_bad_power_line,
            gpu_readings: self.readings as u64,
        })
    }
}

/// One GPU's readings for [`Recording::from_series`], on the Unix clock and in time order.
#[derive(Clone, Debug, Default)]
pub(crate) struct SeriesGpu {
    /// The GPU's key (its `gpu_index` to the windows).
    pub key: i64,
    /// Power, (Unix ns, W), finite.
    pub power: Vec<(i64, f64)>,
    /// Utilization, (Unix ns, %).
    pub util: Vec<(i64, f64)>,
}

impl Recording {
    /// A recording from readings that did not come from a trace.csv (the trace's own counters,
    /// [`counters`](super::counters)), so that their windows are those of a recording: the same
    /// accumulator, the same verdicts. Each GPU's idle floor is the one a trace.csv gives whose
    /// SAMPLE rows are these power readings, all GPUs merged in time order (ties: GPU order),
    /// with the Unix time as `t_mono_ns`.
    pub(crate) fn from_series(gpus: Vec<SeriesGpu>, max_gap_ns: i64) -> Recording {
        let mut floors = IdleFloors::new();
        let mut next = alloc::vec![0usize; gpus.len()];
        let mut samples = 0u64;
        loop {
            // The earliest head: GPUs are few, a scan of the heads is enough.
            let mut best: Option<(i64, usize)> = None;
            for (k, g) in gpus.iter().enumerate() {
                if let Some(&(t, _)) = g.power.get(next[k])
                    && best.is_none_or(|b| t < b.0)
                {
                    best = Some((t, k));
                }
            }
            let Some((t, k)) = best else {
                break;
            };
            let power_w = gpus[k].power[next[k]].1;
            next[k] += 1;
            samples += 1;
            floors.push(&ParsedRow {
                kind: ParsedKind::Sample,
                t_mono_ns: t,
                gpu_index: Some(gpus[k].key),
                power_w: Some(power_w),
                ..ParsedRow::default()
            });
        }
        let mut span: Option<(i64, i64)> = None;
        let mut readings = 0u64;
        for g in &gpus {
            for v in [&g.power, &g.util] {
                readings += v.len() as u64;
                if let (Some(a), Some(b)) = (v.first(), v.last()) {
                    span = Some(span.map_or((a.0, b.0), |(x, y)| (x.min(a.0), y.max(b.0))));
                }
            }
        }
        Recording {
            gpus: gpus
                .into_iter()
                .map(|g| RecGpu {
                    key: Some(g.key),
                    power: g.power,
                    util: g.util,
                    ..RecGpu::default()
                })
                .collect(),
            summaries: floors.end(),
            max_gap_ns,
            power_source: PowerSource::Unknown,
            span_ns: span,
            samples,
            samples_without_wall: 0,
            first_line_without_wall: None,
            dropped_gpu_samples: 0,
            bad_power: 0,
            first_bad_power_line: None,
            gpu_readings: readings,
        }
    }
}

/// The fields of a row the recording reads, each parsed once: what [`IdleFloors`] needs (as
/// [`ParsedRow::from_row`] gives it) and the series' utilization and energy counter. The
/// columns only the analyzer's windows and warnings read are not parsed.
fn parse_row(row: &Row<'_>) -> ParsedRow {
    let mut p = ParsedRow::from_row_deferred(row, false);
    if p.kind == ParsedKind::Sample {
        p.power_w = row.f64(Col::GpuPowerW);
        p.util_pct = row.f64(Col::GpuUtilPct);
        p.energy_mj = row.f64(Col::GpuEnergyMj);
        p.rapl_uj = row
            .i64(Col::RaplEnergyUj)
            .and_then(|v| u64::try_from(v).ok());
    }
    p
}

/// A recording ready for windows.
#[derive(Debug)]
pub struct Recording {
    gpus: Vec<RecGpu>,
    summaries: Vec<GpuSummary>,
    max_gap_ns: i64,
    power_source: PowerSource,
    /// First and last sample time, Unix ns.
    pub span_ns: Option<(i64, i64)>,
    /// SAMPLE rows.
    pub samples: u64,
    /// SAMPLE rows without a `t_wall_ns` (skipped).
    pub samples_without_wall: u64,
    /// Line of the first of them.
    pub first_line_without_wall: Option<u64>,
    /// Samples of GPUs past `max_gpus` (skipped).
    pub dropped_gpu_samples: u64,
    /// `gpu_power_W` values that are not finite numbers (nan, inf, text), as `analyze` counts
    /// them.
    pub bad_power: u64,
    /// Line of the first of them.
    pub first_bad_power_line: Option<u64>,
    /// GPU readings kept (power, its non-finite values, utilization, energy counter).
    gpu_readings: u64,
}

/// Why the join has no GPU figure for a recording whose SAMPLE rows carry no GPU reading.
pub const NO_GPU_READINGS: &str = "the recording has no GPU readings: no SAMPLE row has a gpu_power_W, gpu_util_pct or gpu_energy_mJ value (recorded without NVML, e.g. on a host without a GPU), so the pauses have no telemetry and the annotations no energy";

/// A recording borrowed (the native join, which outlives its passes) or shared (a join that
/// owns its recording across calls, as the page's [`TraceJoin`](super::TraceJoin)).
#[derive(Clone, Debug)]
pub enum RecRef<'r> {
    /// Borrowed.
    Borrowed(&'r Recording),
    /// Shared.
    Shared(Arc<Recording>),
}

impl core::ops::Deref for RecRef<'_> {
    type Target = Recording;
    fn deref(&self) -> &Recording {
        match self {
            RecRef::Borrowed(r) => r,
            RecRef::Shared(r) => r,
        }
    }
}

impl<'r> From<&'r Recording> for RecRef<'r> {
    fn from(r: &'r Recording) -> Self {
        RecRef::Borrowed(r)
    }
}

impl From<Arc<Recording>> for RecRef<'_> {
    fn from(r: Arc<Recording>) -> Self {
        RecRef::Shared(r)
    }
}

/// One GPU over one window.
#[derive(Clone, Debug)]
pub struct GpuWindowJoin {
    /// The accumulator (the same fields `analyze` reads).
    pub acc: GpuAcc,
    /// The verdict with its evidence.
    pub verdict: Verdict,
    /// `gpu_power_W` values in the window that are not finite numbers (nan, inf, text): left
    /// out of the figures, as `analyze` leaves them out.
    pub non_finite_power: u64,
}

impl GpuWindowJoin {
    /// Edge-interpolated energy, J: `None` when no power interval touches the window (as
    /// `analyze`'s `energy_edge_j`).
    pub fn energy_j(&self) -> Option<f64> {
        (self.acc.power.covered_ns > 0 || self.acc.power.skipped_ns > 0)
            .then_some(self.acc.power.integral)
    }
}

impl Recording {
    /// The slot of the GPU recorded as `gpu_index` (a file without the column is GPU 0);
    /// rows without a `gpu_index` and without any GPU reading are no GPU.
    pub fn slot(&self, gpu_index: i64) -> Option<usize> {
        self.gpus
            .iter()
            .position(|g| !g.is_phantom() && g.key.unwrap_or(0) == gpu_index)
    }

    /// Slots of the recorded GPUs that are GPUs: not rows without a `gpu_index` and without
    /// any GPU reading.
    pub fn gpu_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots().filter(|&s| !self.gpus[s].is_phantom())
    }

    /// [`NO_GPU_READINGS`] when the recording has SAMPLE rows but no GPU reading in any.
    pub fn gpu_energy_note(&self) -> Option<&'static str> {
        (self.samples > 0 && self.gpu_readings == 0).then_some(NO_GPU_READINGS)
    }

    /// The warning of the non-finite `gpu_power_W` values, when there are any: `analyze`'s
    /// words, for what the join leaves out.
    pub fn bad_power_warning(&self) -> Option<String> {
        (self.bad_power > 0).then(|| {
            alloc::format!(
                "the recording's {} gpu_power_W values are not finite numbers (nan, inf or text): left out of the pause and annotation energies, idle floor and verdicts (each pause and annotation counts its own in non_finite_power_readings); first at line {}",
                self.bad_power,
                self.first_bad_power_line.unwrap_or(0)
            )
        })
    }

    /// Slots of every recorded GPU.
    pub fn slots(&self) -> core::ops::Range<usize> {
        0..self.gpus.len()
    }

    /// The `gpu_index` of a slot (0 for a file without the column).
    pub fn gpu_index(&self, slot: usize) -> i64 {
        self.gpus[slot].key.unwrap_or(0)
    }

    /// GPU `slot`'s power readings, (Unix ns, W), in time order.
    pub fn power_readings(&self, slot: usize) -> &[(i64, f64)] {
        &self.gpus[slot].power
    }

    /// GPU `slot`'s energy counter readings, (Unix ns, mJ), in time order (the steps'
    /// counter update period is measured from them).
    pub fn counter_readings(&self, slot: usize) -> &[(i64, f64)] {
        &self.gpus[slot].counter
    }

    /// GPU `slot` over `[t0_ns, t1_ns]` (Unix ns).
    pub fn window(&self, slot: usize, t0_ns: i64, t1_ns: i64) -> GpuWindowJoin {
        let g = &self.gpus[slot];
        let mut acc = GpuAcc::default();
        let none = Sample {
            t_ns: 0,
            power_w: None,
            util_pct: None,
            sm_clock_mhz: None,
            energy_mj: None,
        };
        let max_gap = self.max_gap_ns;
        let mut feed = |series: &[(i64, f64)], make: &dyn Fn(i64, f64) -> (Sample, Prev)| {
            let k = series.partition_point(|r| r.0 < t0_ns);
            let mut prev: Option<(i64, f64)> = k.checked_sub(1).map(|j| series[j]);
            for &(t, v) in &series[k..] {
                let (s, _) = make(t, v);
                let p = match prev {
                    Some((pt, pv)) => make(pt, pv).1,
                    None => Prev::default(),
                };
                acc.add(&s, &p, t0_ns, t1_ns, max_gap);
                prev = Some((t, v));
                if t > t1_ns {
                    break;
                }
            }
        };
        feed(&g.power, &|t, v| {
            (
                Sample {
                    t_ns: t,
                    power_w: Some(v),
                    ..none
                },
                Prev {
                    power: Some((t, v)),
                    ..Prev::default()
                },
            )
        });
        feed(&g.util, &|t, v| {
            (
                Sample {
                    t_ns: t,
                    util_pct: Some(v),
                    ..none
                },
                Prev {
                    util: Some((t, v)),
                    ..Prev::default()
                },
            )
        });
        feed(&g.counter, &|t, v| {
            (
                Sample {
                    t_ns: t,
                    energy_mj: Some(v),
                    ..none
                },
                Prev {
                    counter: Some((t, v)),
                    ..Prev::default()
                },
            )
        });
        let ctx = VerdictContext {
            gpus: &self.summaries,
            source: self.power_source,
            max_gap_ns: self.max_gap_ns,
        };
        // The analyzer's GPUs, found by the same key (its order is first appearance, as ours).
        let verdict = match self.summaries.iter().position(|s| s.gpu_index == g.key) {
            Some(i) => ctx.gpu_verdict(i, &acc, t0_ns, t1_ns),
            None => crate::window::combine_verdicts(core::iter::empty()),
        };
        let bad = &g.bad_power;
        let non_finite_power =
            (bad.partition_point(|&t| t <= t1_ns) - bad.partition_point(|&t| t < t0_ns)) as u64;
        GpuWindowJoin {
            acc,
            verdict,
            non_finite_power,
        }
    }
}
