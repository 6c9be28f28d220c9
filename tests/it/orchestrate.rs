//! `automaton orchestrate` driving the scripted agent (tests/agents/agent.sh) through real
//! processes: completion, every stop reason, caps, the lock, kill -9 and Ctrl-C.

use crate::harness::{
    LIFECYCLE_PHASES, Project, SpawnGuarded, Test, agent_command, process_gone, wait_for, wait_gone,
};

const LIFECYCLE: [&str; 8] = [
    "SPEC.md",
    "DESIGN.md",
    "TEST_PLAN.md",
    "IMPLEMENTATION.md",
    "BUG_REPORT.md",
    "ADVERSARIAL_BUG_REPORT.md",
    "DOC_REVIEW.md",
    "VERDICT.md",
];

/// The progress lines of one task's phases from `first` on, each completing (stderr).
fn progress(task: &str, phases: &[&str]) -> String {
    let artifact = |ph: &str| match ph {
        "research" => "SPEC.md",
        "design" => "DESIGN.md",
        "test_design" => "TEST_PLAN.md",
        "implement" => "IMPLEMENTATION.md",
        "bug_find" => "BUG_REPORT.md",
        "adversarial_bug_find" => "ADVERSARIAL_BUG_REPORT.md",
        "doc_review" => "DOC_REVIEW.md",
        "referee" => "VERDICT.md",
        other => panic!("{other}"),
    };
    phases
        .iter()
        .map(|ph| {
            // A written TEST_PLAN.md is frozen (its acceptance files with it).
            let frozen = if *ph == "test_design" {
                format!("❄ {task}: froze TEST_PLAN.md\n")
            } else {
                String::new()
            };
            format!(
                "▶ {task}: {ph} (attempt 1)\n✔ {task}: {ph} → {} ([ELAPSED])\n{frozen}",
                artifact(ph)
            )
        })
        .collect()
}

/// The report of one task (stdout), as `orchestrate` prints it; `command` follows
/// `- **Command**:` (with its leading space or newline).
fn report(task: &str, status: &str, next: &str, command: &str) -> String {
    format!(
        "\n**Task: {task}**\n- **Status**: {status}\n- **Next Step**: {next}\n\
         - **Auto-Execute**: YES\n- **Command**:{command}\n"
    )
}

fn complete(task: &str) -> String {
    report(
        task,
        "Complete (state `complete`)",
        "None (complete)",
        " none",
    ) + "\nSummary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n"
}

/// The report of a task that stopped for `reason` (the next command: resume it).
fn stopped(task: &str, reason: &str) -> String {
    stopped_with(task, reason, &format!("orchestrate --task {task}"))
}

fn stopped_with(task: &str, reason: &str, command: &str) -> String {
    // A verdict is a decision, said with the task, its file and the way out; any other stop
    // is looked at, and said as the run put it.
    let (ask, said) = if reason.starts_with("referee verdict is ") {
        (
            "decide on the verdict",
            format!(
                "{task}: {reason} ({task}/VERDICT.md); `automaton {command}` creates its fix \
                 tasks; once they are complete, `automaton orchestrate --task {task} \
                 --referee-again` runs its referee again"
            ),
        )
    } else {
        ("look at the stop", reason.to_string())
    };
    report(
        task,
        "Human Intervention (state `human_intervention`)",
        "Human decision",
        &format!(
            "\n  automaton {command}\n- **Waiting for**: a person ({ask})\n\n\
             Summary: 0 complete, 1 waiting for a person, 0 not started\n\
             ⚠️ **HUMAN INTERVENTION REQUIRED**: {said}"
        ),
    )
}

const DRIVING: &str = "automaton: driving {task} with `sh [REPO]/tests/agents/agent.sh`\n";

fn driving(task: &str) -> String {
    DRIVING.replace("{task}", task)
}

