//! Scanner tests: generated traces checked against the generator's own exact values and
//! against `serde_json::Value` (the decoding oracle), fed whole, byte by byte and in random
//! splits.
use super::*;
use crate::Limits;
use crate::testutil::{Rng, for_each_split};
use std::string::String;
use std::vec;
use std::vec::Vec;

#[derive(Clone, Debug, PartialEq)]
struct Owned {
    ph: Vec<u8>,
    cat: Option<Vec<u8>>,
    name: Option<Vec<u8>>,
    ts: NumField,
    dur: NumField,
    pid: IdField,
    tid: IdField,
    id: IdField,
    arg: ArgValue,
}

impl Owned {
    fn of(e: &Event<'_>) -> Owned {
        Owned {
            ph: e.ph.to_vec(),
            cat: e.cat.map(<[u8]>::to_vec),
            name: e.name.map(<[u8]>::to_vec),
            ts: e.ts_ns,
            dur: e.dur_ns,
            pid: e.pid,
            tid: e.tid,
            id: e.id,
            arg: e.arg,
        }
    }
}

struct Outcome {
    events: Vec<Owned>,
    end: ScanEnd,
    warnings: ScanWarnings,
    error: Option<ScanError>,
}

fn run_chunks(chunks: &[&[u8]], limits: Limits) -> Outcome {
    let mut sc = EventScanner::new(limits);
    let mut events = Vec::new();
    let mut error = None;
    'outer: for chunk in chunks {
        let mut pos = 0;
        loop {
            match sc.scan(&chunk[pos..]) {
                Ok((Scan::Event, nin)) => {
                    pos += nin;
                    events.push(Owned::of(&sc.event()));
                }
                Ok((Scan::NeedsInput, nin)) => {
                    assert_eq!(pos + nin, chunk.len());
                    break;
                }
                Err(e) => {
                    error = Some(e);
                    break 'outer;
                }
            }
        }
    }
    let end = sc.finish();
    Outcome {
        events,
        end,
        warnings: *sc.warnings(),
        error,
    }
}

fn run_whole(doc: &[u8]) -> Outcome {
    run_chunks(&[doc], Limits::EXACT)
}

/// Every split gives the same events, end and warnings as the whole input.
fn check_splits(doc: &[u8], rounds: usize, seed: u64) -> Outcome {
    let whole = run_whole(doc);
    for_each_split(doc, rounds, seed, |chunks| {
        let got = run_chunks(chunks, Limits::EXACT);
        assert_eq!(got.events, whole.events);
        assert_eq!(got.end, whole.end);
        assert_eq!(got.warnings, whole.warnings);
        assert_eq!(got.error, whole.error);
    });
    whole
}

// ---------- generator ----------

struct Gen {
    rng: Rng,
    out: Vec<u8>,
}

impl Gen {
    fn ws(&mut self) {
        for _ in 0..self.rng.below(3) {
            let c = [b' ', b'\n', b'\t', b'\r', b' '][self.rng.below(5) as usize];
            self.out.push(c);
        }
    }

