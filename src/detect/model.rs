//! The model name and its context window.
//!
//! [`lookup`] is pure: it normalises a model name and matches the longest prefix in [`TABLE`].
//! [`detect_model`] does the reading: config.md, `.agent.md`, then the agents' own config files
//! and environment, reading at most 10 KB of each file: JSON (`serde_json`) and TOML (`toml`)
//! are parsed and only their top-level `model` is taken; YAML and `.env` are read by line.

use std::path::{Path, PathBuf};

use crate::settings::{Key, Settings};

/// How much of an agent config file is read (at most 10 KB).
pub const MAX_FILE_BYTES: usize = 10 * 1024;

/// One row of the context-window table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelEntry {
    /// Matched against the start of the normalised name; the longest match wins.
    pub prefix: &'static str,
    /// Input tokens.
    pub window: u64,
    /// Served by a provider (KV cache not in local VRAM) rather than run locally.
    pub hosted: bool,
}

const fn h(prefix: &'static str, window: u64) -> ModelEntry {
    ModelEntry {
        prefix,
        window,
        hosted: true,
    }
}

const fn l(prefix: &'static str, window: u64) -> ModelEntry {
    ModelEntry {
        prefix,
        window,
        hosted: false,
    }
}

/// Context windows (input tokens), as of 2026-07. Sources: LiteLLM's
/// `model_prices_and_context_window` (litellm 1.110.2), Anthropic's models page, Hugging Face
/// model configs; see `/work/shared/reference/vram-context.md` section 5 and
/// `docs/detect-vram.md`.
///
/// Where the seed is wrong: plain `gpt-4` is 8,192 (the seed says 128k), and `claude-2.0` is
/// 100,000 (the seed's "claude-2: 200k" holds only for claude-2.1).
pub static TABLE: &[ModelEntry] = &[
    // Anthropic
    h("claude-opus-4-8", 1_000_000),
    h("claude-opus-4-7", 1_000_000),
    h("claude-opus-4-6", 1_000_000),
    h("claude-sonnet-4-6", 1_000_000),
    h("claude-sonnet-5", 1_000_000),
    h("claude-fable-5", 1_000_000),
    h("claude-mythos-5", 1_000_000),
    h("claude-opus-4-5", 200_000),
    h("claude-haiku-4-5", 200_000),
    h("claude-sonnet-4-5", 200_000), // 1M with the [1m] suffix / context-1m beta
    h("claude-sonnet-4", 200_000),
    h("claude-opus-4-1", 200_000),
    h("claude-opus-4", 200_000),
    h("claude-3-7-sonnet", 200_000),
    h("claude-3-5-sonnet", 200_000),
    h("claude-3-5-haiku", 200_000),
    h("claude-3-opus", 200_000),
    h("claude-3-sonnet", 200_000),
    h("claude-3-haiku", 200_000),
    h("claude-2.1", 200_000),
    h("claude-2.0", 100_000), // seed says 200k: wrong, only 2.1 has 200k
    h("claude-2", 100_000),   // bare "claude-2": the smaller of 2.0/2.1, to be safe
    h("claude-instant", 100_000),
    h("claude", 200_000), // any other Claude id
    // Claude Code aliases
    h("opusplan", 200_000),
    h("opus", 200_000),
    h("sonnet", 200_000),
    h("haiku", 200_000),
    // OpenAI
    h("gpt-5.5", 1_050_000),
    h("gpt-5.4", 1_050_000),
    h("gpt-5", 272_000), // 400k total incl. 128k output; gpt-5-mini/nano/codex, 5.1, 5.2
    h("gpt-4.1", 1_047_576),
    h("gpt-4o", 128_000),
    h("gpt-4-turbo", 128_000),
    h("gpt-4-32k", 32_768),
    h("gpt-4", 8192), // seed says 128k: wrong for plain gpt-4 (gpt-4-0613)
    h("gpt-3.5-turbo", 16_385),
    h("o1", 200_000),
    h("o3", 200_000),
    h("o4-mini", 200_000),
    // Google
    h("gemini-2.5", 1_048_576),
    h("gemini-3", 1_048_576),
    // DeepSeek: the API models, then the open weights people run locally
    h("deepseek-chat", 131_072),
    h("deepseek-reasoner", 131_072),
    l("deepseek-v3", 131_072),
    l("deepseek-r1", 131_072),
    // Qwen (native windows; YaRN can stretch them)
    l("qwen3-coder", 262_144),
    l("qwen3", 32_768),
    l("qwen2.5", 32_768),
    // Llama
    l("llama3.3", 131_072),
    l("llama3.2", 131_072),
    l("llama3.1", 131_072),
    l("llama3", 8192),
    l("llama-3.3", 131_072),
    l("llama-3.2", 131_072),
    l("llama-3.1", 131_072),
    l("llama-3", 8192),
    l("llama-4-scout", 10_485_760),
    l("llama-4-maverick", 1_048_576),
    l("llama4", 1_048_576),
    // Mistral: the hosted -latest models, then the open 7B
    h("mistral-large", 262_144),
    h("mistral-medium", 262_144),
    h("mistral-small", 262_144),
    h("codestral", 128_000),
    h("devstral", 256_000),
    l("mistral", 32_768),
    // Others
    l("gemma3", 131_072),
    l("gemma2", 8192),
    h("grok-code-fast", 256_000),
];