#[test]
fn full_run_to_complete() {
    let p = Project::new();
    p.orchestrate()
        .agent_log()
        .env("AGENT_PROMPT_COPY", p.join("last-prompt.md"))
        .arg("add user auth")
        .stdout(complete("tasks/add-user-auth"))
        .stderr(
            driving("tasks/add-user-auth")
                + &progress("tasks/add-user-auth", &LIFECYCLE_PHASES)
                + "✔ tasks/add-user-auth: complete\n",
        )
        .run();
    for a in LIFECYCLE {
        assert!(
            !p.read(&format!("tasks/add-user-auth/{a}"))
                .trim()
                .is_empty(),
            "{a}"
        );
    }
    assert_eq!(p.read("tasks/add-user-auth/.state"), "complete\n");
    assert!(
        p.read("tasks/add-user-auth/TASK.md")
            .contains("add user auth")
    );
    assert_eq!(p.phases_run(), LIFECYCLE_PHASES);
    // The prompt arrived on stdin, filled in: the referee names its artifact by absolute path.
    let prompt = p.read("last-prompt.md");
    assert!(
        prompt.contains(
            &p.join("tasks/add-user-auth/VERDICT.md")
                .display()
                .to_string()
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("{{artifact}}"));
    assert!(p.join("tasks/add-user-auth/logs/referee-1.log").is_file());
    let journal = p.read("tasks/add-user-auth/logs/journal.jsonl");
    assert_eq!(journal.lines().count(), 8);
    // Running it again is a no-op that says so.
    p.orchestrate()
        .arg("add user auth")
        .stdout(complete("tasks/add-user-auth"))
        .stderr_any()
        .run();
    assert_eq!(p.agent_runs().len(), 8);
}

#[test]
fn agent_contract_environment() {
    let p = Project::new();
    let script = p.join("env-agent.sh");
    std::fs::write(&script, "env | grep ^AUTOMATON_ | sort > \"$AUTOMATON_TASK_DIR/env-$AUTOMATON_PHASE.txt\"\npwd > \"$AUTOMATON_TASK_DIR/pwd.txt\"\necho spec > \"$AUTOMATON_ARTIFACT\"\n").unwrap();
    p.orchestrate()
        .args(["--max-iterations", "1", "--agent"])
        .arg(format!("sh {}", script.display()))
        .arg("env check")
        .status(15)
        .stdout(stopped(
            "tasks/env-check",
            "iteration cap reached (1 phase in this run); next phase would be design",
        ))
        .stderr_any()
        .run();
    let env = p.read("tasks/env-check/env-research.txt");
    let dir = p.join("tasks/env-check");
    for line in [
        "AUTOMATON_PHASE=research".to_string(),
        format!("AUTOMATON_TASK_DIR={}", dir.display()),
        format!("AUTOMATON_ARTIFACT={}", dir.join("SPEC.md").display()),
        format!(
            "AUTOMATON_PROMPT_FILE={}",
            dir.join("logs/research-1.prompt.md").display()
        ),
        format!("AUTOMATON_PROJECT={}", p.path().display()),
    ] {
        assert!(env.lines().any(|l| l == line), "missing {line} in\n{env}");
    }
    assert_eq!(
        p.read("tasks/env-check/pwd.txt").trim(),
        p.path().canonicalize().unwrap().display().to_string()
    );
}

/// `orchestrate "stop case"` with `behavior`, which must stop with `code` and `reason`.
fn stops(behavior: &str, extra: &[&str], code: i32, reason: &str) -> Project {
    stops_with(
        behavior,
        extra,
        code,
        reason,
        "orchestrate --task tasks/stop-case",
    )
}

fn stops_with(behavior: &str, extra: &[&str], code: i32, reason: &str, next: &str) -> Project {
    let p = Project::new();
    p.orchestrate()
        .behavior(behavior)
        .args(extra)
        .arg("stop case")
        .status(code)
        .stdout(stopped_with("tasks/stop-case", reason, next))
        .stderr_contains(driving("tasks/stop-case"))
        .stderr_ends_with(format!("✘ tasks/stop-case: {reason}\n"))
        .run();
    assert_eq!(p.read("tasks/stop-case/.state"), "human_intervention\n");
    assert_eq!(p.state_of("tasks/stop-case"), "human_intervention");
    p
}

#[test]
fn fail_verdict_stops_without_creating_fix_tasks() {
    let p = stops_with(
        "referee=fail",
        &[],
        10,
        "referee verdict is FAIL",
        "orchestrate --manual",
    );
    let tasks = p.status_json()["tasks"].as_array().unwrap().len();
    assert_eq!(tasks, 1, "autopilot never creates fix tasks");
}

#[test]
fn empty_artifact() {
    let p = stops(
        "design=empty",
        &[],
        11,
        "DESIGN.md is empty (design phase); see tasks/stop-case/logs/design-1.log",
    );
    assert!(
        p.read("tasks/stop-case/.stop")
            .contains("DESIGN.md is empty")
    );
}

#[test]
fn malformed_verdict() {
    stops(
        "referee=malformed",
        &[],
        11,
        "VERDICT.md is malformed: more than one verdict word (PASS, FAIL)",
    );
}

#[test]
fn agent_exiting_non_zero() {
    stops(
        "research=exit3",
        &[],
        12,
        "agent exited with status 3 during research; see tasks/stop-case/logs/research-1.log",
    );
}

#[test]
fn contract_met_without_artifact() {
    stops(
        "research=contract_only",
        &[],
        11,
        "the agent printed CONTRACT_MET but did not write SPEC.md (research phase); \
         see tasks/stop-case/logs/research-1.log",
    );
}

#[test]
fn agent_that_exits_zero_without_artifact() {
    stops(
        "test_design=none",
        &[],
        11,
        "the agent exited 0 but did not write TEST_PLAN.md (test_design phase); \
         see tasks/stop-case/logs/test_design-1.log",
    );
}

#[test]
fn stalled_agent() {
    stops(
        "research=stall",
        &["--stall-timeout", "1s"],
        14,
        "no output for 1s (stalled) during research; see tasks/stop-case/logs/research-1.log",
    );
}

#[test]
fn hanging_agent_and_grandchild_are_killed_at_the_phase_timeout() {
    let p = stops(
        "implement=hang",
        &["--max-phase-time", "1s"],
        13,
        "phase timed out after 1s during implement; see tasks/stop-case/logs/implement-1.log",
    );
    let child: i32 = p.wait_pid("tasks/stop-case/child.pid");
    let grandchild: i32 = p.wait_pid("tasks/stop-case/grandchild.pid");
    assert!(wait_gone(child), "agent {child} still alive");
    assert!(wait_gone(grandchild), "grandchild {grandchild} still alive");
}

#[test]
fn iteration_cap_then_resume() {
    let p = stops(
        "",
        &["--max-iterations", "3"],
        15,
        "iteration cap reached (3 phases in this run); next phase would be implement",
    );
    assert!(p.join("tasks/stop-case/TEST_PLAN.md").is_file());
    assert!(!p.join("tasks/stop-case/IMPLEMENTATION.md").exists());
    // Naming the task again clears the recorded stop and goes on from implement.
    p.orchestrate()
        .args(["--task", "tasks/stop-case"])
        .stdout(complete("tasks/stop-case"))
        .stderr_any()
        .run();
    assert_eq!(p.read("tasks/stop-case/.state"), "complete\n");
    assert!(!p.join("tasks/stop-case/.stop").exists());
}

#[test]
fn total_time_cap() {
    let p = Test::new()
        .project()
        .orchestrate()
        .behavior("*=slow")
        .env("AGENT_SLEEP", "0.4")
        .args(["--max-total-time", "1s", "slow one"])
        .status(16)
        .stdout_contains("HUMAN INTERVENTION REQUIRED")
        .stderr_any()
        .run();
    // The cap belongs to the run, not the task: the next run resumes.
    assert!(!p.join("tasks/slow-one/.stop").exists());
    p.orchestrate()
        .arg("slow one")
        .stdout(complete("tasks/slow-one"))
        .stderr_any()
        .run();
}

#[test]
fn verify_command_overrules_a_pass_verdict() {
    let p = Project::new();
    // Passes after implement (no DOC_REVIEW.md yet), fails once the review exists.
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Verify command**: test ! -e \"$AUTOMATON_TASK_DIR/DOC_REVIEW.md\"\n",
    );
    p.orchestrate()
        .arg("verified")
        .status(17)
        .stdout_contains("HUMAN INTERVENTION REQUIRED**: the referee said PASS, but verify command")
        .stderr_any()
        .run();
    assert!(p.read("tasks/verified/VERDICT.md").contains("PASS"));
    assert_eq!(p.state_of("tasks/verified"), "human_intervention");
    assert!(p.join("tasks/verified/logs/verify-1.log").is_file());
    assert!(p.join("tasks/verified/logs/verify-2.log").is_file());
    // Naming the task again does not slip the PASS through: verify runs again, and fails again.
    p.orchestrate()
        .args(["--task", "tasks/verified"])
        .status(17)
        .stdout_any()
        .stderr_any()
        .run();
    assert!(p.join("tasks/verified/logs/verify-3.log").is_file());
    // Once the command passes (here: in config.md's ## Agent section), the PASS is accepted,
    // and only once: a further run does not verify again.
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Autopilot**: Enabled\n",
    );
    p.write(
        ".automaton/config.md",
        "## Agent\n- **Verify command**: true\n",
    );
    p.orchestrate()
        .args(["--task", "tasks/verified"])
        .stdout(complete("tasks/verified"))
        .stderr_any()
        .run();
    assert!(p.join("tasks/verified/logs/verify-4.log").is_file());
    p.orchestrate()
        .args(["--task", "tasks/verified"])
        .stdout(complete("tasks/verified"))
        .stderr_any()
        .run();
    assert!(!p.join("tasks/verified/logs/verify-5.log").exists());
}

