//! `libflinch_nvtx.so`: an NVTX v3 injection library that turns NVTX marks and ranges into
//! flinch-trace marks, so `flinch-trace record -- CMD` measures every annotated range of a program
//! with no change to it (see docs/nvtx.md).
//!
//! The NVTX v3 headers compiled into a program read `NVTX_INJECTION64_PATH` at the first NVTX
//! call, `dlopen` the library it names and call its `InitializeInjectionNvtx2`, which fills the
//! loader's function tables ([`abi`]). With `FLINCH_MARKS` unset the library declines (NVTX calls
//! stay no-ops). Otherwise:
//! - a range named `N` gives the marks `N_start` and `N_end`, a mark gives `N`, and a domain `D`
//!   other than the default prefixes `D:` ([`label`]);
//! - each line is `@<t_mono_ns>:<thread> <label>`: the caller's CLOCK_MONOTONIC time, taken at the
//!   NVTX call, and the pairing key (the caller's thread id; for a start/end range, which may end
//!   on another thread, a key of its own, `pid << 32 | n`);
//! - push/pop stacks are per thread and per domain;
//! - each line is written to the FIFO by the calling thread, non-blocking, so it survives an
//!   `_exit` right after; only when the pipe is full does it go to a bounded backlog that a
//!   background thread writes ([`sink`]); nothing waits on I/O, losses are counted and reported
//!   at exit, and no panic crosses the C boundary;
//! - with `FLINCH_NVTX_COUNTS` set, the processes keep shared counts in that file ([`shared`]), so
//!   the recorder also counts what is lost with a process that ends by `_exit`.
#![cfg(target_os = "linux")]

pub mod abi;
pub mod label;
pub mod shared;
pub mod sink;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CString, c_int, c_uint, c_void};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use flinch_core::marks_line;

use abi::{CStr, DomainHandle, EventAttributes, FnPtr, RangeId, StringHandle, WChar};
use sink::{Sink, SpinLock};

/// The process's sink; set once by the first successful initialization.
static SINK: OnceLock<Sink> = OnceLock::new();
/// Whether the exit and fork handlers are registered.
static HANDLERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Bumped in a forked child so threads re-read their (new) thread id.
static FORK_GEN: AtomicU64 = AtomicU64::new(0);
/// The next start/end range id (never 0, the null id).
static NEXT_RANGE: AtomicU64 = AtomicU64::new(1);
/// Open start/end ranges: id -> (pairing key, label).
static OPEN_RANGES: SpinLock<Option<OpenRanges>> = SpinLock::new(None);
/// Created domains, by name, so creating a name twice gives the same handle.
static DOMAINS: SpinLock<Vec<&'static Domain>> = SpinLock::new(Vec::new());
/// Registered strings, by (domain, text).
static STRINGS: SpinLock<Option<Strings>> = SpinLock::new(None);

/// Open start/end ranges: id -> (pairing key, label).
type OpenRanges = HashMap<RangeId, (u64, Box<str>)>;
/// Registered strings by (domain handle, text).
type Strings = HashMap<(usize, Box<str>), &'static Registered>;

/// Open start/end ranges kept at most; past it a start is dropped (counted).
pub const MAX_OPEN_RANGES: usize = 65_536;
/// Open push ranges per thread kept at most; deeper pushes are dropped (counted) with their pops.
pub const MAX_DEPTH: usize = 4096;
/// Distinct domains kept; later ones share [`OTHER_DOMAIN`]'s prefix.
pub const MAX_DOMAINS: usize = 4096;
/// Distinct registered strings kept; later ones read as [`label::UNNAMED`].
pub const MAX_STRINGS: usize = 65_536;
/// The prefix of domains past [`MAX_DOMAINS`].
pub const OTHER_DOMAIN: &str = "other:";

/// A domain handle points at one of these (leaked: handles live as long as the process).
struct Domain {
    name: Box<str>,
    prefix: Box<str>,
}

