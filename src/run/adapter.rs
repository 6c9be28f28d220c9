//! Agent adapters: how a phase's command line is built for each kind of agent, and what the
//! agent's own output says about the run afterwards (its failure signal, usage and cost).
//!
//! | kind | default command line (the prompt arrives on stdin) | what is read back |
//! |---|---|---|
//! | `command` | `- **Agent command**` as written | nothing: exit code and artifact only |
//! | `claude` | `claude -p --permission-mode acceptEdits --output-format stream-json --verbose` | the last `result` event: subtype, `is_error`, `session_id`, usage, `total_cost_usd`, `modelUsage` (model, context window) |
//! | `codex` | `codex exec --json --sandbox workspace-write --skip-git-repo-check -` | `thread.started` (session), `turn.completed` (usage) / `turn.failed` and `error` (failure) |
//! | `aider` | `aider --yes-always --no-auto-commits --no-gitignore --no-check-update --no-pretty --no-fancy-input --message-file "$AUTOMATON_PROMPT_FILE" "$AUTOMATON_ARTIFACT"` | the `Model:` and `Tokens:`/`Cost:` lines it prints; success is the exit code |
//!
//! For `claude`, `codex` and `aider`, `- **Agent command**` replaces the whole default command
//! line (another binary, a wrapper script such as `sh examples/agents/claude.sh`), and the
//! output must keep the format the adapter reads (`stream-json`, `--json`). Without it, the
//! default is used and `- **Model**` adds `--model <model>`. `- **Agent flags**` is appended in
//! every case. The command runs with `sh -c` in the project root.
//!
//! Parsers never panic: a stream that is truncated, malformed or missing its final event gives
//! `ok: None` and an `error` saying what was missing; the phase is then judged by its exit code
//! and artifact as with the `command` adapter.

pub use crate::agent_kind::AgentKind;
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
    /// The `- **Agent**` word: `command`, `claude`, `codex`, `aider`.
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
        AgentKind::Command => &CommandAdapter,
    }
}

/// Build the shell command line of a run. `command`: `- **Agent command**` (replaces the
/// default); `model`: `- **Model**` (only added to the default); `flags`: `- **Agent flags**`
/// (always appended). `None` when there is nothing to run.
pub fn command_line(
    adapter: &dyn Adapter,
    command: Option<&str>,
    model: Option<&str>,
    flags: Option<&str>,
) -> Option<String> {
    let mut line = match command.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => c.to_string(),
        None => {
            let mut d = adapter.default_command()?.to_string();
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
    match adapter.add_dir_flag() {
        Some(flag) if !custom_command => format!("{line} {flag} \"$AUTOMATON_TASK_DIR\""),
        _ => line,
    }
}

fn shell_quote(s: &str) -> String {
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

/// Claude Code in print mode with a `stream-json` transcript.
pub struct Claude;

impl Adapter for Claude {
    fn add_dir_flag(&self) -> Option<&'static str> {
        Some("--add-dir")
    }

    fn name(&self) -> &'static str {
        "claude"
    }
    fn default_command(&self) -> Option<&'static str> {
        Some("claude -p --permission-mode acceptEdits --output-format stream-json --verbose")
    }
    fn parse(&self, output: &str) -> PhaseReport {
        parse_claude(output)
    }
    fn streams_usage(&self) -> bool {
        true
    }
    fn feed_usage(&self, usage: &mut StreamUsage, line: &str) {
        usage.feed_claude(line);
    }
    fn live_line(&self, line: &str) -> String {
        summarise_json(line, |v| {
            let kind = v.get("type")?.as_str()?;
            Some(match kind {
                "assistant" => {
                    let blocks = v.pointer("/message/content")?.as_array()?;
                    let parts: Vec<String> = blocks
                        .iter()
                        .filter_map(|b| match b.get("type")?.as_str()? {
                            "tool_use" => Some(format!("{}…", b.get("name")?.as_str()?)),
                            "text" => Some(short(b.get("text")?.as_str()?)),
                            _ => None,
                        })
                        .collect();
                    parts.join(" ")
                }
                "user" => "tool result".to_string(),
                "result" => format!("result: {}", str_field(v, "subtype")?),
                other => match str_field(v, "subtype") {
                    Some(s) => format!("{other}: {s}"),
                    None => other.to_string(),
                },
            })
        })
    }
}

