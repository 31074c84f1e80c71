//! GPU idle gaps from the trace alone (the first of the join's two passes).
//!
//! A device (Kineto's GPU `pid`) is busy while any `kernel`, `gpu_memcpy` or `gpu_memset`
//! complete (`X`) event runs on any of its streams. [`GapFinder`] keeps, per device, the busy
//! stretches merged wherever they are less than `min_gap_ns` apart: what remains between two
//! stretches is a gap of at least `min_gap_ns`, and no gap shorter than that is ever needed again,
//! so the state is one interval per gap (plus one), in any event order.
//!
//! # Memory
//! At most `max_devices` devices (events of others are counted, not used) and at most
//! `max_gaps_per_device` gaps each. Past that cap a device's minimum gap is raised to just above
//! the length of its (cap/2)-th longest gap, and the shorter gaps are merged away: every gap at
//! least as long as the raised minimum is still exact (merging only hides time shorter than
//! it), and the result states the raised minimum (`min_gap_ns_effective`).
use alloc::vec::Vec;

use crate::json::{Event, IdField, NumField};

/// The categories that make a device busy.
pub const BUSY_CATEGORIES: [&[u8]; 3] = [b"kernel", b"gpu_memcpy", b"gpu_memset"];

/// Options of a [`GapFinder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GapOptions {
    /// Gaps shorter than this are not pauses, ns (`--min-gap-ms`).
    pub min_gap_ns: i64,
    /// Gaps kept per device before the minimum gap is raised.
    pub max_gaps_per_device: usize,
    /// Devices tracked.
    pub max_devices: usize,
}

impl Default for GapOptions {
    fn default() -> Self {
        GapOptions {
            min_gap_ns: 100_000_000,
            max_gaps_per_device: 65_536,
            max_devices: 256,
        }
    }
}

/// Whether `cat` makes a device busy.
pub fn is_busy_category(cat: Option<&[u8]>) -> bool {
    cat.is_some_and(|c| BUSY_CATEGORIES.contains(&c))
}

/// An `X` event's `[ts, ts + dur)` in trace ns, when both are numbers and `dur ≥ 0`.
pub fn span_ns(e: &Event<'_>) -> Option<(i64, i64)> {
    if e.ph != b"X" {
        return None;
    }
    match (e.ts_ns, e.dur_ns) {
        (NumField::Ns(ts), NumField::Ns(dur)) if dur >= 0 => Some((ts, ts.saturating_add(dur))),
        _ => None,
    }
}

/// What an event adds to the trace's time span: `[ts, ts + dur]` (`[ts, ts]` without a
/// non-negative `dur`) for every event with a `ts` but metadata (`M`), which may carry any `ts`
/// (often 0) and is not part of the traced time.
#[inline]
pub fn time_span_ns(e: &Event<'_>) -> Option<(i64, i64)> {
    match (e.ts_ns, e.ph == b"M") {
        (NumField::Ns(ts), false) => Some((
            ts,
            match e.dur_ns {
                NumField::Ns(d) if d >= 0 => ts.saturating_add(d),
                _ => ts,
            },
        )),
        _ => None,
    }
}

#[derive(Clone, Debug)]
struct Device {
    id: i64,
    min_gap_ns: i64,
    /// Busy stretches, sorted, each `min_gap_ns` or more from the next.
    busy: Vec<(i64, i64)>,
    events: u64,
}

impl Device {
    fn insert(&mut self, s: i64, e: i64) {
        let g = self.min_gap_ns;
        let v = &mut self.busy;
        // A device's events come mostly in time order: one that starts at or after the last
        // stretch's start can meet only that stretch (every earlier one ends `g` or more before
        // it), so the two searches below would find `len - 1` or `len`.
        if let Some(last) = v.last_mut()
            && last.0 <= s
            && last.0 < e.saturating_add(g)
        {
            if last.1.saturating_add(g) > s {
                last.1 = last.1.max(e);
            } else {
                v.push((s, e));
            }
            return;
        }
        let lo = v.partition_point(|iv| iv.1.saturating_add(g) <= s);
        let hi = v.partition_point(|iv| iv.0 < e.saturating_add(g));
        if lo == hi {
            v.insert(lo, (s, e));
        } else {
            let merged = (s.min(v[lo].0), e.max(v[hi - 1].1));
            v[lo] = merged;
            v.drain(lo + 1..hi);
        }
    }

