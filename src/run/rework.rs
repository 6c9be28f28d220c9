//! Bounded rework (`- **Rework**: N`): a task whose referee said FAIL or NEEDS_REVIEW, or
//! whose verify command failed after a PASS, goes back to implement with the findings, at
//! most N rounds. Each round sets the artifacts from implement on aside in
//! `logs/rework/<n>/` (nothing is deleted, see [`crate::store::rework`]); implement's prompt
//! gets the findings, and the review phases after it get what the round changed. When the
//! rounds are spent, or the same failure comes back twice in a row, the task stops for a
//! person with each round's cause. Whether to rework is the planner's
//! ([`crate::plan::rework::decide`]); this gathers its facts and acts.

use super::event::Event;
use super::isolation::Workspace;
use super::phase::{logs_dir, next_attempt};
use super::{Run, StopKind};
use crate::plan::rework::{Rework, decide};
use crate::state::{Artifact, Phase};
use crate::store::rework::{self as rounds, FINDINGS_FILE, Round};
use std::path::Path;

/// How much of a verdict or of a check's output goes into the findings.
const FINDINGS_MAX_BYTES: usize = 16 * 1024;
/// The lines of a failing check's output that the findings quote.
const OUTPUT_TAIL_LINES: usize = 40;

/// What the planner is told about a task whose referee said FAIL or NEEDS_REVIEW.
pub(super) fn for_verdict(run: &Run<'_>, dir: &Path) -> Rework {
    if run.cfg.rework == 0 {
        return Rework::Off;
    }
    decide(
        run.cfg.rework,
        &findings_so_far(dir),
        &verdict_findings(dir),
    )
}

/// The findings of the rounds a failure started (a person's rounds from the merge gate are
/// not the agents' to spend, nor a failure to compare with).
fn findings_so_far(dir: &Path) -> Vec<String> {
    rounds::rounds(dir)
        .into_iter()
        .filter(|r| !r.by_person())
        .map(|r| r.findings)
        .collect()
}

/// The referee's verdict, whole (capped), as the findings of a round.
fn verdict_findings(dir: &Path) -> String {
    let (bytes, _) =
        crate::fsx::read_prefix(&dir.join(Artifact::Verdict.file_name()), FINDINGS_MAX_BYTES)
            .unwrap_or_default();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

/// Start a round for the task's failing verdict (the planner said [`Rework::Round`]).
pub(super) fn start_for_verdict(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    reason: &str,
) -> super::Result<()> {
    let cause = format!("{}: {reason}", StopKind::VerdictFailed.word());
    start(run, rel, dir, ws, &cause, &verdict_findings(dir))
}

/// The verify command failed (after implement, or after a PASS): rework when the rounds
/// allow (`Ok(None)`: the task goes on, implement next), else the stop, with the history of
/// the rounds in its reason.
pub(super) fn after_failed_verify(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    command: &str,
    kind: StopKind,
    reason: String,
) -> super::Result<Option<(StopKind, String)>> {
    if kind != StopKind::VerifyFailed || run.cfg.rework == 0 {
        return Ok(Some((kind, reason)));
    }
    let findings = check_findings(rel, dir, command, &reason)?;
    match decide(run.cfg.rework, &findings_so_far(dir), &findings) {
        Rework::Round(_) => {
            let cause = format!("{}: {reason}", kind.word());
            start(run, rel, dir, ws, &cause, &findings)?;
            crate::fsx::remove_if_there(&dir.join(crate::task::snapshot::VERIFY_DUE_FILE))?;
            Ok(None)
        }
        decision => Ok(Some((kind, with_history(run, dir, &reason, decision)))),
    }
}

/// A failing check's command, how it ended and the tail of its output (its last log).
fn check_findings(rel: &str, dir: &Path, command: &str, reason: &str) -> super::Result<String> {
    let logs = logs_dir(rel, dir)?;
    let last = next_attempt(&logs, "verify").saturating_sub(1);
    let log = logs.join(format!("verify-{last}.log"));
    let (bytes, _) = crate::fsx::read_prefix(&log, 4 * FINDINGS_MAX_BYTES).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(OUTPUT_TAIL_LINES)..].join("\n");
    Ok(format!(
        "The verify command failed.\n\n\
         - Command: `{command}`\n- How it ended: {reason}\n\n\
         The last lines of its output:\n\n```text\n{}\n```",
        tail.trim_end()
    ))
}

