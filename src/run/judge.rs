//! A phase's end: run it, judge what it left (the frozen acceptance files, the budget, the
//! agent's end and the artifact), then accept it (commit, verify after implement, freeze after
//! test_design), retry it after the backoff, or stop the task.

use super::event::{Event, FreezeReason};
use super::isolation::Workspace;
use super::observe::{gated, load};
use super::phase::{PhaseRun, run_phase_noted};
use super::stops::frozen_reason;
use super::stops::stop_task;
use super::{Outcome, Run, StopKind};
use crate::plan::decide::{
    ArtifactCheck, GiveUp, PhaseFacts, Retry, RetryFacts, judge_phase, retry,
};
use crate::state::{Artifact, Phase};
use crate::task::{TaskTree, frozen};
use std::path::{Path, PathBuf};

/// How one phase run ended, before the retry decision.
pub(super) enum PhaseEnd {
    /// It succeeded: the folder as read after it.
    Done(TaskTree),
    /// The attempt failed in a way a retry may mend (nothing recorded yet).
    Failed(Failure),
    /// The task (or the run) stops; already recorded and announced.
    Stop(Outcome),
}

/// How an attempt failed, as the retry decision and the stop message need it.
pub(super) struct Failure {
    kind: StopKind,
    reason: String,
    rate_limited: bool,
    attempt: u32,
    /// The agent's exit status, when it exited by itself.
    exit_code: Option<i32>,
    /// Its one-line error (its own, else its last output line), when the agent failed.
    error_line: Option<String>,
    /// The phase log (absolute), whose last lines a stop shows.
    log: PathBuf,
}

/// The failed attempts of one phase in a row in this run.
pub(super) struct Failures {
    phase: Phase,
    count: u32,
    /// The last failed attempt's one-line error.
    last_error: Option<String>,
}

/// Which phase ran, and the task's iteration count after it.
#[derive(Clone, Copy)]
pub(super) struct Attempt {
    pub(super) phase: Phase,
    pub(super) iterations: u64,
}

