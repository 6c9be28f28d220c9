//! Snapshots (insta, tests/it/snapshots/) of the reports a person reads: `status` JSON (the
//! text report is snapshotted in status.rs), manual mode, `config`, `detect-vram --human` and `--help` with its exit-code table.
//!
//! A changed report fails here with a diff; when the change is meant, rerun with
//! `INSTA_UPDATE=always cargo test --test it reports::`, review the `.snap` files and commit them.

use crate::harness::{Project, Test};

#[test]
fn status_json() {
    let out = crate::status::fixture()
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .run();
    insta::assert_snapshot!(out.stdout);
}

/// A project with a failed task (fix and tie-break tasks to create), a running one and a
/// finished one.
fn manual_fixture() -> Project {
    let p = Project::new();
    p.write("tasks/auth/SPEC.md", "the spec")
        .write("tasks/auth/BUG_REPORT.md", "bugs")
        .write(
            "tasks/auth/VERDICT.md",
            "Verdict: FAIL\n\n## Findings\n- token-leak: tokens in logs\n\n\
             ## Tasks for Review / Tie-Breaks\n- api-shape: two readings\n",
        )
        .write("tasks/cache/SPEC.md", "x")
        .write("tasks/cache/IMPLEMENTATION.md", "x")
        .write("tasks/done/VERDICT.md", "Verdict: PASS\n")
        .write(".automaton/.agent.md", "- **Autopilot**: Disabled\n");
    p
}

#[test]
fn status_in_manual_mode() {
    let out = manual_fixture().test().arg("status").stdout_any().run();
    insta::assert_snapshot!(out.stdout);
}

/// tasks/auth needs a person's decision: manual mode exits 19 (NEEDS_HUMAN), not 0.
#[test]
fn orchestrate_manual_creates_fix_tasks() {
    let p = manual_fixture();
    let first = p
        .test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_any()
        .run();
    insta::assert_snapshot!("orchestrate_manual_first", first.stdout);
    // The second run reports the created tasks and creates nothing more.
    let again = p
        .test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_any()
        .run();
    insta::assert_snapshot!("orchestrate_manual_again", again.stdout);
}

#[test]
fn config_defaults() {
    let out = Test::new().arg("config").stdout_any().run();
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn config_json() {
    let out = Test::new()
        .config("## Limits\n- **Max iterations**: 4\n")
        .args(["config", "--json"])
        .stdout_any()
        .run();
    insta::assert_snapshot!(out.stdout);
}

/// Deterministic: the detection script pins GPU and RAM, and no model is configured, so the
/// window is the default.
#[test]
fn detect_vram_human() {
    let p = Test::new()
        .write(
            ".automaton/scripts/vram_detect.sh",
            "echo '{\"gpu_vram_gb\": 8, \"ram_gb\": 16, \"recommended_kb\": 16000, \"headroom\": 0.25}'",
        )
        .args(["detect-vram", "--human"])
        .stdout_any()
        .run();
    insta::assert_snapshot!("detect_vram_human_probed", p.stdout);
    let cached = p.test().args(["detect-vram", "--human"]).stdout_any().run();
    insta::assert_snapshot!("detect_vram_human_cached", cached.stdout);
}

/// A folder that is no project keeps no detection cache: making `.automaton/` for it would
/// make it a project, which a later `orchestrate` from a folder below would find and fill.
#[test]
fn detect_vram_outside_a_project_leaves_the_folder_as_it_was() {
    let p = Project::new();
    // `--json` too, as every command with a JSON form takes it (JSON is the default here).
    let out = p
        .test()
        .no_project_flag()
        .args(["detect-vram", "--json"])
        .stdout_any()
        .stderr_any()
        .run();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert!(v["recommended_kb"].is_u64(), "{v}");
    let left: Vec<_> = std::fs::read_dir(p.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The script pins GPU and RAM; the model comes from config.md.
#[test]
fn detect_vram_human_with_a_model() {
    let out = Test::new()
        .write(
            ".automaton/scripts/vram_detect.sh",
            "echo '{\"gpu_vram_gb\": 24, \"ram_gb\": 64}'",
        )
        .config("## Model Configuration\n- **Model**: claude-opus-4-6\n")
        .args(["detect-vram", "--human"])
        .stdout_any()
        .run();
    insta::assert_snapshot!(out.stdout);
}

/// `--help`, with the exit-code table at its end.
#[test]
fn help_with_exit_codes() {
    let out = Test::new().arg("--help").stdout_any().run();
    assert!(out.stdout.contains("Exit codes"), "{}", out.stdout);
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn graph_mermaid_and_dot() {
    let p = crate::graph::fixture();
    let mermaid = p.test().arg("graph").stdout_any().run();
    insta::assert_snapshot!("graph_mermaid", mermaid.stdout);
    let dot = p
        .test()
        .args(["graph", "--format", "dot"])
        .stdout_any()
        .run();
    insta::assert_snapshot!("graph_dot", dot.stdout);
}
