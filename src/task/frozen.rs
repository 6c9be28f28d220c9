//! Frozen acceptance artifacts: when test_design completes, TEST_PLAN.md and every
//! file listed under its `## Acceptance tests` heading are frozen (`.state.frozen`); a later
//! phase that changes one stops the task for a person, who accepts the change with
//! `automaton approve`. This gathers the facts; the decision is `decide::next_action`'s.

use crate::fsx::Durability;
use crate::state::{Artifact, ArtifactSet, Phase};
use crate::store::approvals::{now, sha256_file, who};
use crate::store::frozen::{
    self, Accepted, Change, FROZEN_FILE, FROZEN_VERSION, FrozenFile, Hashes, read, write,
};
use std::io;
use std::path::{Component, Path};

/// The heading whose list names the acceptance files (matched case-insensitively).
pub const HEADING: &str = "acceptance tests";

/// The paths listed under `## Acceptance tests` in a test plan: the first `` `code` `` span of
/// each list item, else its first word (trailing `:`/`,` dropped). Absolute paths and paths
/// that climb out (`..`) are left out.
pub fn acceptance_list(plan: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in plan.lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('#') {
            let level = 1 + h.chars().take_while(|c| *c == '#').count();
            let title = h.trim_start_matches('#').trim();
            if inside && level <= 2 {
                inside = false;
            }
            if level == 2 && title.eq_ignore_ascii_case(HEADING) {
                inside = true;
            }
            continue;
        }
        if !inside {
            continue;
        }
        let item = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| {
                let digits = t.chars().take_while(char::is_ascii_digit).count();
                (digits > 0)
                    .then(|| t[digits..].strip_prefix(". "))
                    .flatten()
            });
        let Some(item) = item.map(str::trim) else {
            continue;
        };
        let path = match item.split('`').nth(1) {
            Some(code) if item.contains('`') => code.trim().to_string(),
            // `- none` (or `- n/a`) says the list is empty: no file is called that.
            _ if ["none", "n/a", "-", "—"]
                .iter()
                .any(|w| item.trim_end_matches('.').eq_ignore_ascii_case(w)) =>
            {
                continue;
            }
            _ => item
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches([':', ',', ';'])
                .to_string(),
        };
        let p = Path::new(&path);
        let safe = !path.is_empty()
            && p.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if safe && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Freeze a task's acceptance artifacts after its test_design phase (or before a later phase
/// when none are frozen: see [`needs_freezing`]): TEST_PLAN.md in the task folder and every
/// listed file under `root` (the agent's working directory). Returns the acceptance paths
/// frozen. Written durably (fsync of the file and its folder) before the next phase starts.
pub fn freeze(task_dir: &Path, root: &Path) -> io::Result<Vec<String>> {
    let (file, list) = frozen_now(task_dir, root);
    frozen::write_with(task_dir, &file, Durability::Durable)?;
    Ok(list)
}

/// `.state.frozen` with the hashes of the files as they are now (the earlier acceptances
/// kept), and the acceptance paths listed.
fn frozen_now(task_dir: &Path, root: &Path) -> (FrozenFile, Vec<String>) {
    let name = Artifact::TestPlan.file_name();
    let text = std::fs::read_to_string(task_dir.join(name)).unwrap_or_default();
    let list = acceptance_list(&text);
    let earlier = read(task_dir).ok().flatten();
    let file = FrozenFile {
        v: FROZEN_VERSION,
        frozen_at: now(),
        root: root.display().to_string(),
        plan: [(name.to_string(), sha256_file(&task_dir.join(name)))].into(),
        acceptance: list
            .iter()
            .map(|p| (p.clone(), sha256_file(&root.join(p))))
            .collect(),
        changes: Vec::new(),
        accepted: earlier.map(|e| e.accepted).unwrap_or_default(),
    };
    (file, list)
}

/// `.state.frozen` as a phase after test_design starts, so that [`restore`] can put it back.
pub fn before_phase(task_dir: &Path) -> Option<FrozenFile> {
    read(task_dir).ok().flatten()
}

