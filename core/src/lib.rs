//! flinch-core: the analysis core of flinch-trace.
//!
//! `#![no_std]`, `#![forbid(unsafe_code)]`, and bounded by the [`Limits`] the caller sets.
//! Every parser is a push parser in the csv-core / miniz_oxide manner: the caller owns the
//! input buffers, and each call returns an enum saying what happened plus the bytes consumed.
//!
//! # Crate features
//! - `alloc` (default): owned buffers allocated once at construction from [`Limits`], exact
//!   (growable) modes, and JSON rendering of results through serde_json. Without it the crate
//!   builds for bare-metal targets such as `thumbv7em-none-eabihf`.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(test)]
extern crate std;

#[cfg(feature = "alloc")]
pub mod analyzer;
pub mod csv;
pub mod energy;
pub mod gzip;
pub mod intervals;
#[cfg(feature = "alloc")]
pub mod join;
pub mod json;
pub mod limits;
pub mod ordered;
pub mod pynum;
#[cfg(feature = "alloc")]
pub mod runs;
pub mod sketch;
pub mod stats;
pub mod summary;
#[cfg(feature = "alloc")]
pub mod telemetry;
pub mod window;
pub mod windowed;

pub use limits::Limits;

#[cfg(test)]
pub(crate) mod testutil;
