//! Which kind of input a diff side is: a trace, or a summary with its mergeable section (a
//! `trace --json --mergeable` output, an array of them, or a `merge` output), told apart by the
//! document's first key. A trace summary's first key is `"source"`, a merge's `"ranks"` (their
//! fields' order is fixed by their structs); a trace's is anything else (`"schemaVersion"`,
//! `"traceEvents"`, ...), and a bare array of events starts with an event, never with a
//! `"source"` key. Read from the decoded bytes (a gzip input is inflated for the look only).
use alloc::vec::Vec;

use crate::gzip::{GzError, MaybeGz};

/// What a diff input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A trace (`.json`, `.json.gz`): summarized here, exactly.
    Trace,
    /// A summary with its mergeable section (one rank or many): compared from the section.
    Summary,
}

/// Decoded bytes looked at, at most, before the kind is decided (a trace then).
pub const SNIFF_BYTES: usize = 4096;

/// The kind of the document whose decoded bytes start with `prefix`; `None` while more bytes
/// could change the answer (`complete`: there are no more, and the answer is given).
pub fn input_kind(prefix: &[u8], complete: bool) -> Option<InputKind> {
    let mut p = Parse { b: prefix, at: 0 };
    let r = p.kind();
    match r {
        Some(k) => Some(k),
        None if complete || prefix.len() >= SNIFF_BYTES => Some(InputKind::Trace),
        None => None,
    }
}

struct Parse<'a> {
    b: &'a [u8],
    at: usize,
}

impl Parse<'_> {
    /// `None`: undecided within these bytes.
    fn kind(&mut self) -> Option<InputKind> {
        self.skip_space();
        match self.next()? {
            b'{' => self.first_key_kind(),
            b'[' => {
                self.skip_space();
                match self.next()? {
                    b'{' => self.first_key_kind(),
                    _ => Some(InputKind::Trace),
                }
            }
            _ => Some(InputKind::Trace),
        }
    }

    fn first_key_kind(&mut self) -> Option<InputKind> {
        self.skip_space();
        if self.next()? != b'"' {
            return Some(InputKind::Trace);
        }
        let start = self.at;
        let len = self.b[start..].iter().position(|&c| c == b'"')?;
        let key = &self.b[start..start + len];
        Some(if key == b"source" || key == b"ranks" {
            InputKind::Summary
        } else {
            InputKind::Trace
        })
    }

    fn skip_space(&mut self) {
        // A byte-order mark too, as the trace scanner skips it.
        while let Some(&c) = self.b.get(self.at) {
            if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0xEF | 0xBB | 0xBF) {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.at)?;
        self.at += 1;
        Some(c)
    }
}

/// The kind, from an input's bytes as they come (stored, plain or gzip): a copy of the first
/// [`SNIFF_BYTES`] decoded bytes, then the answer.
pub(crate) struct Sniffer {
    gz: MaybeGz,
    decoded: Vec<u8>,
    kind: Option<InputKind>,
}

impl Sniffer {
    pub(crate) fn new(decoded: bool) -> Sniffer {
        Sniffer {
            gz: if decoded {
                MaybeGz::plain()
            } else {
                MaybeGz::new()
            },
            decoded: Vec::new(),
            kind: None,
        }
    }

    /// The kind once known.
    pub(crate) fn kind(&self) -> Option<InputKind> {
        self.kind
    }

    /// The next stored bytes; the kind once decided.
    ///
    /// # Errors
    /// Corrupt gzip (the inner job reports it again with its offset).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Option<InputKind>, GzError> {
        if self.kind.is_none() {
            let Sniffer { gz, decoded, .. } = self;
            gz.write(chunk, |bytes: &[u8], _| {
                let room = SNIFF_BYTES.saturating_sub(decoded.len());
                decoded.extend_from_slice(&bytes[..bytes.len().min(room)]);
                Ok::<(), GzError>(())
            })?;
            self.kind = input_kind(&self.decoded, false);
        }
        Ok(self.kind)
    }

    /// No more bytes: the kind.
    pub(crate) fn end(&mut self) -> InputKind {
        if self.kind.is_none() {
            let Sniffer { gz, decoded, .. } = self;
            let _ = gz.end(|bytes: &[u8], _| {
                decoded.extend_from_slice(bytes);
                Ok::<(), GzError>(())
            });
        }
        *self
            .kind
            .get_or_insert_with(|| input_kind(&self.decoded, true).unwrap_or(InputKind::Trace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_first_key() {
        let summary = InputKind::Summary;
        let trace = InputKind::Trace;
        for (text, kind) in [
            ("{\n  \"source\": \"a.json\",", summary),
            ("\u{feff}{\"ranks\": {", summary),
            ("[\n  {\n    \"source\": \"r0\"", summary),
            ("{\"schemaVersion\": 1, \"traceEvents\": [", trace),
            ("{\"traceEvents\": []}", trace),
            ("[{\"ph\": \"X\", \"source\": 1}]", trace),
            ("[]", trace),
            ("not json", trace),
        ] {
            assert_eq!(input_kind(text.as_bytes(), true), Some(kind), "{text}");
            // Every prefix is undecided or already right.
            for cut in 0..text.len() {
                let got = input_kind(&text.as_bytes()[..cut], false);
                assert!(
                    got.is_none() || got == Some(kind),
                    "{text} at {cut}: {got:?}"
                );
            }
        }
        assert_eq!(input_kind(b"{\"sou", false), None);
        assert_eq!(input_kind(b"", true), Some(trace));
    }

    #[test]
    fn sniffer_reads_gzip_and_any_split() {
        use std::io::Write;
        let text = b"{\"source\": \"x\", \"categories\": {}}";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        for bytes in [&text[..], &gz[..]] {
            crate::testutil::for_each_split(bytes, 20, 7, |chunks| {
                let mut s = Sniffer::new(false);
                let mut got = None;
                for c in chunks {
                    got = got.or(s.push(c).unwrap());
                }
                assert_eq!(got.unwrap_or_else(|| s.end()), InputKind::Summary);
            });
        }
    }
}
