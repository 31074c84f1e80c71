//! The scanner's string decoding: escapes, `\u` surrogate pairs and UTF-8 boundaries, so a string split anywhere decodes as a whole one.

use super::resumable::St;
use super::{EventScanner, Field, KEY_CAP, Target, WORD_CAP, classify};
use crate::json::classify::{STR, find};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Esc {
    None,
    Backslash,
    Hex { n: u8, acc: u16 },
}

impl<S: AsRef<[u8]> + AsMut<[u8]>> EventScanner<S> {
    pub(super) fn begin_str(&mut self, target: Target) {
        self.target = target;
        self.esc = Esc::None;
        self.pending_high = 0;
        match target {
            Target::TopKey | Target::EvKey => {
                self.key.clear();
                self.key_over = false;
            }
            Target::Cat => {
                self.cat_len = 0;
                self.cat_trunc = false;
            }
            Target::Name => {
                self.name_len = 0;
                self.name_trunc = false;
            }
            Target::Word => {
                self.word.clear();
                self.word_over = false;
            }
        }
        self.st = St::Str;
    }

    /// Decodes string bytes from `i` into the current target; `Some(end)` after the closing
    /// quote.
    pub(super) fn decode_str(&mut self, input: &[u8], mut i: usize) -> Option<usize> {
        let n = input.len();
        loop {
            if self.esc != Esc::None {
                if i == n {
                    return None;
                }
                if self.esc_byte(input[i]) {
                    i += 1;
                }
                continue;
            }
            let j = find(input, i, STR);
            if j > i {
                self.flush_pending();
                self.push(&input[i..j]);
            }
            if j == n {
                return None;
            }
            let b = input[j];
            i = j + 1;
            match b {
                b'"' => {
                    self.flush_pending();
                    return Some(i);
                }
                b'\\' => self.esc = Esc::Backslash,
                _ => {
                    self.warnings.control_chars += 1;
                    self.flush_pending();
                    self.push(&[b]);
                }
            }
        }
    }

    /// One byte of an escape sequence; false when the byte was not consumed (a broken `\u`).
    fn esc_byte(&mut self, b: u8) -> bool {
        match self.esc {
            Esc::Backslash => {
                self.esc = Esc::None;
                let out = match (b, crate::json::short_escape(b)) {
                    (_, Some(out)) => out,
                    (b'u', None) => {
                        self.esc = Esc::Hex { n: 0, acc: 0 };
                        return true;
                    }
                    _ => {
                        self.warnings.bad_escapes += 1;
                        self.flush_pending();
                        self.push(&[b'\\', b]);
                        return true;
                    }
                };
                self.flush_pending();
                self.push(&[out]);
                true
            }
            Esc::Hex { n, acc } => {
                let v = match b {
                    b'0'..=b'9' => b - b'0',
                    b'a'..=b'f' => b - b'a' + 10,
                    b'A'..=b'F' => b - b'A' + 10,
                    _ => {
                        self.esc = Esc::None;
                        self.warnings.bad_escapes += 1;
                        self.flush_pending();
                        self.push_char(char::REPLACEMENT_CHARACTER);
                        return false;
                    }
                };
                let acc = (acc << 4) | u16::from(v);
                if n + 1 < 4 {
                    self.esc = Esc::Hex { n: n + 1, acc };
                } else {
                    self.esc = Esc::None;
                    self.code_unit(acc);
                }
                true
            }
            Esc::None => true,
        }
    }

    fn code_unit(&mut self, u: u16) {
        match u {
            0xD800..=0xDBFF => {
                self.flush_pending();
                self.pending_high = u;
            }
            0xDC00..=0xDFFF => {
                if self.pending_high != 0 {
                    let hi = u32::from(self.pending_high - 0xD800);
                    let lo = u32::from(u - 0xDC00);
                    self.pending_high = 0;
                    let c = char::from_u32(0x10000 + (hi << 10) + lo)
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    self.push_char(c);
                } else {
                    self.warnings.bad_escapes += 1;
                    self.push_char(char::REPLACEMENT_CHARACTER);
                }
            }
            _ => {
                self.flush_pending();
                let c = char::from_u32(u32::from(u)).unwrap_or(char::REPLACEMENT_CHARACTER);
                self.push_char(c);
            }
        }
    }

