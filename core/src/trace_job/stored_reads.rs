//! The join's ranged second read of a gzip trace given as stored bytes (the page): each wanted
//! range of the decoded trace is read from the restart point before it ([`crate::gzip::restart`],
//! kept while the first read inflated the file), so the driver gives only the stored bytes from
//! that point to the point after the range, instead of the whole file again.
//!
//! The driver sees ranges of the stored file ([`StoredReads::ranges`]) and seeks to the start of
//! each before giving its bytes, as for a plain trace; the job inflates them and hands the
//! decoded bytes on with their decoded offsets.
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use crate::gzip::{GzDecoder, GzError, GzStatus, MinizInflate, RestartIndex};

/// Decoded bytes handed on per step.
const OUT_BYTES: usize = 64 * 1024;

/// The restart index's bounds: a point every 1 MiB of decoded trace at most, and at most 256
/// points (8 MiB of histories): past 256 MB of trace the spacing doubles, so a 1 GB trace has
/// one every 4 MiB.
pub(super) const SPACING_BYTES: u64 = 1 << 20;
/// See [`SPACING_BYTES`].
pub(super) const MAX_POINTS: usize = 256;

/// One read of stored bytes: `[start, end)` of the stored file, decoding from the restart point
/// `point` (or from the file's start) up to decoded offset `out_end`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    start: u64,
    end: u64,
    point: Option<usize>,
    out_start: u64,
    out_end: u64,
}

/// The stored reads of one second read, and the one under way.
pub(super) struct StoredReads {
    index: RestartIndex,
    reads: Vec<Read>,
    /// The reads' stored ranges.
    ranges: Vec<(u64, u64)>,
    /// The read the next bytes belong to (after its seek).
    next: usize,
    cur: Option<Cur>,
}

enum Cur {
    /// The read starts inside a byte: its unread bits are in the first byte to come.
    Partial { read: usize },
    Decoding {
        decoder: Box<GzDecoder>,
        out: Vec<u8>,
        /// The decoded offset of the next decoded byte.
        out_at: u64,
        out_end: u64,
    },
}

impl StoredReads {
    /// The reads for the decoded ranges `wanted` (sorted, disjoint) of a gzip file of
    /// `stored_bytes` bytes with restart points `index`. Ranges that share the stretch between
    /// two points are read together, so the reads go forward in both files.
    pub(super) fn new(
        index: RestartIndex,
        wanted: &[(u64, u64)],
        stored_bytes: u64,
    ) -> StoredReads {
        let points: Vec<_> = index.iter().map(|(p, _)| *p).collect();
        let mut reads: Vec<Read> = Vec::new();
        for &(a, b) in wanted {
            // The last point at or before `a`, and the first at or after `b`.
            let before = points.partition_point(|p| p.out_offset <= a).checked_sub(1);
            let after = points.partition_point(|p| p.out_offset < b);
            let (start, out_start) = match before {
                Some(i) => {
                    let p = &points[i];
                    (p.in_offset - u64::from(p.bits != 0), p.out_offset)
                }
                None => (0, 0),
            };
            let (end, out_end) = match points.get(after) {
                Some(q) => (q.in_offset, q.out_offset),
                None => (stored_bytes, u64::MAX),
            };
            match reads.last_mut() {
                Some(last) if out_start < last.out_end => {
                    last.end = last.end.max(end);
                    last.out_end = last.out_end.max(out_end);
                }
                _ => reads.push(Read {
                    start,
                    end,
                    point: before,
                    out_start,
                    out_end,
                }),
            }
        }
        let ranges = reads.iter().map(|r| (r.start, r.end)).collect();
        StoredReads {
            index,
            reads,
            ranges,
            next: 0,
            cur: None,
        }
    }

    /// The stored byte ranges to give, each after a seek to its start.
    pub(super) fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// The next bytes are the stored file's from `offset` on: the start of the next read. Its
    /// decoded offset is returned (where the decoded bytes handed on begin); `None` when no
    /// read starts there.
    pub(super) fn seek(&mut self, offset: u64) -> Option<u64> {
        let k = self.next;
        let read = self.reads.get(k)?;
        if read.start != offset {
            return None;
        }
        self.next += 1;
        let out_start = read.out_start;
        self.cur = match read.point {
            Some(i) if self.point_bits(i) != 0 => Some(Cur::Partial { read: k }),
            Some(_) => Some(self.resumed(k, 0)?),
            None => Some(Cur::Decoding {
                decoder: Box::new(GzDecoder::new()),
                out: vec![0; OUT_BYTES],
                out_at: 0,
                out_end: read.out_end,
            }),
        };
        Some(out_start)
    }

