//! Texts that `flinch-trace analyze` and the firmware image (embedded/, docs/embedded.md) both
//! print, defined once so that they cannot drift: tests/embedded/run.sh compares the two
//! programs' stderr byte for byte.
use core::fmt;

/// The CLI's prefix for its own errors.
pub const ANALYZE_CLI: &str = "flinch-trace analyze";

/// The error when both marks were found but one arrived beyond the reorder horizon.
pub const MARK_TOO_LATE: &str = "flinch-trace analyze: a mark of the window arrived too late in the file to be placed in time order (see the warning above)";

/// The note after the reference's lines when they mix the samples of this many GPUs.
#[derive(Clone, Copy, Debug)]
pub struct MixedGpusNote(pub usize);

impl fmt::Display for MixedGpusNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "note: {} GPUs in this file; these lines mix their samples as the reference does: use --gpu N or --json",
            self.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts() {
        assert!(MARK_TOO_LATE.starts_with(ANALYZE_CLI));
        assert_eq!(
            std::format!("{}", MixedGpusNote(3)),
            "note: 3 GPUs in this file; these lines mix their samples as the reference does: use --gpu N or --json"
        );
    }
}