/// Parse Claude Code's `--output-format stream-json --verbose` transcript.
pub fn parse_claude(output: &str) -> PhaseReport {
    let (events, bad) = json_lines(output);
    let mut r = PhaseReport::default();
    for e in &events {
        if r.session_id.is_none() {
            r.session_id = str_field(e, "session_id");
        }
        if e.get("type").and_then(Value::as_str) == Some("system")
            && e.get("subtype").and_then(Value::as_str) == Some("init")
        {
            r.model = str_field(e, "model").or(r.model);
        }
    }
    let Some(result) = events
        .iter()
        .rev()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("result"))
    else {
        r.error = Some(if events.is_empty() && bad == 0 {
            "no stream-json events in the output (is the agent command run with \
             `--output-format stream-json --verbose`?)"
                .to_string()
        } else {
            format!(
                "the stream-json output ended without a `result` event ({} events read{}): \
                 truncated?",
                events.len(),
                if bad > 0 {
                    format!(", {bad} malformed lines")
                } else {
                    String::new()
                }
            )
        });
        return r;
    };
    r.session_id = str_field(result, "session_id").or(r.session_id);
    r.cost_usd = result.get("total_cost_usd").and_then(Value::as_f64);
    if let Some(u) = result.get("usage") {
        let input = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .filter_map(|k| u64_field(u, k))
        .fold(None, |acc: Option<u64>, n| {
            Some(acc.unwrap_or(0).saturating_add(n))
        });
        r.input_tokens = input;
        r.output_tokens = u64_field(u, "output_tokens");
    }
    if let Some(models) = result.get("modelUsage").and_then(Value::as_object) {
        // The model that did most of the work (most output tokens) names the run.
        let main = models.iter().max_by_key(|(_, m)| {
            u64_field(m, "outputTokens")
                .unwrap_or(0)
                .saturating_add(u64_field(m, "inputTokens").unwrap_or(0))
        });
        if let Some((name, m)) = main {
            r.model = Some(name.clone());
            r.context_window = u64_field(m, "contextWindow").filter(|w| *w > 0);
        }
    }
    let subtype = str_field(result, "subtype").unwrap_or_else(|| "unknown".into());
    let is_error = result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(subtype != "success");
    if is_error || subtype != "success" {
        r.ok = Some(false);
        let detail = str_field(result, "result")
            .or_else(|| {
                result
                    .get("errors")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().find_map(Value::as_str).map(str::to_string))
            })
            .map(|m| format!(": {}", short(&m)))
            .unwrap_or_default();
        let kind = if subtype == "success" {
            String::new()
        } else {
            format!(" ({subtype})")
        };
        r.error = Some(format!("claude reported an error result{kind}{detail}"));
        let status = u64_field(result, "api_error_status");
        let error_type = str_field(result, "api_error_type").unwrap_or_default();
        r.rate_limited = matches!(status, Some(429 | 529))
            || is_rate_limit_text(&error_type)
            || r.error.as_deref().is_some_and(is_rate_limit_text);
    } else {
        r.ok = Some(true);
    }
    r
}

/// Codex CLI `codex exec --json`.
pub struct Codex;

impl Adapter for Codex {
    fn add_dir_flag(&self) -> Option<&'static str> {
        Some("--add-dir")
    }

    fn name(&self) -> &'static str {
        "codex"
    }
    fn default_command(&self) -> Option<&'static str> {
        Some("codex exec --json --sandbox workspace-write --skip-git-repo-check -")
    }
    fn parse(&self, output: &str) -> PhaseReport {
        parse_codex(output)
    }
    fn streams_usage(&self) -> bool {
        true
    }
    fn feed_usage(&self, usage: &mut StreamUsage, line: &str) {
        usage.feed_codex(line);
    }
    fn live_line(&self, line: &str) -> String {
        summarise_json(line, |v| {
            let kind = v.get("type")?.as_str()?;
            Some(match v.get("item") {
                Some(item) => match str_field(item, "type")?.as_str() {
                    "agent_message" => short(item.get("text")?.as_str()?),
                    "command_execution" => format!("$ {}", short(&str_field(item, "command")?)),
                    "file_change" => format!("{kind}: file_change"),
                    t => format!("{kind}: {t}"),
                },
                None => kind.to_string(),
            })
        })
    }
}

