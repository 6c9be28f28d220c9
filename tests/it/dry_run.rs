//! `orchestrate --dry-run` over fixture projects of every kind of next step: it prints what
//! the planner would do for each task, and leaves every file of the project as it was (no
//! lock, no `.state`, no index, no worktree, nothing run).

use crate::harness::Project;
use std::collections::BTreeMap;
use std::path::Path;

const ALL: &[&str] = &[
    "SPEC.md",
    "DESIGN.md",
    "TEST_PLAN.md",
    "IMPLEMENTATION.md",
    "BUG_REPORT.md",
    "ADVERSARIAL_BUG_REPORT.md",
    "DOC_REVIEW.md",
];

fn verdict(word: &str) -> String {
    format!("# Verdict\n\nVerdict: {word}\n\n## Findings\n- None\n")
}

/// Every file and folder under `root` (dot-files included), with its bytes.
fn contents(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.insert(rel, None);
                stack.push(path);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn fixture() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Decomposition**: Yes\n",
    )
    .write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Approve before**: decomposition\n",
    )
    .write("tasks/fresh/TASK.md", "# Task\n\nBuild it\n")
    .write("tasks/gated/SPEC.md", "spec\n")
    .write("tasks/failed/VERDICT.md", verdict("FAIL"));
    for f in ALL {
        p.write(&format!("tasks/done/{f}"), "x\n");
        p.write(&format!("tasks/failed/{f}"), "x\n");
    }
    p.write("tasks/done/VERDICT.md", verdict("PASS"));
    // A decomposed task: `a` runs, `c` waits for it.
    p.write("tasks/p/SPEC.md", "spec\n").write(
        "tasks/p/DECOMPOSITION.md",
        "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n| a | 1 | - | 4k | - | Parse |\n| c | 2 | a | 4k | - | Use |\n",
    );
    p.write("tasks/p/subtasks/a/PARENT_SPEC.md", "scope a\n")
        .write("tasks/p/subtasks/c/PARENT_SPEC.md", "scope c\n");
    p
}

#[test]
fn dry_run_prints_the_planners_next_step_for_every_task_and_writes_nothing() {
    let p = fixture();
    let before = contents(p.path());
    let dry = |args: &[&str]| {
        p.orchestrate()
            .arg("--dry-run")
            .args(args.iter().copied())
            .stdout_any()
            .run()
            .stdout
    };
    assert_eq!(
        dry(&["--task", "tasks/fresh"]),
        "tasks/fresh: run research: state new: the research phase writes SPEC.md\n"
    );
    assert_eq!(
        dry(&["--task", "tasks/done"]),
        "tasks/done: none: complete\n"
    );
    let failed = dry(&["--task", "tasks/failed"]);
    assert!(
        failed.starts_with("tasks/failed: stop: ")
            && failed.ends_with("(a run stops here: exit 10)\n"),
        "{failed}"
    );
    let gated = dry(&["--task", "tasks/gated"]);
    assert!(
        gated.starts_with("tasks/gated: stop: tasks/gated waits for approval before decomposition")
            && gated.ends_with("(a run stops here: exit 20)\n"),
        "{gated}"
    );
    assert_eq!(
        dry(&["--task", "tasks/p"]),
        "tasks/p: subtasks: its sub-tasks run in waves (wave 1: a; wave 2: c)\n\
         tasks/p/subtasks/a: run research: state new: the research phase writes SPEC.md\n\
         tasks/p/subtasks/c: wait: it depends on a, which has not ended (new)\n"
    );
    // A sub-task named directly: what a run would refuse, with its exit code.
    assert_eq!(
        dry(&["--task", "tasks/p/subtasks/c"]),
        "tasks/p/subtasks/c: wait: tasks/p/subtasks/c may not start yet: it depends on a, \
         which has not ended (new); `automaton orchestrate --task tasks/p` drives its parent, \
         which starts it in turn (a run stops here: exit 29)\n"
    );
    // A description: the task a run would create, not created.
    assert_eq!(
        dry(&["Add a login page"]),
        "tasks/add-a-login-page: run research: a run creates this task from the description, \
         then runs its research\n"
    );
    // No task named: the one `orchestrate` would continue.
    assert!(dry(&[]).starts_with("tasks/p"), "the most advanced task");
    // `--json`: one `planned` event per task.
    let json = p
        .orchestrate()
        .args(["--dry-run", "--json", "--task", "tasks/p"])
        .stdout_any()
        .run()
        .raw_stdout;
    let events: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{json}");
    assert!(events.iter().all(|e| e["event"] == "planned"));
    assert_eq!(events[1]["task"], "tasks/p/subtasks/a");
    assert_eq!(events[1]["action"], "run");
    assert_eq!(events[1]["phase"], "research");
    assert_eq!(events[2]["action"], "wait");

    assert_eq!(contents(p.path()), before, "a dry run changed the project");
}

