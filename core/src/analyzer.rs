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
//! for chunk in [&b"  "[..], &b"garbage"[..]] {
//!     if let Err(e) = a.write(chunk) {
//!         panic!("{e}");
//!     }
//! }
//! assert_eq!(a.bytes_in(), 9);
//! let _json_or_error = a.end();
//! ```
use alloc::string::String;
use core::fmt;

use serde::Deserialize;

use crate::Limits;

/// What the input is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Detect from the first bytes (gzip magic, then `{`/`[` for a trace, else trace.csv).
    #[default]
    Auto,
    /// A Chrome / Kineto trace (`.json`, or `.json.gz` when gzip is detected).
    Trace,
    /// A `trace.csv` written by `flinch-trace record` or the reference recorder.
    Csv,
}

impl Kind {
    /// Parses `auto`, `trace` or `csv`.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "auto" | "" => Some(Kind::Auto),
            "trace" | "json" => Some(Kind::Trace),
            "csv" => Some(Kind::Csv),
            _ => None,
        }
    }
}

/// Which memory bounds to use: see [`Limits::EXACT`] and [`Limits::BOUNDED`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitsPreset {
    /// [`Limits::EXACT`]: exact results, memory grows with the number of distinct ops/values.
    #[default]
    Exact,
    /// [`Limits::BOUNDED`]: memory bounded whatever the input; approximations are stated.
    Bounded,
}

/// How to analyze: built by the native commands from their flags, and by the page from a JSON
/// object with the same field names (see [`AnalyzerOptions::from_json`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalyzerOptions {
    /// What the input is (`auto`, `trace`, `csv`).
    pub kind: Kind,
    /// Memory bounds preset.
    pub limits: LimitsPreset,
    /// The `source` string written into the result (native: the path as given; page: the file name).
    pub source: String,
    /// trace.csv only: label of the start mark of the window (with `end`).
    pub start: Option<String>,
    /// trace.csv only: label of the end mark of the window (with `start`).
    pub end: Option<String>,
}

impl AnalyzerOptions {
    /// Parses options from JSON such as `{"kind":"auto","limits":"bounded","source":"t.csv"}`.
    ///
    /// # Errors
    /// Unknown fields or values, as [`AnalyzeError::Options`].
    pub fn from_json(text: &str) -> Result<AnalyzerOptions, AnalyzeError> {
        serde_json::from_str(text).map_err(|e| AnalyzeError::Options(alloc::format!("{e}")))
    }

    /// The [`Limits`] of the chosen preset.
    pub fn limits(&self) -> Limits {
        match self.limits {
            LimitsPreset::Exact => Limits::EXACT,
            LimitsPreset::Bounded => Limits::BOUNDED,
        }
    }
}

/// Why an analysis failed. Every input error carries the byte offset where it was found.
#[derive(Clone, Debug, PartialEq)]
pub enum AnalyzeError {
    /// The options could not be parsed.
    Options(String),
    /// The input held no data at all.
    Empty,
    /// Only whitespace in the first bytes: nothing to detect the kind from.
    NoContent {
        /// Bytes of whitespace read.
        at_byte: u64,
    },
    /// The detected kind cannot be analyzed by this build.
    Unsupported {
        /// What was detected.
        what: &'static str,
    },
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeError::Options(e) => write!(f, "bad analyzer options: {e}"),
            AnalyzeError::Empty => f.write_str("empty input: no bytes to analyze"),
            AnalyzeError::NoContent { at_byte } => {
                write!(
                    f,
                    "only whitespace up to byte {at_byte}: not a trace or trace.csv"
                )
            }
            AnalyzeError::Unsupported { what } => write!(f, "{what} is not supported yet"),
        }
    }
}

/// Longest run of leading whitespace looked through to detect the kind.
const MAX_LEADING_WHITESPACE: u64 = 1 << 16;

/// The streaming analyzer. Feed chunks with [`write`](Analyzer::write), then call
/// [`end`](Analyzer::end) once; after an error, every later call returns the same error.
pub struct Analyzer {
    options: AnalyzerOptions,
    bytes_in: u64,
    state: State,
}

enum State {
    /// Kind not known yet: bytes of leading whitespace seen so far.
    Detecting {
        whitespace: u64,
    },
    Failed(AnalyzeError),
}

