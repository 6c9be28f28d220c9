//! The task tree: every task folder of a project (under `tasks/` and `.automaton/tasks/`,
//! sub-tasks under `<task>/subtasks/<name>/`, any depth), parents before their sub-tasks,
//! each with what was read of it and its decided state. Loaded whole, one task at a time, or
//! re-read in part after a phase ran; the walk that discovers the folders is in `walk.rs`. An
//! unreadable folder, a loop, a non-UTF-8 name or a stray file is a warning naming the path,
//! never a crash.

use super::gates::{ApprovalWait, StaleArtifact, approval_wait};
use super::index::{self, Index};
use super::snapshot::Snapshot;
use super::walk::Walker;
use crate::plan::gate::Gate;
use crate::state::{
    ChildFacts, Decision, Facts, Phase, PhaseConfig, PlannedSubtask, State, Verdict, decide,
};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One task folder.
#[derive(Debug, Clone)]
pub struct TaskNode {
    /// Relative to the project, `/`-separated: `tasks/a/subtasks/b`.
    pub rel: String,
    pub dir: PathBuf,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub depth: usize,
    pub snap: Snapshot,
    pub decision: KeptDecision,
    /// The gate the task waits at (set by [`TaskTree::apply_gates`]; boxed: most wait at none).
    pub approval: Option<Box<ApprovalWait>>,
    /// Artifacts built on inputs that changed since.
    pub stale: Vec<StaleArtifact>,
    /// The hashes taken to find them, kept for the phase about to run (see
    /// [`crate::task::gates::hashes_reusing`]); only in a tree of one task, never in a
    /// project-wide one, whose size they would grow.
    pub hashed: Option<Box<crate::task::gates::Hashed>>,
}

impl TaskNode {
    /// The folder's name: the last part of `rel`.
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    pub fn state(&self) -> State {
        self.decision.state
    }

    /// Whether this is a top-level task (not a sub-task), however the tree it is in was read:
    /// a tree read from a sub-task down has that sub-task as its first node, without a parent.
    pub fn is_top_level(&self) -> bool {
        self.depth == 0
    }

    /// The verdict behind a terminal state, where VERDICT.md gave one.
    pub fn verdict(&self) -> Option<Verdict> {
        self.snap
            .verdict
            .as_ref()
            .and_then(|v| v.verdict.clone().ok())
    }
}

/// A task's [`Decision`] as a tree keeps one per task: most are plain (a state, nothing more)
/// and point into a table of those; any other is boxed. It reads as a `Decision`.
#[derive(Debug, Clone)]
pub enum KeptDecision {
    /// `PLAIN[i]`.
    Plain(u8),
    Full(Box<Decision>),
}

/// The plain decision of each state, in [`State::ALL`] order.
static PLAIN: [Decision; State::ALL.len()] = {
    let s = State::ALL;
    [
        Decision::plain(s[0]),
        Decision::plain(s[1]),
        Decision::plain(s[2]),
        Decision::plain(s[3]),
        Decision::plain(s[4]),
        Decision::plain(s[5]),
        Decision::plain(s[6]),
        Decision::plain(s[7]),
        Decision::plain(s[8]),
        Decision::plain(s[9]),
        Decision::plain(s[10]),
    ]
};

impl From<Decision> for KeptDecision {
    fn from(d: Decision) -> Self {
        match PLAIN.iter().position(|p| *p == d) {
            Some(i) => KeptDecision::Plain(i as u8),
            None => KeptDecision::Full(Box::new(d)),
        }
    }
}

impl std::ops::Deref for KeptDecision {
    type Target = Decision;
    fn deref(&self) -> &Decision {
        match self {
            KeptDecision::Plain(i) => &PLAIN[usize::from(*i)],
            KeptDecision::Full(d) => d,
        }
    }
}

/// Every task of a project, parents before their sub-tasks, siblings sorted by name.
#[derive(Debug, Clone, Default)]
pub struct TaskTree {
    pub nodes: Vec<TaskNode>,
    pub warnings: Vec<String>,
    /// `Budget per task`, for reports that show spend against it (set by the caller).
    pub budget: Option<crate::plan::decide::Budget>,
    /// The rules by which sub-tasks of a plan start (set by the caller; see
    /// [`crate::task::readiness`]).
    pub waves: super::readiness::WaveRules,
}

