//! The merge against naive oracles: pooled durations sorted (percentiles within the stated
//! bound; n, sums, min, max exact), random groupings and orders (byte-identical results), and
//! bad inputs (clear errors, no panics).
use std::collections::BTreeMap;
use std::format;
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::histogram::*;
use super::*;
use crate::analyzer::{Analyzer, AnalyzerOptions, Kind};
use crate::stats::percentile_linear;
use crate::testutil::Rng;

#[test]
fn table_is_two_to_the_fraction() {
    for j in 0..512u32 {
        // 2^(j/512) at scale 9 is the representative of bucket j-1 at scale 8 squared... check
        // through the representative of scale 8 instead: index 2k+1 of the table.
        let want = 2f64.powf(f64::from(j) / 512.0);
        if j % 2 == 1 {
            let got = bucket_value_ns(((j - 1) / 2) as i32 + (63 << 8), 8) / 2f64.powi(63);
            assert!((got - want).abs() <= 4e-16 * want, "{j}: {got} vs {want}");
        }
    }
    let e = relative_error(SCALE);
    assert!((e - (2f64.powf(1.0 / 512.0) - 1.0)).abs() < 1e-15, "{e}");
    assert!((relative_error(0) - (2f64.sqrt() - 1.0)).abs() < 1e-15);
}

/// A bucket's bounds from its index through f64 (for the checks only).
fn bounds(i: i32, s: u8) -> (f64, f64) {
    let base = 2f64.powf(2f64.powi(-i32::from(s)));
    (base.powi(i), base.powi(i + 1))
}

#[test]
fn buckets_hold_their_values_and_downscale_by_shifts() {
    let mut rng = Rng::from_env(17);
    let mut values: Vec<u64> = (1..=4096).collect();
    values.extend((0..63).map(|e| 1u64 << e));
    values.extend((1..64).map(|e| (1u64 << e) - 1));
    values.extend((1..63).map(|e| (1u64 << e) + 1));
    values.push(u64::MAX);
    for _ in 0..20_000 {
        let bits = rng.below(64) as u32;
        values.push(rng.next_u64() >> bits | 1);
    }
    for &v in &values {
        for s in 0..=MAX_SCALE {
            let i = bucket_index(v, s);
            let (lo, hi) = index_range(s);
            assert!(lo <= i && i <= hi, "{v} at {s}: {i}");
            let (below, above) = bounds(i, s);
            let x = v as f64;
            // Exact below/above up to the f64 rounding of the bounds.
            assert!(
                below < x * (1.0 + 1e-12) && x <= above * (1.0 + 1e-12),
                "{v} s{s} i{i}"
            );
            let rep = bucket_value_ns(i, s);
            let err = (rep - x).abs() / x;
            assert!(
                err <= relative_error(s) * (1.0 + 1e-9),
                "{v} s{s}: {rep} err {err}"
            );
            if s > 0 {
                assert_eq!(i >> 1, bucket_index(v, s - 1), "{v} at {s}");
            }
            if v.is_power_of_two() {
                assert_eq!(i, (v.trailing_zeros() as i32) * (1 << s) - 1);
            }
        }
    }
    // Monotone in the value.
    values.sort_unstable();
    for w in values.windows(2) {
        assert!(bucket_index(w[0], SCALE) <= bucket_index(w[1], SCALE));
    }
}

/// A random rank's trace: `X` events of a few ops with durations of many shapes.
pub(super) fn rank_doc(rng: &mut Rng, events: usize) -> (String, Vec<(String, String, u64)>) {
    let cats = ["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy"];
    let mut doc = String::from("{\"traceEvents\":[");
    let mut durs = Vec::new();
    for k in 0..events {
        let cat = cats[rng.below(cats.len() as u64) as usize];
        let name = format!("op{}", rng.below(6));
        let dur_ns = match rng.below(6) {
            0 => 0,
            1 => rng.below(5) * 1000,
            2 => rng.below(2_000),
            // Log-uniform from 1 ns to ~17 min.
            _ => (2f64.powf(rng.unit_f64() * 40.0)) as u64,
        };
        let ts_ns = rng.below(1 << 40);
        if k > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":\"{name}\",\"pid\":1,\"tid\":{},\"ts\":{}.{:03},\"dur\":{}.{:03}}}",
            rng.below(4),
            ts_ns / 1000,
            ts_ns % 1000,
            dur_ns / 1000,
            dur_ns % 1000
        ));
        durs.push((cat.to_string(), name, dur_ns));
    }
    doc.push_str("]}");
    (doc, durs)
}

