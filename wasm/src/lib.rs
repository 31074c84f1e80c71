//! flinch-wasm: a thin wasm-bindgen adapter over flinch-core (stub; see README 'Status').
