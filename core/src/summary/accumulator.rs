//! The accumulator: [`TraceSummary`] takes events and makes a [`TraceSummaryResult`].
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::batch::OpMemo;
use super::busy::BusyUnion;
use super::histpass::HistPass;
use super::interner::Interner;
use super::op::{OpAcc, OpValues, Pushed, push_value};
use super::refine::{EventReplay, PassError, Refiner};
use super::result::*;
use super::spill::IntervalSpill;
use crate::Limits;
use crate::json::{Event, IdField, NumField, QUOTED_DUR, QUOTED_TS, ScanEnd, ScanWarnings};
use crate::merge::OpSum;
use crate::merge::histogram::{LogHistogram, SCALE, relative_error};
use crate::sketch::RELATIVE_ERROR;
use crate::stats::{Moments, Num, Stats, stats_ns_in_place};

/// How many ops `largest_ops_by_duration_sum` lists by default, as the reference.
pub const DEFAULT_TOP_OPS: usize = 40;
/// The row that categories / ops beyond the limits fold into.
pub const OTHER: &str = "(other)";

const NONE: u32 = u32::MAX;

struct CatAcc {
    events: u64,
    dur_sum_ns: i128,
    union: BusyUnion,
}

#[derive(Clone, Copy)]
struct Open {
    ts_ns: i64,
    cat: u32,
    op: u32,
}

/// Streaming trace summary (docs/cli.md, "trace"). Memory: the category/op tables and per-op durations
/// (exact mode), or fixed by [`Limits`] (bounded mode); no allocation per event once the
/// tables have seen their keys.
pub struct TraceSummary {
    limits: Limits,
    cats: Interner,
    cat_accs: Vec<CatAcc>,
    other_cat: u32,
    ops: Interner,
    op_accs: Vec<OpAcc>,
    /// Per op with a non-empty category: its category index (`NONE`: not yet known).
    op_cat: Vec<u32>,
    other_op: u32,
    stored_values: usize,
    phases_ascii: [u64; 128],
    phases_other: Vec<(Vec<u8>, u64)>,
    threads: Interner,
    stacks: Vec<Vec<Open>>,
    open_total: usize,
    total_union: BusyUnion,
    /// Live intervals over all busy unions (bounded by `Limits::max_intervals`).
    live_intervals: usize,
    /// Where retired busy intervals go (see [`TraceSummary::set_spill`]).
    spill: Option<alloc::boxed::Box<dyn IntervalSpill>>,
    /// How to read the input again (see [`TraceSummary::set_replay`]).
    replay: Option<alloc::boxed::Box<dyn EventReplay>>,
    /// While a further pass runs: the ranks it looks for. Events then only feed it.
    refiner: Option<Refiner>,
    /// Whether `finish` adds the mergeable section (see [`TraceSummary::set_mergeable`]).
    mergeable: bool,
    /// See [`TraceSummary::set_durations_out`].
    durations_out: Option<usize>,
    events: u64,
    duration_events: u64,
    dur_sum_ns: i128,
    warnings: SummaryWarnings,
}

impl TraceSummary {
    /// An empty summary bounded by `limits` ([`Limits::EXACT`] for exact results).
    pub fn new(limits: Limits) -> TraceSummary {
        let cat_cap = limits.max_categories.saturating_sub(1).max(1);
        let op_cap = limits.max_ops.saturating_sub(1).max(1);
        let thread_cap = limits.max_open_slices.max(1);
        TraceSummary {
            limits,
            cats: Interner::new(if limits.max_categories == usize::MAX {
                usize::MAX
            } else {
                cat_cap
            }),
            cat_accs: Vec::new(),
            other_cat: NONE,
            ops: Interner::with_byte_cap(
                if limits.max_ops == usize::MAX {
                    usize::MAX
                } else {
                    op_cap
                },
                limits.max_name_bytes,
            ),
            op_accs: Vec::new(),
            op_cat: Vec::new(),
            other_op: NONE,
            stored_values: 0,
            phases_ascii: [0; 128],
            phases_other: Vec::new(),
            threads: Interner::new(if limits.max_open_slices >= 1 << 20 {
                usize::MAX
            } else {
                thread_cap
            }),
            stacks: Vec::new(),
            open_total: 0,
            total_union: BusyUnion::new(limits.max_intervals),
            live_intervals: 0,
            spill: None,
            replay: None,
            refiner: None,
            mergeable: false,
            durations_out: None,
            events: 0,
            duration_events: 0,
            dur_sum_ns: 0,
            warnings: SummaryWarnings::default(),
        }
    }

    /// Adds one event.
    #[inline]
    pub fn add(&mut self, e: &Event<'_>) {
        self.add_batched(e, &mut None);
    }

    /// Adds one event as [`add`](Self::add) does, with `memo` for the op of its (`cat`,
    /// `name`) pair: when the event needs its op and `memo` is `Some`, that op is taken
    /// without looking the pair up; when it is `None`, the op looked up is stored in it (at the
    /// point `add` would look it up, so the result is the same). For a caller that knows which
    /// events share a pair (e.g. a batch of events that stores each distinct pair once): give
    /// them the same `memo`, and it reads their strings once.
    ///
    /// A memo is valid for events with the same `cat` and `name`, given to the summary that
    /// filled it; any other use adds the event to the wrong op. Part of the
    /// [batch API](super::batch).
    #[inline]
    pub fn add_batched(&mut self, e: &Event<'_>, memo: &mut Option<OpMemo>) {
        if self.refiner.is_none() {
            self.events += 1;
            match e.ph {
                [b] if *b < 128 => self.phases_ascii[*b as usize] += 1,
                ph => self.count_other_phase(ph),
            }
        }
        match e.ph {
            b"X" => match (e.ts_ns, e.dur_ns) {
                (NumField::Ns(ts), NumField::Ns(dur)) if dur >= 0 => {
                    if e.quoted_times != 0 {
                        self.count_quoted(e.quoted_times);
                    }
                    let (cat, op) = self.cat_and_op_memo(e, memo);
                    self.add_slice(cat, op, ts, dur);
                }
                (_, NumField::Ns(dur)) if dur < 0 => self.warnings.negative_durations += 1,
                (_, NumField::Ns(_)) => self.warnings.without_timestamp += 1,
                _ => self.warnings.x_without_duration += 1,
            },
            b"B" => self.begin(e, memo),
            b"E" => self.end(e),
            _ => {}
        }
    }

    /// [`cat_and_op`](Self::cat_and_op) of the event, through `memo` (see
    /// [`add_batched`](Self::add_batched)). A memo whose indexes this summary does not have is
    /// ignored rather than trusted.
    // Always: once the crate's code is split into codegen units differently, a plain hint can
    // leave this per-event call out of line (~1 % of a `trace` run's instructions).
    #[inline(always)]
    fn cat_and_op_memo(&mut self, e: &Event<'_>, memo: &mut Option<OpMemo>) -> (u32, u32) {
        if let Some(m) = *memo
            && (m.cat as usize) < self.cat_accs.len()
            && (m.op as usize) < self.op_accs.len()
        {
            return (m.cat, m.op);
        }
        let (cat, op) = self.cat_and_op(e.cat, e.name);
        *memo = Some(OpMemo { cat, op });
        (cat, op)
    }

    #[cold]
    fn count_quoted(&mut self, quoted: u8) {
        if quoted & QUOTED_DUR != 0 {
            self.warnings.x_numeric_string_dur += 1;
        }
        if quoted & QUOTED_TS != 0 {
            self.warnings.x_numeric_string_ts += 1;
        }
    }

    fn count_other_phase(&mut self, ph: &[u8]) {
        if let Some(entry) = self.phases_other.iter_mut().find(|(k, _)| k == ph) {
            entry.1 += 1;
        } else if self.phases_other.len() < 64 {
            self.phases_other.push((ph.to_vec(), 1));
        } else if let Some(entry) = self
            .phases_other
            .iter_mut()
            .find(|(k, _)| k == OTHER.as_bytes())
        {
            entry.1 += 1;
        } else {
            self.phases_other.push((OTHER.as_bytes().to_vec(), 1));
        }
    }

    fn category_of(&mut self, cat: Option<&[u8]>) -> u32 {
        let key = cat.unwrap_or(b"uncategorized");
        match self.cats.get_or_insert(key) {
            Some(i) => {
                if i as usize == self.cat_accs.len() {
                    self.cat_accs.push(self.new_cat_acc());
                }
                i
            }
            None => {
                if self.other_cat == NONE {
                    let acc = self.new_cat_acc();
                    self.cat_accs.push(acc);
                    self.other_cat = (self.cat_accs.len() - 1) as u32;
                }
                self.other_cat
            }
        }
    }

    fn new_cat_acc(&self) -> CatAcc {
        CatAcc {
            events: 0,
            dur_sum_ns: 0,
            union: BusyUnion::new(self.limits.max_intervals),
        }
    }

    /// The category and op of an event. A non-empty `cat` is both the op key's category part
    /// and the category key, so the category is remembered per op: one table probe per event
    /// instead of two.
    #[inline]
    fn cat_and_op(&mut self, cat: Option<&[u8]>, name: Option<&[u8]>) -> (u32, u32) {
        let op = self.op_of(cat, name);
        if let Some(c) = cat
            && !c.is_empty()
            && op != self.other_op
        {
            if let Some(&known) = self.op_cat.get(op as usize)
                && known != NONE
            {
                return (known, op);
            }
            let k = self.category_of(cat);
            if self.op_cat.len() <= op as usize {
                self.op_cat.resize(op as usize + 1, NONE);
            }
            self.op_cat[op as usize] = k;
            return (k, op);
        }
        (self.category_of(cat), op)
    }