    /// Raises the minimum gap so that at most `keep` gaps remain, merging the shorter ones.
    fn raise(&mut self, keep: usize) {
        let mut lens: Vec<i64> = self
            .busy
            .windows(2)
            .map(|w| w[1].0.saturating_sub(w[0].1))
            .collect();
        if lens.len() <= keep {
            return;
        }
        lens.sort_unstable_by(|a, b| b.cmp(a));
        self.min_gap_ns = self.min_gap_ns.max(lens[keep].saturating_add(1));
        let g = self.min_gap_ns;
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(keep + 1);
        for &(s, e) in &self.busy {
            match out.last_mut() {
                Some(last) if s.saturating_sub(last.1) < g => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        self.busy = out;
    }
}

/// One GPU idle gap, on the trace's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The trace device (GPU `pid`).
    pub device: i64,
    /// End of the busy stretch before it, trace ns.
    pub start_ns: i64,
    /// Start of the busy stretch after it, trace ns.
    pub end_ns: i64,
}

impl Gap {
    /// Length, ns (saturating: a gap can span more than the `i64` range holds).
    pub fn dur_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// What one device's busy time says, from [`GapFinder::finish`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceGaps {
    /// The trace device.
    pub device: i64,
    /// Busy events seen.
    pub busy_events: u64,
    /// First busy start and last busy end, trace ns.
    pub busy_start_ns: i64,
    /// Last busy end, trace ns.
    pub busy_end_ns: i64,
    /// The minimum gap in force at the end (above the asked one when the cap was reached), ns.
    pub min_gap_ns_effective: i64,
    /// Every gap found, longest first (ties: earlier first).
    pub gaps: Vec<Gap>,
}

/// Everything the first pass found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GapsFound {
    /// Per device, ascending.
    pub devices: Vec<DeviceGaps>,
    /// Busy events of devices past `max_devices` (not used).
    pub events_of_dropped_devices: u64,
    /// Busy events whose `pid` is not an integer (not used).
    pub events_without_device: u64,
    /// First `ts` and last `ts + dur` over every timed event of the trace but metadata (`M`),
    /// trace ns.
    pub trace_span_ns: Option<(i64, i64)>,
    /// What the trace's `baseTimeNanoseconds` held when it was not an integer (set by
    /// [`FirstPass`](super::FirstPass)), for an error that says what was found.
    pub base_time_problem: Option<crate::json::BaseTimeProblem>,
}

/// The first pass: feed every event with [`add`](Self::add), then [`finish`](Self::finish).
#[derive(Clone, Debug)]
pub struct GapFinder {
    opts: GapOptions,
    devices: Vec<Device>,
    dropped: u64,
    no_device: u64,
    span: Option<(i64, i64)>,
}

impl GapFinder {
    /// A finder with these options.
    pub fn new(opts: GapOptions) -> GapFinder {
        GapFinder {
            opts: GapOptions {
                min_gap_ns: opts.min_gap_ns.max(1),
                max_gaps_per_device: opts.max_gaps_per_device.max(2),
                ..opts
            },
            devices: Vec::new(),
            dropped: 0,
            no_device: 0,
            span: None,
        }
    }

    /// Adds one event.
    pub fn add(&mut self, e: &Event<'_>) {
        self.add_time_span(time_span_ns(e));
        self.add_busy(e);
    }

    /// Widens the trace's time span by `span` (from [`time_span_ns`]); the span is a min and a
    /// max, so spans of events may come in any grouping.
    pub fn add_time_span(&mut self, span: Option<(i64, i64)>) {
        let Some((ts, end)) = span else {
            return;
        };
        self.span = Some(match self.span {
            None => (ts, end),
            Some((a, b)) => (a.min(ts), b.max(end)),
        });
    }

    /// [`GapFinder::add`] without the time span: only a busy (`X`, busy category) event
    /// changes anything here, so only those need to be given.
    pub fn add_busy(&mut self, e: &Event<'_>) {
        if !is_busy_category(e.cat) {
            return;
        }
        let Some((s, end)) = span_ns(e) else {
            return;
        };
        let IdField::Int(id) = e.pid else {
            self.no_device += 1;
            return;
        };
        let k = match self.devices.iter().position(|d| d.id == id) {
            Some(k) => k,
            None if self.devices.len() < self.opts.max_devices => {
                self.devices.push(Device {
                    id,
                    min_gap_ns: self.opts.min_gap_ns,
                    busy: Vec::new(),
                    events: 0,
                });
                self.devices.len() - 1
            }
            None => {
                self.dropped += 1;
                return;
            }
        };
        let d = &mut self.devices[k];
        d.events += 1;
        d.insert(s, end);
        if d.busy.len() > self.opts.max_gaps_per_device + 1 {
            d.raise(self.opts.max_gaps_per_device / 2);
        }
    }

