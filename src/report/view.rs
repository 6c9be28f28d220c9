//! The view of one task, built once from the tree for every report: its state and status
//! line, the next step and the one command that moves it on, what it waits for, its stop said
//! whole, its branch, gate, budget and questions. `text.rs` renders it; `--json` serializes it.

use super::*;

/// The plan of a task at the task-split gate.
fn split_plan(node: &crate::task::TaskNode) -> Option<SplitPlan> {
    let Some(Ok(plan)) = &node.snap.plan else {
        return None;
    };
    Some(SplitPlan {
        waves: plan
            .by_wave()
            .into_iter()
            .map(|(wave, rows)| SplitWave {
                wave,
                subtasks: rows
                    .iter()
                    .map(|r| SplitRow {
                        name: r.name.clone(),
                        scope: r.scope.clone(),
                        estimated_peak_context: r.estimate,
                        depends_on: r.depends_on.clone(),
                        files: r.files.clone(),
                    })
                    .collect(),
            })
            .collect(),
    })
}

/// What a task's branch changes against its base, for the merge gate (none when git cannot
/// tell).
fn integration(node: &crate::task::TaskNode, rec: &IsolationRecord) -> Option<Integration> {
    let base = rec.base_branch.clone()?;
    let diff = Repo::at(&node.dir).diff_summary(&base, &rec.branch).ok()?;
    Some(Integration {
        branch: rec.branch.clone(),
        files: diff.files.len(),
        insertions: diff.insertions(),
        deletions: diff.deletions(),
        changes: diff
            .files
            .iter()
            .map(|(path, insertions, deletions)| FileChange {
                path: path.clone(),
                insertions: *insertions,
                deletions: *deletions,
            })
            .collect(),
        base_branch: Some(base),
    })
}

fn budget_view(budget: &crate::plan::decide::Budget, usage: Option<&Usage>) -> BudgetView {
    let spent = crate::plan::decide::Spend {
        tokens: usage.and_then(|u| u.tokens).unwrap_or(0),
        usd: usage.and_then(|u| u.cost_usd).unwrap_or(0.0),
    };
    BudgetView {
        tokens: budget.tokens.map(|limit| Limit {
            spent: spent.tokens,
            limit,
        }),
        usd: budget.usd.map(|limit| Limit {
            spent: spent.usd,
            limit,
        }),
        exceeded: budget.exceeded(&spent).is_some(),
    }
}

/// What git says of an isolated task's branch: whether it is merged, the commits it has
/// that its base branch has not, and the commits it has since it was made.
#[derive(Default)]
struct BranchFacts {
    merged: Option<bool>,
    ahead: Option<u64>,
    own_commits: Option<u64>,
}

fn branch_facts(tree: &TaskTree, i: usize, rec: &IsolationRecord) -> BranchFacts {
    let node = &tree.nodes[i];
    let repo = Repo::at(&node.dir);
    let own_commits = || repo.ahead(&rec.base, &rec.branch).ok();
    let target = match node.parent {
        Some(p) => crate::store::isolation::read(&tree.nodes[p].dir).map(|r| r.branch),
        None => rec.base_branch.clone(),
    };
    let Some(target) = target else {
        return BranchFacts {
            merged: None,
            ahead: None,
            own_commits: own_commits(),
        };
    };
    // Two git questions a task, as `status` and every `watch` refresh ask them: a merged
    // branch is ahead of nothing, and only there can "merged" mean "nothing to merge"; a
    // branch not merged has commits of its own.
    let merged = repo.is_ancestor(&rec.branch, &target).ok();
    let top = node.is_top_level();
    match merged {
        Some(true) => BranchFacts {
            merged,
            ahead: top.then_some(0),
            own_commits: own_commits(),
        },
        _ => BranchFacts {
            merged,
            ahead: top.then(|| repo.ahead(&target, &rec.branch).ok()).flatten(),
            own_commits: None,
        },
    }
}