impl TaskTree {
    /// Walk the whole project, through the index (`.automaton/.index`, see [`index`]), and
    /// leave an updated one behind.
    pub fn load(project: &Path, config: &PhaseConfig) -> TaskTree {
        Self::load_saving(project, config, true)
    }

    /// [`TaskTree::load`] that leaves no index behind (nothing written: `--dry-run`).
    pub fn load_read_only(project: &Path, config: &PhaseConfig) -> TaskTree {
        Self::load_saving(project, config, false)
    }

    fn load_saving(project: &Path, config: &PhaseConfig, save: bool) -> TaskTree {
        let old = Index::load(project);
        let now = index::now_ns();
        let mut w = Walker::new(Some(old.as_ref()), now);
        for root in crate::names::ROOTS {
            let dir = project.join(root);
            match fs::symlink_metadata(&dir) {
                Ok(_) => {
                    if let Ok(m) = fs::metadata(&dir) {
                        w.seen.insert((m.dev(), m.ino()));
                    }
                    w.walk_children(&dir, root, None, 0, true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => w.warnings.push(format!("{root}: cannot read: {e}")),
            }
        }
        let tally = w.tally;
        let records = std::mem::take(&mut w.out);
        let done = Walker {
            nodes: std::mem::take(&mut w.nodes),
            warnings: std::mem::take(&mut w.warnings),
            ..Walker::new(None, 0)
        };
        drop(w);
        // Records kept from the old index are copied from its body.
        if save {
            index::save(
                project,
                old.as_ref(),
                done.nodes.len(),
                tally,
                &records,
                now,
            );
        }
        drop((records, old));
        done.finish(config)
    }

    /// Walk one task folder and its sub-tasks (the orchestrator re-reads only what it drives).
    pub fn load_task(project: &Path, rel: &str, config: &PhaseConfig) -> TaskTree {
        Self::load_task_with(project, rel, config, true)
    }

    /// [`TaskTree::load_task`] for a scheduler that needs only the states: staleness (which
    /// hashes every recorded input of every task, and decides nothing) is not read, so every
    /// node's `stale` is empty.
    pub fn load_states(project: &Path, rel: &str, config: &PhaseConfig) -> TaskTree {
        Self::load_task_with(project, rel, config, false)
    }

    /// [`TaskTree::load_task`] with the task's own folder already read, as `root` (with the
    /// `warnings` that read gave), a moment ago by the same thread: the judge of the phase that
    /// just ran. Its sub-tasks, its staleness and every decision are read and made as usual.
    pub fn load_task_given(
        project: &Path,
        rel: &str,
        config: &PhaseConfig,
        root: Snapshot,
        warnings: Vec<String>,
    ) -> TaskTree {
        let mut w = Walker::new(None, 0);
        w.given = Some(root);
        w.warnings = warnings;
        w.load_task(project, rel, config, true)
    }

    fn load_task_with(project: &Path, rel: &str, config: &PhaseConfig, stale: bool) -> TaskTree {
        Walker::new(None, 0).load_task(project, rel, config, stale)
    }

    /// Read the task at `rel` (a node of this tree) and its sub-tasks again, and decide its
    /// ancestors again: what a scheduler needs after one sub-task ran, without re-reading its
    /// siblings. `stale` as in [`TaskTree::load_task`]. Returns false, changing nothing, when
    /// `rel` is not in the tree or its sub-tree changed shape (sub-tasks came or went): then
    /// load the tree again.
    pub fn reload(&mut self, project: &Path, rel: &str, config: &PhaseConfig, stale: bool) -> bool {
        let Some(at) = self.find(rel) else {
            return false;
        };
        let fresh = Self::load_task_with(project, rel, config, stale);
        let old_len = self.subtree_len(at);
        let same_shape = fresh.nodes.len() == old_len
            && fresh
                .nodes
                .iter()
                .zip(&self.nodes[at..at + old_len])
                .all(|(new, old)| new.rel == old.rel);
        if !same_shape {
            return false;
        }
        // The fresh nodes index from 0: shift them to where the sub-tree sits.
        let parent = self.nodes[at].parent;
        for (k, mut node) in fresh.nodes.into_iter().enumerate() {
            node.parent = if k == 0 {
                parent
            } else {
                node.parent.map(|p| p + at)
            };
            for c in &mut node.children {
                *c += at;
            }
            self.nodes[at + k] = node;
        }
        self.warnings.extend(fresh.warnings);
        let mut up = parent;
        while let Some(i) = up {
            decide_node(&mut self.nodes, i, config);
            up = self.nodes[i].parent;
        }
        true
    }

    /// The tree as a run that drives it sees it once the stops earlier runs recorded
    /// (`.stop`) are cleared, as naming a task clears them: every node decided again without
    /// its stop, sub-tasks before parents. In memory only (`--dry-run` writes nothing).
    pub fn without_stops(&mut self, config: &PhaseConfig) {
        if self.nodes.iter().all(|n| n.snap.stop.is_none()) {
            return;
        }
        for node in &mut self.nodes {
            node.snap.stop = None;
        }
        for i in (0..self.nodes.len()).rev() {
            decide_node(&mut self.nodes, i, config);
        }
    }

    /// How many nodes the sub-tree at `i` spans (it and its descendants are contiguous).
    fn subtree_len(&self, i: usize) -> usize {
        let depth = self.nodes[i].depth;
        1 + self.nodes[i + 1..]
            .iter()
            .take_while(|n| n.depth > depth)
            .count()
    }

    /// The node of `rel`, by binary search: the walk leaves nodes in [`walk_order`].
    pub fn find(&self, rel: &str) -> Option<usize> {
        let i = self
            .nodes
            .partition_point(|n| walk_order(&n.rel, rel) == std::cmp::Ordering::Less);
        (self.nodes.get(i)?.rel == rel).then_some(i)
    }

    /// Read the approvals of every task that stands before one of `gates` (`Approve
    /// before`): its next phase; the task split of a decomposed task none of whose sub-task
    /// folders is made yet; the merge of a complete top-level task whose branch is not merged.
    /// [`TaskNode::approval`] is set where it waits. A parent whose plan is already written is
    /// past its decomposition gate.
    pub fn apply_gates(&mut self, gates: &[Gate]) {
        if gates.is_empty() {
            return;
        }
        // Whether a branch is merged costs a git process: asked only where merge is a gate.
        let merge_gated = gates.contains(&Gate::Merge);
        for node in &mut self.nodes {
            let Some(gate) = gate_before(node, merge_gated) else {
                continue;
            };
            if !gates.contains(&gate) {
                continue;
            }
            node.approval =
                approval_wait(&node.dir, &node.rel, &node.snap, gate, &mut self.warnings)
                    .map(Box::new);
        }
    }
}

/// The gate a task stands before now, if any could stand there (the merge only when
/// `merge_gated`).
fn gate_before(node: &TaskNode, merge_gated: bool) -> Option<Gate> {
    match node.state() {
        State::Next(Phase::Decomposition) => match &node.snap.plan {
            None => Some(Gate::Phase(Phase::Decomposition)),
            // Once a sub-task folder is made, the split was let through.
            Some(Ok(plan)) if node.decision.missing.len() == plan.rows.len() => {
                Some(Gate::Subtasks)
            }
            Some(_) => None,
        },
        State::Next(phase) => Some(Gate::Phase(phase)),
        State::Complete if merge_gated && node.is_top_level() && node.snap.has_isolation => {
            let rec = crate::store::isolation::read(&node.dir)?;
            let merged = rec.base_branch.as_deref().is_some_and(|base| {
                crate::git::Repo::at(&node.dir)
                    .is_ancestor(&rec.branch, base)
                    .unwrap_or(false)
            });
            (!merged).then_some(Gate::Merge)
        }
        _ => None,
    }
}

/// The order of a walk: by root (in [`crate::names::ROOTS`] order), then by path components
/// (siblings are listed sorted by name, and a parent comes before its sub-tasks).
fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn root(rel: &str) -> usize {
        crate::names::ROOTS
            .iter()
            .position(|r| rel.strip_prefix(r).is_some_and(|t| t.starts_with('/')))
            .unwrap_or(crate::names::ROOTS.len())
    }
    root(a)
        .cmp(&root(b))
        .then_with(|| a.split('/').cmp(b.split('/')))
}

/// Decide `nodes[i]` from its snapshot and its (already decided) children.
pub(super) fn decide_node(nodes: &mut [TaskNode], i: usize, config: &PhaseConfig) {
    let children: Vec<ChildFacts> = nodes[i]
        .children
        .iter()
        .map(|c| {
            let n = &nodes[*c];
            ChildFacts {
                name: n.name().to_string(),
                state: n.state(),
                verdict: n.verdict(),
            }
        })
        .collect();
    let node = &nodes[i];
    let planned: Option<Result<Vec<PlannedSubtask>, String>> = node
        .snap
        .plan
        .as_ref()
        .map(|p| p.as_ref().map(|p| p.planned()).map_err(|e| e.to_string()));
    let facts = Facts {
        artifacts: node.snap.artifacts,
        verdict: node.snap.verdict.as_ref().map(|v| v.verdict.clone()),
        plan: planned
            .as_ref()
            .map(|p| p.as_ref().map(Vec::as_slice).map_err(Clone::clone)),
        children: &children,
        start: node
            .snap
            .origin
            .as_ref()
            .and_then(|o| State::parse(&o.start)),
        stop: node.snap.stop.as_deref(),
        depth: node.depth,
        sent_back: node.snap.sent_back,
        verify_due: node.snap.verify_due,
        questions: node.snap.questions,
    };
    let decision = decide(&facts, config);
    nodes[i].decision = decision.into();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::walk::PARALLEL_MIN;

    /// `find` answers by binary search: every node is found where it is, whatever its name
    /// sorts next to (`a-b` sorts before `a/...` by bytes, after it by components).
    #[test]
    fn find_locates_every_node_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "tasks/a/subtasks/s2",
            "tasks/a/subtasks/s1/subtasks/x",
            "tasks/a-b",
            "tasks/a.b",
            "tasks/b",
            ".automaton/tasks/a",
            ".automaton/tasks/z/subtasks/a",
        ] {
            fs::create_dir_all(dir.path().join(rel)).unwrap();
        }
        let tree = TaskTree::load(dir.path(), &PhaseConfig::default());
        assert_eq!(tree.nodes.len(), 10, "{:?}", tree.warnings);
        for (i, n) in tree.nodes.iter().enumerate() {
            assert_eq!(tree.find(&n.rel), Some(i), "{}", n.rel);
        }
        for rel in [
            "tasks/a/subtasks",
            "tasks/c",
            "tasks",
            "",
            ".automaton/tasks/b",
            "x/a",
        ] {
            assert_eq!(tree.find(rel), None, "{rel}");
        }
    }

    /// After one sub-task changed, `reload` leaves the tree a fresh load would give (states
    /// and decisions of every node, the parent's included); a sub-tree that changed shape is
    /// refused, leaving the tree as it was.
    #[test]
    fn reload_of_one_subtask_matches_a_fresh_load() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("tasks/p");
        fs::create_dir_all(parent.join("subtasks/s1")).unwrap();
        fs::create_dir_all(parent.join("subtasks/s2")).unwrap();
        fs::write(parent.join("SPEC.md"), "spec\n").unwrap();
        fs::write(
            parent.join("DECOMPOSITION.md"),
            "| Sub-task | Wave | Depends on |\n|---|---|---|\n| s1 | 1 | - |\n| s2 | 2 | s1 |\n",
        )
        .unwrap();
        let config = PhaseConfig::default();
        let mut tree = TaskTree::load_states(dir.path(), "tasks/p", &config);
        let s1 = parent.join("subtasks/s1");
        for a in [
            "SPEC.md",
            "DESIGN.md",
            "TEST_PLAN.md",
            "IMPLEMENTATION.md",
            "BUG_REPORT.md",
            "ADVERSARIAL_BUG_REPORT.md",
            "DOC_REVIEW.md",
        ] {
            fs::write(s1.join(a), "done\n").unwrap();
        }
        fs::write(s1.join("VERDICT.md"), "Verdict: PASS\n").unwrap();
        let before = format!("{:?}", tree.nodes[0].decision);
        assert!(tree.reload(dir.path(), "tasks/p/subtasks/s1", &config, false));
        let fresh = TaskTree::load_states(dir.path(), "tasks/p", &config);
        let i = tree.find("tasks/p/subtasks/s1").unwrap();
        assert_eq!(tree.nodes[i].state(), State::Complete);
        assert_ne!(format!("{:?}", tree.nodes[0].decision), before);
        let view = |t: &TaskTree| -> Vec<String> {
            t.nodes
                .iter()
                .map(|n| format!("{} {:?} {:?} {:?}", n.rel, n.parent, n.children, n.decision))
                .collect()
        };
        assert_eq!(view(&tree), view(&fresh));
        fs::create_dir_all(s1.join("subtasks/x")).unwrap();
        assert!(!tree.reload(dir.path(), "tasks/p/subtasks/s1", &config, false));
        assert_eq!(
            view(&tree),
            view(&fresh),
            "a refused reload changes nothing"
        );
        assert!(!tree.reload(dir.path(), "tasks/p/subtasks/nope", &config, false));
    }

    /// The judge's unmarked read of a task, its marker then cleared, loads the tree a fresh
    /// load gives: decisions, staleness, sub-tasks and warnings.
    #[test]
    fn a_tree_given_the_judged_folder_matches_a_fresh_load() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("tasks/t");
        fs::create_dir_all(task.join("subtasks/s1")).unwrap();
        fs::write(task.join("SPEC.md"), "spec\n").unwrap();
        fs::write(task.join("DESIGN.md"), "design\n").unwrap();
        fs::write(task.join("VERDICT.md"), "no verdict line\n").unwrap();
        let given = [("SPEC.md".to_string(), "not its hash".to_string())].into();
        crate::store::inputs::record(&task, "DESIGN.md", given).unwrap();
        fs::write(task.join(".incomplete"), "DESIGN.md\n").unwrap();
        fs::write(task.join(".state"), "nonsense\n").unwrap();
        let mut warnings = Vec::new();
        let mut judged =
            super::super::snapshot::read_snapshot_unmarked(&task, "tasks/t", &mut warnings);
        assert!(judged.incomplete.take().is_some());
        fs::remove_file(task.join(".incomplete")).unwrap();
        let config = PhaseConfig::default();
        // The fresh load first: a load writes `.state`, which the judge read before.
        let fresh = TaskTree::load_task(dir.path(), "tasks/t", &config);
        let given = TaskTree::load_task_given(dir.path(), "tasks/t", &config, judged, warnings);
        let view = |t: &TaskTree| -> Vec<String> {
            t.nodes
                .iter()
                .map(|n| {
                    format!(
                        "{} {:?} {:?} {:?} {:?} {:?}",
                        n.rel,
                        n.children,
                        n.decision,
                        n.stale,
                        n.snap.artifacts,
                        // In name order: a HashMap's own order differs between two maps.
                        n.hashed
                            .as_ref()
                            .map(|h| h.iter().collect::<std::collections::BTreeMap<_, _>>())
                    )
                })
                .chain(t.warnings.iter().cloned())
                .collect()
        };
        assert_eq!(view(&given), view(&fresh));
        assert_eq!(fresh.nodes.len(), 2);
        assert!(!fresh.warnings.is_empty(), "a warning to carry over");
        assert_eq!(fresh.nodes[0].stale.len(), 1, "{:?}", fresh.nodes[0].stale);
    }
    /// A parent with enough sub-tasks for a parallel walk loads as a walk on one thread
    /// would: its sub-tasks in name order after it, each pointing back at it, a sub-task's own
    /// sub-tasks after that one; and the staleness check starts from the hashes the snapshot
    /// took while reading (the same as hashing each file again).
    #[test]
    fn many_subtasks_load_in_walk_order_with_the_hashes_read() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("tasks/p");
        let names: Vec<String> = (0..PARALLEL_MIN + 6).map(|i| format!("s{i:03}")).collect();
        for name in &names {
            let sub = parent.join("subtasks").join(name);
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join("SPEC.md"), format!("spec of {name}\n")).unwrap();
            fs::write(sub.join("DESIGN.md"), "design\n").unwrap();
            let given = [("SPEC.md".to_string(), "stale".to_string())].into();
            crate::store::inputs::record(&sub, "DESIGN.md", given).unwrap();
        }
        fs::create_dir_all(parent.join("subtasks/s005/subtasks/x")).unwrap();
        let config = PhaseConfig::default();
        for tree in [
            TaskTree::load_task(dir.path(), "tasks/p", &config),
            TaskTree::load_states(dir.path(), "tasks/p", &config),
        ] {
            let stale = !tree.nodes[1].stale.is_empty();
            let rels: Vec<&str> = tree.nodes.iter().map(|n| n.rel.as_str()).collect();
            let mut expected = vec!["tasks/p".to_string()];
            for name in &names {
                expected.push(format!("tasks/p/subtasks/{name}"));
                if name == "s005" {
                    expected.push("tasks/p/subtasks/s005/subtasks/x".into());
                }
            }
            assert_eq!(rels, expected, "{:?}", tree.warnings);
            let x = tree.find("tasks/p/subtasks/s005/subtasks/x").unwrap();
            let s005 = tree.find("tasks/p/subtasks/s005").unwrap();
            assert_eq!(tree.nodes[x].parent, Some(s005));
            assert_eq!(tree.nodes[s005].children, vec![x]);
            let children: Vec<usize> = (1..tree.nodes.len()).filter(|i| *i != x).collect();
            assert_eq!(tree.nodes[0].children, children);
            for c in children {
                let node = &tree.nodes[c];
                assert_eq!(node.parent, Some(0), "{}", node.rel);
                assert_eq!(node.depth, 1, "{}", node.rel);
                assert_eq!(node.stale.is_empty(), !stale, "{}", node.rel);
                assert!(node.snap.hashes.is_none(), "{}: kept in the node", node.rel);
                if stale {
                    let spec = node.dir.join("SPEC.md");
                    let hashed = node.hashed.as_ref().expect("hashes kept");
                    assert_eq!(
                        hashed.get("SPEC.md"),
                        Some(&crate::store::approvals::sha256_file(&spec))
                    );
                    assert!(hashed.contains_key("DESIGN.md"), "{hashed:?}");
                }
            }
            assert!(stale || tree.nodes.iter().all(|n| n.hashed.is_none()));
        }
    }
    /// A link back to the task being walked, below two `subtasks/` folders big enough for a
    /// parallel walk, is seen as a loop and skipped: the walk ends, each folder once.
    #[test]
    fn a_loop_below_two_parallel_folders_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("tasks/p");
        let many = |at: &Path| {
            for i in 0..PARALLEL_MIN {
                fs::create_dir_all(at.join(format!("subtasks/s{i:03}"))).unwrap();
            }
        };
        many(&parent);
        let c = parent.join("subtasks/s001");
        many(&c);
        std::os::unix::fs::symlink(&parent, c.join("subtasks/zz-back")).unwrap();
        let tree = TaskTree::load_task(dir.path(), "tasks/p", &PhaseConfig::default());
        assert_eq!(
            tree.nodes.len(),
            1 + 2 * PARALLEL_MIN,
            "{:?}",
            tree.warnings
        );
        assert!(
            tree.warnings
                .iter()
                .any(|w| w.contains("zz-back") && w.contains("symlink loop")),
            "{:?}",
            tree.warnings
        );
    }
}

#[cfg(test)]
mod kept_tests {
    use super::*;

    /// A kept decision reads as the decision it was made from; only plain ones go unboxed.
    #[test]
    fn kept_decisions_read_as_made() {
        for state in State::ALL {
            let kept = KeptDecision::from(Decision::plain(state));
            assert!(matches!(kept, KeptDecision::Plain(_)), "{state:?}");
            assert_eq!(*kept, Decision::plain(state));
            let full = Decision {
                reason: Some("why".into()),
                ..Decision::plain(state)
            };
            let kept = KeptDecision::from(full.clone());
            assert!(matches!(kept, KeptDecision::Full(_)), "{state:?}");
            assert_eq!(*kept, full);
        }
    }
}
