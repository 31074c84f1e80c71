//! The trace.csv format (docs/formats.md), defined once: its columns ([`COLUMNS`]), how a label is
//! written ([`push_label`]), and the reader over csv-core, a push parser that finds columns by
//! header name.
//!
//! The caller owns the input. [`TraceCsvReader::read`] consumes bytes and returns a [`CsvEvent`]
//! plus the number of bytes consumed; an empty input means end of data. After
//! [`CsvEvent::Row`], [`TraceCsvReader::row`] borrows the row's fields from the reader's fixed
//! record buffer, so reading never allocates, whatever the file size.
//!
//! Header handling follows Python's `csv.DictReader`, which the reference reader uses: the first
//! record names the columns. A later record that repeats the header (files appended with `cat`)
//! re-maps the columns by name and is otherwise skipped, as the reference skips any row whose
//! `row_type` is neither `SAMPLE` nor `MARK`. Blank lines are skipped. A record longer than the
//! record buffer is reported as [`CsvEvent::BadRow`] with its line number, and reading goes on.
//!
//! Numbers parse as Python's `float()` and `int()` parse them ([`crate::pynum`]: surrounding whitespace,
//! `_` between digits, `nan`/`inf`), so the reference-exact figures see the same values.

use crate::pynum::{parse_py_float, parse_py_int};
use csv_core::{ReadRecordResult, Reader};

/// Bytes of one record kept at once (all fields together). Longer records are bad rows.
pub const RECORD_BYTES: usize = 4096;
/// Fields of one record kept at once. Records with more fields are bad rows.
pub const MAX_FIELDS: usize = 64;

/// The high bit of each byte of `x` (little-endian) that is ≤ b','. Exact per byte: adding 0x53
/// to the low seven bits sets the high bit when they exceed 0x2C and never carries into the next
/// byte; bytes ≥ 0x80 are excluded by their own high bit.
#[inline(always)]
fn low_bytes(x: u64) -> u64 {
    const LO7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HI: u64 = 0x8080_8080_8080_8080;
    let t = (x & LO7).wrapping_add(0x5353_5353_5353_5353);
    !(t | x) & HI
}

/// A column the reader knows by name (docs/formats.md gives the units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Col {
    /// `t_mono_ns`: CLOCK_MONOTONIC, ns.
    TMonoNs,
    /// `t_wall_ns`: CLOCK_REALTIME, ns.
    TWallNs,
    /// `row_type`: `SAMPLE` or `MARK`.
    RowType,
    /// `label`: the mark's label.
    Label,
    /// `gpu_power_W`.
    GpuPowerW,
    /// `gpu_util_pct`.
    GpuUtilPct,
    /// `gpu_mem_util_pct`.
    GpuMemUtilPct,
    /// `gpu_sm_clock_MHz`.
    GpuSmClockMhz,
    /// `gpu_temp_C`.
    GpuTempC,
    /// `rapl_energy_uj`: first RAPL package zone, µJ, wraps.
    RaplEnergyUj,
    /// `gpu_index`: NVML index of the GPU a sample belongs to.
    GpuIndex,
    /// `gpu_energy_mJ`: NVML cumulative energy counter, mJ.
    GpuEnergyMj,
    /// `gpu_mem_used_MiB`.
    GpuMemUsedMib,
    /// `gpu_throttle_reasons`: NVML clocks-event bitmask.
    GpuThrottleReasons,
    /// `host_cpu_pct`.
    HostCpuPct,
    /// `host_mem_used_MiB`.
    HostMemUsedMib,
    /// `host_mem_available_MiB`.
    HostMemAvailableMib,
    /// `rapl_max_energy_range_uj`: the wrap point of `rapl_energy_uj`.
    RaplMaxEnergyRangeUj,
    /// `mark_thread`: on a MARK row, the key its pair is matched within (the sending thread;
    /// see docs/nvtx.md). Empty for marks that pair with any unkeyed mark.
    MarkThread,
}

/// Number of known columns.
pub const KNOWN_COLS: usize = 19;

/// The columns `flinch-trace record` writes, in this order, indexed by [`Col`]; one
/// `rapl_<zone>_uj` column per further RAPL zone follows them. The first
/// [`REFERENCE_COLUMNS`] are the reference recorder's, in its order, so that the reference
/// analyzer reads the files.
pub const COLUMNS: [&str; KNOWN_COLS] = [
    "t_mono_ns",
    "t_wall_ns",
    "row_type",
    "label",
    "gpu_power_W",
    "gpu_util_pct",
    "gpu_mem_util_pct",
    "gpu_sm_clock_MHz",
    "gpu_temp_C",
    "rapl_energy_uj",
    "gpu_index",
    "gpu_energy_mJ",
    "gpu_mem_used_MiB",
    "gpu_throttle_reasons",
    "host_cpu_pct",
    "host_mem_used_MiB",
    "host_mem_available_MiB",
    "rapl_max_energy_range_uj",
    "mark_thread",
];

/// How many of [`COLUMNS`] the reference recorder writes.
pub const REFERENCE_COLUMNS: usize = 10;

impl Col {
    /// The header name of this column.
    pub fn name(self) -> &'static str {
        COLUMNS[self as usize]
    }
}

