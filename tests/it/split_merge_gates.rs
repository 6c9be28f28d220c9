//! The two gates for people, through the real binary and the scripted agent
//! (tests/agents/agent.sh) over real folders and git repositories: `- **Approve before**:
//! subtasks` stops a decomposed task after its plan and before any sub-task folder is made
//! (`approve` starts the waves, `reject` sends the plan back to the decomposition phase), and
//! `- **Approve before**: merge` holds a complete isolated task's branch until a person
//! approves it (`merge` refuses before; `reject` sends it back for a rework round).

use crate::harness::{Project, Test};
use crate::isolation::git;

/// `automaton`'s documented code for a task waiting at a gate (README, exit codes).
const AWAITING_APPROVAL: i32 = 20;

/// The parent every split test drives: `orchestrate p` creates `tasks/p`.
const PARENT: &str = "tasks/p";
/// The task every merge test drives.
const TASK: &str = "tasks/a";

/// A DECOMPOSITION.md from rows of (name, wave, depends on, estimate, scope).
fn plan(rows: &[(&str, u32, &str, &str, &str)]) -> String {
    let mut s = String::from(
        "# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n",
    );
    for (name, wave, deps, estimate, scope) in rows {
        s.push_str(&format!(
            "| {name} | {wave} | {deps} | {estimate} | {name}.txt | {scope} |\n"
        ));
    }
    s
}

fn first_plan() -> String {
    plan(&[
        ("parse", 1, "-", "3k", "Parse the input"),
        ("render", 2, "parse", "4k", "Render the output"),
    ])
}

/// A project with the task-split gate, whose parent's research writes the plan (no
/// decomposition phase is configured: a rejected plan goes back to one all the same);
/// sub-tasks skip the optional design phases.
fn split_project() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    )
    .write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Approve before**: subtasks\n",
    );
    p
}

/// `orchestrate` whose parent's research writes `first_plan()`.
fn run_split(p: &Project) -> Test {
    p.orchestrate()
        .agent_log()
        .env("USER", "tester")
        .env("AGENT_DECOMPOSITION", first_plan())
        .behavior("p:research=decompose p:decomposition=decompose")
        .stderr_any()
}

fn tester(p: &Project) -> Test {
    p.test().env("USER", "tester")
}

fn read_if(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.join(rel)).unwrap_or_default()
}

