use super::*;
use crate::run::progress::json_line;
use serde_json::Value;
use std::collections::BTreeSet;

/// `samples!(Variant => sample, ...)` lists one sample of every variant. The `match` it
/// builds has no wildcard, so a new variant does not compile until it is listed here with a
/// sample, and the snapshot below then shows its JSON for review.
macro_rules! samples {
    ($($variant:ident => $sample:expr),* $(,)?) => {
        fn samples() -> Vec<Event<'static>> {
            let all = vec![$($sample),*];
            for e in &all {
                match e {
                    $(Event::$variant { .. } => {})*
                }
            }
            // Each sample is of the variant it is listed under.
            let listed = [$(stringify!($variant)),*];
            for (e, name) in all.iter().zip(listed) {
                let debug = format!("{e:?}");
                let rest = debug.strip_prefix(name).unwrap_or_default();
                assert!(
                    rest.starts_with([' ', '(']),
                    "{name} has a sample of another variant: {debug}"
                );
            }
            all
        }
    };
}

fn leftovers() -> &'static [Leftover] {
    Box::leak(Box::new([
        Leftover {
            pid: 4242,
            name: "sleep".into(),
        },
        Leftover {
            pid: 4243,
            name: "node".into(),
        },
    ]))
}

const T: &str = "tasks/auth";
const SUB: &str = "tasks/auth/subtasks/login";

