//! `flinch-trace summarize` (placeholder: filled by its issue, see README 'Status').
use crate::CmdResult;

/// Arguments of `flinch-trace summarize`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> CmdResult {
    Err("flinch-trace summarize: not implemented yet".to_string())
}
