//! Claude Code (`claude -p --output-format stream-json`): its command line and what its
//! final `result` event says.

use super::*;
use serde_json::Value;

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
    fn sandboxed_command(&self) -> Option<&'static str> {
        Some("claude -p --dangerously-skip-permissions --output-format stream-json --verbose")
    }
    fn sandbox_env(&self) -> &'static [&'static str] {
        &["ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "CLAUDECODE"]
    }
    fn state_paths(&self) -> &'static [&'static str] {
        &[".claude", ".claude.json", ".config/claude"]
    }
    fn sandbox_vars(&self) -> &'static [(&'static str, &'static str)] {
        &[("IS_SANDBOX", "1")]
    }
    fn state_env(&self) -> &'static [&'static str] {
        &["CLAUDE_CONFIG_DIR"]
    }
    fn model_hosts(&self) -> &'static [&'static str] {
        &["api.anthropic.com:443"]
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
