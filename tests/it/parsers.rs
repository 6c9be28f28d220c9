//! The parsers of files automaton reads but does not own, through the real binary: the agents'
//! config files (`.claude/settings.json` as JSON, `.codex/config.toml` as TOML; only the
//! top-level `model` counts) and DECOMPOSITION.md cells with escaped pipes (`\|`).
//! HOME and AUTOMATON_HOME point at a temp folder, so no test reads the developer's files.

use crate::harness::Project;
use serde_json::Value;

/// `detect-vram --refresh` with no model named anywhere but the agents' files.
struct Detect {
    code: i32,
    json: Value,
    stderr: String,
}

fn detect(p: &Project) -> Detect {
    let mut cmd = p.cmd();
    cmd.args(["detect-vram", "--refresh"])
        .env_remove("AUTOMATON_VRAM_SCRIPT_TIMEOUT");
    for v in ["OPENAI_MODEL", "GEMINI_MODEL", "AIDER_MODEL"] {
        cmd.env_remove(v);
    }
    let out = cmd.output().expect("run automaton");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}); stderr: {stderr}"));
    Detect {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr,
    }
}

/// Write a file under the private home folder.
fn write_home(p: &Project, rel: &str, text: &str) {
    let path = p.home().join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// The warnings about the agents' files (not, say, the missing detection script's).
fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.starts_with("warning: ") && (l.contains("/.claude/") || l.contains("/.codex/"))
        })
        .collect()
}

#[test]
fn claude_settings_top_level_model_wins_over_a_nested_one() {
    let p = Project::new();
    write_home(
        &p,
        ".claude/settings.json",
        r#"{"statusLine":{"model":"haiku"},"model":"claude-opus-4-6"}"#,
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], "claude-opus-4-6", "{}", d.json);
    assert_eq!(d.json["model_context_kb"], 1_000_000, "{}", d.json);
    assert_eq!(d.json["model_hosted"], true, "{}", d.json);
    let source = d.json["model_source"].as_str().expect("model_source");
    assert!(
        source.ends_with(".claude/settings.json:1"),
        "{source} in {}",
        d.json
    );
    assert_eq!(warnings(&d.stderr), Vec::<&str>::new());

    // Pretty-printed, nested first: the line is the top-level key's.
    write_home(
        &p,
        ".claude/settings.json",
        "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"model\": \"haiku\"\n  },\n  \"model\": \"claude-opus-4-6\"\n}\n",
    );
    let d = detect(&p);
    assert_eq!(d.json["model"], "claude-opus-4-6", "{}", d.json);
    let source = d.json["model_source"].as_str().expect("model_source");
    assert!(source.ends_with(".claude/settings.json:6"), "{source}");

    // Only nested: no model from this file.
    write_home(
        &p,
        ".claude/settings.json",
        r#"{"statusLine":{"model":"haiku"}}"#,
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], Value::Null, "{}", d.json);
}

#[test]
fn codex_toml_model_in_nested_tables_is_not_taken() {
    let p = Project::new();
    write_home(
        &p,
        ".codex/config.toml",
        "# Codex\nmodel_provider = \"openai\"\nmodel = \"gpt-5-codex\"\nmodel_context_window = 400000\n\n[profiles.fast]\nmodel = \"o3\"\nmodel_context_window = 1\n\n[tui.statusline]\nmodel = { name = \"haiku\" }\n",
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], "gpt-5-codex", "{}", d.json);
    assert_eq!(d.json["model_context_kb"], 400_000, "{}", d.json);
    let source = d.json["model_source"].as_str().expect("model_source");
    assert!(source.ends_with(".codex/config.toml:3"), "{source}");
    assert_eq!(warnings(&d.stderr), Vec::<&str>::new());

    // A `model = ...` line inside a multi-line string is text, not a key.
    write_home(
        &p,
        ".codex/config.toml",
        "instructions = \"\"\"\nmodel = \"o3\"\n\"\"\"\nmodel = \"gpt-5\"\n",
    );
    let d = detect(&p);
    assert_eq!(d.json["model"], "gpt-5", "{}", d.json);
    let source = d.json["model_source"].as_str().expect("model_source");
    assert!(source.ends_with(".codex/config.toml:4"), "{source}");

    // `model` only inside tables (one of them before where a top-level key would be): none.
    write_home(
        &p,
        ".codex/config.toml",
        "[profiles.fast]\nmodel = \"o3\"\n[projects.\"/src\"]\nmodel = \"gpt-4o\"\n",
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], Value::Null, "{}", d.json);
    assert_eq!(warnings(&d.stderr), Vec::<&str>::new());
}

