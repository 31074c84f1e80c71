//! Interned (category, name) strings of the join's tables, bounded.
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

/// The id of every string past the cap: it reads as `"(other)"`.
pub const OTHER_ID: u32 = u32::MAX;

/// Strings by id; at most `cap` distinct ones, later ones fold into [`OTHER_ID`].
#[derive(Clone, Debug, Default)]
pub struct Names {
    ids: BTreeMap<Vec<u8>, u32>,
    strings: Vec<String>,
    cap: usize,
    /// Lookups that folded into `"(other)"`.
    pub folded: u64,
}

impl Names {
    /// At most `cap` strings.
    pub fn new(cap: usize) -> Names {
        Names {
            cap,
            ..Names::default()
        }
    }

    /// The id of `s` (an absent string is `""`), allocating only for a new one.
    pub fn id(&mut self, s: Option<&[u8]>) -> u32 {
        let s = s.unwrap_or(b"");
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        if self.strings.len() >= self.cap {
            self.folded += 1;
            return OTHER_ID;
        }
        let id = self.strings.len() as u32;
        self.ids.insert(s.to_vec(), id);
        self.strings.push(String::from_utf8_lossy(s).into_owned());
        id
    }

    /// The string of an id.
    pub fn get(&self, id: u32) -> &str {
        self.strings
            .get(id as usize)
            .map_or(crate::summary::OTHER, String::as_str)
    }
}
