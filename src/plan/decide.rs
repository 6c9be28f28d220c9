//! The loop's decisions, pure like `state.rs`: given what was read of a task, the caps and the
//! clock, which action comes next ([`next_action`]); given how a phase's agent ended and what
//! it left, whether the task goes on ([`judge_phase`]). No I/O, no clock reads, no processes:
//! the driver gathers the facts, asks, and executes the answer.

use super::gate::Gate;
use super::rework::Rework;
use crate::exit;
use crate::state::{Cause, Phase, State};
use crate::units::thousands;
use std::time::{Duration, Instant};

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
    /// The next phase is gated and not approved (or its approval lapsed).
    AwaitingApproval,
    /// Artifacts were built on inputs edited since.
    Stale,
    Isolation,
    Interrupted,
    /// A phase after test_design changed a frozen acceptance file.
    Frozen,
    /// The task's spend passed `Budget per task`.
    TaskBudget,
    /// This run's spend passed `Budget per run` (a run stop: the next run starts a new budget).
    RunBudget,
    /// A sub-task named on the command line may not start yet by its parent's plan.
    NotReady,
    /// The agent asked questions; they wait for `automaton answer`.
    Questions,
    /// automaton itself failed while driving the task (a panic): a bug.
    Internal,
    /// The phase's context is over the local engine's window: it was not started.
    ContextTooSmall,
}

impl StopKind {
    /// Every stop kind with its word (in `--json` events) and its documented exit code: the
    /// one table of both, in variant order.
    pub const TABLE: [(StopKind, &'static str, u8); 21] = [
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
        (
            StopKind::AwaitingApproval,
            "awaiting_approval",
            exit::AWAITING_APPROVAL,
        ),
        (StopKind::Stale, "stale", exit::STALE),
        (
            StopKind::Isolation,
            "isolation_failed",
            exit::ISOLATION_FAILED,
        ),
        (StopKind::Interrupted, "interrupted", exit::INTERRUPTED),
        (StopKind::Frozen, "frozen_changed", exit::FROZEN_CHANGED),
        (StopKind::TaskBudget, "task_budget", exit::TASK_BUDGET),
        (StopKind::RunBudget, "run_budget", exit::RUN_BUDGET),
        (StopKind::NotReady, "not_ready", exit::NOT_READY),
        (
            StopKind::Questions,
            "questions_asked",
            exit::QUESTIONS_ASKED,
        ),
        (StopKind::Internal, "internal_error", exit::INTERNAL),
        (
            StopKind::ContextTooSmall,
            "context_too_small",
            exit::CONTEXT_TOO_SMALL,
        ),
    ];

    pub fn code(self) -> u8 {
        Self::TABLE[self as usize].2
    }

    pub fn word(self) -> &'static str {
        Self::TABLE[self as usize].1
    }

    /// Whether the stop belongs to the task (it needs a human) or only to this run (Ctrl-C,
    /// the total-time cap: the next run resumes where it was).
    pub fn is_task_stop(self) -> bool {
        !matches!(
            self,
            StopKind::Interrupted | StopKind::TotalTimeCap | StopKind::RunBudget
        )
    }

    /// Whether a failed phase attempt that ended this way is worth another attempt in the same
    /// run (`- **Retries**`): the agent's failure, a missing or malformed artifact, a timeout,
    /// a stall. Never a person's decision, a cap, a budget or a frozen file.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            StopKind::AgentFailed
                | StopKind::BadArtifact
                | StopKind::PhaseTimeout
                | StopKind::Stalled
        )
    }

    /// Whether the stop is recorded in `.stop`. A gate, staleness and a changed frozen file are
    /// not: the files themselves say so (`.state.approvals`, `.state.inputs`,
    /// `.state.frozen`), and they clear when a person approves or reruns, without a retry.
    pub fn is_recorded(self) -> bool {
        self.is_task_stop()
            && !matches!(
                self,
                StopKind::AwaitingApproval
                    | StopKind::Stale
                    | StopKind::Frozen
                    | StopKind::NotReady
                    | StopKind::Questions
                    | StopKind::ContextTooSmall
            )
    }

    /// The stop (and exit code) for a task the state machine put in human_intervention.
    pub fn for_cause(cause: Option<Cause>) -> StopKind {
        match cause {
            Some(Cause::Verdict) => StopKind::VerdictFailed,
            Some(Cause::MalformedVerdict | Cause::InvalidPlan | Cause::TooDeep) => {
                StopKind::BadArtifact
            }
            Some(Cause::Subtasks) => StopKind::SubtasksFailed,
            Some(Cause::Questions) => StopKind::Questions,
            Some(Cause::Stopped | Cause::Created) | None => StopKind::NeedsHuman,
        }
    }
}

