//! Acting on decisions: `orchestrate` picks a task, drives it phase by phase through an agent
//! command (sub-tasks in parallel waves), and stops at completion or where a human must decide.

pub mod adapter;
pub mod agent;
pub mod budget;
pub mod check;
pub mod clean;
pub mod config;
pub mod driver;
pub mod dry_run;
pub mod egress;
pub mod event;
pub mod executor;
pub mod fit;
pub mod isolation;
pub mod judge;
pub mod notify;
pub mod observe;
pub mod output_scan;
pub mod phase;
pub mod ports;
pub mod preflight;
pub mod progress;
pub mod prompt;
pub mod questions;
pub mod record;
pub mod recover;
pub mod retry;
pub mod rework;
pub mod sandbox;
pub mod schedule;
pub mod stops;
pub mod subtasks;
pub mod verify;
pub mod vram;
pub mod waves;
pub mod workspace;

use crate::settings::{Settings, SettingsError};
use crate::state::PhaseConfig;
use crate::task::TaskError;
use agent::AgentEnd;
use progress::Progress;
use std::sync::atomic::AtomicBool;
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
    /// Worktree isolation could not be set up for the run.
    #[error(transparent)]
    Isolation(#[from] isolation::IsolationError),
    /// A task file could not be read or written: `.state`, `.stop`, a log, a prompt
    /// ([`crate::fsx::write_atomic`] and the store name the file).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// automaton panicked while driving a task: a bug, reported with the panic's message.
    #[error(
        "internal error: automaton panicked while driving {task}: {message} (a bug in automaton; please report it)"
    )]
    Panicked { task: String, message: String },
}

impl RunError {
    /// The error of a panic caught while driving `task` (the payload of `catch_unwind`).
    pub fn panicked(task: &str, payload: &(dyn std::any::Any + Send)) -> RunError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        RunError::Panicked {
            task: task.to_string(),
            message,
        }
    }
}

/// The rules by which sub-tasks of a plan start: `- **Wave barrier**`, and integration gates
/// when the tasks run `isolated` in worktrees and a verify command is set. The run and
/// `status` both use it, so `status` offers only what a run would start.
pub fn wave_rules(cfg: &config::RunConfig, isolated: bool) -> crate::task::readiness::WaveRules {
    crate::task::readiness::WaveRules {
        barrier: cfg.wave_barrier,
        gated: isolated && cfg.verify_command.is_some(),
    }
}

/// The wave rules a run in `project` would use: isolation is resolved (`auto` by whether the
/// project is in a git repository) only where it matters, with a verify command, whose
/// integration gates then hold later waves.
pub fn project_wave_rules(
    cfg: &config::RunConfig,
    project: &std::path::Path,
) -> crate::task::readiness::WaveRules {
    use isolation::Mode;
    let isolated =
        cfg.verify_command.is_some() && Mode::resolve(cfg.isolation, project) == Mode::Worktree;
    wave_rules(cfg, isolated)
}

/// What the run layer's functions return.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// Caps and grace periods of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
///
/// The knobs come from [`config::RunConfig`], resolved once before the run: `cfg` holds them
/// all, and `config`, `limits`, `verify_command`, `retries` and `retry_backoff` are copies of
/// its fields for the code that reads them directly. `settings` is kept for the project's
/// folder and its layered files (prompts, contracts, `.rules.md`, the VRAM detection), never
/// for a knob.
pub struct Run<'a> {
    pub settings: &'a Settings,
    pub cfg: &'a config::RunConfig,
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
    /// Worktree isolation, when on.
    pub isolation: Option<&'a isolation::Isolation>,
    /// `--step`: run exactly one phase, whatever the Autopilot setting.
    pub step: bool,
    /// `Budget per task` / `Budget per run`, and what this run spent.
    pub budgets: budget::Budgets,
    /// `Retries` and `Retry backoff`: more attempts of a failed phase in this run.
    pub retries: u32,
    pub retry_backoff: Duration,
    /// Where each phase's agent runs (`- **Executor**:`); verify commands always run locally.
    pub executor: &'a dyn executor::Executor,
    /// VRAM admission of sub-tasks that run a local model ([`vram`]), when configured.
    pub vram: Option<vram::Admission>,
    /// `AUTOMATON_PORT` of each task being driven.
    pub ports: ports::Ports,
}

impl Run<'_> {
    /// The estimated VRAM need of a sub-task's agent, in whole GB (rounded up), when the
    /// model's figures are configured (see [`vram`]).
    pub fn vram_need_gb(&self, task_dir: &std::path::Path) -> Option<u64> {
        let need = self.vram.as_ref()?.need(task_dir)?;
        Some(need.div_ceil(1 << 30))
    }
}

