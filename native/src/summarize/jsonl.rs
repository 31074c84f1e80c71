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

/// Reads `reader` as JSON Lines, calling `f(line_number, value, warnings)` for each parsed line; lines
/// that are not JSON are counted in `warnings`. Lines end at `\n`, `\r\n` or a lone `\r`
/// (Python's universal newlines); whitespace-only lines are skipped.
pub fn for_each_line(
    mut reader: impl BufRead,
    warnings: &mut Warnings,
    mut f: impl FnMut(usize, Value, &mut Warnings),
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        for piece in body.split(|&b| b == b'\r') {
            line_no += 1;
            if is_blank(piece) {
                continue;
            }
            match parse_line(piece) {
                Ok(v) => f(line_no, v, warnings),
                Err(e) => warnings.at_line(&format!("malformed JSON skipped ({e})"), line_no),
            }
        }
    }
}

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
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => Ok(v),
        Err(e) => {
            let msg = match e.classify() {
                serde_json::error::Category::Eof => "line ends inside a value".to_owned(),
                _ => "not valid JSON".to_owned(),
            };
            match replace_non_finite(line) {
                Some(fixed) => serde_json::from_slice::<Value>(&fixed).map_err(|_| msg),
                None => Err(msg),
            }
        }
    }
}

fn replace_non_finite(line: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(line.len());
    let mut in_str = false;
    let mut escaped = false;
    let mut i = 0;
    let mut changed = false;
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
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
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

    #[test]
    fn numbers_and_truthiness() {
        assert_eq!(num(&serde_json::json!(3)), Some(Num::Int(3)));
        assert_eq!(num(&serde_json::json!(true)), None);
        assert!(!truthy(&serde_json::json!(0.0)) && truthy(&serde_json::json!("x")));
    }
}
