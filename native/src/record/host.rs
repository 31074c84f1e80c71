//! Host CPU and memory from `/proc/stat` and `/proc/meminfo` (the proc root is injectable).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// One host reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostReading {
    /// Busy CPU share since the previous reading, percent of all CPUs (None on the first).
    pub cpu_pct: Option<f64>,
    /// `MemTotal - MemAvailable`, bytes.
    pub mem_used_bytes: Option<u64>,
    /// `MemAvailable`, bytes.
    pub mem_available_bytes: Option<u64>,
    /// `MemTotal`, bytes.
    pub mem_total_bytes: Option<u64>,
}

/// Reads the host; keeps both files open and re-reads them with `pread` (no allocation).
pub struct Host {
    stat: Option<File>,
    meminfo: Option<File>,
    prev: Option<(u64, u64)>,
    buf: Box<[u8; 4096]>,
}

/// Parses the aggregate `cpu` line of /proc/stat into (busy, total) jiffies.
/// Total is user+nice+system+idle+iowait+irq+softirq+steal (guest time is already in user).
pub fn parse_stat(text: &[u8]) -> Option<(u64, u64)> {
    let line = text.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut it = line.split_ascii_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, x) in v.iter_mut().zip(it) {
        *slot = x.parse().unwrap_or(0);
        n += 1;
    }
    if n < 4 {
        return None;
    }
    let total: u64 = v.iter().sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// Parses MemTotal and MemAvailable (kB) from /proc/meminfo into bytes.
pub fn parse_meminfo(text: &[u8]) -> (Option<u64>, Option<u64>) {
    let mut total = None;
    let mut avail = None;
    for line in text.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let mut it = line.split_ascii_whitespace();
        let key = it.next();
        let val = it
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024);
        match key {
            Some("MemTotal:") => total = val,
            Some("MemAvailable:") => avail = val,
            _ => {}
        }
    }
    (total, avail)
}

impl Host {
    /// Opens `<proc_root>/stat` and `<proc_root>/meminfo` (missing files give empty fields).
    pub fn open(proc_root: &Path) -> Self {
        Host {
            stat: File::open(proc_root.join("stat")).ok(),
            meminfo: File::open(proc_root.join("meminfo")).ok(),
            prev: None,
            buf: Box::new([0u8; 4096]),
        }
    }

    fn read_file(f: &Option<File>, buf: &mut [u8]) -> usize {
        match f {
            Some(f) => f.read_at(buf, 0).unwrap_or(0),
            None => 0,
        }
    }

    /// Reads the host now. CPU % covers the time since the previous call.
    pub fn read(&mut self) -> HostReading {
        let mut r = HostReading::default();
        let n = Self::read_file(&self.stat, &mut self.buf[..]);
        if let Some((busy, total)) = parse_stat(&self.buf[..n]) {
            match self.prev {
                Some((pb, pt)) if total > pt => {
                    r.cpu_pct = Some(100.0 * busy.saturating_sub(pb) as f64 / (total - pt) as f64);
                    self.prev = Some((busy, total));
                }
                // No jiffy has passed yet: keep the older baseline.
                Some(_) => {}
                None => self.prev = Some((busy, total)),
            }
        }
        let n = Self::read_file(&self.meminfo, &mut self.buf[..]);
        let (total, avail) = parse_meminfo(&self.buf[..n]);
        r.mem_total_bytes = total;
        r.mem_available_bytes = avail;
        r.mem_used_bytes = match (total, avail) {
            (Some(t), Some(a)) => Some(t.saturating_sub(a)),
            _ => None,
        };
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_and_meminfo() {
        let stat = b"cpu  100 5 50 800 20 1 2 3 7 0\ncpu0 1 2 3 4\n";
        // busy = 100+5+50+1+2+3 = 161, total = 981 (guest 7 is inside user already)
        assert_eq!(parse_stat(stat), Some((161, 981)));
        assert_eq!(parse_stat(b"intr 1 2\n"), None);
        let mem = b"MemTotal:       16000 kB\nMemFree: 1 kB\nMemAvailable:    4000 kB\n";
        assert_eq!(parse_meminfo(mem), (Some(16_000 * 1024), Some(4000 * 1024)));
    }

    #[test]
    fn cpu_percent_is_the_busy_share_between_readings() {
        let root = std::env::temp_dir().join(format!("flinch-host-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("stat"), "cpu 100 0 0 900 0 0 0 0 0 0\n").unwrap();
        std::fs::write(
            root.join("meminfo"),
            "MemTotal: 1000 kB\nMemAvailable: 250 kB\n",
        )
        .unwrap();
        let mut h = Host::open(&root);
        let a = h.read();
        assert_eq!(a.cpu_pct, None);
        assert_eq!(a.mem_used_bytes, Some(750 * 1024));
        std::fs::write(root.join("stat"), "cpu 130 0 0 970 0 0 0 0 0 0\n").unwrap();
        assert_eq!(h.read().cpu_pct, Some(30.0));
        let _ = std::fs::remove_dir_all(&root);
        // The real /proc works on Linux.
        let mut real = Host::open(Path::new("/proc"));
        real.read();
        assert!(real.read().mem_total_bytes.unwrap() > 0);
    }
}