/// A counting semaphore: the number of agent processes running at once. Its tokens are bytes
/// in a pipe (as make's jobserver keeps them), so a waiter sleeps in `poll(2)` on the pipe and
/// on the signal policy's wake pipe together: a freed slot or Ctrl-C wakes it at once.
pub struct Slots {
    take: rustix::fd::OwnedFd,
    give: rustix::fd::OwnedFd,
}

/// Holds one slot until dropped.
pub struct Slot<'a>(&'a Slots);

impl Slots {
    pub fn new(n: usize) -> std::io::Result<Self> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let (take, give) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).map_err(|e| {
            let e = std::io::Error::from(e);
            std::io::Error::new(
                e.kind(),
                format!("cannot make the pipe of the run's job slots: {e}"),
            )
        })?;
        // As many tokens as the pipe holds, at most: usually 64 KiB, but one page where the
        // user's pipes are over their soft limit. More slots than that are never all used.
        let tokens = vec![b'+'; n.max(1)];
        let mut given = 0;
        while given < tokens.len() {
            match rustix::io::write(&give, &tokens[given..]) {
                Ok(n) => given += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) if given > 0 => break,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Slots { take, give })
    }

    /// Wait for a free slot. After Ctrl-C it stops waiting, so the caller's agent starts and is
    /// stopped at once, and the run winds down.
    pub fn acquire<'a>(&'a self, cancel: &AtomicBool) -> Option<Slot<'a>> {
        use rustix::fd::AsFd;
        let cancel_wakes = crate::process::signals::is_policy_flag(cancel);
        loop {
            let mut token = [0u8; 1];
            if matches!(rustix::io::read(&self.take, &mut token), Ok(1)) {
                return Some(Slot(self));
            }
            if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            // Several waiters may wake for one token: the others wait again.
            let _ = crate::process::group::wait_any_readable(
                &[self.take.as_fd()],
                cancel,
                cancel_wakes,
                None,
            );
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        // Never blocks: at most as many tokens come back as were taken.
        let _ = rustix::io::write(&self.0.give, b"+");
    }
}

pub use crate::plan::decide::StopKind;

/// The stop an agent's end calls for, if it is not a plain exit.
pub fn stop_for(end: &AgentEnd) -> Option<StopKind> {
    use crate::plan::decide::End;
    match end_of(end) {
        End::Exited { .. } => None,
        End::PhaseTimeout => Some(StopKind::PhaseTimeout),
        End::TotalTimeout => Some(StopKind::TotalTimeCap),
        End::Stalled => Some(StopKind::Stalled),
        End::Cancelled => Some(StopKind::Interrupted),
    }
}

/// How the judgement sees an agent's end.
pub fn end_of(end: &AgentEnd) -> crate::plan::decide::End {
    use crate::plan::decide::End;
    match end {
        AgentEnd::Exited(status) => End::Exited {
            success: status.success(),
        },
        AgentEnd::PhaseTimeout => End::PhaseTimeout,
        AgentEnd::TotalTimeout => End::TotalTimeout,
        AgentEnd::Stalled => End::Stalled,
        AgentEnd::Cancelled => End::Cancelled,
    }
}

/// How driving a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Stopped {
        kind: StopKind,
        reason: String,
    },
    /// `--step`: one phase ran and the task goes on; `task` is the one whose phase ran.
    Stepped {
        task: String,
    },
}

#[cfg(test)]
mod tests {
    use super::Slots;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// More slots than a pipe holds: as many as it holds, and no error.
    #[test]
    fn more_slots_than_the_pipe_holds_are_capped_not_refused() {
        let slots = Slots::new(10_000_000).unwrap();
        let go_on = AtomicBool::new(false);
        let held: Vec<_> = (0..4096).map(|_| slots.acquire(&go_on).unwrap()).collect();
        assert_eq!(held.len(), 4096);
    }

    /// Two slots: a third taker waits until one is given back, and is handed it then; a taker
    /// with the cancel flag set gets none.
    #[test]
    fn slots_hand_a_freed_token_to_a_waiter_and_refuse_after_cancel() {
        let slots = Slots::new(2).unwrap();
        let go_on = AtomicBool::new(false);
        let a = slots.acquire(&go_on).unwrap();
        let _b = slots.acquire(&go_on).unwrap();
        let _c = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let start = Instant::now();
                let slot = slots.acquire(&go_on);
                (slot, start.elapsed())
            });
            std::thread::sleep(Duration::from_millis(200));
            drop(a);
            let (slot, waited) = waiter.join().unwrap();
            assert!(slot.is_some());
            assert!(waited >= Duration::from_millis(150), "{waited:?}");
            slot
        });
        let stop = AtomicBool::new(false);
        stop.store(true, Ordering::SeqCst);
        assert!(slots.acquire(&stop).is_none(), "both slots are taken");
    }
}
