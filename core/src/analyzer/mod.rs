//! The one streaming entry point shared by the native `--json` commands and the web page.
//!
//! An [`Analyzer`] takes a file's bytes in chunks of any size ([`Analyzer::write`]) and renders
//! the result JSON at the end ([`Analyzer::end`]). With [`Kind::Auto`] it detects what it reads:
//! the gzip magic (`1f 8b`) means "inflate with the core gzip decoder, then detect again"; a first
//! non-whitespace byte of `{` or `[` means a Chrome / Kineto trace; anything else is a `trace.csv`.
//!
//! ```
//! use flinch_core::analyzer::{Analyzer, AnalyzerOptions};
//! let mut a = Analyzer::new(AnalyzerOptions::default());
//! for chunk in [&b"  "[..], &b"\n"[..]] {
//!     a.write(chunk)?; // an error names the byte offset, and the analyzer stays failed
//! }
//! assert_eq!(a.bytes_in(), 3);
//! let e = a.end().unwrap_err(); // Ok(result JSON) for a trace or trace.csv
//! assert_eq!(e.to_string(), "only whitespace up to byte 3: not a trace or trace.csv");
//! # Ok::<(), flinch_core::analyzer::AnalyzeError>(())
//! ```
use alloc::boxed::Box;
use alloc::string::String;

use crate::gzip::{GzError, MaybeGz};
use crate::summary::{EventReplay, IntervalSpill};

mod analysis;
mod content;
mod error;
mod inflater;
mod options;
#[cfg(test)]
mod tests;

pub use analysis::Analysis;
use content::{Content, TraceIo};
pub use error::{AnalyzeError, OptionsError};
pub use inflater::{Inflater, trailing_garbage_warning};
pub use options::{AnalyzerOptions, Kind};

/// The streaming analyzer. Feed chunks with [`write`](Analyzer::write), then call
/// [`end`](Analyzer::end) once; after an error, every later call returns the same error.
pub struct Analyzer {
    options: AnalyzerOptions,
    bytes_in: u64,
    failed: Option<AnalyzeError>,
    /// The gzip input was cut (a [`GzError::Truncated`]).
    cut_gzip: Option<GzError>,
    /// The caller inflates gzip itself and feeds decoded bytes ([`Analyzer::with_decoded_input`]).
    decoded_gzip: bool,
    /// A warning from the gzip layer for the result (trailing garbage ignored).
    gzip_warning: Option<String>,
    /// The file layer: plain, or gzip decoded by the core decoder.
    container: MaybeGz,
    content: Content,
    /// For a trace: what [`Analyzer::set_trace_io`] gave, until the summary takes it.
    trace_io: Option<TraceIo>,
}

impl Analyzer {
    /// An analyzer with the given options. Allocates its bounded buffers once the kind is known.
    pub fn new(options: AnalyzerOptions) -> Analyzer {
        Analyzer {
            options,
            bytes_in: 0,
            failed: None,
            cut_gzip: None,
            decoded_gzip: false,
            gzip_warning: None,
            container: MaybeGz::new(),
            content: Content::Detecting {
                whitespace: alloc::vec::Vec::new(),
            },
            trace_io: None,
        }
    }

    /// For a trace: the busy unions' spill and a way to read the input again, so that the
    /// summary stays exact past its limits (see [`TraceSummary::set_spill`](crate::summary::TraceSummary::set_spill) and
    /// [`TraceSummary::set_replay`](crate::summary::TraceSummary::set_replay)). Call before the first write.
    pub fn set_trace_io(&mut self, spill: Box<dyn IntervalSpill>, replay: Box<dyn EventReplay>) {
        self.trace_io = Some(TraceIo { spill, replay });
    }

    /// The options this analyzer was built with.
    pub fn options(&self) -> &AnalyzerOptions {
        &self.options
    }