/// A verify that failed after implement stops the task; retrying it runs the command again
/// before any phase after implement (it ran bug_find, adversarial_bug_find, doc_review and
/// the referee on code known to fail, and verified only at the PASS).
#[test]
fn a_retry_after_a_failed_verify_verifies_before_the_phases_after_implement() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Verify command**: test -f ok.flag\n",
    );
    p.orchestrate()
        .arg("checked")
        .status(17)
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of("tasks/checked"), "human_intervention");
    // Retried without a fix: the command runs again, fails again, and nothing else runs.
    let retried = p
        .orchestrate()
        .args(["--task", "tasks/checked"])
        .agent_log()
        .status(17)
        .stdout_contains("verify command `test -f ok.flag` failed")
        .stderr_any()
        .run();
    assert!(
        p.agent_runs().is_empty(),
        "{:?}\n{}",
        p.agent_runs(),
        retried.stderr
    );
    assert!(p.join("tasks/checked/logs/verify-2.log").is_file());
    // `--dry-run` says the same.
    let dry = p
        .orchestrate()
        .args(["--dry-run", "--task", "tasks/checked"])
        .stdout_any()
        .run()
        .stdout;
    assert!(dry.starts_with("tasks/checked: verify: the verify command `test -f ok.flag` has not passed after this implementation"), "{dry}");
    // Fixed: the command passes, then the phases after implement run, to complete.
    p.write("ok.flag", "");
    p.orchestrate()
        .args(["--task", "tasks/checked"])
        .agent_log()
        .stdout(complete("tasks/checked"))
        .stderr_any()
        .run();
    assert_eq!(
        p.phases_run(),
        ["bug_find", "adversarial_bug_find", "doc_review", "referee"]
    );
}