impl Analyzer {
    /// An analyzer with the given options. Allocates its bounded buffers lazily, once the kind
    /// is known.
    pub fn new(options: AnalyzerOptions) -> Analyzer {
        let state = match options.kind {
            Kind::Auto => State::Detecting { whitespace: 0 },
            Kind::Trace => State::Failed(AnalyzeError::Unsupported {
                what: "trace analysis",
            }),
            Kind::Csv => State::Failed(AnalyzeError::Unsupported {
                what: "trace.csv analysis",
            }),
        };
        Analyzer {
            options,
            bytes_in: 0,
            state,
        }
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
        let at = self.bytes_in;
        self.bytes_in += chunk.len() as u64;
        let next = match &mut self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Detecting { whitespace } => {
                match chunk.iter().position(|b| !b.is_ascii_whitespace()) {
                    None => {
                        *whitespace += chunk.len() as u64;
                        if *whitespace > MAX_LEADING_WHITESPACE {
                            State::Failed(AnalyzeError::NoContent {
                                at_byte: at + chunk.len() as u64,
                            })
                        } else {
                            return Ok(());
                        }
                    }
                    Some(i) => State::Failed(AnalyzeError::Unsupported {
                        what: detect(&chunk[i..]),
                    }),
                }
            }
        };
        self.state = next;
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Detecting { .. } => Ok(()),
        }
    }

    /// Ends the input and renders the result JSON.
    ///
    /// # Errors
    /// Input that ended where it cannot (for example inside a gzip member), or an earlier error.
    pub fn end(self) -> Result<String, AnalyzeError> {
        match self.state {
            State::Failed(e) => Err(e),
            State::Detecting { .. } if self.bytes_in == 0 => Err(AnalyzeError::Empty),
            State::Detecting { .. } => Err(AnalyzeError::NoContent {
                at_byte: self.bytes_in,
            }),
        }
    }
}

/// Names the kind that `rest` (starting at the first non-whitespace byte) looks like.
fn detect(rest: &[u8]) -> &'static str {
    match rest[0] {
        0x1f => "gzip input",
        b'{' | b'[' => "trace analysis",
        _ => "trace.csv analysis",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::string::ToString;

    fn run(options: AnalyzerOptions, chunks: &[&[u8]]) -> Result<String, AnalyzeError> {
        let mut a = Analyzer::new(options);
        for c in chunks {
            a.write(c)?;
        }
        a.end()
    }

    #[test]
    fn options_from_json() {
        let o = AnalyzerOptions::from_json(
            r#"{"kind":"csv","limits":"bounded","source":"t.csv","start":"a","end":"b"}"#,
        )
        .unwrap();
        assert_eq!(o.kind, Kind::Csv);
        assert_eq!(o.limits(), Limits::BOUNDED);
        assert_eq!(o.source, "t.csv");
        assert_eq!(
            (o.start.as_deref(), o.end.as_deref()),
            (Some("a"), Some("b"))
        );
        assert_eq!(
            AnalyzerOptions::from_json("{}").unwrap(),
            AnalyzerOptions::default()
        );
        let e = AnalyzerOptions::from_json(r#"{"kind":"pdf"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("bad analyzer options: unknown variant `pdf`"),
            "{e}"
        );
        assert!(AnalyzerOptions::from_json(r#"{"colour":1}"#).is_err());
    }

    #[test]
    fn empty_and_whitespace_inputs() {
        assert_eq!(
            run(AnalyzerOptions::default(), &[]),
            Err(AnalyzeError::Empty)
        );
        for_each_split(b" \n\t \r\n", 8, 1, |chunks| {
            assert_eq!(
                run(AnalyzerOptions::default(), chunks),
                Err(AnalyzeError::NoContent { at_byte: 6 })
            );
        });
        let ws = alloc::vec![b' '; MAX_LEADING_WHITESPACE as usize + 1];
        assert_eq!(
            run(AnalyzerOptions::default(), &[&ws]),
            Err(AnalyzeError::NoContent {
                at_byte: ws.len() as u64
            })
        );
    }

    #[test]
    fn failed_analyzer_stays_failed() {
        let mut a = Analyzer::new(AnalyzerOptions::default());
        let e = a.write(b"  x").unwrap_err();
        assert_eq!(a.write(b"more"), Err(e.clone()));
        assert_eq!(a.bytes_in(), 7);
        assert_eq!(a.end(), Err(e));
    }
}
