//! Push-style gzip (RFC 1952) decoder over miniz_oxide's `inflate::core`.
//!
//! The caller owns every buffer: [`GzDecoder::decode`] takes a chunk of compressed input and an
//! output slice, and returns what happened plus the bytes consumed and written. The header is
//! parsed by a resumable state machine (one state per header part, in the manner of flate2), so a
//! header may be split across any chunks. FEXTRA, FNAME and FCOMMENT are skipped, not stored;
//! FHCRC is checked. Each member's CRC32 and ISIZE are checked. Multi-member files (`cat a.gz
//! b.gz`) decode to the concatenation of their members.
//!
//! Trailing zero bytes after the last complete member are tolerated (as `gzip -d` does: tape and
//! block devices pad files with zeros). Other bytes after a complete member that do not start with
//! the gzip magic are trailing garbage: as `gzip -d` does, the data decoded so far is kept, the
//! rest is ignored, and [`GzDecoder::trailing_garbage_at`] gives its offset for a warning. Bad magic
//! at the very start is an error.
//!
//! Memory: the inflate state, its 32 KiB history and its output area live inside the decoder
//! (allocated once at construction under the `alloc` feature, inline without it; see
//! [`MinizInflate`]). Decoding never allocates.
//!
//! ```
//! use flinch_core::gzip::{GzDecoder, GzStatus};
//! # let gz: &[u8] = &[
//! #     0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0, 0x86, 0xa6, 0x10,
//! #     0x36, 5, 0, 0, 0,
//! # ];
//! let mut dec = GzDecoder::new();
//! let mut out = [0u8; 4096];
//! let mut text = Vec::new();
//! for chunk in gz.chunks(7) {
//!     let mut input = chunk;
//!     loop {
//!         let (status, nin, nout) = dec.decode(input, &mut out)?;
//!         text.extend_from_slice(&out[..nout]);
//!         input = &input[nin..];
//!         if status != GzStatus::OutputFull {
//!             break; // input used up: feed the next chunk
//!         }
//!     }
//! }
//! dec.finish()?; // end of input: Ok only between complete members
//! assert_eq!(text, b"hello");
//! # Ok::<(), flinch_core::gzip::GzError>(())
//! ```

use core::fmt;

mod crc32;
use crc32::Crc32;

mod restart;
#[cfg(feature = "alloc")]
pub use restart::RestartIndex;
pub use restart::{NoRestartPoints, RestartPoint, RestartSink};

#[cfg(feature = "alloc")]
mod sniff;
#[cfg(feature = "alloc")]
pub use sniff::MaybeGz;

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{
    BlockBoundaryState, DecompressorOxide, decompress, inflate_flags,
};

const MAGIC_0: u8 = 0x1f;
const MAGIC_1: u8 = 0x8b;
const METHOD_DEFLATE: u8 = 8;
const FLAG_HCRC: u8 = 0x02;
const FLAG_EXTRA: u8 = 0x04;
const FLAG_NAME: u8 = 0x08;
const FLAG_COMMENT: u8 = 0x10;
const FLAG_RESERVED: u8 = 0xe0;

/// Whether `prefix` (the first bytes of a file) starts with the gzip magic `1f 8b`.
/// Detects gzip by content, never by file name.
pub fn is_gzip(prefix: &[u8]) -> bool {
    prefix.len() >= 2 && prefix[0] == MAGIC_0 && prefix[1] == MAGIC_1
}

/// What a call to [`GzDecoder::decode`] ended on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GzStatus {
    /// All of `input` was consumed in the middle of a member: feed more input. If the data has
    /// ended, [`GzDecoder::finish`] reports the truncation.
    NeedsInput,
    /// `output` is full. Call again with the unconsumed rest of the input (`&input[nin..]`,
    /// possibly empty) and fresh output space: decoded bytes may be pending inside the decoder.
    OutputFull,
    /// All of `input` was consumed and the decoder stands between complete members (or in
    /// trailing zero padding): the data may end here ([`GzDecoder::finish`] returns `Ok`), or
    /// another member may follow.
    Done,
}

