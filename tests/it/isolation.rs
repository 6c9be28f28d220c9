//! Worktree isolation in real git repositories with the scripted agent: parallel sub-tasks in
//! their own worktrees, merge-back into the integration branch, conflicts, the integration
//! gate, `merge` and `clean`, a monorepo sub-folder, and a project that is not a repository.
//!
//! automaton runs with no git identity configured anywhere (an empty global config), so every
//! commit it makes proves it works on such a machine.

use crate::harness::Project;
use std::path::Path;
use std::process::Command;

const PARENT: &str = "tasks/p";

/// A DECOMPOSITION.md from rows of (name, wave, depends on).
pub(crate) fn plan(rows: &[(&str, u32, &str)]) -> String {
    let mut s = String::from(
        "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n",
    );
    for (name, wave, deps) in rows {
        s.push_str(&format!(
            "| {name} | {wave} | {deps} | 4k | - | do {name} |\n"
        ));
    }
    s
}

/// git in `dir` with a test identity; its trimmed stdout, panicking on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub(crate) fn git_ok(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .status()
        .unwrap()
        .success()
}

/// A project that is a git repository with one commit (README.md, shared.txt), sub-tasks
/// without the optional design phases.
fn repo_project() -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write("shared.txt", "base\n")
        .write(
            ".automaton/config.md",
            "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
        );
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md", "shared.txt"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

