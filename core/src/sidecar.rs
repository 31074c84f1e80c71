//! The recording's sidecar `<csv>.meta.json` (docs/formats.md, "The sidecar"), as far as the
//! analysis reads it: which NVML reading fills `gpu_power_W`. The one rule for every reader
//! that has the sidecar's text: the CLI (`analyze`, `trace --telemetry`), the page, and the
//! firmware image, which streams the file through [`PowerSourceScanner`] without an allocator.
//!
//! The rule: the sidecar is one JSON document, an object whose `gpus` is an array of objects,
//! each with a `gpu_power_w_source` of `instant`, `average` or `unknown` (the fields the
//! recorder writes for this, with the types it writes them in); the power source is the first
//! GPU's that is not `unknown`. A sidecar that is not so (not JSON, trailing bytes, `gpus`
//! missing or twice, a GPU without its source or with it twice, a source of another type or
//! name) gives `None`, which callers read as [`PowerSource::Unknown`]. Its other keys and
//! values are checked as JSON but not read, so a sidecar from another version of the recorder
//! still gives its power source; they may nest [`MAX_DEPTH`] deep.
//!
//! The keys `gpus` and `gpu_power_w_source` and the source's value are compared after their
//! escapes are decoded, and must be UTF-8 without lone surrogates; other strings are checked
//! for their escapes and control characters only (as serde_json checks what it skips).
use crate::window::PowerSource;

/// Deepest nesting of arrays and objects read (deeper: not a sidecar).
pub const MAX_DEPTH: u32 = 128;

/// The power source the sidecar's text names (see the module docs), or `None`.
pub fn power_source(sidecar_json: &[u8]) -> Option<PowerSource> {
    let mut scan = PowerSourceScanner::new();
    scan.push(sidecar_json);
    scan.finish()
}

/// Bytes of a key or source value kept to compare (longer ones match nothing).
const WORD_BYTES: usize = 24;

/// Where the scanner is in the JSON grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A value is next (`close`: or the end of an empty array).
    Value { close: bool },
    /// A key is next (`close`: or the end of an empty object).
    Key { close: bool },
    /// The ':' after a key.
    Colon,
    /// After a value: ',' or the container's end (at depth 0: only blanks).
    After,
    /// Inside a string.
    Str,
    /// After a backslash in a string.
    Escape,
    /// `\u`: so many hex digits still to come.
    Hex { left: u8 },
    /// After a leading surrogate's `\uXXXX` in a checked string: `\` must follow.
    SurrogateBackslash,
    /// After that `\`: `u` must follow.
    SurrogateU,
    /// A number: the part being read.
    Num(Num),
    /// `true`, `false` or `null`: the bytes still to come.
    Literal { rest: &'static [u8] },
    /// Not a sidecar; nothing more is read.
    Bad,
}

/// The parts of a JSON number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    /// After `-`.
    Minus,
    /// After a leading `0`.
    Zero,
    /// In the integer digits.
    Int,
    /// After `.`.
    Dot,
    /// In the fraction digits.
    Frac,
    /// After `e`/`E`.
    Exp,
    /// After the exponent's sign.
    ExpSign,
    /// In the exponent digits.
    ExpDigits,
}

/// What the string or value being read is to the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Not read.
    Skipped,
    /// A key of the sidecar object or of a GPU's object.
    Key,
    /// The value of the sidecar's `gpus`.
    Gpus,
    /// An element of `gpus`.
    Gpu,
    /// A GPU's `gpu_power_w_source`.
    Source,
}

