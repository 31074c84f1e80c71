//! `flinch-trace web [--port P] [--dir DIR]`: serves the static analysis page on localhost.
//!
//! A deliberately tiny static file server: `GET`/`HEAD` only, files under `DIR` only (no `..`,
//! no symlink escape), the right MIME types (`.wasm` as `application/wasm`, so browsers use the
//! fast streaming compile), `Cache-Control: no-store`, bound to 127.0.0.1. Everything is analyzed
//! in the browser: the server only hands out the page's assets.
//!
//! Memory is bounded whatever clients do ([`ServerLimits`]): at most `max_connections` are served
//! at once (one small-stack thread each; beyond that a connection gets `503` and is closed), a
//! request head larger than `max_head_bytes` gets `431`, an idle keep-alive connection is closed
//! after `idle`, a head that takes longer than `head` to arrive is dropped, and an HTTP/1.0
//! request is answered and closed. Files are streamed, never read whole.
//!
//! The connection handling is shared: what a `GET` answers comes from a [`Handler`] (the page's
//! folder here; `record --metrics` serves its metrics through the same code).
use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::CmdResult;

/// The policy's text, for [`PAGE_HEADERS`] (and the test that holds the page's meta tag to it).
macro_rules! csp {
    () => {
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
         connect-src 'self'; style-src 'self'; img-src 'self' data: blob:; base-uri 'none'; \
         form-action 'none'"
    };
}

/// The same policy as the page's meta tag, also sent as a header so that it covers the worker
/// script too (a worker does not inherit its page's meta CSP). `connect-src 'self'` is needed for
/// the wasm fetch; nothing can connect elsewhere.
#[cfg(test)]
const CSP: &str = csp!();

/// Stack of a connection thread: it holds a few small buffers and no recursion.
const CONNECTION_STACK_BYTES: usize = 128 * 1024;

/// What one server may spend, whatever its clients send.
#[derive(Clone, Copy, Debug)]
pub struct ServerLimits {
    /// Connections served at once; one more is answered `503` and closed.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes; larger gets `431`.
    pub max_head_bytes: usize,
    /// How long a kept-alive connection may sit with no request.
    pub idle: Duration,
    /// How long a request head may take to arrive, from its first byte.
    pub head: Duration,
    /// How long a response may take to be accepted by the client.
    pub write: Duration,
}

impl ServerLimits {
    /// The limits of `flinch-trace web`: a browser opens about 6 connections per host.
    pub const DEFAULT: ServerLimits = ServerLimits {
        max_connections: 64,
        max_head_bytes: 16 * 1024,
        idle: Duration::from_secs(5),
        head: Duration::from_secs(10),
        write: Duration::from_secs(10),
    };
}

/// Arguments of `flinch-trace web`.
#[derive(clap::Args)]
pub struct Args {
    /// Port on 127.0.0.1 (0 picks a free one; the URL is printed on stdout).
    #[arg(long, default_value_t = 8000, value_name = "PORT", allow_hyphen_values = true,
          value_parser = crate::values::port)]
    port: u16,
    /// Folder holding the page (build its wasm first with scripts/build-web.sh).
    #[arg(long, default_value = "www")]
    dir: PathBuf,
}

/// Runs the subcommand: serves until killed.
pub fn run(args: Args) -> CmdResult {
    let root = args
        .dir
        .canonicalize()
        .map_err(|e| format!("web: cannot open folder {}: {e}", args.dir.display()))?;
    if !root.join("index.html").is_file() {
        return Err(format!("web: {} has no index.html", root.display()).into());
    }
    if !root.join("pkg").is_dir() {
        eprintln!(
            "web: warning: {} has no pkg/ (the wasm build); run scripts/build-web.sh",
            root.display()
        );
    }
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .map_err(|e| format!("web: cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let addr = listener.local_addr().map_err(|e| format!("web: {e}"))?;
    println!("serving {} at http://{addr}/", root.display());
    io::stdout().flush().ok();
    serve(
        &listener,
        Arc::<Path>::from(root.as_path()),
        ServerLimits::DEFAULT,
        &AtomicUsize::new(0),
    );
    Ok(ExitCode::SUCCESS)
}

/// An answer to a `GET` or `HEAD`.
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub mime: &'static str,
    /// A file to stream (its length taken when opened); else `body`.
    pub file: Option<File>,
    /// The body when there is no file.
    pub body: Vec<u8>,
}

impl Response {
    /// A `text/plain` answer.
    pub fn text(status: u16, body: &str) -> Response {
        Response {
            status,
            mime: "text/plain",
            file: None,
            body: body.as_bytes().to_vec(),
        }
    }
}

/// What a server answers: one call per `GET`/`HEAD` request.
pub trait Handler: Send + Sync + 'static {
    /// The answer to a request for `target` (the path and query as sent) with this `Accept`.
    fn get(&self, target: &str, accept: Option<&str>) -> Response;
    /// Headers sent with every response (each line ending in CRLF).
    fn headers(&self) -> &'static str {
        ""
    }
}