/// A gzip decoding error. Every variant carries the absolute byte offset in the compressed
/// stream. Once a decoder has returned an error it returns the same error forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GzError {
    /// A member start does not begin with `1f 8b`, or a non-zero byte follows trailing padding.
    BadMagic {
        /// Offset of the offending byte.
        offset: u64,
    },
    /// The compression method is not deflate (8).
    UnsupportedMethod {
        /// Offset of the method byte.
        offset: u64,
    },
    /// Reserved flag bits are set in the header.
    ReservedFlags {
        /// Offset of the flag byte.
        offset: u64,
    },
    /// The FHCRC header checksum does not match the header.
    HeaderCrcMismatch {
        /// Offset just past the header checksum.
        offset: u64,
    },
    /// The deflate data is invalid.
    CorruptDeflate {
        /// Offset where the inflater stopped.
        offset: u64,
    },
    /// The CRC32 in a member's trailer does not match the decoded bytes.
    CrcMismatch {
        /// Offset just past the member's trailer.
        offset: u64,
    },
    /// The ISIZE in a member's trailer does not match the decoded length (mod 2^32).
    SizeMismatch {
        /// Offset just past the member's trailer.
        offset: u64,
    },
    /// The input ended inside a member (or before any member).
    Truncated {
        /// Offset where the input ended.
        offset: u64,
    },
}

impl GzError {
    /// The absolute byte offset in the compressed input that the error names.
    pub fn offset(&self) -> u64 {
        match *self {
            GzError::BadMagic { offset }
            | GzError::UnsupportedMethod { offset }
            | GzError::ReservedFlags { offset }
            | GzError::HeaderCrcMismatch { offset }
            | GzError::CorruptDeflate { offset }
            | GzError::CrcMismatch { offset }
            | GzError::SizeMismatch { offset }
            | GzError::Truncated { offset } => offset,
        }
    }

    /// Whether the error is a cut-off stream (as opposed to corrupt data). A caller that keeps
    /// what was decoded so far treats this as truncation, not failure.
    pub fn is_truncated(&self) -> bool {
        matches!(self, GzError::Truncated { .. })
    }
}

impl fmt::Display for GzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GzError::BadMagic { offset } => write!(f, "bad gzip magic at byte {offset}"),
            GzError::UnsupportedMethod { offset } => {
                write!(f, "unsupported gzip compression method at byte {offset}")
            }
            GzError::ReservedFlags { offset } => {
                write!(f, "reserved gzip header flags set at byte {offset}")
            }
            GzError::HeaderCrcMismatch { offset } => {
                write!(f, "gzip header crc16 mismatch at byte {offset}")
            }
            GzError::CorruptDeflate { offset } => {
                write!(f, "corrupt deflate data at byte {offset}")
            }
            GzError::CrcMismatch { offset } => {
                write!(f, "crc32 mismatch in gzip member ending at byte {offset}")
            }
            GzError::SizeMismatch { offset } => {
                write!(f, "isize mismatch in gzip member ending at byte {offset}")
            }
            GzError::Truncated { offset } => write!(f, "truncated gzip member at byte {offset}"),
        }
    }
}

impl core::error::Error for GzError {}

/// Where the decoder stands in the stream: one state per part of a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Collecting the 10-byte fixed header (`got` bytes so far, in `buf`).
    Fixed { got: u8 },
    /// Collecting the 2-byte FEXTRA length.
    ExtraLen { got: u8 },
    /// Skipping `left` bytes of FEXTRA.
    Extra { left: u16 },
    /// Skipping the zero-terminated FNAME.
    Name,
    /// Skipping the zero-terminated FCOMMENT.
    Comment,
    /// Collecting the 2-byte FHCRC.
    HeaderCrc { got: u8 },
    /// Inflating.
    Deflate,
    /// Collecting the 8-byte trailer (CRC32, ISIZE).
    Trailer { got: u8 },
    /// Between complete members: another member or zero padding may follow.
    Between,
    /// Inside trailing zero padding after the last member.
    Padding,
    /// Ignoring trailing garbage after the last member.
    Garbage,
}

