//! Text and JSON renderings of what the core decided. Nothing here decides a state: it only
//! shapes a [`TaskTree`] for people and scripts. The one thing read from a task folder here is
//! the usage totals of its run journal (`logs/journal.jsonl`).

pub mod graph;
mod text;
pub mod waiting;

pub use text::{Report, render_fix_tasks, render_report, render_task};

use crate::git::Repo;
use crate::plan::gate::Gate;
use crate::settings::{Key, Settings};
use crate::state::{Artifact, Counts, Phase, PhaseConfig, State};
use crate::store::isolation::IsolationRecord;
use crate::store::journal::{self, Usage};
use crate::task::TaskTree;
use crate::task::fix::{FixTask, planned_fix_tasks};
use crate::units::thousands;
use serde::Serialize;
use std::fmt::Write as _;
pub use waiting::{PersonDecision, Wait, WaitingFor};

/// The version of the `status --json` document.
pub const STATUS_FORMAT_VERSION: u32 = 1;

/// The phase config the settings choose.
pub fn phase_config(settings: &Settings) -> PhaseConfig {
    PhaseConfig {
        decomposition: settings.bool(Key::Decomposition),
        design: settings.bool(Key::Design),
        test_design: settings.bool(Key::TestDesign),
    }
}

/// The gates of `Approve before` (phases, `subtasks`, `merge`).
pub fn approval_gates(settings: &Settings) -> Vec<crate::plan::gate::Gate> {
    settings.gates(Key::ApproveBefore)
}

/// One task as the reports show it (and as `status --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    pub path: String,
    pub name: String,
    pub parent: Option<String>,
    pub state: &'static str,
    /// The last phase done (`Research`), `New`, `Complete` or `Human Intervention`; the
    /// text report's `Status` line says it with what runs next ([`status_text`]).
    pub status: String,
    /// The text report's `Status` line: `Research done; next: design`.
    #[serde(skip)]
    pub status_text: String,
    /// A phase word, `subtasks` (waiting on them), `blocked` (a sub-task whose dependency did
    /// not pass: nothing to run until a human fixes that), `human` or `none`.
    pub next_step: String,
    /// The command that runs the next step (null when there is nothing to run).
    pub command: Option<String>,
    pub artifacts: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'static str>,
    /// Sub-task only: its wave and dependencies from the parent's DECOMPOSITION.md.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wave: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// What the task waits for before it can go on: `person`, `agent` (running now),
    /// `dependency` or `nothing` (see [`waiting`]); every report counts and draws it from here.
    pub waiting_for: WaitingFor,
    /// With `waiting_for: person`: the decision asked for (`approve_gate`, `decide_verdict`,
    /// `frozen_files`, `raise_budget`, `rerun_stale`, `resolve_conflict`, `review_stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<PersonDecision>,
    /// Why it waits (absent when it waits for nothing). For a sub-task that may not start yet
    /// by its parent's plan (a dependency or an earlier wave not ended, a wave's integration
    /// gate not passed, the parent stopped), `command` drives the parent, which starts it in
    /// turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtasks: Option<SubtaskSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix_tasks: Vec<FixTask>,
    /// Manual mode: commands run one phase (`--step`).
    #[serde(skip)]
    pub step: bool,
    /// Totals of the task's run journal (absent before its first phase run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Isolation `worktree`: the task's branch and worktree (null with `none`).
    pub branch: Option<String>,
    pub worktree: Option<String>,
    /// Whether the branch is merged: a sub-task's into its parent's integration branch, a
    /// top-level task's into the branch it started from (null without a branch).
    pub merged: Option<bool>,
    /// Commits on the branch since it was made, for a branch git counts as merged (absent
    /// otherwise): 0 means there was nothing to merge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_commits: Option<u64>,
    /// Top level: commits the integration branch has that its base branch has not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    /// Top level: the branch it started from, where `automaton merge` brings the work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
    /// Top level, complete and not merged: the command that merges its branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_command: Option<String>,
    /// The gated phase (`Approve before`) the task waits to have approved; null when none.
    pub awaiting_approval: Option<&'static str>,
    /// Why an earlier approval of that gate no longer holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_lapsed: Option<String>,
    /// The artifacts an approval would cover.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approval_covers: Vec<&'static str>,
    /// Artifacts built on inputs edited since (file names, lifecycle order).
    pub stale: Vec<&'static str>,
    /// Why they are stale, and the phase `rerun --from` should name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_from: Option<&'static str>,
    /// Frozen acceptance files changed since test_design (and by which phase); `automaton
    /// approve` accepts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frozen_changed: Option<String>,
    /// Spend against `Budget per task` (only when one is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetView>,
    /// The rework rounds the task had (`- **Rework**`: `logs/rework/<n>/`); absent before
    /// the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rework_round: Option<u32>,
    /// The questions the agent asked (QUESTIONS.md) that wait for `automaton answer`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<QuestionView>,
    /// A task stopped on its own verdict: the stop said with the task, its VERDICT.md and
    /// the way out, as `⚠️ HUMAN INTERVENTION REQUIRED` prints it (else the reason alone).
    #[serde(skip)]
    pub verdict_stop: Option<VerdictStop>,
    /// At the task-split gate (`Approve before: subtasks`): the plan a person approves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_plan: Option<SplitPlan>,
    /// At the merge gate (`Approve before: merge`): what the branch changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<Integration>,
}

