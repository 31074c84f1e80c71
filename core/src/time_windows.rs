//! Statistics over several time windows in one pass (e.g. a whole run, its first 5 min, its
//! last 5 min and its last 60 s), as `summarize_host_telemetry.py` `telemetry_summary` computes
//! them by re-reading a file once per window.
//!
//! The windows are given up front. Rows are fed in file order: [`WindowedStatsIn::begin_row`]
//! with the row's time (unix seconds as the reference's `r["unix"]`, an int or a float), then the row's values
//! with [`push`](WindowedStatsIn::push) / [`push_missing`](WindowedStatsIn::push_missing) per
//! series, and its power reading with [`push_power`](WindowedStatsIn::push_power). Every window
//! that contains the row's time takes them. Per window this gives, like the reference:
//! - `samples`: rows in the window; `span_s`: last minus first row time, in file order;
//! - `sampling_gap_s`: stats of the gaps between consecutive rows of the window, and the count
//!   of gaps above the maximum gap (`gaps_over_5s`);
//! - per series: whether any row appended to it (the reference creates the key even for a
//!   `None` value), in which order the series were first appended to (the reference's key
//!   order), and its [`Stats`];
//! - the reference trapezoid energy over the window's consecutive power readings
//!   ([`ReferenceTrapezoid`]) and the length of the intervals it integrated.
//!
//! Times keep Python's number semantics ([`crate::pynum`]): a difference of two `int` times is
//! an `int` (a span prints `2`, not `2.0`), and comparisons between ints and floats are exact.
//! In this module a *window* is always such a time range; [`crate::telemetry`] shapes these
//! figures into `summarize`'s output.
//!
//! Values go into a [`StatsSink`]: exact ([`ExactStats`], `alloc`) or a bounded
//! [`QuantileSketchIn`] (mean, min, max exact; percentiles within the sketch's stated error).
//! [`WindowedStats::exact`] and [`WindowedStats::bounded`] allocate at construction only;
//! [`WindowedStatsIn::from_parts`] runs on caller-provided arrays with no allocator.
//!
//! # Example
//! ```
//! use flinch_core::stats::Num;
//! use flinch_core::time_windows::{Window, WindowedStats};
//!
//! let (start, duration) = (1000, 600);
//! let windows = [
//!     Window::ALL,
//!     Window::inclusive(start, start + 300),                       // first 5 min
//!     Window::inclusive(start + duration - 60, start + duration), // last 60 s
//! ];
//! const CPU: usize = 0;
//! let mut ws = WindowedStats::exact(&windows, 1);
//! for i in 0..2000 {
//!     let unix = 900 + i;
//!     ws.begin_row(unix);
//!     ws.push(CPU, (i % 100) as f64);
//!     ws.push_power(250.0);
//! }
//! assert_eq!(ws.summary(1).unwrap().samples, 301);
//! assert_eq!(ws.summary(2).unwrap().energy_j, Some(250.0 * 60.0));
//! assert_eq!(ws.stats(2, CPU).unwrap().n, 61);
//! assert_eq!(ws.summary(2).unwrap().span_s, Some(Num::Int(60)));
//! ```

use serde::Serialize;

use crate::energy::ReferenceTrapezoid;
use crate::pynum;
#[cfg(feature = "alloc")]
use crate::sketch::QuantileSketch;
use crate::sketch::QuantileSketchIn;
#[cfg(feature = "alloc")]
use crate::stats::ExactStats;
use crate::stats::{Num, Stats};

/// The reference's maximum gap: trapezoids skip longer intervals, and longer row gaps are
/// counted in `gaps_over_5s`.
pub const REFERENCE_MAX_GAP_S: Num = Num::Int(5);

/// A time range in seconds (Python numbers). `None` leaves a side open.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Inclusive start (`start <= t`).
    pub start_s: Option<Num>,
    /// End: inclusive (`t <= stop`) unless `stop_exclusive`.
    pub stop_s: Option<Num>,
    /// `t < stop` instead of `t <= stop` (the reference's request trends use `begin <= t < end`).
    pub stop_exclusive: bool,
}

