//! End-to-end tests of `flinch-trace trace --json --mergeable` and `flinch-trace merge` on the
//! real traces in tests/traces: the section adds one key and changes nothing else; merges of the
//! per-file JSON are the same in any grouping and order, also through stdin; bad summaries are
//! errors naming the file and the key.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

mod common;
use common::{bin, repo};

fn hta() -> Vec<PathBuf> {
    let dir = repo().join("tests/traces/HolisticTraceAnalysis");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    out.sort();
    assert!(out.len() >= 5, "fixtures missing");
    out
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn trace(path: &Path, mergeable: bool) -> String {
    let mut c = bin();
    c.arg("trace").arg("--json").arg(path);
    if mergeable {
        c.arg("--mergeable");
    }
    ok(c.output().unwrap())
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flinch-merge-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn merge(files: &[&Path]) -> String {
    ok(bin()
        .arg("merge")
        .arg("--json")
        .args(files)
        .output()
        .unwrap())
}

#[test]
fn section_adds_one_key_and_merges_in_any_grouping() {
    let mut ranks = Vec::new();
    let mut plain = Vec::new();
    for (k, f) in hta().iter().enumerate() {
        let with = trace(f, true);
        let without = trace(f, false);
        // The default output, then one more key.
        let head = without.trim_end().strip_suffix('}').unwrap().trim_end();
        assert!(with.starts_with(head), "{}", f.display());
        assert!(with[head.len()..].starts_with(",\n  \"mergeable\": {"));
        plain.push(serde_json::from_str::<Value>(&without).unwrap());
        ranks.push(tmp(&format!("r{k}.json"), &with));
    }
    let all: Vec<&Path> = ranks.iter().map(PathBuf::as_path).collect();
    let flat = merge(&all);
    // Reversed, and in two groups merged first.
    let rev: Vec<&Path> = all.iter().rev().copied().collect();
    assert_eq!(merge(&rev), flat);
    let a = tmp("a.json", &merge(&all[..2]));
    let b = tmp("b.json", &merge(&all[2..]));
    assert_eq!(merge(&[&b, &a]), flat);
    // `trace --json --mergeable` of every file at once prints an array: merged the same.
    let files = hta();
    let many = ok(bin()
        .args(["trace", "--json", "--mergeable"])
        .args(&files)
        .output()
        .unwrap());
    let array = tmp("all.json", &many);
    assert_eq!(merge(&[&array]), flat);
    // One from stdin.
    let mut child = bin()
        .arg("merge")
        .arg("--json")
        .args(&all[1..])
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let first = std::fs::read(all[0]).unwrap();
    child.stdin.take().unwrap().write_all(&first).unwrap();
    assert_eq!(ok(child.wait_with_output().unwrap()), flat);

    let m: Value = serde_json::from_str(&flat).unwrap();
    let sources = m["ranks"]["sources"].as_array().unwrap();
    assert_eq!(sources.len(), plain.len());
    let mut events = 0;
    for (k, src) in sources.iter().enumerate() {
        let p = plain.iter().find(|p| &p["source"] == src).unwrap();
        events += p["totals"]["events"].as_u64().unwrap();
        assert_eq!(
            m["totals"]["busy_union_us_by_rank"][k],
            p["totals"]["busy_union_us"]
        );
    }
    assert_eq!(m["totals"]["events"].as_u64().unwrap(), events);
    // The text view lists every rank.
    let text = ok(bin().arg("merge").args(&all).output().unwrap());
    assert!(text.starts_with(&format!("{} ranks:", all.len())), "{text}");
}

#[test]
fn bad_summaries_name_the_file_and_key() {
    let f = &hta()[0];
    let plain = tmp("plain.json", &trace(f, false));
    let good = tmp("good.json", &trace(f, true));
    let out = bin().arg("merge").arg(&good).arg(&plain).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plain.json") && err.contains("--mergeable"),
        "{err}"
    );
    let mut v: Value = serde_json::from_str(&trace(f, true)).unwrap();
    v["mergeable"]["ops"][1]["min_ns"] = Value::from(-3);
    let bad = tmp("bad.json", &v.to_string());
    let out = bin().arg("merge").arg(&good).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json: mergeable.ops[1].min_ns: invalid value"),
        "{err}"
    );
    let cut = tmp("cut.json", "{\"mergeable\": {\"version\": 1,");
    let out = bin().arg("merge").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut.json"));
    let out = bin()
        .arg("merge")
        .arg("/nonexistent/x.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.json"));
    // Stdin twice is a usage error.
    let out = bin().args(["merge", "-", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // --mergeable needs --json.
    let out = bin()
        .arg("trace")
        .arg("--mergeable")
        .arg(f)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// The same file named twice (or through a hard link) is merged twice with a warning on stderr
/// naming both, and the output's `warnings` name the rank merged twice; a summary that disagrees
/// with itself (an op listed twice) is refused naming the file and the key. Files past the
/// read-whole size are parsed as they are read (an array's summaries folded one at a time) with
/// the same output and errors.
#[test]
fn repeated_files_warn_and_inconsistent_summaries_are_refused() {
    let f = &hta()[0];
    let g = &hta()[1];
    let text = trace(f, true);
    let a = tmp("rep-a.json", &text);
    let b = tmp("rep-b.json", &trace(g, true));
    let link = a.with_file_name("rep-link.json");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&a, &link).unwrap();
    let array = tmp("rep-array.json", &format!("[{text}, {}]", trace(g, true)));
    for whole in ["", "1"] {
        let run = |files: &[&Path]| {
            let mut c = bin();
            c.arg("merge").arg("--json");
            if !whole.is_empty() {
                c.arg("--read-whole-max-bytes").arg(whole);
            }
            c.args(files);
            c.output().unwrap()
        };
        let out = run(&[&a, &b, &link]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("warning: ")
                && err.contains("rep-link.json is the same file as ")
                && err.contains("rep-a.json"),
            "{err}"
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let w = v["warnings"].as_array().unwrap();
        assert!(
            w.iter().any(|w| w
                .as_str()
                .unwrap()
                .contains("the same rank summary is merged 2 times")),
            "{w:?}"
        );
        let once = run(&[&array]);
        assert_eq!(ok(once), ok(run(&[&a, &b])));
        // An op listed twice.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let op = v["mergeable"]["ops"][0].clone();
        v["mergeable"]["ops"].as_array_mut().unwrap().push(op);
        let n = v["mergeable"]["ops"].as_array().unwrap().len();
        let bad = tmp("rep-dup.json", &format!("[{text}, {v}]"));
        let out = run(&[&b, &bad]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("rep-dup.json: [1].mergeable.ops[{}]: op (", n - 1))
                && err.contains("is listed twice"),
            "{err}"
        );
        // A key of the wrong type, inside an array's second element: the key path.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["mergeable"]["ops"][1]["n"] = Value::from("x");
        let bad = tmp("rep-type.json", &format!("[{text}, {v}]"));
        let out = run(&[&bad]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("rep-type.json: [1].mergeable.ops[1].n: invalid type"),
            "{err}"
        );
    }
}

/// `merge --json` streams the document through a formatter that writes the section on one line;
/// the core's `merge_json` composes the same document with the section as a raw value: the same
/// bytes (and what Python's `merge_json` returns), 2-space indented with the section last on one
/// line.
#[test]
fn streamed_merge_json_equals_the_cores_text() {
    let texts: Vec<String> = hta().iter().take(3).map(|f| trace(f, true)).collect();
    let files: Vec<PathBuf> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| tmp(&format!("stream-{i}.json"), t))
        .collect();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let cli = merge(&paths);
    let core = flinch_core::merge::merge_json(&texts).unwrap();
    assert_eq!(cli, format!("{core}\n"));
    let lines: Vec<&str> = cli.lines().collect();
    let n = lines.len();
    assert_eq!(lines[n - 1], "}");
    assert!(
        lines[n - 2].starts_with("  \"mergeable\": {\"version\":"),
        "{}",
        lines[n - 2]
    );
    let v: Value = serde_json::from_str(&cli).unwrap();
    assert_eq!(
        serde_json::to_string(&v["mergeable"]).unwrap().len(),
        lines[n - 2].len() - "  \"mergeable\": ".len()
    );
    assert!(lines[1].starts_with("  \""), "{}", lines[1]);
}
