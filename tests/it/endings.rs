//! Honest endings (issue 15): the agent is checked before it runs, every run ends with a
//! summary and an exit code that says whether the work is done, manual mode steps one phase at
//! a time, fix tasks are tracked, and the seeds' wave barrier and budget rules hold.

use crate::harness::{Project, files, output_text};
use predicates::prelude::*;

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
    let before = files(&p);
    for args in [
        vec!["orchestrate", "--task", "tasks/auth"],
        vec!["continue"],
        vec!["orchestrate", "new thing"],
    ] {
        p.cmd()
            .args(&args)
            .assert()
            .code(24)
            .stderr(predicate::str::contains(
                "the agent program `claude-cod` was not found on PATH",
            ))
            .stderr(predicate::str::contains(
                "`- **Agent command**: claude-cod -p`",
            ))
            .stderr(predicate::str::contains(".automaton/.agent.md:4"));
        assert_eq!(files(&p), before, "{args:?} changed files");
    }
    assert_eq!(p.read("tasks/auth/.state"), "implement\n");
    // The environment and the flag are named as origins too.
    p.cmd()
        .env("AUTOMATON_AGENT", "no-such-agent-x")
        .args(["orchestrate", "--task", "tasks/auth"])
        .assert()
        .code(24)
        .stderr(predicate::str::contains(
            "`no-such-agent-x` (from $AUTOMATON_AGENT) runs",
        ));
    p.cmd()
        .args([
            "orchestrate",
            "--task",
            "tasks/auth",
            "--agent",
            "./bin/agent",
        ])
        .assert()
        .code(24)
        .stderr(predicate::str::contains(
            "`./bin/agent` (from --agent) runs",
        ))
        // A flag is not a line of a settings file.
        .stderr(predicate::str::contains("`- **Agent command**: ./bin/agent`").not());
    // An adapter without its CLI names `- **Agent**`.
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: claude\n");
    p.cmd()
        .env("PATH", "/usr/bin:/bin")
        .args(["orchestrate", "--task", "tasks/auth"])
        .assert()
        .code(24)
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
        crate::harness::agent_command().replace("sh ", "$SHELL_FOR_TEST ")
    );
    p.orchestrate_cmd()
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
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
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
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
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
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
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
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
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
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .arg("y")
        .assert()
        .code(25)
        .stdout(predicate::str::contains("**Task: tasks/y**"))
        .stdout(predicate::str::contains("- **Auto-Execute**: NO"))
        .stdout(predicate::str::contains(
            "Created tasks/y. Autopilot is disabled, so nothing ran",
        ))
        .stdout(predicate::str::contains(
            "\n  automaton orchestrate --task tasks/y --step\n",
        ))
        .stdout(predicate::str::contains(
            "Summary: 0 complete, 0 waiting for a person, 1 not started\n",
        ))
        // Steps remain (exit 25): not a completed orchestration.
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE").not());
    assert_eq!(p.read("tasks/y/.state"), "new\n");
    assert!(p.agent_runs().is_empty(), "an agent ran in manual mode");
}

#[test]
fn every_run_ends_with_a_summary_and_an_honest_exit_code() {
    let p = Project::new();
    p.orchestrate_cmd()
        .arg("good")
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with(
            "Summary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n",
        ));
    p.orchestrate_cmd()
        .env("AGENT_BEHAVIOR", "referee=fail")
        .arg("bad")
        .assert()
        .code(10)
        .stdout(predicate::str::contains(
            "Summary: 0 complete, 1 waiting for a person, 0 not started\n⚠️ **HUMAN INTERVENTION REQUIRED**: tasks/bad: referee verdict is FAIL",
        ))
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE").not());
    // Manual mode over the whole project: one task needs a person, so not 0.
    p.cmd()
        .args(["orchestrate", "--manual"])
        .assert()
        .code(19)
        .stdout(predicate::str::ends_with(
            "Summary: 1 complete, 1 waiting for a person, 1 not started\n",
        ));
    // Once nothing is left, manual mode exits 0.
    let q = Project::new();
    q.orchestrate_cmd().arg("done").assert().code(0);
    q.cmd()
        .args(["orchestrate", "--manual"])
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with(
            "Summary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n",
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
    p.orchestrate_cmd().arg("walk").assert().code(25);
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
            .orchestrate_cmd()
            .env("AGENT_LOG", p.join("agent.log"))
            .args(["--task", "tasks/walk", "--step"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(if last { 0 } else { 25 }),
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
            "**Auto-created tasks from tasks/auth**:\n- **tasks/auth-fix-token-leak** — Status: New (from tasks/auth); next: bug_find — Command: automaton orchestrate --task tasks/auth-fix-token-leak\n",
        ))
        // The original's next command runs its fix task.
        .stdout(predicate::str::contains(
            "- **Command**:\n  automaton orchestrate --task tasks/auth-fix-token-leak\n",
        ));
    p.orchestrate_cmd()
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
    p.orchestrate_cmd()
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
    p.orchestrate_cmd()
        .args(["--task", "tasks/v"])
        .assert()
        .code(17)
        .stdout(predicate::str::contains(
            "verify command `false` failed (exited with status 1); see tasks/v/logs/verify-1.log",
        ))
        .stdout(predicate::str::contains("agent exited").not());
}

