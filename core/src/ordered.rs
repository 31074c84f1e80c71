//! JSON objects whose keys keep the order they were inserted in (the reference's dicts), as
//! serde maps: [`serialize_pairs`] for any pairs, [`OrderedMap`] to hold them (`alloc`).
use serde::Serializer;
use serde::ser::SerializeMap;

/// Serializes `pairs` as one map, keys in the order given.
pub fn serialize_pairs<S, K, V>(
    s: S,
    pairs: impl ExactSizeIterator<Item = (K, V)>,
) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    K: serde::Serialize,
    V: serde::Serialize,
{
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(&k, &v)?;
    }
    m.end()
}

/// Key-value pairs in insertion order, serialized as a map. Keys are `String` unless given.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq)]
pub struct OrderedMap<V, K = alloc::string::String>(pub alloc::vec::Vec<(K, V)>);

#[cfg(feature = "alloc")]
impl<V, K> Default for OrderedMap<V, K> {
    fn default() -> Self {
        OrderedMap(alloc::vec::Vec::new())
    }
}

#[cfg(feature = "alloc")]
impl<V: serde::Serialize, K: serde::Serialize> serde::Serialize for OrderedMap<V, K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_pairs(s, self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn keys_keep_insertion_order() {
        let m = OrderedMap(alloc::vec![("b".to_string(), 1), ("a".to_string(), 2)]);
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"b":1,"a":2}"#);
        let empty: OrderedMap<u8, &str> = OrderedMap::default();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    }
}
