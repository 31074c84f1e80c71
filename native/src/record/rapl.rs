//! RAPL / powercap energy counters: every zone and subzone under a powercap root
//! (`/sys/class/powercap` by default; injectable so tests use a fake tree).
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One powercap zone as the sidecar describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZoneInfo {
    /// Directory name, e.g. `intel-rapl:0:1`.
    pub id: String,
    /// Path of its `energy_uj`.
    pub energy_path: String,
    /// Its `name`, prefixed with the parent's name for a subzone (e.g. `package-0/dram`).
    pub name: String,
    /// The CSV column that holds it.
    pub column: String,
    /// The counter wraps to 0 after this value (`max_energy_range_uj`).
    pub max_energy_range_uj: Option<u64>,
    /// Whether `energy_uj` could be read when the recording started.
    pub readable: bool,
}

/// The zones being recorded. The primary zone (the first `package-*` zone, or the file given
/// with `--rapl`) fills `rapl_energy_uj`; every other zone has its own `rapl_<zone>_uj` column.
pub struct Rapl {
    zones: Vec<ZoneInfo>,
    files: Vec<Option<File>>,
    primary: Option<usize>,
    /// Zones whose `energy_uj` was unreadable (EACCES/EPERM) at start.
    pub unreadable: usize,
    read_errors: u64,
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sorts `intel-rapl:0:10` after `intel-rapl:0:9`: compares the `:`-separated numbers.
fn zone_sort_key(id: &str) -> (String, Vec<u64>) {
    let mut parts = id.split(':');
    let kind = parts.next().unwrap_or("").to_string();
    (kind, parts.map(|p| p.parse().unwrap_or(u64::MAX)).collect())
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn parse_u64(buf: &[u8]) -> Option<u64> {
    std::str::from_utf8(buf).ok()?.trim().parse().ok()
}

impl Rapl {
    /// No RAPL at all (`--no-rapl`, or nothing found).
    pub fn none() -> Self {
        Rapl {
            zones: Vec::new(),
            files: Vec::new(),
            primary: None,
            unreadable: 0,
            read_errors: 0,
        }
    }

    /// Discovers every zone under `root` that has an `energy_uj`; `primary_path`, when given,
    /// is the `energy_uj` file that fills `rapl_energy_uj` (the reference's `--rapl PATH`).
    pub fn discover(root: &Path, primary_path: Option<&Path>) -> Self {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.join("energy_uj").exists())
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort_by_key(|p| zone_sort_key(&p.file_name().unwrap_or_default().to_string_lossy()));
        let mut r = Rapl::none();
        // The explicit --rapl file comes first and is primary, even outside the root.
        if let Some(pp) = primary_path {
            let dir = pp.parent().unwrap_or(Path::new("/")).to_path_buf();
            r.add_zone(&dir, pp.to_path_buf(), None);
            r.primary = Some(0);
        }
        let names: Vec<(String, Option<String>)> = dirs
            .iter()
            .map(|d| {
                let id = d
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                (id, read_trimmed(&d.join("name")))
            })
            .collect();
        for d in &dirs {
            let energy = d.join("energy_uj");
            if primary_path.is_some_and(|pp| same_file(pp, &energy)) {
                continue;
            }
            let id = d
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            // A subzone `kind:N:M` is named after its parent `kind:N`.
            let parent = id
                .rsplit_once(':')
                .map(|(p, _)| p.to_string())
                .filter(|p| p.contains(':'));
            let parent_name = parent.and_then(|p| {
                names
                    .iter()
                    .find(|(pid, _)| *pid == p)
                    .and_then(|(_, n)| n.clone())
            });
            r.add_zone(d, energy, parent_name);
        }
        if r.primary.is_none() {
            r.primary = r.zones.iter().position(|z| z.name.starts_with("package"));
        }
        // Columns: the primary is `rapl_energy_uj`; the others `rapl_<name>_uj`, unique.
        let mut used: Vec<String> = Vec::new();
        for i in 0..r.zones.len() {
            if Some(i) == r.primary {
                r.zones[i].column = "rapl_energy_uj".to_string();
                continue;
            }
            let z = &r.zones[i];
            let kind = z.id.split(':').next().unwrap_or("");
            let prefix = match kind.strip_prefix("intel-rapl") {
                Some("") | None => String::new(),
                Some(rest) => format!("{}_", sanitize(rest.trim_start_matches('-'))),
            };
            let base = format!("rapl_{prefix}{}", sanitize(&z.name.replace('/', "_")));
            let mut col = format!("{base}_uj");
            let mut n = 2;
            while used.contains(&col) {
                col = format!("{base}_{n}_uj");
                n += 1;
            }
            used.push(col.clone());
            r.zones[i].column = col;
        }
        r
    }

    fn add_zone(&mut self, dir: &Path, energy: PathBuf, parent_name: Option<String>) {
        let id = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let own = read_trimmed(&dir.join("name")).unwrap_or_else(|| id.clone());
        let name = match parent_name {
            Some(p) => format!("{p}/{own}"),
            None => own,
        };
        let max = read_trimmed(&dir.join("max_energy_range_uj")).and_then(|s| s.parse().ok());
        let (file, readable) = match File::open(&energy) {
            Ok(f) => {
                let mut buf = [0u8; 32];
                let ok = f.read_at(&mut buf, 0).is_ok();
                (Some(f), ok)
            }
            Err(e) if e.kind() == ErrorKind::PermissionDenied => (None, false),
            Err(_) => (None, false),
        };
        if !readable {
            self.unreadable += 1;
        }
        self.zones.push(ZoneInfo {
            id,
            energy_path: energy.to_string_lossy().into_owned(),
            name,
            column: String::new(),
            max_energy_range_uj: max,
            readable,
        });
        self.files.push(file);
    }

    /// The zones, in CSV column order after the primary.
    pub fn zones(&self) -> &[ZoneInfo] {
        &self.zones
    }

    /// Index of the primary zone, if any.
    pub fn primary(&self) -> Option<usize> {
        self.primary
    }

    /// The primary zone's wrap point.
    pub fn primary_max_uj(&self) -> Option<u64> {
        self.primary.and_then(|i| self.zones[i].max_energy_range_uj)
    }

    /// Extra CSV columns (all zones but the primary), in order.
    pub fn extra_columns(&self) -> impl Iterator<Item = &str> {
        self.zones
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != self.primary)
            .map(|(_, z)| z.column.as_str())
    }