/// A raw-deflate (RFC 1951) inflater that [`GzDecoder`] runs its gzip framing over. The core
/// provides [`MinizInflate`] (miniz_oxide, no allocation); a native adapter may plug in a faster
/// one (e.g. zlib-rs) and keep the same framing, checks and error offsets.
pub trait RawInflate {
    /// Inflates from `input` into `output`. Returns whether the deflate stream ended (its final
    /// block is complete: `nin` then stops exactly at the stream's last byte), the bytes of
    /// `input` consumed (`nin`) and the bytes of `output` written (`nout`).
    ///
    /// Unless the stream ended, it returns once `input` is used up or `output` is full; it may
    /// return earlier but must then have made progress (`nin > 0` or `nout > 0`). With `input`
    /// used up and room left in `output`, every byte decodable so far must have been written.
    ///
    /// # Errors
    /// [`InflateError`] when the deflate data is invalid.
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), InflateError>;

    /// Forgets the current stream: the next call starts a new deflate stream.
    fn reset(&mut self);

    /// After the last [`inflate`](RawInflate::inflate) call: `Some(unread_bits)` when the
    /// inflater stands at a deflate block boundary (the end-of-block code of a block that was not
    /// the stream's last was just decoded), where `unread_bits` counts the bits at the end of the
    /// consumed input that it holds but has not used. `None` elsewhere, and always for an
    /// inflater that does not give restart points (the default).
    fn block_boundary(&self) -> Option<u32> {
        None
    }

    /// Whether the next [`inflate`](RawInflate::inflate) call may run past block ends without
    /// stopping (`false`) because no restart point is wanted before its output could end. For
    /// an inflater that stops at blocks, stopping costs a return and a window update per block;
    /// the framing asks this before each call, and an inflater may ignore it (the default).
    fn points_wanted(&mut self, wanted: bool) {
        let _ = wanted;
    }

    /// The current stream's last output, up to 32 KiB and oldest first, copied into `out` (of
    /// 32 KiB): what a match may reach back into. Returns its length (0 by default).
    fn history(&mut self, out: &mut [u8]) -> usize {
        let _ = out;
        0
    }

    /// Starts inside a deflate stream at a block boundary, as if it had just decoded `history`
    /// (the stream's last output, up to 32 KiB): the next block begins with the `bits` (0..=7)
    /// high bits of `byte`, then the next input byte. Returns false when this inflater cannot
    /// (the default).
    fn restart(&mut self, bits: u8, byte: u8, history: &[u8]) -> bool {
        let _ = (bits, byte, history);
        false
    }
}

/// Invalid deflate data, found after consuming `nin` bytes of the failing call's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InflateError {
    /// Input bytes consumed by the failing call before the error was found.
    pub nin: usize,
}

/// Deflate's history: a match reaches at most 32 KiB back.
const HISTORY_BYTES: usize = 32 * 1024;

/// Bytes of the inflater's output area (after the history) when built by [`MinizInflate::new`]:
/// 256 KiB under `alloc`, where the buffer is on the heap; 32 KiB without it, where the whole
/// state is inline.
#[cfg(feature = "alloc")]
pub const DEFAULT_OUTPUT_AREA_BYTES: usize = 256 * 1024;
/// Bytes of the inflater's output area (after the history) when built by [`MinizInflate::new`]:
/// 256 KiB under `alloc`, where the buffer is on the heap; 32 KiB without it, where the whole
/// state is inline.
#[cfg(not(feature = "alloc"))]
pub const DEFAULT_OUTPUT_AREA_BYTES: usize = 32 * 1024;

/// Free space below which the inflater slides its history to the front of its buffer before
/// decoding on: miniz_oxide's fast loop needs 259 bytes of room, so a nearly full buffer would
/// otherwise go through its byte-at-a-time path.
const SLIDE_BELOW_BYTES: usize = 4096;

#[cfg(feature = "alloc")]
type DecompStore = alloc::boxed::Box<DecompressorOxide>;
#[cfg(not(feature = "alloc"))]
type DecompStore = DecompressorOxide;

#[cfg(feature = "alloc")]
fn set_decomp(store: &mut DecompStore, d: DecompressorOxide) {
    **store = d;
}
#[cfg(not(feature = "alloc"))]
fn set_decomp(store: &mut DecompStore, d: DecompressorOxide) {
    *store = d;
}

#[cfg(feature = "alloc")]
type BufStore = alloc::boxed::Box<[u8]>;
#[cfg(not(feature = "alloc"))]
type BufStore = [u8; HISTORY_BYTES + DEFAULT_OUTPUT_AREA_BYTES];

/// The core's [`RawInflate`]: miniz_oxide's `inflate::core` decoding into one flat
/// (non-wrapping) buffer of 32 KiB history plus an output area. miniz_oxide then takes its
/// straight match-copy path and decodes up to a whole output area per call; when the area is
/// (nearly) full, the last 32 KiB slide to the front. The buffer and the inflate state are
/// allocated once at construction under `alloc` (inline without it: about 75 KiB); inflating
/// never allocates.
pub struct MinizInflate {
    decomp: DecompStore,
    buf: BufStore,
    /// End of the decoded bytes in `buf` (the next write position).
    pos: usize,
    /// Decoded bytes `buf[pending_start..pos]` not yet copied out.
    pending_start: usize,
    /// The stream's final block has been decoded (pending bytes may remain).
    ended: bool,
    /// Stop at every deflate block's end ([`RawInflate::block_boundary`] then reports it).
    stop_at_blocks: bool,
    /// The last `decompress` call stopped at a block's end (its output may still be pending).
    at_boundary: bool,
}

