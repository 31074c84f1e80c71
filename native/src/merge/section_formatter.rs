//! A JSON formatter for summaries that carry the mergeable section: 2-space indented, as
//! `serde_json::to_writer_pretty`, except the value of the top-level key `mergeable`, written
//! compactly on one line (its histograms would take four lines a bucket). With it a summary and
//! its section are one `Serialize` written to a stream as it is made, never held whole.
use std::io::{self, Write};

use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};

/// The key whose value is written on one line.
const SECTION_KEY: &[u8] = b"mergeable";

/// See the module docs.
pub struct SectionFormatter {
    pretty: PrettyFormatter<'static>,
    /// Objects and arrays open around the next token.
    depth: usize,
    /// The top-level key being written, while it is (at most `SECTION_KEY.len() + 1` bytes).
    key: Option<Vec<u8>>,
    /// The key just written is the section's.
    section_next: bool,
    /// Inside the section's value: the depth of the object that holds the key.
    compact_at: Option<usize>,
}

impl SectionFormatter {
    /// A formatter at the start of the document.
    pub fn new() -> SectionFormatter {
        SectionFormatter {
            pretty: PrettyFormatter::new(),
            depth: 0,
            key: None,
            section_next: false,
            compact_at: None,
        }
    }

    fn compact(&self) -> bool {
        self.compact_at.is_some()
    }
}

/// Calls `$method` on the compact formatter inside the section, on the pretty one elsewhere.
macro_rules! route {
    ($self:ident, $method:ident($($arg:expr),*)) => {
        if $self.compact() {
            CompactFormatter.$method($($arg),*)
        } else {
            $self.pretty.$method($($arg),*)
        }
    };
}

impl Formatter for SectionFormatter {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        route!(self, begin_array(w))
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        route!(self, end_array(w))
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        route!(self, begin_array_value(w, first))
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        route!(self, end_array_value(w))
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        route!(self, begin_object(w))
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        route!(self, end_object(w))
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.depth == 1 {
            self.key = Some(Vec::with_capacity(SECTION_KEY.len() + 1));
        }
        route!(self, begin_object_key(w, first))
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.section_next = self.key.take().is_some_and(|k| k == SECTION_KEY);
        route!(self, end_object_key(w))
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        // The `: ` after the key is the pretty document's; the value is the section's.
        route!(self, begin_object_value(w))?;
        if std::mem::take(&mut self.section_next) {
            self.compact_at = Some(self.depth);
        }
        Ok(())
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        // The section's value ends: the pretty document goes on.
        if self.compact_at == Some(self.depth) {
            self.compact_at = None;
        }
        route!(self, end_object_value(w))
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if let Some(k) = &mut self.key
            && k.len() <= SECTION_KEY.len()
        {
            let room = SECTION_KEY.len() + 1 - k.len();
            k.extend(fragment.bytes().take(room));
        }
        route!(self, write_string_fragment(w, fragment))
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        if let Some(k) = &mut self.key {
            // An escaped key is not `mergeable`.
            k.push(b'\\');
        }
        route!(self, write_char_escape(w, char_escape))
    }
}