#[test]
fn a_kill_after_the_verify_passed_but_before_its_mark_was_cleared_ends_complete() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Verify command**: echo ran >> {}\n",
            p.join("verify-runs.txt").display()
        ),
    );
    p.cmd()
        .args(["task", "create", "v", "--at", "referee"])
        .assert()
        .success();
    p.orchestrate_cmd()
        .args(["--task", "tasks/v"])
        .assert()
        .code(0);
    assert_eq!(p.read("verify-runs.txt"), "ran\n");
    // What a kill between recording the pass (logs/verified) and clearing the mark leaves.
    p.write(
        "tasks/v/logs/verify-due",
        "the PASS verdict waits for the verify command\n",
    );
    p.write("tasks/v/.state", "referee\n");
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .args(["--task", "tasks/v"])
        .assert()
        .code(0);
    assert_eq!(p.read("tasks/v/.state"), "complete\n");
    assert_eq!(p.agent_runs(), vec![], "the verified PASS was judged again");
    assert_eq!(p.read("verify-runs.txt"), "ran\n", "verified again");
}

// ---- 8. the seeds' wave and budget rules ----

const NO_DESIGN: &str = "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n";

/// (task, phase, start ns, end ns) as tests/agents/agent.sh records them.
fn recs(p: &Project) -> Vec<(String, String, u128, u128)> {
    std::fs::read_to_string(p.join("agent.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

fn span(r: &[(String, String, u128, u128)], task: &str) -> (u128, u128) {
    let mine: Vec<_> = r.iter().filter(|x| x.0 == task).collect();
    assert!(!mine.is_empty(), "{task} never ran: {r:?}");
    (
        mine.iter().map(|x| x.2).min().unwrap(),
        mine.iter().map(|x| x.3).max().unwrap(),
    )
}

fn wave_run(p: &Project) -> std::process::Output {
    // a (wave 1) is slow; c (wave 2) depends only on b (wave 1), which is fast.
    let plan = "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n\
                | a | 1 | - | 4k |\n| b | 1 | - | 4k |\n| c | 2 | b | 4k |\n";
    p.orchestrate_cmd()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("AGENT_DECOMPOSITION", plan)
        .env("AGENT_SLEEP", "0.4")
        .env("AGENT_BEHAVIOR", "p:research=decompose a:*=slow")
        .arg("p")
        .output()
        .unwrap()
}

#[test]
fn strict_wave_barrier_waits_for_all_of_wave_one() {
    let p = Project::new();
    p.write(".automaton/config.md", NO_DESIGN);
    let out = wave_run(&p);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r = recs(&p);
    let a = span(&r, "tasks/p/subtasks/a");
    let c = span(&r, "tasks/p/subtasks/c");
    assert!(
        c.0 >= a.1,
        "wave 2 started before wave 1 ended: a {a:?} c {c:?}"
    );
    // The detection results are reported at decomposition, and kept in the parent's log.
    let err = String::from_utf8_lossy(&out.stderr);
    let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(all.contains("tasks/p: VRAM Detection Results:"), "{all}");
    assert!(
        p.read("tasks/p/logs/vram-detection.log")
            .contains("VRAM Detection Results:")
    );

    // `dependencies` is the old rule: c goes as soon as b is done, while a still runs.
    let q = Project::new();
    q.write(
        ".automaton/config.md",
        format!("{NO_DESIGN}\n## Waves\n- **Wave barrier**: dependencies\n"),
    );
    let out = wave_run(&q);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r = recs(&q);
    let (a, b, c) = (
        span(&r, "tasks/p/subtasks/a"),
        span(&r, "tasks/p/subtasks/b"),
        span(&r, "tasks/p/subtasks/c"),
    );
    assert!(c.0 >= b.1, "c started before its dependency b ended");
    assert!(c.0 < a.1, "c waited for a: a {a:?} c {c:?}");
}

/// An agent whose research writes a plan with one row over an 8k budget; the decomposition
/// phase splits it (or, with SAME=1, writes the same plan again; with MALFORMED=1, a table
/// with a bad wave, and fails).
const BUDGET_AGENT: &str = r#"set -u
cat > /dev/null
echo "$AUTOMATON_TASK $AUTOMATON_PHASE" >> "$AUTOMATON_PROJECT/runs.log"
head='| Sub-task | Wave | Depends on | Estimated peak context |
|---|---|---|---|'
case "$AUTOMATON_TASK:$AUTOMATON_PHASE" in
  tasks/p:research)
    printf '%s\n| big | 1 | - | 20k |\n| small | 1 | - | 4k |\n' "$head" > "$AUTOMATON_TASK_DIR/DECOMPOSITION.md"
    echo spec > "$AUTOMATON_ARTIFACT" ;;
  tasks/p:decomposition)
    if [ "${SAME:-0}" = 1 ]; then
      printf '%s\n| big | 1 | - | 20k |\n| small | 1 | - | 4k |\n' "$head" > "$AUTOMATON_ARTIFACT"
    elif [ "${MALFORMED:-0}" = 1 ]; then
      printf '%s\n| big-1 | one | - | 6k |\n' "$head" > "$AUTOMATON_ARTIFACT"; exit 1
    else
      printf '%s\n| big-1 | 1 | - | 6k |\n| big-2 | 1 | - | 6k |\n| small | 1 | - | 4k |\n' "$head" > "$AUTOMATON_ARTIFACT"
    fi ;;
  *:referee) echo "Verdict: PASS" > "$AUTOMATON_ARTIFACT" ;;
  *) echo done > "$AUTOMATON_ARTIFACT" ;;