#[test]
fn contract_met_does_not_excuse_a_failing_exit_status() {
    stops(
        "research=met_exit3",
        &[],
        12,
        "agent exited with status 3 during research; see tasks/stop-case/logs/research-1.log",
    );
}

#[test]
fn oversized_durations_and_a_description_for_continue_are_refused() {
    let p = Project::new();
    p.orchestrate()
        .args(["--max-phase-time", "99999999999999999999d", "x"])
        .status(2)
        .stderr(
            "error: flag --max-phase-time: `Max phase time`: expected a duration that fits in 64 \
             bits of seconds, not `99999999999999999999d`\n",
        )
        .run();
    // The largest representable cap is fine: it means no cap.
    p.orchestrate()
        .args([
            "--max-total-time",
            "18446744073709551615",
            "--max-iterations",
            "1",
            "x",
        ])
        .status(15)
        .stdout_any()
        .stderr_any()
        .run();
    p.test()
        .args(["continue", "new thing"])
        .status(2)
        .stderr(
            "error: `continue` takes no description; to start a task: automaton orchestrate \
             \"describe it\"\n",
        )
        .run();
    p.test()
        .args(["orchestrate", "--manual", "new thing"])
        .status(2)
        .stderr_contains("error: the argument '--manual' cannot be used with '[DESCRIPTION]'")
        .run();
    assert!(!p.join("tasks/new-thing").exists());
}

#[test]
fn missing_agent_command_is_a_clear_error() {
    let p = Test::new()
        .args(["orchestrate", "x"])
        .status(1)
        .stderr(
            "error: no agent command: set `- **Agent command**: ...` (or `- **Agent**: claude`, \
             codex or aider) in .automaton/.agent.md, the AUTOMATON_AGENT variable, or --agent; \
             `automaton init` writes a .agent.md for the agent CLI on PATH, and `automaton help \
             settings` lists every setting\n",
        )
        .run();
    assert!(!p.join("tasks/x").exists());
}