    /// Input bytes taken so far (for progress).
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Takes the next chunk of the input.
    ///
    /// # Errors
    /// Malformed input, with its byte offset. The analyzer then stays failed.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), AnalyzeError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.bytes_in += chunk.len() as u64;
        let result = self.write_inner(chunk);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn write_inner(&mut self, chunk: &[u8]) -> Result<(), AnalyzeError> {
        let Analyzer {
            options,
            decoded_gzip,
            container,
            content,
            trace_io,
            ..
        } = self;
        container.write(chunk, |bytes, gzip| {
            content.write(bytes, options, gzip || *decoded_gzip, trace_io)
        })
    }

    /// An analyzer for callers that inflate gzip themselves (native's threaded input) and feed
    /// the decoded bytes: no gzip detection; `gzip` says whether the file was gzip, so that
    /// error offsets are named as offsets in the decompressed data, as [`Analyzer::new`] does.
    pub fn with_decoded_input(options: AnalyzerOptions, gzip: bool) -> Analyzer {
        let mut a = Analyzer::new(options);
        a.container = MaybeGz::plain();
        a.decoded_gzip = gzip;
        a
    }

    /// For callers that inflate by themselves: the compressed stream was cut, `error` being the
    /// decoder's [`GzError::Truncated`] (from [`Inflater::end`]). A trace is then summarized from
    /// what was read, with the same warning as a cut `.gz` fed to [`write`](Analyzer::write);
    /// a trace.csv fails with [`AnalyzeError::CutInput`].
    pub fn note_cut_gzip(&mut self, error: GzError) {
        self.cut_gzip = Some(error);
    }

    /// For callers that inflate by themselves: a warning of the gzip layer
    /// ([`Inflater::warning`]), listed in the result's warnings.
    pub fn note_gzip_warning(&mut self, message: &str) {
        self.gzip_warning = Some(message.into());
    }

    /// Ends the input and renders the result JSON: what `--json` prints and the page shows.
    /// A trace.csv whose selected marks are missing still gives its JSON (its `selection` says
    /// which marks were found); use [`finish`](Analyzer::finish) and
    /// [`Analysis::selection_error`] to tell.
    ///
    /// # Errors
    /// Input that ended where it cannot (for example inside a gzip member of a trace.csv), or an
    /// earlier error.
    pub fn end(self) -> Result<String, AnalyzeError> {
        Ok(self.finish()?.to_json())
    }

    /// Ends the input and returns the result as a value (for native presentation: tables).
    ///
    /// # Errors
    /// As [`end`](Analyzer::end).
    pub fn finish(self) -> Result<Analysis, AnalyzeError> {
        self.finish_noting_counters().map(|(a, _)| a)
    }

    /// [`finish`](Analyzer::finish), and whether the trace carries GPU power or utilization
    /// counters ([`crate::join::counters`]; false for a trace.csv): the page then joins the
    /// trace with them (`TraceJoinOptions::trace_alone`).
    ///
    /// # Errors
    /// As [`end`](Analyzer::end).
    pub fn finish_noting_counters(mut self) -> Result<(Analysis, bool), AnalyzeError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        // With a kind given (`analyze --csv`), an empty file is an empty input of that kind.
        if self.container.is_empty() && self.options.kind == Kind::Auto {
            return Err(AnalyzeError::Empty);
        }
        let Analyzer {
            options,
            container,
            content,
            trace_io,
            ..
        } = &mut self;
        container.end(|bytes, _| content.write(bytes, options, false, trace_io))?;
        if let Some(decoder) = self.container.decoder() {
            if let Some(at) = decoder.trailing_garbage_at() {
                self.gzip_warning = Some(trailing_garbage_warning(at));
            }
            if let Err(e) = decoder.finish() {
                if !e.is_truncated() || !matches!(self.content, Content::Trace(_)) {
                    return Err(e.into());
                }
                self.cut_gzip = Some(e);
            }
        }
        if !matches!(self.content, Content::Trace(_))
            && let Some(e) = self.cut_gzip
        {
            return Err(AnalyzeError::CutInput(e));
        }
        self.content
            .end(&self.options, self.cut_gzip, self.gzip_warning)
    }
}
