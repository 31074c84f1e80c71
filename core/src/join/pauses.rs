//! What the host did during each pause (the second pass over the trace).
//!
//! The pauses listed are the longest `max_pauses_per_device` gaps of each device from the first
//! pass ([`GapsFound`]). Every complete (`X`) host event that overlaps one of them is added to
//! that pause's `host` table by (category, name): overlap time, count and the events' own
//! durations. Overlaps are summed per (category, name), so nested events of one name can sum
//! past the pause's length (`n` says how many). Busy GPU categories are not host events.
//!
//! Annotations are context, never host activity: a `user_annotation`, a
//! `gpu_user_annotation` of the pause's own device, the profiler's `Trace` span and any
//! `ProfilerStep#N` (whatever its category), and a mark range of a merged Perfetto file
//! (`flinch_mark`). One that covers the pause, all but at most
//! [`within_tolerance_ns`] of it (1 µs or 0.1 % of the pause, whichever is larger: a step that
//! begins 100 ns after the GPU went idle still holds the pause), goes to `within` (e.g.
//! `ProfilerStep#107`), innermost first; one that covers less goes to the pause's
//! `overlapping_annotations` table, kept as the host table is.
//!
//! # Memory
//! Per listed pause at most `max_host_keys` (category, name) rows in each table (later ones
//! add to one `"(other)"` row, which is listed with the rest) and `max_within` covering
//! annotations (the innermost kept). Per event: a binary search per device.
use alloc::vec::Vec;
use serde::Serialize;

use super::clock::{NsDecimal, TsUs};
use super::gaps::{Gap, GapsFound, is_busy_category, span_ns};
use super::names::{Names, OTHER_ID};
use crate::json::{Event, IdField};

/// Options of the pause tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseOptions {
    /// Pauses listed per device, longest first.
    pub max_pauses_per_device: usize,
    /// (category, name) rows kept per pause.
    pub max_host_keys: usize,
    /// Host rows shown per pause, by overlap.
    pub host_top: usize,
    /// Enclosing annotations kept per pause.
    pub max_within: usize,
}

/// Pauses listed per device by default (`--top-pauses`; the page's `top_pauses`).
pub const DEFAULT_TOP_PAUSES: usize = 50;

impl Default for PauseOptions {
    fn default() -> Self {
        PauseOptions {
            max_pauses_per_device: DEFAULT_TOP_PAUSES,
            max_host_keys: 64,
            host_top: 10,
            max_within: 8,
        }
    }
}

const USER_ANNOTATION: &[u8] = b"user_annotation";
const GPU_USER_ANNOTATION: &[u8] = b"gpu_user_annotation";

/// Whether an event is an annotation (context, not host activity): `user_annotation`,
/// `gpu_user_annotation`, the profiler's `Trace` span, a `ProfilerStep#N` of any category, or
/// a recording's mark range in a merged file (`flinch_mark`).
pub fn is_annotation(cat: Option<&[u8]>, name: Option<&[u8]>) -> bool {
    let cat = cat.unwrap_or(b"");
    cat == USER_ANNOTATION
        || cat == GPU_USER_ANNOTATION
        || cat == b"Trace"
        || cat == b"flinch_mark"
        || name.is_some_and(|n| n.starts_with(b"ProfilerStep#"))
}

/// How much of a pause of `pause_ns` an annotation may leave uncovered and still hold it
/// (`within`): 1 µs, or 0.1 % of the pause when that is more.
pub fn within_tolerance_ns(pause_ns: i64) -> i64 {
    (pause_ns / 1000).max(1000)
}

#[derive(Clone, Copy, Debug)]
struct HostAcc {
    cat: u32,
    name: u32,
    overlap_ns: i64,
    n: u64,
    dur_ns: i64,
}

#[derive(Clone, Debug)]
pub(crate) struct Listed {
    pub gap: Gap,
    host: Vec<HostAcc>,
    annotations: Vec<HostAcc>,
    within: Vec<(u32, u32, i64, i64)>,
}

/// The host-side tables of the listed pauses.
#[derive(Clone, Debug)]
pub struct PauseHost {
    opts: PauseOptions,
    /// Per device: its listed pauses by start.
    pub(crate) devices: Vec<(i64, Vec<Listed>)>,
}

/// One row of a pause's `host` list.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HostEntry {
    /// Category.
    pub category: alloc::string::String,
    /// Name.
    pub name: alloc::string::String,
    /// Events.
    pub n: u64,
    /// Time the events overlap the pause, summed, ms.
    pub overlap_ms: f64,
}

/// An annotation covering a pause.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WithinEntry {
    /// Category.
    pub category: alloc::string::String,
    /// Name.
    pub name: alloc::string::String,
    /// Its start, trace µs (exact).
    pub start_ts_us: TsUs,
    /// Its length, ms.
    pub duration_ms: f64,
}