/// What the table says about a model name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The name after normalisation.
    pub normalised: String,
    /// The window, when the table (or a `[1m]` suffix) knows it.
    pub window: Option<u64>,
    pub hosted: bool,
}

/// Normalise a model name and look up its window by the longest matching prefix. Pure.
///
/// Normalising: lower case; `[1m]` (Claude Code) means a 1,000,000 window; strip `provider/`
/// prefixes, Bedrock's `anthropic.`/`-v1:0`, Vertex's `@date`, an ollama `:tag`, `-latest`.
pub fn lookup(name: &str) -> Lookup {
    let mut n = name.trim().to_ascii_lowercase();
    let one_million = n.ends_with("[1m]");
    if one_million {
        n.truncate(n.len() - "[1m]".len());
    }
    if let Some(i) = n.rfind('/') {
        n = n[i + 1..].to_string();
    }
    for p in ["anthropic.", "us.anthropic.", "eu.anthropic."] {
        if let Some(rest) = n.strip_prefix(p) {
            n = rest.to_string();
        }
    }
    if let Some(i) = n.find('@') {
        n.truncate(i);
    }
    if let Some(rest) = n.strip_suffix("-v1:0") {
        n = rest.to_string();
    }
    if let Some(i) = n.find(':') {
        n.truncate(i);
    }
    if let Some(rest) = n.strip_suffix("-latest") {
        n = rest.to_string();
    }
    let entry = TABLE
        .iter()
        .filter(|e| n.starts_with(e.prefix))
        .max_by_key(|e| e.prefix.len());
    let window = if one_million {
        Some(1_000_000)
    } else {
        entry.map(|e| e.window)
    };
    Lookup {
        normalised: n,
        window,
        hosted: entry.is_some_and(|e| e.hosted) || (one_million && entry.is_none()),
    }
}

/// Where model detection looks outside automaton's own settings.
pub struct ModelEnv<'a> {
    /// The user's home folder (`$HOME`), for `~/.claude` and `~/.codex`.
    pub user_home: Option<PathBuf>,
    /// The environment.
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

/// The model as detected.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The name as found; `None` when no source named one.
    pub name: Option<String>,
    /// Where the name came from (`config.md:12`, `env ANTHROPIC_MODEL`, a file and line).
    pub name_source: String,
    /// The window in tokens (the default when unknown).
    pub window: u64,
    /// Whether the window is known (from an override, a config file or the table).
    pub window_known: bool,
    /// Where the window came from.
    pub window_source: String,
    pub hosted: bool,
    pub warnings: Vec<String>,
}

/// Environment variables that name a model, in the order they are consulted.
pub const MODEL_VARS: &[&str] = &[
    "ANTHROPIC_MODEL",
    "OPENAI_MODEL",
    "GEMINI_MODEL",
    "AIDER_MODEL",
];

/// Detect the model and its window: config.md `Model` / `Override context window`, then
/// `.agent.md` `Model`, then the model the agent itself last reported (claude, codex and aider
/// adapters; `.automaton/.agent_model.json`, with the window Claude Code reports), then the
/// environment, then the agents' config files.
pub fn detect_model(settings: &Settings, env: &ModelEnv<'_>) -> ModelInfo {
    let mut warnings = Vec::new();
    let mut found: Option<(String, String)> = None;
    let mut file_window: Option<(u64, String)> = None;

    if let Some(name) = settings.text(Key::ModelName).filter(|n| !is_auto(n)) {
        found = Some((
            name.to_string(),
            settings.get(Key::ModelName).origin.to_string(),
        ));
    } else if let Some(name) = settings.text(Key::AgentModel).filter(|n| !is_auto(n)) {
        found = Some((
            name.to_string(),
            settings.get(Key::AgentModel).origin.to_string(),
        ));
    } else if let Some(m) = crate::store::journal::read_agent_model(&settings.project) {
        // The model a claude/codex/aider agent reported in its last phase run (the journal's
        // `model`, kept in .automaton/.agent_model.json), with the window it reported.
        let src = format!("reported by {} ({})", m.agent, m.journal);
        if let Some(w) = m.context_window {
            file_window = Some((w, src.clone()));
        }
        found = Some((m.model, src));
    } else if let Some((var, v)) = MODEL_VARS.iter().find_map(|v| {
        (env.var)(v)
            .filter(|s| !s.trim().is_empty())
            .map(|s| (*v, s))
    }) {
        found = Some((v.trim().to_string(), format!("env {var}")));
    } else {
        for source in agent_files(&settings.project, env.user_home.as_deref()) {
            if let Some(hit) = read_agent_file(&source, &mut warnings) {
                if let Some(w) = hit.window {
                    file_window = Some((w, hit.where_.clone()));
                }
                found = Some((hit.model, hit.where_));
                break;
            }
        }
    }

    let looked = found.as_ref().map(|(n, _)| lookup(n));
    let (window, window_known, window_source) = if let Some(w) = settings.tokens(Key::ContextWindow)
    {
        (w, true, settings.get(Key::ContextWindow).origin.to_string())
    } else if let Some((w, src)) = file_window {
        (w, true, src)
    } else if let Some(w) = looked.as_ref().and_then(|l| l.window) {
        (w, true, "model table".to_string())
    } else {
        (super::budget::DEFAULT_WINDOW, false, "default".to_string())
    };
    if let (Some((name, src)), Some(l)) = (&found, &looked)
        && l.window.is_none()
        && !window_known
    {
        warnings.push(format!(
            "model `{name}` ({src}) is not in the context-window table; assuming {window} tokens"
        ));
    }
    let (name, name_source) = match found {
        Some((n, s)) => (Some(n), s),
        None => (None, "none found".to_string()),
    };
    ModelInfo {
        name,
        name_source,
        window,
        window_known,
        window_source,
        hosted: looked.is_some_and(|l| l.hosted),
        warnings,
    }
}

