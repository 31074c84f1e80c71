//! The file layer every whole-file reader in the core shares: a file's bytes are plain or gzip,
//! told apart by their first two bytes (the gzip magic), and handed on decoded.
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use super::{GzDecoder, GzError, GzStatus, MAGIC_0, MinizInflate, RestartIndex, is_gzip};

/// Decoded bytes handed on per step of a gzip file.
const OUT_BYTES: usize = 64 * 1024;

/// One file's bytes, plain or gzip (by magic), passed on decoded: [`write`](Self::write) each
/// chunk, then [`end`](Self::end). A plain file's chunks pass through as they are, uncopied.
pub struct MaybeGz {
    state: State,
    /// Restart points kept while a gzip file is inflated ([`MaybeGz::keeping_restart_points`]).
    restart: Option<RestartIndex>,
}

enum State {
    /// No byte seen yet, or only a first `1f` (kept here) that may start the gzip magic.
    Sniffing {
        first: Option<u8>,
    },
    Plain,
    Gzip {
        /// Boxed: the decoder holds its CRC state (32 KiB in wasm) inline.
        decoder: Box<GzDecoder>,
        out: Vec<u8>,
    },
}

impl Default for MaybeGz {
    fn default() -> Self {
        MaybeGz::new()
    }
}

impl MaybeGz {
    /// A file whose first byte is still to come: its first two bytes say plain or gzip.
    pub fn new() -> MaybeGz {
        MaybeGz {
            state: State::Sniffing { first: None },
            restart: None,
        }
    }

    /// [`new`](Self::new), keeping restart points in `index` if the file is gzip (its inflater
    /// then stops at every deflate block's end, which costs little): for a later read of parts
    /// of the decoded file from the points before them ([`take_restart_index`](Self::take_restart_index)).
    pub fn keeping_restart_points(index: RestartIndex) -> MaybeGz {
        MaybeGz {
            state: State::Sniffing { first: None },
            restart: Some(index),
        }
    }

    /// The restart points kept so far (none for a plain file, or without
    /// [`keeping_restart_points`](Self::keeping_restart_points)); the file's later bytes keep none.
    pub fn take_restart_index(&mut self) -> Option<RestartIndex> {
        match self.state {
            State::Gzip { .. } => self.restart.take(),
            _ => None,
        }
    }

    /// Bytes known to be plain (decoded already, or a range of a plain file): no detection.
    pub fn plain() -> MaybeGz {
        MaybeGz {
            state: State::Plain,
            restart: None,
        }
    }

    /// Whether no byte has come yet (a lone first `1f` held back counts as one).
    pub fn is_empty(&self) -> bool {
        matches!(self.state, State::Sniffing { first: None })
    }

    /// Whether the file is gzip; `None` until its first bytes tell.
    pub fn is_gzip(&self) -> Option<bool> {
        match self.state {
            State::Sniffing { .. } => None,
            State::Plain => Some(false),
            State::Gzip { .. } => Some(true),
        }
    }

    /// The gzip decoder, for a gzip file: how its stream ended ([`GzDecoder::finish`],
    /// [`GzDecoder::trailing_garbage_at`]).
    pub fn decoder(&self) -> Option<&GzDecoder> {
        match &self.state {
            State::Gzip { decoder, .. } => Some(decoder),
            _ => None,
        }
    }

    /// Takes the next chunk of the file and gives its decoded bytes to `out`, with whether the
    /// file is gzip.
    ///
    /// # Errors
    /// Corrupt gzip data (offsets in the compressed file), or what `out` returns.
    #[inline]
    pub fn write<E: From<GzError>>(
        &mut self,
        chunk: &[u8],
        mut out: impl FnMut(&[u8], bool) -> Result<(), E>,
    ) -> Result<(), E> {
        if let State::Sniffing { first } = &mut self.state {
            let Some(&b) = chunk.first() else {
                return Ok(());
            };
            match *first {
                None if b == MAGIC_0 && chunk.len() == 1 => {
                    *first = Some(b);
                    return Ok(());
                }
                None => {
                    let magic = [b, chunk.get(1).copied().unwrap_or(0)];
                    self.state = State::for_magic(&magic, self.restart.is_some());
                }
                Some(f) => {
                    self.state = State::for_magic(&[f, b], self.restart.is_some());
                    // The held-back first byte goes first.
                    self.feed(&[f], &mut out)?;
                }
            }
        }
        self.feed(chunk, &mut out)
    }

