use std::format;
use std::string::String;
use std::vec::Vec;

use super::*;
use crate::testutil::{Rng, for_each_split};

fn mark(t: Option<u64>, thread: Option<u64>, label: &str) -> Line<'_> {
    Line::Mark(Mark {
        t_mono_ns: t,
        thread,
        label,
    })
}

#[test]
fn parses_plain_stamped_and_keyed_lines() {
    assert_eq!(
        parse_str("  infer_start \n"),
        mark(None, None, "infer_start")
    );
    assert_eq!(parse_str("@123 a b"), mark(Some(123), None, "a b"));
    assert_eq!(
        parse_str("@5:77 a_start"),
        mark(Some(5), Some(77), "a_start")
    );
    assert_eq!(parse_str("@5   a  "), mark(Some(5), None, "a"));
    // A stamp that does not parse: the whole line is the label.
    for l in [
        "@x y", "@12", "@12  ", "@5:x a", "@:7 a", "@5: a", "@ a", "@-1 a",
    ] {
        assert_eq!(parse_str(l), mark(None, None, l.trim()), "{l:?}");
    }
    assert_eq!(
        parse_str("@18446744073709551616 a"),
        mark(None, None, "@18446744073709551616 a")
    );
    assert_eq!(parse_str("   "), Line::Blank);
    assert_eq!(parse_str(""), Line::Blank);
}

#[test]
fn parses_the_nvtx_control_lines() {
    assert_eq!(
        parse_str("#flinch-nvtx pid=12 marks=300 dropped=4"),
        Line::NvtxStats {
            marks: 300,
            dropped: 4
        }
    );
    assert_eq!(
        parse_str("#flinch-nvtx pid=12 start\n"),
        Line::NvtxStart { pid: 12 }
    );
    // Anything else is a mark of that label.
    for l in [
        "#flinch-nvtx pid=12 marks=300",
        "#flinch-nvtx marks=x dropped=1",
        "#other marks=1 dropped=1",
        "#flinch-nvtx pid=x start",
        "#flinch-nvtx pid=12 start now",
        "#flinch-nvtx pid=99999999999 start",
    ] {
        assert_eq!(parse_str(l), mark(None, None, l), "{l:?}");
    }
}

#[test]
fn bytes_over_the_limit_or_not_utf8_are_errors_with_their_offset() {
    let long = [b'x'; MAX_LINE + 1];
    assert_eq!(parse(&long), Err(ParseError::TooLong { at: MAX_LINE }));
    assert_eq!(
        parse(&long[..MAX_LINE]),
        Ok(mark(
            None,
            None,
            std::str::from_utf8(&long[..MAX_LINE]).unwrap()
        ))
    );
    assert_eq!(parse(b"@1 ab\xffc"), Err(ParseError::NotUtf8 { at: 5 }));
    assert_eq!(
        format!("{}", ParseError::NotUtf8 { at: 5 }),
        "not UTF-8 at byte 5"
    );
    assert_eq!(parse(b"@1 ok"), Ok(mark(Some(1), None, "ok")));
}

