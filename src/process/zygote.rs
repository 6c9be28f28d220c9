//! A fork server for watchdogs: one small process, started once per automaton, that forks a
//! [`super::shim`] for each agent instead of automaton executing its own 7 MB binary again.
//!
//! Executing a dynamic binary costs about a millisecond of CPU here (the loader, relocations,
//! libc's CPU probes, which trap to the hypervisor in a VM); a fork of a process that has
//! done all that already costs a tenth. The watchdog it forks behaves as the re-executed one
//! does (the same [`super::shim::watch`]): it leads the agent's process group and stops
//! everything when the control pipe closes. It records itself: it writes its own line into
//! the pid file before it starts the agent, where an executed watchdog waits for automaton to
//! write it and send the go byte (two wake-ups fewer on every agent's start).
//!
//! - **Protocol.** A `SOCK_SEQPACKET` pair: automaton sends one message per agent, the
//!   watchdog's grace, working folder, command, pid file, the pid file's owner part and the
//!   environment (NUL-separated) with five descriptors (stdin, stdout, stderr, the control
//!   pipe's read end, a status pipe's write end); the server answers with the watchdog's pid,
//!   or a negative errno. The watchdog starts nothing until the server, having its pidfd,
//!   writes a byte on a pipe of their own.
//! - **Exit status.** The watchdog writes its agent's wait status into the status pipe itself,
//!   once nothing is left below it (no child: as the subreaper it would be the parent of any
//!   descendant's orphan), so automaton goes on without waiting for the watchdog to be
//!   reaped. One that left a process behind reports too ([`BY_WATCHDOG_LEFT_SOME`]): its
//!   status is the agent's, and automaton stops and waits for the group as for any other
//!   leader. The watchdog is the server's child, not automaton's: the server reaps it
//!   (watching its pidfd) and writes that wait status too, which counts only when it comes
//!   first (a killed watchdog). Each report is one 8-byte write (atomic on a pipe): who
//!   reports, then the raw status.
//! - **Lifetime.** The server exits when automaton's end of the socket closes (even by
//!   SIGKILL); its watchdogs then see their control pipes close and stop their agents.
//! - **Fallback.** A server that cannot be started or reached is off for the rest of the run;
//!   a request it declines (it cannot fork, the folder is missing) falls back for that agent
//!   only. Either way the watchdog is then executed as before.

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::ffi::{OsStr, OsString};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The hidden first argument that turns the binary into the fork server.
pub const ZYGOTE_ARG: &str = "__agent-zygote";

/// Largest request: the environment travels with every agent.
const MAX_REQUEST: usize = 256 * 1024;

/// The descriptors a request carries, in order.
const FDS: usize = 5;

/// A watchdog forked by the server: its pid, and the pipe its wait status arrives on.
#[derive(Debug)]
pub struct Forked {
    pub pid: u32,
    /// Non-blocking read end: an 8-byte report (see the module's doc) once the watchdog is
    /// done; end of file without one if the watchdog and the server both died first.
    pub status: OwnedFd,
}

/// The first half of a status report: from the watchdog, which left nothing behind.
pub const BY_WATCHDOG: u32 = 1;
/// The first half of a status report: from the watchdog, which left a process behind.
pub const BY_WATCHDOG_LEFT_SOME: u32 = 2;
/// The first half of a status report: from the server, which reaped the watchdog.
pub const BY_SERVER: u32 = 0;

/// One status report: who reports, then the raw wait status.
pub fn report(by: u32, status: i32) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&by.to_le_bytes());
    bytes[4..].copy_from_slice(&status.to_le_bytes());
    bytes
}

/// What [`report`] wrote: who, and the raw wait status.
pub fn read_report(bytes: [u8; 8]) -> (u32, i32) {
    let [b0, b1, b2, b3, s0, s1, s2, s3] = bytes;
    (
        u32::from_le_bytes([b0, b1, b2, b3]),
        i32::from_le_bytes([s0, s1, s2, s3]),
    )
}

/// The running server's socket; `None` before the first agent.
static CLIENT: Mutex<Option<OwnedFd>> = Mutex::new(None);
/// Set once the server failed: every later agent gets an executed watchdog.
static OFF: AtomicBool = AtomicBool::new(false);

