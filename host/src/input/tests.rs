//! Tests of the input pipeline: plain and gzip files through the buffer ring, truncation and
//! corruption with offsets, and the zlib-rs backend under the core gzip framing.
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;

use flinch_core::gzip::GzStatus;

use super::*;

/// SplitMix64 for test data (also the restart points' tests).
pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// JSON-like text with some random bytes: compresses like a trace, but not trivially.
fn data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        if rng.below(4) == 0 {
            v.push(rng.next_u64() as u8);
        } else {
            v.extend_from_slice(
                format!(
                    "{{\"ts\":{}.{},\"ph\":\"X\"}},",
                    rng.below(1 << 40),
                    rng.below(1000)
                )
                .as_bytes(),
            );
        }
    }
    v.truncate(len);
    v
}

fn gzip(data: &[u8]) -> Vec<u8> {
    member(data, 6)
}

/// `data` as one gzip member at `level`.
pub(super) fn member(data: &[u8], level: u32) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A temporary file removed on drop.
pub(super) struct TempFile(pub(super) PathBuf);
impl TempFile {
    pub(super) fn new(bytes: &[u8]) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("flinch-input-{}-{n}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
}
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const SMALL: InputOptions = InputOptions {
    buffers: 3,
    buffer_bytes: 4096,
};

/// Reads every chunk; returns the bytes and the final error, if any.
fn read_all(input: &mut Input) -> (Vec<u8>, Option<InputError>) {
    let mut out = Vec::new();
    loop {
        match input.next_chunk() {
            Ok(Some(chunk)) => {
                assert!(!chunk.is_empty());
                out.extend_from_slice(chunk);
            }
            Ok(None) => return (out, None),
            Err(e) => {
                // After an error the input is over.
                assert_eq!(input.next_chunk(), Ok(None));
                return (out, Some(e));
            }
        }
    }
}

#[test]
fn plain_file_round_trips_with_progress() {
    let mut rng = Rng(1);
    for len in [0, 1, 4095, 4096, 4097, 100_000] {
        let d = data(&mut rng, len);
        let f = TempFile::new(&d);
        let mut input = open_input_with(&f.0, SMALL).unwrap();
        assert!(!input.is_gzip());
        let (out, err) = read_all(&mut input);
        assert_eq!(err, None);
        assert_eq!(out, d, "len {len}");
        let p = input.progress();
        assert_eq!((p.bytes_read(), p.total_bytes()), (len as u64, len as u64));
    }
}

#[test]
fn gzip_is_detected_by_magic_and_multi_member_decodes() {
    let mut rng = Rng(2);
    let parts = [
        data(&mut rng, 50_000),
        data(&mut rng, 10),
        data(&mut rng, 30_000),
    ];
    let gz: Vec<u8> = parts.iter().flat_map(|p| gzip(p)).collect();
    let f = TempFile::new(&gz); // no .gz suffix: detection is by content
    for options in [SMALL, InputOptions::default()] {
        let mut input = open_input_with(&f.0, options).unwrap();
        assert!(input.is_gzip());
        let (out, err) = read_all(&mut input);
        assert_eq!(err, None);
        assert_eq!(out, parts.concat());
        assert_eq!(input.progress().bytes_read(), gz.len() as u64);
    }
}

#[test]
fn cut_gzip_keeps_what_was_decoded_and_reports_truncation_at_the_cut() {
    let mut rng = Rng(3);
    let d = data(&mut rng, 60_000);
    let gz = gzip(&d);
    let step = (gz.len() / 37).max(1);
    for cut in (2..gz.len())
        .step_by(step)
        .chain([gz.len() - 1, gz.len() - 8])
    {
        let f = TempFile::new(&gz[..cut]);
        let mut input = open_input_with(&f.0, SMALL).unwrap();
        let (out, err) = read_all(&mut input);
        let err = err.expect("a cut stream must fail");
        assert!(err.cut.is_some(), "cut {cut}: {err}");
        assert_eq!(err.message, format!("truncated gzip member at byte {cut}"));
        assert!(
            d.starts_with(&out),
            "cut {cut}: output must be a prefix of the data"
        );
    }
}

#[test]
fn corrupt_gzip_is_an_error_with_an_offset_not_a_truncation() {
    let d = b"{\"traceEvents\":[]}".repeat(100);
    let mut gz = gzip(&d);
    let end = gz.len();
    gz[end - 8] ^= 1; // CRC32
    let f = TempFile::new(&gz);
    let (_, err) = read_all(&mut open_input_with(&f.0, SMALL).unwrap());
    let err = err.unwrap();
    assert!(err.cut.is_none());
    assert_eq!(
        err.message,
        format!("crc32 mismatch in gzip member ending at byte {end}")
    );

    let mut gz = gzip(&d);
    gz[10] = 0x07; // reserved deflate block type
    let f = TempFile::new(&gz);
    let mut input = open_input_with(&f.0, SMALL).unwrap();
    let err = std::io::read_to_string(&mut input).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(
        err.to_string().starts_with("corrupt deflate data at byte "),
        "{err}"
    );
}

#[test]
fn read_impl_delivers_the_same_bytes_and_eof_kind_for_truncation() {
    let mut rng = Rng(4);
    let d = data(&mut rng, 20_000);
    let gz = gzip(&d);
    let f = TempFile::new(&gz);
    let mut out = Vec::new();
    open_input_with(&f.0, SMALL)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, d);
    let f = TempFile::new(&gz[..gz.len() / 2]);
    let err = std::io::read_to_string(open_input_with(&f.0, SMALL).unwrap()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn missing_file_is_a_clear_error() {
    let err = open_input(Path::new("/nonexistent/flinch/trace.json"))
        .err()
        .unwrap();
    assert!(
        err.starts_with("cannot open /nonexistent/flinch/trace.json: "),
        "{err}"
    );
}

#[test]
fn dropping_an_input_early_stops_its_thread() {
    let mut rng = Rng(5);
    let d = data(&mut rng, 200_000);
    let f = TempFile::new(&gzip(&d));
    let mut input = open_input_with(&f.0, SMALL).unwrap();
    assert!(input.next_chunk().unwrap().is_some());
    drop(input); // the worker's next send or recv fails and it returns; nothing hangs
}

#[test]
fn zlib_rs_backend_matches_the_data_in_random_splits() {
    let mut rng = Rng(6);
    let parts = [data(&mut rng, 70_000), Vec::new(), data(&mut rng, 5)];
    let gz: Vec<u8> = parts.iter().flat_map(|p| gzip(p)).collect();
    let want = parts.concat();
    for round in 0..30 {
        let mut dec = GzDecoder::with_inflater(ZlibRsInflate::new());
        let mut out = Vec::new();
        let mut buf = vec![0u8; 9000];
        let mut rest = &gz[..];
        while !rest.is_empty() {
            let n = if round == 0 {
                rest.len()
            } else {
                (1 + rng.below(if round < 3 { 1 } else { 3000 }) as usize).min(rest.len())
            };
            let mut chunk = &rest[..n];
            rest = &rest[n..];
            loop {
                let cap = 1 + rng.below(9000) as usize;
                let (status, nin, nout) = dec.decode(chunk, &mut buf[..cap]).unwrap();
                out.extend_from_slice(&buf[..nout]);
                chunk = &chunk[nin..];
                if status != GzStatus::OutputFull {
                    assert!(chunk.is_empty());
                    break;
                }
            }
        }
        dec.finish().unwrap();
        assert_eq!(dec.members(), 3);
        assert_eq!(out, want, "round {round}");
    }
}

#[test]
fn buffers_are_recycled_so_memory_stays_at_the_ring_size() {
    let mut rng = Rng(7);
    let d = data(&mut rng, 300_000); // ~73 chunks of 4 KiB through a ring of 3
    for bytes in [gzip(&d), d.clone()] {
        let f = TempFile::new(&bytes);
        let mut input = open_input_with(&f.0, SMALL).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut chunks = 0;
        let mut out = Vec::new();
        while let Some(chunk) = input.next_chunk().unwrap() {
            seen.insert(chunk.as_ptr() as usize);
            out.extend_from_slice(chunk);
            chunks += 1;
        }
        assert_eq!(out, d);
        assert!(chunks > 50, "{chunks} chunks");
        assert!(
            seen.len() <= SMALL.buffers,
            "{} distinct buffers for a ring of {}",
            seen.len(),
            SMALL.buffers
        );
    }
}

/// A FIFO at a fresh path with a thread writing `bytes` into it; the writer's result comes back
/// from `join`.
fn fifo(bytes: Vec<u8>) -> (TempFile, std::thread::JoinHandle<std::io::Result<()>>) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("flinch-fifo-{}-{n}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let p = path.clone();
    let writer = std::thread::spawn(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)?
            .write_all(&bytes)
    });
    (TempFile(path), writer)
}

