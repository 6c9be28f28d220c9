//! The pure state machine against a reference written independently of it: every subset of
//! the nine artifacts, every phase config, every verdict form.

use automaton::state::*;

#[derive(Debug, Clone, Copy)]
enum VerdictCase {
    Pass,
    Fail,
    NeedsReview,
    Malformed,
}

const FILES: [&str; 9] = [
    "SPEC.md",
    "DECOMPOSITION.md",
    "DESIGN.md",
    "TEST_PLAN.md",
    "IMPLEMENTATION.md",
    "BUG_REPORT.md",
    "ADVERSARIAL_BUG_REPORT.md",
    "DOC_REVIEW.md",
    "VERDICT.md",
];

/// The reference: DESIGN.md's rules spelled out as a list, most advanced first. For subsets
/// with DECOMPOSITION.md the plan lists one sub-task that has no folder yet.
fn reference(has: &dyn Fn(&str) -> bool, v: VerdictCase, cfg: PhaseConfig) -> &'static str {
    if has("DECOMPOSITION.md") {
        if has("VERDICT.md") && matches!(v, VerdictCase::Fail | VerdictCase::NeedsReview) {
            return "human_intervention";
        }
        return "decomposition";
    }
    if has("VERDICT.md") {
        return if matches!(v, VerdictCase::Pass) {
            "complete"
        } else {
            "human_intervention"
        };
    }
    let order: [(&str, &str); 6] = [
        ("DOC_REVIEW.md", "referee"),
        ("ADVERSARIAL_BUG_REPORT.md", "doc_review"),
        ("BUG_REPORT.md", "adversarial_bug_find"),
        ("IMPLEMENTATION.md", "bug_find"),
        ("TEST_PLAN.md", "implement"),
        (
            "DESIGN.md",
            if cfg.test_design {
                "test_design"
            } else {
                "implement"
            },
        ),
    ];
    for (file, state) in order {
        if has(file) {
            return state;
        }
    }
    if has("SPEC.md") {
        return if cfg.decomposition {
            "decomposition"
        } else if cfg.design {
            "design"
        } else if cfg.test_design {
            "test_design"
        } else {
            "implement"
        };
    }
    "new"
}