pub(super) fn summarize(doc: &str, source: &str, mergeable: bool) -> String {
    let mut a = Analyzer::new(AnalyzerOptions {
        kind: Kind::Trace,
        source: source.to_string(),
        mergeable,
        ..AnalyzerOptions::default()
    });
    a.write(doc.as_bytes()).unwrap();
    a.end().unwrap()
}

/// Merges `texts` in random groups, each merged on its own first, in a random order.
fn merge_grouped(mut texts: Vec<String>, rng: &mut Rng) -> String {
    for i in (1..texts.len()).rev() {
        texts.swap(i, rng.below(i as u64 + 1) as usize);
    }
    if texts.len() <= 1 {
        return merge_json(&texts).unwrap();
    }
    let groups = 1 + rng.below(texts.len() as u64) as usize;
    let mut parts: Vec<Vec<String>> = vec![Vec::new(); groups];
    for (k, t) in texts.into_iter().enumerate() {
        let g = if k < groups {
            k
        } else {
            rng.below(groups as u64) as usize
        };
        parts[g].push(t);
    }
    if groups == 1 {
        return merge_json(&parts[0]).unwrap();
    }
    let merged: Vec<String> = parts.into_iter().map(|p| merge_grouped(p, rng)).collect();
    merge_json(&merged).unwrap()
}

#[test]
fn merges_equal_the_pooled_oracle_in_any_grouping() {
    let mut rng = Rng::from_env(1717);
    for round in 0..6 {
        let ranks = 1 + rng.below(7) as usize;
        let mut texts = Vec::new();
        let mut plain = Vec::new();
        let mut pooled: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
        for r in 0..ranks {
            let events = 50 + rng.below(3000) as usize;
            let (doc, durs) = rank_doc(&mut rng, events);
            let source = format!("rank-{r}.json");
            let text = summarize(&doc, &source, true);
            // The section is one more key: the rest is the default output.
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v.as_object_mut().unwrap().remove("mergeable");
            let default = summarize(&doc, &source, false);
            assert!(text.starts_with(default.trim_end_matches("\n}")));
            let default: serde_json::Value = serde_json::from_str(&default).unwrap();
            assert!(
                v == default,
                "round {round} rank {r}: more than one more key"
            );
            plain.push(default);
            for (c, n, d) in durs {
                pooled.entry((c, n)).or_default().push(d);
            }
            texts.push(text);
        }
        let flat = merge_json(&texts).unwrap();
        for _ in 0..5 {
            assert_eq!(
                merge_grouped(texts.clone(), &mut rng),
                flat,
                "round {round}"
            );
        }
        // A merge's output merges to itself.
        assert_eq!(merge_json(&[&flat]).unwrap(), flat);
        // An array of summaries (as `trace --json` prints several files) is folded first.
        let array = format!("[{}]", texts.join(","));
        assert_eq!(merge_json(&[&array]).unwrap(), flat);
        // The Value API gives the same.
        let values: Vec<serde_json::Value> = texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        assert_eq!(
            merge_values(&values).unwrap(),
            serde_json::from_str::<serde_json::Value>(&flat).unwrap()
        );

        let m: serde_json::Value = serde_json::from_str(&flat).unwrap();
        let bound = m["quantile_relative_error"].as_f64().unwrap();
        assert_eq!(bound, relative_error(SCALE));
        assert_eq!(m["ranks"]["n"], ranks);
        // Every op: exact n, sum, min, max; percentiles within the bound.
        let all = merge_json_with(&texts, &MergeOptions { top: usize::MAX }).unwrap();
        let all: serde_json::Value = serde_json::from_str(&all).unwrap();
        let rows = all["largest_ops_by_duration_sum"].as_array().unwrap();
        assert_eq!(rows.len(), pooled.len());
        for row in rows {
            let key = (
                row["category"].as_str().unwrap().to_string(),
                row["name"].as_str().unwrap().to_string(),
            );
            let mut durs = pooled[&key].clone();
            durs.sort_unstable();
            let us: Vec<f64> = durs.iter().map(|&d| d as f64 / 1000.0).collect();
            let st = &row["duration_us"];
            let sum_ns: u128 = durs.iter().map(|&d| u128::from(d)).sum();
            assert_eq!(st["n"], durs.len());
            assert_eq!(
                row["duration_sum_us"].as_f64().unwrap(),
                sum_ns as f64 / 1000.0
            );
            assert_eq!(st["min"].as_f64().unwrap(), us[0]);
            assert_eq!(st["max"].as_f64().unwrap(), us[us.len() - 1]);
            let mean = st["mean"].as_f64().unwrap();
            assert_eq!(mean, sum_ns as f64 / (durs.len() as f64 * 1000.0));
            for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)] {
                let exact = percentile_linear(&us, q).unwrap();
                let got = st[key].as_f64().unwrap();
                assert!(
                    (got - exact).abs() <= bound * exact * (1.0 + 1e-9),
                    "{key:?} {key}: {got} vs {exact}"
                );
            }
        }
        // Categories summed; busy unions per rank, as each rank's own summary.
        let sources = m["ranks"]["sources"].as_array().unwrap();
        for (name, c) in m["categories"].as_object().unwrap() {
            let (mut events, mut sum_us_ns) = (0u64, 0u128);
            for (k, src) in sources.iter().enumerate() {
                let p = plain.iter().find(|p| &p["source"] == src).unwrap();
                let own = &p["categories"][name];
                let busy = own["busy_union_us"].as_f64().unwrap_or(0.0);
                assert_eq!(c["busy_union_us_by_rank"][k].as_f64().unwrap(), busy);
                events += own["events"].as_u64().unwrap_or(0);
            }
            for ((cat, _), d) in &pooled {
                if cat == name {
                    sum_us_ns += d.iter().map(|&x| u128::from(x)).sum::<u128>();
                }
            }
            assert_eq!(c["events"].as_u64().unwrap(), events);
            assert_eq!(c["duration_sum_ns"].as_u64().unwrap() as u128, sum_us_ns);
        }
    }
}

