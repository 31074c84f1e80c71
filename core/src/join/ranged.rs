//! The second read of the trace over the planned byte ranges only (see
//! [`FirstPassResult::plan_second_pass`](super::FirstPassResult::plan_second_pass)): the bytes
//! of each range are scanned, those between decoded and skipped, and the copied annotation spans
//! of the other ranges replayed, so the second pass gets the events a full read would give it.
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::trace_join::scan_all;
use super::{GapsFound, JoinError, JoinPass, KeptAnnotations, Resume, SecondPassStep};
use crate::json::{ElementBoundary, EventScanner};
use crate::summary::TraceSummaryResult;

/// The second read of the trace when it scans only some byte ranges: the decoded bytes arrive
/// in order, and [`Ranged::feed`] scans those of the current step's range and skips the others.
pub(super) struct Ranged {
    pub(super) pass: JoinPass<'static>,
    pub(super) summary: Box<TraceSummaryResult>,
    pub(super) steps: Vec<SecondPassStep>,
    /// The step under way.
    pub(super) next: usize,
    pub(super) kept: Option<KeptAnnotations>,
    /// The decoded offset of the next byte to arrive.
    pub(super) at: u64,
    /// Whether the document is a bare array (as the first read found).
    pub(super) bare: Option<bool>,
    /// The trace is not gzip: the caller may give only the [`TraceJoin::wanted_ranges`](super::TraceJoin::wanted_ranges).
    pub(super) plain: bool,
    pub(super) cur: Cursor,
    /// What a full read needs if a range cannot be resumed.
    pub(super) fallback: (GapsFound, Option<i64>),
    pub(super) limits: crate::Limits,
    /// A range could not be resumed: the rest of this read is ignored.
    pub(super) failed: bool,
}

/// Where [`Ranged`] is within its step.
pub(super) enum Cursor {
    /// Step `next` has not begun.
    Idle,
    /// Looking for the `,` after the event that ends at `from`.
    Comma { from: u64 },
    /// Scanning from `start` to `end`.
    Scanning {
        scanner: Box<EventScanner>,
        start: u64,
        end: u64,
    },
}

impl Ranged {
    /// Runs the steps that need no byte (replays) and starts the next scan, until one waits
    /// for bytes or all are done.
    pub(super) fn advance(&mut self) {
        while let Cursor::Idle = self.cur {
            let Some(step) = self.steps.get(self.next) else {
                return;
            };
            match step {
                SecondPassStep::Replay(r) => {
                    if let Some(k) = &self.kept {
                        let pass = &mut self.pass;
                        k.replay_range(r.clone(), |e| pass.add(e));
                    }
                    self.next += 1;
                }
                &SecondPassStep::Scan { resume, end } => {
                    self.cur = match resume {
                        Resume::Start => Cursor::Scanning {
                            scanner: Box::new(EventScanner::new(self.limits)),
                            start: 0,
                            end,
                        },
                        Resume::Boundary(o) => Cursor::Scanning {
                            scanner: Box::new(self.resume_at(o)),
                            start: o,
                            end,
                        },
                        Resume::AfterEvent(o) => Cursor::Comma { from: o },
                    };
                }
            }
        }
    }

    fn resume_at(&self, offset: u64) -> EventScanner {
        EventScanner::resume_at(
            self.limits,
            ElementBoundary {
                offset,
                bare: self.bare.unwrap_or(false),
            },
        )
    }

    /// The next decoded bytes of the trace.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Result<(), JoinError> {
        let base = self.at;
        self.at += bytes.len() as u64;
        if self.failed {
            return Ok(());
        }
        // `i`: the index in `bytes` of the next byte to look at.
        let mut i = 0usize;
        loop {
            self.advance();
            let here = base + i as u64;
            match &mut self.cur {
                Cursor::Idle => return Ok(()),
                Cursor::Comma { from } => {
                    if here > *from {
                        return Err(missing(*from));
                    }
                    let skip = (*from - here).min((bytes.len() - i) as u64);
                    i += skip as usize;
                    let Some(k) = bytes[i..]
                        .iter()
                        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
                    else {
                        // Whitespace to the end of these bytes: look on from the next.
                        *from = (*from).max(base + bytes.len() as u64);
                        return Ok(());
                    };
                    i += k;
                    if bytes[i] != b',' {
                        self.failed = true;
                        return Ok(());
                    }
                    i += 1;
                    let start = base + i as u64;
                    let end = match self.steps.get(self.next) {
                        Some(&SecondPassStep::Scan { end, .. }) => end,
                        _ => unreachable!("a comma is looked for only for a scan step"),
                    };
                    self.cur = Cursor::Scanning {
                        scanner: Box::new(self.resume_at(start)),
                        start,
                        end,
                    };
                }
                Cursor::Scanning {
                    scanner,
                    start,
                    end,
                } => {
                    let skip = start.saturating_sub(here).min((bytes.len() - i) as u64);
                    i += skip as usize;
                    let here = base + i as u64;
                    if here < *end && here >= *start && scanner.bytes_consumed() != here {
                        return Err(missing(scanner.bytes_consumed()));
                    }
                    let take = end.saturating_sub(here).min((bytes.len() - i) as u64) as usize;
                    let pass = &mut self.pass;
                    scan_all(scanner, &bytes[i..i + take], |e| pass.add(e))?;
                    i += take;
                    if base + (i as u64) < *end {
                        return Ok(());
                    }
                    self.cur = Cursor::Idle;
                    self.next += 1;
                }
            }
        }
    }

    /// The byte ranges of the trace this read scans (sorted, disjoint): all a caller of a plain
    /// file needs to give, each after [`TraceJoin::seek`](super::TraceJoin::seek) to its start.
    pub(super) fn wanted(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for step in &self.steps {
            if let &SecondPassStep::Scan { resume, end } = step {
                let start = match resume {
                    Resume::Start => 0,
                    Resume::Boundary(o) | Resume::AfterEvent(o) => o,
                };
                match out.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(end),
                    _ => out.push((start, end)),
                }
            }
        }
        out
    }

    /// The end of the read: the steps past the bytes that came (replays only; a range cut short
    /// ends where the bytes did, as a full read would). `false`: a range could not be resumed.
    pub(super) fn end(&mut self) -> bool {
        loop {
            match self.cur {
                // As native: no `,` where a range resumes, here the end of the input.
                Cursor::Comma { .. } => self.failed = true,
                Cursor::Scanning { .. } => {
                    self.cur = Cursor::Idle;
                    self.next += 1;
                }
                Cursor::Idle => {}
            }
            if self.failed {
                return false;
            }
            self.advance();
            if matches!(self.cur, Cursor::Idle) {
                return true;
            }
        }
    }
}

/// The error for a range whose bytes were not given (a caller that skipped too much).
fn missing(at_byte: u64) -> JoinError {
    JoinError::BytesNotGiven { at_byte }
}
