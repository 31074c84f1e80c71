//! The two-thread pipeline against the one-thread core analyzer (the oracle): same JSON for real
//! and generated traces, in small and odd-sized input chunks, and the same error texts and
//! cut-gzip warning.
use std::io::Write;
use std::path::{Path, PathBuf};

use flinch_core::Limits;

use super::*;
use crate::input::{InputOptions, open_input_with};

use crate::trace::test_files::trace_fixtures;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    crate::trace::test_files::temp("pipeline", name, bytes)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The oracle: what `trace` did before the pipeline, the core analyzer on one thread
/// (still used for gzip on two cores or fewer).
fn oracle(path: &Path, limits: Limits, options: InputOptions) -> Result<String, String> {
    let input = open_input_with(path, options)?;
    summarize_sequential(input, "s", limits, Some(40), None, false, || {}).map(|r| r.to_json())
}

fn piped(path: &Path, limits: Limits, options: InputOptions) -> Result<String, String> {
    let input = open_input_with(path, options)?;
    let mut batches = 0;
    let r = summarize(input, "s", limits, Some(40), None, Also::Nothing, || {
        batches += 1
    })?;
    Ok(r.to_json())
}

fn same(path: &Path) {
    for limits in [Limits::NATIVE, Limits::EXACT, Limits::BOUNDED] {
        for options in [
            InputOptions::default(),
            InputOptions {
                buffers: 2,
                buffer_bytes: 4099,
            },
        ] {
            let want = oracle(path, limits, options);
            let got = piped(path, limits, options);
            assert_eq!(got, want, "{} {limits:?} {options:?}", path.display());
        }
    }
}

/// A trace of `n` events: X events with long and short names (text arenas fill before the
/// event count does, and the other way round), B/E pairs across batches, instants, a stray `E`.
fn generated(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"otherData\": {\"x\": [1, {\"y\": \"}\"}]}, \"traceEvents\": [\n");
    let mut ts: u64 = 1_712_195_495_519_689;
    for i in 0..n {
        if i > 0 {
            s.push_str(",\n");
        }
        ts += (i as u64 * 7919) % 500;
        let name = if i % 3 == 0 {
            format!("kernel<{}>{}", i % 17, "x".repeat(300 + i % 41))
        } else {
            format!("op{}", i % 23)
        };
        match i % 9 {
            0 => s.push_str(&format!(
                r#"{{"ph":"B","cat":"c{}","name":"{name}","pid":1,"tid":{},"ts":{ts}.5}}"#,
                i % 5,
                i % 3
            )),
            1 => s.push_str(&format!(
                r#"{{"ph":"E","pid":1,"tid":{},"ts":{}.25}}"#,
                (i + 2) % 3,
                ts + 40
            )),
            2 => s.push_str(&format!(
                r#"{{"ph":"i","cat":"inst","name":"é\u00e9\"q","pid":"p","tid":{i},"ts":{ts},"s":"t"}}"#
            )),
            _ => s.push_str(&format!(
                r#"{{"ph":"X","cat":"c{}","name":"{name}","pid":1102,"tid":{},"ts":{ts}.{:03},"dur":{}.{:03},"args":{{"External id":{i},"grid":[1,2,3]}}}}"#,
                i % 5,
                i % 4,
                i % 1000,
                (i * 31) % 900,
                i % 997
            )),
        }
    }
    s.push_str("\n], \"displayTimeUnit\": \"ns\"}\n");
    s.into_bytes()
}

#[test]
fn generated_traces_equal_the_one_thread_analyzer() {
    // Several batches by event count and by text bytes; also the ring cycling many times.
    for n in [0, 1, 5, 2047, 2048, 2049, 9000] {
        let doc = generated(n);
        same(&temp(&format!("gen{n}.json"), &doc));
        same(&temp(&format!("gen{n}.json.gz"), &gzip(&doc)));
    }
}

#[test]
fn real_traces_equal_the_one_thread_analyzer() {
    let traces = trace_fixtures(&[".json", ".gz"]);
    for p in &traces {
        same(p);
    }
    assert!(traces.len() >= 15, "only {} traces", traces.len());
}