    /// Reads every zone into `out` (same order as [`Self::zones`]); no allocation.
    pub fn read_into(&mut self, out: &mut [Option<u64>]) {
        let mut buf = [0u8; 32];
        for (slot, f) in out.iter_mut().zip(&self.files) {
            *slot = match f {
                Some(f) => match f.read_at(&mut buf, 0) {
                    Ok(n) => parse_u64(&buf[..n]),
                    Err(_) => None,
                },
                None => None,
            };
            if f.is_some() && slot.is_none() {
                self.read_errors += 1;
            }
        }
    }

    /// Failed reads of readable zones during the recording.
    pub fn read_errors(&self) -> u64 {
        self.read_errors
    }

    /// The one warning line for unreadable zones, naming the fix; `None` when all are readable.
    pub fn warning(&self) -> Option<String> {
        if self.unreadable == 0 {
            return None;
        }
        let first = self.zones.iter().find(|z| !z.readable)?;
        Some(format!(
            "warning: RAPL: {} of {} powercap energy_uj file(s) unreadable (e.g. {}); their rapl \
             columns stay empty. Since Linux 5.10 energy_uj is root-only (CVE-2020-8694): run as \
             root, or grant read access, e.g. `sudo chmod o+r /sys/class/powercap/*/energy_uj` \
             (or a udev rule), or pass --no-rapl",
            self.unreadable,
            self.zones.len(),
            first.energy_path
        ))
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a fake powercap tree: (dir, name, energy, max) per zone.
    pub(crate) fn fake_tree(root: &Path, zones: &[(&str, &str, u64, u64)]) {
        std::fs::create_dir_all(root.join("intel-rapl")).unwrap(); // control type dir: no energy_uj
        for (dir, name, energy, max) in zones {
            let d = root.join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
            std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("flinch-rapl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn discovers_zones_subzones_and_names_columns() {
        let root = tmp("discover");
        fake_tree(
            &root,
            &[
                ("intel-rapl:1", "package-1", 50, 262_143_328_850),
                ("intel-rapl:0:10", "uncore", 3, 100),
                ("intel-rapl:0", "package-0", 1000, 262_143_328_850),
                ("intel-rapl:0:0", "core", 7, 100),
                ("intel-rapl:0:2", "dram", 9, 65_712_999_613),
                ("intel-rapl-mmio:0", "package-0", 11, 100),
            ],
        );
        let mut r = Rapl::discover(&root, None);
        let ids: Vec<&str> = r.zones().iter().map(|z| z.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "intel-rapl:0",
                "intel-rapl:0:0",
                "intel-rapl:0:2",
                "intel-rapl:0:10",
                "intel-rapl:1",
                "intel-rapl-mmio:0"
            ]
        );
        assert_eq!(r.primary(), Some(0));
        assert_eq!(r.primary_max_uj(), Some(262_143_328_850));
        let cols: Vec<&str> = r.extra_columns().collect();
        assert_eq!(
            cols,
            [
                "rapl_package-0_core_uj",
                "rapl_package-0_dram_uj",
                "rapl_package-0_uncore_uj",
                "rapl_package-1_uj",
                "rapl_mmio_package-0_uj"
            ]
        );
        let mut out = [None; 6];
        r.read_into(&mut out);
        assert_eq!(
            out,
            [Some(1000), Some(7), Some(9), Some(3), Some(50), Some(11)]
        );
        assert!(r.warning().is_none());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn explicit_primary_and_missing_root() {
        let root = tmp("primary");
        fake_tree(
            &root,
            &[
                ("intel-rapl:0", "package-0", 1, 10),
                ("intel-rapl:1", "package-1", 2, 20),
            ],
        );
        let r = Rapl::discover(&root, Some(&root.join("intel-rapl:1/energy_uj")));
        assert_eq!(r.zones()[0].id, "intel-rapl:1");
        assert_eq!(r.primary_max_uj(), Some(20));
        assert_eq!(r.extra_columns().collect::<Vec<_>>(), ["rapl_package-0_uj"]);
        let none = Rapl::discover(&root.join("nope"), None);
        assert!(none.zones().is_empty());
        assert_eq!(none.primary(), None);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn unreadable_zone_gives_one_warning_naming_the_fix() {
        let root = tmp("unreadable");
        fake_tree(
            &root,
            &[
                ("intel-rapl:0", "package-0", 1, 10),
                ("intel-rapl:0:0", "core", 2, 20),
            ],
        );
        // A directory in place of the file: open() works, read() fails (EISDIR) for every user,
        // including root, so this exercises the unreadable path without dropping privileges.
        let e = root.join("intel-rapl:0:0/energy_uj");
        std::fs::remove_file(&e).unwrap();
        std::fs::create_dir(&e).unwrap();
        let mut r = Rapl::discover(&root, None);
        assert_eq!(r.unreadable, 1);
        let w = r.warning().unwrap();
        assert!(w.contains("1 of 2"), "{w}");
        assert!(w.contains("CVE-2020-8694") && w.contains("root"), "{w}");
        let mut out = [None; 2];
        r.read_into(&mut out);
        assert_eq!(out, [Some(1), None]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
