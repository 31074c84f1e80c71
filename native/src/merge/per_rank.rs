//! `trace --json --mergeable`: one file's summary with the mergeable section, through the core's
//! one-thread `Analyzer` (the same result as the other paths, plus the section), with the
//! temporary file and further reads that keep it exact (`trace::exact_io`).
use std::path::Path;

use flinch_core::Limits;
use flinch_core::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use flinch_core::summary::TraceSummaryResult;

use crate::input::{InputError, open_input};

/// Summarizes `path` with the mergeable section.
///
/// # Errors
/// The file cannot be read, or is not a trace.
pub fn summarize_mergeable(
    path: &Path,
    source: &str,
    limits: Limits,
    top: usize,
    exact_io: bool,
) -> Result<TraceSummaryResult, String> {
    let mut input = open_input(path)?;
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: source.to_string(),
        top: Some(top),
        mergeable: true,
        ..AnalyzerOptions::default()
    };
    let mut analyzer = Analyzer::with_decoded_input(options, input.is_gzip());
    #[cfg(unix)]
    if exact_io {
        use crate::trace::exact_io::{FileReplay, FileSpill};
        analyzer.set_trace_io(
            Box::new(FileSpill::new()),
            Box::new(FileReplay::new(path, limits)),
        );
    }
    #[cfg(not(unix))]
    let _ = exact_io;
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => analyzer.write(chunk).map_err(|e| e.to_string())?,
            Ok(None) => {
                if let Some(w) = input.warning() {
                    analyzer.note_gzip_warning(w);
                }
                break;
            }
            // A cut .gz: summarize what was decoded before the cut.
            Err(InputError { cut: Some(cut), .. }) => {
                analyzer.note_cut_gzip(cut);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    match analyzer.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(result) => Ok(*result),
        Analysis::Recording(_) => Err("not a trace".to_string()),
    }
}
