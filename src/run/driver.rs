//! The loop driver: determine the state, run the phase, validate the artifact, write `.state`,
//! repeat — and for a decomposed task, drive its sub-tasks in dependency waves in parallel.

use super::isolation::{Isolation, Workspace};
use super::phase::{run_phase_noted, run_verify};
use super::subtasks::{files_overlap, sync_subtasks};
use super::{Outcome, Run, StopKind};
use crate::artifact::decomposition::{Plan, SubtaskRow};
use crate::decide::{
    Action, ArtifactCheck, Facts, GiveUp, PhaseFacts, Retry, RetryFacts, Verify, judge_phase,
    next_action, retry,
};
use crate::fsx::write_atomic;
use crate::git::Merge;
use crate::settings::Key;
use crate::state::{Artifact, Phase, State};
use crate::store::task_files::{clear_stop, write_state, write_stop};
use crate::task::snapshot::content_hash;
use crate::task::{TaskNode, TaskTree, frozen};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

fn stopped(kind: StopKind, reason: impl Into<String>) -> Outcome {
    Outcome::Stopped {
        kind,
        reason: reason.into(),
    }
}

/// Record a stop in the task folder when it belongs to the task, and say so.
fn stop_task(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    kind: StopKind,
    reason: String,
) -> super::Result<Outcome> {
    if kind.is_recorded() {
        write_stop(dir, &reason)?;
    }
    run.progress.event(
        "task_stopped",
        || json!({"task": rel, "kind": kind.word(), "reason": reason}),
        || format!("✘ {rel}: {reason}"),
    );
    Ok(stopped(kind, reason))
}

/// Read a task folder and its sub-tasks, with the gates of `Approve before` applied.
fn load(run: &Run<'_>, rel: &str) -> TaskTree {
    gated(
        run,
        TaskTree::load_task(&run.settings.project, rel, &run.config),
    )
}

/// `tree` with the gates of `Approve before` applied.
fn gated(run: &Run<'_>, mut tree: TaskTree) -> TaskTree {
    tree.apply_gates(&crate::report::approval_gates(run.settings));
    tree
}

/// The file that records which VERDICT.md the verify command last passed for.
const VERIFIED_FILE: &str = "logs/verified";

/// The hash the verify command last passed for, if any.
fn verified_hash(dir: &Path) -> Option<String> {
    crate::fsx::read_to_string(dir.join(VERIFIED_FILE)).ok()
}

fn verdict_hash(dir: &Path) -> Option<String> {
    crate::fsx::read(dir.join(Artifact::Verdict.file_name()))
        .ok()
        .map(|b| content_hash(&b))
}

