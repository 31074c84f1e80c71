//! How to analyze: the input's kind, the memory bounds, and the options of both analyses.
use alloc::string::String;
use alloc::sync::Arc;

use serde::Deserialize;

use super::{AnalyzeError, OptionsError};
use crate::window::{PowerSource, WindowOptions, WindowSelect};
use crate::{Exactness, Limits};

/// What the input is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Detect from the first bytes (gzip magic, then `{`/`[` for a trace, else trace.csv).
    #[default]
    Auto,
    /// A Chrome / Kineto trace (`.json`, or `.json.gz` when gzip is detected).
    Trace,
    /// A `trace.csv` written by `flinch-trace record` or the reference recorder.
    Csv,
}

impl Kind {
    /// Parses `auto`, `trace` or `csv`.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "auto" | "" => Some(Kind::Auto),
            "trace" | "json" => Some(Kind::Trace),
            "csv" => Some(Kind::Csv),
            _ => None,
        }
    }
}

/// How to analyze: built by the native commands from their flags, and by the page from a JSON
/// object with the same field names (see [`AnalyzerOptions::from_json`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalyzerOptions {
    /// What the input is (`auto`, `trace`, `csv`).
    pub kind: Kind,
    /// How exact, in what memory (`native`, `bounded`, `exact`, `page`; absent: `native`).
    pub limits: Exactness,
    /// Limits given as such (native callers), used instead of the preset's.
    #[serde(skip)]
    pub custom_limits: Option<Limits>,
    /// The `source` string written into the result (native: the path as given; page: the file name).
    pub source: String,
    /// trace.csv only: label of the start mark of the window (with `end`).
    pub start: Option<String>,
    /// trace.csv only: label of the end mark of the window (with `start`).
    pub end: Option<String>,
    /// Traces only: how many (category, name) ops to list (absent: 40, the reference's).
    pub top: Option<usize>,
    /// trace.csv only: use the k-th mark of each label (file order); 0 or absent means 1.
    pub occurrence: u32,
    /// trace.csv only: analyze only this `gpu_index`.
    pub gpu: Option<i64>,
    /// trace.csv only: also analyze every span when a window is selected (always done without one).
    pub spans: bool,
    /// trace.csv only: power intervals longer than this are skipped, ms (absent: 5000).
    pub max_gap_ms: Option<u64>,
    /// trace.csv only: which NVML reading `gpu_power_W` holds (`instant`, `average`, `unknown`).
    pub power_source: PowerSource,
    /// Traces only: add the mergeable section (`"mergeable"`, docs/merge.md).
    pub mergeable: bool,
    /// Traces only: add the steps (`trace --steps`, docs/steps.md).
    pub steps: bool,
    /// Traces only: the steps' pattern (`--step-name`; implies `steps`).
    pub step_name: Option<String>,
}

impl AnalyzerOptions {
    /// Parses options from JSON such as `{"kind":"auto","limits":"bounded","source":"t.csv"}`.
    ///
    /// # Errors
    /// Unknown fields or values, as [`AnalyzeError::Options`].
    pub fn from_json(text: &str) -> Result<AnalyzerOptions, AnalyzeError> {
        serde_json::from_str(text)
            .map_err(|e| AnalyzeError::Options(OptionsError::Json(Arc::new(e))))
    }

    /// The step pattern, when the steps are asked for.
    ///
    /// # Errors
    /// A bad `step_name`.
    pub fn step_pattern(&self) -> Result<Option<crate::steps::StepPattern>, AnalyzeError> {
        match self.step_name.as_deref() {
            Some(p) => crate::steps::StepPattern::parse(p)
                .map(Some)
                .map_err(|e| AnalyzeError::Options(OptionsError::StepName(e))),
            None => Ok(self.steps.then(crate::steps::StepPattern::default)),
        }
    }

    /// The trace.csv analysis options these options stand for. This is the one mapping used by
    /// both `flinch-trace analyze --json` and the page: without `start`/`end`, the
    /// recording-level analysis (every span, marks, plot series of up to 2000 points per GPU).
    ///
    /// # Errors
    /// Only one of `start`/`end`.
    pub fn window_options(&self) -> Result<WindowOptions, AnalyzeError> {
        let select = match (&self.start, &self.end) {
            (Some(start), Some(end)) => Some(WindowSelect {
                start: start.clone(),
                end: end.clone(),
                occurrence: self.occurrence.max(1),
            }),
            (None, None) => None,
            _ => return Err(AnalyzeError::Options(OptionsError::UnpairedMark)),
        };
        let recording_level = select.is_none();
        let defaults = WindowOptions::default();
        Ok(WindowOptions {
            limits: self.limits(),
            select,
            gpu: self.gpu,
            spans: self.spans || recording_level,
            series_points: if recording_level { 2000 } else { 0 },
            max_gap_ns: self.max_gap_ms.map_or(defaults.max_gap_ns, |ms| {
                (ms.min(i64::MAX as u64 / 1_000_000) * 1_000_000) as i64
            }),
            power_source: self.power_source,
            ..defaults
        })
    }

    /// The [`Limits`]: `custom_limits` when given, else the exactness's.
    pub fn limits(&self) -> Limits {
        self.custom_limits.unwrap_or(self.limits.limits())
    }
}
