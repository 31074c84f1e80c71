//! The fast path: an event wholly inside the chunk read in one pass (learned gaps, a key table, fast numbers), because most events are.
//!
//! The resumable path tries each event wholly inside the chunk here first (`fast_event`), read
//! in one pass without states: byte searches and the skip of `args` come from
//! [`classify`](crate::json::classify) (SSE2 on x86_64), known keys from a perfect-hash table, and
//! the bytes between two values (`, "cat": `) from a small table of gaps learned from earlier
//! events ([`Gap`]). It gives up (`None`, nothing counted) on anything that needs a warning, an
//! escape decoded or the chunk's end, and the resumable path then reads the event from its
//! brace: that path is the reference, and the tests hold the two to the same results.

use super::{EventScanner, Field, WORD_CAP, classify, quoted_bit};
use crate::json::args::read_args;
use crate::json::classify::{CLASS, DELIM, STR, WS, find, load, skip_container, skip_str};
use crate::json::{ArgValue, IdField, NumField};

/// Fast path: the first index at or after `i` that is not whitespace, `None` at the end of
/// the input.
#[inline(always)]
fn nonws(s: &[u8], i: usize) -> Option<usize> {
    // Gaps are short and of few lengths: a predictable byte loop first.
    let mut j = i;
    while j < s.len() && j < i + 8 {
        if s[j] > b' ' {
            return Some(j);
        }
        j += 1;
    }
    let j = find(s, j, WS);
    if j < s.len() { Some(j) } else { None }
}

/// Fast path: from just after a key's closing quote, over the whitespace, the colon and the
/// whitespace before the value; the value's first index.
#[inline(always)]
fn colon_ws(s: &[u8], mut i: usize) -> Option<usize> {
    if i < s.len() && s[i] == b':' {
        i += 1;
    } else {
        i = nonws(s, i)?;
        if s[i] != b':' {
            return None;
        }
        i += 1;
    }
    if i + 1 < s.len() && s[i] == b' ' && s[i + 1] > b' ' {
        Some(i + 1)
    } else {
        nonws(s, i)
    }
}

/// Fast path: from the end of a value (or, with `first`, from just after the event's opening
/// brace) over the separator, the key, the colon and the whitespace to the next value; or
/// the index after the closing brace.
#[inline(always)]
fn fast_gap(s: &[u8], mut i: usize, first: bool) -> Option<Step> {
    let n = s.len();
    if first {
        i = nonws(s, i)?;
        if s[i] == b'}' {
            return Some(Step::End(i + 1));
        }
    } else if i + 2 < n && s[i] == b',' {
        // `, "` or `,` and a line break.
        i = if s[i + 1] == b' ' && s[i + 2] == b'"' {
            i + 2
        } else {
            nonws(s, i + 1)?
        };
    } else {
        i = nonws(s, i)?;
        match s[i] {
            b',' => i = nonws(s, i + 1)?,
            b'}' => return Some(Step::End(i + 1)),
            _ => return None,
        }
    }
    if s[i] != b'"' {
        return None;
    }
    // The key, the colon and the whitespace before the value.
    match known_key(s, i) {
        Some((field, ke, spaced)) => {
            // `"key": v`, the usual layout: one check for the colon and the space.
            let v = if spaced && ke + 3 < n && s[ke + 3] > b' ' {
                ke + 3
            } else {
                colon_ws(s, ke + 1)?
            };
            Some(Step::Value(field, v))
        }
        None => {
            let ke = find(s, i + 1, STR);
            if ke >= n || s[ke] != b'"' {
                return None;
            }
            let field = classify(&s[i + 1..ke]);
            Some(Step::Value(field, colon_ws(s, ke + 1)?))
        }
    }
}

/// Gap rows: one per field a gap can follow, and one for the gap after the opening brace.
pub(super) const GAP_ROWS: usize = Field::Other as usize + 2;
const GAP_AFTER_BRACE: usize = GAP_ROWS - 1;
/// Gap columns: the events' `ph` (its first byte's low bits) picks one.
pub(super) const GAP_COLS: usize = 8;

