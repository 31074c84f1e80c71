//! The resumable scanner state machine behind [`EventScanner`].
//!
//! One explicit state per structural position; every state consumes as many bytes as it can in
//! a tight loop over a byte-class table before returning to the dispatch, so an event wholly
//! inside the chunk is read without ever saving or restoring partial state, and an event split
//! across chunks resumes exactly where it stopped. Each input byte is examined once.
//!
//! An event wholly inside the chunk is first tried by a fast path (`fast_event`) that reads
//! it in one pass without states: byte searches and the skip of `args` come from
//! [`classify`](super::classify) (SSE2 on x86_64), known keys from a perfect-hash table, and
//! the bytes between two values (`, "cat": `) from a small table of gaps learned from earlier
//! events ([`Gap`]). It gives up (`None`, nothing counted) on anything that needs a warning, an
//! escape decoded or the chunk's end, and the resumable path then reads the event from its
//! brace: that path is the reference, and the tests hold the two to the same results.

use super::classify::{CLASS, DELIM, SKIP, STR, WS, find, load, skip_container, skip_str};
use super::decimal::parse_us_to_ns;
use super::{
    ElementBoundary, Event, IdField, NumField, QUOTED_DUR, QUOTED_TS, Scan, ScanEnd, ScanError,
    ScanErrorKind, ScanWarnings,
};
use crate::Limits;

/// Storage for the `cat`/`name` buffers when none is given: a `Vec` under `alloc`, else a
/// fixed array (256 bytes per string).
#[cfg(feature = "alloc")]
pub type DefaultStorage = alloc::vec::Vec<u8>;
/// Storage for the `cat`/`name` buffers when none is given: a `Vec` under `alloc`, else a
/// fixed array (256 bytes per string).
#[cfg(not(feature = "alloc"))]
pub type DefaultStorage = [u8; 512];

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

// Long enough for `baseTimeNanoseconds` (19 bytes), the longest key read.
const KEY_CAP: usize = 24;
const WORD_CAP: usize = 128;
const PH_CAP: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Field {
    Ph,
    Cat,
    Name,
    Ts,
    Dur,
    Pid,
    Tid,
    Id,
    Scope,
    Other,
    /// Fast path only: a learned gap that ends at the event's closing brace.
    End,
}

/// Gap rows: one per field a gap can follow, and one for the gap after the opening brace.
const GAP_ROWS: usize = Field::Other as usize + 2;
const GAP_AFTER_BRACE: usize = GAP_ROWS - 1;
/// Gap columns: the events' `ph` (its first byte's low bits) picks one.
const GAP_COLS: usize = 8;

/// The bytes from the end of a value (or the opening brace) to the start of the next value,
/// as the fast path last parsed them at the same place of an event (e.g. `, "cat": `), and
/// the field they led to. Where the input holds the same bytes again, followed by a byte that
/// is not whitespace, parsing them again would give the same field and value start, so the
/// fast path takes them in one compare. A learned shape, never a guess: a mismatch parses.
#[derive(Clone, Copy)]
struct Gap {
    /// The bytes, little-endian, first eight then next eight (zero past `len`).
    bytes: [u64; 2],
    /// Masks of the first `len` bytes in `bytes`.
    masks: [u64; 2],
    /// 1..=15, or 0 when nothing was learned.
    len: u8,
    field: Field,
}

