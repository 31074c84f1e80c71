//! Fuzz target `sidecar`: arbitrary bytes as a `<csv>.meta.json`, fed in fuzzer-chosen chunks
//! to `flinch_core::sidecar::PowerSourceScanner` (the rule the CLI, the page and the firmware
//! share). Must never panic; the answer must not depend on the chunk sizes, and must be what
//! serde_json gives reading the rule's fields, except for the forms serde_json also takes
//! (a struct from an array, an enum from an object) and nesting past `MAX_DEPTH`.
#![no_main]

use flinch_core::sidecar::{PowerSourceScanner, power_source};
use flinch_core::window::PowerSource;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(serde::Deserialize)]
struct SidecarView {
    gpus: Vec<GpuView>,
}

#[derive(serde::Deserialize)]
struct GpuView {
    gpu_power_w_source: PowerSource,
}

fn oracle(text: &[u8]) -> Option<Option<PowerSource>> {
    // Where serde_json reads more than the rule, there is nothing to compare.
    if let Ok(v) = serde_json::from_slice::<Value>(text) {
        let odd = v.is_array()
            || v.get("gpus").and_then(Value::as_array).is_some_and(|g| {
                g.iter().any(|x| {
                    x.is_array() || x.get("gpu_power_w_source").is_some_and(Value::is_object)
                })
            });
        if odd {
            return None;
        }
    }
    if text.iter().filter(|&&b| b == b'[' || b == b'{').count() >= 100 {
        return None;
    }
    Some(
        serde_json::from_slice::<SidecarView>(text)
            .ok()
            .and_then(|v| {
                v.gpus
                    .iter()
                    .map(|g| g.gpu_power_w_source)
                    .find(|s| *s != PowerSource::Unknown)
            }),
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, text)) = data.split_first() else {
        return;
    };
    let whole = power_source(text);
    let mut scan = PowerSourceScanner::new();
    for c in text.chunks(1 + knob as usize) {
        scan.push(c);
    }
    assert_eq!(scan.finish(), whole);
    if let Some(want) = oracle(text) {
        assert_eq!(whole, want);
    }
});
