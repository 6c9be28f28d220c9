//! Faults of the machine, not of the input: too few file descriptors, and a reader that goes
//! away. Each must name what failed, stop cleanly, and leave a project the next run completes.

use crate::harness::{Project, output_text};
use crate::isolation::git;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `inner` (a std Command of the binary) run under `ulimit -n limit`.
fn with_fd_limit(inner: &Command, limit: u32) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(r#"ulimit -n "$0" && exec "$@""#)
        .arg(limit.to_string())
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.current_dir(
        inner
            .get_current_dir()
            .expect("the harness sets the folder"),
    );
    c
}

/// With every file-descriptor limit from "cannot even start" to "enough", a run either
/// completes or fails with a message that says what it was doing ("cannot write X", "cannot
/// start the agent of T", "cannot run `git …`"), never a bare "Too many open files" and never
/// "not a git work tree"; and once the limit is back, every task it left completes.
#[test]
fn too_few_file_descriptors_are_named_and_the_rerun_completes() {
    let p = Project::new();
    p.write("README.md", "# demo\n");
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    let bare = regex::Regex::new(r"(?m)^\s*(error|warning)?:?\s*Too many open files").unwrap();
    let mut failed = 0;
    for limit in 6..=24 {
        let mut inner = p.orchestrate_std();
        inner.arg(format!("fault at {limit}"));
        let out = with_fd_limit(&inner, limit)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let text = output_text(&out);
        assert!(!text.contains("not a git"), "limit {limit}: {text}");
        if !out.status.success() {
            failed += 1;
            assert!(
                text.contains("Too many open files"),
                "limit {limit}: {:?}\n{text}",
                out.status
            );
            assert!(!bare.is_match(&text), "limit {limit}: unnamed\n{text}");
        }
    }
    assert!(
        failed > 0,
        "no limit was low enough to fail: the test tests nothing"
    );
    for entry in std::fs::read_dir(p.join("tasks")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        // A task folder is built under a dot-name and renamed into place whole; one whose
        // clean-up also ran out of descriptors stays dot-named (no task), for a later run to
        // sweep.
        if name.starts_with('.') {
            continue;
        }
        let task = format!("tasks/{name}");
        p.orchestrate_cmd().args(["--task", &task]).assert().code(0);
        assert_eq!(p.state_of(&task), "complete", "{task}");
    }
}

/// `automaton watch | head -1` on a project where nothing changes: watch ends soon after its
/// reader closes the pipe (it would otherwise wait for a change that may never come to find
/// out, keeping a pipeline in a script alive for ever).
#[test]
fn watch_ends_when_its_reader_goes_away_though_nothing_changes() {
    let p = Project::new();
    p.write("tasks/one/TASK.md", "# one\n");
    let mut child = p
        .command()
        .arg("watch")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(first.contains("tasks/one"), "{first}");
    drop(reader);
    // Generous for a loaded machine; without the check it never ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("watch still runs 30 s after its reader went away");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}
