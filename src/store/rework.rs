//! `logs/rework/<n>/`: the rounds of bounded rework of one task. Round `n` holds what the
//! round set aside (the artifacts from implement on, moved, never deleted) and its
//! `FINDINGS.md`: why the round started, and what implement is asked to fix.
//!
//! ```text
//! # Rework round 1
//!
//! - **Cause**: verdict_failed: referee verdict is FAIL
//! - **Base**: 3f9a2c1…        (with isolation: the branch's commit the round started from)
//!
//! ## Findings
//!
//! <the verdict, or the failing check's command, exit status and output tail>
//! ```
//!
//! A round is made in `logs/rework/.next/` and renamed to its number once every artifact is
//! in it, so a run killed half-way leaves a `.next` that the next run finishes
//! ([`finish_pending`]) before anything is decided: the task never runs implement again
//! without the findings, and no round is counted twice.

use crate::fsx::{self, write_atomic};
use std::io;
use std::path::{Path, PathBuf};

pub const REWORK_DIR: &str = "logs/rework";
pub const FINDINGS_FILE: &str = "FINDINGS.md";
/// The word the cause of a round a person sent back from the merge gate starts with.
pub const REJECTED_AT_MERGE: &str = "rejected_at_merge";
const PENDING: &str = ".next";
const BASE_PREFIX: &str = "- **Base**: ";
const CAUSE_PREFIX: &str = "- **Cause**: ";
const FINDINGS_HEADING: &str = "## Findings\n\n";

/// One round as its `FINDINGS.md` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub number: u32,
    /// `<stop word>: <one line>`.
    pub cause: String,
    /// The findings text (what the next failure is compared with).
    pub findings: String,
    /// With isolation: the commit the round started from.
    pub base: Option<String>,
    pub dir: PathBuf,
}

impl Round {
    /// Whether a person asked for this round (`automaton reject` at the merge gate), rather
    /// than a failed review or check: it does not count against `- **Rework**`.
    pub fn by_person(&self) -> bool {
        self.cause.starts_with(REJECTED_AT_MERGE)
    }
}

/// The rounds of `rounds` that count against `- **Rework**` (a person's do not).
pub fn counted(rounds: &[Round]) -> u32 {
    rounds.iter().filter(|r| !r.by_person()).count() as u32
}

/// The rounds of the task in `task_dir`, oldest first (a missing folder: none).
pub fn rounds(task_dir: &Path) -> Vec<Round> {
    let root = task_dir.join(REWORK_DIR);
    let mut numbers: Vec<u32> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|n| *n > 0)
        .collect();
    numbers.sort_unstable();
    numbers
        .into_iter()
        .map(|n| read_round(&root.join(n.to_string()), n))
        .collect()
}

/// How many rounds the task had (the `logs/rework/<n>` folders), without reading them.
pub fn count(task_dir: &Path) -> u32 {
    std::fs::read_dir(task_dir.join(REWORK_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some()
        })
        .count() as u32
}

fn read_round(dir: &Path, number: u32) -> Round {
    let text = fsx::read_to_string(dir.join(FINDINGS_FILE)).unwrap_or_default();
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.trim().to_string())
    };
    Round {
        number,
        cause: line(CAUSE_PREFIX).unwrap_or_default(),
        findings: text
            .split_once(FINDINGS_HEADING)
            .map(|(_, f)| f.trim_end().to_string())
            .unwrap_or_default(),
        base: line(BASE_PREFIX),
        dir: dir.to_path_buf(),
    }
}

/// The artifacts a round sets aside: implement's and every later one.
pub fn set_aside() -> Vec<&'static str> {
    crate::state::Artifact::ALL
        .into_iter()
        .filter(|a| *a >= crate::state::Artifact::Implementation)
        .map(crate::state::Artifact::file_name)
        .collect()
}

