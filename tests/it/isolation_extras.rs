//! Worktree isolation, the rest of issue 10: `.worktreeinclude`, the setup command,
//! `AUTOMATON_PORT`, and `kill -9` during a merge and during worktree creation followed by a
//! rerun that ends as an uninterrupted run would.

use crate::harness::{Project, wait_for};
use crate::isolation::{envs, git, git_ok, plan, run};
use std::path::Path;
use std::process::Command;

const PARENT: &str = "tasks/p";

/// A git repository with one commit; `.env`, `secret.txt` and `build/` are gitignored and
/// present; sub-tasks without the optional design phases.
fn repo_project() -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write("shared.txt", "base\n")
        .write(".gitignore", ".env\nsecret.txt\nbuild/\nagent.log\n")
        .write(".env", "API_KEY=dev\n")
        .write("secret.txt", "do not copy\n")
        .write("build/cache/out.o", "object\n")
        .write(
            ".automaton/config.md",
            "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
        );
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md", "shared.txt", ".gitignore"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

/// Worktrees git knows, as (path, branch).
fn worktrees(root: &Path) -> Vec<(String, String)> {
    let text = git(root, &["worktree", "list", "--porcelain"]);
    text.split("\n\n")
        .map(|block| {
            let field = |k: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap_or("")
                    .to_string()
            };
            (field("worktree "), field("branch refs/heads/"))
        })
        .collect()
}

fn files_on(root: &Path, branch: &str) -> Vec<String> {
    let mut v: Vec<String> = git(root, &["ls-tree", "-r", "--name-only", branch])
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

const WORK: &str = r#"echo "$name" > "$name.txt"; echo "$AUTOMATON_PORT" > "$AUTOMATON_TASK_DIR/port.txt"; { cat .env 2>/dev/null || echo none; } > "$AUTOMATON_TASK_DIR/env.txt""#;

#[test]
fn worktreeinclude_copies_listed_ignored_files_and_the_setup_command_runs_once_per_worktree() {
    let p = repo_project();
    let root = p.path();
    p.write(
        ".worktreeinclude",
        "# copied into each new worktree\n.env\nbuild/\n",
    );
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Setup command**: echo \"$AUTOMATON_BRANCH $AUTOMATON_PORT $(pwd -P)\" >> \"$AUTOMATON_TASK_DIR/setup-runs.txt\"\n",
    );
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-")]);
    let out = run(&p, &decomposition, WORK).arg("p").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let wt = root.canonicalize().unwrap().join(".automaton/worktrees");
    for (task, name) in [
        (PARENT, "p"),
        ("tasks/p/subtasks/a", "p--a"),
        ("tasks/p/subtasks/b", "p--b"),
    ] {
        let w = wt.join(name);
        assert_eq!(
            std::fs::read_to_string(w.join(".env")).unwrap(),
            "API_KEY=dev\n"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("build/cache/out.o")).unwrap(),
            "object\n"
        );
        assert!(
            !w.join("secret.txt").exists(),
            "not listed in .worktreeinclude"
        );
        // Once per worktree, in the worktree, logged.
        let runs = p.read(&format!("{task}/setup-runs.txt"));
        assert_eq!(runs.lines().count(), 1, "{task}: {runs}");
        assert!(runs.trim().ends_with(&w.display().to_string()), "{runs}");
        assert!(p.join(&format!("{task}/logs/setup-1.log")).is_file());
    }
    // The copies are ignored in the worktree too: never committed.
    assert!(!files_on(root, "automaton/p").contains(&".env".to_string()));
    for name in ["a", "b"] {
        assert_eq!(
            p.read(&format!("{PARENT}/subtasks/{name}/env.txt")),
            "API_KEY=dev\n"
        );
    }
    // Ports: unique among the tasks driven at once (the parent holds its own meanwhile).
    let port = |t: &str| {
        p.read(&format!("{t}/port.txt"))
            .trim()
            .parse::<u16>()
            .unwrap()
    };
    let (pa, pb) = (port("tasks/p/subtasks/a"), port("tasks/p/subtasks/b"));
    assert_ne!(pa, pb);
    for x in [pa, pb] {
        assert!((20001..20010).contains(&x), "{x}");
    }
    let parent_setup = p.read(&format!("{PARENT}/setup-runs.txt"));
    assert!(
        parent_setup.starts_with("automaton/p 20000 "),
        "{parent_setup}"
    );

    // A rerun finds the worktrees set up: the setup command does not run again.
    p.write(&format!("{PARENT}/subtasks/a/VERDICT.md"), "");
    run(&p, &decomposition, WORK)
        .args(["--task", PARENT])
        .assert()
        .success();
    assert_eq!(
        p.read("tasks/p/subtasks/a/setup-runs.txt").lines().count(),
        1
    );
}

