//! The gzip layer alone, for a caller that inflates and analyzes in two threads.
use alloc::boxed::Box;
use alloc::string::String;

use super::AnalyzeError;
use crate::gzip::{GzDecoder, GzError};

/// The warning for trailing garbage at byte `at` of a gzip file.
pub fn trailing_garbage_warning(at: u64) -> String {
    alloc::format!(
        "trailing garbage ignored: bytes from {at} on do not start a gzip member (the data before them was read, as gzip -d does)"
    )
}

/// The gzip layer alone, for a caller that inflates in one thread and analyzes in another (the
/// page's inflate worker; its analysis worker uses [`Analyzer::with_decoded_input`](super::Analyzer::with_decoded_input)). The same
/// core [`GzDecoder`] as [`Analyzer::write`](super::Analyzer::write) uses, with the same errors.
pub struct Inflater {
    decoder: Box<GzDecoder>,
    consumed: usize,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater::new()
    }
}

impl Inflater {
    /// An inflater expecting the first byte of a gzip stream.
    pub fn new() -> Inflater {
        Inflater {
            decoder: Box::new(GzDecoder::new()),
            consumed: 0,
        }
    }

    /// Inflates from `input` into `output` until `input` is used up or `output` is full; returns
    /// the bytes written. [`consumed`](Inflater::consumed) then says how much of `input` was
    /// taken: call again with the rest (possibly empty, to flush) while output comes out full.
    ///
    /// # Errors
    /// Corrupt gzip data, with its offset in the compressed file.
    pub fn inflate(&mut self, input: &[u8], output: &mut [u8]) -> Result<usize, AnalyzeError> {
        let (_, nin, nout) = self.decoder.decode(input, output)?;
        self.consumed = nin;
        Ok(nout)
    }

    /// Input bytes taken by the last [`inflate`](Inflater::inflate) call.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// After [`end`](Inflater::end): a warning for the result (trailing garbage ignored), to
    /// pass to [`Analyzer::note_gzip_warning`](super::Analyzer::note_gzip_warning).
    pub fn warning(&self) -> Option<String> {
        self.decoder
            .trailing_garbage_at()
            .map(trailing_garbage_warning)
    }

    /// End of the compressed input: `Ok(None)` when it ended between members, `Ok(Some(cut))`
    /// when it was cut inside one (pass `cut` to [`Analyzer::note_cut_gzip`](super::Analyzer::note_cut_gzip)).
    ///
    /// # Errors
    /// An earlier decoding error.
    pub fn end(&self) -> Result<Option<GzError>, AnalyzeError> {
        match self.decoder.finish() {
            Ok(()) => Ok(None),
            Err(e) if e.is_truncated() => Ok(Some(e)),
            Err(e) => Err(e.into()),
        }
    }
}
