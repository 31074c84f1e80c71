//! The power source named by the `<csv>.meta.json` sidecar, as `flinch-trace analyze` reads it:
//! a key mentioning "power" whose value is the string "instant" or "average". Streamed from the
//! host in chunks through a small JSON string scanner (no allocation, no document tree), so the
//! first such key in file order wins.
use flinch_core::window::PowerSource;

/// Bytes of a key kept to look for "power" in (longer keys are cut).
const KEY_BYTES: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tokens.
    Outside,
    /// Inside a string (`escaped`: after a backslash).
    InString { escaped: bool },
    /// After a string, before the next non-blank byte (a ':' makes it a key).
    AfterString,
}

/// The scanner.
pub struct PowerSourceScanner {
    state: State,
    text: [u8; KEY_BYTES],
    len: usize,
    /// The last complete string was a key mentioning "power": its value decides.
    power_key: bool,
    /// The string being read is the value of such a key.
    power_value: bool,
    found: Option<PowerSource>,
}

impl PowerSourceScanner {
    pub const fn new() -> Self {
        PowerSourceScanner {
            state: State::Outside,
            text: [0; KEY_BYTES],
            len: 0,
            power_key: false,
            power_value: false,
            found: None,
        }
    }

    /// The power source found so far.
    pub fn found(&self) -> Option<PowerSource> {
        self.found
    }

    /// Scans the next bytes of the sidecar.
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found.is_some() {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            State::InString { escaped: true } => self.keep(b, State::InString { escaped: false }),
            State::InString { escaped: false } => match b {
                b'\\' => self.state = State::InString { escaped: true },
                b'"' => {
                    self.state = State::AfterString;
                    if self.power_value {
                        self.found = match &self.text[..self.len] {
                            b"instant" => Some(PowerSource::Instant),
                            b"average" => Some(PowerSource::Average),
                            _ => None,
                        };
                        self.power_value = false;
                    }
                }
                _ => self.keep(b, State::InString { escaped: false }),
            },
            State::AfterString if b.is_ascii_whitespace() => {}
            State::AfterString if b == b':' => {
                let key = &self.text[..self.len];
                self.power_key = key.windows(5).any(|w| w == b"power");
                self.state = State::Outside;
            }
            State::AfterString | State::Outside => {
                self.state = State::Outside;
                match b {
                    b'"' => {
                        // A string right after a "power" key's ':' is its value.
                        self.power_value = self.power_key;
                        self.power_key = false;
                        self.len = 0;
                        self.state = State::InString { escaped: false };
                    }
                    _ if b.is_ascii_whitespace() => {}
                    // Any other value (number, object, array, literal) ends the key's turn.
                    _ => self.power_key = false,
                }
            }
        }
    }

    fn keep(&mut self, b: u8, next: State) {
        if self.len < KEY_BYTES {
            self.text[self.len] = b;
            self.len += 1;
        }
        self.state = next;
    }
}
