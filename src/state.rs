//! The pure state machine: from what was read of a task folder to the state it is in.
//!
//! No I/O, no clock, no processes: [`decide`] takes [`Facts`] (gathered by `task::snapshot`)
//! and returns a [`Decision`]. The rules (DESIGN.md, "The state machine"):
//! - the most advanced non-empty artifact decides (VERDICT > DOC_REVIEW > ADVERSARIAL_BUG_REPORT >
//!   BUG_REPORT > IMPLEMENTATION > TEST_PLAN > DESIGN > DECOMPOSITION > SPEC > nothing);
//! - optional phases (decomposition, design, test design) are chosen by [`PhaseConfig`];
//! - a folder with DECOMPOSITION.md is a parent: it waits on its sub-tasks, then is complete when
//!   all passed and needs a human otherwise (whatever its own VERDICT.md says);
//! - a stop recorded by the orchestrator (timeout, caps, agent failure) needs a human;
//! - a task created to start at a later phase (`task create --at`, fix tasks) starts there.

use std::fmt;

/// The artifacts whose presence decides a state, least advanced first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Artifact {
    Spec,
    Decomposition,
    Design,
    TestPlan,
    Implementation,
    BugReport,
    AdversarialBugReport,
    DocReview,
    Verdict,
}

impl Artifact {
    pub const ALL: [Artifact; 9] = [
        Artifact::Spec,
        Artifact::Decomposition,
        Artifact::Design,
        Artifact::TestPlan,
        Artifact::Implementation,
        Artifact::BugReport,
        Artifact::AdversarialBugReport,
        Artifact::DocReview,
        Artifact::Verdict,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            Artifact::Spec => "SPEC.md",
            Artifact::Decomposition => "DECOMPOSITION.md",
            Artifact::Design => "DESIGN.md",
            Artifact::TestPlan => "TEST_PLAN.md",
            Artifact::Implementation => "IMPLEMENTATION.md",
            Artifact::BugReport => "BUG_REPORT.md",
            Artifact::AdversarialBugReport => "ADVERSARIAL_BUG_REPORT.md",
            Artifact::DocReview => "DOC_REVIEW.md",
            Artifact::Verdict => "VERDICT.md",
        }
    }

    pub fn from_file_name(name: &str) -> Option<Artifact> {
        Artifact::ALL.into_iter().find(|a| a.file_name() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A set of artifacts (those present and non-empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArtifactSet(u16);

impl ArtifactSet {
    pub fn from_bits(bits: u16) -> Self {
        ArtifactSet(bits & 0x1ff)
    }
    pub fn insert(&mut self, a: Artifact) {
        self.0 |= a.bit();
    }
    pub fn remove(&mut self, a: Artifact) {
        self.0 &= !a.bit();
    }
    pub fn contains(self, a: Artifact) -> bool {
        self.0 & a.bit() != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = Artifact> {
        Artifact::ALL.into_iter().filter(move |a| self.contains(*a))
    }
    /// The most advanced artifact present.
    pub fn highest(self) -> Option<Artifact> {
        Artifact::ALL.into_iter().rev().find(|a| self.contains(*a))
    }
}

/// A phase: one agent run that writes one artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Research,
    Decomposition,
    Design,
    TestDesign,
    Implement,
    BugFind,
    AdversarialBugFind,
    DocReview,
    Referee,
}

impl Phase {
    pub const ALL: [Phase; 9] = [
        Phase::Research,
        Phase::Decomposition,
        Phase::Design,
        Phase::TestDesign,
        Phase::Implement,
        Phase::BugFind,
        Phase::AdversarialBugFind,
        Phase::DocReview,
        Phase::Referee,
    ];

    /// The word used in `.state`, file names (`prompts/<word>.md`) and AUTOMATON_PHASE.
    pub fn word(self) -> &'static str {
        match self {
            Phase::Research => "research",
            Phase::Decomposition => "decomposition",
            Phase::Design => "design",
            Phase::TestDesign => "test_design",
            Phase::Implement => "implement",
            Phase::BugFind => "bug_find",
            Phase::AdversarialBugFind => "adversarial_bug_find",
            Phase::DocReview => "doc_review",
            Phase::Referee => "referee",
        }
    }

    /// Human title, as the seed's reports write it.
    pub fn title(self) -> &'static str {
        match self {
            Phase::Research => "Research",
            Phase::Decomposition => "Decomposition",
            Phase::Design => "Design",
            Phase::TestDesign => "Test Design",
            Phase::Implement => "Implement",
            Phase::BugFind => "Bug Find",
            Phase::AdversarialBugFind => "Adversarial Bug Find",
            Phase::DocReview => "Doc Review",
            Phase::Referee => "Referee",
        }
    }

    /// A list of phase words separated by commas (`test design`, `test-design` and
    /// `test_design` all name one phase); `none` or empty is an empty list.
    pub fn parse_list(text: &str) -> Result<Vec<Phase>, String> {
        let mut gates = Vec::new();
        for item in text.split(',') {
            let word = item
                .trim()
                .to_ascii_lowercase()
                .replace([' ', '-'], "_")
                .replace("__", "_");
            if word.is_empty() || word == "none" {
                continue;
            }
            let phase = Phase::ALL
                .into_iter()
                .find(|p| p.word() == word)
                .ok_or_else(|| {
                    let words: Vec<&str> = Phase::ALL.iter().map(|p| p.word()).collect();
                    format!(
                        "`{}` is not a phase (one of {})",
                        item.trim(),
                        words.join(", ")
                    )
                })?;
            if !gates.contains(&phase) {
                gates.push(phase);
            }
        }
        Ok(gates)
    }

    /// The artifact this phase must produce.
    pub fn artifact(self) -> Artifact {
        match self {
            Phase::Research => Artifact::Spec,
            Phase::Decomposition => Artifact::Decomposition,
            Phase::Design => Artifact::Design,
            Phase::TestDesign => Artifact::TestPlan,
            Phase::Implement => Artifact::Implementation,
            Phase::BugFind => Artifact::BugReport,
            Phase::AdversarialBugFind => Artifact::AdversarialBugReport,
            Phase::DocReview => Artifact::DocReview,
            Phase::Referee => Artifact::Verdict,
        }
    }
}

/// A task's state: the phase that runs next, or a terminal. Their words are the `.state`
/// words; `Next(Research)` is `new` (an empty folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Next(Phase),
    Complete,
    HumanIntervention,
}

