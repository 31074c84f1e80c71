//! The sidecar `<csv path>.meta.json`: what describes the recording (never comment lines in the
//! CSV, which the reference reader would choke on). Written at start and rewritten at the end
//! with the sampler's health; readers must not require it. Written and read back through the
//! one struct [`Sidecar`] (docs/formats.md).
use std::path::{Path, PathBuf};

use flinch_core::window::PowerSource;
use serde::{Deserialize, Serialize};

use super::gpu::GpuInfo;
use super::health::HealthSummary;
use super::nvml::DriverInfo;
use super::rapl::ZoneInfo;

/// One selected GPU and which reading fills its `gpu_power_W`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuEntry {
    /// Static facts, queried once at start.
    #[serde(flatten)]
    pub info: GpuInfo,
    /// `"instant"` (NVML field 186, NVML_FI_DEV_POWER_INSTANT) or `"average"`
    /// (nvmlDeviceGetPowerUsage, a 1 s average on Ampere and newer).
    pub gpu_power_w_source: PowerSource,
}

/// The host the recording ran on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -n`.
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel: Option<String>,
    /// Online CPUs.
    pub cpus: Option<usize>,
}

/// NVTX injection into the recorded command (see docs/nvtx.md).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NvtxInfo {
    /// The injection library given as `NVTX_INJECTION64_PATH`.
    pub library: String,
    /// Processes whose NVTX library sent marks (null until the recording ends).
    pub processes: Option<u64>,
    /// Of those, the ones that sent no statistics at exit (ended by `_exit` or a signal).
    pub unreported_processes: Option<u64>,
    /// Marks the reporting processes wrote.
    pub marks: Option<u64>,
    /// Marks lost: those the processes reported dropped (buffer full, or no reader), plus
    /// `lost_unreported`.
    pub dropped: Option<u64>,
    /// Marks lost with the unreported processes (queued when they ended, or dropped), from the
    /// counts file they share with the recorder; null when no process could map it (then such
    /// losses are counted nowhere, and a warning says so).
    #[serde(default)]
    pub lost_unreported: Option<u64>,
}

/// The whole sidecar.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sidecar {
    /// `"flinch-trace"`.
    pub tool: String,
    /// Tool version.
    pub version: String,
    /// The CSV this describes.
    pub csv: String,
    /// Whether rows were appended to an existing file (the sidecar describes the latest run).
    pub appended: bool,
    /// CSV header columns.
    pub columns: Vec<String>,
    /// Tick period, ms.
    pub interval_ms: f64,
    /// `"CLOCK_MONOTONIC"`, or `"virtual"` for a deterministic test recording.
    pub clock: String,
    /// `"nvml"`, `"scripted"` (test source) or `"none"`.
    pub gpu_source: String,
    /// Why there is no GPU data, when there is none.
    pub gpu_unavailable: Option<String>,
    /// NVML driver facts.
    pub nvml: Option<DriverInfo>,
    /// Selected GPUs.
    pub gpus: Vec<GpuEntry>,
    /// RAPL zones (primary first when given with --rapl), each with its wrap point.
    pub rapl_zones: Vec<ZoneInfo>,
    /// Host CPU/memory period, ms (null: not recorded).
    pub host_interval_ms: Option<f64>,
    /// Host-telemetry JSONL written alongside, if any.
    pub host_jsonl: Option<String>,
    /// The host.
    pub host: HostInfo,
    /// Marks FIFO, if any.
    pub marks_fifo: Option<String>,
    /// The command recorded, if any.
    pub command: Option<Vec<String>>,
    /// NVTX injection into the command (null: off, or no command).
    pub nvtx: Option<NvtxInfo>,
    /// First recording tick, wall clock ns.
    pub started_wall_ns: u64,
    /// First recording tick, CLOCK_MONOTONIC ns.
    pub started_mono_ns: u64,
    /// Warnings printed at start.
    pub warnings: Vec<String>,
    /// Sampler health (null until the recording ends).
    pub health: Option<HealthSummary>,
    /// How the recording ended (null while running).
    pub ended_by: Option<String>,
}

/// `<csv>.meta.json` and the power source it names: the std driver's, which `analyze` and
/// `trace --telemetry` read through.
pub use flinch_host::sidecar::{path_for, power_source};

/// Host facts from uname and the CPU count.
pub fn host_info() -> HostInfo {
    // SAFETY: a zeroed utsname is a valid out-parameter for uname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    let ok = unsafe { libc::uname(&mut u) } == 0;
    let field = |f: &[libc::c_char]| -> Option<String> {
        ok.then(|| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    HostInfo {
        hostname: field(&u.nodename),
        kernel: field(&u.release),
        cpus: std::thread::available_parallelism().ok().map(|n| n.get()),
    }
}

impl Sidecar {
    /// Reads the sidecar of `csv`: `None` when there is none, or it does not parse as one.
    #[cfg(test)]
    pub fn read(csv: &Path) -> Option<Sidecar> {
        let text = std::fs::read_to_string(path_for(csv)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the sidecar atomically (temporary file, then rename).
    pub fn write(&self, csv: &Path) -> Result<(), String> {
        let path = path_for(csv);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        // A fresh file (create_new after removing any leftover): opening whatever sits at the
        // temporary path, a FIFO included, could block.
        let _ = std::fs::remove_file(&tmp);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("warning: cannot write sidecar {}: {e}", path.display())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/{name}/trace.csv"))
    }

    #[test]
    fn real_sidecars_read_back_through_the_struct_that_writes_them() {
        let h200 = Sidecar::read(&example("h200")).expect("the H200 sidecar parses");
        assert_eq!(h200.gpus.len(), 1);
        assert_eq!(h200.gpus[0].info.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(power_source(&example("h200")), Some(PowerSource::Instant));
        assert_eq!(h200.health.as_ref().map(|h| h.ticks), Some(1450));
        let host_only = Sidecar::read(&example("host-only")).expect("the host-only sidecar parses");
        assert!(host_only.gpus.is_empty());
        assert_eq!(power_source(&example("host-only")), None);
        let missing = Path::new("tests/analyze/does-not-exist.csv");
        assert!(Sidecar::read(missing).is_none());
        assert_eq!(power_source(missing), None);
    }

    #[test]
    fn written_and_read_back_is_the_same_sidecar() {
        let mut side = Sidecar::read(&example("h200")).unwrap();
        side.gpus[0].gpu_power_w_source = PowerSource::Average;
        let dir = std::env::temp_dir().join(format!("flinch-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("trace.csv");
        side.write(&csv).unwrap();
        let back = Sidecar::read(&csv).unwrap();
        assert_eq!(power_source(&csv), Some(PowerSource::Average));
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&side).unwrap()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
