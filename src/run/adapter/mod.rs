//! Agent adapters: how a phase's command line is built for each kind of agent, and what the
//! agent's own output says about the run afterwards (its failure signal, usage and cost).
//!
//! | kind | default command line (the prompt arrives on stdin) | what is read back |
//! |---|---|---|
//! | `command` | `- **Agent command**` as written | nothing: exit code and artifact only |
//! | `claude` | `claude -p --permission-mode acceptEdits --output-format stream-json --verbose` | the last `result` event: subtype, `is_error`, `session_id`, usage, `total_cost_usd`, `modelUsage` (model, context window) |
//! | `codex` | `codex exec --json --sandbox workspace-write --skip-git-repo-check -` | `thread.started` (session), `turn.completed` (usage) / `turn.failed` and `error` (failure) |
//! | `gemini` | `gemini --skip-trust --approval-mode auto_edit --output-format stream-json -p ''` | `init` (session, model), the final `result`: `status`, `error`, `stats` (tokens, the models used) |
//! | `opencode` | `opencode run --format json` | `sessionID`, each `step_finish` (tokens, cost; `reason` `stop` ends the run), `error` (failure, HTTP status) |
//! | `aider` | `aider --yes-always --no-auto-commits --no-gitignore --no-check-update --no-pretty --no-fancy-input --message-file "$AUTOMATON_PROMPT_FILE" "$AUTOMATON_ARTIFACT"` | the `Model:` and `Tokens:`/`Cost:` lines it prints; success is the exit code |
//!
//! For `claude`, `codex`, `gemini`, `opencode` and `aider`, `- **Agent command**` replaces the whole default command
//! line (another binary, a wrapper script such as `sh examples/agents/claude.sh`), and the
//! output must keep the format the adapter reads (`stream-json`, `--json`). Without it, the
//! default is used and `- **Model**` adds `--model <model>`. `- **Agent flags**` is appended in
//! every case. The command runs with `sh -c` in the project root.
//!
//! Parsers never panic: a stream that is truncated, malformed or missing its final event gives
//! `ok: None` and an `error` saying what was missing; the phase is then judged by its exit code
//! and artifact as with the `command` adapter.

mod aider;
mod claude;
mod codex;
mod gemini;
mod opencode;

pub use crate::agent_kind::AgentKind;
pub use aider::{Aider, parse_aider};
pub use claude::{Claude, parse_claude};
pub use codex::{Codex, parse_codex};
pub use gemini::{Gemini, parse_gemini};
pub use opencode::{Opencode, parse_opencode};
use serde_json::Value;
use std::path::Path;

/// What an agent's own output says about one phase run. Every field is optional: the `command`
/// adapter knows none of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseReport {
    /// The agent's own verdict on its run: `Some(false)` for an error result or `turn.failed`
    /// (the phase stops even when the exit code is 0), `Some(true)` for a success result,
    /// `None` when the adapter has no such signal or could not read it.
    pub ok: Option<bool>,
    /// The agent's error (with `ok: Some(false)`), or why its output could not be read (with
    /// `ok: None`).
    pub error: Option<String>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// Input tokens, cache reads and writes included.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The model's context window, as the agent reported it.
    pub context_window: Option<u64>,
    /// The agent's failure was a rate limit or an overload (HTTP 429 / 529, `rate_limit`,
    /// `overloaded`): a retry always backs off first.
    pub rate_limited: bool,
}

impl PhaseReport {
    /// Input plus output tokens, when either is known.
    pub fn tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0).saturating_add(o.unwrap_or(0))),
        }
    }
}

/// One way of running an agent.
pub trait Adapter: Send + Sync {
    /// The `- **Agent**` word: `command`, `claude`, `codex`, `aider`, `gemini`, `opencode`.
    fn name(&self) -> &'static str;

    /// The default command line, when `- **Agent command**` is not set (`None`: there is none).
    fn default_command(&self) -> Option<&'static str>;