fn status_label(tree: &TaskTree, i: usize) -> String {
    let node = &tree.nodes[i];
    match node.state() {
        State::Complete => "Complete".into(),
        State::HumanIntervention => "Human Intervention".into(),
        _ => match node.snap.artifacts.highest() {
            None => match node.snap.origin.as_ref() {
                Some(o) => match &o.from {
                    Some(from) => format!("New (from {from}, starts at `{}`)", o.start),
                    None => format!("New (starts at `{}`)", o.start),
                },
                None => "New".into(),
            },
            Some(a) => crate::state::Phase::ALL
                .into_iter()
                .find(|p| p.artifact() == a)
                .map_or("New", |p| p.title())
                .into(),
        },
    }
}

/// The sub-task whose failure blocks sub-task `i`, as its parent's decision says.
pub fn blocked_by(tree: &TaskTree, i: usize) -> Option<String> {
    let node = &tree.nodes[i];
    node.parent.and_then(|p| {
        tree.nodes[p]
            .decision
            .blocked
            .iter()
            .find(|(n, _)| *n == node.name())
            .map(|(_, by)| by.clone())
    })
}

/// Build the view of task `i`, with the autopilot's command (`orchestrate --task T`).
pub fn task_view(tree: &TaskTree, i: usize, prefix: &str) -> TaskView {
    task_view_mode(tree, i, prefix, false)
}

/// Build the view of task `i`; `step`: manual mode, whose command runs one phase
/// (`orchestrate --task T --step`).
pub fn task_view_mode(tree: &TaskTree, i: usize, prefix: &str, step: bool) -> TaskView {
    let node = &tree.nodes[i];
    let d = &node.decision;
    let state = node.state();
    let facts = waiting::facts(tree, i);
    let wait = waiting::wait_from(tree, i, &facts);
    let fix_tasks = planned_fix_tasks(tree, i);
    let (next_step, command) = next_of(tree, i, &facts, &wait, &fix_tasks, prefix, step);
    let blocked_by = facts.blocked_by.clone();
    let rerun_from = facts.rerun_from.map(|p| p.word());
    let awaiting = facts.awaiting.map(|p| p.word());
    let frozen_changed = facts.frozen_changed.clone();
    // No `logs/` in the listing: no journal, no usage (and no failed open per task).
    let usage = node
        .snap
        .has_logs
        .then(|| journal::usage(&node.dir))
        .flatten();
    let budget = tree
        .budget
        .filter(|b| b.is_set())
        .map(|b| budget_view(&b, usage.as_ref()));
    let plan_row = plan_row(tree, node);
    let subtasks = subtask_summary(node);
    let isolated = node
        .snap
        .has_isolation
        .then(|| crate::store::isolation::read(&node.dir))
        .flatten();
    let BranchFacts {
        merged,
        ahead,
        own_commits,
    } = isolated
        .as_ref()
        .map_or_else(BranchFacts::default, |r| branch_facts(tree, i, r));
    let verdict_stop = verdict_stop(tree, i, &wait, &fix_tasks, command.as_deref(), prefix, step);
    let at_gate = |g: Gate| facts.awaiting == Some(g);
    let split_plan = at_gate(Gate::Subtasks).then(|| split_plan(node)).flatten();
    let integration = isolated
        .as_ref()
        .filter(|_| at_gate(Gate::Merge))
        .and_then(|r| integration(node, r));
    TaskView {
        path: node.rel.clone(),
        name: node.name().to_string(),
        parent: node.parent.map(|p| tree.nodes[p].rel.clone()),
        state: state.word(),
        status: status_label(tree, i),
        status_text: status_text(tree, i),
        next_step,
        command,
        artifacts: node
            .snap
            .artifacts
            .iter()
            .map(Artifact::file_name)
            .collect(),
        reason: d.reason.clone(),
        verdict: node.verdict().map(|v| v.word()),
        wave: plan_row.as_ref().map(|r| r.wave),
        depends_on: plan_row.map(|r| r.depends_on).unwrap_or_default(),
        blocked_by,
        waiting_for: wait.on,
        decision: wait.decision,
        waits_for: wait.why,
        subtasks,
        fix_tasks,
        step,
        usage,
        merged,
        own_commits,
        ahead,
        base_branch: isolated
            .as_ref()
            .filter(|_| node.is_top_level())
            .and_then(|r| r.base_branch.clone()),
        // `merge` refuses a branch that waits at the merge gate: approve comes first.
        merge_command: (state == State::Complete
            && node.is_top_level()
            && isolated.is_some()
            && merged == Some(false)
            && !at_gate(Gate::Merge))
        .then(|| format!("{prefix} merge {}", node.rel)),
        branch: isolated.as_ref().map(|r| r.branch.clone()),
        worktree: isolated.map(|r| r.worktree),
        awaiting_approval: awaiting,
        approval_lapsed: node.approval.as_ref().and_then(|w| w.lapsed.clone()),
        approval_covers: node
            .approval
            .as_ref()
            .map(|w| w.covers.clone())
            .unwrap_or_default(),
        stale: node.stale.iter().map(|s| s.artifact).collect(),
        stale_reason: facts.stale_reason,
        rerun_from,
        frozen_changed,
        budget,
        rework_round: rework_round(node),
        questions: if node.snap.questions {
            questions_of(&node.dir)
        } else {
            Vec::new()
        },
        verdict_stop,
        split_plan,
        integration,
    }
}

