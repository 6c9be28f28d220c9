//! Runs one agent phase as a child process in its own process group, with the prompt on stdin,
//! output appended to a log file, and the phase/total/stall caps and Ctrl-C enforced by killing
//! the whole group (TERM, then KILL after a grace period).
//!
//! Design notes:
//! - The process group, the stop sequence, the signal policy and the waiting are the shared
//!   supervisor's ([`crate::process`]); this module adds the agent's log, caps and contract.
//! - Output (stdout and stderr, interleaved as written) reaches the log through a pipe the
//!   supervisor reads without blocking and copies into the file; the runner sees each chunk as it
//!   comes, to watch for growth, `CONTRACT_MET` and the last line. A grandchild that escapes and
//!   keeps the pipe open cannot block us. An agent left running by a SIGKILLed automaton gets
//!   EPIPE when it next writes (the kill -9 resume still stops it, by its pid file).
//! - The prompt is written to stdin by a detached helper thread, then stdin is closed, so an agent
//!   that never reads stdin cannot block the runner (and `codex exec` sees EOF).
//! - Every cap is a deadline handed to the supervisor's `poll`: the runner wakes when the agent
//!   exits, writes, or a deadline passes, never on a tick.

use super::executor::{Executor, Job, Local};
use super::output_scan::LogScan;
use crate::process::{self, Event, Leftover};
use std::fs::File;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Everything needed to run one phase.
pub struct AgentSpec<'a> {
    /// Shell command line, run as `sh -c <command>`.
    pub command: &'a str,
    /// Working folder (the project root).
    pub cwd: &'a Path,
    /// Extra environment (the AUTOMATON_* contract).
    pub env: &'a [(String, String)],
    /// Written to the child's stdin, which is then closed.
    pub prompt: &'a str,
    /// stdout and stderr are appended here (created if missing).
    pub log_path: &'a Path,
    /// Cap for this phase.
    pub phase_timeout: Duration,
    /// Stop the agent when the log has not grown for this long.
    pub stall_timeout: Option<Duration>,
    /// The total-time cap, as an instant on [`crate::process::signals::now_unpaused`]'s clock.
    pub deadline: Option<Instant>,
    /// Set by the Ctrl-C handler; the runner stops the group when it sees it.
    pub cancel: &'a AtomicBool,
    /// After CONTRACT_MET appears in the output, how long the agent may take to exit.
    pub contract_grace: Duration,
    /// Where to record the agent's pid while it runs, so that a later run can stop an agent
    /// an automaton killed with SIGKILL left behind ([`super::executor::stop_stale`]).
    pub pid_file: Option<&'a Path>,
    /// A file written (by rename, not yet synced) before the agent starts that must survive a
    /// power cut: the phase's `.incomplete` marker. It is made durable right after the agent
    /// is released, while the agent starts, so the sync does not lengthen the phase. That is
    /// early enough: the agent cannot have written anything lasting yet, and file systems
    /// with a journal (ext4, xfs) commit the marker's rename no later than the agent's first
    /// writes, which come after it.
    pub sync_once_started: Option<&'a Path>,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Called (from the runner's thread) with the latest non-empty output line.
    pub on_line: Option<&'a (dyn Fn(&str) + Sync)>,
    /// Called (from the runner's thread) with every chunk of output, as it is appended to
    /// the log: what the adapter reads usage from, without reading the log back.
    pub on_output: Option<OutputSink<'a>>,
    /// Set (by `on_line`: a budget crossed) to have the runner stop the agent, as it stops one
    /// past its contract grace; checked after each batch of output.
    pub stop: Option<&'a AtomicBool>,
}

/// A callback that takes each chunk of an agent's output ([`AgentSpec::on_output`]).
pub type OutputSink<'a> = &'a (dyn Fn(&[u8]) + Sync);

/// Why the phase's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEnd {
    /// The agent exited by itself. Also used when the agent printed `CONTRACT_MET` but did not
    /// exit within `contract_grace` and was stopped: the status is then the one the stop produced
    /// (usually signal 15 or 9), and [`AgentOutcome::contract_met`] is true.
    Exited(ExitStatusInfo),
    /// `phase_timeout` passed; the group was stopped.
    PhaseTimeout,
    /// `deadline` passed; the group was stopped.
    TotalTimeout,
    /// The log did not grow for `stall_timeout`; the group was stopped.
    Stalled,
    /// The `cancel` flag was set (Ctrl-C / SIGTERM / SIGHUP); the group was stopped.
    Cancelled,
}

