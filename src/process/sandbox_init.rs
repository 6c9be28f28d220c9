//! The first program inside an agent's sandbox (`Sandbox: bwrap`): this binary executed again
//! with [`SANDBOX_ARG`], bound read-only into the sandbox. It does two things bubblewrap cannot:
//!
//! - **Keeps only the environment the agent may see.** Every variable not named by the keep
//!   list (names, or prefixes ending in `*`) is dropped. The list is names only, so no secret
//!   value ever stands on a command line (`ps` shows bubblewrap's arguments to everyone).
//! - **Bridges the model's network in.** In its own network namespace the agent has only a
//!   loopback device. For each forwarded port this program listens on that port of the
//!   sandbox's loopback and carries each connection over a Unix socket (in the folder
//!   automaton binds in) to automaton outside, which connects on: the local model server's
//!   port, or, for the proxy port, the host the agent asks for if it is allowed.
//!
//! Then it starts the agent's `sh -c` command line, waits for it and exits as it did. It dies
//! with the agent's process group like the agent (a stop signal reaches both), and bubblewrap
//! ends everything in the sandbox when its first process ends.

use std::ffi::OsString;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The hidden first argument that turns the binary into the sandbox's first program.
pub const SANDBOX_ARG: &str = "__sandbox-init";

/// Where automaton binds the folder of its bridge sockets inside the sandbox.
pub const NET_DIR: &str = "/run/automaton/net";

/// The Unix socket (in [`NET_DIR`] or its outside twin) that carries connections to `port`.
pub fn socket_name(port: u16) -> String {
    format!("{port}.sock")
}

/// Whether the variable `name` passes a keep list of names and `PREFIX*` patterns.
pub fn kept(name: &str, keep: &[&str]) -> bool {
    keep.iter().any(|k| match k.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *k,
    })
}

/// The arguments after [`SANDBOX_ARG`]: `<keep> <forwards> <proxy> <command>`: the keep list
/// (comma-separated), the forwarded ports (comma-separated, or `-`), the proxy port (or `-`),
/// and the agent's command line.
pub fn main(args: &[String]) -> i32 {
    let [keep, forwards, proxy, command] = args else {
        eprintln!("usage: automaton {SANDBOX_ARG} <keep> <forwards> <proxy> <command>");
        return 2;
    };
    let ports = |list: &str| -> Vec<u16> {
        list.split(',')
            .filter_map(|p| p.trim().parse::<u16>().ok())
            .collect()
    };
    let proxy = ports(proxy).first().copied();
    let mut bridged = ports(forwards);
    bridged.extend(proxy);
    for port in bridged {
        if let Err(e) = bridge(port, &Path::new(NET_DIR).join(socket_name(port))) {
            eprintln!("automaton sandbox: cannot listen on port {port} inside the sandbox: {e}");
            return 126;
        }
    }
    let keep: Vec<&str> = keep.split(',').filter(|k| !k.is_empty()).collect();
    let mut agent = Command::new("/bin/sh");
    agent.arg("-c").arg(command).env_clear();
    agent.envs(
        std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(|n| kept(n, &keep))),
    );
    agent.env("TMPDIR", "/tmp");
    if let Some(port) = proxy {
        let url = OsString::from(format!("http://127.0.0.1:{port}"));
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            agent.env(name, &url);
        }
        // Loopback is the forwarded ports, reached directly.
        for name in ["NO_PROXY", "no_proxy"] {
            agent.env(name, "localhost,127.0.0.1,::1");
        }
    }
    match agent.status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            super::shim::exit_like(status.into_raw())
        }
        Err(e) => {
            eprintln!("automaton sandbox: cannot start /bin/sh: {e}");
            127
        }
    }
}

/// Listen on `port` of the sandbox's loopback (IPv4 and, where there is one, IPv6) and carry
/// every connection over the Unix socket `socket`.
fn bridge(port: u16, socket: &Path) -> io::Result<()> {
    let v4 = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    let v6 = TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, port))).ok();
    for listener in std::iter::once(v4).chain(v6) {
        let socket = socket.to_path_buf();
        std::thread::spawn(move || accept_loop(listener, socket));
    }
    Ok(())
}

fn accept_loop(listener: TcpListener, socket: PathBuf) {
    for conn in listener.incoming().flatten() {
        let socket = socket.clone();
        std::thread::spawn(move || {
            // Outside gone: the connection just closes, as a refused one would.
            if let Ok(out) = UnixStream::connect(&socket) {
                let _ = splice_tcp_unix(conn, out);
            }
        });
    }
}

/// Copy both ways until each side has closed its end (the bridge inside and automaton's end
/// outside both carry a TCP connection over a Unix socket).
pub fn splice_tcp_unix(tcp: TcpStream, unix: UnixStream) -> io::Result<()> {
    let (mut tcp_r, mut unix_w) = (tcp.try_clone()?, unix.try_clone()?);
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut tcp_r, &mut unix_w);
        let _ = unix_w.shutdown(std::net::Shutdown::Write);
    });
    let (mut unix_r, mut tcp_w) = (unix, tcp);
    let _ = io::copy(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_lists_take_names_and_prefixes() {
        let keep = ["PATH", "AUTOMATON_*"];
        assert!(kept("PATH", &keep));
        assert!(kept("AUTOMATON_TASK", &keep));
        assert!(!kept("PATHS", &keep));
        assert!(!kept("AWS_SECRET_ACCESS_KEY", &keep));
    }
}
