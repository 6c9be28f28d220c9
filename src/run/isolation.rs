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
        self.commit_leftovers(&worktree, rel)?;
        Ok(self.workspace(worktree, record.branch))
    }

    /// Commit the work a run killed between a phase's `git add` and its `git commit` (or just
    /// before them) left in a task's worktree, so that no finished phase's work stays staged
    /// where a merge-back would leave it behind. Run after [`Self::reconcile_worktree`], which
    /// has dropped what an interrupted merge left: what remains is the phases' own work.
    fn commit_leftovers(&self, worktree: &Path, rel: &str) -> Result<(), IsolationError> {
        let message = format!("automaton: {rel} (work left uncommitted by an interrupted run)");
        self.repo.commit_all(worktree, &message)?;
        Ok(())
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
    pub fn merge_back(
        &self,
        sub_rel: &str,
        sub: &Workspace,
        parent: &Workspace,
    ) -> Result<Merge, IsolationError> {
        let _git = self.locked();
        // A sub-task found complete by a rerun may still hold its last phase's work uncommitted.
        if sub.worktree.is_dir() {
            self.reconcile_worktree(&sub.worktree)?;
            self.commit_leftovers(&sub.worktree, sub_rel)?;
        }
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
        if !matches!(merged, Merge::Conflict(_) | Merge::Blocked(_))
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

/// Whether `path` lies under `root` (either may be spelled through a symlink).
pub(super) fn same_dir_prefix(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
        || match (path.canonicalize(), root.canonicalize()) {
            (Ok(p), Ok(r)) => p.starts_with(r),
            _ => false,
        }
}

pub(super) fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok() == b.canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
