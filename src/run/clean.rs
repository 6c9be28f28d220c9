//! `automaton clean`: which isolated tasks' worktrees and branches may go, decided whole
//! before anything is removed (a pure plan from facts read from git), then removed children
//! before parents, never forced.

use super::isolation::{IsolationError, WORKTREES_DIR, same_dir};
use crate::git::Repo;
use crate::store::isolation::{self, IsolationRecord};
use std::path::{Path, PathBuf};

/// A branch a task's work may have reached: its parent's integration branch, or the branch
/// that one's work went on to (the base branch the top-level task started from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub branch: String,
    /// Whether the task's branch is an ancestor of it (or the task's branch is gone).
    pub merged: bool,
    /// A worktree that has it checked out, where `git branch -d` checks against it.
    pub checkout: Option<PathBuf>,
}

/// What `clean` knows of one task with a `.isolation` record, all read before anything is
/// decided.
#[derive(Debug, Clone)]
pub struct CleanFacts {
    pub task: String,
    pub state: crate::state::State,
    pub record: IsolationRecord,
    /// Whether `clean` was asked about it (`clean TASK`: that task and its sub-tasks).
    pub in_scope: bool,
    pub worktree_exists: bool,
    pub dirty: bool,
    /// The branch's commit; `None` when it no longer exists.
    pub tip: Option<String>,
    /// Where its work may have gone, nearest first.
    pub targets: Vec<Target>,
}

/// One complete, merged task's worktree and branch to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub task: String,
    pub worktree: PathBuf,
    pub worktree_exists: bool,
    pub branch: String,
    pub tip: Option<String>,
    /// The branch it was found merged into.
    pub merged_into: String,
    /// A checkout of `merged_into` (`git branch -d` checks against it); `None` when the
    /// branch is gone already.
    pub checkout: Option<PathBuf>,
    pub record: IsolationRecord,
}

/// A task `clean` keeps, and why (a sentence, and a few words for the last line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub task: String,
    pub reason: String,
    pub short: String,
}

/// What `automaton clean` does: remove these (sub-tasks before their parents), keep those.
#[derive(Debug, Default)]
pub struct CleanPlan {
    pub remove: Vec<Removal>,
    pub kept: Vec<Kept>,
    /// Worktrees under `.automaton/worktrees/` and `automaton/*` branches no task owns.
    pub orphans: Vec<String>,
}

/// Whether `task` is `ancestor` or lies under it.
pub fn within(task: &str, ancestor: &str) -> bool {
    task == ancestor || task.starts_with(&format!("{ancestor}/"))
}

fn depth(task: &str) -> usize {
    task.matches("/subtasks/").count()
}