#[test]
fn all_512_subsets_match_the_reference() {
    let plan = [PlannedSubtask {
        name: "a".into(),
        depends_on: vec![],
    }];
    let mut checked = 0;
    for bits in 0u16..512 {
        let present: Vec<&str> = (0..9)
            .filter(|i| bits & (1 << i) != 0)
            .map(|i| FILES[i])
            .collect();
        let has = |f: &str| present.contains(&f);
        let mut set = ArtifactSet::default();
        for f in &present {
            set.insert(Artifact::from_file_name(f).unwrap());
        }
        for cfg_bits in 0..8 {
            let cfg = PhaseConfig {
                decomposition: cfg_bits & 1 != 0,
                design: cfg_bits & 2 != 0,
                test_design: cfg_bits & 4 != 0,
            };
            for v in [
                VerdictCase::Pass,
                VerdictCase::Fail,
                VerdictCase::NeedsReview,
                VerdictCase::Malformed,
            ] {
                let verdict = match v {
                    VerdictCase::Pass => Ok(Verdict::Pass),
                    VerdictCase::Fail => Ok(Verdict::Fail),
                    VerdictCase::NeedsReview => Ok(Verdict::NeedsReview),
                    VerdictCase::Malformed => Err("no verdict word".to_string()),
                };
                let facts = Facts {
                    artifacts: set,
                    verdict: Some(verdict),
                    plan: Some(Ok(&plan)),
                    children: &[],
                    ..Facts::default()
                };
                let got = decide(&facts, &cfg);
                assert_eq!(
                    got.state.word(),
                    reference(&has, v, cfg),
                    "artifacts {present:?}, {cfg:?}, {v:?}"
                );
                assert_eq!(
                    got.state == State::HumanIntervention,
                    got.reason.is_some(),
                    "a human_intervention state carries a reason"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 512 * 8 * 4);
}

#[test]
fn a_sub_task_never_runs_a_decomposition_phase() {
    let mut set = ArtifactSet::default();
    set.insert(Artifact::Spec);
    let cfg = PhaseConfig {
        decomposition: true,
        ..PhaseConfig::default()
    };
    assert_eq!(
        artifact_state(set, &cfg, false),
        State::Next(Phase::Decomposition)
    );
    assert_eq!(artifact_state(set, &cfg, true), State::Next(Phase::Design));
}

#[test]
fn state_words_round_trip_and_research_means_new() {
    for s in State::ALL {
        assert_eq!(State::parse(s.word()), Some(s));
    }
    assert_eq!(State::parse("research"), Some(State::NEW));
    assert_eq!(
        State::parse(" Bug_Find\n"),
        Some(State::Next(Phase::BugFind))
    );
    assert_eq!(State::parse("finished"), None);
}

#[test]
fn start_state_and_recorded_stop() {
    let cfg = PhaseConfig::default();
    let facts = Facts {
        start: Some(State::Next(Phase::BugFind)),
        ..Facts::default()
    };
    assert_eq!(decide(&facts, &cfg).state, State::Next(Phase::BugFind));
    // Once later work exists, the artifacts decide.
    let mut set = ArtifactSet::default();
    set.insert(Artifact::BugReport);
    let facts = Facts {
        artifacts: set,
        start: Some(State::Next(Phase::BugFind)),
        ..Facts::default()
    };
    assert_eq!(
        decide(&facts, &cfg).state,
        State::Next(Phase::AdversarialBugFind)
    );
    let facts = Facts {
        artifacts: set,
        stop: Some("phase timed out"),
        ..Facts::default()
    };
    let d = decide(&facts, &cfg);
    assert_eq!(
        (d.state, d.reason.as_deref()),
        (State::HumanIntervention, Some("phase timed out"))
    );
}

fn parent(children: &[ChildFacts], plan: &[PlannedSubtask], verdict: Option<Verdict>) -> Decision {
    let mut set = ArtifactSet::default();
    set.insert(Artifact::Spec);
    set.insert(Artifact::Decomposition);
    if verdict.is_some() {
        set.insert(Artifact::Verdict);
    }
    decide(
        &Facts {
            artifacts: set,
            verdict: verdict.map(Ok),
            plan: Some(Ok(plan)),
            children,
            ..Facts::default()
        },
        &PhaseConfig::default(),
    )
}

fn child(name: &str, state: State, verdict: Option<Verdict>) -> ChildFacts {
    ChildFacts {
        name: name.into(),
        state,
        verdict,
    }
}

fn plan(rows: &[(&str, &[&str])]) -> Vec<PlannedSubtask> {
    rows.iter()
        .map(|(n, d)| PlannedSubtask {
            name: n.to_string(),
            depends_on: d.iter().map(|s| s.to_string()).collect(),
        })
        .collect()
}

#[test]
fn parent_aggregation() {
    let p = plan(&[("a", &[]), ("b", &[]), ("c", &["a"])]);
    let pass = |n| child(n, State::Complete, Some(Verdict::Pass));

    let d = parent(&[pass("a"), pass("b"), pass("c")], &p, None);
    assert_eq!(d.state, State::Complete);
    assert_eq!(
        d.counts.unwrap().to_string(),
        "PASS: 3, FAIL: 0, NEEDS_REVIEW: 0"
    );

    // One FAIL: its dependent is blocked, the parent needs a human once nothing else runs.
    let d = parent(
        &[
            child("a", State::HumanIntervention, Some(Verdict::Fail)),
            pass("b"),
            child("c", State::NEW, None),
        ],
        &p,
        None,
    );
    assert_eq!(d.state, State::HumanIntervention);
    assert_eq!(d.blocked, vec![("c".to_string(), "a".to_string())]);
    assert_eq!(
        d.counts.unwrap().to_string(),
        "PASS: 1, FAIL: 1, NEEDS_REVIEW: 0, BLOCKED: 1"
    );

    // One NEEDS_REVIEW, and the parent's own VERDICT.md says PASS: the seed's warning.
    let d = parent(
        &[
            pass("a"),
            child("b", State::HumanIntervention, Some(Verdict::NeedsReview)),
            pass("c"),
        ],
        &p,
        Some(Verdict::Pass),
    );
    assert_eq!(d.state, State::HumanIntervention);
    assert!(d.reason.unwrap().starts_with(
        "Parent task VERDICT.md says PASS, but sub-task b has VERDICT.md with NEEDS_REVIEW"
    ));

    // A sub-task stopped before its referee (questions, an agent's failure) has no verdict,
    // and none is named.
    let stopped = [
        pass("a"),
        child("b", State::HumanIntervention, None),
        pass("c"),
    ];
    assert_eq!(
        parent(&stopped, &p, None).reason.unwrap(),
        "sub-tasks did not all pass (PASS: 2, FAIL: 0, NEEDS_REVIEW: 0, STOPPED: 1); first: b \
         (stopped for a person)"
    );
    let d = parent(&stopped, &p, Some(Verdict::Pass));
    assert!(d.reason.unwrap().starts_with(
        "Parent task VERDICT.md says PASS, but sub-task b stopped for a person before its verdict"
    ));
    // One that stopped after its PASS (its verify command failed) is not said to have stopped
    // before its verdict.
    let after_pass = [
        pass("a"),
        child("b", State::HumanIntervention, Some(Verdict::Pass)),
        pass("c"),
    ];
    assert!(
        parent(&after_pass, &p, Some(Verdict::Pass))
            .reason
            .unwrap()
            .starts_with(
                "Parent task VERDICT.md says PASS, but sub-task b has VERDICT.md with PASS, then \
                 stopped for a person"
            )
    );

    // Still running: the parent waits, and says on what.
    let d = parent(
        &[
            pass("a"),
            child("b", State::Next(Phase::Implement), None),
            child("c", State::Next(Phase::Design), None),
        ],
        &p,
        None,
    );
    assert_eq!(d.state, State::Next(Phase::Decomposition));
    assert_eq!(d.waiting_on, vec!["b", "c"]);

    // Listed but missing on disk: waited on, reported missing.
    let d = parent(&[pass("a"), pass("b")], &p, None);
    assert_eq!(d.state, State::Next(Phase::Decomposition));
    assert_eq!(d.missing, vec!["c"]);

    // An orphan folder not listed does not count.
    let d = parent(
        &[
            pass("a"),
            pass("b"),
            pass("c"),
            child("old", State::HumanIntervention, Some(Verdict::Fail)),
        ],
        &p,
        None,
    );
    assert_eq!(d.state, State::Complete);
    assert_eq!(d.orphans, vec!["old"]);

    // A sub-task stopped without a verdict (e.g. a timeout) counts as stopped.
    let d = parent(
        &[
            pass("a"),
            child("b", State::HumanIntervention, None),
            pass("c"),
        ],
        &p,
        None,
    );
    assert_eq!(d.state, State::HumanIntervention);
    assert_eq!(d.counts.unwrap().stopped, 1);

    // An invalid plan needs a human with the parser's reason.
    let mut set = ArtifactSet::default();
    set.insert(Artifact::Decomposition);
    let d = decide(
        &Facts {
            artifacts: set,
            plan: Some(Err("line 3: dependency cycle: a -> b -> a".into())),
            ..Facts::default()
        },
        &PhaseConfig::default(),
    );
    assert_eq!(d.state, State::HumanIntervention);
    assert!(d.reason.unwrap().contains("a -> b -> a"));
}
