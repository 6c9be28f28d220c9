//! People in the loop, through the real binary and the scripted agent (tests/agents/agent.sh):
//! approval gates (`Approve before`), `approve` (and its lapse when an approved artifact
//! changes), `reject` with a reason that reaches the next prompt, gates on sub-tasks, the
//! notify command, stale artifacts with `rerun --from`, and a torn `.state.approvals`.

use crate::harness::Project;
use predicates::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `automaton`'s documented codes for these stops (README, exit codes).
const AWAITING_APPROVAL: i32 = 20;
const STALE: i32 = 21;

const TASK: &str = "tasks/add-auth";

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A project whose `.agent.md` holds `lines` under `## Agent`.
fn project(lines: &str) -> Project {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        format!("# Agent\n\n## Agent\n{lines}\n"),
    );
    p
}

fn with_log(p: &Project, mut c: assert_cmd::Command) -> assert_cmd::Command {
    c.env("AGENT_LOG", p.join("agent.log"))
        .env("USER", "tester");
    c
}

fn task<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == path)
        .unwrap_or_else(|| panic!("no task {path} in {doc:#}"))
}

fn phases(p: &Project) -> Vec<String> {
    p.agent_runs().into_iter().map(|(_, ph)| ph).collect()
}

fn records(p: &Project, rel: &str) -> Vec<Value> {
    p.read(&format!("{rel}/.state.approvals"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn a_gate_stops_before_design_until_approved_then_the_task_completes() {
    let p = project("- **Approve before**: design, implement");
    p.cmd()
        .arg("config")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Approve before"))
        .stdout(predicate::str::contains("design, implement"));

    with_log(&p, p.orchestrate_cmd())
        .arg("add auth")
        .assert()
        .code(AWAITING_APPROVAL)
        .stdout(predicate::str::contains(
            "tasks/add-auth waits for approval before design",
        ))
        .stdout(predicate::str::contains("automaton approve tasks/add-auth"));
    assert_eq!(phases(&p), ["research"]);
    // Waiting is not a stop a retry clears: no `.stop`, and `.state` names the gated phase.
    assert_eq!(p.read(&format!("{TASK}/.state")), "design\n");
    assert!(!p.join(&format!("{TASK}/.stop")).exists());

    let doc = p.status_json();
    let t = task(&doc, TASK);
    assert_eq!(t["awaiting_approval"], "design");
    assert_eq!(t["next_step"], "approve");
    assert_eq!(t["command"], "automaton approve tasks/add-auth");
    assert_eq!(t["approval_covers"], serde_json::json!(["SPEC.md"]));
    p.cmd()
        .arg("status")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "- **Awaiting approval**: design (covers SPEC.md)",
        ))
        .stdout(predicate::str::contains(
            "- **Command**:\n  automaton approve tasks/add-auth",
        ));

    // Running again without an approval stops at the same place and runs nothing.
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(AWAITING_APPROVAL);
    assert_eq!(phases(&p), ["research"]);

    p.cmd()
        .args(["approve", TASK, "--note", "spec reviewed"])
        .env("USER", "ann")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Approved design of tasks/add-auth by ann",
        ));
    let recs = records(&p, TASK);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(
        (&r["v"], &r["kind"], &r["gate"], &r["who"], &r["note"]),
        (
            &Value::from(1),
            &Value::from("approve"),
            &Value::from("design"),
            &Value::from("ann"),
            &Value::from("spec reviewed")
        )
    );
    let spec = std::fs::read(p.join(&format!("{TASK}/SPEC.md"))).unwrap();
    assert_eq!(
        r["artifacts"],
        serde_json::json!({"SPEC.md": sha256(&spec)})
    );
    assert!(r["when"].as_str().unwrap().ends_with('Z'), "{r}");
    assert_eq!(
        task(&p.status_json(), TASK)["awaiting_approval"],
        Value::Null
    );

    // design runs, test_design runs, then implement is gated too.
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(AWAITING_APPROVAL)
        .stdout(predicate::str::contains(
            "waits for approval before implement",
        ));
    assert_eq!(phases(&p), ["research", "design", "test_design"]);
    let doc = p.status_json();
    assert_eq!(
        task(&doc, TASK)["approval_covers"],
        serde_json::json!(["SPEC.md", "DESIGN.md", "TEST_PLAN.md"])
    );

    p.cmd().args(["approve", TASK]).assert().code(0);
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with("ORCHESTRATION_COMPLETE\n"));
    assert_eq!(p.read(&format!("{TASK}/.state")), "complete\n");
    assert_eq!(records(&p, TASK).len(), 2);
}