/// Whether the work still needs the verify command: a PASS verdict, or (before the phases
/// after implement) the implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// No verify command is configured.
    NotConfigured,
    /// The command passed for this very VERDICT.md (or IMPLEMENTATION.md).
    Passed,
    /// It has not passed for it yet.
    Pending(VerifyOf),
}

/// What the verify command is due on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyOf {
    /// The implementation: the phases after implement run once it passed after it.
    Implementation,
    /// A PASS verdict: it counts once the command passed for it.
    Pass,
}

/// What the driver knows when it decides the next step of one task.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub state: State,
    /// Why a human is needed (human_intervention only).
    pub cause: Option<Cause>,
    /// DECOMPOSITION.md is present and valid (its sub-tasks run in waves).
    pub has_plan: bool,
    pub verify: Verify,
    /// Phases this task ran in this invocation, and the cap on them.
    pub iterations: u64,
    pub max_iterations: u64,
    /// What comes next is gated (`Approve before`) and no approval covers the task's current
    /// artifacts: the next phase; for a task whose plan is written and none of whose sub-tasks
    /// is made yet, the task split; for a complete task with an unmerged branch, the merge.
    pub awaiting_approval: bool,
    /// An artifact was built on inputs that changed since (see `.state.inputs`).
    pub stale: bool,
    /// Ctrl-C, SIGTERM or SIGHUP was received.
    pub cancelled: bool,
    /// `--step`: this run runs exactly one phase (of the task, or of one of its sub-tasks).
    pub step: bool,
    /// Sub-task folders made by hand (no DECOMPOSITION.md in this task) that are not terminal:
    /// they run before the task's own next phase.
    pub unplanned: bool,
    /// The plan has a sub-task whose estimate exceeds the max peak context, none of its
    /// sub-tasks has started, and it was not sent back before: the decomposition phase runs
    /// once more with the over-budget rows in its prompt.
    pub replan: bool,
    /// A frozen acceptance file (TEST_PLAN.md, `## Acceptance tests`) differs from its
    /// recorded hash, and the task is past test_design.
    pub frozen_changed: bool,
    /// For a task whose referee said FAIL or NEEDS_REVIEW: whether it goes back to implement
    /// (`- **Rework**`), or why not.
    pub rework: Rework,
    /// The task's spend passed `Budget per task`.
    pub task_over_budget: bool,
    /// This run's spend passed `Budget per run`.
    pub run_over_budget: bool,
    /// The clock, and the run's total-time deadline.
    pub now: Instant,
    pub deadline: Instant,
}

/// The next thing the driver does for a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Stop this run (interrupted, total cap): nothing recorded in the task.
    EndRun(StopKind),
    /// The task is complete.
    Complete,
    /// Run the verify command: before a PASS counts, or before the phases after implement.
    Verify(VerifyOf),
    /// The task needs a human for the state machine's reason.
    Human(StopKind),
    /// Drive the sub-tasks of the plan in waves.
    RunSubtasks,
    /// Stale artifacts: stop the task and say what to rerun.
    Stale,
    /// What comes next (a phase, the sub-tasks, the merge) is gated and not approved: stop
    /// the task until a person approves.
    AwaitApproval(Gate),
    /// The iteration cap is reached with this phase next: stop the task.
    IterationCap(Phase),
    /// Run this phase.
    RunPhase(Phase),
    /// The referee said FAIL or NEEDS_REVIEW and a rework round is left: set the artifacts
    /// from implement on aside and run implement again with the findings.
    Rework,
    /// `--step`: the one phase ran; this phase would be next. Nothing is recorded in the task.
    StepDone(Phase),
    /// `--step` on a task whose sub-tasks run next: run one phase of one ready sub-task.
    StepSubtask,
    /// Drive the sub-tasks made by hand (no plan), one after another, before this task.
    RunChildren,
    /// Send the plan back to the decomposition phase, once, with the over-budget rows.
    Replan,
    /// A frozen acceptance file changed: stop the task until a person approves the change.
    Frozen,
    /// A phase would run, but the task's budget is spent: stop the task.
    OverBudget(Phase),
}

