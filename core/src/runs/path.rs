//! Paths spelled the way Python's `str(pathlib.PurePosixPath)` spells them, and ordered the
//! way `sorted()` orders `Path` objects (component by component), so `source` strings and
//! the order of entries match the reference. Native opens these paths as they print; the page
//! names the files the user dropped with them.
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// A path as Python's `PurePosixPath` normalizes it: `runs/`, `./runs` and `runs//` are all
/// `runs`; exactly two leading slashes are kept; the empty path is `.`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyPath {
    root: &'static str,
    parts: Vec<String>,
}

impl PyPath {
    /// Parses the text given on the command line.
    pub fn new(text: &str) -> PyPath {
        let slashes = text.bytes().take_while(|&b| b == b'/').count();
        let root = match slashes {
            0 => "",
            2 => "//",
            _ => "/",
        };
        let parts = text
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_owned)
            .collect();
        PyPath { root, parts }
    }

    /// `self / name`.
    pub fn join(&self, name: &str) -> PyPath {
        let mut p = self.clone();
        p.parts.extend(
            name.split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_owned),
        );
        p
    }

    /// The components after the root.
    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    /// Python's `str(path)`.
    pub fn to_py_string(&self) -> String {
        if self.root.is_empty() && self.parts.is_empty() {
            return ".".to_owned();
        }
        alloc::format!("{}{}", self.root, self.parts.join("/"))
    }
}

impl PartialOrd for PyPath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PyPath {
    /// Python compares `PurePosixPath`s by their component lists.
    fn cmp(&self, other: &Self) -> Ordering {
        self.root
            .cmp(other.root)
            .then_with(|| self.parts.cmp(&other.parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_pathlib() {
        for (given, want) in [
            ("runs", "runs"),
            ("runs/", "runs"),
            ("./runs", "runs"),
            ("a//b/./c/", "a/b/c"),
            ("", "."),
            (".", "."),
            ("/", "/"),
            ("//x", "//x"),
            ("///x", "/x"),
            ("../r", "../r"),
        ] {
            assert_eq!(PyPath::new(given).to_py_string(), want, "{given}");
        }
        assert_eq!(PyPath::new(".").join("a-host").to_py_string(), "a-host");
        assert_eq!(PyPath::new("/").join("x").to_py_string(), "/x");
    }

    #[test]
    fn sorts_by_components_not_text() {
        let a = PyPath::new("r").join("a/b");
        let b = PyPath::new("r").join("a-c");
        assert!(a < b); // as text "r/a/b" > "r/a-c"
    }
}
