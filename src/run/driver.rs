//! The turn loop of one task: read it ([`super::observe`]), ask the planner ([`next_action`])
//! what comes next, do that, and repeat until the task is complete or needs a person. A
//! phase's end is judged in [`super::judge`]; the sub-tasks of a decomposed task are
//! scheduled in [`super::waves`]; a stop is said and recorded by [`super::stops`].

use super::event::Event;
use super::isolation::Workspace;
use super::judge::{Attempt, Failures, Freeze, after_phase, freeze, one_phase};
use super::observe::{facts, load, not_ready, over_budget};
use super::stops::{stop_reason, stop_task, stopped};
use super::subtasks::sync_subtasks;
use super::waves::{run_children, run_waves, step_subtask};
use super::workspace::workspace;
use super::{Outcome, Run, StopKind};
use crate::artifact::decomposition::SubtaskRow;
use crate::fsx::write_atomic;
use crate::plan::decide::{Action, VerifyOf, next_action};
use crate::plan::gate::Gate;
use crate::state::{Artifact, Phase};
use crate::store::task_files::{clear_stop, write_state};
use crate::task::snapshot::SUBTASKS_DIR;
use crate::task::{TaskNode, TaskTree, frozen};
use std::path::{Path, PathBuf};

/// Clear the stops an earlier run recorded in a task and its sub-tasks, so that naming the
/// task retries what was stopped (a timeout, a stalled or failed agent...).
pub(super) fn clear_stops(run: &Run<'_>, rel: &str) -> super::Result<()> {
    let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    for node in tree.nodes.iter().filter(|n| n.snap.stop.is_some()) {
        clear_stop(&node.dir)?;
        run.progress.event(&Event::StopCleared {
            task: &node.rel,
            reason: node.snap.stop.as_deref().unwrap_or(""),
        });
    }
    Ok(())
}

/// Nothing is written for a task whose folder, `logs/` or `subtasks/` is a link out of the
/// project (unless `Allow links out`), or whose journal, approvals or inputs record is a link:
/// refused before its first write, with the link's path. `fsx` checks every later write again.
fn contained(dir: &Path) -> super::Result<()> {
    for own in [dir, &dir.join("logs"), &dir.join(SUBTASKS_DIR)] {
        crate::fsx::beneath(own)?;
    }
    for appended in [
        crate::store::journal::path(dir),
        dir.join(crate::store::approvals::APPROVALS_FILE),
        dir.join(crate::store::inputs::INPUTS_FILE),
    ] {
        crate::fsx::refuse_appended_link(&appended)?;
    }
    Ok(())
}

/// Drive one task until it is complete or needs a human. `explicit`: the user named this task,
/// so a stop recorded by an earlier run is cleared and the task tried again. Each turn reads
/// the facts, asks [`next_action`] what to do, and does it.
pub fn drive(run: &Run<'_>, rel: &str, explicit: bool) -> super::Result<Outcome> {
    drive_keeping(run, rel, explicit, &mut None)
}

/// [`drive`], keeping in `last` the read of the task (and its sub-tasks, gates applied) that
/// found it complete: nothing is written after that read but `.state`, so the caller can
/// report from it instead of reading every folder again.
pub fn drive_keeping(
    run: &Run<'_>,
    rel: &str,
    explicit: bool,
    last: &mut Option<TaskTree>,
) -> super::Result<Outcome> {
    let dir = run.settings.project.join(rel);
    contained(&dir)?;
    // A sub-task named on the command line follows its parent's plan like any other: it may
    // not skip an unfinished or failed dependency, an earlier wave or an integration gate.
    let rules = super::wave_rules(run.cfg, run.isolation.is_some());
    if explicit && let Some(reason) = not_ready(run, rel, rules) {
        return stop_task(run, rel, &dir, StopKind::NotReady, reason);
    }
    #[cfg(debug_assertions)]
    panic_for_tests(rel);
    // What a killed run left behind is stopped and set aside before anything is decided.
    super::recover::recover(run, rel)?;
    if explicit {
        clear_stops(run, rel)?;
    }
    // `AUTOMATON_PORT`: held while this task is driven (its sub-tasks get their own).
    let _port = run.ports.acquire(rel);
    let first = load(run, rel);
    // A complete task without a worktree record (one `clean` removed, or one that ran without
    // isolation) needs no worktree: none is made for it.
    let finished = first
        .nodes
        .first()
        .is_some_and(|n| n.state() == crate::state::State::Complete)
        && crate::store::isolation::read(&dir).is_none();
    let ws = if finished {
        None
    } else {
        match workspace(run, rel, &dir)? {
            Ok(ws) => ws,
            Err((kind, reason)) => return stop_task(run, rel, &dir, kind, reason),
        }
    };
    let mut drive = Drive {
        run,
        rel,
        dir,
        ws: ws.as_ref(),
        iterations: 0,
        failed: None,
        fresh: None,
        merged_all: false,
    };
    for w in &first.warnings {
        run.progress.line(&format!("warning: {w}"));
    }
    drive.fresh = Some(first);
    loop {
        if let Some(outcome) = drive.turn(last)? {
            return Ok(outcome);
        }
    }
}

