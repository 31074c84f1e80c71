//! One selected window of a trace.csv in memory fixed at compile time, without an allocator:
//! the reference's three figures (duration, trapezoid energy, mean utilization) and the verdict,
//! for a microcontroller or any caller that cannot allocate.
//!
//! It follows [`WindowAnalyzer`](super::WindowAnalyzer) row for row where that one analyzes the
//! selected window (same reader, reorder rule, accumulators and verdict rules), so the figures are
//! the same bits, within these bounds, each a const parameter:
//! - `GPUS` GPUs: samples of further GPUs are skipped and counted (`rows.samples_dropped`).
//! - `ROWS` rows held to restore time order: a row leaves once `ROWS - 1` are held, even inside
//!   the horizon (counted in [`FixedResult::released_early`]); results differ from the growable
//!   buffer's only when a later row then reaches back before it (it is counted late).
//!
//! The verdict needs each GPU's idle floor, a percentile of the whole recording's power, which
//! a 0.25 W histogram (32 KiB per GPU) gives in one pass. Here the caller reads the file twice
//! instead ([`Pass::Again`]), and [`TwoPassQuantile`] finds the same percentile in 1.3 KiB.
use super::acc::{GpuAcc, Prev, RefAcc, Sample};
use super::floor::TwoPassQuantile;
use super::lines::InputNotes;
use super::reorder::{Entry, FixedRing, Reorder};
use super::verdict::{self, PowerSource};
use super::{
    IDLE_FLOOR_Q, POWER_HIGH_Q, ParsedKind, ParsedRow, RefFigures, RowCounts, SelectionError,
    busy_threshold_w, mean_interval_ms,
};
use crate::csv::{CsvEvent, Row, TraceCsvReader};

/// What to analyze.
#[derive(Clone, Copy, Debug)]
pub struct FixedOptions<'a> {
    /// Start mark label (whole label).
    pub start: &'a [u8],
    /// End mark label (whole label).
    pub end: &'a [u8],
    /// 1-based occurrence of each label (file order).
    pub occurrence: u32,
    /// Power/utilization intervals longer than this are skipped, ns.
    pub max_gap_ns: i64,
    /// Rows are held this long behind the newest row to restore time order, ns.
    pub reorder_horizon_ns: i64,
    /// Which NVML reading fills `gpu_power_W`.
    pub power_source: PowerSource,
}

impl<'a> FixedOptions<'a> {
    /// The window between the first `start` and the first `end` mark, with the defaults of
    /// [`WindowOptions`](super::WindowOptions) (5 s max gap, 2 s reorder horizon, unknown power
    /// source).
    pub const fn new(start: &'a [u8], end: &'a [u8]) -> FixedOptions<'a> {
        FixedOptions {
            start,
            end,
            occurrence: 1,
            max_gap_ns: 5_000_000_000,
            reorder_horizon_ns: 2_000_000_000,
            power_source: PowerSource::Unknown,
        }
    }
}

/// What [`FixedWindowAnalyzer::end_pass`] asks of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Write the whole file again from its first byte, then call `end_pass` again.
    Again,
    /// The result is ready.
    Done,
}

/// The selected window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedWindow {
    /// Start, CLOCK_MONOTONIC ns.
    pub t0_mono_ns: i64,
    /// End, CLOCK_MONOTONIC ns.
    pub t1_mono_ns: i64,
    /// (t1 − t0) / 1e9, as the reference computes it.
    pub duration_s: f64,
    /// The reference's figures over every GPU's samples together (its three lines).
    pub reference: RefFigures,
    /// `compute`, `waiting` or `mixed` over all GPUs; `None` when no signal resolves the window.
    pub verdict: Option<&'static str>,
    /// Whether the verdict rests on signals that resolve a window of this length well.
    pub confident: bool,
}