/// What a parent's report says of its sub-tasks: the counts, the waves of its plan, and what
/// is waited on, blocked, missing or orphaned.
fn subtask_summary(node: &crate::task::TaskNode) -> Option<SubtaskSummary> {
    let d = &node.decision;
    match (&node.snap.plan, d.counts) {
        (Some(Ok(plan)), Some(counts)) => Some(SubtaskSummary {
            counts,
            waves: plan
                .by_wave()
                .into_iter()
                .map(|(_, rows)| rows.iter().map(|r| r.name.clone()).collect())
                .collect(),
            waiting_on: d.waiting_on.clone(),
            blocked: d
                .blocked
                .iter()
                .map(|(n, by)| Blocked {
                    name: n.clone(),
                    by: by.clone(),
                })
                .collect(),
            missing: d.missing.clone(),
            orphans: d.orphans.clone(),
        }),
        _ => None,
    }
}

/// The row of a sub-task in its parent's plan (its wave and dependencies).
fn plan_row(
    tree: &TaskTree,
    node: &crate::task::TaskNode,
) -> Option<crate::artifact::decomposition::SubtaskRow> {
    node.parent.and_then(|p| {
        tree.nodes[p]
            .snap
            .plan
            .as_ref()
            .and_then(|plan| plan.as_ref().ok())
            .and_then(|plan| plan.row(node.name()).cloned())
    })
}

/// The rework round a task is in (none before the first): the rounds `logs/rework/` holds.
fn rework_round(node: &crate::task::TaskNode) -> Option<u32> {
    node.snap
        .has_logs
        .then(|| crate::store::rework::count(&node.dir))
        .filter(|n| *n > 0)
}

/// The `Status` line of task `i`: what is done and what runs next, so that the last
/// finished phase is never read as the state (`Research done; next: design`, `New; next:
/// research`); a terminal state as it is (`Complete (state `complete`)`).
pub(super) fn status_text(tree: &TaskTree, i: usize) -> String {
    let node = &tree.nodes[i];
    let state = node.state();
    let State::Next(phase) = state else {
        return format!("{} (state `{}`)", status_label(tree, i), state.word());
    };
    let done = match node.snap.artifacts.highest() {
        Some(_) => format!("{} done", status_label(tree, i)),
        None => match node.snap.origin.as_ref().and_then(|o| o.from.as_ref()) {
            Some(from) => format!("New (from {from})"),
            None => "New".into(),
        },
    };
    // A parent with its plan stays `decomposition` while its sub-tasks run.
    if phase == Phase::Decomposition && node.snap.plan.is_some() {
        return format!("{done}; next: its sub-tasks (state `{}`)", state.word());
    }
    format!("{done}; next: {}", phase.word())
}

/// Where a failed verdict's fix tasks stand, which decides the way out of it.
enum FixProgress<'f> {
    NoFixTasks,
    /// Some are planned and not made yet (`--manual` makes them).
    ToCreate,
    /// The first that is not complete.
    Next(&'f FixTask),
    /// Every one is complete: the referee runs again.
    AllComplete,
}

