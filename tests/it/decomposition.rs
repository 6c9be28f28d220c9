//! Decomposed tasks driven through the real binary with the scripted agent
//! (tests/agents/agent.sh): sub-tasks in dependency waves run in parallel, failures block only
//! their dependents, DECOMPOSITION.md edits between runs, cycles, the disjoint-file guard,
//! kill -9 mid-wave, and manual-mode fix tasks for failed sub-tasks.
//!
//! Concurrency is judged from the start/end times the agent records per phase (interval order),
//! never from wall-clock thresholds.

use crate::harness::{
    PATIENCE, Project, Rec, SpawnGuarded, Test, process_gone, task_of, wait_for, wait_gone,
};
use std::collections::BTreeMap;

/// The parent task every test drives: `orchestrate p` creates `tasks/p`.
const PARENT: &str = "tasks/p";

fn sub(name: &str) -> String {
    format!("{PARENT}/subtasks/{name}")
}

/// A DECOMPOSITION.md from rows of (name, wave, depends on, files, scope).
fn plan(rows: &[(&str, u32, &str, &str, &str)]) -> String {
    let mut s = String::from(
        "# Decomposition: test plan\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n",
    );
    for (name, wave, deps, files, scope) in rows {
        s.push_str(&format!(
            "| {name} | {wave} | {deps} | 4k | {files} | {scope} |\n"
        ));
    }
    s
}

/// A project whose tasks skip the optional design phases (six phases per sub-task), to keep
/// the runs short.
fn project() -> Project {
    let p = Project::new();
    p.write(
        ".automaton/config.md",
        "# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n",
    );
    p
}

const SUB_PHASES: [&str; 6] = [
    "research",
    "implement",
    "bug_find",
    "adversarial_bug_find",
    "doc_review",
    "referee",
];

/// `orchestrate` with the agent log on, the parent's research writing `decomposition`, and
/// `behavior` appended to AGENT_BEHAVIOR.
fn run_plan(p: &Project, decomposition: &str, behavior: &str) -> Test {
    p.orchestrate()
        .agent_log()
        .env("AGENT_DECOMPOSITION", decomposition)
        .behavior(&format!("{behavior} p:research=decompose"))
        .stderr_any()
}

fn records(p: &Project) -> Vec<Rec> {
    p.records()
}

/// The [first start, last end] of a task's recorded phases.
fn span(recs: &[Rec], task: &str) -> (u128, u128) {
    let mine: Vec<&Rec> = recs.iter().filter(|r| r.task == task).collect();
    assert!(!mine.is_empty(), "{task} never ran: {recs:#?}");
    (
        mine.iter().map(|r| r.start).min().unwrap(),
        mine.iter().map(|r| r.end).max().unwrap(),
    )
}

fn overlap(a: (u128, u128), b: (u128, u128)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// How many times each (task, phase) ran.
fn run_counts(recs: &[Rec]) -> BTreeMap<(String, String), usize> {
    let mut m = BTreeMap::new();
    for r in recs {
        *m.entry((r.task.clone(), r.phase.clone())).or_insert(0) += 1;
    }
    m
}

fn phases_of(recs: &[Rec], task: &str) -> Vec<String> {
    recs.iter()
        .filter(|r| r.task == task)
        .map(|r| r.phase.clone())
        .collect()
}

fn task<'a>(doc: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    task_of(doc, path)
}

fn status_text(p: &Project) -> String {
    p.status_text()
}

