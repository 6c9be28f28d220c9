//! Where a phase's agent runs: the seam between the agent runner ([`super::agent`]) and the
//! thing that starts, watches and stops the agent.
//!
//! - `local` ([`Local`]): a child of automaton in its own process group, on the one process
//!   supervisor ([`crate::process::Group`]); today's behaviour and the default.
//! - `tmux` ([`tmux::Tmux`]): a window of the project's own tmux server (a private socket named
//!   from a hash of the project path), started detached; its output comes back through a FIFO.
//! - `slurm` ([`slurm::Slurm`]): one batch job per phase; its output goes to the phase log,
//!   which automaton follows.
//!
//! The runner only sees [`Running`]: wait for the next event with a deadline, take the bytes the
//! agent printed since the last call, stop it, or finish after it exited. So the agent contract
//! (prompt on stdin, the phase log, CONTRACT_MET, the phase/stall/total caps, Ctrl-C, the pid
//! file that lets a later run stop what a SIGKILLed automaton left behind) is the runner's and
//! holds for every executor.

pub mod slurm;
pub mod tmux;

use super::agent::AgentSpec;
use super::config::ExecutorKind;
use crate::process::{Event, Group, Leftover, Options, Output};
use crate::store::agent_pid::{Agent, AgentPidRecord, Owner};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// The executor words of `- **Executor**:`.
pub const WORDS: [&str; 3] = ["local", "tmux", "slurm"];

/// What the runner names a phase by (tmux window names, Slurm job names) and what it needs.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// The task's path, e.g. `tasks/auth/subtasks/login`.
    pub task: String,
    /// The phase word, e.g. `implement`.
    pub phase: String,
    /// Estimated VRAM need, in GB (rounded up): the Slurm GRES request.
    pub vram_gb: Option<u64>,
    /// A Slurm job an earlier, killed automaton submitted for this very phase (its log is
    /// `spec.log_path`): follow it instead of submitting a second one.
    pub reattach: Option<u64>,
}

/// Starts agents.
pub trait Executor: Send + Sync {
    /// `local`, `tmux` or `slurm`: for messages and records only; what the run does with an
    /// executor follows from the capabilities below.
    fn name(&self) -> &'static str;

    /// Whether agents run on this machine (so they use its GPU, and die with it). VRAM
    /// admission applies only then: elsewhere (Slurm) the need is a resource request and
    /// the cluster packs the jobs. An agent that runs elsewhere outlives a power cut here,
    /// so its pid record is made durable.
    fn runs_on_this_host(&self) -> bool {
        true
    }

    /// Whether an agent an earlier, killed automaton started keeps running on its own and a
    /// later run can follow it again ([`Job::reattach`]) instead of stopping it.
    fn can_reattach(&self) -> bool {
        false
    }

    /// Start the agent of `spec` (command, cwd, env, prompt, log). The log file exists when
    /// this is called; what the agent prints must reach it, and [`Running::take_fresh`].
    fn start<'a>(&'a self, spec: &AgentSpec<'a>, job: &Job) -> io::Result<Box<dyn Running + 'a>>;
}