fn p(s: &'static str) -> &'static Path {
    Path::new(s)
}

samples! {
    RunStarted => Event::RunStarted { task: T, agent: "claude -p", adapter: "claude" },
    JobsAuto => Event::JobsAuto { weights: 8_000_000_000, kv_bytes_per_token: 131_072, budget: 24_000_000_000 },
    WorktreeReconciled => Event::WorktreeReconciled { worktree: p("/p/.automaton/worktrees/auth") },
    VerdictArchived => Event::VerdictArchived { task: T, kept: p("/p/tasks/auth/logs/VERDICT-2.md"), n: 2 },
    StopCleared => Event::StopCleared { task: T, reason: "verify command `make test` failed" },
    IncompleteSetAside => Event::IncompleteSetAside { task: T, artifact: "DESIGN.md", to: p("/p/tasks/auth/logs/incomplete/DESIGN-1.md") },
    PhaseRecovered => Event::PhaseRecovered { task: T, phase: "design", attempt: 1, log: p("/p/tasks/auth/logs/design-1.log") },
    PersonsEditKept => Event::PersonsEditKept { task: T, artifact: "VERDICT.md" },
    Workspace => Event::Workspace { task: T, branch: "automaton/auth", worktree: p("/p/.automaton/worktrees/auth") },
    WorktreeInclude => Event::WorktreeInclude {
        task: T,
        worktree: p("/p/.automaton/worktrees/auth"),
        files: Box::leak(Box::new([PathBuf::from(".env")])),
    },
    SetupStarted => Event::SetupStarted(CheckStarted { task: T, command: "npm ci", log: p("/p/tasks/auth/logs/setup-1.log") }),
    SetupFinished => Event::SetupFinished(CheckFinished { task: T, failure: None, log: p("/p/tasks/auth/logs/setup-1.log") }),
    LeftoverAgentStopped => Event::LeftoverAgentStopped { task: T, pid: Some(123), what: "pid 123" },
    PhaseStarted => Event::PhaseStarted { task: T, phase: "research", attempt: 1, log: p("/p/tasks/auth/logs/research-1.log") },
    SlurmReattached => Event::SlurmReattached { task: T, phase: "implement", job: 45 },
    Warning => Event::Warning { task: T, message: "notify command exited with status 3" },
    EstimateOverPeak => Event::EstimateOverPeak { task: SUB, message: "estimate exceeds max peak context", estimate: 90_000, max_peak: 64_000 },
    Leftovers => Event::Leftovers { task: T, message: "processes still alive after SIGKILL", leftovers: leftovers(), agent_pid: 4240 },
    PhaseFinished => Event::PhaseFinished {
        task: T,
        phase: "research",
        attempt: 1,
        seconds: Duration::from_millis(4_250),
        end: "agent exited with status 1",
        contract_met: false,
        log: p("/p/tasks/auth/logs/research-1.log"),
        agent: "claude",
        ok: Some(false),
        error: Some("rate_limit_error"),
        session_id: Some("s-1"),
        model: Some("claude-opus-5-5"),
        input_tokens: Some(64_361),
        output_tokens: Some(880),
        cost_usd: Some(0.28),
        exited_fine: false,
    },
    FrozenRestored => Event::FrozenRestored { task: T, phase: "implement", attempt: 2, what: "removed" },
    Committed => Event::Committed { task: T, phase: "implement", branch: "automaton/auth", commit: "0123abcd" },
    ArtifactValidated => Event::ArtifactValidated {
        task: T,
        phase: "research",
        artifact: "RESEARCH.md",
        duration: Duration::from_millis(4_250),
        usage: ", 65,241 tokens, $0.2800",
    },
    VerifyStarted => Event::VerifyStarted(CheckStarted { task: T, command: "make test", log: p("/p/tasks/auth/logs/verify-1.log") }),
    VerifyFinished => Event::VerifyFinished(CheckFinished {
        task: T,
        failure: Some("verify command `make test` failed (exited with status 2); see tasks/auth/logs/verify-1.log"),
        log: p("/p/tasks/auth/logs/verify-1.log"),
    }),
    Frozen => Event::Frozen {
        task: T,
        files: Box::leak(Box::new(["tests/acceptance.sh".to_string()])),
        root: p("/p"),
        reason: FreezeReason::Missing,
    },
    PhaseRetry => Event::PhaseRetry {
        task: T,
        phase: "implement",
        attempt: 1,
        failures: 1,
        retries: 2,
        kind: "agent_failed",
        reason: "agent exited with status 1",
        rate_limited: true,
        backoff: Duration::from_secs(2),
        artifact_kept: Some("/p/tasks/auth/logs/failed/IMPLEMENTATION-1.md"),
    },
    SubtaskCreated => Event::SubtaskCreated {
        task: SUB,
        wave: 2,
        depends_on: Box::leak(Box::new(["parse-config".to_string()])),
        estimate: Some(12_000),
    },
    SubtaskRepaired => Event::SubtaskRepaired { task: SUB },
    OrphanKept => Event::OrphanKept { task: SUB },
    OrphanRemoved => Event::OrphanRemoved { task: SUB },
    VramDetected => Event::VramDetected {
        task: T,
        max_peak_context_kb: 12_000,
        recommended_kb: 16_000,
        source: "nvml",
        block: "## VRAM Detection Results\n- GPU VRAM: 8 GB\n",
    },
    PlanSentBack => Event::PlanSentBack { task: T, max_peak: 64_000, rows: vec!["login", "logout"] },
    ReworkStarted => Event::ReworkStarted { task: T, round: 1, counted: 1, max: 3, cause: "verdict_failed: referee verdict is FAIL", kept: Path::new("/p/tasks/auth/logs/rework/1") },
    QuestionsAsked => Event::QuestionsAsked { task: T, phase: "design", questions: vec!["Which store should the cache use?"] },
    SubtaskStarted => Event::SubtaskStarted { task: SUB, parent: T, wave: Some(1) },
    Merged => Event::Merged { task: SUB, branch: "automaton/auth/login", into: "automaton/auth" },
    TaskComplete => Event::TaskComplete { task: T },
    TaskStopped => Event::TaskStopped { task: T, kind: "verdict_failed", reason: "the referee said FAIL" },
    StepDone => Event::StepDone { task: T, next: "design" },
    Planned => Event::Planned { task: T, action: "run", phase: Some("design"), why: "state design: the design phase writes DESIGN.md", exit_code: None },
    Summary => Event::Summary(crate::report::Summary { complete: 2, waiting: 1, not_started: 0, in_progress: 1 }),
    Complete => Event::Complete { task: T },
    Stepped => Event::Stepped { task: T, exit_code: 25 },
    Stop => Event::Stop { task: T, kind: "verdict_failed", reason: "the referee said FAIL", exit_code: 10 },
}

/// Shapes that differ by a field's value, beyond the one sample of each variant.
fn more_samples() -> Vec<Event<'static>> {
    vec![
        Event::SubtaskStarted {
            task: SUB,
            parent: T,
            wave: None,
        },
        Event::PhaseFinished {
            task: T,
            phase: "design",
            attempt: 1,
            seconds: Duration::from_millis(1_500),
            end: "agent exited with status 0",
            contract_met: true,
            log: p("/p/tasks/auth/logs/design-1.log"),
            agent: "command",
            ok: None,
            error: None,
            session_id: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            exited_fine: true,
        },
        Event::Frozen {
            task: T,
            files: &[],
            root: p("/p"),
            reason: FreezeReason::TestDesign,
        },
        Event::RunStarted {
            task: T,
            agent: "./agent.sh",
            adapter: "command",
        },
    ]
}

