//! JSON Lines reading as the reference's `read_lines` does it (universal newlines, blank lines
//! skipped, `NaN`/`Infinity` accepted), except that a malformed line is skipped and reported
//! instead of failing the whole file; plus the bounded warning lists the output carries.
use std::io::BufRead;

use flinch_core::telemetry::Num;
use serde_json::Value;

/// Line numbers listed per warning kind; the rest are only counted.
const LINES_LISTED: usize = 5;

/// Warnings of one file, grouped by kind, each with a count and its first line numbers.
#[derive(Default, Debug)]
pub struct Warnings {
    kinds: Vec<(String, usize, Vec<usize>)>,
    plain: Vec<String>,
}

impl Warnings {
    /// Counts one occurrence of `kind` at `line` (1-based).
    pub fn at_line(&mut self, kind: &str, line: usize) {
        match self.kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => {
                k.1 += 1;
                if k.2.len() < LINES_LISTED {
                    k.2.push(line);
                }
            }
            None => self.kinds.push((kind.to_owned(), 1, vec![line])),
        }
    }

    /// Adds a warning that is not tied to lines.
    pub fn note(&mut self, text: String) {
        self.plain.push(text);
    }

    /// One line per warning, e.g. `r-host/telemetry.jsonl: skipped, missing unix: 3 lines (4, 9, 12)`.
    pub fn render(&self, file: &str) -> Vec<String> {
        let mut out: Vec<String> = self.plain.clone();
        for (kind, count, lines) in &self.kinds {
            let listed: Vec<String> = lines.iter().map(usize::to_string).collect();
            let more = if *count > lines.len() { ", …" } else { "" };
            let noun = if *count == 1 { "line" } else { "lines" };
            out.push(format!(
                "{file}: {kind}: {count} {noun} ({}{more})",
                listed.join(", ")
            ));
        }
        out
    }
}

/// Longest JSON line read, in bytes: a longer line is skipped (read through, not held) and
/// counted with its line number, so memory stays bounded whatever the file holds.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads `reader` as JSON Lines, calling `f(line_number, value, warnings)` for each parsed line; lines
/// that are not JSON, or longer than [`MAX_LINE_BYTES`], are counted in `warnings`. Lines end at
/// `\n`, `\r\n` or a lone `\r` (Python's universal newlines); whitespace-only lines are skipped.
pub fn for_each_line(
    reader: impl BufRead,
    warnings: &mut Warnings,
    f: impl FnMut(usize, Value, &mut Warnings),
) -> std::io::Result<()> {
    for_each_line_limited(reader, MAX_LINE_BYTES, warnings, f)
}

/// [`for_each_line`] with a given longest line.
pub fn for_each_line_limited(
    mut reader: impl BufRead,
    max_line_bytes: usize,
    warnings: &mut Warnings,
    mut f: impl FnMut(usize, Value, &mut Warnings),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut too_long = false;
    // The last line ended at a `\r`: a `\n` right after it ends no other line.
    let mut after_cr = false;
    let mut line_no = 0;
    let mut end_line = |line: &mut Vec<u8>, too_long: &mut bool, warnings: &mut Warnings| {
        line_no += 1;
        if *too_long {
            warnings.at_line(
                &format!("line over {max_line_bytes} bytes skipped"),
                line_no,
            );
        } else if !is_blank(line) {
            match parse_line_noting(line) {
                Ok((v, out_of_range)) => {
                    if out_of_range {
                        warnings.at_line(OUT_OF_RANGE, line_no);
                    }
                    f(line_no, v, warnings)
                }
                Err(e) => warnings.at_line(&format!("malformed JSON skipped ({e})"), line_no),
            }
        }
        line.clear();
        *too_long = false;
    };
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if !line.is_empty() || too_long {
                end_line(&mut line, &mut too_long, warnings);
            }
            return Ok(());
        }
        let mut pos = 0;
        if after_cr && buf[0] == b'\n' {
            pos = 1;
        }
        after_cr = false;
        while pos < buf.len() {
            let rest = &buf[pos..];
            let end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
            let text = &rest[..end.unwrap_or(rest.len())];
            if line.len() + text.len() > max_line_bytes {
                too_long = true;
                line.clear();
            } else if !too_long {
                line.extend_from_slice(text);
            }
            let Some(end) = end else {
                pos = buf.len();
                break;
            };
            end_line(&mut line, &mut too_long, warnings);
            pos += end + 1;
            if rest[end] == b'\r' {
                if pos < buf.len() {
                    if buf[pos] == b'\n' {
                        pos += 1;
                    }
                } else {
                    after_cr = true;
                }
            }
        }
        reader.consume(pos);
    }
}

