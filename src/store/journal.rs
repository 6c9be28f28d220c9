//! The run journal: one JSON line per phase run in `<task>/logs/journal.jsonl`, append-only.
//!
//! Format version 2 (version 1 had only the fields up to `contract_met`; both are read):
//!
//! | field | meaning |
//! |---|---|
//! | `v` | `2` |
//! | `phase`, `attempt` | the phase word and the attempt number (`logs/<phase>-<attempt>.log`) |
//! | `finished_at` | Unix seconds |
//! | `seconds` | how long the agent ran (the phase's duration) |
//! | `end`, `exit_code` | `exited` (with the code; null when killed by a signal), `phase_timeout`, `total_timeout`, `stalled`, `cancelled` |
//! | `contract_met` | a `CONTRACT_MET` line was seen in the plain output |
//! | `agent` | the adapter: `command`, `claude`, `codex`, `aider`, `gemini`, `opencode` |
//! | `ok`, `error` | the agent's own verdict on its run (null when it has none) and its error, or why its output could not be read |
//! | `session_id`, `model` | as the agent reported them (null when unknown) |
//! | `input_tokens`, `output_tokens`, `tokens` | token usage (input includes cache reads and writes) |
//! | `cost_usd` | the cost the agent reported |
//! | `context_window` | the model's context window, as the agent reported it |
//! | `rework_round` | the rework round the phase ran in (`- **Rework**`); absent outside rework |
//!
//! The last model an agent reported is also kept in `.automaton/.agent_model.json`, where
//! VRAM detection reads it when the settings name no model.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// The version written on every new line.
pub const JOURNAL_VERSION: u32 = 2;

/// Where a task's journal lives.
pub fn path(task_dir: &Path) -> PathBuf {
    task_dir.join("logs/journal.jsonl")
}

/// One journal line: one phase run (the table above).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub v: u32,
    pub phase: String,
    pub attempt: u32,
    pub finished_at: f64,
    pub seconds: f64,
    /// `exited`, `phase_timeout`, `total_timeout`, `stalled`, `cancelled`.
    pub end: String,
    pub exit_code: Option<i32>,
    pub contract_met: bool,
    pub agent: String,
    pub ok: Option<bool>,
    pub error: Option<String>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub context_window: Option<u64>,
    /// The rework round the phase ran in (`logs/rework/<n>/`); absent outside rework.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rework_round: Option<u32>,
    /// Hosts the sandbox refused the agent (`Network: model`), with how many times each.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub refused_hosts: std::collections::BTreeMap<String, u32>,
}

/// Append one line to the task's journal. A failure is the caller's to report (a run warns,
/// naming the file): the journal is a log, not state, so a lost line never stops a run, but it
/// is never lost silently either.
pub fn append(task_dir: &Path, entry: &Entry) -> std::io::Result<()> {
    // One write of the whole line (see `fsx::append_line`).
    let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    let file = path(task_dir);
    crate::fsx::append_line(&file, &line, crate::fsx::Durability::Rebuildable).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot append to {}: {e}", file.display()),
        )
    })
}

/// A task's usage totals over its journal (`status` shows them).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Phase runs in the journal.
    pub phases: u64,
    /// Seconds the agents ran, all phases together.
    pub seconds: f64,
    /// Token totals over the phases that reported them (null when none did).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub tokens: Option<u64>,
    /// Cost over the phases that reported one (null when none did).
    pub cost_usd: Option<f64>,
    /// The models the agents reported, in the order first seen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
}

impl Usage {
    /// Whether any phase reported tokens or a cost.
    pub fn reported(&self) -> bool {
        self.tokens.is_some() || self.cost_usd.is_some()
    }
}

/// Largest journal read for totals.
const MAX_JOURNAL_BYTES: usize = 8 * 1024 * 1024;

