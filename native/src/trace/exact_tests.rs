//! Exact-oracle tests on the `with_stack` shape (python_function frames, thousands of distinct
//! ops, one `ProfilerStep#N` op per step) at sizes past the old default budgets (1,023 ops
//! natively, 4,096 on the page): the default `trace`, the default with limits far smaller than
//! the trace (busy intervals spilled, percentiles from further passes) on each input path, and
//! the page's analyzer all equal a plain exact computation over the trace's events.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use flinch_core::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use flinch_core::job::Job;
use flinch_core::json::{EventScanner, NumField, Scan};
use flinch_core::stats::{Stats, stats_f64};
use flinch_core::summary::{DEFAULT_TOP_OPS, TraceSummaryResult};
use flinch_core::trace_job::{TraceJob, TraceJobOptions};
use flinch_core::{Exactness, Limits};
use flinch_host::trace::{ReadOptions, parallel, pipeline};

use crate::input::{InputError, InputFile, Passes, open_input};

/// A first-read route of the host driver, forced.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// One scan thread beside the job.
    Pipeline,
    /// The bytes written to the job on one thread.
    Sequential,
    /// Two scan threads over segments of 64 KiB.
    Parallel,
}

fn job(limits: Limits, mergeable: bool) -> TraceJob {
    TraceJob::new(TraceJobOptions {
        source: "t".into(),
        limits,
        top: DEFAULT_TOP_OPS,
        durations_out: None,
        mergeable,
        steps: None,
        join: None,
    })
}

/// `file` (at `path`) summarized by `route`; `spills`: with the temporary file and further
/// reads.
fn by(
    route: Route,
    path: &Path,
    file: &InputFile,
    limits: Limits,
    spills: bool,
    mergeable: bool,
) -> Result<TraceSummaryResult, String> {
    let mut job = job(limits, mergeable);
    if spills {
        flinch_host::exact_io::equip(&mut job, file);
    }
    match route {
        Route::Pipeline => pipeline::first_read(file.read()?, &mut job, || {})?,
        Route::Sequential => pipeline::first_read_sequential(file.read()?, &mut job, || {})?,
        Route::Parallel => {
            let plan = parallel::plan_with(path, 64 << 10, 0).ok_or("no plan")?;
            parallel::first_read(plan, &mut job, |_, _| {})?
        }
    }
    job.finish().map(|r| r.summary).map_err(|e| e.to_string())
}

/// `file` summarized by the route the driver picks.
fn own(
    file: &InputFile,
    limits: Limits,
    spills: bool,
    mergeable: bool,
) -> Result<TraceSummaryResult, String> {
    let options = job(limits, mergeable).options().clone();
    let read = ReadOptions {
        spills,
        ..ReadOptions::default()
    };
    flinch_host::trace::run(file, options, read).map(|r| r.summary)
}

/// The reference for `--mergeable`: the core's one-thread analyzer (the page's entry point) fed
/// the file's decoded bytes, with the temporary file and further reads that keep it exact
/// (`exact_io`).
fn analyzer_mergeable(
    path: &Path,
    limits: Limits,
    exact_io: bool,
) -> Result<TraceSummaryResult, String> {
    let file = InputFile::open(path, Passes::Several)?;
    let mut input = file.read()?;
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: "t".to_string(),
        top: Some(DEFAULT_TOP_OPS),
        mergeable: true,
        ..AnalyzerOptions::default()
    };
    let mut analyzer = Analyzer::with_decoded_input(options, input.is_gzip());
    if exact_io {
        use flinch_host::exact_io::{FileReplay, FileSpill};
        analyzer.set_trace_io(
            Box::new(FileSpill::new()),
            Box::new(FileReplay::new(&file, limits)),
        );
    }
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => analyzer.write(chunk).map_err(|e| e.to_string())?,
            Ok(None) => {
                if let Some(w) = input.warning() {
                    analyzer.note_gzip_warning(w);
                }
                break;
            }
            Err(InputError { cut: Some(cut), .. }) => {
                analyzer.note_cut_gzip(cut);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    match analyzer.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(result) => Ok(*result),
        Analysis::Recording(_) | Analysis::TraceSteps(_) => Err("not a trace".to_string()),
    }
}

#[allow(dead_code)]
#[path = "../../examples/gen_trace.rs"]
pub(super) mod gen_trace;

