//! flinch-trace as a library: the CLI's subcommands (`Args` + `run`) and the functions that
//! compute their JSON for given options, which the CLI (`main.rs`) and the Python wheel
//! (`python/`, docs/python.md) both call, so each result has one code path.
//!
//! This crate is a thin adapter: I/O, the samplers and presentation. Every computation lives
//! once, in `flinch-core`.

pub mod analyze;
pub mod diff;
/// The std driver's input and output files, re-exported so that `crate::input` and
/// `crate::output` name them here as before.
pub use flinch_host::{input, output};
pub mod mark;
pub mod merge;
pub mod progress;
pub mod record;
pub mod summarize;
pub mod trace;
pub mod values;
pub mod web;

/// Why a subcommand failed; the kind decides the exit status (docs/cli.md, "Exit status").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmdError {
    /// Bad or conflicting options, or a value that does not parse or is out of range: exit 2,
    /// as clap's own usage errors.
    Usage(String),
    /// The input cannot be read or is unusable, or the work failed: exit 1.
    Runtime(String),
}

impl CmdError {
    /// The exit status: 2 for a usage error, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CmdError::Usage(_) => 2,
            CmdError::Runtime(_) => 1,
        }
    }

    /// The message, printed as-is on stderr.
    pub fn message(&self) -> &str {
        match self {
            CmdError::Usage(m) | CmdError::Runtime(m) => m,
        }
    }
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for CmdError {}

/// A message alone is a runtime error (exit 1): the input or the work failed.
impl From<String> for CmdError {
    fn from(message: String) -> Self {
        CmdError::Runtime(message)
    }
}

impl From<&str> for CmdError {
    fn from(message: &str) -> Self {
        CmdError::Runtime(message.to_string())
    }
}

/// What a subcommand returns: an exit code, or the error whose message is printed as-is on
/// stderr with its exit status ([`CmdError::exit_code`]).
pub type CmdResult = Result<std::process::ExitCode, CmdError>;
