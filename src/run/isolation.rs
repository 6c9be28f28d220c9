//! Task isolation (`- **Isolation**: worktree`): each top-level task runs on an integration
//! branch `automaton/<task>` in its own worktree; each sub-task on a branch made from the
//! integration branch's tip when it becomes ready, in its own worktree. A successful phase
//! commits what the agent changed; a passed sub-task is merged back into the integration
//! branch (confirmed with `merge-base --is-ancestor`) before anything that depends on it starts.
//! Worktrees live under `.automaton/worktrees/`, kept out of git by `.git/info/exclude`.
//!
//! Git operations on one repository are serialised by one lock: parallel sub-tasks finish at
//! the same time, and `worktree add` and merges must not interleave.

use crate::git::{Merge, Repo};
use crate::store::isolation::{self, ISOLATION_VERSION, IsolationRecord};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where automaton keeps worktrees, relative to the project root.
pub const WORKTREES_DIR: &str = ".automaton/worktrees";

/// The list (gitignore syntax, at the project root) of gitignored files copied into each new
/// worktree, e.g. `.env`.
pub const WORKTREE_INCLUDE: &str = ".worktreeinclude";

/// The mark, in a worktree's own git folder, that its set-up is done.
const SETUP_MARK: &str = "automaton-setup-done";

/// The mark, in the integration worktree's own git folder, of a merge-back under way
/// (`<branch> <head before>`): a run killed before it is removed left that merge unfinished.
const MERGE_MARK: &str = "automaton-merging";

/// The `- **Isolation**:` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Worktree,
    None,
}

impl Mode {
    pub const WORDS: [&'static str; 3] = ["auto", "worktree", "none"];

    /// The mode `- **Isolation**` asks for in `project`: `auto` is `worktree` inside a git
    /// work tree with at least one commit, `none` elsewhere.
    pub fn resolve(choice: super::config::IsolationChoice, project: &Path) -> Mode {
        use super::config::IsolationChoice;
        match choice {
            IsolationChoice::Worktree => Mode::Worktree,
            IsolationChoice::None => Mode::None,
            // No `.git` above the project: not a repository, and no git process spawned.
            _ if !project.ancestors().any(|d| d.join(".git").exists()) => Mode::None,
            _ if Repo::discover(project).is_some() => Mode::Worktree,
            _ => Mode::None,
        }
    }
}

/// Where one task's agent works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub worktree: PathBuf,
    /// The agent's working directory: the project's sub-folder inside the worktree.
    pub cwd: PathBuf,
    pub branch: String,
}

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("isolation is `worktree` but {0} is not in a git work tree with a commit")]
    NoRepo(String),
    /// `.worktreeinclude` could not be read or parsed.
    #[error("{0}")]
    Include(String),
}

/// The isolation of one run.
pub struct Isolation {
    pub repo: Repo,
    project: PathBuf,
    git_lock: Mutex<()>,
}

/// The branch of a task: `tasks/auth` → `automaton/auth`, `tasks/auth/subtasks/login` →
/// `automaton/auth--login` (git cannot hold both `a` and `a/b` as branches; names are kebab-case,
/// so `--` never occurs inside one).
pub fn branch_name(rel: &str) -> String {
    let path = rel
        .strip_prefix(".automaton/tasks/")
        .or_else(|| rel.strip_prefix("tasks/"))
        .unwrap_or(rel);
    format!("automaton/{}", path.replace("/subtasks/", "--"))
}