/// A registered-string handle points at one of these (leaked, as above).
struct Registered {
    text: Box<str>,
}

/// Longest mark line: `@`, two u64, separators, the label, newline.
const LINE_MAX: usize = 1 + 20 + 1 + 20 + 1 + label::MAX_LABEL_BYTES + 1;

struct ThreadState {
    fork_gen: u64,
    tid: u64,
    /// Labels of the open pushes, back to back; `stack[i].1` is where push i's label starts.
    names: String,
    stack: Vec<(usize, usize)>,
    /// Pushes past [`MAX_DEPTH`] not recorded (their pops emit nothing either).
    overflow: usize,
    /// Scratch for building a label.
    scratch: String,
}

thread_local! {
    static THREAD: RefCell<ThreadState> = const {
        RefCell::new(ThreadState {
            fork_gen: u64::MAX,
            tid: 0,
            names: String::new(),
            stack: Vec::new(),
            overflow: 0,
            scratch: String::new(),
        })
    };
}

impl ThreadState {
    fn tid(&mut self) -> u64 {
        let g = FORK_GEN.load(Ordering::Relaxed);
        if self.fork_gen != g {
            // SAFETY: gettid has no preconditions.
            self.tid = unsafe { libc::gettid() } as u64;
            self.fork_gen = g;
        }
        self.tid
    }
}

fn mono_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes `@<t>:<key> <label><suffix>\n` (flinch-core's marks line, without `core::fmt`: a
/// third of a range's cost) and hands it to the sink; a line that does not fit (labels are cut
/// well before that) is counted as dropped.
fn emit(t_ns: u64, key: u64, label: &str, suffix: &str) {
    let Some(sink) = SINK.get() else { return };
    let mut buf = [0u8; LINE_MAX];
    match marks_line::write_stamped(&mut buf, t_ns, Some(key), &[label, suffix]) {
        Some(n) => sink.emit(&buf[..n]),
        None => sink.count_dropped(),
    }
}

fn count_dropped() {
    if let Some(s) = SINK.get() {
        s.count_dropped();
    }
}

/// Runs a callback body; a panic becomes `default` instead of unwinding into C.
fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

/// A C string's bytes (scanning at most 64 KiB for the NUL).
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn c_bytes<'a>(p: CStr) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe {
        let n = libc::strnlen(p, 1 << 16);
        std::slice::from_raw_parts(p.cast::<u8>(), n)
    }
}

/// A `wchar_t` string's units (at most 64 Ki).
///
/// # Safety
/// `p` is null or a NUL-terminated wide string.
unsafe fn w_units<'a>(p: *const WChar) -> &'a [WChar] {
    if p.is_null() {
        return &[];
    }
    let mut n = 0usize;
    // SAFETY: the caller passes a NUL-terminated wide string; reading stops at its NUL.
    unsafe {
        while n < (1 << 16) && *p.add(n) != 0 {
            n += 1;
        }
        std::slice::from_raw_parts(p, n)
    }
}

/// The domain a handle points at (None: the default domain).
///
/// # Safety
/// `d` is null or a handle from [`domain_create`].
unsafe fn domain<'a>(d: DomainHandle) -> Option<&'a Domain> {
    // SAFETY: non-null handles come from `domain_create` and are never freed.
    unsafe { d.cast::<Domain>().as_ref() }
}

fn prefix_of(d: Option<&Domain>) -> &str {
    d.map_or("", |d| &d.prefix)
}

