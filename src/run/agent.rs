//! Runs one agent phase as a child process in its own process group, with the prompt on stdin,
//! output appended to a log file, and the phase/total/stall caps and Ctrl-C enforced by killing
//! the whole group (TERM, then KILL after a grace period).

use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::AtomicBool;
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
    /// The total-time cap, as an instant.
    pub deadline: Option<Instant>,
    /// Set by the Ctrl-C handler; the runner stops the group when it sees it.
    pub cancel: &'a AtomicBool,
    /// After CONTRACT_MET appears in the output, how long the agent may take to exit.
    pub contract_grace: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Called (from the runner's thread) with the latest non-empty output line.
    pub on_line: Option<&'a (dyn Fn(&str) + Sync)>,
}

/// Why the phase's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEnd {
    /// The agent exited by itself.
    Exited(ExitStatusInfo),
    PhaseTimeout,
    TotalTimeout,
    Stalled,
    Cancelled,
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
    /// CONTRACT_MET was seen on a line of the output.
    pub contract_met: bool,
    pub pid: u32,
    pub duration: Duration,
    pub last_line: Option<String>,
}

/// Run one phase. Errors only when the process cannot be started or the log cannot be written.
pub fn run_agent(_spec: &AgentSpec<'_>) -> io::Result<AgentOutcome> {
    Err(io::Error::other("agent runner not implemented yet"))
}

impl AgentEnd {
    pub fn describe(&self) -> String {
        format!("{self:?}")
    }
}

pub fn install_signal_handlers() -> io::Result<std::sync::Arc<AtomicBool>> {
    Ok(std::sync::Arc::new(AtomicBool::new(false)))
}