#[test]
fn bad_summaries_are_named_errors() {
    let mut rng = Rng::from_env(5);
    let (doc, _) = rank_doc(&mut rng, 200);
    let good = summarize(&doc, "a.json", true);
    let plain = summarize(&doc, "a.json", false);
    let e = merge_json(&[good.as_str(), plain.as_str()]).unwrap_err();
    assert_eq!(e.index, Some(1));
    assert_eq!(e.path, "mergeable");
    assert!(e.to_string().contains("--mergeable"), "{e}");
    assert_eq!(
        merge_json::<&str>(&[]).unwrap_err().to_string(),
        "no summaries to merge"
    );
    let failed = format!("[{good}, {{\"source\": \"b.json\", \"error\": \"cannot open\"}}]");
    let e = merge_json(&[good.as_str(), failed.as_str()]).unwrap_err();
    assert_eq!(
        (e.index, e.path.as_str()),
        (Some(1), "[1].mergeable"),
        "{e}"
    );
    assert!(e.message.contains("its trace failed: cannot open"), "{e}");
    let e = merge_json(&[" []"]).unwrap_err();
    assert_eq!(e.to_string(), "summary 0: an empty array of summaries");
    let e = merge_json(&[good.as_str(), "{\"mergeable\": 3"]).unwrap_err();
    assert_eq!((e.index, e.path.as_str()), (Some(1), "mergeable"), "{e}");
    let e = merge_json(&[good.as_str(), "{\"mergeable\": {"]).unwrap_err();
    assert_eq!(e.index, Some(1), "{e}");
    assert!(e.message.contains("EOF"), "{e}");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["mergeable"]["ops"][2]["n"] = serde_json::json!("x");
    let e = merge_values(&[v]).unwrap_err();
    assert_eq!(e.path, "mergeable.ops[2].n", "{e}");
    assert_eq!(e.index, Some(0));
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["mergeable"]["ops"][0]["n"] = serde_json::json!(12345);
    let e = merge_values(&[v]).unwrap_err();
    assert_eq!(e.path, "mergeable.ops[0].histogram", "{e}");
    assert!(e.message.contains("n is 12345"), "{e}");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["mergeable"]["version"] = serde_json::json!(2);
    let e = merge_values(&[v]).unwrap_err();
    assert_eq!(e.path, "mergeable.version", "{e}");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["mergeable"]["ops"][0]["histogram"]["buckets"][0][0] = serde_json::json!(1 << 20);
    let e = merge_values(&[v]).unwrap_err();
    assert_eq!(e.path, "mergeable.ops[0].histogram.buckets[0]", "{e}");
    // Overflowing sums are errors naming the summary that overflowed (the consistency checks
    // would reject a parsed summary with one count edited first: states made in code).
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["mergeable"]["categories"][0]["events"] = serde_json::json!(u64::MAX);
    let e = merge_values(&[v.clone()]).unwrap_err();
    assert_eq!(e.path, "mergeable.categories", "{e}");
    let edited: MergeState = serde_json::from_value(v["mergeable"].take()).unwrap();
    let w: serde_json::Value = serde_json::from_str(&good).unwrap();
    let w: MergeState = serde_json::from_value(w["mergeable"].clone()).unwrap();
    let e = merge_states(vec![w, edited]).unwrap_err();
    assert_eq!(e.index, Some(1), "{e}");
    assert!(e.message.contains("overflow"), "{e}");
}

