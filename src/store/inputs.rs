//! `.state.inputs`: for each artifact a phase wrote, the SHA-256 of every artifact that phase
//! was given. An artifact whose recorded input has changed since is stale: it was built on
//! content that is no longer there.
//!
//! Format version 2 ([`INPUTS_VERSION`]): JSON lines, appended after every phase that
//! succeeded (an append creates and deletes no inode, where a rewrite by rename does both);
//! the last line about an artifact wins. Forgetting records (`rerun`, `reject`) rewrites the
//! file folded, one line per artifact.
//!
//! ```json
//! {"v":2,"artifact":"DESIGN.md","inputs":{"SPEC.md":"9f86d0…"}}
//! ```
//!
//! Not fsynced: a record lost to a power cut only means its artifact is taken as built on
//! the inputs there now (as for a task made before records existed); it never makes a state
//! wrong. A version 1 file (one JSON object) is still read, and folded into lines on the next
//! write.

use crate::fsx::{Durability, append_line, append_line_unless, write_rebuildable};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const INPUTS_FILE: &str = ".state.inputs";
pub const INPUTS_VERSION: u32 = 2;

/// Input file name → SHA-256 hex.
pub type Hashes = BTreeMap<String, String>;

/// The records, folded: artifact file name → the hashes of the artifacts its phase was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputsFile {
    pub artifacts: BTreeMap<String, Hashes>,
}

/// Version 1: the whole file one object.
#[derive(Deserialize)]
struct V1 {
    v: u32,
    #[serde(default)]
    artifacts: BTreeMap<String, Hashes>,
}

/// One line of version 2.
#[derive(Serialize, Deserialize)]
struct Line {
    v: u32,
    artifact: String,
    inputs: Hashes,
}

/// Read `.state.inputs`: `Ok(None)` when absent, `Err(why)` when unreadable or of a newer
/// version. A line that is not a record (a crash mid-append tore it) is skipped.
pub fn read(task_dir: &Path) -> Result<Option<InputsFile>, String> {
    Ok(read_with_format(task_dir)?.map(|(file, _)| file))
}

/// [`read`], and whether the file is still version 1.
fn read_with_format(task_dir: &Path) -> Result<Option<(InputsFile, bool)>, String> {
    let bytes = match crate::fsx::read(task_dir.join(INPUTS_FILE)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if let Ok(v1) = serde_json::from_slice::<V1>(&bytes)
        && v1.v == 1
    {
        return Ok(Some((
            InputsFile {
                artifacts: v1.artifacts,
            },
            true,
        )));
    }
    let mut file = InputsFile::default();
    for (i, raw) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        // A line that is not a record (torn by a crash mid-append, then closed by the next
        // append) only loses that record: its artifact is taken as built on what is there.
        let Ok(line) = serde_json::from_str::<Line>(raw) else {
            continue;
        };
        if line.v != INPUTS_VERSION {
            return Err(format!(
                "line {}: version {} is not known to this automaton",
                i + 1,
                line.v
            ));
        }
        file.artifacts.insert(line.artifact, line.inputs);
    }
    Ok(Some((file, false)))
}

fn line(artifact: &str, inputs: Hashes) -> io::Result<String> {
    serde_json::to_string(&Line {
        v: INPUTS_VERSION,
        artifact: artifact.to_string(),
        inputs,
    })
    .map_err(io::Error::other)
}

/// Replace the file with `file`'s records, one line each.
fn rewrite(task_dir: &Path, file: InputsFile) -> io::Result<()> {
    let mut text = String::new();
    for (artifact, inputs) in file.artifacts {
        text.push_str(&line(&artifact, inputs)?);
        text.push('\n');
    }
    write_rebuildable(&task_dir.join(INPUTS_FILE), text.as_bytes())
}