impl Gap {
    const EMPTY: Gap = Gap {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    TopKey,
    EvKey,
    Cat,
    Name,
    Word,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    Hex { n: u8, acc: u16 },
}

/// The bit of [`Event::quoted_times`] for `ts` or `dur`.
#[inline(always)]
fn quoted_bit(field: Field) -> u8 {
    if field == Field::Ts {
        QUOTED_TS
    } else {
        QUOTED_DUR
    }
}

/// Push-style scanner of trace events (see the [module docs](super)).
///
/// Memory is fixed at construction: two string buffers of `Limits::max_string_bytes` each
/// (or half the caller's storage, whichever is smaller) plus a few hundred bytes of state.
pub struct EventScanner<S = DefaultStorage> {
    storage: S,
    str_cap: usize,
    max_event_bytes: u64,
    st: St,
    error: Option<ScanError>,
    offset: u64,
    events: u64,
    warnings: ScanWarnings,
    bare: bool,
    found_array: bool,
    in_event: bool,
    in_fast: bool,
    ev_start: u64,
    // string decoding
    target: Target,
    esc: Esc,
    pending_high: u16,
    // skipping
    skip_depth: u64,
    skip_in_str: bool,
    skip_esc: bool,
    skip_word: bool,
    skip_ret: St,
    // current key / word: bounded buffers; what does not fit is cut, and `*_over` says so
    key: heapless::Vec<u8, KEY_CAP>,
    key_over: bool,
    field: Field,
    word: heapless::Vec<u8, WORD_CAP>,
    word_over: bool,
    // event fields
    ph: heapless::Vec<u8, PH_CAP>,
    cat_len: usize,
    cat_some: bool,
    cat_trunc: bool,
    name_len: usize,
    name_some: bool,
    name_trunc: bool,
    ts: NumField,
    dur: NumField,
    pid: IdField,
    tid: IdField,
    id: IdField,
    scope: IdField,
    /// The top-level `baseTimeNanoseconds`, once read.
    base_time_ns: Option<i64>,
    /// Which of `ts`/`dur` came from a numeric string ([`QUOTED_TS`], [`QUOTED_DUR`]).
    quoted_times: u8,
    // fast path: gaps learned per (`ph` column, preceding field)
    gaps: [Gap; GAP_ROWS * GAP_COLS],
}

#[cfg(feature = "alloc")]
impl EventScanner<alloc::vec::Vec<u8>> {
    /// A scanner whose string buffers (2 × `limits.max_string_bytes`) are allocated once here.
    pub fn new(limits: Limits) -> Self {
        let bytes = limits.max_string_bytes.saturating_mul(2).min(1 << 30);
        EventScanner::with_storage(limits, alloc::vec![0u8; bytes])
    }
}

#[cfg(feature = "alloc")]
impl EventScanner<alloc::vec::Vec<u8>> {
    /// A scanner that starts at `at`: between two events of the events array, at absolute byte
    /// `at.offset` of the document (see [`element_boundary`](Self::element_boundary)). Its
    /// event and warning counts start at zero; its offsets (errors, event sizes) are absolute.
    pub fn resume_at(limits: Limits, at: ElementBoundary) -> Self {
        let mut s = EventScanner::new(limits);
        s.st = St::ArrElem;
        s.offset = at.offset;
        s.bare = at.bare;
        s.found_array = true;
        s
    }
}

#[cfg(not(feature = "alloc"))]
impl EventScanner<[u8; 512]> {
    /// A scanner with 256-byte string buffers held inline (no allocator needed).
    pub fn new(limits: Limits) -> Self {
        EventScanner::with_storage(limits, [0u8; 512])
    }
}

impl<S: AsRef<[u8]> + AsMut<[u8]>> EventScanner<S> {
    /// A scanner over caller-provided storage for the `cat`/`name` buffers: each gets
    /// `min(limits.max_string_bytes, storage.len() / 2)` bytes. Works without an allocator.
    pub fn with_storage(limits: Limits, storage: S) -> Self {
        let str_cap = limits.max_string_bytes.min(storage.as_ref().len() / 2);
        EventScanner {
            storage,
            str_cap,
            max_event_bytes: u64::try_from(limits.max_event_bytes).unwrap_or(u64::MAX),
            st: St::Start,
            error: None,
            offset: 0,
            events: 0,
            warnings: ScanWarnings::default(),
            bare: false,
            found_array: false,
            in_event: false,
            in_fast: false,
            ev_start: 0,
            target: Target::Word,
            esc: Esc::None,
            pending_high: 0,
            skip_depth: 0,
            skip_in_str: false,
            skip_esc: false,
            skip_word: false,
            skip_ret: St::Done,
            key: heapless::Vec::new(),
            key_over: false,
            field: Field::Other,
            word: heapless::Vec::new(),
            word_over: false,
            ph: heapless::Vec::new(),
            cat_len: 0,
            cat_some: false,
            cat_trunc: false,
            name_len: 0,
            name_some: false,
            name_trunc: false,
            ts: NumField::Missing,
            dur: NumField::Missing,
            pid: IdField::Missing,
            tid: IdField::Missing,
            id: IdField::Missing,
            scope: IdField::Missing,
            base_time_ns: None,
            quoted_times: 0,
            gaps: [Gap::EMPTY; GAP_ROWS * GAP_COLS],
        }
    }

    /// Consumes input until the next complete event ([`Scan::Event`], read it with
    /// [`event`](Self::event)) or the end of `input` ([`Scan::NeedsInput`]). Returns the bytes
    /// consumed; feed the rest of the chunk in the next call.
    ///
    /// # Errors
    /// A [`ScanError`] with the absolute byte offset when the structure outside events is
    /// broken. The scanner then stays failed and returns the same error.
    pub fn scan(&mut self, input: &[u8]) -> Result<(Scan, usize), ScanError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        match self.run(input) {
            Ok((s, n)) => {
                self.offset += n as u64;
                Ok((s, n))
            }
            Err(e) => {
                // Bytes "consumed" stop at the offending byte, however the input was split.
                self.offset = e.offset;
                self.error = Some(e);
                Err(e)
            }
        }
    }

