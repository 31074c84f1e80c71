//! flinch-core: the analysis core of flinch-trace.
//!
//! `#![no_std]`, `#![forbid(unsafe_code)]`, and bounded by the [`Limits`] the caller sets.
//! Every parser is a push parser in the csv-core / miniz_oxide manner: the caller owns the
//! input buffers, and each call returns an enum saying what happened plus the bytes consumed.
//!
//! # Example: a trace.csv in, the window between two marks out
//!
//! The bytes may arrive in chunks of any size (here 7 bytes at a time); memory does not grow
//! with the number of rows.
//!
//! ```
//! use flinch_core::window::{WindowOptions, PowerSource, WindowAnalyzer, WindowSelect};
//!
//! // One GPU sampled every 100 ms: busy at 300 W, idle at 60 W between the two marks.
//! let mut csv = String::from("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,\
//!     gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj\n");
//! for i in 0..=40u64 {
//!     let t_ns = i * 100_000_000;
//!     if i == 10 || i == 30 {
//!         let label = if i == 10 { "pause_start" } else { "pause_end" };
//!         csv.push_str(&format!("{t_ns},,MARK,{label},,,,,,\n"));
//!     }
//!     let (power_w, util_pct) = if (10..=30).contains(&i) { (60, 0) } else { (300, 100) };
//!     csv.push_str(&format!("{t_ns},,SAMPLE,,{power_w},{util_pct},5,1980,60,\n"));
//! }
//!
//! let mut analyzer = WindowAnalyzer::new(WindowOptions {
//!     select: Some(WindowSelect {
//!         start: "pause_start".into(),
//!         end: "pause_end".into(),
//!         occurrence: 1,
//!     }),
//!     power_source: PowerSource::Instant,
//!     ..WindowOptions::default()
//! });
//! for chunk in csv.as_bytes().chunks(7) {
//!     analyzer.write(chunk);
//! }
//! let analysis = analyzer.end();
//!
//! let window = analysis.window.expect("both marks were found");
//! assert_eq!(window.duration_s, 2.0);
//! // The reference's samples-only trapezoid, and the energy interpolated to the mark edges.
//! assert_eq!(window.reference.samples, 21);
//! let energy_j = window.total.energy_edge_j.unwrap();
//! assert!((energy_j - 120.0).abs() < 1e-9, "{energy_j}");
//! // Power at the idle floor and no kernel running: the GPU was waiting.
//! assert_eq!(window.verdict.verdict, Some("waiting"));
//! // The same result as the JSON `flinch-trace analyze --json` prints.
//! let json = serde_json::to_value(&window).unwrap();
//! assert_eq!(json["verdict"]["verdict"], "waiting");
//! ```
//!
//! [`analyzer::Analyzer`] does the same behind one entry point that also detects gzip and trace
//! JSON, and renders the result JSON.
//!
//! # Crate features
//! - `alloc` (default): owned buffers allocated once at construction from [`Limits`], exact
//!   (growable) modes, and JSON rendering of results through serde_json. Without it the crate
//!   builds for bare-metal targets such as `thumbv7em-none-eabihf`.
//! - `std`: for hosted targets; implies `alloc` and turns on run-time CPU detection for the
//!   gzip CRC-32.
//! - `clap`: `clap::ValueEnum` on the option enums the native CLI takes as flags.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(any(test, feature = "std"))]
extern crate std;

#[cfg(feature = "alloc")]
pub mod analyzer;
pub mod csv;
#[cfg(feature = "alloc")]
pub mod diff;
pub mod energy;
pub mod exactness;
pub mod gzip;
pub mod intervals;
pub mod job;
#[cfg(feature = "alloc")]
pub mod join;
pub mod json;
pub mod limits;
pub mod marks_line;
#[cfg(feature = "alloc")]
pub mod merge;
pub mod metrics;
pub mod ordered;
pub mod pynum;
#[cfg(feature = "alloc")]
pub mod runs;
pub mod sidecar;
pub mod sketch;
pub mod stats;
#[cfg(feature = "alloc")]
pub mod steps;
pub mod summary;
#[cfg(feature = "alloc")]
pub mod telemetry;
pub mod time_windows;
#[cfg(feature = "alloc")]
pub mod trace_job;
pub mod window;

pub use exactness::Exactness;
pub use limits::Limits;

#[cfg(test)]
pub(crate) mod testutil;
