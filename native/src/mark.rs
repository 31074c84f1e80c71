//! `flinch-trace mark` (placeholder: filled by its issue, see README 'Status').
use crate::CmdResult;

/// Arguments of `flinch-trace mark`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> CmdResult {
    Err("flinch-trace mark: not implemented yet".to_string())
}
