//! `.state.inputs`: for each artifact a phase wrote, the SHA-256 of every artifact that phase
//! was given (format version 1, [`INPUTS_VERSION`]). An artifact whose recorded input has
//! changed since is stale: it was built on content that is no longer there. Rewritten
//! atomically after every phase that succeeded, without fsync: a record lost to a power cut
//! only means its artifact is taken as built on the inputs there now (as for a task made
//! before records existed); it never makes a state wrong.
//!
//! ```json
//! {"v": 1, "artifacts": {"DESIGN.md": {"SPEC.md": "9f86d0…"}}}
//! ```

use crate::fsx::write_rebuildable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const INPUTS_FILE: &str = ".state.inputs";
pub const INPUTS_VERSION: u32 = 1;

/// Input file name → SHA-256 hex.
pub type Hashes = BTreeMap<String, String>;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputsFile {
    pub v: u32,
    /// Artifact file name → the hashes of the artifacts its phase was given.
    #[serde(default)]
    pub artifacts: BTreeMap<String, Hashes>,
}

/// Read `.state.inputs`: `Ok(None)` when absent, `Err(why)` when unreadable.
pub fn read(task_dir: &Path) -> Result<Option<InputsFile>, String> {
    match crate::fsx::read(task_dir.join(INPUTS_FILE)) {
        Ok(bytes) => match serde_json::from_slice::<InputsFile>(&bytes) {
            Ok(f) if f.v == INPUTS_VERSION => Ok(Some(f)),
            Ok(f) => Err(format!("version {} is not known to this automaton", f.v)),
            Err(e) => Err(format!("not valid JSON ({e})")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read: {e}")),
    }
}

fn write(task_dir: &Path, file: &InputsFile) -> io::Result<()> {
    let text = serde_json::to_string_pretty(file).map_err(io::Error::other)?;
    write_rebuildable(&task_dir.join(INPUTS_FILE), format!("{text}\n").as_bytes())
}

/// Record what the phase that wrote `artifact` was given.
pub fn record(task_dir: &Path, artifact: &str, inputs: Hashes) -> io::Result<()> {
    let mut file = read(task_dir).ok().flatten().unwrap_or(InputsFile {
        v: INPUTS_VERSION,
        ..InputsFile::default()
    });
    file.artifacts.insert(artifact.to_string(), inputs);
    write(task_dir, &file)
}

/// Forget the records of artifacts moved away (`rerun`, `reject`).
pub fn forget(task_dir: &Path, artifacts: &[&str]) -> io::Result<()> {
    let Ok(Some(mut file)) = read(task_dir) else {
        return Ok(());
    };
    let before = file.artifacts.len();
    file.artifacts
        .retain(|k, _| !artifacts.contains(&k.as_str()));
    if file.artifacts.len() == before {
        return Ok(());
    }
    write(task_dir, &file)
}
