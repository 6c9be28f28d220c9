//! The `tmux` executor: each running phase is a window of a tmux session that belongs to the
//! project, so that a person can watch it live (`automaton attach <task>`).
//!
//! - One tmux server per project, on a private socket (`tmux -L automaton-<hash>`, the hash of
//!   the project's absolute path, or `$AUTOMATON_TMUX_SOCKET`), so two projects never share a
//!   session and automaton never touches the user's own tmux server. The session is created
//!   detached with the first window (no terminal needed, works in CI); tmux ends the session
//!   with its last window and the server with its last session.
//! - The window runs a small wrapper script (`logs/<phase>-<n>.tmux.sh`): the AUTOMATON_*
//!   variables, then `{ sh -c '<agent>' < prompt; echo $? > status; } 2>&1 | tee FIFO`. So the
//!   window shows everything the agent prints, and automaton keeps its own pipe reader: it
//!   reads the FIFO without blocking and tees it into the phase log, exactly as it reads the
//!   pipe of a local child. CONTRACT_MET, stall detection and the live line work unchanged.
//! - The window's pane is a session leader (tmux calls `setsid`), so the pane's pid is the
//!   process group of the wrapper, the tee and the agent: a timeout, stall or Ctrl-C TERMs that
//!   group, waits the grace, KILLs it and closes the window. The pane's exit is seen through its
//!   pidfd; the agent's status comes from the status file.
//! - The agent's environment is the tmux server's (the server is started by automaton, from
//!   its own environment, when the project has no session) plus the AUTOMATON_* contract.
//! - A finished phase's window closes with its wrapper.

use super::{AgentSpec, Executor, Job, Running, beside, killed_by, output_of, read_status};
use crate::process::{Event, Leftover, group, signals};
use crate::store::agent_pid::AgentPidRecord;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::{AsFd, OwnedFd};
use rustix::process::{Pid, PidfdFlags, Signal};
use sha2::Digest;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The project's tmux server and session.
#[derive(Debug)]
pub struct Tmux {
    pub socket: String,
    pub session: String,
    /// Creating the session and its windows, one thread at a time.
    starting: Mutex<()>,
}

impl Tmux {
    /// The tmux of the project at `project`, on `socket` (`AUTOMATON_TMUX_SOCKET` through the
    /// settings; none or blank: the project's own); an error naming the setting when tmux is
    /// missing.
    pub fn for_project(project: &Path, socket: Option<&str>) -> io::Result<Tmux> {
        let t = Tmux::names(project, socket);
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => Ok(t),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "`- **Executor**: tmux` needs tmux, which was not found on PATH: install tmux \
                 or set `- **Executor**: local` (or `--executor local`)",
            )),
        }
    }

    /// The socket and session names of a project (without checking that tmux exists).
    pub fn names(project: &Path, socket: Option<&str>) -> Tmux {
        let abs = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
        let hash = sha2::Sha256::digest(abs.as_os_str().as_encoded_bytes());
        let short: String = hash[..6].iter().map(|b| format!("{b:02x}")).collect();
        let socket = socket
            .filter(|s| !s.trim().is_empty())
            .map_or_else(|| format!("automaton-{short}"), str::to_string);
        Tmux {
            socket,
            session: format!("automaton-{short}"),
            starting: Mutex::new(()),
        }
    }

    /// `tmux -L <socket>`, without the caller's `$TMUX` (automaton may itself run in tmux).
    pub fn command(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).env_remove("TMUX");
        c
    }

    /// `(window id, window name)` of every window of the project's session.
    pub fn windows(&self) -> Vec<(String, String)> {
        let Ok(out) = self
            .command()
            .args(["list-windows", "-t"])
            .arg(format!("={}", self.session))
            .args(["-F", "#{window_id}\t#{window_name}"])
            .output()
        else {
            return Vec::new();
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect()
    }

    /// The window running a phase of `task` (its name is `<task> <phase>`), if any.
    pub fn window_of(&self, task: &str) -> Option<(String, String)> {
        let prefix = format!("{task} ");
        self.windows()
            .into_iter()
            .find(|(_, name)| name.starts_with(&prefix))
    }

    /// Open a window running `script`; its window id and pane pid.
    fn open_window(&self, name: &str, cwd: &Path, script: &Path) -> io::Result<(String, u32)> {
        let _one = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        let target = format!("={}:", self.session);
        let run = |first: bool| -> io::Result<String> {
            let mut c = self.command();
            if first {
                c.args([
                    "new-session",
                    "-d",
                    "-s",
                    &self.session,
                    "-x",
                    "200",
                    "-y",
                    "50",
                ]);
            } else {
                c.args(["new-window", "-d", "-t", &target]);
            }
            c.args(["-P", "-F", "#{window_id} #{pane_pid}", "-n", name, "-c"])
                .arg(cwd)
                .arg("sh")
                .arg(script);
            output_of(&mut c, "tmux")
        };
        let has_session = self
            .command()
            .args(["has-session", "-t"])
            .arg(format!("={}", self.session))
            .output()
            .is_ok_and(|o| o.status.success());
        let out = if has_session {
            // The session may have ended with its last window meanwhile.
            run(false).or_else(|_| run(true))?
        } else {
            run(true).or_else(|_| run(false))?
        };
        let mut parts = out.split_whitespace();
        let (Some(id), Some(pid)) = (parts.next(), parts.next().and_then(|p| p.parse().ok()))
        else {
            return Err(io::Error::other(format!(
                "tmux did not say which window it opened: {out:?}"
            )));
        };
        // A name set with -n keeps tmux from renaming the window after its command.
        Ok((id.to_string(), pid))
    }

    fn kill_window(&self, id: &str) {
        let _ = self.command().args(["kill-window", "-t", id]).output();
    }
}