impl State {
    /// An empty folder: research runs next.
    pub const NEW: State = State::Next(Phase::Research);

    pub const ALL: [State; 11] = [
        State::Next(Phase::Research),
        State::Next(Phase::Decomposition),
        State::Next(Phase::Design),
        State::Next(Phase::TestDesign),
        State::Next(Phase::Implement),
        State::Next(Phase::BugFind),
        State::Next(Phase::AdversarialBugFind),
        State::Next(Phase::DocReview),
        State::Next(Phase::Referee),
        State::Complete,
        State::HumanIntervention,
    ];

    pub fn word(self) -> &'static str {
        match self {
            State::Next(Phase::Research) => "new",
            State::Next(phase) => phase.word(),
            State::Complete => "complete",
            State::HumanIntervention => "human_intervention",
        }
    }

    /// Parse a `.state` word; `research` means `new` (research runs next).
    pub fn parse(word: &str) -> Option<State> {
        let w = word.trim().to_ascii_lowercase();
        if w == "research" {
            return Some(State::NEW);
        }
        State::ALL.into_iter().find(|s| s.word() == w)
    }

    /// The phase that runs next in this state.
    pub fn next_phase(self) -> Option<Phase> {
        match self {
            State::Next(phase) => Some(phase),
            State::Complete | State::HumanIntervention => None,
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, State::Complete | State::HumanIntervention)
    }

    /// How far along the lifecycle: used to pick the most advanced task and to apply a
    /// task's start state.
    pub fn rank(self) -> u8 {
        State::ALL.iter().position(|s| *s == self).unwrap_or(0) as u8
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// A referee's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    NeedsReview,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NeedsReview => "NEEDS_REVIEW",
        }
    }
}

/// Which optional phases run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseConfig {
    /// Run a decomposition phase after research (top-level tasks only, so it cannot recurse).
    pub decomposition: bool,
    pub design: bool,
    pub test_design: bool,
}

impl Default for PhaseConfig {
    fn default() -> Self {
        PhaseConfig {
            decomposition: false,
            design: true,
            test_design: true,
        }
    }
}

/// One sub-task as DECOMPOSITION.md lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedSubtask {
    pub name: String,
    pub depends_on: Vec<String>,
}

/// A sub-task folder found on disk, with the state already decided for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildFacts {
    pub name: String,
    pub state: State,
    /// The verdict behind its state, where VERDICT.md gave one.
    pub verdict: Option<Verdict>,
}