/// Appends `label` as one CSV field, quoted by csv-core where a reader needs it (a `,`, `"`, CR
/// or LF), and also when it starts or ends with a space, which some readers trim.
#[cfg(feature = "alloc")]
pub fn push_label(buf: &mut alloc::vec::Vec<u8>, label: &str) {
    use csv_core::{QuoteStyle, WriterBuilder};
    if label.is_empty() {
        // csv-core would write `""` for a record of one empty field; this is not the record.
        return;
    }
    let style = if label.starts_with(' ') || label.ends_with(' ') {
        QuoteStyle::Always
    } else {
        QuoteStyle::Necessary
    };
    let mut w = WriterBuilder::new().quote_style(style).build();
    let start = buf.len();
    // csv-core's bound: two quotes, and every byte doubled at most.
    buf.resize(start + 2 + 2 * label.len(), 0);
    let (_, _, n) = w.field(label.as_bytes(), &mut buf[start..]);
    let (_, closing) = w.finish(&mut buf[start + n..]);
    buf.truncate(start + n + closing);
}

const ABSENT: u16 = u16::MAX;

/// Where each known column sits in the current header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    idx: [u16; KNOWN_COLS],
    /// Number of `rapl_<zone>_uj` columns beyond the first zone (kept in the file, not analyzed).
    pub rapl_zone_cols: u16,
    /// Number of fields in the header.
    pub fields: u16,
}

impl Columns {
    const NONE: Columns = Columns {
        idx: [ABSENT; KNOWN_COLS],
        rapl_zone_cols: 0,
        fields: 0,
    };

    /// Whether the header has column `c`.
    pub fn has(&self, c: Col) -> bool {
        self.idx[c as usize] != ABSENT
    }

    /// Field position of column `c`, if present.
    pub fn position(&self, c: Col) -> Option<usize> {
        let i = self.idx[c as usize];
        (i != ABSENT).then_some(i as usize)
    }
}

/// What one call to [`TraceCsvReader::read`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsvEvent {
    /// All input was consumed; call again with more (or with an empty slice at end of data).
    NeedsInput,
    /// A header line was read (the first record, or a repeated one). Columns are re-mapped.
    Header,
    /// A data row is ready: borrow it with [`TraceCsvReader::row`].
    Row,
    /// A record was skipped because it does not fit the record buffer; its first line is given.
    BadRow {
        /// 1-based line where the record starts.
        line: u64,
    },
    /// A quoted field opened and never closed: csv reads the rest of the file as that field.
    /// The record is skipped; the line is where the quote opens.
    UnbalancedQuote {
        /// 1-based line of the opening quote.
        line: u64,
    },
    /// End of data.
    End,
}

/// The trace.csv push reader. Fixed-size buffers; never allocates.
pub struct TraceCsvReader {
    rdr: Reader,
    out: [u8; RECORD_BYTES],
    ends: [usize; MAX_FIELDS],
    nout: usize,
    nends: usize,
    overflow: bool,
    record_line: u64,
    in_record: bool,
    cols: Columns,
    header_seen: bool,
    rows: u64,
    ended: bool,
    last_byte: u8,
    fast_lines: u64,
    fast: bool,
    sep: usize,
    /// Quoting state of the bytes csv-core consumed (see [`TraceCsvReader::track_quotes`]).
    quote: Quote,
    /// Line of the quote that opened the current quoted field.
    quote_line: u64,
    /// Whether the current record has begun (past any blank lines).
    rec_started: bool,
    /// Line where the current record begins.
    rec_first_line: u64,
    /// Line where the last header record begins.
    header_line: u64,
}

/// Where the bytes read through csv-core stand, with csv-core's default quoting (`"` opens a
/// quoted field at a field's start; `""` inside one is a quote).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    /// At the start of a field (or between records).
    FieldStart,
    /// In an unquoted field.
    Unquoted,
    /// In a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: it closes the field, or a second quote follows.
    ClosingOrDoubled,
}

impl Default for TraceCsvReader {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceCsvReader {
    /// A reader expecting the header as the first record.
    pub fn new() -> TraceCsvReader {
        TraceCsvReader {
            rdr: Reader::new(),
            out: [0; RECORD_BYTES],
            ends: [0; MAX_FIELDS],
            nout: 0,
            nends: 0,
            overflow: false,
            record_line: 1,
            in_record: false,
            cols: Columns::NONE,
            header_seen: false,
            rows: 0,
            ended: false,
            last_byte: 0,
            fast_lines: 0,
            fast: true,
            sep: 0,
            quote: Quote::FieldStart,
            quote_line: 0,
            rec_started: false,
            rec_first_line: 1,
            header_line: 1,
        }
    }

