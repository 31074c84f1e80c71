//! The Prometheus exposition text formats, written into any [`core::fmt::Write`]: OpenMetrics 1.0
//! (`application/openmetrics-text; version=1.0.0`) and the older Prometheus text format 0.0.4
//! (`text/plain; version=0.0.4`). No allocation: a caller with no allocator writes into a
//! [`SliceWriter`] over its own buffer.
//!
//! The two differ only in the metadata of counters and in the end: OpenMetrics names a counter's
//! family without its `_total` suffix (`# TYPE flinch_windows counter`, samples
//! `flinch_windows_total`), gives a `# UNIT` line and ends with `# EOF`; the 0.0.4 format names
//! the family with the suffix and has neither. Label values are escaped alike in both
//! (`\\`, `\"`, `\n`); HELP text escapes `\\` and `\n`, and also `\"` in OpenMetrics.
use core::fmt::{self, Write};

/// Which text format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Prometheus,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format to answer an HTTP `Accept` header with: the 0.0.4 text only when the client
    /// accepts `text/plain` and not OpenMetrics (as `curl` with `-H 'Accept: text/plain'`, or an
    /// old scraper, asks); OpenMetrics otherwise, also without an `Accept` header.
    pub fn for_accept(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::OpenMetrics;
        };
        let mut plain = false;
        for part in accept.split(',') {
            let media = part.split(';').next().unwrap_or("").trim();
            if media.eq_ignore_ascii_case("application/openmetrics-text") {
                return Format::OpenMetrics;
            }
            plain |= media.eq_ignore_ascii_case("text/plain");
        }
        if plain {
            Format::Prometheus
        } else {
            Format::OpenMetrics
        }
    }
}

/// What a metric family is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A monotonic counter: its samples are named `<family>_total`.
    Counter,
    /// A value that goes up and down.
    Gauge,
}

/// One metric family's metadata. `name` has no `_total` suffix; when `unit` is given, `name`
/// ends with `_<unit>` (the OpenMetrics rule).
#[derive(Clone, Copy, Debug)]
pub struct Family {
    /// Family name, e.g. `flinch_gpu_energy_joules`.
    pub name: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// Unit, e.g. `joules`, `watts`, `seconds`, `ratio`.
    pub unit: Option<&'static str>,
    /// One line of help text.
    pub help: &'static str,
}

/// A sample's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An integer (counts).
    U64(u64),
    /// A float: written as the shortest decimal that reads back to the same `f64`;
    /// `NaN`, `+Inf`, `-Inf` as the formats spell them.
    F64(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::U64(v) => write!(f, "{v}"),
            Value::F64(v) if v.is_nan() => f.write_str("NaN"),
            Value::F64(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Value::F64(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Value::F64(v) => write!(f, "{v}"),
        }
    }
}

/// Writes `s` as an escaped label value (without the quotes).
pub fn write_label_value<W: Write>(out: &mut W, s: &str) -> fmt::Result {
    let mut rest = s;
    while let Some(i) = rest.find(['\\', '"', '\n']) {
        out.write_str(&rest[..i])?;
        out.write_str(match rest.as_bytes()[i] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            _ => "\\n",
        })?;
        rest = &rest[i + 1..];
    }
    out.write_str(rest)
}

fn write_help<W: Write>(out: &mut W, s: &str, format: Format) -> fmt::Result {
    for c in s.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '"' if format == Format::OpenMetrics => out.write_str("\\\"")?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

/// Writes families and their samples in one format; call [`Exposition::finish`] at the end.
pub struct Exposition<'w, W: Write> {
    out: &'w mut W,
    format: Format,
}

impl<'w, W: Write> Exposition<'w, W> {
    /// A writer of `format` text into `out`.
    pub fn new(out: &'w mut W, format: Format) -> Self {
        Exposition { out, format }
    }

