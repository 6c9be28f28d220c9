//! The text report people read, from the views `mod.rs` builds: one block per task (`status`,
//! the end of a run), its fix tasks, and the whole tree's report. `--json` serializes the same
//! views, so the two cannot disagree on a fact.

use super::*;

/// `- **Budget**: 8,723 of 5,000 tokens, $0.04 of $1.00 (exceeded)`.
fn budget_line(b: &BudgetView) -> String {
    let mut parts = Vec::new();
    if let Some(t) = b.tokens {
        parts.push(format!(
            "{} of {} tokens",
            thousands(t.spent),
            thousands(t.limit)
        ));
    }
    if let Some(d) = b.usd {
        parts.push(format!("${:.2} of ${:.2}", d.spent, d.limit));
    }
    let mut line = parts.join(", ");
    if b.exceeded {
        line.push_str(" (exceeded: raise `- **Budget per task**` in config.md to go on)");
    }
    line
}

/// `- **Usage**: 1,234 tokens, $0.12, 8 phases (1,200 in / 34 out, 9.5s, claude-x)`, only when
/// an agent reported tokens or a cost.
fn usage_line(u: &Usage) -> Option<String> {
    if !u.reported() {
        return None;
    }
    let mut head = Vec::new();
    let mut detail = Vec::new();
    if let Some(t) = u.tokens {
        head.push(format!("{} tokens", thousands(t)));
        detail.push(format!(
            "{} in / {} out",
            thousands(u.input_tokens.unwrap_or(0)),
            thousands(u.output_tokens.unwrap_or(0))
        ));
    }
    if let Some(c) = u.cost_usd {
        head.push(format!("${c:.2}"));
    }
    head.push(format!(
        "{} phase{}",
        u.phases,
        if u.phases == 1 { "" } else { "s" }
    ));
    detail.push(format!("{:.1}s", u.seconds));
    detail.extend(u.models.iter().cloned());
    Some(format!("{} ({})", head.join(", "), detail.join(", ")))
}

fn next_step_title(v: &TaskView) -> String {
    match v.next_step.as_str() {
        "none" => "None (complete)".into(),
        "human" => "Human decision".into(),
        "approve" => match v.awaiting_approval {
            Some("subtasks") => "Approval of the task split (waiting for a person)".into(),
            Some("merge") => "Approval of the merge (waiting for a person)".into(),
            Some(gate) => format!("Approval of {gate} (waiting for a person)"),
            None => "Approval of the changed frozen acceptance files (waiting for a person)".into(),
        },
        "rerun" => format!(
            "Rerun from {} (stale artifacts)",
            v.rerun_from.unwrap_or("?")
        ),
        "blocked" => match &v.blocked_by {
            Some(by) => format!("Blocked (fix sub-task {by} first)"),
            None => "Blocked".into(),
        },
        "subtasks" => match &v.subtasks {
            Some(s) if !s.waiting_on.is_empty() => {
                format!("Sub-tasks (waiting on {})", s.waiting_on.join(", "))
            }
            _ => "Sub-tasks".into(),
        },
        word => crate::state::Phase::ALL
            .into_iter()
            .find(|p| p.word() == word)
            .map_or(word.to_string(), |p| p.title().to_string()),
    }
}

