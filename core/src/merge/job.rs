//! The merge as a job ([`crate::job`]): given the inputs' names, it asks for each in order
//! ([`Need::File`]), folds each document into the merged state as it ends (one document held at
//! a time), and finishes with the [`MergedSummary`]. Which file comes next, the files named twice
//! ([`MergeJob::same_files`]), and the errors naming the file are the job's; a driver only
//! answers with bytes.
//!
//! Bytes written ([`Job::write`]) are held until [`Job::end`], at most
//! [`MergeJob::max_document_bytes`] of them (a summary is a few KB to a few hundred KB; an array
//! of 30,000 ranks' is ~110 MB). A driver with a faster source hands the document whole instead:
//! one already in its memory ([`MergeJob::document`]: Python's texts, a small file read whole),
//! or a parse over a reader ([`MergeJob::document_from`]: a large file, an array's summaries
//! folded one at a time, so that memory holds one summary, not the file).
//!
//! The input named `-` is the standard input (the CLI's convention): it can be named once, and
//! a read that fails names it `stdin`.
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::{AddError, MergeError, MergedSummary, Merger, locate_error, render};
use crate::job::{Job, Need};

/// [`MergeJob::max_document_bytes`]' default: room for a many-rank array's document (30,000
/// ranks: ~110 MB) written in chunks.
pub const MAX_DOCUMENT_BYTES: usize = 256 << 20;

/// The name of the standard input among the inputs.
pub const STDIN: &str = "-";

/// Why the merge job failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeJobError {
    /// The standard input (`-`) was named more than once.
    StdinTwice,
    /// An input could not be read (`message`: why).
    Read {
        /// The input as named.
        file: String,
        /// Why.
        message: String,
    },
    /// An input's bytes passed [`MergeJob::max_document_bytes`].
    TooLarge {
        /// The input as named.
        file: String,
        /// The limit, in bytes.
        max_bytes: usize,
    },
    /// A summary was refused, or there was none (`file`: the input at fault, `None` for the
    /// whole list).
    Merge {
        /// The input named by `error.index`.
        file: Option<String>,
        /// The merge's error (its index, key path and message).
        error: MergeError,
    },
    /// The driver called what the job did not ask for (a bug in the driver).
    OutOfTurn(&'static str),
}

impl MergeJobError {
    /// The merge's error: as it is for a refused summary, else this error's text with no index.
    pub fn into_merge_error(self) -> MergeError {
        match self {
            MergeJobError::Merge { error, .. } => error,
            other => MergeError {
                index: None,
                path: String::new(),
                message: other.to_string(),
            },
        }
    }
}

impl fmt::Display for MergeJobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeJobError::StdinTwice => f.write_str("`-` (stdin) can be given once"),
            MergeJobError::Read { file, message } if file == STDIN => {
                write!(f, "stdin: {message}")
            }
            MergeJobError::Read { file, message } => write!(f, "{file}: {message}"),
            MergeJobError::TooLarge { file, max_bytes } => write!(
                f,
                "{file}: more than {max_bytes} bytes, the most of a summary held in memory at once"
            ),
            MergeJobError::Merge {
                file: Some(file),
                error,
            } if error.path.is_empty() => write!(f, "{file}: {}", error.message),
            MergeJobError::Merge {
                file: Some(file),
                error,
            } => write!(f, "{file}: {}: {}", error.path, error.message),
            MergeJobError::Merge { file: None, error } => write!(f, "{error}"),
            MergeJobError::OutOfTurn(what) => {
                write!(f, "the merge job was given {what} out of turn")
            }
        }
    }
}

impl core::error::Error for MergeJobError {}

/// An input named again after its first naming ([`MergeJob::same_files`]): its ranks are merged
/// twice. Displays as the warning to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatedFile<'a> {
    /// The later naming.
    pub later: &'a str,
    /// The first naming.
    pub first: &'a str,
}

impl fmt::Display for RepeatedFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is the same file as {}: its ranks are merged twice",
            self.later, self.first
        )
    }
}

