//! The host-telemetry JSONL row (`record --host-jsonl`, docs/formats.md): flinch-core's typed
//! [`HostRow`], whose keys `summarize` reads back, filled from the readings and written with serde.
use flinch_core::telemetry::{HostMemory, HostRow};

use super::gpu::{GpuInfo, GpuReading};
use super::host::HostReading;

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

/// The row for one reading: the host's, and each selected GPU's (`gpus` and `readings` in slot
/// order).
pub fn host_row(
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

/// Appends `row` as one JSON line.
pub fn push_line(row: &HostRow, buf: &mut Vec<u8>) {
    // Serializing plain fields into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, row);
    buf.push(b'\n');
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
    fn rows_read_as_the_field_by_field_text_does() {
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
                    let row = host_row(wall_ns, Some(h), &infos, &readings);
                    let mut line = Vec::new();
                    push_line(&row, &mut line);
                    assert_eq!(line.last(), Some(&b'\n'));
                    let want = oracle(wall_ns, h, set, &r);
                    // Equal as parsed JSON: the same numbers, ints as ints and floats as floats.
                    let got: Value = serde_json::from_slice(&line).unwrap();
                    assert_eq!(got, serde_json::from_str::<Value>(&want).unwrap(), "{want}");
                }
            }
        }
    }
}