impl Isolation {
    pub fn new(project: &Path) -> Result<Isolation, IsolationError> {
        let repo = Repo::discover(project)
            .ok_or_else(|| IsolationError::NoRepo(project.display().to_string()))?;
        let prefix = repo.prefix.join(WORKTREES_DIR);
        repo.exclude(&format!("/{}/", prefix.display()))?;
        Ok(Isolation {
            repo,
            project: project.to_path_buf(),
            git_lock: Mutex::new(()),
        })
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, ()> {
        self.git_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn worktree_path(&self, branch: &str) -> PathBuf {
        let name = branch.trim_start_matches("automaton/");
        self.project.join(WORKTREES_DIR).join(name)
    }

    fn workspace(&self, worktree: PathBuf, branch: String) -> Workspace {
        Workspace {
            cwd: worktree.join(&self.repo.prefix),
            worktree,
            branch,
        }
    }

    /// The workspace of a task, made on first use: a top-level task branches from the commit
    /// checked out in the project root; a sub-task from its parent's branch tip, now. The
    /// record in the task folder makes a rerun find the same branch and worktree.
    pub fn prepare(
        &self,
        rel: &str,
        task_dir: &Path,
        parent_rel: Option<&str>,
    ) -> Result<Workspace, IsolationError> {
        let _git = self.locked();
        let record = match isolation::read(task_dir) {
            Some(r) => r,
            None => {
                let branch = branch_name(rel);
                let (base, base_branch) = match parent_rel {
                    Some(p) => {
                        let parent = branch_name(p);
                        let tip = self.repo.branch_tip(&parent).ok_or_else(|| {
                            crate::git::GitError::Failed {
                                args: format!("rev-parse {parent}"),
                                dir: self.repo.top.display().to_string(),
                                stderr: format!("the parent's branch {parent} does not exist"),
                            }
                        })?;
                        (tip, Some(parent))
                    }
                    None => (self.repo.head(&self.project)?, self.repo.current_branch()),
                };
                let r = IsolationRecord {
                    v: ISOLATION_VERSION,
                    worktree: self.worktree_path(&branch).display().to_string(),
                    branch,
                    base,
                    base_branch,
                };
                // Recorded before the worktree exists: a crash in between leaves a record that
                // the next run completes, never a second worktree.
                isolation::write(task_dir, &r).map_err(|source| IsolationError::Io {
                    path: task_dir
                        .join(isolation::ISOLATION_FILE)
                        .display()
                        .to_string(),
                    source,
                })?;
                r
            }
        };
        let worktree = PathBuf::from(&record.worktree);
        self.repo
            .ensure_worktree(&worktree, &record.branch, &record.base)?;
        self.reconcile_worktree(&worktree)?;
        Ok(self.workspace(worktree, record.branch))
    }

    /// Undo what a run killed mid-way (`kill -9`) left in one of automaton's worktrees: a git
    /// command's `index.lock` (under the project lock no other git of ours runs there), a merge
    /// with `MERGE_HEAD`, and the staged result of a merge-back that was not committed yet (the
    /// worktree was clean when that merge started, so its changes are the merge's). The branch
    /// never moves; the merge is made again by the caller. Returns whether anything was undone.
    fn reconcile_worktree(&self, worktree: &Path) -> Result<bool, IsolationError> {
        let undone = self.repo.undo_interrupted(worktree)?;
        let mark = self.repo.git_path(worktree, MERGE_MARK)?;
        let marked = mark.exists();
        if marked {
            self.repo.discard_merge_debris(worktree)?;
            std::fs::remove_file(&mark).map_err(|source| IsolationError::Io {
                path: mark.display().to_string(),
                source,
            })?;
        }
        Ok(undone || marked)
    }

    /// Reconcile every worktree under [`WORKTREES_DIR`] with what git says, before a run
    /// starts anything (see [`Isolation::prepare`] for one task's). Returns the worktrees
    /// where something was undone.
    pub fn reconcile(&self) -> Result<Vec<PathBuf>, IsolationError> {
        let _git = self.locked();
        let root = self.project.join(WORKTREES_DIR);
        let mut fixed = Vec::new();
        for (path, _) in self.repo.worktrees()? {
            if same_dir_prefix(&path, &root) && path.is_dir() && self.reconcile_worktree(&path)? {
                fixed.push(path);
            }
        }
        Ok(fixed)
    }

    /// Whether a workspace still needs its set-up (`.worktreeinclude` copies, the setup
    /// command): true for a new worktree until [`Isolation::mark_set_up`], also after a crash
    /// in between. The mark lives in the worktree's own git folder, so a worktree made again
    /// is set up again.
    pub fn needs_setup(&self, ws: &Workspace) -> Result<bool, IsolationError> {
        Ok(!self.repo.git_path(&ws.worktree, SETUP_MARK)?.exists())
    }

    /// Record that a workspace is set up.
    pub fn mark_set_up(&self, ws: &Workspace) -> Result<(), IsolationError> {
        let mark = self.repo.git_path(&ws.worktree, SETUP_MARK)?;
        crate::fsx::write_atomic(&mark, b"set up\n").map_err(|source| IsolationError::Io {
            path: mark.display().to_string(),
            source,
        })
    }

    /// Copy the gitignored files of the project root that `.worktreeinclude` (gitignore syntax,
    /// at the project root) lists into the workspace, at the same relative paths. Returns the
    /// files copied (relative to the project root); none without `.worktreeinclude`.
    pub fn copy_included(&self, ws: &Workspace) -> Result<Vec<PathBuf>, IsolationError> {
        let list = self.project.join(WORKTREE_INCLUDE);
        if !list.is_file() {
            return Ok(Vec::new());
        }
        let mut builder = ignore::gitignore::GitignoreBuilder::new(&self.project);
        if let Some(e) = builder.add(&list) {
            return Err(IsolationError::Include(format!("{}: {e}", list.display())));
        }
        let matcher = builder
            .build()
            .map_err(|e| IsolationError::Include(format!("{}: {e}", list.display())))?;
        let mut copied = Vec::new();
        let candidates = {
            let _git = self.locked();
            self.repo.ignored_files(&self.project)?
        };
        for rel in candidates {
            if rel.starts_with(WORKTREES_DIR) || rel.is_absolute() {
                continue;
            }
            let from = self.project.join(&rel);
            if !from.is_file()
                || !matcher
                    .matched_path_or_any_parents(&from, false)
                    .is_ignore()
            {
                continue;
            }
            let to = ws.cwd.join(&rel);
            let io = |source| IsolationError::Io {
                path: to.display().to_string(),
                source,
            };
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            std::fs::copy(&from, &to).map_err(|source| IsolationError::Io {
                path: to.display().to_string(),
                source,
            })?;
            copied.push(rel);
        }
        Ok(copied)
    }

    /// Commit what a phase changed in the workspace, if anything.
    pub fn commit_phase(
        &self,
        ws: &Workspace,
        rel: &str,
        phase: &str,
    ) -> Result<Option<String>, IsolationError> {
        let _git = self.locked();
        Ok(self
            .repo
            .commit_all(&ws.worktree, &format!("automaton: {rel} {phase}"))?)
    }

    /// Merge a passed sub-task's branch into its parent's integration branch, in the parent's
    /// worktree; `Ok(Merge::Conflict(files))` leaves the integration branch as it was.
    pub fn merge_back(&self, sub: &Workspace, parent: &Workspace) -> Result<Merge, IsolationError> {
        let _git = self.locked();
        if self.repo.is_ancestor(&sub.branch, &parent.branch)? {
            return Ok(Merge::UpToDate);
        }
        // Merge only into a clean worktree, so that a crash mid-merge leaves changes that are
        // all the merge's, which the next run can drop (see `reconcile_worktree`).
        if self.repo.is_dirty(&parent.worktree)? {
            let dirty = self.repo.uncommitted(&parent.worktree)?;
            return Err(crate::git::GitError::Failed {
                args: format!("merge {}", sub.branch),
                dir: parent.worktree.display().to_string(),
                stderr: format!(
                    "the integration worktree has uncommitted or untracked changes{}; commit \
                     or remove them first",
                    if dirty.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", dirty.join(", "))
                    }
                ),
            }
            .into());
        }
        let mark = self.repo.git_path(&parent.worktree, MERGE_MARK)?;
        let before = self.repo.head(&parent.worktree)?;
        crate::fsx::write_atomic(&mark, format!("{} {before}\n", sub.branch).as_bytes()).map_err(
            |source| IsolationError::Io {
                path: mark.display().to_string(),
                source,
            },
        )?;
        let merged = self.repo.merge(&parent.worktree, &sub.branch)?;
        let _ = std::fs::remove_file(&mark);
        if !matches!(merged, Merge::Conflict(_))
            && !self.repo.is_ancestor(&sub.branch, &parent.branch)?
        {
            return Err(crate::git::GitError::Failed {
                args: format!("merge-base --is-ancestor {} {}", sub.branch, parent.branch),
                dir: parent.worktree.display().to_string(),
                stderr: "the merged branch is not an ancestor of the integration branch".into(),
            }
            .into());
        }
        Ok(merged)
    }

    /// Whether a sub-task's branch is already in its parent's branch (merged by automaton, or
    /// by a person after a conflict).
    pub fn is_merged(&self, sub: &Workspace, parent: &Workspace) -> Result<bool, IsolationError> {
        let _git = self.locked();
        Ok(self.repo.is_ancestor(&sub.branch, &parent.branch)?)
    }
}

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

/// Whether `path` lies under `root` (either may be spelled through a symlink).
fn same_dir_prefix(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
        || match (path.canonicalize(), root.canonicalize()) {
            (Ok(p), Ok(r)) => p.starts_with(r),
            _ => false,
        }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok() == b.canonicalize().ok()
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
    use crate::state::State;

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

    #[test]
    fn branch_names_are_flat_and_unique_per_task() {
        assert_eq!(branch_name("tasks/auth"), "automaton/auth");
        assert_eq!(
            branch_name("tasks/auth/subtasks/login"),
            "automaton/auth--login"
        );
        assert_eq!(
            branch_name(".automaton/tasks/a/subtasks/b/subtasks/c"),
            "automaton/a--b--c"
        );
    }
}
