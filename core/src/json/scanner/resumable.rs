//! The resumable path: a byte-at-a-time state machine that reads any event, split across chunks or not; the reference the fast path is held to.
//!
//! One explicit state per structural position; every state consumes as many bytes as it can in
//! a tight loop over a byte-class table before returning to the dispatch, so an event wholly
//! inside the chunk is read without ever saving or restoring partial state, and an event split
//! across chunks resumes exactly where it stopped. Each input byte is examined once.

use super::{EventScanner, Field, Target, parse_int};
use crate::json::classify::{CLASS, DELIM, SKIP, STR, WS, find};
use crate::json::{ArgValue, ArgsSniff, IdField, NumField, Scan, ScanError, ScanErrorKind};

/// First index at or after `i` that is not whitespace, or `input.len()`.
#[inline(always)]
fn skip_ws(input: &[u8], i: usize) -> usize {
    // Most gaps are zero bytes or one space: test those before the word loop.
    if i < input.len() && input[i] > 0x20 {
        return i;
    }
    if i + 1 < input.len() && input[i] == b' ' && input[i + 1] > 0x20 {
        return i + 1;
    }
    find(input, i, WS)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum St {
    Start,
    TopKeyOrEnd,
    TopKey,
    TopColon,
    TopValue,
    /// The integer value of the top-level `baseTimeNanoseconds`.
    TopWord,
    TopCommaOrEnd,
    ArrFirst,
    ArrElem,
    ArrCommaOrEnd,
    EvKeyOrEnd,
    EvKey,
    EvColon,
    EvValue,
    EvCommaOrEnd,
    Str,
    Word,
    Skip,
    Done,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>> EventScanner<S> {
    pub(super) fn run(&mut self, input: &[u8]) -> Result<(Scan, usize), ScanError> {
        let n = input.len();
        let mut i = 0usize;
        // The usual place, between two events: `,` and whitespace before `{` are passed here
        // (what the loop below does through one more state).
        if self.st == St::ArrCommaOrEnd && n > 1 && input[0] == b',' {
            let j = skip_ws(input, 1);
            if j < n && input[j] == b'{' {
                self.st = St::ArrElem;
                i = j;
            }
        }
        loop {
            match self.st {
                St::Str => {
                    match self.decode_str(input, i) {
                        Some(j) => i = j,
                        None => return Ok((Scan::NeedsInput, n)),
                    }
                    self.end_string();
                    continue;
                }
                St::Word => {
                    let j = find(input, i, DELIM);
                    self.push_word(&input[i..j]);
                    if j == n {
                        return Ok((Scan::NeedsInput, n));
                    }
                    i = j;
                    self.end_word(false);
                    self.st = St::EvCommaOrEnd;
                    continue;
                }
                St::TopWord => {
                    let j = find(input, i, DELIM);
                    self.push_word(&input[i..j]);
                    if j == n {
                        return Ok((Scan::NeedsInput, n));
                    }
                    i = j;
                    if !self.word_over {
                        self.base_time_ns = parse_int(&self.word);
                    }
                    self.base_time_problem = (self.word_over || self.base_time_ns.is_none())
                        .then(|| crate::json::BaseTimeProblem::number(&self.word, self.word_over));
                    self.st = St::TopCommaOrEnd;
                    continue;
                }
                St::Skip => {
                    let from = i;
                    let end = self.skip(input, i);
                    if self.sniffing {
                        self.sniff.push(&input[from..end.unwrap_or(n)]);
                    }
                    match end {
                        Some(j) => i = j,
                        None => return Ok((Scan::NeedsInput, n)),
                    }
                    if self.sniffing {
                        self.sniffing = false;
                        self.arg = self.sniff.finish();
                    }
                    if self.skip_ret == St::ArrCommaOrEnd {
                        self.in_event = false;
                    }
                    self.st = self.skip_ret;
                    continue;
                }
                St::Done => {
                    let junk = input[i..]
                        .iter()
                        .filter(|&&b| CLASS[b as usize] & WS == 0)
                        .count();
                    self.warnings.trailing_bytes += junk as u64;
                    return Ok((Scan::NeedsInput, n));
                }
                _ => {}
            }
            i = skip_ws(input, i);
            if i == n {
                return Ok((Scan::NeedsInput, n));
            }
            let b = input[i];
            match self.st {
                St::Start => match b {
                    b'{' => {
                        self.st = St::TopKeyOrEnd;
                        i += 1;
                    }
                    b'[' => {
                        self.bare = true;
                        self.found_array = true;
                        self.st = St::ArrFirst;
                        i += 1;
                    }
                    // A UTF-8 byte-order mark.
                    0xEF | 0xBB | 0xBF if self.offset + (i as u64) < 3 => i += 1,
                    _ => return Err(self.err(ScanErrorKind::NotJson, i)),
                },
                St::TopKeyOrEnd | St::TopKey => match b {
                    b'"' => {
                        self.begin_str(Target::TopKey);
                        i += 1;
                    }
                    b'}' => {
                        if self.st == St::TopKey {
                            self.warnings.trailing_commas += 1;
                        }
                        self.st = St::Done;
                        i += 1;
                    }
                    _ => return Err(self.err(ScanErrorKind::ExpectedKey, i)),
                },
                St::TopColon => {
                    if b != b':' {
                        return Err(self.err(ScanErrorKind::ExpectedColon, i));
                    }
                    self.st = St::TopValue;
                    i += 1;
                }
                St::TopValue => {
                    if !self.key_over && &self.key[..] == b"traceEvents" {
                        if b == b'[' {
                            self.found_array = true;
                            self.st = St::ArrFirst;
                            i += 1;
                            continue;
                        }
                        self.warnings.non_array_trace_events += 1;
                    }
                    if (b == b'-' || b.is_ascii_digit())
                        && !self.key_over
                        && &self.key[..] == b"baseTimeNanoseconds"
                    {
                        self.word.clear();
                        self.word_over = false;
                        self.st = St::TopWord;
                        continue;
                    }
                    if !self.key_over && &self.key[..] == b"baseTimeNanoseconds" {
                        self.base_time_problem = Some(crate::json::BaseTimeProblem::value(b));
                    }
                    i = self.begin_skip(b, i, St::TopCommaOrEnd);
                }
                St::TopCommaOrEnd => {
                    self.st = match b {
                        b',' => St::TopKey,
                        b'}' => St::Done,
                        _ => return Err(self.err(ScanErrorKind::ExpectedObjectComma, i)),
                    };
                    i += 1;
                }
                St::ArrFirst | St::ArrElem => match b {
                    b'{' => {
                        self.begin_event(i);
                        if let Some(end) = self.fast_event(input, i) {
                            i = end;
                            if self.end_event(end) {
                                return Ok((Scan::Event, end));
                            }
                            continue;
                        }
                        // Cut by the chunk end or unusual: the resumable path from the brace.
                        self.begin_event(i);
                        i += 1;
                    }
                    b']' => {
                        if self.st == St::ArrElem {
                            self.warnings.trailing_commas += 1;
                        }
                        self.st = if self.bare {
                            St::Done
                        } else {
                            St::TopCommaOrEnd
                        };
                        i += 1;
                    }
                    b',' => return Err(self.err(ScanErrorKind::ExpectedElement, i)),
                    _ => {
                        self.warnings.non_object_events += 1;
                        i = self.begin_skip(b, i, St::ArrCommaOrEnd);
                    }
                },
                St::ArrCommaOrEnd => {
                    self.st = match b {
                        b',' => St::ArrElem,
                        b']' if self.bare => St::Done,
                        b']' => St::TopCommaOrEnd,
                        _ => return Err(self.err(ScanErrorKind::ExpectedArrayComma, i)),
                    };
                    i += 1;
                }
                St::EvKeyOrEnd | St::EvKey => match b {
                    b'"' => {
                        self.begin_str(Target::EvKey);
                        i += 1;
                    }
                    b'}' => {
                        if self.st == St::EvKey {
                            self.warnings.trailing_commas += 1;
                        }
                        i += 1;
                        if self.end_event(i) {
                            return Ok((Scan::Event, i));
                        }
                    }
                    _ => self.recover(),
                },
                St::EvColon => {
                    if b == b':' {
                        self.st = St::EvValue;
                        i += 1;
                    } else {
                        self.recover();
                    }
                }
                St::EvValue => {
                    let f = self.field;
                    match b {
                        b'"' => match f {
                            Field::Other | Field::Args => {
                                i = self.begin_skip(b, i, St::EvCommaOrEnd);
                            }
                            Field::Cat => {
                                self.begin_str(Target::Cat);
                                i += 1;
                            }
                            Field::Name => {
                                self.begin_str(Target::Name);
                                i += 1;
                            }
                            _ => {
                                self.begin_str(Target::Word);
                                i += 1;
                            }
                        },
                        b'{' | b'[' => {
                            self.clear_field(f);
                            i = self.begin_skip(b, i, St::EvCommaOrEnd);
                            // Read for a counter's number whatever the key order (`ph` may
                            // come later); `event()` returns it for a counter only.
                            if b == b'{' && f == Field::Args {
                                self.sniffing = true;
                                self.sniff = ArgsSniff::new();
                            }
                        }
                        b'}' | b',' | b']' | b':' => self.recover(),
                        _ => match f {
                            Field::Other | Field::Args => {
                                i = self.begin_skip(b, i, St::EvCommaOrEnd);
                            }
                            Field::Cat | Field::Name => {
                                self.clear_field(f);
                                i = self.begin_skip(b, i, St::EvCommaOrEnd);
                            }
                            _ => {
                                self.word.clear();
                                self.word_over = false;
                                self.st = St::Word;
                            }
                        },
                    }
                }
                St::EvCommaOrEnd => match b {
                    b',' => {
                        self.st = St::EvKey;
                        i += 1;
                    }
                    b'}' => {
                        i += 1;
                        if self.end_event(i) {
                            return Ok((Scan::Event, i));
                        }
                    }
                    _ => self.recover(),
                },
                St::Str | St::Word | St::TopWord | St::Skip | St::Done => unreachable!(),
            }
        }
    }

    fn begin_event(&mut self, i: usize) {
        self.in_event = true;
        self.ev_start = self.offset + i as u64;
        self.ph.clear();
        self.cat_some = false;
        self.cat_len = 0;
        self.name_some = false;
        self.name_len = 0;
        self.ts = NumField::Missing;
        self.dur = NumField::Missing;
        self.pid = IdField::Missing;
        self.tid = IdField::Missing;
        self.id = IdField::Missing;
        self.scope = IdField::Missing;
        self.quoted_times = 0;
        self.sniffing = false;
        self.arg = ArgValue::Missing;
        self.st = St::EvKeyOrEnd;
    }

    /// After the closing brace (at `i_after`): true when the event is to be returned.
    fn end_event(&mut self, i_after: usize) -> bool {
        self.in_event = false;
        self.st = St::ArrCommaOrEnd;
        let size = self.offset + i_after as u64 - self.ev_start;
        if size > self.max_event_bytes {
            self.warnings.oversized_events += 1;
            return false;
        }
        self.events += 1;
        true
    }

    /// Broken syntax inside an event: skip to its closing brace, without consuming the
    /// offending byte (the skipper reads it).
    fn recover(&mut self) {
        self.warnings.malformed_events += 1;
        self.sniffing = false;
        self.skip_depth = 1;
        self.skip_in_str = false;
        self.skip_esc = false;
        self.skip_word = false;
        self.skip_ret = St::ArrCommaOrEnd;
        self.st = St::Skip;
    }

    /// Starts skipping the value that begins with `b` at `i`; returns the new position.
    fn begin_skip(&mut self, b: u8, i: usize, ret: St) -> usize {
        self.skip_ret = ret;
        self.skip_esc = false;
        self.st = St::Skip;
        match b {
            b'"' => {
                self.skip_depth = 0;
                self.skip_in_str = true;
                self.skip_word = false;
                i + 1
            }
            b'{' | b'[' => {
                self.skip_depth = 1;
                self.skip_in_str = false;
                self.skip_word = false;
                i + 1
            }
            _ => {
                self.skip_depth = 0;
                self.skip_in_str = false;
                self.skip_word = true;
                i
            }
        }
    }

    /// Skips from `i`; `Some(end)` when the value is complete.
    fn skip(&mut self, input: &[u8], mut i: usize) -> Option<usize> {
        let n = input.len();
        if self.skip_word {
            let j = find(input, i, DELIM);
            return if j == n { None } else { Some(j) };
        }
        loop {
            if self.skip_in_str {
                if self.skip_esc {
                    if i == n {
                        return None;
                    }
                    self.skip_esc = false;
                    i += 1;
                }
                loop {
                    let j = find(input, i, STR);
                    if j == n {
                        return None;
                    }
                    i = j + 1;
                    match input[j] {
                        b'"' => {
                            self.skip_in_str = false;
                            if self.skip_depth == 0 {
                                return Some(i);
                            }
                            break;
                        }
                        b'\\' => {
                            if i == n {
                                self.skip_esc = true;
                                return None;
                            }
                            i += 1;
                        }
                        _ => self.warnings.control_chars += 1,
                    }
                }
            } else {
                let j = find(input, i, SKIP);
                if j == n {
                    return None;
                }
                i = j + 1;
                match input[j] {
                    b'"' => self.skip_in_str = true,
                    b'{' | b'[' => self.skip_depth += 1,
                    _ => {
                        self.skip_depth -= 1;
                        if self.skip_depth == 0 {
                            return Some(i);
                        }
                    }
                }
            }
        }
    }
}
