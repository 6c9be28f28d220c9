use super::aider::aider_count;
use super::*;

#[test]
fn command_lines() {
    assert_eq!(
        command_line(&CommandAdapter, None, Some("x"), None, false),
        None
    );
    assert_eq!(
        command_line(
            &CommandAdapter,
            Some("./a.sh"),
            Some("x"),
            Some("--v"),
            false
        )
        .as_deref(),
        Some("./a.sh --v")
    );
    assert_eq!(
        command_line(&Claude, None, Some("sonnet"), Some("--max-turns 5"), false).as_deref(),
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
            None,
            false
        )
        .as_deref(),
        Some("/opt/codex exec --json -")
    );
    assert!(
        command_line(&Aider, None, Some("openai/a b"), None, false)
            .unwrap()
            .ends_with("\"$AUTOMATON_ARTIFACT\" --model 'openai/a b'")
    );
}

#[test]
fn a_sandboxed_run_lets_the_cli_run_its_tools_without_asking() {
    let claude = command_line(&Claude, None, None, None, true).unwrap();
    assert!(
        claude.contains("--dangerously-skip-permissions"),
        "{claude}"
    );
    assert!(!claude.contains("acceptEdits"), "{claude}");
    let codex = command_line(&Codex, None, None, None, true).unwrap();
    assert!(
        codex.contains("--dangerously-bypass-approvals-and-sandbox"),
        "{codex}"
    );
    // A command the user wrote is theirs, sandbox or not; aider has no other mode.
    assert_eq!(
        command_line(&Claude, Some("./a.sh"), None, None, true).as_deref(),
        Some("./a.sh")
    );
    assert_eq!(
        command_line(&Aider, None, None, None, true),
        command_line(&Aider, None, None, None, false)
    );
}

#[test]
fn a_worktree_run_grants_the_task_folder_to_claude_and_codex_defaults() {
    let claude = command_line(&Claude, None, None, None, false).unwrap();
    assert_eq!(
        in_worktree(&Claude, claude.clone(), false),
        format!("{claude} --add-dir \"$AUTOMATON_TASK_DIR\"")
    );
    assert_eq!(
        in_worktree(&Codex, "codex exec --json -".into(), false),
        "codex exec --json - --add-dir \"$AUTOMATON_TASK_DIR\""
    );
    assert_eq!(in_worktree(&Claude, "sh c.sh".into(), true), "sh c.sh");
    let aider = command_line(&Aider, None, None, None, false).unwrap();
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
