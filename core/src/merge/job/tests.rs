//! The merge job driven as a driver drives it: each input in chunks on random splits (whole, byte
//! by byte, random), whole through `document`, and through a deserializer, against the merge of
//! the texts by `Merger` alone; and its errors, each naming the input.
use std::format;
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::super::tests::{rank_doc, summarize};
use super::*;
use crate::merge::{merge_json, to_json};
use crate::testutil::{Rng, for_each_split};

/// The merge of `texts` by `Merger` alone, and its JSON (the oracle).
fn oracle(texts: &[String], top: usize) -> Result<String, MergeError> {
    let mut merger = Merger::new();
    for (i, t) in texts.iter().enumerate() {
        merger.add_json(i, t.as_bytes())?;
    }
    Ok(to_json(&render(merger.finish()?, top)))
}

/// `names` merged by the job, input `k` written in `chunks`, the others in one chunk each.
fn drive(
    names: &[&str],
    texts: &[String],
    k: usize,
    chunks: &[&[u8]],
) -> Result<MergedSummary, MergeJobError> {
    let mut job = MergeJob::new(names.iter().map(|n| n.to_string()).collect(), 40)?;
    let mut seen = Vec::new();
    while let Need::File(name) = job.need() {
        let i = job.file_index();
        seen.push(name.to_string());
        if i == k {
            for c in chunks {
                job.write(c)?;
            }
        } else {
            job.write(texts[i].as_bytes())?;
        }
        job.end()?;
    }
    assert_eq!(seen, names, "every input asked for once, in order");
    job.finish()
}

fn ranks(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng::from_env(seed);
    (0..n)
        .map(|r| {
            let events = 50 + rng.below(400) as usize;
            let (doc, _) = rank_doc(&mut rng, events);
            summarize(&doc, &format!("rank-{r}.json"), true)
        })
        .collect()
}

#[test]
fn chunked_inputs_merge_as_the_texts_do() {
    let mut texts = ranks(2201, 3);
    // An array of summaries, as `trace --json --mergeable` prints several files.
    texts.push(format!("[{}, {}]", texts[0], texts[2]));
    let names = ["r0.json", "r1.json", "r2.json", "both.json"];
    let want = oracle(&texts, 40).unwrap();
    assert_eq!(merge_json(&texts).unwrap(), want);
    for k in 0..texts.len() {
        for_each_split(texts[k].as_bytes(), 6, 2202 + k as u64, |chunks| {
            let got = drive(&names, &texts, k, chunks).unwrap();
            assert_eq!(to_json(&got), want, "input {k}, {} chunks", chunks.len());
        });
    }
}

#[test]
fn a_bad_input_in_chunks_is_the_error_naming_it() {
    let texts = ranks(2203, 2);
    let mut v: serde_json::Value = serde_json::from_str(&texts[1]).unwrap();
    v["mergeable"]["ops"][1]["n"] = serde_json::json!("x");
    let typed = format!("[{}, {v}]", texts[0]);
    let mut plain: serde_json::Value = serde_json::from_str(&texts[1]).unwrap();
    plain.as_object_mut().unwrap().remove("mergeable");
    let cases = [
        (typed, "bad.json: [1].mergeable.ops[1].n: invalid type"),
        (
            plain.to_string(),
            "bad.json: mergeable: no `mergeable` section",
        ),
        (
            String::from("{\"mergeable\": {\"version\": 1,"),
            "bad.json: ",
        ),
        (String::from(" []"), "bad.json: an empty array of summaries"),
    ];
    for (bad, want) in cases {
        let inputs = vec![texts[0].clone(), bad];
        let index_error = oracle(&inputs, 40).unwrap_err();
        assert_eq!(index_error.index, Some(1));
        for_each_split(inputs[1].as_bytes(), 4, 2204, |chunks| {
            let e = drive(&["good.json", "bad.json"], &inputs, 1, chunks).unwrap_err();
            assert!(e.to_string().starts_with(want), "{e} vs {want}");
            // The merge's own error, with the file's name in place of `summary 1`.
            let text = index_error.to_string();
            assert_eq!(e.to_string(), text.replacen("summary 1", "bad.json", 1));
            assert_eq!(e.clone().into_merge_error(), index_error);
        });
    }
    // No inputs at all.
    let job = MergeJob::new(Vec::new(), 40).unwrap();
    assert_eq!(job.need(), Need::Done);
    assert_eq!(
        job.finish().unwrap_err().to_string(),
        "no summaries to merge"
    );
}

#[test]
fn past_the_limit_the_input_is_named() {
    let texts = ranks(2205, 2);
    let mut job = MergeJob::new(vec!["a.json".into(), "big.json".into()], 40).unwrap();
    assert_eq!(job.max_document_bytes(), MAX_DOCUMENT_BYTES);
    job.set_max_document_bytes(texts[1].len());
    job.document(texts[0].as_bytes()).unwrap();
    // Exactly the limit fits; one byte more does not.
    let (head, tail) = texts[1].as_bytes().split_at(10);
    job.write(head).unwrap();
    job.write(tail).unwrap();
    let e = job.write(b" ").unwrap_err();
    let want = MergeJobError::TooLarge {
        file: "big.json".into(),
        max_bytes: texts[1].len(),
    };
    assert_eq!(e, want);
    assert!(e.to_string().starts_with("big.json: more than "), "{e}");
    // The job stays failed.
    assert_eq!(job.need(), Need::Done);
    assert_eq!(job.end().unwrap_err(), want);
    assert_eq!(job.finish().unwrap_err(), want);
    // A whole document is not held by the job: no limit.
    let mut job = MergeJob::new(vec!["big.json".into()], 40).unwrap();
    job.set_max_document_bytes(1);
    job.document(texts[1].as_bytes()).unwrap();
    assert_eq!(
        to_json(&job.finish().unwrap()),
        oracle(&texts[1..], 40).unwrap()
    );
}

