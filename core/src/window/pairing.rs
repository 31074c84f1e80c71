//! Which marks pair up: `X_start`/`X_begin` with `X_end`, `begin`/`start` with `end`.

/// `X` for `X_start`, `X_begin` and `begin`.
pub(crate) fn pair_start_stem(label: &str) -> Option<&str> {
    if label == "begin" || label == "start" {
        return Some("");
    }
    label
        .strip_suffix("_start")
        .or_else(|| label.strip_suffix("_begin"))
}

/// `X` for `X_end` and `end`.
pub(crate) fn pair_end_stem(label: &str) -> Option<&str> {
    if label == "end" {
        return Some("");
    }
    label.strip_suffix("_end")
}