    fn op_of(&mut self, cat: Option<&[u8]>, name: Option<&[u8]>) -> u32 {
        let cat = cat.unwrap_or(b"");
        let name = name.unwrap_or(b"");
        match self.ops.get_or_insert2(cat, name) {
            Some(i) => {
                if i as usize == self.op_accs.len() {
                    self.op_accs.push(OpAcc::new());
                }
                i
            }
            None => {
                if self.other_op == NONE {
                    self.op_accs.push(OpAcc::new());
                    self.other_op = (self.op_accs.len() - 1) as u32;
                }
                self.other_op
            }
        }
    }

    // Always, as `cat_and_op_memo`: per event.
    #[inline(always)]
    fn add_slice(&mut self, cat: u32, op: u32, ts_ns: i64, dur_ns: i64) {
        let Some(end_ns) = ts_ns.checked_add(dur_ns) else {
            self.warnings.without_timestamp += 1;
            return;
        };
        if let Some(r) = &mut self.refiner {
            r.push(op, dur_ns as u64);
            return;
        }
        self.duration_events += 1;
        self.dur_sum_ns += i128::from(dur_ns);
        let c = &mut self.cat_accs[cat as usize];
        c.events += 1;
        c.dur_sum_ns += i128::from(dur_ns);
        let before = c.union.live_len() + self.total_union.live_len();
        let spilling = self.spill.is_some();
        c.union.insert(ts_ns, end_ns, spilling);
        self.total_union.insert(ts_ns, end_ns, spilling);
        let after = c.union.live_len() + self.total_union.live_len();
        self.live_intervals = self.live_intervals + after - before;
        if self.live_intervals > self.limits.max_intervals {
            self.retire_largest_union();
        }
        let o = &mut self.op_accs[op as usize];
        o.dur_sum_ns += i128::from(dur_ns);
        let stored = self.stored_values;
        let budget = self.limits.max_exact_values;
        let sketches = self.replay.is_none();
        if let Some(freed) = push_value(&mut o.values, dur_ns as u64, stored, budget, sketches) {
            self.stored_values = match freed {
                Pushed::Grew(added) => stored + added,
                Pushed::Moved { released, now } => stored - released + now,
            };
        }
    }

    /// Over the interval budget: the union with the most live intervals retires its older half.
    #[cold]
    fn retire_largest_union(&mut self) {
        let mut largest: Option<usize> = None;
        let mut most = self.total_union.live_len();
        for (i, c) in self.cat_accs.iter().enumerate() {
            if c.union.live_len() > most {
                most = c.union.live_len();
                largest = Some(i);
            }
        }
        let union = match largest {
            Some(i) => &mut self.cat_accs[i].union,
            None => &mut self.total_union,
        };
        let before = union.live_len();
        union.retire(spill_mut(&mut self.spill));
        self.live_intervals = self.live_intervals + union.live_len() - before;
    }

    fn thread_key(pid: IdField, tid: IdField) -> [u8; 18] {
        let mut k = [0u8; 18];
        let mut put = |at: usize, v: IdField| {
            let (tag, x) = match v {
                IdField::Missing => (0u8, 0u64),
                IdField::Int(i) => (1, i as u64),
                IdField::Hash(h) => (2, h),
            };
            k[at] = tag;
            k[at + 1..at + 9].copy_from_slice(&x.to_le_bytes());
        };
        put(0, pid);
        put(9, tid);
        k
    }

    fn thread_index(&mut self, pid: IdField, tid: IdField) -> Option<u32> {
        let t = self.threads.get_or_insert(&Self::thread_key(pid, tid))?;
        if t as usize == self.stacks.len() {
            self.stacks.push(Vec::new());
        }
        Some(t)
    }

    fn begin(&mut self, e: &Event<'_>, memo: &mut Option<OpMemo>) {
        let NumField::Ns(ts_ns) = e.ts_ns else {
            self.warnings.without_timestamp += 1;
            return;
        };
        if self.open_total >= self.limits.max_open_slices {
            self.warnings.open_slices_dropped += 1;
            return;
        }
        let Some(t) = self.thread_index(e.pid, e.tid) else {
            self.warnings.open_slices_dropped += 1;
            return;
        };
        let (cat, op) = self.cat_and_op_memo(e, memo);
        self.stacks[t as usize].push(Open { ts_ns, cat, op });
        self.open_total += 1;
    }

    fn end(&mut self, e: &Event<'_>) {
        let open = match self.thread_index(e.pid, e.tid) {
            Some(t) => self.stacks[t as usize].pop(),
            None => None,
        };
        let Some(open) = open else {
            self.warnings.unmatched_ends += 1;
            return;
        };
        self.open_total -= 1;
        let NumField::Ns(ts_ns) = e.ts_ns else {
            self.warnings.without_timestamp += 1;
            return;
        };
        match ts_ns.checked_sub(open.ts_ns) {
            Some(dur) if dur >= 0 => self.add_slice(open.cat, open.op, open.ts_ns, dur),
            _ => self.warnings.negative_slices += 1,
        }
    }

    /// Gives the busy unions a place for the intervals they retire past
    /// `Limits::max_intervals` (native: a temporary file), so that they stay exact whatever
    /// the order of the input (see [`IntervalSpill`]). Call before the first event.
    pub fn set_spill(&mut self, spill: alloc::boxed::Box<dyn IntervalSpill>) {
        self.spill = Some(spill);
    }

    /// Gives the summary a way to read the input again (native: the file), so that the
    /// percentiles of listed ops whose durations outgrew `Limits::max_exact_values` are made
    /// exact by further passes at [`finish`](Self::finish) instead of coming from a sketch (see
    /// [`EventReplay`]).
    pub fn set_replay(&mut self, replay: alloc::boxed::Box<dyn EventReplay>) {
        self.replay = Some(replay);
    }

    /// Asks [`finish`](Self::finish) for the mergeable section (`"mergeable"` in the JSON,
    /// docs/merge.md): every op's exact count, sum and range and the log-bucket histogram of its
    /// durations, made at the end from the durations the summary holds (nothing more is kept
    /// per event). The rest of the result is unchanged.
    pub fn set_mergeable(&mut self, mergeable: bool) {
        self.mergeable = mergeable;
    }

    /// `Some(cap)`: [`finish`](Self::finish) hands each listed op's durations over
    /// ([`OpRow::durations`]) instead of computing their statistics, for the ops whose
    /// durations are held exactly, when all the durations held take at most `cap` budget units
    /// (4 bytes each, as `Limits::max_exact_values` counts them). `duration_us` then has only
    /// `n`. Ops past the budget (sketched or dropped) get their statistics as without it, from
    /// the further passes. For a caller that lists every op but needs the statistics of a few,
    /// known only later (the diff).
    pub fn set_durations_out(&mut self, cap: Option<usize>) {
        self.durations_out = cap;
    }

    /// Every op with a duration as the mergeable section lists it: exact count, sum and range,
    /// and the histogram of its durations when the summary still holds them (sorting each op's
    /// exact durations in place; the stats after do not depend on their order).
    fn mergeable_ops(&mut self) -> (Vec<OpSum>, u8, Vec<String>) {
        // Held until the result is written: no spare capacity.
        let with_values = self.op_accs.iter().filter(|a| !a.values.is_empty()).count();
        let mut ops = Vec::with_capacity(with_values);
        let mut order = Vec::with_capacity(with_values);
        for (i, acc) in self.op_accs.iter_mut().enumerate() {
            if acc.values.is_empty() {
                continue;
            }
            let (category, name) = if i as u32 == self.other_op {
                (String::from(OTHER), String::from(OTHER))
            } else {
                let (cat, name) = self.ops.key2(i as u32);
                (lossy(cat), lossy(name))
            };
            // An exact op's durations are freed once its histogram is made (`finish` computed
            // the listed ops' stats before): the histogram pass gets their memory.
            let (n, min_ns, max_ns, histogram) = match &mut acc.values {
                OpValues::Exact32(v) => {
                    v.sort_unstable();
                    let h = LogHistogram::from_sorted(v.iter().map(|&x| u64::from(x)), SCALE);
                    let got = (
                        v.len() as u64,
                        u64::from(v[0]),
                        u64::from(v[v.len() - 1]),
                        Some(h),
                    );
                    *v = Vec::new();
                    got
                }
                OpValues::Exact64(v) => {
                    v.sort_unstable();
                    let h = LogHistogram::from_sorted(v.iter().copied(), SCALE);
                    let got = (v.len() as u64, v[0], v[v.len() - 1], Some(h));
                    *v = Vec::new();
                    got
                }
                OpValues::Sketch(s) => (s.sketch.len(), s.min_ns, s.max_ns, None),
                &mut OpValues::Dropped { n, min_ns, max_ns } => (n, min_ns, max_ns, None),
            };
            order.push(i);
            ops.push(OpSum {
                category,
                name,
                n,
                duration_sum_ns: acc.dur_sum_ns.max(0) as u128,
                min_ns,
                max_ns,
                histogram,
            });
        }
        let mut warnings = Vec::new();
        let missing: Vec<(usize, u64, u64, u64)> = ops
            .iter()
            .zip(&order)
            .filter(|(o, _)| o.histogram.is_none())
            .map(|(o, &i)| (i, o.n, o.min_ns, o.max_ns))
            .collect();
        if missing.is_empty() || self.replay.is_none() {
            return (ops, SCALE, warnings);
        }
        // The section's histograms share the durations budget (bytes) with the counts of the ops
        // that outgrew it. The exact ops' histograms fit what their durations took: at most 4
        // bytes a bucket of at least one duration (`Buckets`), against 4 or 8 a duration.
        let budget = (self.limits.max_exact_values as u64).saturating_mul(4);
        let held: u64 = ops
            .iter()
            .filter_map(|o| o.histogram.as_ref())
            .map(|h| h.heap_bytes() as u64)
            .sum();
        let Some(pass) = HistPass::new(self.op_accs.len(), &missing, budget.saturating_sub(held))
        else {
            warnings.push(format!(
                "the histograms of {} ops do not fit the memory budget: their merged percentiles are null",
                missing.len()
            ));
            return (ops, SCALE, warnings);
        };
        let scale = pass.scale();
        let mut refiner = Refiner::new(self.op_accs.len(), 0);
        refiner.hist = Some(pass);
        let counted = self.replay_pass(refiner).and_then(|r| {
            r.hist
                .and_then(super::histpass::HistPass::finish)
                .ok_or(PassError::InputChanged)
        });
        match counted {
            Ok(hists) => {
                let mut hists = hists.into_iter();
                for o in &mut ops {
                    o.histogram = match o.histogram.take() {
                        Some(h) => Some(h.downscaled(SCALE - scale)),
                        None => hists.next(),
                    };
                }
                if scale < SCALE {
                    warnings.push(format!(
                        "the mergeable histograms are at scale {scale}, not {SCALE}, to fit the durations budget (the counts of {} ops past it): merged percentiles are within {:.4}% (at scale {SCALE}: {:.4}%)",
                        missing.len(),
                        100.0 * relative_error(scale),
                        100.0 * relative_error(SCALE)
                    ));
                }
                (ops, scale, warnings)
            }
            Err(e) => {
                warnings.push(format!(
                    "the histograms of {} ops need another pass over the input, which failed: {e}; their merged percentiles are null",
                    missing.len()
                ));
                (ops, SCALE, warnings)
            }
        }
    }

