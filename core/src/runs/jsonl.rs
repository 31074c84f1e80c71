//! JSON Lines reading as the reference's `read_lines` does it (universal newlines, blank lines
//! skipped, `NaN`/`Infinity` accepted), except that a malformed line is skipped and reported
//! instead of failing the whole file, and a line longer than [`MAX_LINE_BYTES`] is skipped as it
//! is read (never held) and counted. Push-style: the caller hands over the file's bytes in
//! chunks of any size.
use alloc::vec::Vec;

use serde_json::Value;

use super::warnings::Warnings;
use crate::stats::Num;

/// Longest JSON line read, in bytes: a longer line is skipped (read through, not held) and
/// counted with its line number, so memory stays bounded whatever the file holds.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The warning for lines holding a number beyond the range of a float.
const OUT_OF_RANGE: &str = "number out of range (beyond ±1.8e308): read as infinity, as Python's json does, so left out like NaN";

/// Reads JSON Lines pushed in chunks, calling back once per parsed line with its 1-based line
/// number. Lines end at `\n`, `\r\n` or a lone `\r` (Python's universal newlines);
/// whitespace-only lines are skipped; lines that are not JSON, or longer than the limit, are
/// counted in the warnings.
#[derive(Debug)]
pub struct JsonlReader {
    /// The unfinished line (only when a chunk ended inside it).
    line: Vec<u8>,
    /// The unfinished line is past the limit: the rest of it is dropped.
    too_long: bool,
    /// The last line ended at a `\r`: a `\n` right after it ends no other line.
    after_cr: bool,
    line_no: usize,
    max_line_bytes: usize,
}

impl Default for JsonlReader {
    fn default() -> Self {
        JsonlReader::with_max_line_bytes(MAX_LINE_BYTES)
    }
}

impl JsonlReader {
    /// A reader at the start of a file, with lines of up to [`MAX_LINE_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader with another longest line.
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        JsonlReader {
            line: Vec::new(),
            too_long: false,
            after_cr: false,
            line_no: 0,
            max_line_bytes,
        }
    }

    /// Takes the next chunk of the file; `f(line_number, value, warnings)` runs for each
    /// line the chunk completes.
    pub fn push(
        &mut self,
        chunk: &[u8],
        warnings: &mut Warnings,
        mut f: impl FnMut(usize, Value, &mut Warnings),
    ) {
        let Some(&first) = chunk.first() else { return };
        let mut pos = usize::from(self.after_cr && first == b'\n');
        self.after_cr = false;
        while pos < chunk.len() {
            let rest = &chunk[pos..];
            let end = memchr::memchr2(b'\n', b'\r', rest);
            let text = &rest[..end.unwrap_or(rest.len())];
            let Some(end) = end else {
                self.take(text);
                break;
            };
            if self.line.is_empty() && !self.too_long && text.len() <= self.max_line_bytes {
                // The whole line is in this chunk: read it where it lies.
                self.end_line(text, warnings, &mut f);
            } else {
                self.take(text);
                let line = core::mem::take(&mut self.line);
                self.end_line(&line, warnings, &mut f);
                self.line = line;
                self.line.clear();
            }
            pos += end + 1;
            if rest[end] == b'\r' {
                match chunk.get(pos) {
                    Some(b'\n') => pos += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
    }

    /// Adds a piece of the unfinished line, or drops it past the limit.
    fn take(&mut self, text: &[u8]) {
        if self.line.len() + text.len() > self.max_line_bytes {
            self.too_long = true;
            self.line.clear();
        } else if !self.too_long {
            self.line.extend_from_slice(text);
        }
    }

    /// One whole line (`line` is empty when it was too long).
    fn end_line(
        &mut self,
        line: &[u8],
        warnings: &mut Warnings,
        f: &mut impl FnMut(usize, Value, &mut Warnings),
    ) {
        self.line_no += 1;
        let line_no = self.line_no;
        if core::mem::take(&mut self.too_long) {
            let kind = alloc::format!("line over {} bytes skipped", self.max_line_bytes);
            warnings.at_line(&kind, line_no);
        } else if !is_blank(line) {
            match parse_line_noting(line) {
                Ok((v, out_of_range)) => {
                    if out_of_range {
                        warnings.at_line(OUT_OF_RANGE, line_no);
                    }
                    f(line_no, v, warnings)
                }
                Err(e) => {
                    warnings.at_line(&alloc::format!("malformed JSON skipped ({e})"), line_no)
                }
            }
        }
    }

    /// The end of the file: reads a last line that has no newline.
    pub fn finish(
        &mut self,
        warnings: &mut Warnings,
        mut f: impl FnMut(usize, Value, &mut Warnings),
    ) {
        if !self.line.is_empty() || self.too_long {
            let line = core::mem::take(&mut self.line);
            self.end_line(&line, warnings, &mut f);
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

/// Why a JSONL line is not JSON (the caller knows its line number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineError {
    /// The line ends inside a value.
    EndsInsideValue,
    /// A number beyond a float's range where a value cannot be null.
    NumberOutOfRange,
    /// Anything else.
    NotJson,
}

impl core::fmt::Display for LineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LineError::EndsInsideValue => "line ends inside a value",
            LineError::NumberOutOfRange => "number out of range",
            LineError::NotJson => "not valid JSON",
        })
    }
}