/// The merge of the inputs named, driven through [`Job`].
#[derive(Debug)]
pub struct MergeJob {
    files: Vec<String>,
    /// The input asked for now (`files.len()`: done).
    current: usize,
    top: usize,
    max_document_bytes: usize,
    /// The current input's bytes written so far.
    buffer: Vec<u8>,
    merger: Merger,
    failed: Option<MergeJobError>,
    /// `(later, first)` positions of inputs that are the same file.
    repeated: Vec<(usize, usize)>,
}

impl MergeJob {
    /// The merge of `files` (names as the errors give them), listing `top` ops.
    ///
    /// # Errors
    /// The standard input (`-`) named more than once.
    pub fn new(files: Vec<String>, top: usize) -> Result<MergeJob, MergeJobError> {
        if files.iter().filter(|f| *f == STDIN).count() > 1 {
            return Err(MergeJobError::StdinTwice);
        }
        Ok(MergeJob {
            files,
            current: 0,
            top,
            max_document_bytes: MAX_DOCUMENT_BYTES,
            buffer: Vec::new(),
            merger: Merger::new(),
            failed: None,
            repeated: Vec::new(),
        })
    }

    /// The most bytes of one input [`Job::write`] holds ([`MAX_DOCUMENT_BYTES`] unless set).
    pub fn max_document_bytes(&self) -> usize {
        self.max_document_bytes
    }

    /// Holds at most `bytes` of one input written in chunks; past them the input is an error
    /// naming it.
    pub fn set_max_document_bytes(&mut self, bytes: usize) {
        self.max_document_bytes = bytes;
    }

    /// The position of the input [`Need::File`] names, among the names given.
    pub fn file_index(&self) -> usize {
        self.current
    }

    /// Which inputs are the same file: `identities` gives each input's identity in order (the
    /// driver's: device and inode, say; `None` where it has none, as for the standard input or
    /// a file it cannot look at). Each input whose identity an earlier one had is merged again
    /// with a warning ([`repeated`](Self::repeated)).
    pub fn same_files<K: Ord>(&mut self, identities: impl IntoIterator<Item = Option<K>>) {
        let mut seen = BTreeMap::new();
        self.repeated.clear();
        for (i, id) in identities.into_iter().enumerate().take(self.files.len()) {
            let Some(id) = id else { continue };
            match seen.get(&id) {
                Some(&first) => self.repeated.push((i, first)),
                None => {
                    seen.insert(id, i);
                }
            }
        }
    }

