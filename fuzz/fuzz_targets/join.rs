//! Fuzz target `join`: arbitrary bytes split into a trace and a trace.csv (at the first `\0`),
//! through the join's two passes (gaps, pause host tables, recording windows, energy per
//! annotation) and the Perfetto counter events of every row; the first pass as native runs it
//! (`FirstPass`) finds the same gaps, and its replayed annotation spans give the same report;
//! the trace's own power counters (`join::counters`) stand in for the recording, or are compared with it. Must never panic or hang; every
//! pause listed is at least the minimum gap long and the pauses of a device come longest first.
#![no_main]

use flinch_core::Limits;
use flinch_core::csv::{CsvEvent, TraceCsvReader};
use flinch_core::join::perfetto::CounterEvents;
use flinch_core::join::{
    Alignment, FirstPass, GapFinder, GapOptions, GpuMap, JoinOptions, JoinPass, RecordingBuilder,
    RecordingOptions,
};
use flinch_core::json::{Event, EventScanner, Scan};
use libfuzzer_sys::fuzz_target;

fn scan(doc: &[u8], mut f: impl FnMut(&Event<'_>)) -> Option<i64> {
    let mut sc = EventScanner::new(Limits::BOUNDED);
    for chunk in doc.chunks(61) {
        let mut pos = 0;
        loop {
            match sc.scan(&chunk[pos..]) {
                Ok((what, n)) => {
                    pos += n;
                    match what {
                        Scan::Event => f(&sc.event()),
                        Scan::NeedsInput => break,
                    }
                }
                Err(_) => return sc.base_time_ns(),
            }
        }
    }
    sc.finish();
    sc.base_time_ns()
}

fuzz_target!(|data: &[u8]| {
    let (doc, csv) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let min_gap_ns = 1 + i64::from(data.first().copied().unwrap_or(0)) * 1000;
    let opts = JoinOptions {
        gaps: GapOptions {
            min_gap_ns,
            max_gaps_per_device: 16,
            max_devices: 4,
        },
        clock_offset_ns: Some(0),
        gpu_map: GpuMap::parse("0=1,1=0").unwrap(),
        ..JoinOptions::default()
    };
    let mut b = RecordingBuilder::new(RecordingOptions {
        max_readings: 4096,
        ..RecordingOptions::default()
    });
    let rec = match b.write(csv) {
        Ok(()) => b.end().ok(),
        Err(_) => None,
    };
    let mut finder = GapFinder::new(opts.gaps);
    let mut first = FirstPass::new(opts.gaps, true);
    let base = scan(doc, |e| {
        finder.add(e);
        first.add(e);
    });
    let found = finder.finish();
    first.set_base_time_ns(base);
    let first = first.finish();
    assert_eq!(first.found, found);
    // Without a pause to list, the second pass may replay the copied annotation spans.
    let replayed = found.devices.iter().all(|d| d.gaps.is_empty()).then(|| {
        let mut pass = JoinPass::new(found.clone(), base, opts.clone(), rec.as_ref()).ok()?;
        first.annotations.as_ref()?.replay(|e| pass.add(e));
        Some(format!("{:?}", pass.finish()))
    });
    for d in &found.devices {
        assert!(d.gaps.iter().all(|g| g.dur_ns() >= min_gap_ns));
        assert!(d.gaps.windows(2).all(|w| w[0].dur_ns() >= w[1].dur_ns()));
    }
    // The trace's own counters: the recording when there is none, compared with it when
    // there is one (as the trace job does).
    if let Some(c) = first.counters.clone() {
        let cf = c.finish(Alignment::new(base, Some(0)), 5_000_000_000);
        for telemetry in [None, rec.as_ref()] {
            let used = telemetry.is_none() && cf.recording.is_some();
            let r = if used {
                cf.recording.as_deref()
            } else {
                telemetry
            };
            let o = JoinOptions {
                gpu_map: if used {
                    GpuMap::default()
                } else {
                    opts.gpu_map.clone()
                },
                ..opts.clone()
            };
            if let Ok(mut p) = JoinPass::new(found.clone(), base, o, r) {
                p.set_trace_counters(cf.clone(), used);
                scan(doc, |e| p.add(e));
                let report = p.finish();
                let tc = report.trace_counters.expect("the counters' report");
                assert_eq!(tc.used, used);
                assert_eq!(report.power_source == Some("trace_counters"), used);
            }
        }
    }
    let Ok(mut pass) = JoinPass::new(found, base, opts, rec.as_ref()) else {
        return;
    };
    scan(doc, |e| pass.add(e));
    let report = pass.finish();
    if let Some(Some(replayed)) = replayed {
        assert_eq!(replayed, format!("{report:?}"));
    }
    assert!(
        report
            .pauses
            .iter()
            .all(|p| p.duration_ms >= min_gap_ns as f64 / 1e6)
    );

    let align = Alignment::new(base, Some(0)).unwrap_or(Alignment::new(None, Some(0)).unwrap());
    let mut ce = CounterEvents::new(align, GpuMap::default());
    let mut r = TraceCsvReader::new();
    let mut rest = csv;
    while !rest.is_empty() {
        let (ev, n) = r.read(rest);
        rest = &rest[n..];
        if ev == CsvEvent::Row {
            let _ = ce.row(&r.row());
        }
    }
    loop {
        let (ev, _) = r.read(&[]);
        if ev == CsvEvent::Row {
            let _ = ce.row(&r.row());
        }
        if ev == CsvEvent::End {
            break;
        }
    }
});