/// Everything [`decide`] needs, as read from one task folder.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// Artifacts present and non-empty (inherited copies not yet rewritten excluded).
    pub artifacts: ArtifactSet,
    /// VERDICT.md read: the verdict, or why it is malformed. Used when VERDICT.md is present.
    pub verdict: Option<Result<Verdict, String>>,
    /// DECOMPOSITION.md read: the sub-tasks, or why it is invalid. Used when present.
    pub plan: Option<Result<&'a [PlannedSubtask], String>>,
    /// Sub-task folders on disk.
    pub children: &'a [ChildFacts],
    /// The state the task was created at (`task create --at`, fix tasks).
    pub start: Option<State>,
    /// A stop the orchestrator recorded (timeout, caps, agent failure...).
    pub stop: Option<&'a str>,
    /// Levels below a top-level task (0 for a top-level task, 1 for its sub-tasks...).
    pub depth: usize,
    /// Its plan was sent back to the decomposition phase (over the context budget): a planned
    /// task from then on, whatever the config says.
    pub sent_back: bool,
    /// A PASS verdict waits for the verify command (`logs/verify-due`): the task is not
    /// complete until it passed.
    pub verify_due: bool,
    /// The agent asked a person questions (QUESTIONS.md): the task waits for the answers.
    pub questions: bool,
}

/// Sub-task outcomes of a parent, for the `PASS: n, FAIL: n, NEEDS_REVIEW: n` summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub needs_review: usize,
    /// Needs a human for another reason than a verdict (timeout, bad artifact...).
    pub stopped: usize,
    /// Never ran because something it depends on did not pass.
    pub blocked: usize,
    /// Not terminal yet.
    pub pending: usize,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PASS: {}, FAIL: {}, NEEDS_REVIEW: {}",
            self.pass, self.fail, self.needs_review
        )?;
        for (n, label) in [
            (self.stopped, "STOPPED"),
            (self.blocked, "BLOCKED"),
            (self.pending, "PENDING"),
        ] {
            if n > 0 {
                write!(f, ", {label}: {n}")?;
            }
        }
        Ok(())
    }
}

/// Why a task needs a human: each cause has its own exit code in `orchestrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A stop the orchestrator recorded in `.stop`.
    Stopped,
    /// The referee said FAIL or NEEDS_REVIEW.
    Verdict,
    /// VERDICT.md has no verdict word, or two.
    MalformedVerdict,
    /// DECOMPOSITION.md could not be parsed or checked.
    InvalidPlan,
    /// Sub-tasks did not all pass.
    Subtasks,
    /// The task was created in state human_intervention.
    Created,
    /// Decomposition nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The agent asked questions (QUESTIONS.md) that wait for a person's answers.
    Questions,
}

/// Levels of sub-tasks below a top-level task. A task at this depth that writes a
/// DECOMPOSITION.md needs a human, so a plan that keeps splitting cannot run away.
pub const MAX_DEPTH: usize = 2;

/// What the state machine decided for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub state: State,
    /// Why a human is needed (human_intervention only).
    pub reason: Option<String>,
    /// The kind of that reason (human_intervention only).
    pub cause: Option<Cause>,
    /// Parent: listed sub-tasks not terminal yet (and not blocked), in plan order.
    pub waiting_on: Vec<String>,
    /// Parent: (sub-task, the sub-task that blocks it).
    pub blocked: Vec<(String, String)>,
    /// Parent: sub-task outcomes.
    pub counts: Option<Counts>,
    /// Parent: listed in DECOMPOSITION.md but no folder yet.
    pub missing: Vec<String>,
    /// Parent: folders under subtasks/ that DECOMPOSITION.md no longer lists.
    pub orphans: Vec<String>,
}

impl Decision {
    /// A decision with nothing but a state.
    pub const fn plain(state: State) -> Self {
        Decision {
            state,
            reason: None,
            waiting_on: Vec::new(),
            blocked: Vec::new(),
            counts: None,
            missing: Vec::new(),
            orphans: Vec::new(),
            cause: None,
        }
    }

    fn human(cause: Cause, reason: impl Into<String>) -> Self {
        Decision {
            reason: Some(reason.into()),
            cause: Some(cause),
            ..Decision::plain(State::HumanIntervention)
        }
    }
}