/// Decide the next action. The run's own stops come first (a cancelled or timed-out run acts
/// on nothing), then stale artifacts (nothing goes on from edited ground, not even a
/// completion), then the state machine's terminal states, then a changed frozen file, then,
/// where a phase would run, the budgets (the run's, then the task's), a gate, then the caps.
pub fn next_action(f: &Facts) -> Action {
    if f.cancelled {
        return Action::EndRun(StopKind::Interrupted);
    }
    if f.now >= f.deadline {
        return Action::EndRun(StopKind::TotalTimeCap);
    }
    if f.stale {
        return Action::Stale;
    }
    // A PASS whose verify is due (a run may have ended while it was: `logs/verify-due`), or
    // an implementation the command has not passed (it failed, and the task is retried):
    // verify it now, before anything else runs on it.
    if let (State::Complete | State::Next(_), Verify::Pending(of)) = (f.state, f.verify) {
        return Action::Verify(of);
    }
    match f.state {
        // The task is done, but its branch waits for a person before `automaton merge`.
        State::Complete if f.awaiting_approval => Action::AwaitApproval(Gate::Merge),
        State::Complete => Action::Complete,
        State::HumanIntervention
            if f.cause == Some(Cause::Verdict) && matches!(f.rework, Rework::Round(_)) =>
        {
            Action::Rework
        }
        State::HumanIntervention => Action::Human(StopKind::for_cause(f.cause)),
        State::Next(phase) if f.step && f.iterations >= 1 => Action::StepDone(phase),
        State::Next(_) if f.frozen_changed => Action::Frozen,
        State::Next(Phase::Decomposition) if f.has_plan && f.replan => {
            if f.run_over_budget {
                Action::EndRun(StopKind::RunBudget)
            } else if f.task_over_budget {
                Action::OverBudget(Phase::Decomposition)
            } else if f.iterations >= f.max_iterations {
                Action::IterationCap(Phase::Decomposition)
            } else {
                Action::Replan
            }
        }
        State::Next(phase) if (phase == Phase::Decomposition && f.has_plan) || f.unplanned => {
            // The task split waits for a person before any sub-task is made.
            if phase == Phase::Decomposition && f.has_plan && f.awaiting_approval {
                Action::AwaitApproval(Gate::Subtasks)
            } else if f.step {
                Action::StepSubtask
            } else if phase == Phase::Decomposition && f.has_plan {
                Action::RunSubtasks
            } else {
                Action::RunChildren
            }
        }
        State::Next(_) if f.run_over_budget => Action::EndRun(StopKind::RunBudget),
        State::Next(phase) if f.task_over_budget => Action::OverBudget(phase),
        State::Next(phase) if f.awaiting_approval => Action::AwaitApproval(Gate::Phase(phase)),
        State::Next(phase) if f.iterations >= f.max_iterations => Action::IterationCap(phase),
        State::Next(phase) => Action::RunPhase(phase),
    }
}

/// A spending limit: tokens, dollars or both (`- **Budget per task**: 2M tokens, $5`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    pub tokens: Option<u64>,
    pub usd: Option<f64>,
}

/// What was spent: tokens (input, cache included, plus output) and dollars, as the agents
/// reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub tokens: u64,
    pub usd: f64,
}

impl Spend {
    pub fn plus(self, other: Spend) -> Spend {
        Spend {
            tokens: self.tokens.saturating_add(other.tokens),
            usd: self.usd + other.usd,
        }
    }
}

impl Budget {
    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.tokens.is_some() || self.usd.is_some()
    }

    /// The first limit `spent` passed (more than the limit), as "8,723 tokens spent of a
    /// 5,000-token budget"; `None` while within every limit.
    pub fn exceeded(&self, spent: &Spend) -> Option<String> {
        if let Some(limit) = self.tokens.filter(|l| spent.tokens > *l) {
            return Some(format!(
                "{} tokens spent of a {}-token budget",
                thousands(spent.tokens),
                thousands(limit)
            ));
        }
        if let Some(limit) = self.usd.filter(|l| spent.usd > *l) {
            return Some(format!("${:.4} spent of a ${limit:.2} budget", spent.usd));
        }
        None
    }
}

/// What [`retry`] looks at after a failed phase attempt.
#[derive(Debug, Clone, Copy)]
pub struct RetryFacts<'a> {
    /// How the attempt failed ([`judge_phase`]'s stop).
    pub kind: StopKind,
    /// The agent's exit status, when it exited by itself (not stopped by a cap or a signal).
    pub exit_code: Option<i32>,
    /// The agent's one-line error of this attempt (its own error, else its last output line),
    /// when it failed ([`StopKind::AgentFailed`]).
    pub error_line: Option<&'a str>,
    /// The same for the attempt before, when that one failed the same phase just before.
    pub previous_error: Option<&'a str>,
    /// Failed attempts of this phase in this run, this one included (1 after the first).
    pub failures: u32,
    /// `- **Retries**`: attempts allowed after the first.
    pub retries: u32,
    /// The agent said it was rate-limited or overloaded (429, 529, `rate_limit`, `overloaded`).
    pub rate_limited: bool,
    /// `- **Retry backoff**`: the wait before the first retry; it doubles for each next one.
    pub backoff: Duration,
    /// Phases this task ran in this run (retries count), and the cap on them.
    pub iterations: u64,
    pub max_iterations: u64,
    /// `--step` runs exactly one phase: no retry.
    pub step: bool,
    pub now: Instant,
    pub deadline: Instant,
}

