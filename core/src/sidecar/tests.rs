use std::string::String;
use std::vec::Vec;

use serde::Deserialize;

use super::*;
use crate::testutil::{Rng, for_each_split};

/// The rule read by serde_json into the fields it names: the oracle.
fn oracle(sidecar_json: &[u8]) -> Option<PowerSource> {
    #[derive(Deserialize)]
    struct SidecarView {
        gpus: Vec<GpuView>,
    }
    #[derive(Deserialize)]
    struct GpuView {
        gpu_power_w_source: PowerSource,
    }
    let view: SidecarView = serde_json::from_slice(sidecar_json).ok()?;
    view.gpus
        .iter()
        .map(|g| g.gpu_power_w_source)
        .find(|s| *s != PowerSource::Unknown)
}

/// serde_json also reads a struct from an array and an enum from `{"variant": null}`; the rule
/// does not (the recorder writes neither).
fn uses_serde_only_forms(text: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(text) else {
        return false;
    };
    let gpus = v.get("gpus").and_then(|g| g.as_array());
    v.is_array()
        || gpus.is_some_and(|g| {
            g.iter()
                .any(|x| x.is_array() || x.get("gpu_power_w_source").is_some_and(|s| s.is_object()))
        })
}

fn ps(text: &str) -> Option<PowerSource> {
    let got = power_source(text.as_bytes());
    assert_eq!(got, oracle(text.as_bytes()), "{text:?}");
    got
}

