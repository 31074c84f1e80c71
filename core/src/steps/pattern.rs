//! Which annotations are steps: `ProfilerStep#<N>` by default, or the caller's exact name or
//! glob with `*` (`--step-name`).
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The longest pattern accepted, in bytes (a name longer than the scanner keeps could never
/// match anyway).
pub const MAX_PATTERN_BYTES: usize = 1024;

/// A step pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPattern {
    text: String,
    /// `None`: the default, `ProfilerStep#` and one or more ASCII digits.
    parts: Option<Vec<String>>,
}

/// Why a pattern is not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern is empty.
    Empty,
    /// The pattern is longer than [`MAX_PATTERN_BYTES`].
    TooLong(usize),
    /// The pattern holds a control character (at this byte).
    Control(usize),
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::Empty => f.write_str("--step-name: empty pattern"),
            PatternError::TooLong(n) => write!(
                f,
                "--step-name: pattern of {n} bytes, past the {MAX_PATTERN_BYTES} accepted"
            ),
            PatternError::Control(at) => {
                write!(
                    f,
                    "--step-name: control character at byte {at} of the pattern"
                )
            }
        }
    }
}

impl core::error::Error for PatternError {}

/// The default pattern's text, as the output names it.
pub const DEFAULT_PATTERN: &str = "ProfilerStep#<N>";
const PROFILER_STEP: &[u8] = b"ProfilerStep#";

impl Default for StepPattern {
    fn default() -> Self {
        StepPattern {
            text: DEFAULT_PATTERN.into(),
            parts: None,
        }
    }
}

impl StepPattern {
    /// An exact name, or a glob where `*` matches any run of characters (none included).
    ///
    /// # Errors
    /// An empty pattern, one past [`MAX_PATTERN_BYTES`], or one with a control character.
    pub fn parse(text: &str) -> Result<StepPattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.len() > MAX_PATTERN_BYTES {
            return Err(PatternError::TooLong(text.len()));
        }
        if let Some(at) = text.bytes().position(|b| b < 0x20 || b == 0x7f) {
            return Err(PatternError::Control(at));
        }
        Ok(StepPattern {
            text: text.into(),
            parts: Some(text.split('*').map(String::from).collect()),
        })
    }

    /// The pattern as given (the default: [`DEFAULT_PATTERN`]).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `name` is a step's name.
    pub fn matches(&self, name: &[u8]) -> bool {
        match &self.parts {
            None => name
                .strip_prefix(PROFILER_STEP)
                .is_some_and(|digits| !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)),
            Some(parts) => glob(parts, name),
        }
    }
}

/// `name` matches the parts of a pattern split at `*`: the first is a prefix, the last a
/// suffix, the middle ones found in order, leftmost first (greedy-free, so linear in the name
/// per part).
fn glob(parts: &[String], name: &[u8]) -> bool {
    let [first, middle @ .., last] = parts else {
        // One part: no `*`, an exact name.
        return parts.first().is_some_and(|p| p.as_bytes() == name);
    };
    let (first, last) = (first.as_bytes(), last.as_bytes());
    if name.len() < first.len() + last.len() || !name.starts_with(first) || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for p in middle {
        let p = p.as_bytes();
        if p.is_empty() {
            continue;
        }
        match memchr::memmem::find(rest, p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// The step index a name carries: the integer after its last `#`, when all that follows is
/// ASCII digits (and it fits a `u64`).
pub fn name_index(name: &[u8]) -> Option<u64> {
    let at = name.iter().rposition(|&b| b == b'#')?;
    let digits = &name[at + 1..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The glob against a naive recursive matcher, on short names over a small alphabet.
    #[test]
    fn glob_matches_a_naive_matcher() {
        fn naive(p: &[u8], s: &[u8]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some((b'*', rest)) => (0..=s.len()).any(|k| naive(rest, &s[k..])),
                Some((c, rest)) => s.first() == Some(c) && naive(rest, &s[1..]),
            }
        }
        let mut rng = crate::testutil::Rng(5);
        let alpha = b"ab*";
        for _ in 0..20_000 {
            let p: Vec<u8> = (0..1 + rng.below(6))
                .map(|_| alpha[rng.below(3) as usize])
                .collect();
            let s: Vec<u8> = (0..rng.below(8))
                .map(|_| b"ab"[rng.below(2) as usize])
                .collect();
            let pat = StepPattern::parse(core::str::from_utf8(&p).unwrap()).unwrap();
            assert_eq!(pat.matches(&s), naive(&p, &s), "{p:?} {s:?}");
        }
    }

    #[test]
    fn the_default_is_profiler_step_and_digits() {
        let d = StepPattern::default();
        assert!(d.matches(b"ProfilerStep#0"));
        assert!(d.matches(b"ProfilerStep#123"));
        assert!(!d.matches(b"ProfilerStep#"));
        assert!(!d.matches(b"ProfilerStep#1a"));
        assert!(!d.matches(b"ProfilerStep"));
        assert!(!d.matches(b"xProfilerStep#1"));
        assert_eq!(name_index(b"ProfilerStep#12"), Some(12));
        assert_eq!(name_index(b"a#b#7"), Some(7));
        assert_eq!(name_index(b"train_step"), None);
        assert_eq!(name_index(b"x#"), None);
        assert_eq!(name_index(b"x#99999999999999999999999"), None);
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert_eq!(StepPattern::parse(""), Err(PatternError::Empty));
        assert_eq!(StepPattern::parse("a\tb"), Err(PatternError::Control(1)));
        let long = "x".repeat(MAX_PATTERN_BYTES + 1);
        assert_eq!(
            StepPattern::parse(&long),
            Err(PatternError::TooLong(MAX_PATTERN_BYTES + 1))
        );
        assert!(
            StepPattern::parse("forward*")
                .unwrap()
                .matches(b"forward_pass")
        );
        assert!(
            StepPattern::parse("train_step")
                .unwrap()
                .matches(b"train_step")
        );
        assert!(
            !StepPattern::parse("train_step")
                .unwrap()
                .matches(b"train_step2")
        );
    }
}
