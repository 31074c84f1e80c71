//! Rows parsed on a reader thread, handed to the analysis in batches.
//!
//! A driver with two CPUs splits and parses the CSV on a second thread ([`RowBatch::push_event`])
//! while the analysis takes the rows already parsed ([`WindowAnalyzer::push_batch`]). The calls
//! the analysis gets, in the same order, are those [`WindowAnalyzer::write`] makes on the same
//! bytes, so the result is identical. The two floats of a sample (power, utilization) are parsed
//! on the analysis side, which evens out the two threads' work. A batch is recycled: once its
//! vectors have grown to a batch's size, filling it again allocates nothing.

use super::*;

/// One reader event, in file order.
#[derive(Clone, Copy, Debug)]
enum Parsed {
    /// A data row ([`ParsedRow::from_row_deferred`]) and three offsets `a ≤ b ≤ c` into its
    /// batch's `text`: a MARK's label is `text[a..b]`; a SAMPLE's gpu_power_W and gpu_util_pct
    /// texts are `text[a..b]` and `text[b..c]` (empty when absent: both parse to `None`).
    Row(ParsedRow, u32, u32, u32),
    /// A header line: its line, and whether it names the columns rows need.
    Header(u64, bool),
    /// A record cut short by an unclosed quote, with the quote's line.
    Quote(u64),
    /// A record skipped as over-long, with its line.
    Bad(u64),
}

/// Parsed rows and the texts they point into.
#[derive(Debug, Default)]
pub struct RowBatch {
    rows: Vec<Parsed>,
    text: Vec<u8>,
}

impl RowBatch {
    /// An empty batch with room for `rows` events.
    pub fn with_capacity(rows: usize) -> RowBatch {
        RowBatch {
            rows: Vec::with_capacity(rows),
            text: Vec::new(),
        }
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.text.clear();
    }

    /// Adds what `reader` just returned (`ev`); `full`: the analysis is not reference-only
    /// ([`WindowAnalyzer::reference_only`]), so every field it uses is parsed. Events that carry
    /// nothing (`NeedsInput`, `End`) are not added.
    #[inline]
    pub fn push_event(&mut self, reader: &TraceCsvReader, ev: CsvEvent, full: bool) {
        match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            CsvEvent::Header => self
                .rows
                .push(Parsed::Header(reader.header_line(), reader.header_usable())),
            CsvEvent::UnbalancedQuote { line } => self.rows.push(Parsed::Quote(line)),
            CsvEvent::BadRow { line } => self.rows.push(Parsed::Bad(line)),
            CsvEvent::Row => {
                let row = reader.row();
                let p = ParsedRow::from_row_deferred(&row, full);
                let text = &mut self.text;
                let a = text.len() as u32;
                let b = match p.kind {
                    ParsedKind::Mark => {
                        text.extend_from_slice(row.label());
                        text.len() as u32
                    }
                    ParsedKind::Sample => {
                        text.extend_from_slice(row.raw(Col::GpuPowerW).unwrap_or(b""));
                        let b = text.len() as u32;
                        text.extend_from_slice(row.raw(Col::GpuUtilPct).unwrap_or(b""));
                        b
                    }
                    ParsedKind::Other | ParsedKind::Bad => a,
                };
                let c = text.len() as u32;
                self.rows.push(Parsed::Row(p, a, b, c));
            }
        }
    }
}

impl WindowAnalyzer {
    /// Adds the events of a batch filled on another thread ([`RowBatch::push_event`]), with the
    /// same `full` as this analysis's. The bytes the batch came from are not also written.
    pub fn push_batch(&mut self, batch: &RowBatch) {
        for ev in &batch.rows {
            match *ev {
                Parsed::Row(p, a, b, c) => {
                    let (a, b, c) = (a as usize, b as usize, c as usize);
                    if p.kind == ParsedKind::Sample {
                        let mut p = p;
                        let power = &batch.text[a..b];
                        p.power_w = crate::pynum::parse_py_float(power);
                        p.power_bad = power_text_is_bad(power, p.power_w);
                        p.util_pct = crate::pynum::parse_py_float(&batch.text[b..c]);
                        self.push_parsed(&p, b"");
                    } else {
                        self.push_parsed(&p, &batch.text[a..b]);
                    }
                }
                Parsed::Header(line, usable) => self.add_header(line, usable),
                Parsed::Quote(line) => self.add_unbalanced_quote(line),
                Parsed::Bad(line) => self.add_bad_row(line),
            }
        }
    }
}
