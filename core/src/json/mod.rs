//! Streaming `traceEvents` scanner for Chrome / PyTorch (Kineto) trace JSON.
//!
//! [`EventScanner`] is a push parser: the caller owns the input, feeds chunks of any size to
//! [`EventScanner::scan`], and gets back [`Scan::Event`] after each complete trace event (read it
//! with [`EventScanner::event`]) or [`Scan::NeedsInput`] once the chunk is used up. At end of
//! input, [`EventScanner::finish`] reports whether the document was complete or truncated, and
//! how many events were read.
//!
//! What it accepts:
//! - the object form `{"traceEvents": [...], ...}` with the key anywhere in the object; every
//!   other top-level value, of any size or type, is skipped without being stored;
//! - the bare-array form `[{...}, ...]`;
//! - events whose `ts`/`dur` are numbers or numeric strings, converted straight from the decimal
//!   text to integer nanoseconds ([`parse_us_to_ns`]);
//! - strings with escapes, `\u` surrogate pairs and raw control characters (tolerated, counted).
//!
//! Only `ph`, `cat`, `name` (into fixed buffers sized from [`Limits`](crate::Limits)), `ts`,
//! `dur`, `pid`, `tid`, `id` and `scope` are extracted, and, of a counter event (`"ph":"C"`), the
//! number in its `args` ([`Event::arg`], [`ArgsSniff`]); `args` and every other field are
//! skipped without copying. Skipped values are not validated beyond bracket and string
//! balance. A malformed event is skipped and counted when the scanner can find its closing
//! brace; malformed structure outside events is a [`ScanError`] with the byte offset. Memory is
//! fixed at construction: there is no event-size limit other than
//! [`Limits::max_event_bytes`](crate::Limits::max_event_bytes), and no re-parse.
//!
//! ```
//! use flinch_core::json::{EventScanner, Scan};
//! let doc = br#"{"meta": "x", "traceEvents": [{"ph":"X","cat":"k","name":"a","ts":1.5,"dur":2}]}"#;
//! let mut scanner = EventScanner::new(flinch_core::Limits::EXACT);
//! let mut durations_ns = Vec::new();
//! for chunk in doc.chunks(7) {
//!     let mut pos = 0;
//!     loop {
//!         let (what, nin) = scanner.scan(&chunk[pos..]).unwrap();
//!         pos += nin;
//!         match what {
//!             Scan::Event => durations_ns.push(scanner.event().dur_ns),
//!             Scan::NeedsInput => break,
//!         }
//!     }
//! }
//! let end = scanner.finish();
//! assert!(end.complete && end.events == 1);
//! assert_eq!(durations_ns, [flinch_core::json::NumField::Ns(2000)]);
//! ```

mod args;
mod classify;
mod decimal;
mod scanner;

pub use args::{ArgValue, ArgsSniff};
pub use decimal::parse_us_to_ns;
pub use scanner::EventScanner;

/// The byte a one-character JSON escape stands for (a backslash, then `"`, a backslash, `/`, `b`,
/// `f`, `n`, `r` or `t`); `None` for `u` (four hex digits follow) and for a byte that starts no escape. The one
/// table of the scanner's strings and the sidecar's.
pub(crate) const fn short_escape(b: u8) -> Option<u8> {
    match b {
        b'"' | b'\\' | b'/' => Some(b),
        b'b' => Some(0x08),
        b'f' => Some(0x0C),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        _ => None,
    }
}

use core::fmt;

/// What one [`EventScanner::scan`] call ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// A complete event was read; [`EventScanner::event`] returns it until the next call.
    Event,
    /// The whole input was consumed; feed more, or call [`EventScanner::finish`] at its end.
    NeedsInput,
}

/// A numeric field (`ts`, `dur`) of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NumField {
    /// The key was absent.
    #[default]
    Missing,
    /// A number (or numeric string) in nanoseconds, rounded half-to-even below 1 ns.
    Ns(i64),
    /// Present but not a usable number: `true`, `null`, `NaN`, a non-numeric string, an object,
    /// or a number outside the `i64` nanosecond range.
    NotNumber,
}

impl NumField {
    /// The nanosecond value, if the field held a usable number.
    pub fn ns(self) -> Option<i64> {
        match self {
            NumField::Ns(v) => Some(v),
            _ => None,
        }
    }
}

/// An identifier field (`pid`, `tid`, `id`, `scope`): an integer, or a hash of any other value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IdField {
    /// The key was absent (or `null`).
    #[default]
    Missing,
    /// An integer value.
    Int(i64),
    /// A 64-bit FNV-1a hash of the text of a string or non-integer value.
    Hash(u64),
}