    /// The flag that names the model on the default command line.
    fn model_flag(&self) -> Option<&'static str> {
        Some("--model")
    }

    /// The flag that lets the CLI write in one more folder than its working directory: with
    /// isolation, the agent works in a worktree and its task folder (artifacts, logs) stays in
    /// the project, so the default command line grants it (`--add-dir "$AUTOMATON_TASK_DIR"`).
    fn add_dir_flag(&self) -> Option<&'static str> {
        None
    }

    /// The command line `line` with the task folder made writable, for a run in a worktree:
    /// by default `<add_dir_flag> "$AUTOMATON_TASK_DIR"` appended (expanded by `sh -c`); a CLI
    /// without such a flag grants it its own way (opencode: a permission in its environment).
    fn grant_dir(&self, line: &str) -> Option<String> {
        self.add_dir_flag()
            .map(|flag| format!("{line} {flag} \"$AUTOMATON_TASK_DIR\""))
    }

    /// The default command line with every tool approved, shell commands included (Claude
    /// Code's `--dangerously-skip-permissions`, Codex without its own sandbox, Gemini CLI's
    /// `--approval-mode yolo`, opencode's `--auto`): used in place of
    /// [`Adapter::default_command`] only inside automaton's sandbox (`Sandbox: bwrap`), which
    /// is then the boundary. `None`: the CLI has no such mode, or its default already is one.
    fn sandboxed_command(&self) -> Option<&'static str> {
        None
    }

    /// The environment variables this CLI needs inside the sandbox (its keys, its endpoint,
    /// its switches): names, or prefixes ending in `*`.
    fn sandbox_env(&self) -> &'static [&'static str] {
        &[]
    }

    /// Where this CLI keeps its own state (login, settings, sessions), relative to the home
    /// folder: writable inside the sandbox, where the rest of the home is a scratch one.
    fn state_paths(&self) -> &'static [&'static str] {
        &[]
    }

    /// Variables set for this CLI inside the sandbox (Claude Code's `IS_SANDBOX=1`, without which
    /// it refuses to skip its permission prompts as root, as in a CI container).
    fn sandbox_vars(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Variables that move this CLI's state folder (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`): the
    /// folder they name is writable inside the sandbox too.
    fn state_env(&self) -> &'static [&'static str] {
        &[]
    }

    /// The hosts (`host:port`) this CLI's default model provider answers on: what
    /// `Network: model` lets through besides the endpoints its environment names.
    fn model_hosts(&self) -> &'static [&'static str] {
        &[]
    }

    /// Read what the agent printed during one phase (its stdout and stderr, interleaved).
    fn parse(&self, output: &str) -> PhaseReport;

    /// Whether [`Adapter::parse`] finds anything at all: when not, the output is not kept for
    /// it nor the log read back.
    fn reads_output(&self) -> bool {
        true
    }

    /// Whether the agent reports its usage while it runs ([`Adapter::feed_usage`]), so that a
    /// budget can stop a phase before it ends.
    fn streams_usage(&self) -> bool {
        false
    }

    /// Take in one complete output line for the usage streamed so far.
    fn feed_usage(&self, _usage: &mut StreamUsage, _line: &str) {}

    /// A short form of one output line for the live progress line (JSON streams are summarised).
    fn live_line(&self, line: &str) -> String {
        line.to_string()
    }
}

/// The adapter of a kind.
pub fn adapter_for(kind: AgentKind) -> &'static dyn Adapter {
    match kind {
        AgentKind::Claude => &Claude,
        AgentKind::Codex => &Codex,
        AgentKind::Aider => &Aider,
        AgentKind::Gemini => &Gemini,
        AgentKind::Opencode => &Opencode,
        AgentKind::Command => &CommandAdapter,
    }
}