impl AgentEnd {
    /// A short phrase for messages, without the caps' values:
    /// "agent exited with status 3", "agent killed by signal 9 (SIGKILL)", "phase timed out".
    pub fn describe(&self) -> String {
        self.describe_with(None, None)
    }

    /// Like [`AgentEnd::describe`], naming the caps that applied:
    /// "phase timed out after 2s", "no output for 1s (stalled)".
    pub fn describe_with(
        &self,
        phase_timeout: Option<Duration>,
        stall_timeout: Option<Duration>,
    ) -> String {
        match self {
            AgentEnd::Exited(info) => match (info.code, info.signal) {
                (Some(code), _) => format!("agent exited with status {code}"),
                (None, Some(sig)) => match signal_hook::low_level::signal_name(sig) {
                    Some(name) => format!("agent killed by signal {sig} ({name})"),
                    None => format!("agent killed by signal {sig}"),
                },
                (None, None) => "agent ended with an unknown status".to_string(),
            },
            AgentEnd::PhaseTimeout => match phase_timeout {
                Some(d) => format!("phase timed out after {}", human_duration(d)),
                None => "phase timed out".to_string(),
            },
            AgentEnd::TotalTimeout => "total time cap reached".to_string(),
            AgentEnd::Stalled => match stall_timeout {
                Some(d) => format!("no output for {} (stalled)", human_duration(d)),
                None => "no output (stalled)".to_string(),
            },
            AgentEnd::Cancelled => process::signals::interrupted_by(),
        }
    }
}

/// A portable view of an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatusInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitStatusInfo {
    pub fn from_status(s: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitStatusInfo {
            code: s.code(),
            signal: s.signal(),
        }
    }
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// What happened.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    pub end: AgentEnd,
    /// CONTRACT_MET was seen on a line of the output (see
    /// [`super::output_scan::is_contract_line`]).
    pub contract_met: bool,
    /// The agent printed CONTRACT_MET but did not exit within the contract grace, so automaton
    /// stopped it: its exit status then says nothing about the work.
    pub stopped_after_contract: bool,
    pub pid: u32,
    pub duration: Duration,
    pub last_line: Option<String>,
    /// Processes of the agent's group still alive after the final SIGKILL (for a warning).
    pub leftovers: Vec<Leftover>,
}

/// Run one phase. Errors only when the process cannot be started or the log cannot be written.
///
/// Every way out stops the whole process group and reaps the child: a normal exit of the leader
/// is followed by TERM/KILL of any group member still alive (grandchildren must not outlive a
/// phase), and even an error or a panic in `on_line` kills the group (the supervisor's `Drop`).
///
/// `CONTRACT_MET` handling: once a contract line is seen, the agent gets `contract_grace` to
/// exit. If it exits, the end is `Exited` with its own status. If not, the group is stopped and
/// the end is still `Exited`, with the status the stop produced (e.g. signal 15); `contract_met`
/// is true in both cases, and the caller decides on success from `contract_met` plus the artifact.
///
/// Checks on every wake-up, in this order: leader exited (wins over everything), `cancel`,
/// `deadline`, `phase_timeout`, `stall_timeout`, then the contract grace. The runner sleeps in
/// `poll` until the agent exits, writes to its log, the nearest of those deadlines passes, or a
/// stop signal arrives. A cap already expired (or `cancel` already set) on entry still spawns
/// the agent and stops it at once, so the outcome always names a real pid; callers that care
/// should check before calling.
pub fn run_agent(spec: &AgentSpec<'_>) -> io::Result<AgentOutcome> {
    run_agent_on(spec, &Local, &Job::default())
}

