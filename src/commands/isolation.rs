//! `automaton merge` and `automaton clean`: handing an isolated task's work over, and removing
//! what finished tasks left behind. Both refuse (exit 21) rather than lose or overwrite work.

use super::{Ctx, Error, out};
use crate::cli::{CleanArgs, MergeArgs};
use crate::git::{Merge, Repo};
use crate::report::phase_config;
use crate::run::isolation::{clean_one, clean_plan};
use crate::settings::Settings;
use crate::state::State;
use crate::store::isolation;
use crate::task::TaskTree;
use crate::{exit, names};

fn repo(ctx: &Ctx) -> super::Result<Repo> {
    Repo::discover(&ctx.project).ok_or_else(|| {
        Error::Input(format!(
            "{} is not in a git work tree with a commit; merge and clean work on isolated tasks",
            ctx.project.display()
        ))
    })
}

pub fn merge_command(ctx: &Ctx, args: &MergeArgs) -> super::Result<u8> {
    let rel = names::task_path(&args.task).map_err(Error::Input)?;
    if rel.contains("/subtasks/") {
        return Err(Error::Input(format!(
            "{rel} is a sub-task: its branch is merged into its parent's integration branch; \
             merge the top-level task"
        )));
    }
    let settings = Settings::load(&ctx.project)?;
    let tree = TaskTree::load_task(&ctx.project, &rel, &phase_config(&settings));
    let Some(node) = tree.nodes.first() else {
        return Err(Error::Input(format!("no task folder {rel}")));
    };
    let Some(rec) = isolation::read(&node.dir) else {
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
    let repo = repo(ctx)?;
    let Some(current) = repo.current_branch() else {
        return Err(Error::Refused(
            "the project root is on a detached HEAD: check out the branch to merge into".into(),
        ));
    };
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

pub fn clean_command(ctx: &Ctx, args: &CleanArgs) -> super::Result<u8> {
    let only = match &args.task {
        Some(t) => Some(names::task_path(t).map_err(Error::Input)?),
        None => None,
    };
    let settings = Settings::load(&ctx.project)?;
    let tree = TaskTree::load(&ctx.project, &phase_config(&settings));
    let repo = repo(ctx)?;
    let plan = clean_plan(&repo, &ctx.project, &tree, only.as_deref())
        .map_err(crate::run::RunError::from)?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for r in &plan.remove {
        if !args.dry_run {
            clean_one(&repo, &ctx.project, r).map_err(crate::run::RunError::from)?;
        }
        out::println(format_args!(
            "{verb} {}: worktree {} and branch {}",
            r.task,
            r.worktree.display(),
            r.branch
        ))?;
    }
    if !args.dry_run {
        // Registered worktrees whose folders are gone.
        repo.prune()?;
    }
    for line in &plan.orphans {
        out::println(format_args!("orphan (kept): {line}"))?;
    }
    if plan.remove.is_empty() && plan.refused.is_empty() {
        out::println("nothing to clean")?;
    }
    if plan.refused.is_empty() {
        return Ok(exit::OK);
    }
    for line in &plan.refused {
        eprintln!("refused: {line}");
    }
    Ok(exit::REFUSED)
}