    /// Writes a family's metadata lines; its samples follow with [`Exposition::sample`].
    pub fn family(&mut self, f: &Family) -> fmt::Result {
        let (suffix, kind) = match (f.kind, self.format) {
            (Kind::Counter, Format::Prometheus) => ("_total", "counter"),
            (Kind::Counter, Format::OpenMetrics) => ("", "counter"),
            (Kind::Gauge, _) => ("", "gauge"),
        };
        write!(self.out, "# HELP {}{suffix} ", f.name)?;
        write_help(self.out, f.help, self.format)?;
        writeln!(self.out)?;
        writeln!(self.out, "# TYPE {}{suffix} {kind}", f.name)?;
        if let (Some(unit), Format::OpenMetrics) = (f.unit, self.format) {
            writeln!(self.out, "# UNIT {} {unit}", f.name)?;
        }
        Ok(())
    }

    /// Writes one sample of family `f` with `labels` (name, value) in the given order.
    pub fn sample(&mut self, f: &Family, labels: &[(&str, &str)], value: Value) -> fmt::Result {
        self.out.write_str(f.name)?;
        if f.kind == Kind::Counter {
            self.out.write_str("_total")?;
        }
        if !labels.is_empty() {
            self.out.write_char('{')?;
            for (i, (name, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.write_char(',')?;
                }
                write!(self.out, "{name}=\"")?;
                write_label_value(self.out, v)?;
                self.out.write_char('"')?;
            }
            self.out.write_char('}')?;
        }
        writeln!(self.out, " {value}")
    }

    /// Ends the exposition (`# EOF` in OpenMetrics).
    pub fn finish(self) -> fmt::Result {
        match self.format {
            Format::OpenMetrics => self.out.write_str("# EOF\n"),
            Format::Prometheus => Ok(()),
        }
    }
}