/// What one watchdog is to run.
pub struct Request<'a> {
    pub grace: Duration,
    pub cwd: &'a Path,
    pub command: &'a str,
    /// The agent's whole environment.
    pub env: &'a [(OsString, OsString)],
    /// The agent's stdin, stdout and stderr.
    pub stdio: [BorrowedFd<'a>; 3],
    /// The control pipe's read end ([`super::shim`]).
    pub control: BorrowedFd<'a>,
    /// The pid file the watchdog writes before it starts the agent (absolute: the watchdog
    /// enters the agent's folder).
    pub pid_file: &'a Path,
    /// The end of its line: the automaton that runs it ([`super::group::owner_record`]).
    pub owner: &'a str,
}

/// Why the server did not fork a watchdog.
#[derive(Debug)]
pub enum Refused {
    /// The request never reached it, or it answered that it could not fork: nothing holds the
    /// request's descriptors, so the caller may execute the watchdog with them instead.
    Declined(io::Error),
    /// The request was sent but no answer came: a watchdog may hold its descriptors (and may
    /// have started the agent, which it stops once the control pipe closes), so they must not
    /// be used again.
    Lost(io::Error),
}

/// How long an answer may take: the server forks at once, so only a stuck one is this slow.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// Have the server (started by executing `exe` the first time) fork a watchdog for `req`.
pub fn fork_watchdog(exe: &Path, req: &Request<'_>) -> Result<Forked, Refused> {
    let off = || Refused::Declined(io::Error::other("the fork server is off"));
    if OFF.load(Ordering::Relaxed) {
        return Err(off());
    }
    let mut client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    if OFF.load(Ordering::Relaxed) {
        return Err(off());
    }
    if client.is_none() {
        match start(exe) {
            Ok(sock) => *client = Some(sock),
            Err(e) => {
                OFF.store(true, Ordering::Relaxed);
                return Err(Refused::Declined(e));
            }
        }
    }
    let sock = client.as_ref().expect("started above");
    let outcome = send_request(sock.as_fd(), req);
    if let Err(Refused::Lost(_)) = &outcome {
        // The connection is broken: no new requests. The socket stays open, so a server
        // that still runs goes on reaping (and reporting) the watchdogs it forked.
        OFF.store(true, Ordering::Relaxed);
    }
    outcome
}

/// Start the server now, while the run gets ready, so that the first agent does not wait for
/// it to load; a failure only means the first agent starts it (or falls back).
pub fn prestart() {
    let Some(exe) = super::shim::exe() else {
        return;
    };
    let mut client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    if client.is_none() && !OFF.load(Ordering::Relaxed) {
        *client = start(exe).ok();
    }
}

fn start(exe: &Path) -> io::Result<OwnedFd> {
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let mut cmd = Command::new(exe);
    cmd.arg(ZYGOTE_ARG)
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own group: the terminal's Ctrl-C is automaton's to handle.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // Not waited for: it exits when `ours` closes, with automaton.
    drop(cmd.spawn()?);
    Ok(ours)
}

fn send_request(sock: BorrowedFd<'_>, req: &Request<'_>) -> Result<Forked, Refused> {
    use rustix::pipe::{PipeFlags, pipe_with};
    let (status, status_w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)
        .map_err(|e| Refused::Declined(e.into()))?;
    let mut payload = Vec::with_capacity(4096);
    for field in [
        OsStr::new(&req.grace.as_millis().to_string()),
        req.cwd.as_os_str(),
        OsStr::new(req.command),
        req.pid_file.as_os_str(),
        OsStr::new(req.owner),
    ] {
        payload.extend_from_slice(field.as_bytes());
        payload.push(0);
    }
    for (k, v) in req.env {
        payload.extend_from_slice(k.as_bytes());
        payload.push(b'=');
        payload.extend_from_slice(v.as_bytes());
        payload.push(0);
    }
    if payload.len() > MAX_REQUEST {
        return Err(Refused::Declined(io::Error::other(
            "the agent's environment is too large to send",
        )));
    }
    let [stdin, stdout, stderr] = req.stdio;
    let fds = [stdin, stdout, stderr, req.control, status_w.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    match rustix::net::sendmsg(
        sock,
        &[IoSlice::new(&payload)],
        &mut control,
        SendFlags::NOSIGNAL,
    ) {
        Ok(_) => {}
        // Too big for the socket: this request only.
        Err(rustix::io::Errno::MSGSIZE) => {
            return Err(Refused::Declined(rustix::io::Errno::MSGSIZE.into()));
        }
        // A dead server: no watchdog was forked, but none will be.
        Err(e) => {
            OFF.store(true, Ordering::Relaxed);
            return Err(Refused::Declined(e.into()));
        }
    }
    drop(status_w);
    let lost = |why: &str| Refused::Lost(io::Error::other(format!("the fork server {why}")));
    let mut fds = [PollFd::from_borrowed_fd(sock, PollFlags::IN)];
    let timeout = rustix::event::Timespec {
        tv_sec: ANSWER_WITHIN.as_secs() as i64,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) if n > 0 => {}
        _ => return Err(lost("did not answer")),
    }
    let mut reply = [0u8; 4];
    let n = loop {
        match rustix::io::read(sock, &mut reply) {
            Err(rustix::io::Errno::INTR) => continue,
            Ok(n) => break n,
            Err(_) => return Err(lost("could not be read")),
        }
    };
    if n != 4 {
        return Err(lost("closed its socket"));
    }
    match i32::from_le_bytes(reply) {
        pid if pid > 0 => Ok(Forked {
            pid: pid as u32,
            status,
        }),
        // It could not fork (or gave up on the child it forked): nothing holds our descriptors.
        errno => Err(Refused::Declined(io::Error::from_raw_os_error(-errno))),
    }
}