#[test]
fn name_collision_is_reported_not_overwritten() {
    let p = Project::new();
    p.write(
        "tasks/add-auth/TASK.md",
        "# Task\n\nsomething else entirely\n",
    );
    p.write("tasks/add-auth/SPEC.md", "keep me");
    p.orchestrate()
        .arg("add auth")
        .status(1)
        .stderr(
            "error: task tasks/add-auth already exists for another request; continue it with \
             `automaton orchestrate --task tasks/add-auth` or describe the new task differently\n",
        )
        .run();
    assert_eq!(p.read("tasks/add-auth/SPEC.md"), "keep me");
}

#[test]
fn continue_picks_the_most_advanced_task() {
    let p = Project::new();
    p.write("tasks/early/SPEC.md", "x");
    p.write("tasks/late/SPEC.md", "x")
        .write("tasks/late/DOC_REVIEW.md", "x");
    p.write("tasks/done/VERDICT.md", "Verdict: PASS");
    p.orchestrate()
        .agent_log()
        .stdout(complete("tasks/late"))
        .stderr(
            driving("tasks/late")
                + &progress("tasks/late", &["referee"])
                + "✔ tasks/late: complete\n",
        )
        .run();
    assert_eq!(
        p.agent_runs(),
        vec![("tasks/late".to_string(), "referee".to_string())]
    );
    assert_eq!(p.state_of("tasks/early"), "design");
}

#[test]
fn second_orchestrator_is_refused_by_the_lock() {
    let p = Project::new();
    // A git project, so that `clean` and `merge` have something to refuse for the lock.
    p.write("README.md", "# demo\n");
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "README.md"],
        &["commit", "--quiet", "-m", "init"],
    ] {
        crate::isolation::git(p.path(), args);
    }
    let mut first = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "research=hang")
        .arg("locked")
        .spawn_guarded();
    wait_for(&p.join("tasks/locked/child.pid"));
    p.orchestrate()
        .arg("other task")
        .status(75)
        .stderr_regex(&format!(
            concat!(
                r"^error: another automaton \(pid {}, started \d+s ago: .* orchestrate locked\) ",
                r"is driving this project\n$"
            ),
            first.id()
        ))
        .run();
    assert!(!p.join("tasks/other-task").exists());
    // `clean` and `merge` run git in the worktrees a run makes and commits in: refused too
    // while it drives the project; a dry clean only looks, and may.
    for args in [&["clean"][..], &["merge", "tasks/locked"]] {
        p.test()
            .args(args.iter().copied())
            .status(75)
            .stderr_regex(r"^error: another automaton \(pid \d+, .*\) is driving this project\n$")
            .run();
    }
    p.test()
        .args(["clean", "--dry-run"])
        .status(23)
        .stdout_contains("clean: would remove nothing; kept 1 task: tasks/locked (not complete)\n")
        .run();
    // status offers no command that the lock refuses: the task whose agent runs now is
    // followed (`orchestrate --task` was offered, and exited 75).
    let doc = p.status_json();
    assert_eq!(doc["run"]["pid"], first.id());
    let task = &doc["tasks"][0];
    assert_eq!(task["waiting_for"], "agent");
    assert_eq!(task["command"], "automaton logs tasks/locked -f");
    // The text report says, above the tasks, which commands wait for that run.
    p.test()
        .args(["status"])
        .stdout_regex(&format!(
            concat!(
                r"^A run drives this project now \(pid {}, started \d+s ago: .* orchestrate ",
                r"locked\): `automaton watch` follows it; orchestrate, answer, reject, rerun, ",
                r"merge and clean wait until it ends \(exit 75 before\)\.\n\n\*\*Task: ",
                r"tasks/locked\*\*"
            ),
            first.id()
        ))
        .run();
    p.test()
        .args(["logs", "tasks/locked"])
        .stdout_any()
        .stderr_any()
        .run();
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    assert_eq!(first.wait().unwrap().code(), Some(130));
}

