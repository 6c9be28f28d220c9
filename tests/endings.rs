//! Honest endings (issue 15): the agent is checked before it runs, every run ends with a
//! summary and an exit code that says whether the work is done, manual mode steps one phase at
//! a time, fix tasks are tracked, and the seeds' wave barrier and budget rules hold.

mod common;
use common::Project;
use predicates::prelude::*;

/// Every file under the project with its content (to prove a run changed nothing).
fn snapshot(p: &Project) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![p.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(p.path()).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

// ---- 3. the agent is checked before it runs ----

#[test]
fn a_missing_agent_program_is_refused_before_anything_changes() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Agent command**: claude-cod -p\n",
    );
    p.cmd()
        .args(["task", "create", "auth", "--at", "implement"])
        .assert()
        .success();
    let before = snapshot(&p);
    for args in [
        vec!["orchestrate", "--task", "tasks/auth"],
        vec!["continue"],
        vec!["orchestrate", "new thing"],
    ] {
        p.cmd()
            .args(&args)
            .assert()
            .code(20)
            .stderr(predicate::str::contains(
                "the agent program `claude-cod` was not found on PATH",
            ))
            .stderr(predicate::str::contains(
                "`- **Agent command**: claude-cod -p`",
            ))
            .stderr(predicate::str::contains(".automaton/.agent.md:4"));
        assert_eq!(snapshot(&p), before, "{args:?} changed files");
    }
    assert_eq!(p.read("tasks/auth/.state"), "implement\n");
    // The environment and the flag are named as origins too.
    p.cmd()
        .env("AUTOMATON_AGENT", "no-such-agent-x")
        .args(["orchestrate", "--task", "tasks/auth"])
        .assert()
        .code(20)
        .stderr(predicate::str::contains("(env AUTOMATON_AGENT)"));
    p.cmd()
        .args([
            "orchestrate",
            "--task",
            "tasks/auth",
            "--agent",
            "./bin/agent",
        ])
        .assert()
        .code(20)
        .stderr(predicate::str::contains("(flag --agent)"));
    // An adapter without its CLI names `- **Agent**`.
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: claude\n");
    p.cmd()
        .env("PATH", "/usr/bin:/bin")
        .args(["orchestrate", "--task", "tasks/auth"])
        .assert()
        .code(20)
        .stderr(predicate::str::contains("`claude` was not found"))
        .stderr(predicate::str::contains("`- **Agent**: claude` ("));
    assert_eq!(p.read("tasks/auth/.state"), "implement\n");
}

#[test]
fn compound_agent_lines_are_left_to_the_shell() {
    let p = Project::new();
    p.cmd()
        .args(["task", "create", "auth", "--at", "referee"])
        .assert()
        .success();
    // A pipe and a variable: not checkable, so not refused; the shell runs it.
    let agent = format!(
        "true | AGENT_BEHAVIOR=ok {}",
        common::agent_command().replace("sh ", "$SHELL_FOR_TEST ")
    );
    p.orchestrate()
        .env("SHELL_FOR_TEST", "sh")
        .args(["--task", "tasks/auth", "--agent", &agent])
        .assert()
        .code(0);
    assert_eq!(p.read("tasks/auth/.state"), "complete\n");
}
