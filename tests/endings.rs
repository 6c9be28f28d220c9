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

// ---- 4. honest endings ----

fn phases_run(p: &Project) -> Vec<(String, String)> {
    p.agent_runs()
}

#[test]
fn continue_drives_a_subtask_made_by_hand() {
    let p = Project::new();
    p.cmd()
        .args(["task", "create", "tasks/auth/subtasks/login"])
        .assert()
        .success();
    p.cmd()
        .env("AUTOMATON_AGENT", common::agent_command())
        .env("AGENT_LOG", p.join("agent.log"))
        .arg("continue")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Summary: 2 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n",
        ));
    assert_eq!(p.read("tasks/auth/subtasks/login/.state"), "complete\n");
    assert_eq!(p.read("tasks/auth/.state"), "complete\n");
    // The sub-task ran first, then its parent.
    let runs = phases_run(&p);
    let first_parent = runs.iter().position(|(t, _)| t == "tasks/auth").unwrap();
    let last_login = runs
        .iter()
        .rposition(|(t, _)| t == "tasks/auth/subtasks/login")
        .unwrap();
    assert!(last_login < first_parent, "{runs:?}");
    // The second `continue` has nothing left, and says so honestly.
    p.cmd()
        .env("AUTOMATON_AGENT", common::agent_command())
        .arg("continue")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Summary: 2 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE",
        ));
    // A sub-task made by hand under a task that is already complete is driven alone.
    p.cmd()
        .args(["task", "create", "tasks/auth/subtasks/logout"])
        .assert()
        .success();
    p.cmd()
        .env("AUTOMATON_AGENT", common::agent_command())
        .arg("continue")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Summary: 1 complete,"));
    assert_eq!(p.read("tasks/auth/subtasks/logout/.state"), "complete\n");
}

#[test]
fn continue_says_why_it_will_not_drive_an_orphan_and_exits_non_zero() {
    let p = Project::new();
    p.write("tasks/p/SPEC.md", "spec")
        .write(
            "tasks/p/DECOMPOSITION.md",
            "| Sub-task | Wave | Depends on |\n|---|---|---|\n| a | 1 | - |\n",
        )
        .write("tasks/p/subtasks/a/SPEC.md", "spec")
        .write("tasks/p/subtasks/a/VERDICT.md", "Verdict: PASS\n")
        .write("tasks/p/subtasks/stray/SPEC.md", "work in progress");
    assert_eq!(p.state_of("tasks/p"), "complete");
    p.cmd()
        .env("AUTOMATON_AGENT", common::agent_command())
        .arg("continue")
        .assert()
        .code(19)
        .stdout(predicate::str::contains(
            "- tasks/p/subtasks/stray (design) is not driven: tasks/p/subtasks/stray is not listed in tasks/p/DECOMPOSITION.md",
        ))
        .stdout(predicate::str::contains(
            "Summary: 2 complete, 0 waiting for a person, 0 not started, 1 in progress",
        ))
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE").not());
}

#[test]
fn autopilot_disabled_orchestrate_creates_the_task_and_reports_it() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Autopilot**: Disabled\n",
    );
    p.orchestrate()
        .env("AGENT_LOG", p.join("agent.log"))
        .arg("y")
        .assert()
        .code(21)
        .stdout(predicate::str::contains("**Task: tasks/y**"))
        .stdout(predicate::str::contains("- **Auto-Execute**: NO"))
        .stdout(predicate::str::contains(
            "Created tasks/y. Autopilot is disabled, so nothing ran",
        ))
        .stdout(predicate::str::contains(
            "\n  automaton orchestrate --task tasks/y --step\n",
        ))
        .stdout(predicate::str::contains(
            "Summary: 0 complete, 0 waiting for a person, 1 not started\nORCHESTRATION_COMPLETE\n",
        ));
    assert_eq!(p.read("tasks/y/.state"), "new\n");
    assert!(p.agent_runs().is_empty(), "an agent ran in manual mode");
}

#[test]
fn every_run_ends_with_a_summary_and_an_honest_exit_code() {
    let p = Project::new();
    p.orchestrate()
        .arg("good")
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with(
            "Summary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n",
        ));
    p.orchestrate()
        .env("AGENT_BEHAVIOR", "referee=fail")
        .arg("bad")
        .assert()
        .code(10)
        .stdout(predicate::str::contains(
            "Summary: 0 complete, 1 waiting for a person, 0 not started\n⚠️ **HUMAN INTERVENTION REQUIRED**: referee verdict is FAIL",
        ))
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE").not());
    // Manual mode over the whole project: one task needs a person, so not 0.
    p.cmd()
        .args(["orchestrate", "--manual"])
        .assert()
        .code(19)
        .stdout(predicate::str::contains(
            "Summary: 1 complete, 1 waiting for a person, 1 not started\nORCHESTRATION_COMPLETE\n",
        ));
    // Once nothing is left, manual mode exits 0.
    let q = Project::new();
    q.orchestrate().arg("done").assert().code(0);
    q.cmd()
        .args(["orchestrate", "--manual"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Summary: 1 complete, 0 waiting for a person, 0 not started",
        ));
}