/// The state the artifacts alone give (the lifecycle table of DESIGN.md), for a folder that is
/// not a parent. VERDICT.md present means terminal: see [`decide`] for the verdict.
pub fn artifact_state(artifacts: ArtifactSet, config: &PhaseConfig, is_subtask: bool) -> State {
    let after_spec = || {
        if config.decomposition && !is_subtask {
            State::Next(Phase::Decomposition)
        } else if config.design {
            State::Next(Phase::Design)
        } else if config.test_design {
            State::Next(Phase::TestDesign)
        } else {
            State::Next(Phase::Implement)
        }
    };
    match artifacts.highest() {
        None => State::Next(Phase::Research),
        Some(Artifact::Spec) => after_spec(),
        Some(Artifact::Decomposition) => State::Next(Phase::Decomposition),
        Some(Artifact::Design) if config.test_design => State::Next(Phase::TestDesign),
        Some(Artifact::Design) | Some(Artifact::TestPlan) => State::Next(Phase::Implement),
        Some(Artifact::Implementation) => State::Next(Phase::BugFind),
        Some(Artifact::BugReport) => State::Next(Phase::AdversarialBugFind),
        Some(Artifact::AdversarialBugReport) => State::Next(Phase::DocReview),
        Some(Artifact::DocReview) => State::Next(Phase::Referee),
        Some(Artifact::Verdict) => State::Complete,
    }
}

/// Decide the state of one task.
pub fn decide(facts: &Facts<'_>, config: &PhaseConfig) -> Decision {
    if let Some(reason) = facts.stop {
        return Decision::human(Cause::Stopped, reason.to_string());
    }
    if facts.questions {
        return Decision::human(
            Cause::Questions,
            "the agent asked questions (QUESTIONS.md) that wait for a person's answers",
        );
    }
    let verdict = facts.artifacts.contains(Artifact::Verdict).then(|| {
        facts
            .verdict
            .clone()
            .unwrap_or(Err("VERDICT.md could not be read".into()))
    });
    if facts.artifacts.contains(Artifact::Decomposition) {
        if facts.depth >= MAX_DEPTH {
            return Decision::human(
                Cause::TooDeep,
                format!(
                    "DECOMPOSITION.md in a sub-task {} levels deep; automaton nests at most {MAX_DEPTH} levels: \
                     implement this sub-task directly or split it in its parent's plan",
                    facts.depth
                ),
            );
        }
        return decide_parent(facts, verdict);
    }
    match verdict {
        // Done is verified, not claimed: until the verify command passed for this PASS, the
        // referee's step is not over (a run killed during the verify resumes there).
        Some(Ok(Verdict::Pass)) if facts.verify_due => Decision {
            reason: Some("the PASS verdict waits for the verify command".into()),
            ..Decision::plain(State::Next(Phase::Referee))
        },
        Some(Ok(Verdict::Pass)) => Decision::plain(State::Complete),
        Some(Ok(v)) => Decision::human(Cause::Verdict, format!("referee verdict is {}", v.word())),
        Some(Err(why)) => Decision::human(
            Cause::MalformedVerdict,
            format!("VERDICT.md is malformed: {why}"),
        ),
        None => {
            // A task whose plan was sent back has no plan only while a new one is made (a
            // malformed one is set aside for the retry): it goes back to decomposition, never
            // on as a plain task without its sub-tasks.
            let config = PhaseConfig {
                decomposition: config.decomposition || facts.sent_back,
                ..*config
            };
            let state = artifact_state(facts.artifacts, &config, facts.depth > 0);
            match facts.start {
                Some(start) if start.rank() > state.rank() => start_decision(start),
                _ => Decision::plain(state),
            }
        }
    }
}

fn start_decision(start: State) -> Decision {
    match start {
        State::HumanIntervention => Decision::human(
            Cause::Created,
            "the task was created in state human_intervention",
        ),
        s => Decision::plain(s),
    }
}

