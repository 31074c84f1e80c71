//! Memory of `summarize`'s run summary stays within its value budget while it stays exact:
//! request rows are not kept, and each series' values past its share go to a spill (here a
//! temporary file, as native `summarize` does). The peak of live heap bytes over a run of 8,000
//! and of 60,000 request and telemetry rows stays under a bound computed from the budget, and
//! the output equals that of every value held in memory (which needs more, so the check can
//! fail).
use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use flinch_core::runs::{FileRead, PyPath, RunSummarizer};
use flinch_core::telemetry::{ValueBudget, ValueSpill};

#[path = "common/peak_heap.rs"]
mod peak_heap;

/// Runs in an unlinked temporary file.
struct FileSpill {
    file: File,
    len: u64,
}

impl FileSpill {
    fn new() -> FileSpill {
        let path =
            std::env::temp_dir().join(format!("flinch-mem-summarize-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        FileSpill { file, len: 0 }
    }
}

impl ValueSpill for FileSpill {
    fn write_run(&mut self, values: &[f64]) -> Option<u64> {
        let mut buf = [0u8; 8 * 512];
        for chunk in values.chunks(512) {
            for (b, v) in buf.chunks_exact_mut(8).zip(chunk) {
                b.copy_from_slice(&v.to_le_bytes());
            }
            self.file.write_all(&buf[..8 * chunk.len()]).ok()?;
        }
        let handle = self.len;
        self.len += values.len() as u64;
        Some(handle)
    }
    fn read_run(&mut self, handle: u64, at: u64, out: &mut [f64]) -> Option<usize> {
        let n = (out.len() as u64).min(self.len - (handle + at).min(self.len)) as usize;
        let mut buf = [0u8; 8];
        for (k, o) in out[..n].iter_mut().enumerate() {
            self.file
                .read_exact_at(&mut buf, (handle + at + k as u64) * 8)
                .ok()?;
            *o = f64::from_le_bytes(buf);
        }
        Some(n)
    }
}

const REPORT: &[u8] = br#"{"start_unix": 1712000019.75, "sustained_start_unix": 1712000280.25, "sustained_wall_s": 400}"#;

/// The run's JSON for `rows` rows of each file, pushed in chunks written into one buffer.
fn summarize(rows: u64, budget: ValueBudget) -> String {
    let mut run = RunSummarizer::new(&PyPath::new("runs"), "big");
    run.set_value_budget(budget);
    run.report(FileRead::Bytes(REPORT));
    run.status(FileRead::Missing);
    let mut buf = Vec::with_capacity(1 << 16);
    let mut x = 99u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 24
    };
    for i in 0..rows {
        let v = next();
        let t = 1712000280.25 + i as f64 * 400.0 / rows as f64;
        writeln!(
            buf,
            r#"{{"phase": "sustained", "submitted_unix": {t}, "wall_s": {}, "ttft_s": {}, "total_wall_s": {}, "rtf_total": {}, "ttfa_ms": {}}}"#,
            v % 10_000,
            (v % 777) as f64 / 100.0,
            (v >> 8) % 5000,
            (v % 3000) as f64 / 1000.0,
            v % 91
        )
        .unwrap();
        if buf.len() > 60_000 {
            run.requests_push(&buf);
            buf.clear();
        }
    }
    run.requests_push(&buf);
    buf.clear();
    run.requests_end(None);
    run.log_end(None);
    for i in 0..rows {
        let v = next();
        writeln!(
            buf,
            r#"{{"unix": {}, "host_memory": {{"available": {}, "used": 5}}, "host_cpu_percent": {}, "gpu_csv": "0, g, {}, 1, 40, {}.5, 1, 1, 7, P0"}}"#,
            1712000000.0 + i as f64 * 0.01,
            v % 100_000,
            (v % 1000) as f64 / 10.0,
            v % 4096,
            v % 700
        )
        .unwrap();
        if buf.len() > 60_000 {
            run.telemetry_push(&buf);
            buf.clear();
        }
    }
    run.telemetry_push(&buf);
    serde_json::to_string(&run.finish(None)).unwrap()
}

const MAX_VALUES: usize = 40_000;

fn budget() -> ValueBudget {
    ValueBudget {
        max_values: MAX_VALUES,
        spill: None,
    }
    .with_spill(Rc::new(RefCell::new(FileSpill::new())))
}

#[test]
fn request_and_telemetry_rows_stay_within_the_value_budget_and_exact() {
    // The budget's values (8 bytes each, held twice while a series sorts and grows), the
    // sketch-free cells, the merge's read buffers and the JSON reader's lines: a fixed bound.
    let bound = MAX_VALUES * 8 * 2 + (2 << 20);
    for rows in [8_000u64, 60_000] {
        let (peak, got) = peak_heap::peak_during(|| summarize(rows, budget()));
        assert!(
            peak < bound,
            "{rows} rows: peak {peak} bytes, bound {bound}"
        );
        let (exact_peak, want) =
            peak_heap::peak_during(|| summarize(rows, ValueBudget::unbounded()));
        assert_eq!(got, want, "{rows} rows");
        assert!(got.contains("\"sustained_last_60s\""));
        if rows == 60_000 {
            assert!(exact_peak > bound, "the check can fail: {exact_peak}");
        }
    }
}