/// The shortest wait before a retry after a rate-limit or overload signal, even with
/// `Retry backoff: 0` (it doubles like the backoff).
pub const RATE_LIMIT_MIN_BACKOFF: Duration = Duration::from_secs(1);
/// The longest single wait between attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// Why a failed attempt is not retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// The failure is not one a retry can mend (see [`StopKind::is_retryable`]), or `--step`.
    NotRetryable,
    /// `Retries` more attempts ran and failed too.
    Exhausted,
    /// `--max-iterations` phases ran for the task.
    IterationCap,
    /// The wait would end past the total-time deadline.
    Deadline,
    /// The failure cannot change by trying again: stop at once, without the backoff.
    CannotChange(Unchanging),
}

/// Why a failed attempt would fail the same way again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchanging {
    /// Exit status 126: the shell found the command but cannot execute it (permissions, a
    /// folder, a bad interpreter line).
    NotExecutable,
    /// Exit status 127: the shell did not find the command (or the script it was given).
    NotFound,
    /// The same one-line error as the attempt before (and not a rate limit).
    SameError,
}

impl Unchanging {
    /// Why it is not retried, for the stop reason.
    pub fn why(self) -> &'static str {
        match self {
            Unchanging::NotExecutable => "the command cannot be executed (126): not retried",
            Unchanging::NotFound => "the command or its script was not found (127): not retried",
            Unchanging::SameError => "the same error as the attempt before: not retried again",
        }
    }
}

/// Whether an agent failure cannot change on another attempt: the shell's "cannot execute"
/// (126) and "not found" (127), or the same one-line error twice in a row. A rate limit or
/// overload always may change.
pub fn unchanging(f: &RetryFacts<'_>) -> Option<Unchanging> {
    if f.kind != StopKind::AgentFailed || f.rate_limited {
        return None;
    }
    match f.exit_code {
        Some(126) => return Some(Unchanging::NotExecutable),
        Some(127) => return Some(Unchanging::NotFound),
        _ => {}
    }
    match (f.error_line, f.previous_error) {
        (Some(now), Some(before)) if !now.trim().is_empty() && now.trim() == before.trim() => {
            Some(Unchanging::SameError)
        }
        _ => None,
    }
}

/// Retry or not, after a failed phase attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Wait this long (interruptibly), then run the phase again.
    After(Duration),
    GiveUp(GiveUp),
}

/// The wait before retry number `n` (1-based): `backoff × 2^(n-1)`, at least
/// [`RATE_LIMIT_MIN_BACKOFF`] doubled the same way after a rate-limit signal, at most
/// [`MAX_BACKOFF`].
pub fn backoff_for(n: u32, backoff: Duration, rate_limited: bool) -> Duration {
    let base = if rate_limited {
        backoff.max(RATE_LIMIT_MIN_BACKOFF)
    } else {
        backoff
    };
    let factor = 1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX);
    base.checked_mul(factor)
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF)
}

/// Decide whether a failed phase attempt runs again: only a retryable failure, outside
/// `--step`, that another attempt can change ([`unchanging`]), while retries are left, under
/// the iteration cap, and when the wait ends before the total-time deadline.
pub fn retry(f: &RetryFacts<'_>) -> Retry {
    if !f.kind.is_retryable() || f.step {
        return Retry::GiveUp(GiveUp::NotRetryable);
    }
    if let Some(why) = unchanging(f) {
        return Retry::GiveUp(GiveUp::CannotChange(why));
    }
    if f.failures > f.retries {
        return Retry::GiveUp(GiveUp::Exhausted);
    }
    if f.iterations >= f.max_iterations {
        return Retry::GiveUp(GiveUp::IterationCap);
    }
    let wait = backoff_for(f.failures, f.backoff, f.rate_limited);
    match f.now.checked_add(wait) {
        Some(t) if t < f.deadline => Retry::After(wait),
        _ => Retry::GiveUp(GiveUp::Deadline),
    }
}

/// How a phase's agent ended, as the judgement needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited by itself (or was stopped after CONTRACT_MET): `success` is exit status 0.
    Exited {
        success: bool,
    },
    PhaseTimeout,
    TotalTimeout,
    Stalled,
    Cancelled,
}

/// What the phase's artifact looks like after the agent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactCheck {
    Valid,
    Missing,
    Empty,
    /// Unchanged from the copy a fix task started with.
    Inherited,
    Malformed(String),
}

