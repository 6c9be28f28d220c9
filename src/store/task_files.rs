//! The control files automaton keeps in a task folder beside the artifacts, all written
//! atomically (`.origin` and `.stop` durably; `.state` is re-derived, see [`crate::fsx`]):
//! - `.state`  — one `.state` word, rewritten after every transition (for `cat` in scripts);
//! - `.origin` — JSON ([`OriginFile`]), for tasks created to start at a later phase: the start
//!   state and the hashes of reports copied in from another task, which count only once
//!   rewritten;
//! - `.stop`   — one line: why the orchestrator stopped the task (timeout, cap, agent failure).
//!   The next `orchestrate` of that task removes it and tries again.
//! - `.incomplete` — the file name of the artifact a phase run is writing. Written before the
//!   agent starts and removed once the run was judged a success (as Snakemake marks its
//!   incomplete outputs): while it applies, that artifact does not count, and the next
//!   `orchestrate` moves it under `logs/incomplete/` (never deleting it) and runs the phase
//!   again. When the run ends with a recorded stop instead (a malformed artifact, a failed
//!   agent), a second line `left <hash>` records what that run left there: from then on a file
//!   with other content is a person's (the fix the stop message asks for) and counts.

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

/// Write `.state` atomically. Not fsynced: it is re-derived from the artifacts (the driver
/// rewrites it when it disagrees), so a power cut costs at most a stale word.
pub fn write_state(dir: &Path, state: State) -> io::Result<()> {
    task_folder_exists(dir)?;
    crate::fsx::write_rebuildable(&dir.join(STATE_FILE), state_text(state).as_bytes())
}

/// A task's control files are written only into its folder as it is: a folder deleted under
/// a run (by a person, or an agent) is never made again by writing one of them.
fn task_folder_exists(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "task folder {} is gone; nothing was written there",
            dir.display()
        ),
    ))
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
/// (in that order, so a reader that sees the state also finds the reason). A phase run's
/// marker is sealed ([`seal_incomplete`]): this run has ended.
pub fn write_stop(dir: &Path, reason: &str) -> io::Result<()> {
    task_folder_exists(dir)?;
    write_atomic(&dir.join(STOP_FILE), format!("{reason}\n").as_bytes())?;
    seal_incomplete(dir)?;
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
/// marker's path. Written atomically (temp file, rename) before the agent starts, and made
/// durable ([`crate::fsx::sync_renamed`]) as the agent starts (see
/// [`crate::run::agent::AgentSpec::sync_once_started`]): after a power cut the marker is there
/// for every artifact the agent may have half-written.
pub fn write_incomplete(dir: &Path, artifact: &str) -> io::Result<PathBuf> {
    let path = dir.join(INCOMPLETE_FILE);
    crate::fsx::write_atomic_with(
        &path,
        format!("{artifact}\n").as_bytes(),
        crate::fsx::Durability::SyncedLater,
    )?;
    Ok(path)
}

/// What `.incomplete` says: the artifact, and (once the run that wrote it ended with a
/// recorded stop) the hash of what that run left there, `none` when it left nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub artifact: crate::state::Artifact,
    pub left: Option<String>,
}

impl Marker {
    /// Whether the marker still applies to the artifact in `dir`: always while its run may be
    /// writing it; after the run stopped, only while the file holds what that run left (other
    /// content was put there by a person since).
    pub fn applies(&self, dir: &Path) -> bool {
        self.left
            .as_ref()
            .is_none_or(|left| *left == artifact_hash(dir, self.artifact))
    }
}

/// The hash of an artifact's content, `none` when it is not there.
fn artifact_hash(dir: &Path, artifact: crate::state::Artifact) -> String {
    crate::fsx::read(dir.join(artifact.file_name()))
        .map_or_else(|_| "none".to_string(), |b| crate::fsx::content_hash(&b))
}