/// Put back `.state.frozen` as it was before the phase (`before`, [`before_phase`]) when the
/// phase removed or garbled it (a `git clean -fdx`, a `git stash -u`, an agent): without it
/// the frozen files would be frozen again as the phase left them. Durable at once (rare).
/// Returns what the phase had done to it, `None` when nothing.
pub fn restore(task_dir: &Path, before: Option<&FrozenFile>) -> io::Result<Option<String>> {
    let Some(before) = before else {
        return Ok(None);
    };
    let what = match read(task_dir) {
        Ok(Some(_)) => return Ok(None),
        Ok(None) => "removed".to_string(),
        Err(why) => format!("made unreadable ({why})"),
    };
    write(task_dir, before)?;
    Ok(Some(what))
}

/// Whether a phase that runs after test_design must freeze first: TEST_PLAN.md is there but
/// `.state.frozen` is not (a power cut took it before its fsync, or the plan was written by
/// hand). `has_frozen` is what the folder's listing saw.
pub fn needs_freezing(phase: Phase, artifacts: ArtifactSet, has_frozen: bool) -> bool {
    phase.artifact() > Artifact::TestPlan && artifacts.contains(Artifact::TestPlan) && !has_frozen
}

/// The frozen files of `f` whose content differs from the recorded hashes (or that appeared
/// or disappeared), `TEST_PLAN.md` first.
fn differing(task_dir: &Path, f: &FrozenFile) -> Vec<String> {
    let root = Path::new(&f.root);
    let differs = |base: &Path, hashes: &Hashes| -> Vec<String> {
        hashes
            .iter()
            .filter(|(p, h)| sha256_file(&base.join(p)) != **h)
            .map(|(p, _)| p.clone())
            .collect()
    };
    let mut out = differs(task_dir, &f.plan);
    out.extend(differs(root, &f.acceptance));
    out
}

/// The frozen files that changed since they were frozen; empty when nothing is frozen. An
/// unreadable `.state.frozen` (emptied by a power cut, garbled by hand or by an agent) is
/// itself a change: what was frozen is unknown, so the guard fails closed.
pub fn changed(task_dir: &Path) -> Vec<String> {
    match read(task_dir) {
        Ok(Some(f)) => differing(task_dir, &f),
        Ok(None) => Vec::new(),
        Err(_) => vec![FROZEN_FILE.to_string()],
    }
}

/// Record that `phase` (attempt `attempt`) changed `files`; returns every recorded change.
/// An unreadable `.state.frozen` is left as it is, for `approve`.
pub fn record_changes(
    task_dir: &Path,
    files: &[String],
    phase: &str,
    attempt: Option<u32>,
) -> io::Result<Vec<Change>> {
    let Ok(Some(mut f)) = read(task_dir) else {
        return Ok(Vec::new());
    };
    for file in files {
        if !f.changes.iter().any(|c| &c.file == file) {
            f.changes.push(Change {
                file: file.clone(),
                phase: phase.to_string(),
                attempt,
                when: now(),
            });
        }
    }
    write(task_dir, &f)?;
    Ok(f.changes)
}

/// What changed and by whom, for a stop reason and `status`: "tests/acceptance.sh (changed
/// by implement, attempt 1)"; `None` when nothing frozen changed.
pub fn summary(task_dir: &Path) -> Option<String> {
    let f = match read(task_dir) {
        Ok(Some(f)) => f,
        Ok(None) => return None,
        Err(why) => {
            return Some(format!(
                "{FROZEN_FILE} (unreadable: {why}; what was frozen is unknown: approving sets \
                 it aside, and the next run freezes the files again as they are then)"
            ));
        }
    };
    let now_changed = differing(task_dir, &f);
    if now_changed.is_empty() {
        return None;
    }
    let parts: Vec<String> = now_changed
        .iter()
        .map(|file| match f.changes.iter().find(|c| &c.file == file) {
            Some(Change {
                phase,
                attempt: Some(n),
                ..
            }) => format!("{file} (changed by the {phase} phase, attempt {n})"),
            Some(c) => format!("{file} (changed by the {} phase)", c.phase),
            None => format!("{file} (changed outside a phase run)"),
        })
        .collect();
    Some(parts.join(", "))
}