/// The bytes from the end of a value (or the opening brace) to the start of the next value,
/// as the fast path last parsed them at the same place of an event (e.g. `, "cat": `), and
/// the field they led to. Where the input holds the same bytes again, followed by a byte that
/// is not whitespace, parsing them again would give the same field and value start, so the
/// fast path takes them in one compare. A learned shape, never a guess: a mismatch parses.
#[derive(Clone, Copy)]
pub(super) struct Gap {
    /// The bytes, little-endian, first eight then next eight (zero past `len`).
    bytes: [u64; 2],
    /// Masks of the first `len` bytes in `bytes`.
    masks: [u64; 2],
    /// 1..=15, or 0 when nothing was learned.
    len: u8,
    field: Field,
}

impl Gap {
    pub(super) const EMPTY: Gap = Gap {
        bytes: [0, 0],
        masks: [0, 0],
        len: 0,
        field: Field::Other,
    };

    /// The gap `s[..len]` (`s` holds at least 16 bytes, `len` is below 16).
    #[inline(always)]
    fn new(s: &[u8], len: usize, field: Field) -> Gap {
        let m0 = if len >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * len)) - 1
        };
        let m1 = if len > 8 {
            (1u64 << (8 * (len - 8))) - 1
        } else {
            0
        };
        Gap {
            bytes: [load(s, 0) & m0, load(s, 8) & m1],
            masks: [m0, m1],
            len: len as u8,
            field,
        }
    }

    /// Whether the input at `i` (16 bytes at least) starts with this gap.
    #[inline(always)]
    fn matches(&self, s: &[u8], i: usize) -> bool {
        let d0 = (load(s, i) ^ self.bytes[0]) & self.masks[0];
        let d1 = (load(s, i + 8) ^ self.bytes[1]) & self.masks[1];
        self.len != 0 && d0 | d1 == 0
    }
}

/// What the fast path found after a value: the next value's field and first index, or the
/// index after the event's closing brace.
enum Step {
    Value(Field, usize),
    End(usize),
}

impl<S: AsRef<[u8]> + AsMut<[u8]>> EventScanner<S> {
    /// Reads the event whose `{` is at `start` when it lies wholly inside `s` and holds nothing
    /// that needs a warning or an escape decoded; returns the index after its `}`. `None`
    /// means "use the resumable path from the brace" (nothing was counted).
    #[inline(always)]
    pub(super) fn fast_event(&mut self, s: &[u8], start: usize) -> Option<usize> {
        self.in_fast = true;
        self.fast_args = None;
        let r = self.fast_event_inner(s, start);
        self.in_fast = false;
        // A counter's number is read once the event is whole, whatever the key order: only
        // a counter's `args` is parsed, every other event's is skipped as before.
        if r.is_some() && self.ph.len() == 1 && self.ph[0] == b'C' {
            self.arg = match self.fast_args {
                Some((a, b)) => read_args(&s[a + 1..b]),
                None => ArgValue::Missing,
            };
        }
        r
    }