    /// The gaps of every device, longest first.
    pub fn finish(mut self) -> GapsFound {
        self.devices.sort_by_key(|d| d.id);
        let devices = self
            .devices
            .into_iter()
            .map(|d| {
                let mut gaps: Vec<Gap> = d
                    .busy
                    .windows(2)
                    .map(|w| Gap {
                        device: d.id,
                        start_ns: w[0].1,
                        end_ns: w[1].0,
                    })
                    .collect();
                gaps.sort_by(|a, b| {
                    b.dur_ns()
                        .cmp(&a.dur_ns())
                        .then(a.start_ns.cmp(&b.start_ns))
                });
                DeviceGaps {
                    device: d.id,
                    busy_events: d.events,
                    busy_start_ns: d.busy.first().map_or(0, |b| b.0),
                    busy_end_ns: d.busy.last().map_or(0, |b| b.1),
                    min_gap_ns_effective: d.min_gap_ns,
                    gaps,
                }
            })
            .collect();
        GapsFound {
            devices,
            events_of_dropped_devices: self.dropped,
            events_without_device: self.no_device,
            trace_span_ns: self.span,
            base_time_problem: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    fn ev(cat: &'static str, pid: i64, ts: i64, dur: i64) -> Event<'static> {
        Event {
            ph: b"X",
            cat: Some(cat.as_bytes()),
            name: Some(b"k"),
            ts_ns: NumField::Ns(ts),
            dur_ns: NumField::Ns(dur),
            pid: IdField::Int(pid),
            tid: IdField::Int(7),
            id: IdField::Missing,
            scope: IdField::Missing,
            quoted_times: 0,
            arg: crate::json::ArgValue::Missing,
        }
    }

    /// Naive oracle: sort, sweep, keep the gaps of at least `min_gap`.
    fn oracle(spans: &[(i64, i64)], min_gap: i64) -> Vec<(i64, i64)> {
        // Busy stretches by sorting and sweeping; a zero-length span is a busy instant.
        let mut edges: Vec<(i64, i64)> = Vec::new();
        let mut sorted = spans.to_vec();
        sorted.sort();
        for &(s, e) in &sorted {
            match edges.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => edges.push((s, e)),
            }
        }
        let mut gaps: Vec<(i64, i64)> = edges
            .windows(2)
            .map(|w| (w[0].1, w[1].0))
            .filter(|g| g.1 - g.0 >= min_gap)
            .collect();
        gaps.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
        gaps
    }

    /// The gaps a finder gives for kernels over `spans` on device 0 (each followed by a host op
    /// over it when `host`, which must not count), in its order.
    fn gaps_found(spans: &[(i64, i64)], min_gap: i64, host: bool) -> Vec<(i64, i64)> {
        let mut f = GapFinder::new(GapOptions {
            min_gap_ns: min_gap,
            ..GapOptions::default()
        });
        for &(s, e) in spans {
            f.add(&ev("kernel", 0, s, e - s));
            if host {
                f.add(&ev("cpu_op", 0, s + 1, 5));
            }
        }
        f.finish().devices[0]
            .gaps
            .iter()
            .map(|g| (g.start_ns, g.end_ns))
            .collect()
    }

    #[test]
    fn gaps_match_oracle_in_any_order() {
        let mut rng = Rng(11);
        for round in 0..300 {
            let n = 1 + rng.below(40) as usize;
            let spans: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    let s = rng.below(2000) as i64;
                    (s, s + rng.below(60) as i64)
                })
                .collect();
            let min_gap = 1 + rng.below(80) as i64;
            let got = gaps_found(&spans, min_gap, true);
            assert_eq!(got, oracle(&spans, min_gap), "round {round}");
        }
    }

