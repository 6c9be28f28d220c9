//! `automaton approve`, `reject` and `rerun`: the decisions a person takes on a task's gates
//! and stale artifacts. Approvals and rejections are appended to the task's
//! `.state.approvals`; artifacts are moved (to `logs/rejected/`, `logs/superseded/<n>/`),
//! never deleted.

use super::{Ctx, Error, out};
use crate::cli::{ApproveArgs, RejectArgs, RerunArgs};
use crate::exit;
use crate::plan::gate::Gate;
use crate::report::{approval_gates, phase_config, print_warnings};
use crate::settings::{Key, Settings};
use crate::state::{Artifact, Phase};
use crate::store::approvals::{self, APPROVALS_VERSION, Record, RecordKind};
use crate::store::frozen::FROZEN_FILE;
use crate::store::task_files::{clear_stop, write_state};
use crate::store::{inputs, lock};
use crate::task::TaskTree;
use crate::task::frozen::Acceptance;
use crate::task::gates::decided_on;
use std::fs;
use std::path::Path;

/// The settings, the checked task path and its tree (gates applied).
pub(super) fn load(ctx: &Ctx, task: &str) -> super::Result<(Settings, String, TaskTree)> {
    let settings = Settings::load(&ctx.project)?;
    print_warnings(&settings.warnings);
    let gates = approval_gates(&settings);
    let rel = ctx.task_path(task)?;
    if !ctx.project.join(&rel).is_dir() {
        return Err(Error::Input(format!(
            "no task folder {rel}; `{} status` lists the tasks",
            ctx.command_prefix()
        )));
    }
    let mut tree = TaskTree::load_task(&ctx.project, &rel, &phase_config(&settings));
    tree.apply_gates(&gates);
    print_warnings(&tree.warnings);
    Ok((settings, rel, tree))
}

/// Files are moved (and worktrees merged or removed) only while no orchestrator drives the
/// project.
pub(super) fn take_lock(ctx: &Ctx) -> super::Result<lock::ProjectLock> {
    Ok(lock::acquire(&ctx.project)?)
}

pub fn approve_command(ctx: &Ctx, args: &ApproveArgs) -> super::Result<u8> {
    let (settings, rel, tree) = load(ctx, &args.task)?;
    let prefix = ctx.command_prefix();
    let waiting: Vec<usize> = (0..tree.nodes.len())
        .filter(|i| tree.nodes[*i].approval.is_some() && (args.all || *i == 0))
        .collect();
    // Changed frozen acceptance files: approving accepts them as they are now.
    let mut accepted_any = false;
    for node in tree
        .nodes
        .iter()
        .take(if args.all { usize::MAX } else { 1 })
    {
        match crate::task::frozen::accept(&node.dir)? {
            Acceptance::Nothing => {}
            Acceptance::Files(files) => {
                accepted_any = true;
                out::println(format_args!(
                    "Accepted the change to {} of {} by {} (new hashes in {}/{FROZEN_FILE})",
                    files.join(", "),
                    node.rel,
                    approvals::who(),
                    node.rel
                ))?;
            }
            Acceptance::Unreadable { why, kept } => {
                accepted_any = true;
                out::println(format_args!(
                    "{0}/{FROZEN_FILE} was unreadable ({why}); moved to {0}/{kept}. The next \
                     run freezes TEST_PLAN.md and its acceptance files again, as they are then, \
                     before a later phase runs: check them first (`git diff`), since what was \
                     frozen is unknown",
                    node.rel,
                ))?;
            }
        }
    }
    if waiting.is_empty() && accepted_any {
        out::println(format_args!("Next:\n  {prefix} orchestrate --task {rel}"))?;
        return Ok(exit::OK);
    }
    if waiting.is_empty() {
        let gates = settings.text(Key::ApproveBefore);
        let subs: Vec<&str> = tree.nodes[1..]
            .iter()
            .filter(|n| n.approval.is_some())
            .map(|n| n.rel.as_str())
            .collect();
        let hint = if gates.is_none() {
            " (no gates are set: `- **Approve before**: design, implement` in .agent.md)".into()
        } else if !subs.is_empty() {
            format!(
                "; its sub-tasks {} are: `{prefix} approve {rel} --all`",
                subs.join(", ")
            )
        } else {
            String::new()
        };
        return Err(Error::Input(format!(
            "{rel} is not waiting for approval (state `{}`){hint}",
            tree.nodes[0].state().word()
        )));
    }
    let next = way_on(&tree, &waiting, &rel, &prefix);
    for &i in &waiting {
        let node = &tree.nodes[i];
        let Some(wait) = &node.approval else { continue };
        let record = Record {
            v: APPROVALS_VERSION,
            kind: RecordKind::Approve,
            gate: Some(wait.gate.word().to_string()),
            who: approvals::who(),
            when: approvals::now(),
            note: args.note.clone(),
            reason: None,
            artifacts: decided_on(&node.dir, &node.snap, wait.gate),
            phase: None,
            rejected: None,
        };
        approvals::append(&node.dir, &record)?;
        out::println(format_args!(
            "Approved {} of {} by {}{}",
            wait.gate.word(),
            node.rel,
            record.who,
            held_to(&record.artifacts)
        ))?;
    }
    out::println(format_args!("Next:\n{next}"))?;
    Ok(exit::OK)
}

