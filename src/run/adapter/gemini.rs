//! Gemini CLI (`gemini -p '' --output-format stream-json`): its command line and what its
//! `init` and final `result` events say.

use super::*;
use serde_json::Value;

/// Gemini CLI in headless mode with a `stream-json` transcript, the prompt on stdin.
pub struct Gemini;

impl Adapter for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }
    /// `-p ''` makes the run headless and reads the prompt from stdin (the flag's value is
    /// appended to it). `--approval-mode auto_edit` lets it write files but asks before shell
    /// commands, which a headless run refuses; `--skip-trust` keeps that mode in a folder the
    /// CLI has not been told to trust (there it falls back to asking for everything).
    fn default_command(&self) -> Option<&'static str> {
        Some("gemini --skip-trust --approval-mode auto_edit --output-format stream-json -p ''")
    }
    fn sandboxed_command(&self) -> Option<&'static str> {
        Some("gemini --skip-trust --approval-mode yolo --output-format stream-json -p ''")
    }
    fn sandbox_env(&self) -> &'static [&'static str] {
        &["GEMINI_*", "GOOGLE_*"]
    }
    fn state_paths(&self) -> &'static [&'static str] {
        &[".gemini"]
    }
    fn model_hosts(&self) -> &'static [&'static str] {
        &[
            "generativelanguage.googleapis.com:443",
            "cloudcode-pa.googleapis.com:443",
            "oauth2.googleapis.com:443",
        ]
    }
    fn add_dir_flag(&self) -> Option<&'static str> {
        Some("--include-directories")
    }
    fn parse(&self, output: &str) -> PhaseReport {
        parse_gemini(output)
    }
    fn streams_usage(&self) -> bool {
        true
    }
    fn feed_usage(&self, usage: &mut StreamUsage, line: &str) {
        usage.feed_gemini(line);
    }
    fn live_line(&self, line: &str) -> String {
        summarise_json(line, |v| {
            Some(match v.get("type")?.as_str()? {
                "message" => short(v.get("content")?.as_str()?),
                "tool_use" => format!("{}…", str_field(v, "tool_name")?),
                "tool_result" => format!("tool result: {}", str_field(v, "status")?),
                "result" => format!("result: {}", str_field(v, "status")?),
                other => other.to_string(),
            })
        })
    }
}

/// The tokens of a `result` event's `stats`: `input_tokens` counts the cached ones too.
fn gemini_usage(stats: &Value) -> (Option<u64>, Option<u64>) {
    (
        u64_field(stats, "input_tokens"),
        u64_field(stats, "output_tokens"),
    )
}

/// Parse Gemini CLI's `--output-format stream-json` transcript: `init` (session id, model),
/// then messages and tool events, then one `result` with `status` `success` or `error`.
pub fn parse_gemini(output: &str) -> PhaseReport {
    let (events, bad) = json_lines(output);
    let mut r = PhaseReport::default();
    let mut finished = false;
    for e in &events {
        match event_type(e) {
            Some("init") => {
                r.session_id = str_field(e, "session_id").or(r.session_id.take());
                // `auto` is the router's choice, not a model: the result names the ones used.
                r.model = str_field(e, "model")
                    .filter(|m| m != "auto")
                    .or(r.model.take());
            }
            Some("result") => {
                finished = true;
                if let Some(stats) = e.get("stats") {
                    (r.input_tokens, r.output_tokens) = gemini_usage(stats);
                    // The model that did most of the work (a router may have made a small call
                    // to another one first).
                    if let Some(models) = stats.get("models").and_then(Value::as_object)
                        && let Some((name, _)) = models
                            .iter()
                            .max_by_key(|(_, m)| u64_field(m, "total_tokens").unwrap_or(0))
                    {
                        r.model = Some(name.clone());
                    }
                }
                match str_field(e, "status").as_deref() {
                    Some("success") => r.ok = Some(true),
                    status => {
                        r.ok = Some(false);
                        let raw = e.pointer("/error/message").and_then(Value::as_str);
                        let msg = raw
                            .map(gemini_api_message)
                            .unwrap_or_else(|| format!("status {}", status.unwrap_or("missing")));
                        // The API's body has the HTTP code (429) and RESOURCE_EXHAUSTED.
                        r.rate_limited = raw.is_some_and(is_rate_limit_text)
                            || msg.contains("RESOURCE_EXHAUSTED")
                            || e.pointer("/error/type")
                                .and_then(Value::as_str)
                                .is_some_and(is_rate_limit_text);
                        r.error = Some(format!("gemini reported an error result: {}", short(&msg)));
                    }
                }
            }
            _ => {}
        }
    }
    if !finished {
        r.ok = None;
        r.error = Some(if events.is_empty() && bad == 0 {
            "no JSON events in the output (is the agent command run with \
             `gemini --output-format stream-json`?)"
                .to_string()
        } else {
            format!(
                "gemini output ended without a `result` event ({} events read{}): truncated?",
                events.len(),
                if bad > 0 {
                    format!(", {bad} malformed lines")
                } else {
                    String::new()
                }
            )
        });
    }
    r
}

