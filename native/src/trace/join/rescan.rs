//! The join's second pass over only the byte ranges that matter
//! ([`flinch_core::join::FirstPassResult::plan_second_pass`]): each range whose host events
//! meet a listed pause is scanned again from where the first pass said a scanner can start
//! (the document's start, an element boundary it verified, or right after an event it read);
//! the kept annotation spans of the others are replayed. A plain file is read with positioned
//! reads, only the ranges scanned; a `.gz` file is inflated from the restart point before each
//! range that the first pass kept (`crate::input::checkpoints`, docs/gzip-restart.md), or from
//! its start when it kept none; only the ranges scanned are copied and scanned. With two cores
//! or more, a second thread inflates every other range of a `.gz` ahead of the scan (each from
//! its own restart point), so that the inflating is shared by two cores. A FIFO or pipe is read
//! from its spool, the copy its first pass wrote (`crate::input`).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use flinch_core::Limits;
use flinch_core::gzip::is_gzip;
use flinch_core::join::{KeptAnnotations, Resume, SecondPassStep};
use flinch_core::json::{ElementBoundary, Event, EventScanner, Scan};

use crate::input::checkpoints::GzRanges;
use crate::input::{Input, InputFile};

/// Bytes per read (and per scanner call).
const READ_BYTES: usize = 1 << 20;
/// A range inflated ahead is held whole in memory: longer ones are left to the scan's thread.
/// At most three are held at once (one being filled, one waiting, one being scanned).
const AHEAD_MAX_BYTES: u64 = 4 << 20;

/// Decoded bytes of one range, inflated ahead.
struct Window {
    at: u64,
    bytes: Vec<u8>,
}

/// Why the planned pass could not run: the caller reads the whole trace instead.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fallback {
    /// After the event that ends at this offset comes no `,` (a second events array, say): no
    /// scanner can start there.
    NotResumable(u64),
}

/// The trace's bytes.
enum Source {
    File(Arc<File>),
    /// A `.gz` file, inflated from restart points.
    Gz(Box<GzRanges>),
    /// A stream read forward (a second pass without positioned reads): `pending` holds decoded
    /// bytes from `pending_at`, `pos` is the decoded offset past the last chunk taken from
    /// `input`.
    Stream {
        input: Box<Input>,
        pos: u64,
        pending: Vec<u8>,
        pending_at: u64,
    },
}

impl Source {
    /// The trace the first pass read, through the same open input.
    fn open(input: &InputFile) -> Result<Source, String> {
        if let Some((file, _)) = input.seekable() {
            let mut head = [0u8; 2];
            let n = file.read_at(&mut head, 0).unwrap_or(0);
            if is_gzip(&head[..n]) {
                return Ok(Source::Gz(Box::new(GzRanges::over(file))));
            }
            return Ok(Source::File(file));
        }
        Ok(Source::Stream {
            input: Box::new(input.read()?),
            pos: 0,
            pending: Vec::new(),
            pending_at: 0,
        })
    }

    /// Reads from decoded offset `at` into `buf`: the bytes read, 0 at the end (or where a cut
    /// `.gz` stops: the join uses what was read, as the summary does).
    fn read(&mut self, at: u64, buf: &mut [u8]) -> Result<usize, String> {
        match self {
            Source::File(f) => {
                let mut n = 0;
                while n < buf.len() {
                    match f.read_at(&mut buf[n..], at + n as u64) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(format!("join: read error at byte {at}: {e}")),
                    }
                }
                Ok(n)
            }
            Source::Gz(g) => g.read(at, buf).map_err(|e| format!("join: {e}")),
            Source::Stream {
                input,
                pos,
                pending,
                pending_at,
            } => loop {
                let end = *pending_at + pending.len() as u64;
                if at >= *pending_at && at < end {
                    let from = (at - *pending_at) as usize;
                    let n = buf.len().min(pending.len() - from);
                    buf[..n].copy_from_slice(&pending[from..from + n]);
                    return Ok(n);
                }
                if at < *pending_at {
                    return Err(format!("join: cannot read byte {at} of the stream again"));
                }
                let chunk = match input.next_chunk() {
                    Ok(Some(c)) => c,
                    Ok(None) | Err(_) => return Ok(0),
                };
                let start = *pos;
                *pos += chunk.len() as u64;
                pending.clear();
                *pending_at = (*pos).min(at.max(start));
                if *pos > at {
                    pending.extend_from_slice(&chunk[(at - start) as usize..]);
                }
            },
        }
    }
}

/// The source, seen through the range inflated ahead for the current step, if any.
struct Reader {
    src: Source,
    win: Option<Window>,
}

impl Reader {
    fn read(&mut self, at: u64, buf: &mut [u8]) -> Result<usize, String> {
        if let Some(w) = &self.win
            && at >= w.at
            && at < w.at + w.bytes.len() as u64
        {
            let from = (at - w.at) as usize;
            let n = buf.len().min(w.bytes.len() - from);
            buf[..n].copy_from_slice(&w.bytes[from..from + n]);
            return Ok(n);
        }
        self.src.read(at, buf)
    }

