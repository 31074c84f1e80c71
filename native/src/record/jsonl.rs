//! The host-telemetry JSONL row (`record --host-jsonl`, docs/formats.md), in the schema
//! `summarize` reads from `<name>-host/telemetry.jsonl`: one typed row, written with serde.
use serde::{Deserialize, Serialize, Serializer};

use super::gpu::{GpuInfo, GpuReading};
use super::host::HostReading;

/// One line of the host-telemetry JSONL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    /// Wall clock, s.
    pub unix: f64,
    /// Host memory, bytes.
    pub host_memory: HostMemory,
    /// Busy share of all CPUs since the previous host reading, %; a whole number is written
    /// without a fraction (`12`, not `12.0`), as the reading is a count of jiffies.
    #[serde(serialize_with = "whole_as_int")]
    pub host_cpu_percent: Option<f64>,
    /// The first selected GPU ([`gpu_csv`]); absent without a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_csv: Option<String>,
    /// Every selected GPU, present when there are several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_csv: Option<Vec<String>>,
}

/// `host_memory` of a [`HostRow`], bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    /// `MemAvailable`.
    pub available: Option<u64>,
    /// `MemTotal - MemAvailable`.
    pub used: Option<u64>,
    /// `MemTotal`.
    pub total: Option<u64>,
}

fn whole_as_int<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        Some(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 => {
            s.serialize_i64(x as i64)
        }
        Some(x) if x.is_finite() => s.serialize_f64(x),
        _ => s.serialize_none(),
    }
}

/// Seconds of a CLOCK_REALTIME reading in ns: the f64 nearest to the exact decimal.
fn unix_seconds(wall_ns: u64) -> f64 {
    let text = format!("{}.{:09}", wall_ns / 1_000_000_000, wall_ns % 1_000_000_000);
    text.parse().unwrap_or(wall_ns as f64 / 1e9)
}

/// The `gpu_csv` field: index, uuid, memory used MiB, memory total MiB, temperature C, power W,
/// SM clock MHz, memory clock MHz, GPU utilization %, memory utilization % (empty where
/// unavailable). Commas, quotes and backslashes are dropped from the UUID so that the ten fields
/// stay ten.
pub fn gpu_csv(info: &GpuInfo, r: &GpuReading) -> String {
    fn f<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or_else(String::new, |v| v.to_string())
    }
    let uuid = info
        .uuid
        .as_deref()
        .unwrap_or("")
        .replace(['"', '\\', ','], "");
    [
        info.index.to_string(),
        uuid,
        f(r.mem_used_mib),
        f(info.mem_total_mib),
        f(r.temp_c),
        f(r.power_w),
        f(r.sm_clock_mhz),
        f(r.mem_clock_mhz),
        f(r.util_pct),
        f(r.mem_util_pct),
    ]
    .join(",")
}

impl HostRow {
    /// The row for one reading: the host's, and each selected GPU's (`gpus` and `readings` in
    /// slot order).
    pub fn new(
        wall_ns: u64,
        host: Option<HostReading>,
        gpus: &[GpuInfo],
        readings: &[GpuReading],
    ) -> HostRow {
        let h = host.unwrap_or_default();
        let n = gpus.len().min(readings.len());
        let csv: Vec<String> = (0..n).map(|i| gpu_csv(&gpus[i], &readings[i])).collect();
        HostRow {
            unix: unix_seconds(wall_ns),
            host_memory: HostMemory {
                available: h.mem_available_bytes,
                used: h.mem_used_bytes,
                total: h.mem_total_bytes,
            },
            host_cpu_percent: h.cpu_pct,
            gpu_csv: csv.first().cloned(),
            gpus_csv: (n > 1).then_some(csv),
        }
    }