/// A streaming check of the sidecar rule: push the file's bytes in chunks of any size, then
/// [`finish`](Self::finish). Fixed memory, no allocation.
#[derive(Clone, Debug)]
pub struct PowerSourceScanner {
    state: State,
    /// Bit `i` set: the container at depth `i + 1` is an object.
    objects: u128,
    depth: u32,
    /// The string being read is checked (UTF-8, surrogates) and kept in `word`.
    checked: bool,
    /// Role of the string being read, and whether it is a key.
    role: Role,
    is_key: bool,
    /// The next value's role (set by the key before it).
    next: Role,
    word: [u8; WORD_BYTES],
    /// Bytes of the decoded string; over `WORD_BYTES`, nothing matches.
    word_len: usize,
    /// Continuation bytes still due in a checked string, and the first one's range.
    utf8_left: u8,
    utf8_lo: u8,
    utf8_hi: u8,
    /// The `\u` value being read, and the leading surrogate before it, if any.
    hex: u16,
    lead: Option<u16>,
    /// The sidecar's `gpus` was seen; the array at depth 2 is it.
    gpus_seen: bool,
    in_gpus: bool,
    /// The GPU object being read has its source.
    source_seen: bool,
    found: Option<PowerSource>,
}

impl Default for PowerSourceScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl PowerSourceScanner {
    /// A scanner at the start of the file.
    pub const fn new() -> Self {
        PowerSourceScanner {
            state: State::Value { close: false },
            objects: 0,
            depth: 0,
            checked: false,
            role: Role::Skipped,
            is_key: false,
            next: Role::Skipped,
            word: [0; WORD_BYTES],
            word_len: 0,
            utf8_left: 0,
            utf8_lo: 0,
            utf8_hi: 0,
            hex: 0,
            lead: None,
            gpus_seen: false,
            in_gpus: false,
            source_seen: false,
            found: None,
        }
    }

