//! A child in its own process group, watched through the kernel: a pidfd says it exited, its
//! output pipe says it printed, the signal policy's wake pipe says automaton was asked to stop;
//! `poll(2)` waits on all of them with the nearest deadline as its timeout.
//!
//! Output reaches the log through a pipe the supervisor reads and copies into the file (a tee),
//! not by handing the child the file: so each write wakes the runner at once. A process that
//! escapes the group and keeps the pipe open cannot block us: the pipe is read without blocking
//! and dropped once the group is gone. An agent that outlives a SIGKILLed automaton gets EPIPE
//! (or SIGPIPE) when it next writes.

use super::procfs::Proc;
use super::signals;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest wait for a cancel flag that is not the signal policy's (no wake-up comes with it).
const BACKSTOP: Duration = Duration::from_millis(50);
/// After SIGKILL, how long members get to disappear before they are reported as leftovers.
const AFTER_KILL: Duration = Duration::from_secs(1);

/// Where the child's stdout and stderr go.
pub enum Output {
    /// Both through one pipe, copied into this file (opened for appending); the bytes are also
    /// handed to the caller ([`Group::take_fresh`]).
    Log(File),
    /// Each through a pipe the supervisor reads, keeping at most `max` bytes of each.
    Capture { max: usize },
}

/// How to run the child.
pub struct Options<'a> {
    /// Written to stdin by a helper thread, then stdin is closed; `None`: stdin is /dev/null.
    pub stdin: Option<&'a [u8]>,
    pub output: Output,
    /// The stop request: [`Group::wait`] returns [`Event::Cancelled`] once it is set.
    pub cancel: &'a AtomicBool,
    /// Between SIGTERM and SIGKILL when the group is stopped.
    pub kill_grace: Duration,
}

/// What [`Group::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The leader exited (and was reaped); its group may still hold members: call
    /// [`Group::finish`].
    Exited(ExitStatus),
    /// The cancel flag is set.
    Cancelled,
    /// Output, the deadline, or a spurious wake-up: look at the output and the clock again.
    Woke,
}

/// A process of the group still alive after SIGKILL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: u32,
    pub name: String,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.pid, self.name)
    }
}

/// Reads per wake-up, so a very chatty child cannot starve the deadline checks.
const READS_PER_WAKE: usize = 64;

/// One output pipe: what was read is kept (up to `max` bytes) or teed into `log`.
struct Capture {
    fd: Option<OwnedFd>,
    kept: Vec<u8>,
    max: usize,
    log: Option<File>,
}