    /// One further pass over the input feeding `refiner` only (the summary's counts and
    /// warnings stay those of the first pass).
    fn replay_pass(&mut self, refiner: Refiner) -> Result<Refiner, PassError> {
        let Some(mut replay) = self.replay.take() else {
            return Err(PassError::NoReplay);
        };
        let saved = self.warnings;
        let events = self.events;
        self.refiner = Some(refiner);
        self.stacks.iter_mut().for_each(Vec::clear);
        self.open_total = 0;
        let outcome = replay.replay(&mut |e| self.add(e));
        self.warnings = saved;
        self.replay = Some(replay);
        let refiner = self.refiner.take();
        match (outcome, refiner) {
            (Err(e), _) => Err(PassError::Replay(e)),
            (Ok(n), _) if n != events => Err(PassError::InputChanged),
            (Ok(_), Some(r)) => Ok(r),
            (Ok(_), None) => Err(PassError::EndedEarly),
        }
    }

    /// Exact percentiles for the listed ops (`listed`, op indexes) held in sketches, from
    /// further passes through the replay, if there is one: the settled refiner, `Ok(None)` when
    /// no pass is needed or possible, or why a pass failed.
    fn refine_listed(
        &mut self,
        listed: &[usize],
        reserved_bytes: u64,
    ) -> Result<Option<Refiner>, PassError> {
        let sketched: Vec<usize> = listed
            .iter()
            .copied()
            .filter(|&i| {
                matches!(
                    self.op_accs[i].values,
                    OpValues::Sketch(_) | OpValues::Dropped { .. }
                )
            })
            .collect();
        if sketched.is_empty() {
            return Ok(None);
        }
        let Some(mut replay) = self.replay.take() else {
            return Ok(None);
        };
        // The other ops' durations are not needed any more: their memory goes to the passes.
        let mut keep = alloc::vec![false; self.op_accs.len()];
        listed.iter().for_each(|&i| keep[i] = true);
        for (acc, keep) in self.op_accs.iter_mut().zip(keep) {
            if !keep {
                acc.values = OpValues::Exact32(Vec::new());
            }
        }
        // Values of 8 bytes; a smaller budget means more counting passes, never a loss.
        let budget = ((self.limits.max_exact_values / 2) as u64).saturating_sub(reserved_bytes / 8);
        let mut refiner = Refiner::new(self.op_accs.len(), budget);
        for &i in &sketched {
            match &self.op_accs[i].values {
                OpValues::Sketch(s) => {
                    refiner.add_op(i as u32, s.sketch.len(), s.min_ns, s.max_ns, false);
                }
                &OpValues::Dropped { n, min_ns, max_ns } => {
                    // The sum of the µs values (for the mean) comes from the first pass too.
                    refiner.add_op(i as u32, n, min_ns, max_ns, true);
                }
                _ => {}
            }
        }
        let saved = self.warnings;
        let events = self.events;
        self.refiner = Some(refiner);
        let outcome = loop {
            if let Some(r) = &mut self.refiner {
                r.plan_pass();
            }
            self.stacks.iter_mut().for_each(Vec::clear);
            self.open_total = 0;
            match replay.replay(&mut |e| self.add(e)) {
                Err(e) => break Err(PassError::Replay(e)),
                Ok(n) if n != events => break Err(PassError::InputChanged),
                Ok(_) => {}
            }
            let Some(r) = &mut self.refiner else {
                break Ok(());
            };
            if let Err(e) = r.end_pass() {
                break Err(e);
            }
            if !r.pending() {
                break Ok(());
            }
        };
        self.warnings = saved;
        let refiner = self.refiner.take();
        outcome.map(|()| refiner)
    }