/// The plan of a decomposed task waiting at the task-split gate, wave by wave.
#[derive(Debug, Clone, Serialize)]
pub struct SplitPlan {
    pub waves: Vec<SplitWave>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SplitWave {
    pub wave: u32,
    pub subtasks: Vec<SplitRow>,
}

/// One sub-task of the plan, as DECOMPOSITION.md lists it.
#[derive(Debug, Clone, Serialize)]
pub struct SplitRow {
    pub name: String,
    pub scope: String,
    /// Tokens; null when the row gives none.
    pub estimated_peak_context: Option<u64>,
    pub depends_on: Vec<String>,
    pub files: Vec<String>,
}

/// What a complete task's branch changes against the branch it started from, at the merge
/// gate.
#[derive(Debug, Clone, Serialize)]
pub struct Integration {
    pub branch: String,
    pub base_branch: Option<String>,
    /// How many files change, and the lines inserted and deleted in all.
    pub files: usize,
    pub insertions: u64,
    pub deletions: u64,
    /// Each file: `{"path", "insertions", "deletions"}`.
    pub changes: Vec<FileChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    pub path: String,
    pub insertions: u64,
    pub deletions: u64,
}

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

/// One question an agent asked, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionView {
    pub number: u32,
    pub text: String,
    pub options: Vec<String>,
    /// The recommended option's number (from 1).
    pub recommended: Option<usize>,
}

/// Every key of a task in `status --json`, and whether it is always there (else only where it
/// applies): the list the README gives, kept equal to [`TaskView`]'s fields by a test.
pub const TASK_KEYS: &[(&str, bool)] = &[
    ("path", true),
    ("name", true),
    ("parent", true),
    ("state", true),
    ("status", true),
    ("next_step", true),
    ("command", true),
    ("artifacts", true),
    ("reason", false),
    ("verdict", false),
    ("wave", false),
    ("depends_on", false),
    ("blocked_by", false),
    ("waiting_for", true),
    ("decision", false),
    ("waits_for", false),
    ("subtasks", false),
    ("fix_tasks", false),
    ("usage", false),
    ("branch", true),
    ("worktree", true),
    ("merged", true),
    ("own_commits", false),
    ("ahead", false),
    ("base_branch", false),
    ("merge_command", false),
    ("awaiting_approval", true),
    ("approval_lapsed", false),
    ("approval_covers", false),
    ("stale", true),
    ("stale_reason", false),
    ("rerun_from", false),
    ("frozen_changed", false),
    ("budget", false),
    ("rework_round", false),
    ("questions", false),
    ("split_plan", false),
    ("integration", false),
];

impl TaskView {
    /// What the task waits for, as the view holds it.
    pub fn wait(&self) -> Wait {
        Wait {
            on: self.waiting_for,
            decision: self.decision,
            why: self.waits_for.clone(),
            through: None,
        }
    }
}

/// One limit of a budget and what was spent against it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Limit<T> {
    pub spent: T,
    pub limit: T,
}

/// A task's spend against `Budget per task`.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Limit<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<Limit<f64>>,
    pub exceeded: bool,
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
    let top = node.parent.is_none();
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

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusDoc<'a> {
    pub version: u32,
    pub project: String,
    pub tasks: Vec<TaskView>,
    pub warnings: &'a [String],
}

