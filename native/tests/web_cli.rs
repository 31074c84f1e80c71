//! `flinch-trace web` under clients that misbehave, on loopback: the server keeps a bounded number
//! of connections (the rest get 503), refuses an oversized request head with 431, and closes
//! HTTP/1.0 connections after their answer instead of holding them idle.
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_flinch-trace");

/// The server as a child process, killed (by its own pid) when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn server(name: &str) -> Server {
    server_with(name, &[])
}

fn server_with(name: &str, extra: &[&str]) -> Server {
    let dir = std::env::temp_dir().join(format!("flinch-web-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("index.html"), "<p>hi</p>").unwrap();
    let mut child = Command::new(BIN)
        .args(["web", "--port", "0", "--dir"])
        .arg(&dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.split("http://").nth(1).expect(&line);
    let addr = url.trim().trim_end_matches('/').parse().unwrap();
    Server { child, addr, dir }
}

/// Everything the server sends until it closes the connection, or `None` if it is still open
/// after `wait`.
fn until_closed(c: &mut TcpStream, wait: Duration) -> Option<String> {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = wait.saturating_sub(t.elapsed());
        if left.is_zero() {
            return None;
        }
        c.set_read_timeout(Some(left)).unwrap();
        match c.read(&mut chunk) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&got).into_owned());
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Regression: each connection had its own thread, without limit (1,500 idle connections, 1,501
/// threads). Beyond the cap (64 here, by the hidden testing option), a connection gets 503 at
/// once and is closed.
#[test]
fn connections_beyond_the_cap_get_503() {
    let s = server_with("cap", &["--max-connections", "64"]);
    // 64 clients that have begun a request (silent ones would be closed to make room).
    let held: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            c
        })
        .collect();
    // The 64 are being served; a few more are each refused at once.
    std::thread::sleep(Duration::from_millis(300));
    let mut refused = 0;
    for _ in 0..8 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        match until_closed(&mut c, Duration::from_secs(3)) {
            Some(r) if r.starts_with("HTTP/1.1 503 Service Unavailable\r\n") => refused += 1,
            other => panic!("not refused: {other:?}"),
        }
    }
    assert_eq!(refused, 8);
    // The held ones still get their pages.
    let mut c = held.into_iter().next().unwrap();
    c.write_all(b"Connection: close\r\n\r\n").unwrap();
    let r = until_closed(&mut c, Duration::from_secs(5)).expect("no answer");
    assert!(
        r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("<p>hi</p>"),
        "{r}"
    );
}

/// Regression: a request head was read line by line without limit (a 300 MiB line, 310 MB of
/// memory). A head over 16 KiB gets 431 and the connection is closed.
#[test]
fn an_oversized_request_head_gets_431() {
    let s = server("head");
    let mut c = TcpStream::connect(s.addr).unwrap();
    let mut w = c.try_clone().unwrap();
    // Keep sending one endless header line; the server must answer without reading it all.
    let sender = std::thread::spawn(move || {
        let _ = w.write_all(b"GET / HTTP/1.1\r\nX-Long: ");
        let chunk = [b'a'; 16 * 1024];
        for _ in 0..(64 * 64) {
            if w.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let r = until_closed(&mut c, Duration::from_secs(10)).expect("still open");
    assert!(
        r.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{r:?}"
    );
    drop(c);
    sender.join().unwrap();
}

/// Regression: an HTTP/1.0 connection was kept open (idle up to 30 s) after its answer.
#[test]
fn http_1_0_is_answered_and_closed() {
    let s = server("http10");
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").unwrap();
    let r = until_closed(&mut c, Duration::from_secs(3)).expect("kept open");
    // Answered in the request's version (hyper speaks HTTP/1.0 to an HTTP/1.0 client).
    assert!(r.starts_with("HTTP/1.0 200 OK\r\n"), "{r}");
    assert!(r.contains("Connection: close\r\n"), "{r}");
    assert!(r.ends_with("<p>hi</p>"), "{r}");
    // HTTP/1.1 keeps the connection for a pipelined second request.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(b"HEAD / HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = until_closed(&mut c, Duration::from_secs(3)).expect("kept open");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("\r\n\r\nHTTP/1.1 404 Not Found\r\n"), "{r}");
}

/// Regression: 64 connection threads, then 503 for everyone, so 300 idle connections (a browser's
/// leftovers, a port scanner) locked every new client out for as long as they stayed open. With
/// 300 idle connections open, a new client still gets its page within 1 s, and so does a
/// kept-alive one among them.
#[test]
fn three_hundred_idle_connections_leave_new_clients_answered() {
    let s = server("idle300");
    let held: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    // Let the server accept them all.
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let t = Instant::now();
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let r = until_closed(&mut c, Duration::from_secs(1)).expect("no answer within 1 s");
        assert!(
            r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("<p>hi</p>"),
            "{r}"
        );
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
    let mut c = held.into_iter().nth(150).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = until_closed(&mut c, Duration::from_secs(1)).expect("no answer within 1 s");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
}
