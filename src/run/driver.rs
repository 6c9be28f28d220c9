//! The turn loop of one task: read it ([`super::observe`]), ask the planner ([`next_action`])
//! what comes next, do that, and repeat until the task is complete or needs a person. A
//! phase's end is judged in [`super::judge`]; the sub-tasks of a decomposed task are
//! scheduled in [`super::waves`]; a stop is said and recorded by [`super::stops`].

use super::event::Event;
use super::isolation::Workspace;
use super::judge::{Attempt, Failures, Freeze, after_phase, freeze, one_phase};
use super::observe::{facts, load, not_ready, over_budget};
use super::ports::PortLease;
use super::stops::{stop_reason, stop_task, stopped};
use super::subtasks::sync_subtasks;
use super::waves::{run_children, step_subtask};
use super::workspace::workspace;
use super::{Outcome, Run, StopKind};
use crate::artifact::decomposition::{Plan, SubtaskRow};
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

/// Drive one task until it is complete or needs a human, its sub-tasks included, under a
/// scheduler of its own ([`super::schedule`]): for `--step` and sub-tasks made by hand, which
/// their parent's worker drives inline, one at a time. `explicit`: the user named this task,
/// so a stop recorded by an earlier run is cleared and the task tried again.
pub fn drive(run: &Run<'_>, rel: &str, explicit: bool) -> super::Result<Outcome> {
    super::schedule::run_task(run, rel, explicit, &mut None)
}

/// Where a task's drive stands after its turns: ended, or waiting while the scheduler runs
/// the sub-tasks of its plan (with isolation, their merge-backs and integration gates too).
pub(super) enum Driven<'r, 'a> {
    /// With the read that found the task complete, when it did.
    Ended(Outcome, Option<TaskTree>),
    AwaitsWaves(Box<Drive<'r, 'a>>, Plan),
}

/// What one turn did: the drive goes on, ends, or waits for the sub-tasks of this plan.
enum Turn {
    Again,
    Done(Outcome),
    Waves(Plan),
}

impl From<Option<Outcome>> for Turn {
    fn from(end: Option<Outcome>) -> Turn {
        end.map_or(Turn::Again, Turn::Done)
    }
}

/// One task's drive in this run: what its turns share.
pub(super) struct Drive<'r, 'a> {
    run: &'r Run<'a>,
    pub(super) rel: String,
    dir: PathBuf,
    pub(super) ws: Option<Workspace>,
    /// `AUTOMATON_PORT`: held while this task is driven (its sub-tasks get their own).
    _port: Option<PortLease<'r>>,
    /// Phases run for this task in this run (the iteration cap counts them).
    iterations: u64,
    /// The phase whose attempts failed in this run, how many did, and the last one's error.
    failed: Option<Failures>,
    /// The folder as the last phase's validation read it: the next turn starts from it
    /// instead of reading again.
    fresh: Option<TaskTree>,
    /// With isolation: whether a complete parent's sub-tasks were checked to be merged.
    merged_all: bool,
    /// The read of the task (and its sub-tasks, gates applied) that found it complete:
    /// nothing is written after that read but `.state`, so the end of the run reports from
    /// it instead of reading every folder again.
    last: Option<TaskTree>,
}

impl<'r, 'a> Drive<'r, 'a> {
    /// Get a task ready to drive: its refusals, what a killed run left, its stops cleared
    /// when named, its port and its workspace. `Err(outcome)` when it ends before a turn.
    pub(super) fn start(
        run: &'r Run<'a>,
        rel: &str,
        explicit: bool,
    ) -> super::Result<Result<Drive<'r, 'a>, Outcome>> {
        let dir = run.settings.project.join(rel);
        contained(&dir)?;
        // A sub-task named on the command line follows its parent's plan like any other: it
        // may not skip an unfinished or failed dependency, an earlier wave or an integration
        // gate.
        let rules = super::wave_rules(run.cfg, run.isolation.is_some());
        if explicit && let Some(reason) = not_ready(run, rel, rules) {
            return stop_task(run, rel, &dir, StopKind::NotReady, reason).map(Err);
        }
        #[cfg(debug_assertions)]
        panic_for_tests(rel);
        // What a killed run left behind is stopped and set aside before anything is decided.
        super::recover::recover(run, rel)?;
        if explicit {
            clear_stops(run, rel)?;
        }
        let port = run.ports.acquire(rel);
        let first = load(run, rel);
        // A complete task without a worktree record (one `clean` removed, or one that ran
        // without isolation) needs no worktree: none is made for it.
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
                Err((kind, reason)) => return stop_task(run, rel, &dir, kind, reason).map(Err),
            }
        };
        for w in &first.warnings {
            run.progress.line(&format!("warning: {w}"));
        }
        Ok(Ok(Drive {
            run,
            rel: rel.to_string(),
            dir,
            ws,
            _port: port,
            iterations: 0,
            failed: None,
            fresh: Some(first),
            merged_all: false,
            last: None,
        }))
    }

    /// Take turns until the task ends or waits for its sub-tasks.
    pub(super) fn turns(mut self) -> super::Result<Driven<'r, 'a>> {
        loop {
            match self.turn()? {
                Turn::Again => {}
                Turn::Done(outcome) => return Ok(Driven::Ended(outcome, self.last.take())),
                Turn::Waves(plan) => return Ok(Driven::AwaitsWaves(Box::new(self), plan)),
            }
        }
    }

    /// Go on after the sub-tasks' waves ended: with their stop, or with more turns.
    pub(super) fn resume(
        self,
        waves: super::Result<Option<Outcome>>,
    ) -> super::Result<Driven<'r, 'a>> {
        match waves? {
            Some(outcome) => Ok(Driven::Ended(outcome, None)),
            None => self.turns(),
        }
    }
}

