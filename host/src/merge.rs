//! The std driver of the merge job (`flinch_core::merge::MergeJob`): `merge` of per-rank
//! summaries for the CLI. It answers each file the job asks for from the file system: `-` from
//! the standard input, read whole; a regular file up to
//! [`read_whole_max_bytes`](MergeFilesOptions::read_whole_max_bytes) read whole; a larger one
//! parsed as it is read (an array's summaries folded one at a time, so that memory holds one
//! summary, not the file). Files are read as stored (a `.gz` summary is not inflated). Which
//! file comes next, the files named twice and the errors naming the file are the job's.
use std::fs;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use flinch_core::job::{Job, Need};
use flinch_core::merge::{MergeJob, MergeJobError, MergedSummary, RepeatedFile, STDIN};

/// [`MergeFilesOptions::read_whole_max_bytes`]' default: a large merge's or a many-rank array's
/// file is parsed as it is read, where holding it whole would cost its size again.
pub const READ_WHOLE_MAX_BYTES: usize = 16 << 20;

/// The reader's buffer for a file parsed as it is read.
const READER_BYTES: usize = 1 << 20;

/// What to merge.
#[derive(Clone, Debug)]
pub struct MergeFilesOptions {
    /// The summaries, in order; `-` is the standard input (once at most).
    pub files: Vec<PathBuf>,
    /// How many (category, name) ops the merged summary lists.
    pub top: usize,
    /// Regular files up to this many bytes are read whole and parsed from memory (the faster
    /// parse); larger ones are parsed as they are read.
    pub read_whole_max_bytes: usize,
}

impl MergeFilesOptions {
    /// `files` with the default top and read-whole size.
    pub fn new(files: Vec<PathBuf>) -> Self {
        MergeFilesOptions {
            files,
            top: flinch_core::summary::DEFAULT_TOP_OPS,
            read_whole_max_bytes: READ_WHOLE_MAX_BYTES,
        }
    }
}

/// A merge whose files have been looked at (which are the same file is known) before any is
/// read.
pub struct FilesMerge<'a> {
    options: &'a MergeFilesOptions,
    job: MergeJob,
}

impl<'a> FilesMerge<'a> {
    /// The merge of `options`' files, each looked at (device and inode) to find the files named
    /// twice.
    ///
    /// # Errors
    /// The standard input named more than once.
    pub fn new(options: &'a MergeFilesOptions) -> Result<FilesMerge<'a>, MergeJobError> {
        let names = options.files.iter().map(|f| f.display().to_string());
        let mut job = MergeJob::new(names.collect(), options.top)?;
        job.same_files(options.files.iter().map(|f| identity(f)));
        Ok(FilesMerge { options, job })
    }

    /// The files named again after their first naming (their ranks are merged twice: a warning).
    pub fn repeated(&self) -> impl Iterator<Item = RepeatedFile<'_>> {
        self.job.repeated()
    }

    /// Reads the files one at a time, each folded in and dropped before the next.
    ///
    /// # Errors
    /// A file that cannot be read, a summary refused: naming the file (and the key).
    pub fn merge(self) -> Result<MergedSummary, MergeJobError> {
        let FilesMerge { options, mut job } = self;
        loop {
            match job.need() {
                Need::Done => break,
                Need::File(_) => {
                    let path = &options.files[job.file_index()];
                    answer(&mut job, path, options.read_whole_max_bytes)?;
                }
                Need::Ranges(_) => return Err(MergeJobError::OutOfTurn("a request for ranges")),
                Need::Listing(_) => {
                    return Err(MergeJobError::OutOfTurn("a request for a listing"));
                }
            }
        }
        job.finish()
    }
}

/// `merge` of `options`' files (the warnings of [`FilesMerge::repeated`] left out).
///
/// # Errors
/// As [`FilesMerge::new`] and [`FilesMerge::merge`].
pub fn merge_files(options: &MergeFilesOptions) -> Result<MergedSummary, MergeJobError> {
    FilesMerge::new(options)?.merge()
}

/// Hands the job the file at `path`: whole, or through a reader past `read_whole_max_bytes`.
fn answer(
    job: &mut MergeJob,
    path: &Path,
    read_whole_max_bytes: usize,
) -> Result<(), MergeJobError> {
    let stdin = path.as_os_str() == STDIN;
    let large = !stdin
        && fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > read_whole_max_bytes as u64);
    if large {
        return job.document_from(|| {
            let file = fs::File::open(path).map_err(|e| e.to_string())?;
            let reader = BufReader::with_capacity(READER_BYTES, file);
            Ok(serde_json::Deserializer::from_reader(reader))
        });
    }
    let read = if stdin {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
    } else {
        fs::read(path)
    };
    match read {
        Ok(bytes) => job.document(&bytes),
        Err(e) => {
            job.read_error(&e.to_string());
            job.end()
        }
    }
}

/// The file's device and inode; `None` for the standard input and a file that cannot be looked
/// at (its read names it).
fn identity(path: &Path) -> Option<(u64, u64)> {
    if path.as_os_str() == STDIN {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        None
    }
}
