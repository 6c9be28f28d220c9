//! automaton's own writes stay inside the project: a task folder, `tasks/`, `logs/`,
//! `subtasks/` or `.automaton/` that is a link to a folder outside is refused with its path
//! (exit 1) unless `- **Allow links out**: yes`, and a file automaton appends to (the journal,
//! `.state.approvals`, `.state.inputs`) that is a link is refused always. Nothing is written
//! outside. And a secret in a verify command is never printed, though the command runs with it.

use crate::harness::Project;
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Every file and folder under `dir` with its content (empty for a folder), to show that a
/// refused run left the outside untouched.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                todo.push(p.clone());
                out.insert(p, Vec::new());
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A folder outside the project, holding a task's SPEC.md at `a/SPEC.md` and a file `victim`.
fn outside() -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(out.path().join("a")).unwrap();
    std::fs::write(out.path().join("a/SPEC.md"), "Say hello.\n").unwrap();
    std::fs::write(out.path().join("victim"), "keep me\n").unwrap();
    out
}

/// `orchestrate --task tasks/a` on `p` is refused with exit 1 and `message` on stderr, and the
/// folder `out` is as it was.
fn refused(p: &Project, out: &Path, message: &str) {
    let before = tree(out);
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .status(1)
        .stdout_any()
        .stderr_contains(message)
        .run();
    assert_eq!(
        tree(out),
        before,
        "something was written outside the project"
    );
}

fn link_out(link: &str, target: &Path) -> String {
    format!(
        "[PROJECT]/{link} is a link to {}, outside the project [PROJECT]: automaton writes only \
         inside the project (`- **Allow links out**: yes` in config.md's `## Storage` allows it)",
        target.canonicalize().unwrap().display()
    )
}

#[test]
fn a_task_folder_linked_outside_is_refused() {
    let p = Project::new();
    let out = outside();
    p.mkdir("tasks");
    symlink(out.path().join("a"), p.join("tasks/a")).unwrap();
    refused(&p, out.path(), &link_out("tasks/a", &out.path().join("a")));
}

#[test]
fn a_tasks_folder_linked_outside_is_refused() {
    let p = Project::new();
    let out = outside();
    symlink(out.path(), p.join("tasks")).unwrap();
    refused(&p, out.path(), &link_out("tasks", out.path()));
}

#[test]
fn a_logs_folder_linked_outside_is_refused() {
    let p = Project::new();
    let out = outside();
    p.write("tasks/a/SPEC.md", "Say hello.\n");
    symlink(out.path(), p.join("tasks/a/logs")).unwrap();
    refused(&p, out.path(), &link_out("tasks/a/logs", out.path()));
}

#[test]
fn a_subtasks_folder_linked_outside_is_refused() {
    let p = Project::new();
    let out = outside();
    p.write("tasks/a/SPEC.md", "Say hello.\n");
    symlink(out.path(), p.join("tasks/a/subtasks")).unwrap();
    refused(&p, out.path(), &link_out("tasks/a/subtasks", out.path()));
}

#[test]
fn an_automaton_folder_linked_outside_is_refused() {
    let p = Project::new();
    let out = outside();
    p.write("tasks/a/SPEC.md", "Say hello.\n");
    symlink(out.path(), p.join(".automaton")).unwrap();
    refused(&p, out.path(), &link_out(".automaton", out.path()));
}

#[test]
fn appended_files_that_are_links_are_refused() {
    for file in ["logs/journal.jsonl", ".state.approvals", ".state.inputs"] {
        let p = Project::new();
        let out = outside();
        p.write("tasks/a/SPEC.md", "Say hello.\n");
        p.mkdir("tasks/a/logs");
        symlink(
            out.path().join("victim"),
            p.join(&format!("tasks/a/{file}")),
        )
        .unwrap();
        refused(
            &p,
            out.path(),
            &format!(
                "[PROJECT]/tasks/a/{file} is a link (to {}): automaton does not append through \
                 a link",
                out.path().join("victim").display()
            ),
        );
        assert_eq!(
            std::fs::read_to_string(out.path().join("victim")).unwrap(),
            "keep me\n"
        );
    }
}

#[test]
fn a_link_made_during_the_run_is_refused_at_the_append() {
    // The agent swaps `.state.inputs` for a link while it runs: the record after its phase
    // is refused there, and the file outside is untouched.
    let p = Project::new();
    let out = outside();
    p.write("tasks/a/SPEC.md", "Say hello.\n");
    let victim = out.path().join("victim");
    let before = tree(out.path());
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .env(
            "AGENT_IMPLEMENT",
            format!(
                "ln -sf '{}' \"$AUTOMATON_TASK_DIR/.state.inputs\"",
                victim.display()
            ),
        )
        .status(1)
        .stdout_any()
        .stderr_contains(format!(
            "[PROJECT]/tasks/a/.state.inputs is a link (to {})",
            victim.display()
        ))
        .run();
    assert_eq!(tree(out.path()), before);
}