/// The environment of a run with the scripted agent: a plan, code for the implement phase,
/// no git identity.
pub(crate) fn envs(p: &Project, decomposition: &str, implement: &str) -> Vec<(String, String)> {
    let empty = p.home().join("empty-gitconfig");
    std::fs::write(&empty, "").unwrap();
    [
        ("AGENT_LOG", p.join("agent.log").display().to_string()),
        ("AGENT_DECOMPOSITION", decomposition.to_string()),
        ("AGENT_BEHAVIOR", "p:research=decompose".to_string()),
        ("AGENT_IMPLEMENT", implement.to_string()),
        ("GIT_CONFIG_GLOBAL", empty.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `orchestrate p --jobs 4` with [`envs`].
pub(crate) fn run(p: &Project, decomposition: &str, implement: &str) -> assert_cmd::Command {
    let mut c = p.orchestrate_cmd();
    c.envs(envs(p, decomposition, implement))
        .args(["--jobs", "4"]);
    c
}

/// (task, phase, start, end) of each recorded agent run.
fn records(p: &Project) -> Vec<(String, String, u128, u128)> {
    std::fs::read_to_string(p.join("agent.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

fn span(recs: &[(String, String, u128, u128)], task: &str) -> (u128, u128) {
    let mine: Vec<_> = recs.iter().filter(|r| r.0 == task).collect();
    assert!(!mine.is_empty(), "{task} never ran");
    (
        mine.iter().map(|r| r.2).min().unwrap(),
        mine.iter().map(|r| r.3).max().unwrap(),
    )
}

fn task<'a>(doc: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == path)
        .unwrap_or_else(|| panic!("no {path}"))
}

const RECORD_WORK: &str = r#"echo "$name" > "$name.txt"; ls *.txt | tr '\n' ' ' > "$AUTOMATON_TASK_DIR/seen.txt"; pwd -P > "$AUTOMATON_TASK_DIR/cwd.txt"; echo "$AUTOMATON_BRANCH" > "$AUTOMATON_TASK_DIR/branch.txt""#;

#[test]
fn parallel_subtasks_work_in_their_own_worktrees_and_merge_into_the_integration_branch() {
    let p = repo_project();
    let root = p.path();
    let base = git(root, &["rev-parse", "HEAD"]);
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-"), ("c", 2, "a, b")]);
    run(&p, &decomposition, RECORD_WORK)
        .arg("p")
        .assert()
        .success();

    // Wave 1 ran at once, each in its own worktree on its own branch.
    let recs = records(&p);
    let (a, b) = (
        span(&recs, "tasks/p/subtasks/a"),
        span(&recs, "tasks/p/subtasks/b"),
    );
    assert!(a.0 < b.1 && b.0 < a.1, "a and b overlap: {a:?} {b:?}");
    let worktrees = root.canonicalize().unwrap().join(".automaton/worktrees");
    for name in ["a", "b", "c"] {
        let dir = format!("{PARENT}/subtasks/{name}");
        assert_eq!(
            p.read(&format!("{dir}/cwd.txt")).trim(),
            worktrees.join(format!("p--{name}")).display().to_string()
        );
        assert_eq!(
            p.read(&format!("{dir}/branch.txt")).trim(),
            format!("automaton/p--{name}")
        );
    }
    // Wave 2 started from the integration branch holding both wave-1 results.
    assert_eq!(
        p.read(&format!("{PARENT}/subtasks/c/seen.txt")),
        "a.txt b.txt c.txt shared.txt "
    );
    // The integration branch holds all three; the user's checkout never moved.
    for name in ["a", "b", "c"] {
        assert_eq!(
            git(root, &["show", &format!("automaton/p:{name}.txt")]),
            name
        );
        assert!(!root.join(format!("{name}.txt")).exists());
    }
    assert_eq!(git(root, &["rev-parse", "HEAD"]), base);
    assert_eq!(git(root, &["symbolic-ref", "--short", "HEAD"]), "main");
    let status = git(root, &["status", "--porcelain", "--untracked-files=normal"]);
    for line in status.lines() {
        assert!(
            line == "?? tasks/" || line == "?? .automaton/" || line == "?? agent.log",
            "the project root changed: {line}"
        );
    }
    // Commits were made without any git identity configured.
    assert_eq!(
        git(
            root,
            &["log", "-1", "--format=%an <%ae> %s", "automaton/p--a"]
        ),
        "automaton <automaton@localhost> automaton: tasks/p/subtasks/a implement"
    );

    let doc = p.status_json();
    let parent = task(&doc, PARENT);
    assert_eq!(parent["state"], "complete");
    assert_eq!(parent["branch"], "automaton/p");
    assert_eq!(parent["merged"], false);
    assert_eq!(parent["base_branch"], "main");
    assert!(parent["ahead"].as_u64().unwrap() >= 3, "{parent:#}");
    let sub_a = task(&doc, "tasks/p/subtasks/a");
    assert_eq!(sub_a["branch"], "automaton/p--a");
    assert_eq!(sub_a["merged"], true);
    let text = p.cmd().arg("status").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("take it with `automaton merge tasks/p`"),
        "{text}"
    );

    // Hand the result over: the old tip is an ancestor of the user's branch.
    p.cmd()
        .args(["merge", "tasks/p"])
        .assert()
        .success()
        .stdout(predicates::str::starts_with(
            "merged automaton/p into main (",
        ));
    assert!(git_ok(
        root,
        &["merge-base", "--is-ancestor", &base, "main"]
    ));
    assert!(git_ok(
        root,
        &["merge-base", "--is-ancestor", "automaton/p", "main"]
    ));
    assert_eq!(p.read("c.txt"), "c\n");
    assert_eq!(task(&p.status_json(), PARENT)["merged"], true);
}

#[test]
fn a_merge_conflict_stops_the_parent_naming_the_file_and_a_manual_merge_lets_it_finish() {
    let p = repo_project();
    let root = p.path();
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-")]);
    let edit = r#"echo "$name" > shared.txt"#;
    let out = run(&p, &decomposition, edit).arg("p").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(22), "{stdout}");
    // Whichever finished first is in; the other conflicted and is named with the file.
    let first_in = |n: &str| {
        git_ok(
            root,
            &[
                "merge-base",
                "--is-ancestor",
                &format!("automaton/p--{n}"),
                "automaton/p",
            ],
        )
    };
    let (merged, conflicted) = if first_in("a") {
        ("a", "b")
    } else {
        ("b", "a")
    };
    assert!(!first_in(conflicted));
    assert_eq!(git(root, &["show", "automaton/p:shared.txt"]), merged);
    assert_eq!(
        git(
            root,
            &["show", &format!("automaton/p--{conflicted}:shared.txt")]
        ),
        conflicted
    );
    assert!(
        stdout.contains(&format!(
            "merging tasks/p/subtasks/{conflicted} (automaton/p--{conflicted}) into automaton/p conflicts in shared.txt"
        )),
        "{stdout}"
    );
    let integration = root.join(".automaton/worktrees/p");
    assert!(!git_ok(
        &integration,
        &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"]
    ));
    assert_eq!(git(&integration, &["status", "--porcelain"]), "");

    // A person resolves it in the integration worktree; the next run finishes.
    let branch = format!("automaton/p--{conflicted}");
    assert!(!git_ok(&integration, &["merge", "--quiet", &branch]));
    std::fs::write(integration.join("shared.txt"), "a and b\n").unwrap();
    git(&integration, &["add", "shared.txt"]);
    git(&integration, &["commit", "--quiet", "--no-edit"]);
    run(&p, &decomposition, edit)
        .args(["--task", PARENT])
        .assert()
        .success();
    assert_eq!(p.state_of(PARENT), "complete");
    assert_eq!(git(root, &["show", "automaton/p:shared.txt"]), "a and b");
}

#[test]
fn a_failing_integration_gate_after_wave_one_blocks_wave_two() {
    let p = repo_project();
    // The verify command passes in the sub-tasks' worktrees and fails in the integration one.
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Verify command**: test \"$AUTOMATON_BRANCH\" != automaton/p\n",
    );
    let decomposition = plan(&[("a", 1, "-"), ("c", 2, "a")]);
    let out = run(&p, &decomposition, RECORD_WORK)
        .arg("p")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(17), "{stdout}");
    assert!(
        stdout.contains("the integration gate after wave 1 failed"),
        "{stdout}"
    );
    assert!(
        p.join(&format!("{PARENT}/logs/integration-1-1.log"))
            .is_file()
    );
    assert!(
        !records(&p).iter().any(|r| r.0 == "tasks/p/subtasks/c"),
        "wave 2 must not start"
    );
    assert_eq!(p.state_of("tasks/p/subtasks/a"), "complete");
    assert_eq!(p.state_of(PARENT), "human_intervention");

    // Naming the wave-2 sub-task does not skip the failed gate: refused, nothing runs, and
    // `status` offers the parent's command, which runs the gate again.
    let c = "tasks/p/subtasks/c";
    let out = run(&p, &decomposition, RECORD_WORK)
        .args(["--task", c])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(29), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{c} may not start yet: its parent is stopped: the integration gate after wave 1 failed"
        )),
        "{stdout}"
    );
    assert!(!records(&p).iter().any(|r| r.0 == c), "c ran");
    let doc = p.status_json();
    assert_eq!(
        task(&doc, c)["command"],
        format!("automaton orchestrate --task {PARENT}")
    );
}

