//! `<task>/.isolation`: the branch and worktree a task runs in (isolation `worktree`), written
//! once when the worktree is made, so a rerun after a crash finds the same ones, and the base
//! commit the task started from (what `status` counts commits ahead of).

use crate::fsx::write_atomic;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

pub const ISOLATION_FILE: &str = ".isolation";
pub const ISOLATION_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolationRecord {
    pub v: u32,
    /// `automaton/<task>` (top level) or `automaton/<task>--<sub-task>`.
    pub branch: String,
    /// The worktree folder, absolute.
    pub worktree: String,
    /// The commit the branch was created from.
    pub base: String,
    /// Top level: the branch checked out in the project root when the task started, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
}

/// The record of a task folder; `None` when absent or unreadable (a task that never ran
/// isolated, or a torn file, which the next run rewrites from what git says).
pub fn read(task_dir: &Path) -> Option<IsolationRecord> {
    let (bytes, _) = crate::fsx::read_prefix(&task_dir.join(ISOLATION_FILE), 16 * 1024).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn write(task_dir: &Path, record: &IsolationRecord) -> io::Result<()> {
    let text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    write_atomic(&task_dir.join(ISOLATION_FILE), text.as_bytes())
}

/// `<task>/logs/isolation.cleaned`: what `automaton clean` removed (the task's `.isolation` as
/// it was, the branch its work was found merged into and the branch's last commit), written
/// before `.isolation` goes, so `merge` can say the task was merged and cleaned and `clean`
/// can judge a sub-task against the branch its parent's work reached.
pub const CLEANED_FILE: &str = "logs/isolation.cleaned";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanedRecord {
    /// The record as it was (its `v` versions this one too).
    #[serde(flatten)]
    pub isolation: IsolationRecord,
    /// The branch the task's branch was an ancestor of when it was removed.
    pub merged_into: String,
    /// The task's branch's last commit when it was removed (none when already gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
}

/// The clean record of a task folder; `None` when absent or unreadable.
pub fn read_cleaned(task_dir: &Path) -> Option<CleanedRecord> {
    let (bytes, _) = crate::fsx::read_prefix(&task_dir.join(CLEANED_FILE), 16 * 1024).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn write_cleaned(task_dir: &Path, record: &CleanedRecord) -> io::Result<()> {
    let text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    let path = task_dir.join(CLEANED_FILE);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(&path, text.as_bytes())
}