/// Gemini CLI wraps the API's error body as `[API Error: {"error": {...}}]`: keep its message.
fn gemini_api_message(msg: &str) -> String {
    let inner = msg
        .trim()
        .strip_prefix("[API Error:")
        .and_then(|m| m.strip_suffix(']'))
        .unwrap_or(msg);
    let unwrapped = unwrap_api_error(inner);
    // A status such as RESOURCE_EXHAUSTED says "rate limit" where the message may not.
    match serde_json::from_str::<Value>(inner.trim())
        .ok()
        .and_then(|v| v.pointer("/error/status")?.as_str().map(str::to_string))
    {
        Some(status) if !unwrapped.contains(&status) => format!("{status}: {unwrapped}"),
        _ => unwrapped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUCCESS: &str = include_str!("../../../tests/fixtures/agents/gemini-success.jsonl");
    const API_ERROR: &str = include_str!("../../../tests/fixtures/agents/gemini-api-error.jsonl");

    #[test]
    fn success_gives_usage_session_and_the_model_that_did_the_work() {
        let r = parse_gemini(SUCCESS);
        assert_eq!(r.ok, Some(true), "{r:?}");
        assert_eq!(
            r.session_id.as_deref(),
            Some("542c4c13-e681-4eab-b9ea-ba6c48fc5403")
        );
        // The router's small call went to flash-lite; the turn itself to the pro model.
        assert_eq!(r.model.as_deref(), Some("gemini-3.1-pro-preview"));
        assert_eq!((r.input_tokens, r.output_tokens), (Some(934), Some(127)));
        let mut s = StreamUsage::default();
        for line in SUCCESS.lines() {
            Gemini.feed_usage(&mut s, line);
        }
        assert_eq!(s.spend().tokens, 1061);
    }

    #[test]
    fn an_api_error_is_a_failure_with_the_api_message() {
        let r = parse_gemini(API_ERROR);
        assert_eq!(r.ok, Some(false));
        assert_eq!(
            r.error.as_deref(),
            Some(
                "gemini reported an error result: INVALID_ARGUMENT: scripted failure: \
                 model-error task"
            )
        );
        assert!(!r.rate_limited);
        let r = parse_gemini(
            r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"message\":\"Quota exceeded\"}}]"}}"#,
        );
        assert!(r.rate_limited, "{r:?}");
    }

    #[test]
    fn a_stream_without_its_result_says_so() {
        let cut = SUCCESS.trim_end().len() - 30;
        let r = parse_gemini(&SUCCESS[..cut]);
        assert_eq!(r.ok, None);
        let e = r.error.unwrap();
        assert!(e.contains("without a `result` event"), "{e}");
        assert!(e.contains("1 malformed lines"), "{e}");
        assert!(r.session_id.is_some());
        let e = parse_gemini("plain text answer\n").error.unwrap();
        assert!(e.contains("--output-format stream-json"), "{e}");
    }

    #[test]
    fn command_lines_and_the_worktree_grant() {
        let line = command_line(&Gemini, None, Some("gemini-2.5-pro"), None, false).unwrap();
        assert_eq!(
            line,
            "gemini --skip-trust --approval-mode auto_edit --output-format stream-json -p '' \
             --model gemini-2.5-pro"
        );
        assert!(
            in_worktree(&Gemini, line, false)
                .ends_with(" --include-directories \"$AUTOMATON_TASK_DIR\"")
        );
        // Approving every tool is for sandboxes only, never the default.
        assert!(!Gemini.default_command().unwrap().contains("yolo"));
        assert!(
            Gemini
                .sandboxed_command()
                .unwrap()
                .contains("--approval-mode yolo")
        );
        assert_eq!(
            Gemini.live_line(r#"{"type":"tool_use","tool_name":"write_file","tool_id":"x"}"#),
            "write_file…"
        );
    }
}
