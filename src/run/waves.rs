//! The waves of a decomposed task: the planner ([`crate::plan::waves`]) says which sub-tasks
//! may start; [`WaveState`] releases them to the run's scheduler ([`super::schedule`]) and
//! hears how each ended. With isolation, passed sub-tasks are merged back and each wave's
//! integration gate runs before a later wave starts. `--step` and sub-tasks made by hand
//! (no DECOMPOSITION.md) are driven one at a time, in order.

use super::check::run_verify;
use super::driver::drive;
use super::event::Event;
use super::isolation::{Isolation, Workspace};
use super::observe::{load, parent_of};
use super::stops::{stop_task, stopped};
use super::subtasks::sync_subtasks;
use super::{Outcome, Run, StopKind};
use crate::artifact::decomposition::Plan;
use crate::fsx::write_atomic;
use crate::git::Merge;
use crate::plan::waves::Waves;
use crate::state::State;
use crate::store::task_files::write_stop;
use crate::task::TaskTree;
use crate::task::readiness::{WaveRules, gates_passed, waves_of};
use std::path::{Path, PathBuf};

/// `--step` on a task whose sub-tasks run next: make the planned folders, then run one phase
/// of the first sub-task that may run (by wave, then name; hand-made ones by name).
pub(super) fn step_subtask(
    run: &Run<'_>,
    rel: &str,
    dir: &Path,
    tree: &TaskTree,
) -> super::Result<Outcome> {
    let Some(node) = tree.nodes.first() else {
        return Err(super::RunError::TaskGone(rel.to_string()));
    };
    let next = match &node.snap.plan {
        Some(Ok(plan)) => {
            sync_subtasks(run, rel, dir, plan, &node.decision)?;
            let _ = plan;
            let tree = TaskTree::load_task(&run.settings.project, rel, &run.config);
            let rules = super::wave_rules(run.cfg, run.isolation.is_some());
            let gates = gates_passed(dir);
            waves_of(&tree, 0, rules, &gates)
                .and_then(|w| w.ready(&[], &[], 1).first().copied())
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
pub(super) fn run_children(run: &Run<'_>, tree: &TaskTree) -> super::Result<Option<Outcome>> {
    let Some(node) = tree.nodes.first() else {
        return Ok(None);
    };
    for c in &node.children {
        let child = &tree.nodes[*c];
        if child.state().is_terminal() {
            continue;
        }
        run.progress.event(&Event::SubtaskStarted {
            task: &child.rel,
            parent: &node.rel,
            wave: None,
        });
        match drive(run, &child.rel, false)? {
            Outcome::Complete => {}
            other => return Ok(Some(other)),
        }
    }
    Ok(None)
}

/// The waves of a decomposed task, from the moment its drive waits for them: each sub-task
/// whose dependencies are all terminal is released to the run's scheduler
/// ([`super::schedule`]), up to `jobs` at once, never two whose `Files` overlap. A sub-task
/// that fails blocks only its dependents. A sub-task that waits for a person without being
/// terminal (a gate, stale artifacts) is not driven again in this run; its siblings go on,
/// and once they are done the parent stops with that wait. The waves end with a stop when
/// the whole run must end (Ctrl-C, total time cap), when a sub-task waits, or when the
/// parent must (a merge-back conflict, a failed integration gate).
///
/// With isolation, every passed sub-task is merged into the parent's integration branch
/// before anything is released, and after each wave's merges the verify command runs in the
/// integration worktree: a later wave starts only once that gate passed.
pub(super) struct WaveState<'r, 'a> {
    run: &'r Run<'a>,
    parent_rel: String,
    parent_dir: PathBuf,
    plan: Plan,
    integration: Option<(&'r Isolation, Workspace)>,
    /// The parent and its sub-tasks as last read.
    tree: TaskTree,
    running: Vec<String>,
    /// The whole run ends (Ctrl-C, the total cap, a run budget, a bug) once what runs ended.
    run_stop: Option<Outcome>,
    /// The parent's own stop (a merge-back conflict, a failed integration gate), raised once
    /// what runs has finished.
    parent_stop: Option<(StopKind, String)>,
    /// An error of automaton's own while merging or gating: the parent's drive ends with it
    /// once what runs has finished.
    error: Option<super::RunError>,
    /// Sub-tasks merged into the integration branch in this run.
    merged: Vec<String>,
    /// Waves whose integration gate passed.
    gated: Vec<u32>,
    /// Sub-tasks that stopped to wait for a person: (name, kind, reason).
    held: Vec<(String, StopKind, String)>,
    /// Sub-tasks whose drive ended on an error: never started again in this run.
    errored: Vec<String>,
}

/// VRAM admission (local, tmux): a sub-task that could never fit, even alone, is refused
/// before the first wave starts, with the numbers.
fn refuse_unfit(run: &Run<'_>, parent_rel: &str, plan: &Plan) -> super::Result<()> {
    let Some(gate) = run
        .vram
        .as_ref()
        .filter(|_| run.executor.runs_on_this_host())
    else {
        return Ok(());
    };
    let refused: Vec<String> = plan
        .rows
        .iter()
        .filter_map(|r| {
            let need = r.estimate?.saturating_mul(gate.kv_per_token);
            gate.check(&format!("{parent_rel}/subtasks/{}", r.name), need)
                .err()
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "refused before the first wave started: {}",
        refused.join("; ")
    ))
    .into())
}

impl<'r, 'a> WaveState<'r, 'a> {
    /// The waves of `plan` for the parent `parent_rel`, about to start (`parent_ws`: its
    /// workspace). A sub-task that could never fit in VRAM refuses them all at once.
    pub(super) fn new(
        run: &'r Run<'a>,
        parent_rel: &str,
        plan: Plan,
        parent_ws: Option<Workspace>,
    ) -> super::Result<WaveState<'r, 'a>> {
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
        refuse_unfit(run, parent_rel, &plan)?;
        Ok(WaveState {
            run,
            parent_rel: parent_rel.to_string(),
            parent_dir: run.settings.project.join(parent_rel),
            plan,
            integration,
            // The siblings' states, read once here; after that only the sub-task that just
            // finished is read again (a sub-task about to start is read afresh by its own
            // drive).
            tree: TaskTree::load_states(&run.settings.project, parent_rel, &run.config),
            running: Vec::new(),
            run_stop: None,
            parent_stop: None,
            error: None,
            merged: Vec::new(),
            gated: Vec::new(),
            held: Vec::new(),
            errored: Vec::new(),
        })
    }

    /// Merge and gate what ended, then the sub-tasks that start now (their paths), counted
    /// as running from here on.
    pub(super) fn release(&mut self) -> Vec<String> {
        if self.stopping() {
            return Vec::new();
        }
        if let Err(e) = self.integrate() {
            self.error = Some(e);
            return Vec::new();
        }
        let mut started = Vec::new();
        for name in self.ready() {
            let Some(row) = self.plan.row(&name) else {
                continue;
            };
            let child_rel = format!("{}/subtasks/{name}", self.parent_rel);
            self.run.progress.event(&Event::SubtaskStarted {
                task: &child_rel,
                parent: &self.parent_rel,
                wave: Some(row.wave),
            });
            self.running.push(name);
            started.push(child_rel);
        }
        started
    }

    /// Whether no sub-task runs: the waves are over.
    pub(super) fn idle(&self) -> bool {
        self.running.is_empty()
    }

    /// An error of automaton's own (a panic while merging, gating or recording an end): no
    /// sub-task starts any more, and the parent's drive ends with it once what runs ended.
    pub(super) fn fail(&mut self, e: super::RunError) {
        self.error.get_or_insert(e);
    }

    fn stopping(&self) -> bool {
        self.run_stop.is_some()
            || self.parent_stop.is_some()
            || self.error.is_some()
            || self.run.cancel.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn state_of(&self, name: &str) -> Option<State> {
        self.tree
            .find(&format!("{}/subtasks/{name}", self.parent_rel))
            .map(|i| self.tree.nodes[i].state())
    }

    /// With isolation: merge every passed sub-task into the integration branch, then run the
    /// gate of every wave that has ended. A failure becomes the parent's stop.
    fn integrate(&mut self) -> super::Result<()> {
        let Some((iso, pws)) = &self.integration else {
            return Ok(());
        };
        for row in &self.plan.rows {
            if self.state_of(&row.name) != Some(State::Complete) || self.merged.contains(&row.name)
            {
                continue;
            }
            let sub_rel = format!("{}/subtasks/{}", self.parent_rel, row.name);
            match merge_subtask(self.run, iso, &sub_rel, pws) {
                Ok(()) => self.merged.push(row.name.clone()),
                Err(reason) => {
                    self.parent_stop = Some((StopKind::Isolation, reason));
                    return Ok(());
                }
            }
        }
        if let Some(cmd) = self.run.verify_command {
            let mut gated = std::mem::take(&mut self.gated);
            let state_of = |name: &str| self.state_of(name);
            let stop = integration_gates(
                self.run,
                cmd,
                &self.parent_rel,
                &self.parent_dir,
                pws,
                &self.plan,
                &state_of,
                &mut gated,
            );
            self.gated = gated;
            self.parent_stop = stop?;
        }
        Ok(())
    }

    /// What the planner starts now, against the siblings as read: the gates of this run's
    /// integration, what runs, what waits for a person or failed, the free slots.
    fn ready(&self) -> Vec<String> {
        if self.parent_stop.is_some() {
            return Vec::new();
        }
        let rules = WaveRules {
            gated: self.integration.is_some() && self.run.verify_command.is_some(),
            ..super::wave_rules(self.run.cfg, self.run.isolation.is_some())
        };
        let busy: Vec<&str> = self.running.iter().map(String::as_str).collect();
        let held: Vec<&str> = self
            .held
            .iter()
            .map(|(h, _, _)| h.as_str())
            .chain(self.errored.iter().map(String::as_str))
            .collect();
        let slots = self.run.limits.jobs.saturating_sub(self.running.len());
        let Some(waves) = waves_of(&self.tree, 0, rules, &self.gated) else {
            return Vec::new();
        };
        // The parent is the one being driven: its own stop does not hold them.
        Waves {
            parent_stop: None,
            ..waves
        }
        .ready(&busy, &held, slots)
        .into_iter()
        .map(str::to_string)
        .collect()
    }

    /// A sub-task's drive ended: note how, then read it again.
    pub(super) fn ended(&mut self, name: String, out: super::Result<Outcome>) {
        let run = self.run;
        self.running.retain(|r| *r != name);
        let child_rel = format!("{}/subtasks/{name}", self.parent_rel);
        match out {
            Ok(Outcome::Stopped { kind, reason }) if !kind.is_task_stop() => {
                self.run_stop.get_or_insert(stopped(kind, reason));
            }
            Ok(Outcome::Stopped { kind, reason }) if !kind.is_recorded() => {
                if kind == StopKind::AwaitingApproval {
                    notify_approval(run, &child_rel, kind, &reason);
                }
                self.held.push((name, kind, reason));
            }
            Ok(_) => {}
            Err(e) => {
                self.errored.push(name.clone());
                let reason = format!("error: {e:#}");
                // A bug in automaton ends the run once what runs has finished.
                if matches!(e, super::RunError::Panicked { .. }) {
                    self.run_stop
                        .get_or_insert(stopped(StopKind::Internal, reason.clone()));
                }
                run.progress.line(&format!("✘ {child_rel}: {reason}"));
                // Stopped for a person: recorded in its `.stop` when the folder can be
                // written, and in any case never started again in this run (a folder
                // that cannot be written would otherwise be retried at once, forever). A
                // folder deleted under the run gets nothing written: it is not made again.
                if matches!(e, super::RunError::TaskGone(_)) {
                    self.held.push((name, StopKind::NeedsHuman, reason));
                } else if let Err(w) = write_stop(&run.settings.project.join(&child_rel), &reason) {
                    let reason = format!(
                        "{child_rel} stopped on an error ({reason}), and \
                         its stop could not be recorded either: {w}"
                    );
                    self.held.push((name, StopKind::NeedsHuman, reason));
                }
            }
        }
        // Read once its end is recorded (an error's `.stop` included).
        let project = &run.settings.project;
        if !self.tree.reload(project, &child_rel, &run.config, false) {
            self.tree = TaskTree::load_states(project, &self.parent_rel, &run.config);
        }
    }

    /// How the waves end: an error of automaton's own, the run's stop, else the parent's
    /// (recorded), else the wait of a held sub-task (an approval first: it is the one a person
    /// can act on now).
    pub(super) fn finish(mut self) -> super::Result<Option<Outcome>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if !self.parent_dir.is_dir() {
            return Err(super::RunError::TaskGone(self.parent_rel.to_string()));
        }
        if let Some(stop) = self.run_stop {
            return Ok(Some(stop));
        }
        if let Some((kind, reason)) = self.parent_stop {
            return stop_task(self.run, &self.parent_rel, &self.parent_dir, kind, reason).map(Some);
        }
        self.held
            .sort_by_key(|(_, kind, _)| *kind != StopKind::AwaitingApproval);
        let Some((_, kind, reason)) = self.held.first() else {
            return Ok(None);
        };
        let more = match self.held.len() {
            1 => String::new(),
            n => format!(
                " ({} more sub-tasks wait too; `automaton status` lists them)",
                n - 1
            ),
        };
        Ok(Some(stopped(*kind, format!("{reason}{more}"))))
    }
}

/// A sub-task waits at an approval gate: a person is needed now, while its siblings go on.
fn notify_approval(run: &Run<'_>, child_rel: &str, kind: StopKind, reason: &str) {
    let command = format!("automaton approve {child_rel}");
    let state = load(run, child_rel)
        .nodes
        .first()
        .map_or("?", |n| n.state().word());
    super::notify::send(
        run,
        &super::notify::Notice {
            event: "awaiting_approval",
            task: child_rel,
            state,
            kind: Some(kind.word()),
            reason: Some(reason),
            exit_code: kind.code(),
            command: Some(&command),
        },
    );
}

/// Merge a passed sub-task's branch into the integration branch; the reason when it cannot be
/// (a conflict names the sub-task and every conflicting file; the integration branch is left
/// as it was and the sub-task's branch keeps its commits).
pub(super) fn merge_subtask(
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
    match iso.merge_back(sub_rel, &sub, parent) {
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
        // The integration worktree is clean before a merge (`merge_back`): nothing untracked
        // is in the way unless someone put it there meanwhile.
        Ok(Merge::Blocked(files)) => Err(format!(
            "merging {sub_rel} ({}) into {} would overwrite untracked files in its worktree {} \
             ({}); move or remove them, then run `orchestrate --task {}` again",
            sub.branch,
            parent.branch,
            parent.worktree.display(),
            files.join(", "),
            parent_of(sub_rel).unwrap_or(sub_rel),
        )),
        Ok(how) => {
            if how != Merge::UpToDate {
                run.progress.event(&Event::Merged {
                    task: sub_rel,
                    branch: &sub.branch,
                    into: &parent.branch,
                });
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
pub(super) fn integration_gates(
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
