//! The watchdog every agent runs under: the agent's process group is led by a tiny shim (this
//! binary, re-executed with [`SHIM_ARG`]), not by the agent itself.
//!
//! - **Recorded before it can act.** The shim reads one byte from descriptor 3, a pipe from
//!   automaton, before it starts the agent; automaton writes it only once the shim's pid and
//!   start time are durably in `logs/agent.pid`. If automaton dies first, the shim reads end of
//!   file and exits without ever starting the agent.
//! - **Stopped when automaton dies.** The shim keeps polling that pipe: end of file means
//!   automaton is gone (even by SIGKILL, which no handler sees), and the shim stops every
//!   descendant (TERM, grace, KILL) and exits. Unlike `PR_SET_PDEATHSIG` this does not depend on
//!   which thread of automaton spawned it.
//! - **Daemonized descendants are found.** The shim is a child subreaper
//!   (`PR_SET_CHILD_SUBREAPER`): a process that leaves the group (`setsid`) and double-forks is
//!   reparented to the shim, not to init, so the shim still finds it (as a descendant in
//!   `/proc`) and stops it when the agent ends, times out or is stopped.
//! - **Zombies reaped at once.** Orphans reparented to the shim are reaped as they exit.
//!
//! The shim exits with the agent's status (re-raising the signal that killed it), so the
//! runner sees the agent's own end.

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, BorrowedFd};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The hidden first argument that turns the binary into the shim.
pub const SHIM_ARG: &str = "__agent-watchdog";
/// The descriptor the control pipe arrives on.
pub const CONTROL_FD: i32 = 3;
/// Exit status of a shim whose automaton died before it was told to start the agent.
pub const NEVER_STARTED: i32 = 125;

static SHIM_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Run every agent under the watchdog shim, `exe` being this binary.
pub fn enable(exe: PathBuf) {
    let _ = SHIM_EXE.set(exe);
}

/// The shim's executable, when the watchdog is on (the binary turns it on; a library caller
/// that does not runs agents directly).
pub fn exe() -> Option<&'static PathBuf> {
    SHIM_EXE.get()
}

/// Make `read` (the control pipe's read end) the shim's descriptor [`CONTROL_FD`] in the child
/// `cmd` starts; the original stays close-on-exec.
pub fn hand_control(cmd: &mut std::process::Command, read: &rustix::fd::OwnedFd) {
    let raw = std::os::fd::AsRawFd::as_raw_fd(read);
    // SAFETY: only dup2 and fcntl run between fork and exec; both are async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            // dup2 onto itself keeps close-on-exec, so the flag is cleared by hand then.
            let ok = if raw == CONTROL_FD {
                libc::fcntl(raw, libc::F_SETFD, 0) >= 0
            } else {
                libc::dup2(raw, CONTROL_FD) >= 0
            };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The shim's arguments after [`SHIM_ARG`]: `<grace-ms> <command>`.
pub fn main(args: &[String]) -> i32 {
    let (Some(grace), Some(command)) = (args.first(), args.get(1)) else {
        eprintln!("usage: automaton {SHIM_ARG} <grace-ms> <command>");
        return 2;
    };
    let grace = Duration::from_millis(grace.parse().unwrap_or(2000));
    // SAFETY: prctl with integer arguments only changes this process's own attributes.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    // SAFETY: descriptor 3 is the control pipe automaton placed there; borrowed, never closed.
    let control = unsafe { BorrowedFd::borrow_raw(CONTROL_FD) };
    let mut go = [0u8; 1];
    loop {
        match rustix::io::read(control, &mut go) {
            Ok(1) => break,
            Err(rustix::io::Errno::INTR) => continue,
            // Automaton died before it recorded us: the agent never runs.
            _ => return NEVER_STARTED,
        }
    }
    let _ = rustix::io::fcntl_setfd(control, rustix::io::FdFlags::CLOEXEC);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let _ = signal_hook::flag::register(sig, std::sync::Arc::clone(&stop));
    }
    let child = match std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("automaton: cannot start the agent: {e}");
            return 127;
        }
    };
    let child_pid = child.id() as i32;
    std::mem::forget(child); // reaped below with waitpid(-1), with every orphan
    let mut status: Option<i32> = None;
    let mut stopping_since: Option<Instant> = None;
    loop {
        let _ = reap(child_pid, &mut status);
        if let Some(st) = status {
            // The agent is done: whatever it left (in or out of its group) goes too.
            stop_descendants(grace, &mut status, child_pid);
            reap_all(child_pid, &mut status);
            return exit_like(st);
        }
        let orphaned = control_closed(control);
        if orphaned {
            // Automaton is gone: nobody watches the agent any more.
            stop_descendants(grace, &mut status, child_pid);
            reap_all(child_pid, &mut status);
            return 137;
        }
        if stop.load(Ordering::SeqCst) {
            // Automaton stops the group (the group got the signal too): daemonized
            // descendants did not, and must be gone before automaton's KILL ends the shim.
            let since = *stopping_since.get_or_insert_with(|| {
                signal_descendants(libc::SIGTERM);
                Instant::now()
            });
            if since.elapsed() >= grace / 2 {
                signal_descendants(libc::SIGKILL);
            }
        }
        let mut fds = [PollFd::from_borrowed_fd(control, PollFlags::IN)];
        let ts = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        let _ = poll(&mut fds, Some(&ts));
    }
}

/// Whether automaton closed its end of the control pipe (it died).
fn control_closed(control: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(control.as_fd(), PollFlags::IN)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::IN | PollFlags::ERR)
}

/// Reap every exited child (the agent and orphans reparented to us); the agent's raw status
/// lands in `status`. Returns whether no child at all is left (ECHILD).
fn reap(child: i32, status: &mut Option<i32>) -> bool {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if pid < 0 {
            return true;
        }
        if pid == 0 {
            return false;
        }
        if pid == child {
            *status = Some(st);
        }
    }
}

/// Before the shim exits: reap what is left, so that no zombie is handed to an init that may
/// never reap it (in a container, pid 1 often does not).
fn reap_all(child: i32, status: &mut Option<i32>) {
    for _ in 0..50 {
        if reap(child, status) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// TERM every descendant, wait up to `grace` (reaping), then KILL what is left.
fn stop_descendants(grace: Duration, status: &mut Option<i32>, child: i32) {
    if signal_descendants(libc::SIGTERM) == 0 {
        return;
    }
    let end = Instant::now() + grace;
    while Instant::now() < end {
        let _ = reap(child, status);
        if descendants().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    signal_descendants(libc::SIGKILL);
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end && !descendants().is_empty() {
        let _ = reap(child, status);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Send `sig` to every live descendant; how many there were.
fn signal_descendants(sig: i32) -> usize {
    let all = descendants();
    for pid in &all {
        // SAFETY: kill with a pid read from /proc; a pid gone meanwhile only gives ESRCH.
        unsafe {
            libc::kill(*pid, sig);
        }
    }
    all.len()
}

/// Every live (non-zombie) process below this one.
fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for e in procs.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Some(f) = super::group::stat_fields(&pid.to_string()) else {
                continue;
            };
            if matches!(f.first().map(String::as_str), Some("Z" | "X")) {
                continue;
            }
            if let Some(ppid) = f.get(1).and_then(|p| p.parse::<i32>().ok()) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut todo = vec![me];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(c) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// Exit the way the agent did: its exit code, or the signal that killed it.
fn exit_like(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        return libc::WEXITSTATUS(status);
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let _ = signal_hook::low_level::emulate_default_handler(sig);
        return 128 + sig;
    }
    1
}
