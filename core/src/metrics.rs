//! Live metrics for Prometheus (`record --metrics`, docs/metrics.md): the exposition text
//! formats ([`exposition`], no allocation) and the state they are written from ([`live`]: the
//! recording's counters in memory fixed at construction).
pub mod exposition;
#[cfg(feature = "alloc")]
pub mod live;

pub use exposition::{Exposition, Family, Format, Kind, SliceWriter, Value};
#[cfg(feature = "alloc")]
pub use live::{GpuLabel, GpuSample, LiveMetrics, LiveOptions, OTHER_WINDOW, ZoneLabel};