/// Build the shell command line of a run. `command`: `- **Agent command**` (replaces the
/// default); `model`: `- **Model**` (only added to the default); `flags`: `- **Agent flags**`
/// (always appended); `sandboxed`: the run is inside automaton's sandbox, so the default line
/// lets the CLI run its tools without asking ([`Adapter::sandboxed_command`]). `None` when
/// there is nothing to run.
pub fn command_line(
    adapter: &dyn Adapter,
    command: Option<&str>,
    model: Option<&str>,
    flags: Option<&str>,
    sandboxed: bool,
) -> Option<String> {
    let mut line = match command.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => c.to_string(),
        None => {
            let default = match sandboxed {
                true => adapter
                    .sandboxed_command()
                    .or_else(|| adapter.default_command()),
                false => adapter.default_command(),
            };
            let mut d = default?.to_string();
            if let (Some(m), Some(flag)) = (
                model.map(str::trim).filter(|m| !m.is_empty()),
                adapter.model_flag(),
            ) {
                d.push_str(&format!(" {flag} {}", shell_quote(m)));
            }
            d
        }
    };
    if let Some(f) = flags.map(str::trim).filter(|f| !f.is_empty()) {
        line.push(' ');
        line.push_str(f);
    }
    Some(line)
}

/// The command line of a run in a worktree (isolation on): the default command line of an
/// adapter that has an [`Adapter::add_dir_flag`] gets `<flag> "$AUTOMATON_TASK_DIR"` (expanded
/// by `sh -c` for each task), so the agent may write its artifact in the task folder. A custom
/// `- **Agent command**` is left as written: it gets `AUTOMATON_TASK_DIR` and grants it itself
/// (the `examples/agents/` recipes do).
pub fn in_worktree(adapter: &dyn Adapter, line: String, custom_command: bool) -> String {
    if custom_command {
        return line;
    }
    adapter.grant_dir(&line).unwrap_or(line)
}

pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Most of a phase log read back for parsing; a longer log keeps its end (where the final
/// events are).
pub const MAX_PARSE_BYTES: u64 = 16 * 1024 * 1024;

/// Read the end of a phase log (at most [`MAX_PARSE_BYTES`]) and parse it. A log that cannot
/// be read gives a report that says so.
pub fn parse_log(adapter: &dyn Adapter, log: &Path) -> PhaseReport {
    use std::io::{Read, Seek, SeekFrom};
    if !adapter.reads_output() {
        return PhaseReport::default();
    }
    let read = || -> std::io::Result<String> {
        let mut f = crate::fsx::open_regular(log)?;
        let len = f.metadata()?.len();
        let mut skipped = false;
        if len > MAX_PARSE_BYTES {
            f.seek(SeekFrom::Start(len - MAX_PARSE_BYTES))?;
            skipped = true;
        }
        let mut bytes = Vec::new();
        f.take(MAX_PARSE_BYTES).read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        // Drop the partial first line of a log read from its middle.
        Ok(if skipped {
            text.split_once('\n')
                .map_or(String::new(), |(_, r)| r.to_string())
        } else {
            text
        })
    };
    match read() {
        Ok(text) => adapter.parse(&text),
        Err(e) => PhaseReport {
            error: Some(format!("cannot read {}: {e}", log.display())),
            ..PhaseReport::default()
        },
    }
}

/// Most of a phase's output kept in memory for [`CapturedOutput::report`]; a phase that
/// printed more has its log read back instead ([`parse_log`] keeps the end of it).
pub const MAX_CAPTURED_BYTES: usize = 4 * 1024 * 1024;

/// What a phase's agent printed, kept as the runner hands it over, so that the adapter parses
/// the phase's report from memory instead of reading the log back after the phase.
#[derive(Debug, Default)]
pub struct CapturedOutput {
    bytes: Vec<u8>,
    /// Whether the adapter reads output at all (nothing is kept for the `command` adapter).
    keep: bool,
    /// More than [`MAX_CAPTURED_BYTES`] came: the bytes were dropped.
    overflowed: bool,
}

impl CapturedOutput {
    pub fn new(adapter: &dyn Adapter) -> Self {
        CapturedOutput {
            keep: adapter.reads_output(),
            ..CapturedOutput::default()
        }
    }

    /// Keep a chunk of output.
    pub fn push(&mut self, chunk: &[u8]) {
        if !self.keep || self.overflowed {
            return;
        }
        if self.bytes.len() + chunk.len() > MAX_CAPTURED_BYTES {
            self.overflowed = true;
            self.bytes = Vec::new();
            return;
        }
        self.bytes.extend_from_slice(chunk);
    }

    /// The phase's report from the kept output, or from its `log` when the output was too
    /// large to keep.
    pub fn report(&self, adapter: &dyn Adapter, log: &Path) -> PhaseReport {
        if !adapter.reads_output() {
            return PhaseReport::default();
        }
        if self.overflowed || !self.keep {
            return parse_log(adapter, log);
        }
        adapter.parse(&String::from_utf8_lossy(&self.bytes))
    }
}

/// The JSON objects of a JSON-lines stream, skipping lines that are not JSON objects (an agent's
/// stderr shares the log). Returns the objects and the number of lines that looked like JSON
/// (`{` first) but did not parse.
fn json_lines(output: &str) -> (Vec<Value>, usize) {
    let mut objects = Vec::new();
    let mut bad = 0;
    for line in output.lines() {
        let t = line.trim();
        if !t.starts_with('{') {
            continue;
        }
        match serde_json::from_str::<Value>(t) {
            Ok(v) if v.is_object() => objects.push(v),
            _ => bad += 1,
        }
    }
    (objects, bad)
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn u64_field(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Keep an error message to one short line.
fn short(msg: &str) -> String {
    let one: String = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 300 {
        let mut s: String = one.chars().take(299).collect();
        s.push('…');
        s
    } else {
        one
    }
}

/// The live line of a JSON event. The runner hands over at most 200 characters of a line, so a
/// long event arrives cut: then the first `"type"` and `"name"` values found are shown.
fn summarise_json(line: &str, pick: fn(&Value) -> Option<String>) -> String {
    let t = line.trim();
    match serde_json::from_str::<Value>(t) {
        Ok(v) => pick(&v).unwrap_or_else(|| line.to_string()),
        Err(_) if t.starts_with('{') => {
            let found: Vec<&str> = ["\"type\":\"", "\"subtype\":\"", "\"name\":\""]
                .iter()
                .filter_map(|k| {
                    let rest = &t[t.find(k)? + k.len()..];
                    Some(&rest[..rest.find('"')?])
                })
                .collect();
            if found.is_empty() {
                line.to_string()
            } else {
                found.join(" ")
            }
        }
        Err(_) => line.to_string(),
    }
}

/// The generic adapter: the command line as configured, judged by exit code and artifact.
pub struct CommandAdapter;

impl Adapter for CommandAdapter {
    fn name(&self) -> &'static str {
        "command"
    }
    fn default_command(&self) -> Option<&'static str> {
        None
    }
    fn model_flag(&self) -> Option<&'static str> {
        None
    }
    fn parse(&self, _output: &str) -> PhaseReport {
        PhaseReport::default()
    }
    fn reads_output(&self) -> bool {
        false
    }
}

/// Whether an agent's error text is a rate limit or an overload: `429`, `529`, `rate limit`,
/// `rate_limit`, `ratelimit`, `too many requests`, `overloaded` (any case).
pub fn is_rate_limit_text(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let status = |code: &str| {
        t.match_indices(code).any(|(i, _)| {
            let before = t[..i].chars().next_back();
            let after = t[i + code.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_digit())
                && !after.is_some_and(|c| c.is_ascii_digit())
        })
    };
    [
        "rate limit",
        "rate_limit",
        "ratelimit",
        "too many requests",
        "overloaded",
    ]
    .iter()
    .any(|w| t.contains(w))
        || status("429")
        || status("529")
}

/// Usage as an agent's output streams in, for budgets checked while a phase runs: Claude's
/// `assistant` messages (each API call's usage, counted once per message id) until its
/// `result` gives the totals and the cost; Codex's `turn.completed`; aider's `Tokens:` lines.
#[derive(Debug, Default)]
pub struct StreamUsage {
    per_message: std::collections::HashMap<String, u64>,
    running: u64,
    final_tokens: Option<u64>,
    cost_usd: Option<f64>,
}