    #[inline]
    fn feed<E: From<GzError>>(
        &mut self,
        mut input: &[u8],
        out: &mut impl FnMut(&[u8], bool) -> Result<(), E>,
    ) -> Result<(), E> {
        match &mut self.state {
            State::Sniffing { .. } => unreachable!("the layer is known before feeding"),
            State::Plain => out(input, false),
            State::Gzip { decoder, out: buf } => loop {
                let (status, nin, nout) = decoder.decode_with(input, buf, &mut self.restart)?;
                out(&buf[..nout], true)?;
                input = &input[nin..];
                if status != GzStatus::OutputFull {
                    return Ok(());
                }
            },
        }
    }

    /// The end of the file's bytes: a lone first byte held back is plain content, given to
    /// `out` now. How a gzip stream ended is then [`decoder`](Self::decoder)'s to say.
    ///
    /// # Errors
    /// What `out` returns.
    pub fn end<E>(&mut self, mut out: impl FnMut(&[u8], bool) -> Result<(), E>) -> Result<(), E> {
        if let State::Sniffing { first: Some(f) } = self.state {
            self.state = State::Plain;
            return out(&[f], false);
        }
        Ok(())
    }
}

impl State {
    fn for_magic(magic: &[u8; 2], restart_points: bool) -> State {
        if is_gzip(magic) {
            let decoder = if restart_points {
                GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks())
            } else {
                GzDecoder::new()
            };
            State::Gzip {
                decoder: Box::new(decoder),
                out: vec![0; OUT_BYTES],
            }
        } else {
            State::Plain
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::string::ToString;

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn run(chunks: &[&[u8]]) -> Result<(Vec<u8>, Option<bool>), GzError> {
        let mut m = MaybeGz::new();
        let mut got = Vec::new();
        let mut flags = Vec::new();
        for c in chunks {
            m.write(c, |b, gz| {
                got.extend_from_slice(b);
                flags.push(gz);
                Ok::<(), GzError>(())
            })?;
        }
        m.end(|b, gz| {
            got.extend_from_slice(b);
            flags.push(gz);
            Ok::<(), GzError>(())
        })?;
        if let Some(d) = m.decoder() {
            d.finish()?;
        }
        let gz = m.is_gzip();
        assert!(flags.iter().all(|&f| Some(f) == gz), "{flags:?} {gz:?}");
        Ok((got, gz))
    }

    #[test]
    fn plain_and_gzip_in_any_split_give_the_same_bytes() {
        let data = b"\x1f{\"traceEvents\": []}\n";
        let gz = gzip(data);
        for_each_split(data, 4, 3, |chunks| {
            assert_eq!(run(chunks), Ok((data.to_vec(), Some(false))));
        });
        for_each_split(&gz, 4, 3, |chunks| {
            assert_eq!(run(chunks), Ok((data.to_vec(), Some(true))));
        });
    }

    #[test]
    fn a_lone_first_byte_is_content() {
        assert_eq!(run(&[b"\x1f"]), Ok((b"\x1f".to_vec(), Some(false))));
        assert_eq!(run(&[b"\x1f", b"x"]), Ok((b"\x1fx".to_vec(), Some(false))));
        assert_eq!(run(&[b"x"]), Ok((b"x".to_vec(), Some(false))));
        assert_eq!(run(&[]), Ok((Vec::new(), None)));
        let mut m = MaybeGz::new();
        assert!(m.is_empty());
        m.write(b"\x1f", |_, _| Ok::<(), GzError>(())).unwrap();
        assert!(!m.is_empty());
        assert_eq!(m.is_gzip(), None);
    }

    #[test]
    fn corrupt_and_cut_gzip_name_the_offset() {
        let gz = gzip(&[b' '; 1000]);
        let cut = &gz[..gz.len() - 3];
        assert_eq!(
            run(&[cut]),
            Err(GzError::Truncated {
                offset: cut.len() as u64
            })
        );
        let e = run(&[b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff"]).unwrap_err();
        assert!(
            e.to_string().starts_with("corrupt deflate data at byte "),
            "{e}"
        );
    }
}
