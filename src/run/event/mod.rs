//! The events of a run, as one type. `orchestrate --json` prints each as one JSON object per
//! line (serde builds it from the variant: its name in snake_case under `event`, its fields as
//! they are named here; [`super::progress::Progress`] adds `ts`), and without `--json` the
//! same event becomes the line people read ([`Event::human`]).
//!
//! The JSON form is a public contract that scripts parse: `docs/events.md` documents every
//! event and field, and the tests below pin both the schema and that the document lists every
//! variant. A field marked `#[serde(skip)]` is there only for the human line.

mod human;

use crate::process::group::Leftover;
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The run begins to drive `task`.
    RunStarted {
        task: &'a str,
        /// The agent command line, with any key in it redacted.
        agent: &'a str,
        adapter: &'a str,
    },
    /// `--jobs auto` with a VRAM budget: sub-tasks start while their needs fit.
    JobsAuto {
        weights: u64,
        kv_bytes_per_token: u64,
        budget: u64,
    },
    /// A git operation a killed run left half-done in a worktree was undone.
    WorktreeReconciled {
        #[serde(serialize_with = "path")]
        worktree: &'a Path,
    },
    /// `--referee-again`: VERDICT.md was moved to `kept` so that the referee runs again.
    VerdictArchived {
        task: &'a str,
        #[serde(serialize_with = "path")]
        kept: &'a Path,
        /// The `n` of `logs/VERDICT-<n>.md`.
        #[serde(skip)]
        n: u32,
    },
    /// A stop recorded by an earlier run was cleared, because the user named the task.
    StopCleared {
        task: &'a str,
        #[serde(skip)]
        reason: &'a str,
    },
    /// An artifact written by a phase run that never finished was moved aside.
    IncompleteSetAside {
        task: &'a str,
        artifact: &'a str,
        #[serde(serialize_with = "path")]
        to: &'a Path,
    },
    /// An artifact a stopped phase run had written was changed since the stop (a person's
    /// fix): it counts.
    PersonsEditKept {
        task: &'a str,
        artifact: &'a str,
    },
    /// The task's git worktree (isolation), made or found.
    Workspace {
        task: &'a str,
        branch: &'a str,
        #[serde(serialize_with = "path")]
        worktree: &'a Path,
    },
    /// Files listed in `.worktreeinclude` were copied into a new worktree.
    WorktreeInclude {
        task: &'a str,
        #[serde(serialize_with = "path")]
        worktree: &'a Path,
        #[serde(serialize_with = "paths")]
        files: &'a [PathBuf],
    },
    /// The setup command starts in a new worktree.
    SetupStarted(CheckStarted<'a>),
    SetupFinished(CheckFinished<'a>),
    /// An agent that an earlier, killed run left running was stopped.
    LeftoverAgentStopped {
        task: &'a str,
        pid: Option<u64>,
        /// `pid 123` or `Slurm job 45`.
        what: &'a str,
    },
    /// A phase whose agent had ended with success before the run was killed: its work is
    /// judged now, from its log, instead of running the phase again.
    PhaseRecovered {
        task: &'a str,
        phase: &'a str,
        attempt: u32,
        #[serde(serialize_with = "path")]
        log: &'a Path,
    },
    PhaseStarted {
        task: &'a str,
        phase: &'a str,
        attempt: u32,
        #[serde(serialize_with = "path")]
        log: &'a Path,
    },
    /// The run follows a Slurm job that an earlier, killed run submitted for this phase.
    SlurmReattached {
        task: &'a str,
        phase: &'a str,
        job: u64,
    },
    /// Something went wrong that does not stop the task: `message` says what.
    Warning {
        task: &'a str,
        message: &'a str,
    },
    /// A `warning`: a sub-task's estimated peak context exceeds the max peak.
    #[serde(rename = "warning")]
    EstimateOverPeak {
        task: &'a str,
        /// Always `estimate exceeds max peak context`.
        message: &'a str,
        estimate: u64,
        max_peak: u64,
    },
    /// A `warning`: processes of an agent's group outlived SIGKILL.
    #[serde(rename = "warning")]
    Leftovers {
        task: &'a str,
        /// Always `processes still alive after SIGKILL`.
        message: &'a str,
        #[serde(rename = "pids", serialize_with = "pids")]
        leftovers: &'a [Leftover],
        #[serde(skip)]
        agent_pid: u32,
    },
    PhaseFinished {
        task: &'a str,
        phase: &'a str,
        attempt: u32,
        #[serde(serialize_with = "as_seconds")]
        seconds: Duration,
        /// How the agent ended, in words (`agent exited with status 0`, `phase timed out after 30m`).
        end: &'a str,
        contract_met: bool,
        #[serde(serialize_with = "path")]
        log: &'a Path,
        agent: &'a str,
        ok: Option<bool>,
        error: Option<&'a str>,
        session_id: Option<&'a str>,
        model: Option<&'a str>,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cost_usd: Option<f64>,
        /// The agent exited by itself, with status 0 or having met its contract: the phase's
        /// outcome line says the rest, so this event has no human line then.
        #[serde(skip)]
        exited_fine: bool,
    },
    /// A phase removed or garbled `.state.frozen`; it was put back.
    FrozenRestored {
        task: &'a str,
        phase: &'a str,
        attempt: u32,
        what: &'a str,
    },
    /// The phase's work was committed on the task's branch (isolation).
    Committed {
        task: &'a str,
        phase: &'a str,
        branch: &'a str,
        commit: &'a str,
    },
    ArtifactValidated {
        task: &'a str,
        phase: &'a str,
        artifact: &'a str,
        #[serde(skip)]
        duration: Duration,
        /// `, 65,241 tokens, $0.2800` or empty.
        #[serde(skip)]
        usage: &'a str,
    },
    /// The verify command starts (after implement, at complete, or as a wave's integration
    /// gate).
    VerifyStarted(CheckStarted<'a>),
    VerifyFinished(CheckFinished<'a>),
    /// TEST_PLAN.md and the acceptance files it lists were frozen.
    Frozen {
        task: &'a str,
        files: &'a [String],
        #[serde(serialize_with = "path")]
        root: &'a Path,
        reason: FreezeReason,
    },
    /// A failed phase runs again after `backoff_seconds`.
    PhaseRetry {
        task: &'a str,
        phase: &'a str,
        attempt: u32,
        failures: u32,
        retries: u32,
        kind: &'a str,
        reason: &'a str,
        rate_limited: bool,
        #[serde(rename = "backoff_seconds", serialize_with = "as_seconds")]
        backoff: Duration,
        artifact_kept: Option<&'a str>,
    },
    /// A sub-task folder of the plan was created.
    SubtaskCreated {
        task: &'a str,
        wave: u32,
        depends_on: &'a [String],
        estimate: Option<u64>,
    },
    /// PARENT_SPEC.md and VRAM_CONFIG.md of an unfinished sub-task were written again.
    SubtaskRepaired {
        task: &'a str,
    },
    /// A sub-task no longer in the plan, with work in it, was kept.
    OrphanKept {
        task: &'a str,
    },
    /// A sub-task no longer in the plan, never started, was removed.
    OrphanRemoved {
        task: &'a str,
    },
    VramDetected {
        task: &'a str,
        max_peak_context_kb: u64,
        recommended_kb: u64,
        source: &'a str,
        /// The detection report as people read it.
        #[serde(skip)]
        block: &'a str,
    },
    /// The plan's sub-tasks exceed the context budget: DECOMPOSITION.md goes back once.
    PlanSentBack {
        task: &'a str,
        max_peak: u64,
        rows: Vec<&'a str>,
    },
    /// A failed review or check sent the task back to implement (`- **Rework**`): round
    /// `counted` of `max`, its artifacts from implement on set aside in `kept`.
    ReworkStarted {
        task: &'a str,
        /// The round's folder, `logs/rework/<round>/`: every round of the task, a person's too.
        round: u32,
        /// The rounds that count against `max`, this one included: a person's round (a
        /// rejected merge) does not.
        counted: u32,
        max: u32,
        cause: &'a str,
        #[serde(serialize_with = "path")]
        kept: &'a Path,
    },
    /// The phase's agent asked a person questions (QUESTIONS.md) instead of writing its
    /// artifact.
    QuestionsAsked {
        task: &'a str,
        phase: &'a str,
        questions: Vec<&'a str>,
    },
    /// `wave` is null for a sub-task made by hand, not in a plan.
    SubtaskStarted {
        task: &'a str,
        parent: &'a str,
        wave: Option<u32>,
    },
    /// A sub-task's branch was merged into its parent's (isolation).
    Merged {
        task: &'a str,
        branch: &'a str,
        into: &'a str,
    },
    TaskComplete {
        task: &'a str,
    },
    TaskStopped {
        task: &'a str,
        kind: &'a str,
        reason: &'a str,
    },
    /// `--step`: one phase ran; `next` is the phase that runs next.
    StepDone {
        task: &'a str,
        next: &'a str,
    },
    /// `orchestrate --dry-run`: what the planner would do next for `task`, and why.
    Planned {
        task: &'a str,
        /// `run`, `verify`, `subtasks`, `step`, `replan`, `wait`, `stop` or `none`.
        action: &'a str,
        /// The phase that would run.
        phase: Option<&'a str>,
        why: &'a str,
        /// The exit code a run would end with here.
        exit_code: Option<u8>,
    },
    /// How the tasks the run was asked about stand.
    Summary(crate::report::Summary),
    /// The run ends: every task it was asked to drive is complete.
    Complete {
        task: &'a str,
    },
    /// The run ends after one step (`--step`).
    Stepped {
        task: &'a str,
        exit_code: u8,
    },
    /// The run ends with a stop.
    Stop {
        task: &'a str,
        kind: &'a str,
        reason: &'a str,
        exit_code: u8,
    },
}

/// A command automaton runs itself (verify, setup) starts.
#[derive(Debug, Clone, Serialize)]
pub struct CheckStarted<'a> {
    pub task: &'a str,
    /// The command line, with any key in it redacted (it runs with the real one).
    pub command: &'a str,
    #[serde(serialize_with = "path")]
    pub log: &'a Path,
}

/// A command automaton runs itself ended: `ok` is whether it passed.
#[derive(Debug, Clone, Serialize)]
pub struct CheckFinished<'a> {
    pub task: &'a str,
    /// Why it failed (the task's stop reason); none when it passed.
    #[serde(rename = "ok", serialize_with = "passed")]
    pub failure: Option<&'a str>,
    #[serde(serialize_with = "path")]
    pub log: &'a Path,
}

/// Which command automaton runs itself: it names the events (`verify_started`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Verify,
    Setup,
}

