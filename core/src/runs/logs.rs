//! `command.log` observations: runtime loading/compilation lines and lifecycle markers.
use alloc::borrow::ToOwned;
use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::Serialize;

use super::OrderedMap;
use super::jsonl::MAX_LINE_BYTES;
use super::lines::{Lines, Piece};
use super::warnings::Warnings;

/// Lines quoting runtime loading/compilation timings (kept whole).
const TIMING_MARKERS: [&str; 6] = [
    "Loading model weights took",
    "Model loading took",
    "init engine (",
    "torch.compile took",
    "Captured talker_mtp graphs",
    "engine startup completed",
];

/// Lifecycle markers counted, with up to three first and three last examples.
const LIFECYCLE_MARKERS: [&str; 2] = [
    "Dropping output for unknown req",
    "force killing remaining process ",
];

const LIFECYCLE_SCOPE: &str =
    "Counts are log lines, not request counts or a correctness verdict. Inspect source logs.";

/// `lifecycle_log_observations` of a run.
#[derive(Serialize, Debug)]
pub struct Lifecycle {
    scope: &'static str,
    markers: OrderedMap<MarkerCount>,
}

/// One marker's count and examples.
#[derive(Serialize, Debug, Default)]
pub struct MarkerCount {
    count: usize,
    examples: Vec<String>,
    #[serde(skip)]
    last: VecDeque<String>,
}

/// What the log says: timing evidence lines and lifecycle marker counts.
pub struct LogObservations {
    /// Lines holding any timing marker, in order.
    pub timing_lines: Vec<String>,
    /// The lifecycle markers.
    pub lifecycle: Lifecycle,
    /// Lines skipped for their length, by line number.
    pub warnings: Warnings,
}

/// Scans a log pushed in chunks, line by line (decoded with U+FFFD for invalid UTF-8, as the
/// reference's `errors="replace"`, and split like `str.splitlines()`). Examples keep the first
/// three and last three matches when there are more than six, as the reference does, holding
/// at most nine lines per marker. A log never pushed (none on disk) gives empty observations.
/// A line (ending at `\n`) longer than the limit, [`MAX_LINE_BYTES`] by default, is skipped as
/// it is read, never held, and counted in the warnings with its line number.
#[derive(Debug)]
pub struct LogObserver {
    lines: Lines,
    timing_lines: Vec<String>,
    counts: Vec<MarkerCount>,
    warnings: Warnings,
    /// The warning for a skipped line, naming the limit (as the JSONL readers word it).
    too_long: String,
}

impl Default for LogObserver {
    fn default() -> Self {
        LogObserver::with_max_line_bytes(MAX_LINE_BYTES)
    }
}

impl LogObserver {
    /// An observer holding lines of up to `max_line_bytes` bytes.
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        LogObserver {
            lines: Lines::with_max_line_bytes(max_line_bytes),
            timing_lines: Vec::new(),
            counts: LIFECYCLE_MARKERS
                .iter()
                .map(|_| MarkerCount::default())
                .collect(),
            warnings: Warnings::default(),
            too_long: alloc::format!("line over {max_line_bytes} bytes skipped"),
        }
    }

    /// Takes the next chunk of the log.
    pub fn push(&mut self, chunk: &[u8]) {
        let Self {
            lines,
            timing_lines,
            counts,
            warnings,
            too_long,
        } = self;
        lines.push(chunk, |piece| match piece {
            Piece::Line(line) => observe_piece(line, timing_lines, counts),
            Piece::TooLong(n) => warnings.at_line(too_long, n),
        });
    }

    /// The end of the log; after a read error (`cut`) an unfinished last line is dropped.
    pub fn finish(mut self, cut: bool) -> LogObservations {
        if !cut {
            let Self {
                lines,
                timing_lines,
                counts,
                warnings,
                too_long,
            } = &mut self;
            lines.finish(|piece| match piece {
                Piece::Line(line) => observe_piece(line, timing_lines, counts),
                Piece::TooLong(n) => warnings.at_line(too_long, n),
            });
        }
        for c in &mut self.counts {
            if c.count > 6 {
                c.examples.truncate(3);
                c.examples.extend(c.last.drain(..));
            }
        }
        LogObservations {
            timing_lines: self.timing_lines,
            lifecycle: Lifecycle {
                scope: LIFECYCLE_SCOPE,
                markers: OrderedMap(
                    LIFECYCLE_MARKERS
                        .iter()
                        .map(|m| m.to_string())
                        .zip(self.counts)
                        .collect(),
                ),
            },
            warnings: self.warnings,
        }
    }
}