/// A message, as the label's characters.
enum Message<'a> {
    Bytes(&'a [u8]),
    Wide(&'a [WChar]),
    Text(&'a str),
}

/// Builds `prefix + message` into `out`.
fn name_into(out: &mut String, prefix: &str, m: Message<'_>) {
    match m {
        Message::Bytes(b) => label::name_into_bytes(out, prefix, b),
        Message::Wide(w) => label::name_into(out, prefix, label::wide_chars(w)),
        Message::Text(t) => label::name_into(out, prefix, t.chars()),
    }
}

/// The message of an event attributes structure.
///
/// # Safety
/// `a` is null or points at an `nvtxEventAttributes_t` whose message matches its type.
unsafe fn attr_message<'a>(a: *const EventAttributes) -> Message<'a> {
    // SAFETY: per the NVTX contract, `a` is valid for `size` bytes.
    unsafe {
        let Some(a) = a.as_ref() else {
            return Message::Bytes(&[]);
        };
        if (a.size as usize) < abi::EVENT_ATTRIBUTES_SIZE || a.message.is_null() {
            return Message::Bytes(&[]);
        }
        match a.message_type {
            abi::MESSAGE_TYPE_ASCII => Message::Bytes(c_bytes(a.message.cast())),
            abi::MESSAGE_TYPE_UNICODE => Message::Wide(w_units(a.message.cast())),
            abi::MESSAGE_TYPE_REGISTERED => Message::Text(
                a.message
                    .cast::<Registered>()
                    .as_ref()
                    .map_or("", |r| &r.text),
            ),
            _ => Message::Bytes(&[]),
        }
    }
}

// ---- the operations ---------------------------------------------------------------------------

fn mark(d: Option<&Domain>, m: Message<'_>) {
    let t = mono_now_ns();
    let _ = THREAD.try_with(|ts| {
        let mut ts = ts.borrow_mut();
        let tid = ts.tid();
        let mut name = std::mem::take(&mut ts.scratch);
        name_into(&mut name, prefix_of(d), m);
        emit(t, tid, &name, "");
        ts.scratch = name;
    });
}

/// Pushes a range; returns its 0-based level in the domain.
fn push(d: Option<&Domain>, m: Message<'_>) -> c_int {
    let t = mono_now_ns();
    let key = d.map_or(0, |d| d as *const Domain as usize);
    THREAD
        .try_with(|ts| {
            let mut ts = ts.borrow_mut();
            let ts = &mut *ts;
            let level = ts.stack.iter().filter(|e| e.0 == key).count() + ts.overflow;
            if ts.stack.len() >= MAX_DEPTH {
                ts.overflow += 1;
                count_dropped();
                return level as c_int;
            }
            let tid = ts.tid();
            let at = ts.names.len();
            let mut name = std::mem::take(&mut ts.scratch);
            name_into(&mut name, prefix_of(d), m);
            emit(t, tid, &name, "_start");
            ts.names.push_str(&name);
            ts.scratch = name;
            ts.stack.push((key, at));
            level as c_int
        })
        .unwrap_or(-1)
}

/// Pops the innermost range of the domain on this thread; returns its level, or -1.
fn pop(d: Option<&Domain>) -> c_int {
    let t = mono_now_ns();
    let key = d.map_or(0, |d| d as *const Domain as usize);
    THREAD
        .try_with(|ts| {
            let mut ts = ts.borrow_mut();
            let ts = &mut *ts;
            if ts.overflow > 0 {
                ts.overflow -= 1;
                count_dropped();
                return (ts.stack.len() + ts.overflow) as c_int;
            }
            let Some(i) = ts.stack.iter().rposition(|e| e.0 == key) else {
                return -1;
            };
            let level = ts.stack[..i].iter().filter(|e| e.0 == key).count();
            let start = ts.stack[i].1;
            let end = ts.stack.get(i + 1).map_or(ts.names.len(), |e| e.1);
            let tid = ts.tid();
            emit(t, tid, &ts.names[start..end], "_end");
            ts.stack.remove(i);
            if end == ts.names.len() {
                ts.names.truncate(start);
            } else {
                // A pop out of order across domains: close the gap.
                ts.names.replace_range(start..end, "");
                for e in &mut ts.stack[i..] {
                    e.1 -= end - start;
                }
            }
            level as c_int
        })
        .unwrap_or(-1)
}

/// Starts a start/end range; returns its id (0 when it could not be kept).
fn start(d: Option<&Domain>, m: Message<'_>) -> RangeId {
    let t = mono_now_ns();
    let id = NEXT_RANGE.fetch_add(1, Ordering::Relaxed);
    let key = (u64::from(std::process::id()) << 32) | (id & 0xffff_ffff);
    let mut name = String::new();
    name_into(&mut name, prefix_of(d), m);
    {
        let mut open = OPEN_RANGES.lock();
        let map = open.get_or_insert_with(HashMap::new);
        if map.len() >= MAX_OPEN_RANGES {
            drop(open);
            count_dropped();
            return id;
        }
        emit(t, key, &name, "_start");
        map.insert(id, (key, name.into_boxed_str()));
    }
    id
}

fn end(id: RangeId) {
    let t = mono_now_ns();
    let found = OPEN_RANGES.lock().as_mut().and_then(|m| m.remove(&id));
    if let Some((key, name)) = found {
        emit(t, key, &name, "_end");
    }
}

fn domain_create(m: Message<'_>) -> DomainHandle {
    let mut name = String::new();
    name_into(&mut name, "", m);
    let mut ds = DOMAINS.lock();
    if let Some(d) = ds.iter().find(|d| *d.name == *name) {
        return *d as *const Domain as DomainHandle;
    }
    let prefix = if ds.len() >= MAX_DOMAINS {
        OTHER_DOMAIN.into()
    } else {
        label::domain_prefix(name.chars()).into_boxed_str()
    };
    let d: &'static Domain = Box::leak(Box::new(Domain {
        name: name.into_boxed_str(),
        prefix,
    }));
    if ds.len() < MAX_DOMAINS {
        ds.push(d);
    }
    d as *const Domain as DomainHandle
}