    /// The event that the last [`Scan::Event`] reported.
    pub fn event(&self) -> Event<'_> {
        let buf = self.storage.as_ref();
        let cap = self.str_cap;
        Event {
            ph: &self.ph,
            cat: if self.cat_some {
                Some(&buf[..self.cat_len])
            } else {
                None
            },
            name: if self.name_some {
                Some(&buf[cap..cap + self.name_len])
            } else {
                None
            },
            ts_ns: self.ts,
            dur_ns: self.dur,
            pid: self.pid,
            tid: self.tid,
            id: self.id,
            scope: self.scope,
            quoted_times: self.quoted_times,
        }
    }

    /// Where this scanner stands if it is between two events of the events array: it has
    /// consumed a `,` after an event and the whitespace after it, and nothing else is pending
    /// (no error). `None` anywhere else. A scanner made by
    /// [`resume_at`](Self::resume_at) from this value goes on exactly as this one would, its
    /// counters starting at zero: a caller can scan the pieces of one document on several
    /// threads, starting each piece at a guessed element boundary, and keep a piece's result
    /// only when the scanner of the piece before it ends at that very boundary.
    pub fn element_boundary(&self) -> Option<ElementBoundary> {
        (self.st == St::ArrElem && self.error.is_none()).then_some(ElementBoundary {
            offset: self.offset,
            bare: self.bare,
        })
    }

    /// Call at end of input: says whether the document was complete or truncated, and how
    /// many events were read.
    pub fn finish(&mut self) -> ScanEnd {
        let complete = self.st == St::Done && self.error.is_none();
        ScanEnd {
            complete,
            truncated: !complete,
            cut_event: self.in_event,
            events: self.events,
            bytes: self.offset,
            found_events_array: self.found_array,
            bare_array: self.bare,
        }
    }

    /// Warnings counted so far.
    pub fn warnings(&self) -> &ScanWarnings {
        &self.warnings
    }

    /// The top-level `baseTimeNanoseconds` (Kineto's CLOCK_REALTIME origin of `ts`, ns), once
    /// the scanner has read it: before or after `traceEvents`, so a caller that needs it for
    /// every event keeps times relative until the end. `None` when absent or not an integer.
    pub fn base_time_ns(&self) -> Option<i64> {
        self.base_time_ns
    }

    /// Events returned so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes consumed so far.
    pub fn bytes_consumed(&self) -> u64 {
        self.offset
    }

    fn err(&self, kind: ScanErrorKind, i: usize) -> ScanError {
        ScanError {
            kind,
            offset: self.offset + i as u64,
        }
    }

    fn run(&mut self, input: &[u8]) -> Result<(Scan, usize), ScanError> {
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
                    self.st = St::TopCommaOrEnd;
                    continue;
                }
                St::Skip => {
                    match self.skip(input, i) {
                        Some(j) => i = j,
                        None => return Ok((Scan::NeedsInput, n)),
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
                            Field::Other => i = self.begin_skip(b, i, St::EvCommaOrEnd),
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
                        }
                        b'}' | b',' | b']' | b':' => self.recover(),
                        _ => match f {
                            Field::Other => i = self.begin_skip(b, i, St::EvCommaOrEnd),
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

    /// Reads the event whose `{` is at `start` when it lies wholly inside `s` and holds nothing
    /// that needs a warning or an escape decoded; returns the index after its `}`. `None`
    /// means "use the resumable path from the brace" (nothing was counted).
    #[inline]
    fn fast_event(&mut self, s: &[u8], start: usize) -> Option<usize> {
        self.in_fast = true;
        let r = self.fast_event_inner(s, start);
        self.in_fast = false;
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

    fn begin_str(&mut self, target: Target) {
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
    fn decode_str(&mut self, input: &[u8], mut i: usize) -> Option<usize> {
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
                let out = match b {
                    b'"' | b'\\' | b'/' => b,
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
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
    fn push_word(&mut self, bytes: &[u8]) {
        let k = bytes.len().min(WORD_CAP - self.word.len());
        // Cut to the room left, so the extension always fits.
        let _ = self.word.extend_from_slice(&bytes[..k]);
        self.word_over |= k < bytes.len();
    }

    fn end_string(&mut self) {
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
    fn end_word(&mut self, quoted: bool) {
        let word = self.word.clone();
        let text = &word[..];
        let over = self.word_over;
        self.set_word(self.field, text, quoted, over);
    }

    /// Stores `text` into `field`. With `count` false (the fast path) it stores nothing and
    /// returns false where a warning would be due; otherwise it counts and returns true.
    #[inline]
    fn set_word(&mut self, field: Field, text: &[u8], quoted: bool, over: bool) -> bool {
        match field {
            Field::Ts | Field::Dur => {
                let v = match (over, parse_us_to_ns(text)) {
                    (false, Some(ns)) => NumField::Ns(ns),
                    _ => {
                        let literal = matches!(
                            text,
                            b"true" | b"false" | b"null" | b"NaN" | b"Infinity" | b"-Infinity"
                        );
                        if !quoted && !literal {
                            if self.in_fast {
                                return false;
                            }
                            self.warnings.bad_numbers += 1;
                        }
                        NumField::NotNumber
                    }
                };
                if field == Field::Ts {
                    self.ts = v;
                } else {
                    self.dur = v;
                }
                if quoted && matches!(v, NumField::Ns(_)) {
                    self.quoted_times |= quoted_bit(field);
                } else {
                    self.quoted_times &= !quoted_bit(field);
                }
            }
            Field::Pid | Field::Tid | Field::Id | Field::Scope => {
                let v = if !quoted && text == b"null" {
                    IdField::Missing
                } else if let (false, Some(x)) = (quoted, parse_int(text)) {
                    IdField::Int(x)
                } else {
                    IdField::Hash(fnv1a(text))
                };
                match field {
                    Field::Pid => self.pid = v,
                    Field::Tid => self.tid = v,
                    Field::Id => self.id = v,
                    _ => self.scope = v,
                }
            }
            Field::Ph => {
                let k = text.len().min(PH_CAP);
                self.ph.clear();
                let _ = self.ph.extend_from_slice(&text[..k]);
            }
            Field::Cat | Field::Name | Field::Other | Field::End => {}
        }
        true
    }

    /// A known field whose value has the wrong type (object/array, or a non-string name).
    fn clear_field(&mut self, f: Field) {
        match f {
            Field::Ph => self.ph.clear(),
            Field::Cat => self.cat_some = false,
            Field::Name => self.name_some = false,
            Field::Ts => {
                self.ts = NumField::NotNumber;
                self.quoted_times &= !QUOTED_TS;
            }
            Field::Dur => {
                self.dur = NumField::NotNumber;
                self.quoted_times &= !QUOTED_DUR;
            }
            Field::Pid => self.pid = IdField::Missing,
            Field::Tid => self.tid = IdField::Missing,
            Field::Id => self.id = IdField::Missing,
            Field::Scope => self.scope = IdField::Missing,
            Field::Other | Field::End => {}
        }
    }
}

#[inline(always)]
fn classify(key: &[u8]) -> Field {
    match key {
        b"ph" => Field::Ph,
        b"cat" => Field::Cat,
        b"name" => Field::Name,
        b"ts" => Field::Ts,
        b"dur" => Field::Dur,
        b"pid" => Field::Pid,
        b"tid" => Field::Tid,
        b"id" => Field::Id,
        b"scope" => Field::Scope,
        _ => Field::Other,
    }
}

/// Fast path: a known event key whose opening quote is at `i`, without a branch per key: the
/// key's first three bytes pick one table slot by a multiplicative perfect hash, and one
/// compare of the next eight bytes (key plus closing quote) confirms it. Returns the field,
/// the closing quote's index, and whether `: ` follows it.
#[inline(always)]
fn known_key(s: &[u8], i: usize) -> Option<(Field, usize, bool)> {
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
            (b"args\": ", Field::Other),
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
fn eight_digits(x: u64) -> Option<u64> {
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
/// as nanoseconds and the delimiter's index; the same value [`parse_us_to_ns`] gives.
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
fn fast_int(s: &[u8], i: usize) -> Option<(i64, usize)> {
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

fn parse_int(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

pub(super) fn fnv1a(text: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

#[cfg(test)]
pub(super) mod test_hooks {
    pub(in crate::json) fn eight(x: u64) -> Option<u64> {
        super::eight_digits(x)
    }
    pub(in crate::json) fn int(s: &[u8]) -> Option<(i64, usize)> {
        super::fast_int(s, 0)
    }
    pub(in crate::json) fn key(s: &[u8]) -> bool {
        super::known_key(s, 0).is_some()
    }
    pub(in crate::json) fn key_spaced(s: &[u8]) -> Option<bool> {
        super::known_key(s, 0).map(|k| k.2)
    }
}