fn decide_parent(facts: &Facts<'_>, verdict: Option<Result<Verdict, String>>) -> Decision {
    let plan = match &facts.plan {
        Some(Ok(plan)) => *plan,
        Some(Err(why)) => {
            return Decision::human(
                Cause::InvalidPlan,
                format!("DECOMPOSITION.md is invalid: {why}"),
            );
        }
        None => return Decision::human(Cause::InvalidPlan, "DECOMPOSITION.md could not be read"),
    };
    if let Some(Ok(v @ (Verdict::Fail | Verdict::NeedsReview))) = verdict {
        return Decision::human(Cause::Verdict, format!("referee verdict is {}", v.word()));
    }
    let child = |name: &str| facts.children.iter().find(|c| c.name == name);
    let mut d = Decision::plain(State::Next(Phase::Decomposition));
    d.missing = plan
        .iter()
        .filter(|p| child(&p.name).is_none())
        .map(|p| p.name.clone())
        .collect();
    d.orphans = facts
        .children
        .iter()
        .filter(|c| !plan.iter().any(|p| p.name == c.name))
        .map(|c| c.name.clone())
        .collect();
    let blocked = blocked_subtasks(plan, &child);
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for p in plan {
        let c = child(&p.name);
        if blocked.iter().any(|(b, _)| *b == p.name) {
            counts.blocked += 1;
            continue;
        }
        match c.map(|c| (c.state, c.verdict)) {
            Some((State::Complete, _)) => counts.pass += 1,
            Some((State::HumanIntervention, Some(Verdict::Fail))) => {
                counts.fail += 1;
                failures.push((p.name.clone(), Some("FAIL")));
            }
            Some((State::HumanIntervention, Some(Verdict::NeedsReview))) => {
                counts.needs_review += 1;
                failures.push((p.name.clone(), Some("NEEDS_REVIEW")));
            }
            Some((State::HumanIntervention, Some(Verdict::Pass))) => {
                // Its PASS did not count: stopped after it (its verify command failed, say).
                counts.stopped += 1;
                failures.push((p.name.clone(), Some("PASS, then stopped for a person")));
            }
            Some((State::HumanIntervention, None)) => {
                counts.stopped += 1;
                // Stopped before its referee: a verdict it does not have is not named.
                failures.push((p.name.clone(), None));
            }
            _ => {
                counts.pending += 1;
                d.waiting_on.push(p.name.clone());
            }
        }
    }
    d.blocked = blocked;
    d.counts = Some(counts);
    if counts.pending > 0 {
        return d;
    }
    if let Some((name, what)) = failures.first() {
        d.state = State::HumanIntervention;
        d.cause = Some(Cause::Subtasks);
        d.reason = Some(subtasks_failed(name, *what, verdict.as_ref(), counts));
        return d;
    }
    if let Some(Err(why)) = verdict {
        d.state = State::HumanIntervention;
        d.cause = Some(Cause::MalformedVerdict);
        d.reason = Some(format!("VERDICT.md is malformed: {why}"));
        return d;
    }
    d.state = State::Complete;
    d
}

/// The sub-tasks of `plan` that are blocked, each with the dependency that blocks it, in plan
/// order.
fn blocked_subtasks<'a>(
    plan: &[PlannedSubtask],
    child: &impl Fn(&str) -> Option<&'a ChildFacts>,
) -> Vec<(String, String)> {
    // A sub-task is blocked when something it depends on ended without a PASS, or is itself
    // blocked. Iterate to a fixpoint: the plan is small and was checked acyclic by its parser.
    let failed = |name: &str| child(name).is_some_and(|c| c.state == State::HumanIntervention);
    let mut blocked: Vec<(String, String)> = Vec::new();
    loop {
        let mut changed = false;
        for p in plan {
            if blocked.iter().any(|(b, _)| *b == p.name)
                || child(&p.name).is_some_and(|c| c.state.is_terminal())
            {
                continue;
            }
            let blocker = p
                .depends_on
                .iter()
                .find(|dep| failed(dep) || blocked.iter().any(|(b, _)| b == *dep));
            if let Some(dep) = blocker {
                blocked.push((p.name.clone(), dep.clone()));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    blocked.sort_by_key(|(name, _)| plan.iter().position(|p| p.name == *name));
    blocked
}

/// Why a parent whose sub-tasks all ended stops: the first one that did not pass (`what`: its
/// verdict, or `None` when it stopped before its referee), said against the parent's own.
fn subtasks_failed(
    name: &str,
    what: Option<&str>,
    verdict: Option<&Result<Verdict, String>>,
    counts: Counts,
) -> String {
    match (verdict, what) {
        (Some(Ok(Verdict::Pass)), Some(what)) => format!(
            "Parent task VERDICT.md says PASS, but sub-task {name} has VERDICT.md with {what}. \
                 Create a fix task for the failing sub-task. ({counts})"
        ),
        (Some(Ok(Verdict::Pass)), None) => format!(
            "Parent task VERDICT.md says PASS, but sub-task {name} stopped for a person \
                 before its verdict. ({counts})"
        ),
        (_, Some(what)) => {
            format!("sub-tasks did not all pass ({counts}); first: {name} ({what})")
        }
        (_, None) => {
            format!("sub-tasks did not all pass ({counts}); first: {name} (stopped for a person)")
        }
    }
}
