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

/// The `- **Isolation**:` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Worktree,
    None,
}

impl Mode {
    pub const WORDS: [&'static str; 3] = ["auto", "worktree", "none"];

    /// The mode a setting word asks for in `project`: `auto` is `worktree` inside a git work
    /// tree with at least one commit, `none` elsewhere.
    pub fn resolve(word: &str, project: &Path) -> Mode {
        match word {
            "worktree" => Mode::Worktree,
            "none" => Mode::None,
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
        // A merge a crash cut short leaves MERGE_HEAD: abort it, the merge is redone.
        self.repo.abort_unfinished_merge(&worktree)?;
        Ok(self.workspace(worktree, record.branch))
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
        let merged = self.repo.merge(&parent.worktree, &sub.branch)?;
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