/// The page's folder: files under it, `/` and folders as their `index.html`.
impl Handler for Path {
    fn get(&self, target: &str, _accept: Option<&str>) -> Response {
        match resolve(self, target).and_then(|p| File::open(&p).ok().map(|f| (p, f))) {
            Some((path, file)) => Response {
                status: 200,
                mime: mime_type(&path),
                file: Some(file),
                body: Vec::new(),
            },
            None => Response::text(404, "not found\n"),
        }
    }

    fn headers(&self) -> &'static str {
        PAGE_HEADERS
    }
}

/// The page's security headers.
const PAGE_HEADERS: &str = concat!(
    "Content-Security-Policy: ",
    csp!(),
    "\r\nReferrer-Policy: no-referrer\r\n"
);

/// Releases a connection slot when its thread ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepts connections forever: each one within the cap gets its own thread, any beyond it a
/// `503`. `served` counts the connections ever handed to a thread (for tests).
pub fn serve<H: Handler + ?Sized>(
    listener: &TcpListener,
    handler: Arc<H>,
    limits: ServerLimits,
    served: &AtomicUsize,
) {
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // EMFILE and the like: give the process a moment rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if active.fetch_add(1, Ordering::SeqCst) >= limits.max_connections {
            active.fetch_sub(1, Ordering::SeqCst);
            refuse(stream);
            continue;
        }
        let slot = Slot(active.clone());
        let handler = handler.clone();
        let spawned = std::thread::Builder::new()
            .name("flinch-web".into())
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                let _slot = slot;
                // A client that disconnects or stalls is its own business.
                let _ = serve_connection(stream, &*handler, &limits);
            });
        if spawned.is_ok() {
            served.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Answers a connection over the cap with `503` without waiting for it (its socket buffer is
/// empty, so a short non-blocking write goes through) and closes it.
fn refuse(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let body = b"busy: too many connections\n";
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Retry-After: 1\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    let _ = stream.write_all(body);
    let _ = stream.shutdown(Shutdown::Write);
}

/// One parsed request head.
struct Request<'a> {
    method: &'a str,
    target: &'a str,
    keep_alive: bool,
    has_body: bool,
    accept: Option<&'a str>,
}

/// Parses a request head (without its final blank line); `None` when it is not HTTP/1.x.
fn parse_head(head: &[u8]) -> Option<Request<'_>> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || method.is_empty() || target.is_empty() {
        return None;
    }
    // HTTP/1.0 connections are answered once and closed: no idle keep-alive to hold them.
    let mut keep_alive = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return None,
    };
    let mut has_body = false;
    let mut accept = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("accept") {
            accept = Some(value);
        } else if name.eq_ignore_ascii_case("connection") {
            if value
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("close"))
            {
                keep_alive = false;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length") && value != "0")
        {
            has_body = true;
        }
    }
    Some(Request {
        method,
        target,
        keep_alive,
        has_body,
        accept,
    })
}

/// Where the blank line ending a request head is: `(head length, bytes through the blank line)`;
/// lines end with CRLF or a bare LF.
fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    for (i, _) in buf.iter().enumerate().filter(|(_, b)| **b == b'\n') {
        match (buf.get(i + 1), buf.get(i + 2)) {
            (Some(b'\n'), _) => return Some((i, i + 2)),
            (Some(b'\r'), Some(b'\n')) => return Some((i, i + 3)),
            _ => {}
        }
    }
    None
}