/// A parent's view of its sub-tasks.
#[derive(Debug, Clone, Serialize)]
pub struct SubtaskSummary {
    pub counts: Counts,
    /// Sub-task names by wave, wave 1 first.
    pub waves: Vec<Vec<String>>,
    pub waiting_on: Vec<String>,
    pub blocked: Vec<Blocked>,
    pub missing: Vec<String>,
    pub orphans: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Blocked {
    pub name: String,
    pub by: String,
}

/// Quote a word for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A path quoted for a shell command line: as [`shell_quote`] when it is text; otherwise (a
/// name of bytes that are not UTF-8) in `$'…'` quoting, each such byte as `\xNN`, so the
/// printed command still names that very folder (bash, zsh, ksh and dash 0.5.12+ read it).
pub fn shell_quote_path(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    if let Some(s) = path.to_str() {
        return shell_quote(s);
    }
    let mut out = String::from("$'");
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
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
    let plan_row = node.parent.and_then(|p| {
        tree.nodes[p]
            .snap
            .plan
            .as_ref()
            .and_then(|plan| plan.as_ref().ok())
            .and_then(|plan| plan.row(node.name()).cloned())
    });
    let subtasks = match (&node.snap.plan, d.counts) {
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
    };
    let isolated = node
        .snap
        .has_isolation
        .then(|| crate::store::isolation::read(&node.dir))
        .flatten();
    let BranchFacts {
        merged,
        ahead,
        own_commits,
    } = isolated.as_ref().map_or(
        BranchFacts {
            merged: None,
            ahead: None,
            own_commits: None,
        },
        |r| branch_facts(tree, i, r),
    );
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
            .filter(|_| node.parent.is_none())
            .and_then(|r| r.base_branch.clone()),
        // `merge` refuses a branch that waits at the merge gate: approve comes first.
        merge_command: (state == State::Complete
            && node.parent.is_none()
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
        rework_round: node
            .snap
            .has_logs
            .then(|| crate::store::rework::count(&node.dir))
            .filter(|n| *n > 0),
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

/// The `Status` line of task `i`: what is done and what runs next, so that the last
/// finished phase is never read as the state (`Research done; next: design`, `New; next:
/// research`); a terminal state as it is (`Complete (state `complete`)`).
fn status_text(tree: &TaskTree, i: usize) -> String {
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

/// How the tasks a run was asked about stand, for the line every run ends with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub complete: usize,
    /// Waiting for a person: human_intervention, a gate, frozen files, stale artifacts.
    pub waiting: usize,
    /// Not terminal and no phase has written an artifact yet.
    pub not_started: usize,
    /// Not terminal, with work done.
    pub in_progress: usize,
}

impl Summary {
    /// Count the tasks `indices` of `tree`, each by what it waits for ([`waiting::wait_of`]):
    /// every task stopped for a person (a gate, a verdict, frozen files, stale artifacts, a
    /// budget, any recorded stop, a sub-task's) is waiting for a person.
    pub fn of(tree: &TaskTree, indices: impl IntoIterator<Item = usize>) -> Summary {
        let mut s = Summary::default();
        for i in indices {
            let n = &tree.nodes[i];
            // A complete task with stale artifacts waits for a person too (`rerun`).
            match n.state() {
                _ if waiting::wait_of(tree, i).is_person() => s.waiting += 1,
                State::Complete => s.complete += 1,
                _ if n.snap.artifacts.is_empty() => s.not_started += 1,
                _ => s.in_progress += 1,
            }
        }
        s
    }

    /// The same count over views already built (`watch`'s rows).
    pub fn of_views<'v>(views: impl IntoIterator<Item = &'v TaskView>) -> Summary {
        let mut s = Summary::default();
        for v in views {
            match v.state {
                _ if v.waiting_for == WaitingFor::Person => s.waiting += 1,
                "complete" => s.complete += 1,
                _ if v.artifacts.is_empty() => s.not_started += 1,
                _ => s.in_progress += 1,
            }
        }
        s
    }

    pub fn all_complete(&self) -> bool {
        self.waiting + self.not_started + self.in_progress == 0
    }

    /// `Summary: 2 complete, 1 waiting for a person, 0 not started` (`, 1 in progress` when
    /// there is such a task).
    pub fn line(&self) -> String {
        let mut s = format!(
            "Summary: {} complete, {} waiting for a person, {} not started",
            self.complete, self.waiting, self.not_started
        );
        if self.in_progress > 0 {
            s.push_str(&format!(", {} in progress", self.in_progress));
        }
        s
    }
}

/// Whether task `i` is, or is under, a sub-task its parent's DECOMPOSITION.md no longer lists
/// (an orphan: kept for its work, driven by nothing).
pub fn is_orphan(tree: &TaskTree, i: usize) -> bool {
    let mut j = i;
    while let Some(p) = tree.nodes[j].parent {
        if let Some(Ok(plan)) = &tree.nodes[p].snap.plan
            && plan.row(tree.nodes[j].name()).is_none()
        {
            return true;
        }
        j = p;
    }
    false
}

/// Print the warnings of a walk, one line each, on stderr.
pub fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

#[cfg(test)]
mod key_tests {
    use super::TASK_KEYS;

    /// `TASK_KEYS` names every serialized field of `TaskView`, in order, and says "always"
    /// exactly of those without `skip_serializing_if` (read from this file's source).
    #[test]
    fn task_keys_are_the_fields_of_task_view() {
        let source = include_str!("mod.rs");
        let start = source.find("pub struct TaskView {").expect("TaskView");
        let body = &source[start..];
        let body = &body[..body.find("\n}\n").expect("end of TaskView")];
        let mut fields = Vec::new();
        let mut attrs = String::new();
        for line in body.lines().skip(1) {
            let line = line.trim();
            if line.starts_with("#[") {
                attrs.push_str(line);
            } else if let Some(rest) = line.strip_prefix("pub ") {
                let name = rest.split(':').next().expect("a field").trim();
                if !attrs.contains("serde(skip)") {
                    fields.push((name, !attrs.contains("skip_serializing_if")));
                }
                attrs.clear();
            }
        }
        assert_eq!(fields, TASK_KEYS.to_vec());
    }
}
