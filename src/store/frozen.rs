//! `.state.frozen`: the acceptance artifacts frozen when a task's test_design phase completed
//! (the oracle never drifts under retries), as SHA-256 hashes (format version 1,
//! [`FROZEN_VERSION`]). Rewritten atomically.
//!
//! ```json
//! {"v": 1, "frozen_at": "2026-05-01T09:30:00Z", "root": "/abs/agent/cwd",
//!  "plan": {"TEST_PLAN.md": "9f86d0…"},
//!  "acceptance": {"tests/acceptance.sh": "2c26b4…", "tests/missing.sh": null},
//!  "changes": [{"file": "tests/acceptance.sh", "phase": "implement", "attempt": 1,
//!               "when": "2026-05-01T10:02:11Z"}],
//!  "accepted": [{"who": "ann", "when": "…", "files": ["tests/acceptance.sh"]}]}
//! ```
//!
//! `plan` holds files of the task folder (TEST_PLAN.md); `acceptance` the files listed under
//! its `## Acceptance tests` heading, relative to `root` (the agent's working directory: the
//! project root, or the task's worktree), `null` for one absent when frozen. `changes` lists
//! what a later phase changed (the stop names them) until `automaton approve` accepts them,
//! which records the new hashes and appends to `accepted`.

use crate::fsx::{Durability, write_atomic_with};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const FROZEN_FILE: &str = ".state.frozen";
pub const FROZEN_VERSION: u32 = 1;

/// A file name → its SHA-256 (hex), `None` when it was absent.
pub type Hashes = BTreeMap<String, Option<String>>;

/// One change a phase made to a frozen file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// `TEST_PLAN.md`, or an acceptance file relative to `root`.
    pub file: String,
    /// The phase whose run changed it (`unknown` when it changed between runs).
    pub phase: String,
    #[serde(default)]
    pub attempt: Option<u32>,
    pub when: String,
}

/// A person's acceptance of changes (`automaton approve`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub who: String,
    pub when: String,
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrozenFile {
    pub v: u32,
    #[serde(default)]
    pub frozen_at: String,
    /// The agent's working directory the acceptance paths are relative to.
    #[serde(default)]
    pub root: String,
    #[serde(default)]
    pub plan: Hashes,
    #[serde(default)]
    pub acceptance: Hashes,
    #[serde(default)]
    pub changes: Vec<Change>,
    #[serde(default)]
    pub accepted: Vec<Accepted>,
}

/// Read `.state.frozen`: `Ok(None)` when absent, `Err(why)` when unreadable.
pub fn read(task_dir: &Path) -> Result<Option<FrozenFile>, String> {
    match crate::fsx::read_prefix(&task_dir.join(FROZEN_FILE), 1024 * 1024) {
        Ok((bytes, _)) => match serde_json::from_slice::<FrozenFile>(&bytes) {
            Ok(f) if f.v == FROZEN_VERSION => Ok(Some(f)),
            Ok(f) => Err(format!("version {} is not known to this automaton", f.v)),
            Err(e) => Err(format!("not valid JSON ({e})")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read: {e}")),
    }
}

/// Write `.state.frozen` atomically and durably.
pub fn write(task_dir: &Path, file: &FrozenFile) -> io::Result<()> {
    write_with(task_dir, file, Durability::Durable)
}

/// Write `.state.frozen` atomically, fsynced as `durability` says.
pub fn write_with(task_dir: &Path, file: &FrozenFile, durability: Durability) -> io::Result<()> {
    let text = serde_json::to_string_pretty(file).map_err(io::Error::other)?;
    let bytes = format!("{text}\n");
    write_atomic_with(&task_dir.join(FROZEN_FILE), bytes.as_bytes(), durability)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Ok(None));
        let f = FrozenFile {
            v: FROZEN_VERSION,
            frozen_at: "2026-05-01T09:30:00Z".into(),
            root: "/x".into(),
            plan: [("TEST_PLAN.md".to_string(), Some("ab".to_string()))].into(),
            acceptance: [("t/a.sh".to_string(), None)].into(),
            changes: vec![Change {
                file: "t/a.sh".into(),
                phase: "implement".into(),
                attempt: Some(1),
                when: "w".into(),
            }],
            accepted: vec![],
        };
        write(dir.path(), &f).unwrap();
        assert_eq!(read(dir.path()), Ok(Some(f)));
        std::fs::write(dir.path().join(FROZEN_FILE), "{\"v\": 9}").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("version 9"));
        std::fs::write(dir.path().join(FROZEN_FILE), "{torn").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("not valid JSON"));
    }
}
