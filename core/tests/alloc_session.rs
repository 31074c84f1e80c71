//! Counting-allocator proof for the page's join (`flinch_core::join::TraceJoin`): after warm-up,
//! the trace's first read (the summary's scan with the join's first pass on its events) and its
//! second read (the join's second pass) allocate nothing per chunk or event. What remains in the
//! first is the summary's amortized doubling of each op's exact duration list and the first
//! pass's copy of the annotation spans, which doubles too (O(log n)); in the second, a few small
//! allocations per annotation span (its verdict's evidence) and per newly met pause.
mod common;

use common::counting_alloc::count_allocs;

use flinch_core::join::{NextFile, TraceJoin};

/// `n` steps: a kernel on device 0 (1 ms every 2 ms, with a 150 ms pause every 5000 steps), a
/// cpu_op and a runtime call for it, and a step annotation every 1000 steps; 6 (cat, name) ops.
fn trace_doc(n: usize) -> Vec<u8> {
    let mut s = String::from("{\"traceEvents\": [\n");
    for k in 0..n {
        let t_us = 1_000_000 + k * 2_000 + (k / 5000) * 150_000;
        if k > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":{t_us},\"dur\":1000}},\n\
             {{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":9,\"tid\":9,\"ts\":{t_us},\"dur\":{}}},\n\
             {{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":9,\"ts\":{},\"dur\":5}}",
            900 + k % 50,
            t_us + 1
        ));
        if k % 1000 == 999 {
            s.push_str(&format!(
                ",\n{{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#\",\"pid\":9,\"tid\":9,\"ts\":{},\"dur\":2000000}}",
                t_us - 1_998_000
            ));
        }
    }
    s.push_str("\n],\"baseTimeNanoseconds\":1764000000000000000}");
    s.into_bytes()
}

/// A recording over the trace's first minute, one GPU, every 10 ms.
fn csv_doc() -> Vec<u8> {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,\
         gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n",
    );
    for k in 0..6000u64 {
        let t = 1_764_000_000_000_000_000u64 + 1_000_000_000 + k * 10_000_000;
        s.push_str(&format!(
            "{k},{t},SAMPLE,,{},{},,,,,0\n",
            100 + k % 200,
            k % 100
        ));
    }
    s.into_bytes()
}

#[test]
fn trace_join_allocates_nothing_per_chunk_or_event_after_warm_up() {
    let doc = trace_doc(60_000);
    let split = doc.len() / 5;
    let mut j = TraceJoin::from_json(r#"{"source":"t.json","limits":"page"}"#).unwrap();
    for c in csv_doc().chunks(4096) {
        j.write(c).unwrap();
    }
    j.end_file().unwrap();
    // Both reads: the first with the summary, the second for the listed pauses.
    for read in 1..=2 {
        assert_eq!(j.next_file(), Some(NextFile::Trace));
        for c in doc[..split].chunks(4096) {
            j.write(c).unwrap();
        }
        let ((), n) = count_allocs(|| {
            for c in doc[split..].chunks(4096) {
                j.write(c).unwrap();
            }
        });
        eprintln!("read {read}: {n} allocations after warm-up");
        // 48 000 steps (144 000 events) after warm-up. Read 1: the summary's exact lists of the
        // ops double from ~12 000 to 60 000 values (a few growths each), and 48 more annotation
        // spans go into a copy that doubles. Read 2: each of the 48 annotation spans' verdicts
        // builds its small evidence lists (docs/join.md), and the 9 pauses met first here get
        // their host rows. Nothing per event or chunk.
        let bound = if read == 1 { 32 } else { 32 + 8 * 48 };
        assert!(
            n <= bound,
            "read {read}: {n} allocations for 144 000 events"
        );
        j.end_file().unwrap();
    }
    assert_eq!(j.next_file(), None);
    assert_eq!(j.trace_reads(), 2);
    let r = j.report().unwrap();
    assert_eq!(r.pauses.len(), 11);
}

/// Reads the recording into a fresh join, with or without its length given first; the
/// allocations while the recording's rows past its first 256 KiB arrive.
fn recording_allocs(hint: bool) -> u64 {
    let mut csv = csv_doc();
    // A longer recording (12 000 rows), so that most of it comes after the first 256 KiB.
    let extra = csv_doc();
    let body = extra.iter().position(|&b| b == b'\n').unwrap() + 1;
    let rows_ns = 6000 * 10_000_000u64;
    for line in extra[body..]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
    {
        let text = std::str::from_utf8(line).unwrap();
        let mut f: Vec<String> = text.split(',').map(String::from).collect();
        f[0] = (f[0].parse::<u64>().unwrap() + 6000).to_string();
        f[1] = (f[1].parse::<u64>().unwrap() + rows_ns).to_string();
        csv.extend_from_slice(f.join(",").as_bytes());
        csv.push(b'\n');
    }
    let mut j = TraceJoin::from_json(r#"{"source":"t.json","limits":"page"}"#).unwrap();
    if hint {
        j.recording_size_hint(csv.len() as u64);
    }
    let warm = 300 * 1024;
    for c in csv[..warm].chunks(4096) {
        j.write(c).unwrap();
    }
    let ((), n) = count_allocs(|| {
        for c in csv[warm..].chunks(4096) {
            j.write(c).unwrap();
        }
    });
    j.end_file().unwrap();
    n
}

#[test]
fn a_recording_whose_length_is_given_is_reserved_once() {
    let with = recording_allocs(true);
    let without = recording_allocs(false);
    eprintln!("recording past 300 KiB: {with} allocations with its length, {without} without");
    // The series are reserved from the length instead of grown by copying as rows arrive.
    assert!(
        with < without,
        "{with} allocations with the length, {without} without"
    );
}