/// The format read naively: character by character, as docs/formats.md states it.
fn oracle(line: &str) -> Line<'_> {
    let line = line.trim();
    if line.is_empty() {
        return Line::Blank;
    }
    let number = |s: &str| -> Option<u64> {
        let digits = s.strip_prefix('+').unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut v: u64 = 0;
        for b in digits.bytes() {
            v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        }
        Some(v)
    };
    if let Some(rest) = line.strip_prefix("#flinch-nvtx ") {
        let words: Vec<&str> = rest.split_ascii_whitespace().collect();
        let pairs: Option<Vec<(&str, u64)>> = words
            .iter()
            .map(|w| {
                let i = w.find('=')?;
                Some((&w[..i], number(&w[i + 1..])?))
            })
            .collect();
        if let Some(pairs) = pairs {
            let known: Vec<_> = pairs
                .iter()
                .filter(|(k, _)| *k == "marks" || *k == "dropped")
                .collect();
            if known.len() == 2 {
                let last = |key: &str| {
                    known
                        .iter()
                        .rev()
                        .find(|(k, _)| *k == key)
                        .map_or(0, |(_, v)| *v)
                };
                return Line::NvtxStats {
                    marks: last("marks"),
                    dropped: last("dropped"),
                };
            }
        }
        if let Some(pid) = rest
            .strip_prefix("pid=")
            .and_then(|r| r.strip_suffix(" start"))
            .and_then(&number)
            .and_then(|p| u32::try_from(p).ok())
        {
            return Line::NvtxStart { pid };
        }
    }
    if let Some(rest) = line.strip_prefix('@')
        && let Some(sp) = rest.find(' ')
    {
        let (stamp, label) = (&rest[..sp], rest[sp + 1..].trim());
        let (t, key_ok, key) = match stamp.find(':') {
            Some(c) => {
                let k = number(&stamp[c + 1..]);
                (number(&stamp[..c]), k.is_some(), k)
            }
            None => (number(stamp), true, None),
        };
        if let (Some(t), true) = (t, key_ok) {
            return mark(Some(t), key, label);
        }
    }
    mark(None, None, line)
}

#[test]
fn random_lines_parse_as_the_oracle_reads_them() {
    const PIECES: &[&str] = &[
        "@",
        ":",
        " ",
        "  ",
        "\t",
        "1",
        "42",
        "+7",
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "a",
        "b_start",
        "é",
        "#flinch-nvtx ",
        "pid=",
        "marks=",
        "dropped=",
        "start",
        "x=1",
        "=",
        "\u{a0}",
        "\u{1f}",
        "\r",
    ];
    let mut rng = Rng::from_env(0x6d61726b);
    for _ in 0..20_000 {
        let mut line = String::new();
        for _ in 0..rng.below(9) {
            line.push_str(PIECES[rng.below(PIECES.len() as u64) as usize]);
        }
        assert_eq!(parse_str(&line), oracle(&line), "{line:?}");
        assert_eq!(parse(line.as_bytes()), Ok(oracle(&line)), "{line:?}");
    }
}

#[test]
fn written_marks_parse_back() {
    let mut buf = [0u8; MAX_LINE];
    let mut rng = Rng::from_env(0x77726974);
    for label in [
        "a",
        " infer start ",
        "x_start",
        "é ✓",
        "@5 nested",
        "#flinch-nvtx pid=1 start",
    ] {
        for _ in 0..200 {
            let t = rng.next_u64() >> rng.below(64);
            let thread = (rng.below(2) == 0).then(|| rng.next_u64() >> rng.below(64));
            let n = write_mark(&mut buf, t, thread, label).unwrap();
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            let want = match thread {
                Some(k) => format!("@{t}:{k} {}\n", label.trim()),
                None => format!("@{t} {}\n", label.trim()),
            };
            assert_eq!(text, want);
            assert_eq!(
                parse(&buf[..n - 1]),
                Ok(mark(Some(t), thread, label.trim()))
            );
        }
    }
}

#[test]
fn write_stamped_writes_its_parts_and_says_when_they_do_not_fit() {
    let mut buf = [0u8; 64];
    for (t, key) in [
        (0, 0),
        (7, 12),
        (u64::MAX, u64::MAX),
        (1_234_567_890_123, 4242),
    ] {
        let n = write_stamped(&mut buf, t, Some(key), &["fwd", "_start"]).unwrap();
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            format!("@{t}:{key} fwd_start\n")
        );
    }
    let line = "@18446744073709551615:18446744073709551615 ab\n";
    for len in 0..line.len() {
        assert_eq!(
            write_stamped(&mut buf[..len], u64::MAX, Some(u64::MAX), &["a", "b"]),
            None
        );
    }
    assert_eq!(
        write_stamped(
            &mut buf[..line.len()],
            u64::MAX,
            Some(u64::MAX),
            &["a", "b"]
        ),
        Some(line.len())
    );
}

