//! The recording as Chrome-trace events on the trace's own `ts` clock, for one merged file that
//! Perfetto UI shows with a counter track per signal beside the kernels.
//!
//! [`CounterEvents`] turns each trace.csv row into JSON events (no allocation per row once its
//! buffer has grown): per GPU counters (`"ph":"C"`, numeric `args`) for power (W),
//! utilization (%), SM clock (MHz) and memory used (MiB) on the trace device's `pid` (through
//! the inverse of `--gpu-map`); host counters (CPU %, memory used, RAPL package power in W from
//! the cumulative µJ counter, wrapping at its recorded maximum) once per sampling tick on a
//! `pid` of their own; marks as global instant events (`"ph":"i","s":"g"`). Every event has
//! `"cat":"flinch_telemetry"` (marks `"flinch_mark"`). `ts` is `(t_wall_ns − offset_ns) / 1000`
//! written exactly with three decimals.
use alloc::string::String;
use core::fmt::Write;

use super::clock::{Alignment, GpuMap};
use crate::csv::{Col, Row, RowKind};

/// The `pid` of the host counters (named by a metadata event).
pub const HOST_PID: i64 = 2_147_483_646;

/// Writes the events of each row into a reusable buffer.
pub struct CounterEvents {
    align: Alignment,
    gpu_map: GpuMap,
    last_host_t: Option<i64>,
    rapl_prev: Option<(i64, u64)>,
    buf: String,
    /// Events written.
    pub events: u64,
    /// Rows without a `t_wall_ns` (skipped).
    pub rows_without_wall: u64,
}

/// `ns` as µs with exactly three decimals (`-1500` → `-1.500`).
fn push_us(out: &mut String, ns: i64) {
    let a = ns.unsigned_abs();
    let sign = if ns < 0 { "-" } else { "" };
    let _ = write!(out, "{sign}{}.{:03}", a / 1000, a % 1000);
}

/// A finite value as JSON (non-finite ones are left out by the caller).
fn push_num(out: &mut String, v: f64) {
    let _ = write!(out, "{v}");
}

impl CounterEvents {
    /// Events for a trace aligned by `align`, devices mapped by `gpu_map`.
    pub fn new(align: Alignment, gpu_map: GpuMap) -> CounterEvents {
        CounterEvents {
            align,
            gpu_map,
            last_host_t: None,
            rapl_prev: None,
            buf: String::new(),
            events: 0,
            rows_without_wall: 0,
        }
    }

    /// The metadata event that names the host counters' process, with a leading `,\n`.
    pub fn preamble(&mut self) -> &str {
        self.buf.clear();
        let _ = write!(
            self.buf,
            ",\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{HOST_PID},\"tid\":0,\"cat\":\"flinch_telemetry\",\"args\":{{\"name\":\"flinch-trace recording (host)\"}}}}"
        );
        self.events += 1;
        &self.buf
    }

    fn counter(&mut self, pid: i64, name: &str, ts_ns: i64, unit: &str, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            return;
        };
        self.buf
            .push_str(",\n{\"ph\":\"C\",\"cat\":\"flinch_telemetry\",\"name\":\"");
        self.buf.push_str(name);
        let _ = write!(self.buf, "\",\"pid\":{pid},\"tid\":0,\"ts\":");
        push_us(&mut self.buf, ts_ns);
        self.buf.push_str(",\"args\":{\"");
        self.buf.push_str(unit);
        self.buf.push_str("\":");
        push_num(&mut self.buf, v);
        self.buf.push_str("}}");
        self.events += 1;
    }

    /// The events of one row, each with a leading `,\n` (empty for rows with nothing to show).
    pub fn row(&mut self, row: &Row<'_>) -> &str {
        self.buf.clear();
        let kind = row.kind();
        if kind == RowKind::Other {
            return &self.buf;
        }
        let Some(t_wall) = row.i64(Col::TWallNs) else {
            self.rows_without_wall += 1;
            return &self.buf;
        };
        let ts = t_wall.wrapping_sub(self.align.offset_ns);
        if kind == RowKind::Mark {
            self.buf
                .push_str(",\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"flinch_mark\",\"name\":");
            json_string(&mut self.buf, row.label());
            self.buf.push_str(",\"pid\":0,\"tid\":0,\"ts\":");
            push_us(&mut self.buf, ts);
            self.buf.push('}');
            self.events += 1;
            return &self.buf;
        }
        let g = row.i64(Col::GpuIndex).unwrap_or(0);
        let pid = self.gpu_map.device(g);
        let mut name = String::new();
        for (col, label, unit) in [
            (Col::GpuPowerW, "power", "W"),
            (Col::GpuUtilPct, "util", "%"),
            (Col::GpuSmClockMhz, "SM clock", "MHz"),
            (Col::GpuMemUsedMib, "memory used", "MiB"),
        ] {
            name.clear();
            let _ = write!(name, "GPU {g} {label}");
            self.counter(pid, &name, ts, unit, row.f64(col));
        }
        // Host columns repeat on every GPU's row of a tick: once per tick.
        if self.last_host_t != Some(t_wall) {
            self.last_host_t = Some(t_wall);
            self.counter(HOST_PID, "host CPU", ts, "%", row.f64(Col::HostCpuPct));
            self.counter(
                HOST_PID,
                "host memory used",
                ts,
                "MiB",
                row.f64(Col::HostMemUsedMib),
            );
            let uj = row
                .i64(Col::RaplEnergyUj)
                .and_then(|v| u64::try_from(v).ok());
            if let Some(uj) = uj {
                let max = row
                    .i64(Col::RaplMaxEnergyRangeUj)
                    .and_then(|v| u64::try_from(v).ok());
                if let Some((tp, up)) = self.rapl_prev
                    && let Some(dt) = t_wall.checked_sub(tp).filter(|&d| d > 0)
                {
                    let delta = if uj >= up {
                        Some(uj - up)
                    } else {
                        max.and_then(|m| m.checked_sub(up)?.checked_add(uj))
                    };
                    if let Some(d) = delta {
                        // µJ per ns → W: 1e-6 J / 1e-9 s.
                        let w = d as f64 * 1e3 / dt as f64;
                        self.counter(HOST_PID, "package power (RAPL)", ts, "W", Some(w));
                    }
                }
                self.rapl_prev = Some((t_wall, uj));
            }
        }
        &self.buf
    }
}

