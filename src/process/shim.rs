//! The watchdog every agent runs under: the agent's process group is led by a tiny shim (this
//! binary executed again with [`SHIM_ARG`], through `/proc/self/exe`), not by the agent itself.
//!
//! - **Recorded before it can act.** The shim reads one byte from its control pipe (the
//!   descriptor its `<control-fd>` argument names) before it starts the agent; automaton
//!   writes it only once the shim's pid and start time are in `logs/agent.pid`. If automaton
//!   dies first, the shim reads end of file and exits without ever starting the agent, so a
//!   kill at any moment leaves nothing running that the pid file does not name.
//! - **Stopped when automaton dies.** The shim keeps polling that pipe: end of file means
//!   automaton is gone (even by SIGKILL, which no handler sees), and the shim stops every
//!   descendant (TERM, grace, KILL) and exits. Unlike `PR_SET_PDEATHSIG` this does not depend on
//!   which thread of automaton spawned it.
//! - **Daemonized descendants are found.** The shim is a child subreaper
//!   (`PR_SET_CHILD_SUBREAPER`): a process that leaves the group (`setsid`) and double-forks is
//!   reparented to the shim, not to init, so the shim still finds it (as a descendant in
//!   `/proc`) and stops it when the agent ends, times out or is stopped.
//! - **Zombies reaped at once.** Orphans reparented to the shim are reaped as they exit.
//! - **Its end recorded.** The moment the agent exits, the shim writes how it ended beside the
//!   phase's log ([`ExitRecord`]), so a run killed before it judged the phase loses nothing.
//! - **One agent per shim.** A fresh shim per phase carries nothing from one agent to the
//!   next (priority, limits, CPU affinity an agent may have changed on its parent).
//!
//! The shim exits with the agent's status (re-raising the signal that killed it), so the
//! runner sees the agent's own end. Executing `/proc/self/exe` rather than the binary's path
//! runs the very binary automaton was started from, even if an upgrade replaced the file
//! during a long run.

use super::procfs::Proc;
use crate::store::agent_exit::ExitRecord;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::process::{Pid, Signal, WaitOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The hidden first argument that turns the binary into the shim.
pub const SHIM_ARG: &str = "__agent-watchdog";
/// Exit status of a shim whose automaton died before it was told to start the agent.
pub const NEVER_STARTED: i32 = 125;
/// How much longer than the agent's grace automaton waits for a stopped watchdog to end: the
/// watchdog itself KILLs what is left once the grace is over, reaps it and exits.
pub const WATCHDOG_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

static SHIM_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Run every agent under the watchdog shim, `exe` being this binary (`/proc/self/exe`).
pub fn enable(exe: PathBuf) {
    let _ = SHIM_EXE.set(exe);
}

/// The shim's executable, when the watchdog is on (the binary turns it on; a library caller
/// that does not runs agents directly).
pub fn exe() -> Option<&'static PathBuf> {
    SHIM_EXE.get()
}

