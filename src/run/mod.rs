//! Acting on decisions: `orchestrate` picks a task, drives it phase by phase through an agent
//! command (sub-tasks in parallel waves), and stops at completion or where a human must decide.

pub mod adapter;
pub mod agent;
pub mod driver;
pub mod phase;
pub mod progress;
pub mod record;
pub mod subtasks;

use crate::exit;
use crate::settings::{Settings, SettingsError};
use crate::state::PhaseConfig;
use crate::task::TaskError;
use agent::AgentEnd;
use progress::Progress;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Why a run could not go on (not a stop for a human: those are [`Outcome::Stopped`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A prompt or contract could not be read (the error names the file).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A sub-task folder could not be created (the error names the folder or file).
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error("task folder {0} disappeared")]
    TaskGone(String),
    /// A task file could not be read or written: `.state`, `.stop`, a log, a prompt
    /// ([`crate::fsx::write_atomic`] and the store name the file).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What the run layer's functions return.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// Caps and grace periods of a run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub iterations: u64,
    pub phase: Duration,
    pub total: Duration,
    pub stall: Duration,
    pub jobs: usize,
    pub contract_grace: Duration,
    pub kill_grace: Duration,
}

/// Everything a run shares across tasks and threads.
pub struct Run<'a> {
    pub settings: &'a Settings,
    pub config: PhaseConfig,
    pub agent_command: &'a str,
    /// How the agent's output is read back (failure signal, usage).
    pub adapter: &'a dyn adapter::Adapter,
    pub verify_command: Option<&'a str>,
    pub limits: Limits,
    pub deadline: Instant,
    pub cancel: &'a AtomicBool,
    pub progress: &'a Progress,
    /// Max peak context per sub-task, for prompts.
    pub max_peak: u64,
    /// Agents running at once, across every level of sub-tasks, at most `jobs`.
    pub slots: Slots,
}

/// A counting semaphore: the number of agent processes running at once.
pub struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// Holds one slot until dropped.
pub struct Slot<'a>(&'a Slots);

impl Slots {
    pub fn new(n: usize) -> Self {
        Slots {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Wait for a free slot. After Ctrl-C it stops waiting, so the caller's agent starts and is
    /// stopped at once, and the run winds down.
    pub fn acquire<'a>(&'a self, cancel: &AtomicBool) -> Option<Slot<'a>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *free > 0 {
                *free -= 1;
                return Some(Slot(self));
            }
            if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            free = self
                .freed
                .wait_timeout(free, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// Why a run stopped before completion; each has its own exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    VerdictFailed,
    BadArtifact,
    AgentFailed,
    PhaseTimeout,
    Stalled,
    IterationCap,
    TotalTimeCap,
    VerifyFailed,
    SubtasksFailed,
    NeedsHuman,
    Interrupted,
}

impl StopKind {
    /// Every stop kind with its word (in `--json` events) and its documented exit code: the
    /// one table of both.
    pub const TABLE: [(StopKind, &'static str, u8); 11] = [
        (
            StopKind::VerdictFailed,
            "verdict_failed",
            exit::VERDICT_FAILED,
        ),
        (StopKind::BadArtifact, "bad_artifact", exit::BAD_ARTIFACT),
        (StopKind::AgentFailed, "agent_failed", exit::AGENT_FAILED),
        (StopKind::PhaseTimeout, "phase_timeout", exit::PHASE_TIMEOUT),
        (StopKind::Stalled, "stalled", exit::STALLED),
        (StopKind::IterationCap, "iteration_cap", exit::ITERATION_CAP),
        (
            StopKind::TotalTimeCap,
            "total_time_cap",
            exit::TOTAL_TIME_CAP,
        ),
        (StopKind::VerifyFailed, "verify_failed", exit::VERIFY_FAILED),
        (
            StopKind::SubtasksFailed,
            "subtasks_failed",
            exit::SUBTASKS_FAILED,
        ),
        (StopKind::NeedsHuman, "needs_human", exit::NEEDS_HUMAN),
        (StopKind::Interrupted, "interrupted", exit::INTERRUPTED),
    ];

    /// The documented exit code of a run that stopped this way.
    pub fn code(self) -> u8 {
        Self::TABLE[self as usize].2
    }

    pub fn word(self) -> &'static str {
        Self::TABLE[self as usize].1
    }

    /// The stop an agent's end calls for, if it is not a plain exit.
    pub fn from_end(end: &AgentEnd) -> Option<StopKind> {
        match end {
            AgentEnd::Exited(_) => None,
            AgentEnd::PhaseTimeout => Some(StopKind::PhaseTimeout),
            AgentEnd::TotalTimeout => Some(StopKind::TotalTimeCap),
            AgentEnd::Stalled => Some(StopKind::Stalled),
            AgentEnd::Cancelled => Some(StopKind::Interrupted),
        }
    }

    /// Whether the stop belongs to the task (recorded in `.stop`, so it needs a human) or
    /// only to this run (Ctrl-C, the total-time cap: the next run resumes where it was).
    pub fn is_task_stop(self) -> bool {
        !matches!(self, StopKind::Interrupted | StopKind::TotalTimeCap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_table_is_in_variant_order_with_distinct_codes() {
        let mut codes = Vec::new();
        for (i, (kind, word, code)) in StopKind::TABLE.iter().enumerate() {
            assert_eq!(*kind as usize, i, "{word}");
            assert_eq!(kind.word(), *word);
            assert_eq!(kind.code(), *code);
            assert!(!codes.contains(code), "{word}: {code} twice");
            assert!(![exit::OK, exit::ERROR, exit::USAGE, exit::LOCKED].contains(code));
            codes.push(*code);
        }
        assert_eq!(StopKind::Interrupted.code(), 130);
        assert_eq!(StopKind::VerdictFailed.code(), 10);
    }
}

/// How driving a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Stopped { kind: StopKind, reason: String },
}