/// Start the next round: write its findings, move `artifacts` (file names in the task
/// folder, those present) into it, and give it its number. Returns the round's folder.
pub fn begin(
    task_dir: &Path,
    cause: &str,
    base: Option<&str>,
    findings: &str,
    artifacts: &[&str],
) -> io::Result<PathBuf> {
    let pending = task_dir.join(REWORK_DIR).join(PENDING);
    std::fs::create_dir_all(&pending)?;
    // A `.next` left by a killed run keeps its findings: they were taken before its
    // artifacts moved, and the artifacts may already be in it.
    if !pending.join(FINDINGS_FILE).exists() {
        let base = base
            .map(|b| format!("{BASE_PREFIX}{b}\n"))
            .unwrap_or_default();
        let number = count(task_dir) + 1;
        let text = format!(
            "# Rework round {number}\n\n{CAUSE_PREFIX}{}\n{base}\n{FINDINGS_HEADING}{}\n",
            one_line(cause),
            findings.trim_end()
        );
        write_atomic(&pending.join(FINDINGS_FILE), text.as_bytes())?;
    }
    finish(task_dir, &pending, artifacts)
}

/// Finish a round a killed run left in `logs/rework/.next`; `Ok(None)` when there is none.
pub fn finish_pending(task_dir: &Path, artifacts: &[&str]) -> io::Result<Option<PathBuf>> {
    let pending = task_dir.join(REWORK_DIR).join(PENDING);
    if !pending.join(FINDINGS_FILE).exists() {
        return Ok(None);
    }
    finish(task_dir, &pending, artifacts).map(Some)
}

fn finish(task_dir: &Path, pending: &Path, artifacts: &[&str]) -> io::Result<PathBuf> {
    for name in artifacts {
        match std::fs::rename(task_dir.join(name), pending.join(name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    let number = count(task_dir) + 1;
    let to = task_dir.join(REWORK_DIR).join(number.to_string());
    std::fs::rename(pending, &to)?;
    fsx::sync_path(&task_dir.join(REWORK_DIR))?;
    Ok(to)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_keeps_its_artifacts_and_findings_and_is_read_back() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("IMPLEMENTATION.md"), "impl").unwrap();
        std::fs::write(t.path().join("VERDICT.md"), "FAIL").unwrap();
        let dir = begin(
            t.path(),
            "verdict_failed: referee verdict is FAIL",
            Some("abc123"),
            "the tests fail\n",
            &["IMPLEMENTATION.md", "BUG_REPORT.md", "VERDICT.md"],
        )
        .unwrap();
        assert!(!t.path().join("VERDICT.md").exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("VERDICT.md")).unwrap(),
            "FAIL"
        );
        let r = rounds(t.path());
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].number, 1);
        assert_eq!(r[0].cause, "verdict_failed: referee verdict is FAIL");
        assert_eq!(r[0].findings, "the tests fail");
        assert_eq!(r[0].base.as_deref(), Some("abc123"));
    }

    #[test]
    fn a_round_cut_short_is_finished_once_with_its_first_findings() {
        let t = tempfile::tempdir().unwrap();
        let pending = t.path().join(REWORK_DIR).join(PENDING);
        std::fs::create_dir_all(&pending).unwrap();
        std::fs::write(
            pending.join(FINDINGS_FILE),
            "# Rework round 1\n\n- **Cause**: first\n\n## Findings\n\nfirst findings\n",
        )
        .unwrap();
        std::fs::write(pending.join("VERDICT.md"), "FAIL").unwrap();
        std::fs::write(t.path().join("BUG_REPORT.md"), "bugs").unwrap();
        let dir = finish_pending(t.path(), &["BUG_REPORT.md", "VERDICT.md"])
            .unwrap()
            .unwrap();
        assert!(dir.ends_with("logs/rework/1"));
        assert!(dir.join("BUG_REPORT.md").is_file());
        assert_eq!(rounds(t.path())[0].findings, "first findings");
        assert_eq!(finish_pending(t.path(), &[]).unwrap(), None);
    }
}
