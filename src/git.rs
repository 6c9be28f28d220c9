//! The git operations task isolation needs, each one `git` command line: find the repository,
//! add worktrees and branches, commit an agent's work, merge a branch back, and check ancestry.
//! Nothing here rebases, resets, amends or forces, and nothing touches the checkout of the
//! project root except [`Repo::merge_into_checkout`], which the user asks for by name.
//!
//! Commits work without a configured identity: when `user.name`/`user.email` are unset, the
//! commit runs with `automaton <automaton@localhost>` for that one command.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A failed git command: its arguments and what it printed on stderr.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run `git {args}` in {dir}: {source}")]
    Spawn {
        args: String,
        dir: String,
        source: io::Error,
    },
    /// A file or folder next to a git command (a worktree's parent, `info/exclude`); the error
    /// names it.
    #[error(transparent)]
    File(#[from] io::Error),
    #[error("`git {args}` failed in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: String,
        stderr: String,
    },
}

pub type Result<T> = std::result::Result<T, GitError>;

/// Run git in `dir` and return its output, success or not.
fn git_output<I, S>(dir: &Path, args: I) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(&args)
        // Never wait on an editor or a credential prompt.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn {
            args: words(&args),
            dir: dir.display().to_string(),
            source,
        })
}

/// A git command line's arguments as one string, for errors.
fn words<S: AsRef<OsStr>>(args: &[S]) -> String {
    let words: Vec<_> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    words.join(" ")
}

/// Run git in `dir`; its trimmed stdout, or an error with its stderr.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_output(dir, args)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            dir: dir.display().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// How a merge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// The branch was already in (nothing to do).
    UpToDate,
    FastForward,
    /// A merge commit was made.
    Merged,
    /// The merge conflicted in these files and was aborted: nothing changed.
    Conflict(Vec<String>),
    /// The merge would overwrite these untracked files, and git did not start it: nothing
    /// changed.
    Blocked(Vec<String>),
}

/// What a branch changes, file by file ([`Repo::diff_summary`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffSummary {
    /// (path, inserted lines, deleted lines); a rename is named by its new path.
    pub files: Vec<(String, u64, u64)>,
}

impl DiffSummary {
    pub fn insertions(&self) -> u64 {
        self.files.iter().map(|f| f.1).sum()
    }

    pub fn deletions(&self) -> u64 {
        self.files.iter().map(|f| f.2).sum()
    }

    /// `git diff --numstat -z`: `ins\tdel\tpath\0`, or for a rename `ins\tdel\t\0old\0new\0`.
    fn parse_numstat_z(text: &str) -> DiffSummary {
        let mut files = Vec::new();
        let mut parts = text.split('\0');
        while let Some(head) = parts.next() {
            let mut cols = head.splitn(3, '\t');
            let (Some(ins), Some(del), Some(path)) = (cols.next(), cols.next(), cols.next()) else {
                continue;
            };
            let path = if path.is_empty() {
                // A rename: the old path, then the new one.
                let _old = parts.next();
                parts.next().unwrap_or_default().to_string()
            } else {
                path.to_string()
            };
            files.push((path, ins.parse().unwrap_or(0), del.parse().unwrap_or(0)));
        }
        DiffSummary { files }
    }
}

/// A git work tree that holds the project, with at least one commit.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The work tree's top folder.
    pub top: PathBuf,
    /// The project root relative to `top` (empty at the top; a monorepo sub-folder otherwise).
    pub prefix: PathBuf,
}

impl Repo {
    /// The repository holding `project`, if it is in a git work tree with at least one commit.
    pub fn discover(project: &Path) -> Option<Repo> {
        let top = git(project, &["rev-parse", "--show-toplevel"]).ok()?;
        git(
            project,
            &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        )
        .ok()?;
        let prefix = git(project, &["rev-parse", "--show-prefix"]).ok()?;
        Some(Repo {
            top: PathBuf::from(top),
            prefix: PathBuf::from(prefix.trim_end_matches('/')),
        })
    }

    /// A handle for ref queries (ancestry, tips, counts) from any folder inside the work tree,
    /// without the look-ups of [`Repo::discover`].
    pub fn at(dir: &Path) -> Repo {
        Repo {
            top: dir.to_path_buf(),
            prefix: PathBuf::new(),
        }
    }

