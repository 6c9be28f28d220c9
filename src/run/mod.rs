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
use crate::settings::Settings;
use crate::state::PhaseConfig;
use agent::AgentEnd;
use progress::Progress;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

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
    pub fn code(self) -> u8 {
        match self {
            StopKind::VerdictFailed => exit::VERDICT_FAILED,
            StopKind::BadArtifact => exit::BAD_ARTIFACT,
            StopKind::AgentFailed => exit::AGENT_FAILED,
            StopKind::PhaseTimeout => exit::PHASE_TIMEOUT,
            StopKind::Stalled => exit::STALLED,
            StopKind::IterationCap => exit::ITERATION_CAP,
            StopKind::TotalTimeCap => exit::TOTAL_TIME_CAP,
            StopKind::VerifyFailed => exit::VERIFY_FAILED,
            StopKind::SubtasksFailed => exit::SUBTASKS_FAILED,
            StopKind::NeedsHuman => exit::NEEDS_HUMAN,
            StopKind::Interrupted => exit::INTERRUPTED,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            StopKind::VerdictFailed => "verdict_failed",
            StopKind::BadArtifact => "bad_artifact",
            StopKind::AgentFailed => "agent_failed",
            StopKind::PhaseTimeout => "phase_timeout",
            StopKind::Stalled => "stalled",
            StopKind::IterationCap => "iteration_cap",
            StopKind::TotalTimeCap => "total_time_cap",
            StopKind::VerifyFailed => "verify_failed",
            StopKind::SubtasksFailed => "subtasks_failed",
            StopKind::NeedsHuman => "needs_human",
            StopKind::Interrupted => "interrupted",
        }
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

/// How driving a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Stopped { kind: StopKind, reason: String },
}
