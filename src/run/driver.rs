//! The loop driver: determine the state, run the phase, validate the artifact, write `.state`,
//! repeat — and for a decomposed task, drive its sub-tasks in dependency waves in parallel.

use super::phase::{run_phase, run_verify};
use super::subtasks::{files_overlap, sync_subtasks};
use super::{Outcome, Run, StopKind};
use crate::artifact::decomposition::Plan;
use crate::fsx::write_atomic;
use crate::state::{Artifact, Cause, Phase, State};
use crate::store::task_files::{clear_stop, write_state, write_stop};
use crate::task::TaskTree;
use crate::task::snapshot::content_hash;
use serde_json::json;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

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
    if kind.is_task_stop() {
        write_stop(dir, &reason)?;
    }
    run.progress.event(
        "task_stopped",
        json!({"task": rel, "kind": kind.word(), "reason": reason}),
        || format!("✘ {rel}: {reason}"),
    );
    Ok(stopped(kind, reason))
}

/// The stop (and exit code) for a task the state machine put in human_intervention.
fn human_stop(cause: Option<Cause>) -> StopKind {
    match cause {
        Some(Cause::Verdict) => StopKind::VerdictFailed,
        Some(Cause::MalformedVerdict | Cause::InvalidPlan | Cause::TooDeep) => {
            StopKind::BadArtifact
        }
        Some(Cause::Subtasks) => StopKind::SubtasksFailed,
        Some(Cause::Stopped | Cause::Created) | None => StopKind::NeedsHuman,
    }
}

/// The file that records which VERDICT.md the verify command last passed for.
const VERIFIED_FILE: &str = "logs/verified";

fn verdict_hash(dir: &Path) -> Option<String> {
    std::fs::read(dir.join(Artifact::Verdict.file_name()))
        .ok()
        .map(|b| content_hash(&b))
}

/// Clear the stops an earlier run recorded in a task and its sub-tasks, so that naming the
/// task retries what was stopped (a timeout, a stalled or failed agent...).
fn clear_stops(run: &Run<'_>, rel: &str) -> super::Result<()> {
    let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    for node in tree.nodes.iter().filter(|n| n.snap.stop.is_some()) {
        clear_stop(&node.dir)?;
        run.progress
            .event("stop_cleared", json!({"task": node.rel}), || {
                format!(
                    "↻ {}: retrying after: {}",
                    node.rel,
                    node.snap.stop.as_deref().unwrap_or("")
                )
            });
    }
    Ok(())
}

/// Drive one task until it is complete or needs a human. `explicit`: the user named this task,
/// so a stop recorded by an earlier run is cleared and the task tried again.
pub fn drive(run: &Run<'_>, rel: &str, explicit: bool) -> super::Result<Outcome> {
    let dir = run.settings.project.join(rel);
    if explicit {
        clear_stops(run, rel)?;
    }
    let mut iterations: u64 = 0;
    let mut fresh: Option<TaskTree> = None;
    let mut warned = false;
    loop {
        if run.cancel.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(stopped(StopKind::Interrupted, "interrupted"));
        }
        if Instant::now() >= run.deadline {
            let reason = format!(
                "total time cap of {} reached",
                super::agent::human_duration(run.limits.total)
            );
            return stop_task(run, rel, &dir, StopKind::TotalTimeCap, reason);
        }
        // The folder as the last phase's validation read it, else read now.
        let tree = fresh
            .take()
            .unwrap_or_else(|| TaskTree::load_task(&run.settings.project, rel, &run.config));
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
        // Done is verified, not claimed: a PASS counts once the verify command passed for this
        // very VERDICT.md (so a retry after a failed verify verifies again).
        let unverified = match (state, run.verify_command) {
            (State::Complete, Some(cmd)) => verdict_hash(&dir)
                .filter(|h| {
                    std::fs::read_to_string(dir.join(VERIFIED_FILE))
                        .ok()
                        .as_deref()
                        != Some(h.as_str())
                })
                .map(|h| (cmd, h)),
            _ => None,
        };
        if node.snap.state_file != Some(state) && unverified.is_none() {
            write_state(&dir, state)?;
        }
        match state {
            State::Complete => {
                if let Some((cmd, hash)) = unverified {
                    // Until the command passes the task is not complete: a run cut short here
                    // (Ctrl-C, the total cap, kill -9) leaves it stopped, never complete.
                    let pending = format!(
                        "the PASS verdict is not verified yet (the verify command did not finish); \
                         `orchestrate --task {rel}` verifies it again"
                    );
                    write_stop(&dir, &pending)?;
                    if let Some((kind, reason)) = run_verify(run, cmd, rel, &dir)? {
                        let reason = format!("the referee said PASS, but {reason}");
                        return stop_task(run, rel, &dir, kind, reason);
                    }
                    write_atomic(&dir.join(VERIFIED_FILE), hash.as_bytes())?;
                    clear_stop(&dir)?;
                    write_state(&dir, State::Complete)?;
                }
                run.progress
                    .event("task_complete", json!({"task": rel}), || {
                        format!("✔ {rel}: complete")
                    });
                return Ok(Outcome::Complete);
            }
            State::HumanIntervention => {
                let reason = node
                    .decision
                    .reason
                    .clone()
                    .unwrap_or_else(|| "needs a human".into());
                let kind = human_stop(node.decision.cause);
                run.progress.event(
                    "task_stopped",
                    json!({"task": rel, "kind": kind.word(), "reason": reason}),
                    || format!("✘ {rel}: {reason}"),
                );
                return Ok(stopped(kind, reason));
            }
            State::Decomposition if node.snap.plan.is_some() => {
                let Some(Ok(plan)) = &node.snap.plan else {
                    unreachable!("an invalid plan decides human_intervention")
                };
                sync_subtasks(run, rel, &dir, plan, &node.decision)?;
                if let Some(stop) = run_waves(run, rel, plan)? {
                    return Ok(stop);
                }
            }
            s => {
                let Some(phase) = s.next_phase() else {
                    unreachable!("non-terminal states have a phase")
                };
                if iterations >= run.limits.iterations {
                    let reason = format!(
                        "iteration cap reached ({} phase{} in this run); next phase would be {}",
                        run.limits.iterations,
                        if run.limits.iterations == 1 { "" } else { "s" },
                        phase.word()
                    );
                    return stop_task(run, rel, &dir, StopKind::IterationCap, reason);
                }
                iterations += 1;
                match one_phase(run, rel, &dir, phase)? {
                    Ok(tree) => fresh = Some(tree),
                    Err(stop) => return Ok(stop),
                }
            }
        }
    }
}