/// Parse Codex's `exec --json` event stream.
pub fn parse_codex(output: &str) -> PhaseReport {
    let (events, bad) = json_lines(output);
    let mut r = PhaseReport::default();
    let mut finished = false;
    let mut last_error: Option<String> = None;
    for e in &events {
        match e.get("type").and_then(Value::as_str) {
            Some("thread.started") => r.session_id = str_field(e, "thread_id").or(r.session_id),
            Some("turn.completed") => {
                finished = true;
                if let Some(u) = e.get("usage") {
                    let add = |acc: Option<u64>, n: Option<u64>| match (acc, n) {
                        (None, None) => None,
                        (a, n) => Some(a.unwrap_or(0).saturating_add(n.unwrap_or(0))),
                    };
                    // input_tokens already counts the cached ones (cached_input_tokens is a part).
                    r.input_tokens = add(r.input_tokens, u64_field(u, "input_tokens"));
                    r.output_tokens = add(r.output_tokens, u64_field(u, "output_tokens"));
                }
                if r.ok.is_none() {
                    r.ok = Some(true);
                }
            }
            Some("turn.failed") => {
                finished = true;
                r.ok = Some(false);
                let msg = e
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| last_error.clone())
                    .unwrap_or_else(|| "no message".to_string());
                r.error = Some(format!(
                    "codex reported turn.failed: {}",
                    short(&unwrap_api_error(&msg))
                ));
                r.rate_limited = is_rate_limit_text(&msg)
                    || last_error.as_deref().is_some_and(is_rate_limit_text);
            }
            Some("error") => {
                last_error = str_field(e, "message")
                    .or_else(|| e.pointer("/error/message")?.as_str().map(str::to_string));
            }
            Some("item.completed") | Some("item.started") => {
                if let Some(item) = e.get("item")
                    && item.get("type").and_then(Value::as_str) == Some("error")
                    && let Some(m) = str_field(item, "message")
                {
                    // Warnings (e.g. unknown model metadata) arrive as error items; keep the
                    // last one for a turn.failed without its own message.
                    last_error = Some(m);
                }
            }
            _ => {}
        }
    }
    if !finished {
        r.ok = None;
        r.error = Some(match (&last_error, events.is_empty() && bad == 0) {
            (Some(m), _) => format!(
                "codex output ended without turn.completed or turn.failed; last error: {}",
                short(m)
            ),
            (None, true) => "no JSON events in the output (is the agent command run with \
                             `codex exec --json`?)"
                .to_string(),
            (None, false) => format!(
                "codex output ended without turn.completed or turn.failed ({} events read{}): \
                 truncated?",
                events.len(),
                if bad > 0 {
                    format!(", {bad} malformed lines")
                } else {
                    String::new()
                }
            ),
        });
    }
    r
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

    /// Tokens and dollars so far (the final totals once the agent gave them).
    pub fn spend(&self) -> crate::decide::Spend {
        crate::decide::Spend {
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

/// aider with one message from the prompt file.
pub struct Aider;

impl Adapter for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }
    fn default_command(&self) -> Option<&'static str> {
        Some(
            "aider --yes-always --no-auto-commits --no-gitignore --no-check-update --no-pretty \
             --no-fancy-input --message-file \"$AUTOMATON_PROMPT_FILE\" \"$AUTOMATON_ARTIFACT\"",
        )
    }
    fn parse(&self, output: &str) -> PhaseReport {
        parse_aider(output)
    }
    fn streams_usage(&self) -> bool {
        true
    }
    fn feed_usage(&self, usage: &mut StreamUsage, line: &str) {
        usage.feed_aider(line);
    }
}

