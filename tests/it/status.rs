//! `automaton status`, `task create` and `config` against real folders.

use crate::harness::{Project, Test, task_of, walk};

const DECOMP: &str = "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| a | 1 | - | 6k |\n| b | 1 | - | 6k |\n| c | 2 | a | 8k |\n";

/// Every state: each artifact stage, whitespace, PASS/FAIL/malformed verdicts, a parent with a
/// failed, a running, an orphan and a missing sub-task, and a hidden root.
pub fn fixture() -> Project {
    let p = Project::new();
    p.mkdir("tasks/empty")
        .write("tasks/spec-only/SPEC.md", "# Spec\n")
        .write("tasks/designed/SPEC.md", "x")
        .write("tasks/designed/DESIGN.md", "x")
        .write("tasks/whitespace/SPEC.md", "x")
        .write("tasks/whitespace/DESIGN.md", " \n\t\n")
        .write("tasks/implemented/IMPLEMENTATION.md", "x")
        .write("tasks/reviewed/DOC_REVIEW.md", "x")
        .write("tasks/passed/VERDICT.md", "**Verdict**: PASS\n")
        .write("tasks/failed/SPEC.md", "spec")
        .write("tasks/failed/VERDICT.md", "# Referee verdict: FAIL\n\n## Findings\n- login-race: two logins\n- null-deref: crash\n- null-deref: another crash\n")
        .write("tasks/malformed/VERDICT.md", "Verdict: PASS\nVerdict: FAIL\n")
        .write("tasks/parent/SPEC.md", "x")
        .write("tasks/parent/DECOMPOSITION.md", DECOMP)
        .write("tasks/parent/subtasks/a/VERDICT.md", "Verdict: FAIL\n")
        .write("tasks/parent/subtasks/b/IMPLEMENTATION.md", "x")
        .write("tasks/parent/subtasks/old/SPEC.md", "x")
        .write(".automaton/tasks/hidden-root/SPEC.md", "x");
    p
}

#[test]
fn json_reports_every_state_as_designed() {
    let p = fixture();
    let doc = p.status_json();
    assert_eq!(doc["version"], 1);
    let get = |path: &str| task_of(&doc, path);
    let expect = [
        ("tasks/empty", "new", "research"),
        ("tasks/spec-only", "design", "design"),
        ("tasks/designed", "test_design", "test_design"),
        ("tasks/whitespace", "design", "design"),
        ("tasks/implemented", "bug_find", "bug_find"),
        ("tasks/reviewed", "referee", "referee"),
        ("tasks/passed", "complete", "none"),
        ("tasks/failed", "human_intervention", "human"),
        ("tasks/malformed", "human_intervention", "human"),
        ("tasks/parent", "decomposition", "subtasks"),
        ("tasks/parent/subtasks/a", "human_intervention", "human"),
        ("tasks/parent/subtasks/b", "bug_find", "bug_find"),
        (".automaton/tasks/hidden-root", "design", "design"),
    ];
    for (path, state, next) in expect {
        let t = get(path);
        assert_eq!(
            (
                t["state"].as_str().unwrap(),
                t["next_step"].as_str().unwrap()
            ),
            (state, next),
            "{path}: {t:#}"
        );
    }
    assert_eq!(
        get("tasks/whitespace")["artifacts"],
        serde_json::json!(["SPEC.md"])
    );
    assert_eq!(get("tasks/parent/subtasks/b")["parent"], "tasks/parent");
    assert!(get("tasks/empty")["parent"].is_null());
    assert!(
        get("tasks/malformed")["reason"]
            .as_str()
            .unwrap()
            .contains("more than one verdict word")
    );
    assert!(get("tasks/passed")["command"].is_null());
    assert_eq!(
        get("tasks/empty")["command"],
        "automaton orchestrate --task tasks/empty"
    );
    // The parent: waits on b, c is blocked by a (FAIL), old is an orphan, c's folder is missing.
    let sub = &get("tasks/parent")["subtasks"];
    assert_eq!(sub["waiting_on"], serde_json::json!(["b"]));
    assert_eq!(
        sub["blocked"],
        serde_json::json!([{"name": "c", "by": "a"}])
    );
    assert_eq!(sub["orphans"], serde_json::json!(["old"]));
    assert_eq!(sub["missing"], serde_json::json!(["c"]));
    assert_eq!(sub["waves"], serde_json::json!([["a", "b"], ["c"]]));
    assert_eq!(sub["counts"]["fail"], 1);
    assert_eq!(get("tasks/parent/subtasks/b")["wave"], 1);
    // Fix tasks manual mode would create, named as the seed says.
    let fixes: Vec<&str> = get("tasks/failed")["fix_tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        fixes,
        vec![
            "tasks/failed-fix-login-race",
            "tasks/failed-fix-null-deref",
            "tasks/failed-fix-null-deref-2"
        ]
    );
    assert_eq!(
        get("tasks/parent/subtasks/a")["fix_tasks"][0]["path"],
        "tasks/parent-fix-a"
    );
}