    /// Back to the state of [`TraceCsvReader::new`], in place (the record buffer is not
    /// copied: a reader kept in a static can be reused without a temporary on the stack).
    pub fn reset(&mut self) {
        // Every field named (no `..`): a field added to the reader must be reset here too.
        let TraceCsvReader {
            rdr,
            out: _,
            ends: _,
            nout,
            nends,
            overflow,
            record_line,
            in_record,
            cols,
            header_seen,
            rows,
            ended,
            last_byte,
            fast_lines,
            fast: _,
            sep,
            quote,
            quote_line,
            rec_started,
            rec_first_line,
            header_line,
        } = self;
        rdr.reset();
        (*nout, *nends, *overflow) = (0, 0, false);
        (*record_line, *in_record) = (1, false);
        (*cols, *header_seen, *rows, *ended) = (Columns::NONE, false, 0, false);
        (*last_byte, *fast_lines, *sep) = (0, 0, 0);
        (*quote, *quote_line) = (Quote::FieldStart, 0);
        (*rec_started, *rec_first_line, *header_line) = (false, 1, 1);
    }

    /// Follows the quoting of `bytes` (just consumed by csv-core, the first on line `line`), to
    /// tell a record cut short by an unclosed quote and where it opened, and where each record
    /// begins. Only the csv-core path sees quotes (the fast path takes lines without any).
    fn track_quotes(&mut self, bytes: &[u8], mut line: u64) {
        for &b in bytes {
            if !self.rec_started && b != b'\n' && b != b'\r' {
                self.rec_started = true;
                self.rec_first_line = line;
            }
            self.quote = match (self.quote, b) {
                (Quote::Quoted, b'"') => Quote::ClosingOrDoubled,
                (Quote::Quoted, _) => Quote::Quoted,
                (Quote::FieldStart, b'"') => {
                    self.quote_line = line;
                    Quote::Quoted
                }
                (Quote::ClosingOrDoubled, b'"') => Quote::Quoted,
                (_, b',' | b'\n' | b'\r') => Quote::FieldStart,
                _ => Quote::Unquoted,
            };
            if b == b'\n' {
                line += 1;
            }
        }
    }

    /// 1-based line where the last header record begins.
    pub fn header_line(&self) -> u64 {
        self.header_line
    }

    /// Whether the current header names the two columns every row needs (`t_mono_ns` and
    /// `row_type`). False when the first line is data (no header), or was over-long.
    pub fn header_usable(&self) -> bool {
        self.cols.has(Col::TMonoNs) && self.cols.has(Col::RowType)
    }

    /// A reader that sends every byte through csv-core (the oracle of the fast path's tests).
    #[cfg(test)]
    fn without_fast_path() -> TraceCsvReader {
        TraceCsvReader {
            fast: false,
            ..TraceCsvReader::new()
        }
    }

    /// The 1-based line the reader is on.
    fn line_now(&self) -> u64 {
        self.rdr.line() + self.fast_lines
    }

    /// One byte ≤ ',' of a fast-path line, at `at` of `inp`: `Some(true)` at the line end
    /// ('\n'); a comma ends a field; a quote, a CR not before '\n', or too many fields gives
    /// `None` (the line goes to csv-core); anything else is field text.
    #[inline(always)]
    fn fast_byte(&mut self, inp: &[u8], at: usize, nends: &mut usize) -> Option<bool> {
        let c = inp[at];
        // Commas first: nine of ten flagged bytes in a trace row.
        if c == b',' {
            if *nends + 1 >= MAX_FIELDS {
                return None;
            }
            self.ends[*nends] = at;
            *nends += 1;
            return Some(false);
        }
        match c {
            b'\n' => Some(true),
            b'"' => None,
            b'\r' => (inp.get(at + 1) == Some(&b'\n')).then_some(false),
            _ => Some(false),
        }
    }

    /// Fast path for whole lines at a record boundary with no quote and no lone CR: they split
    /// on commas exactly as csv-core would split them, without its per-byte state machine.
    /// Returns `None` to hand the input to csv-core (quotes, a partial line, over-long rows).
    fn fast_line(&mut self, input: &[u8], consumed: &mut usize) -> Option<CsvEvent> {
        loop {
            let inp = &input[*consumed..];
            // One pass finds the commas and the line end, eight bytes at a time: `low_bytes`
            // flags the bytes ≤ ',' of a word ('\n', ',', '"', '\r' among them), `eq_bytes`
            // the commas among them; digits, letters, '.' and '-' (nearly all of a row) cost
            // nothing, and a comma costs only the store of its position.
            let mut nends = 0;
            let mut at_nl = None;
            let mut pos = 0;
            'scan: while pos + 8 <= inp.len() {
                let w = &inp[pos..pos + 8];
                let mut m = low_bytes(u64::from_le_bytes([
                    w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
                ]));
                while m != 0 {
                    let at = pos + (m.trailing_zeros() / 8) as usize;
                    m &= m - 1;
                    if self.fast_byte(inp, at, &mut nends)? {
                        at_nl = Some(at);
                        break 'scan;
                    }
                }
                pos += 8;
                if pos > RECORD_BYTES + 2 {
                    return None;
                }
            }
            let nl = match at_nl {
                Some(nl) => nl,
                None => loop {
                    // The tail, byte by byte; no line end in the input: a partial line.
                    if pos >= inp.len() {
                        return None;
                    }
                    if inp[pos] <= b',' && self.fast_byte(inp, pos, &mut nends)? {
                        break pos;
                    }
                    pos += 1;
                },
            };
            let line = &inp[..nl];
            let body = line.strip_suffix(b"\r").unwrap_or(line);
            if body.is_empty() {
                // A blank line (csv-core skips it too).
                *consumed += nl + 1;
                self.fast_lines += 1;
                self.last_byte = b'\n';
                continue;
            }
            if body.len() > RECORD_BYTES {
                return None;
            }
            // The line is copied whole, commas included: field i ends at ends[i] and the next
            // starts one byte later (`sep`).
            self.ends[nends] = body.len();
            nends += 1;
            let nout = body.len();
            self.out[..nout].copy_from_slice(body);
            self.sep = 1;
            self.nout = nout;
            self.nends = nends;
            self.overflow = false;
            self.record_line = self.line_now();
            self.fast_lines += 1;
            self.last_byte = b'\n';
            *consumed += nl + 1;
            if self.is_header() {
                self.map_header();
                self.header_line = self.record_line;
                return Some(CsvEvent::Header);
            }
            self.rows += 1;
            return Some(CsvEvent::Row);
        }
    }

