//! A `.json.gz` on N scan threads: the input's reader thread inflates (zlib-rs, as on every
//! route) into a bounded ring of decoded chunks of [`SEGMENT_BYTES`]; a splitting thread cuts
//! them into segments at guessed event boundaries, as the plan of a plain file does, and hands
//! segment `k` to scan thread `k mod N` and every segment to the summary; the scan threads, the
//! summary's checks and its fallback are those of a plain file ([`super::scan_segments`]), over
//! the chunks in memory instead of positioned reads.
//!
//! One inflater is the ceiling: it decodes faster than one scan thread scans (BENCHMARKS.md,
//! "Threads"), so two scan threads or more keep up with it, while on the one-inflater routes
//! (`super::super::pipeline`) the one scan thread is the limit. With three busy threads or more
//! on two cores the extra hand-overs cost more than they give, so the route is taken only for
//! [`MIN_THREADS`] or more (the default's threads are the available parallelism).
//!
//! Memory: the ring holds [`ring_chunks`]`(N)` = `2N + 4` chunks of 1 MiB (the reader waits for
//! a free one; a chunk goes back once every segment holding part of it is scanned and checked),
//! plus the scan threads' batch rings as for a plain file: ~19 MiB at 3 threads, ~32 MiB at 8,
//! ~58 MiB at 16. A segment spans at most [`MAX_SEGMENT_CHUNKS`] chunks: where none of them
//! holds a guess it ends at a chunk's end, and the next one is read by the summary alone.
//!
//! Everything the inflater reports comes after the segments it decoded: a cut stream (its
//! truncation warning and offset), trailing garbage, a corrupt member's error. So the summary
//! meets a scan error before it, as one thread would, and the result is the one-thread route's,
//! byte for byte. The join's restart points are kept by the reader thread
//! ([`crate::input::InputFile::read_indexed_with`]) on this route as on the others.
use std::cell::Cell;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread;

use flinch_core::gzip::{GzError, is_gzip};
use flinch_core::json::EventScanner;
use flinch_core::trace_job::TraceJob;

use super::{
    PROBE_BYTES, SEGMENT_BYTES, Segment, SegmentBytes, end_read, guess_boundary, read_full_at,
    scan_chunk, scan_segments,
};
use crate::input::{Input, InputError, InputFile, InputOptions, SharedChunk};

/// The fewest scan threads this route takes; fewer take the one-inflater routes.
pub const MIN_THREADS: usize = 3;
/// Smaller `.gz` files take the one-inflater routes (a few MiB of trace gain little, and the
/// rings would be most of the memory).
pub const MIN_FILE_BYTES: u64 = 2 << 20;
/// The most chunks one segment spans.
pub const MAX_SEGMENT_CHUNKS: usize = 4;

/// Decoded chunks in the ring for `threads` scan threads: one being scanned and one waiting per
/// thread, and slack for the summary's checks and a segment spanning several chunks.
pub fn ring_chunks(threads: usize) -> usize {
    2 * threads + MAX_SEGMENT_CHUNKS
}

/// The input options of this route when `input` is a regular `.gz` file of [`MIN_FILE_BYTES`]
/// or more, read by `threads` ([`MIN_THREADS`] or more) scan threads; `None` otherwise.
pub fn input_options(input: &InputFile, threads: usize) -> Option<InputOptions> {
    if threads < MIN_THREADS {
        return None;
    }
    let (file, size) = input.seekable()?;
    if size < MIN_FILE_BYTES {
        return None;
    }
    let mut head = [0u8; 2];
    let n = read_full_at(&file, &mut head, 0).ok()?;
    is_gzip(&head[..n]).then(|| options(threads, SEGMENT_BYTES as usize))
}

/// The ring of `threads` scan threads with segments of about `segment_bytes`.
pub fn options(threads: usize, segment_bytes: usize) -> InputOptions {
    InputOptions {
        buffers: ring_chunks(threads),
        buffer_bytes: segment_bytes,
    }
}

/// The first read of `job`'s trace from the inflating `input` (opened with [`input_options`])
/// on `threads` scan threads; `progress` gets the compressed bytes read and the file's size.
///
/// # Errors
/// A read or gzip error, or malformed JSON outside events: the message the one-thread route
/// gives for the same file.
pub fn first_read(
    input: Input,
    threads: usize,
    job: &mut TraceJob,
    progress: impl FnMut(u64, u64),
) -> Result<(), String> {
    first_read_counting(input, threads, job, progress).0
}

/// Parts of decoded chunks, in order.
type Pieces = Vec<(Arc<SharedChunk>, Range<usize>)>;

impl SegmentBytes for Pieces {
    const DECOMPRESSED: bool = true;

    fn scan(
        &self,
        _start: u64,
        _next: Option<u64>,
        scanner: &mut EventScanner,
        _buf: &mut Vec<u8>,
        mut sink: impl FnMut(&EventScanner) -> bool,
    ) -> Result<(), String> {
        for (chunk, range) in self {
            if !scan_chunk(
                scanner,
                &chunk[range.clone()],
                &mut sink,
                Self::DECOMPRESSED,
            )? {
                break;
            }
        }
        Ok(())
    }
}

/// How the inflated stream ended, after its last segment.
enum Outcome {
    /// Complete; the input's warning (trailing garbage ignored).
    Whole(Option<String>),
    /// Cut: summarized up to where its decoded bytes end.
    Cut(GzError),
    /// A read or gzip error: the message.
    Failed(String),
}

