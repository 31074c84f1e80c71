//! Writes a deterministic trace.csv in the reference `nvml_trace.py` format for benchmarks:
//! `cargo run --release --example gen_csv -- ROWS OUT.csv [SEED]`.
//! One GPU sampled every ~10 ms, a busy/idle pattern, power readings that repeat (as NVML's do),
//! occasional blank rows, and a `step_start`/`step_end` MARK pair every 1000 samples plus
//! `begin`/`end` around everything. About 76 bytes per row.
use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen_csv ROWS OUT.csv [SEED]");
        std::process::exit(2);
    }
    let rows: u64 = args[1].parse().expect("ROWS");
    let mut seed: u64 = args.get(3).map_or(42, |s| s.parse().expect("SEED"));
    let mut rnd = move || {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&args[2])?);
    writeln!(
        out,
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj"
    )?;
    let t0: u64 = 5_000_000_000_000;
    let wall0: u64 = 1_760_000_000_000_000_000;
    let mut t = t0;
    let mut rapl: u64 = 1_000_000_000;
    let mut power = 70.0f64;
    let mut written = 0u64;
    let mark = |out: &mut BufWriter<std::fs::File>, t: u64, label: &str| {
        writeln!(out, "{t},{},MARK,{label},,,,,,", wall0 + t)
    };
    mark(&mut out, t0, "begin")?;
    written += 1;
    let mut k = 0u64;
    while written < rows {
        t += 10_000_000 + rnd() % 300_000;
        let busy = (k / 1000) % 3 != 2;
        if k.is_multiple_of(7) {
            let r = (rnd() % 10_000) as f64 / 100.0;
            power = if busy { 300.0 + r } else { 62.0 + r / 10.0 };
        }
        rapl += 150_000 + rnd() % 100_000;
        if k % 997 == 500 {
            writeln!(out, "{t},{},SAMPLE,,,,,,,{rapl}", wall0 + t)?;
        } else {
            let util = if busy { 90 + rnd() % 11 } else { rnd() % 4 };
            writeln!(
                out,
                "{t},{},SAMPLE,,{power:.3},{util},{},{},{},{rapl}",
                wall0 + t,
                util / 3,
                if busy { 1980 } else { 345 },
                50 + (k / 100) % 30,
            )?;
        }
        written += 1;
        if k % 1000 == 10 && written < rows {
            mark(&mut out, t - 5_000_000, "step_start")?;
            written += 1;
        }
        if k % 1000 == 990 && written < rows {
            mark(&mut out, t - 5_000_000, "step_end")?;
            written += 1;
        }
        k += 1;
    }
    mark(&mut out, t + 1, "end")?;
    out.flush()
}
