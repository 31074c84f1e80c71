//! Each GPU's summary of a recording (idle floor, busy threshold, mean interval), exactly as
//! [`WindowAnalyzer`](crate::window::WindowAnalyzer) gives it with no selected window and no
//! spans, without the analyzer's windows.
//!
//! A summary depends on the rows the analyzer's reorder buffer releases, in its order: a row
//! later than the buffer's horizon is left out, and the first and last power times are those
//! of the first and last released. So the rows go through the same buffer ([`GrowReorder`],
//! with the analyzer's default horizon and capacity), the marks and the RAPL-only rows of
//! GPUs past the cap too, since they hold places in it. Only a sample's GPU slot and power
//! travel through it (24 bytes, where the analyzer's item carries every field of the row).
//! `recording::tests` checks the summaries against the analyzer's on random recordings.
use alloc::vec::Vec;

use crate::Limits;
use crate::window::{
    GpuState, GpuSummary, GrowReorder, ParsedKind, ParsedRow, WindowOptions, summarize_gpu,
};

/// What the reorder buffer holds for a row.
#[derive(Clone, Copy, Debug)]
enum Item {
    /// A sample of the GPU in slot `slot`, with its power reading.
    Sample { slot: u16, power_w: Option<f64> },
    /// A kept mark, or the RAPL reading of a sample of a GPU past the cap: a place in the
    /// buffer, nothing for the summaries.
    Place,
}

/// The GPUs' summaries, row by row.
pub(super) struct IdleFloors {
    reorder: GrowReorder<Item>,
    gpus: Vec<GpuState>,
    limits: Limits,
    kept_marks: usize,
}

impl IdleFloors {
    /// With the analyzer's defaults (`WindowOptions::default()`).
    pub(super) fn new() -> IdleFloors {
        let d = WindowOptions::default();
        IdleFloors {
            reorder: GrowReorder::new(d.reorder_capacity, d.reorder_horizon_ns),
            gpus: Vec::new(),
            limits: d.limits,
            kept_marks: 0,
        }
    }

    /// One row, parsed with at least what `ParsedRow::from_row(row, true)` gives for its kind,
    /// `gpu_index`, `t_mono_ns`, `gpu_power_W` and `rapl_energy_uj`.
    #[inline]
    pub(super) fn push(&mut self, p: &ParsedRow) {
        // As `Engine::push_parsed` with no selection and no GPU filter.
        let item = match p.kind {
            ParsedKind::Other | ParsedKind::Bad => return,
            ParsedKind::Mark => {
                // `Engine::add_mark`: with no selection, a mark is kept while fewer than
                // `max_marks` are.
                if self.kept_marks >= self.limits.max_marks {
                    return;
                }
                self.kept_marks += 1;
                (0, Item::Place)
            }
            ParsedKind::Sample => match self.slot(p.gpu_index) {
                Some(slot) => (
                    1,
                    Item::Sample {
                        slot,
                        power_w: p.power_w,
                    },
                ),
                None if p.rapl_uj.is_some() => (1, Item::Place),
                None => return,
            },
        };
        let (prio, item) = item;
        if self.reorder.push(p.t_mono_ns, prio, item).is_err() {
            // Late: the analyzer counts it and leaves it out.
            return;
        }
        while let Some((t, item)) = self.reorder.pop(false) {
            self.emit(t, item);
        }
    }

    #[inline]
    fn slot(&mut self, key: Option<i64>) -> Option<u16> {
        GpuState::slot(&mut self.gpus, key, self.limits.max_gpus, 0)
    }

    #[inline]
    fn emit(&mut self, t: i64, item: Item) {
        let Item::Sample { slot, power_w } = item else {
            return;
        };
        // As `Engine::emit_sample`: non-finite readings count as samples, not as power.
        let finite = power_w.filter(|p| p.is_finite());
        let g = &mut self.gpus[slot as usize];
        g.add_reading(t, finite);
        if let Some(p) = finite {
            g.prev.power = Some((t, p));
        }
    }

    /// Releases the held rows; the summaries, in the order the GPUs first appeared.
    pub(super) fn end(mut self) -> Vec<GpuSummary> {
        while let Some((t, item)) = self.reorder.pop(true) {
            self.emit(t, item);
        }
        self.gpus.iter().map(summarize_gpu).collect()
    }
}
