//! When the verify command runs, and what its passing records. Done is verified, not
//! claimed: a PASS verdict counts once the command passed for that very VERDICT.md, and the
//! phases after implement run once it passed after that very IMPLEMENTATION.md, so a retry
//! after a failed verify verifies again. The hashes it passed for are kept in the task's
//! `logs/`; the planner ([`crate::plan::decide`]) reads the answer as [`Verify`].

use super::check::run_verify;
use super::isolation::Workspace;
use super::stops::stop_task;
use super::{Outcome, Run};
use crate::fsx::write_atomic;
use crate::plan::decide::{Verify, VerifyOf};
use crate::state::{Artifact, Phase, State};
use crate::store::task_files::write_state;
use crate::task::TaskNode;
use crate::task::snapshot::{
    VERIFIED_FILE, VERIFIED_IMPLEMENTATION_FILE, VERIFY_DUE_FILE, content_hash,
    verified_for_this_verdict,
};
use std::path::Path;

/// Whether the verify command must run before the task in `dir` goes on.
pub(super) fn due(run: &Run<'_>, dir: &Path, node: &TaskNode) -> Verify {
    match (node.state(), run.verify_command) {
        (_, None) => Verify::NotConfigured,
        // A VERDICT.md with no content is no verdict: the referee runs again, nothing is
        // verified.
        (State::Complete | State::Next(Phase::Referee), Some(_))
            if node.snap.artifacts.contains(Artifact::Verdict) && !pass_verified(dir) =>
        {
            Verify::Pending(VerifyOf::Pass)
        }
        (State::Next(_), Some(_)) if implementation_unverified(node, dir) => {
            Verify::Pending(VerifyOf::Implementation)
        }
        _ => Verify::Passed,
    }
}

/// Whether the verify command passed for the VERDICT.md in `dir` as it is now (with none,
/// or none that can be read, no PASS waits for it: verifying it could record nothing).
pub(super) fn pass_verified(dir: &Path) -> bool {
    verdict_hash(dir).is_none() || verified_for_this_verdict(dir)
}

/// Whether IMPLEMENTATION.md is the task's last artifact and the verify command has not
/// passed after it ([`VERIFIED_IMPLEMENTATION_FILE`] holds the hash of the one it passed
/// after).
fn implementation_unverified(node: &TaskNode, dir: &Path) -> bool {
    if node.snap.artifacts.highest() != Some(Artifact::Implementation) {
        return false;
    }
    let now = crate::fsx::read(dir.join(Artifact::Implementation.file_name()))
        .ok()
        .map(|b| content_hash(&b));
    now.is_some() && now != crate::fsx::read_to_string(dir.join(VERIFIED_IMPLEMENTATION_FILE)).ok()
}

/// The hash of the task's VERDICT.md as it is now, if it has one.
fn verdict_hash(dir: &Path) -> Option<String> {
    crate::fsx::read(dir.join(Artifact::Verdict.file_name()))
        .ok()
        .map(|b| content_hash(&b))
}

/// Run the verify command on a PASS verdict; the stop when it fails. Until it passes the task
/// is not complete: a run cut short here (Ctrl-C, the total cap, kill -9) leaves it stopped,
/// never complete.
pub(super) fn verify_pass(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
) -> super::Result<Option<Outcome>> {
    // Read again here: a person may have removed VERDICT.md since the turn's read; the next
    // turn then sees the task as it is.
    let (Some(cmd), Some(hash)) = (run.verify_command, verdict_hash(dir)) else {
        return Ok(None);
    };
    // Due until it passed: a run cut short here leaves the task at the referee's step, and
    // the next run (`continue`, plain `orchestrate`) verifies again.
    mark_verify_due(dir)?;
    if let Checked::Failed(end) = check(run, rel, dir, ws, cmd, "the referee said PASS, but ")? {
        return Ok(end);
    }
    write_atomic(&dir.join(VERIFIED_FILE), hash.as_bytes())?;
    crate::fsx::remove_if_there(&dir.join(VERIFY_DUE_FILE))?;
    write_state(dir, State::Complete)?;
    Ok(None)
}

/// Run the verify command on the implementation in `dir` (after implement, and before the
/// phases after it when a failed verify was retried); the stop when it fails (`None` when it
/// passed, recorded, or a rework round began).
pub(super) fn verify_implementation(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
) -> super::Result<Option<Outcome>> {
    let Some(cmd) = run.verify_command else {
        return Ok(None);
    };
    if let Checked::Failed(end) = check(run, rel, dir, ws, cmd, "")? {
        return Ok(end);
    }
    // Lost in a power cut, it costs one more run of the command.
    if let Ok(bytes) = crate::fsx::read(dir.join(Artifact::Implementation.file_name())) {
        crate::fsx::write_rebuildable(
            &dir.join(VERIFIED_IMPLEMENTATION_FILE),
            content_hash(&bytes).as_bytes(),
        )?;
    }
    Ok(None)
}

/// How one run of the verify command ended for the task.
enum Checked {
    Passed,
    /// It failed: the task stopped (`Some`), or a rework round began and implement runs
    /// next (`None`).
    Failed(Option<Outcome>),
}

/// Run the verify command in the task's workspace; when it fails, a rework round begins
/// where one is left, else the task stops with the reason (after `context`).
fn check(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    ws: Option<&Workspace>,
    cmd: &str,
    context: &str,
) -> super::Result<Checked> {
    let Some((kind, reason)) = run_verify(run, cmd, rel, dir, ws, "verify")? else {
        return Ok(Checked::Passed);
    };
    let reason = format!("{context}{reason}");
    Ok(Checked::Failed(
        match super::rework::after_failed_verify(run, rel, dir, ws, cmd, kind, reason)? {
            Some((kind, reason)) => Some(stop_task(run, rel, dir, kind, reason)?),
            None => None,
        },
    ))
}

/// Mark that the PASS in `dir` waits for the verify command (durably: a power cut must not
/// turn an unverified PASS into a complete task), with `.state` saying the referee's step.
pub(super) fn mark_verify_due(dir: &Path) -> super::Result<()> {
    write_atomic(
        &dir.join(VERIFY_DUE_FILE),
        b"the PASS verdict waits for the verify command\n",
    )?;
    write_state(dir, State::Next(Phase::Referee))?;
    Ok(())
}
