//! Bounded rework (`- **Rework**: N` in config.md `## Limits`): a FAIL verdict or a failing
//! verify command sends the task back to implement with the findings, the artifacts from
//! implement on set aside in `logs/rework/<n>/`; the rounds are bounded, and the same failure
//! twice stops early. The scripted agent's `fail_once` referee passes a rework round.

use crate::harness::Project;
use crate::isolation::git;

const TASK: &str = "tasks/a";

fn config(rework: u32, extra: &str) -> String {
    format!("# Config\n\n## Limits\n- **Rework**: {rework}\n- **Max iterations**: 40\n{extra}")
}

fn project(rework: u32, extra: &str) -> Project {
    let p = Project::new();
    p.write(".automaton/config.md", config(rework, extra))
        .write(&format!("{TASK}/SPEC.md"), "# Spec\nadd two numbers\n");
    p
}

fn read_if(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.join(rel)).unwrap_or_default()
}

#[test]
fn a_fail_verdict_is_reworked_once_and_then_passes() {
    let p = project(3, "");
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_once")
        .stdout_any()
        .stderr_contains(
            "↻ tasks/a: rework round 1 of 3: verdict_failed: referee verdict is FAIL; implement runs again with the findings\n",
        )
        .run();
    assert_eq!(p.state_of(TASK), "complete");
    // The first round's artifacts are kept, none deleted.
    let round = "tasks/a/logs/rework/1";
    assert!(read_if(&p, &format!("{round}/VERDICT.md")).contains("Verdict: FAIL"));
    for kept in [
        "IMPLEMENTATION.md",
        "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md",
        "DOC_REVIEW.md",
    ] {
        assert!(p.join(&format!("{round}/{kept}")).is_file(), "{kept} kept");
    }
    let findings = read_if(&p, &format!("{round}/FINDINGS.md"));
    assert!(
        findings.contains("- **Cause**: verdict_failed: referee verdict is FAIL"),
        "{findings}"
    );
    // The second implement is told the verdict's reasons; the first was not.
    let second = read_if(&p, "tasks/a/logs/implement-2.prompt.md");
    assert!(
        second.contains("## Rework round 1 of 3: fix the findings"),
        "{second}"
    );
    assert!(
        second.contains("- broken-thing: it does not work"),
        "{second}"
    );
    assert!(!read_if(&p, "tasks/a/logs/implement-1.prompt.md").contains("Rework round"));
    // The review phases of the round know they review a rework.
    assert!(
        read_if(&p, "tasks/a/logs/referee-2.prompt.md")
            .contains("## Rework round 1: review what this round changed")
    );
    assert!(read_if(&p, "tasks/a/VERDICT.md").contains("Verdict: PASS"));
    // The round is in status, status --json and the journal.
    assert_eq!(p.task_json(TASK)["rework_round"], 1);
    assert!(p.status_text().contains(
        "- **Rework**: round 1 (what each round set aside, and why, is in tasks/a/logs/rework/)"
    ));
    let journal = read_if(&p, "tasks/a/logs/journal.jsonl");
    let in_round: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains(r#""rework_round":1"#))
        .collect();
    assert_eq!(
        in_round.len(),
        5,
        "implement and the four review phases: {journal}"
    );
}

#[test]
fn without_the_setting_a_fail_verdict_stops_as_before() {
    let p = project(0, "");
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_once")
        .status(10)
        .stdout_any()
        .stderr_any()
        .run();
    assert!(!p.join("tasks/a/logs/rework").exists());
    assert!(p.task_json(TASK).get("rework_round").is_none());
}

#[test]
fn a_failing_verify_is_reworked_with_the_checks_output_in_the_prompt() {
    let p = project(
        2,
        "\n## Agent\n- **Verify command**: test -f fixed || { echo 'fixed is missing: 3 tests failed'; exit 1; }\n",
    );
    p.orchestrate()
        .args(["--task", TASK])
        .env(
            "AGENT_IMPLEMENT",
            r#"case $prompt in *"Rework round"*) touch fixed ;; esac"#,
        )
        .stdout_any()
        .stderr_contains("rework round 1 of 2: verify_failed: verify command `test -f fixed")
        .run();
    assert_eq!(p.state_of(TASK), "complete");
    let second = read_if(&p, "tasks/a/logs/implement-2.prompt.md");
    assert!(second.contains("The verify command failed."), "{second}");
    assert!(
        second.contains("fixed is missing: 3 tests failed"),
        "{second}"
    );
    assert!(second.contains("- Command: `test -f fixed"), "{second}");
    assert!(second.contains("exited with status 1"), "{second}");
    // Verify runs after implement: the round set the first IMPLEMENTATION.md aside.
    assert!(p.join("tasks/a/logs/rework/1/IMPLEMENTATION.md").is_file());
}

#[test]
fn the_same_failure_twice_in_a_row_stops_early_naming_the_rounds() {
    let p = project(3, "");
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail")
        .status(10)
        .stdout_contains(
            "referee verdict is FAIL; the same failure came back after rework round 1, so another round would repeat it (round 1: verdict_failed: referee verdict is FAIL)",
        )
        .stderr_any()
        .run();
    assert!(p.join("tasks/a/logs/rework/1").is_dir());
    assert!(!p.join("tasks/a/logs/rework/2").exists());
    assert_eq!(p.state_of(TASK), "human_intervention");
}

/// A verify command that fails the same way after a round is the same failure, though each
/// run of it writes a log of its own (`logs/verify-1.log`, `logs/verify-2.log`): the rounds
/// stop there instead of spending every one on it.
#[test]
fn a_verify_failing_the_same_way_again_stops_early() {
    let p = project(
        3,
        "\n## Agent\n- **Verify command**: echo 'FAILED test_sum: expected 3 got 2'; exit 1\n",
    );
    p.orchestrate()
        .args(["--task", TASK])
        .status(17)
        .stdout_contains(
            "the same failure came back after rework round 1, so another round would repeat it",
        )
        .stderr_contains("rework round 1 of 3: verify_failed: verify command")
        .run();
    assert!(p.join("tasks/a/logs/rework/1").is_dir());
    assert!(!p.join("tasks/a/logs/rework/2").exists());
    assert_eq!(p.state_of(TASK), "human_intervention");
}

#[test]
fn spent_rounds_stop_with_each_rounds_cause() {
    let p = project(2, "");
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_new")
        .status(10)
        .stdout_contains(
            "referee verdict is FAIL; the 2 rework rounds allowed (`- **Rework**: 2`) are spent (round 1: verdict_failed: referee verdict is FAIL; round 2: verdict_failed: referee verdict is FAIL)",
        )
        // With its rounds spent, the stop still names the verdict's file and the way out,
        // as a FAIL without rework does.
        .stdout_contains(
            "⚠️ **HUMAN INTERVENTION REQUIRED**: tasks/a: referee verdict is FAIL; the 2 rework \
             rounds allowed",
        )
        .stdout_contains(
            "round 2: verdict_failed: referee verdict is FAIL) (tasks/a/VERDICT.md); `automaton \
             orchestrate --manual` creates its fix tasks",
        )
        .stderr_any()
        .run();
    assert!(read_if(&p, "tasks/a/logs/rework/1/FINDINGS.md").contains("bug-1"));
    assert!(read_if(&p, "tasks/a/logs/rework/2/FINDINGS.md").contains("bug-2"));
    assert!(read_if(&p, "tasks/a/VERDICT.md").contains("bug-3"));
    // A later run with the rounds still spent stops the same way, without running a phase.
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_new")
        .agent_log()
        .status(10)
        .stdout_contains("are spent")
        .stderr_any()
        .run();
    assert!(p.records().is_empty());
    // --dry-run says the same, from the same planner.
    p.orchestrate()
        .args(["--dry-run", "--task", TASK])
        .stdout_contains("are spent (round 1: verdict_failed")
        .stderr_any()
        .status_any()
        .run();
}

#[test]
fn a_rework_round_that_edits_a_frozen_acceptance_file_stops_with_26() {
    let p = project(3, "");
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_once")
        .env(
            "AGENT_IMPLEMENT",
            r#"case $prompt in *"Rework round"*) echo "- weaker" >> "$AUTOMATON_TASK_DIR/TEST_PLAN.md" ;; esac"#,
        )
        .status(26)
        .stdout_contains("TEST_PLAN.md")
        .stderr_any()
        .run();
    assert!(p.join("tasks/a/logs/rework/1").is_dir());
}

#[test]
fn a_round_cut_short_by_a_kill_is_finished_before_implement_runs_again() {
    // What a run killed between two moves of a round leaves: the findings and VERDICT.md
    // already in `logs/rework/.next`, IMPLEMENTATION.md still in the task folder.
    let p = project(3, "");
    for (name, text) in [
        ("DESIGN.md", "# design\n"),
        ("TEST_PLAN.md", "# plan\n"),
        ("IMPLEMENTATION.md", "# first try\n"),
    ] {
        p.write(&format!("{TASK}/{name}"), text);
    }
    p.write(
        "tasks/a/logs/rework/.next/FINDINGS.md",
        "# Rework round 1\n\n- **Cause**: verdict_failed: referee verdict is FAIL\n\n## Findings\n\nVerdict: FAIL\n- kill-case: the findings survive\n",
    );
    p.write("tasks/a/logs/rework/.next/VERDICT.md", "Verdict: FAIL\n");
    p.orchestrate()
        .args(["--task", TASK])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(
        read_if(&p, "tasks/a/logs/rework/1/IMPLEMENTATION.md"),
        "# first try\n"
    );
    assert!(!p.join("tasks/a/logs/rework/.next").exists());
    let prompt = read_if(&p, "tasks/a/logs/implement-1.prompt.md");
    assert!(
        prompt.contains("- kill-case: the findings survive"),
        "{prompt}"
    );
    assert_eq!(p.state_of(TASK), "complete");
}

#[test]
fn with_isolation_the_review_phases_get_the_diff_of_the_round_only() {
    let p = project(3, "");
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    p.write("README.md", "# demo\n");
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    let empty = p.home().join("empty-gitconfig");
    std::fs::write(&empty, "").unwrap();
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("referee=fail_once")
        .env("GIT_CONFIG_GLOBAL", empty.display().to_string())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env(
            "AGENT_IMPLEMENT",
            r#"case $prompt in *"Rework round"*) echo fixed > fix.txt ;; *) echo first > first.txt ;; esac"#,
        )
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of(TASK), "complete");
    let diff = read_if(&p, "tasks/a/logs/rework/1/round.diff");
    assert!(diff.contains("fix.txt"), "{diff}");
    assert!(
        !diff.contains("first.txt"),
        "the first round's work is not reviewed again: {diff}"
    );
    let review = read_if(&p, "tasks/a/logs/bug_find-2.prompt.md");
    assert!(
        review.contains("Review only what this round changed"),
        "{review}"
    );
    assert!(review.contains("round.diff"), "{review}");
    assert!(review.contains("1 file changed"), "{review}");
}
