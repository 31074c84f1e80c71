//! Memory of the window analyzer stays within `Limits` however many marks a file has: the peak
//! of live heap bytes, tallied by a global allocator, does not grow with the number of marks
//! once `max_marks` and `max_spans` are reached (and does grow without them, so the check can fail).

use flinch_core::Limits;
use flinch_core::window::{WindowAnalyzer, WindowOptions, WindowSelect};

#[path = "common/peak_heap.rs"]
mod peak_heap;

/// Four GPUs, a mark every 10 ms (distinct labels, `s_start`/`s_end` pairs, `begin`/`end`).
fn recording(marks: u64) -> String {
    let mut s = String::from(
        "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n",
    );
    for k in 0..marks {
        let t = 1_000_000_000 + k * 10_000_000;
        for g in 0..4 {
            s.push_str(&format!(
                "{},0,SAMPLE,,{}.5,{},,1400,60,{},{g},{}\n",
                t + g,
                100 + k % 300,
                k % 101,
                k * 1000,
                k * 7
            ));
        }
        let label = match k % 4 {
            0 => "s_start".to_string(),
            1 => "s_end".to_string(),
            2 => "begin".to_string(),
            _ => format!("label{k}"),
        };
        s.push_str(&format!("{},0,MARK,{label},,,,,,,,\n", t + 5_000_000));
    }
    s
}

/// Peak live heap bytes while streaming the file in 64 KiB chunks (the result excluded).
fn peak_while_streaming(data: &str, limits: Limits) -> (usize, u64) {
    let opts = WindowOptions {
        limits,
        select: Some(WindowSelect {
            start: "s_start".into(),
            end: "begin".into(),
            occurrence: 400,
        }),
        spans: true,
        ..WindowOptions::default()
    };
    let mut an = WindowAnalyzer::new(opts);
    let (peak, ()) = peak_heap::peak_during(|| {
        for c in data.as_bytes().chunks(64 << 10) {
            an.write(c);
        }
    });
    let r = an.end();
    assert!(
        r.window.is_some(),
        "the selected window is analyzed whatever the bounds"
    );
    (peak, r.rows.spans_dropped)
}

#[test]
fn memory_does_not_grow_with_marks_past_the_limits() {
    let small = recording(2_000);
    let large = recording(8_000);
    // Marks bounded tighter than spans, then spans tighter than marks (the span bound alone).
    for (max_marks, max_spans) in [(64, 1000), (1000, 64)] {
        let bounded = Limits {
            max_marks,
            max_spans,
            ..Limits::BOUNDED
        };
        let (p_small, d_small) = peak_while_streaming(&small, bounded);
        let (p_large, d_large) = peak_while_streaming(&large, bounded);
        assert!(d_small > 0 || max_spans > 128, "{d_small}");
        assert!(d_large >= d_small);
        assert!(
            p_large <= p_small + (4 << 10),
            "max_marks {max_marks} max_spans {max_spans}: peak {p_small} B for 2000 marks, {p_large} B for 8000"
        );
    }
    // Marks unbounded, spans bounded: only the mark list grows, by far less per mark than the
    // two spans of four GPUs each mark would open (several KiB).
    let bounded = Limits {
        max_marks: 1 << 20,
        max_spans: 64,
        ..Limits::BOUNDED
    };
    let (p_small, _) = peak_while_streaming(&small, bounded);
    let (p_large, d_large) = peak_while_streaming(&large, bounded);
    assert!(d_large > 0);
    let per_mark = p_large.saturating_sub(p_small) / 6000;
    std::eprintln!("spans bounded: {p_small} B, {p_large} B: {per_mark} B per mark");
    assert!(per_mark < 512, "{per_mark} B per extra mark");
    // Without the span and mark bounds the same files need memory in proportion.
    let (q_small, _) = peak_while_streaming(&small, Limits::EXACT);
    let (q_large, _) = peak_while_streaming(&large, Limits::EXACT);
    std::eprintln!("exact: {q_small} B, {q_large} B");
    assert!(
        q_large > q_small + (1 << 20),
        "exact: peak {q_small} B for 2000 marks, {q_large} B for 8000"
    );
}
