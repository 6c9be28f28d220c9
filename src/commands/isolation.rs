//! `automaton merge` and `automaton clean`: handing an isolated task's work over, and removing
//! what finished tasks left behind. Both refuse (exit 21) rather than lose or overwrite work.

use super::{Ctx, Error, out};
use crate::cli::{CleanArgs, MergeArgs};
use crate::exit;
use crate::git::{Merge, Repo};
use crate::plan::gate::Gate;
use crate::report::phase_config;
use crate::run::clean::{Kept, clean_one, clean_plan, within};
use crate::settings::Settings;
use crate::state::State;
use crate::store::isolation;
use crate::task::TaskTree;

fn repo(ctx: &Ctx) -> super::Result<Repo> {
    Repo::discover(&ctx.project).ok_or_else(|| {
        Error::Input(format!(
            "{} is not in a git work tree with a commit; merge and clean work on isolated tasks",
            ctx.project.display()
        ))
    })
}

pub fn merge_command(ctx: &Ctx, args: &MergeArgs) -> super::Result<u8> {
    let rel = ctx.task_path(&args.task)?;
    if rel.contains("/subtasks/") {
        return Err(Error::Input(format!(
            "{rel} is a sub-task: its branch is merged into its parent's integration branch; \
             merge the top-level task"
        )));
    }
    let settings = Settings::load(&ctx.project)?;
    // A run makes, commits in and merges worktrees: git is not run beside it.
    let _lock = super::gates::take_lock(ctx)?;
    let mut tree = TaskTree::load_task(&ctx.project, &rel, &phase_config(&settings));
    tree.apply_gates(&crate::report::approval_gates(&settings));
    let Some(node) = tree.nodes.first() else {
        return Err(Error::Input(format!("no task folder {rel}")));
    };
    let Some(rec) = isolation::read(&node.dir) else {
        if let Some(c) = isolation::read_cleaned(&node.dir) {
            return merged_and_cleaned(ctx, &rel, &c);
        }
        return Err(Error::Input(format!(
            "{rel} has no branch: it ran without isolation (its work is already in the project)"
        )));
    };
    if node.state() != State::Complete {
        return Err(Error::Refused(format!(
            "{rel} is not complete (state {}); its branch {} is not ready to merge",
            node.state(),
            rec.branch
        )));
    }
    if let Some(wait) = node.approval.as_ref().filter(|w| w.gate == Gate::Merge) {
        let lapsed = wait.lapsed_note();
        let prefix = ctx.command_prefix();
        return Err(Error::AwaitingApproval(format!(
            "{rel} waits for approval before its branch {} is merged (`- **Approve before**: \
             merge`){lapsed}; `{prefix} status` shows what it changes; approve it with \
             `{prefix} approve {rel}`, or send it back with `{prefix} reject {rel} --reason \
             '...'`",
            rec.branch
        )));
    }
    let repo = repo(ctx)?;
    let Some(current) = repo.current_branch() else {
        return Err(Error::Refused(
            "the project root is on a detached HEAD: check out the branch to merge into".into(),
        ));
    };
    // status, the merge gate and clean all ask whether the branch is in the task's base
    // branch: merged into another, it would be offered for merging again, and kept by clean.
    if let Some(base) = rec.base_branch.as_ref().filter(|b| **b != current) {
        return Err(Error::Refused(format!(
            "{rel} was branched from {base}, and {current} is checked out: check out {base} to \
             merge it there (status and clean measure it against {base}), or take it into \
             {current} by hand with `git merge {}`",
            rec.branch
        )));
    }
    let dirty = repo.uncommitted(&repo.top)?;
    if !dirty.is_empty() {
        return Err(Error::Refused(format!(
            "the project root has uncommitted changes ({}); commit or stash them first",
            dirty.join(", ")
        )));
    }
    let how = match repo.merge(&repo.top, &rec.branch)? {
        Merge::Conflict(files) => {
            return Err(Error::Refused(format!(
                "merging {} into {current} conflicts in {}; the merge was aborted and nothing \
                 changed: merge it by hand with `git merge {}`",
                rec.branch,
                files.join(", "),
                rec.branch
            )));
        }
        Merge::Blocked(files) => {
            return Err(Error::Refused(format!(
                "merging {} into {current} would overwrite untracked files ({}); git did not \
                 start the merge and nothing changed: move or remove them, then run merge again",
                rec.branch,
                files.join(", ")
            )));
        }
        Merge::UpToDate => "already merged",
        Merge::FastForward => "fast-forward",
        Merge::Merged => "merge commit",
    };
    if !repo.is_ancestor(&rec.branch, "HEAD")? {
        return Err(Error::Input(format!(
            "after the merge, {} is not an ancestor of {current}",
            rec.branch
        )));
    }
    out::println(format_args!("merged {} into {current} ({how})", rec.branch))?;
    Ok(exit::OK)
}