/// Serves requests on one connection (keep-alive) until the client closes it, stalls, or sends
/// something outside the limits.
fn serve_connection<H: Handler + ?Sized>(
    stream: TcpStream,
    handler: &H,
    limits: &ServerLimits,
) -> io::Result<()> {
    let extra = handler.headers();
    stream.set_write_timeout(Some(limits.write))?;
    let mut input = stream.try_clone()?;
    let mut out = stream;
    let mut buf = vec![0u8; limits.max_head_bytes];
    let mut filled = 0usize;
    loop {
        // Read until a whole head is buffered, within the idle and head deadlines.
        let mut head_deadline = (filled > 0).then(|| Instant::now() + limits.head);
        let (head_len, used) = loop {
            if let Some(end) = head_end(&buf[..filled]) {
                break end;
            }
            if filled == buf.len() {
                let body = format!("request head over {} bytes\n", limits.max_head_bytes);
                return respond_close(&mut out, 431, body.as_bytes(), extra);
            }
            let wait = match head_deadline {
                None => limits.idle,
                Some(d) => d.saturating_duration_since(Instant::now()),
            };
            if wait.is_zero() {
                return respond_close(&mut out, 408, b"request head too slow\n", extra);
            }
            input.set_read_timeout(Some(wait))?;
            match input.read(&mut buf[filled..]) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    filled += n;
                    head_deadline.get_or_insert_with(|| Instant::now() + limits.head);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Idle too long: close quietly; a head cut short: say so.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if filled == 0 {
                        return Ok(());
                    }
                    return respond_close(&mut out, 408, b"request head too slow\n", extra);
                }
                Err(e) => return Err(e),
            }
        };
        let keep_alive = match parse_head(&buf[..head_len]) {
            None => return respond_close(&mut out, 400, b"bad request\n", extra),
            // A GET or HEAD has no body; one that announces a body is not skipped but refused.
            Some(r) if r.has_body => {
                return respond_close(&mut out, 400, b"request body not accepted\n", extra);
            }
            Some(r) => {
                let head_only = r.method == "HEAD";
                let answer = if r.method != "GET" && !head_only {
                    Response::text(405, "method not allowed\n")
                } else {
                    handler.get(r.target, r.accept)
                };
                respond(&mut out, answer, head_only, r.keep_alive, extra)?;
                r.keep_alive
            }
        };
        if !keep_alive {
            let _ = out.shutdown(Shutdown::Write);
            return Ok(());
        }
        buf.copy_within(used..filled, 0);
        filled -= used;
    }
}

/// Sends an error and closes the connection. What the client is still sending is read and
/// dropped for a moment first (at most [`LINGER_BYTES`] bytes, [`LINGER`] long), so that closing
/// with unread data does not reset the connection before the client has read the answer.
fn respond_close(out: &mut TcpStream, status: u16, body: &[u8], extra: &str) -> io::Result<()> {
    let answer = Response {
        status,
        mime: "text/plain",
        file: None,
        body: body.to_vec(),
    };
    respond(out, answer, false, false, extra)?;
    out.shutdown(Shutdown::Write)?;
    let until = Instant::now() + LINGER;
    let mut left = LINGER_BYTES;
    let mut sink = [0u8; 4096];
    while left > 0 {
        let wait = until.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            break;
        }
        out.set_read_timeout(Some(wait))?;
        match out.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

/// How long and how much a refused client's remaining input is drained before closing.
const LINGER: Duration = Duration::from_millis(500);
const LINGER_BYTES: usize = 256 * 1024;

/// Sends one response: the file when given (streamed, its length taken when opened), else `body`;
/// `extra` headers after the common ones.
fn respond(
    out: &mut TcpStream,
    answer: Response,
    head_only: bool,
    keep_alive: bool,
    extra: &str,
) -> io::Result<()> {
    let Response {
        status,
        mime,
        file,
        body,
    } = answer;
    let reason = match status {
        200 => "OK",
        406 => "Not Acceptable",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    let len = match &file {
        Some(f) => f.metadata()?.len(),
        None => body.len() as u64,
    };
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {mime}\r\nContent-Length: {len}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n{extra}\
         Connection: {connection}\r\n\r\n"
    );
    out.write_all(header.as_bytes())?;
    if !head_only {
        match file {
            Some(f) => {
                // Exactly the announced length, even if the file changes meanwhile.
                let sent = io::copy(&mut f.take(len), out)?;
                if sent < len {
                    return Err(io::Error::new(ErrorKind::UnexpectedEof, "file shrank"));
                }
            }
            None => out.write_all(&body)?,
        }
    }
    out.flush()
}

/// Maps a request target to a file under `root`, or `None` when it is outside `root`, hidden,
/// or not a file. `/` and folders map to their `index.html`.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    if !path.starts_with('/') {
        return None;
    }
    let mut full = root.to_path_buf();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let seg = percent_decode(seg)?;
        if seg.starts_with('.') || seg.contains(['/', '\\', '\0']) {
            return None;
        }
        full.push(seg);
    }
    if full.is_dir() {
        full.push("index.html");
    }
    // Symlinks must not lead outside the served folder.
    let real = full.canonicalize().ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

