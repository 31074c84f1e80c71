//! flinch-host: the std driver of `flinch-core`'s jobs. The core says what a job needs (bytes of a
//! file, byte ranges, a folder's listing, a temporary file) and this crate answers from the file
//! system: an input opened once and read in passes (`input`), gzip inflated on a reader thread,
//! output files written beside their target and renamed on success (`output`), the temporary
//! files that keep results exact past the memory limits (`exact_io`, `value_spill`), and the
//! drivers of whole jobs (`trace`: a trace's summary and join; `analyze`: a trace.csv's mark
//! windows; `runs`: `summarize` of a runs folder; `merge`: per-rank summaries merged). The CLI
//! (`flinch-trace`) and the Python wheel both use it; it holds no command line and no
//! presentation.

pub mod analyze;
pub mod diff;
pub mod exact_io;
pub mod input;
pub mod merge;
pub mod output;
pub mod runs;
pub mod sidecar;
pub mod trace;
pub mod value_spill;
