//! `flinch-trace web [--port P] [--dir DIR]`: serves the static analysis page on localhost.
//!
//! A deliberately tiny static file server: `GET`/`HEAD` only, files under `DIR` only (no `..`,
//! no symlink escape), the right MIME types (`.wasm` as `application/wasm`, so browsers use the
//! fast streaming compile), `Cache-Control: no-store`, bound to 127.0.0.1. Everything is analyzed
//! in the browser: the server only hands out the page's assets.
//!
//! HTTP/1.1 is hyper's (a well-kept parser and connection state machine), on one thread: a
//! single-threaded tokio runtime serves every connection as a task, so hundreds of idle
//! connections cost sockets and a few KiB each and never keep a new client waiting.
//!
//! Memory is bounded whatever clients do ([`ServerLimits`]): at most `max_connections` are served
//! at once (beyond that a connection gets `503` and is closed), a request head larger than
//! `max_head_bytes` gets `431`, a connection that has not sent a complete head within `head` of
//! opening or of its previous answer is closed, an answer the client does not take within
//! `write` ends the connection, and an HTTP/1.0 request is answered and closed. Files are
//! streamed, never read whole.
//!
//! The connection handling is shared: what a `GET` answers comes from a [`Handler`] (the page's
//! folder here; `record --metrics` serves its metrics through the same code).
use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

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

/// What one server may spend, whatever its clients send.
#[derive(Clone, Copy, Debug)]
pub struct ServerLimits {
    /// Connections served at once; one more is answered `503` and closed.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes (at least 8 KiB); larger gets
    /// `431`.
    pub max_head_bytes: usize,
    /// How long a connection may go without a complete request head, from its opening or from
    /// its previous answer (idle keep-alive time and a slow head alike).
    pub head: Duration,
    /// How long a write of a response may make no progress.
    pub write: Duration,
}

impl ServerLimits {
    /// The limits of `flinch-trace web` and `record --metrics`: a browser opens about 6
    /// connections per host; the cap leaves room for many idle ones (a few KiB each).
    pub const DEFAULT: ServerLimits = ServerLimits {
        max_connections: 1024,
        max_head_bytes: 16 * 1024,
        head: Duration::from_secs(5),
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
    /// Folder holding the page (build its wasm first with scripts/dev/build-web.sh).
    #[arg(long, default_value = "www")]
    dir: PathBuf,
    /// Testing seam: connections served at once (the rest get 503).
    #[arg(long, hide = true, default_value_t = ServerLimits::DEFAULT.max_connections)]
    max_connections: usize,
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
            "web: warning: {} has no pkg/ (the wasm build); run scripts/dev/build-web.sh",
            root.display()
        );
    }
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .map_err(|e| format!("web: cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let addr = listener.local_addr().map_err(|e| format!("web: {e}"))?;
    println!("serving {} at http://{addr}/", root.display());
    io::stdout().flush().ok();
    let limits = ServerLimits {
        max_connections: args.max_connections.max(1),
        ..ServerLimits::DEFAULT
    };
    serve(
        &listener,
        Arc::<Path>::from(root.as_path()),
        limits,
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

/// A connection being served: whether its client has sent anything, and its task.
struct Open {
    heard: Arc<AtomicBool>,
    task: tokio::task::AbortHandle,
}

/// Accepts connections until the process ends: each one is served by a task of one
/// single-threaded runtime (an idle connection costs a socket and a few KiB, no thread). At the
/// cap, a new connection closes the oldest one whose client has sent nothing yet (so silent
/// connections can never lock new clients out); when every one has spoken, the new one gets
/// `503`. `served` counts the connections ever handed to a task (for tests).
pub fn serve<H: Handler + ?Sized>(
    listener: &TcpListener,
    handler: Arc<H>,
    limits: ServerLimits,
    served: &AtomicUsize,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("web: cannot start the server's runtime: {e}");
            return;
        }
    };
    let listener = match listener
        .try_clone()
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("web: cannot use the listening socket: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("web: cannot use the listening socket: {e}");
                return;
            }
        };
        let mut open: VecDeque<Open> = VecDeque::new();
        let cap = limits.max_connections.min(descriptor_room()).max(1);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.head)
            .max_buf_size(limits.max_head_bytes.max(MIN_HEAD_BYTES))
            .title_case_headers(true)
            .half_close(false);
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(_) => {
                    // EMFILE and the like: give the process a moment rather than spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            open.retain(|c| !c.task.is_finished());
            if open.len() >= cap {
                match open.iter().position(|c| !c.heard.load(Ordering::Relaxed)) {
                    Some(i) => {
                        if let Some(c) = open.remove(i) {
                            c.task.abort();
                        }
                    }
                    None => {
                        if let Ok(s) = stream.into_std() {
                            refuse(s);
                        }
                        continue;
                    }
                }
            }
            let heard = Arc::new(AtomicBool::new(false));
            let handler = handler.clone();
            let io =
                hyper_util::rt::TokioIo::new(Watched::new(stream, limits.write, heard.clone()));
            let conn = http.serve_connection(
                io,
                hyper::service::service_fn(move |req| {
                    let answer = answer(&*handler, &req);
                    async move { Ok::<_, std::convert::Infallible>(answer) }
                }),
            );
            let task = tokio::spawn(async move {
                // A client that disconnects, stalls or sends garbage is its own business.
                let _ = conn.await;
            });
            open.push_back(Open {
                heard,
                task: task.abort_handle(),
            });
            served.fetch_add(1, Ordering::SeqCst);
        }
    });
}