/// Record what the phase that wrote `artifact` was given: one appended line. Only a version
/// 1 file (one pretty-printed object, so it starts with `{` and a newline) is read whole, to
/// be folded into lines.
pub fn record(task_dir: &Path, artifact: &str, inputs: Hashes) -> io::Result<()> {
    let path = task_dir.join(INPUTS_FILE);
    let text = line(artifact, inputs.clone())?;
    let is_v1 = |head: &[u8; 2]| head == b"{\n";
    if append_line_unless(&path, &text, Durability::Rebuildable, is_v1)? {
        return Ok(());
    }
    match read_with_format(task_dir) {
        Ok(Some((mut file, true))) => {
            file.artifacts.insert(artifact.to_string(), inputs);
            rewrite(task_dir, file)
        }
        // Not version 1 after all (a line that begins so): appended as any record.
        _ => append_line(&path, &text, Durability::Rebuildable),
    }
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
    rewrite(task_dir, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(pairs: &[(&str, &str)]) -> Hashes {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn artifacts(dir: &Path) -> Vec<(String, Hashes)> {
        read(dir).unwrap().unwrap().artifacts.into_iter().collect()
    }

    #[test]
    fn records_are_appended_and_the_last_one_about_an_artifact_wins() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "DESIGN.md", hashes(&[("SPEC.md", "a")])).unwrap();
        record(dir.path(), "TEST_PLAN.md", hashes(&[("SPEC.md", "a")])).unwrap();
        record(dir.path(), "DESIGN.md", hashes(&[("SPEC.md", "b")])).unwrap();
        let text = std::fs::read_to_string(dir.path().join(INPUTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(
            artifacts(dir.path()),
            [
                ("DESIGN.md".to_string(), hashes(&[("SPEC.md", "b")])),
                ("TEST_PLAN.md".to_string(), hashes(&[("SPEC.md", "a")])),
            ]
        );
        forget(dir.path(), &["DESIGN.md"]).unwrap();
        let text = std::fs::read_to_string(dir.path().join(INPUTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 1, "forget folds the file: {text}");
        assert_eq!(artifacts(dir.path()).len(), 1);
    }

    #[test]
    fn a_torn_line_loses_only_its_own_record() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "DESIGN.md", hashes(&[("SPEC.md", "a")])).unwrap();
        let path = dir.path().join(INPUTS_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"v\":2,\"artifact\":\"TEST_PL");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(artifacts(dir.path()).len(), 1);
        record(dir.path(), "TEST_PLAN.md", hashes(&[("DESIGN.md", "c")])).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "the torn line is closed: {text}");
        assert_eq!(artifacts(dir.path()).len(), 2);
        std::fs::write(&path, "garbage\n{}\n").unwrap();
        assert_eq!(artifacts(dir.path()).len(), 0);
    }

    #[test]
    fn a_newer_version_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(INPUTS_FILE),
            "{\"v\":3,\"artifact\":\"DESIGN.md\",\"inputs\":{}}\n",
        )
        .unwrap();
        let why = read(dir.path()).unwrap_err();
        assert!(why.contains("version 3 is not known"), "{why}");
    }

    #[test]
    fn a_version_1_file_is_read_and_folded_into_lines_on_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(INPUTS_FILE),
            "{\n  \"v\": 1,\n  \"artifacts\": {\n    \"DESIGN.md\": {\"SPEC.md\": \"a\"}\n  }\n}\n",
        )
        .unwrap();
        assert_eq!(
            artifacts(dir.path()),
            [("DESIGN.md".to_string(), hashes(&[("SPEC.md", "a")]))]
        );
        record(dir.path(), "TEST_PLAN.md", hashes(&[("DESIGN.md", "b")])).unwrap();
        let text = std::fs::read_to_string(dir.path().join(INPUTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().all(|l| l.starts_with("{\"v\":2,")), "{text}");
        assert_eq!(artifacts(dir.path()).len(), 2);
        // Begins as version 1 does, but is not: the record is appended, nothing else lost.
        std::fs::write(dir.path().join(INPUTS_FILE), "{\nnot json\n").unwrap();
        record(dir.path(), "DESIGN.md", hashes(&[("SPEC.md", "c")])).unwrap();
        let text = std::fs::read_to_string(dir.path().join(INPUTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(
            artifacts(dir.path()),
            [("DESIGN.md".to_string(), hashes(&[("SPEC.md", "c")]))]
        );
    }
}