#[test]
fn errors_cut_files_and_empty_files_read_as_the_analyzer_says() {
    let doc = generated(3000);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.json", Vec::new()),
        ("ws.json", b"   \n ".to_vec()),
        ("junk.json", b"  hello".to_vec()),
        // A structural error after several batches of events.
        ("late-error.json", {
            let mut d = doc.clone();
            let k = d.len() - 40;
            d.truncate(k);
            d.extend_from_slice(b"} {\"ph\":\"X\"}]}");
            d
        }),
        ("cut.json", doc[..doc.len() * 2 / 3].to_vec()),
        ("cut.json.gz", {
            let gz = gzip(&doc);
            gz[..gz.len() * 2 / 3].to_vec()
        }),
        ("corrupt.json.gz", {
            let mut gz = gzip(&doc);
            let mid = gz.len() / 2;
            gz[mid] ^= 0xff;
            gz[mid + 1] ^= 0x55;
            gz
        }),
    ];
    for (name, bytes) in cases {
        let p = temp(name, &bytes);
        let want = oracle(&p, Limits::NATIVE, InputOptions::default());
        let got = piped(&p, Limits::NATIVE, InputOptions::default());
        assert_eq!(got, want, "{name}");
        if name.starts_with("cut") {
            let json = got.unwrap();
            assert!(json.contains("\"truncated\": true"), "{name}: {json}");
        }
        if name == "late-error.json" || name == "junk.json" {
            assert!(want.unwrap_err().contains("at byte"), "{name}");
        }
    }
}

/// A batch (compact records, pairs found again through `recent`, one op lookup per pair)
/// against `TraceSummary::add` of every event: names built to share a `recent` slot (same
/// length and same first, middle and last 8 bytes, differing elsewhere), `None` against empty
/// strings, the same name under two categories, multi-byte and empty phases, B/E pairs, odd
/// numbers, at limits that fold ops into "(other)" and drop B slices too. Batches are filled,
/// drained and reused, as the ring does.
#[test]
fn batches_add_what_the_events_add() {
    let mut rng = flinch_core_rng(41);
    let stem =
        "void at::native::elementwise_kernel<128, 4, gpu_kernel_impl<AddFunctor<float>>>(int, T)";
    let mut names: Vec<Option<String>> = vec![None, Some(String::new()), Some("a".into())];
    for k in 0..40usize {
        // Same length and same 8-byte head, middle and tail: only bytes 9..20 differ.
        let mut n = stem.to_string().into_bytes();
        n[9 + k % 11] = b'A' + (k / 11) as u8;
        names.push(Some(String::from_utf8(n).unwrap()));
    }
    // They do share a slot.
    let (a, b) = (names[3].as_deref(), names[40].as_deref());
    assert_ne!(a, b);
    assert_eq!(
        recent_slot(Some(b"kernel"), a.map(str::as_bytes)),
        recent_slot(Some(b"kernel"), b.map(str::as_bytes))
    );
    let cats = [None, Some(""), Some("kernel"), Some("cpu_op")];
    let phs: [&[u8]; 8] = [b"X", b"X", b"X", b"B", b"E", b"i", b"XY", b""];
    for limits in [
        Limits::NATIVE,
        Limits {
            max_ops: 7,
            max_categories: 2,
            max_open_slices: 3,
            ..Limits::BOUNDED
        },
    ] {
        let mut direct = TraceSummary::new(limits);
        let mut batched = TraceSummary::new(limits);
        let mut batch = Batch::new(limits.max_string_bytes, false);
        for i in 0..20_000u64 {
            let name = names[rng(names.len())].as_deref().map(str::as_bytes);
            let cat = cats[rng(cats.len())].map(str::as_bytes);
            let ts_ns = match rng(20) {
                0 => NumField::Missing,
                1 => NumField::NotNumber,
                _ => NumField::Ns(1_000_000 + i as i64 * 100 - rng(300) as i64),
            };
            let dur_ns = match rng(20) {
                0 => NumField::Missing,
                1 => NumField::NotNumber,
                2 => NumField::Ns(-5),
                _ => NumField::Ns(rng(500) as i64),
            };
            let e = Event {
                ph: phs[rng(phs.len())],
                cat,
                name,
                ts_ns,
                dur_ns,
                pid: IdField::Int(1),
                tid: if rng(2) == 0 {
                    IdField::Int(7)
                } else {
                    IdField::Hash(99)
                },
                id: IdField::Int(i as i64),
                scope: IdField::Missing,
                quoted_times: rng(4) as u8,
            };
            direct.add(&e);
            batch.push(&e);
            if batch.full() || rng(500) == 0 {
                batch.add_to(&mut batched);
                batch.clear();
            }
        }
        batch.add_to(&mut batched);
        let mut empty = EventScanner::new(limits);
        let end = empty.finish();
        let w = *empty.warnings();
        let want = direct.finish("s", &end, &w, 40).to_json();
        assert!(want.contains("\"duration_events\""));
        assert_eq!(
            batched.finish("s", &end, &w, 40).to_json(),
            want,
            "{limits:?}"
        );
    }
}

/// A small deterministic generator: `rng(n)` is uniform in `0..n`.
fn flinch_core_rng(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}
