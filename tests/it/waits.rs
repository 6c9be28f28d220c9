//! One truth in every report (issue 30): what each task waits for, counted the same by the
//! `Summary:` line, `status` (text and `--json`), `watch --once` and the exit code; and the
//! command each report suggests always moves the task on, walked mechanically over every stop
//! kind. Through the real binary, the scripted agent (tests/agents/agent.sh) and real folders.

use crate::harness::{Project, agent_command, task_of};
use serde_json::Value;

const TASK: &str = "tasks/add-auth";

/// A project whose `.agent.md` holds `agent` under `## Agent` and whose config.md holds
/// `config` (both may be empty).
fn project(agent: &str, config: &str) -> Project {
    let p = Project::new();
    if !agent.is_empty() {
        p.write(
            ".automaton/.agent.md",
            format!("# Agent\n\n## Agent\n{agent}\n"),
        );
    }
    if !config.is_empty() {
        p.write(".automaton/config.md", format!("# Config\n\n{config}\n"));
    }
    p
}

/// A finished command: its exit code and both streams.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run the binary with `args` (`--project` and the private home added; for `orchestrate`, the
/// scripted agent with `behavior`).
fn run(p: &Project, args: &[&str], behavior: &str) -> Out {
    let mut c = p.cmd();
    if args.first() == Some(&"orchestrate") {
        c.env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_CONTRACT_GRACE", "2s")
            .env("AGENT_LOG", p.join("agent.log"));
        match behavior {
            "" => c.env_remove("AGENT_BEHAVIOR"),
            b => c.env("AGENT_BEHAVIOR", b),
        };
    }
    c.env("USER", "tester").args(args);
    let out = c.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `watch --once` on a wide frame.
fn watch_once(p: &Project) -> String {
    let out = run(p, &["watch", "--once", "--size", "160x24"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

/// The row of `watch --once` that shows `name`.
fn watch_row(frame: &str, name: &str) -> String {
    frame
        .lines()
        .find(|l| {
            l.trim_start_matches('│')
                .trim_start()
                .starts_with(&format!("{name} "))
        })
        .unwrap_or_else(|| panic!("no row {name} in\n{frame}"))
        .to_string()
}

/// What `status --json` says a task waits for, and the command it suggests.
fn stop_of(t: &Value) -> (Value, Value, Value, Value, Value) {
    (
        t["state"].clone(),
        t["waiting_for"].clone(),
        t["decision"].clone(),
        t["waits_for"].clone(),
        t["command"].clone(),
    )
}

/// How the text reports word a person's decision.
fn ask(decision: &str) -> &'static str {
    match decision {
        "approve_gate" => "approve the gate",
        "frozen_files" => "restore or accept the changed frozen files",
        "rerun_stale" => "rerun the stale artifacts",
        "raise_budget" => "raise `- **Budget per task**` in config.md",
        other => panic!("no wording for {other}"),
    }
}

/// The checks every report must agree on for one task stopped for a person.
fn agrees_on_a_person(p: &Project, task: &str, ran: &Out, code: i32, decision: &str) {
    assert_eq!(ran.code, code, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains(
            "Summary: 0 complete, 1 waiting for a person, 0 not started\n⚠️ **HUMAN INTERVENTION REQUIRED**: "
        ),
        "{}",
        ran.stdout
    );
    let doc = p.status_json();
    let t = task_of(&doc, task);
    assert_eq!(t["waiting_for"], "person", "{t:#}");
    assert_eq!(t["decision"], decision, "{t:#}");
    assert!(t["waits_for"].is_string(), "{t:#}");
    // A stopped task's block says `Human decision` and the reason; any other says what it
    // waits for on a line of its own.
    let text = p.status_text();
    let line = format!("- **Waiting for**: a person ({}", ask(decision));
    if t["state"] == "human_intervention" {
        assert!(text.contains("- **Next Step**: Human decision"), "{text}");
    } else {
        assert!(text.contains(&line), "{text}");
        assert!(ran.stdout.contains(&line), "{}", ran.stdout);
    }
    let frame = watch_once(p);
    assert!(frame.contains(" · 1 human · "), "{frame}");
    let name = task.rsplit('/').next().unwrap();
    let row = watch_row(&frame, name);
    assert!(!row.contains('✘'), "{row}");
    if t["reason"].is_null() {
        // No stop reason of its own to show: the note says what it waits for.
        assert!(row.contains("waits for a person"), "{row}\n{frame}");
    }
}

/// A gate, changed frozen files, stale artifacts and a budget each stop the task for a person:
/// the summary counts it so (not `1 in progress`), `status`, `status --json` and `watch
/// --once` say what it waits for, and the exit code is the stop's.
#[test]
fn every_task_stopped_for_a_person_is_counted_as_waiting_for_one() {
    // A gate.
    let p = project("- **Approve before**: design", "");
    let ran = run(&p, &["orchestrate", "add auth"], "");
    agrees_on_a_person(&p, TASK, &ran, 20, "approve_gate");
    // A gate wait is not drawn with the failure mark, and names the task once.
    assert!(
        ran.stderr
            .contains("⏸ tasks/add-auth waits for approval before design"),
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("tasks/add-auth: tasks/add-auth"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains('✘'), "{}", ran.stderr);

    // Stale artifacts.
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: No");
    assert_eq!(run(&p, &["orchestrate", "add auth"], "").code, 0);
    p.write(
        &format!("{TASK}/SPEC.md"),
        "# Spec\n\nNow with rate limits.\n",
    );
    let ran = run(&p, &["orchestrate", "--task", TASK], "");
    agrees_on_a_person(&p, TASK, &ran, 21, "rerun_stale");

    // A frozen acceptance file changed at implement.
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: Yes");
    let mut c = p.cmd();
    c.env("AUTOMATON_AGENT", freezing_agent())
        .env("AGENT_IMPLEMENT", "echo 'true' > tests/acceptance.sh")
        .env("AUTOMATON_KILL_GRACE", "300ms")
        .env_remove("AGENT_BEHAVIOR")
        .args(["orchestrate", "add auth"]);
    let out = c.output().unwrap();
    let ran = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    agrees_on_a_person(&p, TASK, &ran, 26, "frozen_files");

    // Budget per task.
    let p = budget_project("5k tokens");
    let ran = run_budget(&p, &["orchestrate", "add auth"]);
    agrees_on_a_person(&p, TASK, &ran, 27, "raise_budget");
}

/// The scripted agent whose test_design phase lists and writes an acceptance test.
fn freezing_agent() -> String {
    format!(
        "{} && if [ \"$AUTOMATON_PHASE\" = test_design ]; then \
         printf '\\n## Acceptance tests\\n- `tests/acceptance.sh` end to end\\n' >> \"$AUTOMATON_ARTIFACT\"; \
         mkdir -p tests; echo 'test \"$(cat out)\" = ok' > tests/acceptance.sh; fi",
        agent_command()
    )
}

/// A project whose agent replays a claude stream of 8,723 tokens a phase, under a budget.
fn budget_project(budget: &str) -> Project {
    let p = Project::new();
    write_budget(&p, budget);
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Agent**: claude\n- **Agent command**: REPLAY_FIXTURE={}/tests/fixtures/agents/claude-success.jsonl sh {}/tests/agents/replay.sh\n",
            env!("CARGO_MANIFEST_DIR"),
            env!("CARGO_MANIFEST_DIR")
        ),
    );
    p
}

fn write_budget(p: &Project, budget: &str) {
    p.write(
        ".automaton/config.md",
        format!(
            "## Phases\n- **Design**: No\n- **Test design**: No\n\n## Limits\n- **Budget per task**: {budget}\n"
        ),
    );
}

fn run_budget(p: &Project, args: &[&str]) -> Out {
    let out = p
        .cmd()
        .env_remove("AUTOMATON_AGENT")
        .env_remove("AUTOMATON_RETRIES")
        .env("AUTOMATON_KILL_GRACE", "300ms")
        .args(args)
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Follow what `status --json` suggests for `task` until it is complete: run its command (a
/// person's action where it asks for one: `person` does it, e.g. raising a budget), and check
/// that each command changed what the task waits for, or its command: never the same stop
/// again. `behavior` gives the scripted agent's behaviour for the n-th command run.
fn walk(
    p: &Project,
    task: &str,
    behavior: impl Fn(usize) -> &'static str,
    person: impl Fn(&str),
    runner: impl Fn(&Project, &[&str], &str) -> Out,
) -> Vec<String> {
    let mut ran = Vec::new();
    for n in 0..12 {
        let t = p.task_json(task);
        if t["state"] == "complete" && t["waiting_for"] == "nothing" {
            return ran;
        }
        let before = stop_of(&t);
        if let Some(d) = t["decision"].as_str() {
            person(d);
        }
        let command = t["command"]
            .as_str()
            .unwrap_or_else(|| panic!("no command for {t:#}"));
        let words: Vec<&str> = command
            .strip_prefix("automaton ")
            .unwrap_or_else(|| panic!("not an automaton command: {command}"))
            .split(' ')
            .collect();
        let out = runner(p, &words, behavior(n));
        ran.push(format!("{command} -> {}", out.code));
        let after = stop_of(&p.task_json(task));
        assert_ne!(
            before, after,
            "`{command}` (exit {}) left {task} where it was, after {ran:#?}\n{}\n{}",
            out.code, out.stdout, out.stderr
        );
    }
    panic!("{task} never completed: {ran:#?}");
}

fn plain(p: &Project, args: &[&str], behavior: &str) -> Out {
    run(p, args, behavior)
}

const TWO: &str = "# Decomposition\n\n| Sub-task | Wave | Depends on | Files | Scope |\n|---|---|---|---|---|\n| a | 1 | - | a.rs | A |\n| b | 1 | - | b.rs | B |\n";

/// `orchestrate` of a parent that decomposes into `a` and `b` (TWO).
fn run_plan(p: &Project, args: &[&str], behavior: &str) -> Out {
    let mut c = p.cmd();
    if args.first() == Some(&"orchestrate") {
        c.env("AUTOMATON_AGENT", agent_command())
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("AUTOMATON_CONTRACT_GRACE", "2s")
            .env("AGENT_DECOMPOSITION", TWO)
            .env("AGENT_BEHAVIOR", format!("p:research=decompose {behavior}"));
    }
    c.env("USER", "tester").args(args);
    let out = c.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every stop kind, walked: the command `status --json` suggests (or the person's action it
/// names) always changes what the task waits for, until the task is complete.
#[test]
fn the_suggested_command_always_moves_the_task_on() {
    // Two gates.
    let p = project("- **Approve before**: design, implement", "");
    assert_eq!(run(&p, &["orchestrate", "add auth"], "").code, 20);
    let steps = walk(&p, TASK, |_| "", |_| {}, plain);
    assert_eq!(
        steps,
        [
            "automaton approve tasks/add-auth -> 0",
            "automaton orchestrate --task tasks/add-auth -> 20",
            "automaton approve tasks/add-auth -> 0",
            "automaton orchestrate --task tasks/add-auth -> 0",
        ]
    );

    // Sub-tasks waiting at their gates: the parent suggests the way out, not itself.
    let p = project(
        "- **Approve before**: implement",
        "## Phases\n- **Design**: No\n- **Test design**: No",
    );
    assert_eq!(run_plan(&p, &["orchestrate", "p"], "").code, 20);
    let parent = p.task_json("tasks/p");
    assert_eq!(parent["waiting_for"], "person", "{parent:#}");
    assert_eq!(parent["decision"], "approve_gate", "{parent:#}");
    assert_eq!(parent["command"], "automaton approve tasks/p --all");
    let steps = walk(&p, "tasks/p", |_| "", |_| {}, run_plan);
    assert_eq!(
        steps,
        [
            "automaton approve tasks/p --all -> 0",
            "automaton orchestrate --task tasks/p -> 0",
        ]
    );

    // Stale artifacts.
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: No");
    assert_eq!(run(&p, &["orchestrate", "add auth"], "").code, 0);
    p.write(
        &format!("{TASK}/SPEC.md"),
        "# Spec\n\nNow with rate limits.\n",
    );
    assert_eq!(run(&p, &["orchestrate", "--task", TASK], "").code, 21);
    let steps = walk(&p, TASK, |_| "", |_| {}, plain);
    assert_eq!(
        steps,
        [
            "automaton rerun tasks/add-auth --from implement -> 0",
            "automaton orchestrate --task tasks/add-auth -> 0",
        ]
    );

    // A frozen acceptance file changed at implement: approving accepts it.
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: Yes");
    let frozen = |p: &Project, args: &[&str], _: &str| {
        let out = p
            .cmd()
            .env("AUTOMATON_AGENT", freezing_agent())
            .env("AGENT_IMPLEMENT", "echo 'true' > tests/acceptance.sh")
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .env("USER", "tester")
            .env_remove("AGENT_BEHAVIOR")
            .args(args)
            .output()
            .unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    assert_eq!(frozen(&p, &["orchestrate", "add auth"], "").code, 26);
    let steps = walk(&p, TASK, |_| "", |_| {}, frozen);
    assert_eq!(
        steps,
        [
            "automaton approve tasks/add-auth -> 0",
            "automaton orchestrate --task tasks/add-auth -> 0",
        ]
    );

    // A budget: the person raises it (the documented action), then the command goes on.
    let p = budget_project("5k tokens");
    assert_eq!(run_budget(&p, &["orchestrate", "add auth"]).code, 27);
    let steps = walk(
        &p,
        TASK,
        |_| "",
        |decision| {
            if decision == "raise_budget" {
                write_budget(&p, "2M tokens");
            }
        },
        |p, args, _| run_budget(p, args),
    );
    assert_eq!(steps, ["automaton orchestrate --task tasks/add-auth -> 0"]);

    // A FAIL verdict: fix tasks (`--manual`), the fix task, then the referee again.
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: No");
    assert_eq!(
        run(&p, &["orchestrate", "add auth"], "referee=fail").code,
        10
    );
    let steps = walk(&p, TASK, |_| "", |_| {}, plain);
    assert_eq!(steps.len(), 3, "{steps:#?}");
    assert!(
        steps[0].starts_with("automaton orchestrate --manual -> "),
        "{steps:#?}"
    );
    assert!(steps[2].ends_with("--referee-again -> 0"), "{steps:#?}");

    // A sub-task's FAIL verdict: the parent suggests the sub-task's way out (not itself,
    // which would print the same report and exit 18 again).
    let p = project("", "## Phases\n- **Design**: No\n- **Test design**: No");
    assert_eq!(
        run_plan(&p, &["orchestrate", "p"], "a:referee=fail").code,
        18
    );
    let parent = p.task_json("tasks/p");
    assert_eq!(parent["waiting_for"], "person", "{parent:#}");
    assert_eq!(parent["decision"], "decide_verdict", "{parent:#}");
    assert_eq!(parent["command"], "automaton orchestrate --manual");
    let steps = walk(&p, "tasks/p", |_| "", |_| {}, run_plan);
    assert!(
        steps[0].starts_with("automaton orchestrate --manual -> "),
        "{steps:#?}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s.contains("--task tasks/p/subtasks/a --referee-again")),
        "{steps:#?}"
    );
}

/// `--step` that reaches a gate suggests the approval, not another `--step` (which would stop
/// at the gate), and prints `ORCHESTRATION_COMPLETE` only once the task is complete.
#[test]
fn a_step_that_reaches_a_gate_suggests_the_approval_and_is_not_complete() {
    let p = project("- **Approve before**: design", "");
    let ran = run(&p, &["orchestrate", "--step", "add auth"], "");
    assert_eq!(ran.code, 25, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains(
            "One phase of tasks/add-auth ran; tasks/add-auth now waits for a person (approve the gate): approval before design; the way on:\n  automaton approve tasks/add-auth\n"
        ),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("--step\n"), "{}", ran.stdout);
    assert!(
        !ran.stdout.contains("ORCHESTRATION_COMPLETE"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("Summary: 0 complete, 1 waiting for a person, 0 not started\n"),
        "{}",
        ran.stdout
    );

    // Without a gate: the next step, and still not complete.
    let p = project("", "");
    let ran = run(&p, &["orchestrate", "--step", "add auth"], "");
    assert_eq!(ran.code, 25);
    assert!(
        ran.stdout.ends_with(
            "One phase of tasks/add-auth ran; the next step runs with\n  automaton orchestrate --task tasks/add-auth --step\n"
        ),
        "{}",
        ran.stdout
    );
    // Step by step to the end: only the step that completes the task says so.
    for n in 0.. {
        assert!(n < 12, "never complete");
        let ran = run(&p, &["orchestrate", "--step", "--task", TASK], "");
        if ran.code == 0 {
            assert!(
                ran.stdout.ends_with(
                    "Summary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n"
                ),
                "{}",
                ran.stdout
            );
            break;
        }
        assert_eq!(ran.code, 25, "{}\n{}", ran.stdout, ran.stderr);
        assert!(
            !ran.stdout.contains("ORCHESTRATION_COMPLETE"),
            "{}",
            ran.stdout
        );
    }
}

/// `orchestrate --manual --json`, and `--json` with `Autopilot: Disabled`, print JSON.
#[test]
fn manual_mode_prints_json_when_asked() {
    let p = project("", "");
    assert_eq!(
        run(&p, &["orchestrate", "add auth"], "referee=fail").code,
        10
    );
    for (args, agent) in [
        (&["orchestrate", "--manual", "--json"][..], ""),
        (&["orchestrate", "--json"][..], "- **Autopilot**: Disabled"),
    ] {
        if !agent.is_empty() {
            p.write(
                ".automaton/.agent.md",
                format!("# Agent\n\n## Agent\n{agent}\n"),
            );
        }
        let ran = run(&p, args, "");
        assert_eq!(ran.code, 19, "{}\n{}", ran.stdout, ran.stderr);
        let lines: Vec<&str> = ran.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{}", ran.stdout);
        let doc: Value =
            serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {}", ran.stdout));
        assert_eq!(doc["event"], "manual");
        assert_eq!(doc["exit_code"], 19);
        assert_eq!(doc["summary"]["waiting"], 1, "{doc:#}");
        let t = task_of(&doc, TASK);
        assert_eq!(t["waiting_for"], "person");
        assert_eq!(t["decision"], "decide_verdict");
        assert!(!ran.stdout.contains("**Task:"), "{}", ran.stdout);
    }
}

/// Before `init`, `status` suggests `automaton init`, not `orchestrate "…"` (which refuses
/// there with exit 66).
#[test]
fn before_init_status_suggests_init() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_automaton");
    let status = |d: &std::path::Path| {
        let out = std::process::Command::new(bin)
            .arg("status")
            .current_dir(d)
            .env("HOME", home.path())
            .env_remove("AUTOMATON_AGENT")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = status(dir.path());
    assert!(
        text.ends_with("Set one up with:\n  automaton init\n"),
        "{text}"
    );
    assert!(!text.contains("describe the task"), "{text}");
    // Its own way on: `init` works there, and then `orchestrate "…"` is the next step.
    let init = std::process::Command::new(bin)
        .arg("init")
        .current_dir(dir.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let text = status(dir.path());
    assert!(text.contains("orchestrate \"describe the task\""), "{text}");
}