/// A forked watchdog the server still has to reap.
struct Watched {
    pid: i32,
    pidfd: OwnedFd,
    status: OwnedFd,
}

/// The server: fd 0 is its end of the socket.
pub fn main() -> i32 {
    // Keep the socket off fd 0, which each watchdog replaces with its agent's stdin.
    let Ok(sock) = rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdin(), 3) else {
        return 1;
    };
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
    let mut running: Vec<Watched> = Vec::new();
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let mut fds: Vec<PollFd<'_>> = std::iter::once(sock.as_fd())
            .chain(running.iter().map(|w| w.pidfd.as_fd()))
            .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
            .collect();
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return 1,
        }
        let request = !fds[0].revents().is_empty();
        drop(fds);
        running.retain(|w| !reaped(w));
        if !request {
            continue;
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            &sock,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let received: Vec<OwnedFd> = control
            .drain()
            .flat_map(|m| match m {
                RecvAncillaryMessage::ScmRights(fds) => fds.collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .collect();
        let n = match got {
            Ok(m) if m.bytes > 0 => m.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            // Automaton closed its end: it is gone, and so is the server's purpose.
            _ => return 0,
        };
        let answer = match fork_one(&buf[..n], received, &sock, &mut running) {
            Ok(pid) => pid,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EINVAL),
        };
        if rustix::io::write(&sock, &answer.to_le_bytes()).is_err() {
            return 0;
        }
    }
}

/// Whether `w` has exited; if so its wait status went to its status pipe.
fn reaped(w: &Watched) -> bool {
    let mut st = 0;
    // SAFETY: waitpid on our own child with a valid out-pointer.
    if unsafe { libc::waitpid(w.pid, &mut st, libc::WNOHANG) } != w.pid {
        return false;
    }
    // Unread when the watchdog reported first; a closed pipe is no error (SIGPIPE is ignored).
    let _ = rustix::io::write(&w.status, &report(BY_SERVER, st));
    true
}

/// Fork the watchdog a request asks for; its pid.
fn fork_one(
    payload: &[u8],
    fds: Vec<OwnedFd>,
    sock: &OwnedFd,
    running: &mut Vec<Watched>,
) -> io::Result<i32> {
    let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
    let [stdin, stdout, stderr, control, status]: [OwnedFd; FDS] =
        fds.try_into().map_err(|_| invalid())?;
    let mut fields = payload
        .strip_suffix(&[0])
        .ok_or_else(invalid)?
        .split(|b| *b == 0);
    let grace: u64 = fields
        .next()
        .and_then(|f| std::str::from_utf8(f).ok()?.parse().ok())
        .ok_or_else(invalid)?;
    let cwd = OsStr::from_bytes(fields.next().ok_or_else(invalid)?);
    let command = std::str::from_utf8(fields.next().ok_or_else(invalid)?).map_err(|_| invalid())?;
    let pid_file = Path::new(OsStr::from_bytes(fields.next().ok_or_else(invalid)?));
    let owner = std::str::from_utf8(fields.next().ok_or_else(invalid)?).map_err(|_| invalid())?;
    // The agent's environment as libc keeps one: each `NAME=value` is NUL-terminated in the
    // request, which the forked child keeps (its copy) until it exits.
    let env: Vec<*const libc::c_char> = fields
        .map(|kv| kv.as_ptr().cast())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // A folder that is not there is refused here, so the caller's own start reports it as
    // before, rather than a watchdog that exits 127.
    if !Path::new(cwd).is_dir() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    // The child waits for one byte on `held` until the server can watch it (its pidfd).
    let (held, hold) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // SAFETY: the server is single-threaded, so the child may run any code after fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(hold);
        // The watchdog never returns into the server's code, not even by a panic.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            be_watchdog(
                [stdin, stdout, stderr],
                control,
                status,
                (sock, running, held),
                cwd,
                command,
                &env,
                grace,
                (pid_file, owner),
            )
        }))
        .unwrap_or(127);
        // SAFETY: ends this forked process without running the server's destructors.
        unsafe { libc::_exit(code) }
    }
    // Either side may set the group first; both set the same one.
    // SAFETY: setpgid on our own child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    let pidfd = rustix::process::Pid::from_raw(pid)
        .ok_or_else(invalid)
        .and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
                .map_err(io::Error::from)
        });
    match pidfd {
        Ok(pidfd) => {
            // Watched: it may go on (a failed write is its end of file: it exits).
            let _ = rustix::io::write(&hold, b"w");
            running.push(Watched { pid, pidfd, status });
            Ok(pid)
        }
        Err(e) => {
            // Unwatchable: it must not run (it waits on `held`, so it has started nothing).
            // SAFETY: kill and reap our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            Err(e)
        }
    }
}