    /// Mostly in time order (the fast path of `Device::insert`), with nested spans, spans that
    /// end exactly `min_gap` before the next, zero-length ones and a few out of order.
    #[test]
    fn gaps_match_oracle_in_time_order() {
        let mut rng = Rng(12);
        for round in 0..400 {
            let min_gap = 1 + rng.below(30) as i64;
            let mut t = rng.below(50) as i64;
            let mut spans: Vec<(i64, i64)> = Vec::new();
            for _ in 0..1 + rng.below(60) {
                let s = match rng.below(4) {
                    0 => t + min_gap,
                    1 => t + min_gap - 1,
                    _ => t + rng.below(2 * min_gap as u64) as i64,
                };
                let e = s + rng.below(40) as i64;
                spans.push((s, e));
                t = t.max(e);
                if rng.below(5) == 0 {
                    spans.push((s + 1, s + 1)); // nested, or a busy instant
                }
            }
            for _ in 0..rng.below(3) {
                let (i, j) = (rng.below(spans.len() as u64), rng.below(spans.len() as u64));
                spans.swap(i as usize, j as usize);
            }
            let got = gaps_found(&spans, min_gap, false);
            assert_eq!(got, oracle(&spans, min_gap), "round {round}");
        }
    }

    #[test]
    fn devices_and_categories() {
        let mut f = GapFinder::new(GapOptions {
            min_gap_ns: 10,
            ..GapOptions::default()
        });
        f.add(&ev("kernel", 1, 0, 5));
        f.add(&ev("gpu_memcpy", 1, 100, 5));
        f.add(&ev("gpu_memset", 0, 0, 5));
        f.add(&ev("gpu_memset", 0, 50, 5));
        f.add(&ev("cpu_op", 0, 10, 30)); // host work does not fill the gap
        let mut meta = ev("", 0, -1000, 0);
        meta.ph = b"M";
        f.add(&meta); // metadata is not traced time
        let found = f.finish();
        assert_eq!(found.devices.len(), 2);
        assert_eq!(found.devices[0].device, 0);
        assert_eq!(
            found.devices[0].gaps,
            [Gap {
                device: 0,
                start_ns: 5,
                end_ns: 50
            }]
        );
        assert_eq!(found.devices[1].gaps[0].dur_ns(), 95);
        assert_eq!(found.trace_span_ns, Some((0, 105)));
    }

    #[test]
    fn cap_in_any_order_keeps_gaps_above_the_raised_minimum_exact() {
        let mut rng = Rng(23);
        for round in 0..100 {
            let n = 20 + rng.below(200) as usize;
            let spans: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    let s = rng.below(100_000) as i64;
                    (s, s + rng.below(300) as i64)
                })
                .collect();
            let mut f = GapFinder::new(GapOptions {
                min_gap_ns: 1,
                max_gaps_per_device: 8,
                max_devices: 1,
            });
            for &(s, e) in &spans {
                f.add(&ev("kernel", 3, s, e - s));
            }
            f.add(&ev("kernel", 4, 0, 1)); // past max_devices: counted, not used
            let found = f.finish();
            assert_eq!(found.events_of_dropped_devices, 1);
            let d = &found.devices[0];
            let got: Vec<(i64, i64)> = d.gaps.iter().map(|g| (g.start_ns, g.end_ns)).collect();
            assert_eq!(got, oracle(&spans, d.min_gap_ns_effective), "round {round}");
            assert!(got.len() <= 9, "round {round}: {}", got.len());
        }
    }

    #[test]
    fn cap_raises_the_minimum_and_keeps_long_gaps_exact() {
        // 100 gaps of lengths 10..=109 ns, in time order; the cap keeps 16 gaps.
        let opts = GapOptions {
            min_gap_ns: 1,
            max_gaps_per_device: 16,
            max_devices: 4,
        };
        let mut f = GapFinder::new(opts);
        let mut t = 0i64;
        let mut spans = Vec::new();
        for k in 0..100 {
            spans.push((t, t + 3));
            t += 3 + 10 + ((k * 37) % 100);
        }
        spans.push((t, t + 3));
        for &(s, e) in &spans {
            f.add(&ev("kernel", 0, s, e - s));
        }
        let found = f.finish();
        let d = &found.devices[0];
        assert!(d.min_gap_ns_effective > 1);
        assert!(d.gaps.len() <= 17);
        let want: Vec<(i64, i64)> = oracle(&spans, d.min_gap_ns_effective);
        let got: Vec<(i64, i64)> = d.gaps.iter().map(|g| (g.start_ns, g.end_ns)).collect();
        assert_eq!(got, want);
        assert!(!got.is_empty());
    }
}
