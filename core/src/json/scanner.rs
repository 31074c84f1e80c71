//! [`EventScanner`]'s state and public API, and what both of its paths share: storing a value into its field.
//!
//! The resumable state machine ([`resumable`]) reads every event, trying the one-pass [`fast`]
//! path first where the event lies wholly in the chunk; [`strings`] decodes the strings the
//! resumable path reads.

mod fast;
mod resumable;
mod strings;

use self::fast::{GAP_COLS, GAP_ROWS, Gap};
use self::resumable::St;
use self::strings::Esc;
use super::decimal::parse_us_to_ns;
use super::{
    ArgValue, ArgsSniff, ElementBoundary, Event, IdField, NumField, QUOTED_DUR, QUOTED_TS, Scan,
    ScanEnd, ScanError, ScanErrorKind, ScanWarnings,
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

// Long enough for `baseTimeNanoseconds` (19 bytes), the longest key read.
const KEY_CAP: usize = 24;
const WORD_CAP: usize = 128;
const PH_CAP: usize = 8;

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
    /// `args`: skipped, and read for its number when the event is a counter.
    Args,
    Other,
    /// Fast path only: a learned gap that ends at the event's closing brace.
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    TopKey,
    EvKey,
    Cat,
    Name,
    Word,
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
    /// What the last `baseTimeNanoseconds` held when it was not an integer.
    base_time_problem: Option<super::BaseTimeProblem>,
    /// Which of `ts`/`dur` came from a numeric string ([`QUOTED_TS`], [`QUOTED_DUR`]).
    quoted_times: u8,
    /// The `args` object being skipped is read for its number ([`ArgsSniff`]).
    sniffing: bool,
    sniff: ArgsSniff,
    /// The number of the event's `args` (returned for a counter event only).
    arg: ArgValue,
    /// Fast path: where the last `args` object of the event lies in the chunk (its `{` and
    /// the index after its `}`).
    fast_args: Option<(usize, usize)>,
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
            base_time_problem: None,
            quoted_times: 0,
            sniffing: false,
            sniff: ArgsSniff::new(),
            arg: ArgValue::Missing,
            fast_args: None,
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
            arg: if &self.ph[..] == b"C" {
                self.arg
            } else {
                ArgValue::Missing
            },
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

    /// [`base_time_ns`](Self::base_time_ns), with what the key held when it was not an integer
    /// (for an error that says what was found).
    pub fn base_time(&self) -> super::BaseTime {
        super::BaseTime {
            ns: self.base_time_ns,
            problem: self.base_time_problem,
        }
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
            Field::Cat | Field::Name | Field::Args | Field::Other | Field::End => {}
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
            Field::Args | Field::Other | Field::End => {}
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
        b"args" => Field::Args,
        _ => Field::Other,
    }
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
        super::fast::eight_digits(x)
    }
    pub(in crate::json) fn int(s: &[u8]) -> Option<(i64, usize)> {
        super::fast::fast_int(s, 0)
    }
    pub(in crate::json) fn key(s: &[u8]) -> bool {
        super::fast::known_key(s, 0).is_some()
    }
    pub(in crate::json) fn key_spaced(s: &[u8]) -> Option<bool> {
        super::fast::known_key(s, 0).map(|k| k.2)
    }
}
