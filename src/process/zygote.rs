//! A fork server for watchdogs: one small process, started once per automaton, that forks
//! [`super::shim`] watchdogs for its agents (and hands later agents to free ones) instead of
//! automaton executing its own 7 MB binary again for each.
//!
//! Executing a dynamic binary costs about a millisecond of CPU here (the loader, relocations,
//! libc's CPU probes, which trap to the hypervisor in a VM); a fork of a process that has
//! done all that already costs a tenth. The watchdog it forks behaves as the re-executed one
//! does (the same [`super::shim::watch`]): it leads the agent's process group and stops
//! everything when the agent's control pipe closes while the agent runs. It records itself: it writes its own line into
//! the pid file before it starts the agent, where an executed watchdog waits for automaton to
//! write it and send the go byte (two wake-ups fewer on every agent's start).
//!
//! - **Protocol.** A `SOCK_SEQPACKET` pair: automaton sends one message per agent, the
//!   watchdog's grace, working folder, command, pid file, the pid file's owner part and the
//!   environment (NUL-separated) with five descriptors (stdin, stdout, stderr, the control
//!   pipe's read end, a status pipe's write end); the server answers with the watchdog's pid,
//!   or a negative errno. A new watchdog starts nothing until the server, having its pidfd,
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
//! - **Reuse.** A watchdog whose agent ended on its own (not stopped by it because automaton
//!   went away), with nothing left below it, and that got no stop signal, does not exit: once
//!   automaton closes that agent's control pipe, which it does after it finished with the
//!   agent's group (automaton signals a group only through that agent's runner, never by a
//!   pid read back later from its own run), it tells the server it is free on a socket pair
//!   of their own, and the server hands it the next request (same message, same descriptors)
//!   instead of forking. A stop signal while it waits makes it exit. That saves a fork, a new
//!   process's page faults and an exit per phase. A request that finds no free watchdog gets
//!   a new one.
//! - **Lifetime.** The server exits when automaton's end of the socket closes (even by
//!   SIGKILL); its watchdogs then see their control pipes close and stop their agents, and
//!   free ones see their socket close and exit.
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
use std::time::{Duration, Instant};

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
    // Absolute: a watchdog that ran another agent is in that agent's folder.
    let cwd = std::path::absolute(req.cwd).map_err(Refused::Declined)?;
    for field in [
        OsStr::new(&req.grace.as_millis().to_string()),
        cwd.as_os_str(),
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
    match send_with_fds(sock, &payload, &fds) {
        Ok(()) => {}
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
    // A signal (Ctrl-C) landing on this thread is not a lost server: wait out the rest.
    let deadline = Instant::now() + ANSWER_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match poll(&mut fds, Some(&super::group::timespec(left))) {
            Ok(n) if n > 0 => break,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => {}
            _ => return Err(lost("did not answer")),
        }
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

/// Send one request: its bytes and its descriptors, in one message.
fn send_with_fds(
    sock: BorrowedFd<'_>,
    payload: &[u8],
    fds: &[BorrowedFd<'_>; FDS],
) -> rustix::io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(fds));
    rustix::net::sendmsg(
        sock,
        &[IoSlice::new(payload)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

/// Receive one request into `buf`: its length and descriptors; `None` once the other end
/// closed.
fn receive(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Option<(usize, Vec<OwnedFd>)> {
    loop {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            sock,
            &mut [IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let fds: Vec<OwnedFd> = control
            .drain()
            .flat_map(|m| match m {
                RecvAncillaryMessage::ScmRights(fds) => fds.collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .collect();
        match got {
            Ok(m) if m.bytes > 0 => return Some((m.bytes, fds)),
            Err(rustix::io::Errno::INTR) => continue,
            _ => return None,
        }
    }
}

/// A watchdog of the server's: forked for one request, then handed the next ones for as
/// long as it lives and says it is free (see [`be_watchdog`]).
struct Watched {
    pid: i32,
    pidfd: OwnedFd,
    /// The status pipe of the request it runs; `None` while it waits for the next one.
    status: Option<OwnedFd>,
    /// The server's end of the pair on which the watchdog says it is free and gets its next
    /// request; `None` once that failed (the watchdog is dying).
    sock: Option<OwnedFd>,
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
    let mut watched: Vec<Watched> = Vec::new();
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        // The socket, then each watchdog's pidfd and its own socket (a closed one stays in
        // the list, never ready, so that the indexes hold).
        let mut fds: Vec<PollFd<'_>> = vec![PollFd::from_borrowed_fd(sock.as_fd(), PollFlags::IN)];
        for w in &watched {
            let note = w.sock.as_ref().map_or(sock.as_fd(), |s| s.as_fd());
            let flags = if w.sock.is_some() {
                PollFlags::IN
            } else {
                PollFlags::empty()
            };
            fds.push(PollFd::from_borrowed_fd(w.pidfd.as_fd(), PollFlags::IN));
            fds.push(PollFd::from_borrowed_fd(note, flags));
        }
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return 1,
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        // The dead first (their status goes to the request they ran), then those now free.
        let mut i = 0;
        watched.retain_mut(|w| {
            let (died, noted) = (ready[1 + 2 * i], ready[2 + 2 * i]);
            i += 1;
            if died && reaped(w) {
                return false;
            }
            if noted {
                take_free_note(w);
            }
            true
        });
        let request = ready[0];
        if !request {
            continue;
        }
        let Some((n, received)) = receive(sock.as_fd(), &mut buf) else {
            // Automaton closed its end: it is gone, and so is the server's purpose.
            return 0;
        };
        let answer = match serve(&buf[..n], received, &sock, &mut watched) {
            Ok(pid) => pid,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EINVAL),
        };
        if rustix::io::write(&sock, &answer.to_le_bytes()).is_err() {
            return 0;
        }
    }
}

/// Whether `w` has exited; if so the wait status went to the status pipe of the request it
/// ran.
fn reaped(w: &Watched) -> bool {
    let mut st = 0;
    // SAFETY: waitpid on our own child with a valid out-pointer.
    if unsafe { libc::waitpid(w.pid, &mut st, libc::WNOHANG) } != w.pid {
        return false;
    }
    // Unread when the watchdog reported first; a closed pipe is no error (SIGPIPE is ignored).
    if let Some(status) = &w.status {
        let _ = rustix::io::write(status, &report(BY_SERVER, st));
    }
    true
}

/// Read `w`'s note that it is free: it reported its agent's end, left nothing behind, and
/// automaton let go of that agent (closed its control pipe).
fn take_free_note(w: &mut Watched) {
    let Some(sock) = &w.sock else {
        return;
    };
    let mut note = [0u8; 1];
    match rustix::net::recv(sock, &mut note, RecvFlags::DONTWAIT) {
        Ok((1, _)) => w.status = None,
        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
        // Its end closed: it is exiting (its pidfd tells when).
        _ => w.sock = None,
    }
}

/// Give a request to a free watchdog, or fork one for it; the watchdog's pid.
fn serve(
    payload: &[u8],
    fds: Vec<OwnedFd>,
    sock: &OwnedFd,
    watched: &mut Vec<Watched>,
) -> io::Result<i32> {
    let job = Job::parse(payload, fds)?;
    // A folder that is not there is refused here, so the caller's own start reports it as
    // before, rather than a watchdog that exits 127.
    if !Path::new(&job.cwd).is_dir() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    for w in watched.iter_mut().filter(|w| w.status.is_none()) {
        let Some(to) = &w.sock else { continue };
        let fds = [
            job.stdio[0].as_fd(),
            job.stdio[1].as_fd(),
            job.stdio[2].as_fd(),
            job.control.as_fd(),
            job.status.as_fd(),
        ];
        if send_with_fds(to.as_fd(), payload, &fds).is_ok() {
            w.status = Some(job.status);
            return Ok(w.pid);
        }
        // It is exiting: not asked again.
        w.sock = None;
    }
    fork_one(job, sock, watched)
}

/// One request, parsed: what a watchdog runs next.
struct Job {
    stdio: [OwnedFd; 3],
    control: OwnedFd,
    status: OwnedFd,
    grace: Duration,
    cwd: OsString,
    command: String,
    pid_file: std::path::PathBuf,
    owner: String,
    /// The request's bytes, which the environment's pointers point into.
    payload: Vec<u8>,
    /// Where in `payload` the environment starts.
    env_at: usize,
}

impl Job {
    /// The fields of a request ([`send_request`]) and its five descriptors.
    fn parse(payload: &[u8], fds: Vec<OwnedFd>) -> io::Result<Job> {
        let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
        let [stdin, stdout, stderr, control, status]: [OwnedFd; FDS] =
            fds.try_into().map_err(|_| invalid())?;
        let mut fields = payload
            .strip_suffix(&[0])
            .ok_or_else(invalid)?
            .split(|b| *b == 0);
        let mut env_at = 0;
        let mut field = || {
            let f = fields.next().ok_or_else(invalid)?;
            env_at += f.len() + 1;
            Ok::<_, io::Error>(f)
        };
        let text = |f: &[u8]| {
            std::str::from_utf8(f)
                .map(str::to_owned)
                .map_err(|_| invalid())
        };
        let grace: u64 = text(field()?)?.parse().map_err(|_| invalid())?;
        let cwd = OsStr::from_bytes(field()?).to_owned();
        let command = text(field()?)?;
        let pid_file = OsStr::from_bytes(field()?).into();
        let owner = text(field()?)?;
        Ok(Job {
            stdio: [stdin, stdout, stderr],
            control,
            status,
            grace: Duration::from_millis(grace),
            cwd,
            command,
            pid_file,
            owner,
            payload: payload.to_vec(),
            env_at,
        })
    }

    /// The agent's environment as libc keeps one: pointers to the request's NUL-terminated
    /// `NAME=value` strings (after the five fields), then a null.
    fn environ(&self) -> Vec<*const libc::c_char> {
        let env = self.payload.get(self.env_at..).unwrap_or_default();
        env.split_inclusive(|b| *b == 0)
            .map(|kv| kv.as_ptr().cast())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    }
}

/// Fork a watchdog for `job`; its pid.
fn fork_one(job: Job, sock: &OwnedFd, watched: &mut Vec<Watched>) -> io::Result<i32> {
    // The child waits for one byte on `held` until the server can watch it (its pidfd).
    let (held, hold) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    // SAFETY: the server is single-threaded, so the child may run any code after fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop((hold, ours));
        // Nothing of the server's may stay open here: another agent's status pipe held by
        // this process would hide the server's death from automaton.
        watched.clear();
        // SAFETY: the fd number of the server's socket, closed in this process only (which
        // never returns to the code that owns it).
        unsafe { libc::close(std::os::fd::AsRawFd::as_raw_fd(sock)) };
        // The watchdog never returns into the server's code, not even by a panic.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            be_watchdog(job, held, theirs)
        }))
        .unwrap_or(127);
        // SAFETY: ends this forked process without running the server's destructors.
        unsafe { libc::_exit(code) }
    }
    drop(theirs);
    // Either side may set the group first; both set the same one.
    // SAFETY: setpgid on our own child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    let pidfd = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
        .and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
                .map_err(io::Error::from)
        });
    match pidfd {
        Ok(pidfd) => {
            // Watched: it may go on (a failed write is its end of file: it exits).
            let _ = rustix::io::write(&hold, b"w");
            watched.push(Watched {
                pid,
                pidfd,
                status: Some(job.status),
                sock: Some(ours),
            });
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

/// The forked child's life: lead its own group, then run the agent of `first` and of every
/// request the server hands it after, each with that request's stdio, folder and
/// environment. It stays for the next one only when the agent left nothing behind, changed
/// none of its settings (priority, limits) and no stop signal came, and only once automaton
/// closed that agent's control pipe (so no signal meant for that agent's group can reach the
/// next agent); else it exits like the agent. A fork and an exit fewer per phase: the fork,
/// the page faults of a new process and its teardown cost more than the agent's own start in
/// a short phase.
fn be_watchdog(first: Job, held: OwnedFd, server: OwnedFd) -> i32 {
    // SAFETY: setpgid on ourselves.
    unsafe {
        libc::setpgid(0, 0);
    }
    // Until the server watches it (run_job then checks that automaton is still there).
    let mut watched = [0u8; 1];
    if !matches!(rustix::io::read(&held, &mut watched), Ok(1)) {
        return super::shim::NEVER_STARTED;
    }
    drop(held);
    let watcher = match super::shim::Watcher::new() {
        Ok(w) => w,
        Err(e) => {
            // Said in the agent's log: this process's own stderr is the server's /dev/null.
            let _ = rustix::stdio::dup2_stderr(&first.stdio[2]);
            eprintln!("automaton: cannot watch the agent: {e}");
            return 127;
        }
    };
    let settings = Settings::now();
    let mut job = first;
    let mut buf = Vec::new();
    loop {
        let waited = match run_job(&watcher, &job) {
            Ok(waited) => waited,
            Err(code) => return code,
        };
        let by = match super::shim::no_child_left() {
            true => BY_WATCHDOG,
            false => BY_WATCHDOG_LEFT_SOME,
        };
        // Closed before the report: the agent was stopped because automaton went away (or
        // gave up on this start), not ended on its own.
        let cut_off = super::shim::control_closed(job.control.as_fd());
        // The agent's output ends here (no copy of its stdio is left): automaton may read
        // to end of file.
        let Job {
            stdio,
            control,
            status,
            ..
        } = job;
        drop(stdio);
        let released = release_stdio();
        let _ = rustix::io::write(&status, &report(by, waited));
        drop(status);
        if by != BY_WATCHDOG || cut_off || !released || Settings::now() != settings
            // Free once automaton let go of this agent (its control pipe's end of file),
            // unless a stop signal comes first.
            || !watcher.wait_for(control.as_fd())
        {
            return super::shim::exit_like(waited);
        }
        drop(control);
        // Out of the agent's folder: a free watchdog must not keep a mount busy.
        let _ = rustix::process::chdir("/");
        if rustix::net::send(&server, b"f", SendFlags::NOSIGNAL).is_err() {
            return super::shim::exit_like(waited);
        }
        // Free: the server may hand this watchdog a request at any moment, and reports its
        // exit to that request. From here an exit says the next agent never started, never
        // the last agent's status.
        if !watcher.wait_for(server.as_fd()) {
            return super::shim::NEVER_STARTED;
        }
        buf.resize(MAX_REQUEST, 0);
        let Some((n, fds)) = receive(server.as_fd(), &mut buf) else {
            return super::shim::NEVER_STARTED;
        };
        job = match Job::parse(&buf[..n], fds) {
            // A stop signal that came with the request: it is not started.
            Ok(_) if watcher.stopped() => return super::shim::NEVER_STARTED,
            Ok(next) => next,
            Err(_) => return 127,
        };
    }
}

/// What an agent of the same user can change in its watchdog (`renice -g`, `prlimit --pid
/// $PPID`) and the next agent would inherit: a watchdog whose settings moved is not reused.
#[derive(PartialEq)]
struct Settings {
    nice: Option<i32>,
    limits: [rustix::process::Rlimit; 6],
}

impl Settings {
    fn now() -> Settings {
        use rustix::process::{Resource, getrlimit};
        Settings {
            nice: rustix::process::getpriority_process(None).ok(),
            limits: [
                Resource::Cpu,
                Resource::Fsize,
                Resource::Nofile,
                Resource::As,
                Resource::Nproc,
                Resource::Core,
            ]
            .map(getrlimit),
        }
    }
}

/// Give up the agent's stdin, stdout and stderr (for /dev/null); whether that worked.
fn release_stdio() -> bool {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return false;
    };
    rustix::stdio::dup2_stdin(&null).is_ok()
        && rustix::stdio::dup2_stdout(&null).is_ok()
        && rustix::stdio::dup2_stderr(&null).is_ok()
}

/// Record this watchdog in the job's pid file, take on the job's stdio, folder and
/// environment, and watch its agent: the agent's wait status, or (`Err`) the exit code of a
/// watchdog that started nothing.
fn run_job(watcher: &super::shim::Watcher, job: &Job) -> Result<i32, i32> {
    // Automaton gone since it sent the request: nothing is recorded or started.
    if super::shim::control_closed(job.control.as_fd()) {
        return Err(super::shim::NEVER_STARTED);
    }
    // Recorded before anything can start: a later run finds (and stops) this group by it.
    let line = format!(
        "{}\n",
        super::group::pid_record(std::process::id(), &job.owner)
    );
    // A local agent dies with the machine: rename only, as automaton writes it (see `fsx`).
    let recorded = crate::fsx::write_recycling(
        &job.pid_file,
        line.as_bytes(),
        crate::fsx::Durability::Rebuildable,
    );
    let [stdin, stdout, stderr] = &job.stdio;
    if !(rustix::stdio::dup2_stdin(stdin).is_ok()
        && rustix::stdio::dup2_stdout(stdout).is_ok()
        && rustix::stdio::dup2_stderr(stderr).is_ok())
    {
        return Err(127);
    }
    if let Err(e) = recorded {
        eprintln!(
            "automaton: cannot write {}: {e}; the agent was not started",
            job.pid_file.display()
        );
        return Err(127);
    }
    if let Err(e) = std::env::set_current_dir(&job.cwd) {
        eprintln!(
            "automaton: cannot enter {}: {e}",
            Path::new(&job.cwd).display()
        );
        return Err(127);
    }
    // The agent's environment becomes the watchdog's own, so the agent inherits it (a
    // `Command` given an environment with PATH would fork rather than take posix_spawn), and
    // PATH is looked up in it. Pointed to, not copied: nothing to allocate per variable.
    unsafe extern "C" {
        static mut environ: *const *const libc::c_char;
    }
    let env = job.environ();
    // SAFETY: the watchdog is single-threaded; `env` is null-terminated and points into
    // `job`, which outlives this use of it (the agent is spawned below, before either drops);
    // `environ` is pointed back at an empty list before they drop.
    unsafe { environ = env.as_ptr() };
    let waited = super::shim::watch(watcher, job.grace, job.control.as_fd(), &job.command);
    // An empty list: one null pointer.
    static NO_ENVIRONMENT: [usize; 1] = [0];
    // SAFETY: as above; the agent is started, so nothing reads the job's environment again.
    unsafe { environ = NO_ENVIRONMENT.as_ptr().cast() };
    Ok(waited)
}