#[test]
fn an_approval_lapses_when_an_approved_artifact_changes() {
    let p = project("- **Approve before**: design");
    with_log(&p, p.orchestrate_cmd())
        .arg("add auth")
        .assert()
        .code(AWAITING_APPROVAL);
    p.cmd()
        .args(["approve", TASK])
        .env("USER", "tester")
        .assert()
        .code(0);
    // Someone edits the approved SPEC.md before the run goes on.
    p.write(&format!("{TASK}/SPEC.md"), "# Spec\n\nA different spec.\n");
    let doc = p.status_json();
    let t = task(&doc, TASK);
    assert_eq!(t["awaiting_approval"], "design");
    let why = t["approval_lapsed"].as_str().unwrap();
    assert!(
        why.starts_with("SPEC.md changed after design was approved (by tester at "),
        "{why}"
    );
    p.cmd()
        .arg("status")
        .assert()
        .stdout(predicate::str::contains(
            "- **Approval lapsed**: SPEC.md changed after design was approved",
        ));
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(AWAITING_APPROVAL)
        .stdout(predicate::str::contains(
            "the approval lapsed: SPEC.md changed after design was approved",
        ));
    assert_eq!(phases(&p), ["research"]);

    // Approving the new content opens the gate for it.
    p.cmd().args(["approve", TASK]).assert().code(0);
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(0);
    assert_eq!(p.read(&format!("{TASK}/.state")), "complete\n");
    assert_eq!(
        p.read(&format!("{TASK}/SPEC.md")),
        "# Spec\n\nA different spec.\n"
    );
}

#[test]
fn a_rejection_keeps_the_artifact_and_its_reason_reaches_the_next_prompt() {
    let p = project("- **Approve before**: design");
    with_log(&p, p.orchestrate_cmd())
        .arg("add auth")
        .assert()
        .code(AWAITING_APPROVAL);
    let first = p.read(&format!("{TASK}/SPEC.md"));
    p.cmd()
        .args(["reject", TASK, "--reason", "the spec forgets rate limits"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "kept at tasks/add-auth/logs/rejected/SPEC-1.md",
        ));
    assert_eq!(p.read(&format!("{TASK}/logs/rejected/SPEC-1.md")), first);
    assert!(!p.join(&format!("{TASK}/SPEC.md")).exists());
    assert_eq!(p.read(&format!("{TASK}/.state")), "new\n");
    let recs = records(&p, TASK);
    let r = &recs[0];
    assert_eq!(r["kind"], "reject");
    assert_eq!(r["gate"], "design");
    assert_eq!(r["phase"], "research");
    assert_eq!(r["reason"], "the spec forgets rate limits");
    assert_eq!(r["rejected"], "logs/rejected/SPEC-1.md");
    assert_eq!(r["artifacts"]["SPEC.md"], sha256(first.as_bytes()));

    // research runs again, with the reason and where the rejected spec is kept.
    with_log(&p, p.orchestrate_cmd())
        .env("AGENT_PROMPT_COPY", p.join("prompt.md"))
        .args(["--task", TASK])
        .assert()
        .code(AWAITING_APPROVAL);
    assert_eq!(phases(&p), ["research", "research"]);
    let prompt = p.read("prompt.md");
    assert!(prompt.contains("the spec forgets rate limits"), "{prompt}");
    let kept = p.join(&format!("{TASK}/logs/rejected/SPEC-1.md"));
    assert!(prompt.contains(&kept.display().to_string()), "{prompt}");

    // A second rejection never overwrites the first rejected copy.
    p.cmd()
        .args(["reject", TASK, "--reason", "still no rate limits"])
        .assert()
        .code(0);
    assert_eq!(p.read(&format!("{TASK}/logs/rejected/SPEC-1.md")), first);
    assert!(p.join(&format!("{TASK}/logs/rejected/SPEC-2.md")).is_file());
    with_log(&p, p.orchestrate_cmd())
        .env("AGENT_PROMPT_COPY", p.join("prompt.md"))
        .args(["--task", TASK])
        .assert()
        .code(AWAITING_APPROVAL);
    let prompt = p.read("prompt.md");
    assert!(prompt.contains("still no rate limits"), "{prompt}");
    assert!(!prompt.contains("forgets rate limits"), "{prompt}");

    // Once approved, design's prompt carries no rejection.
    p.cmd().args(["approve", TASK]).assert().code(0);
    with_log(&p, p.orchestrate_cmd())
        .env("AGENT_PROMPT_COPY", p.join("prompt.md"))
        .args(["--task", TASK, "--max-iterations", "1"])
        .assert()
        .code(15);
    assert!(!p.read("prompt.md").contains("## Rejected"));
}