fn percent_decode(seg: &str) -> Option<String> {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = seg.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The Content-Type for a file, by extension.
fn mime_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A served folder of its own per test (tests run in parallel).
    fn tree() -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "flinch-web-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("index.html"), "<p>hi</p>").unwrap();
        std::fs::write(dir.join("pkg/a b.wasm"), b"\0asm").unwrap();
        std::fs::write(dir.join(".secret"), "x").unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn resolves_inside_root_only() {
        let root = tree();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/index.html?x=1"),
            Some(root.join("index.html"))
        );
        assert_eq!(
            resolve(&root, "/pkg/a%20b.wasm"),
            Some(root.join("pkg/a b.wasm"))
        );
        assert_eq!(resolve(&root, "/pkg/"), None);
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve(&root, "/pkg/..%2f..%2fx"), None);
        assert_eq!(resolve(&root, "/.secret"), None);
        assert_eq!(resolve(&root, "http://x/"), None);
        assert_eq!(resolve(&root, "/%zz"), None);
    }

    #[test]
    fn header_csp_is_the_page_meta_csp() {
        let page =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../www/index.html"))
                .unwrap();
        assert!(
            page.contains(&format!("content=\"{CSP}\"")),
            "www/index.html CSP differs from web.rs"
        );
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime_type(Path::new("a/b.wasm")), "application/wasm");
        assert_eq!(
            mime_type(Path::new("app.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(mime_type(Path::new("i.html")), "text/html; charset=utf-8");
        assert_eq!(mime_type(Path::new("s.css")), "text/css; charset=utf-8");
        assert_eq!(mime_type(Path::new("blob")), "application/octet-stream");
    }

    #[test]
    fn serves_over_tcp() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server_root = root.clone();
        std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            serve_connection(s, server_root.as_path(), &ServerLimits::DEFAULT).unwrap();
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /pkg/a%20b.wasm HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
        assert!(
            resp.contains("Content-Type: application/wasm\r\n"),
            "{resp}"
        );
        assert!(resp.contains("Content-Length: 4\r\n"), "{resp}");
        assert!(resp.contains("HTTP/1.1 404 Not Found\r\n"), "{resp}");
    }

    #[test]
    fn heads_end_at_a_blank_line_and_parse_as_http_1() {
        assert_eq!(
            head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nNEXT"),
            Some((24, 27))
        );
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n"), Some((14, 16)));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r"), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
        let r = parse_head(b"GET /a HTTP/1.1\r\nConnection: keep-alive, Close\r").unwrap();
        assert_eq!(
            (r.method, r.target, r.keep_alive, r.has_body),
            ("GET", "/a", false, false)
        );
        assert!(!parse_head(b"GET / HTTP/1.0").unwrap().keep_alive);
        assert!(
            parse_head(b"GET / HTTP/1.1\r\nContent-Length: 0")
                .unwrap()
                .keep_alive
        );
        assert!(
            parse_head(b"GET / HTTP/1.1\r\nContent-Length: 5")
                .unwrap()
                .has_body
        );
        assert!(
            parse_head(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked")
                .unwrap()
                .has_body
        );
        assert!(parse_head(b"GET / HTTP/2").is_none());
        assert!(parse_head(b"GET /").is_none());
        assert!(parse_head(b"GET / HTTP/1.1\r\nno colon").is_none());
        assert!(parse_head(b"\xff / HTTP/1.1").is_none());
    }

    /// Connects and returns what the server sends until it closes (or `wait` passes).
    fn read_all(c: &mut TcpStream, wait: Duration) -> (String, bool) {
        c.set_read_timeout(Some(wait)).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        let closed = loop {
            match c.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break true,
                Err(_) => break false,
            }
        };
        (String::from_utf8_lossy(&got).into_owned(), closed)
    }

    const QUICK: ServerLimits = ServerLimits {
        max_connections: 2,
        max_head_bytes: 1024,
        idle: Duration::from_millis(200),
        head: Duration::from_millis(400),
        write: Duration::from_secs(5),
    };

    #[test]
    fn idle_and_slow_connections_are_closed_on_time() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in listener.incoming().take(3) {
                let root = root.clone();
                std::thread::spawn(move || serve_connection(s.unwrap(), root.as_path(), &QUICK));
            }
        });
        // Silent: closed after the idle time, without an answer.
        let t = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.is_empty(), "{resp}");
        assert!(t.elapsed() >= Duration::from_millis(150) && t.elapsed() < Duration::from_secs(3));
        // A head dribbled a byte every 40 ms (each within the idle time): cut off once the head
        // time is up (with a 408, unless the close reset the connection before it was read).
        let t = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(40))).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 256];
        let mut closed = false;
        while !closed && t.elapsed() < Duration::from_secs(3) {
            if c.write_all(b"a").is_err() {
                closed = true;
            }
            match c.read(&mut chunk) {
                Ok(0) => closed = true,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => closed = true,
            }
        }
        let resp = String::from_utf8_lossy(&got);
        assert!(closed, "a dribbling client held the connection for 3 s");
        assert!(
            t.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t.elapsed()
        );
        assert!(
            resp.is_empty() || resp.starts_with("HTTP/1.1 408 "),
            "{resp}"
        );
        // Kept alive after a request, then idle: closed after the idle time.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let t = Instant::now();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
        assert!(resp.contains("Connection: keep-alive\r\n"), "{resp}");
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn connections_over_the_cap_get_503_and_a_freed_slot_serves_again() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let s2 = served.clone();
        let limits = ServerLimits {
            idle: Duration::from_secs(20),
            ..QUICK
        };
        std::thread::spawn(move || {
            serve(&listener, Arc::<Path>::from(root.as_path()), limits, &s2)
        });
        let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let t = Instant::now();
        while served.load(Ordering::SeqCst) < 2 {
            assert!(t.elapsed() < Duration::from_secs(10), "not served");
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut c = TcpStream::connect(addr).unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 503 "), "{resp}");
        assert!(resp.contains("Retry-After: 1\r\n"), "{resp}");
        assert_eq!(served.load(Ordering::SeqCst), 2);
        // Closing a held connection frees its slot (its thread sees end of input).
        drop(held);
        let t = Instant::now();
        loop {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let (resp, _) = read_all(&mut c, Duration::from_secs(5));
            if resp.starts_with("HTTP/1.1 200 OK\r\n") {
                assert!(resp.contains("Connection: close\r\n"), "{resp}");
                assert!(resp.ends_with("<p>hi</p>"), "{resp}");
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "{resp}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn an_oversized_head_gets_431_and_a_body_400() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in listener.incoming().take(2) {
                let root = root.clone();
                std::thread::spawn(move || serve_connection(s.unwrap(), root.as_path(), &QUICK));
            }
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let mut req = b"GET / HTTP/1.1\r\nX: ".to_vec();
        req.resize(4000, b'a');
        let _ = c.write_all(&req);
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 431 "), "{resp}");
        assert!(resp.contains("over 1024 bytes"), "{resp}");
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 400 "), "{resp}");
    }
}
