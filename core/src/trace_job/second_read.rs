//! The join's second read of the trace: over the planned byte ranges only ([`Ranged`]), or
//! whole ([`Whole`]). Either way the join's pass gets the events a whole second read would
//! give it, in the same order.
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{Copier, CopyStep, TraceJobError};
use crate::Limits;
use crate::join::{FirstPassResult, JoinError, JoinPass, Resume, SecondPassStep};
use crate::json::{ElementBoundary, Event, EventScanner, Scan};
use crate::summary::TraceSummaryResult;

fn scan_all(
    sc: &mut EventScanner,
    chunk: &[u8],
    mut f: impl FnMut(&Event<'_>),
) -> Result<(), JoinError> {
    let mut pos = 0;
    loop {
        let (what, n) = sc.scan(&chunk[pos..]).map_err(JoinError::Scan)?;
        pos += n;
        match what {
            Scan::Event => f(&sc.event()),
            Scan::NeedsInput => return Ok(()),
        }
    }
}

/// The byte ranges the steps scan (sorted, disjoint): all a driver needs to give, each after a
/// seek to its start.
pub(super) fn wanted(steps: &[SecondPassStep]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for step in steps {
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

/// A whole second read.
pub(super) struct Whole {
    scanner: Box<EventScanner>,
    pass: JoinPass<'static>,
    summary: TraceSummaryResult,
}

impl Whole {
    pub(super) fn new(
        pass: JoinPass<'static>,
        summary: TraceSummaryResult,
        limits: Limits,
    ) -> Whole {
        Whole {
            scanner: Box::new(EventScanner::new(limits)),
            pass,
            summary,
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) -> Result<(), JoinError> {
        let pass = &mut self.pass;
        scan_all(&mut self.scanner, bytes, |e| pass.add(e))
    }

    /// [`feed`](Self::feed), giving `copy` the bytes and each event's end.
    pub(super) fn feed_copying(
        &mut self,
        chunk: &[u8],
        copy: &mut Copier<'_>,
    ) -> Result<(), TraceJobError> {
        let mut pos = 0;
        loop {
            let (what, n) = self.scanner.scan(&chunk[pos..]).map_err(JoinError::Scan)?;
            copy(CopyStep::Bytes(&chunk[pos..pos + n])).map_err(TraceJobError::Copy)?;
            pos += n;
            match what {
                Scan::Event => {
                    self.pass.add(&self.scanner.event());
                    copy(CopyStep::EventEnd).map_err(TraceJobError::Copy)?;
                }
                Scan::NeedsInput => return Ok(()),
            }
        }
    }

    pub(super) fn end(
        mut self,
        copy: Option<&mut Copier<'_>>,
    ) -> Result<(TraceSummaryResult, JoinPass<'static>), TraceJobError> {
        let end = self.scanner.finish();
        if let Some(copy) = copy {
            copy(CopyStep::End(&end)).map_err(TraceJobError::Copy)?;
        }
        Ok((self.summary, self.pass))
    }
}

/// The second read of the trace when it scans only some byte ranges: the decoded bytes arrive
/// in order (all of them, or the wanted ranges, each after a seek), and [`Ranged::feed`] scans
/// those of the current step's range and skips the others.
pub(super) struct Ranged {
    pass: JoinPass<'static>,
    summary: TraceSummaryResult,
    steps: Vec<SecondPassStep>,
    wanted: Vec<(u64, u64)>,
    /// The step under way.
    next: usize,
    /// The first read's result: its kept annotation spans are replayed, and a full read
    /// starts over from it if a range cannot be resumed.
    first: FirstPassResult,
    /// The decoded offset of the next byte to arrive.
    at: u64,
    /// Whether the document is a bare array (as the first read found).
    bare: bool,
    cur: Cursor,
    limits: Limits,
    /// A range could not be resumed: the rest of this read is ignored.
    failed: bool,
}

/// How a [`Ranged`] read ended.
pub(super) enum RangedEnd {
    /// With the summary and the pass.
    Done(TraceSummaryResult, Box<JoinPass<'static>>),
    /// A range could not be resumed: a whole read starts over from the first read's result.
    Reread(TraceSummaryResult, Box<FirstPassResult>),
}

/// Where [`Ranged`] is within its step.
enum Cursor {
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
    pub(super) fn new(
        pass: JoinPass<'static>,
        summary: TraceSummaryResult,
        steps: Vec<SecondPassStep>,
        wanted: Vec<(u64, u64)>,
        first: FirstPassResult,
        bare: bool,
        limits: Limits,
    ) -> Ranged {
        Ranged {
            pass,
            summary,
            steps,
            wanted,
            next: 0,
            first,
            at: 0,
            bare,
            cur: Cursor::Idle,
            limits,
            failed: false,
        }
    }

    pub(super) fn wanted_ranges(&self) -> &[(u64, u64)] {
        &self.wanted
    }

    /// What the first read found.
    pub(super) fn first(&self) -> &FirstPassResult {
        &self.first
    }

    /// The decoded offset of the next byte to arrive.
    pub(super) fn at(&self) -> u64 {
        self.at
    }

    /// The next bytes are those from `offset` on (not before [`at`](Self::at)).
    pub(super) fn seek(&mut self, offset: u64) {
        self.at = offset;
    }

    /// Runs the steps that need no byte (replays) and starts the next scan, until one waits
    /// for bytes or all are done.
    fn advance(&mut self) {
        while let Cursor::Idle = self.cur {
            let Some(step) = self.steps.get(self.next) else {
                return;
            };
            match step {
                SecondPassStep::Replay(r) => {
                    if let Some(k) = &self.first.annotations {
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
                bare: self.bare,
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

    /// The end of the read: the steps past the bytes that came (replays only; a range cut short
    /// ends where the bytes did, as a full read would). `false`: a range could not be resumed.
    fn run_out(&mut self) -> bool {
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

    /// The end of the read (see [`RangedEnd`]).
    pub(super) fn end(mut self) -> RangedEnd {
        if self.run_out() {
            RangedEnd::Done(self.summary, Box::new(self.pass))
        } else {
            RangedEnd::Reread(self.summary, Box::new(self.first))
        }
    }
}

/// The error for a range whose bytes were not given (a driver that skipped too much).
fn missing(at_byte: u64) -> JoinError {
    JoinError::BytesNotGiven { at_byte }
}