impl Capture {
    /// Read what is there without blocking; closes the pipe at end of file.
    fn drain(&mut self) -> io::Result<()> {
        let Some(fd) = &self.fd else { return Ok(()) };
        let mut buf = [0u8; 64 * 1024];
        for _ in 0..READS_PER_WAKE {
            match rustix::io::read(fd, &mut buf) {
                Ok(0) => {
                    self.fd = None;
                    return Ok(());
                }
                Ok(n) => match &mut self.log {
                    Some(log) => {
                        log.write_all(&buf[..n])?;
                        self.kept.extend_from_slice(&buf[..n]);
                    }
                    None => {
                        let room = self.max.saturating_sub(self.kept.len());
                        self.kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                },
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// The child's ends of its stdin, stdout and stderr, and ours: the stdin pipe's write end and
/// the output pipes' read ends.
struct Plumbing {
    child: [OwnedFd; 3],
    stdin: Option<OwnedFd>,
    outputs: Vec<OwnedFd>,
}

impl Plumbing {
    fn new(stdin: bool, output: &Output) -> io::Result<Plumbing> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let (child_in, stdin) = if stdin {
            let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
            (r, Some(w))
        } else {
            (OwnedFd::from(File::open("/dev/null")?), None)
        };
        let (out, err, outputs) = match output {
            Output::Log(_) => {
                let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
                (w.try_clone()?, w, vec![r])
            }
            Output::Capture { .. } => {
                let (r1, w1) = pipe_with(PipeFlags::CLOEXEC)?;
                let (r2, w2) = pipe_with(PipeFlags::CLOEXEC)?;
                (w1, w2, vec![r1, r2])
            }
        };
        Ok(Plumbing {
            child: [child_in, out, err],
            stdin,
            outputs,
        })
    }
}

/// A running child that leads its own process group. Dropping it without [`Group::finish`] or
/// [`Group::stop`] (an error, a panic) SIGKILLs the group and reaps the leader.
pub struct Group<'a> {
    leader: Child,
    pgid: Pid,
    /// Readable once the leader exited: its pidfd, or a pipe a waiter thread writes to.
    exit_fd: OwnedFd,
    /// stdout and stderr (`Output::Capture`), or the one pipe teed into the log (`Output::Log`).
    captures: Vec<Capture>,
    cancel: &'a AtomicBool,
    /// The cancel flag comes with a wake-up on the policy's pipe.
    cancel_wakes: bool,
    kill_grace: Duration,
    status: Option<ExitStatus>,
    slot: Option<usize>,
    leftovers: Vec<Leftover>,
    done: bool,
}

impl<'a> Group<'a> {
    /// Spawn `cmd` (its stdio is set here) as the leader of a new process group.
    pub fn spawn(mut cmd: Command, opts: Options<'a>) -> io::Result<Group<'a>> {
        Self::spawn_with(opts, |[stdin, stdout, stderr]| {
            cmd.stdin(Stdio::from(stdin))
                .stdout(Stdio::from(stdout))
                .stderr(Stdio::from(stderr))
                .process_group(0);
            cmd.spawn()
        })
    }

    /// Start a group whose leader `launch` starts (in a new process group of its own) with
    /// the given stdin, stdout and stderr.
    pub fn spawn_with(
        opts: Options<'a>,
        launch: impl FnOnce([OwnedFd; 3]) -> io::Result<Child>,
    ) -> io::Result<Group<'a>> {
        let stdin_bytes = opts.stdin.filter(|s| !s.is_empty());
        let plumbing = Plumbing::new(stdin_bytes.is_some(), &opts.output)?;
        // The child's ends go with the launch: only the child holds them afterwards.
        let mut leader = launch(plumbing.child)?;
        let pgid = Pid::from_raw(leader.id() as i32).ok_or_else(|| io::Error::other("pid 0"))?;
        let slot = signals::register_group(pgid.as_raw_pid());
        let (capture_max, mut log) = match opts.output {
            Output::Log(file) => (usize::MAX, Some(file)),
            Output::Capture { max } => (max, None),
        };
        let exit_fd = match exit_notifier(Pid::from_child(&leader)) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
                let _ = leader.wait();
                if let Some(i) = slot {
                    signals::unregister_group(i);
                }
                return Err(e);
            }
        };
        // From here on, Drop kills and reaps on any error.
        let mut group = Group {
            exit_fd,
            leader,
            pgid,
            captures: Vec::new(),
            cancel: opts.cancel,
            cancel_wakes: signals::is_policy_flag(opts.cancel),
            kill_grace: opts.kill_grace,
            status: None,
            slot,
            leftovers: Vec::new(),
            done: false,
        };
        for fd in plumbing.outputs {
            rustix::io::ioctl_fionbio(&fd, true)?;
            group.captures.push(Capture {
                fd: Some(fd),
                kept: Vec::new(),
                max: capture_max,
                log: log.take(),
            });
        }
        if let (Some(stdin), Some(bytes)) = (plumbing.stdin, stdin_bytes) {
            feed_stdin(stdin, bytes)?;
        }
        Ok(group)
    }

    /// The leader's pid (also the group id).
    pub fn pid(&self) -> u32 {
        self.leader.id()
    }

    /// Wait for the next event, at most until `deadline` (`None`: no deadline), and return on
    /// the first sign of life: the leader exited, the cancel flag is set (the leader's exit wins
    /// when both are seen together), or something else woke us (output, the deadline) and the
    /// caller should look at the output and the clock again.
    pub fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event> {
        if let Some(status) = self.status {
            return Ok(Event::Exited(status));
        }
        let mut fds: Vec<BorrowedFd<'_>> = vec![self.exit_fd.as_fd()];
        fds.extend(
            self.captures
                .iter()
                .filter_map(|c| c.fd.as_ref().map(|f| f.as_fd())),
        );
        let exited = wait_any_readable(&fds, self.cancel, self.cancel_wakes, deadline)?[0];
        if exited && let Some(status) = self.leader.try_wait()? {
            self.status = Some(status);
            return Ok(Event::Exited(status));
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Ok(Event::Cancelled);
        }
        for c in &mut self.captures {
            c.drain()?;
        }
        Ok(Event::Woke)
    }

    /// After [`Event::Exited`]: stop what is left of the group and return the leader's status.
    pub fn finish(&mut self) -> io::Result<ExitStatus> {
        self.stop()
    }

    /// Stop the whole group: TERM, up to the grace for the leader and every member to exit,
    /// then KILL whatever is left; reap the leader and return its status. Members still alive
    /// after the KILL are kept in [`Group::leftovers`].
    pub fn stop(&mut self) -> io::Result<ExitStatus> {
        let pgid = self.pgid;
        // Fast path: the leader is reaped and nobody else is left.
        if self.status.is_some() && !group_alive(pgid) {
            return self.done();
        }
        let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
        let deadline = Instant::now() + self.kill_grace;
        if self.status.is_none() {
            wait_readable(self.exit_fd.as_fd(), deadline);
            self.status = self.leader.try_wait()?;
        }
        let gone = self.status.is_some() && wait_group_gone(pgid, deadline);
        if !gone {
            let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
            if self.status.is_none() {
                self.status = Some(self.leader.wait()?);
            }
            if !wait_group_gone(pgid, Instant::now() + AFTER_KILL) {
                self.leftovers = leftovers_of(pgid);
            }
        }
        self.done()
    }

    fn done(&mut self) -> io::Result<ExitStatus> {
        for c in &mut self.captures {
            c.drain()?;
        }
        self.done = true;
        if let Some(i) = self.slot.take() {
            signals::unregister_group(i);
        }
        match self.status {
            Some(s) => Ok(s),
            None => self.leader.wait(),
        }
    }

    /// Processes of the group still alive after the SIGKILL of [`Group::stop`].
    pub fn leftovers(&self) -> &[Leftover] {
        &self.leftovers
    }

    /// `Output::Log`: the bytes teed into the log since the last call.
    pub fn take_fresh(&mut self) -> Vec<u8> {
        self.captures
            .first_mut()
            .map(|c| std::mem::take(&mut c.kept))
            .unwrap_or_default()
    }

    /// What `Output::Capture` kept of stdout and stderr.
    pub fn take_output(&mut self) -> (Vec<u8>, Vec<u8>) {
        let mut it = self
            .captures
            .iter_mut()
            .map(|c| std::mem::take(&mut c.kept));
        (it.next().unwrap_or_default(), it.next().unwrap_or_default())
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
            let _ = self.leader.wait();
        }
        if let Some(i) = self.slot.take() {
            signals::unregister_group(i);
        }
    }
}