#[test]
fn two_waves_run_in_parallel_and_wave_two_waits_for_wave_one() {
    let p = project();
    let decomposition = plan(&[
        (
            "a",
            1,
            "-",
            "src/a.rs",
            "Parse the config file into settings",
        ),
        ("b", 1, "-", "src/b.rs", "Cache the parsed settings on disk"),
        (
            "c",
            2,
            "a, b",
            "src/c.rs",
            "Wire the CLI to the cached settings",
        ),
    ]);
    // a is quick and b slow, so a slot frees while b still runs: only the barrier keeps c
    // from taking it.
    run_plan(&p, &decomposition, "*=slow a:*=ok")
        .env("AGENT_SLEEP", "0.15")
        .args(["--jobs", "2", "p"])
        .stdout_contains("ORCHESTRATION_COMPLETE")
        .run();

    let recs = records(&p);
    // The parent ran research only (it wrote SPEC.md and DECOMPOSITION.md); every sub-task ran
    // its own full lifecycle exactly once.
    assert_eq!(phases_of(&recs, PARENT), ["research"]);
    for s in ["a", "b", "c"] {
        assert_eq!(phases_of(&recs, &sub(s)), SUB_PHASES, "{s}");
    }
    // Wave 1 ran at the same time...
    let (a, b) = (span(&recs, &sub("a")), span(&recs, &sub("b")));
    assert!(overlap(a, b), "a {a:?} and b {b:?} did not overlap");
    // ...and wave 2 started only once every wave-1 sub-task was terminal.
    let c = span(&recs, &sub("c"));
    assert!(
        c.0 >= a.1.max(b.1),
        "c started at {} before wave 1 ended at {}",
        c.0,
        a.1.max(b.1)
    );

    assert_eq!(p.read(&format!("{PARENT}/.state")), "complete\n");
    let parent_spec = p.read(&format!("{PARENT}/SPEC.md"));
    for s in ["a", "b", "c"] {
        assert_eq!(p.read(&format!("{}/.state", sub(s))), "complete\n", "{s}");
        let vram = p.read(&format!("{}/VRAM_CONFIG.md", sub(s)));
        assert!(vram.contains("**Fits within VRAM**"), "{vram}");
    }
    let ps = p.read(&format!("{}/PARENT_SPEC.md", sub("c")));
    assert!(ps.contains("Wire the CLI to the cached settings"), "{ps}");
    assert!(ps.contains("tasks/p"), "{ps}");
    assert!(ps.contains("**Depends on**: a, b"), "{ps}");
    assert!(
        !ps.contains(parent_spec.trim()),
        "the parent's SPEC.md leaked into PARENT_SPEC.md:\n{ps}"
    );

    let doc = p.status_json();
    let parent = task(&doc, PARENT);
    assert_eq!(parent["state"], "complete");
    assert_eq!(
        parent["subtasks"]["waves"],
        serde_json::json!([["a", "b"], ["c"]])
    );
    assert_eq!(parent["subtasks"]["counts"]["pass"], 3);
    let c = task(&doc, &sub("c"));
    assert_eq!(c["wave"], 2);
    assert_eq!(c["depends_on"], serde_json::json!(["a", "b"]));
}

#[test]
fn a_failed_subtask_blocks_its_dependent_while_a_sibling_completes() {
    let p = project();
    let decomposition = plan(&[
        ("a", 1, "-", "-", "Parse"),
        ("b", 1, "-", "-", "Cache"),
        ("c", 2, "a", "-", "Use the parser"),
    ]);
    run_plan(&p, &decomposition, "a:referee=fail")
        .args(["--jobs", "2", "p"])
        .status(18)
        .stdout_contains("PASS: 1, FAIL: 1, NEEDS_REVIEW: 0, BLOCKED: 1")
        .stdout_contains("⚠️ **HUMAN INTERVENTION REQUIRED**: sub-tasks did not all pass")
        .run();
    let recs = records(&p);
    assert_eq!(phases_of(&recs, &sub("a")), SUB_PHASES);
    assert_eq!(phases_of(&recs, &sub("b")), SUB_PHASES);
    assert!(phases_of(&recs, &sub("c")).is_empty(), "c ran: {recs:#?}");

    assert_eq!(p.read(&format!("{PARENT}/.state")), "human_intervention\n");
    assert_eq!(
        p.read(&format!("{}/.state", sub("a"))),
        "human_intervention\n"
    );
    assert_eq!(p.read(&format!("{}/.state", sub("b"))), "complete\n");
    assert_eq!(p.read(&format!("{}/.state", sub("c"))), "new\n");

    let doc = p.status_json();
    let parent = task(&doc, PARENT);
    assert_eq!(parent["state"], "human_intervention");
    let counts = &parent["subtasks"]["counts"];
    assert_eq!(
        (&counts["pass"], &counts["fail"], &counts["blocked"]),
        (
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(1)
        )
    );
    assert_eq!(
        parent["subtasks"]["blocked"],
        serde_json::json!([{"name": "c", "by": "a"}])
    );
    let c = task(&doc, &sub("c"));
    assert_eq!(c["blocked_by"], "a");
    // Nothing to run for it: running it alone would skip its failed dependency.
    assert_eq!(c["next_step"], "blocked");
    assert!(c["command"].is_null(), "{c:#}");
    assert!(task(&doc, &sub("b")).get("blocked_by").is_none());

    let text = status_text(&p);
    assert!(text.contains("- **Blocked**: c (by a)"), "{text}");
    assert!(
        text.contains("- **Next Step**: Blocked (fix sub-task a first)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "**Task: {}**\n- **Status**: New; next: research",
            sub("c")
        )),
        "{text}"
    );
    assert!(
        text.contains("- **Blocked by**: a (did not pass)"),
        "{text}"
    );
    assert!(
        text.contains("- **Sub-tasks**: PASS: 1, FAIL: 1, NEEDS_REVIEW: 0, BLOCKED: 1"),
        "{text}"
    );
    // Autopilot pauses; it never creates fix tasks.
    assert!(!p.join("tasks/p-fix-a").exists());
}

