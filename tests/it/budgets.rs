//! Bounded retries with backoff, frozen acceptance tests and budgets (issue 13 items 5, 6, 8),
//! through the real binary with scripted and replayed agents.

use crate::harness::{Project, agent_command};
use predicates::prelude::*;
use std::time::Duration;

fn replay() -> String {
    format!("sh {}/tests/agents/replay.sh", env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/agents/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `config.md` with these `## Limits` bullets (design and test design off unless asked).
fn limits(p: &Project, bullets: &str, test_design: bool) {
    p.write(
        ".automaton/config.md",
        format!(
            "## Phases\n- **Design**: No\n- **Test design**: {}\n\n## Limits\n{bullets}",
            if test_design { "Yes" } else { "No" }
        ),
    );
}

/// `orchestrate` with the harness' settings, retries as config.md says, an agent log.
fn orchestrate(p: &Project) -> assert_cmd::Command {
    let mut c = p.orchestrate_cmd();
    c.env_remove("AUTOMATON_RETRIES")
        .env("AGENT_LOG", p.join("agent.log"));
    c
}

/// [`orchestrate`] for an agent `.agent.md` names (the environment's would win).
fn orchestrate_md(p: &Project) -> assert_cmd::Command {
    let mut c = orchestrate(p);
    c.env_remove("AUTOMATON_AGENT");
    c
}

/// (phase, start ns, end ns) of every agent run the scripted agent recorded.
fn runs(p: &Project) -> Vec<(String, u128, u128)> {
    std::fs::read_to_string(p.join("agent.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

fn count(p: &Project, phase: &str) -> usize {
    runs(p).iter().filter(|(ph, _, _)| ph == phase).count()
}

/// The gaps between one run's end and the next run's start of a phase.
fn gaps(p: &Project, phase: &str) -> Vec<Duration> {
    let r: Vec<_> = runs(p)
        .into_iter()
        .filter(|(ph, _, _)| ph == phase)
        .collect();
    r.windows(2)
        .map(|w| Duration::from_nanos((w[1].1 - w[0].2) as u64))
        .collect()
}

#[test]
fn a_failing_phase_succeeds_on_the_third_attempt_after_growing_backoffs() {
    let p = Project::new();
    limits(&p, "- **Retries**: 2\n- **Retry backoff**: 300ms\n", false);
    // Research fails (exit 3) on its first two attempts, then works.
    let agent = format!(
        "if [ \"$AUTOMATON_PHASE\" = research ] && [ \"$AUTOMATON_ATTEMPT\" -lt 3 ]; then \
         AGENT_BEHAVIOR=research=exit3 {0}; else {0}; fi",
        agent_command()
    );
    orchestrate(&p)
        .env("AUTOMATON_AGENT", agent)
        .args(["--json", "add a thing"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(r#""event":"phase_retry""#));
    assert_eq!(count(&p, "research"), 3);
    for n in 1..=3 {
        assert!(
            p.join(&format!("tasks/add-a-thing/logs/research-{n}.log"))
                .is_file()
        );
    }
    assert!(!p.join("tasks/add-a-thing/logs/research-4.log").exists());
    // Backoff between attempts: at least 300ms, then at least 600ms (never an upper bound).
    let g = gaps(&p, "research");
    assert_eq!(g.len(), 2);
    assert!(g[0] >= Duration::from_millis(300), "{g:?}");
    assert!(g[1] >= Duration::from_millis(600), "{g:?}");
    assert_eq!(p.state_of("tasks/add-a-thing"), "complete");
    assert!(!p.join("tasks/add-a-thing/.stop").exists());
}

#[test]
fn retries_run_out_after_exactly_n_plus_one_attempts_with_the_last_cause() {
    let p = Project::new();
    limits(&p, "- **Retries**: 2\n- **Retry backoff**: 50ms\n", false);
    orchestrate(&p)
        .env("AGENT_BEHAVIOR", "research=exit3")
        .arg("add a thing")
        .assert()
        .code(12)
        .stdout(predicate::str::contains(
            "agent exited with status 3 during research",
        ))
        .stdout(predicate::str::contains(
            "gave up after 3 attempts of research (`- **Retries**: 2`)",
        ));
    assert_eq!(count(&p, "research"), 3);
    assert!(p.join("tasks/add-a-thing/logs/research-3.log").is_file());
    assert!(!p.join("tasks/add-a-thing/logs/research-4.log").exists());
    assert!(
        p.read("tasks/add-a-thing/.stop")
            .contains("gave up after 3 attempts")
    );
    // A malformed artifact is retried too, and each bad copy is kept under logs/failed/.
    let p = Project::new();
    limits(&p, "- **Retries**: 1\n- **Retry backoff**: 0\n", false);
    orchestrate(&p)
        .env("AGENT_BEHAVIOR", "referee=malformed")
        .arg("add a thing")
        .assert()
        .code(11)
        .stdout(predicate::str::contains(
            "gave up after 2 attempts of referee",
        ));
    assert_eq!(count(&p, "referee"), 2);
    assert!(
        p.join("tasks/add-a-thing/logs/failed/VERDICT-1.md")
            .is_file()
    );
}

#[test]
fn max_iterations_still_bounds_retries() {
    let p = Project::new();
    limits(&p, "- **Retries**: 5\n- **Retry backoff**: 0\n", false);
    orchestrate(&p)
        .env("AGENT_BEHAVIOR", "research=exit3")
        .args(["--max-iterations", "2", "add a thing"])
        .assert()
        .code(15)
        .stdout(predicate::str::contains(
            "iteration cap reached (2 phases in this run) after 2 attempts of research failed",
        ));
    assert_eq!(count(&p, "research"), 2);
}

#[test]
fn a_rate_limit_from_a_replayed_claude_stream_backs_off_before_the_retry() {
    let p = Project::new();
    // `Retry backoff: 0` retries a plain failure at once, but a rate limit always waits.
    limits(&p, "- **Retries**: 1\n- **Retry backoff**: 0\n", false);
    let stamp = p.join("starts.log");
    let agent = format!(
        "date +%s%N >> {stamp}; \
         if [ \"$AUTOMATON_PHASE\" = research ] && [ \"$AUTOMATON_ATTEMPT\" = 1 ]; then \
         REPLAY_WRITE=no REPLAY_EXIT=1 REPLAY_FIXTURE={limited} {replay}; \
         else REPLAY_FIXTURE={ok} {replay}; fi; date +%s%N >> {stamp}",
        stamp = stamp.display(),
        limited = fixture("claude-rate-limit.jsonl"),
        ok = fixture("claude-success.jsonl"),
        replay = replay(),
    );
    p.write(
        ".automaton/.agent.md",
        format!("## Agent\n- **Agent**: claude\n- **Agent command**: {agent}\n"),
    );
    let out = orchestrate_md(&p)
        .args(["--json", "add a thing"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let retry = events
        .iter()
        .find(|e| e["event"] == "phase_retry")
        .expect("a phase_retry event");
    assert_eq!(retry["rate_limited"], true, "{retry}");
    assert_eq!(retry["phase"], "research");
    assert!(retry["backoff_seconds"].as_f64().unwrap() >= 1.0, "{retry}");
    assert!(
        retry["reason"].as_str().unwrap().contains("API Error: 429"),
        "{retry}"
    );
    // The first attempt's end and the second's start (times in ns) are at least 1s apart.
    let t: Vec<u128> = std::fs::read_to_string(&stamp)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert!(t.len() >= 4, "{t:?}");
    assert!(
        Duration::from_nanos((t[2] - t[1]) as u64) >= Duration::from_secs(1),
        "{t:?}"
    );
    assert!(p.join("tasks/add-a-thing/logs/research-2.log").is_file());
}

/// The test_design phase of the scripted agent, with an acceptance test listed and written.
fn freezing_agent() -> String {
    format!(
        "{} && if [ \"$AUTOMATON_PHASE\" = test_design ]; then \
         printf '\\n## Acceptance tests\\n- `tests/acceptance.sh` end to end\\n' >> \"$AUTOMATON_ARTIFACT\"; \
         mkdir -p tests; echo 'test \"$(cat out)\" = ok' > tests/acceptance.sh; fi",
        agent_command()
    )
}

#[test]
fn an_acceptance_test_edited_at_implement_stops_the_task_until_approved() {
    let p = Project::new();
    limits(&p, "", true);
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .env("AGENT_IMPLEMENT", "echo 'true' > tests/acceptance.sh")
        .arg("add a thing")
        .assert()
        .code(26)
        .stdout(predicate::str::contains(
            "frozen acceptance files changed: tests/acceptance.sh (changed by the implement phase, attempt 1)",
        ))
        .stdout(predicate::str::contains("automaton approve tasks/add-a-thing"));
    // Nothing ran after implement.
    assert_eq!(count(&p, "bug_find"), 0);
    let frozen: serde_json::Value =
        serde_json::from_str(&p.read("tasks/add-a-thing/.state.frozen")).unwrap();
    assert_eq!(frozen["v"], 1);
    assert!(frozen["plan"]["TEST_PLAN.md"].is_string());
    assert!(frozen["acceptance"]["tests/acceptance.sh"].is_string());
    assert_eq!(frozen["changes"][0]["phase"], "implement");
    let doc = p.status_json();
    let task = &doc["tasks"][0];
    assert_eq!(task["next_step"], "approve", "{task}");
    assert!(
        task["frozen_changed"]
            .as_str()
            .unwrap()
            .contains("tests/acceptance.sh"),
        "{task}"
    );
    p.test()
        .arg("status")
        .stdout_contains("- **Frozen files changed**: tests/acceptance.sh")
        .run();
    // Running again without a person's word stops again.
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(26);
    p.test()
        .args(["approve", "tasks/add-a-thing"])
        .stdout_contains("Accepted the change to tests/acceptance.sh of tasks/add-a-thing")
        .run();
    let frozen: serde_json::Value =
        serde_json::from_str(&p.read("tasks/add-a-thing/.state.frozen")).unwrap();
    assert_eq!(frozen["changes"].as_array().unwrap().len(), 0);
    assert_eq!(frozen["accepted"].as_array().unwrap().len(), 1);
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(0);
    assert_eq!(p.state_of("tasks/add-a-thing"), "complete");
}

#[test]
fn an_emptied_frozen_file_stops_the_task_until_approve_has_it_frozen_again() {
    let p = Project::new();
    limits(&p, "", true);
    let step = |args: &[&str]| {
        orchestrate(&p)
            .env("AUTOMATON_AGENT", freezing_agent())
            .arg("--step")
            .args(args)
            .assert()
            .code(25); // waiting: one step done
    };
    step(&["add a thing"]); // research
    step(&["--task", "tasks/add-a-thing"]); // test_design, which freezes
    // What a power cut before the background fsync can leave.
    std::fs::write(p.join("tasks/add-a-thing/.state.frozen"), "").unwrap();
    for _ in 0..2 {
        orchestrate(&p)
            .env("AUTOMATON_AGENT", freezing_agent())
            .args(["--task", "tasks/add-a-thing"])
            .assert()
            .code(26)
            .stdout(predicate::str::contains(
                "frozen acceptance files changed: .state.frozen (unreadable: not valid JSON",
            ))
            .stdout(predicate::str::contains(
                "automaton approve tasks/add-a-thing",
            ));
    }
    assert_eq!(
        count(&p, "implement"),
        0,
        "the guard is closed before any agent runs"
    );
    let doc = p.status_json();
    assert_eq!(doc["tasks"][0]["next_step"], "approve", "{doc}");
    p.test()
        .args(["approve", "tasks/add-a-thing"])
        .stdout_contains(
            "tasks/add-a-thing/.state.frozen was unreadable (not valid JSON (EOF while parsing",
        )
        .stdout_contains("moved to tasks/add-a-thing/logs/state.frozen.unreadable")
        .run();
    assert_eq!(p.read("tasks/add-a-thing/logs/state.frozen.unreadable"), "");
    // The next run freezes again before implement, and a change to the test stops it again.
    frozen_again_then_an_edit_stops(&p);
    let frozen: serde_json::Value =
        serde_json::from_str(&p.read("tasks/add-a-thing/.state.frozen")).unwrap();
    assert!(frozen["acceptance"]["tests/acceptance.sh"].is_string());
}

/// `git clean -fdx` or an agent removing `.state.frozen` along with its edit of a test: the
/// record is put back and judges the edit.
#[test]
fn a_frozen_file_removed_by_a_phase_is_put_back_and_still_stops_the_task() {
    let p = Project::new();
    limits(&p, "", true);
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .env(
            "AGENT_IMPLEMENT",
            "rm \"$AUTOMATON_TASK_DIR/.state.frozen\"; echo 'true' > tests/acceptance.sh",
        )
        .arg("add a thing")
        .assert()
        .code(26)
        .stderr(predicate::str::contains(
            "⚠ tasks/add-a-thing: the implement phase removed .state.frozen; put back",
        ))
        .stdout(predicate::str::contains(
            "frozen acceptance files changed: tests/acceptance.sh (changed by the implement phase, attempt 1)",
        ));
    assert_eq!(count(&p, "bug_find"), 0);
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(26);
}

#[test]
fn a_lost_frozen_file_is_frozen_again_before_the_next_phase_runs() {
    let p = Project::new();
    limits(&p, "", true);
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Approve before**: implement\n",
    );
    orchestrate(&p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .arg("add a thing")
        .assert()
        .code(20);
    // A power cut took `.state.frozen` before its fsync (or it was never written: a
    // TEST_PLAN.md written by hand).
    std::fs::remove_file(p.join("tasks/add-a-thing/.state.frozen")).unwrap();
    p.test()
        .args(["approve", "tasks/add-a-thing"])
        .stdout_contains("Approved implement of tasks/add-a-thing")
        .run();
    frozen_again_then_an_edit_stops(&p);
    assert_eq!(count(&p, "bug_find"), 0);
}

/// A run of tasks/add-a-thing with no `.state.frozen`: it freezes before implement, whose
/// edit of the acceptance test then stops the task.
fn frozen_again_then_an_edit_stops(p: &Project) {
    orchestrate(p)
        .env("AUTOMATON_AGENT", freezing_agent())
        .env("AGENT_IMPLEMENT", "echo 'true' > tests/acceptance.sh")
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(26)
        .stderr(predicate::str::contains(
            "❄ tasks/add-a-thing: froze TEST_PLAN.md and tests/acceptance.sh (no .state.frozen \
             was there)\n▶ tasks/add-a-thing: implement",
        ))
        .stdout(predicate::str::contains(
            "tests/acceptance.sh (changed by the implement phase, attempt 1)",
        ));
}

#[test]
fn a_task_token_budget_stops_a_task_whose_replayed_claude_stream_spends_more() {
    let p = Project::new();
    // One replayed phase reports 8,723 tokens ($0.036924).
    limits(&p, "- **Budget per task**: 5k tokens\n", false);
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Agent**: claude\n- **Agent command**: REPLAY_FIXTURE={} {}\n",
            fixture("claude-success.jsonl"),
            replay()
        ),
    );
    orchestrate_md(&p)
        .arg("add a thing")
        .assert()
        .code(27)
        .stdout(predicate::str::contains("budget per task exceeded: "))
        .stdout(predicate::str::contains("5,000-token budget"));
    let journal = p.read("tasks/add-a-thing/logs/journal.jsonl");
    assert_eq!(journal.lines().count(), 1, "{journal}");
    let doc = p.status_json();
    let b = &doc["tasks"][0]["budget"];
    assert_eq!(b["tokens"]["spent"], 8723, "{b}");
    assert_eq!(b["tokens"]["limit"], 5000, "{b}");
    assert_eq!(b["exceeded"], true);
    p.test()
        .arg("status")
        .stdout_contains("- **Budget**: 8,723 of 5,000 tokens (exceeded")
        .run();
    // Running it again stops before any phase runs; a larger budget lets it go on.
    orchestrate_md(&p)
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(27)
        .stdout(predicate::str::contains(
            "budget per task exceeded: 8,723 tokens spent of a 5,000-token budget",
        ));
    assert_eq!(
        p.read("tasks/add-a-thing/logs/journal.jsonl")
            .lines()
            .count(),
        1
    );
    limits(&p, "- **Budget per task**: 2M tokens, $5\n", false);
    orchestrate_md(&p)
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(0);
}

#[test]
fn a_budget_crossed_mid_phase_stops_the_agent_at_once() {
    let p = Project::new();
    limits(&p, "- **Budget per task**: 10k tokens\n", false);
    // The agent streams one message of 100,005 tokens, then would work for a minute.
    p.write(
        "agent.sh",
        "cat >/dev/null\n\
         echo '{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":100000,\"output_tokens\":5}}}'\n\
         sleep 60\n",
    );
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Agent**: claude\n- **Agent command**: sh {}\n",
            p.join("agent.sh").display()
        ),
    );
    let started = std::time::Instant::now();
    orchestrate_md(&p)
        .arg("add a thing")
        .assert()
        .code(27)
        .stdout(predicate::str::contains(
            "budget per task exceeded: 100,005 tokens spent of a 10,000-token budget, while research ran",
        ));
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_run_dollar_budget_stops_the_run_and_the_next_run_gets_its_own() {
    let p = Project::new();
    // $0.036924 a phase: the second phase passes $0.05.
    limits(&p, "- **Budget per run**: $0.05\n", false);
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Agent**: claude\n- **Agent command**: REPLAY_FIXTURE={} {}\n",
            fixture("claude-success.jsonl"),
            replay()
        ),
    );
    orchestrate_md(&p)
        .arg("add a thing")
        .assert()
        .code(28)
        .stdout(predicate::str::contains(
            "budget per run exceeded: $0.0738 spent of a $0.05 budget in this run",
        ));
    assert_eq!(
        p.read("tasks/add-a-thing/logs/journal.jsonl")
            .lines()
            .count(),
        2
    );
    // A run stop: nothing recorded in the task, and the next run has a budget of its own.
    assert!(!p.join("tasks/add-a-thing/.stop").exists());
    orchestrate_md(&p)
        .args(["--task", "tasks/add-a-thing"])
        .assert()
        .code(28);
    assert_eq!(
        p.read("tasks/add-a-thing/logs/journal.jsonl")
            .lines()
            .count(),
        4
    );
}
