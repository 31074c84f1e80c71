//! Splitting pushed bytes at `\n`, holding only the unfinished line between pushes.
use alloc::vec::Vec;

/// Hands out `\n`-terminated pieces of pushed bytes (each with its `\n`), and the last piece
/// without one at [`finish`](Lines::finish). A piece that lies whole inside one chunk is
/// lent from that chunk; only a piece cut by a chunk boundary is copied.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Takes the next chunk; `f` runs for each piece it completes.
    pub fn push(&mut self, mut chunk: &[u8], mut f: impl FnMut(&[u8])) {
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            let (piece, rest) = chunk.split_at(i + 1);
            if self.partial.is_empty() {
                f(piece);
            } else {
                self.partial.extend_from_slice(piece);
                f(&self.partial);
                self.partial.clear();
            }
            chunk = rest;
        }
        self.partial.extend_from_slice(chunk);
    }

    /// The end of the input: `f` runs for the last piece when it has no `\n`.
    pub fn finish(&mut self, mut f: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            f(&self.partial);
            self.partial.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;

    #[test]
    fn pieces_match_split_inclusive_for_any_split() {
        let text = b"a\r\nbb\n\n\rc\nlast";
        let want: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
        for_each_split(text, 50, 7, |chunks| {
            let mut got: Vec<Vec<u8>> = Vec::new();
            let mut lines = Lines::default();
            for c in chunks {
                lines.push(c, |p| got.push(p.to_vec()));
            }
            lines.finish(|p| got.push(p.to_vec()));
            assert_eq!(got, want);
        });
    }
}