    /// The current column mapping.
    pub fn columns(&self) -> &Columns {
        &self.cols
    }

    /// Whether a header has been read.
    pub fn header_seen(&self) -> bool {
        self.header_seen
    }

    /// Data rows returned so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Reads from `input` until one event; returns it and the number of bytes consumed.
    /// An empty `input` means end of data.
    pub fn read(&mut self, input: &[u8]) -> (CsvEvent, usize) {
        if self.ended {
            return (CsvEvent::End, 0);
        }
        let mut consumed = 0;
        if self.fast && self.header_seen && !self.in_record {
            let ev = self.fast_line(input, &mut consumed);
            if let Some(ev) = ev {
                return (ev, consumed);
            }
            if consumed == input.len() && consumed > 0 {
                // Only blank lines were left: an empty slice must not reach csv-core (it means EOF).
                return (CsvEvent::NeedsInput, consumed);
            }
        }
        loop {
            if !self.in_record {
                self.in_record = true;
                self.sep = 0;
                self.nout = 0;
                self.nends = 0;
                self.overflow = false;
            }
            let inp = &input[consumed..];
            let line0 = self.line_now();
            let (res, nin, nout, nend) = if self.overflow {
                // Discard the rest of an over-long record, reusing the buffers.
                self.rdr.read_record(inp, &mut self.out, &mut self.ends)
            } else {
                self.rdr.read_record(
                    inp,
                    &mut self.out[self.nout..],
                    &mut self.ends[self.nends..],
                )
            };
            if nin > 0 {
                self.last_byte = inp[nin - 1];
                self.track_quotes(&inp[..nin], line0);
            }
            consumed += nin;
            if !self.overflow {
                self.nout += nout;
                self.nends += nend;
            }
            match res {
                ReadRecordResult::InputEmpty => {
                    if inp.is_empty() {
                        // csv-core keeps going until End on empty input.
                        continue;
                    }
                    return (CsvEvent::NeedsInput, consumed);
                }
                ReadRecordResult::OutputFull | ReadRecordResult::OutputEndsFull => {
                    self.overflow = true;
                }
                ReadRecordResult::Record => {
                    self.in_record = false;
                    // csv-core's line() is 1-based and counts '\n' consumed; the record's first
                    // line is its last line less the newlines inside quoted fields (counted
                    // only when asked, see `Row::line`).
                    self.record_line = self.line_now() - u64::from(self.last_byte == b'\n');
                    let first_line = if self.rec_started {
                        self.rec_first_line
                    } else {
                        self.record_line
                    };
                    self.rec_started = false;
                    // Still in quotes: only at the end of the input, after swallowing the rest.
                    if matches!(self.quote, Quote::Quoted) {
                        self.quote = Quote::FieldStart;
                        return (
                            CsvEvent::UnbalancedQuote {
                                line: self.quote_line,
                            },
                            consumed,
                        );
                    }
                    self.quote = Quote::FieldStart;
                    if self.overflow {
                        if !self.header_seen {
                            // An over-long first line is no header: no column is known, and
                            // later lines are not taken for the header.
                            self.cols = Columns::NONE;
                            self.header_seen = true;
                            self.header_line = first_line;
                            return (CsvEvent::Header, consumed);
                        }
                        return (CsvEvent::BadRow { line: first_line }, consumed);
                    }
                    if !self.header_seen || self.is_header() {
                        self.map_header();
                        self.header_line = first_line;
                        return (CsvEvent::Header, consumed);
                    }
                    self.rows += 1;
                    return (CsvEvent::Row, consumed);
                }
                ReadRecordResult::End => {
                    self.ended = true;
                    return (CsvEvent::End, consumed);
                }
            }
        }
    }