impl StreamUsage {
    /// Take in one complete output line of an agent of kind `agent` (`claude`, `codex`,
    /// `aider`; another word takes in nothing). The run feeds lines through its adapter
    /// ([`Adapter::feed_usage`]) instead.
    pub fn feed(&mut self, agent: &str, line: &str) {
        match agent {
            "claude" => self.feed_claude(line),
            "codex" => self.feed_codex(line),
            "aider" => self.feed_aider(line),
            "gemini" => self.feed_gemini(line),
            "opencode" => self.feed_opencode(line),
            _ => {}
        }
    }

    /// aider's `Tokens:` lines.
    pub fn feed_aider(&mut self, line: &str) {
        let t = line.trim();
        if t.starts_with("Tokens: ") {
            let r = parse_aider(t);
            self.running = self.running.saturating_add(r.tokens().unwrap_or(0));
            if let Some(c) = r.cost_usd {
                self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
            }
        }
    }

    /// Claude's `assistant` messages (each API call's usage, counted once per message id),
    /// then its `result` (the totals and the cost).
    pub fn feed_claude(&mut self, line: &str) {
        let t = line.trim();
        let Some(v) = json_object(t) else {
            return;
        };
        match event_type(&v) {
            Some("assistant") => {
                let Some(u) = v.pointer("/message/usage") else {
                    return;
                };
                let n = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                    "output_tokens",
                ]
                .iter()
                .filter_map(|k| u64_field(u, k))
                .fold(0u64, u64::saturating_add);
                let id = v
                    .pointer("/message/id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let seen = self.per_message.entry(id).or_insert(0);
                if n > *seen {
                    self.running = self.running.saturating_add(n - *seen);
                    *seen = n;
                }
            }
            Some("result") => {
                let r = parse_claude(t);
                self.final_tokens = r.tokens();
                self.cost_usd = r.cost_usd;
            }
            _ => {}
        }
    }

    /// Codex's `turn.completed` events.
    pub fn feed_codex(&mut self, line: &str) {
        let t = line.trim();
        if json_object(t).is_some_and(|v| event_type(&v) == Some("turn.completed")) {
            let r = parse_codex(t);
            self.running = self.running.saturating_add(r.tokens().unwrap_or(0));
        }
    }

    /// Gemini CLI's final `result` (it reports no usage before it).
    pub fn feed_gemini(&mut self, line: &str) {
        let t = line.trim();
        if json_object(t).is_some_and(|v| event_type(&v) == Some("result")) {
            self.final_tokens = parse_gemini(t).tokens();
        }
    }

    /// opencode's `step_finish` events, one per model call, each with its tokens and cost.
    pub fn feed_opencode(&mut self, line: &str) {
        let t = line.trim();
        if json_object(t).is_some_and(|v| event_type(&v) == Some("step_finish")) {
            let r = parse_opencode(t);
            self.running = self.running.saturating_add(r.tokens().unwrap_or(0));
            if let Some(c) = r.cost_usd {
                self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
            }
        }
    }

    /// Tokens and dollars so far (the final totals once the agent gave them).
    pub fn spend(&self) -> crate::plan::decide::Spend {
        crate::plan::decide::Spend {
            tokens: self.final_tokens.unwrap_or(self.running),
            usd: self.cost_usd.unwrap_or(0.0),
        }
    }
}

/// A line that is a JSON object, parsed (an agent's stderr shares its output).
fn json_object(line: &str) -> Option<Value> {
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(line).ok()
}

/// The `type` of a JSON event.
fn event_type(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// Codex passes a provider's error body through as its message: keep the message inside
/// `{"error": {"message": ...}}` when it is one.
fn unwrap_api_error(msg: &str) -> String {
    serde_json::from_str::<Value>(msg.trim())
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| msg.to_string())
}

#[cfg(test)]
mod tests;