/// A section that disagrees with itself is an error naming the key: an op or a category listed
/// twice (which would count its durations twice), a sum outside `n` times the op's range, and
/// counts or sums that differ between the ranks, the categories and the ops.
#[test]
fn inconsistent_summaries_are_named_errors() {
    let mut rng = Rng::from_env(15);
    let (doc, _) = rank_doc(&mut rng, 300);
    let good: serde_json::Value = serde_json::from_str(&summarize(&doc, "a.json", true)).unwrap();
    let err = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        edit(&mut v["mergeable"]);
        let text = serde_json::to_string(&v).unwrap();
        let e = merge_json(&[text.as_str()]).unwrap_err();
        assert_eq!(merge_values(&[v]).unwrap_err(), e);
        e
    };
    // An op listed twice: its duplicate's position and the first's.
    let e = err(&|m| {
        let op = m["ops"][1].clone();
        m["ops"].as_array_mut().unwrap().push(op);
    });
    let last = good["mergeable"]["ops"].as_array().unwrap().len();
    assert_eq!(e.path, format!("mergeable.ops[{last}]"), "{e}");
    assert!(
        e.message
            .contains("listed twice (also at mergeable.ops[1])"),
        "{e}"
    );
    let e = err(&|m| {
        let c = m["categories"][0].clone();
        m["categories"].as_array_mut().unwrap().insert(1, c);
    });
    assert_eq!(e.path, "mergeable.categories[1]", "{e}");
    assert!(e.message.contains("listed twice"), "{e}");
    let e = err(&|m| m["ops"][0]["duration_sum_ns"] = serde_json::json!(u64::MAX));
    assert_eq!(e.path, "mergeable.ops[0].duration_sum_ns", "{e}");
    let e = err(&|m| {
        let n = m["categories"][0]["events"].as_u64().unwrap();
        m["categories"][0]["events"] = serde_json::json!(n + 1);
    });
    assert_eq!(e.path, "mergeable.categories", "{e}");
    assert!(e.message.contains("but the ops' n to"), "{e}");
    let e = err(&|m| {
        let n = m["ranks"][0]["duration_events"].as_u64().unwrap();
        m["ranks"][0]["duration_events"] = serde_json::json!(n + 1);
    });
    assert!(e.message.contains("ranks' duration_events"), "{e}");
    let e = err(&|m| {
        let n = m["ranks"][0]["duration_sum_ns"].as_u64().unwrap();
        m["ranks"][0]["duration_sum_ns"] = serde_json::json!(n + 7);
    });
    assert!(e.message.contains("ranks' duration_sum_ns"), "{e}");
    // One op moved to another category: totals agree, the categories do not.
    let e = err(&|m| {
        let cats: Vec<String> = m["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        let from = m["ops"][0]["category"].as_str().unwrap().to_string();
        let to = cats.iter().find(|c| **c != from).unwrap().clone();
        let name = m["ops"][0]["name"].as_str().unwrap().to_string();
        m["ops"][0]["category"] = serde_json::json!(to);
        m["ops"][0]["name"] = serde_json::json!(format!("{name}~moved"));
    });
    assert!(
        e.path.starts_with("mergeable.categories[") && e.path.ends_with("].events"),
        "{e}"
    );
    // Reordered ops and categories (unique) are still accepted, as before.
    let mut v = good.clone();
    v["mergeable"]["ops"].as_array_mut().unwrap().reverse();
    v["mergeable"]["categories"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert_eq!(
        merge_values(&[v]).unwrap(),
        merge_values(core::slice::from_ref(&good)).unwrap()
    );
}

/// The same rank merged twice is kept (its counts added twice, as asked) with a warning naming
/// it, in the JSON and after a further merge (the warning is a function of the folded state).
#[test]
fn a_rank_merged_twice_is_named_in_the_warnings() {
    let mut rng = Rng::from_env(16);
    let (doc, _) = rank_doc(&mut rng, 100);
    let a = summarize(&doc, "r0.json", true);
    let b = summarize(&rank_doc(&mut rng, 100).0, "r1.json", true);
    let once: serde_json::Value = serde_json::from_str(&merge_json(&[&a, &b]).unwrap()).unwrap();
    assert!(once["warnings"].as_array().unwrap().is_empty(), "{once}");
    let twice_text = merge_json(&[&a, &b, &a]).unwrap();
    let twice: serde_json::Value = serde_json::from_str(&twice_text).unwrap();
    let warnings = twice["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0].as_str().unwrap();
    assert!(
        w.starts_with("r0.json: the same rank summary is merged 2 times"),
        "{w}"
    );
    assert_eq!(twice["ranks"]["n"], 3);
    // A merge's output merged again with one of its inputs: the same warning.
    let m = merge_json(&[&a, &b]).unwrap();
    assert_eq!(merge_json(&[&m, &a]).unwrap(), twice_text);
    // A rank with the same source but other counts is another rank: no warning.
    let other = summarize(&rank_doc(&mut rng, 50).0, "r0.json", true);
    let v: serde_json::Value = serde_json::from_str(&merge_json(&[&a, &other]).unwrap()).unwrap();
    assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn mutated_summaries_never_panic() {
    let mut rng = Rng::from_env(99);
    let (doc, _) = rank_doc(&mut rng, 60);
    let good = summarize(&doc, "a.json", true).into_bytes();
    for _ in 0..3000 {
        let mut bad = good.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] = b"0123456789-{}[],:\"ae"[rng.below(20) as usize];
        }
        let _ = merge_json(&[good.as_slice(), bad.as_slice()]);
    }
}

/// The parse with the key path tracked throughout (the oracle of the fast parse, which tracks
/// it only in a second parse of a text that failed).
fn parse_state_tracked(index: usize, json: &[u8]) -> Result<MergeState, MergeError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let mut folder = Folder::new();
    let mut refused = None;
    let seed = FoldInput {
        index,
        folder: Some(&mut folder),
        refused: &mut refused,
    };
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(&mut de, &mut track);
    if let Err(e) = serde::de::DeserializeSeed::deserialize(seed, tracked) {
        return Err(match refused {
            Some(r) => r,
            None => parse_error(index, serde_path_to_error::Error::new(track.path(), e)),
        });
    }
    de.end().map_err(|e| MergeError {
        index: Some(index),
        path: String::new(),
        message: e.to_string(),
    })?;
    Ok(folder.finish())
}

