//! The recording's sidecar `<csv>.meta.json`, read for what a job needs from it.
use std::path::{Path, PathBuf};

use flinch_core::window::PowerSource;

/// `<csv>.meta.json`.
pub fn path_for(csv: &Path) -> PathBuf {
    let mut s = csv.as_os_str().to_owned();
    s.push(".meta.json");
    PathBuf::from(s)
}

/// Which NVML reading fills the recording `csv`'s `gpu_power_W`, as its sidecar names it:
/// `None` without a readable sidecar, or one that names none. The rule is the core's
/// (`flinch_core::sidecar::power_source`), the one the page applies to a dropped sidecar.
pub fn power_source(csv: &Path) -> Option<PowerSource> {
    flinch_core::sidecar::power_source(&std::fs::read(path_for(csv)).ok()?)
}
