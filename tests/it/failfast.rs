//! Fail fast on what cannot change (issue 29 items 7 and 12): an empty, blank or reserved
//! request is a usage error, the preflight names a missing agent script, an agent exit of
//! 126/127 or the same error twice stops at once with the agent's own words on screen, a
//! non-UTF-8 argument is named (never a panic), and a plan names every error of its table and
//! is refused over its size cap. Each drives the real binary over a real folder.

use crate::harness::Project;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Every file under the project with its content (to prove a run wrote nothing).
fn files(p: &Project) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![p.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(p.path()).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A project with one unrelated task one phase from done: what `continue` would drive.
fn project_with_other_task() -> Project {
    let p = Project::new();
    p.test()
        .args(["task", "create", "other", "--at", "referee"])
        .stdout("created tasks/other (referee)\n")
        .run();
    p
}

const EMPTY: &str = "error: the task description is empty: describe the task (`automaton \
                     orchestrate \"add user auth\"`), or run `automaton continue` (or `automaton \
                     orchestrate` with no description) to continue the most advanced unfinished \
                     task\n";

#[test]
fn an_empty_or_blank_request_is_a_usage_error_and_drives_nothing() {
    let p = project_with_other_task();
    let before = files(&p);
    for desc in ["", "   ", "\t\n"] {
        p.orchestrate()
            .agent_log()
            .arg(desc)
            .status(2)
            .stderr(EMPTY)
            .run();
        assert_eq!(files(&p), before, "{desc:?} wrote something");
    }
    // As JSON: the same error, as one object on stdout.
    let ran = p
        .orchestrate()
        .args(["--json", ""])
        .status(2)
        .stdout_any()
        .run();
    assert_eq!(ran.json()["exit_code"], 2);
    assert_eq!(p.read("tasks/other/.state"), "referee\n");
    assert!(!p.join("agent.log").exists(), "an agent ran");
}

#[test]
fn continue_is_a_command_word_never_a_task_name() {
    let p = project_with_other_task();
    let before = files(&p);
    for desc in ["continue", "Continue!"] {
        p.orchestrate()
            .agent_log()
            .arg(desc)
            .status(2)
            .stderr(format!(
                "error: `{desc}` is a command, not a task: run `automaton continue` (or \
                 `automaton orchestrate` with no description) to continue the most advanced \
                 unfinished task, or describe a new task in more words\n"
            ))
            .run();
    }
    for path in ["continue", "tasks/continue", ".automaton/tasks/continue"] {
        p.test()
            .args(["task", "create", path])
            .status(1)
            .stderr(
                "error: `continue` is a command word (`automaton continue`), not a task name: \
                 choose another name\n",
            )
            .run();
    }
    assert_eq!(files(&p), before);
    assert!(!p.join("tasks/continue").exists());
    // More words make a task as ever.
    p.test()
        .args(["task", "create", "continue-the-import"])
        .stdout("created tasks/continue-the-import (new)\n")
        .run();
}

#[test]
fn a_non_utf8_argument_is_named_never_a_panic() {
    let p = Project::new();
    p.mkdir("tasks");
    let bad = OsStr::from_bytes(b"tasks/a\xff");
    p.test()
        .args([OsStr::new("task"), OsStr::new("create"), bad])
        .status(2)
        .stderr(
            "error: argument 5 (\"tasks/a\\xFF\") is not valid UTF-8: task paths, descriptions \
             and values must be text (only the folder of --project/-C may be any bytes)\n",
        )
        .run();
    p.orchestrate()
        .arg(OsStr::from_bytes(b"add \xff"))
        .status(2)
        .stderr_contains("is not valid UTF-8")
        .stderr_lacks("panicked")
        .run();
    assert_eq!(files(&p), Vec::new());
    // A project folder is used as the path it is.
    let dir = OsStr::from_bytes(b"proj\xff");
    std::fs::create_dir_all(p.path().join(dir).join("tasks")).unwrap();
    p.test()
        .no_project_flag()
        .args([
            OsStr::new("--project"),
            dir,
            OsStr::new("task"),
            OsStr::new("create"),
            OsStr::new("b"),
        ])
        .stdout("created tasks/b (new)\n")
        .run();
    assert!(p.path().join(dir).join("tasks/b/.state").is_file());
    p.test()
        .no_project_flag()
        .args([OsStr::new("-C"), dir, OsStr::new("status")])
        .stdout_contains("**Task: tasks/b**")
        .run();
    // One that does not exist is named, not a panic.
    p.test()
        .no_project_flag()
        .args([
            OsStr::new("--project"),
            OsStr::from_bytes(b"\xfe"),
            OsStr::new("status"),
        ])
        .status(1)
        .stderr_contains("does not exist")
        .stderr_lacks("panicked")
        .run();
}