/// The way on after approving the gates of `waiting`: an approved merge is taken by `merge`
/// (a run has nothing left to do for a complete task); any other gate, by the run.
fn way_on(tree: &TaskTree, waiting: &[usize], rel: &str, prefix: &str) -> String {
    let gate = |i: usize| tree.nodes[i].approval.as_ref().map(|w| w.gate);
    if waiting.iter().all(|&i| gate(i) == Some(Gate::Merge)) {
        let merges: Vec<String> = waiting
            .iter()
            .map(|&i| format!("  {prefix} merge {}", tree.nodes[i].rel))
            .collect();
        merges.join("\n")
    } else {
        format!("  {prefix} orchestrate --task {rel}")
    }
}

/// What an approval holds to, for its line: each artifact's SHA-256, and for the merge gate
/// the branch's tip (a git commit id, not a SHA-256), shortened as git does.
fn held_to(artifacts: &std::collections::BTreeMap<String, String>) -> String {
    let covers: Vec<String> = artifacts
        .iter()
        .map(|(name, h)| match name.strip_prefix("branch ") {
            Some(branch) => format!("branch {branch} at {}", &h[..12]),
            None => format!("{name} sha256 {}", &h[..12]),
        })
        .collect();
    if covers.is_empty() {
        String::new()
    } else {
        format!(" ({})", covers.join(", "))
    }
}

/// The first free `<dir>/<stem>-<n>.md`.
fn free_name(dir: &Path, stem: &str) -> String {
    (1..)
        .map(|n| format!("{stem}-{n}.md"))
        .find(|name| !dir.join(name).exists())
        .unwrap_or_else(|| format!("{stem}.md"))
}

