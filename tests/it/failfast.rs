//! Fail fast on what cannot change (issue 29 items 7 and 12): an empty, blank or reserved
//! request is a usage error, the preflight names a missing agent script, an agent exit of
//! 126/127 or the same error twice stops at once with the agent's own words on screen, a
//! non-UTF-8 argument is named (never a panic), and a plan names every error of its table and
//! is refused over its size cap. Each drives the real binary over a real folder.

use crate::harness::{Project, files};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// A project with one unrelated task one phase from done: what `continue` would drive.
fn project_with_other_task() -> Project {
    let p = Project::new();
    p.test()
        .args(["task", "create", "other", "--at", "referee"])
        .stdout("created tasks/other (referee)\n")
        .run();
    p
}

const EMPTY: &str = "error: the task description is empty: describe the task (`automaton \
                     orchestrate \"add user auth\"`), or run `automaton continue` (or `automaton \
                     orchestrate` with no description) to continue the most advanced unfinished \
                     task\n";

#[test]
fn an_empty_or_blank_request_is_a_usage_error_and_drives_nothing() {
    let p = project_with_other_task();
    let before = files(&p);
    for desc in ["", "   ", "\t\n"] {
        p.orchestrate()
            .agent_log()
            .arg(desc)
            .status(2)
            .stderr(EMPTY)
            .run();
        assert_eq!(files(&p), before, "{desc:?} wrote something");
    }
    // As JSON: the same error, as one object on stdout.
    let ran = p
        .orchestrate()
        .args(["--json", ""])
        .status(2)
        .stdout_any()
        .run();
    assert_eq!(ran.json()["exit_code"], 2);
    assert_eq!(p.read("tasks/other/.state"), "referee\n");
    assert!(!p.join("agent.log").exists(), "an agent ran");
}

#[test]
fn continue_is_a_command_word_never_a_task_name() {
    let p = project_with_other_task();
    let before = files(&p);
    for desc in ["continue", "Continue!"] {
        p.orchestrate()
            .agent_log()
            .arg(desc)
            .status(2)
            .stderr(format!(
                "error: `{desc}` is a command, not a task: run `automaton continue` (or \
                 `automaton orchestrate` with no description) to continue the most advanced \
                 unfinished task, or describe a new task in more words\n"
            ))
            .run();
    }
    for path in ["continue", "tasks/continue", ".automaton/tasks/continue"] {
        p.test()
            .args(["task", "create", path])
            .status(1)
            .stderr(
                "error: `continue` is a command word (`automaton continue`), not a task name: \
                 choose another name\n",
            )
            .run();
    }
    assert_eq!(files(&p), before);
    assert!(!p.join("tasks/continue").exists());
    // More words make a task as ever.
    p.test()
        .args(["task", "create", "continue-the-import"])
        .stdout("created tasks/continue-the-import (new)\n")
        .run();
}

#[test]
fn a_non_utf8_argument_is_named_never_a_panic() {
    let p = Project::new();
    p.mkdir("tasks");
    let bad = OsStr::from_bytes(b"tasks/a\xff");
    p.test()
        .args([OsStr::new("task"), OsStr::new("create"), bad])
        .status(2)
        .stderr(
            "error: argument 5 (\"tasks/a\\xFF\") is not valid UTF-8: task paths, descriptions \
             and values must be text (only the folder of --project/-C may be any bytes)\n",
        )
        .run();
    p.orchestrate()
        .arg(OsStr::from_bytes(b"add \xff"))
        .status(2)
        .stderr_contains("is not valid UTF-8")
        .stderr_lacks("panicked")
        .run();
    assert_eq!(files(&p), Vec::new());
    // A project folder is used as the path it is.
    let dir = OsStr::from_bytes(b"proj\xff");
    std::fs::create_dir_all(p.path().join(dir).join("tasks")).unwrap();
    p.test()
        .no_project_flag()
        .args([
            OsStr::new("--project"),
            dir,
            OsStr::new("task"),
            OsStr::new("create"),
            OsStr::new("b"),
        ])
        .stdout("created tasks/b (new)\n")
        .run();
    assert!(p.path().join(dir).join("tasks/b/.state").is_file());
    p.test()
        .no_project_flag()
        .args([OsStr::new("-C"), dir, OsStr::new("status")])
        .stdout_contains("**Task: tasks/b**")
        // The command it prints names that very folder, its byte escaped.
        .stdout_contains("automaton --project $'[PROJECT]/proj\\xff' orchestrate --task tasks/b")
        .run();
    // One that does not exist is named, not a panic.
    p.test()
        .no_project_flag()
        .args([
            OsStr::new("--project"),
            OsStr::from_bytes(b"\xfe"),
            OsStr::new("status"),
        ])
        .status(1)
        .stderr_contains("does not exist")
        .stderr_lacks("panicked")
        .run();
}

