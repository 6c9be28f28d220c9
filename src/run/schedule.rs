//! The run's one scheduler. A unit of work is a task's drive: its turns, from where it starts
//! (or resumes) to where it ends or waits for the sub-tasks of its plan. Units run on at most
//! `jobs` workers and report on one channel: ended (with the outcome, or the message of a
//! panic caught in the worker), or waiting for waves. A decomposed task's waves
//! ([`WaveState`]) release its sub-tasks as new units and hear of their ends; once the waves
//! are over the parent's drive is queued again, with how they ended. A sub-task that is itself
//! decomposed waits the same way, holding no worker. The merge-backs and integration gates of
//! the waves run here, between reports. Only `--step` and sub-tasks made by hand (no
//! DECOMPOSITION.md) are driven inline, one at a time, by their parent's worker.

use super::driver::{Drive, Driven};
use super::observe::parent_of;
use super::waves::WaveState;
use super::{Outcome, Run, RunError, StopKind};
use crate::task::TaskTree;
use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc;

/// Drive `rel`, and every sub-task its plans release, to the end: complete, a stop, or a
/// person needed. `explicit`: the user named this task (its recorded stops are cleared).
/// `last` gets the read of the task that found it complete, for the report.
pub fn run_task(
    run: &Run<'_>,
    rel: &str,
    explicit: bool,
    last: &mut Option<TaskTree>,
) -> super::Result<Outcome> {
    let mut scheduler = Scheduler {
        run,
        top: rel.to_string(),
        queue: VecDeque::from([Unit::Start {
            rel: rel.to_string(),
            explicit,
        }]),
        waiting: BTreeMap::new(),
        busy: 0,
        result: None,
    };
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Report<'_, '_>>();
        loop {
            while scheduler.busy < run.limits.jobs.max(1)
                && let Some(unit) = scheduler.queue.pop_front()
            {
                scheduler.busy += 1;
                let tx = tx.clone();
                scope.spawn(move || {
                    let _ = tx.send(work(run, unit));
                });
            }
            if scheduler.busy == 0 {
                break;
            }
            // A worker always reports, a panic included: `recv` cannot wait forever.
            let Ok(report) = rx.recv() else { break };
            scheduler.busy -= 1;
            scheduler.heard(report);
        }
    });
    // Every unit reports, and the top task's report is the run's end: without it, the
    // scheduler lost a unit, which is a bug (an internal error, exit 70).
    let (outcome, tree) = scheduler.result.unwrap_or_else(|| {
        let lost = RunError::Panicked {
            task: rel.to_string(),
            message: "the run's scheduler ended before the task did".into(),
        };
        (Err(lost), None)
    });
    *last = tree;
    outcome
}

/// Work for a worker: a task's drive to start, or one to go on with after its waves.
enum Unit<'r, 'a> {
    Start { rel: String, explicit: bool },
    Resume(Box<Drive<'r, 'a>>, super::Result<Option<Outcome>>),
}

/// What a worker reports on the channel.
enum Report<'r, 'a> {
    /// The drive of `rel` ended; `last`: its read that found it complete.
    Ended {
        rel: String,
        outcome: super::Result<Outcome>,
        last: Option<TaskTree>,
    },
    /// The drive waits while the sub-tasks of `plan` run.
    Waits(Box<Drive<'r, 'a>>, crate::artifact::decomposition::Plan),
}

