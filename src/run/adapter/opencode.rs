//! opencode (`opencode run --format json`): its command line and what its events say.

use super::*;
use serde_json::Value;

/// opencode's non-interactive `run` with raw JSON events, the prompt on stdin.
pub struct Opencode;

impl Adapter for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    /// opencode's default permissions already let `run` edit files and run commands in its
    /// working directory; writing anywhere else asks, which `run` refuses (see
    /// [`Adapter::grant_dir`]).
    fn default_command(&self) -> Option<&'static str> {
        Some("opencode run --format json")
    }
    /// `--auto` approves what the permissions would ask about (anything but an explicit deny).
    fn sandboxed_command(&self) -> Option<&'static str> {
        Some("opencode run --format json --auto")
    }
    fn sandbox_env(&self) -> &'static [&'static str] {
        &["OPENCODE_*", "OPENAI_*", "ANTHROPIC_*", "OLLAMA_*"]
    }
    fn state_paths(&self) -> &'static [&'static str] {
        &[
            ".local/share/opencode",
            ".local/state/opencode",
            ".config/opencode",
            ".cache/opencode",
        ]
    }
    fn model_hosts(&self) -> &'static [&'static str] {
        &[
            "api.openai.com:443",
            "api.anthropic.com:443",
            "models.dev:443",
        ]
    }
    /// opencode has no flag for one more folder: its `external_directory` permission, given as
    /// JSON in `OPENCODE_PERMISSION` (merged into its config), allows the task folder.
    fn grant_dir(&self, line: &str) -> Option<String> {
        Some(format!(
            "OPENCODE_PERMISSION=\"{{\\\"external_directory\\\":{{\\\"$AUTOMATON_TASK_DIR/*\\\":\\\"allow\\\"}}}}\" {line}"
        ))
    }
    fn parse(&self, output: &str) -> PhaseReport {
        parse_opencode(output)
    }
    fn streams_usage(&self) -> bool {
        true
    }
    fn feed_usage(&self, usage: &mut StreamUsage, line: &str) {
        usage.feed_opencode(line);
    }
    fn live_line(&self, line: &str) -> String {
        summarise_json(line, |v| {
            let part = v.get("part");
            Some(match v.get("type")?.as_str()? {
                "text" => short(part?.get("text")?.as_str()?),
                "tool_use" => {
                    let p = part?;
                    let status = p.pointer("/state/status").and_then(Value::as_str);
                    format!("{}: {}", str_field(p, "tool")?, status.unwrap_or("?"))
                }
                "step_finish" => format!("step: {}", str_field(part?, "reason")?),
                "error" => format!("error: {}", short(&opencode_error(v))),
                other => other.to_string(),
            })
        })
    }
}

/// The tokens of one `step_finish` part: input with the cache reads and writes, output with
/// the reasoning (opencode counts each apart).
fn step_tokens(part: &Value) -> (Option<u64>, Option<u64>) {
    let Some(t) = part.get("tokens") else {
        return (None, None);
    };
    let sum = |keys: &[&str]| {
        let found: Vec<u64> = keys.iter().filter_map(|k| t.pointer(k)?.as_u64()).collect();
        (!found.is_empty()).then(|| found.into_iter().fold(0u64, u64::saturating_add))
    };
    (
        sum(&["/input", "/cache/read", "/cache/write"]),
        sum(&["/output", "/reasoning"]),
    )
}

/// The message of an `error` event: `error.data.message` (the provider's), else its name.
fn opencode_error(e: &Value) -> String {
    e.pointer("/error/data/message")
        .and_then(Value::as_str)
        .or_else(|| e.pointer("/error/message").and_then(Value::as_str))
        .or_else(|| e.pointer("/error/name").and_then(Value::as_str))
        .map(unwrap_api_error)
        .unwrap_or_else(|| "no message".to_string())
}