#[test]
fn a_failing_setup_command_stops_the_task_with_exit_22_and_a_fixed_one_lets_it_go_on() {
    let p = repo_project();
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Setup command**: echo boom; exit 3\n",
    );
    let out = run(&p, "", WORK).arg("x").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(22), "{stdout}");
    assert!(
        stdout.contains("could not be set up: setup command `echo boom; exit 3` failed"),
        "{stdout}"
    );
    assert!(stdout.contains("see tasks/x/logs/setup-1.log"), "{stdout}");
    assert_eq!(p.read("tasks/x/logs/setup-1.log").trim(), "boom");
    assert!(!p.join("agent.log").exists(), "no phase ran");
    assert_eq!(p.state_of("tasks/x"), "human_intervention");

    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Setup command**: true\n",
    );
    run(&p, "", WORK)
        .args(["--task", "tasks/x"])
        .assert()
        .success();
    assert!(p.join("tasks/x/logs/setup-2.log").is_file());
    assert_eq!(p.read("tasks/x/port.txt").trim(), "20000");
}

/// A git hook that, while `flag` exists, marks `reached` and sleeps, for `kill -9` to land in.
fn pausing_hook(
    p: &Project,
    hook: &str,
    condition: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let flag = p.home().join("pause.flag");
    let reached = p.home().join("pause.reached");
    std::fs::write(&flag, "").unwrap();
    let script = format!(
        "#!/bin/sh\nif [ -f '{}' ] && {condition}; then touch '{}'; sleep 60; fi\nexit 0\n",
        flag.display(),
        reached.display()
    );
    let path = p.join(&format!(".git/hooks/{hook}"));
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (flag, reached)
}