#[test]
fn ctrl_c_stops_the_agent_group_and_leaves_files_consistent() {
    let p = Project::new();
    let mut run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "design=hang")
        .arg("interrupt me")
        .spawn_guarded();
    wait_for(&p.join("tasks/interrupt-me/child.pid"));
    let child: i32 = p.wait_pid("tasks/interrupt-me/child.pid");
    let grandchild: i32 = p.wait_pid("tasks/interrupt-me/grandchild.pid");
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert!(wait_gone(child) && wait_gone(grandchild));
    // Not a human stop: the state still names the interrupted phase, and a rerun resumes.
    assert_eq!(p.read("tasks/interrupt-me/.state"), "design\n");
    assert!(!p.join("tasks/interrupt-me/.stop").exists());
    let leftovers = std::fs::read_dir(p.join("tasks/interrupt-me"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
        .count();
    assert_eq!(leftovers, 0);
    p.orchestrate()
        .args(["--task", "tasks/interrupt-me"])
        .stdout(complete("tasks/interrupt-me"))
        .stderr_any()
        .run();
}

/// A stopped agent gets the whole kill grace between TERM and KILL (`AUTOMATON_KILL_GRACE`),
/// to save its state: here one that takes 4.5 s of an 8 s grace finishes (its watchdog
/// KILLed it at half the grace).
#[test]
fn a_stopped_agent_gets_the_whole_kill_grace() {
    let p = Project::new();
    p.write(
        "agent.sh",
        "trap 'sleep 4.5; echo saved > \"$AUTOMATON_TASK_DIR/saved\"; exit 143' TERM\n\
         cat > /dev/null\n\
         echo started > \"$AUTOMATON_TASK_DIR/started\"\n\
         while :; do sleep 0.1; done\n",
    );
    let mut run = p
        .orchestrate_std()
        .env("AUTOMATON_KILL_GRACE", "8s")
        .args(["--agent", "sh agent.sh", "save on stop"])
        .spawn_guarded();
    wait_for(&p.join("tasks/save-on-stop/started"));
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert_eq!(p.read("tasks/save-on-stop/saved"), "saved\n");
}

/// A stopped agent is sent TERM once: the second TERM its watchdog sent after automaton's
/// reads as "stop now, without saving" to the agents that quit at once on a second Ctrl-C. The
/// agent here counts every TERM delivered (perl runs its handler once per delivery) and
/// takes a second to save.
#[test]
fn a_stopped_agent_is_sent_term_once() {
    let p = Project::new();
    p.write(
        "agent.pl",
        r#"my $dir = $ENV{AUTOMATON_TASK_DIR};
my $terms = 0;
$SIG{TERM} = sub { $terms++; open(my $f, ">>", "$dir/terms"); print $f "TERM\n"; close $f };
my @prompt = <STDIN>;
open(my $f, ">", "$dir/started"); close $f;
select(undef, undef, undef, 0.05) until $terms;
select(undef, undef, undef, 0.05) for 1 .. 20;
exit 143;
"#,
    );
    let mut run = p
        .orchestrate_std()
        .env("AUTOMATON_KILL_GRACE", "10s")
        .args(["--agent", "perl agent.pl", "term once"])
        .spawn_guarded();
    wait_for(&p.join("tasks/term-once/started"));
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert_eq!(p.read("tasks/term-once/terms"), "TERM\n");
}

#[test]
fn kill_9_mid_phase_then_resume_runs_no_completed_phase_twice() {
    let p = Project::new();
    // An agent that ignores SIGTERM, under a watchdog whose grace before SIGKILL is long: it
    // outlives its killed automaton for that long (the watchdog's own stop is tested by
    // reliability::f5_agent_of_a_killed_automaton_is_stopped_within_seconds).
    let mut run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "implement=hang")
        .env("AGENT_IGNORE_TERM", "1")
        .env("AUTOMATON_KILL_GRACE", "60s")
        .env("AGENT_LOG", p.join("agent.log"))
        .arg("crashy")
        .spawn_guarded();
    wait_for(&p.join("tasks/crashy/child.pid"));
    let child: i32 = p.wait_pid("tasks/crashy/child.pid");
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    // automaton died without cleaning up: its agent lives on, until the next run stops it
    // before it starts the phase again (two agents never work on one task).
    assert!(!process_gone(child));
    let group = unsafe { libc::getpgid(child) };
    assert!(group > 0);
    p.orchestrate()
        .agent_log()
        .args(["--task", "tasks/crashy"])
        .stdout(complete("tasks/crashy"))
        .stderr_contains(format!(
            "stopped agent pid {group} that an earlier, killed run left running"
        ))
        .run();
    assert!(wait_gone(child));
    let runs = p.phases_run();
    for phase in [
        "research",
        "design",
        "test_design",
        "bug_find",
        "adversarial_bug_find",
        "doc_review",
        "referee",
    ] {
        assert_eq!(
            runs.iter().filter(|r| *r == phase).count(),
            1,
            "{phase} ran twice: {runs:?}"
        );
    }
    assert_eq!(
        runs.iter().filter(|r| *r == "implement").count(),
        2,
        "the killed phase runs again: {runs:?}"
    );
    assert!(process_gone(child));
}

