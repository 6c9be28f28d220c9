//! The first hour of a new user (issue 15): `init`, project discovery and `-C`, forgiving
//! settings diagnostics, completions and the man page, and the command-line conventions.

use crate::harness::Project;
use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

/// The binary run in `cwd` with no `--project`, a private home, and PATH limited to `path`
/// (plus the system folders, so `sh` is found).
fn bare(p: &Project, cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_automaton"));
    c.env("HOME", p.home())
        .env("AUTOMATON_HOME", p.home().join(".automaton"))
        .env_remove("AUTOMATON_AGENT")
        .env_remove("NO_COLOR")
        .env("PATH", "/usr/bin:/bin")
        .env("DEMO_AGENT_DELAY", "0")
        .timeout(std::time::Duration::from_secs(60))
        .current_dir(cwd);
    c
}

/// No folder above the temp dir may be a project, or discovery would find it.
fn assert_no_project_above(dir: &Path) {
    for a in dir.ancestors().skip(1) {
        assert!(
            !a.join("tasks").is_dir() && !a.join(".automaton").is_dir(),
            "{} holds tasks/ or .automaton/: the discovery tests need a clean temp folder",
            a.display()
        );
    }
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A folder of fake executables, for PATH.
fn bin_with(names: &[&str]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    for n in names {
        let p = bin.path().join(n);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

// ---- 1. init ----

#[test]
fn init_in_an_empty_folder_writes_commented_settings_and_never_overwrites() {
    let p = Project::new();
    let none = bin_with(&[]);
    let out = bare(&p, p.path())
        .env("PATH", none.path())
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("agent command"), "{text}");
    for f in [
        ".automaton/.agent.md",
        ".automaton/config.md",
        ".automaton/demo-agent.sh",
    ] {
        assert!(text.contains(&format!("wrote {f}")), "{text}");
        assert!(p.join(f).is_file(), "{f}");
    }
    assert!(
        text.contains("  wrote .gitignore (automaton's ignore rules)\n"),
        "{text}"
    );
    assert!(p.read(".gitignore").contains("\n/.automaton/lock\n"));
    // The next two commands, runnable from here.
    assert!(
        text.contains(
            "Next:\n  automaton orchestrate --agent 'sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"' \"add a greeting\"\n  automaton status\n"
        ),
        "{text}"
    );
    let agent = p.read(".automaton/.agent.md");
    assert!(
        agent.contains("\n## Agent\n- **Agent**: command\n"),
        "{agent}"
    );
    assert!(
        agent.contains(
            "<!-- - **Agent command**: sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\""
        ),
        "{agent}"
    );
    let config = p.read(".automaton/config.md");
    for section in [
        "## Phases",
        "## Limits",
        "## VRAM Configuration",
        "## Model Configuration",
    ] {
        assert!(config.contains(section), "{config}");
    }
    assert!(
        config.contains("<!-- - **Max phase time**: 1h  # time cap for one phase -->"),
        "{config}"
    );
    // The files read cleanly: no warning, the agent kind from .agent.md, defaults elsewhere.
    let out = p.cmd().args(["config", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "init's files must not warn");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let setting = |id: &str| {
        doc["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(setting("agent.kind")["value"], "command");
    assert!(
        setting("agent.kind")["origin"]
            .as_str()
            .unwrap()
            .contains(".agent.md:"),
        "{doc}"
    );
    assert_eq!(setting("limits.max_phase_time")["origin"], "default");
    assert_eq!(setting("agent.command")["value"], "");

    // A second run keeps every file, edited or not, and says so.
    p.write(".automaton/.agent.md", "## Agent\n- **Agent**: codex\n");
    let out = bare(&p, p.path())
        .env("PATH", none.path())
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("wrote"), "{text}");
    assert!(
        text.contains("kept  .automaton/.agent.md (it exists; not overwritten)"),
        "{text}"
    );
    assert!(text.contains("kept  .automaton/config.md"), "{text}");
    assert_eq!(
        p.read(".automaton/.agent.md"),
        "## Agent\n- **Agent**: codex\n"
    );
}

#[test]
fn init_picks_the_first_agent_cli_on_path_or_the_one_named() {
    let p = Project::new();
    let bin = bin_with(&["gemini", "aider"]);
    let out = bare(&p, p.path())
        .env("PATH", bin.path())
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("agent aider (found "),
        "{}",
        stdout(&out)
    );
    let agent = p.read(".automaton/.agent.md");
    assert!(agent.contains("- **Agent**: aider\n"), "{agent}");
    assert!(!p.join(".automaton/demo-agent.sh").exists());
    assert!(
        stdout(&out)
            .contains("  automaton orchestrate \"describe the first task\"\n  automaton status\n"),
        "{}",
        stdout(&out)
    );

    // Named: gemini and opencode are adapters of their own, with their default command lines.
    for agent in ["gemini", "opencode"] {
        let r = Project::new();
        r.cmd().args(["init", "--agent", agent]).assert().success();
        let agent_md = r.read(".automaton/.agent.md");
        assert!(
            agent_md.contains(&format!("\n- **Agent**: {agent}\n")),
            "{agent_md}"
        );
        assert!(!agent_md.contains("\n- **Agent command**:"), "{agent_md}");
    }
    // `automaton config` shows the adapter, no command of its own (the default line runs).
    let q = Project::new();
    q.cmd()
        .args(["init", "--agent", "gemini"])
        .assert()
        .success();
    let out = q.cmd().args(["config", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = |id: &str| {
        doc["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()["value"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(value("agent.kind"), "gemini");
    assert_eq!(
        value("agent.command"),
        "",
        "the adapter's default line: {doc}"
    );
    // With -C from elsewhere the next commands name the folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = bare(&q, elsewhere.path())
        .arg("-C")
        .arg(q.path())
        .args(["init", "--agent", "claude"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("kept  .automaton/.agent.md"));
    assert!(stdout(&out).contains(&format!("automaton -C {} status", q.path().display())));
}

#[test]
fn init_json_lists_files_agent_and_next_commands() {
    let p = Project::new();
    p.write(".automaton/config.md", "# mine\n");
    let out = p
        .cmd()
        .args(["init", "--agent", "claude", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["agent"], "claude");
    assert_eq!(doc["written"], serde_json::json!([".automaton/.agent.md"]));
    assert_eq!(doc["kept"], serde_json::json!([".automaton/config.md"]));
    assert_eq!(
        doc["ignore_rules"],
        serde_json::json!({"file": ".gitignore", "action": "wrote"})
    );
    assert_eq!(doc["next"].as_array().unwrap().len(), 2);
    assert!(doc["next"][0].as_str().unwrap().contains("orchestrate"));
    assert_eq!(p.read(".automaton/config.md"), "# mine\n");
    assert!(
        p.read(".automaton/.agent.md")
            .contains("- **Agent**: claude\n")
    );
}

#[test]
fn init_then_the_demo_agent_completes_a_task() {
    let p = Project::new();
    assert_no_project_above(p.path());
    let none = bin_with(&[]);
    bare(&p, p.path())
        .env("PATH", none.path())
        .arg("init")
        .assert()
        .success();
    bare(&p, p.path())
        .args([
            "orchestrate",
            "-q",
            "--agent",
            "sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"",
            "add a greeting",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE"));
    assert_eq!(p.state_of("tasks/add-a-greeting"), "complete");
}

/// The same first hour in a git repository with a commit: isolation is `worktree` by default,
/// so the agent runs in a worktree, where the untracked `.automaton/` is not; the command init
/// prints reaches the demo agent through `$AUTOMATON_PROJECT`, and its code lands on the task's
/// branch, which `merge` brings onto the user's branch.
#[test]
fn init_then_the_demo_agent_completes_a_task_in_a_git_repository() {
    let p = Project::new();
    assert_no_project_above(p.path());
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(p.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "--quiet", "-b", "main"]);
    p.write("README.md", "# app\n");
    git(&["add", "README.md"]);
    git(&["commit", "--quiet", "-m", "init"]);
    let none = bin_with(&[]);
    bare(&p, p.path())
        .env("PATH", format!("{}:/usr/bin:/bin", none.path().display()))
        .arg("init")
        .assert()
        .success();
    bare(&p, p.path())
        .args([
            "orchestrate",
            "-q",
            "--agent",
            "sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"",
            "add a greeting",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "take it with `automaton merge tasks/add-a-greeting`",
        ));
    assert!(
        !p.path().join("greeting.sh").exists(),
        "the work is on its branch"
    );
    bare(&p, p.path())
        .args(["merge", "tasks/add-a-greeting"])
        .assert()
        .success()
        .stdout("merged automaton/add-a-greeting into main (fast-forward)\n");
    assert!(p.read("greeting.sh").contains("Hello"));
}

/// `init` writes the ignore rules into `.gitignore` (appended to the user's own, once), and
/// after a whole task in a fresh git repository `git status` shows only what the README says
/// to commit: the settings, `.gitignore` and each task's request, artifacts and records; not
/// the lock, the caches, the worktrees, the logs or the run state.
#[test]
fn init_ignore_rules_leave_only_the_record_for_git_after_a_whole_task() {
    let p = Project::new();
    assert_no_project_above(p.path());
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(p.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        stdout(&out)
    };
    git(&["init", "--quiet", "-b", "main"]);
    p.write("README.md", "# app\n");
    // The user's own rules, without a final newline: kept, automaton's appended after them.
    p.write(".gitignore", "target/");
    git(&["add", "README.md", ".gitignore"]);
    git(&["commit", "--quiet", "-m", "init"]);
    let none = bin_with(&[]);
    let out = bare(&p, p.path())
        .env("PATH", format!("{}:/usr/bin:/bin", none.path().display()))
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  added automaton's ignore rules to .gitignore\n"),
        "{text}"
    );
    assert!(
        text.contains("In git: commit .gitignore, .automaton/ (the settings) and tasks/"),
        "{text}"
    );
    assert!(text.contains("not .git/info/exclude"), "{text}");
    let ignore = p.read(".gitignore");
    assert!(
        ignore.starts_with("target/\n\n# automaton: "),
        "the user's rules first: {ignore}"
    );
    // A second init keeps the file as it is.
    let out = bare(&p, p.path())
        .env("PATH", format!("{}:/usr/bin:/bin", none.path().display()))
        .arg("init")
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("  kept  .gitignore (it has automaton's ignore rules)\n"),
        "{}",
        stdout(&out)
    );
    assert_eq!(p.read(".gitignore"), ignore, "never a second block");
    // As init says: commit the settings and the rules.
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(
        status,
        " M .gitignore\n?? .automaton/.agent.md\n?? .automaton/config.md\n?? .automaton/demo-agent.sh\n"
    );
    git(&["add", ".gitignore", ".automaton"]);
    git(&["commit", "--quiet", "-m", "automaton settings"]);

    bare(&p, p.path())
        .args([
            "orchestrate",
            "-q",
            "--agent",
            "sh \"$AUTOMATON_PROJECT/.automaton/demo-agent.sh\"",
            "add a greeting",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("ORCHESTRATION_COMPLETE"));
    // The VRAM probe's cache.
    bare(&p, p.path()).arg("detect-vram").assert().success();
    // What automaton left that git must not take does exist: the rules are what hides it.
    for f in [
        ".automaton/lock",
        ".automaton/.vram_cache.json",
        ".automaton/worktrees/add-a-greeting",
        "tasks/add-a-greeting/.state",
        "tasks/add-a-greeting/.isolation",
        "tasks/add-a-greeting/logs/journal.jsonl",
    ] {
        assert!(p.join(f).exists(), "{f} should exist after the run");
    }
    let t = "tasks/add-a-greeting";
    let mut expected = Vec::new();
    for f in [
        ".state.frozen",
        ".state.inputs",
        "ADVERSARIAL_BUG_REPORT.md",
        "BUG_REPORT.md",
        "DESIGN.md",
        "DOC_REVIEW.md",
        "IMPLEMENTATION.md",
        "SPEC.md",
        "TASK.md",
        "TEST_PLAN.md",
        "VERDICT.md",
    ] {
        expected.push(format!("?? {t}/{f}"));
    }
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status.lines().collect::<Vec<_>>(), expected, "{status}");
    // What this run did not write is covered as well: other caches, a sub-task's logs and run
    // state at any depth, in both task roots; and a sub-task's record is not.
    let ignored = |rel: &str| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(p.path())
            .args(["check-ignore", "-q", rel])
            .status()
            .unwrap()
            .success()
    };
    for rel in [
        ".automaton/.index",
        ".automaton/.agent_model.json",
        "tasks/a/.stop",
        "tasks/a/.incomplete",
        "tasks/a/subtasks/b/logs/design-1.log",
        "tasks/a/subtasks/b/subtasks/c/.state",
        ".automaton/tasks/z/.isolation",
        ".automaton/tasks/z/logs/journal.jsonl",
        "tasks/a/.automaton-tmp-x1",
    ] {
        assert!(ignored(rel), "{rel} should be ignored");
    }
    for rel in [
        "tasks/a/.origin",
        "tasks/a/.state.approvals",
        "tasks/a/subtasks/b/PARENT_SPEC.md",
        "tasks/a/subtasks/b/VRAM_CONFIG.md",
        "tasks/a/DECOMPOSITION.md",
        ".automaton/tasks/z/SPEC.md",
        "src/logs/main.rs",
        "src/.state",
    ] {
        assert!(!ignored(rel), "{rel} belongs in git");
    }
    // The work itself is on the task's branch, and comes over with `merge`; still nothing of
    // automaton's own files shows.
    bare(&p, p.path())
        .args(["merge", "tasks/add-a-greeting"])
        .assert()
        .success();
    assert!(p.read("greeting.sh").contains("Hello"));
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status.lines().collect::<Vec<_>>(), expected, "{status}");
}

// ---- 2. project discovery ----

#[test]
fn commands_find_the_project_from_a_sub_folder() {
    let p = Project::new();
    assert_no_project_above(p.path());
    p.cmd().args(["task", "create", "auth"]).assert().success();
    p.mkdir("src/deep");
    let out = bare(&p, &p.join("src/deep"))
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["project"], p.path().display().to_string());
    assert_eq!(doc["tasks"][0]["path"], "tasks/auth");
    // The printed command works from the sub-folder: plain `automaton` finds the project.
    let out = bare(&p, &p.join("src/deep"))
        .arg("status")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("automaton orchestrate"), "{text}");
    assert!(!text.contains("--project"), "{text}");
    // `.automaton/` alone marks a project too.
    let q = Project::new();
    q.mkdir(".automaton").mkdir("a/b");
    let out = bare(&q, &q.join("a/b"))
        .args(["status", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["project"], q.path().display().to_string());
}

#[test]
fn inside_a_task_folder_the_project_is_the_one_above() {
    let p = Project::new();
    assert_no_project_above(p.path());
    p.mkdir(".automaton");
    p.cmd().args(["task", "create", "auth"]).assert().success();
    // What older versions left behind: a stray project inside the task folder.
    p.mkdir("tasks/auth/.automaton").mkdir("tasks/auth/logs");
    let inside = p.join("tasks/auth/logs");
    let out = bare(&p, &inside)
        .args(["status", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["project"], p.path().display().to_string());
    bare(&p, &inside)
        .args(["task", "create", "other"])
        .assert()
        .success();
    assert!(p.join("tasks/other/.state").is_file());
    bare(&p, &inside)
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
        .args(["orchestrate", "-q", "--max-iterations", "1", "y"])
        .assert()
        .code(15);
    assert!(p.join("tasks/y/SPEC.md").is_file());
    assert!(!p.join("tasks/auth/tasks").exists());
    assert!(!p.join("tasks/auth/logs/tasks").exists());
    // Named explicitly, a task folder is refused as a project.
    bare(&p, p.path())
        .args(["--project", "tasks/auth", "orchestrate", "z"])
        .assert()
        .code(66)
        .stderr(predicate::str::contains("inside the task folder"));
    assert!(!p.join("tasks/auth/tasks").exists());
}

#[test]
fn orchestrate_in_a_folder_with_no_project_asks_for_init() {
    let p = Project::new();
    assert_no_project_above(p.path());
    for args in [
        &["orchestrate", "x"][..],
        &["continue"][..],
        &["orchestrate"][..],
    ] {
        bare(&p, p.path())
            .env("AUTOMATON_AGENT", crate::harness::agent_command())
            .args(args)
            .assert()
            .code(66)
            .stderr(predicate::str::contains("no automaton project here"))
            .stderr(predicate::str::contains("automaton init"))
            .stderr(predicate::str::contains("--project ."));
    }
    assert_eq!(
        std::fs::read_dir(p.path()).unwrap().count(),
        0,
        "nothing created"
    );
    // `--project .` makes the folder the project, as before.
    bare(&p, p.path())
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
        .args([
            "--project",
            ".",
            "orchestrate",
            "-q",
            "--max-iterations",
            "1",
            "x",
        ])
        .assert()
        .code(15);
    assert!(p.join("tasks/x/SPEC.md").is_file());
}

#[test]
fn dash_c_is_the_short_form_of_project() {
    let p = Project::new();
    p.cmd().args(["task", "create", "auth"]).assert().success();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = bare(&p, elsewhere.path())
        .arg("-C")
        .arg(p.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["project"], p.path().display().to_string());
    assert_eq!(doc["tasks"][0]["path"], "tasks/auth");
    // From elsewhere the printed commands name the project.
    let out = bare(&p, elsewhere.path())
        .arg("-C")
        .arg(p.path())
        .arg("status")
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains(&format!("automaton --project {}", p.path().display())),
        "{}",
        stdout(&out)
    );
}

// ---- 7. forgiving diagnostics ----

#[test]
fn status_and_config_run_with_a_bad_value_and_orchestrate_refuses() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "## VRAM Configuration\n\n- **Headroom**: lots\n",
    );
    p.write(".automaton/.agent.md", "## Agent\n- **Autopilot**: maybe\n");
    let out = p.cmd().arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("config.md:3: `Headroom`: expected a percentage"),
        "{err}"
    );
    assert!(
        err.contains(".agent.md:2: `Autopilot`: expected yes/no"),
        "{err}"
    );
    assert!(stdout(&out).contains("No tasks yet"), "{}", stdout(&out));

    let doc = p
        .test()
        .args(["status", "--json"])
        .stdout_any()
        .stderr_contains("config.md:3: `Headroom`: expected a percentage")
        .stderr_contains(".agent.md:2: `Autopilot`: expected yes/no")
        .run()
        .json();
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("config.md:3: `Headroom`"), "{doc}");

    let out = p.cmd().arg("config").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("^ error: ")
            && text.contains("config.md:3: `Headroom`: expected a percentage"),
        "{text}"
    );
    let out = p.cmd().args(["config", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let headroom = doc["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "vram.headroom")
        .unwrap()
        .clone();
    assert!(
        headroom["error"].as_str().unwrap().contains("config.md:3"),
        "{doc}"
    );

    p.orchestrate_cmd()
        .arg("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "config.md:3: `Headroom`: expected a percentage",
        ));
    assert!(!p.join("tasks/x").exists());
}

/// The warnings `status` prints for these settings files.
fn warnings_for(config_md: &str, agent_md: &str) -> String {
    let p = Project::new();
    p.write(".automaton/config.md", config_md);
    p.write(".automaton/.agent.md", agent_md);
    let out = p.cmd().arg("status").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn misspelled_sections_and_keys_get_a_did_you_mean() {
    let err = warnings_for(
        "# Project\n\n## Phasez\n- **Design**: No\n\n## Limits\n- **Max iteration**: 3\n",
        "## Agent\n- **Agent comand**: ./a.sh\n",
    );
    assert!(
        err.contains("config.md:3: unknown section `## Phasez`; did you mean `## Phases`?"),
        "{err}"
    );
    assert!(
        err.contains("config.md:7: unknown key `Max iteration` in section `Limits` (ignored); did you mean `Max iterations`?"),
        "{err}"
    );
    assert!(
        err.contains(".agent.md:2: unknown key `Agent comand` in section `Agent` (ignored); did you mean `Agent command`?"),
        "{err}"
    );
}

/// A setting set twice in one file: the later line wins, and the earlier is said to count no
/// more (`config` names the line that counts).
#[test]
fn a_setting_set_twice_in_one_file_is_named() {
    let err = warnings_for(
        "## Limits\n- **Max iterations**: 5\n- **Max iterations**: 7\n",
        "## Agent\n- **Agent command**: ./a.sh\n- **agent command**: ./b.sh\n",
    );
    assert!(
        err.contains("config.md:3: `Max iterations` is set again (line 2 no longer counts)"),
        "{err}"
    );
    assert!(
        err.contains(".agent.md:3: `Agent command` is set again (line 2 no longer counts)"),
        "{err}"
    );
}

/// Set again with a value that is no value, a setting keeps its earlier line: `status` (which
/// reads settings leniently) does not say that line no longer counts.
#[test]
fn a_setting_set_again_with_a_bad_value_keeps_the_earlier_line() {
    let err = warnings_for(
        "## Limits\n- **Max iterations**: 5\n- **Max iterations**: many\n",
        "## Agent\n- **Agent command**: ./a.sh\n",
    );
    assert!(err.contains("config.md:3"), "the bad value is named: {err}");
    assert!(!err.contains("no longer counts"), "{err}");
}

#[test]
fn a_setting_in_the_wrong_file_or_without_bullet_form_is_named() {
    let err = warnings_for(
        "## Limits\nMax iterations: 5\n\n## Agent\n- **Jobs**: 2\n",
        "## Agent\nAgent command: ./run.sh\n- **Jobs**: 3\n\n## Limits\n- **Max iterations**: 3\n",
    );
    assert!(
        err.contains(
            "config.md:2: `Max iterations: 5` is not read: settings are bullets like `- **Max iterations**: 5`"
        ),
        "{err}"
    );
    assert!(
        err.contains("config.md:5: unknown key `Jobs` in section `Agent` (ignored); `Jobs` belongs in config.md, under `## Limits`"),
        "{err}"
    );
    assert!(err.contains("`- **Agent command**: ./run.sh`"), "{err}");
    assert!(
        err.contains(".agent.md:3: unknown key `Jobs` in section `Agent` (ignored); `Jobs` belongs in config.md, under `## Limits`"),
        "{err}"
    );
    // A config.md section in .agent.md.
    assert!(
        err.contains(".agent.md:6: `Max iterations` is a config.md setting: it is ignored in .agent.md (put it in config.md, under `## Limits`)"),
        "{err}"
    );
    // Prose and well-formed files stay quiet.
    let err = warnings_for(
        "# Notes\n\nWhy: we like short phases.\n\n## Limits\n- **Jobs**: 2\n",
        "# Agent\n\n## Agent\n- **Agent command**: ./run.sh\n",
    );
    assert_eq!(err, "");
}

// ---- 9. conventions ----

#[test]
fn completions_print_a_script_for_each_shell() {
    let p = Project::new();
    let out = p.cmd().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("_automaton()"), "{text}");
    assert!(text.contains("complete -F _automaton"), "{text}");
    assert!(
        text.contains("orchestrate") && text.contains("init"),
        "{text}"
    );
    for (shell, mark) in [
        ("zsh", "#compdef automaton"),
        ("fish", "complete -c automaton"),
        ("elvish", "edit:completion:arg-completer[automaton]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = p.cmd().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains(mark), "{shell}: {}", stdout(&out));
    }
    // They need no project.
    let empty = tempfile::tempdir().unwrap();
    bare(&p, empty.path())
        .args(["completions", "bash"])
        .assert()
        .success();
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

#[test]
fn man_prints_a_roff_page() {
    let p = Project::new();
    let out = p.cmd().arg("man").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(".ie") || text.contains(".TH automaton 1"),
        "{text}"
    );
    assert!(text.contains(".TH automaton 1"), "{text}");
    assert!(text.contains(".SH NAME"), "{text}");
    assert!(text.contains("orchestrate"), "{text}");
}

#[test]
fn task_create_json_and_json_errors() {
    let p = Project::new();
    let out = p
        .cmd()
        .args(["task", "create", "auth", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["created"], "tasks/auth");
    assert_eq!(doc["state"], "new");
    assert_eq!(doc["dir"], p.join("tasks/auth").display().to_string());

    // In --json mode an error is a JSON object on stdout, with the exit code.
    let json_error = |args: &[&str], cwd: &Path, code: i32| {
        let out = bare(&p, cwd).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stdout(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)));
        assert_eq!(doc["event"], "error");
        assert_eq!(doc["exit_code"], code);
        doc["error"].as_str().unwrap().to_string()
    };
    let msg = json_error(&["task", "create", "auth", "--json"], p.path(), 1);
    assert!(msg.contains("already exists"), "{msg}");
    let msg = json_error(
        &["task", "create", "x", "--at", "bogus", "--json"],
        p.path(),
        1,
    );
    assert!(msg.contains("unknown state `bogus`"), "{msg}");
    let missing = p.join("no-such-folder");
    let msg = json_error(
        &["-C", missing.to_str().unwrap(), "status", "--json"],
        p.path(),
        1,
    );
    assert!(msg.contains("does not exist"), "{msg}");
    let msg = json_error(&["init", "--json"], &p.join("tasks/auth"), 66);
    assert!(msg.contains("inside the task folder"), "{msg}");
}

#[test]
fn help_texts_say_what_the_commands_take_and_do() {
    let p = Project::new();
    let out = p.cmd().args(["continue", "--help"]).output().unwrap();
    let text = stdout(&out);
    assert!(!text.contains("DESCRIPTION"), "{text}");
    assert!(text.contains("--max-phase-time"), "{text}");
    let out = p.cmd().args(["orchestrate", "--help"]).output().unwrap();
    assert!(stdout(&out).contains("[DESCRIPTION]"));
    let out = p.cmd().args(["task", "--help"]).output().unwrap();
    let text = stdout(&out);
    assert!(!text.contains("inspect or change"), "{text}");
    assert!(text.contains("Create task folders"), "{text}");
    let out = p.cmd().arg("--help").output().unwrap();
    let text = stdout(&out);
    assert!(!text.contains("inspect or change"), "{text}");
    assert!(text.contains("-C, --project <DIR>"), "{text}");
}

#[test]
fn zero_durations_are_refused() {
    let p = Project::new();
    for flag in ["--max-phase-time", "--max-total-time", "--stall-timeout"] {
        for zero in ["0", "0s", "0m"] {
            p.orchestrate_cmd()
                .args([flag, zero, "x"])
                .assert()
                .code(2)
                .stderr(predicate::str::contains(format!("flag {flag}: `")))
                .stderr(predicate::str::contains("expected a duration above 0"));
        }
    }
    p.cmd()
        .env("AUTOMATON_AGENT", crate::harness::agent_command())
        .args(["continue", "--max-phase-time", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected a duration above 0"));
    assert!(!p.join("tasks").exists());
    p.write(
        ".automaton/config.md",
        "## Limits\n- **Stall timeout**: 0s\n",
    );
    p.orchestrate_cmd()
        .arg("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "config.md:2: `Stall timeout`: expected a duration above 0",
        ));
    assert!(!p.join("tasks/x").exists());
}

#[test]
fn init_files_snapshot() {
    for agent in ["command", "claude", "gemini", "opencode"] {
        let p = Project::new();
        p.cmd().args(["init", "--agent", agent]).assert().success();
        insta::assert_snapshot!(
            format!("init_{agent}_agent_md"),
            p.read(".automaton/.agent.md")
        );
        if agent == "command" {
            insta::assert_snapshot!("init_config_md", p.read(".automaton/config.md"));
            insta::assert_snapshot!("init_gitignore", p.read(".gitignore"));
        }
    }
}
