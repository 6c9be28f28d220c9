//! Recovery, before anything is decided: what a killed run (kill -9, power loss, an SSH
//! disconnect) left behind in a task and its sub-tasks is put right first, so that the decision
//! that follows reads a folder nothing else is changing.
//!
//! In this order, for every task folder of the tree:
//! 1. an agent the pid file `logs/agent.pid` names that still runs is stopped (TERM, grace,
//!    KILL); its late writes land before the folder is judged, never after;
//! 2. stray `.automaton-tmp-*` files of an interrupted atomic write are removed (and the
//!    `.automaton-spare-*` files older versions kept, in the task folder and `logs/`);
//! 3. an artifact that a phase run was still writing (`.incomplete`) is moved to
//!    `logs/incomplete/<NAME>-<n>` (never deleted) and the marker removed: the phase runs again;
//!    unless the run had stopped (the marker is sealed) and a person changed the file since:
//!    then it is theirs, and counts; or unless its agent had ended with success (its
//!    watchdog's exit record): then the mark stays and the phase is judged, not run again;
//! 4. a rework round a killed run left half-made (`logs/rework/.next`) is finished: its
//!    artifacts moved and its number given, so implement never runs without its findings;
//! 5. a verify that was due (`logs/verify-due`) with no verify command configured any more is
//!    dropped;
//! 6. `.state` is rewritten wherever it disagrees with what the artifacts say (a terminal
//!    sub-task is not driven again, so nothing else would repair it), except that a PASS not yet
//!    verified never reads `complete`.

use super::Run;
use super::event::Event;
use crate::state::{Artifact, State};
use crate::store::task_files::{clear_incomplete, read_marker, write_state};
use crate::task::TaskTree;
use std::path::{Path, PathBuf};

/// Put right what a killed run left in task `rel` and its sub-tasks.
pub fn recover(run: &Run<'_>, rel: &str) -> super::Result<()> {
    let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    for node in &tree.nodes {
        let logs = node.dir.join("logs");
        // A Slurm job a killed run submitted runs on elsewhere: the phase re-attaches to it
        // (or cancels it when another phase is next), and what it writes stays its own.
        if run.executor.can_reattach()
            && super::executor::slurm_record(&logs.join("agent.pid")).is_some()
        {
            continue;
        }
        super::phase::stop_leftover_agent(run, &node.rel, &logs)?;
        remove_temp_entries(&node.dir, false);
        remove_temp_entries(&logs, false);
        if node.snap.has_subtasks_dir {
            remove_temp_entries(&node.dir.join(crate::task::snapshot::SUBTASKS_DIR), true);
        }
        // A marker that names nothing (emptied by a power cut before its fsync, which is
        // requested as the agent starts, so normally before the agent wrote anything lasting)
        // is cleared with a warning.
        let marked = match read_marker(&node.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                run.progress
                    .line(&format!("warning: {e}; cleared (nothing was set aside)"));
                clear_incomplete(&node.dir)?;
                None
            }
            other => other?,
        };
        if let Some(marker) = marked.as_ref().filter(|m| !m.applies(&node.dir)) {
            // The run that wrote it stopped, and a person changed the file since: theirs.
            run.progress.event(&Event::PersonsEditKept {
                task: &node.rel,
                artifact: marker.artifact.file_name(),
            });
            // A verdict of theirs is verified like the referee's before a PASS counts.
            if marker.artifact == Artifact::Verdict && run.verify_command.is_some() {
                super::verify::mark_verify_due(&node.dir)?;
            }
            clear_incomplete(&node.dir)?;
        } else if let Some(marker) = marked
            && super::phase::finished_unjudged(&node.dir).is_none()
        {
            let name = marker.artifact.file_name();
            let from = node.dir.join(name);
            if from.exists() {
                let to = set_aside(&logs, name)?;
                std::fs::rename(&from, &to).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot move {} to {}: {e}", from.display(), to.display()),
                    )
                })?;
                run.progress.event(&Event::IncompleteSetAside {
                    task: &node.rel,
                    artifact: name,
                    to: &to,
                });
            }
            clear_incomplete(&node.dir)?;
        }
        if node.snap.has_logs {
            super::rework::recover(&node.dir)?;
        }
    }
    // A verify that was due under a verify command since removed from the settings: nothing
    // is left to wait for.
    if run.verify_command.is_none() {
        for node in tree.nodes.iter().filter(|n| n.snap.verify_due) {
            crate::fsx::remove_if_there(&node.dir.join(crate::task::snapshot::VERIFY_DUE_FILE))?;
        }
    }
    let mut tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
    tree.apply_gates(&run.cfg.approve_before);
    for node in &tree.nodes {
        let state = node.state();
        let unverified = state == State::Complete
            && run.verify_command.is_some()
            && !super::verify::pass_verified(&node.dir);
        if node.snap.state_file != Some(state) && !unverified {
            write_state(&node.dir, state)?;
        }
    }
    Ok(())
}

/// `logs/incomplete/<name>-<n>`, the first free n (the folder is made).
fn set_aside(logs: &Path, name: &str) -> std::io::Result<PathBuf> {
    let dir = logs.join("incomplete");
    std::fs::create_dir_all(&dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
    })?;
    Ok((1..)
        .map(|n| dir.join(format!("{name}-{n}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| dir.join(name)))
}

/// How long a staging folder goes untouched before it counts as left by a killed run (a live
/// one is built in milliseconds).
const STAGING_LEFT_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove what a killed run left under a temporary name (`.automaton-tmp-*`) in `dir`: in a
/// task folder, the files of interrupted atomic writes (nothing else writes there while the
/// project lock is held and the task's agent is stopped); in a `subtasks/` folder
/// (`folders`), the sub-task folders it was making ([`crate::task::create_task`] builds each
/// under such a name and renames it into place whole), once untouched for
/// [`STAGING_LEFT_AFTER`]: `automaton task create` takes no lock and may be building one
/// there right now. A link is never followed. Files named [`crate::fsx::OLD_SPARE_PREFIX`]
/// (kept by older versions to reuse their inodes) go too.
fn remove_temp_entries(dir: &Path, folders: bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let spare = !folders && name.starts_with(crate::fsx::OLD_SPARE_PREFIX);
        if !spare && !name.starts_with(crate::fsx::TEMP_PREFIX) {
            continue;
        }
        let left = || {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= STAGING_LEFT_AFTER))
        };
        let _ = match e.file_type() {
            Ok(t) if folders && t.is_dir() && left() => std::fs::remove_dir_all(e.path()),
            Ok(t) if !folders && t.is_file() => std::fs::remove_file(e.path()),
            _ => Ok(()),
        };
    }
}