#[test]
fn fast_parse_agrees_with_the_tracked_parse() {
    let mut rng = Rng::from_env(41);
    let (doc, _) = rank_doc(&mut rng, 60);
    let good = summarize(&doc, "a.json", true);
    let array = format!("[{good}, {good}]");
    let mut failed = 0;
    for base in [good.as_bytes(), array.as_bytes()] {
        assert_eq!(parse_state(3, base), parse_state_tracked(3, base));
        assert!(parse_state(3, base).is_ok());
        for _ in 0..3000 {
            let mut bad = base.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bad.len() as u64) as usize;
                bad[at] = b"0123456789-{}[],:\"ae "[rng.below(21) as usize];
            }
            if rng.below(8) == 0 {
                bad.extend_from_slice(b" x");
            }
            let got = parse_state(3, &bad);
            failed += usize::from(got.is_err());
            assert_eq!(
                got,
                parse_state_tracked(3, &bad),
                "{}",
                String::from_utf8_lossy(&bad)
            );
        }
    }
    // Most mutations break the parse: the error path is what is compared.
    assert!(failed > 3000, "{failed}");
}

#[test]
fn scales_merge_at_the_smaller() {
    let mut rng = Rng::from_env(3);
    let (doc, durs) = rank_doc(&mut rng, 500);
    let text = summarize(&doc, "a.json", true);
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let state: MergeState = serde_json::from_value(v["mergeable"].take()).unwrap();
    let mut coarse = state.clone();
    coarse.scale = 5;
    for op in &mut coarse.ops {
        op.histogram = op.histogram.as_ref().map(|h| h.downscaled(3));
    }
    let merged = merge_states(vec![state.clone(), coarse.clone()]).unwrap();
    assert_eq!(merged.scale, 5);
    // The fold keeps the smallest scale seen so far: a finer state after a coarser one, or a
    // coarser one after a finer one, gives the same state.
    assert_eq!(
        merge_states(vec![coarse.clone(), state.clone()]).unwrap(),
        merged
    );
    let again = merge_states(vec![coarse.clone(), coarse]).unwrap();
    assert_eq!(merged, again);
    let view = render(merged, usize::MAX);
    assert_eq!(view.quantile_relative_error, relative_error(5));
    assert_eq!(
        view.largest_ops_by_duration_sum
            .iter()
            .map(|o| o.duration_us.n)
            .sum::<u64>(),
        2 * durs.len() as u64
    );
}