#[test]
fn json_events_for_ci() {
    let p = Project::new();
    let out = p
        .orchestrate()
        .args(["--json", "events"])
        .stdout_any()
        .stderr_any()
        .run();
    let events = out.json_lines();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"complete"));
    assert_eq!(kinds.iter().filter(|k| **k == "phase_started").count(), 8);
    assert_eq!(
        kinds.iter().filter(|k| **k == "artifact_validated").count(),
        8
    );
    let stop = p
        .orchestrate()
        .behavior("research=exit3")
        .args(["--json", "broken"])
        .status(12)
        .stdout_any()
        .stderr_any()
        .run();
    let last = stop.json_lines().pop().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["kind"].as_str(),
            last["exit_code"].as_u64()
        ),
        (Some("stop"), Some("agent_failed"), Some(12))
    );
}

#[test]
fn manual_mode_reports_and_creates_fix_tasks_once() {
    let p = Project::new();
    p.write("tasks/auth/SPEC.md", "the spec")
        .write("tasks/auth/BUG_REPORT.md", "bugs")
        .write("tasks/auth/ADVERSARIAL_BUG_REPORT.md", "more bugs")
        .write("tasks/auth/VERDICT.md", "Verdict: FAIL\n\n## Findings\n- token-leak: tokens in logs\n\n## Tasks for Review / Tie-Breaks\n- api-shape: two readings\n");
    // tasks/auth needs a person's decision: manual mode exits 19 (NEEDS_HUMAN), not 0.
    p.test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_contains("- **Auto-Execute**: NO")
        .stdout_contains("**Auto-created tasks from tasks/auth**:")
        .stdout_contains(
            "Created 2 task(s): tasks/auth-fix-token-leak, tasks/auth-tiebreak-api-shape",
        )
        // A task waits for a person: the run did not complete, and does not say so.
        .stdout_ends_with("Summary: 0 complete, 1 waiting for a person, 2 not started\n")
        .stdout_lacks("ORCHESTRATION_COMPLETE")
        .run();
    assert_eq!(p.read("tasks/auth-fix-token-leak/SPEC.md"), "the spec");
    assert_eq!(p.read("tasks/auth-fix-token-leak/BUG_REPORT.md"), "bugs");
    // The copies do not advance the new task: it starts at bug_find.
    assert_eq!(p.state_of("tasks/auth-fix-token-leak"), "bug_find");
    p.test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_lacks("Created")
        .run();
    // Autopilot: Disabled in .agent.md is manual mode too.
    p.write(".automaton/.agent.md", "- **Autopilot**: Disabled\n");
    p.test()
        .arg("orchestrate")
        .status(19)
        .stdout_contains("Auto-Execute**: NO")
        .run();
    // Driving the fix task: bug_find must rewrite BUG_REPORT.md; then it goes on.
    p.write(".automaton/.agent.md", "- **Autopilot**: Enabled\n");
    p.orchestrate()
        .args(["--task", "tasks/auth-fix-token-leak"])
        .stdout(complete("tasks/auth-fix-token-leak"))
        .stderr_any()
        .run();
    assert_ne!(p.read("tasks/auth-fix-token-leak/BUG_REPORT.md"), "bugs");
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let p = Project::new();
    let out = p
        .orchestrate()
        .args(["research only", "--max-iterations", "1"])
        .status(15)
        .stdout_any()
        .stderr_lacks("\x1b")
        .run();
    assert!(!out.stderr.is_empty());
    p.test()
        .args(["--color", "always", "orchestrate"])
        .env("AUTOMATON_AGENT", agent_command())
        .args(["--task", "tasks/research-only", "--max-iterations", "1"])
        .status(15)
        .stdout_any()
        .stderr_contains("\x1b[32m✔")
        .run();
}

