//! Questions from agents: a phase writes QUESTIONS.md instead of its artifact, the task waits
//! for a person (exit 32), `automaton answer` records the answers in DECISIONS.md, and the
//! phase runs again with them. The scripted agent's `ask` behaviour asks until its prompt has
//! the answers.

use crate::harness::Project;

const TASK: &str = "tasks/a";

fn project() -> Project {
    let p = Project::new();
    p.write(&format!("{TASK}/SPEC.md"), "# Spec\nadd a cache\n");
    p
}

fn read_if(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.join(rel)).unwrap_or_default()
}

#[test]
fn a_question_at_design_is_answered_and_the_phase_runs_again_with_the_answers() {
    let p = project();
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("design=ask")
        .status(32)
        .stdout_contains("the design agent asked 2 questions in tasks/a/QUESTIONS.md")
        .stderr_contains(
            "? tasks/a: the design agent asks 2 questions: Which store should the cache use? / What should the endpoint be called?\n",
        )
        .run();
    assert!(!p.join("tasks/a/DESIGN.md").exists());
    // status and status --json show the questions and the command that answers them.
    let text = p.status_text();
    assert!(text.contains("  1. Which store should the cache use?\n     1=1  Redis (recommended)\n     1=2  SQLite\n  2. What should the endpoint be called?\n"), "{text}");
    let t = p.task_json(TASK);
    assert_eq!(t["decision"], "answer_questions");
    assert_eq!(t["waiting_for"], "person");
    assert_eq!(t["command"], "automaton answer tasks/a");
    assert_eq!(t["questions"][0]["options"][1], "SQLite");
    assert_eq!(t["questions"][0]["recommended"], 1);
    // A missing answer is a usage error that shows what is asked; nothing is recorded.
    p.test()
        .args(["answer", TASK, "1=2"])
        .status(2)
        .stderr_contains("no answer to question 2")
        .stderr_contains("  2. What should the endpoint be called?")
        .run();
    assert!(!p.join("tasks/a/DECISIONS.md").exists());
    // One answer by option number, one in free text.
    p.test()
        .args(["answer", TASK, "1=2", "2=use /v1/cache"])
        .stdout_contains("Recorded 2 answers in tasks/a/DECISIONS.md")
        .run();
    let decisions = read_if(&p, "tasks/a/DECISIONS.md");
    assert!(
        decisions.contains("### 1. Which store should the cache use?\n\nAnswer: SQLite (option 2)"),
        "{decisions}"
    );
    assert!(
        decisions.contains("Answer: use /v1/cache (in their own words)"),
        "{decisions}"
    );
    assert!(p.join("tasks/a/logs/questions/QUESTIONS-1.md").is_file());
    assert!(!p.join("tasks/a/QUESTIONS.md").exists());
    p.orchestrate()
        .args(["--task", TASK])
        .behavior("design=ask")
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(p.state_of(TASK), "complete");
    // The design phase ran again with the answers, and every later phase is given them.
    let design = read_if(&p, "tasks/a/logs/design-2.prompt.md");
    assert!(design.contains("## Decisions people made"), "{design}");
    assert!(design.contains("Answer: SQLite (option 2)"), "{design}");
    assert!(read_if(&p, "tasks/a/logs/referee-1.prompt.md").contains("Answer: use /v1/cache"));
    assert_eq!(
        read_if(&p, "tasks/a/DECISIONS.md"),
        decisions,
        "DECISIONS.md is kept"
    );
}

#[test]
fn every_prompt_says_how_to_ask() {
    let p = project();
    p.orchestrate()
        .args(["--task", TASK])
        .stdout_any()
        .stderr_any()
        .run();
    let prompt = read_if(&p, "tasks/a/logs/implement-1.prompt.md");
    assert!(prompt.contains("## When you must ask a person"), "{prompt}");
    assert!(prompt.contains("`QUESTIONS.md`"), "{prompt}");
}

#[test]
fn answer_without_questions_or_with_a_bad_number_is_refused() {
    let p = project();
    p.test()
        .args(["answer", TASK, "1=x"])
        .status(1)
        .stderr_contains("tasks/a has no QUESTIONS.md: no question waits for an answer")
        .run();
    p.write("tasks/a/QUESTIONS.md", "## 1. Why?\n");
    p.test()
        .args(["answer", TASK, "3=x"])
        .status(2)
        .stderr_contains("`3=x`: there is no question 3 (1 to 1)")
        .run();
    // A number that is none of the options is a slip, not a free-text answer.
    p.write("tasks/a/QUESTIONS.md", "## 1. Which?\n- one\n- two\n");
    p.test()
        .args(["answer", TASK, "1=3"])
        .status(2)
        .stderr_contains("`1=3`: question 1 has options 1 to 2, not 3")
        .run();
    assert!(!p.join("tasks/a/DECISIONS.md").exists());
    p.write("tasks/a/QUESTIONS.md", "## 1. Why?\n- only\n");
    p.test()
        .args(["answer", TASK, "1=x"])
        .status(1)
        .stderr_contains(
            "tasks/a/QUESTIONS.md: question 1 has 1 option: give 2 to 4, or none for a free-text answer",
        )
        .run();
}

#[test]
fn a_subtasks_question_does_not_block_its_siblings() {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    p.orchestrate()
        .env(
            "AGENT_DECOMPOSITION",
            "| Sub-task | Wave | Depends on |\n|---|---|---|\n| x | 1 | - |\n| y | 1 | - |\n",
        )
        .behavior("parent:research=decompose x:implement=ask")
        .arg("parent")
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    let x = p.task_json("tasks/parent/subtasks/x");
    assert_eq!(x["decision"], "answer_questions", "{x:#}");
    assert_eq!(p.state_of("tasks/parent/subtasks/y"), "complete");
    // The parent's way out is the sub-task's answer.
    let parent = p.task_json("tasks/parent");
    assert_eq!(parent["waiting_for"], "person", "{parent:#}");
    assert_eq!(
        parent["command"],
        "automaton answer tasks/parent/subtasks/x"
    );
}