fn is_auto(s: &str) -> bool {
    s.trim().eq_ignore_ascii_case("auto")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    ClaudeJson,
    CodexToml,
    AiderYaml,
    DotEnv,
}

fn agent_files(project: &Path, home: Option<&Path>) -> Vec<(PathBuf, FileKind)> {
    let mut out = vec![
        (project.join(".claude/settings.json"), FileKind::ClaudeJson),
        (project.join(".aider.conf.yml"), FileKind::AiderYaml),
        (project.join(".env"), FileKind::DotEnv),
    ];
    if let Some(h) = home {
        out.push((h.join(".claude/settings.json"), FileKind::ClaudeJson));
        out.push((h.join(".codex/config.toml"), FileKind::CodexToml));
        out.push((h.join(".aider.conf.yml"), FileKind::AiderYaml));
    }
    out
}

struct FileHit {
    model: String,
    window: Option<u64>,
    where_: String,
}

/// Read at most 10 KB of one agent config file and take the model from it: JSON and TOML are
/// parsed (only the top-level `model` counts, never a nested one such as
/// `statusLine.model`), YAML and `.env` are read line by line. Warns, naming the file only,
/// when the part read holds what looks like an API key; a malformed file gets a warning naming
/// the file, line and column, never the text.
fn read_agent_file(source: &(PathBuf, FileKind), warnings: &mut Vec<String>) -> Option<FileHit> {
    let (path, kind) = source;
    let (bytes, truncated) = crate::fsx::read_prefix(path, MAX_FILE_BYTES).ok()?;
    if String::from_utf8_lossy(&bytes)
        .lines()
        .any(looks_like_secret)
    {
        warnings.push(format!(
            "{} holds what looks like an API key; automaton read only its model and never \
             prints keys, but a detection script may read that file too",
            path.display()
        ));
    }
    let cap_kib = MAX_FILE_BYTES / 1024;
    match kind {
        FileKind::ClaudeJson if truncated => {
            // A JSON document cut short cannot be parsed, and a later duplicate `model` key
            // would win over one seen early, so nothing is taken from it.
            warnings.push(format!(
                "{}: larger than {cap_kib} KiB; a JSON file cut short cannot be parsed, so no \
                 model was read from it (set `Model` in config.md)",
                path.display()
            ));
            None
        }
        FileKind::ClaudeJson => claude_settings_model(path, &bytes, warnings),
        FileKind::CodexToml => {
            // TOML puts every top-level key before the first table and forbids duplicate keys,
            // so a top-level key found in the complete lines of the first 10 KB is whole and
            // final. A cut inside a multi-line value leaves it unterminated: the parse fails
            // and says so.
            let whole = if truncated {
                warnings.push(format!(
                    "{}: larger than {cap_kib} KiB; only the top-level keys in its first \
                     {cap_kib} KiB were read",
                    path.display()
                ));
                let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                &bytes[..end]
            } else {
                &bytes[..]
            };
            codex_config_model(path, whole, warnings)
        }
        FileKind::AiderYaml | FileKind::DotEnv => {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if truncated {
                warnings.push(format!(
                    "{}: larger than {cap_kib} KiB; only its first {cap_kib} KiB were read",
                    path.display()
                ));
                // The last line read may be cut short: leave it out.
                text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
            }
            line_model(path, *kind, &text)
        }
    }
}

