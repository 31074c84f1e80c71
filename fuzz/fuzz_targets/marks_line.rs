//! Fuzz target `marks_line`: arbitrary bytes as the marks FIFO stream, fed in fuzzer-chosen
//! chunks to `flinch_core::marks_line::LineSplitter`, each line parsed. Must never panic; the
//! lines must not depend on the chunk sizes, none is over `MAX_LINE`, every mark's label is
//! non-empty and trimmed, and a stamped mark written back with `write_mark` parses to itself.
#![no_main]

use flinch_core::marks_line::{self, Line, LineSplitter, MAX_LINE, Mark, Piece};
use libfuzzer_sys::fuzz_target;

/// The lines of `data` split in chunks of `chunk` bytes (`None`: dropped as overlong).
fn lines(data: &[u8], chunk: usize) -> Vec<Option<Vec<u8>>> {
    let mut s = Box::new(LineSplitter::new());
    let mut out = Vec::new();
    for c in data.chunks(chunk) {
        s.push(c, |p| {
            out.push(match p {
                Piece::Line(l) => Some(l.to_vec()),
                Piece::Overlong => None,
            })
        });
    }
    out
}

fn check_mark(m: Mark<'_>) {
    assert!(!m.label.is_empty());
    assert_eq!(m.label, m.label.trim());
    assert!(m.thread.is_none() || m.t_mono_ns.is_some());
    if let Some(t) = m.t_mono_ns
        && !m.label.contains(['\n', '\r'])
    {
        let mut buf = [0u8; MAX_LINE];
        if let Ok(n) = marks_line::write_mark(&mut buf, t, m.thread, m.label) {
            assert_eq!(buf[n - 1], b'\n');
            assert_eq!(marks_line::parse(&buf[..n - 1]), Ok(Line::Mark(m)));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, text)) = data.split_first() else {
        return;
    };
    let whole = lines(text, text.len().max(1));
    assert_eq!(lines(text, 1 + knob as usize), whole);
    for l in whole.iter().flatten() {
        assert!(l.len() <= MAX_LINE);
        match marks_line::parse(l) {
            Ok(Line::Mark(m)) => check_mark(m),
            Ok(_) => {}
            Err(marks_line::ParseError::NotUtf8 { at }) => {
                assert!(std::str::from_utf8(&l[..at]).is_ok());
                if let Line::Mark(m) = marks_line::parse_str(&String::from_utf8_lossy(l)) {
                    check_mark(m);
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
});