fn type_of(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(a) => match a.first() {
            Some(first) => format!("[{}]", type_of(first)),
            None => "[]".into(),
        },
        Value::Object(_) => "object".into(),
    }
}

/// The stream's schema and the human lines, pinned: a renamed field, a changed type or a
/// changed line shows as a snapshot difference.
#[test]
fn every_event_has_a_pinned_json_form_and_human_line() {
    let mut out = String::new();
    for e in samples().iter().chain(&more_samples()) {
        let line = json_line(e, 1_700_000_000.5);
        let value: Value = serde_json::from_str(&line).expect("valid JSON");
        let map = value.as_object().expect("an object");
        let types: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{k}: {}", type_of(v)))
            .collect();
        out.push_str(&format!(
            "{}\n  types: {}\n  json:  {line}\n  human: {}\n",
            map["event"].as_str().expect("event name"),
            types.join(", "),
            e.human()
                .as_deref()
                .unwrap_or("(none)")
                .replace('\n', "\n         ")
        ));
    }
    insta::assert_snapshot!("events", out);
}

/// The names of the events, as the stream writes them.
fn names() -> BTreeSet<String> {
    samples()
        .iter()
        .map(|e| match serde_json::to_value(e).expect("serializes") {
            Value::Object(map) => map["event"].as_str().expect("a name").to_string(),
            other => panic!("not an object: {other}"),
        })
        .collect()
}

#[test]
fn the_documented_events_are_the_events() {
    let doc = include_str!("../../../docs/events.md");
    // Rows of the events table: "| `name` | fields | meaning |".
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(name, _)| name.to_string())
        .collect();
    let names = names();
    let undocumented: Vec<_> = names.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&names).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/events.md lacks {undocumented:?}; it lists {unknown:?}, which are no events"
    );
}

/// Every field a row of docs/events.md names for an event is a key of its JSON, and every
/// key is named there.
#[test]
fn the_documented_fields_are_the_fields() {
    let doc = include_str!("../../../docs/events.md");
    let mut fields: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for e in samples().iter().chain(&more_samples()) {
        let Value::Object(map) = serde_json::to_value(e).expect("serializes") else {
            panic!("not an object");
        };
        let name = map["event"].as_str().expect("a name").to_string();
        fields
            .entry(name)
            .or_default()
            .extend(map.keys().filter(|k| *k != "event").cloned());
    }
    for (name, keys) in fields {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("no row for {name}"));
        let cell = row.split(" | ").nth(1).expect("a fields cell");
        // Each key must appear in the row's fields cell as a code span.
        let named: BTreeSet<String> = keys
            .iter()
            .filter(|k| cell.contains(&format!("`{k}`")))
            .cloned()
            .collect();
        let missing: Vec<_> = keys.difference(&named).collect();
        assert!(
            missing.is_empty(),
            "docs/events.md: {name} lacks {missing:?}"
        );
    }
}