/// One `\n`-terminated piece of the log, decoded as a whole and split like Python.
fn observe_piece(piece: &[u8], timing_lines: &mut Vec<String>, counts: &mut [MarkerCount]) {
    let text = String::from_utf8_lossy(piece);
    for line in py_splitlines(&text) {
        observe_line(line, timing_lines, counts);
    }
}

fn observe_line(line: &str, timing_lines: &mut Vec<String>, counts: &mut [MarkerCount]) {
    if TIMING_MARKERS.iter().any(|m| line.contains(m)) {
        timing_lines.push(line.to_owned());
    }
    for (marker, c) in LIFECYCLE_MARKERS.iter().zip(counts.iter_mut()) {
        if line.contains(marker) {
            c.count += 1;
            if c.examples.len() < 6 {
                c.examples.push(line.to_owned());
            }
            if c.last.len() == 3 {
                c.last.pop_front();
            }
            c.last.push_back(line.to_owned());
        }
    }
}

/// Python's `str.splitlines()`: breaks at `\n`, `\r\n`, `\r`, `\v`, `\f`, `\x1c`-`\x1e`,
/// `\x85`, U+2028 and U+2029; no trailing empty line.
pub fn py_splitlines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let brk = rest.char_indices().find(|(_, c)| {
            matches!(
                c,
                '\n' | '\r'
                    | '\x0b'
                    | '\x0c'
                    | '\x1c'
                    | '\x1d'
                    | '\x1e'
                    | '\u{85}'
                    | '\u{2028}'
                    | '\u{2029}'
            )
        });
        Some(match brk {
            None => core::mem::take(&mut rest),
            Some((i, c)) => {
                let line = &rest[..i];
                let mut next = i + c.len_utf8();
                if c == '\r' && rest[next..].starts_with('\n') {
                    next += 1;
                }
                rest = &rest[next..];
                line
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::format;
    use alloc::vec::Vec;

    #[test]
    fn splitlines_like_python() {
        let got: Vec<&str> = py_splitlines("a\r\nb\rc\x0bd\u{2028}e\n\nf\n").collect();
        assert_eq!(got, ["a", "b", "c", "d", "e", "", "f"]);
        assert_eq!(py_splitlines("").count(), 0);
    }

    fn observe(chunks: &[&[u8]]) -> LogObservations {
        let mut o = LogObserver::default();
        for c in chunks {
            o.push(c);
        }
        o.finish(false)
    }

    /// Streaming the log in any split observes what the whole text gives.
    #[test]
    fn any_split_observes_the_same() {
        let text = "a Model loading took 1 s\r\nDropping output for unknown req \u{e9}\r\x0bb\n\n"
            .repeat(5)
            + "force killing remaining process 1 engine startup completed";
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"\xff\xfe Dropping output for unknown req x\r");
        let whole = observe(&[&bytes]);
        for_each_split(&bytes, 30, 5, |chunks| {
            let got = observe(chunks);
            assert_eq!(got.timing_lines, whole.timing_lines);
            for (a, b) in got
                .lifecycle
                .markers
                .0
                .iter()
                .zip(&whole.lifecycle.markers.0)
            {
                assert_eq!((a.1.count, &a.1.examples), (b.1.count, &b.1.examples));
            }
        });
        assert_eq!(whole.lifecycle.markers.0[0].1.count, 6);
        assert_eq!(whole.timing_lines.len(), 6);
    }

    #[test]
    fn examples_keep_first_and_last_three() {
        let text: String = (1..=8)
            .map(|i| format!("x{i} force killing remaining process 7\n"))
            .collect();
        let obs = observe(&[text.as_bytes()]);
        let m = &obs.lifecycle.markers.0[1].1;
        assert_eq!(m.count, 8);
        let want: Vec<String> = [1, 2, 3, 6, 7, 8]
            .iter()
            .map(|i| format!("x{i} force killing remaining process 7"))
            .collect();
        assert_eq!(m.examples, want);
        let few = observe(&[b"Dropping output for unknown req 1
Model loading took 3 s"]);
        assert_eq!(few.lifecycle.markers.0[0].1.examples.len(), 1);
        assert_eq!(few.timing_lines, ["Model loading took 3 s"]);
    }
}
