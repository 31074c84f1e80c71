//! flinch-wasm: the thin wasm-bindgen adapter over [`flinch_core::analyzer`] used by `www/`.
//!
//! Every exported method is a one-liner over the core; the one piece of glue is
//! [`to_js_error`], which turns a core error into a JS `Error` carrying the core's message.
use flinch_core::analyzer::{AnalyzeError, Analyzer as CoreAnalyzer, AnalyzerOptions};
use wasm_bindgen::prelude::*;

/// The streaming analyzer, as seen from JavaScript:
/// `new Analyzer(optionsJson)`, `write(chunk)`, `bytesIn()`, `end()`.
#[wasm_bindgen]
pub struct Analyzer {
    inner: Option<CoreAnalyzer>,
}

#[wasm_bindgen]
impl Analyzer {
    /// Builds an analyzer from JSON options (`{"kind","limits","source","start","end"}`;
    /// see `AnalyzerOptions` in flinch-core).
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> Result<Analyzer, JsError> {
        let options = AnalyzerOptions::from_json(options_json).map_err(to_js_error)?;
        Ok(Analyzer {
            inner: Some(CoreAnalyzer::new(options)),
        })
    }

    /// Takes the next chunk of the file.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.core()?.write(chunk).map_err(to_js_error)
    }

    /// Input bytes taken so far.
    #[wasm_bindgen(js_name = bytesIn)]
    pub fn bytes_in(&self) -> f64 {
        self.inner.as_ref().map_or(0.0, |a| a.bytes_in() as f64)
    }

    /// Ends the input and returns the result JSON (the same bytes as the native `--json`).
    pub fn end(&mut self) -> Result<String, JsError> {
        let core = self.inner.take().ok_or_else(ended)?;
        core.end().map_err(to_js_error)
    }

    fn core(&mut self) -> Result<&mut CoreAnalyzer, JsError> {
        self.inner.as_mut().ok_or_else(ended)
    }
}

fn ended() -> JsError {
    JsError::new("analyzer already ended")
}

/// The one conversion of core errors into JS errors: the message is the core's Display text.
pub fn to_js_error(e: AnalyzeError) -> JsError {
    JsError::new(&e.to_string())
}
