//! The control files automaton keeps in a task folder beside the artifacts, all written
//! atomically (`.origin` and `.stop` durably; `.state` is re-derived, see [`crate::fsx`]):
//! - `.state`  — one `.state` word, rewritten after every transition (for `cat` in scripts);
//! - `.origin` — JSON ([`OriginFile`]), for tasks created to start at a later phase: the start
//!   state and the hashes of reports copied in from another task, which count only once
//!   rewritten;
//! - `.stop`   — one line: why the orchestrator stopped the task (timeout, cap, agent failure).
//!   The next `orchestrate` of that task removes it and tries again.
//! - `.incomplete` — one line: the file name of the artifact a phase run is writing. Written
//!   before the agent starts and removed once the run was judged (as Snakemake marks its
//!   incomplete outputs): while it is there, that artifact does not count, and the next
//!   `orchestrate` moves it under `logs/incomplete/` (never deleting it) and runs the phase again.

use crate::fsx::write_atomic;
use crate::state::State;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = ".state";
pub const ORIGIN_FILE: &str = ".origin";
pub const STOP_FILE: &str = ".stop";
pub const INCOMPLETE_FILE: &str = ".incomplete";

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

/// Write `.state` atomically, reusing its spare inode (it changes on every phase). Not
/// fsynced: it is re-derived from the artifacts (the driver rewrites it when it disagrees), so
/// a power cut costs at most a stale word.
pub fn write_state(dir: &Path, state: State) -> io::Result<()> {
    crate::fsx::write_recycling(
        &dir.join(STATE_FILE),
        state_text(state).as_bytes(),
        crate::fsx::Durability::Rebuildable,
    )
}

/// What `.state` holds for `state`.
pub fn state_text(state: State) -> String {
    format!("{}\n", state.word())
}

/// Write `.origin` atomically.
pub fn write_origin(dir: &Path, origin: &OriginFile) -> io::Result<()> {
    write_atomic(&dir.join(ORIGIN_FILE), origin_text(origin)?.as_bytes())
}

/// What `.origin` holds for `origin`.
pub fn origin_text(origin: &OriginFile) -> io::Result<String> {
    serde_json::to_string_pretty(origin).map_err(io::Error::other)
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

/// Mark `artifact` (a file name) as being written by a phase run that has not finished; the
/// marker's path. Written without fsync: the runner has it fsynced in the background as the
/// agent starts ([`crate::fsx::sync_in_background`]), which takes milliseconds (up to 100 ms
/// when phases start in quick succession, so one journal commit carries several; none when the
/// phase ended first), while the kernel writes back what the agent wrote seconds later.
pub fn write_incomplete(dir: &Path, artifact: &str) -> io::Result<PathBuf> {
    let path = dir.join(INCOMPLETE_FILE);
    crate::fsx::write_recycling(
        &path,
        format!("{artifact}\n").as_bytes(),
        crate::fsx::Durability::Rebuildable,
    )?;
    Ok(path)
}

/// The artifact `.incomplete` names: `Ok(None)` when there is no marker; an unreadable or
/// unknown marker is an error naming the file.
pub fn read_incomplete(dir: &Path) -> io::Result<Option<crate::state::Artifact>> {
    let path = dir.join(INCOMPLETE_FILE);
    match crate::fsx::read_prefix(&path, 256) {
        Ok((bytes, _)) => parse_incomplete(&bytes).map(Some).map_err(|why| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {why}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

/// Parse the body of `.incomplete`: one artifact file name.
pub fn parse_incomplete(bytes: &[u8]) -> Result<crate::state::Artifact, String> {
    let text = String::from_utf8_lossy(bytes);
    let name = text.trim();
    crate::state::Artifact::from_file_name(name).ok_or_else(|| {
        format!(
            "names no artifact (`{}`)",
            name.chars().take(40).collect::<String>()
        )
    })
}

/// Remove `.incomplete` (the phase run was judged), keeping its inode as the next marker's
/// spare; a missing file is fine.
pub fn clear_incomplete(dir: &Path) -> io::Result<()> {
    crate::fsx::remove_recycling(&dir.join(INCOMPLETE_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_marker_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_incomplete(dir.path()).unwrap().is_none());
        write_incomplete(dir.path(), "SPEC.md").unwrap();
        assert_eq!(
            read_incomplete(dir.path()).unwrap(),
            Some(crate::state::Artifact::Spec)
        );
        std::fs::write(dir.path().join(INCOMPLETE_FILE), "../x").unwrap();
        let e = read_incomplete(dir.path()).unwrap_err().to_string();
        assert!(e.contains(INCOMPLETE_FILE), "{e}");
        clear_incomplete(dir.path()).unwrap();
        clear_incomplete(dir.path()).unwrap();
    }
}