/// Clear the stops an earlier run recorded in a task and its sub-tasks, so that naming the
/// task retries what was stopped (a timeout, a stalled or failed agent...).
fn clear_stops(run: &Run<'_>, rel: &str) -> super::Result<()> {
    let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    for node in tree.nodes.iter().filter(|n| n.snap.stop.is_some()) {
        clear_stop(&node.dir)?;
        run.progress.event(
            "stop_cleared",
            || json!({"task": node.rel}),
            || {
                format!(
                    "↻ {}: retrying after: {}",
                    node.rel,
                    node.snap.stop.as_deref().unwrap_or("")
                )
            },
        );
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
    // What a killed run left behind is stopped and set aside before anything is decided.
    super::recover::recover(run, rel)?;
    if explicit {
        clear_stops(run, rel)?;
    }
    // `AUTOMATON_PORT`: held while this task is driven (its sub-tasks get their own).
    let _port = run.ports.acquire(rel);
    let ws = match workspace(run, rel, &dir)? {
        Ok(ws) => ws,
        Err((kind, reason)) => return stop_task(run, rel, &dir, kind, reason),
    };
    let ws = ws.as_ref();
    let mut iterations: u64 = 0;
    // The phase whose attempts failed in this run, and how many did.
    let mut failed: Option<(Phase, u32)> = None;
    let mut fresh: Option<TaskTree> = None;
    let mut warned = false;
    // With isolation: whether a complete parent's sub-tasks were checked to be merged.
    let mut merged_all = false;
    loop {
        // The folder as the last phase's validation read it, else read now.
        let tree = fresh.take().unwrap_or_else(|| load(run, rel));
        if !warned {
            for w in &tree.warnings {
                run.progress.line(&format!("warning: {w}"));
            }
            warned = true;
        }
        let Some(node) = tree.nodes.first() else {
            return Err(super::RunError::TaskGone(rel.to_string()));
        };
        let state = node.state();
        let action = next_action(&facts(run, &dir, &tree, node, iterations));
        // `.state` follows the artifacts, except a PASS not verified yet: it never says
        // complete before the verify command passed.
        if node.snap.state_file != Some(state) && action != Action::Verify {
            write_state(&dir, state)?;
        }
        match action {
            Action::EndRun(StopKind::TotalTimeCap | StopKind::RunBudget)
            | Action::OverBudget(_)
            | Action::Frozen
            | Action::Stale
            | Action::AwaitApproval(_)
            | Action::IterationCap(_) => {
                let (kind, reason) = stop_reason(run, rel, &dir, node, action);
                return stop_task(run, rel, &dir, kind, reason);
            }
            Action::EndRun(kind) => return Ok(stopped(kind, "interrupted")),
            Action::Verify => {
                if let Some(stop) = verify_pass(run, rel, &dir, ws)? {
                    return Ok(stop);
                }
            }
            Action::Complete => {
                // A decomposed task is complete once its sub-tasks passed, but with isolation
                // their work reaches its branch only by merge-back and the integration gate:
                // a run killed between a sub-task's PASS and its merge left that undone.
                if let (Some(pws), Some(Ok(plan)), false) = (ws, &node.snap.plan, merged_all) {
                    merged_all = true;
                    if let Some(stop) = run_waves(run, rel, plan, Some(pws))? {
                        return Ok(stop);
                    }
                    continue;
                }
                run.progress.event(
                    "task_complete",
                    || json!({"task": rel}),
                    || format!("✔ {rel}: complete"),
                );
                *last = Some(tree);
                return Ok(Outcome::Complete);
            }
            Action::Human(kind) => {
                let reason = node
                    .decision
                    .reason
                    .clone()
                    .unwrap_or_else(|| "needs a human".into());
                run.progress.event(
                    "task_stopped",
                    || json!({"task": rel, "kind": kind.word(), "reason": reason}),
                    || format!("✘ {rel}: {reason}"),
                );
                return Ok(stopped(kind, reason));
            }
            Action::RunSubtasks => {
                let Some(Ok(plan)) = &node.snap.plan else {
                    unreachable!("sub-tasks run only under a valid plan")
                };
                sync_subtasks(run, rel, &dir, plan, &node.decision)?;
                if let Some(stop) = run_waves(run, rel, plan, ws)? {
                    return Ok(stop);
                }
            }
            Action::StepDone(phase) => {
                run.progress.event(
                    "step_done",
                    || json!({"task": rel, "next": phase.word()}),
                    || format!("■ {rel}: one step done; {} is next", phase.word()),
                );
                return Ok(Outcome::Stepped {
                    task: rel.to_string(),
                });
            }
            Action::StepSubtask => return step_subtask(run, rel, &dir, &tree),
            Action::Replan => {
                let note = replan_note(run, &over_budget(run, node));
                // Once: the mark is written first, so a run cut short does not send it back again.
                write_atomic(&dir.join(REPLANNED_FILE), note.as_bytes())?;
                run.progress.event(
                    "plan_sent_back",
                    || json!({"task": rel, "max_peak": run.max_peak,
                           "rows": over_budget(run, node).iter().map(|r| &r.name).collect::<Vec<_>>()}),
                    || format!("↻ {rel}: sub-tasks over the context budget of {} tokens; the plan goes back to the decomposition phase once", run.max_peak),
                );
                iterations += 1;
                let given = inputs_given(&dir, node, Phase::Decomposition);
                let end = one_phase(run, rel, &dir, Phase::Decomposition, ws, given, Some(&note))?;
                let attempt = Attempt {
                    phase: Phase::Decomposition,
                    iterations,
                };
                if let Some(stop) =
                    after_phase(run, rel, &dir, attempt, end, &mut failed, &mut fresh)?
                {
                    return Ok(stop);
                }
            }
            Action::RunChildren => {
                if let Some(stop) = run_children(run, &tree)? {
                    return Ok(stop);
                }
            }
            Action::RunPhase(phase) => {
                if frozen::needs_freezing(phase, node.snap.artifacts, node.snap.has_frozen) {
                    freeze(run, rel, &dir, ws, Freeze::Missing)?;
                }
                iterations += 1;
                let given = inputs_given(&dir, node, phase);
                let end = one_phase(run, rel, &dir, phase, ws, given, None)?;
                let attempt = Attempt { phase, iterations };
                if let Some(stop) =
                    after_phase(run, rel, &dir, attempt, end, &mut failed, &mut fresh)?
                {
                    return Ok(stop);
                }
            }
        }
    }
}

/// What [`next_action`] decides from: the task as read, the caps, the clock.
fn facts(run: &Run<'_>, dir: &Path, tree: &TaskTree, node: &TaskNode, iterations: u64) -> Facts {
    let state = node.state();
    // Done is verified, not claimed: a PASS counts once the verify command passed for this
    // very VERDICT.md (so a retry after a failed verify verifies again).
    let verify = match (state, run.verify_command) {
        (_, None) => Verify::NotConfigured,
        (State::Complete, Some(_))
            if verdict_hash(dir).is_some_and(|h| Some(h) != verified_hash(dir)) =>
        {
            Verify::Pending
        }
        _ => Verify::Passed,
    };
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
            && !dir.join(REPLANNED_FILE).exists()
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
        task_over_budget: run.budgets.task_exceeded(dir, Default::default()).is_some(),
        run_over_budget: run.budgets.run_exceeded(Default::default()).is_some(),
        // The clock the caps run on: it stands still while automaton is stopped (Ctrl-Z).
        now: crate::process::signals::now_unpaused(),
        deadline: run.deadline,
    }
}

