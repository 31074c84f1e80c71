use super::*;
use core::cmp::Ordering;

/// The selection-based stats equal those of a full sort through the general f64 path, for
/// sizes around every percentile's rank boundaries, with many ties, and for 8-byte values.
#[test]
#[cfg(feature = "alloc")]
fn stats_of_durations_equal_the_sorted_oracle() {
    let mut rng = crate::testutil::Rng(21);
    let mut sizes: Vec<usize> = (1..=250).collect();
    sizes.extend([999, 1000, 1001, 4096, 10_007]);
    for n in sizes {
        for spread in [3u64, 1000, 1 << 31] {
            let v32: Vec<u32> = (0..n).map(|_| rng.below(spread) as u32).collect();
            let mut oracle: Vec<f64> = v32.iter().map(|&x| f64::from(x) / 1000.0).collect();
            let want = stats_f64_in_place(&mut oracle);
            let mut got = v32.clone();
            assert_eq!(stats_ns_in_place(&mut got), want, "n {n}, spread {spread}");
            let mut sorted = v32.clone();
            sorted.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, sorted, "a permutation of the input");
            let v64: Vec<u64> = v32.iter().map(|&x| u64::from(x) << 20).collect();
            let mut oracle: Vec<f64> = v64.iter().map(|&x| x as f64 / 1000.0).collect();
            let want = stats_f64_in_place(&mut oracle);
            assert_eq!(stats_ns_in_place(&mut v64.clone()), want, "n {n} (u64)");
        }
    }
    assert_eq!(stats_ns_in_place::<u32>(&mut []), Stats::EMPTY);
}

/// Significands summed per exponent and added once equal the values added one by one,
/// for every offset class: subnormals (offset 0), word boundaries (offsets that are
/// multiples of 64, where the shift is 0), the top of the range, and sums that carry
/// across words.
#[test]
fn add_significands_equals_adding_each_value() {
    let mut rng = crate::testutil::Rng(61);
    let offsets = [
        0usize, 1, 52, 63, 64, 65, 127, 128, 500, 1000, 1023, 1088, 2000, 2045,
    ];
    for round in 0..200 {
        let mut each = Fsum::new();
        let mut grouped = Fsum::new();
        // Some values first, so the words hold carries to propagate into.
        for _ in 0..rng.below(5) {
            let x = f64::from_bits(rng.next_u64() >> 2);
            each.add(x);
            grouped.add(x);
        }
        for &offset in &offsets {
            let n = 1 + rng.below(if round % 2 == 0 { 5 } else { 3000 });
            let mut sum: u128 = 0;
            for _ in 0..n {
                let frac = if round % 3 == 0 {
                    (1u64 << 52) - 1
                } else {
                    rng.next_u64() & ((1u64 << 52) - 1)
                };
                let (significand, bits) = if offset == 0 {
                    (frac, frac)
                } else {
                    (frac | 1 << 52, ((offset as u64 + 1) << 52) | frac)
                };
                each.add(f64::from_bits(bits));
                sum += u128::from(significand);
            }
            grouped.add_significands(sum, offset);
        }
        assert_eq!(grouped, each, "round {round}");
        assert_eq!(grouped.value().to_bits(), each.value().to_bits());
    }
}
use crate::testutil::Rng;
use std::vec::Vec;

/// Naive oracle for fsum over a narrow range: values that are integer multiples of 2^-30
/// below 2^82 sum exactly in i128, then round once through `i128 as f64` (nearest-even).
fn narrow_exact_sum(values: &[f64]) -> f64 {
    let mut total: i128 = 0;
    for &v in values {
        let units = v * (1u64 << 30) as f64;
        assert_eq!(units, units.trunc());
        total += units as i128;
    }
    (total as f64) / (1u64 << 30) as f64
}

#[test]
fn fsum_matches_exact_integer_oracle() {
    let mut rng = Rng::from_env(7);
    for _ in 0..2000 {
        let n = rng.below(50) as usize;
        let vals: Vec<f64> = (0..n)
            .map(|_| {
                let mag = rng.below(60) as i32;
                let m = (rng.next_u64() >> (64 - 23)) as i64 - (1 << 22);
                // m * 2^(mag - 30): an integer multiple of 2^-30.
                (m as f64) * 2f64.powi(mag - 30)
            })
            .collect();
        assert_eq!(
            fsum(&vals).to_bits(),
            narrow_exact_sum(&vals).to_bits(),
            "{vals:?}"
        );
    }
}