/// One task's drive in this run: what its turns share.
struct Drive<'r, 'a> {
    run: &'r Run<'a>,
    rel: &'r str,
    dir: PathBuf,
    ws: Option<&'r Workspace>,
    /// Phases run for this task in this run (the iteration cap counts them).
    iterations: u64,
    /// The phase whose attempts failed in this run, how many did, and the last one's error.
    failed: Option<Failures>,
    /// The folder as the last phase's validation read it: the next turn starts from it
    /// instead of reading again.
    fresh: Option<TaskTree>,
    /// With isolation: whether a complete parent's sub-tasks were checked to be merged.
    merged_all: bool,
}

impl Drive<'_, '_> {
    /// The task as it is now: the last phase's read, else a new one.
    fn read(&mut self) -> TaskTree {
        self.fresh
            .take()
            .unwrap_or_else(|| load(self.run, self.rel))
    }

    /// One turn: read the task, ask the planner, act. `Some(outcome)` when the drive ends.
    fn turn(&mut self, last: &mut Option<TaskTree>) -> super::Result<Option<Outcome>> {
        let (run, rel) = (self.run, self.rel);
        let tree = self.read();
        let Some(node) = tree.nodes.first() else {
            return Err(super::RunError::TaskGone(rel.to_string()));
        };
        let dir = &self.dir;
        let state = node.state();
        let facts = facts(run, dir, &tree, node, self.iterations);
        let action = next_action(&facts);
        // `.state` follows the artifacts, except a PASS not verified yet: it never says
        // complete before the verify command passed.
        if node.snap.state_file != Some(state) && !matches!(action, Action::Verify(_)) {
            write_state(dir, state)?;
        }
        // A complete decomposed task's merge-backs are walked once more before it counts as
        // complete, or waits at the merge gate.
        if matches!(
            action,
            Action::Complete | Action::AwaitApproval(Gate::Merge)
        ) && let Some(walked) = walk_merges_once(&mut self.merged_all, run, rel, self.ws, node)
        {
            return walked;
        }
        match action {
            Action::EndRun(StopKind::TotalTimeCap | StopKind::RunBudget)
            | Action::OverBudget(_)
            | Action::Frozen
            | Action::Stale
            | Action::AwaitApproval(_)
            | Action::IterationCap(_) => {
                let (kind, reason) = stop_reason(run, rel, dir, node, action);
                stop_task(run, rel, dir, kind, reason).map(Some)
            }
            Action::EndRun(kind) => Ok(Some(stopped(kind, "interrupted"))),
            Action::Verify(VerifyOf::Implementation) => {
                super::verify::verify_implementation(run, rel, dir, self.ws)
            }
            Action::Verify(VerifyOf::Pass) => super::verify::verify_pass(run, rel, dir, self.ws),
            Action::Complete => self.complete(tree, last),
            Action::Human(kind) => {
                let reason = node.decision.reason.as_deref().unwrap_or("needs a human");
                let reason = super::rework::with_history(run, dir, reason, facts.rework);
                run.progress.event(&Event::TaskStopped {
                    task: rel,
                    kind: kind.word(),
                    reason: &reason,
                });
                Ok(Some(stopped(kind, reason)))
            }
            Action::RunSubtasks => {
                let Some(Ok(plan)) = &node.snap.plan else {
                    unreachable!("the planner runs sub-tasks only under a valid plan")
                };
                sync_subtasks(run, rel, dir, plan, &node.decision)?;
                run_waves(run, rel, plan, self.ws)
            }
            Action::StepDone(phase) => {
                run.progress.event(&Event::StepDone {
                    task: rel,
                    next: phase.word(),
                });
                Ok(Some(Outcome::Stepped {
                    task: rel.to_string(),
                }))
            }
            Action::StepSubtask => step_subtask(run, rel, dir, &tree).map(Some),
            Action::Replan => {
                let note = replan_note(run, &over_budget(run, node));
                // Once: the mark is written first, so a run cut short does not send it back again.
                write_atomic(
                    &dir.join(crate::task::snapshot::SENT_BACK_FILE),
                    note.as_bytes(),
                )?;
                run.progress.event(&Event::PlanSentBack {
                    task: rel,
                    max_peak: run.max_peak,
                    rows: over_budget(run, node)
                        .iter()
                        .map(|r| r.name.as_str())
                        .collect(),
                });
                self.phase(node, Phase::Decomposition, Some(&note))
            }
            Action::RunChildren => run_children(run, &tree),
            Action::Rework => {
                let reason = node.decision.reason.as_deref().unwrap_or("");
                super::rework::start_for_verdict(run, rel, dir, self.ws, reason)?;
                Ok(None)
            }
            Action::RunPhase(phase) => {
                if frozen::needs_freezing(phase, node.snap.artifacts, node.snap.has_frozen) {
                    freeze(run, rel, dir, self.ws, Freeze::Missing)?;
                }
                self.phase(node, phase, None)
            }
        }
    }