    #[inline(always)]
    fn fast_event_inner(&mut self, s: &[u8], start: usize) -> Option<usize> {
        let n = s.len();
        let mut i = start + 1;
        let mut row = GAP_AFTER_BRACE;
        let mut col = 0;
        loop {
            // From the end of a value (or the brace) to the next value: in one compare when
            // the bytes are those learned at this place, else parsed (and learned).
            let at = col + row;
            let gap = &self.gaps[at];
            let field = if i + 16 <= n && gap.matches(s, i) && s[i + usize::from(gap.len)] > b' ' {
                i += usize::from(gap.len);
                gap.field
            } else {
                let from = i;
                let (field, v) = match fast_gap(s, i, row == GAP_AFTER_BRACE)? {
                    Step::Value(field, v) => (field, v),
                    Step::End(e) => {
                        // Whitespace and `}` end the event whatever follows; learned where a
                        // non-space byte follows, as the gaps before values are.
                        if e - from < 16 && from + 16 <= n && e < n && s[e] > b' ' {
                            self.gaps[at] = Gap::new(&s[from..], e - from, Field::End);
                        }
                        return Some(e);
                    }
                };
                if v - from < 16 && from + 16 <= n {
                    self.gaps[at] = Gap::new(&s[from..], v - from, field);
                }
                i = v;
                field
            };
            row = field as usize;
            match field {
                Field::End => return Some(i),
                Field::Other => i = skip_value_fast(s, i)?,
                Field::Args => {
                    let from = i;
                    i = skip_value_fast(s, i)?;
                    if s[from] == b'{' {
                        self.fast_args = Some((from, i));
                    }
                }
                Field::Cat | Field::Name => {
                    if s[i] != b'"' {
                        return None;
                    }
                    let e = find(s, i + 1, STR);
                    if e >= n || s[e] != b'"' || e - (i + 1) > self.str_cap {
                        return None;
                    }
                    let len = e - (i + 1);
                    let cap = self.str_cap;
                    let at = if field == Field::Cat { 0 } else { cap };
                    let buf = self.storage.as_mut();
                    if len <= 32 && cap >= 32 && i + 33 <= n {
                        // Fixed-size copy (two vector moves) instead of a memmove call; the
                        // bytes past `len` are scratch.
                        buf[at..at + 32].copy_from_slice(&s[i + 1..i + 33]);
                    } else if len <= 64 && cap >= 64 && i + 65 <= n {
                        buf[at..at + 64].copy_from_slice(&s[i + 1..i + 65]);
                    } else {
                        buf[at..at + len].copy_from_slice(&s[i + 1..e]);
                    }
                    if field == Field::Cat {
                        self.cat_len = len;
                        self.cat_some = true;
                    } else {
                        self.name_len = len;
                        self.name_some = true;
                    }
                    i = e + 1;
                }
                Field::Ts | Field::Dur if s[i] != b'"' => {
                    if let Some((ns, e)) = fast_us(s, i) {
                        if field == Field::Ts {
                            self.ts = NumField::Ns(ns);
                        } else {
                            self.dur = NumField::Ns(ns);
                        }
                        self.quoted_times &= !quoted_bit(field);
                        i = e;
                    } else {
                        let e = find(s, i, DELIM);
                        if e >= n || e == i {
                            return None;
                        }
                        if e - i > WORD_CAP || !self.set_word(field, &s[i..e], false, false) {
                            return None;
                        }
                        i = e;
                    }
                }
                Field::Ph
                    if i + 2 < n
                        && s[i] == b'"'
                        && s[i + 2] == b'"'
                        && s[i + 1] >= 0x20
                        && s[i + 1] != b'\\'
                        && s[i + 1] != b'"' =>
                {
                    self.ph.clear();
                    let _ = self.ph.push(s[i + 1]);
                    i += 3;
                    col = usize::from(s[i - 2]) % GAP_COLS * GAP_ROWS;
                }
                Field::Pid | Field::Tid | Field::Id if s[i] != b'"' => {
                    if let Some((v, e)) = fast_int(s, i) {
                        let v = IdField::Int(v);
                        match field {
                            Field::Pid => self.pid = v,
                            Field::Tid => self.tid = v,
                            _ => self.id = v,
                        }
                        i = e;
                    } else {
                        i = self.fast_word(s, i, field)?;
                    }
                }
                _ => {
                    i = self.fast_word(s, i, field)?;
                    if field == Field::Ph {
                        col = usize::from(self.ph.first().copied().unwrap_or(0)) % GAP_COLS
                            * GAP_ROWS;
                    }
                }
            }
        }
    }