/// Descriptors this process may still open, less a margin for files being served: the
/// connection cap never lets `accept` fail for lack of descriptors (a failing `accept` would
/// leave new clients waiting in the backlog instead of answered).
fn descriptor_room() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return usize::MAX;
    }
    usize::try_from(lim.rlim_cur)
        .unwrap_or(usize::MAX)
        .saturating_sub(DESCRIPTOR_MARGIN)
}

/// Descriptors kept free of connections (the listener, files being streamed, the runtime's).
const DESCRIPTOR_MARGIN: usize = 64;

/// The smallest read buffer hyper accepts; a head limit below it is raised to it.
const MIN_HEAD_BYTES: usize = 8192;

/// How much of a file one body frame carries.
const FILE_CHUNK_BYTES: u64 = 64 * 1024;

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

/// The answer to one request: the handler's for a `GET` or `HEAD` without a body, else 405 or
/// 400. hyper has already refused what is not an HTTP/1.x head within the limits.
fn answer<H: Handler + ?Sized, B>(handler: &H, req: &hyper::Request<B>) -> hyper::Response<Body> {
    use hyper::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
    let headers = req.headers();
    let tokens = |name| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
    };
    // HTTP/1.0 connections are answered once and closed: no idle keep-alive to hold them.
    let keep_alive = req.version() == hyper::Version::HTTP_11
        && !tokens(CONNECTION).any(|t| t.eq_ignore_ascii_case("close"));
    // A GET or HEAD has no body; one that announces a body is not skipped but refused.
    let has_body = headers.contains_key(TRANSFER_ENCODING)
        || headers.get_all(CONTENT_LENGTH).iter().any(|v| v != "0");
    let head_only = req.method() == hyper::Method::HEAD;
    let extra = handler.headers();
    if has_body {
        let a = Response::text(400, "request body not accepted\n");
        return build(a, false, false, extra);
    }
    if req.method() != hyper::Method::GET && !head_only {
        let a = Response::text(405, "method not allowed\n");
        return build(a, false, keep_alive, extra);
    }
    // The target as sent: an absolute-form target keeps its scheme, so it resolves to no file.
    let target = match req.uri().scheme() {
        Some(_) => req.uri().to_string(),
        None => req
            .uri()
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.as_str().to_string()),
    };
    let accept = headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    build(handler.get(&target, accept), head_only, keep_alive, extra)
}

