//! The engine behind [`WindowAnalyzer`]: rows leave the reorder buffer in time order and feed
//! every open window; windows close and become results.

use super::row::has_gpu_reading;
use super::*;

#[derive(Clone, Copy, Debug)]
pub(super) struct SampleItem {
    pub(super) slot: u16,
    pub(super) s: Sample,
    pub(super) rapl_uj: Option<u64>,
    pub(super) rapl_max_uj: Option<u64>,
}

/// A kept mark on its way through the reorder buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct MarkItem {
    /// Interned label.
    pub(super) label: u32,
    /// 1-based occurrence of the label.
    pub(super) occurrence: u32,
    /// `mark_thread`: a pair closes only on an end mark with the same one.
    pub(super) thread: Option<u64>,
    /// The selected pair's start mark.
    pub(super) sel_start: bool,
    /// The selected pair's end mark.
    pub(super) sel_end: bool,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Item {
    Sample(SampleItem),
    /// A kept mark.
    Mark(MarkItem),
    /// A RAPL reading on a row whose GPU is not analyzed (or dropped).
    Rapl(Option<u64>, Option<u64>),
}

pub(crate) struct GpuState {
    pub(crate) key: Option<i64>,
    pub(crate) prev: Prev,
    pub(crate) floor: PowerHistogram,
    pub(crate) series: Series,
    pub(crate) samples: u64,
    pub(crate) power_samples: u64,
    pub(crate) repeated: u64,
    pub(crate) first_power_t: Option<i64>,
    pub(crate) last_power_t: Option<i64>,
    /// Rows with any GPU reading ([`has_gpu_reading`]).
    pub(crate) readings: u64,
}

impl GpuState {
    /// The slot of the GPU `key` in `gpus`, added (with a series of `series_points`) when new and
    /// fewer than `max_gpus` are held; `None` past that cap. The analyzer and the join's
    /// `IdleFloors` share it, so both give a GPU the same slot and drop the same GPUs.
    #[inline]
    pub(crate) fn slot(
        gpus: &mut Vec<GpuState>,
        key: Option<i64>,
        max_gpus: usize,
        series_points: usize,
    ) -> Option<u16> {
        // Nearly always the first GPU (one GPU, or the first of a few).
        if gpus.first().is_some_and(|g| g.key == key) {
            return Some(0);
        }
        if let Some(i) = gpus.iter().position(|g| g.key == key) {
            return Some(i as u16);
        }
        if gpus.len() >= max_gpus.min(u16::MAX as usize) {
            return None;
        }
        gpus.push(GpuState::new(key, Series::new(series_points)));
        Some((gpus.len() - 1) as u16)
    }

    pub(crate) fn new(key: Option<i64>, series: Series) -> GpuState {
        GpuState {
            key,
            prev: Prev::default(),
            floor: PowerHistogram::new(),
            series,
            samples: 0,
            power_samples: 0,
            repeated: 0,
            first_power_t: None,
            last_power_t: None,
            readings: 0,
        }
    }

    /// A sample in time order, for the GPU's summary ([`summarize_gpu`]): `finite_power` is its
    /// power reading when a finite number. `prev.power` is the caller's to move on after.
    #[inline]
    pub(crate) fn add_reading(&mut self, t_ns: i64, finite_power: Option<f64>) {
        self.samples += 1;
        if let Some(p) = finite_power {
            self.power_samples += 1;
            self.floor.add(p);
            if matches!(self.prev.power, Some((_, pp)) if pp.to_bits() == p.to_bits()) {
                self.repeated += 1;
            }
            self.first_power_t.get_or_insert(t_ns);
            self.last_power_t = Some(t_ns);
        }
    }
}

pub(super) struct ActiveWindow {
    pub(super) id: u64,
    pub(super) kind: &'static str,
    /// The start mark's `mark_thread`: a pair closes only on an end mark with the same one.
    pub(super) thread: Option<u64>,
    pub(super) start_label: u32,
    pub(super) end_label: Option<u32>,
    pub(super) occurrence: u32,
    pub(super) t0: i64,
    pub(super) t1: Option<i64>,
    pub(super) reference: RefAcc,
    pub(super) gpus: Vec<GpuAcc>,
    /// RAPL package energy, µJ.
    pub(super) rapl: WindowCounter,
    /// False for a span past `max_spans`: a placeholder that holds nothing and is never
    /// reported, kept open only so that pair ends still close the pairs they belong to.
    pub(super) kept: bool,
    /// Pass 3 of a streamed analysis: the result was handed out from pass 1's accumulators.
    pub(super) streamed: bool,
}