    /// Takes the next bytes of the file.
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.state == State::Bad {
                return;
            }
            self.byte(b);
        }
    }

    /// The end of the file: the power source, if the whole text follows the rule.
    pub fn finish(&self) -> Option<PowerSource> {
        // The document is an object (a number cannot be), so it ends after its '}'.
        match self.state {
            State::After if self.depth == 0 => self.found,
            _ => None,
        }
    }

    fn bad(&mut self) {
        self.state = State::Bad;
    }

    fn is_blank(b: u8) -> bool {
        matches!(b, b' ' | b'\n' | b'\r' | b'\t')
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            State::Bad => {}
            State::Value { close } => {
                if Self::is_blank(b) {
                } else if close && b == b']' {
                    self.close(b);
                } else {
                    self.value(b);
                }
            }
            State::Key { close } => match b {
                _ if Self::is_blank(b) => {}
                b'}' if close => self.close(b),
                b'"' => {
                    let keyed = self.depth == 1 || (self.depth == 3 && self.in_gpus);
                    self.string(if keyed { Role::Key } else { Role::Skipped }, true);
                }
                _ => self.bad(),
            },
            State::Colon => match b {
                _ if Self::is_blank(b) => {}
                b':' => self.state = State::Value { close: false },
                _ => self.bad(),
            },
            State::After => match b {
                _ if Self::is_blank(b) => {}
                _ if self.depth == 0 => self.bad(),
                b',' if self.in_object() => self.state = State::Key { close: false },
                b',' => self.state = State::Value { close: false },
                b'}' | b']' => self.close(b),
                _ => self.bad(),
            },
            State::Str => self.string_byte(b),
            State::Escape => self.escape(b),
            State::Hex { left } => match (b as char).to_digit(16) {
                Some(d) => {
                    self.hex = (self.hex << 4) | d as u16;
                    if left > 1 {
                        self.state = State::Hex { left: left - 1 };
                    } else {
                        self.hex_done();
                    }
                }
                None => self.bad(),
            },
            State::SurrogateBackslash => match b {
                b'\\' => self.state = State::SurrogateU,
                _ => self.bad(),
            },
            State::SurrogateU => match b {
                b'u' => self.start_hex(),
                _ => self.bad(),
            },
            State::Num(n) => self.number(n, b),
            State::Literal { rest } => {
                if rest.first() == Some(&b) {
                    self.state = if rest.len() == 1 {
                        State::After
                    } else {
                        State::Literal { rest: &rest[1..] }
                    };
                } else {
                    self.bad();
                }
            }
        }
    }

    fn in_object(&self) -> bool {
        self.depth > 0 && self.objects & (1 << (self.depth - 1)) != 0
    }

    /// The role of the value starting now.
    fn role_here(&mut self) -> Role {
        if self.depth == 0 {
            Role::Gpu // the sidecar object: an object, as a GPU's is
        } else if self.in_object() {
            core::mem::replace(&mut self.next, Role::Skipped)
        } else if self.depth == 2 && self.in_gpus {
            Role::Gpu
        } else {
            Role::Skipped
        }
    }

    fn value(&mut self, b: u8) {
        let role = self.role_here();
        let ok = match role {
            Role::Skipped | Role::Key => true,
            Role::Gpus => b == b'[',
            Role::Gpu => b == b'{',
            Role::Source => b == b'"',
        };
        if !ok {
            return self.bad();
        }
        match b {
            b'{' | b'[' => {
                if self.depth + 1 >= MAX_DEPTH {
                    return self.bad();
                }
                if b == b'{' {
                    self.objects |= 1 << self.depth;
                } else {
                    self.objects &= !(1 << self.depth);
                }
                self.depth += 1;
                if role == Role::Gpus {
                    self.in_gpus = true;
                }
                if role == Role::Gpu && self.depth == 3 {
                    self.source_seen = false;
                }
                self.state = if b == b'{' {
                    State::Key { close: true }
                } else {
                    State::Value { close: true }
                };
            }
            b'"' => self.string(role, false),
            b'-' => self.state = State::Num(Num::Minus),
            b'0' => self.state = State::Num(Num::Zero),
            b'1'..=b'9' => self.state = State::Num(Num::Int),
            b't' => self.state = State::Literal { rest: b"rue" },
            b'f' => self.state = State::Literal { rest: b"alse" },
            b'n' => self.state = State::Literal { rest: b"ull" },
            _ => self.bad(),
        }
    }

    fn close(&mut self, b: u8) {
        let object = self.in_object();
        if (b == b'}') != object {
            return self.bad();
        }
        // A sidecar without `gpus`, or a GPU without its source, is not one.
        if object && self.depth == 1 && !self.gpus_seen {
            return self.bad();
        }
        if object && self.depth == 3 && self.in_gpus && !self.source_seen {
            return self.bad();
        }
        if !object && self.depth == 2 && self.in_gpus {
            self.in_gpus = false;
        }
        self.depth -= 1;
        self.state = State::After;
    }

    fn string(&mut self, role: Role, is_key: bool) {
        self.role = role;
        self.is_key = is_key;
        self.checked = role != Role::Skipped;
        self.word_len = 0;
        self.utf8_left = 0;
        self.lead = None;
        self.state = State::Str;
    }

    fn keep(&mut self, b: u8) {
        if self.checked {
            if self.word_len < WORD_BYTES {
                self.word[self.word_len] = b;
            }
            self.word_len = self.word_len.saturating_add(1);
        }
    }

    fn string_byte(&mut self, b: u8) {
        if self.utf8_left > 0 {
            if !(self.utf8_lo..=self.utf8_hi).contains(&b) {
                return self.bad();
            }
            self.utf8_left -= 1;
            (self.utf8_lo, self.utf8_hi) = (0x80, 0xBF);
            return self.keep(b);
        }
        match b {
            0..=0x1F => self.bad(),
            b'"' => self.string_done(),
            b'\\' => self.state = State::Escape,
            0x80.. if self.checked => {
                let (left, lo, hi) = match b {
                    0xC2..=0xDF => (1, 0x80, 0xBF),
                    0xE0 => (2, 0xA0, 0xBF),
                    0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
                    0xED => (2, 0x80, 0x9F),
                    0xF0 => (3, 0x90, 0xBF),
                    0xF1..=0xF3 => (3, 0x80, 0xBF),
                    0xF4 => (3, 0x80, 0x8F),
                    _ => return self.bad(),
                };
                (self.utf8_left, self.utf8_lo, self.utf8_hi) = (left, lo, hi);
                self.keep(b);
            }
            _ => self.keep(b),
        }
    }

    fn escape(&mut self, b: u8) {
        let decoded = match (b, crate::json::short_escape(b)) {
            (_, Some(decoded)) => decoded,
            (b'u', None) => return self.start_hex(),
            _ => return self.bad(),
        };
        self.keep(decoded);
        self.state = State::Str;
    }

    fn start_hex(&mut self) {
        self.hex = 0;
        self.state = State::Hex { left: 4 };
    }

    fn hex_done(&mut self) {
        let n = self.hex;
        self.state = State::Str;
        if !self.checked {
            return;
        }
        match (self.lead.take(), n) {
            (None, 0xDC00..=0xDFFF) => self.bad(),
            (None, 0xD800..=0xDBFF) => {
                self.lead = Some(n);
                self.state = State::SurrogateBackslash;
            }
            (Some(_), 0xDC00..=0xDFFF) => {
                // A character beyond the BMP: four bytes, which match no word.
                self.word_len = self.word_len.saturating_add(4);
            }
            (Some(_), _) => self.bad(),
            (None, _) => {
                let mut utf8 = [0u8; 4];
                let c = char::from_u32(u32::from(n)).unwrap_or('\u{FFFD}');
                for &b in c.encode_utf8(&mut utf8).as_bytes() {
                    self.keep(b);
                }
            }
        }
    }

    fn word(&self) -> &[u8] {
        if self.word_len <= WORD_BYTES {
            &self.word[..self.word_len]
        } else {
            &[]
        }
    }

    fn string_done(&mut self) {
        if self.utf8_left > 0 {
            return self.bad();
        }
        if self.is_key {
            self.next = match (self.role, self.depth, self.word()) {
                (Role::Key, 1, b"gpus") => {
                    if self.gpus_seen {
                        return self.bad();
                    }
                    self.gpus_seen = true;
                    Role::Gpus
                }
                (Role::Key, 3, b"gpu_power_w_source") => {
                    if self.source_seen {
                        return self.bad();
                    }
                    self.source_seen = true;
                    Role::Source
                }
                _ => Role::Skipped,
            };
            self.state = State::Colon;
            return;
        }
        if self.role == Role::Source {
            let source = match self.word() {
                b"instant" => PowerSource::Instant,
                b"average" => PowerSource::Average,
                b"unknown" => PowerSource::Unknown,
                _ => return self.bad(),
            };
            if self.found.is_none() && source != PowerSource::Unknown {
                self.found = Some(source);
            }
        }
        self.state = State::After;
    }

    fn number(&mut self, n: Num, b: u8) {
        let digit = b.is_ascii_digit();
        let next = match (n, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, _) if digit => Num::Int,
            (Num::Int, _) if digit => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Dot | Num::Frac, _) if digit => Num::Frac,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
            (Num::Exp, b'+' | b'-') => Num::ExpSign,
            (Num::Exp | Num::ExpSign | Num::ExpDigits, _) if digit => Num::ExpDigits,
            // A leading zero followed by a digit, or a part without its digits.
            (Num::Zero, _) if digit => return self.bad(),
            (Num::Minus | Num::Dot | Num::Exp | Num::ExpSign, _) => return self.bad(),
            // The number ended at this byte, which comes after it.
            (Num::Zero | Num::Int | Num::Frac | Num::ExpDigits, _) => {
                self.state = State::After;
                return self.byte(b);
            }
        };
        self.state = State::Num(next);
    }
}

#[cfg(test)]
mod tests;