#[test]
fn clean_removes_merged_finished_work_and_refuses_the_rest() {
    let p = repo_project();
    let root = p.path();
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-")]);
    run(&p, &decomposition, RECORD_WORK)
        .arg("p")
        .assert()
        .success();
    let wt = |n: &str| root.join(format!(".automaton/worktrees/{n}"));
    std::fs::write(wt("p--b").join("scratch.txt"), "unsaved\n").unwrap();
    git(root, &["branch", "automaton/stray"]);

    let dry = p.cmd().args(["clean", "--dry-run"]).output().unwrap();
    let dry_out = String::from_utf8_lossy(&dry.stdout).to_string();
    let dry_err = String::from_utf8_lossy(&dry.stderr).to_string();
    assert_eq!(dry.status.code(), Some(30), "{dry_out}{dry_err}");
    let expected_out = format!(
        "would remove tasks/p/subtasks/a: worktree {} and branch automaton/p--a\n\
         orphan (kept): branch automaton/stray belongs to no task\n\
         kept tasks/p/subtasks/b: worktree {} has uncommitted or untracked changes\n\
         kept tasks/p: its sub-task tasks/p/subtasks/b is kept\n\
         clean: would remove 1 task, kept 2 tasks: tasks/p/subtasks/b (uncommitted changes), \
         tasks/p (a sub-task is kept)\n",
        wt("p--a").display(),
        wt("p--b").display()
    );
    assert_eq!(dry_out, expected_out);
    assert_eq!(dry_err, "");
    assert!(wt("p--a").is_dir(), "--dry-run touches nothing");

    let real = p.cmd().arg("clean").output().unwrap();
    assert_eq!(real.status.code(), Some(30));
    assert_eq!(
        String::from_utf8_lossy(&real.stdout),
        expected_out.replace("would remove", "removed")
    );
    assert!(!wt("p--a").exists());
    assert!(!git_ok(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "refs/heads/automaton/p--a"
        ]
    ));
    assert!(
        wt("p--b").join("scratch.txt").is_file(),
        "a dirty worktree is kept"
    );
    assert!(git_ok(
        root,
        &["rev-parse", "--verify", "--quiet", "refs/heads/automaton/p"]
    ));
    assert!(git_ok(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "refs/heads/automaton/stray"
        ]
    ));
}

/// A project whose task `p` ran one sub-task `a` (it writes a.txt) to complete: its branch
/// waits for `merge`.
fn complete_with_one_subtask() -> Project {
    let p = repo_project();
    run(&p, &plan(&[("a", 1, "-")]), RECORD_WORK)
        .arg("p")
        .assert()
        .success();
    p
}

#[test]
fn merge_refuses_a_dirty_checkout_and_an_unfinished_task() {
    let p = complete_with_one_subtask();
    let root = p.path();
    std::fs::write(root.join("README.md"), "# changed\n").unwrap();
    p.cmd().args(["merge", "p"]).assert().code(23).stderr(
        "error: the project root has uncommitted changes (README.md); commit or stash them first\n",
    );
    assert!(!root.join("a.txt").exists());
    p.cmd()
        .args(["merge", "nope"])
        .assert()
        .code(1)
        .stderr("error: no task folder tasks/nope\n");
}