    /// Run `phase` once and act on its end (go on, retry, or stop).
    fn phase(
        &mut self,
        node: &TaskNode,
        phase: Phase,
        note: Option<&str>,
    ) -> super::Result<Option<Outcome>> {
        let (run, rel, dir) = (self.run, self.rel, &self.dir);
        // A prompt over the engine's window would be cut silently: stop before the agent runs.
        if let Some(reason) = super::fit::overflow(run, rel, dir, phase) {
            return stop_task(run, rel, dir, StopKind::ContextTooSmall, reason).map(Some);
        }
        self.iterations += 1;
        let given = inputs_given(dir, node, phase);
        let end = one_phase(run, rel, dir, phase, self.ws, given, note)?;
        let attempt = Attempt {
            phase,
            iterations: self.iterations,
        };
        after_phase(
            run,
            rel,
            dir,
            attempt,
            end,
            &mut self.failed,
            &mut self.fresh,
        )
    }

    /// The planner says complete, and the merge-backs are walked.
    fn complete(
        &mut self,
        tree: TaskTree,
        last: &mut Option<TaskTree>,
    ) -> super::Result<Option<Outcome>> {
        self.run
            .progress
            .event(&Event::TaskComplete { task: self.rel });
        *last = Some(tree);
        Ok(Some(Outcome::Complete))
    }
}

/// A decomposed task is complete once its sub-tasks passed, but with isolation their work
/// reaches its branch only by merge-back and the integration gate: a run killed between a
/// sub-task's PASS and its merge left that undone, so the waves are walked once more
/// first. `None` once walked in this drive, or with nothing to walk.
fn walk_merges_once(
    merged_all: &mut bool,
    run: &Run<'_>,
    rel: &str,
    ws: Option<&Workspace>,
    node: &TaskNode,
) -> Option<super::Result<Option<Outcome>>> {
    let (Some(ws), Some(Ok(plan))) = (ws, &node.snap.plan) else {
        return None;
    };
    if *merged_all {
        return None;
    }
    *merged_all = true;
    Some(run_waves(run, rel, plan, Some(ws)))
}

/// Test builds only: `AUTOMATON_TEST_PANIC=<task>` panics when that task's drive starts, so
/// the tests can show that a panicking worker stops the run instead of hanging it.
#[cfg(debug_assertions)]
pub(super) fn panic_for_tests(rel: &str) {
    if std::env::var("AUTOMATON_TEST_PANIC").is_ok_and(|t| t == rel) {
        panic!("AUTOMATON_TEST_PANIC: {rel}");
    }
}

/// What the decomposition phase is told when its plan comes back (a sub-task
/// must fit the model's context).
pub(super) fn replan_note(run: &Run<'_>, rows: &[&SubtaskRow]) -> String {
    let mut note = format!(
        "## Sent back: sub-tasks over the context budget\n\n\
         The max peak context per sub-task is {} tokens. These rows of DECOMPOSITION.md \
         estimate more:\n\n| Sub-task | Wave | Estimated peak context |\n|---|---|---|\n",
        run.max_peak
    );
    for r in rows {
        note.push_str(&format!(
            "| {} | {} | {} tokens |\n",
            r.name,
            r.wave,
            r.estimate.unwrap_or(0)
        ));
    }
    note.push_str(
        "\nSplit each of them into smaller sub-tasks that fit the budget, in the same wave as \
         the original, and rewrite DECOMPOSITION.md. This happens once: a row still over the \
         budget after this phase only gets a warning.\n",
    );
    note
}

/// The hashes of the artifacts a phase is given (every earlier one present), as it starts.
pub(super) fn inputs_given(
    dir: &Path,
    node: &TaskNode,
    phase: Phase,
) -> crate::store::inputs::Hashes {
    let inputs: Vec<Artifact> = node
        .snap
        .artifacts
        .iter()
        .filter(|a| *a < phase.artifact())
        .collect();
    crate::task::gates::hashes_reusing(dir, &inputs, node.hashed.as_deref())
}
