//! Every output file a subcommand writes (`trace --perfetto`, `summarize --out`) goes through
//! here, so that no input is ever overwritten and no output is ever left cut (docs/robustness.md,
//! "Output files"):
//!
//! - [`Target::resolve`] checks the path before any work starts: a directory, FIFO, socket or
//!   block device is refused; a character device (`/dev/null`, a terminal) is written directly;
//!   a symbolic link is followed. [`Target::refuse_input`] compares device and inode with each
//!   input, so the same path, a hard link and a symbolic link to an input are all refused.
//! - [`Target::create`] writes to a fresh temporary file beside the target (same directory, so
//!   the rename is atomic), which [`OutputFile::commit`] syncs and renames over the target. Any
//!   error, or dropping the file uncommitted, removes the temporary file: the target is left as
//!   it was, or not created.
//! - SIGINT, SIGTERM and SIGHUP remove every temporary file still open, then end the process by
//!   the same signal (the shell shows 128+N). SIGXFSZ is ignored, so a file size limit
//!   (`ulimit -f`) is the write error EFBIG, reported like any other.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The option that names an output, and the path as the user gave it: what messages show.
#[derive(Clone, Debug)]
pub struct OutputName {
    option: &'static str,
    shown: PathBuf,
    /// Whether a file was there (it is left as it was on failure; else none is created).
    existed: bool,
    /// A character device, written directly.
    device: bool,
}