/// Parse aider's plain output: `Model: <name> with <format> edit format`, and each
/// `Tokens: 2.5k sent, 120 received. Cost: $0.01 message, $0.02 session.` line (summed).
/// aider has no failure signal of its own besides its exit code, so `ok` stays `None`.
pub fn parse_aider(output: &str) -> PhaseReport {
    let mut r = PhaseReport::default();
    for line in output.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Model: ")
            && r.model.is_none()
        {
            let name = rest.split_whitespace().next().unwrap_or("");
            if !name.is_empty() {
                r.model = Some(name.to_string());
            }
        } else if let Some(rest) = t.strip_prefix("Tokens: ") {
            let mut parts = rest.split(". Cost: ");
            let tokens = parts.next().unwrap_or("");
            for piece in tokens.split(',') {
                let piece = piece.trim().trim_end_matches('.');
                if let Some(n) = piece.strip_suffix(" sent").and_then(aider_count) {
                    r.input_tokens = Some(r.input_tokens.unwrap_or(0).saturating_add(n));
                } else if let Some(n) = piece.strip_suffix(" received").and_then(aider_count) {
                    r.output_tokens = Some(r.output_tokens.unwrap_or(0).saturating_add(n));
                }
            }
            if let Some(cost) = parts.next() {
                let msg = cost
                    .split(',')
                    .find(|p| p.trim().ends_with("message"))
                    .and_then(|p| p.trim().strip_prefix('$'))
                    .and_then(|p| p.split_whitespace().next())
                    .and_then(|n| n.parse::<f64>().ok())
                    .filter(|c| c.is_finite() && *c >= 0.0);
                if let Some(c) = msg {
                    r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + c);
                }
            }
        }
    }
    r
}