/// A `with_stack` trace of about `bytes` (small fillers), written once per test process (to a
/// fixed place per checkout, overwritten by the next run rather than left behind; two checkouts
/// testing at once must not write each other's file).
fn with_stack(name: &str, bytes: u64) -> PathBuf {
    static MADE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let checkout = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        env!("CARGO_MANIFEST_DIR").hash(&mut h);
        h.finish()
    };
    let dir = std::env::temp_dir().join(format!("flinch-exact-tests-{checkout:016x}-{name}"));
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if !made.contains(&dir.display().to_string()) {
        gen_trace::generate(&dir, bytes, "with_stack", (20_000, 50_000)).unwrap();
        made.push(dir.display().to_string());
    }
    dir
}

/// The trace of the default and page tests: more distinct ops than the old page budget.
fn shared() -> PathBuf {
    with_stack("shared", 7_000_000)
}

/// What the summary must say, computed plainly: every X event's interval and duration kept,
/// unions by sort and merge, percentiles by a full sort (`stats_f64`), ops in first-seen order.
struct Oracle {
    /// (category, events, duration sum ns, busy union ns), first-seen order.
    categories: Vec<(String, u64, i128, u64)>,
    /// (category, name, duration sum ns, stats), the top 40 by sum (ties: first seen).
    ops: Vec<(String, String, i128, Stats)>,
    duration_events: u64,
    busy_union_ns: u64,
    distinct_ops: usize,
}

fn union_ns(mut v: Vec<(i64, i64)>) -> u64 {
    v.sort_unstable();
    let mut total = 0u64;
    let mut cur: Option<(i64, i64)> = None;
    for (a, b) in v {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            _ => {
                total += cur.map_or(0, |(ca, cb)| (cb - ca) as u64);
                cur = Some((a, b));
            }
        }
    }
    total + cur.map_or(0, |(ca, cb)| (cb - ca) as u64)
}

/// Per category of the oracle: name, events, duration sum ns, intervals.
type CatAcc = (String, u64, i128, Vec<(i64, i64)>);

fn oracle(path: &Path) -> Oracle {
    let mut input = open_input(path).unwrap();
    let mut sc = EventScanner::new(Limits::EXACT);
    let mut cats: Vec<CatAcc> = Vec::new();
    let mut cat_index: HashMap<String, usize> = HashMap::new();
    let mut ops: Vec<(String, String, i128, Vec<i64>)> = Vec::new();
    let mut op_index: HashMap<(String, String), usize> = HashMap::new();
    let mut all = Vec::new();
    while let Some(chunk) = input.next_chunk().unwrap() {
        let mut pos = 0;
        loop {
            let (s, nin) = sc.scan(&chunk[pos..]).unwrap();
            pos += nin;
            if s == Scan::NeedsInput {
                break;
            }
            let e = sc.event();
            assert!(!matches!(e.ph, b"B" | b"E"), "the shape has no B/E pairs");
            let (b"X", NumField::Ns(ts), NumField::Ns(dur)) = (e.ph, e.ts_ns, e.dur_ns) else {
                continue;
            };
            let text = |s: Option<&[u8]>| s.map(|b| String::from_utf8_lossy(b).into_owned());
            let cat = text(e.cat).unwrap_or_else(|| "uncategorized".into());
            let k = *cat_index.entry(cat.clone()).or_insert_with(|| {
                cats.push((cat, 0, 0, Vec::new()));
                cats.len() - 1
            });
            cats[k].1 += 1;
            cats[k].2 += i128::from(dur);
            cats[k].3.push((ts, ts + dur));
            all.push((ts, ts + dur));
            let key = (
                text(e.cat).unwrap_or_default(),
                text(e.name).unwrap_or_default(),
            );
            let k = *op_index.entry(key.clone()).or_insert_with(|| {
                ops.push((key.0, key.1, 0, Vec::new()));
                ops.len() - 1
            });
            ops[k].2 += i128::from(dur);
            ops[k].3.push(dur);
        }
    }
    let distinct_ops = ops.len();
    let duration_events = all.len() as u64;
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by(|&a, &b| ops[b].2.cmp(&ops[a].2).then(a.cmp(&b)));
    order.truncate(DEFAULT_TOP_OPS);
    Oracle {
        categories: cats
            .into_iter()
            .map(|(c, n, s, iv)| (c, n, s, union_ns(iv)))
            .collect(),
        ops: order
            .into_iter()
            .map(|i| {
                let (c, n, s, d) = &ops[i];
                let us: Vec<f64> = d.iter().map(|&x| x as f64 / 1000.0).collect();
                (c.clone(), n.clone(), *s, stats_f64(&us))
            })
            .collect(),
        duration_events,
        busy_union_ns: union_ns(all),
        distinct_ops,
    }
}