    /// The inputs named again after their first naming, in order.
    pub fn repeated(&self) -> impl Iterator<Item = RepeatedFile<'_>> {
        self.repeated.iter().map(|&(later, first)| RepeatedFile {
            later: &self.files[later],
            first: &self.files[first],
        })
    }

    /// The current input's whole document, already in the driver's memory, in place of
    /// [`Job::write`]s and [`Job::end`] (no copy, no limit: the caller holds it).
    ///
    /// # Errors
    /// As [`Job::end`]; nothing asked for, or bytes already written.
    pub fn document(&mut self, json: &[u8]) -> Result<(), MergeJobError> {
        self.check_turn("a document")?;
        if !self.buffer.is_empty() {
            return Err(self.fail(MergeJobError::OutOfTurn("a document after bytes")));
        }
        let index = self.current;
        match self.merger.add_json(index, json) {
            Ok(()) => {
                self.current += 1;
                Ok(())
            }
            Err(e) => Err(self.fail_merge(e)),
        }
    }

    /// The current input's whole document parsed from a deserializer that `open` gives (over a
    /// reader, say), in place of [`Job::write`]s and [`Job::end`]: an array's summaries are
    /// folded as they are parsed, never held together. A text that is not a summary is parsed
    /// once more, from a second `open`, to find the key at fault. `open`'s `Err`: why the input
    /// cannot be read.
    ///
    /// # Errors
    /// As [`Job::end`]; `open` failed; nothing asked for, or bytes already written.
    pub fn document_from<'de, R, F>(&mut self, mut open: F) -> Result<(), MergeJobError>
    where
        R: serde_json::de::Read<'de>,
        F: FnMut() -> Result<serde_json::Deserializer<R>, String>,
    {
        self.check_turn("a document")?;
        if !self.buffer.is_empty() {
            return Err(self.fail(MergeJobError::OutOfTurn("a document after bytes")));
        }
        let index = self.current;
        let mut de = open().map_err(|m| self.fail_read(m))?;
        let added = self.merger.add_document(index, &mut de);
        drop(de);
        match added {
            Ok(()) => {
                self.current += 1;
                Ok(())
            }
            Err(AddError::Refused(e)) => Err(self.fail_merge(e)),
            Err(AddError::Syntax(e)) => {
                let mut de = open().map_err(|m| self.fail_read(m))?;
                let e = locate_error(index, &mut de).unwrap_or(e);
                Err(self.fail_merge(e))
            }
        }
    }

    /// Fails unless a file is asked for and the job has not failed.
    fn check_turn(&mut self, what: &'static str) -> Result<(), MergeJobError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.current >= self.files.len() {
            return Err(self.fail(MergeJobError::OutOfTurn(what)));
        }
        Ok(())
    }

    fn fail(&mut self, e: MergeJobError) -> MergeJobError {
        self.buffer = Vec::new();
        self.failed = Some(e.clone());
        e
    }

    fn fail_read(&mut self, message: String) -> MergeJobError {
        let file = self.files[self.current].clone();
        self.fail(MergeJobError::Read { file, message })
    }

    fn fail_merge(&mut self, error: MergeError) -> MergeJobError {
        let file = error.index.and_then(|i| self.files.get(i)).cloned();
        self.fail(MergeJobError::Merge { file, error })
    }
}

impl Job for MergeJob {
    type Output = MergedSummary;
    type Error = MergeJobError;

    fn need(&self) -> Need<'_> {
        match self.files.get(self.current) {
            Some(file) if self.failed.is_none() => Need::File(file),
            _ => Need::Done,
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), MergeJobError> {
        self.check_turn("bytes")?;
        if chunk.len() > self.max_document_bytes - self.buffer.len() {
            let file = self.files[self.current].clone();
            let max_bytes = self.max_document_bytes;
            return Err(self.fail(MergeJobError::TooLarge { file, max_bytes }));
        }
        self.buffer.extend_from_slice(chunk);
        Ok(())
    }

    fn seek(&mut self, _offset: u64) -> Result<(), MergeJobError> {
        Err(self.fail(MergeJobError::OutOfTurn("a seek")))
    }

    fn read_error(&mut self, message: &str) {
        if self.check_turn("a read error").is_ok() {
            self.fail_read(message.to_string());
        }
    }

    fn listing(&mut self, _paths: &mut dyn Iterator<Item = &str>) -> Result<(), MergeJobError> {
        Err(self.fail(MergeJobError::OutOfTurn("a listing")))
    }

    fn end(&mut self) -> Result<(), MergeJobError> {
        self.check_turn("an end")?;
        let json = core::mem::take(&mut self.buffer);
        let index = self.current;
        let added = self.merger.add_json(index, &json);
        // The allocation is kept for the next input.
        self.buffer = json;
        self.buffer.clear();
        match added {
            Ok(()) => {
                self.current += 1;
                Ok(())
            }
            Err(e) => Err(self.fail_merge(e)),
        }
    }

    fn finish(self) -> Result<MergedSummary, MergeJobError> {
        let MergeJob {
            files,
            current,
            top,
            buffer,
            merger,
            failed,
            ..
        } = self;
        drop(buffer);
        if let Some(e) = failed {
            return Err(e);
        }
        if current < files.len() {
            return Err(MergeJobError::OutOfTurn("finish before the last input"));
        }
        let state = merger.finish().map_err(|error| MergeJobError::Merge {
            file: error.index.and_then(|i| files.get(i)).cloned(),
            error,
        })?;
        Ok(render(state, top))
    }
}

#[cfg(test)]
mod tests;
