//! The file of counts every NVTX-injected process of the command shares with the recorder
//! (`FLINCH_NVTX_COUNTS`, mapped by the library; its layout is the library's `shared` module):
//! they survive processes that end by `_exit` or a signal, which send no exit statistics, so
//! the recorder learns how many processes there were and how many marks they lost unreported.
use std::path::{Path, PathBuf};

/// Bytes of the file: native-endian `u64`s `attached`, `processes`, `unreported`, then spare.
const BYTES: u64 = 64;

/// The counts file, in a private folder; both are removed on drop.
#[derive(Debug)]
pub struct CountsFile {
    path: PathBuf,
    dir: PathBuf,
}

/// What the processes left in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Whether any process mapped the file (otherwise the other two are unknown, not zero).
    pub attached: bool,
    /// Processes that made a mark.
    pub processes: u64,
    /// Marks lost by processes that sent no exit statistics (queued when they ended, or dropped).
    pub lost_unreported: u64,
}

impl CountsFile {
    /// A new zeroed file under `$XDG_RUNTIME_DIR` or the temporary folder.
    pub fn create() -> Result<CountsFile, String> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!(
            "flinch-nvtx-counts-{}-{}",
            std::process::id(),
            super::clock::mono_now_ns()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let f = CountsFile {
            path: dir.join("counts"),
            dir,
        };
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&f.path)
            .and_then(|file| file.set_len(BYTES))
            .map_err(|e| format!("cannot create {}: {e}", f.path.display()))?;
        Ok(f)
    }

    /// The file's path, for `FLINCH_NVTX_COUNTS`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The counts now (read after the command ended, they are final for its processes).
    pub fn read(&self) -> Counts {
        std::fs::read(&self.path)
            .map(|b| parse(&b))
            .unwrap_or_default()
    }
}

impl Drop for CountsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn parse(b: &[u8]) -> Counts {
    let word = |i: usize| {
        b.get(i * 8..i * 8 + 8)
            .map_or(0, |w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
    };
    Counts {
        attached: word(0) != 0,
        processes: word(1),
        // Signed: a line written after its process reported it still queued is subtracted twice.
        lost_unreported: (word(2) as i64).max(0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_words_the_library_writes() {
        let f = CountsFile::create().unwrap();
        assert_eq!(f.read(), Counts::default());
        let mut b = vec![0u8; BYTES as usize];
        b[..8].copy_from_slice(&1u64.to_ne_bytes());
        b[8..16].copy_from_slice(&51u64.to_ne_bytes());
        b[16..24].copy_from_slice(&(-3i64 as u64).to_ne_bytes());
        std::fs::write(f.path(), &b).unwrap();
        let c = f.read();
        assert_eq!((c.attached, c.processes, c.lost_unreported), (true, 51, 0));
        b[16..24].copy_from_slice(&7u64.to_ne_bytes());
        std::fs::write(f.path(), &b).unwrap();
        assert_eq!(f.read().lost_unreported, 7);
        let dir = f.path().parent().unwrap().to_path_buf();
        drop(f);
        assert!(!dir.exists());
    }
}
