//! `kill -9` between two git commands of worktree isolation, then a rerun: it must end as an
//! uninterrupted run would — every phase's work committed on its branch, every passed
//! sub-task merged into the integration branch, nothing left staged, no second worktree.
//!
//! The kill comes from a `git` placed first on PATH: it runs the real git, then, once, kills
//! its caller (automaton) when its arguments match a pattern and a file exists, the way a
//! power cut or an OOM kill would land right after that git command.

use crate::harness::Project;
use crate::isolation::{envs, git, git_ok, plan};
use std::path::{Path, PathBuf};

const PARENT: &str = "tasks/p";

/// Every phase leaves a line in `<task name>.log` in its working folder, so every phase has
/// work to commit (sub-tasks without the optional design phases).
const EVERY_PHASE: &str = r#"echo "$AUTOMATON_PHASE" >> "${AUTOMATON_TASK##*/}.log""#;

fn repo_project() -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n").write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

fn real_git() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A killing `git` in `<home>/killing-git/`; returns (its folder, the one-shot flag). `args`
/// is a shell `case` pattern over the whole argument list (`-C <dir> add -A`).
fn killing_git(p: &Project, args: &str, when_exists: &Path) -> (PathBuf, PathBuf) {
    let dir = p.home().join("killing-git");
    std::fs::create_dir_all(&dir).unwrap();
    let flag = p.home().join("kill.flag");
    std::fs::write(&flag, "").unwrap();
    let script = format!(
        "#!/bin/sh\n'{git}' \"$@\"; rc=$?\n\
         case \"$*\" in {args}) if [ -f '{flag}' ] && [ -e '{file}' ]; then\n\
           rm -f '{flag}'; kill -9 \"$PPID\"; fi ;; esac\n\
         exit $rc\n",
        git = real_git(),
        flag = flag.display(),
        file = when_exists.display(),
    );
    let path = dir.join("git");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, flag)
}

/// `orchestrate` of the parent with the killing git first on PATH; returns its exit status.
fn run_with_git(p: &Project, decomposition: &str, git_dir: Option<&Path>) -> Option<i32> {
    let mut c = p.orchestrate_std();
    c.envs(envs(p, decomposition, ""))
        .env("AGENT_EVERY_PHASE", EVERY_PHASE)
        .args(["--jobs", "2", "-q"]);
    if let Some(dir) = git_dir {
        let path = std::env::var("PATH").unwrap_or_default();
        c.env("PATH", format!("{}:{path}", dir.display()));
    }
    if p.join(PARENT).is_dir() {
        c.args(["--task", PARENT]);
    } else {
        c.arg("p");
    }
    c.status().unwrap().code()
}

/// The end an uninterrupted run reaches: the parent complete; each sub-task's branch holds a
/// line for each of its phases (the referee's last) and is merged; the integration branch
/// holds every sub-task's log; every worktree clean; one worktree per task.
fn assert_as_uninterrupted(p: &Project, names: &[&str]) {
    let root = p.path();
    assert_eq!(p.state_of(PARENT), "complete");
    for name in names {
        let branch = format!("automaton/p--{name}");
        let log = git(root, &["show", &format!("{branch}:{name}.log")]);
        assert!(
            log.ends_with("referee"),
            "{branch}'s {name}.log lacks the referee's line:\n{log}"
        );
        assert!(
            git_ok(
                root,
                &["merge-base", "--is-ancestor", &branch, "automaton/p"]
            ),
            "{branch} is not merged into automaton/p"
        );
        assert_eq!(
            git(root, &["show", &format!("automaton/p:{name}.log")]),
            log
        );
        let tree = root.join(format!(".automaton/worktrees/p--{name}"));
        assert_eq!(
            git(&tree, &["status", "--porcelain"]),
            "",
            "{name}'s worktree"
        );
    }
    let integration = root.join(".automaton/worktrees/p");
    assert_eq!(git(&integration, &["status", "--porcelain"]), "");
    let trees = git(root, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        trees.lines().filter(|l| l.starts_with("worktree ")).count(),
        2 + names.len(),
        "{trees}"
    );
}

#[test]
fn a_kill_after_git_add_of_a_subtasks_last_phase_is_committed_and_merged_by_the_rerun() {
    let p = repo_project();
    let decomposition = plan(&[("a", 1, "-"), ("b", 2, "a")]);
    let verdict = p.join("tasks/p/subtasks/a/VERDICT.md");
    let (dir, flag) = killing_git(&p, "-C*worktrees/p--a\\ add\\ -A", &verdict);
    assert_eq!(run_with_git(&p, &decomposition, Some(&dir)), None, "killed");
    assert!(!flag.exists(), "the kill happened");
    let a = p.join(".automaton/worktrees/p--a");
    assert_ne!(
        git(&a, &["status", "--porcelain"]),
        "",
        "staged, uncommitted"
    );
    assert_eq!(run_with_git(&p, &decomposition, None), Some(0));
    assert_as_uninterrupted(&p, &["a", "b"]);
}

#[test]
fn a_kill_after_git_add_in_the_integration_worktree_does_not_wedge_the_rerun() {
    let p = repo_project();
    let decomposition = plan(&[("a", 1, "-")]);
    let plan_file = p.join("tasks/p/DECOMPOSITION.md");
    let (dir, flag) = killing_git(&p, "-C*worktrees/p\\ add\\ -A", &plan_file);
    assert_eq!(run_with_git(&p, &decomposition, Some(&dir)), None, "killed");
    assert!(!flag.exists(), "the kill happened");
    assert_eq!(run_with_git(&p, &decomposition, None), Some(0));
    assert_as_uninterrupted(&p, &["a"]);
    assert!(
        git(p.path(), &["show", "automaton/p:p.log"]).contains("research"),
        "the parent's research work is on its branch"
    );
}

#[test]
fn a_kill_as_the_last_merge_back_starts_is_merged_and_gated_by_the_rerun() {
    let p = repo_project();
    p.write(
        ".automaton/config.md",
        format!(
            "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n\n\
             ## Agent\n- **Verify command**: echo \"$AUTOMATON_TASK\" >> {}\n",
            p.join("gate-runs.txt").display()
        ),
    );
    let decomposition = plan(&[("a", 1, "-"), ("b", 2, "a")]);
    // The first git call of b's merge-back asks whether b's branch is in the parent's.
    let verdict = p.join("tasks/p/subtasks/b/VERDICT.md");
    let (dir, flag) = killing_git(
        &p,
        "*merge-base\\ --is-ancestor\\ automaton/p--b\\ automaton/p",
        &verdict,
    );
    assert_eq!(run_with_git(&p, &decomposition, Some(&dir)), None, "killed");
    assert!(!flag.exists(), "the kill happened");
    assert_eq!(run_with_git(&p, &decomposition, None), Some(0));
    assert_as_uninterrupted(&p, &["a", "b"]);
    let gates = p.read("gate-runs.txt");
    assert!(
        p.join("tasks/p/logs/integration-2.passed").is_file(),
        "the last wave's gate never ran; gate runs:\n{gates}"
    );
}