impl<'f> FixProgress<'f> {
    fn of(fix_tasks: &'f [FixTask]) -> Self {
        if fix_tasks.is_empty() {
            FixProgress::NoFixTasks
        } else if fix_tasks.iter().any(|f| f.state.is_none()) {
            FixProgress::ToCreate
        } else if let Some(f) = fix_tasks.iter().find(|f| f.state != Some("complete")) {
            FixProgress::Next(f)
        } else {
            FixProgress::AllComplete
        }
    }
}

/// The stop of a task on its own FAIL or NEEDS_REVIEW verdict, said whole: the task, the
/// file that holds the verdict and the way out the view's command starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictStop {
    task: String,
    /// The verdict's reason, as the task's state says it.
    reason: String,
    /// `--manual` makes the fix tasks, then `--referee-again` (or edit the verdict).
    way_out: String,
}

impl VerdictStop {
    /// Whether a run's stop `reason` is this stop: the verdict's reason, alone or with what
    /// the run adds after it (why rework did not go on, and each round's cause).
    pub fn is(&self, reason: &str) -> bool {
        reason.starts_with(&self.reason)
    }

    /// The line, saying `reason` (the verdict's, or the run's that [`VerdictStop::is`] it).
    pub fn line(&self, reason: &str) -> String {
        let task = &self.task;
        format!("{task}: {reason} ({task}/VERDICT.md); {}", self.way_out)
    }
}

/// The [`VerdictStop`] of task `i`, if it stopped on its own verdict; none for any other stop.
fn verdict_stop(
    tree: &TaskTree,
    i: usize,
    wait: &Wait,
    fix_tasks: &[FixTask],
    command: Option<&str>,
    prefix: &str,
    step: bool,
) -> Option<VerdictStop> {
    let node = &tree.nodes[i];
    let reason = node.decision.reason.as_deref()?;
    if node.state() != State::HumanIntervention
        || wait.decision != Some(PersonDecision::DecideVerdict)
        || wait.through.is_some()
    {
        return None;
    }
    let rel = &node.rel;
    let again = referee_again(prefix, rel, step);
    let command = command?;
    let way_out = match FixProgress::of(fix_tasks) {
        FixProgress::NoFixTasks => format!("edit or remove {rel}/VERDICT.md, then run `{command}`"),
        FixProgress::ToCreate => format!(
            "`{command}` creates its fix tasks; once they are complete, `{again}` runs its referee again"
        ),
        FixProgress::Next(_) => format!(
            "run its fix tasks (next: `{command}`); once they are complete, `{again}` runs its referee again"
        ),
        FixProgress::AllComplete => {
            format!("its fix tasks are complete: `{again}` runs its referee again")
        }
    };
    Some(VerdictStop {
        task: rel.clone(),
        reason: reason.to_string(),
        way_out,
    })
}

/// The questions of a task's QUESTIONS.md (none when it cannot be read or parsed: the stop
/// names why).
fn questions_of(dir: &std::path::Path) -> Vec<QuestionView> {
    use crate::artifact::questions::{QUESTIONS_FILE, parse_questions};
    let text = crate::fsx::read_to_string(dir.join(QUESTIONS_FILE)).unwrap_or_default();
    parse_questions(&text)
        .unwrap_or_default()
        .into_iter()
        .map(|q| QuestionView {
            number: q.number,
            text: q.text,
            options: q.options,
            recommended: q.recommended.map(|i| i + 1),
        })
        .collect()
}