#[test]
fn manual_mode_creates_a_fix_task_for_a_failed_subtask_once() {
    let p = project();
    let decomposition = plan(&[("a", 1, "-", "-", "Parse"), ("b", 1, "-", "-", "Cache")]);
    run_plan(&p, &decomposition, "a:referee=fail")
        .arg("p")
        .status(18)
        .stdout_any()
        .run();
    assert!(
        !p.join("tasks/p-fix-a").exists(),
        "autopilot made a fix task"
    );
    // The parent needs a person's decision: manual mode says so with 19, never 0.
    p.test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_contains("Created 1 task(s): tasks/p-fix-a")
        .run();
    for f in ["SPEC.md", "BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md"] {
        assert_eq!(
            p.read(&format!("tasks/p-fix-a/{f}")),
            p.read(&format!("{}/{f}", sub("a"))),
            "{f}"
        );
    }
    // The copies do not advance it: it starts at bug_find.
    assert_eq!(p.state_of("tasks/p-fix-a"), "bug_find");
    assert_eq!(p.read("tasks/p-fix-a/.state"), "bug_find\n");
    let before = std::fs::read_dir(p.join("tasks")).unwrap().count();
    p.test()
        .args(["orchestrate", "--manual"])
        .status(19)
        .stdout_lacks("Created")
        .run();
    assert_eq!(std::fs::read_dir(p.join("tasks")).unwrap().count(), before);
    assert_eq!(p.state_of("tasks/p-fix-a"), "bug_find");
}

#[test]
fn editing_the_decomposition_adds_and_removes_subtasks_without_losing_work() {
    let p = project();
    // a fails, so `idle` (which depends on it) is created but never starts; b completes.
    let first = plan(&[
        ("a", 1, "-", "-", "Parse"),
        ("b", 1, "-", "-", "Cache"),
        ("idle", 2, "a", "-", "Never runs"),
    ]);
    run_plan(&p, &first, "a:referee=fail")
        .arg("p")
        .status(18)
        .stdout_any()
        .run();
    assert!(p.join(&format!("{}/PARENT_SPEC.md", sub("idle"))).is_file());
    assert!(p.join(&format!("{}/VERDICT.md", sub("b"))).is_file());
    let ran_before = records(&p).len();

    // b and idle leave the plan, d joins it.
    p.write(
        &format!("{PARENT}/DECOMPOSITION.md"),
        plan(&[("a", 1, "-", "-", "Parse"), ("d", 1, "-", "-", "Document")]),
    );
    let doc = p.status_json();
    assert_eq!(
        task(&doc, PARENT)["subtasks"]["orphans"],
        serde_json::json!(["b", "idle"])
    );
    assert_eq!(
        task(&doc, PARENT)["subtasks"]["missing"],
        serde_json::json!(["d"])
    );

    p.orchestrate()
        .agent_log()
        .status(18)
        .stderr_contains(format!("+ {} (wave 1)", sub("d")))
        .stderr_contains(format!(
            "- {}: no longer in DECOMPOSITION.md and never started; removed",
            sub("idle")
        ))
        .stderr_contains(format!(
            "warning: {} is no longer in DECOMPOSITION.md but has work in it; kept",
            sub("b")
        ))
        .stdout_contains("PASS: 1, FAIL: 1, NEEDS_REVIEW: 0")
        .run();
    // Never-started orphan deleted; orphan with work kept, untouched.
    assert!(!p.join(&sub("idle")).exists());
    assert!(p.read(&format!("{}/VERDICT.md", sub("b"))).contains("PASS"));
    // The new sub-task was created and driven; nothing else ran again.
    assert_eq!(p.read(&format!("{}/.state", sub("d"))), "complete\n");
    assert!(p.join(&format!("{}/PARENT_SPEC.md", sub("d"))).is_file());
    let recs = records(&p);
    let again: Vec<&Rec> = recs[ran_before..].iter().collect();
    assert!(
        again.iter().all(|r| r.task == sub("d")),
        "only d should run: {again:#?}"
    );
    assert_eq!(again.len(), SUB_PHASES.len());
    let doc = p.status_json();
    assert_eq!(
        task(&doc, PARENT)["subtasks"]["orphans"],
        serde_json::json!(["b"])
    );
}

