//! The watchdog every agent runs under: the agent's process group is led by a tiny shim (a
//! fork of the [`super::zygote`] fork server, or this binary re-executed with [`SHIM_ARG`]),
//! not by the agent itself.
//!
//! - **Recorded before it can act.** An executed shim reads one byte from its control pipe
//!   (the descriptor its `<control-fd>` argument names) before it starts the agent; automaton
//!   writes it only once the shim's pid and start time are in `logs/agent.pid`. If automaton
//!   dies first, the shim reads end of file and exits without ever starting the agent. One
//!   forked by the [`super::zygote`] writes its line itself, then starts at once.
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

/// Held while a control pipe's read end is inheritable, so that agents started at the same
/// time by other threads of automaton do not inherit it too. (A process spawned meanwhile
/// outside the supervisor, such as `git`, may; a stray read end is harmless: the shim watches
/// for the write end to close.)
static INHERITABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `spawn` with `read` (a control pipe's read end, close-on-exec) inheritable, so the
/// shim it starts gets it under the same number, passed as its `<control-fd>` argument.
/// Nothing runs between fork and exec, so the spawn can take the kernel's fast path
/// (vfork-like) rather than copying automaton's address space.
pub fn with_control<T>(
    read: &rustix::fd::OwnedFd,
    spawn: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    use rustix::io::{FdFlags, fcntl_setfd};
    let _held = INHERITABLE.lock().unwrap_or_else(|e| e.into_inner());
    fcntl_setfd(read, FdFlags::empty())?;
    let spawned = spawn();
    fcntl_setfd(read, FdFlags::CLOEXEC)?;
    spawned
}

/// The shim's arguments after [`SHIM_ARG`]: `<grace-ms> <control-fd> <command>`.
pub fn main(args: &[String]) -> i32 {
    let (Some(grace), Some(Ok(control_fd)), Some(command)) = (
        args.first(),
        args.get(1).map(|f| f.parse::<i32>()),
        args.get(2),
    ) else {
        eprintln!("usage: automaton {SHIM_ARG} <grace-ms> <control-fd> <command>");
        return 2;
    };
    let grace = Duration::from_millis(grace.parse().unwrap_or(2000));
    // SAFETY: `control_fd` is the control pipe automaton handed down; borrowed, never closed.
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
    let watcher = match Watcher::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("automaton: cannot watch the agent: {e}");
            return 127;
        }
    };
    exit_like(watch(&watcher, grace, control, command))
}

/// What wakes a watchdog: SIGCHLD and the stop signals, each writing a byte to one pipe.
/// Made once per watchdog process (the handlers stay for its life), so a watchdog that runs
/// one agent after another ([`super::zygote`]) registers them once.
pub struct Watcher {
    stop: std::sync::Arc<AtomicBool>,
    wake: rustix::fd::OwnedFd,
}

impl Watcher {
    /// Make this process the subreaper of what it starts and register the wake-up handlers.
    pub fn new() -> std::io::Result<Watcher> {
        // SAFETY: prctl with integer arguments only changes this process's own attributes.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let wake = wake_pipe(&stop)?;
        Ok(Watcher { stop, wake })
    }

    /// Whether a stop signal (TERM, INT, HUP) ever reached this watchdog: automaton stopped
    /// its group, so it must not take another agent.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Block until `fd` is readable (or at its end) unless a stop signal comes first; whether
    /// it is, with no stop signal. No deadline: a watchdog between agents waits for a word
    /// from automaton or the fork server, each of which ends by closing its end.
    pub fn wait_for(&self, fd: BorrowedFd<'_>) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            let mut fds = [
                PollFd::from_borrowed_fd(fd, PollFlags::IN),
                PollFd::from_borrowed_fd(self.wake.as_fd(), PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return false,
            }
            let ready = !fds[0].revents().is_empty();
            let mut buf = [0u8; 64];
            while matches!(rustix::io::read(&self.wake, &mut buf), Ok(n) if n > 0) {}
            if ready {
                return !self.stopped();
            }
        }
    }
}