/// Start `orchestrate p` in its own process group, wait for the hook, and `kill -9` the whole
/// group (automaton and the git command it runs).
fn kill_at_hook(p: &Project, decomposition: &str, reached: &Path) {
    use std::os::unix::process::CommandExt;
    let mut c = p.orchestrate_std();
    c.envs(envs(p, decomposition, WORK))
        .args(["--jobs", "4", "-q", "p"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut child = c.spawn().unwrap();
    wait_for(reached);
    let pgid = child.id() as i32;
    assert!(
        Command::new("kill")
            .args(["-9", "--", &format!("-{pgid}")])
            .status()
            .unwrap()
            .success()
    );
    child.wait().unwrap();
}

/// The end every run of `rows` must reach: the parent complete, every sub-task's branch merged,
/// one worktree per task.
fn assert_finished(p: &Project, names: &[&str]) {
    let root = p.path();
    assert_eq!(p.state_of(PARENT), "complete");
    let mut expected: Vec<String> = [".gitignore", "README.md", "shared.txt"]
        .iter()
        .map(|s| s.to_string())
        .chain(names.iter().map(|n| format!("{n}.txt")))
        .collect();
    expected.sort();
    assert_eq!(files_on(root, "automaton/p"), expected);
    let integration = root.join(".automaton/worktrees/p");
    assert!(!git_ok(
        &integration,
        &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"]
    ));
    assert_eq!(git(&integration, &["status", "--porcelain"]), "");
    let trees = worktrees(root);
    assert_eq!(trees.len(), 2 + names.len(), "{trees:?}");
    for name in names {
        let branch = format!("automaton/p--{name}");
        assert!(git_ok(
            root,
            &["merge-base", "--is-ancestor", &branch, "automaton/p"]
        ));
        assert_eq!(git(root, &["show", &format!("{branch}:{name}.txt")]), *name);
        assert_eq!(
            trees.iter().filter(|(_, b)| *b == branch).count(),
            1,
            "{trees:?}"
        );
    }
    assert_eq!(git(root, &["symbolic-ref", "--short", "HEAD"]), "main");
}

#[test]
fn kill_9_during_a_merge_then_a_rerun_ends_as_an_uninterrupted_run() {
    let p = repo_project();
    let root = p.path();
    // The second merge of wave 1 is a merge commit: pause in its pre-merge-commit hook.
    let (flag, reached) = pausing_hook(&p, "pre-merge-commit", "true");
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-")]);
    kill_at_hook(&p, &decomposition, &reached);
    let integration = root.join(".automaton/worktrees/p");
    // Killed half-way: the merge's result is staged in the integration worktree, uncommitted.
    assert_ne!(
        git(&integration, &["status", "--porcelain"]),
        "",
        "killed mid-merge"
    );
    let one_in = ["a", "b"]
        .iter()
        .filter(|n| {
            git_ok(
                root,
                &[
                    "merge-base",
                    "--is-ancestor",
                    &format!("automaton/p--{n}"),
                    "automaton/p",
                ],
            )
        })
        .count();
    assert_eq!(
        one_in, 1,
        "the first merge (a fast-forward) was done, the second not"
    );

    std::fs::remove_file(&flag).unwrap();
    run(&p, &decomposition, WORK)
        .args(["--task", PARENT])
        .assert()
        .success();
    assert_finished(&p, &["a", "b"]);
    // Exactly one merge commit: the one the kill cut short was aborted, then made again.
    assert_eq!(
        git(
            root,
            &["rev-list", "--merges", "--count", "main..automaton/p"]
        ),
        "1"
    );
}

#[test]
fn kill_9_during_worktree_creation_then_a_rerun_reuses_it_and_sets_it_up() {
    let p = repo_project();
    p.write(".worktreeinclude", ".env\n");
    // Pause once sub-task a's worktree is checked out, before automaton could set it up.
    let (flag, reached) = pausing_hook(
        &p,
        "post-checkout",
        "[ \"$(git rev-parse --abbrev-ref HEAD)\" = automaton/p--a ]",
    );
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-"), ("c", 2, "a, b")]);
    kill_at_hook(&p, &decomposition, &reached);
    let a = p.path().join(".automaton/worktrees/p--a");
    assert!(a.is_dir());
    assert!(!a.join(".env").exists(), "killed before the set-up");

    std::fs::remove_file(&flag).unwrap();
    run(&p, &decomposition, WORK)
        .args(["--task", PARENT])
        .assert()
        .success();
    assert_finished(&p, &["a", "b", "c"]);
    assert_eq!(
        std::fs::read_to_string(a.join(".env")).unwrap(),
        "API_KEY=dev\n"
    );
    assert_eq!(p.read("tasks/p/subtasks/a/env.txt"), "API_KEY=dev\n");
}

#[test]
fn a_rerun_after_a_conflict_without_a_manual_merge_stops_again_and_never_says_complete() {
    let p = repo_project();
    let decomposition = plan(&[("a", 1, "-"), ("b", 1, "-")]);
    let edit = r#"echo "$name" > shared.txt"#;
    run(&p, &decomposition, edit).arg("p").assert().code(22);
    // The parent waits for a person to resolve the conflict, and every report says so.
    let parent = p.task_json(PARENT);
    assert_eq!(parent["waiting_for"], "person", "{parent:#}");
    assert_eq!(parent["decision"], "resolve_conflict", "{parent:#}");
    // Every sub-task passed, but one branch is not in the integration branch yet.
    let out = run(&p, &decomposition, edit)
        .args(["--task", PARENT])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(22), "{stdout}");
    assert!(stdout.contains("conflicts in shared.txt"), "{stdout}");
}