impl Window {
    /// Every time (the reference's `telemetry_summary(path)` with no window).
    pub const ALL: Window = Window {
        start_s: None,
        stop_s: None,
        stop_exclusive: false,
    };

    /// `[start_s, stop_s]`, both ends inclusive, as `telemetry_summary(path, start, stop)`.
    pub fn inclusive(start_s: impl Into<Num>, stop_s: impl Into<Num>) -> Window {
        Window {
            start_s: Some(start_s.into()),
            stop_s: Some(stop_s.into()),
            stop_exclusive: false,
        }
    }

    /// `[start_s, stop_s)`, as the reference's request trends (`begin <= t < end`).
    pub fn half_open(start_s: impl Into<Num>, stop_s: impl Into<Num>) -> Window {
        Window {
            start_s: Some(start_s.into()),
            stop_s: Some(stop_s.into()),
            stop_exclusive: true,
        }
    }

    /// Whether `t_s` lies in the window, compared as Python compares (NaN lies only in a
    /// window open on both sides).
    pub fn contains(&self, t_s: impl Into<Num>) -> bool {
        let t_s = t_s.into();
        let after_start = self.start_s.is_none_or(|s| pynum::ge(t_s, s));
        let before_stop = match self.stop_s {
            None => true,
            Some(e) if self.stop_exclusive => pynum::lt(t_s, e),
            Some(e) => pynum::le(t_s, e),
        };
        after_start && before_stop
    }
}

/// Where a window's values go: exact or sketched statistics.
pub trait StatsSink {
    /// Adds a value; non-finite values are dropped. Returns whether it was kept.
    fn push_value(&mut self, v: Num) -> bool;
    /// The statistics so far.
    fn stats(&mut self) -> Stats;
    /// Relative error bound of the percentiles (0 for exact statistics).
    fn quantile_relative_error(&self) -> f64;
    /// Values whose sketch bucket was collapsed (0 for exact statistics).
    fn collapsed(&self) -> u64;
}

#[cfg(feature = "alloc")]
impl StatsSink for ExactStats {
    fn push_value(&mut self, v: Num) -> bool {
        self.push(v)
    }
    fn stats(&mut self) -> Stats {
        ExactStats::stats(self)
    }
    fn quantile_relative_error(&self) -> f64 {
        0.0
    }
    fn collapsed(&self) -> u64 {
        0
    }
}

impl<B: AsRef<[u64]> + AsMut<[u64]>> StatsSink for QuantileSketchIn<B> {
    fn push_value(&mut self, v: Num) -> bool {
        self.push(v)
    }
    fn stats(&mut self) -> Stats {
        QuantileSketchIn::stats(self).stats
    }
    fn quantile_relative_error(&self) -> f64 {
        crate::sketch::RELATIVE_ERROR
    }
    fn collapsed(&self) -> u64 {
        QuantileSketchIn::collapsed(self)
    }
}

/// Per-window row bookkeeping: counts, span, gaps and the reference energy.
#[derive(Clone, Debug)]
pub struct WindowState<A> {
    window: Window,
    max_gap_s: Num,
    samples: u64,
    first_t_s: Num,
    last_t_s: Num,
    gaps: A,
    gaps_over_max: u64,
    energy: ReferenceTrapezoid,
    /// Whether every power reading's time was an int (then the observed duration is one).
    power_times_all_int: bool,
    /// Series first appended to so far (the next one gets this rank).
    series_seen: u32,
    /// Whether the current row lies in the window (decided once per row, in `begin_row`).
    holds_row: bool,
}

impl<A: StatsSink> WindowState<A> {
    /// State for `window`, collecting its row gaps in `gap_sink`, with the reference's 5 s
    /// maximum gap.
    pub fn new(window: Window, gap_sink: A) -> WindowState<A> {
        WindowState {
            window,
            max_gap_s: REFERENCE_MAX_GAP_S,
            samples: 0,
            first_t_s: Num::Int(0),
            last_t_s: Num::Int(0),
            gaps: gap_sink,
            gaps_over_max: 0,
            energy: ReferenceTrapezoid::new(REFERENCE_MAX_GAP_S.to_f64()),
            power_times_all_int: true,
            series_seen: 0,
            holds_row: false,
        }
    }