impl OutputName {
    /// The path as given.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// The line for a write (or sync, or rename) that failed, naming the output and the OS error.
    pub fn write_error(&self, e: &io::Error) -> String {
        let p = self.shown.display();
        if self.device {
            return format!("{} {p}: cannot write: {e}", self.option);
        }
        let left = if self.existed {
            format!("{p} is left as it was")
        } else {
            format!("{p} was not created")
        };
        format!(
            "{} {p}: cannot write: {e}; {left} (the unfinished temporary file was removed)",
            self.option
        )
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Nothing there yet: the file appears at the rename.
    New,
    /// A regular file, replaced at the rename (its identity, to compare with inputs, and mode).
    Replace { dev: u64, ino: u64, mode: u32 },
    /// A character device: written directly, never replaced.
    Device,
}

/// An output path, checked ([`Target::resolve`]).
#[derive(Debug)]
pub struct Target {
    name: OutputName,
    /// The path renamed onto: the given one, or where its symbolic link points.
    dest: PathBuf,
    kind: Kind,
}

fn refused(option: &str, path: &Path, what: &str) -> String {
    let hint = if what == "a directory" {
        format!(" (e.g. {})", path.join("out.json").display())
    } else {
        String::new()
    };
    format!(
        "{option} {} is {what}; an output must be a regular file{hint}, created if missing, \
         or a character device such as /dev/null",
        path.display()
    )
}

impl Target {
    /// Checks `path` as the output of `option`: what is there, and that its folder exists and
    /// can be written. The `Err` is one line naming both.
    pub fn resolve(option: &'static str, path: &Path) -> Result<Target, String> {
        let p = path.display();
        let meta = match fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if fs::symlink_metadata(path).is_ok() {
                    return Err(format!(
                        "{option} {p} is a symbolic link to a file that does not exist"
                    ));
                }
                None
            }
            Err(e) => return Err(format!("{option} {p}: {e}")),
        };
        let kind = match &meta {
            None => Kind::New,
            Some(m) => {
                let ft = m.file_type();
                if ft.is_file() {
                    Kind::Replace {
                        dev: m.dev(),
                        ino: m.ino(),
                        mode: m.permissions().mode(),
                    }
                } else if ft.is_char_device() {
                    Kind::Device
                } else if ft.is_dir() {
                    return Err(refused(option, path, "a directory"));
                } else if ft.is_fifo() {
                    return Err(refused(option, path, "a FIFO (named pipe)"));
                } else if ft.is_socket() {
                    return Err(refused(option, path, "a socket"));
                } else {
                    return Err(refused(option, path, "a block device"));
                }
            }
        };
        let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let dest = if is_link && !matches!(kind, Kind::Device) {
            fs::canonicalize(path).map_err(|e| format!("{option} {p}: {e}"))?
        } else {
            path.to_path_buf()
        };
        if !matches!(kind, Kind::Device) {
            let dir = folder_of(&dest);
            match fs::metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(format!("{option} {p}: {} is not a folder", dir.display())),
                Err(e) => return Err(format!("{option} {p}: folder {}: {e}", dir.display())),
            }
            writable(&dir).map_err(|e| {
                format!(
                    "{option} {p}: cannot create files in {}: {e} (the output is written \
                     beside its target, then renamed)",
                    dir.display()
                )
            })?;
        }
        Ok(Target {
            name: OutputName {
                option,
                shown: path.to_path_buf(),
                existed: meta.is_some(),
                device: matches!(kind, Kind::Device),
            },
            dest,
            kind,
        })
    }

    /// Whether a regular file is there now (only such a file can be one of the inputs).
    pub fn replaces_a_file(&self) -> bool {
        matches!(self.kind, Kind::Replace { .. })
    }

    /// Refuses when the output is the same file as `input` (device and inode, after following
    /// symbolic links), which is `what` in the message ("the --telemetry input"). An input that
    /// cannot be looked up is not compared: reading it gives its own error.
    pub fn refuse_input(&self, what: &str, input: &Path) -> Result<(), String> {
        let Kind::Replace { dev, ino, .. } = self.kind else {
            return Ok(());
        };
        match fs::metadata(input) {
            Ok(m) if m.dev() == dev && m.ino() == ino => {
                let named = if input == self.name.shown {
                    String::new()
                } else {
                    format!(" ({})", input.display())
                };
                Err(format!(
                    "{} {} is the same file as {what}{named}; refusing to overwrite an input",
                    self.name.option,
                    self.name.shown.display()
                ))
            }
            _ => Ok(()),
        }
    }

    /// The option and path, for messages.
    pub fn name(&self) -> &OutputName {
        &self.name
    }

    /// Opens the output: a temporary file beside the target (or the device itself).
    pub fn create(self) -> Result<OutputFile, String> {
        signals::install();
        let p = self.name.shown.display();
        if let Kind::Device = self.kind {
            let file = OpenOptions::new()
                .write(true)
                .open(&self.dest)
                .map_err(|e| format!("{} {p}: {e}", self.name.option))?;
            return Ok(OutputFile {
                name: self.name,
                dest: self.dest,
                file,
                temp: None,
                mode: None,
            });
        }
        let dir = folder_of(&self.dest);
        let base = self.dest.file_name().map_or(&b"out"[..], |n| n.as_bytes());
        // Room for the prefix and suffix within a 255-byte file name.
        let base = String::from_utf8_lossy(&base[..base.len().min(200)]).into_owned();
        for _ in 0..64 {
            let path = dir.join(format!(".{base}.flinch-{}.tmp", random_tag()));
            // Registered before it exists, so that no signal can leave it behind.
            let slot = signals::register(&path).ok_or_else(|| {
                format!(
                    "{} {p}: too many output files open at once",
                    self.name.option
                )
            })?;
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(&path)
            {
                Ok(file) => {
                    let mode = match self.kind {
                        Kind::Replace { mode, .. } => Some(mode),
                        _ => None,
                    };
                    return Ok(OutputFile {
                        name: self.name,
                        dest: self.dest,
                        file,
                        temp: Some(Temp { path, slot }),
                        mode,
                    });
                }
                Err(e) => {
                    signals::unregister(slot);
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(format!(
                            "{} {p}: cannot create a temporary file in {}: {e}",
                            self.name.option,
                            dir.display()
                        ));
                    }
                }
            }
        }
        Err(format!(
            "{} {p}: cannot find a free temporary file name in {}",
            self.name.option,
            dir.display()
        ))
    }
}

/// Writes `bytes` to the target in one go ([`Target::create`], then commit).
pub fn write_all(target: Target, bytes: &[u8]) -> Result<(), String> {
    let name = target.name.clone();
    let mut f = target.create()?;
    f.write_all(bytes).map_err(|e| name.write_error(&e))?;
    f.commit()
}

/// Whether `a` and `b` name the same existing file (device and inode, symbolic links followed).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn writable(dir: &Path) -> io::Result<()> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Six characters of [a-z0-9], different in each call and each process.
fn random_tag() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded randomly per process; the counter makes each call differ.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let mut v = h.finish();
    let mut s = String::with_capacity(6);
    for _ in 0..6 {
        s.push(char::from(
            b"abcdefghijklmnopqrstuvwxyz0123456789"[(v % 36) as usize],
        ));
        v /= 36;
    }
    s
}

struct Temp {
    path: PathBuf,
    slot: usize,
}

/// An output being written; [`commit`](Self::commit) puts it in place. Dropped uncommitted (an
/// error, a panic), its temporary file is removed.
pub struct OutputFile {
    name: OutputName,
    dest: PathBuf,
    file: File,
    temp: Option<Temp>,
    /// The replaced file's permissions, given to the new one.
    mode: Option<u32>,
}