#[test]
fn a_missing_agent_script_is_refused_before_anything_changes() {
    let p = project_with_other_task();
    let before = files(&p);
    for agent in ["sh agents/claude.sh", "bash -e agents/claude.sh --fast"] {
        p.orchestrate()
            .args(["--agent", agent, "--task", "tasks/other"])
            .status(24)
            .stderr(format!(
                "error: the agent script `agents/claude.sh` (run by `{}`) does not exist in \
                 [PROJECT], the folder the agent runs in: `{agent}` (from --agent) runs \
                 `{agent}`; create it or correct the path (`automaton config` \
                 shows every setting and where it came from). Nothing ran and no task changed \
                 state.\n",
                agent.split(' ').next().unwrap()
            ))
            .run();
        assert_eq!(files(&p), before, "{agent}");
    }
    // Once the script is there, it runs.
    p.write(
        "agents/claude.sh",
        "printf 'Verdict: PASS\\n' > \"$AUTOMATON_ARTIFACT\"\n",
    );
    p.orchestrate()
        .args(["--agent", "sh agents/claude.sh", "--task", "tasks/other"])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.read("tasks/other/.state"), "complete\n");
}

/// `- **Retries**: 2` with a backoff long enough that a retry would be felt.
fn with_retries(p: &Project) {
    p.write(
        ".automaton/config.md",
        "## Limits\n- **Retries**: 2\n- **Retry backoff**: 20s\n",
    );
}