/// One started agent.
pub trait Running {
    /// The id the runner reports: the process (group) id, or the Slurm job id.
    fn id(&self) -> u32;
    /// What the pid file holds while it runs (see [`stop_stale`]).
    fn record(&self) -> AgentPidRecord;
    /// Block until the agent exits, prints, `deadline` passes or the cancel flag is set.
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event>;
    /// The bytes printed (and logged) since the last call.
    fn take_fresh(&mut self) -> Vec<u8>;
    /// After [`Event::Exited`]: make sure nothing of the agent is left; its status.
    fn finish(&mut self) -> io::Result<ExitStatus>;
    /// Stop the agent (TERM, grace, KILL, or `scancel`); its status.
    fn stop(&mut self) -> io::Result<ExitStatus>;
    /// Processes still alive after the final KILL.
    fn leftovers(&self) -> Vec<Leftover>;
    /// Called once the pid file holds [`Running::record`]: an agent held until it is
    /// recorded (the local watchdog, [`crate::process::shim`]) may start now.
    fn release(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Today's runner: a child of automaton in its own process group.
#[derive(Debug, Default, Clone, Copy)]
pub struct Local;

impl Executor for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn start<'a>(&'a self, spec: &AgentSpec<'a>, _job: &Job) -> io::Result<Box<dyn Running + 'a>> {
        let log = super::agent::open_log(spec.log_path)?;
        // Under the watchdog ([`crate::process::shim`]) when the binary turned it on and the run
        // is recorded: it holds the agent until `go` says the pid file is written, and stops
        // it when automaton dies (`go` then reads end of file).
        let shim = crate::process::shim::exe().filter(|_| spec.pid_file.is_some());
        let opts = Options {
            stdin: Some(spec.prompt.as_bytes()),
            output: Output::Log(log),
            cancel: spec.cancel,
            kill_grace: spec.kill_grace,
        };
        let Some(exe) = shim else {
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(spec.command)
                .current_dir(spec.cwd)
                .envs(spec.env.iter().map(|(k, v)| (k, v)));
            return Ok(Box::new(Gated {
                group: Group::spawn(cmd, opts)?,
                go: None,
            }));
        };
        let (read, go) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        // The agent gets the whole grace from its watchdog, which then ends what is left and
        // exits: the group is KILLed only if the watchdog itself does not end.
        let opts = Options {
            kill_grace: spec.kill_grace + crate::process::shim::WATCHDOG_MARGIN,
            ..opts
        };
        let group = Group::spawn_with(opts, |[stdin, stdout, stderr]| {
            let mut cmd = Command::new(exe);
            cmd.arg(crate::process::shim::SHIM_ARG)
                .arg(spec.kill_grace.as_millis().to_string())
                .arg(read.as_raw_fd().to_string())
                .arg(crate::store::agent_exit::ExitRecord::path_for(
                    spec.log_path,
                ))
                .arg(spec.command)
                .current_dir(spec.cwd)
                .envs(spec.env.iter().map(|(k, v)| (k, v)))
                .stdin(stdin)
                .stdout(stdout)
                .stderr(stderr)
                .process_group(0);
            crate::process::shim::with_control(&read, || cmd.spawn())
        })?;
        // Only the watchdog keeps the read end.
        drop(read);
        Ok(Box::new(Gated {
            group,
            go: Some(go),
        }))
    }
}

/// A local agent, held by its watchdog until [`Running::release`].
struct Gated<'a> {
    group: Group<'a>,
    /// The control pipe's write end: kept open while the agent runs, its end of file tells
    /// the watchdog that automaton died.
    go: Option<rustix::fd::OwnedFd>,
}

impl Running for Gated<'_> {
    fn id(&self) -> u32 {
        self.group.id()
    }
    fn record(&self) -> AgentPidRecord {
        self.group.record()
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event> {
        Running::wait(&mut self.group, deadline)
    }
    fn take_fresh(&mut self) -> Vec<u8> {
        Running::take_fresh(&mut self.group)
    }
    fn finish(&mut self) -> io::Result<ExitStatus> {
        Running::finish(&mut self.group)
    }
    fn stop(&mut self) -> io::Result<ExitStatus> {
        Running::stop(&mut self.group)
    }
    fn leftovers(&self) -> Vec<Leftover> {
        Running::leftovers(&self.group)
    }
    fn release(&mut self) -> io::Result<()> {
        if let Some(go) = self.go.as_ref() {
            rustix::io::write(go, b"g")?;
        }
        Ok(())
    }
}

impl Running for Group<'_> {
    fn id(&self) -> u32 {
        self.pid()
    }
    fn record(&self) -> AgentPidRecord {
        // The agent's pid and start time, then this automaton's: a later run stops the agent
        // only when its automaton is gone.
        group_record(self.pid())
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<Event> {
        Group::wait(self, deadline)
    }
    fn take_fresh(&mut self) -> Vec<u8> {
        Group::take_fresh(self)
    }
    fn finish(&mut self) -> io::Result<ExitStatus> {
        Group::finish(self)
    }
    fn stop(&mut self) -> io::Result<ExitStatus> {
        Group::stop(self)
    }
    fn leftovers(&self) -> Vec<Leftover> {
        Group::leftovers(self).to_vec()
    }
}

/// The executor `- **Executor**:` names, for the project at `project`, as the run's
/// configuration sets it up (the tmux socket, Slurm's options and GPU resource).
pub fn for_config(
    cfg: &crate::run::config::RunConfig,
    project: &Path,
) -> io::Result<Box<dyn Executor>> {
    Ok(match cfg.executor {
        ExecutorKind::Tmux => Box::new(tmux::Tmux::for_project(
            project,
            cfg.tmux_socket.as_deref(),
        )?),
        ExecutorKind::Slurm => Box::new(slurm::Slurm::new(
            cfg.slurm_options.as_deref().unwrap_or(""),
            cfg.slurm_gres.as_deref().unwrap_or(""),
        )?),
        ExecutorKind::Local => Box::new(Local),
    })
}

