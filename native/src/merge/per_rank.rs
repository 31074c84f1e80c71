//! One file's summary with the mergeable section through the core's one-thread `Analyzer` (the
//! page's entry point), with the temporary file and further reads that keep it exact
//! (`flinch_host::exact_io`): the reference the CLI's threaded paths (`trace --json --mergeable`,
//! `trace::summarize_file_also` with `Also::Mergeable`) are tested against, byte for byte.
use std::path::Path;

use flinch_core::Limits;
use flinch_core::analyzer::{Analysis, Analyzer, AnalyzerOptions, Kind};
use flinch_core::summary::TraceSummaryResult;

use crate::input::{InputError, InputFile, Passes};

/// Summarizes `path` with the mergeable section.
///
/// # Errors
/// The file cannot be read, or is not a trace.
pub fn summarize_mergeable(
    path: &Path,
    source: &str,
    limits: Limits,
    top: usize,
    exact_io: bool,
) -> Result<TraceSummaryResult, String> {
    // Opened once; further passes (exact_io) read it again through this.
    let passes = if exact_io {
        Passes::Several
    } else {
        Passes::One
    };
    let file = InputFile::open(path, passes)?;
    let mut input = file.read()?;
    let options = AnalyzerOptions {
        kind: Kind::Trace,
        custom_limits: Some(limits),
        source: source.to_string(),
        top: Some(top),
        mergeable: true,
        ..AnalyzerOptions::default()
    };
    let mut analyzer = Analyzer::with_decoded_input(options, input.is_gzip());
    #[cfg(unix)]
    if exact_io {
        use flinch_host::exact_io::{FileReplay, FileSpill};
        analyzer.set_trace_io(
            Box::new(FileSpill::new()),
            Box::new(FileReplay::new(&file, limits)),
        );
    }
    #[cfg(not(unix))]
    let _ = exact_io;
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => analyzer.write(chunk).map_err(|e| e.to_string())?,
            Ok(None) => {
                if let Some(w) = input.warning() {
                    analyzer.note_gzip_warning(w);
                }
                break;
            }
            // A cut .gz: summarize what was decoded before the cut.
            Err(InputError { cut: Some(cut), .. }) => {
                analyzer.note_cut_gzip(cut);
                break;
            }
            Err(e) => return Err(e.message),
        }
    }
    match analyzer.finish().map_err(|e| e.to_string())? {
        Analysis::Trace(result) => Ok(*result),
        Analysis::Recording(_) => Err("not a trace".to_string()),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;

    use super::*;
    use flinch_core::merge::histogram::SCALE;

    /// A trace whose ops have more durations than a small budget holds.
    fn doc() -> String {
        let mut s = String::from("{\"traceEvents\":[");
        let mut x = 12345u64;
        for k in 0..40_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let dur_ns = (x >> 33) % 200_000;
            if k > 0 {
                s.push(',');
            }
            s.push_str(&format!(
                "{{\"ph\":\"X\",\"cat\":\"c{}\",\"name\":\"op{}\",\"ts\":{}.{:03},\"dur\":{}.{:03}}}",
                k % 2,
                (x >> 20) % 7,
                k * 3,
                k % 1000,
                dur_ns / 1000,
                dur_ns % 1000
            ));
        }
        s.push_str("]}");
        s
    }

    /// Past the durations budget the section's histograms come from a further read of the file
    /// (plain and gzip): those of the exact in-memory summary at the scale that fit, which a
    /// warning states.
    #[test]
    fn tight_limits_read_the_file_again_for_histograms() {
        let dir = std::env::temp_dir().join(format!("flinch-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("rank.json");
        let text = doc();
        std::fs::write(&plain, &text).unwrap();
        let gz = dir.join("rank.json.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(text.as_bytes()).unwrap();
        enc.finish().unwrap();
        let exact = summarize_mergeable(&plain, "r", Limits::EXACT, 40, false)
            .unwrap()
            .mergeable_state()
            .unwrap();
        let tight = Limits {
            max_exact_values: 20_000,
            ..Limits::NATIVE
        };
        for path in [&plain, &gz] {
            let got = summarize_mergeable(path, "r", tight, 40, true)
                .unwrap()
                .mergeable_state()
                .unwrap();
            assert!(got.ops.iter().all(|o| o.histogram.is_some()));
            let mut want = exact.clone();
            // A scale below the full one is stated.
            let warnings = &got.ranks[0].warnings;
            let stated = format!("the mergeable histograms are at scale {},", got.scale);
            assert_eq!(
                warnings.iter().any(|w| w.starts_with(&stated)),
                got.scale < SCALE,
                "{warnings:?}"
            );
            want.ranks[0].warnings = warnings.clone();
            want.scale = got.scale;
            for o in &mut want.ops {
                o.histogram = o
                    .histogram
                    .as_ref()
                    .map(|h| h.downscaled(SCALE - got.scale));
            }
            // Same input bytes for the gzip file once inflated.
            want.ranks[0].bytes = got.ranks[0].bytes;
            assert_eq!(got, want, "{}", path.display());
            // Without the further read those ops have no histogram.
            let alone = summarize_mergeable(path, "r", tight, 40, false)
                .unwrap()
                .mergeable_state()
                .unwrap();
            assert!(alone.ops.iter().any(|o| o.histogram.is_none()));
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