/// The analysis of one window.
#[derive(Clone, Debug)]
pub struct FixedResult {
    /// Row counts (`marks_dropped` and `spans_dropped` stay 0: no marks or spans are kept).
    pub rows: RowCounts,
    /// GPUs seen (at most `GPUS`).
    pub gpus: usize,
    /// Time of the selected start mark, if found.
    pub start_t_mono_ns: Option<i64>,
    /// Time of the selected end mark, if found.
    pub end_t_mono_ns: Option<i64>,
    /// The window, when both marks were found in order and placed in time order.
    pub window: Option<FixedWindow>,
    /// Rows released by the reorder buffer because it was full, before their horizon.
    pub released_early: u64,
    /// What the input's warnings need beyond the row counts.
    pub notes: InputNotes,
    /// Why there are no GPU figures, when the file has SAMPLE rows but no GPU reading
    /// ([`NO_GPU_READINGS`](super::NO_GPU_READINGS)), as `analyze` says it.
    pub gpu_energy_note: Option<&'static str>,
}

impl FixedResult {
    /// The reference's error for the selected marks, if any.
    pub fn selection_error(&self) -> Option<SelectionError> {
        SelectionError::of(self.start_t_mono_ns, self.end_t_mono_ns)
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Item {
    Sample {
        slot: u16,
        power_w: Option<f64>,
        util_pct: Option<f64>,
    },
    /// A mark; bit 0: the selected start, bit 1: the selected end.
    Mark(u8),
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Gpu {
    key: Option<i64>,
    prev: Prev,
    samples: u64,
    power_samples: u64,
    first_power_t: Option<i64>,
    last_power_t: Option<i64>,
    /// Rows with a GPU reading (power text or utilization).
    readings: u64,
}

impl Gpu {
    /// Rows without a `gpu_index` and without a reading are no GPU, as to the growable
    /// analyzer (`GpuSummary::is_phantom`).
    fn is_phantom(&self) -> bool {
        self.key.is_none() && self.readings == 0
    }

    const NEW: Gpu = Gpu {
        key: None,
        prev: Prev {
            power: None,
            util: None,
            counter: None,
        },
        samples: 0,
        power_samples: 0,
        first_power_t: None,
        last_power_t: None,
        readings: 0,
    };
}

/// The memory of a [`FixedWindowAnalyzer`] that grows with its bounds: the reorder ring, and per
/// GPU its state, two-pass floor histogram and window accumulators (about `ROWS` × 56 B +
/// `GPUS` × 1.8 KiB). Apart from the analyzer, and all zero bytes when new, so that it can be a
/// static that costs no flash (`.bss`); the analyzer borrows it.
pub struct FixedBuffers<const GPUS: usize, const ROWS: usize> {
    ring: FixedRing<Entry<Item>, ROWS>,
    gpus: [Gpu; GPUS],
    floors: [TwoPassQuantile; GPUS],
    accs: [GpuAcc; GPUS],
}

/// The ring's unused slots (all zero bytes).
const FILL: Entry<Item> = Entry::new(
    (0, 0),
    Item::Sample {
        slot: 0,
        power_w: None,
        util_pct: None,
    },
);

impl<const GPUS: usize, const ROWS: usize> FixedBuffers<GPUS, ROWS> {
    /// Empty buffers (`const`: for a static).
    pub const fn new() -> Self {
        FixedBuffers {
            ring: FixedRing::new(FILL),
            gpus: [Gpu::NEW; GPUS],
            floors: [TwoPassQuantile::new(); GPUS],
            accs: [GpuAcc::NEW; GPUS],
        }
    }
}

impl<const GPUS: usize, const ROWS: usize> Default for FixedBuffers<GPUS, ROWS> {
    fn default() -> Self {
        Self::new()
    }
}

/// The streaming analyzer of one window, for at most `GPUS` GPUs with a reorder ring of `ROWS`
/// rows (at least 2), in [`FixedBuffers`] it borrows. The caller owns the [`TraceCsvReader`] too
/// (each can live in a static): [`write`](Self::write) the file in chunks of any size through it,
/// then [`end_pass`](Self::end_pass); on [`Pass::Again`] write the whole file once more and call
/// `end_pass` again; then [`result`](Self::result).
pub struct FixedWindowAnalyzer<'a, const GPUS: usize, const ROWS: usize> {
    eng: Engine<'a, GPUS, ROWS>,
}

struct Engine<'a, const GPUS: usize, const ROWS: usize> {
    opts: FixedOptions<'a>,
    second_pass: bool,
    done: bool,
    counts: RowCounts,
    /// SAMPLE rows with a GPU reading (`has_gpu_reading`), for the no-GPU note.
    gpu_reading_rows: u64,
    notes: InputNotes,
    reorder: Reorder<Item, &'a mut FixedRing<Entry<Item>, ROWS>>,
    n_gpus: usize,
    gpus: &'a mut [Gpu; GPUS],
    /// Idle floor and p99 of each GPU's power; kept across the passes.
    floors: &'a mut [TwoPassQuantile; GPUS],
    sel_seen: [u32; 2],
    sel_t: [Option<i64>; 2],
    /// The window once its start mark left the reorder buffer: t0, t1 when its end did.
    win: Option<(i64, Option<i64>)>,
    reference: RefAcc,
    accs: &'a mut [GpuAcc; GPUS],
}

impl<'a, const GPUS: usize, const ROWS: usize> FixedWindowAnalyzer<'a, GPUS, ROWS> {
    /// A new analyzer in `bufs` (emptied; they may have served another analysis).
    pub fn new(opts: FixedOptions<'a>, bufs: &'a mut FixedBuffers<GPUS, ROWS>) -> Self {
        const { assert!(ROWS >= 2, "the reorder ring needs at least 2 rows") };
        let FixedBuffers {
            ring,
            gpus,
            floors,
            accs,
        } = bufs;
        let mut a = FixedWindowAnalyzer {
            eng: Engine {
                opts,
                second_pass: false,
                done: false,
                counts: RowCounts::default(),
                gpu_reading_rows: 0,
                notes: InputNotes::default(),
                reorder: Reorder::with_ring(ring, ROWS - 1, opts.reorder_horizon_ns),
                n_gpus: 0,
                gpus,
                floors,
                sel_seen: [0; 2],
                sel_t: [None; 2],
                win: None,
                reference: RefAcc::NEW,
                accs,
            },
        };
        a.reset(opts);
        a
    }