/// Sum a task's journal. `None` when it has no journal or no line in it; malformed lines are
/// skipped.
pub fn usage(task_dir: &Path) -> Option<Usage> {
    let (bytes, _) = crate::fsx::read_prefix(&path(task_dir), MAX_JOURNAL_BYTES).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut u = Usage::default();
    let add = |acc: &mut Option<u64>, v: Option<u64>| {
        if let Some(n) = v {
            *acc = Some(acc.unwrap_or(0).saturating_add(n));
        }
    };
    for l in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        if !v.is_object() {
            continue;
        }
        u.phases += 1;
        // A hand-edited or hostile journal must not print `inf` or negative totals.
        let sane = |x: f64| x.is_finite() && (0.0..1e12).contains(&x);
        u.seconds += v["seconds"].as_f64().filter(|s| sane(*s)).unwrap_or(0.0);
        let input = v["input_tokens"].as_u64();
        let output = v["output_tokens"].as_u64();
        add(&mut u.input_tokens, input);
        add(&mut u.output_tokens, output);
        add(
            &mut u.tokens,
            v["tokens"].as_u64().or(match (input, output) {
                (None, None) => None,
                (i, o) => Some(i.unwrap_or(0).saturating_add(o.unwrap_or(0))),
            }),
        );
        if let Some(c) = v["cost_usd"].as_f64().filter(|c| sane(*c)) {
            u.cost_usd = Some(u.cost_usd.unwrap_or(0.0) + c);
        }
        // Model names come from the agent's output: keep them to one short printable line.
        let model: Option<String> = v["model"]
            .as_str()
            .map(|m| m.chars().filter(|c| !c.is_control()).take(80).collect());
        if let Some(m) = model.filter(|m| !m.is_empty())
            && !u.models.contains(&m)
        {
            u.models.push(m);
        }
    }
    (u.phases > 0).then_some(u)
}

/// The model an agent last reported, kept for VRAM detection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentModel {
    pub model: String,
    pub context_window: Option<u64>,
    pub agent: String,
    /// The journal the report came from, relative to the project.
    pub journal: String,
}

/// `<project>/.automaton/.agent_model.json`.
pub fn agent_model_path(project: &Path) -> PathBuf {
    project.join(".automaton/.agent_model.json")
}

/// Remember the model a phase's agent reported (rewritten only when it changed).
pub fn record_model(project: &Path, m: &AgentModel) {
    let p = agent_model_path(project);
    if read_agent_model(project).as_ref() == Some(m) {
        return;
    }
    if let Ok(text) = serde_json::to_string(m)
        && fs::create_dir_all(project.join(".automaton")).is_ok()
    {
        // A cache of the last report: rebuilt by the next phase.
        let _ = crate::fsx::write_rebuildable(&p, format!("{text}\n").as_bytes());
    }
}

/// The model an agent last reported in this project, if any.
pub fn read_agent_model(project: &Path) -> Option<AgentModel> {
    let (bytes, _) = crate::fsx::read_prefix(&agent_model_path(project), 4096).ok()?;
    serde_json::from_slice::<AgentModel>(&bytes)
        .ok()
        .filter(|m| !m.model.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_v1_and_v2_lines_and_skips_garbage() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("logs")).unwrap();
        assert_eq!(usage(dir.path()), None);
        fs::write(
            path(dir.path()),
            concat!(
                r#"{"v":1,"phase":"research","seconds":1.5}"#,
                "\n",
                "not json\n{\"v\":2,\"phase\":\"design\",\"seconds\":2.0,",
                "\n",
                r#"{"v":2,"phase":"design","seconds":0.5,"input_tokens":100,"output_tokens":20,"tokens":120,"cost_usd":0.25,"model":"m1"}"#,
                "\n",
                r#"{"v":2,"phase":"referee","seconds":1,"input_tokens":10,"output_tokens":5,"cost_usd":null,"model":"m1"}"#,
                "\n",
            ),
        )
        .unwrap();
        let u = usage(dir.path()).unwrap();
        assert_eq!(u.phases, 3);
        assert_eq!(u.seconds, 3.0);
        assert_eq!(u.input_tokens, Some(110));
        assert_eq!(u.output_tokens, Some(25));
        assert_eq!(u.tokens, Some(135));
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.models, ["m1"]);
        assert!(u.reported());
    }

    #[test]
    fn agent_model_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_agent_model(dir.path()), None);
        let m = AgentModel {
            model: "claude-x".into(),
            context_window: Some(1000),
            agent: "claude".into(),
            journal: "tasks/a/logs/journal.jsonl".into(),
        };
        record_model(dir.path(), &m);
        assert_eq!(read_agent_model(dir.path()), Some(m));
        fs::write(agent_model_path(dir.path()), "{broken").unwrap();
        assert_eq!(read_agent_model(dir.path()), None);
    }
}