/// A DECOMPOSITION.md with two independent sub-tasks.
const TWO: &str = "# Decomposition\n\n| Sub-task | Wave | Depends on | Files | Scope |\n|---|---|---|---|---|\n| a | 1 | - | a.rs | A |\n| b | 1 | - | b.rs | B |\n";

#[test]
fn a_sub_task_waits_at_its_gate_while_its_sibling_finishes() {
    let p = project("- **Approve before**: implement");
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    let run = |args: &[&str]| {
        let mut c = with_log(&p, p.orchestrate_cmd());
        c.env("AGENT_DECOMPOSITION", TWO)
            .env("AGENT_BEHAVIOR", "p:research=decompose")
            .args(args);
        c
    };
    run(&["p"]).assert().code(AWAITING_APPROVAL);
    let doc = p.status_json();
    for s in ["tasks/p/subtasks/a", "tasks/p/subtasks/b"] {
        assert_eq!(task(&doc, s)["awaiting_approval"], "implement", "{s}");
    }
    assert_eq!(task(&doc, "tasks/p")["awaiting_approval"], Value::Null);

    // b is approved; a is not: b finishes while a waits.
    p.cmd()
        .args(["approve", "tasks/p/subtasks/b"])
        .assert()
        .code(0);
    run(&["--task", "tasks/p"])
        .assert()
        .code(AWAITING_APPROVAL)
        .stdout(predicate::str::contains(
            "tasks/p/subtasks/a waits for approval before implement",
        ));
    assert_eq!(p.state_of("tasks/p/subtasks/b"), "complete");
    assert_eq!(p.state_of("tasks/p/subtasks/a"), "implement");
    let a_runs: Vec<String> = p
        .agent_runs()
        .into_iter()
        .filter(|(t, _)| t == "tasks/p/subtasks/a")
        .map(|(_, ph)| ph)
        .collect();
    assert_eq!(a_runs, ["research"]);

    // `approve` on the parent names what waits below it; --all approves it.
    p.cmd()
        .args(["approve", "tasks/p"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("tasks/p/subtasks/a"))
        .stderr(predicate::str::contains("--all"));
    p.cmd()
        .args(["approve", "tasks/p", "--all"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Approved implement of tasks/p/subtasks/a",
        ));
    run(&["--task", "tasks/p"]).assert().code(0);
    assert_eq!(p.state_of("tasks/p"), "complete");
}

/// A notify command that appends its stdin to events.jsonl and its variables to env.log.
fn notify_project() -> Project {
    let p = project("- **Notify command**: sh notify.sh");
    p.write(
        "notify.sh",
        "cat >> events.jsonl\necho \"$AUTOMATON_EVENT $AUTOMATON_TASK\" >> env.log\n",
    );
    p
}

fn events(p: &Project) -> Vec<Value> {
    p.read("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn the_notify_command_gets_the_events_of_a_completed_and_a_failed_run() {
    let p = notify_project();
    p.orchestrate_cmd().arg("good one").assert().code(0);
    let ev = events(&p);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["event"], "complete");
    assert_eq!(ev[0]["task"], "tasks/good-one");
    assert_eq!(ev[0]["state"], "complete");
    assert_eq!(ev[0]["exit_code"], 0);
    assert_eq!(ev[0]["command"], Value::Null);

    p.orchestrate_cmd()
        .env("AGENT_BEHAVIOR", "referee=fail")
        .arg("bad one")
        .assert()
        .code(10);
    let ev = events(&p);
    assert_eq!(ev.len(), 2);
    let e = &ev[1];
    assert_eq!(e["event"], "human_intervention");
    assert_eq!(e["task"], "tasks/bad-one");
    assert_eq!(e["state"], "human_intervention");
    assert_eq!(e["kind"], "verdict_failed");
    assert_eq!(e["exit_code"], 10);
    assert!(e["reason"].as_str().unwrap().contains("FAIL"), "{e}");
    assert!(
        e["command"].as_str().unwrap().starts_with("automaton "),
        "{e}"
    );
    assert_eq!(
        p.read("env.log"),
        "complete tasks/good-one\nhuman_intervention tasks/bad-one\n"
    );

    // A gate notifies too, with the command that approves.
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Notify command**: sh notify.sh\n- **Approve before**: design\n",
    );
    p.orchestrate_cmd()
        .arg("gated one")
        .assert()
        .code(AWAITING_APPROVAL);
    let e = &events(&p)[2];
    assert_eq!(e["event"], "awaiting_approval");
    assert_eq!(e["state"], "design");
    assert_eq!(e["command"], "automaton approve tasks/gated-one");
}