#[test]
fn with_nothing_a_run_would_drive_the_dry_run_says_what_each_task_waits_for() {
    let p = Project::new();
    p.write("tasks/failed/VERDICT.md", verdict("FAIL"));
    for f in ALL {
        p.write(&format!("tasks/done/{f}"), "x\n");
        p.write(&format!("tasks/failed/{f}"), "x\n");
    }
    p.write("tasks/done/VERDICT.md", verdict("PASS"));
    let before = contents(p.path());
    let out = p.orchestrate().arg("--dry-run").stdout_any().run().stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0], "tasks/done: none: complete");
    // A run that can drive no task stops at once as one where no task can go on (19),
    // whatever each task waits for; naming the failed task is what its own stop (10) needs.
    assert!(
        lines[1].starts_with("tasks/failed: stop: ")
            && lines[1].ends_with("(a run stops here: exit 19)"),
        "{out}"
    );
    assert_eq!(contents(p.path()), before, "a dry run changed the project");
    let named = p
        .orchestrate()
        .args(["--dry-run", "--task", "tasks/failed"])
        .stdout_any()
        .run()
        .stdout;
    assert!(named.ends_with("(a run stops here: exit 10)\n"), "{named}");
    // And the runs end as the dry runs said.
    p.orchestrate().status(19).stdout_any().stderr_any().run();
    p.orchestrate()
        .args(["--task", "tasks/failed"])
        .status(10)
        .stdout_any()
        .stderr_any()
        .run();

    // No task at all: said so, with the command that makes one.
    let empty = Project::new();
    empty
        .orchestrate()
        .arg("--dry-run")
        .stdout(
            "No tasks yet: a run would do nothing. Create one with:\n  automaton orchestrate \
             \"describe the task\"\n",
        )
        .run();
}

#[test]
fn a_dry_run_numbers_a_rework_round_as_it_counts() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Limits\n- **Rework**: 1\n",
    );
    for f in ALL {
        p.write(&format!("tasks/a/{f}"), "x\n");
    }
    p.write("tasks/a/VERDICT.md", verdict("FAIL"));
    // A round a person asked for at the merge gate: it does not count against `Rework`.
    p.write(
        "tasks/a/logs/rework/1/FINDINGS.md",
        "# Rework round 1\n\n- **Cause**: rejected_at_merge: greet in French\n\n## Findings\n\ngreet in French\n",
    );
    let out = p
        .orchestrate()
        .args(["--dry-run", "--task", "tasks/a"])
        .stdout_any()
        .run()
        .stdout;
    assert!(
        out.contains("rework round 1 of 1 (`- **Rework**`)"),
        "{out}"
    );
}

/// A task an earlier run stopped (its agent failed): a run that names it clears the stop and
/// tries the phase again, so the dry run of that command line says the phase runs; a run that
/// names no task drives none and stops at once (exit 19), as its dry run says.
#[test]
fn a_dry_run_of_a_stopped_task_says_what_the_same_command_line_does() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Limits\n- **Retries**: 0\n",
    )
    .write("tasks/a/SPEC.md", "# Spec\nadd two numbers\n");
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .behavior("design=exit3")
        .status(12)
        .stdout_any()
        .stderr_any()
        .run();
    let before = contents(p.path());
    let named = p
        .orchestrate()
        .args(["--dry-run", "--task", "tasks/a"])
        .stdout_any()
        .run()
        .stdout;
    assert!(named.starts_with("tasks/a: run design: "), "{named}");
    let plain = p.orchestrate().arg("--dry-run").stdout_any().run().stdout;
    assert!(
        plain.starts_with("tasks/a: stop: ") && plain.ends_with("(a run stops here: exit 19)\n"),
        "{plain}"
    );
    assert_eq!(contents(p.path()), before, "a dry run changed the project");
    p.orchestrate().status(19).stdout_any().stderr_any().run();
    p.orchestrate()
        .args(["--task", "tasks/a"])
        .stdout_any()
        .stderr_contains("↻ tasks/a: retrying after: ")
        .stderr_contains("▶ tasks/a: design (attempt 2)")
        .run();
    assert_eq!(p.state_of("tasks/a"), "complete");
}

/// A task named as a shell completes it (`./tasks/x`) or by its absolute path inside the
/// project is the same task; an absolute path outside the project, or one of the project
/// outside its task folders, is refused naming it.
#[test]
fn a_task_named_by_a_dot_or_an_absolute_path_is_found() {
    let p = Project::new();
    p.write("tasks/fresh/TASK.md", "# Task\n\nBuild it\n");
    let want = "tasks/fresh: run research: state new: the research phase writes SPEC.md\n";
    let abs = p.join("tasks/fresh").display().to_string();
    for named in ["./tasks/fresh", abs.as_str()] {
        p.orchestrate()
            .args(["--dry-run", "--task", named])
            .stdout(want)
            .run();
    }
    let outside = p.home().display().to_string();
    p.orchestrate()
        .args(["--dry-run", "--task", &outside])
        .status(1)
        .stderr_contains("is not inside the project")
        .run();
    // A path of the project that is no task folder is refused, not read as the bare name
    // `fresh` (which would be tasks/fresh).
    let not_a_task = p.join("fresh").display().to_string();
    p.orchestrate()
        .args(["--dry-run", "--task", &not_a_task])
        .status(1)
        .stderr_contains("is not a task folder")
        .run();
}

/// A VERDICT.md with no content is no verdict: the referee runs again, and the verify command
/// is not run on it as if it said PASS (it ran, and `.state` said complete a moment).
#[test]
fn an_empty_verdict_is_no_pass_to_verify() {
    let p = Project::new();
    let ran = p.join("verify-ran");
    p.write(
        ".automaton/.agent.md",
        format!(
            "## Agent\n- **Verify command**: echo ran >> {}\n",
            ran.display()
        ),
    );
    for f in ALL {
        p.write(&format!("tasks/blank/{f}"), "x\n");
    }
    p.write("tasks/blank/VERDICT.md", "");
    p.orchestrate()
        .args(["--dry-run", "--task", "tasks/blank"])
        .stdout_regex(r"^tasks/blank: run referee: ")
        .run();
    p.orchestrate()
        .args(["--task", "tasks/blank"])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of("tasks/blank"), "complete");
    assert_eq!(
        p.read("verify-ran"),
        "ran\n",
        "verified once, after the referee's PASS"
    );
}