/// aider's token counts: `950`, `2.5k`, `1.2M`, `12k`.
fn aider_count(s: &str) -> Option<u64> {
    let s = s.trim().replace(',', "");
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1e3),
        'm' | 'M' => (&s[..s.len() - 1], 1e6),
        _ => (s.as_str(), 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (0.0..1e15).contains(&v).then(|| (v * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(command_line(&CommandAdapter, None, Some("x"), None), None);
        assert_eq!(
            command_line(&CommandAdapter, Some("./a.sh"), Some("x"), Some("--v")).as_deref(),
            Some("./a.sh --v")
        );
        assert_eq!(
            command_line(&Claude, None, Some("sonnet"), Some("--max-turns 5")).as_deref(),
            Some(
                "claude -p --permission-mode acceptEdits --output-format stream-json --verbose \
                 --model sonnet --max-turns 5"
            )
        );
        assert_eq!(
            command_line(
                &Codex,
                Some("/opt/codex exec --json -"),
                Some("gpt-5.5"),
                None
            )
            .as_deref(),
            Some("/opt/codex exec --json -")
        );
        assert!(
            command_line(&Aider, None, Some("openai/a b"), None)
                .unwrap()
                .ends_with("\"$AUTOMATON_ARTIFACT\" --model 'openai/a b'")
        );
    }

    #[test]
    fn a_worktree_run_grants_the_task_folder_to_claude_and_codex_defaults() {
        let claude = command_line(&Claude, None, None, None).unwrap();
        assert_eq!(
            in_worktree(&Claude, claude.clone(), false),
            format!("{claude} --add-dir \"$AUTOMATON_TASK_DIR\"")
        );
        assert_eq!(
            in_worktree(&Codex, "codex exec --json -".into(), false),
            "codex exec --json - --add-dir \"$AUTOMATON_TASK_DIR\""
        );
        assert_eq!(in_worktree(&Claude, "sh c.sh".into(), true), "sh c.sh");
        let aider = command_line(&Aider, None, None, None).unwrap();
        assert_eq!(in_worktree(&Aider, aider.clone(), false), aider);
        assert_eq!(in_worktree(&CommandAdapter, "x".into(), false), "x");
    }

    #[test]
    fn aider_counts() {
        assert_eq!(aider_count("950"), Some(950));
        assert_eq!(aider_count("2.5k"), Some(2500));
        assert_eq!(aider_count("1.2M"), Some(1_200_000));
        assert_eq!(aider_count("k"), None);
        assert_eq!(aider_count(""), None);
        assert_eq!(aider_count("-3"), None);
    }

    #[test]
    fn rate_limit_texts() {
        for yes in [
            "API Error: 429 Too Many Requests",
            "rate_limit_error",
            "Overloaded",
            "HTTP 529",
            "exceeded your rate limit",
        ] {
            assert!(is_rate_limit_text(yes), "{yes}");
        }
        for no in ["API Error: 400 bad request", "14290 tokens", "", "rated"] {
            assert!(!is_rate_limit_text(no), "{no}");
        }
    }

    #[test]
    fn stream_usage_counts_each_message_once_then_the_result() {
        let mut s = StreamUsage::default();
        let msg = |id: &str, out: u64| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","usage":{{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":{out}}}}}}}"#
            )
        };
        s.feed("claude", &msg("a", 5));
        s.feed("claude", &msg("a", 10));
        s.feed("claude", &msg("b", 0));
        assert_eq!(s.spend().tokens, 160 + 150);
        s.feed(
            "claude",
            r#"{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":7,"output_tokens":3},"total_cost_usd":0.5}"#,
        );
        assert_eq!(s.spend().tokens, 10);
        assert_eq!(s.spend().usd, 0.5);
        let mut c = StreamUsage::default();
        c.feed(
            "codex",
            r#"{"type":"turn.completed","usage":{"input_tokens":20,"output_tokens":2}}"#,
        );
        c.feed("codex", "not json");
        assert_eq!(c.spend().tokens, 22);
        let mut a = StreamUsage::default();
        a.feed(
            "aider",
            "Tokens: 2.5k sent, 120 received. Cost: $0.01 message, $0.02 session.",
        );
        assert_eq!(a.spend().tokens, 2620);
    }

    /// The report parsed from the output kept in memory is the one parsed from the log; a
    /// phase that printed more than is kept has its log read back.
    #[test]
    fn captured_output_reports_as_the_log_does() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("implement-1.log");
        let stream = concat!(
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"m"}"#,
            "\nwarning on stderr\n",
            r#"{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":7,"output_tokens":3},"total_cost_usd":0.5}"#,
            "\n"
        );
        std::fs::write(&log, stream).unwrap();
        let mut kept = CapturedOutput::new(&Claude);
        // Chunks cut anywhere, as the runner hands them over.
        for chunk in stream.as_bytes().chunks(7) {
            kept.push(chunk);
        }
        let from_log = parse_log(&Claude, &log);
        assert_eq!(from_log.tokens(), Some(10));
        assert_eq!(kept.report(&Claude, &dir.path().join("gone.log")), from_log);

        let mut big = CapturedOutput::new(&Claude);
        big.push(&vec![b'x'; MAX_CAPTURED_BYTES]);
        big.push(b"\n");
        assert_eq!(
            big.report(&Claude, &log),
            from_log,
            "read back from the log"
        );

        let mut none = CapturedOutput::new(&CommandAdapter);
        none.push(stream.as_bytes());
        assert_eq!(none.report(&CommandAdapter, &log), PhaseReport::default());
    }

    #[test]
    fn tokens_sum() {
        let r = PhaseReport {
            input_tokens: Some(3),
            ..PhaseReport::default()
        };
        assert_eq!(r.tokens(), Some(3));
        assert_eq!(PhaseReport::default().tokens(), None);
    }

    #[test]
    fn live_lines_summarise_json() {
        let l = Claude.live_line(
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write"}]}}"#,
        );
        assert_eq!(l, "Write…");
        assert_eq!(Claude.live_line("plain text"), "plain text");
        assert_eq!(
            Claude.live_line(r#"{"type":"system","subtype":"init","cwd":"/x","tools":["Ta…"#),
            "system init"
        );
        assert_eq!(
            Claude.live_line("{\"type\":\"unterminated"),
            "{\"type\":\"unterminated"
        );
        assert_eq!(
            Codex.live_line(
                r#"{"type":"item.completed","item":{"type":"agent_message","text":"hi\nthere"}}"#
            ),
            "hi there"
        );
    }
}
