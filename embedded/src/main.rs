//! `flinch-mcu`: `flinch-trace analyze --csv CSV --start START --end END` on a Cortex-M4 in 64 KiB
//! of RAM, without an allocator. The command line (`CSV START END [--stats]`) and the file come
//! from the host through semihosting; the file is read in 1 KiB chunks into flinch-core's
//! [`FixedWindowAnalyzer`] (twice when the verdict needs the idle floor). It prints the
//! reference's three lines as the CLI does, then `verdict=…`; warnings and errors go to stderr
//! with the CLI's texts, and the exit status is the CLI's (1 for a missing mark, 2 for usage).
//! `--stats` adds a line on stderr: rows, passes, SysTick ticks of the analysis and the peak
//! stack. See docs/embedded.md.
#![no_std]
#![no_main]

mod host;
mod stats;

use core::fmt::Write;

use cortex_m_rt::entry;
use flinch_core::csv::TraceCsvReader;
use flinch_core::sidecar::PowerSourceScanner;
use flinch_core::window::{
    ANALYZE_CLI, FixedBuffers, FixedOptions, FixedResult, FixedWindowAnalyzer, MARK_TOO_LATE,
    MixedGpusNote, Pass, PowerSource, VerdictText, write_reference_lines,
};

/// GPUs tracked (samples of further GPUs are skipped, with a warning).
const GPUS: usize = 8;
/// Rows held to restore time order (about 2.5 s of one GPU at 100 Hz).
const ROWS: usize = 256;
/// Bytes per semihosting read.
const CHUNK_BYTES: usize = 1024;

type Buffers = FixedBuffers<GPUS, ROWS>;

#[entry]
fn main() -> ! {
    // `#[entry]` makes these `&'static mut`; zero-initialized, they go to .bss (no flash), and
    // their size counts at link time. The reader (with its 4 KiB record buffer) is built once
    // in place.
    static mut CMDLINE: [u8; 1024] = [0; 1024];
    static mut CHUNK: [u8; CHUNK_BYTES] = [0; CHUNK_BYTES];
    static mut BUFFERS: Buffers = Buffers::new();
    static mut READER: Option<TraceCsvReader> = None;
    let status = run(CMDLINE, CHUNK, BUFFERS, READER);
    host::exit(status)
}

/// The CLI's prefix for its own errors.
const CLI: &str = ANALYZE_CLI;

fn run(
    cmdline: &'static mut [u8; 1024],
    chunk: &mut [u8; CHUNK_BYTES],
    buffers: &'static mut Buffers,
    reader: &'static mut Option<TraceCsvReader>,
) -> u8 {
    let mut err = host::stderr();
    let mut eprint = |args: core::fmt::Arguments<'_>| {
        if let Some(e) = err.as_mut() {
            let _ = e.write_fmt(args);
        }
    };
    let Some(len) = host::cmdline(&mut cmdline[..1023]) else {
        eprint(format_args!("flinch-mcu: no semihosting command line\n"));
        return 2;
    };
    // Split at spaces, each argument followed by a NUL (the path is passed to the host so).
    let line: &'static mut [u8] = &mut cmdline[..len + 1];
    line[len] = 0;
    for b in line.iter_mut() {
        if *b == b' ' {
            *b = 0;
        }
    }
    let line: &'static [u8] = line;
    let mut args = [&line[..0]; 6];
    let mut n = 0;
    let mut at = 0;
    while at < len && n < args.len() {
        let end = at + line[at..].iter().position(|&b| b == 0).unwrap_or(0);
        if end > at {
            args[n] = &line[at..=end];
            n += 1;
        }
        at = end + 1;
    }
    let stats = n == 5 && args[4] == b"--stats\0";
    if !(n == 4 || stats) {
        eprint(format_args!("usage: flinch-mcu CSV START END [--stats]\n"));
        return 2;
    }
    let text = |a: &'static [u8]| &a[..a.len() - 1];
    let (path_nul, start, end) = (args[1], text(args[2]), text(args[3]));
    let path = core::str::from_utf8(text(path_nul)).unwrap_or("?");

    let power_source = sidecar_power_source(text(path_nul), chunk).unwrap_or(PowerSource::Unknown);
    let mut clock = stats::Clock::start();
    let mut file = match host::File::open(path_nul) {
        Ok(f) => f,
        Err(e) => {
            eprint(format_args!("{CLI}: cannot open {path}: {e}\n"));
            return 1;
        }
    };
    let mut analyzer = FixedWindowAnalyzer::new(
        FixedOptions {
            power_source,
            ..FixedOptions::new(start, end)
        },
        buffers,
    );
    let reader = reader.get_or_insert_with(TraceCsvReader::new);
    let mut passes = 0;
    loop {
        passes += 1;
        let mut done: u64 = 0;
        loop {
            match file.read(chunk) {
                Ok(0) => break,
                Ok(k) => {
                    analyzer.write(reader, &chunk[..k]);
                    done += k as u64;
                }
                Err(e) => {
                    eprint(format_args!(
                        "{CLI}: read error in {path} at byte {done}: {e}\n"
                    ));
                    return 1;
                }
            }
        }
        if analyzer.end_pass(reader) == Pass::Done {
            break;
        }
        if let Err(e) = file.rewind() {
            eprint(format_args!("{CLI}: cannot rewind {path}: {e}\n"));
            return 1;
        }
    }
    let ticks = clock.ticks();
    let r = analyzer.result();
    let status = report(&r, &mut eprint);
    if stats {
        eprint(format_args!(
            "stats: rows={} passes={passes} systick_ticks={ticks} stack_peak_bytes={} ram_static_bytes={}\n",
            r.rows.rows,
            stats::stack_peak_bytes(),
            stats::static_bytes(),
        ));
    }
    status
}