/// Be the watchdog of `command` (started with this process's environment), in this process;
/// the agent's wait status, or one made up for an end of the shim's own (137: automaton
/// died, 127: the agent could not start). Used by the re-executed shim
/// ([`main`]) and by one forked from the [`super::zygote`].
pub fn watch(watcher: &Watcher, grace: Duration, control: BorrowedFd<'_>, command: &str) -> i32 {
    let exited = |code: i32| code << 8;
    let _ = rustix::io::fcntl_setfd(control, rustix::io::FdFlags::CLOEXEC);
    // Every event the shim acts on comes from the kernel: a child exited (SIGCHLD), a stop
    // signal, or the control pipe closed. The handlers write to one wake-up pipe; no tick.
    let (stop, wake) = (&watcher.stop, &watcher.wake);
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
        if stop.load(Ordering::SeqCst) {
            // Automaton stops the group (the group got the signal too): daemonized
            // descendants did not, and must be gone before automaton's KILL ends the shim.
            let since = *stopping_since.get_or_insert_with(|| {
                signal_descendants(libc::SIGTERM);
                Instant::now()
            });
            if since.elapsed() >= grace / 2 {
                signal_descendants(libc::SIGKILL);
            } else {
                deadline = Some(since + grace / 2);
            }
        }
        wait_for_event(control, wake.as_fd(), deadline);
    }
}

/// Start the agent command; its pid. A command the shell would only split into words (see
/// [`plain_words`]) is started directly, as make does: one `sh` fewer per phase. Anything
/// else, or a direct start that fails, goes through `sh -c`, so errors read as the shell's.
fn spawn_agent(command: &str) -> std::io::Result<i32> {
    if let Some(words) = plain_words(command)
        && let Ok(pid) = spawn(&words)
    {
        return Ok(pid);
    }
    spawn(&["sh", "-c", command])
}

/// Start `argv` as `std::process::Command` would with everything inherited: the program
/// looked up in PATH, this process's environment, stdio and folder, no signal blocked, and
/// every signal at its default disposition but those this process ignores (SIGPIPE aside,
/// which Rust ignores for itself). Those are named to posix_spawn once, found out at the
/// first start ([`signals_to_reset`]): unnamed, it asks each signal's disposition before
/// setting it, 64 system calls more on every start, in the child, while this process waits.
fn spawn(argv: &[&str]) -> std::io::Result<i32> {
    use std::ffi::CString;
    use std::mem::MaybeUninit;
    let args = argv
        .iter()
        .map(|a| CString::new(*a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(std::io::Error::other)?;
    let mut ptrs: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    ptrs.push(std::ptr::null_mut());
    // Declared as the fork server declares it, which points it at each job's environment.
    unsafe extern "C" {
        static mut environ: *const *const libc::c_char;
    }
    // SAFETY: read by value; a watchdog is single-threaded, and its environment is set for
    // this agent before the start and left alone until the start is done.
    let envp = unsafe { environ };
    let mut pid: libc::pid_t = 0;
    // SAFETY: the attributes are initialised before use and destroyed after; `ptrs` is a
    // null-terminated array of pointers into `args`, and `envp` this process's environment,
    // both alive across the call. glibc (2.24 on) and musl report a failed exec as the
    // error of the call, which the caller's `sh -c` fallback relies on.
    let rc = unsafe {
        let mut attr = MaybeUninit::<libc::posix_spawnattr_t>::uninit();
        let rc = libc::posix_spawnattr_init(attr.as_mut_ptr());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        let mut attr = attr.assume_init();
        let mut none = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(none.as_mut_ptr());
        let mut rc = libc::posix_spawnattr_setsigdefault(&mut attr, signals_to_reset());
        if rc == 0 {
            rc = libc::posix_spawnattr_setsigmask(&mut attr, none.as_ptr());
        }
        if rc == 0 {
            let flags = libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK;
            rc = libc::posix_spawnattr_setflags(&mut attr, flags as libc::c_short);
        }
        if rc == 0 {
            rc = libc::posix_spawnp(
                &mut pid,
                ptrs[0],
                std::ptr::null(),
                &attr,
                ptrs.as_ptr(),
                envp.cast(),
            );
        }
        libc::posix_spawnattr_destroy(&mut attr);
        rc
    };
    match rc {
        0 => Ok(pid),
        rc => Err(std::io::Error::from_raw_os_error(rc)),
    }
}

/// The signals a started agent gets at their default disposition: all but those this
/// process ignores (which an agent inherits ignored, as from any parent), SIGPIPE included.
/// Found out once: a watchdog's dispositions are set before its first agent and never
/// change after.
fn signals_to_reset() -> &'static libc::sigset_t {
    static SET: OnceLock<libc::sigset_t> = OnceLock::new();
    SET.get_or_init(|| {
        // SAFETY: sigset_t is plain data, initialised by sigfillset; sigaction with a null
        // new action only reads this process's disposition.
        unsafe {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigfillset(set.as_mut_ptr());
            let mut set = set.assume_init();
            for sig in 1..=libc::SIGRTMAX() {
                let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
                if sig != libc::SIGPIPE
                    && libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) == 0
                    && old.assume_init().sa_sigaction == libc::SIG_IGN
                {
                    libc::sigdelset(&mut set, sig);
                }
            }
            set
        }
    })
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

/// A non-blocking pipe made readable by SIGCHLD and by a stop signal (which also sets `stop`).
fn wake_pipe(stop: &std::sync::Arc<AtomicBool>) -> std::io::Result<rustix::fd::OwnedFd> {
    use rustix::pipe::{PipeFlags, pipe_with};
    let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    // The handlers write to it for as long as this process lives.
    let write = std::os::fd::IntoRawFd::into_raw_fd(write);
    for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let stop = std::sync::Arc::clone(stop);
        let action = move || {
            if sig != libc::SIGCHLD {
                stop.store(true, Ordering::SeqCst);
            }
            // SAFETY: write(2) on a pipe this process keeps open; a full pipe already wakes.
            unsafe { libc::write(write, b"!".as_ptr().cast(), 1) };
        };
        // SAFETY: the action only stores to an atomic and writes to a pipe, both
        // async-signal-safe (one handler per signal: two system calls, where a flag and a
        // pipe registered apart take a dozen).
        unsafe { signal_hook::low_level::register(sig, action) }?;
    }
    Ok(read)
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
pub fn control_closed(control: BorrowedFd<'_>) -> bool {
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
/// never reap it (in a container, pid 1 often does not). Waits at most half a second.
fn reap_all(child: i32, status: &mut Option<i32>) {
    let end = Instant::now() + Duration::from_millis(500);
    while !reap(child, status) && Instant::now() < end {
        wait_any_exit(&descendants(), end);
    }
}

/// Whether this process has no child left, and so no descendant either: as the subreaper it
/// becomes the parent of every orphan below it. (Reaps a zombie child it finds.)
pub fn no_child_left() -> bool {
    // SAFETY: waitpid with WNOHANG and no status pointer only polls (or reaps a zombie).
    unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) < 0 }
}