#[test]
fn a_dependency_cycle_is_refused_and_nothing_is_created() {
    let p = project();
    let decomposition = plan(&[("a", 1, "b", "-", "One"), ("b", 2, "a", "-", "Two")]);
    run_plan(&p, &decomposition, "")
        .arg("p")
        .status(11)
        .stdout_contains(
            "⚠️ **HUMAN INTERVENTION REQUIRED**: DECOMPOSITION.md is invalid: line 5: dependency cycle: a -> b -> a",
        )
        .run();
    assert_eq!(p.read(&format!("{PARENT}/.state")), "human_intervention\n");
    assert!(!p.join(&format!("{PARENT}/subtasks")).exists());
    assert_eq!(phases_of(&records(&p), PARENT), ["research"]);
    let doc = p.status_json();
    assert!(
        task(&doc, PARENT)["reason"]
            .as_str()
            .unwrap()
            .contains("dependency cycle: a -> b -> a"),
        "{doc:#}"
    );
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 1);
}

#[test]
fn overlapping_files_are_serialized_while_disjoint_ones_run_alongside() {
    let p = project();
    let decomposition = plan(&[
        ("a", 1, "-", "src/shared.rs", "One"),
        ("b", 1, "-", "src/b.rs, src/shared.rs", "Two"),
        ("c", 1, "-", "src/c.rs", "Three"),
    ]);
    run_plan(&p, &decomposition, "*=slow")
        .env("AGENT_SLEEP", "0.1")
        .args(["--jobs", "2", "p"])
        .stdout_any()
        .run();
    let recs = records(&p);
    let (a, b, c) = (
        span(&recs, &sub("a")),
        span(&recs, &sub("b")),
        span(&recs, &sub("c")),
    );
    assert!(
        !overlap(a, b),
        "a {a:?} and b {b:?} share a file but overlapped"
    );
    assert!(
        overlap(c, a) || overlap(c, b),
        "c {c:?} owns its own file but ran alone (a {a:?}, b {b:?})"
    );
    assert_eq!(p.read(&format!("{PARENT}/.state")), "complete\n");
}