fn register_string(d: DomainHandle, m: Message<'_>) -> StringHandle {
    let mut text = String::new();
    match m {
        Message::Bytes(b) => text.extend(label::utf8_chars(b)),
        Message::Wide(w) => text.extend(label::wide_chars(w)),
        Message::Text(t) => text.push_str(t),
    }
    text.truncate(label::MAX_LABEL_BYTES * 4);
    let mut strings = STRINGS.lock();
    let map = strings.get_or_insert_with(HashMap::new);
    let key = (d as usize, text.into_boxed_str());
    if let Some(r) = map.get(&key) {
        return *r as *const Registered as StringHandle;
    }
    let text = if map.len() >= MAX_STRINGS {
        Box::from("")
    } else {
        key.1.clone()
    };
    let r: &'static Registered = Box::leak(Box::new(Registered { text }));
    if map.len() < MAX_STRINGS {
        map.insert(key, r);
    }
    r as *const Registered as StringHandle
}

// ---- the C entry points -------------------------------------------------------------------------

unsafe extern "C" fn mark_ex(a: *const EventAttributes) {
    // SAFETY: NVTX passes a valid attributes structure (or null).
    guard((), || mark(None, unsafe { attr_message(a) }))
}
unsafe extern "C" fn mark_a(s: CStr) {
    // SAFETY: NVTX passes a NUL-terminated string (or null).
    guard((), || mark(None, Message::Bytes(unsafe { c_bytes(s) })))
}
unsafe extern "C" fn mark_w(s: *const WChar) {
    // SAFETY: as above, wide.
    guard((), || mark(None, Message::Wide(unsafe { w_units(s) })))
}
unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> RangeId {
    // SAFETY: as in `mark_ex`.
    guard(0, || start(None, unsafe { attr_message(a) }))
}
unsafe extern "C" fn range_start_a(s: CStr) -> RangeId {
    // SAFETY: as in `mark_a`.
    guard(0, || start(None, Message::Bytes(unsafe { c_bytes(s) })))
}
unsafe extern "C" fn range_start_w(s: *const WChar) -> RangeId {
    // SAFETY: as in `mark_w`.
    guard(0, || start(None, Message::Wide(unsafe { w_units(s) })))
}
unsafe extern "C" fn range_end(id: RangeId) {
    guard((), || end(id))
}
unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    // SAFETY: as in `mark_ex`.
    guard(-1, || push(None, unsafe { attr_message(a) }))
}
unsafe extern "C" fn range_push_a(s: CStr) -> c_int {
    // SAFETY: as in `mark_a`.
    guard(-1, || push(None, Message::Bytes(unsafe { c_bytes(s) })))
}
unsafe extern "C" fn range_push_w(s: *const WChar) -> c_int {
    // SAFETY: as in `mark_w`.
    guard(-1, || push(None, Message::Wide(unsafe { w_units(s) })))
}
unsafe extern "C" fn range_pop() -> c_int {
    guard(-1, || pop(None))
}
unsafe extern "C" fn name_category_a(_category: u32, _name: CStr) {}
unsafe extern "C" fn name_category_w(_category: u32, _name: *const WChar) {}
unsafe extern "C" fn name_os_thread_a(_thread: u32, _name: CStr) {}
unsafe extern "C" fn name_os_thread_w(_thread: u32, _name: *const WChar) {}