#[test]
fn ops_out_of_order_fold_as_in_order() {
    let mut rng = Rng::from_env(8);
    let (doc, _) = rank_doc(&mut rng, 400);
    let text = summarize(&doc, "a.json", true);
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let state: MergeState = serde_json::from_value(v["mergeable"].take()).unwrap();
    assert!(state.ops.len() > 3);
    let mut reversed = state.clone();
    reversed.ops.reverse();
    // One op split in two entries of the same key.
    let mut split = state.clone();
    let mut half = split.ops[1].clone();
    half.n = 1;
    half.duration_sum_ns = u128::from(half.min_ns);
    half.max_ns = half.min_ns;
    half.histogram = None;
    split.ops.push(half);
    let want = merge_states(vec![state.clone(), state.clone()]).unwrap();
    assert_eq!(reversed.clone().canonical().unwrap(), state);
    assert_eq!(
        merge_states(vec![state.clone(), reversed.clone()]).unwrap(),
        want
    );
    assert_eq!(
        merge_states(vec![reversed.clone(), state.clone()]).unwrap(),
        want
    );
    // Parsed, a section listing an op twice is rejected; folded in code, it adds up.
    let dup = split.check().unwrap_err();
    assert_eq!(dup.path, format!("mergeable.ops[{}]", split.ops.len() - 1));
    let with_split = merge_states(vec![state.clone(), split.clone()]).unwrap();
    let op = &with_split.ops[1];
    assert_eq!(op.n, 2 * state.ops[1].n + 1);
    assert_eq!(op.histogram, None);
    assert_eq!(with_split.ops.len(), state.ops.len());
    assert_eq!(merge_states(vec![split, state]).unwrap(), with_split);
}

/// The summary writes its section's ops from the result in place (no sorted copy): the same
/// bytes as the canonical state's JSON, whatever the ops.
#[test]
fn the_section_written_in_place_equals_the_canonical_state() {
    let mut rng = Rng::from_env(17);
    for _ in 0..20 {
        let events = 1 + rng.below(300) as usize;
        let (doc, _) = rank_doc(&mut rng, events);
        let mut a = Analyzer::new(AnalyzerOptions {
            kind: Kind::Trace,
            source: "r.json".to_string(),
            mergeable: true,
            ..AnalyzerOptions::default()
        });
        a.write(doc.as_bytes()).unwrap();
        let crate::analyzer::Analysis::Trace(r) = a.finish().unwrap() else {
            panic!("not a trace")
        };
        let pretty = serde_json::to_string_pretty(&*r).unwrap();
        let section = serde_json::to_string(&r.mergeable_state().unwrap()).unwrap();
        let body = pretty.strip_suffix("\n}").unwrap();
        // The oracle: the pretty summary with the compact section added as its last key.
        let want = format!("{body},\n  \"mergeable\": {section}\n}}");
        assert_eq!(r.to_json(), want);
        let composed = WithSection {
            body: &*r,
            mergeable: OneLine::of(&r.mergeable_state().unwrap()).unwrap(),
        };
        assert_eq!(serde_json::to_string_pretty(&composed).unwrap(), want);
    }
}