impl Executor for Tmux {
    fn name(&self) -> &'static str {
        "tmux"
    }

    fn start<'a>(&'a self, spec: &AgentSpec<'a>, job: &Job) -> io::Result<Box<dyn Running + 'a>> {
        let log = super::super::agent::open_log(spec.log_path)?;
        let fifo = beside(spec.log_path, "fifo");
        let status = beside(spec.log_path, "status");
        let script = beside(spec.log_path, "tmux.sh");
        for stale in [&fifo, &status] {
            let _ = std::fs::remove_file(stale);
        }
        make_fifo(&fifo)?;
        // Opened before the window exists: no writer yet is not an end of file.
        let reader = rustix::fs::open(
            &fifo,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let stdin = super::stdin_file(spec)?;
        let env_fifo = beside(spec.log_path, "env");
        let _ = std::fs::remove_file(&env_fifo);
        make_fifo(&env_fifo)?;
        let script_text = format!(
            "#!/bin/sh\n. {}\n{}",
            super::sh_quote(&env_fifo.display().to_string()),
            super::wrapper_script(spec, &stdin, &status, Some(&fifo))
                .trim_start_matches("#!/bin/sh\n")
        );
        crate::fsx::write_atomic(&script, script_text.as_bytes())?;
        // The wrapper waits on this FIFO, so the agent starts only once `release` hands the
        // environment over, after the pane is recorded in the pid file.
        let environment = Some((env_fifo, environment_text(spec)));
        let name = if job.task.is_empty() {
            "agent".to_string()
        } else {
            format!("{} {}", job.task, job.phase)
        };
        let (window, pane) = self.open_window(&name, spec.cwd, &script)?;
        let pgid = Pid::from_raw(pane as i32).ok_or_else(|| io::Error::other("pane pid 0"))?;
        // Gone already (a very short agent): its status file says how it ended.
        let exit_fd = rustix::process::pidfd_open(pgid, PidfdFlags::empty()).ok();
        let slot = signals::register_group(pane as i32);
        Ok(Box::new(TmuxRun {
            tmux: self,
            window,
            pgid,
            exit_fd,
            fifo: Some(reader),
            fifo_path: fifo,
            environment,
            log,
            fresh: Vec::new(),
            status_path: status,
            status: None,
            cancel: spec.cancel,
            cancel_wakes: signals::is_policy_flag(spec.cancel),
            kill_grace: spec.kill_grace,
            slot,
            leftovers: Vec::new(),
        }))
    }
}

/// A phase running in a tmux window.
struct TmuxRun<'a> {
    tmux: &'a Tmux,
    window: String,
    /// The pane's pid, which leads the group of the wrapper and the agent.
    pgid: Pid,
    /// The pane's pidfd (None: it had exited before we could open it).
    exit_fd: Option<OwnedFd>,
    fifo: Option<OwnedFd>,
    fifo_path: PathBuf,
    /// The environment FIFO and what to write into it, until [`Running::release`].
    environment: Option<(PathBuf, String)>,
    log: File,
    fresh: Vec<u8>,
    status_path: PathBuf,
    status: Option<ExitStatus>,
    cancel: &'a AtomicBool,
    cancel_wakes: bool,
    kill_grace: Duration,
    slot: Option<usize>,
    leftovers: Vec<Leftover>,
}