impl Default for MinizInflate {
    fn default() -> Self {
        MinizInflate::new()
    }
}

impl MinizInflate {
    /// A fresh inflater with a [`DEFAULT_OUTPUT_AREA_BYTES`] output area.
    pub fn new() -> MinizInflate {
        #[cfg(feature = "alloc")]
        {
            MinizInflate::with_output_area(DEFAULT_OUTPUT_AREA_BYTES)
        }
        #[cfg(not(feature = "alloc"))]
        {
            MinizInflate::from_parts(
                DecompressorOxide::new(),
                [0; HISTORY_BYTES + DEFAULT_OUTPUT_AREA_BYTES],
            )
        }
    }

    /// A fresh inflater whose output area holds `area_bytes` (at least 1) after the 32 KiB
    /// history: larger areas mean fewer calls into miniz_oxide and fewer history slides.
    #[cfg(feature = "alloc")]
    pub fn with_output_area(area_bytes: usize) -> MinizInflate {
        let buf = alloc::vec![0u8; HISTORY_BYTES + area_bytes.max(1)].into_boxed_slice();
        MinizInflate::from_parts(alloc::boxed::Box::default(), buf)
    }

    fn from_parts(decomp: DecompStore, buf: BufStore) -> MinizInflate {
        MinizInflate {
            decomp,
            buf,
            pos: 0,
            pending_start: 0,
            ended: false,
            stop_at_blocks: false,
            at_boundary: false,
        }
    }

    /// The same inflater, stopping at the end of every deflate block so that
    /// [`RawInflate::block_boundary`] reports it (for restart points). A call then returns at
    /// each block's end (blocks are usually 50-300 KB of output), which costs little.
    pub fn stopping_at_blocks(mut self) -> MinizInflate {
        self.stop_at_blocks = true;
        self
    }

    /// Copies pending decoded bytes to `output[*nout..]`.
    fn flush_pending(&mut self, output: &mut [u8], nout: &mut usize) {
        let n = (self.pos - self.pending_start).min(output.len() - *nout);
        output[*nout..*nout + n]
            .copy_from_slice(&self.buf[self.pending_start..self.pending_start + n]);
        *nout += n;
        self.pending_start += n;
    }

    /// With nothing pending: when the free space is short, moves the last 32 KiB of history to
    /// the front so that decoding continues right after it.
    fn make_room(&mut self) {
        if self.pos > HISTORY_BYTES && self.buf.len() - self.pos < SLIDE_BELOW_BYTES {
            self.buf.copy_within(self.pos - HISTORY_BYTES..self.pos, 0);
            self.pos = HISTORY_BYTES;
            self.pending_start = HISTORY_BYTES;
        }
    }
}