    /// Writes a JSON string with random escaping; returns the decoded bytes.
    fn string(&mut self, text: &str) -> Vec<u8> {
        self.out.push(b'"');
        for c in text.chars() {
            let r = self.rng.below(10);
            match c {
                '"' => self.out.extend_from_slice(b"\\\""),
                '\\' => self.out.extend_from_slice(b"\\\\"),
                '\n' => self.out.extend_from_slice(b"\\n"),
                '\t' => self.out.extend_from_slice(b"\\t"),
                '\u{8}' => self.out.extend_from_slice(b"\\b"),
                '\u{c}' => self.out.extend_from_slice(b"\\f"),
                '\r' => self.out.extend_from_slice(b"\\r"),
                '/' if r < 5 => self.out.extend_from_slice(b"\\/"),
                c if (c as u32) < 0x20 => self
                    .out
                    .extend_from_slice(std::format!("\\u{:04x}", c as u32).as_bytes()),
                c if r < 2 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        let s = if r == 0 {
                            std::format!("\\u{:04X}", u)
                        } else {
                            std::format!("\\u{:04x}", u)
                        };
                        self.out.extend_from_slice(s.as_bytes());
                    }
                }
                c => {
                    let mut b = [0u8; 4];
                    self.out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
        self.out.push(b'"');
        text.as_bytes().to_vec()
    }

    fn text(&mut self) -> String {
        const PARTS: &[&str] = &[
            "aten::mm",
            "cpu_op",
            "kernel",
            "void gemm<float, 128>(...)",
            "é",
            "日本",
            "🚀",
            "\"q\"",
            "a\\b",
            "x/y",
            "\n",
            "\t",
            "\u{1}",
            "",
            "𝄞",
            " ",
            "ncclKernel_AllReduce",
            "\u{8}\u{c}\r",
        ];
        let mut s = String::new();
        for _ in 0..self.rng.below(4) {
            s.push_str(PARTS[self.rng.below(PARTS.len() as u64) as usize]);
        }
        s
    }

    /// A decimal number text for `ns` nanoseconds, in microseconds, in one of several spellings.
    fn us_text(&mut self, ns: i64) -> String {
        let neg = ns < 0;
        let a = ns.unsigned_abs();
        let (ip, fp) = (a / 1000, a % 1000);
        let sign = if neg { "-" } else { "" };
        match self.rng.below(5) {
            0 if fp == 0 => std::format!("{sign}{ip}"),
            1 => std::format!("{sign}{ip}.{fp:03}"),
            2 => {
                // Exponent form: digits * 10^-3 written as d.ddd...e+k
                let digits = std::format!("{a}");
                let k = digits.len() as i64 - 1 - 3;
                std::format!("{sign}{}.{}e{k}", &digits[..1], &digits[1..]).replace(".e", "e")
            }
            3 => std::format!("{sign}{ip}.{fp:03}0"),
            _ => {
                let mut f = std::format!("{fp:03}");
                while f.ends_with('0') {
                    f.pop();
                }
                if f.is_empty() {
                    std::format!("{sign}{ip}")
                } else {
                    std::format!("{sign}{ip}.{f}")
                }
            }
        }
    }

    fn skipped_value(&mut self, depth: u32) {
        match self.rng.below(if depth > 3 { 4 } else { 6 }) {
            0 => {
                let t = self.text();
                self.string(&t);
            }
            1 => self.out.extend_from_slice(b"12.5e-3"),
            2 => self
                .out
                .extend_from_slice([&b"true"[..], b"false", b"null"][self.rng.below(3) as usize]),
            3 => self.out.extend_from_slice(b"-7"),
            4 => {
                self.out.push(b'{');
                for k in 0..self.rng.below(4) {
                    if k > 0 {
                        self.out.push(b',');
                    }
                    self.ws();
                    let t = self.text();
                    self.string(&t);
                    self.ws();
                    self.out.push(b':');
                    self.ws();
                    self.skipped_value(depth + 1);
                }
                self.out.push(b'}');
            }
            _ => {
                self.out.push(b'[');
                for k in 0..self.rng.below(4) {
                    if k > 0 {
                        self.out.push(b',');
                    }
                    self.ws();
                    self.skipped_value(depth + 1);
                    self.ws();
                }
                self.out.push(b']');
            }
        }
    }

    fn event(&mut self) -> Owned {
        let mut e = Owned {
            ph: Vec::new(),
            cat: None,
            name: None,
            ts: NumField::Missing,
            dur: NumField::Missing,
            pid: IdField::Missing,
            tid: IdField::Missing,
            id: IdField::Missing,
            arg: ArgValue::Missing,
        };
        let mut args = ArgValue::Missing;
        let mut keys: Vec<u8> = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        // Shuffle, then drop some.
        for k in (1..keys.len()).rev() {
            let j = self.rng.below(k as u64 + 1) as usize;
            keys.swap(k, j);
        }
        keys.retain(|_| self.rng.below(8) != 0);
        self.out.push(b'{');
        for (n, k) in keys.iter().enumerate() {
            if n > 0 {
                self.ws();
                self.out.push(b',');
            }
            self.ws();
            let name = [
                "ph", "cat", "name", "ts", "dur", "pid", "tid", "id", "args", "extra",
            ][*k as usize];
            self.string(name);
            self.ws();
            self.out.push(b':');
            self.ws();
            match k {
                0 => {
                    let ph = ["X", "B", "E", "i", "s", "f", "M", "C"][self.rng.below(8) as usize];
                    e.ph = self.string(ph);
                }
                1 => {
                    let t = self.text();
                    e.cat = Some(self.string(&t));
                }
                2 => {
                    let t = self.text();
                    e.name = Some(self.string(&t));
                }
                3 | 4 => {
                    let ns = if self.rng.below(2) == 0 {
                        1_712_195_495_000_000_000 + self.rng.below(1 << 40) as i64
                    } else {
                        self.rng.below(10_000_000) as i64
                            - if self.rng.below(10) == 0 {
                                5_000_000
                            } else {
                                0
                            }
                    };
                    let t = self.us_text(ns);
                    let v = match self.rng.below(12) {
                        0 => {
                            self.string(&t);
                            NumField::Ns(ns)
                        }
                        1 => {
                            self.out.extend_from_slice(b"true");
                            NumField::NotNumber
                        }
                        2 => {
                            self.out.extend_from_slice(b"null");
                            NumField::NotNumber
                        }
                        _ => {
                            self.out.extend_from_slice(t.as_bytes());
                            NumField::Ns(ns)
                        }
                    };
                    if *k == 3 {
                        e.ts = v;
                    } else {
                        e.dur = v;
                    }
                }
                5..=7 => {
                    let v = if self.rng.below(4) == 0 {
                        let t = std::format!("0x{:x}", self.rng.below(1000));
                        self.string(&t);
                        IdField::Hash(super::scanner_fnv(t.as_bytes()))
                    } else {
                        let v = self.rng.below(100_000) as i64;
                        self.out.extend_from_slice(std::format!("{v}").as_bytes());
                        IdField::Int(v)
                    };
                    match k {
                        5 => e.pid = v,
                        6 => e.tid = v,
                        _ => e.id = v,
                    }
                }
                8 => {
                    // The number a counter's `args` gives, by `ArgsSniff` over the bytes after
                    // the `{` (its own tests hold it to the JSON rules).
                    let at = self.out.len();
                    self.skipped_value(0);
                    args = match self.out[at] {
                        b'{' => {
                            let mut sniff = ArgsSniff::new();
                            sniff.push(&self.out[at + 1..]);
                            sniff.finish()
                        }
                        _ => ArgValue::Missing,
                    };
                }
                _ => self.skipped_value(0),
            }
        }
        if e.ph == b"C" {
            e.arg = args;
        }
        self.ws();
        self.out.push(b'}');
        e
    }

    /// A whole document; returns the expected events.
    fn doc(&mut self, n_events: usize) -> Vec<Owned> {
        let bare = self.rng.below(4) == 0;
        let mut expected = Vec::new();
        if !bare {
            self.out.push(b'{');
            self.ws();
            let before = self.rng.below(3);
            for _ in 0..before {
                let t = self.text();
                self.string(&std::format!("k{t}"));
                self.out.push(b':');
                self.skipped_value(0);
                self.out.push(b',');
                self.ws();
            }
            self.string("traceEvents");
            self.ws();
            self.out.push(b':');
            self.ws();
        }
        self.out.push(b'[');
        for k in 0..n_events {
            if k > 0 {
                self.out.push(b',');
            }
            self.ws();
            expected.push(self.event());
            self.ws();
        }
        self.out.push(b']');
        if !bare {
            for _ in 0..self.rng.below(3) {
                self.out.push(b',');
                self.ws();
                self.string("displayTimeUnit");
                self.out.push(b':');
                self.skipped_value(0);
            }
            self.ws();
            self.out.push(b'}');
        }
        self.ws();
        expected
    }
}

/// Cross-checks the generator with serde_json: the document is valid JSON, and the decoded
/// `ph`/`cat`/`name` strings and the events count agree with what the generator recorded.
fn serde_check(doc: &[u8], expected: &[Owned]) {
    let v: serde_json::Value = serde_json::from_slice(doc).expect("generator wrote valid JSON");
    let arr = match &v {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => o["traceEvents"].as_array().unwrap(),
        _ => panic!(),
    };
    assert_eq!(arr.len(), expected.len());
    for (ev, want) in arr.iter().zip(expected) {
        let o = ev.as_object().unwrap();
        let s = |k: &str| {
            o.get(k)
                .and_then(|v| v.as_str())
                .map(|s| s.as_bytes().to_vec())
        };
        assert_eq!(s("cat"), want.cat);
        assert_eq!(s("name"), want.name);
        assert_eq!(s("ph").unwrap_or_default(), want.ph);
        for (k, f) in [("ts", want.ts), ("dur", want.dur)] {
            if let (Some(x), NumField::Ns(ns)) = (o.get(k).and_then(|v| v.as_f64()), f) {
                let want_us = ns as f64 / 1000.0;
                assert!(
                    (x - want_us).abs() <= want_us.abs() * 1e-15 + 1e-9,
                    "{k}: {x} vs {want_us}"
                );
            }
        }
    }
}

#[test]
fn random_documents_against_oracle() {
    let mut rng = Rng::from_env(1);
    for round in 0..150 {
        let mut g = Gen {
            rng: Rng(rng.next_u64()),
            out: Vec::new(),
        };
        let n = rng.below(12) as usize;
        let expected = g.doc(n);
        serde_check(&g.out, &expected);
        let got = check_splits(&g.out, 4, round);
        assert_eq!(got.error, None, "{}", String::from_utf8_lossy(&g.out));
        assert_eq!(got.events, expected, "{}", String::from_utf8_lossy(&g.out));
        assert!(got.end.complete && !got.end.truncated && !got.end.cut_event);
        assert_eq!(got.end.events, n as u64);
        assert_eq!(got.end.bytes, g.out.len() as u64);
        let w = got.warnings;
        assert_eq!(
            (
                w.malformed_events,
                w.bad_escapes,
                w.control_chars,
                w.trailing_bytes
            ),
            (0, 0, 0, 0)
        );
    }
}

#[test]
fn every_truncation_point_is_truncation_not_failure() {
    let mut g = Gen {
        rng: Rng(99),
        out: Vec::new(),
    };
    let expected = g.doc(6);
    let doc = g.out.clone();
    // Byte offset at which each event's closing brace ends, from a whole run.
    let mut ends = Vec::new();
    {
        let mut sc = EventScanner::new(Limits::EXACT);
        let mut pos = 0;
        while let (Scan::Event, nin) = sc.scan(&doc[pos..]).unwrap() {
            pos += nin;
            ends.push(pos);
        }
    }
    assert_eq!(ends.len(), expected.len());
    for cut in 0..doc.len() {
        let got = run_whole(&doc[..cut]);
        assert_eq!(got.error, None);
        let n_before = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(got.events, expected[..n_before], "cut at {cut}");
        assert_eq!(got.end.events, n_before as u64);
        let fully = run_whole(&doc).end.bytes as usize;
        let tail_ws = doc[cut..].iter().all(|b| b.is_ascii_whitespace());
        assert_eq!(
            got.end.complete,
            tail_ws && cut > 0 && cut <= fully,
            "cut at {cut}"
        );
        assert_eq!(got.end.truncated, !got.end.complete);
    }
}

#[test]
fn huge_top_level_values_are_skipped() {
    let mut doc = Vec::new();
    doc.extend_from_slice(br#"{"systemTraceEvents": ""#);
    for k in 0..300_000 {
        doc.extend_from_slice(if k % 7 == 0 {
            b"ab\\\"{[}]"
        } else {
            b"abcdefgh"
        });
    }
    doc.extend_from_slice(br#"", "obj": {"a": [1, {"b": "]}"}], "traceEvents": 5}, "n": -1.5e3, "#);
    doc.extend_from_slice(br#""traceEvents": [{"ph": "X", "dur": 1}], "z": null}"#);
    for chunk_len in [1usize << 16, 4093, 1 << 20] {
        let chunks: Vec<&[u8]> = doc.chunks(chunk_len).collect();
        let got = run_chunks(&chunks, Limits::EXACT);
        assert_eq!(got.error, None);
        assert_eq!(got.events.len(), 1);
        assert_eq!(got.events[0].dur, NumField::Ns(1000));
        assert!(got.end.complete);
    }
}

#[test]
fn large_events_are_read_in_one_pass() {
    let mut doc = Vec::from(&br#"[{"ph":"X","args":{"big":["#[..]);
    for k in 0..200_000 {
        if k > 0 {
            doc.push(b',');
        }
        doc.extend_from_slice(br#"{"s":"x\"}]"}"#);
    }
    doc.extend_from_slice(br#"]},"name":"after","dur":2.5},{"ph":"B","name":"n2"}]"#);
    let chunks: Vec<&[u8]> = doc.chunks(1000).collect();
    let got = run_chunks(&chunks, Limits::EXACT);
    assert_eq!(got.events.len(), 2);
    assert_eq!(got.events[0].name.as_deref(), Some(&b"after"[..]));
    assert_eq!(got.events[0].dur, NumField::Ns(2500));
    assert!(got.end.complete);
    // The event-size limit skips it, counted.
    let limits = Limits {
        max_event_bytes: 1 << 20,
        ..Limits::EXACT
    };
    let got = run_chunks(&chunks, limits);
    assert_eq!(got.events.len(), 1);
    assert_eq!(got.warnings.oversized_events, 1);
}

#[test]
fn control_characters_are_tolerated_and_counted() {
    let doc = b"[{\"name\":\"a\x01b\tc\",\"cat\":\"k\",\"args\":{\"x\":\"\x02\x1f\"}},{\"name\":\"\x0a\"}]";
    let got = check_splits(doc, 8, 3);
    assert_eq!(got.events.len(), 2);
    assert_eq!(got.events[0].name.as_deref(), Some(&b"a\x01b\tc"[..]));
    assert_eq!(got.events[1].name.as_deref(), Some(&b"\n"[..]));
    assert_eq!(got.warnings.control_chars, 5);
}

#[test]
fn bad_escapes_and_lone_surrogates() {
    let doc = br#"[{"name":"a\ud83d\ude80b\ud800c\udc00d\x\u12g"}]"#;
    let got = check_splits(doc, 8, 4);
    let want = "a🚀b\u{FFFD}c\u{FFFD}d\\x\u{FFFD}g";
    assert_eq!(got.events[0].name.as_deref(), Some(want.as_bytes()));
    assert_eq!(got.warnings.bad_escapes, 4);
}

#[test]
fn long_strings_are_cut_on_a_utf8_boundary() {
    let limits = Limits {
        max_string_bytes: 8,
        ..Limits::EXACT
    };
    let doc = "[{\"name\":\"abcdefg日本\",\"cat\":\"12345678\"}]".as_bytes();
    for_each_split(doc, 8, 5, |chunks| {
        let got = run_chunks(chunks, limits);
        assert_eq!(got.events[0].name.as_deref(), Some(&b"abcdefg"[..]));
        assert_eq!(got.events[0].cat.as_deref(), Some(&b"12345678"[..]));
        assert_eq!(got.warnings.truncated_strings, 1);
    });
}

#[test]
fn malformed_events_are_skipped_and_counted() {
    let doc = br#"{"traceEvents":[{"ph":"X","dur":1},{"ph" "X","name":"}"},{"a":},{"dur":12abc,"ph":"X"},5,"s",{"dur":3,}],}"#;
    let got = check_splits(doc, 8, 6);
    assert_eq!(got.error, None);
    assert_eq!(got.warnings.malformed_events, 2);
    assert_eq!(got.warnings.non_object_events, 2);
    assert_eq!(got.warnings.bad_numbers, 1);
    assert_eq!(got.warnings.trailing_commas, 2);
    let durs: Vec<NumField> = got.events.iter().map(|e| e.dur).collect();
    assert_eq!(
        durs,
        [NumField::Ns(1000), NumField::NotNumber, NumField::Ns(3000)]
    );
    assert!(got.end.complete);
}

#[test]
fn structural_errors_carry_the_byte_offset() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"  x",
            "expected `{` or `[` at the start of a trace at byte 2",
        ),
        (
            br#"{"a" 1}"#,
            "expected `:` after a key in the top-level object at byte 5",
        ),
        (
            br#"{"a":1 "b":2}"#,
            "expected `,` or `}` in the top-level object at byte 7",
        ),
        (
            br#"{5:1}"#,
            "expected a key string in the top-level object at byte 1",
        ),
        (
            br#"[{} {}]"#,
            "expected `,` or `]` between trace events at byte 4",
        ),
        (br#"[{},,{}]"#, "expected a trace event after `,` at byte 4"),
    ];
    for (doc, msg) in cases {
        for_each_split(doc, 4, 7, |chunks| {
            let got = run_chunks(chunks, Limits::EXACT);
            assert_eq!(
                got.error.map(|e| std::format!("{e}")).as_deref(),
                Some(*msg)
            );
            // Bytes consumed stop at the offending byte whatever the split (found by fuzzing).
            assert_eq!(got.end.bytes, got.error.unwrap().offset);
        });
        // A failed scanner stays failed.
        let mut sc = EventScanner::new(Limits::EXACT);
        let mut pos = 0;
        let first = loop {
            match sc.scan(&doc[pos..]) {
                Ok((_, nin)) if nin > 0 => pos += nin,
                Ok(_) => panic!("no error"),
                Err(e) => break e,
            }
        };
        assert_eq!(sc.scan(b"]"), Err(first));
    }
}

#[test]
fn forms_and_edge_documents() {
    let got = check_splits(b"[]", 2, 8);
    assert!(got.end.complete && got.end.bare_array && got.end.found_events_array);
    let got = check_splits(br#"{"displayTimeUnit":"ns"}"#, 2, 8);
    assert!(got.end.complete && !got.end.found_events_array);
    let got = check_splits(b"", 0, 8);
    assert!(got.end.truncated && got.end.bytes == 0);
    let got = check_splits(b"\xEF\xBB\xBF[{\"ph\":\"i\"}] \n x", 4, 8);
    assert_eq!(got.events.len(), 1);
    assert_eq!(got.warnings.trailing_bytes, 1);
    let got = check_splits(
        br#"{"traceEvents": {"a": 1}, "traceEvents": [{"ph":"X"}]}"#,
        4,
        8,
    );
    assert_eq!(got.warnings.non_array_trace_events, 1);
    assert_eq!(got.events.len(), 1);
    let got = check_splits(
        br#"[{"ph":"X","pid":"Browser","tid":-3,"id":null,"ts":"12.5","dur":"abc"}]"#,
        4,
        8,
    );
    let e = &got.events[0];
    assert_eq!(e.pid, IdField::Hash(scanner_fnv(b"Browser")));
    assert_eq!((e.tid, e.id), (IdField::Int(-3), IdField::Missing));
    assert_eq!((e.ts, e.dur), (NumField::Ns(12_500), NumField::NotNumber));
    let got = check_splits(
        br#"[{"ph":"X","dur":NaN},{"dur":-Infinity,"cat":5,"name":null}]"#,
        4,
        8,
    );
    assert_eq!(got.events[0].dur, NumField::NotNumber);
    assert_eq!(
        (got.events[1].cat.clone(), got.events[1].name.clone()),
        (None, None)
    );
    assert_eq!(got.warnings.bad_numbers, 0);
}

#[test]
fn works_over_caller_storage_without_alloc() {
    let mut storage = [0u8; 16];
    let mut sc = EventScanner::with_storage(Limits::BOUNDED, &mut storage[..]);
    let doc = br#"[{"cat":"0123456789","name":"n"}]"#;
    let (s, _) = sc.scan(doc).unwrap();
    assert_eq!(s, Scan::Event);
    assert_eq!(sc.event().cat, Some(&b"01234567"[..]));
    assert_eq!(sc.event().name, Some(&b"n"[..]));
}

#[test]
fn swar_digits_and_key_table() {
    use super::scanner_test_hooks::{eight, key, key_spaced};
    for v in [0u64, 1, 12_345_678, 99_999_999, 10_000_000, 7] {
        let t = std::format!("{v:08}");
        let x = u64::from_le_bytes(t.as_bytes().try_into().unwrap());
        assert_eq!(eight(x), Some(v));
    }
    for bad in [&b"1234567a"[..], b"/2345678", b":2345678", b"1234 678"] {
        assert_eq!(eight(u64::from_le_bytes(bad.try_into().unwrap())), None);
    }
    for (k, ok) in [
        ("\"ph\": 1", true),
        ("\"phx\": 1", false),
        ("\"args\":{}", true),
        ("\"scope\":\"", true),
        ("\"sc\":1234567", false),
        ("\"name\"    ", true),
        ("\"nam\"     ", false),
    ] {
        let padded = std::format!("{k}         ");
        assert_eq!(key(padded.as_bytes()), ok, "{k}");
    }
    // Whether `: ` follows the key's closing quote (the key table's second pattern).
    for (k, spaced) in [
        ("\"ph\": \"X\"", Some(true)),
        ("\"ph\":\"X\"", Some(false)),
        ("\"ph\" : 1", Some(false)),
        ("\"scope\": 1", Some(true)),
        ("\"scope\":  1", Some(true)),
        ("\"scope\":1", Some(false)),
        ("\"args\": {", Some(true)),
        ("\"dur\":\t1", Some(false)),
        ("\"durx\": 1", None),
    ] {
        let padded = std::format!("{k}         ");
        assert_eq!(key_spaced(padded.as_bytes()), spaced, "{k}");
    }
}

/// Regressions found by the fuzzer: the fast path and the resumable path must agree.
#[test]
fn fuzz_regressions_fast_and_resumable_paths_agree() {
    let docs: &[&[u8]] = &[
        br#"[{"ph":""","name":"a"},{"ph":"X","dur":1}]"#,
        br#"[{"ph":"\"","dur":1},{"ph":"""}]"#,
    ];
    for doc in docs {
        check_splits(doc, 16, 9);
    }
}

/// Scans `doc[..q]`, and when that scanner ends at an element boundary, `doc[q..]` with a
/// scanner resumed there: `Some` with the combined outcome, `None` when `q` is no boundary.
fn run_in_two_pieces(doc: &[u8], q: usize) -> Option<Outcome> {
    let first = run_chunks(&[&doc[..q]], Limits::EXACT);
    if first.error.is_some() {
        return None;
    }
    let mut a = EventScanner::new(Limits::EXACT);
    let mut pos = 0;
    while pos < q {
        pos += a.scan(&doc[pos..q]).unwrap().1;
    }
    let at = a.element_boundary()?;
    assert_eq!(at.offset, q as u64);
    let mut b = EventScanner::resume_at(Limits::EXACT, at);
    let mut events = first.events;
    let mut error = None;
    let mut pos = q;
    while pos < doc.len() {
        match b.scan(&doc[pos..]) {
            Ok((what, nin)) => {
                pos += nin;
                if what == Scan::Event {
                    events.push(Owned::of(&b.event()));
                }
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let end_b = b.finish();
    let mut warnings = first.warnings;
    warnings += b.warnings();
    Some(Outcome {
        events,
        end: ScanEnd {
            events: first.end.events + end_b.events,
            ..end_b
        },
        warnings,
        error,
    })
}

#[test]
fn a_scanner_resumed_at_an_element_boundary_continues_as_the_whole_scan() {
    let mut rng = Rng::from_env(7);
    let mut boundaries = 0;
    for round in 0..120 {
        let mut g = Gen {
            rng: Rng(rng.next_u64()),
            out: Vec::new(),
        };
        let n = 1 + rng.below(10) as usize;
        g.doc(n);
        let mut doc = g.out;
        // Some documents get a damaged byte, so that warnings, skipped events and errors
        // (with their offsets) are compared too.
        if round % 3 == 0 {
            let k = rng.below(doc.len() as u64) as usize;
            let bytes = b"{}[],:\"\\x0 \x01";
            doc[k] = bytes[rng.below(bytes.len() as u64) as usize];
        }
        let whole = run_whole(&doc);
        // Right after every comma (the guesses a parallel caller makes), and random places.
        let mut qs: Vec<usize> = (0..doc.len())
            .filter(|&i| doc[i] == b',')
            .map(|i| i + 1)
            .collect();
        qs.extend((0..20).map(|_| rng.below(doc.len() as u64 + 1) as usize));
        for q in qs {
            let Some(got) = run_in_two_pieces(&doc, q) else {
                continue;
            };
            boundaries += 1;
            let text = String::from_utf8_lossy(&doc);
            assert_eq!(got.events, whole.events, "q={q} {text}");
            assert_eq!(got.warnings, whole.warnings, "q={q} {text}");
            assert_eq!(got.error, whole.error, "q={q} {text}");
            assert_eq!(got.end, whole.end, "q={q} {text}");
        }
    }
    assert!(boundaries > 300, "{boundaries}");
    // Inside an event, a string, or before the events array: no boundary.
    let doc = br#"{"a": [1, 2], "traceEvents": [{"ph":"X", "name":"a,b"}, {"ph":"i"}]}"#;
    let at = |q: usize| {
        let mut s = EventScanner::new(Limits::EXACT);
        let mut pos = 0;
        while pos < q {
            pos += s.scan(&doc[pos..q]).unwrap().1;
        }
        s.element_boundary()
    };
    assert_eq!(at(9), None);
    assert_eq!(at(40), None);
    assert_eq!(at(50), None);
    assert_eq!(
        at(56),
        Some(ElementBoundary {
            offset: 56,
            bare: false
        })
    );
}

#[test]
fn a_nineteen_digit_pid_is_no_overflow() {
    // The pid fast path multiplied a 19th digit before rejecting it (a debug-build panic).
    let doc =
        br#"[{"ph": "X", "pid": 9999999999999999999, "tid": -99999999999999999999, "ts": 1}]"#;
    let got = check_splits(doc, 4, 3);
    assert_eq!(got.error, None);
    assert_eq!(got.events.len(), 1);
    assert!(!matches!(got.events[0].pid, IdField::Int(_)));
    use super::scanner_test_hooks::int;
    assert_eq!(
        int(b"999999999999999999,"),
        Some((999_999_999_999_999_999, 18))
    );
    assert_eq!(int(b"9999999999999999999,"), None);
    assert_eq!(int(b"-99999999999999999999 "), None);
}

// ---------- byte classes and searches (classify.rs) against per-byte oracles ----------

/// Random bytes weighted towards the ones the classes care about, plus high and control bytes.
fn class_soup(rng: &mut Rng, n: usize) -> Vec<u8> {
    const SPECIAL: &[u8] =
        b"\"\\{}[],: \n\t\r\x00\x01\x1f\x20\x21\x7f\x80\xbf\xc3\xff\x5b\x5d\x7b\x7d0aZ";
    (0..n)
        .map(|_| match rng.below(3) {
            0 => rng.next_u64() as u8,
            _ => SPECIAL[rng.below(SPECIAL.len() as u64) as usize],
        })
        .collect()
}

/// The definition of each search, byte by byte, written without the class table.
fn naive_hit(b: u8, class: u8) -> bool {
    use super::classify_test_hooks::{DELIM, SKIP, STR, WS};
    match class {
        WS => b > 0x20,
        STR => b == b'"' || b == b'\\' || b < 0x20,
        SKIP => matches!(b, b'"' | b'{' | b'}' | b'[' | b']'),
        DELIM => b <= 0x20 || matches!(b, b'"' | b'{' | b'}' | b'[' | b']' | b',' | b':'),
        _ => unreachable!(),
    }
}

#[test]
fn byte_searches_match_a_per_byte_oracle_at_every_start() {
    use super::classify_test_hooks::{CLASS, DELIM, SKIP, STR, WS, find, find_swar};
    for b in 0..=255u8 {
        for class in [STR, SKIP, DELIM] {
            assert_eq!(
                CLASS[b as usize] & class != 0,
                naive_hit(b, class),
                "{b:#x}"
            );
        }
        assert_eq!(CLASS[b as usize] & WS == 0, naive_hit(b, WS), "{b:#x}");
    }
    let mut rng = Rng::from_env(77);
    for round in 0..400 {
        let n = rng.below(150) as usize;
        let mut buf = class_soup(&mut rng, n);
        // Long runs without a hit, so that the 8- and 16-byte steps run several times.
        if round % 3 == 0 {
            let at = rng.below(n as u64 + 1) as usize;
            let run = rng.below(70) as usize;
            let fill = [b'a', b' ', 0xC3, b'7'][rng.below(4) as usize];
            buf.splice(at..at, std::iter::repeat_n(fill, run));
        }
        for class in [WS, STR, SKIP, DELIM] {
            for i in 0..=buf.len() {
                let want = (i..buf.len())
                    .find(|&j| naive_hit(buf[j], class))
                    .unwrap_or(buf.len());
                assert_eq!(
                    find(&buf, i, class),
                    want,
                    "class {class} at {i} in {buf:?}"
                );
                assert_eq!(
                    find_swar(&buf, i, class),
                    want,
                    "swar {class} at {i} in {buf:?}"
                );
            }
        }
    }
}

/// The skip of a nested value, one byte at a time: the index after the closing bracket, or
/// `None` at the end of the input or on a control character inside a string.
fn naive_skip_container(s: &[u8], i: usize) -> Option<usize> {
    let (mut depth, mut in_str, mut esc) = (1usize, false, false);
    for (j, &b) in s.iter().enumerate().skip(i + 1) {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            } else if b < 0x20 {
                return None;
            }
        } else {
            match b {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[test]
fn container_skip_matches_a_per_byte_oracle() {
    use super::classify_test_hooks::{skip_container, skip_nested_tokens};
    let mut rng = Rng::from_env(78);
    const PIECES: &[&[u8]] = &[
        b"\"External id\": 450527,",
        b"\"a\\\"b\"",
        b"\"\\\\\"",
        b"\"x{[y\"",
        b"\"}]\"",
        b"{",
        b"}",
        b"[",
        b"]",
        b"\n      ",
        b"\"ctl\x01\"",
        b"\"\xc3\xa9\xe2\x82\xac\"",
        b"12.5, ",
        b"\"",
        b"\\",
        b"\"long string long string long string long string long string long\"",
    ];
    for round in 0..3000 {
        let mut doc = vec![[b'{', b'['][rng.below(2) as usize]];
        let target = rng.below(if round % 4 == 0 { 600 } else { 160 }) as usize;
        while doc.len() < target {
            if rng.below(8) == 0 {
                let n = 1 + rng.below(6) as usize;
                doc.extend(class_soup(&mut rng, n));
            } else {
                doc.extend_from_slice(PIECES[rng.below(PIECES.len() as u64) as usize]);
            }
        }
        // Close what is open now and then, and pad so that the 64-byte blocks run.
        if rng.below(2) == 0 {
            doc.extend_from_slice(b"\"}}]}");
        }
        let pad = rng.below(100) as usize;
        doc.extend(std::iter::repeat_n(b' ', pad));
        // Every place a bracket could open, so the block boundaries fall everywhere.
        for i in 0..doc.len() {
            if doc[i] != b'{' && doc[i] != b'[' {
                continue;
            }
            let want = naive_skip_container(&doc, i);
            assert_eq!(
                skip_container(&doc, i),
                want,
                "at {i} in {:?}",
                String::from_utf8_lossy(&doc)
            );
            assert_eq!(skip_nested_tokens(&doc, i + 1, 1), want, "tokens at {i}");
        }
    }
}

/// A few events in the pretty-printed Kineto layout (the layout the fast path is tuned for).
fn kineto_layout_doc(rng: &mut Rng, events: usize) -> Vec<u8> {
    let mut out = Vec::from(&b"{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n"[..]);
    for k in 0..events {
        if k > 0 {
            out.extend_from_slice(b",\n");
        }
        let ts = 1_712_195_508_526_029u64 + rng.below(1_000_000);
        let ev = match rng.below(4) {
            0 => std::format!(
                "  {{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::div\", \"pid\": 1102, \"tid\": 1102,\n    \"ts\": {ts}.{:03}, \"dur\": {}.{:03},\n    \"args\": {{\n      \"External id\": {},\"Sequence number\": 29877, \"Input Dims\": [[2391, 1583], [1787, 3955], []], \"Input type\": [\"float\", \"float\", \"Scalar\"]\n    }}\n  }}",
                rng.below(1000),
                rng.below(100),
                rng.below(1000),
                rng.below(1_000_000)
            ),
            1 => std::format!(
                "  {{\n    \"ph\": \"s\", \"id\": {}, \"pid\": 1102, \"tid\": 1102, \"ts\": {ts}.{:03},\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }}",
                rng.below(1_000_000),
                rng.below(1000)
            ),
            2 => std::format!(
                "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}>(int)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": {ts}.{:03}, \"dur\": {}.{:03},\n    \"args\": {{\n      \"External id\": 87222,      \"queued\": 0, \"device\": 0, \"context\": 1,      \"stream\": 7, \"correlation\": 200356,      \"registers per thread\": 122,      \"shared memory\": 32768,      \"blocks per SM\": 0.429000,      \"grid\": [128, 98, 1],      \"block\": [512, 1, 1],      \"est. achieved occupancy %\": 66\n    }}\n  }}",
                rng.below(1000),
                rng.below(10_000),
                rng.below(1000)
            ),
            _ => std::format!(
                "  {{\n    \"ph\": \"f\", \"id\": {}, \"pid\": 0, \"tid\": 7, \"ts\": {ts}.{:03},\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }}",
                rng.below(1_000_000),
                rng.below(1000)
            ),
        };
        out.extend_from_slice(ev.as_bytes());
    }
    out.extend_from_slice(b"\n  ],\n  \"traceName\": \"x\"\n}\n");
    out
}

/// The fast path (whole input) and the resumable path (byte by byte, random splits) agree on
/// Kineto-layout documents with a few bytes changed, inserted or removed anywhere: events,
/// fields, warnings, errors and offsets.
#[test]
fn mutated_kineto_layout_fast_and_resumable_paths_agree() {
    const BYTES: &[u8] = b"\"\\{}[],: \n\t\x01\x00-.0123456789eE+xu\xc3\xa9\xff";
    let mut rng = Rng::from_env(79);
    for round in 0..400 {
        let events = 1 + rng.below(12) as usize;
        let mut doc = kineto_layout_doc(&mut rng, events);
        if round > 0 {
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(doc.len() as u64) as usize;
                let b = BYTES[rng.below(BYTES.len() as u64) as usize];
                match rng.below(3) {
                    0 => doc[at] = b,
                    1 => doc.insert(at, b),
                    _ => {
                        doc.remove(at);
                    }
                }
            }
        }
        let whole = check_splits(&doc, 2, round);
        if round == 0 {
            assert_eq!(whole.events.len(), events);
            assert!(whole.end.complete);
        }
    }
}

/// The fast path takes a gap (`, "key": `) in one compare where an earlier event taught it;
/// each variant below differs from the taught events just around a gap, and must give what
/// the resumable path gives.
#[test]
fn learned_gaps_are_taken_only_where_parsing_agrees() {
    let teach = r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#;
    let variants = [
        r#"{"ph": "f", "id": 7, "bp":  , "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp":  "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat":  "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args":  , "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": , "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts":  , "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur":	2}"#,
        r#"{"ph": "f", "id":  7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2 }"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": }"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5,, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5 , "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "nam": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2, }"#,
        r#"{ "ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph":  "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "X", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2, "tid": 3}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2, "x"}"#,
        r#"{"ph": "f", "id": 7, "bp": "e", "cat": "ac2g", "name": "n", "args": {"a": 1}, "ts": 1.5, "dur": 2,
"x": 1}"#,
    ];
    for variant in variants {
        let doc = std::format!("[{teach},\n{teach},\n{teach},\n{variant},\n{teach},\n{teach}]");
        let whole = check_splits(doc.as_bytes(), 2, 5);
        assert!(whole.end.complete, "{variant}");
    }
}

/// Counter events as PyTorch's profiler writes them (string `pid`, the value under `""`) and as
/// flinch-trace's `--perfetto` writes them (`{"W": v}`), interleaved with kernels whose `args`
/// hold numbers too: each counter's number is read, in every split, whatever the key order; no
/// other event carries one. Bad values are told apart.
#[test]
fn counter_args_in_every_split() {
    let doc = br#"{"traceEvents":[
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"":5,"grid":[1,2]}},
{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","ts":10.5,"args":{"":212.5}},
{"name":"SM Active (%)","args":{"":37},"pid":"GPU 0 Counters","ts":11,"ph":"C"},
{"ph":"C","cat":"flinch_telemetry","name":"GPU 0 power","pid":1,"tid":0,"ts":12.000,"args":{"W":99.25}},
{"ph":"C","name":"Power (W)","pid":"GPU 1 Counters","ts":13,"args":{"":NaN}},
{"ph":"C","name":"Power (W)","pid":"GPU 1 Counters","ts":14,"args":{"":"x"}},
{"ph":"C","name":"Power (W)","pid":"GPU 1 Counters","ts":15},
{"ph":"i","name":"m","pid":0,"ts":16,"args":{"":1}}
]}"#;
    let want = [
        ArgValue::Missing,
        ArgValue::Number(212.5),
        ArgValue::Number(37.0),
        ArgValue::Number(99.25),
        ArgValue::NotFinite,
        ArgValue::NotNumber,
        ArgValue::Missing,
        ArgValue::Missing,
    ];
    for_each_split(doc, 50, 31, |chunks| {
        let out = run_chunks(chunks, Limits::NATIVE);
        assert!(out.error.is_none() && out.end.complete);
        let got: Vec<ArgValue> = out.events.iter().map(|e| e.arg).collect();
        assert_eq!(got, want);
    });
}
