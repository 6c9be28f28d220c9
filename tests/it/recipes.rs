//! The recipes in examples/agents/ driven by `orchestrate` through a whole lifecycle, each with
//! a stand-in CLI on *_BIN that records how it was called and writes the artifact. (The real
//! Claude Code, Codex, aider, Gemini CLI and opencode run in the offline tier, tests/real_agents/run.sh.)

use crate::harness::{Project, REPO};

/// A stand-in CLI: records its arguments and stdin per phase, writes the artifact.
const FAKE_CLI: &str = r#"#!/bin/sh
printf '%s\n' "$@" > "$FAKE_OUT/args-$AUTOMATON_PHASE"
cat > "$FAKE_OUT/stdin-$AUTOMATON_PHASE"
case $AUTOMATON_PHASE in
  referee) echo "Verdict: PASS" ;;
  *) echo "written by the stand-in CLI" ;;
esac > "$AUTOMATON_ARTIFACT"
"#;

fn drive(recipe: &str, bin_var: &str) -> (Project, String, String) {
    let p = Project::new();
    p.write("fake/cli", FAKE_CLI).mkdir("out");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p.join("fake/cli"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let recipe_path = format!("{REPO}/examples/agents/{recipe}.sh");
    p.orchestrate()
        .env("AUTOMATON_AGENT", format!("sh {recipe_path}"))
        .env(bin_var, p.join("fake/cli"))
        .env("FAKE_OUT", p.join("out"))
        .arg("recipe run")
        .stdout(
            "\n**Task: tasks/recipe-run**\n- **Status**: Complete (state `complete`)\n\
             - **Next Step**: None (complete)\n- **Auto-Execute**: YES\n- **Command**: none\n\
             \nSummary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n",
        )
        .stderr_contains(format!(
            "automaton: driving tasks/recipe-run with `sh [REPO]/examples/agents/{recipe}.sh`\n"
        ))
        .stderr_contains("✔ tasks/recipe-run: complete\n")
        .run();
    for a in ["SPEC.md", "IMPLEMENTATION.md", "VERDICT.md"] {
        assert!(
            p.join(&format!("tasks/recipe-run/{a}")).is_file(),
            "{recipe}: {a}"
        );
    }
    let args = p.read("out/args-referee");
    let stdin = p.read("out/stdin-referee");
    (p, args, stdin)
}

fn prompt_of(p: &Project) -> String {
    p.read("tasks/recipe-run/logs/referee-1.prompt.md")
}

#[test]
fn claude_recipe() {
    let (p, args, stdin) = drive("claude", "CLAUDE_BIN");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args[..5],
        [
            "-p",
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "stream-json"
        ]
    );
    assert!(args.contains(&"--verbose"));
    assert_eq!(stdin, prompt_of(&p), "the prompt arrives on stdin");
}

#[test]
fn codex_recipe() {
    let (p, args, stdin) = drive("codex", "CODEX_BIN");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args[..4],
        [
            "exec",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check"
        ]
    );
    assert!(args.contains(&"--json"));
    assert_eq!(args.last(), Some(&"-"), "the prompt is read from stdin");
    assert_eq!(stdin, prompt_of(&p));
}

#[test]
fn aider_recipe() {
    let (p, args, _) = drive("aider", "AIDER_BIN");
    let args: Vec<&str> = args.lines().collect();
    assert!(args.contains(&"--yes-always") && args.contains(&"--no-auto-commits"));
    let task = p.join("tasks/recipe-run");
    let message = args
        .iter()
        .position(|a| *a == "--message-file")
        .expect("--message-file");
    assert_eq!(
        args[message + 1],
        task.join("logs/referee-1.prompt.md").display().to_string()
    );
    assert_eq!(
        args[message + 2],
        task.join("VERDICT.md").display().to_string(),
        "the artifact is given to edit"
    );
    assert!(
        args.windows(2)
            .any(|w| w[0] == "--read" && w[1].ends_with("/SPEC.md")),
        "inputs are read-only: {args:?}"
    );
}

#[test]
fn gemini_recipe() {
    let (p, args, stdin) = drive("gemini", "GEMINI_BIN");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args[..5],
        [
            "--skip-trust",
            "--approval-mode",
            "auto_edit",
            "--output-format",
            "stream-json"
        ]
    );
    // Headless, the prompt on stdin (`-p ''` is appended to it); every tool is never the default.
    assert_eq!(args[args.len() - 2..], ["-p", ""], "{args:?}");
    assert!(!args.contains(&"yolo"), "{args:?}");
    assert_eq!(stdin, prompt_of(&p), "the prompt arrives on stdin");
}

#[test]
fn opencode_recipe() {
    let (p, args, stdin) = drive("opencode", "OPENCODE_BIN");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args, ["run", "--format", "json"]);
    assert_eq!(stdin, prompt_of(&p), "the prompt arrives on stdin");
}
