//! The recording as Chrome-trace events on the trace's own `ts` clock, for one merged file that
//! Perfetto UI shows with a counter track per signal beside the kernels.
//!
//! [`CounterEvents`] turns each trace.csv row into JSON events (no allocation per row once its
//! buffers have grown): per GPU counters (`"ph":"C"`, numeric `args`) for power (W),
//! utilization (%), SM clock (MHz) and memory used (MiB) on the trace device's `pid` (through
//! the inverse of `--gpu-map`); host counters (CPU %, memory used, RAPL package power in W from
//! the cumulative µJ counter, wrapping at its recorded maximum) once per sampling tick on a
//! `pid` of their own. Every event has `"cat":"flinch_telemetry"` (marks `"flinch_mark"`).
//! `ts` is `(t_wall_ns − offset_ns) / 1000` written exactly with three decimals; a row whose
//! trace time leaves the `i64` ns range is skipped and counted (`rows_out_of_range`).
//!
//! Marks pair as `analyze --spans` pairs them (`X_start`/`X_begin` with the latest open `X_end`
//! of the same `mark_thread`; `begin`/`start` with `end`). A pair is a complete slice
//! (`"ph":"X"`, named `X`) on the marks' process ([`MARKS_PID`]), written when its end mark is
//! read: on the thread's own track (`tid` = `mark_thread`) when the key is a thread id (below
//! 2^32: NVTX push/pop ranges) and the slice nests there; otherwise (start/end ranges, which may
//! overlap and have keys of their own, marks without a key, a pair that would cross another on
//! its thread) on the first of [`MAX_LANES`] lanes (`tid` [`LANE_TID0`] + n) that it does not
//! overlap. Every other mark, and a start that never ends, is a global instant
//! (`"ph":"i","s":"g"`) on `pid` 0 as before.
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::clock::{Alignment, GpuMap, NsDecimal, TsUs};
use crate::csv::{Col, Row, RowKind};
use crate::window::pairing::{pair_end_stem, pair_start_stem};

/// The `pid` of the host counters (named by a metadata event).
pub const HOST_PID: i64 = 2_147_483_646;
/// The `pid` of the marks' slices (named by a metadata event).
pub const MARKS_PID: i64 = 2_147_483_645;
/// The first lane's `tid`: above any Linux thread id (at most 2^22).
pub const LANE_TID0: i64 = 1 << 30;
/// Lanes for slices that cannot go on a thread's track.
pub const MAX_LANES: usize = 64;
/// Start marks waiting for their end; later ones are instants at once (counted).
pub const MAX_OPEN_RANGES: usize = 4096;

/// A start mark waiting for its end (its buffers reused).
#[derive(Default)]
struct Open {
    label: String,
    stem_len: usize,
    key: Option<u64>,
    ts_ns: i64,
    seq: u64,
}

/// Writes the events of each row into a reusable buffer.
pub struct CounterEvents {
    align: Alignment,
    gpu_map: GpuMap,
    last_host_t: Option<i64>,
    rapl_prev: Option<(i64, u64)>,
    buf: String,
    name: String,
    open: Vec<Open>,
    open_len: usize,
    seq: u64,
    lanes_end_ns: Vec<i64>,
    /// Events written.
    pub events: u64,
    /// Rows without a `t_wall_ns` (skipped).
    pub rows_without_wall: u64,
    /// Rows whose time on the trace's clock leaves the `i64` ns range (skipped).
    pub rows_out_of_range: u64,
    /// Mark pairs written as slices.
    pub slices: u64,
    /// Marks written as instants because they could not be paired or placed: more than
    /// [`MAX_OPEN_RANGES`] open, an end before its start, or no free lane.
    pub marks_unplaced: u64,
}

