//! The observe step of a turn: every read of a task that the planner decides from. A task
//! folder and its sub-tasks are read with the gates of `Approve before` applied; the facts
//! of one task (its state, the verify command's due, the caps, the budgets, the clock) are
//! gathered for [`next_action`](crate::plan::decide::next_action); and a sub-task named on
//! the command line is checked against its parent's plan before anything runs.

use super::Run;
use crate::artifact::decomposition::SubtaskRow;
use crate::plan::decide::Facts;
use crate::state::{Artifact, State};
use crate::task::readiness::{WaveRules, waits_for};
use crate::task::{TaskNode, TaskTree, frozen};
use std::path::Path;

/// Read a task folder and its sub-tasks, with the gates of `Approve before` applied.
pub(super) fn load(run: &Run<'_>, rel: &str) -> TaskTree {
    gated(
        run,
        TaskTree::load_task(&run.settings.project, rel, &run.config),
    )
}

/// `tree` with the gates of `Approve before` applied.
pub(super) fn gated(run: &Run<'_>, mut tree: TaskTree) -> TaskTree {
    tree.apply_gates(&run.cfg.approve_before);
    tree
}

/// What [`next_action`](crate::plan::decide::next_action) decides from: the task as read,
/// the caps, the clock.
pub(super) fn facts(
    run: &Run<'_>,
    dir: &Path,
    tree: &TaskTree,
    node: &TaskNode,
    iterations: u64,
) -> Facts {
    let state = node.state();
    let verify = super::verify::due(run, dir, node);
    Facts {
        state,
        cause: node.decision.cause,
        has_plan: matches!(node.snap.plan, Some(Ok(_))),
        verify,
        iterations,
        max_iterations: run.limits.iterations,
        awaiting_approval: node.approval.is_some(),
        stale: !node.stale.is_empty(),
        cancelled: run.cancel.load(std::sync::atomic::Ordering::SeqCst),
        step: run.step,
        replan: !over_budget(run, node).is_empty()
            && !dir.join(crate::task::snapshot::SENT_BACK_FILE).exists()
            && node
                .children
                .iter()
                .all(|c| tree.nodes[*c].snap.artifacts.is_empty()),
        unplanned: node.snap.plan.is_none()
            && node
                .children
                .iter()
                .any(|c| !tree.nodes[*c].state().is_terminal()),
        frozen_changed: matches!(state, State::Next(p) if p.artifact() > Artifact::TestPlan)
            && node.snap.has_frozen
            && !frozen::changed(dir).is_empty(),
        rework: if state == State::HumanIntervention
            && node.decision.cause == Some(crate::state::Cause::Verdict)
        {
            super::rework::for_verdict(run, dir)
        } else {
            crate::plan::rework::Rework::Off
        },
        task_over_budget: run.budgets.task_exceeded(dir, Default::default()).is_some(),
        run_over_budget: run.budgets.run_exceeded(Default::default()).is_some(),
        // The clock the caps run on: it stands still while automaton is stopped (Ctrl-Z).
        now: crate::process::signals::now_unpaused(),
        deadline: run.deadline,
    }
}

/// The rows of a task's plan whose estimate exceeds the max peak context.
pub(super) fn over_budget<'n>(run: &Run<'_>, node: &'n TaskNode) -> Vec<&'n SubtaskRow> {
    match &node.snap.plan {
        Some(Ok(plan)) => plan
            .rows
            .iter()
            .filter(|r| r.estimate.is_some_and(|e| e > run.max_peak))
            .collect(),
        _ => Vec::new(),
    }
}

/// Why the sub-task `rel` (or a parent above it) may not start now by its parent's plan,
/// with the command that moves it on in order; `None` when it may, or when it is not a
/// sub-task of a plan.
pub(super) fn not_ready(run: &Run<'_>, rel: &str, rules: WaveRules) -> Option<String> {
    let mut child = rel;
    while let Some(parent) = parent_of(child) {
        let tree = TaskTree::load_states(&run.settings.project, parent, &run.config);
        if let Some(why) = tree.find(child).and_then(|i| waits_for(&tree, i, rules)) {
            let who = if child == rel {
                String::new()
            } else {
                format!(" ({child}, above it)")
            };
            return Some(format!(
                "{rel} may not start yet{who}: {why}; `automaton orchestrate --task {parent}` \
                 drives its parent, which starts it in turn"
            ));
        }
        child = parent;
    }
    None
}

/// The parent of a sub-task's path (`a/subtasks/b` → `a`).
pub(super) fn parent_of(rel: &str) -> Option<&str> {
    rel.rsplit_once("/subtasks/").map(|(parent, _)| parent)
}
