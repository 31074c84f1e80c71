//! The mergeable section on one line inside a 2-space indented summary: the documents that
//! carry it are composed with serde (the section a [`OneLine`] field, the rest `flatten`ed), so
//! their JSON comes from one `Serialize`.
use alloc::boxed::Box;

use serde::Serialize;
use serde_json::value::RawValue;

/// A value's compact JSON, written as it is where it sits in a pretty-printed document: the
/// mergeable section, whose histograms would take four lines a bucket.
pub struct OneLine(Box<RawValue>);

impl OneLine {
    /// `value` in compact JSON.
    ///
    /// # Errors
    /// What serializing `value` gives.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<OneLine> {
        serde_json::value::to_raw_value(value).map(OneLine)
    }
}

impl Serialize for OneLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A summary object with its mergeable section as its last key (`body`'s own `mergeable`
/// field is `serde(skip)`ped).
#[derive(Serialize)]
pub struct WithSection<'a, T: Serialize> {
    /// The summary's keys.
    #[serde(flatten)]
    pub body: &'a T,
    /// The section, on one line.
    pub mergeable: OneLine,
}