impl PauseHost {
    /// The tables for the longest pauses of each device.
    pub fn new(found: &GapsFound, opts: PauseOptions) -> PauseHost {
        let devices = found
            .devices
            .iter()
            .map(|d| {
                let mut listed: Vec<Listed> = d
                    .gaps
                    .iter()
                    .take(opts.max_pauses_per_device)
                    .map(|&gap| Listed {
                        gap,
                        host: Vec::new(),
                        annotations: Vec::new(),
                        within: Vec::new(),
                    })
                    .collect();
                listed.sort_by_key(|l| l.gap.start_ns);
                (d.device, listed)
            })
            .collect();
        PauseHost { opts, devices }
    }

    /// Adds one event of the second pass.
    pub fn add(&mut self, e: &Event<'_>, names: &mut Names) {
        let Some((s, t)) = span_ns(e) else {
            return;
        };
        if t <= s || is_busy_category(e.cat) {
            return;
        }
        let gpu_ann = e.cat == Some(GPU_USER_ANNOTATION);
        let ann = is_annotation(e.cat, e.name);
        let opts = self.opts;
        for (device, listed) in &mut self.devices {
            // A GPU-side annotation belongs to its own device only.
            if gpu_ann && e.pid != IdField::Int(*device) {
                continue;
            }
            let mut k = listed.partition_point(|l| l.gap.end_ns <= s);
            while k < listed.len() && listed[k].gap.start_ns < t {
                let l = &mut listed[k];
                k += 1;
                let (a, b) = (l.gap.start_ns, l.gap.end_ns);
                let overlap = t.min(b).saturating_sub(s.max(a));
                let len = b.saturating_sub(a);
                if ann && len.saturating_sub(overlap) <= within_tolerance_ns(len) {
                    let item = (names.id(e.cat), names.id(e.name), s, t);
                    l.within.push(item);
                    if l.within.len() > opts.max_within {
                        // Keep the innermost: drop the longest.
                        let (j, _) = l
                            .within
                            .iter()
                            .enumerate()
                            .max_by_key(|(_, w)| (w.3.saturating_sub(w.2), w.2))
                            .unwrap_or((0, &item));
                        l.within.swap_remove(j);
                    }
                    continue;
                }
                let table = if ann { &mut l.annotations } else { &mut l.host };
                let (c, n) = (names.id(e.cat), names.id(e.name));
                add_row(table, opts.max_host_keys, c, n, overlap, t - s);
            }
        }
    }

    /// The host rows of a pause, by overlap (ties: the shorter events first, then by name).
    pub(crate) fn host_rows(&self, l: &Listed, names: &Names) -> Vec<HostEntry> {
        self.rows(&l.host, names)
    }

    /// The annotations that overlap a pause without covering it, as [`host_rows`](Self::host_rows).
    pub(crate) fn annotation_rows(&self, l: &Listed, names: &Names) -> Vec<HostEntry> {
        self.rows(&l.annotations, names)
    }

    fn rows(&self, table: &[HostAcc], names: &Names) -> Vec<HostEntry> {
        let mut rows = table.to_vec();
        rows.sort_by(|a, b| {
            b.overlap_ns
                .cmp(&a.overlap_ns)
                .then(a.dur_ns.cmp(&b.dur_ns))
                .then(names.get(a.cat).cmp(names.get(b.cat)))
                .then(names.get(a.name).cmp(names.get(b.name)))
        });
        rows.truncate(self.opts.host_top);
        rows.iter()
            .map(|h| HostEntry {
                category: names.get(h.cat).into(),
                name: names.get(h.name).into(),
                n: h.n,
                overlap_ms: h.overlap_ns as f64 / 1e6,
            })
            .collect()
    }

    /// The enclosing annotations of a pause, innermost first.
    pub(crate) fn within_rows(l: &Listed, names: &Names) -> Vec<WithinEntry> {
        let mut w = l.within.clone();
        w.sort_by_key(|x| (x.3.saturating_sub(x.2), core::cmp::Reverse(x.2)));
        w.iter()
            .map(|&(c, n, s, t)| WithinEntry {
                category: names.get(c).into(),
                name: names.get(n).into(),
                start_ts_us: NsDecimal(s),
                duration_ms: t.saturating_sub(s) as f64 / 1e6,
            })
            .collect()
    }
}

/// Adds an event's overlap to its (category, name) row of `table`, at most `cap` rows (later
/// names go to one `"(other)"` row).
fn add_row(table: &mut Vec<HostAcc>, cap: usize, c: u32, n: u32, overlap: i64, dur: i64) {
    if cap == 0 {
        return;
    }
    let idx = match table.iter().position(|h| h.cat == c && h.name == n) {
        Some(i) => i,
        None if table.len() < cap => {
            table.push(HostAcc {
                cat: c,
                name: n,
                overlap_ns: 0,
                n: 0,
                dur_ns: 0,
            });
            table.len() - 1
        }
        None => match table
            .iter()
            .position(|h| h.cat == OTHER_ID && h.name == OTHER_ID)
        {
            Some(i) => i,
            None => {
                // The last row makes room: it joins "(other)".
                let last = table.len() - 1;
                table[last].cat = OTHER_ID;
                table[last].name = OTHER_ID;
                last
            }
        },
    };
    let h = &mut table[idx];
    h.overlap_ns = h.overlap_ns.saturating_add(overlap);
    h.n += 1;
    h.dur_ns = h.dur_ns.saturating_add(dur);
}