    /// Appends the row as one JSON line.
    pub fn push_line(&self, buf: &mut Vec<u8>) {
        // Serializing plain fields into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, self);
        buf.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The row as text, field by field: what `summarize` and the Python tool must read alike.
    fn oracle(wall_ns: u64, h: HostReading, gpus: &[(u32, &str, u64)], r: &GpuReading) -> String {
        let num = |v: Option<f64>| match v {
            Some(v) if v.is_finite() => format!("{v}"),
            _ => "null".to_string(),
        };
        let one = |(index, uuid, total): &(u32, &str, u64)| {
            let o = |v: Option<String>| v.unwrap_or_default();
            format!(
                "\"{index},{uuid},{},{total},{},{},{},{},{},{}\"",
                o(r.mem_used_mib.map(|v| v.to_string())),
                o(r.temp_c.map(|v| v.to_string())),
                o(r.power_w.map(|v| v.to_string())),
                o(r.sm_clock_mhz.map(|v| v.to_string())),
                o(r.mem_clock_mhz.map(|v| v.to_string())),
                o(r.util_pct.map(|v| v.to_string())),
                o(r.mem_util_pct.map(|v| v.to_string())),
            )
        };
        let mut s = format!(
            "{{\"unix\":{}.{:09},\"host_memory\":{{\"available\":{},\"used\":{},\"total\":{}}},\"host_cpu_percent\":{}",
            wall_ns / 1_000_000_000,
            wall_ns % 1_000_000_000,
            num(h.mem_available_bytes.map(|x| x as f64)),
            num(h.mem_used_bytes.map(|x| x as f64)),
            num(h.mem_total_bytes.map(|x| x as f64)),
            num(h.cpu_pct),
        );
        if let Some(first) = gpus.first() {
            s += &format!(",\"gpu_csv\":{}", one(first));
        }
        if gpus.len() > 1 {
            let all: Vec<String> = gpus.iter().map(one).collect();
            s += &format!(",\"gpus_csv\":[{}]", all.join(","));
        }
        s + "}\n"
    }

    #[test]
    fn rows_read_as_the_field_by_field_text_does_and_back_into_the_row() {
        let r = GpuReading {
            power_w: Some(71.25),
            util_pct: Some(99),
            mem_util_pct: None,
            sm_clock_mhz: Some(1980),
            temp_c: Some(60),
            energy_mj: Some(123),
            mem_used_mib: Some(1000),
            throttle_reasons: Some(4),
            mem_clock_mhz: Some(2619),
        };
        let info = |index: u32, uuid: &str| GpuInfo {
            index,
            uuid: Some(uuid.to_string()),
            mem_total_mib: Some(81920),
            ..GpuInfo::default()
        };
        let hosts = [
            HostReading::default(),
            HostReading {
                cpu_pct: Some(12.0),
                mem_used_bytes: Some(3 << 30),
                mem_available_bytes: Some(5 << 30),
                mem_total_bytes: Some(8 << 30),
            },
            HostReading {
                cpu_pct: Some(12.345678901234567),
                ..HostReading::default()
            },
            HostReading {
                cpu_pct: Some(f64::NAN),
                ..HostReading::default()
            },
        ];
        let gpu_sets: [&[(u32, &str, u64)]; 3] = [
            &[],
            &[(0, "GPU-a", 81920)],
            &[(0, "GPU-a", 81920), (2, "GPU-b", 81920)],
        ];
        for wall_ns in [1_764_600_000_123_456_789, 1_764_600_000_000_000_000, 999] {
            for h in hosts {
                for set in gpu_sets {
                    let infos: Vec<GpuInfo> = set.iter().map(|(i, u, _)| info(*i, u)).collect();
                    let readings = vec![r; set.len()];
                    let row = HostRow::new(wall_ns, Some(h), &infos, &readings);
                    let mut line = Vec::new();
                    row.push_line(&mut line);
                    assert_eq!(line.last(), Some(&b'\n'));
                    let want = oracle(wall_ns, h, set, &r);
                    // Equal as parsed JSON: the same numbers, ints as ints and floats as floats.
                    let got: Value = serde_json::from_slice(&line).unwrap();
                    assert_eq!(got, serde_json::from_str::<Value>(&want).unwrap(), "{want}");
                    if h.cpu_pct.is_some_and(f64::is_finite) {
                        let back: HostRow = serde_json::from_slice(&line).unwrap();
                        assert_eq!(back, row);
                    }
                }
            }
        }
    }
}
