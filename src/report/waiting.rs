//! What each task waits for: one answer per task, built from what the task layer read (its
//! state, gate, frozen files, stale artifacts, recorded stop, plan and agent pid file), that
//! the `Summary:` line, `status` (text and `--json`), `watch` and the run's report all
//! render, so that they cannot disagree. Nothing here runs a process: an agent is seen by its
//! pid file and `/proc`.

use crate::state::{Artifact, Cause, Phase, State};
use crate::task::TaskTree;
use serde::Serialize;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

/// Who or what a task waits for before it can go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingFor {
    /// A person must decide (see [`PersonDecision`]); no run moves it on before.
    Person,
    /// Its phase agent is running now.
    Agent,
    /// A sub-task whose dependency, earlier wave or integration gate has not ended (or did not
    /// pass), or a parent whose sub-tasks have not ended.
    Dependency,
    /// Nothing: its command runs the next step (or it is complete).
    Nothing,
}

impl WaitingFor {
    pub fn word(self) -> &'static str {
        match self {
            WaitingFor::Person => "person",
            WaitingFor::Agent => "agent",
            WaitingFor::Dependency => "dependency",
            WaitingFor::Nothing => "nothing",
        }
    }
}

/// The decision a person is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PersonDecision {
    /// The next phase is gated (`Approve before`): `automaton approve` (or `reject`).
    ApproveGate,
    /// The referee said FAIL or NEEDS_REVIEW: fix tasks (`--manual`), then `--referee-again`.
    DecideVerdict,
    /// A frozen acceptance file changed: restore it, or accept it with `automaton approve`.
    FrozenFiles,
    /// `Budget per task` was passed: raise it in config.md, then run the task again.
    RaiseBudget,
    /// Artifacts are stale: `automaton rerun --from <phase>`.
    RerunStale,
    /// A sub-task's merge-back conflicted: merge it by hand, then run the parent again.
    ResolveConflict,
    /// The agent asked questions (QUESTIONS.md): `automaton answer`.
    AnswerQuestions,
    /// Any other stop (the agent failed, a timeout, a bad artifact, a cap): read the reason,
    /// then run the task again.
    ReviewStop,
}

impl PersonDecision {
    pub fn word(self) -> &'static str {
        match self {
            PersonDecision::ApproveGate => "approve_gate",
            PersonDecision::DecideVerdict => "decide_verdict",
            PersonDecision::FrozenFiles => "frozen_files",
            PersonDecision::RaiseBudget => "raise_budget",
            PersonDecision::RerunStale => "rerun_stale",
            PersonDecision::ResolveConflict => "resolve_conflict",
            PersonDecision::AnswerQuestions => "answer_questions",
            PersonDecision::ReviewStop => "review_stop",
        }
    }

    /// What the person is asked to do, in a few words.
    pub fn ask(self) -> &'static str {
        match self {
            PersonDecision::ApproveGate => "approve the gate",
            PersonDecision::DecideVerdict => "decide on the verdict",
            PersonDecision::FrozenFiles => "restore or accept the changed frozen files",
            PersonDecision::RaiseBudget => "raise `- **Budget per task**` in config.md",
            PersonDecision::RerunStale => "rerun the stale artifacts",
            PersonDecision::ResolveConflict => "resolve the merge conflict",
            PersonDecision::AnswerQuestions => "answer the agent's questions",
            PersonDecision::ReviewStop => "look at the stop",
        }
    }

    /// Whether `automaton approve` is the way out.
    pub fn approved(self) -> bool {
        matches!(
            self,
            PersonDecision::ApproveGate | PersonDecision::FrozenFiles
        )
    }
}

/// What one task waits for, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub on: WaitingFor,
    /// Only when `on` is a person.
    pub decision: Option<PersonDecision>,
    /// Why, in words (none when it waits for nothing).
    pub why: Option<String>,
    /// A parent waiting on a sub-task's person: that sub-task (its command is the way out).
    pub through: Option<usize>,
}

impl Wait {
    fn nothing() -> Wait {
        Wait {
            on: WaitingFor::Nothing,
            decision: None,
            why: None,
            through: None,
        }
    }

    fn person(decision: PersonDecision, why: Option<String>) -> Wait {
        Wait {
            on: WaitingFor::Person,
            decision: Some(decision),
            why,
            through: None,
        }
    }

