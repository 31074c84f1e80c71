//! `flinch-trace web [--port P] [--dir DIR]`: serves the static analysis page on localhost.
//!
//! A deliberately tiny static file server: `GET`/`HEAD` only, files under `DIR` only (no `..`,
//! no symlink escape), the right MIME types (`.wasm` as `application/wasm`, so browsers use the
//! fast streaming compile), `Cache-Control: no-store`, one thread per connection, bound to
//! 127.0.0.1. Everything is analyzed in the browser: the server only hands out the page's assets.
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::CmdResult;

/// The same policy as the page's meta tag, also sent as a header so that it covers the worker
/// script too (a worker does not inherit its page's meta CSP). `connect-src 'self'` is needed for
/// the wasm fetch; nothing can connect elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
                   connect-src 'self'; style-src 'self'; img-src 'self' data: blob:; base-uri 'none'; \
                   form-action 'none'";

/// Arguments of `flinch-trace web`.
#[derive(clap::Args)]
pub struct Args {
    /// Port on 127.0.0.1 (0 picks a free one; the URL is printed on stdout).
    #[arg(long, default_value_t = 8000)]
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
        return Err(format!("web: {} has no index.html", root.display()));
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
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            // A client that disconnects mid-response is its own business.
            let _ = serve_connection(stream, &root);
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves requests on one connection (keep-alive) until the client closes it.
fn serve_connection(stream: TcpStream, root: &Path) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut keep_alive = true;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let h = header.trim_end();
            if h.is_empty() {
                break;
            }
            if h.to_ascii_lowercase().starts_with("connection:") && h.ends_with("close") {
                keep_alive = false;
            }
        }
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let head_only = method == "HEAD";
        if method != "GET" && !head_only {
            respond(
                &mut out,
                405,
                "text/plain",
                b"method not allowed\n",
                head_only,
            )?;
        } else {
            match resolve(root, target) {
                Some(path) => match read_file(&path) {
                    Ok(body) => respond(&mut out, 200, mime_type(&path), &body, head_only)?,
                    Err(_) => respond(&mut out, 404, "text/plain", b"not found\n", head_only)?,
                },
                None => respond(&mut out, 404, "text/plain", b"not found\n", head_only)?,
            }
        }
        if !keep_alive {
            return Ok(());
        }
    }
}

fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    File::open(path)?.read_to_end(&mut body)?;
    Ok(body)
}

fn respond(
    out: &mut TcpStream,
    status: u16,
    mime: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {mime}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: {CSP}\r\nReferrer-Policy: no-referrer\r\n\r\n",
        body.len()
    );
    out.write_all(header.as_bytes())?;
    if !head_only {
        out.write_all(body)?;
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

    fn tree() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("flinch-web-{}", std::process::id()));
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
            serve_connection(s, &server_root).unwrap();
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
}
