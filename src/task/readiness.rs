//! What the wave planner ([`crate::plan::waves`]) reads of a decomposed task: its plan, the
//! states of its sub-tasks, which of its integration gates passed and its recorded stop.

use super::TaskTree;
use crate::plan::waves::{Barrier, Row, Wait, Waves};
use std::path::Path;

/// The project's rules for starting sub-tasks: `- **Wave barrier**`, and whether a wave's
/// integration gate must pass before the next starts (isolation on and a verify command set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaveRules {
    pub barrier: Barrier,
    pub gated: bool,
}

/// The waves whose integration gate passed, as `logs/integration-<wave>.passed` records in
/// the parent's folder.
pub fn gates_passed(parent_dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(parent_dir.join("logs")) else {
        return Vec::new();
    };
    let mut waves: Vec<u32> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            let name = name.to_str()?;
            name.strip_prefix("integration-")?
                .strip_suffix(".passed")?
                .parse()
                .ok()
        })
        .collect();
    waves.sort_unstable();
    waves
}

/// The planner's view of the plan of `tree.nodes[parent]`; `None` without a valid plan (or
/// without the parent: its folder was deleted).
/// `gates`: the waves whose gate passed, used when `rules.gated`.
pub fn waves_of<'t>(
    tree: &'t TaskTree,
    parent: usize,
    rules: WaveRules,
    gates: &'t [u32],
) -> Option<Waves<'t>> {
    let node = tree.nodes.get(parent)?;
    let Some(Ok(plan)) = &node.snap.plan else {
        return None;
    };
    let rows = plan
        .rows
        .iter()
        .map(|r| Row {
            name: &r.name,
            wave: r.wave,
            depends_on: &r.depends_on,
            files: &r.files,
            state: tree
                .find(&format!("{}/subtasks/{}", node.rel, r.name))
                .map(|i| tree.nodes[i].state()),
        })
        .collect();
    Some(Waves {
        rows,
        blocked: &node.decision.blocked,
        barrier: rules.barrier,
        gates_passed: rules.gated.then_some(gates),
        parent_stop: node.snap.stop.as_deref(),
    })
}

/// Why sub-task `i` of `tree` may not start now, by its parent's plan (`None`: it may, or it
/// has no parent with a plan). Reads the parent's gate records when gates apply.
pub fn waits_for(tree: &TaskTree, i: usize, rules: WaveRules) -> Option<String> {
    let node = &tree.nodes[i];
    let parent = node.parent?;
    let gates = if rules.gated {
        gates_passed(&tree.nodes[parent].dir)
    } else {
        Vec::new()
    };
    let waves = waves_of(tree, parent, rules, &gates)?;
    match waves.wait(node.name())? {
        Wait::Ended(_) => None,
        wait => Some(wait.describe()),
    }
}
