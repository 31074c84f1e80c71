//! The one number a counter event (`"ph":"C"`) carries in its `args`, read as the scanner skips
//! that object.
//!
//! A counter's `args` maps series names to numbers. PyTorch's profiler writes one series under
//! the empty key (`{"": 212.5}`); flinch-trace's own `--perfetto` file one under its unit
//! (`{"W": 212.5}`). [`ArgsSniff`] is a push parser fed the bytes of the `args` object after its
//! `{`, in pieces of any size (the scanner's skip gives them as it finds the object's end), in
//! fixed memory: the value under `""` when there is one, else the first member's. Nothing is
//! copied but the number text of the member kept (64 bytes at most). The object's brackets and
//! strings are already balanced by the scanner's skip, so this parser only follows depth and
//! strings to find the members of the top level.

/// The value of a counter event's `args` ([`Event::arg`](super::Event::arg)).
#[derive(Clone, Copy, Debug, Default)]
pub enum ArgValue {
    /// No `args` object, an empty one, or not a counter event.
    #[default]
    Missing,
    /// A finite number.
    Number(f64),
    /// `NaN`, `Infinity`, `-Infinity` (Python's `json` writes them) or a number past the `f64`
    /// range.
    NotFinite,
    /// A string, `true`, `null`, an object, an array, or number text past 64 bytes.
    NotNumber,
}

// Equal by the number's bits, so that an `Event` stays `Eq` (a `Number` is never NaN).
impl PartialEq for ArgValue {
    fn eq(&self, other: &ArgValue) -> bool {
        match (self, other) {
            (ArgValue::Number(a), ArgValue::Number(b)) => a.to_bits() == b.to_bits(),
            _ => core::mem::discriminant(self) == core::mem::discriminant(other),
        }
    }
}

impl Eq for ArgValue {}

/// Number text kept at most.
const WORD_CAP: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Before a member's key (or the closing brace).
    Key,
    /// Inside the key string.
    InKey,
    /// After the key, before `:`.
    Colon,
    /// After `:`, before the value.
    Value,
    /// Inside a bare value (number or literal).
    Word,
    /// Inside a value that is a string, an object or an array (depth counts its brackets).
    Nested,
    /// After a value, before `,` or `}`.
    Comma,
    /// The object has closed.
    Done,
}

/// Reads the members of an `args` object (see the module docs).
#[derive(Clone, Debug)]
pub struct ArgsSniff {
    at: At,
    /// Brackets open inside a nested value.
    depth: u32,
    in_str: bool,
    esc: bool,
    /// The current key is still empty (no byte yet).
    key_empty: bool,
    /// The current member is the object's first.
    first: bool,
    word: heapless::Vec<u8, WORD_CAP>,
    word_over: bool,
    empty_key: Option<ArgValue>,
    first_value: Option<ArgValue>,
}

impl Default for ArgsSniff {
    fn default() -> Self {
        ArgsSniff::new()
    }
}

impl ArgsSniff {
    /// A parser placed right after the object's `{`.
    pub fn new() -> ArgsSniff {
        ArgsSniff {
            at: At::Key,
            depth: 0,
            in_str: false,
            esc: false,
            key_empty: true,
            first: true,
            word: heapless::Vec::new(),
            word_over: false,
            empty_key: None,
            first_value: None,
        }
    }

    /// Reads the next bytes of the object.
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        match self.at {
            At::Done => {}
            At::Key => match b {
                b'"' => {
                    self.at = At::InKey;
                    self.key_empty = true;
                    self.esc = false;
                }
                b'}' => self.at = At::Done,
                _ => {}
            },
            At::InKey => {
                if self.esc {
                    self.esc = false;
                    self.key_empty = false;
                } else if b == b'\\' {
                    self.esc = true;
                } else if b == b'"' {
                    self.at = At::Colon;
                } else {
                    self.key_empty = false;
                }
            }
            At::Colon => {
                if b == b':' {
                    self.at = At::Value;
                }
            }
            At::Value => match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    self.in_str = true;
                    self.esc = false;
                    self.depth = 0;
                    self.at = At::Nested;
                }
                b'{' | b'[' => {
                    self.in_str = false;
                    self.depth = 1;
                    self.at = At::Nested;
                }
                _ => {
                    self.word.clear();
                    self.word_over = false;
                    self.at = At::Word;
                    self.word_byte(b);
                }
            },
            At::Word => match b {
                b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r' => {
                    let v = self.word_value();
                    self.member(v);
                    self.after_value(b);
                }
                _ => self.word_byte(b),
            },
            At::Nested => {
                if self.in_str {
                    if self.esc {
                        self.esc = false;
                    } else if b == b'\\' {
                        self.esc = true;
                    } else if b == b'"' {
                        self.in_str = false;
                        if self.depth == 0 {
                            self.member(ArgValue::NotNumber);
                            self.at = At::Comma;
                        }
                    }
                } else {
                    match b {
                        b'"' => self.in_str = true,
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => {
                            self.depth = self.depth.saturating_sub(1);
                            if self.depth == 0 {
                                self.member(ArgValue::NotNumber);
                                self.at = At::Comma;
                            }
                        }
                        _ => {}
                    }
                }
            }
            At::Comma => self.after_value(b),
        }
    }

    #[inline]
    fn after_value(&mut self, b: u8) {
        match b {
            b',' => {
                self.at = At::Key;
                self.first = false;
            }
            b'}' => self.at = At::Done,
            _ => self.at = At::Comma,
        }
    }

    #[inline]
    fn word_byte(&mut self, b: u8) {
        if self.word.push(b).is_err() {
            self.word_over = true;
        }
    }

    fn word_value(&self) -> ArgValue {
        if self.word_over {
            return ArgValue::NotNumber;
        }
        number(&self.word)
    }

    fn member(&mut self, v: ArgValue) {
        if self.key_empty && self.empty_key.is_none() {
            self.empty_key = Some(v);
        }
        if self.first {
            self.first_value = Some(v);
        }
    }

    /// The value read: under `""`, else the first member's; [`ArgValue::Missing`] for an empty
    /// object. An object cut before its end gives what its whole members gave.
    pub fn finish(&self) -> ArgValue {
        self.empty_key
            .or(self.first_value)
            .unwrap_or(ArgValue::Missing)
    }
}