/// [`run_agent`] through an executor ([`super::executor`]): `local` is [`run_agent`] itself;
/// `tmux` and `slurm` start, watch and stop the agent their way, under the same contract (log,
/// caps, CONTRACT_MET, Ctrl-C, pid file).
pub fn run_agent_on(
    spec: &AgentSpec<'_>,
    executor: &dyn Executor,
    job: &Job,
) -> io::Result<AgentOutcome> {
    let started = Instant::now();
    let mut group = start_recorded(spec, executor, job)?;
    let pid = group.id();

    // Every cap runs on the clock that stands still while automaton is stopped by job control
    // (Ctrl-Z until `fg`, when its agents are stopped too): `spec.deadline` is on it as well.
    let clock = process::signals::now_unpaused;
    let mut scan = LogScan::new();
    let mut last_growth = clock();
    let mut contract_seen_at: Option<Instant> = None;
    let mut stopped_after_contract = false;
    let phase_end = last_growth.checked_add(spec.phase_timeout);
    let end = loop {
        let next = [
            spec.deadline,
            phase_end,
            spec.stall_timeout.and_then(|s| last_growth.checked_add(s)),
            contract_seen_at.and_then(|t| t.checked_add(spec.contract_grace)),
        ]
        .into_iter()
        .flatten()
        .min();
        // A wake-up early by the real clock (a pause since) only looks again.
        let event = group.wait(next.map(process::signals::real_instant))?;
        if absorb(&mut scan, &group.take_fresh(), spec) {
            last_growth = clock();
        }
        if scan.contract_met && contract_seen_at.is_none() {
            contract_seen_at = Some(clock());
        }
        if let Event::Exited(status) = event {
            group.finish()?;
            // Output still in the pipe when the leader exited.
            absorb(&mut scan, &group.take_fresh(), spec);
            break AgentEnd::Exited(ExitStatusInfo::from_status(status));
        }
        let now = clock();
        if let Some(end) = cap_reached(spec, now, phase_end, last_growth) {
            group.stop()?;
            break end;
        }
        let asked = spec.stop.is_some_and(|s| s.load(Ordering::SeqCst));
        if asked || contract_seen_at.is_some_and(|t| now.duration_since(t) >= spec.contract_grace) {
            let status = group.stop()?;
            stopped_after_contract = !asked;
            break AgentEnd::Exited(ExitStatusInfo::from_status(status));
        }
    };
    // Output written while the group was being stopped still counts.
    absorb(&mut scan, &group.take_fresh(), spec);
    if let Some(pid_file) = spec.pid_file {
        let _ = crate::fsx::remove_if_there(pid_file);
    }
    Ok(AgentOutcome {
        end,
        contract_met: scan.contract_met,
        stopped_after_contract,
        pid,
        duration: started.elapsed(),
        last_line: scan.last_line,
        leftovers: group.leftovers(),
    })
}

/// Hand what the agent printed since the last look to the scan and to the spec's callbacks.
/// Returns whether there was any.
fn absorb(scan: &mut LogScan, bytes: &[u8], spec: &AgentSpec<'_>) -> bool {
    if bytes.is_empty() {
        return false;
    }
    if let Some(cb) = spec.on_output {
        cb(bytes);
    }
    if let (Some(line), Some(cb)) = (scan.take(bytes), spec.on_line) {
        cb(line);
    }
    true
}

/// Start the agent through `executor`, record its pid file, then release it: the watchdog
/// holds the agent until its record is written, so a kill in between leaves nothing running
/// unrecorded.
fn start_recorded<'a>(
    spec: &AgentSpec<'a>,
    executor: &'a dyn Executor,
    job: &Job,
) -> io::Result<Box<dyn super::executor::Running + 'a>> {
    // Starting makes pipes and a process: name that, so "Too many open files" says what failed.
    let mut group = executor.start(spec, job).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot start the agent of {} ({}): {e}",
                job.task, job.phase
            ),
        )
    })?;
    if let Some(pid_file) = spec.pid_file {
        // A local (or tmux) agent dies with the machine, so after a power cut there is
        // nothing for the pid file to name: rename only. A slurm job runs elsewhere and
        // outlives this machine, so its id must survive: fsync (see `fsx`).
        group
            .record()
            .write(pid_file, !executor.runs_on_this_host())?;
    }
    // Recorded: the agent may start now (the watchdog holds it until this).
    group.release()?;
    if let Some(marker) = spec.sync_once_started
        && let Err(e) = crate::fsx::sync_renamed(marker)
    {
        let _ = group.stop();
        return Err(e);
    }
    Ok(group)
}

