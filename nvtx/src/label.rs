//! Mark labels from NVTX messages: control characters become spaces, the ends are trimmed, and
//! the label is cut on a character boundary so that the domain prefix, the message and a
//! `_start`/`_end` suffix together stay within [`MAX_LABEL_BYTES`].

/// Longest label a mark carries, bytes (prefix + message + suffix).
pub const MAX_LABEL_BYTES: usize = 256;
/// Longest prefix + message, bytes: room is kept for the longest suffix, `_start`.
pub const MAX_NAME_BYTES: usize = MAX_LABEL_BYTES - "_start".len();
/// Longest domain name kept in a prefix, bytes.
pub const MAX_DOMAIN_BYTES: usize = 64;
/// The label of a range or mark with no message (or only blanks and control characters).
pub const UNNAMED: &str = "unnamed";

/// Appends `text` to `out`, cleaned, trimmed and cut so that `out` grows by at most `max_bytes`.
/// Returns whether anything was appended.
pub fn push_clean(out: &mut String, text: impl Iterator<Item = char>, max_bytes: usize) -> bool {
    let start = out.len();
    for c in text {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() == start && c.is_whitespace() {
            continue;
        }
        if out.len() - start + c.len_utf8() > max_bytes {
            break;
        }
        out.push(c);
    }
    let kept = out[start..].trim_end().len();
    out.truncate(start + kept);
    out.len() > start
}

/// The characters of a C string's bytes: UTF-8 where valid, U+FFFD for each invalid sequence.
pub fn utf8_chars(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        let bad = (!chunk.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER);
        chunk.valid().chars().chain(bad)
    })
}

/// The characters of a `wchar_t` string (UTF-32 on Linux), U+FFFD for invalid code points.
pub fn wide_chars(units: &[i32]) -> impl Iterator<Item = char> + '_ {
    units
        .iter()
        .map(|&u| char::from_u32(u as u32).unwrap_or(char::REPLACEMENT_CHARACTER))
}

/// Builds `prefix + message` into `out` (cleared first): the message cleaned and cut so the
/// result fits in [`MAX_NAME_BYTES`]; [`UNNAMED`] stands for an empty message.
pub fn name_into(out: &mut String, prefix: &str, message: impl Iterator<Item = char>) {
    out.clear();
    out.push_str(prefix);
    let room = MAX_NAME_BYTES - prefix.len();
    if !push_clean(out, message, room) {
        out.push_str(UNNAMED);
    }
}

/// [`name_into`] for a C string's bytes, with a fast path for printable ASCII (the usual message).
pub fn name_into_bytes(out: &mut String, prefix: &str, bytes: &[u8]) {
    let room = MAX_NAME_BYTES - prefix.len();
    if bytes.len() <= room
        && bytes.iter().all(|&b| (0x20..0x7f).contains(&b))
        && let Ok(text) = std::str::from_utf8(bytes)
    {
        let text = text.trim_matches(' ');
        out.clear();
        out.push_str(prefix);
        out.push_str(if text.is_empty() { UNNAMED } else { text });
        return;
    }
    name_into(out, prefix, utf8_chars(bytes));
}

/// The prefix `D:` of a domain named `name` (cleaned, cut at [`MAX_DOMAIN_BYTES`]); empty for a
/// domain with an empty name.
pub fn domain_prefix(name: impl Iterator<Item = char>) -> String {
    let mut p = String::new();
    if push_clean(&mut p, name, MAX_DOMAIN_BYTES) {
        p.push(':');
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(prefix: &str, msg: &str) -> String {
        let mut s = String::from("junk");
        name_into(&mut s, prefix, msg.chars());
        s
    }

    #[test]
    fn cleans_trims_and_names_the_unnamed() {
        assert_eq!(name("", "step"), "step");
        assert_eq!(name("", "  a\nb\tc\r\u{7f}d\u{85} "), "a b c  d");
        assert_eq!(name("D:", "fwd"), "D:fwd");
        assert_eq!(name("", ""), UNNAMED);
        assert_eq!(name("D:", "\n\t "), "D:unnamed");
        assert_eq!(domain_prefix("my\ndomain".chars()), "my domain:");
        assert_eq!(domain_prefix(" ".chars()), "");
    }

    #[test]
    fn the_ascii_fast_path_agrees_with_the_general_path() {
        let cases: [&[u8]; 9] = [
            b"step",
            b"  padded  ",
            b"",
            b"   ",
            b"a\nb",
            b"caf\xc3\xa9",
            b"\xff",
            b"comma,quote\"",
            &[b'y'; 300],
        ];
        for b in cases {
            for prefix in ["", "D:"] {
                let mut fast = String::new();
                name_into_bytes(&mut fast, prefix, b);
                let mut slow = String::new();
                name_into(&mut slow, prefix, utf8_chars(b));
                assert_eq!(fast, slow, "{b:?}");
            }
        }
    }

    #[test]
    fn cuts_on_a_char_boundary_within_the_limit() {
        let long = "é".repeat(400);
        let n = name("D:", &long);
        assert!(n.len() <= MAX_NAME_BYTES);
        assert!(n.len() + "_start".len() <= MAX_LABEL_BYTES);
        // 2 + 2k bytes, the largest that fits.
        assert_eq!(n.len(), 2 + (MAX_NAME_BYTES - 2) / 2 * 2);
        assert!(n.starts_with("D:é"));
        let p = domain_prefix("x".repeat(500).chars());
        assert_eq!(p.len(), MAX_DOMAIN_BYTES + 1);
    }

    #[test]
    fn decodes_bytes_and_wide_units() {
        let s: String = utf8_chars(b"a\xffb\xc3\xa9").collect();
        assert_eq!(s, "a\u{fffd}bé");
        let w: String = wide_chars(&[0x61, 0xe9, 0x1F600, -1, 0xD800]).collect();
        assert_eq!(w, "aé😀\u{fffd}\u{fffd}");
    }
}