/// A bare value's text as a counter's number.
fn number(text: &[u8]) -> ArgValue {
    if matches!(text, b"NaN" | b"Infinity" | b"-Infinity") {
        return ArgValue::NotFinite;
    }
    // JSON number syntax only: Rust's parser also takes `inf`, `nan` and a leading `+`.
    let json_number = text
        .iter()
        .all(|&c| c.is_ascii_digit() || matches!(c, b'-' | b'.' | b'e' | b'E' | b'+'))
        && text
            .first()
            .is_some_and(|&c| c == b'-' || c.is_ascii_digit());
    if !json_number {
        return ArgValue::NotNumber;
    }
    match core::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    {
        Some(v) if v.is_finite() => ArgValue::Number(v),
        Some(_) => ArgValue::NotFinite,
        None => ArgValue::NotNumber,
    }
}

/// The number of a counter's `args` whose bytes after the `{` are `body` (through its `}`): as
/// [`ArgsSniff`] reads it, with PyTorch's one shape, `"":<number>}`, read without the byte loop.
pub(crate) fn read_args(body: &[u8]) -> ArgValue {
    if let Some(rest) = body.strip_prefix(b"\"\":")
        && let Some(text) = rest.strip_suffix(b"}")
        && !text.is_empty()
        && text.len() <= WORD_CAP
        && text
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'+'))
    {
        return number(text);
    }
    let mut sniff = ArgsSniff::new();
    sniff.push(body);
    sniff.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;

    fn read(body: &[u8]) -> ArgValue {
        // The bytes after `{`, as the scanner's skip hands them over.
        let mut want = None;
        for_each_split(body, 20, 7, |pieces| {
            let mut s = ArgsSniff::new();
            for p in pieces {
                s.push(p);
            }
            let got = s.finish();
            match want {
                None => want = Some(got),
                Some(w) => assert_eq!(got, w, "{:?}", core::str::from_utf8(body)),
            }
        });
        let want = want.unwrap();
        // The whole object at once, as the fast path reads it.
        if body.ends_with(b"}") {
            assert_eq!(read_args(body), want, "{:?}", core::str::from_utf8(body));
        }
        want
    }

    #[test]
    fn the_empty_key_then_the_first_member() {
        assert_eq!(read(br#""": 212.5}"#), ArgValue::Number(212.5));
        assert_eq!(read(br#""W":100}"#), ArgValue::Number(100.0));
        assert_eq!(read(br#""a":1,"":-2e1}"#), ArgValue::Number(-20.0));
        assert_eq!(
            read(br#""a":{"":3},"b":[1,"}"],"":4 }"#),
            ArgValue::Number(4.0)
        );
        assert_eq!(read(br#""x\"y":"s}","z":5}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""\"":7}"#), ArgValue::Number(7.0));
        assert_eq!(read(b"}"), ArgValue::Missing);
        assert_eq!(read(b" }"), ArgValue::Missing);
    }

    #[test]
    fn bad_values_are_told_apart() {
        assert_eq!(read(br#""":NaN}"#), ArgValue::NotFinite);
        assert_eq!(read(br#""":-Infinity}"#), ArgValue::NotFinite);
        assert_eq!(read(br#""":1e999}"#), ArgValue::NotFinite);
        assert_eq!(read(br#""":"12"}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""":null}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""":true}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""":inf}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""":+1}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""":1e5x}"#), ArgValue::NotNumber);
        assert_eq!(read(br#""": 7}"#), ArgValue::Number(7.0));
        assert_eq!(read(br#""":7 }"#), ArgValue::Number(7.0));
        assert_eq!(read(br#""":{"v":1}}"#), ArgValue::NotNumber);
        let long = alloc::format!("\"\":1.{}}}", "0".repeat(80));
        assert_eq!(read(long.as_bytes()), ArgValue::NotNumber);
    }

    #[test]
    fn a_cut_object_keeps_its_whole_members() {
        let mut s = ArgsSniff::new();
        s.push(br#""a":1,"":"#);
        assert_eq!(s.finish(), ArgValue::Number(1.0));
    }
}