/// TERM every descendant, wait up to `grace` (reaping), then KILL what is left.
fn stop_descendants(grace: Duration, status: &mut Option<i32>, child: i32) {
    // Every descendant is a child of ours or below one (we are their subreaper): with no
    // child left there is nothing to look for in /proc.
    if reap(child, status) || signal_descendants(libc::SIGTERM) == 0 {
        return;
    }
    if wait_descendants_gone(Instant::now() + grace, status, child) {
        return;
    }
    signal_descendants(libc::SIGKILL);
    wait_descendants_gone(Instant::now() + Duration::from_secs(1), status, child);
}

/// Reap and wait until no live descendant is left or `end` passes; whether none is left.
fn wait_descendants_gone(end: Instant, status: &mut Option<i32>, child: i32) -> bool {
    loop {
        let _ = reap(child, status);
        let left = descendants();
        if left.is_empty() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        wait_any_exit(&left, end);
    }
}

/// Block until one of `pids` exits (its pidfd is readable) or `end` passes. Where pidfds are
/// not to be had (before Linux 5.3), a 10 ms nap stands in.
fn wait_any_exit(pids: &[i32], end: Instant) {
    let fds: Vec<rustix::fd::OwnedFd> = pids
        .iter()
        .filter_map(|&p| rustix::process::Pid::from_raw(p))
        .filter_map(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok())
        .collect();
    let left = end.saturating_duration_since(Instant::now());
    if fds.is_empty() {
        std::thread::sleep(left.min(Duration::from_millis(10)));
        return;
    }
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::from_borrowed_fd(fd.as_fd(), PollFlags::IN))
        .collect();
    let _ = poll(&mut polled, Some(&super::group::timespec(left)));
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