/// Set the artifacts from implement on aside in a new round, with its findings.
fn start(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    cause: &str,
    findings: &str,
) -> super::Result<()> {
    let base = ws.and_then(|w| crate::git::Repo::at(&w.worktree).head(&w.worktree).ok());
    let moved = rounds::set_aside();
    let kept = rounds::begin(dir, cause, base.as_deref(), findings, &moved)?;
    crate::store::inputs::forget(dir, &moved)?;
    let all = rounds::rounds(dir);
    run.progress.event(&Event::ReworkStarted {
        task: rel,
        round: all.len() as u32,
        counted: rounds::counted(&all),
        max: run.cfg.rework,
        cause,
        kept: &kept,
    });
    Ok(())
}

/// Finish a round a killed run left half-made, before anything is decided.
pub(super) fn recover(dir: &Path) -> std::io::Result<()> {
    rounds::finish_pending(dir, &rounds::set_aside()).map(drop)
}

/// `reason` with why rework did not go on and each round's cause, for a task stopped with
/// rework on.
pub(super) fn with_history(run: &Run<'_>, dir: &Path, reason: &str, decision: Rework) -> String {
    let why = match decision {
        Rework::Off | Rework::Round(_) => return reason.to_string(),
        Rework::Spent { rounds } => format!(
            "the {rounds} rework round{} allowed (`- **Rework**: {}`) {} spent",
            if rounds == 1 { "" } else { "s" },
            run.cfg.rework,
            if rounds == 1 { "is" } else { "are" }
        ),
        Rework::Repeated { round } => format!(
            "the same failure came back after rework round {round}, so another round would repeat it"
        ),
    };
    let history: Vec<String> = rounds::rounds(dir)
        .iter()
        .map(|r| format!("round {}: {}", r.number, r.cause))
        .collect();
    format!("{reason}; {why} ({})", history.join("; "))
}

/// What a phase's prompt is told in a rework round: implement gets the findings to fix; the
/// review phases get the round's findings and, with isolation, the diff of the round's
/// commits to review. `None` outside rework.
pub(super) fn prompt_section(
    run: &Run<'_>,
    phase: Phase,
    dir: &Path,
    ws: Option<&Workspace>,
) -> Option<String> {
    let mut all = rounds::rounds(dir);
    // automaton's rounds are numbered as they count against `Rework` (a person's round
    // before them does not); a person's round by its folder.
    let counted = rounds::counted(&all);
    let round = all.pop()?;
    let n = if round.by_person() {
        round.number
    } else {
        counted
    };
    let findings_file = round.dir.join(FINDINGS_FILE);
    if phase == Phase::Implement {
        // A person's round is not one of the `Rework` rounds: no "of N" for it.
        let of = if round.by_person() {
            String::new()
        } else {
            format!(" of {}", run.cfg.rework)
        };
        return Some(format!(
            "## Rework round {n}{of}: fix the findings\n\n\
             The previous attempt did not pass ({cause}). What it wrote from implement on is \
             kept in `{kept}` (IMPLEMENTATION.md says what was built, the bug reports what was \
             found). Fix what these findings name (they are also in `{file}`), then write a new \
             IMPLEMENTATION.md:\n\n{findings}\n",
            cause = round.cause,
            kept = round.dir.display(),
            file = findings_file.display(),
            findings = round.findings,
        ));
    }
    if phase.artifact() <= Artifact::Implementation {
        return None;
    }
    let diff = ws.and_then(|w| round_diff(&round, w));
    Some(format!(
        "## Rework round {n}: review what this round changed\n\n\
         This task is in rework round {n} ({cause}); the findings it answers are in `{file}`.{diff}\n",
        cause = round.cause,
        file = findings_file.display(),
        diff = diff.unwrap_or_default(),
    ))
}

/// The round's commits as a diff written beside its findings, and the prompt's words on it.
fn round_diff(round: &Round, ws: &Workspace) -> Option<String> {
    let base = round.base.as_deref()?;
    let repo = crate::git::Repo::at(&ws.worktree);
    let (stat, patch) = repo.diff_since(&ws.worktree, base).ok()?;
    let file = round.dir.join("round.diff");
    crate::fsx::write_rebuildable(&file, patch.as_bytes()).ok()?;
    Some(format!(
        " Review only what this round changed: `git diff {base} HEAD` ({stat}) is in `{}`.",
        file.display(),
        stat = if stat.is_empty() {
            "no changes"
        } else {
            stat.trim()
        },
    ))
}