impl ActiveWindow {
    fn t1(&self) -> i64 {
        self.t1.unwrap_or(i64::MAX)
    }
}

/// Everything but the CSV reader (so a row borrowed from the reader can be added).
pub(super) struct Engine {
    pub(super) opts: WindowOptions,
    pub(super) reorder: GrowReorder<Item>,
    pub(super) counts: RowCounts,
    pub(super) label_ids: BTreeMap<Vec<u8>, u32>,
    pub(super) labels: Vec<String>,
    pub(super) label_counts: Vec<u32>,
    pub(super) marks: Vec<MarkInfo>,
    /// Marks kept (listed or streamed), at most `limits.max_marks` plus the selected pair's.
    pub(super) kept_marks: usize,
    pub(super) gpus: Vec<GpuState>,
    pub(super) rapl_prev: Option<(i64, u64)>,
    pub(super) rapl_max: Option<u64>,
    pub(super) active: Vec<ActiveWindow>,
    pub(super) done: Vec<ActiveWindow>,
    pub(super) next_id: u64,
    /// Time of the selected start mark, once read.
    pub(super) sel_start_t: Option<i64>,
    /// Time of the selected end mark, once read.
    pub(super) sel_end_t: Option<i64>,
    pub(super) sel_window: Option<ActiveWindow>,
    pub(super) warnings: Vec<String>,
    /// Kept spans (open or done), at most `limits.max_spans`.
    pub(super) kept_spans: usize,
    /// Marks seen with the selected start and end labels (whole labels).
    pub(super) sel_seen: [u32; 2],
    /// Kept mark labels cut to `max_string_bytes`.
    pub(super) labels_cut: u64,
    /// Where marks and finished spans go.
    pub(super) mode: Mode,
    /// Line of a first line that is no trace.csv header.
    pub(super) no_header_line: Option<u64>,
    /// Line of a quote that never closes.
    pub(super) open_quote_line: Option<u64>,
    /// `gpu_power_W` values that are not finite numbers (nan, inf, text).
    pub(super) bad_power: u64,
    /// SAMPLE rows with a GPU reading, of any GPU ([`has_gpu_reading`]).
    pub(super) gpu_reading_rows: u64,
    /// Line of the first of them.
    pub(super) first_bad_power_line: Option<u64>,
    /// Pair starts never closed by their end mark.
    pub(super) unclosed_pairs: u64,
    /// The first few of them: (label, occurrence, t_mono_ns).
    pub(super) unclosed_first: Vec<(u32, u32, i64)>,
}

pub(super) const MAX_OPEN_PAIRS: usize = 64;

/// Unclosed pair starts named in their warning (the rest are counted).
pub(super) const UNCLOSED_LISTED: usize = 5;

impl Engine {
    pub(super) fn new(opts: WindowOptions) -> Engine {
        Engine {
            reorder: Reorder::new(opts.reorder_capacity, opts.reorder_horizon_ns),
            opts,
            counts: RowCounts::default(),
            label_ids: BTreeMap::new(),
            labels: Vec::new(),
            label_counts: Vec::new(),
            marks: Vec::new(),
            kept_marks: 0,
            gpus: Vec::new(),
            rapl_prev: None,
            rapl_max: None,
            active: Vec::with_capacity(MAX_OPEN_PAIRS + 4),
            done: Vec::new(),
            next_id: 0,
            sel_start_t: None,
            sel_end_t: None,
            sel_window: None,
            warnings: Vec::new(),
            kept_spans: 0,
            sel_seen: [0; 2],
            labels_cut: 0,
            mode: Mode::Collect,
            no_header_line: None,
            open_quote_line: None,
            bad_power: 0,
            gpu_reading_rows: 0,
            first_bad_power_line: None,
            unclosed_pairs: 0,
            unclosed_first: Vec::new(),
        }
    }

    pub(super) fn header(&mut self, line: u64, usable: bool) {
        self.counts.headers += 1;
        if !usable {
            self.no_header_line.get_or_insert(line);
        }
    }

    pub(super) fn unbalanced_quote(&mut self, line: u64) {
        self.bad(line);
        self.open_quote_line.get_or_insert(line);
    }

    /// The id of a label, interning it.
    fn intern(&mut self, label: &[u8]) -> u32 {
        if let Some(&id) = self.label_ids.get(label) {
            return id;
        }
        let id = self.labels.len() as u32;
        self.label_ids.insert(label.to_vec(), id);
        self.labels
            .push(String::from_utf8_lossy(label).into_owned());
        self.label_counts.push(0);
        id
    }

