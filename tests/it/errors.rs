//! Errors at the edges: a reader that closes stdout early (exit 0, no panic), environment knobs
//! in the settings registry (`config` shows them; a bad value is an error naming the variable).

use crate::harness::{Project, Test};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// A project with `n` new tasks, so `status` and `graph` print far more than a pipe buffer.
fn many_tasks(n: usize) -> Project {
    let p = Project::new();
    for i in 0..n {
        p.mkdir(&format!("tasks/task-{i:05}"));
    }
    p
}

/// The binary against `p`, as a std Command (for a hand-made stdout).
fn std_cmd(p: &Project, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_automaton"));
    c.arg("--project")
        .arg(p.path())
        .args(args)
        .env("HOME", p.home())
        .env("AUTOMATON_HOME", p.home().join(".automaton"))
        .env_remove("AUTOMATON_AGENT")
        .env_remove("AUTOMATON_VRAM_SCRIPT_TIMEOUT")
        .env_remove("ANTHROPIC_MODEL")
        .current_dir(p.path())
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Run with stdout a pipe whose reader takes one line and closes it; (exit code, stderr).
fn read_one_line_then_close(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let mut child = std_cmd(p, args).stdout(Stdio::piped()).spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    drop(reader);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run with stdout a pipe whose reader is closed before the command starts, so its first write
/// fails with EPIPE whatever the size of its output; (exit code, stderr).
fn into_closed_pipe(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std_cmd(p, args).stdout(writer).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_quiet_success(args: &[&str], (code, stderr): (Option<i32>, String)) {
    assert_eq!(code, Some(0), "{args:?}: stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    assert!(!stderr.contains("error"), "{args:?}: {stderr}");
}

#[test]
fn a_reader_that_closes_early_ends_every_command_with_exit_0() {
    let p = many_tasks(3000);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["graph"],
        &["graph", "--format", "dot"],
        &["config"],
        &["config", "--json"],
    ] {
        assert_quiet_success(args, read_one_line_then_close(&p, args));
    }
}

#[test]
fn a_pipe_closed_before_the_first_write_ends_every_command_with_exit_0() {
    let p = many_tasks(3);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["graph"],
        &["config"],
        &["config", "--json"],
        &["detect-vram"],
        &["detect-vram", "--human"],
        &["task", "create", "extra"],
    ] {
        assert_quiet_success(args, into_closed_pipe(&p, args));
    }
}

#[test]
fn a_bad_kill_grace_is_an_error_naming_the_variable() {
    let p = Project::new();
    let out = p
        .orchestrate_cmd()
        .arg("add a greeting")
        .env("AUTOMATON_KILL_GRACE", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: environment variable AUTOMATON_KILL_GRACE: expected a duration like 90s, 45m \
         or 24h, not `soon`\n"
    );
    assert!(out.stdout.is_empty());
    assert!(!p.join("tasks").exists(), "nothing was created");
    // Reports still run with a bad value (issue 15), and say so; orchestrate refuses (above).
    p.cmd()
        .arg("status")
        .env("AUTOMATON_CONTRACT_GRACE", "1 fortnight")
        .assert()
        .code(0)
        .stderr(
            "warning: environment variable AUTOMATON_CONTRACT_GRACE: expected a duration like \
             90s, 45m or 24h, not `1 fortnight` (orchestrate refuses to run until it is fixed)\n",
        );
}

/// A file's bad value is listed at its line and `config` goes on; a bad environment variable
/// has no line to be listed at: `config` refuses it as `orchestrate` does, naming it (exit 1),
/// and `--json` says so in its error object.
#[test]
fn config_refuses_a_bad_environment_value_naming_the_variable() {
    let message = "environment variable AUTOMATON_KILL_GRACE: expected a duration like 90s, \
                   45m or 24h, not `abc`";
    let p = Test::new()
        .arg("config")
        .env("AUTOMATON_KILL_GRACE", "abc")
        .status(1)
        .stderr(format!("error: {message}\n"))
        .run();
    let json = p
        .test()
        .args(["config", "--json"])
        .env("AUTOMATON_KILL_GRACE", "abc")
        .status(1)
        .stdout_any()
        .run()
        .json();
    assert_eq!(
        json,
        serde_json::json!({"event": "error", "error": message, "exit_code": 1})
    );
    p.test()
        .args(["orchestrate", "add a greeting"])
        .env("AUTOMATON_KILL_GRACE", "abc")
        .status(1)
        .stderr(format!("error: {message}\n"))
        .run();
    assert!(!p.join("tasks").exists(), "nothing was created");
    // The same variable with a good value is listed with its origin.
    p
        .test()
        .arg("config")
        .env("AUTOMATON_KILL_GRACE", "2s")
        .stdout_contains(
            "  AUTOMATON_KILL_GRACE           2s                       # env AUTOMATON_KILL_GRACE\n",
        )
        .run();
}

#[test]
fn config_shows_the_environment_knobs_and_their_origin() {
    let p = Project::new();
    let defaults = p
        .cmd()
        .arg("config")
        .env_remove("AUTOMATON_HOME")
        .output()
        .unwrap();
    let text = String::from_utf8(defaults.stdout).unwrap();
    let section = text
        .split_once("environment ## Variables\n")
        .unwrap_or_else(|| panic!("no environment section in\n{text}"))
        .1;
    assert_eq!(
        section,
        "  AUTOMATON_HOME                 ~/.automaton             # default\n\
         \x20 AUTOMATON_KILL_GRACE           5s                       # default\n\
         \x20 AUTOMATON_CONTRACT_GRACE       10s                      # default\n\
         \x20 AUTOMATON_WATCH_POLL           (unset)                  # default\n\
         \x20 AUTOMATON_NOTIFY_TIMEOUT       10s                      # default\n\
         \x20 AUTOMATON_VRAM_SCRIPT_TIMEOUT  10                       # default\n\
         \x20 AUTOMATON_TMUX_SOCKET          (unset)                  # default\n"
    );

    let home = p.home().join(".automaton").display().to_string();
    let out = p
        .cmd()
        .arg("config")
        .env("AUTOMATON_KILL_GRACE", "300ms")
        .env("AUTOMATON_CONTRACT_GRACE", "2s")
        .env("AUTOMATON_VRAM_SCRIPT_TIMEOUT", "0.5")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        format!(
            "  AUTOMATON_HOME                 {home:<24} # env AUTOMATON_HOME"
        ),
        "  AUTOMATON_KILL_GRACE           300ms                    # env AUTOMATON_KILL_GRACE"
            .to_string(),
        "  AUTOMATON_CONTRACT_GRACE       2s                       # env AUTOMATON_CONTRACT_GRACE"
            .to_string(),
        "  AUTOMATON_VRAM_SCRIPT_TIMEOUT  0.5                      # env AUTOMATON_VRAM_SCRIPT_TIMEOUT"
            .to_string(),
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
    }

    let json: serde_json::Value = serde_json::from_slice(
        &p.cmd()
            .args(["config", "--json"])
            .env("AUTOMATON_KILL_GRACE", "300ms")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let grace = json["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "env.kill_grace")
        .unwrap_or_else(|| panic!("no env.kill_grace in {json:#}"));
    assert_eq!(
        grace,
        &serde_json::json!({
            "id": "env.kill_grace",
            "file": "environment",
            "section": "Variables",
            "key": "AUTOMATON_KILL_GRACE",
            "value": "300ms",
            "origin": "env AUTOMATON_KILL_GRACE",
        })
    );
}

#[test]
fn a_task_folder_that_cannot_be_created_is_named() {
    let p = Project::new();
    p.write("tasks", "a file where the tasks folder should be");
    let out = p
        .cmd()
        .args(["task", "create", "auth/subtasks/login"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "error: cannot create {}: ",
        p.join("tasks/auth/subtasks").display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());
}
