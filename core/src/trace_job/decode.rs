//! The file layer of a trace job: the core's one gzip detection ([`MaybeGz`]) for bytes as
//! stored, or bytes a driver decoded itself ([`Decode::decoded`]), with how the stream ended.
use alloc::string::String;

use super::TraceJobError;
use crate::analyzer::trailing_garbage_warning;
use crate::gzip::{GzError, MaybeGz, RestartIndex};

pub(super) struct Decode {
    layer: MaybeGz,
    /// The driver gives decoded bytes; `Some(gzip)`: whether the file was gzip.
    decoded: Option<bool>,
}

impl Decode {
    pub(super) fn new() -> Decode {
        Decode {
            layer: MaybeGz::new(),
            decoded: None,
        }
    }

    /// [`new`](Self::new), keeping restart points of a gzip file given as stored (for a
    /// second read of some of its ranges: `super::stored_reads`).
    pub(super) fn keeping_restart_points() -> Decode {
        Decode {
            layer: MaybeGz::keeping_restart_points(RestartIndex::new(
                super::stored_reads::SPACING_BYTES,
                super::stored_reads::MAX_POINTS,
            )),
            decoded: None,
        }
    }

    /// The restart points kept by [`keeping_restart_points`](Self::keeping_restart_points), with
    /// the stored bytes read, once the file has ended.
    pub(super) fn take_restart_index(&mut self) -> Option<(RestartIndex, u64)> {
        let stored = self.layer.decoder()?.total_in();
        Some((self.layer.take_restart_index()?, stored))
    }

    pub(super) fn decoded(gzip: bool) -> Decode {
        Decode {
            layer: MaybeGz::plain(),
            decoded: Some(gzip),
        }
    }

    /// The same layer for the next file (or the next read of the same file).
    pub(super) fn next(&self) -> Decode {
        match self.decoded {
            Some(gzip) => Decode::decoded(gzip),
            None => Decode::new(),
        }
    }

    /// The layer of the trace's first read: keeping restart points when the join may read
    /// ranges of it again.
    pub(super) fn for_trace(options: &super::TraceJobOptions) -> Decode {
        if options.join.as_ref().is_some_and(|j| j.may_read_again()) {
            Decode::keeping_restart_points()
        } else {
            Decode::new()
        }
    }

    /// The driver gives decoded bytes.
    pub(super) fn is_decoded(&self) -> bool {
        self.decoded.is_some()
    }

    /// No byte of the current file given yet.
    pub(super) fn is_empty(&self) -> bool {
        self.decoded.is_none() && self.layer.is_empty()
    }

    /// The current file is gzip inflated here (given as stored).
    pub(super) fn stored_gzip(&self) -> bool {
        self.layer.is_gzip() == Some(true)
    }

    /// Whether the next bytes may come from another offset: they are not inflated here (plain,
    /// or decoded by the driver), so offsets are the decoded ones.
    pub(super) fn can_seek(&self) -> bool {
        self.layer.is_empty() || self.layer.is_gzip() == Some(false)
    }

    /// The bytes from here on are the decoded file's, with no magic to look for.
    pub(super) fn start_plain(&mut self) {
        if self.layer.is_empty() {
            self.layer = MaybeGz::plain();
        }
    }

    /// The next chunk; its decoded bytes go to `out` with whether the file is gzip.
    pub(super) fn write(
        &mut self,
        chunk: &[u8],
        mut out: impl FnMut(&[u8], bool) -> Result<(), TraceJobError>,
    ) -> Result<(), TraceJobError> {
        let driver_gzip = self.decoded == Some(true);
        self.layer
            .write(chunk, |bytes, gzip| out(bytes, gzip || driver_gzip))
    }

    /// Ends the file: (where the gzip stream was cut, the trailing-garbage warning).
    pub(super) fn end(
        &mut self,
        mut out: impl FnMut(&[u8], bool) -> Result<(), TraceJobError>,
    ) -> Result<(Option<GzError>, Option<String>), TraceJobError> {
        self.layer.end(|bytes, gzip| out(bytes, gzip))?;
        let Some(dec) = self.layer.decoder() else {
            return Ok((None, None));
        };
        let warning = dec.trailing_garbage_at().map(trailing_garbage_warning);
        match dec.finish() {
            Ok(()) => Ok((None, warning)),
            Err(e) if e.is_truncated() => Ok((Some(e), warning)),
            Err(e) => Err(e.into()),
        }
    }
}