#[test]
fn kill_9_during_a_wave_then_rerun_runs_no_completed_phase_twice() {
    let p = project();
    let decomposition = plan(&[
        ("a", 1, "-", "-", "One"),
        ("b", 1, "-", "-", "Two"),
        ("c", 2, "a, b", "-", "Three"),
    ]);
    let mut run = p
        .orchestrate_std()
        .env("AGENT_LOG", p.join("agent.log"))
        .env("AGENT_DECOMPOSITION", &decomposition)
        .env("AGENT_BEHAVIOR", "p:research=decompose a:implement=hang")
        .args(["--jobs", "2", "p"])
        .spawn_guarded();
    let a_dir = p.join(&sub("a"));
    wait_for(&a_dir.join("child.pid"));
    // Let b finish its whole lifecycle while a hangs in implement.
    let b_state = p.join(&format!("{}/.state", sub("b")));
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&b_state).unwrap_or_default() != "complete\n" {
        assert!(start.elapsed() < PATIENCE, "b never completed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    // automaton died without cleaning up: its agent's watchdog (issue 11, finding 5) stops it
    // within the kill grace, with nobody left to supervise it.
    let child: i32 = p.wait_pid(&format!("{}/child.pid", sub("a")));
    assert!(
        wait_gone(child),
        "the watchdog stops an agent whose automaton died"
    );
    assert_eq!(p.read(&format!("{}/.state", sub("a"))), "implement\n");

    // The rerun (no task named: the most advanced one is the parent) finishes the wave.
    p.orchestrate()
        .agent_log()
        .args(["--jobs", "2"])
        .stdout_any()
        .stderr_any()
        .run();
    assert!(
        wait_gone(child),
        "the rerun stops the agent the killed run left behind"
    );
    let recs = records(&p);
    let counts = run_counts(&recs);
    for ((t, phase), n) in &counts {
        let expected = if *t == sub("a") && phase == "implement" {
            2 // the phase that was killed runs again
        } else {
            1
        };
        assert_eq!(*n, expected, "{t} {phase} ran {n} times: {recs:#?}");
    }
    for s in ["a", "b", "c"] {
        for phase in SUB_PHASES {
            assert!(
                counts.contains_key(&(sub(s), phase.to_string())),
                "{s} {phase} never ran"
            );
        }
        assert_eq!(p.read(&format!("{}/.state", sub(s))), "complete\n");
    }
    assert_eq!(p.read(&format!("{PARENT}/.state")), "complete\n");
    assert!(process_gone(child));
}

#[test]
fn a_cut_short_subtask_is_filled_in_and_an_orphan_with_logs_is_kept() {
    let p = project();
    p.write(&format!("{PARENT}/SPEC.md"), "# Spec\n")
        .write(
            &format!("{PARENT}/DECOMPOSITION.md"),
            plan(&[
                ("x", 1, "-", "-", "Do the x thing"),
                ("y", 1, "-", "-", "Do the y thing"),
            ]),
        )
        // An earlier run died between creating x and writing its PARENT_SPEC.md.
        .write(&format!("{}/.state", sub("x")), "new\n")
        // y had started when a power cut lost its (not fsynced) PARENT_SPEC.md and VRAM_CONFIG.md.
        .write(&format!("{}/.state", sub("y")), "design\n")
        .write(&format!("{}/SPEC.md", sub("y")), "# Spec of y\n");
    // Orphans: one holds only what automaton wrote; one ran a phase that left only its log.
    for (name, extra) in [("untouched", None), ("tried", Some("logs/research-1.log"))] {
        for f in [".state", "PARENT_SPEC.md", "VRAM_CONFIG.md"] {
            p.write(&format!("{}/{f}", sub(name)), "x\n");
        }
        if let Some(f) = extra {
            p.write(&format!("{}/{f}", sub(name)), "agent output\n");
        }
    }
    p.orchestrate()
        .args(["--task", PARENT])
        .stdout_any()
        .stderr_contains(format!(
            "+ {}: PARENT_SPEC.md and VRAM_CONFIG.md written",
            sub("x")
        ))
        .stderr_contains(format!(
            "+ {}: PARENT_SPEC.md and VRAM_CONFIG.md written",
            sub("y")
        ))
        .stderr_contains(format!(
            "- {}: no longer in DECOMPOSITION.md and never started; removed",
            sub("untouched")
        ))
        .stderr_contains(format!(
            "warning: {} is no longer in DECOMPOSITION.md but has work in it; kept",
            sub("tried")
        ))
        .run();
    assert!(
        p.read(&format!("{}/PARENT_SPEC.md", sub("x")))
            .contains("Do the x thing")
    );
    assert!(p.join(&format!("{}/VRAM_CONFIG.md", sub("x"))).is_file());
    assert!(
        p.read(&format!("{}/PARENT_SPEC.md", sub("y")))
            .contains("Do the y thing")
    );
    assert_eq!(p.read(&format!("{}/SPEC.md", sub("y"))), "# Spec of y\n");
    assert_eq!(p.read(&format!("{}/.state", sub("x"))), "complete\n");
    assert!(!p.join(&sub("untouched")).exists());
    assert_eq!(
        p.read(&format!("{}/logs/research-1.log", sub("tried"))),
        "agent output\n"
    );
}

/// A sub-task named with `--task` follows its parent's plan like one the waves start: with its
/// dependency unfinished, then failed, it is refused (exit 29) and nothing runs, and `status`
/// offers the parent's command instead of one that would skip the dependency.
#[test]
fn a_subtask_named_directly_waits_for_its_dependency_and_status_offers_the_parent() {
    let p = project();
    let decomposition = plan(&[
        ("a", 1, "-", "-", "Parse"),
        ("b", 1, "-", "-", "Cache"),
        ("c", 2, "a", "-", "Use the parser"),
    ]);
    // Two steps: the parent's research writes the plan, then one phase of `a` runs.
    for args in [vec!["--step", "p"], vec!["--step", "--task", PARENT]] {
        run_plan(&p, &decomposition, "")
            .args(args)
            .status(25)
            .stdout_any()
            .run();
    }
    assert_eq!(phases_of(&records(&p), &sub("a")), ["research"]);
    let c = p.task_json(&sub("c"));
    assert_eq!(
        c["command"],
        format!("automaton orchestrate --task {PARENT}")
    );
    assert_eq!(
        c["waits_for"],
        "it depends on a, which has not ended (implement)"
    );
    // A wave-1 sibling may run on its own: it waits for nothing.
    let b = p.task_json(&sub("b"));
    assert_eq!(
        b["command"],
        format!("automaton orchestrate --task {}", sub("b"))
    );
    assert!(b.get("waits_for").is_none(), "{b:#}");

    let before = p.read(&format!("{}/.state", sub("c")));
    let refusal = format!(
        "{c} may not start yet: it depends on a, which has not ended (implement); \
         `automaton orchestrate --task {PARENT}` drives its parent, which starts it in turn",
        c = sub("c")
    );
    let ran = run_plan(&p, &decomposition, "")
        .args(["--task", &sub("c")])
        .status(29)
        .stdout_contains(format!("⚠️ **HUMAN INTERVENTION REQUIRED**: {refusal}"))
        .stdout_contains(format!(
            "- **Command**:\n  automaton orchestrate --task {PARENT}\n"
        ))
        .run();
    assert!(
        ran.stdout
            .contains("Summary: 0 complete, 0 waiting for a person, 1 not started")
    );
    assert!(phases_of(&records(&p), &sub("c")).is_empty(), "c ran");
    assert_eq!(p.read(&format!("{}/.state", sub("c"))), before);
    assert!(
        !p.join(&format!("{}/logs", sub("c"))).exists(),
        "nothing written"
    );

    // Now `a` fails: `c` is blocked, and naming it is refused for that.
    run_plan(&p, &decomposition, "a:referee=fail")
        .args(["--task", &sub("a")])
        .status(10)
        .stdout_any()
        .run();
    run_plan(&p, &decomposition, "")
        .args(["--task", &sub("c")])
        .status(29)
        .stdout_contains(format!(
            "{} may not start yet: it is blocked: a did not pass",
            sub("c")
        ))
        .run();
    assert!(phases_of(&records(&p), &sub("c")).is_empty(), "c ran");
    let c = p.task_json(&sub("c"));
    assert_eq!(c["next_step"], "blocked");
    assert!(c["command"].is_null(), "{c:#}");
}

/// A panic in the drive of the task the run was asked about (its worker too) ends the run as
/// an internal error, exit 70, with the panic's message; it never hangs.
#[test]
fn a_panicking_top_task_ends_the_run_as_an_internal_error() {
    let p = project();
    let decomposition = plan(&[("a", 1, "-", "-", "Parse")]);
    let ran = run_plan(&p, &decomposition, "")
        .env("AUTOMATON_TEST_PANIC", PARENT)
        .args(["--jobs", "2", "p"])
        .status(70)
        .stdout_any()
        .stderr_any()
        .run();
    let all = format!("{}{}", ran.stdout, ran.stderr);
    assert!(
        all.contains(&format!(
            "internal error: automaton panicked while driving {PARENT}: AUTOMATON_TEST_PANIC"
        )),
        "{all}"
    );
    assert!(records(&p).is_empty(), "nothing ran");
}

/// A panic while a wave's worker drives a sub-task ends the run as an internal error (exit
/// 70, recorded in the sub-task's `.stop`), after its running sibling finished; it never hangs.
/// The panic is injected through a hook that exists only in test builds.
#[test]
fn a_panicking_subtask_worker_ends_the_run_as_an_internal_error() {
    let p = project();
    let decomposition = plan(&[("a", 1, "-", "-", "Parse"), ("b", 1, "-", "-", "Cache")]);
    let ran = run_plan(&p, &decomposition, "")
        .env("AUTOMATON_TEST_PANIC", sub("a"))
        .args(["--jobs", "2", "p"])
        .status(70)
        .stdout_contains(format!(
            "⚠️ **HUMAN INTERVENTION REQUIRED**: error: internal error: automaton panicked while \
             driving {}: AUTOMATON_TEST_PANIC: {}",
            sub("a"),
            sub("a")
        ))
        .run();
    assert!(
        ran.stderr.contains("AUTOMATON_TEST_PANIC"),
        "{}",
        ran.stderr
    );
    let stop = p.read(&format!("{}/.stop", sub("a")));
    assert!(
        stop.contains("internal error: automaton panicked"),
        "{stop}"
    );
    // The sibling that was running went on to its end; nothing new started after the panic.
    assert_eq!(phases_of(&records(&p), &sub("b")), SUB_PHASES);
    assert!(phases_of(&records(&p), &sub("a")).is_empty());
}
