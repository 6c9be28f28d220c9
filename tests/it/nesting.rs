//! Decomposition inside sub-tasks: bounded depth, and one cap on running agents across levels.

use crate::harness::Project;

const PLAN: &str =
    "| Sub-task | Wave | Depends on |\n|---|---|---|\n| x | 1 | - |\n| y | 1 | - |\n";

#[test]
fn decomposition_nests_at_most_max_depth_levels() {
    let p = Project::new();
    p.orchestrate()
        .env("AGENT_BEHAVIOR", "research=decompose")
        .env("AGENT_DECOMPOSITION", PLAN)
        .arg("nest")
        .status(18)
        .stdout_contains("HUMAN INTERVENTION REQUIRED")
        .stderr_any()
        .run();
    let doc = p.status_json();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 7, "1 + 2 + 4 tasks, and no deeper: {doc:#}");
    for t in tasks
        .iter()
        .filter(|t| t["path"].as_str().unwrap().matches("/subtasks/").count() == 2)
    {
        assert_eq!(t["state"], "human_intervention");
        assert!(
            t["reason"].as_str().unwrap().contains("2 levels deep"),
            "{t:#}"
        );
    }
    assert!(!p.join("tasks/nest/subtasks/x/subtasks/x/subtasks").exists());
}

#[test]
fn jobs_caps_running_agents_across_levels() {
    let p = Project::new();
    let deep = "| Sub-task | Wave | Depends on |\n|---|---|---|\n| p | 1 | - |\n| q | 1 | - |\n";
    p.orchestrate()
        .env(
            "AGENT_BEHAVIOR",
            "*=slow nest:research=decompose x:research=decompose y:research=decompose",
        )
        .env("AGENT_SLEEP", "0.05")
        .env("AGENT_DECOMPOSITION", PLAN)
        .env("AGENT_DECOMPOSITION_DEEP", deep)
        .agent_log()
        .args(["--jobs", "2", "nest"])
        .stdout_any()
        .stderr_any()
        .run();
    // Every leaf (x/p, x/q, y/p, y/q) ran its lifecycle; never more than 2 agents at once.
    let log = p.read("agent.log");
    let spans: Vec<(u128, u128)> = log
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect();
    assert_eq!(spans.len(), 1 + 2 + 4 * 8, "{log}");
    let most = spans
        .iter()
        .map(|(s, _)| spans.iter().filter(|(a, b)| a <= s && s < b).count())
        .max()
        .unwrap();
    assert!(most <= 2, "{most} agents ran at once with --jobs 2:\n{log}");
}

#[test]
fn naming_a_parent_retries_its_stopped_sub_tasks() {
    let p = Project::new();
    p.orchestrate()
        .env("AGENT_BEHAVIOR", "par:research=decompose x:implement=exit3")
        .env("AGENT_DECOMPOSITION", PLAN)
        .arg("par")
        .status(18)
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of("tasks/par/subtasks/x"), "human_intervention");
    assert!(p.join("tasks/par/subtasks/x/.stop").is_file());
    // The agent is fixed; the command `status` shows for the parent retries x.
    p.orchestrate()
        .args(["--task", "tasks/par"])
        .stdout_any()
        .stderr_contains("↻ tasks/par/subtasks/x: retrying after: agent exited with status 3")
        .run();
    assert_eq!(p.state_of("tasks/par"), "complete");
}