/// The warning for lines holding a number beyond the range of a float.
const OUT_OF_RANGE: &str = "number out of range (beyond ±1.8e308): read as infinity, as Python's json does, so left out like NaN";

fn is_blank(line: &[u8]) -> bool {
    match std::str::from_utf8(line) {
        Ok(s) => s
            .chars()
            .all(|c| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)),
        Err(_) => false,
    }
}

/// Parses one line; on failure retries with `NaN`, `Infinity` and `-Infinity` tokens (which
/// Python's json accepts) outside strings replaced by `null`. Every figure treats a
/// non-finite number like null (statistics drop both), so this is silent.
pub fn parse_line(line: &[u8]) -> Result<Value, String> {
    parse_line_noting(line).map(|(v, _)| v)
}

/// [`parse_line`], also saying whether a number beyond the range of a float was met (Python
/// reads it as infinity; here it is null, as NaN and Infinity are).
fn parse_line_noting(line: &[u8]) -> Result<(Value, bool), String> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => Ok((v, false)),
        Err(e) => {
            let msg = match e.classify() {
                serde_json::error::Category::Eof => "line ends inside a value".to_owned(),
                _ if e.to_string().starts_with("number out of range") => {
                    "number out of range".to_owned()
                }
                _ => "not valid JSON".to_owned(),
            };
            match replace_non_finite(line) {
                Some((fixed, out_of_range)) => serde_json::from_slice::<Value>(&fixed)
                    .map(|v| (v, out_of_range))
                    .map_err(|_| msg),
                None => Err(msg),
            }
        }
    }
}