    /// Events added so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The result, naming the input `source`, with the scanner's end state and warnings.
    /// `top` is how many ops to list ([`DEFAULT_TOP_OPS`] for the reference's 40).
    pub fn finish(
        mut self,
        source: &str,
        end: &ScanEnd,
        scan: &ScanWarnings,
        top: usize,
    ) -> TraceSummaryResult {
        self.warnings.unclosed_begins = self.open_total as u64;
        let mut refine_failed: Option<PassError> = None;
        let mut union_error_ns: u64 = 0;
        let mut categories = Vec::with_capacity(self.cat_accs.len());
        for (i, c) in self.cat_accs.iter_mut().enumerate() {
            let name = if i as u32 == self.other_cat {
                String::from(OTHER)
            } else {
                lossy(self.cats.key(i as u32))
            };
            let (union_ns, bound_ns) = c.union.finish(spill_mut(&mut self.spill));
            union_error_ns = union_error_ns.saturating_add(bound_ns);
            categories.push(CategoryRow {
                name,
                events: c.events,
                duration_sum_us: ns_to_us(c.dur_sum_ns),
                busy_union_us: ns_to_us(i128::from(union_ns)),
                duration_sum_ns: c.dur_sum_ns,
                busy_union_ns: union_ns,
            });
        }
        categories.retain(|c| c.events > 0);
        let mut order: Vec<usize> = (0..self.op_accs.len()).collect();
        order.sort_by(|&a, &b| {
            self.op_accs[b]
                .dur_sum_ns
                .cmp(&self.op_accs[a].dur_sum_ns)
                .then(a.cmp(&b))
        });
        order.retain(|&i| !self.op_accs[i].values.is_empty());
        order.truncate(top);
        // With the mergeable section: the listed ops' exact stats first, so that every op's
        // durations can be freed once its histogram is made, before the histogram pass takes the
        // durations budget (the durations and the pass's counts are never held together).
        let mut exact_stats: Vec<Option<Stats>> = alloc::vec![None; order.len()];
        if self.mergeable {
            for (k, &i) in order.iter().enumerate() {
                exact_stats[k] = match &mut self.op_accs[i].values {
                    OpValues::Exact32(values) => Some(stats_ns_in_place(values)),
                    OpValues::Exact64(values) => Some(stats_ns_in_place(values)),
                    _ => None,
                };
            }
        }
        // Before the further passes, which free the durations of the ops not listed.
        let mergeable_ops = self.mergeable.then(|| self.mergeable_ops());
        let histogram_warnings = mergeable_ops
            .as_ref()
            .map(|(_, _, w)| w.clone())
            .unwrap_or_default();
        // The section is held beside the passes: its bytes come out of their budget.
        let section_bytes = mergeable_ops
            .as_ref()
            .map_or(0, |(ops, _, _)| held_bytes(ops));
        let refined = match self.refine_listed(&order, section_bytes) {
            Ok(r) => r,
            Err(e) => {
                refine_failed = Some(e);
                None
            }
        };
        let hand_over = self
            .durations_out
            .is_some_and(|cap| self.stored_values <= cap);
        let mut ops = Vec::with_capacity(order.len());
        let mut collapsed_ops = 0u64;
        let mut sketched_ops = 0u64;
        let mut ops_without_percentiles = 0u64;
        for (i, exact) in order.into_iter().zip(exact_stats) {
            let (category, name) = if i as u32 == self.other_op {
                (String::from(OTHER), String::from(OTHER))
            } else {
                let (cat, name) = self.ops.key2(i as u32);
                (lossy(cat), lossy(name))
            };
            let acc = &mut self.op_accs[i];
            let mut durations = None;
            let stats = match &mut acc.values {
                _ if exact.is_some() => exact.unwrap_or(Stats::EMPTY),
                OpValues::Exact32(values) if hand_over => {
                    let values = core::mem::take(values);
                    let n = values.len() as u64;
                    durations = Some(OpDurations::Ns32(values));
                    Stats { n, ..Stats::EMPTY }
                }
                OpValues::Exact64(values) if hand_over => {
                    let values = core::mem::take(values);
                    let n = values.len() as u64;
                    durations = Some(OpDurations::Ns64(values));
                    Stats { n, ..Stats::EMPTY }
                }
                OpValues::Exact32(values) => stats_ns_in_place(values),
                OpValues::Exact64(values) => stats_ns_in_place(values),
                OpValues::Sketch(s) => {
                    let sketched = s.sketch.stats();
                    match refined.as_ref().and_then(|r| r.percentiles(i as u32)) {
                        Some([p50, p90, p95, p99]) => Stats {
                            p50,
                            p90,
                            p95,
                            p99,
                            ..sketched.stats
                        },
                        None => {
                            sketched_ops += 1;
                            if sketched.collapsed > 0 {
                                collapsed_ops += 1;
                            }
                            sketched.stats
                        }
                    }
                }
                &mut OpValues::Dropped { n, min_ns, max_ns } => {
                    let us = |v: u64| Some(Num::Float(v as f64 / 1000.0));
                    let refined = refined
                        .as_ref()
                        .and_then(|r| Some((r.percentiles(i as u32)?, r.sum(i as u32)?)));
                    match refined {
                        Some((pct, sum)) => Moments {
                            n,
                            sum: sum.clone(),
                            min: us(min_ns),
                            max: us(max_ns),
                        }
                        .stats_with(pct),
                        None => {
                            ops_without_percentiles += 1;
                            Stats {
                                n,
                                mean: Some(ns_to_us(acc.dur_sum_ns) / n as f64),
                                min: us(min_ns),
                                p50: None,
                                p90: None,
                                p95: None,
                                p99: None,
                                max: us(max_ns),
                            }
                        }
                    }
                }
            };
            ops.push(OpRow {
                category,
                name,
                duration_sum_us: ns_to_us(acc.dur_sum_ns),
                duration_us: stats,
                duration_sum_ns: acc.dur_sum_ns,
                durations,
            });
        }
        let mut phase_counts: Vec<(String, u64)> = Vec::new();
        for (b, &n) in self.phases_ascii.iter().enumerate() {
            if n > 0 {
                phase_counts.push((String::from(char::from(b as u8)), n));
            }
        }
        for (k, n) in &self.phases_other {
            let name = if k.is_empty() {
                String::from("(missing)")
            } else {
                lossy(k)
            };
            phase_counts.push((name, *n));
        }
        let (total_union_ns, bound_ns) = self.total_union.finish(spill_mut(&mut self.spill));
        union_error_ns = union_error_ns.saturating_add(bound_ns);
        let mut warnings = Vec::new();
        warnings.extend(histogram_warnings);
        if let Some(e) = refine_failed {
            warnings.push(format!(
                "exact percentiles of the listed ops need another pass over the input, which failed: {e}; they come from sketches (see approximations)"
            ));
        }
        if end.truncated {
            let what = if end.bytes == 0 {
                String::from("empty input")
            } else if end.cut_event {
                String::from("truncated: the input ended inside an event, which was dropped")
            } else {
                String::from("truncated: the input ended before the closing `]`/`}`")
            };
            warnings.push(format!("{what}; {} events read", end.events));
        }
        if !end.found_events_array && end.bytes > 0 {
            warnings.push(String::from("no traceEvents array"));
        }
        if end.bare_array {
            warnings.push(String::from("bare-array trace (no traceEvents object)"));
        }
        let w = &self.warnings;
        let counted: [(u64, &str); 19] = [
            (
                scan.control_chars,
                "raw control characters in strings (tolerated)",
            ),
            (scan.malformed_events, "malformed events skipped"),
            (
                scan.non_object_events,
                "non-object elements of traceEvents skipped",
            ),
            (scan.oversized_events, "events over the size limit skipped"),
            (
                scan.truncated_strings,
                "cat/name strings cut at the length limit",
            ),
            (
                scan.bad_escapes,
                "invalid string escapes or lone surrogates (replaced)",
            ),
            (scan.bad_numbers, "ts/dur values that are not valid numbers"),
            (scan.trailing_commas, "trailing commas (tolerated)"),
            (
                scan.trailing_bytes,
                "bytes after the end of the document (ignored)",
            ),
            (
                scan.non_array_trace_events,
                "traceEvents values that are not arrays (skipped)",
            ),
            (
                w.x_without_duration,
                "X events without a numeric dur skipped (the reference counts dur:true as 1 us)",
            ),
            (w.negative_durations, "X events with a negative dur skipped"),
            (
                w.without_timestamp,
                "duration events without a numeric ts skipped",
            ),
            (
                w.unmatched_ends,
                "E events without an open B on their thread",
            ),
            (w.negative_slices, "E events earlier than their B skipped"),
            (w.unclosed_begins, "B events never closed"),
            (
                w.open_slices_dropped,
                "B events dropped at the open-slice limit",
            ),
            (
                w.x_numeric_string_dur,
                "X events with a numeric-string dur counted (the reference skips them)",
            ),
            (
                w.x_numeric_string_ts,
                "X events with a numeric-string ts counted (the reference stops with an error on them)",
            ),
        ];
        for (n, what) in counted {
            if n > 0 {
                warnings.push(format!("{n} {what}"));
            }
        }
        let approximations = if union_error_ns > 0
            || sketched_ops > 0
            || ops_without_percentiles > 0
            || self.other_op != NONE
            || self.other_cat != NONE
        {
            Some(Approximations {
                busy_union_error_bound_us: ns_to_us(i128::from(union_error_ns)),
                ops_folded_into_other: self.other_op != NONE,
                categories_folded_into_other: self.other_cat != NONE,
                ops_with_sketched_stats: sketched_ops,
                quantile_relative_error: if sketched_ops > 0 {
                    RELATIVE_ERROR
                } else {
                    0.0
                },
                listed_ops_with_collapsed_sketch: collapsed_ops,
                listed_ops_without_percentiles: ops_without_percentiles,
            })
        } else {
            None
        };
        TraceSummaryResult {
            source: String::from(source),
            scope: SCOPE,
            categories: Categories(categories),
            largest_ops_by_duration_sum: ops,
            phase_counts: PhaseCounts(phase_counts),
            totals: Totals {
                events: end.events,
                duration_events: self.duration_events,
                duration_sum_us: ns_to_us(self.dur_sum_ns),
                busy_union_us: ns_to_us(i128::from(total_union_ns)),
                duration_sum_ns: self.dur_sum_ns,
                busy_union_ns: total_union_ns,
                bytes: end.bytes,
            },
            truncated: end.truncated,
            warnings,
            warning_counts: WarningCounts {
                scanner: *scan,
                summary: self.warnings,
            },
            approximations,
            mergeable: mergeable_ops.map(|(mut ops, scale, _)| MergeableParts {
                ops: {
                    // The section's order, so that it is written without a sorted copy.
                    ops.sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
                    ops
                },
                scale,
                busy_union_error_bound_ns: union_error_ns,
                ops_folded_into_other: self.other_op != NONE,
                categories_folded_into_other: self.other_cat != NONE,
            }),
        }
    }
}

/// The spill as the busy unions take it.
/// Heap bytes `ops` hold (the mergeable section's op list).
fn held_bytes(ops: &[OpSum]) -> u64 {
    let per_op = core::mem::size_of::<OpSum>();
    let bytes: usize = ops
        .iter()
        .map(|o| {
            per_op
                + o.category.capacity()
                + o.name.capacity()
                + o.histogram.as_ref().map_or(0, LogHistogram::heap_bytes)
        })
        .sum();
    bytes as u64
}

fn spill_mut(
    spill: &mut Option<alloc::boxed::Box<dyn IntervalSpill>>,
) -> Option<&mut dyn IntervalSpill> {
    match spill {
        Some(s) => Some(&mut **s),
        None => None,
    }
}