/// The seed's report block for one task.
pub fn render_task(v: &TaskView, auto_execute: bool, out: &mut String) {
    let _ = writeln!(out, "**Task: {}**", v.path);
    let _ = writeln!(out, "- **Status**: {}", v.status_text);
    let _ = writeln!(out, "- **Next Step**: {}", next_step_title(v));
    let _ = writeln!(
        out,
        "- **Auto-Execute**: {}",
        if auto_execute { "YES" } else { "NO" }
    );
    match &v.command {
        // On a line of its own, with nothing around it, so that it can be copied as it is.
        Some(c) => {
            let _ = writeln!(out, "- **Command**:\n  {c}");
        }
        None => {
            let _ = writeln!(out, "- **Command**: none");
        }
    }
    if let Some(w) = v.wave {
        let deps = if v.depends_on.is_empty() {
            "-".to_string()
        } else {
            v.depends_on.join(", ")
        };
        let _ = writeln!(out, "- **Wave**: {w} (depends on: {deps})");
    }
    if let Some(by) = &v.blocked_by {
        let _ = writeln!(out, "- **Blocked by**: {by} (did not pass)");
    }
    // A stopped task says so twice already (`Human decision`, and its reason below), unless
    // what it waits for is a sub-task's decision.
    let own_stop = v.state == State::HumanIntervention.word()
        && (v.waits_for.is_none() || v.waits_for == v.reason);
    let mut wait = v.wait();
    if own_stop {
        // Who decides, and what: the stop line below says why.
        wait.why = None;
    }
    if let Some(line) = wait.line() {
        let _ = writeln!(out, "- **Waiting for**: {line}");
    }
    if let Some(s) = &v.subtasks {
        render_subtasks(s, out);
    }
    if let Some(branch) = &v.branch {
        render_branch(v, branch, out);
    }
    if let Some(gate) = v.awaiting_approval {
        render_approval(v, gate, out);
    }
    if let Some(why) = &v.approval_lapsed {
        let _ = writeln!(out, "- **Approval lapsed**: {why}");
    }
    if let Some(plan) = &v.split_plan {
        render_split_plan(plan, out);
    }
    if let Some(i) = &v.integration {
        render_integration(i, out);
    }
    if let Some(why) = &v.stale_reason {
        let _ = writeln!(out, "- **Stale**: {why}");
    }
    if let Some(why) = &v.frozen_changed {
        let _ = writeln!(
            out,
            "- **Frozen files changed**: {why}; accept with `automaton approve {}` or restore them",
            v.path
        );
    }
    if let Some(line) = v.usage.as_ref().and_then(usage_line) {
        let _ = writeln!(out, "- **Usage**: {line}");
    }
    if let Some(b) = &v.budget {
        let _ = writeln!(out, "- **Budget**: {}", budget_line(b));
    }
    render_questions(&v.questions, out);
    if let Some(n) = v.rework_round {
        let _ = writeln!(
            out,
            "- **Rework**: round {n} (what each round set aside, and why, is in {}/logs/rework/)",
            v.path
        );
    }
    if let Some(r) = &v.reason {
        let _ = writeln!(
            out,
            "\n⚠️ **HUMAN INTERVENTION REQUIRED**: {}",
            v.verdict_stop
                .as_ref()
                .map_or_else(|| r.clone(), |s| s.line(r))
        );
    }
}

/// `- **Sub-tasks**`: the counts, the waves, and what is blocked, missing or orphaned.
fn render_subtasks(s: &SubtaskSummary, out: &mut String) {
    let _ = writeln!(out, "- **Sub-tasks**: {}", s.counts);
    for (i, wave) in s.waves.iter().enumerate() {
        let _ = writeln!(out, "  - Wave {}: {}", i + 1, wave.join(", "));
    }
    if !s.blocked.is_empty() {
        let list: Vec<String> = s
            .blocked
            .iter()
            .map(|b| format!("{} (by {})", b.name, b.by))
            .collect();
        let _ = writeln!(out, "- **Blocked**: {}", list.join(", "));
    }
    if !s.missing.is_empty() {
        let _ = writeln!(out, "- **Not created yet**: {}", s.missing.join(", "));
    }
    if !s.orphans.is_empty() {
        let _ = writeln!(
            out,
            "- **Orphans** (not in DECOMPOSITION.md): {}",
            s.orphans.join(", ")
        );
    }
}