/// Run one unit: the drive's turns until it ends or waits. A panic is caught and reported as
/// the end of that task, with the panic's message, so the scheduler always hears from it.
fn work<'r, 'a>(run: &'r Run<'a>, unit: Unit<'r, 'a>) -> Report<'r, 'a> {
    let rel = match &unit {
        Unit::Start { rel, .. } => rel.clone(),
        Unit::Resume(drive, _) => drive.rel.clone(),
    };
    let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match unit {
        // Released before Ctrl-C but not started: it ends as interrupted, nothing started.
        Unit::Start { .. } if run.cancel.load(std::sync::atomic::Ordering::SeqCst) => {
            Ok(Driven::Ended(
                super::stops::stopped(StopKind::Interrupted, "interrupted"),
                None,
            ))
        }
        Unit::Start { rel, explicit } => match Drive::start(run, &rel, explicit)? {
            Ok(drive) => drive.turns(),
            Err(outcome) => Ok(Driven::Ended(outcome, None)),
        },
        Unit::Resume(drive, waves) => drive.resume(waves),
    }))
    .unwrap_or_else(|panic| Err(RunError::panicked(&rel, &*panic)));
    match driven {
        Ok(Driven::Ended(outcome, last)) => Report::Ended {
            rel,
            outcome: Ok(outcome),
            last,
        },
        Ok(Driven::AwaitsWaves(drive, plan)) => Report::Waits(drive, plan),
        Err(e) => Report::Ended {
            rel,
            outcome: Err(e),
            last: None,
        },
    }
}

/// The run's units: queued, running (`busy`), and the parents waiting for their waves.
struct Scheduler<'r, 'a> {
    run: &'r Run<'a>,
    /// The task the run was asked to drive: its end is the run's.
    top: String,
    queue: VecDeque<Unit<'r, 'a>>,
    /// Each decomposed task whose drive waits: its waves, and the drive to resume after them.
    waiting: BTreeMap<String, (WaveState<'r, 'a>, Box<Drive<'r, 'a>>)>,
    busy: usize,
    result: Option<(super::Result<Outcome>, Option<TaskTree>)>,
}

impl<'r, 'a> Scheduler<'r, 'a> {
    fn heard(&mut self, report: Report<'r, 'a>) {
        match report {
            Report::Waits(drive, plan) => {
                let rel = drive.rel.clone();
                let (run, ws) = (self.run, drive.ws.clone());
                match guarded(&rel, || WaveState::new(run, &rel, plan, ws)) {
                    Ok(waves) => {
                        self.waiting.insert(rel.clone(), (waves, drive));
                        self.advance(&rel);
                    }
                    Err(e) => self.queue.push_back(Unit::Resume(drive, Err(e))),
                }
            }
            Report::Ended { rel, outcome, last } => self.ended(rel, outcome, last),
        }
    }

    /// A drive ended: the run's end when it is the top task's, else news for its parent's
    /// waves.
    fn ended(&mut self, rel: String, outcome: super::Result<Outcome>, last: Option<TaskTree>) {
        if rel == self.top {
            self.result = Some((outcome, last));
            return;
        }
        let Some(parent) = parent_of(&rel).map(str::to_string) else {
            return;
        };
        let Some((waves, _)) = self.waiting.get_mut(&parent) else {
            return;
        };
        let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
        if let Err(e) = guarded(&parent, || {
            waves.ended(name, outcome);
            Ok(())
        }) {
            waves.fail(e);
        }
        self.advance(&parent);
    }

    /// Release what the waves of `parent` start now; once they are over, queue the parent's
    /// drive again with how they ended.
    fn advance(&mut self, parent: &str) {
        let Some((waves, _)) = self.waiting.get_mut(parent) else {
            return;
        };
        match guarded(parent, || Ok(waves.release())) {
            Ok(released) => self
                .queue
                .extend(released.into_iter().map(|rel| Unit::Start {
                    rel,
                    explicit: false,
                })),
            Err(e) => waves.fail(e),
        }
        if waves.idle()
            && let Some((waves, drive)) = self.waiting.remove(parent)
        {
            let end = guarded(parent, || waves.finish());
            self.queue.push_back(Unit::Resume(drive, end));
        }
    }
}

/// `f`, done on the scheduler's thread for the waves of `parent`: a panic there is that
/// parent's internal error, as one in a worker is its task's, and the run hears every other
/// report still.
fn guarded<T>(parent: &str, f: impl FnOnce() -> super::Result<T>) -> super::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|panic| Err(RunError::panicked(parent, &*panic)))
}
