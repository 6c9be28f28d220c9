//! Errors at the edges: a reader that closes stdout early (exit 0, no panic), environment knobs
//! in the settings registry (`config` shows them; a bad value is an error naming the variable).

mod common;
use common::Project;
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
        .env("HOME", p.home.path())
        .env("AUTOMATON_HOME", p.home.path().join(".automaton"))
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