/// Run one phase and validate what it left: `Ok(tree)` (the folder as read after the phase)
/// to go on, `Err(outcome)` when the task must stop.
fn one_phase(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
) -> super::Result<Result<TaskTree, Outcome>> {
    let pr = run_phase(run, phase, rel, dir)?;
    let o = &pr.outcome;
    let log_rel = format!("{rel}/logs/{}-{}.log", phase.word(), pr.attempt);
    let end = o
        .end
        .describe_with(Some(run.limits.phase), Some(run.limits.stall));
    let rep = &pr.report;
    run.progress.event(
        "phase_finished",
        json!({
            "task": rel, "phase": phase.word(), "attempt": pr.attempt,
            "seconds": o.duration.as_secs_f64(), "end": end,
            "contract_met": o.contract_met, "log": pr.log,
            "agent": run.adapter.name(), "ok": rep.ok, "error": rep.error,
            "session_id": rep.session_id, "model": rep.model,
            "input_tokens": rep.input_tokens, "output_tokens": rep.output_tokens,
            "cost_usd": rep.cost_usd,
        }),
        || match &o.end {
            super::agent::AgentEnd::Exited(s) if s.success() || o.contract_met => String::new(),
            _ => format!(
                "  {rel}: {} ended after {:.1}s ({end})",
                phase.word(),
                o.duration.as_secs_f64()
            ),
        },
    );
    if let Some(kind) = StopKind::from_end(&o.end) {
        let reason = format!("{end} during {}; see {log_rel}", phase.word());
        return stop_task(run, rel, dir, kind, reason).map(Err);
    }
    // The agent's own failure signal (an error result, turn.failed) stops the phase even when
    // it exited 0.
    if rep.ok == Some(false) {
        let why = rep
            .error
            .as_deref()
            .unwrap_or("the agent reported a failure");
        let reason = format!("{why} ({end}) during {}; see {log_rel}", phase.word());
        return stop_task(run, rel, dir, StopKind::AgentFailed, reason).map(Err);
    }
    if let super::agent::AgentEnd::Exited(status) = &o.end
        && !status.success()
        && !o.stopped_after_contract
    {
        let reason = format!("{end} during {}; see {log_rel}", phase.word());
        return stop_task(run, rel, dir, StopKind::AgentFailed, reason).map(Err);
    }
    if rep.ok.is_none()
        && let Some(why) = &rep.error
    {
        run.progress
            .line(&format!("warning: {rel}: {}: {why}", phase.word()));
    }
    let artifact = phase.artifact();
    let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    let Some(node) = tree.nodes.first() else {
        return Err(super::RunError::TaskGone(rel.to_string()));
    };
    if !node.snap.artifacts.contains(artifact) {
        let name = artifact.file_name();
        let path = dir.join(name);
        let why = if !path.exists() {
            if o.contract_met {
                format!("the agent printed CONTRACT_MET but did not write {name}")
            } else {
                format!("the agent exited 0 but did not write {name}")
            }
        } else if node
            .snap
            .origin
            .as_ref()
            .is_some_and(|or| or.inherited.contains_key(name))
        {
            format!("{name} is unchanged from the copy this task started with")
        } else {
            format!("{name} is empty")
        };
        return stop_task(
            run,
            rel,
            dir,
            StopKind::BadArtifact,
            format!("{why} ({} phase); see {log_rel}", phase.word()),
        )
        .map(Err);
    }
    let malformed = match artifact {
        Artifact::Verdict => node
            .snap
            .verdict
            .as_ref()
            .and_then(|v| v.verdict.clone().err()),
        Artifact::Decomposition => match &node.snap.plan {
            Some(Err(e)) => Some(e.to_string()),
            _ => None,
        },
        _ => None,
    };
    if let Some(why) = malformed {
        let reason = format!("{} is malformed: {why}", artifact.file_name());
        return stop_task(run, rel, dir, StopKind::BadArtifact, reason).map(Err);
    }
    run.progress.event(
        "artifact_validated",
        json!({"task": rel, "phase": phase.word(), "artifact": artifact.file_name()}),
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
        && let Some((kind, reason)) = run_verify(run, cmd, rel, dir)?
    {
        return stop_task(run, rel, dir, kind, reason).map(Err);
    }
    Ok(Ok(tree))
}

/// ", 1,234 tokens, $0.0123" for a phase whose agent reported usage; empty otherwise.
fn usage_note(rep: &super::adapter::PhaseReport) -> String {
    let mut s = String::new();
    if let Some(t) = rep.tokens() {
        s.push_str(&format!(", {} tokens", crate::report::thousands(t)));
    }
    if let Some(c) = rep.cost_usd {
        s.push_str(&format!(", ${c:.4}"));
    }
    s
}

/// Drive the sub-tasks of a decomposed task: each one whose dependencies are all terminal runs,
/// up to `jobs` at once, never two whose `Files` overlap. A sub-task that fails blocks only its
/// dependents. Returns a stop only when the whole run must end (Ctrl-C, total time cap).
fn run_waves(run: &Run<'_>, parent_rel: &str, plan: &Plan) -> super::Result<Option<Outcome>> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(String, super::Result<Outcome>)>();
        let mut running: Vec<String> = Vec::new();
        let mut run_stop: Option<Outcome> = None;
        loop {
            let stopping =
                run_stop.is_some() || run.cancel.load(std::sync::atomic::Ordering::SeqCst);
            if !stopping {
                let tree = TaskTree::load_task(&run.settings.project, parent_rel, &run.config);
                let state_of = |name: &str| {
                    tree.find(&format!("{parent_rel}/subtasks/{name}"))
                        .map(|i| tree.nodes[i].state())
                };
                let blocked = tree
                    .nodes
                    .first()
                    .map(|n| n.decision.blocked.clone())
                    .unwrap_or_default();
                let mut rows: Vec<_> = plan.rows.iter().collect();
                rows.sort_by_key(|r| r.wave);
                for row in rows {
                    if running.len() >= run.limits.jobs {
                        break;
                    }
                    let ready = !running.contains(&row.name)
                        && state_of(&row.name).is_some_and(|s| !s.is_terminal())
                        && !blocked.iter().any(|(b, _)| *b == row.name)
                        && row
                            .depends_on
                            .iter()
                            .all(|d| state_of(d).is_some_and(State::is_terminal))
                        && !running.iter().any(|r| {
                            plan.row(r)
                                .is_some_and(|other| files_overlap(&row.files, &other.files))
                        });
                    if !ready {
                        continue;
                    }
                    running.push(row.name.clone());
                    let tx = tx.clone();
                    let name = row.name.clone();
                    let child_rel = format!("{parent_rel}/subtasks/{name}");
                    run.progress.event(
                        "subtask_started",
                        json!({"task": child_rel, "parent": parent_rel, "wave": row.wave}),
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
            match out {
                Ok(Outcome::Stopped { kind, reason }) if !kind.is_task_stop() => {
                    run_stop.get_or_insert(stopped(kind, reason));
                }
                Ok(_) => {}
                Err(e) => {
                    let dir = run
                        .settings
                        .project
                        .join(format!("{parent_rel}/subtasks/{name}"));
                    let reason = format!("error: {e:#}");
                    let _ = write_stop(&dir, &reason);
                    run.progress
                        .line(&format!("✘ {parent_rel}/subtasks/{name}: {reason}"));
                }
            }
        }
        Ok(run_stop)
    })
}