#[test]
fn text_report_has_the_seed_shape_and_changes_nothing() {
    let p = fixture();
    let before = walk(p.path());
    let out = p.status_text();
    for part in [
        "**Task: tasks/failed**\n- **Status**: Human Intervention (state `human_intervention`)\n- **Next Step**: Human decision\n- **Auto-Execute**: YES\n- **Command**:\n  automaton orchestrate --manual\n- **Waiting for**: a person (decide on the verdict)\n",
        "⚠️ **HUMAN INTERVENTION REQUIRED**: tasks/failed: referee verdict is FAIL (tasks/failed/VERDICT.md); `automaton orchestrate --manual` creates its fix tasks; once they are complete, `automaton orchestrate --task tasks/failed --referee-again` runs its referee again\n",
        "**Tasks manual mode creates from tasks/failed** (`automaton orchestrate --manual`):\n- **tasks/failed-fix-login-race** — starts at Bug Find",
        "**Task: tasks/parent**\n- **Status**: Decomposition done; next: its sub-tasks (state `decomposition`)\n- **Next Step**: Sub-tasks (waiting on b)",
        "- **Sub-tasks**: PASS: 0, FAIL: 1, NEEDS_REVIEW: 0, BLOCKED: 1, PENDING: 1",
        "**Task: tasks/spec-only**\n- **Status**: Research done; next: design\n- **Next Step**: Design",
    ] {
        assert!(out.contains(part), "missing {part:?} in\n{out}");
    }
    // The whole report, exactly (tests/it/snapshots/).
    insta::assert_snapshot!("status_text", out);
    assert_eq!(
        before,
        walk(p.path()),
        "status must not create or change files"
    );
}

#[test]
fn empty_project_and_missing_project() {
    let p = Test::new()
        .arg("status")
        .stdout("No tasks yet. Create one with:\n  automaton orchestrate \"describe the task\"\n")
        .run();
    assert_eq!(p.status_json()["tasks"], serde_json::json!([]));
    Test::new()
        .no_project_flag()
        .args(["--project", "/nonexistent/place", "status"])
        .status(1)
        .stderr("error: project folder /nonexistent/place does not exist\n")
        .run();
    p.test()
        .arg("stauts")
        .status(2)
        .stderr(
            "error: unrecognized subcommand 'stauts'\n\n  tip: a similar subcommand exists: 'status'\n\n\
             Usage: automaton [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n",
        )
        .run();
}

/// A tree big enough to be walked by several threads (each takes 128 top-level tasks): a
/// second link to a task another thread walks is skipped with a warning, as on one thread,
/// not listed twice.
#[test]
fn a_second_link_across_parallel_parts_is_skipped_once() {
    let p = Project::new();
    for i in 1..=300 {
        p.write(&format!("tasks/t{i:03}/SPEC.md"), "x");
    }
    p.write("tasks/t010/subtasks/s1/SPEC.md", "x");
    std::fs::remove_dir_all(p.join("tasks/t290")).unwrap();
    std::os::unix::fs::symlink("t010", p.join("tasks/t290")).unwrap();
    let out = p
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .stderr(
            "warning: tasks/t290: symlink loop or second link to a task already seen; skipped\n",
        )
        .run();
    let doc = out.json();
    let rels: Vec<&str> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        rels.len(),
        299 + 1,
        "299 top-level tasks and t010's sub-task"
    );
    assert!(!rels.iter().any(|r| r.starts_with("tasks/t290")));
    assert!(rels.contains(&"tasks/t010/subtasks/s1"));
}

#[test]
fn bad_input_is_a_warning_naming_the_path() {
    use std::os::unix::ffi::OsStrExt;
    let p = Project::new();
    p.write("tasks/ok/SPEC.md", "x")
        .write("tasks/notes.txt", "stray")
        .write("tasks/badstate/.state", "finished\n")
        .write("tasks/binary/SPEC.md", [0xff, 0xfe, 0x00, 0x41])
        .mkdir("tasks/looped/subtasks");
    // A symlink loop: a sub-task that links back to its parent.
    std::os::unix::fs::symlink(
        p.join("tasks/looped"),
        p.join("tasks/looped/subtasks/again"),
    )
    .unwrap();
    // A dangling link (an unreadable folder, as far as the walk can tell).
    std::os::unix::fs::symlink(p.join("nowhere"), p.join("tasks/dangling")).unwrap();
    // A non-UTF-8 folder name.
    let bad = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
    std::fs::create_dir(p.join("tasks").join(bad)).unwrap();
    // A 50 MB VERDICT.md whose verdict line comes first.
    let mut big = b"Verdict: PASS\n".to_vec();
    big.resize(50 * 1024 * 1024, b'x');
    p.write("tasks/huge/VERDICT.md", &big);

    let out = p
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .stderr(
            "warning: tasks/bad-\u{fffd}-name: name is not UTF-8; skipped\n\
             warning: tasks/dangling: cannot read: No such file or directory (os error 2)\n\
             warning: tasks/notes.txt: stray file, not a task folder (ignored)\n\
             warning: tasks/badstate/.state: unknown state `finished` (ignored; the artifacts decide)\n\
             warning: tasks/binary/SPEC.md: not valid UTF-8\n\
             warning: tasks/huge/VERDICT.md: 52.4 MB; only the first 1024 KiB were read\n\
             warning: tasks/looped/subtasks/again: symlink loop or second link to a task already seen; skipped\n",
        )
        .run();
    let doc = out.json();
    let state = |path: &str| task_of(&doc, path)["state"].clone();
    assert_eq!(state("tasks/huge"), "complete");
    assert_eq!(state("tasks/binary"), "design");
    assert_eq!(state("tasks/badstate"), "new");
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 7);
}