    /// The commit checked out in `dir` (a worktree of this repository).
    pub fn head(&self, dir: &Path) -> Result<String> {
        git(dir, &["rev-parse", "HEAD"])
    }

    /// What changed in `dir` from commit `base` to HEAD: git's one-line summary (`2 files
    /// changed, 5 insertions(+)`) and the patch.
    pub fn diff_since(&self, dir: &Path, base: &str) -> Result<(String, String)> {
        let stat = git(dir, &["diff", "--shortstat", base, "HEAD"])?;
        let patch = git(dir, &["diff", base, "HEAD"])?;
        Ok((stat, patch))
    }

    /// What `branch` changes against `base` since they parted (`git diff --numstat
    /// base...branch`): each file with its inserted and deleted lines (0 and 0 for a binary
    /// file), in git's order.
    pub fn diff_summary(&self, base: &str, branch: &str) -> Result<DiffSummary> {
        let text = git(
            &self.top,
            &["diff", "--numstat", "-z", &format!("{base}...{branch}")],
        )?;
        Ok(DiffSummary::parse_numstat_z(&text))
    }

    /// The tip of a branch, if it exists.
    pub fn branch_tip(&self, branch: &str) -> Option<String> {
        git(
            &self.top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
        .ok()
    }

    /// The branch checked out in the project root, if any (detached HEAD: none).
    pub fn current_branch(&self) -> Option<String> {
        git(&self.top, &["symbolic-ref", "--quiet", "--short", "HEAD"]).ok()
    }

    /// Keep `pattern` out of `git status` through `.git/info/exclude` (never the user's
    /// `.gitignore`). Idempotent.
    pub fn exclude(&self, pattern: &str) -> Result<()> {
        let common = git(&self.top, &["rev-parse", "--git-common-dir"])?;
        let info = self.top.join(common).join("info");
        create_dir(&info)?;
        let file = info.join("exclude");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.lines().any(|l| l.trim() == pattern) {
            return Ok(());
        }
        let mut new = text;
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(pattern);
        new.push('\n');
        crate::fsx::write_atomic(&file, new.as_bytes())?;
        Ok(())
    }

    /// Worktrees git knows: (path, branch) pairs; a detached worktree has no branch.
    pub fn worktrees(&self) -> Result<Vec<(PathBuf, Option<String>)>> {
        let text = git(&self.top, &["worktree", "list", "--porcelain"])?;
        let mut out = Vec::new();
        for block in text.split("\n\n") {
            let mut path = None;
            let mut branch = None;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(p));
                } else if let Some(b) = line.strip_prefix("branch refs/heads/") {
                    branch = Some(b.to_string());
                }
            }
            if let Some(p) = path {
                out.push((p, branch));
            }
        }
        Ok(out)
    }

    /// Make sure `path` is a worktree with `branch` checked out, creating the branch at `start`
    /// when it does not exist. A worktree that already has the branch is reused (a rerun after
    /// a crash); a half-created folder git does not know is left for a human, never deleted.
    pub fn ensure_worktree(&self, path: &Path, branch: &str, start: &str) -> Result<()> {
        // A crash between `worktree add` and now leaves a registered worktree: reuse it.
        let _ = self.prune();
        if let Some((existing, _)) = self
            .worktrees()?
            .into_iter()
            .find(|(_, b)| b.as_deref() == Some(branch))
        {
            if same_path(&existing, path) {
                return Ok(());
            }
            return Err(GitError::Failed {
                args: format!("worktree add {}", path.display()),
                dir: self.top.display().to_string(),
                stderr: format!(
                    "branch {branch} is already checked out in {}",
                    existing.display()
                ),
            });
        }
        if let Some(parent) = path.parent() {
            create_dir(parent)?;
        }
        let p = path.to_string_lossy();
        if self.branch_tip(branch).is_some() {
            git(&self.top, &["worktree", "add", "--quiet", &p, branch])?;
        } else {
            git(
                &self.top,
                &["worktree", "add", "--quiet", "-b", branch, &p, start],
            )?;
        }
        Ok(())
    }

    /// Commit everything changed in a worktree (`git add -A`) with `message`; `None` when there
    /// was nothing to commit.
    pub fn commit_all(&self, worktree: &Path, message: &str) -> Result<Option<String>> {
        // One scan when nothing changed (most phases write only their artifact, which lives in
        // the task folder, outside the worktree).
        if git(
            worktree,
            &["status", "--porcelain", "--untracked-files=all"],
        )?
        .is_empty()
        {
            return Ok(None);
        }
        git(worktree, &["add", "-A"])?;
        let staged = git_output(worktree, ["diff", "--cached", "--quiet"])?;
        if staged.status.success() {
            return Ok(None);
        }
        let mut args: Vec<String> = identity_args(worktree);
        args.extend(["commit", "--quiet", "--no-verify", "-m", message].map(String::from));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        git(worktree, &refs)?;
        Ok(Some(self.head(worktree)?))
    }

    /// Whether commit-ish `a` is an ancestor of (or equal to) `b`.
    pub fn is_ancestor(&self, a: &str, b: &str) -> Result<bool> {
        let out = git_output(&self.top, ["merge-base", "--is-ancestor", a, b])?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(GitError::Failed {
                args: format!("merge-base --is-ancestor {a} {b}"),
                dir: self.top.display().to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }),
        }
    }

    /// Merge `branch` into what is checked out in `worktree`: fast-forward when possible, else a
    /// merge commit. A conflict is aborted (the worktree is left as it was) and its files named;
    /// so are the untracked files the merge would overwrite, which git refuses to start over.
    pub fn merge(&self, worktree: &Path, branch: &str) -> Result<Merge> {
        let head = self.head(worktree)?;
        let tip = self.branch_tip(branch).ok_or_else(|| GitError::Failed {
            args: format!("merge {branch}"),
            dir: worktree.display().to_string(),
            stderr: format!("no branch {branch}"),
        })?;
        if self.is_ancestor(&tip, &head)? {
            return Ok(Merge::UpToDate);
        }
        let fast_forward = self.is_ancestor(&head, &tip)?;
        let mut args: Vec<String> = Vec::new();
        if fast_forward {
            args.extend(["merge", "--quiet", "--ff-only", branch].map(String::from));
        } else {
            args = identity_args(worktree);
            args.extend(
                [
                    "merge",
                    "--quiet",
                    "--no-ff",
                    "--no-edit",
                    "-m",
                    &format!("automaton: merge {branch}"),
                    branch,
                ]
                .map(String::from),
            );
        }
        let out = git_output(worktree, &args)?;
        if out.status.success() {
            return Ok(if fast_forward {
                Merge::FastForward
            } else {
                Merge::Merged
            });
        }
        let conflicted = git(worktree, &["diff", "--name-only", "--diff-filter=U"])?;
        let files: Vec<String> = conflicted.lines().map(str::to_string).collect();
        if !files.is_empty() {
            // Leave the worktree exactly as it was before the merge.
            let _ = git(worktree, &["merge", "--abort"]);
            return Ok(Merge::Conflict(files));
        }
        let in_the_way = self.untracked_in(worktree, &tip)?;
        if !in_the_way.is_empty() {
            return Ok(Merge::Blocked(in_the_way));
        }
        // Any other failure (a hook refusing the merge commit, say) may have left the merge
        // half-done: undone, so the worktree is as it was before.
        let _ = self.abort_unfinished_merge(worktree);
        Err(GitError::Failed {
            args: args.join(" "),
            dir: worktree.display().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// The untracked files (not ignored: git overwrites those) in `worktree` that commit
    /// `tip` holds.
    fn untracked_in(&self, worktree: &Path, tip: &str) -> Result<Vec<String>> {
        let untracked = git(worktree, &["ls-files", "--others", "--exclude-standard"])?;
        if untracked.is_empty() {
            return Ok(Vec::new());
        }
        let in_tip = git(worktree, &["ls-tree", "-r", "--name-only", tip])?;
        let in_tip: std::collections::HashSet<&str> = in_tip.lines().collect();
        Ok(untracked
            .lines()
            .filter(|f| in_tip.contains(f))
            .map(str::to_string)
            .collect())
    }

    /// A merge left half-done by a crash (`MERGE_HEAD` present): abort it, so the branch is as it
    /// was before. Returns whether there was one.
    pub fn abort_unfinished_merge(&self, worktree: &Path) -> Result<bool> {
        let merging = git_output(worktree, ["rev-parse", "--verify", "--quiet", "MERGE_HEAD"])?;
        if !merging.status.success() {
            return Ok(false);
        }
        git(worktree, &["merge", "--abort"])?;
        Ok(true)
    }

    /// The path of `name` in a worktree's own git folder (`git rev-parse --git-path`): where a
    /// marker that lives and dies with that worktree is kept.
    pub fn git_path(&self, worktree: &Path, name: &str) -> Result<PathBuf> {
        let p = PathBuf::from(git(worktree, &["rev-parse", "--git-path", name])?);
        Ok(if p.is_absolute() { p } else { worktree.join(p) })
    }

    /// Undo what a git command killed mid-way (`kill -9` of automaton's process group) left in
    /// a worktree automaton owns: its `index.lock` (call this only under the project lock, with
    /// no git command of this run in that worktree) and a merge with `MERGE_HEAD` (aborted).
    /// One look-up of the worktree's git folder; whether anything was undone.
    pub fn undo_interrupted(&self, worktree: &Path) -> Result<bool> {
        let dir = PathBuf::from(git(worktree, &["rev-parse", "--absolute-git-dir"])?);
        let lock = remove_if_there(&dir.join("index.lock"))?;
        if !dir.join("MERGE_HEAD").exists() {
            return Ok(lock);
        }
        git(worktree, &["merge", "--abort"])?;
        Ok(true)
    }

    /// Untracked files that git ignores, below `dir`, relative to it
    /// (`git ls-files --others --ignored --exclude-standard`).
    pub fn ignored_files(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let out = git_output(
            dir,
            [
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
            ],
        )?;
        if !out.status.success() {
            return Err(GitError::Failed {
                args: "ls-files --others --ignored --exclude-standard".into(),
                dir: dir.display().to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| {
                use std::os::unix::ffi::OsStrExt;
                PathBuf::from(OsStr::from_bytes(p))
            })
            .collect())
    }

    /// Put a worktree's index and files back to its HEAD commit (`git reset --hard HEAD`: the
    /// branch does not move). Only for a worktree automaton owns whose changes are known to be
    /// those of its own merge that a crash cut short.
    pub fn discard_merge_debris(&self, worktree: &Path) -> Result<()> {
        git(worktree, &["reset", "--quiet", "--hard", "HEAD"])?;
        Ok(())
    }

    /// Whether a worktree has uncommitted or untracked changes.
    pub fn is_dirty(&self, worktree: &Path) -> Result<bool> {
        Ok(!git(worktree, &["status", "--porcelain"])?.is_empty())
    }

    /// Tracked files with uncommitted changes in a worktree (untracked files are not counted).
    pub fn uncommitted(&self, worktree: &Path) -> Result<Vec<String>> {
        let text = git(worktree, &["status", "--porcelain", "--untracked-files=no"])?;
        Ok(text
            .lines()
            .map(|l| l.get(3..).unwrap_or(l).to_string())
            .collect())
    }

    /// Commits on `branch` that `base` does not have.
    pub fn ahead(&self, base: &str, branch: &str) -> Result<u64> {
        let n = git(
            &self.top,
            &["rev-list", "--count", &format!("{base}..{branch}")],
        )?;
        Ok(n.parse().unwrap_or(0))
    }

    /// Forget registered worktrees whose folders are gone.
    pub fn prune(&self) -> Result<()> {
        git(&self.top, &["worktree", "prune"])?;
        Ok(())
    }

    /// Remove a clean worktree (never with force).
    pub fn remove_worktree(&self, path: &Path) -> Result<()> {
        git(&self.top, &["worktree", "remove", &path.to_string_lossy()])?;
        Ok(())
    }

    /// Delete a branch that is merged into what `checkout` (a worktree) has checked out
    /// (`git branch -d`, which checks exactly that; never `-D`).
    pub fn delete_merged_branch(&self, checkout: &Path, branch: &str) -> Result<()> {
        git(checkout, &["branch", "--quiet", "-d", branch])?;
        Ok(())
    }

    /// Branches under a prefix, e.g. `automaton/`.
    pub fn branches(&self, prefix: &str) -> Result<Vec<String>> {
        let text = git(
            &self.top,
            &[
                "for-each-ref",
                "--format=%(refname:short)",
                &format!("refs/heads/{prefix}"),
            ],
        )?;
        Ok(text.lines().map(str::to_string).collect())
    }
}

/// Remove a file if it exists; whether it did.
fn remove_if_there(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(named(e, "remove", path)),
    }
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| named(e, "create", path))
}

/// `e` with what was done to which path in its message.
fn named(e: io::Error, what: &str, path: &Path) -> GitError {
    GitError::File(io::Error::new(
        e.kind(),
        format!("cannot {what} {}: {e}", path.display()),
    ))
}

/// `-c user.name=… -c user.email=…` when the repository has no identity configured.
fn identity_args(dir: &Path) -> Vec<String> {
    let has = |key: &str| git(dir, &["config", "--get", key]).is_ok_and(|v| !v.is_empty());
    let mut args = Vec::new();
    if !has("user.name") {
        args.extend(["-c".to_string(), "user.name=automaton".to_string()]);
    }
    if !has("user.email") {
        args.extend([
            "-c".to_string(),
            "user.email=automaton@localhost".to_string(),
        ]);
    }
    args
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn numstat_is_read_file_by_file_renames_and_binaries_included() {
        let d = DiffSummary::parse_numstat_z(concat!(
            "3\t1\tsrc/a.rs\0",
            "-\t-\tlogo.png\0",
            "2\t0\t\0old.txt\0new.txt\0"
        ));
        assert_eq!(
            d.files,
            vec![
                ("src/a.rs".into(), 3, 1),
                ("logo.png".into(), 0, 0),
                ("new.txt".into(), 2, 0)
            ]
        );
        assert_eq!((d.insertions(), d.deletions()), (5, 1));
    }

    use super::*;
    use std::fs;

    /// A repository with one commit and no identity configured anywhere it can see.
    fn repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        git(top, &["init", "--quiet", "-b", "main"]).unwrap();
        fs::write(top.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let r = Repo {
            top: top.to_path_buf(),
            prefix: PathBuf::new(),
        };
        assert!(r.commit_all(top, "init").unwrap().is_some());
        let r = Repo::discover(top).expect("a repo with a commit");
        (dir, r)
    }

    #[test]
    fn discover_needs_a_commit_and_knows_the_sub_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Repo::discover(dir.path()).is_none(), "not a repository");
        git(dir.path(), &["init", "--quiet"]).unwrap();
        assert!(Repo::discover(dir.path()).is_none(), "no commit yet");
        let (d, _) = repo();
        fs::create_dir_all(d.path().join("pkg/app")).unwrap();
        let r = Repo::discover(&d.path().join("pkg/app")).unwrap();
        assert_eq!(r.prefix, Path::new("pkg/app"));
    }

    #[test]
    fn worktree_commit_and_fast_forward_merge() {
        let (_d, r) = repo();
        let base = r.head(&r.top).unwrap();
        let wt = r.top.join(".automaton/worktrees/t");
        r.exclude(".automaton/worktrees/").unwrap();
        r.exclude(".automaton/worktrees/").unwrap();
        r.ensure_worktree(&wt, "automaton/t", &base).unwrap();
        // Idempotent: a rerun finds the same worktree.
        r.ensure_worktree(&wt, "automaton/t", &base).unwrap();
        assert_eq!(r.worktrees().unwrap().len(), 2);
        assert_eq!(r.commit_all(&wt, "nothing").unwrap(), None);
        fs::write(wt.join("b.txt"), "new\n").unwrap();
        let c = r
            .commit_all(&wt, "automaton: t implement")
            .unwrap()
            .unwrap();
        assert_eq!(r.branch_tip("automaton/t").as_deref(), Some(c.as_str()));
        assert_eq!(r.ahead("main", "automaton/t").unwrap(), 1);
        // The root's checkout never moved, and the worktree folder is excluded.
        assert_eq!(r.head(&r.top).unwrap(), base);
        assert!(!r.is_dirty(&r.top).unwrap());
        assert_eq!(r.merge(&r.top, "automaton/t").unwrap(), Merge::FastForward);
        assert!(r.is_ancestor(&c, "main").unwrap());
        assert_eq!(r.merge(&r.top, "automaton/t").unwrap(), Merge::UpToDate);
    }

    /// A repository with two worktrees from its head: `wt-a` on branch `x/a`, `wt-b` on `x/b`.
    fn two_worktrees() -> (tempfile::TempDir, Repo, PathBuf, PathBuf) {
        let (d, r) = repo();
        let base = r.head(&r.top).unwrap();
        let (a, b) = (r.top.join("wt-a"), r.top.join("wt-b"));
        r.exclude("wt-*/").unwrap();
        r.ensure_worktree(&a, "x/a", &base).unwrap();
        r.ensure_worktree(&b, "x/b", &base).unwrap();
        (d, r, a, b)
    }

    #[test]
    fn a_conflict_is_aborted_and_named() {
        let (_d, r, a, b) = two_worktrees();
        fs::write(a.join("a.txt"), "one\nAAA\nthree\n").unwrap();
        fs::write(b.join("a.txt"), "one\nBBB\nthree\n").unwrap();
        r.commit_all(&a, "a").unwrap().unwrap();
        let cb = r.commit_all(&b, "b").unwrap().unwrap();
        assert_eq!(r.merge(&r.top, "x/a").unwrap(), Merge::FastForward);
        let before = r.head(&r.top).unwrap();
        assert_eq!(
            r.merge(&r.top, "x/b").unwrap(),
            Merge::Conflict(vec!["a.txt".into()])
        );
        assert_eq!(r.head(&r.top).unwrap(), before, "the branch is as it was");
        assert!(!r.is_dirty(&r.top).unwrap(), "the abort left no debris");
        assert_eq!(r.branch_tip("x/b").as_deref(), Some(cb.as_str()));
        assert!(!r.abort_unfinished_merge(&r.top).unwrap());
    }

    /// A merge that fails for another reason (a hook refusing the merge commit) is undone
    /// too: an error, and the worktree as it was, with no merge left half-done.
    #[test]
    fn a_refused_merge_commit_is_aborted() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, r, a, b) = two_worktrees();
        fs::write(a.join("a-only.txt"), "a\n").unwrap();
        fs::write(b.join("b-only.txt"), "b\n").unwrap();
        r.commit_all(&a, "a").unwrap().unwrap();
        r.commit_all(&b, "b").unwrap().unwrap();
        assert_eq!(r.merge(&r.top, "x/a").unwrap(), Merge::FastForward);
        let hooks = r.git_path(&r.top, "hooks").unwrap();
        fs::create_dir_all(&hooks).unwrap();
        let hook = hooks.join("pre-merge-commit");
        fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
        let before = r.head(&r.top).unwrap();
        assert!(r.merge(&r.top, "x/b").is_err());
        assert_eq!(r.head(&r.top).unwrap(), before, "the branch is as it was");
        assert!(!r.is_dirty(&r.top).unwrap(), "nothing half-merged is left");
        assert!(!r.abort_unfinished_merge(&r.top).unwrap(), "no MERGE_HEAD");
    }

    #[test]
    fn a_non_conflicting_divergence_gets_a_merge_commit_and_branch_d_refuses_unmerged() {
        let (_d, r) = repo();
        let base = r.head(&r.top).unwrap();
        let wt = r.top.join("wt");
        r.ensure_worktree(&wt, "x/c", &base).unwrap();
        fs::write(wt.join("c.txt"), "c\n").unwrap();
        r.commit_all(&wt, "c").unwrap().unwrap();
        assert!(
            r.delete_merged_branch(&r.top, "x/c").is_err(),
            "not merged: -d refuses"
        );
        fs::write(r.top.join("d.txt"), "d\n").unwrap();
        r.commit_all(&r.top, "d").unwrap().unwrap();
        assert_eq!(r.merge(&r.top, "x/c").unwrap(), Merge::Merged);
        assert!(r.is_ancestor("x/c", "main").unwrap());
        r.remove_worktree(&wt).unwrap();
        r.delete_merged_branch(&r.top, "x/c").unwrap();
        assert_eq!(r.branches("x/").unwrap(), Vec::<String>::new());
    }
}