/// The next step of task `i` and the one command that moves it on: for a task that waits for
/// a person, that person's way out (approve, rerun, the fix tasks then `--referee-again`);
/// for a parent whose sub-task waits for a person, the sub-task's way out.
fn next_of(
    tree: &TaskTree,
    i: usize,
    f: &waiting::Facts,
    wait: &Wait,
    fix_tasks: &[FixTask],
    prefix: &str,
    step: bool,
) -> (String, Option<String>) {
    let node = &tree.nodes[i];
    let state = node.state();
    let step_flag = if step { " --step" } else { "" };
    let run = format!("{prefix} orchestrate --task {}{step_flag}", node.rel);
    match state {
        // Its agent runs now (its recorded pid is alive), so a run drives it: what a person
        // can do is follow it (`orchestrate --task` would be refused while that run goes on).
        s if wait.on == WaitingFor::Agent => (
            s.next_phase().map_or("none", |p| p.word()).to_string(),
            Some(format!("{prefix} logs {} -f", node.rel)),
        ),
        _ if let Some(from) = f.rerun_from => (
            "rerun".to_string(),
            Some(format!(
                "{prefix} rerun {} --from {}",
                node.rel,
                from.word()
            )),
        ),
        State::Complete if f.awaiting.is_some() => (
            "approve".to_string(),
            Some(format!("{prefix} approve {}", node.rel)),
        ),
        State::Complete => ("none".to_string(), None),
        // Its waves will not run it, and running it alone would skip the failed dependency.
        _ if f.blocked_by.is_some() => ("blocked".to_string(), None),
        State::HumanIntervention => (
            "human".to_string(),
            Some(
                if wait.decision == Some(PersonDecision::AnswerQuestions) && wait.through.is_none()
                {
                    format!("{prefix} answer {}", node.rel)
                } else {
                    match FixProgress::of(fix_tasks) {
                        FixProgress::ToCreate => format!("{prefix} orchestrate --manual"),
                        // The fix tasks come first; the one to run next.
                        FixProgress::Next(f) => {
                            format!("{prefix} orchestrate --task {}{step_flag}", f.path)
                        }
                        FixProgress::AllComplete => referee_again(prefix, &node.rel, step),
                        // Running the parent again stops the same way: the sub-task's way out.
                        FixProgress::NoFixTasks if wait.through.is_some() => {
                            subtasks_way_out(tree, i, prefix, step).unwrap_or(run)
                        }
                        FixProgress::NoFixTasks => run,
                    }
                },
            ),
        ),
        _ if f.awaiting.is_some() || f.frozen_changed.is_some() => (
            "approve".to_string(),
            Some(format!("{prefix} approve {}", node.rel)),
        ),
        _ if f.on_subtasks => (
            "subtasks".to_string(),
            Some(if wait.through.is_some() {
                subtasks_way_out(tree, i, prefix, step).unwrap_or(run)
            } else {
                run
            }),
        ),
        // A sub-task that may not start yet (its dependencies or wave have not ended, its
        // wave's gate has not passed): only its parent's drive moves it on in order.
        s if let Some(parent) = node.parent.filter(|_| f.dependency.is_some()) => (
            s.next_phase().map_or("none", |p| p.word()).to_string(),
            Some(format!(
                "{prefix} orchestrate --task {}{step_flag}",
                tree.nodes[parent].rel
            )),
        ),
        s => (
            s.next_phase().map_or("none", |p| p.word()).to_string(),
            Some(run),
        ),
    }
}

/// The way out for a parent whose sub-tasks wait for a person: `approve <parent> --all` when
/// several wait and every one of them is approved away, else the first one's command.
fn subtasks_way_out(tree: &TaskTree, i: usize, prefix: &str, step: bool) -> Option<String> {
    let subs = waiting::subtasks_waiting(tree, i);
    if subs.len() > 1
        && subs
            .iter()
            .all(|(_, w)| w.decision.is_some_and(PersonDecision::approved))
    {
        return Some(format!("{prefix} approve {} --all", tree.nodes[i].rel));
    }
    let (c, w) = subs.first()?;
    let f = waiting::facts(tree, *c);
    let fixes = planned_fix_tasks(tree, *c);
    next_of(tree, *c, &f, w, &fixes, prefix, step).1
}

/// The command that runs a task's referee again once its fix tasks are done.
pub fn referee_again(prefix: &str, rel: &str, step: bool) -> String {
    let step_flag = if step { " --step" } else { "" };
    format!("{prefix} orchestrate --task {rel} --referee-again{step_flag}")
}
