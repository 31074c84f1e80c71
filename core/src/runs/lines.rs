//! Splitting pushed bytes at `\n`, holding at most one line's worth of bytes between pushes.
use alloc::vec::Vec;

/// One `\n`-terminated piece of the input, or the note that a line was too long to hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A line with its `\n` (the last one may have none).
    Line(&'a [u8]),
    /// Line `n` (1-based, counted at `\n`) was longer than the limit: read through, not held.
    TooLong(usize),
}

/// Hands out `\n`-terminated pieces of pushed bytes (each with its `\n`), and the last piece
/// without one at [`finish`](Lines::finish). A piece that lies whole inside one chunk is
/// lent from that chunk; only a piece cut by a chunk boundary is copied. A line of more than
/// `max_line_bytes` bytes (its `\n` not counted) is never held: it is dropped as it arrives
/// and reported as [`Piece::TooLong`], so the buffer stays within the limit whatever the input.
#[derive(Debug)]
pub struct Lines {
    partial: Vec<u8>,
    /// The unfinished line is past the limit: the rest of it is dropped.
    too_long: bool,
    /// Lines ended so far.
    line_no: usize,
    max_line_bytes: usize,
}

impl Lines {
    /// A splitter holding lines of up to `max_line_bytes` bytes.
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        Lines {
            partial: Vec::new(),
            too_long: false,
            line_no: 0,
            max_line_bytes,
        }
    }

    /// Takes the next chunk; `f` runs for each piece it completes.
    pub fn push(&mut self, mut chunk: &[u8], mut f: impl FnMut(Piece<'_>)) {
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            let (piece, rest) = chunk.split_at(i + 1);
            self.line_no += 1;
            if self.too_long || self.partial.len() + i > self.max_line_bytes {
                self.too_long = false;
                self.partial.clear();
                f(Piece::TooLong(self.line_no));
            } else if self.partial.is_empty() {
                f(Piece::Line(piece));
            } else {
                self.partial.extend_from_slice(piece);
                f(Piece::Line(&self.partial));
                self.partial.clear();
            }
            chunk = rest;
        }
        self.take(chunk);
    }

    /// Adds a piece of the unfinished line, or drops it past the limit.
    fn take(&mut self, text: &[u8]) {
        if self.too_long {
            return;
        }
        if self.partial.len() + text.len() > self.max_line_bytes {
            self.too_long = true;
            self.partial.clear();
        } else {
            self.partial.extend_from_slice(text);
        }
    }

    /// The end of the input: `f` runs for the last piece when it has no `\n`.
    pub fn finish(&mut self, mut f: impl FnMut(Piece<'_>)) {
        if self.too_long {
            self.too_long = false;
            self.line_no += 1;
            f(Piece::TooLong(self.line_no));
        } else if !self.partial.is_empty() {
            self.line_no += 1;
            f(Piece::Line(&self.partial));
            self.partial.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::vec;

    /// What a piece says, owned.
    #[derive(Debug, PartialEq)]
    enum Got {
        Line(Vec<u8>),
        TooLong(usize),
    }

    fn got(p: Piece<'_>) -> Got {
        match p {
            Piece::Line(l) => Got::Line(l.to_vec()),
            Piece::TooLong(n) => Got::TooLong(n),
        }
    }

    /// The naive reading: the whole text split at `\n`, each line judged by its length.
    fn oracle(text: &[u8], max: usize) -> Vec<Got> {
        text.split_inclusive(|&b| b == b'\n')
            .enumerate()
            .map(|(i, piece)| {
                let len = piece.len() - usize::from(piece.ends_with(b"\n"));
                if len > max {
                    Got::TooLong(i + 1)
                } else {
                    Got::Line(piece.to_vec())
                }
            })
            .collect()
    }

    fn read(chunks: &[&[u8]], max: usize) -> Vec<Got> {
        let mut out = Vec::new();
        let mut lines = Lines::with_max_line_bytes(max);
        for c in chunks {
            lines.push(c, |p| out.push(got(p)));
            assert!(lines.partial.len() <= max);
        }
        lines.finish(|p| out.push(got(p)));
        out
    }

    #[test]
    fn pieces_match_split_inclusive_for_any_split() {
        let text = b"a\r\nbb\n\n\rc\nlast";
        for_each_split(text, 50, 7, |chunks| {
            assert_eq!(read(chunks, usize::MAX), oracle(text, usize::MAX));
        });
    }

    /// Random texts of lines around the limit, in random splits, against the naive reading.
    #[test]
    fn capped_pieces_match_the_oracle_for_any_split() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        for round in 0..40 {
            let max = next(8) as usize;
            let mut text = vec![];
            for _ in 0..next(12) {
                for _ in 0..next(2 * max as u64 + 3) {
                    text.push([b'a', b'\r', b'\xe9'][next(3) as usize]);
                }
                text.push(b'\n');
            }
            if next(2) == 1 {
                text.truncate(text.len() - 1);
            }
            let want = oracle(&text, max);
            for_each_split(&text, 20, round, |chunks| {
                assert_eq!(read(chunks, max), want, "max {max}, {text:?}");
            });
        }
    }

    /// A line of exactly the limit is held; one byte more is not; an over-long last line
    /// without `\n` is reported too.
    #[test]
    fn the_limit_is_inclusive() {
        assert_eq!(
            read(&[b"abc\nabcd\n"], 3),
            [Got::Line(b"abc\n".to_vec()), Got::TooLong(2)]
        );
        assert_eq!(read(&[b"ab", b"cd"], 3), [Got::TooLong(1)]);
        assert_eq!(
            read(&[b"\n", b"abc"], 3),
            [Got::Line(b"\n".to_vec()), Got::Line(b"abc".to_vec())]
        );
    }
}
