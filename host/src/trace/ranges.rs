//! What a trace job needs after its first read, answered from the file system: the byte ranges
//! of the join's second read ([`flinch_core::job::Need::Ranges`]; which ranges, and what is
//! replayed between them, is the job's rule), or the whole trace again.
//!
//! A plain file is read with positioned reads, only the ranges asked for; a `.gz` file is
//! inflated from the restart point before each range that the first read kept
//! (`crate::input::checkpoints`, docs/gzip-restart.md), or from its start when it kept none,
//! and only the ranges' decoded bytes are given. With two cores or more, a second thread
//! inflates every other range of a `.gz` ahead (each from its own restart point), so that the
//! inflating is shared by two cores. A FIFO or pipe is read from its spool, the copy its first
//! read wrote (`crate::input`).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};

use flinch_core::gzip::is_gzip;
use flinch_core::job::{Job, Need};
use flinch_core::trace_job::{Copier, TraceJob};

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
}

/// Answers what `job` needs after its first read of `input` (the same open input), until it is
/// done: ranges, or the whole trace (given to `copy` too, when there is one). Returns the
/// input's error when a whole read was cut (a cut `.gz`: the job uses what was read, as the
/// summary does).
///
/// # Errors
/// A read error of the ranges, or the job's error.
pub fn answer(
    input: &InputFile,
    job: &mut TraceJob,
    mut copy: Option<&mut Copier<'_>>,
) -> Result<Option<String>, String> {
    let mut cut = None;
    loop {
        match job.need() {
            Need::Done => return Ok(cut),
            Need::Ranges(ranges) => {
                let ranges = ranges.to_vec();
                give_ranges(input, job, &ranges)?;
                job.end().map_err(|e| e.to_string())?;
            }
            Need::File(_) => {
                let copy: Option<&mut Copier<'_>> = match copy.as_mut() {
                    Some(c) => Some(&mut **c),
                    None => None,
                };
                cut = whole(input, job, copy)?;
            }
            Need::Listing(_) => return Err("a trace job lists no folder".into()),
        }
    }
}

/// The whole trace, decoded, to `job` (and `copy`); the input's error where it stopped early.
fn whole(
    file: &InputFile,
    job: &mut TraceJob,
    mut copy: Option<&mut Copier<'_>>,
) -> Result<Option<String>, String> {
    let mut input = file.read()?;
    let mut cut = None;
    loop {
        let chunk = match input.next_chunk() {
            Ok(Some(c)) => c,
            Ok(None) => break,
            // A cut .gz: the summary says so; the join uses what was read, as the summary does.
            Err(e) => {
                cut = Some(e.to_string());
                break;
            }
        };
        match copy.as_deref_mut() {
            Some(copy) => job.write_copying(chunk, copy),
            None => job.write(chunk),
        }
        .map_err(|e| e.to_string())?;
    }
    match copy {
        Some(copy) => job.end_copying(copy),
        None => job.end(),
    }
    .map_err(|e| e.to_string())?;
    Ok(cut)
}

/// Each range's decoded bytes, after a seek to its start.
fn give_ranges(input: &InputFile, job: &mut TraceJob, ranges: &[(u64, u64)]) -> Result<(), String> {
    let mut src = Reader {
        src: Source::open(input)?,
        win: None,
    };
    let ahead = match &src.src {
        Source::Gz(g) if ranges.len() >= 2 && cores() >= 2 => Some(g.another()),
        _ => None,
    };
    std::thread::scope(|scope| {
        let rx = match ahead {
            Some(g) => {
                let odd: Vec<(u64, u64)> = ranges.iter().copied().skip(1).step_by(2).collect();
                let (tx, rx) = sync_channel(1);
                std::thread::Builder::new()
                    .name("flinch-inflate-ahead".into())
                    .spawn_scoped(scope, move || inflate_ahead(g, &odd, &tx))
                    .ok()
                    .map(|_| rx)
            }
            None => None,
        };
        let mut buf = vec![0u8; READ_BYTES];
        for (k, &(lo, hi)) in ranges.iter().enumerate() {
            src.win = match &rx {
                Some(rx) if k % 2 == 1 => rx.recv().ok().flatten(),
                _ => None,
            };
            job.seek(lo).map_err(|e| e.to_string())?;
            let mut at = lo;
            while at < hi {
                let want = buf.len().min((hi - at) as usize);
                let n = src.read(at, &mut buf[..want])?;
                if n == 0 {
                    break;
                }
                job.write(&buf[..n]).map_err(|e| e.to_string())?;
                at += n as u64;
            }
        }
        Ok(())
    })
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flinch_core::Limits;
    use flinch_core::join::JoinOptions;
    use flinch_core::trace_job::{JoinSetup, RecordingSource, TraceJobOptions};

    use super::*;
    use crate::input::Passes;
    use crate::input::checkpoints::restarts_total;
    use crate::trace::{ReadOptions, first_read};

    /// Kernels 1 µs apart on one device with host ops beside them, and one 10 ms pause near
    /// the end.
    fn doc() -> Vec<u8> {
        let mut evs = Vec::new();
        let mut t_us = 1_000.0f64;
        for k in 0..12_000 {
            if k == 11_000 {
                t_us += 10_000.0;
            }
            evs.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{t_us:.3},"dur":0.5}}"#,
                k % 5
            ));
            evs.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":9,"tid":9,"ts":{:.3},"dur":0.5}}"#,
                k % 3,
                t_us + 0.25
            ));
            t_us += 1.0;
        }
        format!("{{\"traceEvents\":[\n{}\n]}}\n", evs.join(",\n")).into_bytes()
    }

    fn joined(input: &InputFile, whole: bool) -> String {
        let mut options = JoinOptions::default();
        options.gaps.min_gap_ns = 5_000_000;
        let mut job = TraceJob::new(TraceJobOptions {
            source: "s".into(),
            limits: Limits::NATIVE,
            top: 40,
            durations_out: None,
            mergeable: false,
            steps: None,
            join: Some(JoinSetup {
                whole_second_read: whole,
                ..JoinSetup::new(options, RecordingSource::None)
            }),
        });
        first_read(input, &mut job, ReadOptions::default()).unwrap();
        assert!(matches!(job.need(), Need::Ranges(_)) != whole);
        answer(input, &mut job, None).unwrap();
        job.finish().unwrap().to_json()
    }

    /// The ranges of a `.gz` second read are inflated from the first read's restart points,
    /// and give the whole second read's report.
    #[test]
    fn gzip_ranges_start_at_restart_points() {
        let dir = std::env::temp_dir().join(format!("flinch-ranges-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        e.write_all(&doc()).unwrap();
        std::fs::write(&path, e.finish().unwrap()).unwrap();
        let input = InputFile::open(&path, Passes::Several).unwrap();
        let want = joined(&input, true);
        assert!(want.contains("\"pauses\": ["), "{want}");
        let before = restarts_total();
        assert_eq!(joined(&input, false), want);
        assert!(restarts_total() > before);
        std::fs::remove_dir_all(&dir).ok();
    }
}
