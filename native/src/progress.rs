//! A one-line progress display on stderr for long reads: shown only when stderr is a terminal and
//! the file is large, redrawn when the whole percentage changes, erased at the end.
use std::io::IsTerminal;

/// Files at least this large get a progress line.
const MIN_BYTES: u64 = 64 << 20;

/// Progress of one file read, as `"{what}: NN% of M MiB"` on stderr.
pub struct ProgressLine {
    what: &'static str,
    total: u64,
    shown: Option<u64>,
    on: bool,
}

impl ProgressLine {
    /// A progress line for a file of `total` bytes; silent unless stderr is a terminal and the
    /// file is large.
    pub fn new(what: &'static str, total: u64) -> ProgressLine {
        let on = total >= MIN_BYTES && std::io::stderr().is_terminal();
        ProgressLine::with(what, total, on)
    }

    fn with(what: &'static str, total: u64, on: bool) -> ProgressLine {
        ProgressLine {
            what,
            total,
            shown: None,
            on,
        }
    }

    /// The text to draw after `done` bytes, or `None` when nothing changed.
    fn text(&mut self, done: u64) -> Option<String> {
        if !self.on {
            return None;
        }
        let pct = (done.min(self.total) * 100) / self.total.max(1);
        if self.shown == Some(pct) {
            return None;
        }
        self.shown = Some(pct);
        Some(format!(
            "\r{}: {pct:3}% of {} MiB",
            self.what,
            self.total >> 20
        ))
    }

    /// Redraws the line after `done` bytes of the file were read.
    pub fn update(&mut self, done: u64) {
        if let Some(t) = self.text(done) {
            eprint!("{t}");
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        if self.on && self.shown.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProgressLine;

    #[test]
    fn redraws_only_when_the_percentage_changes() {
        let mut p = ProgressLine::with("trace", 200 << 20, true);
        assert_eq!(p.text(0).as_deref(), Some("\rtrace:   0% of 200 MiB"));
        assert_eq!(p.text(1), None);
        assert_eq!(
            p.text(100 << 20).as_deref(),
            Some("\rtrace:  50% of 200 MiB")
        );
        assert_eq!(
            p.text(u64::MAX).as_deref(),
            Some("\rtrace: 100% of 200 MiB")
        );
        p.on = false; // nothing to erase on drop in a test
    }

    #[test]
    fn silent_when_off() {
        let mut p = ProgressLine::with("trace", 200 << 20, false);
        assert_eq!(p.text(100 << 20), None);
    }
}
