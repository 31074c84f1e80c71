//! The marks FIFO line (docs/formats.md, "Marks: the FIFO line format"): the one definition
//! that the senders (`flinch-trace mark`, the NVTX library) write and the recorder parses.
//! Python's `flinch_trace._marks` writes the same bytes, held equal by the shared cases in
//! `tests/marks/lines.json`.
//!
//! A line is `LABEL` (stamped by the recorder when it reads it), `@<t_mono_ns> LABEL` (stamped
//! by the sender with CLOCK_MONOTONIC), or `@<t_mono_ns>:<thread> LABEL` (also keyed: an
//! `X_start`/`X_end` pair matches only within one `<thread>`). Whitespace around the label is
//! trimmed; a blank line is no mark; a stamp that does not parse makes the whole line the label.
//! Two control lines of the NVTX library are no marks: `#flinch-nvtx pid=P start` before a
//! process's first mark, and `#flinch-nvtx pid=P marks=M dropped=D` with its counts at exit.
//!
//! Everything here works in caller buffers: no allocation, no `core::fmt` on the write path
//! (the NVTX library writes a line per range end from the application's threads).
use core::fmt;

/// Longest line a sender writes, newline included, bytes: PIPE_BUF, so that one write of a line
/// is atomic. The reader keeps up to this many bytes before the newline and drops longer lines.
pub const MAX_LINE: usize = 4096;

/// What begins the NVTX library's control lines.
const NVTX_PREFIX: &str = "#flinch-nvtx ";

/// A mark: the sender's timestamp and thread key, if it sent them, and the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark<'a> {
    /// The sender's CLOCK_MONOTONIC reading, ns (`None`: stamp it when read).
    pub t_mono_ns: Option<u64>,
    /// The sender's thread key (only with a timestamp).
    pub thread: Option<u64>,
    /// The label, trimmed, never empty.
    pub label: &'a str,
}

/// One parsed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Empty or only whitespace: nothing.
    Blank,
    /// A mark.
    Mark(Mark<'a>),
    /// `#flinch-nvtx pid=P start`: a process announced itself before its first mark.
    NvtxStart {
        /// Its process id.
        pid: u32,
    },
    /// `#flinch-nvtx pid=P marks=M dropped=D`: a process's counts at its exit.
    NvtxStats {
        /// Marks it wrote to the FIFO.
        marks: u64,
        /// Marks it dropped (its buffer full, or no reader).
        dropped: u64,
    },
}

/// Why a line's bytes are not a line of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Longer than [`MAX_LINE`] bytes; `at` is the first byte past the limit.
    TooLong {
        /// Byte offset in the line.
        at: usize,
    },
    /// Not UTF-8 from byte `at` on.
    NotUtf8 {
        /// Byte offset in the line.
        at: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::TooLong { at } => {
                write!(f, "line longer than {MAX_LINE} bytes (byte {at})")
            }
            ParseError::NotUtf8 { at } => write!(f, "not UTF-8 at byte {at}"),
        }
    }
}

/// Parses one line's bytes (without its newline; a trailing `\r` or blank is trimmed).
///
/// # Errors
/// The bytes are over [`MAX_LINE`] or not UTF-8; a reader that keeps such lines parses
/// the lossy text with [`parse_str`].
pub fn parse(line: &[u8]) -> Result<Line<'_>, ParseError> {
    if line.len() > MAX_LINE {
        return Err(ParseError::TooLong { at: MAX_LINE });
    }
    match core::str::from_utf8(line) {
        Ok(text) => Ok(parse_str(text)),
        Err(e) => Err(ParseError::NotUtf8 {
            at: e.valid_up_to(),
        }),
    }
}

/// Parses one line of text (its length is the reader's to bound).
pub fn parse_str(line: &str) -> Line<'_> {
    let line = line.trim();
    if line.is_empty() {
        return Line::Blank;
    }
    if let Some(rest) = line.strip_prefix(NVTX_PREFIX) {
        if let Some((marks, dropped)) = nvtx_counts(rest) {
            return Line::NvtxStats { marks, dropped };
        }
        if let Some(pid) = nvtx_start(rest) {
            return Line::NvtxStart { pid };
        }
    }
    Line::Mark(mark(line))
}

/// A trimmed, non-empty line as a mark.
fn mark(line: &str) -> Mark<'_> {
    let plain = Mark {
        t_mono_ns: None,
        thread: None,
        label: line,
    };
    let Some((stamp, label)) = line.strip_prefix('@').and_then(|rest| rest.split_once(' ')) else {
        return plain;
    };
    let (ts, thread) = match stamp.split_once(':') {
        Some((ts, th)) => match th.parse::<u64>() {
            Ok(th) => (ts, Some(th)),
            Err(_) => return plain,
        },
        None => (stamp, None),
    };
    let label = label.trim();
    match ts.parse::<u64>() {
        Ok(t) if !label.is_empty() => Mark {
            t_mono_ns: Some(t),
            thread,
            label,
        },
        _ => plain,
    }
}

/// `marks=M dropped=D` among `key=value` words (each value a number; other keys ignored).
fn nvtx_counts(rest: &str) -> Option<(u64, u64)> {
    let (mut marks, mut dropped, mut seen) = (0, 0, 0);
    for kv in rest.split_ascii_whitespace() {
        let (k, v) = kv.split_once('=')?;
        let v = v.parse::<u64>().ok()?;
        match k {
            "marks" => marks = v,
            "dropped" => dropped = v,
            _ => continue,
        }
        seen += 1;
    }
    (seen == 2).then_some((marks, dropped))
}