/// `- **Branch**`: the task's branch and how it stands against the branch it merges into.
fn render_branch(v: &TaskView, branch: &str, out: &mut String) {
    let _ = match (&v.base_branch, v.ahead, v.merged) {
        // git calls a branch without commits merged; there is nothing of it to merge.
        _ if v.own_commits == Some(0) => writeln!(
            out,
            "- **Branch**: {branch} (no commits of its own: nothing to merge)"
        ),
        (Some(base), _, Some(true)) => {
            writeln!(out, "- **Branch**: {branch} (merged into {base})")
        }
        (Some(base), Some(n), _) if v.state == "complete" => writeln!(
            out,
            "- **Branch**: {branch} ({n} commit{} ahead of {base}); take it with `{}`",
            if n == 1 { "" } else { "s" },
            v.merge_command.as_deref().unwrap_or("automaton merge")
        ),
        (Some(base), Some(n), _) => writeln!(
            out,
            "- **Branch**: {branch} ({n} commit{} ahead of {base})",
            if n == 1 { "" } else { "s" }
        ),
        (_, _, Some(true)) => writeln!(out, "- **Branch**: {branch} (merged)"),
        _ => writeln!(out, "- **Branch**: {branch}"),
    };
}

/// `- **Awaiting approval**`: the gate, what an approval covers, and the way to reject it.
fn render_approval(v: &TaskView, gate: &str, out: &mut String) {
    let covers = if v.approval_covers.is_empty() {
        String::new()
    } else {
        format!(" (covers {})", v.approval_covers.join(", "))
    };
    let _ = writeln!(
        out,
        "- **Awaiting approval**: {gate}{covers}; or reject it with `{} reject {} --reason '...'`",
        v.command
            .as_deref()
            .and_then(|c| c.strip_suffix(&format!(" approve {}", v.path)))
            .unwrap_or("automaton"),
        v.path
    );
}

/// `- **Questions**`: each question the agent asked, with the answer lines to pick from.
fn render_questions(questions: &[QuestionView], out: &mut String) {
    if questions.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "- **Questions** (answer each: `N=<option>` or `N=\"free text\"`):"
    );
    for q in questions {
        let _ = writeln!(out, "  {}. {}", q.number, q.text);
        let recommended = q.recommended.map(|n| n - 1);
        for line in crate::artifact::questions::answer_lines(q.number, &q.options, recommended) {
            let _ = writeln!(out, "     {line}");
        }
    }
}

/// `- **Task split**`: the plan at the task-split gate, wave by wave, each sub-task with its
/// estimated peak context and scope.
fn render_split_plan(plan: &SplitPlan, out: &mut String) {
    let n: usize = plan.waves.iter().map(|w| w.subtasks.len()).sum();
    let _ = writeln!(
        out,
        "- **Task split** ({n} sub-task{} in {} wave{}; none is made before it is approved):",
        if n == 1 { "" } else { "s" },
        plan.waves.len(),
        if plan.waves.len() == 1 { "" } else { "s" }
    );
    for w in &plan.waves {
        let _ = writeln!(out, "  - Wave {}:", w.wave);
        for r in &w.subtasks {
            let peak = r
                .estimated_peak_context
                .map_or("no estimate".to_string(), |t| {
                    format!("{} tokens peak", thousands(t))
                });
            let deps = if r.depends_on.is_empty() {
                String::new()
            } else {
                format!(", after {}", r.depends_on.join(", "))
            };
            let scope = if r.scope.is_empty() {
                String::new()
            } else {
                format!(": {}", r.scope)
            };
            let _ = writeln!(out, "    - {} ({peak}{deps}){scope}", r.name);
        }
    }
}

