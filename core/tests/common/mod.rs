//! Helpers shared by the integration tests. Lives in `tests/common/mod.rs` so that cargo does not
//! build it as a test crate of its own; a test file includes it with `mod common;`.
pub mod counting_alloc;
