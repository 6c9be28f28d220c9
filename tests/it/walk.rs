//! The newcomer walk: a fresh git repository with one commit, a gate, a FAIL verdict, manual
//! mode, `watch --once`, `detect-vram --human` and `--help`, read as a first-time user reads
//! them. Each report line says what it means: the state and what is done, a branch with no
//! commits of its own, the task and the way out of a stop, and no line promising what the
//! command does not do.

use crate::harness::Project;
use crate::isolation::git;

const TASK: &str = "tasks/add-auth";

/// A git repository with one commit, whose `.agent.md` holds `agent` under `## Agent`.
fn repo(agent: &str) -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write(".automaton/.agent.md", format!("## Agent\n{agent}\n"));
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

/// The run's environment: the scripted agent, no git identity anywhere.
fn envs(p: &Project) -> Vec<(&'static str, String)> {
    let empty = p.home().join("empty-gitconfig");
    std::fs::write(&empty, "").unwrap();
    vec![
        ("GIT_CONFIG_GLOBAL", empty.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_string()),
    ]
}

/// `orchestrate ARGS` with the scripted agent doing `behavior`: (exit code, stdout, stderr).
fn orchestrate(p: &Project, behavior: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = p.orchestrate_cmd();
    c.envs(envs(p)).args(args);
    match behavior {
        "" => c.env_remove("AGENT_BEHAVIOR"),
        b => c.env("AGENT_BEHAVIOR", b),
    };
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The binary with `args` (`--project` and the private home added).
fn cmd(p: &Project, args: &[&str]) -> (i32, String, String) {
    let out = p.cmd().envs(envs(p)).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `- **Status**:` line of `task`'s block in a text report.
fn status_line(report: &str, task: &str) -> String {
    let block = report
        .split(&format!("**Task: {task}**\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no block of {task} in\n{report}"));
    block
        .lines()
        .find(|l| l.starts_with("- **Status**: "))
        .unwrap_or_else(|| panic!("no Status line for {task} in\n{report}"))
        .to_string()
}

/// A task gated before design: its Status line names what is done and what runs next (never
/// the finished phase as if it were the state), its branch, which has no commits yet, is not
/// called merged, and the gate's progress line names the task once. The end-of-run report and
/// `status` say it the same way; `status --json` keeps its values.
#[test]
fn a_gated_task_says_what_is_done_what_is_next_and_that_its_branch_has_nothing_to_merge() {
    let p = repo("- **Approve before**: design");
    let (code, stdout, stderr) = orchestrate(&p, "", &["add auth"]);
    assert_eq!(code, 20, "{stdout}{stderr}");
    let (_, status, _) = cmd(&p, &["status"]);
    for report in [&stdout, &status] {
        assert_eq!(
            status_line(report, TASK),
            "- **Status**: Research done; next: design",
            "{report}"
        );
        assert!(
            report.contains(
                "- **Branch**: automaton/add-auth (no commits of its own: nothing to merge)\n"
            ),
            "{report}"
        );
        assert!(!report.contains("merged into"), "{report}");
    }
    assert!(
        stderr.contains("⏸ tasks/add-auth waits for approval before design; run `automaton approve tasks/add-auth`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("tasks/add-auth: tasks/add-auth"),
        "{stderr}"
    );
    let (_, json, _) = cmd(&p, &["status", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let t = crate::harness::task_of(&doc, TASK);
    assert_eq!(t["state"], "design");
    assert_eq!(t["status"], "Research");
    assert_eq!(t["own_commits"], 0);
    // git's own word: a branch with no commits of its own is an ancestor of its base.
    assert_eq!(t["merged"], true);
}

/// A FAIL verdict: the stop line names the task, its VERDICT.md and the way out (`--manual`
/// creates the fix tasks, then `--referee-again`); the text report says who it waits for, as
/// `status --json`'s `waiting_for` does; a failed task's branch without commits has nothing
/// to merge; and manual mode, which leaves the task waiting, does not say
/// ORCHESTRATION_COMPLETE.
#[test]
fn a_fail_verdict_names_the_task_its_verdict_file_and_the_way_out() {
    let p = repo("");
    let (code, stdout, stderr) = orchestrate(&p, "referee=fail", &["add auth"]);
    assert_eq!(code, 10, "{stdout}{stderr}");
    let stop = "⚠️ **HUMAN INTERVENTION REQUIRED**: tasks/add-auth: referee verdict is FAIL \
                (tasks/add-auth/VERDICT.md); `automaton orchestrate --manual` creates its fix \
                tasks; once they are complete, `automaton orchestrate --task tasks/add-auth \
                --referee-again` runs its referee again\n";
    assert!(stdout.ends_with(stop), "{stdout}");
    let (_, status, _) = cmd(&p, &["status"]);
    for report in [&stdout, &status] {
        assert!(
            report.contains("- **Waiting for**: a person (decide on the verdict)\n"),
            "{report}"
        );
        assert!(
            report.contains(
                "- **Branch**: automaton/add-auth (no commits of its own: nothing to merge)\n"
            ),
            "{report}"
        );
    }
    assert!(status.contains(&format!("\n{stop}")), "{status}");
    let (_, json, _) = cmd(&p, &["status", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let t = crate::harness::task_of(&doc, TASK);
    assert_eq!(t["waiting_for"], "person");
    assert_eq!(t["decision"], "decide_verdict");

    // Manual mode creates the fix tasks; the task still waits for a person.
    let (code, manual, _) = cmd(&p, &["orchestrate", "--manual"]);
    assert_eq!(code, 19, "{manual}");
    assert!(!manual.contains("ORCHESTRATION_COMPLETE"), "{manual}");
    assert!(
        manual.contains(
            "tasks/add-auth: referee verdict is FAIL (tasks/add-auth/VERDICT.md); run its fix \
             tasks (next: `automaton orchestrate --task tasks/add-auth-fix-"
        ),
        "{manual}"
    );
    assert!(
        manual.contains("`automaton orchestrate --task tasks/add-auth --referee-again --step` runs its referee again"),
        "{manual}"
    );
    // A fix task made from it: new, from the original, and the phase that runs next.
    assert!(
        manual.contains("- **Status**: New (from tasks/add-auth); next: bug_find\n"),
        "{manual}"
    );
    // The list of fix tasks says each one's Status as its own block does.
    assert!(
        manual.contains("— Status: New (from tasks/add-auth); next: bug_find — Command:"),
        "{manual}"
    );
}

/// Manual mode over a project whose every task is complete is a completed orchestration.
#[test]
fn manual_mode_says_orchestration_complete_only_when_every_task_is() {
    let p = Project::new();
    p.write("tasks/done/VERDICT.md", "Verdict: PASS\n");
    let (code, out, _) = cmd(&p, &["orchestrate", "--manual"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with(
            "Summary: 1 complete, 0 waiting for a person, 0 not started\nORCHESTRATION_COMPLETE\n"
        ),
        "{out}"
    );
    p.write("tasks/next/SPEC.md", "x");
    let (code, out, _) = cmd(&p, &["orchestrate", "--manual"]);
    assert_eq!(code, 25, "{out}");
    assert!(!out.contains("ORCHESTRATION_COMPLETE"), "{out}");
}

/// `watch --once` reads no keys, so it lists none; `--size` says its bounds in its help and
/// refuses a size out of them naming which part and the bounds.
#[test]
fn watch_once_lists_no_keys_and_size_says_its_bounds() {
    let p = Project::new();
    p.write("tasks/a/SPEC.md", "x");
    let (code, frame, err) = cmd(&p, &["watch", "--once", "--size", "100x20"]);
    assert_eq!(code, 0, "{err}");
    assert!(frame.ends_with("\n row 1/1\n"), "{frame}");
    for key in ["q quit", "j k", "Enter log", "attach"] {
        assert!(!frame.contains(key), "{key} in\n{frame}");
    }
    let (code, _, err) = cmd(&p, &["watch", "--once", "--size", "100x10"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`100x10`: the rows must be a number from 20 to 1000 (not `10`)"),
        "{err}"
    );
    let (code, _, err) = cmd(&p, &["watch", "--once", "--size", "5x40"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`5x40`: the columns must be a number from 20 to 1000 (not `5`)"),
        "{err}"
    );
    let (_, help, _) = cmd(&p, &["watch", "--help"]);
    // clap wraps the text to the terminal.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("each from 20 to 1000"), "{help}");
    assert!(help.contains("at least 20 columns and 20 rows"), "{help}");
}

/// `detect-vram --human` says what its three budgets are and how they relate, keeping the
/// source of the max peak on its line.
#[test]
fn detect_vram_human_says_how_the_budgets_relate() {
    let p = Project::new();
    p.write(
        ".automaton/scripts/vram_detect.sh",
        "echo '{\"gpu_vram_gb\": 8, \"ram_gb\": 16, \"recommended_kb\": 16000, \"max_peak_context_kb\": 20000}'",
    );
    let (code, out, err) = cmd(&p, &["detect-vram", "--human"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("- **Max peak context per sub-task: 20000 tokens** (detection script)\n"),
        "{out}"
    );
    assert!(out.contains("\nHow the budgets relate:\n"), "{out}");
    assert!(
        out.contains("- The model context window is the most the model takes in one request"),
        "{out}"
    );
    assert!(
        out.contains("- Recommended is what each sub-task is planned for: at most the window"),
        "{out}"
    );
    assert!(
        out.contains("here the detection script's own figure, used as given (it may be above the recommended budget)."),
        "{out}"
    );
    // The JSON is unchanged by the words.
    let (_, json, _) = cmd(&p, &["detect-vram"]);
    assert!(!json.contains("How the budgets"), "{json}");
}

/// `--help` lists every exit code `automaton help exit-codes` explains, and no help page
/// sends a reader to the README (an installed binary has none beside it).
#[test]
fn help_lists_every_exit_code_and_never_points_at_the_readme() {
    let p = Project::new();
    let (_, page, _) = cmd(&p, &["help", "exit-codes"]);
    let codes: Vec<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    assert!(codes.len() > 25, "{page}");
    let (_, help, _) = cmd(&p, &["--help"]);
    let exit = help
        .split("Exit codes")
        .nth(1)
        .unwrap_or_else(|| panic!("no exit codes in\n{help}"));
    let listed: Vec<&str> = exit
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .collect();
    for code in &codes {
        assert!(
            listed.contains(&code.as_str()),
            "--help lacks exit code {code}:\n{exit}"
        );
    }
    let commands: Vec<String> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(commands.contains(&"status".to_string()), "{help}");
    assert!(!help.contains("README"), "{help}");
    for c in &commands {
        let (_, sub, _) = cmd(&p, &[c.as_str(), "--help"]);
        assert!(
            !sub.contains("README"),
            "`{c} --help` points at the README:\n{sub}"
        );
    }
}