    /// Sets the maximum gap (energy intervals longer are skipped, row gaps longer are counted).
    pub fn with_max_gap_s(mut self, max_gap_s: impl Into<Num>) -> WindowState<A> {
        self.set_max_gap_s(max_gap_s.into());
        self
    }

    fn set_max_gap_s(&mut self, max_gap_s: Num) {
        self.max_gap_s = max_gap_s;
        self.energy = ReferenceTrapezoid::new(max_gap_s.to_f64());
    }

    fn row(&mut self, t_s: Num) {
        if self.samples == 0 {
            self.first_t_s = t_s;
        } else {
            let gap = pynum::sub(t_s, self.last_t_s);
            self.gaps.push_value(gap);
            if pynum::gt(gap, self.max_gap_s) {
                self.gaps_over_max += 1;
            }
        }
        self.last_t_s = t_s;
        self.samples += 1;
    }

    fn power(&mut self, t_s: Num, power_w: f64) {
        self.power_times_all_int &= matches!(t_s, Num::Int(_));
        self.energy.push(t_s.to_f64(), power_w);
    }

    /// `energy_observed_duration_s`: Python sums integer differences as an `int`. An f64 sum
    /// of integers below 2^53 is exact, so it converts back without loss.
    fn observed_duration_s(&self) -> Num {
        let s = self.energy.observed_s();
        if self.power_times_all_int && s.abs() < 9_007_199_254_740_992.0 {
            Num::Int(s as i64)
        } else {
            Num::Float(s)
        }
    }

    /// The window's row figures so far.
    pub fn summary(&mut self) -> WindowSummary {
        WindowSummary {
            samples: self.samples,
            span_s: (self.samples >= 2).then(|| pynum::sub(self.last_t_s, self.first_t_s)),
            sampling_gap_s: self.gaps.stats(),
            gaps_over_max: self.gaps_over_max,
            energy_j: self.energy.energy_j(),
            energy_observed_duration_s: self.observed_duration_s(),
            energy_intervals: self.energy.intervals(),
        }
    }

    /// The window.
    pub fn window(&self) -> Window {
        self.window
    }
}

/// One window's row figures, as `telemetry_summary` reports them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WindowSummary {
    /// Rows in the window (`samples`).
    pub samples: u64,
    /// Last minus first row time in file order, with at least two rows (`span_s`).
    pub span_s: Option<Num>,
    /// Stats of the gaps between consecutive rows of the window (`sampling_gap_s`).
    pub sampling_gap_s: Stats,
    /// Gaps above the maximum gap (`gaps_over_5s`).
    pub gaps_over_max: u64,
    /// Reference trapezoid energy (`whole_gpu_energy_j_over_observed_intervals`).
    pub energy_j: Option<f64>,
    /// Summed length of the integrated intervals (`energy_observed_duration_s`): an int when
    /// every power reading's time was one.
    pub energy_observed_duration_s: Num,
    /// Integrated intervals.
    pub energy_intervals: u64,
}

/// One (window, series) cell: how many rows appended to the series, and its values.
#[derive(Clone, Debug)]
pub struct SeriesState<A> {
    appended: u64,
    rank: u32,
    sink: A,
}

impl<A: StatsSink> SeriesState<A> {
    /// A cell collecting into `sink`.
    pub fn new(sink: A) -> SeriesState<A> {
        SeriesState {
            appended: 0,
            rank: 0,
            sink,
        }
    }

    /// Rows that appended to this series in this window, values or missing ones (the
    /// reference's series key exists when this is > 0).
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Where this series stands among the window's series by first append (0 first): the
    /// order of the reference's keys. Meaningful once [`appended`](Self::appended) is > 0.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The series' statistics in this window.
    pub fn stats(&mut self) -> Stats {
        self.sink.stats()
    }

    /// The sink, for its error statement.
    pub fn sink(&self) -> &A {
        &self.sink
    }
}