/// A descriptor that becomes readable when `pid` (our child) exits: its pidfd, or, where the
/// kernel has none (before 5.3, or a seccomp filter), a pipe written by a thread blocked in
/// `waitid(WNOWAIT)` (which leaves the child to be reaped by its `Child`).
fn exit_notifier(pid: Pid) -> io::Result<OwnedFd> {
    if let Ok(fd) = rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        return Ok(fd);
    }
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    std::thread::Builder::new()
        .name("child-exit".into())
        .spawn(move || {
            let _ = rustix::process::waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            );
            let _ = rustix::io::write(&write, &[1]);
        })?;
    Ok(read)
}

/// Block until `fd` is readable or `deadline` passes; whether it is readable.
fn wait_readable(fd: BorrowedFd<'_>, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ts = timespec(left);
        let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(n) if n > 0 => return true,
            Ok(_) => return false,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return false,
        }
    }
}

/// Write `bytes` to the child's stdin and close it. What fits in the pipe (most prompts) is
/// written at once; the rest on a detached thread: a child that never reads would otherwise
/// block us once the pipe buffer is full. Write errors (EPIPE: the child exited without
/// reading) are ignored. An escaped process that keeps the pipe open without reading only
/// holds that thread.
fn feed_stdin(stdin: OwnedFd, bytes: &[u8]) -> io::Result<()> {
    rustix::io::ioctl_fionbio(&stdin, true)?;
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::write(&stdin, &bytes[done..]) {
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => break,
            Err(_) => return Ok(()),
        }
    }
    if done == bytes.len() {
        return Ok(());
    }
    rustix::io::ioctl_fionbio(&stdin, false)?;
    let rest = bytes[done..].to_vec();
    let mut stdin = File::from(stdin);
    std::thread::Builder::new()
        .name("child-stdin".into())
        .spawn(move || {
            let _ = stdin.write_all(&rest);
        })?;
    Ok(())
}

