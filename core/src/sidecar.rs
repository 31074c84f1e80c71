//! The recording's sidecar `<csv>.meta.json` (docs/formats.md, "The sidecar"), as far as the
//! analysis reads it: which NVML reading fills `gpu_power_W`. The one rule for every reader
//! that has the sidecar's text: the CLI (`analyze`, `trace --telemetry`) and the page.
//!
//! The rule: the sidecar parses as a JSON object whose `gpus` is an array of objects, each with
//! a `gpu_power_w_source` of `instant`, `average` or `unknown` (the fields the recorder writes
//! for this, with the types it writes them in); the power source is the first GPU's that is
//! not `unknown`. A sidecar that does not parse so, or names none, gives `None`, which callers
//! read as [`PowerSource::Unknown`]. Its other keys are not read, so a sidecar from another
//! version of the recorder still gives its power source.
use alloc::vec::Vec;
use serde::Deserialize;

use crate::window::PowerSource;

/// What the rule reads of the sidecar.
#[derive(Deserialize)]
struct SidecarView {
    gpus: Vec<GpuView>,
}

/// What the rule reads of one GPU's entry.
#[derive(Deserialize)]
struct GpuView {
    gpu_power_w_source: PowerSource,
}

/// The power source the sidecar's text names (see the module docs), or `None`.
pub fn power_source(sidecar_json: &[u8]) -> Option<PowerSource> {
    let view: SidecarView = serde_json::from_slice(sidecar_json).ok()?;
    first_known(view.gpus.iter().map(|g| g.gpu_power_w_source))
}

/// The first of the GPUs' power sources that is not `unknown`.
pub fn first_known(sources: impl IntoIterator<Item = PowerSource>) -> Option<PowerSource> {
    sources.into_iter().find(|s| *s != PowerSource::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_gpu_that_names_its_source_decides() {
        let ps = |text: &str| power_source(text.as_bytes());
        assert_eq!(
            ps(r#"{"tool":"flinch-trace","gpus":[{"index":0,"gpu_power_w_source":"instant"}]}"#),
            Some(PowerSource::Instant)
        );
        assert_eq!(
            ps(
                r#"{"gpus":[{"gpu_power_w_source":"unknown"},{"gpu_power_w_source":"average"},{"gpu_power_w_source":"instant"}]}"#
            ),
            Some(PowerSource::Average)
        );
        // No GPU (a host-only recording), or none that says.
        assert_eq!(ps(r#"{"gpus":[]}"#), None);
        assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":"unknown"}]}"#), None);
        // Not a sidecar: not JSON, no `gpus`, a GPU without the key, a value of another type
        // or name. A "power" key elsewhere is not read.
        assert_eq!(ps("not json"), None);
        assert_eq!(ps(""), None);
        assert_eq!(ps(r#"{"gpu_power_w_source":"instant"}"#), None);
        assert_eq!(
            ps(r#"{"gpus":[{"index":0},{"gpu_power_w_source":"instant"}]}"#),
            None
        );
        assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":"INSTANT"}]}"#), None);
        assert_eq!(ps(r#"{"gpus":[{"gpu_power_w_source":186}]}"#), None);
        assert_eq!(ps(r#"{"gpus":{"gpu_power_w_source":"instant"}}"#), None);
        assert_eq!(
            ps(r#"{"power_source":"average","gpus":[{"gpu_power_w_source":"instant"}]}"#),
            Some(PowerSource::Instant)
        );
        // Trailing bytes after the object: not a JSON document.
        assert_eq!(ps(r#"{"gpus":[]} x"#), None);
    }

    #[test]
    fn the_bundled_sidecars() {
        let read = |name: &str| {
            std::fs::read(std::format!(
                "{}/../examples/{name}/trace.csv.meta.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
        };
        assert_eq!(power_source(&read("h200")), Some(PowerSource::Instant));
        assert_eq!(power_source(&read("host-only")), None);
    }
}