/// `pid=P start`.
fn nvtx_start(rest: &str) -> Option<u32> {
    rest.strip_prefix("pid=")?
        .strip_suffix(" start")?
        .parse()
        .ok()
}

/// Why a label cannot be sent as a mark (the texts `mark` and Python print).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelError {
    /// Empty once trimmed.
    Empty,
    /// Holds a newline or carriage return.
    NotOneLine,
    /// The line would be over [`MAX_LINE`] bytes.
    TooLong,
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::Empty => f.write_str("empty label"),
            LabelError::NotOneLine => f.write_str("a label is one line (no newline)"),
            LabelError::TooLong => {
                write!(f, "label too long (the line must fit in {MAX_LINE} bytes)")
            }
        }
    }
}

/// A buffer that holds any line a sender may write.
pub type LineBuf = [u8; MAX_LINE];

/// Writes the stamped line for `label` (trimmed) at `t_mono_ns`, keyed by `thread` when given,
/// into `out`; returns its length.
///
/// # Errors
/// The label is empty, not one line, or too long for a line of [`MAX_LINE`] bytes.
pub fn write_mark(
    out: &mut LineBuf,
    t_mono_ns: u64,
    thread: Option<u64>,
    label: &str,
) -> Result<usize, LabelError> {
    let label = label.trim();
    if label.is_empty() {
        return Err(LabelError::Empty);
    }
    if label.contains(['\n', '\r']) {
        return Err(LabelError::NotOneLine);
    }
    write_stamped(out, t_mono_ns, thread, &[label]).ok_or(LabelError::TooLong)
}

/// Writes `@<t_mono_ns>[:<thread>] <parts...>\n` into `out` as given (for a sender whose label
/// is already one trimmed line, written in pieces such as a name and `_start`); returns its
/// length, or `None` when it does not fit in `out`.
pub fn write_stamped(
    out: &mut [u8],
    t_mono_ns: u64,
    thread: Option<u64>,
    parts: &[&str],
) -> Option<usize> {
    let mut w = Cursor { out, n: 0 };
    w.put(b"@")?;
    w.num(t_mono_ns)?;
    if let Some(th) = thread {
        w.put(b":")?;
        w.num(th)?;
    }
    w.put(b" ")?;
    for p in parts {
        w.put(p.as_bytes())?;
    }
    w.put(b"\n")?;
    Some(w.n)
}

/// Writes `#flinch-nvtx pid=P start\n` into `out`; its length, or `None` when it does not fit.
pub fn write_nvtx_start(out: &mut [u8], pid: u32) -> Option<usize> {
    let mut w = Cursor { out, n: 0 };
    w.put(NVTX_PREFIX.as_bytes())?;
    w.put(b"pid=")?;
    w.num(u64::from(pid))?;
    w.put(b" start\n")?;
    Some(w.n)
}

/// Writes `#flinch-nvtx pid=P marks=M dropped=D\n` into `out`; its length, or `None` when it
/// does not fit.
pub fn write_nvtx_stats(out: &mut [u8], pid: u32, marks: u64, dropped: u64) -> Option<usize> {
    let mut w = Cursor { out, n: 0 };
    w.put(NVTX_PREFIX.as_bytes())?;
    w.put(b"pid=")?;
    w.num(u64::from(pid))?;
    w.put(b" marks=")?;
    w.num(marks)?;
    w.put(b" dropped=")?;
    w.num(dropped)?;
    w.put(b"\n")?;
    Some(w.n)
}

/// Bytes appended to a slice.
struct Cursor<'a> {
    out: &'a mut [u8],
    n: usize,
}

impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.n.checked_add(bytes.len())?;
        self.out.get_mut(self.n..end)?.copy_from_slice(bytes);
        self.n = end;
        Some(())
    }

    /// `v` in decimal.
    fn num(&mut self, mut v: u64) -> Option<()> {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.put(&tmp[i..])
    }
}

/// Splits a byte stream, pushed in chunks of any size, into lines of at most [`MAX_LINE`]
/// bytes (the newline excluded), in a buffer of its own: a longer line is reported as
/// [`Piece::Overlong`] once its newline arrives, and its bytes are not kept.
pub struct LineSplitter {
    buf: LineBuf,
    len: usize,
    overlong: bool,
}

/// What [`LineSplitter::push`] hands on for each newline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A line's bytes, without the newline.
    Line(&'a [u8]),
    /// A line over [`MAX_LINE`] bytes, dropped.
    Overlong,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl LineSplitter {
    /// An empty splitter.
    pub const fn new() -> Self {
        LineSplitter {
            buf: [0; MAX_LINE],
            len: 0,
            overlong: false,
        }
    }

    /// Takes the next chunk; calls `f` for each line it completes. Bytes after the last
    /// newline wait for the next chunk.
    pub fn push(&mut self, chunk: &[u8], mut f: impl FnMut(Piece<'_>)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let nl = memchr::memchr(b'\n', rest);
            let body = &rest[..nl.unwrap_or(rest.len())];
            let room = MAX_LINE - self.len;
            if body.len() > room {
                self.overlong = true;
            } else {
                self.buf[self.len..self.len + body.len()].copy_from_slice(body);
                self.len += body.len();
            }
            let Some(nl) = nl else { break };
            if self.overlong {
                f(Piece::Overlong);
            } else {
                f(Piece::Line(&self.buf[..self.len]));
            }
            self.len = 0;
            self.overlong = false;
            rest = &rest[nl + 1..];
        }
    }
}

#[cfg(test)]
mod tests;