/// Everything [`judge_phase`] looks at.
#[derive(Debug, Clone)]
pub struct PhaseFacts<'a> {
    pub phase: Phase,
    pub end: End,
    /// How the end reads ("agent exited with status 3", "phase timed out after 2s").
    pub end_text: &'a str,
    pub contract_met: bool,
    /// CONTRACT_MET was printed and the agent was stopped after the grace: its exit status
    /// says nothing about the work.
    pub stopped_after_contract: bool,
    /// The agent's own verdict on its run (`Some(false)`: an error result, turn.failed).
    pub agent_ok: Option<bool>,
    pub agent_error: Option<&'a str>,
    pub artifact: ArtifactCheck,
    /// The phase log, relative to the project, for the reason text.
    pub log: &'a str,
}

/// Whether the task goes on after a phase: `Ok(())`, or the stop and its reason.
pub fn judge_phase(p: &PhaseFacts<'_>) -> Result<(), (StopKind, String)> {
    let phase = p.phase.word();
    let (end, log) = (p.end_text, p.log);
    let ended = |kind| Err((kind, format!("{end} during {phase}; see {log}")));
    match p.end {
        End::PhaseTimeout => return ended(StopKind::PhaseTimeout),
        End::TotalTimeout => return ended(StopKind::TotalTimeCap),
        End::Stalled => return ended(StopKind::Stalled),
        End::Cancelled => return ended(StopKind::Interrupted),
        End::Exited { .. } => {}
    }
    // The agent's own failure signal stops the phase even when it exited 0.
    if p.agent_ok == Some(false) {
        let why = p.agent_error.unwrap_or("the agent reported a failure");
        let reason = format!("{why} ({end}) during {phase}; see {log}");
        return Err((StopKind::AgentFailed, reason));
    }
    if p.end == (End::Exited { success: false }) && !p.stopped_after_contract {
        return ended(StopKind::AgentFailed);
    }
    let name = p.phase.artifact().file_name();
    let why = match &p.artifact {
        ArtifactCheck::Valid => return Ok(()),
        ArtifactCheck::Missing if p.contract_met => {
            format!("the agent printed CONTRACT_MET but did not write {name}")
        }
        ArtifactCheck::Missing => format!("the agent exited 0 but did not write {name}"),
        ArtifactCheck::Inherited => {
            format!("{name} is unchanged from the copy this task started with")
        }
        ArtifactCheck::Empty => format!("{name} is empty"),
        ArtifactCheck::Malformed(why) => {
            return Err((StopKind::BadArtifact, format!("{name} is malformed: {why}")));
        }
    };
    Err((
        StopKind::BadArtifact,
        format!("{why} ({phase} phase); see {log}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAUSES: [Option<Cause>; 9] = [
        None,
        Some(Cause::Questions),
        Some(Cause::Stopped),
        Some(Cause::Verdict),
        Some(Cause::MalformedVerdict),
        Some(Cause::InvalidPlan),
        Some(Cause::Subtasks),
        Some(Cause::Created),
        Some(Cause::TooDeep),
    ];
    const VERIFY: [Verify; 4] = [
        Verify::NotConfigured,
        Verify::Passed,
        Verify::Pending(VerifyOf::Implementation),
        Verify::Pending(VerifyOf::Pass),
    ];

    /// An independent statement of the rules, as a priority list.
    fn reference(f: &Facts) -> Action {
        let late = f.now >= f.deadline;
        let capped = f.iterations >= f.max_iterations;
        if f.cancelled {
            Action::EndRun(StopKind::Interrupted)
        } else if late {
            Action::EndRun(StopKind::TotalTimeCap)
        } else if f.stale {
            Action::Stale
        } else if matches!(f.state, State::Next(_))
            && let Verify::Pending(of) = f.verify
        {
            Action::Verify(of)
        } else if f.state == State::Complete {
            if let Verify::Pending(of) = f.verify {
                Action::Verify(of)
            } else if f.awaiting_approval {
                Action::AwaitApproval(Gate::Merge)
            } else {
                Action::Complete
            }
        } else if f.state == State::HumanIntervention
            && f.cause == Some(Cause::Verdict)
            && matches!(f.rework, Rework::Round(_))
        {
            Action::Rework
        } else if f.state == State::HumanIntervention {
            Action::Human(match f.cause {
                Some(Cause::Verdict) => StopKind::VerdictFailed,
                Some(Cause::MalformedVerdict) | Some(Cause::InvalidPlan) => StopKind::BadArtifact,
                Some(Cause::TooDeep) => StopKind::BadArtifact,
                Some(Cause::Subtasks) => StopKind::SubtasksFailed,
                Some(Cause::Questions) => StopKind::Questions,
                _ => StopKind::NeedsHuman,
            })
        } else if f.step && f.iterations > 0 {
            Action::StepDone(f.state.next_phase().expect("non-terminal"))
        } else if f.frozen_changed {
            Action::Frozen
        } else if f.state == State::Next(Phase::Decomposition) && f.has_plan && f.replan {
            if f.run_over_budget {
                Action::EndRun(StopKind::RunBudget)
            } else if f.task_over_budget {
                Action::OverBudget(Phase::Decomposition)
            } else if capped {
                Action::IterationCap(Phase::Decomposition)
            } else {
                Action::Replan
            }
        } else if f.state == State::Next(Phase::Decomposition) && f.has_plan && f.awaiting_approval
        {
            Action::AwaitApproval(Gate::Subtasks)
        } else if f.step
            && ((f.state == State::Next(Phase::Decomposition) && f.has_plan) || f.unplanned)
        {
            Action::StepSubtask
        } else if f.state == State::Next(Phase::Decomposition) && f.has_plan {
            Action::RunSubtasks
        } else if f.unplanned {
            Action::RunChildren
        } else if f.run_over_budget {
            Action::EndRun(StopKind::RunBudget)
        } else if f.task_over_budget {
            Action::OverBudget(f.state.next_phase().expect("non-terminal"))
        } else if f.awaiting_approval {
            Action::AwaitApproval(Gate::Phase(f.state.next_phase().expect("non-terminal")))
        } else if capped {
            Action::IterationCap(f.state.next_phase().expect("non-terminal"))
        } else {
            Action::RunPhase(f.state.next_phase().expect("non-terminal"))
        }
    }

    #[test]
    fn next_action_matches_the_reference_in_every_case() {
        let t0 = Instant::now();
        let mut cases = 0;
        for state in State::ALL {
            for cause in CAUSES {
                for has_plan in [false, true] {
                    for verify in VERIFY {
                        for (iterations, max_iterations) in [(0, 10), (9, 10), (10, 10), (0, 0)] {
                            for flags in 0..2048u16 {
                                let bit = |n: u16| flags & (1 << n) != 0;
                                let late = bit(1);
                                let f = Facts {
                                    state,
                                    cause,
                                    has_plan,
                                    verify,
                                    iterations,
                                    max_iterations,
                                    cancelled: bit(0),
                                    step: bit(2),
                                    unplanned: bit(3),
                                    replan: bit(4),
                                    awaiting_approval: bit(5),
                                    stale: bit(6),
                                    frozen_changed: bit(7),
                                    task_over_budget: bit(8),
                                    run_over_budget: bit(9),
                                    rework: if bit(10) {
                                        Rework::Round(1)
                                    } else {
                                        Rework::Spent { rounds: 1 }
                                    },
                                    now: t0 + Duration::from_secs(if late { 10 } else { 1 }),
                                    deadline: t0 + Duration::from_secs(10),
                                };
                                assert_eq!(next_action(&f), reference(&f), "{f:?}");
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 11 * 9 * 2 * VERIFY.len() * 4 * 2048);
    }

    /// An independent statement of the retry rules.
    fn retry_reference(f: &RetryFacts) -> Retry {
        let retryable = matches!(
            f.kind,
            StopKind::AgentFailed
                | StopKind::BadArtifact
                | StopKind::PhaseTimeout
                | StopKind::Stalled
        );
        if !retryable || f.step {
            return Retry::GiveUp(GiveUp::NotRetryable);
        }
        if f.kind == StopKind::AgentFailed && !f.rate_limited {
            if f.exit_code == Some(126) {
                return Retry::GiveUp(GiveUp::CannotChange(Unchanging::NotExecutable));
            }
            if f.exit_code == Some(127) {
                return Retry::GiveUp(GiveUp::CannotChange(Unchanging::NotFound));
            }
            if let (Some(a), Some(b)) = (f.error_line, f.previous_error)
                && !a.trim().is_empty()
                && a.trim() == b.trim()
            {
                return Retry::GiveUp(GiveUp::CannotChange(Unchanging::SameError));
            }
        }
        let attempts_allowed = 1 + f.retries;
        if f.failures >= attempts_allowed {
            return Retry::GiveUp(GiveUp::Exhausted);
        }
        if f.iterations >= f.max_iterations {
            return Retry::GiveUp(GiveUp::IterationCap);
        }
        let mut wait = if f.rate_limited && f.backoff < Duration::from_secs(1) {
            Duration::from_secs(1)
        } else {
            f.backoff
        };
        for _ in 1..f.failures {
            wait = wait.saturating_mul(2);
        }
        let wait = wait.min(Duration::from_secs(3600));
        if f.now + wait >= f.deadline {
            Retry::GiveUp(GiveUp::Deadline)
        } else {
            Retry::After(wait)
        }
    }

    #[test]
    fn retry_matches_the_reference_in_every_case() {
        let t0 = Instant::now();
        let mut cases = 0;
        for (kind, _, _) in StopKind::TABLE {
            for failures in 1..=5 {
                for retries in [0, 1, 2, 4] {
                    for backoff_ms in [0, 200, 10_000] {
                        for (iterations, max_iterations) in [(1, 10), (9, 10), (10, 10)] {
                            for flags in 0..8u8 {
                                for (exit_code, error_line, previous_error) in ENDS {
                                    let bit = |n: u8| flags & (1 << n) != 0;
                                    let f = RetryFacts {
                                        kind,
                                        exit_code,
                                        error_line,
                                        previous_error,
                                        failures,
                                        retries,
                                        rate_limited: bit(0),
                                        backoff: Duration::from_millis(backoff_ms),
                                        iterations,
                                        max_iterations,
                                        step: bit(1),
                                        now: t0,
                                        deadline: t0
                                            + Duration::from_secs(if bit(2) { 15 } else { 86_400 }),
                                    };
                                    assert_eq!(retry(&f), retry_reference(&f), "{f:?}");
                                    cases += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(
            cases,
            StopKind::TABLE.len() * 5 * 4 * 3 * 3 * 8 * ENDS.len()
        );
    }

    /// How an agent's attempt ended, for the retry cases: (exit status, its one-line error,
    /// the attempt before's).
    const ENDS: [(Option<i32>, Option<&str>, Option<&str>); 8] = [
        (Some(3), Some("boom"), None),
        (Some(3), Some("boom"), Some("boom")),
        (Some(3), Some("boom "), Some(" boom")),
        (Some(3), Some("boom 2"), Some("boom 1")),
        (Some(3), Some("  "), Some("  ")),
        (Some(126), None, None),
        (Some(127), Some("sh: 0: cannot open a.sh"), None),
        (None, None, None),
    ];

    #[test]
    fn what_cannot_change_stops_at_once() {
        let t0 = Instant::now();
        let f = |kind, exit_code, error_line, previous_error, rate_limited| RetryFacts {
            kind,
            exit_code,
            error_line,
            previous_error,
            failures: 1,
            retries: 2,
            rate_limited,
            backoff: Duration::from_secs(10),
            iterations: 1,
            max_iterations: 10,
            step: false,
            now: t0,
            deadline: t0 + Duration::from_secs(86_400),
        };
        let give_up = |why| Retry::GiveUp(GiveUp::CannotChange(why));
        let agent = StopKind::AgentFailed;
        assert_eq!(
            retry(&f(
                agent,
                Some(127),
                Some("sh: 0: cannot open a.sh"),
                None,
                false
            )),
            give_up(Unchanging::NotFound)
        );
        assert_eq!(
            retry(&f(agent, Some(126), None, None, false)),
            give_up(Unchanging::NotExecutable)
        );
        assert_eq!(
            retry(&f(
                agent,
                Some(1),
                Some("error: x"),
                Some("error: x"),
                false
            )),
            give_up(Unchanging::SameError)
        );
        // A different line, a first failure, a rate limit or another kind of stop: retried.
        let after = Retry::After(Duration::from_secs(10));
        assert_eq!(
            retry(&f(
                agent,
                Some(1),
                Some("error: y"),
                Some("error: x"),
                false
            )),
            after
        );
        assert_eq!(
            retry(&f(agent, Some(1), Some("error: x"), None, false)),
            after
        );
        assert_eq!(
            retry(&f(agent, Some(127), Some("429"), Some("429"), true)),
            after
        );
        assert_eq!(
            retry(&f(
                StopKind::BadArtifact,
                Some(0),
                Some("x"),
                Some("x"),
                false
            )),
            after
        );
        assert!(Unchanging::NotFound.why().contains("127"));
    }

    #[test]
    fn backoff_doubles_from_the_setting_and_a_rate_limit_always_waits() {
        let ms = Duration::from_millis;
        assert_eq!(backoff_for(1, ms(200), false), ms(200));
        assert_eq!(backoff_for(2, ms(200), false), ms(400));
        assert_eq!(backoff_for(3, ms(200), false), ms(800));
        assert_eq!(backoff_for(1, Duration::ZERO, false), Duration::ZERO);
        assert_eq!(backoff_for(1, Duration::ZERO, true), ms(1000));
        assert_eq!(backoff_for(2, ms(200), true), ms(2000));
        assert_eq!(backoff_for(2, ms(5000), true), ms(10_000));
        assert_eq!(backoff_for(40, ms(200), false), MAX_BACKOFF);
        assert_eq!(backoff_for(u32::MAX, MAX_BACKOFF, true), MAX_BACKOFF);
    }

    #[test]
    fn budgets_say_what_was_spent_against_which_limit() {
        let b = Budget {
            tokens: Some(5_000),
            usd: Some(1.0),
        };
        let spent = |tokens, usd| Spend { tokens, usd };
        assert_eq!(b.exceeded(&spent(5_000, 1.0)), None);
        assert_eq!(
            b.exceeded(&spent(8_723, 0.5)).as_deref(),
            Some("8,723 tokens spent of a 5,000-token budget")
        );
        assert_eq!(
            b.exceeded(&spent(10, 1.25)).as_deref(),
            Some("$1.2500 spent of a $1.00 budget")
        );
        assert!(!Budget::default().is_set());
        assert_eq!(Budget::default().exceeded(&spent(u64::MAX, 1e9)), None);
        assert_eq!(spent(1, 0.5).plus(spent(2, 0.25)), spent(3, 0.75));
        for kind in [StopKind::TaskBudget, StopKind::Frozen] {
            assert!(kind.is_task_stop() && !kind.is_retryable(), "{kind:?}");
        }
        assert!(StopKind::TaskBudget.is_recorded());
        assert!(!StopKind::Frozen.is_recorded());
        assert!(!StopKind::RunBudget.is_task_stop());
        assert_eq!(
            [StopKind::Frozen, StopKind::TaskBudget, StopKind::RunBudget].map(StopKind::code),
            [26, 27, 28]
        );
    }

    #[test]
    fn a_gate_and_staleness_stop_the_task_without_a_stop_record() {
        for (kind, code, word) in [
            (StopKind::AwaitingApproval, 20, "awaiting_approval"),
            (StopKind::Stale, 21, "stale"),
        ] {
            assert_eq!((kind.code(), kind.word()), (code, word));
            assert!(kind.is_task_stop() && !kind.is_recorded(), "{kind:?}");
        }
        assert!(StopKind::AgentFailed.is_recorded());
        assert!(!StopKind::Interrupted.is_recorded());
    }

    fn facts(end: End, artifact: ArtifactCheck) -> PhaseFacts<'static> {
        PhaseFacts {
            phase: Phase::Design,
            end,
            end_text: "END",
            contract_met: false,
            stopped_after_contract: false,
            agent_ok: None,
            agent_error: None,
            artifact,
            log: "t/logs/design-1.log",
        }
    }

    #[test]
    fn judge_phase_orders_end_then_agent_signal_then_status_then_artifact() {
        let ok = End::Exited { success: true };
        let failed = End::Exited { success: false };
        assert_eq!(judge_phase(&facts(ok, ArtifactCheck::Valid)), Ok(()));
        for (end, kind) in [
            (End::PhaseTimeout, StopKind::PhaseTimeout),
            (End::TotalTimeout, StopKind::TotalTimeCap),
            (End::Stalled, StopKind::Stalled),
            (End::Cancelled, StopKind::Interrupted),
            (failed, StopKind::AgentFailed),
        ] {
            // The end wins even over a valid artifact.
            assert_eq!(
                judge_phase(&facts(end, ArtifactCheck::Valid)),
                Err((kind, "END during design; see t/logs/design-1.log".into()))
            );
        }
        let mut f = facts(ok, ArtifactCheck::Valid);
        f.agent_ok = Some(false);
        f.agent_error = Some("rate limited");
        assert_eq!(
            judge_phase(&f),
            Err((
                StopKind::AgentFailed,
                "rate limited (END) during design; see t/logs/design-1.log".into()
            ))
        );
        // Stopped after CONTRACT_MET: the status says nothing, the artifact decides.
        let mut f = facts(failed, ArtifactCheck::Valid);
        f.stopped_after_contract = true;
        assert_eq!(judge_phase(&f), Ok(()));
        let bad = |a, contract_met| {
            let mut f = facts(ok, a);
            f.contract_met = contract_met;
            judge_phase(&f).unwrap_err()
        };
        let tail = " (design phase); see t/logs/design-1.log";
        assert_eq!(
            bad(ArtifactCheck::Missing, false),
            (
                StopKind::BadArtifact,
                format!("the agent exited 0 but did not write DESIGN.md{tail}")
            )
        );
        assert_eq!(
            bad(ArtifactCheck::Missing, true).1,
            format!("the agent printed CONTRACT_MET but did not write DESIGN.md{tail}")
        );
        assert_eq!(
            bad(ArtifactCheck::Empty, false).1,
            format!("DESIGN.md is empty{tail}")
        );
        assert_eq!(
            bad(ArtifactCheck::Inherited, false).1,
            format!("DESIGN.md is unchanged from the copy this task started with{tail}")
        );
        assert_eq!(
            bad(ArtifactCheck::Malformed("no verdict".into()), false),
            (
                StopKind::BadArtifact,
                "DESIGN.md is malformed: no verdict".into()
            )
        );
    }

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
