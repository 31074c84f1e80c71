//! flinch-trace as a library: the CLI's subcommands (`Args` + `run`) and the functions that
//! compute their JSON for given options, which the CLI (`main.rs`) and the Python wheel
//! (`python/`, docs/python.md) both call, so each result has one code path.
//!
//! This crate is a thin adapter: I/O, the samplers and presentation. Every computation lives
//! once, in `flinch-core`.

pub mod analyze;
pub mod input;
pub mod mark;
pub mod merge;
pub mod output;
pub mod progress;
pub mod record;
pub mod summarize;
pub mod trace;
pub mod web;

/// What a subcommand returns: an exit code, or a message printed as-is on stderr with exit 1.
pub type CmdResult = Result<std::process::ExitCode, String>;