impl TmuxRun<'_> {
    /// Read what the FIFO holds into the log; closes it at end of file (every writer gone).
    fn drain(&mut self) -> io::Result<()> {
        let Some(fd) = &self.fifo else { return Ok(()) };
        let mut buf = [0u8; 64 * 1024];
        for _ in 0..64 {
            match rustix::io::read(fd, &mut buf) {
                Ok(0) => {
                    self.fifo = None;
                    return Ok(());
                }
                Ok(n) => {
                    self.log.write_all(&buf[..n])?;
                    self.fresh.extend_from_slice(&buf[..n]);
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Whether the pane's process has exited.
    fn pane_gone(&self) -> bool {
        match &self.exit_fd {
            Some(fd) => {
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                let zero = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
            }
            None => true,
        }
    }

    /// After the pane exited: the rest of the output, then the status.
    fn ended(&mut self, stopped: bool) -> io::Result<ExitStatus> {
        // Every writer is gone once the group is: read to the end.
        for _ in 0..1024 {
            if self.fifo.is_none() {
                break;
            }
            self.drain()?;
            if self.fifo.is_some() && !group::group_alive(self.pgid) {
                // Nobody can write any more; what is left is in the buffer.
                self.drain()?;
                self.fifo = None;
            }
        }
        let status = read_status(&self.status_path).unwrap_or_else(|| {
            killed_by(if stopped {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            })
        });
        self.status = Some(status);
        Ok(status)
    }

    fn cleanup(&mut self) {
        self.tmux.kill_window(&self.window);
        if let Some(i) = self.slot.take() {
            signals::unregister_group(i);
        }
        let _ = std::fs::remove_file(&self.fifo_path);
        let _ = std::fs::remove_file(&self.status_path);
        let _ = std::fs::remove_file(beside(&self.fifo_path, "tmux.sh"));
        // A window that never read its environment leaves the writer blocked: release it.
        let env_fifo = beside(&self.fifo_path, "env");
        if let Ok(fd) = rustix::fs::open(
            &env_fifo,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            drop(fd);
        }
        let _ = std::fs::remove_file(&env_fifo);
    }
}

impl Running for TmuxRun<'_> {
    fn id(&self) -> u32 {
        self.pgid.as_raw_pid() as u32
    }
    fn release(&mut self) -> io::Result<()> {
        if let Some((fifo, text)) = self.environment.take() {
            hand_environment(fifo, text);
        }
        Ok(())
    }

    fn record(&self) -> AgentPidRecord {
        // With the owner, as for a local agent: while this automaton runs, no other one
        // stops the window's agent.
        super::group_record(self.id())
    }

    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event> {
        if let Some(status) = self.status {
            return Ok(Event::Exited(status));
        }
        let fds: Vec<BorrowedFd<'_>> = self
            .exit_fd
            .iter()
            .map(|f| f.as_fd())
            .chain(self.fifo.as_ref().map(|f| f.as_fd()))
            .collect();
        group::wait_any_readable(&fds, self.cancel, self.cancel_wakes, deadline)?;
        if self.pane_gone() {
            let status = self.ended(false)?;
            return Ok(Event::Exited(status));
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Ok(Event::Cancelled);
        }
        self.drain()?;
        Ok(Event::Woke)
    }

    fn take_fresh(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.fresh)
    }

    fn finish(&mut self) -> io::Result<ExitStatus> {
        if self.status.is_none() || group::group_alive(self.pgid) {
            return self.stop();
        }
        self.cleanup();
        Ok(self.status.unwrap_or_else(|| killed_by(libc::SIGKILL)))
    }

    fn stop(&mut self) -> io::Result<ExitStatus> {
        let pgid = self.pgid;
        if group::group_alive(pgid) {
            let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
            if !group::wait_group_gone(pgid, Instant::now() + self.kill_grace) {
                let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
                if !group::wait_group_gone(pgid, Instant::now() + Duration::from_secs(1)) {
                    self.leftovers = group::leftovers_of(pgid);
                }
            }
        }
        let status = match self.status {
            Some(s) => s,
            None => self.ended(true)?,
        };
        self.cleanup();
        Ok(status)
    }

    fn leftovers(&self) -> Vec<Leftover> {
        self.leftovers.clone()
    }
}

impl Drop for TmuxRun<'_> {
    fn drop(&mut self) {
        if self.slot.is_some() {
            // An error or a panic before stop/finish: the agent must not outlive the phase.
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
            self.cleanup();
        }
    }
}

/// The agent's environment (automaton's own, then the AUTOMATON_* contract), handed to the
/// window through a FIFO its wrapper sources first: so the agent sees the environment of this
/// run, not the one the tmux server was started with, and no value (API keys) is written to
/// disk or shown on a command line.
fn environment_text(spec: &AgentSpec<'_>) -> String {
    let mut text = String::new();
    let own = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    for (k, v) in own.chain(spec.env.iter().cloned()) {
        let ident = !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident
            || matches!(
                k.as_str(),
                "TMUX" | "TMUX_PANE" | "PWD" | "OLDPWD" | "SHLVL" | "_"
            )
        {
            continue;
        }
        text.push_str(&format!("export {k}={}\n", super::sh_quote(&v)));
    }
    text
}

/// Write `text` into the wrapper's environment FIFO; a helper thread blocks until the wrapper
/// opens it.
fn hand_environment(fifo: PathBuf, text: String) {
    let _ = std::thread::Builder::new()
        .name("tmux-env".into())
        .spawn(move || {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                let _ = f.write_all(text.as_bytes());
            }
        });
}

fn make_fifo(path: &Path) -> io::Result<()> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("mkfifo {}: {e}", path.display()),
        )
    })
}