fn lossy(b: &[u8]) -> String {
    // Valid UTF-8 (nearly every name) is copied after one validation, which is cheaper than
    // the lossy conversion's walk; with the diff every op's name is made.
    match core::str::from_utf8(b) {
        Ok(s) => String::from(s),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Exact integer nanoseconds as f64 microseconds: one correctly rounded division when the
/// value is below 2^53 ns (104 days).
pub(crate) fn ns_to_us(ns: i128) -> f64 {
    ns as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{EventScanner, Scan};
    use crate::testutil::{Rng, for_each_split};
    use std::collections::BTreeMap;
    use std::string::ToString;

    fn summarize(chunks: &[&[u8]], limits: Limits) -> TraceSummaryResult {
        summarize_with(chunks, limits, DEFAULT_TOP_OPS, None)
    }

    fn summarize_with(
        chunks: &[&[u8]],
        limits: Limits,
        top: usize,
        durations_out: Option<usize>,
    ) -> TraceSummaryResult {
        let mut sc = EventScanner::new(limits);
        let mut sum = TraceSummary::new(limits);
        sum.set_durations_out(durations_out);
        for chunk in chunks {
            let mut pos = 0;
            loop {
                let (s, nin) = sc.scan(&chunk[pos..]).unwrap();
                pos += nin;
                match s {
                    Scan::Event => sum.add(&sc.event()),
                    Scan::NeedsInput => break,
                }
            }
        }
        let end = sc.finish();
        let w = *sc.warnings();
        sum.finish("t.json", &end, &w, top)
    }

    #[test]
    fn handed_over_durations_give_the_summary_own_stats() {
        let mut rng = Rng::from_env(37);
        // Some durations over 2^32 ns: ops held in 8 bytes too.
        let doc = ordered_doc(3000, 40, true, &mut rng);
        let computed = summarize_with(&[doc.as_bytes()], Limits::NATIVE, usize::MAX, None);
        let handed = summarize_with(&[doc.as_bytes()], Limits::NATIVE, usize::MAX, Some(1 << 20));
        assert_eq!(computed.largest_ops_by_duration_sum.len(), 3 * 40);
        assert_eq!(
            handed.largest_ops_by_duration_sum.len(),
            computed.largest_ops_by_duration_sum.len()
        );
        let mut wide = 0;
        for (h, c) in handed
            .largest_ops_by_duration_sum
            .iter()
            .zip(&computed.largest_ops_by_duration_sum)
        {
            assert_eq!((&h.category, &h.name), (&c.category, &c.name));
            assert_eq!(h.duration_sum_ns, c.duration_sum_ns);
            assert!(c.durations.is_none());
            let d = h.durations.as_ref().expect("durations handed over");
            wide += usize::from(matches!(d, OpDurations::Ns64(_)));
            assert_eq!(
                h.duration_us,
                Stats {
                    n: c.duration_us.n,
                    ..Stats::EMPTY
                }
            );
            assert_eq!(d.stats(), c.duration_us);
        }
        assert!(wide > 0);
        // Past the cap (here every held duration), the statistics are computed as without it.
        let over = summarize_with(&[doc.as_bytes()], Limits::NATIVE, usize::MAX, Some(16));
        assert_eq!(over, computed);
    }

    /// Naive oracle: sort-and-merge union over (start, end) pairs.
    fn naive_union(mut v: Vec<(i64, i64)>) -> i128 {
        v.sort();
        let mut total: i128 = 0;
        let mut cur: Option<(i64, i64)> = None;
        for (a, b) in v {
            if b <= a {
                continue;
            }
            match cur {
                Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
                Some((ca, cb)) => {
                    total += i128::from(cb - ca);
                    cur = Some((a, b));
                }
                None => cur = Some((a, b)),
            }
        }
        if let Some((ca, cb)) = cur {
            total += i128::from(cb - ca);
        }
        total
    }

    /// Oracle per category: events, exact duration sum, intervals.
    type CatOracle = (u64, i128, Vec<(i64, i64)>);

    /// What `batch::fields_read` leaves out changes nothing: every
    /// event of generated traces (all phases, B/E on several threads, missing and odd fields)
    /// with the unread fields blanked gives the same summary as the whole event; and so does
    /// `add_batched` with one memo per distinct (cat, name), in exact and bounded modes.
    #[test]
    fn fields_said_unread_are_unread() {
        let mut rng = Rng(31);
        for round in 0..40 {
            let mut doc = String::from("[");
            for k in 0..300 {
                let ph = ["X", "B", "E", "i", "s", "f", "M", "C", "XX", ""][rng.below(10) as usize];
                let tid = rng.below(3);
                let ts = 1000 + k * 10;
                let dur = match rng.below(8) {
                    0 => String::from("null"),
                    1 => String::from("-3"),
                    _ => rng.below(50).to_string(),
                };
                let name = ["a", "b", "ProfilerStep#1"][rng.below(3) as usize];
                let cat = ["c1", "c2", ""][rng.below(3) as usize];
                if k > 0 {
                    doc.push(',');
                }
                doc.push_str(&std::format!(
                    r#"{{"ph":"{ph}","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"id":{k},"ts":{ts},"dur":{dur}}}"#
                ));
            }
            doc.push(']');
            let limits = match round % 3 {
                0 => Limits::EXACT,
                1 => Limits::BOUNDED,
                // Ops and categories fold into "(other)", B slices are dropped.
                _ => Limits {
                    max_ops: 3,
                    max_categories: 2,
                    max_open_slices: 2,
                    ..Limits::BOUNDED
                },
            };
            let mut whole = TraceSummary::new(limits);
            let mut masked = TraceSummary::new(limits);
            // The third takes the events through one memo per distinct (cat, name) pair.
            let mut memoized = TraceSummary::new(limits);
            type Pair = (Option<Vec<u8>>, Option<Vec<u8>>);
            let mut memos: BTreeMap<Pair, Option<OpMemo>> = BTreeMap::new();
            let mut sc = EventScanner::new(limits);
            let mut pos = 0;
            while let (Scan::Event, n) = sc.scan(&doc.as_bytes()[pos..]).unwrap() {
                pos += n;
                let e = sc.event();
                whole.add(&e);
                let read = crate::summary::batch::fields_read(e.ph);
                let (names, ts, dur, thread) = (read.names, read.ts, read.dur, read.thread);
                masked.add(&Event {
                    ph: e.ph,
                    cat: if names { e.cat } else { None },
                    name: if names { e.name } else { None },
                    ts_ns: if ts { e.ts_ns } else { NumField::Missing },
                    dur_ns: if dur { e.dur_ns } else { NumField::Missing },
                    pid: if thread { e.pid } else { IdField::Missing },
                    tid: if thread { e.tid } else { IdField::Missing },
                    id: IdField::Missing,
                    scope: IdField::Missing,
                    quoted_times: e.quoted_times
                        & (if ts { QUOTED_TS } else { 0 } | if dur { QUOTED_DUR } else { 0 }),
                    arg: crate::json::ArgValue::Missing,
                });
                let key = (e.cat.map(<[u8]>::to_vec), e.name.map(<[u8]>::to_vec));
                memoized.add_batched(&e, memos.entry(key).or_default());
            }
            let end = sc.finish();
            let w = *sc.warnings();
            let whole = whole.finish("t", &end, &w, 40);
            assert!(whole.totals.duration_events > 20, "round {round}");
            assert!(memos.values().filter(|m| m.is_some()).count() > 3);
            if round % 3 == 2 {
                assert!(
                    whole
                        .approximations
                        .is_some_and(|a| a.ops_folded_into_other)
                );
            }
            assert_eq!(
                whole.to_json(),
                masked.finish("t", &end, &w, 40).to_json(),
                "round {round}"
            );
            assert_eq!(
                whole.to_json(),
                memoized.finish("t", &end, &w, 40).to_json(),
                "round {round}"
            );
        }
    }

    #[test]
    fn random_x_and_be_against_naive_oracle() {
        let mut rng = Rng::from_env(11);
        for round in 0..40 {
            let mut doc = String::from("{\"traceEvents\":[");
            // Oracle state.
            let mut cats: BTreeMap<String, CatOracle> = BTreeMap::new();
            let mut ops: BTreeMap<(String, String), Vec<i64>> = BTreeMap::new();
            let mut stacks: BTreeMap<u64, Vec<(i64, Option<String>, String)>> = BTreeMap::new();
            let mut unmatched = 0u64;
            let mut neg = 0u64;
            let n = 1 + rng.below(200);
            for k in 0..n {
                if k > 0 {
                    doc.push(',');
                }
                let ts = 1_712_195_495_000_000_000i64 + rng.below(1_000_000_000) as i64;
                let cat = match rng.below(5) {
                    0 => None,
                    c => Some(std::format!("c{c}")),
                };
                let name = std::format!("op{}", rng.below(8));
                let tid = rng.below(3);
                let cat_json = cat
                    .as_ref()
                    .map(|c| std::format!(",\"cat\":\"{c}\""))
                    .unwrap_or_default();
                let tsj = std::format!("{}.{:03}", ts / 1000, ts % 1000);
                match rng.below(4) {
                    0 | 1 => {
                        let dur = rng.below(5_000_000) as i64
                            - if rng.below(20) == 0 { 6_000_000 } else { 0 };
                        let durj = if dur < 0 {
                            std::format!("-{}.{:03}", (-dur) / 1000, (-dur) % 1000)
                        } else {
                            std::format!("{}.{:03}", dur / 1000, dur % 1000)
                        };
                        doc.push_str(&std::format!(
                            "{{\"ph\":\"X\"{cat_json},\"name\":\"{name}\",\"ts\":{tsj},\"dur\":{durj},\"pid\":1,\"tid\":{tid}}}"
                        ));
                        if dur < 0 {
                            neg += 1;
                            continue;
                        }
                        let key = cat.clone().unwrap_or("uncategorized".to_string());
                        let c = cats.entry(key).or_default();
                        c.0 += 1;
                        c.1 += i128::from(dur);
                        c.2.push((ts, ts + dur));
                        ops.entry((cat.clone().unwrap_or_default(), name))
                            .or_default()
                            .push(dur);
                    }
                    2 => {
                        doc.push_str(&std::format!(
                            "{{\"ph\":\"B\"{cat_json},\"name\":\"{name}\",\"ts\":{tsj},\"pid\":1,\"tid\":{tid}}}"
                        ));
                        stacks.entry(tid).or_default().push((ts, cat, name));
                    }
                    _ => {
                        doc.push_str(&std::format!(
                            "{{\"ph\":\"E\",\"ts\":{tsj},\"pid\":1,\"tid\":{tid}}}"
                        ));
                        match stacks.entry(tid).or_default().pop() {
                            None => unmatched += 1,
                            Some((bts, bcat, bname)) => {
                                if ts < bts {
                                    continue;
                                }
                                let key = bcat.clone().unwrap_or("uncategorized".to_string());
                                let c = cats.entry(key).or_default();
                                c.0 += 1;
                                c.1 += i128::from(ts - bts);
                                c.2.push((bts, ts));
                                ops.entry((bcat.unwrap_or_default(), bname))
                                    .or_default()
                                    .push(ts - bts);
                            }
                        }
                    }
                }
            }
            doc.push_str("]}");
            let whole = summarize(&[doc.as_bytes()], Limits::EXACT);
            for_each_split(doc.as_bytes(), 2, round, |chunks| {
                assert_eq!(summarize(chunks, Limits::EXACT), whole);
            });
            let got: BTreeMap<String, (u64, i128, u64)> = whole
                .categories
                .0
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        (c.events, c.duration_sum_ns, c.busy_union_ns),
                    )
                })
                .collect();
            let want: BTreeMap<String, (u64, i128, u64)> = cats
                .into_iter()
                .map(|(k, (e, s, iv))| (k, (e, s, naive_union(iv) as u64)))
                .collect();
            assert_eq!(got, want);
            assert_eq!(whole.warning_counts.summary.unmatched_ends, unmatched);
            assert_eq!(whole.warning_counts.summary.negative_durations, neg);
            assert_eq!(
                whole.warning_counts.summary.unclosed_begins,
                stacks.values().map(|s| s.len() as u64).sum::<u64>()
            );
            // Ops: top 40 by exact sum; check each listed op's stats against a sort.
            for row in &whole.largest_ops_by_duration_sum {
                let durs = &ops[&(row.category.clone(), row.name.clone())];
                let mut us: Vec<f64> = durs.iter().map(|&d| d as f64 / 1000.0).collect();
                us.sort_by(f64::total_cmp);
                assert_eq!(row.duration_us.n, us.len() as u64);
                assert_eq!(row.duration_us.min.map(|m| m.to_f64()), us.first().copied());
                assert_eq!(row.duration_us.max.map(|m| m.to_f64()), us.last().copied());
                assert_eq!(
                    row.duration_sum_us,
                    durs.iter().map(|&d| i128::from(d)).sum::<i128>() as f64 / 1000.0
                );
            }
            assert_eq!(whole.largest_ops_by_duration_sum.len(), ops.len().min(40));
        }
    }

    /// Reads a document again, as native reads the file again.
    struct DocReplay(Vec<u8>, Limits);

    impl EventReplay for DocReplay {
        fn replay(
            &mut self,
            sink: &mut dyn FnMut(&Event<'_>),
        ) -> Result<u64, crate::summary::ReplayError> {
            let mut sc = EventScanner::new(self.1);
            let mut pos = 0;
            loop {
                let (s, nin) = sc.scan(&self.0[pos..])?;
                pos += nin;
                match s {
                    Scan::Event => sink(&sc.event()),
                    Scan::NeedsInput => break,
                }
            }
            Ok(sc.finish().events)
        }
    }

    fn summarize_spilled(doc: &[u8], limits: Limits, replay: bool) -> TraceSummaryResult {
        let mut sc = EventScanner::new(limits);
        let mut sum = TraceSummary::new(limits);
        sum.set_spill(alloc::boxed::Box::new(
            crate::summary::MemorySpill::default(),
        ));
        if replay {
            sum.set_replay(alloc::boxed::Box::new(DocReplay(doc.to_vec(), limits)));
        }
        let mut pos = 0;
        loop {
            let (s, nin) = sc.scan(&doc[pos..]).unwrap();
            pos += nin;
            match s {
                Scan::Event => sum.add(&sc.event()),
                Scan::NeedsInput => break,
            }
        }
        let end = sc.finish();
        let w = *sc.warnings();
        sum.finish("t.json", &end, &w, DEFAULT_TOP_OPS)
    }

    /// With a spill for the busy unions and a replay for further passes, limits far too small
    /// for the input give what `Limits::EXACT` gives: intervals in no time order past the
    /// interval budget, ops with more durations than the budget holds (some of them 4.29 s and
    /// longer), wide and narrow duration ranges, ties, B/E pairs. Without them the same limits
    /// state approximations, so the test needs what it tests.
    #[test]
    fn spill_and_replay_make_tight_limits_exact() {
        let mut rng = Rng(71);
        for round in 0..6 {
            let mut doc = String::from("{\"traceEvents\":[");
            let mut first = true;
            let mut sep = |doc: &mut String| {
                if !first {
                    doc.push(',');
                }
                first = false;
            };
            for i in 0..6000u64 {
                let op = rng.below(if round % 2 == 0 { 12 } else { 300 });
                let ts = rng.below(50_000_000) as i64;
                let dur = match op % 4 {
                    0 => 5_000 + rng.below(3),
                    1 => rng.below(1 << 20),
                    2 => rng.below(1 << 34),
                    _ => rng.below(400_000),
                };
                sep(&mut doc);
                doc.push_str(&std::format!(
                    "{{\"ph\":\"X\",\"cat\":\"c{}\",\"name\":\"op{op}\",\"ts\":{}.{:03},\"dur\":{}.{:03}}}",
                    op % 5,
                    ts / 1000,
                    ts % 1000,
                    dur / 1000,
                    dur % 1000
                ));
                if i % 7 == 0 {
                    let tid = rng.below(3);
                    let b = rng.below(50_000_000);
                    let e = b + rng.below(90_000);
                    sep(&mut doc);
                    doc.push_str(&std::format!(
                        "{{\"ph\":\"B\",\"cat\":\"ann\",\"name\":\"step\",\"ts\":{b},\"pid\":1,\"tid\":{tid}}},{{\"ph\":\"E\",\"ts\":{e},\"pid\":1,\"tid\":{tid}}}"
                    ));
                }
            }
            doc.push_str("]}");
            let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
            assert!(exact.approximations.is_none());
            let tight = Limits {
                max_intervals: 64,
                max_exact_values: 512,
                ..Limits::NATIVE
            };
            let got = summarize_spilled(doc.as_bytes(), tight, true);
            assert_eq!(got.to_json(), exact.to_json(), "round {round}");
            let without = summarize(&[doc.as_bytes()], tight);
            let a = without.approximations.expect("the limits are too small");
            assert!(a.busy_union_error_bound_us > 0.0);
            assert!(a.ops_with_sketched_stats + a.listed_ops_without_percentiles > 0);
            // A spill alone makes the unions exact; the percentiles stay sketched and stated.
            let spilled = summarize_spilled(doc.as_bytes(), tight, false);
            let a = spilled.approximations.expect("sketched percentiles");
            assert_eq!(a.busy_union_error_bound_us, 0.0);
            assert_eq!(spilled.totals, exact.totals);
            assert!(a.ops_with_sketched_stats + a.listed_ops_without_percentiles > 0);
        }
    }

    /// An `X` event whose `dur` or `ts` is a numeric string counts, and is counted in the
    /// warnings (the reference skips such events, or stops on a string `ts`).
    #[test]
    fn numeric_string_times_count_and_are_stated() {
        let doc = br#"{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":"2.5"},
            {"ph":"X","name":"a","ts":"3","dur":1},{"ph":"X","name":"a","ts":"4","dur":"1"},
            {"ph":"X","name":"a","ts":5,"dur":1},{"ph":"X","name":"a","ts":6,"dur":"x"},
            {"ph":"X","name":"a","ts":7,"dur":"1","dur":2},{"ph":"B","name":"b","ts":"1"}]}"#;
        for_each_split(doc, 1, 7, |chunks| {
            let r = summarize(chunks, Limits::NATIVE);
            let w = r.warning_counts.summary;
            assert_eq!((w.x_numeric_string_dur, w.x_numeric_string_ts), (2, 2));
            assert_eq!(r.totals.duration_events, 5);
            assert_eq!(r.largest_ops_by_duration_sum[0].duration_sum_us, 7.5);
            assert!(r.warnings.contains(&std::string::String::from(
                "2 X events with a numeric-string dur counted (the reference skips them)"
            )));
            assert!(r.warnings.contains(&std::string::String::from(
                "2 X events with a numeric-string ts counted (the reference stops with an error on them)"
            )));
        });
    }

    #[test]
    fn quirks_and_departures() {
        let doc =
            br#"[{"ph":"X","name":"a","ts":1,"dur":true},{"ph":"X","name":"a","ts":1,"dur":null},
            {"ph":"X","ts":5,"dur":2},{"ph":"X","cat":"","ts":5,"dur":3},{"ph":"X","dur":1},
            {"ph":"E","ts":3},{"ph":"B","ts":1,"name":"open"},{"ph":"i"},{"ts":1}"#;
        let r = summarize(&[doc], Limits::EXACT);
        let names: Vec<&str> = r.categories.0.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["uncategorized", ""]);
        // Both missing-cat and empty-cat X events share the op key ("", "").
        assert_eq!(r.largest_ops_by_duration_sum.len(), 1);
        assert_eq!(r.largest_ops_by_duration_sum[0].duration_sum_us, 5.0);
        let w = r.warning_counts.summary;
        assert_eq!(
            (
                w.x_without_duration,
                w.without_timestamp,
                w.unmatched_ends,
                w.unclosed_begins
            ),
            (2, 1, 1, 1)
        );
        assert!(r.truncated);
        let phases: Vec<(&str, u64)> = r
            .phase_counts
            .0
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(
            phases,
            [("B", 1), ("E", 1), ("X", 5), ("i", 1), ("(missing)", 1)]
        );
        let json = r.to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        // Top-level keys in output order (the dev serde_json Value map is sorted).
        let keys: Vec<&str> = json
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l[3..].split('"').next().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "source",
                "scope",
                "categories",
                "largest_ops_by_duration_sum",
                "phase_counts",
                "totals",
                "truncated",
                "warnings",
                "warning_counts"
            ]
        );
        assert_eq!(v["categories"]["uncategorized"]["busy_union_us"], 2.0);
    }

    #[test]
    fn ops_past_the_exact_budget_use_the_sketch_within_its_bound() {
        let mut doc = String::from("[");
        let mut rng = Rng(21);
        for k in 0..60_000 {
            if k > 0 {
                doc.push(',');
            }
            // Three ops with lognormal-ish durations from 1 µs to ~100 ms.
            let dur_ns = (1000.0 * (rng.unit_f64() * 11.0).exp()) as i64;
            doc.push_str(&std::format!(
                "{{\"ph\":\"X\",\"cat\":\"k\",\"name\":\"op{}\",\"ts\":{k},\"dur\":{}.{:03}}}",
                k % 3,
                dur_ns / 1000,
                dur_ns % 1000
            ));
        }
        doc.push(']');
        let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
        // Room for the values of two ops' first doublings, then sketches (16 KiB each) for
        // the two that outgrow it.
        let limits = Limits {
            max_exact_values: 40_000,
            ..Limits::BOUNDED
        };
        let r = summarize(&[doc.as_bytes()], limits);
        let a = r.approximations.expect("sketch used");
        assert!(a.ops_with_sketched_stats >= 2);
        assert_eq!(a.quantile_relative_error, crate::sketch::RELATIVE_ERROR);
        for (g, e) in r
            .largest_ops_by_duration_sum
            .iter()
            .zip(&exact.largest_ops_by_duration_sum)
        {
            assert_eq!((&g.name, g.duration_sum_us), (&e.name, e.duration_sum_us));
            let (gs, es) = (g.duration_us, e.duration_us);
            assert_eq!(
                (gs.n, gs.mean, gs.min, gs.max),
                (es.n, es.mean, es.min, es.max)
            );
            for (x, y) in [
                (gs.p50, es.p50),
                (gs.p90, es.p90),
                (gs.p95, es.p95),
                (gs.p99, es.p99),
            ] {
                let (x, y) = (x.unwrap(), y.unwrap());
                assert!(
                    (x - y).abs() <= y.abs() * a.quantile_relative_error * 1.0001,
                    "{x} vs {y}"
                );
            }
        }
        // Exact mode never sketches.
        assert_eq!(exact.approximations, None);
    }

    /// Regression: an op whose durations span more than the sketch's range (1 ns .. 100 s here)
    /// had its low percentiles read at the range's floor while `approximations` still promised the
    /// 1/129 relative error.
    #[test]
    fn a_sketch_that_collapsed_values_is_reported() {
        let mut doc = String::from("[");
        for k in 0..40_000 {
            if k > 0 {
                doc.push(',');
            }
            // op0: 1 ns for most events, a few of 100 s; op1: 1..2 ms (fits the sketch's range).
            let dur_ns: i64 = if k % 2 == 1 {
                1_000_000 + k
            } else if k % 50 == 0 {
                100_000_000_000
            } else {
                1
            };
            doc.push_str(&std::format!(
                "{{\"ph\":\"X\",\"cat\":\"k\",\"name\":\"op{}\",\"ts\":{k},\"dur\":{}.{:03}}}",
                k % 2,
                dur_ns / 1000,
                dur_ns % 1000
            ));
        }
        doc.push(']');
        let limits = Limits {
            max_exact_values: 16_384,
            ..Limits::BOUNDED
        };
        let r = summarize(&[doc.as_bytes()], limits);
        let a = r.approximations.expect("sketch used");
        assert_eq!(a.ops_with_sketched_stats, 2);
        assert_eq!(a.listed_ops_with_collapsed_sketch, 1);
        let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
        let op0 = |r: &TraceSummaryResult| {
            r.largest_ops_by_duration_sum
                .iter()
                .find(|o| o.name == "op0")
                .unwrap()
                .duration_us
        };
        // The true p50 (0.001 µs) lies below the collapsed floor: the sketch reads higher.
        assert_eq!(op0(&exact).p50, Some(0.001));
        assert!(op0(&r).p50.unwrap() > 0.001 * (1.0 + a.quantile_relative_error));
    }

    #[test]
    fn bounded_mode_folds_and_states_the_error() {
        let mut doc = String::from("[");
        for k in 0..500 {
            if k > 0 {
                doc.push(',');
            }
            // Disjoint intervals out of time order (the bounded union is exact for
            // time-ordered input), in 20 categories and 100 ops.
            let j = (k * 7919) % 500;
            let ts = j * 10 + (j * j) % 7;
            doc.push_str(&std::format!(
                "{{\"ph\":\"X\",\"cat\":\"c{}\",\"name\":\"n{}\",\"ts\":{ts},\"dur\":3}}",
                k % 20,
                k % 100
            ));
        }
        doc.push(']');
        let limits = Limits {
            max_ops: 10,
            max_categories: 5,
            max_intervals: 8,
            ..Limits::BOUNDED
        };
        let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
        let r = summarize(&[doc.as_bytes()], limits);
        assert_eq!(r.categories.0.len(), 5);
        assert_eq!(r.categories.0[4].name, OTHER);
        assert_eq!(r.totals.duration_sum_ns, exact.totals.duration_sum_ns);
        let a = r.approximations.unwrap();
        assert!(a.ops_folded_into_other && a.categories_folded_into_other);
        let bound_ns = (a.busy_union_error_bound_us * 1000.0).round() as u64;
        assert!(bound_ns > 0);
        // Each category's exact union lies within [union - bound, union].
        for c in &r.categories.0[..4] {
            let e = exact
                .categories
                .0
                .iter()
                .find(|x| x.name == c.name)
                .unwrap();
            assert!(
                c.busy_union_ns >= e.busy_union_ns && c.busy_union_ns - e.busy_union_ns <= bound_ns
            );
        }
        assert!(
            r.largest_ops_by_duration_sum
                .iter()
                .any(|o| o.name == OTHER)
        );
        assert_eq!(exact.approximations, None);
    }

    /// A time-ordered document of `n` X events over `ops` ops and 3 categories, with overlaps.
    /// With `long`, some durations are over 2^32 ns (stored in 8 bytes).
    fn ordered_doc(n: usize, ops: usize, long: bool, rng: &mut Rng) -> String {
        let mut doc = String::from("{\"traceEvents\":[");
        let mut ts_ns = 1_712_195_495_000_000_000i64;
        for k in 0..n {
            if k > 0 {
                doc.push(',');
            }
            ts_ns += rng.below(3000) as i64;
            let dur_ns = if long && rng.below(50) == 0 {
                5_000_000_000 + rng.below(1_000_000) as i64
            } else if long {
                rng.below(9000) as i64
            } else {
                // Within the sketch's range (16 powers of two) for the error bound to hold.
                1000 + rng.below(9000) as i64
            };
            doc.push_str(&std::format!(
                "{{\"ph\":\"X\",\"cat\":\"c{}\",\"name\":\"op{}\",\"ts\":{}.{:03},\"dur\":{}.{:03}}}",
                k % 3,
                rng.below(ops as u64),
                ts_ns / 1000,
                ts_ns % 1000,
                dur_ns / 1000,
                dur_ns % 1000
            ));
        }
        doc.push_str("]}");
        doc
    }

    #[test]
    fn native_budget_is_exact_for_inputs_that_fit() {
        let mut rng = Rng::from_env(31);
        for round in 0..6 {
            let doc = ordered_doc(200 + 400 * round, 5 + 20 * round, true, &mut rng);
            let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
            assert_eq!(exact.approximations, None);
            // The native preset, and a budget far smaller but still large enough: identical.
            let small = Limits {
                max_exact_values: 2 * 8 * 2 * 200 * (round + 1) + 4 * 8 * 200,
                max_intervals: 16,
                ..Limits::NATIVE
            };
            for limits in [Limits::NATIVE, small] {
                assert_eq!(summarize(&[doc.as_bytes()], limits), exact, "round {round}");
            }
        }
    }

    #[test]
    fn past_the_budget_the_bounds_are_stated() {
        let mut rng = Rng::from_env(32);
        let doc = ordered_doc(3000, 4, false, &mut rng);
        let exact = summarize(&[doc.as_bytes()], Limits::EXACT);
        // Shuffle the events so the unions see them out of time order.
        let body = &doc["{\"traceEvents\":[".len()..doc.len() - 2];
        let mut events: Vec<&str> = body.split("},{").collect();
        for i in (1..events.len()).rev() {
            events.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let shuffled = std::format!(
            "{{\"traceEvents\":[{{{}}}]}}",
            events
                .iter()
                .map(|e| e.trim_start_matches('{').trim_end_matches('}'))
                .collect::<Vec<_>>()
                .join("},{")
        );
        let limits = Limits {
            max_exact_values: 600,
            max_intervals: 16,
            ..Limits::NATIVE
        };
        let r = summarize(&[shuffled.as_bytes()], limits);
        let a = r.approximations.expect("approximate past the budget");
        // Too small a budget for a sketch (16 KiB): the ops that outgrow it keep n, min, max
        // and their sum, and say their percentiles are unknown.
        assert!(a.listed_ops_without_percentiles >= 1);
        let bound_ns = (a.busy_union_error_bound_us * 1000.0).round() as u64;
        assert!(bound_ns > 0);
        assert!(r.totals.busy_union_ns >= exact.totals.busy_union_ns);
        assert!(r.totals.busy_union_ns - exact.totals.busy_union_ns <= bound_ns);
        assert_eq!(r.categories.0.len(), exact.categories.0.len());
        for c in &r.categories.0 {
            let e = exact
                .categories
                .0
                .iter()
                .find(|e| e.name == c.name)
                .unwrap();
            assert_eq!((c.events, c.duration_sum_ns), (e.events, e.duration_sum_ns));
            assert!(c.busy_union_ns >= e.busy_union_ns);
            assert!(c.busy_union_ns - e.busy_union_ns <= bound_ns);
        }
        // Sums, counts, min, max and mean stay exact; percentiles within the stated error.
        for e in &exact.largest_ops_by_duration_sum {
            let g = r
                .largest_ops_by_duration_sum
                .iter()
                .find(|g| (&g.category, &g.name) == (&e.category, &e.name))
                .unwrap();
            let (gs, es) = (g.duration_us, e.duration_us);
            assert_eq!(g.duration_sum_us, e.duration_sum_us);
            assert_eq!((gs.n, gs.min, gs.max), (es.n, es.min, es.max));
            match gs.p50 {
                // Exact values kept.
                Some(x) => assert_eq!((Some(x), gs.mean), (es.p50, es.mean)),
                // Percentiles unknown; the mean from the exact integer sum, within rounding.
                None => {
                    let (m, e) = (gs.mean.unwrap(), es.mean.unwrap());
                    assert!((m - e).abs() <= e.abs() * 1e-12, "{m} {e}");
                }
            }
        }
    }

    fn mergeable_of(doc: &[u8], limits: Limits, replay: bool) -> crate::merge::MergeState {
        with_section(doc, limits, replay).mergeable_state().unwrap()
    }

    /// The summary of `doc` with the mergeable section; `replay`: with further passes.
    fn with_section(doc: &[u8], limits: Limits, replay: bool) -> TraceSummaryResult {
        let mut sc = EventScanner::new(limits);
        let mut sum = TraceSummary::new(limits);
        sum.set_mergeable(true);
        if replay {
            sum.set_replay(alloc::boxed::Box::new(DocReplay(doc.to_vec(), limits)));
        }
        let mut pos = 0;
        loop {
            let (s, nin) = sc.scan(&doc[pos..]).unwrap();
            pos += nin;
            match s {
                Scan::Event => sum.add(&sc.event()),
                Scan::NeedsInput => break,
            }
        }
        let end = sc.finish();
        let w = *sc.warnings();
        sum.finish("t.json", &end, &w, DEFAULT_TOP_OPS)
    }

    /// Past the durations budget, the mergeable section's histograms come from a further pass,
    /// at the largest scale whose counts fit the budget, and equal the exact summary's
    /// histograms brought to that scale; where not even scale 0 fits, or without a further
    /// pass, those ops have none, and the warning says so.
    #[test]
    fn mergeable_histograms_past_the_budget_come_from_a_further_pass() {
        let mut rng = Rng::from_env(1717);
        let wide = ordered_doc(30_000, 40, true, &mut rng);
        let narrow = ordered_doc(60_000, 4, false, &mut rng);
        let mut scales = Vec::new();
        for (doc, units) in [
            (&wide, 4_000),
            (&wide, 9_000),
            (&wide, 20_000),
            (&narrow, 40_000),
        ] {
            let exact = mergeable_of(doc.as_bytes(), Limits::EXACT, false);
            assert_eq!(exact.scale, SCALE);
            assert!(exact.ops.iter().all(|o| o.histogram.is_some()));
            let tight = Limits {
                max_exact_values: units,
                ..Limits::NATIVE
            };
            let got = mergeable_of(doc.as_bytes(), tight, true);
            let without = mergeable_of(doc.as_bytes(), tight, false);
            assert!(without.ops.iter().any(|o| o.histogram.is_none()));
            let mut want = exact.clone();
            let warnings = &got.ranks[0].warnings;
            if let Some(w) = warnings.first()
                && !w.starts_with("the mergeable histograms are at scale")
            {
                assert!(w.contains("do not fit the memory budget"), "{w}");
                assert_eq!(got.scale, SCALE);
                want.ranks[0].warnings = got.ranks[0].warnings.clone();
                for (w, g) in want.ops.iter_mut().zip(&got.ops) {
                    if g.histogram.is_none() {
                        w.histogram = None;
                    }
                }
                assert!(got.ops.iter().any(|o| o.histogram.is_none()));
            } else {
                let stated = std::format!("the mergeable histograms are at scale {},", got.scale);
                let warned = warnings.len() == 1 && warnings[0].starts_with(&stated);
                assert_eq!(warned, got.scale < SCALE, "{warnings:?}");
                want.ranks[0].warnings = warnings.clone();
                want.scale = got.scale;
                for o in &mut want.ops {
                    o.histogram = o
                        .histogram
                        .as_ref()
                        .map(|h| h.downscaled(SCALE - got.scale));
                }
                scales.push(got.scale);
            }
            assert_eq!(got, want, "{units} units");
        }
        // A lower scale where the wide ranges need it, the full one where they fit.
        assert!(
            scales.len() == 3 && scales[0] < SCALE && scales[2] == SCALE,
            "{scales:?}"
        );
    }

    /// `n` X events, half over `light` ops (ten durations each within a tenth of the op's own
    /// base, as `ProfilerStep#N`), the bases log-uniform over 1 µs .. 1 ms, half over 8 heavy
    /// ones with durations log-uniform over the same range; nearly every duration of a light op
    /// is a bucket of its own.
    fn many_ops_doc(n: usize, light: u64, rng: &mut Rng) -> String {
        let mut doc = String::from("{\"traceEvents\":[");
        for k in 0..n {
            if k > 0 {
                doc.push(',');
            }
            let log_uniform = |x: u64| (1u64 << (10 + x % 10)) * (1024 + x / 10 % 1024) / 1024;
            let (name, dur_ns) = if rng.below(2) == 0 {
                let op = rng.below(light);
                let base = log_uniform(op.wrapping_mul(0x9e37_79b9));
                (std::format!("step#{op}"), base + rng.below(base / 10))
            } else {
                let x = rng.below(1 << 30);
                (std::format!("heavy{}", rng.below(8)), log_uniform(x))
            };
            doc.push_str(&std::format!(
                "{{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"{name}\",\"ts\":{k},\"dur\":{}.{:03}}}",
                dur_ns / 1000,
                dur_ns % 1000
            ));
        }
        doc.push_str("]}");
        doc
    }

    /// The mergeable section's histograms stay within the durations budget they share with the
    /// counts of the ops past it, however many ops a trace names: the exact ops' histograms take
    /// no more than their durations did, and the ops past the budget are counted in what is
    /// left, at the largest scale that fits. A scale below the full one is stated in a warning,
    /// with its error bound, and the section is the exact one at that scale.
    #[test]
    fn mergeable_histograms_stay_within_the_durations_budget() {
        let mut rng = Rng::from_env(2117);
        let doc = many_ops_doc(40_000, 4_000, &mut rng);
        let exact = mergeable_of(doc.as_bytes(), Limits::EXACT, false);
        assert_eq!(exact.scale, SCALE);
        let mut scales = Vec::new();
        for units in [12_000, 24_000, 1 << 20] {
            let limits = Limits {
                max_exact_values: units,
                ..Limits::NATIVE
            };
            let r = with_section(doc.as_bytes(), limits, true);
            let ops = &r.mergeable.as_ref().unwrap().ops;
            let per_op: u64 = ops
                .iter()
                .map(|o| {
                    (core::mem::size_of::<OpSum>() + o.category.capacity() + o.name.capacity())
                        as u64
                })
                .sum();
            let histograms = held_bytes(ops) - per_op;
            assert!(
                histograms <= 4 * units as u64,
                "{units} units: the histograms hold {histograms} bytes"
            );
            let got = r.mergeable_state().unwrap();
            assert!(got.ops.iter().all(|o| o.histogram.is_some()), "{units}");
            let stated = std::format!("the mergeable histograms are at scale {},", got.scale);
            let warned = got.ranks[0].warnings.iter().any(|w| w.contains(&stated));
            assert_eq!(warned, got.scale < SCALE, "{:?}", got.ranks[0].warnings);
            let mut want = exact.clone();
            want.scale = got.scale;
            want.ranks[0].warnings = got.ranks[0].warnings.clone();
            for o in &mut want.ops {
                o.histogram = o
                    .histogram
                    .as_ref()
                    .map(|h| h.downscaled(SCALE - got.scale));
            }
            assert_eq!(got, want, "{units} units");
            scales.push(got.scale);
        }
        assert!(scales[0] < SCALE && scales[2] == SCALE, "{scales:?}");
    }
}