/// One trace event, borrowed from the scanner until the next [`EventScanner::scan`] call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `ph` (phase) string, e.g. `b"X"`; empty when absent.
    pub ph: &'a [u8],
    /// The decoded `cat`, or `None` when absent or not a string. May be cut at
    /// `Limits::max_string_bytes` (on a UTF-8 boundary; counted in warnings).
    pub cat: Option<&'a [u8]>,
    /// The decoded `name`, like `cat`.
    pub name: Option<&'a [u8]>,
    /// `ts` in nanoseconds.
    pub ts_ns: NumField,
    /// `dur` in nanoseconds.
    pub dur_ns: NumField,
    /// `pid`.
    pub pid: IdField,
    /// `tid`.
    pub tid: IdField,
    /// `id` (async and flow events).
    pub id: IdField,
    /// `scope`.
    pub scope: IdField,
    /// Which of `ts_ns`/`dur_ns` were read from a numeric string such as `"12.5"` (bits
    /// [`QUOTED_TS`], [`QUOTED_DUR`]; set only for a value that is `NumField::Ns`). Such values
    /// count, as Perfetto counts them; the reference skips (`dur`) or fails on (`ts`) them, so
    /// the summary states how many there were.
    pub quoted_times: u8,
    /// The number in a counter event's `args` (`"ph":"C"`; [`ArgValue::Missing`] for every
    /// other phase): the value under the empty key `""` (PyTorch's profiler) or the first
    /// member's (flinch-trace's own counters), read as the scanner skips the object.
    pub arg: ArgValue,
}

/// [`Event::quoted_times`]: `ts` was a numeric string.
pub const QUOTED_TS: u8 = 1;
/// [`Event::quoted_times`]: `dur` was a numeric string.
pub const QUOTED_DUR: u8 = 2;

/// Counted, tolerated oddities of the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScanWarnings {
    /// Raw control characters (below U+0020) inside strings.
    pub control_chars: u64,
    /// Events skipped because their syntax was broken (resynchronised at their closing brace).
    pub malformed_events: u64,
    /// Elements of the events array that were not objects (skipped).
    pub non_object_events: u64,
    /// Events larger than `Limits::max_event_bytes` (skipped).
    pub oversized_events: u64,
    /// `cat`/`name` strings cut at `Limits::max_string_bytes`.
    pub truncated_strings: u64,
    /// Invalid escapes and lone surrogates (replaced by U+FFFD or kept raw).
    pub bad_escapes: u64,
    /// `ts`/`dur` values that looked numeric but did not parse or fit in `i64` nanoseconds.
    pub bad_numbers: u64,
    /// Trailing commas before `]` or `}`.
    pub trailing_commas: u64,
    /// Non-whitespace bytes after the end of the document.
    pub trailing_bytes: u64,
    /// `traceEvents` keys whose value was not an array (skipped).
    pub non_array_trace_events: u64,
}

impl core::ops::AddAssign<&ScanWarnings> for ScanWarnings {
    /// Adds the counts of `other` (for a document scanned in pieces).
    fn add_assign(&mut self, other: &ScanWarnings) {
        // Destructured, so that a new counter cannot be forgotten here.
        let ScanWarnings {
            control_chars,
            malformed_events,
            non_object_events,
            oversized_events,
            truncated_strings,
            bad_escapes,
            bad_numbers,
            trailing_commas,
            trailing_bytes,
            non_array_trace_events,
        } = *other;
        self.control_chars += control_chars;
        self.malformed_events += malformed_events;
        self.non_object_events += non_object_events;
        self.oversized_events += oversized_events;
        self.truncated_strings += truncated_strings;
        self.bad_escapes += bad_escapes;
        self.bad_numbers += bad_numbers;
        self.trailing_commas += trailing_commas;
        self.trailing_bytes += trailing_bytes;
        self.non_array_trace_events += non_array_trace_events;
    }
}

/// A place between two events of the events array, from
/// [`EventScanner::element_boundary`]; [`EventScanner::resume_at`] starts a scanner there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementBoundary {
    /// Absolute byte offset in the document (after the `,` and the whitespace after it).
    pub offset: u64,
    /// The document is the bare-array form.
    pub bare: bool,
}

/// The top-level `baseTimeNanoseconds` as the scanner read it: the integer, or what the key
/// held instead ([`EventScanner::base_time`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseTime {
    /// The value, when it is an integer in the `i64` range.
    pub ns: Option<i64>,
    /// What the key held when it is not such an integer.
    pub problem: Option<BaseTimeProblem>,
}

impl From<Option<i64>> for BaseTime {
    fn from(ns: Option<i64>) -> BaseTime {
        BaseTime { ns, problem: None }
    }
}