impl Check {
    pub fn word(self) -> &'static str {
        match self {
            Check::Verify => "verify",
            Check::Setup => "setup",
        }
    }

    pub fn started(self, e: CheckStarted<'_>) -> Event<'_> {
        match self {
            Check::Verify => Event::VerifyStarted(e),
            Check::Setup => Event::SetupStarted(e),
        }
    }

    pub fn finished(self, e: CheckFinished<'_>) -> Event<'_> {
        match self {
            Check::Verify => Event::VerifyFinished(e),
            Check::Setup => Event::SetupFinished(e),
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// Why the acceptance files were frozen: after the test_design phase, or because no record
/// was there when a later phase was about to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FreezeReason {
    TestDesign,
    Missing,
}

/// A path as a JSON string; a name that is not UTF-8 is written lossily rather than failing
/// the whole event.
fn path<S: Serializer>(p: &&Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

fn paths<S: Serializer>(ps: &&[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ps.iter().map(|p| p.to_string_lossy()))
}

/// A duration as seconds, with a fraction.
fn as_seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn pids<S: Serializer>(leftovers: &&[Leftover], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(leftovers.iter().map(|l| l.pid))
}

/// `ok`: true when there is no failure.
fn passed<S: Serializer>(failure: &Option<&str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(failure.is_none())
}

#[cfg(test)]
mod tests;
