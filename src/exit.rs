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
/// `orchestrate`: a phase's estimated peak context is over the window the local engine serves
/// (`Model endpoint`); nothing ran, the message names both numbers and how to raise the window.
pub const CONTEXT_TOO_SMALL: u8 = 31;
/// `orchestrate`: an agent asked a person questions (QUESTIONS.md) instead of writing its
/// artifact; `automaton answer` records the answers and the phase runs again.
pub const QUESTIONS_ASKED: u8 = 32;
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

/// Every exit code with its meaning, in ascending order: the one table that
/// `automaton help exit-codes`, the man pages and the README's exit-code table (a test
/// compares them) are made from.
pub const TABLE: &[(u8, &str)] = &[
    (
        OK,
        "done: the report was printed; `orchestrate`, `continue`, `--manual`, `--step`: every task the run was asked to drive is complete",
    ),
    (
        ERROR,
        "error: bad input (settings, task path), a file that could not be read or written, no agent command; a task folder, `tasks/`, `logs/`, `subtasks/` or `.automaton/` that is a link out of the project (without `- **Allow links out**: yes`), or a journal, `.state.approvals` or `.state.inputs` that is a link (the message names it; nothing was written through it)",
    ),
    (
        USAGE,
        "usage: the command line could not be parsed, or a flag's value breaks its setting's rule (`--max-iterations 0`, `--jobs 0`); an empty, blank or reserved (`continue`) request to `orchestrate`; an argument that is not valid UTF-8 (named, its bytes escaped: `argument 3 (\"tasks/a\\xFF\") is not valid UTF-8`; only the folder of `--project`/`-C` may be any bytes, and is used as the path it is)",
    ),
    (
        VERDICT_FAILED,
        "human needed: the referee said FAIL or NEEDS_REVIEW",
    ),
    (
        BAD_ARTIFACT,
        "human needed: a phase left its artifact missing, empty or malformed (also an invalid DECOMPOSITION.md: every error of its table is named, or one over the 1 MiB cap)",
    ),
    (
        AGENT_FAILED,
        "human needed: the agent command failed (non-zero exit). An exit of 126 (cannot execute) or 127 (not found), or the same one-line error as the attempt before, stops at once without the retry backoff, and the message ends with the agent's last output lines",
    ),
    (
        PHASE_TIMEOUT,
        "human needed: a phase ran past `--max-phase-time`",
    ),
    (
        STALLED,
        "human needed: the agent's output did not grow for `--stall-timeout`",
    ),
    (
        ITERATION_CAP,
        "human needed: `--max-iterations` phases ran for one task in this run",
    ),
    (
        TOTAL_TIME_CAP,
        "the run reached `--max-total-time` (the next run resumes)",
    ),
    (
        VERIFY_FAILED,
        "human needed: the verify command failed (a PASS verdict was not accepted)",
    ),
    (
        SUBTASKS_FAILED,
        "human needed: sub-tasks of a decomposed task failed or are blocked",
    ),
    (
        NEEDS_HUMAN,
        "human needed: the task was stopped before this run and was not named (a sub-task, or `continue` found nothing that can go on, each reason printed); manual mode: a task needs a person's decision",
    ),
    (
        AWAITING_APPROVAL,
        "human needed: the next phase is gated (`Approve before`) and waits for `automaton approve` (or its approval lapsed); for a parent, a sub-task waits (its siblings ran); `subtasks`: the task split waits before any sub-task is made; `merge`: a complete task's branch waits, and `automaton merge` refuses it until it is approved",
    ),
    (
        STALE,
        "human needed: artifacts are stale (an earlier artifact was edited after they were written); `automaton rerun <task> --from <phase>`",
    ),
    (
        ISOLATION_FAILED,
        "human needed: isolation failed: a merge-back conflicted (the files are named), or a worktree or commit could not be made",
    ),
    (
        REFUSED,
        "`merge` or `clean` refused, naming each reason (uncommitted changes, an untracked file in the way, an unmerged branch, a dirty worktree, a conflict); nothing was changed",
    ),
    (
        AGENT_NOT_FOUND,
        "`orchestrate`: the agent's program (`- **Agent command**`'s first word, or the claude / codex / aider / gemini / opencode CLI) is not on PATH, or, for a path such as `./agent.sh` (read from the project folder, never looked up on PATH), is a missing file, a folder or not executable, or the script of a `sh|bash|dash|python|python3 [FLAGS] FILE` line is not a file (relative to the project root, where the agent runs); or `Sandbox: bwrap` is set and bubblewrap is missing or cannot make its namespaces here; the message names the program or script, the setting and the `file:line` it came from (and what to install). Nothing ran and no task changed state. A compound line (pipes, `&&`, variables, builtins), `-c`/`-m` and other flags are left to the shell",
    ),
    (
        WAITING,
        "manual mode (`--manual`, `Autopilot: Disabled`) or `--step`: the report was printed and the tasks it was asked about are not all complete; they wait for a person to run the next step",
    ),
    (
        FROZEN_CHANGED,
        "human needed: a phase after test_design changed a frozen acceptance file (TEST_PLAN.md or one listed under its `## Acceptance tests`); the file and the phase are named; `automaton approve <task>` accepts the change (also: `.state.frozen` itself unreadable, which `approve` sets aside)",
    ),
    (
        TASK_BUDGET,
        "human needed: the task spent more than `- **Budget per task**` (tokens or dollars, from its journal); the spend and the limit are named",
    ),
    (
        RUN_BUDGET,
        "the run spent more than `- **Budget per run**`; the spend and the limit are named (the next run has a budget of its own)",
    ),
    (
        NOT_READY,
        "`orchestrate --task` named a sub-task that may not start yet by its parent's plan: a dependency or an earlier wave has not ended (or failed), its wave's integration gate has not passed, or the parent is stopped. The reason and the parent's command are printed; nothing ran and nothing was written",
    ),
    (
        CLEAN_PARTIAL,
        "`clean` removed some tasks' worktrees and branches and kept others (a dirty worktree, an unmerged branch, a task not complete or stopped for a person, a parent whose sub-task is kept); each kept task is named with its reason, and the last line lists them. When it keeps every task it removes nothing and exits 23",
    ),
    (
        CONTEXT_TOO_SMALL,
        "a phase's estimated peak context (its sub-task's `Estimated peak context`, or its prompt and inputs at about 4 bytes a token) is over the window the local engine at `Model endpoint` serves; the agent did not start and no task changed state. The message names both numbers and how to raise that engine's window (`OLLAMA_CONTEXT_LENGTH` / `num_ctx`, llama.cpp `-c`, vLLM `--max-model-len`, LM Studio's context length)",
    ),
    (
        QUESTIONS_ASKED,
        "human needed: an agent asked questions instead of writing its artifact (QUESTIONS.md in the task folder, each question with its options); `automaton answer <task> 1=<option> 2=\"free text\"` records the answers in DECISIONS.md and the phase runs again with them. Sibling sub-tasks go on meanwhile",
    ),
    (
        NO_PROJECT,
        "no project: `orchestrate`/`continue` found no `.automaton/` or `tasks/` here or above (run `automaton init`, or pass `--project .`), or the project would be inside a task folder (also `init` there)",
    ),
    (
        INTERNAL,
        "internal error: automaton panicked while driving a task (a bug; please report it). The task's `.stop` holds the message; the run ended once what was running had finished",
    ),
    (
        LOCKED,
        "another `automaton orchestrate` holds the project lock (the message names its pid); \
         `reject`, `rerun`, `answer`, `merge` and `clean` refuse with it too while a run drives \
         the project",
    ),
    (
        INTERRUPTED,
        "interrupted by Ctrl-C / SIGTERM / SIGHUP / SIGQUIT: every agent (and a running VRAM detection script) was stopped; the next run resumes at that phase",
    ),
];

/// The meaning of a code, if it is one of automaton's.
pub fn meaning(code: u8) -> Option<&'static str> {
    TABLE.iter().find(|(c, _)| *c == code).map(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_ascending_and_each_code_once() {
        for pair in TABLE.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
    }

    #[test]
    fn every_code_of_this_file_is_in_the_table() {
        let source = include_str!("exit.rs");
        let mut codes = 0;
        for line in source.lines() {
            let Some(rest) = line.strip_prefix("pub const ") else {
                continue;
            };
            let Some((_, value)) = rest.split_once(": u8 = ") else {
                continue;
            };
            let code: u8 = value.trim_end_matches(';').parse().expect("a code");
            assert!(meaning(code).is_some(), "{line}: not in TABLE");
            codes += 1;
        }
        assert_eq!(codes, TABLE.len(), "one row per constant");
    }

    #[test]
    fn every_stop_has_its_code_in_the_table() {
        for (kind, word, code) in crate::plan::decide::StopKind::TABLE {
            assert!(
                meaning(code).is_some(),
                "{kind:?} ({word}) exits {code}: not in TABLE"
            );
        }
    }
}