impl BaseTime {
    /// `self` when it has the integer, else `other` when that has it, else the one that says
    /// what was found (`self` first).
    pub fn or(self, other: BaseTime) -> BaseTime {
        if self.ns.is_some() || (other.ns.is_none() && self.problem.is_some()) {
            self
        } else {
            other
        }
    }
}

/// A `baseTimeNanoseconds` that is not an integer in the `i64` range: its number text (at most
/// 32 bytes kept) or the kind of value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaseTimeProblem {
    text: [u8; 32],
    len: u8,
    cut: bool,
    /// The first byte of a value that is not a number (`"`, `n`, `t`, `f`, `{`, `[`), else 0.
    kind: u8,
}

impl BaseTimeProblem {
    /// A number that does not parse as an `i64` (a fraction, an exponent, too many digits).
    pub fn number(text: &[u8], cut: bool) -> BaseTimeProblem {
        let mut p = BaseTimeProblem {
            text: [0; 32],
            len: 0,
            cut: cut || text.len() > 32,
            kind: 0,
        };
        let n = text.len().min(32);
        p.text[..n].copy_from_slice(&text[..n]);
        p.len = n as u8;
        p
    }

    /// A value that is not a number, from its first byte.
    pub fn value(first: u8) -> BaseTimeProblem {
        BaseTimeProblem {
            text: [0; 32],
            len: 0,
            cut: false,
            kind: first,
        }
    }
}

impl core::fmt::Display for BaseTimeProblem {
    /// `baseTimeNanoseconds is 1.76e18, not an integer`, `… is a string, not an integer`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.kind {
            b'"' => "a string",
            b'n' => "null",
            b't' | b'f' => "a boolean",
            b'{' => "an object",
            b'[' => "an array",
            0 => "",
            _ => "not a number",
        };
        if self.kind != 0 {
            return write!(f, "baseTimeNanoseconds is {what}, not an integer");
        }
        let text = &self.text[..self.len as usize];
        let shown = core::str::from_utf8(text).unwrap_or("?");
        let more = if self.cut { "..." } else { "" };
        let digits = text.strip_prefix(b"-").unwrap_or(text);
        if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
            write!(
                f,
                "baseTimeNanoseconds is {shown}{more}, past the i64 range of ns"
            )
        } else {
            write!(f, "baseTimeNanoseconds is {shown}{more}, not an integer")
        }
    }
}

/// How the input ended, from [`EventScanner::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ScanEnd {
    /// The document closed properly (final `]` or `}` seen).
    pub complete: bool,
    /// The input ended early (missing `]`/`}`, or an event cut off). Not a failure: the events
    /// read before the cut are valid.
    pub truncated: bool,
    /// The input ended inside an event, which was dropped.
    pub cut_event: bool,
    /// Events returned.
    pub events: u64,
    /// Bytes consumed in all.
    pub bytes: u64,
    /// An events array was found (a `traceEvents` array, or the bare-array form).
    pub found_events_array: bool,
    /// The document was the bare-array form.
    pub bare_array: bool,
}

/// A structural error outside any event; the scanner stays failed afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanError {
    /// What was expected.
    pub kind: ScanErrorKind,
    /// Absolute byte offset of the offending byte.
    pub offset: u64,
}

/// The kinds of [`ScanError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanErrorKind {
    /// The document does not start with `{` or `[`.
    NotJson,
    /// In the top-level object: expected a `"key"`.
    ExpectedKey,
    /// In the top-level object: expected `:`.
    ExpectedColon,
    /// In the top-level object: expected `,` or `}`.
    ExpectedObjectComma,
    /// In the events array: expected `,` or `]`.
    ExpectedArrayComma,
    /// In the events array: expected an element after `,`.
    ExpectedElement,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ScanErrorKind::NotJson => "expected `{` or `[` at the start of a trace",
            ScanErrorKind::ExpectedKey => "expected a key string in the top-level object",
            ScanErrorKind::ExpectedColon => "expected `:` after a key in the top-level object",
            ScanErrorKind::ExpectedObjectComma => "expected `,` or `}` in the top-level object",
            ScanErrorKind::ExpectedArrayComma => "expected `,` or `]` between trace events",
            ScanErrorKind::ExpectedElement => "expected a trace event after `,`",
        };
        write!(f, "{what} at byte {}", self.offset)
    }
}

impl core::error::Error for ScanError {}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) fn scanner_fnv(text: &[u8]) -> u64 {
    scanner::fnv1a(text)
}

#[cfg(test)]
use scanner::test_hooks as scanner_test_hooks;

#[cfg(test)]
use classify::test_hooks as classify_test_hooks;
