//! NVML through nvml-wrapper, loaded at run time (no GPU or no libnvidia-ml: `open` says why).
use flinch_core::window::PowerSource;
use nvml_wrapper::Device;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::structs::device::FieldId;

use super::gpu::{GpuInfo, GpuReading, GpuSource};
use super::slow::{SlowReader, SlowReading};

/// `NVML_FI_DEV_POWER_INSTANT` from nvml.h: instantaneous board power, mW.
pub const FI_DEV_POWER_INSTANT: u32 = 186;

/// Driver facts for the sidecar.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct DriverInfo {
    /// `nvmlSystemGetDriverVersion`.
    pub driver_version: Option<String>,
    /// `nvmlSystemGetNVMLVersion`.
    pub nvml_version: Option<String>,
}

struct Gpu {
    device: Device<'static>,
    instant_power: bool,
    /// `nvmlDeviceGetTotalEnergyConsumption` answered at start (Volta and newer).
    energy_counter: bool,
}

/// The selected NVIDIA GPUs.
pub struct NvmlSource {
    nvml: &'static Nvml,
    gpus: Vec<Gpu>,
    /// The slow queries are read by the poller (see [`super::slow`]), not by `read`.
    slow_split: bool,
    info: Vec<GpuInfo>,
    /// Driver and library versions.
    pub driver: DriverInfo,
}

fn sample_to_f64(v: &SampleValue) -> f64 {
    match *v {
        SampleValue::F64(x) => x,
        SampleValue::U32(x) => x as f64,
        SampleValue::U64(x) => x as f64,
        SampleValue::I64(x) => x as f64,
    }
}

fn instant_power_mw(device: &Device<'static>) -> Option<f64> {
    let values = device
        .field_values_for(&[FieldId(FI_DEV_POWER_INSTANT)])
        .ok()?;
    let sample = values.into_iter().next()?.ok()?;
    sample.value.ok().map(|v| sample_to_f64(&v))
}

impl NvmlSource {
    /// Loads libnvidia-ml, initializes NVML and selects `wanted` GPU indices (all when `None`).
    ///
    /// # Errors
    /// A one-line reason: the library cannot be loaded, NVML fails to initialize, there are no
    /// GPUs, or a wanted index does not exist.
    pub fn open(wanted: Option<&[u32]>) -> Result<Self, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML unavailable ({e})"))?;
        // NVML lives for the whole process; leaking it gives the device handles a 'static life.
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML device count failed ({e})"))?;
        if count == 0 {
            return Err("NVML found no GPU".to_string());
        }
        let indices: Vec<u32> = match wanted {
            Some(w) => w.to_vec(),
            None => (0..count).collect(),
        };
        let mut gpus = Vec::new();
        let mut info = Vec::new();
        for &index in &indices {
            if index >= count {
                return Err(format!(
                    "--gpu {index}: this host has {count} GPU(s) (0..{})",
                    count - 1
                ));
            }
            let device = nvml
                .device_by_index(index)
                .map_err(|e| format!("NVML GPU {index}: {e}"))?;
            let instant_power = instant_power_mw(&device).is_some();
            let energy_counter = device.total_energy_consumption().is_ok();
            // Slow queries, once, before the sampling loop starts.
            info.push(GpuInfo {
                index,
                name: device.name().ok(),
                uuid: device.uuid().ok(),
                pci_bus_id: device.pci_info().ok().map(|p| p.bus_id),
                mem_total_mib: device.memory_info().ok().map(|m| m.total / 1_048_576),
                power_limit_w: device
                    .power_management_limit()
                    .ok()
                    .map(|mw| mw as f64 / 1000.0),
                compute_processes_at_start: device
                    .running_compute_processes()
                    .ok()
                    .map(|ps| ps.iter().map(|p| p.pid).collect()),
            });
            gpus.push(Gpu {
                device,
                instant_power,
                energy_counter,
            });
        }
        let driver = DriverInfo {
            driver_version: nvml.sys_driver_version().ok(),
            nvml_version: nvml.sys_nvml_version().ok(),
        };
        Ok(NvmlSource {
            nvml,
            gpus,
            slow_split: false,
            info,
            driver,
        })
    }
}

impl GpuSource for NvmlSource {
    fn info(&self) -> &[GpuInfo] {
        &self.info
    }

    fn has_energy_counter(&self, slot: usize) -> bool {
        self.gpus.get(slot).is_some_and(|g| g.energy_counter)
    }

    fn power_kind(&self, slot: usize) -> PowerSource {
        if self.gpus.get(slot).is_some_and(|g| g.instant_power) {
            PowerSource::Instant
        } else {
            PowerSource::Average
        }
    }

    fn split_slow(&mut self) -> Option<Box<dyn SlowReader>> {
        let devices = self
            .info
            .iter()
            .map(|i| self.nvml.device_by_index(i.index).ok())
            .collect();
        self.slow_split = true;
        Some(Box::new(NvmlSlow { devices }))
    }

    fn read(&mut self, slot: usize, full: bool) -> GpuReading {
        let Some(g) = self.gpus.get(slot) else {
            return GpuReading::default();
        };
        let d = &g.device;
        let power_mw = if g.instant_power {
            instant_power_mw(d).or_else(|| d.power_usage().ok().map(f64::from))
        } else {
            d.power_usage().ok().map(f64::from)
        };
        let util = d.utilization_rates().ok();
        GpuReading {
            power_w: power_mw.map(|mw| mw / 1000.0),
            energy_mj: if self.slow_split {
                None
            } else {
                d.total_energy_consumption().ok()
            },
            util_pct: util.as_ref().map(|u| u.gpu),
            mem_util_pct: util.as_ref().map(|u| u.memory),
            sm_clock_mhz: d.clock_info(Clock::SM).ok(),
            temp_c: d.temperature(TemperatureSensor::Gpu).ok(),
            mem_used_mib: if self.slow_split {
                None
            } else {
                d.memory_info().ok().map(|m| m.used / 1_048_576)
            },
            throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
            mem_clock_mhz: if full {
                d.clock_info(Clock::Memory).ok()
            } else {
                None
            },
        }
    }
}

/// The slow queries of the selected GPUs, for the poller's thread (own device handles; NVML is
/// thread-safe).
struct NvmlSlow {
    devices: Vec<Option<Device<'static>>>,
}

impl SlowReader for NvmlSlow {
    fn slots(&self) -> usize {
        self.devices.len()
    }

    fn read(&mut self, slot: usize) -> SlowReading {
        let Some(Some(d)) = self.devices.get(slot) else {
            return SlowReading::default();
        };
        SlowReading {
            energy_mj: d.total_energy_consumption().ok(),
            mem_used_mib: d.memory_info().ok().map(|m| m.used / 1_048_576),
        }
    }
}
