//! The diff job's options as JSON ([`DiffJobOptions`]), for callers that pass options as text
//! (the page). Each field maps onto one of [`DiffOptions`]' by the rule the CLI's flags follow
//! (`flinch-trace diff --top --threshold-pct --min-gap-ms --bounded/--exact`, a recording per
//! side): one mapping, [`DiffJobOptions::into_options`].
use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;

use serde::Deserialize;

use super::compare::CompareOptions;
use super::job::DiffOptions;
use crate::Exactness;
use crate::join::{OptionError, RecordingOptions, join_options, power_source_named};

/// Options of a [`DiffJob`](super::DiffJob), from JSON with these field names (all optional).
///
/// A field of [`DiffOptions`] that is added later (the steps' pattern) takes one field here and
/// one line in [`into_options`](Self::into_options).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiffJobOptions {
    /// A's name in errors and in the result's `a.source` (the file as named).
    pub source_a: String,
    /// B's name.
    pub source_b: String,
    /// Each trace's memory bounds (`native`, `bounded`, `exact`, `page`; default `native`).
    pub limits: Exactness,
    /// `--top`: ops listed (absent: 40).
    pub top: Option<usize>,
    /// `--threshold-pct` (absent: 1).
    pub threshold_pct: Option<f64>,
    /// `--min-gap-ms` (absent: 100).
    pub min_gap_ms: Option<f64>,
    /// The clock offset of both traces to their recordings, as text (exact to 1 ns).
    pub clock_offset_ms: Option<String>,
    /// Trace device to recorded GPU, for both sides (`DEVICE=GPU_INDEX,...`).
    pub gpu_map: Option<String>,
    /// A's recording (trace.csv) is given: `{}`, or `{"power_source": ...}` from its sidecar.
    pub telemetry_a: Option<TelemetryJson>,
    /// B's recording.
    pub telemetry_b: Option<TelemetryJson>,
    /// `--steps`: compare the step view of both traces.
    pub steps: bool,
    /// `--step-name`: the steps' annotation name or pattern (implies `steps`).
    pub step_name: Option<String>,
}

/// A side's recording, in [`DiffJobOptions`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryJson {
    /// Which NVML reading the recording's `gpu_power_W` holds (`instant`, `average`; absent or
    /// `unknown`: unknown), as its `.meta.json` sidecar names it.
    pub power_source: Option<String>,
}

/// Why diff options were refused, naming the option.
#[derive(Clone, Debug)]
pub enum DiffOptionError {
    /// The JSON: an unknown field or a wrong type.
    Json(Arc<serde_json::Error>),
    /// A join option (`min_gap_ms`, `clock_offset_ms`, `gpu_map`, `power_source`).
    Join(OptionError),
    /// `threshold_pct` outside 0..=100.
    ThresholdPct(f64),
    /// `step_name`: not a pattern the step view takes.
    StepName(crate::steps::PatternError),
}

impl fmt::Display for DiffOptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffOptionError::Json(e) => write!(f, "diff options: {e}"),
            DiffOptionError::Join(e) => write!(f, "diff options: {e}"),
            DiffOptionError::ThresholdPct(p) => write!(
                f,
                "diff options: threshold_pct {p}: {}",
                THRESHOLD_PCT_EXPECTED
            ),
            DiffOptionError::StepName(e) => write!(f, "diff options: step_name: {e}"),
        }
    }
}

impl core::error::Error for DiffOptionError {}

/// What a threshold must be (the CLI's `--threshold-pct` says the same).
pub const THRESHOLD_PCT_EXPECTED: &str = "expected a percentage from 0 to 100";

/// Whether `pct` is a threshold the verdict can use: finite, 0 to 100.
pub fn threshold_pct_ok(pct: f64) -> bool {
    pct.is_finite() && (0.0..=100.0).contains(&pct)
}

impl DiffJobOptions {
    /// Options from their JSON.
    ///
    /// # Errors
    /// Unknown fields, wrong types, or bad values, by the option's name.
    pub fn from_json(json: &str) -> Result<DiffOptions, DiffOptionError> {
        let o: DiffJobOptions =
            serde_json::from_str(json).map_err(|e| DiffOptionError::Json(Arc::new(e)))?;
        o.into_options()
    }

    /// The job's options these stand for.
    ///
    /// # Errors
    /// A bad value, by the option's name.
    pub fn into_options(self) -> Result<DiffOptions, DiffOptionError> {
        let mut o = DiffOptions::new(self.source_a, self.source_b);
        o.limits = self.limits.limits();
        o.join = join_options(
            self.min_gap_ms,
            0,
            self.clock_offset_ms.as_deref(),
            self.gpu_map.as_deref(),
        )
        .map_err(DiffOptionError::Join)?;
        let defaults = CompareOptions::default();
        o.compare.top = self.top.unwrap_or(defaults.top);
        o.compare.threshold_pct = match self.threshold_pct {
            Some(p) if !threshold_pct_ok(p) => return Err(DiffOptionError::ThresholdPct(p)),
            Some(p) => p,
            None => defaults.threshold_pct,
        };
        o.recordings = [
            recording(self.telemetry_a.as_ref())?,
            recording(self.telemetry_b.as_ref())?,
        ];
        o.set_steps(self.steps, self.step_name.as_deref())
            .map_err(DiffOptionError::StepName)?;
        Ok(o)
    }
}

