//! Budgets (`- **Budget per task**`, `- **Budget per run**`): what a task spent (its journal,
//! over all runs) and what this run spent (every phase it ran, all tasks together), checked
//! after every phase through [`crate::plan::decide::next_action`], and while a phase runs by
//! [`Watch`], which reads the usage the agent streams, from the output the runner hands it,
//! and has the agent's process group stopped once a budget is crossed.

use super::adapter::{MAX_PARSE_BYTES, StreamUsage};
use super::{Run, StopKind};
use crate::plan::decide::{Budget, Spend};
use crate::store::journal;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The run's two budgets and what the run spent so far.
#[derive(Debug, Default)]
pub struct Budgets {
    pub task: Budget,
    pub run: Budget,
    spent: Mutex<Spend>,
}

impl Budgets {
    /// `task`: `Budget per task`; `run`: `Budget per run`; nothing spent yet.
    pub fn new(task: Budget, run: Budget) -> Self {
        Budgets {
            task,
            run,
            spent: Mutex::new(Spend::default()),
        }
    }

    /// Count a finished phase's spend against the run.
    pub fn add(&self, s: Spend) {
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        *spent = spent.plus(s);
    }

    /// What this run spent so far.
    pub fn run_spent(&self) -> Spend {
        *self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// "budget per run exceeded: …", when this run (plus `extra`, a phase running now) spent
    /// more than `Budget per run`.
    pub fn run_exceeded(&self, extra: Spend) -> Option<String> {
        self.run
            .exceeded(&self.run_spent().plus(extra))
            .map(|what| format!("budget per run exceeded: {what} in this run"))
    }

    /// "budget per task exceeded: …", when the task (its journal plus `extra`) spent more than
    /// `Budget per task`.
    pub fn task_exceeded(&self, task_dir: &Path, extra: Spend) -> Option<String> {
        if !self.task.is_set() {
            return None;
        }
        self.task
            .exceeded(&task_spent(task_dir).plus(extra))
            .map(|what| format!("{}: {what}", crate::report::waiting::TASK_BUDGET_REASON))
    }
}

/// What a task's journal says it spent, over all its runs.
pub fn task_spent(task_dir: &Path) -> Spend {
    journal::usage(task_dir).map_or_else(Spend::default, |u| Spend {
        tokens: u.tokens.unwrap_or(0),
        usd: u.cost_usd.unwrap_or(0.0),
    })
}

/// What a phase's report says it spent.
pub fn phase_spend(report: &super::adapter::PhaseReport) -> Spend {
    Spend {
        tokens: report.tokens().unwrap_or(0),
        usd: report
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0),
    }
}

/// Watches one running phase's output for streamed usage; once a budget is crossed it asks
/// the runner to stop the agent ([`Watch::stop_flag`]), which stops it as it stops a timed-out
/// one.
pub struct Watch<'r, 'a> {
    run: &'r Run<'a>,
    /// Set once a budget is crossed; the runner (`AgentSpec::stop`) then stops the agent.
    stop: AtomicBool,
    /// What the task's journal said before this phase.
    task_before: Spend,
    inner: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    /// The unfinished last line of the output so far.
    partial: Vec<u8>,
    /// The unfinished line grew past [`MAX_PARSE_BYTES`] and was dropped: skip to its end.
    skipping: bool,
    usage: StreamUsage,
    tripped: Option<(StopKind, String)>,
}

impl<'r, 'a> Watch<'r, 'a> {
    /// `None` when no budget is set or the adapter streams no usage.
    pub fn new(run: &'r Run<'a>, task_dir: &Path) -> Option<Self> {
        if !run.adapter.streams_usage() || !(run.budgets.task.is_set() || run.budgets.run.is_set())
        {
            return None;
        }
        Some(Watch {
            run,
            stop: AtomicBool::new(false),
            task_before: task_spent(task_dir),
            inner: Mutex::new(WatchState::default()),
        })
    }

    /// Called with each chunk of output the agent printed (what the runner also appends to
    /// the log): add the usage of the lines it completes, and stop the agent once a budget is
    /// crossed.
    pub fn on_output(&self, chunk: &[u8]) {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if st.tripped.is_some() {
            return;
        }
        let st = &mut *st;
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            if !st.skipping {
                st.partial.extend_from_slice(&rest[..i]);
                self.run
                    .adapter
                    .feed_usage(&mut st.usage, &String::from_utf8_lossy(&st.partial));
            }
            st.partial.clear();
            st.skipping = false;
            rest = &rest[i + 1..];
        }
        if !st.skipping {
            st.partial.extend_from_slice(rest);
            // No usage line is that long; a line that is must not grow without bound.
            if st.partial.len() as u64 > MAX_PARSE_BYTES {
                st.partial = Vec::new();
                st.skipping = true;
            }
        }
        let now = st.usage.spend();
        let budgets = &self.run.budgets;
        let tripped = budgets
            .run_exceeded(now)
            .map(|r| (StopKind::RunBudget, r))
            .or_else(|| {
                budgets
                    .task
                    .exceeded(&self.task_before.plus(now))
                    .map(|what| {
                        (
                            StopKind::TaskBudget,
                            format!("{}: {what}", crate::report::waiting::TASK_BUDGET_REASON),
                        )
                    })
            });
        if let Some(t) = tripped {
            st.tripped = Some(t);
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// The budget stop, when one was crossed while the phase ran.
    pub fn tripped(&self) -> Option<(StopKind, String)> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tripped
            .clone()
    }

    /// Set once a budget is crossed: for the runner, which checks it after each chunk of
    /// output it hands to `on_output` (from its own thread) and then stops the agent itself.
    /// Nothing is signalled by pid from here, so no stop can outlive the phase and reach
    /// another agent.
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }
}