unsafe extern "C" fn domain_mark_ex(d: DomainHandle, a: *const EventAttributes) {
    // SAFETY: `d` is null or ours; `a` as in `mark_ex`.
    guard((), || {
        mark(unsafe { domain(d) }, unsafe { attr_message(a) })
    })
}
unsafe extern "C" fn domain_range_start_ex(d: DomainHandle, a: *const EventAttributes) -> RangeId {
    // SAFETY: as in `domain_mark_ex`.
    guard(0, || {
        start(unsafe { domain(d) }, unsafe { attr_message(a) })
    })
}
unsafe extern "C" fn domain_range_end(_d: DomainHandle, id: RangeId) {
    guard((), || end(id))
}
unsafe extern "C" fn domain_range_push_ex(d: DomainHandle, a: *const EventAttributes) -> c_int {
    // SAFETY: as in `domain_mark_ex`.
    guard(-1, || {
        push(unsafe { domain(d) }, unsafe { attr_message(a) })
    })
}
unsafe extern "C" fn domain_range_pop(d: DomainHandle) -> c_int {
    // SAFETY: `d` is null or ours.
    guard(-1, || pop(unsafe { domain(d) }))
}
/// Resources (naming of OS/CUDA objects) are not marks: one shared non-null handle.
unsafe extern "C" fn domain_resource_create(_d: DomainHandle, _a: *mut c_void) -> *const c_void {
    static RESOURCE: u8 = 0;
    &RESOURCE as *const u8 as *const c_void
}
unsafe extern "C" fn domain_resource_destroy(_r: *const c_void) {}
unsafe extern "C" fn domain_name_category_a(_d: DomainHandle, _c: u32, _n: CStr) {}
unsafe extern "C" fn domain_name_category_w(_d: DomainHandle, _c: u32, _n: *const WChar) {}
unsafe extern "C" fn domain_register_string_a(d: DomainHandle, s: CStr) -> StringHandle {
    // SAFETY: as in `mark_a`.
    guard(std::ptr::null(), || {
        register_string(d, Message::Bytes(unsafe { c_bytes(s) }))
    })
}
unsafe extern "C" fn domain_register_string_w(d: DomainHandle, s: *const WChar) -> StringHandle {
    // SAFETY: as in `mark_w`.
    guard(std::ptr::null(), || {
        register_string(d, Message::Wide(unsafe { w_units(s) }))
    })
}
unsafe extern "C" fn domain_create_a(s: CStr) -> DomainHandle {
    // SAFETY: as in `mark_a`.
    guard(std::ptr::null(), || {
        domain_create(Message::Bytes(unsafe { c_bytes(s) }))
    })
}
unsafe extern "C" fn domain_create_w(s: *const WChar) -> DomainHandle {
    // SAFETY: as in `mark_w`.
    guard(std::ptr::null(), || {
        domain_create(Message::Wide(unsafe { w_units(s) }))
    })
}
/// Domains are kept (a stale handle stays valid).
unsafe extern "C" fn domain_destroy(_d: DomainHandle) {}
unsafe extern "C" fn initialize(_reserved: *const c_void) {}