fn assert_equals_oracle(r: &TraceSummaryResult, o: &Oracle, what: &str) {
    assert!(r.approximations.is_none(), "{what}: {:?}", r.approximations);
    let cats: Vec<(String, u64, i128, u64)> = r
        .categories
        .0
        .iter()
        .map(|c| (c.name.clone(), c.events, c.duration_sum_ns, c.busy_union_ns))
        .collect();
    assert_eq!(cats, o.categories, "{what}: categories");
    assert_eq!(r.largest_ops_by_duration_sum.len(), o.ops.len(), "{what}");
    for (row, (c, n, s, st)) in r.largest_ops_by_duration_sum.iter().zip(&o.ops) {
        assert_eq!((&row.category, &row.name), (c, n), "{what}: op order");
        assert_eq!(row.duration_sum_us, *s as f64 / 1000.0, "{what}: {n}");
        assert_eq!(&row.duration_us, st, "{what}: stats of {n}");
    }
    assert_eq!(r.totals.duration_events, o.duration_events, "{what}");
    assert_eq!(r.totals.busy_union_ns, o.busy_union_ns, "{what}");
}

/// The default `trace`, on the plain and the gzip file: exact, and more distinct ops than the
/// old budgets held.
#[test]
fn default_trace_equals_the_oracle() {
    let dir = shared();
    let o = oracle(&dir.join("trace.json"));
    assert!(o.distinct_ops > 4096, "{} distinct ops", o.distinct_ops);
    for file in ["trace.json", "trace.json.gz"] {
        let r = super::summarize_file(&dir.join(file), "t", Limits::NATIVE, 40, true).unwrap();
        assert_equals_oracle(&r, &o, file);
    }
}

/// Limits far smaller than the trace (a few hundred live intervals, a few thousand durations):
/// with the temporary file and the further passes, every input path (the one-thread analyzer
/// for gzip, the scan-thread pipeline, the two-thread plain reader) is exact; without them the
/// same limits state approximations.
#[test]
fn past_the_limits_every_path_stays_exact() {
    let dir = with_stack("tight", 2_500_000);
    let json = dir.join("trace.json");
    let gz = dir.join("trace.json.gz");
    let o = oracle(&json);
    let tight = Limits {
        max_intervals: 300,
        max_exact_values: 3000,
        ..Limits::NATIVE
    };
    let gz_file = InputFile::open(&gz, Passes::Several).unwrap();
    let r = by(Route::Sequential, &gz, &gz_file, tight, true, false).unwrap();
    assert_equals_oracle(&r, &o, "sequential .gz");
    for path in [&json, &gz] {
        let file = InputFile::open(path, Passes::Several).unwrap();
        let r = by(Route::Pipeline, path, &file, tight, true, false).unwrap();
        assert_equals_oracle(&r, &o, "pipeline");
    }
    let file = InputFile::open(&json, Passes::Several).unwrap();
    let r = by(Route::Parallel, &json, &file, tight, true, false).unwrap();
    assert_equals_oracle(&r, &o, "parallel");
    // A FIFO (what `trace FIFO` gets): one scan thread, the further passes read its spool.
    for path in [&json, &gz] {
        let fifo = dir.join(format!("fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (bytes, to) = (std::fs::read(path).unwrap(), fifo.clone());
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .open(to)?
                .write_all(&bytes)
        });
        let file = InputFile::open(&fifo, Passes::Several).unwrap();
        let r = own(&file, tight, true, false).unwrap();
        writer.join().unwrap().unwrap();
        std::fs::remove_file(&fifo).unwrap();
        assert_equals_oracle(&r, &o, "a FIFO");
    }
    let file = InputFile::open(&json, Passes::One).unwrap();
    let r = by(Route::Pipeline, &json, &file, tight, false, false).unwrap();
    let a = r.approximations.expect("limits too small for the trace");
    assert!(a.busy_union_error_bound_us > 0.0);
    assert!(a.ops_with_sketched_stats + a.listed_ops_without_percentiles > 0);
}

/// The page (the core analyzer with its `page` limits, fed as the page feeds it) prints the
/// native default's JSON byte for byte, and both equal the oracle.
#[test]
fn the_page_prints_the_native_answer() {
    let dir = shared();
    let gz = dir.join("trace.json.gz");
    let o = oracle(&gz);
    let native = super::summarize_file(&gz, "trace.json.gz", Limits::NATIVE, 40, true).unwrap();
    assert_equals_oracle(&native, &o, "native");
    let bytes = std::fs::read(&gz).unwrap();
    let mut page = Analyzer::new(AnalyzerOptions {
        limits: Exactness::Page,
        source: "trace.json.gz".into(),
        ..AnalyzerOptions::default()
    });
    for chunk in bytes.chunks(1 << 20) {
        page.write(chunk).unwrap();
    }
    let Analysis::Trace(r) = page.finish().unwrap() else {
        panic!("not a trace");
    };
    assert_equals_oracle(&r, &o, "page");
    assert_eq!(r.to_json(), native.to_json());
}