    fn on(on: WaitingFor, why: String) -> Wait {
        Wait {
            on,
            decision: None,
            why: Some(why),
            through: None,
        }
    }

    pub fn is_person(&self) -> bool {
        self.on == WaitingFor::Person
    }

    /// `a person (approve the gate): approval before design`, for text reports.
    pub fn line(&self) -> Option<String> {
        let who = match (self.on, self.decision) {
            (WaitingFor::Nothing, _) => return None,
            (WaitingFor::Person, Some(d)) => format!("a person ({})", d.ask()),
            (WaitingFor::Person, None) => "a person".into(),
            (WaitingFor::Agent, _) => "its agent".into(),
            (WaitingFor::Dependency, _) => "a dependency".into(),
        };
        Some(match &self.why {
            Some(why) => format!("{who}: {why}"),
            None => who,
        })
    }
}

/// The start of the reason of a task stopped on `Budget per task` (the run layer words it).
pub const TASK_BUDGET_REASON: &str = "budget per task exceeded";

/// What was read of task `i` that decides what it waits for (and its command).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub awaiting: Option<crate::plan::gate::Gate>,
    pub frozen_changed: Option<String>,
    pub rerun_from: Option<Phase>,
    pub stale_reason: Option<String>,
    pub blocked_by: Option<String>,
    /// A sub-task that may not start yet by its parent's plan: why.
    pub dependency: Option<String>,
    /// A parent with a plan, waiting on its sub-tasks.
    pub on_subtasks: bool,
}

/// Read the facts of task `i`.
pub fn facts(tree: &TaskTree, i: usize) -> Facts {
    let node = &tree.nodes[i];
    let state = node.state();
    Facts {
        awaiting: node.approval.as_ref().map(|w| w.gate),
        frozen_changed: match state {
            // The listing saw no `.state.frozen`: nothing is frozen, nothing to read.
            State::Next(p) if p.artifact() > Artifact::TestPlan && node.snap.has_frozen => {
                crate::task::frozen::summary(&node.dir)
            }
            _ => None,
        },
        rerun_from: crate::task::gates::rerun_phase(&node.stale),
        stale_reason: crate::task::gates::stale_summary(&node.stale),
        blocked_by: super::blocked_by(tree, i),
        dependency: crate::task::readiness::waits_for(tree, i, tree.waves),
        on_subtasks: state == State::Next(Phase::Decomposition) && node.snap.plan.is_some(),
    }
}

/// What task `i` waits for.
pub fn wait_of(tree: &TaskTree, i: usize) -> Wait {
    wait_from(tree, i, &facts(tree, i))
}

/// What task `i` waits for, from its facts (read once by the caller).
pub fn wait_from(tree: &TaskTree, i: usize, f: &Facts) -> Wait {
    let node = &tree.nodes[i];
    let state = node.state();
    if f.rerun_from.is_some() {
        return Wait::person(PersonDecision::RerunStale, f.stale_reason.clone());
    }
    match state {
        // Complete, but its branch waits at the merge gate (below).
        State::Complete if f.awaiting.is_some() => {}
        State::Complete => return Wait::nothing(),
        _ if let Some(by) = &f.blocked_by => {
            return Wait::on(
                WaitingFor::Dependency,
                format!("blocked by {by}, which did not pass"),
            );
        }
        State::HumanIntervention => {
            let d = &node.decision;
            let reason = d.reason.clone();
            let decision = match d.cause {
                Some(Cause::Verdict) => PersonDecision::DecideVerdict,
                Some(Cause::Questions) => PersonDecision::AnswerQuestions,
                Some(Cause::Subtasks) => {
                    if let Some(w) = first_person(tree, child_waits(tree, i)) {
                        return w;
                    }
                    PersonDecision::ReviewStop
                }
                Some(Cause::Stopped) => match reason.as_deref() {
                    Some(r) if r.starts_with(TASK_BUDGET_REASON) => PersonDecision::RaiseBudget,
                    Some(r) if r.contains(" conflicts in ") => PersonDecision::ResolveConflict,
                    _ => PersonDecision::ReviewStop,
                },
                _ => PersonDecision::ReviewStop,
            };
            return Wait::person(decision, reason);
        }
        _ => {}
    }
    if let Some(gate) = f.awaiting {
        let lapsed = node
            .approval
            .as_ref()
            .map(|w| w.lapsed_note())
            .unwrap_or_default();
        return Wait::person(
            PersonDecision::ApproveGate,
            Some(format!("approval before {}{lapsed}", gate.before())),
        );
    }
    if let Some(what) = &f.frozen_changed {
        return Wait::person(
            PersonDecision::FrozenFiles,
            Some(format!("frozen acceptance files changed: {what}")),
        );
    }
    if f.on_subtasks {
        // Only when none of its sub-tasks can go on: while one can, its drive runs it.
        let waits = child_waits(tree, i);
        if !can_go_on(tree, i, &waits)
            && let Some(w) = first_person(tree, waits)
        {
            return w;
        }
        if !node.decision.waiting_on.is_empty() {
            return Wait::on(
                WaitingFor::Dependency,
                format!(
                    "its sub-tasks, not ended yet: {}",
                    node.decision.waiting_on.join(", ")
                ),
            );
        }
    }
    if let Some(why) = &f.dependency {
        return Wait::on(WaitingFor::Dependency, why.clone());
    }
    if node.snap.has_logs
        && let Some(r) = running_agent(&node.dir.join("logs"))
    {
        return Wait::on(WaitingFor::Agent, format!("running now (pid {})", r.pid));
    }
    Wait::nothing()
}

