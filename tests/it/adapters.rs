//! The adapters' parsers over output recorded from the real CLIs (tests/fixtures/agents/), and
//! over truncated and malformed streams: a clear error, never a panic.

use automaton::run::adapter::{
    Adapter, AgentKind, Aider, Claude, Codex, CommandAdapter, Gemini, Opencode, PhaseReport,
    adapter_for, parse_aider, parse_claude, parse_codex, parse_gemini, parse_log, parse_opencode,
};

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/agents/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn claude_success_result() {
    let r = parse_claude(&fixture("claude-success.jsonl"));
    assert_eq!(r.ok, Some(true), "{r:?}");
    assert_eq!(r.error, None);
    assert!(
        r.session_id.as_deref().is_some_and(|s| s.len() == 36),
        "{r:?}"
    );
    assert_eq!(r.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(r.context_window, Some(1_000_000));
    assert!(r.input_tokens.unwrap() > 1000, "{r:?}");
    assert!(r.output_tokens.unwrap() > 10, "{r:?}");
    assert!(r.cost_usd.unwrap() > 0.0, "{r:?}");
    assert_eq!(
        r.tokens(),
        Some(r.input_tokens.unwrap() + r.output_tokens.unwrap())
    );
}

#[test]
fn claude_error_result_is_a_failure_with_the_message() {
    let r = parse_claude(&fixture("claude-api-error.jsonl"));
    assert_eq!(r.ok, Some(false), "{r:?}");
    let e = r.error.unwrap();
    assert!(e.starts_with("claude reported an error result"), "{e}");
    assert!(
        e.contains("API Error: 400 scripted failure: model-error task"),
        "{e}"
    );
    assert_eq!(r.model.as_deref(), Some("claude-opus-5-5"));
}

#[test]
fn claude_truncated_stream_is_a_clear_error() {
    let text = fixture("claude-success.jsonl");
    // Cut inside the final result line.
    let cut = text.trim_end().len() - 40;
    let r = parse_claude(&text[..cut]);
    assert_eq!(r.ok, None);
    let e = r.error.unwrap();
    assert!(e.contains("without a `result` event"), "{e}");
    assert!(e.contains("1 malformed lines"), "{e}");
    // What was read before the cut still counts.
    assert!(r.session_id.is_some());
    assert_eq!(r.model.as_deref(), Some("claude-opus-5-5"));
}

#[test]
fn claude_subtype_errors_and_odd_results() {
    let r = parse_claude(
        r#"{"type":"result","subtype":"error_max_turns","is_error":false,"session_id":"s1"}"#,
    );
    assert_eq!(r.ok, Some(false));
    assert_eq!(
        r.error.as_deref(),
        Some("claude reported an error result (error_max_turns)")
    );
    assert_eq!(r.session_id.as_deref(), Some("s1"));
    let r = parse_claude(r#"{"type":"result"}"#);
    assert_eq!(r.ok, Some(false));
    let r = parse_claude(
        r#"{"type":"result","subtype":"success","usage":"x","modelUsage":[1],"total_cost_usd":"a"}"#,
    );
    assert_eq!(r.ok, Some(true));
    assert_eq!((r.input_tokens, r.cost_usd, r.model), (None, None, None));
}

#[test]
fn claude_text_output_says_what_is_missing() {
    let r = parse_claude("done\nCONTRACT_MET\n");
    assert_eq!(r.ok, None);
    assert!(
        r.error
            .unwrap()
            .contains("--output-format stream-json --verbose")
    );
}

#[test]
fn codex_success_turn() {
    let r = parse_codex(&fixture("codex-success.jsonl"));
    assert_eq!(r.ok, Some(true), "{r:?}");
    assert_eq!(r.error, None);
    assert_eq!(
        r.session_id.as_deref(),
        Some("01a2280e-9fdb-74e3-bb1e-1c3dbf9690ba")
    );
    assert_eq!(r.input_tokens, Some(17489));
    assert_eq!(r.output_tokens, Some(184));
    assert_eq!(r.cost_usd, None);
}

#[test]
fn codex_turn_failed_is_a_failure_with_the_message() {
    let r = parse_codex(&fixture("codex-turn-failed.jsonl"));
    assert_eq!(r.ok, Some(false));
    assert_eq!(
        r.error.as_deref(),
        Some("codex reported turn.failed: scripted failure: model-error task")
    );
    assert!(r.session_id.is_some());
}

#[test]
fn codex_truncated_stream_is_a_clear_error() {
    let text = fixture("codex-success.jsonl");
    let without_end: String = text
        .lines()
        .filter(|l| !l.contains("turn.completed"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = parse_codex(&without_end);
    assert_eq!(r.ok, None);
    assert!(
        r.error
            .unwrap()
            .contains("without turn.completed or turn.failed")
    );
    let cut = text.trim_end().len() - 20;
    let r = parse_codex(&text[..cut]);
    assert_eq!(r.ok, None);
    assert!(r.error.unwrap().contains("1 malformed lines"));
    let r = parse_codex("");
    assert!(r.error.unwrap().contains("codex exec --json"));
    // An error event and then nothing: its message is kept.
    let r = parse_codex(r#"{"type":"error","message":"stream disconnected"}"#);
    assert_eq!(r.ok, None);
    assert!(r.error.unwrap().contains("stream disconnected"));
}

#[test]
fn aider_usage_lines() {
    let r = parse_aider(&fixture("aider-success.log"));
    assert_eq!(r.ok, None);
    assert_eq!(r.error, None);
    assert_eq!(r.model.as_deref(), Some("openai/stub"));
    assert_eq!(r.input_tokens, Some(2200));
    assert_eq!(r.output_tokens, Some(106));
    assert!((r.cost_usd.unwrap() - 0.0024).abs() < 1e-9);
    // Two messages in one run add up; a line without a cost is fine.
    let r = parse_aider(
        "Tokens: 1.5k sent, 20 received.\nTokens: 500 sent, 1k received. Cost: $0.01 message, $0.02 session.\n",
    );
    assert_eq!((r.input_tokens, r.output_tokens), (Some(2000), Some(1020)));
    assert_eq!(r.cost_usd, Some(0.01));
    assert_eq!(parse_aider("nothing to see\n"), PhaseReport::default());
}

/// Gemini CLI 0.61.0's stream-json and opencode 1.18.33's JSON events, recorded from the
/// offline tier: the verdict, the session, the usage and the agent's error as a person reads it.
#[test]
fn gemini_and_opencode_recordings() {
    let r = parse_gemini(&fixture("gemini-success.jsonl"));
    assert_eq!(r.ok, Some(true), "{r:?}");
    assert!(r.tokens().unwrap() > 500 && r.model.is_some(), "{r:?}");
    let r = parse_gemini(&fixture("gemini-api-error.jsonl"));
    assert_eq!(r.ok, Some(false));
    assert!(
        r.error
            .unwrap()
            .contains("scripted failure: model-error task")
    );
    let r = parse_opencode(&fixture("opencode-success.jsonl"));
    assert_eq!(r.ok, Some(true), "{r:?}");
    assert!(r.session_id.as_deref().unwrap().starts_with("ses_"));
    assert!(r.tokens().unwrap() > 500, "{r:?}");
    let r = parse_opencode(&fixture("opencode-api-error.jsonl"));
    assert_eq!(r.ok, Some(false));
    assert!(r.error.unwrap().contains("(HTTP 400): scripted failure"));
    for (kind, word) in [
        (AgentKind::Gemini, "gemini"),
        (AgentKind::Opencode, "opencode"),
    ] {
        assert_eq!(adapter_for(kind).name(), word);
        assert_eq!(AgentKind::parse(word), Some(kind));
    }
}

#[test]
fn garbage_never_panics() {
    let garbage: Vec<String> = vec![
        String::new(),
        "{".into(),
        "}\n{{\n".into(),
        "{}".into(),
        "[]\n\"x\"\nnull\n".into(),
        "\u{0}\u{1b}[31m{\"type\":\n".into(),
        "Tokens: k sent, M received. Cost: $ message\n".into(),
        "Tokens: 99999999999999999999999k sent. Cost: $NaN message\n".into(),
        "Model: \n".into(),
        r#"{"type":"turn.completed","usage":{"input_tokens":-1,"output_tokens":1e400}}"#.into(),
        r#"{"type":"result","subtype":7,"is_error":"yes","usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":18446744073709551615}}"#.into(),
        r#"{"type":"result","subtype":"success","modelUsage":{"a":{"inputTokens":18446744073709551615,"outputTokens":18446744073709551615,"contextWindow":"big"}}}"#.into(),
        "x".repeat(100_000),
    ];
    for g in &garbage {
        for a in [
            &Claude as &dyn Adapter,
            &Codex,
            &Gemini,
            &Opencode,
            &Aider,
            &CommandAdapter,
        ] {
            let r = a.parse(g);
            let name = a.name();
            // No verdict without a reason: a JSON adapter that cannot read a verdict says why.
            if name != "aider" && name != "command" && r.ok.is_none() {
                assert!(
                    r.error.is_some(),
                    "{name} on {g:.40?}: no verdict and no error"
                );
            }
            // An error is one a person can read (an error with a verdict is the agent's own).
            if let Some(e) = &r.error {
                assert!(!e.trim().is_empty(), "{name} on {g:.40?}: empty error");
            }
            // The command adapter reads nothing; token sums saturate, never overflow.
            if name == "command" {
                assert_eq!(r, PhaseReport::default(), "{g:.40?}");
            }
            assert!(
                r.tokens() >= r.input_tokens && r.tokens() >= r.output_tokens,
                "{name} on {g:.40?}: {r:?}"
            );
            // One line in (the live line's contract), one line out; a plain command's live
            // line is the line itself.
            let live = a.live_line(g);
            if !g.contains('\n') {
                assert!(!live.contains('\n'), "{name} on {g:.40?}: {live:?}");
            }
            if name == "command" {
                assert_eq!(&live, g);
            }
        }
    }
    // Every prefix of every fixture, at byte (char-boundary) steps.
    for name in [
        "claude-success.jsonl",
        "claude-api-error.jsonl",
        "codex-success.jsonl",
        "codex-turn-failed.jsonl",
        "aider-success.log",
        "gemini-success.jsonl",
        "gemini-api-error.jsonl",
        "opencode-success.jsonl",
        "opencode-api-error.jsonl",
    ] {
        let text = fixture(name);
        for cut in (0..text.len())
            .step_by(13)
            .filter(|c| text.is_char_boundary(*c))
        {
            for a in [&Claude as &dyn Adapter, &Codex, &Gemini, &Opencode, &Aider] {
                let r = a.parse(&text[..cut]);
                if a.name() != "aider" && r.ok.is_none() {
                    assert!(r.error.is_some(), "{name} cut at {cut}: no error");
                }
            }
        }
    }
}

#[test]
fn parse_log_reads_the_file_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("research-1.log");
    let r = parse_log(adapter_for(AgentKind::Claude), &log);
    assert!(r.error.unwrap().starts_with("cannot read"));
    assert_eq!(
        parse_log(adapter_for(AgentKind::Command), &log),
        PhaseReport::default()
    );
    std::fs::write(&log, fixture("codex-success.jsonl")).unwrap();
    assert_eq!(
        parse_log(adapter_for(AgentKind::Codex), &log).ok,
        Some(true)
    );
    assert_eq!(AgentKind::parse("nonsense"), None);
}
