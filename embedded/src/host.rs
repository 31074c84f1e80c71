//! The host side through Arm semihosting (`bkpt 0xab`): the command line, reading a file in
//! chunks, stdout/stderr and the exit status. Under QEMU with `-semihosting-config
//! enable=on,target=native` each call is served by the host's files and streams.
use core::fmt;

use cortex_m_semihosting::{hio, nr};

/// `SYS_EXIT_EXTENDED` and its reason for a normal exit (the status is the subcode).
const SYS_EXIT_EXTENDED: usize = 0x20;
const ADP_STOPPED_APPLICATION_EXIT: usize = 0x20026;

/// The command line (`argv[0] ARGS…`, space separated) into `buf`; its length.
pub fn cmdline(buf: &mut [u8]) -> Option<usize> {
    let mut block = [buf.as_mut_ptr() as usize, buf.len()];
    // SAFETY: GET_CMDLINE writes at most `block[1]` bytes to `block[0]` (a live buffer) and
    // stores the length written in `block[1]`.
    // (Passed as a raw address: the host writes into the block.)
    let r = unsafe { cortex_m_semihosting::syscall1(nr::GET_CMDLINE, block.as_mut_ptr() as usize) };
    (r == 0).then_some(block[1].min(buf.len()))
}

/// The host's `errno` of the last failed call.
fn errno() -> usize {
    // SAFETY: ERRNO takes no argument.
    unsafe { cortex_m_semihosting::syscall1(nr::ERRNO, 0) }
}

/// A host file open for reading.
pub struct File(usize);

/// A failed host call: the host's errno, displayed as Rust's `io::Error` displays it on Linux.
#[derive(Clone, Copy, Debug)]
pub struct OsError(pub usize);

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self.0 {
            1 => "Operation not permitted",
            2 => "No such file or directory",
            5 => "Input/output error",
            13 => "Permission denied",
            20 => "Not a directory",
            21 => "Is a directory",
            24 => "Too many open files",
            36 => "File name too long",
            _ => "Unknown error",
        };
        write!(f, "{text} (os error {})", self.0)
    }
}

impl File {
    /// Opens `path_nul` (the path followed by a NUL byte) for binary reading.
    pub fn open(path_nul: &[u8]) -> Result<File, OsError> {
        let Some((&0, path)) = path_nul.split_last() else {
            return Err(OsError(22));
        };
        let block = [path_nul.as_ptr() as usize, nr::open::R_BINARY, path.len()];
        // SAFETY: OPEN reads the NUL-terminated path (`block[2]` bytes before the NUL).
        let h = unsafe { cortex_m_semihosting::syscall(nr::OPEN, &block) };
        if h == usize::MAX {
            return Err(OsError(errno()));
        }
        Ok(File(h))
    }

    /// Reads up to `buf.len()` bytes; 0 at the end of the file.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, OsError> {
        let block = [self.0, buf.as_mut_ptr() as usize, buf.len()];
        // SAFETY: READ writes at most `block[2]` bytes to `block[1]`, a live buffer; it returns
        // the number of bytes NOT read.
        let left = unsafe { cortex_m_semihosting::syscall(nr::READ, &block) };
        if left > buf.len() {
            return Err(OsError(errno()));
        }
        Ok(buf.len() - left)
    }

    /// Back to the first byte.
    pub fn rewind(&mut self) -> Result<(), OsError> {
        let block = [self.0, 0];
        // SAFETY: SEEK takes the handle and an absolute offset.
        let r = unsafe { cortex_m_semihosting::syscall(nr::SEEK, &block) };
        if r != 0 {
            return Err(OsError(errno()));
        }
        Ok(())
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let block = [self.0];
        // SAFETY: CLOSE takes a handle this value owns.
        unsafe { cortex_m_semihosting::syscall(nr::CLOSE, &block) };
    }
}

/// The host's stdout (`:tt` opened for writing).
pub fn stdout() -> Option<hio::HostStream> {
    hio::hstdout().ok()
}

/// The host's stderr (`:tt` opened for appending).
pub fn stderr() -> Option<hio::HostStream> {
    hio::hstderr().ok()
}

/// Ends the program with `status` as the host process's exit status.
pub fn exit(status: u8) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, status as usize];
    // SAFETY: EXIT_EXTENDED reads the two-word block; it does not return under QEMU.
    unsafe { cortex_m_semihosting::syscall(SYS_EXIT_EXTENDED, &block) };
    loop {
        cortex_m::asm::bkpt();
    }
}
