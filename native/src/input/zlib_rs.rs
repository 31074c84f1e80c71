//! zlib-rs raw inflate (through flate2) behind the core gzip framing: what native reads `.gz`
//! with. Its own file so that `examples/inflate_bench.rs` measures this very code (`#[path]`).
use flinch_core::gzip::{InflateError, RawInflate};

/// zlib-rs raw inflate (through flate2) as the core gzip framing's [`RawInflate`].
pub struct ZlibRsInflate(flate2::Decompress);

impl ZlibRsInflate {
    /// A raw-deflate inflater (no zlib header).
    pub fn new() -> ZlibRsInflate {
        ZlibRsInflate(flate2::Decompress::new(false))
    }
}

impl Default for ZlibRsInflate {
    fn default() -> Self {
        ZlibRsInflate::new()
    }
}

impl RawInflate for ZlibRsInflate {
    fn inflate(
        &mut self,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(bool, usize, usize), InflateError> {
        let (in0, out0) = (self.0.total_in(), self.0.total_out());
        let result = self
            .0
            .decompress(input, output, flate2::FlushDecompress::None);
        let nin = (self.0.total_in() - in0) as usize;
        let nout = (self.0.total_out() - out0) as usize;
        match result {
            Ok(flate2::Status::StreamEnd) => Ok((true, nin, nout)),
            // BufError: no progress possible (no input, or no room): not an error here.
            Ok(flate2::Status::Ok | flate2::Status::BufError) => Ok((false, nin, nout)),
            Err(_) => Err(InflateError { nin }),
        }
    }

    fn reset(&mut self) {
        self.0.reset(false);
    }
}