    /// Fast path: any other value of a known field at `i` (a string or a bareword), stored
    /// by [`set_word`](Self::set_word); the index after it, or `None` where a warning or the
    /// resumable path is due.
    #[inline(always)]
    fn fast_word(&mut self, s: &[u8], mut i: usize, field: Field) -> Option<usize> {
        let (text, quoted) = if s[i] == b'"' {
            let e = find(s, i + 1, STR);
            if e >= s.len() || s[e] != b'"' {
                return None;
            }
            let t = &s[i + 1..e];
            i = e + 1;
            (t, true)
        } else {
            if CLASS[s[i] as usize] & DELIM != 0 {
                return None;
            }
            let e = find(s, i, DELIM);
            if e >= s.len() {
                return None;
            }
            let t = &s[i..e];
            i = e;
            (t, false)
        };
        if text.len() > WORD_CAP || !self.set_word(field, text, quoted, false) {
            return None;
        }
        Some(i)
    }
}

/// Fast path: a known event key whose opening quote is at `i`, without a branch per key: the
/// key's first three bytes pick one table slot by a multiplicative perfect hash, and one
/// compare of the next eight bytes (key plus closing quote) confirms it. Returns the field,
/// the closing quote's index, and whether `: ` follows it.
#[inline(always)]
pub(super) fn known_key(s: &[u8], i: usize) -> Option<(Field, usize, bool)> {
    /// Multiplier found by search so that the ten keys' 3-byte prefixes land in distinct slots.
    const MAGIC: u64 = 0x71e0_c07e_9e11_5e4b;
    const fn slot(k: &[u8]) -> usize {
        let p = (k[0] as u64) | ((k[1] as u64) << 8) | ((k[2] as u64) << 16);
        (p.wrapping_mul(MAGIC) >> 60) as usize
    }
    /// One slot: the key and its closing quote, and the same followed by `: `, each as a
    /// little-endian pattern with its mask; the field; the key's length. An empty slot has
    /// patterns outside their masks, which nothing matches.
    #[derive(Clone, Copy)]
    struct Slot {
        key: u64,
        key_mask: u64,
        spaced: u64,
        spaced_mask: u64,
        field: Field,
        len: usize,
    }
    const fn pattern(bytes: &[u8]) -> (u64, u64) {
        let mut p = 0u64;
        let mut j = 0;
        while j < bytes.len() {
            p |= (bytes[j] as u64) << (8 * j);
            j += 1;
        }
        let mask = if bytes.len() == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * bytes.len())) - 1
        };
        (p, mask)
    }
    const TABLE: [Slot; 16] = {
        // Each key with its closing quote, colon and space (8 bytes at most).
        const KEYS: [(&[u8], Field); 10] = [
            (b"ph\": ", Field::Ph),
            (b"cat\": ", Field::Cat),
            (b"name\": ", Field::Name),
            (b"pid\": ", Field::Pid),
            (b"tid\": ", Field::Tid),
            (b"ts\": ", Field::Ts),
            (b"dur\": ", Field::Dur),
            (b"args\": ", Field::Args),
            (b"id\": ", Field::Id),
            (b"scope\": ", Field::Scope),
        ];
        let empty = Slot {
            key: 1,
            key_mask: 0,
            spaced: 1,
            spaced_mask: 0,
            field: Field::Other,
            len: 0,
        };
        let mut t = [empty; 16];
        let mut k = 0;
        while k < KEYS.len() {
            let (spaced_key, field) = KEYS[k];
            let (key_bytes, _) = spaced_key.split_at(spaced_key.len() - 2);
            let at = slot(spaced_key);
            assert!(t[at].key_mask == 0, "perfect hash collision");
            let (key, key_mask) = pattern(key_bytes);
            let (spaced, spaced_mask) = pattern(spaced_key);
            t[at] = Slot {
                key,
                key_mask,
                spaced,
                spaced_mask,
                field,
                len: key_bytes.len() - 1,
            };
            k += 1;
        }
        t
    };
    if i + 9 > s.len() {
        return None;
    }
    let w = load(s, i + 1);
    let e = TABLE[((w & 0xFF_FFFF).wrapping_mul(MAGIC) >> 60) as usize];
    if w & e.spaced_mask == e.spaced {
        Some((e.field, i + 1 + e.len, true))
    } else if w & e.key_mask == e.key {
        Some((e.field, i + 1 + e.len, false))
    } else {
        None
    }
}

