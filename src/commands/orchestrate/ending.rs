//! How an `orchestrate` run ends on the terminal and in the event stream: the driven task's
//! report, the summary line, then `ORCHESTRATION_COMPLETE`, the way on after a `--step`, or
//! the reason a person is needed; and the exit code that says the same.

use super::super::out;
use crate::exit;
use crate::report::{self, Summary, TaskView, WaitingFor};
use crate::run::event::Event;
use crate::run::progress::{self, Progress};
use crate::run::{Outcome, StopKind};
use crate::state::State;
use crate::task::TaskTree;

/// Say how the run ended, and return the exit code: 0 only when every task the run was asked
/// to drive (the task and its sub-tasks) is complete.
pub(super) fn finish(
    tree: &TaskTree,
    prefix: &str,
    progress: &Progress,
    rel: &str,
    outcome: Outcome,
    step: bool,
) -> crate::commands::Result<u8> {
    // The task the run was asked about and its sub-tasks (the tree may start above it).
    let scope = report::driven_scope(tree, rel);
    let ending = Ending {
        progress,
        human_out: progress.mode() != progress::Mode::Json,
        step,
        summary: Summary::of(tree, scope.iter().copied()),
        // The driven task's view, built once (it asks git about the task's branch): the
        // report, the way on after a step and the stop line all say it.
        view: tree
            .find(rel)
            .map(|i| report::task_view_mode(tree, i, prefix, step)),
    };
    let (kind, reason) = match outcome {
        Outcome::Complete if ending.summary.all_complete() => return ending.complete(rel),
        Outcome::Complete => {
            // The task is complete, but something it holds is not (a sub-task made by hand
            // that needs a person): not a success.
            let left: Vec<String> = scope
                .iter()
                .map(|i| &tree.nodes[*i])
                .filter(|n| n.state() != State::Complete)
                .map(|n| format!("{} ({})", n.rel, n.state().word()))
                .collect();
            let why = format!(
                "{rel} is complete, but not all of its sub-tasks are: {}",
                left.join(", ")
            );
            (StopKind::NeedsHuman, why)
        }
        Outcome::Stepped { task } => return ending.stepped(&task, rel, prefix),
        // However the run layer put it, an interruption is named by its signal.
        Outcome::Stopped {
            kind: StopKind::Interrupted,
            ..
        } => (
            StopKind::Interrupted,
            crate::process::signals::interrupted_by(),
        ),
        Outcome::Stopped { kind, reason } => (kind, reason),
    };
    ending.stopped(kind, &reason, rel, prefix)
}

/// What every ending says: the task's report and the summary, to people and to scripts.
struct Ending<'a> {
    progress: &'a Progress,
    /// Human output on stdout (not `--json`).
    human_out: bool,
    step: bool,
    summary: Summary,
    view: Option<TaskView>,
}

impl Ending<'_> {
    /// Every task is complete: exit 0.
    fn complete(&self, rel: &str) -> crate::commands::Result<u8> {
        self.report(true)?;
        self.progress.event(&Event::Complete { task: rel });
        self.say("ORCHESTRATION_COMPLETE")?;
        Ok(exit::OK)
    }

    /// One `--step` ran: the way on.
    fn stepped(&self, task: &str, rel: &str, prefix: &str) -> crate::commands::Result<u8> {
        self.report(true)?;
        self.progress.event(&Event::Stepped {
            task,
            exit_code: exit::WAITING,
        });
        self.say(&way_on_after_step(self.view.as_ref(), task, rel, prefix))?;
        Ok(exit::WAITING)
    }

    /// The run stopped: the report without the reason in it, then the reason once, on its own
    /// line; the stop's exit code.
    fn stopped(
        &self,
        kind: StopKind,
        reason: &str,
        rel: &str,
        prefix: &str,
    ) -> crate::commands::Result<u8> {
        self.report(false)?;
        self.progress.event(&Event::Stop {
            task: rel,
            kind: kind.word(),
            reason,
            exit_code: kind.code(),
        });
        if kind == StopKind::Interrupted {
            // Not a person's stop: the signal that stopped the run and the command that
            // resumes.
            eprintln!(
                "{reason}: every agent was stopped; run `{prefix} orchestrate --task {rel}` to resume"
            );
            return Ok(kind.code());
        }
        // The task's view says its own stop whole where it can (a verdict: the task, its
        // VERDICT.md and the way out, with the run's reason, which may add rework's history);
        // any other stop is said as the run put it.
        let said = self
            .view
            .as_ref()
            .and_then(|v| v.verdict_stop.as_ref())
            .filter(|s| s.is(reason))
            .map_or_else(|| reason.to_string(), |s| s.line(reason));
        let line = format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {said}");
        if self.human_out {
            self.say(&line)?;
        } else {
            eprintln!("{line}");
        }
        Ok(kind.code())
    }

    /// The task's report (with its reason when `reason`; a stop's reason is printed once, at
    /// the end, so neither in the block nor as why it waits), then the summary.
    fn report(&self, reason: bool) -> crate::commands::Result<()> {
        if self.human_out
            && let Some(view) = &self.view
        {
            let mut text = String::new();
            let mut view = view.clone();
            if !reason {
                if view.waits_for == view.reason {
                    view.waits_for = None;
                }
                view.reason = None;
            }
            report::render_task(&view, !self.step, &mut text);
            self.say(&format!("\n{text}"))?;
        }
        self.progress.event(&Event::Summary(self.summary));
        self.say(&self.summary.line())
    }

    /// A line on stdout, for people only. Once the run has ended, its code says how, closed
    /// pipe or not.
    fn say(&self, line: &str) -> crate::commands::Result<()> {
        if self.human_out {
            out::println(line).or_else(out::closed_is_ok)?;
        }
        Ok(())
    }
}

/// After `--step`: the way on the task's view gives, another `--step` or (at a gate, a
/// sub-task's decision) the person's own action; never a step that stops again.
/// `ORCHESTRATION_COMPLETE` is for a complete task only: not said here. (Only a `--step` run
/// steps, so the view is a step's.)
fn way_on_after_step(view: Option<&TaskView>, task: &str, rel: &str, prefix: &str) -> String {
    match view.filter(|v| v.waiting_for == WaitingFor::Person) {
        Some(v) => format!(
            "One phase of {task} ran; {rel} now waits for {}; the way on:\n  {}",
            v.wait().line().unwrap_or_else(|| "a person".into()),
            v.command.as_deref().unwrap_or("(see the report above)")
        ),
        None => format!(
            "One phase of {task} ran; the next step runs with\n  {prefix} orchestrate --task {rel} --step"
        ),
    }
}