/// `- **Integration**`: what the branch at the merge gate changes.
fn render_integration(i: &Integration, out: &mut String) {
    let plural = |n: u64, one: &str, many: &str| {
        format!("{} {}", thousands(n), if n == 1 { one } else { many })
    };
    let _ = writeln!(
        out,
        "- **Integration**: {} into {}: {}, {}, {}",
        i.branch,
        i.base_branch.as_deref().unwrap_or("?"),
        plural(i.files as u64, "file changed", "files changed"),
        plural(i.insertions, "insertion", "insertions"),
        plural(i.deletions, "deletion", "deletions"),
    );
    const SHOWN: usize = 20;
    for c in i.changes.iter().take(SHOWN) {
        let _ = writeln!(out, "  - {} (+{} -{})", c.path, c.insertions, c.deletions);
    }
    if i.changes.len() > SHOWN {
        let _ = writeln!(out, "  - … and {} more", i.changes.len() - SHOWN);
    }
    if let Some(base) = &i.base_branch {
        let _ = writeln!(out, "  - the whole diff: `git diff {base}...{}`", i.branch);
    }
}

/// The fix tasks of a task: those that exist, with their states and commands, then (in
/// `status`) those manual mode would create; once every one is complete, the command that runs
/// the original task's referee again. `created`: manual mode has just made the missing ones.
pub fn render_fix_tasks(
    tree: &TaskTree,
    v: &TaskView,
    created: bool,
    prefix: &str,
    out: &mut String,
) {
    if v.fix_tasks.is_empty() {
        return;
    }
    let step_flag = if v.step { " --step" } else { "" };
    let existing: Vec<&FixTask> = v.fix_tasks.iter().filter(|f| f.state.is_some()).collect();
    let planned: Vec<&FixTask> = v.fix_tasks.iter().filter(|f| f.state.is_none()).collect();
    if !existing.is_empty() {
        let _ = writeln!(out, "\n**Auto-created tasks from {}**:", v.path);
        for f in &existing {
            let word = f.state.unwrap_or("new");
            let command = if word == "complete" {
                "none".to_string()
            } else {
                format!("{prefix} orchestrate --task {}{step_flag}", f.path)
            };
            // The fix task's own Status line, as its block below says it.
            let status = tree
                .find(&f.path)
                .map_or_else(|| word.to_string(), |i| status_text(tree, i));
            let _ = writeln!(
                out,
                "- **{}** — Status: {status} — Command: {command}",
                f.path
            );
        }
    }
    if !planned.is_empty() && !created {
        let _ = writeln!(
            out,
            "\n**Tasks manual mode creates from {}** (`{prefix} orchestrate --manual`):",
            v.path
        );
        for f in &planned {
            let _ = writeln!(out, "- **{}** — starts at Bug Find — {}", f.path, f.item);
        }
    }
    if planned.is_empty() && existing.iter().all(|f| f.state == Some("complete")) {
        let _ = writeln!(
            out,
            "All fix tasks of {} are complete: run its referee again with\n  {}",
            v.path,
            referee_again(prefix, &v.path, v.step)
        );
    }
}

/// The full report: every task in walk order, written as it is displayed (one task's text at
/// a time: a report of a large tree is never held whole in memory).
pub fn render_report<'a>(
    tree: &'a TaskTree,
    prefix: &'a str,
    auto_execute: bool,
    fixes_created: bool,
) -> Report<'a> {
    Report {
        tree,
        prefix,
        auto_execute,
        fixes_created,
    }
}

/// See [`render_report`].
pub struct Report<'a> {
    tree: &'a TaskTree,
    prefix: &'a str,
    auto_execute: bool,
    fixes_created: bool,
}

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tree, prefix) = (self.tree, self.prefix);
        if tree.nodes.is_empty() {
            writeln!(
                f,
                "No tasks yet. Create one with:\n  {prefix} orchestrate \"describe the task\""
            )?;
        }
        let mut out = String::new();
        for i in 0..tree.nodes.len() {
            out.clear();
            if i > 0 {
                out.push('\n');
            }
            let v = task_view_mode(tree, i, prefix, !self.auto_execute);
            render_task(&v, self.auto_execute, &mut out);
            render_fix_tasks(tree, &v, self.fixes_created, prefix, &mut out);
            f.write_str(&out)?;
        }
        Ok(())
    }
}