/// Eight ASCII digits in `x` (first digit in the low byte) as their value, or `None` when a
/// byte is not a digit (SWAR, after Lemire).
#[inline(always)]
pub(super) fn eight_digits(x: u64) -> Option<u64> {
    let all_digits = ((x & 0xF0F0_F0F0_F0F0_F0F0)
        | ((x.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4))
        == 0x3333_3333_3333_3333;
    if !all_digits {
        return None;
    }
    let mut v = x - 0x3030_3030_3030_3030;
    v = (v * 10) + (v >> 8);
    v = (((v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32)))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    Some(v)
}

/// Fast path: `[-]digits[.d[d[d]]]` (at most 16 integer digits) at `i` followed by a delimiter,
/// as nanoseconds and the delimiter's index; the same value [`parse_us_to_ns`](crate::json::parse_us_to_ns) gives.
#[inline(always)]
fn fast_us(s: &[u8], i: usize) -> Option<(i64, usize)> {
    let n = s.len();
    let neg = s[i] == b'-';
    let mut j = i + usize::from(neg);
    let d0 = j;
    let mut acc: u64 = 0;
    // Epoch microseconds have 16 integer digits: two SWAR steps.
    while j + 8 <= n && j - d0 < 16 {
        match eight_digits(load(s, j)) {
            Some(v) => {
                acc = acc * 100_000_000 + v;
                j += 8;
            }
            None => break,
        }
    }
    while j < n && s[j].is_ascii_digit() {
        acc = acc.wrapping_mul(10).wrapping_add(u64::from(s[j] - b'0'));
        j += 1;
        if j - d0 > 16 {
            return None;
        }
    }
    if j == d0 || j - d0 > 16 {
        return None;
    }
    let mut scale = 1000;
    if j + 4 < n
        && s[j] == b'.'
        && s[j + 1].is_ascii_digit()
        && s[j + 2].is_ascii_digit()
        && s[j + 3].is_ascii_digit()
    {
        // The usual three decimals (a fourth one fails the delimiter test below).
        let d = |k: usize| u64::from(s[j + k] - b'0');
        acc = acc * 1000 + d(1) * 100 + d(2) * 10 + d(3);
        scale = 1;
        j += 4;
    } else if j < n && s[j] == b'.' {
        j += 1;
        let f0 = j;
        while j < n && j - f0 < 3 && s[j].is_ascii_digit() {
            acc = acc * 10 + u64::from(s[j] - b'0');
            scale /= 10;
            j += 1;
        }
        if j == f0 {
            return None;
        }
    }
    if j >= n || CLASS[s[j] as usize] & DELIM == 0 {
        return None;
    }
    let v = i64::try_from(acc * scale).ok()?;
    Some((if neg { -v } else { v }, j))
}

/// Fast path: `[-]digits` (at most 18) at `i` followed by a delimiter.
#[inline(always)]
pub(super) fn fast_int(s: &[u8], i: usize) -> Option<(i64, usize)> {
    let n = s.len();
    let neg = s[i] == b'-';
    let mut j = i + usize::from(neg);
    let d0 = j;
    let mut acc: i64 = 0;
    while j < n && s[j].is_ascii_digit() {
        // Wrapping: a 19th digit is rejected just below (it overflowed in debug builds).
        acc = acc.wrapping_mul(10).wrapping_add(i64::from(s[j] - b'0'));
        j += 1;
        if j - d0 > 18 {
            return None;
        }
    }
    if j == d0 || j >= n || CLASS[s[j] as usize] & DELIM == 0 {
        return None;
    }
    Some((if neg { -acc } else { acc }, j))
}

/// Fast path: the index after the value starting at `i`, with the resumable skipper's rules.
#[inline(always)]
fn skip_value_fast(s: &[u8], i: usize) -> Option<usize> {
    match s[i] {
        b'"' => skip_str(s, i + 1),
        b'{' | b'[' => skip_container(s, i),
        b'}' | b']' | b',' | b':' => None,
        _ => {
            let j = find(s, i, DELIM);
            if j >= s.len() { None } else { Some(j) }
        }
    }
}
