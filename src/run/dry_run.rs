//! `orchestrate --dry-run`: for every task the run would drive, what the planner would do next
//! and why, as `make -n` says what it would build. It reads the tasks as a real run's first
//! turn does ([`super::observe`]) and asks the same planner
//! ([`next_action`](crate::plan::decide::next_action), the wave rules), so it cannot drift
//! from what a run does; it runs nothing, writes nothing and takes no lock.

use super::Run;
use super::observe::{facts, gated, not_ready};
use super::stops::stop_reason;
use crate::plan::decide::{Action, StopKind};
use crate::task::TaskTree;
use crate::task::readiness::{WaveRules, waits_for};

/// What the planner would do next for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub task: String,
    /// `run`, `verify`, `subtasks`, `step`, `replan`, `wait`, `stop` or `none`.
    pub action: &'static str,
    /// The phase that would run (`run`, `replan`).
    pub phase: Option<&'static str>,
    /// Why, in words.
    pub why: String,
    /// The exit code a run would end with here (`stop`, `wait` for a named sub-task).
    pub exit_code: Option<u8>,
}

/// The plan for `rel` and every sub-task under it, parents first. `driven`: the run would
/// drive this task, and so first clear the stops earlier runs recorded in it and its
/// sub-tasks (a run drives the task it names or picks); otherwise the task is only reported,
/// its stops stand, and any stop is said with the exit code of a run that needs a person.
pub fn plan(run: &Run<'_>, rel: &str, rules: WaveRules, driven: bool) -> Vec<Planned> {
    if driven && let Some(why) = not_ready(run, rel, rules) {
        return vec![Planned {
            task: rel.to_string(),
            action: "wait",
            phase: None,
            why,
            exit_code: Some(StopKind::NotReady.code()),
        }];
    }
    let mut read = TaskTree::load_task(&run.settings.project, rel, &run.config);
    if driven {
        read.without_stops(&run.config);
    }
    let mut tree = gated(run, read);
    tree.waves = rules;
    let mut out = Vec::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        // A sub-task its parent's waves do not start yet: the parent's drive decides first.
        if i > 0
            && let Some(why) = waits_for(&tree, i, rules)
        {
            out.push(Planned {
                task: node.rel.clone(),
                action: "wait",
                phase: None,
                why,
                exit_code: None,
            });
            continue;
        }
        let facts = facts(run, &node.dir, &tree, node, 0);
        let action = crate::plan::decide::next_action(&facts);
        let mut planned = describe(run, &tree, i, action, facts.rework);
        // A run that drives none of the tasks reports them and stops at once: whatever a
        // task waits for, the run ends as one where no task can go on.
        if !driven && planned.exit_code.is_some() {
            planned.exit_code = Some(crate::exit::NEEDS_HUMAN);
        }
        out.push(planned);
    }
    out
}

/// The planner's action in words.
fn describe(
    run: &Run<'_>,
    tree: &TaskTree,
    i: usize,
    action: Action,
    rework: crate::plan::rework::Rework,
) -> Planned {
    let node = &tree.nodes[i];
    let state = node.state().word();
    let planned = |action, phase, why: String, exit_code| Planned {
        task: node.rel.clone(),
        action,
        phase,
        why,
        exit_code,
    };
    let waves = || waves_in_words(node);
    match action {
        Action::RunPhase(phase) => planned(
            "run",
            Some(phase.word()),
            format!(
                "state {state}: the {} phase writes {}",
                phase.word(),
                phase.artifact().file_name()
            ),
            None,
        ),
        Action::Complete => planned("none", None, "complete".into(), None),
        Action::Verify(of) => planned("verify", None, verify_why(run, of), None),
        Action::Human(kind) => planned(
            "stop",
            None,
            // The reason the run would stop with, rework's history included.
            super::rework::with_history(
                run,
                &node.dir,
                node.decision.reason.as_deref().unwrap_or("needs a human"),
                rework,
            ),
            Some(kind.code()),
        ),
        Action::RunSubtasks => planned(
            "subtasks",
            None,
            format!("its sub-tasks run in waves ({})", waves()),
            None,
        ),
        Action::RunChildren => planned(
            "subtasks",
            None,
            "its sub-tasks made by hand run first, one after another".into(),
            None,
        ),
        Action::StepSubtask => planned(
            "step",
            None,
            "one phase of the first sub-task that may start".into(),
            None,
        ),
        Action::StepDone(phase) => {
            planned("none", Some(phase.word()), "one step done".into(), None)
        }
        Action::Rework => planned("rework", Some("implement"), rework_why(run, node), None),
        Action::Replan => planned(
            "replan",
            Some("decomposition"),
            format!(
                "sub-tasks estimate more than the max peak context of {} tokens: the plan goes \
                 back to the decomposition phase once",
                run.max_peak
            ),
            None,
        ),
        Action::EndRun(StopKind::Interrupted) => {
            planned("stop", None, "interrupted".into(), Some(130))
        }
        Action::EndRun(_)
        | Action::OverBudget(_)
        | Action::Frozen
        | Action::Stale
        | Action::AwaitApproval(_)
        | Action::IterationCap(_) => {
            let (kind, reason) = stop_reason(run, &node.rel, &node.dir, node, action);
            planned("stop", None, reason, Some(kind.code()))
        }
    }
}

/// Why the verify command runs next: to accept a PASS verdict, or before the phases after
/// implement.
fn verify_why(run: &Run<'_>, of: crate::plan::decide::VerifyOf) -> String {
    let command = crate::settings::value::redact(run.verify_command.unwrap_or_default());
    match of {
        crate::plan::decide::VerifyOf::Implementation => format!(
            "the verify command `{command}` has not passed after this implementation: it runs \
             before the phases after implement"
        ),
        crate::plan::decide::VerifyOf::Pass => {
            format!("the PASS verdict counts once the verify command `{command}` passes")
        }
    }
}

/// Why the next step is a rework round, and what it does.
fn rework_why(run: &Run<'_>, node: &crate::task::TaskNode) -> String {
    format!(
        "{}: rework round {} of {} (`- **Rework**`): the artifacts from implement on are set \
         aside in logs/rework/ and implement runs again with the findings",
        node.decision
            .reason
            .as_deref()
            .unwrap_or("the referee did not pass it"),
        // Numbered as the round counts against `Rework` (a person's round does not).
        crate::store::rework::counted(&crate::store::rework::rounds(&node.dir)) + 1,
        run.cfg.rework
    )
}

/// `wave 1: a, b; wave 2: c` for a task's plan.
fn waves_in_words(node: &crate::task::TaskNode) -> String {
    match &node.snap.plan {
        Some(Ok(plan)) => plan
            .by_wave()
            .into_iter()
            .map(|(w, rows)| {
                let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
                format!("wave {w}: {}", names.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => String::new(),
    }
}
