//! Codex (`codex exec --json`): its command line and what its events say.

use super::*;
use serde_json::Value;

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
    /// Codex's own sandbox off: automaton's is the boundary, and Codex's bubblewrap inside it
    /// would need namespaces the outer one does not give.
    fn sandboxed_command(&self) -> Option<&'static str> {
        Some("codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -")
    }
    fn sandbox_env(&self) -> &'static [&'static str] {
        &["OPENAI_*", "CODEX_*"]
    }
    fn state_paths(&self) -> &'static [&'static str] {
        &[".codex"]
    }
    fn state_env(&self) -> &'static [&'static str] {
        &["CODEX_HOME"]
    }
    fn model_hosts(&self) -> &'static [&'static str] {
        &["api.openai.com:443", "chatgpt.com:443"]
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
