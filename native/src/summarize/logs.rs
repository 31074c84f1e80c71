//! `command.log` observations: runtime loading/compilation lines and lifecycle markers.
use serde::Serialize;

use super::OrderedMap;

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
    last: std::collections::VecDeque<String>,
}

/// What the log says: timing evidence lines and lifecycle marker counts.
pub struct LogObservations {
    /// Lines holding any timing marker, in order.
    pub timing_lines: Vec<String>,
    /// The lifecycle markers.
    pub lifecycle: Lifecycle,
}

/// Scans the log, streamed line by line (decoded with U+FFFD for invalid UTF-8, as the
/// reference's `errors="replace"`, and split like `str.splitlines()`); `None` (no log) gives
/// empty observations. Examples keep the first three and last three matches when there are
/// more than six, as the reference does, holding at most nine lines per marker. A read error
/// ends the scan early and is returned beside what was seen.
pub fn observe(log: Option<impl std::io::BufRead>) -> (LogObservations, Option<std::io::Error>) {
    let mut timing_lines = Vec::new();
    let mut counts: Vec<MarkerCount> = LIFECYCLE_MARKERS
        .iter()
        .map(|_| MarkerCount::default())
        .collect();
    let mut error = None;
    let mut chunk = Vec::new();
    let mut log = log;
    while let Some(reader) = log.as_mut() {
        chunk.clear();
        match reader.read_until(b'\n', &mut chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                error = Some(e);
                break;
            }
        }
        let text = String::from_utf8_lossy(&chunk);
        for line in py_splitlines(&text) {
            observe_line(line, &mut timing_lines, &mut counts);
        }
    }
    for c in &mut counts {
        if c.count > 6 {
            c.examples.truncate(3);
            c.examples.extend(c.last.drain(..));
        }
    }
    let obs = LogObservations {
        timing_lines,
        lifecycle: Lifecycle {
            scope: LIFECYCLE_SCOPE,
            markers: OrderedMap(
                LIFECYCLE_MARKERS
                    .iter()
                    .map(|m| m.to_string())
                    .zip(counts)
                    .collect(),
            ),
        },
    };
    (obs, error)
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
    std::iter::from_fn(move || {
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
            None => std::mem::take(&mut rest),
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

    #[test]
    fn splitlines_like_python() {
        let got: Vec<&str> = py_splitlines("a\r\nb\rc\x0bd\u{2028}e\n\nf\n").collect();
        assert_eq!(got, ["a", "b", "c", "d", "e", "", "f"]);
        assert_eq!(py_splitlines("").count(), 0);
    }

    /// Streaming the log through any buffer size gives what the whole text gives.
    #[test]
    fn any_buffer_split_observes_the_same() {
        let text = "a Model loading took 1 s\r\nDropping output for unknown req \u{e9}\r\x0bb\n\n"
            .repeat(5)
            + "force killing remaining process 1 engine startup completed";
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"\xff\xfe Dropping output for unknown req x\r");
        let (whole, _) = observe(Some(&bytes[..]));
        for cap in [1, 2, 3, 7, 4096] {
            let (got, err) = observe(Some(std::io::BufReader::with_capacity(cap, &bytes[..])));
            assert!(err.is_none());
            assert_eq!(got.timing_lines, whole.timing_lines, "capacity {cap}");
            for (a, b) in got
                .lifecycle
                .markers
                .0
                .iter()
                .zip(&whole.lifecycle.markers.0)
            {
                assert_eq!(
                    (a.1.count, &a.1.examples),
                    (b.1.count, &b.1.examples),
                    "capacity {cap}"
                );
            }
        }
        assert_eq!(whole.lifecycle.markers.0[0].1.count, 6);
        assert_eq!(whole.timing_lines.len(), 6);
    }

    #[test]
    fn examples_keep_first_and_last_three() {
        let text: String = (1..=8)
            .map(|i| format!("x{i} force killing remaining process 7\n"))
            .collect();
        let (obs, _) = observe(Some(text.as_bytes()));
        let m = &obs.lifecycle.markers.0[1].1;
        assert_eq!(m.count, 8);
        let want: Vec<String> = [1, 2, 3, 6, 7, 8]
            .iter()
            .map(|i| format!("x{i} force killing remaining process 7"))
            .collect();
        assert_eq!(m.examples, want);
        let (few, _) = observe(Some(
            &b"Dropping output for unknown req 1
Model loading took 3 s"[..],
        ));
        assert_eq!(few.lifecycle.markers.0[0].1.examples.len(), 1);
        assert_eq!(few.timing_lines, ["Model loading took 3 s"]);
    }
}
