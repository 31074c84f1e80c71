//! The batch API of the trace summary, for callers that copy events into batches before
//! summarizing them (native `trace`: scan threads hand batches of compact records to the summary
//! thread). Two things make such a batch small and cheap to add:
//!
//! - [`fields_read`]: which fields of an event [`TraceSummary::add`] reads for its `ph`, so a
//!   batch may store only those; an event with the other fields left out (`None` / `Missing`, no
//!   `quoted_times` bit) adds exactly what the whole event adds;
//! - [`TraceSummary::add_batched`] with an [`OpMemo`]: events that share a (`cat`, `name`) pair
//!   share one memo, and the summary looks their op up once instead of once per event.
//!
//! Everything else should use [`TraceSummary::add`].
#[cfg(doc)]
use super::TraceSummary;

/// The op (and category) a [`TraceSummary`] resolved for one (`cat`, `name`) pair; see
/// [`TraceSummary::add_batched`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpMemo {
    pub(super) cat: u32,
    pub(super) op: u32,
}

/// Which fields of an event with a given `ph` [`TraceSummary::add`] reads ([`fields_read`]).
/// It never reads `id` or `scope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldsRead {
    /// `cat` and `name`: `X` and `B` events (an `E` takes its `B`'s).
    pub names: bool,
    /// `ts_ns` (and its `quoted_times` bit): `X`, `B` and `E` events.
    pub ts: bool,
    /// `dur_ns` (and its `quoted_times` bit): `X` events.
    pub dur: bool,
    /// `pid` and `tid`: `B` and `E` events, which pair per thread.
    pub thread: bool,
}

/// The fields [`TraceSummary::add`] reads of an event with this `ph`.
#[inline]
pub fn fields_read(ph: &[u8]) -> FieldsRead {
    FieldsRead {
        names: matches!(ph, b"X" | b"B"),
        ts: matches!(ph, b"X" | b"B" | b"E"),
        dur: ph == b"X",
        thread: matches!(ph, b"B" | b"E"),
    }
}
