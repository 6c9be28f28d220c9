//! `Network: model`: automaton's end of a sandboxed agent's network, for one phase. Inside
//! its network namespace the agent has only loopback; the sandbox's first program
//! ([`crate::process::sandbox_init`]) carries each connection it accepts there over a Unix
//! socket in [`Egress::dir`] to this side, which connects on:
//!
//! - a local model server (an allowed loopback `host:port`, as Ollama or llama.cpp serve):
//!   the same port inside and out, so the agent's configuration works unchanged;
//! - the proxy port (the agent gets `HTTPS_PROXY`/`HTTP_PROXY`): an HTTP proxy that lets a
//!   `CONNECT host:port` (or a plain `GET http://host/…`) through to an allowed host only and
//!   answers 403 to every other one, counting each refused host for the phase's log and
//!   journal.
//!
//! A program that ignores the proxy settings reaches nothing: there is no route out.

use crate::process::sandbox_init::{socket_name, splice_tcp_unix};
use crate::settings::value::HostPort;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The port of the proxy inside the sandbox (its own loopback: nothing else listens there).
const PROXY_PORT: u16 = 3128;
/// The longest request head the proxy reads before it answers 400.
const MAX_HEAD: usize = 16 * 1024;

/// Refused hosts of one phase, with how many times each was asked for.
type Refused = Arc<Mutex<BTreeMap<String, u32>>>;

/// The bridge of one phase: listening until [`Egress::finish`].
pub struct Egress {
    dir: tempfile::TempDir,
    forwarded: Vec<u16>,
    proxy: bool,
    stop: Arc<AtomicBool>,
    acceptors: Vec<(PathBuf, JoinHandle<()>)>,
    refused: Refused,
}

impl Egress {
    /// Listen for the endpoints `allowed`: each loopback one forwarded on its port, every
    /// other one through the proxy.
    pub fn start(allowed: &[HostPort]) -> io::Result<Egress> {
        // A short path: a Unix socket's path must fit in 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("automaton-net-")
            .tempdir_in("/tmp")?;
        let stop = Arc::new(AtomicBool::new(false));
        let refused: Refused = Arc::default();
        let mut forwarded: Vec<u16> = allowed
            .iter()
            .filter(|h| h.is_loopback())
            .map(|h| h.port)
            .collect();
        forwarded.sort_unstable();
        forwarded.dedup();
        let remote: Arc<Vec<HostPort>> = Arc::new(
            allowed
                .iter()
                .filter(|h| !h.is_loopback())
                .cloned()
                .collect(),
        );
        let proxy = !remote.is_empty() && !forwarded.contains(&PROXY_PORT);
        let mut acceptors = Vec::new();
        for &port in &forwarded {
            let path = dir.path().join(socket_name(port));
            let listener = UnixListener::bind(&path)?;
            let stop = stop.clone();
            let handle = std::thread::spawn(move || {
                serve(listener, &stop, move |conn| {
                    if let Ok(tcp) = TcpStream::connect(("127.0.0.1", port)) {
                        let _ = splice_tcp_unix(tcp, conn);
                    }
                })
            });
            acceptors.push((path, handle));
        }
        if proxy {
            let path = dir.path().join(socket_name(PROXY_PORT));
            let listener = UnixListener::bind(&path)?;
            let (stop, refused) = (stop.clone(), refused.clone());
            let handle = std::thread::spawn(move || {
                serve(listener, &stop.clone(), move |conn| {
                    let _ = proxy_one(conn, &remote, &refused);
                })
            });
            acceptors.push((path, handle));
        }
        Ok(Egress {
            dir,
            forwarded,
            proxy,
            stop,
            acceptors,
            refused,
        })
    }

    /// The folder of the sockets, bound into the sandbox.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn forwarded_ports(&self) -> Vec<u16> {
        self.forwarded.clone()
    }

    /// The proxy's port inside the sandbox, when some allowed host is not on loopback.
    pub fn proxy_port(&self) -> Option<u16> {
        self.proxy.then_some(PROXY_PORT)
    }

    /// Stop listening (connections still open end with the agent) and say which hosts were
    /// refused, how many times each.
    pub fn finish(self) -> Vec<(String, u32)> {
        self.stop.store(true, Ordering::SeqCst);
        for (path, handle) in self.acceptors {
            // Wake the blocked accept so it sees the stop.
            let _ = UnixStream::connect(&path);
            let _ = handle.join();
        }
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        refused.iter().map(|(h, n)| (h.clone(), *n)).collect()
    }
}

fn serve(
    listener: UnixListener,
    stop: &AtomicBool,
    handle: impl Fn(UnixStream) + Clone + Send + 'static,
) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(conn) = conn {
            let handle = handle.clone();
            std::thread::spawn(move || handle(conn));
        }
    }
}

/// One proxied connection: read the request head, let an allowed host through, refuse the rest.
fn proxy_one(conn: UnixStream, allowed: &[HostPort], refused: &Refused) -> io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut head = Vec::new();
    loop {
        let before = head.len();
        if reader.read_until(b'\n', &mut head)? == 0 || head.len() > MAX_HEAD {
            return answer(&conn, "400 Bad Request", "no complete request head");
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let tunnel = method.eq_ignore_ascii_case("CONNECT");
    let wanted = match tunnel {
        true => HostPort::parse(target).ok(),
        false => HostPort::from_url(target, 80),
    };
    let Some(wanted) = wanted else {
        return answer(&conn, "400 Bad Request", "not a proxy request");
    };
    if !allowed.contains(&wanted) {
        *refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(wanted.to_string())
            .or_insert(0) += 1;
        return answer(
            &conn,
            "403 Forbidden",
            &format!(
                "automaton's sandbox does not let the agent reach {wanted} (`Network allow` adds hosts)"
            ),
        );
    }
    let Some(upstream) = connect(&wanted) else {
        return answer(
            &conn,
            "502 Bad Gateway",
            &format!("cannot connect to {wanted}"),
        );
    };
    let mut upstream_w = upstream.try_clone()?;
    match tunnel {
        true => (&conn).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?,
        false => upstream_w.write_all(&head)?,
    }
    // What the client sent after its head, already read into the buffer.
    upstream_w.write_all(reader.buffer())?;
    splice_tcp_unix(upstream, conn)
}

fn connect(to: &HostPort) -> Option<TcpStream> {
    let addrs = (to.host.as_str(), to.port).to_socket_addrs().ok()?;
    addrs
        .into_iter()
        .find_map(|a| TcpStream::connect_timeout(&a, Duration::from_secs(30)).ok())
}

fn answer(mut conn: &UnixStream, status: &str, why: &str) -> io::Result<()> {
    let body = format!("{why}\n");
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