/// An untracked file in the checkout where the task's branch adds one: git will not start the
/// merge, and `merge` says so as the refusal it is (exit 23, naming the file), for a
/// fast-forward and for a merge commit alike; the file and the branch are left as they were.
#[test]
fn merge_refuses_an_untracked_file_the_branch_would_overwrite() {
    let p = complete_with_one_subtask();
    let root = p.path();
    std::fs::write(root.join("a.txt"), "mine\n").unwrap();
    let refused = "error: merging automaton/p into main would overwrite untracked files (a.txt); \
                   git did not start the merge and nothing changed: move or remove them, then \
                   run merge again\n";
    let head = git(root, &["rev-parse", "HEAD"]);
    p.cmd()
        .args(["merge", "p"])
        .assert()
        .code(23)
        .stderr(refused);
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    // main moved on: the merge would be a merge commit, refused the same way.
    std::fs::write(root.join("README.md"), "# changed\n").unwrap();
    git(root, &["commit", "--quiet", "-am", "readme"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    p.cmd()
        .args(["merge", "p"])
        .assert()
        .code(23)
        .stderr(refused);
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "mine\n"
    );
    std::fs::remove_file(root.join("a.txt")).unwrap();
    p.cmd()
        .args(["merge", "p"])
        .assert()
        .success()
        .stdout("merged automaton/p into main (merge commit)\n");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
}

/// `merge` takes a task into the branch it was made from, which status, the merge gate and
/// clean measure it against: with another branch checked out it is refused (exit 23) and
/// nothing moves (merged there, status offered the merge again and clean kept the branch).
#[test]
fn merge_refuses_a_branch_other_than_the_tasks_base() {
    let p = complete_with_one_subtask();
    let root = p.path();
    git(root, &["checkout", "--quiet", "-b", "release"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    p.cmd().args(["merge", "p"]).assert().code(23).stderr(
        "error: tasks/p was branched from main, and release is checked out: check out main to \
         merge it there (status and clean measure it against main), or take it into release by \
         hand with `git merge automaton/p`\n",
    );
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        p.status_json()["tasks"][0]["merge_command"],
        "automaton merge tasks/p"
    );
    git(root, &["checkout", "--quiet", "main"]);
    p.cmd()
        .args(["merge", "p"])
        .assert()
        .success()
        .stdout("merged automaton/p into main (fast-forward)\n");
    assert_eq!(p.status_json()["tasks"][0]["merged"], true);
}

#[test]
fn a_monorepo_sub_folder_project_runs_its_agent_in_the_same_sub_folder() {
    let p = Project::new();
    let top = p.path();
    std::fs::create_dir_all(top.join("pkg/app")).unwrap();
    std::fs::write(top.join("pkg/app/README.md"), "app\n").unwrap();
    git(top, &["init", "--quiet", "-b", "main"]);
    git(top, &["add", "."]);
    git(top, &["commit", "--quiet", "-m", "init"]);
    let app = top.join("pkg/app");
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_automaton"))
        .arg("--project")
        .arg(&app)
        .args(["orchestrate", "x"])
        .env("HOME", p.home())
        .env("AUTOMATON_HOME", p.home().join(".automaton"))
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
        .env("AGENT_IMPLEMENT", RECORD_WORK)
        .env_remove("AGENT_BEHAVIOR")
        .current_dir(top)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let cwd = std::fs::read_to_string(app.join("tasks/x/cwd.txt")).unwrap();
    let expected = app
        .canonicalize()
        .unwrap()
        .join(".automaton/worktrees/x/pkg/app");
    assert_eq!(cwd.trim(), expected.display().to_string());
    assert_eq!(git(top, &["show", "automaton/x:pkg/app/x.txt"]), "x");
    assert_eq!(
        git(top, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}

#[test]
fn worktree_isolation_outside_a_repository_is_a_clear_error_and_auto_means_none() {
    let p = Project::new();
    p.orchestrate_cmd()
        .args(["--isolation", "worktree", "x"])
        .assert()
        .code(1)
        .stderr(format!(
            "error: isolation is `worktree` but {} is not in a git work tree with a commit\n",
            p.path().display()
        ));
    // auto: unchanged behaviour, no branch in the report.
    p.orchestrate_cmd().arg("x").assert().success();
    let doc = p.status_json();
    assert_eq!(task(&doc, "tasks/x")["branch"], serde_json::Value::Null);
    assert_eq!(task(&doc, "tasks/x")["worktree"], serde_json::Value::Null);
}