/// Act on a phase's end: go on, retry it after the backoff ([`retry`] decides), or stop the
/// task with the last cause and the attempt count. `Some(outcome)` when the drive ends.
pub(super) fn after_phase(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    at: Attempt,
    end: PhaseEnd,
    failed: &mut Option<Failures>,
    fresh: &mut Option<TaskTree>,
) -> super::Result<Option<Outcome>> {
    let Failure {
        kind,
        reason,
        rate_limited,
        attempt,
        exit_code,
        error_line,
        log,
    } = match end {
        PhaseEnd::Done(tree) => {
            *failed = None;
            *fresh = Some(tree);
            return Ok(None);
        }
        PhaseEnd::Stop(outcome) => return Ok(Some(outcome)),
        PhaseEnd::Failed(failure) => failure,
    };
    let before = failed.take().filter(|f| f.phase == at.phase);
    let failures = before.as_ref().map_or(1, |f| f.count + 1);
    let previous_error = before.and_then(|f| f.last_error);
    let decision = retry(&RetryFacts {
        kind,
        exit_code,
        error_line: error_line.as_deref(),
        previous_error: previous_error.as_deref(),
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
    *failed = Some(Failures {
        phase: at.phase,
        count: failures,
        last_error: error_line,
    });
    let (kind, reason) = match decision {
        Retry::After(wait) => {
            let kept = set_aside_failed_artifact(run, rel, dir, at.phase, attempt)?;
            run.progress.event(&Event::PhaseRetry {
                task: rel,
                phase: at.phase.word(),
                attempt,
                failures,
                retries: run.retries,
                kind: kind.word(),
                reason: &reason,
                rate_limited,
                backoff: wait,
                artifact_kept: kept.as_deref(),
            });
            // Ctrl-C or the deadline ends the wait; the next turn's decision sees them.
            super::retry::backoff(wait, run.deadline, run.cancel);
            return Ok(None);
        }
        Retry::GiveUp(why) => give_up(run, at, failures, kind, reason, &log, why),
    };
    stop_task(run, rel, dir, kind, reason).map(Some)
}

/// The stop when [`retry`] gives up, its reason saying why: the agent's last output for what
/// cannot change, the attempts made, or the cap that ran out.
fn give_up(
    run: &Run<'_>,
    at: Attempt,
    failures: u32,
    kind: StopKind,
    reason: String,
    log: &Path,
    why: GiveUp,
) -> (StopKind, String) {
    let attempts = |n: u32| format!("{n} attempt{}", if n == 1 { "" } else { "s" });
    match why {
        GiveUp::NotRetryable => (kind, reason),
        // What cannot change stops now, and shows what the agent said: it is only in the log.
        GiveUp::CannotChange(cause) => {
            let tail = last_lines(log, 3);
            let said = if tail.is_empty() {
                "the agent printed nothing".to_string()
            } else {
                format!("the agent's last output: {}", tail.join(" ⏎ "))
            };
            (kind, format!("{reason}; {}; {said}", cause.why()))
        }
        GiveUp::Exhausted if run.retries == 0 => (kind, reason),
        GiveUp::Exhausted => (
            kind,
            format!(
                "{reason}; gave up after {} of {} (`- **Retries**: {}`)",
                attempts(failures),
                at.phase.word(),
                run.retries
            ),
        ),
        GiveUp::IterationCap => (
            StopKind::IterationCap,
            format!(
                "iteration cap reached ({} phases in this run) after {} of {} failed: {reason}",
                run.limits.iterations,
                attempts(failures),
                at.phase.word()
            ),
        ),
        GiveUp::Deadline => (
            StopKind::TotalTimeCap,
            format!(
                "total time cap of {} would pass during the backoff before retrying {}: {reason}",
                super::agent::human_duration(run.limits.total),
                at.phase.word()
            ),
        ),
    }
}

/// Before a retry: move what the failed attempt left of its artifact (partial, malformed,
/// written by an agent that then failed) to `logs/failed/<NAME>-<attempt>.md`, so that the
/// next attempt starts clean and nothing is lost. A copy a fix task started with stays.
pub(super) fn set_aside_failed_artifact(
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

/// Run one phase and judge what it left: `Ok(tree)` (the folder as read after the phase)
/// to go on, `Err(outcome)` when the task must stop.
pub(super) fn one_phase(
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
    // A run killed after this phase's agent ended well, before its work was judged: judge
    // that work now rather than pay for the phase again.
    let pr = match super::phase::finished_unjudged(dir) {
        Some((finished, attempt)) if finished == phase => {
            super::phase::recovered(run, phase, rel, dir, attempt)
        }
        _ => run_phase_noted(run, phase, rel, dir, ws, note)?,
    };
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
    announce_finished(run, rel, phase, &pr, &end);
    // A folder deleted while the phase ran (by the agent or a person) stops the task before
    // anything is judged or written there: nothing of it is recreated.
    if !dir.is_dir() {
        return Err(super::RunError::TaskGone(rel.to_string()));
    }
    if guarded && let Some(stop) = frozen_after(run, rel, dir, phase, pr.attempt, frozen_before)? {
        return Ok(stop);
    }
    if let Some((kind, what)) = pr.budget_stop.clone() {
        let reason = format!(
            "{what}, while {} ran (its agent was stopped; see {log_rel})",
            phase.word()
        );
        return stop_task(run, rel, dir, kind, reason).map(PhaseEnd::Stop);
    }
    if let Some(stop) = super::questions::asked(run, rel, dir, phase, pr.attempt)? {
        return Ok(PhaseEnd::Stop(stop));
    }
    // The run that wrote the artifact is judged on it, marker or not.
    let mut read_warnings = Vec::new();
    let judged_snap = crate::task::snapshot::read_snapshot_unmarked(dir, rel, &mut read_warnings);
    let rep = &pr.report;
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
    // timeout, a crash mid-write, a malformed file) the marker stays, sealed with what the
    // attempt left, and the next run sets the artifact aside under logs/incomplete/ and runs
    // the phase again (unless a person fixed the file since).
    if let Err((kind, reason)) = judged {
        // Judged: what this attempt left is no longer unseen work to recover.
        crate::store::task_files::seal_incomplete(dir)?;
        let exit_code = match &o.end {
            super::agent::AgentEnd::Exited(info) if !o.stopped_after_contract => info.code,
            _ => None,
        };
        let error_line = (kind == StopKind::AgentFailed)
            .then(|| rep.error.clone().or_else(|| o.last_line.clone()))
            .flatten();
        return Ok(PhaseEnd::Failed(Failure {
            kind,
            reason,
            rate_limited: rep.rate_limited,
            attempt: pr.attempt,
            exit_code,
            error_line,
            log: pr.log.clone(),
        }));
    }
    accept(run, rel, dir, phase, ws, &pr, judged_snap, read_warnings)
}

/// The last `n` non-empty lines of a phase log (read from its last 8 KiB), control characters
/// taken out and each cut to 200 characters: what a stop shows of the agent's own words.
fn last_lines(log: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    const MAX: u64 = 8 * 1024;
    let Ok(mut f) = std::fs::File::open(log) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(MAX);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(MAX).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        // The first line was cut by the seek.
        .skip(usize::from(start > 0))
        .map(|l| {
            l.chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .filter(|c| !c.is_control())
                .take(200)
                .collect::<String>()
        })
        .filter(|l| !l.trim().is_empty())
        .collect();
    let from = lines.len().saturating_sub(n);
    lines.drain(..from);
    lines
}

/// Say how the phase's agent ended (the `phase_finished` event).
fn announce_finished(run: &Run<'_>, rel: &str, phase: Phase, pr: &PhaseRun, end: &str) {
    let (o, rep) = (&pr.outcome, &pr.report);
    run.progress.event(&Event::PhaseFinished {
        task: rel,
        phase: phase.word(),
        attempt: pr.attempt,
        seconds: o.duration,
        end,
        contract_met: o.contract_met,
        log: &pr.log,
        agent: run.adapter.name(),
        ok: rep.ok,
        error: rep.error.as_deref(),
        session_id: rep.session_id.as_deref(),
        model: rep.model.as_deref(),
        input_tokens: rep.input_tokens,
        output_tokens: rep.output_tokens,
        cost_usd: rep.cost_usd,
        exited_fine: matches!(&o.end, super::agent::AgentEnd::Exited(s) if s.success() || o.contract_met),
    });
}

/// A frozen acceptance file changed by a phase after test_design stops the task at once. The
/// record itself removed or garbled by the phase is put back first (from `before`, as it was
/// when the phase started), so it judges.
fn frozen_after(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
    attempt: u32,
    before: Option<crate::store::frozen::FrozenFile>,
) -> super::Result<Option<PhaseEnd>> {
    if let Some(what) = frozen::restore(dir, before.as_ref())? {
        run.progress.event(&Event::FrozenRestored {
            task: rel,
            phase: phase.word(),
            attempt,
            what: &what,
        });
    }
    let changed = frozen::changed(dir);
    if changed.is_empty() {
        return Ok(None);
    }
    frozen::record_changes(dir, &changed, phase.word(), Some(attempt))?;
    let what = frozen::summary(dir).unwrap_or_else(|| changed.join(", "));
    let reason = frozen_reason(rel, &what);
    stop_task(run, rel, dir, StopKind::Frozen, reason).map(|o| Some(PhaseEnd::Stop(o)))
}

/// A phase judged a success: its artifact counts (the `.incomplete` marker goes), its work is
/// committed (isolation), the verify command runs after implement, and the acceptance oracle
/// is frozen after test_design. `judged` is the folder as the judge read it.
#[allow(clippy::too_many_arguments)]
fn accept(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    phase: Phase,
    ws: Option<&Workspace>,
    pr: &PhaseRun,
    mut judged_snap: crate::task::snapshot::Snapshot,
    read_warnings: Vec<String>,
) -> super::Result<PhaseEnd> {
    let (o, rep) = (&pr.outcome, &pr.report);
    // A PASS under a verify command is not complete until the command passed: marked while
    // the `.incomplete` marker still holds the verdict back, so that no moment (and no kill)
    // leaves a PASS that reads as complete unverified; a sub-task read so would never be
    // verified, its wave taking it for done.
    let pass = judged_snap
        .verdict
        .as_ref()
        .is_some_and(|v| matches!(v.verdict, Ok(crate::state::Verdict::Pass)));
    if phase == Phase::Referee && pass && run.verify_command.is_some() {
        super::verify::mark_verify_due(dir)?;
    }
    #[cfg(debug_assertions)]
    super::phase::kill_for_tests("AUTOMATON_TEST_KILL_ACCEPTING", phase);
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
            Ok(Some(commit)) => run.progress.event(&Event::Committed {
                task: rel,
                phase: phase.word(),
                branch: &ws.branch,
                commit: &commit,
            }),
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
    run.progress.event(&Event::ArtifactValidated {
        task: rel,
        phase: phase.word(),
        artifact: artifact.file_name(),
        duration: o.duration,
        usage: &usage_note(rep),
    });
    // The verify command also runs after implement, to stop early; a PASS is checked again
    // when the task reaches complete (`Action::Verify`, run/verify.rs).
    if phase == Phase::Implement && run.verify_command.is_some() {
        if let Some(stop) = super::verify::verify_implementation(run, rel, dir, ws)? {
            return Ok(PhaseEnd::Stop(stop));
        }
        // It ran in the task's workspace and may have touched the task: read it again.
        tree = load(run, rel);
    }
    // The acceptance oracle is frozen once test_design wrote it, so that no later phase
    // (nor a retry) can weaken the tests it is judged by.
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
pub(super) enum Freeze {
    AfterTestDesign,
    /// Before a later phase: no `.state.frozen` was there (a power cut took it before its
    /// fsync, `approve` set an unreadable one aside, or TEST_PLAN.md was written by hand).
    Missing,
}

/// Freeze the task's acceptance oracle (TEST_PLAN.md and its acceptance files, relative to
/// the agent's working directory) and say so.
pub(super) fn freeze(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    why: Freeze,
) -> super::Result<()> {
    let root = ws.map_or(run.settings.project.as_path(), |w| w.cwd.as_path());
    let files = frozen::freeze(dir, root)?;
    let reason = match why {
        Freeze::AfterTestDesign => FreezeReason::TestDesign,
        Freeze::Missing => FreezeReason::Missing,
    };
    run.progress.event(&Event::Frozen {
        task: rel,
        files: &files,
        root,
        reason,
    });
    Ok(())
}

/// What the task folder holds of a phase's artifact.
pub(super) fn artifact_check(
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
pub(super) fn usage_note(rep: &super::adapter::PhaseReport) -> String {
    let mut s = String::new();
    if let Some(t) = rep.tokens() {
        s.push_str(&format!(", {} tokens", crate::units::thousands(t)));
    }
    if let Some(c) = rep.cost_usd {
        s.push_str(&format!(", ${c:.4}"));
    }
    s
}