#[test]
fn task_create_writes_state_and_refuses_escapes_and_duplicates() {
    let p = Test::new()
        .args(["task", "create", "auth"])
        .stdout("created tasks/auth (new)\n")
        .run();
    assert_eq!(p.read("tasks/auth/.state"), "new\n");
    p.test()
        .args(["task", "create", "auth/subtasks/login", "--at", "bug_find"])
        .stdout("created tasks/auth/subtasks/login (bug_find)\n")
        .run();
    assert_eq!(p.read("tasks/auth/subtasks/login/.state"), "bug_find\n");
    assert_eq!(p.state_of("tasks/auth/subtasks/login"), "bug_find");
    p.test()
        .args(["task", "create", ".automaton/tasks/deep/subtasks/x"])
        .stdout("created .automaton/tasks/deep/subtasks/x (new)\n")
        .run();
    assert!(p.join(".automaton/tasks/deep/subtasks/x/.state").is_file());
    p.test()
        .args(["task", "create", "auth"])
        .status(1)
        .stderr("error: task tasks/auth already exists\n")
        .run();
    for (bad, why) in [
        (
            "../escape",
            "`../escape` must not contain `..`, `.` or empty parts",
        ),
        (
            "/etc/x",
            "`/etc/x` is not inside the project [PROJECT]: name a task folder of it \
             (`tasks/<name>`)",
        ),
        (
            "tasks/../../x",
            "`tasks/../../x` must not contain `..`, `.` or empty parts",
        ),
        (
            "Add Auth",
            "`Add Auth` is not a kebab-case task name (try `add-auth`)",
        ),
        (
            "a/b",
            "`a/b`: sub-tasks live under `<task>/subtasks/<name>`, found `b`",
        ),
    ] {
        p.test()
            .args(["task", "create", bad])
            .status(1)
            .stderr(format!("error: {why}\n"))
            .run();
    }
    p.test()
        .args(["task", "create", "x", "--at", "done"])
        .status(1)
        .stderr(
            "error: unknown state `done`; one of: new, decomposition, design, test_design, \
             implement, bug_find, adversarial_bug_find, doc_review, referee, complete, \
             human_intervention\n",
        )
        .run();
    assert!(!p.join("tasks/x").exists());
    // No temp files left behind by the atomic writes.
    let leftovers: Vec<_> = std::fs::read_dir(p.join("tasks/auth"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".automaton-tmp")
        })
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn config_shows_origins_and_names_bad_values() {
    let p = Test::new()
        .config("# Config\n\n## Limits\n- **Max iterations**: 4\n")
        .arg("config")
        .stdout_any()
        .run();
    for part in [
        "Max iterations                 4",
        ".automaton/config.md:4",
        "Jobs                           4                        # default",
    ] {
        assert!(p.stdout.contains(part), "missing {part:?} in\n{}", p.stdout);
    }
    insta::assert_snapshot!("config_with_project_value", p.stdout);
    let json = p
        .test()
        .args(["config", "--json"])
        .stdout_any()
        .run()
        .json();
    assert!(
        json["settings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "limits.max_iterations" && s["value"] == "4")
    );
    p.write(
        ".automaton/config.md",
        "## VRAM Configuration\n- **Headroom**: lots\n",
    );
    // Issue 15: `status` still runs and shows the error at its line; `orchestrate` refuses.
    p.test()
        .arg("status")
        .stdout("No tasks yet. Create one with:\n  automaton orchestrate \"describe the task\"\n")
        .stderr(
            "warning: [PROJECT]/.automaton/config.md:2: `Headroom`: expected a percentage like 25% \
             (0-99%), not `lots` (orchestrate refuses to run until it is fixed)\n",
        )
        .run();
    p.orchestrate()
        .arg("x")
        .status(1)
        .stderr(
            "error: [PROJECT]/.automaton/config.md:2: `Headroom`: expected a percentage like 25% \
             (0-99%), not `lots`\n",
        )
        .run();
    p.write(".automaton/config.md", "## Limits\n- **Colour**: red\n");
    p.test()
        .arg("config")
        .stdout_any()
        .stderr(
            "warning: [PROJECT]/.automaton/config.md:2: unknown key `Colour` in section `Limits` \
             (ignored)\n",
        )
        .run();
}