// ---- 5. a manual mode that steps ----

#[test]
fn step_walks_a_task_one_phase_per_call() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Autopilot**: Disabled\n",
    );
    p.orchestrate().arg("walk").assert().code(21);
    // The manual-mode report prints the command that runs one phase.
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "- **Auto-Execute**: NO\n- **Command**:\n  automaton orchestrate --task tasks/walk --step\n",
        ));
    let phases = [
        "research",
        "design",
        "test_design",
        "implement",
        "bug_find",
        "adversarial_bug_find",
        "doc_review",
        "referee",
    ];
    for (n, phase) in phases.iter().enumerate() {
        let last = n + 1 == phases.len();
        let out = p
            .orchestrate()
            .env("AGENT_LOG", p.join("agent.log"))
            .args(["--task", "tasks/walk", "--step"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(if last { 0 } else { 21 }),
            "step {n}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let runs: Vec<String> = p.agent_runs().into_iter().map(|(_, ph)| ph).collect();
        assert_eq!(runs.len(), n + 1, "one phase per call: {runs:?}");
        assert_eq!(runs[n], *phase);
        if !last {
            assert!(
                stdout.contains("  automaton orchestrate --task tasks/walk --step\n"),
                "{stdout}"
            );
            // Nothing is recorded as a stop: the task simply waits for the next step.
            assert!(!p.join("tasks/walk/.stop").exists());
        }
    }
    assert_eq!(p.read("tasks/walk/.state"), "complete\n");
}

// ---- 6. fix-task bookkeeping ----

#[test]
fn fix_tasks_are_tracked_and_lead_back_to_the_referee() {
    let p = Project::new();
    p.write("tasks/auth/SPEC.md", "the spec")
        .write("tasks/auth/IMPLEMENTATION.md", "code")
        .write("tasks/auth/BUG_REPORT.md", "bugs")
        .write("tasks/auth/ADVERSARIAL_BUG_REPORT.md", "more bugs")
        .write("tasks/auth/DOC_REVIEW.md", "docs")
        .write(
            "tasks/auth/VERDICT.md",
            "Verdict: FAIL\n\n## Findings\n- token-leak: tokens in logs\n",
        );
    // Before manual mode: listed as one to create.
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "**Tasks manual mode creates from tasks/auth**",
        ));
    p.cmd().args(["orchestrate", "--manual"]).assert().code(19);
    // Once it exists it is never listed as one to create; the original lists it with its state.
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("Tasks manual mode creates").not())
        .stdout(predicate::str::contains(
            "**Auto-created tasks from tasks/auth**:\n- **tasks/auth-fix-token-leak** — Status: Bug Find (state `bug_find`) — Command: automaton orchestrate --task tasks/auth-fix-token-leak\n",
        ))
        // The original's next command runs its fix task.
        .stdout(predicate::str::contains(
            "- **Command**:\n  automaton orchestrate --task tasks/auth-fix-token-leak\n",
        ));
    p.orchestrate()
        .args(["--task", "tasks/auth-fix-token-leak"])
        .assert()
        .code(0);
    // After the fix completed: manual mode and status show it complete, never "Bug Find".
    p.cmd()
        .args(["orchestrate", "--manual"])
        .assert()
        .code(19)
        .stdout(predicate::str::contains(
            "- **tasks/auth-fix-token-leak** — Status: Complete (state `complete`) — Command: none",
        ))
        .stdout(predicate::str::contains("Status: Bug Find").not())
        .stdout(predicate::str::contains("Created").not());
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "All fix tasks of tasks/auth are complete: run its referee again with\n  automaton orchestrate --task tasks/auth --referee-again\n",
        ))
        .stdout(predicate::str::contains("Tasks manual mode creates").not());
    let doc = p.status_json();
    let auth = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == "tasks/auth")
        .unwrap();
    assert_eq!(auth["fix_tasks"][0]["state"], "complete");
    assert_eq!(
        auth["command"],
        "automaton orchestrate --task tasks/auth --referee-again"
    );
    // That command runs the referee again, keeping the old verdict in logs/.
    p.orchestrate()
        .env("AGENT_LOG", p.join("agent.log"))
        .args(["--task", "tasks/auth", "--referee-again"])
        .assert()
        .code(0);
    assert_eq!(
        p.agent_runs(),
        vec![("tasks/auth".to_string(), "referee".to_string())]
    );
    assert!(p.read("tasks/auth/logs/VERDICT-1.md").contains("FAIL"));
    assert_eq!(p.read("tasks/auth/.state"), "complete\n");
}

#[test]
fn a_failing_verify_is_not_called_an_agent() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Verify command**: false\n",
    );
    p.cmd()
        .args(["task", "create", "v", "--at", "implement"])
        .assert()
        .success();
    p.orchestrate()
        .args(["--task", "tasks/v"])
        .assert()
        .code(17)
        .stdout(predicate::str::contains(
            "verify command `false` failed (exited with status 1); see tasks/v/logs/verify-1.log",
        ))
        .stdout(predicate::str::contains("agent exited").not());
}