/// A YAML (`model:` at the top level) or `.env` (`*_MODEL=`) file, line by line.
fn line_model(path: &Path, kind: FileKind, text: &str) -> Option<FileHit> {
    text.lines().enumerate().find_map(|(i, line)| {
        let t = line.trim();
        let model = match kind {
            FileKind::AiderYaml if !line.starts_with([' ', '\t']) => yaml_key_value(t, "model"),
            FileKind::DotEnv => dotenv_model(t),
            _ => None,
        }?;
        (!model.is_empty() && !looks_like_secret(&model)).then(|| FileHit {
            model,
            window: None,
            where_: format!("{}:{}", path.display(), i + 1),
        })
    })
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

/// A malformed-file warning built from serde_json's category and position only: its own
/// messages can quote a value, and the file may hold keys.
fn json_warning(path: &Path, e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let why = match e.classify() {
        Category::Eof => "malformed JSON (it ends early)",
        Category::Syntax => "malformed JSON",
        Category::Data => "not a JSON object",
        Category::Io => "unreadable",
    };
    format!(
        "{}:{}:{}: {why}; no model read from it",
        path.display(),
        e.line(),
        e.column()
    )
}

/// `.claude/settings.json`: the top-level `"model"`, else `"env": {"ANTHROPIC_MODEL": …}`.
/// Each value is kept raw (a slice of the text) until it is chosen, so its line is known and
/// nothing else in the file is decoded. A key given twice: the last wins, as in Claude Code.
fn claude_settings_model(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> Option<FileHit> {
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    let Ok(text) = std::str::from_utf8(bytes) else {
        warnings.push(format!(
            "{}: not UTF-8 text; no model read from it",
            path.display()
        ));
        return None;
    };
    let top: BTreeMap<String, &RawValue> = match serde_json::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(json_warning(path, &e));
            return None;
        }
    };
    let string_at = |raw: &RawValue, key: &str, warnings: &mut Vec<String>| {
        // A RawValue borrows from `text`: its address gives its offset, hence its line.
        let offset = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        let (line, col) = line_col(bytes, offset);
        match serde_json::from_str::<serde_json::Value>(raw.get()) {
            Ok(serde_json::Value::String(s)) => {
                let s = s.trim();
                (!s.is_empty() && !looks_like_secret(s)).then(|| FileHit {
                    model: s.to_string(),
                    window: None,
                    where_: format!("{}:{line}", path.display()),
                })
            }
            _ => {
                warnings.push(format!(
                    "{}:{line}:{col}: `{key}` is not a string; ignored",
                    path.display()
                ));
                None
            }
        }
    };
    if let Some(hit) = top
        .get("model")
        .and_then(|raw| string_at(raw, "model", warnings))
    {
        return Some(hit);
    }
    // An `env` that is not an object names no model (Claude Code would refuse it anyway).
    let env: BTreeMap<String, &RawValue> = serde_json::from_str(top.get("env")?.get()).ok()?;
    env.get("ANTHROPIC_MODEL")
        .and_then(|raw| string_at(raw, "env.ANTHROPIC_MODEL", warnings))
}

/// The part of `~/.codex/config.toml` automaton reads: top-level keys only (`[profiles.*]` and
/// other tables are not followed). Values are checked after the parse so that one of the wrong
/// type is named on its own line instead of failing the whole file.
#[derive(serde::Deserialize)]
struct CodexConfig {
    model: Option<toml::Spanned<toml::Value>>,
    model_context_window: Option<toml::Spanned<toml::Value>>,
}

/// `~/.codex/config.toml`: top-level `model` and `model_context_window`.
fn codex_config_model(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> Option<FileHit> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        warnings.push(format!(
            "{}: not UTF-8 text; no model read from it",
            path.display()
        ));
        return None;
    };
    let config: CodexConfig = match toml::from_str(text) {
        Ok(c) => c,
        Err(e) => {
            let at = e.span().map_or(String::new(), |s| {
                let (line, col) = line_col(bytes, s.start);
                format!(":{line}:{col}")
            });
            // toml's message names keys and what it expected, not values; its full `Display`
            // quotes the line, which may hold a key, so that is not used.
            let msg = e.message().lines().next().unwrap_or("").trim();
            let msg = if msg.is_empty() || looks_like_secret(msg) {
                "malformed TOML"
            } else {
                msg
            };
            warnings.push(format!(
                "{}{at}: malformed TOML ({msg}); no model read from it",
                path.display()
            ));
            return None;
        }
    };
    let model = config.model?;
    let (line, col) = line_col(bytes, model.span().start);
    let toml::Value::String(name) = model.get_ref() else {
        warnings.push(format!(
            "{}:{line}:{col}: `model` is not a string; ignored",
            path.display()
        ));
        return None;
    };
    let name = name.trim();
    if name.is_empty() || looks_like_secret(name) {
        return None;
    }
    let window = config.model_context_window.and_then(|w| match w.get_ref() {
        toml::Value::Integer(n) if *n > 0 => u64::try_from(*n).ok(),
        _ => {
            let (wl, wc) = line_col(bytes, w.span().start);
            warnings.push(format!(
                "{}:{wl}:{wc}: `model_context_window` is not a positive integer; ignored",
                path.display()
            ));
            None
        }
    });
    Some(FileHit {
        model: name.to_string(),
        window,
        where_: format!("{}:{line}", path.display()),
    })
}

/// `key: value` on a top-level YAML line.
fn yaml_key_value(line: &str, key: &str) -> Option<String> {
    let rest = line.strip_prefix(key)?.strip_prefix(':')?;
    let v = rest.split(" #").next().unwrap_or("").trim();
    Some(unquote(v).to_string())
}