/// The forked child's life: let go of everything of the server's, take on the agent's stdio,
/// folder and environment, and watch it; the exit code.
#[allow(clippy::too_many_arguments)]
fn be_watchdog(
    [stdin, stdout, stderr]: [OwnedFd; 3],
    control: OwnedFd,
    status: OwnedFd,
    (sock, running, held): (&OwnedFd, &mut Vec<Watched>, OwnedFd),
    cwd: &OsStr,
    command: &str,
    env: &[*const libc::c_char],
    grace: u64,
    (pid_file, owner): (&Path, &str),
) -> i32 {
    // Nothing of the server's may stay open here: another agent's status pipe held by this
    // process would hide the server's death from automaton. Its own it keeps, to report.
    running.clear();
    // SAFETY: the fd number of the server's socket, closed in this process only (which never
    // returns to the code that owns it); setpgid on ourselves.
    unsafe {
        libc::close(std::os::fd::AsRawFd::as_raw_fd(sock));
        libc::setpgid(0, 0);
    }
    // Until the server watches it, and unless automaton is gone meanwhile: then it never
    // writes the pid file (which a newer automaton may have written since) nor starts anything.
    let mut watched = [0u8; 1];
    if !matches!(rustix::io::read(&held, &mut watched), Ok(1))
        || super::shim::control_closed(control.as_fd())
    {
        return super::shim::NEVER_STARTED;
    }
    drop(held);
    // Recorded before anything can start: a later run finds (and stops) this group by it.
    let line = format!("{}\n", super::group::pid_record(std::process::id(), owner));
    // A local agent dies with the machine: rename only, as automaton writes it (see `fsx`).
    let recorded = crate::fsx::write_recycling(
        pid_file,
        line.as_bytes(),
        crate::fsx::Durability::Rebuildable,
    );
    let stdio_ok = rustix::stdio::dup2_stdin(&stdin).is_ok()
        && rustix::stdio::dup2_stdout(&stdout).is_ok()
        && rustix::stdio::dup2_stderr(&stderr).is_ok();
    drop((stdin, stdout, stderr));
    if !stdio_ok {
        return 127;
    }
    if let Err(e) = recorded {
        eprintln!(
            "automaton: cannot write {}: {e}; the agent was not started",
            pid_file.display()
        );
        return 127;
    }
    if let Err(e) = std::env::set_current_dir(cwd) {
        eprintln!("automaton: cannot enter {}: {e}", Path::new(cwd).display());
        return 127;
    }
    // The agent's environment becomes the watchdog's own, so the agent inherits it (a
    // `Command` given an environment with PATH would fork rather than take posix_spawn), and
    // PATH is looked up in it. Pointed to, not copied: nothing to allocate per variable.
    unsafe extern "C" {
        static mut environ: *const *const libc::c_char;
    }
    // SAFETY: the forked watchdog is single-threaded; `env` is null-terminated and outlives
    // this process's use of it (the process exits from `fork_one`'s frame that owns it).
    unsafe { environ = env.as_ptr() };
    let waited = super::shim::watch(
        Duration::from_millis(grace),
        control.as_fd(),
        super::shim::Start::Now,
        command,
    );
    let by = match super::shim::no_child_left() {
        true => BY_WATCHDOG,
        false => BY_WATCHDOG_LEFT_SOME,
    };
    let _ = rustix::io::write(&status, &report(by, waited));
    super::shim::exit_like(waited)
}