#[test]
fn a_notify_command_that_hangs_or_fails_does_not_change_the_outcome() {
    let p = project("- **Notify command**: sleep 30");
    p.orchestrate_cmd()
        .env("AUTOMATON_NOTIFY_TIMEOUT", "1s")
        .arg("hangs")
        .assert()
        .code(0)
        .stdout(predicate::str::ends_with("ORCHESTRATION_COMPLETE\n"))
        .stderr(predicate::str::contains(
            "notify command `sleep 30` timed out after 1s",
        ));

    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Notify command**: exit 7\n",
    );
    p.orchestrate_cmd()
        .arg("fails")
        .assert()
        .code(0)
        .stderr(predicate::str::contains("notify command `exit 7` failed"));
    p.orchestrate_cmd()
        .env("AGENT_BEHAVIOR", "referee=fail")
        .arg("fails too")
        .assert()
        .code(10)
        .stderr(predicate::str::contains("notify command `exit 7` failed"));
}

const LATER: [&str; 7] = [
    "DESIGN.md",
    "TEST_PLAN.md",
    "IMPLEMENTATION.md",
    "BUG_REPORT.md",
    "ADVERSARIAL_BUG_REPORT.md",
    "DOC_REVIEW.md",
    "VERDICT.md",
];

#[test]
fn an_edited_spec_makes_later_artifacts_stale_until_rerun_from_design() {
    let p = Project::new();
    with_log(&p, p.orchestrate_cmd())
        .arg("add auth")
        .assert()
        .code(0);
    assert_eq!(task(&p.status_json(), TASK)["stale"], serde_json::json!([]));
    let old: Vec<String> = LATER
        .iter()
        .map(|a| p.read(&format!("{TASK}/{a}")))
        .collect();

    p.write(
        &format!("{TASK}/SPEC.md"),
        "# Spec\n\nNow with rate limits.\n",
    );
    let doc = p.status_json();
    let t = task(&doc, TASK);
    assert_eq!(t["stale"], serde_json::json!(LATER));
    assert_eq!(t["next_step"], "rerun");
    assert_eq!(t["command"], "automaton rerun tasks/add-auth --from design");
    assert!(
        t["stale_reason"]
            .as_str()
            .unwrap()
            .contains("(SPEC.md changed after DESIGN.md was written)"),
        "{t}"
    );
    p.cmd()
        .arg("status")
        .assert()
        .stdout(predicate::str::contains(
            "- **Stale**: DESIGN.md, TEST_PLAN.md, IMPLEMENTATION.md",
        ));

    // Autopilot does not go on from it silently.
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(STALE)
        .stdout(predicate::str::contains(
            "run `automaton rerun tasks/add-auth --from design`",
        ));
    assert_eq!(phases(&p).len(), 8);

    p.cmd()
        .args(["rerun", TASK, "--from", "design"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("is back at `design`"));
    assert_eq!(p.read(&format!("{TASK}/.state")), "design\n");
    for (a, content) in LATER.iter().zip(&old) {
        assert_eq!(&p.read(&format!("{TASK}/logs/superseded/1/{a}")), content);
        assert!(!p.join(&format!("{TASK}/{a}")).exists(), "{a}");
    }

    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(0);
    assert_eq!(
        phases(&p)[8..],
        [
            "design",
            "test_design",
            "implement",
            "bug_find",
            "adversarial_bug_find",
            "doc_review",
            "referee"
        ]
    );
    let t = task(&p.status_json(), TASK).clone();
    assert_eq!(t["state"], "complete");
    assert_eq!(t["stale"], serde_json::json!([]));
    // The superseded artifacts are kept.
    for (a, content) in LATER.iter().zip(&old) {
        assert_eq!(&p.read(&format!("{TASK}/logs/superseded/1/{a}")), content);
    }
}

#[test]
fn a_torn_last_line_in_approvals_is_reported_and_earlier_lines_kept() {
    let p = project("- **Approve before**: design");
    with_log(&p, p.orchestrate_cmd())
        .arg("add auth")
        .assert()
        .code(AWAITING_APPROVAL);
    p.cmd().args(["approve", TASK]).assert().code(0);
    // A kill -9 in the middle of the next append leaves half a line.
    let path = p.join(&format!("{TASK}/.state.approvals"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"v\":1,\"kind\":\"reject\",\"gate\":\"des");
    std::fs::write(&path, text).unwrap();

    p.cmd()
        .arg("status")
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "tasks/add-auth/.state.approvals:2: torn last line",
        ));
    let doc = p
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .stderr_contains("tasks/add-auth/.state.approvals:2: torn last line")
        .run()
        .json();
    assert_eq!(task(&doc, TASK)["awaiting_approval"], Value::Null);
    with_log(&p, p.orchestrate_cmd())
        .args(["--task", TASK])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("torn last line"));
    assert_eq!(p.read(&format!("{TASK}/.state")), "complete\n");
}