/// `[export ] NAME_MODEL=value` in a `.env` file.
fn dotenv_model(line: &str) -> Option<String> {
    if line.starts_with('#') {
        return None;
    }
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (k, v) = line.split_once('=')?;
    let k = k.trim();
    if !k.ends_with("_MODEL") || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(unquote(v.trim()).to_string())
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Whether a line looks like it holds an API key: an `sk-...` token, or a `*_API_KEY`,
/// `*_TOKEN`, `apiKey` or `api_key` entry with a value.
pub fn looks_like_secret(line: &str) -> bool {
    let has_sk = line.match_indices("sk-").any(|(i, _)| {
        let before_ok = i == 0
            || !line.as_bytes()[i - 1].is_ascii_alphanumeric() && line.as_bytes()[i - 1] != b'-';
        let tail = &line[i + 3..];
        let run = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .count();
        before_ok && run >= 16
    });
    if has_sk {
        return true;
    }
    let lower = line.to_ascii_lowercase();
    ["api_key", "apikey", "api-key", "auth_token", "_secret"]
        .iter()
        .any(|k| {
            lower.find(k).is_some_and(|i| {
                let rest = lower[i + k.len()..].trim_start_matches(['"', '\'', ' ']);
                let value = rest
                    .strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':'))
                    .map(|v| v.trim().trim_matches(['"', '\'', ',']));
                value.is_some_and(|v| v.len() >= 8)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(name: &str) -> Option<u64> {
        lookup(name).window
    }

    #[test]
    fn seed_entries_and_corrections() {
        for m in ["gpt-4o", "gpt-4o-mini", "gpt-4-turbo"] {
            assert_eq!(window(m), Some(128_000), "{m}");
        }
        for m in [
            "claude-3-5-sonnet",
            "claude-3-5-haiku",
            "claude-3-opus",
            "claude-3-sonnet",
            "claude-3-haiku",
            "claude-2.1",
        ] {
            assert_eq!(window(m), Some(200_000), "{m}");
        }
        // Where the seed is wrong.
        assert_eq!(window("gpt-4"), Some(8192));
        assert_eq!(window("gpt-4-0613"), Some(8192));
        assert_eq!(window("gpt-4-32k"), Some(32_768));
        assert_eq!(window("claude-2.0"), Some(100_000));
    }

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(window("gpt-4o-2024-08-06"), Some(128_000)); // not gpt-4
        assert_eq!(window("gpt-4.1-mini"), Some(1_047_576)); // not gpt-4
        assert_eq!(window("gpt-5-codex"), Some(272_000));
        assert_eq!(window("gpt-5.5-pro"), Some(1_050_000)); // not gpt-5
        assert_eq!(window("claude-opus-4-6"), Some(1_000_000));
        assert_eq!(window("claude-opus-4-5-20251101"), Some(200_000));
        assert_eq!(window("claude-opus-4-1-20250805"), Some(200_000));
        assert_eq!(window("claude-sonnet-4-20250514"), Some(200_000));
        assert_eq!(window("claude-sonnet-4-6"), Some(1_000_000)); // not claude-sonnet-4
        assert_eq!(window("qwen3-coder:30b"), Some(262_144)); // not qwen3
        assert_eq!(window("qwen3:8b"), Some(32_768));
        assert_eq!(window("llama3.1:8b"), Some(131_072)); // not llama3
        assert_eq!(window("llama3:8b"), Some(8192));
        assert_eq!(window("mistral-large-latest"), Some(262_144)); // not mistral
        assert_eq!(window("mistral:7b"), Some(32_768));
        assert_eq!(window("o4-mini"), Some(200_000));
        assert_eq!(window("o3-pro"), Some(200_000));
        assert_eq!(window("gemini-2.5-flash-lite"), Some(1_048_576));
        assert_eq!(window("deepseek-reasoner"), Some(131_072));
    }

    #[test]
    fn normalising() {
        assert_eq!(
            window("anthropic/claude-3-5-sonnet-20241022"),
            Some(200_000)
        );
        assert_eq!(
            window("anthropic.claude-3-5-sonnet-20241022-v2:0"),
            Some(200_000)
        );
        assert_eq!(window("claude-3-5-sonnet@20240620"), Some(200_000));
        assert_eq!(window("openrouter/openai/gpt-4o"), Some(128_000));
        assert_eq!(window("meta-llama/Llama-3.1-8B-Instruct"), Some(131_072));
        assert_eq!(window("Claude-Sonnet-4-5"), Some(200_000));
        assert_eq!(window("sonnet[1m]"), Some(1_000_000));
        assert_eq!(window("claude-sonnet-4-5[1m]"), Some(1_000_000));
        assert_eq!(window("opus"), Some(200_000));
        assert_eq!(window("some-homebrew-model"), None);
        assert_eq!(window(""), None);
    }

    #[test]
    fn hosted_or_local() {
        assert!(lookup("claude-opus-4-6").hosted);
        assert!(lookup("gpt-4o").hosted);
        assert!(!lookup("qwen3:8b").hosted);
        assert!(!lookup("llama3.1").hosted);
        assert!(!lookup("mistral:7b").hosted);
        assert!(!lookup("unknown").hosted);
    }

    #[test]
    fn table_prefixes_are_unique_and_lower_case() {
        for (i, a) in TABLE.iter().enumerate() {
            assert_eq!(a.prefix, a.prefix.to_ascii_lowercase());
            assert!(a.window > 0);
            for b in &TABLE[i + 1..] {
                assert_ne!(a.prefix, b.prefix);
            }
        }
    }

    #[test]
    fn line_readers() {
        assert_eq!(
            claude(r#"{ "model": "opus", "models": ["a"] }"#).0,
            Some("opus".into())
        );
        assert_eq!(claude(r#"{"models": ["a"]}"#), (None, vec![]));
        assert_eq!(codex("model = \"gpt-5\" # mine\n").0, Some("gpt-5".into()));
        assert_eq!(codex("model_provider = \"x\"\n"), (None, vec![]));
        assert_eq!(
            yaml_key_value("model: 'gpt-4o'", "model"),
            Some("gpt-4o".into())
        );
        assert_eq!(
            dotenv_model("export OPENAI_MODEL=\"gpt-4.1\""),
            Some("gpt-4.1".into())
        );
        assert_eq!(dotenv_model("OPENAI_API_KEY=sk-abc"), None);
        assert_eq!(dotenv_model("# FOO_MODEL=x"), None);
    }

    /// The model `claude_settings_model` takes from `text`, and its warnings.
    fn claude(text: &str) -> (Option<String>, Vec<String>) {
        let mut w = Vec::new();
        let hit = claude_settings_model(Path::new("s.json"), text.as_bytes(), &mut w);
        (hit.map(|h| h.model), w)
    }

    /// The model `codex_config_model` takes from `text`, and its warnings.
    fn codex(text: &str) -> (Option<String>, Vec<String>) {
        let mut w = Vec::new();
        let hit = codex_config_model(Path::new("c.toml"), text.as_bytes(), &mut w);
        (hit.map(|h| h.model), w)
    }

    fn hit_of(path: &Path, text: &str, kind: FileKind) -> (Option<FileHit>, Vec<String>) {
        std::fs::write(path, text).expect("write");
        let mut w = Vec::new();
        (read_agent_file(&(path.to_path_buf(), kind), &mut w), w)
    }

    #[test]
    fn json_takes_the_top_level_model_only() {
        // The bug the line scan had: a nested `model` first.
        let text =
            "{\n  \"statusLine\": {\"model\": \"haiku\"},\n  \"model\": \"claude-opus-4-6\"\n}\n";
        let mut w = Vec::new();
        let hit =
            claude_settings_model(Path::new("s.json"), text.as_bytes(), &mut w).expect("a model");
        assert_eq!(hit.model, "claude-opus-4-6");
        assert_eq!(hit.where_, "s.json:3");
        assert_eq!(w, Vec::<String>::new());
        // All on one line, nested after.
        assert_eq!(
            claude(r#"{"model":"claude-opus-4-6","statusLine":{"model":"haiku"}}"#),
            (Some("claude-opus-4-6".into()), vec![])
        );
        // Only nested: none.
        assert_eq!(
            claude(r#"{"statusLine":{"model":"haiku"},"permissions":{"model":"x"}}"#),
            (None, vec![])
        );
        // `env.ANTHROPIC_MODEL` when there is no top-level `model`; never a nested one elsewhere.
        assert_eq!(
            claude(
                r#"{"statusLine":{"ANTHROPIC_MODEL":"haiku"},"env":{"ANTHROPIC_MODEL":"sonnet"}}"#
            ),
            (Some("sonnet".into()), vec![])
        );
        assert_eq!(
            claude(r#"{"env":{"ANTHROPIC_MODEL":"sonnet"},"model":"opus"}"#).0,
            Some("opus".into())
        );
        assert_eq!(claude(r#"{"env":"ANTHROPIC_MODEL"}"#), (None, vec![]));
        // A key given twice: the last wins, as JSON.parse does.
        assert_eq!(
            claude(r#"{"model":"haiku","model":"opus"}"#).0,
            Some("opus".into())
        );
        // Escapes are decoded.
        assert_eq!(
            claude(r#"{"model":"claude-opus-4-6\u005b1m]"}"#).0,
            Some("claude-opus-4-6[1m]".into())
        );
    }

    #[test]
    fn json_wrong_types_and_malformed_files_warn_with_position() {
        let (m, w) = claude("{\n  \"model\": 42\n}\n");
        assert_eq!(m, None);
        assert_eq!(w, vec!["s.json:2:12: `model` is not a string; ignored"]);
        let (m, w) = claude("{\n  \"model\": \"opus\",\n}\n");
        assert_eq!(m, None);
        assert_eq!(w, vec!["s.json:3:1: malformed JSON; no model read from it"]);
        let (m, w) = claude("{\"model\": \"op");
        assert_eq!(m, None);
        assert_eq!(
            w,
            vec!["s.json:1:13: malformed JSON (it ends early); no model read from it"]
        );
        // Not an object, and its value is never quoted in the warning.
        let (m, w) = claude("\"sk-ant-api03-DO-NOT-PRINT-0123456789\"");
        assert_eq!(m, None);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("s.json:1:"), "{}", w[0]);
        assert!(w[0].contains("not a JSON object"), "{}", w[0]);
        assert!(!w[0].contains("DO-NOT-PRINT"), "{}", w[0]);
        let mut w = Vec::new();
        assert!(
            claude_settings_model(Path::new("s.json"), b"{\"model\":\"\xff\"}", &mut w).is_none()
        );
        assert_eq!(w, vec!["s.json: not UTF-8 text; no model read from it"]);
    }

    #[test]
    fn toml_takes_the_top_level_model_only() {
        let text = "# mine\nmodel_provider = \"openai\"\nmodel = \"gpt-5\"\nmodel_context_window = 300000\n\n[profiles.fast]\nmodel = \"o3\"\n\n[tui.status]\nmodel = { name = \"haiku\" }\n";
        let mut w = Vec::new();
        let hit =
            codex_config_model(Path::new("c.toml"), text.as_bytes(), &mut w).expect("a model");
        assert_eq!((hit.model.as_str(), hit.window), ("gpt-5", Some(300_000)));
        assert_eq!(hit.where_, "c.toml:3");
        assert_eq!(w, Vec::<String>::new());
        // Only in tables (or a dotted key into one): none.
        assert_eq!(codex("[profiles.fast]\nmodel = \"o3\"\n"), (None, vec![]));
        assert_eq!(codex("profiles.fast.model = \"o3\"\n"), (None, vec![]));
        // Wrong types are named with their line; a bad window keeps the model.
        assert_eq!(
            codex("model = 5\n"),
            (
                None,
                vec!["c.toml:1:9: `model` is not a string; ignored".into()]
            )
        );
        let mut w = Vec::new();
        let hit = codex_config_model(
            Path::new("c.toml"),
            b"model = \"gpt-5\"\nmodel_context_window = \"big\"\n",
            &mut w,
        )
        .expect("a model");
        assert_eq!(hit.window, None);
        assert_eq!(
            w,
            vec!["c.toml:2:24: `model_context_window` is not a positive integer; ignored"]
        );
    }

    #[test]
    fn malformed_toml_warns_with_line_and_column_never_the_text() {
        let (m, w) = codex("model = \"gpt-5\"\napi_key = sk-proj-DO-NOT-PRINT-0123456789\n");
        assert_eq!(m, None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("c.toml:2:11: malformed TOML ("),
            "{}",
            w[0]
        );
        assert!(w[0].ends_with("; no model read from it"), "{}", w[0]);
        assert!(!w[0].contains("DO-NOT-PRINT"), "{}", w[0]);
        // A duplicate key is an error in TOML.
        let (m, w) = codex("model = \"a\"\nmodel = \"b\"\n");
        assert_eq!(m, None);
        assert!(w[0].starts_with("c.toml:2:1: malformed TOML ("), "{}", w[0]);
    }

    #[test]
    fn files_over_the_cap() {
        let dir = tempfile::tempdir().expect("tmp");
        let pad = format!("\"{}\"", "x".repeat(MAX_FILE_BYTES));
        // JSON: a cut document is not parsed, even with the model in the part read.
        let path = dir.path().join("settings.json");
        let (hit, w) = hit_of(
            &path,
            &format!("{{\"model\": \"opus\", \"p\": {pad}}}"),
            FileKind::ClaudeJson,
        );
        assert!(hit.is_none());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("settings.json: larger than 10 KiB"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("no model was read"), "{}", w[0]);
        // TOML: the top-level keys before the cut are whole.
        let path = dir.path().join("config.toml");
        let (hit, w) = hit_of(
            &path,
            &format!("model = \"gpt-5\"\n[projects.a]\np = {pad}\n"),
            FileKind::CodexToml,
        );
        assert_eq!(hit.expect("a model").model, "gpt-5");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("config.toml: larger than 10 KiB"), "{}", w[0]);
        // ... unless the cut is inside a value: then the parse says so.
        let (hit, w) = hit_of(
            &path,
            &format!(
                "model = \"gpt-5\"\np = \"\"\"\n{}\n\"\"\"\n",
                "x\n".repeat(MAX_FILE_BYTES)
            ),
            FileKind::CodexToml,
        );
        assert!(hit.is_none());
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[1].contains("config.toml:"), "{}", w[1]);
        assert!(w[1].contains(": malformed TOML ("), "{}", w[1]);
        // YAML: a model line cut short is not taken.
        let path = dir.path().join(".aider.conf.yml");
        let text = format!(
            "{}model: gpt-4o-mini\n",
            "#\n".repeat(MAX_FILE_BYTES / 2 - 7)
        );
        let (hit, w) = hit_of(&path, &text, FileKind::AiderYaml);
        assert!(hit.is_none(), "{:?}", hit.map(|h| h.model));
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn secrets_are_spotted() {
        assert!(looks_like_secret(
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234"
        ));
        assert!(looks_like_secret(
            r#"  "ANTHROPIC_API_KEY": "anything-long-enough""#
        ));
        assert!(looks_like_secret("key: sk-ant-api03-ABCDEFGHIJKLMNOPQRST"));
        assert!(looks_like_secret("apiKey: 'abcdefgh12345'"));
        assert!(!looks_like_secret("model = \"gpt-5\""));
        assert!(!looks_like_secret("OPENAI_API_KEY="));
        assert!(!looks_like_secret("task-sk-short"));
    }

    fn settings_in(project: &Path) -> Settings {
        Settings::load_with(project, None, &|_| None).expect("settings")
    }

    #[test]
    fn detection_order_and_files() {
        let project = tempfile::tempdir().expect("tmp");
        let home = tempfile::tempdir().expect("tmp");
        let no_env = |_: &str| None;
        let env = ModelEnv {
            user_home: Some(home.path().to_path_buf()),
            var: &no_env,
        };
        // Nothing anywhere: default window, unknown.
        let m = detect_model(&settings_in(project.path()), &env);
        assert_eq!(m.name, None);
        assert_eq!(m.window, 128_000);
        assert!(!m.window_known);

        // Codex config in the fake home: model and model_context_window (top level only).
        std::fs::create_dir_all(home.path().join(".codex")).expect("mkdir");
        std::fs::write(
            home.path().join(".codex/config.toml"),
            "model = \"gpt-5\"\nmodel_context_window = 300000\n[profiles.x]\nmodel = \"o3\"\n",
        )
        .expect("write");
        let m = detect_model(&settings_in(project.path()), &env);
        assert_eq!(m.name.as_deref(), Some("gpt-5"));
        assert_eq!(m.window, 300_000);
        assert!(
            m.name_source.ends_with("config.toml:1"),
            "{}",
            m.name_source
        );

        // Claude settings in the fake home win over codex, and the API key is only named.
        std::fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
        std::fs::write(
            home.path().join(".claude/settings.json"),
            "{\n  \"env\": {\"ANTHROPIC_API_KEY\": \"sk-ant-secret-0123456789abcdef\"},\n  \"model\": \"claude-opus-4-6\"\n}\n",
        )
        .expect("write");
        let m = detect_model(&settings_in(project.path()), &env);
        assert_eq!(m.name.as_deref(), Some("claude-opus-4-6"));
        assert_eq!(m.window, 1_000_000);
        assert!(m.hosted);
        assert_eq!(m.warnings.len(), 1);
        assert!(m.warnings[0].contains("settings.json"));
        assert!(!m.warnings[0].contains("sk-ant"));

        // The environment wins over files.
        let anth = |k: &str| (k == "ANTHROPIC_MODEL").then(|| "claude-3-opus".to_string());
        let env2 = ModelEnv {
            user_home: Some(home.path().to_path_buf()),
            var: &anth,
        };
        let m = detect_model(&settings_in(project.path()), &env2);
        assert_eq!(m.name.as_deref(), Some("claude-3-opus"));
        assert_eq!(m.name_source, "env ANTHROPIC_MODEL");

        // .agent.md wins over the environment; config.md wins over .agent.md, and its override
        // window wins over the table.
        std::fs::create_dir_all(project.path().join(".automaton")).expect("mkdir");
        std::fs::write(
            project.path().join(".automaton/.agent.md"),
            "## Agent\n- **Model**: qwen3:8b\n",
        )
        .expect("write");
        let m = detect_model(&settings_in(project.path()), &env2);
        assert_eq!(m.name.as_deref(), Some("qwen3:8b"));
        assert!(!m.hosted);
        assert_eq!(m.window, 32_768);
        std::fs::write(
            project.path().join(".automaton/config.md"),
            "## Model Configuration\n- **Model**: gpt-4o\n- **Override context window**: 64k\n",
        )
        .expect("write");
        let m = detect_model(&settings_in(project.path()), &env2);
        assert_eq!(m.name.as_deref(), Some("gpt-4o"));
        assert_eq!(m.window, 64_000);
        assert!(
            m.window_source.ends_with("config.md:3"),
            "{}",
            m.window_source
        );
    }

    #[test]
    fn only_the_first_10_kb_is_read() {
        let project = tempfile::tempdir().expect("tmp");
        let mut env_file = "# padding\n".repeat(1200); // 12 KB
        env_file.push_str("OPENAI_MODEL=gpt-4o\n");
        std::fs::write(project.path().join(".env"), env_file).expect("write");
        let no_env = |_: &str| None;
        let env = ModelEnv {
            user_home: None,
            var: &no_env,
        };
        let m = detect_model(&settings_in(project.path()), &env);
        assert_eq!(m.name, None);
    }

    #[test]
    fn unknown_model_warns_and_defaults() {
        let project = tempfile::tempdir().expect("tmp");
        std::fs::write(project.path().join(".env"), "FOO_MODEL=homebrew-7b\n").expect("write");
        let no_env = |_: &str| None;
        let env = ModelEnv {
            user_home: None,
            var: &no_env,
        };
        let m = detect_model(&settings_in(project.path()), &env);
        assert_eq!(m.name.as_deref(), Some("homebrew-7b"));
        assert_eq!(m.window, 128_000);
        assert!(!m.window_known);
        assert!(m.warnings.iter().any(|w| w.contains("not in the context")));
    }
}
