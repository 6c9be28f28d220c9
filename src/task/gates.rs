//! Gates and staleness as read from a task folder: whether a task waits for the approval of
//! its next phase (and why an earlier approval lapsed), which of its artifacts are stale, and
//! the rejection the phase about to run must answer. The decisions on them are pure
//! (`decide::next_action`); this only gathers the facts.

use super::snapshot::Snapshot;
use crate::plan::gate::Gate;
use crate::state::{Artifact, Phase};
use crate::store::approvals::{self, Record, RecordKind, sha256_file};
use crate::store::inputs;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A task that waits for a person before its next phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalWait {
    /// The gate: the phase that runs next, the task split, or the merge.
    pub gate: Gate,
    /// The artifacts an approval would cover (file names).
    pub covers: Vec<&'static str>,
    /// Why an earlier approval of this gate no longer holds.
    pub lapsed: Option<String>,
}

impl ApprovalWait {
    /// ` (the approval lapsed: why)` after the wait's words, or nothing.
    pub fn lapsed_note(&self) -> String {
        self.lapsed
            .as_deref()
            .map(|why| format!(" (the approval lapsed: {why})"))
            .unwrap_or_default()
    }
}

/// An artifact built on inputs that changed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleArtifact {
    pub artifact: &'static str,
    pub because: String,
}

/// A person's rejection the next run of a phase answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    /// Where the rejected artifact was kept, relative to the task folder.
    pub rejected: String,
    pub who: String,
    pub when: String,
}

/// Parse the `Approve before` setting (see [`Gate::parse_list`]).
pub fn parse_gates(text: &str) -> Result<Vec<Gate>, String> {
    Gate::parse_list(text)
}

/// The artifacts an approval of `gate` covers: for a phase, those present that it reads
/// (every artifact before its own); for the task split, SPEC.md and DECOMPOSITION.md; for
/// the merge, every artifact of the complete task.
pub fn covered(snap: &Snapshot, gate: Gate) -> Vec<Artifact> {
    snap.artifacts
        .iter()
        .filter(|a| match gate {
            Gate::Phase(p) => *a < p.artifact(),
            Gate::Subtasks => *a <= Artifact::Decomposition,
            Gate::Merge => true,
        })
        .collect()
}

/// What a decision on `gate` is taken on, as the approval record keeps it: the hashes of the
/// artifacts it covers, and for the merge also the branch's tip (`branch <name>` → the
/// commit), so that a commit added after the approval lets it lapse.
pub fn decided_on(dir: &Path, snap: &Snapshot, gate: Gate) -> BTreeMap<String, String> {
    let mut on = hashes(dir, &covered(snap, gate));
    if gate == Gate::Merge
        && let Some(rec) = crate::store::isolation::read(dir)
        && let Some(tip) = crate::git::Repo::at(dir).branch_tip(&rec.branch)
    {
        on.insert(format!("branch {}", rec.branch), tip);
    }
    on
}

/// SHA-256 of each artifact, by file name (an unreadable one is left out).
pub fn hashes(dir: &Path, artifacts: &[Artifact]) -> BTreeMap<String, String> {
    hashes_reusing(dir, artifacts, None)
}

/// [`hashes`], taking those in `known` (hashed a moment ago in the same turn, by the
/// snapshot's read or [`stale_artifacts`]) as they are instead of reading those files again.
pub fn hashes_reusing(
    dir: &Path,
    artifacts: &[Artifact],
    known: Option<&Hashed>,
) -> BTreeMap<String, String> {
    artifacts
        .iter()
        .filter_map(|a| {
            let name = a.file_name();
            let hash = match known.and_then(|k| k.get(name)) {
                Some(h) => h.clone(),
                None => sha256_file(&dir.join(name)),
            };
            hash.map(|h| (name.to_string(), h))
        })
        .collect()
}

/// The hashes a staleness check had (from the snapshot's read) or took, by file name
/// (`None`: the file is gone).
pub type Hashed = HashMap<String, Option<String>>;

/// Whether the task waits at `gate`: `None` when the last decision on that gate is an
/// approval of exactly the artifacts there now.
pub fn approval_wait(
    dir: &Path,
    rel: &str,
    snap: &Snapshot,
    gate: Gate,
    warnings: &mut Vec<String>,
) -> Option<ApprovalWait> {
    let covers = covered(snap, gate);
    let (records, w) = approvals::read(dir, rel);
    warnings.extend(w);
    let wait = |lapsed| {
        Some(ApprovalWait {
            gate,
            covers: covers.iter().map(|a| a.file_name()).collect(),
            lapsed,
        })
    };
    let Some(last) = records
        .iter()
        .rev()
        .find(|r| r.gate.as_deref() == Some(gate.word()))
    else {
        return wait(None);
    };
    if last.kind == RecordKind::Reject {
        return wait(None);
    }
    match lapse(last, &decided_on(dir, snap, gate)) {
        None => None,
        Some(why) => wait(Some(why)),
    }
}