impl RawInflate for MinizInflate {
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), InflateError> {
        let mut nin = 0;
        let mut nout = 0;
        let mut flags = inflate_flags::TINFL_FLAG_HAS_MORE_INPUT
            | inflate_flags::TINFL_FLAG_IGNORE_ADLER32
            | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
        if self.stop_at_blocks {
            flags |= inflate_flags::TINFL_FLAG_STOP_ON_BLOCK_BOUNDARY;
        }
        loop {
            self.flush_pending(output, &mut nout);
            if self.pending_start < self.pos {
                return Ok((false, nin, nout));
            }
            if self.ended {
                return Ok((true, nin, nout));
            }
            if self.at_boundary {
                if nin > 0 || nout > 0 {
                    // All output before the boundary is out: the framing may take a point here.
                    return Ok((false, nin, nout));
                }
                // Called again at the boundary it returned at (or one reached without
                // progress, which is skipped): decode on.
                self.at_boundary = false;
            }
            if nout == output.len() {
                return Ok((false, nin, nout));
            }
            self.make_room();
            let (status, in_n, out_n) = decompress(
                &mut self.decomp,
                &input[nin..],
                &mut self.buf,
                self.pos,
                flags,
            );
            nin += in_n;
            self.pos += out_n;
            match status {
                TINFLStatus::Done => self.ended = true,
                TINFLStatus::BlockBoundary => self.at_boundary = true,
                TINFLStatus::HasMoreOutput => {}
                TINFLStatus::NeedsMoreInput => {
                    if nin == input.len() {
                        // Input used up: copy out what was decoded and ask for more.
                        self.flush_pending(output, &mut nout);
                        return Ok((false, nin, nout));
                    }
                    if in_n == 0 && out_n == 0 {
                        // No progress with input left: cannot happen for valid data.
                        return Err(InflateError { nin });
                    }
                }
                _ => return Err(InflateError { nin }),
            }
        }
    }

    fn reset(&mut self) {
        self.decomp.init();
        self.pos = 0;
        self.pending_start = 0;
        self.ended = false;
        self.at_boundary = false;
    }

    fn block_boundary(&self) -> Option<u32> {
        if !self.at_boundary || self.pending_start < self.pos {
            return None;
        }
        // miniz_oxide gives back the whole bytes it read ahead: fewer than 8 bits remain.
        let state = self.decomp.block_boundary_state()?;
        Some(u32::from(state.num_bits))
    }

    fn history(&mut self, out: &mut [u8]) -> usize {
        let n = self.pos.min(HISTORY_BYTES).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.pos - n..self.pos]);
        n
    }

    fn restart(&mut self, bits: u8, byte: u8, history: &[u8]) -> bool {
        if bits > 7 || history.len() > HISTORY_BYTES {
            return false;
        }
        let state = BlockBoundaryState {
            num_bits: bits,
            bit_buf: if bits == 0 { 0 } else { byte >> (8 - bits) },
            ..BlockBoundaryState::default()
        };
        set_decomp(
            &mut self.decomp,
            DecompressorOxide::from_block_boundary_state(&state),
        );
        // The history sits right before the output position, as if just decoded.
        self.buf[..history.len()].copy_from_slice(history);
        self.pos = history.len();
        self.pending_start = self.pos;
        self.ended = false;
        self.at_boundary = false;
        true
    }
}

/// A push-style gzip decoder over a [`RawInflate`] (by default the core's [`MinizInflate`]).
/// See the [module docs](self) for the streaming loop.
pub struct GzDecoder<I: RawInflate = MinizInflate> {
    inflater: I,
    state: State,
    /// Header flags of the current member.
    flags: u8,
    /// Fixed-header and trailer bytes collected so far.
    buf: [u8; 10],
    /// CRC32 of the current member's header bytes (for FHCRC).
    header_crc: u32,
    /// CRC32 of the current member's decoded bytes.
    data_crc: Crc32,
    /// Decoded length of the current member, mod 2^32.
    member_len: u32,
    total_in: u64,
    total_out: u64,
    members: u64,
    failed: Option<GzError>,
    /// Offset where the current (or next) member's header starts.
    member_start: u64,
    /// Offset of trailing garbage after the last member, once seen.
    garbage_at: Option<u64>,
    /// The current member was entered at a restart point: its CRC32 covers only part of it and
    /// is not checked (its ISIZE still is).
    resumed: bool,
}

impl Default for GzDecoder {
    fn default() -> Self {
        GzDecoder::new()
    }
}

impl<I: RawInflate> fmt::Debug for GzDecoder<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GzDecoder")
            .field("state", &self.state)
            .field("total_in", &self.total_in)
            .field("total_out", &self.total_out)
            .field("members", &self.members)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl GzDecoder {
    /// A decoder over the core's [`MinizInflate`], expecting the first byte of a gzip stream.
    /// Allocates its ~300 KiB state once under the `alloc` feature; without it the state is
    /// inline, about 75 KiB (keep the decoder off small stacks).
    pub fn new() -> GzDecoder {
        GzDecoder::with_inflater(MinizInflate::new())
    }
}

impl<I: RawInflate> GzDecoder<I> {
    /// A decoder over the given raw inflater (which must be fresh or reset).
    pub fn with_inflater(inflater: I) -> GzDecoder<I> {
        GzDecoder {
            inflater,
            state: State::Fixed { got: 0 },
            flags: 0,
            buf: [0; 10],
            header_crc: 0,
            data_crc: Crc32::new(),
            member_len: 0,
            total_in: 0,
            total_out: 0,
            members: 0,
            failed: None,
            member_start: 0,
            garbage_at: None,
            resumed: false,
        }
    }

