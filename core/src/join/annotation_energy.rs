//! Energy per annotation name (`user_annotation`, `gpu_user_annotation`), from the recording.
//!
//! Each span `[ts, ts + dur]` is a window on the recording's clock; its energy per GPU is the
//! edge-interpolated trapezoid ([`Recording::window`](super::recording::Recording::window)), summed over the span's GPUs: a
//! `gpu_user_annotation`'s own device, a `user_annotation`'s every device the trace keeps busy
//! (or every recorded GPU when the trace has no GPU events), each mapped to its `gpu_index`.
//! Per name: the count, the summed duration and energy, the average power (per GPU, energy over
//! the time its power readings cover, summed over GPUs), the time-weighted utilization (mean
//! over the GPUs), and the verdicts of the single spans (the most common one leads).
//!
//! Names that differ only by a trailing `#N` (`ProfilerStep#12`) are one row, named with `#*`
//! (`ProfilerStep#*`): its count and sums are over every such span; per-step figures are the
//! steps' (`trace --steps`, docs/steps.md).
//!
//! # Memory
//! At most `max_names` (category, name) rows; later names add to one `"(other)"` row.
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use serde::Serialize;

use super::clock::Alignment;
use super::gaps::span_ns;
use super::names::{Names, OTHER_ID};
use super::recording::RecRef;
use crate::json::{Event, IdField};
use crate::window::combine_verdicts;

#[derive(Clone, Debug, Default)]
struct Acc {
    cat: u32,
    name: u32,
    n: u64,
    dur_ns: i128,
    energy_j: f64,
    has_energy: bool,
    /// Per recorded GPU: energy, J, and time covered by power readings, ns.
    per_gpu: Vec<(f64, i64)>,
    util_integral: f64,
    util_covered_ns: i64,
    /// compute, waiting, mixed, none.
    verdicts: [u64; 4],
    without_gpu: u64,
    non_finite_power: u64,
}

/// Counts of the single spans' verdicts.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct VerdictCounts {
    /// `compute`.
    pub compute: u64,
    /// `waiting`.
    pub waiting: u64,
    /// `mixed`.
    pub mixed: u64,
    /// No verdict (the signals do not resolve the span).
    pub none: u64,
}

/// One annotation name.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AnnotationEnergy {
    /// `user_annotation` or `gpu_user_annotation`.
    pub category: String,
    /// Name.
    pub name: String,
    /// Spans.
    pub n: u64,
    /// Summed length, ms.
    pub duration_ms: f64,
    /// Summed edge-interpolated energy, J (null when no power reading touches any span).
    pub gpu_energy_j: Option<f64>,
    /// Average power: per GPU, energy over the time its power readings cover; summed, W.
    pub avg_power_w: Option<f64>,
    /// Time-weighted utilization, %.
    pub avg_util_pct: Option<f64>,
    /// The most common verdict of the single spans (ties: mixed, then waiting, then compute).
    pub verdict: Option<&'static str>,
    /// Every span's verdict, counted.
    pub verdicts: VerdictCounts,
    /// Spans with no recorded GPU to charge.
    #[serde(skip_serializing_if = "is_zero")]
    pub spans_without_gpu: u64,
    /// `gpu_power_W` values in the spans (per GPU charged) that are not finite numbers (nan,
    /// inf, text), left out of the figures (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub non_finite_power_readings: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

const USER_ANNOTATION: &[u8] = b"user_annotation";
const GPU_USER_ANNOTATION: &[u8] = b"gpu_user_annotation";

/// The accumulator of the second pass.
pub struct AnnotationEnergyAcc<'r> {
    rec: RecRef<'r>,
    align: Alignment,
    /// Recording slots of a `user_annotation`.
    host_slots: Vec<usize>,
    /// (trace device, recording slot).
    device_slots: Vec<(i64, usize)>,
    rows: BTreeMap<(u32, u32), usize>,
    accs: Vec<Acc>,
    max_names: usize,
    /// Spans whose Unix time leaves the `i64` range.
    pub unconverted: u64,
    /// The grouped name of the span at hand (reused: no allocation per span).
    grouped: Vec<u8>,
}

/// `name` with a trailing `#` and digits replaced by `#*`, into `buf`; `None` when it has no
/// such suffix.
pub fn grouped_name<'a>(name: &[u8], buf: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    let at = name.iter().rposition(|&b| b == b'#')?;
    let digits = &name[at + 1..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    buf.clear();
    buf.extend_from_slice(&name[..=at]);
    buf.push(b'*');
    Some(buf)
}

/// Names in natural order: runs of ASCII digits compare as numbers (`#2` before `#10`), the
/// rest byte by byte.
pub fn natural_cmp(a: &str, b: &str) -> core::cmp::Ordering {
    use core::cmp::Ordering;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            // Leading zeros aside, the longer run is the larger number.
            let (x, y) = (trim_zeros(&a[si..i]), trim_zeros(&b[sj..j]));
            let o = x.len().cmp(&y.len()).then_with(|| x.cmp(y));
            if o != Ordering::Equal {
                return o;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j)).then_with(|| a.cmp(b))
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let k = d.iter().position(|&c| c != b'0').unwrap_or(d.len());
    &d[k..]
}

impl<'r> AnnotationEnergyAcc<'r> {
    /// `host_slots`: the recorded GPUs a `user_annotation` is charged;
    /// `device_slots`: each trace device's recorded GPU.
    pub fn new(
        rec: impl Into<RecRef<'r>>,
        align: Alignment,
        host_slots: Vec<usize>,
        device_slots: Vec<(i64, usize)>,
        max_names: usize,
    ) -> Self {
        AnnotationEnergyAcc {
            rec: rec.into(),
            align,
            host_slots,
            device_slots,
            rows: BTreeMap::new(),
            accs: Vec::new(),
            max_names,
            unconverted: 0,
            grouped: Vec::new(),
        }
    }