/// `ns` as µs with exactly three decimals (`-1500` → `-1.500`).
fn push_us(out: &mut String, ns: i64) {
    let _ = write!(out, "{}", TsUs::fixed(NsDecimal(ns)));
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
            name: String::new(),
            open: Vec::new(),
            open_len: 0,
            seq: 0,
            lanes_end_ns: Vec::new(),
            events: 0,
            rows_without_wall: 0,
            rows_out_of_range: 0,
            slices: 0,
            marks_unplaced: 0,
        }
    }

    /// The metadata events that name the host counters' and the marks' processes, each with a
    /// leading `,\n`.
    pub fn preamble(&mut self) -> &str {
        self.buf.clear();
        for (pid, name) in [
            (HOST_PID, "flinch-trace recording (host)"),
            (MARKS_PID, "flinch-trace marks"),
        ] {
            let _ = write!(
                self.buf,
                ",\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"cat\":\"flinch_telemetry\",\"args\":{{\"name\":\"{name}\"}}}}"
            );
            self.events += 1;
        }
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

    /// A global instant (an unpaired mark).
    fn instant(&mut self, label: &str, ts_ns: i64) {
        self.buf
            .push_str(",\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"flinch_mark\",\"name\":");
        json_string(&mut self.buf, label);
        self.buf.push_str(",\"pid\":0,\"tid\":0,\"ts\":");
        push_us(&mut self.buf, ts_ns);
        self.buf.push('}');
        self.events += 1;
    }

    /// A complete slice on the marks' process.
    fn slice(&mut self, name: &str, tid: i64, ts_ns: i64, dur_ns: i64) {
        self.buf
            .push_str(",\n{\"ph\":\"X\",\"cat\":\"flinch_mark\",\"name\":");
        json_string(&mut self.buf, name);
        let _ = write!(self.buf, ",\"pid\":{MARKS_PID},\"tid\":{tid},\"ts\":");
        push_us(&mut self.buf, ts_ns);
        self.buf.push_str(",\"dur\":");
        push_us(&mut self.buf, dur_ns);
        self.buf.push('}');
        self.events += 1;
        self.slices += 1;
    }

    /// One mark at `ts_ns` on the trace's clock.
    fn mark(&mut self, label: &str, key: Option<u64>, ts_ns: i64) {
        if let Some(stem) = pair_start_stem(label) {
            if self.open_len < MAX_OPEN_RANGES {
                if self.open_len == self.open.len() {
                    self.open.push(Open::default());
                }
                self.seq += 1;
                let o = &mut self.open[self.open_len];
                o.label.clear();
                o.label.push_str(label);
                o.stem_len = stem.len();
                o.key = key;
                o.ts_ns = ts_ns;
                o.seq = self.seq;
                self.open_len += 1;
                return;
            }
            self.marks_unplaced += 1;
            self.instant(label, ts_ns);
            return;
        }
        let Some(stem) = pair_end_stem(label) else {
            self.instant(label, ts_ns);
            return;
        };
        // The latest open start of the same stem and key, as `analyze` pairs them.
        let found = self.open[..self.open_len]
            .iter()
            .enumerate()
            .filter(|(_, o)| o.key == key && &o.label[..o.stem_len] == stem)
            .max_by_key(|(_, o)| o.seq)
            .map(|(i, _)| i);
        let Some(i) = found else {
            self.instant(label, ts_ns);
            return;
        };
        let (start, seq) = (self.open[i].ts_ns, self.open[i].seq);
        // On its thread's track only if nothing opened later on that thread is still open:
        // then every slice there either ended before it began or lies inside it.
        let nests = !self.open[..self.open_len]
            .iter()
            .any(|o| o.key == key && o.seq > seq);
        self.name.clear();
        let o = &self.open[i];
        self.name.push_str(if o.stem_len == 0 {
            &o.label
        } else {
            &o.label[..o.stem_len]
        });
        let dur = ts_ns.checked_sub(start).filter(|&d| d >= 0);
        let thread = key.filter(|&k| k < 1 << 32).map(|k| k as i64);
        let tid = match (dur, thread) {
            (None, _) => None,
            (Some(_), Some(t)) if nests => Some(t),
            (Some(_), _) => self.lane(start, ts_ns),
        };
        // The slot is free again (swapped with the last, keeping its buffer).
        self.open_len -= 1;
        self.open.swap(i, self.open_len);
        let name = core::mem::take(&mut self.name);
        match (tid, dur) {
            (Some(tid), Some(d)) => self.slice(&name, tid, start, d),
            _ => {
                self.marks_unplaced += 2;
                let start_label = core::mem::take(&mut self.open[self.open_len].label);
                self.instant(&start_label, start);
                self.instant(label, ts_ns);
                self.open[self.open_len].label = start_label;
            }
        }
        self.name = name;
    }

    /// The first lane free over `[start, end]` (every slice on it ended by `start`), or a new one.
    fn lane(&mut self, start: i64, end: i64) -> Option<i64> {
        let k = match self.lanes_end_ns.iter().position(|&e| e <= start) {
            Some(k) => k,
            None if self.lanes_end_ns.len() < MAX_LANES => {
                self.lanes_end_ns.push(i64::MIN);
                let k = self.lanes_end_ns.len() - 1;
                let _ = write!(
                    self.buf,
                    ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{MARKS_PID},\"tid\":{},\"cat\":\"flinch_telemetry\",\"args\":{{\"name\":\"ranges {k}\"}}}}",
                    LANE_TID0 + k as i64
                );
                self.events += 1;
                k
            }
            None => return None,
        };
        self.lanes_end_ns[k] = end;
        Some(LANE_TID0 + k as i64)
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
        let Some(ts) = t_wall.checked_sub(self.align.offset_ns) else {
            self.rows_out_of_range += 1;
            return &self.buf;
        };
        if kind == RowKind::Mark {
            let label = String::from_utf8_lossy(row.label());
            let key = row.i64(Col::MarkThread).and_then(|v| u64::try_from(v).ok());
            self.mark(&label, key, ts);
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

    /// After the last row: the start marks that never ended, as instants.
    pub fn finish(&mut self) -> &str {
        self.buf.clear();
        let mut open = core::mem::take(&mut self.open);
        open[..self.open_len].sort_by_key(|o| o.seq);
        for o in &open[..self.open_len] {
            self.instant(&o.label, o.ts_ns);
        }
        self.open_len = 0;
        self.open = open;
        &self.buf
    }
}

/// `s` as a JSON string.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
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
    use std::string::ToString;

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
        out.push_str(ce.finish());
        out
    }

    fn parse(out: &str) -> Vec<serde_json::Value> {
        let doc = std::format!("[{}]", out.strip_prefix(',').unwrap_or("\n"));
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        v.as_array().unwrap().clone()
    }

    const MARK_HDR: &str = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,mark_thread\n";

    /// (ph, name, tid, ts, dur) of each mark event, as text, in file order.
    fn marks(csv: &str) -> Vec<(String, String, i64, String, String)> {
        let out = events_of(csv, Alignment::new(Some(0), None).unwrap());
        // The ts/dur text, exact: read back from the JSON text rather than as f64.
        parse(&out)
            .iter()
            .filter(|e| e["cat"] == "flinch_mark")
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().into(),
                    e["name"].as_str().unwrap().into(),
                    e["tid"].as_i64().unwrap(),
                    e["ts"].to_string(),
                    e.get("dur").map(|d| d.to_string()).unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn paired_ranges_are_slices_on_their_threads_track() {
        // Thread 7 nests b in a; thread 8 runs its own a at the same time; the key 2^32 + 1
        // (a start/end range) goes to a lane; unkeyed x pairs with x; y_end has no start;
        // z_start never ends; a plain mark stays an instant.
        let csv = std::format!(
            "{MARK_HDR}\
            0,1000,MARK,a_start,,7\n\
            0,2000,MARK,a_start,,8\n\
            0,3000,MARK,b_push_start,,7\n\
            0,4000,MARK,b_push_end,,7\n\
            0,4500,MARK,r_start,,4294967297\n\
            0,5000,MARK,a_end,,7\n\
            0,6000,MARK,a_end,,8\n\
            0,6500,MARK,r_end,,4294967297\n\
            0,7000,MARK,x_start,,\n\
            0,7500,MARK,y_end,,\n\
            0,8000,MARK,x_end,,\n\
            0,8500,MARK,z_start,,\n\
            0,9000,MARK,note,,7\n"
        );
        let m = marks(&csv);
        let s = |ph: &str, name: &str, tid: i64, ts: &str, dur: &str| {
            (ph.into(), name.into(), tid, ts.into(), dur.into())
        };
        assert_eq!(
            m,
            [
                s("X", "b_push", 7, "3.0", "1.0"),
                s("X", "a", 7, "1.0", "4.0"),
                s("X", "a", 8, "2.0", "4.0"),
                s("X", "r", LANE_TID0, "4.5", "2.0"),
                s("i", "y_end", 0, "7.5", ""),
                s("X", "x", LANE_TID0, "7.0", "1.0"),
                s("i", "note", 0, "9.0", ""),
                s("i", "z_start", 0, "8.5", ""),
            ]
        );
    }

    #[test]
    fn crossing_pairs_move_to_lanes_that_they_do_not_overlap() {
        // On thread 7, p and q cross: q nests only if nothing later is open. p ends while q is
        // open, so p goes to lane 0; q then closes with nothing open above it: thread 7.
        // An unkeyed pair overlapping lane 0's slice takes lane 1; a later one reuses lane 0.
        let csv = std::format!(
            "{MARK_HDR}\
            0,1000,MARK,p_start,,7\n\
            0,2000,MARK,q_start,,7\n\
            0,2500,MARK,u_start,,\n\
            0,3000,MARK,p_end,,7\n\
            0,3500,MARK,u_end,,\n\
            0,4000,MARK,q_end,,7\n\
            0,5000,MARK,w_start,,\n\
            0,6000,MARK,w_end,,\n\
            0,7000,MARK,late_end,,\n\
            0,6500,MARK,v_start,,\n\
            0,6000,MARK,v_end,,\n"
        );
        let m = marks(&csv);
        let tracks: Vec<(&str, i64)> = m.iter().map(|e| (e.1.as_str(), e.2)).collect();
        assert_eq!(
            tracks,
            [
                ("p", LANE_TID0),
                ("u", LANE_TID0 + 1),
                ("q", 7),
                ("w", LANE_TID0),
                ("late_end", 0),
                // An end before its start: both marks as instants.
                ("v_start", 0),
                ("v_end", 0),
            ]
        );
        let out = events_of(&csv, Alignment::new(Some(0), None).unwrap());
        let names: Vec<String> = parse(&out)
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap().into())
            .collect();
        assert_eq!(names, ["ranges 0", "ranges 1"]);
    }

    #[test]
    fn rows_outside_the_i64_clock_are_skipped_and_counted() {
        // A base of -9e18 ns puts a 2024 wall time past i64::MAX on the trace's clock.
        let csv = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_index\n\
            1,1760000000000000000,SAMPLE,,100,0\n\
            1,-9000000000000000000,SAMPLE,,100,0\n\
            2,1760000000000000000,MARK,m,,\n";
        let mut r = TraceCsvReader::new();
        let align = Alignment::new(Some(-9_000_000_000_000_000_000), None).unwrap();
        let mut ce = CounterEvents::new(align, GpuMap::default());
        let mut out = String::new();
        let mut input = csv.as_bytes();
        loop {
            let (ev, n) = r.read(input);
            input = &input[n..];
            if ev == CsvEvent::Row {
                out.push_str(ce.row(&r.row()));
            }
            if ev == CsvEvent::End {
                break;
            }
        }
        assert_eq!(ce.rows_out_of_range, 2);
        let ev = parse(&out);
        assert_eq!(ev.len(), 1);
        // -9e18 − (−9e18) = 0: the one row that fits, at ts 0.
        assert!(out.contains("\"ts\":0.000,"), "{out}");
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