pub fn reject_command(ctx: &Ctx, args: &RejectArgs) -> super::Result<u8> {
    if args.reason.trim().is_empty() {
        return Err(Error::Usage("--reason must say why".into()));
    }
    let _lock = take_lock(ctx)?;
    let (settings, rel, tree) = load(ctx, &args.task)?;
    let node = &tree.nodes[0];
    let newest = match node.approval.as_ref().map(|w| w.gate) {
        // The branch goes back for a rework round, its artifacts set aside there.
        Some(Gate::Merge) => {
            return super::gates_reject::reject_merge(ctx, &settings, &rel, node, &args.reason);
        }
        // The plan goes back to the decomposition phase.
        Some(Gate::Subtasks) => Some(Artifact::Decomposition),
        _ => node.snap.artifacts.highest(),
    };
    let Some(newest) = newest else {
        return Err(Error::Input(format!("{rel} has no artifact to reject")));
    };
    let phase = Phase::ALL
        .into_iter()
        .find(|p| p.artifact() == newest)
        .unwrap_or(Phase::Research);
    let name = newest.file_name();
    let src = node.dir.join(name);
    let hash = approvals::sha256_file(&src).unwrap_or_default();
    let rejected_dir = node.dir.join("logs/rejected");
    fs::create_dir_all(&rejected_dir)?;
    let kept = free_name(&rejected_dir, name.trim_end_matches(".md"));
    // Move first: a crash before the record leaves the artifact kept, never lost.
    fs::rename(&src, rejected_dir.join(&kept))?;
    let rejected = format!("logs/rejected/{kept}");
    approvals::append(
        &node.dir,
        &Record {
            v: APPROVALS_VERSION,
            kind: RecordKind::Reject,
            gate: node.approval.as_ref().map(|w| w.gate.word().to_string()),
            who: approvals::who(),
            when: approvals::now(),
            note: None,
            reason: Some(args.reason.clone()),
            artifacts: [(name.to_string(), hash)].into(),
            phase: Some(phase.word().to_string()),
            rejected: Some(rejected.clone()),
        },
    )?;
    inputs::forget(&node.dir, &[name])?;
    let state = reset_state(ctx, &settings, &rel)?;
    let prefix = ctx.command_prefix();
    out::println(format_args!(
        "Rejected {name} of {rel}: kept at {rel}/{rejected}; {} runs again with your reason (state `{state}`)\nNext:\n  {prefix} orchestrate --task {rel}",
        phase.word()
    ))?;
    Ok(exit::OK)
}

/// Write `.state` as the artifacts now decide it; returns the word.
pub(super) fn reset_state(
    ctx: &Ctx,
    settings: &Settings,
    rel: &str,
) -> super::Result<&'static str> {
    let tree = TaskTree::load_task(&ctx.project, rel, &phase_config(settings));
    let node = tree
        .nodes
        .first()
        .ok_or_else(|| Error::Input(format!("task folder {rel} disappeared")))?;
    write_state(&node.dir, node.state())?;
    Ok(node.state().word())
}

pub fn rerun_command(ctx: &Ctx, args: &RerunArgs) -> super::Result<u8> {
    let from = match Phase::parse_list(&args.from).map_err(Error::Input)?[..] {
        [phase] => phase,
        _ => return Err(Error::Usage("--from takes one phase word".into())),
    };
    let _lock = take_lock(ctx)?;
    let (settings, rel, tree) = load(ctx, &args.task)?;
    let dir = &tree.nodes[0].dir;
    let moving: Vec<&'static str> = Artifact::ALL
        .into_iter()
        .filter(|a| *a >= from.artifact())
        .map(Artifact::file_name)
        .filter(|name| dir.join(name).exists())
        .collect();
    if moving.is_empty() {
        return Err(Error::Input(format!(
            "{rel} has no {} or later artifact: nothing to rerun",
            from.artifact().file_name()
        )));
    }
    let superseded = dir.join("logs/superseded");
    let n = (1..)
        .find(|n| !superseded.join(n.to_string()).exists())
        .unwrap_or(1);
    let to = superseded.join(n.to_string());
    fs::create_dir_all(&to)?;
    for name in &moving {
        fs::rename(dir.join(name), to.join(name))?;
    }
    inputs::forget(dir, &moving)?;
    clear_stop(dir)?;
    let state = reset_state(ctx, &settings, &rel)?;
    let prefix = ctx.command_prefix();
    out::println(format_args!(
        "Moved {} to {rel}/logs/superseded/{n}/; {rel} is back at `{state}`\nNext:\n  {prefix} orchestrate --task {rel}",
        moving.join(", ")
    ))?;
    Ok(exit::OK)
}