#[test]
fn approve_refuses_an_approvals_record_that_is_a_link() {
    let p = Project::new();
    let out = outside();
    p.write("tasks/a/SPEC.md", "Say hello.\n");
    p.write("tasks/a/RESEARCH.md", "Findings.\n");
    p.write("tasks/a/.state", "design\n");
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Approve before**: design\n",
    );
    symlink(
        out.path().join("victim"),
        p.join("tasks/a/.state.approvals"),
    )
    .unwrap();
    let before = tree(out.path());
    p.test()
        .args(["approve", "tasks/a"])
        .status(1)
        .stdout_any()
        .stderr_contains("[PROJECT]/tasks/a/.state.approvals is a link (to ")
        .run();
    assert_eq!(tree(out.path()), before);
}

#[test]
fn links_out_run_when_allowed_and_links_inside_always() {
    // Allowed: the task folder outside gets the task's files.
    let p = Project::new();
    let out = outside();
    p.write(
        ".automaton/config.md",
        "## Storage\n- **Allow links out**: yes\n",
    );
    p.mkdir("tasks");
    symlink(out.path().join("a"), p.join("tasks/a")).unwrap();
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .stdout_contains("ORCHESTRATION_COMPLETE")
        .stderr_any()
        .run();
    assert_eq!(p.state_of("tasks/a"), "complete");
    assert!(out.path().join("a/VERDICT.md").is_file());
    assert!(out.path().join("a/logs/journal.jsonl").is_file());
    p.test()
        .args(["config"])
        .stdout_contains("Allow links out")
        .stderr_any()
        .run();

    // A link that stays inside the project needs nothing allowed.
    let p = Project::new();
    p.write("elsewhere/a/SPEC.md", "Say hello.\n");
    p.mkdir("tasks");
    symlink(p.join("elsewhere/a"), p.join("tasks/a")).unwrap();
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .stdout_contains("ORCHESTRATION_COMPLETE")
        .stderr_any()
        .run();
    assert!(p.join("elsewhere/a/VERDICT.md").is_file());
}

/// Every file under `dir`, read as text (lossily).
fn all_text(dir: &Path) -> Vec<(PathBuf, String)> {
    tree(dir)
        .into_iter()
        .map(|(p, bytes)| (p, String::from_utf8_lossy(&bytes).into_owned()))
        .collect()
}

#[test]
fn a_secret_in_the_verify_command_is_never_printed_but_the_command_gets_it() {
    let p = Project::new();
    // It records that it ran with the real value, and passes.
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Verify command**: API_KEY=sk-secret123 sh -c 'test \"$API_KEY\" = \
         sk-secret123 && echo ran > \"$AUTOMATON_TASK_DIR/verify-saw-key\"'\n- **Notify \
         command**: cat >> notified.jsonl\n",
    );
    let ran = p
        .orchestrate()
        .args(["--json", "keyed"])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.read("tasks/keyed/verify-saw-key"), "ran\n");
    assert!(ran.raw_stdout.contains("API_KEY=***"), "{}", ran.stdout);
    assert!(!ran.raw_stdout.contains("sk-secret123"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("sk-secret123"), "{}", ran.stderr);
    for (file, text) in all_text(&p.join("tasks/keyed/logs")) {
        assert!(!text.contains("sk-secret123"), "{}: {text}", file.display());
    }

    // Failing: the stop reason (in `.stop`, stdout, stderr and the notify payload) shows the
    // command as `config` does.
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "## Agent\n- **Verify command**: API_KEY=sk-secret123 sh -c 'exit 3'\n- **Notify \
         command**: cat >> notified.jsonl\n",
    );
    let ran = p
        .orchestrate()
        .args(["keyed"])
        .status(17)
        .stdout_contains("verify command `API_KEY=*** sh -c 'exit 3'` failed")
        .stderr_any()
        .run();
    assert!(!ran.stdout.contains("sk-secret123"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("sk-secret123"), "{}", ran.stderr);
    let notified = p.read("notified.jsonl");
    assert!(notified.contains("API_KEY=***"), "{notified}");
    assert!(!notified.contains("sk-secret123"), "{notified}");
    for (file, text) in all_text(&p.join("tasks/keyed")) {
        assert!(!text.contains("sk-secret123"), "{}: {text}", file.display());
    }
    p.test()
        .args(["config"])
        .stdout_contains("API_KEY=***")
        .stderr_any()
        .run();
}