/// The power source `<csv>.meta.json` names, if it exists and names one (`buf` holds the path,
/// then the file's chunks).
fn sidecar_power_source(csv: &[u8], buf: &mut [u8; CHUNK_BYTES]) -> Option<PowerSource> {
    const SUFFIX: &[u8] = b".meta.json\0";
    let n = csv.len() + SUFFIX.len();
    if n > buf.len() {
        return None;
    }
    buf[..csv.len()].copy_from_slice(csv);
    buf[csv.len()..n].copy_from_slice(SUFFIX);
    let mut file = host::File::open(&buf[..n]).ok()?;
    // flinch-core's rule, as `flinch-trace analyze` applies it: the whole file is read.
    let mut scan = PowerSourceScanner::new();
    loop {
        match file.read(buf) {
            Ok(0) => return scan.finish(),
            Ok(k) => scan.push(&buf[..k]),
            Err(_) => return None,
        }
    }
}

/// Prints what `flinch-trace analyze` prints for this result (stdout, then stderr) and the
/// verdict line; the exit status.
fn report(r: &FixedResult, eprint: &mut impl FnMut(core::fmt::Arguments<'_>)) -> u8 {
    let horizon_ns = FixedOptions::new(b"", b"").reorder_horizon_ns;
    let warn_all = |eprint: &mut dyn FnMut(core::fmt::Arguments<'_>)| {
        let _ = r.rows.for_each_warning(&r.notes, horizon_ns, |w| {
            eprint(format_args!("warning: {w}\n"));
            Ok(())
        });
        if r.rows.late_rows > 0 && r.released_early > 0 {
            eprint(format_args!(
                "warning: {} rows left the {}-row reorder buffer before the {} ms horizon: late rows may include some that flinch-trace analyze places in order\n",
                r.released_early,
                ROWS - 1,
                horizon_ns / 1_000_000
            ));
        }
        if let Some(note) = r.gpu_energy_note {
            eprint(format_args!("note: {note}\n"));
        }
    };
    if let Some(e) = r.selection_error() {
        warn_all(eprint);
        eprint(format_args!("{e}\n"));
        return 1;
    }
    let Some(w) = &r.window else {
        warn_all(eprint);
        eprint(format_args!("{MARK_TOO_LATE}\n"));
        return 1;
    };
    let Some(mut out) = host::stdout() else {
        return 1;
    };
    let mut text = Buf::<256>::new();
    let _ = write_reference_lines(&mut text, w.duration_s, &w.reference);
    let _ = writeln!(text, "verdict={}", VerdictText(w.verdict, w.confident));
    if out.write_all(text.as_bytes()).is_err() {
        return 1;
    }
    if r.gpus > 1 {
        eprint(format_args!("{}\n", MixedGpusNote(r.gpus)));
    }
    warn_all(eprint);
    0
}

/// A fixed text buffer (the lines are written to the host in one call).
struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Buf<N> {
    fn new() -> Self {
        Buf {
            bytes: [0; N],
            len: 0,
        }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(core::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if let Some(mut e) = host::stderr() {
        let _ = writeln!(e, "flinch-mcu: {info}");
    }
    host::exit(101)
}