    /// A decoder entered inside a member at a restart point that [`GzDecoder::decode_with`]
    /// gave: `inflater` is restarted with the point's history and, when the point falls inside
    /// a byte, that byte's unread bits (`partial_byte`: the compressed byte at
    /// `point.in_offset - 1`; ignored when `point.bits` is 0). Feed it the compressed input from
    /// `point.in_offset` on; it decodes from `point.out_offset` on, with offsets (in errors too)
    /// as if it had decoded from the start. That member's ISIZE is checked, its CRC32 is not
    /// (the bytes before the point are not seen); every later member is checked in full.
    /// `None` when the inflater cannot restart.
    pub fn resume(
        mut inflater: I,
        point: &RestartPoint,
        partial_byte: u8,
        history: &[u8],
    ) -> Option<GzDecoder<I>> {
        if point.bits > 7 || !inflater.restart(point.bits, partial_byte, history) {
            return None;
        }
        let mut dec = GzDecoder::with_inflater(inflater);
        dec.state = State::Deflate;
        dec.member_len = point.member_len;
        dec.total_in = point.in_offset;
        dec.total_out = point.out_offset;
        dec.members = point.members;
        dec.resumed = true;
        Some(dec)
    }

    /// The offset of trailing garbage after the last complete member, if any was met: bytes
    /// that do not start a gzip member. They are ignored (the decoder reports
    /// [`GzStatus::Done`] and takes all further input), as `gzip -d` ignores them with a
    /// warning.
    pub fn trailing_garbage_at(&self) -> Option<u64> {
        self.garbage_at
    }

    /// From here on, input is trailing garbage.
    fn start_garbage(&mut self, offset: u64, input: &[u8], nin: &mut usize) -> GzStatus {
        self.garbage_at = Some(offset);
        self.state = State::Garbage;
        self.total_in += (input.len() - *nin) as u64;
        *nin = input.len();
        GzStatus::Done
    }

    /// Compressed bytes consumed so far.
    pub fn total_in(&self) -> u64 {
        self.total_in
    }

    /// Decoded bytes written to callers' output so far (after an error, this includes bytes the
    /// failing call wrote but could not report).
    pub fn total_out(&self) -> u64 {
        self.total_out
    }

    /// Members completed and verified (CRC32 and ISIZE) so far.
    pub fn members(&self) -> u64 {
        self.members
    }

    /// Decodes from `input` into `output`. Returns the status, the bytes of `input` consumed
    /// (`nin`) and the bytes of `output` written (`nout`).
    ///
    /// Returns with [`GzStatus::OutputFull`] when `output` is full, else once all of `input` is
    /// consumed ([`GzStatus::NeedsInput`] inside a member, [`GzStatus::Done`] between members).
    /// An empty `input` only flushes decoded bytes still pending inside the decoder.
    ///
    /// # Errors
    /// A [`GzError`] naming the byte offset for bad magic, unsupported method or flags, a header
    /// checksum mismatch, corrupt deflate data, or a CRC32/ISIZE mismatch. Bytes written to
    /// `output` by earlier calls are valid decoded data up to the failing member's trailer (which
    /// is what failed to verify). After an error every call returns the same error.
    pub fn decode(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(GzStatus, usize, usize), GzError> {
        self.decode_with(input, output, &mut NoRestartPoints)
    }

    /// [`decode`](GzDecoder::decode), offering `sink` a [`RestartPoint`] at each deflate block
    /// boundary the inflater reports ([`RawInflate::block_boundary`]) where the sink
    /// [wants](RestartSink::wants) one.
    ///
    /// # Errors
    /// As [`decode`](GzDecoder::decode).
    pub fn decode_with<S: RestartSink>(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        sink: &mut S,
    ) -> Result<(GzStatus, usize, usize), GzError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut nin = 0usize;
        let mut nout = 0usize;
        let result = self.decode_inner(input, output, &mut nin, &mut nout, sink);
        match result {
            Ok(status) => Ok((status, nin, nout)),
            Err(e) => {
                self.failed = Some(e);
                Err(e)
            }
        }
    }