/// `orchestrate --task tasks/other` with `agent` and the config's retries: it must stop with
/// exit 12 after `attempts`, the reason starting `reason` and ending with the agent's words
/// `said` (the shell's wording varies: dash `sh: 1: x: not found`, bash `sh: line 1: ...`).
fn drive(p: &Project, agent: &str, attempts: u32, reason: &str, said: &str) {
    let ran = p
        .orchestrate()
        .env_remove("AUTOMATON_RETRIES")
        .args(["--agent", agent, "--task", "tasks/other"])
        .status(12)
        .stdout_contains(format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {reason}"))
        .stderr_contains(format!("✘ tasks/other: {reason}"))
        .stderr_lacks("retrying")
        .stderr_lacks(format!("(attempt {})", attempts + 1))
        .run();
    let last = ran.stdout.lines().last().unwrap_or_default().to_string();
    assert!(last.contains("the agent's last output: "), "{last}");
    assert!(last.ends_with(said), "{last}");
    assert!(p.read("tasks/other/.stop").contains(reason));
}

#[test]
fn exit_126_or_127_stops_at_once_with_the_agents_own_line() {
    let p = project_with_other_task();
    with_retries(&p);
    // A compound line is left to the shell by the preflight; the shell answers 127.
    drive(
        &p,
        "cd . && no-such-agent-x",
        1,
        "agent exited with status 127 during referee; see tasks/other/logs/referee-1.log; the \
         command or its script was not found (127): not retried; the agent's last output: ",
        "no-such-agent-x: not found",
    );
    assert!(!p.join("tasks/other/logs/referee-2.log").exists());
    // 126: the file is there but cannot be executed.
    let p = project_with_other_task();
    with_retries(&p);
    p.write("agent.sh", "echo hi\n");
    drive(
        &p,
        "cd . && ./agent.sh",
        1,
        "agent exited with status 126 during referee; see tasks/other/logs/referee-1.log; the \
         command cannot be executed (126): not retried; the agent's last output: ",
        "./agent.sh: Permission denied",
    );
    assert!(!p.join("tasks/other/logs/referee-2.log").exists());
}

#[test]
fn the_same_error_twice_stops_without_the_third_attempt() {
    let p = project_with_other_task();
    p.write(
        ".automaton/config.md",
        "## Limits\n- **Retries**: 2\n- **Retry backoff**: 100ms\n",
    );
    drive(
        &p,
        "echo working; echo 'error: invalid API key' >&2; exit 1",
        2,
        "agent exited with status 1 during referee; see tasks/other/logs/referee-2.log; the \
         same error as the attempt before: not retried again; the agent's last output: ",
        "working ⏎ error: invalid API key",
    );
    assert!(p.join("tasks/other/logs/referee-2.log").exists());
    assert!(!p.join("tasks/other/logs/referee-3.log").exists());
    // An error that changes is retried as configured (a flaky agent gets its attempts).
    let p = project_with_other_task();
    p.write(
        ".automaton/config.md",
        "## Limits\n- **Retries**: 2\n- **Retry backoff**: 100ms\n",
    );
    p.orchestrate()
        .env_remove("AUTOMATON_RETRIES")
        .args([
            "--agent",
            "echo \"error: try $AUTOMATON_ATTEMPT\" >&2; exit 1",
            "--task",
            "tasks/other",
        ])
        .status(12)
        .stdout_contains("gave up after 3 attempts of referee")
        .stderr_any()
        .run();
    assert!(p.join("tasks/other/logs/referee-3.log").exists());
}

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A project where `orchestrate p`'s research writes `plan` as DECOMPOSITION.md.
fn plan_run(p: &Project, plan: &str) -> crate::harness::Test {
    p.write(
        ".automaton/config.md",
        "## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    p.orchestrate()
        .env("AGENT_DECOMPOSITION", plan)
        .behavior("p:research=decompose")
        .stderr_any()
}

const HEADER: &str =
    "# Plan\n\n| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n";

#[test]
fn a_malformed_plan_names_every_error_at_once() {
    let p = Project::new();
    plan_run(
        &p,
        &format!("{HEADER}| a | first | - | 4k |\n| b | 2 | zed | 4k |\n| c | 2 | a | lots |\n"),
    )
    .arg("p")
    .status(11)
    .stdout_contains(
        "⚠️ **HUMAN INTERVENTION REQUIRED**: DECOMPOSITION.md is invalid: 3 errors: line 5: cell \
         `Wave`: `first` is not a wave number (1, 2, ...); line 6: cell `Depends on`: `b` \
         depends on unknown sub-task `zed`; line 7: cell `Estimated peak context`: `lots` is \
         not a token count like 6k",
    )
    .run();
    assert!(!p.join("tasks/p/subtasks").exists());
}

#[test]
fn a_plan_over_its_size_cap_is_refused_never_cut() {
    let p = Project::new();
    // Valid rows all through, 1.2 MB: cut at 1 MiB it would parse, and lose its last rows.
    let rows: String = (0..60_000)
        .map(|i| format!("| t{i} | 1 | - | 4k |\n"))
        .collect();
    let plan = format!("{HEADER}{rows}");
    assert!(plan.len() > 1024 * 1024);
    p.write("tasks/big/SPEC.md", "# Spec\n\nBig.\n");
    p.write("tasks/big/DECOMPOSITION.md", &plan);
    let reason = format!(
        "DECOMPOSITION.md is invalid: the file is over the 1 MiB size cap of a plan ({} bytes), \
         and a plan is never read cut short",
        thousands(plan.len())
    );
    assert!(
        p.task_json("tasks/big")["reason"]
            .as_str()
            .unwrap()
            .contains(&reason)
    );
    p.orchestrate()
        .args(["--task", "tasks/big"])
        .status(11)
        .stdout_contains(format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {reason}"))
        .stderr_any()
        .run();
    assert!(!p.join("tasks/big/subtasks").exists());
}
