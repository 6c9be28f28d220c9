//! Every file automaton reads or writes, where it lives, who writes it and whether it belongs
//! in git: the one table `automaton help files` prints and a test compares with the README's
//! "Task folders" and "What to commit" tables (and `init`'s ignore rules follow).

/// Where a file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The project root.
    Project,
    /// The project's `.automaton/` (the settings, the lock, caches, worktrees).
    Automaton,
    /// A task folder (`tasks/<name>/`, `.automaton/tasks/<name>/`, `<task>/subtasks/<name>/`).
    Task,
}

impl Place {
    pub fn heading(self) -> &'static str {
        match self {
            Place::Project => "In the project root",
            Place::Automaton => "In .automaton/ (also read from $AUTOMATON_HOME: the settings)",
            Place::Task => "In each task folder",
        }
    }
}

/// Whether a file belongs in git.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Git {
    /// The project's record: commit it.
    Commit,
    /// Derived, or one machine's runs: `init`'s rules ignore it.
    Ignore,
}

/// One file (or folder, ending in `/`, or pattern, with `*`) automaton reads or writes.
#[derive(Debug)]
pub struct FileSpec {
    /// Its path in its place (`lock` is `.automaton/lock`: the path is given whole).
    pub path: &'static str,
    pub place: Place,
    pub git: Git,
    /// Who writes it (`you` for a file only a person writes and automaton reads).
    pub by: &'static str,
    pub meaning: &'static str,
    /// A phase's artifact: it decides the task's state.
    pub artifact: bool,
}

const fn file(
    path: &'static str,
    place: Place,
    git: Git,
    by: &'static str,
    meaning: &'static str,
) -> FileSpec {
    FileSpec {
        path,
        place,
        git,
        by,
        meaning,
        artifact: false,
    }
}

const fn artifact(path: &'static str, meaning: &'static str) -> FileSpec {
    FileSpec {
        path,
        place: Place::Task,
        git: Git::Commit,
        by: "the phase's agent",
        meaning,
        artifact: true,
    }
}

use Git::{Commit, Ignore};
use Place::{Automaton, Project, Task};

