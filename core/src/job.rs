//! The one protocol of every job (the trace summary, the join, `analyze`, the runs summary, the
//! merge, and what comes after them): a state machine that says what it needs next, takes bytes,
//! and ends with a typed result. The page (through `flinch-wasm`) and the std driver
//! (`flinch-host`, for the CLI and the Python wheel) drive every job this same way, so a job's
//! rule (which file, which pass, which byte ranges) is written once, here in the core.
//!
//! Drive a job as:
//!
//! ```text
//! loop {
//!     match job.need() {
//!         Need::File(name)     => { job.write(chunk)?...; job.end()? }      // from its first byte
//!         Need::Ranges(ranges) => { for (start, end) in ranges { job.seek(start)?; job.write(..)?... } job.end()? }
//!         Need::Listing(dir)   => job.listing(&mut paths)?,
//!         Need::Done           => break,
//!     }
//! }
//! let result = job.finish()?;
//! ```
//!
//! Bytes are the file's as stored, or already decoded where the driver inflates gzip itself (the
//! std driver does, on a reader thread): a job tells the two apart by the gzip magic
//! ([`crate::gzip::is_gzip`]), which no trace JSON or trace.csv starts with. Byte offsets
//! ([`Need::Ranges`], [`Job::seek`], errors) are in decoded bytes.
//!
//! A driver that cannot read ranges may answer [`Need::Ranges`] with the whole file from its first
//! byte and no `seek`: the result is the same. A read that fails is reported with
//! [`Job::read_error`] before [`Job::end`]; what was written before it counts.
//!
//! Where a driver has a faster source of what a job consumes than bytes (the std driver scans a
//! large trace on several threads), a job may take that too, through methods of its own; the rule
//! of what is read, and the result, stay the job's.

/// What a job needs next from whoever drives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need<'a> {
    /// The bytes of this file (named as the job was given it), from its first byte: write them
    /// in chunks, then [`Job::end`].
    File(&'a str),
    /// Only these `[start, end)` ranges of the current file, sorted and disjoint: for each,
    /// [`Job::seek`] to its start and write its bytes; then [`Job::end`].
    Ranges(&'a [(u64, u64)]),
    /// The paths of every file under this folder, through [`Job::listing`].
    Listing(&'a str),
    /// Nothing more: the result is ready ([`Job::finish`]).
    Done,
}

/// A job driven through [`Need`]s.
pub trait Job {
    /// The typed result.
    type Output;
    /// Why the job failed: a typed error carrying its byte offset or line where it has one.
    type Error;

    /// What the job needs next.
    fn need(&self) -> Need<'_>;

    /// The next chunk of the current file (or range).
    ///
    /// # Errors
    /// Malformed input; the job then stays failed.
    fn write(&mut self, chunk: &[u8]) -> Result<(), Self::Error>;

    /// The next bytes written are the current file's from `offset` on (forward only), for a
    /// [`Need::Ranges`].
    ///
    /// # Errors
    /// The job did not ask for ranges, or `offset` goes backwards.
    fn seek(&mut self, offset: u64) -> Result<(), Self::Error>;

    /// Reading the current file failed (`message`: why) after the bytes written so far.
    fn read_error(&mut self, message: &str);

    /// The paths of the folder a [`Need::Listing`] named, in any order.
    ///
    /// # Errors
    /// The job did not ask for a listing.
    fn listing(&mut self, paths: &mut dyn Iterator<Item = &str>) -> Result<(), Self::Error>;

    /// The end of the current file (or of its ranges).
    ///
    /// # Errors
    /// Input that ended where it cannot.
    fn end(&mut self) -> Result<(), Self::Error>;

    /// The result, once [`need`](Self::need) is [`Need::Done`].
    ///
    /// # Errors
    /// The job failed, or is not done.
    fn finish(self) -> Result<Self::Output, Self::Error>;
}
