//! Fix, review and tie-break tasks: what manual mode creates from a failed
//! verdict. `status` lists them; `orchestrate --manual` creates them (idempotently); autopilot
//! never does.

use super::tree::TaskTree;
use super::{NewTask, create_task};
use crate::names::kebab;
use crate::state::{Phase, State, Verdict};
use std::path::Path;

/// The reports copied into a fix task (where they exist).
pub const COPIED: [&str; 3] = ["SPEC.md", "BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md"];

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FixTask {
    /// Path relative to the project.
    pub path: String,
    /// `fix`, `review` or `tiebreak`.
    pub kind: &'static str,
    /// The verdict item (or sub-task) it came from.
    pub item: String,
    /// The task it came from.
    pub from: String,
    /// The fix task's state, once it exists (absent: manual mode has not created it yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
}

/// The fix/review/tiebreak tasks a failed verdict of `tree.nodes[index]` calls for.
pub fn planned_fix_tasks(tree: &TaskTree, index: usize) -> Vec<FixTask> {
    let node = &tree.nodes[index];
    let Some(doc) = &node.snap.verdict else {
        return Vec::new();
    };
    if node.state() != State::HumanIntervention {
        return Vec::new();
    }
    // Tasks land beside the top-level ancestor, in the same root (tasks/ or .automaton/tasks/).
    let mut top = index;
    while let Some(p) = tree.nodes[top].parent {
        top = p;
    }
    let top_rel = &tree.nodes[top].rel;
    let root = top_rel.rsplit_once('/').map_or("tasks", |(r, _)| r);
    let mut out = Vec::new();
    // Paths given so far, and the next suffix to try per base path: linear in the number of
    // items, however many share a slug (4,000 identical findings were cubic before).
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut next_n: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut push = |kind: &'static str, base: &str, slug: &str, item: &str| {
        // Two items with the same slug get -2, -3...: no finding is lost.
        let base_path = format!("{root}/{base}-{kind}-{slug}");
        let n = next_n.entry(base_path.clone()).or_insert(1);
        let path = loop {
            let p = if *n == 1 {
                base_path.clone()
            } else {
                format!("{base_path}-{n}")
            };
            *n += 1;
            if !taken.contains(&p) {
                break p;
            }
        };
        taken.insert(path.clone());
        out.push(FixTask {
            path,
            kind,
            item: item.to_string(),
            from: node.rel.clone(),
            state: None,
        });
    };
    match node.parent {
        // A failed sub-task gets one task named after it: {parent}-fix-{sub-task}.
        Some(p) => {
            let parent = tree.nodes[p].name();
            match doc.verdict {
                Ok(Verdict::Fail) => push("fix", parent, node.name(), node.name()),
                Ok(Verdict::NeedsReview) => push("review", parent, node.name(), node.name()),
                _ => {}
            }
            if !doc.tiebreaks.is_empty() {
                push("tiebreak", parent, node.name(), node.name());
            }
        }
        // A top-level task gets one task per item: {task}-fix-{issue}.
        None => {
            let (kind, items) = match doc.verdict {
                Ok(Verdict::Fail) => ("fix", &doc.findings),
                Ok(Verdict::NeedsReview) => ("review", &doc.remaining),
                _ => ("", &doc.findings),
            };
            if !kind.is_empty() {
                if items.is_empty() {
                    push(
                        kind,
                        node.name(),
                        "verdict",
                        "the verdict (no items listed)",
                    );
                }
                for item in items {
                    push(kind, node.name(), &item_slug(item), item);
                }
            }
            for item in &doc.tiebreaks {
                push("tiebreak", node.name(), &item_slug(item), item);
            }
        }
    }
    for f in &mut out {
        f.state = tree.find(&f.path).map(|i| tree.nodes[i].state().word());
    }
    out
}

/// `login-race: two logins at once` -> `login-race`; a long sentence -> its first words.
fn item_slug(item: &str) -> String {
    let head = item
        .split_once(':')
        .map(|(h, _)| h)
        .filter(|h| h.len() <= 40)
        .unwrap_or(item);
    let head = head.trim_matches(|c: char| c == '*' || c == '`' || c.is_whitespace());
    let words: Vec<&str> = head.split_whitespace().take(6).collect();
    let slug = kebab(&words.join(" "));
    if slug.is_empty() { "item".into() } else { slug }
}

/// Create every planned fix task that does not exist yet. Returns (task, created now).
pub fn create_fix_tasks(
    project: &Path,
    tree: &TaskTree,
) -> Result<Vec<(FixTask, bool)>, super::TaskError> {
    let mut out = Vec::new();
    for i in 0..tree.nodes.len() {
        for fix in planned_fix_tasks(tree, i) {
            let exists = project.join(&fix.path).exists();
            if !exists {
                create_task(
                    project,
                    &NewTask {
                        rel: &fix.path,
                        start: State::Next(Phase::BugFind),
                        description: Some(&format!(
                            "{} `{}` from {}: {}",
                            fix.kind, fix.path, fix.from, fix.item
                        )),
                        copy_from: Some((&fix.from, &tree.nodes[i].dir, &COPIED)),
                        rebuildable: false,
                        files: &[],
                    },
                )?;
            }
            out.push((fix, !exists));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::item_slug;

    #[test]
    fn slugs() {
        assert_eq!(item_slug("login-race: two logins"), "login-race");
        assert_eq!(
            item_slug("**Null deref** in parser: crash"),
            "null-deref-in-parser"
        );
        assert_eq!(
            item_slug("The cache is never invalidated when a task is created, which is bad"),
            "the-cache-is-never-invalidated-when"
        );
        assert_eq!(item_slug("!!!"), "item");
    }
}