#[test]
fn nvtx_control_lines_write_and_parse_back() {
    let mut buf = [0u8; 128];
    for pid in [0, 1, 4242, u32::MAX] {
        let n = write_nvtx_start(&mut buf, pid).unwrap();
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            format!("#flinch-nvtx pid={pid} start\n")
        );
        assert_eq!(parse(&buf[..n]), Ok(Line::NvtxStart { pid }));
        for (m, d) in [(0, 0), (300, 4), (u64::MAX, u64::MAX)] {
            let n = write_nvtx_stats(&mut buf, pid, m, d).unwrap();
            assert_eq!(
                std::str::from_utf8(&buf[..n]).unwrap(),
                format!("#flinch-nvtx pid={pid} marks={m} dropped={d}\n")
            );
            assert_eq!(
                parse(&buf[..n]),
                Ok(Line::NvtxStats {
                    marks: m,
                    dropped: d
                })
            );
        }
    }
    // The longest lines fit the buffers the NVTX library sets aside for them.
    assert!(write_nvtx_start(&mut [0u8; 64][..], u32::MAX).is_some());
    assert!(write_nvtx_stats(&mut [0u8; 96][..], u32::MAX, u64::MAX, u64::MAX).is_some());
    assert_eq!(write_nvtx_start(&mut [0u8; 10][..], 1), None);
}

/// The cases every sender must write alike (Python's test reads the same file).
#[test]
fn the_shared_cases() {
    let path = format!("{}/../tests/marks/lines.json", env!("CARGO_MANIFEST_DIR"));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut buf = [0u8; MAX_LINE];
    for c in cases {
        let repeat = c.get("repeat").map_or(1, |r| r.as_u64().unwrap() as usize);
        let label = c["label"].as_str().unwrap().repeat(repeat);
        let t = c["t_mono_ns"].as_u64().unwrap();
        let thread = c["thread"].as_u64();
        let got = write_mark(&mut buf, t, thread, &label)
            .map(|n| String::from_utf8(buf[..n].to_vec()).unwrap())
            .map_err(|e| format!("{e}"));
        let want = match (c.get("line"), c.get("error")) {
            (Some(l), None) if repeat > 1 => Ok(l.as_str().unwrap().replace("{label}", &label)),
            (Some(l), None) => Ok(l.as_str().unwrap().into()),
            (None, Some(e)) => Err(e.as_str().unwrap().into()),
            _ => panic!("a case has a line or an error: {c}"),
        };
        assert_eq!(got, want, "{c}");
        if c.get("every_white_space").is_some() {
            let trimmed: std::collections::BTreeSet<char> = label
                .chars()
                .filter(|ch| ch.is_whitespace() && *ch != ' ')
                .collect();
            let all: std::collections::BTreeSet<char> = (0..=0x10ffff_u32)
                .filter_map(char::from_u32)
                .filter(|ch| ch.is_whitespace() && *ch != ' ')
                .collect();
            assert_eq!(trimmed, all);
        }
    }
}

/// Lines split naively: the whole stream at once.
fn oracle_split(data: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    parts.pop(); // after the last newline: unfinished
    for p in parts {
        out.push((p.len() <= MAX_LINE).then(|| p.to_vec()));
    }
    out
}

#[test]
fn the_splitter_gives_the_same_lines_for_every_split() {
    let mut rng = Rng::from_env(0x73706c74);
    let mut data = Vec::new();
    for _ in 0..60 {
        let len = match rng.below(4) {
            0 => MAX_LINE - 1 + rng.below(3) as usize,
            1 => rng.below(2 * MAX_LINE as u64) as usize,
            _ => rng.below(40) as usize,
        };
        data.extend((0..len).map(|i| b'a' + (i % 26) as u8));
        data.push(b'\n');
    }
    data.extend_from_slice(b"unfinished");
    let want = oracle_split(&data);
    assert!(want.iter().any(Option::is_none) && want.iter().any(Option::is_some));
    for_each_split(&data, 20, 0x6c696e65, |chunks| {
        let mut s = LineSplitter::new();
        let mut got = Vec::new();
        for c in chunks {
            s.push(c, |p| {
                got.push(match p {
                    Piece::Line(l) => Some(l.to_vec()),
                    Piece::Overlong => None,
                })
            });
        }
        assert_eq!(got, want);
    });
}
