//! The bytes of one file of a trace job, plain or gzip (by its magic), decoded for the phase
//! that reads them; or bytes a driver decoded itself ([`Decode::decoded`]).
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::TraceJobError;
use crate::analyzer::{AnalyzeError, trailing_garbage_warning};
use crate::gzip::{GzDecoder, GzError, GzStatus, is_gzip};

/// Where decoded bytes go, with whether the file is gzip.
pub(super) type Sink<'a> = &'a mut dyn FnMut(&[u8], bool) -> Result<(), TraceJobError>;

/// Decoded output per step of the gzip decoder.
const OUT_BYTES: usize = 64 * 1024;

pub(super) struct Decode {
    /// A first byte held back until the second tells whether it starts the gzip magic.
    first: Option<u8>,
    started: bool,
    gz: Option<(Box<GzDecoder>, Vec<u8>)>,
    /// The driver gives decoded bytes; `Some(gzip)`: whether the file was gzip.
    decoded: Option<bool>,
}

fn gz_error(e: GzError) -> TraceJobError {
    TraceJobError::Trace(AnalyzeError::Gzip(e))
}

impl Decode {
    pub(super) fn new() -> Decode {
        Decode {
            first: None,
            started: false,
            gz: None,
            decoded: None,
        }
    }

    pub(super) fn decoded(gzip: bool) -> Decode {
        Decode {
            decoded: Some(gzip),
            ..Decode::new()
        }
    }

    /// Bytes of the current file were given.
    pub(super) fn started(&self) -> bool {
        self.started
    }

    /// The current file is gzip inflated here (fed as stored).
    pub(super) fn stored_gzip(&self) -> bool {
        self.gz.is_some()
    }

    pub(super) fn is_decoded(&self) -> bool {
        self.decoded.is_some()
    }

    /// Whether the file is gzip, as the driver said.
    pub(super) fn gzip(&self) -> bool {
        self.decoded == Some(true)
    }

    /// Whether the next bytes may come from another offset: the bytes are not inflated here
    /// (plain, or decoded by the driver), so offsets are the decoded ones.
    pub(super) fn can_seek(&self) -> bool {
        self.gz.is_none() && self.first.is_none()
    }

    /// The bytes from here on are the decoded file's, with no magic to look for.
    pub(super) fn start_plain(&mut self) {
        if self.first.is_none() && self.gz.is_none() {
            self.started = true;
        }
    }

    pub(super) fn write(&mut self, chunk: &[u8], out: Sink<'_>) -> Result<(), TraceJobError> {
        if let Some(gzip) = self.decoded {
            self.started = true;
            return out(chunk, gzip);
        }
        if !self.started {
            let Some(&b) = chunk.first() else {
                return Ok(());
            };
            let magic = match self.first {
                None if chunk.len() == 1 => {
                    self.first = Some(b);
                    return Ok(());
                }
                None => [b, chunk[1]],
                Some(f) => [f, b],
            };
            self.started = true;
            if is_gzip(&magic) {
                self.gz = Some((Box::new(GzDecoder::new()), vec![0; OUT_BYTES]));
            }
            if let Some(f) = self.first.take() {
                self.feed(&[f], out)?;
            }
        }
        self.feed(chunk, out)
    }

    fn feed(&mut self, mut input: &[u8], out: Sink<'_>) -> Result<(), TraceJobError> {
        let Some((dec, buf)) = &mut self.gz else {
            return out(input, false);
        };
        loop {
            let (status, nin, nout) = dec.decode(input, buf).map_err(gz_error)?;
            out(&buf[..nout], true)?;
            input = &input[nin..];
            if status != GzStatus::OutputFull {
                return Ok(());
            }
        }
    }

    /// Ends the file: (where the gzip stream was cut, the trailing-garbage warning).
    pub(super) fn end(
        &mut self,
        out: Sink<'_>,
    ) -> Result<(Option<GzError>, Option<String>), TraceJobError> {
        if let Some(f) = self.first.take() {
            self.started = true;
            out(&[f], false)?;
        }
        let Some((dec, _)) = &self.gz else {
            return Ok((None, None));
        };
        let warning = dec.trailing_garbage_at().map(trailing_garbage_warning);
        match dec.finish() {
            Ok(()) => Ok((None, warning)),
            Err(e) if e.is_truncated() => Ok((Some(e), warning)),
            Err(e) => Err(gz_error(e)),
        }
    }
}

/// The document's first byte past whitespace and a byte-order mark, if these bytes hold it.
pub(super) fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|&b| b > b' ' && !matches!(b, 0xEF | 0xBB | 0xBF))
}