    /// Starts over with `opts`, in place.
    pub fn reset(&mut self, opts: FixedOptions<'a>) {
        let e = &mut self.eng;
        e.opts = opts;
        e.second_pass = false;
        e.done = false;
        for f in e.floors.iter_mut() {
            *f = TwoPassQuantile::new();
        }
        e.restart();
    }

    /// Feeds a chunk of the file through `reader` (ignored once the reader has ended: reset it
    /// for another file).
    pub fn write(&mut self, reader: &mut TraceCsvReader, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let (ev, n) = reader.read(chunk);
            chunk = &chunk[n..];
            self.on_event(reader, ev);
            if ev == CsvEvent::End {
                break;
            }
        }
    }

    /// Adds what `reader` just returned (for callers that drive the reader themselves).
    pub fn on_event(&mut self, reader: &TraceCsvReader, ev: CsvEvent) {
        let e = &mut self.eng;
        match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            CsvEvent::Header => {
                e.counts.headers += 1;
                if !reader.header_usable() {
                    e.notes.no_header_line.get_or_insert(reader.header_line());
                }
            }
            CsvEvent::BadRow { line } => e.bad(line),
            CsvEvent::UnbalancedQuote { line } => {
                e.bad(line);
                e.notes.open_quote_line.get_or_insert(line);
            }
            CsvEvent::Row => e.push_row(&reader.row()),
        }
    }

    /// Ends the input of this pass: [`Pass::Again`] when the verdict needs the file once more
    /// (`reader` is then reset for it).
    pub fn end_pass(&mut self, reader: &mut TraceCsvReader) -> Pass {
        if self.eng.done {
            return Pass::Done;
        }
        loop {
            let (ev, _) = reader.read(&[]);
            self.on_event(reader, ev);
            if ev == CsvEvent::End {
                break;
            }
        }
        let e = &mut self.eng;
        while let Some((t, item)) = e.reorder.pop(true) {
            e.emit(t, item);
        }
        let floors_needed = e.window_closed()
            && SelectionError::of(e.sel_t[0], e.sel_t[1]).is_none()
            && e.floors[..e.n_gpus].iter().any(|f| !f.is_empty());
        if e.second_pass || !floors_needed {
            e.done = true;
            return Pass::Done;
        }
        for f in e.floors.iter_mut() {
            f.next_pass([IDLE_FLOOR_Q, POWER_HIGH_Q]);
        }
        e.second_pass = true;
        e.restart();
        reader.reset();
        Pass::Again
    }

    /// The analysis (complete once [`end_pass`](Self::end_pass) returned [`Pass::Done`]).
    pub fn result(&self) -> FixedResult {
        self.eng.result()
    }
}

