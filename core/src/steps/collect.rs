//! The steps' first pass: rides on the trace job's scan, events in file order (not time
//! order). It keeps the steps (bounded by `Limits::max_steps`), each class's busy time as a
//! union of disjoint intervals (`Limits::max_step_intervals` live per class: past it, with a
//! spill, the older half goes out as a sorted run and the union stays exact, as the summary's
//! busy unions do; without one, the union coalesces its smallest gaps and states the bound),
//! and the host ops' spans for the outliers' top ops (bounded by `Limits::max_step_host_ops`).
//! Nothing is allocated per event once the tables have grown.
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::class::{CLASSES, Part, class_of};
use super::pattern::StepPattern;
use crate::Limits;
use crate::intervals::IntervalUnion;
use crate::join::gaps::span_ns;
use crate::json::{Event, NumField};
use crate::summary::IntervalSpill;
use crate::summary::busy::BusyUnion;
use crate::summary::interner::Interner;

const USER_ANNOTATION: &[u8] = b"user_annotation";

/// What an event is to the steps, by its (category, name): looked up once per pair by a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Nothing.
    None,
    /// A step (`user_annotation` matching the pattern).
    Step,
    /// Of a class; `host`: the name's id among host ops (`cpu_op`), `u32::MAX` for none or
    /// when the name table is full (the op then counts as `"(other)"`).
    Class(Part, u32),
}

/// One step as found: its window `[ts_ns, ts_ns + dur_ns)` and its name in the arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawStep {
    pub(crate) ts_ns: i64,
    pub(crate) end_ns: i64,
    pub(crate) name_at: u32,
    pub(crate) name_len: u32,
}

/// One host op's span, for the outliers' top ops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostSpan {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
    pub(crate) name: u32,
}

/// One class's union: in memory alone (bounded: coalescing past its cap), or spilling.
pub(crate) enum ClassUnion {
    Memory(IntervalUnion),
    Spilling(BusyUnion),
}

/// The steps' first pass (see the module docs).
pub struct StepCollector {
    pattern: StepPattern,
    pub(crate) steps: Vec<RawStep>,
    pub(crate) names: Vec<u8>,
    max_steps: usize,
    max_name_bytes: usize,
    pub(crate) dropped_steps: u64,
    pub(crate) unions: [ClassUnion; CLASSES],
    budget: usize,
    pub(crate) spill: Option<Box<dyn IntervalSpill>>,
    pub(crate) host_names: Interner,
    pub(crate) host: Vec<HostSpan>,
    max_host: usize,
    pub(crate) dropped_host: u64,
    pub(crate) host_names_folded: bool,
}

impl StepCollector {
    /// Steps named as `pattern` says, within `limits`.
    pub fn new(pattern: StepPattern, limits: &Limits) -> StepCollector {
        let names_cap = if limits.max_ops == usize::MAX {
            usize::MAX
        } else {
            limits.max_ops.min(1 << 14)
        };
        StepCollector {
            pattern,
            steps: Vec::new(),
            names: Vec::new(),
            max_steps: limits.max_steps,
            max_name_bytes: limits.max_name_bytes,
            dropped_steps: 0,
            unions: core::array::from_fn(|_| {
                ClassUnion::Memory(IntervalUnion::with_capacity_limit(
                    limits.max_step_intervals,
                ))
            }),
            budget: limits.max_step_intervals,
            spill: None,
            host_names: Interner::with_byte_cap(names_cap, limits.max_name_bytes.min(1 << 22)),
            host: Vec::new(),
            max_host: limits.max_step_host_ops,
            dropped_host: 0,
            host_names_folded: false,
        }
    }

    /// Where the classes' unions put the intervals past their budget (native: a temporary
    /// file), so that the breakdown stays exact. Before the first event.
    pub fn set_spill(&mut self, spill: Box<dyn IntervalSpill>) {
        if self.budget == usize::MAX {
            return;
        }
        self.unions = core::array::from_fn(|_| ClassUnion::Spilling(BusyUnion::new(self.budget)));
        self.spill = Some(spill);
    }

    /// The pattern.
    pub fn pattern(&self) -> &StepPattern {
        &self.pattern
    }

    /// What an event of (`cat`, `name`) is to the steps (interning a host op's name).
    pub fn kind(&mut self, cat: Option<&[u8]>, name: Option<&[u8]>) -> Kind {
        let (cat, name) = (cat.unwrap_or(b""), name.unwrap_or(b""));
        if cat == USER_ANNOTATION && self.pattern.matches(name) {
            return Kind::Step;
        }
        match class_of(cat, name) {
            None => Kind::None,
            Some(p) => {
                let host = if p.is_cpu_op() {
                    self.host_names.get_or_insert(name).unwrap_or_else(|| {
                        self.host_names_folded = true;
                        u32::MAX
                    })
                } else {
                    u32::MAX
                };
                Kind::Class(p, host)
            }
        }
    }

    /// One event of the scan.
    #[inline]
    pub fn add(&mut self, e: &Event<'_>) {
        if span_ns(e).is_none() {
            return;
        }
        let kind = self.kind(e.cat, e.name);
        self.add_kind(kind, e.name, e.ts_ns, e.dur_ns);
    }

    /// One complete (`X`) event whose kind is known.
    #[inline]
    pub fn add_kind(&mut self, kind: Kind, name: Option<&[u8]>, ts: NumField, dur: NumField) {
        // As the join's spans (`join::gaps::span_ns`): a non-negative `dur`, the end saturated.
        if let (NumField::Ns(start_ns), NumField::Ns(dur_ns)) = (ts, dur) {
            self.add_span(kind, name, start_ns, dur_ns);
        }
    }

    /// One complete event of `kind` at `start_ns` lasting `dur_ns` (ignored when negative).
    /// `name` is read only for a step.
    #[inline]
    pub(crate) fn add_span(&mut self, kind: Kind, name: Option<&[u8]>, start_ns: i64, dur_ns: i64) {
        if dur_ns < 0 {
            return;
        }
        let end_ns = start_ns.saturating_add(dur_ns);
        match kind {
            Kind::None => {}
            Kind::Step => self.add_step(name.unwrap_or(b""), start_ns, end_ns),
            Kind::Class(p, host) => self.add_class(p, host, start_ns, end_ns),
        }
    }

    #[inline]
    fn add_class(&mut self, p: Part, host: u32, start_ns: i64, end_ns: i64) {
        match &mut self.unions[p as usize] {
            ClassUnion::Memory(u) => u.insert(start_ns, end_ns),
            ClassUnion::Spilling(u) => {
                u.insert(start_ns, end_ns, true);
                if u.live_len() > self.budget {
                    u.retire(self.spill.as_deref_mut().map(|s| s as _));
                }
            }
        }
        if p.is_cpu_op() && end_ns > start_ns {
            if self.host.len() < self.max_host {
                self.host.push(HostSpan {
                    start_ns,
                    end_ns,
                    name: host,
                });
            } else {
                self.dropped_host += 1;
            }
        }
    }

    fn add_step(&mut self, name: &[u8], ts_ns: i64, end_ns: i64) {
        if self.steps.len() >= self.max_steps
            || self.names.len().saturating_add(name.len()) > self.max_name_bytes
        {
            self.dropped_steps += 1;
            return;
        }
        let name_at = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.steps.push(RawStep {
            ts_ns,
            end_ns,
            name_at,
            name_len: name.len() as u32,
        });
    }
}
