//! One inflater feeding N scan threads against the one-thread route
//! (`pipeline::first_read_sequential`, itself checked against the core analyzer), on every N
//! from 1 to 8 and random chunk (segment) sizes: plain, multi-member, cut, corrupt and
//! trailing-garbage streams; documents that defeat the guesses or hold none for many chunks;
//! damaged JSON; the bundled real traces. And the restart points the join needs, kept on it.
use std::io::Write;
use std::path::{Path, PathBuf};

use flinch_core::Limits;
use flinch_core::job::Job;
use flinch_core::trace_job::{TraceJob, TraceJobOptions};

use super::super::tests::kineto;
use super::*;
use crate::input::checkpoints::{GzRanges, take};
use crate::input::{InputFile, Passes, open_input_with};
use crate::trace::pipeline::first_read_sequential;
use crate::trace::test_files::trace_fixtures;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    crate::trace::test_files::temp("parallel-gz", name, bytes)
}

fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn job(limits: Limits) -> TraceJob {
    TraceJob::new(TraceJobOptions {
        source: "s".into(),
        limits,
        top: 40,
        durations_out: None,
        mergeable: false,
        steps: None,
        join: None,
    })
}

fn finish(r: Result<(), String>, j: TraceJob) -> Result<String, String> {
    r?;
    Ok(j.finish().map_err(|e| e.to_string())?.summary.to_json())
}

/// The one-thread route: the decoded bytes written to the job on this thread, inflated in
/// chunks of `chunk` bytes. The chunk size matters for a corrupt stream: the bytes of the
/// inflater's call that fails are not handed on, so with small chunks a scan error in them can
/// come first. The routes use the same size (`SEGMENT_BYTES`, the input's default).
fn one_thread(path: &Path, limits: Limits, chunk: usize) -> Result<String, String> {
    let options = InputOptions {
        buffer_bytes: chunk,
        ..InputOptions::default()
    };
    let input = open_input_with(path, options)?;
    let mut j = job(limits);
    let r = first_read_sequential(input, &mut j, || {});
    finish(r, j)
}

/// This route on `threads` scan threads with chunks of `segment` bytes; also how many segments
/// the summary scanned itself.
fn many(
    path: &Path,
    limits: Limits,
    threads: usize,
    segment: usize,
) -> (Result<String, String>, usize) {
    let input = open_input_with(path, options(threads, segment)).unwrap();
    assert!(input.is_gzip());
    let mut j = job(limits);
    let mut last = 0;
    let (r, rescanned) = first_read_counting(input, threads, &mut j, |done, total| {
        assert!(done >= last && done <= total, "{done} {total}");
        last = done;
    });
    (finish(r, j), rescanned)
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The `.gz` streams made of `doc`: one member, several members cut anywhere (mid-event), cut
/// short, corrupted, and with trailing garbage.
fn streams(name: &str, doc: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let one = gzip(doc, 6);
    let mut multi = Vec::new();
    let mut at = 0;
    while at < doc.len() {
        let k = (at + 1 + rng.below(doc.len() as u64 / 3 + 1) as usize).min(doc.len());
        multi.extend(gzip(&doc[at..k], 1 + rng.below(9) as u32));
        at = k;
    }
    if multi.is_empty() {
        // An empty document: one empty member.
        multi = gzip(doc, 1);
    }
    let mut corrupt = one.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0xff;
    corrupt[mid + 1] ^= 0x55;
    let mut garbage = one.clone();
    garbage.extend_from_slice(b"not gzip at all");
    vec![
        (format!("{name}.json.gz"), one.clone()),
        (format!("{name}-multi.json.gz"), multi),
        (
            format!("{name}-cut.json.gz"),
            one[..one.len() * 2 / 3].to_vec(),
        ),
        (format!("{name}-corrupt.json.gz"), corrupt),
        (format!("{name}-garbage.json.gz"), garbage),
    ]
}

/// A document with long stretches no guess is found in: a 200 KB string, a large `args`
/// value on one line, and 100 KB of whitespace before the events array.
fn guessless() -> Vec<u8> {
    let mut s = String::from("{");
    s.push_str(&" \n".repeat(50_000));
    s.push_str("\"traceEvents\": [\n");
    for i in 0..1500 {
        if i > 0 {
            s.push_str(",\n");
        }
        let arg = match i {
            300 => "x".repeat(200_000),
            900 => "{},{".repeat(30_000),
            _ => format!("a{i}"),
        };
        s.push_str(&format!(
            r#"{{"ph": "X", "cat": "c", "name": "op{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, "args": {{"s": "{arg}"}}}}"#,
            i % 7,
            i % 3,
            1000 + i * 13,
            1 + i % 11
        ));
    }
    s.push_str("\n]}\n");
    s.into_bytes()
}

/// Every thread count from 1 to 8, on random chunk sizes: the one-thread result, byte for byte.
#[test]
fn every_thread_count_gives_the_one_thread_result() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut docs: Vec<(String, Vec<u8>)> = Vec::new();
    for (tricky, bare) in [(false, false), (true, false), (false, true)] {
        docs.push((format!("k-{tricky}-{bare}"), kineto(1500, tricky, bare)));
    }
    let mut damaged = kineto(1500, true, false);
    let k = damaged.len() / 3;
    damaged[k] = b'"';
    docs.push(("damaged".into(), damaged));
    docs.push(("guessless".into(), guessless()));
    docs.push(("empty".into(), Vec::new()));
    let (mut cut, mut failed, mut segments_skipped) = (0, 0, 0);
    for (name, doc) in &docs {
        for (file, gz) in streams(name, doc, &mut rng) {
            let path = temp(&file, &gz);
            let want = one_thread(&path, Limits::NATIVE, SEGMENT_BYTES as usize);
            match &want {
                Ok(json) if json.contains("\"truncated\": true") => cut += 1,
                Err(e) => {
                    assert!(e.contains("byte"), "{file}: {e}");
                    failed += 1;
                }
                Ok(_) => {}
            }
            let (got, _) = many(&path, Limits::NATIVE, 3, SEGMENT_BYTES as usize);
            assert_eq!(got, want, "{file}: chunks of 1 MiB");
            for threads in 1..=8 {
                let segment = 64 + rng.below(30_000) as usize;
                let (got, rescanned) = many(&path, Limits::NATIVE, threads, segment);
                // Only a corrupt stream's result depends on the chunk size.
                let want = if file.contains("corrupt") {
                    one_thread(&path, Limits::NATIVE, segment)
                } else {
                    want.clone()
                };
                assert_eq!(got, want, "{file}: {threads} threads, chunks of {segment}");
                if name == "guessless" {
                    segments_skipped += rescanned;
                }
            }
        }
    }
    assert!(cut >= 5 && failed >= 5, "cut {cut}, failed {failed}");
    assert!(segments_skipped > 0);
}