/// The marker in `dir`, applying or not: `Ok(None)` when there is none; an unreadable or
/// unknown marker is an error naming the file.
pub fn read_marker(dir: &Path) -> io::Result<Option<Marker>> {
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

/// The artifact `.incomplete` keeps from counting: `Ok(None)` when there is no marker or it no
/// longer applies ([`Marker::applies`]); an unreadable or unknown marker is an error naming
/// the file.
pub fn read_incomplete(dir: &Path) -> io::Result<Option<crate::state::Artifact>> {
    Ok(read_marker(dir)?
        .filter(|m| m.applies(dir))
        .map(|m| m.artifact))
}

/// Parse the body of `.incomplete`: an artifact file name, then optionally `left <hash>`.
pub fn parse_incomplete(bytes: &[u8]) -> Result<Marker, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let name = lines.next().unwrap_or("");
    let artifact = crate::state::Artifact::from_file_name(name).ok_or_else(|| {
        format!(
            "names no artifact (`{}`)",
            name.chars().take(40).collect::<String>()
        )
    })?;
    let left = match lines.next() {
        None => None,
        Some(line) => match line.strip_prefix("left ") {
            Some(hash) if !hash.trim().is_empty() => Some(hash.trim().to_string()),
            _ => return Err(format!("unknown line `{line}` after `{name}`")),
        },
    };
    Ok(Marker { artifact, left })
}

/// The run that wrote `.incomplete` ended with a recorded stop: record what it left in the
/// artifact, so that a person's later edit of it is told from the run's own (see
/// [`Marker::applies`]). A marker already sealed keeps the first run's end.
pub fn seal_incomplete(dir: &Path) -> io::Result<()> {
    let Ok(Some(marker)) = read_marker(dir) else {
        return Ok(());
    };
    if marker.left.is_some() {
        return Ok(());
    }
    let left = artifact_hash(dir, marker.artifact);
    let body = format!("{}\nleft {left}\n", marker.artifact.file_name());
    write_atomic(&dir.join(INCOMPLETE_FILE), body.as_bytes())
}

/// Remove `.incomplete` (the phase run was judged); a missing file is fine. Not fsynced: a
/// marker a power cut brings back only sets the artifact aside and runs its phase again.
pub fn clear_incomplete(dir: &Path) -> io::Result<()> {
    crate::fsx::remove_if_there(&dir.join(INCOMPLETE_FILE))
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

    /// Once the run stopped, the marker holds only while the artifact is what the run left.
    #[test]
    fn a_sealed_marker_gives_way_to_a_persons_edit() {
        let dir = tempfile::tempdir().unwrap();
        let verdict = dir.path().join("VERDICT.md");
        std::fs::write(&verdict, "no verdict\n").unwrap();
        write_incomplete(dir.path(), "VERDICT.md").unwrap();
        seal_incomplete(dir.path()).unwrap();
        let marker = read_marker(dir.path()).unwrap().unwrap();
        assert!(marker.left.is_some());
        assert_eq!(
            read_incomplete(dir.path()).unwrap(),
            Some(crate::state::Artifact::Verdict),
            "untouched: still the run's"
        );
        seal_incomplete(dir.path()).unwrap();
        assert_eq!(
            read_marker(dir.path()).unwrap().unwrap(),
            marker,
            "sealed once"
        );
        std::fs::write(&verdict, "Verdict: PASS\n").unwrap();
        assert_eq!(
            read_incomplete(dir.path()).unwrap(),
            None,
            "edited: the person's"
        );
        std::fs::remove_file(&verdict).unwrap();
        assert_eq!(read_incomplete(dir.path()).unwrap(), None);
        assert!(parse_incomplete(b"SPEC.md\nsomething else\n").is_err());
    }

    /// The marker is replaced whole by a rename (never rewritten in place, which a power cut
    /// could leave empty), and nothing but the marker is left in the folder.
    #[test]
    fn the_incomplete_marker_is_replaced_by_rename() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = write_incomplete(dir.path(), "SPEC.md").unwrap();
        let first = std::fs::metadata(&path).unwrap().ino();
        write_incomplete(dir.path(), "DESIGN.md").unwrap();
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), first);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "DESIGN.md\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(INCOMPLETE_FILE)]);
    }
}