/// Windowed statistics over storage `W` (window states) and `C` (cells, window-major:
/// cell `w * series + s`). See the module docs; use [`WindowedStats`] under `alloc`.
#[derive(Clone, Debug)]
pub struct WindowedStatsIn<A, W, C> {
    windows: W,
    cells: C,
    series: usize,
    current_t_s: Option<Num>,
    _sink: core::marker::PhantomData<A>,
}

/// Windowed statistics in vectors allocated at construction.
#[cfg(feature = "alloc")]
pub type WindowedStats<A> =
    WindowedStatsIn<A, alloc::vec::Vec<WindowState<A>>, alloc::vec::Vec<SeriesState<A>>>;

#[cfg(feature = "alloc")]
impl WindowedStats<ExactStats> {
    /// Exact statistics for `series` series in each of `windows` (memory grows with values).
    pub fn exact(windows: &[Window], series: usize) -> WindowedStats<ExactStats> {
        WindowedStats::build(windows, series, ExactStats::new)
    }
}

#[cfg(feature = "alloc")]
impl WindowedStats<QuantileSketch> {
    /// Sketch-backed statistics with `buckets_per_sign` buckets per cell, allocated here once:
    /// `(series + 1) * windows.len()` sketches (the extra one per window holds row gaps).
    pub fn bounded(
        windows: &[Window],
        series: usize,
        buckets_per_sign: usize,
    ) -> WindowedStats<QuantileSketch> {
        WindowedStats::build(windows, series, || QuantileSketch::new(buckets_per_sign))
    }
}

#[cfg(feature = "alloc")]
impl<A: StatsSink>
    WindowedStatsIn<A, alloc::vec::Vec<WindowState<A>>, alloc::vec::Vec<SeriesState<A>>>
{
    fn build(windows: &[Window], series: usize, mut sink: impl FnMut() -> A) -> WindowedStats<A> {
        let states = windows
            .iter()
            .map(|&w| WindowState::new(w, sink()))
            .collect();
        let cells = (0..windows.len() * series)
            .map(|_| SeriesState::new(sink()))
            .collect();
        WindowedStatsIn {
            windows: states,
            cells,
            series,
            current_t_s: None,
            _sink: core::marker::PhantomData,
        }
    }

    /// Sets every window's maximum gap (default [`REFERENCE_MAX_GAP_S`]).
    pub fn with_max_gap_s(mut self, max_gap_s: impl Into<Num>) -> Self {
        let max_gap_s = max_gap_s.into();
        for w in self.windows.iter_mut() {
            w.set_max_gap_s(max_gap_s);
        }
        self
    }
}