#[test]
fn fsum_known_values() {
    assert_eq!(fsum(&[]), 0.0);
    assert_eq!(fsum(&[0.1; 10]), 1.0);
    assert_eq!(fsum(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
    assert_eq!(fsum(&[1.0, 1e-16, 1e-16]), 1.0000000000000002);
    assert_eq!(fsum(&[f64::MAX, f64::MAX]), f64::INFINITY);
    assert_eq!(fsum(&[f64::MAX, f64::MAX, -f64::MAX]), f64::MAX);
    assert_eq!(fsum(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
    assert_eq!(fsum(&[5e-324, 5e-324]), 1e-323);
    assert_eq!(fsum(&[-5e-324]), -5e-324);
    assert!(fsum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
    assert_eq!(fsum(&[f64::INFINITY, 1.0]), f64::INFINITY);
    // Ties to even: 2^53 + 1 is halfway between 2^53 and 2^53 + 2.
    let two53 = 9007199254740992.0;
    assert_eq!(fsum(&[two53, 1.0]), two53);
    assert_eq!(fsum(&[two53, 1.0, 1e-300]), two53 + 2.0);
    assert_eq!(fsum(&[two53 + 2.0, 1.0]), two53 + 4.0);
}

#[test]
fn fsum_merge_equals_sequential() {
    let mut rng = Rng::from_env(11);
    for _ in 0..200 {
        let vals: Vec<f64> = (0..40)
            .map(|_| (rng.unit_f64() - 0.5) * 2f64.powi(rng.below(200) as i32 - 100))
            .collect();
        let (a, b) = vals.split_at(rng.below(40) as usize);
        let mut x = Fsum::new();
        a.iter().for_each(|&v| x.add(v));
        let mut y = Fsum::new();
        b.iter().for_each(|&v| y.add(v));
        x.merge(&y);
        assert_eq!(x.value().to_bits(), fsum(&vals).to_bits());
    }
}

#[test]
fn int_float_order_is_exact() {
    let big = 1i64 << 53;
    assert_eq!(
        Num::Int(big + 1).cmp_exact(Num::Float(big as f64)),
        Ordering::Greater
    );
    assert_eq!(
        Num::Int(big).cmp_exact(Num::Float(big as f64)),
        Ordering::Equal
    );
    assert_eq!(Num::Int(-3).cmp_exact(Num::Float(-2.5)), Ordering::Less);
    assert_eq!(Num::Int(2).cmp_exact(Num::Float(2.5)), Ordering::Less);
    assert_eq!(
        Num::Int(i64::MAX).cmp_exact(Num::Float(9.3e18)),
        Ordering::Less
    );
    assert_eq!(
        Num::Int(i64::MIN).cmp_exact(Num::Float(-9.3e18)),
        Ordering::Greater
    );
    assert_eq!(Num::Float(0.5).cmp_exact(Num::Int(0)), Ordering::Greater);
}

#[test]
fn empty_and_non_finite() {
    let s = stats_f64(&[f64::NAN, f64::INFINITY]);
    assert_eq!(s, Stats::EMPTY);
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"n":0,"mean":null,"min":null,"p50":null,"p90":null,"p95":null,"p99":null,"max":null}"#
    );
    let s = stats(&[Num::Int(5), Num::Float(f64::NAN)]);
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"n":1,"mean":5.0,"min":5,"p50":5.0,"p90":5.0,"p95":5.0,"p99":5.0,"max":5}"#
    );
}

#[test]
fn conversions() {
    assert_eq!(Num::from(7u64), Num::Int(7));
    assert_eq!(
        Num::from(u64::MAX),
        Num::Float(18446744073709551615u64 as f64)
    );
    assert_eq!(Num::from(-3i32), Num::Int(-3));
    assert_ne!(Num::Int(5), Num::Float(5.0));
    assert_eq!(serde_json::to_string(&Num::Float(5.0)).unwrap(), "5.0");
    assert_eq!(serde_json::to_string(&Num::Int(5)).unwrap(), "5");
}

#[test]
fn min_max_keep_first_and_last_of_equals() {
    let s = stats(&[Num::Float(5.0), Num::Int(5), Num::Int(1), Num::Float(1.0)]);
    assert_eq!(s.min, Some(Num::Int(1)));
    assert_eq!(s.max, Some(Num::Int(5)));
    let s = stats(&[Num::Int(5), Num::Float(5.0)]);
    assert_eq!(s.min, Some(Num::Int(5)));
    assert_eq!(s.max, Some(Num::Float(5.0)));
}

/// Naive oracle: the reference's algorithm written out directly (stable sort, index).
fn naive(values: &[Num]) -> Stats {
    let mut kept: Vec<Num> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if kept.is_empty() {
        return Stats::EMPTY;
    }
    kept.sort_by(|a, b| a.cmp_exact(*b)); // stable, as Python's sorted
    let n = kept.len();
    let q = |q: f64| {
        let h = (n - 1) as f64 * q;
        let lo = h.floor();
        if h >= (n - 1) as f64 {
            return kept[n - 1].to_f64();
        }
        let a = kept[lo as usize].to_f64();
        let b = kept[lo as usize + 1].to_f64();
        let t = h - lo;
        let d = b - a;
        if t >= 0.5 {
            b - d * (1.0 - t)
        } else {
            a + d * t
        }
    };
    let floats: Vec<f64> = kept.iter().map(|v| v.to_f64()).collect();
    Stats {
        n: n as u64,
        mean: Some(fsum(&floats) / n as f64),
        min: Some(kept[0]),
        p50: Some(q(0.5)),
        p90: Some(q(0.9)),
        p95: Some(q(0.95)),
        p99: Some(q(0.99)),
        max: Some(kept[n - 1]),
    }
}

#[test]
fn matches_naive_oracle_on_random_mixed_input() {
    let mut rng = Rng::from_env(3);
    for _ in 0..3000 {
        let n = rng.below(40) as usize;
        let vals: Vec<Num> = (0..n)
            .map(|_| match rng.below(6) {
                0 => Num::Int(rng.below(7) as i64 - 3),
                1 => Num::Float(rng.below(7) as f64 - 3.0),
                2 => Num::Float(f64::NAN),
                3 => Num::Float((rng.unit_f64() - 0.3) * 1e6),
                4 => Num::Int(rng.next_u64() as i64),
                _ => Num::Float(rng.unit_f64()),
            })
            .collect();
        let want = naive(&vals);
        let got = stats(&vals);
        assert_eq!(got, want, "{vals:?}");
        let mut ex = ExactStats::new();
        vals.iter().for_each(|&v| {
            ex.push(v);
        });
        assert_eq!(ex.stats(), want);
        let floats: Vec<f64> = vals.iter().map(|v| v.to_f64()).collect();
        let want_f = naive(&floats.iter().map(|&f| Num::Float(f)).collect::<Vec<_>>());
        assert_eq!(stats_f64(&floats), want_f);
    }
}

/// Golden cases generated by the Python reference (`core/tests/data/gen_stats_golden.py`):
/// every output must be bit-identical, ints staying ints.
#[test]
fn bit_identical_to_the_python_reference() {
    use serde_json::Value;
    let golden = include_str!("../../tests/data/stats_golden.jsonl");
    let mut cases = 0;
    for line in golden.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let values: Vec<Num> = case["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| match v {
                Value::Number(n) => Some(match n.as_i64() {
                    Some(i) => Num::Int(i),
                    None => Num::Float(n.as_f64().unwrap()),
                }),
                Value::String(s) if s == "nan" => Some(Num::Float(f64::NAN)),
                Value::String(s) if s == "inf" => Some(Num::Float(f64::INFINITY)),
                Value::String(s) if s == "-inf" => Some(Num::Float(f64::NEG_INFINITY)),
                _ => None, // bool, null, text: not numbers, as the reference drops them
            })
            .collect();
        let got = serde_json::to_value(stats(&values)).unwrap();
        assert_eq!(got, case["stats"], "{line}");
        cases += 1;
    }
    assert_eq!(cases, 400);
}
