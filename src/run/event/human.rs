//! The line people read for each event of a run (on stderr, without `--json`). [`Event::human`]
//! names every event, so a new one does not compile until it is given a line (or none) or a
//! family; it hands a family of events to the function that words them. The events snapshot
//! in `tests.rs` pins every line, so an event handed to the wrong family (which prints
//! nothing) fails it. The JSON form is serde's, in `mod.rs`.

use super::{Check, CheckFinished, CheckStarted, Event, FreezeReason};

impl Event<'_> {
    /// The line people read for this event (on stderr), or none for an event that only
    /// scripts need.
    pub fn human(&self) -> Option<String> {
        use Event::*;
        Some(match self {
            WorktreeReconciled { .. }
            | VerdictArchived { .. }
            | StopCleared { .. }
            | IncompleteSetAside { .. }
            | PhaseRecovered { .. }
            | PersonsEditKept { .. }
            | LeftoverAgentStopped { .. }
            | SlurmReattached { .. } => return self.recovery_line(),
            PhaseStarted { .. }
            | Leftovers { .. }
            | PhaseFinished { .. }
            | FrozenRestored { .. }
            | ArtifactValidated { .. }
            | Frozen { .. } => return self.phase_line(),
            PhaseRetry { .. } | QuestionsAsked { .. } | ReworkStarted { .. } => {
                return self.round_again_line();
            }
            JobsAuto { .. }
            | WorktreeInclude { .. }
            | EstimateOverPeak { .. }
            | SubtaskCreated { .. }
            | SubtaskRepaired { .. }
            | OrphanKept { .. }
            | OrphanRemoved { .. }
            | VramDetected { .. }
            | PlanSentBack { .. }
            | SubtaskStarted { .. }
            | Merged { .. } => return self.subtask_line(),
            RunStarted {
                task,
                agent,
                adapter,
            } => match *adapter {
                "command" => format!("automaton: driving {task} with `{agent}`"),
                kind => format!("automaton: driving {task} with {kind}: `{agent}`"),
            },
            Workspace { .. } | Committed { .. } => return None,
            SetupStarted(e) => e.human(Check::Setup),
            VerifyStarted(e) => e.human(Check::Verify),
            SetupFinished(e) => e.human(Check::Setup),
            VerifyFinished(e) => e.human(Check::Verify),
            Warning { task, message } => format!("warning: {task}: {message}"),
            TaskComplete { task } => format!("✔ {task}: complete"),
            // A gate, stale artifacts, a sub-task not ready: a wait for a person (or a
            // dependency), not a failure, so not drawn with the failure mark.
            TaskStopped {
                task,
                kind: "awaiting_approval" | "stale" | "not_ready",
                reason,
            } => format!("⏸ {}", named_once(task, reason)),
            TaskStopped { task, reason, .. } => format!("✘ {}", named_once(task, reason)),
            StepDone { task, next } => format!("■ {task}: one step done; {next} is next"),
            // The command prints these itself, as the report that ends the run.
            Planned { .. } | Summary(_) | Complete { .. } | Stepped { .. } | Stop { .. } => {
                return None;
            }
        })
    }

    /// What a run found and mended of an earlier, killed or stopped one.
    fn recovery_line(&self) -> Option<String> {
        use Event::*;
        Some(match self {
            WorktreeReconciled { worktree } => format!(
                "↻ {}: undid a git operation a killed run left unfinished",
                worktree.display()
            ),
            VerdictArchived { task, n, .. } => format!(
                "↻ {task}: VERDICT.md moved to {task}/logs/VERDICT-{n}.md; its referee runs again"
            ),
            StopCleared { task, reason } => format!("↻ {task}: retrying after: {reason}"),
            IncompleteSetAside { task, artifact, to } => format!(
                "↻ {task}: {artifact} was written by a phase run that did not finish; moved to {} and the phase runs again",
                to.display()
            ),
            PhaseRecovered {
                task,
                phase,
                attempt,
                ..
            } => format!(
                "↺ {task}: {phase} (attempt {attempt}) had finished before the run was killed: judged now, not run again"
            ),
            PersonsEditKept { task, artifact } => format!(
                "  {task}: {artifact} changed since the run that wrote it stopped: your version is used"
            ),
            LeftoverAgentStopped { task, what, .. } => format!(
                "warning: {task}: stopped agent {what} that an earlier, killed run left running"
            ),
            SlurmReattached { task, phase, job } => format!(
                "{task}: re-attached to Slurm job {job}, which an earlier, killed run submitted for {phase}"
            ),
            _ => return None,
        })
    }

    /// One phase of a task: its start, its end, what was judged, frozen or retried.
    fn phase_line(&self) -> Option<String> {
        use Event::*;
        Some(match self {
            PhaseStarted {
                task,
                phase,
                attempt,
                ..
            } => format!("▶ {task}: {phase} (attempt {attempt})"),
            Leftovers {
                task,
                leftovers,
                agent_pid,
                ..
            } => format!(
                "warning: {task}: still alive after SIGKILL (agent pid {agent_pid}): {}",
                leftovers
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            PhaseFinished {
                exited_fine: true, ..
            } => return None,
            PhaseFinished {
                task,
                phase,
                seconds,
                end,
                ..
            } => format!(
                "  {task}: {phase} ended after {:.1}s ({end})",
                seconds.as_secs_f64()
            ),
            FrozenRestored {
                task, phase, what, ..
            } => format!("⚠ {task}: the {phase} phase {what} .state.frozen; put back"),
            ArtifactValidated {
                task,
                phase,
                artifact,
                duration,
                usage,
            } => format!(
                "✔ {task}: {phase} → {artifact} ({:.1}s{usage})",
                duration.as_secs_f64()
            ),
            Frozen {
                task,
                files,
                reason,
                ..
            } => format!(
                "❄ {task}: froze TEST_PLAN.md{}{}",
                if files.is_empty() {
                    String::new()
                } else {
                    format!(" and {}", files.join(", "))
                },
                match reason {
                    FreezeReason::TestDesign => "",
                    FreezeReason::Missing => " (no .state.frozen was there)",
                }
            ),
            _ => return None,
        })
    }

    /// A phase's end that sends the task round again: a retry, the agent's questions, a
    /// rework round.
    fn round_again_line(&self) -> Option<String> {
        use Event::*;
        Some(match self {
            PhaseRetry {
                task,
                phase,
                attempt,
                failures,
                retries,
                reason,
                rate_limited,
                backoff,
                ..
            } => format!(
                "↻ {task}: {phase} failed (attempt {attempt}: {reason}); {}retry {failures} of {retries} in {}",
                if *rate_limited { "rate-limited: " } else { "" },
                crate::run::agent::human_duration(*backoff)
            ),
            QuestionsAsked {
                task,
                phase,
                questions,
            } => format!(
                "? {task}: the {phase} agent asks {} question{}: {}",
                questions.len(),
                if questions.len() == 1 { "" } else { "s" },
                questions.join(" / ")
            ),
            ReworkStarted {
                task,
                round,
                counted,
                max,
                cause,
                ..
            } => format!(
                "↻ {task}: rework round {counted} of {max}{}: {cause}; implement runs again with the findings",
                if counted == round {
                    String::new()
                } else {
                    format!(
                        " (kept in logs/rework/{round}: the rounds a person asked for do not count)"
                    )
                }
            ),
            _ => return None,
        })
    }

    /// A decomposition's sub-tasks: made, mended, admitted, started and merged.
    fn subtask_line(&self) -> Option<String> {
        use Event::*;
        Some(match self {
            JobsAuto {
                weights, budget, ..
            } => format!(
                "--jobs auto: sub-tasks start while the model's weights ({}) and their needs fit in {}",
                crate::run::vram::gb(*weights),
                crate::run::vram::gb(*budget)
            ),
            WorktreeInclude { task, files, .. } => format!(
                "  {task}: copied {} file{} listed in .worktreeinclude into its worktree",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ),
            EstimateOverPeak {
                task,
                estimate,
                max_peak,
                ..
            } => format!(
                "warning: {task}: estimated peak context {}k exceeds the max peak of {max_peak} tokens; consider splitting it in DECOMPOSITION.md",
                estimate / 1000
            ),
            SubtaskCreated { task, wave, .. } => format!("+ {task} (wave {wave})"),
            SubtaskRepaired { task } => {
                format!("+ {task}: PARENT_SPEC.md and VRAM_CONFIG.md written (they were missing)")
            }
            OrphanKept { task } => format!(
                "warning: {task} is no longer in DECOMPOSITION.md but has work in it; kept (delete it yourself if it is not needed)"
            ),
            OrphanRemoved { task } => {
                format!("- {task}: no longer in DECOMPOSITION.md and never started; removed")
            }
            VramDetected { task, block, .. } => format!("{task}: {}", block.trim_end()),
            PlanSentBack { task, max_peak, .. } => format!(
                "↻ {task}: sub-tasks over the context budget of {max_peak} tokens; the plan goes back to the decomposition phase once"
            ),
            SubtaskStarted {
                task,
                wave: Some(wave),
                ..
            } => format!("▶ {task}: wave {wave} sub-task started"),
            SubtaskStarted {
                task, wave: None, ..
            } => format!("▶ {task}: sub-task started (made by hand, not in a plan)"),
            Merged { task, branch, into } => format!("⇢ {task}: merged {branch} into {into}"),
            _ => return None,
        })
    }
}

/// `tasks/a: why`, or the reason alone when it starts with the task's name already
/// (`tasks/a waits for approval before design`): the task named once.
fn named_once(task: &str, reason: &str) -> String {
    match reason.strip_prefix(task) {
        Some(rest) if rest.starts_with(' ') => reason.to_string(),
        _ => format!("{task}: {reason}"),
    }
}

impl CheckStarted<'_> {
    fn human(&self, what: Check) -> String {
        format!("▶ {}: {what} `{}`", self.task, self.command)
    }
}

impl CheckFinished<'_> {
    fn human(&self, what: Check) -> String {
        match self.failure {
            None => format!("✔ {}: {what} passed", self.task),
            Some(reason) => format!("✘ {}: {reason}", self.task),
        }
    }
}