/// Why an approval does not cover `now`, or `None` when it covers exactly that content.
fn lapse(approval: &Record, now: &BTreeMap<String, String>) -> Option<String> {
    let by = format!("by {} at {}", approval.who, approval.when);
    let gate = approval.gate.as_deref().unwrap_or("?");
    for (name, hash) in &approval.artifacts {
        match now.get(name) {
            None => return Some(format!("{name} is gone since {gate} was approved ({by})")),
            Some(h) if h != hash => {
                return Some(format!("{name} changed after {gate} was approved ({by})"));
            }
            Some(_) => {}
        }
    }
    now.keys()
        .find(|n| !approval.artifacts.contains_key(*n))
        .map(|name| format!("{name} was written after {gate} was approved ({by})"))
}

/// The artifacts built on inputs that changed since their phase ran, in lifecycle order. An
/// artifact built on a stale one is stale too. With the hashes taken to tell, starting from
/// `known` (the files the snapshot read whole, [`Snapshot::hashes`]).
pub fn stale_artifacts(
    dir: &Path,
    rel: &str,
    snap: &Snapshot,
    known: Hashed,
    warnings: &mut Vec<String>,
) -> (Vec<StaleArtifact>, Hashed) {
    let mut cache = known;
    if !snap.has_inputs {
        return (Vec::new(), cache);
    }
    let file = match inputs::read(dir) {
        Ok(Some(f)) => f,
        Ok(None) => return (Vec::new(), cache),
        Err(why) => {
            warnings.push(format!("{rel}/{}: {why}; ignored", inputs::INPUTS_FILE));
            return (Vec::new(), cache);
        }
    };
    let mut stale: Vec<StaleArtifact> = Vec::new();
    for a in snap.artifacts.iter() {
        let Some(given) = file.artifacts.get(a.file_name()) else {
            continue;
        };
        let name = a.file_name();
        let mut because = None;
        for (input, hash) in given {
            let now = cache
                .entry(input.clone())
                .or_insert_with(|| sha256_file(&dir.join(input)));
            because = match now {
                None => Some(format!("{input} is gone since {name} was written")),
                Some(h) if h != hash => Some(format!("{input} changed after {name} was written")),
                Some(_) if stale.iter().any(|s| s.artifact == input) => {
                    Some(format!("{input} is stale"))
                }
                Some(_) => None,
            };
            if because.is_some() {
                break;
            }
        }
        if let Some(because) = because {
            stale.push(StaleArtifact {
                artifact: name,
                because,
            });
        }
    }
    (stale, cache)
}

/// One line on stale artifacts: `DESIGN.md, TEST_PLAN.md are stale (SPEC.md changed after
/// DESIGN.md was written)`.
pub fn stale_summary(stale: &[StaleArtifact]) -> Option<String> {
    let first = stale.first()?;
    let names: Vec<&str> = stale.iter().map(|s| s.artifact).collect();
    Some(format!(
        "{} {} stale ({})",
        names.join(", "),
        if names.len() == 1 { "is" } else { "are" },
        first.because
    ))
}

/// The phase to rerun from for stale artifacts: the one that wrote the earliest of them.
pub fn rerun_phase(stale: &[StaleArtifact]) -> Option<Phase> {
    let first = stale.first()?;
    Phase::ALL
        .into_iter()
        .find(|p| p.artifact().file_name() == first.artifact)
}

/// The rejection the next run of `phase` answers: the last rejection since the last approval
/// that sent this phase back, while its artifact is not written again.
pub fn rejection_for(dir: &Path, phase: Phase) -> Option<Rejection> {
    if dir.join(phase.artifact().file_name()).exists() {
        return None;
    }
    let (records, _) = approvals::read(dir, "");
    records
        .iter()
        .rev()
        .take_while(|r| r.kind == RecordKind::Reject)
        .find(|r| r.phase.as_deref() == Some(phase.word()))
        .map(|r| Rejection {
            reason: r.reason.clone().unwrap_or_default(),
            rejected: r.rejected.clone().unwrap_or_default(),
            who: r.who.clone(),
            when: r.when.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_reuse_the_known_ones_and_read_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SPEC.md"), "spec").unwrap();
        std::fs::write(dir.path().join("DESIGN.md"), "design").unwrap();
        let known: Hashed = [
            ("DESIGN.md".to_string(), Some("known".to_string())),
            ("TEST_PLAN.md".to_string(), None),
        ]
        .into();
        let all = [Artifact::Spec, Artifact::Design, Artifact::TestPlan];
        let got = hashes_reusing(dir.path(), &all, Some(&known));
        assert_eq!(
            got["SPEC.md"],
            sha256_file(&dir.path().join("SPEC.md")).unwrap()
        );
        assert_eq!(got["DESIGN.md"], "known");
        assert!(!got.contains_key("TEST_PLAN.md"), "{got:?}");
        let read = hashes(dir.path(), &all);
        assert_eq!(
            read["DESIGN.md"],
            sha256_file(&dir.path().join("DESIGN.md")).unwrap()
        );
        assert_eq!(read.len(), 2);
    }

    #[test]
    fn gates_parse_phase_words() {
        assert_eq!(
            parse_gates("decomposition, Design,  test design, implement"),
            Ok(vec![
                Gate::Phase(Phase::Decomposition),
                Gate::Phase(Phase::Design),
                Gate::Phase(Phase::TestDesign),
                Gate::Phase(Phase::Implement)
            ])
        );
        assert_eq!(parse_gates(""), Ok(vec![]));
        assert_eq!(parse_gates("none"), Ok(vec![]));
        assert!(
            parse_gates("design, deploy")
                .unwrap_err()
                .contains("`deploy`")
        );
    }
}