    /// Whether the document is a bare array (its first byte past whitespace and a byte-order
    /// mark is `[`), as the scanner that read it from the start found.
    fn bare(&mut self) -> Result<bool, String> {
        let mut head = [0u8; 64];
        let n = self.read(0, &mut head)?;
        Ok(head[..n]
            .iter()
            .find(|&&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
            == Some(&b'['))
    }

    /// The offset just past the `,` that follows the event ending at `at` (whitespace around
    /// it allowed); `None` when something else comes.
    fn past_comma(&mut self, mut at: u64) -> Result<Option<u64>, String> {
        let mut b = [0u8; 64];
        loop {
            let n = self.read(at, &mut b)?;
            if n == 0 {
                return Ok(None);
            }
            match b[..n]
                .iter()
                .position(|&c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
            {
                Some(i) if b[i] == b',' => return Ok(Some(at + i as u64 + 1)),
                Some(_) => return Ok(None),
                None => at += n as u64,
            }
        }
    }
}

/// Runs `steps` over the trace read through `input`, giving `f` every event of the ranges scanned and the
/// replayed spans of `kept`, in trace order. `Ok(Err(_))`: a range could not be resumed, and
/// `f` may have had events already: the caller starts over with a full read.
pub(super) fn run(
    input: &InputFile,
    steps: &[SecondPassStep],
    kept: Option<&KeptAnnotations>,
    mut f: impl FnMut(&Event<'_>),
) -> Result<Result<(), Fallback>, String> {
    let mut src = Reader {
        src: Source::open(input)?,
        win: None,
    };
    let bare = src.bare()?;
    // Every other scanned range, for a second thread to inflate ahead.
    let scans: Vec<(u64, u64)> = steps
        .iter()
        .filter_map(|s| match *s {
            SecondPassStep::Scan { resume, end } => Some((resume_offset(resume), end)),
            SecondPassStep::Replay(_) => None,
        })
        .collect();
    let ahead = match &src.src {
        Source::Gz(g) if scans.len() >= 2 && cores() >= 2 => Some(g.another()),
        _ => None,
    };
    std::thread::scope(|scope| {
        let rx = match ahead {
            Some(g) => {
                let odd: Vec<(u64, u64)> = scans.iter().copied().skip(1).step_by(2).collect();
                let (tx, rx) = sync_channel(1);
                std::thread::Builder::new()
                    .name("flinch-inflate-ahead".into())
                    .spawn_scoped(scope, move || inflate_ahead(g, &odd, &tx))
                    .ok()
                    .map(|_| rx)
            }
            None => None,
        };
        scan_steps(&mut src, bare, steps, kept, rx.as_ref(), &mut f)
    })
}

/// Where a step's bytes start.
fn resume_offset(resume: Resume) -> u64 {
    match resume {
        Resume::Start => 0,
        Resume::Boundary(o) | Resume::AfterEvent(o) => o,
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The second thread: inflates `ranges` in order, each whole (`None` for one longer than
/// [`AHEAD_MAX_BYTES`] or that fails: the scan's thread reads it, and reports any error).
fn inflate_ahead(mut g: GzRanges, ranges: &[(u64, u64)], tx: &SyncSender<Option<Window>>) {
    for &(lo, end) in ranges {
        let len = end.saturating_sub(lo);
        let win = (len <= AHEAD_MAX_BYTES).then(|| {
            let mut bytes = vec![0u8; len as usize];
            let mut n = 0;
            while n < bytes.len() {
                match g.read(lo + n as u64, &mut bytes[n..]) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => n += k,
                }
            }
            bytes.truncate(n);
            Window { at: lo, bytes }
        });
        if tx.send(win).is_err() {
            return;
        }
    }
}

/// The steps, in order; odd-numbered scans take their bytes from `ahead` when it has them.
fn scan_steps(
    src: &mut Reader,
    bare: bool,
    steps: &[SecondPassStep],
    kept: Option<&KeptAnnotations>,
    ahead: Option<&Receiver<Option<Window>>>,
    f: &mut impl FnMut(&Event<'_>),
) -> Result<Result<(), Fallback>, String> {
    let mut buf = vec![0u8; READ_BYTES];
    let mut scan_no = 0usize;
    for step in steps {
        match step {
            SecondPassStep::Replay(r) => {
                if let Some(k) = kept {
                    k.replay_range(r.clone(), &mut *f);
                }
            }
            &SecondPassStep::Scan { resume, end } => {
                src.win = match ahead {
                    Some(rx) if scan_no % 2 == 1 => rx.recv().ok().flatten(),
                    _ => None,
                };
                scan_no += 1;
                let (mut scanner, mut at) = match resume {
                    Resume::Start => (EventScanner::new(Limits::NATIVE), 0),
                    Resume::Boundary(o) => (resume_at(o, bare), o),
                    Resume::AfterEvent(o) => match src.past_comma(o)? {
                        Some(p) => (resume_at(p, bare), p),
                        None => return Ok(Err(Fallback::NotResumable(o))),
                    },
                };
                while at < end {
                    let want = buf.len().min((end - at) as usize);
                    let n = src.read(at, &mut buf[..want])?;
                    if n == 0 {
                        break;
                    }
                    let chunk = &buf[..n];
                    let mut pos = 0;
                    loop {
                        let (what, k) = scanner
                            .scan(&chunk[pos..])
                            .map_err(|e| format!("join: {e}"))?;
                        pos += k;
                        match what {
                            Scan::Event => f(&scanner.event()),
                            Scan::NeedsInput => break,
                        }
                    }
                    at += n as u64;
                }
            }
        }
    }
    Ok(Ok(()))
}

fn resume_at(offset: u64, bare: bool) -> EventScanner {
    EventScanner::resume_at(Limits::NATIVE, ElementBoundary { offset, bare })
}