/// A FIFO read in several passes: the first takes the stream and spools it, the later ones
/// read the spool; plain and gzip, the same bytes each time, and the spool is then seekable.
#[test]
fn a_fifo_read_twice_is_spooled_by_its_first_pass() {
    let mut rng = Rng(11);
    let d = data(&mut rng, 200_000);
    for bytes in [d.clone(), gzip(&d)] {
        let (f, writer) = fifo(bytes.clone());
        let file = InputFile::open(&f.0, Passes::Several).unwrap();
        assert!(file.seekable().is_none(), "a stream before its first pass");
        let (first, err) = read_all(&mut file.read_with(SMALL).unwrap());
        assert_eq!((first.len(), err), (d.len(), None));
        writer.join().unwrap().unwrap();
        let (spool, len) = file.seekable().expect("the whole spool");
        assert_eq!(len, bytes.len() as u64, "the spool holds the file's bytes");
        let mut head = [0u8; 2];
        spool.read_exact_at(&mut head, 0).unwrap();
        assert_eq!(head, bytes[..2]);
        for _ in 0..2 {
            let mut input = file.read_with(SMALL).unwrap();
            assert_eq!(input.progress().total_bytes(), bytes.len() as u64);
            let (again, err) = read_all(&mut input);
            assert!(err.is_none() && again == d);
        }
    }
}