    /// Whether a read is under way (its bytes go through [`write`](Self::write)).
    pub(super) fn active(&self) -> bool {
        self.cur.is_some()
    }

    fn point_bits(&self, i: usize) -> u8 {
        self.index.iter().nth(i).map_or(0, |(p, _)| p.bits)
    }

    fn resumed(&self, read: usize, partial_byte: u8) -> Option<Cur> {
        let r = &self.reads[read];
        let (point, history) = self.index.iter().nth(r.point?)?;
        let decoder = GzDecoder::resume(MinizInflate::new(), point, partial_byte, history)?;
        Some(Cur::Decoding {
            decoder: Box::new(decoder),
            out: vec![0; OUT_BYTES],
            out_at: point.out_offset,
            out_end: r.out_end,
        })
    }

    /// The next stored bytes of the current read; the decoded bytes up to the read's end go to
    /// `out` (those past it belong to no wanted range).
    ///
    /// # Errors
    /// Corrupt gzip data (offsets in the stored file), or what `out` returns.
    pub(super) fn write<E: From<GzError>>(
        &mut self,
        mut chunk: &[u8],
        mut out: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(Cur::Partial { read }) = self.cur {
            let Some((&b, rest)) = chunk.split_first() else {
                return Ok(());
            };
            chunk = rest;
            // A point the inflater takes at its first use took it when it was made.
            self.cur = self.resumed(read, b);
            if self.cur.is_none() {
                return Err(GzError::CorruptDeflate {
                    offset: self.reads[read].start,
                }
                .into());
            }
        }
        let Some(Cur::Decoding {
            decoder,
            out: buf,
            out_at,
            out_end,
        }) = &mut self.cur
        else {
            return Ok(());
        };
        loop {
            if *out_at >= *out_end {
                return Ok(());
            }
            let (status, nin, nout) = decoder.decode(chunk, buf)?;
            let keep = (nout as u64).min(*out_end - *out_at) as usize;
            *out_at += nout as u64;
            out(&buf[..keep])?;
            chunk = &chunk[nin..];
            if status != GzStatus::OutputFull {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::for_each_split;
    use alloc::vec::Vec;

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    /// Text that compresses into many deflate blocks.
    fn text(n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        while out.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = alloc::format!(
                "{{\"name\": \"op{}\", \"ts\": {}}},\n",
                x % 977,
                x % 100_000
            );
            out.extend_from_slice(line.as_bytes());
        }
        out.truncate(n);
        out
    }

    fn index_of(gz: &[u8], spacing: u64) -> RestartIndex {
        let mut idx = RestartIndex::new(spacing, 64);
        let mut dec = GzDecoder::with_inflater(MinizInflate::new().stopping_at_blocks());
        let mut out = vec![0u8; 1 << 16];
        let mut input = gz;
        loop {
            let (status, nin, _) = dec.decode_with(input, &mut out, &mut idx).unwrap();
            input = &input[nin..];
            if status != GzStatus::OutputFull && input.is_empty() {
                break;
            }
        }
        idx
    }

    /// What the driver gives for each read, split as `chunks` splits the read's bytes; the
    /// decoded bytes handed on, with their decoded offsets.
    fn drive(gz: &[u8], spacing: u64, wanted: &[(u64, u64)], split: u64) -> Vec<(u64, Vec<u8>)> {
        let mut reads = StoredReads::new(index_of(gz, spacing), wanted, gz.len() as u64);
        let mut got = Vec::new();
        for (a, b) in reads.ranges().to_vec() {
            let at = reads.seek(a).expect("a read starts at each range");
            let mut bytes = Vec::new();
            let stored = &gz[a as usize..b as usize];
            let mut k = 0usize;
            let mut step = 1 + (split as usize % 7);
            while k < stored.len() {
                let e = (k + step).min(stored.len());
                reads
                    .write(&stored[k..e], |d: &[u8]| {
                        bytes.extend_from_slice(d);
                        Ok::<(), GzError>(())
                    })
                    .unwrap();
                k = e;
                step = step * 3 % 4093 + 1;
            }
            assert!(reads.active());
            got.push((at, bytes));
        }
        got
    }

    #[test]
    fn every_wanted_range_is_decoded_from_the_point_before_it() {
        let data = text(3 << 20);
        let gz = gzip(&data);
        let n = data.len() as u64;
        let cases: [&[(u64, u64)]; 5] = [
            &[(0, 10)],
            &[(n - 100, n)],
            &[(1 << 20, (1 << 20) + 5000), (2 << 20, (2 << 20) + 1)],
            &[(100, 200), (300, 400), (n / 2, n / 2 + 70_000)],
            &[(0, n)],
        ];
        for (c, wanted) in cases.iter().enumerate() {
            for spacing in [64 << 10, 300 << 10, 8 << 20] {
                let got = drive(&gz, spacing, wanted, c as u64 + spacing);
                // Each wanted range lies inside one read's decoded bytes, equal to the file's.
                for &(a, b) in wanted.iter() {
                    let (at, bytes) = got
                        .iter()
                        .find(|(at, bytes)| *at <= a && at + bytes.len() as u64 >= b)
                        .unwrap_or_else(|| panic!("range {a}..{b} not covered, spacing {spacing}"));
                    let from = (a - at) as usize;
                    assert_eq!(
                        &bytes[from..from + (b - a) as usize],
                        &data[a as usize..b as usize]
                    );
                }
                for (at, bytes) in &got {
                    assert_eq!(&bytes[..], &data[*at as usize..*at as usize + bytes.len()]);
                }
                // Forward in both files.
                for w in got.windows(2) {
                    assert!(w[0].0 + w[0].1.len() as u64 <= w[1].0);
                }
            }
        }
    }

    #[test]
    fn reads_less_than_the_file_for_a_small_range() {
        let data = text(4 << 20);
        let gz = gzip(&data);
        let reads = StoredReads::new(
            index_of(&gz, 256 << 10),
            &[(2 << 20, (2 << 20) + 100)],
            gz.len() as u64,
        );
        let stored: u64 = reads.ranges().iter().map(|(a, b)| b - a).sum();
        assert!(stored * 4 < gz.len() as u64, "{stored} of {}", gz.len());
    }

    #[test]
    fn a_seek_elsewhere_than_the_next_read_is_refused() {
        let data = text(1 << 20);
        let gz = gzip(&data);
        let mut reads = StoredReads::new(
            index_of(&gz, 64 << 10),
            &[(500_000, 500_010)],
            gz.len() as u64,
        );
        let (a, _) = reads.ranges()[0];
        assert_eq!(reads.seek(a + 1), None);
        assert!(reads.seek(a).is_some());
        assert_eq!(reads.seek(a), None);
    }

    #[test]
    fn corrupt_stored_bytes_are_an_error_not_a_panic() {
        let data = text(1 << 20);
        let gz = gzip(&data);
        let mut reads = StoredReads::new(
            index_of(&gz, 64 << 10),
            &[(700_000, 700_010)],
            gz.len() as u64,
        );
        let (a, b) = reads.ranges()[0];
        reads.seek(a).unwrap();
        let mut bad = gz[a as usize..b as usize].to_vec();
        for x in bad.iter_mut().skip(3).step_by(5) {
            *x ^= 0x5A;
        }
        for_each_split(&bad, 3, 2, |chunks| {
            let mut r = StoredReads::new(
                index_of(&gz, 64 << 10),
                &[(700_000, 700_010)],
                gz.len() as u64,
            );
            r.seek(a).unwrap();
            let mut err = None;
            for c in chunks {
                if let Err(e) = r.write(c, |_: &[u8]| Ok::<(), GzError>(())) {
                    err = Some(e);
                    break;
                }
            }
            // Corrupt data either fails with an offset in the stored file or decodes to
            // bytes that are not the file's; it never panics.
            if let Some(e) = err {
                assert!(e.offset() >= a, "{e}");
            }
        });
    }
}