// ---- initialization -----------------------------------------------------------------------------

extern "C" fn after_fork_in_child() {
    FORK_GEN.fetch_add(1, Ordering::Relaxed);
    OPEN_RANGES.reset_after_fork();
    DOMAINS.reset_after_fork();
    STRINGS.reset_after_fork();
    if let Some(s) = SINK.get() {
        s.reset_after_fork();
    }
}

extern "C" fn at_exit() {
    let msg = guard(None, || SINK.get().and_then(Sink::finish));
    if let Some(m) = msg {
        // Not eprintln!, which panics when stderr is closed.
        let _ = writeln!(std::io::stderr(), "{m}");
    }
}

/// Fills one module's table: `(callback id, function)` pairs; ids the loader does not know are
/// skipped.
///
/// # Safety
/// `get` is the loader's `GetModuleFunctionTable`.
unsafe fn fill(
    get: unsafe extern "C" fn(c_int, *mut *mut *mut FnPtr, *mut c_uint) -> c_int,
    module: c_int,
    entries: &[(usize, FnPtr)],
) -> bool {
    let mut table: *mut *mut FnPtr = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: out-parameters are valid; the loader fills them.
    if unsafe { get(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(id, f) in entries {
        if id < size as usize {
            // SAFETY: `table` has `size` entries, each null or a pointer to a function slot.
            unsafe {
                let slot = *table.add(id);
                if !slot.is_null() {
                    *slot = f;
                }
            }
        }
    }
    true
}

fn init(get_export_table: Option<abi::GetExportTable>) -> c_int {
    let Some(path) = std::env::var_os("FLINCH_MARKS").filter(|p| !p.is_empty()) else {
        // Not under a recorder: decline, so NVTX calls stay no-ops.
        return 0;
    };
    let Ok(path) = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())) else {
        return 0;
    };
    let Some(get_export_table) = get_export_table else {
        return 0;
    };
    // SAFETY: the loader's export-table function; the callbacks table is a static of the loader.
    let callbacks =
        unsafe { get_export_table(abi::ETID_CALLBACKS).cast::<abi::ExportTableCallbacks>() };
    // SAFETY: non-null tables point at the loader's static structure.
    let Some(callbacks) = (unsafe { callbacks.as_ref() }) else {
        return 0;
    };
    if callbacks.struct_size < std::mem::size_of::<abi::ExportTableCallbacks>() {
        return 0;
    }
    let Some(get) = callbacks.get_module_function_table else {
        return 0;
    };
    if let Some(counts) = std::env::var_os("FLINCH_NVTX_COUNTS")
        && let Ok(counts) = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(counts.as_os_str()))
    {
        shared::attach(&counts);
    }
    SINK.get_or_init(|| Sink::new(path));
    use abi::{core_id as c, core2_id as c2};
    let f = |p: *const ()| p as FnPtr;
    let core: [(usize, FnPtr); 15] = [
        (c::MARK_EX, f(mark_ex as *const ())),
        (c::MARK_A, f(mark_a as *const ())),
        (c::MARK_W, f(mark_w as *const ())),
        (c::RANGE_START_EX, f(range_start_ex as *const ())),
        (c::RANGE_START_A, f(range_start_a as *const ())),
        (c::RANGE_START_W, f(range_start_w as *const ())),
        (c::RANGE_END, f(range_end as *const ())),
        (c::RANGE_PUSH_EX, f(range_push_ex as *const ())),
        (c::RANGE_PUSH_A, f(range_push_a as *const ())),
        (c::RANGE_PUSH_W, f(range_push_w as *const ())),
        (c::RANGE_POP, f(range_pop as *const ())),
        (c::NAME_CATEGORY_A, f(name_category_a as *const ())),
        (c::NAME_CATEGORY_W, f(name_category_w as *const ())),
        (c::NAME_OS_THREAD_A, f(name_os_thread_a as *const ())),
        (c::NAME_OS_THREAD_W, f(name_os_thread_w as *const ())),
    ];
    let core2: [(usize, FnPtr); 15] = [
        (c2::DOMAIN_MARK_EX, f(domain_mark_ex as *const ())),
        (
            c2::DOMAIN_RANGE_START_EX,
            f(domain_range_start_ex as *const ()),
        ),
        (c2::DOMAIN_RANGE_END, f(domain_range_end as *const ())),
        (
            c2::DOMAIN_RANGE_PUSH_EX,
            f(domain_range_push_ex as *const ()),
        ),
        (c2::DOMAIN_RANGE_POP, f(domain_range_pop as *const ())),
        (
            c2::DOMAIN_RESOURCE_CREATE,
            f(domain_resource_create as *const ()),
        ),
        (
            c2::DOMAIN_RESOURCE_DESTROY,
            f(domain_resource_destroy as *const ()),
        ),
        (
            c2::DOMAIN_NAME_CATEGORY_A,
            f(domain_name_category_a as *const ()),
        ),
        (
            c2::DOMAIN_NAME_CATEGORY_W,
            f(domain_name_category_w as *const ()),
        ),
        (
            c2::DOMAIN_REGISTER_STRING_A,
            f(domain_register_string_a as *const ()),
        ),
        (
            c2::DOMAIN_REGISTER_STRING_W,
            f(domain_register_string_w as *const ()),
        ),
        (c2::DOMAIN_CREATE_A, f(domain_create_a as *const ())),
        (c2::DOMAIN_CREATE_W, f(domain_create_w as *const ())),
        (c2::DOMAIN_DESTROY, f(domain_destroy as *const ())),
        (c2::INITIALIZE, f(initialize as *const ())),
    ];
    // SAFETY: `get` is the loader's table function.
    let ok = unsafe { fill(get, abi::MODULE_CORE, &core) && fill(get, abi::MODULE_CORE2, &core2) };
    // Only after success: on failure NVTX resets its tables and unloads this library, and a
    // handler left registered would point into unmapped code. After success it stays loaded.
    if ok && !HANDLERS.swap(true, Ordering::AcqRel) {
        // SAFETY: registering plain extern "C" functions of this library, which stays loaded.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
            libc::atexit(at_exit);
        }
    }
    c_int::from(ok)
}