impl<const GPUS: usize, const ROWS: usize> Engine<'_, GPUS, ROWS> {
    /// Back to the state before the first row, keeping the floors' first pass.
    fn restart(&mut self) {
        self.counts = RowCounts::default();
        self.gpu_reading_rows = 0;
        self.notes = InputNotes::default();
        self.reorder.clear(self.opts.reorder_horizon_ns);
        self.n_gpus = 0;
        for g in self.gpus.iter_mut() {
            *g = Gpu::NEW;
        }
        self.sel_seen = [0; 2];
        self.sel_t = [None; 2];
        self.win = None;
        self.reference = RefAcc::NEW;
        for a in self.accs.iter_mut() {
            *a = GpuAcc::NEW;
        }
    }

    fn window_closed(&self) -> bool {
        matches!(self.win, Some((_, Some(_))))
    }

    fn bad(&mut self, line: u64) {
        self.counts.bad_rows += 1;
        self.counts.first_bad_line.get_or_insert(line);
    }

    fn push_row(&mut self, row: &Row<'_>) {
        // The reference figures and the verdict need no more than the reference-only parse.
        let p = ParsedRow::from_row(row, false);
        self.counts.rows += 1;
        let t = p.t_mono_ns;
        let item = match p.kind {
            ParsedKind::Other => {
                self.counts.other_rows += 1;
                return;
            }
            ParsedKind::Bad => {
                self.bad(p.line);
                return;
            }
            ParsedKind::Mark => {
                self.counts.marks += 1;
                let label = row.label();
                let mut sel = 0;
                for (k, want) in [self.opts.start, self.opts.end].into_iter().enumerate() {
                    if label == want {
                        self.sel_seen[k] += 1;
                        if self.sel_seen[k] == self.opts.occurrence {
                            self.sel_t[k] = Some(t);
                            sel |= 1 << k;
                        }
                    }
                }
                Item::Mark(sel)
            }
            ParsedKind::Sample => {
                self.counts.samples += 1;
                self.gpu_reading_rows += u64::from(super::row::has_gpu_reading(&p));
                if p.power_bad {
                    self.notes.bad_power += 1;
                    self.notes.first_bad_power_line.get_or_insert(p.line);
                }
                let Some(slot) = self.slot(p.gpu_index) else {
                    self.counts.samples_dropped += 1;
                    return;
                };
                self.gpus[slot as usize].readings +=
                    u64::from(p.power_w.is_some() || p.power_bad || p.util_pct.is_some());
                Item::Sample {
                    slot,
                    power_w: p.power_w,
                    util_pct: p.util_pct,
                }
            }
        };
        let prio = if matches!(item, Item::Mark(_)) { 0 } else { 1 };
        if self.reorder.push(t, prio, item).is_err() {
            self.counts.late_rows += 1;
            self.counts.first_late_line.get_or_insert(p.line);
            return;
        }
        while let Some((t, item)) = self.reorder.pop(false) {
            self.emit(t, item);
        }
    }

    fn slot(&mut self, key: Option<i64>) -> Option<u16> {
        if let Some(i) = self.gpus[..self.n_gpus].iter().position(|g| g.key == key) {
            return Some(i as u16);
        }
        if self.n_gpus >= GPUS.min(u16::MAX as usize) {
            return None;
        }
        self.gpus[self.n_gpus].key = key;
        self.n_gpus += 1;
        Some((self.n_gpus - 1) as u16)
    }

    fn emit(&mut self, t: i64, item: Item) {
        match item {
            Item::Mark(sel) => {
                if sel & 1 != 0 {
                    self.win = Some((t, None));
                    self.reference = RefAcc::NEW;
                    for a in self.accs.iter_mut() {
                        *a = GpuAcc::NEW;
                    }
                }
                if sel & 2 != 0
                    && let Some((_, t1 @ None)) = &mut self.win
                {
                    *t1 = Some(t);
                }
            }
            Item::Sample {
                slot,
                power_w,
                util_pct,
            } => {
                let slot = slot as usize;
                // Non-finite readings go to the reference figures only.
                let finite_power = power_w.filter(|p| p.is_finite());
                let g = &mut self.gpus[slot];
                g.samples += 1;
                if let Some(p) = finite_power {
                    g.power_samples += 1;
                    self.floors[slot].add(p);
                    g.first_power_t.get_or_insert(t);
                    g.last_power_t = Some(t);
                }
                let prev = g.prev;
                if let Some((t0, t1)) = self.win {
                    let t1 = t1.unwrap_or(i64::MAX);
                    if let Some(p) = power_w
                        && t0 <= t
                        && t <= t1
                    {
                        self.reference.add(t, p, util_pct);
                    }
                    let s = Sample {
                        t_ns: t,
                        power_w,
                        util_pct,
                        sm_clock_mhz: None,
                        energy_mj: None,
                    };
                    self.accs[slot].add(&s, &prev, t0, t1, self.opts.max_gap_ns);
                }
                let g = &mut self.gpus[slot];
                if let Some(p) = finite_power {
                    g.prev.power = Some((t, p));
                }
                if let Some(u) = util_pct {
                    g.prev.util = Some((t, u));
                }
            }
        }
    }

    fn result(&self) -> FixedResult {
        let mut r = FixedResult {
            rows: self.counts.clone(),
            gpus: self.gpus[..self.n_gpus]
                .iter()
                .filter(|g| !g.is_phantom())
                .count(),
            start_t_mono_ns: self.sel_t[0],
            end_t_mono_ns: self.sel_t[1],
            window: None,
            released_early: self.reorder.released_early(),
            notes: self.notes,
            gpu_energy_note: super::result::gpu_energy_note(
                self.counts.samples,
                self.gpu_reading_rows,
            ),
        };
        let (Some((t0, Some(t1))), None) = (self.win, r.selection_error()) else {
            return r;
        };
        let source = self.opts.power_source;
        let verdicts = (0..self.n_gpus)
            .filter(|&i| self.gpus[i].samples > 0 && !self.gpus[i].is_phantom())
            .map(|i| {
                let g = &self.gpus[i];
                let f = &self.floors[i];
                let threshold = busy_threshold_w(f.quantile(0), f.quantile(1));
                let interval = mean_interval_ms(g.first_power_t, g.last_power_t, g.power_samples);
                let signals =
                    verdict::gpu_signals(threshold, interval, source, &self.accs[i], t0, t1);
                let c = verdict::choose(&signals);
                (c.verdict, c.confident)
            });
        let (verdict, confident) = verdict::combine_flags(verdicts);
        r.window = Some(FixedWindow {
            t0_mono_ns: t0,
            t1_mono_ns: t1,
            duration_s: (t1 as i128 - t0 as i128) as f64 / 1e9,
            reference: RefFigures::from(&self.reference),
            verdict,
            confident,
        });
        r
    }
}

#[cfg(test)]
mod tests;