/// A [`Write`] into a caller's byte buffer; a write that does not fit fails (`fmt::Error`) and
/// leaves what fitted before it.
pub struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceWriter<'a> {
    /// A writer over `buf`, empty.
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceWriter { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;
    use std::string::String;
    use std::vec::Vec;

    const ENERGY: Family = Family {
        name: "flinch_gpu_energy_joules",
        kind: Kind::Counter,
        unit: Some("joules"),
        help: "GPU energy \"since\" start\\x",
    };
    const POWER: Family = Family {
        name: "flinch_gpu_power_watts",
        kind: Kind::Gauge,
        unit: Some("watts"),
        help: "Power.",
    };

    /// The oracle: escaping by whole-string replacement, in the spec's order.
    fn naive_escape(s: &str) -> String {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    }

    fn unescape(s: &str) -> String {
        let mut out = String::new();
        let mut it = s.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('n') => out.push('\n'),
                    Some(c) => out.push(c),
                    None => panic!("dangling escape"),
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn label_values_escape_as_the_naive_oracle_and_read_back() {
        let mut rng = Rng::from_env(17);
        let alphabet = [
            'a', '\\', '"', '\n', 'é', '🔥', ' ', '{', '}', ',', '=', 'n',
        ];
        for _ in 0..2000 {
            let s: String = (0..rng.below(12))
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let mut got = String::new();
            write_label_value(&mut got, &s).unwrap();
            assert_eq!(got, naive_escape(&s), "{s:?}");
            assert_eq!(unescape(&got), s);
            assert!(!got.contains('\n'));
            // Every quote in the escaped text is preceded by an odd run of backslashes.
            let b = got.as_bytes();
            for (i, _) in b.iter().enumerate().filter(|(_, c)| **c == b'"') {
                let run = b[..i].iter().rev().take_while(|c| **c == b'\\').count();
                assert_eq!(run % 2, 1, "{got:?}");
            }
        }
    }

    fn render(format: Format) -> String {
        let mut s = String::new();
        let mut e = Exposition::new(&mut s, format);
        e.family(&ENERGY).unwrap();
        e.sample(
            &ENERGY,
            &[("gpu", "0"), ("uuid", "GPU-\"x\"")],
            Value::F64(1.5),
        )
        .unwrap();
        e.sample(&ENERGY, &[], Value::U64(7)).unwrap();
        e.family(&POWER).unwrap();
        e.sample(&POWER, &[("gpu", "0")], Value::F64(f64::NAN))
            .unwrap();
        e.sample(&POWER, &[("gpu", "1")], Value::F64(f64::NEG_INFINITY))
            .unwrap();
        e.finish().unwrap();
        s
    }

    #[test]
    fn openmetrics_and_prometheus_text_whole() {
        assert_eq!(
            render(Format::OpenMetrics),
            "# HELP flinch_gpu_energy_joules GPU energy \\\"since\\\" start\\\\x\n\
             # TYPE flinch_gpu_energy_joules counter\n\
             # UNIT flinch_gpu_energy_joules joules\n\
             flinch_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-\\\"x\\\"\"} 1.5\n\
             flinch_gpu_energy_joules_total 7\n\
             # HELP flinch_gpu_power_watts Power.\n\
             # TYPE flinch_gpu_power_watts gauge\n\
             # UNIT flinch_gpu_power_watts watts\n\
             flinch_gpu_power_watts{gpu=\"0\"} NaN\n\
             flinch_gpu_power_watts{gpu=\"1\"} -Inf\n\
             # EOF\n"
        );
        assert_eq!(
            render(Format::Prometheus),
            "# HELP flinch_gpu_energy_joules_total GPU energy \"since\" start\\\\x\n\
             # TYPE flinch_gpu_energy_joules_total counter\n\
             flinch_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-\\\"x\\\"\"} 1.5\n\
             flinch_gpu_energy_joules_total 7\n\
             # HELP flinch_gpu_power_watts Power.\n\
             # TYPE flinch_gpu_power_watts gauge\n\
             flinch_gpu_power_watts{gpu=\"0\"} NaN\n\
             flinch_gpu_power_watts{gpu=\"1\"} -Inf\n"
        );
    }

    #[test]
    fn floats_read_back_exactly() {
        let mut rng = Rng::from_env(3);
        for _ in 0..5000 {
            let v = f64::from_bits(rng.next_u64());
            if !v.is_finite() {
                continue;
            }
            let s = std::format!("{}", Value::F64(v));
            assert!(!s.contains(['e', 'E']), "{s}");
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{s}");
        }
        assert_eq!(std::format!("{}", Value::F64(f64::INFINITY)), "+Inf");
        assert_eq!(std::format!("{}", Value::F64(2.0)), "2");
    }

    #[test]
    fn slice_writer_fills_a_caller_buffer_and_fails_when_full() {
        let whole = render(Format::OpenMetrics);
        let mut buf = [0u8; 1024];
        let mut w = SliceWriter::new(&mut buf);
        let mut e = Exposition::new(&mut w, Format::OpenMetrics);
        e.family(&ENERGY).unwrap();
        e.sample(
            &ENERGY,
            &[("gpu", "0"), ("uuid", "GPU-\"x\"")],
            Value::F64(1.5),
        )
        .unwrap();
        e.sample(&ENERGY, &[], Value::U64(7)).unwrap();
        e.family(&POWER).unwrap();
        e.sample(&POWER, &[("gpu", "0")], Value::F64(f64::NAN))
            .unwrap();
        e.sample(&POWER, &[("gpu", "1")], Value::F64(f64::NEG_INFINITY))
            .unwrap();
        e.finish().unwrap();
        assert_eq!(w.written(), whole.as_bytes());
        let mut small = [0u8; 40];
        let mut w = SliceWriter::new(&mut small);
        assert!(
            Exposition::new(&mut w, Format::OpenMetrics)
                .family(&ENERGY)
                .is_err()
        );
        assert!(whole.as_bytes().starts_with(w.written()));
    }

    #[test]
    fn accept_header_picks_the_format() {
        let cases: Vec<(Option<&str>, Format)> = std::vec![
            (None, Format::OpenMetrics),
            (Some("*/*"), Format::OpenMetrics),
            (Some("text/plain"), Format::Prometheus),
            (Some("text/plain;version=0.0.4;q=0.9"), Format::Prometheus),
            (
                Some(
                    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
                ),
                Format::OpenMetrics
            ),
            (Some("TEXT/PLAIN, application/json"), Format::Prometheus),
        ];
        for (a, f) in cases {
            assert_eq!(Format::for_accept(a), f, "{a:?}");
        }
    }
}
