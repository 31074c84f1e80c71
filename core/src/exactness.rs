//! How exact a result is, and in what memory: the one choice every caller names (the CLI's
//! `--bounded` / `--exact`, the page's and the runs folder's `"limits"` option, the Python
//! wheel's `exactness`), each standing for a [`Limits`] preset. The default is
//! [`Exactness::Native`] (docs/trace-exactness.md).
use serde::{Deserialize, Serialize};

use crate::Limits;

/// A memory budget and what happens past it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Exactness {
    /// The default: [`Limits::NATIVE`]. A driver with a file system (`flinch-host`) keeps the
    /// trace summary exact past those limits, spilling busy intervals to a temporary file and
    /// reading the trace again for percentiles; in memory alone, approximations past them are
    /// stated under `approximations`.
    #[default]
    Native,
    /// [`Limits::BOUNDED`]: a few MiB whatever the input, in memory alone; approximations are
    /// stated.
    Bounded,
    /// [`Limits::EXACT`]: exact whatever the input, in memory alone; memory grows with the
    /// distinct ops, durations and disjoint busy intervals.
    Exact,
    /// [`Limits::PAGE`]: the web page's budget (the native one with room for more durations and
    /// intervals, within 256 MiB of WebAssembly memory); approximations past it are stated.
    Page,
}

impl Exactness {
    /// The limits this stands for.
    pub const fn limits(self) -> Limits {
        match self {
            Exactness::Native => Limits::NATIVE,
            Exactness::Bounded => Limits::BOUNDED,
            Exactness::Exact => Limits::EXACT,
            Exactness::Page => Limits::PAGE,
        }
    }

    /// Whether a driver that can write a temporary file and read the input again should, to
    /// stay exact past the limits ([`Exactness::Native`] alone: the others are in memory alone
    /// by choice).
    pub const fn spills(self) -> bool {
        matches!(self, Exactness::Native)
    }

    /// The name used in JSON options and by the Python wheel: `native`, `bounded`, `exact`,
    /// `page`.
    pub const fn name(self) -> &'static str {
        match self {
            Exactness::Native => "native",
            Exactness::Bounded => "bounded",
            Exactness::Exact => "exact",
            Exactness::Page => "page",
        }
    }

    /// The variant named `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Exactness> {
        [
            Exactness::Native,
            Exactness::Bounded,
            Exactness::Exact,
            Exactness::Page,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_the_json_names() {
        for e in [
            Exactness::Native,
            Exactness::Bounded,
            Exactness::Exact,
            Exactness::Page,
        ] {
            assert_eq!(Exactness::from_name(e.name()), Some(e));
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(json, alloc::format!("\"{}\"", e.name()));
            assert_eq!(serde_json::from_str::<Exactness>(&json).unwrap(), e);
        }
        assert_eq!(Exactness::from_name("approximate"), None);
        assert_eq!(Exactness::default(), Exactness::Native);
        // One default: the limits' is the exactness's.
        assert_eq!(Limits::default(), Exactness::default().limits());
        assert!(Exactness::Native.spills() && !Exactness::Exact.spills());
    }
}