/// `s` as a JSON string (invalid UTF-8 replaced).
fn json_string(out: &mut String, s: &[u8]) {
    out.push('"');
    for c in String::from_utf8_lossy(s).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::{CsvEvent, TraceCsvReader};

    fn events_of(csv: &str, align: Alignment) -> String {
        let mut r = TraceCsvReader::new();
        let mut ce = CounterEvents::new(align, GpuMap::parse("0=1,1=0").unwrap());
        let mut out = String::new();
        let mut input = csv.as_bytes();
        while !input.is_empty() {
            let (ev, n) = r.read(input);
            input = &input[n..];
            if ev == CsvEvent::Row {
                out.push_str(ce.row(&r.row()));
            }
        }
        loop {
            let (ev, _) = r.read(&[]);
            if ev == CsvEvent::Row {
                out.push_str(ce.row(&r.row()));
            }
            if ev == CsvEvent::End {
                break;
            }
        }
        out
    }

    #[test]
    fn rows_become_counters_and_marks() {
        let csv = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_mem_used_MiB,host_cpu_pct,rapl_max_energy_range_uj\n\
            1,1000,SAMPLE,,100.5,50,,1400,,990,0,2048,12.5,1000\n\
            1,1000,SAMPLE,,,,,,,990,1,,12.5,1000\n\
            2,2000500,SAMPLE,,,,,,,10,0,,,1000\n\
            3,1500,MARK,\"step \"\"a\"\"\",,,,,,,,,,\n";
        let align = Alignment::new(Some(2000), None).unwrap();
        let out = events_of(csv, align);
        let doc = std::format!("[{}]", &out[1..]);
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        let a = v.as_array().unwrap();
        // GPU 0 maps to trace device 1 (the map is 0=1,1=0).
        assert_eq!(a[0]["name"], "GPU 0 power");
        assert_eq!(a[0]["pid"], 1);
        assert!(out.contains("\"ts\":-1.000,"));
        assert_eq!(a[0]["args"]["W"], 100.5);
        assert_eq!(a[1]["name"], "GPU 0 util");
        assert_eq!(a[2]["args"]["MHz"], 1400.0);
        assert_eq!(a[3]["args"]["MiB"], 2048.0);
        assert_eq!(a[4]["name"], "host CPU");
        assert_eq!(a[4]["pid"], HOST_PID);
        // The second GPU's row of the same tick adds no host counter.
        // RAPL: 990 → 10 wraps at 1000: 20 µJ over 1 999 500 ns.
        let rapl = a
            .iter()
            .find(|e| e["name"] == "package power (RAPL)")
            .unwrap();
        assert_eq!(rapl["args"]["W"], 20.0 * 1e3 / 1_999_500.0);
        assert!(out.contains("\"ts\":1998.500"));
        let mark = a.last().unwrap();
        assert_eq!(mark["ph"], "i");
        assert_eq!(mark["s"], "g");
        assert_eq!(mark["name"], "step \"a\"");
        assert!(out.contains("\"ts\":-0.500}"));
        assert_eq!(a.iter().filter(|e| e["name"] == "host CPU").count(), 1);
    }

    #[test]
    fn exact_microseconds() {
        let mut s = String::new();
        for ns in [0, 1, -1, 999, -1500, 1_712_195_495_406_752_800] {
            s.clear();
            push_us(&mut s, ns);
            assert_eq!(crate::json::parse_us_to_ns(s.as_bytes()), Some(ns), "{s}");
        }
        assert_eq!(s, "1712195495406752.800");
    }
}