#[test]
fn continue_skips_sub_tasks_of_a_parent_that_needs_a_human() {
    let p = Project::new();
    p.write("tasks/p/SPEC.md", "x")
        .write(
            "tasks/p/DECOMPOSITION.md",
            "| Sub-task | Wave | Depends on |\n|---|---|---|\n| a | 1 | - |\n| c | 2 | a |\n",
        )
        .write("tasks/p/subtasks/a/VERDICT.md", "Verdict: FAIL\n")
        .mkdir("tasks/p/subtasks/c")
        .write("tasks/p-fix-a/SPEC.md", "x")
        .write("tasks/p-fix-a/DOC_REVIEW.md", "x");
    p.orchestrate()
        .agent_log()
        .stdout(complete("tasks/p-fix-a"))
        .stderr_any()
        .run();
    assert_eq!(
        p.agent_runs(),
        vec![("tasks/p-fix-a".to_string(), "referee".to_string())]
    );
}

/// A run interrupted (Ctrl-C) or killed (SIGKILL) while the verify command runs leaves the
/// PASS unaccepted: `.state` and `status` both say the referee's step, with the verify due,
/// never complete; and `continue` resumes at the verify, which then accepts it.
#[test]
fn an_interrupted_verify_leaves_the_pass_unaccepted_and_continue_verifies_it() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let p = Project::new();
        // Passes at once after implement; once VERDICT.md exists it hangs the first time
        // (until the run is cut short) and passes the next.
        p.write(
            ".automaton/.agent.md",
            "## Agent\n- **Verify command**: d=\"$AUTOMATON_TASK_DIR\"; test -e \"$d/VERDICT.md\" && \
             ! test -e \"$d/verifying\" && { touch \"$d/verifying\"; sleep 30; }; true\n",
        );
        let mut run = p.orchestrate_std().arg("slow verify").spawn_guarded();
        wait_for(&p.join("tasks/slow-verify/verifying"));
        unsafe { libc::kill(run.id() as i32, signal) };
        let code = run.wait().unwrap().code();
        assert_eq!(
            code,
            (signal == libc::SIGINT).then_some(130),
            "signal {signal}"
        );
        assert_eq!(
            p.read("tasks/slow-verify/.state"),
            "referee\n",
            "signal {signal}"
        );
        let doc = p.status_json();
        let task = &doc["tasks"][0];
        assert_eq!(task["state"], "referee", "signal {signal}: {task:#}");
        // `continue` resumes at the verify, not at the referee, and accepts the PASS.
        p.orchestrate().stdout_any().stderr_any().run();
        assert_eq!(
            p.read("tasks/slow-verify/.state"),
            "complete\n",
            "signal {signal}"
        );
        assert!(p.join("tasks/slow-verify/logs/referee-1.log").exists());
        assert!(
            !p.join("tasks/slow-verify/logs/referee-2.log").exists(),
            "signal {signal}: the referee ran again"
        );
    }
}

#[test]
fn a_leftover_group_whose_leader_died_is_stopped_too() {
    let p = Project::new();
    // As in kill_9_mid_phase_then_resume_runs_no_completed_phase_twice: an agent that ignores
    // SIGTERM under a long watchdog grace outlives its killed automaton.
    let mut run = p
        .orchestrate_std()
        .env("AGENT_BEHAVIOR", "research=hang")
        .env("AGENT_IGNORE_TERM", "1")
        .env("AUTOMATON_KILL_GRACE", "60s")
        .arg("orphans")
        .spawn_guarded();
    wait_for(&p.join("tasks/orphans/grandchild.pid"));
    let grandchild: i32 = p.wait_pid("tasks/orphans/grandchild.pid");
    let group = unsafe { libc::getpgid(grandchild) };
    assert!(group > 0);
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    // Only the group's leader dies (as when a wrapper script is killed); its children live on.
    unsafe { libc::kill(group, libc::SIGKILL) };
    assert!(wait_gone(group));
    assert!(!process_gone(grandchild));
    p.orchestrate()
        .args(["--task", "tasks/orphans"])
        .stdout(complete("tasks/orphans"))
        .stderr_contains("that an earlier, killed run left running")
        .run();
    assert!(
        wait_gone(grandchild),
        "the leftover group member must be stopped"
    );
}