    /// Adds one event of the second pass.
    pub fn add(&mut self, e: &Event<'_>, names: &mut Names) {
        let cat = e.cat.unwrap_or(b"");
        let gpu = cat == GPU_USER_ANNOTATION;
        if !gpu && cat != USER_ANNOTATION {
            return;
        }
        let Some((s, t)) = span_ns(e) else {
            return;
        };
        let name = match e.name {
            Some(n) => grouped_name(n, &mut self.grouped).or(Some(n)),
            None => None,
        };
        let key = (names.id(e.cat), names.id(name));
        let row = match self.rows.get(&key) {
            Some(&r) => r,
            None => {
                let key = if self.accs.len() < self.max_names {
                    key
                } else {
                    (OTHER_ID, OTHER_ID)
                };
                let r = *self.rows.entry(key).or_insert(self.accs.len());
                if r == self.accs.len() {
                    self.accs.push(Acc {
                        cat: key.0,
                        name: key.1,
                        per_gpu: alloc::vec![(0.0, 0); self.rec.slots().len()],
                        ..Acc::default()
                    });
                }
                r
            }
        };
        let one: [usize; 1];
        let slots: &[usize] = if gpu {
            match self
                .device_slots
                .iter()
                .find(|d| IdField::Int(d.0) == e.pid)
            {
                Some(&(_, slot)) => {
                    one = [slot];
                    &one
                }
                None => &[],
            }
        } else {
            &self.host_slots
        };
        let acc = &mut self.accs[row];
        acc.n += 1;
        acc.dur_ns += i128::from(t - s);
        if slots.is_empty() {
            acc.without_gpu += 1;
            acc.verdicts[3] += 1;
            return;
        }
        let (Some(t0), Some(t1)) = (self.align.unix_ns(s), self.align.unix_ns(t)) else {
            self.unconverted += 1;
            acc.verdicts[3] += 1;
            return;
        };
        let mut verdicts = Vec::with_capacity(slots.len());
        for &slot in slots {
            let w = self.rec.window(slot, t0, t1);
            if let Some(j) = w.energy_j() {
                acc.energy_j += j;
                acc.has_energy = true;
                acc.per_gpu[slot].0 += j;
                acc.per_gpu[slot].1 = acc.per_gpu[slot].1.saturating_add(w.acc.power.covered_ns);
            }
            acc.non_finite_power += w.non_finite_power;
            acc.util_integral += w.acc.util.integral;
            acc.util_covered_ns = acc.util_covered_ns.saturating_add(w.acc.util.covered_ns);
            verdicts.push(w.verdict);
        }
        let v = combine_verdicts(verdicts.iter());
        let i = match v.verdict {
            Some("compute") => 0,
            Some("waiting") => 1,
            Some(_) => 2,
            None => 3,
        };
        acc.verdicts[i] += 1;
    }

    /// The rows, by summed energy (largest first; names without energy last, by name).
    pub fn finish(self, names: &Names) -> Vec<AnnotationEnergy> {
        let mut out: Vec<AnnotationEnergy> = self
            .accs
            .iter()
            .map(|a| {
                let power: Vec<f64> = a
                    .per_gpu
                    .iter()
                    .filter(|g| g.1 > 0)
                    .map(|g| g.0 / (g.1 as f64 / 1e9))
                    .collect();
                let [compute, waiting, mixed, none] = a.verdicts;
                let mut best: Option<(&'static str, u64)> = None;
                for (name, c) in [("mixed", mixed), ("waiting", waiting), ("compute", compute)] {
                    if c > 0 && best.is_none_or(|b| c > b.1) {
                        best = Some((name, c));
                    }
                }
                AnnotationEnergy {
                    category: names.get(a.cat).into(),
                    name: names.get(a.name).into(),
                    n: a.n,
                    duration_ms: a.dur_ns as f64 / 1e6,
                    gpu_energy_j: a.has_energy.then_some(a.energy_j),
                    avg_power_w: (!power.is_empty()).then(|| power.iter().sum()),
                    avg_util_pct: (a.util_covered_ns > 0)
                        .then(|| a.util_integral / a.util_covered_ns as f64),
                    verdict: best.map(|b| b.0),
                    verdicts: VerdictCounts {
                        compute,
                        waiting,
                        mixed,
                        none,
                    },
                    spans_without_gpu: a.without_gpu,
                    non_finite_power_readings: a.non_finite_power,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            let ea = a.gpu_energy_j.unwrap_or(f64::NEG_INFINITY);
            let eb = b.gpu_energy_j.unwrap_or(f64::NEG_INFINITY);
            eb.total_cmp(&ea)
                .then(a.category.cmp(&b.category))
                .then_with(|| natural_cmp(&a.name, &b.name))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_numbers_group_and_sort_numerically() {
        let mut buf = Vec::new();
        assert_eq!(
            grouped_name(b"ProfilerStep#12", &mut buf),
            Some(&b"ProfilerStep#*"[..])
        );
        assert_eq!(grouped_name(b"a#b#3", &mut buf), Some(&b"a#b#*"[..]));
        assert_eq!(grouped_name(b"ProfilerStep#", &mut buf), None);
        assert_eq!(grouped_name(b"step#3a", &mut buf), None);
        assert_eq!(grouped_name(b"train", &mut buf), None);
        let mut names = ["s#10", "s#2", "s#1", "t", "s#02x", "s#2x", "s10", "s9"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            ["s#1", "s#2", "s#02x", "s#2x", "s#10", "s9", "s10", "t"]
        );
    }
}
