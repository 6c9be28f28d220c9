//! Text and JSON renderings of what the core decided. Nothing here decides a state: it only
//! shapes a [`TaskTree`] for people and scripts. The one thing read from a task folder here is
//! the usage totals of its run journal (`logs/journal.jsonl`).

pub mod graph;
mod text;
mod view;
pub mod waiting;

pub use text::{Report, render_fix_tasks, render_report, render_task};
use view::*;
pub use view::{VerdictStop, blocked_by, referee_again, task_view, task_view_mode};

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

/// The `status --json` document, streamed: one task's view at a time, so memory does not
/// grow with the size of the output.
#[derive(Serialize)]
pub struct StatusDoc<'a> {
    pub version: u32,
    pub project: String,
    /// The run that holds the project now (`null` when none does).
    pub run: Option<crate::store::lock::Holder>,
    pub tasks: TaskViews<'a>,
    pub warnings: &'a [String],
}

/// Every task's view, built as it is written: the tree, the command prefix, and whether the
/// commands are manual mode's (`--step`).
pub struct TaskViews<'a>(pub &'a TaskTree, pub &'a str, pub bool);

impl Serialize for TaskViews<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let TaskViews(tree, prefix, step) = *self;
        s.collect_seq((0..tree.nodes.len()).map(|i| task_view_mode(tree, i, prefix, step)))
    }
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

/// The tasks a run asked about `rel` answers for: `rel` and its sub-tasks, but not an orphan
/// ([`is_orphan`]), which nothing drives. The end-of-run summary and `--manual`'s count these.
pub fn driven_scope(tree: &TaskTree, rel: &str) -> Vec<usize> {
    let below = format!("{rel}/");
    (0..tree.nodes.len())
        .filter(|i| {
            let r = &tree.nodes[*i].rel;
            (r == rel || r.starts_with(&below)) && !is_orphan(tree, *i)
        })
        .collect()
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
