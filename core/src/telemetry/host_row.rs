//! One line of the host-telemetry JSONL (docs/formats.md, "Host telemetry JSONL"): the row
//! `record --host-jsonl` writes and `summarize` reads from `<name>-host/telemetry.jsonl`. The
//! keys are named once, in [`keys`]: the row is serialized under them, and the reader
//! (`runs::telemetry`) looks them up in each line.
use alloc::string::String;
use alloc::vec::Vec;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// The keys of a host-telemetry row.
pub mod keys {
    /// Wall clock, s.
    pub const UNIX: &str = "unix";
    /// The host memory object.
    pub const HOST_MEMORY: &str = "host_memory";
    /// `host_memory`'s `MemAvailable`, bytes.
    pub const AVAILABLE: &str = "available";
    /// `host_memory`'s `MemTotal - MemAvailable`, bytes.
    pub const USED: &str = "used";
    /// `host_memory`'s `MemTotal`, bytes.
    pub const TOTAL: &str = "total";
    /// Busy share of all CPUs, %.
    pub const HOST_CPU_PERCENT: &str = "host_cpu_percent";
    /// The first GPU's CSV line.
    pub const GPU_CSV: &str = "gpu_csv";
    /// Every GPU's CSV line, when there are several.
    pub const GPUS_CSV: &str = "gpus_csv";
    /// The power-supply object, which the reference tool writes (the recorder does not).
    pub const POWER: &str = "power";
    /// `power`'s AC line state.
    pub const AC_LINE_STATUS: &str = "ACLineStatus";
}

/// One line of the host-telemetry JSONL.
#[derive(Clone, Debug, PartialEq)]
pub struct HostRow {
    /// Wall clock, s.
    pub unix: f64,
    /// Host memory, bytes.
    pub host_memory: HostMemory,
    /// Busy share of all CPUs since the previous host reading, %; a whole number is written
    /// without a fraction (`12`, not `12.0`), as the reading is a count of jiffies.
    pub host_cpu_percent: Option<f64>,
    /// The first selected GPU's CSV line; absent without a GPU.
    pub gpu_csv: Option<String>,
    /// Every selected GPU's, present when there are several.
    pub gpus_csv: Option<Vec<String>>,
}

/// `host_memory` of a [`HostRow`], bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostMemory {
    /// `MemAvailable`.
    pub available: Option<u64>,
    /// `MemTotal - MemAvailable`.
    pub used: Option<u64>,
    /// `MemTotal`.
    pub total: Option<u64>,
}

impl Serialize for HostRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = 3 + usize::from(self.gpu_csv.is_some()) + usize::from(self.gpus_csv.is_some());
        let mut row = s.serialize_struct("HostRow", n)?;
        row.serialize_field(keys::UNIX, &self.unix)?;
        row.serialize_field(keys::HOST_MEMORY, &self.host_memory)?;
        row.serialize_field(keys::HOST_CPU_PERCENT, &WholeAsInt(self.host_cpu_percent))?;
        match &self.gpu_csv {
            Some(csv) => row.serialize_field(keys::GPU_CSV, csv)?,
            None => row.skip_field(keys::GPU_CSV)?,
        }
        match &self.gpus_csv {
            Some(all) => row.serialize_field(keys::GPUS_CSV, all)?,
            None => row.skip_field(keys::GPUS_CSV)?,
        }
        row.end()
    }
}

impl Serialize for HostMemory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("HostMemory", 3)?;
        m.serialize_field(keys::AVAILABLE, &self.available)?;
        m.serialize_field(keys::USED, &self.used)?;
        m.serialize_field(keys::TOTAL, &self.total)?;
        m.end()
    }
}

/// A percentage written as an integer when it is a whole number, `null` when not finite.
struct WholeAsInt(Option<f64>);

impl Serialize for WholeAsInt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(x) if x.abs() < 9.0e15 && (x as i64) as f64 == x => s.serialize_i64(x as i64),
            Some(x) if x.is_finite() => s.serialize_f64(x),
            _ => s.serialize_none(),
        }
    }
}
