//! `flinch-trace web` (placeholder: filled by its issue, see README 'Status').
use crate::CmdResult;

/// Arguments of `flinch-trace web`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> CmdResult {
    Err("flinch-trace web: not implemented yet".to_string())
}
