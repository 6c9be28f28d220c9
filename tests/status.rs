//! `automaton status`, `task create` and `config` against real folders.

mod common;
use common::Project;
use predicates::prelude::*;

const DECOMP: &str = "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n| a | 1 | - | 6k |\n| b | 1 | - | 6k |\n| c | 2 | a | 8k |\n";

fn fixture() -> Project {
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
    let tasks = doc["tasks"].as_array().unwrap();
    let get = |path: &str| {
        tasks
            .iter()
            .find(|t| t["path"] == path)
            .unwrap_or_else(|| panic!("{path}"))
    };
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
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("**Task: tasks/failed**\n- **Status**: Human Intervention (state `human_intervention`)\n- **Next Step**: Human decision\n- **Auto-Execute**: YES\n- **Command**:\n  automaton orchestrate --manual\n"))
        .stdout(predicate::str::contains("⚠️ **HUMAN INTERVENTION REQUIRED**: referee verdict is FAIL"))
        .stdout(predicate::str::contains("**Tasks manual mode creates from tasks/failed** (`automaton orchestrate --manual`):\n- **tasks/failed-fix-login-race** — starts at Bug Find"))
        .stdout(predicate::str::contains("**Task: tasks/parent**\n- **Status**: Decomposition (state `decomposition`)\n- **Next Step**: Sub-tasks (waiting on b)"))
        .stdout(predicate::str::contains("- **Sub-tasks**: PASS: 0, FAIL: 1, NEEDS_REVIEW: 0, BLOCKED: 1, PENDING: 1"))
        .stdout(predicate::str::contains("**Task: tasks/spec-only**\n- **Status**: Research (state `design`)\n- **Next Step**: Design"));
    assert_eq!(
        before,
        walk(p.path()),
        "status must not create or change files"
    );
}

fn walk(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push((e.path().display().to_string(), m.len()));
        }
    }
    out.sort();
    out
}

#[test]
fn empty_project_and_missing_project() {
    let p = Project::new();
    p.cmd()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("No tasks yet"));
    assert_eq!(p.status_json()["tasks"], serde_json::json!([]));
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_automaton"))
        .args(["--project", "/nonexistent/place", "status"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "/nonexistent/place does not exist",
        ));
    p.cmd().arg("stauts").assert().code(2);
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
        .cmd()
        .args(["status", "--json"])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "tasks/notes.txt: stray file",
        "tasks/badstate/.state: unknown state `finished`",
        "tasks/binary/SPEC.md: not valid UTF-8",
        "tasks/looped/subtasks/again: symlink loop",
        "tasks/dangling: cannot read",
        "name is not UTF-8",
        "tasks/huge/VERDICT.md: 52.4 MB; only the first 1024 KiB were read",
    ] {
        assert!(
            err.contains(needle),
            "missing warning {needle:?} in:\n{err}"
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let state = |path: &str| {
        doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["path"] == path)
            .map(|t| t["state"].clone())
    };
    assert_eq!(state("tasks/huge").unwrap(), "complete");
    assert_eq!(state("tasks/binary").unwrap(), "design");
    assert_eq!(state("tasks/badstate").unwrap(), "new");
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 7);
}

#[test]
fn task_create_writes_state_and_refuses_escapes_and_duplicates() {
    let p = Project::new();
    p.cmd().args(["task", "create", "auth"]).assert().success();
    assert_eq!(p.read("tasks/auth/.state"), "new\n");
    p.cmd()
        .args(["task", "create", "auth/subtasks/login", "--at", "bug_find"])
        .assert()
        .success();
    assert_eq!(p.read("tasks/auth/subtasks/login/.state"), "bug_find\n");
    assert_eq!(p.state_of("tasks/auth/subtasks/login"), "bug_find");
    p.cmd()
        .args(["task", "create", ".automaton/tasks/deep/subtasks/x"])
        .assert()
        .success();
    assert!(p.join(".automaton/tasks/deep/subtasks/x/.state").is_file());
    p.cmd()
        .args(["task", "create", "auth"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("tasks/auth already exists"));
    for bad in ["../escape", "/etc/x", "tasks/../../x", "Add Auth", "a/b"] {
        p.cmd().args(["task", "create", bad]).assert().code(1);
    }
    p.cmd()
        .args(["task", "create", "x", "--at", "done"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown state `done`"));
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
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Limits\n- **Max iterations**: 4\n",
    );
    p.cmd()
        .arg("config")
        .assert()
        .success()
        .stdout(predicate::str::contains("Max iterations                 4"))
        .stdout(predicate::str::contains(".automaton/config.md:4"))
        .stdout(predicate::str::contains(
            "Jobs                           4                        # default",
        ));
    let json: serde_json::Value =
        serde_json::from_slice(&p.cmd().args(["config", "--json"]).output().unwrap().stdout)
            .unwrap();
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
    p.cmd()
        .arg("status")
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "config.md:2: `Headroom`: expected a percentage",
        ));
    p.orchestrate()
        .arg("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "config.md:2: `Headroom`: expected a percentage",
        ));
    p.write(".automaton/config.md", "## Limits\n- **Colour**: red\n");
    p.cmd()
        .arg("config")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "config.md:2: unknown key `Colour` in section `Limits`",
        ));
}
