//! `automaton clean` that tells the truth (issue 29, item 9), over real git repositories with
//! the scripted agent: it decides everything before it removes anything, removes only complete
//! and merged tasks (children before parents, a parent only once all its sub-tasks went),
//! keeps a task stopped for a person with its worktree and `.isolation`, and says in its exit
//! code and last line whether it removed all, some or nothing; `orchestrate` on a cleaned
//! task makes no worktree and `merge` says the task was merged and cleaned.

use crate::harness::Project;
use crate::isolation::{envs, git, plan, run};
use std::path::Path;

/// A git repository with one commit; sub-tasks without the optional design phases.
fn repo_project() -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write("shared.txt", "base\n")
        .write(".gitignore", "agent.log\n")
        .write(
            ".automaton/config.md",
            "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
        );
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md", "shared.txt", ".gitignore"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

const WORK: &str = r#"echo "$name" > "$name.txt""#;

/// An automaton command (no git identity, as [`envs`]): exit code, stdout, stderr.
fn automaton(p: &Project, args: &[&str]) -> (Option<i32>, String, String) {
    let out = p.cmd().envs(envs(p, "", WORK)).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// The branches of the worktrees git knows (the project root's `main` first).
fn worktree_branches(root: &Path) -> Vec<String> {
    git(root, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("branch refs/heads/"))
        .map(str::to_string)
        .collect()
}

fn branches(root: &Path) -> Vec<String> {
    git(root, &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// `p` decomposed into `subs` (one wave), run to complete, then merged into `main`.
fn merged_parent(subs: &[&str]) -> Project {
    let p = repo_project();
    let rows: Vec<(&str, u32, &str)> = subs.iter().map(|s| (*s, 1, "-")).collect();
    run(&p, &plan(&rows), WORK).arg("p").assert().success();
    let (code, out, err) = automaton(&p, &["merge", "p"]);
    assert_eq!(code, Some(0), "{out}{err}");
    p
}

#[test]
fn a_dirty_subtask_keeps_itself_and_its_parent_and_clean_says_it_removed_some() {
    let p = merged_parent(&["a", "b"]);
    let root = p.path();
    std::fs::write(
        root.join(".automaton/worktrees/p--b/scratch.txt"),
        "unsaved\n",
    )
    .unwrap();

    let (code, out, err) = automaton(&p, &["clean"]);
    assert_eq!(code, Some(30), "{out}{err}");
    assert_eq!(
        last_line(&out),
        "clean: removed 1 task, kept 2 tasks: tasks/p/subtasks/b (uncommitted changes), tasks/p (a sub-task is kept)",
        "{out}"
    );
    assert!(
        out.contains("kept tasks/p: its sub-task tasks/p/subtasks/b is kept"),
        "{out}"
    );
    assert_eq!(
        worktree_branches(root),
        ["main", "automaton/p", "automaton/p--b"]
    );
    assert_eq!(branches(root), ["automaton/p", "automaton/p--b", "main"]);
    assert!(p.join("tasks/p/.isolation").is_file());

    // Once the sub-task's worktree is clean, both it and its parent go, child first.
    std::fs::remove_file(root.join(".automaton/worktrees/p--b/scratch.txt")).unwrap();
    let (code, out, err) = automaton(&p, &["clean"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(last_line(&out), "clean: removed all (2 tasks)", "{out}");
    let sub = out.find("removed tasks/p/subtasks/b").expect(&out);
    let parent = out.find("removed tasks/p:").expect(&out);
    assert!(sub < parent, "children before parents: {out}");
    assert_eq!(worktree_branches(root), ["main"]);
    assert_eq!(branches(root), ["main"]);
}

#[test]
fn a_subtask_whose_parent_was_cleaned_before_it_is_removed_once_its_branch_is_in_main() {
    // What an earlier clean left: the parent's worktree, branch and `.isolation` gone, the
    // sub-task's kept (it was dirty then).
    let p = merged_parent(&["a"]);
    let root = p.path();
    git(root, &["worktree", "remove", ".automaton/worktrees/p"]);
    git(root, &["branch", "-d", "automaton/p"]);
    std::fs::remove_file(p.join("tasks/p/.isolation")).unwrap();

    let (code, out, err) = automaton(&p, &["clean"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.starts_with("removed tasks/p/subtasks/a: worktree "),
        "{out}"
    );
    assert_eq!(last_line(&out), "clean: removed all (1 task)", "{out}");
    assert_eq!(worktree_branches(root), ["main"]);
    assert_eq!(branches(root), ["main"]);
}

#[test]
fn clean_keeps_the_worktree_and_record_of_a_task_stopped_for_a_person() {
    let p = repo_project();
    let root = p.path();
    // A plain task whose referee says FAIL: it waits for a person, its branch has no commits
    // of its own (an ancestor of main).
    run(&p, "", "true")
        .env("AGENT_BEHAVIOR", "referee=fail")
        .arg("x")
        .assert()
        .code(10);
    let record = p.read("tasks/x/.isolation");

    let (code, out, err) = automaton(&p, &["clean"]);
    assert_eq!(code, Some(23), "{out}{err}");
    assert_eq!(
        last_line(&out),
        "clean: removed nothing; kept 1 task: tasks/x (stopped for a person)",
        "{out}"
    );
    assert_eq!(worktree_branches(root), ["main", "automaton/x"]);
    assert_eq!(p.read("tasks/x/.isolation"), record);

    // main moves on; the person's decision resumes the task in the same worktree and branch,
    // made from the commit it started from.
    std::fs::write(root.join("shared.txt"), "later\n").unwrap();
    git(root, &["commit", "--quiet", "-am", "later"]);
    std::fs::remove_file(p.join("tasks/x/VERDICT.md")).unwrap();
    run(&p, "", "true").arg("x").assert().success();
    assert_eq!(p.read("tasks/x/.isolation"), record);
    assert_eq!(worktree_branches(root), ["main", "automaton/x"]);
}

#[test]
fn a_cleaned_task_gets_no_new_worktree_and_merge_says_it_was_merged_and_cleaned() {
    let p = merged_parent(&["a"]);
    let root = p.path();
    let (code, out, err) = automaton(&p, &["clean"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let cleaned = out;

    run(&p, &plan(&[("a", 1, "-")]), WORK)
        .args(["--task", "tasks/p"])
        .assert()
        .success();
    assert_eq!(worktree_branches(root), ["main"]);
    assert_eq!(branches(root), ["main"]);
    assert!(!p.join("tasks/p/.isolation").exists());

    let (code, out, err) = automaton(&p, &["merge", "p"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        out,
        "tasks/p was merged into main and cleaned (branch automaton/p and its worktree were removed): nothing to merge\n"
    );
    assert_eq!(
        last_line(&cleaned),
        "clean: removed all (2 tasks)",
        "{cleaned}"
    );
    assert!(p.join("tasks/p/logs/isolation.cleaned").is_file());
}