/// Decide, from the facts alone, what to remove and what to keep: only a complete task whose
/// worktree is clean and whose branch is merged into a branch its work reached is removed, and
/// a task is kept while any of its sub-tasks is. Deepest first.
pub fn decide_clean(facts: &[CleanFacts]) -> (Vec<Removal>, Vec<Kept>) {
    use crate::state::State;
    let mut order: Vec<&CleanFacts> = facts.iter().filter(|f| f.in_scope).collect();
    order.sort_by_key(|f| std::cmp::Reverse(depth(&f.task)));
    let mut remove = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    for f in order {
        let branch = &f.record.branch;
        let keep = |reason: String, short: &str| Kept {
            task: f.task.clone(),
            reason,
            short: short.to_string(),
        };
        let names = || {
            f.targets
                .iter()
                .map(|t| t.branch.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        };
        let chosen = f.targets.iter().find(|t| t.merged && t.checkout.is_some());
        let decided = if f.state == State::HumanIntervention {
            Err(keep(
                "stopped for a person: its worktree and .isolation stay for the resume".into(),
                "stopped for a person",
            ))
        } else if f.state != State::Complete {
            Err(keep(
                format!("not complete (state {})", f.state),
                "not complete",
            ))
        } else if f.dirty {
            Err(keep(
                format!(
                    "worktree {} has uncommitted or untracked changes",
                    f.record.worktree
                ),
                "uncommitted changes",
            ))
        } else if let Some(child) = kept.iter().find(|k| within(&k.task, &f.task)) {
            Err(keep(
                format!("its sub-task {} is kept", child.task),
                "a sub-task is kept",
            ))
        } else if f.tip.is_none() {
            Ok(None)
        } else if f.targets.is_empty() || !f.targets.iter().any(|t| t.merged) {
            let hint = if depth(&f.task) == 0 {
                format!("; `automaton merge {}` merges it", f.task)
            } else {
                String::new()
            };
            let into = if f.targets.is_empty() {
                "any branch (none is checked out)".to_string()
            } else {
                names()
            };
            Err(keep(
                format!("branch {branch} is not merged into {into}{hint}"),
                "not merged",
            ))
        } else if let Some(t) = chosen {
            Ok(Some(t))
        } else {
            let t = f.targets.iter().find(|t| t.merged).map(|t| &t.branch);
            let t = t.cloned().unwrap_or_default();
            Err(keep(
                format!(
                    "branch {branch} is merged into {t}, which no worktree has checked out; \
                     check {t} out in the project root to delete {branch}"
                ),
                "its branch's target is not checked out",
            ))
        };
        match decided {
            Err(k) => kept.push(k),
            Ok(target) => remove.push(Removal {
                task: f.task.clone(),
                worktree: PathBuf::from(&f.record.worktree),
                worktree_exists: f.worktree_exists,
                branch: branch.clone(),
                tip: f.tip.clone(),
                merged_into: target
                    .or(f.targets.first())
                    .map(|t| t.branch.clone())
                    .unwrap_or_default(),
                checkout: target.and_then(|t| t.checkout.clone()),
                record: f.record.clone(),
            }),
        }
    }
    (remove, kept)
}

/// The branches a task's work reaches, nearest first: its parent's integration branch (or,
/// once the parent was cleaned, the branch the parent's work was found merged into), then
/// wherever the parent's work reaches; for a top-level task the branch it started from
/// (else the branch checked out in the project root).
fn reached(repo: &Repo, tree: &crate::task::TaskTree, i: usize) -> Vec<String> {
    let node = &tree.nodes[i];
    let mut out = Vec::new();
    match node.parent {
        Some(p) => {
            let parent = &tree.nodes[p];
            if let Some(r) = isolation::read(&parent.dir) {
                out.push(r.branch);
            } else if let Some(c) = isolation::read_cleaned(&parent.dir) {
                out.push(c.merged_into);
            }
            out.extend(reached(repo, tree, p));
        }
        None => {
            let cleaned = isolation::read_cleaned(&node.dir);
            let base = isolation::read(&node.dir)
                .and_then(|r| r.base_branch)
                .or_else(|| cleaned.as_ref().map(|c| c.merged_into.clone()))
                .or_else(|| cleaned.and_then(|c| c.isolation.base_branch));
            out.extend(base.or_else(|| repo.current_branch()));
        }
    }
    let mut seen = Vec::new();
    out.retain(|b| {
        let new = !b.is_empty() && !seen.contains(b);
        seen.push(b.clone());
        new
    });
    out
}

/// Read what [`decide_clean`] needs of every task with a `.isolation` record (`only`: the
/// tasks in scope are that one and its sub-tasks), and list the orphans. Nothing is changed.
pub fn clean_facts(
    repo: &Repo,
    project: &Path,
    tree: &crate::task::TaskTree,
    only: Option<&str>,
) -> Result<(Vec<CleanFacts>, Vec<String>), IsolationError> {
    let checkouts: Vec<(PathBuf, String)> = repo
        .worktrees()?
        .into_iter()
        .filter_map(|(path, b)| Some((path, b?)))
        .filter(|(path, _)| path.is_dir())
        .collect();
    let mut facts = Vec::new();
    let mut owned_branches = Vec::new();
    let mut owned_worktrees = Vec::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        let Some(rec) = isolation::read(&node.dir) else {
            continue;
        };
        owned_branches.push(rec.branch.clone());
        owned_worktrees.push(PathBuf::from(&rec.worktree));
        let in_scope = only.is_none_or(|t| within(&node.rel, t));
        if !in_scope {
            continue;
        }
        let worktree = PathBuf::from(&rec.worktree);
        let worktree_exists = worktree.is_dir();
        let dirty = worktree_exists && repo.is_dirty(&worktree)?;
        let tip = repo.branch_tip(&rec.branch);
        let mut targets = Vec::new();
        for branch in reached(repo, tree, i) {
            if repo.branch_tip(&branch).is_none() {
                continue;
            }
            let merged = tip.is_none() || repo.is_ancestor(&rec.branch, &branch)?;
            let checkout = checkouts
                .iter()
                .find(|(_, b)| *b == branch)
                .map(|(p, _)| p.clone());
            targets.push(Target {
                branch,
                merged,
                checkout,
            });
        }
        facts.push(CleanFacts {
            task: node.rel.clone(),
            state: node.state(),
            record: rec,
            in_scope,
            worktree_exists,
            dirty,
            tip,
            targets,
        });
    }
    let mut orphans = Vec::new();
    let root = project.join(WORKTREES_DIR);
    for (path, branch) in repo.worktrees()? {
        if path.starts_with(&root) && !owned_worktrees.iter().any(|w| same_dir(w, &path)) {
            orphans.push(format!(
                "worktree {} ({}) belongs to no task",
                path.display(),
                branch.as_deref().unwrap_or("detached")
            ));
        }
    }
    for branch in repo.branches("automaton/")? {
        if !owned_branches.contains(&branch) {
            orphans.push(format!("branch {branch} belongs to no task"));
        }
    }
    Ok((facts, orphans))
}