/// What `automaton approve` accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum Acceptance {
    /// Nothing frozen had changed.
    Nothing,
    /// These changed files, frozen again as they are now.
    Files(Vec<String>),
    /// `.state.frozen` was unreadable (why): it was moved to the path given (in the task
    /// folder, [`UNREADABLE_KEPT`] or a numbered one beside it), and the next run freezes the
    /// files again before a later phase runs (it knows the working directory the acceptance
    /// paths are relative to).
    Unreadable { why: String, kept: String },
}

/// Where `approve` keeps an unreadable `.state.frozen`, in the task folder (`.2`, `.3`, …
/// after it when taken).
pub const UNREADABLE_KEPT: &str = "logs/state.frozen.unreadable";

/// `automaton approve`: accept the changed frozen files as they are now: freeze again (the
/// listing of the current TEST_PLAN.md, under the same root) and record who accepted what.
pub fn accept(task_dir: &Path) -> io::Result<Acceptance> {
    let f = match read(task_dir) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(Acceptance::Nothing),
        Err(why) => {
            let kept = (1..)
                .map(|n| match n {
                    1 => UNREADABLE_KEPT.to_string(),
                    n => format!("{UNREADABLE_KEPT}.{n}"),
                })
                .find(|k| !task_dir.join(k).exists())
                .expect("a free name");
            let (from, to) = (task_dir.join(FROZEN_FILE), task_dir.join(&kept));
            std::fs::create_dir_all(task_dir.join("logs"))
                .and_then(|()| std::fs::rename(&from, &to))
                .map_err(|e| {
                    let what = format!("cannot move {} to {}: {e}", from.display(), to.display());
                    io::Error::new(e.kind(), what)
                })?;
            return Ok(Acceptance::Unreadable { why, kept });
        }
    };
    let files = differing(task_dir, &f);
    if files.is_empty() {
        return Ok(Acceptance::Nothing);
    }
    let (mut again, _) = frozen_now(task_dir, Path::new(&f.root));
    again.accepted.push(Accepted {
        who: who(),
        when: now(),
        files: files.clone(),
    });
    write(task_dir, &again)?;
    Ok(Acceptance::Files(files))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task folder whose TEST_PLAN.md says `plan`, and an empty working directory.
    fn planned(plan: &str) -> (tempfile::TempDir, tempfile::TempDir) {
        let task = tempfile::tempdir().unwrap();
        std::fs::write(task.path().join("TEST_PLAN.md"), plan).unwrap();
        (task, tempfile::tempdir().unwrap())
    }

    #[test]
    fn the_acceptance_list_is_read_from_its_heading_only() {
        let plan = "# Test plan\n\n## Strategy\n- `not/this.rs`\n\n## Acceptance Tests\n\n\
                    - `tests/acceptance.sh` — the end-to-end check\n\
                    * tests/cli.rs: the CLI\n\
                    1. `tests/three.rs`\n\
                    - ../escape.rs\n- /abs/path.rs\n- `tests/acceptance.sh` again\n\
                    ### Notes\n- tests/deeper.rs\n\n## How to Run\n- `cargo test`\n";
        assert_eq!(
            acceptance_list(plan),
            [
                "tests/acceptance.sh",
                "tests/cli.rs",
                "tests/three.rs",
                "tests/deeper.rs"
            ]
        );
        assert!(acceptance_list("## Strategy\n- a.rs\n").is_empty());
        // A list that says it is empty names no file; a file called so is in code.
        assert!(acceptance_list("## Acceptance tests\n- None.\n- n/a\n").is_empty());
        assert_eq!(acceptance_list("## Acceptance tests\n- `none`\n"), ["none"]);
    }

    #[test]
    fn freeze_detect_record_accept() {
        let (task, root) = planned("## Acceptance tests\n- `t/a.sh`\n- `t/later.sh`\n");
        std::fs::create_dir(root.path().join("t")).unwrap();
        std::fs::write(root.path().join("t/a.sh"), "check\n").unwrap();
        assert!(changed(task.path()).is_empty());
        assert_eq!(freeze(task.path(), root.path()).unwrap().len(), 2);
        assert!(changed(task.path()).is_empty());
        assert_eq!(summary(task.path()), None);
        std::fs::write(root.path().join("t/a.sh"), "weakened\n").unwrap();
        std::fs::write(root.path().join("t/later.sh"), "new\n").unwrap();
        assert_eq!(changed(task.path()), ["t/a.sh", "t/later.sh"]);
        record_changes(task.path(), &["t/a.sh".into()], "implement", Some(2)).unwrap();
        assert_eq!(
            summary(task.path()).unwrap(),
            "t/a.sh (changed by the implement phase, attempt 2), t/later.sh (changed outside a phase run)"
        );
        assert_eq!(
            accept(task.path()).unwrap(),
            Acceptance::Files(vec!["t/a.sh".into(), "t/later.sh".into()])
        );
        assert_eq!(accept(task.path()).unwrap(), Acceptance::Nothing);
        assert!(changed(task.path()).is_empty());
        let f = read(task.path()).unwrap().unwrap();
        assert!(f.changes.is_empty());
        assert_eq!(f.accepted.len(), 1);
        std::fs::write(task.path().join("TEST_PLAN.md"), "edited\n").unwrap();
        assert_eq!(changed(task.path()), ["TEST_PLAN.md"]);
    }

    #[test]
    fn an_unreadable_frozen_file_fails_closed_until_approved() {
        let (task, root) = planned("## Acceptance tests\n- `a`\n");
        freeze(task.path(), root.path()).unwrap();
        // A power cut before the fsync can leave it empty; an agent can garble it.
        for torn in ["", "{\"v\": 1, \"pla"] {
            std::fs::write(task.path().join(FROZEN_FILE), torn).unwrap();
            assert_eq!(changed(task.path()), [FROZEN_FILE]);
            let why = summary(task.path()).unwrap();
            assert!(
                why.starts_with(".state.frozen (unreadable: not valid JSON"),
                "{why}"
            );
            // Nothing is recorded into it: it stays as found, for a person to see.
            record_changes(task.path(), &[FROZEN_FILE.into()], "implement", Some(1)).unwrap();
            assert_eq!(
                std::fs::read_to_string(task.path().join(FROZEN_FILE)).unwrap(),
                torn
            );
        }
        let Acceptance::Unreadable { why, kept } = accept(task.path()).unwrap() else {
            panic!("an unreadable file is set aside");
        };
        assert!(why.contains("not valid JSON"), "{why}");
        assert_eq!(kept, UNREADABLE_KEPT);
        // A second one does not replace the first kept.
        std::fs::write(task.path().join(FROZEN_FILE), "garbage").unwrap();
        let Acceptance::Unreadable { kept, .. } = accept(task.path()).unwrap() else {
            panic!("an unreadable file is set aside");
        };
        assert_eq!(kept, format!("{UNREADABLE_KEPT}.2"));
        assert!(!task.path().join(FROZEN_FILE).exists());
        assert_eq!(
            std::fs::read_to_string(task.path().join(UNREADABLE_KEPT)).unwrap(),
            "{\"v\": 1, \"pla"
        );
        // Nothing frozen now: the driver freezes before the next later phase.
        assert!(changed(task.path()).is_empty());
        let mut plan_only = ArtifactSet::default();
        plan_only.insert(Artifact::TestPlan);
        assert!(needs_freezing(Phase::Implement, plan_only, false));
        assert!(!needs_freezing(Phase::Implement, plan_only, true));
        assert!(!needs_freezing(Phase::TestDesign, plan_only, false));
        assert!(!needs_freezing(
            Phase::Implement,
            ArtifactSet::default(),
            false
        ));
    }

    #[test]
    fn a_frozen_file_a_phase_removed_or_garbled_is_put_back() {
        let (task, root) = planned("## Acceptance tests\n- `a`\n");
        assert_eq!(before_phase(task.path()), None);
        assert_eq!(restore(task.path(), None).unwrap(), None);
        freeze(task.path(), root.path()).unwrap();
        let before = before_phase(task.path());
        assert!(before.is_some());
        let path = task.path().join(FROZEN_FILE);
        let frozen = std::fs::read_to_string(&path).unwrap();
        assert_eq!(restore(task.path(), before.as_ref()).unwrap(), None);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            restore(task.path(), before.as_ref()).unwrap().as_deref(),
            Some("removed")
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), frozen);
        std::fs::write(&path, "{").unwrap();
        let what = restore(task.path(), before.as_ref()).unwrap().unwrap();
        assert!(
            what.starts_with("made unreadable (not valid JSON"),
            "{what}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), frozen);
    }
}