/// Every file, grouped by place.
pub static FILES: &[FileSpec] = &[
    file(
        ".gitignore",
        Project,
        Commit,
        "init",
        "automaton's ignore rules, in a block of their own",
    ),
    file(
        ".worktreeinclude",
        Project,
        Commit,
        "you",
        "files (ignored ones such as .env) copied into each new task worktree",
    ),
    file(
        ".automaton/.agent.md",
        Automaton,
        Commit,
        "init, you",
        "the agent settings (`automaton help settings`)",
    ),
    file(
        ".automaton/config.md",
        Automaton,
        Commit,
        "init, you",
        "phases, limits, waves, storage, VRAM and model settings",
    ),
    file(
        ".automaton/demo-agent.sh",
        Automaton,
        Commit,
        "init",
        "the demo agent `init` sets up when no agent CLI is on PATH",
    ),
    file(
        ".automaton/.rules.md",
        Automaton,
        Commit,
        "you",
        "rules added to every phase's prompt",
    ),
    file(
        ".automaton/prompts/<phase>.md",
        Automaton,
        Commit,
        "you",
        "a phase's prompt, instead of the built-in one",
    ),
    file(
        ".automaton/contracts/<phase>.md",
        Automaton,
        Commit,
        "you",
        "a phase's contract, instead of the built-in one",
    ),
    file(
        ".automaton/scripts/",
        Automaton,
        Commit,
        "you",
        "scripts automaton runs, e.g. scripts/vram_detect.sh",
    ),
    file(
        ".automaton/lock",
        Automaton,
        Ignore,
        "orchestrate",
        "names the running automaton (one orchestrator per project; an flock)",
    ),
    file(
        ".automaton/.vram_cache.json",
        Automaton,
        Ignore,
        "orchestrate, detect-vram",
        "cache: the VRAM probe's result",
    ),
    file(
        ".automaton/.agent_model.json",
        Automaton,
        Ignore,
        "orchestrate",
        "cache: the model the agent reported",
    ),
    file(
        ".automaton/.index",
        Automaton,
        Ignore,
        "status, orchestrate",
        "cache: what each task file held when last read, so a repeated `status` stats files instead of reading them",
    ),
    file(
        ".automaton/worktrees/",
        Automaton,
        Ignore,
        "orchestrate",
        "the git worktree of each task (isolation: worktree)",
    ),
    file(
        "TASK.md",
        Task,
        Commit,
        "orchestrate \"…\"",
        "the request the task was created from",
    ),
    artifact("SPEC.md", "research: what to build"),
    artifact(
        "DECOMPOSITION.md",
        "decomposition: the sub-tasks, their waves and dependencies",
    ),
    artifact("DESIGN.md", "design"),
    artifact(
        "TEST_PLAN.md",
        "test design: frozen with its acceptance tests once written",
    ),
    artifact("IMPLEMENTATION.md", "implement: what was built"),
    artifact("BUG_REPORT.md", "bug find"),
    artifact("ADVERSARIAL_BUG_REPORT.md", "adversarial bug find"),
    artifact("DOC_REVIEW.md", "doc review"),
    artifact("VERDICT.md", "referee: PASS, FAIL or NEEDS_REVIEW"),
    file(
        "QUESTIONS.md",
        Task,
        Commit,
        "the phase's agent, instead of its artifact",
        "questions for a person, each with 2-4 options; `automaton answer` moves it to logs/questions/",
    ),
    file(
        "DECISIONS.md",
        Task,
        Commit,
        "answer",
        "a person's answers to the agent's questions (who, when), given to every later phase of the task and its sub-tasks",
    ),
    file(
        ".origin",
        Task,
        Commit,
        "task create --at, manual-mode fix tasks",
        "JSON: the state the task starts at and the hashes of reports copied in",
    ),
    file(
        ".state.approvals",
        Task,
        Commit,
        "approve, reject",
        "append-only JSON lines: every approval and rejection",
    ),
    file(
        ".state.inputs",
        Task,
        Commit,
        "orchestrate",
        "JSON lines: the hashes of the artifacts each phase was given (staleness)",
    ),
    file(
        ".state.frozen",
        Task,
        Commit,
        "orchestrate, approve",
        "JSON: the hashes of TEST_PLAN.md and its acceptance files",
    ),
    file(
        "PARENT_SPEC.md",
        Task,
        Commit,
        "decomposition",
        "a sub-task's scope",
    ),
    file(
        "VRAM_CONFIG.md",
        Task,
        Commit,
        "decomposition",
        "a sub-task's context budget",
    ),
    file(
        ".state",
        Task,
        Ignore,
        "orchestrate",
        "one word, the task's state, re-derived from the artifacts",
    ),
    file(
        ".stop",
        Task,
        Ignore,
        "orchestrate",
        "why this machine's last run stopped the task",
    ),
    file(
        ".incomplete",
        Task,
        Ignore,
        "orchestrate",
        "the artifact a running phase is writing",
    ),
    file(
        ".isolation",
        Task,
        Ignore,
        "orchestrate",
        "this machine's worktree and branch of the task",
    ),
    file(
        "logs/",
        Task,
        Ignore,
        "orchestrate",
        "prompts, agent output and each agent's exit record (<phase>-<n>.exit), verify output, journal.jsonl, verified and verify-due, agent.pid, plan-sent-back.md, isolation.cleaned, set-aside artifacts, rework/<round>/ (what a rework round set aside, its FINDINGS.md and round.diff)",
    ),
    file(
        ".automaton-tmp-*",
        Task,
        Ignore,
        "automaton, during a write",
        "half of an atomic write a crash left",
    ),
    file(
        ".automaton-spare-*",
        Task,
        Ignore,
        "older versions",
        "never read; the next run deletes them",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_once() {
        let mut seen = std::collections::BTreeSet::new();
        for f in FILES {
            assert!(seen.insert((f.path, f.place as u8)), "{} twice", f.path);
        }
    }
}