/// Parse opencode's `run --format json` events: every one carries the `sessionID`; each model
/// step ends with `step_finish` (its tokens and cost, `reason` `stop` on the last); a failure is
/// an `error` event.
pub fn parse_opencode(output: &str) -> PhaseReport {
    let (events, bad) = json_lines(output);
    let mut r = PhaseReport::default();
    let mut stopped = false;
    let add = |acc: Option<u64>, n: Option<u64>| match (acc, n) {
        (None, None) => None,
        (a, n) => Some(a.unwrap_or(0).saturating_add(n.unwrap_or(0))),
    };
    for e in &events {
        if r.session_id.is_none() {
            r.session_id = str_field(e, "sessionID");
        }
        match event_type(e) {
            Some("step_finish") => {
                let Some(part) = e.get("part") else { continue };
                let (i, o) = step_tokens(part);
                r.input_tokens = add(r.input_tokens, i);
                r.output_tokens = add(r.output_tokens, o);
                if let Some(c) = part.get("cost").and_then(Value::as_f64)
                    && c.is_finite()
                    && c >= 0.0
                {
                    r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + c);
                }
                // A step that ends for tool calls is followed by another; `stop` (or a length
                // cut, reported as such by the exit code and artifact) ends the run.
                stopped = part.get("reason").and_then(Value::as_str) != Some("tool-calls");
            }
            Some("error") => {
                let msg = opencode_error(e);
                let status = e.pointer("/error/data/statusCode").and_then(Value::as_u64);
                r.ok = Some(false);
                r.rate_limited = matches!(status, Some(429 | 529)) || is_rate_limit_text(&msg);
                r.error = Some(format!(
                    "opencode reported an error{}: {}",
                    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
                    short(&msg)
                ));
            }
            _ => {}
        }
    }
    if r.ok.is_none() {
        if stopped {
            r.ok = Some(true);
        } else {
            r.error = Some(if events.is_empty() && bad == 0 {
                "no JSON events in the output (is the agent command run with \
                 `opencode run --format json`?)"
                    .to_string()
            } else {
                format!(
                    "opencode output ended without a final `step_finish` or an `error` ({} \
                     events read{}): truncated?",
                    events.len(),
                    if bad > 0 {
                        format!(", {bad} malformed lines")
                    } else {
                        String::new()
                    }
                )
            });
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUCCESS: &str = include_str!("../../../tests/fixtures/agents/opencode-success.jsonl");
    const API_ERROR: &str = include_str!("../../../tests/fixtures/agents/opencode-api-error.jsonl");

    #[test]
    fn success_sums_the_steps() {
        let r = parse_opencode(SUCCESS);
        assert_eq!(r.ok, Some(true), "{r:?}");
        assert_eq!(
            r.session_id.as_deref(),
            Some("ses_dc3100d37ffenBx8a0BhFjS4B1")
        );
        // Two steps: the write call (2474 in, 126 out), the closing text (2637 in, 12 out).
        assert_eq!((r.input_tokens, r.output_tokens), (Some(5111), Some(138)));
        assert_eq!(r.cost_usd, Some(0.0));
        let mut s = StreamUsage::default();
        for line in SUCCESS.lines() {
            Opencode.feed_usage(&mut s, line);
        }
        assert_eq!(s.spend().tokens, 5249);
    }

    #[test]
    fn an_error_event_is_a_failure_with_the_provider_message() {
        let r = parse_opencode(API_ERROR);
        assert_eq!(r.ok, Some(false));
        assert_eq!(
            r.error.as_deref(),
            Some("opencode reported an error (HTTP 400): scripted failure: model-error task")
        );
        assert!(!r.rate_limited);
        let r = parse_opencode(
            r#"{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"slow down","statusCode":429}}}"#,
        );
        assert!(r.rate_limited);
        assert_eq!(r.session_id.as_deref(), Some("s"));
    }

    #[test]
    fn a_run_that_stops_after_a_tool_step_is_unfinished() {
        let first_step: String = SUCCESS.lines().take(3).map(|l| format!("{l}\n")).collect();
        let r = parse_opencode(&first_step);
        assert_eq!(r.ok, None);
        assert!(r.error.unwrap().contains("without a final `step_finish`"));
        let e = parse_opencode("").error.unwrap();
        assert!(e.contains("opencode run --format json"), "{e}");
    }

    #[test]
    fn the_worktree_grant_is_a_permission_in_the_environment() {
        let line = command_line(&Opencode, None, Some("ollama/qwen3"), None, false).unwrap();
        assert_eq!(line, "opencode run --format json --model ollama/qwen3");
        let granted = in_worktree(&Opencode, line.clone(), false);
        assert!(granted.ends_with(&line), "{granted}");
        // What sh -c makes of it: the JSON opencode reads, the task folder expanded.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(granted.replace(&line, "sh -c 'printf %s \"$OPENCODE_PERMISSION\"'"))
            .env("AUTOMATON_TASK_DIR", "/p/tasks/x")
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["external_directory"]["/p/tasks/x/*"], "allow");
        assert!(Opencode.sandboxed_command().unwrap().ends_with(" --auto"));
    }
}
