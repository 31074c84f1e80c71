//! No allocation per row when the join reads a recording: with the file's size given, the
//! series are reserved once after the first 256 KiB, and nothing else grows per row (the idle
//! floor's reorder buffer holds two seconds of rows). Without it, the series grow by doubling
//! (a few dozen allocations for a hundred thousand rows).
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::join::{RecordingBuilder, RecordingOptions};

fn recording(rows: i64) -> Vec<u8> {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,\
         gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n",
    );
    for k in 0..rows {
        let t = 1_000_000_000 + k * 10_000_000;
        let p = if (k / 50) % 3 == 0 { "95.25" } else { "410.5" };
        s.push_str(&format!(
            "{t},{},SAMPLE,,{p},{},40,1980,60,,{},{}\n",
            1_712_195_400_000_000_000i64 + t,
            k % 100,
            k % 2,
            k * 4
        ));
    }
    s.into_bytes()
}

#[test]
fn a_recording_with_its_size_allocates_nothing_per_row() {
    let text = recording(120_000);
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    b.size_hint(text.len() as u64);
    let (head, rest) = text.split_at(300 << 10);
    b.write(head).unwrap();
    let ((), during) = count_allocs(|| {
        for c in rest.chunks(64 << 10) {
            b.write(c).unwrap();
        }
    });
    assert_eq!(
        during,
        0,
        "{} rows after the first 300 KiB",
        rest.len() / 75
    );
    let rec = b.end().unwrap();
    assert_eq!(rec.samples, 120_000);
}

#[test]
fn a_recording_without_its_size_grows_its_series_by_doubling() {
    let text = recording(120_000);
    let mut b = RecordingBuilder::new(RecordingOptions::default());
    let (head, rest) = text.split_at(300 << 10);
    b.write(head).unwrap();
    let ((), during) = count_allocs(|| {
        for c in rest.chunks(64 << 10) {
            b.write(c).unwrap();
        }
    });
    // Two GPUs x three series, each doubled at most log2(120,000 / 2,000) < 7 times.
    // And at least once: the zero above is the hint's doing.
    assert!((1..=6 * 7).contains(&during), "{during}");
    assert_eq!(b.end().unwrap().samples, 120_000);
}
