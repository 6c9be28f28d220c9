//! The loop's decisions, pure like `state.rs`: given what was read of a task, the caps and the
//! clock, which action comes next ([`next_action`]); given how a phase's agent ended and what
//! it left, whether the task goes on ([`judge_phase`]). No I/O, no clock reads, no processes:
//! the driver gathers the facts, asks, and executes the answer.

use crate::exit;
use crate::state::{Cause, Phase, State};
use std::time::Instant;

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
}

impl StopKind {
    /// Every stop kind with its word (in `--json` events) and its documented exit code: the
    /// one table of both, in variant order.
    pub const TABLE: [(StopKind, &'static str, u8); 14] = [
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
        !matches!(self, StopKind::Interrupted | StopKind::TotalTimeCap)
    }

    /// Whether the stop is recorded in `.stop`. A gate and staleness are not: the files
    /// themselves say so (`.state.approvals`, `.state.inputs`), and they clear when a person
    /// approves or reruns, without a retry.
    pub fn is_recorded(self) -> bool {
        self.is_task_stop() && !matches!(self, StopKind::AwaitingApproval | StopKind::Stale)
    }

    /// The stop (and exit code) for a task the state machine put in human_intervention.
    pub fn for_cause(cause: Option<Cause>) -> StopKind {
        match cause {
            Some(Cause::Verdict) => StopKind::VerdictFailed,
            Some(Cause::MalformedVerdict | Cause::InvalidPlan | Cause::TooDeep) => {
                StopKind::BadArtifact
            }
            Some(Cause::Subtasks) => StopKind::SubtasksFailed,
            Some(Cause::Stopped | Cause::Created) | None => StopKind::NeedsHuman,
        }
    }
}

/// Whether a PASS verdict still needs the verify command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// No verify command is configured.
    NotConfigured,
    /// The command passed for this very VERDICT.md.
    Passed,
    /// It has not passed for this VERDICT.md yet.
    Pending,
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
    /// The phase next is gated (`Approve before`) and no approval covers the task's current
    /// artifacts.
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
    /// once more with the over-budget rows in its prompt (seed 000).
    pub replan: bool,
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
    /// Run the verify command before the PASS counts.
    Verify,
    /// The task needs a human for the state machine's reason.
    Human(StopKind),
    /// Drive the sub-tasks of the plan in waves.
    RunSubtasks,
    /// Stale artifacts: stop the task and say what to rerun.
    Stale,
    /// This phase is gated and not approved: stop the task until a person approves.
    AwaitApproval(Phase),
    /// The iteration cap is reached with this phase next: stop the task.
    IterationCap(Phase),
    /// Run this phase.
    RunPhase(Phase),
    /// `--step`: the one phase ran; this phase would be next. Nothing is recorded in the task.
    StepDone(Phase),
    /// `--step` on a task whose sub-tasks run next: run one phase of one ready sub-task.
    StepSubtask,
    /// Drive the sub-tasks made by hand (no plan), one after another, before this task.
    RunChildren,
    /// Send the plan back to the decomposition phase, once, with the over-budget rows.
    Replan,
}

/// Decide the next action. The run's own stops come first (a cancelled or timed-out run acts
/// on nothing), then stale artifacts (nothing goes on from edited ground, not even a
/// completion), then the state machine's terminal states, then a gate, then the caps.
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
    match f.state {
        State::Complete if f.verify == Verify::Pending => Action::Verify,
        State::Complete => Action::Complete,
        State::HumanIntervention => Action::Human(StopKind::for_cause(f.cause)),
        State::Next(phase) if f.step && f.iterations >= 1 => Action::StepDone(phase),
        State::Next(Phase::Decomposition) if f.has_plan && f.replan => {
            if f.iterations >= f.max_iterations {
                Action::IterationCap(Phase::Decomposition)
            } else {
                Action::Replan
            }
        }
        State::Next(phase) if (phase == Phase::Decomposition && f.has_plan) || f.unplanned => {
            if f.step {
                Action::StepSubtask
            } else if phase == Phase::Decomposition && f.has_plan {
                Action::RunSubtasks
            } else {
                Action::RunChildren
            }
        }
        State::Next(phase) if f.awaiting_approval => Action::AwaitApproval(phase),
        State::Next(phase) if f.iterations >= f.max_iterations => Action::IterationCap(phase),
        State::Next(phase) => Action::RunPhase(phase),
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
    use std::time::Duration;

    const CAUSES: [Option<Cause>; 8] = [
        None,
        Some(Cause::Stopped),
        Some(Cause::Verdict),
        Some(Cause::MalformedVerdict),
        Some(Cause::InvalidPlan),
        Some(Cause::Subtasks),
        Some(Cause::Created),
        Some(Cause::TooDeep),
    ];
    const VERIFY: [Verify; 3] = [Verify::NotConfigured, Verify::Passed, Verify::Pending];

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
        } else if f.state == State::Complete {
            if f.verify == Verify::Pending {
                Action::Verify
            } else {
                Action::Complete
            }
        } else if f.state == State::HumanIntervention {
            Action::Human(match f.cause {
                Some(Cause::Verdict) => StopKind::VerdictFailed,
                Some(Cause::MalformedVerdict) | Some(Cause::InvalidPlan) => StopKind::BadArtifact,
                Some(Cause::TooDeep) => StopKind::BadArtifact,
                Some(Cause::Subtasks) => StopKind::SubtasksFailed,
                _ => StopKind::NeedsHuman,
            })
        } else if f.step && f.iterations > 0 {
            Action::StepDone(f.state.next_phase().expect("non-terminal"))
        } else if f.state == State::Next(Phase::Decomposition) && f.has_plan && f.replan {
            if capped {
                Action::IterationCap(Phase::Decomposition)
            } else {
                Action::Replan
            }
        } else if f.step
            && ((f.state == State::Next(Phase::Decomposition) && f.has_plan) || f.unplanned)
        {
            Action::StepSubtask
        } else if f.state == State::Next(Phase::Decomposition) && f.has_plan {
            Action::RunSubtasks
        } else if f.unplanned {
            Action::RunChildren
        } else if f.awaiting_approval {
            Action::AwaitApproval(f.state.next_phase().expect("non-terminal"))
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
                            for flags in 0..128u8 {
                                let bit = |n: u8| flags & (1 << n) != 0;
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
        assert_eq!(cases, 11 * 8 * 2 * 3 * 4 * 128);
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
