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
