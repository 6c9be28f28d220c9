//! aider: its command line and the `Model:`, `Tokens:` and `Cost:` lines it prints.

use super::*;

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
    fn sandbox_env(&self) -> &'static [&'static str] {
        &[
            "AIDER_*",
            "OPENAI_*",
            "ANTHROPIC_*",
            "GEMINI_*",
            "OLLAMA_*",
            "LITELLM_*",
        ]
    }
    fn state_paths(&self) -> &'static [&'static str] {
        &[".aider", ".cache"]
    }
    fn model_hosts(&self) -> &'static [&'static str] {
        &["api.openai.com:443", "api.anthropic.com:443"]
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
pub(super) fn aider_count(s: &str) -> Option<u64> {
    let s = s.trim().replace(',', "");
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1e3),
        'm' | 'M' => (&s[..s.len() - 1], 1e6),
        _ => (s.as_str(), 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (0.0..1e15).contains(&v).then(|| (v * mult).round() as u64)
}