/// Whether Ctrl-C or a cap ends the agent at `now`: the run's deadline, the phase's time, or
/// its log silent for the stall time.
fn cap_reached(
    spec: &AgentSpec<'_>,
    now: Instant,
    phase_end: Option<Instant>,
    last_growth: Instant,
) -> Option<AgentEnd> {
    if spec.cancel.load(Ordering::SeqCst) {
        Some(AgentEnd::Cancelled)
    } else if spec.deadline.is_some_and(|d| now >= d) {
        Some(AgentEnd::TotalTimeout)
    } else if phase_end.is_some_and(|d| now >= d) {
        Some(AgentEnd::PhaseTimeout)
    } else if spec
        .stall_timeout
        .is_some_and(|s| now.duration_since(last_growth) >= s)
    {
        Some(AgentEnd::Stalled)
    } else {
        None
    }
}

/// Stop an agent group that an earlier automaton, killed with SIGKILL, left running (its pid
/// record, [`super::executor::stop_stale`], names the leader `pid` and its `start` time):
/// when that group still runs (the same start time, so a recycled pid is left alone), TERM
/// it, wait up to `grace`, then KILL. Returns the pid it stopped.
pub(crate) fn stop_stale_group(pid: u32, start: u64, grace: Duration) -> Option<u32> {
    let pgid = i32::try_from(pid)
        .ok()
        .filter(|&p| p > 1)
        .and_then(rustix::process::Pid::from_raw)?;
    if !process::group::group_alive(pgid) || !our_group(pgid, start) {
        return None;
    }
    process::group::stop_foreign_group(pid, grace);
    Some(pid)
}

/// Whether process group `pgid` is still the agent that was recorded: its leader with the
/// recorded start time, or (the leader gone, e.g. a wrapper script that was killed) a member
/// that started no earlier than the leader did. A recycled pid fails both tests.
fn our_group(pgid: rustix::process::Pid, start: u64) -> bool {
    if process::procfs::start_time(pgid.as_raw_pid() as u32) == Some(start) {
        return true;
    }
    process::procfs::Proc::in_group(pgid.as_raw_pid())
        .iter()
        .any(|p| p.start >= start)
}

/// Install the process-wide signal policy ([`crate::process::signals`]) and return the cancel
/// flag to pass to [`AgentSpec::cancel`].
///
/// The first SIGINT, SIGTERM or SIGHUP only sets the flag (and wakes every running
/// [`run_agent`], which stops its agent's group: TERM, grace, KILL, and returns
/// [`AgentEnd::Cancelled`]); the caller then exits with [`crate::exit::INTERRUPTED`]. A second
/// one means "stop now": every running agent group is SIGKILLed and the process exits with 130
/// at once, without unwinding.
///
/// Idempotent: every call returns the same flag.
pub fn install_signal_handlers() -> io::Result<Arc<AtomicBool>> {
    process::signals::install()
}

/// Open (create) the agent's log for appending: it may hold an earlier attempt, whose output
/// does not count. Its folder is made when missing. An error (EMFILE, a read-only or
/// immutable folder) names the file.
pub(crate) fn open_log(path: &Path) -> io::Result<File> {
    let named =
        |e: io::Error| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()));
    crate::fsx::open_append(path).map_err(named)
}

/// "300ms", "2s", "1.5s", "10m", "1m30s", "2h", "1h5m".
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    if secs < 60 {
        return if ms.is_multiple_of(1000) {
            format!("{secs}s")
        } else {
            format!("{:.1}s", d.as_secs_f64())
        };
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m, s) {
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_messages() {
        let exited = |code, signal| AgentEnd::Exited(ExitStatusInfo { code, signal });
        assert_eq!(
            exited(Some(3), None).describe(),
            "agent exited with status 3"
        );
        assert_eq!(
            exited(None, Some(9)).describe(),
            "agent killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            AgentEnd::PhaseTimeout.describe_with(Some(Duration::from_secs(2)), None),
            "phase timed out after 2s"
        );
        assert_eq!(
            AgentEnd::Stalled.describe_with(None, Some(Duration::from_secs(1))),
            "no output for 1s (stalled)"
        );
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(human_duration(Duration::from_secs(3600 * 24)), "24h");
    }
}