impl OutputFile {
    /// The option and path, for messages.
    pub fn name(&self) -> &OutputName {
        &self.name
    }

    /// Syncs the data to disk and renames the temporary file over the target (a device is
    /// flushed only). The `Err` is [`OutputName::write_error`]'s line.
    pub fn commit(mut self) -> Result<(), String> {
        let err = |e: io::Error, name: &OutputName| name.write_error(&e);
        self.file.flush().map_err(|e| err(e, &self.name))?;
        let Some(temp) = &self.temp else {
            return Ok(());
        };
        self.file.sync_all().map_err(|e| err(e, &self.name))?;
        if let Some(mode) = self.mode {
            self.file
                .set_permissions(fs::Permissions::from_mode(mode & 0o7777))
                .map_err(|e| err(e, &self.name))?;
        }
        fs::rename(&temp.path, &self.dest).map_err(|e| err(e, &self.name))?;
        // After the rename, so that a signal in between finds only a name that is gone.
        signals::unregister(temp.slot);
        self.temp = None;
        // The rename itself made durable; a folder that cannot be synced changes nothing.
        if let Ok(d) = File::open(folder_of(&self.dest)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(&temp.path);
            signals::unregister(temp.slot);
        }
    }
}

/// The temporary files open now, removed by a signal handler before the process ends.
///
/// The handler only loads and swaps atomics and calls `unlink`, `write`, `signal` and `raise`,
/// all async-signal-safe. A registered path's C string is never freed: the handler may be
/// reading it on another thread while it is unregistered (a few hundred bytes per output).
mod signals {
    use std::ffi::{CString, c_char, c_int};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::null_mut;
    use std::sync::Once;
    use std::sync::atomic::{AtomicPtr, Ordering};

    const SLOTS: usize = 8;
    static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];

    /// The signals that end a process by default and that a user sends to stop it.
    const ENDING: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    extern "C" fn on_signal(sig: c_int) {
        let mut removed = false;
        for slot in &PATHS {
            let p = slot.swap(null_mut(), Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: `p` is a NUL-terminated string that is never freed.
                unsafe { libc::unlink(p) };
                removed = true;
            }
        }
        if removed {
            let msg = b"flinch-trace: stopped by a signal; the unfinished output was removed\n";
            // SAFETY: write(2) on a valid buffer; its result does not matter here.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        }
        // SAFETY: the default disposition, then the signal again: blocked while this handler
        // runs, it ends the process as soon as the handler returns.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }

    /// Installs the handler for signals at their default disposition (one a parent made
    /// ignored stays ignored), and ignores SIGXFSZ so that a size limit is the error EFBIG.
    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            for sig in ENDING {
                // SAFETY: sigaction with valid pointers; the handler is async-signal-safe.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                        || old.sa_sigaction != libc::SIG_DFL
                    {
                        continue;
                    }
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
                    libc::sigemptyset(&mut new.sa_mask);
                    new.sa_flags = libc::SA_RESTART;
                    libc::sigaction(sig, &new, std::ptr::null_mut());
                }
            }
            super::ignore_file_size_signal();
        });
    }

    /// Adds `path` to the files a signal removes; `None` when every slot is taken.
    pub fn register(path: &Path) -> Option<usize> {
        let c = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
        for (i, slot) in PATHS.iter().enumerate() {
            if slot
                .compare_exchange(null_mut(), c, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Some(i);
            }
        }
        // SAFETY: `c` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(c) });
        None
    }

    /// Takes slot `i` out (its string is left allocated; see the module docs).
    pub fn unregister(i: usize) {
        PATHS[i].store(null_mut(), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests;

/// Set when [`ignore_file_size_signal`] changed SIGXFSZ from its default, so that a command
/// `record` starts gets the default back ([`file_size_signal_was_default`]).
static XFSZ_WAS_DEFAULT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ignores SIGXFSZ (unless the parent already chose a disposition), so that a file size limit
/// (`ulimit -f`) is the write error EFBIG, reported with the file it hit, for every file the
/// process writes: outputs, spools, spills and recordings. By default the signal ends the
/// process silently (status 153).
pub fn ignore_file_size_signal() {
    // SAFETY: sigaction with a null new action only reads the disposition; SIG_IGN needs no
    // handler. Called at start-up and from `Once`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGXFSZ, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_DFL
        {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            XFSZ_WAS_DEFAULT.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// Whether [`ignore_file_size_signal`] changed SIGXFSZ from its default (a child then gets
/// the default back: an ignored disposition is inherited across exec).
pub fn file_size_signal_was_default() -> bool {
    XFSZ_WAS_DEFAULT.load(std::sync::atomic::Ordering::SeqCst)
}