fn recording(t: Option<&TelemetryJson>) -> Result<Option<RecordingOptions>, DiffOptionError> {
    let Some(t) = t else { return Ok(None) };
    let power_source =
        power_source_named(t.power_source.as_deref()).map_err(DiffOptionError::Join)?;
    Ok(Some(RecordingOptions {
        power_source,
        ..RecordingOptions::default()
    }))
}

#[cfg(test)]
mod tests {
    use alloc::format;
    use alloc::string::ToString;

    use super::*;
    use crate::Limits;
    use crate::window::PowerSource;

    fn same(a: &DiffOptions, b: &DiffOptions) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn steps_and_step_name_reach_the_job() {
        let o = DiffJobOptions::from_json(r#"{"steps": true}"#).unwrap();
        assert!(o.steps.is_some());
        let o = DiffJobOptions::from_json(r#"{"step_name": "train_step"}"#).unwrap();
        assert!(o.steps.is_some());
        assert!(DiffJobOptions::from_json("{}").unwrap().steps.is_none());
        let e = DiffJobOptions::from_json(r#"{"step_name": ""}"#).unwrap_err();
        assert!(e.to_string().starts_with("diff options: step_name:"), "{e}");
    }

    #[test]
    fn empty_options_are_the_cli_defaults() {
        let o = DiffJobOptions::from_json("{}").unwrap();
        // As the CLI's request builds it (host/src/diff.rs: no pause listed).
        let mut cli = DiffOptions::new(String::new(), String::new());
        cli.join = join_options(None, 0, None, None).unwrap();
        same(&o, &cli);
        assert_eq!(o.limits, Limits::NATIVE);
        assert!(o.recordings.iter().all(Option::is_none));
    }

    /// Each field lands where the CLI's flag puts it (native/src/diff.rs, host/src/diff.rs).
    #[test]
    fn every_field_maps_as_the_cli_flag_does() {
        let o = DiffJobOptions::from_json(
            r#"{"source_a": "a.json", "source_b": "b.json.gz", "limits": "page", "top": 7,
                "threshold_pct": 2.5, "min_gap_ms": 0.25, "clock_offset_ms": "-1.000001",
                "gpu_map": "0=1", "telemetry_a": {}, "telemetry_b": {"power_source": "average"}}"#,
        )
        .unwrap();
        let mut want = DiffOptions::new("a.json".to_string(), "b.json.gz".to_string());
        want.limits = Limits::PAGE;
        want.join = join_options(Some(0.25), 0, Some("-1.000001"), Some("0=1")).unwrap();
        want.compare.top = 7;
        want.compare.threshold_pct = 2.5;
        want.recordings = [
            Some(RecordingOptions::default()),
            Some(RecordingOptions {
                power_source: PowerSource::Average,
                ..RecordingOptions::default()
            }),
        ];
        same(&o, &want);
        assert_eq!(o.join.gaps.min_gap_ns, 250_000);
        assert_eq!(o.join.clock_offset_ns, Some(-1_000_001));
        assert_eq!(o.join.pauses.max_pauses_per_device, 0);
    }

    #[test]
    fn bad_options_name_the_option() {
        let err = |json: &str| DiffJobOptions::from_json(json).unwrap_err().to_string();
        assert!(err(r#"{"stepz": true}"#).contains("unknown field `stepz`"));
        assert!(err(r#"{"top": -1}"#).starts_with("diff options: invalid value"));
        assert_eq!(
            err(r#"{"threshold_pct": 101}"#),
            "diff options: threshold_pct 101: expected a percentage from 0 to 100"
        );
        assert_eq!(
            err(r#"{"telemetry_b": {"power_source": "peak"}}"#),
            "diff options: power_source peak: expected instant or average"
        );
        assert!(err(r#"{"min_gap_ms": -1}"#).contains("--min-gap-ms -1"));
        assert!(err(r#"{"telemetry_a": {"power": 1}}"#).contains("unknown field `power`"));
        assert!(err(r#"{"limits": "huge"}"#).contains("unknown variant `huge`"));
    }

    /// A recording named in the options is asked for before its trace, under the job's names.
    #[test]
    fn a_recording_in_the_options_is_asked_for_first() {
        use crate::job::{Job, Need};
        let job = super::super::DiffJob::new(
            DiffJobOptions::from_json(r#"{"telemetry_a": {}}"#).unwrap(),
        );
        assert_eq!(job.need(), Need::File(super::super::TELEMETRY_A));
        let job = super::super::DiffJob::new(
            DiffJobOptions::from_json(r#"{"telemetry_b": {}}"#).unwrap(),
        );
        assert_eq!(job.need(), Need::File(super::super::A));
    }

    #[test]
    fn the_threshold_rule() {
        for ok in [0.0, 1.0, 100.0] {
            assert!(threshold_pct_ok(ok));
        }
        for bad in [-0.1, 100.5, f64::NAN, f64::INFINITY] {
            assert!(!threshold_pct_ok(bad));
        }
    }
}