/// Held while a control pipe's read end is inheritable, so that agents other threads start
/// meanwhile do not inherit it (a `git` spawned outside the supervisor may; a stray read end
/// is harmless: the shim watches for the write end to close).
static INHERITABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `spawn` with `read` (a control pipe's read end, close-on-exec) inheritable, so the
/// shim it starts gets it under the same number, passed as its `<control-fd>` argument.
pub fn with_control<T>(
    read: &OwnedFd,
    spawn: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    use rustix::io::{FdFlags, fcntl_setfd};
    let _held = INHERITABLE.lock().unwrap_or_else(|e| e.into_inner());
    fcntl_setfd(read, FdFlags::empty())?;
    let spawned = spawn();
    fcntl_setfd(read, FdFlags::CLOEXEC)?;
    spawned
}

/// The shim's arguments after [`SHIM_ARG`]: `<grace-ms> <control-fd> <exit-record> <command>`,
/// `<exit-record>` being where to record how the agent ended ([`ExitRecord`]), or `-`.
pub fn main(args: &[String]) -> i32 {
    let (Some(grace), Some(Ok(control_fd)), Some(exit_record), Some(command)) = (
        args.first(),
        args.get(1).map(|f| f.parse::<i32>()),
        args.get(2),
        args.get(3),
    ) else {
        eprintln!("usage: automaton {SHIM_ARG} <grace-ms> <control-fd> <exit-record> <command>");
        return 2;
    };
    let exit_record = (exit_record != "-").then(|| Path::new(exit_record));
    // Executed as `/proc/self/exe`, the kernel names the process `exe`: name it as people
    // (and `ps`) know it.
    let _ = rustix::thread::set_name(c"automaton");
    let grace = Duration::from_millis(grace.parse().unwrap_or(2000));
    // SAFETY: `control_fd` is the control pipe automaton handed down (it is open for the life
    // of this process: nothing here closes it); only borrowed.
    let control = unsafe { BorrowedFd::borrow_raw(control_fd) };
    // Automaton writes the go byte once our pid is in the pid file; until then a stop signal
    // ends the shim (its default action), and automaton's death is end of file here.
    let mut go = [0u8; 1];
    loop {
        match rustix::io::read(control, &mut go) {
            Ok(1) => break,
            Err(rustix::io::Errno::INTR) => continue,
            // Automaton died before it recorded us: the agent never runs.
            _ => return NEVER_STARTED,
        }
    }
    match Watcher::new() {
        Ok(watcher) => exit_like(watcher.watch(grace, control, exit_record, command)),
        Err(e) => {
            eprintln!("automaton: cannot watch the agent: {e}");
            127
        }
    }
}

/// What wakes a watchdog: SIGCHLD and the stop signals, each writing a byte to one pipe (the
/// stop signals also set `stop` first).
struct Watcher {
    stop: Arc<AtomicBool>,
    wake: OwnedFd,
}

impl Watcher {
    /// Make this process the subreaper of what it starts and register the wake-up handlers.
    fn new() -> std::io::Result<Watcher> {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, write) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // Registered before the pipe's action: signal-hook runs a signal's actions in
            // order, so the flag is set by the time the wake-up is read.
            signal_hook::flag::register(sig, Arc::clone(&stop))?;
        }
        for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
        }
        Ok(Watcher { stop, wake })
    }

    /// Be the watchdog of `command` (started with this process's environment); the agent's
    /// wait status, or one made up for an end of the shim's own (137: automaton died, 127: the
    /// agent could not start).
    fn watch(
        &self,
        grace: Duration,
        control: BorrowedFd<'_>,
        exit_record: Option<&Path>,
        command: &str,
    ) -> i32 {
        let exited = |code: i32| code << 8;
        let _ = rustix::io::fcntl_setfd(control, rustix::io::FdFlags::CLOEXEC);
        // Every event the shim acts on comes from the kernel: a child exited (SIGCHLD), a stop
        // signal, or the control pipe closed. The handlers write to one wake-up pipe; no tick.
        // Reaped below with waitpid(-1), with every orphan.
        let child_pid = match spawn_agent(command) {
            Ok(pid) => pid,
            Err(e) => {
                eprintln!("automaton: cannot start the agent: {e}");
                return exited(127);
            }
        };
        let mut status: Option<i32> = None;
        let mut stopping_since: Option<Instant> = None;
        loop {
            let _ = reap(child_pid, &mut status);
            if let Some(st) = status {
                // Recorded first, while automaton may already be gone: a later run then
                // judges what the agent left instead of running the phase again.
                if let Some((path, record)) = exit_record.zip(ExitRecord::now(st)) {
                    let _ = record.write(path);
                }
                // The agent is done: whatever it left (in or out of its group) goes too.
                stop_descendants(grace, &mut status, child_pid);
                reap_all(child_pid, &mut status);
                return st;
            }
            if control_closed(control) {
                // Automaton is gone: nobody watches the agent any more.
                stop_descendants(grace, &mut status, child_pid);
                reap_all(child_pid, &mut status);
                return exited(137);
            }
            let mut deadline = None;
            if self.stop.load(Ordering::SeqCst) {
                // Automaton stops the whole group: the agent got its TERM with the shim,
                // and a second one would read as "stop now" to the many agents that quit
                // at once on a second Ctrl-C. Only the descendants that left the group
                // (daemonized) are TERMed here. Every one gets the whole grace, then KILL;
                // automaton waits for this shim a moment longer than the grace
                // ([`WATCHDOG_MARGIN`]) before its own KILL.
                let since = *stopping_since.get_or_insert_with(|| {
                    signal_descendants(Signal::TERM, Reach::LeftTheGroup);
                    Instant::now()
                });
                if since.elapsed() >= grace {
                    signal_descendants(Signal::KILL, Reach::Every);
                } else {
                    deadline = Some(since + grace);
                }
            }
            wait_for_event(control, self.wake.as_fd(), deadline);
        }
    }
}