    /// Checks that the data may end here: `Ok` only between complete members (or in trailing
    /// zero padding after at least one member).
    ///
    /// # Errors
    /// [`GzError::Truncated`] at the end offset when the input ended inside a member or before
    /// any member; the earlier error when the decoder has failed.
    pub fn finish(&self) -> Result<(), GzError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.state {
            State::Between | State::Padding | State::Garbage if self.members > 0 => Ok(()),
            _ => Err(GzError::Truncated {
                offset: self.total_in,
            }),
        }
    }

    /// Consumes one byte of header from `input[*nin]` (the caller checked it exists).
    fn take_header_byte(&mut self, input: &[u8], nin: &mut usize) -> u8 {
        let b = input[*nin];
        self.header_crc = crc32::update_braided(self.header_crc, &[b]);
        *nin += 1;
        self.total_in += 1;
        b
    }

    /// Consumes header bytes up to and including a zero byte. Returns true when the zero was found.
    fn skip_zero_terminated(&mut self, input: &[u8], nin: &mut usize) -> bool {
        let rest = &input[*nin..];
        let (n, found) = match memchr::memchr(0, rest) {
            Some(i) => (i + 1, true),
            None => (rest.len(), false),
        };
        self.header_crc = crc32::update_braided(self.header_crc, &rest[..n]);
        *nin += n;
        self.total_in += n as u64;
        found
    }

    /// The state after the fixed header or an optional part, given the flags not yet handled.
    fn next_header_state(&self, after: State) -> State {
        let order = [
            (FLAG_EXTRA, State::ExtraLen { got: 0 }),
            (FLAG_NAME, State::Name),
            (FLAG_COMMENT, State::Comment),
            (FLAG_HCRC, State::HeaderCrc { got: 0 }),
        ];
        let start = match after {
            State::Fixed { .. } => 0,
            State::Extra { .. } | State::ExtraLen { .. } => 1,
            State::Name => 2,
            State::Comment => 3,
            _ => 4,
        };
        for (flag, state) in order.iter().skip(start) {
            if self.flags & flag != 0 {
                return *state;
            }
        }
        State::Deflate
    }

    fn start_deflate(&mut self) {
        self.inflater.reset();
        self.resumed = false;
        self.data_crc.reset();
        self.member_len = 0;
        self.state = State::Deflate;
    }

    /// Offers `sink` a restart point where the inflater stands at a block boundary.
    fn offer_point<S: RestartSink>(&mut self, sink: &mut S) {
        let Some(unread) = self.inflater.block_boundary() else {
            return;
        };
        if !sink.wants(self.total_out) {
            return;
        }
        // The next bit to read, counted from the start of the compressed stream.
        let Some(bit) = (self.total_in * 8).checked_sub(u64::from(unread)) else {
            return;
        };
        let point = RestartPoint {
            in_offset: bit.div_ceil(8),
            bits: ((8 - bit % 8) % 8) as u8,
            out_offset: self.total_out,
            member_len: self.member_len,
            members: self.members,
        };
        sink.add(&point, &mut self.inflater);
    }

    fn decode_inner<S: RestartSink>(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        nin: &mut usize,
        nout: &mut usize,
        sink: &mut S,
    ) -> Result<GzStatus, GzError> {
        loop {
            let at_end = *nin == input.len();
            match self.state {
                State::Between => {
                    if at_end {
                        return Ok(GzStatus::Done);
                    }
                    self.member_start = self.total_in;
                    if input[*nin] == 0 {
                        self.state = State::Padding;
                    } else {
                        self.header_crc = 0;
                        self.state = State::Fixed { got: 0 };
                    }
                }
                State::Padding => {
                    let rest = &input[*nin..];
                    let zeros = rest.iter().take_while(|&&b| b == 0).count();
                    *nin += zeros;
                    self.total_in += zeros as u64;
                    if *nin < input.len() {
                        // Garbage after zeros: all of it, zeros included, is garbage.
                        return Ok(self.start_garbage(self.member_start, input, nin));
                    }
                    return Ok(GzStatus::Done);
                }
                State::Garbage => {
                    return Ok(self.start_garbage(self.garbage_at.unwrap_or(0), input, nin));
                }
                State::Fixed { got } => {
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    let offset = self.total_in;
                    let b = self.take_header_byte(input, nin);
                    match got {
                        0 | 1 if b != [MAGIC_0, MAGIC_1][got as usize] && self.members > 0 => {
                            // Not a member after a complete one: trailing garbage from its start.
                            return Ok(self.start_garbage(self.member_start, input, nin));
                        }
                        0 if b != MAGIC_0 => return Err(GzError::BadMagic { offset }),
                        1 if b != MAGIC_1 => return Err(GzError::BadMagic { offset }),
                        2 if b != METHOD_DEFLATE => {
                            return Err(GzError::UnsupportedMethod { offset });
                        }
                        3 if b & FLAG_RESERVED != 0 => {
                            return Err(GzError::ReservedFlags { offset });
                        }
                        _ => {}
                    }
                    self.buf[got as usize] = b;
                    if got == 9 {
                        self.flags = self.buf[3];
                        self.state = self.next_header_state(State::Fixed { got });
                        if self.state == State::Deflate {
                            self.start_deflate();
                        }
                    } else {
                        self.state = State::Fixed { got: got + 1 };
                    }
                }
                State::ExtraLen { got } => {
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    let b = self.take_header_byte(input, nin);
                    self.buf[got as usize] = b;
                    self.state = if got == 1 {
                        State::Extra {
                            left: u16::from_le_bytes([self.buf[0], self.buf[1]]),
                        }
                    } else {
                        State::ExtraLen { got: 1 }
                    };
                }
                State::Extra { left } => {
                    if left == 0 {
                        self.state = self.next_header_state(State::Extra { left });
                        if self.state == State::Deflate {
                            self.start_deflate();
                        }
                        continue;
                    }
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    let n = (left as usize).min(input.len() - *nin);
                    self.header_crc =
                        crc32::update_braided(self.header_crc, &input[*nin..*nin + n]);
                    *nin += n;
                    self.total_in += n as u64;
                    self.state = State::Extra {
                        left: left - n as u16,
                    };
                }
                State::Name | State::Comment => {
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    if self.skip_zero_terminated(input, nin) {
                        self.state = self.next_header_state(self.state);
                        if self.state == State::Deflate {
                            self.start_deflate();
                        }
                    }
                }
                State::HeaderCrc { got } => {
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    let b = input[*nin];
                    *nin += 1;
                    self.total_in += 1;
                    self.buf[got as usize] = b;
                    if got == 1 {
                        let want = u16::from_le_bytes([self.buf[0], self.buf[1]]);
                        let have = self.header_crc as u16;
                        if want != have {
                            return Err(GzError::HeaderCrcMismatch {
                                offset: self.total_in,
                            });
                        }
                        self.start_deflate();
                    } else {
                        self.state = State::HeaderCrc { got: 1 };
                    }
                }
                State::Deflate => {
                    if *nout == output.len() {
                        return Ok(GzStatus::OutputFull);
                    }
                    // A point is wanted at the first block end at or past the sink's next offset:
                    // only a call whose output may reach that offset needs to stop at block ends.
                    let reach = self.total_out + (output.len() - *nout) as u64;
                    self.inflater.points_wanted(sink.wants(reach));
                    let (ended, in_n, out_n) = self
                        .inflater
                        .inflate(&input[*nin..], &mut output[*nout..])
                        .map_err(|e| GzError::CorruptDeflate {
                            offset: self.total_in + e.nin as u64,
                        })?;
                    if !self.resumed {
                        // A resumed member's CRC is not checked (see `resume`): not computed.
                        self.data_crc.update(&output[*nout..*nout + out_n]);
                    }
                    self.member_len = self.member_len.wrapping_add(out_n as u32);
                    self.total_out += out_n as u64;
                    *nout += out_n;
                    *nin += in_n;
                    self.total_in += in_n as u64;
                    if !ended {
                        self.offer_point(sink);
                    }
                    if ended {
                        self.state = State::Trailer { got: 0 };
                    } else if *nin == input.len() && *nout < output.len() {
                        return Ok(GzStatus::NeedsInput);
                    } else if in_n == 0 && out_n == 0 && *nout < output.len() {
                        // An inflater that makes no progress with input and room left.
                        return Err(GzError::CorruptDeflate {
                            offset: self.total_in,
                        });
                    }
                }
                State::Trailer { got } => {
                    if at_end {
                        return Ok(GzStatus::NeedsInput);
                    }
                    let n = (8 - got as usize).min(input.len() - *nin);
                    self.buf[got as usize..got as usize + n]
                        .copy_from_slice(&input[*nin..*nin + n]);
                    *nin += n;
                    self.total_in += n as u64;
                    let got = got + n as u8;
                    if got < 8 {
                        self.state = State::Trailer { got };
                        continue;
                    }
                    let want_crc =
                        u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    let want_len =
                        u32::from_le_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
                    let offset = self.total_in;
                    if !self.resumed && self.data_crc.value() != want_crc {
                        return Err(GzError::CrcMismatch { offset });
                    }
                    if self.member_len != want_len {
                        return Err(GzError::SizeMismatch { offset });
                    }
                    self.members += 1;
                    self.state = State::Between;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod resume_tests;