/// What the splitting thread gives the summary.
enum Feed {
    Segment(Segment<Pieces>),
    End(Outcome),
}

/// The summary's segments, in order; the stream's outcome comes just before the last one,
/// into `outcome`. Taken by value by the summary's loop, so that segments still queued (and the
/// chunks they hold, which the reader may wait for) are dropped as soon as it stops.
struct InOrder {
    rx: Receiver<Feed>,
    outcome: Rc<Cell<Option<Outcome>>>,
}

impl Iterator for InOrder {
    type Item = Segment<Pieces>;
    fn next(&mut self) -> Option<Segment<Pieces>> {
        loop {
            match self.rx.recv().ok()? {
                Feed::Segment(s) => return Some(s),
                Feed::End(o) => self.outcome.set(Some(o)),
            }
        }
    }
}

/// [`first_read`], also returning how many segments the summary scanned itself.
fn first_read_counting(
    input: Input,
    threads: usize,
    job: &mut TraceJob,
    mut progress: impl FnMut(u64, u64),
) -> (Result<(), String>, usize) {
    let read = input.progress();
    let n = threads.clamp(1, super::MAX_THREADS);
    let (to_threads, feeds): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
    let (to_summary, rx) = channel();
    thread::scope(|scope| {
        let spawned = thread::Builder::new()
            .name("flinch-split".into())
            .spawn_scoped(scope, move || split(input, &to_threads, &to_summary));
        if let Err(e) = spawned {
            return (Err(format!("cannot start the splitting thread: {e}")), 0);
        }
        let outcome = Rc::new(Cell::new(None));
        let in_order = InOrder {
            rx,
            outcome: outcome.clone(),
        };
        let feeds = feeds.into_iter().map(Receiver::into_iter).collect();
        let (collected, rescanned) = scan_segments(feeds, in_order, job, |_| {
            progress(read.bytes_read(), read.total_bytes());
        });
        let result = collected.and_then(|c| {
            match outcome.take() {
                Some(Outcome::Whole(warning)) => {
                    if let Some(w) = warning {
                        job.note_gzip_warning(&w);
                    }
                }
                Some(Outcome::Cut(cut)) => job.note_cut_gzip(cut),
                Some(Outcome::Failed(message)) => return Err(message),
                None => return Err("the trace splitting thread stopped unexpectedly".into()),
            }
            end_read(job, c)
        });
        (result, rescanned)
    })
}

/// The splitting thread: the input's chunks cut into segments at guessed event boundaries, to
/// the scan threads (`k mod N`) and the summary; then the stream's outcome to the summary.
/// Stops when they are gone.
fn split(mut input: Input, threads: &[Sender<Segment<Pieces>>], summary: &Sender<Feed>) {
    let mut open = Segment {
        index: 0,
        start: 0,
        next: None,
        guessed: true,
        bare: false,
        bytes: Pieces::new(),
    };
    // Chunks in the open segment.
    let mut spanned = 0;
    // The document's first significant byte is `[`; `None` until it is seen.
    let mut bare: Option<bool> = None;
    // Decoded bytes before the chunk at hand.
    let mut at = 0u64;
    let outcome = loop {
        let chunk = match input.next_shared() {
            Ok(Some(c)) => Arc::new(c),
            Ok(None) => break Outcome::Whole(input.warning().map(str::to_string)),
            Err(InputError { cut: Some(cut), .. }) => break Outcome::Cut(cut),
            Err(e) => break Outcome::Failed(e.message),
        };
        let len = chunk.len();
        if bare.is_none() {
            // As the scanner does: whitespace and a UTF-8 byte-order mark skipped.
            bare = chunk
                .iter()
                .find(|&&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
                .map(|&b| b == b'[');
        }
        // Where the open segment ends in this chunk, and whether there is a guess there.
        let guess = bare.and_then(|_| guess_boundary(&chunk[..len.min(PROBE_BYTES)]));
        let cut = if open.bytes.is_empty() {
            None
        } else if let Some(j) = guess {
            Some((j, true))
        } else if spanned >= MAX_SEGMENT_CHUNKS {
            Some((0, false))
        } else {
            None
        };
        match cut {
            Some((j, guessed)) => {
                if j > 0 {
                    open.bytes.push((chunk.clone(), 0..j));
                }
                let next = at + j as u64;
                let following = Segment {
                    index: open.index + 1,
                    start: next,
                    next: None,
                    guessed,
                    bare: bare.unwrap_or(false),
                    bytes: vec![(chunk, j..len)],
                };
                open.next = Some(next);
                if !dispatch(std::mem::replace(&mut open, following), threads, summary) {
                    return;
                }
                spanned = 1;
            }
            None => {
                open.bytes.push((chunk, 0..len));
                spanned += 1;
            }
        }
        at += len as u64;
    };
    // The outcome first: the summary has it when it reaches the last segment.
    if summary.send(Feed::End(outcome)).is_ok() {
        dispatch(open, threads, summary);
    }
}

/// Segment `k` to scan thread `k mod N` and to the summary; false when either is gone.
fn dispatch(
    seg: Segment<Pieces>,
    threads: &[Sender<Segment<Pieces>>],
    summary: &Sender<Feed>,
) -> bool {
    let copy = Segment {
        bytes: seg.bytes.clone(),
        ..seg
    };
    threads[seg.index % threads.len()].send(copy).is_ok()
        && summary.send(Feed::Segment(seg)).is_ok()
}

#[cfg(test)]
mod tests;