/// `merge` of a task `clean` removed: its branch was merged (into `c.merged_into`) before it
/// was removed, so there is nothing to merge; refused when the branch checked out now lacks
/// that work.
fn merged_and_cleaned(ctx: &Ctx, rel: &str, c: &isolation::CleanedRecord) -> super::Result<u8> {
    let branch = &c.isolation.branch;
    let into = &c.merged_into;
    if let (Some(tip), Some(repo)) = (&c.tip, Repo::discover(&ctx.project))
        && !repo.is_ancestor(tip, "HEAD").unwrap_or(false)
    {
        let here = repo
            .current_branch()
            .unwrap_or_else(|| "the detached HEAD".into());
        return Err(Error::Refused(format!(
            "{rel} was merged into {into} and cleaned (branch {branch} and its worktree were \
             removed), but {here} does not have its work ({tip}): check out {into}"
        )));
    }
    out::println(format_args!(
        "{rel} was merged into {into} and cleaned (branch {branch} and its worktree were \
         removed): nothing to merge"
    ))?;
    Ok(exit::OK)
}

pub fn clean_command(ctx: &Ctx, args: &CleanArgs) -> super::Result<u8> {
    let only = match &args.task {
        Some(t) => Some(ctx.task_path(t)?),
        None => None,
    };
    let settings = Settings::load(&ctx.project)?;
    // Worktrees a run is making or working in are not removed under it; a dry run removes
    // nothing and may look while one runs.
    let _lock = (!args.dry_run)
        .then(|| super::gates::take_lock(ctx))
        .transpose()?;
    let tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    let repo = repo(ctx)?;
    // Everything is read and decided before anything is removed.
    let plan = clean_plan(&repo, &ctx.project, &tree, only.as_deref())
        .map_err(crate::run::RunError::from)?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut removed = Vec::new();
    let mut kept = plan.kept.clone();
    for r in &plan.remove {
        // A parent goes only after all its sub-tasks went.
        if let Some(child) = kept.iter().find(|k| within(&k.task, &r.task)) {
            let reason = format!("its sub-task {} is kept", child.task);
            kept.push(Kept {
                task: r.task.clone(),
                reason,
                short: "a sub-task is kept".into(),
            });
            continue;
        }
        if !args.dry_run
            && let Err(e) = clean_one(&repo, &ctx.project, r)
        {
            kept.push(Kept {
                task: r.task.clone(),
                reason: format!("could not be removed: {e}"),
                short: "could not be removed".into(),
            });
            continue;
        }
        out::println(format_args!(
            "{verb} {}: worktree {} and branch {}",
            r.task,
            r.worktree.display(),
            r.branch
        ))?;
        removed.push(r.task.clone());
    }
    if !args.dry_run {
        // Registered worktrees whose folders are gone.
        repo.prune()?;
    }
    for line in &plan.orphans {
        out::println(format_args!("orphan (kept): {line}"))?;
    }
    for k in &kept {
        out::println(format_args!("kept {}: {}", k.task, k.reason))?;
    }
    let (line, code) = clean_summary(args.dry_run, removed.len(), &kept);
    out::println(&line)?;
    Ok(code)
}

/// The last line of `clean` and its exit code: 0 when it removed everything it found finished
/// (or there was nothing), [`exit::CLEAN_PARTIAL`] when it removed some and kept others,
/// [`exit::REFUSED`] when it kept all and removed nothing.
fn clean_summary(dry_run: bool, removed: usize, kept: &[Kept]) -> (String, u8) {
    let tasks = |n: usize| format!("{n} task{}", if n == 1 { "" } else { "s" });
    let verb = if dry_run { "would remove" } else { "removed" };
    let why = kept
        .iter()
        .map(|k| format!("{} ({})", k.task, k.short))
        .collect::<Vec<_>>()
        .join(", ");
    match (removed, kept.len()) {
        (0, 0) => ("nothing to clean".into(), exit::OK),
        (n, 0) => (format!("clean: {verb} all ({})", tasks(n)), exit::OK),
        (0, k) => (
            format!("clean: {verb} nothing; kept {}: {why}", tasks(k)),
            exit::REFUSED,
        ),
        (n, k) => (
            format!("clean: {verb} {}, kept {}: {why}", tasks(n), tasks(k)),
            exit::CLEAN_PARTIAL,
        ),
    }
}