#[test]
fn malformed_settings_json_is_a_warning_naming_file_line_and_column() {
    let p = Project::new();
    let secret = "sk-ant-api03-DO-NOT-PRINT-0123456789abcdefghij";
    write_home(
        &p,
        ".claude/settings.json",
        &format!(
            "{{\n  \"env\": {{\"ANTHROPIC_API_KEY\": \"{secret}\"}},\n  \"model\": \"claude-opus-4-6\",\n}}\n"
        ),
    );
    // The next file in the order still counts.
    write_home(&p, ".codex/config.toml", "model = \"gpt-5\"\n");
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], "gpt-5", "{}", d.json);
    let w = warnings(&d.stderr);
    let malformed: Vec<&&str> = w.iter().filter(|l| l.contains("malformed")).collect();
    assert_eq!(malformed.len(), 1, "{}", d.stderr);
    assert!(
        malformed[0].contains(".claude/settings.json:4:1: malformed JSON; no model read from it"),
        "{}",
        malformed[0]
    );
    // The key is named once as a key, never printed.
    assert_eq!(
        w.iter().filter(|l| l.contains("API key")).count(),
        1,
        "{}",
        d.stderr
    );
    assert!(!d.stderr.contains("DO-NOT-PRINT"), "{}", d.stderr);
    assert!(!d.json.to_string().contains("DO-NOT-PRINT"), "{}", d.json);
}

#[test]
fn malformed_codex_toml_is_a_warning_naming_file_line_and_column() {
    let p = Project::new();
    write_home(
        &p,
        ".codex/config.toml",
        "model = \"gpt-5\"\nopenai_api_key = sk-proj-DO-NOT-PRINT-0123456789\n",
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], Value::Null, "{}", d.json);
    let w = warnings(&d.stderr);
    let malformed: Vec<&&str> = w.iter().filter(|l| l.contains("malformed")).collect();
    assert_eq!(malformed.len(), 1, "{}", d.stderr);
    assert!(
        malformed[0].contains(".codex/config.toml:2:18: malformed TOML ("),
        "{}",
        malformed[0]
    );
    assert!(!d.stderr.contains("DO-NOT-PRINT"), "{}", d.stderr);

    // A model of the wrong type is named with its line; it does not fail the whole file.
    write_home(&p, ".codex/config.toml", "\nmodel = [\"gpt-5\"]\n");
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], Value::Null, "{}", d.json);
    assert!(
        d.stderr
            .contains(".codex/config.toml:2:9: `model` is not a string; ignored"),
        "{}",
        d.stderr
    );
}

#[test]
fn settings_json_over_10_kb_is_not_parsed_and_says_so() {
    let p = Project::new();
    let allow: Vec<String> = (0..1000).map(|i| format!("\"Bash(tool-{i})\"")).collect();
    write_home(
        &p,
        ".claude/settings.json",
        &format!(
            "{{\n  \"model\": \"claude-opus-4-6\",\n  \"permissions\": {{\"allow\": [{}]}}\n}}\n",
            allow.join(", ")
        ),
    );
    let d = detect(&p);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(d.json["model"], Value::Null, "{}", d.json);
    let w = warnings(&d.stderr);
    assert_eq!(w.len(), 1, "{}", d.stderr);
    assert!(
        w[0].contains(".claude/settings.json: larger than 10 KiB"),
        "{}",
        w[0]
    );
    assert!(w[0].contains("no model was read from it"), "{}", w[0]);
}

/// A parent task whose DECOMPOSITION.md has the Scope column before Wave and Depends on, so an
/// escaped pipe split as a cell border would shift them.
fn decomposed(rows: &str) -> Project {
    let p = Project::new();
    p.write("tasks/p/SPEC.md", "x").write(
        "tasks/p/DECOMPOSITION.md",
        format!("# Plan\n\n| Sub-task | Scope | Wave | Depends on |\n|---|---|---|---|\n{rows}"),
    );
    p
}

#[test]
fn escaped_pipes_in_decomposition_cells() {
    let p = decomposed(
        "| a | split on `x \\| y` | 1 | - |\n| b | `a\\|b` and \\| more | 2 | a |\n| c | - | 3 | a, b |\n",
    );
    let doc = p.status_json();
    let task = &doc["tasks"][0];
    assert_eq!(task["path"], "tasks/p", "{doc:#}");
    assert_eq!(task["state"], "decomposition", "{doc:#}");
    assert_eq!(
        task["subtasks"]["waves"],
        serde_json::json!([["a"], ["b"], ["c"]]),
        "{doc:#}"
    );

    // Errors still name the right line and cell after escaped pipes.
    let p = decomposed("| a | x \\| y \\| z | 1 | - |\n| b | p \\| q | 2 | zed |\n");
    p.test()
        .arg("status")
        .stdout_contains(
            "DECOMPOSITION.md is invalid: line 6: cell `Depends on`: `b` depends on unknown sub-task `zed`",
        )
        .run();
    let p = decomposed("| a | x | 1 | - |\n| b \\| c | y | 2 | a |\n");
    p.test()
        .arg("status")
        .stdout_contains("line 6: cell `Sub-task`: `b | c` is not a kebab-case name")
        .run();
}