/// Plan the clean-up: read every fact, then decide ([`decide_clean`]). Nothing is changed.
pub fn clean_plan(
    repo: &Repo,
    project: &Path,
    tree: &crate::task::TaskTree,
    only: Option<&str>,
) -> Result<CleanPlan, IsolationError> {
    let (facts, orphans) = clean_facts(repo, project, tree, only)?;
    let (remove, kept) = decide_clean(&facts);
    Ok(CleanPlan {
        remove,
        kept,
        orphans,
    })
}

/// Remove what a [`clean_plan`] lists for one task: the worktree (never forced), then the
/// branch with `git branch -d` in a checkout of the branch it is merged into, then record the
/// clean in `logs/isolation.cleaned` and remove `.isolation`. A crash in between leaves
/// `.isolation`, and the next `clean` finishes.
pub fn clean_one(repo: &Repo, project: &Path, r: &Removal) -> Result<(), IsolationError> {
    if r.worktree_exists && r.worktree.exists() {
        repo.remove_worktree(&r.worktree)?;
    }
    if repo.branch_tip(&r.branch).is_some() {
        let checkout = r.checkout.as_deref().unwrap_or(&repo.top);
        repo.delete_merged_branch(checkout, &r.branch)?;
    }
    let dir = project.join(&r.task);
    let io = |path: PathBuf| {
        move |source| IsolationError::Io {
            path: path.display().to_string(),
            source,
        }
    };
    let cleaned = isolation::CleanedRecord {
        isolation: r.record.clone(),
        merged_into: r.merged_into.clone(),
        tip: r.tip.clone(),
    };
    isolation::write_cleaned(&dir, &cleaned).map_err(io(dir.join(isolation::CLEANED_FILE)))?;
    let record = dir.join(isolation::ISOLATION_FILE);
    crate::fsx::remove_if_there(&record).map_err(io(record.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::isolation::branch_name;
    use crate::state::State;
    use crate::store::isolation::ISOLATION_VERSION;

    fn facts(task: &str, state: State, dirty: bool, merged: bool) -> CleanFacts {
        let branch = branch_name(task);
        CleanFacts {
            task: task.into(),
            state,
            record: IsolationRecord {
                v: ISOLATION_VERSION,
                worktree: format!("/w/{branch}"),
                branch,
                base: "c0".into(),
                base_branch: Some("main".into()),
            },
            in_scope: true,
            worktree_exists: true,
            dirty,
            tip: Some("c1".into()),
            targets: vec![Target {
                branch: "main".into(),
                merged,
                checkout: Some(PathBuf::from("/repo")),
            }],
        }
    }

    fn kept(k: &[Kept]) -> Vec<(&str, &str)> {
        k.iter()
            .map(|k| (k.task.as_str(), k.short.as_str()))
            .collect()
    }

    #[test]
    fn a_parent_is_kept_while_a_sub_task_is_and_children_go_first() {
        let all = [
            facts("tasks/p", State::Complete, false, true),
            facts("tasks/p/subtasks/a", State::Complete, false, true),
            facts("tasks/p/subtasks/b", State::Complete, true, true),
        ];
        let (remove, k) = decide_clean(&all);
        assert_eq!(
            remove.iter().map(|r| r.task.as_str()).collect::<Vec<_>>(),
            ["tasks/p/subtasks/a"]
        );
        assert_eq!(
            kept(&k),
            [
                ("tasks/p/subtasks/b", "uncommitted changes"),
                ("tasks/p", "a sub-task is kept")
            ]
        );
        let (remove, k) = decide_clean(&[all[1].clone(), all[0].clone()]);
        assert!(k.is_empty());
        assert_eq!(
            remove.iter().map(|r| r.task.as_str()).collect::<Vec<_>>(),
            ["tasks/p/subtasks/a", "tasks/p"]
        );
    }

    #[test]
    fn only_complete_merged_tasks_are_removed() {
        let (remove, k) = decide_clean(&[
            facts("tasks/a", State::HumanIntervention, false, true),
            facts(
                "tasks/b",
                State::Next(crate::state::Phase::Implement),
                false,
                true,
            ),
            facts("tasks/c", State::Complete, false, false),
        ]);
        assert!(remove.is_empty());
        assert_eq!(
            kept(&k),
            [
                ("tasks/a", "stopped for a person"),
                ("tasks/b", "not complete"),
                ("tasks/c", "not merged")
            ]
        );
    }
}