impl<A, W, C> WindowedStatsIn<A, W, C>
where
    A: StatsSink,
    W: AsRef<[WindowState<A>]> + AsMut<[WindowState<A>]>,
    C: AsRef<[SeriesState<A>]> + AsMut<[SeriesState<A>]>,
{
    /// Windowed statistics over caller-built storage: one [`WindowState`] per window, and
    /// `windows * series` [`SeriesState`] cells, window-major. `None` when the cell count is
    /// not a multiple of the window count (or there are cells but no windows).
    pub fn from_parts(windows: W, cells: C) -> Option<WindowedStatsIn<A, W, C>> {
        let nw = windows.as_ref().len();
        let nc = cells.as_ref().len();
        let series = if nw == 0 {
            if nc != 0 {
                return None;
            }
            0
        } else {
            if !nc.is_multiple_of(nw) {
                return None;
            }
            nc / nw
        };
        Some(WindowedStatsIn {
            windows,
            cells,
            series,
            current_t_s: None,
            _sink: core::marker::PhantomData,
        })
    }

    /// Number of series per window.
    pub fn series(&self) -> usize {
        self.series
    }

    /// Number of windows.
    pub fn windows(&self) -> usize {
        self.windows.as_ref().len()
    }

    /// Starts a row at `t_s`: counts it, and its gap, in every window that contains it.
    pub fn begin_row(&mut self, t_s: impl Into<Num>) {
        let t_s = t_s.into();
        self.current_t_s = Some(t_s);
        for w in self.windows.as_mut() {
            w.holds_row = w.window.contains(t_s);
            if w.holds_row {
                w.row(t_s);
            }
        }
    }

    /// Whether the current row lies in window `w`.
    pub fn holds_row(&self, w: usize) -> bool {
        self.windows.as_ref().get(w).is_some_and(|s| s.holds_row)
    }

    /// Adds the current row's value of `series` to every window holding the row. Ignored
    /// before the first [`begin_row`](Self::begin_row) or for a series out of range.
    pub fn push(&mut self, series: usize, v: impl Into<Num>) {
        self.push_opt(series, Some(v.into()));
    }

    /// Notes that the current row appended a missing value (`None`) to `series`: the series
    /// then exists in the window, with no value added.
    pub fn push_missing(&mut self, series: usize) {
        self.push_opt(series, None);
    }

    fn push_opt(&mut self, series: usize, v: Option<Num>) {
        if self.current_t_s.is_none() || series >= self.series {
            return;
        }
        let n = self.series;
        let windows = self.windows.as_mut();
        let cells = self.cells.as_mut();
        for (w, state) in windows.iter_mut().enumerate() {
            if state.holds_row {
                let cell = &mut cells[w * n + series];
                if cell.appended == 0 {
                    cell.rank = state.series_seen;
                    state.series_seen += 1;
                }
                cell.appended += 1;
                if let Some(v) = v {
                    cell.sink.push_value(v);
                }
            }
        }
    }

    /// Adds the current row's power reading to every window holding the row (the reference's
    /// `power` list: rows with a parseable, finite power only).
    pub fn push_power(&mut self, power_w: f64) {
        let Some(t) = self.current_t_s else { return };
        for w in self.windows.as_mut() {
            if w.holds_row {
                w.power(t, power_w);
            }
        }
    }

    /// The state of window `w` (its [`WindowState::summary`]); `None` when out of range.
    pub fn window_state(&mut self, w: usize) -> Option<&mut WindowState<A>> {
        self.windows.as_mut().get_mut(w)
    }

    /// The cell of `series` in window `w`; `None` when out of range.
    pub fn cell(&mut self, w: usize, series: usize) -> Option<&mut SeriesState<A>> {
        if series >= self.series {
            return None;
        }
        let n = self.series;
        self.cells.as_mut().get_mut(w * n + series)
    }

    /// Shortcut: the statistics of `series` in window `w`.
    pub fn stats(&mut self, w: usize, series: usize) -> Option<Stats> {
        self.cell(w, series).map(|c| c.stats())
    }

    /// Shortcut: window `w`'s row figures.
    pub fn summary(&mut self, w: usize) -> Option<WindowSummary> {
        self.window_state(w).map(|s| s.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::RELATIVE_ERROR;
    use crate::stats::stats_f64;
    use crate::testutil::Rng;
    use std::vec::Vec;

    struct Row {
        t: f64,
        a: Option<f64>,
        b: Option<f64>,
        power: Option<f64>,
    }

    fn rows(rng: &mut Rng) -> Vec<Row> {
        let mut t = 1.7e9 + rng.unit_f64() * 100.0;
        (0..rng.below(400))
            .map(|_| {
                t += match rng.below(20) {
                    0 => 7.0,
                    1 => -3.0,
                    _ => 0.5 + rng.unit_f64(),
                };
                Row {
                    t,
                    a: (rng.below(5) != 0).then(|| rng.unit_f64() * 100.0),
                    b: (rng.below(9) == 0).then_some(f64::NAN),
                    power: (rng.below(4) != 0).then(|| 50.0 + rng.unit_f64() * 200.0),
                }
            })
            .collect()
    }

    /// Naive oracle: filter the rows per window, then compute as the reference does.
    fn naive(rows: &[Row], w: &Window) -> (WindowSummary, Stats, u64) {
        let kept: Vec<&Row> = rows.iter().filter(|r| w.contains(r.t)).collect();
        let gaps: Vec<f64> = kept.windows(2).map(|p| p[1].t - p[0].t).collect();
        let power: Vec<(f64, f64)> = kept
            .iter()
            .filter_map(|r| r.power.map(|p| (r.t, p)))
            .collect();
        let mut e = ReferenceTrapezoid::new(5.0);
        power.iter().for_each(|&(t, p)| e.push(t, p));
        let a: Vec<f64> = kept.iter().filter_map(|r| r.a).collect();
        let appended_b = kept.len() as u64;
        (
            WindowSummary {
                samples: kept.len() as u64,
                span_s: (kept.len() >= 2).then(|| Num::Float(kept[kept.len() - 1].t - kept[0].t)),
                sampling_gap_s: stats_f64(&gaps),
                gaps_over_max: gaps.iter().filter(|&&g| g > 5.0).count() as u64,
                energy_j: e.energy_j(),
                // Python's `sum([])` is the int 0; these times are floats.
                energy_observed_duration_s: if power.is_empty() {
                    Num::Int(0)
                } else {
                    Num::Float(e.observed_s())
                },
                energy_intervals: e.intervals(),
            },
            stats_f64(&a),
            appended_b,
        )
    }

    fn windows_for(rows: &[Row]) -> Vec<Window> {
        let start = rows.first().map_or(0.0, |r| r.t) + 20.0;
        let end = rows.last().map_or(0.0, |r| r.t);
        std::vec![
            Window::ALL,
            Window::inclusive(start, start + 120.0),
            Window::inclusive(end - 120.0, end),
            Window::inclusive(end - 60.0, end),
            Window::half_open(start, start + 60.0),
        ]
    }

    fn feed<A: StatsSink, W, C>(ws: &mut WindowedStatsIn<A, W, C>, rows: &[Row])
    where
        W: AsRef<[WindowState<A>]> + AsMut<[WindowState<A>]>,
        C: AsRef<[SeriesState<A>]> + AsMut<[SeriesState<A>]>,
    {
        for r in rows {
            ws.begin_row(r.t);
            if let Some(a) = r.a {
                ws.push(0, a);
            }
            match r.b {
                Some(b) => ws.push(1, b),
                None => ws.push_missing(1),
            }
            if let Some(p) = r.power {
                ws.push_power(p);
            }
        }
    }

    #[test]
    fn exact_matches_per_window_oracle() {
        let mut rng = Rng::from_env(51);
        for _ in 0..200 {
            let rows = rows(&mut rng);
            let windows = windows_for(&rows);
            let mut ws = WindowedStats::exact(&windows, 2);
            feed(&mut ws, &rows);
            for (i, w) in windows.iter().enumerate() {
                let (summary, a, appended_b) = naive(&rows, w);
                assert_eq!(ws.summary(i).unwrap(), summary);
                assert_eq!(ws.stats(i, 0).unwrap(), a);
                assert_eq!(ws.cell(i, 1).unwrap().appended(), appended_b);
                assert_eq!(ws.stats(i, 1).unwrap().n, 0);
            }
        }
    }

    #[test]
    fn bounded_matches_within_sketch_error() {
        let mut rng = Rng::from_env(52);
        for _ in 0..100 {
            let rows = rows(&mut rng);
            let windows = windows_for(&rows);
            let mut ws = WindowedStats::bounded(&windows, 2, 1024);
            feed(&mut ws, &rows);
            for (i, w) in windows.iter().enumerate() {
                let (summary, a, _) = naive(&rows, w);
                let got = ws.summary(i).unwrap();
                assert_eq!(got.samples, summary.samples);
                assert_eq!(got.energy_j, summary.energy_j);
                assert_eq!(got.gaps_over_max, summary.gaps_over_max);
                let sa = ws.stats(i, 0).unwrap();
                assert_eq!((sa.n, sa.mean, sa.min, sa.max), (a.n, a.mean, a.min, a.max));
                // Collapsing (values spread wider than 1024 buckets) keeps high quantiles.
                let collapsed = ws.cell(i, 0).unwrap().sink().collapsed();
                let pairs = [
                    (sa.p50, a.p50),
                    (sa.p90, a.p90),
                    (sa.p95, a.p95),
                    (sa.p99, a.p99),
                ];
                for (k, (g, x)) in pairs.into_iter().enumerate() {
                    if let (Some(g), Some(x)) = (g, x)
                        && (collapsed == 0 || k > 0)
                    {
                        assert!((g - x).abs() <= RELATIVE_ERROR * x.abs() * (1.0 + 1e-12));
                    }
                }
            }
        }
    }

    #[test]
    fn no_alloc_parts_form() {
        use crate::sketch::QuantileSketchIn;
        let windows = [Window::ALL, Window::inclusive(10.0, 20.0)];
        let mk = || QuantileSketchIn::from_buffer([0u64; 64]).unwrap();
        let states = [
            WindowState::new(windows[0], mk()),
            WindowState::new(windows[1], mk()),
        ];
        let cells = [SeriesState::new(mk()), SeriesState::new(mk())];
        let mut ws = WindowedStatsIn::from_parts(states, cells).unwrap();
        for t in 0..30 {
            ws.begin_row(t as f64);
            ws.push(0, t);
            ws.push_power(100.0);
        }
        assert_eq!(ws.summary(0).unwrap().samples, 30);
        assert_eq!(ws.summary(1).unwrap().samples, 11);
        assert_eq!(ws.summary(1).unwrap().energy_j, Some(1000.0));
        assert_eq!(ws.stats(1, 0).unwrap().min, Some(Num::Int(10)));
        assert_eq!(ws.stats(1, 0).unwrap().max, Some(Num::Int(20)));
        assert!(ws.stats(1, 1).is_none());
        let bad: Option<WindowedStatsIn<_, _, _>> = WindowedStatsIn::from_parts(
            [
                WindowState::new(Window::ALL, mk()),
                WindowState::new(Window::ALL, mk()),
            ],
            [SeriesState::new(mk())],
        );
        assert!(bad.is_none());
    }

    /// Integer times keep Python's int results (span, gaps, observed duration); one float
    /// power time makes the duration a float; int bounds compare exactly with float times.
    #[test]
    fn int_times_give_int_figures() {
        let windows = [Window::ALL, Window::inclusive(Num::Int(12), Num::Int(14))];
        let mut ws = WindowedStats::exact(&windows, 1);
        for t in [10i64, 12, 13, 20] {
            ws.begin_row(t);
            ws.push_power(100.0);
        }
        let all = ws.summary(0).unwrap();
        assert_eq!(all.span_s, Some(Num::Int(10)));
        assert_eq!(all.sampling_gap_s.max, Some(Num::Int(7)));
        assert_eq!(all.gaps_over_max, 1);
        assert_eq!(all.energy_observed_duration_s, Num::Int(3));
        assert_eq!(ws.summary(1).unwrap().samples, 2);
        ws.begin_row(20.5);
        ws.push_power(100.0);
        let all = ws.summary(0).unwrap();
        assert_eq!(all.span_s, Some(Num::Float(10.5)));
        assert_eq!(all.energy_observed_duration_s, Num::Float(3.5));
        let big = (1i64 << 53) + 1;
        assert!(Window::inclusive(Num::Int(big), Num::Int(big)).contains(Num::Int(big)));
        assert!(!Window::inclusive(Num::Int(big), Num::Int(big)).contains(big as f64));
    }

    /// The series' rank is the order of their first append within each window.
    #[test]
    fn series_rank_follows_first_append_per_window() {
        let windows = [Window::ALL, Window::inclusive(2, 9)];
        let mut ws = WindowedStats::exact(&windows, 3);
        ws.begin_row(1);
        ws.push(2, 1);
        ws.begin_row(2);
        ws.push(1, 1);
        ws.push_missing(0);
        ws.push(2, 1);
        let ranks = |ws: &mut WindowedStats<ExactStats>, w| {
            (0..3)
                .map(|s| ws.cell(w, s).unwrap().rank())
                .collect::<Vec<_>>()
        };
        assert_eq!(ranks(&mut ws, 0), [2, 1, 0]);
        assert_eq!(ranks(&mut ws, 1), [1, 0, 2]);
    }

    #[test]
    fn window_edges() {
        let w = Window::inclusive(1.0, 2.0);
        assert!(w.contains(1.0) && w.contains(2.0) && !w.contains(2.0000001));
        let h = Window::half_open(1.0, 2.0);
        assert!(h.contains(1.0) && !h.contains(2.0));
        assert!(Window::ALL.contains(f64::NAN) && !w.contains(f64::NAN));
    }
}