/// The stop and its reason for an action that stops the task (or the run) with a message.
fn stop_reason(
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
        Action::AwaitApproval(phase) => {
            let lapsed = node
                .approval
                .as_ref()
                .and_then(|w| w.lapsed.as_deref())
                .map(|why| format!(" (the approval lapsed: {why})"))
                .unwrap_or_default();
            (
                StopKind::AwaitingApproval,
                format!(
                    "{rel} waits for approval before {}{lapsed}; run `automaton approve {rel}` \
                     (or `automaton reject {rel} --reason ...`)",
                    phase.word()
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

/// Run the verify command on a PASS verdict; the stop when it fails. Until it passes the task
/// is not complete: a run cut short here (Ctrl-C, the total cap, kill -9) leaves it stopped,
/// never complete.
fn verify_pass(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
) -> super::Result<Option<Outcome>> {
    let (Some(cmd), Some(hash)) = (run.verify_command, verdict_hash(dir)) else {
        unreachable!("verification is pending only with a command and a verdict")
    };
    let pending = format!(
        "the PASS verdict is not verified yet (the verify command did not finish); \
         `orchestrate --task {rel}` verifies it again"
    );
    write_stop(dir, &pending)?;
    if let Some((kind, reason)) = run_verify(run, cmd, rel, dir, ws, "verify")? {
        let reason = format!("the referee said PASS, but {reason}");
        return stop_task(run, rel, dir, kind, reason).map(Some);
    }
    write_atomic(&dir.join(VERIFIED_FILE), hash.as_bytes())?;
    clear_stop(dir)?;
    write_state(dir, State::Complete)?;
    Ok(None)
}

/// The stop reason of a changed frozen acceptance file.
fn frozen_reason(rel: &str, what: &str) -> String {
    format!(
        "frozen acceptance files changed: {what}; they were frozen when test_design completed \
         (TEST_PLAN.md and its `## Acceptance tests`). Restore them, or accept the change with \
         `automaton approve {rel}`"
    )
}

/// How one phase run ended, before the retry decision.
enum PhaseEnd {
    /// It succeeded: the folder as read after it.
    Done(TaskTree),
    /// The attempt failed in a way a retry may mend (nothing recorded yet).
    Failed {
        kind: StopKind,
        reason: String,
        rate_limited: bool,
        attempt: u32,
    },
    /// The task (or the run) stops; already recorded and announced.
    Stop(Outcome),
}

/// Which phase ran, and the task's iteration count after it.
#[derive(Clone, Copy)]
struct Attempt {
    phase: Phase,
    iterations: u64,
}

/// Act on a phase's end: go on, retry it after the backoff ([`retry`] decides), or stop the
/// task with the last cause and the attempt count. `Some(outcome)` when the drive ends.
fn after_phase(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    at: Attempt,
    end: PhaseEnd,
    failed: &mut Option<(Phase, u32)>,
    fresh: &mut Option<TaskTree>,
) -> super::Result<Option<Outcome>> {
    let (kind, reason, rate_limited, attempt) = match end {
        PhaseEnd::Done(tree) => {
            *failed = None;
            *fresh = Some(tree);
            return Ok(None);
        }
        PhaseEnd::Stop(outcome) => return Ok(Some(outcome)),
        PhaseEnd::Failed {
            kind,
            reason,
            rate_limited,
            attempt,
        } => (kind, reason, rate_limited, attempt),
    };
    let failures = match *failed {
        Some((p, n)) if p == at.phase => n + 1,
        _ => 1,
    };
    *failed = Some((at.phase, failures));
    let decision = retry(&RetryFacts {
        kind,
        failures,
        retries: run.retries,
        rate_limited,
        backoff: run.retry_backoff,
        iterations: at.iterations,
        max_iterations: run.limits.iterations,
        step: run.step,
        // The clock the caps run on: it stands still while automaton is stopped (Ctrl-Z).
        now: crate::process::signals::now_unpaused(),
        deadline: run.deadline,
    });
    let attempts = |n: u32| format!("{n} attempt{}", if n == 1 { "" } else { "s" });
    let (kind, reason) = match decision {
        Retry::After(wait) => {
            let kept = set_aside_failed_artifact(run, rel, dir, at.phase, attempt)?;
            run.progress.event(
                "phase_retry",
                || json!({"task": rel, "phase": at.phase.word(), "attempt": attempt,
                       "failures": failures, "retries": run.retries, "kind": kind.word(),
                       "reason": reason, "rate_limited": rate_limited,
                       "backoff_seconds": wait.as_secs_f64(), "artifact_kept": kept}),
                || {
                    format!(
                        "↻ {rel}: {} failed (attempt {attempt}: {reason}); {}retry {failures} of {} in {}",
                        at.phase.word(),
                        if rate_limited { "rate-limited: " } else { "" },
                        run.retries,
                        super::agent::human_duration(wait)
                    )
                },
            );
            // Ctrl-C or the deadline ends the wait; the next turn's decision sees them.
            super::retry::backoff(wait, run.deadline, run.cancel);
            return Ok(None);
        }
        Retry::GiveUp(GiveUp::NotRetryable) => (kind, reason),
        Retry::GiveUp(GiveUp::Exhausted) if run.retries == 0 => (kind, reason),
        Retry::GiveUp(GiveUp::Exhausted) => (
            kind,
            format!(
                "{reason}; gave up after {} of {} (`- **Retries**: {}`)",
                attempts(failures),
                at.phase.word(),
                run.retries
            ),
        ),
        Retry::GiveUp(GiveUp::IterationCap) => (
            StopKind::IterationCap,
            format!(
                "iteration cap reached ({} phases in this run) after {} of {} failed: {reason}",
                run.limits.iterations,
                attempts(failures),
                at.phase.word()
            ),
        ),
        Retry::GiveUp(GiveUp::Deadline) => (
            StopKind::TotalTimeCap,
            format!(
                "total time cap of {} would pass during the backoff before retrying {}: {reason}",
                super::agent::human_duration(run.limits.total),
                at.phase.word()
            ),
        ),
    };
    stop_task(run, rel, dir, kind, reason).map(Some)
}

/// Before a retry: move what the failed attempt left of its artifact (partial, malformed,
/// written by an agent that then failed) to `logs/failed/<NAME>-<attempt>.md`, so that the
/// next attempt starts clean and nothing is lost. A copy a fix task started with stays.
fn set_aside_failed_artifact(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
    attempt: u32,
) -> super::Result<Option<String>> {
    let artifact = phase.artifact();
    let name = artifact.file_name();
    let src = dir.join(name);
    if !src.exists() {
        return Ok(None);
    }
    let tree = load(run, rel);
    if let Some(node) = tree.nodes.first()
        && artifact_check(&node.snap, dir, artifact) == ArtifactCheck::Inherited
    {
        return Ok(None);
    }
    let failed_dir = dir.join("logs/failed");
    std::fs::create_dir_all(&failed_dir)?;
    let stem = name.trim_end_matches(".md");
    let kept = (0..)
        .map(|i| match i {
            0 => format!("{stem}-{attempt}.md"),
            i => format!("{stem}-{attempt}.{i}.md"),
        })
        .find(|n| !failed_dir.join(n).exists())
        .unwrap_or_else(|| format!("{stem}-{attempt}.md"));
    std::fs::rename(&src, failed_dir.join(&kept))?;
    crate::store::inputs::forget(dir, &[name])?;
    Ok(Some(format!("logs/failed/{kept}")))
}

/// Marks (in the task folder) that the plan was sent back for its over-budget rows once.
const REPLANNED_FILE: &str = "logs/plan-sent-back.md";

/// The rows of a task's plan whose estimate exceeds the max peak context.
fn over_budget<'n>(run: &Run<'_>, node: &'n TaskNode) -> Vec<&'n SubtaskRow> {
    match &node.snap.plan {
        Some(Ok(plan)) => plan
            .rows
            .iter()
            .filter(|r| r.estimate.is_some_and(|e| e > run.max_peak))
            .collect(),
        _ => Vec::new(),
    }
}

/// What the decomposition phase is told when its plan comes back (seed 000, "VRAM-Aware
/// Sub-Task Splitting").
fn replan_note(run: &Run<'_>, rows: &[&SubtaskRow]) -> String {
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

/// `--step` on a task whose sub-tasks run next: make the planned folders, then run one phase
/// of the first sub-task that may run (by wave, then name; hand-made ones by name).
fn step_subtask(run: &Run<'_>, rel: &str, dir: &Path, tree: &TaskTree) -> super::Result<Outcome> {
    let Some(node) = tree.nodes.first() else {
        return Err(super::RunError::TaskGone(rel.to_string()));
    };
    let next = match &node.snap.plan {
        Some(Ok(plan)) => {
            sync_subtasks(run, rel, dir, plan, &node.decision)?;
            let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
            ready_rows(run, rel, plan, &tree, &[])
                .first()
                .map(|name| format!("{rel}/subtasks/{name}"))
        }
        _ => node
            .children
            .iter()
            .map(|c| &tree.nodes[*c])
            .find(|c| !c.state().is_terminal())
            .map(|c| c.rel.clone()),
    };
    let Some(child) = next else {
        let reason = format!("no sub-task of {rel} can run now (each waits on another)");
        return Ok(stopped(StopKind::NeedsHuman, reason));
    };
    Ok(match drive(run, &child, false)? {
        // The parent goes on after this sub-task: the step is done either way.
        Outcome::Complete => Outcome::Stepped { task: child },
        other => other,
    })
}

/// Drive the non-terminal sub-tasks made by hand (a task without DECOMPOSITION.md), one after
/// another. Returns a stop when one needs a human or the run must end.
fn run_children(run: &Run<'_>, tree: &TaskTree) -> super::Result<Option<Outcome>> {
    let Some(node) = tree.nodes.first() else {
        return Ok(None);
    };
    for c in &node.children {
        let child = &tree.nodes[*c];
        if child.state().is_terminal() {
            continue;
        }
        run.progress.event(
            "subtask_started",
            || json!({"task": child.rel, "parent": node.rel, "wave": null}),
            || {
                format!(
                    "▶ {}: sub-task started (made by hand, not in a plan)",
                    child.rel
                )
            },
        );
        match drive(run, &child.rel, false)? {
            Outcome::Complete => {}
            other => return Ok(Some(other)),
        }
    }
    Ok(None)
}

/// Run one phase and judge what it left: `Ok(tree)` (the folder as read after the phase)
/// to go on, `Err(outcome)` when the task must stop.
fn one_phase(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
    ws: Option<&Workspace>,
    given: crate::store::inputs::Hashes,
    note: Option<&str>,
) -> super::Result<PhaseEnd> {
    let guarded = phase.artifact() > Artifact::TestPlan;
    let frozen_before = guarded.then(|| frozen::before_phase(dir)).flatten();
    let pr = run_phase_noted(run, phase, rel, dir, ws, note)?;
    // What the phase was given (hashed as it was given): an input edited later makes the
    // artifact stale. Recorded before the folder is read again, which judges staleness.
    if dir.join(phase.artifact().file_name()).exists() {
        crate::store::inputs::record(dir, phase.artifact().file_name(), given)?;
    }
    let o = &pr.outcome;
    let log_rel = format!("{rel}/logs/{}-{}.log", phase.word(), pr.attempt);
    let end = o
        .end
        .describe_with(Some(run.limits.phase), Some(run.limits.stall));
    let rep = &pr.report;
    run.progress.event(
        "phase_finished",
        || {
            json!({
                "task": rel, "phase": phase.word(), "attempt": pr.attempt,
                "seconds": o.duration.as_secs_f64(), "end": end,
                "contract_met": o.contract_met, "log": pr.log,
                "agent": run.adapter.name(), "ok": rep.ok, "error": rep.error,
                "session_id": rep.session_id, "model": rep.model,
                "input_tokens": rep.input_tokens, "output_tokens": rep.output_tokens,
                "cost_usd": rep.cost_usd,
            })
        },
        || match &o.end {
            super::agent::AgentEnd::Exited(s) if s.success() || o.contract_met => String::new(),
            _ => format!(
                "  {rel}: {} ended after {:.1}s ({end})",
                phase.word(),
                o.duration.as_secs_f64()
            ),
        },
    );
    // A frozen acceptance file changed by a phase after test_design: stop at once. The
    // record itself removed or garbled by the phase is put back first, so it judges.
    if guarded {
        if let Some(what) = frozen::restore(dir, frozen_before.as_ref())? {
            run.progress.event(
                "frozen_restored",
                || json!({"task": rel, "phase": phase.word(), "attempt": pr.attempt, "what": what}),
                || {
                    format!(
                        "⚠ {rel}: the {} phase {what} .state.frozen; put back",
                        phase.word()
                    )
                },
            );
        }
        let changed = frozen::changed(dir);
        if !changed.is_empty() {
            frozen::record_changes(dir, &changed, phase.word(), Some(pr.attempt))?;
            let what = frozen::summary(dir).unwrap_or_else(|| changed.join(", "));
            let reason = frozen_reason(rel, &what);
            return stop_task(run, rel, dir, StopKind::Frozen, reason).map(PhaseEnd::Stop);
        }
    }
    if let Some((kind, what)) = pr.budget_stop.clone() {
        let reason = format!(
            "{what}, while {} ran (its agent was stopped; see {log_rel})",
            phase.word()
        );
        return stop_task(run, rel, dir, kind, reason).map(PhaseEnd::Stop);
    }
    // The run that wrote the artifact is judged on it, marker or not.
    if !dir.is_dir() {
        return Err(super::RunError::TaskGone(rel.to_string()));
    }
    let mut read_warnings = Vec::new();
    let mut judged_snap =
        crate::task::snapshot::read_snapshot_unmarked(dir, rel, &mut read_warnings);
    let judged = judge_phase(&PhaseFacts {
        phase,
        end: super::end_of(&o.end),
        end_text: &end,
        contract_met: o.contract_met,
        stopped_after_contract: o.stopped_after_contract,
        agent_ok: rep.ok,
        agent_error: rep.error.as_deref(),
        artifact: artifact_check(&judged_snap, dir, phase.artifact()),
        log: &log_rel,
    });
    // What the agent wrote counts only once the run was judged a success; after a failure (a
    // timeout, a crash mid-write, a malformed file) the marker stays, and the next run sets the
    // artifact aside under logs/incomplete/ and runs the phase again.
    if let Err((kind, reason)) = judged {
        return Ok(PhaseEnd::Failed {
            kind,
            reason,
            rate_limited: rep.rate_limited,
            attempt: pr.attempt,
        });
    }
    if judged_snap.incomplete.take().is_some() {
        crate::store::task_files::clear_incomplete(dir)?;
    }
    // Unmarked, the folder read for the judge is what a read now would give: reused.
    let mut tree = gated(
        run,
        TaskTree::load_task_given(
            &run.settings.project,
            rel,
            &run.config,
            judged_snap,
            read_warnings,
        ),
    );
    if tree.nodes.is_empty() {
        return Err(super::RunError::TaskGone(rel.to_string()));
    }
    // Nothing an agent did exists only as uncommitted files.
    if let (Some(iso), Some(ws)) = (run.isolation, ws) {
        match iso.commit_phase(ws, rel, phase.word()) {
            Ok(Some(commit)) => run.progress.event(
                "committed",
                || json!({"task": rel, "phase": phase.word(), "branch": ws.branch, "commit": commit}),
                String::new,
            ),
            Ok(None) => {}
            Err(e) => {
                let reason = format!("cannot commit the {} phase's work: {e}", phase.word());
                return stop_task(run, rel, dir, StopKind::Isolation, reason).map(PhaseEnd::Stop);
            }
        }
    }
    if rep.ok.is_none()
        && let Some(why) = &rep.error
    {
        run.progress
            .line(&format!("warning: {rel}: {}: {why}", phase.word()));
    }
    let artifact = phase.artifact();
    run.progress.event(
        "artifact_validated",
        || json!({"task": rel, "phase": phase.word(), "artifact": artifact.file_name()}),
        || {
            format!(
                "✔ {rel}: {} → {} ({:.1}s{})",
                phase.word(),
                artifact.file_name(),
                o.duration.as_secs_f64(),
                usage_note(rep)
            )
        },
    );
    // The verify command also runs after implement, to stop early; a PASS is checked again
    // when the task reaches complete (see `drive`).
    if phase == Phase::Implement
        && let Some(cmd) = run.verify_command
    {
        if let Some((kind, reason)) = run_verify(run, cmd, rel, dir, ws, "verify")? {
            return stop_task(run, rel, dir, kind, reason).map(PhaseEnd::Stop);
        }
        // It ran in the task's workspace and may have touched the task: read it again.
        tree = load(run, rel);
    }
    // Seed 003: the acceptance oracle is frozen once test_design wrote it.
    if phase == Phase::TestDesign {
        freeze(run, rel, dir, ws, Freeze::AfterTestDesign)?;
        if let Some(node) = tree.nodes.first_mut() {
            node.snap.has_frozen = true;
        }
    }
    Ok(PhaseEnd::Done(tree))
}

/// Why the acceptance oracle is frozen.
#[derive(Clone, Copy)]
enum Freeze {
    AfterTestDesign,
    /// Before a later phase: no `.state.frozen` was there (a power cut took it before its
    /// fsync, `approve` set an unreadable one aside, or TEST_PLAN.md was written by hand).
    Missing,
}

/// Freeze the task's acceptance oracle (TEST_PLAN.md and its acceptance files, relative to
/// the agent's working directory) and say so.
fn freeze(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    why: Freeze,
) -> super::Result<()> {
    let root = ws.map_or(run.settings.project.as_path(), |w| w.cwd.as_path());
    let files = frozen::freeze(dir, root)?;
    let (reason, note) = match why {
        Freeze::AfterTestDesign => ("test_design", ""),
        Freeze::Missing => ("missing", " (no .state.frozen was there)"),
    };
    run.progress.event(
        "frozen",
        || json!({"task": rel, "files": files, "root": root, "reason": reason}),
        || {
            format!(
                "❄ {rel}: froze TEST_PLAN.md{}{note}",
                if files.is_empty() {
                    String::new()
                } else {
                    format!(" and {}", files.join(", "))
                }
            )
        },
    );
    Ok(())
}

/// The hashes of the artifacts a phase is given (every earlier one present), as it starts.
fn inputs_given(dir: &Path, node: &TaskNode, phase: Phase) -> crate::store::inputs::Hashes {
    let inputs: Vec<Artifact> = node
        .snap
        .artifacts
        .iter()
        .filter(|a| *a < phase.artifact())
        .collect();
    crate::task::gates::hashes_reusing(dir, &inputs, node.hashed.as_deref())
}

/// The parent of a sub-task's path (`a/subtasks/b` → `a`).
fn parent_of(rel: &str) -> Option<&str> {
    rel.rsplit_once("/subtasks/").map(|(parent, _)| parent)
}

/// The task's workspace when isolation is on (made on first use, then set up once: the
/// `.worktreeinclude` files copied in and the setup command run); the stop when it cannot be
/// made or set up.
fn workspace(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
) -> super::Result<Result<Option<Workspace>, (StopKind, String)>> {
    let Some(iso) = run.isolation else {
        return Ok(Ok(None));
    };
    let ws = match iso.prepare(rel, dir, parent_of(rel)) {
        Ok(ws) => ws,
        Err(e) => {
            let reason = format!("cannot make the task's worktree: {e}");
            return Ok(Err((StopKind::Isolation, reason)));
        }
    };
    run.progress.event(
        "workspace",
        || json!({"task": rel, "branch": ws.branch, "worktree": ws.worktree}),
        String::new,
    );
    let setup_failed = |e: &dyn std::fmt::Display| {
        Err((
            StopKind::Isolation,
            format!("cannot set up the worktree {}: {e}", ws.worktree.display()),
        ))
    };
    match iso.needs_setup(&ws) {
        Ok(false) => return Ok(Ok(Some(ws))),
        Ok(true) => {}
        Err(e) => return Ok(setup_failed(&e)),
    }
    match iso.copy_included(&ws) {
        Ok(files) if !files.is_empty() => run.progress.event(
            "worktree_include",
            || json!({"task": rel, "worktree": ws.worktree, "files": files}),
            || {
                format!(
                    "  {rel}: copied {} file{} listed in .worktreeinclude into its worktree",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" }
                )
            },
        ),
        Ok(_) => {}
        Err(e) => return Ok(setup_failed(&e)),
    }
    if let Some(cmd) = run.settings.text(Key::SetupCommand)
        && let Some((kind, reason)) = super::phase::run_setup(run, cmd, rel, dir, &ws)?
    {
        let reason = if kind == StopKind::Isolation {
            format!(
                "the worktree {} could not be set up: {reason}",
                ws.worktree.display()
            )
        } else {
            reason
        };
        return Ok(Err((kind, reason)));
    }
    if let Err(e) = iso.mark_set_up(&ws) {
        return Ok(setup_failed(&e));
    }
    Ok(Ok(Some(ws)))
}

/// What the task folder holds of a phase's artifact.
fn artifact_check(
    snap: &crate::task::snapshot::Snapshot,
    dir: &Path,
    artifact: Artifact,
) -> ArtifactCheck {
    let name = artifact.file_name();
    if !snap.artifacts.contains(artifact) {
        return if !dir.join(name).exists() {
            ArtifactCheck::Missing
        } else if snap
            .origin
            .as_ref()
            .is_some_and(|or| or.inherited.contains_key(name))
        {
            ArtifactCheck::Inherited
        } else {
            ArtifactCheck::Empty
        };
    }
    let malformed = match artifact {
        Artifact::Verdict => snap.verdict.as_ref().and_then(|v| v.verdict.clone().err()),
        Artifact::Decomposition => match &snap.plan {
            Some(Err(e)) => Some(e.to_string()),
            _ => None,
        },
        _ => None,
    };
    malformed.map_or(ArtifactCheck::Valid, ArtifactCheck::Malformed)
}

/// ", 1,234 tokens, $0.0123" for a phase whose agent reported usage; empty otherwise.
fn usage_note(rep: &super::adapter::PhaseReport) -> String {
    let mut s = String::new();
    if let Some(t) = rep.tokens() {
        s.push_str(&format!(", {} tokens", crate::units::thousands(t)));
    }
    if let Some(c) = rep.cost_usd {
        s.push_str(&format!(", ${c:.4}"));
    }
    s
}

/// The sub-tasks of a plan that may start now, wave by wave: not terminal, not running, not
/// blocked, every dependency terminal, and no `Files` overlap with one running.
fn ready_rows(
    run: &Run<'_>,
    parent_rel: &str,
    plan: &Plan,
    tree: &TaskTree,
    running: &[String],
) -> Vec<String> {
    let state_of = |name: &str| {
        tree.find(&format!("{parent_rel}/subtasks/{name}"))
            .map(|i| tree.nodes[i].state())
    };
    let blocked = tree
        .nodes
        .first()
        .map(|n| n.decision.blocked.clone())
        .unwrap_or_default();
    let is_blocked = |name: &str| blocked.iter().any(|(b, _)| b == name);
    // Seed 001: no sub-task of a wave starts before every sub-task of the earlier waves is
    // complete or blocked (`- **Wave barrier**: dependencies` only waits for its own).
    let strict = run.settings.text(Key::WaveBarrier) != Some("dependencies");
    let earlier_done =
        |wave: u32| {
            !strict
                || plan.rows.iter().filter(|r| r.wave < wave).all(|r| {
                    is_blocked(&r.name) || state_of(&r.name).is_some_and(State::is_terminal)
                })
        };
    let mut rows: Vec<_> = plan.rows.iter().collect();
    rows.sort_by_key(|r| r.wave);
    rows.into_iter()
        .filter(|row| {
            earlier_done(row.wave)
                && !running.contains(&row.name)
                && state_of(&row.name).is_some_and(|s| !s.is_terminal())
                && !blocked.iter().any(|(b, _)| *b == row.name)
                && row
                    .depends_on
                    .iter()
                    .all(|d| state_of(d).is_some_and(State::is_terminal))
                && !running.iter().any(|r| {
                    plan.row(r)
                        .is_some_and(|other| files_overlap(&row.files, &other.files))
                })
        })
        .map(|row| row.name.clone())
        .collect()
}

/// Drive the sub-tasks of a decomposed task: each one whose dependencies are all terminal runs,
/// up to `jobs` at once, never two whose `Files` overlap. A sub-task that fails blocks only its
/// dependents. A sub-task that waits for a person without being terminal (a gate, stale
/// artifacts) is not driven again in this run; its siblings go on, and once they are done the
/// parent stops with that wait. Returns a stop when the whole run must end (Ctrl-C, total time
/// cap), when a sub-task waits, or when the parent must (a merge-back conflict, a failed
/// integration gate).
///
/// With isolation, every passed sub-task is merged into the parent's integration branch before
/// anything is scheduled, and after each wave's merges the verify command runs in the
/// integration worktree: a later wave starts only once that gate passed.
fn run_waves(
    run: &Run<'_>,
    parent_rel: &str,
    plan: &Plan,
    parent_ws: Option<&Workspace>,
) -> super::Result<Option<Outcome>> {
    let parent_dir = run.settings.project.join(parent_rel);
    let integration = run.isolation.zip(parent_ws);
    let parallel = plan
        .rows
        .iter()
        .any(|r| plan.rows.iter().filter(|o| o.wave == r.wave).count() > 1);
    if integration.is_none() && parallel && run.limits.jobs > 1 {
        run.progress.line(&format!(
            "warning: {parent_rel}: isolation is none: parallel sub-tasks share the project's working tree"
        ));
    }
    // VRAM admission (local, tmux): a sub-task that could never fit, even alone, is refused
    // before the first wave starts, with the numbers.
    if let Some(gate) = &run.vram
        && matches!(run.executor.name(), "local" | "tmux")
    {
        let refused: Vec<String> = plan
            .rows
            .iter()
            .filter_map(|r| {
                let need = r.estimate?.saturating_mul(gate.kv_per_token);
                gate.check(&format!("{parent_rel}/subtasks/{}", r.name), need)
                    .err()
            })
            .collect();
        if !refused.is_empty() {
            return Err(std::io::Error::other(format!(
                "refused before the first wave started: {}",
                refused.join("; ")
            ))
            .into());
        }
    }
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(String, super::Result<Outcome>)>();
        let mut running: Vec<String> = Vec::new();
        let mut run_stop: Option<Outcome> = None;
        // The parent's own stop, raised once what runs has finished.
        let mut parent_stop: Option<(StopKind, String)> = None;
        let mut merged: Vec<String> = Vec::new();
        let mut gated: Vec<u32> = Vec::new();
        // Sub-tasks that stopped to wait for a person: (name, kind, reason).
        let mut held: Vec<(String, StopKind, String)> = Vec::new();
        // Sub-tasks whose drive ended on an error: never started again in this run.
        let mut errored: Vec<String> = Vec::new();
        // The siblings' states, read once here; after that only the sub-task that just
        // finished is read again (a sub-task about to start is read afresh by its own drive).
        let project = &run.settings.project;
        let mut tree = TaskTree::load_states(project, parent_rel, &run.config);
        loop {
            let stopping = run_stop.is_some()
                || parent_stop.is_some()
                || run.cancel.load(std::sync::atomic::Ordering::SeqCst);
            if !stopping {
                let state_of = |name: &str| {
                    tree.find(&format!("{parent_rel}/subtasks/{name}"))
                        .map(|i| tree.nodes[i].state())
                };
                if let Some((iso, pws)) = integration {
                    for row in &plan.rows {
                        if state_of(&row.name) != Some(State::Complete)
                            || merged.contains(&row.name)
                        {
                            continue;
                        }
                        let sub_rel = format!("{parent_rel}/subtasks/{}", row.name);
                        match merge_subtask(run, iso, &sub_rel, pws) {
                            Ok(()) => merged.push(row.name.clone()),
                            Err(reason) => {
                                parent_stop = Some((StopKind::Isolation, reason));
                                break;
                            }
                        }
                    }
                    if parent_stop.is_none()
                        && let Some(cmd) = run.verify_command
                    {
                        parent_stop = integration_gates(
                            run,
                            cmd,
                            parent_rel,
                            &parent_dir,
                            pws,
                            plan,
                            &state_of,
                            &mut gated,
                        )?;
                    }
                }
                let gate_open = |wave: u32| {
                    integration.is_none()
                        || run.verify_command.is_none()
                        || plan
                            .rows
                            .iter()
                            .filter(|r| r.wave < wave)
                            .all(|r| gated.contains(&r.wave))
                };
                for name in ready_rows(run, parent_rel, plan, &tree, &running) {
                    if running.len() >= run.limits.jobs || parent_stop.is_some() {
                        break;
                    }
                    let Some(row) = plan.row(&name) else { continue };
                    // Two ready rows may overlap each other: check against those started now.
                    // A held sub-task waits for a person; a later wave waits for its gate.
                    if held.iter().any(|(h, _, _)| *h == row.name)
                        || errored.contains(&row.name)
                        || !gate_open(row.wave)
                        || running.iter().any(|r| {
                            plan.row(r)
                                .is_some_and(|other| files_overlap(&row.files, &other.files))
                        })
                    {
                        continue;
                    }
                    running.push(row.name.clone());
                    let tx = tx.clone();
                    let name = row.name.clone();
                    let child_rel = format!("{parent_rel}/subtasks/{name}");
                    run.progress.event(
                        "subtask_started",
                        || json!({"task": child_rel, "parent": parent_rel, "wave": row.wave}),
                        || format!("▶ {child_rel}: wave {} sub-task started", row.wave),
                    );
                    scope.spawn(move || {
                        let out = drive(run, &child_rel, false);
                        let _ = tx.send((name, out));
                    });
                }
            }
            if running.is_empty() {
                break;
            }
            let Ok((name, out)) = rx.recv() else { break };
            running.retain(|r| *r != name);
            let child_rel = format!("{parent_rel}/subtasks/{name}");
            match out {
                Ok(Outcome::Stopped { kind, reason }) if !kind.is_task_stop() => {
                    run_stop.get_or_insert(stopped(kind, reason));
                }
                Ok(Outcome::Stopped { kind, reason }) if !kind.is_recorded() => {
                    if kind == StopKind::AwaitingApproval {
                        // A person is needed now, while the siblings go on.
                        let command = format!("automaton approve {child_rel}");
                        let state = load(run, &child_rel)
                            .nodes
                            .first()
                            .map_or("?", |n| n.state().word());
                        super::notify::send(
                            run.settings,
                            run.progress,
                            &super::notify::Notice {
                                event: "awaiting_approval",
                                task: &child_rel,
                                state,
                                kind: Some(kind.word()),
                                reason: Some(&reason),
                                exit_code: kind.code(),
                                command: Some(&command),
                            },
                        );
                    }
                    held.push((name, kind, reason));
                }
                Ok(_) => {}
                Err(e) => {
                    errored.push(name.clone());
                    let dir = project.join(&child_rel);
                    let reason = format!("error: {e:#}");
                    run.progress.line(&format!("✘ {child_rel}: {reason}"));
                    // Stopped for a person: recorded in its `.stop` when the folder can be
                    // written, and in any case never started again in this run (a folder
                    // that cannot be written would otherwise be retried at once, forever).
                    if let Err(w) = write_stop(&dir, &reason) {
                        let reason = format!(
                            "{child_rel} stopped on an error ({reason}), and \
                             its stop could not be recorded either: {w}"
                        );
                        held.push((name, StopKind::NeedsHuman, reason));
                    }
                }
            }
            // Read once its end is recorded (an error's `.stop` included).
            if !tree.reload(project, &child_rel, &run.config, false) {
                tree = TaskTree::load_states(project, parent_rel, &run.config);
            }
        }
        if run_stop.is_none()
            && let Some((kind, reason)) = parent_stop
        {
            return stop_task(run, parent_rel, &parent_dir, kind, reason).map(Some);
        }
        if run_stop.is_none() {
            // A wait for approval before staleness: it is the one a person can act on now.
            held.sort_by_key(|(_, kind, _)| *kind != StopKind::AwaitingApproval);
            if let Some((_, kind, reason)) = held.first() {
                let more = match held.len() {
                    1 => String::new(),
                    n => format!(
                        " ({} more sub-tasks wait too; `automaton status` lists them)",
                        n - 1
                    ),
                };
                run_stop = Some(stopped(*kind, format!("{reason}{more}")));
            }
        }
        Ok(run_stop)
    })
}

/// Merge a passed sub-task's branch into the integration branch; the reason when it cannot be
/// (a conflict names the sub-task and every conflicting file; the integration branch is left
/// as it was and the sub-task's branch keeps its commits).
fn merge_subtask(
    run: &Run<'_>,
    iso: &Isolation,
    sub_rel: &str,
    parent: &Workspace,
) -> Result<(), String> {
    let sub_dir = run.settings.project.join(sub_rel);
    // A sub-task that passed before isolation was on has no branch: nothing to merge.
    let Some(record) = crate::store::isolation::read(&sub_dir) else {
        return Ok(());
    };
    let sub = Workspace {
        cwd: PathBuf::from(&record.worktree),
        worktree: PathBuf::from(&record.worktree),
        branch: record.branch,
    };
    match iso.merge_back(&sub, parent) {
        Ok(Merge::Conflict(files)) => Err(format!(
            "merging {sub_rel} ({}) into {} conflicts in {}; resolve it by merging {} into {} \
             (its worktree is {}), then run `orchestrate --task {}` again",
            sub.branch,
            parent.branch,
            files.join(", "),
            sub.branch,
            parent.branch,
            parent.worktree.display(),
            parent_of(sub_rel).unwrap_or(sub_rel),
        )),
        Ok(how) => {
            if how != Merge::UpToDate {
                run.progress.event(
                    "merged",
                    || json!({"task": sub_rel, "branch": sub.branch, "into": parent.branch}),
                    || format!("⇢ {sub_rel}: merged {} into {}", sub.branch, parent.branch),
                );
            }
            Ok(())
        }
        Err(e) => Err(format!("cannot merge {sub_rel} back: {e}")),
    }
}

/// Run the integration gate of every wave whose sub-tasks are all terminal (and merged) and
/// that has not passed yet, lowest first. A pass is recorded with the integration branch's tip
/// in `logs/integration-<wave>.passed`, so a rerun does not repeat it for the same code.
#[allow(clippy::too_many_arguments)]
fn integration_gates(
    run: &Run<'_>,
    cmd: &str,
    parent_rel: &str,
    parent_dir: &Path,
    parent: &Workspace,
    plan: &Plan,
    state_of: &dyn Fn(&str) -> Option<State>,
    gated: &mut Vec<u32>,
) -> super::Result<Option<(StopKind, String)>> {
    let mut waves: Vec<u32> = plan.rows.iter().map(|r| r.wave).collect();
    waves.sort_unstable();
    waves.dedup();
    for wave in waves {
        if gated.contains(&wave) {
            continue;
        }
        let done = plan
            .rows
            .iter()
            .filter(|r| r.wave <= wave)
            .all(|r| state_of(&r.name).is_some_and(State::is_terminal));
        if !done {
            return Ok(None);
        }
        let tip = run
            .isolation
            .and_then(|iso| iso.repo.branch_tip(&parent.branch))
            .unwrap_or_default();
        let record = parent_dir.join(format!("logs/integration-{wave}.passed"));
        if crate::fsx::read_to_string(&record).is_ok_and(|t| t.trim() == tip) {
            gated.push(wave);
            continue;
        }
        let stem = format!("integration-{wave}");
        if let Some((kind, reason)) =
            run_verify(run, cmd, parent_rel, parent_dir, Some(parent), &stem)?
        {
            let reason = format!("the integration gate after wave {wave} failed: {reason}");
            return Ok(Some((kind, reason)));
        }
        write_atomic(&record, format!("{tip}\n").as_bytes())?;
        gated.push(wave);
    }
    Ok(None)
}
