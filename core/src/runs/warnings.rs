//! The bounded warning lists a summarized run carries: per kind a count and the first line
//! numbers, plus plain notes.
use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

/// Line numbers listed per warning kind; the rest are only counted.
const LINES_LISTED: usize = 5;

/// Warnings of one file, grouped by kind, each with a count and its first line numbers.
#[derive(Default, Debug)]
pub struct Warnings {
    kinds: Vec<(String, usize, Vec<usize>)>,
    plain: Vec<String>,
}

impl Warnings {
    /// Counts one occurrence of `kind` at `line` (1-based).
    pub fn at_line(&mut self, kind: &str, line: usize) {
        match self.kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => {
                k.1 += 1;
                if k.2.len() < LINES_LISTED {
                    k.2.push(line);
                }
            }
            None => self.kinds.push((kind.to_owned(), 1, vec![line])),
        }
    }

    /// Adds a warning that is not tied to lines.
    pub fn note(&mut self, text: String) {
        self.plain.push(text);
    }

    /// Adds `other`'s warnings after these, as if noted here in their order (a kind noted in
    /// both adds its count and lines).
    pub fn extend(&mut self, other: Warnings) {
        self.plain.extend(other.plain);
        for (kind, count, lines) in other.kinds {
            match self.kinds.iter_mut().find(|k| k.0 == kind) {
                Some(k) => {
                    k.1 += count;
                    let room = LINES_LISTED.saturating_sub(k.2.len());
                    k.2.extend(lines.into_iter().take(room));
                }
                None => self.kinds.push((kind, count, lines)),
            }
        }
    }

    /// One line per warning, e.g. `r-host/telemetry.jsonl: skipped, missing unix: 3 lines (4, 9, 12)`.
    pub fn render(&self, file: &str) -> Vec<String> {
        let mut out: Vec<String> = self.plain.clone();
        for (kind, count, lines) in &self.kinds {
            let listed: Vec<String> = lines.iter().map(usize::to_string).collect();
            let more = if *count > lines.len() { ", …" } else { "" };
            let noun = if *count == 1 { "line" } else { "lines" };
            out.push(alloc::format!(
                "{file}: {kind}: {count} {noun} ({}{more})",
                listed.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_count_all_lines_and_list_five() {
        let mut w = Warnings::default();
        for line in 1..=7 {
            w.at_line("bad", line);
        }
        w.at_line("odd", 9);
        w.note("plain first".to_owned());
        assert_eq!(
            w.render("f"),
            [
                "plain first",
                "f: bad: 7 lines (1, 2, 3, 4, 5, …)",
                "f: odd: 1 line (9)"
            ]
        );
    }
}