impl Drive<'_, '_> {
    /// The task as it is now: the last phase's read, else a new one.
    fn read(&mut self) -> TaskTree {
        self.fresh
            .take()
            .unwrap_or_else(|| load(self.run, &self.rel))
    }

    /// One turn: read the task, ask the planner, act.
    fn turn(&mut self) -> super::Result<Turn> {
        let run = self.run;
        let rel = &self.rel.clone();
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
        ) && let Some(plan) = walk_merges_once(&mut self.merged_all, self.ws.as_ref(), node)
        {
            return Ok(Turn::Waves(plan));
        }
        let ws = self.ws.as_ref();
        match action {
            Action::EndRun(StopKind::TotalTimeCap | StopKind::RunBudget)
            | Action::OverBudget(_)
            | Action::Frozen
            | Action::Stale
            | Action::AwaitApproval(_)
            | Action::IterationCap(_) => {
                let (kind, reason) = stop_reason(run, rel, dir, node, action);
                stop_task(run, rel, dir, kind, reason).map(Turn::Done)
            }
            Action::EndRun(kind) => Ok(Turn::Done(stopped(kind, "interrupted"))),
            Action::Verify(VerifyOf::Implementation) => {
                super::verify::verify_implementation(run, rel, dir, ws).map(Turn::from)
            }
            Action::Verify(VerifyOf::Pass) => {
                super::verify::verify_pass(run, rel, dir, ws).map(Turn::from)
            }
            Action::Complete => Ok(self.complete(tree)),
            Action::Human(kind) => {
                let reason = node.decision.reason.as_deref().unwrap_or("needs a human");
                let reason = super::rework::with_history(run, dir, reason, facts.rework);
                run.progress.event(&Event::TaskStopped {
                    task: rel,
                    kind: kind.word(),
                    reason: &reason,
                });
                Ok(Turn::Done(stopped(kind, reason)))
            }
            Action::RunSubtasks => {
                let Some(Ok(plan)) = &node.snap.plan else {
                    unreachable!("the planner runs sub-tasks only under a valid plan")
                };
                sync_subtasks(run, rel, dir, plan, &node.decision)?;
                Ok(Turn::Waves(plan.clone()))
            }
            Action::StepDone(phase) => {
                run.progress.event(&Event::StepDone {
                    task: rel,
                    next: phase.word(),
                });
                Ok(Turn::Done(Outcome::Stepped {
                    task: rel.to_string(),
                }))
            }
            Action::StepSubtask => step_subtask(run, rel, dir, &tree).map(Turn::Done),
            Action::Replan => self.replan(node).map(Turn::from),
            Action::RunChildren => run_children(run, &tree).map(Turn::from),
            Action::Rework => {
                let reason = node.decision.reason.as_deref().unwrap_or("");
                super::rework::start_for_verdict(run, rel, dir, ws, reason)?;
                Ok(Turn::Again)
            }
            Action::RunPhase(phase) => {
                if frozen::needs_freezing(phase, node.snap.artifacts, node.snap.has_frozen) {
                    freeze(run, rel, dir, ws, Freeze::Missing)?;
                }
                self.phase(node, phase, None).map(Turn::from)
            }
        }
    }

    /// Send the plan back to the decomposition phase, once: a sub-task is over the context
    /// budget.
    fn replan(&mut self, node: &TaskNode) -> super::Result<Option<Outcome>> {
        let run = self.run;
        let note = replan_note(run, &over_budget(run, node));
        // Once: the mark is written first, so a run cut short does not send it back again.
        write_atomic(
            &self.dir.join(crate::task::snapshot::SENT_BACK_FILE),
            note.as_bytes(),
        )?;
        run.progress.event(&Event::PlanSentBack {
            task: &self.rel,
            max_peak: run.max_peak,
            rows: over_budget(run, node)
                .iter()
                .map(|r| r.name.as_str())
                .collect(),
        });
        self.phase(node, Phase::Decomposition, Some(&note))
    }

    /// Run `phase` once and act on its end (go on, retry, or stop).
    fn phase(
        &mut self,
        node: &TaskNode,
        phase: Phase,
        note: Option<&str>,
    ) -> super::Result<Option<Outcome>> {
        let (run, rel, dir) = (self.run, self.rel.as_str(), &self.dir);
        // A prompt over the engine's window would be cut silently: stop before the agent runs.
        if let Some(reason) = super::fit::overflow(run, rel, dir, phase) {
            return stop_task(run, rel, dir, StopKind::ContextTooSmall, reason).map(Some);
        }
        self.iterations += 1;
        let given = inputs_given(dir, node, phase);
        let end = one_phase(run, rel, dir, phase, self.ws.as_ref(), given, note)?;
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
    fn complete(&mut self, tree: TaskTree) -> Turn {
        self.run
            .progress
            .event(&Event::TaskComplete { task: &self.rel });
        self.last = Some(tree);
        Turn::Done(Outcome::Complete)
    }
}

/// A decomposed task is complete once its sub-tasks passed, but with isolation their work
/// reaches its branch only by merge-back and the integration gate: a run killed between a
/// sub-task's PASS and its merge left that undone, so the waves are walked once more
/// first: the plan to walk, `None` once walked in this drive, or with nothing to walk.
fn walk_merges_once(
    merged_all: &mut bool,
    ws: Option<&Workspace>,
    node: &TaskNode,
) -> Option<Plan> {
    let (Some(_), Some(Ok(plan))) = (ws, &node.snap.plan) else {
        return None;
    };
    if *merged_all {
        return None;
    }
    *merged_all = true;
    Some(plan.clone())
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