    fn field_raw(&self, i: usize) -> &[u8] {
        if i >= self.nends {
            return b"";
        }
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1] + self.sep
        };
        &self.out[start..self.ends[i]]
    }

    #[inline(always)]
    fn is_header(&self) -> bool {
        // A repeated header has `row_type` under the row_type column and `t_mono_ns` under t_mono.
        match (
            self.cols.position(Col::RowType),
            self.cols.position(Col::TMonoNs),
        ) {
            (Some(r), Some(t)) => {
                self.field_raw(r) == b"row_type" && self.field_raw(t) == b"t_mono_ns"
            }
            _ => false,
        }
    }

    fn map_header(&mut self) {
        let mut cols = Columns::NONE;
        cols.fields = self.nends as u16;
        for i in 0..self.nends {
            let name = self.field_raw(i);
            if let Some(k) = COLUMNS.iter().position(|n| n.as_bytes() == name) {
                // DictReader keeps the last column of a duplicated name.
                cols.idx[k] = i as u16;
            } else if name.starts_with(b"rapl_") && name.ends_with(b"_uj") {
                cols.rapl_zone_cols += 1;
            }
        }
        self.cols = cols;
        self.header_seen = true;
    }

    /// The row just read (valid after [`CsvEvent::Row`] until the next call to `read`).
    pub fn row(&self) -> Row<'_> {
        Row {
            out: &self.out[..self.nout],
            ends: &self.ends[..self.nends],
            sep: self.sep,
            cols: &self.cols,
            last_line: self.record_line,
        }
    }
}

/// One data row, borrowed from the reader.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    out: &'a [u8],
    ends: &'a [usize],
    sep: usize,
    cols: &'a Columns,
    last_line: u64,
}

/// The kind of a row, by its `row_type` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// `SAMPLE`.
    Sample,
    /// `MARK`.
    Mark,
    /// Anything else (ignored, as the reference ignores it).
    Other,
}

impl<'a> Row<'a> {
    /// 1-based line where the row starts.
    pub fn line(&self) -> u64 {
        // Rows split by the fast path are one line; csv-core rows may hold quoted newlines.
        if self.sep == 1 {
            return self.last_line;
        }
        let inner = memchr::memchr_iter(b'\n', self.out).count() as u64;
        self.last_line.saturating_sub(inner).max(1)
    }

