//! JSON Lines reading as the reference's `read_lines` does it (universal newlines, blank lines
//! skipped, `NaN`/`Infinity` accepted), except that a malformed line is skipped and reported
//! instead of failing the whole file. Push-style: the caller hands over the file's bytes in
//! chunks of any size.
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use super::lines::Lines;
use super::warnings::Warnings;
use crate::stats::Num;

/// Reads JSON Lines pushed in chunks, calling back once per parsed line with its 1-based line
/// number. Lines end at `\n`, `\r\n` or a lone `\r` (Python's universal newlines);
/// whitespace-only lines are skipped; lines that are not JSON are counted in the warnings.
#[derive(Debug, Default)]
pub struct JsonlReader {
    lines: Lines,
    line_no: usize,
}

impl JsonlReader {
    /// A reader at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next chunk of the file; `f(line_number, value, warnings)` runs for each
    /// line the chunk completes.
    pub fn push(
        &mut self,
        chunk: &[u8],
        warnings: &mut Warnings,
        mut f: impl FnMut(usize, Value, &mut Warnings),
    ) {
        let line_no = &mut self.line_no;
        self.lines
            .push(chunk, |line| read_line(line, line_no, warnings, &mut f));
    }

    /// The end of the file: reads a last line that has no newline.
    pub fn finish(
        &mut self,
        warnings: &mut Warnings,
        mut f: impl FnMut(usize, Value, &mut Warnings),
    ) {
        let line_no = &mut self.line_no;
        self.lines
            .finish(|line| read_line(line, line_no, warnings, &mut f));
    }
}

/// One `\n`-terminated piece (or the last piece), which may hold lone-`\r` line breaks.
fn read_line(
    line: &[u8],
    line_no: &mut usize,
    warnings: &mut Warnings,
    f: &mut impl FnMut(usize, Value, &mut Warnings),
) {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    for piece in body.split(|&b| b == b'\r') {
        *line_no += 1;
        if is_blank(piece) {
            continue;
        }
        match parse_line(piece) {
            Ok(v) => f(*line_no, v, warnings),
            Err(e) => warnings.at_line(&alloc::format!("malformed JSON skipped ({e})"), *line_no),
        }
    }
}

fn is_blank(line: &[u8]) -> bool {
    match core::str::from_utf8(line) {
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
        Value::Number(_) => num(v).is_some_and(crate::pynum::truthy),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::vec::Vec;

    fn read_chunks(chunks: &[&[u8]]) -> (Vec<(usize, Value)>, Vec<String>) {
        let mut w = Warnings::default();
        let mut rows = Vec::new();
        let mut r = JsonlReader::new();
        for c in chunks {
            r.push(c, &mut w, |n, v, _| rows.push((n, v)));
        }
        r.finish(&mut w, |n, v, _| rows.push((n, v)));
        (rows, w.render("f"))
    }

    fn read(text: &str) -> (Vec<(usize, Value)>, Vec<String>) {
        read_chunks(&[text.as_bytes()])
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

    /// The same lines, warnings and line numbers however the bytes are split.
    #[test]
    fn any_split_reads_the_same() {
        let text =
            "{\"a\":1}\r\n\n  \n{\"a\":\"\u{e9}\u{1F680}\"}\r{\"a\":3}\n{bad\n[1]\n{\"b\": NaN}";
        let whole = read(text);
        assert_eq!(whole.0.len(), 5);
        for_each_split(text.as_bytes(), 50, 12, |chunks| {
            assert_eq!(read_chunks(chunks), whole);
        });
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