/// Start the agent command; its pid. A command the shell would only split into words (see
/// [`plain_words`]) is started directly, as make does: one `sh` fewer per phase, and the
/// agent's parent is the watchdog. Anything else, or a direct start that fails, goes through
/// `sh -c`, so errors read as the shell's. The agent inherits this process's environment,
/// folder and stdio; `Command` clears the signal mask and puts SIGPIPE back to its default
/// (Rust ignores it for itself), and exec resets every handled signal, so the agent gets the
/// dispositions automaton was started with.
fn spawn_agent(command: &str) -> std::io::Result<i32> {
    let spawn = |argv: &[&str]| {
        Command::new(argv[0])
            .args(&argv[1..])
            .spawn()
            .map(|child| child.id() as i32)
    };
    if let Some(words) = plain_words(command)
        && let Ok(pid) = spawn(&words)
    {
        return Ok(pid);
    }
    spawn(&["sh", "-c", command])
}

/// The words of a command in which `sh -c` would do nothing but split on blanks: only
/// characters no shell treats specially, no variable assignment, and a first word that is
/// not a shell keyword or builtin. `None` otherwise.
pub fn plain_words(command: &str) -> Option<Vec<&str>> {
    const SHELL_WORDS: &[&str] = &[
        "!", ".", ":", "alias", "bg", "break", "case", "cd", "command", "continue", "do", "done",
        "elif", "else", "esac", "eval", "exec", "exit", "export", "fc", "fg", "fi", "for",
        "function", "getopts", "hash", "if", "in", "jobs", "local", "read", "readonly", "return",
        "select", "set", "shift", "source", "then", "times", "trap", "type", "ulimit", "umask",
        "unalias", "unset", "until", "wait", "while",
    ];
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:,+@%".contains(c) || c == ' ';
    if !command.chars().all(plain) {
        return None;
    }
    let words: Vec<&str> = command.split(' ').filter(|w| !w.is_empty()).collect();
    match words.first() {
        Some(first) if !SHELL_WORDS.contains(first) => Some(words),
        _ => None,
    }
}

/// Block until the control pipe or the wake-up pipe is readable, or `deadline`; then empty
/// the wake-up pipe (its bytes only say "look again").
fn wait_for_event(control: BorrowedFd<'_>, wake: BorrowedFd<'_>, deadline: Option<Instant>) {
    let timeout =
        deadline.map(|d| super::group::timespec(d.saturating_duration_since(Instant::now())));
    let mut fds = [
        PollFd::from_borrowed_fd(control, PollFlags::IN),
        PollFd::from_borrowed_fd(wake, PollFlags::IN),
    ];
    let _ = poll(&mut fds, timeout.as_ref());
    let mut buf = [0u8; 64];
    while matches!(rustix::io::read(wake, &mut buf), Ok(n) if n > 0) {}
}

/// Whether automaton closed its end of the control pipe (it died).
fn control_closed(control: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(control.as_fd(), PollFlags::IN)];
    let zero = super::group::timespec(Duration::ZERO);
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::IN | PollFlags::ERR)
}

/// Reap every exited child (the agent and orphans reparented to us); the agent's raw status
/// lands in `status`. Returns whether no child at all is left (ECHILD).
fn reap(child: i32, status: &mut Option<i32>) -> bool {
    loop {
        // `wait`, not `waitpid(None)`: that would be `waitpid(0)`, the own group only, and miss
        // the orphans that left it.
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((pid, st))) => {
                if pid.as_raw_pid() == child {
                    *status = Some(st.as_raw());
                }
            }
            Ok(None) => return false,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return true,
        }
    }
}