#[test]
fn read_errors_name_the_input_and_stdin_once() {
    let texts = ranks(2206, 1);
    for (name, want) in [
        ("gone.json", "gone.json: no such file"),
        ("-", "stdin: no such file"),
    ] {
        let mut job = MergeJob::new(vec!["a.json".into(), name.into()], 40).unwrap();
        job.document(texts[0].as_bytes()).unwrap();
        assert_eq!(job.need(), Need::File(name));
        job.write(b"{\"merge").unwrap();
        job.read_error("no such file");
        assert_eq!(job.end().unwrap_err().to_string(), want);
        assert_eq!(job.need(), Need::Done);
        assert_eq!(job.finish().unwrap_err().to_string(), want);
    }
    let e = MergeJob::new(vec!["-".into(), "a.json".into(), "-".into()], 40).unwrap_err();
    assert_eq!(e, MergeJobError::StdinTwice);
    assert_eq!(e.to_string(), "`-` (stdin) can be given once");
}

#[test]
fn inputs_of_one_identity_are_repeated() {
    let names = ["a.json", "b.json", "link.json", "-", "c.json", "b2.json"];
    let mut job = MergeJob::new(names.iter().map(|n| n.to_string()).collect(), 40).unwrap();
    job.same_files([Some(7), Some(9), Some(7), None, None, Some(9)]);
    let warnings: Vec<String> = job.repeated().map(|r| r.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "link.json is the same file as a.json: its ranks are merged twice",
            "b2.json is the same file as b.json: its ranks are merged twice",
        ]
    );
}

#[test]
fn a_document_from_a_deserializer_merges_as_its_bytes() {
    let texts = ranks(2207, 2);
    let array = format!("[{}, {}]", texts[0], texts[1]);
    let want = oracle(core::slice::from_ref(&array), 40).unwrap();
    let mut job = MergeJob::new(vec!["arr.json".into()], 40).unwrap();
    let mut opens = 0;
    job.document_from(|| {
        opens += 1;
        Ok(serde_json::Deserializer::from_slice(array.as_bytes()))
    })
    .unwrap();
    assert_eq!(opens, 1, "a good document is parsed once");
    assert_eq!(to_json(&job.finish().unwrap()), want);

    // A key of the wrong type: located by a second parse, as the bytes' error is.
    let mut v: serde_json::Value = serde_json::from_str(&texts[1]).unwrap();
    v["mergeable"]["ops"][1]["n"] = serde_json::json!("x");
    let bad = format!("[{}, {v}]", texts[0]);
    let mut job = MergeJob::new(vec!["bad.json".into()], 40).unwrap();
    let mut opens = 0;
    let e = job
        .document_from(|| {
            opens += 1;
            Ok(serde_json::Deserializer::from_slice(bad.as_bytes()))
        })
        .unwrap_err();
    assert_eq!(opens, 2);
    let chunked = drive(
        &["bad.json"],
        core::slice::from_ref(&bad),
        0,
        &[bad.as_bytes()],
    )
    .unwrap_err();
    assert_eq!(e, chunked);
    assert!(
        e.to_string()
            .starts_with("bad.json: [1].mergeable.ops[1].n: invalid type"),
        "{e}"
    );
    // Text after the document.
    let trailing = format!("{} x", texts[0]);
    let mut job = MergeJob::new(vec!["t.json".into()], 40).unwrap();
    let e = job
        .document_from(|| Ok(serde_json::Deserializer::from_slice(trailing.as_bytes())))
        .unwrap_err();
    let chunked = drive(
        &["t.json"],
        core::slice::from_ref(&trailing),
        0,
        &[trailing.as_bytes()],
    )
    .unwrap_err();
    assert_eq!(e, chunked);
    // An input that cannot be opened.
    let mut job = MergeJob::new(vec!["gone.json".into()], 40).unwrap();
    let e = job
        .document_from(|| {
            Err::<serde_json::Deserializer<serde_json::de::SliceRead<'_>>, _>(
                "no such file".to_string(),
            )
        })
        .unwrap_err();
    assert_eq!(e.to_string(), "gone.json: no such file");
}

#[test]
fn calls_out_of_turn_are_refused() {
    let texts = ranks(2208, 1);
    let mut job = MergeJob::new(vec!["a.json".into()], 40).unwrap();
    assert!(matches!(job.seek(3), Err(MergeJobError::OutOfTurn(_))));
    let mut job = MergeJob::new(vec!["a.json".into()], 40).unwrap();
    let mut none = core::iter::empty();
    assert!(matches!(
        job.listing(&mut none),
        Err(MergeJobError::OutOfTurn(_))
    ));
    let mut job = MergeJob::new(vec!["a.json".into(), "b.json".into()], 40).unwrap();
    job.document(texts[0].as_bytes()).unwrap();
    job.write(b"{").unwrap();
    assert!(matches!(
        job.document(texts[0].as_bytes()),
        Err(MergeJobError::OutOfTurn(_))
    ));
    let mut job = MergeJob::new(vec!["a.json".into(), "b.json".into()], 40).unwrap();
    job.document(texts[0].as_bytes()).unwrap();
    assert!(matches!(job.finish(), Err(MergeJobError::OutOfTurn(_))));
    let mut job = MergeJob::new(vec!["a.json".into()], 40).unwrap();
    job.document(texts[0].as_bytes()).unwrap();
    assert_eq!(job.need(), Need::Done);
    assert!(matches!(job.write(b"{}"), Err(MergeJobError::OutOfTurn(_))));
}
