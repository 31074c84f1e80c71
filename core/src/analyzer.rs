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
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use serde::Deserialize;

use crate::Limits;
use crate::gzip::{GzDecoder, GzError, GzStatus, is_gzip};

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
        /// Bytes of (decoded) whitespace read.
        at_byte: u64,
    },
    /// The gzip layer failed (offsets are in the compressed file).
    Gzip(GzError),
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
            AnalyzeError::Gzip(e) => e.fmt(f),
            AnalyzeError::Unsupported { what } => write!(f, "{what} is not supported yet"),
        }
    }
}

impl From<GzError> for AnalyzeError {
    fn from(e: GzError) -> Self {
        AnalyzeError::Gzip(e)
    }
}

/// Longest run of leading whitespace looked through to detect the kind.
const MAX_LEADING_WHITESPACE: u64 = 1 << 16;

/// Decoded bytes handed from the gzip layer to the analysis per step.
const GZ_OUT_BYTES: usize = 64 * 1024;

/// The streaming analyzer. Feed chunks with [`write`](Analyzer::write), then call
/// [`end`](Analyzer::end) once; after an error, every later call returns the same error.
pub struct Analyzer {
    options: AnalyzerOptions,
    bytes_in: u64,
    failed: Option<AnalyzeError>,
    container: Container,
    content: Content,
}

/// The file layer: plain, or gzip decoded by the core decoder.
enum Container {
    /// No byte seen yet, or only a first `1f` (kept here) that may start the gzip magic.
    Sniffing {
        first: Option<u8>,
    },
    Plain,
    Gzip {
        decoder: GzDecoder,
        out: Vec<u8>,
    },
}

/// The content layer, fed with plain (decoded) bytes.
enum Content {
    /// Kind not known yet: bytes of leading whitespace seen so far.
    Detecting { whitespace: u64 },
}

impl Analyzer {
    /// An analyzer with the given options. Allocates its bounded buffers once the kind is known.
    pub fn new(options: AnalyzerOptions) -> Analyzer {
        Analyzer {
            options,
            bytes_in: 0,
            failed: None,
            container: Container::Sniffing { first: None },
            content: Content::Detecting { whitespace: 0 },
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
        if let Container::Sniffing { first } = &mut self.container {
            let Some(&b) = chunk.first() else {
                return Ok(());
            };
            match *first {
                None if b == 0x1f && chunk.len() == 1 => {
                    *first = Some(b);
                    return Ok(());
                }
                None => self.container = container_for(&[b, chunk.get(1).copied().unwrap_or(0)]),
                Some(f) => {
                    self.container = container_for(&[f, b]);
                    // Replay the held-back first byte.
                    self.feed(&[f])?;
                }
            }
        }
        self.feed(chunk)
    }

    /// Passes file bytes through the container layer to the content layer.
    fn feed(&mut self, mut input: &[u8]) -> Result<(), AnalyzeError> {
        match &mut self.container {
            Container::Sniffing { .. } => unreachable!("the container is known before feeding"),
            Container::Plain => self.content.write(input, &self.options),
            Container::Gzip { decoder, out } => loop {
                let (status, nin, nout) = decoder.decode(input, out)?;
                self.content.write(&out[..nout], &self.options)?;
                input = &input[nin..];
                if status != GzStatus::OutputFull {
                    return Ok(());
                }
            },
        }
    }

    /// Ends the input and renders the result JSON.
    ///
    /// # Errors
    /// Input that ended where it cannot (for example inside a gzip member), or an earlier error.
    pub fn end(mut self) -> Result<String, AnalyzeError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match &self.container {
            Container::Sniffing { first: None } => return Err(AnalyzeError::Empty),
            Container::Sniffing { first: Some(f) } => {
                let f = *f;
                self.container = Container::Plain;
                self.feed(&[f])?;
            }
            Container::Plain => {}
            Container::Gzip { decoder, .. } => decoder.finish()?,
        }
        self.content.end()
    }
}

/// The container layer for a file whose first two bytes are `magic`.
fn container_for(magic: &[u8; 2]) -> Container {
    if is_gzip(magic) {
        Container::Gzip {
            decoder: GzDecoder::new(),
            out: vec![0; GZ_OUT_BYTES],
        }
    } else {
        Container::Plain
    }
}

impl Content {
    fn write(&mut self, chunk: &[u8], options: &AnalyzerOptions) -> Result<(), AnalyzeError> {
        match self {
            Content::Detecting { whitespace } => {
                let start = match options.kind {
                    Kind::Auto => chunk.iter().position(|b| !b.is_ascii_whitespace()),
                    Kind::Trace | Kind::Csv => (!chunk.is_empty()).then_some(0),
                };
                let Some(i) = start else {
                    *whitespace += chunk.len() as u64;
                    return if *whitespace > MAX_LEADING_WHITESPACE {
                        Err(AnalyzeError::NoContent {
                            at_byte: *whitespace,
                        })
                    } else {
                        Ok(())
                    };
                };
                let kind = match options.kind {
                    Kind::Auto if matches!(chunk[i], b'{' | b'[') => Kind::Trace,
                    Kind::Auto => Kind::Csv,
                    k => k,
                };
                Err(AnalyzeError::Unsupported {
                    what: match kind {
                        Kind::Trace => "trace analysis",
                        _ => "trace.csv analysis",
                    },
                })
            }
        }
    }

    fn end(self) -> Result<String, AnalyzeError> {
        match self {
            Content::Detecting { whitespace } => Err(AnalyzeError::NoContent {
                at_byte: whitespace,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::string::ToString;
    use alloc::vec::Vec;

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

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gzip_layer_is_transparent() {
        // Whitespace inside gzip: the content layer sees the decoded bytes, in any split.
        let gz = gzip(b" \n \n");
        for_each_split(&gz, 16, 2, |chunks| {
            assert_eq!(
                run(AnalyzerOptions::default(), chunks),
                Err(AnalyzeError::NoContent { at_byte: 4 })
            );
        });
        // A lone first byte 0x1f that is not gzip is content, not lost.
        assert_eq!(
            run(AnalyzerOptions::default(), &[b"\x1f"]),
            Err(AnalyzeError::Unsupported {
                what: "trace.csv analysis"
            })
        );
        assert_eq!(
            run(AnalyzerOptions::default(), &[b"\x1f", b"x"]),
            Err(AnalyzeError::Unsupported {
                what: "trace.csv analysis"
            })
        );
    }

    #[test]
    fn gzip_errors_carry_offsets() {
        let gz = gzip(&[b' '; 1000]);
        let cut = &gz[..gz.len() - 3];
        for_each_split(cut, 8, 3, |chunks| {
            let e = run(AnalyzerOptions::default(), chunks).unwrap_err();
            assert_eq!(
                e.to_string(),
                alloc::format!("truncated gzip member at byte {}", cut.len())
            );
        });
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 8] ^= 1; // CRC32
        let e = run(AnalyzerOptions::default(), &[&bad]).unwrap_err();
        assert_eq!(
            e.to_string(),
            alloc::format!("crc32 mismatch in gzip member ending at byte {n}")
        );
    }

    #[test]
    fn failed_analyzer_stays_failed() {
        let mut a = Analyzer::new(AnalyzerOptions::default());
        let e = a.write(b"  x").unwrap_err();
        assert_eq!(a.write(b"more"), Err(e.clone()));
        assert_eq!(a.bytes_in(), 3, "bytes after the failure are not taken");
        assert_eq!(a.end(), Err(e));
    }
}