    /// The raw bytes of column `c`; `None` when the header lacks it or the row is short (as
    /// DictReader's `None` for missing trailing fields).
    #[inline]
    pub fn raw(&self, c: Col) -> Option<&'a [u8]> {
        // An absent column's index (u16::MAX) is past every row's last field (≤ MAX_FIELDS).
        let i = self.cols.idx[c as usize] as usize;
        if i >= self.ends.len() {
            return None;
        }
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1] + self.sep
        };
        self.out.get(start..self.ends[i])
    }

    /// Field `i` of the row (empty past the last field).
    pub fn field(&self, i: usize) -> &'a [u8] {
        if i >= self.ends.len() {
            return b"";
        }
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1] + self.sep
        };
        &self.out[start..self.ends[i]]
    }

    /// Number of fields in this row.
    pub fn fields(&self) -> usize {
        self.ends.len()
    }

    /// The row kind (exact, case-sensitive match as in the reference).
    #[inline]
    pub fn kind(&self) -> RowKind {
        match self.raw(Col::RowType) {
            Some(b"SAMPLE") => RowKind::Sample,
            Some(b"MARK") => RowKind::Mark,
            _ => RowKind::Other,
        }
    }

    /// `t_mono_ns` parsed as Python's `int()`; `None` if absent or unparseable.
    #[inline]
    pub fn t_mono_ns(&self) -> Option<i64> {
        self.raw(Col::TMonoNs).and_then(parse_py_int)
    }

    /// A column parsed as Python's `float()`; `None` when blank, absent or unparseable.
    #[inline]
    pub fn f64(&self, c: Col) -> Option<f64> {
        self.raw(c).and_then(parse_py_float)
    }

    /// A column parsed as Python's `int()`; `None` when blank, absent or unparseable.
    #[inline]
    pub fn i64(&self, c: Col) -> Option<i64> {
        self.raw(c).and_then(parse_py_int)
    }

    /// The label (empty when absent).
    #[inline]
    pub fn label(&self) -> &'a [u8] {
        self.raw(Col::Label).unwrap_or(b"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Rng, for_each_split};
    use std::string::String;
    use std::vec::Vec;

    /// Labels as CSV fields, the naive way: quoted when they hold `,`, `"`, CR or LF, or start
    /// or end with a space; inner quotes doubled.
    fn label_oracle(label: &str) -> String {
        let needs = label.contains([',', '"', '\r', '\n'])
            || label.starts_with(' ')
            || label.ends_with(' ');
        if needs {
            std::format!("\"{}\"", label.replace('"', "\"\""))
        } else {
            label.into()
        }
    }

    #[test]
    fn labels_are_written_as_the_oracle_quotes_them_and_read_back_whole() {
        let mut rng = Rng::from_env(12);
        let alphabet = [" ", ",", "\"", "\r", "\n", "a", "b", "é", "_", "#"];
        let mut labels: Vec<String> = ["", "a", "a b", " a", "a ", "\"", "a,b", "x\r\ny"]
            .iter()
            .map(|s| String::from(*s))
            .collect();
        for _ in 0..2000 {
            let n = rng.below(8) as usize;
            labels.push((0..n).map(|_| alphabet[rng.below(10) as usize]).collect());
        }
        for label in &labels {
            let mut buf = Vec::new();
            buf.extend_from_slice(b"t_mono_ns,row_type,label\n1,MARK,");
            let field_at = buf.len();
            push_label(&mut buf, label);
            assert_eq!(
                std::str::from_utf8(&buf[field_at..]).unwrap(),
                label_oracle(label),
                "{label:?}"
            );
            buf.extend_from_slice(b"\n");
            let mut rdr = TraceCsvReader::new();
            let mut got = None;
            drive(&mut rdr, &[&buf], |rdr, ev| {
                if ev == CsvEvent::Row {
                    let label = rdr.row().raw(Col::Label).unwrap_or_default();
                    got = Some(String::from_utf8(label.to_vec()).unwrap());
                }
            });
            assert_eq!(got.as_deref(), Some(label.as_str()), "{label:?}");
        }
    }

    /// Feeds `chunks` (then the empty end-of-input chunk) to `rdr`, calling `on_event` for every
    /// event up to and including `End`. `NeedsInput` must mean the chunk was used up.
    fn drive(
        rdr: &mut TraceCsvReader,
        chunks: &[&[u8]],
        mut on_event: impl FnMut(&TraceCsvReader, CsvEvent),
    ) {
        let mut chunks = chunks.iter().copied().chain(core::iter::once(&b""[..]));
        let mut cur: &[u8] = chunks.next().unwrap();
        loop {
            if cur.is_empty() {
                cur = chunks.next().unwrap_or(b"");
            }
            let (ev, n) = rdr.read(cur);
            cur = &cur[n..];
            if ev == CsvEvent::NeedsInput {
                assert!(cur.is_empty());
            }
            on_event(rdr, ev);
            if ev == CsvEvent::End {
                break;
            }
        }
    }

    /// What the reader gives for a file, as text (the oracle compares to this).
    fn read_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut rdr = TraceCsvReader::new();
        let mut out = Vec::new();
        drive(&mut rdr, chunks, |rdr, ev| match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            CsvEvent::Header => out.push(std::format!("H{}", rdr.columns().fields)),
            CsvEvent::BadRow { line } => out.push(std::format!("B{line}")),
            CsvEvent::UnbalancedQuote { line } => out.push(std::format!("Q{line}")),
            CsvEvent::Row => {
                let r = rdr.row();
                out.push(std::format!(
                    "L{} {:?} t={:?} lab={} p={:?} g={:?}",
                    r.line(),
                    r.kind(),
                    r.t_mono_ns(),
                    String::from_utf8_lossy(r.label()),
                    r.f64(Col::GpuPowerW),
                    r.i64(Col::GpuIndex)
                ))
            }
        });
        out
    }

    /// Naive oracle: split lines on '\n', split fields on ',' (inputs here have no quotes).
    fn naive(data: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut header: Option<Vec<&str>> = None;
        for (i, line) in data.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').collect();
            let is_header = match &header {
                None => true,
                Some(h) => {
                    let pos = |n: &str| h.iter().rposition(|x| *x == n);
                    matches!((pos("row_type"), pos("t_mono_ns")), (Some(r), Some(t))
                        if f.get(r) == Some(&"row_type") && f.get(t) == Some(&"t_mono_ns"))
                }
            };
            if is_header {
                out.push(std::format!("H{}", f.len()));
                header = Some(f);
                continue;
            }
            let h = header.as_ref().unwrap();
            let get = |n: &str| {
                h.iter()
                    .rposition(|x| *x == n)
                    .and_then(|p| f.get(p).copied())
            };
            let kind = match get("row_type") {
                Some("SAMPLE") => RowKind::Sample,
                Some("MARK") => RowKind::Mark,
                _ => RowKind::Other,
            };
            out.push(std::format!(
                "L{} {:?} t={:?} lab={} p={:?} g={:?}",
                i + 1,
                kind,
                get("t_mono_ns").and_then(|s| s.trim().parse::<i64>().ok()),
                get("label").unwrap_or(""),
                get("gpu_power_W").and_then(|s| s.trim().parse::<f64>().ok()),
                get("gpu_index").and_then(|s| s.trim().parse::<i64>().ok()),
            ));
        }
        out
    }

    const HDR10: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n";
    const HDR_FULL: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ,gpu_mem_used_MiB,gpu_throttle_reasons,host_cpu_pct,host_mem_used_MiB,host_mem_available_MiB,rapl_max_energy_range_uj,rapl_package-0_dram_uj\n";

    fn random_file(rng: &mut Rng) -> String {
        let mut s = String::new();
        s.push_str(if rng.below(2) == 0 { HDR10 } else { HDR_FULL });
        let full = s.starts_with(HDR_FULL);
        let mut t = 1_000_000i64;
        for _ in 0..rng.below(60) {
            t += rng.below(20_000_000) as i64;
            match rng.below(10) {
                0 => s.push_str(&std::format!(
                    "{t},{},MARK,m{},,,,,,\n",
                    t + 5,
                    rng.below(3)
                )),
                1 => s.push('\n'),
                2 => s.push_str(if full { HDR_FULL } else { HDR10 }),
                3 => s.push_str(&std::format!("{t},1,SAMPLE,,,,,,,\r\n")),
                4 => s.push_str("garbage\n"),
                _ => {
                    let p = rng.below(40000) as f64 / 100.0;
                    if full {
                        s.push_str(&std::format!(
                            "{t},2,SAMPLE,,{p},50,1,1400,60,123,{},99,1,0,3,4,5,999,7\n",
                            rng.below(4)
                        ));
                    } else {
                        s.push_str(&std::format!("{t},2,SAMPLE,,{p},50,1,1400,60,\n"));
                    }
                }
            }
        }
        s
    }

    #[test]
    fn matches_naive_oracle_in_every_split() {
        let mut rng = Rng::from_env(7);
        for _ in 0..30 {
            let data = random_file(&mut rng);
            let want = naive(&data);
            for_each_split(data.as_bytes(), 4, rng.next_u64(), |chunks| {
                assert_eq!(read_all(chunks), want, "{data}");
            });
        }
    }

    /// Every event with its row's fields and line, from a reader (fast path on or off).
    fn events(mut rdr: TraceCsvReader, chunks: &[&[u8]]) -> Vec<String> {
        let mut out = Vec::new();
        drive(&mut rdr, chunks, |rdr, ev| match ev {
            CsvEvent::NeedsInput | CsvEvent::End => {}
            CsvEvent::Row | CsvEvent::Header => {
                let r = rdr.row();
                let fields: Vec<String> = (0..r.fields())
                    .map(|i| String::from_utf8_lossy(r.field(i)).into_owned())
                    .collect();
                out.push(std::format!("{ev:?} L{} {fields:?}", r.line()));
            }
            CsvEvent::BadRow { .. } | CsvEvent::UnbalancedQuote { .. } => {
                out.push(std::format!("{ev:?}"))
            }
        });
        out
    }

    /// A reader reset after part of one file (stopped inside a record, after a header, or at
    /// its end) reads the next exactly as a new reader does.
    #[test]
    fn reset_reader_reads_as_a_new_one() {
        let mut rng = Rng::from_env(23);
        for _ in 0..40 {
            let (mut a, b) = (random_file(&mut rng), random_file(&mut rng));
            // Stopped inside a quoted field too (an unclosed quote).
            a.push_str("5,1,MARK,\"open,\n quote");
            let cut = rng.below(a.len() as u64 + 1) as usize;
            let mut rdr = TraceCsvReader::new();
            let mut rest = &a.as_bytes()[..cut];
            while !rest.is_empty() {
                let (_, n) = rdr.read(rest);
                rest = &rest[n..];
            }
            if rng.below(2) == 0 {
                while rdr.read(&[]).0 != CsvEvent::End {}
            }
            rdr.reset();
            for_each_split(b.as_bytes(), 2, rng.next_u64(), |chunks| {
                let mut used = TraceCsvReader::new();
                used.read(a.as_bytes());
                used.reset();
                assert_eq!(events(used, chunks), events(TraceCsvReader::new(), chunks));
            });
            let chunks: &[&[u8]] = &[b.as_bytes()];
            assert_eq!(events(rdr, chunks), events(TraceCsvReader::new(), chunks));
        }
    }

    #[test]
    fn fast_path_splits_exactly_as_csv_core() {
        let mut rng = Rng::from_env(17);
        // Bytes just around ',' and above 0x80 too (the fast path flags bytes ≤ ',' by words).
        let alphabet = b"ab1,,,\"\r\n\n +-.\t\x00\xc3\xa9";
        let no_nl = b"ab1,,,+-.\xc3\xa9";
        for round in 0..600 {
            let mut data = std::vec::Vec::from(&b"t_mono_ns,row_type,label\n"[..]);
            // Every other round: long lines (over MAX_FIELDS fields, over RECORD_BYTES).
            let (set, n) = match round % 4 {
                0 => (&no_nl[..], 300),
                1 => (&no_nl[..], RECORD_BYTES as u64 + 40),
                _ => (&alphabet[..], 200),
            };
            for _ in 0..rng.below(n) {
                data.push(set[rng.below(set.len() as u64) as usize]);
                if rng.below(97) == 0 {
                    data.push(b'\n');
                }
            }
            if rng.below(3) == 0 {
                data.extend_from_slice(b"\n5,MARK,\"q\nuoted\"\n6,row_type,t_mono_ns\n");
            }
            for_each_split(&data, 3, rng.next_u64(), |chunks| {
                assert_eq!(
                    events(TraceCsvReader::new(), chunks),
                    events(TraceCsvReader::without_fast_path(), chunks),
                    "{:?}",
                    String::from_utf8_lossy(&data)
                );
            });
        }
    }

    #[test]
    fn overlong_row_is_bad_row_and_reading_goes_on() {
        let mut data = String::from(HDR10);
        data.push_str("1,2,MARK,");
        data.push_str(&"x".repeat(RECORD_BYTES + 10));
        data.push_str(",,,,,,\n5,6,MARK,ok,,,,,,\n");
        for_each_split(data.as_bytes(), 3, 1, |chunks| {
            let got = read_all(chunks);
            assert_eq!(got[0], "H10");
            assert_eq!(got[1], "B2");
            assert!(got[2].starts_with("L3 Mark t=Some(5) lab=ok"), "{got:?}");
        });
    }

    #[test]
    fn unbalanced_quote_is_reported_at_the_line_where_it_opens() {
        let head = std::format!("{HDR10}1,2,MARK,a,,,,,,\n\n3,4,MARK,\"ok\nlabel\",,,,,,\n");
        for rest_lines in [1, 3, 400] {
            let mut data = head.clone();
            // A quote inside an unquoted field is text, not a quote.
            data.push_str("5,6,MARK,x\"y,,,,,,\n");
            data.push_str("7,8,MARK,\"never closed,,,,,,\n");
            for k in 0..rest_lines {
                data.push_str(&std::format!("{k},9,SAMPLE,,100,,,,,\n"));
            }
            for_each_split(data.as_bytes(), 3, rest_lines, |chunks| {
                let got = read_all(chunks);
                assert_eq!(got.len(), 5, "{got:?}");
                assert_eq!(got[0], "H10");
                assert!(got[1].starts_with("L2 Mark"), "{got:?}");
                assert!(
                    got[2].starts_with("L4 Mark t=Some(3) lab=ok\nlabel"),
                    "{got:?}"
                );
                assert!(got[3].starts_with("L6 Mark t=Some(5) lab=x\"y"), "{got:?}");
                assert_eq!(got[4], "Q7", "{rest_lines}");
            });
        }
    }

    #[test]
    fn an_overlong_record_is_reported_at_its_first_line() {
        let mut data = std::format!("{HDR10}1,2,MARK,\"");
        for _ in 0..RECORD_BYTES / 10 {
            data.push_str("0123456789\n");
        }
        data.push_str("\",,,,,,\n5,6,MARK,ok,,,,,,\n");
        for_each_split(data.as_bytes(), 3, 2, |chunks| {
            let got = read_all(chunks);
            assert_eq!(got[1], "B2", "{got:?}");
            assert!(got[2].starts_with("L412 Mark t=Some(5) lab=ok"), "{got:?}");
        });
    }

    /// A first line with a million columns, or one that is data, is no header: the reader says
    /// so (`header_usable`), in bounded memory, and takes no later data line for the header.
    #[test]
    fn a_first_line_that_is_no_header_is_flagged() {
        let mut wide = "c,".repeat(1_000_000);
        wide.push('\n');
        for first in [wide.as_str(), "1,2,MARK,a,,,,,,\n", "\n\nx\n"] {
            let data = std::format!("{first}{HDR10}5,6,MARK,b,,,,,,\n7,8,SAMPLE,,3,,,,,\n");
            let mut rdr = TraceCsvReader::new();
            let mut got = Vec::new();
            drive(&mut rdr, &[data.as_bytes()], |rdr, ev| {
                if ev == CsvEvent::Header {
                    got.push((rdr.header_line(), rdr.header_usable()));
                }
            });
            // The real header on a later line is not taken for one: its columns are unknown.
            let want_line = if first.starts_with('\n') { 3 } else { 1 };
            assert_eq!(
                got,
                [(want_line, false)],
                "{:?}",
                &first[..10.min(first.len())]
            );
        }
        let mut rdr = TraceCsvReader::new();
        let mut got = Vec::new();
        drive(
            &mut rdr,
            &[std::format!("\n{HDR10}").as_bytes()],
            |rdr, ev| {
                if ev == CsvEvent::Header {
                    got.push((rdr.header_line(), rdr.header_usable()));
                }
            },
        );
        assert_eq!(got, [(2, true)]);
    }

    #[test]
    fn short_rows_read_missing_fields_as_none_and_bom_is_skipped() {
        let data = std::format!("\u{feff}{HDR10}7,8,SAMPLE\n");
        let got = read_all(&[data.as_bytes()]);
        assert_eq!(got, ["H10", "L2 Sample t=Some(7) lab= p=None g=None"]);
    }

    #[test]
    fn quoted_fields_unquote() {
        let data = std::format!("{HDR10}1,2,MARK,\"a,b\"\"c\",,,,,,\n");
        let mut rdr = TraceCsvReader::new();
        let mut inp = data.as_bytes();
        loop {
            let (ev, n) = rdr.read(inp);
            inp = &inp[n..];
            if ev == CsvEvent::Row {
                assert_eq!(rdr.row().label(), b"a,b\"c");
                return;
            }
            assert_ne!(ev, CsvEvent::End);
        }
    }

    #[test]
    fn low_bytes_flags_exactly_the_bytes_up_to_comma() {
        let mut rng = crate::testutil::Rng::from_env(5);
        for round in 0..20_000u32 {
            let mut b = [0u8; 8];
            for x in b.iter_mut() {
                // Around the edge often, any byte sometimes.
                *x = if round % 2 == 0 {
                    0x28 + rng.below(8) as u8
                } else {
                    rng.below(256) as u8
                };
            }
            let m = low_bytes(u64::from_le_bytes(b));
            for (i, &c) in b.iter().enumerate() {
                assert_eq!(m >> (8 * i + 7) & 1 == 1, c <= b',', "{b:?}");
            }
            assert_eq!(m & !0x8080_8080_8080_8080, 0);
        }
    }
}