    pub(super) fn bad(&mut self, line: u64) {
        self.counts.bad_rows += 1;
        self.counts.first_bad_line.get_or_insert(line);
    }

    fn late(&mut self, line: u64) {
        self.counts.late_rows += 1;
        self.counts.first_late_line.get_or_insert(line);
    }

    pub(super) fn push_row(&mut self, row: &Row<'_>) {
        let p = ParsedRow::from_row(row, !self.opts.reference_only);
        self.push_parsed(&p, row.label());
    }

    pub(super) fn push_parsed(&mut self, p: &ParsedRow, label: &[u8]) {
        if let Mode::Marks(_) = self.mode {
            if p.kind == ParsedKind::Mark {
                self.add_mark(label, p.t_mono_ns, p.t_wall_ns, p.mark_thread, p.line);
            }
            return;
        }
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
                match self.add_mark(label, t, p.t_wall_ns, p.mark_thread, p.line) {
                    Some(m) => Item::Mark(m),
                    None => return,
                }
            }
            ParsedKind::Sample => {
                self.counts.samples += 1;
                let reading = has_gpu_reading(p);
                self.gpu_reading_rows += u64::from(reading);
                if p.power_bad {
                    self.bad_power += 1;
                    self.first_bad_power_line.get_or_insert(p.line);
                }
                let selected = match self.opts.gpu {
                    Some(g) => p.gpu_index.unwrap_or(0) == g,
                    None => true,
                };
                let slot = if selected {
                    self.slot(p.gpu_index)
                } else {
                    None
                };
                if let Some(slot) = slot {
                    self.gpus[slot as usize].readings += u64::from(reading);
                }
                match slot {
                    Some(slot) => Item::Sample(SampleItem {
                        slot,
                        s: Sample {
                            t_ns: t,
                            power_w: p.power_w,
                            util_pct: p.util_pct,
                            sm_clock_mhz: p.sm_clock_mhz,
                            energy_mj: p.energy_mj,
                        },
                        rapl_uj: p.rapl_uj,
                        rapl_max_uj: p.rapl_max_uj,
                    }),
                    None => {
                        if selected {
                            self.counts.samples_dropped += 1;
                        }
                        if p.rapl_uj.is_none() {
                            return;
                        }
                        Item::Rapl(p.rapl_uj, p.rapl_max_uj)
                    }
                }
            }
        };
        let prio = if matches!(item, Item::Mark(_)) { 0 } else { 1 };
        if self.reorder.push(t, prio, item).is_err() {
            self.late(p.line);
            return;
        }
        while let Some((t, item)) = self.reorder.pop(false) {
            self.emit(t, item);
        }
    }

    #[inline]
    fn slot(&mut self, key: Option<i64>) -> Option<u16> {
        let (max_gpus, points) = (self.opts.limits.max_gpus, self.opts.series_points);
        GpuState::slot(&mut self.gpus, key, max_gpus, points)
    }

    fn add_mark(
        &mut self,
        raw: &[u8],
        t: i64,
        t_wall_ns: Option<i64>,
        thread: Option<u64>,
        line: u64,
    ) -> Option<MarkItem> {
        // The selection is matched on the whole label, counted apart from the kept marks.
        let (mut sel_start, mut sel_end) = (false, false);
        if let Some(sel) = &self.opts.select {
            if raw == sel.start.as_bytes() {
                self.sel_seen[0] += 1;
                if self.sel_seen[0] == sel.occurrence {
                    self.sel_start_t = Some(t);
                    sel_start = true;
                }
            }
            if raw == sel.end.as_bytes() {
                self.sel_seen[1] += 1;
                if self.sel_seen[1] == sel.occurrence {
                    self.sel_end_t = Some(t);
                    sel_end = true;
                }
            }
        }
        let is_sel = sel_start || sel_end;
        // Kept labels are cut to `max_string_bytes` (on a UTF-8 boundary).
        let label = &raw[..char_floor(raw, self.opts.limits.max_string_bytes)];
        let full = self.kept_marks >= self.opts.limits.max_marks;
        let id = match self.label_ids.get(label) {
            Some(&id) => id,
            // Past `max_marks` a new label is not interned.
            None if full && !is_sel => {
                self.counts.marks_dropped += 1;
                return None;
            }
            None => self.intern(label),
        };
        self.label_counts[id as usize] += 1;
        let occurrence = self.label_counts[id as usize];
        if full && !is_sel {
            self.counts.marks_dropped += 1;
            return None;
        }
        if label.len() < raw.len() {
            self.labels_cut += 1;
        }
        self.kept_marks += 1;
        let info = MarkInfo {
            label: self.labels[id as usize].clone(),
            t_mono_ns: t,
            t_wall_ns,
            occurrence,
            line,
            thread,
        };
        self.keep_mark(info);
        Some(MarkItem {
            label: id,
            occurrence,
            thread,
            sel_start,
            sel_end,
        })
    }

    fn new_window(
        &mut self,
        kind: &'static str,
        start_label: u32,
        occurrence: u32,
        t0: i64,
        kept: bool,
    ) -> ActiveWindow {
        self.next_id += 1;
        let mut gpus = Vec::new();
        if kept {
            gpus.reserve_exact(self.gpus.len().max(1));
            gpus.resize_with(self.gpus.len(), GpuAcc::default);
        }
        ActiveWindow {
            id: self.next_id,
            kind,
            thread: None,
            start_label,
            end_label: None,
            occurrence,
            t0,
            t1: None,
            reference: RefAcc::default(),
            gpus,
            rapl: WindowCounter::default(),
            kept,
            streamed: false,
        }
    }

    /// A new span, kept while fewer than `max_spans` are; past it a placeholder, counted.
    fn new_span(
        &mut self,
        kind: &'static str,
        label: u32,
        occurrence: u32,
        t: i64,
    ) -> ActiveWindow {
        let kept = self.kept_spans < self.opts.limits.max_spans;
        if kept {
            self.kept_spans += 1;
        }
        let mut w = self.new_window(kind, label, occurrence, t, kept);
        if kept && let Mode::Spans(_) = self.mode {
            self.slot_span(&mut w);
        }
        w
    }

    /// A span removed before it closed, which is never reported: its place under `max_spans`
    /// is given back, and pass 3 waits for no result of it.
    fn forget_span(&mut self, w: &ActiveWindow) {
        if !w.kept {
            return;
        }
        self.kept_spans -= 1;
        if let Mode::Spans(st) = &mut self.mode
            && let Ok(i) = st.slots.binary_search_by_key(&w.id, |s| s.0)
        {
            st.slots.remove(i);
        }
    }

    /// Pass 3: the output slot of a new kept span (none for one never closed); a span kept
    /// aside by pass 1 is decided at once.
    fn slot_span(&mut self, w: &mut ActiveWindow) {
        let Mode::Spans(mut st) = core::mem::replace(&mut self.mode, Mode::Collect) else {
            return;
        };
        if !st.plan.never_closed.contains(&w.id) {
            let r = st.plan.early.remove(&w.id);
            w.streamed = r.is_some();
            st.slots.push_back((w.id, r));
        }
        self.mode = Mode::Spans(st);
    }

    /// A kept mark, listed, held or handed out as the mode says.
    fn keep_mark(&mut self, info: MarkInfo) {
        match &mut self.mode {
            Mode::Collect => self.marks.push(info),
            Mode::Plan(p) => {
                if !p.marks_over {
                    self.marks.push(info);
                    if self.marks.len() > p.hold {
                        p.marks_over = true;
                        self.marks = Vec::new();
                    }
                }
            }
            Mode::Marks(q) => q.push_back(info),
            Mode::Spans(_) => {}
        }
    }

    /// A span that can no longer change (closed and past its end).
    fn span_done(&mut self, w: ActiveWindow) {
        match &mut self.mode {
            Mode::Collect => self.done.push(w),
            Mode::Plan(p) => {
                if self.next_id - w.id > p.hold as u64 {
                    p.early.insert(w.id, w);
                } else if !p.spans_over {
                    self.done.push(w);
                    if self.done.len() > p.hold {
                        p.spans_over = true;
                        self.done = Vec::new();
                    }
                }
            }
            Mode::Marks(_) => {}
            Mode::Spans(_) => {
                if w.streamed {
                    return;
                }
                let Mode::Spans(mut st) = core::mem::replace(&mut self.mode, Mode::Collect) else {
                    return;
                };
                let r = self.result(&w, &self.ctx(&st.plan.gpus));
                st.decide(w.id, r);
                self.mode = Mode::Spans(st);
            }
        }
    }

    fn ctx<'a>(&self, gpus: &'a [GpuSummary]) -> verdict::Context<'a> {
        verdict::Context {
            gpus,
            source: self.opts.power_source,
            max_gap_ns: self.opts.max_gap_ns,
        }
    }

    fn emit(&mut self, t: i64, item: Item) {
        match item {
            Item::Mark(m) => self.emit_mark(t, m),
            Item::Sample(s) => {
                self.emit_sample(&s);
                self.close_due(t);
            }
            Item::Rapl(uj, max) => {
                self.emit_rapl(t, uj, max);
                self.close_due(t);
            }
        }
    }

    fn emit_mark(&mut self, t: i64, m: MarkItem) {
        let (label, occurrence) = (m.label, m.occurrence);
        if m.sel_start {
            let w = self.new_window("window", label, occurrence, t, true);
            self.sel_window = Some(w);
        }
        if m.sel_end
            && let Some(w) = &mut self.sel_window
            && w.t1.is_none()
        {
            w.t1 = Some(t);
            w.end_label = Some(label);
        }
        if !self.opts.spans {
            return;
        }
        // A pair end closes the latest open pair with the same stem and the same thread.
        let name = self.labels[label as usize].clone();
        let thread = m.thread;
        let mut closed_pair = None;
        if let Some(stem) = pair_end_stem(&name) {
            // The latest by creation (`active` is reordered by `swap_remove`).
            let found = self
                .active
                .iter_mut()
                .filter(|w| {
                    w.kind == "pair"
                        && w.t1.is_none()
                        && w.thread == thread
                        && pair_start_stem(&self.labels[w.start_label as usize]) == Some(stem)
                })
                .max_by_key(|w| w.id);
            if let Some(w) = found {
                w.t1 = Some(t);
                w.end_label = Some(label);
                closed_pair = Some(w.id);
            }
        }
        // The stretch since the previous mark ends here, unless the pair just closed is that
        // very stretch (its start was the previous mark: the stretch was created right after
        // it): the span is then listed once, as the `pair`.
        let mut i = 0;
        while i < self.active.len() {
            let w = &mut self.active[i];
            if w.kind == "between" && w.t1.is_none() {
                if closed_pair.is_some_and(|id| w.id == id + 1) {
                    let w = self.active.swap_remove(i);
                    self.forget_span(&w);
                    continue;
                }
                w.t1 = Some(t);
                w.end_label = Some(label);
            }
            i += 1;
        }
        if pair_start_stem(&name).is_some() {
            let open = self
                .active
                .iter()
                .filter(|w| w.kind == "pair" && w.t1.is_none())
                .count();
            if open < MAX_OPEN_PAIRS {
                let mut w = self.new_span("pair", label, occurrence, t);
                w.thread = thread;
                self.active.push(w);
            } else {
                self.counts.spans_dropped += 1;
            }
        }
        let w = self.new_span("between", label, occurrence, t);
        self.active.push(w);
        // Placeholders that closed here would have been reported: count them, hold nothing.
        let before = self.active.len();
        self.active.retain(|w| w.kept || w.t1.is_none());
        self.counts.spans_dropped += (before - self.active.len()) as u64;
    }

    fn emit_rapl(&mut self, t: i64, uj: Option<u64>, max: Option<u64>) {
        if let Some(m) = max {
            self.rapl_max = Some(m);
        }
        let Some(uj) = uj else { return };
        if let Some((prev_t, prev_uj)) = self.rapl_prev {
            // What the counter did is the same for every window: decided once.
            let step = CounterStep::new(prev_uj, uj, self.rapl_max);
            for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
                if !w.kept {
                    continue;
                }
                let t1 = w.t1();
                w.rapl.add_step((prev_t, t), step, (w.t0, t1));
            }
        }
        self.rapl_prev = Some((t, uj));
    }

    fn emit_sample(&mut self, si: &SampleItem) {
        let s = &si.s;
        let slot = si.slot as usize;
        let max_gap = self.opts.max_gap_ns;
        if self.opts.reference_only {
            self.gpus[slot].samples += 1;
            if let Some(p) = s.power_w {
                for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
                    if w.kept && w.t0 <= s.t_ns && s.t_ns <= w.t1() {
                        w.reference.add(s.t_ns, p, s.util_pct);
                    }
                }
            }
            return;
        }
        // Non-finite power readings go to the reference figures only (counted in a warning).
        let finite_power = s.power_w.filter(|p| p.is_finite());
        {
            let g = &mut self.gpus[slot];
            g.add_reading(s.t_ns, finite_power);
            g.series.add(s.t_ns, finite_power, s.util_pct);
        }
        let prev = self.gpus[slot].prev;
        let n_gpus = self.gpus.len();
        for w in self.active.iter_mut().chain(self.sel_window.iter_mut()) {
            if !w.kept {
                continue;
            }
            let (t0, t1) = (w.t0, w.t1());
            if w.gpus.len() < n_gpus {
                w.gpus.resize_with(n_gpus, GpuAcc::default);
            }
            if let Some(p) = s.power_w
                && t0 <= s.t_ns
                && s.t_ns <= t1
            {
                w.reference.add(s.t_ns, p, s.util_pct);
            }
            w.gpus[slot].add(s, &prev, t0, t1, max_gap);
        }
        let g = &mut self.gpus[slot];
        if let Some(p) = finite_power {
            g.prev.power = Some((s.t_ns, p));
        }
        if let Some(u) = s.util_pct {
            g.prev.util = Some((s.t_ns, u));
        }
        if let Some(e) = s.energy_mj {
            g.prev.counter = Some((s.t_ns, e));
        }
        if si.rapl_uj.is_some() || si.rapl_max_uj.is_some() {
            self.emit_rapl(s.t_ns, si.rapl_uj, si.rapl_max_uj);
        }
    }

    /// Moves windows that can no longer change to `done`.
    fn close_due(&mut self, now: i64) {
        let max_gap = self.opts.max_gap_ns;
        let finished = |w: &ActiveWindow, gpus: &[GpuState]| match w.t1 {
            None => false,
            Some(t1) => {
                now > t1.saturating_add(max_gap)
                    || (now > t1
                        && gpus.iter().enumerate().all(|(i, g)| {
                            g.last_power_t.is_none_or(|lt| lt <= w.t0)
                                || w.gpus.get(i).is_some_and(|a| a.past_end)
                        }))
            }
        };
        let mut i = 0;
        while i < self.active.len() {
            if finished(&self.active[i], &self.gpus) {
                let w = self.active.swap_remove(i);
                // Placeholders never get here (removed when closed); kept spans ≤ max_spans.
                self.span_done(w);
            } else {
                i += 1;
            }
        }
    }

    /// Releases every held row and finishes the spans closed by then; returns the ids of the
    /// kept spans never closed (dropped: a start without its end, the last stretch).
    pub(super) fn end_input(&mut self) -> alloc::collections::BTreeSet<u64> {
        while let Some((t, item)) = self.reorder.pop(true) {
            self.emit(t, item);
        }
        let mut never_closed = alloc::collections::BTreeSet::new();
        // Open pairs are at most MAX_OPEN_PAIRS: listed in time order.
        let mut unclosed: Vec<(i64, u64, u32, u32)> = Vec::new();
        for w in core::mem::take(&mut self.active) {
            if w.t1.is_some() {
                self.span_done(w);
                continue;
            }
            if w.kept {
                never_closed.insert(w.id);
            }
            if w.kind == "pair" {
                unclosed.push((w.t0, w.id, w.start_label, w.occurrence));
            }
        }
        unclosed.sort_unstable();
        self.unclosed_pairs = unclosed.len() as u64;
        self.unclosed_first = unclosed
            .iter()
            .take(UNCLOSED_LISTED)
            .map(|&(t0, _, label, occurrence)| (label, occurrence, t0))
            .collect();
        never_closed
    }

    pub(super) fn end(mut self) -> Planned {
        let never_closed = self.end_input();
        self.finish(never_closed)
    }

    fn finish(mut self, never_closed: alloc::collections::BTreeSet<u64>) -> Planned {
        let gpus: Vec<GpuSummary> = self.gpus.iter().map(summarize_gpu).collect();
        let ctx = self.ctx(&gpus);
        let (marks_streamed, early) = match core::mem::replace(&mut self.mode, Mode::Collect) {
            Mode::Plan(p) => {
                if p.spans_over {
                    (p.marks_over, Some(p.early))
                } else {
                    self.done.extend(p.early.into_values());
                    (p.marks_over, None)
                }
            }
            _ => (false, None),
        };
        let mut done = core::mem::take(&mut self.done);
        done.sort_by_key(|w| (w.t0, w.id));
        // Each span's accumulators are freed as its result is made (30 000 spans: tens of MB).
        let spans: Vec<WindowResult> = done.into_iter().map(|w| self.result(&w, &ctx)).collect();
        let selection = self.opts.select.as_ref().map(|s| Selection {
            start: s.start.clone(),
            end: s.end.clone(),
            occurrence: s.occurrence,
            start_t_mono_ns: self.sel_start_t,
            end_t_mono_ns: self.sel_end_t,
        });
        let window = match (&selection, &self.sel_window) {
            (Some(sel), Some(w)) if sel.error().is_none() && w.t1.is_some() => {
                Some(self.result(w, &ctx))
            }
            _ => None,
        };
        let c = &self.counts;
        let mut warnings = core::mem::take(&mut self.warnings);
        if let Some(line) = self.no_header_line {
            warnings.push(alloc::format!(
                "no trace.csv header: line {line} names no t_mono_ns and row_type columns (or is over {} bytes or {} fields), so no row can be read; a trace.csv starts with its header line",
                crate::csv::RECORD_BYTES,
                crate::csv::MAX_FIELDS
            ));
        }
        if let Some(line) = self.open_quote_line {
            warnings.push(alloc::format!(
                "unbalanced quote: a quoted field opens at line {line} and never closes, so the rest of the file was read as one field and skipped"
            ));
        }
        if self.bad_power > 0 {
            warnings.push(alloc::format!(
                "{} gpu_power_W values are not finite numbers (nan, inf or text): left out of the edge energy, idle floor and verdict (the reference figures take nan and inf as Python does); first at line {}",
                self.bad_power,
                self.first_bad_power_line.unwrap_or(0)
            ));
        }
        if c.bad_rows > 0 {
            warnings.push(alloc::format!(
                "{} bad rows skipped (unparseable t_mono_ns or over-long); first at line {}",
                c.bad_rows,
                c.first_bad_line.unwrap_or(0)
            ));
        }
        if self.unclosed_pairs > 0 {
            let mut listed = String::new();
            for (k, (label, occurrence, t0)) in self.unclosed_first.iter().enumerate() {
                listed.push_str(if k == 0 { "" } else { "; " });
                listed.push_str(&alloc::format!(
                    "{} (occurrence {occurrence}, t_mono_ns {t0})",
                    self.labels[*label as usize]
                ));
            }
            let more = self.unclosed_pairs - self.unclosed_first.len() as u64;
            warnings.push(alloc::format!(
                "{} pair starts never closed by their end mark, so not analyzed as pairs: {listed}{}",
                self.unclosed_pairs,
                if more > 0 {
                    alloc::format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        if c.late_rows > 0 {
            warnings.push(alloc::format!(
                "{} rows arrived more than {} ms after a later-timestamped row (e.g. an appended recording whose clock went back) and were skipped; first at line {}",
                c.late_rows,
                self.opts.reorder_horizon_ns / 1_000_000,
                c.first_late_line.unwrap_or(0)
            ));
        }
        if c.samples_dropped > 0 {
            warnings.push(alloc::format!(
                "samples of GPUs beyond max_gpus skipped: {}",
                c.samples_dropped
            ));
        }
        if c.marks_dropped > 0 {
            warnings.push(alloc::format!(
                "marks beyond max_marks skipped: {}",
                c.marks_dropped
            ));
        }
        if self.labels_cut > 0 {
            warnings.push(alloc::format!(
                "mark labels longer than max_string_bytes ({}) cut: {}",
                self.opts.limits.max_string_bytes,
                self.labels_cut
            ));
        }
        if c.spans_dropped > 0 {
            warnings.push(alloc::format!(
                "spans beyond max_spans (or open pairs beyond {}) not analyzed: {}",
                MAX_OPEN_PAIRS,
                c.spans_dropped
            ));
        }
        let series = self
            .gpus
            .iter()
            .zip(&gpus)
            .filter(|(_, s)| self.opts.series_points > 0 && !s.is_phantom())
            .map(|(g, _)| GpuSeries {
                gpu_index: g.key,
                bucket_ns: g.series.bucket_ns(),
                points: g.series.points(),
            })
            .collect();
        let spans_plan = early.map(|early| SpanPlan {
            early: early
                .into_iter()
                .map(|(id, w)| (id, self.result(&w, &ctx)))
                .collect(),
            never_closed,
            gpus: gpus.clone(),
        });
        let gpu_energy_note =
            super::result::gpu_energy_note(self.counts.samples, self.gpu_reading_rows);
        let mut gpus = gpus;
        gpus.retain(|g| !g.is_phantom());
        Planned {
            analysis: RecordingAnalysis {
                rows: self.counts.clone(),
                gpus,
                marks: core::mem::take(&mut self.marks),
                selection,
                window,
                spans: if self.opts.spans { spans } else { Vec::new() },
                series,
                warnings,
                gpu_energy_note,
            },
            marks_streamed,
            spans: spans_plan,
        }
    }

    fn result(&self, w: &ActiveWindow, ctx: &verdict::Context<'_>) -> WindowResult {
        let t1 = w.t1.unwrap_or(w.t0);
        let dur_ns = (t1 as i128 - w.t0 as i128) as f64;
        let mut gpus = Vec::with_capacity(w.gpus.len());
        for (i, a) in w.gpus.iter().enumerate() {
            // The whole recording's figures (in pass 3 of a streamed analysis, pass 1's).
            let g = &ctx.gpus[i];
            if g.samples == 0 || g.is_phantom() {
                continue;
            }
            let has_power = a.power.covered_ns > 0 || a.power.skipped_ns > 0;
            let v = ctx.gpu_verdict(i, a, w.t0, t1);
            gpus.push(GpuWindow {
                gpu_index: g.gpu_index,
                reference: RefFigures::from(&a.reference),
                energy_edge_j: has_power.then_some(a.power.integral),
                energy_counter_j: (a.counter.covered_ns > 0).then(|| a.counter.delta / 1000.0),
                util_time_weighted_pct: (a.util.covered_ns > 0)
                    .then(|| a.util.integral / a.util.covered_ns as f64),
                sm_clock_mean_mhz: (a.sm_clock_n > 0).then(|| a.sm_clock_sum / a.sm_clock_n as f64),
                samples: a.samples,
                repeated_samples: a.repeated,
                repeated_energy_share: (a.power.integral > 0.0)
                    .then(|| a.energy_on_repeats_j / a.power.integral),
                max_gap_s: (a.power.max_interval_ns > 0)
                    .then(|| a.power.max_interval_ns as f64 / 1e9),
                power_coverage: if dur_ns > 0.0 {
                    a.power.covered_ns as f64 / dur_ns
                } else {
                    0.0
                },
                gap_skipped_s: a.power.skipped_ns as f64 / 1e9,
                counter_resets: a.counter.resets,
                verdict: v,
            });
        }
        let sum = |f: &dyn Fn(&GpuWindow) -> Option<f64>| -> Option<f64> {
            let vals: Vec<Option<f64>> = gpus.iter().map(f).collect();
            if vals.is_empty() || vals.iter().any(Option::is_none) {
                None
            } else {
                Some(vals.iter().flatten().sum())
            }
        };
        let total = WindowTotals {
            energy_edge_j: sum(&|g| g.energy_edge_j),
            energy_counter_j: sum(&|g| g.energy_counter_j),
            energy_reference_j: sum(&|g| g.reference.energy_j),
        };
        let rapl = (w.rapl.covered_ns > 0 || w.rapl.resets > 0).then(|| RaplWindow {
            energy_j: w.rapl.delta / 1e6,
            coverage: if dur_ns > 0.0 {
                w.rapl.covered_ns as f64 / dur_ns
            } else {
                0.0
            },
            wraps: w.rapl.wraps,
            uncorrected_wraps: w.rapl.resets,
        });
        let verdict = verdict::combine(gpus.iter().map(|g| &g.verdict));
        WindowResult {
            kind: w.kind,
            start_label: self.labels[w.start_label as usize].clone(),
            end_label: w
                .end_label
                .map(|l| self.labels[l as usize].clone())
                .unwrap_or_default(),
            occurrence: w.occurrence,
            thread: w.thread,
            t0_mono_ns: w.t0,
            t1_mono_ns: t1,
            duration_s: (t1 as i128 - w.t0 as i128) as f64 / 1e9,
            reference: RefFigures::from(&w.reference),
            gpus,
            total,
            rapl,
            verdict,
        }
    }
}

pub(crate) fn summarize_gpu(g: &GpuState) -> GpuSummary {
    let floor = g.floor.quantile(IDLE_FLOOR_Q);
    let p99 = g.floor.quantile(POWER_HIGH_Q);
    let threshold = busy_threshold_w(floor, p99);
    let mean_interval_ms = mean_interval_ms(g.first_power_t, g.last_power_t, g.power_samples);
    GpuSummary {
        gpu_index: g.key,
        samples: g.samples,
        power_samples: g.power_samples,
        idle_floor_w: floor,
        power_p99_w: p99,
        busy_threshold_w: threshold,
        mean_interval_ms,
        repeated_power_readings: g.repeated,
        gpu_readings: g.readings,
    }
}

/// The longest prefix of `s` of at most `max` bytes that does not cut a UTF-8 sequence.
pub(super) fn char_floor(s: &[u8], max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut k = max;
    while k > 0 && s[k] & 0xC0 == 0x80 {
        k -= 1;
    }
    k
}