/// Outside strings: `NaN`, `Infinity`, `-Infinity` and numbers beyond a float's range replaced
/// by `null`; `None` when nothing was replaced. The flag: a number was out of range.
fn replace_non_finite(line: &[u8]) -> Option<(Vec<u8>, bool)> {
    let mut out = Vec::with_capacity(line.len());
    let mut in_str = false;
    let mut escaped = false;
    let mut i = 0;
    let mut changed = false;
    let mut out_of_range = false;
    while i < line.len() {
        let b = line[i];
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else {
            let rest = &line[i..];
            let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
                .into_iter()
                .find(|t| rest.starts_with(t));
            if let Some(t) = token {
                out.extend_from_slice(b"null");
                i += t.len();
                changed = true;
                continue;
            }
            if b == b'-' || b.is_ascii_digit() {
                let len = rest
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(rest.len());
                let number = &rest[..len];
                let huge = std::str::from_utf8(number)
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .is_some_and(|x| x.is_infinite());
                if huge {
                    out.extend_from_slice(b"null");
                    out_of_range = true;
                    changed = true;
                } else {
                    out.extend_from_slice(number);
                }
                i += len.max(1);
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    changed.then_some((out, out_of_range))
}

/// A JSON value as a Python number: integers and floats; a bool is not a number.
pub fn num(v: &Value) -> Option<Num> {
    let Value::Number(n) = v else { return None };
    if let Some(i) = n.as_i64() {
        Some(Num::Int(i))
    } else {
        n.as_f64().map(Num::Float)
    }
}

/// Python truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(_) => num(v).is_some_and(flinch_core::telemetry::pynum::truthy),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Vec<(usize, Value)>, Vec<String>) {
        let mut w = Warnings::default();
        let mut rows = Vec::new();
        for_each_line(text.as_bytes(), &mut w, |n, v, _| rows.push((n, v))).unwrap();
        (rows, w.render("f"))
    }

    #[test]
    fn universal_newlines_blank_lines_and_bad_lines() {
        let (rows, w) = read("{\"a\":1}\r\n\n  \n{\"a\":2}\r{\"a\":3}\n{bad\n[1]");
        let nums: Vec<usize> = rows.iter().map(|r| r.0).collect();
        assert_eq!(nums, [1, 4, 5, 7]);
        assert_eq!(
            w,
            ["f: malformed JSON skipped (not valid JSON): 1 line (6)"]
        );
    }

    /// The same lines, warnings and line numbers whatever the reader's buffer size (1 byte up).
    #[test]
    fn any_buffer_split_reads_the_same() {
        let text =
            "{\"a\":1}\r\n\n  \n{\"a\":\"\u{e9}\u{1F680}\"}\r{\"a\":3}\n{bad\n[1]\n{\"b\": NaN}";
        let whole = read(text);
        for cap in [1, 2, 3, 5, 7, 64] {
            let mut w = Warnings::default();
            let mut rows = Vec::new();
            let reader = std::io::BufReader::with_capacity(cap, text.as_bytes());
            for_each_line(reader, &mut w, |n, v, _| rows.push((n, v))).unwrap();
            assert_eq!((rows, w.render("f")), whole, "capacity {cap}");
        }
    }

    #[test]
    fn nan_tokens_outside_strings_become_null() {
        let (rows, w) = read("{\"a\": NaN, \"b\": \"NaN\", \"c\": [-Infinity, Infinity]}");
        assert_eq!(rows[0].1["a"], Value::Null);
        assert_eq!(rows[0].1["b"], "NaN");
        assert_eq!(rows[0].1["c"][0], Value::Null);
        assert!(w.is_empty());
    }

    /// A line past the limit is skipped and counted with its number, in any buffer split; the
    /// lines around it are read with their own numbers.
    #[test]
    fn lines_over_the_limit_are_skipped_and_counted() {
        let long = format!("{{\"a\": \"{}\"}}", "x".repeat(40));
        let text = format!("{{\"a\":1}}\r{long}\r\n{{\"a\":2}}\n\n{long}\r{long}");
        for cap in [1, 2, 7, 16, 4096] {
            let mut w = Warnings::default();
            let mut rows = Vec::new();
            let reader = std::io::BufReader::with_capacity(cap, text.as_bytes());
            for_each_line_limited(reader, 20, &mut w, |n, v, _| rows.push((n, v))).unwrap();
            assert_eq!(
                rows,
                [
                    (1, serde_json::json!({"a": 1})),
                    (3, serde_json::json!({"a": 2}))
                ],
                "capacity {cap}"
            );
            assert_eq!(
                w.render("f"),
                ["f: line over 20 bytes skipped: 3 lines (2, 5, 6)"]
            );
        }
        // A line of exactly the limit is read.
        let mut w = Warnings::default();
        let mut n = 0;
        for_each_line_limited(&b"[1,2,3]\n"[..], 7, &mut w, |_, _, _| n += 1).unwrap();
        assert_eq!((n, w.render("f").len()), (1, 0));
    }

    /// A 64 MiB line (from a reader that holds no such buffer) under the default limit of
    /// 16 MiB: skipped, counted, and the next line read.
    #[test]
    fn a_huge_line_is_read_through() {
        struct Huge(usize);
        impl std::io::Read for Huge {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let tail = b"\n{\"a\": 5}\n";
                if self.0 == 0 {
                    return Ok(0);
                }
                let n = out.len().min(self.0);
                for (k, b) in out[..n].iter_mut().enumerate() {
                    let left = self.0 - k;
                    *b = if left <= tail.len() {
                        tail[tail.len() - left]
                    } else {
                        b'7'
                    };
                }
                self.0 -= n;
                Ok(n)
            }
        }
        let mut w = Warnings::default();
        let mut rows = Vec::new();
        let reader = std::io::BufReader::new(Huge(64 << 20));
        for_each_line(reader, &mut w, |n, v, _| rows.push((n, v))).unwrap();
        assert_eq!(rows, [(2, serde_json::json!({"a": 5}))]);
        assert_eq!(
            w.render("f"),
            [format!(
                "f: line over {MAX_LINE_BYTES} bytes skipped: 1 line (1)"
            )]
        );
    }

    /// Python reads 1e400 as infinity: the line is kept, the number is null (as NaN), and a
    /// warning names the line; a line broken elsewhere says "number out of range".
    #[test]
    fn numbers_out_of_range_are_reported_as_such() {
        let (rows, w) = read("{\"a\": 1e400, \"b\": \"1e400\", \"c\": 2.5e3}\n{\"a\": -1e999, }\n");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].1["a"], Value::Null);
        assert_eq!(rows[0].1["b"], "1e400");
        assert_eq!(rows[0].1["c"], 2500.0);
        assert_eq!(
            w,
            [
                format!("f: {OUT_OF_RANGE}: 1 line (1)"),
                "f: malformed JSON skipped (number out of range): 1 line (2)".to_string()
            ]
        );
    }

    #[test]
    fn numbers_and_truthiness() {
        assert_eq!(num(&serde_json::json!(3)), Some(Num::Int(3)));
        assert_eq!(num(&serde_json::json!(true)), None);
        assert!(!truthy(&serde_json::json!(0.0)) && truthy(&serde_json::json!("x")));
    }
}