/// The automaton that runs this process: the owner of every record it writes.
pub(crate) fn this_automaton() -> Owner {
    let pid = std::process::id();
    Owner {
        pid,
        start: crate::process::procfs::start_time(pid).unwrap_or_default(),
    }
}

/// The record of a process group led by `pid` (local and tmux agents), owned by this automaton.
pub(crate) fn group_record(pid: u32) -> AgentPidRecord {
    let start = crate::process::procfs::start_time(pid).unwrap_or_default();
    AgentPidRecord::new(Agent::Group { pid, start }, this_automaton())
}

/// Stop what an automaton killed with SIGKILL left running for a task, from the pid file the
/// runner wrote ([`AgentPidRecord`]): a process group (local and tmux: TERM, grace, KILL) or a
/// Slurm job (cancelled with `scancel`). Returns what it stopped (`pid 123`, `Slurm job 45`);
/// the pid file is removed either way. Refused (an error, nothing stopped or removed) while
/// the automaton the record names as its owner still runs: two automatons on one project (the
/// lock was side-stepped) never stop each other's agents. A record of this very automaton (a
/// phase of this run whose file could not be removed) names an agent its runner stopped
/// already: nothing is stopped.
pub fn stop_stale(pid_file: &Path, grace: Duration) -> io::Result<Option<String>> {
    if !pid_file.exists() {
        return Ok(None);
    }
    let record = AgentPidRecord::read(pid_file)?;
    let owner = record.as_ref().and_then(|r| r.owner);
    let me = this_automaton();
    if let Some(owner) = owner
        && owner.pid != me.pid
        && crate::process::procfs::start_time(owner.pid) == Some(owner.start)
    {
        return Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "{}: the agent there belongs to automaton pid {}, which still runs; \
                 not stopping it (is another automaton driving this project?)",
                pid_file.display(),
                owner.pid
            ),
        ));
    }
    let ours = owner == Some(me);
    let stopped = match record.map(|r| r.agent) {
        _ if ours => None,
        Some(Agent::Slurm { job, .. }) if slurm::job_active(job) => {
            slurm::cancel(job, grace);
            Some(format!("Slurm job {job}"))
        }
        Some(Agent::Group { pid, start }) => {
            super::agent::stop_stale_group(pid, start, grace).map(|pid| format!("pid {pid}"))
        }
        _ => None,
    };
    crate::fsx::remove_if_there(pid_file)?;
    Ok(stopped)
}

/// A Slurm job recorded in a pid file: the id and the log's file name (absent in records
/// written before re-attaching existed).
pub fn slurm_record(pid_file: &Path) -> Option<(u64, Option<String>)> {
    match AgentPidRecord::read(pid_file).ok()??.agent {
        Agent::Slurm { job, log } => Some((job, log)),
        Agent::Group { .. } => None,
    }
}

/// Paths beside a phase log `<logs>/<stem>.log`: `<logs>/<stem>.<ext>`.
pub(crate) fn beside(log: &Path, ext: &str) -> PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".into());
    log.with_file_name(format!("{stem}.{ext}"))
}

/// Single-quote for `sh`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The wrapper both tmux and Slurm run: the AUTOMATON_* contract exported, the agent run by
/// `sh -c` in `cwd` with the prompt on stdin, and its exit status written (atomically) to
/// `status`. `tail` is appended to the agent's command (`2>&1 | tee FIFO` for tmux).
pub(crate) fn wrapper_script(
    spec: &AgentSpec<'_>,
    stdin: &Path,
    status: &Path,
    output: Option<&Path>,
) -> String {
    let mut s = String::from("#!/bin/sh\n# written by automaton for one phase; safe to delete\n");
    for (k, v) in spec.env {
        s.push_str(&format!("export {k}={}\n", sh_quote(v)));
    }
    s.push_str(&format!(
        "cd {} || exit 127\n",
        sh_quote(&spec.cwd.display().to_string())
    ));
    let tmp = format!("{}.tmp", status.display());
    let run = format!(
        "sh -c {} < {}; s=$?; echo $s > {} && mv {} {}",
        sh_quote(spec.command),
        sh_quote(&stdin.display().to_string()),
        sh_quote(&tmp),
        sh_quote(&tmp),
        sh_quote(&status.display().to_string()),
    );
    match output {
        // A pipeline's status is its last command's: the agent's is in the status file.
        Some(out) => s.push_str(&format!(
            "{{ {run}; }} 2>&1 | tee {}\n",
            sh_quote(&out.display().to_string())
        )),
        None => s.push_str(&format!("{run}\nexit $s\n")),
    }
    s
}