/// One response: the file when given (streamed, its length taken when opened), else `body`;
/// `extra` header lines after the common ones.
fn build(
    answer: Response,
    head_only: bool,
    keep_alive: bool,
    extra: &str,
) -> hyper::Response<Body> {
    let Response {
        status,
        mime,
        file,
        body,
    } = answer;
    let (len, body) = match file {
        Some(f) => match f.metadata() {
            Ok(m) => (
                m.len(),
                Body::File {
                    file: f,
                    left: m.len(),
                },
            ),
            Err(_) => {
                return build(
                    Response::text(404, "not found\n"),
                    head_only,
                    keep_alive,
                    extra,
                );
            }
        },
        None => (body.len() as u64, Body::Bytes(Some(body.into()))),
    };
    let mut b = hyper::Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, mime)
        .header(hyper::header::CONTENT_LENGTH, len)
        .header(hyper::header::CACHE_CONTROL, "no-store")
        .header("X-Content-Type-Options", "nosniff");
    for line in extra.split("\r\n") {
        if let Some((name, value)) = line.split_once(':') {
            b = b.header(name.trim(), value.trim());
        }
    }
    let b = b.header(
        hyper::header::CONNECTION,
        if keep_alive { "keep-alive" } else { "close" },
    );
    let body = if head_only { Body::Bytes(None) } else { body };
    b.body(body).unwrap_or_else(|_| {
        let mut r = hyper::Response::new(Body::Bytes(None));
        *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// A response body: bytes in memory, or a file streamed in chunks of exactly the length
/// announced when it was opened (a file that shrinks meanwhile ends the connection).
pub enum Body {
    /// In memory (`None` once sent, or for a `HEAD`).
    Bytes(Option<hyper::body::Bytes>),
    /// A file and what is left to send of it.
    File {
        /// The open file.
        file: File,
        /// Bytes still to send.
        left: u64,
    },
}

impl hyper::body::Body for Body {
    type Data = hyper::body::Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        match self.get_mut() {
            Body::Bytes(b) => Poll::Ready(
                b.take()
                    .filter(|b| !b.is_empty())
                    .map(|b| Ok(hyper::body::Frame::data(b))),
            ),
            Body::File { file, left } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                // A local page's files come from the page cache: read in place, in chunks.
                let mut buf = vec![0u8; (*left).min(FILE_CHUNK_BYTES) as usize];
                loop {
                    return Poll::Ready(Some(match file.read(&mut buf) {
                        Ok(0) => Err(io::Error::new(ErrorKind::UnexpectedEof, "file shrank")),
                        Ok(n) => {
                            buf.truncate(n);
                            *left -= n as u64;
                            Ok(hyper::body::Frame::data(buf.into()))
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => Err(e),
                    }));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Bytes(b) => b.as_ref().is_none_or(|b| b.is_empty()),
            Body::File { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(match self {
            Body::Bytes(b) => b.as_ref().map_or(0, |b| b.len() as u64),
            Body::File { left, .. } => *left,
        })
    }
}

/// A socket whose writes fail after `limit` without progress (a client that stops reading its
/// answer cannot hold a connection), and which notes whether its client has sent anything.
struct Watched<T> {
    io: T,
    limit: Duration,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    heard: Arc<AtomicBool>,
}

impl<T> Watched<T> {
    fn new(io: T, limit: Duration, heard: Arc<AtomicBool>) -> Self {
        Watched {
            io,
            limit,
            deadline: None,
            heard,
        }
    }

    /// After a write that made no progress: pending until the deadline, then an error.
    fn stalled<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let limit = self.limit;
        let d = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match d.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                ErrorKind::TimedOut,
                "the client did not take the answer in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<R>(&mut self, r: io::Result<R>) -> Poll<io::Result<R>> {
        self.deadline = None;
        Poll::Ready(r)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.heard.store(true, Ordering::Relaxed);
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(r) => this.progressed(r),
            Poll::Pending => this.stalled(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => this.progressed(r),
            Poll::Pending => this.stalled(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Ready(r) => this.progressed(r),
            Poll::Pending => this.stalled(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
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
    use std::time::Instant;

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
        spawn_server(listener, root.clone(), ServerLimits::DEFAULT);
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
    fn requests_are_answered_by_method_body_and_version() {
        let root = tree();
        let req = |m: &str, v: hyper::Version, h: &[(&str, &str)]| {
            let mut b = hyper::Request::builder().method(m).uri("/").version(v);
            for (k, val) in h {
                b = b.header(*k, *val);
            }
            b.body(()).unwrap()
        };
        let conn = |r: &hyper::Response<Body>| {
            r.headers()[hyper::header::CONNECTION]
                .to_str()
                .unwrap()
                .to_string()
        };
        let v11 = hyper::Version::HTTP_11;
        let r = answer(root.as_path(), &req("GET", v11, &[]));
        assert_eq!(
            (r.status().as_u16(), conn(&r).as_str()),
            (200, "keep-alive")
        );
        assert_eq!(r.headers()[hyper::header::CONTENT_LENGTH], "9");
        assert!(r.headers().contains_key("content-security-policy"));
        let r = answer(
            root.as_path(),
            &req("GET", v11, &[("Connection", "keep-alive, Close")]),
        );
        assert_eq!(conn(&r), "close");
        let r = answer(root.as_path(), &req("GET", hyper::Version::HTTP_10, &[]));
        assert_eq!((r.status().as_u16(), conn(&r).as_str()), (200, "close"));
        let r = answer(root.as_path(), &req("HEAD", v11, &[]));
        assert!(r.status() == 200 && hyper::body::Body::is_end_stream(r.body()));
        assert_eq!(r.headers()[hyper::header::CONTENT_LENGTH], "9");
        let r = answer(root.as_path(), &req("POST", v11, &[]));
        assert_eq!(r.status(), 405);
        let r = answer(root.as_path(), &req("GET", v11, &[("Content-Length", "0")]));
        assert_eq!(r.status(), 200);
        for h in [("Content-Length", "5"), ("Transfer-Encoding", "chunked")] {
            let r = answer(root.as_path(), &req("GET", v11, &[h]));
            assert_eq!((r.status().as_u16(), conn(&r).as_str()), (400, "close"));
        }
    }

    /// Returns what the server sends until it closes (or `wait` passes).
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
        max_head_bytes: 8192,
        head: Duration::from_millis(300),
        write: Duration::from_secs(5),
    };

    fn spawn_server(listener: TcpListener, root: PathBuf, limits: ServerLimits) {
        std::thread::spawn(move || {
            serve(
                &listener,
                Arc::<Path>::from(root.as_path()),
                limits,
                &AtomicUsize::new(0),
            )
        });
    }

    #[test]
    fn idle_and_slow_connections_are_closed_on_time() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        spawn_server(listener, root, QUICK);
        // Silent: closed after the head time, without an answer.
        let t = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.is_empty(), "{resp}");
        assert!(t.elapsed() >= Duration::from_millis(150) && t.elapsed() < Duration::from_secs(3));
        // A head dribbled a byte every 40 ms: cut off once the head time is up (with a 408, or
        // closed without an answer).
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
        // Kept alive after a request, then idle: closed after the head time.
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
            head: Duration::from_secs(20),
            ..QUICK
        };
        std::thread::spawn(move || {
            serve(&listener, Arc::<Path>::from(root.as_path()), limits, &s2)
        });
        // Two clients that have started a request (silent ones would be closed for newcomers).
        let held: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
                c
            })
            .collect();
        let t = Instant::now();
        while served.load(Ordering::SeqCst) < 2 {
            assert!(t.elapsed() < Duration::from_secs(10), "not served");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
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
            // An HTTP/1.0 request is answered in HTTP/1.0.
            if resp.starts_with("HTTP/1.0 200 OK\r\n") {
                assert!(resp.contains("Connection: close\r\n"), "{resp}");
                assert!(resp.ends_with("<p>hi</p>"), "{resp}");
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "{resp}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn at_the_cap_the_oldest_silent_connection_makes_room_for_a_new_client() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = ServerLimits {
            head: Duration::from_secs(20),
            ..QUICK
        };
        spawn_server(listener, root, limits);
        let mut oldest = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut speaking = TcpStream::connect(addr).unwrap();
        speaking.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // The cap is 2: the silent one is closed for the newcomer, which is answered.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
        let (resp, closed) = read_all(&mut oldest, Duration::from_secs(5));
        assert!(closed && resp.is_empty(), "{resp}");
        // The one that had spoken is still served.
        speaking.write_all(b"Connection: close\r\n\r\n").unwrap();
        let (resp, closed) = read_all(&mut speaking, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 200 OK\r\n"), "{resp}");
    }

    #[test]
    fn an_oversized_head_gets_431_and_a_body_400() {
        let root = tree();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        spawn_server(listener, root, QUICK);
        let mut c = TcpStream::connect(addr).unwrap();
        let mut req = b"GET / HTTP/1.1\r\nX: ".to_vec();
        req.resize(12_000, b'a');
        let _ = c.write_all(&req);
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 431 "), "{resp}");
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap();
        let (resp, closed) = read_all(&mut c, Duration::from_secs(5));
        assert!(closed && resp.starts_with("HTTP/1.1 400 "), "{resp}");
    }
}
