//! `orchestrate` with the claude and codex adapters, fed by a replay agent that prints output
//! recorded from the real CLIs (tests/fixtures/agents/): the agent's own failure signal stops a
//! phase even at exit 0, usage reaches the journal and `status`, and detect-vram uses the model
//! the agent reported. The real CLIs run in the offline tier, tests/real_agents/run.sh.

use crate::harness::{Project, REPO, Test, fixture_path};

fn fixture(name: &str) -> String {
    fixture_path(&format!("agents/{name}"))
}

fn replay() -> String {
    format!("sh {REPO}/tests/agents/replay.sh")
}

/// A project whose .agent.md picks `kind` and the replay agent as its command.
fn project(kind: &str) -> Project {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Agent**: {kind}\n- **Agent command**: {}\n",
            replay()
        ),
    );
    p
}

fn orchestrate(p: &Project, fixture_name: &str) -> Test {
    p.test()
        .env("REPLAY_FIXTURE", fixture(fixture_name))
        .env("AUTOMATON_KILL_GRACE", "300ms")
        .env_remove("REPLAY_EXIT")
        .env_remove("REPLAY_WRITE")
        .arg("orchestrate")
}

fn journal(p: &Project, task: &str) -> Vec<serde_json::Value> {
    p.read(&format!("{task}/logs/journal.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn claude_error_result_stops_the_phase_even_at_exit_0() {
    let p = project("claude");
    orchestrate(&p, "claude-api-error.jsonl")
        .arg("add a thing")
        .status(12)
        .stdout(
            "\n**Task: tasks/add-a-thing**\n\
             - **Status**: Human Intervention (state `human_intervention`)\n\
             - **Next Step**: Human decision\n- **Auto-Execute**: YES\n- **Command**:\n  \
             automaton orchestrate --task tasks/add-a-thing\n\
             - **Waiting for**: a person (look at the stop)\n\
             - **Usage**: 0 tokens, $0.00, 1 phase (0 in / 0 out, [ELAPSED], claude-opus-5-5)\n\n\
             Summary: 0 complete, 1 waiting for a person, 0 not started\n\
             ⚠️ **HUMAN INTERVENTION REQUIRED**: claude reported an error result: API Error: 400 \
             scripted failure: model-error task (agent exited with status 0) during research; \
             see tasks/add-a-thing/logs/research-1.log\n",
        )
        .stderr_any()
        .run();
    // The artifact was written, but the agent's own verdict wins.
    assert!(p.join("tasks/add-a-thing/SPEC.md").is_file());
    assert_eq!(p.read("tasks/add-a-thing/.state"), "human_intervention\n");
    assert!(
        p.read("tasks/add-a-thing/.stop")
            .contains("claude reported")
    );
    let j = journal(&p, "tasks/add-a-thing");
    assert_eq!(j.len(), 1);
    assert_eq!(j[0]["v"], 2);
    assert_eq!(j[0]["agent"], "claude");
    assert_eq!(j[0]["ok"], false);
    assert_eq!(j[0]["exit_code"], 0);
}

#[test]
fn codex_turn_failed_stops_the_phase_even_at_exit_0() {
    let p = project("codex");
    orchestrate(&p, "codex-turn-failed.jsonl")
        .arg("add a thing")
        .status(12)
        .stdout_contains("codex reported turn.failed: scripted failure: model-error task")
        .stderr_any()
        .run();
}

#[test]
fn claude_usage_reaches_journal_status_and_detect_vram() {
    let p = project("claude");
    orchestrate(&p, "claude-success.jsonl")
        .arg("add a thing")
        .stderr_contains("with claude: `sh ")
        .stderr_regex(r"research → SPEC\.md \(\[ELAPSED\], 8,\d{3} tokens, \$0\.0\d{3}\)")
        .stdout_contains("- **Usage**: ")
        .run();
    let j = journal(&p, "tasks/add-a-thing");
    assert_eq!(j.len(), 8);
    for line in &j {
        assert_eq!(line["v"], 2);
        assert_eq!(line["agent"], "claude");
        assert_eq!(line["ok"], true);
        assert_eq!(line["model"], "claude-opus-5-5");
        assert_eq!(line["context_window"], 1_000_000);
        assert!(line["input_tokens"].as_u64().unwrap() > 0);
        assert!(line["output_tokens"].as_u64().unwrap() > 0);
        assert!(line["cost_usd"].as_f64().unwrap() > 0.0);
        assert!(line["session_id"].as_str().unwrap().len() == 36);
        // v1 fields are kept.
        for k in [
            "phase",
            "attempt",
            "finished_at",
            "seconds",
            "end",
            "exit_code",
            "contract_met",
        ] {
            assert!(line.get(k).is_some(), "{k} missing in {line}");
        }
    }
    let tokens: u64 = j.iter().map(|l| l["tokens"].as_u64().unwrap()).sum();
    let doc = p.status_json();
    let usage = &doc["tasks"][0]["usage"];
    assert_eq!(usage["phases"], 8);
    assert_eq!(usage["tokens"], tokens);
    assert_eq!(usage["models"][0], "claude-opus-5-5");
    assert!(usage["cost_usd"].as_f64().unwrap() > 0.0);
    let text = p.status_text();
    let line = text
        .lines()
        .find(|l| l.starts_with("- **Usage**: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(" tokens, $0.")
            && line.contains(", 8 phases (")
            && line.contains("claude-opus-5-5"),
        "{line}"
    );
    // The reported model and window now size the VRAM budget (no model in the settings).
    let v = p
        .test()
        .args(["detect-vram", "--refresh"])
        .stdout_any()
        .stderr_any()
        .run()
        .json();
    assert_eq!(v["model"], "claude-opus-5-5", "{v:#}");
    assert_eq!(v["model_context_kb"], 1_000_000, "{v:#}");
    assert!(
        v["model_source"]
            .as_str()
            .unwrap()
            .starts_with("reported by claude"),
        "{v:#}"
    );
}

#[test]
fn command_adapter_records_no_usage() {
    let p = project("command");
    orchestrate(&p, "claude-success.jsonl")
        .arg("add a thing")
        .stdout_lacks("- **Usage**")
        .stderr_any()
        .run();
    let j = journal(&p, "tasks/add-a-thing");
    assert_eq!(j[0]["agent"], "command");
    assert!(j[0]["tokens"].is_null());
    assert!(!p.join(".automaton/.agent_model.json").exists());
    assert_eq!(p.status_json()["tasks"][0]["usage"]["phases"], 8);
}

#[test]
fn default_command_line_and_flags_of_an_adapter() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Agent**: codex\n- **Model**: gpt-5.5\n- **Agent flags**: --ephemeral\n",
    );
    // No codex on this PATH: the check before any run names the setting and the command line
    // it builds, and nothing is created.
    orchestrate(&p, "codex-success.jsonl")
        .env("PATH", "/usr/bin:/bin")
        .arg("add a thing")
        .status(24)
        .stderr_contains("`- **Agent**: codex` (")
        .stderr_contains(
            ".agent.md:2) runs `codex exec --json --sandbox workspace-write --skip-git-repo-check - \
             --model gpt-5.5 --ephemeral`",
        )
        .run();
    assert!(!p.join("tasks/add-a-thing").exists());
}
