//! Small truths (issue 30), each through the real binary: who approved when `$USER` is unset,
//! task names transliterated, a missing agent file named as one, `logs --phase` checking its
//! word, a misspelled agent kind getting a did-you-mean, and no help text or message that
//! speaks of the source documents instead of stating the rule.

use crate::harness::Project;
use predicates::prelude::*;
use std::path::Path;

/// The name of the account the tests run as, as `id -un` says it (`unknown` without one).
fn account_name() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !name.is_empty() {
        name
    } else {
        "unknown".into()
    }
}

#[test]
fn approve_without_user_or_logname_records_the_account_name() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Approve before**: design\n",
    );
    p.write("tasks/add-auth/SPEC.md", "# Spec\n");
    let who = account_name();
    assert_ne!(who, "unknown", "the test account has a name");
    p.cmd()
        .args(["approve", "tasks/add-auth"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!(
            "Approved design of tasks/add-auth by {who}"
        )));
    let rec: serde_json::Value =
        serde_json::from_str(p.read("tasks/add-auth/.state.approvals").trim()).unwrap();
    assert_eq!(rec["who"], who.as_str());
    // `$USER` still comes first.
    p.write("tasks/add-auth/SPEC.md", "# Spec, again\n");
    p.cmd()
        .args(["approve", "tasks/add-auth"])
        .env("USER", "ann")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("by ann"));
}

#[test]
fn a_description_in_another_script_is_transliterated_for_the_task_name() {
    let p = Project::new();
    p.orchestrate()
        .args(["-q", "Ünïcödé — fix the ❤ bug!"])
        .stdout_any()
        .run();
    assert!(
        p.join("tasks/unicode-fix-the-bug/TASK.md").is_file(),
        "tasks/: {:?}",
        std::fs::read_dir(p.join("tasks"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
    assert_eq!(p.state_of("tasks/unicode-fix-the-bug"), "complete");
    assert!(
        p.read("tasks/unicode-fix-the-bug/TASK.md")
            .contains("Ünïcödé — fix the ❤ bug!"),
        "the request is kept as typed"
    );
}

#[test]
fn a_relative_agent_path_that_does_not_exist_is_named_as_a_missing_file() {
    let p = Project::new();
    p.cmd()
        .args(["orchestrate", "--agent", "./no-such-agent.sh", "add auth"])
        .assert()
        .code(24)
        .stderr(predicate::str::contains(format!(
            "the agent program `./no-such-agent.sh` is a missing file (there is no {})",
            p.join("no-such-agent.sh").display()
        )))
        .stderr(predicate::str::contains("correct the path"))
        .stderr(predicate::str::contains("PATH").not());
    assert!(!p.join("tasks/add-auth").exists(), "nothing ran");

    // A file that is there but cannot run is named as that.
    p.write("agent.sh", "echo hi\n");
    p.cmd()
        .args(["orchestrate", "--agent", "./agent.sh", "add auth"])
        .assert()
        .code(24)
        .stderr(predicate::str::contains(
            "the agent program `./agent.sh` is not executable",
        ))
        .stderr(predicate::str::contains("`chmod +x` it"));

    // A bare word is still looked up on PATH.
    p.cmd()
        .args(["orchestrate", "--agent", "no-such-agent-cli -p", "add auth"])
        .assert()
        .code(24)
        .stderr(predicate::str::contains(
            "the agent program `no-such-agent-cli` was not found on PATH",
        ));
}

#[test]
fn logs_phase_checks_the_word_and_lists_the_phases() {
    let p = Project::new();
    p.write("tasks/a/SPEC.md", "# Spec\n");
    p.cmd()
        .args(["logs", "tasks/a", "--phase", "nonsense"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`nonsense` is not a phase: --phase takes one of research, decomposition, design, \
             test_design, implement, bug_find, adversarial_bug_find, doc_review, referee, verify, \
             setup",
        ))
        .stderr(predicate::str::contains("has not run").not());
    p.cmd()
        .args(["logs", "tasks/a", "--phase", "desing"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `design`?"));
    // A real phase that has not run is still told as that; the spellings of a phase agree.
    p.cmd()
        .args(["logs", "tasks/a", "--phase", "test-design"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "tasks/a has no log of phase test_design",
        ))
        .stderr(predicate::str::contains("it has not run yet"));
    p.write("tasks/a/logs/test_design-1.log", "planned the tests\n");
    p.cmd()
        .args(["logs", "tasks/a", "--phase", "Test design"])
        .assert()
        .code(0)
        .stdout("planned the tests\n");
}

#[test]
fn a_misspelled_agent_kind_gets_a_did_you_mean() {
    let p = Project::new();
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: claud\n");
    p.cmd()
        .args(["orchestrate", "add auth"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "`Agent`: expected one of command, claude, codex, aider, gemini, opencode, not \
             `claud` (did you mean `claude`?)",
        ));
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: cdoex\n");
    p.cmd()
        .arg("config")
        .assert()
        .stderr(predicate::str::contains("(did you mean `codex`?)"));
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: opencod\n");
    p.cmd()
        .arg("config")
        .assert()
        .stderr(predicate::str::contains("(did you mean `opencode`?)"));
    // Nothing near: no guess.
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: gpt\n");
    p.cmd()
        .arg("config")
        .assert()
        .stderr(predicate::str::contains("not `gpt`"))
        .stderr(predicate::str::contains("did you mean").not());
}

/// Whether `text` speaks of the source documents ("the seeds", "seed 001").
fn mentions_seed(text: &str) -> bool {
    text.to_ascii_lowercase().contains("seed")
}

#[test]
fn no_help_page_or_message_speaks_of_the_source_documents() {
    let p = Project::new();
    let help = p.cmd().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // Every subcommand of the top-level help, and `task create`.
    let mut commands: Vec<Vec<String>> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(|c| vec![c.to_string()])
        .collect();
    assert!(commands.len() > 10, "{help}");
    commands.push(vec!["task".into(), "create".into()]);
    commands.push(vec![]);
    for cmd in &commands {
        let out = p.cmd().args(cmd).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{cmd:?} --help");
        assert!(!mentions_seed(&text), "`{cmd:?} --help` says seed:\n{text}");
    }
    let man = p.cmd().arg("man").output().unwrap();
    assert!(!mentions_seed(&String::from_utf8_lossy(&man.stdout)));

    // Messages are string literals in src/: none outside test code says "seed".
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") && !(file.ends_with("cli.rs") && line.starts_with("///")) {
                continue;
            }
            // Less a trailing comment (one outside any string).
            let line = match line.rfind(" // ") {
                Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
                _ => line,
            };
            // The part of the line from its first string literal (or a doc comment of the
            // command line, which is its help).
            let from = if line.starts_with("///") {
                0
            } else {
                line.find('"').unwrap_or(line.len())
            };
            if mentions_seed(&line[from..]) {
                found.push(format!("{}:{}: {line}", file.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "user-facing text says seed:\n{}",
        found.join("\n")
    );
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
