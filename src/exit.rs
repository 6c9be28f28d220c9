//! The documented exit codes of `automaton`. They are part of the interface: scripts and CI
//! steps branch on them, so each has one constant here and one row in the README. Errors meet
//! them in one place: `commands::Error::exit_code`; stops in `plan::decide::StopKind::TABLE`.

/// The command did what it was asked (for `orchestrate`: every driven task is complete).
pub const OK: u8 = 0;
/// An error stopped the command: bad input, a file that could not be read or written.
pub const ERROR: u8 = 1;
/// The command line could not be parsed (clap's own code).
pub const USAGE: u8 = 2;
/// `orchestrate`: a referee verdict said FAIL or NEEDS_REVIEW.
pub const VERDICT_FAILED: u8 = 10;
/// `orchestrate`: a phase left its artifact missing, empty or malformed.
pub const BAD_ARTIFACT: u8 = 11;
/// `orchestrate`: the agent command failed (non-zero exit, or its own failure signal).
pub const AGENT_FAILED: u8 = 12;
/// `orchestrate`: a phase ran past the per-phase time cap.
pub const PHASE_TIMEOUT: u8 = 13;
/// `orchestrate`: the agent printed nothing for the stall timeout.
pub const STALLED: u8 = 14;
/// `orchestrate`: the iteration cap was reached.
pub const ITERATION_CAP: u8 = 15;
/// `orchestrate`: the total time cap was reached.
pub const TOTAL_TIME_CAP: u8 = 16;
/// `orchestrate`: the verify command failed, so a PASS verdict was not accepted.
pub const VERIFY_FAILED: u8 = 17;
/// `orchestrate`: sub-tasks of a decomposed task failed or are blocked (an invalid
/// DECOMPOSITION.md is a bad artifact, 11).
pub const SUBTASKS_FAILED: u8 = 18;
/// `orchestrate`: the task already needed a human before this run started.
pub const NEEDS_HUMAN: u8 = 19;
/// `orchestrate`: the task's next phase is gated (`Approve before`) and waits for
/// `automaton approve` (or its approval lapsed because an approved artifact changed).
pub const AWAITING_APPROVAL: u8 = 20;
/// `orchestrate`: an artifact was edited after later phases ran on it; those are stale until
/// `automaton rerun --from <phase>` sets the task back.
pub const STALE: u8 = 21;
/// `orchestrate`: task isolation failed: a sub-task's merge-back conflicted (the files are
/// named), or a git worktree or commit could not be made.
pub const ISOLATION_FAILED: u8 = 22;
/// `merge` / `clean`: refused to keep work safe (uncommitted changes, an unmerged branch, a
/// conflict, a task not complete); nothing was changed.
pub const REFUSED: u8 = 23;
/// `orchestrate`: the agent command's program (or the claude/codex/aider CLI) is not installed
/// or not on PATH; nothing ran and no task changed state.
pub const AGENT_NOT_FOUND: u8 = 24;
/// `orchestrate` in manual mode (`--manual`, `Autopilot: Disabled`) or `--step`: the report was
/// printed, and tasks the run was asked about are not complete yet: they wait for a person to
/// run their next step.
pub const WAITING: u8 = 25;
/// `orchestrate`: a phase after test_design changed a frozen acceptance file (TEST_PLAN.md or a
/// file under its `## Acceptance tests`); `automaton approve` accepts the change.
pub const FROZEN_CHANGED: u8 = 26;
/// `orchestrate`: the task's spend (tokens or dollars in its journal) passed `Budget per task`.
pub const TASK_BUDGET: u8 = 27;
/// `orchestrate`: this run's spend passed `Budget per run`.
pub const RUN_BUDGET: u8 = 28;
/// `orchestrate --task` named a sub-task that may not start yet by its parent's plan (a
/// dependency or an earlier wave not ended or failed, its wave's integration gate not passed,
/// the parent stopped); the reason and the parent's command are printed; nothing ran.
pub const NOT_READY: u8 = 29;
/// `clean`: removed some finished tasks' worktrees and branches and kept others (each named
/// with its reason, also on the last line).
pub const CLEAN_PARTIAL: u8 = 30;
/// An internal error: automaton itself failed (a panic while driving a task). The task is
/// stopped with the message; this is a bug to report (EX_SOFTWARE).
pub const INTERNAL: u8 = 70;
/// `orchestrate "…"` found no project (no `.automaton/` or `tasks/` here or above, and no
/// `--project`), or would create one inside a task folder (EX_NOINPUT).
pub const NO_PROJECT: u8 = 66;
/// Another `automaton orchestrate` holds the project lock (EX_TEMPFAIL).
pub const LOCKED: u8 = 75;
/// Interrupted by Ctrl-C (SIGINT), SIGTERM or SIGHUP; every child was stopped.
pub const INTERRUPTED: u8 = 130;