fn records(p: &Project, rel: &str) -> Vec<serde_json::Value> {
    read_if(p, &format!("{rel}/.state.approvals"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The first run stops at the split gate: only the parent's research ran, no sub-task
/// folder exists, and `status` shows the plan.
fn stopped_at_the_split(p: &Project) {
    run_split(p)
        .arg("p")
        .status(AWAITING_APPROVAL)
        .stdout_contains(
            "tasks/p waits for approval before its sub-tasks start (the task split in \
             DECOMPOSITION.md); run `automaton approve tasks/p`",
        )
        .run();
    assert_eq!(p.phases_run(), ["research"]);
    assert!(
        !p.join(&format!("{PARENT}/subtasks")).exists(),
        "no sub-task folder is made before the split is approved"
    );
    assert_eq!(p.read(&format!("{PARENT}/.state")), "decomposition\n");
}

#[test]
fn the_split_gate_shows_the_plan_and_approve_starts_the_waves() {
    let p = split_project();
    stopped_at_the_split(&p);

    let text = p.status_text();
    assert!(
        text.contains(
            "- **Task split** (2 sub-tasks in 2 waves; none is made before it is approved):\n  \
             - Wave 1:\n    - parse (3,000 tokens peak): Parse the input\n  - Wave 2:\n    \
             - render (4,000 tokens peak, after parse): Render the output\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("- **Awaiting approval**: subtasks (covers SPEC.md, DECOMPOSITION.md)"),
        "{text}"
    );
    let t = p.task_json(PARENT);
    assert_eq!(t["awaiting_approval"], "subtasks");
    assert_eq!(t["waiting_for"], "person");
    assert_eq!(t["decision"], "approve_gate");
    assert_eq!(t["command"], "automaton approve tasks/p");
    let waves = &t["split_plan"]["waves"];
    assert_eq!(waves[0]["wave"], 1);
    assert_eq!(waves[0]["subtasks"][0]["name"], "parse");
    assert_eq!(waves[0]["subtasks"][0]["scope"], "Parse the input");
    assert_eq!(waves[0]["subtasks"][0]["estimated_peak_context"], 3000);
    assert_eq!(waves[1]["subtasks"][0]["name"], "render");
    assert_eq!(waves[1]["subtasks"][0]["depends_on"][0], "parse");

    // A second run stops at the same gate, and still makes no folder.
    run_split(&p)
        .arg("p")
        .status(AWAITING_APPROVAL)
        .stdout_any()
        .run();
    assert_eq!(p.phases_run(), ["research"]);
    assert!(!p.join(&format!("{PARENT}/subtasks")).exists());

    tester(&p)
        .args(["approve", PARENT])
        .stdout_contains("Approved subtasks of tasks/p by tester (DECOMPOSITION.md sha256 ")
        .run();
    let recs = records(&p, PARENT);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["gate"], "subtasks");
    let covered: Vec<&String> = recs[0]["artifacts"].as_object().unwrap().keys().collect();
    assert_eq!(covered, ["DECOMPOSITION.md", "SPEC.md"]);
    assert!(p.task_json(PARENT)["split_plan"].is_null());

    run_split(&p)
        .args(["--task", PARENT])
        .stdout_contains("ORCHESTRATION_COMPLETE")
        .run();
    assert_eq!(p.state_of(PARENT), "complete");
    assert_eq!(p.state_of("tasks/p/subtasks/parse"), "complete");
    assert_eq!(p.state_of("tasks/p/subtasks/render"), "complete");
    // The decomposition phase never ran: the approved plan was the one research wrote.
    assert!(!p.phases_run().contains(&"decomposition".to_string()));
}

#[test]
fn rejecting_the_split_sends_the_plan_back_to_decomposition_with_the_reason() {
    let p = split_project();
    stopped_at_the_split(&p);
    let old = p.read(&format!("{PARENT}/DECOMPOSITION.md"));

    tester(&p)
        .args(["reject", PARENT, "--reason", "render is too big: split it in two"])
        .stdout(
            "Rejected DECOMPOSITION.md of tasks/p: kept at tasks/p/logs/rejected/DECOMPOSITION-1.md; \
             decomposition runs again with your reason (state `decomposition`)\nNext:\n  \
             automaton orchestrate --task tasks/p\n",
        )
        .run();
    // Nothing is deleted: the rejected plan is kept, whole.
    assert_eq!(
        p.read(&format!("{PARENT}/logs/rejected/DECOMPOSITION-1.md")),
        old
    );
    assert!(!p.join(&format!("{PARENT}/DECOMPOSITION.md")).exists());
    let recs = records(&p, PARENT);
    assert_eq!(recs[0]["kind"], "reject");
    assert_eq!(recs[0]["gate"], "subtasks");
    assert_eq!(recs[0]["phase"], "decomposition");
    assert_eq!(recs[0]["rejected"], "logs/rejected/DECOMPOSITION-1.md");

    // The decomposition phase writes a new plan, which waits at the gate in turn.
    let again = plan(&[
        ("parse", 1, "-", "3k", "Parse the input"),
        ("layout", 2, "parse", "4k", "Lay the output out"),
        ("paint", 2, "parse", "4k", "Paint the output"),
    ]);
    run_split(&p)
        .args(["--task", PARENT])
        .env("AGENT_DECOMPOSITION_AGAIN", &again)
        .status(AWAITING_APPROVAL)
        .stdout_contains("tasks/p waits for approval before its sub-tasks start")
        .run();
    assert_eq!(p.phases_run(), ["research", "decomposition"]);
    let prompt = read_if(&p, "tasks/p/logs/decomposition-1.prompt.md");
    assert!(prompt.contains("## Rejected: do it again"), "{prompt}");
    assert!(
        prompt.contains("> render is too big: split it in two"),
        "{prompt}"
    );
    assert!(
        prompt.contains("tasks/p/logs/rejected/DECOMPOSITION-1.md"),
        "{prompt}"
    );
    assert!(!p.join(&format!("{PARENT}/subtasks")).exists());
    let t = p.task_json(PARENT);
    assert_eq!(t["awaiting_approval"], "subtasks");
    let names: Vec<&str> = t["split_plan"]["waves"][1]["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["layout", "paint"]);
}

/// A git repository with one commit, the merge gate, and a task whose implement writes
/// `greeting.txt` (and `bonjour.txt` once a prompt asks for French).
fn merge_project(rework: u32) -> Project {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write(
            ".automaton/config.md",
            format!(
                "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n\n## Limits\n\
                 - **Rework**: {rework}\n"
            ),
        )
        .write(
            ".automaton/.agent.md",
            "# Agent\n\n## Agent\n- **Approve before**: merge\n",
        )
        .write(&format!("{TASK}/SPEC.md"), "# Spec\ngreet the user\n");
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    p
}

/// A command against `p` with no git identity of the developer's.
fn in_repo(p: &Project, t: Test) -> Test {
    let empty = p.home().join("empty-gitconfig");
    std::fs::write(&empty, "").unwrap();
    t.env("GIT_CONFIG_GLOBAL", empty.display().to_string())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("USER", "tester")
}

fn run_merge_task(p: &Project) -> Test {
    in_repo(p, p.orchestrate())
        .args(["--task", TASK])
        .env(
            "AGENT_IMPLEMENT",
            r#"echo hello > greeting.txt; case $prompt in *"in French"*) echo bonjour > bonjour.txt ;; esac"#,
        )
        .stderr_any()
}

/// The first run ends with the task complete, its branch held at the merge gate.
fn complete_at_the_merge_gate(p: &Project) {
    run_merge_task(p)
        .status(AWAITING_APPROVAL)
        .stdout_contains(
            "tasks/a waits for approval before `automaton merge` takes its branch; run \
             `automaton approve tasks/a`",
        )
        .run();
    assert_eq!(p.state_of(TASK), "complete");
}

#[test]
fn the_merge_gate_shows_the_diff_refuses_merge_until_approved_then_merges() {
    let p = merge_project(0);
    complete_at_the_merge_gate(&p);

    let text = p.status_text();
    assert!(
        text.contains(
            "- **Integration**: automaton/a into main: 1 file changed, 1 insertion, 0 deletions\n  \
             - greeting.txt (+1 -0)\n  - the whole diff: `git diff main...automaton/a`\n"
        ),
        "{text}"
    );
    assert!(text.contains("- **Awaiting approval**: merge"), "{text}");
    let t = p.task_json(TASK);
    assert_eq!(t["awaiting_approval"], "merge");
    assert_eq!(t["waiting_for"], "person");
    assert_eq!(t["command"], "automaton approve tasks/a");
    assert!(t["merge_command"].is_null(), "{t:#}");
    let i = &t["integration"];
    assert_eq!(i["branch"], "automaton/a");
    assert_eq!(i["base_branch"], "main");
    assert_eq!(i["files"], 1);
    assert_eq!(i["insertions"], 1);
    assert_eq!(i["deletions"], 0);
    assert_eq!(i["changes"][0]["path"], "greeting.txt");

    in_repo(&p, p.test())
        .args(["merge", TASK])
        .status(AWAITING_APPROVAL)
        .stderr_contains(
            "tasks/a waits for approval before its branch automaton/a is merged (`- **Approve \
             before**: merge`)",
        )
        .run();
    assert!(!p.join("greeting.txt").exists(), "nothing merged yet");

    in_repo(&p, p.test())
        .args(["approve", TASK])
        .stdout_regex(
            r"^Approved merge of tasks/a by tester \(.*VERDICT\.md sha256 [0-9a-f]{12}.*, branch automaton/a at [0-9a-f]{12}\)\n",
        )
        // The way on is the merge itself: a run has nothing left to do for a complete task.
        .stdout_ends_with("Next:\n  automaton merge tasks/a\n")
        .run();
    let recs = records(&p, TASK);
    assert_eq!(recs[0]["gate"], "merge");
    assert!(
        recs[0]["artifacts"]
            .as_object()
            .unwrap()
            .contains_key("VERDICT.md")
    );
    let t = p.task_json(TASK);
    assert!(t["awaiting_approval"].is_null());
    assert_eq!(t["merge_command"], "automaton merge tasks/a");

    in_repo(&p, p.test())
        .args(["merge", TASK])
        .stdout("merged automaton/a into main (fast-forward)\n")
        .run();
    assert_eq!(p.read("greeting.txt"), "hello\n");
    // Once merged, nothing waits at the gate, and a run ends complete.
    assert_eq!(p.task_json(TASK)["merged"], true);
    run_merge_task(&p)
        .stdout_contains("ORCHESTRATION_COMPLETE")
        .run();
}

/// The approval covers the branch as it was: a commit added to it afterwards lets the
/// approval lapse, and `merge` refuses again until the new tip is approved.
#[test]
fn a_commit_after_the_merge_approval_lets_it_lapse() {
    let p = merge_project(0);
    complete_at_the_merge_gate(&p);
    in_repo(&p, p.test())
        .args(["approve", TASK])
        .stdout_any()
        .run();
    assert!(p.task_json(TASK)["awaiting_approval"].is_null());

    let worktree = p.task_json(TASK)["worktree"].as_str().unwrap().to_string();
    let wt = std::path::Path::new(&worktree);
    std::fs::write(wt.join("later.txt"), "added after the approval\n").unwrap();
    git(wt, &["add", "later.txt"]);
    git(wt, &["commit", "--quiet", "-m", "a later change"]);

    let t = p.task_json(TASK);
    assert_eq!(t["awaiting_approval"], "merge", "{t:#}");
    let lapsed = t["approval_lapsed"].as_str().unwrap_or_default();
    assert!(
        lapsed.contains("branch automaton/a changed after merge was approved"),
        "{t:#}"
    );
    in_repo(&p, p.test())
        .args(["merge", TASK])
        .status(AWAITING_APPROVAL)
        .stderr_any()
        .run();
    assert!(!p.join("later.txt").exists(), "merged unreviewed");
}

#[test]
fn rejecting_at_the_merge_gate_reworks_with_the_reason_then_waits_again() {
    // `- **Rework**: 0`: the round is the person's, not one of the agents' rounds.
    let p = merge_project(0);
    complete_at_the_merge_gate(&p);

    in_repo(&p, p.test())
        .args(["reject", TASK, "--reason", "also greet in French"])
        .stdout(
            "Sent tasks/a back from the merge gate: rework round 1 has your reason as its \
             finding (what it set aside is in tasks/a/logs/rework/1/); implement runs again \
             (state `implement`), then the review phases, then the merge gate again\nNext:\n  \
             automaton orchestrate --task tasks/a\n",
        )
        .run();
    let findings = read_if(&p, "tasks/a/logs/rework/1/FINDINGS.md");
    assert!(
        findings.contains("- **Cause**: rejected_at_merge: also greet in French"),
        "{findings}"
    );
    assert!(p.join("tasks/a/logs/rework/1/VERDICT.md").is_file());
    assert!(p.join("tasks/a/logs/rework/1/IMPLEMENTATION.md").is_file());
    assert!(!p.join("tasks/a/VERDICT.md").exists());
    assert_eq!(p.state_of(TASK), "implement");
    let recs = records(&p, TASK);
    assert_eq!(recs[0]["kind"], "reject");
    assert_eq!(recs[0]["gate"], "merge");
    assert_eq!(recs[0]["rejected"], "logs/rework/1");

    // The round runs implement with the reason, then the review phases, and stops at the
    // merge gate again.
    complete_at_the_merge_gate(&p);
    let prompt = read_if(&p, "tasks/a/logs/implement-2.prompt.md");
    assert!(
        prompt.contains("## Rework round 1: fix the findings"),
        "{prompt}"
    );
    assert!(prompt.contains("also greet in French"), "{prompt}");
    // Said as the round's finding, not also as a rejection of implement's artifact.
    assert!(!prompt.contains("## Rejected: do it again"), "{prompt}");
    assert!(
        read_if(&p, "tasks/a/logs/referee-2.prompt.md")
            .contains("## Rework round 1: review what this round changed")
    );
    let t = p.task_json(TASK);
    assert_eq!(t["rework_round"], 1);
    assert_eq!(t["awaiting_approval"], "merge");
    assert_eq!(t["integration"]["files"], 2);
    assert_eq!(t["integration"]["changes"][0]["path"], "bonjour.txt");
    in_repo(&p, p.test())
        .args(["merge", TASK])
        .status(AWAITING_APPROVAL)
        .stderr_any()
        .run();
    assert!(!p.join("bonjour.txt").exists());
}

#[test]
fn a_persons_merge_round_is_not_counted_in_the_rework_rounds_said() {
    let p = merge_project(1);
    complete_at_the_merge_gate(&p);
    in_repo(&p, p.test())
        .args(["reject", TASK, "--reason", "also greet in French"])
        .stdout_any()
        .run();
    // The referee now fails with a new finding each time: automaton's one round (folder 2,
    // after the person's) is round 1 of 1, then the rounds are spent.
    run_merge_task(&p)
        .behavior("referee=fail_new")
        .status(10)
        .stderr_contains(
            "↻ tasks/a: rework round 1 of 1 (kept in logs/rework/2: the rounds a person asked \
             for do not count): verdict_failed",
        )
        .stdout_contains("the 1 rework round allowed (`- **Rework**: 1`) is spent")
        .run();
    assert!(p.join("tasks/a/logs/rework/2/VERDICT.md").is_file());
    // The agent is told the same number: round 1 of 1, not 2 of 1.
    let prompt = read_if(&p, "tasks/a/logs/implement-3.prompt.md");
    assert!(
        prompt.contains("## Rework round 1 of 1: fix the findings"),
        "{prompt}"
    );
    assert!(
        read_if(&p, "tasks/a/logs/referee-3.prompt.md")
            .contains("## Rework round 1: review what this round changed")
    );
}

#[test]
fn an_unknown_gate_word_is_refused_naming_the_file_line_and_the_gate_meant() {
    let p = Project::new();
    p.write(
        ".automaton/.agent.md",
        "# Agent\n\n## Agent\n- **Approve before**: design, merg\n",
    );
    p.orchestrate()
        .arg("x")
        .status(1)
        .stderr_contains(
            "error: [PROJECT]/.automaton/.agent.md:4: `Approve before`: expected `merg` is not a \
             gate (one of research, decomposition, design, test_design, implement, bug_find, \
             adversarial_bug_find, doc_review, referee, subtasks, merge) (did you mean `merge`?)",
        )
        .run();
    assert!(!p.join("tasks/x").exists());
}

/// The merge gate holds a top-level task's branch only: a decomposed task's sub-tasks merge
/// into its integration branch as they finish, and the run stops once, for the parent, with
/// the parent's approve command (it named each sub-task as waiting, with an `approve` that
/// refused, then merged them anyway).
#[test]
fn the_merge_gate_of_a_decomposed_task_holds_the_parent_not_its_sub_tasks() {
    let p = Project::new();
    p.write("README.md", "# demo\n")
        .write(
            ".automaton/config.md",
            "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
        )
        .write(
            ".automaton/.agent.md",
            "# Agent\n\n## Agent\n- **Approve before**: merge\n",
        );
    git(p.path(), &["init", "--quiet", "-b", "main"]);
    git(p.path(), &["add", "README.md"]);
    git(p.path(), &["commit", "--quiet", "-m", "init"]);
    let two = plan(&[("a", 1, "-", "3k", "One"), ("b", 1, "-", "3k", "Two")]);
    let ran = in_repo(&p, p.orchestrate())
        .envs(crate::isolation::envs(
            &p,
            &two,
            r#"echo "$name" > "$name.txt""#,
        ))
        .arg("p")
        .status(AWAITING_APPROVAL)
        .stdout_contains(
            "tasks/p waits for approval before `automaton merge` takes its branch; run \
             `automaton approve tasks/p`",
        )
        .stderr_any()
        .run();
    assert!(!ran.stdout.contains("subtasks/a waits"), "{}", ran.stdout);
    assert!(
        !ran.stderr.contains("subtasks/a waits for approval"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("⇢ tasks/p/subtasks/a: merged"),
        "{}",
        ran.stderr
    );
    let t = p.task_json("tasks/p");
    assert_eq!(t["awaiting_approval"], "merge");
    assert!(p.task_json("tasks/p/subtasks/a")["awaiting_approval"].is_null());
}