/// Before the shim exits: reap what is left, so that no zombie is handed to an init that may
/// never reap it (in a container, pid 1 often does not). Waits at most half a second.
fn reap_all(child: i32, status: &mut Option<i32>) {
    let end = Instant::now() + Duration::from_millis(500);
    while !reap(child, status) && Instant::now() < end {
        super::group::wait_any_exit(&descendant_pids(), end);
    }
}

/// TERM every descendant, wait up to `grace` (reaping), then KILL what is left.
fn stop_descendants(grace: Duration, status: &mut Option<i32>, child: i32) {
    // Every descendant is a child of ours or below one (we are their subreaper): with no
    // child left there is nothing to look for in /proc.
    if reap(child, status) || signal_descendants(Signal::TERM, Reach::Every) == 0 {
        return;
    }
    if wait_descendants_gone(Instant::now() + grace, status, child) {
        return;
    }
    signal_descendants(Signal::KILL, Reach::Every);
    wait_descendants_gone(Instant::now() + Duration::from_secs(1), status, child);
}

/// Reap and wait until no live descendant is left or `end` passes; whether none is left.
fn wait_descendants_gone(end: Instant, status: &mut Option<i32>, child: i32) -> bool {
    loop {
        let _ = reap(child, status);
        let left = descendant_pids();
        if left.is_empty() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        super::group::wait_any_exit(&left, end);
    }
}

/// Send `sig` to the live descendants `reach` names; how many there were.
fn signal_descendants(sig: Signal, reach: Reach) -> usize {
    let own_group = rustix::process::getpgrp().as_raw_pid();
    let mut signalled = 0;
    for p in descendants() {
        if reach == Reach::LeftTheGroup && p.group == own_group {
            continue;
        }
        // A pid gone meanwhile only gives ESRCH.
        if let Some(pid) = Pid::from_raw(p.pid) {
            let _ = rustix::process::kill_process(pid, sig);
            signalled += 1;
        }
    }
    signalled
}

/// Which descendants [`signal_descendants`] signals.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    Every,
    /// Those in a process group other than the shim's: the ones a signal to the shim's group
    /// did not reach.
    LeftTheGroup,
}

fn descendant_pids() -> Vec<i32> {
    descendants().iter().map(|p| p.pid).collect()
}

/// Every live (non-zombie) process below this one.
fn descendants() -> Vec<Proc> {
    let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
    for p in Proc::all().into_iter().filter(|p| !p.zombie) {
        children.entry(p.parent).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut todo = vec![std::process::id() as i32];
    while let Some(parent) = todo.pop() {
        for c in children.remove(&parent).unwrap_or_default() {
            todo.push(c.pid);
            out.push(c);
        }
    }
    out
}

/// Exit the way the agent did: its exit code, or the signal that killed it.
pub fn exit_like(status: i32) -> i32 {
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

#[cfg(test)]
mod tests {
    use super::plain_words;

    #[test]
    fn only_commands_the_shell_would_just_split_are_started_directly() {
        assert_eq!(
            plain_words("sh  /tmp/agent.sh --model=x"),
            None,
            "an = may be an assignment"
        );
        assert_eq!(
            plain_words("sh /tmp/my-agent_1.sh -v"),
            Some(vec!["sh", "/tmp/my-agent_1.sh", "-v"])
        );
        assert_eq!(
            plain_words("claude -p --add-dir ./x"),
            Some(vec!["claude", "-p", "--add-dir", "./x"])
        );
        for shell in [
            "echo $HOME",
            "a 'b c'",
            "a \"b\"",
            "a; b",
            "a && b",
            "a | b",
            "a > f",
            "a < f",
            "a *",
            "a ~/x",
            "a #c",
            "a\tb",
            "a\nb",
            "a `b`",
            "(a)",
            "a \\b",
            "FOO=1 a",
            "exit 3",
            "cd /tmp",
            ". ./env",
            "exec a",
            "",
            "   ",
        ] {
            assert_eq!(plain_words(shell), None, "{shell:?} needs the shell");
        }
    }
}