    #[inline]
    fn flush_pending(&mut self) {
        if self.pending_high != 0 {
            self.pending_high = 0;
            self.warnings.bad_escapes += 1;
            self.push_char(char::REPLACEMENT_CHARACTER);
        }
    }

    fn push_char(&mut self, c: char) {
        let mut tmp = [0u8; 4];
        let s = c.encode_utf8(&mut tmp);
        let len = s.len();
        self.push(&tmp[..len]);
    }

    /// Appends decoded bytes to the current target, cutting at its capacity.
    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        match self.target {
            Target::TopKey | Target::EvKey => {
                let k = bytes.len().min(KEY_CAP - self.key.len());
                // Cut to the room left, so the extension always fits.
                let _ = self.key.extend_from_slice(&bytes[..k]);
                self.key_over |= k < bytes.len();
            }
            Target::Word => self.push_word(bytes),
            Target::Cat => {
                let cap = self.str_cap;
                let buf = self.storage.as_mut();
                let k = bytes.len().min(cap - self.cat_len);
                buf[self.cat_len..self.cat_len + k].copy_from_slice(&bytes[..k]);
                self.cat_len += k;
                self.cat_trunc |= k < bytes.len();
            }
            Target::Name => {
                let cap = self.str_cap;
                let buf = self.storage.as_mut();
                let k = bytes.len().min(cap - self.name_len);
                let at = cap + self.name_len;
                buf[at..at + k].copy_from_slice(&bytes[..k]);
                self.name_len += k;
                self.name_trunc |= k < bytes.len();
            }
        }
    }

    #[inline]
    pub(super) fn push_word(&mut self, bytes: &[u8]) {
        let k = bytes.len().min(WORD_CAP - self.word.len());
        // Cut to the room left, so the extension always fits.
        let _ = self.word.extend_from_slice(&bytes[..k]);
        self.word_over |= k < bytes.len();
    }

    pub(super) fn end_string(&mut self) {
        match self.target {
            Target::TopKey => self.st = St::TopColon,
            Target::EvKey => {
                self.field = if self.key_over {
                    Field::Other
                } else {
                    classify(&self.key)
                };
                self.st = St::EvColon;
            }
            Target::Cat => {
                self.cat_some = true;
                if self.cat_trunc {
                    self.warnings.truncated_strings += 1;
                    self.cat_len = utf8_boundary(&self.storage.as_ref()[..self.cat_len]);
                }
                self.st = St::EvCommaOrEnd;
            }
            Target::Name => {
                self.name_some = true;
                if self.name_trunc {
                    self.warnings.truncated_strings += 1;
                    let cap = self.str_cap;
                    self.name_len = utf8_boundary(&self.storage.as_ref()[cap..cap + self.name_len]);
                }
                self.st = St::EvCommaOrEnd;
            }
            Target::Word => {
                self.end_word(true);
                self.st = St::EvCommaOrEnd;
            }
        }
    }

    /// Stores the collected word (a bareword, or a string when `quoted`) into its field.
    pub(super) fn end_word(&mut self, quoted: bool) {
        let word = self.word.clone();
        let text = &word[..];
        let over = self.word_over;
        self.set_word(self.field, text, quoted, over);
    }
}

/// Length of the longest prefix of `s` that does not end inside a UTF-8 sequence.
fn utf8_boundary(s: &[u8]) -> usize {
    let n = s.len();
    // Walk back over at most 3 continuation bytes to the lead byte of the last sequence.
    let mut k = n;
    while k > 0 && n - k < 4 && s[k - 1] & 0xC0 == 0x80 {
        k -= 1;
    }
    if k == 0 {
        return n;
    }
    let lead = s[k - 1];
    let need = match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return n,
    };
    if n - (k - 1) < need { k - 1 } else { n }
}