esac
"#;

fn budget_project() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        format!(
            "{NO_DESIGN}\n## VRAM Configuration\n- **Auto-detect**: No\n- **Max peak context per sub-task**: 8k tokens\n"
        ),
    );
    p.write("budget-agent.sh", BUDGET_AGENT);
    p
}

fn decomposition_runs(p: &Project) -> usize {
    p.read("runs.log")
        .lines()
        .filter(|l| *l == "tasks/p decomposition")
        .count()
}

#[test]
fn an_over_budget_plan_goes_back_to_decomposition_once() {
    let p = budget_project();
    p.orchestrate_cmd()
        .args(["--agent", "sh budget-agent.sh", "p"])
        .assert()
        .code(0);
    assert_eq!(decomposition_runs(&p), 1);
    let prompt = p.read("tasks/p/logs/decomposition-1.prompt.md");
    assert!(
        prompt.contains("max peak context per sub-task is 8000 tokens"),
        "{prompt}"
    );
    assert!(prompt.contains("| big | 1 | 20000 tokens |"), "{prompt}");
    assert!(!prompt.contains("| small |"), "{prompt}");
    for s in ["big-1", "big-2", "small"] {
        assert_eq!(
            p.read(&format!("tasks/p/subtasks/{s}/.state")),
            "complete\n"
        );
    }
    assert!(!p.join("tasks/p/subtasks/big").exists());

    // Sent back once only: a plan still over budget then stands, with its warning.
    let q = budget_project();
    q.orchestrate_cmd()
        .env("SAME", "1")
        .args(["--agent", "sh budget-agent.sh", "p"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "tasks/p/subtasks/big: estimated peak context 20k exceeds the max peak",
        ));
    assert_eq!(decomposition_runs(&q), 1);
    assert_eq!(q.read("tasks/p/subtasks/big/.state"), "complete\n");
}

/// A plan sent back whose re-plan fails is retried as announced and then stops for a person:
/// the task never goes on as a plain task without its sub-tasks (its failed plan was set aside
/// for the retry, so nothing on disk but the sent-back mark says it is a planned task).
#[test]
fn a_replan_that_keeps_failing_stops_and_never_drops_the_plan() {
    let p = budget_project();
    p.write(
        ".automaton/config.md",
        format!(
            "{NO_DESIGN}\n## Limits\n- **Retries**: 1\n- **Retry backoff**: 50ms\n\n\
             ## VRAM Configuration\n- **Auto-detect**: No\n- **Max peak context per sub-task**: 8k tokens\n"
        ),
    );
    let out = p
        .orchestrate_cmd()
        .env_remove("AUTOMATON_RETRIES")
        .env("MALFORMED", "1")
        .args(["--agent", "sh budget-agent.sh", "p"])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(12), "{text}");
    assert!(text.contains("retry 1 of 1"), "{text}");
    assert_eq!(decomposition_runs(&p), 2, "announced retry ran: {text}");
    let runs = p.read("runs.log");
    assert!(
        !runs.lines().any(|l| l.starts_with("tasks/p ")
            && !l.ends_with("research")
            && !l.ends_with("decomposition")),
        "the task went on as a plain task:\n{runs}"
    );
    assert!(!p.join("tasks/p/IMPLEMENTATION.md").exists());
    assert_eq!(p.read("tasks/p/.state"), "human_intervention\n", "{text}");
}
