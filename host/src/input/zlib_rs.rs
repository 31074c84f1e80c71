//! zlib-rs raw inflate behind the core gzip framing: what the inputs read `.gz` with (and what
//! `examples/inflate_bench.rs` and the `gzip_restart` fuzz target measure).
//!
//! It drives zlib-rs through its zlib C API (`libz-rs-sys`, a Rust crate: no C is linked)
//! rather than flate2, because restart points need what only that API gives: stopping at block
//! boundaries (`Z_BLOCK`, with the unread bit count in `data_type`), the window
//! (`inflateGetDictionary`), and entering a stream at a bit position with a given window
//! (`inflatePrime`, `inflateSetDictionary`). Without [`ZlibRsInflate::stopping_at_blocks`] it
//! inflates with `Z_NO_FLUSH`, as flate2 does.
use std::mem::MaybeUninit;

use flinch_core::gzip::{InflateError, RawInflate};
use libz_rs_sys as z;

/// zlib-rs raw inflate as the core gzip framing's [`RawInflate`].
pub struct ZlibRsInflate {
    /// Boxed: zlib's state points back at its stream, which must not move once initialized.
    strm: Box<z::z_stream>,
    /// Flush mode: `Z_BLOCK` when restart points are wanted, else `Z_NO_FLUSH`.
    flush: i32,
    /// Made to stop at blocks ([`ZlibRsInflate::stopping_at_blocks`]); it then does so only in
    /// the calls whose output may reach the next wanted point ([`RawInflate::points_wanted`]).
    blocks: bool,
}

// SAFETY: the stream and its state are owned by this value alone (nothing else holds their
// pointers between calls), so moving it to another thread is sound.
unsafe impl Send for ZlibRsInflate {}

impl ZlibRsInflate {
    /// A raw-deflate inflater (no zlib header, 32 KiB window).
    pub fn new() -> ZlibRsInflate {
        // zalloc/zfree unset: zlib-rs picks the Rust allocator (its `rust-allocator` feature).
        let mut strm: Box<MaybeUninit<z::z_stream>> = Box::new(MaybeUninit::zeroed());
        // SAFETY: an all-zero z_stream is the documented initial value (null pointers, no
        // allocator functions: the default ones are used); inflateInit2_ initializes it with
        // this library's own version string and struct size.
        let ret = unsafe {
            z::inflateInit2_(
                strm.as_mut_ptr(),
                -15,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as i32,
            )
        };
        assert_eq!(ret, z::Z_OK, "zlib-rs inflateInit2 failed (out of memory)");
        // SAFETY: initialized by inflateInit2_ above.
        let strm = unsafe { Box::from_raw(Box::into_raw(strm).cast::<z::z_stream>()) };
        ZlibRsInflate {
            strm,
            flush: z::Z_NO_FLUSH,
            blocks: false,
        }
    }

    /// The same inflater, returning at every deflate block boundary so that the framing can
    /// offer restart points ([`RawInflate::block_boundary`]).
    pub fn stopping_at_blocks(mut self) -> ZlibRsInflate {
        self.flush = z::Z_BLOCK;
        self.blocks = true;
        self
    }
}

impl Default for ZlibRsInflate {
    fn default() -> Self {
        ZlibRsInflate::new()
    }
}

impl Drop for ZlibRsInflate {
    fn drop(&mut self) {
        // SAFETY: the stream was initialized by inflateInit2_ and is ended once, here.
        unsafe {
            z::inflateEnd(&mut *self.strm);
        }
    }
}

impl RawInflate for ZlibRsInflate {
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), InflateError> {
        let s = &mut *self.strm;
        s.next_in = input.as_ptr();
        s.avail_in = input.len().min(u32::MAX as usize) as u32;
        s.next_out = output.as_mut_ptr();
        s.avail_out = output.len().min(u32::MAX as usize) as u32;
        let (avail_in, avail_out) = (s.avail_in, s.avail_out);
        // SAFETY: next_in/avail_in and next_out/avail_out describe the live slices `input` and
        // `output`, which outlive the call; the stream is initialized.
        let ret = unsafe { z::inflate(s, self.flush) };
        let nin = (avail_in - s.avail_in) as usize;
        let nout = (avail_out - s.avail_out) as usize;
        // No pointer into the caller's slices is kept past the call.
        s.next_in = std::ptr::null();
        s.next_out = std::ptr::null_mut();
        s.avail_in = 0;
        s.avail_out = 0;
        match ret {
            z::Z_STREAM_END => Ok((true, nin, nout)),
            // Z_BUF_ERROR: no progress possible (no input, or no room): not an error here.
            z::Z_OK | z::Z_BUF_ERROR => Ok((false, nin, nout)),
            _ => Err(InflateError { nin }),
        }
    }

    fn reset(&mut self) {
        // SAFETY: the stream is initialized.
        unsafe {
            z::inflateReset(&mut *self.strm);
        }
    }

    fn block_boundary(&self) -> Option<u32> {
        // data_type: the bits held and unused, +64 inside the last block, +128 right after a
        // block's end-of-block code (zlib's documented Z_BLOCK protocol).
        let d = self.strm.data_type;
        (d & 128 != 0 && d & 64 == 0).then_some((d & 63) as u32)
    }

    fn points_wanted(&mut self, wanted: bool) {
        // Returning at every block end costs a window update per block (about 2 % of the
        // inflate); between points no boundary is needed.
        self.flush = if wanted && self.blocks {
            z::Z_BLOCK
        } else {
            z::Z_NO_FLUSH
        };
    }

    fn history(&mut self, out: &mut [u8]) -> usize {
        if out.len() < 32 * 1024 {
            return 0;
        }
        let mut len: u32 = 0;
        // SAFETY: `out` has room for the largest dictionary zlib returns (32 KiB); the stream
        // is initialized.
        let ret = unsafe { z::inflateGetDictionary(&*self.strm, out.as_mut_ptr(), &mut len) };
        if ret == z::Z_OK { len as usize } else { 0 }
    }

    fn restart(&mut self, bits: u8, byte: u8, history: &[u8]) -> bool {
        if bits > 7 || history.len() > 32 * 1024 {
            return false;
        }
        // SAFETY: the stream is initialized; `history` is a live slice of the length given.
        unsafe {
            if z::inflateReset(&mut *self.strm) != z::Z_OK {
                return false;
            }
            if bits > 0
                && z::inflatePrime(
                    &mut *self.strm,
                    i32::from(bits),
                    i32::from(byte >> (8 - bits)),
                ) != z::Z_OK
            {
                return false;
            }
            z::inflateSetDictionary(&mut *self.strm, history.as_ptr(), history.len() as u32)
                == z::Z_OK
        }
    }
}