/// The NVTX v3 injection entry point: fills the loader's CORE and CORE2 tables. Returns 1 on
/// success; 0 (NVTX calls stay no-ops) when `FLINCH_MARKS` is unset or the loader's tables are
/// not as expected.
///
/// # Safety
/// Called by the NVTX loader with its export-table function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<abi::GetExportTable>,
) -> c_int {
    guard(0, || init(get_export_table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_a_callback_body_becomes_the_neutral_return() {
        assert_eq!(guard(-1, || -> c_int { panic!("inside a callback") }), -1);
        assert_eq!(guard(0u64, || 7u64), 7);
    }

    #[test]
    fn the_longest_line_fits_and_parses_as_the_recorder_reads_it() {
        let mut buf = [0u8; LINE_MAX];
        let long = "x".repeat(label::MAX_LABEL_BYTES - "_start".len());
        let n = marks_line::write_stamped(&mut buf, u64::MAX, Some(u64::MAX), &[&long, "_start"])
            .unwrap();
        assert_eq!(n, LINE_MAX);
        assert!(n <= marks_line::MAX_LINE);
        let want_label = format!("{long}_start");
        assert_eq!(
            marks_line::parse(&buf[..n - 1]),
            Ok(marks_line::Line::Mark(marks_line::Mark {
                t_mono_ns: Some(u64::MAX),
                thread: Some(u64::MAX),
                label: &want_label,
            }))
        );
        assert!(
            marks_line::write_stamped(&mut buf, 1, Some(1), &[&"x".repeat(LINE_MAX), ""]).is_none()
        );
    }
}