impl core::error::Error for LineError {}

/// Parses one line; on failure retries with `NaN`, `Infinity` and `-Infinity` tokens (which
/// Python's json accepts) and numbers beyond a float's range outside strings replaced by `null`.
/// Every figure treats a non-finite number like null (statistics drop both).
///
/// # Errors
/// The line is not JSON even so.
pub fn parse_line(line: &[u8]) -> Result<Value, LineError> {
    parse_line_noting(line).map(|(v, _)| v)
}

/// [`parse_line`], also saying whether a number beyond the range of a float was met (Python
/// reads it as infinity; here it is null, as NaN and Infinity are).
fn parse_line_noting(line: &[u8]) -> Result<(Value, bool), LineError> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => Ok((v, false)),
        Err(e) => {
            let msg = match e.classify() {
                serde_json::error::Category::Eof => LineError::EndsInsideValue,
                _ if alloc::format!("{e}").starts_with("number out of range") => {
                    LineError::NumberOutOfRange
                }
                _ => LineError::NotJson,
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
                let huge = core::str::from_utf8(number)
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
    use alloc::borrow::ToOwned;
    use alloc::string::String;
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

    /// A line past the limit is skipped and counted with its number, in any split; the lines
    /// around it are read with their own numbers.
    #[test]
    fn lines_over_the_limit_are_skipped_and_counted() {
        let long = alloc::format!("{{\"a\": \"{}\"}}", "x".repeat(40));
        let text = alloc::format!("{{\"a\":1}}\r{long}\r\n{{\"a\":2}}\n\n{long}\r{long}");
        for_each_split(text.as_bytes(), 50, 21, |chunks| {
            let mut w = Warnings::default();
            let mut rows = Vec::new();
            let mut r = JsonlReader::with_max_line_bytes(20);
            for c in chunks {
                r.push(c, &mut w, |n, v, _| rows.push((n, v)));
            }
            r.finish(&mut w, |n, v, _| rows.push((n, v)));
            assert_eq!(
                rows,
                [
                    (1, serde_json::json!({"a": 1})),
                    (3, serde_json::json!({"a": 2}))
                ]
            );
            assert_eq!(
                w.render("f"),
                ["f: line over 20 bytes skipped: 3 lines (2, 5, 6)"]
            );
        });
        // A line of exactly the limit is read.
        let mut w = Warnings::default();
        let mut n = 0;
        let mut r = JsonlReader::with_max_line_bytes(7);
        r.push(b"[1,2,3]\n", &mut w, |_, _, _| n += 1);
        r.finish(&mut w, |_, _, _| n += 1);
        assert_eq!((n, w.render("f").len()), (1, 0));
    }

    /// A 64 MiB line pushed in 1 MiB chunks under the default limit of 16 MiB: skipped,
    /// counted, never held (the reader's buffer stays within the limit), and the next line read.
    #[test]
    fn a_huge_line_is_read_through() {
        let chunk = alloc::vec![b'7'; 1 << 20];
        let mut w = Warnings::default();
        let mut rows = Vec::new();
        let mut r = JsonlReader::new();
        for _ in 0..64 {
            r.push(&chunk, &mut w, |n, v, _| rows.push((n, v)));
            assert!(r.line.capacity() <= 2 * MAX_LINE_BYTES);
        }
        r.push(b"\n{\"a\": 5}\n", &mut w, |n, v, _| rows.push((n, v)));
        r.finish(&mut w, |n, v, _| rows.push((n, v)));
        assert_eq!(rows, [(2, serde_json::json!({"a": 5}))]);
        assert_eq!(
            w.render("f"),
            [alloc::format!(
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
                alloc::format!("f: {OUT_OF_RANGE}: 1 line (1)"),
                "f: malformed JSON skipped (number out of range): 1 line (2)".to_owned()
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