/// The prompt, as the file the agent's stdin is read from (`/dev/null` when empty).
pub(crate) fn stdin_file(spec: &AgentSpec<'_>) -> io::Result<PathBuf> {
    if spec.prompt.is_empty() {
        return Ok(PathBuf::from("/dev/null"));
    }
    // The phase runner already wrote the prompt to AUTOMATON_PROMPT_FILE: use that file.
    if let Some((_, file)) = spec.env.iter().find(|(k, _)| k == "AUTOMATON_PROMPT_FILE")
        && std::fs::read(file).is_ok_and(|b| b == spec.prompt.as_bytes())
    {
        return Ok(PathBuf::from(file));
    }
    let path = beside(spec.log_path, "stdin");
    crate::fsx::write_atomic(&path, spec.prompt.as_bytes())?;
    Ok(path)
}

/// The status a wrapper wrote: `sh`'s `$?` (128+n for signal n) as an [`ExitStatus`].
pub(crate) fn read_status(path: &Path) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let n: i32 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    Some(if (129..=192).contains(&n) {
        ExitStatus::from_raw(n - 128)
    } else {
        ExitStatus::from_raw((n & 0xff) << 8)
    })
}

/// An exit status with this code.
pub(crate) fn exit_code(code: i32) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw((code & 0xff) << 8)
}

/// An exit status "killed by signal `sig`".
pub(crate) fn killed_by(sig: i32) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(sig & 0x7f)
}

/// A one-shot command's output, or an error with its stderr (for tmux and Slurm's tools).
pub(crate) fn output_of(cmd: &mut Command, what: &str) -> io::Result<String> {
    let out = cmd
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {what}: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.trim();
        Err(io::Error::other(format!(
            "{what} failed: {}",
            if err.is_empty() { "no message" } else { err }
        )))
    }
}

/// Whether the agent a pid file records still runs: its process group (local, tmux) or its
/// Slurm job. False when the file is missing or names nothing alive.
pub fn record_alive(pid_file: &Path) -> bool {
    match AgentPidRecord::read(pid_file)
        .ok()
        .flatten()
        .map(|r| r.agent)
    {
        Some(Agent::Slurm { job, .. }) => slurm::job_active(job),
        Some(Agent::Group { pid, .. }) => i32::try_from(pid)
            .ok()
            .filter(|p| *p > 1)
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(crate::process::group::group_alive),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn sleeper() -> std::process::Child {
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn gone(child: &mut std::process::Child) -> bool {
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The record every group executor writes (local and tmux alike) names its owner: while
    /// that automaton runs, a later run refuses to stop the agent and keeps the record; once it
    /// is gone, the agent is stopped and the record removed.
    #[test]
    fn an_agent_whose_automaton_still_runs_is_never_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("agent.pid");
        let (mut agent, mut owner) = (sleeper(), sleeper());
        let mut record = group_record(agent.id());
        record.owner = Some(Owner {
            pid: owner.id(),
            start: crate::process::procfs::start_time(owner.id()).unwrap(),
        });
        record.write(&pid_file, false).unwrap();
        let e = stop_stale(&pid_file, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ResourceBusy, "{e}");
        assert!(e.to_string().contains(&owner.id().to_string()), "{e}");
        assert!(agent.try_wait().unwrap().is_none(), "the agent was stopped");
        assert!(record_alive(&pid_file));

        owner.kill().unwrap();
        owner.wait().unwrap();
        let stopped = stop_stale(&pid_file, Duration::from_secs(1)).unwrap();
        assert_eq!(stopped, Some(format!("pid {}", agent.id())));
        assert!(gone(&mut agent), "the leftover agent still runs");
        assert!(!pid_file.exists());
    }

    /// A record of this very automaton names an agent its own runner stopped: left alone.
    /// One from before versions, with no owner (the tmux executor wrote none), is stopped.
    #[test]
    fn own_records_are_left_and_ownerless_old_ones_are_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("agent.pid");
        let mut agent = sleeper();
        group_record(agent.id()).write(&pid_file, false).unwrap();
        assert_eq!(stop_stale(&pid_file, Duration::from_secs(1)).unwrap(), None);
        assert!(agent.try_wait().unwrap().is_none());
        assert!(!pid_file.exists());

        let start = crate::process::procfs::start_time(agent.id()).unwrap();
        std::fs::write(&pid_file, format!("{} {start}\n", agent.id())).unwrap();
        let stopped = stop_stale(&pid_file, Duration::from_secs(1)).unwrap();
        assert_eq!(stopped, Some(format!("pid {}", agent.id())));
        assert!(gone(&mut agent));
    }
}
