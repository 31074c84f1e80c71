//! The content layer: detects a trace or a trace.csv from the decoded bytes and feeds its analysis.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Analysis, AnalyzeError, AnalyzerOptions, Kind};
use crate::gzip::GzError;
use crate::job::Job;
use crate::summary::{DEFAULT_TOP_OPS, EventReplay, IntervalSpill};
use crate::trace_job::FirstRead;
use crate::window::AnalyzeJob;

/// Longest run of leading whitespace looked through to detect the kind.
pub(super) const MAX_LEADING_WHITESPACE: u64 = 1 << 16;

/// A spill and a replay for the trace summary (see [`Analyzer::set_trace_io`](super::Analyzer::set_trace_io)).
pub(super) struct TraceIo {
    pub(super) spill: Box<dyn IntervalSpill>,
    pub(super) replay: Box<dyn EventReplay>,
}

/// The content layer, fed with plain (decoded) bytes.
pub(super) enum Content {
    /// Kind not known yet: the leading whitespace seen so far (at most
    /// `MAX_LEADING_WHITESPACE` bytes), replayed to the analysis once the kind is known.
    Detecting { whitespace: Vec<u8> },
    /// A trace.csv: the analyze job (`crate::window::job`) in one pass over the decoded bytes.
    Csv(Box<AnalyzeJob>),
    /// A Chrome / Kineto trace: the trace job's summary read (`crate::trace_job`).
    Trace(Box<FirstRead>),
}

impl Content {
    pub(super) fn write(
        &mut self,
        chunk: &[u8],
        options: &AnalyzerOptions,
        decompressed: bool,
        io: &mut Option<TraceIo>,
    ) -> Result<(), AnalyzeError> {
        match self {
            Content::Detecting { whitespace } => {
                let start = match options.kind {
                    Kind::Auto => chunk.iter().position(|b| !b.is_ascii_whitespace()),
                    Kind::Trace | Kind::Csv => (!chunk.is_empty()).then_some(0),
                };
                let Some(i) = start else {
                    if whitespace.len() + chunk.len() > MAX_LEADING_WHITESPACE as usize {
                        return Err(AnalyzeError::NoContent {
                            at_byte: (whitespace.len() + chunk.len()) as u64,
                        });
                    }
                    whitespace.extend_from_slice(chunk);
                    return Ok(());
                };
                let kind = match options.kind {
                    Kind::Auto if matches!(chunk[i], b'{' | b'[') => Kind::Trace,
                    Kind::Auto => Kind::Csv,
                    k => k,
                };
                let leading = core::mem::take(whitespace);
                *self = Content::start(kind, options)?;
                if let (Content::Trace(t), Some(io)) = (&mut *self, io.take()) {
                    t.set_trace_io(io.spill, io.replay);
                }
                self.write(&leading, options, decompressed, io)?;
                self.write(chunk, options, decompressed, io)
            }
            Content::Csv(job) => Ok(job.write(chunk)?),
            Content::Trace(t) => t.write(chunk, decompressed),
        }
    }

    /// The analysis for `kind`.
    fn start(kind: Kind, options: &AnalyzerOptions) -> Result<Content, AnalyzeError> {
        match kind {
            Kind::Csv => Ok(Content::Csv(Box::new(AnalyzeJob::one_pass_decoded(
                &options.source,
                options.window_options()?,
            )))),
            Kind::Trace | Kind::Auto => Ok(Content::Trace(Box::new(FirstRead::summary_only(
                options.limits(),
                options.mergeable,
                options.step_pattern()?,
            )))),
        }
    }

    /// Ends the analysis. `cut_gzip`: the gzip input ended inside a member (traces only).
    pub(super) fn end(
        self,
        options: &AnalyzerOptions,
        cut_gzip: Option<GzError>,
        gzip_warning: Option<String>,
    ) -> Result<(Analysis, bool), AnalyzeError> {
        match self {
            Content::Detecting { whitespace } if options.kind == Kind::Auto => {
                Err(AnalyzeError::NoContent {
                    at_byte: whitespace.len() as u64,
                })
            }
            Content::Detecting { .. } => {
                Content::start(options.kind, options)?.end(options, cut_gzip, gzip_warning)
            }
            Content::Trace(t) => {
                let top = options.top.unwrap_or(DEFAULT_TOP_OPS);
                let (r, steps, counters) =
                    t.finish_bytes(&options.source, top, cut_gzip, gzip_warning);
                let analysis = match steps {
                    Some(steps) => Analysis::TraceSteps(Box::new((r, steps))),
                    None => Analysis::Trace(Box::new(r)),
                };
                Ok((analysis, counters))
            }
            Content::Csv(mut job) => {
                job.end()?;
                let mut r = job.finish()?.into_analysis();
                r.warnings.extend(gzip_warning);
                Ok((Analysis::Recording(Box::new(r)), false))
            }
        }
    }
}