/// Block in poll(2) until one of `fds` is readable, the cancel flag's wake-up pipe is (when
/// `cancel_wakes`; else a short backstop tick looks at the flag), or `deadline` passes; which
/// of `fds` are readable. A set flag returns at once.
pub fn wait_any_readable(
    fds: &[BorrowedFd<'_>],
    cancel: &AtomicBool,
    cancel_wakes: bool,
    deadline: Option<Instant>,
) -> io::Result<Vec<bool>> {
    let mut timeout = if cancel.load(Ordering::SeqCst) {
        Some(Duration::ZERO)
    } else {
        deadline.map(|d| d.saturating_duration_since(Instant::now()))
    };
    if !cancel_wakes {
        timeout = Some(timeout.map_or(BACKSTOP, |t| t.min(BACKSTOP)));
    }
    let wake = if cancel_wakes {
        signals::wake_fd()
    } else {
        None
    };
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .copied()
        .chain(wake)
        .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
        .collect();
    let ts = timeout.map(timespec);
    match poll(&mut polled, ts.as_ref()) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(polled[..fds.len()]
        .iter()
        .map(|p| !p.revents().is_empty())
        .collect())
}

/// Whether any process is left in the group (zombies included). EPERM means a member exists
/// that we may not signal.
pub fn group_alive(pgid: Pid) -> bool {
    match rustix::process::test_kill_process_group(pgid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// Wait until every live (non-zombie) member of the group has exited, or `deadline` passes;
/// whether the group is gone. Members forked meanwhile are caught by the next round.
pub fn wait_group_gone(pgid: Pid, deadline: Instant) -> bool {
    loop {
        let members = live_members(pgid);
        // Zombies (or nothing we can see) are all that may be left.
        if !group_alive(pgid) || members.is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        wait_any_exit(&members, deadline);
    }
}

/// Block until one of `pids` exits (its pidfd becomes readable) or `end` passes, so a wait
/// ends when the kernel says so. Where pidfds are not to be had (before Linux 5.3, or a
/// seccomp filter), a 10 ms nap stands in.
pub(super) fn wait_any_exit(pids: &[i32], end: Instant) {
    let left = end.saturating_duration_since(Instant::now());
    let nap = || std::thread::sleep(left.min(Duration::from_millis(10)));
    if pids.is_empty() {
        // Nothing to watch (what was there is a zombie by now): look again shortly.
        return nap();
    }
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(pids.len());
    for pid in pids.iter().filter_map(|&p| Pid::from_raw(p)) {
        match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => fds.push(fd),
            // Gone already: the exit waited for.
            Err(rustix::io::Errno::SRCH) => return,
            Err(_) => return nap(),
        }
    }
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::from_borrowed_fd(fd.as_fd(), PollFlags::IN))
        .collect();
    let _ = poll(&mut polled, Some(&timespec(left)));
}

/// Send TERM to a group we did not start (an agent a killed automaton left behind), wait up to
/// `grace` for it to go, then KILL what is left.
pub fn stop_foreign_group(pgid: u32, grace: Duration) {
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, Signal::TERM);
    if !wait_group_gone(pid, Instant::now() + grace) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

/// The live members of the group, as [`Leftover`]s: what a stop could not end.
pub fn leftovers_of(pgid: Pid) -> Vec<Leftover> {
    Proc::in_group(pgid.as_raw_pid())
        .into_iter()
        .filter(|p| !p.zombie)
        .map(|p| Leftover {
            pid: p.pid as u32,
            name: p.name,
        })
        .collect()
}

/// Pids of the group's members that are not zombies.
fn live_members(pgid: Pid) -> Vec<i32> {
    leftovers_of(pgid).iter().map(|l| l.pid as i32).collect()
}

/// `d` as poll's timeout.
pub(super) fn timespec(d: Duration) -> rustix::event::Timespec {
    rustix::event::Timespec {
        tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: d.subsec_nanos().into(),
    }
}
