//! `record --metrics ADDR`: serves `GET /metrics` for Prometheus (docs/metrics.md).
//!
//! The counters live in `flinch_core::metrics::live`; this module only wires them: a tap on
//! the writer thread feeds them every batch of rows the recording writes (the same bytes as the
//! trace.csv, so they equal `analyze` of it), and the page server's connection code
//! (`crate::web`, with its limits on connections, head size and idle time) answers the scrapes.
use std::net::{TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use flinch_core::metrics::live::LiveFeed;
use flinch_core::metrics::{Exposition, Format, GpuLabel, LiveMetrics, LiveOptions, ZoneLabel};

use super::writer::Tap;
use crate::web::{Handler, Response, ServerLimits, serve};

/// Binds `addr` (`HOST:PORT`), before anything is sampled.
///
/// # Errors
/// `addr` is not `HOST:PORT` or does not resolve, or nothing can listen there (port in use,
/// address not on this host, a privileged port).
pub fn bind(addr: &str) -> Result<TcpListener, String> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| {
            format!("error: --metrics {addr}: not a listening address ({e}); give HOST:PORT, e.g. 127.0.0.1:9464")
        })?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some((a, e)),
        }
    }
    Err(match last {
        Some((a, e)) => format!("error: --metrics {addr}: cannot listen on {a}: {e}"),
        None => format!("error: --metrics {addr}: resolves to no address"),
    })
}

/// The state the writer's tap feeds and the server reads.
struct Shared {
    live: Mutex<LiveMetrics>,
    missed_ticks: Arc<AtomicU64>,
}

impl Handler for Shared {
    fn get(&self, target: &str, accept: Option<&str>) -> Response {
        let path = target.split(['?', '#']).next().unwrap_or("");
        if path != "/metrics" {
            return Response::text(404, "not found: the metrics are at /metrics\n");
        }
        let format = Format::for_accept(accept);
        let mut text = String::with_capacity(16 * 1024);
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.set_missed_ticks(self.missed_ticks.load(Ordering::Relaxed));
            let mut e = Exposition::new(&mut text, format);
            // Writing into a String cannot fail.
            let _ = live.write(&mut e).and_then(|()| e.finish());
        }
        Response {
            status: 200,
            mime: format.content_type(),
            file: None,
            body: text.into_bytes(),
        }
    }
}

/// Starts serving on `listener` from a thread of its own; returns the tap for the writer. The
/// thread lives as long as the process.
pub fn start(
    listener: TcpListener,
    header: &str,
    opts: LiveOptions,
    gpus: &[GpuLabel],
    zones: &[ZoneLabel],
    missed_ticks: Arc<AtomicU64>,
) -> Result<Tap, String> {
    let mut live = LiveMetrics::new(opts, gpus, zones);
    let mut feed = LiveFeed::new(zones);
    feed.write(&mut live, format!("{header}\n").as_bytes());
    let shared = Arc::new(Shared {
        live: Mutex::new(live),
        missed_ticks,
    });
    let server = shared.clone();
    std::thread::Builder::new()
        .name("flinch-metrics".into())
        .spawn(move || {
            serve(
                &listener,
                server,
                ServerLimits::DEFAULT,
                &AtomicUsize::new(0),
            )
        })
        .map_err(|e| format!("error: cannot start the metrics server thread: {e}"))?;
    Ok(Box::new(move |rows: &[u8]| {
        let mut live = shared.live.lock().unwrap_or_else(PoisonError::into_inner);
        feed.write(&mut live, rows);
    }))
}