/// What each sub-task of `i` waits for, in name order.
fn child_waits(tree: &TaskTree, i: usize) -> Vec<(usize, Wait)> {
    tree.nodes[i]
        .children
        .iter()
        .map(|&c| (c, wait_of(tree, c)))
        .collect()
}

/// Whether a drive of parent `i` would run one of its sub-tasks: one not created yet, or one
/// its plan lists that waits for nothing but its turn (or whose agent runs now).
fn can_go_on(tree: &TaskTree, i: usize, waits: &[(usize, Wait)]) -> bool {
    let node = &tree.nodes[i];
    let d = &node.decision;
    d.missing
        .iter()
        .any(|m| !d.blocked.iter().any(|(name, _)| name == m))
        || waits.iter().any(|(c, w)| {
            let listed = match &node.snap.plan {
                Some(Ok(plan)) => plan.row(tree.nodes[*c].name()).is_some(),
                _ => true,
            };
            listed
                && tree.nodes[*c].state() != State::Complete
                && matches!(w.on, WaitingFor::Nothing | WaitingFor::Agent)
        })
}

/// The first of `waits` that is a person's: that person's wait, seen from the parent
/// (`through` names the sub-task whose command is the way out).
fn first_person(tree: &TaskTree, waits: Vec<(usize, Wait)>) -> Option<Wait> {
    waits
        .into_iter()
        .find(|(_, w)| w.is_person())
        .map(|(c, w)| Wait {
            why: Some(format!(
                "{} waits for a person{}",
                tree.nodes[c].rel,
                w.why
                    .as_deref()
                    .map(|y| format!(": {y}"))
                    .unwrap_or_default()
            )),
            through: Some(w.through.unwrap_or(c)),
            ..w
        })
}

/// The sub-tasks of `i` (any depth) that wait for a person, each with its wait.
pub fn subtasks_waiting(tree: &TaskTree, i: usize) -> Vec<(usize, Wait)> {
    let mut out = Vec::new();
    for &c in &tree.nodes[i].children {
        let w = wait_of(tree, c);
        if w.is_person() {
            match w.through {
                Some(_) => out.extend(subtasks_waiting(tree, c)),
                None => out.push((c, w)),
            }
        }
    }
    out
}

/// A phase agent at work in a task (its `logs/agent.pid` names a live process).
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    pub pid: u32,
    /// When the pid file was written: the phase's start.
    pub since: SystemTime,
}

/// `logs/agent.pid` (written by the agent runner) naming a live process group.
pub fn running_agent(logs: &Path) -> Option<Running> {
    let path = logs.join("agent.pid");
    let record = crate::store::agent_pid::AgentPidRecord::read(&path).ok()??;
    let crate::store::agent_pid::Agent::Group { pid, .. } = record.agent else {
        return None;
    };
    if !pid_alive(pid) {
        return None;
    }
    let since = fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| SystemTime::now());
    Some(Running { pid, since })
}

/// Whether a process exists (Linux: its /proc entry; elsewhere the pid file is trusted).
pub fn pid_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}
