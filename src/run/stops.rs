//! What a stop says: what ran out, changed or waits, and the command that moves the task
//! on (a budget to raise, files to restore or accept, artifacts to rebuild, a gate to
//! approve). `orchestrate` and `--dry-run` say a stop in the same words. A task's stop is
//! recorded here too ([`stop_task`]: its `.stop`, and the `task_stopped` event).

use super::event::Event;
use super::{Outcome, Run, StopKind};
use crate::plan::decide::Action;
use crate::store::task_files::write_stop;
use crate::task::{TaskNode, frozen};
use std::path::Path;

/// The stop reason of a changed frozen acceptance file.
pub(super) fn frozen_reason(rel: &str, what: &str) -> String {
    format!(
        "frozen acceptance files changed: {what}; they were frozen when test_design completed \
         (TEST_PLAN.md and its `## Acceptance tests`). Restore them, or accept the change with \
         `automaton approve {rel}`"
    )
}

/// The stop and its reason for an action that stops the task (or the run) with a message.
pub(super) fn stop_reason(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    node: &TaskNode,
    action: Action,
) -> (StopKind, String) {
    match action {
        Action::EndRun(StopKind::RunBudget) => {
            let what = run
                .budgets
                .run_exceeded(Default::default())
                .unwrap_or_default();
            (
                StopKind::RunBudget,
                format!(
                    "{what}; {rel} was not driven further (raise `- **Budget per run**` in \
                     config.md, or run again: each run has its own budget)"
                ),
            )
        }
        Action::OverBudget(phase) => {
            let what = run
                .budgets
                .task_exceeded(dir, Default::default())
                .unwrap_or_default();
            (
                StopKind::TaskBudget,
                format!(
                    "{what} ({rel}; {} would run next); raise `- **Budget per task**` in \
                     config.md, then `automaton orchestrate --task {rel}`",
                    phase.word()
                ),
            )
        }
        Action::Frozen => {
            let what = frozen::summary(dir).unwrap_or_default();
            (StopKind::Frozen, frozen_reason(rel, &what))
        }
        Action::Stale => {
            let what = crate::task::gates::stale_summary(&node.stale).unwrap_or_default();
            let from = crate::task::gates::rerun_phase(&node.stale).map_or("?", |p| p.word());
            (
                StopKind::Stale,
                format!(
                    "{what}; run `automaton rerun {rel} --from {from}` to build them again \
                     (the stale artifacts are kept under logs/superseded/)"
                ),
            )
        }
        Action::AwaitApproval(gate) => {
            let lapsed = node
                .approval
                .as_ref()
                .map(|w| w.lapsed_note())
                .unwrap_or_default();
            (
                StopKind::AwaitingApproval,
                format!(
                    "{rel} waits for approval before {}{lapsed}; run `automaton approve {rel}` \
                     (or `automaton reject {rel} --reason '...'`)",
                    gate.before()
                ),
            )
        }
        Action::IterationCap(phase) => (
            StopKind::IterationCap,
            format!(
                "iteration cap reached ({} phase{} in this run); next phase would be {}",
                run.limits.iterations,
                if run.limits.iterations == 1 { "" } else { "s" },
                phase.word()
            ),
        ),
        _ => (
            StopKind::TotalTimeCap,
            format!(
                "total time cap of {} reached",
                super::agent::human_duration(run.limits.total)
            ),
        ),
    }
}

/// A stop as the run's outcome, without recording it.
pub(super) fn stopped(kind: StopKind, reason: impl Into<String>) -> Outcome {
    Outcome::Stopped {
        kind,
        reason: reason.into(),
    }
}

/// Record a stop in the task folder when it belongs to the task, and say so.
pub(super) fn stop_task(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    kind: StopKind,
    reason: String,
) -> super::Result<Outcome> {
    // A folder deleted under the run reads as missing files (a frozen file "changed", an
    // artifact gone): that is not the stop to report, and nothing is written there.
    if !dir.is_dir() {
        return Err(super::RunError::TaskGone(rel.to_string()));
    }
    if kind.is_recorded() {
        write_stop(dir, &reason)?;
    }
    run.progress.event(&Event::TaskStopped {
        task: rel,
        kind: kind.word(),
        reason: &reason,
    });
    Ok(stopped(kind, reason))
}