/// Without a spool a stream gives one pass; a second is refused, naming the input, and so is
/// one after a first pass that stopped before the end (its spool is not whole).
#[test]
fn a_stream_without_a_whole_spool_is_not_read_twice() {
    let mut rng = Rng(12);
    let d = data(&mut rng, 50_000);
    let (f, writer) = fifo(d.clone());
    let file = InputFile::open(&f.0, Passes::One).unwrap();
    assert_eq!(read_all(&mut file.read_with(SMALL).unwrap()).0, d);
    writer.join().unwrap().unwrap();
    let err = file.read().err().unwrap();
    assert!(
        err.ends_with("needs a regular file (it is read twice)"),
        "{err}"
    );
    assert!(err.contains(f.0.to_str().unwrap()), "{err}");

    let (f, writer) = fifo(data(&mut rng, 500_000));
    let file = InputFile::open(&f.0, Passes::Several).unwrap();
    let mut input = file.read_with(SMALL).unwrap();
    input.next_chunk().unwrap().unwrap();
    drop(input);
    // The writer meets a closed pipe.
    assert!(writer.join().unwrap().is_err());
    let err = file.read().err().unwrap();
    assert!(
        err.contains("its first pass stopped before the end"),
        "{err}"
    );
}

/// A regular file is opened once: passes read it through the one handle, each from its start
/// with a position of its own, even after the path is gone.
#[test]
fn a_regular_file_is_read_through_its_one_open() {
    let mut rng = Rng(13);
    let d = data(&mut rng, 100_000);
    let f = TempFile::new(&d);
    let file = InputFile::open(&f.0, Passes::One).unwrap();
    std::fs::remove_file(&f.0).unwrap();
    let mut a = file.read_with(SMALL).unwrap();
    let mut b = file.read_with(SMALL).unwrap();
    let first = a.next_chunk().unwrap().unwrap().to_vec();
    assert_eq!(read_all(&mut b).0, d);
    let mut rest = read_all(&mut a).0;
    rest.splice(0..0, first);
    assert_eq!(rest, d);
    assert_eq!(file.seekable().unwrap().1, d.len() as u64);
}

#[test]
fn a_directory_is_refused_at_open() {
    let err = InputFile::open(&std::env::temp_dir(), Passes::Several)
        .err()
        .unwrap();
    assert!(err.ends_with("it is a directory"), "{err}");
}
