//! The trace scanner and the summary it feeds, shared by the analyzer and the join's first pass.
use alloc::string::String;

use super::{AnalyzeError, AnalyzerOptions};
use crate::gzip::GzError;
use crate::json::{Event, EventScanner, Scan};
use crate::summary::{DEFAULT_TOP_OPS, TraceSummary, TraceSummaryResult};

/// The trace scanner and the summary it feeds; also the join's first pass rides on it
/// (`join::session`), so that both read one scan.
pub(crate) struct TraceEngine {
    scanner: EventScanner,
    pub(super) summary: TraceSummary,
}

impl TraceEngine {
    pub(crate) fn new(options: &AnalyzerOptions) -> TraceEngine {
        let limits = options.limits();
        let mut summary = TraceSummary::new(limits);
        summary.set_mergeable(options.mergeable);
        TraceEngine {
            scanner: EventScanner::new(limits),
            summary,
        }
    }

    /// Scans decoded bytes: each event goes to the summary, then to `also` with the offset just
    /// past it (decoded bytes). `decompressed`: the file was gzip (error offsets then count
    /// decompressed bytes).
    #[inline]
    pub(crate) fn write(
        &mut self,
        chunk: &[u8],
        decompressed: bool,
        mut also: impl FnMut(&Event<'_>, u64),
    ) -> Result<(), AnalyzeError> {
        let mut pos = 0;
        loop {
            let (what, nin) =
                self.scanner
                    .scan(&chunk[pos..])
                    .map_err(|error| AnalyzeError::Scan {
                        error,
                        decompressed,
                    })?;
            pos += nin;
            match what {
                Scan::Event => {
                    let e = self.scanner.event();
                    self.summary.add(&e);
                    also(&e, self.scanner.bytes_consumed());
                }
                Scan::NeedsInput => return Ok(()),
            }
        }
    }

    /// The summary at the end of the input, with `baseTimeNanoseconds` as the scanner read it.
    /// `cut_gzip`: the gzip input ended inside a member; `gzip_warning`: the gzip layer's.
    pub(crate) fn finish(
        mut self,
        options: &AnalyzerOptions,
        cut_gzip: Option<GzError>,
        gzip_warning: Option<String>,
    ) -> (TraceSummaryResult, crate::json::BaseTime) {
        let end = self.scanner.finish();
        let warnings = *self.scanner.warnings();
        let top = options.top.unwrap_or(DEFAULT_TOP_OPS);
        let mut result = self.summary.finish(&options.source, &end, &warnings, top);
        if let Some(e) = cut_gzip {
            result.truncated = true;
            result
                .warnings
                .insert(0, alloc::format!("{e}: summarized from what was read"));
        }
        result.warnings.extend(gzip_warning);
        (result, self.scanner.base_time())
    }
}
