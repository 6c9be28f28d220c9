//! A task's worktree when isolation is on: made on first use, then set up once (the
//! `.worktreeinclude` files copied in, the setup command run).

use super::event::Event;
use super::isolation::Workspace;
use super::observe::parent_of;
use super::{Run, StopKind};
use std::path::Path;

/// The task's workspace when isolation is on (made on first use, then set up once: the
/// `.worktreeinclude` files copied in and the setup command run); the stop when it cannot be
/// made or set up.
pub(super) fn workspace(
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
    run.progress.event(&Event::Workspace {
        task: rel,
        branch: &ws.branch,
        worktree: &ws.worktree,
    });
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
        Ok(files) if !files.is_empty() => run.progress.event(&Event::WorktreeInclude {
            task: rel,
            worktree: &ws.worktree,
            files: &files,
        }),
        Ok(_) => {}
        Err(e) => return Ok(setup_failed(&e)),
    }
    if let Some(cmd) = run.cfg.setup_command.as_deref()
        && let Some((kind, reason)) = super::check::run_setup(run, cmd, rel, dir, &ws)?
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