#[test]
fn real_traces_give_the_one_thread_result() {
    let mut rng = Rng(77);
    let mut seen = 0;
    for p in trace_fixtures(&[".json", ".gz"]) {
        let bytes = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let gz = if is_gzip(&bytes) {
            bytes
        } else {
            gzip(&bytes, 6)
        };
        let path = temp(&format!("{name}.gz"), &gz);
        for limits in [Limits::NATIVE, Limits::EXACT] {
            let want = one_thread(&path, limits, SEGMENT_BYTES as usize);
            for threads in [3, 4 + rng.below(5) as usize] {
                for segment in [997, 20_000 + rng.below(100_000) as usize] {
                    let (got, _) = many(&path, limits, threads, segment);
                    assert_eq!(got, want, "{name}: {threads} threads, chunks of {segment}");
                }
            }
        }
        seen += 1;
    }
    assert!(seen >= 15, "only {seen} traces");
}

/// Guesses inside `args` on one line fail about every other segment: guessing stops and the
/// summary scans on alone, with the same result.
#[test]
fn when_most_guesses_fail_the_summary_scans_on_alone_with_the_same_result() {
    let mut doc = String::from("[");
    for i in 0..4000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            r#"{{"ph":"X","cat":"c{}","name":"n{}","pid":1,"tid":{},"ts":{},"dur":{},"args":{{"l":[{{"a":{i}}},{{"b":{i}}}]}}}}"#,
            i % 3,
            i % 7,
            i % 2,
            1000 + i * 10,
            i % 9
        ));
    }
    doc.push(']');
    let path = temp("one-line.json.gz", &gzip(doc.as_bytes(), 6));
    let want = one_thread(&path, Limits::NATIVE, SEGMENT_BYTES as usize);
    assert!(want.is_ok());
    for segment in [500, 5000] {
        let (got, rescanned) = many(&path, Limits::NATIVE, 4, segment);
        assert_eq!(got, want, "{segment}");
        let segments = doc.len() / segment;
        assert!(rescanned * 2 > segments, "{rescanned} of {segments}");
    }
}

/// The join's first read on this route keeps the restart points of the read it replaces:
/// indexed, they read back the decoded bytes anywhere.
#[test]
fn restart_points_are_kept_on_this_route() {
    let doc = kineto(40_000, false, false);
    let gz = gzip(&doc, 6);
    let path = temp("indexed.json.gz", &gz);
    let input = InputFile::open(&path, Passes::One)
        .unwrap()
        .read_indexed_with(options(4, 7000))
        .unwrap();
    let mut j = job(Limits::NATIVE);
    first_read(input, 4, &mut j, |_, _| {}).unwrap();
    assert_eq!(
        finish(Ok(()), j),
        one_thread(&path, Limits::NATIVE, SEGMENT_BYTES as usize)
    );
    let index = take(&path).expect("points kept");
    assert!(index.len() >= 2, "{} points", index.len());
    let mut r = GzRanges::with_index(&path, Some(index)).unwrap();
    let mut buf = vec![0u8; 4096];
    let at = doc.len() as u64 - 10_000;
    let k = r.read(at, &mut buf).unwrap();
    assert_eq!(&buf[..k], &doc[at as usize..at as usize + k]);
    assert_eq!(r.restarts(), 1);
}

#[test]
fn the_route_is_for_large_gz_files_and_three_threads_or_more() {
    let doc = kineto(200, false, false);
    let small = temp("small.json.gz", &gzip(&doc, 6));
    let mut big = Vec::new();
    let mut rng = Rng(5);
    // Incompressible: past the size floor compressed.
    while big.len() < MIN_FILE_BYTES as usize + 1000 {
        big.push(rng.below(256) as u8);
    }
    let big_gz = temp("big.json.gz", &gzip(&big, 1));
    let big_plain = temp("big.json", &big);
    let open = |p: &Path| InputFile::open(p, Passes::One).unwrap();
    assert!(input_options(&open(&big_gz), MIN_THREADS).is_some());
    assert!(input_options(&open(&big_gz), MIN_THREADS - 1).is_none());
    assert!(input_options(&open(&small), 8).is_none());
    assert!(input_options(&open(&big_plain), 8).is_none());
    let o = input_options(&open(&big_gz), 16).unwrap();
    assert_eq!((o.buffers, o.buffer_bytes), (ring_chunks(16), 1 << 20));
    // The one-thread routes inflate in chunks of the same size: the same bytes before an error.
    assert_eq!(o.buffer_bytes, InputOptions::default().buffer_bytes);
    // Room for the longest segment and the chunk after it, whatever N.
    assert!(ring_chunks(1) > MAX_SEGMENT_CHUNKS + 1);
}