/// `--mergeable` through every input path (the file's own choice, the scan-thread route, the
/// one-thread route, two scan threads on small segments), within and past the limits, prints
/// the bytes of the core analyzer's mergeable summary ([`analyzer_mergeable`]).
#[test]
fn mergeable_on_every_path_equals_the_analyzer() {
    let dir = with_stack("tight", 2_500_000);
    let json = dir.join("trace.json");
    let gz = dir.join("trace.json.gz");
    let tight = Limits {
        max_intervals: 300,
        max_exact_values: 3000,
        ..Limits::NATIVE
    };
    for (limits, exact_io) in [(Limits::NATIVE, false), (tight, true), (tight, false)] {
        for path in [&json, &gz] {
            let analyzer = analyzer_mergeable(path, limits, exact_io)
                .unwrap()
                .to_json();
            assert!(analyzer.contains("\n  \"mergeable\": {"), "no section");
            let file = InputFile::open(path, Passes::Several).unwrap();
            let mut routes = vec![Route::Pipeline, Route::Sequential];
            if path == &json {
                routes.push(Route::Parallel);
            }
            let r = own(&file, limits, exact_io, true);
            let what = format!("{} {exact_io} own route", path.display());
            assert!(r.unwrap().to_json() == analyzer, "{what}");
            for route in routes {
                let r = by(route, path, &file, limits, exact_io, true);
                let what = format!("{} {exact_io} {route:?}", path.display());
                assert!(r.unwrap().to_json() == analyzer, "{what}");
            }
        }
    }
}

/// A trace whose ops have more durations than a small budget holds.
fn many_durations() -> String {
    let mut s = String::from("{\"traceEvents\":[");
    let mut x = 12345u64;
    for k in 0..40_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let dur_ns = (x >> 33) % 200_000;
        if k > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"c{}\",\"name\":\"op{}\",\"ts\":{}.{:03},\"dur\":{}.{:03}}}",
            k % 2,
            (x >> 20) % 7,
            k * 3,
            k % 1000,
            dur_ns / 1000,
            dur_ns % 1000
        ));
    }
    s.push_str("]}");
    s
}

/// Past the durations budget the mergeable section's histograms come from a further read of
/// the file (plain and gzip): those of the exact in-memory summary at the scale that fit.
#[test]
fn tight_limits_read_the_file_again_for_histograms() {
    use flinch_core::merge::histogram::SCALE;
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("flinch-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("rank.json");
    let text = many_durations();
    std::fs::write(&plain, &text).unwrap();
    let gz = dir.join("rank.json.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
    let exact = analyzer_mergeable(&plain, Limits::EXACT, false)
        .unwrap()
        .mergeable_state()
        .unwrap();
    let tight = Limits {
        max_exact_values: 20_000,
        ..Limits::NATIVE
    };
    for path in [&plain, &gz] {
        let got = analyzer_mergeable(path, tight, true)
            .unwrap()
            .mergeable_state()
            .unwrap();
        assert!(got.ops.iter().all(|o| o.histogram.is_some()));
        let mut want = exact.clone();
        // A scale below the full one is stated.
        let warnings = &got.ranks[0].warnings;
        let stated = format!("the mergeable histograms are at scale {},", got.scale);
        assert_eq!(
            warnings.iter().any(|w| w.starts_with(&stated)),
            got.scale < SCALE,
            "{warnings:?}"
        );
        want.ranks[0].warnings = warnings.clone();
        want.scale = got.scale;
        for o in &mut want.ops {
            o.histogram = o
                .histogram
                .as_ref()
                .map(|h| h.downscaled(SCALE - got.scale));
        }
        // Same input bytes for the gzip file once inflated.
        want.ranks[0].bytes = got.ranks[0].bytes;
        assert_eq!(got, want, "{}", path.display());
        // Without the further read those ops have no histogram.
        let alone = analyzer_mergeable(path, tight, false)
            .unwrap()
            .mergeable_state()
            .unwrap();
        assert!(alone.ops.iter().any(|o| o.histogram.is_none()));
    }
    std::fs::remove_dir_all(&dir).ok();
}