#[test]
fn the_first_gpu_that_names_its_source_decides() {
    assert_eq!(
        ps(r#"{"tool":"flinch-trace","gpus":[{"index":0,"gpu_power_w_source":"instant"}]}"#),
        Some(PowerSource::Instant)
    );
    assert_eq!(
        ps(
            r#"{"gpus":[{"gpu_power_w_source":"unknown"},{"gpu_power_w_source":"average"},{"gpu_power_w_source":"instant"}]}"#
        ),
        Some(PowerSource::Average)
    );
    // No GPU (a host-only recording), or none that says.
    assert_eq!(ps(r#"{"gpus":[]}"#), None);
    assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":"unknown"}]}"#), None);
    // Not a sidecar: not JSON, no `gpus`, a GPU without the key, a value of another type
    // or name. A "power" key elsewhere is not read.
    assert_eq!(ps("not json"), None);
    assert_eq!(ps(""), None);
    assert_eq!(ps(r#"{"gpu_power_w_source":"instant"}"#), None);
    assert_eq!(
        ps(r#"{"gpus":[{"index":0},{"gpu_power_w_source":"instant"}]}"#),
        None
    );
    assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":"INSTANT"}]}"#), None);
    assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":186}]}"#), None);
    assert_eq!(ps(r#"{"gpus":{"gpu_power_w_source":"instant"}}"#), None);
    assert_eq!(
        ps(r#"{"power_source":"average","gpus":[{"gpu_power_w_source":"instant"}]}"#),
        Some(PowerSource::Instant)
    );
    // Trailing bytes after the object: not a JSON document.
    assert_eq!(ps(r#"{"gpus":[]} x"#), None);
    assert_eq!(ps(" {\"gpus\":[]} \n"), None);
}

#[test]
fn keys_twice_escapes_and_strings_are_read_as_serde_json_reads_them() {
    let yes = Some(PowerSource::Average);
    // `gpus` or a GPU's source twice.
    assert_eq!(ps(r#"{"gpus":[],"gpus":[]}"#), None);
    assert_eq!(
        ps(r#"{"gpus":[{"gpu_power_w_source":"average","gpu_power_w_source":"average"}]}"#),
        None
    );
    // Escapes in the keys and the source are decoded.
    assert_eq!(
        ps(r#"{"gp\u0075s":[{"gpu_power_w_sourc\u0065":"aver\u0061ge"}]}"#),
        yes
    );
    assert_eq!(
        ps(r#"{"gpus\n":[],"gpus":[{"gpu_power_w_source":"average"}]}"#),
        yes
    );
    // Surrogates: paired in the read strings, anything in the skipped ones.
    assert_eq!(
        ps(r#"{"\ud83d\ude00":1,"gpus":[{"gpu_power_w_source":"average"}]}"#),
        yes
    );
    assert_eq!(ps(r#"{"\ud83d":1,"gpus":[]}"#), None);
    assert_eq!(ps(r#"{"\ude00":1,"gpus":[]}"#), None);
    assert_eq!(ps(r#"{"\ud83dx":1,"gpus":[]}"#), None);
    assert_eq!(ps(r#"{"\ud83d\n":1,"gpus":[]}"#), None);
    assert_eq!(ps(r#"{"\ud83d\u0041":1,"gpus":[]}"#), None);
    assert_eq!(
        ps(r#"{"x":"\ud83d","gpus":[{"gpu_power_w_source":"average"}]}"#),
        yes
    );
    assert_eq!(
        ps(r#"{"x":{"\ude00":0},"gpus":[{"gpu_power_w_source":"average"}]}"#),
        yes
    );
    // Escapes and control characters are checked everywhere.
    assert_eq!(ps(r#"{"x":"\q","gpus":[]}"#), None);
    assert_eq!(ps(r#"{"x":"\u12g4","gpus":[]}"#), None);
    assert_eq!(ps("{\"x\":\"a\tb\",\"gpus\":[]}"), None);
    // UTF-8: checked in the read strings only.
    let bytes = |b: &[u8]| (power_source(b), oracle(b));
    assert_eq!(bytes(b"{\"\xff\":1,\"gpus\":[]}"), (None, None));
    assert_eq!(bytes(b"{\"\xc3\xa9\":1,\"gpus\":[]}"), (None, None));
    let gpu = b"\"gpus\":[{\"gpu_power_w_source\":\"average\"}]}";
    for key in [
        &b"\xc3\xa9"[..],
        b"\xe2\x9c\x93",
        b"\xf0\x9f\x98\x80",
        b"\xed\x9f\xbf",
    ] {
        let text = [b"{\"", key, b"\":1,", gpu].concat();
        assert_eq!(bytes(&text), (yes, yes), "{text:?}");
    }
    for key in [
        &b"\xc0\x80"[..],
        b"\xed\xa0\x80",
        b"\xe0\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xc3",
    ] {
        let text = [b"{\"", key, b"\":1,", gpu].concat();
        assert_eq!(bytes(&text), (None, None), "{text:?}");
    }
    let text = [&b"{\"x\":\"\xff\xc0\","[..], gpu].concat();
    assert_eq!(bytes(&text), (yes, yes));
}

#[test]
fn numbers_literals_and_nesting() {
    let tail = r#""gpus":[{"gpu_power_w_source":"instant"}]}"#;
    for v in [
        "0",
        "-0",
        "12",
        "-1.5e+3",
        "0.25E-2",
        "1e9",
        "true",
        "false",
        "null",
        "[]",
        "{}",
        "[1,[2,{\"a\":[]}]]",
    ] {
        assert_eq!(
            ps(&std::format!("{{\"x\":{v},{tail}")),
            Some(PowerSource::Instant),
            "{v}"
        );
    }
    for v in [
        "01", "-", "1.", ".5", "1e", "1e+", "+1", "tru", "nul", "True", "[1,]", "{\"a\"}", "[}",
        "1 2", "",
    ] {
        assert_eq!(ps(&std::format!("{{\"x\":{v},{tail}")), None, "{v}");
    }
    // Deep nesting of what is not read: up to MAX_DEPTH levels in all.
    let deep = |n: usize| std::format!("{{\"x\":{}{},{tail}", "[".repeat(n), "]".repeat(n));
    assert_eq!(
        power_source(deep(MAX_DEPTH as usize - 2).as_bytes()),
        Some(PowerSource::Instant)
    );
    assert_eq!(power_source(deep(MAX_DEPTH as usize - 1).as_bytes()), None);
    assert_eq!(power_source(deep(100_000).as_bytes()), None);
}

#[test]
fn the_bundled_sidecars() {
    let read = |name: &str| {
        std::fs::read(std::format!(
            "{}/../examples/{name}/trace.csv.meta.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let h200 = read("h200");
    assert_eq!(power_source(&h200), Some(PowerSource::Instant));
    assert_eq!(power_source(&read("host-only")), None);
    for_each_split(&h200, 20, 0x5ca4, |chunks| {
        let mut scan = PowerSourceScanner::new();
        for c in chunks {
            scan.push(c);
        }
        assert_eq!(scan.finish(), Some(PowerSource::Instant));
    });
}

/// A random JSON value of the kinds a sidecar holds.
fn value(rng: &mut Rng, depth: u32, out: &mut String) {
    const SCALARS: &[&str] = &[
        "1",
        "-0.5e3",
        "0",
        "true",
        "false",
        "null",
        "\"x\"",
        "\"\\u0041\\n\"",
        "\"é\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"instant\"",
    ];
    match if depth > 3 { 0 } else { rng.below(4) } {
        0 | 1 => out.push_str(SCALARS[rng.below(SCALARS.len() as u64) as usize]),
        2 => {
            out.push('[');
            for i in 0..rng.below(3) {
                if i > 0 {
                    out.push(',');
                }
                value(rng, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..rng.below(3) {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(["\"a\":", "\"gpus\":", "\"b c\" : "][rng.below(3) as usize]);
                value(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
}

/// A random sidecar: the recorder's shape with other keys around, sometimes broken.
fn sidecar(rng: &mut Rng) -> String {
    const SOURCES: &[&str] = &[
        "\"instant\"",
        "\"average\"",
        "\"unknown\"",
        "\"Instant\"",
        "186",
        "null",
        "\"aver\\u0061ge\"",
    ];
    let mut out = String::from("{");
    let mut keys: Vec<String> = Vec::new();
    for _ in 0..rng.below(3) {
        let mut kv = String::from("\"tool\":");
        value(rng, 1, &mut kv);
        keys.push(kv);
    }
    if rng.below(8) != 0 {
        let mut gpus = String::from("\"gpus\":[");
        for g in 0..rng.below(4) {
            if g > 0 {
                gpus.push(',');
            }
            let mut fields: Vec<String> = Vec::new();
            if rng.below(8) != 0 {
                fields.push(std::format!(
                    "\"gpu_power_w_source\":{}",
                    SOURCES[rng.below(SOURCES.len() as u64) as usize]
                ));
            }
            for _ in 0..rng.below(3) {
                let mut kv = String::from("\"index\":");
                value(rng, 3, &mut kv);
                fields.push(kv);
            }
            let n = fields.len();
            let at = rng.below(n as u64 + 1) as usize;
            fields.rotate_left(at.min(n));
            gpus.push('{');
            gpus.push_str(&fields.join(","));
            gpus.push('}');
        }
        gpus.push(']');
        keys.insert(rng.below(keys.len() as u64 + 1) as usize, gpus);
    }
    out.push_str(&keys.join(","));
    out.push('}');
    // Sometimes broken: a byte cut, changed or added.
    let mut bytes = out.into_bytes();
    match rng.below(6) {
        0 if !bytes.is_empty() => {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes.truncate(at);
        }
        1 if !bytes.is_empty() => {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] = b"{}[],:\" x0\\"[rng.below(11) as usize];
        }
        2 => {
            let at = rng.below(bytes.len() as u64 + 1) as usize;
            bytes.insert(at, b"{}[],:\" x0\\"[rng.below(11) as usize]);
        }
        _ => {}
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// Random sidecar-like documents: the scanner, in any split, agrees with serde_json reading
/// the fields.
#[test]
fn random_documents_agree_with_serde_json_in_every_split() {
    let mut rng = Rng::from_env(0x51de);
    let (mut some, mut none) = (0, 0);
    for round in 0..20_000u64 {
        let text = sidecar(&mut rng);
        let b = text.as_bytes();
        if uses_serde_only_forms(b) {
            continue;
        }
        let want = oracle(b);
        if want.is_some() {
            some += 1;
        } else {
            none += 1;
        }
        assert_eq!(power_source(b), want, "{text:?}");
        if round % 50 == 0 {
            for_each_split(b, 3, round, |chunks| {
                let mut scan = PowerSourceScanner::new();
                chunks.iter().for_each(|c| scan.push(c));
                assert_eq!(scan.finish(), want, "{text:?}");
            });
        }
    }
    assert!(some > 1000 && none > 1000, "{some} {none}");
}
