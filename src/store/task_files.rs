//! The control files automaton keeps in a task folder beside the artifacts, all written
//! atomically (`.origin` and `.stop` durably; `.state` is re-derived, see [`crate::fsx`]):
//! - `.state`  — one `.state` word, rewritten after every transition (for `cat` in scripts);
//! - `.origin` — JSON ([`OriginFile`]), for tasks created to start at a later phase: the start
//!   state and the hashes of reports copied in from another task, which count only once
//!   rewritten;
//! - `.stop`   — one line: why the orchestrator stopped the task (timeout, cap, agent failure).
//!   The next `orchestrate` of that task removes it and tries again.

use crate::fsx::write_atomic;
use crate::state::State;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const STATE_FILE: &str = ".state";
pub const ORIGIN_FILE: &str = ".origin";
pub const STOP_FILE: &str = ".stop";

/// `.origin`: how a task was created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginFile {
    /// The `.state` word the task starts at.
    pub start: String,
    /// The task it was made from (fix/review/tiebreak tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Artifact file name -> content hash of the copy; the copy counts once it changes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inherited: BTreeMap<String, String>,
}

/// Write `.state` atomically. Not fsynced: it is re-derived from the artifacts (the driver
/// rewrites it when it disagrees), so a power cut costs at most a stale word.
pub fn write_state(dir: &Path, state: State) -> io::Result<()> {
    crate::fsx::write_rebuildable(
        &dir.join(STATE_FILE),
        format!("{}\n", state.word()).as_bytes(),
    )
}

/// Write `.origin` atomically.
pub fn write_origin(dir: &Path, origin: &OriginFile) -> io::Result<()> {
    let text = serde_json::to_string_pretty(origin).map_err(io::Error::other)?;
    write_atomic(&dir.join(ORIGIN_FILE), text.as_bytes())
}

/// Stop a task for a human: `.stop` says why, then `.state` says `human_intervention`
/// (in that order, so a reader that sees the state also finds the reason).
pub fn write_stop(dir: &Path, reason: &str) -> io::Result<()> {
    write_atomic(&dir.join(STOP_FILE), format!("{reason}\n").as_bytes())?;
    write_state(dir, State::HumanIntervention)
}

/// Remove `.stop` (a task being retried); a missing file is fine.
pub fn clear_stop(dir: &Path) -> io::Result<()> {
    let path = dir.join(STOP_FILE);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}
